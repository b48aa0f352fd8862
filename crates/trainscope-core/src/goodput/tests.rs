//! Tests of the whole-run planner: the formulas against hand-computed and
//! published values (Daly 2006, Young 1974, Meta's reliability study), the
//! Monte-Carlo against the closed form, determinism, refused inputs, and the
//! validation table the README shows (printed; run with `--nocapture`).

use super::formulas::*;
use super::presets::{preset, PRESETS};
use super::*;

const MIN: f64 = 60.0;
const HOUR: f64 = 3600.0;

/// A small job: 1 s iterations, 64 GPUs on 8 nodes, a checkpoint time
/// given directly.
fn small(steps: u64, per_1000_node_days: f64, write_s: f64, restart_s: f64) -> RunPlanInput {
    let mut i = RunPlanInput::new(1_000_000_000, Work::Steps(steps), 64, 8);
    i.failure_rate = FailureRate::Per1000NodeDays(per_1000_node_days);
    i.checkpoint_write_s = Some(write_s);
    i.restore_s = Some(write_s);
    i.restart_s = restart_s;
    i.detection_s = 60.0;
    i.seed = 7;
    i
}

#[test]
fn daly_reproduces_his_own_examples_to_the_minute() {
    // Daly 2006: checkpoint 5 min, restart 10 min (the restart does not
    // enter the optimum).
    let d = 5.0 * MIN;
    assert_eq!((daly_interval_s(d, 24.0 * HOUR) / MIN).round(), 117.0);
    assert_eq!((daly_interval_s(d, 6.0 * HOUR) / MIN).round(), 57.0);
    assert_eq!(
        (daly_interval_s(d, 15.0 * MIN) / MIN * 10.0).round() / 10.0,
        9.1
    );
    // d >= 2M: the MTTF itself.
    assert_eq!(daly_interval_s(10.0, 5.0), 5.0);
}

#[test]
fn young_hand_values() {
    // sqrt(2 x 300 x 86400) = sqrt(51,840,000) = 7200.
    assert!((young_interval_s(300.0, 86_400.0) - 7200.0).abs() < 1e-9);
    // sqrt(2 x 60 x 30000) = sqrt(3,600,000) = 1897.3666.
    assert!((young_interval_s(60.0, 30_000.0) - 1897.3666).abs() < 1e-4);
    // Daly's optimum lies below Young's for small d / M by about d.
    let (y, dl) = (
        young_interval_s(300.0, 86_400.0),
        daly_interval_s(300.0, 86_400.0),
    );
    assert!(dl < y && y - dl < 300.0);
}

#[test]
fn renewal_model_hand_values() {
    // x = 1 h, d = 60 s, r = 600 s, MTTF 10 h: 3600 / ((e^0.1016667 - 1)
    // (36000 + 600)) = 0.919135.
    let ettr = renewal_ettr(3600.0, 60.0, 600.0, 1.0 / 36_000.0);
    assert!((ettr - 0.919_135).abs() < 1e-6, "{ettr}");
    // Without failures the limit is x / (x + d).
    let e = renewal_ettr(3600.0, 60.0, 600.0, 1e-12);
    assert!((e - 3600.0 / 3660.0).abs() < 1e-6, "{e}");
    // The lost time is the failures' time to failure.
    let s = segment(3600.0, 60.0, 600.0, 1.0 / 36_000.0);
    assert!((s.wall_s - (3660.0 + s.lost_s + s.failures * 600.0)).abs() < 1e-6);
}

#[test]
fn job_rate_and_spares() {
    // 10 failures per 1000 node-days on 100 nodes: one a day.
    assert!((job_rate_per_s(10.0, 100) * DAY_S - 1.0).abs() < 1e-12);
    assert_eq!(no_spare_probability(0, 1.0, 1.0), 1.0);
    // One spare: busy while at least one node is in repair, 1 - e^-a.
    let p = no_spare_probability(1, 1.0 / HOUR, 2.0 * HOUR);
    assert!((p - (1.0 - (-2.0f64).exp())).abs() < 1e-12);
    assert!(no_spare_probability(4, 1.0 / HOUR, 2.0 * HOUR) < p);
}

/// Meta's job MTTF at 6.5 failures per 1000 node-days (8 GPUs a node).
fn meta_mttf_hours(gpus: u32) -> f64 {
    1.0 / job_rate_per_s(6.5, gpus / 8) / HOUR
}

#[test]
fn meta_mttf_from_the_node_rate() {
    // Their projections at 16k and 131k GPUs follow from the rate (1.8 h
    // and 0.23 h published, within 3%).
    let h16k = meta_mttf_hours(16_384);
    let h131k = meta_mttf_hours(131_072);
    assert!((h16k / 1.8 - 1.0).abs() < 0.03, "{h16k}");
    assert!((h131k / 0.23 - 1.0).abs() < 0.03, "{h131k}");
    // Their 7.9 h at 1024 GPUs does not: the rate gives 28.8 h. Reported,
    // not fitted (the 1024-GPU figure is measured on their jobs, the
    // others projected).
    let h1k = meta_mttf_hours(1024);
    assert!((h1k - 28.8).abs() < 0.1, "{h1k}");
    assert!(h1k / 7.9 > 3.5);
}

#[test]
fn presets_derive_their_rates_from_their_counts() {
    let l = preset("Llama3-405B").unwrap();
    // 419 / (54 days x 2048 nodes) x 1000.
    assert!((l.per_1000_node_days() - 419.0 / (54.0 * 2048.0) * 1000.0).abs() < 1e-12);
    assert!((l.planned_per_1000_node_days() - 47.0 / (54.0 * 2048.0) * 1000.0).abs() < 1e-12);
    assert_eq!(preset("meta-rsc1").unwrap().per_1000_node_days(), 6.5);
    for p in PRESETS {
        assert!(
            p.per_1000_node_days() > 0.0 && !p.source.is_empty(),
            "{}",
            p.name
        );
    }
}

#[test]
fn closed_form_within_the_monte_carlo_spread_on_a_grid() {
    // 128 nodes, 11.6 ideal days: about 3, 30 and 300 failures a run.
    for rate in [2.0, 20.0, 200.0] {
        for write_s in [10.0, 120.0] {
            for restart_s in [60.0, 900.0] {
                for async_ckpt in [false, true] {
                    let mut i = small(1_000_000, rate, write_s, restart_s);
                    i.gpus = 1024;
                    i.async_checkpoint = async_ckpt;
                    i.async_blocking_s = Some(write_s / 10.0);
                    i.planned_per_1000_node_days = Some(rate / 10.0);
                    i.runs = 400;
                    let p = plan(&i).unwrap();
                    let d = p.days_to_train;
                    let what = format!(
                        "rate {rate} write {write_s} restart {restart_s} async {async_ckpt}: {d:?}"
                    );
                    assert!(d.p10 <= d.closed_form && d.closed_form <= d.p90, "{what}");
                    // The mean meets the expectation within 1% (400 runs).
                    assert!((d.mean / d.closed_form - 1.0).abs() < 0.01, "{what}");
                    let f = p.interruptions;
                    assert!(
                        (f.mean - f.closed_form).abs() <= 0.05 * f.closed_form + 0.5,
                        "{what}: {f:?}"
                    );
                    // Work + badput = wall, closed form and Monte-Carlo.
                    let work_s = p.ideal_days * DAY_S;
                    let closed = d.closed_form * DAY_S;
                    assert!(
                        ((work_s + p.badput.total_s()) / closed - 1.0).abs() < 1e-9,
                        "{what}"
                    );
                    let mc = d.mean * DAY_S;
                    assert!(
                        ((work_s + p.badput_monte_carlo.total_s()) / mc - 1.0).abs() < 1e-9,
                        "{what}"
                    );
                    assert!(p.ettr > 0.0 && p.ettr < 1.0);
                }
            }
        }
    }
}

#[test]
fn spares_shorten_recovery_and_agree_with_the_closed_form() {
    let mut i = small(100_000, 200.0, 30.0, 300.0);
    i.requeue_s = 4.0 * HOUR;
    let none = plan(&i).unwrap();
    i.warm_spares = 2;
    i.spare_repair_hours = 12.0;
    let two = plan(&i).unwrap();
    assert!(two.days_to_train.closed_form < none.days_to_train.closed_form);
    let d = two.days_to_train;
    assert!((d.mean / d.closed_form - 1.0).abs() < 0.02, "{d:?}");
}

#[test]
fn same_seed_same_plan() {
    let mut i = small(50_000, 500.0, 60.0, 600.0);
    i.runs = 200;
    assert_eq!(plan(&i).unwrap(), plan(&i).unwrap());
    let mut j = i.clone();
    j.seed = 8;
    assert_ne!(
        plan(&i).unwrap().days_to_train.p50,
        plan(&j).unwrap().days_to_train.p50
    );
}

#[test]
fn auto_interval_is_dalys_in_whole_iterations() {
    let mut i = small(1_000_000, 20.0, 60.0, 600.0);
    i.runs = 10;
    let p = plan(&i).unwrap();
    assert_eq!(p.interval_source, IntervalSource::Daly);
    assert!((p.checkpoint_interval_s - p.optimal_interval_s).abs() <= 0.5);
    let m = p.mttf_hours * HOUR;
    assert!((p.optimal_interval_s - daly_interval_s(60.0, m)).abs() < 1e-9);
    assert!((p.young_interval_s - young_interval_s(60.0, m)).abs() < 1e-9);
    // The optimum beats intervals on either side in the closed form.
    for k in [0.5, 2.0] {
        let mut j = i.clone();
        j.checkpoint_interval = Interval::Seconds(p.optimal_interval_s * k);
        assert!(plan(&j).unwrap().ettr < p.ettr);
    }
}

#[test]
fn checkpoint_time_from_size_and_bandwidth() {
    let mut i = small(1000, 20.0, 1.0, 0.0);
    i.checkpoint_write_s = None;
    i.restore_s = None;
    i.runs = 10;
    // 800 GB over 8 nodes x 5 GB/s = 20 s; a 20 GB/s storage caps it: 40 s.
    i.checkpoint_size_bytes = 800_000_000_000;
    i.write_bw_gbps_per_node = 5.0;
    assert!((plan(&i).unwrap().checkpoint_seconds - 20.0).abs() < 1e-9);
    i.write_bw_gbps_total = Some(20.0);
    let p = plan(&i).unwrap();
    assert!((p.checkpoint_seconds - 40.0).abs() < 1e-9);
    assert!((p.restore_seconds - 40.0).abs() < 1e-9);
    // Asynchronous: each GPU's 12.5 GB to host at 25 GB/s blocks 0.5 s.
    i.async_checkpoint = true;
    let a = plan(&i).unwrap();
    assert!((a.checkpoint_blocking_seconds - 0.5).abs() < 1e-9);
    assert!(a.ettr > p.ettr);
}

#[test]
fn bad_input_is_refused_with_a_hint() {
    let ok = small(1000, 20.0, 60.0, 600.0);
    let cases: Vec<(RunPlanInput, &str)> = vec![
        (
            {
                let mut i = ok.clone();
                i.failure_rate = FailureRate::Per1000NodeDays(-1.0);
                i
            },
            "failure_rate",
        ),
        (
            {
                let mut i = ok.clone();
                i.failure_rate = FailureRate::Per1000NodeDays(f64::NAN);
                i
            },
            "NaN",
        ),
        (
            {
                let mut i = ok.clone();
                i.failure_rate = FailureRate::JobMtbfHours(0.0);
                i
            },
            "job_mtbf_hours",
        ),
        (
            {
                let mut i = ok.clone();
                i.failure_rate = FailureRate::Preset("nope".into());
                i
            },
            "unknown failure preset",
        ),
        (
            {
                let mut i = ok.clone();
                i.planned_per_1000_node_days = Some(-2.0);
                i
            },
            "planned",
        ),
        (
            {
                let mut i = ok.clone();
                i.checkpoint_write_s = None;
                i.checkpoint_size_bytes = 1 << 30;
                i.write_bw_gbps_per_node = 0.0;
                i
            },
            "write_bw_gbps_per_node",
        ),
        (
            {
                let mut i = ok.clone();
                i.write_bw_gbps_total = Some(0.0);
                i
            },
            "write_bw_gbps_total",
        ),
        (
            {
                let mut i = ok.clone();
                i.checkpoint_interval = Interval::Seconds(30.0);
                i
            },
            "shorter than the checkpoint",
        ),
        (
            {
                let mut i = ok.clone();
                i.checkpoint_size_bytes = 10;
                i.job_memory_bytes = Some(5);
                i
            },
            "larger than the job's memory",
        ),
        (
            {
                let mut i = ok.clone();
                i.work = Work::Steps(0);
                i
            },
            "steps",
        ),
        (
            {
                let mut i = ok.clone();
                i.restart_s = -1.0;
                i
            },
            "restart_s",
        ),
        (
            {
                let mut i = ok.clone();
                i.iteration_time_ns = 0;
                i
            },
            "iteration_time_ns",
        ),
        (
            {
                let mut i = ok.clone();
                i.runs = MAX_RUNS + 1;
                i
            },
            "runs",
        ),
        (
            {
                let mut i = ok.clone();
                i.work = Work::Steps(1 << 40);
                i.runs = MAX_RUNS;
                i
            },
            "Monte-Carlo",
        ),
    ];
    for (input, needle) in cases {
        let e = plan(&input).expect_err(needle);
        let text = e.to_diagnostic().render();
        assert!(text.contains(needle), "{needle}: {text}");
        assert!(!e.hint().is_empty());
    }
}

/// The closed-form wall time of `work_s` with Daly's interval.
fn closed_wall_s(work_s: f64, d: f64, r: f64, lambda: f64) -> (f64, f64) {
    let t = daly_interval_s(d, 1.0 / lambda).min(work_s);
    let s = segment(t, d, r, lambda);
    let n = work_s / t;
    (n * s.wall_s, n * s.failures)
}

/// Bisection for the x in [lo, hi] where f crosses 0 (f increasing).
fn solve(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (lo, hi);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The validation table of the README: printed (`cargo test -p
/// trainscope-core goodput::tests::validation_table -- --nocapture`);
/// asserts the Daly and Meta figures only.
#[test]
fn validation_table() {
    let mut out = String::from("Daly 2006 (checkpoint 5 min, restart 10 min): optimum interval\n");
    for (m, published) in [
        (24.0 * HOUR, "117 min"),
        (6.0 * HOUR, "57 min"),
        (15.0 * MIN, "9.1 min"),
    ] {
        let t = daly_interval_s(5.0 * MIN, m) / MIN;
        out += &format!(
            "  MTBF {:>6.2} h  published {published:>8}  computed {t:>6.1} min  (Young {:>6.1} min)\n",
            m / HOUR,
            young_interval_s(5.0 * MIN, m) / MIN
        );
    }
    assert_eq!(
        (daly_interval_s(5.0 * MIN, 24.0 * HOUR) / MIN).round(),
        117.0
    );

    out += "\nMeta (arXiv 2410.21680), 6.5 failures per 1000 node-days, 8 GPUs a node: job MTTF\n";
    for (gpus, published) in [(1024, 7.9), (16_384, 1.8), (131_072, 0.23)] {
        let h = meta_mttf_hours(gpus);
        out +=
            &format!(
            "  {gpus:>7} GPUs  published {published:>5} h  from the rate {h:>6.2} h  ({:+.0}%){}\n",
            (h / published - 1.0) * 100.0,
            if (h / published - 1.0).abs() > 0.1 { "  <- their numbers disagree" } else { "" }
        );
    }
    assert!((meta_mttf_hours(16_384) / 1.8 - 1.0).abs() < 0.03);

    let llama = preset("llama3-405b").unwrap();
    let lambda = job_rate_per_s(llama.per_1000_node_days(), 2048);
    out += &format!(
        "\nLlama 3 405B (arXiv 2407.21783, 3.3.4): 419 unexpected interruptions in 54 days on 16,384 GPUs\n  -> {:.2} per 1000 node-days, job MTTF {:.2} h; ETTR (renewal model, Daly's interval) by\n  blocking checkpoint time (rows) and cost per failure, detection + restart + restore (columns):\n  {:>8}",
        llama.per_1000_node_days(),
        1.0 / lambda / HOUR,
        ""
    );
    let costs = [2.0 * MIN, 5.0 * MIN, 10.0 * MIN, 20.0 * MIN, 30.0 * MIN];
    for r in costs {
        out += &format!("{:>9}", format!("{:.0} min", r / MIN));
    }
    out += "   largest cost for ETTR >= 0.90\n";
    for d in [5.0, 30.0, MIN, 2.0 * MIN, 5.0 * MIN] {
        out += &format!("  {:>8}", format!("{d:.0} s"));
        for r in costs {
            let t = daly_interval_s(d, 1.0 / lambda);
            let e = renewal_ettr(t, d, r, lambda);
            out += &format!("{:>8.3}{}", e, if e >= 0.9 { "*" } else { " " });
        }
        let t = daly_interval_s(d, 1.0 / lambda);
        let r90 = solve(0.0, 10.0 * HOUR, |r| 0.9 - renewal_ettr(t, d, r, lambda));
        out += &if renewal_ettr(t, d, 0.0, lambda) < 0.9 {
            "   none".to_string()
        } else {
            format!("   {:.1} min", r90 / MIN)
        };
        out += "\n";
    }
    out += "  (* >= 0.90, the paper's \"higher than 90% effective training time\"; its 47 planned\n  interruptions cost a restart each on top)\n";

    // OPT-175B: ~33 ideal days, ~56 wall days, ~90 restarts.
    let (ideal, wall, restarts) = (33.0 * DAY_S, 56.0 * DAY_S, 90.0);
    out += &format!(
        "\nOPT-175B (metaseq chronicles): ~33 ideal days, ~56 wall days, ~90 restarts\n  -> {:.1} h lost per restart in all (lost work, detection, restart, re-queue)\n  the renewal model (Daly's interval) reproducing 90 failures and 56 days needs a cost per\n  failure of:\n",
        (wall - ideal) / restarts / HOUR
    );
    for d in [MIN, 5.0 * MIN, 15.0 * MIN] {
        // For each cost, the rate that gives 90 failures; the cost where
        // that run lasts 56 days.
        let rate_for = |r: f64| solve(1e-9, 1e-3, |l| closed_wall_s(ideal, d, r, l).1 - restarts);
        let r = solve(0.0, 2.0 * DAY_S, |r| {
            closed_wall_s(ideal, d, r, rate_for(r)).0 - wall
        });
        let l = rate_for(r);
        let t = daly_interval_s(d, 1.0 / l);
        out += &format!(
            "  checkpoint {:>4.0} min: {:.1} h per failure (interval {:.1} h, MTTF {:.1} h, lost work {:.1} h a failure)\n",
            d / MIN,
            r / HOUR,
            t / HOUR,
            1.0 / l / HOUR,
            segment(t, d, r, l).lost_s / segment(t, d, r, l).failures / HOUR
        );
    }
    println!("{out}");
}

#[test]
fn ettr_by_interval_meets_the_renewal_model_and_peaks_at_daly() {
    // A long run (10^7 one-second iterations), so the last, shorter
    // segment hardly counts: each point is the renewal model's ETTR.
    let mut i = small(10_000_000, 20.0, 60.0, 600.0);
    i.restore_s = Some(60.0);
    let base = plan(&i).expect("plan");
    let curve = curves::ettr_by_interval(&i, &base, 41, 8.0);
    assert!(curve.len() > 30, "{}", curve.len());
    let lambda = job_rate_per_s(20.0, 8);
    let r = 60.0 + 600.0 + 60.0;
    for p in &curve {
        let want = renewal_ettr(p.x, 60.0, r, lambda);
        assert!((p.ettr - want).abs() < 1e-4, "{p:?} vs {want}");
    }
    assert!(curve.windows(2).all(|w| w[0].x < w[1].x));
    // The best point of the curve is no better than Daly's interval
    // (within the renewal model's flatness near its optimum), and lies
    // within one grid step of it.
    let best = curve
        .iter()
        .copied()
        .max_by(|a, b| a.ettr.total_cmp(&b.ettr))
        .expect("points");
    assert!(best.ettr <= base.ettr + 1e-4, "{best:?} vs {}", base.ettr);
    let step = 8f64.powf(2.0 / 40.0);
    assert!(
        (best.x / base.checkpoint_interval_s).ln().abs() <= step.ln() + 1e-9,
        "{best:?} vs {}",
        base.checkpoint_interval_s
    );
    // Far from the optimum ETTR falls on both sides.
    assert!(curve[0].ettr < base.ettr && curve[curve.len() - 1].ettr < base.ettr);
    // Never an interval below the checkpoint write.
    assert!(curve[0].x >= 60.0);
}

#[test]
fn ettr_by_gpus_falls_with_size_at_the_node_rate() {
    let i = small(10_000_000, 20.0, 60.0, 600.0);
    let base = plan(&i).expect("plan");
    let sizes = curves::sizes_around(64, 8);
    assert_eq!(sizes, vec![8, 16, 32, 64, 128, 256, 512, 1024]);
    // A job smaller than a node keeps its own size on the curve.
    assert_eq!(curves::sizes_around(4, 8), vec![4, 8, 16, 32, 64]);
    let curve = curves::ettr_by_gpus(&i, &base, &sizes);
    assert_eq!(curve.len(), sizes.len());
    assert!(curve.windows(2).all(|w| w[1].ettr < w[0].ettr), "{curve:?}");
    // Each point: the renewal model at that size's rate and Daly's
    // interval (rounded to whole iterations), the same recovery.
    let r = 60.0 + 600.0 + 60.0;
    for p in &curve {
        let lambda = job_rate_per_s(20.0, (p.x / 8.0) as u32);
        let t = daly_interval_s(60.0, 1.0 / lambda).round();
        let want = renewal_ettr(t, 60.0, r, lambda);
        assert!((p.ettr - want).abs() < 1e-4, "{p:?} vs {want}");
    }
    // The point at the plan's own size is the plan's ETTR.
    let own = curve.iter().find(|p| p.x == 64.0).expect("64");
    assert!((own.ettr - base.ettr).abs() < 1e-12);
    // A job MTBF becomes the per-node rate it implies at the plan's size.
    let mut m = i.clone();
    m.failure_rate = FailureRate::JobMtbfHours(1000.0 / 20.0 * 24.0 / 8.0);
    let mb = plan(&m).expect("plan");
    let mc = curves::ettr_by_gpus(&m, &mb, &sizes);
    for (a, b) in curve.iter().zip(&mc) {
        assert!((a.ettr - b.ettr).abs() < 1e-9, "{a:?} {b:?}");
    }
}

#[test]
fn the_traced_run_is_the_first_drawn_run() {
    let mut i = small(200_000, 200.0, 60.0, 600.0);
    let (p, t) = plan_with_trace(&i).expect("plan");
    // Tracing changes nothing.
    assert_eq!(p, plan(&i).expect("plan"));
    // Its course: from (0, 0) to (wall, all the work), never back in wall
    // time, the work never above the total; three points per failure.
    assert_eq!(t.points[0], (0.0, 0.0));
    let (end_wall, end_work) = *t.points.last().expect("points");
    assert!((end_work - 200_000.0).abs() < 1e-6, "{end_work}");
    assert!(t.points.windows(2).all(|w| w[1].0 >= w[0].0));
    assert!(t.points.iter().all(|q| q.1 <= 200_000.0 + 1e-6));
    assert_eq!(t.points.len(), 2 + 3 * t.failures_s.len());
    assert!(!t.failures_s.is_empty());
    // With one run, the plan's spread is that run: its wall time.
    i.runs = 1;
    let (one, t1) = plan_with_trace(&i).expect("plan");
    assert_eq!(t1, t);
    assert!((one.days_to_train.p50 * formulas::DAY_S - end_wall).abs() < 1e-6);
    assert_eq!(one.interruptions.p50, t.failures_s.len() as f64);
}

#[test]
fn checkpoint_size_is_weights_and_optimizer_once() {
    use crate::hardware::Precision;
    // bf16: 2 bytes of weights + 12 of fp32 main weights and two moments.
    assert_eq!(
        job_facts::checkpoint_size_bytes(1_000, Precision::Bf16, false),
        14_000
    );
    // bf16 gradients: 16 bytes of optimizer state per parameter.
    assert_eq!(
        job_facts::checkpoint_size_bytes(1_000, Precision::Bf16, true),
        18_000
    );
}

#[test]
fn durations_read_in_the_unit_people_use() {
    use super::duration_text;
    assert_eq!(duration_text(90.0), "90.0 s");
    assert_eq!(duration_text(600.0), "10.0 min");
    assert_eq!(duration_text(3.0 * 3600.0), "3.00 h");
    assert_eq!(duration_text(4.0 * 86_400.0), "4.00 days");
    assert_eq!(duration_text(f64::NAN), "—");
}
