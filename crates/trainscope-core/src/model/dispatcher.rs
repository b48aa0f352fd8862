//! How a mixture-of-experts layer moves its tokens (issue 24): Megatron's
//! token dispatchers ([`Dispatcher`]: `alltoall`, `allgather`, `flex` =
//! DeepEP / HybridEP), the kernels each launches around the routed experts
//! with and without Megatron's router and permute fusions ([`MoeKernels`]),
//! how many bytes a rank puts on the wire per dispatch
//! ([`Dispatcher::wire_elements_per_token`]), and the load imbalance of the
//! busiest expert rank. The job builder turns these into ops; the engine
//! never sees a dispatcher.
//!
//! Sources (the full tables in `docs/SOFTWARE-STACK-DATA.md` §4-§5, read at
//! Megatron-LM `d98e8a6`, `megatron/core/transformer/moe/`):
//! - kernel counts per stage of the layer are midpoints of the code-path
//!   ranges there: top-k with score function and aux loss ~72 kernels
//!   forward + backward unfused, ~31 with `--moe-router-fusion`
//!   (second-hand, `SOFTWARE-STACK.md`; split 1 : 2 between forward and
//!   backward, an assumption); the all-to-all dispatcher's preprocessing
//!   (token counts, split sizes) 6-10 small kernels; the first permutation
//!   6-10 kernels unfused, 1 fused (`fused_permute_with_probs`); the sort of
//!   chunks by local expert 1-2 / 1; unpermute 4-5 / 1; DeepEP's layout
//!   kernel plus metadata 2.
//! - wire bytes: the `alltoall` dispatcher sends each (token, expert) pair
//!   to the expert's rank (top-k copies of a token, duplicates included);
//!   `allgather` gathers every token of the EP group on every rank and
//!   reduce-scatters the outputs; DeepEP and HybridEP send a token once per
//!   destination rank inside a node and once per destination node over
//!   RDMA, forwarding over NVLink inside the node (DeepEP's README, "aligned
//!   with the group-limited gating": dispatch deduplicated per node), so
//!   with balanced routing a token crosses the NIC once per remote node it
//!   reaches, not once per expert.
//! - every dropless dispatcher synchronises the host once per MoE layer in
//!   the forward (`alltoall`: `d2h_event.synchronize()`; `allgather`:
//!   `.cpu()` of the local map; DeepEP's normal dispatch hands the receive
//!   counts to the host; HybridEP unless the permuted-token count is
//!   given): the sync itself is [`crate::model::stack::StackSettings::syncs_before_experts`].
//!
//! What is not modelled: DeepEP's SM budget taken from the GEMMs, FP8
//! dispatch, token dropping and capacity factors, routing that is not
//! uniform beyond the one imbalance factor.

use crate::named::Named;
use serde::{Deserialize, Serialize};

/// Megatron's `--moe-token-dispatcher-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dispatcher {
    /// NCCL all-to-all of every (token, expert) pair, token counts copied
    /// to the host first (Megatron's default for EP > 1).
    #[default]
    #[serde(rename = "alltoall")]
    AllToAll,
    /// All-gather every token of the EP group, each rank keeps its
    /// experts' tokens; reduce-scatter the outputs.
    #[serde(rename = "allgather")]
    AllGather,
    /// DeepEP / HybridEP fused dispatch and combine kernels, deduplicated
    /// per destination rank and node.
    Flex,
}

impl Named for Dispatcher {
    const KIND: &'static str = "token dispatcher";
    const CHOICES: &'static [Dispatcher] = &Dispatcher::ALL;
    /// DeepEP and HybridEP are Megatron's `flex` dispatcher's back ends.
    const ALIASES: &'static [(&'static str, Dispatcher)] =
        &[("deepep", Dispatcher::Flex), ("hybridep", Dispatcher::Flex)];
    fn name(self) -> &'static str {
        Dispatcher::name(self)
    }
}

impl Dispatcher {
    /// Every dispatcher, the default first.
    pub const ALL: [Dispatcher; 3] = [
        Dispatcher::AllToAll,
        Dispatcher::AllGather,
        Dispatcher::Flex,
    ];

    /// The stable name (Megatron's values; CLI, JSON, the page).
    pub fn name(self) -> &'static str {
        match self {
            Dispatcher::AllToAll => "alltoall",
            Dispatcher::AllGather => "allgather",
            Dispatcher::Flex => "flex",
        }
    }

    /// Hidden-state vectors one rank sends per token of its own in one
    /// dispatch (the combine returns as many): `experts` routed experts,
    /// `top_k` per token, balanced routing over an EP group of `ep` ranks
    /// with `per_node` of them on each node. For `allgather` this is the
    /// gathered tensor (EP vectors per token, the collective's full size).
    /// `flex` is written as the size of an NCCL all-to-all that puts the
    /// same bytes on the NIC (inter-node) or on NVLink (one node), which is
    /// how the engine costs it.
    pub fn wire_elements_per_token(self, experts: u32, top_k: u32, ep: u32, per_node: u32) -> f64 {
        let ep = ep.max(1);
        let k = top_k.max(1);
        match self {
            Dispatcher::AllToAll => f64::from(k),
            Dispatcher::AllGather => f64::from(ep),
            Dispatcher::Flex => {
                let l = per_node.clamp(1, ep);
                let n = f64::from(ep);
                if l < ep {
                    // Once per node reached: the engine's NIC term moves
                    // (n - l) / n of the size, the dedup'd bytes are
                    // (nodes - 1) x P(node) per token.
                    let p = reach_probability(experts, k, experts / ep * l);
                    p * n / f64::from(l)
                } else {
                    // Once per rank reached: the NVLink term moves
                    // (n - 1) / n of the size.
                    reach_probability(experts, k, experts / ep) * n
                }
            }
        }
    }
}

/// Probability that a token's `top_k` distinct experts, drawn uniformly
/// from `experts`, include at least one of a set of `held` experts:
/// 1 - C(E - held, k) / C(E, k).
pub fn reach_probability(experts: u32, top_k: u32, held: u32) -> f64 {
    let e = f64::from(experts.max(1));
    let held = f64::from(held.min(experts));
    let mut miss = 1.0;
    for i in 0..top_k.min(experts) {
        let i = f64::from(i);
        let free = e - held - i;
        if free <= 0.0 {
            return 1.0;
        }
        miss *= free / (e - i);
    }
    1.0 - miss
}

/// Kernels launched around the routed experts of one MoE layer and
/// micro-batch, per phase: `[forward, backward]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeKernels {
    /// Score function, top-k, routing map and aux loss (the router's GEMM
    /// is an op of its own).
    pub routing: [u32; 2],
    /// Token counts and split sizes before the dispatch, and the permute(s)
    /// into expert order.
    pub dispatch: [u32; 2],
    /// Unsort and unpermute after the combine.
    pub combine: [u32; 2],
}

/// Unfused top-k + score function + aux loss, forward (backward twice).
const ROUTING_UNFUSED: u32 = 24;
/// The same with `--moe-router-fusion` (TE's fused top-k and aux-loss
/// kernels plus the gating's casts and sums), forward.
const ROUTING_FUSED: u32 = 10;
/// The all-to-all dispatcher's preprocessing (`routing_map.sum`, split
/// sizes, slices), forward only.
const PREPROCESS_ALLTOALL: u32 = 8;
/// The all-gather dispatcher's local map and counts, forward only.
const PREPROCESS_ALLGATHER: u32 = 6;
/// DeepEP's `get_dispatch_layout` and metadata, forward only.
const PREPROCESS_FLEX: u32 = 2;
/// Unfused permutation (transpose, argsort, slices, index_select of
/// tokens and probs).
const PERMUTE_UNFUSED: u32 = 8;
/// Unfused unpermutation (probs multiply, zeros, scatter_add, cast).
const UNPERMUTE_UNFUSED: u32 = 5;
/// Unfused sort / unsort of chunks by local expert (split + cat).
const SORT_CHUNKS_UNFUSED: u32 = 2;

impl MoeKernels {
    /// The kernels of `dispatcher` with or without Megatron's router and
    /// permute fusions, for `local_experts` experts on the rank (the sort
    /// of chunks by expert runs only with more than one).
    pub fn of(dispatcher: Dispatcher, fused: bool, local_experts: u64) -> MoeKernels {
        let routing = if fused {
            ROUTING_FUSED
        } else {
            ROUTING_UNFUSED
        };
        let (permute, unpermute, sort) = if fused {
            (1, 1, 1)
        } else {
            (PERMUTE_UNFUSED, UNPERMUTE_UNFUSED, SORT_CHUNKS_UNFUSED)
        };
        let sort = if local_experts > 1 { sort } else { 0 };
        let (pre, dispatch, combine) = match dispatcher {
            // Permute, all-to-all, sort chunks by local expert.
            Dispatcher::AllToAll => (PREPROCESS_ALLTOALL, permute + sort, unpermute + sort),
            // Gather, then one local permutation into expert order.
            Dispatcher::AllGather => (PREPROCESS_ALLGATHER, permute, unpermute),
            // The fused kernel sends tokens already grouped per rank; one
            // local permute into expert order (HybridEP: inside its call).
            Dispatcher::Flex => (PREPROCESS_FLEX, permute, unpermute),
        };
        MoeKernels {
            routing: [routing, 2 * routing],
            dispatch: [pre + dispatch, dispatch],
            combine: [combine, combine],
        }
    }
}

/// How one job's MoE layers run, as the op list needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct MoeRun {
    pub dispatcher: Dispatcher,
    /// Megatron's router and permute fusions.
    pub fused: bool,
    /// The busiest expert rank's tokens over the mean, thousandths.
    pub imbalance_milli: u32,
}

impl Default for MoeRun {
    fn default() -> Self {
        MoeRun {
            dispatcher: Dispatcher::default(),
            fused: true,
            imbalance_milli: BALANCED_MILLI,
        }
    }
}

impl MoeRun {
    /// The busiest expert rank's tokens over the mean (>= 1).
    pub fn imbalance(&self) -> f64 {
        f64::from(self.imbalance_milli.max(BALANCED_MILLI)) / 1e3
    }
}

/// Load imbalance of the busiest expert rank, as a factor >= 1 on its
/// tokens (`--moe-imbalance`), kept in thousandths so settings stay exact
/// and hashable.
pub const BALANCED_MILLI: u32 = 1000;
/// Largest `--moe-imbalance` (every token of the group on one rank of 64).
pub const MAX_IMBALANCE: f64 = 64.0;

/// A `--moe-imbalance` factor as thousandths, or the message for a value
/// out of range.
pub fn imbalance_milli(factor: f64) -> Result<u32, String> {
    if factor.is_finite() && (1.0..=MAX_IMBALANCE).contains(&factor) {
        Ok((factor * 1e3).round() as u32)
    } else {
        Err(format!(
            "MoE imbalance {factor} is out of range; give the busiest expert rank's tokens over the mean, 1 (balanced) to {MAX_IMBALANCE}"
        ))
    }
}

/// The router and permute fusions as a user writes them: `on` / `off`
/// (also true/false, yes/no, 1/0), or the message.
pub fn parse_fusion(text: &str) -> Result<bool, String> {
    crate::limits::on_off(text).ok_or_else(|| {
        format!(
            "MoE fusion `{}` is neither on nor off; give on (fused router and permute kernels) or off",
            text.trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases() {
        for d in Dispatcher::ALL {
            assert_eq!(Dispatcher::from_name(d.name()), Some(d));
        }
        assert_eq!(Dispatcher::from_name(" DeepEP "), Some(Dispatcher::Flex));
        assert!(Dispatcher::parse("nccl")
            .unwrap_err()
            .contains("alltoall, allgather, flex"));
    }

    #[test]
    fn reach_probability_matches_the_closed_form() {
        // One expert of 4, top-1: 1/4.
        assert!((reach_probability(4, 1, 1) - 0.25).abs() < 1e-12);
        // Top-2 of 4, holding 2: 1 - C(2,2)/C(4,2) = 5/6.
        assert!((reach_probability(4, 2, 2) - 5.0 / 6.0).abs() < 1e-12);
        // Holding more than E - k experts: always reached.
        assert_eq!(reach_probability(8, 4, 5), 1.0);
        assert_eq!(reach_probability(8, 4, 0), 0.0);
    }

    #[test]
    fn flex_sends_fewer_bytes_than_the_all_to_all_and_most_across_nodes() {
        // Qwen3-30B-A3B: 128 experts, top-8.
        let a2a = Dispatcher::AllToAll.wire_elements_per_token(128, 8, 16, 8);
        let inter = Dispatcher::Flex.wire_elements_per_token(128, 8, 16, 8);
        let intra = Dispatcher::Flex.wire_elements_per_token(128, 8, 8, 8);
        assert_eq!(a2a, 8.0);
        // Two nodes: each token crosses the NIC about once (NIC share
        // (n - l) / n = 1/2 of the size).
        assert!((inter * 0.5 - 1.0).abs() < 0.01, "{inter}");
        // One node: about 7 x 0.66 distinct remote ranks of 7.
        let remote = intra * 7.0 / 8.0;
        assert!(remote > 4.0 && remote < 5.0, "{remote}");
        assert_eq!(
            Dispatcher::AllGather.wire_elements_per_token(128, 8, 8, 8),
            8.0
        );
    }

    #[test]
    fn fusion_cuts_the_kernels_and_a_single_expert_skips_the_sort() {
        let unfused = MoeKernels::of(Dispatcher::AllToAll, false, 16);
        let fused = MoeKernels::of(Dispatcher::AllToAll, true, 16);
        let total = |k: MoeKernels| {
            k.routing[0]
                + k.routing[1]
                + k.dispatch[0]
                + k.dispatch[1]
                + k.combine[0]
                + k.combine[1]
        };
        assert_eq!(total(unfused), 24 + 48 + (8 + 10) + 10 + 7 + 7);
        assert_eq!(total(fused), 10 + 20 + (8 + 2) + 2 + 2 + 2);
        assert_eq!(
            MoeKernels::of(Dispatcher::AllToAll, true, 1).dispatch,
            [9, 1]
        );
        assert!(total(MoeKernels::of(Dispatcher::Flex, true, 16)) < total(fused));
    }

    #[test]
    fn fusion_reads_on_and_off() {
        assert_eq!(parse_fusion(" ON "), Ok(true));
        assert_eq!(parse_fusion("no"), Ok(false));
        assert!(parse_fusion("maybe").unwrap_err().contains("on"));
    }

    #[test]
    fn imbalance_is_checked() {
        assert_eq!(imbalance_milli(1.25), Ok(1250));
        assert!(imbalance_milli(0.9).is_err());
        assert!(imbalance_milli(f64::NAN).is_err());
    }
}
