//! The groups of SimAI's analytical model ([`SimaiGroup`]: TP, EP, DP,
//! DP_EP) and where a group's ranks sit on servers ([`SimaiPlacement`]), the
//! vocabulary the cost functions ([`super::cost`]) and their errors
//! ([`super::error`]) share.

use crate::formats::simai::CommGroup;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The group a collective runs over, resolved (an unscoped all-reduce takes
/// its column's plain group, see [`SimaiGroup::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimaiGroup {
    /// Tensor parallel.
    Tp,
    /// Data parallel.
    Dp,
    /// Expert parallel.
    Ep,
    /// Data parallel within one expert group (DP / EP ranks).
    DpEp,
}

impl SimaiGroup {
    /// The parser's group in a column: TP, DP, EP, DP_EP as written; an
    /// unscoped all-reduce (`ALLREDUCE_ASYNC`) runs over TP in the forward and
    /// input-gradient columns and over DP in the weight-gradient column.
    pub fn resolve(group: CommGroup, phase: Phase) -> SimaiGroup {
        match group {
            CommGroup::Tp => SimaiGroup::Tp,
            CommGroup::Dp => SimaiGroup::Dp,
            CommGroup::Ep => SimaiGroup::Ep,
            CommGroup::DpEp => SimaiGroup::DpEp,
            CommGroup::Unscoped if phase == Phase::WeightGrad => SimaiGroup::Dp,
            CommGroup::Unscoped => SimaiGroup::Tp,
        }
    }

    /// SimAI's spelling: TP, DP, EP, DP_EP.
    pub fn name(self) -> &'static str {
        match self {
            SimaiGroup::Tp => "TP",
            SimaiGroup::Dp => "DP",
            SimaiGroup::Ep => "EP",
            SimaiGroup::DpEp => "DP_EP",
        }
    }
}

impl fmt::Display for SimaiGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which part of a layer an op or a collective belongs to: SimAI's comm
/// column (forward, input gradient, weight gradient). One type for the
/// analytical model and the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Forward column (sizes in (0, 4096) are raised to 4096).
    Forward,
    /// Input-gradient column.
    InputGrad,
    /// Weight-gradient column.
    WeightGrad,
}

/// Group size n of a collective in SimAI's model: in the forward and
/// input-gradient columns EP if the group is EP, else TP; in the
/// weight-gradient column DP/EP if the group is DP_EP, else DP.
pub fn group_size(group: SimaiGroup, phase: Phase, tp: u32, ep: u32, dp: u32, dp_ep: u32) -> u32 {
    match (phase, group) {
        (Phase::Forward | Phase::InputGrad, SimaiGroup::Ep) => ep,
        (Phase::Forward | Phase::InputGrad, _) => tp,
        (Phase::WeightGrad, SimaiGroup::DpEp) => dp_ep,
        (Phase::WeightGrad, _) => dp,
    }
}

/// Where a group's ranks sit, as SimAI's busbw call sees it: N nodes, g GPUs
/// of the group per node, k NICs per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SimaiPlacement {
    /// N: nodes the group spans.
    pub nodes: u64,
    /// g: the group's GPUs per node.
    pub gpus_per_node: u64,
    /// k: NICs per node available to the group.
    pub nics_per_node: u64,
}

impl fmt::Display for SimaiPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} node(s) x {} GPU(s) x {} NIC(s) per node",
            self.nodes, self.gpus_per_node, self.nics_per_node
        )
    }
}

impl SimaiPlacement {
    /// The placement of a group of `n` ranks with TP size `tp`, EP size `ep`,
    /// `p` GPUs and `k` NICs per server (integer division as SimAI writes it):
    ///
    /// - TP: tp <= P: (1, tp, K); else (tp/P, P, K)
    /// - EP: tp·n <= P: (1, P/tp, K); else ((tp·n)/P, max(P/tp, 1), tp > P ? K/P : K/tp)
    /// - DP: tp <= P: (n, P/tp, K/tp); else (n, 1, K/P)
    /// - DP_EP: tp·ep <= P: (n, P/(tp·ep), K/(tp·ep)); else (n, 1, K/P)
    ///
    /// A zero divisor gives a 0 term (then [`SimaiPlacement::validate`] refuses it).
    pub fn for_group(
        group: SimaiGroup,
        n: u32,
        tp: u32,
        ep: u32,
        p: u32,
        k: u32,
    ) -> SimaiPlacement {
        let (n, tp, ep, p, k) = (
            u64::from(n),
            u64::from(tp),
            u64::from(ep),
            u64::from(p),
            u64::from(k),
        );
        let div = |a: u64, b: u64| a.checked_div(b).unwrap_or(0);
        let (nodes, gpus_per_node, nics_per_node) = match group {
            SimaiGroup::Tp if tp <= p => (1, tp, k),
            SimaiGroup::Tp => (div(tp, p), p, k),
            SimaiGroup::Ep if tp * n <= p => (1, div(p, tp), k),
            SimaiGroup::Ep => (
                div(tp * n, p),
                div(p, tp).max(1),
                if tp > p { div(k, p) } else { div(k, tp) },
            ),
            SimaiGroup::Dp if tp <= p => (n, div(p, tp), div(k, tp)),
            SimaiGroup::Dp => (n, 1, div(k, p)),
            SimaiGroup::DpEp if tp * ep <= p => (n, div(p, tp * ep), div(k, tp * ep)),
            SimaiGroup::DpEp => (n, 1, div(k, p)),
        };
        SimaiPlacement {
            nodes,
            gpus_per_node,
            nics_per_node,
        }
    }
}
