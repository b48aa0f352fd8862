//! Parser for SimAI / AICB text workloads (FORMATS.md section 1).
//!
//! Line 1 is the policy token plus `key: value` pairs in any order, line 2 the
//! declared record count, then one 12-field record per layer. The parser keeps
//! every record in file order exactly as SimAI reads it ([`SimaiWorkload`]);
//! the SimAI-compatible cost model consumes that directly, and the normalised
//! workload model is derived from it elsewhere. Problems are data: a bad
//! record is skipped with an error diagnostic and the rest of the file is kept;
//! defaults and oddities are warnings.

use crate::diag::{suggest, Diagnostic, Location};
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

/// Split a line into whitespace-separated tokens with their byte offsets.
fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let base = line.as_ptr() as usize;
    line.split([' ', '\t'])
        .filter(|t| !t.is_empty())
        .map(move |t| (t.as_ptr() as usize - base, t))
}

/// Parse an unsigned integer that may be written as a float (`20971520.0`).
pub fn parse_u64_lenient(text: &str) -> Result<u64, &'static str> {
    if let Ok(v) = text.parse::<u64>() {
        return Ok(v);
    }
    if text.starts_with('-') && text[1..].bytes().all(|b| b.is_ascii_digit()) && text.len() > 1 {
        return Err("a negative number where a count, time or size is expected");
    }
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return Err("not a number");
    }
    match text.parse::<f64>() {
        Ok(f) if !f.is_finite() => Err("not a finite number"),
        Ok(f) if f < 0.0 => Err("a negative number where a count, time or size is expected"),
        Ok(f) if f.fract() != 0.0 => Err("a fractional number where an integer is expected"),
        Ok(f) if f >= 18_446_744_073_709_551_616.0 => Err("a number too large for 64 bits"),
        Ok(f) => Ok(f as u64),
        Err(_) if text.bytes().all(|b| b.is_ascii_digit()) => Err("a number too large for 64 bits"),
        Err(_) => Err("not a number"),
    }
}

struct Ctx<'a> {
    file: &'a str,
    diagnostics: Vec<Diagnostic>,
}

impl Ctx<'_> {
    fn loc(&self, line_no: u32, line: &str, col: usize) -> Location {
        Location::new(self.file, line_no, line, col)
    }
}

/// Lines of a text with 1-based numbers, CR stripped, BOM removed.
fn numbered_lines(text: &str) -> impl Iterator<Item = (u32, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .enumerate()
        .map(|(i, l)| ((i + 1) as u32, l.strip_suffix('\r').unwrap_or(l)))
}

/// Parse a SimAI/AICB workload. `file` names the input in diagnostics.
/// Errors only when nothing usable is left (empty file, unreadable header,
/// missing count line); everything else is a diagnostic on the result.
pub fn parse(file: &str, text: &str) -> Result<SimaiWorkload, Diagnostic> {
    let mut cx = Ctx {
        file,
        diagnostics: Vec::new(),
    };
    let mut lines = numbered_lines(text).filter(|(_, l)| !l.trim().is_empty());
    let Some((h_no, h_line)) = lines.next() else {
        return Err(Diagnostic::error("failed to parse SimAI workload (the file is empty)")
            .with_hint("line 1 should be a policy such as HYBRID_TRANSFORMER_FWD_IN_BCKWD followed by `key: value` pairs"));
    };
    let header = parse_header(&mut cx, h_no, h_line)?;
    let Some((c_no, c_line)) = lines.next() else {
        return Err(Diagnostic::error(
            "failed to parse SimAI workload (the record count on line 2 is missing)",
        )
        .at(cx.loc(h_no, h_line, h_line.len()))
        .with_hint("line 2 holds the number of layer records that follow"));
    };
    let mut count_tokens = tokens(c_line);
    let declared_records = match count_tokens.next() {
        Some((col, t)) => parse_u64_lenient(t).map_err(|why| {
            Diagnostic::error(format!(
                "failed to parse SimAI workload (record count `{t}` is {why})"
            ))
            .at(cx.loc(c_no, c_line, col))
            .with_hint("line 2 holds the number of layer records that follow, e.g. `33`")
        })?,
        None => unreachable!("blank lines are filtered"),
    };
    if let Some((col, t)) = count_tokens.next() {
        cx.diagnostics.push(
            Diagnostic::warning(format!("ignored extra text `{t}` after the record count"))
                .at(cx.loc(c_no, c_line, col)),
        );
    }
    let mut records = Vec::with_capacity(declared_records.min(1 << 16) as usize);
    let mut skipped_records = 0;
    for (no, line) in lines {
        match parse_record(&mut cx, no, line) {
            Ok(r) => records.push(r),
            Err(d) => {
                skipped_records += 1;
                cx.diagnostics.push(d);
            }
        }
    }
    let present = records.len() as u64 + u64::from(skipped_records);
    if present != declared_records {
        cx.diagnostics.push(
            Diagnostic::warning(format!(
                "line 2 declares {declared_records} records but the file has {present}; using the {present} present"
            ))
            .at(cx.loc(c_no, c_line, 0)),
        );
    }
    Ok(SimaiWorkload {
        header,
        declared_records,
        records,
        skipped_records,
        diagnostics: cx.diagnostics,
    })
}

fn parse_header(cx: &mut Ctx<'_>, no: u32, line: &str) -> Result<SimaiHeader, Diagnostic> {
    let toks: Vec<(usize, &str)> = tokens(line).collect();
    let (pcol, ptok) = toks[0];
    let policy = Policy::from_token(ptok).ok_or_else(|| {
        let names: Vec<&str> = Policy::ALL.iter().map(|p| p.as_str()).collect();
        let hint = match suggest(ptok, &names) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!("line 1 starts with one of: {}", names.join(", ")),
        };
        Diagnostic::error(format!(
            "failed to parse SimAI workload (unknown parallelism policy `{}`)",
            crate::diag::excerpt(ptok, 40)
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
    let mut i = 1;
    while i < toks.len() {
        let (kcol, ktok) = toks[i];
        i += 1;
        // `key:` `value`, `key:value` or `key` `value` (pp_comm has no colon in some files).
        let (key, inline_value) = match ktok.split_once(':') {
            Some((k, v)) => (k, (!v.is_empty()).then_some((kcol + k.len() + 1, v))),
            None => (ktok, None),
        };
        let known = HEADER_KEYS.iter().find(|k| **k == key).copied();
        let next_value = |i: &mut usize| -> Option<(usize, &str)> {
            if let Some(v) = inline_value {
                return Some(v);
            }
            let v = toks.get(*i).copied();
            if v.is_some() {
                *i += 1;
            }
            v
        };
        let Some(key) = known else {
            let mut d = Diagnostic::warning(format!("ignored unknown header key `{key}`"))
                .at(cx.loc(no, line, kcol));
            if let Some(s) = suggest(key, &HEADER_KEYS) {
                d = d.with_hint(format!("did you mean `{s}`?"));
            }
            cx.diagnostics.push(d);
            // Skip its value if one follows.
            if inline_value.is_none() {
                if let Some((_, v)) = toks.get(i) {
                    if !v.contains(':') && parse_u64_lenient(v).is_ok() {
                        i += 1;
                    }
                }
            }
            continue;
        };
        let read_num = |cx: &mut Ctx<'_>, v: Option<(usize, &str)>| -> Result<u64, Diagnostic> {
            match v {
                None => Err(Diagnostic::error(format!(
                    "failed to parse SimAI workload (header key `{key}` has no value)"
                ))
                .at(cx.loc(no, line, kcol))
                .with_hint(format!("write `{key}: <integer>`"))),
                Some((col, t)) => parse_u64_lenient(t).map_err(|why| {
                    Diagnostic::error(format!(
                        "failed to parse SimAI workload (value `{}` of `{key}` is {why})",
                        crate::diag::excerpt(t, 40)
                    ))
                    .at(cx.loc(no, line, col))
                    .with_hint(format!("write `{key}: <integer>`"))
                }),
            }
        };
        if seen.contains(&key) {
            cx.diagnostics.push(
                Diagnostic::warning(format!(
                    "header key `{key}` appears twice; the last value wins"
                ))
                .at(cx.loc(no, line, kcol)),
            );
        }
        seen.push(key);
        let v = next_value(&mut i);
        let n = read_num(cx, v)?;
        let as_u32 = |cx: &mut Ctx<'_>, n: u64| -> Result<u32, Diagnostic> {
            u32::try_from(n).map_err(|_| {
                Diagnostic::error(format!(
                    "failed to parse SimAI workload (`{key}` = {n} is too large)"
                ))
                .at(cx.loc(no, line, kcol))
            })
        };
        match key {
            "model_parallel_NPU_group" => h.tp = as_u32(cx, n)?,
            "ep" => h.ep = as_u32(cx, n)?,
            "pp" => h.pp = as_u32(cx, n)?,
            "vpp" => h.vpp = as_u32(cx, n)?,
            "ga" => h.ga = as_u32(cx, n)?,
            "all_gpus" => h.world = Some(as_u32(cx, n)?),
            "pp_comm" => h.pp_comm_bytes = n,
            "checkpoints" | "checkpoint_initiates" => {
                let mut list = Vec::new();
                for _ in 0..n.min(toks.len() as u64) {
                    let v = toks.get(i).copied();
                    i += 1;
                    let n = read_num(cx, v)?;
                    list.push(as_u32(cx, n)?);
                }
                if n > list.len() as u64 {
                    return Err(Diagnostic::error(format!(
                        "failed to parse SimAI workload (`{key}: {n}` lists only {} layers)",
                        list.len()
                    ))
                    .at(cx.loc(no, line, kcol))
                    .with_hint(format!("write `{key}: N` followed by N layer indices")));
                }
                if key == "checkpoints" {
                    h.checkpoints = list;
                } else {
                    h.checkpoint_initiates = list;
                }
            }
            _ => unreachable!("HEADER_KEYS covers every arm"),
        }
        if matches!(
            key,
            "model_parallel_NPU_group" | "ep" | "pp" | "vpp" | "ga" | "all_gpus"
        ) && n == 0
        {
            return Err(Diagnostic::error(format!(
                "failed to parse SimAI workload (`{key}` is 0; a group size or count must be at least 1)"
            ))
            .at(cx.loc(no, line, kcol)));
        }
    }
    for (key, name) in [("vpp", "vpp"), ("ga", "ga"), ("ep", "ep")] {
        if !seen.contains(&key) {
            h.defaulted.push(name);
            cx.diagnostics.push(
                Diagnostic::warning(format!(
                    "header has no `{key}:`; assuming {key} = 1 (SimAI leaves it unset and prints NaN)"
                ))
                .at(cx.loc(no, line, line.len())),
            );
        }
    }
    for key in ["model_parallel_NPU_group", "pp"] {
        if !seen.contains(&key) {
            h.defaulted.push(if key == "pp" {
                "pp"
            } else {
                "model_parallel_NPU_group"
            });
            cx.diagnostics.push(
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

fn parse_record(cx: &mut Ctx<'_>, no: u32, line: &str) -> Result<SimaiRecord, Diagnostic> {
    let mut f: [(usize, &str); 12] = [(0, ""); 12];
    let mut n = 0;
    let mut extra = None;
    for tok in tokens(line) {
        if n < 12 {
            f[n] = tok;
        } else if extra.is_none() {
            extra = Some(tok);
        }
        n += 1;
    }
    if n != 12 {
        let col = extra.map_or(line.len(), |(c, _)| c);
        return Err(Diagnostic::error(format!(
            "failed to parse SimAI workload (expected 12 fields, found {n}); record skipped"
        ))
        .at(cx.loc(no, line, col))
        .with_hint(RECORD_FIELDS_HINT));
    }
    let num = |cx: &mut Ctx<'_>, idx: usize, what: &str| -> Result<u64, Diagnostic> {
        let (col, t) = f[idx];
        parse_u64_lenient(t).map_err(|why| {
            Diagnostic::error(format!(
                "failed to parse SimAI workload ({what} `{}` in field {} is {why}); record skipped",
                crate::diag::excerpt(t, 40),
                idx + 1
            ))
            .at(cx.loc(no, line, col))
            .with_hint(RECORD_FIELDS_HINT)
        })
    };
    let (pcol, ptok) = f[1];
    if ptok != "-1" {
        cx.diagnostics.push(
            Diagnostic::warning(format!(
                "field 2 is `{ptok}`; SimAI writes -1 there and ignores it"
            ))
            .at(cx.loc(no, line, pcol)),
        );
    }
    let comm = |cx: &mut Ctx<'_>, idx: usize, column: Column| -> Result<SimaiComm, Diagnostic> {
        let (col, t) = f[idx];
        let size_bytes = num(cx, idx + 1, "comm size")?;
        let comm_type = match comm_type_from_str(t, column) {
            Some(CommType::Broadcast) => {
                cx.diagnostics.push(
                    Diagnostic::warning(
                        "BROADCAST is not modelled (SimAI drops it); kept as no collective",
                    )
                    .at(cx.loc(no, line, col)),
                );
                CommType::Broadcast
            }
            Some(ct) => ct,
            None => {
                let mut d = Diagnostic::warning(format!(
                    "unknown comm type `{}`; treated as no collective",
                    crate::diag::excerpt(t, 40)
                ))
                .at(cx.loc(no, line, col));
                if let Some(s) = suggest(t, &COMM_TYPE_NAMES) {
                    d = d.with_hint(format!("did you mean `{s}`?"));
                }
                cx.diagnostics.push(d);
                CommType::Unknown
            }
        };
        Ok(SimaiComm {
            comm_type,
            size_bytes,
        })
    };
    Ok(SimaiRecord {
        name: f[0].1.to_string(),
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
    fn typo_comm_type_suggests() {
        let t = "DATA pp: 1 vpp: 1 ga: 1 ep: 1 model_parallel_NPU_group: 1\n1\n\
                 a -1 1 ALLREDUSE 8 1 NONE 0 1 ALLTOALL_DP_EP 38654705664 100\n";
        let w = parse("r.txt", t).unwrap();
        assert_eq!(w.records[0].fwd_comm.comm_type, CommType::Unknown);
        assert_eq!(w.records[0].wg_comm.size_bytes, 38_654_705_664);
        assert_eq!(
            w.diagnostics[0].hint.as_deref(),
            Some("did you mean `ALLREDUCE`?")
        );
    }

    #[test]
    fn lenient_numbers() {
        assert_eq!(parse_u64_lenient("20971520.0"), Ok(20_971_520));
        assert!(parse_u64_lenient("-5").is_err());
        assert!(parse_u64_lenient("99999999999999999999999").is_err());
        assert!(parse_u64_lenient("1.5").is_err());
        assert!(parse_u64_lenient("abc").is_err());
        assert!(parse_u64_lenient("inf").is_err());
    }

    #[test]
    fn empty_and_garbage_inputs_are_errors() {
        assert!(parse("e", "").is_err());
        assert!(parse("e", "\u{feff}\r\n").is_err());
        assert!(parse("e", "hello world\n").is_err());
        assert!(parse("e", "DATA pp: 1\n").is_err());
    }
}
