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
//! counts are split over trainscope's ops as written in [`EAGER_KERNELS`];
//! a fused op's bytes are scaled by the full-tensor passes its unfused
//! kernels make (RMSNorm 7 against 2, RoPE's q and k about 3x, SwiGLU 5
//! against 3), an estimate from the kernel list, not a measurement.
//!
//! MoE layers: eager code loops over the local experts in Python
//! (Megatron's SequentialMLP, HF transformers), so each expert launches
//! its own GEMMs, one gradient accumulation per weight, and the
//! activation's kernels (`mlp_act`'s entry per expert); shared experts take
//! the dense MLP's entries. Checked on an H200 (`tests/tests/
//! measured_stack.rs`): 208 kernels predicted for Qwen3-30B-A3B's layer on
//! one EP 8 rank, 227 profiled.

/// Per op name: kernels (forward, input gradient, weight gradient) of the
/// eager layer, and the factor on the op's bytes.
pub const EAGER_KERNELS: [(&str, [u32; 3], f64); 10] = [
    ("attn_norm", [6, 12, 1], 3.5),
    // q, k and v as three GEMMs, their weight and input casts.
    ("qkv_proj", [8, 12, 10], 1.0),
    // SDPA and its casts, RoPE before it (and its backward).
    ("attn_core", [16, 22, 0], 1.0),
    ("attn_out_proj", [3, 5, 4], 1.0),
    ("attn_residual", [1, 0, 0], 1.0),
    ("mlp_norm", [6, 12, 1], 3.5),
    // gate and up as two GEMMs.
    ("mlp_up", [5, 8, 7], 1.0),
    ("mlp_act", [2, 3, 0], 5.0 / 3.0),
    ("mlp_down", [3, 4, 4], 1.0),
    ("mlp_residual", [1, 0, 0], 1.0),
];

/// Extra bytes RoPE's unfused kernels move, as a share of the attention
/// core's forward bytes (q and k read and written about five times, where
/// the fused kernel does it inside the attention).
pub const ROPE_BYTES_SHARE: f64 = 0.5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_adds_up_to_the_measured_layer() {
        let sum = |i: usize| EAGER_KERNELS.iter().map(|(_, k, _)| k[i]).sum::<u32>();
        assert_eq!(sum(0), 51, "forward kernels per layer");
        assert_eq!(sum(1) + sum(2), 105, "backward kernels per layer");
    }
}
