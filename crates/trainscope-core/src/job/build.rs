//! A model-level job as the workload the event engine runs: a
//! [`DescribedJob`] with one [`StageWorkload`] per pipeline stage.
//!
//! Per micro-batch each stage runs its layers (the chunks of every virtual
//! stage it holds, in chunk order; the embedding first on stage 0, the
//! final norm, output layer and loss last on the last stage). A layer is a
//! few [`LayerOp`]s, each "compute, then the collective it ends with", so
//! the collectives sit where Megatron issues them:
//! - TP without sequence parallelism: an all-reduce after the attention
//!   and after the MLP in the forward, and after their input gradients in
//!   the backward; with sequence parallelism an all-gather before each
//!   block and a reduce-scatter after it (the reverse in the backward);
//! - context parallelism (CP > 1): every op on s/CP tokens, and per layer
//!   an all-gather of the K and V of the whole sequences over the CP group
//!   after the attention norm, a reduce-scatter of their gradients in the
//!   backward (Megatron-Core's `cp_comm_type allgather`; its default p2p
//!   ring, which overlaps the exchange with the attention blocks and moves
//!   about twice the forward volume in the backward, is not modelled);
//! - MoE layers: an all-to-all over EP to dispatch the tokens to their
//!   experts and one to combine them, in both directions;
//! - recompute: selective adds the attention core's forward to its input
//!   gradient; full appends, per layer, a recompute op whose input-gradient
//!   column re-runs the layer's forward compute and forward TP collectives
//!   before the layer's backward.
//!
//! Once per iteration (before the micro-batches' gradient sync runs, after
//! them the optimizer): the gradient all-reduce over DP x CP (DP_EP for
//! expert weights), or with the distributed optimizer a reduce-scatter of the
//! gradients and, after the optimizer step, an all-gather of the updated
//! bf16 weights; the tied-embedding all-reduce between the first and the
//! last stage; the optimizer step itself (Adam, bandwidth-bound over the
//! local shard). Pipeline sends carry the real activation: micro-batch x
//! sequence x hidden elements (/ TP with sequence parallelism).

use super::layout::{gradient_bytes, shape, stage_chunk_layers, stage_layers, weight_bytes};
use super::memory::{stage_params, StageParams};
use super::{ModelJob, Recompute};
use crate::hardware::{AttentionPass, GpuSpec, Precision};
use crate::model::dispatcher::Dispatcher;
use crate::model::ops::{Op, OpClass, OpWork, Shape};
use crate::model::stack::{Region, StackSettings};
use crate::workload::Format;
use crate::workload::{
    CommGroup, CommKind, CommOp, DescribedJob, LayerOp, LayerRole, MicroBatchBlock, ParallelConfig,
    PhaseOp, StageScope, StageWorkload,
};

/// Time of one phase of an op on `gpu`, ns (`attention`: the pass and
/// sequence length, used by the attention core's efficiency).
fn phase_ns(
    gpu: &GpuSpec,
    op: &Op,
    work: &OpWork,
    precision: Precision,
    attention: AttentionPass,
) -> u64 {
    if work.flops == 0.0 && work.bytes == 0.0 && work.kernels == 0 {
        return 0;
    }
    let precision = if precision == Precision::Fp8 && !op.fp8 {
        Precision::Bf16
    } else {
        precision
    };
    if op.class == OpClass::Gemm && work.groups > 1 {
        // A grouped GEMM: `groups` GEMMs, each on the curve at its size.
        let g = work.groups;
        let one = gpu.op_time_ns(
            op.class,
            work.flops / f64::from(g),
            work.bytes / f64::from(g),
            work.kernels / g,
            precision,
            attention,
        );
        return one.saturating_mul(u64::from(g));
    }
    gpu.op_time_ns(
        op.class,
        work.flops,
        work.bytes,
        work.kernels,
        precision,
        attention,
    )
}

/// Summed phase times of a group of ops, and the host time to launch
/// their kernels per phase ([`StackSettings::launch_ns`]).
#[derive(Debug, Clone, Copy, Default)]
struct Times {
    forward: u64,
    input_grad: u64,
    weight_grad: u64,
    launch: [u64; 3],
    kernels: [u32; 3],
    /// Launch queue entries ([`StackSettings::queue_entries`]).
    launches: [u32; 3],
}

/// How the host launches a group of ops: the job's stack and where the
/// ops sit (what a CUDA graph captures).
#[derive(Debug, Clone, Copy)]
struct Host {
    stack: StackSettings,
    region: Region,
    /// What `--recompute op` replays of each op.
    op_policy: super::op_checkpoint::OpPolicy,
}

fn times(
    gpu: &GpuSpec,
    ops: &[Op],
    precision: Precision,
    recompute: Recompute,
    seq_length: u64,
    host: Host,
) -> Times {
    let mut t = Times::default();
    let mut kernels = [0u32; 3];
    let mut native = [0u32; 3];
    let mut grouped_gemms = [0u32; 3];
    let pass = |backward| AttentionPass {
        seq_length,
        backward,
        kernel: host.stack.attention_kernel,
    };
    for op in ops {
        let f = phase_ns(gpu, op, &op.forward, precision, pass(false));
        t.forward += f;
        t.input_grad += phase_ns(gpu, op, &op.input_grad, precision, pass(true));
        t.weight_grad += phase_ns(gpu, op, &op.weight_grad, precision, pass(true));
        for (i, w) in [&op.forward, &op.input_grad, &op.weight_grad]
            .into_iter()
            .enumerate()
        {
            // A grouped op: one call from Python, the rest of its kernels
            // from the C++ loop over the groups (a grouped GEMM's expert
            // GEMMs at their own host cost); a Python loop over the groups
            // launches every kernel from Python.
            let python = if op.python_loop {
                w.kernels
            } else {
                w.kernels / w.groups.max(1)
            };
            kernels[i] += python;
            if op.class == OpClass::Gemm {
                grouped_gemms[i] += w.kernels - python;
            } else {
                native[i] += w.kernels - python;
            }
        }
        if recompute == Recompute::Selective && op.attention_core {
            t.input_grad += f;
            kernels[1] += op.forward.kernels;
        }
        if recompute == Recompute::Op {
            // torchtitan's op policy: the share of this op's forward it
            // replays in the backward ([`super::op_checkpoint`]).
            let share = host.op_policy.forward_share(op);
            if share > 0.0 {
                t.input_grad += (f as f64 * share).round() as u64;
                kernels[1] += op.forward.kernels;
            }
        }
    }
    t.launch = [0, 1, 2].map(|i| {
        host.stack.launch_ns(kernels[i], host.region)
            + host.stack.native_launch_ns(native[i], host.region)
            + host
                .stack
                .grouped_gemm_launch_ns(grouped_gemms[i], host.region)
    });
    t.kernels = [0, 1, 2].map(|i| kernels[i] + native[i] + grouped_gemms[i]);
    t.launches = t.kernels.map(|k| host.stack.queue_entries(k, host.region));
    t
}

fn comm(kind: CommKind, group: CommGroup, size_bytes: u64) -> Option<CommOp> {
    (size_bytes > 0).then_some(CommOp {
        kind,
        group,
        size_bytes,
        asynchronous: false,
        prefetch: 0,
    })
}

fn op(
    name: String,
    role: LayerRole,
    layer: Option<u32>,
    t: Times,
    fwd: Option<CommOp>,
    ig: Option<CommOp>,
) -> LayerOp {
    let mut o = LayerOp::empty(name, role);
    o.block_index = layer;
    o.forward = PhaseOp {
        compute_ns: t.forward,
        comm: fwd,
        launch_ns: t.launch[0],
        kernels: t.kernels[0],
        launches: t.launches[0],
        ..Default::default()
    };
    o.input_grad = PhaseOp {
        compute_ns: t.input_grad,
        comm: ig,
        launch_ns: t.launch[1],
        kernels: t.kernels[1],
        launches: t.launches[1],
        ..Default::default()
    };
    o.weight_grad = PhaseOp {
        compute_ns: t.weight_grad,
        comm: None,
        launch_ns: t.launch[2],
        kernels: t.kernels[2],
        launches: t.launches[2],
        ..Default::default()
    };
    o
}

/// The TP collectives around one block (attention or MLP): (before the
/// block's compute, after it) in the forward; the backward mirrors them.
struct TpComms {
    /// Sequence parallelism: all-gather before, reduce-scatter after.
    sp: bool,
    /// Full activation tensor of the micro-batch, bytes.
    size_bytes: u64,
    tp: u32,
}

impl TpComms {
    fn after_fwd(&self) -> Option<CommOp> {
        if self.tp <= 1 {
            return None;
        }
        let kind = if self.sp {
            CommKind::ReduceScatter
        } else {
            CommKind::AllReduce
        };
        comm(kind, CommGroup::Tp, self.size_bytes)
    }
    fn before_fwd(&self) -> Option<CommOp> {
        (self.tp > 1 && self.sp)
            .then(|| comm(CommKind::AllGather, CommGroup::Tp, self.size_bytes))
            .flatten()
    }
    /// The backward collective of the block's input gradient.
    fn ig(&self) -> Option<CommOp> {
        self.after_fwd()
    }
    /// The backward all-gather of the output gradient (sequence parallel).
    fn ig_before(&self) -> Option<CommOp> {
        self.before_fwd()
    }
}

impl Times {
    /// `self` plus `other`, phase by phase.
    fn plus(self, other: Times) -> Times {
        Times {
            forward: self.forward + other.forward,
            input_grad: self.input_grad + other.input_grad,
            weight_grad: self.weight_grad + other.weight_grad,
            launch: [0, 1, 2].map(|i| self.launch[i] + other.launch[i]),
            kernels: [0, 1, 2].map(|i| self.kernels[i] + other.kernels[i]),
            launches: [0, 1, 2].map(|i| self.launches[i] + other.launches[i]),
        }
    }
}

/// Split a block's ops into its norm (first), body and residual (last).
fn split_norm(mut ops: Vec<Op>) -> (Vec<Op>, Vec<Op>, Vec<Op>) {
    let last = ops.pop().into_iter().collect();
    let first = if ops.is_empty() {
        Vec::new()
    } else {
        vec![ops.remove(0)]
    };
    (first, ops, last)
}

/// A block's body split for TP overlap: its first GEMM (and the FP8 cast
/// after it), the middle, its last GEMM and everything after it.
fn split_gemms(body: Vec<Op>) -> (Vec<Op>, Vec<Op>, Vec<Op>) {
    let first_gemm = body.iter().position(|o| o.class == OpClass::Gemm);
    let last_gemm = body.iter().rposition(|o| o.class == OpClass::Gemm);
    let (Some(f), Some(l)) = (first_gemm, last_gemm) else {
        return (Vec::new(), body, Vec::new());
    };
    let cast = |i: usize| {
        body.get(i + 1)
            .is_some_and(|o| o.name == "fp8_cast_transpose")
    };
    let first_end = if cast(f) { f + 2 } else { f + 1 };
    if l < first_end {
        return (body, Vec::new(), Vec::new());
    }
    let mut rest = body;
    let last = rest.split_off(l);
    let middle = rest.split_off(first_end);
    (rest, middle, last)
}

/// One TP block as layer ops: with sequence parallelism the norm (then the
/// all-gather) and the body (then the reduce-scatter; the backward mirrors
/// both); without it one op, its all-reduce after the forward and after
/// the input gradient. `body_fwd` replaces the body's forward collective
/// (MoE: the dispatch all-to-all), `body_ig` its input-gradient one.
struct TpBlock<'a> {
    tp: &'a TpComms,
    layer: u32,
}

impl TpBlock<'_> {
    /// The attention block with the context-parallel exchange `kv` between
    /// the norm (and its TP all-gather) and the body: in the forward the
    /// K/V all-gather runs after the norm, in the backward (walked in
    /// reverse) the gradients' reduce-scatter after the body's input
    /// gradient and before the norm's.
    fn push_cp(&self, out: &mut Vec<LayerOp>, norm: Times, kv: LayerOp, body: Times) {
        let li = Some(self.layer);
        let name = |part: &str| format!("{part}.{}", self.layer);
        let (gather, ig_before, body_ig) = if self.tp.sp {
            (self.tp.before_fwd(), self.tp.ig_before(), None)
        } else {
            (None, None, self.tp.ig())
        };
        // Without sequence parallelism the norm has no collective of its
        // own: the block's input-gradient all-reduce ends the norm.
        let (norm_ig, body_ig_comm) = if self.tp.sp {
            (None, ig_before)
        } else {
            (body_ig, None)
        };
        out.push(op(
            name("attention_norm"),
            LayerRole::Layer,
            li,
            norm,
            gather,
            norm_ig,
        ));
        out.push(kv);
        out.push(op(
            name("attention"),
            LayerRole::Layer,
            li,
            body,
            self.tp.after_fwd(),
            body_ig_comm,
        ));
    }

    fn push(&self, out: &mut Vec<LayerOp>, names: [&str; 2], norm: Times, body: Times) {
        self.push_with(out, names, norm, body, self.tp.after_fwd());
    }

    /// A sequence-parallel block under Transformer Engine's TP overlap: the
    /// norm, the first GEMM with the all-gather streaming alongside it, the
    /// middle, the last GEMM (and the residual) with the reduce-scatter
    /// alongside it; in the backward the output gradient's all-gather runs
    /// alongside the last GEMM's input gradient. (Megatron's backward
    /// reduce-scatter of the input gradient and the weight gradient's
    /// re-gather are already asynchronous without TE: not modelled, as in
    /// [`TpBlock::push_with`].)
    fn push_overlapped(&self, out: &mut Vec<LayerOp>, block: &str, parts: [Times; 4]) {
        let li = Some(self.layer);
        let name = |part: &str| format!("{block}{part}.{}", self.layer);
        let [norm, first, middle, last] = parts;
        out.push(op(name("_norm"), LayerRole::Layer, li, norm, None, None));
        let mut o = op(
            name("_in"),
            LayerRole::Layer,
            li,
            first,
            self.tp.before_fwd(),
            None,
        );
        o.forward.comm_overlap = true;
        out.push(o);
        out.push(op(name(""), LayerRole::Layer, li, middle, None, None));
        let mut o = op(
            name("_out"),
            LayerRole::Layer,
            li,
            last,
            self.tp.after_fwd(),
            self.tp.ig_before(),
        );
        o.forward.comm_overlap = true;
        o.input_grad.comm_overlap = true;
        out.push(o);
    }

    fn push_with(
        &self,
        out: &mut Vec<LayerOp>,
        [norm_name, body_name]: [&str; 2],
        norm: Times,
        body: Times,
        body_fwd: Option<CommOp>,
    ) {
        let li = Some(self.layer);
        let name = |part: &str| format!("{part}.{}", self.layer);
        if self.tp.sp {
            let gather = self.tp.before_fwd();
            out.push(op(
                name(norm_name),
                LayerRole::Layer,
                li,
                norm,
                gather,
                None,
            ));
            let ig = self.tp.ig_before();
            out.push(op(
                name(body_name),
                LayerRole::Layer,
                li,
                body,
                body_fwd,
                ig,
            ));
        } else {
            let ig = self.tp.ig();
            let t = norm.plus(body);
            out.push(op(name(body_name), LayerRole::Layer, li, t, body_fwd, ig));
        }
    }
}

/// The ops of transformer layer `layer` (0-based, global index). Names
/// start with their block (`attention*`, `mlp*`, `moe*`): the interleaved
/// and V-shaped schedules recognise a layer by its first `attention*` op.
fn layer_ops(job: &ModelJob, layer: u32, shape: &Shape, out: &mut Vec<LayerOp>) {
    let m = &job.model;
    let s = &job.setup;
    let gpu = &job.gpu;
    let p = s.precision;
    let rc = s.recompute;
    let tp = TpComms {
        sp: s.sequence_parallel,
        size_bytes: shape.tokens() * m.hidden_size * shape.activation_bytes,
        tp: s.tp,
    };
    let block = TpBlock { tp: &tp, layer };
    let first_out = out.len();
    let host = Host {
        stack: s.stack,
        region: Region::Layer,
        op_policy: super::op_checkpoint::OpPolicy::of(m),
    };
    let t = |ops: &[Op]| times(gpu, ops, p, rc, shape.local_seq_length(), host);
    // Transformer Engine's TP overlap: sequence-parallel blocks with TP > 1
    // (the CP exchange and MoE blocks keep their collectives in the chain).
    let tp_overlap = s.stack.tp_comm_overlap && s.sequence_parallel && s.tp > 1;
    let overlapped = |block: &str, parts: (Vec<Op>, Vec<Op>, Vec<Op>), out: &mut Vec<LayerOp>| {
        let (norm, body, residual) = parts;
        let (first, middle, mut last) = split_gemms(body);
        last.extend(residual);
        let b = TpBlock { tp: &tp, layer };
        b.push_overlapped(out, block, [t(&norm), t(&first), t(&middle), t(&last)]);
    };
    // Attention block.
    let attention_parts = split_norm(m.attention_ops(shape));
    if tp_overlap && s.cp == 1 {
        overlapped("attention", attention_parts, out);
    } else if s.cp > 1 {
        let (norm, body, residual) = attention_parts;
        let attention = t(&body).plus(t(&residual));
        // Context parallelism: the K and V of the other CP ranks' tokens
        // gathered before the attention core (Megatron's `cp_comm_type
        // allgather`), their gradients reduce-scattered in the backward;
        // ends the norm (and the TP all-gather before the block) as one op.
        let kv = cp_kv_bytes(job);
        let o = op(
            format!("attention_cp_kv_exchange.{layer}"),
            LayerRole::Layer,
            Some(layer),
            Times::default(),
            comm(CommKind::AllGather, CommGroup::Cp, kv),
            comm(CommKind::ReduceScatter, CommGroup::Cp, kv),
        );
        block.push_cp(out, t(&norm), o, attention);
    } else {
        let (norm, body, residual) = attention_parts;
        let attention = t(&body).plus(t(&residual));
        block.push(out, ["attention_norm", "attention"], t(&norm), attention);
    }
    // MLP block.
    let (norm, body, residual) = split_norm(m.mlp_ops(layer, shape));
    match &m.moe {
        Some(moe) if m.is_moe_layer(layer) => {
            // Router, routing and permutation | experts (routed + shared) |
            // unpermute.
            let (front, rest): (Vec<Op>, Vec<Op>) = body
                .into_iter()
                .partition(|o| matches!(o.name, "router" | "moe_routing" | "moe_permute"));
            let (experts, back): (Vec<Op>, Vec<Op>) =
                rest.into_iter().partition(|o| o.name != "moe_unpermute");
            let (disp, comb, probs) = dispatch_comms(job, moe, shape);
            // Expert TP 1 below TP (parallel folding): each rank routes its
            // own sequence-parallel tokens to whole experts, so the block
            // has no TP collective, unless shared experts (run with TP on
            // the gathered tokens, as a dense MLP) need one.
            let folded = job.expert_tp() < s.tp && moe.num_shared_experts == 0;
            let moe_tp = TpComms {
                tp: if folded { 1 } else { s.tp },
                ..tp
            };
            let block = TpBlock { tp: &moe_tp, layer };
            // The dispatch ends the router block in the forward; its
            // backward ends with the TP collective of the block's input.
            block.push_with(out, ["mlp_norm", "moe_dispatch"], t(&norm), t(&front), disp);
            let li = Some(layer);
            if probs.is_some() {
                out.push(op(
                    format!("moe_dispatch_probs.{layer}"),
                    LayerRole::Layer,
                    li,
                    Times::default(),
                    probs,
                    probs,
                ));
            }
            // The routed experts run behind the token dispatcher's sync
            // point (Megatron's all-to-all dispatcher copies the per-expert
            // token counts to the host before the all-to-all): their
            // launches wait for the router on the device, and only whole-
            // step graphs (static token counts) capture them.
            let dynamic = Host {
                region: Region::DynamicExperts,
                ..host
            };
            let mut experts_op = op(
                format!("moe_experts.{layer}"),
                LayerRole::Layer,
                li,
                times(gpu, &experts, p, rc, shape.local_seq_length(), dynamic),
                comb,
                comb,
            );
            experts_op.forward.host_sync = s.stack.syncs_before_experts();
            out.push(experts_op);
            let combine = t(&back).plus(t(&residual));
            out.push(op(
                format!("moe_combine.{layer}"),
                LayerRole::Layer,
                li,
                combine,
                moe_tp.after_fwd(),
                disp,
            ));
        }
        _ if tp_overlap => overlapped("mlp", (norm, body, residual), out),
        _ => {
            let mlp = t(&body).plus(t(&residual));
            block.push(out, ["mlp_norm", "mlp"], t(&norm), mlp);
        }
    }
    if rc == Recompute::Full {
        // Re-run the layer's forward (compute and its forward collectives)
        // before its backward: the backward walks ops in reverse, so the
        // recompute ops come last, in reverse forward order.
        let fwd: Vec<PhaseOp> = out[first_out..].iter().map(|o| o.forward).collect();
        for (i, f) in fwd.into_iter().enumerate().rev() {
            let mut r = LayerOp::empty(format!("recompute.{layer}.{i}"), LayerRole::Layer);
            r.block_index = Some(layer);
            r.input_grad = PhaseOp {
                host_sync: false,
                ..f
            };
            out.push(r);
        }
    }
}

/// The token dispatcher's collectives of one MoE layer over EP, per rank
/// and micro-batch ([`crate::model::dispatcher`]): (dispatch, combine, the
/// routing probabilities' own exchange). `alltoall`: an all-to-all of every
/// (token, expert) pair each way, the probabilities in a second one;
/// `allgather`: an all-gather of every token of the group and a
/// reduce-scatter of the outputs (the backward swaps them), the
/// probabilities gathered too; `flex`: one fused kernel each way with the
/// bytes deduplicated per destination rank and node, the probabilities
/// inside it. The busiest rank's imbalance scales what it receives. None
/// without EP.
fn dispatch_comms(
    job: &ModelJob,
    moe: &crate::model::MoeSpec,
    shape: &Shape,
) -> (Option<CommOp>, Option<CommOp>, Option<CommOp>) {
    let s = &job.setup;
    if s.ep <= 1 {
        return (None, None, None);
    }
    let tokens = shape.tokens().div_ceil(u64::from(s.tp)) as f64;
    let d = s.stack.dispatcher;
    let vectors =
        d.wire_elements_per_token(moe.num_experts, moe.top_k, s.ep, job.ep_ranks_per_node())
            * s.stack.moe_imbalance();
    let size = (tokens * vectors).round() as u64 * job.model.hidden_size * shape.activation_bytes;
    // fp32 probabilities, one per (token, expert) pair.
    let probs = (tokens * f64::from(moe.top_k) * 4.0).round() as u64;
    match d {
        Dispatcher::AllToAll => (
            comm(CommKind::AllToAll, CommGroup::Ep, size),
            comm(CommKind::AllToAll, CommGroup::Ep, size),
            comm(CommKind::AllToAll, CommGroup::Ep, probs),
        ),
        Dispatcher::AllGather => (
            comm(CommKind::AllGather, CommGroup::Ep, size),
            comm(CommKind::ReduceScatter, CommGroup::Ep, size),
            comm(CommKind::AllGather, CommGroup::Ep, probs * u64::from(s.ep)),
        ),
        Dispatcher::Flex => (
            comm(CommKind::AllToAll, CommGroup::Ep, size),
            comm(CommKind::AllToAll, CommGroup::Ep, size),
            None,
        ),
    }
}

/// Bytes of one layer's context-parallel K/V exchange per rank and
/// micro-batch: the K and V of every token of the micro-batch's sequences
/// on one TP rank (b x s x 2 x kv heads/t x head size x activation bytes;
/// MLA: the per-head keys and values it expands to), which is what the
/// all-gather collects and what the p2p ring moves in CP - 1 steps of s/CP
/// tokens each, plus the rank's own chunk.
pub fn cp_kv_bytes(job: &ModelJob) -> u64 {
    let m = &job.model;
    let s = &job.setup;
    let t = u64::from(s.tp);
    let tokens = u64::from(s.micro_batch_size) * u64::from(s.seq_length);
    let per_token = match &m.mla {
        Some(mla) => u64::from(m.num_attention_heads) / t * (mla.qk_head_dim() + mla.v_head_dim),
        None => 2 * m.kv_width() / t,
    };
    tokens * per_token * s.precision.activation_bytes()
}

/// Per-op times of a list of memory-bound or GEMM ops as one op.
fn simple(job: &ModelJob, name: &str, role: LayerRole, ops: &[Op]) -> LayerOp {
    let t = times(
        &job.gpu,
        ops,
        job.setup.precision,
        Recompute::None,
        u64::from(job.setup.seq_length / job.setup.cp.max(1)),
        Host {
            stack: job.setup.stack,
            region: Region::Outside,
            op_policy: super::op_checkpoint::OpPolicy::of(&job.model),
        },
    );
    op(name.to_string(), role, None, t, None, None)
}

/// Bytes read and written per parameter by one Adam step over fp32 main
/// weights (weight, gradient, two moments read and written, the
/// low-precision copy written).
pub const ADAM_BYTES_PER_PARAM: u64 = 4 + 4 + 4 + 4 + 4 + 4 + 4 + 2;

/// The once-per-iteration rows of stage `stage`: (before, after).
fn iteration_rows(
    job: &ModelJob,
    stage: u32,
    params: &StageParams,
) -> (Vec<LayerOp>, Vec<LayerOp>) {
    let s = &job.setup;
    let g = gradient_bytes(s);
    let w = weight_bytes(s.precision);
    let dp_cp = job.dp_cp();
    let dist = s.distributed_optimizer && dp_cp > 1;
    // ZeRO-3 reduces and gathers per unit (`sharding::unit_collectives`),
    // ZeRO-2 reduces per layer (`sharding::gradient_reduce_scatter`).
    let per_unit = super::sharding::shards_parameters(job);
    let per_layer_grads = super::sharding::shards_gradients(job);
    let mut before = Vec::new();
    let mut after = Vec::new();
    let grad_sync =
        |name: &str, group: CommGroup, elems: u64, ranks: u32, out: &mut Vec<LayerOp>| {
            if ranks <= 1 || elems == 0 || per_layer_grads {
                return;
            }
            let kind = if dist {
                CommKind::ReduceScatter
            } else {
                CommKind::AllReduce
            };
            // In the weight-gradient column, as AICB writes gradient sync.
            let mut o = LayerOp::empty(name, LayerRole::GradSync);
            o.weight_grad.comm = comm(kind, group, elems * g);
            out.push(o);
        };
    let dp_ep = job.expert_dp();
    // Over DP x CP (the engine's DP group holds the CP ranks too).
    grad_sync(
        "dp_grad_sync",
        CommGroup::Dp,
        params.dense,
        dp_cp,
        &mut before,
    );
    grad_sync(
        "expert_grad_sync",
        CommGroup::DpEp,
        params.expert,
        dp_ep,
        &mut before,
    );
    let last = job.output_stage();
    if job.model.tied_embeddings && last != 0 && (stage == 0 || stage == last) {
        let mut o = LayerOp::empty("embedding_grad_allreduce", LayerRole::GradSync);
        let elems = job.padded_vocab_size / u64::from(s.tp) * job.model.hidden_size;
        o.weight_grad.comm = comm(CommKind::AllReduce, CommGroup::Embedding, elems * g);
        before.push(o);
    }
    // Optimizer step over the local shard.
    let shard = |elems: u64, ranks: u32| {
        if dist {
            elems.div_ceil(u64::from(ranks.max(1)))
        } else {
            elems
        }
    };
    let local =
        shard(params.dense, super::sharding::shard_ranks(job).0) + shard(params.expert, dp_ep);
    let adam = Op {
        name: "optimizer",
        class: OpClass::Memory,
        attention_core: false,
        fp8: false,
        python_loop: false,
        forward: OpWork {
            flops: 0.0,
            bytes: (local * ADAM_BYTES_PER_PARAM) as f64,
            kernels: optimizer_kernels(local),
            ..Default::default()
        },
        input_grad: OpWork::default(),
        weight_grad: OpWork::default(),
    };
    let mut step = if s.sharding.offload == super::sharding::Offload::None {
        simple(job, "optimizer_step", LayerRole::Optimizer, &[adam])
    } else {
        // Offload (`sharding::offload_step_ns`): the gradient shard down
        // over PCIe, the CPU's Adam, the weights back up; the GPU waits.
        let (down, cpu, up) = super::sharding::offload_step_ns(local, g, w, job.gpu.pcie_gbps);
        let mut o = LayerOp::empty("optimizer_step_offload", LayerRole::Optimizer);
        o.forward.compute_ns = down + cpu + up;
        o
    };
    // The gradient norm's `.item()` (clip_grads.py) and the mixed-precision
    // optimizer's `found_inf.item()` block the host until the device is
    // there.
    step.forward.host_sync = step.forward.launch_ns > 0;
    after.push(step);
    if dist {
        let gather =
            |name: &str, group: CommGroup, bytes: u64, ranks: u32, out: &mut Vec<LayerOp>| {
                if ranks > 1 && bytes > 0 && !per_unit {
                    let mut o = LayerOp::empty(name, LayerRole::Optimizer);
                    o.weight_grad.comm = comm(CommKind::AllGather, group, bytes);
                    out.push(o);
                }
            };
        // FP8 parameter gather: the linear weights travel in FP8, one
        // byte each (the routed experts' weights are all linear).
        let (dense_linear, expert_linear) = if s.fp8_param_gather {
            (params.linear.saturating_sub(params.expert), params.expert)
        } else {
            (0, 0)
        };
        gather(
            "optimizer_param_allgather",
            CommGroup::Dp,
            params.dense * w - dense_linear * (w - 1),
            dp_cp,
            &mut after,
        );
        gather(
            "optimizer_expert_param_allgather",
            CommGroup::DpEp,
            params.expert * w - expert_linear * (w - 1),
            dp_ep,
            &mut after,
        );
    }
    (before, after)
}

/// Kernels each pipeline stage's first rank launches in one iteration
/// (every op of every micro-batch, recomputes included, and the
/// once-per-iteration rows), from the ops' own counts.
pub fn kernels_per_iteration(described: &DescribedJob) -> Vec<u64> {
    let phases = |o: &LayerOp| {
        u64::from(o.forward.kernels)
            + u64::from(o.input_grad.kernels)
            + u64::from(o.weight_grad.kernels)
    };
    described
        .stages
        .iter()
        .map(|st| {
            let blocks: u64 = st
                .blocks
                .iter()
                .map(|b| u64::from(b.repeat) * b.ops.iter().map(phases).sum::<u64>())
                .sum();
            blocks + st.before.iter().chain(&st.after).map(phases).sum::<u64>()
        })
        .collect()
}

/// Elements one multi-tensor-apply launch covers: 320 blocks of 65,536
/// (PyTorch's `MultiTensorApply.cuh`; the fused Adam of the committed H100
/// traces launched 60 kernels for 1.24 B parameters).
pub const MULTI_TENSOR_ELEMS: u64 = 320 * 65_536;

/// Kernels of one optimizer step over `local` parameters: Adam, the
/// gradient norm's L2 and the clipping scale, each one multi-tensor launch
/// per [`MULTI_TENSOR_ELEMS`], plus the norm's reduction and the found-inf
/// check (Megatron's `clip_grads.py`, `optimizer.py`).
pub fn optimizer_kernels(local: u64) -> u32 {
    let per_pass = local.div_ceil(MULTI_TENSOR_ELEMS).max(1);
    u32::try_from(3 * per_pass + 2).unwrap_or(u32::MAX)
}

/// Bytes of one stage-to-stage send of one micro-batch.
pub fn activation_send_bytes(job: &ModelJob) -> u64 {
    let sh = shape(job);
    let full = sh.tokens() * job.model.hidden_size * sh.activation_bytes;
    if job.setup.sequence_parallel {
        full / u64::from(job.setup.tp)
    } else {
        full
    }
}

/// The workload of a model-level job (see the module documentation). `name`
/// is the job's name in reports.
pub fn described_job(job: &ModelJob, name: &str) -> DescribedJob {
    let s = &job.setup;
    let shape = shape(job);
    let padded = job.padded_model();
    let parallel = ParallelConfig {
        world: job.world,
        tp: s.tp,
        pp: s.pp,
        dp: job.dp_cp(),
        cp: s.cp,
        ep: s.ep,
        dp_ep: job.expert_dp(),
        micro_batches: job.micro_batches,
        virtual_stages: s.vpp,
        micro_batch_size: Some(s.micro_batch_size),
        activation_bytes: activation_send_bytes(job),
        etp: s.expert_tp,
        // HSDP's shard group in the engine's DP indices (DP x CP).
        dp_shard: super::sharding::hsdp(job).map_or(0, |(n, _)| n * s.cp.max(1)),
    };
    let stages = (0..s.pp)
        .map(|stage| {
            let mut ops = Vec::new();
            if stage == 0 {
                ops.push(simple(
                    job,
                    "embedding_layer",
                    LayerRole::Embedding,
                    &padded.embedding_ops(&shape),
                ));
            }
            for layer in stage_layers(job, stage) {
                // ZeRO-3 / FSDP: the unit's all-gathers and reduce-scatter.
                let (gather, regather) = super::sharding::unit_collectives(job, layer);
                ops.extend(gather);
                // ZeRO-2: the layer's gradients reduce-scattered after its
                // backward, every micro-batch.
                ops.extend(super::sharding::gradient_reduce_scatter(job, layer));
                layer_ops(job, layer, &shape, &mut ops);
                ops.extend(regather);
            }
            if stage == job.output_stage() {
                ops.push(simple(
                    job,
                    "final_output_and_loss",
                    LayerRole::Loss,
                    &padded.output_ops(&shape),
                ));
            }
            let params = stage_params(job, stage);
            let (before, after) = iteration_rows(job, stage, &params);
            StageWorkload {
                scope: StageScope::Stage(stage),
                before,
                blocks: vec![MicroBatchBlock {
                    repeat: job.micro_batches,
                    ops,
                }],
                after,
                // Uneven chunks (the embedding or loss counted in the
                // split) are cut by their layer counts.
                chunk_layers: if job.accounts_in_split() && job.chunks_per_stage() > 1 {
                    stage_chunk_layers(job, stage)
                        .iter()
                        .map(|c| c.len() as u32)
                        .collect()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    DescribedJob {
        file: name.to_string(),
        format: Format::HfConfig,
        parallel,
        stages,
        diagnostics: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_HOST: Host = Host {
        stack: StackSettings {
            stack: crate::model::stack::Stack::MegatronTe,
            cuda_graphs: crate::model::stack::CudaGraphs::None,
            launch_ns_per_kernel: None,
            dispatcher: Dispatcher::AllToAll,
            moe_fusion: None,
            moe_a2a_overlap: false,
            tp_comm_overlap: false,
            moe_imbalance_milli: None,
            launch_queue_depth: None,
            attention_kernel: crate::model::attention_kernel::AttentionKernel::Cudnn,
        },
        region: Region::Layer,
        op_policy: crate::job::op_checkpoint::OpPolicy {
            qkv_share: 0.0,
            gated_mlp: true,
        },
    };
    use crate::hardware::gpu_preset;
    use crate::model::presets;

    #[test]
    fn selective_recompute_recomputes_every_op_of_the_attention_core() {
        let gpu = gpu_preset("A100-80G").unwrap();
        let m = presets::preset("gpt3-175b").unwrap();
        for flash in [true, false] {
            let s = Shape {
                tp: 8,
                expert_tp: 8,
                sequence_parallel: true,
                flash_attention: flash,
                ..Shape::for_tests()
            };
            let ops = m.attention_ops(&s);
            let core: Vec<Op> = ops.iter().filter(|o| o.attention_core).cloned().collect();
            let none = times(
                &gpu,
                &ops,
                Precision::Bf16,
                Recompute::None,
                2048,
                TEST_HOST,
            );
            let sel = times(
                &gpu,
                &ops,
                Precision::Bf16,
                Recompute::Selective,
                2048,
                TEST_HOST,
            );
            let core_fwd = times(
                &gpu,
                &core,
                Precision::Bf16,
                Recompute::None,
                2048,
                TEST_HOST,
            )
            .forward;
            assert!(core_fwd > 0);
            assert_eq!(sel.forward, none.forward);
            assert_eq!(sel.input_grad, none.input_grad + core_fwd, "flash {flash}");
            assert_eq!(sel.weight_grad, none.weight_grad);
        }
    }

    #[test]
    fn fp8_jobs_run_the_output_layer_at_the_bf16_rate() {
        let gpu = gpu_preset("H100-SXM").unwrap();
        let m = presets::preset("llama3-8b").unwrap();
        let s = |weight_bytes| Shape {
            seq_length: 4096,
            gemm_weight_bytes: weight_bytes,
            ..Shape::for_tests()
        };
        let out = |p, w| {
            times(
                &gpu,
                &m.output_ops(&s(w)),
                p,
                Recompute::None,
                4096,
                TEST_HOST,
            )
        };
        let (fp8, bf16) = (out(Precision::Fp8, 1), out(Precision::Bf16, 2));
        assert_eq!(fp8.forward, bf16.forward);
        assert_eq!(fp8.weight_grad, bf16.weight_grad);
        // The layers' GEMMs do run faster in FP8.
        let mlp = |p, w| {
            times(
                &gpu,
                &m.mlp_ops(0, &s(w)),
                p,
                Recompute::None,
                4096,
                TEST_HOST,
            )
        };
        assert!(mlp(Precision::Fp8, 1).forward < mlp(Precision::Bf16, 2).forward);
    }
}
