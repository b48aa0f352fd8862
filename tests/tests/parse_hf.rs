//! HuggingFace `config.json` through `inspect`: snapshots of the summary
//! JSON and the rendered diagnostics for the published configs (Llama 3 8B,
//! GPT-2, Mixtral 8x7B, DeepSeek-V3, Mistral 7B, Qwen2 7B, Qwen3 8B,
//! Qwen3-30B-A3B) and the broken ones (syntax error, truncated, wrong
//! type, fraction and negative, missing key with a near spelling, a
//! Qwen3-MoE `mlp_only_layers` that is no list), plus the parameter counts against
//! the presets.

use trainscope_core::inspect::{inspect, to_json};
use trainscope_core::workload::Format;
use trainscope_core::{formats::hf, model::presets};
use trainscope_tests::fixture_bytes;

fn report(rel: &str) -> String {
    let bytes = fixture_bytes(rel);
    let s = inspect(rel, &bytes, None);
    let json = serde_json::to_string_pretty(&to_json(std::slice::from_ref(&s))).unwrap();
    let rendered: String = s.diagnostics.iter().map(|d| d.render()).collect();
    format!(
        "{json}\n--- text ---\n{}--- rendered diagnostics ---\n{rendered}",
        s.render_text()
    )
}

const PUBLISHED: [&str; 8] = [
    "llama3_8b.json",
    "gpt2.json",
    "mixtral_8x7b.json",
    "deepseek_v3.json",
    "mistral_7b.json",
    "qwen2_7b.json",
    "qwen3_8b.json",
    "qwen3_30b_a3b.json",
];

const BROKEN: [&str; 6] = [
    "syntax_error.json",
    "truncated.json",
    "wrong_type.json",
    "fraction_negative.json",
    "missing_key.json",
    "qwen3_moe_bad_experts.json",
];

#[test]
fn published_config_snapshots() {
    for name in PUBLISHED {
        let rel = format!("hf/{name}");
        let s = inspect(&rel, &fixture_bytes(&rel), None);
        assert_eq!(s.format, Some(Format::HfConfig), "{name}");
        assert!(
            s.is_usable() && !s.has_errors(),
            "{name}: {:?}",
            s.diagnostics
        );
        insta::assert_snapshot!(format!("hf__{name}"), report(&rel));
    }
}

#[test]
fn broken_config_snapshots() {
    for name in BROKEN {
        let rel = format!("hf/{name}");
        let s = inspect(&rel, &fixture_bytes(&rel), None);
        assert_eq!(s.format, Some(Format::HfConfig), "{name}");
        assert!(!s.is_usable() && s.has_errors(), "{name}");
        // Every error is located at a line of the file.
        for d in s.diagnostics.iter().filter(|d| d.is_error()) {
            let loc = d.location.as_ref().expect("located");
            assert!(loc.line >= 1 && loc.column >= 1, "{name}: {d:?}");
        }
        insta::assert_snapshot!(format!("hf__{name}"), report(&rel));
    }
}

#[test]
fn parameters_match_the_presets() {
    for (file, preset) in [
        ("hf/llama3_8b.json", "llama3-8b"),
        ("hf/mixtral_8x7b.json", "mixtral-8x7b"),
        ("hf/deepseek_v3.json", "deepseek-v3"),
        ("hf/qwen3_30b_a3b.json", "qwen3-30b-a3b"),
    ] {
        let text = String::from_utf8(fixture_bytes(file)).unwrap();
        let (m, _) = hf::parse(file, &text).unwrap();
        let p = presets::preset(preset).unwrap();
        assert_eq!(m.parameters(), p.parameters(), "{file}");
    }
}

#[test]
fn forcing_hf_config_on_a_workload_fails_with_a_located_error() {
    let rel = "seeds/simai_llama65b_tp8_pp4_vpp8.txt";
    let s = inspect(rel, &fixture_bytes(rel), Some(Format::HfConfig));
    assert!(!s.is_usable());
    let e = s.diagnostics.iter().find(|d| d.is_error()).unwrap();
    assert!(e.message.contains("is not valid JSON"), "{e:?}");
    assert_eq!(e.location.as_ref().unwrap().line, 1);
}
