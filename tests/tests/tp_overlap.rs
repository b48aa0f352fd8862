//! Transformer Engine's tensor-parallel communication overlap
//! (`--tp-comm-overlap`, issue 24): a sequence-parallel block's all-gather
//! streams with its first GEMM and its reduce-scatter with its last, so the
//! exposed TP communication of a layout whose GEMMs outlast its
//! collectives nearly vanishes; the setting changes nothing without
//! sequence parallelism, and says so.

use trainscope_core::engine::SimConfig;
use trainscope_core::hardware::gpu_preset;
use trainscope_core::job::run::{run_model, ModelRunOutput};
use trainscope_core::job::{ModelJob, TrainingSetup};
use trainscope_core::model::presets;
use trainscope_core::model::stack::StackSettings;

fn run(sp: bool, overlap: bool) -> ModelRunOutput {
    let setup = TrainingSetup {
        tp: 8,
        pp: 2,
        micro_batch_size: 1,
        global_batch_size: Some(16),
        seq_length: 8192,
        sequence_parallel: sp,
        distributed_optimizer: true,
        stack: StackSettings {
            tp_comm_overlap: overlap,
            ..StackSettings::default()
        },
        ..TrainingSetup::default()
    };
    let job = ModelJob::new(
        presets::preset("llama3-70b").unwrap(),
        setup,
        gpu_preset("H100-SXM").unwrap(),
        Some(32),
    )
    .expect("a valid job");
    let config = SimConfig {
        record_dependencies: false,
        ..SimConfig::default()
    };
    run_model(&job, &config).expect("simulates")
}

#[test]
fn overlap_hides_the_tp_collectives_behind_the_gemms() {
    let plain = run(true, false);
    let over = run(true, true);
    let (p, o) = (&plain.run.result.summary, &over.run.result.summary);
    assert!(p.exposed_comm_ns.tp > 0, "TP 8 exposes its collectives");
    // The all-gather before the narrow (grouped-query) QKV GEMM outlasts
    // it a little: most, not all, is hidden.
    assert!(
        o.exposed_comm_ns.tp * 4 < p.exposed_comm_ns.tp,
        "exposed TP {} with overlap, {} without",
        o.exposed_comm_ns.tp,
        p.exposed_comm_ns.tp
    );
    assert!(o.iteration_time_ns < p.iteration_time_ns);
    // The compute itself is the same: only where the collectives run moved.
    assert_eq!(o.compute_ns, p.compute_ns);
    assert_eq!(over.report_json()["training"]["tp_comm_overlap"], true);
}

#[test]
fn without_sequence_parallelism_overlap_changes_nothing_and_says_so() {
    let plain = run(false, false);
    let over = run(false, true);
    assert_eq!(
        over.run.result.summary.iteration_time_ns,
        plain.run.result.summary.iteration_time_ns
    );
    assert!(
        over.run
            .warnings
            .iter()
            .any(|w| w.contains("--tp-comm-overlap")),
        "{:?}",
        over.run.warnings
    );
}
