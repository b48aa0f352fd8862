//! End-to-end tests of `trainscope inspect` running the built binary: exit
//! codes (0 ok, 2 usage, 3 parse failure), the JSON keys, errors on stderr
//! with their location, `--format` forcing, and Echo rank files given
//! together forming one run.

use std::process::Output;

mod common;
use common::{fixture, trainscope as run};

fn json(out: &Output) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    v.as_array().expect("a JSON array").clone()
}

const SEEDS: [&str; 5] = [
    "seeds/simai_llama65b_tp8_pp4_vpp8.txt",
    "seeds/simai_405b_tp8_pp16_ga16_sp.txt",
    "seeds/neusight_gpt2large_dp_workitems.tsv",
    "seeds/echo_megatron_trace_rank7_tp2_pp4.txt",
    "seeds/optimus_prime_llama1b_pp8_train.log",
];

#[test]
fn seeds_exit_0_with_the_json_keys() {
    let paths: Vec<String> = SEEDS.iter().map(|s| fixture(s)).collect();
    let mut args = vec!["inspect", "--json"];
    args.extend(paths.iter().map(String::as_str));
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = json(&out);
    assert_eq!(files.len(), 5);
    for f in &files {
        for key in ["file", "format", "warnings", "errors"] {
            assert!(f.get(key).is_some(), "{key} missing in {f}");
        }
        assert!(f["warnings"].is_array() && f["errors"].is_array());
        assert_eq!(f["errors"].as_array().unwrap().len(), 0);
    }
    for key in [
        "policy",
        "tp",
        "pp",
        "ep",
        "vpp",
        "ga",
        "world",
        "pp_comm_bytes",
        "records",
    ] {
        assert!(files[0].get(key).is_some(), "{key}");
    }
    assert_eq!(files[0]["format"], "simai-workload");
    assert_eq!(files[0]["tp"], 8);
    assert_eq!(files[0]["vpp"], 8);
    assert_eq!(files[0]["pp_comm_bytes"], 20_971_520);
    assert_eq!(files[1]["records"], 557);
    assert_eq!(files[2]["format"], "neusight-tsv");
    // Measured runs: ranks and iteration times.
    assert_eq!(files[3]["format"], "echo-trace");
    assert_eq!(files[3]["ranks"], serde_json::json!([7]));
    let echo_ms = files[3]["iteration_times_ms"][0].as_f64().unwrap();
    assert!((echo_ms - 3851.38).abs() < 1e-6, "{echo_ms}");
    assert_eq!(files[4]["format"], "optimus-prime-log");
    assert_eq!(files[4]["ranks"].as_array().unwrap().len(), 8);
    let op = files[4]["iteration_times_ms"].as_array().unwrap();
    assert_eq!(op.len(), 20);
    assert_eq!(op[1].as_f64(), Some(1600.43));
}

#[test]
fn text_output_summarises_each_file() {
    let out = run(&["inspect", &fixture(SEEDS[4])]);
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("format: optimus-prime-log (detected, 95%)"),
        "{s}"
    );
    assert!(
        s.contains("measured iteration time(s), ms: 7289.55, 1600.43"),
        "{s}"
    );
    assert!(s.contains("micro-batches 32"), "{s}");
}

#[test]
fn parse_failure_exits_3_with_located_errors_on_stderr() {
    let out = run(&[
        "inspect",
        "--json",
        &fixture("parse/simai/bad_records.txt"),
        &fixture(SEEDS[0]),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let files = json(&out);
    assert_eq!(files.len(), 2, "the good file is still reported");
    assert!(!files[0]["errors"].as_array().unwrap().is_empty());
    assert_eq!(files[1]["errors"].as_array().unwrap().len(), 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("expected 12 fields, found 11"), "{err}");
    assert!(err.contains("bad_records.txt:4:"), "{err}");
    assert!(err.contains("= hint:"), "{err}");
    // Unrecognised content also fails with exit 3.
    let out = run(&["inspect", &fixture("parse/optimus/noise_only.log")]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unrecognised format"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["inspect"]).status.code(), Some(2));
    let out = run(&["inspect", "--format", "simai", &fixture(SEEDS[0])]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("simai-workload"));
    assert_eq!(
        run(&["inspect", "/nonexistent/file.txt"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn forced_format_is_used_and_mismatch_warned() {
    let out = run(&[
        "inspect",
        "--json",
        "--format",
        "neusight-tsv",
        &fixture(SEEDS[0]),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let files = json(&out);
    assert_eq!(files[0]["format"], "neusight-tsv");
    assert!(files[0]["forced"].as_bool().unwrap());
    let w = files[0]["warnings"].to_string();
    assert!(w.contains("does not look like it"), "{w}");
    let out = run(&[
        "inspect",
        "--json",
        "--format",
        "simai-workload",
        &fixture(SEEDS[0]),
    ]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn echo_rank_files_given_together_form_one_run() {
    let out = run(&[
        "inspect",
        "--json",
        &fixture("parse/echo/wd2_tp1_pp2_numl4_bs2_rank0_job.txt"),
        &fixture("parse/echo/wd2_tp1_pp2_numl4_bs2_rank1_job.txt"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let files = json(&out);
    for f in &files {
        assert_eq!(f["ranks"], serde_json::json!([0, 1]));
        assert_eq!(f["run_files"].as_array().unwrap().len(), 2);
        assert_eq!(f["iteration_times_ms"], serde_json::json!([18.5]));
    }
    assert_eq!(files[0]["file_ranks"], serde_json::json!([0]));
    assert_eq!(files[1]["file_ranks"], serde_json::json!([1]));
}

#[test]
fn hostile_block_repeat_count_is_a_config_error() {
    let out = run(&[
        "simulate",
        "--block-repeats",
        "4294967295",
        &fixture("seeds/neusight_gpt2large_dp_workitems.tsv"),
    ]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("block repeat count 4294967295 is out of range"),
        "{err}"
    );
}

#[test]
fn every_format_has_its_parallel_configuration_at_top_level() {
    let paths: Vec<String> = SEEDS.iter().map(|s| fixture(s)).collect();
    let mut args = vec!["inspect", "--json"];
    args.extend(paths.iter().map(String::as_str));
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0));
    for f in json(&out) {
        for key in [
            "tp",
            "pp",
            "dp",
            "ep",
            "world",
            "micro_batches",
            "ga",
            "records",
        ] {
            assert!(f[key].is_u64(), "{key} missing in {}", f["file"]);
        }
        assert_eq!(f["usable"], true);
    }
    let optimus = &json(&run(&["inspect", "--json", &fixture(SEEDS[4])]))[0];
    assert_eq!(
        (optimus["pp"].as_u64(), optimus["world"].as_u64()),
        (Some(8), Some(8))
    );
    assert_eq!(optimus["micro_batches"].as_u64(), Some(32));
    assert!(optimus["ranks"].is_array() && optimus["iteration_times_ms"].is_array());
    let echo = &json(&run(&["inspect", "--json", &fixture(SEEDS[3])]))[0];
    assert_eq!(
        (echo["tp"].as_u64(), echo["pp"].as_u64()),
        (Some(2), Some(4))
    );
}

#[test]
fn a_file_with_skipped_records_is_simulated_with_a_warning() {
    let bad = fixture("parse/simai/bad_records.txt");
    // inspect still fails (exit 3): the file has located errors.
    assert_eq!(run(&["inspect", &bad]).status.code(), Some(3));
    for mode in ["simai", "event"] {
        let out = run(&["simulate", "--mode", mode, &bad]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(
                "bad_records.txt`: 3 records skipped (lines 4, 5, 6); the result leaves them out"
            ),
            "{mode}: {err}"
        );
        let out = run(&["simulate", "--mode", mode, "--json", &bad]);
        assert_eq!(out.status.code(), Some(0));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let warnings = v["warnings"].to_string();
        assert!(
            warnings.contains("3 records skipped (lines 4, 5, 6)"),
            "{mode}: {warnings}"
        );
    }
    // A file with no readable record still fails (exit 3).
    let out = run(&["simulate", &fixture("parse/simai/overflow.txt")]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn hf_config_is_summarised_as_a_model() {
    let out = run(&["inspect", "--json", &fixture("hf/deepseek_v3.json")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = json(&out);
    let f = &files[0];
    assert_eq!(f["format"], "hf-config");
    assert_eq!(f["confidence"], 100);
    assert_eq!(f["usable"], true);
    let m = &f["model"];
    assert_eq!(m["name"], "deepseek_v3");
    assert_eq!(m["family"], "deepseek-v3");
    assert_eq!(m["layers"], 61);
    assert_eq!(m["hidden_size"], 7168);
    assert_eq!(m["attention_heads"], 128);
    assert_eq!(m["kv_heads"], 128);
    assert_eq!(m["experts"], 256);
    assert_eq!(m["top_k"], 8);
    assert_eq!(m["shared_experts"], 1);
    assert_eq!(m["moe_layers"], 58);
    assert_eq!(m["latent_attention"], true);
    assert_eq!(m["parameters_total"], 671_026_404_352u64);
    assert_eq!(m["parameters_active"], 37_552_282_624u64);
    let w = f["warnings"].to_string();
    assert!(w.contains("num_nextn_predict_layers"), "{w}");
    assert_eq!(f["errors"].as_array().unwrap().len(), 0);
    // A dense model has no expert keys; the text form names the model.
    let out = run(&["inspect", &fixture("hf/llama3_8b.json")]);
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("format: hf-config (detected, 100%)"), "{s}");
    assert!(s.contains("model: llama3_8b (llama)"), "{s}");
    assert!(
        s.contains("layers 32 · hidden 4096 · heads 32 · kv heads 8"),
        "{s}"
    );
    assert!(
        s.contains("parameters: 8,030,261,248 total · 8,030,261,248 active"),
        "{s}"
    );
    assert!(!s.contains("experts:"), "{s}");
}

#[test]
fn broken_hf_config_exits_3_with_the_key_located() {
    let path = fixture("hf/wrong_type.json");
    let out = run(&["inspect", "--json", &path]);
    assert_eq!(out.status.code(), Some(3));
    let files = json(&out);
    assert_eq!(files[0]["usable"], false);
    assert!(files[0].get("model").is_none());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`num_attention_heads` must be a positive integer, found \"32\""),
        "{err}"
    );
    assert!(err.contains("wrong_type.json:6:3"), "{err}");
}

#[test]
fn simulating_a_model_config_asks_for_a_training_setup() {
    let path = fixture("hf/llama3_8b.json");
    let out = run(&["simulate", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is a model configuration (hf-config)"),
        "{err}"
    );
    assert!(err.contains("trainscope simulate --model"), "{err}");
}

#[test]
fn a_misspelt_comm_type_exits_3_and_names_the_known_one() {
    // `ALLREDUSE`, `ALLGATHR_EP` and `allreduce` are near misses (errors,
    // records skipped); `FOO_BAR` is far from every name (a warning).
    let file = fixture("parse/simai/comm_types.txt");
    let out = run(&["inspect", &file]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("comm_types.txt:4:9"), "{err}");
    assert!(
        err.contains("error: failed to parse SimAI workload (unknown comm type `ALLREDUSE` in field 4; did you mean `ALLREDUCE`?); record skipped"),
        "{err}"
    );
    assert!(err.contains("did you mean `ALLGATHER_EP`?"), "{err}");
    assert!(
        !err.contains("`FOO_BAR`"),
        "a far name is a warning, not an error: {err}"
    );
    let f = &json(&run(&["inspect", "--json", &file]))[0];
    assert_eq!(f["errors"].as_array().unwrap().len(), 3);
    assert!(f["warnings"]
        .to_string()
        .contains("unknown comm type `FOO_BAR`; treated as no collective"));
    // The simulation still runs on the records that were read, and says
    // which were left out.
    let out = run(&["simulate", "--mode", "simai", &file]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("3 records skipped (lines 4, 5, 8); the result leaves them out"));
}
