//! The host model of the engine (issue 24): each rank's host thread launches
//! its ops in program order ([`PhaseOps::launch_ns`]) ahead of the device,
//! a sync point ([`PhaseOps::host_sync`]) makes the host wait for the
//! device, and the summary says how long the device waited for launches
//! (`host_bound_ns`) and the host for the device (`sync_stall_ns`). Checked
//! against closed forms on toy jobs, and against today's results: with no
//! launch cost a job runs exactly as without a host model; described model
//! jobs with host lanes run the same with the engine's fast event queue as
//! with its reference queue. A bounded launch queue
//! ([`SimConfig::launch_queue_depth`]) holds the host back
//! (`launch_queue_wait_ns`) so that a sync point waits only for what is
//! still queued; unbounded, results equal today's exactly.

use trainscope_core::engine::spec::{Block, JobSpec, LayerSpec, Parallelism, PhaseOps};
use trainscope_core::engine::{simulate, ScheduleKind, SimConfig, SimResult};
use trainscope_core::timeline::{SpanKind, Stream};

const US: u64 = 1_000;

fn one_gpu() -> Parallelism {
    Parallelism {
        tp: 1,
        dp: 1,
        pp: 1,
        ep: 1,
        cp: 1,
        etp: None,
        dp_shard: 0,
    }
}

/// `n` forward-only rows of `compute_ns`, each launched in `launch_ns`;
/// row `sync_at` (if any) is a sync point.
fn rows(n: usize, compute_ns: u64, launch_ns: u64, sync_at: Option<usize>) -> Block {
    Block {
        layers: (0..n)
            .map(|i| LayerSpec {
                forward: PhaseOps {
                    compute_ns,
                    launch_ns,
                    host_sync: sync_at == Some(i),
                    ..PhaseOps::default()
                },
                ..LayerSpec::compute(&format!("op{i}"), compute_ns, 0, 0)
            })
            .collect(),
    }
}

fn run(job: &JobSpec) -> SimResult {
    simulate(job, &SimConfig::default()).expect("simulates")
}

#[test]
fn many_tiny_kernels_run_at_the_hosts_pace() {
    // 50 ops of 1 us, each 5 us to launch: the device waits for every launch.
    let job = JobSpec::spmd("tiny", one_gpu(), 1, 0, rows(50, US, 5 * US, None));
    let r = run(&job);
    assert_eq!(r.summary.iteration_time_ns, 50 * 5 * US + US);
    assert_eq!(r.summary.compute_ns, 50 * US);
    // Every idle nanosecond of the device is a wait for the host.
    assert_eq!(
        r.summary.host_bound_ns,
        r.summary.iteration_time_ns - r.summary.compute_ns
    );
    assert_eq!(r.summary.sync_stall_ns, 0);
}

#[test]
fn a_fast_host_hides_behind_the_device() {
    // 50 ops of 10 us launched in 1 us each: only the first launch shows.
    let job = JobSpec::spmd("big", one_gpu(), 1, 0, rows(50, 10 * US, US, None));
    let r = run(&job);
    assert_eq!(r.summary.iteration_time_ns, US + 50 * 10 * US);
    assert_eq!(r.summary.host_bound_ns, US);
}

#[test]
fn a_sync_point_drains_the_launch_queue() {
    // The host runs ahead (1 us per launch, 10 us per op) until op k, where
    // it waits for the device to finish op k-1; the device then waits one
    // launch for op k.
    let k = 20usize;
    let job = JobSpec::spmd("sync", one_gpu(), 1, 0, rows(50, 10 * US, US, Some(k)));
    let r = run(&job);
    assert_eq!(r.summary.iteration_time_ns, US + 50 * 10 * US + US);
    assert_eq!(r.summary.host_bound_ns, 2 * US);
    // Launched ops 0..k by k us; the device ends op k-1 at 1 + 10k us.
    let k = k as u64;
    assert_eq!(r.summary.sync_stall_ns, (1 + 10 * k - k) * US);
    // The sync launch is drawn as such, on the host lane.
    let t = &r.timeline;
    let host_lane = t
        .lanes()
        .iter()
        .position(|l| l.stream == Stream::Host)
        .expect("a host lane") as u32;
    let kinds: Vec<SpanKind> = t.spans(host_lane).iter().map(|s| s.kind).collect();
    assert_eq!(kinds.len(), 50);
    assert_eq!(
        kinds.iter().filter(|k| **k == SpanKind::HostSync).count(),
        1
    );
}

fn run_depth(job: &JobSpec, depth: Option<u32>) -> SimResult {
    let config = SimConfig {
        launch_queue_depth: depth,
        ..SimConfig::default()
    };
    simulate(job, &config).expect("simulates")
}

#[test]
fn a_bounded_launch_queue_keeps_the_host_near_the_device() {
    // The sync-point job with a queue of 4 launches: the host launches op
    // i once op i - 4 has ended, so at the sync point only three ops are
    // left to wait for; the device never waits longer than unbounded.
    let k = 20u64;
    let job = JobSpec::spmd(
        "queue",
        one_gpu(),
        1,
        0,
        rows(50, 10 * US, US, Some(k as usize)),
    );
    let unbounded = run_depth(&job, None);
    let r = run_depth(&job, Some(4));
    assert_eq!(
        r.summary.iteration_time_ns,
        unbounded.summary.iteration_time_ns
    );
    assert_eq!(r.summary.host_bound_ns, unbounded.summary.host_bound_ns);
    assert_eq!(unbounded.summary.launch_queue_wait_ns, 0);
    // The sync launch waits for op k-1 (ends 1 + 10k us) after the launch
    // of op k-1 ended (it started when op k-5 ended, 1 + 10(k-4) us).
    assert_eq!(
        r.summary.sync_stall_ns,
        (1 + 10 * k - (2 + 10 * (k - 4))) * US
    );
    assert!(r.summary.sync_stall_ns < unbounded.summary.sync_stall_ns);
    // The rest of the host's wait is for room in the queue: before the
    // sync, op 4 waits 7 us (op 0 ends at 11 us, launch 3 at 4 us) and ops
    // 5..k-1 9 us each; after it the same again from op k + 4 to op 49.
    let after = 49 - (k + 4);
    assert_eq!(
        r.summary.launch_queue_wait_ns,
        (7 + 9 * (k - 5) + 7 + 9 * after) * US
    );
    // A queue holding every launch is unbounded.
    let deep = run_depth(&job, Some(50));
    assert_eq!(deep.summary, unbounded.summary);
}

#[test]
fn a_one_launch_queue_makes_host_and_device_take_turns() {
    // Depth 1: the host launches op i only once op i-1 has ended, so every
    // op costs its launch plus its run.
    let job = JobSpec::spmd("turns", one_gpu(), 1, 0, rows(50, US, 5 * US, None));
    let r = run_depth(&job, Some(1));
    assert_eq!(r.summary.iteration_time_ns, 50 * (5 * US + US));
    assert_eq!(r.summary.sync_stall_ns, 0);
    assert_eq!(r.summary.launch_queue_wait_ns, 49 * US);
    // An op of more launches than the queue holds waits for an empty one.
    let mut big = rows(10, 10 * US, US, None);
    for l in &mut big.layers {
        l.forward.launches = 8;
    }
    let job = JobSpec::spmd("big", one_gpu(), 1, 0, big);
    let r = run_depth(&job, Some(4));
    assert_eq!(r.summary.iteration_time_ns, 10 * (US + 10 * US));
}

/// A pipeline job: 4 stages, 8 micro-batches, 3 layers of forward, input-
/// and weight-gradient compute.
fn pipeline(launch_ns: u64, host_sync: bool) -> JobSpec {
    let layer = |i: usize| {
        let ops = |c: u64| PhaseOps {
            compute_ns: c,
            launch_ns,
            host_sync,
            ..PhaseOps::default()
        };
        LayerSpec {
            forward: ops(100 * US + i as u64 * 7 * US),
            input_grad: ops(150 * US),
            weight_grad: ops(90 * US),
            ..LayerSpec::compute(&format!("layer{i}"), 0, 0, 0)
        }
    };
    JobSpec::spmd(
        "pipe",
        Parallelism { pp: 4, ..one_gpu() },
        8,
        1 << 20,
        Block {
            layers: (0..3).map(layer).collect(),
        },
    )
}

#[test]
fn without_launch_cost_results_equal_todays_exactly() {
    for schedule in [
        ScheduleKind::GPipe,
        ScheduleKind::OneFOneB,
        ScheduleKind::ZbH1,
    ] {
        let config = SimConfig {
            schedule,
            ..SimConfig::default()
        };
        let base = simulate(&pipeline(0, false), &config).expect("runs");
        // Sync points with free launches: the host waits for the device and
        // launches at once, so the device never waits.
        let synced = simulate(&pipeline(0, true), &config).expect("runs");
        assert_eq!(
            base.summary.iteration_time_ns, synced.summary.iteration_time_ns,
            "{schedule:?}"
        );
        assert_eq!(synced.summary.host_bound_ns, 0);
        let device_spans = |r: &SimResult| -> Vec<(u64, u64)> {
            let t = &r.timeline;
            (0..t.lanes().len() as u32)
                .filter(|&l| t.lanes()[l as usize].stream != Stream::Host)
                .flat_map(|l| t.spans(l).iter().map(|s| (s.start_ns, s.duration_ns)))
                .collect()
        };
        assert_eq!(device_spans(&base), device_spans(&synced));
        // No host model: five device lanes per stage, no host lane.
        assert_eq!(base.timeline.lanes().len(), 4 * 5);
        assert_eq!(synced.timeline.lanes().len(), 4 * 6);
    }
}

#[test]
fn an_unbounded_launch_queue_equals_todays_results_exactly() {
    // A queue deeper than all of an iteration's launches never holds the
    // host back: every task runs as with no bound at all (the engine
    // before the queue), with and without sync points.
    for schedule in [
        ScheduleKind::GPipe,
        ScheduleKind::OneFOneB,
        ScheduleKind::ZbH1,
    ] {
        for (launch_us, sync) in [(1, false), (40, false), (40, true)] {
            let job = pipeline(launch_us * US, sync);
            let config = SimConfig {
                schedule,
                ..SimConfig::default()
            };
            let today = simulate(&job, &config).expect("runs");
            let deep = simulate(
                &job,
                &SimConfig {
                    launch_queue_depth: Some(1 << 20),
                    ..config.clone()
                },
            )
            .expect("runs");
            assert_eq!(today.summary, deep.summary, "{schedule:?} {launch_us}");
            let spans = |r: &SimResult| -> Vec<(u64, u64)> {
                let t = &r.timeline;
                (0..t.lanes().len() as u32)
                    .flat_map(|l| t.spans(l).iter().map(|s| (s.start_ns, s.duration_ns)))
                    .collect()
            };
            assert_eq!(spans(&today), spans(&deep));
            // A shallow queue never speeds the job up.
            let shallow = simulate(
                &job,
                &SimConfig {
                    launch_queue_depth: Some(2),
                    ..config
                },
            )
            .expect("runs");
            assert!(shallow.summary.iteration_time_ns >= today.summary.iteration_time_ns);
        }
    }
}

#[test]
fn launch_cost_never_speeds_a_job_up() {
    let mut last = 0;
    for launch_us in [0, 1, 10, 50, 200] {
        let r = simulate(&pipeline(launch_us * US, false), &SimConfig::default()).expect("runs");
        assert!(r.summary.iteration_time_ns >= last, "launch {launch_us} us");
        last = r.summary.iteration_time_ns;
    }
}

/// Described model jobs (host launches and sync points from their
/// software stacks: Megatron-Core, eager PyTorch, CUDA graphs per layer,
/// the MoE dispatcher's sync, EP overlap's paired chains) run exactly as
/// the engine's reference event queue runs them
/// ([`Engine::with_reference_queue`]): every task's times and binding, the
/// counters and the summary, with a timeline and summary-only.
#[test]
fn model_jobs_with_host_lanes_run_as_the_reference_queue_runs_them() {
    use trainscope_core::engine::described::DescribedOptions;
    use trainscope_core::engine::event::Engine;
    use trainscope_core::engine::{build, simai_cost};
    use trainscope_core::hardware::gpu_preset;
    use trainscope_core::job::build::described_job;
    use trainscope_core::job::{ModelJob, TrainingSetup};
    use trainscope_core::model::presets::preset;
    use trainscope_core::model::stack::{CudaGraphs, Stack, StackSettings};

    let dense = |stack: StackSettings| TrainingSetup {
        tp: 2,
        pp: 4,
        global_batch_size: Some(32),
        seq_length: 2048,
        sequence_parallel: true,
        stack,
        ..TrainingSetup::default()
    };
    let moe = |stack: StackSettings, vpp: u32| TrainingSetup {
        pp: 2,
        vpp,
        ep: 4,
        micro_batch_size: 1,
        global_batch_size: Some(64),
        seq_length: 1024,
        stack,
        ..TrainingSetup::default()
    };
    let base = StackSettings::default();
    let cases = [
        ("llama3-8b", dense(base), 64),
        (
            "llama3-8b",
            dense(StackSettings {
                stack: Stack::PytorchEager,
                ..base
            }),
            64,
        ),
        (
            "qwen3-30b-a3b",
            moe(
                StackSettings {
                    moe_a2a_overlap: true,
                    ..base
                },
                2,
            ),
            32,
        ),
        // A shallow launch queue under EP overlap's paired chains.
        (
            "qwen3-30b-a3b",
            moe(
                StackSettings {
                    moe_a2a_overlap: true,
                    launch_queue_depth: Some(48),
                    ..base
                },
                1,
            ),
            32,
        ),
        (
            "qwen3-30b-a3b",
            moe(
                StackSettings {
                    cuda_graphs: CudaGraphs::Layers,
                    ..base
                },
                1,
            ),
            32,
        ),
    ];
    for (model, setup, world) in cases {
        let job = ModelJob::new(
            preset(model).unwrap(),
            setup.clone(),
            gpu_preset("H100-SXM").unwrap(),
            Some(world),
        )
        .expect("job");
        let spec =
            JobSpec::from_described(&described_job(&job, model), &DescribedOptions::default())
                .expect("spec");
        let mut config = SimConfig {
            overlap_forward_backward: setup.stack.moe_a2a_overlap,
            launch_queue_depth: setup.stack.queue_depth(),
            ..SimConfig::default()
        };
        if setup.vpp > 1 {
            config.schedule = ScheduleKind::Interleaved;
            config.virtual_stages = setup.vpp;
        }
        let lean = SimConfig {
            summary_only: true,
            ..config.clone()
        };
        for config in [&config, &lean] {
            let cost = simai_cost::cost_for(spec.parallel, config, None).unwrap();
            let run = |reference: bool| {
                let model = build::build(&spec, config, cost.as_ref()).unwrap();
                let mut engine = Engine::new(model.graph).unwrap();
                if reference {
                    engine = engine.with_reference_queue();
                }
                engine.run().unwrap();
                let (_, summary, _) = build::finish_all(&model.meta, &engine, config).unwrap();
                assert!(model.meta.host, "the job has host lanes");
                (engine.all_times().to_vec(), engine.stats(), summary)
            };
            let (fast, reference) = (run(false), run(true));
            assert_eq!(fast.0.len(), reference.0.len(), "{model}: tasks");
            let first_apart = (0..fast.0.len()).find(|&i| fast.0[i] != reference.0[i]);
            assert_eq!(
                first_apart, None,
                "{model}: the first task whose times differ"
            );
            assert_eq!(fast.1, reference.1, "{model}: counters");
            assert_eq!(fast.2, reference.2, "{model}: summary");
        }
    }
}
