//! The kernels of a transformer layer when nothing is fused (issue 24):
//! eager PyTorch module code, HF transformers style, launches each
//! element-wise step of RMSNorm, RoPE, SwiGLU and the autocast casts as a
//! kernel of its own, where Megatron-Core with Transformer Engine runs one
//! fused kernel per block ([`crate::model::ops`]' counts). The op list
//! takes these counts, and the extra passes over memory the unfused steps
//! make, when its shape says `unfused`.
//!
//! Source: the two eager H100 steps committed as Kineto traces, one forward
//! and one backward layer period each (`tests/fixtures/measured/host/
//! llama-layer-kernels.tsv`, `docs/SOFTWARE-STACK-DATA.md` §2): 51 kernels
//! forward and 105 backward per Llama layer and micro-batch, the same in
//! both models. Forward: 7 GEMMs (q, k, v, o, gate, up, down) with 12 casts;
//! RMSNorm as pow, mean, add, rsqrt, mul, mul (twice); RoPE as mul, neg,
//! cat, mul, add for q and for k and two cats; SDPA with 3 casts; silu and
//! mul; 2 residual adds. Backward: 14 GEMMs, the flash backward's 5
//! kernels, 22 casts, RoPE's 14, the norms' 12 each, SwiGLU's 3, 11
//! gradient accumulations, 3 view copies, 9 DDP gradient scalings. The
//! counts are split over trainscope's ops as written in [`EAGER_KERNELS`].
//!
//! Bytes: each unfused kernel reads and writes whole tensors, so the eager
//! layer moves several times what the fused one does. [`EagerBytes`]
//! counts them kernel by kernel from HF transformers' Llama code
//! (`modeling_llama.py`: `LlamaRMSNorm`, `rotate_half`,
//! `apply_rotary_pos_emb`, the decoder layer's residuals; `loss_utils.py`:
//! `ForCausalLMLoss` upcasts the logits with `.float()`) and autograd's
//! backward formulas, at each tensor's dtype: with fp32 weights under
//! `torch.autocast` the residual stream, the norms and RoPE's cos/sin are
//! fp32 (the embedding's output is), the linear layers' outputs bf16, and
//! autocast casts a linear layer's input to bf16 on every call (q, k and
//! v each cast the same normed input). Nothing is fitted: the per-kernel
//! durations of the profiled layers (`llama-layer-kernels.tsv`) are the
//! check (`tests/tests/measured_h100.rs`). Not counted: the strided
//! (transposed) element-wise kernels of RoPE run 2-3x slower than their
//! bytes in those traces; DDP's per-step gradient scaling.
//!
//! MoE layers: eager code loops over the local experts in Python
//! (Megatron's SequentialMLP, HF transformers), so each expert launches
//! its own GEMMs, one gradient accumulation per weight, and the
//! activation's kernels (`mlp_act`'s entry per expert); shared experts take
//! the dense MLP's entries. Checked on an H200 (`tests/tests/
//! measured_stack.rs`): 208 kernels predicted for Qwen3-30B-A3B's layer on
//! one EP 8 rank, 227 profiled.

/// Per op name: kernels (forward, input gradient, weight gradient) of the
/// eager layer, and the factor on the op's bytes where [`EagerBytes`] has
/// no formula of its own (SwiGLU's silu and mul: 5 passes against the
/// fused kernel's 3).
pub const EAGER_KERNELS: [(&str, [u32; 3], f64); 10] = [
    ("attn_norm", [6, 12, 1], 1.0),
    // q, k and v as three GEMMs, their weight and input casts.
    ("qkv_proj", [8, 12, 10], 1.0),
    // SDPA and its casts, RoPE before it (and its backward).
    ("attn_core", [16, 22, 0], 1.0),
    ("attn_out_proj", [3, 5, 4], 1.0),
    ("attn_residual", [1, 0, 0], 1.0),
    ("mlp_norm", [6, 12, 1], 1.0),
    // gate and up as two GEMMs.
    ("mlp_up", [5, 8, 7], 1.0),
    ("mlp_act", [2, 3, 0], 5.0 / 3.0),
    ("mlp_down", [3, 4, 4], 1.0),
    ("mlp_residual", [1, 0, 0], 1.0),
];

/// The memory passes of an eager layer's element-wise kernels, bytes per
/// phase `[forward, input gradient]`, from the tensor sizes of one
/// micro-batch on one rank. Elements: `r` of the residual stream (tokens
/// the norms see x hidden), `q` and `k` of the query and key/value
/// projections' outputs. Element sizes: `rb` of the residual stream (the
/// weights' dtype: 4 for fp32 weights under autocast, else the
/// activations'), `ab` of the activations the linear layers write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EagerBytes {
    pub r: f64,
    pub q: f64,
    pub k: f64,
    pub rb: f64,
    pub ab: f64,
}

impl EagerBytes {
    /// A cast between the residual's dtype and the activations' (read one,
    /// write the other), per element; none when they are the same.
    fn cast(&self) -> f64 {
        if self.rb == self.ab {
            0.0
        } else {
            self.rb + self.ab
        }
    }

    /// `LlamaRMSNorm`: to fp32 (a cast unless the input is fp32), `pow(2)`
    /// (read, write fp32), `mean` (read), `x * rsqrt(..)` (read, write), to
    /// the input dtype, `weight * x` (read, write). Backward by autograd:
    /// the weight multiply's two gradients and the weight's sum, the cast
    /// back, `rsqrt`'s multiply and sum, `mean`'s expand, `pow`'s three
    /// kernels (a copy and two multiplies), the accumulation of the two
    /// gradients of x, and the first cast's backward.
    pub fn rms_norm(&self) -> [f64; 2] {
        let up = if self.rb == 4.0 { 0.0 } else { self.rb + 4.0 };
        let rb = self.rb;
        let fwd = up + 8.0 + 4.0 + 8.0 + up + 2.0 * rb;
        let bwd = 2.0 * rb + 3.0 * rb + rb + up + 8.0 + 12.0 + 4.0 + 4.0 + 28.0 + 12.0 + up;
        [fwd * self.r, bwd * self.r]
    }

    /// A residual add, `residual + x` with x in the activations' dtype:
    /// read both, write the residual's dtype. Backward: the gradient cast to
    /// the branch's dtype and, where the stream forks, the two gradients
    /// accumulated (read two, write one).
    pub fn residual(&self) -> [f64; 2] {
        [
            (2.0 * self.rb + self.ab) * self.r,
            (self.cast() + 3.0 * self.rb) * self.r,
        ]
    }

    /// The input casts of `linears` linear layers reading one normed input
    /// (autocast casts it on every call; none when the dtypes agree), and
    /// backward each input gradient cast back and the `linears` gradients
    /// accumulated (read two, write one, `linears - 1` times).
    pub fn input_casts(&self, linears: f64) -> [f64; 2] {
        [
            linears * self.cast() * self.r,
            (linears * self.cast() + (linears - 1.0) * 3.0 * self.rb) * self.r,
        ]
    }

    /// RoPE as `q * cos + rotate_half(q) * sin` for q and for k (cos and
    /// sin in the residual's dtype, so the products are promoted to it;
    /// `rotate_half` a negation and a concatenation), the KV cache's copies
    /// of k and v (HF's `use_cache` defaults to true; the profiled steps
    /// show the two `cat`s), and the casts of q and k to the attention's
    /// dtype. Backward: the casts' and the two products' gradients, the
    /// concatenation's two slices (a zero fill and a copy each), the
    /// negation, and two accumulations, in each tensor's dtype; v's layout
    /// copy, and k's and q's.
    pub fn rope(&self) -> [f64; 2] {
        let (ab, rb) = (self.ab, self.rb);
        let per = 5.0 * ab + 5.0 * rb;
        let fwd =
            per * (self.q + self.k) + 2.0 * (rb + ab) * self.k + self.cast() * (self.q + self.k);
        let per_bwd = 7.0 * rb + 14.0 * ab;
        let bwd = per_bwd * (self.q + self.k) + 2.0 * ab * (self.q + 2.0 * self.k);
        [fwd, bwd]
    }

    /// Cross-entropy over `logits` elements as `ForCausalLMLoss` runs it:
    /// the logits upcast to fp32 (`.float()`), log-softmax (a max pass, a
    /// sum pass and the write), NLL; backward the zero-filled gradient,
    /// log-softmax's backward (the gradient read twice, the output once,
    /// one write) and the cast back to the logits' dtype.
    pub fn cross_entropy(logits: f64, ab: f64) -> [f64; 2] {
        let cast = if ab == 4.0 { 0.0 } else { ab + 4.0 };
        [(cast + 12.0) * logits, (4.0 + 16.0 + cast) * logits]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte counts of Llama 3.2 1B's layer (micro-batch 2 of 2048
    /// tokens, fp32 weights under autocast) written out by hand from the
    /// kernel list: 28 bytes a residual element for the norm's forward (pow
    /// 8, mean 4, two multiplies 8 each), 92 backward; RoPE 30 bytes a q
    /// or k element forward.
    #[test]
    fn fp32_residual_stream_counts() {
        let r = 4096.0 * 2048.0;
        let b = EagerBytes {
            r,
            q: r,
            k: r / 4.0,
            rb: 4.0,
            ab: 2.0,
        };
        assert_eq!(b.rms_norm(), [28.0 * r, 92.0 * r]);
        assert_eq!(b.residual(), [10.0 * r, 18.0 * r]);
        assert_eq!(b.input_casts(3.0), [18.0 * r, (18.0 + 24.0) * r]);
        let [rope_fwd, _] = b.rope();
        assert_eq!(rope_fwd, 30.0 * 1.25 * r + 12.0 * r / 4.0 + 6.0 * 1.25 * r);
        // bf16 weights (FSDP2's param dtype): casts in and out of the
        // norm's fp32, none before the linear layers.
        let bf = EagerBytes { rb: 2.0, ..b };
        assert_eq!(bf.input_casts(3.0), [0.0, 12.0 * r]);
        assert_eq!(bf.rms_norm()[0], (6.0 + 8.0 + 4.0 + 8.0 + 6.0 + 4.0) * r);
        assert_eq!(EagerBytes::cross_entropy(1.0, 2.0), [18.0, 26.0]);
    }

    #[test]
    fn the_table_adds_up_to_the_measured_layer() {
        let sum = |i: usize| EAGER_KERNELS.iter().map(|(_, k, _)| k[i]).sum::<u32>();
        assert_eq!(sum(0), 51, "forward kernels per layer");
        assert_eq!(sum(1) + sum(2), 105, "backward kernels per layer");
    }
}
