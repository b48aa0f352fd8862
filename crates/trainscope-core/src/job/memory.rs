//! Memory of a model-level job per pipeline stage (the stage's first rank),
//! part by part ([`StageMemory`]): weights, gradients and optimizer states
//! from Megatron's byte counts (split over the data-parallel ranks by the
//! ZeRO stage, [`super::sharding`]), activations held at the schedule's
//! peak, the logits buffer of the last stage, ZeRO-2/3's unsharded units,
//! Transformer Engine's cuBLAS workspace and the CUDA graphs' static
//! buffers (all in PyTorch's caching allocator: `allocated_bytes`), NCCL's
//! buffers and the CUDA context beside it (`peak_bytes`, judged against
//! the GPU's capacity), and the allocator's expected fragmentation on top
//! (`reserved_bytes`, reported, not judged: [`FRAGMENTATION_PERCENT`]). A
//! stage that does not fit is named with its largest part.
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
//! and routers have none). With FP8 parameter gather
//! (`TrainingSetup::fp8_param_gather`) the FP8 copies are the linear
//! weights themselves: no bf16 copy of them, so those two bytes go.
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
//! - FP8 training: Transformer Engine keeps its FP8 GEMMs' inputs for the
//!   weight-gradient GEMM as FP8 casts (1 byte): the QKV and FC1 inputs,
//!   FC2's input and the output projection's (beside the bf16 attention
//!   output the fused kernel keeps), the routed experts' dispatched tokens;
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
use super::sharding::ZeroStage;
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
    let mut p = StageParams::default();
    for layer in super::layout::stage_layers(job, stage) {
        let l = super::layout::layer_params(job, layer);
        p.dense += l.dense;
        p.expert += l.expert;
        p.linear += l.linear;
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

pub use super::layout::FP8_COPY_BYTES;

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
    if s.recompute == Recompute::Op {
        return super::op_checkpoint::layer_activation_bytes(job);
    }
    let dropout = m.family == Family::Gpt;
    let mask = if dropout { tok * h / sp_div } else { 0 };
    // Under FP8 training Transformer Engine keeps the inputs of its FP8
    // GEMMs for their weight-gradient GEMM as the FP8 casts (1 byte):
    // the QKV and FC1 inputs (the norms' outputs), the output projection's
    // input (a copy beside the attention output the fused kernel keeps) and
    // FC2's input.
    let fp8 = s.precision == crate::hardware::Precision::Fp8;
    let gemm_in = if fp8 { 1 } else { ab };
    // Replicated (without sequence parallelism) parts: norm input and the
    // projection input of each block, the dropout masks.
    let replicated = 2 * tok * h * (ab + gemm_in) / sp_div + 2 * mask;
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
    let out_bytes = if fp8 { ab + 1 } else { ab };
    let attention = tok * ((q + kv) * ab + out * out_bytes) / t;
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
    // Bytes per MLP-width element: the activation's inputs (gate and up
    // for SwiGLU, FC1's output for GELU) and its output, FC2's input.
    let mats = if m.gated_mlp {
        2 * ab + gemm_in
    } else {
        ab + gemm_in
    };
    let mlp = match &m.moe {
        Some(moe) if m.is_moe_layer(layer) => {
            let k = u64::from(moe.top_k);
            tok * k * h * gemm_in / sp_div
                + mats * tok * k * moe.expert_ffn_hidden_size / t
                + mats * tok * u64::from(moe.num_shared_experts) * moe.expert_ffn_hidden_size / t
                + tok * u64::from(moe.num_experts) * 4 / sp_div
        }
        _ => mats * tok * m.ffn_hidden_size / t,
    };
    (replicated + attention + mlp).saturating_add(scores)
}

/// Bytes of the last stage's logits buffer for one micro-batch (the
/// vocabulary-parallel cross-entropy keeps fp32 logits: T x V / t x 4).
pub fn logits_bytes(job: &ModelJob) -> u64 {
    let sh = shape(job);
    sh.tokens() * (job.padded_vocab_size / u64::from(job.setup.tp)) * 4
}

/// Memory of one stage (its first rank), part by part. The parts up to
/// `allocated_bytes` live in PyTorch's caching allocator (what
/// `torch.cuda.max_memory_allocated` reports, and Megatron-LM logs as
/// `mem-max-allocated-bytes`); NCCL's buffers and the CUDA context are
/// allocated beside it; fragmentation is the allocator's expected reserve
/// on top ([`FRAGMENTATION_PERCENT`]).
fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageMemory {
    pub stage: u32,
    /// Parameters on one rank of the stage (before ZeRO-3 sharding).
    pub parameters: u64,
    /// Weights as stored for compute (bf16/fp16/fp32; FP8 copies of the
    /// linear layers' weights under FP8 training); / N under ZeRO-3.
    pub weights_bytes: u64,
    /// The gradient buffer (Megatron's main-grad buffer: fp32, or 2-byte
    /// with fp16 / bf16 gradients); / N under ZeRO-2 and 3.
    pub gradients_bytes: u64,
    /// Optimizer states (fp32 main weights, Adam's two moments, the fp32
    /// gradient copy with 2-byte gradients); / N with the distributed
    /// optimizer (ZeRO-1) and above.
    pub optimizer_bytes: u64,
    /// Offload ([`crate::job::sharding::Offload`]): the bytes kept in host
    /// memory instead (the optimizer states; with the weights, the sharded
    /// weights and gradients too), counted in none of the GPU's parts.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub host_bytes: u64,
    /// Activations held at the peak (see [`MemoryReport`]).
    pub activations_bytes: u64,
    /// Micro-batches (virtual-stage chunks for interleaving) whose
    /// activations are held at the peak.
    pub in_flight: u32,
    /// Last stage: the logits buffer; 0 elsewhere.
    pub logits_bytes: u64,
    /// ZeRO-2/3: the unsharded units' gathered weights and full gradients
    /// ([`crate::job::sharding::unsharded_unit_bytes`]); 0 otherwise.
    pub unsharded_unit_bytes: u64,
    /// Transformer Engine's cuBLAS workspace ([`workspace_bytes`]).
    pub workspace_bytes: u64,
    /// The CUDA graphs' static buffers where the stack captures graphs
    /// ([`cuda_graph_bytes`]); 0 without graphs.
    pub cuda_graph_bytes: u64,
    /// Everything in the caching allocator at the peak: the parts above.
    pub allocated_bytes: u64,
    /// NCCL's buffers, outside the allocator ([`nccl_bytes`]).
    pub nccl_bytes: u64,
    /// The CUDA context ([`CUDA_CONTEXT_BYTES`]).
    pub context_bytes: u64,
    /// allocated + NCCL + context: what the stage needs on the device at
    /// least; the fit is judged on it.
    pub peak_bytes: u64,
    /// The caching allocator's expected fragmentation on top of the
    /// allocated peak ([`FRAGMENTATION_PERCENT`] of the reserved memory).
    pub fragmentation_bytes: u64,
    /// peak + fragmentation: the device memory the process is expected to
    /// hold (nvidia-smi's figure) when there is room for it; under memory
    /// pressure the allocator frees its cache and retries before failing.
    pub reserved_bytes: u64,
}

/// Bytes of the cuBLAS workspace Transformer Engine allocates per device
/// (one per GEMM stream; Megatron runs one): 32 MiB on GPUs with FP8
/// tensor cores (Hopper and later; cuBLAS's documentation of
/// `cublasSetWorkspace` recommends 32 MiB for Hopper), 4 MiB before.
pub fn workspace_bytes(gpu: &crate::hardware::GpuSpec) -> u64 {
    if gpu.peaks.fp8_tflops.is_some() {
        32 << 20
    } else {
        4 << 20
    }
}

/// NCCL's buffer per connection and direction: `NCCL_BUFFSIZE`'s default
/// of 4 MiB (NCCL's environment-variable documentation) for the Simple
/// protocol.
pub const NCCL_BUFFSIZE_BYTES: u64 = 4 << 20;
/// Channels assumed per communicator (NCCL picks them per topology; 16 is
/// an assumption, not measured here).
pub const NCCL_CHANNELS: u64 = 16;
/// The CUDA context of one process: an assumption of 0.5 GiB (the context
/// with CUDA 12's lazy module loading; not measured here).
pub const CUDA_CONTEXT_BYTES: u64 = 512 << 20;
/// The caching allocator's fragmentation, percent of the reserved memory:
/// 15%, the average fragmentation GMLake (Guo et al., ASPLOS 2024,
/// arXiv 2401.08156) removed from PyTorch's caching allocator over eight
/// LLM training setups on A100-80GB (up to 33%). Reported, not counted in
/// the fit: under pressure the allocator frees cached blocks and retries.
pub const FRAGMENTATION_PERCENT: u64 = 15;

/// NCCL's buffers of one rank: per communicator of more than one rank it
/// belongs to (TP, CP, DP, EP, expert DP, the pipeline neighbours, the
/// tied-embedding pair), [`NCCL_CHANNELS`] channels of a send and a
/// receive buffer of [`NCCL_BUFFSIZE_BYTES`].
pub fn nccl_bytes(job: &ModelJob) -> u64 {
    let s = &job.setup;
    let groups = [
        s.tp,
        s.cp,
        job.dp_cp(),
        if job.model.moe.is_some() { s.ep } else { 1 },
        if job.model.moe.is_some() {
            job.expert_dp()
        } else {
            1
        },
        s.pp,
    ];
    let n = groups.iter().filter(|&&g| g > 1).count() as u64;
    n * NCCL_CHANNELS * 2 * NCCL_BUFFSIZE_BYTES
}

/// The CUDA graphs' static buffers on stage `stage` where the stack
/// captures graphs (`--cuda-graphs layers|full`): each captured layer
/// graph keeps a static input and output of one micro-batch (2 x tokens x
/// hidden x activation bytes, / TP with sequence parallelism); the graphs
/// share one memory pool for everything else, which the activations
/// already count. An estimate from the graphs' structure, not measured.
pub fn cuda_graph_bytes(job: &ModelJob, stage: u32) -> u64 {
    if job.setup.stack.cuda_graphs == crate::model::stack::CudaGraphs::None {
        return 0;
    }
    let sh = shape(job);
    let sp = if job.setup.sequence_parallel {
        u64::from(job.setup.tp)
    } else {
        1
    };
    let per_layer = 2 * sh.tokens() * job.model.hidden_size * sh.activation_bytes / sp;
    per_layer * super::layout::stage_layers(job, stage).len() as u64
}

/// Memory of every stage against the GPU's capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryReport {
    pub per_stage: Vec<StageMemory>,
    pub capacity_bytes: u64,
    /// Every stage's peak fits in the capacity.
    pub fits: bool,
    /// "does not fit on stage k: needs X GiB of Y GiB (GPU); the largest
    /// part: ..." per stage that does not fit.
    pub messages: Vec<String>,
}

impl StageMemory {
    /// The named parts of the peak, largest first (name, bytes): what a
    /// message names as the part that breaks a stage.
    pub fn parts(&self) -> Vec<(&'static str, u64)> {
        let mut p = vec![
            ("weights", self.weights_bytes),
            ("gradients", self.gradients_bytes),
            ("optimizer states", self.optimizer_bytes),
            ("activations", self.activations_bytes),
            ("logits", self.logits_bytes),
            ("unsharded FSDP units", self.unsharded_unit_bytes),
            ("cuBLAS workspace", self.workspace_bytes),
            ("CUDA graph buffers", self.cuda_graph_bytes),
            ("NCCL buffers", self.nccl_bytes),
            ("CUDA context", self.context_bytes),
        ];
        p.sort_by_key(|x| std::cmp::Reverse(x.1));
        p
    }
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
            // Split over the data-parallel ranks (dense: DP x CP; routed
            // experts: expert DP) when the ZeRO stage shards this part.
            let shard_dense = super::sharding::shard_ranks(job).0;
            let split = |per_param: u64, sharded: bool| {
                if sharded {
                    (params.dense * per_param).div_ceil(u64::from(shard_dense))
                        + (params.expert * per_param).div_ceil(u64::from(dp_ep))
                } else {
                    n * per_param
                }
            };
            let zero3 = s.sharding.zero == ZeroStage::Parameters;
            let mut weights = split(weight_bytes(p), zero3);
            if p == Precision::Fp8 && !zero3 && !s.fp8_param_gather {
                // Under ZeRO-3 the FP8 copies live with the gathered units;
                // with FP8 parameter gather they are the linear weights
                // themselves (1 byte, and 1 transposed: the bf16 copy's 2).
                weights += FP8_COPY_BYTES * params.linear;
            }
            let mut gradients = split(gradient_bytes(s), s.sharding.zero >= ZeroStage::Gradients);
            let mut optimizer = split(optimizer_bytes(s), dist);
            // Offload: the optimizer states (and the sharded weights and
            // gradients) live in host memory.
            let mut host = 0u64;
            if s.sharding.offload != super::sharding::Offload::None {
                host += std::mem::take(&mut optimizer);
            }
            if s.sharding.offload == super::sharding::Offload::OptimizerParams {
                host += std::mem::take(&mut weights) + std::mem::take(&mut gradients);
            }
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
            if matches!(s.recompute, Recompute::Full | Recompute::Op) {
                // One layer recomputed at a time holds its full activations
                // (under the op policy: those it does not keep).
                let mut full = job.clone();
                full.setup.recompute = Recompute::Selective;
                let kept = |l| match s.recompute {
                    Recompute::Op => layer_activation_bytes(job, l),
                    _ => 0,
                };
                activations = activations.saturating_add(
                    layers
                        .iter()
                        .map(|&l| layer_activation_bytes(&full, l).saturating_sub(kept(l)))
                        .max()
                        .unwrap_or(0),
                );
            }
            let logits = if stage == job.output_stage() {
                u64::from(logits_in_flight.max(1)) * logits_bytes(job)
            } else {
                0
            };
            let unsharded = super::sharding::unsharded_unit_bytes(job, stage);
            let workspace = workspace_bytes(&job.gpu);
            let graphs = cuda_graph_bytes(job, stage);
            let allocated = [
                weights,
                gradients,
                optimizer,
                activations,
                logits,
                unsharded,
                workspace,
                graphs,
            ]
            .into_iter()
            .fold(0u64, u64::saturating_add);
            let nccl = nccl_bytes(job);
            let peak = allocated
                .saturating_add(nccl)
                .saturating_add(CUDA_CONTEXT_BYTES);
            // Fragmentation is a share of the reserved memory: reserved =
            // allocated / (1 - f).
            let fragmentation = u64::try_from(
                u128::from(allocated) * u128::from(FRAGMENTATION_PERCENT)
                    / u128::from(100 - FRAGMENTATION_PERCENT),
            )
            .unwrap_or(u64::MAX);
            StageMemory {
                stage,
                parameters: n,
                weights_bytes: weights,
                gradients_bytes: gradients,
                optimizer_bytes: optimizer,
                host_bytes: host,
                activations_bytes: activations,
                in_flight: k,
                logits_bytes: logits,
                unsharded_unit_bytes: unsharded,
                workspace_bytes: workspace,
                cuda_graph_bytes: graphs,
                allocated_bytes: allocated,
                nccl_bytes: nccl,
                context_bytes: CUDA_CONTEXT_BYTES,
                peak_bytes: peak,
                fragmentation_bytes: fragmentation,
                reserved_bytes: peak.saturating_add(fragmentation),
            }
        })
        .collect();
    let capacity = job.gpu.memory_bytes;
    let messages: Vec<String> = per_stage
        .iter()
        .filter(|m| m.peak_bytes > capacity)
        .map(|m| {
            let (part, bytes) = m.parts()[0];
            format!(
                "does not fit on stage {}: needs {} of {} ({}); the largest part: {part}, {}",
                m.stage,
                gib(m.peak_bytes),
                gib(capacity),
                job.gpu.name,
                gib(bytes)
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
            r.messages[0].contains("of 79.6 GiB (H100-SXM); the largest part: "),
            "{}",
            r.messages[0]
        );
    }

    /// Which stacks pay autocast's casts and FSDP2's fp32 gradient cast.
    #[test]
    fn weight_and_gradient_casts_follow_the_stack_and_sharding() {
        use crate::model::ops::Casts;
        use crate::model::stack::Stack;
        let casts = |stack, zero, bf16_grads| {
            let mut s = TrainingSetup {
                bf16_grads,
                ..TrainingSetup::default()
            };
            s.stack.stack = stack;
            s.sharding.zero = zero;
            s.casts()
        };
        let (none, z3) = (ZeroStage::None, ZeroStage::Parameters);
        assert_eq!(casts(Stack::MegatronTe, none, false), Casts::None);
        assert_eq!(casts(Stack::MegatronTe, z3, false), Casts::None);
        assert_eq!(
            casts(Stack::PytorchEager, none, false),
            Casts::WeightsAndGradients
        );
        assert_eq!(
            casts(Stack::TorchCompile, none, false),
            Casts::WeightsAndGradients
        );
        assert_eq!(casts(Stack::TorchCompile, z3, false), Casts::Gradients);
        assert_eq!(casts(Stack::PytorchEager, none, true), Casts::None);
        assert_eq!(casts(Stack::PytorchEager, z3, true), Casts::None);
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
        // FP8 parameter gather: the FP8 copies are the linear weights (as
        // many bytes as their bf16 copy), and the distributed optimizer's
        // all-gather moves one byte a linear weight instead of two.
        let gathered = llama70b_512(|s| {
            s.precision = Precision::Fp8;
            s.distributed_optimizer = true;
            s.fp8_param_gather = true;
        });
        let pg = memory_report(&gathered, &[1; 8], 1);
        assert_eq!(st(&pg), st(&bf16));
        let gather_bytes = |j: &ModelJob| -> u64 {
            let d = crate::job::build::described_job(j, "t");
            d.stages[0]
                .after
                .iter()
                .filter(|o| o.name == "optimizer_param_allgather")
                .map(|o| o.weight_grad.comm.as_ref().map_or(0, |c| c.size_bytes))
                .sum()
        };
        let plain = llama70b_512(|s| {
            s.precision = Precision::Fp8;
            s.distributed_optimizer = true;
        });
        assert!(gather_bytes(&plain) > 0);
        assert_eq!(
            gather_bytes(&plain) - gather_bytes(&gathered),
            10 * per_layer
        );
        // Refused where it means nothing: bf16 training.
        let mut setup = plain.setup.clone();
        setup.precision = Precision::Bf16;
        setup.fp8_param_gather = true;
        let err = ModelJob::new(plain.model.clone(), setup, plain.gpu.clone(), None).unwrap_err();
        assert!(
            err.message.contains("needs FP8 training"),
            "{}",
            err.message
        );
    }
}
