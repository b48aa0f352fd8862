//! The house's rules, checked on the sources (ARCHITECTURE.md, "Invariants"):
//! the core's modules import one way, bottom to top, through the layers
//! below; no crate has an import circle between its modules (top-level
//! modules, and the children of each folder module); every `.rs` file opens
//! with a `//!` paragraph. `cargo run -p trainscope-tests --bin module_graph`
//! prints the graphs these tests read.

use std::path::{Path, PathBuf};
use trainscope_tests::modgraph::{circles, graph, name, Graph};

/// The core's layers, bottom to top. A module may import modules of its own
/// layer or below, never above; homes named here but not yet in the tree
/// are where the coming work lands (ARCHITECTURE.md's code map).
const CORE_LAYERS: &[&[&str]] = &[
    &["diag", "limits", "named", "rng"],
    &["workload", "model", "timeline"],
    &["hardware", "analysis", "formats"],
    &["inspect", "load"],
    &["analytical"],
    &["engine"],
    &["replay", "export", "whatif"],
    &["run"],
    &["job", "search", "goodput"],
];

fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates")
        .join(krate)
        .join("src")
}

fn layer_of(module: &str) -> Option<usize> {
    CORE_LAYERS.iter().position(|l| l.contains(&module))
}

fn circle_report(g: &Graph) -> Vec<String> {
    circles(g)
        .iter()
        .map(|c| c.iter().map(|m| name(m)).collect::<Vec<_>>().join(" <-> "))
        .collect()
}

#[test]
fn every_core_module_has_a_layer() {
    let g = graph(&src("trainscope-core"), 1);
    let missing: Vec<String> = g
        .keys()
        .filter(|m| !m.is_empty() && layer_of(&m[0]).is_none())
        .map(|m| name(m))
        .collect();
    assert!(
        missing.is_empty(),
        "core modules without a layer in CORE_LAYERS (add each where it belongs): {missing:?}"
    );
}

#[test]
fn core_imports_only_its_own_layer_or_below() {
    let g = graph(&src("trainscope-core"), 1);
    let mut upward = Vec::new();
    for (from, targets) in &g {
        let Some(lf) = from.first().and_then(|m| layer_of(m)) else {
            continue;
        };
        for to in targets {
            if let Some(lt) = to.first().and_then(|m| layer_of(m)) {
                if lt > lf {
                    upward.push(format!("{} -> {}", name(from), name(to)));
                }
            }
        }
    }
    assert!(upward.is_empty(), "upward imports in the core: {upward:#?}");
}

#[test]
fn core_has_no_import_circles() {
    for depth in [1, 2] {
        let g = graph(&src("trainscope-core"), depth);
        let c = circle_report(&g);
        assert!(c.is_empty(), "core circles at depth {depth}: {c:#?}");
    }
}

#[test]
fn cli_and_web_have_no_new_import_circles() {
    // The circles the CLI and the web still have, named so that any new one
    // fails and a removed one is taken off this list (issue 23: none left).
    const KNOWN: &[&str] = &[];
    for krate in ["trainscope-cli", "trainscope-web"] {
        for depth in [1, 2] {
            let g = graph(&src(krate), depth);
            let new: Vec<String> = circle_report(&g)
                .into_iter()
                .filter(|c| !KNOWN.contains(&c.as_str()))
                .collect();
            assert!(new.is_empty(), "{krate} circles at depth {depth}: {new:#?}");
        }
    }
}

#[test]
fn every_source_file_opens_with_a_purpose_paragraph() {
    let mut missing = Vec::new();
    for krate in ["trainscope-core", "trainscope-cli", "trainscope-web"] {
        let mut stack = vec![src(krate)];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).expect("readable").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).expect("utf-8 source");
                    if !text.trim_start().starts_with("//!") {
                        missing.push(p.display().to_string());
                    }
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "files without a `//!` paragraph: {missing:#?}"
    );
}

#[test]
fn the_graph_reader_sees_use_trees_and_circles() {
    use trainscope_tests::modgraph::{expand_use, named_paths};
    let leaves = expand_use(" crate::a::{b::{C, d}, self, e as f}");
    let s: Vec<String> = leaves.iter().map(|l| l.join("::")).collect();
    assert_eq!(
        s,
        [
            "crate::a::b::C",
            "crate::a::b::d",
            "crate::a::self",
            "crate::a::e"
        ]
    );
    let module = vec!["engine".to_string(), "build".to_string()];
    let p = named_paths(
        "use super::spec::JobSpec;\nfn f() { crate::timeline::Timeline::default(); }",
        &module,
    );
    let s: Vec<String> = p.iter().map(|l| l.join("::")).collect();
    assert_eq!(s, ["engine::spec::JobSpec", "timeline::Timeline::default"]);
    let mut g = Graph::new();
    let m = |s: &str| vec![s.to_string()];
    g.entry(m("a")).or_default().insert(m("b"));
    g.entry(m("b")).or_default().insert(m("c"));
    g.entry(m("c")).or_default().insert(m("a"));
    g.entry(m("d")).or_default().insert(m("a"));
    assert_eq!(circle_report(&g), ["a <-> b <-> c"]);
}
