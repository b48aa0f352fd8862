//! Simulation settings ([`SimConfig`]) and the cluster description
//! ([`NetworkConfig`]), with validation that turns every out-of-range value
//! into a [`SimError::InvalidConfig`] naming the setting.
//!
//! Bandwidths are in GB/s with 1 GB = 2^30 bytes (the unit SimAI and
//! FORMATS.md section 2 use), so `--nvlink-gbps` / `--nic-gbps` mean the same
//! in the event mode and the SimAI-compatible mode. Latencies are integer ns.

use super::network::PlacementOrder;
use super::schedule::ScheduleKind;
use super::SimError;
use serde::{Deserialize, Serialize};

/// How collectives are costed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// Ring all-reduce / all-gather / reduce-scatter over the group.
    #[default]
    Ring,
    /// Hierarchical all-reduce: intra-node ring reduce-scatter, inter-node
    /// tree all-reduce of each shard, intra-node all-gather. Other
    /// collectives as with `Ring`.
    Tree,
    /// The SimAI-compatible per-collective function
    /// ([`super::simai_cost::SimaiCost`]; [`super::simulate`] uses it with
    /// SimAI's built-in tables).
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
    /// NVLink bandwidth per GPU, GB/s (2^30 bytes/s). Default 370.8 (H100).
    pub nvlink_gbps: f64,
    /// Bandwidth of one NIC, GB/s (2^30 bytes/s). Default 48.5 (CX7).
    pub nic_gbps: f64,
    /// Per-step latency inside a node (NVLink), ns.
    pub nvlink_latency_ns: u64,
    /// Per-step latency across nodes (NIC + fabric), ns.
    pub nic_latency_ns: u64,
    /// Fabric oversubscription (>= 1): inter-node bandwidth is divided by it.
    pub oversubscription: f64,
    /// How ranks are laid out (Megatron: TP fastest, then DP, then PP).
    pub placement: PlacementOrder,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            gpus_per_node: 8,
            nics_per_node: 8,
            nvlink_gbps: 370.8,
            nic_gbps: 48.5,
            nvlink_latency_ns: 1_000,
            nic_latency_ns: 5_000,
            oversubscription: 1.0,
            placement: PlacementOrder::default(),
        }
    }
}

impl NetworkConfig {
    /// Set both latencies from one value in microseconds (the CLI's
    /// `--latency-us`): NIC latency = `us`, NVLink latency = `us / 5`.
    pub fn set_latency_us(&mut self, us: f64) -> Result<(), SimError> {
        if !us.is_finite() || !(0.0..=1e6).contains(&us) {
            return Err(SimError::InvalidConfig {
                name: "latency_us",
                reason: format!("{us} is not between 0 and 1000000 microseconds"),
            });
        }
        self.nic_latency_ns = (us * 1000.0).round() as u64;
        self.nvlink_latency_ns = (us * 200.0).round() as u64;
        Ok(())
    }

    /// Check every field.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad =
            |name: &'static str, reason: String| Err(SimError::InvalidConfig { name, reason });
        if !(1..=4096).contains(&self.gpus_per_node) {
            return bad(
                "gpus_per_node",
                format!("{} is not between 1 and 4096", self.gpus_per_node),
            );
        }
        if !(1..=4096).contains(&self.nics_per_node) {
            return bad(
                "nics_per_node",
                format!("{} is not between 1 and 4096", self.nics_per_node),
            );
        }
        for (name, v) in [
            ("nvlink_gbps", self.nvlink_gbps),
            ("nic_gbps", self.nic_gbps),
        ] {
            if !v.is_finite() || v <= 0.0 || v > 1e9 {
                return bad(name, format!("{v} is not a positive bandwidth in GB/s"));
            }
        }
        for (name, v) in [
            ("nvlink_latency_ns", self.nvlink_latency_ns),
            ("nic_latency_ns", self.nic_latency_ns),
        ] {
            if v > 1_000_000_000 {
                return bad(name, format!("{v} ns is more than a second per step"));
            }
        }
        if !self.oversubscription.is_finite()
            || self.oversubscription < 1.0
            || self.oversubscription > 1e6
        {
            return bad(
                "oversubscription",
                format!("{} is not a factor >= 1", self.oversubscription),
            );
        }
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
        }
    }
}

/// Most micro-batches accepted.
pub const MAX_MICRO_BATCHES: u32 = 1 << 20;
/// Most virtual stages per rank accepted (a span stores its chunk in a byte).
pub const MAX_VIRTUAL_STAGES: u32 = 255;

impl SimConfig {
    /// Check every field (the job-dependent checks happen in the builder).
    pub fn validate(&self) -> Result<(), SimError> {
        let bad =
            |name: &'static str, reason: String| Err(SimError::InvalidConfig { name, reason });
        self.network.validate()?;
        if !(1..=MAX_VIRTUAL_STAGES).contains(&self.virtual_stages) {
            return bad(
                "virtual_stages",
                format!(
                    "{} is not between 1 and {MAX_VIRTUAL_STAGES}",
                    self.virtual_stages
                ),
            );
        }
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
            if !(1..=MAX_MICRO_BATCHES).contains(&m) {
                return bad(
                    "micro_batches",
                    format!("{m} is not between 1 and {MAX_MICRO_BATCHES}"),
                );
            }
        }
        if let Some(f) = self.backward_factor {
            if !f.is_finite() || !(0.0..=1000.0).contains(&f) {
                return bad("backward_factor", format!("{f} is not between 0 and 1000"));
            }
        }
        if !self.compute_scale.is_finite() || self.compute_scale <= 0.0 || self.compute_scale > 1e6
        {
            return bad(
                "compute_scale",
                format!("{} is not a positive factor", self.compute_scale),
            );
        }
        Ok(())
    }
}
