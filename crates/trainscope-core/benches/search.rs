//! Benchmark of the configuration search (prints figures; no assertions on
//! time): Llama 3 70B on 1024 H100s (8 per node) with every default bound
//! (TP 1-8, PP dividing the 80 layers, every schedule and virtual-stage
//! count, micro-batch 1/2/4, three recompute modes), global batch 1024 of
//! 4096 tokens. Enumerates, prunes and simulates on ONE thread (the core is
//! single-threaded; `trainscope sweep` spreads the same work over every
//! core with rayon). Run with `cargo bench -p trainscope-core --bench search`.

use std::time::Instant;
use trainscope_core::engine::SimConfig;
use trainscope_core::hardware::gpu_preset;
use trainscope_core::model::presets::preset;
use trainscope_core::search::{build, enumerate, process, sweep_config, SweepSpec};

fn main() {
    let spec = SweepSpec::new(
        preset("llama3-70b").expect("preset"),
        gpu_preset("H100-SXM").expect("preset"),
        1024,
    );
    let config = sweep_config(&SimConfig::default());
    let t0 = Instant::now();
    let e = enumerate(&spec);
    let t_enum = t0.elapsed();
    let skipped = e.skipped;
    let reasons = e.skipped_reasons.clone();
    let outcomes: Vec<_> = e
        .candidates
        .iter()
        .map(|c| process(c, &config, "--model llama3-70b", None))
        .collect();
    let report = build(spec.describe(), None, skipped, reasons, outcomes);
    let total = t0.elapsed();
    println!("llama3-70b, 1024 x H100-SXM, default bounds, one thread");
    println!(
        "  {} candidates ({} combinations skipped), {} pruned before simulating, {} simulated, {} fit",
        report.candidates, report.skipped, report.pruned, report.simulated, report.fitting
    );
    println!(
        "  enumerate {:.1} ms; enumerate + prune + simulate {:.2} s ({:.2} ms per simulated candidate)",
        t_enum.as_secs_f64() * 1e3,
        total.as_secs_f64(),
        total.as_secs_f64() * 1e3 / report.simulated.max(1) as f64
    );
    if let Some(best) = report.results.first() {
        println!(
            "  best: {:.1} ms, MFU {:.1}%: {}",
            best.iteration_time_ns as f64 / 1e6,
            best.mfu * 100.0,
            best.flags
        );
    }
    if let Some(why) = &report.explain {
        println!("  why: {why}");
    }
    for r in report.skipped_reasons.iter().chain(&report.pruned_reasons) {
        println!("  {:>6} {}", r.count, r.reason);
    }
}
