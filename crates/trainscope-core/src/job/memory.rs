//! Memory of a model-level job per pipeline stage (the stage's first rank):
//! weights, gradients and optimizer states from Megatron's byte counts,
//! activations held at the schedule's peak, and the logits buffer of the
//! last stage; the peak against the GPU's capacity.
//!
//! Bytes per parameter (Megatron-LM, "Distributed Optimizer" documentation,
//! docs/source/api-guide/dist_optimizer.md, its table of bytes per
//! parameter): fp16 weights with fp16 gradients 2 + 2 + 16 (fp32 main
//! weights and gradients, Adam's two moments), 20 in all; bf16 weights with
//! fp32 gradients 2 + 4 + 12 = 18; fp32 weights and gradients 4 + 4 + 8 =
//! 16; bf16 weights with bf16 gradients (`TrainingSetup::bf16_grads`,
//! Megatron-Bridge's `grad_reduce_in_fp32 = False`) 2 + 2 + 16, like fp16.
//! The distributed optimizer divides the optimizer part by DP (routed
//! expert weights by the expert data-parallel size, TP x DP / (expert TP x
//! EP), which is DP / EP when expert TP is TP). Routed experts are split
//! over expert TP, everything else over TP. FP8 training keeps the bf16 recipe and adds two
//! bytes per weight of the linear layers for the FP8 copies their GEMMs
//! read, as is and transposed ([`FP8_COPY_BYTES`]; scaling state is a few
//! scalars per tensor and not counted; the embeddings, output layer, norms
//! and routers have none).
//!
//! Activations per layer and micro-batch follow Korthikanti et al. 2022
//! ("Reducing Activation Recomputation in Large Transformer Models",
//! section 4: 34 s b h + 5 a s^2 b bytes per layer without parallelism,
//! with its split into the parts tensor parallelism replicates and shards),
//! generalised term by term:
//! - attention: the inputs of the norm and of the QKV projection (2 T h
//!   bytes each at 2-byte activations), Q (T q), K and V (T kv each, GQA),
//!   the core's output (T q); the score matrix (softmax output, and for
//!   GPT-style models its dropout mask and output: 5 a s^2 b bytes, else 2
//!   a s^2 b) only without fused attention and without recompute;
//! - MLP: norm and MLP inputs (T h each), the activation input and output
//!   (2 T f for GELU; 3 T f for SwiGLU: gate, up and their product); MoE
//!   layers store the dispatched tokens (T k h), the routed experts' inner
//!   activations (3 T k f_e), the shared experts' (3 T f_shared) and the
//!   router's fp32 logits (T E x 4 bytes);
//! - dropout masks (1 byte per element after attention and MLP) for the
//!   GPT family only (Llama-style models train without dropout);
//! - tensor parallelism shards everything but the norm/projection inputs
//!   and dropout masks; sequence parallelism shards those too (/ t);
//! - full recompute keeps only each layer's input (T h, / t with sequence
//!   parallelism) plus one layer's activations while it is recomputed.
//!
//! - context parallelism divides every token count by CP (each rank holds
//!   s/CP tokens of each sequence); the distributed optimizer shards the
//!   dense weights' optimizer state over DP x CP.
//!
//! For GPT-3-like shapes the generalisation gives exactly Korthikanti's
//! 34 s b h + 5 a s^2 b (tested).

use super::layout::{gradient_bytes, shape, weight_bytes};
use super::{ModelJob, Recompute};
use crate::hardware::Precision;
use crate::model::Family;
use serde::Serialize;

/// Parameters one rank of a stage holds (elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct StageParams {
    /// Weights replicated over DP (attention, dense MLPs, routers, shared
    /// experts, embeddings, norms), TP-sharded.
    pub dense: u64,
    /// Routed-expert weights (E / EP experts split over expert TP;
    /// replicated over the expert data-parallel ranks).
    pub expert: u64,
    /// Of those, the weights of the layers' linear layers (attention
    /// projections, dense MLPs, shared and routed experts; their biases
    /// counted too): Transformer Engine's GEMMs, which FP8 training keeps
    /// FP8 copies of. Not the embeddings, output layer, norms or routers.
    pub linear: u64,
}

impl StageParams {
    pub fn total(&self) -> u64 {
        self.dense + self.expert
    }
}

/// The parameters stage `stage` holds on one rank.
pub fn stage_params(job: &ModelJob, stage: u32) -> StageParams {
    let m = &job.model;
    let s = &job.setup;
    let t = u64::from(s.tp);
    let counts = m.parameters();
    let etp = u64::from(job.expert_tp());
    let norm = m.norm_params();
    let mut p = StageParams::default();
    for layer in super::layout::stage_layers(job, stage) {
        p.dense += counts.attention_per_layer / t;
        // MLA's two latent norms stay in: a few thousand weights.
        p.linear += counts.attention_per_layer.saturating_sub(norm) / t;
        match &m.moe {
            Some(moe) if m.is_moe_layer(layer) => {
                let expert = m.mlp_params(moe.expert_ffn_hidden_size);
                let router = m.hidden_size * u64::from(moe.num_experts);
                let shared = u64::from(moe.num_shared_experts) * expert / t;
                let routed = u64::from(moe.num_experts / s.ep) * expert / etp;
                p.dense += router + shared + norm;
                p.expert += routed;
                p.linear += shared + routed;
            }
            _ => {
                p.dense += counts.dense_mlp_per_layer / t;
                p.linear += counts.dense_mlp_per_layer.saturating_sub(norm) / t;
            }
        }
    }
    let vocab_rows = job.padded_vocab_size / t * m.hidden_size;
    if stage == 0 {
        p.dense += vocab_rows;
        if m.learned_positions {
            p.dense += m.max_position_embeddings * m.hidden_size;
        }
    }
    if stage == job.output_stage() {
        p.dense += m.norm_params();
        // Untied: the output layer. Tied on another stage than the
        // embedding: Megatron keeps a copy of the word embeddings there.
        if !m.tied_embeddings || stage != 0 {
            p.dense += vocab_rows;
        }
    }
    p
}

/// Bytes per linear-layer weight of its FP8 copies under FP8 training:
/// Transformer Engine casts each weight once per iteration (first
/// micro-batch) and keeps it for the forward GEMM and, transposed, for the
/// input-gradient GEMM (Hopper's FP8 GEMMs take TN layouts only;
/// Blackwell's MXFP8 keeps row-wise and column-wise copies likewise, plus
/// a scale per 32 elements, not counted).
pub const FP8_COPY_BYTES: u64 = 2;

/// Optimizer bytes per parameter (fp32 main weights and moments; with
/// 2-byte gradients, fp16 or [`crate::job::TrainingSetup::bf16_grads`],
/// also an fp32 copy of the gradients).
pub fn optimizer_bytes(s: &crate::job::TrainingSetup) -> u64 {
    match s.precision {
        Precision::Fp32 => 8,
        Precision::Fp16 => 16,
        Precision::Bf16 | Precision::Fp8 if s.bf16_grads => 16,
        Precision::Bf16 | Precision::Fp8 => 12,
    }
}

/// Activation bytes one layer keeps for one micro-batch on one rank.
pub fn layer_activation_bytes(job: &ModelJob, layer: u32) -> u64 {
    let m = &job.model;
    let s = &job.setup;
    let sh = shape(job);
    let t = u64::from(s.tp);
    let tok = sh.tokens();
    let ab = sh.activation_bytes;
    let h = m.hidden_size;
    let sp_div = if s.sequence_parallel { t } else { 1 };
    let input = tok * h * ab / sp_div;
    if s.recompute == Recompute::Full {
        return input;
    }
    let dropout = m.family == Family::Gpt;
    let mask = if dropout { tok * h / sp_div } else { 0 };
    // Replicated (without sequence parallelism) parts: norm input and the
    // projection input of each block, the dropout masks.
    let replicated = 4 * tok * h * ab / sp_div + 2 * mask;
    // Attention, TP-sharded.
    let (q, kv, out) = match &m.mla {
        Some(mla) => {
            let a = u64::from(m.num_attention_heads);
            (
                a * mla.qk_head_dim() + mla.q_lora_rank + mla.kv_lora_rank,
                a * mla.qk_head_dim() + a * mla.v_head_dim,
                a * mla.v_head_dim,
            )
        }
        None => (m.q_width(), 2 * m.kv_width(), m.q_width()),
    };
    let attention = tok * (q + kv + out) * ab / t;
    let scores = if s.flash_attention || s.recompute != Recompute::None {
        0
    } else {
        let per: u128 = if dropout { 5 } else { 2 };
        let bytes = per
            * u128::from(m.num_attention_heads)
            * u128::from(sh.seq_length)
            * u128::from(sh.seq_length)
            * u128::from(sh.micro_batch_size)
            / u128::from(t);
        u64::try_from(bytes).unwrap_or(u64::MAX)
    };
    let mats = if m.gated_mlp { 3 } else { 2 };
    let mlp = match &m.moe {
        Some(moe) if m.is_moe_layer(layer) => {
            let k = u64::from(moe.top_k);
            tok * k * h * ab / sp_div
                + mats * tok * k * moe.expert_ffn_hidden_size * ab / t
                + mats * tok * u64::from(moe.num_shared_experts) * moe.expert_ffn_hidden_size * ab
                    / t
                + tok * u64::from(moe.num_experts) * 4 / sp_div
        }
        _ => mats * tok * m.ffn_hidden_size * ab / t,
    };
    (replicated + attention + mlp).saturating_add(scores)
}

/// Bytes of the last stage's logits buffer for one micro-batch (the
/// vocabulary-parallel cross-entropy keeps fp32 logits: T x V / t x 4).
pub fn logits_bytes(job: &ModelJob) -> u64 {
    let sh = shape(job);
    sh.tokens() * (job.padded_vocab_size / u64::from(job.setup.tp)) * 4
}

/// Memory of one stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageMemory {
    pub stage: u32,
    /// Parameters on one rank of the stage.
    pub parameters: u64,
    pub weights_bytes: u64,
    pub gradients_bytes: u64,
    pub optimizer_bytes: u64,
    /// Activations held at the peak (see [`MemoryReport`]).
    pub activations_bytes: u64,
    /// Micro-batches (virtual-stage chunks for interleaving) whose
    /// activations are held at the peak.
    pub in_flight: u32,
    /// Last stage: the logits buffer; 0 elsewhere.
    pub logits_bytes: u64,
    /// weights + gradients + optimizer + activations + logits.
    pub peak_bytes: u64,
}

/// Memory of every stage against the GPU's capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryReport {
    pub per_stage: Vec<StageMemory>,
    pub capacity_bytes: u64,
    /// Every stage's peak fits in the capacity.
    pub fits: bool,
    /// "does not fit on stage k: needs X GiB of Y GiB" per stage that
    /// does not fit.
    pub messages: Vec<String>,
}

/// GiB with one decimal, for messages.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Bytes of one chunk activation per stage (one micro-batch through one
/// model chunk): the stage's activations with two chunks held minus with
/// one, so a full recompute's one-layer working set, held at any count,
/// cancels out. The activation counter lanes of a model-level run are the
/// simulated chunk counts times these.
pub fn chunk_activation_bytes(job: &ModelJob) -> Vec<u64> {
    let pp = job.setup.pp as usize;
    let one = memory_report(job, &vec![1; pp], 1);
    let two = memory_report(job, &vec![2; pp], 1);
    one.per_stage
        .iter()
        .zip(&two.per_stage)
        .map(|(a, b)| b.activations_bytes.saturating_sub(a.activations_bytes))
        .collect()
}

/// The memory of every stage given, per stage, how many chunks of its
/// layers hold activations at the peak (`in_flight[stage]`; a chunk is
/// layers / (PP x vpp) layers of one micro-batch; without interleaving a
/// chunk is the whole stage) and how many of those are the last chunk of
/// the last stage (logits buffers held).
pub fn memory_report(job: &ModelJob, in_flight: &[u32], logits_in_flight: u32) -> MemoryReport {
    let s = &job.setup;
    let p = s.precision;
    let dp_ep = job.expert_dp();
    let dist = s.distributed_optimizer;
    let per_stage: Vec<StageMemory> = (0..s.pp)
        .map(|stage| {
            let params = stage_params(job, stage);
            let n = params.total();
            let mut weights = n * weight_bytes(p);
            if p == Precision::Fp8 {
                weights += FP8_COPY_BYTES * params.linear;
            }
            let gradients = n * gradient_bytes(s);
            let ob = optimizer_bytes(s);
            let optimizer = if dist {
                (params.dense * ob).div_ceil(u64::from(job.dp_cp()))
                    + (params.expert * ob).div_ceil(u64::from(dp_ep))
            } else {
                n * ob
            };
            let chunks = super::layout::stage_chunk_layers(job, stage);
            let layers: Vec<u32> = chunks.concat();
            let chunk_bytes: Vec<u64> = chunks
                .iter()
                .map(|c| {
                    c.iter()
                        .map(|&l| layer_activation_bytes(job, l))
                        .fold(0u64, u64::saturating_add)
                })
                .collect();
            // Chunks are held in the order the schedule runs them; with
            // uniform layers every chunk weighs the same, so the peak is
            // the count times the largest chunk.
            let chunk_max = chunk_bytes.iter().copied().max().unwrap_or(0);
            let k = in_flight.get(stage as usize).copied().unwrap_or(1);
            let mut activations = u64::from(k).saturating_mul(chunk_max);
            if s.recompute == Recompute::Full {
                // One layer recomputed at a time holds its full activations.
                let mut full = job.clone();
                full.setup.recompute = Recompute::Selective;
                activations = activations.saturating_add(
                    layers
                        .iter()
                        .map(|&l| layer_activation_bytes(&full, l))
                        .max()
                        .unwrap_or(0),
                );
            }
            let logits = if stage == job.output_stage() {
                u64::from(logits_in_flight.max(1)) * logits_bytes(job)
            } else {
                0
            };
            StageMemory {
                stage,
                parameters: n,
                weights_bytes: weights,
                gradients_bytes: gradients,
                optimizer_bytes: optimizer,
                activations_bytes: activations,
                in_flight: k,
                logits_bytes: logits,
                peak_bytes: [weights, gradients, optimizer, activations, logits]
                    .into_iter()
                    .fold(0u64, u64::saturating_add),
            }
        })
        .collect();
    let capacity = job.gpu.memory_bytes;
    let messages: Vec<String> = per_stage
        .iter()
        .filter(|m| m.peak_bytes > capacity)
        .map(|m| {
            format!(
                "does not fit on stage {}: needs {} of {} ({})",
                m.stage,
                gib(m.peak_bytes),
                gib(capacity),
                job.gpu.name
            )
        })
        .collect();
    MemoryReport {
        fits: messages.is_empty(),
        per_stage,
        capacity_bytes: capacity,
        messages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::gpu_preset;
    use crate::job::tests::{gpt3_175b, llama3_70b};
    use crate::job::TrainingSetup;

    fn job(tp: u32, sp: bool, recompute: Recompute, flash: bool) -> ModelJob {
        let setup = TrainingSetup {
            tp,
            pp: 1,
            micro_batch_size: 1,
            global_batch_size: Some(8),
            seq_length: 2048,
            sequence_parallel: sp,
            recompute,
            flash_attention: flash,
            ..TrainingSetup::default()
        };
        ModelJob::new(gpt3_175b(), setup, gpu_preset("A100").unwrap(), None).unwrap()
    }

    #[test]
    fn activations_follow_korthikanti() {
        let (s, b, h, a) = (2048u64, 1u64, 12288u64, 96u64);
        // Section 4.1: 34 s b h + 5 a s^2 b bytes without parallelism.
        let j = job(1, false, Recompute::None, false);
        assert_eq!(
            layer_activation_bytes(&j, 0),
            34 * s * b * h + 5 * a * s * s * b
        );
        // Tensor parallelism: s b h (10 + 24/t + 5 a s / (h t)).
        let j = job(8, false, Recompute::None, false);
        assert_eq!(
            layer_activation_bytes(&j, 0),
            10 * s * b * h + 24 * s * b * h / 8 + 5 * a * s * s * b / 8
        );
        // + sequence parallelism: s b h / t (34 + 5 a s / h).
        let j = job(8, true, Recompute::None, false);
        assert_eq!(
            layer_activation_bytes(&j, 0),
            34 * s * b * h / 8 + 5 * a * s * s * b / 8
        );
        // + selective recompute: 34 s b h / t.
        let j = job(8, true, Recompute::Selective, false);
        assert_eq!(layer_activation_bytes(&j, 0), 34 * s * b * h / 8);
        // Full recompute: the layer input only (2 s b h / t).
        let j = job(8, true, Recompute::Full, false);
        assert_eq!(layer_activation_bytes(&j, 0), 2 * s * b * h / 8);
    }

    /// Llama 3 70B on H100s at TP 8 x PP 8 x DP 8 (global batch 64), the
    /// setup changed by `f`.
    fn llama70b_512(f: impl FnOnce(&mut TrainingSetup)) -> ModelJob {
        let mut setup = TrainingSetup {
            tp: 8,
            pp: 8,
            dp: Some(8),
            global_batch_size: Some(64),
            ..TrainingSetup::default()
        };
        f(&mut setup);
        ModelJob::new(llama3_70b(), setup, gpu_preset("H100").unwrap(), None).unwrap()
    }

    /// Weights + gradients + optimizer bytes per parameter on stage 3.
    fn static_bytes_per_param(j: &ModelJob) -> f64 {
        let st = &memory_report(j, &[1; 8], 1).per_stage[3];
        (st.weights_bytes + st.gradients_bytes + st.optimizer_bytes) as f64 / st.parameters as f64
    }

    #[test]
    fn static_memory_follows_megatrons_bytes_per_parameter() {
        for (precision, plain, dist) in [
            (Precision::Bf16, 18.0, 6.0 + 12.0 / 8.0),
            (Precision::Fp16, 20.0, 4.0 + 16.0 / 8.0),
            (Precision::Fp32, 16.0, 8.0 + 8.0 / 8.0),
        ] {
            for (distributed, want) in [(false, plain), (true, dist)] {
                let j = llama70b_512(|s| {
                    s.precision = precision;
                    s.distributed_optimizer = distributed;
                });
                let per_param = static_bytes_per_param(&j);
                assert!(
                    (per_param - want).abs() < 1e-6,
                    "{precision:?} distributed {distributed}: {per_param} vs {want}"
                );
            }
        }
    }

    /// bf16 gradients (Megatron-Bridge's grad_reduce_in_fp32 = False): 2 +
    /// 2 bytes and an fp32 gradient copy in the optimizer, 2 + 2 + 16 / DP
    /// with the distributed optimizer, as fp16 training.
    #[test]
    fn bf16_gradients_keep_two_bytes_and_an_fp32_copy_in_the_optimizer() {
        for (precision, want) in [
            (Precision::Bf16, 4.0 + 16.0 / 8.0),
            (Precision::Fp32, 8.0 + 8.0 / 8.0),
        ] {
            let j = llama70b_512(|s| {
                s.precision = precision;
                s.distributed_optimizer = true;
                s.bf16_grads = true;
            });
            let per_param = static_bytes_per_param(&j);
            assert!(
                (per_param - want).abs() < 1e-6,
                "{precision:?}: {per_param}"
            );
        }
    }

    #[test]
    fn stage_parameters_add_up_to_the_model() {
        let gpu = gpu_preset("H100").unwrap();
        let setup = TrainingSetup {
            tp: 1,
            pp: 4,
            global_batch_size: Some(8),
            ..TrainingSetup::default()
        };
        let mut m = llama3_70b();
        m.vocab_size = 128_000; // a multiple of 128: no padding
        let j = ModelJob::new(m.clone(), setup, gpu, None).unwrap();
        let total: u64 = (0..4).map(|s| stage_params(&j, s).total()).sum();
        assert_eq!(total, m.parameters().total);
        // Full fits nowhere near: the message names stage and sizes.
        let r = memory_report(&j, &[4, 3, 2, 1], 1);
        assert!(!r.fits);
        assert!(
            r.messages[0].starts_with("does not fit on stage 0: needs "),
            "{}",
            r.messages[0]
        );
        assert!(
            r.messages[0].ends_with("of 79.6 GiB (H100-SXM)"),
            "{}",
            r.messages[0]
        );
    }

    #[test]
    fn fp8_keeps_two_bytes_per_linear_weight() {
        let report = |precision| {
            let j = llama70b_512(|s| s.precision = precision);
            (memory_report(&j, &[1; 8], 1), stage_params(&j, 0))
        };
        let (bf16, params) = report(Precision::Bf16);
        let (fp8, _) = report(Precision::Fp8);
        // Llama 3 70B, 10 layers a stage, TP 8: q, k, v, o (8192 x (8192 +
        // 2 x 1024) + 8192 x 8192) and the SwiGLU MLP (3 x 8192 x 28672)
        // per layer; the embedding of stage 0 has no FP8 copy.
        let per_layer = (8192 * (8192 + 2 * 1024) + 8192 * 8192 + 3 * 8192 * 28672) / 8;
        assert_eq!(params.linear, 10 * per_layer);
        assert!(params.linear < params.dense);
        let st = |r: &MemoryReport| r.per_stage[0].weights_bytes;
        assert_eq!(st(&fp8) - st(&bf16), FP8_COPY_BYTES * 10 * per_layer);
        assert_eq!(
            fp8.per_stage[0].gradients_bytes,
            bf16.per_stage[0].gradients_bytes
        );
    }
}
