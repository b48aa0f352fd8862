//! Real PyTorch profiler traces from HolisticTraceAnalysis's test data
//! (`tests/fixtures/kineto/hta/README.md`: source, commit, licence): a
//! pipelined trainer whose GPU work of one step runs into the next, whose
//! step is read from the profiler's own `ProfilerStep#N` mark; a DDP rank
//! whose all-reduces overlap the backward on their own NCCL stream, whose
//! replay meets the measured step within 5 %.

use trainscope_core::engine::SimConfig;
use trainscope_core::inspect::inspect_set;
use trainscope_core::run::{run_files, RunOptions, RunOutput};
use trainscope_tests::fixture_bytes;

const QUEUE: &str = "kineto/hta/negative_queue_length_rank0.json.gz";
const NCCL: &str = "kineto/hta/nccl_parser_config_nccl_data.json.gz";

fn simulate(rel: &str, iteration: Option<u32>) -> RunOutput {
    let bytes = fixture_bytes(rel);
    run_files(
        &[(rel, bytes.as_slice())],
        &SimConfig::default(),
        &RunOptions {
            iteration,
            ..RunOptions::default()
        },
    )
    .unwrap()
}

/// Expected values read from the JSON independently (Python): the host
/// `ProfilerStep#554` has `dur` 216216 µs and `#551` 216483 µs, while the
/// GPU ops launched inside each (joined by `correlation`) span 372.277 ms
/// and 375.129 ms: work launched in one step still runs after the next
/// step's work has started.
#[test]
fn interleaved_steps_take_the_profilers_own_step() {
    let bytes = fixture_bytes(QUEUE);
    let s = inspect_set(&[(QUEUE, bytes.as_slice())], None);
    let f = &s[0];
    assert!(f.usable, "{:?}", f.diagnostics);
    let k = f.kineto.as_ref().unwrap();
    assert_eq!(k.iterations, vec![550, 551, 552, 553, 554]);
    assert_eq!(k.iteration, Some(554));
    assert_eq!(f.iteration_times_ns, Some(vec![216_216_000]));
    for (step, ns) in [(None, 216_216_000), (Some(551), 216_483_000)] {
        let out = simulate(QUEUE, step);
        assert_eq!(out.measured_iteration_time_ns(), Some(ns), "step {step:?}");
        let cmp = out.comparison.as_ref().unwrap();
        assert!(
            cmp.error_percent.abs() < 5.0,
            "step {step:?}: {:.2}%",
            cmp.error_percent
        );
    }
}

/// Step 6's GPU work, launched inside the host step, spans 218.764039 ms
/// (Python, from the JSON); 5 all-reduces (22.6 ms) run on stream 40 while
/// kernels start on stream 7.
#[test]
fn overlapped_all_reduces_replay_within_5_percent() {
    let out = simulate(NCCL, None);
    assert_eq!(out.measured_iteration_time_ns(), Some(218_764_039));
    let cmp = out.comparison.as_ref().unwrap();
    assert!(cmp.error_percent.abs() < 5.0, "{:.2}%", cmp.error_percent);
    let warnings = out.report_json()["warnings"].to_string();
    assert!(
        warnings.contains("5 collective(s) ran while other streams started work"),
        "{warnings}"
    );
}
