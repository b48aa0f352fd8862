//! The software stack that drives the GPU (issue 24): which framework
//! launches a model's kernels ([`Stack`]), what launching one kernel costs
//! the host thread of a rank, and what CUDA graphs capture ([`CudaGraphs`]).
//! The job builder turns each op's kernel count into its host launch time
//! ([`StackSettings::launch_ns`]); the engine runs the launches on a host
//! lane ahead of the device (`engine::spec::PhaseOps::launch_ns`).
//!
//! The constants and where they come from (`docs/SOFTWARE-STACK-DATA.md`
//! has the full tables; `tests/fixtures/measured/host/` the data):
//! - [`EAGER_LAUNCH_NS`], 28 us per kernel: eager PyTorch's host time per
//!   launched kernel measured without a profiler. The eager Llama 3.2 1B
//!   step at one micro-batch of one sequence (about 2,600 kernels: the
//!   committed Kineto traces' count) took 73.4 ms on the H100 (27.9 us per
//!   kernel, an upper bound: parts of the step may wait for the GPU) and
//!   each added micro-batch 58.7-68.6 ms on an H200 (22.9-26.7 us,
//!   `tests/fixtures/measured/h200/accum.csv`); a Python loop over an MoE
//!   layer's experts, host-bound, spent 22.6-35.8 us per kernel (median
//!   30.1, `moe.csv`). 28 us is the H100 bound: inside the MoE loop's
//!   range, 5-22% above the H200 accumulation's (another host CPU). The
//!   traces' median gap between launches (37-43 us, `host-launch.csv`) is
//!   the profiler's: tracing slows every launch.
//! - [`MEGATRON_LAUNCH_NS`], 40 us per kernel for Megatron-Core with
//!   Transformer Engine: not measured (no Megatron trace or run was
//!   available). It keeps the traced HF figure above, an assumption. The
//!   choice matters for host-bound MoE layers: with 28 us the
//!   Megatron-style MoE validation cases move from 22.0% to 23.8% median
//!   error (B200 Qwen3-30B-A3B from -22% to -38%), all more optimistic.
//! - [`COMPILED_LAUNCH_NS`], 8 us: a compiled region launches its kernels
//!   from generated code without the module-level Python; the bare launch
//!   call measured 7.7-8.6 us in the same traces (an assumption that the
//!   compiled path costs about one launch call per kernel). On the H200 a
//!   call of a compiled function that runs one fused kernel cost the host
//!   34 us (its guards and wrapper; `launch.csv`): a per-call cost the
//!   model does not charge (a whole compiled model makes a few calls per
//!   step); the cost per kernel inside a region was not separated.
//! - [`GRAPH_LAUNCH_NS`], 10 us per captured region: one graph launch
//!   (an assumption of the order of one kernel launch). Measured since on
//!   an H200 (`tests/fixtures/measured/h200/launch*.csv`, two machines): a
//!   bare `CUDAGraph.replay()` from Python costs the host 2.5-6.3 us for
//!   graphs of 1 to 1,000 kernels; the 10 us leaves the rest to the Python
//!   of a graphed callable around the replay (its static-input copies and
//!   autograd function), which was not measured.
//! - [`LAUNCH_QUEUE_DEPTH`], 1,024 launches: how far the host may run
//!   ahead of one CUDA stream. The CUDA documentation gives no figure; a
//!   measurement posted on NVIDIA's developer forum ("CUDA stream are
//!   blocked when launching lots of kernels (>1000)", 2018, also Stack
//!   Overflow question 53970187) saw launches of 4-5 us each until about
//!   1,000 kernels were pending on one stream, after which every launch
//!   waited for a kernel to finish (per stream: three streams held about
//!   1,000 each). 1,024 is the power of two that figure suggests: an
//!   assumption, overridable (`--launch-queue-depth`). Measured since on
//!   an H200 (PyTorch 2.11, CUDA 13.0, driver 580; two machines): 1,021
//!   launches were accepted behind a running kernel before the next one
//!   blocked (`tests/fixtures/measured/h200/launch*.csv`), 0.3% from the
//!   assumption, which stays. A captured graph counts as one entry (an
//!   assumption).
//!
//! What is not modelled: kernels launched from several host threads; the
//! CPU's own speed (all figures are one H100 host's); the Python between
//! modules beyond the per-kernel average.

use super::attention_kernel::AttentionKernel;
use super::dispatcher::{Dispatcher, BALANCED_MILLI};
use crate::named::Named;
use serde::{Deserialize, Serialize};

/// Host time per kernel of eager PyTorch, ns.
pub const EAGER_LAUNCH_NS: u64 = 28_000;
/// Host time per kernel of Megatron-Core + Transformer Engine, ns.
pub const MEGATRON_LAUNCH_NS: u64 = 40_000;
/// Host time per kernel inside a `torch.compile` region, ns.
pub const COMPILED_LAUNCH_NS: u64 = 8_000;
/// Host time to launch one captured CUDA graph, ns.
pub const GRAPH_LAUNCH_NS: u64 = 10_000;
/// Launches one CUDA stream holds pending before the host's next launch
/// blocks (see the module doc for the source).
pub const LAUNCH_QUEUE_DEPTH: u32 = 1024;
/// Largest `--launch-queue-depth`.
pub const MAX_LAUNCH_QUEUE_DEPTH: u32 = 1 << 24;
/// Host time per kernel launched from a C++ loop inside one Python call
/// (Transformer Engine's grouped GEMM: one cuBLAS GEMM per local expert,
/// and its per-expert FP8 quantisation), ns: the bare launch call, 7.9 us
/// median traced on H100 (`docs/SOFTWARE-STACK-DATA.md` §1).
pub const NATIVE_LAUNCH_NS: u64 = 8_000;
/// Host time per expert GEMM of Transformer Engine's grouped GEMM, ns:
/// `GroupedLinear` runs one cuBLASLt GEMM per local expert over several
/// CUDA streams (`nvte_multi_stream_cublas_gemm`), and each costs the host
/// more than a bare launch (the matmul descriptors and algorithm query per
/// call, the events that fork and join the streams). TE's own benchmark
/// (`benchmarks/linear/benchmark_grouped_linear.py`, quoted in
/// NVIDIA/TransformerEngine PR #3134, SM100) times the multi-stream path at
/// 0.267 ms for 8 experts of 128 tokens (N = K = 2048) with the operands
/// prepared beforehand, where one kernel doing the same work takes 0.069
/// ms: 0.267 / 8 = 33 us per expert GEMM. Applied to every GPU (the loop is
/// host code; one measurement, on a Blackwell host).
pub const GROUPED_GEMM_LAUNCH_NS: u64 = 33_000;

/// The framework that launches the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stack {
    /// Megatron-Core with Transformer Engine's fused kernels (the kernel
    /// counts of [`crate::model::ops`]).
    #[default]
    MegatronTe,
    /// Eager PyTorch module code (HF transformers style): the same kernels
    /// launched one by one from Python.
    PytorchEager,
    /// `torch.compile`d regions: the same kernels from generated code.
    TorchCompile,
}

impl Stack {
    /// Every stack, the default first.
    pub const ALL: [Stack; 3] = [Stack::MegatronTe, Stack::PytorchEager, Stack::TorchCompile];

    /// The stable name (CLI, JSON, the page).
    pub fn name(self) -> &'static str {
        match self {
            Stack::MegatronTe => "megatron-te",
            Stack::PytorchEager => "pytorch-eager",
            Stack::TorchCompile => "torch-compile",
        }
    }

    /// Whether the stack runs Megatron's fused router and permute kernels
    /// by default: Megatron-Bridge's performance recipes set
    /// `moe_router_fusion` and `moe_permute_fusion` (megatron-te); a
    /// compiled region fuses the element-wise routing code; eager PyTorch
    /// runs it kernel by kernel.
    pub fn fuses_moe(self) -> bool {
        !matches!(self, Stack::PytorchEager)
    }

    /// Host time to launch one kernel, ns.
    pub fn launch_ns_per_kernel(self) -> u64 {
        match self {
            Stack::MegatronTe => MEGATRON_LAUNCH_NS,
            Stack::PytorchEager => EAGER_LAUNCH_NS,
            Stack::TorchCompile => COMPILED_LAUNCH_NS,
        }
    }
}

/// What CUDA graphs capture (Megatron's `--cuda-graph-impl` /
/// `--cuda-graph-modules`; `torch.compile(mode="reduce-overhead")`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CudaGraphs {
    /// Every kernel launched by the host.
    #[default]
    None,
    /// Per layer block (attention, dense MLP, MoE router and
    /// preprocessing): one graph launch each. The routed experts after the
    /// all-to-all dispatcher's sync point stay eager (their token counts
    /// change every step).
    Layers,
    /// Everything captured, MoE experts included (needs static token
    /// counts: no sync point in the step).
    Full,
}

impl CudaGraphs {
    /// Every setting, the default first.
    pub const ALL: [CudaGraphs; 3] = [CudaGraphs::None, CudaGraphs::Layers, CudaGraphs::Full];

    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            CudaGraphs::None => "none",
            CudaGraphs::Layers => "layers",
            CudaGraphs::Full => "full",
        }
    }
}

/// Where an op sits, for what a CUDA graph captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// An ordinary layer op (attention, dense MLP, router, norms).
    Layer,
    /// The routed experts behind a token dispatcher's sync point.
    DynamicExperts,
    /// Embedding, output layer, loss and the optimizer step.
    Outside,
}

/// The stack of a job: framework, CUDA graphs, an optional override of
/// the per-kernel host cost, and how MoE layers run (token dispatcher,
/// kernel fusions, EP overlap, load imbalance; [`super::dispatcher`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StackSettings {
    pub stack: Stack,
    pub cuda_graphs: CudaGraphs,
    /// Host time per kernel launch, ns, instead of the stack's; `Some(0)`
    /// turns the host model off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_ns_per_kernel: Option<u64>,
    /// Megatron's `--moe-token-dispatcher-type` (MoE models).
    #[serde(skip_serializing_if = "is_default")]
    pub dispatcher: Dispatcher,
    /// Megatron's router and permute fusions (`--moe-router-fusion`,
    /// `--moe-permute-fusion`) on or off; `None`: the stack's own
    /// ([`Stack::fuses_moe`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_fusion: Option<bool>,
    /// Megatron's EP overlap (`--overlap-moe-expert-parallel-comm`): in the
    /// steady state a micro-batch's forward runs together with another's
    /// backward, so one's all-to-alls overlap the other's compute.
    #[serde(skip_serializing_if = "is_false")]
    pub moe_a2a_overlap: bool,
    /// Tokens of the busiest expert rank over the mean, in thousandths
    /// (`--moe-imbalance`); `None`: balanced routing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_imbalance_milli: Option<u32>,
    /// Transformer Engine's tensor-parallel communication overlap
    /// (Megatron's `--tp-comm-overlap`, needs sequence parallelism): each
    /// block's all-gather streams with its first GEMM and its
    /// reduce-scatter with its last, in both directions.
    #[serde(skip_serializing_if = "is_false")]
    pub tp_comm_overlap: bool,
    /// Launches the device's queue holds per rank (`--launch-queue-depth`)
    /// instead of [`LAUNCH_QUEUE_DEPTH`]; `Some(0)`: unbounded (the host
    /// may run a whole iteration ahead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_queue_depth: Option<u32>,
    /// The fused attention kernel (`--attention-kernel`;
    /// [`AttentionKernel`]).
    #[serde(default, skip_serializing_if = "is_default")]
    pub attention_kernel: AttentionKernel,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// Largest `--host-launch-us`, microseconds (one second).
pub const MAX_HOST_LAUNCH_US: f64 = 1e6;

impl Named for Stack {
    const KIND: &'static str = "stack";
    const CHOICES: &'static [Stack] = &Stack::ALL;
    fn name(self) -> &'static str {
        Stack::name(self)
    }
}

impl Named for CudaGraphs {
    const KIND: &'static str = "CUDA graph scope";
    const CHOICES: &'static [CudaGraphs] = &CudaGraphs::ALL;
    /// Megatron's `--cuda-graph-scope` word for per-layer graphs.
    const ALIASES: &'static [(&'static str, CudaGraphs)] = &[("partial", CudaGraphs::Layers)];
    fn name(self) -> &'static str {
        CudaGraphs::name(self)
    }
}

/// A host time per kernel given in microseconds (`--host-launch-us`, the
/// page's field) as ns, or the message for a value out of range.
pub fn launch_ns_from_us(us: f64) -> Result<u64, String> {
    if us.is_finite() && (0.0..=MAX_HOST_LAUNCH_US).contains(&us) {
        Ok((us * 1e3).round() as u64)
    } else {
        Err(format!(
            "host time per kernel {us} us is out of range; give 0 to 1000000 microseconds"
        ))
    }
}

impl StackSettings {
    /// The CLI flags that set this stack on top of the defaults
    /// (` --stack torch-compile --cuda-graphs full`; empty for the default),
    /// as a sweep row's command and the page's CLI line write them.
    pub fn flags(&self) -> String {
        let d = StackSettings::default();
        let mut f = String::new();
        if self.stack != d.stack {
            f.push_str(&format!(" --stack {}", self.stack.name()));
        }
        if self.cuda_graphs != d.cuda_graphs {
            f.push_str(&format!(" --cuda-graphs {}", self.cuda_graphs.name()));
        }
        if let Some(ns) = self.launch_ns_per_kernel {
            f.push_str(&format!(" --host-launch-us {}", launch_us_text(ns)));
        }
        if let Some(d) = self.launch_queue_depth {
            f.push_str(&format!(" --launch-queue-depth {d}"));
        }
        if self.dispatcher != d.dispatcher {
            f.push_str(&format!(
                " --moe-token-dispatcher {}",
                self.dispatcher.name()
            ));
        }
        if let Some(on) = self.moe_fusion {
            f.push_str(&format!(" --moe-fusion {}", if on { "on" } else { "off" }));
        }
        if self.moe_a2a_overlap {
            f.push_str(" --moe-a2a-overlap");
        }
        if self.tp_comm_overlap {
            f.push_str(" --tp-comm-overlap");
        }
        if self.attention_kernel != d.attention_kernel {
            f.push_str(&format!(
                " --attention-kernel {}",
                self.attention_kernel.name()
            ));
        }
        if let Some(m) = self.moe_imbalance_milli {
            f.push_str(&format!(
                " --moe-imbalance {}",
                crate::limits::number(f64::from(m) / 1e3)
            ));
        }
        f
    }

    /// Whether the router and permute kernels are fused.
    pub fn moe_fused(&self) -> bool {
        self.moe_fusion.unwrap_or_else(|| self.stack.fuses_moe())
    }

    /// The busiest expert rank's tokens over the mean (1: balanced).
    pub fn moe_imbalance(&self) -> f64 {
        self.moe_imbalance_milli
            .map_or(1.0, |m| f64::from(m.max(BALANCED_MILLI)) / 1e3)
    }

    /// Whether Megatron's token dispatcher syncs the host before the routed
    /// experts: always, unless whole-step graphs (static token counts) or
    /// the host model is off.
    pub fn syncs_before_experts(&self) -> bool {
        self.cuda_graphs != CudaGraphs::Full && self.per_kernel_ns() > 0
    }

    /// The launch queue's depth the engine takes
    /// ([`crate::engine::SimConfig::launch_queue_depth`]): `None` when
    /// unbounded.
    pub fn queue_depth(&self) -> Option<u32> {
        match self.launch_queue_depth {
            Some(0) => None,
            Some(d) => Some(d),
            None => Some(LAUNCH_QUEUE_DEPTH),
        }
    }

    /// Entries an op of `kernels` kernels (all it launches) in `region`
    /// adds to the launch queue: one per kernel, or one graph launch.
    pub fn queue_entries(&self, kernels: u32, region: Region) -> u32 {
        if self.captured(region) {
            kernels.min(1)
        } else {
            kernels
        }
    }

    /// Host time per kernel, ns.
    pub fn per_kernel_ns(&self) -> u64 {
        self.launch_ns_per_kernel
            .unwrap_or_else(|| self.stack.launch_ns_per_kernel())
    }

    /// Whether a CUDA graph captures an op of `region`.
    pub fn captured(&self, region: Region) -> bool {
        match (self.cuda_graphs, region) {
            (CudaGraphs::None, _) | (_, Region::Outside) => false,
            (CudaGraphs::Layers, Region::DynamicExperts) => false,
            (CudaGraphs::Layers | CudaGraphs::Full, _) => true,
        }
    }

    /// Host time to launch an op of `kernels` kernels in `region`, ns: one
    /// graph launch when captured, else a launch per kernel; 0 for an op
    /// without kernels or with the host model off.
    pub fn launch_ns(&self, kernels: u32, region: Region) -> u64 {
        let per = self.per_kernel_ns();
        if kernels == 0 || per == 0 {
            return 0;
        }
        if self.captured(region) {
            GRAPH_LAUNCH_NS.min(per.saturating_mul(u64::from(kernels)))
        } else {
            per.saturating_mul(u64::from(kernels))
        }
    }
}

impl StackSettings {
    /// Host time for `native` kernels launched from a C++ loop of an op in
    /// `region` ([`NATIVE_LAUNCH_NS`] each; nothing when captured in a
    /// graph, whose one launch [`StackSettings::launch_ns`] counts, or with
    /// the host model off).
    pub fn native_launch_ns(&self, native: u32, region: Region) -> u64 {
        if self.per_kernel_ns() == 0 || self.captured(region) {
            return 0;
        }
        NATIVE_LAUNCH_NS
            .min(self.per_kernel_ns())
            .saturating_mul(u64::from(native))
    }

    /// Host time for `gemms` expert GEMMs of a grouped GEMM beyond its
    /// first in `region` ([`GROUPED_GEMM_LAUNCH_NS`] each, at most the
    /// stack's per-kernel cost; nothing when captured or with the host
    /// model off).
    pub fn grouped_gemm_launch_ns(&self, gemms: u32, region: Region) -> u64 {
        if self.per_kernel_ns() == 0 || self.captured(region) {
            return 0;
        }
        GROUPED_GEMM_LAUNCH_NS
            .min(self.per_kernel_ns())
            .saturating_mul(u64::from(gemms))
    }
}

/// A launch queue depth as a user types it (`--launch-queue-depth`, the
/// page's field): 0 for unbounded, else 1 to [`MAX_LAUNCH_QUEUE_DEPTH`].
pub fn queue_depth_from_text(text: &str) -> Result<u32, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("unbounded") {
        return Ok(0);
    }
    match t.parse::<u32>() {
        Ok(d) if d <= MAX_LAUNCH_QUEUE_DEPTH => Ok(d),
        _ => Err(format!(
            "launch queue depth `{t}` is not a count of launches; give 1 to {MAX_LAUNCH_QUEUE_DEPTH}, or 0 (unbounded)"
        )),
    }
}

/// A host time per kernel in ns as the microseconds a user types.
pub fn launch_us_text(ns: u64) -> String {
    crate::limits::number(ns as f64 / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launch_queue_is_1024_deep_unless_set() {
        let d = StackSettings::default();
        assert_eq!(d.queue_depth(), Some(LAUNCH_QUEUE_DEPTH));
        assert_eq!(d.flags(), "");
        let unbounded = StackSettings {
            launch_queue_depth: Some(0),
            ..d
        };
        assert_eq!(unbounded.queue_depth(), None);
        assert_eq!(unbounded.flags(), " --launch-queue-depth 0");
        let shallow = StackSettings {
            launch_queue_depth: Some(64),
            ..d
        };
        assert_eq!(shallow.queue_depth(), Some(64));
        assert_eq!(queue_depth_from_text(" 64 "), Ok(64));
        assert_eq!(queue_depth_from_text("unbounded"), Ok(0));
        assert!(queue_depth_from_text("-1").is_err());
        assert!(queue_depth_from_text("1e3").is_err());
        assert!(queue_depth_from_text(&(MAX_LAUNCH_QUEUE_DEPTH + 1).to_string()).is_err());
        // One entry per kernel, one per graph launch.
        assert_eq!(d.queue_entries(30, Region::Layer), 30);
        let graphs = StackSettings {
            cuda_graphs: CudaGraphs::Layers,
            ..d
        };
        assert_eq!(graphs.queue_entries(30, Region::Layer), 1);
        assert_eq!(graphs.queue_entries(30, Region::DynamicExperts), 30);
        assert_eq!(graphs.queue_entries(0, Region::Layer), 0);
    }

    #[test]
    fn names_round_trip() {
        for s in Stack::ALL {
            assert_eq!(Stack::from_name(s.name()), Some(s));
        }
        for g in CudaGraphs::ALL {
            assert_eq!(CudaGraphs::from_name(g.name()), Some(g));
        }
        assert_eq!(CudaGraphs::from_name("Partial"), Some(CudaGraphs::Layers));
        assert_eq!(Stack::from_name("jax"), None);
        assert!(Stack::parse("jax").unwrap_err().contains("megatron-te"));
        assert_eq!(launch_ns_from_us(12.5), Ok(12_500));
        assert!(launch_ns_from_us(-1.0).is_err());
        let s = StackSettings {
            stack: Stack::TorchCompile,
            cuda_graphs: CudaGraphs::Full,
            launch_ns_per_kernel: Some(12_500),
            ..StackSettings::default()
        };
        assert_eq!(
            s.flags(),
            " --stack torch-compile --cuda-graphs full --host-launch-us 12.5"
        );
        let moe = StackSettings {
            dispatcher: Dispatcher::Flex,
            moe_fusion: Some(false),
            moe_a2a_overlap: true,
            moe_imbalance_milli: Some(1250),
            ..StackSettings::default()
        };
        assert_eq!(
            moe.flags(),
            " --moe-token-dispatcher flex --moe-fusion off --moe-a2a-overlap --moe-imbalance 1.25"
        );
        assert!(!moe.moe_fused());
        assert_eq!(moe.moe_imbalance(), 1.25);
        assert_eq!(StackSettings::default().flags(), "");
    }

    #[test]
    fn graphs_replace_launches_in_their_scope() {
        let eager = StackSettings::default();
        assert_eq!(eager.launch_ns(10, Region::Layer), 10 * MEGATRON_LAUNCH_NS);
        let layers = StackSettings {
            cuda_graphs: CudaGraphs::Layers,
            ..eager
        };
        assert_eq!(layers.launch_ns(10, Region::Layer), GRAPH_LAUNCH_NS);
        assert_eq!(
            layers.launch_ns(10, Region::DynamicExperts),
            10 * MEGATRON_LAUNCH_NS
        );
        assert_eq!(
            layers.launch_ns(10, Region::Outside),
            10 * MEGATRON_LAUNCH_NS
        );
        let full = StackSettings {
            cuda_graphs: CudaGraphs::Full,
            ..eager
        };
        assert_eq!(full.launch_ns(10, Region::DynamicExperts), GRAPH_LAUNCH_NS);
        let off = StackSettings {
            launch_ns_per_kernel: Some(0),
            ..full
        };
        assert_eq!(off.launch_ns(10, Region::Layer), 0);
        assert_eq!(eager.launch_ns(0, Region::Layer), 0);
    }

    #[test]
    fn a_grouped_gemms_expert_gemms_cost_more_than_a_bare_launch() {
        let eager = StackSettings::default();
        let experts = Region::DynamicExperts;
        assert_eq!(
            eager.grouped_gemm_launch_ns(15, experts),
            15 * GROUPED_GEMM_LAUNCH_NS
        );
        assert!(eager.grouped_gemm_launch_ns(15, experts) > eager.native_launch_ns(15, experts));
        // Never above the stack's own per-kernel cost, nothing when
        // captured or with the host model off.
        let cheap = StackSettings {
            launch_ns_per_kernel: Some(20_000),
            ..eager
        };
        assert_eq!(cheap.grouped_gemm_launch_ns(2, experts), 40_000);
        let full = StackSettings {
            cuda_graphs: CudaGraphs::Full,
            ..eager
        };
        assert_eq!(full.grouped_gemm_launch_ns(15, experts), 0);
        let off = StackSettings {
            launch_ns_per_kernel: Some(0),
            ..eager
        };
        assert_eq!(off.grouped_gemm_launch_ns(15, experts), 0);
    }
}
