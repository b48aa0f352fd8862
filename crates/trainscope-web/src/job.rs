//! The "Describe a job" settings: a model (a built-in preset or a dropped
//! HuggingFace `config.json`) with its training setup and parallelism,
//! which the worker turns into the core's [`TrainingSetup`] and simulates
//! with [`trainscope_core::job::run::run_model`], as `trainscope simulate
//! --model` does. [`JobSettings`] holds the panel's values: the model, the
//! GPU type and the core's [`TrainingSetup`] itself (defaults are the
//! core's [`TrainingSetup::default`] and [`DEFAULT_GPU`]), [`JobField`]
//! names each field (URL key, test id, label), [`JobSettings::get`] /
//! [`JobSettings::set`] are the text form the panel and the URL fragment
//! use, and [`fragment_parts`] / [`JobSettings::apply_fragment`] put the
//! whole description in a link. Pure Rust, no DOM: the page and the worker
//! share it.
//!
//! Validation of the combination (heads divisible by TP, layers by PP x
//! virtual stages, the batch by micro-batch x DP, ...) is the core's
//! ([`trainscope_core::job::ModelJob::new`]), run in the worker, so the
//! page shows the CLI's messages word for word; here only text that is not
//! a value at all is refused.

use crate::settings::{Field, Schedule, Settings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use trainscope_core::hardware::{gpu_preset, Precision, GPU_NAMES};
use trainscope_core::job::sharding::{Sharding, ZeroStage};
use trainscope_core::job::{Recompute, TrainingSetup, DEFAULT_GPU};
use trainscope_core::model::attention_kernel::AttentionKernel;
use trainscope_core::model::dispatcher::{imbalance_milli, parse_fusion, Dispatcher};
use trainscope_core::model::presets;
use trainscope_core::model::stack::{
    launch_ns_from_us, launch_us_text, queue_depth_from_text, CudaGraphs, Stack,
};
use trainscope_core::named::Named;

/// The preset the panel starts with (the CLI has no default model: `--model`
/// is required).
pub const DEFAULT_PRESET: &str = "llama3-8b";

/// Where the job's model comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum JobModel {
    /// A built-in preset ([`presets::NAMES`], canonical spelling).
    Preset(String),
    /// A loaded HuggingFace `config.json`, by file name. A link cannot carry
    /// the file: it names it, and the file must be dropped again.
    File(String),
}

impl Default for JobModel {
    fn default() -> Self {
        JobModel::Preset(DEFAULT_PRESET.to_string())
    }
}

impl JobModel {
    /// The `<select>` value: the preset name, or `file:` + the file name.
    pub fn value(&self) -> String {
        match self {
            JobModel::Preset(n) => n.clone(),
            JobModel::File(n) => format!("{FILE_PREFIX}{n}"),
        }
    }

    /// The name shown (preset name or file name).
    pub fn name(&self) -> &str {
        match self {
            JobModel::Preset(n) | JobModel::File(n) => n,
        }
    }
}

/// Prefix of a file's `<select>` value.
pub const FILE_PREFIX: &str = "file:";

/// The job panel's values: the model, the GPU type and the core's
/// [`TrainingSetup`] itself (one type per concept: every training field is
/// the core's). `Default` is the core's [`TrainingSetup`] default with DP 1
/// (the CLI's with neither `--dp` nor `--world`), the core's
/// [`DEFAULT_GPU`] and [`DEFAULT_PRESET`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobSettings {
    pub model: JobModel,
    /// GPU preset, canonical name ([`GPU_NAMES`]).
    pub gpu: String,
    /// The training setup as the panel holds it. The panel always states
    /// DP (`dp` is `Some`; [`JobSettings::dp`] reads it), and the Sharding
    /// select's ZeRO stage may stand below the distributed optimizer's
    /// (ZeRO-1) until [`JobSettings::setup`] reconciles them, as the core
    /// does.
    pub training: TrainingSetup,
}

impl Default for JobSettings {
    fn default() -> Self {
        JobSettings {
            model: JobModel::default(),
            gpu: DEFAULT_GPU.to_string(),
            training: TrainingSetup {
                dp: Some(1),
                ..TrainingSetup::default()
            },
        }
    }
}

/// One field of the job panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum JobField {
    Model,
    Gpu,
    Tp,
    Pp,
    Dp,
    Cp,
    Ep,
    ExpertTp,
    Vpp,
    MicroBatchSize,
    GlobalBatchSize,
    FirstStageLayers,
    LastStageLayers,
    SeqLength,
    Precision,
    Recompute,
    SequenceParallel,
    DistributedOptimizer,
    FlashAttention,
    AccountForEmbedding,
    AccountForLoss,
    Bf16Grads,
    Fp8ParamGather,
    Stack,
    CudaGraphs,
    HostLaunchUs,
    LaunchQueueDepth,
    MoeDispatcher,
    MoeFusion,
    MoeA2aOverlap,
    MoeImbalance,
    TpCommOverlap,
    AttentionKernel,
    Sharding,
    FsdpPrefetch,
    ReshardAfterForward,
    HsdpShard,
    Offload,
}

impl JobField {
    /// Every field, in panel and URL order.
    pub const ALL: [JobField; 38] = [
        JobField::Model,
        JobField::Gpu,
        JobField::Tp,
        JobField::Cp,
        JobField::Pp,
        JobField::Dp,
        JobField::Ep,
        JobField::ExpertTp,
        JobField::Vpp,
        JobField::MicroBatchSize,
        JobField::GlobalBatchSize,
        JobField::SeqLength,
        JobField::FirstStageLayers,
        JobField::LastStageLayers,
        JobField::Precision,
        JobField::Recompute,
        JobField::SequenceParallel,
        JobField::DistributedOptimizer,
        JobField::FlashAttention,
        JobField::AccountForEmbedding,
        JobField::AccountForLoss,
        JobField::Bf16Grads,
        JobField::Fp8ParamGather,
        JobField::Stack,
        JobField::CudaGraphs,
        JobField::HostLaunchUs,
        JobField::LaunchQueueDepth,
        JobField::MoeDispatcher,
        JobField::MoeFusion,
        JobField::MoeA2aOverlap,
        JobField::MoeImbalance,
        JobField::TpCommOverlap,
        JobField::AttentionKernel,
        JobField::Sharding,
        JobField::FsdpPrefetch,
        JobField::ReshardAfterForward,
        JobField::HsdpShard,
        JobField::Offload,
    ];

    /// URL fragment key (a dropped file's model is written as
    /// [`MODEL_FILE_KEY`] instead of `model`).
    pub fn key(self) -> &'static str {
        match self {
            JobField::Model => "model",
            JobField::Gpu => "job_gpu",
            JobField::Tp => "job_tp",
            JobField::Pp => "job_pp",
            JobField::Dp => "job_dp",
            JobField::Ep => "job_ep",
            JobField::ExpertTp => "job_etp",
            JobField::Cp => "job_cp",
            JobField::Vpp => "job_vpp",
            JobField::MicroBatchSize => "job_mbs",
            JobField::GlobalBatchSize => "job_gbs",
            JobField::FirstStageLayers => "job_first_layers",
            JobField::LastStageLayers => "job_last_layers",
            JobField::SeqLength => "job_seq",
            JobField::Precision => "job_precision",
            JobField::Recompute => "job_recompute",
            JobField::SequenceParallel => "job_sp",
            JobField::DistributedOptimizer => "job_dist_opt",
            JobField::FlashAttention => "job_flash",
            JobField::AccountForEmbedding => "job_split_emb",
            JobField::AccountForLoss => "job_split_loss",
            JobField::Bf16Grads => "job_bf16_grads",
            JobField::Fp8ParamGather => "job_fp8_param_gather",
            JobField::Stack => "job_stack",
            JobField::CudaGraphs => "job_cuda_graphs",
            JobField::HostLaunchUs => "job_host_launch_us",
            JobField::LaunchQueueDepth => "job_launch_queue",
            JobField::MoeDispatcher => "job_moe_dispatcher",
            JobField::MoeFusion => "job_moe_fusion",
            JobField::MoeA2aOverlap => "job_moe_a2a_overlap",
            JobField::MoeImbalance => "job_moe_imbalance",
            JobField::TpCommOverlap => "job_tp_overlap",
            JobField::AttentionKernel => "job_attention_kernel",
            JobField::Sharding => "job_zero",
            JobField::FsdpPrefetch => "job_fsdp_prefetch",
            JobField::ReshardAfterForward => "job_reshard",
            JobField::HsdpShard => "job_hsdp_shard",
            JobField::Offload => "job_offload",
        }
    }

    pub fn from_key(key: &str) -> Option<JobField> {
        JobField::ALL.into_iter().find(|f| f.key() == key)
    }

    /// `data-testid` of the field's control (`job-tp`, `job-model`, ...).
    pub fn testid(self) -> String {
        match self {
            JobField::Model => "job-model".into(),
            f => format!("job-{}", &f.key()["job_".len()..]).replace('_', "-"),
        }
    }

    /// Label next to the control.
    pub fn label(self) -> &'static str {
        match self {
            JobField::Model => "Model",
            JobField::Gpu => "GPU type",
            JobField::Tp => "TP",
            JobField::Pp => "PP",
            JobField::Dp => "DP",
            JobField::Ep => "EP",
            JobField::ExpertTp => "Expert TP",
            JobField::Cp => "CP",
            JobField::Vpp => "Virtual stages",
            JobField::MicroBatchSize => "Micro-batch size",
            JobField::GlobalBatchSize => "Global batch",
            JobField::FirstStageLayers => "First-stage layers",
            JobField::LastStageLayers => "Last-stage layers",
            JobField::SeqLength => "Sequence length",
            JobField::Precision => "Precision",
            JobField::Recompute => "Recompute",
            JobField::SequenceParallel => "Sequence parallel",
            JobField::DistributedOptimizer => "Distributed optimizer",
            JobField::FlashAttention => "Flash attention",
            JobField::AccountForEmbedding => "Embedding in pipeline split",
            JobField::AccountForLoss => "Loss in pipeline split",
            JobField::Bf16Grads => "bf16 gradients",
            JobField::Fp8ParamGather => "FP8 parameter gather",
            JobField::Stack => "Software stack",
            JobField::CudaGraphs => "CUDA graphs",
            JobField::HostLaunchUs => "Host µs per kernel",
            JobField::LaunchQueueDepth => "Launch queue depth",
            JobField::MoeDispatcher => "MoE token dispatcher",
            JobField::MoeFusion => "MoE router/permute fusion",
            JobField::MoeA2aOverlap => "EP overlap",
            JobField::MoeImbalance => "MoE imbalance (busiest rank)",
            JobField::TpCommOverlap => "TP comm overlap",
            JobField::AttentionKernel => "Attention kernel",
            JobField::Sharding => "Sharding",
            JobField::FsdpPrefetch => "FSDP prefetch",
            JobField::ReshardAfterForward => "Reshard after forward",
            JobField::HsdpShard => "HSDP shard group",
            JobField::Offload => "Offload to host",
        }
    }

    /// The CLI flag the field stands for (shown as the control's title).
    pub fn flag(self) -> &'static str {
        match self {
            JobField::Model => "--model",
            JobField::Gpu => "--gpu-type",
            JobField::Tp => "--tp",
            JobField::Pp => "--pp",
            JobField::Dp => "--dp",
            JobField::Ep => "--ep",
            JobField::ExpertTp => "--expert-tp (empty: TP)",
            JobField::Cp => "--cp",
            JobField::Vpp => "--vpp",
            JobField::MicroBatchSize => "--micro-batch-size",
            JobField::GlobalBatchSize => "--global-batch-size",
            JobField::FirstStageLayers => "--first-stage-layers",
            JobField::LastStageLayers => "--last-stage-layers",
            JobField::SeqLength => "--seq-length",
            JobField::Precision => "--precision",
            JobField::Recompute => "--recompute",
            JobField::SequenceParallel => "--sequence-parallel",
            JobField::DistributedOptimizer => "--distributed-optimizer",
            JobField::FlashAttention => "--no-flash-attention (unchecked)",
            JobField::AccountForEmbedding => "--account-for-embedding-in-pipeline-split",
            JobField::AccountForLoss => "--account-for-loss-in-pipeline-split",
            JobField::Bf16Grads => "--no-grad-reduce-in-fp32",
            JobField::Fp8ParamGather => "--fp8-param-gather (FP8 only)",
            JobField::Stack => "--stack",
            JobField::CudaGraphs => "--cuda-graphs",
            JobField::HostLaunchUs => "--host-launch-us (empty: the stack's)",
            JobField::LaunchQueueDepth => "--launch-queue-depth (empty: 1024; 0: unbounded)",
            JobField::MoeDispatcher => "--moe-token-dispatcher",
            JobField::MoeFusion => "--moe-fusion (stack's: as the stack runs it)",
            JobField::MoeA2aOverlap => "--moe-a2a-overlap",
            JobField::MoeImbalance => "--moe-imbalance (empty: balanced)",
            JobField::TpCommOverlap => "--tp-comm-overlap",
            JobField::AttentionKernel => "--attention-kernel (flash2: FlashAttention-2)",
            JobField::Sharding => "--zero N (1: --distributed-optimizer; 3: --fsdp)",
            JobField::FsdpPrefetch => "--fsdp-prefetch",
            JobField::ReshardAfterForward => "--no-reshard-after-forward (unchecked)",
            JobField::HsdpShard => "--hsdp-shard N (ZeRO-3; empty: shard over all of DP)",
            JobField::Offload => "--offload optimizer|optimizer+params",
        }
    }

    /// The other fields that show the same setting (the distributed
    /// optimizer is ZeRO-1 of the Sharding select): their text follows
    /// when this one changes.
    pub fn linked(self) -> &'static [JobField] {
        match self {
            JobField::DistributedOptimizer => &[JobField::Sharding],
            JobField::Sharding => &[JobField::DistributedOptimizer],
            _ => &[],
        }
    }

    /// Whether the field is an on/off checkbox.
    pub fn is_check(self) -> bool {
        matches!(
            self,
            JobField::SequenceParallel
                | JobField::DistributedOptimizer
                | JobField::FlashAttention
                | JobField::AccountForEmbedding
                | JobField::AccountForLoss
                | JobField::Bf16Grads
                | JobField::Fp8ParamGather
                | JobField::MoeA2aOverlap
                | JobField::TpCommOverlap
                | JobField::ReshardAfterForward
        )
    }
}

impl fmt::Display for JobField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// URL key of a model that is a dropped file (its name; the file itself
/// cannot be in a link).
pub const MODEL_FILE_KEY: &str = "model_file";

fn parse_count(text: &str) -> Result<u32, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("enter a whole number".into());
    }
    t.parse::<u32>()
        .map_err(|_| format!("`{t}` is not a whole number ≥ 0"))
}

/// An optional count: empty is `None` (the core's default).
fn parse_optional(text: &str) -> Result<Option<u32>, String> {
    if text.trim().is_empty() {
        Ok(None)
    } else {
        parse_count(text).map(Some)
    }
}

fn optional(v: Option<u32>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

fn parse_on_off(text: &str) -> Result<bool, String> {
    trainscope_core::limits::on_off(text).ok_or_else(|| format!("`{}` is not on/off", text.trim()))
}

fn on_off(b: bool) -> String {
    if b { "1" } else { "0" }.into()
}

/// The canonical preset name for `text` (case-insensitive), or the core's
/// message for an unknown preset ([`presets::lookup`]).
pub fn preset_name(text: &str) -> Result<String, String> {
    let t = text.trim();
    match presets::NAMES.iter().find(|n| n.eq_ignore_ascii_case(t)) {
        Some(n) => Ok((*n).to_string()),
        None => Err(match presets::lookup(t) {
            Err(d) => match d.hint {
                Some(h) => format!("{}; {h}", d.message),
                None => d.message,
            },
            // Unreachable: lookup knows the same names.
            Ok(m) => m.name,
        }),
    }
}

/// The canonical GPU preset name for `text` (case-insensitive, aliases
/// such as `H100` accepted), or the CLI's message.
pub fn gpu_name(text: &str) -> Result<String, String> {
    gpu_preset(text).map(|g| g.name).ok_or_else(|| {
        format!(
            "unknown GPU type `{}`; expected one of: {}",
            text.trim(),
            GPU_NAMES.join(", ")
        )
    })
}

impl JobSettings {
    /// A field's value as text (the control's value, the URL value).
    pub fn get(&self, field: JobField) -> String {
        match field {
            JobField::Model => self.model.value(),
            JobField::Gpu => self.gpu.clone(),
            JobField::Tp => self.training.tp.to_string(),
            JobField::Pp => self.training.pp.to_string(),
            JobField::Dp => self.dp().to_string(),
            JobField::Ep => self.training.ep.to_string(),
            JobField::ExpertTp => optional(self.training.expert_tp),
            JobField::Cp => self.training.cp.to_string(),
            JobField::Vpp => self.training.vpp.to_string(),
            JobField::MicroBatchSize => self.training.micro_batch_size.to_string(),
            JobField::GlobalBatchSize => optional(self.training.global_batch_size),
            JobField::FirstStageLayers => optional(self.training.first_stage_layers),
            JobField::LastStageLayers => optional(self.training.last_stage_layers),
            JobField::SeqLength => self.training.seq_length.to_string(),
            JobField::Precision => self.training.precision.name().into(),
            JobField::Recompute => self.training.recompute.name().into(),
            JobField::SequenceParallel => on_off(self.training.sequence_parallel),
            JobField::DistributedOptimizer => on_off(self.training.distributed_optimizer),
            JobField::FlashAttention => on_off(self.training.flash_attention),
            JobField::AccountForEmbedding => on_off(self.training.account_for_embedding),
            JobField::AccountForLoss => on_off(self.training.account_for_loss),
            JobField::Bf16Grads => on_off(self.training.bf16_grads),
            JobField::Fp8ParamGather => on_off(self.training.fp8_param_gather),
            JobField::Stack => self.training.stack.stack.name().into(),
            JobField::CudaGraphs => self.training.stack.cuda_graphs.name().into(),
            JobField::HostLaunchUs => self
                .training
                .stack
                .launch_ns_per_kernel
                .map_or(String::new(), launch_us_text),
            JobField::LaunchQueueDepth => self
                .training
                .stack
                .launch_queue_depth
                .map_or(String::new(), |d| d.to_string()),
            JobField::MoeDispatcher => self.training.stack.dispatcher.name().into(),
            JobField::MoeFusion => match self.training.stack.moe_fusion {
                None => String::new(),
                Some(on) => if on { "on" } else { "off" }.into(),
            },
            JobField::MoeA2aOverlap => on_off(self.training.stack.moe_a2a_overlap),
            JobField::TpCommOverlap => on_off(self.training.stack.tp_comm_overlap),
            JobField::AttentionKernel => self.training.stack.attention_kernel.name().into(),
            JobField::MoeImbalance => self
                .training
                .stack
                .moe_imbalance_milli
                .map_or(String::new(), |m| {
                    trainscope_core::limits::number(f64::from(m) / 1e3)
                }),
            JobField::Sharding => self.zero().level().to_string(),
            JobField::FsdpPrefetch => self.training.sharding.prefetch.to_string(),
            JobField::ReshardAfterForward => on_off(self.training.sharding.reshard_after_forward),
            JobField::HsdpShard => match self.training.sharding.hsdp_shard {
                0 => String::new(),
                n => n.to_string(),
            },
            JobField::Offload => self.training.sharding.offload.name().into(),
        }
    }

    /// Set a field from text; a value that does not parse leaves the field
    /// unchanged and returns the message to show next to it. The global
    /// batch may be empty (the core's default).
    pub fn set(&mut self, field: JobField, text: &str) -> Result<(), String> {
        match field {
            JobField::Model => {
                self.model = match text.strip_prefix(FILE_PREFIX) {
                    Some(name) if !name.is_empty() => JobModel::File(name.to_string()),
                    _ => JobModel::Preset(preset_name(text)?),
                }
            }
            JobField::Gpu => self.gpu = gpu_name(text)?,
            JobField::Tp => self.training.tp = parse_count(text)?,
            JobField::Pp => self.training.pp = parse_count(text)?,
            JobField::Dp => self.training.dp = Some(parse_count(text)?),
            JobField::Ep => self.training.ep = parse_count(text)?,
            JobField::ExpertTp => self.training.expert_tp = parse_optional(text)?,
            JobField::Cp => self.training.cp = parse_count(text)?,
            JobField::Vpp => self.training.vpp = parse_count(text)?,
            JobField::MicroBatchSize => self.training.micro_batch_size = parse_count(text)?,
            JobField::GlobalBatchSize => self.training.global_batch_size = parse_optional(text)?,
            JobField::FirstStageLayers => self.training.first_stage_layers = parse_optional(text)?,
            JobField::LastStageLayers => self.training.last_stage_layers = parse_optional(text)?,
            JobField::SeqLength => self.training.seq_length = parse_count(text)?,
            JobField::Precision => {
                self.training.precision = Precision::from_name(text).ok_or_else(|| {
                    format!(
                        "unknown precision `{}`; expected one of: fp32, bf16, fp16, fp8",
                        text.trim()
                    )
                })?
            }
            JobField::Recompute => {
                self.training.recompute = Recompute::from_name(text).ok_or_else(|| {
                    format!(
                        "unknown recompute mode `{}`; expected one of: {}",
                        text.trim(),
                        Recompute::names()
                    )
                })?
            }
            JobField::SequenceParallel => self.training.sequence_parallel = parse_on_off(text)?,
            JobField::DistributedOptimizer => {
                self.training.distributed_optimizer = parse_on_off(text)?;
                // ZeRO-1 is the distributed optimizer: off leaves nothing
                // sharded, on at least the optimizer states.
                self.training.sharding.zero = if self.training.distributed_optimizer {
                    self.training.sharding.zero.max(ZeroStage::Optimizer)
                } else {
                    ZeroStage::None
                };
            }
            JobField::Sharding => {
                let t = text.trim();
                let zero = t
                    .parse::<u8>()
                    .ok()
                    .and_then(ZeroStage::from_level)
                    .ok_or_else(|| format!("`{t}` is not a ZeRO stage (0, 1, 2 or 3)"))?;
                self.training.sharding.zero = zero;
                self.training.distributed_optimizer = zero >= ZeroStage::Optimizer;
            }
            JobField::FsdpPrefetch => self.training.sharding.prefetch = parse_count(text)?,
            JobField::ReshardAfterForward => {
                self.training.sharding.reshard_after_forward = parse_on_off(text)?
            }
            JobField::HsdpShard => {
                self.training.sharding.hsdp_shard = parse_optional(text)?.unwrap_or(0)
            }
            JobField::Offload => {
                self.training.sharding.offload =
                    trainscope_core::job::sharding::Offload::from_name(text).ok_or_else(|| {
                        format!(
                            "`{}` is not none, optimizer or optimizer+params",
                            text.trim()
                        )
                    })?
            }
            JobField::FlashAttention => self.training.flash_attention = parse_on_off(text)?,
            JobField::AccountForEmbedding => {
                self.training.account_for_embedding = parse_on_off(text)?
            }
            JobField::AccountForLoss => self.training.account_for_loss = parse_on_off(text)?,
            JobField::Bf16Grads => self.training.bf16_grads = parse_on_off(text)?,
            JobField::Fp8ParamGather => self.training.fp8_param_gather = parse_on_off(text)?,
            JobField::Stack => self.training.stack.stack = Stack::parse(text)?,
            JobField::CudaGraphs => self.training.stack.cuda_graphs = CudaGraphs::parse(text)?,
            JobField::HostLaunchUs => {
                let t = text.trim();
                self.training.stack.launch_ns_per_kernel = if t.is_empty() {
                    None
                } else {
                    let us = t.parse::<f64>().map_err(|_| {
                        format!(
                            "`{t}` is not a number of microseconds; leave it empty for the stack's"
                        )
                    })?;
                    Some(launch_ns_from_us(us)?)
                }
            }
            JobField::LaunchQueueDepth => {
                let t = text.trim();
                self.training.stack.launch_queue_depth = if t.is_empty() {
                    None
                } else {
                    Some(queue_depth_from_text(t)?)
                }
            }
            JobField::MoeDispatcher => self.training.stack.dispatcher = Dispatcher::parse(text)?,
            JobField::MoeFusion => {
                let t = text.trim();
                self.training.stack.moe_fusion = if t.is_empty() {
                    None
                } else {
                    Some(parse_fusion(t)?)
                }
            }
            JobField::MoeA2aOverlap => self.training.stack.moe_a2a_overlap = parse_on_off(text)?,
            JobField::TpCommOverlap => self.training.stack.tp_comm_overlap = parse_on_off(text)?,
            JobField::AttentionKernel => {
                self.training.stack.attention_kernel = AttentionKernel::parse(text)?
            }
            JobField::MoeImbalance => {
                let t = text.trim();
                self.training.stack.moe_imbalance_milli = if t.is_empty() {
                    None
                } else {
                    let x = t.parse::<f64>().map_err(|_| {
                        format!("`{t}` is not a number; give the busiest rank's tokens over the mean (1 = balanced) or leave it empty")
                    })?;
                    Some(imbalance_milli(x)?)
                }
            }
        }
        Ok(())
    }

    /// The core's training setup, exactly as the CLI builds it from the
    /// same flags (`--dp` given; no `--world`: the world is TP x PP x DP).
    pub fn setup(&self) -> TrainingSetup {
        TrainingSetup {
            dp: Some(self.dp()),
            sharding: Sharding {
                zero: self.zero(),
                ..self.training.sharding
            },
            ..self.training.clone()
        }
    }

    /// The panel's DP (1 when a value from elsewhere left it unstated).
    pub fn dp(&self) -> u32 {
        self.training.dp.unwrap_or(1)
    }

    /// The ZeRO stage the panel states: the Sharding select's, at least 1
    /// with the distributed optimizer on.
    pub fn zero(&self) -> ZeroStage {
        if self.training.distributed_optimizer {
            self.training.sharding.zero.max(ZeroStage::Optimizer)
        } else {
            self.training.sharding.zero
        }
    }

    /// TP x CP x PP x DP (saturating; the core refuses worlds that are too
    /// large).
    pub fn world(&self) -> u64 {
        u64::from(self.training.tp)
            * u64::from(self.training.cp)
            * u64::from(self.training.pp)
            * u64::from(self.dp())
    }

    /// The settings this job is simulated under: Configure's cluster with
    /// what the job defines, one model for the page's checks, its Configure
    /// form and the worker's run. The job's layout (world, TP, PP, EP,
    /// virtual stages); its GPU's NVLink bandwidth unless Configure's
    /// bandwidth is typed ([`nvlink_pinned`]: `--nvlink-gbps` wins over
    /// `--gpu-type`); and with virtual stages (vpp > 1) the interleaved
    /// schedule, as `--vpp` selects it on the command line.
    pub fn sim_settings(&self, settings: &Settings, pinned: &BTreeSet<Field>) -> Settings {
        let mut s = settings.clone();
        s.tp = self.training.tp;
        s.pp = self.training.pp;
        s.ep = self.training.ep;
        s.virtual_stages = self.training.vpp;
        s.world_size = u32::try_from(self.world()).unwrap_or(u32::MAX);
        if self.training.vpp > 1 {
            s.schedule = Schedule::Interleaved;
        }
        if !nvlink_pinned(pinned) {
            if let Some(g) = gpu_preset(&self.gpu) {
                s.nvlink_bw_gbps = g.nvlink_busbw_gbps;
            }
        }
        s
    }

    /// The same settings on another model.
    pub fn with_model(&self, model: JobModel) -> JobSettings {
        JobSettings {
            model,
            ..self.clone()
        }
    }

    /// The CLI command that simulates this job (the model file by its name).
    pub fn cli_command(&self) -> String {
        let d = JobSettings::default();
        let mut out = format!("trainscope simulate --model {}", self.model.name());
        let mut num = |flag: &str, v: u32, default: u32| {
            if v != default {
                out.push_str(&format!(" {flag} {v}"));
            }
        };
        num("--tp", self.training.tp, d.training.tp);
        num("--pp", self.training.pp, d.training.pp);
        num("--cp", self.training.cp, d.training.cp);
        num("--dp", self.dp(), d.dp());
        num("--ep", self.training.ep, d.training.ep);
        if let Some(e) = self.training.expert_tp {
            num("--expert-tp", e, 0);
        }
        num("--vpp", self.training.vpp, d.training.vpp);
        num(
            "--micro-batch-size",
            self.training.micro_batch_size,
            d.training.micro_batch_size,
        );
        if let Some(g) = self.training.global_batch_size {
            out.push_str(&format!(" --global-batch-size {g}"));
        }
        if self.training.seq_length != d.training.seq_length {
            out.push_str(&format!(" --seq-length {}", self.training.seq_length));
        }
        if self.training.precision != d.training.precision {
            out.push_str(&format!(" --precision {}", self.training.precision.name()));
        }
        if self.training.recompute != d.training.recompute {
            out.push_str(&format!(" --recompute {}", self.training.recompute.name()));
        }
        for (on, flag) in [
            (self.training.sequence_parallel, "--sequence-parallel"),
            (
                self.zero() == ZeroStage::Optimizer,
                "--distributed-optimizer",
            ),
            (!self.training.flash_attention, "--no-flash-attention"),
            (
                self.training.account_for_embedding,
                "--account-for-embedding-in-pipeline-split",
            ),
            (
                self.training.account_for_loss,
                "--account-for-loss-in-pipeline-split",
            ),
            (self.training.bf16_grads, "--no-grad-reduce-in-fp32"),
            (self.training.fp8_param_gather, "--fp8-param-gather"),
        ] {
            if on {
                out.push(' ');
                out.push_str(flag);
            }
        }
        if self.gpu != d.gpu {
            out.push_str(&format!(" --gpu-type {}", self.gpu));
        }
        out.push_str(&self.training.stack.flags());
        for flag in self.setup().sharding.flags() {
            out.push(' ');
            out.push_str(&flag);
        }
        out
    }

    /// Apply one URL `key=value` if it belongs to the job: `Some(Ok(()))`
    /// when applied, `Some(Err(message))` for a bad value, `None` when the
    /// key is not a job key.
    pub fn apply_fragment(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        if key == MODEL_FILE_KEY {
            if value.is_empty() {
                return Some(Err("empty file name".into()));
            }
            self.model = JobModel::File(value.to_string());
            return Some(Ok(()));
        }
        let field = JobField::from_key(key)?;
        Some(self.set(field, value))
    }
}

/// Whether Configure pins the NVLink bandwidth (its field typed): it then
/// wins over the job's GPU, as `--nvlink-gbps` does over `--gpu-type` on
/// the command line. The GPU type itself is the job's one choice while a
/// job runs (Configure shows it, read-only).
pub fn nvlink_pinned(pinned: &BTreeSet<Field>) -> bool {
    pinned.contains(&Field::NvlinkBw)
}

/// The job's `key=value` pairs for the URL fragment (values not yet
/// percent-encoded): every field, in panel order; the model as `model=` for
/// a preset or [`MODEL_FILE_KEY`] for a dropped file (named, not carried).
pub fn fragment_parts(job: &JobSettings) -> Vec<(&'static str, String)> {
    JobField::ALL
        .into_iter()
        .map(|f| match (f, &job.model) {
            (JobField::Model, JobModel::File(name)) => (MODEL_FILE_KEY, name.clone()),
            (JobField::Model, JobModel::Preset(name)) => (f.key(), name.clone()),
            _ => (f.key(), job.get(f)),
        })
        .collect()
}
