//! SimAI-compatible mode: SimAI-Analytical's cost model and report
//! (docs/FORMATS.md §4), reproducing its numbers to the printed
//! microsecond from a parsed SimAI/AICB workload.
//!
//! - [`tables`]: bandwidth-efficiency tables (built-in = SimAI's; user CSV);
//! - [`cost`]: placement, bus bandwidth and the per-collective time
//!   ([`collective_time_ns`], usable by any simulator);
//! - [`config`]: user configuration, presets, resolved cluster, parallelism;
//! - [`report`]: per-layer rows, summary, [`analyse`];
//! - [`csv`]: SimAI's EndToEnd CSV layout;
//! - [`error`]: invalid configurations ([`AnalyticalError`]).
//!
//! For the web page, [`simulate_bytes`] takes the file's bytes and a
//! configuration value and returns a serialisable report.

pub mod config;
pub mod cost;
pub mod csv;
pub mod error;
pub mod groups;
pub mod report;
pub mod tables;

pub use config::{AnalyticalConfig, ClusterConfig, OverlapRatios, SimaiParallelism};
pub use cost::{
    bus_factor, busbw, collective_time_ns, group_size, ratio_source, small_message_ns, Busbw,
    CollectiveCost, CostModel, CostPath, Phase, SimaiGroup, SimaiPlacement,
};
pub use csv::end_to_end_csv;
pub use error::AnalyticalError;
pub use report::{analyse, AnalyticalReport, ExposedComm, LayerRow, PhaseComm, Shares};
pub use tables::{RatioTable, RatioTables, TableKind};

use crate::diag::Diagnostic;
use crate::formats::simai::{self, SimaiWorkload};

/// Why [`simulate_bytes`] produced no report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimulateError {
    /// The workload could not be read: the parser's error, or every error
    /// diagnostic when no record could be read (a workload with some
    /// readable records is analysed without the others, warned).
    #[error("{}", .0.first().map(|d| d.message.as_str()).unwrap_or("failed to parse the workload"))]
    Parse(Vec<Diagnostic>),
    /// The configuration is invalid for this workload.
    #[error(transparent)]
    Config(#[from] AnalyticalError),
}

/// Parse a SimAI/AICB workload (`file` names it in diagnostics) and run the
/// SimAI-compatible mode on it. Bytes and a configuration in, a report out;
/// no IO. A workload with unreadable records is simulated without them
/// (a warning names them); one with no readable record is refused
/// ([`SimulateError::Parse`]).
pub fn simulate_bytes(
    file: &str,
    bytes: &[u8],
    config: &AnalyticalConfig,
) -> Result<AnalyticalReport, SimulateError> {
    let workload = parse_workload(file, bytes)?;
    Ok(analyse(&workload, config)?)
}

/// Decode and parse a workload, refusing one that gave no record.
pub fn parse_workload(file: &str, bytes: &[u8]) -> Result<SimaiWorkload, SimulateError> {
    let (text, lossy) =
        crate::formats::decode_text(file, bytes).map_err(|d| SimulateError::Parse(vec![d]))?;
    let workload = simai::parse(file, &text).map_err(|d| SimulateError::Parse(vec![d]))?;
    prepare_workload(file, workload, lossy)
}

/// A parsed workload made ready for the analytical model, as
/// [`parse_workload`] makes it: refused when no record could be read,
/// else with notes for the skipped records and (`lossy`: the file was not
/// valid UTF-8) the replaced bytes. For a caller that parsed it already.
pub fn prepare_workload(
    file: &str,
    mut workload: SimaiWorkload,
    lossy: bool,
) -> Result<SimaiWorkload, SimulateError> {
    let errors: Vec<Diagnostic> = workload
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .cloned()
        .collect();
    // Refused only when no record could be read; otherwise the skipped
    // records are left out with a warning naming them.
    if !errors.is_empty() && workload.records.is_empty() {
        return Err(SimulateError::Parse(errors));
    }
    if let Some(note) = crate::inspect::skipped_note(
        file,
        "records",
        u64::from(workload.skipped_records),
        &workload.diagnostics,
    ) {
        workload.diagnostics.push(Diagnostic::warning(note));
    }
    if lossy {
        workload.diagnostics.insert(
            0,
            Diagnostic::warning(format!(
                "`{file}` is not valid UTF-8; invalid bytes were replaced"
            )),
        );
    }
    Ok(workload)
}

#[cfg(test)]
mod tests;
