//! SimAI's GPU and NIC presets ([`GpuType`], [`NicType`]): the names SimAI's
//! analytical backend accepts and the bus bandwidths it gives them. The
//! SimAI-compatible mode ([`crate::analytical`]) and the hardware presets
//! share them.

use serde::{Deserialize, Serialize};

/// GPU presets that set the NVLink bus bandwidth (docs/FORMATS.md §4 item 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuType {
    /// NVIDIA H100 (NVLink 370.8 GB/s).
    H100,
    /// NVIDIA H20 (NVLink 370.8 GB/s).
    H20,
    /// NVIDIA H800 (NVLink 164.8 GB/s).
    H800,
    /// NVIDIA A100 (NVLink 240 GB/s).
    A100,
    /// NVIDIA A800 (NVLink 160 GB/s).
    A800,
}

impl GpuType {
    /// Every preset, in a fixed order.
    pub const ALL: [GpuType; 5] = [
        GpuType::H100,
        GpuType::H20,
        GpuType::H800,
        GpuType::A100,
        GpuType::A800,
    ];
    /// The names, for messages.
    pub const NAMES: &'static str = "H100, H20, H800, A100, A800";

    /// The name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            GpuType::H100 => "H100",
            GpuType::H20 => "H20",
            GpuType::H800 => "H800",
            GpuType::A100 => "A100",
            GpuType::A800 => "A800",
        }
    }

    /// Case-insensitive lookup.
    pub fn from_name(name: &str) -> Option<GpuType> {
        GpuType::ALL
            .into_iter()
            .find(|g| g.name().eq_ignore_ascii_case(name.trim()))
    }

    /// NVLink bus bandwidth, GB/s (1 GB = 2^30 bytes): H100/H20 370.8,
    /// H800 164.8, A100 240, A800 160.
    pub fn nvlink_busbw_gbps(self) -> f64 {
        match self {
            GpuType::H100 | GpuType::H20 => 370.8,
            GpuType::H800 => 164.8,
            GpuType::A100 => 240.0,
            GpuType::A800 => 160.0,
        }
    }
}

/// NIC presets that set the per-NIC bus bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NicType {
    /// ConnectX-6 (23.5 GB/s).
    Cx6,
    /// ConnectX-7 (48.5 GB/s).
    Cx7,
    /// BlueField-3 (48.5 GB/s).
    Bf3,
}

impl NicType {
    /// Every preset, in a fixed order.
    pub const ALL: [NicType; 3] = [NicType::Cx6, NicType::Cx7, NicType::Bf3];
    /// The names, for messages.
    pub const NAMES: &'static str = "CX6, CX7, BF3";

    /// The name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            NicType::Cx6 => "CX6",
            NicType::Cx7 => "CX7",
            NicType::Bf3 => "BF3",
        }
    }

    /// Case-insensitive lookup.
    pub fn from_name(name: &str) -> Option<NicType> {
        NicType::ALL
            .into_iter()
            .find(|n| n.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Per-NIC bus bandwidth, GB/s: CX6 23.5, CX7 48.5, BF3 48.5.
    pub fn nic_busbw_gbps(self) -> f64 {
        match self {
            NicType::Cx6 => 23.5,
            NicType::Cx7 | NicType::Bf3 => 48.5,
        }
    }
}
