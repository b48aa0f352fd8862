//! Browser half of the CLI-equals-browser invariant: the core, compiled to
//! wasm32 and run in headless Chrome, must give exactly the figures the
//! native CLI wrote into `tests/fixtures/cross/*.json` (event mode, default
//! settings; a model-level job through the page's worker code, whose
//! summary download must be the CLI's `--json` report) and
//! SimAI-Analytical's reference total (SimAI mode), and the same output
//! twice.

#![cfg(target_arch = "wasm32")]

use serde_json::{json, Value};
use trainscope_core::analytical::{self, AnalyticalConfig};
use trainscope_core::engine::SimConfig;
use trainscope_core::job::TrainingSetup;
use trainscope_core::run::{run_files, RunOptions};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const SEED000: &[u8] =
    include_bytes!("../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");
const SEED001: &[u8] =
    include_bytes!("../../../tests/fixtures/seeds/simai_405b_tp8_pp16_ga16_sp.txt");
const CROSS000: &str = include_str!("../../../tests/fixtures/cross/event_seed000.json");
const CROSS001: &str = include_str!("../../../tests/fixtures/cross/event_seed001.json");
const CROSS_MODEL: &str = include_str!("../../../tests/fixtures/cross/model_llama3_8b.json");

/// The same figures the CLI test extracts from `trainscope simulate --json`.
fn figures(v: &Value) -> Value {
    json!({
        "iteration_time_ns": v["iteration_time_ns"],
        "compute_ns": v["compute_ns"],
        "bubble_ns": v["bubble_ns"],
        "exposed_comm_ns": v["exposed_comm_ns"],
        "simai_bubble_ns": v["simai_bubble_ns"],
        "pipeline_stages": v["pipeline_stages"],
        "micro_batches": v["micro_batches"],
        "critical_path_spans": v["critical_path"]["spans"],
        "tasks": v["tasks"],
    })
}

fn event_report(name: &str, bytes: &[u8]) -> Value {
    run_files(
        &[(name, bytes)],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .expect("seed simulates")
    .report_json()
}

#[wasm_bindgen_test]
fn event_mode_in_the_browser_equals_the_cli() {
    for (name, bytes, cross) in [
        ("simai_llama65b_tp8_pp4_vpp8.txt", SEED000, CROSS000),
        ("simai_405b_tp8_pp16_ga16_sp.txt", SEED001, CROSS001),
    ] {
        let want: Value = serde_json::from_str(cross).unwrap();
        let first = event_report(name, bytes);
        assert_eq!(figures(&first), want["figures"], "{name}");
        assert_eq!(first, event_report(name, bytes), "{name}: deterministic");
    }
}

#[wasm_bindgen_test]
fn simai_mode_in_the_browser_equals_the_reference() {
    let config = AnalyticalConfig {
        world_size: Some(512),
        gpus_per_server: Some(8),
        nics_per_server: Some(8),
        nvlink_busbw_gbps: Some(360.0),
        nic_busbw_gbps: Some(48.5),
        ..AnalyticalConfig::default()
    };
    let report = analytical::simulate_bytes("simai_llama65b_tp8_pp4_vpp8.txt", SEED000, &config)
        .expect("reference flags are valid");
    // tests/fixtures/simai/expected/r000-EndToEnd.csv: Total time 534975 us.
    assert_eq!(report.iteration_time_ns / 1000, 534_975);
    assert_eq!(report.compute_ns / 1000, 280_084);
}

/// `trainscope simulate --model llama3-8b --tp 2 --pp 2 --world 8
/// --global-batch-size 32 --sequence-parallel --distributed-optimizer
/// --recompute selective --json`, entered in the job panel (DP 2 = world 8
/// / (TP x PP)) and computed by the worker's code: the summary download is
/// the CLI's JSON, every key and number.
#[wasm_bindgen_test]
fn a_model_job_in_the_worker_equals_the_cli() {
    use std::collections::BTreeSet;
    use trainscope_core::job::Recompute;
    use trainscope_web::compute;
    use trainscope_web::job::JobSettings;
    use trainscope_web::protocol::RunRequest;
    use trainscope_web::settings::Settings;
    let want: Value = serde_json::from_str(CROSS_MODEL).unwrap();
    assert_eq!(want["args"][1], "llama3-8b");
    let job = JobSettings {
        training: TrainingSetup {
            tp: 2,
            pp: 2,
            dp: Some(2),
            global_batch_size: Some(32),
            sequence_parallel: true,
            distributed_optimizer: true,
            recompute: Recompute::Selective,
            ..JobSettings::default().training
        },
        ..JobSettings::default()
    };
    let req = RunRequest {
        id: 1,
        settings: Settings::default(),
        pinned: BTreeSet::new(),
        files: Vec::new(),
        job,
        job_active: true,
        compare_schedules: false,
    };
    let (out, source) = compute::run_with_source(&req, &mut |_| {});
    let report =
        trainscope_web::engine_run::export(&source.expect("simulated"), "export-summary-json")
            .unwrap();
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report, want["report"]);
    // What the page shows is that report's.
    let r = out.result.unwrap();
    assert_eq!(
        r.iteration_time_ns,
        want["report"]["iteration_time_ns"].as_u64()
    );
    let m = r.model.unwrap();
    assert_eq!(Some(m.mfu), want["report"]["mfu"].as_f64());
    let stages = want["report"]["memory"]["per_stage"].as_array().unwrap();
    assert_eq!(m.memory.stages.len(), stages.len());
    for (page, cli) in m.memory.stages.iter().zip(stages) {
        assert_eq!(Some(page.peak_bytes), cli["peak_bytes"].as_u64());
    }
}
