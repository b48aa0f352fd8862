//! Benchmark of model-level jobs (prints figures; no assertions on time):
//! building and simulating Llama 3 70B on 1024 H100s (TP 8, PP 8, DP 16,
//! 16 micro-batches), the case the configuration search repeats thousands
//! of times; also without the timeline's dependency edges, summary-only
//! (no timeline at all: what a sweep runs) and a Mixtral 8x7B MoE job;
//! each also with the host model off (`launch_ns_per_kernel` 0: the
//! results of the engine before host lanes existed, so the pair shows what
//! the host model costs). Run with `cargo bench -p trainscope-core --bench
//! model`.

mod common;

use common::{ms, time};
use trainscope_core::engine::SimConfig;
use trainscope_core::hardware::gpu_preset;
use trainscope_core::job::run::run_model;
use trainscope_core::job::{ModelJob, TrainingSetup};
use trainscope_core::model::presets::preset;

fn case(name: &str, model: &str, setup: TrainingSetup, world: u32, config: &SimConfig) {
    one(name, model, setup.clone(), world, config);
    let mut off = setup;
    off.stack.launch_ns_per_kernel = Some(0);
    one("    host model off", model, off, world, config);
}

fn one(name: &str, model: &str, setup: TrainingSetup, world: u32, config: &SimConfig) {
    let gpu = gpu_preset("H100-SXM").expect("preset");
    let spec = preset(model).expect("preset");
    let (med, min, out) = time(21, || {
        let job = ModelJob::new(spec.clone(), setup.clone(), gpu.clone(), Some(world))
            .expect("valid job");
        run_model(&job, config).expect("simulates")
    });
    let s = out.run.summary();
    println!("{name}");
    println!(
        "  build + simulate: median {:.1} ms, best {:.1} ms",
        ms(med),
        ms(min)
    );
    println!(
        "  iteration {:.1} ms, MFU {:.1}%, tasks {}, events {}, spans {}",
        s.iteration_time_ns as f64 / 1e6,
        out.throughput.mfu * 100.0,
        out.run.result.stats.tasks,
        out.run.result.stats.events,
        out.run.result.timeline.span_count()
    );
}

fn main() {
    let llama = TrainingSetup {
        tp: 8,
        pp: 8,
        global_batch_size: Some(256),
        seq_length: 8192,
        sequence_parallel: true,
        distributed_optimizer: true,
        ..TrainingSetup::default()
    };
    let full = SimConfig::default();
    let lean = SimConfig {
        record_dependencies: false,
        ..SimConfig::default()
    };
    case(
        "llama3-70b, 1024 x H100, TP 8 PP 8 DP 16, 16 micro-batches",
        "llama3-70b",
        llama.clone(),
        1024,
        &full,
    );
    case(
        "  same, without dependency edges",
        "llama3-70b",
        llama.clone(),
        1024,
        &lean,
    );
    case(
        "  same, summary-only (no timeline: what a sweep runs)",
        "llama3-70b",
        llama,
        1024,
        &trainscope_core::search::sweep_config(&full),
    );
    let mixtral = TrainingSetup {
        tp: 2,
        pp: 4,
        ep: 8,
        global_batch_size: Some(256),
        seq_length: 4096,
        sequence_parallel: true,
        distributed_optimizer: true,
        ..TrainingSetup::default()
    };
    case(
        "mixtral-8x7b, 256 x H100, TP 2 PP 4 DP 32 EP 8",
        "mixtral-8x7b",
        mixtral,
        256,
        &full,
    );
}
