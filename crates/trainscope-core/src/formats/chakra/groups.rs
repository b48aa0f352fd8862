//! ASTRA-sim's communicator-group file (format `chakra-comm-groups`,
//! docs/FORMATS.md §2.8): the JSON file ASTRA-sim reads with
//! `--comm-group-configuration` beside a set of Chakra `.et` files (its
//! workload layer: `Workload.cc`, groups by integer id), one object mapping
//! each group id (a string, `"1"`) to the list of its member ranks
//! (`{"1": [0, 1], "2": [2, 3]}`). A collective node's `pg_name` names
//! its group's id; a collective without one spans every rank.
//!
//! Reading ([`parse`]): the whole file must be valid JSON (a syntax error
//! is located at its line and column); the top level must be an object;
//! every value a non-empty list of ranks, each a non-negative integer that
//! fits 32 bits, no rank twice in one group, no id twice in the file; each
//! violation is an error located at the offending key or element. A group
//! id that is not an integer is read (the `.et` files' `pg_name` strings
//! are matched as written) with a warning, since ASTRA-sim reads ids as
//! integers. Ranks beyond the `.et` set's world are refused when the set
//! is assembled ([`CommGroups::out_of_world`]).
//!
//! Layout ([`infer_layout`]): trainscope's engine places ranks as
//! Megatron does (TP fastest, then DP, then PP) and knows the TP, DP, EP,
//! DP-across-experts and first/last-stage (embedding) groups of such a
//! layout. The groups the collectives use are matched against every
//! layout `tp x dp x pp = world` (and `ep` dividing `dp` when a group
//! needs it; with `ep = dp` the expert group is the data-parallel one); of
//! the layouts in which every used group is one of those groups, the one
//! taken agrees with most of the writer's `trainscope_group` hints
//! (trainscope's own files name each group's kind), then makes most
//! point-to-point partners of the files (sends' `comm_dst`, receives'
//! `comm_src`) pipeline neighbours, then has no EP (or the smaller), then
//! fewer pipeline stages, then the larger TP. No fitting layout: the caller falls back to one data-parallel
//! group of every rank, naming a group that does not fit.

use crate::diag::{Diagnostic, Location};
use crate::formats::lex::{self, DiagSink};
use crate::workload::CommGroup;
use std::collections::BTreeMap;

/// One group of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupEntry {
    /// The id as written (the key).
    pub id: String,
    /// Member ranks in file order (no duplicates).
    pub ranks: Vec<u32>,
    /// Byte offset of the key's opening quote.
    pub key_offset: usize,
    /// Byte offset of each rank's literal.
    pub rank_offsets: Vec<usize>,
}

/// A parsed communicator-group file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommGroups {
    pub file: String,
    /// Groups in file order (only well-formed ones).
    pub groups: Vec<GroupEntry>,
    /// Errors (the file is not used) and warnings, located.
    pub diagnostics: Vec<Diagnostic>,
    /// The text (BOM stripped), to locate later diagnostics.
    text: String,
}

impl CommGroups {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The group of `id`.
    pub fn get(&self, id: &str) -> Option<&GroupEntry> {
        self.groups.iter().find(|g| g.id == id)
    }

    /// The location of byte offset `at` of the file.
    pub fn location(&self, at: usize) -> Location {
        lex::location_at(&self.file, &self.text, at)
    }

    /// Errors for ranks at or beyond `world` (the `.et` set's ranks),
    /// located at each such rank (the first few of them).
    pub fn out_of_world(&self, world: u32) -> Vec<Diagnostic> {
        let mut sink = DiagSink::default();
        for g in &self.groups {
            for (r, at) in g.ranks.iter().zip(&g.rank_offsets) {
                if *r >= world {
                    sink.push(
                        Diagnostic::error(format!(
                            "`{}`: group `{}` names rank {r}, but the Chakra files are ranks 0 to {} (world {world})",
                            self.file,
                            g.id,
                            world.saturating_sub(1)
                        ))
                        .at(self.location(*at))
                        .with_hint("give the comm_groups.json written with these .et files, and every rank's .et file"),
                    );
                }
            }
        }
        sink.finish(&self.file)
    }
}

/// Whether `text` looks like a communicator-group file: a JSON object
/// whose first value is a list starting with an integer (or empty), and
/// (100) the whole text such an object of lists of non-negative integers.
/// (confidence, reason).
pub fn looks_like(head: &str, text: &str) -> Option<(u8, String)> {
    let b = head.trim_start_matches('\u{feff}').as_bytes();
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    ws(&mut i);
    if b.get(i) != Some(&b'"') {
        return None;
    }
    i = skip_string(b, i)?;
    ws(&mut i);
    if b.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    ws(&mut i);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i += 1;
    ws(&mut i);
    if !b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b']') {
        return None;
    }
    let whole = serde_json::from_str::<serde_json::Value>(text.trim_start_matches('\u{feff}'))
        .ok()
        .and_then(|v| {
            let o = v.as_object()?.clone();
            o.values()
                .all(|g| {
                    g.as_array()
                        .is_some_and(|a| a.iter().all(|r| r.as_u64().is_some()))
                })
                .then_some(o.len())
        });
    Some(match whole {
        Some(n) => (
            100,
            format!("a JSON object of {n} group(s), each a list of ranks (ASTRA-sim's --comm-group-configuration)"),
        ),
        None => (
            60,
            "a JSON object whose first value is a list of integers (like ASTRA-sim's --comm-group-configuration)".to_string(),
        ),
    })
}

/// The end (one past the closing quote) of the JSON string at `i`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end of the JSON value at `i` (valid JSON assumed).
fn skip_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i).unwrap_or(b.len()),
        Some(b'[') | Some(b'{') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j).unwrap_or(b.len());
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b']' | b'}') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            j
        }
    }
}

/// A JSON value's text in words, for messages.
fn describe(raw: &str) -> String {
    match raw.as_bytes().first() {
        Some(b'[') => "a list".to_string(),
        Some(b'{') => "an object".to_string(),
        _ => format!("`{}`", lex::quote(raw, 40)),
    }
}

/// Parse a communicator-group file (see the module documentation).
pub fn parse(file: &str, text: &str) -> CommGroups {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = CommGroups {
        file: file.to_string(),
        groups: Vec::new(),
        diagnostics: Vec::new(),
        text: text.to_string(),
    };
    const HINT: &str = "ASTRA-sim's --comm-group-configuration file is one JSON object mapping each group id to the list of its ranks: {\"1\": [0, 1], \"2\": [2, 3]}";
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            out.diagnostics
                .push(lex::json_syntax_error(file, text, &e).with_hint(HINT));
            return out;
        }
    };
    let b = text.as_bytes();
    let mut i = 0usize;
    let ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    ws(&mut i);
    if !value.is_object() {
        let raw = &text[i..skip_value(b, i)];
        out.diagnostics.push(
            Diagnostic::error(format!(
                "a communicator-group file is a JSON object, but `{file}` holds {}",
                describe(raw)
            ))
            .at(out.location(i))
            .with_hint(HINT),
        );
        return out;
    }
    let mut sink = DiagSink::default();
    let mut seen_ids: BTreeMap<String, usize> = BTreeMap::new();
    i += 1; // `{`
    loop {
        ws(&mut i);
        match b.get(i) {
            Some(b'"') => {}
            _ => break, // `}` (valid JSON)
        }
        let key_at = i;
        let key_end = skip_string(b, i).unwrap_or(b.len());
        let id = serde_json::from_str::<String>(&text[key_at..key_end])
            .unwrap_or_else(|_| text[key_at + 1..key_end.saturating_sub(1)].to_string());
        i = key_end;
        ws(&mut i);
        i += 1; // `:`
        ws(&mut i);
        let value_at = i;
        let value_end = skip_value(b, i);
        let mut entry = GroupEntry {
            id: id.clone(),
            ranks: Vec::new(),
            key_offset: key_at,
            rank_offsets: Vec::new(),
        };
        let mut ok = true;
        if let Some(first) = seen_ids.get(&id) {
            let first_line = text[..*first].bytes().filter(|c| *c == b'\n').count() + 1;
            sink.push(
                Diagnostic::error(format!(
                    "`{file}`: group `{id}` is given twice (first on line {first_line})"
                ))
                .at(out.location(key_at))
                .with_hint("each group id appears once"),
            );
            ok = false;
        } else {
            seen_ids.insert(id.clone(), key_at);
        }
        if b.get(value_at) != Some(&b'[') {
            sink.push(
                Diagnostic::error(format!(
                    "`{file}`: group `{id}` is {}, not a list of ranks",
                    describe(&text[value_at..value_end])
                ))
                .at(out.location(value_at))
                .with_hint(HINT),
            );
            ok = false;
        } else {
            let mut j = value_at + 1;
            let mut members: BTreeMap<u32, usize> = BTreeMap::new();
            loop {
                ws(&mut j);
                match b.get(j) {
                    Some(b']') | None => break,
                    Some(b',') => {
                        j += 1;
                        continue;
                    }
                    _ => {}
                }
                let end = skip_value(b, j);
                let raw = &text[j..end];
                let rank = if raw.bytes().all(|c| c.is_ascii_digit()) {
                    raw.parse::<u32>().map_err(|_| "larger than 4294967295")
                } else if raw.starts_with('-') && raw[1..].bytes().all(|c| c.is_ascii_digit()) {
                    Err("negative")
                } else {
                    Err("not a non-negative integer")
                };
                match rank {
                    Ok(r) => {
                        if let Some(prev) = members.insert(r, j) {
                            let col = lex::location_at(file, text, prev).column;
                            sink.push(
                                Diagnostic::error(format!(
                                    "`{file}`: group `{id}` lists rank {r} twice (first at column {col})"
                                ))
                                .at(out.location(j))
                                .with_hint("a rank is a member of a group once"),
                            );
                            ok = false;
                        } else {
                            entry.ranks.push(r);
                            entry.rank_offsets.push(j);
                        }
                    }
                    Err(why) => {
                        sink.push(
                            Diagnostic::error(format!(
                                "`{file}`: group `{id}` has {} as a rank: {why}",
                                describe(raw)
                            ))
                            .at(out.location(j))
                            .with_hint("ranks are the .et files' indices: 0, 1, 2, ..."),
                        );
                        ok = false;
                    }
                }
                j = end;
            }
            if entry.ranks.is_empty() && ok {
                sink.push(
                    Diagnostic::error(format!("`{file}`: group `{id}` has no ranks"))
                        .at(out.location(value_at))
                        .with_hint(HINT),
                );
                ok = false;
            }
        }
        if ok {
            if id.parse::<i32>().is_err() {
                sink.push(
                    Diagnostic::warning(format!(
                        "`{file}`: group id `{}` is not an integer: trainscope matches it to the files' pg_name as written, but ASTRA-sim reads group ids as integers",
                        lex::quote(&id, 40)
                    ))
                    .at(out.location(key_at)),
                );
            }
            out.groups.push(entry);
        }
        i = value_end;
        ws(&mut i);
        if b.get(i) == Some(&b',') {
            i += 1;
        }
    }
    if seen_ids.is_empty() {
        sink.push(
            Diagnostic::error(format!("`{file}` holds no group"))
                .at(out.location(0))
                .with_hint(HINT),
        );
    }
    out.diagnostics = sink.finish(file);
    out
}

/// A Megatron layout the used groups fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub tp: u32,
    pub dp: u32,
    pub pp: u32,
    pub ep: u32,
    /// The kind of each used group, by id.
    pub kinds: BTreeMap<String, CommGroup>,
}

impl Layout {
    /// The stage of `rank` (ranks ordered TP fastest, then DP, then PP).
    pub fn stage_of(&self, rank: u32) -> u32 {
        rank / (self.tp * self.dp).max(1)
    }

    /// The group kind spanning every rank in this layout, if one does.
    pub fn world_kind(&self) -> Option<CommGroup> {
        if self.tp > 1 && self.dp == 1 && self.pp == 1 {
            Some(CommGroup::Tp)
        } else if self.tp == 1 && self.pp == 1 {
            Some(CommGroup::Dp)
        } else if self.pp == 2 && self.tp == 1 && self.dp == 1 {
            Some(CommGroup::Embedding)
        } else {
            None
        }
    }
}

/// The kind name of a `trainscope_group` hint.
fn hint_kind(hint: &str) -> Option<CommGroup> {
    match hint {
        "TP" => Some(CommGroup::Tp),
        "DP" => Some(CommGroup::Dp),
        "PP" => Some(CommGroup::Embedding),
        "EP" => Some(CommGroup::Ep),
        "DP_EP" => Some(CommGroup::DpEp),
        _ => None,
    }
}

/// The kind of group `members` (ascending, 2 or more) in layout
/// (tp, dp, pp, ep), if it is one of the layout's groups.
fn kind_in(members: &[u32], tp: u32, dp: u32, pp: u32, ep: u32) -> Option<CommGroup> {
    let coords = |r: u32| (r % tp, r / tp % dp, r / (tp * dp));
    let cs: Vec<(u32, u32, u32)> = members.iter().map(|r| coords(*r)).collect();
    let (t0, d0, p0) = cs[0];
    let n = members.len() as u32;
    // Members are distinct and ascending, so equal size and fixed other
    // coordinates mean the whole group.
    if n == tp && cs.iter().all(|c| c.1 == d0 && c.2 == p0) {
        return Some(CommGroup::Tp);
    }
    if n == dp && cs.iter().all(|c| c.0 == t0 && c.2 == p0) {
        // With EP = DP the expert group is the data-parallel group.
        return Some(if ep > 1 && ep == dp {
            CommGroup::Ep
        } else {
            CommGroup::Dp
        });
    }
    if pp > 1 && n == 2 && cs.iter().all(|c| c.0 == t0 && c.1 == d0) && p0 == 0 && cs[1].2 == pp - 1
    {
        return Some(CommGroup::Embedding);
    }
    if ep > 1 && ep < dp && cs.iter().all(|c| c.0 == t0 && c.2 == p0) {
        if n == ep && cs.iter().all(|c| c.1 / ep == d0 / ep) {
            return Some(CommGroup::Ep);
        }
        if n == dp / ep && cs.iter().all(|c| c.1 % ep == d0 % ep) {
            return Some(CommGroup::DpEp);
        }
    }
    None
}

fn divisors(n: u32) -> Vec<u32> {
    (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
}

/// The Megatron layout the used groups fit (see the module
/// documentation): `groups` are (id, members ascending, writer's hint);
/// groups of one member take no part (their collectives are local).
/// `p2p` are (rank, peer) pairs of the files' point-to-point nodes: among
/// layouts the hints do not tell apart, the one in which most of them are
/// pipeline neighbours (same TP and DP index, adjacent stages) wins.
/// `Err` names a group that fits no layout.
pub fn infer_layout(
    world: u32,
    groups: &[(&str, &[u32], Option<&str>)],
    p2p: &[(u32, u32)],
) -> Result<Layout, String> {
    let used: Vec<&(&str, &[u32], Option<&str>)> =
        groups.iter().filter(|g| g.1.len() > 1).collect();
    // (score key, layout) of the best fit so far.
    type Key = (
        usize,
        usize,
        std::cmp::Reverse<u32>,
        std::cmp::Reverse<u32>,
        u32,
    );
    let mut best: Option<(Key, Layout)> = None;
    // The group that fails the most promising layouts, for the message.
    let mut misfit: BTreeMap<&str, usize> = BTreeMap::new();
    for tp in divisors(world) {
        for dp in divisors(world / tp) {
            let pp = world / tp / dp;
            for ep in divisors(dp) {
                let mut kinds = BTreeMap::new();
                let mut hits = 0usize;
                let mut fits = true;
                for (id, members, hint) in &used {
                    match kind_in(members, tp, dp, pp, ep) {
                        Some(k) => {
                            hits += usize::from(hint.and_then(hint_kind) == Some(k));
                            kinds.insert(id.to_string(), k);
                        }
                        None => {
                            *misfit.entry(id).or_insert(0) += 1;
                            fits = false;
                            break;
                        }
                    }
                }
                let needs_ep = kinds
                    .values()
                    .any(|k| matches!(k, CommGroup::Ep | CommGroup::DpEp));
                if !fits || (ep > 1 && !needs_ep) {
                    continue;
                }
                let neighbours = p2p
                    .iter()
                    .filter(|(a, b)| {
                        let (sa, sb) = (a / (tp * dp), b / (tp * dp));
                        a % (tp * dp) == b % (tp * dp) && sa.abs_diff(sb) == 1
                    })
                    .count();
                let key: Key = (
                    hits,
                    neighbours,
                    std::cmp::Reverse(ep),
                    std::cmp::Reverse(pp),
                    tp,
                );
                if best.as_ref().is_none_or(|(k, _)| key > *k) {
                    best = Some((
                        key,
                        Layout {
                            tp,
                            dp,
                            pp,
                            ep,
                            kinds,
                        },
                    ));
                }
            }
        }
    }
    if let Some((_, l)) = best {
        return Ok(l);
    }
    let worst = misfit
        .iter()
        .max_by_key(|(id, n)| (**n, std::cmp::Reverse(**id)))
        .map(|(id, _)| *id)
        .unwrap_or("");
    let members = used
        .iter()
        .find(|g| g.0 == worst)
        .map(|g| lex::number_ranges(g.1))
        .unwrap_or_default();
    Err(format!(
        "group `{worst}` (ranks {members}) is not a TP, DP, EP, DP-across-experts or first/last-stage group of any layout TP x DP x PP = {world} with ranks ordered TP fastest, then DP, then PP (Megatron's)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        parse("g.json", text)
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| {
                let l = d.location.as_ref().unwrap();
                format!("{}:{}: {}", l.line, l.column, d.message)
            })
            .collect()
    }

    #[test]
    fn reads_the_writers_file() {
        let g = parse("g.json", "{\n  \"1\": [0, 1],\n  \"2\": [2, 3]\n}\n");
        assert!(g.diagnostics.is_empty(), "{:?}", g.diagnostics);
        assert_eq!(g.groups.len(), 2);
        assert_eq!(g.get("2").unwrap().ranks, vec![2, 3]);
        assert_eq!(g.location(g.get("2").unwrap().rank_offsets[1]).column, 12);
    }

    #[test]
    fn bad_files_are_located() {
        assert_eq!(
            errors("[1, 2]"),
            vec!["1:1: a communicator-group file is a JSON object, but `g.json` holds a list"]
        );
        assert_eq!(
            errors("{\n \"1\": [0, 1.5]\n}"),
            vec!["2:11: `g.json`: group `1` has `1.5` as a rank: not a non-negative integer"]
        );
        assert_eq!(
            errors("{\"1\": [0, -1]}"),
            vec!["1:11: `g.json`: group `1` has `-1` as a rank: negative"]
        );
        assert_eq!(
            errors("{\"1\": [0, 1, 0]}"),
            vec!["1:14: `g.json`: group `1` lists rank 0 twice (first at column 8)"]
        );
        assert_eq!(
            errors("{\"1\": 3}"),
            vec!["1:7: `g.json`: group `1` is `3`, not a list of ranks"]
        );
        assert_eq!(
            errors("{\"1\": []}"),
            vec!["1:7: `g.json`: group `1` has no ranks"]
        );
        assert_eq!(
            errors("{\"1\": [0],\n\"1\": [1]}"),
            vec!["2:1: `g.json`: group `1` is given twice (first on line 1)"]
        );
        let e = errors("{\"1\": [0, 1]\n\"2\": [2]}");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("2:1: `g.json` is not valid JSON"), "{e:?}");
        let g = parse("g.json", "{\"1\": [0, 1, 9]}");
        let e = g.out_of_world(4);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].location.as_ref().unwrap().column, 14);
        assert!(e[0].message.contains("rank 9"), "{}", e[0].message);
    }

    #[test]
    fn detection() {
        let t = "{\"1\": [0, 1], \"2\": [2, 3]}";
        assert_eq!(looks_like(t, t).unwrap().0, 100);
        assert!(looks_like("{\"a\": 1}", "{\"a\": 1}").is_none());
        assert!(looks_like("{\"traceEvents\": [{}]}", "{\"traceEvents\": [{}]}").is_none());
        assert!(looks_like("[1]", "[1]").is_none());
    }

    #[test]
    fn megatron_layouts_are_found() {
        // TP 2 x DP 2 x PP 2: TP {0,1}, DP {0,2}, embedding {0,4}.
        let g: Vec<(&str, Vec<u32>, Option<&str>)> = vec![
            ("1", vec![0, 1], Some("TP")),
            ("2", vec![4, 5], Some("TP")),
            ("3", vec![0, 2], Some("DP")),
            ("4", vec![5, 7], Some("DP")),
            ("5", vec![1, 5], Some("PP")),
        ];
        let v: Vec<(&str, &[u32], Option<&str>)> =
            g.iter().map(|(a, b, c)| (*a, b.as_slice(), *c)).collect();
        let l = infer_layout(8, &v, &[]).unwrap();
        assert_eq!((l.tp, l.dp, l.pp, l.ep), (2, 2, 2, 1));
        assert_eq!(l.kinds["1"], CommGroup::Tp);
        assert_eq!(l.kinds["4"], CommGroup::Dp);
        assert_eq!(l.kinds["5"], CommGroup::Embedding);
        // Without hints the same groups fit only that layout.
        let v2: Vec<(&str, &[u32], Option<&str>)> =
            v.iter().map(|(a, b, _)| (*a, *b, None)).collect();
        assert_eq!(infer_layout(8, &v2, &[]).unwrap(), l);
        // Groups {0,1},{2,3} of 4 ranks: DP of PP 2 by the hints, TP
        // (fewest stages) without them.
        let dp = [
            ("1", &[0u32, 1][..], Some("DP")),
            ("2", &[2u32, 3][..], Some("DP")),
        ];
        let l = infer_layout(4, &dp, &[]).unwrap();
        assert_eq!((l.tp, l.dp, l.pp), (1, 2, 2));
        let bare = [("1", &[0u32, 1][..], None), ("2", &[2u32, 3][..], None)];
        let l = infer_layout(4, &bare, &[]).unwrap();
        assert_eq!((l.tp, l.dp, l.pp), (2, 2, 1));
        // ... and of PP 2 when ranks 0 and 2 exchange point-to-point (TP 2
        // x PP 2 and DP 2 x PP 2 both make them neighbours: the larger TP).
        let l = infer_layout(4, &bare, &[(0, 2), (2, 0)]).unwrap();
        assert_eq!((l.tp, l.dp, l.pp), (2, 1, 2));
        // EP = DP (2 of PP 2, TP 2), told apart from DP 4 by the transfers.
        let ep = [
            ("1", &[0u32, 2][..], Some("EP")),
            ("2", &[5u32, 7][..], Some("EP")),
        ];
        let l = infer_layout(8, &ep, &[(0, 4), (5, 1)]).unwrap();
        assert_eq!((l.tp, l.dp, l.pp, l.ep), (2, 2, 2, 2));
        assert_eq!(l.kinds["2"], CommGroup::Ep);
        // EP 2 inside DP 4 (TP 1): EP {0,1}, DP_EP {0,2}.
        let moe = [
            ("1", &[0u32, 1][..], Some("EP")),
            ("2", &[0u32, 2][..], Some("DP_EP")),
        ];
        let l = infer_layout(4, &moe, &[]).unwrap();
        assert_eq!((l.tp, l.dp, l.pp, l.ep), (1, 4, 1, 2));
        // {0, 3} of 4 ranks fits nothing.
        let odd = [("7", &[0u32, 3][..], None), ("1", &[0u32, 1][..], None)];
        let e = infer_layout(4, &odd, &[]).unwrap_err();
        assert!(e.starts_with("group `7` (ranks 0, 3)"), "{e}");
    }
}
