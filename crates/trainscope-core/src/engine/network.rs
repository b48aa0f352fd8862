//! The network model: where ranks sit ([`Placement`]), how long a collective
//! or transfer takes ([`CollectiveCost`], implemented by [`NetworkModel`]),
//! and which part of it crosses node NICs (that part slows down when flows
//! share a node's NICs; the engine does the sharing).
//!
//! Placement: rank = coordinates mixed in a configurable order, Megatron's by
//! default (TP fastest, then DP, then PP). Node of a rank = rank / g. EP
//! groups are `ep` consecutive DP indices; DP_EP groups are the DP indices
//! with the same position modulo `ep`.
//!
//! Costs ([`NetworkModel`]), S bytes over a group of n ranks that spans N
//! nodes with at most L members per node, GB = 2^30 bytes, time_ns(S, B) =
//! S / (B GB/s) in ns:
//! - level: N = 1 is NVLink (bandwidth V per GPU, latency a_nv); otherwise
//!   the NICs (a_nic). A node's NIC capacity k*C/o (o = oversubscription) is
//!   shared by its g GPUs, and a node hosts g/L groups of this kind at once,
//!   so one group's ring gets B = min(V, k*C*L/(o*g)) across nodes.
//! - ring all-reduce: 2(n-1)a + time_ns(2(n-1)/n * S, B).
//! - tree (hierarchical) all-reduce across nodes: intra-node ring
//!   reduce-scatter (L-1)a_nv + time_ns((L-1)/L * S, V), inter-node tree
//!   all-reduce of each S/L shard 2*ceil(log2 N)*a_nic +
//!   time_ns(2*S/L, k*C/(o*g)), intra-node all-gather like the
//!   reduce-scatter. Inside one node it is the ring.
//! - ring all-gather / reduce-scatter (S = gathered size): (n-1)a +
//!   time_ns((n-1)/n * S, B).
//! - pairwise all-to-all: (n-1)a + max(time_ns((L-1)/n * S, V),
//!   time_ns((n-L)/n * S, k*C/(o*g))).
//! - point-to-point: a + time_ns(S, V) inside a node, else
//!   a_nic + time_ns(S, min(V, k*C/(o*g))).
//!
//! The NIC part of a cost (what sharing stretches) is the bandwidth term of
//! the inter-node level.

use crate::engine::config::{Algorithm, Dim, NetworkConfig, PlacementOrder};
use crate::engine::spec::{CollectiveKind, GroupKind, Parallelism, Phase};
use crate::engine::SimError;
use serde::Serialize;

/// Coordinates of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Coords {
    pub tp: u32,
    pub dp: u32,
    pub pp: u32,
}

/// How a group sits on the cluster, as the cost function needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GroupPlacement {
    /// Distinct nodes the group's members are on (N).
    pub nodes: u32,
    /// Most members on one node (L).
    pub members_per_node: u32,
    /// GPUs per node (g).
    pub gpus_per_node: u32,
    /// The job's parallel sizes (the SimAI-compatible function needs tp, ep).
    pub parallel: Parallelism,
}

/// Where ranks are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub parallel: Parallelism,
    pub order: PlacementOrder,
    pub gpus_per_node: u32,
}

impl Placement {
    /// A placement; sizes must be at least 1.
    pub fn new(parallel: Parallelism, order: PlacementOrder, gpus_per_node: u32) -> Placement {
        Placement {
            parallel,
            order,
            gpus_per_node: gpus_per_node.max(1),
        }
    }

    fn size(&self, d: Dim) -> u64 {
        u64::from(match d {
            Dim::Tp => self.parallel.tp,
            Dim::Dp => self.parallel.dp,
            Dim::Pp => self.parallel.pp,
        })
    }

    /// Global rank of `c`.
    pub fn rank_of(&self, c: Coords) -> u32 {
        let mut rank = 0u64;
        let mut stride = 1u64;
        for d in self.order.0 {
            let x = u64::from(match d {
                Dim::Tp => c.tp,
                Dim::Dp => c.dp,
                Dim::Pp => c.pp,
            });
            rank += x * stride;
            stride *= self.size(d);
        }
        u32::try_from(rank).unwrap_or(u32::MAX)
    }

    /// Coordinates of `rank`.
    pub fn coords_of(&self, rank: u32) -> Coords {
        let mut r = u64::from(rank);
        let mut c = Coords {
            tp: 0,
            dp: 0,
            pp: 0,
        };
        for d in self.order.0 {
            let s = self.size(d).max(1);
            let x = (r % s) as u32;
            r /= s;
            match d {
                Dim::Tp => c.tp = x,
                Dim::Dp => c.dp = x,
                Dim::Pp => c.pp = x,
            }
        }
        c
    }

    /// Node hosting `rank`.
    pub fn node_of(&self, rank: u32) -> u32 {
        rank / self.gpus_per_node
    }

    /// The ranks on `node` (empty past the last node).
    pub fn node_ranks(&self, node: u32) -> std::ops::Range<u32> {
        let world = self.parallel.world();
        let gpn = u64::from(self.gpus_per_node);
        let lo = (u64::from(node) * gpn).min(world);
        let hi = ((u64::from(node) + 1) * gpn).min(world);
        lo as u32..hi as u32
    }

    /// The members of `rank`'s group of kind `group`, ascending. For PP this
    /// is the whole pipeline (the ranks with the same TP and DP index).
    pub fn group_members(&self, rank: u32, group: GroupKind) -> Vec<u32> {
        let c = self.coords_of(rank);
        let p = self.parallel;
        let ep = p.ep.max(1);
        let mut out: Vec<u32> = match group {
            GroupKind::Tp => (0..p.tp)
                .map(|t| self.rank_of(Coords { tp: t, ..c }))
                .collect(),
            GroupKind::Dp => (0..p.dp)
                .map(|d| self.rank_of(Coords { dp: d, ..c }))
                .collect(),
            GroupKind::Pp => (0..p.pp)
                .map(|s| self.rank_of(Coords { pp: s, ..c }))
                .collect(),
            GroupKind::Ep | GroupKind::DpEp if p.etp.is_some() => {
                // The expert mesh over the stage's TP x DP ranks: local
                // index l = tp + TP x dp = etp + ETP x (ep + EP x edp).
                let (tp, etp) = (p.tp.max(1), p.expert_tp());
                let local = |c: Coords| c.tp + tp * c.dp;
                let at = |l: u32| {
                    self.rank_of(Coords {
                        tp: l % tp,
                        dp: l / tp,
                        ..c
                    })
                };
                let l = local(c);
                let (e_tp, e_ep, e_dp) = (l % etp, (l / etp) % ep, l / (etp * ep));
                let expert_dp = (tp * p.dp) / (etp * ep);
                match group {
                    GroupKind::Ep => (0..ep)
                        .map(|e| e_tp + etp * (e + ep * e_dp))
                        .filter(|l| *l < tp * p.dp)
                        .map(at)
                        .collect(),
                    _ => (0..expert_dp.max(1))
                        .map(|d| e_tp + etp * (e_ep + ep * d))
                        .filter(|l| *l < tp * p.dp)
                        .map(at)
                        .collect(),
                }
            }
            GroupKind::Ep => {
                let base = c.dp / ep * ep;
                (base..(base + ep).min(p.dp))
                    .map(|d| self.rank_of(Coords { dp: d, ..c }))
                    .collect()
            }
            GroupKind::Cp => {
                let cp = p.cp.max(1);
                let base = c.dp / cp * cp;
                (base..(base + cp).min(p.dp))
                    .map(|d| self.rank_of(Coords { dp: d, ..c }))
                    .collect()
            }
            GroupKind::DpEp => (c.dp % ep..p.dp)
                .step_by(ep as usize)
                .map(|d| self.rank_of(Coords { dp: d, ..c }))
                .collect(),
            GroupKind::DpShard => {
                let n = p.hsdp_shard();
                let base = c.dp / n * n;
                (base..(base + n).min(p.dp))
                    .map(|d| self.rank_of(Coords { dp: d, ..c }))
                    .collect()
            }
            GroupKind::DpReplicate => (c.dp % p.hsdp_shard()..p.dp)
                .step_by(p.hsdp_shard() as usize)
                .map(|d| self.rank_of(Coords { dp: d, ..c }))
                .collect(),
        };
        out.sort_unstable();
        out
    }

    /// How `members` sit on nodes.
    pub fn placement_of(&self, members: &[u32]) -> GroupPlacement {
        let mut nodes: Vec<u32> = members.iter().map(|r| self.node_of(*r)).collect();
        nodes.sort_unstable();
        let mut distinct = 0u32;
        let mut most = 0u32;
        let mut i = 0;
        while i < nodes.len() {
            let mut j = i;
            while j < nodes.len() && nodes[j] == nodes[i] {
                j += 1;
            }
            distinct += 1;
            most = most.max((j - i) as u32);
            i = j;
        }
        GroupPlacement {
            nodes: distinct.max(1),
            members_per_node: most.max(1),
            gpus_per_node: self.gpus_per_node,
            parallel: self.parallel,
        }
    }
}

/// One collective (or transfer) to cost, as seen by one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct CollectiveRequest {
    pub collective: CollectiveKind,
    pub group: GroupKind,
    /// Members of the group (2 for a transfer).
    pub group_size: u32,
    /// Full (gathered) tensor size, bytes.
    pub size_bytes: u64,
    /// The column it comes from (SimAI raises small forward sizes).
    pub phase: Phase,
    pub placement: GroupPlacement,
}

/// A cost function refused a collective.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CostError {
    pub message: String,
}

/// Prices one collective. The built-in [`NetworkModel`] is one
/// implementation; the SimAI-compatible function is another.
pub trait CollectiveCost {
    /// Short name for messages and reports (`ring`, `tree`, `simai`).
    fn name(&self) -> &str;

    /// Duration of the collective on one rank, ns, without contention.
    fn cost_ns(&self, req: &CollectiveRequest) -> Result<u64, CostError>;

    /// The part of `cost_ns` (already computed as `total_ns`) that crosses
    /// the node's NICs and stretches when flows share them. Default: all of
    /// it when the group spans more than one node.
    fn nic_part_ns(&self, req: &CollectiveRequest, total_ns: u64) -> u64 {
        if req.placement.nodes > 1 {
            total_ns
        } else {
            0
        }
    }
}

/// The built-in cost model (ring or tree algorithm), formulas in the module
/// documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkModel {
    config: NetworkConfig,
    algorithm: Algorithm,
}

/// Seconds per byte to ns: 1e9 / 2^30.
const NS_PER_BYTE_AT_1GBPS: f64 = 1e9 / 1_073_741_824.0;

fn time_ns(bytes: f64, gbps: f64) -> f64 {
    if bytes <= 0.0 {
        0.0
    } else {
        bytes / gbps * NS_PER_BYTE_AT_1GBPS
    }
}

fn to_ns(x: f64) -> Result<u64, CostError> {
    if !x.is_finite() || !(0.0..1.8e19).contains(&x) {
        return Err(CostError {
            message: format!("a collective time of {x} ns is out of range"),
        });
    }
    Ok(x.round() as u64)
}

/// The split of one cost: fixed (latency, intra-node) and NIC bandwidth part.
struct Split {
    fixed: f64,
    nic: f64,
}

impl NetworkModel {
    /// A model for `config`; `algorithm` must be ring or tree.
    pub fn new(config: &NetworkConfig, algorithm: Algorithm) -> Result<NetworkModel, SimError> {
        config.validate()?;
        if algorithm == Algorithm::Simai {
            return Err(SimError::CostModelUnavailable("simai"));
        }
        Ok(NetworkModel {
            config: config.clone(),
            algorithm,
        })
    }

    fn split(&self, req: &CollectiveRequest) -> Split {
        let c = &self.config;
        let n = f64::from(req.group_size.max(1));
        let s = req.size_bytes as f64;
        let pl = &req.placement;
        let nodes = pl.nodes.max(1);
        let l = f64::from(pl.members_per_node.max(1));
        let g = f64::from(c.gpus_per_node.max(1));
        let v = c.nvlink_gbps;
        let node_nic = f64::from(c.nics_per_node) * c.nic_gbps / c.oversubscription;
        let per_gpu_nic = node_nic / g;
        let a_nv = c.nvlink_latency_ns as f64;
        let a_nic = c.nic_latency_ns as f64;
        let fixed = |x: f64| Split { fixed: x, nic: 0.0 };
        if req.group_size <= 1 && req.collective != CollectiveKind::SendRecv {
            return fixed(0.0);
        }
        let inter = nodes > 1;
        let ring_bw = if inter { v.min(node_nic * l / g) } else { v };
        let a = if inter { a_nic } else { a_nv };
        // A ring's bandwidth term: on the NICs when the group spans nodes.
        let ring = |steps: f64, bytes: f64| -> Split {
            let t = time_ns(bytes, ring_bw);
            if inter {
                Split {
                    fixed: steps * a,
                    nic: t,
                }
            } else {
                fixed(steps * a + t)
            }
        };
        match req.collective {
            CollectiveKind::AllReduce => {
                if self.algorithm == Algorithm::Tree && inter {
                    let intra = (l - 1.0) * a_nv + time_ns((l - 1.0) / l * s, v);
                    let depth = f64::from(32 - (nodes - 1).leading_zeros());
                    Split {
                        fixed: 2.0 * intra + 2.0 * depth * a_nic,
                        nic: time_ns(2.0 * s / l, per_gpu_nic),
                    }
                } else {
                    ring(2.0 * (n - 1.0), 2.0 * (n - 1.0) / n * s)
                }
            }
            CollectiveKind::AllGather | CollectiveKind::ReduceScatter => {
                ring(n - 1.0, (n - 1.0) / n * s)
            }
            CollectiveKind::AllToAll => {
                let intra = time_ns((l - 1.0) / n * s, v);
                if inter {
                    let nic = time_ns((n - l).max(0.0) / n * s, per_gpu_nic);
                    if nic >= intra {
                        Split {
                            fixed: (n - 1.0) * a,
                            nic,
                        }
                    } else {
                        fixed((n - 1.0) * a + intra)
                    }
                } else {
                    fixed((n - 1.0) * a + intra)
                }
            }
            CollectiveKind::SendRecv => {
                if inter {
                    Split {
                        fixed: a_nic,
                        nic: time_ns(s, v.min(per_gpu_nic)),
                    }
                } else {
                    fixed(a_nv + time_ns(s, v))
                }
            }
        }
    }
}

impl CollectiveCost for NetworkModel {
    fn name(&self) -> &str {
        self.algorithm.name()
    }

    fn cost_ns(&self, req: &CollectiveRequest) -> Result<u64, CostError> {
        let sp = self.split(req);
        to_ns(sp.fixed.round() + sp.nic.round())
    }

    fn nic_part_ns(&self, req: &CollectiveRequest, total_ns: u64) -> u64 {
        let sp = self.split(req);
        (sp.nic.round().max(0.0) as u64).min(total_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(tp: u32, dp: u32, pp: u32, g: u32) -> Placement {
        Placement::new(
            Parallelism {
                tp,
                dp,
                pp,
                ep: 1,
                cp: 1,
                etp: None,
                dp_shard: 0,
            },
            PlacementOrder::default(),
            g,
        )
    }

    #[test]
    fn megatron_order_tp_fastest() {
        let p = placement(2, 3, 4, 8);
        assert_eq!(
            p.rank_of(Coords {
                tp: 1,
                dp: 0,
                pp: 0
            }),
            1
        );
        assert_eq!(
            p.rank_of(Coords {
                tp: 0,
                dp: 1,
                pp: 0
            }),
            2
        );
        assert_eq!(
            p.rank_of(Coords {
                tp: 0,
                dp: 0,
                pp: 1
            }),
            6
        );
        for r in 0..24 {
            assert_eq!(p.rank_of(p.coords_of(r)), r);
        }
        assert_eq!(p.group_members(7, GroupKind::Tp), vec![6, 7]);
        assert_eq!(p.group_members(7, GroupKind::Dp), vec![7, 9, 11]);
        assert_eq!(p.group_members(7, GroupKind::Pp), vec![1, 7, 13, 19]);
        let other = Placement::new(
            p.parallel,
            PlacementOrder::from_name("pp-tp-dp").unwrap(),
            8,
        );
        assert_eq!(
            other.rank_of(Coords {
                tp: 0,
                dp: 0,
                pp: 1
            }),
            1
        );
        assert!(PlacementOrder::from_name("tp-tp-pp").is_none());
    }

    #[test]
    fn cp_groups_are_consecutive_ranks_after_tp() {
        // TP 2 x CP 2 x DP 2 x PP 2 (Megatron's tp-cp-dp-pp): the engine's
        // DP dimension holds DP x CP = 4 with CP fastest.
        let p = Placement::new(
            Parallelism {
                tp: 2,
                dp: 4,
                pp: 2,
                ep: 1,
                cp: 2,
                etp: None,
                dp_shard: 0,
            },
            PlacementOrder::default(),
            8,
        );
        assert_eq!(p.group_members(0, GroupKind::Cp), vec![0, 2]);
        assert_eq!(p.group_members(3, GroupKind::Cp), vec![1, 3]);
        assert_eq!(p.group_members(5, GroupKind::Cp), vec![5, 7]);
        assert_eq!(p.group_members(13, GroupKind::Cp), vec![13, 15]);
        // Gradients are reduced over DP x CP: every rank of the stage with
        // the same TP index.
        assert_eq!(p.group_members(5, GroupKind::Dp), vec![1, 3, 5, 7]);
        assert_eq!(p.parallel.group_size(GroupKind::Cp), 2);
        // A CP group of TP x CP = 4 ranks sits inside one node of 8.
        assert_eq!(p.placement_of(&p.group_members(5, GroupKind::Cp)).nodes, 1);
    }

    #[test]
    fn ep_groups_split_dp() {
        let p = Placement::new(
            Parallelism {
                tp: 1,
                dp: 4,
                pp: 1,
                ep: 2,
                cp: 1,
                etp: None,
                dp_shard: 0,
            },
            PlacementOrder::default(),
            8,
        );
        assert_eq!(p.group_members(3, GroupKind::Ep), vec![2, 3]);
        assert_eq!(p.group_members(3, GroupKind::DpEp), vec![1, 3]);
    }

    /// Expert TP 1 at TP 2 (MoE parallel folding): the EP groups are runs
    /// of the stage's local index tp + TP x dp, across TP ranks; expert DP
    /// strides them. A second stage's groups are its own ranks.
    #[test]
    fn folded_ep_groups_span_tp_and_dp() {
        let p = Placement::new(
            Parallelism {
                tp: 2,
                dp: 4,
                pp: 2,
                ep: 4,
                cp: 1,
                etp: Some(1),
                dp_shard: 0,
            },
            PlacementOrder::default(),
            8,
        );
        assert_eq!(p.group_members(1, GroupKind::Ep), vec![0, 1, 2, 3]);
        assert_eq!(p.group_members(6, GroupKind::Ep), vec![4, 5, 6, 7]);
        assert_eq!(p.group_members(1, GroupKind::DpEp), vec![1, 5]);
        assert_eq!(p.parallel.group_size(GroupKind::DpEp), 2);
        assert_eq!(p.group_members(9, GroupKind::Ep), vec![8, 9, 10, 11]);
        assert_eq!(p.group_members(14, GroupKind::DpEp), vec![10, 14]);
        // Expert TP = TP is the layout of EP carved out of DP.
        let q = Placement::new(
            Parallelism {
                etp: Some(2),
                ep: 2,
                ..p.parallel
            },
            PlacementOrder::default(),
            8,
        );
        let r = Placement::new(
            Parallelism {
                etp: None,
                ..q.parallel
            },
            PlacementOrder::default(),
            8,
        );
        for rank in 0..16 {
            for g in [GroupKind::Ep, GroupKind::DpEp] {
                assert_eq!(q.group_members(rank, g), r.group_members(rank, g));
            }
        }
    }

    #[test]
    fn ring_allreduce_formula_and_levels() {
        let net = NetworkConfig {
            nvlink_latency_ns: 0,
            nic_latency_ns: 0,
            ..NetworkConfig::default()
        };
        let m = NetworkModel::new(&net, Algorithm::Ring).unwrap();
        let p = placement(8, 4, 1, 8);
        let tp = p.placement_of(&p.group_members(0, GroupKind::Tp));
        assert_eq!((tp.nodes, tp.members_per_node), (1, 8));
        let req = CollectiveRequest {
            collective: CollectiveKind::AllReduce,
            group: GroupKind::Tp,
            group_size: 8,
            size_bytes: 1 << 30,
            phase: Phase::Forward,
            placement: tp,
        };
        // 2*7/8 GiB at 370.8 GB/s
        let want = (2.0 * 7.0 / 8.0 / 370.8 * 1e9_f64).round() as u64;
        assert_eq!(m.cost_ns(&req).unwrap(), want);
        assert_eq!(m.nic_part_ns(&req, want), 0);
        let dp = p.placement_of(&p.group_members(0, GroupKind::Dp));
        assert_eq!((dp.nodes, dp.members_per_node), (4, 1));
        let req = CollectiveRequest {
            group: GroupKind::Dp,
            group_size: 4,
            placement: dp,
            ..req
        };
        // across nodes: each of 8 GPUs gets one NIC's 48.5 GB/s
        let want = (2.0 * 3.0 / 4.0 / 48.5 * 1e9_f64).round() as u64;
        assert_eq!(m.cost_ns(&req).unwrap(), want);
        assert_eq!(m.nic_part_ns(&req, want), want);
    }

    #[test]
    fn tree_has_less_latency_across_many_nodes() {
        let net = NetworkConfig::default();
        let ring = NetworkModel::new(&net, Algorithm::Ring).unwrap();
        let tree = NetworkModel::new(&net, Algorithm::Tree).unwrap();
        let p = placement(8, 64, 1, 8);
        let pl = p.placement_of(&p.group_members(0, GroupKind::Dp));
        let req = CollectiveRequest {
            collective: CollectiveKind::AllReduce,
            group: GroupKind::Dp,
            group_size: 64,
            size_bytes: 4096,
            phase: Phase::WeightGrad,
            placement: pl,
        };
        assert!(tree.cost_ns(&req).unwrap() < ring.cost_ns(&req).unwrap());
    }
}
