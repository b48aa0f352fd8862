//! FLOPs and bytes of every op of a transformer layer, per tensor-parallel
//! rank and micro-batch, in the three phases the simulator runs (forward,
//! input gradient, weight gradient), and the model FLOPs MFU is measured
//! against. No GPU and no time here: [`crate::hardware`] turns an [`Op`]
//! into nanoseconds.
//!
//! Conventions (T = micro-batch x sequence tokens, t = TP, h hidden, q/kv
//! the query/key-value widths, f the MLP width, V the vocabulary):
//! - A GEMM of (m x k) by (k x n) is 2mkn FLOPs; its input gradient and its
//!   weight gradient are each as many as its forward. Bytes: the weight,
//!   the input and the output once each at the precision's sizes.
//! - The attention core (fused / flash attention) computes QK^T and AV
//!   over the causal half of the score matrix: 2 x 2 x b x s^2 x heads/t x
//!   head size x 1/2 FLOPs forward; its backward is 2.5 x its forward (the
//!   fused backward recomputes the scores: five products against two).
//! - Without a fused kernel (Megatron's unfused core attention, as used
//!   before flash attention and as Korthikanti et al. 2022 describe it:
//!   "QK^T matrix multiply, softmax, softmax dropout, and attention over
//!   V"), the core is four ops over the full (not causal-halved) score
//!   matrix of E = b x heads/t x s^2 elements: the scores and context
//!   batched GEMMs (their backward: two GEMMs each, no weight gradient),
//!   and the bandwidth-bound softmax (forward reads and writes E, backward
//!   reads the probabilities and their gradient, writes E) and dropout
//!   (forward and backward: E in, E out and a one-byte mask), the ops whose
//!   outputs the activation memory's 5as^2b term holds.
//! - Model FLOPs (MFU) count the attention core in full (not halved), as
//!   Megatron-LM's and PaLM's MFU formulas do, and no recompute.
//! - Norms, activations, residual adds, router, permutation and the loss
//!   are bandwidth-bound ([`OpClass::Memory`]): bytes read + written.
//! - Context parallelism (c, Megatron's `--context-parallel-size`):
//!   every op works on T = b x s/c tokens, except that the fused attention
//!   core's local queries attend to all s keys: its FLOPs are the causal
//!   core's / c (the load-balanced 2c-chunk split gives every rank the same
//!   share) and it reads K and V of all s tokens.
//! - Sequence parallelism runs norms, residuals and dropout on T/t tokens;
//!   the GEMMs see all T tokens (gathered) with 1/t of the weights.
//! - MoE layers: routed experts keep the TP split of the dense MLP (expert
//!   tensor parallelism = TP) and a balanced router (each rank computes T x
//!   top-k token-expert pairs / t worth of expert GEMMs, whatever EP is).

use super::dispatcher::{MoeKernels, MoeRun};
use super::eager::EagerBytes;
use super::ModelSpec;
use serde::Serialize;

/// What bounds an op's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    /// A matrix multiply (tensor cores at the GEMM precision).
    Gemm,
    /// The fused attention core.
    Attention,
    /// Element-wise / reduction kernels: bandwidth-bound.
    Memory,
}

/// FLOPs, bytes moved and kernel launches of one phase of an op.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct OpWork {
    pub flops: f64,
    pub bytes: f64,
    pub kernels: u32,
    /// A grouped GEMM: this many equal GEMMs, each of 1/groups of the
    /// FLOPs, read on the GEMM curve at its own size (0 or 1: one GEMM).
    pub groups: u32,
}

/// One op of a layer on one TP rank for one micro-batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Op {
    pub name: &'static str,
    pub class: OpClass,
    /// Part of the attention core: what selective recompute recomputes.
    pub attention_core: bool,
    /// An FP8 GEMM when the job's precision is FP8 (the transformer layers'
    /// linear layers); the output layer, the router and the unfused
    /// attention core's GEMMs stay in bf16, as Megatron runs them.
    pub fp8: bool,
    /// The groups run as a Python loop (eager PyTorch's routed experts, as
    /// Megatron's SequentialMLP and HF transformers run them): every kernel
    /// is launched from Python. False: one Python call, the rest of a
    /// grouped op's kernels from a C++ loop.
    pub python_loop: bool,
    pub forward: OpWork,
    pub input_grad: OpWork,
    pub weight_grad: OpWork,
}

/// The sizes an op list depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// Sequences per micro-batch (b).
    pub micro_batch_size: u64,
    /// Tokens per sequence (s).
    pub seq_length: u64,
    /// Tensor-parallel size (t).
    pub tp: u64,
    /// Expert tensor-parallel size (e): the routed experts' weights are
    /// split e ways; each rank computes the tokens of its t / e share of
    /// the TP group at 1/e of the experts' width (e = t: every token of
    /// the group at 1/t; e = 1: its own tokens, whole experts).
    pub expert_tp: u64,
    /// Context-parallel size (c): every op but the attention core's key
    /// side works on s/c tokens per sequence; 1 without context
    /// parallelism.
    pub cp: u64,
    /// Megatron sequence parallelism.
    pub sequence_parallel: bool,
    /// Bytes of one activation element.
    pub activation_bytes: u64,
    /// Bytes of one weight element as the GEMMs read it (1 for FP8).
    pub gemm_weight_bytes: u64,
    /// A fused (flash) attention kernel; `false`: the unfused core.
    pub flash_attention: bool,
    /// Routed experts on one rank (experts / EP; 1 for dense models): the
    /// routed experts run as a grouped GEMM of this many GEMMs.
    pub local_experts: u64,
    /// How MoE layers dispatch their tokens and which kernels that takes.
    pub moe: MoeRun,
    /// Element-wise steps unfused, one kernel each (eager PyTorch;
    /// [`super::eager`]).
    pub unfused: bool,
    /// Which casts of the linear layers' weights PyTorch runs every
    /// micro-batch ([`Casts`], [`AUTOCAST_CAST`]).
    pub casts: Casts,
}

#[cfg(test)]
impl Shape {
    /// One micro-batch of one 2048-token sequence in bf16 on one GPU with
    /// flash attention, dense, Megatron's fused kernels: what tests start
    /// from and change field by field.
    pub(crate) fn for_tests() -> Shape {
        Shape {
            micro_batch_size: 1,
            seq_length: 2048,
            tp: 1,
            expert_tp: 1,
            cp: 1,
            sequence_parallel: false,
            activation_bytes: 2,
            gemm_weight_bytes: 2,
            flash_attention: true,
            local_experts: 1,
            moe: MoeRun::default(),
            unfused: false,
            casts: Casts::None,
        }
    }
}

/// The per-micro-batch casts of the linear layers' weights on a
/// PyTorch-level stack (6 bytes a weight element each: read 4, write 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Casts {
    /// None (Megatron keeps compute-precision copies; bf16 weights).
    #[default]
    None,
    /// The bf16 weight gradient cast to fp32 only (FSDP2's fp32
    /// `reduce_dtype`, before its reduce-scatter).
    Gradients,
    /// `torch.autocast` over fp32 weights: each weight cast to bf16 per
    /// call, and its bf16 gradient cast back.
    WeightsAndGradients,
}

impl Shape {
    /// Tokens of one micro-batch on one rank (T = b x s / c).
    pub fn tokens(&self) -> u64 {
        self.micro_batch_size * self.local_seq_length()
    }

    /// Tokens of each sequence one rank holds (s / c).
    pub fn local_seq_length(&self) -> u64 {
        self.seq_length / self.cp.max(1)
    }

    /// FP8 GEMMs (Transformer Engine's linear layers).
    pub fn fp8(&self) -> bool {
        self.gemm_weight_bytes == 1
    }

    /// Bytes of one element of the residual stream: the weights' dtype
    /// (4 with fp32 weights under `torch.autocast`, whose embedding output
    /// and norms stay fp32), else the activations'.
    pub fn residual_bytes(&self) -> u64 {
        if self.casts == Casts::WeightsAndGradients {
            4
        } else {
            self.activation_bytes
        }
    }

    /// The eager stack's tensor sizes for [`EagerBytes`]: `q` and `k`
    /// elements of the query and key/value projections' outputs.
    fn eager_bytes(&self, hidden: u64, q: u64, k: u64) -> EagerBytes {
        EagerBytes {
            r: (self.norm_tokens() * hidden) as f64,
            q: (self.tokens() * q) as f64,
            k: (self.tokens() * k) as f64,
            rb: self.residual_bytes() as f64,
            ab: self.activation_bytes as f64,
        }
    }

    /// Tokens the norms and residuals of one rank see (T/t with sequence
    /// parallelism, else T).
    pub fn norm_tokens(&self) -> u64 {
        if self.sequence_parallel {
            self.tokens().div_ceil(self.tp.max(1))
        } else {
            self.tokens()
        }
    }
}

/// A linear layer of a transformer layer on `m` tokens, `k` in, `n` out:
/// its GEMM and, in FP8, the quantization of its input (forward) and of
/// its output gradient (backward) that Transformer Engine runs on Hopper
/// (FP8 GEMMs take TN layouts only: each tensor is cast to FP8 and
/// transposed, reading 2 bytes and writing 1 + 1 per element; counted as
/// its own kernel, not fused into the producer). The weights' FP8 copies
/// are made once per iteration and not counted.
fn linear(ops: &mut Vec<Op>, name: &'static str, m: u64, k: u64, n: u64, s: &Shape) {
    ops.push(gemm(name, m, k, n, s.fp8(), s));
    if s.fp8() {
        let (m, k, n) = (m as f64, k as f64, n as f64);
        ops.push(memory("fp8_cast_transpose", 2.0 * m * k, 2.0 * m * n, 1, s));
    }
    if s.casts != Casts::None {
        ops.push(autocast_cast((k * n) as f64, s));
    }
}

/// The op of [`Shape::casts`]: `torch.autocast` casts an fp32
/// weight to the compute precision before its GEMM on every call (its cast
/// cache lives for one autocast region, one micro-batch's forward), and
/// autograd casts the weight gradient back to fp32 (read the one, write
/// the other: 4 + 2 bytes per element each way). Eager PyTorch launches
/// each cast as a kernel (counted in [`super::eager::EAGER_KERNELS`]' GEMM
/// rows); `torch.compile`'s generated code still runs them as element-wise
/// kernels beside the library GEMMs. No kernel of its own here, so kernel
/// counts are unchanged. The gradient's accumulation into an existing
/// `.grad` (every micro-batch after the first) is not charged.
pub const AUTOCAST_CAST: &str = "autocast_cast";

fn autocast_cast(weight_elems: f64, s: &Shape) -> Op {
    let bytes = weight_elems * (4 + s.activation_bytes) as f64;
    Op {
        name: AUTOCAST_CAST,
        class: OpClass::Memory,
        attention_core: false,
        fp8: false,
        python_loop: false,
        forward: OpWork {
            bytes: if s.casts == Casts::WeightsAndGradients {
                bytes
            } else {
                0.0
            },
            ..Default::default()
        },
        input_grad: OpWork::default(),
        weight_grad: OpWork {
            bytes,
            ..Default::default()
        },
    }
}

/// Rewrite a layer's `ops` to the eager stack's kernels and memory passes
/// ([`super::eager::EAGER_KERNELS`], [`EagerBytes`]; shared experts take
/// the dense MLP's entries). The norms and residual adds move what their
/// unfused kernels move; the input casts of the linear layers and RoPE's
/// kernels are ops of their own ([`INPUT_CASTS`], [`ROPE`]: memory passes
/// whose kernels the table counts in their neighbours' rows). The routed
/// experts run as a Python loop over the `local_experts`
/// ([`Op::python_loop`]): each expert's GEMMs as in the grouped op (one
/// kernel per expert and phase), plus one gradient accumulation per expert
/// weight, and the activation per expert with the dense MLP's eager
/// kernels. Other ops not in the table (MLA's) keep theirs.
fn unfuse(ops: &mut Vec<Op>, local_experts: u32, bytes: &EagerBytes, gated_mlp: bool) {
    use super::eager::EAGER_KERNELS;
    let g = local_experts.max(1);
    let mut extra = Vec::new();
    for (i, op) in ops.iter_mut().enumerate() {
        let table_name = match op.name {
            "experts_up" | "experts_down" => {
                op.python_loop = true;
                op.weight_grad.kernels = op.weight_grad.kernels.saturating_add(g);
                continue;
            }
            "shared_up" => "mlp_up",
            "shared_act" | "experts_act" => "mlp_act",
            "shared_down" => "mlp_down",
            name => name,
        };
        let Some((_, [f, ig, wg], factor)) =
            EAGER_KERNELS.iter().find(|(n, _, _)| *n == table_name)
        else {
            continue;
        };
        let per = if op.name == "experts_act" {
            op.python_loop = true;
            g
        } else {
            1
        };
        op.forward.kernels = f.saturating_mul(per);
        op.input_grad.kernels = ig.saturating_mul(per);
        op.weight_grad.kernels = wg.saturating_mul(per);
        let set = |op: &mut Op, [fwd, bwd]: [f64; 2]| {
            op.forward.bytes = fwd;
            op.input_grad.bytes = bwd;
        };
        match table_name {
            "attn_norm" | "mlp_norm" => set(op, bytes.rms_norm()),
            "attn_residual" | "mlp_residual" => set(op, bytes.residual()),
            "qkv_proj" if op.class == OpClass::Gemm => {
                extra.push((i, passes(INPUT_CASTS, bytes.input_casts(3.0))));
            }
            "mlp_up" if op.class == OpClass::Gemm => {
                let linears = if gated_mlp { 2.0 } else { 1.0 };
                extra.push((i, passes(INPUT_CASTS, bytes.input_casts(linears))));
            }
            "attn_core" => extra.push((i, passes(ROPE, bytes.rope()))),
            _ => {
                for w in [&mut op.forward, &mut op.input_grad] {
                    w.bytes *= factor;
                }
            }
        }
    }
    // Each after its op (later indices first, so earlier ones stay put).
    for (i, op) in extra.into_iter().rev() {
        ops.insert(i + 1, op);
    }
}

/// The eager stack's casts of a linear layer's input to the compute dtype
/// (autocast, every call) and of its input gradient back ([`unfuse`]).
pub const INPUT_CASTS: &str = "input_casts";
/// The eager stack's RoPE kernels, the KV cache copies and the attention's
/// input casts ([`unfuse`]).
pub const ROPE: &str = "rope";

/// A memory-bound op of `[forward, input gradient]` bytes whose kernels are
/// counted elsewhere.
fn passes(name: &'static str, [fwd, bwd]: [f64; 2]) -> Op {
    memory_bytes(name, fwd, bwd, 0)
}

/// One GEMM (`fp8`: at FP8 with 1-byte weights, else at the activations'
/// precision).
fn gemm(name: &'static str, m: u64, k: u64, n: u64, fp8: bool, s: &Shape) -> Op {
    let flops = 2.0 * m as f64 * k as f64 * n as f64;
    let a = s.activation_bytes as f64;
    let w = if fp8 { s.gemm_weight_bytes as f64 } else { a };
    let (m, k, n) = (m as f64, k as f64, n as f64);
    let fwd_bytes = k * n * w + m * k * a + m * n * a;
    Op {
        name,
        class: OpClass::Gemm,
        attention_core: false,
        fp8,
        python_loop: false,
        forward: OpWork {
            flops,
            bytes: fwd_bytes,
            kernels: 1,
            ..Default::default()
        },
        // dX = dY W^T: reads dY and W, writes dX.
        input_grad: OpWork {
            flops,
            bytes: fwd_bytes,
            kernels: 1,
            ..Default::default()
        },
        // dW = X^T dY: reads X and dY and accumulates into the fp32 main
        // gradient (Megatron's gradient-accumulation fusion: read and
        // write, 8 bytes per weight).
        weight_grad: OpWork {
            flops,
            bytes: m * k * a + m * n * a + k * n * 8.0,
            kernels: 1,
            ..Default::default()
        },
    }
}

/// An op on the residual stream of `elems` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// A fused norm: reads the stream, writes its output in the
    /// activations' dtype (the compute dtype's cast fused in); backward
    /// reads that gradient and the stream, writes the stream's gradient.
    Norm,
    /// A residual add: reads the stream and a branch's output, writes the
    /// stream; backward casts the gradient to the branch's dtype.
    Residual,
}

/// A fused kernel on the residual stream, at [`Shape::residual_bytes`] per
/// stream element and the activations' bytes per branch element (the same
/// with bf16 weights: 2 + 3 element passes for a norm, 3 + 2 for a
/// residual add; fp32 under `torch.autocast` with fp32 weights).
fn stream(name: &'static str, kind: Stream, elems: f64, s: &Shape) -> Op {
    let (rb, ab) = (s.residual_bytes() as f64, s.activation_bytes as f64);
    let [fwd, bwd] = match kind {
        Stream::Norm => [rb + ab, ab + 2.0 * rb],
        Stream::Residual => [2.0 * rb + ab, rb + ab],
    };
    memory_bytes(name, fwd * elems, bwd * elems, 1)
}

/// A bandwidth-bound op: forward reads `fwd_in` and writes `fwd_out`
/// elements; its input gradient moves `bwd` elements.
fn memory(name: &'static str, fwd_elems: f64, bwd_elems: f64, kernels: u32, s: &Shape) -> Op {
    let a = s.activation_bytes as f64;
    memory_bytes(name, fwd_elems * a, bwd_elems * a, kernels)
}

/// A bandwidth-bound op moving `fwd_bytes` forward and `bwd_bytes` for its
/// input gradient, `kernels` kernels each.
fn memory_bytes(name: &'static str, fwd_bytes: f64, bwd_bytes: f64, kernels: u32) -> Op {
    Op {
        name,
        class: OpClass::Memory,
        attention_core: false,
        fp8: false,
        python_loop: false,
        forward: OpWork {
            bytes: fwd_bytes,
            kernels,
            ..Default::default()
        },
        input_grad: OpWork {
            bytes: bwd_bytes,
            kernels,
            ..Default::default()
        },
        weight_grad: OpWork::default(),
    }
}

impl ModelSpec {
    /// Query/key and value sizes per head the attention core multiplies
    /// (MLA: non-rotary + rotary for query/key, `v_head_dim` for values).
    fn core_head_dims(&self) -> (u64, u64) {
        match &self.mla {
            Some(m) => (m.qk_head_dim(), m.v_head_dim),
            None => (self.head_dim, self.head_dim),
        }
    }

    /// Attention block ops: input norm, QKV projection(s), attention core,
    /// output projection, residual add.
    pub fn attention_ops(&self, s: &Shape) -> Vec<Op> {
        let t = s.tp.max(1);
        let tok = s.tokens();
        let nt = s.norm_tokens() as f64;
        let h = self.hidden_size;
        let heads = u64::from(self.num_attention_heads);
        let (dqk, dv) = self.core_head_dims();
        let mut ops = vec![stream("attn_norm", Stream::Norm, nt * h as f64, s)];
        match &self.mla {
            Some(m) => {
                if m.q_lora_rank > 0 {
                    linear(&mut ops, "q_down", tok, h, m.q_lora_rank, s);
                    linear(&mut ops, "q_up", tok, m.q_lora_rank, heads * dqk / t, s);
                } else {
                    linear(&mut ops, "q_proj", tok, h, heads * dqk / t, s);
                }
                linear(
                    &mut ops,
                    "kv_down",
                    tok,
                    h,
                    m.kv_lora_rank + m.qk_rope_head_dim,
                    s,
                );
                linear(
                    &mut ops,
                    "kv_up",
                    tok,
                    m.kv_lora_rank,
                    heads * (m.qk_nope_head_dim + m.v_head_dim) / t,
                    s,
                );
            }
            None => linear(
                &mut ops,
                "qkv_proj",
                tok,
                h,
                (self.q_width() + 2 * self.kv_width()) / t,
                s,
            ),
        }
        ops.extend(self.attention_core_ops(s));
        linear(&mut ops, "attn_out_proj", tok, heads * dv / t, h, s);
        ops.push(stream("attn_residual", Stream::Residual, nt * h as f64, s));
        if s.unfused {
            let bytes = s.eager_bytes(h, self.q_width() / t, self.kv_width() / t);
            unfuse(&mut ops, 1, &bytes, self.gated_mlp);
        }
        ops
    }

    /// The attention core of one layer: one fused (flash) op, or the four
    /// ops of the unfused core (see the module's conventions).
    fn attention_core_ops(&self, s: &Shape) -> Vec<Op> {
        let t = s.tp.max(1);
        let tok = s.tokens();
        let heads = u64::from(self.num_attention_heads);
        let (dqk, dv) = self.core_head_dims();
        let b = s.micro_batch_size as f64;
        let sq = s.seq_length as f64;
        let local_heads = (heads / t) as f64;
        let a = s.activation_bytes as f64;
        if !s.flash_attention {
            // Score matrix elements; K and V are read per query head (GQA
            // groups expanded), as the batched GEMMs see them.
            let e = b * local_heads * sq * sq;
            let q = tok as f64 * local_heads * dqk as f64;
            let v = tok as f64 * local_heads * dv as f64;
            let batched = |name, flops: f64, fwd_bytes: f64, bwd_bytes: f64| Op {
                name,
                class: OpClass::Gemm,
                attention_core: true,
                fp8: false,
                python_loop: false,
                forward: OpWork {
                    flops,
                    bytes: fwd_bytes,
                    kernels: 1,
                    ..Default::default()
                },
                input_grad: OpWork {
                    flops: 2.0 * flops,
                    bytes: bwd_bytes,
                    kernels: 2,
                    ..Default::default()
                },
                weight_grad: OpWork::default(),
            };
            let elementwise = |name, fwd_elems: f64, bwd_elems: f64| Op {
                attention_core: true,
                ..memory(name, fwd_elems, bwd_elems, 1, s)
            };
            // One byte of dropout mask per score: half a 2-byte element.
            let mask = e / a;
            return vec![
                // S = Q K^T; backward dQ = dS K, dK = dS^T Q.
                batched(
                    "attn_scores",
                    2.0 * e * dqk as f64,
                    (2.0 * q + e) * a,
                    (2.0 * e + 4.0 * q) * a,
                ),
                elementwise("attn_softmax", 2.0 * e, 3.0 * e),
                elementwise("attn_dropout", 2.0 * e + mask, 2.0 * e + mask),
                // O = P V; backward dP = dO V^T, dV = P^T dO.
                batched(
                    "attn_context",
                    2.0 * e * dv as f64,
                    (e + 2.0 * v) * a,
                    (2.0 * e + 4.0 * v) * a,
                ),
            ];
        }
        // The fused core computes the causal half; with context
        // parallelism each rank its s/c queries against all s keys, the
        // load-balanced chunks giving every rank 1/c of the causal work.
        let c = s.cp.max(1) as f64;
        let fwd = 2.0 * b * sq * sq * local_heads * (dqk + dv) as f64 * 0.5 / c;
        let kv_heads = (u64::from(self.num_kv_heads) / t).max(1) as f64;
        // Q and the output for the local tokens; K and V of every token
        // (the local chunk and those received from the other CP ranks).
        let io = (tok as f64 * local_heads + b * sq * kv_heads) * (dqk + dv) as f64 * a;
        vec![Op {
            name: "attn_core",
            class: OpClass::Attention,
            attention_core: true,
            fp8: false,
            python_loop: false,
            forward: OpWork {
                flops: fwd,
                bytes: io,
                kernels: 1,
                ..Default::default()
            },
            input_grad: OpWork {
                flops: 2.5 * fwd,
                bytes: 2.0 * io,
                kernels: 3,
                ..Default::default()
            },
            weight_grad: OpWork::default(),
        }]
    }

    /// Dense MLP ops of intermediate size `ffn` split `split` ways over
    /// `tokens` tokens: up (and gate) projection, activation, down
    /// projection.
    fn mlp_gemms(
        &self,
        name: [&'static str; 3],
        tokens: u64,
        ffn: u64,
        split: u64,
        s: &Shape,
    ) -> Vec<Op> {
        let h = self.hidden_size;
        let f = ffn / split.max(1);
        let up_width = if self.gated_mlp { 2 * f } else { f };
        let tf = (tokens * f) as f64;
        let act = if self.gated_mlp {
            memory(name[1], 3.0 * tf, 5.0 * tf, 1, s)
        } else {
            memory(name[1], 2.0 * tf, 3.0 * tf, 1, s)
        };
        let mut ops = Vec::new();
        linear(&mut ops, name[0], tokens, h, up_width, s);
        ops.push(act);
        linear(&mut ops, name[2], tokens, f, h, s);
        ops
    }

    /// MLP block ops of layer `layer` (0-based): norm, then the dense MLP or
    /// the MoE (router, permutation, routed and shared experts), residual.
    pub fn mlp_ops(&self, layer: u32, s: &Shape) -> Vec<Op> {
        let tok = s.tokens();
        let nt = s.norm_tokens() as f64;
        let h = self.hidden_size as f64;
        let mut ops = vec![stream("mlp_norm", Stream::Norm, nt * h, s)];
        match (&self.moe, self.is_moe_layer(layer)) {
            (Some(m), true) => {
                let t = s.tp.max(1);
                let k = MoeKernels::of(s.moe.dispatcher, s.moe.fused, s.local_experts);
                // Router: replicated over TP on the rank's tokens.
                let routed = tok.div_ceil(t);
                ops.push(gemm(
                    "router",
                    routed,
                    self.hidden_size,
                    u64::from(m.num_experts),
                    false,
                    s,
                ));
                // Score function, top-k, routing map and aux loss: small
                // fp32 tensors of tokens x experts, many kernels.
                let scores = routed as f64 * f64::from(m.num_experts) * 2.0;
                let mut routing = memory("moe_routing", 3.0 * scores, 3.0 * scores, 0, s);
                routing.forward.kernels = k.routing[0];
                routing.input_grad.kernels = k.routing[1];
                ops.push(routing);
                // The busiest expert rank's share of the pairs (balanced:
                // the mean).
                let pairs = tok * u64::from(m.top_k);
                let busiest = (pairs as f64 * s.moe.imbalance()).round() as u64;
                let mut permute = memory(
                    "moe_permute",
                    2.0 * busiest as f64 * h / t as f64,
                    2.0 * busiest as f64 * h / t as f64,
                    0,
                    s,
                );
                permute.forward.kernels = k.dispatch[0];
                permute.input_grad.kernels = k.dispatch[1];
                ops.push(permute);
                // The routed experts see the pairs of the rank's e / t share
                // of the TP group's tokens at 1/e of their width (e = t: all
                // of them, as Megatron gathers them over TP first).
                let e = s.expert_tp.clamp(1, t);
                let mut experts = self.mlp_gemms(
                    ["experts_up", "experts_act", "experts_down"],
                    busiest * e / t,
                    m.expert_ffn_hidden_size,
                    e,
                    s,
                );
                // A grouped GEMM of one GEMM per local expert, each over
                // that expert's share of the pairs (Transformer Engine's
                // grouped linear launches one GEMM per expert, and under
                // FP8 quantises each expert's input on its own).
                let groups = u32::try_from(s.local_experts.max(1)).unwrap_or(u32::MAX);
                for o in experts.iter_mut().filter(|o| o.name == AUTOCAST_CAST) {
                    // Every local expert's weights are cast.
                    for w in [&mut o.forward, &mut o.weight_grad] {
                        w.bytes *= f64::from(groups);
                    }
                }
                for o in experts
                    .iter_mut()
                    .filter(|o| o.class == OpClass::Gemm || o.name == "fp8_cast_transpose")
                {
                    for w in [&mut o.forward, &mut o.input_grad, &mut o.weight_grad] {
                        w.groups = groups;
                        w.kernels = w.kernels.saturating_mul(groups);
                    }
                }
                ops.extend(experts);
                if m.num_shared_experts > 0 {
                    ops.extend(self.mlp_gemms(
                        ["shared_up", "shared_act", "shared_down"],
                        tok,
                        m.expert_ffn_hidden_size * u64::from(m.num_shared_experts),
                        t,
                        s,
                    ));
                }
                let mut unpermute = memory(
                    "moe_unpermute",
                    2.0 * busiest as f64 * h / t as f64,
                    2.0 * busiest as f64 * h / t as f64,
                    0,
                    s,
                );
                unpermute.forward.kernels = k.combine[0];
                unpermute.input_grad.kernels = k.combine[1];
                ops.push(unpermute);
            }
            _ => ops.extend(self.mlp_gemms(
                ["mlp_up", "mlp_act", "mlp_down"],
                tok,
                self.ffn_hidden_size,
                s.tp,
                s,
            )),
        }
        ops.push(stream("mlp_residual", Stream::Residual, nt * h, s));
        if s.unfused {
            let bytes = s.eager_bytes(self.hidden_size, 0, 0);
            unfuse(
                &mut ops,
                u32::try_from(s.local_experts).unwrap_or(u32::MAX),
                &bytes,
                self.gated_mlp,
            );
        }
        ops
    }

    /// Input embedding lookup (first stage).
    pub fn embedding_ops(&self, s: &Shape) -> Vec<Op> {
        let nt = s.norm_tokens() as f64;
        let h = self.hidden_size as f64;
        vec![memory("embedding", 2.0 * nt * h, 3.0 * nt * h, 1, s)]
    }

    /// Final norm, output layer (logits) and cross-entropy (last stage).
    /// The output layer is Megatron's own column-parallel linear layer, not
    /// a Transformer Engine one: it stays in bf16 under FP8.
    pub fn output_ops(&self, s: &Shape) -> Vec<Op> {
        let t = s.tp.max(1);
        let tok = s.tokens();
        let nt = s.norm_tokens() as f64;
        let h = self.hidden_size as f64;
        let v = self.vocab_size.div_ceil(t);
        // Logits read in bf16, the loss in fp32: about 5 element passes.
        let logits = (tok * v) as f64;
        let mut ops = vec![
            stream("final_norm", Stream::Norm, nt * h, s),
            gemm("output_layer", tok, self.hidden_size, v, false, s),
        ];
        if s.casts != Casts::None {
            ops.push(autocast_cast((self.hidden_size * v) as f64, s));
        }
        let mut loss = memory("cross_entropy", 5.0 * logits, 4.0 * logits, 4, s);
        if s.unfused {
            // HF's loss upcasts the logits; the final norm as every norm.
            let [fwd, bwd] = EagerBytes::cross_entropy(logits, s.activation_bytes as f64);
            loss.forward.bytes = fwd;
            loss.input_grad.bytes = bwd;
            let [fwd, bwd] = s.eager_bytes(self.hidden_size, 0, 0).rms_norm();
            ops[0].forward.bytes = fwd;
            ops[0].input_grad.bytes = bwd;
        }
        ops.push(loss);
        ops
    }

    /// Forward FLOPs of one sequence of `seq` tokens through the whole model
    /// as MFU counts them (GEMMs, the attention core in full, the output
    /// layer; MoE layers through their top-k routed and shared experts).
    pub fn model_forward_flops_per_sequence(&self, seq: u64) -> f64 {
        let s = seq as f64;
        let h = self.hidden_size as f64;
        let heads = f64::from(self.num_attention_heads);
        let (dqk, dv) = self.core_head_dims();
        let proj = match &self.mla {
            Some(m) => {
                m.projection_params(self.hidden_size, u64::from(self.num_attention_heads)) as f64
            }
            None => (h * (self.q_width() + 2 * self.kv_width()) as f64) + self.q_width() as f64 * h,
        };
        let attention = 2.0 * s * proj + 2.0 * s * s * heads * (dqk + dv) as f64;
        let mats = if self.gated_mlp { 3.0 } else { 2.0 };
        let dense_mlp = 2.0 * s * mats * h * self.ffn_hidden_size as f64;
        let moe_mlp = self.moe.as_ref().map_or(0.0, |m| {
            let e = m.expert_ffn_hidden_size as f64;
            2.0 * s * h * f64::from(m.num_experts)
                + 2.0 * s * mats * h * e * f64::from(m.top_k + m.num_shared_experts)
        });
        let moe_layers = f64::from(self.moe_layers());
        let dense_layers = f64::from(self.num_layers) - moe_layers;
        let output = 2.0 * s * h * self.vocab_size as f64;
        f64::from(self.num_layers) * attention
            + dense_layers * dense_mlp
            + moe_layers * moe_mlp
            + output
    }

    /// Model FLOPs of one training step over `sequences` sequences of
    /// `seq` tokens: 3 x forward (backward = 2 x forward), no recompute.
    pub fn model_flops_per_step(&self, sequences: u64, seq: u64) -> f64 {
        3.0 * sequences as f64 * self.model_forward_flops_per_sequence(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelSpec;

    /// GPT-3 175B with the vocabulary Megatron pads it to (51200).
    fn gpt3() -> ModelSpec {
        let mut m = crate::model::presets::preset("gpt3-175b").unwrap();
        m.vocab_size = 51200;
        m
    }

    #[test]
    fn model_flops_match_megatrons_formula() {
        // Narayanan et al. 2021, eq. 3: 72 B s l h^2 (1 + s/(6h) + V/(12 h l)).
        let m = gpt3();
        let (b, s, l, h, v) = (1536.0, 2048.0, 96.0, 12288.0, 51200.0);
        let megatron = 72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * h * l));
        let ours = m.model_flops_per_step(1536, 2048);
        assert!((ours / megatron - 1.0).abs() < 1e-9, "{ours} vs {megatron}");
    }

    /// Eager PyTorch runs the routed experts as a Python loop: per local
    /// expert its GEMMs (one kernel each, one gradient accumulation per
    /// weight) and the activation's eager kernels; the fused stacks keep
    /// one activation for all experts and the grouped GEMM's C++ loop.
    #[test]
    fn eager_experts_are_a_python_loop_over_the_local_experts() {
        let m = crate::model::presets::preset("qwen3-30b-a3b").unwrap();
        let shape = |unfused| Shape {
            seq_length: 4096,
            local_experts: 16,
            unfused,
            ..Shape::for_tests()
        };
        let kernels = |unfused: bool, name: &str| {
            let ops = m.mlp_ops(0, &shape(unfused));
            let o = ops.iter().find(|o| o.name == name).unwrap().clone();
            (
                [
                    o.forward.kernels,
                    o.input_grad.kernels,
                    o.weight_grad.kernels,
                ],
                o.python_loop,
            )
        };
        assert_eq!(kernels(false, "experts_up"), ([16, 16, 16], false));
        assert_eq!(kernels(true, "experts_up"), ([16, 16, 32], true));
        assert_eq!(kernels(false, "experts_act"), ([1, 1, 0], false));
        assert_eq!(kernels(true, "experts_act"), ([32, 48, 0], true));
        assert_eq!(kernels(true, "experts_down"), ([16, 16, 32], true));
    }

    /// Autocast's casts move 6 bytes per weight element of every linear
    /// layer forward (fp32 read, bf16 written) and again for the weight
    /// gradient, launch nothing of their own, and scale with the local
    /// experts of an MoE layer; without the flag there is no such op.
    #[test]
    fn autocast_casts_move_each_linear_weight_once_each_way() {
        let m = crate::model::presets::preset("llama3-8b").unwrap();
        let cast = |ops: &[Op]| -> (f64, f64, f64, u32) {
            ops.iter()
                .filter(|o| o.name == AUTOCAST_CAST)
                .fold((0.0, 0.0, 0.0, 0), |a, o| {
                    (
                        a.0 + o.forward.bytes,
                        a.1 + o.input_grad.bytes,
                        a.2 + o.weight_grad.bytes,
                        a.3 + o.forward.kernels + o.weight_grad.kernels,
                    )
                })
        };
        let on = Shape {
            casts: Casts::WeightsAndGradients,
            ..Shape::for_tests()
        };
        let layer = |s: &Shape| [m.attention_ops(s), m.mlp_ops(0, s)].concat();
        let weights = (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336) as f64;
        assert_eq!(cast(&layer(&on)), (6.0 * weights, 0.0, 6.0 * weights, 0));
        assert_eq!(cast(&m.output_ops(&on)).0, 6.0 * (4096.0 * 128256.0));
        assert_eq!(cast(&layer(&Shape::for_tests())), (0.0, 0.0, 0.0, 0));
        // FSDP2's fp32 reduce: the gradient's cast alone.
        let grads_only = Shape {
            casts: Casts::Gradients,
            ..Shape::for_tests()
        };
        assert_eq!(cast(&layer(&grads_only)), (0.0, 0.0, 6.0 * weights, 0));
        // Eager keeps its measured kernel counts: the casts are in them.
        let eager = |casts| Shape {
            unfused: true,
            casts,
            ..Shape::for_tests()
        };
        let kernels = |s: &Shape| -> u32 {
            layer(s)
                .iter()
                .map(|o| o.forward.kernels + o.input_grad.kernels + o.weight_grad.kernels)
                .sum()
        };
        assert_eq!(
            kernels(&eager(Casts::WeightsAndGradients)),
            kernels(&eager(Casts::None))
        );
        // MoE: every local expert's weights.
        let q = crate::model::presets::preset("qwen3-30b-a3b").unwrap();
        let experts = |local_experts| {
            let s = Shape {
                local_experts,
                casts: Casts::WeightsAndGradients,
                ..Shape::for_tests()
            };
            cast(&q.mlp_ops(0, &s)).0
        };
        assert_eq!(experts(16), 16.0 * experts(1));
    }

    #[test]
    fn layer_gemm_flops_split_by_tp_and_phases_match() {
        let m = gpt3();
        let shape = |tp| Shape {
            tp,
            expert_tp: tp,
            sequence_parallel: true,
            ..Shape::for_tests()
        };
        let gemm_flops = |ops: &[Op]| -> f64 {
            ops.iter()
                .filter(|o| o.class == OpClass::Gemm)
                .map(|o| o.forward.flops)
                .sum()
        };
        let one = gemm_flops(&m.attention_ops(&shape(1))) + gemm_flops(&m.mlp_ops(0, &shape(1)));
        let eight = gemm_flops(&m.attention_ops(&shape(8))) + gemm_flops(&m.mlp_ops(0, &shape(8)));
        // 24 T h^2 per layer forward (QKV 6, proj 2, MLP 16).
        assert_eq!(one, 24.0 * 2048.0 * 12288.0 * 12288.0);
        assert_eq!(one / eight, 8.0);
        for o in m.attention_ops(&shape(8)) {
            if o.class == OpClass::Gemm {
                assert_eq!(o.forward.flops, o.input_grad.flops);
                assert_eq!(o.forward.flops, o.weight_grad.flops);
            }
        }
        // Sequence parallelism shards the norms' bytes.
        let sp = &m.attention_ops(&shape(8))[0];
        let mut no_sp = shape(8);
        no_sp.sequence_parallel = false;
        assert_eq!(
            m.attention_ops(&no_sp)[0].forward.bytes,
            8.0 * sp.forward.bytes
        );
    }

    #[test]
    fn unfused_attention_core_is_four_ops_over_the_full_score_matrix() {
        let m = gpt3();
        let shape = |flash| Shape {
            micro_batch_size: 2,
            tp: 8,
            expert_tp: 8,
            flash_attention: flash,
            ..Shape::for_tests()
        };
        let core = |flash| -> Vec<Op> {
            m.attention_ops(&shape(flash))
                .into_iter()
                .filter(|o| o.attention_core)
                .collect()
        };
        let fused = core(true);
        assert_eq!(fused.len(), 1);
        let unfused = core(false);
        let names: Vec<_> = unfused.iter().map(|o| o.name).collect();
        assert_eq!(
            names,
            [
                "attn_scores",
                "attn_softmax",
                "attn_dropout",
                "attn_context"
            ]
        );
        // The full score matrix: twice the causal half the fused kernel
        // computes; backward two GEMMs per forward one.
        let flops = |ops: &[Op], f: fn(&Op) -> f64| ops.iter().map(f).sum::<f64>();
        assert_eq!(
            flops(&unfused, |o| o.forward.flops),
            2.0 * fused[0].forward.flops
        );
        assert_eq!(
            flops(&unfused, |o| o.input_grad.flops),
            2.0 * flops(&unfused, |o| o.forward.flops)
        );
        // E = b x heads/t x s^2 scores of 2 bytes: softmax reads and writes
        // E, dropout also writes a one-byte mask.
        let e = 2.0 * (96.0 / 8.0) * 2048.0 * 2048.0;
        assert_eq!(unfused[1].forward.bytes, 2.0 * e * 2.0);
        assert_eq!(unfused[1].input_grad.bytes, 3.0 * e * 2.0);
        assert_eq!(unfused[2].forward.bytes, 2.0 * e * 2.0 + e);
        assert!(unfused.iter().all(|o| o.weight_grad == OpWork::default()));
        // The other ops of the block are the same either way.
        let rest = |flash| -> Vec<Op> {
            m.attention_ops(&shape(flash))
                .into_iter()
                .filter(|o| !o.attention_core)
                .collect()
        };
        assert_eq!(rest(true), rest(false));
    }

    #[test]
    fn fp8_runs_the_layers_linear_gemms_with_their_casts_and_keeps_the_output_layer_bf16() {
        let m = crate::model::presets::preset("llama3-8b").unwrap();
        let shape = |weight_bytes| Shape {
            seq_length: 4096,
            tp: 2,
            expert_tp: 2,
            sequence_parallel: true,
            gemm_weight_bytes: weight_bytes,
            ..Shape::for_tests()
        };
        let (bf16, fp8) = (shape(2), shape(1));
        assert!(fp8.fp8() && !bf16.fp8());
        let ops = m.mlp_ops(0, &fp8);
        let names: Vec<_> = ops.iter().map(|o| o.name).collect();
        assert_eq!(
            names,
            [
                "mlp_norm",
                "mlp_up",
                "fp8_cast_transpose",
                "mlp_act",
                "mlp_down",
                "fp8_cast_transpose",
                "mlp_residual"
            ]
        );
        // The down projection's cast: its input (T x f/t) forward, its output
        // gradient (T x h) backward, 4 bytes per element each.
        let (t, h, f) = (4096.0, 4096.0, 14336.0 / 2.0);
        assert_eq!(ops[5].forward.bytes, 4.0 * t * f);
        assert_eq!(ops[5].input_grad.bytes, 4.0 * t * h);
        assert!(ops[4].fp8 && ops[1].fp8);
        // Without FP8 no casts and no FP8 GEMM.
        let plain = m.mlp_ops(0, &bf16);
        assert_eq!(plain.len(), 5);
        assert!(plain.iter().all(|o| !o.fp8));
        // The output layer and the attention core stay in bf16.
        assert!(m.output_ops(&fp8).iter().all(|o| !o.fp8));
        assert!(m
            .attention_ops(&fp8)
            .iter()
            .filter(|o| o.attention_core)
            .all(|o| !o.fp8));
        assert_eq!(
            m.output_ops(&fp8)[1].forward.bytes,
            m.output_ops(&bf16)[1].forward.bytes
        );
    }
}
