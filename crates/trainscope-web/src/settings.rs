//! The simulation settings: one [`Settings`] value holding everything the
//! Configure panel edits (mode, cluster, parallelism and batch), its
//! per-field validation ([`Settings::validate`]), pre-filling from the loaded
//! files' headers ([`SettingsHints`], [`Settings::with_hints`]) and the
//! text form of each field used by the form and the URL fragment
//! ([`Settings::get`] / [`Settings::set`]). Pure Rust, no DOM: the worker
//! and the page share it.
//!
//! Units are in the names: bandwidths in GB/s (`*_bw_gbps`, 1 GB = 2^30 bytes
//! as in SimAI), latency in microseconds (`latency_us`, converted to integer
//! nanoseconds by [`Settings::latency_ns`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use trainscope_core::engine::config::PlacementOrder;
use trainscope_core::engine::config::DEFAULT_BACKWARD_FACTOR;
use trainscope_core::engine::faults::Faults;
use trainscope_core::engine::{ScheduleKind, SimConfig};
use trainscope_core::formats::neusight::DEFAULT_BLOCK_REPEATS;
use trainscope_core::limits;
use trainscope_core::whatif::DEFAULT_SENSITIVITY_FACTOR;
use trainscope_core::{
    analytical::{AnalyticalConfig, OverlapRatios},
    hardware::{GpuType, NicType},
};

/// Which simulator a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The event-level engine (`trainscope_core::sim`).
    #[default]
    Event,
    /// The SimAI-compatible analytical mode (`trainscope_core::analytical`).
    Simai,
}

/// GPU type presets: each sets a default NVLink bus bandwidth (docs/FORMATS.md §4 item 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
pub enum GpuPreset {
    /// Bandwidth typed in by the user.
    #[default]
    Custom,
    A100,
    A800,
    H100,
    H800,
    H20,
}

impl GpuPreset {
    pub const ALL: [GpuPreset; 6] = [
        GpuPreset::Custom,
        GpuPreset::A100,
        GpuPreset::A800,
        GpuPreset::H100,
        GpuPreset::H800,
        GpuPreset::H20,
    ];

    /// The core's preset (`None` for custom).
    pub fn core(self) -> Option<GpuType> {
        match self {
            GpuPreset::Custom => None,
            GpuPreset::H100 => Some(GpuType::H100),
            GpuPreset::H20 => Some(GpuType::H20),
            GpuPreset::H800 => Some(GpuType::H800),
            GpuPreset::A100 => Some(GpuType::A100),
            GpuPreset::A800 => Some(GpuType::A800),
        }
    }

    /// The page's preset for a core preset.
    pub fn from_core(g: GpuType) -> GpuPreset {
        match g {
            GpuType::H100 => GpuPreset::H100,
            GpuType::H20 => GpuPreset::H20,
            GpuType::H800 => GpuPreset::H800,
            GpuType::A100 => GpuPreset::A100,
            GpuType::A800 => GpuPreset::A800,
        }
    }

    /// NVLink bus bandwidth of the preset in GB/s (the core's table,
    /// SimAI's values).
    pub fn nvlink_bw_gbps(self) -> Option<f64> {
        self.core().map(GpuType::nvlink_busbw_gbps)
    }
}

/// NIC type presets: each sets a default per-NIC bus bandwidth (docs/FORMATS.md §4 item 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
pub enum NicPreset {
    #[default]
    Custom,
    Cx6,
    Cx7,
    Bf3,
}

impl NicPreset {
    pub const ALL: [NicPreset; 4] = [
        NicPreset::Custom,
        NicPreset::Cx6,
        NicPreset::Cx7,
        NicPreset::Bf3,
    ];

    /// The core's preset (`None` for custom).
    pub fn core(self) -> Option<NicType> {
        match self {
            NicPreset::Custom => None,
            NicPreset::Cx6 => Some(NicType::Cx6),
            NicPreset::Cx7 => Some(NicType::Cx7),
            NicPreset::Bf3 => Some(NicType::Bf3),
        }
    }

    /// The page's preset for a core preset.
    pub fn from_core(n: NicType) -> NicPreset {
        match n {
            NicType::Cx6 => NicPreset::Cx6,
            NicType::Cx7 => NicPreset::Cx7,
            NicType::Bf3 => NicPreset::Bf3,
        }
    }

    /// Per-NIC bus bandwidth of the preset in GB/s (the core's table,
    /// SimAI's values).
    pub fn nic_bw_gbps(self) -> Option<f64> {
        self.core().map(NicType::nic_busbw_gbps)
    }
}

/// Pipeline schedule of the event-level engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    Gpipe,
    #[default]
    #[serde(rename = "1f1b")]
    OneFOneB,
    Interleaved,
    #[serde(rename = "zb-h1")]
    ZbH1,
    #[serde(rename = "zb-h2")]
    ZbH2,
    Zbv,
    Dualpipev,
}

impl Schedule {
    pub const ALL: [Schedule; 7] = [
        Schedule::Gpipe,
        Schedule::OneFOneB,
        Schedule::Interleaved,
        Schedule::ZbH1,
        Schedule::ZbH2,
        Schedule::Zbv,
        Schedule::Dualpipev,
    ];

    /// The core's schedule.
    pub fn core(self) -> ScheduleKind {
        match self {
            Schedule::Gpipe => ScheduleKind::GPipe,
            Schedule::OneFOneB => ScheduleKind::OneFOneB,
            Schedule::Interleaved => ScheduleKind::Interleaved,
            Schedule::ZbH1 => ScheduleKind::ZbH1,
            Schedule::ZbH2 => ScheduleKind::ZbH2,
            Schedule::Zbv => ScheduleKind::ZbV,
            Schedule::Dualpipev => ScheduleKind::DualPipeV,
        }
    }
}

/// Collective algorithm of the event-level engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    #[default]
    Ring,
    Tree,
    /// SimAI's busbw cost model inside the event engine.
    Simai,
}

impl Algorithm {
    pub const ALL: [Algorithm; 3] = [Algorithm::Ring, Algorithm::Tree, Algorithm::Simai];

    /// The core's collective algorithm.
    pub fn core(self) -> trainscope_core::engine::Algorithm {
        match self {
            Algorithm::Ring => trainscope_core::engine::Algorithm::Ring,
            Algorithm::Tree => trainscope_core::engine::Algorithm::Tree,
            Algorithm::Simai => trainscope_core::engine::Algorithm::Simai,
        }
    }
}

fn default_oversubscription() -> f64 {
    SimConfig::default().network.oversubscription
}

/// Every setting; the form, the validation messages and the URL fragment all
/// name a setting by its [`Field`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Field {
    Mode,
    Gpu,
    NvlinkBw,
    GpusPerNode,
    NicsPerNode,
    Nic,
    NicBw,
    Latency,
    Placement,
    Oversubscription,
    World,
    Tp,
    Pp,
    Ep,
    MicroBatches,
    Schedule,
    VirtualStages,
    Algorithm,
    DpOverlap,
    TpOverlap,
    EpOverlap,
    PpOverlap,
    GradSyncOverlap,
    BackwardFactor,
    Blocks,
    Slow,
    SlowLink,
    Jitter,
    Seed,
    Blame,
}

impl Field {
    /// The run's layout: the world, the parallel sizes, the micro-batches
    /// and the virtual stages. A file's header states them
    /// ([`SettingsHints::FIELDS`]) and a described job defines them
    /// ([`crate::state::JOB_DEFINED_FIELDS`]).
    pub const LAYOUT: [Field; 6] = [
        Field::World,
        Field::Tp,
        Field::Pp,
        Field::Ep,
        Field::MicroBatches,
        Field::VirtualStages,
    ];

    /// All fields, in form and URL order.
    pub const ALL: [Field; 30] = [
        Field::Mode,
        Field::Gpu,
        Field::NvlinkBw,
        Field::GpusPerNode,
        Field::NicsPerNode,
        Field::Nic,
        Field::NicBw,
        Field::Latency,
        Field::Placement,
        Field::Oversubscription,
        Field::World,
        Field::Tp,
        Field::Pp,
        Field::Ep,
        Field::MicroBatches,
        Field::Schedule,
        Field::VirtualStages,
        Field::Algorithm,
        Field::DpOverlap,
        Field::TpOverlap,
        Field::EpOverlap,
        Field::PpOverlap,
        Field::GradSyncOverlap,
        Field::BackwardFactor,
        Field::Blocks,
        Field::Slow,
        Field::SlowLink,
        Field::Jitter,
        Field::Seed,
        Field::Blame,
    ];

    /// Stable key: URL fragment key, DOM id suffix and `data-field` value.
    pub fn key(self) -> &'static str {
        match self {
            Field::Mode => "mode",
            Field::Gpu => "gpu",
            Field::NvlinkBw => "nvlink_gbps",
            Field::GpusPerNode => "gpus_per_node",
            Field::NicsPerNode => "nics_per_node",
            Field::Nic => "nic",
            Field::NicBw => "nic_gbps",
            Field::Latency => "latency_us",
            Field::Placement => "placement",
            Field::Oversubscription => "oversubscription",
            Field::World => "world",
            Field::Tp => "tp",
            Field::Pp => "pp",
            Field::Ep => "ep",
            Field::MicroBatches => "micro_batches",
            Field::Schedule => "schedule",
            Field::VirtualStages => "virtual_stages",
            Field::Algorithm => "algorithm",
            Field::DpOverlap => "dp_overlap",
            Field::TpOverlap => "tp_overlap",
            Field::EpOverlap => "ep_overlap",
            Field::PpOverlap => "pp_overlap",
            Field::GradSyncOverlap => "grad_sync_overlap",
            Field::BackwardFactor => "backward_factor",
            Field::Blocks => "blocks",
            Field::Slow => "slow",
            Field::SlowLink => "slow_link",
            Field::Jitter => "jitter",
            Field::Seed => "seed",
            Field::Blame => "blame",
        }
    }

    pub fn from_key(key: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.key() == key)
    }

    /// Label shown next to the input.
    pub fn label(self) -> &'static str {
        match self {
            Field::Mode => "Mode",
            Field::Gpu => "GPU type",
            Field::NvlinkBw => "NVLink bandwidth (GB/s)",
            Field::GpusPerNode => "GPUs per node",
            Field::NicsPerNode => "NICs per node",
            Field::Nic => "NIC type",
            Field::NicBw => "NIC bandwidth (GB/s)",
            Field::Latency => "Link latency (µs)",
            Field::Placement => "Rank order, fastest first (Megatron: tp-dp-pp)",
            Field::Oversubscription => "Fabric oversubscription (≥ 1)",
            Field::World => "World size (GPUs)",
            Field::Tp => "Tensor parallel (TP)",
            Field::Pp => "Pipeline parallel (PP)",
            Field::Ep => "Expert parallel (EP)",
            Field::MicroBatches => "Micro-batches per iteration",
            Field::Schedule => "Pipeline schedule",
            Field::VirtualStages => "Virtual stages per GPU",
            Field::Algorithm => "Collective algorithm",
            Field::DpOverlap => "DP overlap ratio",
            Field::TpOverlap => "TP overlap ratio",
            Field::EpOverlap => "EP overlap ratio",
            Field::PpOverlap => "PP overlap ratio",
            Field::GradSyncOverlap => "Overlap gradient sync with backward",
            Field::BackwardFactor => "Backward / forward time (forward-only inputs)",
            Field::Blocks => "Blocks (repeat a single-block input)",
            Field::Slow => "Slow GPUs (RANKS:FACTOR[@ONSET+DURATION], e.g. 5:1.5 node1:1.1 stage2:1.2@2s+500ms 3:2@iter1+1)",
            Field::SlowLink => "Slow links (A-B:FACTOR or nodeN:FACTOR)",
            Field::Jitter => "Per-kernel jitter (%, 0 = off)",
            Field::Seed => "Random seed (jitter)",
            Field::Blame => "Blame: who costs the step (sensitivity per stage)",
        }
    }

    /// Whether the field matters in `mode` (the form greys out the others).
    pub fn used_in(self, mode: Mode) -> bool {
        match self {
            Field::Latency
            | Field::Placement
            | Field::Oversubscription
            | Field::Schedule
            | Field::Algorithm
            | Field::GradSyncOverlap
            | Field::BackwardFactor
            | Field::Blocks
            | Field::Slow
            | Field::SlowLink
            | Field::Jitter
            | Field::Seed
            | Field::Blame => mode == Mode::Event,
            Field::DpOverlap | Field::TpOverlap | Field::EpOverlap | Field::PpOverlap => {
                mode == Mode::Simai
            }
            _ => true,
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// The core's bounds ([`trainscope_core::limits`]), the CLI's too, so the
/// page refuses exactly what the CLI refuses.
pub use trainscope_core::limits::{MAX_MICRO_BATCHES, MAX_PER_NODE, MAX_VIRTUAL_STAGES, MAX_WORLD};
/// The core's bound on a NeuSight block repeat count (the CLI's too).
pub const MAX_BLOCKS: u32 = trainscope_core::formats::neusight::MAX_BLOCK_REPEATS;

/// Every knob of a run. Defaults are the core's, so an untouched page runs
/// what `trainscope simulate FILE` (event mode) and `trainscope simulate
/// --mode simai FILE` run: [`SimConfig::default`] (H100's NVLink 370.8
/// GB/s, CX7's 48.5 GB/s, 8 GPUs and 8 NICs per node, 5 µs latency),
/// [`OverlapRatios::default`] (SimAI's 0/0/0/1), [`DEFAULT_BACKWARD_FACTOR`]
/// and [`DEFAULT_BLOCK_REPEATS`]. Parallelism and micro-batches are the
/// loaded files' (their hints); the values here only fill the form before a
/// file is loaded. SimAI-Analytical's published reference runs use
/// `-nv 360`: type 360 in the NVLink field to reproduce them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub mode: Mode,
    // Cluster.
    pub gpu: GpuPreset,
    /// NVLink bus bandwidth per GPU, GB/s.
    pub nvlink_bw_gbps: f64,
    pub gpus_per_node: u32,
    pub nics_per_node: u32,
    pub nic: NicPreset,
    /// Bus bandwidth per NIC, GB/s.
    pub nic_bw_gbps: f64,
    /// Per-message link latency, microseconds (event mode).
    pub latency_us: f64,
    /// Rank placement order, fastest-varying dimension first (event mode).
    #[serde(default)]
    pub placement: PlacementOrder,
    /// Fabric oversubscription, >= 1: inter-node bandwidth is divided by it
    /// (event mode).
    #[serde(default = "default_oversubscription")]
    pub oversubscription: f64,
    // Parallelism and batch.
    pub world_size: u32,
    pub tp: u32,
    pub pp: u32,
    pub ep: u32,
    pub micro_batches: u32,
    pub schedule: Schedule,
    /// Model chunks per GPU (interleaved schedule; SimAI's `vpp`).
    pub virtual_stages: u32,
    pub algorithm: Algorithm,
    /// SimAI overlap ratios in [0, 1] (`-dp_o -tp_o -ep_o -pp_o`).
    pub dp_overlap: f64,
    pub tp_overlap: f64,
    pub ep_overlap: f64,
    pub pp_overlap: f64,
    /// Event mode: data-parallel gradient sync overlaps the backward pass.
    pub grad_sync_overlap: bool,
    /// Backward time = factor x forward time, for inputs that only measured
    /// the forward pass (NeuSight, Optimus-Prime).
    pub backward_factor: f64,
    /// How many times a single-block input repeats (NeuSight: 36 for GPT-2-large).
    pub blocks: u32,
    /// What-if: slow GPUs as `--slow` takes them, separated by spaces
    /// ([`Settings::faults`]).
    #[serde(default)]
    pub slow: String,
    /// What-if: slow links as `--slow-link` takes them, space-separated.
    #[serde(default)]
    pub slow_link: String,
    /// What-if: per-kernel jitter, percent (0: none).
    #[serde(default)]
    pub jitter_percent: f64,
    /// The seed of the jitter (`--seed`).
    #[serde(default)]
    pub seed: u64,
    /// `--blame` ([`trainscope_core::whatif::DEFAULT_SENSITIVITY_FACTOR`]).
    #[serde(default)]
    pub blame: bool,
}

impl Default for Settings {
    fn default() -> Self {
        let sim = SimConfig::default();
        let net = &sim.network;
        let overlap = OverlapRatios::default();
        Settings {
            mode: Mode::Event,
            gpu: GpuPreset::from_core(AnalyticalConfig::DEFAULT_GPU),
            nvlink_bw_gbps: net.nvlink_gbps,
            gpus_per_node: net.gpus_per_node,
            nics_per_node: net.nics_per_node,
            nic: NicPreset::from_core(AnalyticalConfig::DEFAULT_NIC),
            nic_bw_gbps: net.nic_gbps,
            latency_us: net.latency_us(),
            placement: net.placement,
            oversubscription: net.oversubscription,
            world_size: 8,
            tp: 1,
            pp: 1,
            ep: 1,
            micro_batches: 1,
            schedule: Schedule::ALL
                .into_iter()
                .find(|s| s.core() == sim.schedule)
                .unwrap_or_default(),
            virtual_stages: sim.virtual_stages,
            algorithm: Algorithm::ALL
                .into_iter()
                .find(|a| a.core() == sim.algorithm)
                .unwrap_or_default(),
            dp_overlap: overlap.dp,
            tp_overlap: overlap.tp,
            ep_overlap: overlap.ep,
            pp_overlap: overlap.pp,
            grad_sync_overlap: sim.overlap_grad_sync,
            backward_factor: sim.backward_factor.unwrap_or(DEFAULT_BACKWARD_FACTOR),
            blocks: DEFAULT_BLOCK_REPEATS,
            slow: String::new(),
            slow_link: String::new(),
            jitter_percent: 0.0,
            seed: 0,
            blame: false,
        }
    }
}

/// A validation message attached to one field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FieldError {
    pub field: Field,
    pub message: String,
}

impl FieldError {
    pub fn new(field: Field, message: impl Into<String>) -> Self {
        FieldError {
            field,
            message: message.into(),
        }
    }
}

/// Values the loaded files state (or imply) for settings they fix. `None`
/// leaves the setting to the user. Filled by the worker from each file's
/// header; the first file that states a value wins.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SettingsHints {
    pub world_size: Option<u32>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub ep: Option<u32>,
    pub micro_batches: Option<u32>,
    pub virtual_stages: Option<u32>,
    pub schedule: Option<Schedule>,
    pub blocks: Option<u32>,
    /// Where each value came from, e.g. `world = 512 from all_gpus in a.txt`.
    pub sources: Vec<String>,
}

impl SettingsHints {
    /// Every field a file can state (the cluster is the user's choice):
    /// the layout ([`Field::LAYOUT`]), the schedule and the block repeats.
    pub const FIELDS: [Field; 8] = {
        let l = Field::LAYOUT;
        [
            l[0],
            l[1],
            l[2],
            l[3],
            l[4],
            l[5],
            Field::Schedule,
            Field::Blocks,
        ]
    };

    /// Fields this hint set would change.
    pub fn fields(&self) -> Vec<Field> {
        Self::FIELDS
            .into_iter()
            .filter(|f| self.get(*f).is_some())
            .collect()
    }

    /// The hinted value of a field as text, if any.
    pub fn get(&self, field: Field) -> Option<String> {
        let n = |v: Option<u32>| v.map(|v| v.to_string());
        match field {
            Field::World => n(self.world_size),
            Field::Tp => n(self.tp),
            Field::Pp => n(self.pp),
            Field::Ep => n(self.ep),
            Field::MicroBatches => n(self.micro_batches),
            Field::VirtualStages => n(self.virtual_stages),
            Field::Schedule => self.schedule.map(|s| schedule_name(s).to_string()),
            Field::Blocks => n(self.blocks),
            _ => None,
        }
    }

    /// Merge `other` under `self` (values already set here win); returns the
    /// fields where both had a value and they differ.
    pub fn merge(&mut self, other: &SettingsHints) -> Vec<Field> {
        fn take<T: Copy + PartialEq>(
            mine: &mut Option<T>,
            theirs: Option<T>,
            field: Field,
            out: &mut Vec<Field>,
        ) {
            match (*mine, theirs) {
                (None, Some(v)) => *mine = Some(v),
                (Some(a), Some(b)) if a != b => out.push(field),
                _ => {}
            }
        }
        let mut conflicts = Vec::new();
        take(
            &mut self.world_size,
            other.world_size,
            Field::World,
            &mut conflicts,
        );
        take(&mut self.tp, other.tp, Field::Tp, &mut conflicts);
        take(&mut self.pp, other.pp, Field::Pp, &mut conflicts);
        take(&mut self.ep, other.ep, Field::Ep, &mut conflicts);
        take(
            &mut self.micro_batches,
            other.micro_batches,
            Field::MicroBatches,
            &mut conflicts,
        );
        take(
            &mut self.virtual_stages,
            other.virtual_stages,
            Field::VirtualStages,
            &mut conflicts,
        );
        take(
            &mut self.schedule,
            other.schedule,
            Field::Schedule,
            &mut conflicts,
        );
        take(
            &mut self.blocks,
            other.blocks,
            Field::Blocks,
            &mut conflicts,
        );
        self.sources.extend(other.sources.iter().cloned());
        conflicts
    }
}

fn fmt_f64(v: f64) -> String {
    // Shortest text that reads back to the same value (`360`, `48.5`, `0.3`).
    let s = format!("{v}");
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

fn parse_u32(text: &str) -> Result<u32, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("enter a whole number".into());
    }
    t.parse::<u32>()
        .map_err(|_| format!("`{t}` is not a whole number ≥ 0"))
}

fn parse_f64(text: &str) -> Result<f64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("enter a number".into());
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("`{t}` is not a number")),
    }
}

fn parse_bool(text: &str) -> Result<bool, String> {
    trainscope_core::limits::on_off(text).ok_or_else(|| format!("`{}` is not on/off", text.trim()))
}

fn choice<T: Copy>(all: &[T], name: fn(T) -> &'static str, text: &str) -> Result<T, String> {
    let t = text.trim();
    all.iter().copied().find(|v| name(*v) == t).ok_or_else(|| {
        let names: Vec<_> = all.iter().map(|v| name(*v)).collect();
        format!("`{t}` is not one of {}", names.join(", "))
    })
}

/// Stable text of each enum value (form `<option value>` and URL).
pub fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Event => "event",
        Mode::Simai => "simai",
    }
}
pub fn gpu_name(g: GpuPreset) -> &'static str {
    match g {
        GpuPreset::Custom => "custom",
        GpuPreset::A100 => "A100",
        GpuPreset::A800 => "A800",
        GpuPreset::H100 => "H100",
        GpuPreset::H800 => "H800",
        GpuPreset::H20 => "H20",
    }
}
pub fn nic_name(n: NicPreset) -> &'static str {
    match n {
        NicPreset::Custom => "custom",
        NicPreset::Cx6 => "CX6",
        NicPreset::Cx7 => "CX7",
        NicPreset::Bf3 => "BF3",
    }
}
pub fn schedule_name(s: Schedule) -> &'static str {
    match s {
        Schedule::Gpipe => "gpipe",
        Schedule::OneFOneB => "1f1b",
        Schedule::Interleaved => "interleaved",
        Schedule::ZbH1 => "zb-h1",
        Schedule::ZbH2 => "zb-h2",
        Schedule::Zbv => "zbv",
        Schedule::Dualpipev => "dualpipev",
    }
}
pub fn algorithm_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::Ring => "ring",
        Algorithm::Tree => "tree",
        Algorithm::Simai => "simai",
    }
}

impl Settings {
    /// A field's value as text (the form's input value, the URL value).
    pub fn get(&self, field: Field) -> String {
        match field {
            Field::Mode => mode_name(self.mode).into(),
            Field::Gpu => gpu_name(self.gpu).into(),
            Field::NvlinkBw => fmt_f64(self.nvlink_bw_gbps),
            Field::GpusPerNode => self.gpus_per_node.to_string(),
            Field::NicsPerNode => self.nics_per_node.to_string(),
            Field::Nic => nic_name(self.nic).into(),
            Field::NicBw => fmt_f64(self.nic_bw_gbps),
            Field::Latency => fmt_f64(self.latency_us),
            Field::Placement => self.placement.name(),
            Field::Oversubscription => fmt_f64(self.oversubscription),
            Field::World => self.world_size.to_string(),
            Field::Tp => self.tp.to_string(),
            Field::Pp => self.pp.to_string(),
            Field::Ep => self.ep.to_string(),
            Field::MicroBatches => self.micro_batches.to_string(),
            Field::Schedule => schedule_name(self.schedule).into(),
            Field::VirtualStages => self.virtual_stages.to_string(),
            Field::Algorithm => algorithm_name(self.algorithm).into(),
            Field::DpOverlap => fmt_f64(self.dp_overlap),
            Field::TpOverlap => fmt_f64(self.tp_overlap),
            Field::EpOverlap => fmt_f64(self.ep_overlap),
            Field::PpOverlap => fmt_f64(self.pp_overlap),
            Field::GradSyncOverlap => if self.grad_sync_overlap { "1" } else { "0" }.into(),
            Field::BackwardFactor => fmt_f64(self.backward_factor),
            Field::Blocks => self.blocks.to_string(),
            Field::Slow => self.slow.clone(),
            Field::SlowLink => self.slow_link.clone(),
            Field::Jitter => fmt_f64(self.jitter_percent),
            Field::Seed => self.seed.to_string(),
            Field::Blame => if self.blame { "1" } else { "0" }.into(),
        }
    }

    /// Set a field from text. A parse failure leaves the value unchanged and
    /// returns the message to show next to the field. Choosing a GPU or NIC
    /// preset also sets its bandwidth; typing a bandwidth switches the preset
    /// to custom (unless it equals the preset's).
    pub fn set(&mut self, field: Field, text: &str) -> Result<(), String> {
        match field {
            Field::Mode => self.mode = choice(&[Mode::Event, Mode::Simai], mode_name, text)?,
            Field::Gpu => {
                self.gpu = choice(&GpuPreset::ALL, gpu_name, text)?;
                if let Some(bw) = self.gpu.nvlink_bw_gbps() {
                    self.nvlink_bw_gbps = bw;
                }
            }
            Field::NvlinkBw => {
                self.nvlink_bw_gbps = parse_f64(text)?;
                if self.gpu.nvlink_bw_gbps() != Some(self.nvlink_bw_gbps) {
                    self.gpu = GpuPreset::Custom;
                }
            }
            Field::GpusPerNode => self.gpus_per_node = parse_u32(text)?,
            Field::NicsPerNode => self.nics_per_node = parse_u32(text)?,
            Field::Nic => {
                self.nic = choice(&NicPreset::ALL, nic_name, text)?;
                if let Some(bw) = self.nic.nic_bw_gbps() {
                    self.nic_bw_gbps = bw;
                }
            }
            Field::NicBw => {
                self.nic_bw_gbps = parse_f64(text)?;
                if self.nic.nic_bw_gbps() != Some(self.nic_bw_gbps) {
                    self.nic = NicPreset::Custom;
                }
            }
            Field::Latency => self.latency_us = parse_f64(text)?,
            Field::Placement => self.placement = PlacementOrder::parse(text.trim())?,
            Field::Oversubscription => self.oversubscription = parse_f64(text)?,
            Field::World => self.world_size = parse_u32(text)?,
            Field::Tp => self.tp = parse_u32(text)?,
            Field::Pp => self.pp = parse_u32(text)?,
            Field::Ep => self.ep = parse_u32(text)?,
            Field::MicroBatches => self.micro_batches = parse_u32(text)?,
            Field::Schedule => self.schedule = choice(&Schedule::ALL, schedule_name, text)?,
            Field::VirtualStages => self.virtual_stages = parse_u32(text)?,
            Field::Algorithm => self.algorithm = choice(&Algorithm::ALL, algorithm_name, text)?,
            Field::DpOverlap => self.dp_overlap = parse_f64(text)?,
            Field::TpOverlap => self.tp_overlap = parse_f64(text)?,
            Field::EpOverlap => self.ep_overlap = parse_f64(text)?,
            Field::PpOverlap => self.pp_overlap = parse_f64(text)?,
            Field::GradSyncOverlap => self.grad_sync_overlap = parse_bool(text)?,
            Field::BackwardFactor => self.backward_factor = parse_f64(text)?,
            Field::Blocks => self.blocks = parse_u32(text)?,
            Field::Slow => self.slow = text.trim().to_string(),
            Field::SlowLink => self.slow_link = text.trim().to_string(),
            Field::Jitter => self.jitter_percent = parse_f64(text)?,
            Field::Seed => {
                self.seed = text
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("`{}` is not a seed (a whole number ≥ 0)", text.trim()))?
            }
            Field::Blame => self.blame = parse_bool(text)?,
        }
        Ok(())
    }

    /// The what-if faults (the core's, as `--slow`, `--slow-link`,
    /// `--jitter` and `--seed` give them) and `--blame`'s factor; `Err`:
    /// the field and the core's message.
    pub fn what_if(&self) -> Result<(Faults, Option<f64>), (Field, String)> {
        let items = |t: &str| {
            t.split(|c: char| c.is_whitespace() || c == ';')
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let (slow, links) = (items(&self.slow), items(&self.slow_link));
        let faults = Faults::from_flags(
            slow.iter().map(String::as_str),
            links.iter().map(String::as_str),
            Some(self.jitter_percent),
            self.seed,
        )
        .map_err(|(name, m)| {
            let field = match name {
                "slow" => Field::Slow,
                "slow-link" => Field::SlowLink,
                _ => Field::Jitter,
            };
            (field, m)
        })?;
        Ok((faults, self.blame.then_some(DEFAULT_SENSITIVITY_FACTOR)))
    }

    /// Data-parallel size: world / (TP x PP) (integer division; validation
    /// reports a remainder).
    pub fn dp(&self) -> u32 {
        let mp = self.tp.saturating_mul(self.pp).max(1);
        self.world_size / mp
    }

    /// Latency as integer nanoseconds (rounded to nearest).
    pub fn latency_ns(&self) -> u64 {
        if self.latency_us.is_finite() && self.latency_us > 0.0 {
            (self.latency_us * 1000.0).round() as u64
        } else {
            0
        }
    }

    /// Every problem, one message per field (the first found for it), in
    /// [`Field::ALL`] order. Fields unused in the current mode are not
    /// checked. Empty means the settings can run. Ranges are the core's
    /// checks ([`trainscope_core::limits`]), the ones the CLI applies to
    /// the same values, in the same words.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errs: Vec<FieldError> = Vec::new();
        let mut err = |f: Field, m: String| {
            if f.used_in(self.mode) && !errs.iter().any(|e| e.field == f) {
                errs.push(FieldError::new(f, m));
            }
        };
        let check = |f: Field, r: Result<(), String>, err: &mut dyn FnMut(Field, String)| {
            if let Err(m) = r {
                err(f, m);
            }
        };
        let count = |f: Field, v: u32, max: u32, err: &mut dyn FnMut(Field, String)| {
            check(f, limits::count(v, max), err);
        };
        for (f, bw) in [
            (Field::NvlinkBw, self.nvlink_bw_gbps),
            (Field::NicBw, self.nic_bw_gbps),
        ] {
            check(f, limits::bandwidth_gbps(bw), &mut err);
        }
        count(
            Field::GpusPerNode,
            self.gpus_per_node,
            MAX_PER_NODE,
            &mut err,
        );
        count(
            Field::NicsPerNode,
            self.nics_per_node,
            MAX_PER_NODE,
            &mut err,
        );
        check(
            Field::Latency,
            limits::latency_us(self.latency_us),
            &mut err,
        );
        check(
            Field::Oversubscription,
            limits::oversubscription(self.oversubscription),
            &mut err,
        );
        count(Field::Tp, self.tp, MAX_WORLD, &mut err);
        count(Field::Pp, self.pp, MAX_WORLD, &mut err);
        count(Field::Ep, self.ep, MAX_WORLD, &mut err);
        count(Field::World, self.world_size, MAX_WORLD, &mut err);
        let mp = u64::from(self.tp) * u64::from(self.pp);
        if self.world_size > 0 && mp > 0 {
            if u64::from(self.world_size) % mp != 0 {
                err(
                    Field::World,
                    format!(
                        "world size {} is not divisible by TP × PP = {} × {} = {mp}",
                        self.world_size, self.tp, self.pp
                    ),
                );
            } else {
                let dp = self.dp();
                if self.ep > 1 && !dp.is_multiple_of(self.ep) {
                    err(
                        Field::Ep,
                        format!(
                            "EP {} does not divide DP = world / (TP × PP) = {dp}",
                            self.ep
                        ),
                    );
                }
            }
        }
        count(
            Field::MicroBatches,
            self.micro_batches,
            MAX_MICRO_BATCHES,
            &mut err,
        );
        count(
            Field::VirtualStages,
            self.virtual_stages,
            MAX_VIRTUAL_STAGES,
            &mut err,
        );
        if self.mode == Mode::Event && self.schedule == Schedule::Interleaved {
            if self.virtual_stages < 2 {
                err(
                    Field::VirtualStages,
                    "the interleaved schedule needs at least 2 virtual stages".into(),
                );
            }
            if self.pp < 2 {
                err(
                    Field::Schedule,
                    "the interleaved schedule needs PP ≥ 2".into(),
                );
            }
        }
        for (f, v) in [
            (Field::DpOverlap, self.dp_overlap),
            (Field::TpOverlap, self.tp_overlap),
            (Field::EpOverlap, self.ep_overlap),
        ] {
            check(f, limits::overlap_ratio(v), &mut err);
        }
        check(
            Field::PpOverlap,
            limits::pp_overlap_ratio(self.pp_overlap),
            &mut err,
        );
        check(
            Field::BackwardFactor,
            limits::backward_factor(self.backward_factor),
            &mut err,
        );
        count(Field::Blocks, self.blocks, MAX_BLOCKS, &mut err);
        if let Err((field, m)) = self.what_if() {
            err(field, m);
        }
        errs.sort_by_key(|e| Field::ALL.iter().position(|f| *f == e.field));
        errs
    }

    /// These settings with the files' hints applied to every field not in
    /// `pinned` (fields the user typed or a link set). The worker runs with
    /// the result and the page adopts it, so both agree.
    pub fn with_hints(&self, hints: &SettingsHints, pinned: &BTreeSet<Field>) -> Settings {
        let mut s = self.clone();
        let free = |f: Field| !pinned.contains(&f);
        if let (Some(v), true) = (hints.world_size, free(Field::World)) {
            s.world_size = v;
        }
        if let (Some(v), true) = (hints.tp, free(Field::Tp)) {
            s.tp = v;
        }
        if let (Some(v), true) = (hints.pp, free(Field::Pp)) {
            s.pp = v;
        }
        if let (Some(v), true) = (hints.ep, free(Field::Ep)) {
            s.ep = v;
        }
        if let (Some(v), true) = (hints.micro_batches, free(Field::MicroBatches)) {
            s.micro_batches = v;
        }
        if let (Some(v), true) = (hints.virtual_stages, free(Field::VirtualStages)) {
            s.virtual_stages = v;
        }
        if let (Some(v), true) = (hints.schedule, free(Field::Schedule)) {
            s.schedule = v;
        }
        if let (Some(v), true) = (hints.blocks, free(Field::Blocks)) {
            s.blocks = v;
        }
        s
    }

    /// Fields whose values differ between two settings (for Compare).
    pub fn diff(&self, other: &Settings) -> Vec<Field> {
        Field::ALL
            .into_iter()
            .filter(|f| self.get(*f) != other.get(*f))
            .collect()
    }
}
