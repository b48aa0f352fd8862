//! The module graph of a crate, read from its sources: which module's code
//! names which other module (`use` trees with their braces expanded, and
//! inline `crate::` / `super::` paths), so a test can check the house's
//! rules: no import circles and no module importing a layer above its own
//! (`tests/tests/architecture.rs`; `cargo run -p trainscope-tests --bin
//! module_graph` prints the graph). Comments and `#[cfg(test)]` modules are
//! left out: a test may reach anywhere, and a doc link is not an import.
//!
//! This is a reader of Rust's path syntax, not a compiler: it sees the paths
//! written in the code, which is what a reader of the code sees too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`["engine", "build"]`) → the module paths it names.
pub type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

/// Every `.rs` file under `src` with its module path (`lib.rs`, `main.rs`
/// and `mod.rs` name their folder's module). Files under `bin/` and files
/// named `tests.rs` (test modules) are skipped.
pub fn crate_files(src: &Path) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    walk(src, src, &mut out);
    out.sort();
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<String>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
            walk(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).expect("under root");
            let mut segs: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if segs.last().is_some_and(|s| s == "tests") {
                continue;
            }
            if segs
                .last()
                .is_some_and(|s| s == "mod" || s == "lib" || s == "main")
            {
                segs.pop();
            }
            out.push((p, segs));
        }
    }
}

/// The code of a file without comments, string literals' contents and its
/// `#[cfg(test)]` items (everything from the first `#[cfg(test)]`: the
/// project keeps test modules at the end of a file).
pub fn code_of(text: &str) -> String {
    let text = match test_module_start(text) {
        Some(i) => &text[..i],
        None => text,
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            // A string literal (raw strings of the sources hold no quotes).
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A char literal such as '"' or '{'.
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            i += 2;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            i += 1;
        } else {
            let ch = text[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Where a file's `#[cfg(test)] mod ...` begins.
fn test_module_start(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(k) = text[from..].find("#[cfg(test)]") {
        let i = from + k;
        let after = text[i + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") || after.starts_with("pub mod ") {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// Expand a `use` tree (`a::{b, c::{d, e}}`) into its leaf paths.
pub fn expand_use(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    expand_into(&tree, &mut Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree.find('{') {
        None => {
            let path = tree.split("as").next().unwrap_or(tree);
            let mut p = prefix.clone();
            p.extend(
                path.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
            out.push(p);
        }
        Some(open) => {
            let head: Vec<String> = tree[..open]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let close = tree.rfind('}').unwrap_or(tree.len());
            let body = &tree[open + 1..close];
            let n = prefix.len();
            prefix.extend(head);
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in body.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !body[start..i].is_empty() {
                            expand_into(&body[start..i], prefix, out);
                        }
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            if !body[start..].is_empty() {
                expand_into(&body[start..], prefix, out);
            }
            prefix.truncate(n);
        }
    }
}

/// Every path a file's code names that starts at `crate`, `super` or
/// `self`, resolved to a module path from the crate root (`super` counted
/// from `module`, the file's own module).
pub fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut raw: Vec<Vec<String>> = Vec::new();
    let mut rest = code.to_string();
    // `use` statements first (their braces), then the remaining inline paths.
    while let Some(i) = find_word(&rest, "use") {
        let Some(end) = rest[i..].find(';') else {
            break;
        };
        raw.extend(expand_use(&rest[i + 3..i + end]));
        rest.replace_range(i..i + end + 1, " ");
    }
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let word_start =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
        if word_start && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b':') {
                j += 1;
            }
            let path = &rest[i..j];
            if path.contains("::") {
                raw.push(
                    path.split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                );
            }
            i = j;
        } else {
            i += 1;
        }
    }
    raw.into_iter()
        .filter_map(|p| resolve(&p, module))
        .collect()
}

fn find_word(s: &str, w: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(k) = s[from..].find(w) {
        let i = from + k;
        let before = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let after = b.get(i + w.len()).is_none_or(|c| c.is_ascii_whitespace());
        if before && after {
            return Some(i);
        }
        from = i + w.len();
    }
    None
}

fn resolve(path: &[String], module: &[String]) -> Option<Vec<String>> {
    match path.first()?.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "self" => {
            let mut m = module.to_vec();
            m.extend_from_slice(&path[1..]);
            Some(m)
        }
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            if ups > module.len() {
                return None;
            }
            let mut m = module[..module.len() - ups].to_vec();
            m.extend_from_slice(&path[ups..]);
            Some(m)
        }
        _ => None,
    }
}

/// The graph of a crate's modules cut at `depth` segments (1: top-level
/// modules; 2: their children too). A module naming its own ancestor or
/// descendant is containment, not an edge.
pub fn graph(src: &Path, depth: usize) -> Graph {
    let mut g = Graph::new();
    for (file, module) in crate_files(src) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let from = cut(&module, depth);
        g.entry(from.clone()).or_default();
        for p in named_paths(&code_of(&text), &module) {
            let to = cut(&p, depth);
            if to.is_empty() || from.starts_with(&to) || to.starts_with(&from) {
                continue;
            }
            g.entry(from.clone()).or_default().insert(to);
        }
    }
    // Keep only edges to modules that exist (a path's last segment may be an item).
    let known: BTreeSet<Vec<String>> = g.keys().cloned().collect();
    for targets in g.values_mut() {
        let kept: BTreeSet<Vec<String>> = targets
            .iter()
            .filter_map(|t| {
                (1..=t.len())
                    .rev()
                    .map(|k| t[..k].to_vec())
                    .find(|p| known.contains(p))
            })
            .collect();
        *targets = kept;
    }
    g
}

fn cut(p: &[String], depth: usize) -> Vec<String> {
    p[..p.len().min(depth)].to_vec()
}

/// The strongly connected components with more than one module: each is
/// an import circle (Tarjan's algorithm, iterative order by module path).
pub fn circles(g: &Graph) -> Vec<Vec<Vec<String>>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Vec<String>) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                let Some((w, _)) = t.g.get_key_value(w) else {
                    continue;
                };
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out.sort();
    t.out
}

/// `a::b` for a module path (`crate` for the root).
pub fn name(p: &[String]) -> String {
    if p.is_empty() {
        "crate".into()
    } else {
        p.join("::")
    }
}
