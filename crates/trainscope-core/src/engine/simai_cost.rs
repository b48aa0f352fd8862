//! The SimAI-compatible collective cost as an engine [`CollectiveCost`]
//! ([`SimaiCost`]), so `--algorithm simai` prices every collective of an
//! event-level simulation exactly as the SimAI-compatible mode does
//! ([`crate::analytical::collective_time_ns`], docs/FORMATS.md §4).
//!
//! Mapping of an engine request to the analytical function:
//! - cluster: world = tp x dp x pp of the job, GPUs per server = the
//!   network's `gpus_per_node` (P), NICs per server = `nics_per_node` (K),
//!   NVLink and NIC bus bandwidths = `nvlink_gbps` / `nic_gbps` (GB/s,
//!   2^30 bytes); latencies and oversubscription do not exist in SimAI's
//!   model and are not applied;
//! - group: TP, EP, DP, DP_EP as they are; the group size n is the job's
//!   (TP: tp, EP: ep, DP: dp, DP_EP: dp / ep), which is SimAI's n;
//! - phase: forward, input-gradient, weight-gradient columns as they are
//!   (only the forward column raises sizes below 4096 bytes);
//! - the placement on servers is SimAI's own (from tp, ep, P, K), not the
//!   engine's rank placement.
//!
//! SimAI has no cost for stage-to-stage transfers (its pipeline enters only a
//! closed-form bubble), so point-to-point sends and collectives over the
//! pipeline group are priced by the built-in ring model ([`NetworkModel`])
//! with the same network settings; the report says so.
//!
//! Contention: SimAI's time is not split into latency and bandwidth; when a
//! group spans more than one node in the engine's placement the whole time is
//! treated as NIC time (it stretches when flows share a node's NICs), as the
//! trait's default does. A collective running alone takes exactly
//! `collective_time_ns`.

use crate::analytical::{self, ClusterConfig, CostModel, RatioTables};
use crate::engine::config::{Algorithm, NetworkConfig};
use crate::engine::network::{CollectiveCost, CollectiveRequest, CostError, NetworkModel};
use crate::engine::spec::{CollectiveKind, GroupKind, Parallelism};
use crate::engine::SimError;
use crate::formats::simai::Collective;

/// The SimAI-compatible cost function for one job on one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct SimaiCost {
    model: CostModel,
    p2p: NetworkModel,
}

/// Note added to reports of runs costed with [`SimaiCost`].
pub const SIMAI_P2P_NOTE: &str = "algorithm simai: every TP/EP/DP/DP_EP collective is costed with the SimAI-compatible function (no latency, SimAI's placement and bandwidth-efficiency tables); SimAI has no stage-to-stage transfer cost, so pipeline sends use the built-in ring model's point-to-point time";

impl SimaiCost {
    /// The cost function for a job of `parallel` sizes on `network`, with
    /// bandwidth-efficiency `tables` (SimAI's built-in ones:
    /// [`RatioTables::builtin`]).
    pub fn new(
        network: &NetworkConfig,
        parallel: Parallelism,
        tables: RatioTables,
    ) -> Result<SimaiCost, SimError> {
        network.validate()?;
        let world = u32::try_from(parallel.world()).map_err(|_| SimError::InvalidConfig {
            name: "world",
            reason: format!("{} ranks do not fit the SimAI model", parallel.world()),
        })?;
        let cluster = ClusterConfig {
            world_size: world.max(1),
            gpus_per_server: network.gpus_per_node,
            nics_per_server: network.nics_per_node,
            nvlink_busbw_gbps: network.nvlink_gbps,
            nic_busbw_gbps: network.nic_gbps,
        };
        let model = CostModel::new(cluster, tables, parallel.tp.max(1), parallel.ep.max(1))
            .map_err(|e| SimError::Cost {
                model: "simai".to_string(),
                message: e.to_string(),
            })?;
        Ok(SimaiCost {
            model,
            p2p: NetworkModel::new(network, Algorithm::Ring)?,
        })
    }

    /// The analytical cost model behind it.
    pub fn model(&self) -> &CostModel {
        &self.model
    }
}

/// The analytical module's names for an engine collective, group and phase;
/// `None` for what SimAI does not cost (point-to-point, the pipeline and
/// the context-parallel groups).
pub fn analytical_terms(
    req: &CollectiveRequest,
) -> Option<(Collective, analytical::SimaiGroup, analytical::Phase)> {
    let collective = match req.collective {
        CollectiveKind::AllReduce => Collective::AllReduce,
        CollectiveKind::AllGather => Collective::AllGather,
        CollectiveKind::ReduceScatter => Collective::ReduceScatter,
        CollectiveKind::AllToAll => Collective::AllToAll,
        CollectiveKind::SendRecv => return None,
    };
    let group = match req.group {
        GroupKind::Tp => analytical::SimaiGroup::Tp,
        GroupKind::Ep => analytical::SimaiGroup::Ep,
        GroupKind::Dp => analytical::SimaiGroup::Dp,
        GroupKind::DpEp => analytical::SimaiGroup::DpEp,
        // SimAI has no pipeline or context-parallel group: the built-in
        // network model costs them.
        // Nor HSDP's shard and replicate slices of DP.
        GroupKind::Pp | GroupKind::Cp | GroupKind::DpShard | GroupKind::DpReplicate => return None,
    };
    let phase = req.phase;
    Some((collective, group, phase))
}

impl CollectiveCost for SimaiCost {
    fn name(&self) -> &str {
        "simai"
    }

    fn cost_ns(&self, req: &CollectiveRequest) -> Result<u64, CostError> {
        match analytical_terms(req) {
            Some((collective, group, phase)) => analytical::collective_time_ns(
                collective,
                group,
                req.group_size,
                req.size_bytes,
                phase,
                &self.model,
            )
            .map_err(|e| CostError {
                message: e.to_string(),
            }),
            None => self.p2p.cost_ns(req),
        }
    }

    fn nic_part_ns(&self, req: &CollectiveRequest, total_ns: u64) -> u64 {
        match analytical_terms(req) {
            Some(_) if req.placement.nodes > 1 => total_ns,
            Some(_) => 0,
            None => self.p2p.nic_part_ns(req, total_ns),
        }
    }
}

/// The cost function `config.algorithm` names for `job`: the built-in ring or
/// tree model, or [`SimaiCost`] with `tables` (built-in when `None`).
pub fn cost_for(
    parallel: Parallelism,
    config: &crate::engine::SimConfig,
    tables: Option<&RatioTables>,
) -> Result<Box<dyn CollectiveCost>, SimError> {
    Ok(match config.algorithm {
        Algorithm::Simai => Box::new(SimaiCost::new(
            &config.network,
            parallel,
            tables.cloned().unwrap_or_default(),
        )?),
        a => Box::new(NetworkModel::new(&config.network, a)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::network::GroupPlacement;
    use crate::engine::spec::Phase;

    fn req(
        collective: CollectiveKind,
        group: GroupKind,
        n: u32,
        size: u64,
        phase: Phase,
    ) -> CollectiveRequest {
        let parallel = Parallelism {
            tp: 8,
            dp: 16,
            pp: 4,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        };
        CollectiveRequest {
            collective,
            group,
            group_size: n,
            size_bytes: size,
            phase,
            placement: GroupPlacement {
                nodes: 2,
                members_per_node: 1,
                gpus_per_node: 8,
                parallel,
            },
        }
    }

    #[test]
    fn equals_the_analytical_function() {
        let parallel = Parallelism {
            tp: 8,
            dp: 16,
            pp: 4,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        };
        let net = NetworkConfig {
            nvlink_gbps: 360.0,
            ..NetworkConfig::default()
        };
        let c = SimaiCost::new(&net, parallel, RatioTables::builtin()).unwrap();
        let cluster = ClusterConfig {
            world_size: 512,
            gpus_per_server: 8,
            nics_per_server: 8,
            nvlink_busbw_gbps: 360.0,
            nic_busbw_gbps: 48.5,
        };
        let m = CostModel::new(cluster, RatioTables::builtin(), 8, 1).unwrap();
        for (coll, ac) in [
            (CollectiveKind::AllReduce, Collective::AllReduce),
            (CollectiveKind::AllGather, Collective::AllGather),
            (CollectiveKind::ReduceScatter, Collective::ReduceScatter),
        ] {
            for (g, ag, n, ph, aph) in [
                (
                    GroupKind::Tp,
                    analytical::SimaiGroup::Tp,
                    8,
                    Phase::Forward,
                    analytical::Phase::Forward,
                ),
                (
                    GroupKind::Dp,
                    analytical::SimaiGroup::Dp,
                    16,
                    Phase::WeightGrad,
                    analytical::Phase::WeightGrad,
                ),
            ] {
                for size in [100u64, 500_000, 20_971_520, 6_236_471_296] {
                    let want = analytical::collective_time_ns(ac, ag, n, size, aph, &m).unwrap();
                    let r = req(coll, g, n, size, ph);
                    assert_eq!(c.cost_ns(&r).unwrap(), want, "{coll:?} {g:?} {size}");
                }
            }
        }
        // Transfers fall back to the ring model.
        let r = req(
            CollectiveKind::SendRecv,
            GroupKind::Pp,
            2,
            1 << 20,
            Phase::Forward,
        );
        let ring = NetworkModel::new(&net, Algorithm::Ring).unwrap();
        assert_eq!(c.cost_ns(&r).unwrap(), ring.cost_ns(&r).unwrap());
    }

    #[test]
    fn errors_are_cost_errors_not_panics() {
        let parallel = Parallelism {
            tp: 16,
            dp: 2,
            pp: 1,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        };
        // 16 GPUs of TP on 8-GPU servers with 4 NICs: DP placement K/P = 0.
        let net = NetworkConfig {
            nics_per_node: 4,
            ..NetworkConfig::default()
        };
        let c = SimaiCost::new(&net, parallel, RatioTables::builtin()).unwrap();
        let r = req(
            CollectiveKind::AllReduce,
            GroupKind::Dp,
            2,
            1 << 30,
            Phase::WeightGrad,
        );
        assert!(c.cost_ns(&r).is_err());
    }
}
