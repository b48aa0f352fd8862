//! Parser for Echo / Megatron per-rank op traces (docs/FORMATS.md §2.3) and
//! the assembly of several rank files into one [`MeasuredRun`].
//!
//! One op per line:
//! `rank:R:OPNAME(stage_id=S,batch_id=B,mg_state=STATE,duration=D,description=TEXT,group_kind=GK,input__shape=SHAPE,input__dtype=DTYPE,timestamp=T,sub_operations=[...])`.
//! The description is free text containing commas and parentheses, so the
//! body is split on the literal `,key=` delimiters in this fixed order, never
//! on bare commas; the sub-operation list is a Python list of quoted strings
//! whose fields are split bracket-aware (shapes contain `, `). Durations and
//! timestamps are milliseconds with 2 decimals (converted exactly to ns);
//! `None` values are kept as absent; the profiling-mode placeholders
//! `duration=0, timestamp=0` become unknown timing in the model. The
//! timestamp is the op's END: `start = timestamp - duration`.

use super::lex::{self, DiagSink};
use crate::diag::{Diagnostic, Severity};
use crate::workload::Format;
use crate::workload::{
    tensor_bytes, CommGroup, CommKind, MeasuredIteration, MeasuredOp, MeasuredRun, OpKind,
    ParallelConfig, RankTrace, Span, TrainingPhase,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// The keys of an op line, in the fixed order the tracer writes them.
pub const OP_KEYS: [&str; 10] = [
    "stage_id",
    "batch_id",
    "mg_state",
    "duration",
    "description",
    "group_kind",
    "input__shape",
    "input__dtype",
    "timestamp",
    "sub_operations",
];

const SUB_KEYS: [&str; 8] = [
    "trace_src_func",
    "duration",
    "timestamp",
    "input__shape",
    "input__dtype",
    "func_name",
    "group",
    "comm_func",
];

const LINE_HINT: &str = "an Echo op line is `rank:R:OPNAME(stage_id=S,batch_id=B,mg_state=STATE,duration=D,description=TEXT,group_kind=GK,input__shape=SHAPE,input__dtype=DTYPE,timestamp=T,sub_operations=[...])`";

/// Job facts encoded in an Echo file name
/// (`wd{world}_tp{tp}_pp{pp}_numl{layers}_bs{mbs}_..._rank{R}_...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct EchoFileInfo {
    pub world: Option<u32>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub dp: Option<u32>,
    pub layers: Option<u32>,
    pub micro_batch_size: Option<u32>,
    pub rank: Option<u32>,
}

/// One sub-operation, raw values (ms already converted to ns).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct EchoSubOp {
    pub trace_src_func: Option<String>,
    pub duration_ns: Option<u64>,
    /// End time, ns (as written; 0 is a profiling placeholder).
    pub timestamp_ns: Option<u64>,
    pub shape: Option<Vec<u64>>,
    pub dtype: Option<String>,
    pub func_name: Option<String>,
    pub group: Option<String>,
    pub comm_func: Option<String>,
}

/// One op line, raw values (ms already converted to ns; `None` where the
/// file says `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EchoOp {
    /// 1-based line number.
    pub line: u32,
    /// Rank from the line's `rank:R:` prefix.
    pub rank: u32,
    pub name: String,
    pub stage_id: Option<u32>,
    /// Counts per op name (not a global micro-batch index).
    pub batch_id: Option<u32>,
    pub mg_state: Option<String>,
    pub duration_ns: Option<u64>,
    pub description: Option<String>,
    pub group_kind: Option<String>,
    pub shape: Option<Vec<u64>>,
    pub dtype: Option<String>,
    /// End time, ns (0 is a profiling placeholder).
    pub timestamp_ns: Option<u64>,
    pub sub_ops: Vec<EchoSubOp>,
}

/// A parsed trace file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EchoTrace {
    pub file: String,
    pub file_info: EchoFileInfo,
    pub ops: Vec<EchoOp>,
    /// `rank:` lines that could not be parsed (each has an error).
    pub skipped_lines: u32,
    /// Non-blank lines that are not op lines at all (one warning summarises them).
    pub ignored_lines: u32,
    pub diagnostics: Vec<Diagnostic>,
}

/// The file name without directories.
fn base_name(file: &str) -> &str {
    file.rsplit(['/', '\\']).next().unwrap_or(file)
}

/// Read job facts from a file name: tokens split on `_`, `.` and `-` such
/// as `wd8`, `tp2`, `pp4`, `dp1`, `numl32`, `bs2`, `rank7`.
pub fn parse_file_name(file: &str) -> EchoFileInfo {
    let mut info = EchoFileInfo::default();
    for tok in base_name(file).split(['_', '.', '-']) {
        let digits = tok.bytes().rev().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits == tok.len() {
            continue;
        }
        let (key, num) = tok.split_at(tok.len() - digits);
        let Ok(v) = num.parse::<u32>() else { continue };
        let slot = match key {
            "wd" | "world" => &mut info.world,
            "tp" => &mut info.tp,
            "pp" => &mut info.pp,
            "dp" => &mut info.dp,
            "numl" => &mut info.layers,
            "bs" | "mbs" => &mut info.micro_batch_size,
            "rank" => &mut info.rank,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(v);
        }
    }
    info
}

/// The key that groups rank files of one job: the base name with its
/// `rank<N>` token replaced by `rank*` (files without one share the key
/// `(no rank in name)`).
pub fn job_key(file: &str) -> String {
    let name = base_name(file);
    let mut out = String::with_capacity(name.len());
    let mut found = false;
    let mut rest = name;
    while let Some(p) = rest.find("rank") {
        let after = &rest[p + 4..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..p + 4]);
        if digits > 0 {
            out.push('*');
            found = true;
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    if found {
        out
    } else {
        "(no rank in name)".to_string()
    }
}

/// Parse one trace file. Errors only when it holds no op line at all.
pub fn parse(file: &str, text: &str) -> Result<EchoTrace, Diagnostic> {
    let mut sink = DiagSink::default();
    let mut ops = Vec::new();
    let mut skipped_lines: u32 = 0;
    let mut ignored_lines: u32 = 0;
    let mut first_ignored: Option<(u32, String)> = None;
    for (no, line) in lex::numbered_lines(text) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if !trimmed.starts_with("rank:") {
            ignored_lines = ignored_lines.saturating_add(1);
            if first_ignored.is_none() {
                first_ignored = Some((no, lex::quote(trimmed, 160)));
            }
            continue;
        }
        match parse_line(file, &mut sink, no, line) {
            Ok(op) => ops.push(op),
            Err(d) => {
                skipped_lines = skipped_lines.saturating_add(1);
                sink.push(d);
            }
        }
    }
    if let Some((no, text)) = first_ignored {
        sink.push(
            Diagnostic::warning(format!(
                "{ignored_lines} line(s) are not Echo op lines (no `rank:R:` prefix); ignored"
            ))
            .at(lex::location(file, no, &text, 0)),
        );
    }
    if ops.is_empty() {
        let mut d = Diagnostic::error(format!(
            "failed to parse Echo trace (no op line could be read; {skipped_lines} malformed, {ignored_lines} other)"
        ))
        .with_hint(LINE_HINT);
        if let Some(first) = sink.items().iter().find(|d| d.is_error()) {
            d.location = first.location.clone();
            d.message = format!("{} — first problem: {}", d.message, first.message);
        }
        return Err(d);
    }
    // Listed last and never capped: the file is still used, so the count
    // of what was read and left out is a warning (each skipped item has
    // its located error above).
    let mut diagnostics = sink.finish(file);
    if skipped_lines > 0 {
        diagnostics.push(Diagnostic::warning(format!(
            "{} op line(s) read, {skipped_lines} skipped because they could not be parsed",
            ops.len()
        )));
    }
    Ok(EchoTrace {
        file: file.to_string(),
        file_info: parse_file_name(file),
        ops,
        skipped_lines,
        ignored_lines,
        diagnostics,
    })
}

fn none_if_none(v: &str) -> Option<&str> {
    (v != "None" && !v.is_empty()).then_some(v)
}

fn parse_line(file: &str, sink: &mut DiagSink, no: u32, line: &str) -> Result<EchoOp, Diagnostic> {
    let err = |col: usize, msg: String| -> Diagnostic {
        Diagnostic::error(format!("failed to parse Echo trace ({msg}); line skipped"))
            .at(lex::location(file, no, line, col))
            .with_hint(LINE_HINT)
    };
    let start = line.len() - line.trim_start().len();
    let rest = &line[start + 5..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let rank: u32 = rest[..digits].parse().map_err(|_| {
        err(
            start + 5,
            if digits == 0 {
                "expected a rank number after `rank:`".to_string()
            } else {
                "rank number too large".to_string()
            },
        )
    })?;
    let after_rank = &rest[digits..];
    let Some(after_colon) = after_rank.strip_prefix(':') else {
        return Err(err(
            start + 5 + digits,
            "expected `:` after the rank number".to_string(),
        ));
    };
    let name_len = after_colon
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let name_col = lex::offset_in(line, after_colon);
    if name_len == 0 {
        return Err(err(
            name_col,
            "expected an op name after `rank:R:`".to_string(),
        ));
    }
    let name = &after_colon[..name_len];
    let Some(body_open) = after_colon[name_len..].strip_prefix('(') else {
        return Err(err(
            name_col + name_len,
            format!("expected `(` after the op name `{}`", lex::quote(name, 40)),
        ));
    };
    let trimmed_end = body_open.trim_end();
    let Some(body) = trimmed_end.strip_suffix(')') else {
        return Err(err(
            line.trim_end().len(),
            "the line ends before the closing `)` (truncated?)".to_string(),
        ));
    };
    let body_col = lex::offset_in(line, body);
    // Split on the literal `,key=` delimiters, in order.
    let mut values: [(usize, &str); 10] = [(0, ""); 10];
    let Some(mut pos) = body.strip_prefix("stage_id=").map(|_| "stage_id=".len()) else {
        return Err(err(
            body_col,
            "expected `stage_id=` right after `(`".to_string(),
        ));
    };
    for k in 0..OP_KEYS.len() {
        if k + 1 == OP_KEYS.len() {
            values[k] = (body_col + pos, &body[pos..]);
            break;
        }
        let delim_key = OP_KEYS[k + 1];
        let found = find_delim(&body[pos..], delim_key);
        let Some(off) = found else {
            return Err(err(
                body_col + pos,
                format!(
                    "expected `,{delim_key}=` after `{}=`; keys come in the order {}",
                    OP_KEYS[k],
                    OP_KEYS.join(", ")
                ),
            ));
        };
        values[k] = (body_col + pos, &body[pos..pos + off]);
        pos += off + 1 + delim_key.len() + 1;
    }
    let u32_field = |k: usize| -> Result<Option<u32>, Diagnostic> {
        let (col, v) = values[k];
        match none_if_none(v) {
            None => Ok(None),
            Some(v) => lex::parse_u64_exact(v)
                .ok()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    err(
                        col,
                        format!(
                            "{} `{}` is not a small non-negative integer",
                            OP_KEYS[k],
                            lex::quote(v, 40)
                        ),
                    )
                }),
        }
    };
    let ms_field = |k: usize| -> Result<Option<u64>, Diagnostic> {
        let (col, v) = values[k];
        match none_if_none(v) {
            None => Ok(None),
            Some(v) => lex::parse_decimal_scaled(v, 6).map(Some).map_err(|why| {
                err(
                    col,
                    format!(
                        "{} `{}` is {why} (milliseconds expected)",
                        OP_KEYS[k],
                        lex::quote(v, 40)
                    ),
                )
            }),
        }
    };
    let text_field = |k: usize| -> Option<String> { none_if_none(values[k].1).map(str::to_string) };
    let shape = {
        let (col, v) = values[6];
        match none_if_none(v) {
            None => None,
            Some(v) => match parse_shape(v) {
                Some(s) => Some(s),
                None => {
                    sink.push_with(Severity::Warning, || {
                        Diagnostic::warning(format!(
                            "input__shape `{}` is not a list of sizes; message size unknown",
                            lex::quote(v, 60)
                        ))
                        .at(lex::location(file, no, line, col))
                    });
                    None
                }
            },
        }
    };
    let sub_ops = {
        let (col, v) = values[9];
        parse_sub_ops(file, sink, no, line, col, v).map_err(|(c, m)| err(c, m))?
    };
    Ok(EchoOp {
        line: no,
        rank,
        name: name.to_string(),
        stage_id: u32_field(0)?,
        batch_id: u32_field(1)?,
        mg_state: text_field(2),
        duration_ns: ms_field(3)?,
        description: text_field(4),
        group_kind: text_field(5),
        shape,
        dtype: text_field(7),
        timestamp_ns: ms_field(8)?,
        sub_ops,
    })
}

/// Offset of the `,` of the first `,key=` in `s`.
fn find_delim(s: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = s[from..].find(key) {
        let at = from + p;
        if at > 0 && s.as_bytes()[at - 1] == b',' && s.as_bytes().get(at + key.len()) == Some(&b'=')
        {
            return Some(at - 1);
        }
        from = at + key.len();
    }
    None
}

/// `[2048, 2, 5120]`, `[]`, `torch.Size([1, 2])` -> sizes.
fn parse_shape(v: &str) -> Option<Vec<u64>> {
    let v = v.trim();
    let v = v
        .strip_prefix("torch.Size(")
        .and_then(|x| x.strip_suffix(')'))
        .unwrap_or(v);
    let inner = v.strip_prefix('[')?.strip_suffix(']')?.trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(',')
        .map(|d| d.trim())
        .filter(|d| !d.is_empty())
        .map(|d| d.parse::<u64>().ok())
        .collect()
}

/// Parse `[ 'a=1,b=[1, 2]', "..." ]` into sub-ops. Errors as (column, message).
fn parse_sub_ops(
    file: &str,
    sink: &mut DiagSink,
    no: u32,
    line: &str,
    col: usize,
    v: &str,
) -> Result<Vec<EchoSubOp>, (usize, String)> {
    let t = v.trim();
    if t == "None" || t.is_empty() {
        return Ok(Vec::new());
    }
    let Some(inner) = t.strip_prefix('[').and_then(|x| x.strip_suffix(']')) else {
        return Err((
            col,
            "sub_operations is not a bracketed list `[...]` (truncated?)".to_string(),
        ));
    };
    let inner_col = lex::offset_in(line, inner);
    let b = inner.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b',' | b'\t' => i += 1,
            q @ (b'\'' | b'"') => {
                let mut s = String::new();
                let mut j = i + 1;
                let mut closed = false;
                while j < b.len() {
                    let c = b[j];
                    if c == b'\\' && j + 1 < b.len() {
                        // The escaped char, whole (it may be multi-byte).
                        let ch_len = utf8_len(b[j + 1]);
                        s.push_str(inner.get(j + 1..j + 1 + ch_len).unwrap_or("\u{fffd}"));
                        j += 1 + ch_len;
                        continue;
                    }
                    if c == q {
                        closed = true;
                        break;
                    }
                    // Copy a whole UTF-8 char.
                    let ch_len = utf8_len(c);
                    s.push_str(inner.get(j..j + ch_len).unwrap_or("\u{fffd}"));
                    j += ch_len;
                }
                if !closed {
                    return Err((
                        inner_col + i,
                        "a sub-operation string is not closed (truncated?)".to_string(),
                    ));
                }
                out.push(parse_sub_op(file, sink, no, line, inner_col + i, &s));
                i = j + 1;
            }
            _ => {
                return Err((
                    inner_col + i,
                    "sub_operations should be a list of quoted strings".to_string(),
                ));
            }
        }
    }
    Ok(out)
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Split on commas outside brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            ',' if depth <= 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_sub_op(
    file: &str,
    sink: &mut DiagSink,
    no: u32,
    line: &str,
    col: usize,
    s: &str,
) -> EchoSubOp {
    let mut sub = EchoSubOp::default();
    let mut problems: Vec<String> = Vec::new();
    for part in split_top_level(s) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let Some((k, v)) = part.split_once('=') else {
            problems.push(format!("`{}` is not key=value", lex::quote(part, 30)));
            continue;
        };
        let v = v.trim();
        let text = || none_if_none(v).map(str::to_string);
        match k.trim() {
            "trace_src_func" => sub.trace_src_func = text(),
            "func_name" => sub.func_name = text(),
            "group" => sub.group = text(),
            "comm_func" => sub.comm_func = text(),
            "input__dtype" => sub.dtype = text(),
            "input__shape" => {
                sub.shape = none_if_none(v).and_then(|x| {
                    let s = parse_shape(x);
                    if s.is_none() {
                        problems.push(format!(
                            "shape `{}` is not a list of sizes",
                            lex::quote(x, 30)
                        ));
                    }
                    s
                })
            }
            key @ ("duration" | "timestamp") => {
                let val = match none_if_none(v) {
                    None => None,
                    Some(x) => match lex::parse_decimal_scaled(x, 6) {
                        Ok(n) => Some(n),
                        Err(why) => {
                            problems.push(format!("{key} `{}` is {why}", lex::quote(x, 30)));
                            None
                        }
                    },
                };
                if key == "duration" {
                    sub.duration_ns = val;
                } else {
                    sub.timestamp_ns = val;
                }
            }
            other => {
                let mut p = format!("unknown key `{}`", lex::quote(other, 30));
                if let Some(s) = lex::suggest_short(other, &SUB_KEYS) {
                    p.push_str(&format!(" (did you mean `{s}`?)"));
                }
                problems.push(p);
            }
        }
    }
    if !problems.is_empty() {
        sink.push_with(Severity::Warning, || {
            Diagnostic::warning(format!(
                "sub-operation partly unreadable: {}; those values are unknown",
                problems.join("; ")
            ))
            .at(lex::location(file, no, line, col))
        });
    }
    sub
}

// ---------------------------------------------------------------------------
// Conversion to the model.

fn group_from(name: &str) -> Option<CommGroup> {
    Some(match name {
        "tp" => CommGroup::Tp,
        "dp" => CommGroup::Dp,
        "pp" => CommGroup::Pp,
        // Echo's `ep` is the word-embedding group (first and last stage).
        "ep" => CommGroup::Embedding,
        "pep" => CommGroup::PositionEmbedding,
        "dp_ep" | "edp" => CommGroup::DpEp,
        "world" | "global" => CommGroup::Unscoped,
        _ => return None,
    })
}

fn comm_from(func: &str) -> Option<CommKind> {
    let f = func.to_ascii_lowercase();
    let f = f.trim_start_matches('_');
    Some(match f {
        _ if f.starts_with("allreduce") || f.starts_with("all_reduce") => CommKind::AllReduce,
        _ if f.starts_with("allgather") || f.starts_with("all_gather") => CommKind::AllGather,
        _ if f.starts_with("reduce_scatter") || f.starts_with("reducescatter") => {
            CommKind::ReduceScatter
        }
        _ if f.starts_with("alltoall") || f.starts_with("all_to_all") => CommKind::AllToAll,
        _ if f.starts_with("broadcast") => CommKind::Broadcast,
        _ if f.starts_with("send") || f.starts_with("isend") => CommKind::Send,
        _ if f.starts_with("recv") || f.starts_with("irecv") => CommKind::Recv,
        _ => return None,
    })
}

/// How an op name maps to kind, phase and whether `batch_id` is the
/// micro-batch index.
fn classify(op: &EchoOp) -> (OpKind, Option<TrainingPhase>, bool, bool) {
    let group = op.group_kind.as_deref().and_then(group_from);
    let coll = |c: CommKind, default: CommGroup| OpKind::Collective {
        collective: c,
        group: group.unwrap_or(default),
    };
    // (kind, phase, per micro-batch, known name)
    match op.name.as_str() {
        "recv_forward" => (OpKind::Recv, Some(TrainingPhase::Forward), true, true),
        "send_forward" => (OpKind::Send, Some(TrainingPhase::Forward), true, true),
        "recv_backward" => (OpKind::Recv, Some(TrainingPhase::Backward), true, true),
        "send_backward" => (OpKind::Send, Some(TrainingPhase::Backward), true, true),
        "get_batch" | "forward_step" | "loss_func" => {
            (OpKind::Compute, Some(TrainingPhase::Forward), true, true)
        }
        "backward_step" => (OpKind::Compute, Some(TrainingPhase::Backward), true, true),
        "tp_load_batch_broadcast" => (
            coll(CommKind::Broadcast, CommGroup::Tp),
            Some(TrainingPhase::Forward),
            true,
            true,
        ),
        "tp_allreduce" => (coll(CommKind::AllReduce, CommGroup::Tp), None, true, true),
        "dp_allreduce" => (
            coll(CommKind::AllReduce, CommGroup::Dp),
            Some(TrainingPhase::GradSync),
            false,
            true,
        ),
        "ep_allreduce" => (
            coll(CommKind::AllReduce, CommGroup::Embedding),
            Some(TrainingPhase::GradSync),
            false,
            true,
        ),
        "pep_allreduce" => (
            coll(CommKind::AllReduce, CommGroup::PositionEmbedding),
            Some(TrainingPhase::GradSync),
            false,
            true,
        ),
        "optimizer_step" => (OpKind::Compute, Some(TrainingPhase::Optimizer), false, true),
        other => {
            let kind = if other.contains("wait") {
                OpKind::Wait
            } else if let Some(c) = comm_from(other.rsplit('_').next().unwrap_or(other)) {
                coll(c, CommGroup::Unscoped)
            } else {
                OpKind::Compute
            };
            (kind, None, false, false)
        }
    }
}

/// Start from an end timestamp and a duration; `None` for placeholders
/// (timestamp 0) or inconsistent values.
fn start_of(timestamp_ns: Option<u64>, duration_ns: Option<u64>) -> Option<u64> {
    let t = timestamp_ns?;
    if t == 0 {
        return None;
    }
    t.checked_sub(duration_ns.unwrap_or(0))
}

fn is_placeholder(ts: Option<u64>, d: Option<u64>) -> bool {
    ts == Some(0) && matches!(d, Some(0) | None)
}

fn to_measured(op: &EchoOp) -> MeasuredOp {
    let (kind, phase, per_mb, _) = classify(op);
    let placeholder = is_placeholder(op.timestamp_ns, op.duration_ns);
    let mut m = MeasuredOp::new(op.name.clone(), kind);
    m.phase = phase;
    m.start_ns = if placeholder {
        None
    } else {
        start_of(op.timestamp_ns, op.duration_ns)
    };
    m.duration_ns = if placeholder { None } else { op.duration_ns };
    m.micro_batch = if per_mb { op.batch_id } else { None };
    m.message_bytes = match (&op.shape, &op.dtype) {
        (Some(s), Some(d)) => tensor_bytes(s, d),
        _ => None,
    };
    m.shape.clone_from(&op.shape);
    m.dtype.clone_from(&op.dtype);
    m.state.clone_from(&op.mg_state);
    m.detail.clone_from(&op.description);
    m.source_line = Some(op.line);
    m.sub_ops = op
        .sub_ops
        .iter()
        .map(|s| {
            let group = s.group.as_deref().and_then(group_from);
            let kind = match s.comm_func.as_deref().and_then(comm_from) {
                Some(CommKind::Send) => OpKind::Send,
                Some(CommKind::Recv) => OpKind::Recv,
                Some(c) => OpKind::Collective {
                    collective: c,
                    group: group.unwrap_or(CommGroup::Unscoped),
                },
                None => OpKind::Compute,
            };
            let name = s
                .func_name
                .clone()
                .or_else(|| s.trace_src_func.clone())
                .unwrap_or_else(|| "sub_op".to_string());
            let mut so = MeasuredOp::new(name, kind);
            let ph = is_placeholder(s.timestamp_ns, s.duration_ns);
            so.phase = phase;
            so.start_ns = if ph {
                None
            } else {
                start_of(s.timestamp_ns, s.duration_ns)
            };
            so.duration_ns = if ph { None } else { s.duration_ns };
            so.micro_batch = m.micro_batch;
            so.message_bytes = match (&s.shape, &s.dtype) {
                (Some(sh), Some(d)) => tensor_bytes(sh, d),
                _ => None,
            };
            so.shape.clone_from(&s.shape);
            so.dtype.clone_from(&s.dtype);
            so.detail.clone_from(&s.trace_src_func);
            so.source_line = Some(op.line);
            so
        })
        .collect();
    m
}

/// Parse several rank files of one job and assemble them into one measured
/// run. Files that cannot be read at all contribute an error diagnostic; the
/// others are kept.
pub fn parse_run(files: &[(&str, &str)]) -> MeasuredRun {
    let mut traces = Vec::new();
    let mut failures = Vec::new();
    for (name, text) in files {
        match parse(name, text) {
            Ok(t) => traces.push(t),
            Err(d) => failures.push(d),
        }
    }
    let mut run = to_run(&traces);
    for (name, _) in files {
        if !run.files.iter().any(|f| f == name) {
            run.files.push((*name).to_string());
        }
    }
    run.diagnostics.extend(failures);
    run
}

fn agree(
    diags: &mut DiagSink,
    what: &str,
    traces: &[EchoTrace],
    get: impl Fn(&EchoFileInfo) -> Option<u32>,
) -> Option<u32> {
    let mut value: Option<(u32, &str)> = None;
    for t in traces {
        if let Some(v) = get(&t.file_info) {
            match value {
                None => value = Some((v, &t.file)),
                Some((w, f)) if w != v => diags.push(Diagnostic::warning(format!(
                    "file names disagree on {what}: `{f}` says {w}, `{}` says {v}; using {w}",
                    t.file
                ))),
                Some(_) => {}
            }
        }
    }
    value.map(|(v, _)| v)
}

/// Assemble parsed rank files into one measured run: ranks from the lines'
/// `rank:R:` prefix (checked against the file name), stage from `stage_id`
/// (checked against the TP-fastest, DP, PP layout), parallel sizes from the
/// file names (`wd`, `tp`, `pp`, `bs`), missing and duplicate ranks
/// reported. A rank's iterations run from its first op's start to each
/// `optimizer_step` end; the job's iteration spans all ranks (same host clock
/// assumed; when the spans look unsynchronised the slowest rank is used).
pub fn to_run(traces: &[EchoTrace]) -> MeasuredRun {
    let mut file_diags: Vec<Diagnostic> = Vec::new();
    for t in traces {
        file_diags.extend(t.diagnostics.iter().cloned());
    }
    // Run-level diagnostics (one per rank at worst) go through the same
    // per-file cap; they are attached to the run's first file.
    let mut diags = DiagSink::default();
    let tp = agree(&mut diags, "TP", traces, |i| i.tp);
    let pp_name = agree(&mut diags, "PP", traces, |i| i.pp);
    let world = agree(&mut diags, "the world size", traces, |i| i.world);
    let mbs = agree(&mut diags, "the micro-batch size", traces, |i| {
        i.micro_batch_size
    });
    let max_stage = traces
        .iter()
        .flat_map(|t| t.ops.iter().filter_map(|o| o.stage_id))
        .max();
    let pp = match (pp_name, max_stage) {
        (Some(p), Some(s)) if s >= p => {
            diags.push(Diagnostic::warning(format!(
                "file name says pp{p} but ops name stage {s}; using PP = {}",
                s.saturating_add(1)
            )));
            s.saturating_add(1)
        }
        (Some(p), _) => p,
        (None, Some(s)) => {
            diags.push(Diagnostic::warning(format!(
                "PP not in the file name; assuming PP = {} from the highest stage_id",
                s.saturating_add(1)
            )));
            s.saturating_add(1)
        }
        (None, None) => 1,
    };
    if tp.is_none() {
        diags.push(Diagnostic::warning(
            "TP not in the file name (`tp<N>`); assuming TP = 1",
        ));
    }
    // Without `wd<N>` in the name: the smallest multiple of TP x PP that
    // holds every rank seen.
    let world = world.or_else(|| {
        let tp_pp = u64::from(tp.unwrap_or(1).max(1)) * u64::from(pp.max(1));
        let needed = traces
            .iter()
            .flat_map(|t| t.ops.iter().map(|o| u64::from(o.rank) + 1))
            .max()
            .unwrap_or(1);
        let w = needed.div_ceil(tp_pp).max(1).saturating_mul(tp_pp);
        let w = u32::try_from(w).unwrap_or(u32::MAX);
        diags.push(Diagnostic::warning(format!(
            "world size not in the file name (`wd<N>`); assuming {w}: the smallest multiple of TP x PP = {tp_pp} that holds rank {}",
            needed - 1
        )));
        Some(w)
    });
    let (mut parallel, notes) = ParallelConfig::resolve(world, tp.unwrap_or(1), pp, 1, 1);
    diags.extend(notes.into_iter().map(Diagnostic::warning));
    parallel.micro_batch_size = mbs;

    // Group ops by rank (content first, file name checked).
    let mut by_rank: BTreeMap<u32, (String, Vec<&EchoOp>)> = BTreeMap::new();
    for t in traces {
        let mut in_file: BTreeMap<u32, Vec<&EchoOp>> = BTreeMap::new();
        for op in &t.ops {
            in_file.entry(op.rank).or_default().push(op);
        }
        if let Some(r) = t.file_info.rank {
            if !in_file.contains_key(&r) {
                let content: Vec<u32> = in_file.keys().copied().collect();
                diags.push(Diagnostic::warning(format!(
                    "`{}`: the file name says rank {r} but its lines are rank {}; using the lines",
                    t.file,
                    super::lex::number_ranges(&content)
                )));
            }
        }
        for (rank, ops) in in_file {
            match by_rank.get(&rank) {
                Some((first, _)) => diags.push(Diagnostic::warning(format!(
                    "rank {rank} appears twice: in `{first}` and in `{}`; the second copy is ignored",
                    t.file
                ))),
                None => {
                    by_rank.insert(rank, (t.file.clone(), ops));
                }
            }
        }
    }

    let mut ranks = Vec::new();
    let mut placeholders = 0u64;
    for (rank, (file, ops)) in &by_rank {
        let measured: Vec<MeasuredOp> = ops.iter().map(|o| to_measured(o)).collect();
        placeholders += ops
            .iter()
            .filter(|o| is_placeholder(o.timestamp_ns, o.duration_ns))
            .count() as u64;
        let stage = ops.iter().find_map(|o| o.stage_id);
        if ops
            .iter()
            .any(|o| o.stage_id.is_some() && o.stage_id != stage)
        {
            diags.push(Diagnostic::warning(format!(
                "rank {rank} names more than one stage_id (virtual pipeline?); using stage {}",
                stage.unwrap_or(0)
            )));
        }
        let layout_stage = parallel.stage_of_rank(*rank);
        if let Some(s) = stage {
            if s != layout_stage {
                diags.push(Diagnostic::warning(format!(
                    "rank {rank} reports stage {s} but the TP-DP-PP layout (TP {}, DP {}) puts it on stage {layout_stage}; using {s}",
                    parallel.tp, parallel.dp
                )));
            }
        }
        let iterations = rank_iterations(*rank, &measured, &mut diags);
        ranks.push(RankTrace {
            rank: *rank,
            stage: stage.or(Some(layout_stage)),
            file: file.clone(),
            ops: measured,
            iterations,
            copy: None,
        });
    }
    if placeholders > 0 {
        diags.push(Diagnostic::warning(format!(
            "{placeholders} op(s) have the profiling-mode placeholder `duration=0, timestamp=0`; their timing is unknown"
        )));
    }

    // Missing / out-of-range ranks.
    let present: Vec<u32> = by_rank.keys().copied().collect();
    let missing: Vec<u32> = (0..parallel.world)
        .filter(|r| !by_rank.contains_key(r))
        .take(1 << 16)
        .collect();
    if !missing.is_empty() {
        diags.push(Diagnostic::warning(format!(
            "the run has {} of {} ranks (present: {}); missing: {}",
            present.len(),
            parallel.world,
            super::lex::number_ranges(&present),
            super::lex::number_ranges(&missing)
        )));
    }
    let beyond: Vec<u32> = present
        .iter()
        .copied()
        .filter(|r| *r >= parallel.world)
        .collect();
    if !beyond.is_empty() {
        diags.push(Diagnostic::warning(format!(
            "rank(s) {} are outside the world size {}",
            super::lex::number_ranges(&beyond),
            parallel.world
        )));
    }

    // Micro-batches and activation size from the traced ops.
    let mb = ranks
        .iter()
        .map(|r| {
            r.ops
                .iter()
                .take_while(|o| o.name != "optimizer_step")
                .filter(|o| o.name == "forward_step")
                .count()
        })
        .max()
        .unwrap_or(0);
    parallel.micro_batches = u32::try_from(mb).unwrap_or(u32::MAX).max(1);
    parallel.activation_bytes = ranks
        .iter()
        .flat_map(|r| r.ops.iter())
        .filter(|o| matches!(o.name.as_str(), "recv_forward" | "send_forward"))
        .find_map(|o| o.message_bytes)
        .unwrap_or(0);

    let iterations = job_iterations(&ranks, &mut diags);
    let first_file = traces.first().map_or("", |t| t.file.as_str());
    file_diags.extend(diags.finish(first_file));
    MeasuredRun {
        format: Format::EchoTrace,
        files: traces.iter().map(|t| t.file.clone()).collect(),
        parallel,
        ranks,
        iterations,
        diagnostics: file_diags,
    }
}

fn rank_iterations(rank: u32, ops: &[MeasuredOp], diags: &mut DiagSink) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut start: Option<u64> = None;
    let mut last_end: Option<u64> = None;
    let mut open_ops = 0usize;
    for op in ops {
        if let Some(s) = op.start_ns {
            start = Some(start.map_or(s, |x: u64| x.min(s)));
        }
        if let Some(e) = op.end_ns() {
            last_end = Some(last_end.map_or(e, |x: u64| x.max(e)));
        }
        open_ops += 1;
        if op.name == "optimizer_step" {
            if let (Some(s), Some(e)) = (start, op.end_ns().or(last_end)) {
                spans.push(Span {
                    start_ns: s,
                    end_ns: e,
                });
            }
            start = None;
            last_end = None;
            open_ops = 0;
        }
    }
    if open_ops > 0 {
        if spans.is_empty() {
            if let (Some(s), Some(e)) = (start, last_end) {
                diags.push(Diagnostic::warning(format!(
                    "rank {rank} has no `optimizer_step`; its iteration is taken to end at its last op"
                )));
                spans.push(Span {
                    start_ns: s,
                    end_ns: e,
                });
            }
        } else {
            diags.push(Diagnostic::warning(format!(
                "rank {rank}: {open_ops} op(s) after the last `optimizer_step` (an incomplete iteration) are not counted in any iteration time"
            )));
        }
    }
    if spans.is_empty() {
        diags.push(Diagnostic::warning(format!(
            "rank {rank} has no timed ops; no iteration time can be measured"
        )));
    }
    spans
}

fn job_iterations(ranks: &[RankTrace], diags: &mut DiagSink) -> Vec<MeasuredIteration> {
    let n = ranks.iter().map(|r| r.iterations.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    let mut unsynced = false;
    for k in 0..n {
        let spans: Vec<Span> = ranks
            .iter()
            .filter_map(|r| r.iterations.get(k).copied())
            .collect();
        let (Some(start), Some(end)) = (
            spans.iter().map(|s| s.start_ns).min(),
            spans.iter().map(|s| s.end_ns).max(),
        ) else {
            continue;
        };
        let slowest = spans.iter().map(Span::duration_ns).max().unwrap_or(0);
        let joint = end.saturating_sub(start);
        let duration_ns = if joint > slowest.saturating_mul(2) && spans.len() > 1 {
            unsynced = true;
            slowest
        } else {
            joint
        };
        out.push(MeasuredIteration {
            index: u32::try_from(k + 1).unwrap_or(u32::MAX),
            duration_ns,
            iterations_covered: 1,
            source_line: None,
        });
    }
    if unsynced {
        diags.push(Diagnostic::warning(
            "the ranks' clocks do not look shared (iteration spans far apart: different hosts?); the job iteration time is the slowest rank's",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str =
        include_str!("../../../../tests/fixtures/seeds/echo_megatron_trace_rank7_tp2_pp4.txt");

    #[test]
    fn seed_parses_every_line() {
        let t = parse("echo_megatron_trace_rank7_tp2_pp4.txt", SEED).unwrap();
        assert_eq!(t.ops.len(), 9);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let dp = &t.ops[6];
        assert_eq!(dp.name, "dp_allreduce");
        assert_eq!(
            dp.description.as_deref(),
            Some("model_chunk.finish_grad_sync(), All-reduce / reduce-scatter across DP replicas")
        );
        assert_eq!(dp.shape.as_deref(), Some(&[1_702_466_560u64][..]));
        assert_eq!(t.ops[2].sub_ops.len(), 23);
        assert_eq!(
            t.ops[2].sub_ops[0].shape.as_deref(),
            Some(&[4096u64, 5120][..])
        );
        assert_eq!(t.file_info.rank, Some(7));
        assert_eq!(t.file_info.tp, Some(2));
    }

    #[test]
    fn seed_run_iteration_and_missing_ranks() {
        let run = parse_run(&[("echo_megatron_trace_rank7_tp2_pp4.txt", SEED)]);
        assert_eq!(run.parallel.world, 8);
        assert_eq!(run.ranks.len(), 1);
        assert_eq!(run.ranks[0].stage, Some(3));
        // first op start = 4509232423.74 - 629.77; last end = 4509235645.35.
        let want = 4_509_235_645_350_000u64 - (4_509_232_423_740_000 - 629_770_000);
        assert_eq!(run.iterations[0].duration_ns, want);
        assert!(run
            .diagnostics
            .iter()
            .any(|d| d.message.contains("missing: 0-6")));
        assert_eq!(run.parallel.activation_bytes, 2048 * 2 * 5120 * 4);
    }

    #[test]
    fn job_keys_group_rank_files() {
        assert_eq!(
            job_key("a/wd8_tp2_pp4_rank3_x.txt"),
            job_key("wd8_tp2_pp4_rank5_x.txt")
        );
        assert_eq!(job_key("foo.txt"), "(no rank in name)");
    }
}
