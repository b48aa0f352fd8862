//! Parser for NeuSight "Work_Item" TSVs (docs/FORMATS.md §2.2) and their
//! conversion to the normalised workload model.
//!
//! A header row of 11 named columns, then one row per torch.fx op of one
//! transformer block plus embedding and head. Compute times are predicted
//! **milliseconds** (Python floats, scientific notation allowed) and become
//! integer nanoseconds, rounded half-up from the decimal text. Comm sizes are
//! **element counts** of fp32 and become bytes (x4). A row `<op>_grad` carries
//! the gradient all-reduce of `<op>` and is attached to that op. Columns are
//! matched by name (order differences are a warning); a bad row is skipped
//! with an error and the rest are kept.

use super::lex::{self, DiagSink};
use crate::diag::Diagnostic;
use crate::workload::Format;
use crate::workload::{
    CommGroup, CommKind, CommOp, DescribedJob, LayerOp, LayerRole, MicroBatchBlock, ParallelConfig,
    PhaseOp, StageScope, StageWorkload,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// The 11 header names, in the order the producer writes them.
pub const COLUMNS: [&str; 11] = [
    "name",
    "forward_compute_time",
    "forward_comm_type",
    "forward_comm_size",
    "backward_compute_time",
    "backward_comm_type",
    "backward_comm_size",
    "weight_grad_compute_time",
    "weight_grad_comm_type",
    "weight_grad_comm_size",
    "process_time",
];

/// Bytes per element of the comm sizes (fp32).
pub const BYTES_PER_ELEMENT: u64 = 4;

/// Transformer blocks of GPT-2-large, the default block repeat count.
pub const DEFAULT_BLOCK_REPEATS: u32 = 36;

/// Largest accepted block repeat count (the largest transformers have a
/// few hundred blocks); larger values are a configuration error in the CLI
/// ([`check_block_repeats`]) and clamped (warned) by [`to_model`].
pub const MAX_BLOCK_REPEATS: u32 = 1024;

/// Most layer ops one micro-batch may hold after the block is repeated:
/// beyond it the repeat count is lowered (warned), so a large file times a
/// large repeat count cannot exhaust memory.
pub const MAX_EXPANDED_OPS: usize = 1 << 20;

/// Check a block repeat count given by the user (1..=[`MAX_BLOCK_REPEATS`]).
pub fn check_block_repeats(n: u32) -> Result<u32, Diagnostic> {
    if (1..=MAX_BLOCK_REPEATS).contains(&n) {
        Ok(n)
    } else {
        Err(Diagnostic::error(format!(
            "block repeat count {n} is out of range (1 to {MAX_BLOCK_REPEATS})"
        ))
        .with_hint(format!(
            "the number of transformer blocks of the model, e.g. 36 for GPT-2-large; at most {MAX_BLOCK_REPEATS}"
        )))
    }
}

const COMM_NAMES: [&str; 4] = ["None", "ALLREDUCE_ASYNC", "ALLREDUCE", "SENDRECV"];

/// A comm-type cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum NeusightCommType {
    /// `None`: no communication.
    None,
    /// `ALLREDUCE_ASYNC`: asynchronous data-parallel gradient all-reduce.
    AllReduceAsync,
    /// `ALLREDUCE`: tensor-parallel all-reduce.
    AllReduce,
    /// `SENDRECV`: pipeline stage-to-stage transfer.
    SendRecv,
    /// Anything else (warned about, treated as no communication).
    Unknown,
}

/// One comm column: type, size as written (elements) and in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct NeusightComm {
    pub comm_type: NeusightCommType,
    /// fp32 element count as written.
    pub elements: u64,
    /// `elements * 4`.
    pub size_bytes: u64,
}

/// One data row, converted to ns and bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NeusightRow {
    pub name: String,
    /// 1-based line number.
    pub line: u32,
    pub forward_ns: u64,
    pub forward_comm: NeusightComm,
    pub backward_ns: u64,
    pub backward_comm: NeusightComm,
    pub weight_grad_ns: u64,
    pub weight_grad_comm: NeusightComm,
    pub process_ns: u64,
}

/// A parsed TSV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NeusightTable {
    pub rows: Vec<NeusightRow>,
    /// Rows that could not be read (each has an error diagnostic).
    pub skipped_rows: u32,
    pub diagnostics: Vec<Diagnostic>,
}

/// Settings of the NeuSight -> model conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NeusightOptions {
    /// How many times the model repeats the transformer block the file
    /// describes (GPT-2-large: 36).
    pub block_repeats: u32,
    /// Data-parallel size; the file does not say it (`None`: assume 1, warned).
    pub data_parallel: Option<u32>,
}

impl Default for NeusightOptions {
    fn default() -> Self {
        NeusightOptions {
            block_repeats: DEFAULT_BLOCK_REPEATS,
            data_parallel: None,
        }
    }
}

const ROW_HINT: &str = "a NeuSight row is 11 tab-separated fields: name, forward_compute_time (ms), forward_comm_type, forward_comm_size (elements), backward_compute_time, backward_comm_type, backward_comm_size, weight_grad_compute_time, weight_grad_comm_type, weight_grad_comm_size, process_time";

fn split_row(line: &str) -> Vec<(usize, &str)> {
    let base = line.as_ptr() as usize;
    let tabbed: Vec<(usize, &str)> = line
        .split('\t')
        .map(|f| {
            let t = f.trim_matches(' ');
            (t.as_ptr() as usize - base, t)
        })
        .collect();
    if tabbed.len() >= COLUMNS.len() {
        return tabbed;
    }
    let spaced: Vec<(usize, &str)> = lex::tokens(line).collect();
    if spaced.len() == COLUMNS.len() {
        spaced
    } else {
        tabbed
    }
}

/// Parse a NeuSight TSV. Errors only when nothing usable is left (empty file,
/// a header without the required columns).
pub fn parse(file: &str, text: &str) -> Result<NeusightTable, Diagnostic> {
    let mut sink = DiagSink::default();
    let mut lines = lex::numbered_lines(text).filter(|(_, l)| !l.trim().is_empty());
    let Some((h_no, h_line)) = lines.next() else {
        return Err(
            Diagnostic::error("failed to parse NeuSight TSV (the file is empty)").with_hint(
                format!("line 1 is the tab-separated header: {}", COLUMNS.join(" ")),
            ),
        );
    };
    let header = split_row(h_line);
    if !h_line.contains('\t') && header.len() == COLUMNS.len() {
        sink.push(
            Diagnostic::warning("the header is separated by spaces, not tabs; accepted")
                .at(lex::location(file, h_no, h_line, 0)),
        );
    }
    // Map each required column to its index in this file.
    let mut index = [usize::MAX; 11];
    for (i, (col, name)) in header.iter().enumerate() {
        match COLUMNS.iter().position(|c| c == name) {
            Some(k) if index[k] == usize::MAX => index[k] = i,
            Some(_) => sink.push(
                Diagnostic::warning(format!(
                    "header column `{name}` appears twice; the first is used"
                ))
                .at(lex::location(file, h_no, h_line, *col)),
            ),
            None => {
                let mut d = Diagnostic::warning(format!(
                    "ignored unknown header column `{}`",
                    lex::quote(name, 40)
                ))
                .at(lex::location(file, h_no, h_line, *col));
                if let Some(s) = lex::suggest_short(name, &COLUMNS) {
                    d = d.with_hint(format!("did you mean `{s}`?"));
                }
                sink.push(d);
            }
        }
    }
    let missing: Vec<&str> = COLUMNS
        .iter()
        .zip(index)
        .filter(|(_, i)| *i == usize::MAX)
        .map(|(c, _)| *c)
        .collect();
    if !missing.is_empty() {
        let mut d = Diagnostic::error(format!(
            "failed to parse NeuSight TSV (header lacks column(s) {})",
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .at(lex::location(file, h_no, h_line, 0))
        .with_hint(format!(
            "line 1 is the tab-separated header: {}",
            COLUMNS.join("\\t")
        ));
        // Name the likely typos: unknown header names close to a missing one.
        let typos: Vec<String> = header
            .iter()
            .filter(|(_, n)| !COLUMNS.contains(n))
            .filter_map(|(_, n)| {
                let s = lex::suggest_short(n, &missing)?;
                Some(format!("`{}` looks like `{s}`", lex::quote(n, 40)))
            })
            .collect();
        if !typos.is_empty() {
            d = d.with_hint(format!(
                "{}; line 1 is the tab-separated header: {}",
                typos.join(", "),
                COLUMNS.join("\\t")
            ));
        }
        return Err(d);
    }
    if index.iter().enumerate().any(|(k, i)| k != *i) {
        sink.push(
            Diagnostic::warning("header columns are not in the usual order; matched by name")
                .at(lex::location(file, h_no, h_line, 0)),
        );
    }
    let width = header.len();
    let mut rows = Vec::new();
    let mut skipped_rows: u32 = 0;
    let mut spaced_rows = 0u32;
    for (no, line) in lines {
        let fields = split_row(line);
        if !line.contains('\t') && fields.len() == width {
            spaced_rows += 1;
        }
        match parse_row(file, &mut sink, no, line, &fields, &index, width) {
            Ok(r) => rows.push(r),
            Err(d) => {
                skipped_rows = skipped_rows.saturating_add(1);
                sink.push(d);
            }
        }
    }
    if spaced_rows > 0 {
        sink.push(Diagnostic::warning(format!(
            "{spaced_rows} row(s) are separated by spaces, not tabs; accepted"
        )));
    }
    // Listed last and never capped: the file is still used, so the count
    // of what was read and left out is a warning (each skipped item has
    // its located error above).
    let mut diagnostics = sink.finish(file);
    if skipped_rows > 0 {
        diagnostics.push(Diagnostic::warning(format!(
            "{} row(s) read, {skipped_rows} skipped because they could not be parsed",
            rows.len()
        )));
    }
    Ok(NeusightTable {
        rows,
        skipped_rows,
        diagnostics,
    })
}

fn parse_row(
    file: &str,
    sink: &mut DiagSink,
    no: u32,
    line: &str,
    fields: &[(usize, &str)],
    index: &[usize; 11],
    width: usize,
) -> Result<NeusightRow, Diagnostic> {
    if fields.len() != width {
        let col = fields.get(width).map_or(line.len(), |f| f.0);
        return Err(Diagnostic::error(format!(
            "failed to parse NeuSight TSV (expected {width} fields, found {}); row skipped",
            fields.len()
        ))
        .at(lex::location(file, no, line, col))
        .with_hint(ROW_HINT));
    }
    let get = |k: usize| -> (usize, &str) { fields.get(index[k]).copied().unwrap_or((0, "")) };
    let ms = |k: usize| -> Result<u64, Diagnostic> {
        let (col, t) = get(k);
        lex::parse_decimal_scaled(t, 6).map_err(|why| {
            Diagnostic::error(format!(
                "failed to parse NeuSight TSV ({} `{}` is {why}); row skipped",
                COLUMNS[k],
                lex::quote(t, 40)
            ))
            .at(lex::location(file, no, line, col))
            .with_hint("compute times are milliseconds, e.g. `0.236` or `4.79e-09`")
        })
    };
    let comm = |sink: &mut DiagSink, k: usize| -> Result<NeusightComm, Diagnostic> {
        let (col, t) = get(k);
        let (scol, s) = get(k + 1);
        let elements = lex::parse_u64_exact(s).map_err(|why| {
            Diagnostic::error(format!(
                "failed to parse NeuSight TSV ({} `{}` is {why}); row skipped",
                COLUMNS[k + 1],
                lex::quote(s, 40)
            ))
            .at(lex::location(file, no, line, scol))
            .with_hint("comm sizes are fp32 element counts (integers)")
        })?;
        let size_bytes = elements.checked_mul(BYTES_PER_ELEMENT).ok_or_else(|| {
            Diagnostic::error(format!(
                "failed to parse NeuSight TSV ({} {elements} elements is too large in bytes); row skipped",
                COLUMNS[k + 1]
            ))
            .at(lex::location(file, no, line, scol))
        })?;
        let comm_type = match t {
            "None" | "NONE" | "none" | "" => NeusightCommType::None,
            "ALLREDUCE_ASYNC" => NeusightCommType::AllReduceAsync,
            "ALLREDUCE" => NeusightCommType::AllReduce,
            "SENDRECV" => NeusightCommType::SendRecv,
            _ => {
                sink.push_with(crate::diag::Severity::Warning, || {
                    let d = Diagnostic::warning(format!(
                        "unknown comm type `{}` in {}; treated as no communication",
                        lex::quote(t, 40),
                        COLUMNS[k]
                    ))
                    .at(lex::location(file, no, line, col));
                    match lex::suggest_short(t, &COMM_NAMES) {
                        Some(s) => d.with_hint(format!("did you mean `{s}`?")),
                        None => d.with_hint(format!("known comm types: {}", COMM_NAMES.join(", "))),
                    }
                });
                NeusightCommType::Unknown
            }
        };
        Ok(NeusightComm {
            comm_type,
            elements,
            size_bytes,
        })
    };
    let name = get(0).1;
    if name.is_empty() {
        return Err(Diagnostic::error(
            "failed to parse NeuSight TSV (the op name is empty); row skipped",
        )
        .at(lex::location(file, no, line, 0))
        .with_hint(ROW_HINT));
    }
    Ok(NeusightRow {
        name: name.to_string(),
        line: no,
        forward_ns: ms(1)?,
        forward_comm: comm(sink, 2)?,
        backward_ns: ms(4)?,
        backward_comm: comm(sink, 5)?,
        weight_grad_ns: ms(7)?,
        weight_grad_comm: comm(sink, 8)?,
        process_ns: ms(10)?,
    })
}

fn model_comm(c: &NeusightComm) -> Option<CommOp> {
    if c.size_bytes == 0 {
        return None;
    }
    let (kind, group, asynchronous) = match c.comm_type {
        NeusightCommType::None | NeusightCommType::Unknown => return None,
        NeusightCommType::AllReduceAsync => (CommKind::AllReduce, CommGroup::Dp, true),
        NeusightCommType::AllReduce => (CommKind::AllReduce, CommGroup::Tp, false),
        NeusightCommType::SendRecv => (CommKind::Send, CommGroup::Pp, false),
    };
    Some(CommOp {
        kind,
        group,
        size_bytes: c.size_bytes,
        asynchronous,
        prefetch: 0,
    })
}

/// The transformer-block index in an op name like `transformer_h_12_ln_1`.
fn block_number(name: &str) -> Option<u32> {
    let at = name.find("_h_")?;
    let rest = &name[at + 3..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !rest[digits..].starts_with('_') {
        return None;
    }
    rest[..digits].parse().ok()
}

fn is_head_row(name: &str) -> bool {
    name.contains("ln_f") || name.contains("lm_head")
}

/// Convert a parsed table to the normalised model (one stage, one
/// micro-batch, data-parallel).
///
/// * `<op>_grad` rows are attached to the first later row named `<op>`: their
///   communication becomes that op's weight-gradient collective (an
///   `ALLREDUCE_ASYNC` is an asynchronous DP all-reduce). A `_grad` row with
///   no matching op stays a row of its own (warned).
/// * When every backward and weight-gradient time is 0 (the producer traced
///   inference only), backward is estimated as 2 x forward, split equally:
///   input-gradient = weight-gradient = forward time of the op (warned).
/// * The rows of transformer block 0 (from the first op named `*_h_0_*` to
///   the op before the final norm / head) are repeated
///   `options.block_repeats` times; each copy's ops carry `block_index`.
pub fn to_model(file: &str, table: &NeusightTable, options: &NeusightOptions) -> DescribedJob {
    let mut diags = DiagSink::resume(table.diagnostics.clone());
    let rows = &table.rows;

    // 1. Attach `_grad` rows to their op.
    // Rows by name (indices ascending) so each `_grad` row finds its op by
    // a binary search instead of a scan of every later row.
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        by_name.entry(r.name.as_str()).or_default().push(i);
    }
    let mut grad_target: Vec<Option<usize>> = vec![None; rows.len()];
    // The `_grad` rows attached to each op, in row order.
    let mut grads_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        if let Some(base) = r.name.strip_suffix("_grad") {
            let j = by_name.get(base).and_then(|list| {
                let k = list.partition_point(|&x| x <= i);
                list.get(k).copied()
            });
            match j {
                Some(j) => {
                    grad_target[i] = Some(j);
                    grads_of.entry(j).or_default().push(i);
                }
                None => diags.push(
                    Diagnostic::warning(format!(
                        "gradient row `{}` has no later op `{base}` to attach to; kept as its own row",
                        r.name
                    ))
                    .at(lex::location(file, r.line, &r.name, 0)),
                ),
            }
        }
    }
    // Backward estimate, per row: a row with forward time but zero backward
    // and weight-gradient time (its own and its `_grad` rows') gets backward
    // = 2 x forward, split equally (input-gradient = weight-gradient =
    // forward). One summary warning when every row is like that (an
    // inference-only trace), else one per row.
    let no_backward = |r: &NeusightRow| r.backward_ns == 0 && r.weight_grad_ns == 0;
    let estimated: Vec<bool> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            grad_target[i].is_none()
                && no_backward(r)
                && grads_of
                    .get(&i)
                    .is_none_or(|gs| gs.iter().all(|&g| no_backward(&rows[g])))
        })
        .collect();
    let any_forward = rows.iter().any(|r| r.forward_ns > 0);
    let all_backward_zero = (0..rows.len())
        .filter(|&i| grad_target[i].is_none())
        .all(|i| estimated[i]);
    if all_backward_zero && any_forward {
        diags.push(Diagnostic::warning(
            "every backward and weight-gradient time is 0 (the producer traced inference only); estimated backward = 2 x forward, split equally: input-gradient = weight-gradient = forward time of each op",
        ));
    } else {
        for (i, r) in rows.iter().enumerate() {
            if estimated[i] && r.forward_ns > 0 {
                diags.push_with(crate::diag::Severity::Warning, || {
                    Diagnostic::warning(format!(
                        "op `{}` has forward time but zero backward and weight-gradient time; estimated backward = 2 x forward, split equally: input-gradient = weight-gradient = {} ms",
                        lex::quote(&r.name, 60),
                        lex::ns_to_ms_string(r.forward_ns)
                    ))
                    .at(lex::location(file, r.line, &r.name, 0))
                    .with_hint("give the row's backward_compute_time and weight_grad_compute_time to use measured values")
                });
            }
        }
    }

    let mut ops: Vec<LayerOp> = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        if grad_target[i].is_some() {
            continue;
        }
        let mut op = LayerOp::empty(r.name.clone(), LayerRole::Layer);
        op.source_line = Some(r.line);
        op.forward = PhaseOp {
            compute_ns: r.forward_ns,
            comm: model_comm(&r.forward_comm),
            ..Default::default()
        };
        op.input_grad = PhaseOp {
            compute_ns: if estimated[i] {
                r.forward_ns
            } else {
                r.backward_ns
            },
            comm: model_comm(&r.backward_comm),
            ..Default::default()
        };
        op.weight_grad = PhaseOp {
            compute_ns: if estimated[i] {
                r.forward_ns
            } else {
                r.weight_grad_ns
            },
            comm: model_comm(&r.weight_grad_comm),
            ..Default::default()
        };
        op.update_ns = r.process_ns;
        op.backward_estimated = estimated[i] && r.forward_ns > 0;
        for &g in grads_of.get(&i).map_or(&[][..], Vec::as_slice) {
            attach_grad(file, &mut diags, &mut op, &rows[g]);
        }
        ops.push(op);
    }

    // 2. Repeat the transformer block.
    let blocks_present: std::collections::BTreeSet<u32> =
        ops.iter().filter_map(|o| block_number(&o.name)).collect();
    let mut repeats = options.block_repeats.clamp(1, MAX_BLOCK_REPEATS);
    if repeats != options.block_repeats.max(1) {
        diags.push(
            Diagnostic::warning(format!(
                "block repeat count {} is above the maximum {MAX_BLOCK_REPEATS}; using {MAX_BLOCK_REPEATS}",
                options.block_repeats
            ))
            .with_hint("set the number of transformer blocks of the model"),
        );
    }
    let mut expanded = Vec::new();
    match (
        blocks_present.len(),
        ops.iter().position(|o| block_number(&o.name).is_some()),
    ) {
        (1, Some(start)) => {
            let end = ops[start..]
                .iter()
                .position(|o| is_head_row(&o.name))
                .map_or(ops.len(), |p| p + start);
            let block_len = (end - start).max(1);
            let fit = u32::try_from((MAX_EXPANDED_OPS / block_len).max(1)).unwrap_or(u32::MAX);
            if repeats > fit {
                diags.push(Diagnostic::warning(format!(
                    "the block has {block_len} ops: repeated {repeats} times it would exceed {MAX_EXPANDED_OPS} ops per micro-batch; repeated {fit} times instead"
                )));
                repeats = fit;
            }
            let first = ops.get(start).and_then(|o| o.source_line).unwrap_or(0);
            let last = ops
                .get(end.saturating_sub(1))
                .and_then(|o| o.source_line)
                .unwrap_or(0);
            diags.push(Diagnostic::warning(format!(
                "the file describes one transformer block ({} ops, `{}` .. `{}`, lines {first}-{last}); it is repeated {repeats} times{}",
                end - start,
                ops[start].name,
                ops[end.saturating_sub(1).max(start)].name,
                if options.block_repeats == DEFAULT_BLOCK_REPEATS {
                    " (the GPT-2-large default; set the block repeat count for other models)"
                } else {
                    " (block repeat setting)"
                }
            )));
            let tail = ops.split_off(end);
            let block = ops.split_off(start);
            expanded.extend(ops);
            for k in 0..repeats {
                expanded.extend(block.iter().cloned().map(|mut o| {
                    o.block_index = Some(k);
                    o
                }));
            }
            expanded.extend(tail);
        }
        (0, _) => {
            diags.push(Diagnostic::warning(
                "no transformer-block rows (named `*_h_0_*`) found; every row is used once, the block repeat setting is not applied",
            ));
            expanded = ops;
        }
        (n, _) => {
            diags.push(Diagnostic::warning(format!(
                "the file lists {n} transformer blocks; used as written, the block repeat setting is not applied"
            )));
            expanded = ops;
        }
    }

    // 3. Parallel configuration.
    let dp = options.data_parallel.unwrap_or(1).max(1);
    if options.data_parallel.is_none() {
        diags.push(Diagnostic::warning(
            "the file does not state the data-parallel size; assuming 1 (set it to simulate the gradient all-reduces over several replicas)",
        ));
    }
    let (parallel, notes) = ParallelConfig::resolve(Some(dp), 1, 1, 1, 1);
    diags.extend(notes.into_iter().map(Diagnostic::warning));

    DescribedJob {
        file: file.to_string(),
        format: Format::NeusightTsv,
        parallel,
        stages: vec![StageWorkload {
            scope: StageScope::AllStages,
            before: Vec::new(),
            blocks: vec![MicroBatchBlock {
                repeat: 1,
                ops: expanded,
            }],
            after: Vec::new(),
            chunk_layers: Vec::new(),
        }],
        diagnostics: diags.finish(file),
    }
}

fn attach_grad(file: &str, diags: &mut DiagSink, op: &mut LayerOp, g: &NeusightRow) {
    if g.forward_ns > 0 || g.backward_ns > 0 || g.weight_grad_ns > 0 {
        op.forward.compute_ns = op.forward.compute_ns.saturating_add(g.forward_ns);
        op.input_grad.compute_ns = op.input_grad.compute_ns.saturating_add(g.backward_ns);
        op.weight_grad.compute_ns = op.weight_grad.compute_ns.saturating_add(g.weight_grad_ns);
        diags.push(
            Diagnostic::warning(format!(
                "gradient row `{}` has compute time; added to op `{}`",
                g.name, op.name
            ))
            .at(lex::location(file, g.line, &g.name, 0)),
        );
    }
    for c in [&g.forward_comm, &g.backward_comm, &g.weight_grad_comm] {
        let Some(mut comm) = model_comm(c) else {
            continue;
        };
        if comm.kind == CommKind::AllReduce && c.comm_type == NeusightCommType::AllReduceAsync {
            comm.group = CommGroup::Dp;
        }
        if op.weight_grad.comm.is_none() {
            op.weight_grad.comm = Some(comm);
        } else {
            diags.push(
                Diagnostic::warning(format!(
                    "op `{}` already has a weight-gradient collective; the extra one from `{}` ({} bytes) is not modelled",
                    op.name, g.name, comm.size_bytes
                ))
                .at(lex::location(file, g.line, &g.name, 0)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str =
        include_str!("../../../../tests/fixtures/seeds/neusight_gpt2large_dp_workitems.tsv");

    #[test]
    fn seed_rows_units_and_grads() {
        let t = parse("n.tsv", SEED).unwrap();
        assert_eq!(t.rows.len(), 51);
        assert_eq!(t.skipped_rows, 0);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        let addmm = t.rows.iter().find(|r| r.name == "addmm").unwrap();
        assert_eq!(addmm.forward_ns, 9_980_884);
        let wte_grad = &t.rows[3];
        assert_eq!(wte_grad.backward_comm.size_bytes, 1_310_720 * 4);
        let m = to_model("n.tsv", &t, &NeusightOptions::default());
        let ops = &m.stages[0].blocks[0].ops;
        let wte = ops.iter().find(|o| o.name == "transformer_wte").unwrap();
        assert_eq!(
            wte.weight_grad.comm,
            Some(CommOp {
                kind: CommKind::AllReduce,
                group: CommGroup::Dp,
                size_bytes: 5_242_880,
                asynchronous: true,
                prefetch: 0
            })
        );
        // Estimated backward: 2 x forward split equally.
        assert_eq!(wte.input_grad.compute_ns, wte.forward.compute_ns);
        assert!(ops.iter().all(|o| !o.name.ends_with("_grad")));
        let block_ops = ops.iter().filter(|o| o.block_index == Some(35)).count();
        assert!(block_ops > 30, "{block_ops}");
        assert_eq!(ops.iter().filter(|o| o.name == "lm_head").count(), 1);
    }

    #[test]
    fn block_repeats_is_a_setting() {
        let t = parse("n.tsv", SEED).unwrap();
        let a = to_model("n.tsv", &t, &NeusightOptions::default());
        let b = to_model(
            "n.tsv",
            &t,
            &NeusightOptions {
                block_repeats: 2,
                data_parallel: Some(4),
            },
        );
        let n = |j: &DescribedJob| j.stages[0].blocks[0].ops.len();
        let block = (n(&a) - n(&b)) / 34;
        assert_eq!(n(&b), n(&a) - 34 * block);
        assert_eq!(b.parallel.dp, 4);
    }
}
