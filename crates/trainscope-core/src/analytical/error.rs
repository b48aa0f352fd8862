//! Invalid configurations of the SimAI-compatible cost model, as data.
//! Where SimAI wraps an unsigned integer or prints NaN, the project refuses
//! with an [`AnalyticalError`] that names the group, its placement and the
//! numbers involved.

use super::cost::{GroupKind, Placement};
use super::tables::TableKind;
use crate::diag::Diagnostic;

/// Why a configuration cannot be simulated in the SimAI-compatible mode.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalyticalError {
    /// No world size given and the workload header has no `all_gpus`.
    #[error("no world size: give one (--world / -g) or write `all_gpus:` in the workload header")]
    MissingWorldSize,

    /// A count that must be at least 1 is 0.
    #[error("{what} must be at least 1, got 0")]
    ZeroCount {
        /// e.g. "world size", "GPUs per server".
        what: &'static str,
    },

    /// A bus bandwidth that is not a finite positive number.
    #[error("{what} must be a finite number of GB/s above 0, got {value_gbps}")]
    InvalidBandwidth {
        /// "NVLink busbw" or "NIC busbw".
        what: &'static str,
        value_gbps: f64,
    },

    /// An overlap ratio out of range (or NaN).
    #[error("{name} overlap ratio must be {range}, got {value}")]
    InvalidOverlap {
        /// "DP", "TP", "EP" or "PP".
        name: &'static str,
        value: f64,
        /// The accepted range, as text ("in [0, 1]" or "in (0, 1] (SimAI divides the PP time by it)").
        range: &'static str,
    },

    /// `--gpu-type` names no known GPU.
    #[error("unknown GPU type `{name}`; known: {known}")]
    UnknownGpuType { name: String, known: &'static str },

    /// `--nic-type` names no known NIC.
    #[error("unknown NIC type `{name}`; known: {known}")]
    UnknownNicType { name: String, known: &'static str },

    /// World size not a multiple of TP x PP, so DP is not an integer.
    #[error("world size {world} is not divisible by TP {tp} x PP {pp} = {product}, so the DP size is not an integer")]
    WorldNotDivisible {
        world: u64,
        tp: u64,
        pp: u64,
        product: u64,
    },

    /// DP not a multiple of EP, so DP/EP is not an integer.
    #[error("DP size {dp} (world {world} / (TP {tp} x PP {pp})) is not divisible by EP {ep}, so the DP_EP size is not an integer")]
    DpNotDivisibleByEp {
        dp: u64,
        ep: u64,
        world: u64,
        tp: u64,
        pp: u64,
    },

    /// A group placement with no node, GPU or NIC to run on (SimAI wraps an
    /// unsigned integer here and prints figures like 18446744069209552 us).
    #[error(
        "the {group} group of {group_size} ranks has no valid placement: {placement} ({detail})"
    )]
    InvalidPlacement {
        group: GroupKind,
        group_size: u64,
        placement: Placement,
        /// Which term is zero and the numbers it came from.
        detail: String,
    },

    /// A message above the largest row of the ratio table it needs.
    #[error("a {size_bytes}-byte {collective} over the {group} group ({group_size} ranks, placement {placement}) is above the largest row of the {table} ratio table ({max_bytes} bytes)")]
    MessageTooLarge {
        collective: &'static str,
        group: GroupKind,
        group_size: u64,
        placement: Placement,
        size_bytes: u64,
        table: TableKind,
        max_bytes: u64,
    },

    /// A time that does not fit in 64-bit nanoseconds.
    #[error("{what} overflows 64-bit nanoseconds ({detail})")]
    Overflow { what: &'static str, detail: String },
}

impl AnalyticalError {
    /// The error as an error [`Diagnostic`] with a hint on what to change.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(format!("invalid configuration: {self}"));
        let hint = match self {
            AnalyticalError::MissingWorldSize => Some("e.g. `--world 512`"),
            AnalyticalError::InvalidPlacement { .. } => {
                Some("raise NICs per server (-n_p_s) or GPUs per server (-g_p_s), or lower TP/EP")
            }
            AnalyticalError::MessageTooLarge { .. } => {
                Some("give a ratio table with larger rows (--ratio-table-dir)")
            }
            AnalyticalError::WorldNotDivisible { .. }
            | AnalyticalError::DpNotDivisibleByEp { .. } => {
                Some("the world size must be a multiple of TP x PP (x EP)")
            }
            _ => None,
        };
        match hint {
            Some(h) => d.with_hint(h),
            None => d,
        }
    }
}
