//! Configuration of the SimAI-compatible mode: what the user gives
//! ([`AnalyticalConfig`], every field optional, like SimAI's flags), the
//! resolved cluster ([`ClusterConfig`]), the overlap ratios
//! ([`OverlapRatios`], SimAI's defaults dp_o = tp_o = ep_o = 0, pp_o = 1),
//! GPU and NIC presets ([`GpuType`], [`NicType`]) and the parallelism derived
//! from the workload header ([`SimaiParallelism`]).

use super::error::AnalyticalError;
use super::tables::RatioTables;
use crate::diag::Diagnostic;
use crate::formats::simai::SimaiHeader;
use crate::hardware::{GpuType, NicType};
use crate::limits;
use serde::{Deserialize, Serialize};

/// The four overlap ratios: the fraction of a group's communication hidden
/// behind compute. Exposed time = trunc(time x (1 - ratio)), in SimAI's
/// single precision ([`super::report::exposed_ns`]). Missing fields
/// deserialise to their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OverlapRatios {
    /// `-dp_o`: weight-gradient collectives (DP and DP_EP), in [0, 1]. Default 0.
    pub dp: f64,
    /// `-tp_o`: forward and input-gradient collectives, in [0, 1]. Default 0.
    pub tp: f64,
    /// `-ep_o`: forward/input-gradient collectives of layers whose forward
    /// collective runs over EP, in [0, 1]. Default 0.
    pub ep: f64,
    /// `-pp_o`: pipeline sends, in (0, 1] (SimAI divides by it). Default 1
    /// (all hidden).
    pub pp: f64,
}

impl Default for OverlapRatios {
    fn default() -> Self {
        OverlapRatios {
            dp: 0.0,
            tp: 0.0,
            ep: 0.0,
            pp: 1.0,
        }
    }
}

impl OverlapRatios {
    /// Check every ratio is in range (NaN is not; [`limits`], as the page
    /// checks them).
    pub fn validate(&self) -> Result<(), AnalyticalError> {
        for (name, value) in [("DP", self.dp), ("TP", self.tp), ("EP", self.ep)] {
            if limits::overlap_ratio(value).is_err() {
                return Err(AnalyticalError::InvalidOverlap {
                    name,
                    value,
                    range: "in [0, 1]",
                });
            }
        }
        if limits::pp_overlap_ratio(self.pp).is_err() {
            return Err(AnalyticalError::InvalidOverlap {
                name: "PP",
                value: self.pp,
                range: "in (0, 1] (SimAI divides the PP send time by it)",
            });
        }
        Ok(())
    }
}

/// What the user gives, every cluster field optional as with SimAI's flags.
/// Precedence for bandwidths: an explicit value, else the GPU/NIC type's
/// preset, else the default preset (H100, CX7) with a warning.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnalyticalConfig {
    /// `-g`: world size (GPUs). Default: the header's `all_gpus`.
    pub world_size: Option<u32>,
    /// `-g_p_s`: GPUs per server. Default [`AnalyticalConfig::DEFAULT_GPUS_PER_SERVER`].
    pub gpus_per_server: Option<u32>,
    /// `-n_p_s`: NICs per server. Default [`AnalyticalConfig::DEFAULT_NICS_PER_SERVER`].
    pub nics_per_server: Option<u32>,
    /// `-nv`: NVLink bus bandwidth, GB/s (1 GB = 2^30 bytes).
    pub nvlink_busbw_gbps: Option<f64>,
    /// `-nic`: per-NIC bus bandwidth, GB/s.
    pub nic_busbw_gbps: Option<f64>,
    /// GPU preset name (see [`GpuType`]), used when `nvlink_busbw_gbps` is absent.
    pub gpu_type: Option<String>,
    /// NIC preset name (see [`NicType`]), used when `nic_busbw_gbps` is absent.
    pub nic_type: Option<String>,
    /// Overlap ratios (SimAI's defaults).
    pub overlap: OverlapRatios,
    /// Bandwidth-efficiency tables (built-in unless replaced).
    #[serde(skip)]
    pub tables: RatioTables,
}

impl AnalyticalConfig {
    /// GPUs per server when not given.
    pub const DEFAULT_GPUS_PER_SERVER: u32 = 8;
    /// NICs per server when not given.
    pub const DEFAULT_NICS_PER_SERVER: u32 = 8;
    /// GPU preset for the NVLink bandwidth when neither it nor a type is given.
    pub const DEFAULT_GPU: GpuType = GpuType::H100;
    /// NIC preset for the NIC bandwidth when neither it nor a type is given.
    pub const DEFAULT_NIC: NicType = NicType::Cx7;

    /// Resolve to concrete numbers against a workload header, with a warning
    /// for every default taken. Validates counts, bandwidths and overlaps.
    pub fn resolve(
        &self,
        header: &SimaiHeader,
    ) -> Result<(ClusterConfig, Vec<Diagnostic>), AnalyticalError> {
        let mut warnings = Vec::new();
        let world_size = self
            .world_size
            .or(header.world)
            .ok_or(AnalyticalError::MissingWorldSize)?;
        let gpus_per_server = self.gpus_per_server.unwrap_or_else(|| {
            warnings.push(Diagnostic::warning(format!(
                "GPUs per server not given (-g_p_s); assuming {}",
                Self::DEFAULT_GPUS_PER_SERVER
            )));
            Self::DEFAULT_GPUS_PER_SERVER
        });
        let nics_per_server = self.nics_per_server.unwrap_or_else(|| {
            warnings.push(Diagnostic::warning(format!(
                "NICs per server not given (-n_p_s); assuming {}",
                Self::DEFAULT_NICS_PER_SERVER
            )));
            Self::DEFAULT_NICS_PER_SERVER
        });
        let gpu =
            match &self.gpu_type {
                Some(name) => Some(GpuType::from_name(name).ok_or_else(|| {
                    AnalyticalError::UnknownGpuType {
                        name: name.clone(),
                        known: GpuType::NAMES,
                    }
                })?),
                None => None,
            };
        let nic =
            match &self.nic_type {
                Some(name) => Some(NicType::from_name(name).ok_or_else(|| {
                    AnalyticalError::UnknownNicType {
                        name: name.clone(),
                        known: NicType::NAMES,
                    }
                })?),
                None => None,
            };
        let nvlink_busbw_gbps = match (self.nvlink_busbw_gbps, gpu) {
            (Some(v), _) => v,
            (None, Some(g)) => g.nvlink_busbw_gbps(),
            (None, None) => {
                let g = Self::DEFAULT_GPU;
                warnings.push(Diagnostic::warning(format!(
                    "NVLink bandwidth not given (-nv or --gpu-type); assuming {}'s {} GB/s",
                    g.name(),
                    g.nvlink_busbw_gbps()
                )));
                g.nvlink_busbw_gbps()
            }
        };
        let nic_busbw_gbps = match (self.nic_busbw_gbps, nic) {
            (Some(v), _) => v,
            (None, Some(n)) => n.nic_busbw_gbps(),
            (None, None) => {
                let n = Self::DEFAULT_NIC;
                warnings.push(Diagnostic::warning(format!(
                    "NIC bandwidth not given (-nic or --nic-type); assuming {}'s {} GB/s",
                    n.name(),
                    n.nic_busbw_gbps()
                )));
                n.nic_busbw_gbps()
            }
        };
        let cluster = ClusterConfig {
            world_size,
            gpus_per_server,
            nics_per_server,
            nvlink_busbw_gbps,
            nic_busbw_gbps,
        };
        cluster.validate()?;
        self.overlap.validate()?;
        Ok((cluster, warnings))
    }
}

/// The resolved cluster: every number concrete.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusterConfig {
    /// World size, GPUs.
    pub world_size: u32,
    /// GPUs per server (P).
    pub gpus_per_server: u32,
    /// NICs per server (K).
    pub nics_per_server: u32,
    /// NVLink bus bandwidth V, GB/s (1 GB = 2^30 bytes).
    pub nvlink_busbw_gbps: f64,
    /// Per-NIC bus bandwidth C, GB/s.
    pub nic_busbw_gbps: f64,
}

impl ClusterConfig {
    /// Counts at least 1, bandwidths finite and above 0, each at most the
    /// bound the event mode and the page use ([`limits`]).
    pub fn validate(&self) -> Result<(), AnalyticalError> {
        for (what, v, max) in [
            ("world size", self.world_size, limits::MAX_WORLD),
            (
                "GPUs per server",
                self.gpus_per_server,
                limits::MAX_PER_NODE,
            ),
            (
                "NICs per server",
                self.nics_per_server,
                limits::MAX_PER_NODE,
            ),
        ] {
            if v == 0 {
                return Err(AnalyticalError::ZeroCount { what });
            }
            limits::count(v, max).map_err(|reason| AnalyticalError::OutOfRange { what, reason })?;
        }
        for (what, value_gbps) in [
            ("NVLink busbw", self.nvlink_busbw_gbps),
            ("NIC busbw", self.nic_busbw_gbps),
        ] {
            if !(value_gbps.is_finite() && value_gbps > 0.0) {
                return Err(AnalyticalError::InvalidBandwidth { what, value_gbps });
            }
            limits::bandwidth_gbps(value_gbps)
                .map_err(|reason| AnalyticalError::OutOfRange { what, reason })?;
        }
        Ok(())
    }
}

/// Group sizes and schedule parameters of one workload on one world size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimaiParallelism {
    /// Tensor parallel size (`model_parallel_NPU_group`).
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Expert parallel size.
    pub ep: u32,
    /// Data parallel size = world / (TP x PP).
    pub dp: u32,
    /// DP / EP.
    pub dp_ep: u32,
    /// Virtual stages (AICB: layers per stage) in the bubble formula.
    pub vpp: u32,
    /// Gradient-accumulation steps (micro-batches).
    pub ga: u32,
}

impl SimaiParallelism {
    /// Derive from a header and a world size. Errors when the world is not a
    /// multiple of TP x PP or DP not a multiple of EP (or a size is 0).
    pub fn new(header: &SimaiHeader, world_size: u32) -> Result<SimaiParallelism, AnalyticalError> {
        for (what, v) in [
            ("world size", world_size),
            ("TP (model_parallel_NPU_group)", header.tp),
            ("PP", header.pp),
            ("EP", header.ep),
            ("vpp", header.vpp),
            ("ga", header.ga),
        ] {
            if v == 0 {
                return Err(AnalyticalError::ZeroCount { what });
            }
        }
        let (world, tp, pp, ep) = (
            u64::from(world_size),
            u64::from(header.tp),
            u64::from(header.pp),
            u64::from(header.ep),
        );
        let product = tp * pp;
        if world % product != 0 {
            return Err(AnalyticalError::WorldNotDivisible {
                world,
                tp,
                pp,
                product,
            });
        }
        let dp = world / product;
        if dp % ep != 0 {
            return Err(AnalyticalError::DpNotDivisibleByEp {
                dp,
                ep,
                world,
                tp,
                pp,
            });
        }
        // dp <= world and dp / ep <= dp, so both fit in u32.
        Ok(SimaiParallelism {
            tp: header.tp,
            pp: header.pp,
            ep: header.ep,
            dp: u32::try_from(dp).unwrap_or(u32::MAX),
            dp_ep: u32::try_from(dp / ep).unwrap_or(u32::MAX),
            vpp: header.vpp,
            ga: header.ga,
        })
    }
}
