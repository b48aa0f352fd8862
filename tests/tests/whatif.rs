//! What-if faults in the engine (issue 27): a slowed rank delays exactly
//! what depends on it (no slow-down without injection, monotone in the
//! factor, the closed form on uniform pipelines and on a compute-bound DP
//! job), a slowed link slows only the collectives and transfers that cross
//! it, jitter is deterministic under its seed, and the blame's shares lie
//! between 0 and S - 1.

use proptest::prelude::*;
use trainscope_core::engine::faults::{Faults, Jitter, SlowCompute, SlowLink};
use trainscope_core::engine::spec::{
    Block, CollectiveKind, CommSpec, GroupKind, JobMode, JobSpec, LayerSpec, Parallelism,
    RankProgram,
};
use trainscope_core::engine::{simulate, ScheduleKind, SimConfig};
use trainscope_core::whatif::{self, BlameBy};
use trainscope_tests::proptest_config;

fn parallel(tp: u32, dp: u32, pp: u32) -> Parallelism {
    Parallelism {
        tp,
        dp,
        pp,
        ep: 1,
        cp: 1,
        etp: None,
        dp_shard: 0,
    }
}

/// One layer per micro-batch: forward `f`, backward `2f` split in two,
/// with an optional TP all-reduce in the forward and a DP all-reduce in
/// the weight gradient.
fn block(f: u64, tp_bytes: u64, dp_bytes: u64) -> Block {
    let mut l = LayerSpec::compute("l", f, f, f);
    if tp_bytes > 0 {
        l.forward.comm = Some(CommSpec {
            collective: CollectiveKind::AllReduce,
            group: GroupKind::Tp,
            size_bytes: tp_bytes,
            prefetch: 0,
        });
    }
    if dp_bytes > 0 {
        l.weight_grad.comm = Some(CommSpec {
            collective: CollectiveKind::AllReduce,
            group: GroupKind::Dp,
            size_bytes: dp_bytes,
            prefetch: 0,
        });
    }
    Block { layers: vec![l] }
}

fn spmd(p: Parallelism, m: u32, b: Block) -> JobSpec {
    JobSpec::spmd("whatif", p, m, 0, b)
}

/// Every rank its own program (a per-rank replay's shape).
fn per_rank(p: Parallelism, m: u32, b: Block) -> JobSpec {
    let mut j = spmd(p, m, b.clone());
    j.mode = JobMode::PerRank;
    let per_stage = p.tp * p.dp;
    j.programs = (0..p.world() as u32)
        .map(|rank| RankProgram {
            rank,
            stage: rank / per_stage,
            blocks: vec![b.clone()],
            micro_batch_blocks: Vec::new(),
            pre_rows: vec![],
            post_rows: vec![],
            order: None,
            chunk_layers: Vec::new(),
        })
        .collect();
    j
}

fn with(faults: Faults) -> SimConfig {
    SimConfig {
        faults,
        ..SimConfig::default()
    }
}

fn slow(text: &str) -> Faults {
    Faults {
        slow: vec![SlowCompute::parse(text).unwrap()],
        ..Faults::default()
    }
}

fn link(text: &str) -> Faults {
    Faults {
        slow_links: vec![SlowLink::parse(text).unwrap()],
        ..Faults::default()
    }
}

fn step(job: &JobSpec, c: &SimConfig) -> u64 {
    simulate(job, c).unwrap().summary.iteration_time_ns
}

#[test]
fn a_compute_bound_dp_job_with_one_rank_slowed_s_times_runs_s_times_slower() {
    // 8 DP ranks, one stage, a tiny gradient all-reduce: the step waits for
    // the slowest rank at the all-reduce.
    let job = per_rank(parallel(1, 8, 1), 4, block(1_000_000, 0, 1024));
    let base = step(&job, &SimConfig::default());
    for s in [1.1, 1.5, 2.0] {
        let t = step(&job, &with(slow(&format!("3:{s}"))));
        let ratio = t as f64 / base as f64;
        assert!((ratio - s).abs() < 0.01 * s, "x{s}: {ratio}");
    }
}

#[test]
fn a_uniform_pipelines_slowed_stage_costs_what_the_closed_form_says() {
    // 1F1B over p uniform stages (forward F, backward 2F per micro-batch),
    // no communication, stage k slowed s times. Stage k runs its p - k
    // warm-up and first steady forwards, then waits for micro-batch 0's
    // backward (through the faster stages after it) unless its own
    // forwards take longer; from there it is the bottleneck and runs
    // without a gap: m backwards and its remaining m - (p - k) forwards;
    // the stages before it then run the last backward. (With s >= 1.5, or
    // on the last stage, its backwards in the cool-down are at least as
    // long as a micro-batch's round trip through the later stages, so it
    // never waits there; below that the cool-down adds waits this form
    // leaves out.)
    let f = 1000.0f64;
    for (p, m, k, s) in [
        (4u32, 8u32, 1u32, 1.5f64),
        (4, 16, 2, 2.0),
        (8, 8, 7, 1.2),
        (8, 12, 3, 1.5),
        (4, 8, 0, 3.0),
    ] {
        let job = spmd(parallel(1, 1, p), m, block(f as u64, 0, 0));
        let c = SimConfig {
            schedule: ScheduleKind::OneFOneB,
            ..with(slow(&format!("stage{k}:{s}")))
        };
        let t = step(&job, &c) as f64;
        let (p, m, k) = (f64::from(p), f64::from(m), f64::from(k));
        let first_backward = (k * f + (p - k) * s * f).max(k * f + s * f + 3.0 * (p - k - 1.0) * f);
        let closed = first_backward + 2.0 * m * s * f + (m - (p - k)) * s * f + 2.0 * k * f;
        let err = (t - closed).abs() / closed;
        assert!(err < 0.001, "p {p} m {m} stage {k} x{s}: {t} vs {closed}");
    }
}

#[test]
fn a_slow_link_slows_only_the_collectives_that_cross_it() {
    // TP 2 x DP 2 on one node: ranks 0-1 and 2-3 are TP groups, 0-2 and
    // 1-3 DP groups.
    let job = spmd(parallel(2, 2, 1), 2, block(100_000, 64 << 20, 64 << 20));
    let base = simulate(&job, &SimConfig::default()).unwrap().summary;
    let tp = simulate(&job, &with(link("0-1:4"))).unwrap().summary;
    let dp = simulate(&job, &with(link("0-2:4"))).unwrap().summary;
    let none = simulate(&job, &with(link("0-3:4"))).unwrap().summary;
    assert!(tp.exposed_comm_ns.tp > base.exposed_comm_ns.tp);
    assert_eq!(tp.exposed_comm_ns.dp, base.exposed_comm_ns.dp);
    assert!(dp.exposed_comm_ns.dp > base.exposed_comm_ns.dp);
    assert_eq!(dp.exposed_comm_ns.tp, base.exposed_comm_ns.tp);
    // 0 and 3 share no group: nothing crosses that link.
    assert_eq!(none.iteration_time_ns, base.iteration_time_ns);
}

#[test]
fn a_slow_nic_slows_what_leaves_the_node() {
    // DP 4 over 2 nodes of 2 GPUs: the DP all-reduce crosses the NICs.
    let job = per_rank(parallel(1, 4, 1), 2, block(100_000, 0, 256 << 20));
    let mut c = SimConfig::default();
    c.network.gpus_per_node = 2;
    let base = simulate(&job, &c).unwrap().summary;
    c.faults = link("node1:3");
    let slowed = simulate(&job, &c).unwrap().summary;
    assert!(slowed.exposed_comm_ns.dp > base.exposed_comm_ns.dp);
    assert_eq!(slowed.compute_ns, base.compute_ns);
}

#[test]
fn jitter_is_deterministic_under_its_seed() {
    let job = per_rank(parallel(1, 4, 2), 8, block(100_000, 0, 1 << 20));
    let j = |seed| {
        with(Faults {
            jitter: Some(Jitter::new(10.0, seed).unwrap()),
            ..Faults::default()
        })
    };
    let a = simulate(&job, &j(7)).unwrap();
    let b = simulate(&job, &j(7)).unwrap();
    let c = simulate(&job, &j(8)).unwrap();
    assert_eq!(a.summary, b.summary);
    assert_ne!(a.summary.iteration_time_ns, c.summary.iteration_time_ns);
    // The same draws in a summary-only run.
    let mut so = j(7);
    so.summary_only = true;
    assert_eq!(
        simulate(&job, &so).unwrap().summary.iteration_time_ns,
        a.summary.iteration_time_ns
    );
}

#[test]
fn faults_outside_the_job_are_refused_with_the_range() {
    let job = spmd(parallel(1, 2, 2), 2, block(1000, 0, 0));
    for (f, says) in [
        (slow("9:2"), "rank 9 is not in this job (ranks 0 to 3)"),
        (slow("stage5:2"), "stage 5 is not in this job"),
        (slow("node3:2"), "node 3 is not in this job"),
        (link("0-9:2"), "rank 9 is not in this job"),
    ] {
        let e = simulate(&job, &with(f)).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    // A per-rank replay refuses a rank it does not simulate.
    let mut pr = per_rank(parallel(1, 2, 2), 2, block(1000, 0, 0));
    pr.programs.retain(|p| p.rank != 2);
    pr.programs[0].rank = 0;
    let e = simulate(&pr, &with(slow("2:2"))).unwrap_err().to_string();
    assert!(e.contains("not simulated"), "{e}");
}

#[test]
fn blame_names_the_slowed_rank_and_its_shares_are_bounded() {
    let job = per_rank(parallel(1, 4, 2), 8, block(100_000, 0, 1 << 20));
    let mut f = slow("1:1.5");
    f.slow.push(SlowCompute::parse("6:1.2").unwrap());
    let c = with(f);
    let r = whatif::injected(&job, &c, &*cost(&job, &c)).unwrap();
    assert!(r.slowdown > 1.0);
    assert_eq!(r.injected, ["--slow 1:1.5", "--slow 6:1.2"]);
    for b in &r.blame {
        assert!(
            (0.0..=r.slowdown - 1.0 + 1e-12).contains(&b.share),
            "{b:?} S {}",
            r.slowdown
        );
    }
    let top = &r.blame[0];
    assert!(
        (top.by == BlameBy::Rank && top.name == "rank 1")
            || (top.by == BlameBy::Stage && top.name == "stage 0")
            || (top.by == BlameBy::Group),
        "{:?}",
        r.blame
    );
    let rank1 = r.blame.iter().find(|b| b.name == "rank 1").unwrap();
    let rank6 = r.blame.iter().find(|b| b.name == "rank 6").unwrap();
    assert!(rank1.share >= rank6.share, "{:?}", r.blame);
}

#[test]
fn a_measured_replays_blame_finds_its_straggler() {
    let mut job = per_rank(parallel(1, 4, 2), 8, block(100_000, 0, 1 << 20));
    // Rank 5's compute measured 40% slower than its peers.
    for l in &mut job.programs[5].blocks[0].layers {
        l.forward.compute_ns = 140_000;
        l.input_grad.compute_ns = 140_000;
        l.weight_grad.compute_ns = 140_000;
    }
    let c = SimConfig::default();
    let r = whatif::measured(&job, &c, &*cost(&job, &c)).unwrap();
    assert_eq!(r.ideal, "mean compute per op");
    assert!(r.slowdown > 1.2, "{}", r.slowdown);
    let rank = r.blame.iter().find(|b| b.by == BlameBy::Rank).unwrap();
    assert_eq!(rank.name, "rank 5");
    for b in &r.blame {
        assert!((0.0..=r.slowdown - 1.0 + 1e-12).contains(&b.share), "{b:?}");
    }
}

#[test]
fn a_described_jobs_sensitivity_covers_every_stage() {
    let job = spmd(parallel(2, 2, 4), 8, block(100_000, 1 << 20, 1 << 20));
    let c = SimConfig::default();
    let (base, table, runs) = whatif::sensitivity(&job, &c, &*cost(&job, &c), 1.2).unwrap();
    assert_eq!(base, step(&job, &c));
    assert_eq!(table.len(), 4);
    assert_eq!(runs, 5);
    for s in &table {
        assert!(s.cost_percent > 0.0, "{s:?}");
        assert!(s.cost_percent <= 20.0 + 1e-9, "{s:?}");
    }
}

fn cost(job: &JobSpec, c: &SimConfig) -> Box<dyn trainscope_core::engine::network::CollectiveCost> {
    trainscope_core::engine::simai_cost::cost_for(job.parallel, c, None).unwrap()
}

/// A random small per-rank job: stages, DP, micro-batches, compute time.
fn small_job() -> impl Strategy<Value = JobSpec> {
    (1u32..=3, 1u32..=3, 1u32..=6, 1_000u64..200_000, 0u64..4).prop_map(|(pp, dp, m, f, comm)| {
        let m = m.max(pp);
        per_rank(parallel(1, dp, pp), m, block(f, 0, comm << 20))
    })
}

proptest! {
    #![proptest_config(proptest_config(48))]

    #[test]
    fn no_slow_down_without_injection_and_monotone_in_the_factor(
        job in small_job(),
        rank_pick in 0u32..64,
        a in 1.0f64..3.0,
        b in 1.0f64..3.0,
    ) {
        let world = job.parallel.world() as u32;
        let rank = rank_pick % world;
        let base = step(&job, &SimConfig::default());
        // A factor of 1 changes nothing.
        prop_assert_eq!(step(&job, &with(slow(&format!("{rank}:1")))), base);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let t_lo = step(&job, &with(slow(&format!("{rank}:{lo}"))));
        let t_hi = step(&job, &with(slow(&format!("{rank}:{hi}"))));
        prop_assert!(base <= t_lo, "base {} > {}", base, t_lo);
        prop_assert!(t_lo <= t_hi, "x{} {} > x{} {}", lo, t_lo, hi, t_hi);
    }

    #[test]
    fn a_slow_down_window_is_the_permanent_one_over_the_run_nothing_after_it_and_monotone(
        job in small_job(),
        rank_pick in 0u32..64,
        factor in 1.0f64..3.0,
        onset_pick in 0u64..1000,
        d1 in 1u64..1000,
        d2 in 1u64..1000,
    ) {
        let world = job.parallel.world() as u32;
        let rank = rank_pick % world;
        let base = step(&job, &SimConfig::default());
        let permanent = step(&job, &with(slow(&format!("{rank}:{factor}"))));
        // A window covering the whole iteration: exactly the permanent one.
        let whole = format!("{rank}:{factor}@0ns+{}ns", permanent + 1);
        prop_assert_eq!(step(&job, &with(slow(&whole))), permanent);
        // A window the iteration never reaches changes nothing.
        let after = format!("{rank}:{factor}@{base}ns+1s");
        prop_assert_eq!(step(&job, &with(slow(&after))), base);
        // Longer windows from one onset cost at least as much, and between
        // none and the permanent slow-down.
        let onset = onset_pick * base / 1000;
        let (lo, hi) = if d1 <= d2 { (d1, d2) } else { (d2, d1) };
        let at = |d: u64| {
            let len = (d * permanent / 1000).max(1);
            step(&job, &with(slow(&format!("{rank}:{factor}@{onset}ns+{len}ns"))))
        };
        let (t_lo, t_hi) = (at(lo), at(hi));
        prop_assert!(base <= t_lo, "base {} > {}", base, t_lo);
        prop_assert!(t_lo <= t_hi, "{} {} > {} {}", lo, t_lo, hi, t_hi);
        prop_assert!(t_hi <= permanent, "{} > permanent {}", t_hi, permanent);
    }
}

#[test]
fn a_window_over_one_iteration_of_three_slows_that_iteration_only() {
    let job = per_rank(parallel(1, 4, 2), 8, block(100_000, 0, 1 << 20));
    let base = step(&job, &SimConfig::default());
    let permanent = step(&job, &with(slow("5:1.5")));
    assert!(permanent > base);
    // After one iteration, for one: the run is three iterations (the last
    // after the window), the middle one as slow as the permanent fault.
    for text in [
        "5:1.5@iter1+1".to_string(),
        format!("5:1.5@{base}ns+{permanent}ns"),
    ] {
        let c = with(slow(&text));
        let r = whatif::injected(&job, &c, &*cost(&job, &c)).unwrap();
        assert_eq!(r.iteration_times_ns, [base, permanent, base], "{text}");
        assert_eq!(r.injected, [format!("--slow {text}")]);
        assert_eq!(r.baseline_iteration_time_ns, base);
        assert_eq!(r.iteration_time_ns, (2 * base + permanent) / 3);
        let s = (2 * base + permanent) as f64 / (3 * base) as f64;
        assert!((r.slowdown - s).abs() < 1e-12, "{} vs {s}", r.slowdown);
    }
    // A window over half of the middle iteration costs less than all of it.
    let c = with(slow(&format!("5:1.5@{base}ns+{}ns", base / 2)));
    let r = whatif::injected(&job, &c, &*cost(&job, &c)).unwrap();
    assert_eq!(r.iteration_times_ns.len(), 3, "{:?}", r.iteration_times_ns);
    assert_eq!(r.iteration_times_ns[0], base);
    assert!(base < r.iteration_times_ns[1] && r.iteration_times_ns[1] < permanent);
    assert_eq!(r.iteration_times_ns[2], base);
    // Without a window: no iteration times, one iteration as before.
    let c = with(slow("5:1.5"));
    let r = whatif::injected(&job, &c, &*cost(&job, &c)).unwrap();
    assert!(r.iteration_times_ns.is_empty());
    assert_eq!(r.iteration_time_ns, permanent);
}

#[test]
fn the_bytedance_st_trace_slows_down_about_as_published_and_blames_its_last_stage() {
    // ByteDance-Seed/StragglerAnalysis's trace ST (tests/fixtures/straggler):
    // published S = 1.1787 (the mean over its 32 steps, launch delays
    // removed, ideal = mean per op type); this is one step, replayed with
    // its host gaps, against the mean of each compute piece over the ranks.
    let dir = trainscope_tests::fixture("straggler/st-step23");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .filter(|(n, _)| n.ends_with(".txt"))
        .collect();
    files.sort();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let options = trainscope_core::run::RunOptions {
        blame: Some(whatif::DEFAULT_SENSITIVITY_FACTOR),
        ..Default::default()
    };
    let out = trainscope_core::run::run_files(&refs, &SimConfig::default(), &options).unwrap();
    let w = out.whatif.unwrap();
    assert_eq!(w.ideal, "mean compute per op");
    let err = (w.slowdown - 1.1787).abs() / 1.1787;
    assert!(err < 0.06, "S {} vs 1.1787", w.slowdown);
    let stage = w.blame.iter().find(|b| b.by == BlameBy::Stage).unwrap();
    assert_eq!(stage.name, "stage 3", "{:?}", w.blame);
}
