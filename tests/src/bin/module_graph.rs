//! Prints the module graph of each crate (core, CLI, web) and its import
//! circles: `cargo run -p trainscope-tests --bin module_graph [DEPTH]`
//! (DEPTH 1: top-level modules, the default; 2: their children too). The
//! rules it shows are checked by `tests/tests/architecture.rs`.

use std::path::Path;
use trainscope_tests::modgraph::{circles, graph, name};

fn main() {
    let depth: usize = std::env::args()
        .nth(1)
        .and_then(|d| d.parse().ok())
        .unwrap_or(1);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    for krate in ["trainscope-core", "trainscope-cli", "trainscope-web"] {
        let g = graph(&root.join(krate).join("src"), depth);
        println!("# {krate} (depth {depth})");
        for (m, to) in &g {
            let to: Vec<String> = to.iter().map(|t| name(t)).collect();
            println!("{} -> {}", name(m), to.join(", "));
        }
        for c in circles(&g) {
            let c: Vec<String> = c.iter().map(|m| name(m)).collect();
            println!("CIRCLE: {}", c.join(" <-> "));
        }
        println!();
    }
}
