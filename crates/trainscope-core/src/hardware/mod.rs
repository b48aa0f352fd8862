//! GPU presets and the per-op time model of a model-level job: what one GPU
//! can do ([`GpuSpec`]: dense peak per precision, memory bandwidth and
//! capacity, intra-node link bandwidth, each with its source) and how long an
//! op of given FLOPs and bytes takes on it ([`GpuSpec::op_time_ns`]: a
//! roofline with size-dependent efficiency curves and a per-kernel launch
//! overhead, [`Efficiency`], documented and overridable).
//!
//! Units: peaks in TFLOP/s (10^12 FLOP/s), memory bandwidth in GB/s (10^9
//! bytes/s, as vendors publish it), capacity in bytes, the intra-node bus
//! bandwidth in GB/s of 2^30 bytes (the unit of [`crate::engine::NetworkConfig`]
//! and SimAI), the host link (PCIe) per direction in GB/s (10^9 bytes/s,
//! [`PCIE_SOURCES`]). Pure data and arithmetic.

pub mod simai;

pub use simai::{GpuType, NicType};

use crate::model::attention_kernel::AttentionKernel;

use crate::model::ops::OpClass;
use serde::{Deserialize, Serialize};

/// Numeric precision of the GEMMs (and of the training recipe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in fp32 (TF32 tensor cores are not assumed).
    Fp32,
    /// bf16 mixed precision (Megatron `--bf16`): fp32 main weights and
    /// gradients, bf16 compute.
    #[default]
    Bf16,
    /// fp16 mixed precision (Megatron `--fp16`): fp16 gradients.
    Fp16,
    /// FP8 GEMMs with per-tensor scaling (Transformer Engine), everything
    /// else as bf16 mixed precision.
    Fp8,
}

impl Precision {
    /// Every precision, in a fixed order.
    pub const ALL: [Precision; 4] = [
        Precision::Fp32,
        Precision::Bf16,
        Precision::Fp16,
        Precision::Fp8,
    ];

    /// The name used by the CLI, JSON and the page.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
        }
    }

    /// Case-insensitive lookup of [`Precision::name`].
    pub fn from_name(name: &str) -> Option<Precision> {
        Precision::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Bytes of one activation element (what is stored and communicated):
    /// 4 in fp32, else 2 (FP8 recipes keep activations in bf16).
    pub fn activation_bytes(self) -> u64 {
        match self {
            Precision::Fp32 => 4,
            _ => 2,
        }
    }
}

/// Dense (no sparsity) peak throughput per precision, TFLOP/s.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Peaks {
    /// FP32 on the CUDA/vector cores (no TF32).
    pub fp32_tflops: f64,
    /// BF16 / FP16 tensor cores.
    pub bf16_tflops: f64,
    /// FP8 tensor cores; `None` where the GPU has none (FP8 GEMMs then run
    /// at the bf16 rate, with a warning).
    pub fp8_tflops: Option<f64>,
}

/// How close to the roofline an op gets. GEMM efficiency grows with the
/// op's size: `max x flops / (flops + gemm_half_flops)` where `max` is
/// `gemm_max` (`gemm_fp8_max` for FP8 GEMMs), so a small GEMM is launch-
/// and tail-bound and a large one approaches `max`. The fused (flash)
/// attention core's efficiency grows with the sequence length: its forward
/// reaches `attention x s / (s + attention_half_seq)` of the bf16 peak for
/// sequences of `s` tokens, its backward `attention_backward x s / (s +
/// attention_backward_half_seq)`;
/// bandwidth-bound kernels reach `memory x bytes / (bytes +
/// memory_half_bytes)` of the memory bandwidth; every kernel costs
/// `launch_ns` on top. The numbers per GPU and their sources are in
/// [`EFFICIENCY_SOURCES`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Efficiency {
    /// Fraction of the dense peak a large bf16/fp16/fp32 GEMM reaches.
    pub gemm_max: f64,
    /// Fraction of the FP8 dense peak a large FP8 GEMM reaches.
    pub gemm_fp8_max: f64,
    /// FLOPs of one bf16 GEMM at which it reaches half of its large-GEMM
    /// efficiency (an FP8 GEMM at this x its peak over the bf16 peak: the
    /// same time).
    pub gemm_half_flops: f64,
    /// Fraction of the dense bf16 peak the fused attention core's forward
    /// reaches on long sequences (FLOPs of the causal half).
    pub attention: f64,
    /// Tokens per sequence at which the forward reaches half of
    /// `attention`.
    pub attention_half_seq: f64,
    /// The same for the backward (2.5 x the forward's FLOPs).
    pub attention_backward: f64,
    /// Tokens per sequence at which the backward reaches half of
    /// `attention_backward`.
    pub attention_backward_half_seq: f64,
    /// Fraction of the memory bandwidth a large streaming kernel reaches.
    pub memory: f64,
    /// Bytes moved at which a kernel reaches half of `memory`.
    pub memory_half_bytes: f64,
    /// Launch overhead per kernel, ns.
    pub launch_ns: u64,
}

/// Where the efficiency numbers come from (README "Time model" repeats
/// this table). None is fitted to a validation case.
pub const EFFICIENCY_SOURCES: &str = "\
GEMM on H100-class GPUs (H100, H800, H200, H20): fitted to a sweep measured on an H100 SXM 80GB \
with scripts/measure-gpu.py (tests/fixtures/measured/h100-sxm/gemm.csv: 1,011 shapes, M 256..16384, \
N and K 1024..28672, three layouts, bf16 and fp8, each the kernels' own time under CUDA graphs; \
PyTorch 2.11, CUDA 13.0): bf16 69.5% at large sizes and half of it at 2.8 GFLOP, fp8 63% and \
half of it at twice the FLOPs (the same time; the fit's median error 5% bf16, 7% fp8). On an \
H200 swept the same way (tests/fixtures/measured/h200/, not fitted) the same curve is within \
4% (bf16) and 6% (fp8) median. \
GEMM on B200: fitted to the kernel table SimuMax measured on a B200 (MooreThreads/SimuMax \
configs/system/b200_bf16_ceperm.json at 4dcaae5: 514 dense bf16 GEMMs of 6.7 GFLOP to 69 TFLOP and \
108 grouped GEMMs of Megatron's MoE layers, 20 to 256 groups of M 128..9832 rows, forward, input \
and weight gradient, each group read at its own size; the same table reproduces SimuMax's B200 \
training steps within about 5-10%, docs/b200/b200_release_v1.2_summary.md): bf16 48% at large \
sizes and half of it at 7.6 GFLOP (median error 5.5% dense, 10.6% grouped; the weight-gradient \
groups run about 20% below the curve, the forward groups about 10% above). The table has no FP8 \
GEMMs: FP8 takes Bekman's B200 fp8/bf16 best-shape ratio (76.3 / 77.6) of the bf16 level and \
half of it at the same time (an assumption until measured). \
GEMM on other GPUs: the 'Maximum Achievable Matmul FLOPS' table of Stas Bekman's ml-engineering \
book (compute/accelerator/README.md: A100 SXM bf16 86.9%, H100 SXM bf16 80.3%, B200 bf16 77.6% / \
fp8 76.3%, MI300X bf16 51.4%) gives the best shape a search finds; each is scaled by the H100's \
measured typical level over its best-shape figure (69.5 / 80.3, an assumption until measured). \
Half-efficiency size: A100 from NVIDIA's A100 cuBLAS mixed-precision figure (1024^3 ~29%, \
2048^3 ~70%: about 4 GFLOP); MI300X the H100's scaled by its bf16 peak (an assumption). \
Attention: on H100-class GPUs fitted to the H100 SXM sweep (attention.csv: PyTorch SDPA with \
cuDNN/flash kernels, causal, head size 128): forward 60.5% of the bf16 peak on long sequences, \
half of it at 450 tokens; backward 57.5%, half at 1,800 tokens (fit within 4% and 2% median; \
the H200 sweep within 3% and 8%). \
Other GPUs: FlashAttention-2 (Dao 2023) and FlashAttention-3 (Shah et al. 2024) report forward + \
backward at about 55% of the bf16 peak on A100 and H100 for head size 128 on long sequences (the \
H100 sweep gives 54% at 16k tokens), used for both passes with the H100's curve shape; MI300X \
assumed 35%. \
Memory: Calculon's system tables (calculon-ai/calculon systems/a100_80g.json, h100_80g_nvl8.json): \
90% of HBM bandwidth at >= 100 MB, 75% at 10 MB, 60% at 1 MB (half of 90% at about 1 MB). \
Launch: about 1 us per kernel when launches overlap execution (NVIDIA, 'Getting Started with CUDA \
Graphs'). A40 and L40S have no published sweep here: A100's curve is assumed.";

/// Which pass of the attention core an op time is asked for, and the
/// tokens per sequence it works on (the efficiency depends on both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttentionPass {
    pub seq_length: u64,
    pub backward: bool,
    /// The fused kernel that runs it ([`AttentionKernel::speed`]).
    pub kernel: AttentionKernel,
}

impl Efficiency {
    /// Efficiency of the fused attention core for `pass`; a sequence
    /// length of 0 (unknown) takes the long-sequence level.
    pub fn attention_efficiency(&self, pass: AttentionPass) -> f64 {
        let (max, half) = if pass.backward {
            (self.attention_backward, self.attention_backward_half_seq)
        } else {
            (self.attention, self.attention_half_seq)
        };
        if pass.seq_length == 0 {
            return max;
        }
        let s = pass.seq_length as f64;
        max * s / (s + half)
    }

    /// Check every field: fractions in (0, 1], the half-efficiency size
    /// finite and >= 0, the launch overhead at most a second. The error
    /// names the field and the value.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("GEMM efficiency", self.gemm_max),
            ("FP8 GEMM efficiency", self.gemm_fp8_max),
            ("attention efficiency", self.attention),
            ("attention backward efficiency", self.attention_backward),
            ("HBM efficiency", self.memory),
        ] {
            if !v.is_finite() || v <= 0.0 || v > 1.0 {
                return Err(format!("{name} {v} is not a fraction in (0, 1]"));
            }
        }
        for (name, v) in [
            ("GEMM half-efficiency size", self.gemm_half_flops),
            ("memory half-efficiency size", self.memory_half_bytes),
            (
                "attention half-efficiency sequence",
                self.attention_half_seq,
            ),
            (
                "attention backward half-efficiency sequence",
                self.attention_backward_half_seq,
            ),
        ] {
            if !v.is_finite() || !(0.0..=1e18).contains(&v) {
                return Err(format!("{name} {v} is not a size between 0 and 1e18"));
            }
        }
        if self.launch_ns > 1_000_000_000 {
            return Err(format!(
                "launch overhead {} ns is more than a second",
                self.launch_ns
            ));
        }
        Ok(())
    }
}

/// One GPU preset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    /// Canonical name (`H100-SXM`).
    pub name: String,
    /// Where the numbers come from.
    pub source: String,
    pub peaks: Peaks,
    /// Memory bandwidth, GB/s (10^9 bytes/s).
    pub hbm_gbps: f64,
    /// Memory capacity usable by a job, bytes (the total `nvidia-smi` /
    /// `rocm-smi` reports).
    pub memory_bytes: u64,
    /// Intra-node collective bus bandwidth per GPU, GB/s of 2^30 bytes
    /// (what [`crate::engine::NetworkConfig::nvlink_gbps`] takes).
    pub nvlink_busbw_gbps: f64,
    /// Host link (PCIe) bandwidth per direction, GB/s (10^9 bytes/s, as
    /// vendors publish it: half the datasheet's bidirectional figure);
    /// what offloading to host memory moves over ([`PCIE_SOURCES`]). 0:
    /// unknown (offload refused).
    #[serde(default)]
    pub pcie_gbps: f64,
    /// The efficiency curves of the time model.
    pub efficiency: Efficiency,
}

const MIB: u64 = 1 << 20;

/// Typical large-GEMM efficiency over the best-shape figure: Bekman's table
/// gives the best shape a search finds (H100 SXM bf16 80.3%); the sweep
/// measured here on an H100 SXM gives 69.5% as the large-size level of
/// every shape a transformer uses (the best single shape reached 75%).
/// GPUs without a sweep of their own take Bekman's figure times this ratio
/// (an assumption until one is measured).
const TYPICAL_OF_BEST: f64 = 0.695 / 0.803;

/// Sequence lengths at which fused attention reaches half of its
/// long-sequence efficiency, forward and backward: fitted to the H100 SXM
/// sweep (`tests/fixtures/measured/h100-sxm/attention.csv`, PyTorch SDPA,
/// causal, head size 128, 512..16384 tokens); other GPUs assume the same
/// shape of curve.
const HALF_SEQ_FORWARD: f64 = 450.0;
const HALF_SEQ_BACKWARD: f64 = 1800.0;

/// Efficiency of an NVIDIA H100-class GPU (H100, H800, H200, H20): the
/// GEMM curve fitted to the sweep measured here on an H100 SXM
/// (`tests/fixtures/measured/h100-sxm/gemm.csv`, 1 011 shapes; the test
/// `measured_h100` checks the fit).
const HOPPER: Efficiency = Efficiency {
    gemm_max: 0.695,
    gemm_fp8_max: 0.63,
    gemm_half_flops: 2.8e9,
    attention: 0.605,
    attention_half_seq: HALF_SEQ_FORWARD,
    attention_backward: 0.575,
    attention_backward_half_seq: HALF_SEQ_BACKWARD,
    memory: 0.90,
    memory_half_bytes: 1.0e6,
    launch_ns: 1_000,
};
/// Efficiency of an NVIDIA A100-class GPU (A100, A800; assumed for A40
/// and L40S): Bekman's best-shape figure x [`TYPICAL_OF_BEST`].
const AMPERE: Efficiency = Efficiency {
    gemm_max: 0.869 * TYPICAL_OF_BEST,
    gemm_fp8_max: 0.71,
    gemm_half_flops: 4.0e9,
    attention: 0.55,
    attention_half_seq: HALF_SEQ_FORWARD,
    attention_backward: 0.55,
    attention_backward_half_seq: HALF_SEQ_BACKWARD,
    memory: 0.90,
    memory_half_bytes: 1.0e6,
    launch_ns: 1_000,
};
/// Efficiency of an NVIDIA B200: the GEMM curve fitted to SimuMax's
/// measured B200 kernel table (dense and grouped GEMMs together, each
/// group at its own size; see [`EFFICIENCY_SOURCES`]); FP8 at Bekman's
/// fp8/bf16 best-shape ratio of that level. It replaced Bekman's figures
/// x [`TYPICAL_OF_BEST`] (67% bf16), which the measured table puts 37%
/// (dense) and 47% (grouped) too fast at the median.
const BLACKWELL: Efficiency = Efficiency {
    gemm_max: 0.48,
    gemm_fp8_max: 0.48 * 0.763 / 0.776,
    gemm_half_flops: 7.6e9,
    attention: 0.55,
    attention_half_seq: HALF_SEQ_FORWARD,
    attention_backward: 0.55,
    attention_backward_half_seq: HALF_SEQ_BACKWARD,
    memory: 0.90,
    memory_half_bytes: 1.0e6,
    launch_ns: 1_000,
};
/// Efficiency of an AMD MI300X (Bekman's figure x [`TYPICAL_OF_BEST`];
/// half size: the H100's x 1307 / 989).
const CDNA3: Efficiency = Efficiency {
    gemm_max: 0.514 * TYPICAL_OF_BEST,
    gemm_fp8_max: 0.514 * TYPICAL_OF_BEST,
    gemm_half_flops: 3.7e9,
    attention: 0.35,
    attention_half_seq: HALF_SEQ_FORWARD,
    attention_backward: 0.35,
    attention_backward_half_seq: HALF_SEQ_BACKWARD,
    memory: 0.90,
    memory_half_bytes: 1.0e6,
    launch_ns: 1_000,
};

fn gpu(
    name: &str,
    source: &str,
    peaks: Peaks,
    hbm_gbps: f64,
    memory_mib: u64,
    (nvlink_busbw_gbps, pcie_gbps): (f64, f64),
    efficiency: Efficiency,
) -> GpuSpec {
    GpuSpec {
        name: name.to_string(),
        source: source.to_string(),
        peaks,
        hbm_gbps,
        memory_bytes: memory_mib * MIB,
        nvlink_busbw_gbps,
        pcie_gbps,
        efficiency,
    }
}

/// Where each preset's host-link bandwidth ([`GpuSpec::pcie_gbps`], per
/// direction) comes from: the datasheets' bidirectional PCIe figure halved.
pub const PCIE_SOURCES: &str = "A100 (40/80 GB) and A800: NVIDIA A100 datasheet, PCIe Gen4 64 GB/s (32 per direction); \
H100 SXM, H100-96G-500W (an SXM5 part), H800: NVIDIA H100 datasheet, PCIe Gen5 128 GB/s (64); H200: NVIDIA H200 datasheet, PCIe Gen5 128 GB/s (64); \
H20: HGX H20 product brief, PCIe Gen5 x16 (64); B200: HGX B200 systems' host link, PCIe Gen5 x16 (64, an assumption: \
the host CPUs drive Gen5); A40, L40S: their datasheets, PCIe Gen4 x16 64 GB/s (32); \
MI300X: AMD Instinct MI300X data sheet, PCIe Gen5 x16 128 GB/s (64).";

/// Why the `H100-96G-500W` preset's compute peaks are the mean of two
/// datasheets': the part is non-standard and its peak is published by no
/// one; the TorchTitan paper (arXiv 2410.06511, its H100 footnote) puts it
/// between the H100 SXM's (dense FP32 67, BF16 989.4, FP8 1978.9 TFLOP/s)
/// and the H100 NVL's (NVIDIA H100 NVL datasheet: FP32 60, BF16 1671 and
/// FP8 3341 with sparsity, so 835.5 and 1670.5 dense). The half-way point
/// is an assumption chosen before any comparison, not a fit: each bound
/// moves a GEMM-bound time by about 8% (the validation README says what
/// either bound gives).
pub const H100_96G_PEAK_SOURCES: &str = "H100 SXM datasheet (FP32 67, BF16 989.4, FP8 1978.9 TFLOP/s dense) and \
H100 NVL datasheet (FP32 60, BF16 835.5, FP8 1670.5 TFLOP/s dense): the mean of the two, as the TorchTitan paper \
(arXiv 2410.06511) puts the 500 W HBM2e part's unknown peak between them.";

/// The mean of two datasheet figures.
fn mid(a: f64, b: f64) -> f64 {
    (a + b) / 2.0
}

/// Canonical preset names, in a fixed order.
pub const GPU_NAMES: [&str; 12] = [
    "A100-40G",
    "A100-80G",
    "A800",
    "H100-SXM",
    "H100-96G-500W",
    "H800",
    "H20",
    "H200",
    "B200",
    "A40",
    "L40S",
    "MI300X",
];

/// Other spellings accepted by [`gpu_preset`] (SimAI's `--gpu-type`
/// names keep their meaning: `A100` is the 80 GB part).
const ALIASES: [(&str, &str); 7] = [
    ("H100", "H100-SXM"),
    ("H100-96G", "H100-96G-500W"),
    ("A100", "A100-80G"),
    ("A800-80G", "A800"),
    ("H200-SXM", "H200"),
    ("H800-SXM", "H800"),
    ("MI300", "MI300X"),
];

/// Bus bandwidth from a link's published unidirectional bandwidth (GB/s,
/// 10^9): the ratio SimAI's H100 preset implies (370.8 GiB/s of 450 GB/s),
/// used for the GPUs SimAI has no preset for.
fn busbw_from_unidirectional(gbps: f64) -> f64 {
    (gbps * GpuType::H100.nvlink_busbw_gbps() / 450.0 * 10.0).round() / 10.0
}

/// The preset named `name` (case-insensitive; aliases such as SimAI's
/// `H100`, `A100` accepted).
pub fn gpu_preset(name: &str) -> Option<GpuSpec> {
    let n = name.trim();
    let canonical = ALIASES
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(n))
        .map(|(_, c)| *c)
        .or_else(|| {
            GPU_NAMES
                .iter()
                .copied()
                .find(|c| c.eq_ignore_ascii_case(n))
        })?;
    let p = |fp32: f64, bf16: f64, fp8: Option<f64>| Peaks {
        fp32_tflops: fp32,
        bf16_tflops: bf16,
        fp8_tflops: fp8,
    };
    Some(match canonical {
        "A100-40G" => gpu(
            "A100-40G",
            "NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB); NVLink 600 GB/s bidirectional, bus bandwidth as SimAI's A100",
            p(19.5, 312.0, None),
            1555.0,
            40_960,
            (GpuType::A100.nvlink_busbw_gbps(), 32.0),
            AMPERE,
        ),
        "A100-80G" => gpu(
            "A100-80G",
            "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB); NVLink 600 GB/s bidirectional, bus bandwidth as SimAI's A100",
            p(19.5, 312.0, None),
            2039.0,
            81_920,
            (GpuType::A100.nvlink_busbw_gbps(), 32.0),
            AMPERE,
        ),
        "A800" => gpu(
            "A800",
            "NVIDIA A800 SXM4 80GB (A100 compute, NVLink 400 GB/s bidirectional); bus bandwidth as SimAI's A800",
            p(19.5, 312.0, None),
            2039.0,
            81_920,
            (GpuType::A800.nvlink_busbw_gbps(), 32.0),
            AMPERE,
        ),
        "H100-SXM" => gpu(
            "H100-SXM",
            "NVIDIA H100 Tensor Core GPU datasheet (SXM5 80GB); NVLink 900 GB/s bidirectional, bus bandwidth as SimAI's H100",
            p(67.0, 989.4, Some(1978.9)),
            3350.0,
            81_559,
            (GpuType::H100.nvlink_busbw_gbps(), 64.0),
            HOPPER,
        ),
        // Meta's Grand Teton H100s, the part torchtitan's published
        // benchmarks ran on: the memory and power limit as torchtitan
        // states them; the compute peak is not published (see
        // [`H100_96G_PEAK_SOURCES`]).
        "H100-96G-500W" => gpu(
            "H100-96G-500W",
            "H100 SXM5 with 96 GB HBM2e at 2.4 TB/s and a 500 W power limit (Meta's Grand Teton hosts, as \
             pytorch/torchtitan docs/performance.md states them); NVLink as the H100 SXM; compute peaks \
             half-way between the H100 SXM's and the H100 NVL's (the TorchTitan paper, arXiv 2410.06511: \
             between the two, exact value unknown)",
            p(
                mid(67.0, 60.0),
                mid(989.4, 835.5),
                Some(mid(1978.9, 1670.5)),
            ),
            2400.0,
            91_552,
            (GpuType::H100.nvlink_busbw_gbps(), 64.0),
            HOPPER,
        ),
        "H800" => gpu(
            "H800",
            "NVIDIA H800 SXM5 80GB (H100 compute, NVLink 400 GB/s bidirectional); bus bandwidth as SimAI's H800",
            p(67.0, 989.4, Some(1978.9)),
            3350.0,
            81_559,
            (GpuType::H800.nvlink_busbw_gbps(), 64.0),
            HOPPER,
        ),
        "H20" => gpu(
            "H20",
            "NVIDIA HGX H20 product brief (96GB HBM3, 4.0 TB/s, BF16 148 TFLOPS, FP8 296 TFLOPS dense, NVLink 900 GB/s); bus bandwidth as SimAI's H20",
            p(44.0, 148.0, Some(296.0)),
            4000.0,
            97_871,
            (GpuType::H20.nvlink_busbw_gbps(), 64.0),
            HOPPER,
        ),
        "H200" => gpu(
            "H200",
            "NVIDIA H200 Tensor Core GPU datasheet (SXM 141GB HBM3e, 4.8 TB/s; H100 compute; NVLink 900 GB/s)",
            p(67.0, 989.4, Some(1978.9)),
            4800.0,
            143_771,
            (busbw_from_unidirectional(450.0), 64.0),
            HOPPER,
        ),
        "B200" => gpu(
            "B200",
            "NVIDIA HGX B200 datasheet (per GPU: 180GB HBM3e, 7.7 TB/s, BF16 2.25 PFLOPS and FP8 4.5 PFLOPS dense; NVLink 5 1.8 TB/s bidirectional)",
            p(75.0, 2250.0, Some(4500.0)),
            7700.0,
            183_359,
            (busbw_from_unidirectional(900.0), 64.0),
            BLACKWELL,
        ),
        "A40" => gpu(
            "A40",
            "NVIDIA A40 datasheet (48GB GDDR6, 696 GB/s, BF16 149.7 TFLOPS dense; PCIe Gen4 x16 64 GB/s bidirectional between GPUs)",
            p(37.4, 149.7, None),
            696.0,
            46_068,
            (busbw_from_unidirectional(32.0), 32.0),
            AMPERE,
        ),
        "L40S" => gpu(
            "L40S",
            "NVIDIA L40S datasheet (48GB GDDR6, 864 GB/s, BF16 362.05 and FP8 733 TFLOPS dense; PCIe Gen4 x16 64 GB/s bidirectional)",
            p(91.6, 362.05, Some(733.0)),
            864.0,
            46_068,
            (busbw_from_unidirectional(32.0), 32.0),
            AMPERE,
        ),
        "MI300X" => gpu(
            "MI300X",
            "AMD Instinct MI300X data sheet (192GB HBM3, 5.3 TB/s, BF16 1307.4 and FP8 2614.9 TFLOPS dense; Infinity Fabric 7 links x 64 GB/s per direction)",
            p(163.4, 1307.4, Some(2614.9)),
            5300.0,
            196_592,
            (busbw_from_unidirectional(448.0), 64.0),
            CDNA3,
        ),
        _ => return None,
    })
}

impl GpuSpec {
    /// Dense peak for GEMMs run in `precision`, TFLOP/s (FP8 on a GPU
    /// without FP8 runs at the bf16 rate).
    pub fn peak_tflops(&self, precision: Precision) -> f64 {
        match precision {
            Precision::Fp32 => self.peaks.fp32_tflops,
            Precision::Bf16 | Precision::Fp16 => self.peaks.bf16_tflops,
            Precision::Fp8 => self.peaks.fp8_tflops.unwrap_or(self.peaks.bf16_tflops),
        }
    }

    /// Time of one op, ns: `kernels x launch_ns + max(compute, memory)`,
    /// where compute = FLOPs / (peak x efficiency) and memory = bytes /
    /// (HBM bandwidth x memory efficiency). GEMMs use the size-dependent
    /// curve of [`Efficiency`]; the attention core uses the bf16 peak (FP8
    /// attention is not assumed).
    pub fn op_time_ns(
        &self,
        class: OpClass,
        flops: f64,
        bytes: f64,
        kernels: u32,
        precision: Precision,
        attention: AttentionPass,
    ) -> u64 {
        let e = &self.efficiency;
        let compute_s = match class {
            OpClass::Gemm if flops > 0.0 => {
                // FP8 reaches the same fraction at the same time, so at
                // (its peak / the bf16 peak) x the FLOPs.
                let (max, half) = match self.peaks.fp8_tflops {
                    Some(fp8) if precision == Precision::Fp8 => (
                        e.gemm_fp8_max,
                        e.gemm_half_flops * fp8 / self.peaks.bf16_tflops,
                    ),
                    _ => (e.gemm_max, e.gemm_half_flops),
                };
                let eff = max * flops / (flops + half);
                flops / (self.peak_tflops(precision) * 1e12 * eff)
            }
            OpClass::Attention if flops > 0.0 => {
                let peak = match precision {
                    Precision::Fp32 => self.peaks.fp32_tflops,
                    _ => self.peaks.bf16_tflops,
                };
                let speed = attention.kernel.speed(&self.name, attention.backward);
                flops / (peak * 1e12 * e.attention_efficiency(attention) * speed)
            }
            _ => 0.0,
        };
        let memory_s = if bytes > 0.0 {
            bytes / (self.hbm_gbps * 1e9 * e.memory * bytes / (bytes + e.memory_half_bytes))
        } else {
            0.0
        };
        let t = compute_s.max(memory_s) * 1e9;
        let t = if t.is_finite() && t > 0.0 { t } else { 0.0 };
        (t.round() as u64).saturating_add(u64::from(kernels) * e.launch_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_resolves_and_simai_names_keep_their_bandwidth() {
        for n in GPU_NAMES {
            let g = gpu_preset(n).unwrap();
            assert_eq!(g.name, n);
            assert!(g.peaks.bf16_tflops > 0.0 && g.hbm_gbps > 0.0 && g.memory_bytes > 0);
            assert!(!g.source.is_empty());
        }
        for g in GpuType::ALL {
            let p = gpu_preset(g.name()).unwrap();
            assert_eq!(p.nvlink_busbw_gbps, g.nvlink_busbw_gbps(), "{}", g.name());
        }
        assert_eq!(gpu_preset("h100-sxm").unwrap().name, "H100-SXM");
        assert!(gpu_preset("V100").is_none());
    }

    #[test]
    fn the_grand_teton_h100_sits_between_the_sxm_and_the_nvl() {
        let g = gpu_preset("h100-96g").unwrap();
        let sxm = gpu_preset("H100-SXM").unwrap();
        assert_eq!(g.name, "H100-96G-500W");
        // torchtitan's figures: 96 GB HBM2e at 2.4 TB/s.
        assert_eq!(g.hbm_gbps, 2400.0);
        assert!(g.memory_bytes <= 96_000_000_000 && g.memory_bytes > 95_990_000_000);
        // The NVL's dense peaks below, the SXM's above, the mean between.
        for (p, nvl, top) in [
            (g.peaks.bf16_tflops, 835.5, sxm.peaks.bf16_tflops),
            (
                g.peaks.fp8_tflops.unwrap(),
                1670.5,
                sxm.peaks.fp8_tflops.unwrap(),
            ),
            (g.peaks.fp32_tflops, 60.0, sxm.peaks.fp32_tflops),
        ] {
            assert!((p - (nvl + top) / 2.0).abs() < 1e-9, "{p}");
        }
        assert_eq!(g.efficiency, sxm.efficiency);
        assert_eq!(g.nvlink_busbw_gbps, sxm.nvlink_busbw_gbps);
        // A memory-bound pass takes the ratio of the bandwidths longer.
        let bytes = 1e9;
        let t = |g: &GpuSpec| {
            g.op_time_ns(
                OpClass::Memory,
                0.0,
                bytes,
                0,
                Precision::Bf16,
                AttentionPass::default(),
            ) as f64
        };
        assert!((t(&g) / t(&sxm) - 3350.0 / 2400.0).abs() < 1e-3);
    }

    #[test]
    fn roofline_picks_the_binding_resource() {
        let g = gpu_preset("H100").unwrap();
        // A huge GEMM approaches gemm_max of the peak.
        let flops = 1e15;
        let t = g.op_time_ns(
            OpClass::Gemm,
            flops,
            0.0,
            0,
            Precision::Bf16,
            AttentionPass::default(),
        ) as f64;
        let e = g.efficiency;
        let ideal = flops / (989.4e12 * e.gemm_max) * 1e9;
        assert!((t / ideal - 1.0).abs() < 0.01, "{t} vs {ideal}");
        // FP8: twice the peak at its own efficiency.
        let t8 = g.op_time_ns(
            OpClass::Gemm,
            flops,
            0.0,
            0,
            Precision::Fp8,
            AttentionPass::default(),
        ) as f64;
        assert!((t / t8 - 2.0 * e.gemm_fp8_max / e.gemm_max).abs() < 0.01);
        // Memory-bound: bytes / (bw x eff) plus launches; a large transfer
        // is close to 90% of the bandwidth.
        let m = g.op_time_ns(
            OpClass::Memory,
            0.0,
            3.35e9,
            2,
            Precision::Bf16,
            AttentionPass::default(),
        );
        let ideal = 3.35e9 / (3350e9 * 0.9) * 1e9;
        assert!(((m - 2_000) as f64 / ideal - 1.0).abs() < 0.001, "{m}");
        // Small GEMMs are less efficient per FLOP.
        let small = g.op_time_ns(
            OpClass::Gemm,
            2e9,
            0.0,
            0,
            Precision::Bf16,
            AttentionPass::default(),
        ) as f64;
        assert!(small / 2e9 > t / flops * 1.9);
    }

    #[test]
    fn attention_efficiency_grows_with_the_sequence_and_backward_lags() {
        let e = gpu_preset("H100").unwrap().efficiency;
        let at = |seq_length, backward| {
            e.attention_efficiency(AttentionPass {
                seq_length,
                backward,
                ..AttentionPass::default()
            })
        };
        // Half of the long-sequence level at the half-efficiency length.
        assert!((at(450, false) - e.attention / 2.0).abs() < 1e-12);
        assert!((at(1800, true) - e.attention_backward / 2.0).abs() < 1e-12);
        assert!(at(2048, false) < at(8192, false) && at(8192, false) < e.attention);
        assert!(at(4096, true) < at(4096, false));
        // Unknown length: the long-sequence level.
        assert_eq!(at(0, true), e.attention_backward);
    }
}
