//! torchtitan's per-op selective activation checkpointing
//! (`--recompute op`; torchtitan's `selective` mode with the `op` option,
//! `torchtitan/distributed/activation_checkpoint.py`), derived from its
//! policy and nothing fitted. Each transformer layer is a checkpoint region
//! whose forward is replayed in the backward; the policy saves the outputs
//! of the compute-intensive ops (every *odd* matmul of the layer, counting
//! from 1 in forward order; scaled-dot-product / flash attention; `max`
//! reductions) and of the communication ops (reduce-scatter, all-to-all),
//! and recomputes everything else, every even matmul included.
//!
//! A Llama-style layer's matmuls in forward order are wq, wk, wv, wo, w1,
//! w3, w2 (GELU MLP: wq, wk, wv, wo, fc1, fc2): wq, wv, w1 and w2 are saved
//! (fc1 for GELU), wk, wo and w3 recomputed (fc2 for GELU). Memory per layer
//! and micro-batch: the layer's input (the region's input), q, v, the
//! attention output and its fp32 log-sum-exp, w1's output, w2's output (the
//! full-width partial sum under TP) and, with sequence parallelism, the two
//! reduce-scatters' outputs. Time: the recomputed matmuls' forward share
//! (wk's part of the fused QKV GEMM, the output projection, w3's half of the
//! fused gate/up GEMM or GELU's FC2) and every memory-bound op's forward.
//! Not modelled: the all-gathers of sequence parallelism are not in the
//! save list and are re-communicated in the recompute (their time is not
//! added); MoE and MLA layers (refused); torchtitan's float8 `max` scalars.

use super::layout::shape;
use super::ModelJob;
use crate::model::ops::{Op, OpClass};
use crate::model::ModelSpec;

/// The share of each op's forward that the policy recomputes, for one
/// model's layer shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpPolicy {
    /// wk's share of the fused QKV GEMM: kv / (q + 2 kv).
    pub qkv_share: f64,
    /// SwiGLU (gate and up fused, w3 recomputed) or GELU (FC2 recomputed).
    pub gated_mlp: bool,
}

impl OpPolicy {
    /// The policy's shares for `model`'s layers.
    pub fn of(model: &ModelSpec) -> OpPolicy {
        let (q, kv) = (model.q_width() as f64, model.kv_width() as f64);
        OpPolicy {
            qkv_share: kv / (q + 2.0 * kv).max(1.0),
            gated_mlp: model.gated_mlp,
        }
    }

    /// The share of `op`'s forward recomputed in the backward: 0 for the
    /// attention core (saved), the even matmuls' share of each GEMM, 1 for
    /// every memory-bound op.
    pub fn forward_share(&self, op: &Op) -> f64 {
        if op.attention_core {
            return 0.0;
        }
        match (op.class, op.name) {
            (OpClass::Gemm, "qkv_proj") => self.qkv_share,
            (OpClass::Gemm, "attn_out_proj") => 1.0,
            (OpClass::Gemm, "mlp_up") if self.gated_mlp => 0.5,
            (OpClass::Gemm, "mlp_down") if !self.gated_mlp => 1.0,
            (OpClass::Gemm, _) => 0.0,
            _ => 1.0,
        }
    }
}

/// Why a job cannot use the op policy's model (MoE or MLA layers), or
/// `None`.
pub fn unsupported(model: &ModelSpec) -> Option<String> {
    if model.moe.is_some() {
        Some(format!(
            "--recompute op (torchtitan's per-op checkpointing) is modelled for dense layers; {} has MoE layers",
            model.name
        ))
    } else if model.mla.is_some() {
        Some(format!(
            "--recompute op (torchtitan's per-op checkpointing) is modelled for multi-head / grouped-query attention; {} uses MLA",
            model.name
        ))
    } else {
        None
    }
}

/// Activation bytes one layer keeps for one micro-batch on one rank under
/// the op policy (see the module documentation for the list).
pub fn layer_activation_bytes(job: &ModelJob) -> u64 {
    let m = &job.model;
    let s = &job.setup;
    let sh = shape(job);
    let t = u64::from(s.tp.max(1));
    let tok = sh.tokens();
    let ab = sh.activation_bytes;
    let h = m.hidden_size;
    let sp = s.sequence_parallel && t > 1;
    let sp_div = if sp { t } else { 1 };
    let input = tok * h * ab / sp_div;
    let q = tok * m.q_width() * ab / t;
    let v = tok * m.kv_width() * ab / t;
    let attention_out = tok * m.q_width() * ab / t;
    let lse = tok * u64::from(m.num_attention_heads) * 4 / t;
    let up = tok * m.ffn_hidden_size * ab / t;
    // w2 (the 7th matmul) is saved; GELU's FC2 (the 6th) is not.
    let down = if m.gated_mlp { tok * h * ab } else { 0 };
    let reduce_scatters = if sp { 2 * tok * h * ab / t } else { 0 };
    input + q + v + attention_out + lse + up + down + reduce_scatters
}

/// The share of a layer's forward GEMM FLOPs (the attention core apart)
/// that the policy recomputes: (wk + wo + w3) / all for SwiGLU.
pub fn recomputed_gemm_flops_share(model: &ModelSpec) -> f64 {
    let (h, q, kv, f) = (
        model.hidden_size as f64,
        model.q_width() as f64,
        model.kv_width() as f64,
        model.ffn_hidden_size as f64,
    );
    let (qkv, out) = (h * (q + 2.0 * kv), q * h);
    let (up, down) = if model.gated_mlp {
        (2.0 * h * f, f * h)
    } else {
        (h * f, f * h)
    };
    let p = OpPolicy::of(model);
    let recomputed = qkv * p.qkv_share + out + if p.gated_mlp { up / 2.0 } else { down };
    recomputed / (qkv + out + up + down)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::gpu_preset;
    use crate::job::{Recompute, TrainingSetup};
    use crate::model::presets::preset;

    fn llama3_8b(tp: u32, recompute: Recompute) -> ModelJob {
        let setup = TrainingSetup {
            tp,
            dp: Some(8 / tp),
            seq_length: 8192,
            micro_batch_size: 1,
            global_batch_size: Some(8),
            sequence_parallel: tp > 1,
            flash_attention: true,
            recompute,
            ..TrainingSetup::default()
        };
        ModelJob::new(
            preset("llama3-8b").unwrap(),
            setup,
            gpu_preset("H100").unwrap(),
            None,
        )
        .unwrap()
    }

    #[test]
    fn llama3_8b_recomputes_wk_wo_w3() {
        let m = preset("llama3-8b").unwrap();
        // wk 4096 x 1024, wo 4096 x 4096, w3 4096 x 14336 of
        // wq + wk + wv + wo + w1 + w2 + w3.
        let want = (4096.0 * 1024.0 + 4096.0 * 4096.0 + 4096.0 * 14336.0)
            / (2.0 * 4096.0 * 4096.0 + 2.0 * 4096.0 * 1024.0 + 3.0 * 4096.0 * 14336.0);
        let got = recomputed_gemm_flops_share(&m);
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        assert!((got - 0.365).abs() < 0.001, "{got}");
    }

    #[test]
    fn llama3_8b_keeps_about_62_kib_per_layer_and_token() {
        let j = llama3_8b(1, Recompute::Op);
        let per_token = layer_activation_bytes(&j) / 8192;
        // x, q, attention output, w2's output: 4 x 2 x 4096; v: 2 x 1024;
        // log-sum-exp: 32 heads x 4; w1's output: 2 x 14336.
        assert_eq!(per_token, 4 * 2 * 4096 + 2 * 1024 + 32 * 4 + 2 * 14336);
        assert_eq!(per_token, 63_616);
        // What the memory model charges per layer under --recompute op.
        assert_eq!(
            crate::job::memory::layer_activation_bytes(&j, 0),
            layer_activation_bytes(&j)
        );
        // Between full recompute (the input only) and no recompute.
        let none = crate::job::memory::layer_activation_bytes(&llama3_8b(1, Recompute::None), 0);
        let full = crate::job::memory::layer_activation_bytes(&llama3_8b(1, Recompute::Full), 0);
        assert!(full < layer_activation_bytes(&j) && layer_activation_bytes(&j) < none);
        // TP 2 with sequence parallelism: the sharded parts halve, w2's
        // partial sum stays whole, the reduce-scatters' outputs are added.
        let t2 = layer_activation_bytes(&llama3_8b(2, Recompute::Op)) / 8192;
        assert_eq!(
            t2,
            (4 * 2 * 4096 + 2 * 1024 + 32 * 4 + 2 * 14336) / 2 - 4096 + 2 * 4096 + 2 * 4096
        );
    }

    #[test]
    fn op_mode_costs_time_between_selective_and_full() {
        let cfg = crate::engine::SimConfig::default();
        let t = |rc| {
            crate::job::run::run_model(&llama3_8b(1, rc), &cfg)
                .unwrap()
                .run
                .summary()
                .iteration_time_ns
        };
        let (sel, op, full) = (
            t(Recompute::Selective),
            t(Recompute::Op),
            t(Recompute::Full),
        );
        assert!(sel < op && op < full, "{sel} {op} {full}");
    }

    #[test]
    fn moe_and_mla_models_are_refused() {
        for name in ["deepseek-v3", "mixtral-8x7b"] {
            let Some(m) = preset(name) else { continue };
            assert!(unsupported(&m).is_some(), "{name}");
        }
        assert_eq!(unsupported(&preset("llama3-8b").unwrap()), None);
    }
}
