//! Benchmark of the event engine (prints figures; no assertions on time):
//! seed 001 (SimAI 405B, 16 stages x 16 micro-batches) simulated in full,
//! engine events per second, a synthetic 1024-rank per-rank simulation, and
//! the whole `trainscope_core::run::run_files` entry (what the CLI and the web page call) on
//! the seeds, including the Echo replay and the Optimus-Prime calibration.
//! Run with `cargo bench -p trainscope-core --bench engine [FILTER]`
//! (filters: `seed001`, `per_rank`, `run_files`).

mod common;

use common::{ms, time};
use std::time::{Duration, Instant};
use trainscope_core::engine::spec::{
    Block, CollectiveKind, CommSpec, GroupKind, JobSpec, LayerSpec, Parallelism, PhaseOps,
    RankProgram,
};
use trainscope_core::engine::{config::PlacementOrder, network::Placement};
use trainscope_core::formats::simai;
use trainscope_core::{
    engine::{SimConfig, SimResult},
    export,
};

const SEED001: &str = include_str!("../../../tests/fixtures/seeds/simai_405b_tp8_pp16_ga16_sp.txt");
const SEED000: &str = include_str!("../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");
const NEUSIGHT: &str =
    include_str!("../../../tests/fixtures/seeds/neusight_gpt2large_dp_workitems.tsv");
const ECHO: &str =
    include_str!("../../../tests/fixtures/seeds/echo_megatron_trace_rank7_tp2_pp4.txt");
const OPTIMUS: &str =
    include_str!("../../../tests/fixtures/seeds/optimus_prime_llama1b_pp8_train.log");

fn report(name: &str, med: Duration, min: Duration, r: &SimResult) {
    let spans = r.timeline.span_count();
    println!("{name}");
    println!(
        "  simulate: median {:.1} ms, best {:.1} ms",
        ms(med),
        ms(min)
    );
    println!(
        "  tasks {}, events {}, spans {}, flows {}",
        r.stats.tasks,
        r.stats.events,
        spans,
        r.timeline.flows().len()
    );
    println!(
        "  events/s over the whole simulate call (median run): {:.2} M",
        r.stats.events as f64 / med.as_secs_f64() / 1e6
    );
    println!(
        "  timeline memory: {:.1} MB, {:.1} bytes/span (span struct {} B)",
        r.timeline.heap_bytes() as f64 / 1e6,
        r.timeline.heap_bytes() as f64 / spans.max(1) as f64,
        std::mem::size_of::<trainscope_core::timeline::Span>()
    );
    println!(
        "  iteration {:.3} ms simulated",
        r.summary.iteration_time_ns as f64 / 1e6
    );
}

fn seed001() {
    let (pmed, _, job) = time(5, || {
        let w = simai::parse("seed001", SEED001).expect("seed parses");
        JobSpec::from_simai(&w).expect("adapts")
    });
    let config = SimConfig::default();
    let (med, min, r) = time(7, || {
        trainscope_core::engine::simulate(&job, &config).expect("simulates")
    });
    report("seed 001 (405B, tp 8, pp 16, ga 16), 1F1B", med, min, &r);
    println!("  parse + adapt: median {:.1} ms", ms(pmed));
    phases(&job, &config);
    let (emed, _, out) = time(3, || export::chrome_trace_json(&r.timeline));
    println!(
        "  chrome trace export: median {:.1} ms, {:.1} MB",
        ms(emed),
        out.len() as f64 / 1e6
    );
    let config = SimConfig {
        schedule: trainscope_core::engine::ScheduleKind::Interleaved,
        virtual_stages: 2,
        ..SimConfig::default()
    };
    let (med, min, r) = time(5, || {
        trainscope_core::engine::simulate(&job, &config).expect("simulates")
    });
    report("seed 001, interleaved v = 2", med, min, &r);
}

/// 1024 ranks (tp 8, dp 16, pp 8), 16 micro-batches, 8 layers with TP
/// collectives, DP gradient sync; every rank its own (jittered) durations.
fn synthetic_per_rank() -> JobSpec {
    let parallel = Parallelism {
        tp: 8,
        dp: 16,
        pp: 8,
        ep: 1,
        cp: 1,
        etp: None,
        dp_shard: 0,
    };
    let m = 16u32;
    let tp = |bytes| {
        Some(CommSpec {
            collective: CollectiveKind::AllReduce,
            group: GroupKind::Tp,
            size_bytes: bytes,
            prefetch: 0,
        })
    };
    let layer = |i: usize, jitter: u64| LayerSpec {
        name: format!("layer{i}"),
        forward: PhaseOps {
            compute_ns: 2_000_000 + jitter,
            comm: tp(32 << 20),
            ..Default::default()
        },
        input_grad: PhaseOps {
            compute_ns: 2_000_000 + jitter,
            comm: tp(32 << 20),
            ..Default::default()
        },
        weight_grad: PhaseOps::compute(2_000_000),
        update_ns: 100,
    };
    let sync = LayerSpec {
        name: "grad_sync".into(),
        forward: PhaseOps::default(),
        input_grad: PhaseOps::default(),
        weight_grad: PhaseOps {
            compute_ns: 0,
            comm: Some(CommSpec {
                collective: CollectiveKind::ReduceScatter,
                group: GroupKind::Dp,
                size_bytes: 2 << 30,
                prefetch: 0,
            }),
            ..Default::default()
        },
        update_ns: 100,
    };
    let placement = Placement::new(parallel, PlacementOrder::default(), 8);
    let programs = (0..parallel.world() as u32)
        .map(|rank| {
            let blocks = (0..m)
                .map(|mb| Block {
                    layers: (0..8)
                        .map(|i| layer(i, u64::from((rank * 7 + mb * 13 + i as u32) % 97) * 1000))
                        .collect(),
                })
                .collect();
            RankProgram {
                rank,
                stage: placement.coords_of(rank).pp,
                blocks,
                micro_batch_blocks: (0..m).collect(),
                pre_rows: vec![sync.clone()],
                post_rows: vec![],
                order: None,
                chunk_layers: Vec::new(),
            }
        })
        .collect();
    JobSpec::per_rank("synthetic-1024", parallel, m, 16 << 20, programs)
}

fn per_rank_1024() {
    let job = synthetic_per_rank();
    let config = SimConfig::default();
    let (med, min, r) = time(3, || {
        trainscope_core::engine::simulate(&job, &config).expect("simulates")
    });
    report(
        "synthetic 1024 ranks per-rank (tp 8, dp 16, pp 8, m 16, 8 layers)",
        med,
        min,
        &r,
    );
    let no_deps = SimConfig {
        record_dependencies: false,
        ..SimConfig::default()
    };
    let (med, _, _) = time(3, || {
        trainscope_core::engine::simulate(&job, &no_deps).expect("simulates")
    });
    println!("  without dependency edges: median {:.1} ms", ms(med));
    phases(&job, &config);
}

/// Time the three phases separately: build the task graph, run the
/// engine, turn the run into timeline and summary.
fn phases(job: &JobSpec, config: &SimConfig) {
    use trainscope_core::engine::{build, event::Engine, NetworkModel};
    let cost = NetworkModel::new(&config.network, config.algorithm).expect("model");
    let t0 = Instant::now();
    let model = build::build(job, config, &cost).expect("builds");
    let t1 = Instant::now();
    let mut engine = Engine::new(model.graph).expect("engine");
    engine.run().expect("runs");
    let t2 = Instant::now();
    let _ = build::finish_all(&model.meta, &engine, config).expect("finishes");
    let t3 = Instant::now();
    println!(
        "  phases: build {:.1} ms, engine {:.1} ms ({:.2} M events/s), timeline + summary {:.1} ms",
        ms(t1 - t0),
        ms(t2 - t1),
        engine.stats().events as f64 / (t2 - t1).as_secs_f64() / 1e6,
        ms(t3 - t2)
    );
}

/// The whole entry (load, adapt, simulate, compare) on every seed.
fn run_files_seeds() {
    use trainscope_core::run::{run_files, RunOptions};
    println!(
        "trainscope_core::run::run_files (parse + adapt + simulate + compare), default settings"
    );
    // File names matter for Echo traces (TP, PP, world come from them).
    let cases: [(&str, &str, &str, bool); 6] = [
        ("seed 000 (SimAI 65B, pp 4)", "seed000.txt", SEED000, false),
        (
            "seed 001 (SimAI 405B, 16 x 16)",
            "seed001.txt",
            SEED001,
            false,
        ),
        ("NeuSight GPT-2-large (36 blocks)", "n.tsv", NEUSIGHT, false),
        (
            "Echo rank 7 replay",
            "echo_megatron_trace_rank7_tp2_pp4.txt",
            ECHO,
            false,
        ),
        ("Optimus-Prime log", "op.log", OPTIMUS, false),
        ("Optimus-Prime log --calibrate", "op.log", OPTIMUS, true),
    ];
    for (name, file, text, calibrate) in cases {
        let files = [(file, text.as_bytes())];
        let options = RunOptions {
            calibrate,
            ..RunOptions::default()
        };
        let n = if text.len() > 50_000 || calibrate {
            5
        } else {
            9
        };
        let (med, min, out) = time(n, || {
            run_files(&files, &SimConfig::default(), &options).expect("runs")
        });
        println!(
            "  {name:<34} median {:>7.2} ms, best {:>7.2} ms; {} events, {} spans, iteration {:.3} ms",
            ms(med),
            ms(min),
            out.result.stats.events,
            out.result.timeline.span_count(),
            out.summary().iteration_time_ns as f64 / 1e6
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; anything else is a filter.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let want = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    if want("seed001") {
        seed001();
    }
    if want("per_rank") {
        per_rank_1024();
    }
    if want("run_files") {
        run_files_seeds();
    }
}
