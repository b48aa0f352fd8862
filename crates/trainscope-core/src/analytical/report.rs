//! The SimAI-Analytical report (docs/FORMATS.md §4 "Report"): per-layer
//! rows (compute, exposed and total comm, algbw and busbw per phase) and the
//! summary (exposed DP, DP_EP, TP, EP and PP comm, bubble, compute, exposed
//! total, total, each with its share), all in integer nanoseconds, each term
//! truncated to whole ns before summing.

use super::config::{AnalyticalConfig, ClusterConfig, OverlapRatios, SimaiParallelism};
use super::cost::{
    f64_to_ns, group_size, uses_fallback_column, CollectiveCost, CostModel, CostPath, Phase,
    SimaiGroup, BYTES_PER_GB,
};
use super::error::AnalyticalError;
use crate::diag::{Diagnostic, Severity};
use crate::formats::simai::{Collective, SimaiComm, SimaiRecord, SimaiWorkload};
use serde::Serialize;

/// Layer name excluded from the bubble sum.
pub const EMBEDDING_LAYER: &str = "embedding_layer";

/// One phase (comm column) of a layer row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PhaseComm {
    /// The collective, `None` when the column runs none.
    pub collective: Option<Collective>,
    /// Its resolved group.
    pub group: Option<SimaiGroup>,
    /// n (0 without a collective).
    pub group_size: u32,
    /// Size after the forward raise to 4096, bytes.
    pub size_bytes: u64,
    /// Time before overlap, ns.
    pub total_ns: u64,
    /// trunc(total x (1 - overlap)) in SimAI's single precision
    /// ([`exposed_ns`]), ns.
    pub exposed_ns: u64,
    /// Algorithm bandwidth S / 2^30 / (total / 1e9), GB/s; `None` when no
    /// collective ran or its time is 0 (SimAI prints `-nan`/`inf`).
    pub algbw_gbps: Option<f64>,
    /// algbw x f, GB/s; `None` as for algbw.
    pub busbw_gbps: Option<f64>,
}

impl PhaseComm {
    /// A column with no collective.
    pub const NONE: PhaseComm = PhaseComm {
        collective: None,
        group: None,
        group_size: 0,
        size_bytes: 0,
        total_ns: 0,
        exposed_ns: 0,
        algbw_gbps: None,
        busbw_gbps: None,
    };
}

/// One record of the workload, costed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerRow {
    /// Layer name as written in the workload.
    pub name: String,
    /// 1-based line in the workload file.
    pub line: u32,
    /// Forward compute, ns.
    pub fwd_compute_ns: u64,
    /// Weight-gradient compute, ns.
    pub wg_compute_ns: u64,
    /// Input-gradient compute, ns.
    pub ig_compute_ns: u64,
    /// Forward collective.
    pub fwd: PhaseComm,
    /// Weight-gradient collective.
    pub wg: PhaseComm,
    /// Input-gradient collective.
    pub ig: PhaseComm,
}

/// Exposed communication by group, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ExposedComm {
    /// Weight-gradient collectives over DP (everything but DP_EP).
    pub dp: u64,
    /// Weight-gradient collectives over DP_EP.
    pub dp_ep: u64,
    /// Forward and input-gradient collectives of layers whose forward
    /// collective is not over EP.
    pub tp: u64,
    /// Forward and input-gradient collectives of layers whose forward
    /// collective is over EP.
    pub ep: u64,
    /// Pipeline sends (see [`pp_exposed_ns`]).
    pub pp: u64,
}

/// Each summary figure's share of the total, percent (SimAI's CSV figures).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Shares {
    /// Exposed DP comm.
    pub dp: f64,
    /// Exposed DP_EP comm.
    pub dp_ep: f64,
    /// Exposed TP comm.
    pub tp: f64,
    /// Exposed EP comm.
    pub ep: f64,
    /// Exposed PP comm.
    pub pp: f64,
    /// Bubble.
    pub bubble: f64,
    /// Compute.
    pub compute: f64,
    /// Exposed comm total (not PP).
    pub exposed_comm: f64,
}

/// The whole result of the SimAI-compatible mode. Its JSON form is the
/// CLI's `--json` output (with warnings as objects).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalyticalReport {
    /// Version of this JSON shape ([`AnalyticalReport::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Always `"simai"`.
    pub mode: &'static str,
    /// Total = compute + exposed comm (DP, DP_EP, TP, EP) + bubble + exposed PP, ns.
    pub iteration_time_ns: u64,
    /// Sum of every compute time of every record, ns.
    pub compute_ns: u64,
    /// Pipeline bubble (see [`bubble_ns`]), ns.
    pub bubble_ns: u64,
    /// Exposed comm by group, ns.
    pub exposed_comm_ns: ExposedComm,
    /// SimAI's "total exposed comm": DP + DP_EP + TP + EP (not PP), ns.
    pub exposed_comm_total_ns: u64,
    /// Shares of the total, percent.
    pub shares_percent: Shares,
    /// Group sizes and schedule parameters used.
    pub parallelism: SimaiParallelism,
    /// The resolved cluster.
    pub cluster: ClusterConfig,
    /// The overlap ratios used.
    pub overlap: OverlapRatios,
    /// One row per record, in file order.
    pub layers: Vec<LayerRow>,
    /// The parser's warnings, then the assumptions of this mode.
    pub warnings: Vec<Diagnostic>,
}

impl AnalyticalReport {
    /// Current [`AnalyticalReport::schema_version`]: bump on any change of
    /// field names or meaning.
    pub const SCHEMA_VERSION: u32 = 1;
}

/// A ratio as SimAI holds it: a C `float` (`-dp_o` and the others are read
/// with `std::stof`). Rounding the f64 to the nearest f32 gives the same
/// value as parsing the text to f32 directly for every decimal a user types
/// (a double rounding could differ only for a decimal within 2^-53 of the
/// midpoint of two f32s).
pub fn simai_ratio_f32(ratio: f64) -> f32 {
    ratio as f32
}

/// SimAI's `Tick x *= (1 - ratio)` with `ratio` a C `float`: `1 - ratio`
/// is computed in single precision, the 64-bit integer is converted to
/// `float` (rounded to 24 significant bits), multiplied in single precision
/// and truncated back to an integer. For a validated ratio the result is
/// at most `f32(x)`, which may be a little above `x` when `x` >= 2^24
/// (SimAI's figures then show it too).
pub fn simai_scale_by_one_minus(x: u64, ratio: f64) -> u64 {
    let keep = 1.0f32 - simai_ratio_f32(ratio);
    let scaled = x as f32 * keep;
    // A validated ratio keeps `scaled` in [0, f32(x)], which fits in u64;
    // `as` saturates otherwise (NaN -> 0).
    scaled as u64
}

/// Exposed part of a collective, ns, in SimAI's order and precision
/// (Layer.cc, `total_waiting_for_*_comm *= (1 - *_overlap_ratio)` on the
/// collective's whole-ns time): [`simai_scale_by_one_minus`].
pub fn exposed_ns(total_ns: u64, overlap: f64) -> u64 {
    simai_scale_by_one_minus(total_ns, overlap)
}

/// Pipeline bubble: trunc(sum x (PP - 1) / (GA x vpp)) ns, where `sum_ns` is
/// the sum over every layer but `embedding_layer` of forward comm +
/// input-gradient comm + forward, input-gradient and weight-gradient
/// compute (before overlap). Computed exactly in 128-bit integers.
pub fn bubble_ns(sum_ns: u128, pp: u32, ga: u32, vpp: u32) -> Result<u64, AnalyticalError> {
    let den = u128::from(ga) * u128::from(vpp);
    let num = sum_ns.checked_mul(u128::from(pp.saturating_sub(1)));
    match (num, den) {
        (_, 0) => Err(AnalyticalError::ZeroCount { what: "ga x vpp" }),
        (Some(num), den) => u64::try_from(num / den).map_err(|_| AnalyticalError::Overflow {
            what: "the pipeline bubble",
            detail: format!("{sum_ns} ns x (PP {pp} - 1) / (GA {ga} x vpp {vpp})"),
        }),
        (None, _) => Err(AnalyticalError::Overflow {
            what: "the pipeline bubble",
            detail: format!("{sum_ns} ns x (PP {pp} - 1)"),
        }),
    }
}

/// Exposed pipeline-send time, ns, in SimAI's order and precision
/// (Layer.cc, the `Expose_PP_time` lines): with `r` = pp_o as a C `float`,
/// 1. `us = trunc((2·vpp·GA) · (((pp_comm / 2^30) / f64(r)) · 1e9) / 1000)`
///    in double precision, an integer number of microseconds;
/// 2. `us = trunc(f32(us) · (1 - r))` in single precision
///    ([`simai_scale_by_one_minus`]);
///
/// then ns = us · 1000: SimAI's figure is whole microseconds. 0 with the
/// default pp_o = 1. `pp_overlap` must be in (0, 1] (validated by
/// [`OverlapRatios::validate`]).
pub fn pp_exposed_ns(
    pp_comm_bytes: u64,
    vpp: u32,
    ga: u32,
    pp_overlap: f64,
) -> Result<u64, AnalyticalError> {
    let sends = 2.0 * f64::from(vpp) * f64::from(ga);
    let ratio = f64::from(simai_ratio_f32(pp_overlap));
    let per_send = pp_comm_bytes as f64 / BYTES_PER_GB / ratio * 1e9;
    let overflow = || AnalyticalError::Overflow {
        what: "the exposed PP time",
        detail: format!(
            "2 x vpp {vpp} x GA {ga} sends of {pp_comm_bytes} bytes, pp_o {pp_overlap}"
        ),
    };
    let us = f64_to_ns(sends * per_send / 1000.0).ok_or_else(overflow)?;
    simai_scale_by_one_minus(us, pp_overlap)
        .checked_mul(1000)
        .ok_or_else(overflow)
}

/// Share of `value_ns` in `total_ns`, percent, computed like SimAI's report
/// ((v / 1000) / (total / 1000) x 100); 0 when the total is 0.
pub fn share_percent(value_ns: u64, total_ns: u64) -> f64 {
    if total_ns == 0 {
        return 0.0;
    }
    (value_ns as f64 / 1000.0) / (total_ns as f64 / 1000.0) * 100.0
}

/// Algorithm bandwidth of a collective that took `time_ns`:
/// S / 2^30 / (time / 1e9) GB/s; `None` for a time of 0.
pub fn algbw_gbps(size_bytes: u64, time_ns: u64) -> Option<f64> {
    (time_ns > 0).then(|| size_bytes as f64 / BYTES_PER_GB / (time_ns as f64 / 1e9))
}

fn add(a: u64, b: u64, what: &'static str) -> Result<u64, AnalyticalError> {
    a.checked_add(b).ok_or_else(|| AnalyticalError::Overflow {
        what,
        detail: format!("{a} + {b} ns"),
    })
}

/// Notes gathered while costing, turned into warnings once each.
#[derive(Default)]
struct Notes {
    /// (dedup key, warning), first occurrence first.
    warnings: Vec<(String, Diagnostic)>,
}

impl Notes {
    /// Record `message` unless a note with the same `key` exists.
    fn once(&mut self, key: String, message: String) {
        if !self.warnings.iter().any(|(k, _)| *k == key) {
            self.warnings.push((key, Diagnostic::warning(message)));
        }
    }

    fn collective(&mut self, cost: &CollectiveCost, group: SimaiGroup, line: u32) {
        match cost.path {
            CostPath::SmallMessage { known: false } => self.once(
                format!("small {group} {}", cost.group_size),
                format!(
                    "SimAI's small-message table has no entry for a {group} group of {} ranks; \
                 such collectives cost 0 ns, as in SimAI (first at line {line})",
                    cost.group_size
                ),
            ),
            path => {
                if let Some((table, nn)) = uses_fallback_column(&path) {
                    self.once(
                        format!("column {table} {nn}"),
                        format!(
                        "the {table} ratio table has no column for {nn} nodes; using its 16-node \
                         column, as SimAI does (first at line {line})"
                    ),
                    );
                }
            }
        }
    }
}

/// Cost one comm column of a record.
fn phase_comm(
    comm: &SimaiComm,
    phase: Phase,
    model: &CostModel,
    par: &SimaiParallelism,
    notes: &mut Notes,
    line: u32,
) -> Result<PhaseComm, AnalyticalError> {
    let Some((collective, comm_group)) = comm.collective() else {
        return Ok(PhaseComm::NONE);
    };
    if comm_group == crate::formats::simai::CommGroup::Unscoped {
        notes.once(
            "unscoped".into(),
            format!(
            "an all-reduce with no group suffix (first at line {line}) is costed over TP in the \
             forward/input-gradient columns and over DP in the weight-gradient column"
        ),
        );
    }
    let group = SimaiGroup::resolve(comm_group, phase);
    let n = group_size(group, phase, par.tp, par.ep, par.dp, par.dp_ep);
    let cost = model.cost(collective, group, n, comm.size_bytes, phase)?;
    notes.collective(&cost, group, line);
    let algbw = algbw_gbps(cost.size_bytes, cost.time_ns);
    Ok(PhaseComm {
        collective: Some(collective),
        group: Some(group),
        group_size: n,
        size_bytes: cost.size_bytes,
        total_ns: cost.time_ns,
        exposed_ns: 0,
        algbw_gbps: algbw,
        busbw_gbps: algbw.map(|a| a * cost.bus_factor),
    })
}

/// Cost one record: its three columns, with exposed times (forward and
/// input-gradient use ep_o when the forward collective is over EP, else
/// tp_o; weight-gradient uses dp_o).
pub fn layer_row(
    record: &SimaiRecord,
    model: &CostModel,
    par: &SimaiParallelism,
    overlap: &OverlapRatios,
) -> Result<LayerRow, AnalyticalError> {
    let mut notes = Notes::default();
    layer_row_noted(record, model, par, overlap, &mut notes)
}

fn layer_row_noted(
    record: &SimaiRecord,
    model: &CostModel,
    par: &SimaiParallelism,
    overlap: &OverlapRatios,
    notes: &mut Notes,
) -> Result<LayerRow, AnalyticalError> {
    let line = record.line;
    let mut fwd = phase_comm(&record.fwd_comm, Phase::Forward, model, par, notes, line)?;
    let mut ig = phase_comm(&record.ig_comm, Phase::InputGrad, model, par, notes, line)?;
    let mut wg = phase_comm(&record.wg_comm, Phase::WeightGrad, model, par, notes, line)?;
    let fwd_overlap = if fwd.group == Some(SimaiGroup::Ep) {
        overlap.ep
    } else {
        overlap.tp
    };
    fwd.exposed_ns = exposed_ns(fwd.total_ns, fwd_overlap);
    ig.exposed_ns = exposed_ns(ig.total_ns, fwd_overlap);
    wg.exposed_ns = exposed_ns(wg.total_ns, overlap.dp);
    Ok(LayerRow {
        name: record.name.clone(),
        line,
        fwd_compute_ns: record.fwd_compute_ns,
        wg_compute_ns: record.wg_compute_ns,
        ig_compute_ns: record.ig_compute_ns,
        fwd,
        wg,
        ig,
    })
}

/// Run the SimAI-compatible mode on a parsed workload: resolve the
/// configuration against the header, cost every record in file order and
/// sum the report. The result carries the parser's warnings and this mode's
/// own assumptions (defaults taken, vpp/ga defaulted, records skipped, ...).
pub fn analyse(
    workload: &SimaiWorkload,
    config: &AnalyticalConfig,
) -> Result<AnalyticalReport, AnalyticalError> {
    let header = &workload.header;
    let (cluster, config_warnings) = config.resolve(header)?;
    let par = SimaiParallelism::new(header, cluster.world_size)?;
    let model = CostModel::new(cluster, config.tables.clone(), par.tp, par.ep)?;
    let overlap = config.overlap;

    let mut notes = Notes::default();
    let mut layers = Vec::with_capacity(workload.records.len());
    let mut exposed = ExposedComm::default();
    let mut compute_ns = 0u64;
    let mut bubble_sum: u128 = 0;
    for record in &workload.records {
        let row = layer_row_noted(record, &model, &par, &overlap, &mut notes)?;
        for c in [row.fwd_compute_ns, row.ig_compute_ns, row.wg_compute_ns] {
            compute_ns = add(compute_ns, c, "the total compute time")?;
        }
        let fwd_ig = add(row.fwd.exposed_ns, row.ig.exposed_ns, "the exposed comm")?;
        if row.fwd.group == Some(SimaiGroup::Ep) {
            exposed.ep = add(exposed.ep, fwd_ig, "the exposed EP comm")?;
        } else {
            exposed.tp = add(exposed.tp, fwd_ig, "the exposed TP comm")?;
        }
        if row.wg.group == Some(SimaiGroup::DpEp) {
            exposed.dp_ep = add(exposed.dp_ep, row.wg.exposed_ns, "the exposed DP_EP comm")?;
        } else {
            exposed.dp = add(exposed.dp, row.wg.exposed_ns, "the exposed DP comm")?;
        }
        if row.name != EMBEDDING_LAYER {
            bubble_sum += u128::from(row.fwd.total_ns)
                + u128::from(row.ig.total_ns)
                + u128::from(row.fwd_compute_ns)
                + u128::from(row.ig_compute_ns)
                + u128::from(row.wg_compute_ns);
        }
        layers.push(row);
    }
    let bubble = bubble_ns(bubble_sum, par.pp, par.ga, par.vpp)?;
    exposed.pp = pp_exposed_ns(header.pp_comm_bytes, par.vpp, par.ga, overlap.pp)?;
    let exposed_total = [exposed.dp_ep, exposed.tp, exposed.ep]
        .into_iter()
        .try_fold(exposed.dp, |a, b| add(a, b, "the total exposed comm"))?;
    let total = [exposed_total, bubble, exposed.pp]
        .into_iter()
        .try_fold(compute_ns, |a, b| add(a, b, "the iteration time"))?;

    let mut warnings: Vec<Diagnostic> = workload
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .cloned()
        .collect();
    warnings.extend(config_warnings);
    let defaulted: Vec<&str> = ["vpp", "ga"]
        .into_iter()
        .filter(|k| header.defaulted.contains(k))
        .collect();
    if !defaulted.is_empty() {
        let keys = defaulted.join(" and ");
        warnings.push(Diagnostic::warning(format!(
            "the bubble and the total use the defaulted {keys} = 1; SimAI's own report prints \
             `NaN or Inf` for them with this header"
        )));
    }
    if workload.skipped_records > 0 {
        warnings.push(Diagnostic::warning(format!(
            "{} record(s) could not be read and are left out of every figure",
            workload.skipped_records
        )));
    }
    if !header.checkpoints.is_empty() || !header.checkpoint_initiates.is_empty() {
        warnings.push(Diagnostic::warning(
            "checkpoints (activation recompute) are not modelled in this mode, as in SimAI-Analytical",
        ));
    }
    if par.pp == 1 && exposed.pp > 0 {
        warnings.push(Diagnostic::warning(format!(
            "PP is 1 but pp_o < 1 charges {} ns of pipeline sends, as SimAI's formula does",
            exposed.pp
        )));
    }
    warnings.extend(notes.warnings.into_iter().map(|(_, d)| d));

    let share = |v| share_percent(v, total);
    Ok(AnalyticalReport {
        schema_version: AnalyticalReport::SCHEMA_VERSION,
        mode: "simai",
        iteration_time_ns: total,
        compute_ns,
        bubble_ns: bubble,
        exposed_comm_ns: exposed,
        exposed_comm_total_ns: exposed_total,
        shares_percent: Shares {
            dp: share(exposed.dp),
            dp_ep: share(exposed.dp_ep),
            tp: share(exposed.tp),
            ep: share(exposed.ep),
            pp: share(exposed.pp),
            bubble: share(bubble),
            compute: share(compute_ns),
            exposed_comm: share(exposed_total),
        },
        parallelism: par,
        cluster,
        overlap,
        layers,
        warnings,
    })
}
