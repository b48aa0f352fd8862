//! SimAI's EndToEnd CSV layout for an [`AnalyticalReport`]: a header line,
//! the summary line (file-name prefix, then each figure in microseconds with
//! its share), a second header line and one row per layer. Field by field
//! identical to SimAI-Analytical's `*-EndToEnd.csv` for the same numbers.
//!
//! Conventions (all as SimAI prints them on x86-64 Linux):
//! - microseconds are the integer ns divided by 1000 and rounded to the
//!   nearest integer, ties to even (C's `%.0f` of `ns / 1000.0`);
//! - shares and bandwidths have two decimals (`%.2f`, ties to even);
//! - a column with no collective prints algbw `-nan` and busbw `0.00`;
//! - a collective that took 0 ns prints `-nan`/`-nan` when it moved 0 bytes,
//!   otherwise algbw `inf` and busbw `inf` (or `-nan` for a 1-rank group,
//!   whose bus factor is 0).

use super::cost::bus_factor;
use super::report::{AnalyticalReport, LayerRow, PhaseComm};
use std::fmt::Write;

/// First header line of the EndToEnd CSV.
pub const SUMMARY_HEADER: &str = "File name, Expose DP comm, Expose DP_EP comm, Expose TP comm, Expose_EP_comm, Expose_PP_comm, bubble time, total comp, total exposed comm, Total time";

/// Header line of the per-layer rows.
pub const LAYER_HEADER: &str = "layer_name,Analytical_test,fwd compute,wg compute,ig compute,fwd exposed comm,wg exposed comm,ig exposed comm,fwd total comm,algbw,busbw,wg total comm,algbw,busbw,ig total comm,algbw,busbw";

/// Microseconds as SimAI prints them: round(ns / 1000), ties to even.
pub fn us_rounded(ns: u64) -> u64 {
    let (q, r) = (ns / 1000, ns % 1000);
    if r > 500 || (r == 500 && q % 2 == 1) {
        q + 1
    } else {
        q
    }
}

/// The two bandwidth cells (algbw, busbw) of a phase.
pub fn bandwidth_cells(p: &PhaseComm) -> (String, String) {
    let Some(collective) = p.collective else {
        return ("-nan".into(), "0.00".into());
    };
    match (p.algbw_gbps, p.busbw_gbps) {
        (Some(a), Some(b)) => (format!("{a:.2}"), format!("{b:.2}")),
        _ if p.size_bytes == 0 => ("-nan".into(), "-nan".into()),
        _ if bus_factor(collective, p.group_size) > 0.0 => ("inf".into(), "inf".into()),
        _ => ("inf".into(), "-nan".into()),
    }
}

/// The summary line: `prefix, DP (x%), DP_EP (x%), TP (x%), EP (x%), PP (x%),
/// bubble (x%), compute (x%), exposed (x%), total`. SimAI writes the result
/// file's name prefix as the first field (e.g. `r000-`).
pub fn summary_line(report: &AnalyticalReport, prefix: &str) -> String {
    let e = &report.exposed_comm_ns;
    let s = &report.shares_percent;
    let mut out = String::from(prefix);
    for (ns, share) in [
        (e.dp, s.dp),
        (e.dp_ep, s.dp_ep),
        (e.tp, s.tp),
        (e.ep, s.ep),
        (e.pp, s.pp),
        (report.bubble_ns, s.bubble),
        (report.compute_ns, s.compute),
        (report.exposed_comm_total_ns, s.exposed_comm),
    ] {
        let _ = write!(out, ", {} ({share:.2}%)", us_rounded(ns));
    }
    let _ = write!(out, ", {}", us_rounded(report.iteration_time_ns));
    out
}

/// One per-layer row.
pub fn layer_line(row: &LayerRow) -> String {
    let mut out = String::with_capacity(128);
    let _ = write!(
        out,
        "{},Analytical_test,{},{},{},{},{},{}",
        row.name,
        us_rounded(row.fwd_compute_ns),
        us_rounded(row.wg_compute_ns),
        us_rounded(row.ig_compute_ns),
        us_rounded(row.fwd.exposed_ns),
        us_rounded(row.wg.exposed_ns),
        us_rounded(row.ig.exposed_ns),
    );
    for p in [&row.fwd, &row.wg, &row.ig] {
        let (a, b) = bandwidth_cells(p);
        let _ = write!(out, ",{},{a},{b}", us_rounded(p.total_ns));
    }
    out
}

/// The whole EndToEnd CSV (lines end with `\n`, including the last).
pub fn end_to_end_csv(report: &AnalyticalReport, prefix: &str) -> String {
    let mut out = String::with_capacity(256 + report.layers.len() * 100);
    out.push_str(SUMMARY_HEADER);
    out.push('\n');
    out.push_str(&summary_line(report, prefix));
    out.push('\n');
    out.push_str(LAYER_HEADER);
    out.push('\n');
    for row in &report.layers {
        out.push_str(&layer_line(row));
        out.push('\n');
    }
    out
}
