//! Invalid configurations of the SimAI-compatible cost model, as data.
//! Where SimAI wraps an unsigned integer or prints NaN, the project refuses
//! with an [`AnalyticalError`] that names the group, its placement and the
//! numbers involved.

use super::groups::{SimaiGroup, SimaiPlacement};
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
        /// The value given, GB/s.
        value_gbps: f64,
    },

    /// A setting above its upper bound ([`crate::limits`], the same as the
    /// event mode's and the page's).
    #[error("{what}: {reason}")]
    OutOfRange {
        /// e.g. "GPUs per server", "NIC busbw".
        what: &'static str,
        /// Why, starting with the value.
        reason: String,
    },

    /// An overlap ratio out of range (or NaN).
    #[error("{name} overlap ratio must be {range}, got {value}")]
    InvalidOverlap {
        /// "DP", "TP", "EP" or "PP".
        name: &'static str,
        /// The value given.
        value: f64,
        /// The accepted range, as text ("in [0, 1]" or "in (0, 1] (SimAI divides the PP time by it)").
        range: &'static str,
    },

    /// `--gpu-type` names no known GPU.
    #[error("unknown GPU type `{name}`; known: {known}")]
    UnknownGpuType {
        /// The name given.
        name: String,
        /// The known names.
        known: &'static str,
    },

    /// `--nic-type` names no known NIC.
    #[error("unknown NIC type `{name}`; known: {known}")]
    UnknownNicType {
        /// The name given.
        name: String,
        /// The known names.
        known: &'static str,
    },

    /// World size not a multiple of TP x PP, so DP is not an integer.
    #[error("world size {world} is not divisible by TP {tp} x PP {pp} = {product}, so the DP size is not an integer")]
    WorldNotDivisible {
        /// World size.
        world: u64,
        /// TP size.
        tp: u64,
        /// PP size.
        pp: u64,
        /// TP x PP.
        product: u64,
    },

    /// DP not a multiple of EP, so DP/EP is not an integer.
    #[error("DP size {dp} (world {world} / (TP {tp} x PP {pp})) is not divisible by EP {ep}, so the DP_EP size is not an integer")]
    DpNotDivisibleByEp {
        /// DP size.
        dp: u64,
        /// EP size.
        ep: u64,
        /// World size.
        world: u64,
        /// TP size.
        tp: u64,
        /// PP size.
        pp: u64,
    },

    /// A group placement with no node, GPU or NIC to run on (SimAI wraps an
    /// unsigned integer here and prints figures like 18446744069209552 us).
    #[error(
        "the {group} group of {group_size} ranks has no valid placement: {placement} ({detail})"
    )]
    InvalidPlacement {
        /// The group.
        group: SimaiGroup,
        /// Its ranks n.
        group_size: u64,
        /// Its placement (with the zero term).
        placement: SimaiPlacement,
        /// Which term is zero and the numbers it came from.
        detail: String,
    },

    /// A message above the largest row of the ratio table it needs.
    #[error("a {size_bytes}-byte {collective} over the {group} group ({group_size} ranks, placement {placement}) is above the largest row of the {table} ratio table ({max_bytes} bytes)")]
    MessageTooLarge {
        /// The collective (all-reduce, ...).
        collective: &'static str,
        /// The group.
        group: SimaiGroup,
        /// Its ranks n.
        group_size: u64,
        /// Its placement.
        placement: SimaiPlacement,
        /// The message size, bytes.
        size_bytes: u64,
        /// The table looked up.
        table: TableKind,
        /// The table's largest row, bytes.
        max_bytes: u64,
    },

    /// A time that does not fit in 64-bit nanoseconds.
    #[error("{what} overflows 64-bit nanoseconds ({detail})")]
    Overflow {
        /// Which figure.
        what: &'static str,
        /// The numbers it came from.
        detail: String,
    },
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
