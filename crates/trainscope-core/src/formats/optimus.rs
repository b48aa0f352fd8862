//! Parser for Optimus-Prime pipeline training logs (docs/FORMATS.md §2.4)
//! and their conversion to a [`MeasuredRun`].
//!
//! The log is the shared stdout of all ranks, so useful lines interleave
//! with each other and with noise (torchrun banners, NCCL warnings, FX graph
//! dumps). The parser therefore searches every line for the useful patterns
//! anywhere in it (two headers or two entries can share a line), never
//! anchors on line starts, and ignores everything else without warnings:
//!
//! * config: `> World size: 8`, `> GAS: 32`, `> MBS: 1`, `> TP: 1`, `> DP: 1`,
//!   `> PP: 8`, `> Total parameters in model: 1,235,814,400`,
//!   `stage2rank = {0: [0], ...}`, `length:.., modcnt:.., num_stage:.., segment:..`;
//! * block headers `[rank:R stage:S] transformer-block(module) forward time
//!   (no send/recv) - step N`;
//! * entries `layer[K]: total=X.XXXms, ops=N, avg/op=Y.YYYms`;
//! * epoch lines `| epoch E | b/ n batches | lr .. | ms/batch T | loss L | ppl P`.
//!
//! Entries are attributed to stages by their `(layer key, ops)` signature,
//! which is unique per stage: the signature -> stage map is learned by a
//! majority vote over the entries that follow a lone header, then each entry
//! goes to the latest header of its signature's stage. Entries that cannot be
//! attributed are counted and warned about.

use super::lex::{self, DiagSink};
use crate::diag::{Diagnostic, Severity};
use crate::workload::Format;
use crate::workload::{
    MeasuredIteration, MeasuredOp, MeasuredRun, OpKind, ParallelConfig, RankTrace, TrainingPhase,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Configuration lines of the log (as printed; `None` when absent).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct OptimusConfig {
    pub world: Option<u32>,
    /// Gradient-accumulation steps (micro-batches per iteration).
    pub gas: Option<u32>,
    /// Global batch size.
    pub gbs: Option<u32>,
    /// Micro-batch size.
    pub mbs: Option<u32>,
    pub tp: Option<u32>,
    pub dp: Option<u32>,
    pub pp: Option<u32>,
    pub total_parameters: Option<u64>,
    /// `stage2rank`: ranks of each stage, in stage order.
    pub stage_to_ranks: Vec<(u32, Vec<u32>)>,
    pub num_stage: Option<u32>,
    pub length: Option<u32>,
    pub modcnt: Option<u32>,
    pub segment: Option<u32>,
}

/// One `layer[K]: total=..., ops=N, avg/op=...` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OptimusEntry {
    /// The layer key: an index, `embed` or `lm_head`.
    pub layer: String,
    /// Forward time of the layer's leaf modules summed over the step's
    /// micro-batches, ns.
    pub total_ns: u64,
    /// Number of module calls summed.
    pub ops: u32,
    /// `avg/op` as logged, ns.
    pub avg_ns: u64,
    /// 1-based line.
    pub line: u32,
}

/// One stage's forward-time block of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OptimusStep {
    pub rank: u32,
    pub stage: u32,
    pub step: u32,
    /// 1-based line of the header.
    pub line: u32,
    pub entries: Vec<OptimusEntry>,
}

/// One `| epoch |` line: the measured wall time of the iteration(s) since
/// the previous one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OptimusEpoch {
    pub epoch: u32,
    /// Batch counter `b` of `b/ n batches`.
    pub batch: u32,
    /// `n` of `b/ n batches`.
    pub batches: u32,
    /// `ms/batch` converted to ns.
    pub duration_ns: u64,
    /// `loss` as printed.
    pub loss: Option<String>,
    /// 1-based line.
    pub line: u32,
}

/// A parsed log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OptimusLog {
    pub config: OptimusConfig,
    /// Per stage and step, in the order the headers appear.
    pub steps: Vec<OptimusStep>,
    pub epochs: Vec<OptimusEpoch>,
    /// Entries that could not be attributed to a stage (each warned).
    pub unattributed_entries: u32,
    /// Useful-looking lines that could not be read (each warned).
    pub unreadable: u32,
    pub diagnostics: Vec<Diagnostic>,
}

/// A tiny cursor over one line.
struct Cur<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Cur<'a> {
    fn rest(&self) -> &'a str {
        self.s.get(self.i..).unwrap_or("")
    }
    fn lit(&mut self, l: &str) -> bool {
        if self.rest().starts_with(l) {
            self.i += l.len();
            true
        } else {
            false
        }
    }
    fn ws(&mut self) {
        let r = self.rest();
        self.i += r.len() - r.trim_start_matches([' ', '\t']).len();
    }
    fn take_while(&mut self, f: impl Fn(u8) -> bool) -> &'a str {
        let r = self.rest();
        let n = r.bytes().take_while(|b| f(*b)).count();
        self.i += n;
        &r[..n]
    }
    fn uint(&mut self) -> Option<u32> {
        self.ws();
        self.take_while(|b| b.is_ascii_digit()).parse().ok()
    }
    fn decimal(&mut self) -> &'a str {
        self.ws();
        self.take_while(|b| b.is_ascii_digit() || b == b'.' || b == b'e' || b == b'-' || b == b'+')
    }
}

#[derive(Debug, Clone)]
enum Event {
    Header {
        rank: u32,
        stage: u32,
        step: u32,
        line: u32,
    },
    Entry(OptimusEntry),
}

const HEADER_MARK: &str = "[rank:";
const ENTRY_MARK: &str = "layer[";
const EPOCH_MARK: &str = "| epoch";

struct Ctx<'a> {
    file: &'a str,
    sink: DiagSink,
    unreadable: u32,
}

impl Ctx<'_> {
    fn unreadable(&mut self, no: u32, line: &str, col: usize, msg: String, hint: &str) {
        self.unreadable = self.unreadable.saturating_add(1);
        let file = self.file;
        self.sink.push_with(Severity::Warning, || {
            Diagnostic::warning(msg)
                .at(lex::location(file, no, line, col))
                .with_hint(hint)
        });
    }
}

/// Parse an Optimus-Prime log. Errors only when no useful line is found.
pub fn parse(file: &str, text: &str) -> Result<OptimusLog, Diagnostic> {
    let mut cx = Ctx {
        file,
        sink: DiagSink::default(),
        unreadable: 0,
    };
    let mut config = OptimusConfig::default();
    let mut events: Vec<Located<'_>> = Vec::new();
    let mut epochs = Vec::new();
    let mut useful = 0usize;
    for (no, line) in lex::numbered_lines(text) {
        if line.trim().is_empty() {
            continue;
        }
        useful += config_line(&mut cx, &mut config, no, line);
        // Headers and entries, in the order they appear on the line.
        let mut found: Vec<(usize, Event)> = Vec::new();
        for (p, _) in line.match_indices(HEADER_MARK) {
            if let Some(ev) = header_at(&mut cx, no, line, p) {
                found.push((p, ev));
            }
        }
        for (p, _) in line.match_indices(ENTRY_MARK) {
            if let Some(e) = entry_at(&mut cx, no, line, p) {
                found.push((p, Event::Entry(e)));
            }
        }
        found.sort_by_key(|(p, _)| *p);
        useful += found.len();
        events.extend(found.into_iter().map(|(p, e)| (e, no, line, p)));
        for (p, _) in line.match_indices(EPOCH_MARK) {
            if let Some(e) = epoch_at(&mut cx, no, line, p) {
                epochs.push(e);
                useful += 1;
            }
        }
    }
    if useful == 0 {
        return Err(Diagnostic::error(
            "failed to parse Optimus-Prime log (no config, forward-time or epoch line found)",
        )
        .with_hint(
            "expected lines like `> World size: 8`, `[rank:7 stage:7] transformer-block(module) forward time (no send/recv) - step 1`, `layer[13]: total=9.994ms, ops=32, avg/op=0.312ms` or `| epoch   1 |     2/  323 batches | ... | ms/batch 1600.43 | ...`",
        ));
    }
    let (steps, unattributed) = attribute(&mut cx, &events);
    if cx.unreadable > 0 {
        cx.sink.push(Diagnostic::warning(format!(
            "{} useful-looking piece(s) of the log could not be read (listed above)",
            cx.unreadable
        )));
    }
    Ok(OptimusLog {
        config,
        steps,
        epochs,
        unattributed_entries: unattributed,
        unreadable: cx.unreadable,
        diagnostics: cx.sink.finish(file),
    })
}

/// Read `> KEY: value` pairs and the other config lines; returns how many
/// useful items the line held.
fn config_line(cx: &mut Ctx<'_>, c: &mut OptimusConfig, no: u32, line: &str) -> usize {
    let mut n = 0;
    let keys: [(&str, u8); 9] = [
        ("> World size:", 0),
        ("> World Size:", 0),
        ("> GAS:", 1),
        ("> GBS:", 2),
        ("> MBS:", 3),
        ("> TP:", 4),
        ("> DP:", 5),
        ("> PP:", 6),
        ("> Pipeline Parallel Size:", 6),
    ];
    for (key, slot) in keys {
        for (p, _) in line.match_indices(key) {
            let mut cur = Cur {
                s: line,
                i: p + key.len(),
            };
            let Some(v) = cur.uint() else {
                cx.unreadable(
                    no,
                    line,
                    p + key.len(),
                    format!("`{}` is not followed by an integer; ignored", key.trim()),
                    "config lines look like `> GAS: 32`",
                );
                continue;
            };
            let field = match slot {
                0 => &mut c.world,
                1 => &mut c.gas,
                2 => &mut c.gbs,
                3 => &mut c.mbs,
                4 => &mut c.tp,
                5 => &mut c.dp,
                _ => &mut c.pp,
            };
            set_once(cx, field, v, key, no, line, p);
            n += 1;
        }
    }
    let key = "> Total parameters in model:";
    if let Some(p) = line.find(key) {
        let mut cur = Cur {
            s: line,
            i: p + key.len(),
        };
        cur.ws();
        let digits: String = cur
            .take_while(|b| b.is_ascii_digit() || b == b',')
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        match digits.parse::<u64>() {
            Ok(v) => {
                c.total_parameters = Some(v);
                n += 1;
            }
            Err(_) => cx.unreadable(
                no,
                line,
                p + key.len(),
                "the total parameter count is not a number; ignored".to_string(),
                "written like `> Total parameters in model: 1,235,814,400`",
            ),
        }
    }
    if let Some(p) = line.find("stage2rank") {
        let rest = &line[p + "stage2rank".len()..];
        let body = rest.trim_start().strip_prefix('=').map(str::trim_start);
        match body.and_then(parse_stage_map) {
            Some(map) => {
                c.stage_to_ranks = map;
                n += 1;
            }
            None => cx.unreadable(
                no,
                line,
                p,
                "the `stage2rank` map could not be read; ignored".to_string(),
                "written like `stage2rank = {0: [0], 1: [1]}`",
            ),
        }
    }
    if let Some(p) = line.find("num_stage:") {
        for (key, field) in [
            ("length:", &mut c.length),
            ("modcnt:", &mut c.modcnt),
            ("num_stage:", &mut c.num_stage),
            ("segment:", &mut c.segment),
        ] {
            // Look from 64 bytes before `num_stage:`, at a char boundary.
            let from = crate::diag::floor_char_boundary(line, p.saturating_sub(64));
            if let Some(q) = line[from..].find(key) {
                let mut cur = Cur {
                    s: line,
                    i: from + q + key.len(),
                };
                if let Some(v) = cur.uint() {
                    *field = Some(v);
                }
            }
        }
        n += 1;
    }
    n
}

fn set_once(
    cx: &mut Ctx<'_>,
    field: &mut Option<u32>,
    v: u32,
    key: &str,
    no: u32,
    line: &str,
    col: usize,
) {
    match *field {
        Some(old) if old != v => {
            let file = cx.file;
            cx.sink.push_with(Severity::Warning, || {
                Diagnostic::warning(format!(
                    "`{}` is printed twice with different values ({old}, then {v}); the first is used",
                    key.trim()
                ))
                .at(lex::location(file, no, line, col))
            });
        }
        Some(_) => {}
        None => *field = Some(v),
    }
}

/// `{0: [0], 1: [1, 2]}` -> [(0, [0]), (1, [1, 2])].
fn parse_stage_map(s: &str) -> Option<Vec<(u32, Vec<u32>)>> {
    let inner = s.strip_prefix('{')?;
    let end = inner.find('}')?;
    let inner = &inner[..end];
    let mut out = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (k, after) = rest.split_once(':')?;
        let stage: u32 = k.trim().parse().ok()?;
        let after = after.trim_start().strip_prefix('[')?;
        let (list, after) = after.split_once(']')?;
        let ranks: Option<Vec<u32>> = list
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(|x| x.parse().ok())
            .collect();
        out.push((stage, ranks?));
        rest = after.trim_start().trim_start_matches(',').trim_start();
        if out.len() > 1 << 16 {
            return None;
        }
    }
    Some(out)
}

const HEADER_HINT: &str = "a forward-time header looks like `[rank:7 stage:7] transformer-block(module) forward time (no send/recv) - step 1`";
const ENTRY_HINT: &str = "an entry looks like `layer[13]: total=9.994ms, ops=32, avg/op=0.312ms`";

fn header_at(cx: &mut Ctx<'_>, no: u32, line: &str, p: usize) -> Option<Event> {
    let mut c = Cur {
        s: line,
        i: p + HEADER_MARK.len(),
    };
    let rank = c.uint()?;
    c.ws();
    if !c.lit("stage:") {
        return None; // `[rank:0] torch version ...`: noise.
    }
    let stage = c.uint()?;
    c.ws();
    if !c.lit("]") {
        return None;
    }
    // Only forward-time headers matter; find `- step N` before any next header.
    let rest = c.rest();
    let limit = rest.find(HEADER_MARK).unwrap_or(rest.len());
    let segment = &rest[..limit];
    if !segment.contains("forward time") {
        return None;
    }
    let Some(sp) = segment.find("- step") else {
        cx.unreadable(
            no,
            line,
            p,
            "forward-time header without `- step N`; ignored".to_string(),
            HEADER_HINT,
        );
        return None;
    };
    let mut c2 = Cur {
        s: line,
        i: c.i + sp + "- step".len(),
    };
    let Some(step) = c2.uint() else {
        cx.unreadable(
            no,
            line,
            c.i + sp,
            "forward-time header: the step number is missing or too large; ignored".to_string(),
            HEADER_HINT,
        );
        return None;
    };
    Some(Event::Header {
        rank,
        stage,
        step,
        line: no,
    })
}

fn entry_at(cx: &mut Ctx<'_>, no: u32, line: &str, p: usize) -> Option<OptimusEntry> {
    let mut c = Cur {
        s: line,
        i: p + ENTRY_MARK.len(),
    };
    let key = c.take_while(|b| b != b']' && b != b' ' && b != b'\t');
    if key.is_empty() || key.len() > 64 || !c.lit("]:") {
        return None;
    }
    c.ws();
    if !c.lit("total=") {
        return None; // Not a timing entry.
    }
    let mut bad = |c: &Cur<'_>, what: &str| {
        cx.unreadable(
            no,
            line,
            c.i,
            format!("entry `layer[{}]`: {what}; ignored", lex::quote(key, 20)),
            ENTRY_HINT,
        );
    };
    let total = c.decimal();
    let Ok(total_ns) = lex::parse_decimal_scaled(total, 6) else {
        bad(&c, "`total=` is not a number of milliseconds");
        return None;
    };
    if !c.lit("ms") {
        bad(&c, "`total=` lacks its `ms` unit (truncated?)");
        return None;
    }
    c.ws();
    if !(c.lit(",") && {
        c.ws();
        c.lit("ops=")
    }) {
        bad(&c, "expected `, ops=N`");
        return None;
    }
    let Some(ops) = c.uint() else {
        bad(&c, "`ops=` is not an integer");
        return None;
    };
    c.ws();
    let avg_ns = if c.lit(",") && {
        c.ws();
        c.lit("avg/op=")
    } {
        let a = c.decimal();
        match lex::parse_decimal_scaled(a, 6) {
            Ok(v) if c.lit("ms") => v,
            _ => {
                bad(&c, "`avg/op=` is not a number of milliseconds");
                return None;
            }
        }
    } else {
        bad(&c, "expected `, avg/op=Y.YYYms` (truncated?)");
        return None;
    };
    Some(OptimusEntry {
        layer: key.to_string(),
        total_ns,
        ops,
        avg_ns,
        line: no,
    })
}

fn epoch_at(cx: &mut Ctx<'_>, no: u32, line: &str, p: usize) -> Option<OptimusEpoch> {
    const HINT: &str = "an epoch line looks like `| epoch   1 |     2/  323 batches | lr 0.00 | ms/batch 1600.43 | loss  6.84 | ppl   933.51`";
    let mut c = Cur {
        s: line,
        i: p + EPOCH_MARK.len(),
    };
    let Some(epoch) = c.uint() else {
        cx.unreadable(
            no,
            line,
            p,
            "epoch line without an epoch number; ignored".into(),
            HINT,
        );
        return None;
    };
    c.ws();
    let (batch, batches) = if c.lit("|") {
        let b = c.uint();
        c.ws();
        let slash = c.lit("/");
        let n = c.uint();
        match (b, slash, n) {
            (Some(b), true, Some(n)) => (b, n),
            _ => {
                cx.unreadable(
                    no,
                    line,
                    c.i,
                    "epoch line: expected `b/ n batches`; ignored".into(),
                    HINT,
                );
                return None;
            }
        }
    } else {
        cx.unreadable(
            no,
            line,
            c.i,
            "epoch line: expected `|` after the epoch; ignored".into(),
            HINT,
        );
        return None;
    };
    let rest = c.rest();
    let next_epoch = rest.find(EPOCH_MARK).unwrap_or(rest.len());
    let rest = &rest[..next_epoch];
    let Some(mp) = rest.find("ms/batch") else {
        cx.unreadable(
            no,
            line,
            c.i,
            "epoch line without `ms/batch` (truncated?); ignored".into(),
            HINT,
        );
        return None;
    };
    let mut c2 = Cur {
        s: line,
        i: c.i + mp + "ms/batch".len(),
    };
    let v = c2.decimal();
    let Ok(duration_ns) = lex::parse_decimal_scaled(v, 6) else {
        cx.unreadable(
            no,
            line,
            c2.i,
            format!(
                "epoch line: `ms/batch {}` is not a number; ignored",
                lex::quote(v, 20)
            ),
            HINT,
        );
        return None;
    };
    let loss = rest.find("| loss").map(|lp| {
        let mut c3 = Cur {
            s: rest,
            i: lp + "| loss".len(),
        };
        c3.decimal().to_string()
    });
    Some(OptimusEpoch {
        epoch,
        batch,
        batches,
        duration_ns,
        loss: loss.filter(|l| !l.is_empty()),
        line: no,
    })
}

/// Attribute entries to (stage, step) blocks; returns the blocks and the
/// number of entries that could not be attributed.
/// An event with its line number, line text and byte column.
type Located<'a> = (Event, u32, &'a str, usize);

fn attribute(cx: &mut Ctx<'_>, events: &[Located<'_>]) -> (Vec<OptimusStep>, u32) {
    // Pass 1: learn signature -> stage by majority over entries that follow
    // exactly one open header.
    let mut votes: BTreeMap<(String, u32), BTreeMap<u32, u32>> = BTreeMap::new();
    let mut open: Vec<u32> = Vec::new(); // stages of the headers since the last entry
    let mut last_was_header = false;
    for (ev, ..) in events {
        match ev {
            Event::Header { stage, .. } => {
                if !last_was_header {
                    open.clear();
                }
                open.push(*stage);
                last_was_header = true;
            }
            Event::Entry(e) => {
                last_was_header = false;
                if let [stage] = open[..] {
                    *votes
                        .entry((e.layer.clone(), e.ops))
                        .or_default()
                        .entry(stage)
                        .or_default() += 1;
                }
            }
        }
    }
    let mut signature: BTreeMap<(String, u32), u32> = BTreeMap::new();
    for (sig, by_stage) in &votes {
        let best = by_stage.values().copied().max().unwrap_or(0);
        let winners: Vec<u32> = by_stage
            .iter()
            .filter(|(_, v)| **v == best)
            .map(|(s, _)| *s)
            .collect();
        if let [s] = winners[..] {
            signature.insert(sig.clone(), s);
        }
    }

    // Pass 2: attribute.
    let mut steps: Vec<OptimusStep> = Vec::new();
    // Layer keys already in each block (parallel to `steps`): a duplicate
    // check by lookup, not by a scan of the block's entries.
    let mut keys_of: Vec<BTreeSet<String>> = Vec::new();
    let mut latest: BTreeMap<u32, usize> = BTreeMap::new(); // stage -> index in steps
    let mut open_idx: Vec<usize> = Vec::new();
    let mut last_was_header = false;
    let mut unattributed = 0u32;
    for (ev, no, text, col) in events {
        match ev {
            Event::Header {
                rank,
                stage,
                step,
                line,
            } => {
                if !last_was_header {
                    open_idx.clear();
                }
                steps.push(OptimusStep {
                    rank: *rank,
                    stage: *stage,
                    step: *step,
                    line: *line,
                    entries: Vec::new(),
                });
                keys_of.push(BTreeSet::new());
                latest.insert(*stage, steps.len() - 1);
                open_idx.push(steps.len() - 1);
                last_was_header = true;
            }
            Event::Entry(e) => {
                last_was_header = false;
                let target = match signature.get(&(e.layer.clone(), e.ops)) {
                    Some(stage) => latest.get(stage).copied(),
                    None => match open_idx[..] {
                        [only] => Some(only),
                        _ => None,
                    },
                };
                let Some(t) = target else {
                    unattributed = unattributed.saturating_add(1);
                    let file = cx.file;
                    cx.sink.push_with(Severity::Warning, || {
                        Diagnostic::warning(format!(
                            "entry `layer[{}]` (ops={}) cannot be attributed to a stage (no header for its signature); ignored",
                            lex::quote(&e.layer, 20),
                            e.ops
                        ))
                        .at(lex::location(file, *no, text, *col))
                    });
                    continue;
                };
                let block = &mut steps[t];
                if !keys_of[t].insert(e.layer.clone()) {
                    let file = cx.file;
                    let (stage, step) = (block.stage, block.step);
                    cx.sink.push_with(Severity::Warning, || {
                        Diagnostic::warning(format!(
                            "entry `layer[{}]` appears twice for stage {stage} step {step}; the second (line {no}) is ignored",
                            lex::quote(&e.layer, 20)
                        ))
                        .at(lex::location(file, *no, text, *col))
                    });
                    unattributed = unattributed.saturating_add(1);
                    continue;
                }
                block.entries.push(e.clone());
            }
        }
    }
    (steps, unattributed)
}

/// Convert a parsed log to a measured run: one rank trace per rank, its ops
/// the per-step per-layer forward totals (`count` = `ops=N`, no start time:
/// the log aggregates them), the iteration times from the epoch lines (the
/// first `1/n` line covers two iterations).
pub fn to_run(file: &str, log: &OptimusLog) -> MeasuredRun {
    let mut diags = DiagSink::resume(log.diagnostics.clone());
    let c = &log.config;
    let max_rank = log.steps.iter().map(|s| s.rank).max();
    let max_stage = log.steps.iter().map(|s| s.stage).max();
    let world = c.world.or_else(|| max_rank.map(|r| r.saturating_add(1)));
    let pp =
        c.pp.or(c.num_stage)
            .or_else(|| max_stage.map(|s| s.saturating_add(1)))
            .unwrap_or(1);
    let gas = c.gas.unwrap_or(1);
    if c.gas.is_none() {
        diags.push(Diagnostic::warning(
            "the log does not print `> GAS:`; assuming 1 micro-batch per iteration",
        ));
    }
    let (mut parallel, notes) = ParallelConfig::resolve(world, c.tp.unwrap_or(1), pp, 1, gas);
    diags.extend(notes.into_iter().map(Diagnostic::warning));
    parallel.micro_batch_size = c.mbs;
    if let Some(dp) = c.dp {
        if dp != parallel.dp {
            diags.push(Diagnostic::warning(format!(
                "the log says DP {dp} but world / (TP x PP) = {}; using {}",
                parallel.dp, parallel.dp
            )));
        }
    }
    let mut stage_map: BTreeMap<u32, &Vec<u32>> = BTreeMap::new();
    for (st, r) in &c.stage_to_ranks {
        stage_map.entry(*st).or_insert(r);
    }
    for s in &log.steps {
        if let Some(ranks) = stage_map.get(&s.stage) {
            if !ranks.contains(&s.rank) {
                diags.push(Diagnostic::warning(format!(
                    "line {}: rank {} reports stage {} but stage2rank maps that stage to ranks {ranks:?}",
                    s.line, s.rank, s.stage
                )));
                break;
            }
        }
    }

    let mut by_rank: BTreeMap<u32, RankTrace> = BTreeMap::new();
    for s in &log.steps {
        let rt = by_rank.entry(s.rank).or_insert_with(|| RankTrace {
            rank: s.rank,
            stage: Some(s.stage),
            file: file.to_string(),
            ops: Vec::new(),
            iterations: Vec::new(),
            copy: None,
        });
        for e in &s.entries {
            let mut op = MeasuredOp::new(format!("layer[{}]", e.layer), OpKind::Compute);
            op.phase = Some(TrainingPhase::Forward);
            op.duration_ns = Some(e.total_ns);
            op.step = Some(s.step);
            op.count = e.ops;
            op.source_line = Some(e.line);
            op.detail = Some(format!(
                "forward of layer {} summed over the step's micro-batches (avg/op {} ms)",
                e.layer,
                lex::ns_to_ms_string(e.avg_ns)
            ));
            rt.ops.push(op);
        }
    }
    let ranks: Vec<RankTrace> = by_rank.into_values().collect();
    if !ranks.is_empty() {
        let present: Vec<u32> = ranks.iter().map(|r| r.rank).collect();
        let missing: Vec<u32> = (0..parallel.world)
            .filter(|r| present.binary_search(r).is_err())
            .take(64)
            .collect();
        if !missing.is_empty() {
            diags.push(Diagnostic::warning(format!(
                "no forward-time lines for rank(s) {missing:?}"
            )));
        }
        diags.push(Diagnostic::warning(
            "the log has forward times only: backward and send/recv times are not logged and must be estimated; forward totals are lower bounds (attention matmuls and residual adds are not hooked) summed over the step's micro-batches, and step 1 is warm-up",
        ));
    }

    let mut iterations = Vec::new();
    let mut first = true;
    for e in &log.epochs {
        let covered = if first && e.batch == 1 { 2 } else { 1 };
        if covered == 2 {
            diags.push(Diagnostic::warning(format!(
                "the first epoch line (line {}: batch 1, {} ms) covers two iterations (the warm-up step and the first); later lines are one iteration each",
                e.line,
                lex::ns_to_ms_string(e.duration_ns)
            )));
        }
        first = false;
        iterations.push(MeasuredIteration {
            index: e.batch,
            duration_ns: e.duration_ns,
            iterations_covered: covered,
            source_line: Some(e.line),
        });
    }
    if iterations.is_empty() {
        diags.push(Diagnostic::warning(
            "no `| epoch |` line: the log has no measured iteration time",
        ));
    }
    MeasuredRun {
        format: Format::OptimusPrimeLog,
        files: vec![file.to_string()],
        parallel,
        ranks,
        iterations,
        diagnostics: diags.finish(file),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str =
        include_str!("../../../../tests/fixtures/seeds/optimus_prime_llama1b_pp8_train.log");

    #[test]
    fn seed_config_steps_epochs() {
        let log = parse("op.log", SEED).unwrap();
        assert_eq!(log.config.world, Some(8));
        assert_eq!(log.config.gas, Some(32));
        assert_eq!(log.config.total_parameters, Some(1_235_814_400));
        assert_eq!(log.config.stage_to_ranks.len(), 8);
        assert_eq!(log.config.segment, Some(16));
        assert_eq!(log.epochs.len(), 20);
        assert_eq!(log.epochs[0].duration_ns, 7_289_550_000);
        assert_eq!(log.unattributed_entries, 0);
        assert!(log.diagnostics.is_empty(), "{:?}", log.diagnostics);
        // Interleaved lines 373-379: stage 0 and stage 3, step 2.
        let s0 = log
            .steps
            .iter()
            .find(|s| s.stage == 0 && s.step == 2)
            .unwrap();
        let keys: Vec<&str> = s0.entries.iter().map(|e| e.layer.as_str()).collect();
        assert_eq!(keys, ["embed", "0", "1"]);
        assert_eq!(s0.entries[0].total_ns, 739_000);
        let s3 = log
            .steps
            .iter()
            .find(|s| s.stage == 3 && s.step == 2)
            .unwrap();
        let keys: Vec<&str> = s3.entries.iter().map(|e| e.layer.as_str()).collect();
        assert_eq!(keys, ["5", "6", "7"]);
        assert!(log.steps.iter().all(|s| !s.entries.is_empty()));
    }

    #[test]
    fn seed_run() {
        let log = parse("op.log", SEED).unwrap();
        let run = to_run("op.log", &log);
        assert_eq!(run.ranks.len(), 8);
        assert_eq!(run.parallel.micro_batches, 32);
        assert_eq!(run.iterations[0].iterations_covered, 2);
        assert_eq!(run.iterations[1].duration_ns, 1_600_430_000);
    }
}
