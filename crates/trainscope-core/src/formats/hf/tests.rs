//! Unit tests of the `config.json` reader: each family against the presets
//! and published totals, defaults, the located errors, and the warnings for
//! keys that are not modelled.

use crate::formats::hf::*;
use crate::model::presets::preset;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../tests/fixtures/hf/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    String::from_utf8(std::fs::read(path).unwrap()).unwrap()
}

fn ok(file: &str, text: &str) -> (ModelSpec, Vec<Diagnostic>) {
    match parse(file, text) {
        Ok(r) => r,
        Err(ds) => panic!("{:#?}", ds),
    }
}

fn err(file: &str, text: &str) -> Vec<Diagnostic> {
    match parse(file, text) {
        Ok((m, _)) => panic!("parsed: {m:?}"),
        Err(ds) => {
            assert!(ds.iter().any(Diagnostic::is_error));
            ds
        }
    }
}

fn messages(ds: &[Diagnostic]) -> Vec<String> {
    ds.iter().map(|d| d.message.clone()).collect()
}

/// The spec without its name and source, to compare with a preset.
fn shape(mut m: ModelSpec) -> ModelSpec {
    m.name.clear();
    m.source.clear();
    m
}

const LLAMA: &str = r#"{
  "model_type": "llama",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "vocab_size": 128256
}"#;

#[test]
fn published_configs_equal_the_presets() {
    for (file, name) in [
        ("llama3_8b.json", "llama3-8b"),
        ("mixtral_8x7b.json", "mixtral-8x7b"),
        ("deepseek_v3.json", "deepseek-v3"),
    ] {
        let (m, _) = ok(file, &fixture(file));
        assert_eq!(shape(m), shape(preset(name).unwrap()), "{file}");
    }
}

#[test]
fn llama3_8b_is_clean() {
    let (m, w) = ok("llama3_8b.json", &fixture("llama3_8b.json"));
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(m.name, "llama3_8b");
    assert_eq!(m.source, "config.json: llama3_8b.json");
    assert_eq!(m.family, Family::Llama);
    assert_eq!((m.num_kv_heads, m.head_dim), (8, 128));
    assert_eq!(m.parameters().total, 8_030_261_248);
}

#[test]
fn gpt2_reads_its_own_keys_and_defaults() {
    let (m, w) = ok("gpt2.json", &fixture("gpt2.json"));
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(m.family, Family::Gpt);
    // n_inner absent: 4 x n_embd.
    assert_eq!(m.ffn_hidden_size, 3072);
    assert!(m.tied_embeddings && m.learned_positions && m.linear_bias && m.layernorm);
    assert_eq!(m.max_position_embeddings, 1024);
    // GPT-2 small: 124,439,808 parameters (the checkpoint's count).
    assert_eq!(m.parameters().total, 124_439_808);
    // vocab_size defaults to 50257; n_ctx stands in for n_positions;
    // n_inner null is 4 x n_embd.
    let (m, _) = ok(
        "g",
        r#"{"model_type":"gpt2","n_embd":64,"n_layer":2,"n_head":4,"n_ctx":128,"n_inner":null}"#,
    );
    assert_eq!(
        (m.vocab_size, m.max_position_embeddings, m.ffn_hidden_size),
        (50257, 128, 256)
    );
}

#[test]
fn mixtral_is_moe_in_every_layer() {
    let (m, w) = ok("mixtral_8x7b.json", &fixture("mixtral_8x7b.json"));
    assert!(w.is_empty(), "{w:?}");
    let moe = m.moe.as_ref().unwrap();
    assert_eq!(
        (moe.num_experts, moe.top_k, moe.expert_ffn_hidden_size),
        (8, 2, 14336)
    );
    assert_eq!(m.moe_layers(), 32);
    assert_eq!(m.parameters().total, 46_702_792_704);
}

#[test]
fn deepseek_v3_reads_mla_and_warns_what_is_not_modelled() {
    let (m, w) = ok("deepseek_v3.json", &fixture("deepseek_v3.json"));
    let mla = m.mla.as_ref().unwrap();
    assert_eq!((mla.q_lora_rank, mla.kv_lora_rank), (1536, 512));
    assert_eq!((m.head_dim, m.num_kv_heads), (192, 128));
    let moe = m.moe.as_ref().unwrap();
    assert_eq!(
        (
            moe.num_experts,
            moe.top_k,
            moe.num_shared_experts,
            moe.first_dense_layers
        ),
        (256, 8, 1, 3)
    );
    let text = messages(&w).join("\n");
    for needle in [
        "multi-head latent attention is modelled as its projection GEMMs",
        "`num_nextn_predict_layers` = 1: multi-token prediction layers are not modelled",
        "`quantization_config` (fp8) is ignored",
        "group-limited routing (`n_group` = 8, `topk_group` = 4) is counted as plain top-8 routing",
        "`rope_scaling` (yarn) only changes positions",
    ] {
        assert!(text.contains(needle), "{needle} not in\n{text}");
    }
    // Every warning is located at its key, in file order.
    let lines: Vec<u32> = w
        .iter()
        .map(|d| d.location.as_ref().unwrap().line)
        .collect();
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted);
    let quant = w
        .iter()
        .find(|d| d.message.contains("quantization_config"))
        .unwrap();
    assert!(quant
        .location
        .as_ref()
        .unwrap()
        .text
        .contains("\"quantization_config\""));
}

#[test]
fn deepseek_v2_lite_defaults_and_notes() {
    let text = r#"{
      "model_type": "deepseek_v2",
      "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
      "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
      "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
      "first_k_dense_replace": 1, "moe_layer_freq": 1, "q_lora_rank": null,
      "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
      "v_head_dim": 128, "vocab_size": 102400, "max_position_embeddings": 163840,
      "n_group": 1, "topk_group": 1
    }"#;
    let (m, w) = ok("v2.json", text);
    assert_eq!(m.mla.as_ref().unwrap().q_lora_rank, 0);
    assert_eq!(m.family, Family::DeepseekV3);
    let text = messages(&w).join("\n");
    assert!(text.contains("deepseek_v2 is read with the DeepSeek-V3 structure"));
    // n_group 1 is plain top-k routing: no warning.
    assert!(!text.contains("group-limited"));
    // DeepSeek-V2-Lite: 15.7B parameters (its model card).
    let total = m.parameters().total as f64;
    assert!((total / 15.7e9 - 1.0).abs() < 0.01, "{total}");
}

#[test]
fn moe_layer_freq_other_than_one_is_warned() {
    let text =
        fixture("deepseek_v3.json").replace("\"moe_layer_freq\": 1", "\"moe_layer_freq\": 2");
    let (_, w) = ok("d.json", &text);
    assert!(messages(&w).iter().any(
        |m| m.starts_with("`moe_layer_freq` = 2 is not modelled: every layer after the first")
    ));
}

#[test]
fn qwen2_biases_are_warned_with_their_size() {
    let (m, w) = ok("qwen2_7b.json", &fixture("qwen2_7b.json"));
    assert!(!m.linear_bias);
    let bias_note = w.iter().find(|d| d.message.contains("Qwen2")).unwrap();
    assert!(
        bias_note.message.contains("(129024 elements in all)"),
        "{}",
        bias_note.message
    );
    // use_sliding_window false: the window does not apply, no warning.
    assert!(
        !messages(&w).iter().any(|m| m.contains("sliding_window")),
        "{w:?}"
    );
    // Qwen2-7B: 7.62B on the hub = our count + the QKV biases.
    assert_eq!(m.parameters().total + 129_024, 7_615_616_512);
}

#[test]
fn mistral_sliding_window_is_warned() {
    let (m, w) = ok("mistral_7b.json", &fixture("mistral_7b.json"));
    assert_eq!(m.parameters().total, 7_241_732_096);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(
        w[0].message,
        "`sliding_window` = 4096 is not modelled: attention is counted as full causal attention over the whole sequence"
    );
    let loc = w[0].location.as_ref().unwrap();
    assert_eq!((loc.line, loc.column), (18, 3));
}

#[test]
fn explicit_head_dim_and_tied_embeddings() {
    let text = LLAMA
        .replace(
            "\"hidden_size\": 4096",
            "\"hidden_size\": 2048, \"head_dim\": 64, \"tie_word_embeddings\": true",
        )
        .replace("\"num_hidden_layers\": 32", "\"num_hidden_layers\": 16")
        .replace(
            "\"intermediate_size\": 14336",
            "\"intermediate_size\": 8192",
        );
    let (m, _) = ok("l.json", &text);
    assert_eq!(m.head_dim, 64);
    assert!(m.tied_embeddings);
    assert_eq!(
        shape(m),
        shape(preset("llama3.2-1b").unwrap()).with_positions(8192)
    );
}

trait WithPositions {
    fn with_positions(self, n: u64) -> Self;
}

impl WithPositions for ModelSpec {
    fn with_positions(mut self, n: u64) -> Self {
        self.max_position_embeddings = n;
        self
    }
}

#[test]
fn names_come_from_the_config_or_the_file() {
    let with_name = LLAMA.replace('{', "{\"_name_or_path\": \"meta-llama/Meta-Llama-3-8B\",");
    assert_eq!(
        ok("x.json", &with_name).0.name,
        "meta-llama/Meta-Llama-3-8B"
    );
    assert_eq!(ok("dir/my-model.json", LLAMA).0.name, "my-model");
    assert_eq!(
        ok("Meta-Llama-3-8B/config.json", LLAMA).0.name,
        "Meta-Llama-3-8B"
    );
    assert_eq!(ok("C:\\m\\Llama\\config.json", LLAMA).0.name, "Llama");
    assert_eq!(ok("config.json", LLAMA).0.name, "config");
}

#[test]
fn family_from_architectures_then_keys() {
    let arch = LLAMA.replace("\"model_type\": \"llama\"", "\"architectures\": [\"MixtralForCausalLM\"], \"num_local_experts\": 8, \"num_experts_per_tok\": 2");
    let (m, w) = ok("a.json", &arch);
    assert_eq!(m.family, Family::Mixtral);
    assert!(w.is_empty(), "{w:?}");
    let bare = LLAMA.replace("\"model_type\": \"llama\",", "");
    let (m, w) = ok("b.json", &bare);
    assert_eq!(m.family, Family::Llama);
    assert_eq!(
        w[0].message,
        "no `model_type` or `architectures`: read as llama (it has `hidden_size` and `num_hidden_layers`); keys that architecture does not have are not read"
    );
}

#[test]
fn unknown_types_are_read_by_their_keys_with_a_warning() {
    let text = LLAMA.replace("\"llama\"", "\"olmo2\"");
    let (m, w) = ok("o.json", &text);
    assert_eq!(m.family, Family::Llama);
    assert!(w[0]
        .message
        .starts_with("unknown model_type `olmo2`: read as llama"));
    assert_eq!(w[0].location.as_ref().unwrap().line, 2);
    // MoE keys on a type read as dense are named, not dropped.
    let moe = LLAMA.replace(
        "\"llama\"",
        "\"olmoe\", \"num_experts\": 64, \"moe_intermediate_size\": 1024",
    );
    let (_, w) = ok("q.json", &moe);
    assert!(messages(&w).iter().any(|m| m.starts_with(
        "mixture-of-experts keys (`num_experts`, `moe_intermediate_size`) are not read"
    )));
    // A type with none of the known keys is an error at `model_type`.
    let e = err("t5.json", r#"{"model_type": "t5", "d_model": 512}"#);
    assert_eq!(
        e[0].message,
        "unknown model_type `t5`, and the keys do not match a model trainscope reads"
    );
    assert_eq!(e[0].location.as_ref().unwrap().column, 2);
}

#[test]
fn wrong_types_are_errors_at_the_key() {
    let text = LLAMA.replace(
        "\"num_attention_heads\": 32",
        "\"num_attention_heads\": \"32\"",
    );
    let e = err("w.json", &text);
    assert_eq!(e.len(), 1);
    assert_eq!(
        e[0].message,
        "`num_attention_heads` must be a positive integer, found \"32\""
    );
    assert_eq!(
        e[0].hint.as_deref(),
        Some("write the number without quotes: `\"num_attention_heads\": 32`")
    );
    let loc = e[0].location.as_ref().unwrap();
    assert_eq!((loc.line, loc.column), (6, 3));
    assert_eq!(loc.text, "  \"num_attention_heads\": \"32\",");
}

#[test]
fn fractions_negatives_zero_and_huge_values_are_refused() {
    for (from, to, want) in [
        (
            "\"hidden_size\": 4096",
            "\"hidden_size\": 4096.0",
            "`hidden_size` must be a positive integer, found 4096.0",
        ),
        (
            "\"hidden_size\": 4096",
            "\"hidden_size\": 4e3",
            "`hidden_size` must be a positive integer, found 4000.0",
        ),
        (
            "\"num_key_value_heads\": 8",
            "\"num_key_value_heads\": -8",
            "`num_key_value_heads` must be a positive integer, found -8",
        ),
        (
            "\"num_hidden_layers\": 32",
            "\"num_hidden_layers\": 0",
            "`num_hidden_layers` must be a positive integer, found 0",
        ),
        (
            "\"vocab_size\": 128256",
            "\"vocab_size\": 99999999999",
            "`vocab_size` = 99999999999 is larger than trainscope reads (at most 16777216)",
        ),
        (
            "\"vocab_size\": 128256",
            "\"vocab_size\": 1e300",
            "`vocab_size` must be a positive integer, found",
        ),
        (
            "\"vocab_size\": 128256",
            "\"vocab_size\": [1]",
            "`vocab_size` must be a positive integer, found an array",
        ),
    ] {
        let text = LLAMA.replace(from, to);
        match parse("f.json", &text) {
            Ok(_) => panic!("{to} accepted"),
            Err(e) => assert!(
                e.iter()
                    .any(|d| d.is_error() && d.message.starts_with(want)),
                "{to}: {e:?}"
            ),
        }
    }
}

#[test]
fn missing_keys_name_the_key_or_the_near_spelling() {
    let text = LLAMA.replace("\"vocab_size\": 128256", "\"vocab_sizes\": 1");
    let e = err("m.json", &text);
    assert_eq!(messages(&e), vec!["missing required key `vocab_size`"]);
    assert_eq!(
        e[0].hint.as_deref(),
        Some("found `vocab_sizes`: did you mean `vocab_size`?")
    );
    let text = LLAMA.replace("\"intermediate_size\": 14336,", "");
    let e = err("m.json", &text);
    assert_eq!(
        messages(&e),
        vec!["missing required key `intermediate_size`"]
    );
    assert!(e[0]
        .hint
        .as_deref()
        .unwrap()
        .starts_with("`intermediate_size` is the width of the dense MLP"));
    // Unlocated keys point at the object's opening brace.
    assert_eq!(e[0].location.as_ref().unwrap().line, 1);
    let text = LLAMA.replace("\"vocab_size\": 128256", "\"vocab_size\": null");
    assert_eq!(
        messages(&err("n.json", &text)),
        vec!["`vocab_size` is null, but the model needs it"]
    );
}

#[test]
fn inconsistent_shapes_are_errors() {
    let text = LLAMA.replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5");
    assert_eq!(
        messages(&err("k.json", &text)),
        vec!["`num_attention_heads` = 32 is not a multiple of `num_key_value_heads` = 5"]
    );
    let text = LLAMA.replace("\"num_attention_heads\": 32", "\"num_attention_heads\": 30");
    let text = text.replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 10");
    assert_eq!(
        messages(&err("h.json", &text)),
        vec!["the hidden size 4096 is not a multiple of `num_attention_heads` = 30, so the head size is unknown"]
    );
    let text = fixture("mixtral_8x7b.json")
        .replace("\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 9");
    assert_eq!(
        messages(&err("x.json", &text)),
        vec!["`num_experts_per_tok` = 9 is more than the 8 experts (`num_local_experts`)"]
    );
    let text = fixture("deepseek_v3.json").replace(
        "\"first_k_dense_replace\": 3",
        "\"first_k_dense_replace\": 62",
    );
    assert!(messages(&err("d.json", &text))
        .contains(&"`first_k_dense_replace` = 62 is more than the 61 layers".to_string()));
}

#[test]
fn models_too_large_to_count_are_refused() {
    let text = fixture("mixtral_8x7b.json")
        .replace("\"num_local_experts\": 8", "\"num_local_experts\": 65536")
        .replace("\"hidden_size\": 4096", "\"hidden_size\": 16777216")
        .replace(
            "\"num_attention_heads\": 32",
            "\"num_attention_heads\": 4096",
        )
        .replace(
            "\"num_key_value_heads\": 8",
            "\"num_key_value_heads\": 4096",
        )
        .replace(
            "\"intermediate_size\": 14336",
            "\"intermediate_size\": 16777216",
        )
        .replace("\"num_hidden_layers\": 32", "\"num_hidden_layers\": 65536");
    let e = err("big.json", &text);
    assert_eq!(
        e.last().unwrap().message,
        "`big.json` describes more than 2^64 parameters; trainscope cannot count it"
    );
}

#[test]
fn syntax_errors_are_located() {
    let e = err("s.json", &fixture("syntax_error.json"));
    assert_eq!(e.len(), 1);
    assert_eq!(
        e[0].message,
        "`s.json` is not valid JSON: expected `,` or `}`"
    );
    let loc = e[0].location.as_ref().unwrap();
    assert_eq!((loc.line, loc.column), (5, 3));
    assert_eq!(loc.text, "  \"max_position_embeddings\": 8192,");
    let e = err("t.json", &fixture("truncated.json"));
    assert!(e[0]
        .message
        .starts_with("`t.json` is not valid JSON: EOF while parsing"));
    assert!(e[0].hint.as_deref().unwrap().contains("may be truncated"));
    let e = err("c.json", "{\"a\": 1,}");
    assert_eq!(e[0].message, "`c.json` is not valid JSON: trailing comma");
    let e = err("e.json", "");
    assert_eq!(e[0].location.as_ref().unwrap().line, 1);
}

#[test]
fn a_config_is_an_object() {
    let e = err("a.json", "\n  [1, 2]");
    assert_eq!(
        e[0].message,
        "a config.json is a JSON object (`{ ... }`), but `a.json` holds an array"
    );
    let loc = e[0].location.as_ref().unwrap();
    assert_eq!((loc.line, loc.column), (2, 3));
}

#[test]
fn duplicate_keys_warn_and_the_last_wins() {
    let text = LLAMA.replace(
        "\"vocab_size\": 128256",
        "\"vocab_size\": 1000,\n  \"vocab_size\": 128256",
    );
    let (m, w) = ok("d.json", &text);
    assert_eq!(m.vocab_size, 128_256);
    assert_eq!(
        w[0].message,
        "`vocab_size` appears more than once; the last value is used"
    );
    assert_eq!(w[0].location.as_ref().unwrap().line, 10);
    // Many repeats: a few listed, the rest counted in one warning.
    let many = format!("{{{}{}", "\"x\": 1,".repeat(100), &LLAMA[1..]);
    let (_, w) = ok("r.json", &many);
    assert_eq!(w.len(), 9, "{w:?}");
    assert_eq!(
        w[8].message,
        "91 more repeated key(s) in `r.json` were not listed; the last value of each is used"
    );
}

#[test]
fn other_cost_keys_warn() {
    let text = LLAMA.replace(
        '{',
        "{\"hidden_act\": \"relu2\", \"attention_bias\": true, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0},",
    );
    let (_, w) = ok("c.json", &text);
    let m = messages(&w);
    assert!(
        m.iter()
            .any(|x| x.starts_with("`hidden_act` = `relu2` is counted like SiLU")),
        "{m:?}"
    );
    assert!(m
        .iter()
        .any(|x| x.starts_with("`attention_bias` = true: those biases are not counted")));
    assert!(m
        .iter()
        .any(|x| x.starts_with("`rope_scaling` (llama3) only changes positions")));
}

#[test]
fn top_level_keys_skip_nested_objects_and_strings() {
    let keys = top_level_keys(
        r#"{"a": {"b": 1, "c": [ {"d": 2} ]}, "e\"x": "f, \"g\": 3", "h": [1, {"i": 0}]}"#,
    );
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, vec!["a", "e\"x", "h"]);
}

#[test]
fn detection_needs_json_with_model_keys() {
    assert_eq!(looks_like(&fixture("llama3_8b.json")).unwrap().0, 100);
    assert_eq!(looks_like(&fixture("gpt2.json")).unwrap().0, 100);
    let bare = LLAMA.replace("\"model_type\": \"llama\",", "");
    assert_eq!(looks_like(&bare).unwrap().0, 70);
    assert_eq!(looks_like("{\"model_type\": \"bert\"}").unwrap().0, 45);
    assert!(looks_like("{\"a\": 1}").is_none());
    assert!(looks_like("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8").is_none());
    assert!(looks_like("\u{feff}{\"model_type\":\"llama\",\"hidden_size\":1}").is_some());
}

/// Qwen3-MoE: experts from `num_experts` / `moe_intermediate_size`, a
/// leading run of `mlp_only_layers` as dense layers, other entries and a
/// `decoder_sparse_step` other than 1 warned about; all layers dense is an
/// error at the key.
#[test]
fn qwen3_moe_reads_experts_and_dense_layers() {
    let base = r#"{
  "model_type": "qwen3_moe",
  "hidden_size": 2048,
  "intermediate_size": 6144,
  "moe_intermediate_size": 768,
  "num_hidden_layers": 4,
  "num_attention_heads": 32,
  "num_key_value_heads": 4,
  "head_dim": 128,
  "num_experts": 128,
  "num_experts_per_tok": 8,
  "vocab_size": 151936,
  "max_position_embeddings": 40960,
  "mlp_only_layers": LIST,
  "decoder_sparse_step": STEP
}"#;
    let text = |list: &str, step: &str| base.replace("LIST", list).replace("STEP", step);
    let (m, w) = ok("q.json", &text("[]", "1"));
    assert_eq!(m.family, Family::Qwen3Moe);
    assert_eq!(m.head_dim, 128);
    let moe = m.moe.clone().unwrap();
    assert_eq!((moe.num_experts, moe.top_k), (128, 8));
    assert_eq!(
        (moe.expert_ffn_hidden_size, moe.first_dense_layers),
        (768, 0)
    );
    assert_eq!(w.len(), 1, "{w:?}"); // the query/key norms
    assert!(w[0]
        .message
        .starts_with("Qwen3 normalises each query and key head"));
    let (m, w) = ok("q.json", &text("[0, 1, 3]", "2"));
    assert_eq!(m.moe.unwrap().first_dense_layers, 2);
    let w = messages(&w);
    assert!(w
        .iter()
        .any(|m| m.starts_with("`mlp_only_layers` is read up to its leading run 0..2")));
    assert!(w
        .iter()
        .any(|m| m.starts_with("`decoder_sparse_step` = 2 is not modelled")));
    let e = err("q.json", &text("[0, 1, 2, 3]", "1"));
    let e = e.iter().find(|d| d.is_error()).unwrap();
    assert!(e.message.contains("makes all 4 layers dense"), "{e:?}");
    assert_eq!(e.location.as_ref().unwrap().line, 14);
}
