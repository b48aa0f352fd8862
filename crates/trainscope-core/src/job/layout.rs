//! Where a model-level job's layers and bytes sit: the shape of one
//! micro-batch on one TP rank, the layers of each stage and model chunk,
//! and the bytes per weight and gradient element. The workload builder
//! ([`super::build`]) and the memory model ([`super::memory`]) both read it.

use super::ModelJob;
use crate::hardware::Precision;
use crate::model::dispatcher::{MoeRun, BALANCED_MILLI};
use crate::model::ops::Shape;
use crate::model::stack::Stack;

/// Bytes per gradient element Megatron keeps and reduces: fp16 training
/// fp16 gradients, bf16 and fp8 training fp32 main gradients (bf16 with
/// [`super::TrainingSetup::bf16_grads`]), fp32 training fp32.
pub fn gradient_bytes(s: &super::TrainingSetup) -> u64 {
    match s.precision {
        Precision::Fp16 => 2,
        Precision::Bf16 | Precision::Fp8 if s.bf16_grads => 2,
        _ => 4,
    }
}

/// Bytes per linear-layer weight of its FP8 copies under FP8 training:
/// Transformer Engine casts each weight once per iteration (first
/// micro-batch) and keeps it for the forward GEMM and, transposed, for the
/// input-gradient GEMM (Hopper's FP8 GEMMs take TN layouts only;
/// Blackwell's MXFP8 keeps row-wise and column-wise copies likewise, plus
/// a scale per 32 elements, not counted).
pub const FP8_COPY_BYTES: u64 = 2;

/// Bytes per weight element as stored for compute (the all-gather of the
/// distributed optimizer moves these).
pub fn weight_bytes(p: Precision) -> u64 {
    match p {
        Precision::Fp32 => 4,
        _ => 2,
    }
}

/// The shape of one micro-batch on one TP rank.
pub fn shape(job: &ModelJob) -> Shape {
    let s = &job.setup;
    Shape {
        micro_batch_size: u64::from(s.micro_batch_size),
        seq_length: u64::from(s.seq_length),
        tp: u64::from(s.tp),
        expert_tp: u64::from(job.expert_tp()),
        cp: u64::from(s.cp),
        sequence_parallel: s.sequence_parallel,
        activation_bytes: s.precision.activation_bytes(),
        gemm_weight_bytes: match s.precision {
            Precision::Fp8 => 1,
            p => weight_bytes(p),
        },
        flash_attention: s.flash_attention,
        local_experts: job.model.moe.as_ref().map_or(1, |m| {
            (u64::from(m.num_experts) / u64::from(s.ep.max(1))).max(1)
        }),
        moe: MoeRun {
            dispatcher: s.stack.dispatcher,
            fused: s.stack.moe_fused(),
            imbalance_milli: s.stack.moe_imbalance_milli.unwrap_or(BALANCED_MILLI),
        },
        unfused: s.stack.stack == Stack::PytorchEager,
        casts: s.casts(),
    }
}

/// The parameters of transformer layer `layer` on one rank (elements):
/// attention and dense MLP split over TP; in an MoE layer the router and
/// layer norm whole, shared experts over TP, the rank's routed experts
/// (experts / EP) over expert TP. `linear`: the weights of the linear
/// layers (what FP8 keeps 1-byte copies of).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LayerParams {
    pub dense: u64,
    pub expert: u64,
    pub linear: u64,
}

/// [`LayerParams`] of `layer`: the one per-layer split both the stage
/// memory (`memory::stage_params`) and the FSDP units
/// (`sharding::unit_params`) add up.
pub fn layer_params(job: &ModelJob, layer: u32) -> LayerParams {
    let m = &job.model;
    let s = &job.setup;
    let t = u64::from(s.tp);
    let counts = m.parameters();
    let etp = u64::from(job.expert_tp());
    let norm = m.norm_params();
    let attention = counts.attention_per_layer / t;
    // MLA's two latent norms stay in the linear share: a few thousand.
    let attention_linear = counts.attention_per_layer.saturating_sub(norm) / t;
    match &m.moe {
        Some(moe) if m.is_moe_layer(layer) => {
            let expert = m.mlp_params(moe.expert_ffn_hidden_size);
            let router = m.hidden_size * u64::from(moe.num_experts);
            let shared = u64::from(moe.num_shared_experts) * expert / t;
            let routed = u64::from(moe.num_experts / s.ep.max(1)) * expert / etp;
            LayerParams {
                dense: attention + router + shared + norm,
                expert: routed,
                linear: attention_linear + shared + routed,
            }
        }
        _ => LayerParams {
            dense: attention + counts.dense_mlp_per_layer / t,
            expert: 0,
            linear: attention_linear + counts.dense_mlp_per_layer.saturating_sub(norm) / t,
        },
    }
}

/// The layers stage `stage` holds, in the order it runs them: chunk c of
/// the stage holds layer group c x PP + stage (looped), or groups stage and
/// 2 PP - 1 - stage in a V; a group is [g x per_chunk, + per_chunk). With
/// first/last-stage layer counts, the stage's own range.
pub fn stage_layers(job: &ModelJob, stage: u32) -> Vec<u32> {
    stage_chunk_layers(job, stage).concat()
}

/// The layers of each model chunk of stage `stage`, in the order the stage
/// runs its chunks (one chunk without interleaving; see [`stage_layers`]).
pub fn stage_chunk_layers(job: &ModelJob, stage: u32) -> Vec<Vec<u32>> {
    if job.is_uneven() {
        return vec![job.stage_layer_range(stage).collect()];
    }
    let p = job.setup.pp;
    if job.accounts_in_split() {
        return (0..job.chunks_per_stage())
            .map(|c| job.accounted_chunk_range(c * p + stage).collect())
            .collect();
    }
    let per = job.layers_per_chunk();
    (0..job.chunks_per_stage())
        .map(|c| {
            let group = if job.v_shape && c == 1 {
                2 * p - 1 - stage
            } else {
                c * p + stage
            };
            let first = group * per;
            (first..first + per).collect()
        })
        .collect()
}
