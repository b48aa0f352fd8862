//! Model-level jobs: a model ([`crate::model::ModelSpec`]), a training setup
//! and parallelism ([`TrainingSetup`]) and a GPU ([`crate::hardware::GpuSpec`])
//! become a workload the event engine runs ([`build::described_job`]: every
//! op's compute from the roofline, every collective with its size, pipeline
//! transfers of the real activation size), the memory of each pipeline
//! stage ([`memory`]) and the figures people compare (MFU, tokens/s,
//! [`Throughput`]).
//!
//! Conventions follow Megatron-LM (MODEL-JOBS.md): world = TP x CP x PP x
//! DP (CP 1 without context parallelism; rank order tp-cp-dp-pp, so a CP
//! group is CP consecutive ranks after TP; the sequence length a multiple
//! of 2 x CP); EP is carved out of DP (it must divide DP and the expert
//! count; EP with CP > 1 is refused);
//! micro-batches = global batch / (micro-batch x DP); virtual stages hold
//! layers / (PP x vpp) whole layers each; rank order TP fastest, then DP,
//! then PP. [`ModelJob::new`] refuses every inconsistent combination with a
//! message naming the numbers ([`JobError`]).

pub mod build;
pub mod calibrate;
pub mod export;
pub mod layout;
pub mod memory;
pub mod op_checkpoint;
pub mod run;
pub mod sharding;

use crate::hardware::{GpuSpec, Precision};
use crate::model::ModelSpec;
use serde::{Deserialize, Serialize};

/// Activation recomputation (Megatron `--recompute-granularity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    /// Keep every activation.
    #[default]
    None,
    /// Recompute the attention core in the backward (Korthikanti et al.
    /// 2022's selective recompute): its activations are not stored.
    Selective,
    /// Recompute each whole layer from its input in the backward.
    Full,
    /// torchtitan's per-op selective checkpointing: every other matmul,
    /// the attention core and communication saved, the rest recomputed
    /// ([`op_checkpoint`]).
    Op,
}

impl Recompute {
    /// Every mode, in a fixed order.
    pub const ALL: [Recompute; 4] = [
        Recompute::None,
        Recompute::Selective,
        Recompute::Full,
        Recompute::Op,
    ];

    /// What a sweep tries when not told (Megatron's three; torchtitan's
    /// `op` policy is asked for by name: it is refused for MoE and MLA
    /// models).
    pub const SWEPT: [Recompute; 3] = [Recompute::None, Recompute::Selective, Recompute::Full];

    /// Every name, for messages: `none, selective, full, op`.
    pub fn names() -> String {
        Recompute::ALL.map(Recompute::name).join(", ")
    }

    /// The name used by the CLI, JSON and the page.
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
            Recompute::Op => "op",
        }
    }

    /// Case-insensitive lookup of [`Recompute::name`].
    pub fn from_name(name: &str) -> Option<Recompute> {
        Recompute::ALL
            .into_iter()
            .find(|r| r.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// The training setup and parallelism of a model-level job, as a user
/// states it. `Default` is the one set of defaults the CLI and the page use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainingSetup {
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Data-parallel size; `None`: world / (TP x PP), or 1 without a world.
    pub dp: Option<u32>,
    /// Context-parallel size (Megatron's `--context-parallel-size`): every
    /// sequence split over CP ranks (2 x CP load-balanced chunks); weights
    /// replicated, gradients reduced over DP x CP. 1: none (then not
    /// written in JSON; older JSON without it reads as 1).
    #[serde(skip_serializing_if = "is_one")]
    pub cp: u32,
    /// Expert-parallel size: carved out of DP, or with expert tensor
    /// parallelism 1 out of TP x DP (MoE parallel folding).
    pub ep: u32,
    /// Expert tensor-parallel size (Megatron's
    /// `--expert-tensor-parallel-size`): how the routed experts' weights
    /// are split; `None`: TP. 1 with TP > 1 folds the experts' parallelism
    /// apart from the attention's: each rank keeps whole experts, the
    /// expert-parallel group spans TP x DP ranks (ETP x EP x expert-DP =
    /// TP x DP, ETP fastest). Only 1 and TP are modelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expert_tp: Option<u32>,
    /// Virtual pipeline stages (model chunks) per rank.
    pub vpp: u32,
    /// Megatron sequence parallelism (needs TP > 1).
    pub sequence_parallel: bool,
    /// Sequences per micro-batch.
    pub micro_batch_size: u32,
    /// Sequences per iteration; `None`: [`DEFAULT_GLOBAL_BATCH`] rounded
    /// up to a multiple of micro-batch x DP (noted).
    pub global_batch_size: Option<u32>,
    /// Tokens per sequence.
    pub seq_length: u32,
    pub precision: Precision,
    pub recompute: Recompute,
    /// Megatron's distributed optimizer (ZeRO-1 over DP).
    pub distributed_optimizer: bool,
    /// Fused (flash) attention: the score matrix is never stored.
    pub flash_attention: bool,
    /// Transformer layers on the first pipeline stage (Megatron's
    /// `--decoder-first-pipeline-num-layers`); `None`: an even split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_stage_layers: Option<u32>,
    /// Transformer layers on the last pipeline stage (Megatron's
    /// `--decoder-last-pipeline-num-layers`); `None`: an even split. The
    /// stages between share the other layers evenly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_stage_layers: Option<u32>,
    /// Megatron's `--account-for-embedding-in-pipeline-split`: the input
    /// embedding counts as one layer when the layers are cut into model
    /// chunks (PP x virtual stages of (layers + embedding + loss) / (PP x
    /// vpp) each), so the first chunk of stage 0 holds one transformer
    /// layer fewer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub account_for_embedding: bool,
    /// Megatron's `--account-for-loss-in-pipeline-split`: likewise the
    /// output layer and loss, on the last chunk of the last stage.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub account_for_loss: bool,
    /// Gradients kept and reduced in bf16 under bf16/FP8 training
    /// (Megatron-Bridge's `grad_reduce_in_fp32 = False`, which NVIDIA's
    /// performance recipes set; Megatron-LM's default is fp32): 2 bytes a
    /// gradient instead of 4, the reduce-scatter/all-reduce of half the
    /// bytes, and the optimizer's fp32 copy of its shard of them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bf16_grads: bool,
    /// FP8 training keeps the linear layers' weights in FP8 and the
    /// distributed optimizer all-gathers them in FP8 (Megatron's
    /// `--fp8-param-gather`; Megatron-Bridge's FP8 precision recipes set
    /// it): no bf16 copy of those weights beside their FP8 copies, and
    /// 1 byte a linear weight in the parameter all-gather.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fp8_param_gather: bool,
    /// The software stack that launches the kernels (framework, CUDA
    /// graphs, host time per kernel): [`crate::model::stack`].
    pub stack: crate::model::stack::StackSettings,
    /// Sharded data parallelism ([`sharding`]): the ZeRO stage (1 is
    /// `distributed_optimizer`, kept equal by [`ModelJob::new`]) and
    /// FSDP's prefetch and resharding. Not written in JSON at its default.
    #[serde(skip_serializing_if = "sharding::Sharding::is_default")]
    pub sharding: sharding::Sharding,
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// Sequences per iteration when the global batch is not given.
pub const DEFAULT_GLOBAL_BATCH: u32 = 1024;
/// Tokens per sequence by default.
pub const DEFAULT_SEQ_LENGTH: u32 = 4096;
/// The largest world a model-level job accepts.
pub const MAX_WORLD: u64 = 1 << 20;
/// The GPU preset ([`crate::hardware::gpu_preset`]) of a model-level job
/// when none is named (the CLI's `--gpu-type` default, the page's too).
pub const DEFAULT_GPU: &str = "H100-SXM";

impl Default for TrainingSetup {
    fn default() -> Self {
        TrainingSetup {
            tp: 1,
            pp: 1,
            dp: None,
            cp: 1,
            ep: 1,
            expert_tp: None,
            vpp: 1,
            sequence_parallel: false,
            micro_batch_size: 1,
            global_batch_size: None,
            seq_length: DEFAULT_SEQ_LENGTH,
            precision: Precision::Bf16,
            recompute: Recompute::None,
            distributed_optimizer: false,
            flash_attention: true,
            first_stage_layers: None,
            last_stage_layers: None,
            account_for_embedding: false,
            account_for_loss: false,
            bf16_grads: false,
            fp8_param_gather: false,
            stack: crate::model::stack::StackSettings::default(),
            sharding: sharding::Sharding::default(),
        }
    }
}

impl TrainingSetup {
    /// The casts the linear layers' weights pay every micro-batch
    /// ([`crate::model::ops::Casts`]), on PyTorch-level stacks (eager,
    /// compiled) without bf16 gradients (a PyTorch module's gradients take
    /// its weights' dtype: bf16 gradients are bf16 weights, nothing to
    /// cast); never under Megatron (compute-precision copies, cast once per
    /// iteration in the optimizer step). Under ZeRO-3 / FSDP only the
    /// gradients, in any low precision (FSDP2 casts each shard to bf16 once,
    /// before its all-gather, and each unit's gradient to its fp32
    /// `reduce_dtype`, torchtitan's default, before its reduce-scatter;
    /// FP8 training's float8 GEMMs leave both as they were); else, in bf16
    /// or fp16, autocast's weights and gradients.
    pub fn casts(&self) -> crate::model::ops::Casts {
        use crate::model::ops::Casts;
        if self.stack.stack == crate::model::stack::Stack::MegatronTe
            || self.bf16_grads
            || self.precision == Precision::Fp32
        {
            Casts::None
        } else if self.sharding.zero == sharding::ZeroStage::Parameters {
            Casts::Gradients
        } else if matches!(self.precision, Precision::Bf16 | Precision::Fp16) {
            Casts::WeightsAndGradients
        } else {
            Casts::None
        }
    }
}

/// Why a model-level job cannot be built: the setting and the numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid model-level job: {message}")]
pub struct JobError {
    /// What is wrong, naming the numbers.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl JobError {
    fn new(message: String, hint: impl Into<String>) -> JobError {
        JobError {
            message,
            hint: hint.into(),
        }
    }

    /// As a diagnostic (message + hint).
    pub fn to_diagnostic(&self) -> crate::diag::Diagnostic {
        crate::diag::Diagnostic::error(self.to_string()).with_hint(self.hint.clone())
    }
}

/// A validated model-level job: everything resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelJob {
    pub model: ModelSpec,
    pub setup: TrainingSetup,
    pub gpu: GpuSpec,
    /// Resolved data-parallel size.
    pub dp: u32,
    /// TP x CP x PP x DP.
    pub world: u32,
    /// Micro-batches per iteration per pipeline.
    pub micro_batches: u32,
    /// Global batch, sequences.
    pub global_batch_size: u32,
    /// Vocabulary padded as Megatron pads it (a multiple of 128 x TP).
    pub padded_vocab_size: u64,
    /// Assumptions made (one line each).
    pub notes: Vec<String>,
    /// The stages hold two chunks in a V (ZB-V, DualPipeV: stage s runs
    /// layer groups s and 2p - 1 - s, so the output layer is on stage 0);
    /// set by [`run::run_model`] from the schedule. False: looped chunks.
    pub v_shape: bool,
    /// GPUs per node, for how many of an EP group's ranks share a node
    /// (the flex dispatcher's deduplication); set by [`run::run_model`]
    /// from the network, else the engine's default.
    pub gpus_per_node: u32,
}

/// Check a first/last-stage layer split: pipeline stages to split, one
/// chunk per stage, every stage at least one layer, the middle stages an
/// even share.
fn uneven_split(setup: &TrainingSetup, layers: u32) -> Result<(), JobError> {
    let pp = setup.pp;
    let (first, last) = (setup.first_stage_layers, setup.last_stage_layers);
    if pp < 2 {
        return Err(JobError::new(
            format!("first/last-stage layer counts need pipeline parallelism (PP is {pp})"),
            "use --pp 2 or more, or drop --first-stage-layers / --last-stage-layers",
        ));
    }
    if setup.vpp > 1 {
        return Err(JobError::new(
            format!(
                "first/last-stage layer counts are modelled with one chunk per stage ({} virtual stages given)",
                setup.vpp
            ),
            "use --vpp 1 with an uneven split",
        ));
    }
    for (name, v) in [("first", first), ("last", last)] {
        if v == Some(0) {
            return Err(JobError::new(
                format!("the {name} stage is given 0 layers"),
                "give every stage at least one layer",
            ));
        }
    }
    let given = u64::from(first.unwrap_or(0)) + u64::from(last.unwrap_or(0));
    let middle = pp - u32::from(first.is_some()) - u32::from(last.is_some());
    let split = match (first, last) {
        (Some(f), Some(l)) => format!("first {f} and last {l}"),
        (Some(f), None) => format!("first {f}"),
        (None, Some(l)) => format!("last {l}"),
        (None, None) => String::new(),
    };
    if given > u64::from(layers) {
        return Err(JobError::new(
            format!("{split} layers are more than the model's {layers}"),
            "give the first and last stages fewer layers",
        ));
    }
    let rest = u64::from(layers) - given;
    if middle == 0 {
        if rest != 0 {
            return Err(JobError::new(
                format!("{split} = {given} layers on the 2 stages, but the model has {layers}"),
                "with PP 2 the first and last counts must add up to the layer count",
            ));
        }
    } else if rest < u64::from(middle) || rest % u64::from(middle) != 0 {
        return Err(JobError::new(
            format!(
                "{layers} layers less {split} leave {rest}, not divisible by the other {middle} stage(s) (at least one layer each)"
            ),
            "choose first/last counts that leave a multiple of the remaining stages",
        ));
    }
    Ok(())
}

fn positive(name: &str, v: u32) -> Result<u32, JobError> {
    if v == 0 {
        Err(JobError::new(
            format!("{name} is 0"),
            format!("give {name} as a whole number >= 1"),
        ))
    } else {
        Ok(v)
    }
}

/// Largest model and batch sizes a job accepts: every product the
/// builder and the memory model form stays far inside 64 bits.
const LIMITS: [(&str, u64); 13] = [
    ("hidden size", 1 << 17),
    ("layers", 1 << 12),
    ("attention heads", 1 << 12),
    ("head size", 1 << 12),
    ("MLP size", 1 << 20),
    ("vocabulary", 1 << 22),
    ("max positions", 1 << 24),
    ("experts", 1 << 12),
    ("experts per token", 1 << 6),
    ("expert MLP size", 1 << 20),
    ("MLA ranks and head sizes", 1 << 16),
    ("sequence length", 1 << 20),
    ("micro-batch size", 1 << 12),
];

fn check_limits(m: &ModelSpec, s: &TrainingSetup) -> Result<(), JobError> {
    let moe = m.moe.as_ref();
    let mla = m.mla.as_ref().map_or(0, |a| {
        a.q_lora_rank
            .max(a.kv_lora_rank)
            .max(a.qk_nope_head_dim)
            .max(a.qk_rope_head_dim)
            .max(a.v_head_dim)
    });
    let values = [
        m.hidden_size,
        u64::from(m.num_layers),
        u64::from(m.num_attention_heads.max(m.num_kv_heads)),
        m.head_dim,
        m.ffn_hidden_size,
        m.vocab_size,
        m.max_position_embeddings,
        moe.map_or(0, |x| u64::from(x.num_experts.max(x.num_shared_experts))),
        moe.map_or(0, |x| u64::from(x.top_k)),
        moe.map_or(0, |x| x.expert_ffn_hidden_size),
        mla,
        u64::from(s.seq_length),
        u64::from(s.micro_batch_size),
    ];
    for ((name, limit), v) in LIMITS.iter().zip(values) {
        if v > *limit {
            return Err(JobError::new(
                format!("{name} {v} is larger than the {limit} a model-level job accepts"),
                "check the model file and the training flags",
            ));
        }
    }
    for (name, v) in [
        ("hidden size", m.hidden_size),
        ("layers", u64::from(m.num_layers)),
        ("attention heads", u64::from(m.num_attention_heads)),
        ("key/value heads", u64::from(m.num_kv_heads)),
        ("head size", m.head_dim),
        ("MLP size", m.ffn_hidden_size),
        ("vocabulary", m.vocab_size),
    ] {
        if v == 0 {
            return Err(JobError::new(
                format!("the model's {name} is 0"),
                "check the model file",
            ));
        }
    }
    if s.recompute == Recompute::Op {
        if let Some(why) = op_checkpoint::unsupported(m) {
            return Err(JobError::new(
                why,
                "use --recompute selective or full for this model",
            ));
        }
    }
    Ok(())
}

impl ModelJob {
    /// Check and resolve a job. `world`, when given, must equal TP x PP x
    /// DP (DP is derived from it when not given).
    pub fn new(
        model: ModelSpec,
        setup: TrainingSetup,
        gpu: GpuSpec,
        world: Option<u32>,
    ) -> Result<ModelJob, JobError> {
        let mut setup = setup;
        let mut notes = Vec::new();
        let tp = positive("TP", setup.tp)?;
        if setup.expert_tp == Some(tp) {
            setup.expert_tp = None; // TP is the default: one spelling.
        }
        let pp = positive("PP", setup.pp)?;
        let ep = positive("EP", setup.ep)?;
        let cp = positive("CP", setup.cp)?;
        let vpp = positive("virtual stages (vpp)", setup.vpp)?;
        let mbs = positive("micro-batch size", setup.micro_batch_size)?;
        let seq = positive("sequence length", setup.seq_length)?;
        if let Some(w) = world {
            positive("world", w)?;
        }
        check_limits(&model, &setup)?;
        sharding::resolve(&mut setup)?;
        let tp_pp = u64::from(tp) * u64::from(pp) * u64::from(cp);
        // "TP x PP" in messages, "TP x CP x PP" with context parallelism.
        let (tp_pp_name, tp_pp_values) = if cp > 1 {
            ("TP x CP x PP", format!("{tp} x {cp} x {pp}"))
        } else {
            ("TP x PP", format!("{tp} x {pp}"))
        };
        let dp = match (setup.dp, world) {
            (Some(d), Some(w)) => {
                positive("DP", d)?;
                if tp_pp * u64::from(d) != u64::from(w) {
                    return Err(JobError::new(
                        format!(
                            "world {w} does not match {tp_pp_name} x DP = {tp_pp_values} x {d} = {}",
                            tp_pp * u64::from(d)
                        ),
                        "give only one of --world and --dp, or make them agree",
                    ));
                }
                d
            }
            (Some(d), None) => positive("DP", d)?,
            (None, Some(w)) => {
                if u64::from(w) % tp_pp != 0 {
                    return Err(JobError::new(
                        format!("world {w} is not a multiple of {tp_pp_name} = {tp_pp_values} = {tp_pp}"),
                        format!("choose a world size that {tp_pp_name} divides, or other sizes"),
                    ));
                }
                u32::try_from(u64::from(w) / tp_pp).unwrap_or(u32::MAX)
            }
            (None, None) => 1,
        };
        let world_u64 = tp_pp * u64::from(dp);
        if world_u64 > MAX_WORLD {
            return Err(JobError::new(
                format!("{tp_pp_name} x DP = {world_u64} GPUs is more than {MAX_WORLD}"),
                "simulate a smaller world",
            ));
        }
        let world = world_u64 as u32;
        let m = &model;
        let heads = m.num_attention_heads;
        if !heads.is_multiple_of(tp) {
            return Err(JobError::new(
                format!("{heads} attention heads are not divisible by TP {tp}"),
                "choose a TP that divides the head count",
            ));
        }
        if m.mla.is_none() && !m.num_kv_heads.is_multiple_of(tp) {
            return Err(JobError::new(
                format!(
                    "{} key/value heads (query groups) are not divisible by TP {tp}",
                    m.num_kv_heads
                ),
                "Megatron needs TP to divide the query-group count: choose a smaller TP",
            ));
        }
        if !m.ffn_hidden_size.is_multiple_of(u64::from(tp)) {
            return Err(JobError::new(
                format!("MLP size {} is not divisible by TP {tp}", m.ffn_hidden_size),
                "choose a TP that divides the MLP size",
            ));
        }
        let layers = m.num_layers;
        let chunks = u64::from(pp) * u64::from(vpp);
        let accounted = u64::from(setup.account_for_embedding) + u64::from(setup.account_for_loss);
        if setup.first_stage_layers.is_some() || setup.last_stage_layers.is_some() {
            if accounted > 0 {
                return Err(JobError::new(
                    "first/last-stage layer counts and the embedding or loss counted in the pipeline split are two ways to unload the end stages: use one".to_string(),
                    "drop --first-stage-layers/--last-stage-layers or the --account-for-* flags",
                ));
            }
            uneven_split(&setup, layers)?;
        } else if accounted > 0 {
            let units = u64::from(layers) + accounted;
            let what = match (setup.account_for_embedding, setup.account_for_loss) {
                (true, true) => "embedding + loss",
                (true, false) => "embedding",
                _ => "loss",
            };
            if units % chunks != 0 {
                return Err(JobError::new(
                    format!(
                        "{layers} layers + {what} = {units} are not divisible by PP x virtual stages = {pp} x {vpp} = {chunks}"
                    ),
                    "choose PP and virtual stages whose product divides the layers plus the embedding and loss counted as layers",
                ));
            }
            if units / chunks < 2 {
                return Err(JobError::new(
                    format!(
                        "{units} layers ({layers} + {what}) over {chunks} model chunks leave a chunk without a transformer layer"
                    ),
                    "use fewer stages or virtual stages",
                ));
            }
        } else if u64::from(layers) % chunks != 0 {
            return Err(JobError::new(
                format!(
                    "{layers} layers are not divisible by PP x virtual stages = {pp} x {vpp} = {chunks}"
                ),
                "choose PP and virtual stages whose product divides the layer count, or give the first and last stages their own layer counts (--first-stage-layers, --last-stage-layers)",
            ));
        }
        if vpp > 1 && pp == 1 {
            return Err(JobError::new(
                format!("{vpp} virtual stages need pipeline parallelism (PP is 1)"),
                "use --pp > 1 with --vpp, or --vpp 1",
            ));
        }
        match &m.moe {
            Some(moe) => {
                if moe.num_experts % ep != 0 {
                    return Err(JobError::new(
                        format!("{} experts are not divisible by EP {ep}", moe.num_experts),
                        "choose an EP that divides the expert count",
                    ));
                }
                let etp = setup.expert_tp.unwrap_or(tp);
                positive("expert TP", etp)?;
                if etp != tp && etp != 1 {
                    return Err(JobError::new(
                        format!("expert TP {etp} is neither 1 nor TP {tp}: only these two are modelled"),
                        "use --expert-tp 1 (whole experts per rank, EP over TP x DP) or leave it at TP",
                    ));
                }
                if etp == tp {
                    if dp % ep != 0 {
                        return Err(JobError::new(
                            format!("EP {ep} does not divide DP {dp} (the expert-parallel group is carved out of the data-parallel ranks)"),
                            "choose an EP that divides DP, or a larger world, or --expert-tp 1 to carve EP out of TP x DP",
                        ));
                    }
                } else if !(u64::from(tp) * u64::from(dp)).is_multiple_of(u64::from(ep)) {
                    return Err(JobError::new(
                        format!("EP {ep} does not divide TP x DP = {tp} x {dp} = {} (with expert TP 1 the expert-parallel group is carved out of the TP x DP ranks of a stage)", u64::from(tp) * u64::from(dp)),
                        "choose an EP that divides TP x DP",
                    ));
                }
                if moe.expert_ffn_hidden_size % u64::from(etp) != 0 {
                    return Err(JobError::new(
                        format!(
                            "expert MLP size {} is not divisible by expert TP {etp}",
                            moe.expert_ffn_hidden_size
                        ),
                        "choose a TP that divides the expert MLP size, or --expert-tp 1",
                    ));
                }
                if etp < tp && !setup.sequence_parallel {
                    return Err(JobError::new(
                        format!("expert TP {etp} below TP {tp} needs sequence parallelism: each rank routes its own share of the tokens"),
                        "add --sequence-parallel",
                    ));
                }
            }
            None if setup.expert_tp.is_some_and(|e| e != tp) => {
                return Err(JobError::new(
                    format!(
                        "expert TP needs a mixture-of-experts model; {} is dense",
                        m.name
                    ),
                    "drop --expert-tp for a dense model",
                ));
            }
            None if ep > 1 => {
                return Err(JobError::new(
                    format!(
                        "EP {ep} needs a mixture-of-experts model; {} is dense",
                        m.name
                    ),
                    "use --ep 1 for a dense model",
                ));
            }
            None => {}
        }
        if cp > 1 {
            let chunks = 2 * u64::from(cp);
            if u64::from(seq) % chunks != 0 {
                return Err(JobError::new(
                    format!(
                        "sequence length {seq} is not divisible by 2 x CP = 2 x {cp} = {chunks} (context parallelism splits every sequence into 2 x CP chunks)"
                    ),
                    "choose a sequence length that is a multiple of 2 x CP, or another CP",
                ));
            }
            if ep > 1 {
                return Err(JobError::new(
                    format!("EP {ep} with CP {cp}: expert parallelism together with context parallelism is not modelled"),
                    "use --ep 1 with --cp, or --cp 1 with --ep",
                ));
            }
            if !setup.flash_attention {
                return Err(JobError::new(
                    format!("CP {cp} needs fused (flash) attention: Megatron's context parallelism runs inside the fused attention kernel"),
                    "turn fused attention on, or use --cp 1",
                ));
            }
        }
        let per_step = u64::from(mbs) * u64::from(dp);
        let gbs = match setup.global_batch_size {
            Some(g) => {
                positive("global batch size", g)?;
                if u64::from(g) % per_step != 0 {
                    return Err(JobError::new(
                        format!(
                            "global batch {g} is not divisible by micro-batch x DP = {mbs} x {dp} = {per_step}"
                        ),
                        "choose a global batch that is a multiple of micro-batch size x DP",
                    ));
                }
                u64::from(g)
            }
            None => {
                let g = u64::from(DEFAULT_GLOBAL_BATCH).div_ceil(per_step) * per_step;
                // The default as it is needs no note; a rounded one does.
                if g != u64::from(DEFAULT_GLOBAL_BATCH) {
                    notes.push(format!(
                        "global batch not given: {g} sequences (the default {DEFAULT_GLOBAL_BATCH} rounded up to a multiple of micro-batch x DP = {per_step})"
                    ));
                }
                g
            }
        };
        let micro_batches = gbs / per_step;
        if micro_batches > u64::from(crate::limits::MAX_MICRO_BATCHES) {
            return Err(JobError::new(
                format!(
                    "{micro_batches} micro-batches per iteration is more than {}",
                    crate::limits::MAX_MICRO_BATCHES
                ),
                "use a smaller global batch or a larger micro-batch",
            ));
        }
        let gbs = u32::try_from(gbs).map_err(|_| {
            JobError::new(
                format!("global batch {gbs} is too large"),
                "use a smaller global batch",
            )
        })?;
        let micro_batches = micro_batches as u32;
        if vpp > 1 && !micro_batches.is_multiple_of(pp) {
            return Err(JobError::new(
                format!(
                    "the interleaved schedule needs the micro-batch count ({micro_batches} = {gbs} / ({mbs} x {dp})) to be a multiple of PP {pp}"
                ),
                "change the global batch, micro-batch size or DP",
            ));
        }
        if setup.sequence_parallel && tp == 1 {
            setup.sequence_parallel = false;
            notes.push("sequence parallelism needs TP > 1: turned off".to_string());
        }
        if u64::from(seq) > m.max_position_embeddings && m.learned_positions {
            return Err(JobError::new(
                format!(
                    "sequence length {seq} is longer than the {} learned positions of {}",
                    m.max_position_embeddings, m.name
                ),
                "use a shorter --seq-length",
            ));
        }
        if u64::from(seq) > m.max_position_embeddings {
            notes.push(format!(
                "sequence length {seq} is longer than the model's max_position_embeddings {} (rotary positions extend; cost is modelled as given)",
                m.max_position_embeddings
            ));
        }
        if setup.precision == Precision::Fp8 && gpu.peaks.fp8_tflops.is_none() {
            notes.push(format!(
                "{} has no FP8 tensor cores: FP8 GEMMs are costed at the bf16 rate",
                gpu.name
            ));
        }
        if setup.fp8_param_gather && setup.precision != Precision::Fp8 {
            return Err(JobError::new(
                format!(
                    "FP8 parameter gather needs FP8 training; the precision is {}",
                    setup.precision.name()
                ),
                "set --precision fp8, or drop --fp8-param-gather",
            ));
        }
        if setup.fp8_param_gather && setup.sharding.zero == sharding::ZeroStage::Parameters {
            return Err(JobError::new(
                "FP8 parameter gather is modelled for Megatron's distributed optimizer, not for ZeRO-3 / FSDP".to_string(),
                "drop --fp8-param-gather, or use --zero 1 (the distributed optimizer)",
            ));
        }
        let pad = 128 * u64::from(tp);
        let padded_vocab_size = m.vocab_size.div_ceil(pad) * pad;
        sharding::check_hsdp(&setup, dp, model.moe_layers() > 0)?;
        if setup.sharding.offload != sharding::Offload::None
            && (gpu.pcie_gbps.is_nan() || gpu.pcie_gbps <= 0.0)
        {
            return Err(JobError::new(
                format!(
                    "offload moves data over the host link, but {} has no PCIe bandwidth",
                    gpu.name
                ),
                "use a GPU preset (each gives its PCIe bandwidth), or drop --offload",
            ));
        }
        setup.dp = Some(dp);
        setup.global_batch_size = Some(gbs);
        Ok(ModelJob {
            model,
            setup,
            gpu,
            dp,
            world,
            micro_batches,
            global_batch_size: gbs,
            padded_vocab_size,
            notes,
            v_shape: false,
            gpus_per_node: crate::engine::NetworkConfig::default().gpus_per_node,
        })
    }

    /// DP x CP: the ranks that hold the same weights (Megatron's
    /// data-parallel group with context parallelism): gradients are reduced
    /// and the distributed optimizer sharded over them.
    pub fn dp_cp(&self) -> u32 {
        self.dp * self.setup.cp
    }

    /// Expert tensor-parallel size: as set, else TP.
    pub fn expert_tp(&self) -> u32 {
        self.setup.expert_tp.unwrap_or(self.setup.tp).max(1)
    }

    /// The experts' own layout in words (" (expert TP 1, expert DP 4)")
    /// when expert TP is not TP, else empty: for job descriptions.
    pub fn expert_layout_label(&self) -> String {
        match self.setup.expert_tp {
            Some(e) => format!(" (expert TP {e}, expert DP {})", self.expert_dp()),
            None => String::new(),
        }
    }

    /// Whether the distributed optimizer has anything to shard its states
    /// over: more than one data-parallel rank (DP x CP), or, for a model
    /// with experts, more than one expert data-parallel rank. When false,
    /// the job is the same with it on or off (memory and time alike).
    pub fn optimizer_shards(&self) -> bool {
        self.dp_cp() > 1 || (self.model.moe_layers() > 0 && self.expert_dp() > 1)
    }

    /// Ranks holding the same routed experts (expert data parallelism):
    /// TP x DP x CP / (expert TP x EP), at least 1; the expert gradients
    /// are reduced and their optimizer state sharded over them.
    pub fn expert_dp(&self) -> u32 {
        let ranks = u64::from(self.setup.tp) * u64::from(self.dp_cp());
        let per = u64::from(self.expert_tp()) * u64::from(self.setup.ep.max(1));
        u32::try_from((ranks / per).max(1)).unwrap_or(u32::MAX)
    }

    /// Ranks of one EP group on one node: EP ranks sit expert-TP ranks
    /// apart in the rank order, so a node of G GPUs holds G / expert TP of
    /// them (at least 1, at most EP).
    pub fn ep_ranks_per_node(&self) -> u32 {
        let stride = self.expert_tp().max(1);
        (self.gpus_per_node / stride).clamp(1, self.setup.ep.max(1))
    }

    /// Model chunks per stage: the virtual stages, or 2 in a V.
    pub fn chunks_per_stage(&self) -> u32 {
        if self.v_shape {
            2
        } else {
            self.setup.vpp
        }
    }

    /// Layers per model chunk (layers / (PP x chunks per stage)); with an
    /// uneven split (one chunk per stage), the most any stage holds.
    pub fn layers_per_chunk(&self) -> u32 {
        if self.is_uneven() {
            return (0..self.setup.pp)
                .map(|s| self.stage_layer_range(s).len() as u32)
                .max()
                .unwrap_or(0);
        }
        if self.accounts_in_split() {
            return self.chunk_units();
        }
        self.model.num_layers / (self.setup.pp * self.chunks_per_stage())
    }

    /// Whether the embedding or the loss counts as a layer in the split
    /// into model chunks.
    pub fn accounts_in_split(&self) -> bool {
        self.setup.account_for_embedding || self.setup.account_for_loss
    }

    /// Layers per model chunk with the embedding and loss counted as
    /// layers: (layers + embedding + loss) / (PP x chunks per stage).
    fn chunk_units(&self) -> u32 {
        let s = &self.setup;
        let units = self.model.num_layers
            + u32::from(s.account_for_embedding)
            + u32::from(s.account_for_loss);
        units / (s.pp * self.chunks_per_stage()).max(1)
    }

    /// The transformer layers of model chunk `g` in Megatron's order
    /// (chunk c of stage s is g = c x PP + s) when the embedding or loss
    /// counts in the split: the chunk's share, less the embedding on chunk
    /// 0 and the loss on the last chunk.
    pub fn accounted_chunk_range(&self, g: u32) -> std::ops::Range<u32> {
        let s = &self.setup;
        let per = self.chunk_units();
        let last = s.pp * self.chunks_per_stage() - 1;
        let emb = u32::from(s.account_for_embedding);
        let start = (g * per).saturating_sub(if g > 0 { emb } else { 0 });
        let count = per
            - if g == 0 { emb } else { 0 }
            - if g == last {
                u32::from(s.account_for_loss)
            } else {
                0
            };
        start..start + count
    }

    /// Whether the first or last stage has its own layer count.
    pub fn is_uneven(&self) -> bool {
        self.setup.first_stage_layers.is_some() || self.setup.last_stage_layers.is_some()
    }

    /// The layers of stage `stage` with one chunk per stage: the first and
    /// last stages' counts as given, the others' even share of the rest.
    pub fn stage_layer_range(&self, stage: u32) -> std::ops::Range<u32> {
        let pp = self.setup.pp;
        let layers = self.model.num_layers;
        let first = self.setup.first_stage_layers;
        let last = self.setup.last_stage_layers.filter(|_| pp > 1);
        let middle_stages = pp - u32::from(first.is_some()) - u32::from(last.is_some());
        let rest = layers - first.unwrap_or(0) - last.unwrap_or(0);
        let per = rest.checked_div(middle_stages).unwrap_or(0);
        let count = |s: u32| match (s, first, last) {
            (0, Some(f), _) => f,
            (s, _, Some(l)) if s == pp - 1 => l,
            _ => per,
        };
        let start: u32 = (0..stage).map(count).sum();
        start..start + count(stage)
    }

    /// The stage that runs the output layer and the loss (the last stage;
    /// stage 0 in a V).
    pub fn output_stage(&self) -> u32 {
        if self.v_shape {
            0
        } else {
            self.setup.pp - 1
        }
    }

    /// The model as the job runs it (vocabulary padded).
    pub fn padded_model(&self) -> ModelSpec {
        let mut m = self.model.clone();
        m.vocab_size = self.padded_vocab_size;
        m
    }

    /// Model FLOPs of one iteration (the whole job, no recompute; the
    /// unpadded vocabulary).
    pub fn model_flops_per_iteration(&self) -> f64 {
        self.model.model_flops_per_step(
            u64::from(self.global_batch_size),
            u64::from(self.setup.seq_length),
        )
    }

    /// Throughput figures for an iteration of `iteration_time_ns`.
    pub fn throughput(&self, iteration_time_ns: u64) -> Throughput {
        let t_s = iteration_time_ns as f64 / 1e9;
        let tokens = f64::from(self.global_batch_size) * f64::from(self.setup.seq_length);
        let flops = self.model_flops_per_iteration();
        let per_gpu = if t_s > 0.0 {
            flops / t_s / f64::from(self.world)
        } else {
            0.0
        };
        let peak = self.gpu.peak_tflops(self.setup.precision) * 1e12;
        Throughput {
            tokens_per_second: if t_s > 0.0 { tokens / t_s } else { 0.0 },
            model_tflops_per_gpu: per_gpu / 1e12,
            mfu: per_gpu / peak,
            model_flops_per_iteration: flops,
        }
    }
}

/// What an iteration achieves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Throughput {
    /// Global batch x sequence length / iteration time (the whole job).
    pub tokens_per_second: f64,
    /// Model FLOPs / time / world, TFLOP/s.
    pub model_tflops_per_gpu: f64,
    /// Model FLOPs / (time x world x the GPU's dense peak at the GEMM
    /// precision).
    pub mfu: f64,
    /// 3 x forward FLOPs of the global batch (attention counted in full).
    pub model_flops_per_iteration: f64,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::hardware::gpu_preset;
    use crate::model::ModelSpec;

    pub(crate) fn llama3_70b() -> ModelSpec {
        crate::model::presets::preset("llama3-70b").unwrap()
    }

    /// GPT-3 175B with the vocabulary Megatron pads it to (51200).
    pub(crate) fn gpt3_175b() -> ModelSpec {
        let mut m = crate::model::presets::preset("gpt3-175b").unwrap();
        m.vocab_size = 51200;
        m
    }

    pub(crate) fn setup(tp: u32, pp: u32, gbs: u32) -> TrainingSetup {
        TrainingSetup {
            tp,
            pp,
            global_batch_size: Some(gbs),
            seq_length: 8192,
            sequence_parallel: true,
            distributed_optimizer: true,
            ..TrainingSetup::default()
        }
    }

    #[test]
    fn refusals_name_the_numbers() {
        let gpu = gpu_preset("H100").unwrap();
        let err = |s: TrainingSetup, w: Option<u32>| {
            ModelJob::new(llama3_70b(), s, gpu.clone(), w)
                .unwrap_err()
                .message
        };
        assert_eq!(
            err(setup(3, 1, 8), None),
            "64 attention heads are not divisible by TP 3"
        );
        assert_eq!(
            err(setup(16, 1, 16), None),
            "64 attention heads are not divisible by TP 16".replace(
                "64 attention heads are",
                "8 key/value heads (query groups) are"
            )
        );
        assert_eq!(
            err(setup(8, 3, 8), None),
            "80 layers are not divisible by PP x virtual stages = 3 x 1 = 3"
        );
        assert_eq!(
            err(setup(8, 8, 100), Some(1024)),
            "global batch 100 is not divisible by micro-batch x DP = 1 x 16 = 16"
        );
        assert_eq!(
            err(setup(8, 8, 128), Some(1000)),
            "world 1000 is not a multiple of TP x PP = 8 x 8 = 64"
        );
        let mut s = setup(8, 8, 128);
        s.dp = Some(4);
        assert_eq!(
            err(s, Some(1024)),
            "world 1024 does not match TP x PP x DP = 8 x 8 x 4 = 256"
        );
        let mut s = setup(8, 8, 128);
        s.ep = 2;
        assert_eq!(
            err(s, Some(1024)),
            "EP 2 needs a mixture-of-experts model; llama3-70b is dense"
        );
        assert_eq!(err(setup(0, 8, 128), None), "TP is 0");
        assert_eq!(err(setup(8, 8, 128), Some(0)), "world is 0");
    }

    /// Megatron's embedding and loss counted as layers in the pipeline
    /// split: Llama 3.1 405B's 126 layers on PP 8 x VP 8 = 64 chunks of
    /// 128 / 64 = 2, stage 0's first chunk and the last stage's last chunk
    /// one layer; every layer once; memory per chunk follows the cut.
    #[test]
    fn embedding_and_loss_count_in_the_pipeline_split() {
        let gpu = gpu_preset("H100").unwrap();
        let m = crate::model::presets::preset("llama3-405b").unwrap();
        let job = |vpp: u32, emb: bool, loss: bool| {
            let s = TrainingSetup {
                vpp,
                account_for_embedding: emb,
                account_for_loss: loss,
                ..setup(8, 8, 64)
            };
            ModelJob::new(m.clone(), s, gpu.clone(), Some(512))
        };
        let j = job(8, true, true).unwrap();
        let chunks = |st| layout::stage_chunk_layers(&j, st);
        let sizes = |st| chunks(st).iter().map(Vec::len).collect::<Vec<_>>();
        assert_eq!(sizes(0), vec![1, 2, 2, 2, 2, 2, 2, 2]);
        assert_eq!(sizes(3), vec![2; 8]);
        assert_eq!(sizes(7), vec![2, 2, 2, 2, 2, 2, 2, 1]);
        // Megatron's chunk order: chunk c of stage s holds model chunk c x 8 + s.
        assert_eq!(chunks(0)[0], vec![0]);
        assert_eq!(chunks(1)[0], vec![1, 2]);
        assert_eq!(chunks(0)[1], vec![15, 16]);
        assert_eq!(chunks(7)[7], vec![125]);
        let mut all: Vec<u32> = (0..8).flat_map(|st| layout::stage_layers(&j, st)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..126).collect::<Vec<_>>());
        assert_eq!(j.layers_per_chunk(), 2);
        // The memory of one chunk in flight is the largest chunk's.
        let one = memory::memory_report(&j, &[1; 8], 1);
        assert_eq!(
            one.per_stage[0].activations_bytes,
            2 * memory::layer_activation_bytes(&j, 1)
        );
        // Without the flags the layout is refused, naming the numbers; with
        // only one of them too (127 / 64).
        let msg = |r: Result<ModelJob, JobError>| r.unwrap_err().message;
        assert_eq!(
            msg(job(8, false, false)),
            "126 layers are not divisible by PP x virtual stages = 8 x 8 = 64"
        );
        assert_eq!(
            msg(job(8, true, false)),
            "126 layers + embedding = 127 are not divisible by PP x virtual stages = 8 x 8 = 64"
        );
        let both = TrainingSetup {
            first_stage_layers: Some(15),
            account_for_loss: true,
            ..setup(8, 8, 64)
        };
        assert!(msg(ModelJob::new(m.clone(), both, gpu.clone(), Some(512)))
            .starts_with("first/last-stage layer counts and the embedding or loss"));
    }

    /// Expert TP 1 at TP 2 (MoE parallel folding), as NVIDIA runs
    /// Qwen3-235B-A22B on 256 H100s (TP 2, PP 8, EP 32, DP 16: EP is more
    /// than DP): EP out of TP x DP, whole experts per rank, the same FLOPs;
    /// the refusals name the numbers.
    #[test]
    fn expert_tp_folds_ep_over_tp_and_dp() {
        let gpu = gpu_preset("H100").unwrap();
        let qwen = crate::model::presets::preset("qwen3-235b-a22b").unwrap();
        let job = |tp: u32, ep: u32, etp: Option<u32>, sp: bool, world: u32| {
            let s = TrainingSetup {
                ep,
                expert_tp: etp,
                sequence_parallel: sp,
                seq_length: 4096,
                ..setup(tp, 2, 256)
            };
            ModelJob::new(qwen.clone(), s, gpu.clone(), Some(world))
        };
        // TP 2 x DP 16 = 32 ranks a stage: EP 32 only folded.
        let folded = job(2, 32, Some(1), true, 64).unwrap();
        assert_eq!(
            (folded.dp, folded.expert_tp(), folded.expert_dp()),
            (16, 1, 1)
        );
        assert!(job(2, 32, None, true, 64)
            .unwrap_err()
            .message
            .starts_with("EP 32 does not divide DP 16"));
        // Folding moves work, not FLOPs; whole experts per rank hold twice
        // the expert weights of expert TP 2 at the same EP.
        let a = job(2, 8, None, true, 64).unwrap();
        let b = job(2, 8, Some(1), true, 64).unwrap();
        assert_eq!(a.model_flops_per_iteration(), b.model_flops_per_iteration());
        let (pa, pb) = (memory::stage_params(&a, 0), memory::stage_params(&b, 0));
        assert_eq!(pb.expert, 2 * pa.expert);
        assert_eq!(pa.dense, pb.dense);
        assert_eq!((a.expert_dp(), b.expert_dp()), (2, 4));
        // Expert TP = TP is the default: one spelling.
        assert_eq!(job(2, 8, Some(2), true, 64).unwrap().setup.expert_tp, None);
        let msg = |r: Result<ModelJob, JobError>| r.unwrap_err().message;
        assert_eq!(
            msg(job(4, 8, Some(2), true, 64)),
            "expert TP 2 is neither 1 nor TP 4: only these two are modelled"
        );
        assert_eq!(
            msg(job(2, 8, Some(1), false, 64)),
            "expert TP 1 below TP 2 needs sequence parallelism: each rank routes its own share of the tokens"
        );
        assert!(msg(job(2, 64, Some(1), true, 64))
            .starts_with("EP 64 does not divide TP x DP = 2 x 16 = 32"));
        let dense = TrainingSetup {
            expert_tp: Some(1),
            ..setup(8, 8, 128)
        };
        assert_eq!(
            ModelJob::new(llama3_70b(), dense, gpu.clone(), Some(1024))
                .unwrap_err()
                .message,
            "expert TP needs a mixture-of-experts model; llama3-70b is dense"
        );
    }

    #[test]
    fn uneven_split_places_the_first_and_last_stages_layers() {
        let gpu = gpu_preset("H100").unwrap();
        // 80 layers on PP 6: first 10, last 10, the 4 others 15 each.
        let mut s = setup(8, 6, 96);
        s.first_stage_layers = Some(10);
        s.last_stage_layers = Some(10);
        let j = ModelJob::new(llama3_70b(), s, gpu.clone(), None).unwrap();
        let ranges: Vec<_> = (0..6).map(|st| j.stage_layer_range(st)).collect();
        assert_eq!(
            ranges,
            vec![0..10, 10..25, 25..40, 40..55, 55..70, 70..80],
            "every layer once, in order"
        );
        assert_eq!(
            crate::job::layout::stage_layers(&j, 1),
            (10..25).collect::<Vec<_>>()
        );
        assert_eq!(j.layers_per_chunk(), 15);
        // Only the last given: the first 3 stages share 80 - 5 = 75.
        let mut s = setup(8, 4, 96);
        s.last_stage_layers = Some(5);
        let j = ModelJob::new(llama3_70b(), s, gpu.clone(), None).unwrap();
        assert_eq!(j.stage_layer_range(0), 0..25);
        assert_eq!(j.stage_layer_range(3), 75..80);
        // The stage with fewer layers holds fewer parameters.
        let p = |st| crate::job::memory::stage_params(&j, st).total();
        assert!(p(3) < p(2));
    }

    #[test]
    fn uneven_split_refusals_name_the_numbers() {
        let gpu = gpu_preset("H100").unwrap();
        let err = |first: Option<u32>, last: Option<u32>, pp: u32, vpp: u32| {
            let mut s = setup(8, pp, 96);
            s.vpp = vpp;
            s.first_stage_layers = first;
            s.last_stage_layers = last;
            ModelJob::new(llama3_70b(), s, gpu.clone(), None)
                .unwrap_err()
                .message
        };
        assert_eq!(
            err(Some(4), None, 4, 1),
            "80 layers less first 4 leave 76, not divisible by the other 3 stage(s) (at least one layer each)"
        );
        assert_eq!(
            err(Some(40), Some(41), 4, 1),
            "first 40 and last 41 layers are more than the model's 80"
        );
        assert_eq!(
            err(Some(30), Some(40), 2, 1),
            "first 30 and last 40 = 70 layers on the 2 stages, but the model has 80"
        );
        assert_eq!(
            err(Some(10), None, 1, 1),
            "first/last-stage layer counts need pipeline parallelism (PP is 1)"
        );
        assert_eq!(
            err(Some(8), Some(8), 4, 2),
            "first/last-stage layer counts are modelled with one chunk per stage (2 virtual stages given)"
        );
        assert_eq!(err(None, Some(0), 4, 1), "the last stage is given 0 layers");
        // 80 layers, first 2 and last 2: 76 over 2 middle stages leaves 38
        // each: fine, while 80 on PP 3 evenly is refused.
        let mut s = setup(8, 4, 96);
        s.first_stage_layers = Some(2);
        s.last_stage_layers = Some(2);
        assert!(ModelJob::new(llama3_70b(), s, gpu, None).is_ok());
    }

    fn llama3_8b() -> ModelSpec {
        crate::model::presets::preset("llama3-8b").unwrap()
    }

    fn cp_setup(cp: u32, seq: u32) -> TrainingSetup {
        TrainingSetup {
            tp: 2,
            cp,
            global_batch_size: Some(64),
            seq_length: seq,
            ..TrainingSetup::default()
        }
    }

    #[test]
    fn cp_refusals_name_the_numbers() {
        let gpu = gpu_preset("H100").unwrap();
        let err = |s: TrainingSetup, w: Option<u32>| {
            ModelJob::new(llama3_8b(), s, gpu.clone(), w)
                .unwrap_err()
                .message
        };
        assert_eq!(
            err(cp_setup(3, 16384), Some(12)),
            "sequence length 16384 is not divisible by 2 x CP = 2 x 3 = 6 (context parallelism splits every sequence into 2 x CP chunks)"
        );
        let mut s = cp_setup(2, 16384);
        s.dp = Some(4);
        assert_eq!(
            err(s, Some(8)),
            "world 8 does not match TP x CP x PP x DP = 2 x 2 x 1 x 4 = 16"
        );
        assert_eq!(
            err(cp_setup(4, 16384), Some(12)),
            "world 12 is not a multiple of TP x CP x PP = 2 x 4 x 1 = 8"
        );
        let mut s = cp_setup(2, 16384);
        s.flash_attention = false;
        assert!(err(s, Some(8)).starts_with("CP 2 needs fused (flash) attention"));
        let mut s = cp_setup(0, 16384);
        s.cp = 0;
        assert_eq!(err(s, None), "CP is 0");
        let moe = crate::model::presets::preset("mixtral-8x7b").unwrap();
        let mut s = cp_setup(2, 4096);
        s.ep = 2;
        assert_eq!(
            ModelJob::new(moe, s, gpu.clone(), Some(8))
                .unwrap_err()
                .message,
            "EP 2 with CP 2: expert parallelism together with context parallelism is not modelled"
        );
    }

    #[test]
    fn cp_resolves_the_world_and_divides_tokens_memory_and_attention() {
        let gpu = gpu_preset("H100").unwrap();
        let job = |cp: u32, dp: Option<u32>| {
            let mut s = cp_setup(cp, 16384);
            s.dp = dp;
            s.distributed_optimizer = true;
            ModelJob::new(llama3_8b(), s, gpu.clone(), None).unwrap()
        };
        // --world omitted with --dp: TP x CP x PP x DP.
        let j2 = job(2, Some(4));
        assert_eq!((j2.world, j2.dp, j2.dp_cp()), (16, 4, 8));
        // World given: DP = world / (TP x CP x PP).
        let w = ModelJob::new(llama3_8b(), cp_setup(2, 16384), gpu.clone(), Some(8)).unwrap();
        assert_eq!((w.world, w.dp), (8, 2));
        let j1 = job(1, Some(4));
        // Activations per rank: half the tokens.
        let a = |j: &ModelJob| crate::job::memory::layer_activation_bytes(j, 0);
        assert_eq!(a(&j2) * 2, a(&j1));
        assert_eq!(
            crate::job::memory::logits_bytes(&j2) * 2,
            crate::job::memory::logits_bytes(&j1)
        );
        // Weights replicated over CP; the optimizer state sharded over DP x CP.
        let m1 = crate::job::memory::memory_report(&j1, &[1], 1);
        let m2 = crate::job::memory::memory_report(&j2, &[1], 1);
        assert_eq!(m1.per_stage[0].weights_bytes, m2.per_stage[0].weights_bytes);
        assert_eq!(
            m2.per_stage[0].optimizer_bytes,
            (m1.per_stage[0].parameters * 12).div_ceil(8)
        );
        // Every op but the attention core's key side on s/CP tokens: the
        // layer's FLOPs per rank halve, GEMMs and attention core alike.
        let sh = |j: &ModelJob| crate::job::layout::shape(j);
        let flops = |j: &ModelJob, pred: &dyn Fn(&crate::model::ops::Op) -> bool| -> f64 {
            j.model
                .attention_ops(&sh(j))
                .iter()
                .chain(j.model.mlp_ops(0, &sh(j)).iter())
                .filter(|o| pred(o))
                .map(|o| o.forward.flops + o.input_grad.flops + o.weight_grad.flops)
                .sum()
        };
        let core = |o: &crate::model::ops::Op| o.attention_core;
        let rest = |o: &crate::model::ops::Op| !o.attention_core;
        assert!(flops(&j1, &core) > 0.0);
        assert_eq!(flops(&j2, &core) * 2.0, flops(&j1, &core));
        assert_eq!(flops(&j2, &rest) * 2.0, flops(&j1, &rest));
        // Model FLOPs (MFU's numerator) are the whole sequences' either way.
        assert_eq!(
            j1.model_flops_per_iteration(),
            j2.model_flops_per_iteration()
        );
    }

    #[test]
    fn cp_exchanges_k_and_v_over_the_cp_group_and_reduces_gradients_over_dp_x_cp() {
        use crate::workload::{CommGroup, CommKind};
        let gpu = gpu_preset("H100").unwrap();
        let mut s = cp_setup(2, 16384);
        s.dp = Some(2);
        let j = ModelJob::new(llama3_8b(), s, gpu, None).unwrap();
        let d = crate::job::build::described_job(&j, "cp");
        assert_eq!((d.parallel.dp, d.parallel.cp, d.parallel.world), (4, 2, 8));
        let ops = &d.stages[0].blocks[0].ops;
        let kv: Vec<_> = ops
            .iter()
            .filter(|o| o.name.starts_with("attention_cp_kv_exchange."))
            .collect();
        assert_eq!(kv.len(), 32, "one exchange per layer");
        // b x s x (K + V) x kv heads / TP x head size x 2 bytes: Llama 3
        // 8B has 8 key/value heads of 128.
        let bytes = 16384 * 2 * (8 / 2) * 128 * 2;
        assert_eq!(crate::job::build::cp_kv_bytes(&j), bytes);
        let f = kv[0].forward.comm.unwrap();
        assert_eq!(
            (f.kind, f.group, f.size_bytes),
            (CommKind::AllGather, CommGroup::Cp, bytes)
        );
        let b = kv[0].input_grad.comm.unwrap();
        assert_eq!(
            (b.kind, b.group, b.size_bytes),
            (CommKind::ReduceScatter, CommGroup::Cp, bytes)
        );
        // The exchange sits between the norm and the attention body.
        let i = ops
            .iter()
            .position(|o| o.name == "attention_cp_kv_exchange.0")
            .unwrap();
        assert_eq!(ops[i - 1].name, "attention_norm.0");
        assert_eq!(ops[i + 1].name, "attention.0");
        // Gradient all-reduce over the 4 ranks of DP x CP.
        let sync = d.stages[0]
            .before
            .iter()
            .find(|o| o.name == "dp_grad_sync")
            .unwrap()
            .weight_grad
            .comm
            .unwrap();
        assert_eq!(sync.group, CommGroup::Dp);
        // CP 1: no exchange at all.
        let mut s = cp_setup(1, 16384);
        s.dp = Some(4);
        let j1 = ModelJob::new(llama3_8b(), s, gpu_preset("H100").unwrap(), None).unwrap();
        let d1 = crate::job::build::described_job(&j1, "no-cp");
        assert!(d1.stages[0].blocks[0]
            .ops
            .iter()
            .all(|o| !o.name.starts_with("cp_kv")));
        assert_eq!(d1.parallel.cp, 1);
    }

    #[test]
    fn resolves_dp_and_micro_batches() {
        let gpu = gpu_preset("H100").unwrap();
        let j = ModelJob::new(llama3_70b(), setup(8, 8, 256), gpu, Some(1024)).unwrap();
        assert_eq!((j.dp, j.world, j.micro_batches), (16, 1024, 16));
        // Megatron pads to a multiple of 128 x TP = 1024.
        assert_eq!(j.padded_vocab_size, 129_024);
    }
}
