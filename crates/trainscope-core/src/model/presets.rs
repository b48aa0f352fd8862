//! Built-in models ([`preset`], names in [`NAMES`]): published LLMs from
//! their HuggingFace `config.json` (named by hub repository id) and the GPT
//! models of the papers whose measurements trainscope is validated against
//! (Brown et al. 2020; Narayanan et al. 2021; Korthikanti et al. 2022), each
//! with its `source`. Parameter counts are checked against the published
//! totals in the tests below.

use super::{Family, MlaSpec, ModelSpec, MoeSpec};
use crate::diag::Diagnostic;

/// Every preset name, in the order `trainscope` lists them.
pub const NAMES: &[&str] = &[
    "gpt3-175b",
    "llama3-8b",
    "llama3-70b",
    "llama3-405b",
    "llama3.2-1b",
    "mixtral-8x7b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "deepseek-v3",
    "megatron-gpt-1.7b",
    "megatron-gpt-3.6b",
    "megatron-gpt-7.5b",
    "megatron-gpt-18.4b",
    "megatron-gpt-39.1b",
    "megatron-gpt-76.1b",
    "megatron-gpt-145.6b",
    "megatron-gpt-310.1b",
    "megatron-gpt-529.6b",
    "megatron-gpt-1t",
    "korthikanti-22b",
    "korthikanti-175b",
    "korthikanti-530b",
    "korthikanti-1t",
];

/// Narayanan et al. 2021, Table 1: (name, attention heads, hidden size,
/// layers, parameters in billions as printed).
const MEGATRON_TABLE1: [(&str, u32, u64, u32, &str); 10] = [
    ("megatron-gpt-1.7b", 24, 2304, 24, "1.7"),
    ("megatron-gpt-3.6b", 32, 3072, 30, "3.6"),
    ("megatron-gpt-7.5b", 32, 4096, 36, "7.5"),
    ("megatron-gpt-18.4b", 48, 6144, 40, "18.4"),
    ("megatron-gpt-39.1b", 64, 8192, 48, "39.1"),
    ("megatron-gpt-76.1b", 80, 10240, 60, "76.1"),
    ("megatron-gpt-145.6b", 96, 12288, 80, "145.6"),
    ("megatron-gpt-310.1b", 128, 16384, 96, "310.1"),
    ("megatron-gpt-529.6b", 128, 20480, 105, "529.6"),
    ("megatron-gpt-1t", 160, 25600, 128, "1008.0"),
];

/// Korthikanti et al. 2022, Table 3: (name, attention heads, hidden size,
/// layers, model as the paper names it).
const KORTHIKANTI_TABLE3: [(&str, u32, u64, u32, &str); 4] = [
    ("korthikanti-22b", 64, 6144, 48, "22B"),
    ("korthikanti-175b", 96, 12288, 96, "175B (GPT-3)"),
    ("korthikanti-530b", 128, 20480, 105, "530B (MT-NLG)"),
    ("korthikanti-1t", 160, 25600, 128, "1T"),
];

/// The preset called `name` (case-insensitive), `None` when there is none.
pub fn preset(name: &str) -> Option<ModelSpec> {
    let key = NAMES.iter().find(|n| n.eq_ignore_ascii_case(name.trim()))?;
    Some(match *key {
        "gpt3-175b" => gpt3_175b(),
        "llama3-8b" => llama(
            key,
            "meta-llama/Meta-Llama-3-8B",
            LlamaSizes {
                hidden: 4096,
                layers: 32,
                heads: 32,
                kv_heads: 8,
                ffn: 14336,
                vocab: 128256,
                positions: 8192,
                tied: false,
            },
        ),
        "llama3-70b" => llama(
            key,
            "meta-llama/Meta-Llama-3-70B",
            LlamaSizes {
                hidden: 8192,
                layers: 80,
                heads: 64,
                kv_heads: 8,
                ffn: 28672,
                vocab: 128256,
                positions: 8192,
                tied: false,
            },
        ),
        "llama3-405b" => llama(
            key,
            "meta-llama/Llama-3.1-405B",
            LlamaSizes {
                hidden: 16384,
                layers: 126,
                heads: 128,
                kv_heads: 8,
                ffn: 53248,
                vocab: 128256,
                positions: 131072,
                tied: false,
            },
        ),
        "llama3.2-1b" => llama(
            key,
            "meta-llama/Llama-3.2-1B",
            LlamaSizes {
                hidden: 2048,
                layers: 16,
                heads: 32,
                kv_heads: 8,
                ffn: 8192,
                vocab: 128256,
                positions: 131072,
                tied: true,
            },
        ),
        "mixtral-8x7b" => {
            let mut m = llama(
                key,
                "mistralai/Mixtral-8x7B-v0.1",
                LlamaSizes {
                    hidden: 4096,
                    layers: 32,
                    heads: 32,
                    kv_heads: 8,
                    ffn: 14336,
                    vocab: 32000,
                    positions: 32768,
                    tied: false,
                },
            );
            m.family = Family::Mixtral;
            m.moe = Some(MoeSpec {
                num_experts: 8,
                top_k: 2,
                expert_ffn_hidden_size: 14336,
                num_shared_experts: 0,
                first_dense_layers: 0,
            });
            m
        }
        "qwen3-30b-a3b" => qwen3_moe(
            key,
            "Qwen/Qwen3-30B-A3B",
            LlamaSizes {
                hidden: 2048,
                layers: 48,
                heads: 32,
                kv_heads: 4,
                ffn: 6144,
                vocab: 151936,
                positions: 40960,
                tied: false,
            },
            768,
        ),
        "qwen3-235b-a22b" => qwen3_moe(
            key,
            "Qwen/Qwen3-235B-A22B",
            LlamaSizes {
                hidden: 4096,
                layers: 94,
                heads: 64,
                kv_heads: 4,
                ffn: 12288,
                vocab: 151936,
                positions: 40960,
                tied: false,
            },
            1536,
        ),
        "deepseek-v3" => deepseek_v3(),
        other => {
            if let Some(&(_, heads, hidden, layers, billions)) =
                MEGATRON_TABLE1.iter().find(|r| r.0 == other)
            {
                megatron_gpt(
                    other,
                    format!(
                        "Narayanan et al. 2021, \"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM\" (SC21), Table 1: the {billions}B GPT model ({heads} heads, hidden size {hidden}, {layers} layers; vocabulary 51200, sequence length 2048)"
                    ),
                    heads,
                    hidden,
                    layers,
                )
            } else {
                let &(_, heads, hidden, layers, label) =
                    KORTHIKANTI_TABLE3.iter().find(|r| r.0 == other)?;
                megatron_gpt(
                    other,
                    format!(
                        "Korthikanti et al. 2022, \"Reducing Activation Recomputation in Large Transformer Models\", Table 3: the {label} model ({heads} heads, hidden size {hidden}, {layers} layers; vocabulary 51200, sequence length 2048)"
                    ),
                    heads,
                    hidden,
                    layers,
                )
            }
        }
    })
}

/// The preset called `name`, or an error listing the presets (with the
/// nearest name when it looks like a typo).
pub fn lookup(name: &str) -> Result<ModelSpec, Diagnostic> {
    preset(name).ok_or_else(|| {
        let mut d = Diagnostic::error(format!("unknown model preset `{name}`"));
        let near = crate::diag::suggest(name.trim(), NAMES);
        d = d.with_hint(match near {
            Some(n) => format!("did you mean `{n}`? presets: {}", NAMES.join(", ")),
            None => format!(
                "presets: {}; or give a HuggingFace config.json",
                NAMES.join(", ")
            ),
        });
        d
    })
}

/// The sizes of a Llama-style model (RMSNorm, SwiGLU, rotary, no biases).
struct LlamaSizes {
    hidden: u64,
    layers: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u64,
    vocab: u64,
    positions: u64,
    tied: bool,
}

fn llama(name: &str, repo: &str, s: LlamaSizes) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        source: format!("config.json of `{repo}` on the HuggingFace hub"),
        family: Family::Llama,
        hidden_size: s.hidden,
        num_layers: s.layers,
        num_attention_heads: s.heads,
        num_kv_heads: s.kv_heads,
        head_dim: s.hidden / u64::from(s.heads),
        ffn_hidden_size: s.ffn,
        gated_mlp: true,
        vocab_size: s.vocab,
        max_position_embeddings: s.positions,
        learned_positions: false,
        tied_embeddings: s.tied,
        linear_bias: false,
        layernorm: false,
        moe: None,
        mla: None,
    }
}

/// A Qwen3-MoE model: Llama's layers with heads of 128 (the query width
/// need not be the hidden size), every MLP top-8 of 128 SwiGLU experts of
/// width `expert_ffn`, no shared experts (`ffn` is the config's dense
/// `intermediate_size`, which no layer of these models uses).
fn qwen3_moe(name: &str, repo: &str, s: LlamaSizes, expert_ffn: u64) -> ModelSpec {
    let mut m = llama(name, repo, s);
    m.family = Family::Qwen3Moe;
    m.head_dim = 128;
    m.moe = Some(MoeSpec {
        num_experts: 128,
        top_k: 8,
        expert_ffn_hidden_size: expert_ffn,
        num_shared_experts: 0,
        first_dense_layers: 0,
    });
    m
}

/// A GPT model as Megatron-LM builds it: LayerNorm, GELU MLP of 4h, biases,
/// learned positions, output tied to the input embedding.
fn gpt(name: &str, source: String, heads: u32, hidden: u64, layers: u32, vocab: u64) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        source,
        family: Family::Gpt,
        hidden_size: hidden,
        num_layers: layers,
        num_attention_heads: heads,
        num_kv_heads: heads,
        head_dim: hidden / u64::from(heads),
        ffn_hidden_size: 4 * hidden,
        gated_mlp: false,
        vocab_size: vocab,
        max_position_embeddings: 2048,
        learned_positions: true,
        tied_embeddings: true,
        linear_bias: true,
        layernorm: true,
        moe: None,
        mla: None,
    }
}

fn megatron_gpt(name: &str, source: String, heads: u32, hidden: u64, layers: u32) -> ModelSpec {
    gpt(name, source, heads, hidden, layers, 51200)
}

fn gpt3_175b() -> ModelSpec {
    gpt(
        "gpt3-175b",
        "Brown et al. 2020, \"Language Models are Few-Shot Learners\", Table 2.1: GPT-3 175B (96 layers, d_model 12288, 96 heads of 128, context 2048); GPT-2's BPE vocabulary of 50257; feed-forward 4 x d_model".to_string(),
        96,
        12288,
        96,
        50257,
    )
}

fn deepseek_v3() -> ModelSpec {
    ModelSpec {
        name: "deepseek-v3".to_string(),
        source: "config.json of `deepseek-ai/DeepSeek-V3` on the HuggingFace hub (main model; the multi-token-prediction module is not counted)".to_string(),
        family: Family::DeepseekV3,
        hidden_size: 7168,
        num_layers: 61,
        num_attention_heads: 128,
        num_kv_heads: 128,
        head_dim: 128 + 64,
        ffn_hidden_size: 18432,
        gated_mlp: true,
        vocab_size: 129280,
        max_position_embeddings: 163840,
        learned_positions: false,
        tied_embeddings: false,
        linear_bias: false,
        layernorm: false,
        moe: Some(MoeSpec {
            num_experts: 256,
            top_k: 8,
            expert_ffn_hidden_size: 2048,
            num_shared_experts: 1,
            first_dense_layers: 3,
        }),
        mla: Some(MlaSpec {
            q_lora_rank: 1536,
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(name: &str) -> u64 {
        preset(name).unwrap().parameters().total
    }

    #[test]
    fn every_name_is_a_preset_with_a_source() {
        for name in NAMES {
            let m = preset(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(&m.name, name);
            assert!(!m.source.is_empty());
            assert!(m.checked_parameters().is_some(), "{name}");
            assert_eq!(m.hidden_size % u64::from(m.num_attention_heads), 0);
        }
        assert_eq!(preset("LLAMA3-8B").unwrap().name, "llama3-8b");
        assert_eq!(preset(" Mixtral-8x7B ").unwrap().name, "mixtral-8x7b");
        assert!(preset("llama3-9b").is_none());
    }

    #[test]
    fn unknown_presets_suggest_the_nearest() {
        let e = lookup("llama3-8").unwrap_err();
        assert_eq!(e.message, "unknown model preset `llama3-8`");
        assert!(e.hint.unwrap().starts_with("did you mean `llama3-8b`?"));
        let e = lookup("bert").unwrap_err();
        assert!(e.hint.unwrap().contains("gpt3-175b"));
    }

    /// Published totals: the parameter count of each HuggingFace checkpoint
    /// (its safetensors index), exact.
    #[test]
    fn llama_and_mixtral_counts_are_exact() {
        assert_eq!(total("llama3-8b"), 8_030_261_248);
        assert_eq!(total("llama3-70b"), 70_553_706_496);
        assert_eq!(total("llama3.2-1b"), 1_235_814_400);
        assert_eq!(total("mixtral-8x7b"), 46_702_792_704);
        // Llama 3.1 405B: 405.85e9 (dense, so active = total).
        let p = preset("llama3-405b").unwrap().parameters();
        assert_eq!(p.total, 405_853_388_800);
        assert_eq!(p.active, p.total);
        // Mixtral: "47B parameters, 13B active" (Jiang et al. 2024, Mixtral
        // of Experts, section 2): 2 of 8 experts per token.
        let p = preset("mixtral-8x7b").unwrap().parameters();
        assert_eq!(p.active, 12_879_925_248);
        assert!((p.active as f64 / 13e9 - 1.0).abs() < 0.01);
    }

    /// Qwen3-30B-A3B "30.5B total, 3.3B activated" and Qwen3-235B-A22B
    /// "235B total, 22B activated" (their HuggingFace model cards; the
    /// per-head query/key norms, 256 weights a layer, are not counted).
    #[test]
    fn qwen3_moe_counts_match_the_model_cards() {
        let p = preset("qwen3-30b-a3b").unwrap().parameters();
        assert_eq!(p.total, 30_532_110_336);
        let within = |x: u64, want: f64, tol: f64| ((x as f64 - want) / want).abs() < tol;
        assert!(within(p.total, 30.5e9, 0.002), "{}", p.total);
        assert!(within(p.active, 3.3e9, 0.02), "{}", p.active);
        let p = preset("qwen3-235b-a22b").unwrap().parameters();
        assert!(within(p.total, 235e9, 0.002), "{}", p.total);
        assert!(within(p.active, 22e9, 0.02), "{}", p.active);
        assert_eq!((p.dense_layers, p.moe_layers), (0, 94));
    }

    /// DeepSeek-V3: 671B total and 37B activated for the main model
    /// (DeepSeek-V3 technical report, section 2 / README: the 685B of the
    /// HuggingFace checkpoint add the 14B multi-token-prediction module).
    #[test]
    fn deepseek_v3_counts_match_the_report() {
        let p = preset("deepseek-v3").unwrap().parameters();
        let within = |x: u64, want: f64, tol: f64| ((x as f64 - want) / want).abs() < tol;
        assert!(within(p.total, 671e9, 0.005), "{}", p.total);
        assert!(within(p.active, 37e9, 0.02), "{}", p.active);
        assert_eq!(p.total, 671_026_404_352);
        assert_eq!((p.dense_layers, p.moe_layers), (3, 58));
    }

    /// GPT-3 175B: 174.6e9 with GPT-2's vocabulary (the count Narayanan et
    /// al. 2021 use in Table 2).
    #[test]
    fn gpt3_count() {
        let t = total("gpt3-175b");
        assert_eq!(t, 174_604_259_328);
    }

    /// The Megatron tables print billions with one decimal: our count rounds
    /// to the printed number (and is within 1% for 3.6B and up; 1.7B is
    /// printed from 1.65B).
    #[test]
    fn megatron_counts_round_to_the_papers_tables() {
        for (name, _, _, _, printed) in MEGATRON_TABLE1 {
            let t = total(name) as f64 / 1e9;
            let want: f64 = printed.parse().unwrap();
            assert!((t - want).abs() <= 0.05 + 1e-9, "{name}: {t} vs {want}");
            if want >= 3.0 {
                assert!(((t - want) / want).abs() < 0.012, "{name}: {t}");
            }
        }
        // Korthikanti et al. name their models by rounded size.
        for (name, want) in [
            ("korthikanti-22b", 22.0),
            ("korthikanti-175b", 175.0),
            ("korthikanti-530b", 530.0),
            ("korthikanti-1t", 1000.0),
        ] {
            let t = total(name) as f64 / 1e9;
            assert!(((t - want) / want).abs() < 0.01, "{name}: {t}");
        }
        // The same shapes in both papers give the same counts.
        assert_eq!(total("korthikanti-530b"), total("megatron-gpt-529.6b"));
        assert_eq!(total("korthikanti-1t"), total("megatron-gpt-1t"));
    }

    /// The paper's Eq. 2, P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)),
    /// is exactly what a GPT model counts (biases, LayerNorms, tied output).
    #[test]
    fn gpt_count_is_the_papers_formula() {
        for (name, _, h, l, _) in MEGATRON_TABLE1 {
            let l = u64::from(l);
            let eq2 = 12 * l * h * h + 13 * l * h + (51200 + 2048) * h;
            // Plus the final LayerNorm (2h), which Eq. 2 leaves out.
            assert_eq!(total(name), eq2 + 2 * h, "{name}");
        }
    }
}
