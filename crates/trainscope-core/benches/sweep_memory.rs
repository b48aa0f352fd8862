//! Memory of the configuration search's simulations (prints figures; no
//! assertions): for the largest candidates of two sweeps, what one
//! simulation holds with a timeline (the sweep before
//! `SimConfig::summary_only`: dependency edges off, timeline kept) and
//! summary-only (what `search::sweep_config` runs now). Two figures per
//! candidate:
//! - the peak resident memory of a fresh process that simulates only that
//!   candidate (Linux `VmHWM` of `/proc/self/status`, minus the process's
//!   resident memory before the simulation): the high-water mark a sweep
//!   worker reaches on that candidate (a wasm worker's memory never
//!   shrinks, so its size is the largest such peak of its shard);
//! - the bytes the result still holds after the run (its timeline's
//!   `heap_bytes`), what each simulation built and the row threw away.
//!
//! The sweeps: the README's browser row (llama3-8b, global batch 1024, 8,
//! 16, ..., 1024 H100s, micro-batch 1, 2, 4, 8, 16, other bounds default)
//! and Llama 3 70B on 1024 H100s with default bounds; in each, among the
//! candidates with the most micro-batches that the memory check keeps, the
//! ones that make the most tasks. Every row is also checked equal both ways
//! (the test `summary_only_rows_equal_the_full_runs` proves it on many).
//! Run with `cargo bench -p trainscope-core --bench sweep_memory`.

use std::process::Command;
use trainscope_core::engine::{ScheduleKind, SimConfig};
use trainscope_core::hardware::gpu_preset;
use trainscope_core::job::{ModelJob, TrainingSetup};
use trainscope_core::model::presets::preset;
use trainscope_core::search::{enumerate, evaluate, precheck, sweep_config, Candidate, SweepSpec};

/// The environment variable a child process reads:
/// `SWEEP|WORLD|SCHEDULE|MODE|SETUP-JSON`.
const CHILD: &str = "TRAINSCOPE_SWEEP_MEMORY_CHILD";
/// Largest candidates measured per sweep.
const TOP: usize = 4;

fn sweeps() -> Vec<(&'static str, SweepSpec)> {
    let gpu = gpu_preset("H100-SXM").expect("preset");
    let mut browser = SweepSpec::new(preset("llama3-8b").expect("preset"), gpu.clone(), 8);
    browser.worlds = vec![8, 16, 32, 64, 128, 256, 512, 1024];
    browser.global_batch_size = 1024;
    browser.micro_batch_size = Some(vec![1, 2, 4, 8, 16]);
    let big = SweepSpec::new(preset("llama3-70b").expect("preset"), gpu, 1024);
    vec![
        (
            "llama3-8b, global batch 1024, 8..1024 x H100, micro-batch 1..16 (the README's browser sweep)",
            browser,
        ),
        ("llama3-70b, 1024 x H100, default bounds", big),
    ]
}

/// The sweep's settings before summary-only runs (`lean == false`) or now.
fn config(lean: bool) -> SimConfig {
    let mut c = sweep_config(&SimConfig::default());
    c.summary_only = lean;
    c
}

/// A field of `/proc/self/status` in bytes (`None` off Linux).
fn status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// In a child: make one candidate's job (no enumeration, so nothing else
/// was allocated first), simulate it as a sweep does, print
/// `rss_before peak`.
fn child(arg: &str) {
    let mut it = arg.splitn(5, '|');
    let (Some(sweep), Some(world), Some(schedule), Some(mode), Some(setup)) =
        (it.next(), it.next(), it.next(), it.next(), it.next())
    else {
        panic!("bad {CHILD}: {arg}");
    };
    let all = sweeps();
    let (_, spec) = &all[sweep.parse::<usize>().expect("sweep")];
    let setup: TrainingSetup = serde_json::from_str(setup).expect("setup");
    let job = ModelJob::new(
        spec.model.clone(),
        setup,
        spec.gpu.clone(),
        Some(world.parse().expect("world")),
    )
    .expect("valid job");
    let c = Candidate {
        index: 0,
        schedule: ScheduleKind::from_name(schedule).expect("schedule"),
        job,
    };
    let cfg = config(mode == "lean");
    let before = status_bytes("VmRSS:").unwrap_or(0);
    let row = evaluate(&c, &cfg, "", None).expect("simulates");
    let peak = status_bytes("VmHWM:").unwrap_or(0);
    println!("{before} {peak} {}", row.iteration_time_ns);
}

/// Run one candidate in a fresh process: (peak minus resident before).
fn peak_in_child(sweep: usize, c: &Candidate, lean: bool) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let arg = format!(
        "{sweep}|{}|{}|{}|{}",
        c.job.world,
        c.schedule.name(),
        if lean { "lean" } else { "full" },
        serde_json::to_string(&c.job.setup).ok()?
    );
    let out = Command::new(exe).env(CHILD, arg).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut w = text.split_whitespace().map(|x| x.parse::<u64>().ok());
    let (before, peak) = (w.next()??, w.next()??);
    (peak > 0).then(|| peak.saturating_sub(before))
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

fn main() {
    if let Ok(arg) = std::env::var(CHILD) {
        child(&arg);
        return;
    }
    let (full, lean) = (config(false), config(true));
    for (i, (name, spec)) in sweeps().iter().enumerate() {
        let e = enumerate(spec);
        let kept: Vec<&Candidate> = e
            .candidates
            .iter()
            .filter(|c| precheck(c).is_ok())
            .collect();
        let most = kept.iter().map(|c| c.job.micro_batches).max().unwrap_or(0);
        // Among the candidates with the most micro-batches, the ones that
        // make the most tasks (counted by a summary-only run).
        let mut sized: Vec<(u64, &Candidate)> = kept
            .iter()
            .filter(|c| c.job.micro_batches == most)
            .filter_map(|c| {
                let cfg = SimConfig {
                    schedule: c.schedule,
                    virtual_stages: 1,
                    ..lean.clone()
                };
                let out = trainscope_core::job::run::run_model(&c.job, &cfg).ok()?;
                Some((out.run.result.stats.tasks, *c))
            })
            .collect();
        sized.sort_by_key(|(tasks, c)| (std::cmp::Reverse(*tasks), c.index));
        println!("{name}");
        println!(
            "  {} candidates, {} kept by the memory check; the {} with the most tasks among the {} with {most} micro-batches:",
            e.candidates.len(),
            kept.len(),
            TOP.min(sized.len()),
            sized.len()
        );
        for (tasks, c) in sized.iter().take(TOP) {
            let cfg = |base: &SimConfig| SimConfig {
                schedule: c.schedule,
                virtual_stages: 1,
                ..base.clone()
            };
            let with = trainscope_core::job::run::run_model(&c.job, &cfg(&full)).expect("runs");
            let without = trainscope_core::job::run::run_model(&c.job, &cfg(&lean)).expect("runs");
            let same = evaluate(c, &full, "", None).ok() == evaluate(c, &lean, "", None).ok();
            println!("  {} ({tasks} tasks)", c.flags(""));
            println!(
                "    result holds: timeline {} ({} spans) -> {} ({} spans); rows equal: {same}",
                mib(with.run.result.timeline.heap_bytes() as u64),
                with.run.result.timeline.span_count(),
                mib(without.run.result.timeline.heap_bytes() as u64),
                without.run.result.timeline.span_count()
            );
            drop((with, without));
            match (
                peak_in_child(i, c, false),
                peak_in_child(i, c, true),
            ) {
                (Some(a), Some(b)) => println!(
                    "    peak resident memory of the simulation (own process): {} -> {} ({:.0}% less)",
                    mib(a),
                    mib(b),
                    100.0 * (1.0 - b as f64 / a.max(1) as f64)
                ),
                _ => println!("    peak resident memory: not measurable here (needs Linux /proc)"),
            }
        }
    }
}
