//! Model architectures: what a decoder-only transformer is made of
//! ([`ModelSpec`]: sizes, attention with grouped-query heads, dense or gated
//! MLP, mixture-of-experts layers) and what that implies before any
//! parallelism: parameter counts ([`ModelSpec::parameters`]). Models come
//! from a HuggingFace `config.json` ([`hf`]) or a built-in preset
//! ([`presets`]). FLOPs and bytes per op live in [`ops`]. Pure data and
//! integer arithmetic; nothing here knows about GPUs or the simulator.

pub mod attention_kernel;
pub mod dispatcher;
pub mod eager;
pub mod ops;
pub mod presets;
pub mod stack;

use serde::{Deserialize, Serialize};

/// The architecture family a model was read as (decides the defaults of
/// keys a `config.json` leaves out, and what is approximated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// GPT-2 / GPT-3: LayerNorm, GELU MLP, biases, learned positions.
    Gpt,
    /// Llama / Mistral / Qwen2 / Qwen3: RMSNorm, SwiGLU MLP, rotary
    /// positions.
    Llama,
    /// Mixtral: Llama layers whose MLP is a top-k mixture of SwiGLU experts.
    Mixtral,
    /// Qwen3-MoE: like Mixtral, with narrow experts (`moe_intermediate_size`)
    /// and optionally leading dense layers.
    Qwen3Moe,
    /// DeepSeek-V3: MoE with shared experts and leading dense layers
    /// (its multi-head latent attention is approximated, see [`hf`]).
    DeepseekV3,
}

impl Family {
    /// The stable name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Family::Gpt => "gpt",
            Family::Llama => "llama",
            Family::Mixtral => "mixtral",
            Family::Qwen3Moe => "qwen3-moe",
            Family::DeepseekV3 => "deepseek-v3",
        }
    }
}

/// Mixture-of-experts layers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoeSpec {
    /// Routed experts per MoE layer.
    pub num_experts: u32,
    /// Routed experts each token goes to.
    pub top_k: u32,
    /// Intermediate size of one routed expert's (gated) MLP.
    pub expert_ffn_hidden_size: u64,
    /// Shared experts every token goes through (DeepSeek), each of
    /// `expert_ffn_hidden_size`.
    pub num_shared_experts: u32,
    /// The first this-many layers have a dense MLP instead
    /// (DeepSeek `first_k_dense_replace`).
    pub first_dense_layers: u32,
}

/// A decoder-only transformer. Sizes are element counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Short name (preset name, `config.json`'s `_name_or_path` or file name).
    pub name: String,
    /// Where the numbers come from (preset citation, or the file read).
    pub source: String,
    pub family: Family,
    /// Model (hidden) size h.
    pub hidden_size: u64,
    /// Transformer layers L.
    pub num_layers: u32,
    /// Query heads a.
    pub num_attention_heads: u32,
    /// Key/value heads (grouped-query attention); = `num_attention_heads`
    /// for multi-head attention.
    pub num_kv_heads: u32,
    /// Size of one attention head (usually h / a).
    pub head_dim: u64,
    /// Intermediate size of the dense MLP.
    pub ffn_hidden_size: u64,
    /// Gated MLP (SwiGLU: gate, up and down projections) instead of
    /// up + down with GELU.
    pub gated_mlp: bool,
    /// Vocabulary size V.
    pub vocab_size: u64,
    /// Longest sequence the positions cover.
    pub max_position_embeddings: u64,
    /// Learned absolute position embeddings (GPT) rather than rotary.
    pub learned_positions: bool,
    /// Output layer shares the input embedding's weights.
    pub tied_embeddings: bool,
    /// Linear layers carry biases (GPT-2: all of them). Qwen2's QKV-only
    /// biases are not counted (`false`, with a warning from [`hf`]).
    pub linear_bias: bool,
    /// LayerNorm (weight and bias) rather than RMSNorm (weight only).
    pub layernorm: bool,
    /// Mixture of experts, when the MLP is one.
    pub moe: Option<MoeSpec>,
    /// Multi-head latent attention (DeepSeek-V2/V3) instead of plain
    /// (grouped-query) attention projections.
    pub mla: Option<MlaSpec>,
}

/// Multi-head latent attention (DeepSeek-V3): queries and keys/values go
/// through low-rank projections; each head's query/key has a non-rotary
/// and a rotary part. Training runs the projections as plain GEMMs, so they
/// are counted as such.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MlaSpec {
    /// Rank of the query down-projection (0: queries projected directly).
    pub q_lora_rank: u64,
    /// Rank of the joint key/value down-projection.
    pub kv_lora_rank: u64,
    /// Per-head query/key size without rotary embedding.
    pub qk_nope_head_dim: u64,
    /// Per-head query/key size with rotary embedding (the rotary key is
    /// shared by all heads).
    pub qk_rope_head_dim: u64,
    /// Per-head value size.
    pub v_head_dim: u64,
}

impl MlaSpec {
    /// Per-head query/key size (non-rotary + rotary).
    pub fn qk_head_dim(&self) -> u64 {
        self.qk_nope_head_dim.saturating_add(self.qk_rope_head_dim)
    }

    /// Weight elements of the attention projections of one layer with `a`
    /// heads and hidden size `h` (no norms; the two low-rank norms are
    /// counted by the caller). Saturates instead of overflowing.
    pub fn projection_params(&self, h: u64, a: u64) -> u64 {
        let mul3 = |x: u64, y: u64, z: u64| x.saturating_mul(y).saturating_mul(z);
        let q = if self.q_lora_rank == 0 {
            mul3(h, a, self.qk_head_dim())
        } else {
            h.saturating_mul(self.q_lora_rank).saturating_add(mul3(
                self.q_lora_rank,
                a,
                self.qk_head_dim(),
            ))
        };
        let kv_down = h.saturating_mul(self.kv_lora_rank.saturating_add(self.qk_rope_head_dim));
        let kv_up = mul3(
            self.kv_lora_rank,
            a,
            self.qk_nope_head_dim.saturating_add(self.v_head_dim),
        );
        let out = mul3(a, self.v_head_dim, h);
        sum(&[q, kv_down, kv_up, out])
    }
}

/// Parameter counts of a model (elements, no parallelism).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ParamCounts {
    /// Input embedding (and learned positions).
    pub embedding: u64,
    /// Output layer (0 when tied to the input embedding).
    pub output: u64,
    /// Attention of one layer (QKV, output projection, its norm).
    pub attention_per_layer: u64,
    /// Dense MLP of one layer (with its norm).
    pub dense_mlp_per_layer: u64,
    /// MoE MLP of one layer: router, every routed and shared expert, norm
    /// (0 without MoE).
    pub moe_mlp_per_layer: u64,
    /// Layers with a dense MLP.
    pub dense_layers: u32,
    /// Layers with an MoE MLP.
    pub moe_layers: u32,
    /// Final norm.
    pub final_norm: u64,
    /// Everything.
    pub total: u64,
    /// Parameters one token goes through (MoE: top-k routed + shared
    /// experts instead of all of them).
    pub active: u64,
}

impl ModelSpec {
    /// Elements of one norm's parameters.
    pub fn norm_params(&self) -> u64 {
        if self.layernorm {
            self.hidden_size.saturating_mul(2)
        } else {
            self.hidden_size
        }
    }

    /// Query heads x head size (the attention's inner width).
    pub fn q_width(&self) -> u64 {
        u64::from(self.num_attention_heads).saturating_mul(self.head_dim)
    }

    /// Key (or value) heads x head size.
    pub fn kv_width(&self) -> u64 {
        u64::from(self.num_kv_heads).saturating_mul(self.head_dim)
    }

    /// Elements of one MLP of intermediate size `ffn` (weights and biases).
    /// Saturates instead of overflowing.
    pub fn mlp_params(&self, ffn: u64) -> u64 {
        let h = self.hidden_size;
        let mats: u64 = if self.gated_mlp { 3 } else { 2 };
        let bias = if self.linear_bias {
            ffn.saturating_mul(mats - 1).saturating_add(h)
        } else {
            0
        };
        mats.saturating_mul(h)
            .saturating_mul(ffn)
            .saturating_add(bias)
    }

    /// Layers whose MLP is a mixture of experts.
    pub fn moe_layers(&self) -> u32 {
        match &self.moe {
            Some(m) => self.num_layers.saturating_sub(m.first_dense_layers),
            None => 0,
        }
    }

    /// True when layer `layer` (0-based) has an MoE MLP.
    pub fn is_moe_layer(&self, layer: u32) -> bool {
        self.moe
            .as_ref()
            .is_some_and(|m| layer >= m.first_dense_layers)
    }

    /// Parameter counts (see [`ParamCounts`]). Saturating arithmetic: a
    /// model too large to count in 64 bits shows `u64::MAX` in the parts
    /// that overflowed (never a panic); [`ModelSpec::checked_parameters`]
    /// says whether that happened.
    pub fn parameters(&self) -> ParamCounts {
        let mul = |a: u64, b: u64| a.saturating_mul(b);
        let h = self.hidden_size;
        let q = self.q_width();
        let kv = self.kv_width();
        let norm = self.norm_params();
        let qkv_bias = if self.linear_bias {
            q.saturating_add(mul(2, kv)).saturating_add(h)
        } else {
            0
        };
        let attention = match &self.mla {
            Some(m) => {
                // Plus the RMSNorms of the two latent vectors.
                let latent_norms = m.q_lora_rank.saturating_add(m.kv_lora_rank);
                m.projection_params(h, u64::from(self.num_attention_heads))
                    .saturating_add(latent_norms)
                    .saturating_add(norm)
            }
            None => sum(&[
                mul(h, q.saturating_add(mul(2, kv))),
                mul(q, h),
                qkv_bias,
                norm,
            ]),
        };
        let dense_mlp = self.mlp_params(self.ffn_hidden_size).saturating_add(norm);
        let (moe_mlp, moe_active) = match &self.moe {
            Some(m) => {
                let expert = self.mlp_params(m.expert_ffn_hidden_size);
                let router = mul(h, u64::from(m.num_experts));
                let shared = mul(u64::from(m.num_shared_experts), expert);
                (
                    sum(&[router, mul(u64::from(m.num_experts), expert), shared, norm]),
                    sum(&[router, mul(u64::from(m.top_k), expert), shared, norm]),
                )
            }
            None => (0, 0),
        };
        let moe_layers = self.moe_layers();
        let dense_layers = self.num_layers - moe_layers;
        let positions = if self.learned_positions {
            mul(self.max_position_embeddings, h)
        } else {
            0
        };
        let embedding = mul(self.vocab_size, h).saturating_add(positions);
        let output = if self.tied_embeddings {
            0
        } else {
            mul(self.vocab_size, h)
        };
        let final_norm = norm;
        let layers_common = sum(&[
            mul(u64::from(self.num_layers), attention),
            mul(u64::from(dense_layers), dense_mlp),
            embedding,
            output,
            final_norm,
        ]);
        ParamCounts {
            embedding,
            output,
            attention_per_layer: attention,
            dense_mlp_per_layer: dense_mlp,
            moe_mlp_per_layer: moe_mlp,
            dense_layers,
            moe_layers,
            final_norm,
            total: layers_common.saturating_add(mul(u64::from(moe_layers), moe_mlp)),
            active: layers_common.saturating_add(mul(u64::from(moe_layers), moe_active)),
        }
    }

    /// The parameter counts when every part fits in 64 bits; `None` when
    /// the model is too large to count (see [`ModelSpec::parameters`]).
    /// [`hf::parse`] refuses such models, so a parsed model or a preset can
    /// use [`ModelSpec::parameters`] freely.
    pub fn checked_parameters(&self) -> Option<ParamCounts> {
        let p = self.parameters();
        let parts = [
            p.embedding,
            p.output,
            p.attention_per_layer,
            p.dense_mlp_per_layer,
            p.moe_mlp_per_layer,
            p.final_norm,
            p.total,
            p.active,
        ];
        (!parts.contains(&u64::MAX)).then_some(p)
    }
}

/// Saturating sum.
fn sum(parts: &[u64]) -> u64 {
    parts.iter().fold(0u64, |a, b| a.saturating_add(*b))
}
