//! Replay of PyTorch profiler (Kineto) traces on generated multi-rank jobs
//! (`trainscope_tests::kineto_gen`): the simulated step meets the measured
//! one within 5 % (uncalibrated), with and without a slowed rank, on the
//! last and on an earlier `ProfilerStep`; a set holding only some ranks is
//! simulated as those ranks and says so; a what-if on the network changes
//! the result; the measured timeline has one lane per CUDA stream; slowing
//! a rank (`RunOptions::slow_rank`) lengthens the step when it is the
//! straggler and not when a little slowdown of another rank stays hidden
//! by the straggler's lateness; the run carries the analysis naming the
//! straggler; a set parsed one file at a time (`SetLoader`,
//! `load_from_set`) gives the same set and the same run as all at once.

use trainscope_core::replay::infer::NetworkOverrides;
use trainscope_core::run::{convert_files, SlowRank};
use trainscope_core::{
    engine::SimConfig,
    run::{run_files, RunOptions, RunOutput},
};
use trainscope_tests::kineto_gen::KinetoJob;

fn run(files: &[(String, String)], options: &RunOptions) -> RunOutput {
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_bytes()))
        .collect();
    run_files(&refs, &SimConfig::default(), options).unwrap()
}

#[test]
fn replay_meets_the_measured_step_within_5_percent() {
    for job in [
        KinetoJob::default(),
        KinetoJob {
            seed: 3,
            world: 8,
            layers: 6,
            slow_rank: Some((5, 30)),
            ..KinetoJob::default()
        },
    ] {
        for iteration in [None, Some(job.first_step)] {
            let out = run(
                &job.generate(),
                &RunOptions {
                    iteration,
                    ..RunOptions::default()
                },
            );
            let facts = job.expected();
            let step = iteration.unwrap_or(job.first_step + job.steps - 1);
            let idx = (step - job.first_step) as usize;
            let start = facts.iter().map(|r| r[idx].start_ns).min().unwrap();
            let end = facts.iter().map(|r| r[idx].end_ns).max().unwrap();
            assert_eq!(out.measured_iteration_time_ns(), Some(end - start));
            let cmp = out.comparison.as_ref().unwrap();
            assert!(
                cmp.error_percent.abs() < 5.0,
                "{job:?} step {step}: {:.2}%",
                cmp.error_percent
            );
            assert_eq!(out.report_json()["format"], "kineto-trace");
        }
    }
}

#[test]
fn partial_set_is_simulated_as_its_ranks() {
    let job = KinetoJob::default();
    let files = job.generate();
    let out = run(&files[..2], &RunOptions::default());
    let warnings = out.report_json()["warnings"].to_string();
    assert!(
        warnings.contains("the set holds 2 of 4 ranks"),
        "{warnings}"
    );
    assert!(out.measured_iteration_time_ns().is_some());
}

#[test]
fn a_slower_network_is_a_what_if() {
    let job = KinetoJob {
        world: 16,
        ..KinetoJob::default()
    };
    let files = job.generate();
    let base = run(&files, &RunOptions::default());
    let config_slow = RunOptions {
        network_overrides: NetworkOverrides {
            nic_gbps: true,
            nvlink_gbps: true,
            ..NetworkOverrides::default()
        },
        ..RunOptions::default()
    };
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_bytes()))
        .collect();
    let mut config = SimConfig::default();
    config.network.nic_gbps = 1.0;
    config.network.nvlink_gbps = 1.0;
    let slow = run_files(&refs, &config, &config_slow).unwrap();
    assert!(
        slow.summary().iteration_time_ns > base.summary().iteration_time_ns,
        "{} vs {}",
        slow.summary().iteration_time_ns,
        base.summary().iteration_time_ns
    );
}

#[test]
fn measured_timeline_has_one_lane_per_cuda_stream() {
    let job = KinetoJob::default();
    let files = job.generate();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_bytes()))
        .collect();
    let out = convert_files(&refs, &RunOptions::default()).unwrap();
    let t = &out.timeline;
    let names: Vec<&str> = t.lanes().iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names.len(), 2 * job.world as usize, "{names:?}");
    assert_eq!(names[0], "rank 0 (stage 0) / stream 7");
    assert_eq!(names[1], "rank 0 (stage 0) / stream 20 (nccl)");
    // Every kept GPU op of the step is a span.
    let facts = job.expected();
    let spans: u64 = (0..t.lanes().len() as u32)
        .map(|l| t.spans(l).len() as u64)
        .sum();
    let want: u64 = facts
        .iter()
        .map(|r| {
            let f = r.last().unwrap();
            f.kernels + f.memcpy + f.memset + f.collectives
        })
        .sum();
    assert_eq!(spans, want);
}

#[test]
fn slowing_a_rank_is_a_what_if() {
    let job = KinetoJob {
        seed: 3,
        world: 8,
        layers: 6,
        slow_rank: Some((5, 30)),
        ..KinetoJob::default()
    };
    let files = job.generate();
    let base = run(&files, &RunOptions::default());
    let t0 = base.summary().iteration_time_ns;
    assert!(base.slow_rank.is_none());
    // The run's analysis names the generated straggler.
    let a = base.analysis.as_ref().expect("a Kineto run is analysed");
    assert_eq!(a.compute_straggler, Some(5));
    assert_eq!(a.ranks.len(), 8);
    let slowed = |rank: u32, percent: f64| {
        run(
            &files,
            &RunOptions {
                slow_rank: Some(SlowRank { rank, percent }),
                ..RunOptions::default()
            },
        )
    };
    // The straggler slowed further: the step grows, by less than its
    // whole compute's share.
    let more = slowed(5, 20.0);
    let r = more.slow_rank.as_ref().unwrap();
    assert_eq!(r.baseline_iteration_time_ns, t0);
    assert_eq!(r.iteration_time_ns, more.summary().iteration_time_ns);
    assert!(r.iteration_time_ns > t0, "{} vs {t0}", r.iteration_time_ns);
    assert!(
        r.iteration_time_ns < t0 + t0 / 5,
        "{} vs {t0}",
        r.iteration_time_ns
    );
    assert!(more.report_json()["slow_rank"]["difference_ns"].as_i64() > Some(0));
    // A rank that waits for the straggler anyway, slowed by 1 %: hidden.
    let hidden = slowed(2, 1.0);
    assert_eq!(hidden.summary().iteration_time_ns, t0);
    // The same rank slowed far past the straggler becomes the critical one.
    let past = slowed(2, 80.0);
    assert!(past.summary().iteration_time_ns > more.summary().iteration_time_ns);
    // Slowing is monotone in the percentage.
    let mut last = t0;
    for pct in [10.0, 40.0, 90.0] {
        let t = slowed(5, pct).summary().iteration_time_ns;
        assert!(t >= last, "{pct}%: {t} < {last}");
        last = t;
    }
    // A rank the replay does not simulate is refused.
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_bytes()))
        .collect();
    let err = run_files(
        &refs,
        &SimConfig::default(),
        &RunOptions {
            slow_rank: Some(SlowRank {
                rank: 8,
                percent: 10.0,
            }),
            ..RunOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.exit_code(), 4, "{err}");
    assert!(err.to_string().contains("rank 8"), "{err}");
}

#[test]
fn a_set_parsed_one_file_at_a_time_gives_the_same_run() {
    use trainscope_core::inspect::{load_set, SetLoader};
    use trainscope_core::run::{load_from_set, load_options, run_loaded};
    let job = KinetoJob::default();
    let files = job.generate();
    let options = RunOptions::default();
    // Each file's text is made, added and dropped before the next (as the
    // page's worker reads a dropped set), never all at once.
    let mut loader = SetLoader::new(options.format, &load_options(&options));
    let mut read = Vec::new();
    for (name, _) in &files {
        let text = job
            .generate()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1;
        loader.add(name, text.as_bytes(), &mut |done, total| {
            read.push((done, total))
        });
        assert_eq!(loader.summaries().last().unwrap().file, *name);
    }
    assert!(read.iter().all(|(done, total)| done <= total));
    let set = loader.finish();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_bytes()))
        .collect();
    assert_eq!(
        set,
        load_set(&refs, options.format, &load_options(&options))
    );
    let loaded = load_from_set(set, &options).unwrap();
    let out = run_loaded(&loaded, &SimConfig::default(), &options).unwrap();
    let want = run(&files, &options);
    assert_eq!(out.report_json(), want.report_json());
    assert_eq!(out.analysis, want.analysis);
}
