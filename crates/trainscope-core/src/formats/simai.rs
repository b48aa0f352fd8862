//! Parser for SimAI / AICB text workloads (docs/FORMATS.md §2.1).
//!
//! Line 1 is the policy token plus `key: value` pairs in any order, line 2 the
//! declared record count, then one 12-field record per layer. The parser keeps
//! every record in file order exactly as SimAI reads it ([`SimaiWorkload`]);
//! the SimAI-compatible cost model consumes that directly, and the normalised
//! workload model is derived from it elsewhere. Problems are data: a bad
//! record is skipped with an error diagnostic and the rest of the file is kept;
//! defaults and oddities are warnings.

use super::lex::{self, DiagSink};
use crate::diag::{Diagnostic, Location, Severity};
use crate::workload::{
    CommGroup as ModelGroup, CommKind, CommOp, DescribedJob, LayerOp, LayerRole, MicroBatchBlock,
    ParallelConfig, PhaseOp, StageScope, StageWorkload,
};
use serde::Serialize;

/// The parallelism policy token of line 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Policy {
    HybridTransformerFwdInBckwd,
    HybridTransformer,
    Data,
    Model,
    HybridDataModel,
    HybridModelData,
    HybridDlrm,
    Micro,
}

impl Policy {
    pub const ALL: [Policy; 8] = [
        Policy::HybridTransformerFwdInBckwd,
        Policy::HybridTransformer,
        Policy::Data,
        Policy::Model,
        Policy::HybridDataModel,
        Policy::HybridModelData,
        Policy::HybridDlrm,
        Policy::Micro,
    ];

    /// The token as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::HybridTransformerFwdInBckwd => "HYBRID_TRANSFORMER_FWD_IN_BCKWD",
            Policy::HybridTransformer => "HYBRID_TRANSFORMER",
            Policy::Data => "DATA",
            Policy::Model => "MODEL",
            Policy::HybridDataModel => "HYBRID_DATA_MODEL",
            Policy::HybridModelData => "HYBRID_MODEL_DATA",
            Policy::HybridDlrm => "HYBRID_DLRM",
            Policy::Micro => "MICRO",
        }
    }

    pub fn from_token(token: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.as_str() == token)
    }
}

/// The header (line 1) of a workload, with defaults applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimaiHeader {
    pub policy: Policy,
    /// `model_parallel_NPU_group`: tensor-parallel size.
    pub tp: u32,
    pub ep: u32,
    pub pp: u32,
    /// AICB writes layers per stage here; SimAI uses it as the virtual-stage
    /// count in its bubble formula.
    pub vpp: u32,
    /// Gradient-accumulation steps (micro-batches per iteration).
    pub ga: u32,
    /// `all_gpus`: world size, if given.
    pub world: Option<u32>,
    /// `pp_comm`: bytes of one stage-to-stage activation send.
    pub pp_comm_bytes: u64,
    /// Layer indices listed after `checkpoints: N`.
    pub checkpoints: Vec<u32>,
    /// Layer indices listed after `checkpoint_initiates: M`.
    pub checkpoint_initiates: Vec<u32>,
    /// Keys that were missing and took their default (`vpp`, `ga`, `ep`, ...).
    pub defaulted: Vec<&'static str>,
}

/// Which collective a comm-type string names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
}

/// The group a collective runs over, resolved from the type's suffix and the
/// column it appears in (plain types: TP in forward/input-gradient, DP in
/// weight-gradient).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum CommGroup {
    Tp,
    Dp,
    Ep,
    DpEp,
    /// An all-reduce variant with no group (`ALLREDUCE_ASYNC` and friends).
    Unscoped,
}

/// What a comm-type field says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum CommType {
    /// `NONE` / `None`.
    None,
    /// `BROADCAST`: SimAI drops it; kept here as a no-op (with a warning).
    Broadcast,
    /// `SENDRECV`: no collective in SimAI's model.
    SendRecv,
    /// An unrecognised string (kept as a no-op, with a warning).
    Unknown,
    Collective(Collective, CommGroup),
}

/// One comm column (type + size) of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct SimaiComm {
    pub comm_type: CommType,
    pub size_bytes: u64,
}

impl SimaiComm {
    pub const NONE: SimaiComm = SimaiComm {
        comm_type: CommType::None,
        size_bytes: 0,
    };

    /// The collective and group, if this column runs one.
    pub fn collective(&self) -> Option<(Collective, CommGroup)> {
        match self.comm_type {
            CommType::Collective(c, g) => Some((c, g)),
            _ => None,
        }
    }
}

/// One layer record (a line of the body), in file order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimaiRecord {
    pub name: String,
    /// 1-based line number in the file.
    pub line: u32,
    pub fwd_compute_ns: u64,
    pub fwd_comm: SimaiComm,
    pub ig_compute_ns: u64,
    pub ig_comm: SimaiComm,
    pub wg_compute_ns: u64,
    pub wg_comm: SimaiComm,
    /// Wait after each of this layer's collectives (AICB writes 100).
    pub update_ns: u64,
}

/// A parsed workload: the header, the records present and what was noticed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimaiWorkload {
    pub header: SimaiHeader,
    /// The count line 2 declares (files may lie; the records present win).
    pub declared_records: u64,
    pub records: Vec<SimaiRecord>,
    /// Records that could not be read (each has an error diagnostic).
    pub skipped_records: u32,
    /// Warnings and per-record errors, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

/// The 12 fields of a record, for hints.
pub const RECORD_FIELDS_HINT: &str =
    "a SimAI record is 12 fields: name, -1, fwd compute ns, fwd comm type, \
fwd comm bytes, input-grad compute ns, input-grad comm type, input-grad comm bytes, \
weight-grad compute ns, weight-grad comm type, weight-grad comm bytes, update ns";

const COMM_TYPE_NAMES: [&str; 16] = [
    "NONE",
    "ALLREDUCE",
    "ALLGATHER",
    "REDUCESCATTER",
    "ALLTOALL",
    "ALLREDUCE_EP",
    "ALLGATHER_EP",
    "REDUCESCATTER_EP",
    "ALLTOALL_EP",
    "ALLREDUCE_DP_EP",
    "ALLGATHER_DP_EP",
    "REDUCESCATTER_DP_EP",
    "ALLTOALL_DP_EP",
    "ALLREDUCE_ASYNC",
    "BROADCAST",
    "SENDRECV",
];

/// An unknown comm type within this many edits (case-insensitive) of a
/// known one is a typo and an error; farther ones are warnings.
pub const NEAR_MISS_EDITS: usize = 2;

const HEADER_KEYS: [&str; 9] = [
    "model_parallel_NPU_group",
    "ep",
    "pp",
    "vpp",
    "ga",
    "all_gpus",
    "pp_comm",
    "checkpoints",
    "checkpoint_initiates",
];

/// Which comm column a type appears in (decides the plain types' group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Forward,
    InputGrad,
    WeightGrad,
}

/// Resolve a comm-type string. `None` means "not a known spelling".
pub fn comm_type_from_str(text: &str, column: Column) -> Option<CommType> {
    let plain = if column == Column::WeightGrad {
        CommGroup::Dp
    } else {
        CommGroup::Tp
    };
    let split = |t: &str| -> Option<(Collective, &'static str)> {
        for (prefix, c) in [
            ("ALLREDUCE", Collective::AllReduce),
            ("ALLGATHER", Collective::AllGather),
            ("REDUCESCATTER", Collective::ReduceScatter),
            ("ALLTOALL", Collective::AllToAll),
        ] {
            if let Some(rest) = t.strip_prefix(prefix) {
                let suffix = match rest {
                    "" => "",
                    "_EP" => "_EP",
                    "_DP_EP" => "_DP_EP",
                    _ if c == Collective::AllReduce => "*",
                    _ => return None,
                };
                return Some((c, suffix));
            }
        }
        None
    };
    Some(match text {
        "NONE" | "None" | "none" => CommType::None,
        "BROADCAST" => CommType::Broadcast,
        "SENDRECV" => CommType::SendRecv,
        _ => {
            let (c, suffix) = split(text)?;
            let group = match suffix {
                "" => plain,
                "_EP" => CommGroup::Ep,
                "_DP_EP" => CommGroup::DpEp,
                _ => CommGroup::Unscoped,
            };
            CommType::Collective(c, group)
        }
    })
}

struct Ctx<'a> {
    file: &'a str,
    sink: DiagSink,
}

impl Ctx<'_> {
    fn loc(&self, line_no: u32, line: &str, col: usize) -> Location {
        lex::location(self.file, line_no, line, col)
    }

    fn push(&mut self, d: Diagnostic) {
        self.sink.push(d);
    }
}

/// The hint shown with header problems.
const HEADER_HINT: &str = "line 1 is a policy such as HYBRID_TRANSFORMER_FWD_IN_BCKWD followed by `key: value` pairs, e.g. `model_parallel_NPU_group: 8 ep: 1 pp: 4 vpp: 8 ga: 1 all_gpus: 512 pp_comm: 20971520 checkpoints: 0 checkpoint_initiates: 0`";

/// Parse a SimAI/AICB workload. `file` names the input in diagnostics.
/// Errors only when nothing usable is left (empty file, unreadable header,
/// no records and no count line); everything else is a diagnostic on the
/// result: a bad record is skipped with an error diagnostic, the others are
/// kept. At most [`lex::MAX_DIAGNOSTICS_PER_FILE`] diagnostics are listed; the
/// rest are counted in a final summary diagnostic.
pub fn parse(file: &str, text: &str) -> Result<SimaiWorkload, Diagnostic> {
    let mut cx = Ctx {
        file,
        sink: DiagSink::default(),
    };
    let mut lines = lex::numbered_lines(text).filter(|(_, l)| !l.trim().is_empty());
    let Some((h_no, h_line)) = lines.next() else {
        return Err(
            Diagnostic::error("failed to parse SimAI workload (the file is empty)")
                .with_hint(HEADER_HINT),
        );
    };
    let header = parse_header(&mut cx, h_no, h_line)?;
    let mut records = Vec::new();
    let mut skipped_records: u32 = 0;
    let declared_records: u64;
    match lines.next() {
        None => {
            return Err(Diagnostic::error(
                "failed to parse SimAI workload (the record count on line 2 is missing, and no records follow)",
            )
            .at(cx.loc(h_no, h_line, h_line.len()))
            .with_hint("line 2 holds the number of layer records that follow"));
        }
        Some((c_no, c_line)) => {
            let mut count_tokens = lex::tokens(c_line);
            let (col, t) = count_tokens.next().unwrap_or((0, c_line));
            match lex::parse_u64_exact(t) {
                Ok(n) => {
                    declared_records = n;
                    if let Some((col, t)) = count_tokens.next() {
                        cx.push(
                            Diagnostic::warning(format!(
                                "ignored extra text `{}` after the record count",
                                lex::quote(t, 40)
                            ))
                            .at(cx.loc(c_no, c_line, col)),
                        );
                    }
                }
                Err(_) if lex::tokens(c_line).count() >= 12 => {
                    // The count line is missing and this is already a record.
                    cx.push(
                        Diagnostic::warning(
                            "line 2 should hold the record count but looks like a record; counting the records present",
                        )
                        .at(cx.loc(c_no, c_line, col)),
                    );
                    declared_records = u64::MAX;
                    match parse_record(&mut cx, c_no, c_line) {
                        Ok(r) => records.push(r),
                        Err(d) => {
                            skipped_records += 1;
                            cx.push(d);
                        }
                    }
                }
                Err(why) => {
                    return Err(Diagnostic::error(format!(
                        "failed to parse SimAI workload (record count `{}` is {why})",
                        lex::quote(t, 40)
                    ))
                    .at(cx.loc(c_no, c_line, col))
                    .with_hint("line 2 holds the number of layer records that follow, e.g. `33`"));
                }
            }
            let record_lines = lines;
            for (no, line) in record_lines {
                match parse_record(&mut cx, no, line) {
                    Ok(r) => records.push(r),
                    Err(d) => {
                        skipped_records = skipped_records.saturating_add(1);
                        cx.push(d);
                    }
                }
            }
            let present = records.len() as u64 + u64::from(skipped_records);
            // u64::MAX marks "no count line": nothing to compare.
            if declared_records != u64::MAX && present != declared_records {
                cx.push(
                    Diagnostic::warning(format!(
                        "line 2 declares {declared_records} records but the file has {present}; using the {present} present"
                    ))
                    .at(cx.loc(c_no, c_line, col)),
                );
            }
        }
    }
    let declared_records = if declared_records == u64::MAX {
        records.len() as u64 + u64::from(skipped_records)
    } else {
        declared_records
    };
    // Listed last and never capped: the file is still used, so the count
    // of what was read and left out is a warning (each skipped item has
    // its located error above).
    let mut diagnostics = cx.sink.finish(file);
    if skipped_records > 0 {
        diagnostics.push(Diagnostic::warning(format!(
            "{} record(s) read, {skipped_records} skipped because they could not be parsed",
            records.len()
        )));
    }
    Ok(SimaiWorkload {
        header,
        declared_records,
        records,
        skipped_records,
        diagnostics,
    })
}

/// Where a header value came from: `(byte column, text)`.
type Tok<'a> = (usize, &'a str);

fn parse_header(cx: &mut Ctx<'_>, no: u32, line: &str) -> Result<SimaiHeader, Diagnostic> {
    let toks: Vec<Tok<'_>> = lex::tokens(line).collect();
    let Some(&(pcol, ptok)) = toks.first() else {
        return Err(
            Diagnostic::error("failed to parse SimAI workload (line 1 is blank)")
                .with_hint(HEADER_HINT),
        );
    };
    let policy = Policy::from_token(ptok).ok_or_else(|| {
        let names: Vec<&str> = Policy::ALL.iter().map(|p| p.as_str()).collect();
        let hint = match lex::suggest_short(ptok, &names) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!("line 1 starts with one of: {}", names.join(", ")),
        };
        Diagnostic::error(format!(
            "failed to parse SimAI workload (unknown parallelism policy `{}`)",
            lex::quote(ptok, 40)
        ))
        .at(cx.loc(no, line, pcol))
        .with_hint(hint)
    })?;
    let mut h = SimaiHeader {
        policy,
        tp: 1,
        ep: 1,
        pp: 1,
        vpp: 1,
        ga: 1,
        world: None,
        pp_comm_bytes: 0,
        checkpoints: Vec::new(),
        checkpoint_initiates: Vec::new(),
        defaulted: Vec::new(),
    };
    let mut seen: Vec<&'static str> = Vec::new();
    let mut unknown_keys = 0u32;
    let mut i = 1;
    while i < toks.len() {
        let (kcol, ktok) = toks[i];
        i += 1;
        // `key:` `value`, `key:value` or `key` `value` (pp_comm has no colon in some files).
        let (key, inline_value) = match ktok.split_once(':') {
            Some((k, v)) => (k, (!v.is_empty()).then_some((kcol + k.len() + 1, v))),
            None => (ktok, None),
        };
        let Some(key) = HEADER_KEYS.iter().find(|k| **k == key).copied() else {
            unknown_keys += 1;
            if unknown_keys <= 10 {
                let mut d = Diagnostic::warning(format!(
                    "ignored unknown header key `{}`",
                    lex::quote(key, 40)
                ))
                .at(cx.loc(no, line, kcol));
                if key.eq_ignore_ascii_case("expert_parallel_npu_group") {
                    d = d.with_hint("the expert-parallel size is read from `ep:`");
                } else if let Some(s) = lex::suggest_within(key, &HEADER_KEYS, 2) {
                    d = d.with_hint(format!("did you mean `{s}`?"));
                }
                cx.push(d);
            }
            // Skip its value if one follows.
            if inline_value.is_none() {
                if let Some((_, v)) = toks.get(i) {
                    if !v.contains(':') && lex::parse_u64_exact(v).is_ok() {
                        i += 1;
                    }
                }
            }
            continue;
        };
        let value = match inline_value {
            Some(v) => Some(v),
            None => {
                let v = toks.get(i).copied();
                // A following `key:` is not this key's value.
                match v {
                    Some((_, t)) if t.ends_with(':') || is_header_key_token(t) => None,
                    Some(v) => {
                        i += 1;
                        Some(v)
                    }
                    None => None,
                }
            }
        };
        if seen.contains(&key) {
            cx.push(
                Diagnostic::warning(format!(
                    "header key `{key}` appears twice; the last value wins"
                ))
                .at(cx.loc(no, line, kcol)),
            );
        }
        seen.push(key);
        let n = read_header_num(cx, no, line, key, kcol, value)?;
        let as_u32 = |cx: &mut Ctx<'_>, n: u64| -> Result<u32, Diagnostic> {
            u32::try_from(n).map_err(|_| {
                Diagnostic::error(format!(
                    "failed to parse SimAI workload (`{key}` = {n} is too large)"
                ))
                .at(cx.loc(no, line, kcol))
                .with_hint(format!("`{key}` is a group size or count below 2^32"))
            })
        };
        let group = |cx: &mut Ctx<'_>, n: u64| -> Result<u32, Diagnostic> {
            let v = as_u32(cx, n)?;
            if v == 0 {
                cx.push(
                    Diagnostic::warning(format!(
                        "`{key}` is 0; a group size or count must be at least 1, using 1"
                    ))
                    .at(cx.loc(no, line, kcol)),
                );
                return Ok(1);
            }
            Ok(v)
        };
        match key {
            "model_parallel_NPU_group" => h.tp = group(cx, n)?,
            "ep" => h.ep = group(cx, n)?,
            "pp" => h.pp = group(cx, n)?,
            "vpp" => h.vpp = group(cx, n)?,
            "ga" => h.ga = group(cx, n)?,
            "all_gpus" => h.world = Some(group(cx, n)?),
            "pp_comm" => h.pp_comm_bytes = n,
            _ => {
                // `checkpoints: N l1..lN` / `checkpoint_initiates: M m1..mM`:
                // read up to N indices, stopping early at the next key.
                let mut list = Vec::new();
                while (list.len() as u64) < n {
                    let Some(&(col, t)) = toks.get(i) else { break };
                    if t.contains(':') || is_header_key_token(t) {
                        break;
                    }
                    i += 1;
                    match lex::parse_u64_exact(t)
                        .ok()
                        .and_then(|v| u32::try_from(v).ok())
                    {
                        Some(v) => list.push(v),
                        None => {
                            return Err(Diagnostic::error(format!(
                                "failed to parse SimAI workload (`{}` in the `{key}` list is not a layer index)",
                                lex::quote(t, 40)
                            ))
                            .at(cx.loc(no, line, col))
                            .with_hint(format!("write `{key}: N` followed by N layer indices")));
                        }
                    }
                }
                if n > list.len() as u64 {
                    cx.push(
                        Diagnostic::warning(format!(
                            "`{key}: {n}` lists only {} layer index(es); using those",
                            list.len()
                        ))
                        .at(cx.loc(no, line, kcol))
                        .with_hint(format!("write `{key}: N` followed by N layer indices")),
                    );
                }
                if key == "checkpoints" {
                    h.checkpoints = list;
                } else {
                    h.checkpoint_initiates = list;
                }
            }
        }
    }
    if unknown_keys > 10 {
        cx.push(
            Diagnostic::warning(format!(
                "{} more unknown header keys ignored",
                unknown_keys - 10
            ))
            .at(cx.loc(no, line, 0)),
        );
    }
    for key in ["vpp", "ga", "ep"] {
        if !seen.contains(&key) {
            h.defaulted.push(key);
            cx.push(
                Diagnostic::warning(format!(
                    "header has no `{key}:`; assuming {key} = 1 (SimAI leaves it unset and prints NaN)"
                ))
                .at(cx.loc(no, line, line.len())),
            );
        }
    }
    for key in ["model_parallel_NPU_group", "pp"] {
        if !seen.contains(&key) {
            h.defaulted.push(key);
            cx.push(
                Diagnostic::warning(format!("header has no `{key}:`; assuming 1")).at(cx.loc(
                    no,
                    line,
                    line.len(),
                )),
            );
        }
    }
    Ok(h)
}

fn is_header_key_token(t: &str) -> bool {
    HEADER_KEYS.contains(&t)
}

fn read_header_num(
    cx: &mut Ctx<'_>,
    no: u32,
    line: &str,
    key: &str,
    kcol: usize,
    value: Option<Tok<'_>>,
) -> Result<u64, Diagnostic> {
    match value {
        None => Err(Diagnostic::error(format!(
            "failed to parse SimAI workload (header key `{key}` has no value)"
        ))
        .at(cx.loc(no, line, kcol))
        .with_hint(format!("write `{key}: <integer>`"))),
        Some((col, t)) => lex::parse_u64_exact(t).map_err(|why| {
            Diagnostic::error(format!(
                "failed to parse SimAI workload (value `{}` of `{key}` is {why})",
                lex::quote(t, 40)
            ))
            .at(cx.loc(no, line, col))
            .with_hint(format!("write `{key}: <integer>`"))
        }),
    }
}

/// Split a record line into at most 12 fields (byte ranges) plus the total
/// field count and the start of the first extra field. Byte-level, no
/// allocation: this is the hot loop of the parser.
fn split_fields(line: &str) -> ([(u32, u32); 12], usize, Option<usize>) {
    let b = line.as_bytes();
    let mut f = [(0u32, 0u32); 12];
    let mut n = 0usize;
    let mut extra = None;
    let mut i = 0usize;
    let len = b.len();
    while i < len {
        while i < len && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= len {
            break;
        }
        let start = i;
        while i < len && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        if n < 12 {
            // Lines longer than 4 GiB cannot reach here (inputs are capped
            // far below), but stay safe: clamp.
            f[n] = (
                u32::try_from(start).unwrap_or(u32::MAX),
                u32::try_from(i).unwrap_or(u32::MAX),
            );
        } else if extra.is_none() {
            extra = Some(start);
        }
        n += 1;
    }
    (f, n, extra)
}

fn parse_record(cx: &mut Ctx<'_>, no: u32, line: &str) -> Result<SimaiRecord, Diagnostic> {
    let (ranges, n, extra) = split_fields(line);
    if n != 12 {
        let col = extra.unwrap_or(line.len());
        let what = if n < 12 {
            "a field is missing or the line is cut short"
        } else {
            "extra text follows the 12th field (names must not contain spaces)"
        };
        return Err(Diagnostic::error(format!(
            "failed to parse SimAI workload (expected 12 fields, found {n}: {what}); record skipped"
        ))
        .at(cx.loc(no, line, col))
        .with_hint(RECORD_FIELDS_HINT));
    }
    let field = |idx: usize| -> (usize, &str) {
        let (s, e) = ranges[idx];
        let (s, e) = (s as usize, e as usize);
        (s, line.get(s..e).unwrap_or(""))
    };
    let num = |cx: &mut Ctx<'_>, idx: usize, what: &str| -> Result<u64, Diagnostic> {
        let (col, t) = field(idx);
        lex::parse_u64_exact(t).map_err(|why| {
            Diagnostic::error(format!(
                "failed to parse SimAI workload ({what} `{}` in field {} is {why}); record skipped",
                lex::quote(t, 40),
                idx + 1
            ))
            .at(cx.loc(no, line, col))
            .with_hint(if why.contains("fractional") {
                format!(
                    "{what}s are whole numbers (ns or bytes), never rounded by trainscope; write `{}` as an integer",
                    lex::quote(t, 40)
                )
            } else {
                RECORD_FIELDS_HINT.to_string()
            })
        })
    };
    let (pcol, ptok) = field(1);
    if ptok != "-1" {
        cx.push(
            Diagnostic::warning(format!(
                "field 2 is `{}`; SimAI writes -1 there and ignores it",
                lex::quote(ptok, 40)
            ))
            .at(cx.loc(no, line, pcol)),
        );
    }
    let comm = |cx: &mut Ctx<'_>, idx: usize, column: Column| -> Result<SimaiComm, Diagnostic> {
        let (col, t) = field(idx);
        let size_bytes = num(cx, idx + 1, "comm size")?;
        let comm_type = match comm_type_from_str(t, column) {
            Some(CommType::Broadcast) => {
                let file = cx.file;
                cx.sink.push_with(Severity::Warning, || {
                    Diagnostic::warning(
                        "BROADCAST is not modelled (SimAI drops it); kept as no collective",
                    )
                    .at(lex::location(file, no, line, col))
                });
                CommType::Broadcast
            }
            Some(ct) => ct,
            // A near miss of a known name (at most NEAR_MISS_EDITS edits,
            // case-insensitive) is a typo: dropping the collective would
            // silently change every number, so the record is refused.
            None => match lex::suggest_within(t, &COMM_TYPE_NAMES, NEAR_MISS_EDITS) {
                Some(s) => {
                    return Err(Diagnostic::error(format!(
                        "failed to parse SimAI workload (unknown comm type `{}` in field {}; did you mean `{s}`?); record skipped",
                        lex::quote(t, 40),
                        idx + 1
                    ))
                    .at(cx.loc(no, line, col))
                    .with_hint(format!("write `{s}` (or NONE for no collective)")));
                }
                // Farther from every known name: another tool's type, kept
                // as no collective with a warning.
                None => {
                    let file = cx.file;
                    cx.sink.push_with(Severity::Warning, || {
                        let d = Diagnostic::warning(format!(
                            "unknown comm type `{}`; treated as no collective",
                            lex::quote(t, 40)
                        ))
                        .at(lex::location(file, no, line, col));
                        match lex::suggest_short(t, &COMM_TYPE_NAMES) {
                            Some(s) => d.with_hint(format!("did you mean `{s}`?")),
                            None => d.with_hint(format!(
                                "known comm types: {}",
                                COMM_TYPE_NAMES.join(", ")
                            )),
                        }
                    });
                    CommType::Unknown
                }
            },
        };
        Ok(SimaiComm {
            comm_type,
            size_bytes,
        })
    };
    Ok(SimaiRecord {
        name: field(0).1.to_string(),
        line: no,
        fwd_compute_ns: num(cx, 2, "forward compute time")?,
        fwd_comm: comm(cx, 3, Column::Forward)?,
        ig_compute_ns: num(cx, 5, "input-gradient compute time")?,
        ig_comm: comm(cx, 6, Column::InputGrad)?,
        wg_compute_ns: num(cx, 8, "weight-gradient compute time")?,
        wg_comm: comm(cx, 9, Column::WeightGrad)?,
        update_ns: num(cx, 11, "update time")?,
    })
}

// ---------------------------------------------------------------------------
// Conversion to the normalised workload model.

fn model_comm(c: &SimaiComm, column: Column) -> Option<CommOp> {
    let (kind, group) = c.collective()?;
    if c.size_bytes <= 1 {
        // Size 0 or 1 with a type set means "no data" (docs/FORMATS.md §2.1).
        return None;
    }
    Some(CommOp {
        kind: match kind {
            Collective::AllReduce => CommKind::AllReduce,
            Collective::AllGather => CommKind::AllGather,
            Collective::ReduceScatter => CommKind::ReduceScatter,
            Collective::AllToAll => CommKind::AllToAll,
        },
        group: match group {
            CommGroup::Tp => ModelGroup::Tp,
            CommGroup::Dp => ModelGroup::Dp,
            CommGroup::Ep => ModelGroup::Ep,
            CommGroup::DpEp => ModelGroup::DpEp,
            CommGroup::Unscoped => ModelGroup::Unscoped,
        },
        size_bytes: c.size_bytes,
        asynchronous: column == Column::WeightGrad,
        prefetch: 0,
    })
}

/// AICB writes `1` for "not measured": the model stores 0 ns.
fn model_compute(ns: u64) -> u64 {
    if ns == 1 {
        0
    } else {
        ns
    }
}

fn record_role(name: &str, before_first_embedding: bool) -> LayerRole {
    if name == "embedding_layer" {
        LayerRole::Embedding
    } else if name.starts_with("cross_entropy") {
        LayerRole::Loss
    } else if name.starts_with("optimizer") {
        LayerRole::Optimizer
    } else if before_first_embedding {
        LayerRole::GradSync
    } else {
        LayerRole::Layer
    }
}

/// Convert a parsed workload to the normalised model: one
/// [`StageScope::AllStages`] stage (SimAI describes one SPMD stage). Rows
/// before the first `embedding_layer` become the once-per-iteration gradient
/// sync (`before`), the trailing `cross_entropy*`/`optimizer*` rows `after`,
/// and the rest is split into micro-batch blocks at each `embedding_layer`
/// (AICB writes the block `ga` times). Identical consecutive copies are
/// collapsed into one block with a repeat count, and a warning says so; copies
/// that differ are kept as they are, with a warning naming the first
/// difference. AICB's placeholder compute value `1` ("not measured") becomes
/// 0 ns, and collectives of 0 or 1 bytes ("no data") become no collective.
/// Checkpoint lists mark layers by index into the record list.
pub fn to_model(file: &str, w: &SimaiWorkload) -> DescribedJob {
    let h = &w.header;
    let mut diags = DiagSink::resume(w.diagnostics.clone());
    let (mut parallel, notes) = ParallelConfig::resolve(h.world, h.tp, h.pp, h.ep, h.ga);
    diags.extend(notes.into_iter().map(Diagnostic::warning));
    parallel.virtual_stages = h.vpp;
    parallel.activation_bytes = h.pp_comm_bytes;

    let first_emb = w.records.iter().position(|r| r.name == "embedding_layer");
    let mut ops: Vec<LayerOp> = w
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| LayerOp {
            name: r.name.clone(),
            role: record_role(&r.name, first_emb.is_some_and(|f| i < f)),
            source_line: Some(r.line),
            block_index: None,
            checkpoint: false,
            initiates_recompute: false,
            forward: PhaseOp {
                compute_ns: model_compute(r.fwd_compute_ns),
                comm: model_comm(&r.fwd_comm, Column::Forward),
                ..Default::default()
            },
            input_grad: PhaseOp {
                compute_ns: model_compute(r.ig_compute_ns),
                comm: model_comm(&r.ig_comm, Column::InputGrad),
                ..Default::default()
            },
            weight_grad: PhaseOp {
                compute_ns: model_compute(r.wg_compute_ns),
                comm: model_comm(&r.wg_comm, Column::WeightGrad),
                ..Default::default()
            },
            update_ns: r.update_ns,
            backward_estimated: false,
        })
        .collect();
    for (list, checkpoint, key) in [
        (&h.checkpoints, true, "checkpoints"),
        (&h.checkpoint_initiates, false, "checkpoint_initiates"),
    ] {
        for &idx in list.iter() {
            match ops.get_mut(idx as usize) {
                Some(op) if checkpoint => op.checkpoint = true,
                Some(op) => op.initiates_recompute = true,
                None => diags.push(Diagnostic::warning(format!(
                    "`{key}` names layer {idx} but the file has {} records; ignored",
                    w.records.len()
                ))),
            }
        }
    }

    let before_end = first_emb.unwrap_or(0);
    let after_len = ops[before_end..]
        .iter()
        .rev()
        .take_while(|o| matches!(o.role, LayerRole::Loss | LayerRole::Optimizer))
        .count();
    let after_start = ops.len() - after_len;
    let after = ops.split_off(after_start);
    let middle = ops.split_off(before_end);
    let before = ops;

    // Split the middle into micro-batch copies.
    let mut copies: Vec<Vec<LayerOp>> = Vec::new();
    if first_emb.is_some() {
        for op in middle {
            if op.role == LayerRole::Embedding || copies.is_empty() {
                copies.push(Vec::new());
            }
            if let Some(last) = copies.last_mut() {
                last.push(op);
            }
        }
    } else if h.ga > 1 && !middle.is_empty() && middle.len().is_multiple_of(h.ga as usize) {
        let len = middle.len() / h.ga as usize;
        let same_names = middle
            .chunks(len)
            .all(|c| c.iter().zip(&middle[..len]).all(|(a, b)| a.name == b.name));
        if same_names {
            copies = middle.chunks(len).map(<[LayerOp]>::to_vec).collect();
        } else {
            copies.push(middle);
        }
    } else if !middle.is_empty() {
        copies.push(middle);
    }
    if first_emb.is_none() && h.ga > 1 && copies.len() == 1 {
        diags.push(Diagnostic::warning(
            "no `embedding_layer` row marks the micro-batch block; all rows before the loss/optimizer rows are treated as one micro-batch",
        ));
    }

    let n_copies = copies.len();
    let mut blocks: Vec<MicroBatchBlock> = Vec::new();
    let mut first_difference: Option<String> = None;
    for copy in copies {
        match blocks.last_mut() {
            Some(b) if same_block(&b.ops, &copy) => b.repeat = b.repeat.saturating_add(1),
            Some(b) => {
                if first_difference.is_none() {
                    first_difference = Some(describe_difference(&b.ops, &copy));
                }
                blocks.push(MicroBatchBlock {
                    repeat: 1,
                    ops: copy,
                });
            }
            None => blocks.push(MicroBatchBlock {
                repeat: 1,
                ops: copy,
            }),
        }
    }
    let ga = h.ga;
    if n_copies == 0 {
        diags.push(Diagnostic::warning(
            "the workload has no per-micro-batch layers (only gradient-sync, loss or optimizer rows)",
        ));
    } else if n_copies == 1 && ga > 1 {
        if let Some(b) = blocks.first_mut() {
            b.repeat = ga;
        }
        diags.push(Diagnostic::warning(format!(
            "the micro-batch block appears once but ga = {ga}; assuming it runs {ga} times"
        )));
    } else if n_copies > 1 {
        let layers = blocks.first().map_or(0, |b| b.ops.len());
        if blocks.len() == 1 {
            diags.push(Diagnostic::warning(format!(
                "AICB unrolls gradient accumulation: recovered one micro-batch block of {layers} layers written {n_copies} times; stored once with repeat {n_copies}"
            )));
        } else {
            diags.push(Diagnostic::warning(format!(
                "the {n_copies} copies of the micro-batch block are not identical ({}); kept as they are: {} distinct blocks with repeats {}",
                first_difference.unwrap_or_default(),
                blocks.len(),
                blocks
                    .iter()
                    .map(|b| b.repeat.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if n_copies != ga as usize {
            diags.push(Diagnostic::warning(format!(
                "header says ga = {ga} but the file has {n_copies} copies of the micro-batch block; using {n_copies} micro-batches"
            )));
        }
        parallel.micro_batches = u32::try_from(n_copies).unwrap_or(u32::MAX);
    }

    DescribedJob {
        file: file.to_string(),
        format: crate::workload::Format::SimaiWorkload,
        parallel,
        stages: vec![StageWorkload {
            scope: StageScope::AllStages,
            before,
            blocks,
            after,
            chunk_layers: Vec::new(),
        }],
        diagnostics: diags.finish(file),
    }
}

fn same_block(a: &[LayerOp], b: &[LayerOp]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_work(y))
}

fn describe_difference(a: &[LayerOp], b: &[LayerOp]) -> String {
    if a.len() != b.len() {
        return format!(
            "a block of {} layers is followed by one of {} layers{}",
            a.len(),
            b.len(),
            b.first()
                .and_then(|o| o.source_line)
                .map_or(String::new(), |l| format!(" at line {l}"))
        );
    }
    for (x, y) in a.iter().zip(b) {
        if x.same_work(y) {
            continue;
        }
        let line = y
            .source_line
            .map_or(String::new(), |l| format!(", line {l}"));
        let field = if x.name != y.name {
            format!("name `{}` vs `{}`", x.name, y.name)
        } else if x.forward.compute_ns != y.forward.compute_ns {
            format!(
                "forward compute {} ns vs {} ns",
                x.forward.compute_ns, y.forward.compute_ns
            )
        } else if x.input_grad.compute_ns != y.input_grad.compute_ns {
            format!(
                "input-gradient compute {} ns vs {} ns",
                x.input_grad.compute_ns, y.input_grad.compute_ns
            )
        } else if x.weight_grad.compute_ns != y.weight_grad.compute_ns {
            format!(
                "weight-gradient compute {} ns vs {} ns",
                x.weight_grad.compute_ns, y.weight_grad.compute_ns
            )
        } else if x.update_ns != y.update_ns {
            format!("update time {} ns vs {} ns", x.update_ns, y.update_ns)
        } else {
            "a collective".to_string()
        };
        let first_line = x
            .source_line
            .map_or(String::new(), |l| format!(" (line {l})"));
        return format!(
            "first difference at `{}`{first_line} vs the next copy{line}: {field}",
            y.name
        );
    }
    "no difference found".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED000: &str =
        include_str!("../../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");
    const SEED001: &str =
        include_str!("../../../../tests/fixtures/seeds/simai_405b_tp8_pp16_ga16_sp.txt");

    #[test]
    fn seed000_header_and_records() {
        let w = parse("s0.txt", SEED000).unwrap();
        let h = &w.header;
        assert_eq!(
            (h.tp, h.ep, h.pp, h.vpp, h.ga, h.world),
            (8, 1, 4, 8, 1, Some(512))
        );
        assert_eq!(h.pp_comm_bytes, 20_971_520);
        assert_eq!(h.policy, Policy::HybridTransformerFwdInBckwd);
        assert_eq!(w.declared_records, 33);
        assert_eq!(w.records.len(), 33);
        assert!(w.diagnostics.is_empty(), "{:?}", w.diagnostics);
        let gp = &w.records[1];
        assert_eq!(gp.name, "grad_param");
        assert_eq!(gp.ig_compute_ns, 14_600_000);
        assert_eq!(
            gp.wg_comm,
            SimaiComm {
                comm_type: CommType::Collective(Collective::ReduceScatter, CommGroup::Dp),
                size_bytes: 6_236_471_296
            }
        );
    }

    #[test]
    fn seed001_defaults_vpp_with_warning() {
        let w = parse("s1.txt", SEED001).unwrap();
        assert_eq!((w.header.pp, w.header.ga, w.header.vpp), (16, 16, 1));
        assert_eq!(w.header.defaulted, vec!["vpp"]);
        assert_eq!(w.records.len(), 557);
        assert_eq!(w.diagnostics.len(), 1);
        assert!(w.diagnostics[0].message.contains("vpp"));
    }

    #[test]
    fn header_variants() {
        let t = "HYBRID_TRANSFORMER\tpp_comm 50331648.0 ep:2 pp: 2 vpp: 1 ga: 1 model_parallel_NPU_group: 4 all_gpus: 16 checkpoints: 2 3 5 checkpoint_initiates: 1 4 expert_parallel_npu_group: 2\n0\n";
        let w = parse("h.txt", t).unwrap();
        assert_eq!(w.header.pp_comm_bytes, 50_331_648);
        assert_eq!(w.header.checkpoints, vec![3, 5]);
        assert_eq!(w.header.checkpoint_initiates, vec![4]);
        assert_eq!(w.header.ep, 2);
        assert_eq!(w.diagnostics.len(), 1);
        assert!(w.diagnostics[0]
            .message
            .contains("expert_parallel_npu_group"));
    }

    #[test]
    fn bad_record_is_skipped_not_fatal() {
        let t = "DATA pp: 1 vpp: 1 ga: 1 ep: 1 model_parallel_NPU_group: 1\n2\n\
                 a -1 1 NONE 0 1 NONE 0 1 NONE 0 100\n\
                 b -1 1 NONE 0 1 NONE 0 1 NONE 100\n";
        let w = parse("r.txt", t).unwrap();
        assert_eq!(w.records.len(), 1);
        assert_eq!(w.skipped_records, 1);
        let d = &w.diagnostics[0];
        assert!(d.message.contains("expected 12 fields, found 11"));
        assert_eq!(d.location.as_ref().unwrap().line, 4);
    }

    #[test]
    fn typo_comm_type_is_an_error_with_a_suggestion_and_skips_the_record() {
        let t = "DATA pp: 1 vpp: 1 ga: 1 ep: 1 model_parallel_NPU_group: 1\n2\n\
                 a -1 1 ALLRDUCE 8 1 NONE 0 1 ALLTOALL_DP_EP 38654705664 100\n\
                 b -1 1 ALLREDUCE 8 1 NONE 0 1 ALLGATHER_DP_EP 38654705664 100\n";
        let w = parse("r.txt", t).unwrap();
        assert_eq!(w.skipped_records, 1);
        assert_eq!(w.records.len(), 1);
        assert_eq!(w.records[0].name, "b");
        let d = &w.diagnostics[0];
        assert!(d.is_error());
        assert_eq!(
            d.message,
            "failed to parse SimAI workload (unknown comm type `ALLRDUCE` in field 4; did you mean `ALLREDUCE`?); record skipped"
        );
        let at = d.location.as_ref().unwrap();
        assert_eq!((at.line, at.column), (3, 8));
        assert!(d.hint.as_deref().unwrap().starts_with("write `ALLREDUCE`"));
        // Every column: the weight-gradient one too, a suffix typo too.
        let t = "DATA pp: 1 vpp: 1 ga: 1 ep: 1 model_parallel_NPU_group: 1\n1\n\
                 a -1 1 NONE 0 1 NONE 0 1 ALLGATHER_DPEP 8 100\n";
        let w = parse("r.txt", t).unwrap();
        assert_eq!(w.skipped_records, 1);
        assert!(w.diagnostics[0]
            .message
            .contains("`ALLGATHER_DPEP` in field 10; did you mean `ALLGATHER_DP_EP`?"));
    }

    #[test]
    fn comm_type_more_than_two_edits_away_is_a_warning_with_the_suggestion() {
        let t = "DATA pp: 1 vpp: 1 ga: 1 ep: 1 model_parallel_NPU_group: 1\n1\n\
                 a -1 1 ALLGATHER_ASYNC 8 1 NONE 0 1 NONE 0 100\n";
        let w = parse("r.txt", t).unwrap();
        assert_eq!(w.skipped_records, 0);
        assert_eq!(w.records[0].fwd_comm.comm_type, CommType::Unknown);
        assert!(!w.diagnostics[0].is_error());
        assert_eq!(
            w.diagnostics[0].hint.as_deref(),
            Some("did you mean `ALLGATHER_EP`?")
        );
    }

    #[test]
    fn comm_type_far_from_every_known_one_stays_a_warning() {
        let t = "DATA pp: 1 vpp: 1 ga: 1 ep: 1 model_parallel_NPU_group: 1\n1\n\
                 a -1 1 BARRIER_SYNC 8 1 NONE 0 1 NONE 0 100\n";
        let w = parse("r.txt", t).unwrap();
        assert_eq!(w.skipped_records, 0);
        assert_eq!(w.records[0].fwd_comm.comm_type, CommType::Unknown);
        let d = &w.diagnostics[0];
        assert!(!d.is_error());
        assert_eq!(
            d.message,
            "unknown comm type `BARRIER_SYNC`; treated as no collective"
        );
        assert!(d
            .hint
            .as_deref()
            .unwrap()
            .starts_with("known comm types: NONE, ALLREDUCE"));
    }

    #[test]
    fn lenient_numbers() {
        assert_eq!(lex::parse_u64_exact("20971520.0"), Ok(20_971_520));
        assert!(lex::parse_u64_exact("-5").is_err());
        assert!(lex::parse_u64_exact("99999999999999999999999").is_err());
        assert!(lex::parse_u64_exact("1.5").is_err());
        assert!(lex::parse_u64_exact("abc").is_err());
        assert!(lex::parse_u64_exact("inf").is_err());
    }

    #[test]
    fn empty_and_garbage_inputs_are_errors() {
        assert!(parse("e", "").is_err());
        assert!(parse("e", "\u{feff}\r\n").is_err());
        assert!(parse("e", "hello world\n").is_err());
        assert!(parse("e", "DATA pp: 1\n").is_err());
    }
}
