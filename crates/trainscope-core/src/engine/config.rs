//! Simulation settings ([`SimConfig`]) and the cluster description
//! ([`NetworkConfig`]), with validation that turns every out-of-range value
//! into a [`SimError::InvalidConfig`] naming the setting.
//!
//! Bandwidths are in GB/s with 1 GB = 2^30 bytes (the unit SimAI and
//! docs/FORMATS.md §4 use), so `--nvlink-gbps` / `--nic-gbps` mean the same
//! in the event mode and the SimAI-compatible mode. Latencies are integer ns.
//!
//! The defaults are the project's one set: the cluster's come from the
//! SimAI-compatible mode's ([`AnalyticalConfig::DEFAULT_GPU`] H100,
//! [`AnalyticalConfig::DEFAULT_NIC`] CX7, 8 GPUs and 8 NICs per node), so
//! both modes, the CLI without flags and the page as it opens use the same
//! numbers.

use crate::analytical::AnalyticalConfig;
use crate::engine::schedule::ScheduleKind;
use crate::engine::SimError;
use crate::limits::{self, MAX_MICRO_BATCHES, MAX_VIRTUAL_STAGES};
use serde::{Deserialize, Serialize};

/// One parallel dimension, for placement orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dim {
    Tp,
    Dp,
    Pp,
}

/// The order in which dimensions vary along the rank numbers, fastest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlacementOrder(pub [Dim; 3]);

impl Default for PlacementOrder {
    /// Megatron: TP fastest, then DP, then PP.
    fn default() -> Self {
        PlacementOrder([Dim::Tp, Dim::Dp, Dim::Pp])
    }
}

impl PlacementOrder {
    /// Every order's name, the default (Megatron's) first.
    pub const NAMES: [&'static str; 6] = [
        "tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp",
    ];

    /// The `tp-dp-pp` style name (fastest first), as [`Self::from_name`]
    /// reads it.
    pub fn name(&self) -> String {
        self.0
            .iter()
            .map(|d| match d {
                Dim::Tp => "tp",
                Dim::Dp => "dp",
                Dim::Pp => "pp",
            })
            .collect::<Vec<_>>()
            .join("-")
    }

    /// [`Self::from_name`], or a message naming the valid orders.
    pub fn parse(name: &str) -> Result<PlacementOrder, String> {
        Self::from_name(name)
            .ok_or_else(|| crate::diag::unknown_name("placement order", name, &Self::NAMES))
    }

    /// Parse `tp-dp-pp` style names (fastest first).
    pub fn from_name(name: &str) -> Option<PlacementOrder> {
        let mut dims = [Dim::Tp; 3];
        let mut n = 0;
        for part in name.split(['-', ',']) {
            let d = match part {
                "tp" => Dim::Tp,
                "dp" => Dim::Dp,
                "pp" => Dim::Pp,
                _ => return None,
            };
            if n >= 3 || dims[..n].contains(&d) {
                return None;
            }
            dims[n] = d;
            n += 1;
        }
        (n == 3).then_some(PlacementOrder(dims))
    }
}

/// How collectives are costed (the CLI's `--algorithm` values with the
/// `clap` feature). `Tree`: intra-node ring reduce-scatter, inter-node tree
/// all-reduce of each shard, intra-node all-gather; other collectives as
/// with `Ring`. `Simai`: the SimAI-compatible per-collective function
/// ([`crate::engine::simai_cost::SimaiCost`]; [`crate::engine::simulate`]
/// uses it with SimAI's built-in tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// Ring all-reduce / all-gather / reduce-scatter.
    #[default]
    Ring,
    /// Hierarchical all-reduce (intra-node ring, inter-node tree).
    Tree,
    /// SimAI-Analytical's per-collective cost.
    Simai,
}

impl Algorithm {
    /// The name used by the CLI and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::Simai => "simai",
        }
    }

    /// Parse a CLI name (`ring`, `tree`, `simai`).
    pub fn from_name(name: &str) -> Option<Algorithm> {
        [Algorithm::Ring, Algorithm::Tree, Algorithm::Simai]
            .into_iter()
            .find(|a| a.name() == name)
    }
}

/// The cluster: nodes of `gpus_per_node` GPUs joined by NVLink, each node
/// with `nics_per_node` NICs of `nic_gbps` into a fabric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkConfig {
    /// GPUs per node (g), at least 1.
    pub gpus_per_node: u32,
    /// NICs per node (k), at least 1.
    pub nics_per_node: u32,
    /// NVLink bandwidth per GPU, GB/s (2^30 bytes/s). Default 370.8 (H100,
    /// the SimAI-compatible mode's default preset).
    pub nvlink_gbps: f64,
    /// Bandwidth of one NIC, GB/s (2^30 bytes/s). Default 48.5 (CX7).
    pub nic_gbps: f64,
    /// Per-step latency inside a node (NVLink), ns. Default 1000 (a fifth
    /// of [`NetworkConfig::DEFAULT_LATENCY_US`]).
    pub nvlink_latency_ns: u64,
    /// Per-step latency across nodes (NIC + fabric), ns. Default 5000
    /// ([`NetworkConfig::DEFAULT_LATENCY_US`]).
    pub nic_latency_ns: u64,
    /// Fabric oversubscription (>= 1): inter-node bandwidth is divided by it.
    pub oversubscription: f64,
    /// How ranks are laid out (Megatron: TP fastest, then DP, then PP).
    pub placement: PlacementOrder,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            gpus_per_node: AnalyticalConfig::DEFAULT_GPUS_PER_SERVER,
            nics_per_node: AnalyticalConfig::DEFAULT_NICS_PER_SERVER,
            nvlink_gbps: AnalyticalConfig::DEFAULT_GPU.nvlink_busbw_gbps(),
            nic_gbps: AnalyticalConfig::DEFAULT_NIC.nic_busbw_gbps(),
            nvlink_latency_ns: (Self::DEFAULT_LATENCY_US * 200.0) as u64,
            nic_latency_ns: (Self::DEFAULT_LATENCY_US * 1000.0) as u64,
            oversubscription: 1.0,
            placement: PlacementOrder::default(),
        }
    }
}

impl NetworkConfig {
    /// The CLI's `--latency-us` and the page's latency field when not
    /// given: NIC latency, microseconds (NVLink: a fifth of it).
    pub const DEFAULT_LATENCY_US: f64 = 5.0;

    /// The NIC latency in microseconds: the value [`Self::set_latency_us`]
    /// takes (the CLI's `--latency-us`, the page's latency field).
    pub fn latency_us(&self) -> f64 {
        self.nic_latency_ns as f64 / 1000.0
    }

    /// Set both latencies from one value in microseconds (the CLI's
    /// `--latency-us`): NIC latency = `us`, NVLink latency = `us / 5`.
    pub fn set_latency_us(&mut self, us: f64) -> Result<(), SimError> {
        limits::latency_us(us).map_err(|reason| SimError::InvalidConfig {
            name: "latency_us",
            reason,
        })?;
        self.nic_latency_ns = (us * 1000.0).round() as u64;
        self.nvlink_latency_ns = (us * 200.0).round() as u64;
        Ok(())
    }

    /// Check every field ([`limits`]: the same ranges as the
    /// SimAI-compatible mode and the page).
    pub fn validate(&self) -> Result<(), SimError> {
        let bad =
            |name: &'static str, reason: String| Err(SimError::InvalidConfig { name, reason });
        let named = |name: &'static str| move |reason| SimError::InvalidConfig { name, reason };
        limits::count(self.gpus_per_node, limits::MAX_PER_NODE).map_err(named("gpus_per_node"))?;
        limits::count(self.nics_per_node, limits::MAX_PER_NODE).map_err(named("nics_per_node"))?;
        limits::bandwidth_gbps(self.nvlink_gbps).map_err(named("nvlink_gbps"))?;
        limits::bandwidth_gbps(self.nic_gbps).map_err(named("nic_gbps"))?;
        for (name, v) in [
            ("nvlink_latency_ns", self.nvlink_latency_ns),
            ("nic_latency_ns", self.nic_latency_ns),
        ] {
            if v > 1_000_000_000 {
                return bad(name, format!("{v} ns is more than a second per step"));
            }
        }
        limits::oversubscription(self.oversubscription).map_err(named("oversubscription"))?;
        Ok(())
    }
}

/// Settings of one event-level simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimConfig {
    /// Pipeline schedule. Default 1F1B.
    pub schedule: ScheduleKind,
    /// Virtual stages per rank (interleaved schedule only). Default 1. The
    /// AICB header's `vpp` is NOT used here (AICB writes layers per stage
    /// there); it only enters SimAI's closed-form bubble in the summary.
    pub virtual_stages: u32,
    /// Micro-batches per iteration; `None` = the job's (the file's `ga`).
    pub micro_batches: Option<u32>,
    /// The cluster.
    pub network: NetworkConfig,
    /// Collective algorithm / cost function.
    pub algorithm: Algorithm,
    /// For forward-only inputs: a layer whose input-gradient and
    /// weight-gradient compute are both 0 gets a backward of
    /// `factor x forward`, split evenly between the two. `None`: off.
    pub backward_factor: Option<f64>,
    /// Issue the once-per-iteration gradient-sync collectives (DP / DP_EP
    /// groups) when a rank's last backward starts, overlapping it, instead
    /// of after it ends.
    pub overlap_grad_sync: bool,
    /// Bytes of one stage-to-stage send; `None` = the job's.
    pub activation_bytes: Option<u64>,
    /// Every compute duration is multiplied by this (calibration, what-if).
    pub compute_scale: f64,
    /// Per-rank jobs: a collective starts on all simulated members of its
    /// group together (they wait for the slowest). Default on.
    pub sync_collectives: bool,
    /// Keep span-to-span dependency edges in the timeline (for highlighting
    /// a span's dependencies). Costs about 12 bytes per edge.
    pub record_dependencies: bool,
    /// Keep only what the summary needs: no timeline is built (the result's
    /// [`crate::timeline::Timeline`] is empty: no lanes, spans, flows, dependencies,
    /// critical path or counter lanes), so a run holds the task graph, the
    /// engine's times and the task records only while it simulates, and
    /// returns just the [`crate::engine::Summary`] and the activation series. Every
    /// number of the summary (iteration time, compute, bubble, exposed
    /// communication per group, per-stage shares and activation peaks,
    /// critical path summary) is the same as with the timeline. Default
    /// off; the configuration search turns it on
    /// ([`crate::search::sweep_config`]), as its rows need no timeline.
    pub summary_only: bool,
    /// Run a micro-batch's forward together with another's backward where
    /// the schedule allows ([`crate::engine::schedule::overlap`]: Megatron's
    /// EP overlap), so one's collectives overlap the other's compute.
    /// Default off.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub overlap_forward_backward: bool,
    /// What-if faults: slow ranks, slow links, jitter
    /// ([`crate::engine::faults`]). Default none.
    #[serde(
        default,
        skip_serializing_if = "crate::engine::faults::Faults::is_empty"
    )]
    pub faults: crate::engine::faults::Faults,
    /// Entries the device's launch queue holds per rank
    /// ([`crate::engine::spec::PhaseOps::launches`]): the host blocks
    /// before a launch until its entries fit behind those still pending on
    /// the device (the CUDA driver's bounded launch queue;
    /// `model::stack::LAUNCH_QUEUE_DEPTH` for model jobs). `None`:
    /// unbounded, the host may run a whole iteration ahead. Only ops with a
    /// host launch take part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_queue_depth: Option<u32>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            schedule: ScheduleKind::OneFOneB,
            virtual_stages: 1,
            micro_batches: None,
            network: NetworkConfig::default(),
            algorithm: Algorithm::Ring,
            backward_factor: None,
            overlap_grad_sync: false,
            activation_bytes: None,
            compute_scale: 1.0,
            sync_collectives: true,
            record_dependencies: true,
            summary_only: false,
            overlap_forward_backward: false,
            faults: Default::default(),
            launch_queue_depth: None,
        }
    }
}

/// Backward / forward time where an input measured only the forward pass
/// and no factor is given: the NeuSight parser's estimate (input gradient =
/// weight gradient = forward) and the Optimus-Prime replay's default. The
/// page's backward-factor field starts at it.
pub const DEFAULT_BACKWARD_FACTOR: f64 = 2.0;

impl SimConfig {
    /// Check every field (the job-dependent checks happen in the builder).
    pub fn validate(&self) -> Result<(), SimError> {
        let bad =
            |name: &'static str, reason: String| Err(SimError::InvalidConfig { name, reason });
        let named = |name: &'static str| move |reason| SimError::InvalidConfig { name, reason };
        self.network.validate()?;
        limits::count(self.virtual_stages, MAX_VIRTUAL_STAGES).map_err(named("virtual_stages"))?;
        if self.virtual_stages > 1 && self.schedule != ScheduleKind::Interleaved {
            return bad(
                "virtual_stages",
                format!(
                    "{} virtual stages need the interleaved schedule (the {} schedule runs {} model chunk(s) per rank)",
                    self.virtual_stages,
                    self.schedule.name(),
                    self.schedule.chunks(1)
                ),
            );
        }
        if let Some(m) = self.micro_batches {
            limits::count(m, MAX_MICRO_BATCHES).map_err(named("micro_batches"))?;
        }
        if let Some(f) = self.backward_factor {
            limits::backward_factor(f).map_err(named("backward_factor"))?;
        }
        if let Some(b) = self.activation_bytes {
            limits::activation_bytes(b).map_err(named("activation_bytes"))?;
        }
        if !self.compute_scale.is_finite() || self.compute_scale <= 0.0 || self.compute_scale > 1e6
        {
            return bad(
                "compute_scale",
                format!("{} is not a positive factor", self.compute_scale),
            );
        }
        if self.launch_queue_depth == Some(0) {
            return bad(
                "launch_queue_depth",
                "0 entries: a launch queue holds at least one launch".to_string(),
            );
        }
        self.faults.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::simai;

    #[test]
    fn the_event_modes_cluster_defaults_are_the_simai_modes() {
        let header = simai::parse(
            "h.txt",
            "HYBRID_TRANSFORMER model_parallel_NPU_group: 8 all_gpus: 16\n0\n",
        )
        .unwrap()
        .header;
        let (cluster, warnings) = AnalyticalConfig::default().resolve(&header).unwrap();
        let net = NetworkConfig::default();
        assert_eq!(
            (
                net.gpus_per_node,
                net.nics_per_node,
                net.nvlink_gbps,
                net.nic_gbps
            ),
            (
                cluster.gpus_per_server,
                cluster.nics_per_server,
                cluster.nvlink_busbw_gbps,
                cluster.nic_busbw_gbps
            )
        );
        assert_eq!((net.nvlink_gbps, net.nic_gbps), (370.8, 48.5));
        // Every default the SimAI mode takes is said.
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        // The latency default is what `--latency-us 5` sets.
        let mut set = NetworkConfig::default();
        set.set_latency_us(NetworkConfig::DEFAULT_LATENCY_US)
            .unwrap();
        assert_eq!(set, net);
        assert_eq!((net.nic_latency_ns, net.nvlink_latency_ns), (5_000, 1_000));
        assert_eq!(net.latency_us(), 5.0);
        assert_eq!(SimConfig::default().validate(), Ok(()));
    }
}
