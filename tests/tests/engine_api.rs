//! The simulation API: settings are validated with clear errors, the cost
//! function is pluggable (the SimAI-compatible one will be), explicit
//! per-rank inputs replay measured durations and step orders, collectives of
//! per-rank jobs wait for their slowest member, and the timeline answers
//! time-range queries.

use trainscope_core::engine::network::{CollectiveCost, CollectiveRequest, CostError};
use trainscope_core::engine::schedule::PipeStep;
use trainscope_core::engine::spec::{
    Block, CollectiveKind, CommSpec, GroupKind, JobMode, JobSpec, LayerSpec, Parallelism, PhaseOps,
    RankProgram,
};
use trainscope_core::engine::{Algorithm, ScheduleKind, SimConfig, SimError};
use trainscope_core::timeline::{SpanKind, Stream};

fn block(f: u64) -> Block {
    Block {
        layers: vec![LayerSpec::compute("l", f, f, f)],
    }
}

fn small() -> JobSpec {
    JobSpec::spmd(
        "small",
        Parallelism {
            tp: 1,
            dp: 1,
            pp: 2,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        },
        4,
        1024,
        block(100),
    )
}

#[test]
fn bad_settings_are_named() {
    let bad = |c: SimConfig| match trainscope_core::engine::simulate(&small(), &c) {
        Err(SimError::InvalidConfig { name, .. }) => name,
        other => panic!("expected an invalid setting, got {other:?}"),
    };
    assert_eq!(
        bad(SimConfig {
            virtual_stages: 0,
            ..SimConfig::default()
        }),
        "virtual_stages"
    );
    assert_eq!(
        bad(SimConfig {
            virtual_stages: 2,
            ..SimConfig::default()
        }),
        "virtual_stages"
    );
    assert_eq!(
        bad(SimConfig {
            micro_batches: Some(0),
            ..SimConfig::default()
        }),
        "micro_batches"
    );
    assert_eq!(
        bad(SimConfig {
            backward_factor: Some(f64::NAN),
            ..SimConfig::default()
        }),
        "backward_factor"
    );
    assert_eq!(
        bad(SimConfig {
            compute_scale: 0.0,
            ..SimConfig::default()
        }),
        "compute_scale"
    );
    let mut c = SimConfig::default();
    c.network.nic_gbps = -1.0;
    assert_eq!(bad(c), "nic_gbps");
    let mut c = SimConfig::default();
    c.network.gpus_per_node = 0;
    assert_eq!(bad(c), "gpus_per_node");
    let mut c = SimConfig::default();
    c.network.oversubscription = 0.5;
    assert_eq!(bad(c), "oversubscription");
    let mut c = SimConfig::default();
    assert!(c.network.set_latency_us(-3.0).is_err());
    c.network.set_latency_us(2.5).unwrap();
    assert_eq!(
        (c.network.nic_latency_ns, c.network.nvlink_latency_ns),
        (2_500, 500)
    );
}

#[test]
fn bad_jobs_are_errors_not_panics() {
    let mut j = small();
    j.programs.pop();
    assert!(matches!(
        trainscope_core::engine::simulate(&j, &SimConfig::default()),
        Err(SimError::InvalidJob(_))
    ));
    let mut j = small();
    j.programs[0].micro_batch_blocks = vec![5];
    assert!(matches!(
        trainscope_core::engine::simulate(&j, &SimConfig::default()),
        Err(SimError::InvalidJob(_))
    ));
    let mut j = small();
    j.parallel.ep = 3;
    assert!(matches!(
        trainscope_core::engine::simulate(&j, &SimConfig::default()),
        Err(SimError::InvalidJob(_))
    ));
    let j = JobSpec::spmd(
        "big",
        Parallelism {
            tp: 1,
            dp: 1,
            pp: 1,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        },
        1 << 20,
        0,
        Block {
            layers: (0..100)
                .map(|i| LayerSpec::compute(&format!("l{i}"), 1, 1, 1))
                .collect(),
        },
    );
    assert!(matches!(
        trainscope_core::engine::simulate(&j, &SimConfig::default()),
        Err(SimError::TooLarge(_))
    ));
}

#[test]
fn simai_algorithm_runs_through_simulate() {
    let c = SimConfig {
        algorithm: Algorithm::Simai,
        ..SimConfig::default()
    };
    let r = trainscope_core::engine::simulate(&small(), &c).unwrap();
    assert_eq!(r.summary.algorithm, "simai");
    assert!(r
        .summary
        .notes
        .iter()
        .any(|n| n.contains("SimAI-compatible")));
    // The built-in model alone still refuses it, pointing at SimaiCost.
    let e = trainscope_core::engine::NetworkModel::new(&c.network, Algorithm::Simai).unwrap_err();
    assert_eq!(e, SimError::CostModelUnavailable("simai"));
    assert!(e.hint().unwrap().contains("SimaiCost"));
}

/// A stand-in for the SimAI-compatible function: a fixed time per byte.
struct PerByte;

impl CollectiveCost for PerByte {
    fn name(&self) -> &str {
        "per-byte"
    }
    fn cost_ns(&self, req: &CollectiveRequest) -> Result<u64, CostError> {
        if req.size_bytes > 1 << 40 {
            return Err(CostError {
                message: "too big".into(),
            });
        }
        Ok(req.size_bytes)
    }
}

#[test]
fn cost_function_is_pluggable() {
    let mut j = small();
    j.programs[0].blocks[0].layers[0].forward.comm = Some(CommSpec {
        collective: CollectiveKind::AllReduce,
        group: GroupKind::Tp,
        size_bytes: 7_000,
        prefetch: 0,
    });
    j.parallel.tp = 2;
    let c = SimConfig {
        algorithm: Algorithm::Simai,
        ..SimConfig::default()
    };
    let r = trainscope_core::engine::simulate_with(&j, &c, &PerByte).unwrap();
    assert_eq!(r.summary.algorithm, "per-byte");
    let t = &r.timeline;
    let lane = t
        .lanes()
        .iter()
        .position(|l| l.stage == 0 && l.stream == Stream::Collective)
        .unwrap();
    let spans = t.spans(lane as u32);
    assert_eq!(spans.len(), 4);
    assert!(spans
        .iter()
        .all(|s| s.duration_ns == 7_000 && s.kind == SpanKind::CollTp));
    let send = t
        .lanes()
        .iter()
        .position(|l| l.stage == 0 && l.stream == Stream::Send)
        .unwrap();
    assert!(t.spans(send as u32).iter().all(|s| s.duration_ns == 1024));
    j.programs[0].blocks[0].layers[0]
        .forward
        .comm
        .as_mut()
        .unwrap()
        .size_bytes = 1 << 41;
    assert!(matches!(
        trainscope_core::engine::simulate_with(&j, &c, &PerByte),
        Err(SimError::Cost { .. })
    ));
}

/// Per-rank job: 2 stages x 2 DP ranks, each with its own measured forward
/// time per micro-batch, and a DP all-reduce per weight gradient.
fn per_rank(slow_rank: u32) -> JobSpec {
    let mut j = JobSpec::spmd(
        "measured",
        Parallelism {
            tp: 1,
            dp: 2,
            pp: 2,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        },
        2,
        4096,
        block(1000),
    );
    j.mode = JobMode::PerRank;
    j.programs = (0..4u32)
        .map(|rank| {
            let stage = rank / 2;
            let blocks = (0..2u64)
                .map(|mb| {
                    let mut b = block(1000 + mb * 10);
                    if rank == slow_rank {
                        b.layers[0].forward.compute_ns *= 5;
                    }
                    b.layers[0].weight_grad.comm = Some(CommSpec {
                        collective: CollectiveKind::AllReduce,
                        group: GroupKind::Dp,
                        size_bytes: 1 << 20,
                        prefetch: 0,
                    });
                    b
                })
                .collect();
            RankProgram {
                rank,
                stage,
                blocks,
                micro_batch_blocks: vec![0, 1],
                pre_rows: vec![],
                post_rows: vec![],
                order: None,
                chunk_layers: Vec::new(),
            }
        })
        .collect();
    j
}

#[test]
fn per_rank_replay_uses_measured_durations_and_syncs_collectives() {
    let r = trainscope_core::engine::simulate(&per_rank(NO_RANK), &SimConfig::default()).unwrap();
    assert_eq!(r.summary.simulated_ranks, 4);
    assert!(!r.summary.representative_ranks);
    let t = &r.timeline;
    let fwd: Vec<u64> = t
        .lanes()
        .iter()
        .enumerate()
        .filter(|(_, l)| l.group == 0 && l.stream == Stream::Compute)
        .flat_map(|(i, _)| t.spans(i as u32).iter())
        .filter(|s| s.kind == SpanKind::Forward)
        .map(|s| s.duration_ns)
        .collect();
    assert_eq!(fwd, vec![1000, 1010]);
    // A slow rank 0 delays its DP partner's all-reduce (rank 1): the two
    // start together.
    let slow = trainscope_core::engine::simulate(&per_rank(0), &SimConfig::default()).unwrap();
    let dp_starts = |rank: u32| -> Vec<u64> {
        let t = &slow.timeline;
        t.lanes()
            .iter()
            .enumerate()
            .filter(|(_, l)| l.group == rank && l.stream == Stream::GradSync)
            .flat_map(|(i, _)| t.spans(i as u32).iter().map(|s| s.start_ns))
            .collect()
    };
    assert_eq!(dp_starts(0), dp_starts(1));
    assert_eq!(dp_starts(0).len(), 2);
    let base =
        trainscope_core::engine::simulate(&per_rank(NO_RANK), &SimConfig::default()).unwrap();
    assert!(slow.summary.iteration_time_ns > base.summary.iteration_time_ns);
}

const NO_RANK: u32 = u32::MAX;

#[test]
fn explicit_step_orders_are_replayed_or_refused() {
    let mut j = small();
    // GPipe orders given explicitly under a 1F1B setting: honoured.
    let gpipe_order: Vec<PipeStep> = (0..4)
        .map(|m| PipeStep::f(m, 0))
        .chain((0..4).map(|m| PipeStep::b(m, 0)))
        .collect();
    for p in &mut j.programs {
        p.order = Some(gpipe_order.clone());
    }
    let r = trainscope_core::engine::simulate(&j, &SimConfig::default()).unwrap();
    let gpipe = trainscope_core::engine::simulate(
        &small(),
        &SimConfig {
            schedule: ScheduleKind::GPipe,
            ..SimConfig::default()
        },
    )
    .unwrap();
    assert_eq!(r.summary.iteration_time_ns, gpipe.summary.iteration_time_ns);
    let one_f_one_b = trainscope_core::engine::simulate(&small(), &SimConfig::default()).unwrap();
    assert_ne!(
        r.summary.iteration_time_ns,
        one_f_one_b.summary.iteration_time_ns
    );
    // A backward before its forward can never run.
    let mut j = small();
    j.programs[1].order = Some(vec![PipeStep::b(0, 0), PipeStep::f(0, 0)]);
    match trainscope_core::engine::simulate(&j, &SimConfig::default()) {
        Err(SimError::Stalled(msg)) => assert!(msg.contains("stage 1"), "{msg}"),
        other => panic!("expected a stall, got {other:?}"),
    }
}

#[test]
fn backward_factor_fills_forward_only_inputs() {
    let j = JobSpec::spmd(
        "fwd-only",
        Parallelism {
            tp: 1,
            dp: 1,
            pp: 1,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        },
        1,
        0,
        Block {
            layers: vec![LayerSpec::compute("l", 1000, 0, 0)],
        },
    );
    let r = trainscope_core::engine::simulate(
        &j,
        &SimConfig {
            backward_factor: Some(2.0),
            ..SimConfig::default()
        },
    )
    .unwrap();
    assert_eq!(r.summary.iteration_time_ns, 3000);
    let r = trainscope_core::engine::simulate(
        &j,
        &SimConfig {
            compute_scale: 1.5,
            ..SimConfig::default()
        },
    )
    .unwrap();
    assert_eq!(r.summary.iteration_time_ns, 1500);
}

#[test]
fn timeline_range_queries() {
    let r = trainscope_core::engine::simulate(&small(), &SimConfig::default()).unwrap();
    let t = &r.timeline;
    let lane = t
        .lanes()
        .iter()
        .position(|l| l.stage == 0 && l.stream == Stream::Compute)
        .unwrap() as u32;
    let all = t.spans(lane);
    for (a, b) in [
        (0, 50),
        (150, 151),
        (0, t.end_ns()),
        (t.end_ns(), u64::MAX),
        (250, 1000),
    ] {
        let got: Vec<u32> = t.query(lane, a, b).map(|(i, _)| i).collect();
        let want: Vec<u32> = all
            .iter()
            .enumerate()
            .filter(|(_, s)| s.start_ns < b && s.end_ns() > a)
            .map(|(i, _)| i as u32)
            .collect();
        assert_eq!(got, want, "range {a}..{b}");
    }
    // Critical path spans are addressable, and dependencies of a receive
    // include the send-side work.
    assert!(t.critical_path().iter().all(|r| t.span(*r).is_some()));
    let f = t.flows()[0];
    assert!(!t.dependencies(f.from).is_empty());
}

#[test]
fn phase_ops_default_is_nothing() {
    assert_eq!(
        PhaseOps::default(),
        PhaseOps {
            compute_ns: 0,
            comm: None,
            ..Default::default()
        }
    );
}

#[test]
fn calibration_fits_one_compute_scale() {
    // 2 stages, 4 micro-batches, compute only: time is linear in the scale.
    let j = JobSpec::spmd(
        "cal",
        Parallelism {
            tp: 1,
            dp: 1,
            pp: 2,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        },
        4,
        0,
        block(1_000_000),
    );
    let cost =
        trainscope_core::engine::NetworkModel::new(&SimConfig::default().network, Algorithm::Ring)
            .unwrap();
    let base = trainscope_core::engine::simulate(&j, &SimConfig::default())
        .unwrap()
        .summary
        .iteration_time_ns;
    assert_eq!(base, 5 * 3_000_000);
    let target = base * 13 / 10;
    let c =
        trainscope_core::engine::calibrate_compute_scale(&j, &SimConfig::default(), &cost, target)
            .unwrap();
    assert!((c.compute_scale - 1.3).abs() < 1e-3, "{}", c.compute_scale);
    assert!(c.result.summary.iteration_time_ns.abs_diff(target) <= target / 10_000);
    assert!(c.simulations > 1 && c.simulations <= 60);
    // Already there: one simulation.
    let c =
        trainscope_core::engine::calibrate_compute_scale(&j, &SimConfig::default(), &cost, base)
            .unwrap();
    assert_eq!((c.compute_scale, c.simulations), (1.0, 1));
}

#[test]
fn errors_become_diagnostics() {
    let e = SimError::InterleavedMicroBatches {
        micro_batches: 6,
        stages: 4,
    };
    let d = e.to_diagnostic();
    assert!(d.is_error());
    assert!(
        d.message.contains("multiple of the stage count (4)"),
        "{}",
        d.message
    );
    assert!(d.hint.unwrap().contains("1f1b"));
}

#[test]
fn hostile_simai_numbers_do_not_panic() {
    use trainscope_core::formats::simai;
    let text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4294967295 ep: 1 pp: 3 vpp: 1 ga: 4294967295 all_gpus: 4294967295 pp_comm: 18446744073709551615\n\
                2\n\
                embedding_layer -1 18446744073709551615 ALLREDUCE 18446744073709551615 18446744073709551615 ALLGATHER 18446744073709551615 18446744073709551615 REDUCESCATTER 18446744073709551615 18446744073709551615\n\
                mlp -1 18446744073709551615 ALLTOALL_EP 18446744073709551615 1 NONE 0 1 NONE 0 100\n";
    let w = simai::parse("hostile.txt", text).unwrap();
    // Too large a world: an error, not an allocation.
    assert!(matches!(
        JobSpec::from_simai(&w),
        Err(SimError::TooLarge(m)) if m.contains("limit 1048576")
    ));
    let mut w = w;
    w.header.tp = 1;
    w.header.world = Some(3);
    let j = JobSpec::from_simai(&w).unwrap();
    // A sane world with absurd times and sizes: runs (times saturate) or is
    // refused, never panics.
    let mut j = j;
    j.parallel = Parallelism {
        tp: 2,
        dp: 2,
        pp: 3,
        ep: 1,
        cp: 1,
        etp: None,
        dp_shard: 0,
    };
    j.micro_batches = 3;
    match trainscope_core::engine::simulate(&j, &SimConfig::default()) {
        Ok(r) => {
            assert_eq!(r.summary.iteration_time_ns, u64::MAX);
            assert!(r.summary.warnings.iter().any(|w| w.contains("64-bit")));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    let c = SimConfig {
        virtual_stages: 256,
        schedule: ScheduleKind::Interleaved,
        ..SimConfig::default()
    };
    assert!(matches!(
        trainscope_core::engine::simulate(&small(), &c),
        Err(SimError::InvalidConfig {
            name: "virtual_stages",
            ..
        })
    ));
}

/// Huge sizes in any input are refused with the "too large" error (CLI exit
/// 4) before anything proportional to them is allocated: a SimAI `pp`, `ga`
/// or `all_gpus`, an Optimus-Prime `PP`, a world override, the micro-batch
/// and virtual-stage settings. Without the size checks these abort on a
/// failed allocation of hundreds of GB.
#[test]
fn hostile_sizes_are_refused_before_allocating() {
    use trainscope_core::formats::simai;
    use trainscope_core::run::{run_files, RunError, RunOptions};
    let simai_text = |pp: &str, ga: &str, world: &str| {
        format!(
            "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 pp: {pp} vpp: 1 ga: {ga} all_gpus: {world} pp_comm: 1024\n\
             2\n\
             embedding_layer -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n\
             mlp -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n"
        )
    };
    let too_large = |r: Result<trainscope_core::run::RunOutput, RunError>, what: &str| match r {
        Err(RunError::Sim(SimError::TooLarge(m))) => {
            assert!(m.contains("limit"), "{what}: {m}");
        }
        Err(e) => panic!("{what}: expected too large, got {e}"),
        Ok(_) => panic!("{what}: expected too large, got a result"),
    };
    let run = |text: &str, name: &str, config: &SimConfig, options: &RunOptions| {
        run_files(&[(name, text.as_bytes())], config, options)
    };
    let d = SimConfig::default();
    let o = RunOptions::default();
    // pp alone (all_gpus = pp): 4e9 stages.
    let t = simai_text("4000000000", "1", "4000000000");
    too_large(run(&t, "pp.txt", &d, &o), "simai pp");
    let w = simai::parse("pp.txt", &t).unwrap();
    assert!(matches!(
        JobSpec::from_simai(&w),
        Err(SimError::TooLarge(_))
    ));
    // A world of 4e9 ranks through the override.
    let t = simai_text("2", "2", "4");
    let big_world = RunOptions {
        world: Some(4_000_000_000),
        ..RunOptions::default()
    };
    // Refused by the options' range check (`limits::MAX_WORLD`) first.
    assert!(matches!(
        run(&t, "w.txt", &d, &big_world),
        Err(RunError::Sim(SimError::InvalidConfig { name: "world", .. }))
    ));
    // ga of 4e9 micro-batches.
    let t = simai_text("2", "4000000000", "2");
    match run(&t, "ga.txt", &d, &o) {
        Err(RunError::Sim(SimError::TooLarge(_) | SimError::InvalidConfig { .. })) => {}
        other => panic!(
            "simai ga: {:?}",
            other.map(|r| r.summary().iteration_time_ns)
        ),
    }
    // A sane job with as many micro-batches and virtual stages as allowed
    // but too many tasks.
    let t = simai_text("4", "4", "4");
    let c = SimConfig {
        micro_batches: Some(trainscope_core::limits::MAX_MICRO_BATCHES),
        virtual_stages: 2,
        schedule: ScheduleKind::Interleaved,
        ..SimConfig::default()
    };
    too_large(run(&t, "m.txt", &c, &o), "micro-batches");
    // An Optimus-Prime log claiming 4e8 stages.
    let log = include_str!("../fixtures/seeds/optimus_prime_llama1b_pp8_train.log")
        .replace("> PP: 8", "> PP: 400000000");
    too_large(run(&log, "o.log", &d, &o), "optimus PP");
    // The size check itself names the numbers.
    let e = trainscope_core::engine::spec::check_size(
        Parallelism {
            tp: 1,
            dp: 1,
            pp: 4_000_000_000,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        },
        1,
        1,
        1,
        1,
        0,
    )
    .unwrap_err();
    assert!(e.to_string().contains("4000000000"), "{e}");
    assert!(e.to_string().contains("1048576"), "{e}");
}

/// The SimAI-compatible mode with hostile pp, ga, vpp and world: a report or
/// an error, never an overflow panic or an allocation sized by them.
#[test]
fn hostile_sizes_in_the_analytical_mode() {
    use trainscope_core::analytical::{analyse, AnalyticalConfig};
    use trainscope_core::formats::simai;
    for (tp, pp, vpp, ga, world) in [
        ("1", "4000000000", "1", "1", "4000000000"),
        ("1", "2", "4294967295", "4294967295", "4"),
        (
            "4294967295",
            "4294967295",
            "4294967295",
            "4294967295",
            "4294967295",
        ),
        ("2", "2147483647", "2", "3", "4294967294"),
    ] {
        let text = format!(
            "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} ep: 1 pp: {pp} vpp: {vpp} ga: {ga} all_gpus: {world} pp_comm: 18446744073709551615\n\
             2\n\
             embedding_layer -1 1000 ALLREDUCE 1048576 1000 NONE 0 1000 NONE 0 100\n\
             mlp -1 18446744073709551615 ALLGATHER 18446744073709551615 1000 REDUCESCATTER 1048576 1000 ALLREDUCE 4096 100\n"
        );
        let w = simai::parse("h.txt", &text).unwrap();
        match analyse(&w, &AnalyticalConfig::default()) {
            Ok(r) => assert!(r.iteration_time_ns >= r.bubble_ns),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}
