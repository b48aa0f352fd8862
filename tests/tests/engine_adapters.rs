//! The event engine's adapters (issue 5): the SimAI-compatible cost inside
//! the engine, described jobs from the model (NeuSight semantics on a
//! hand-computed TSV), measured runs (Echo replay of a consistent trace, the
//! nearest-stage assumption, Optimus-Prime per-stage forward times and
//! calibration), and the one entry `trainscope_core::run::run_files` (determinism, errors).

use trainscope_core::analytical::{self, ClusterConfig, CostModel, RatioTables};
use trainscope_core::engine::spec::JobSpec;
use trainscope_core::engine::NetworkConfig;
use trainscope_core::formats::simai::{self, Collective};
use trainscope_core::formats::{echo, neusight, optimus};
use trainscope_core::replay;
use trainscope_core::timeline::{SpanKind, Stream};
use trainscope_core::{
    engine::{Algorithm, SimConfig, SimError},
    export,
    run::{run_files, RunError, RunOptions},
};
use trainscope_tests::{fixture_bytes, FixtureSet};

// ---------------------------------------------------------------------------
// SimAI-compatible cost in the engine

/// One collective per row, each in one column, so every collective span
/// maps to one known call of `collective_time_ns`. pp = 1 and DP
/// collectives serialise on one stream, so no NIC is ever shared.
const SIMAI_ROWS: &str = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 32 pp_comm: 0\n\
6\n\
embedding_layer -1 1000 ALLREDUCE 100 1000 NONE 0 1000 NONE 0 100\n\
l1 -1 1000 ALLGATHER 536870912 1000 NONE 0 1000 NONE 0 100\n\
l2 -1 1000 NONE 0 1000 REDUCESCATTER 536870912 1000 NONE 0 100\n\
l3 -1 1000 NONE 0 1000 NONE 0 1000 ALLREDUCE 1073741824 100\n\
l4 -1 1000 NONE 0 1000 NONE 0 1000 REDUCESCATTER 500000 100\n\
l5 -1 1000 ALLREDUCE 33554432 1000 NONE 0 1000 NONE 0 100\n";

#[test]
fn simai_algorithm_costs_each_collective_as_the_analytical_function() {
    let w = simai::parse("rows.txt", SIMAI_ROWS).unwrap();
    let job = JobSpec::from_simai(&w).unwrap();
    let config = SimConfig {
        algorithm: Algorithm::Simai,
        ..SimConfig::default()
    };
    let r = trainscope_core::engine::simulate(&job, &config).unwrap();
    let n = &config.network;
    let model = CostModel::new(
        ClusterConfig {
            world_size: 32,
            gpus_per_server: n.gpus_per_node,
            nics_per_server: n.nics_per_node,
            nvlink_busbw_gbps: n.nvlink_gbps,
            nic_busbw_gbps: n.nic_gbps,
        },
        RatioTables::builtin(),
        8,
        1,
    )
    .unwrap();
    use analytical::{Phase as P, SimaiGroup as G};
    let expected = [
        (Collective::AllReduce, G::Tp, 8, 100, P::Forward),
        (Collective::AllGather, G::Tp, 8, 536_870_912, P::Forward),
        (
            Collective::ReduceScatter,
            G::Tp,
            8,
            536_870_912,
            P::InputGrad,
        ),
        (
            Collective::AllReduce,
            G::Dp,
            4,
            1_073_741_824,
            P::WeightGrad,
        ),
        (Collective::ReduceScatter, G::Dp, 4, 500_000, P::WeightGrad),
        (Collective::AllReduce, G::Tp, 8, 33_554_432, P::Forward),
    ];
    let t = &r.timeline;
    let mut seen = 0;
    for (li, lane) in t.lanes().iter().enumerate() {
        if !matches!(lane.stream, Stream::Collective | Stream::GradSync) {
            continue;
        }
        for s in t.spans(li as u32) {
            let layer = s.layer().expect("layer of a collective span") as usize;
            let (c, g, size, bytes, phase) = expected[layer];
            let want = analytical::collective_time_ns(c, g, size, bytes, phase, &model).unwrap();
            assert_eq!(s.duration_ns, want, "row {layer}");
            assert!(want > 0);
            seen += 1;
        }
    }
    assert_eq!(seen, expected.len());
    // The same through the one entry, with the algorithm named.
    let out = run_files(
        &[("rows.txt", SIMAI_ROWS.as_bytes())],
        &config,
        &RunOptions::default(),
    )
    .unwrap();
    assert_eq!(out.summary().iteration_time_ns, r.summary.iteration_time_ns);
    assert_eq!(out.summary().algorithm, "simai");
    assert!(out.notes.iter().any(|n| n.contains("SimAI-compatible")));
}

// ---------------------------------------------------------------------------
// NeuSight semantics

/// Three ops of 1, 2 and 3 ms; `a` and `b` carry a 2^28-element (1 GiB)
/// gradient all-reduce. With DP 2 on one node, no latency and 200 GB/s
/// NVLink, a ring all-reduce of 1 GiB over 2 ranks moves 1 GiB: 5 ms.
const TINY_TSV: &str = "name\tforward_compute_time\tforward_comm_type\tforward_comm_size\tbackward_compute_time\tbackward_comm_type\tbackward_comm_size\tweight_grad_compute_time\tweight_grad_comm_type\tweight_grad_comm_size\tprocess_time\n\
a_grad\t0\tNone\t0\t0\tALLREDUCE_ASYNC\t268435456\t0\tNone\t0\t0\n\
a\t1.0\tNone\t0\t0.0\tNone\t0\t0.0\tNone\t0\t0\n\
b_grad\t0\tNone\t0\t0\tALLREDUCE_ASYNC\t268435456\t0\tNone\t0\t0\n\
b\t2.0\tNone\t0\t0.0\tNone\t0\t0.0\tNone\t0\t0\n\
c\t3.0\tNone\t0\t0.0\tNone\t0\t0.0\tNone\t0\t0\n";

fn tiny_config() -> SimConfig {
    SimConfig {
        network: NetworkConfig {
            nvlink_gbps: 200.0,
            nvlink_latency_ns: 0,
            nic_latency_ns: 0,
            ..NetworkConfig::default()
        },
        ..SimConfig::default()
    }
}

#[test]
fn neusight_semantics_hand_computed() {
    const MS: u64 = 1_000_000;
    // Forward a, b, c: 0..6 ms. Backward in reverse, input gradient =
    // weight gradient = forward (backward = 2 x forward): c 6..12, b 12..16
    // -> all-reduce of b at 16..21; a 16..18 -> all-reduce of a ready at 18
    // but the network is busy until 21 (they serialise): 21..26. The
    // iteration ends at max(26, 18) = 26 ms.
    let out = run_files(
        &[("tiny.tsv", TINY_TSV.as_bytes())],
        &tiny_config(),
        &RunOptions {
            world: Some(2),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let s = out.summary();
    assert_eq!(out.parallel.dp, 2);
    assert_eq!(s.iteration_time_ns, 26 * MS);
    assert_eq!(s.compute_ns, 18 * MS);
    assert_eq!(s.exposed_comm_ns.dp, 8 * MS);
    let t = &out.result.timeline;
    let lane = t
        .lanes()
        .iter()
        .position(|l| l.stream == Stream::GradSync)
        .unwrap() as u32;
    let ar: Vec<(u64, u64)> = t
        .spans(lane)
        .iter()
        .map(|s| (s.start_ns, s.end_ns()))
        .collect();
    assert_eq!(ar, vec![(16 * MS, 21 * MS), (21 * MS, 26 * MS)]);
    let labels: Vec<&str> = t.spans(lane).iter().map(|s| t.label(s.label)).collect();
    assert_eq!(labels, vec!["b", "a"]);
    assert!(out
        .warnings
        .iter()
        .any(|w| w.contains("estimated backward")));

    // A backward factor of 4: input gradient = weight gradient = 2 x forward.
    // Backward: c 6..18, b 18..26 -> AR 26..31, a 26..30 -> AR 31..36.
    let four = run_files(
        &[("tiny.tsv", TINY_TSV.as_bytes())],
        &SimConfig {
            backward_factor: Some(4.0),
            ..tiny_config()
        },
        &RunOptions {
            world: Some(2),
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert_eq!(four.summary().iteration_time_ns, 36 * MS);

    // DP 1: no all-reduce, the iteration is the compute.
    let one = run_files(
        &[("tiny.tsv", TINY_TSV.as_bytes())],
        &tiny_config(),
        &RunOptions::default(),
    )
    .unwrap();
    assert_eq!(one.summary().iteration_time_ns, 18 * MS);
}

#[test]
fn neusight_block_repeats_is_a_setting() {
    let bytes = fixture_bytes("seeds/neusight_gpt2large_dp_workitems.tsv");
    let t = neusight::parse("n.tsv", std::str::from_utf8(&bytes).unwrap()).unwrap();
    let at = |repeats: u32| {
        run_files(
            &[("n.tsv", bytes.as_slice())],
            &SimConfig::default(),
            &RunOptions {
                block_repeats: Some(repeats),
                ..RunOptions::default()
            },
        )
        .unwrap()
        .summary()
        .iteration_time_ns
    };
    // Compute only (DP 1): forward + 2 x forward of every op; the block's
    // share grows linearly with the repeat count.
    let (r1, r2, r36) = (at(1), at(2), at(36));
    let block = r2 - r1;
    assert_eq!(r36, r1 + 35 * block);
    let fwd_one: u64 = {
        let job = neusight::to_model(
            "n.tsv",
            &t,
            &neusight::NeusightOptions {
                block_repeats: 1,
                data_parallel: None,
            },
        );
        job.stages[0].blocks[0]
            .ops
            .iter()
            .map(|o| o.forward.compute_ns)
            .sum()
    };
    assert_eq!(r1, 3 * fwd_one);
}

// ---------------------------------------------------------------------------
// Measured runs

fn echo_line(rank: u32, stage: u32, op: &str, batch: u32, dur_ms: f64, end_ms: f64) -> String {
    format!(
        "rank:{rank}:{op}(stage_id={stage},batch_id={batch},mg_state=steady,duration={dur_ms:.2},description=None,group_kind=None,input__shape=None,input__dtype=None,timestamp={end_ms:.2},sub_operations=[])\n"
    )
}

/// A 2-stage, 2-micro-batch 1F1B run with zero-cost communication: forward
/// 10 ms, backward 20 ms on both stages, optimizer 5 ms; times from 1000 ms.
/// Stage 0: F0 0-10, F1 10-20, B0 40-60, B1 70-90, opt 90-95.
/// Stage 1: F0 10-20, B0 20-40, F1 40-50, B1 50-70, opt 70-75.
fn consistent_trace() -> (String, String) {
    let o = 1000.0;
    let mut r0 = String::new();
    for (op, mb, d, end) in [
        ("forward_step", 0, 10.0, 10.0),
        ("forward_step", 1, 10.0, 20.0),
        ("backward_step", 0, 20.0, 60.0),
        ("backward_step", 1, 20.0, 90.0),
        ("optimizer_step", 0, 5.0, 95.0),
    ] {
        r0.push_str(&echo_line(0, 0, op, mb, d, o + end));
    }
    let mut r1 = String::new();
    for (op, mb, d, end) in [
        ("forward_step", 0, 10.0, 20.0),
        ("backward_step", 0, 20.0, 40.0),
        ("forward_step", 1, 10.0, 50.0),
        ("backward_step", 1, 20.0, 70.0),
        ("optimizer_step", 0, 5.0, 75.0),
    ] {
        r1.push_str(&echo_line(1, 1, op, mb, d, o + end));
    }
    (r0, r1)
}

const R0: &str = "wd2_tp1_pp2_rank0_trace.txt";
const R1: &str = "wd2_tp1_pp2_rank1_trace.txt";

#[test]
fn a_consistent_trace_replays_to_its_measured_time() {
    let (r0, r1) = consistent_trace();
    let out = run_files(
        &[(R0, r0.as_bytes()), (R1, r1.as_bytes())],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .unwrap();
    assert_eq!(out.kind, "measured");
    assert_eq!(out.measured_iteration_time_ns(), Some(95_000_000));
    let cmp = out.comparison.as_ref().unwrap();
    assert_eq!(cmp.simulated_iteration_time_ns, 95_000_000);
    assert_eq!(cmp.difference_ns, 0);
    assert_eq!(cmp.ranks, vec![0, 1]);
    assert!(out.assumed_ranks.is_empty());
    let kind = |k: &str| cmp.by_kind.iter().find(|x| x.kind == k).unwrap();
    assert_eq!(kind("forward").measured_ns, Some(40_000_000));
    assert_eq!(kind("forward").simulated_ns, 40_000_000);
    assert_eq!(kind("backward").simulated_ns, 80_000_000);
    assert_eq!(kind("iteration_compute").simulated_ns, 10_000_000);
    // The measured step order is kept: stage 0 runs F0 F1 B0 B1 (its
    // measured order), and the replayed spans sit where they were measured.
    let m = out.measured.as_ref().unwrap();
    let sim_t = &out.result.timeline;
    let mt = m.timeline.as_ref().unwrap();
    for (ml, sl) in mt.lanes().iter().zip(sim_t.lanes()) {
        assert_eq!((ml.group, ml.stream), (sl.group, sl.stream));
    }
    let starts = |t: &trainscope_core::timeline::Timeline, lane: u32| -> Vec<u64> {
        t.spans(lane).iter().map(|s| s.start_ns).collect()
    };
    for lane in [0u32, 5] {
        assert_eq!(starts(mt, lane), starts(sim_t, lane), "lane {lane}");
    }

    // Slower compute in the replay shows up as a per-kind difference.
    let slow = run_files(
        &[(R0, r0.as_bytes()), (R1, r1.as_bytes())],
        &SimConfig {
            compute_scale: 2.0,
            ..SimConfig::default()
        },
        &RunOptions::default(),
    )
    .unwrap();
    let c = slow.comparison.unwrap();
    assert_eq!(c.simulated_iteration_time_ns, 190_000_000);
    assert!((c.error_percent - 100.0).abs() < 1e-9);
    // Calibration finds the factor 1 back.
    let cal = run_files(
        &[(R0, r0.as_bytes()), (R1, r1.as_bytes())],
        &SimConfig {
            compute_scale: 2.0,
            ..SimConfig::default()
        },
        &RunOptions {
            calibrate: true,
            ..RunOptions::default()
        },
    )
    .unwrap();
    let f = cal.calibration.unwrap().compute_scale;
    assert!((f - 1.0).abs() < 1e-3, "{f}");
}

#[test]
fn missing_stages_are_like_the_nearest_present_stage() {
    let (_, r1) = consistent_trace();
    let run = echo::parse_run(&[(R1, r1.as_str())]);
    let (rj, warnings) = replay::echo_job(&run).unwrap();
    assert_eq!(rj.present_ranks, vec![1]);
    assert_eq!(rj.assumed.len(), 1);
    let a = &rj.assumed[0];
    assert_eq!((a.rank, a.stage, a.like_rank, a.like_stage), (0, 0, 1, 1));
    assert!(warnings.iter().any(|w| w.contains("nearest present stage")
        && w.contains("rank 0 (stage 0) as rank 1 (stage 1)")));
    // The copy runs stage 0's schedule order with stage 1's durations.
    let copy = &rj.job.programs[0];
    assert_eq!(copy.stage, 0);
    assert!(copy.order.is_none());
    assert_eq!(copy.blocks, rj.job.programs[1].blocks);
    // Through the entry: the warning reaches the output, and only rank 1 is
    // compared.
    let out = run_files(
        &[(R1, r1.as_bytes())],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .unwrap();
    assert!(out
        .warnings
        .iter()
        .any(|w| w.contains("nearest present stage")));
    assert_eq!(out.comparison.unwrap().ranks, vec![1]);

    // Three stages, the middle one missing: equally near to 0 and 2, the
    // lower one wins.
    let mut r0 = String::new();
    let mut r2 = String::new();
    for (rank, text) in [(0u32, &mut r0), (2, &mut r2)] {
        text.push_str(&echo_line(
            rank,
            rank,
            "forward_step",
            0,
            10.0,
            1010.0 + f64::from(rank),
        ));
        text.push_str(&echo_line(
            rank,
            rank,
            "backward_step",
            0,
            20.0,
            1050.0 + f64::from(rank),
        ));
        text.push_str(&echo_line(
            rank,
            rank,
            "optimizer_step",
            0,
            5.0,
            1060.0 + f64::from(rank),
        ));
    }
    let run = echo::parse_run(&[
        ("wd3_tp1_pp3_rank0.txt", r0.as_str()),
        ("wd3_tp1_pp3_rank2.txt", r2.as_str()),
    ]);
    let (rj, _) = replay::echo_job(&run).unwrap();
    let a = &rj.assumed[0];
    assert_eq!((a.rank, a.stage, a.like_rank), (1, 1, 0));
}

#[test]
fn echo_seed_replay_keeps_measured_compute() {
    let bytes = fixture_bytes("seeds/echo_megatron_trace_rank7_tp2_pp4.txt");
    let out = run_files(
        &[("echo_megatron_trace_rank7_tp2_pp4.txt", bytes.as_slice())],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .unwrap();
    let cmp = out.comparison.as_ref().unwrap();
    for k in &cmp.by_kind {
        if matches!(k.kind, "forward" | "backward" | "iteration_compute") {
            assert_eq!(k.measured_ns, Some(k.simulated_ns), "{}", k.kind);
        }
    }
    // Rank 7's TP all-reduces are re-costed by the network model.
    let tp = cmp.by_kind.iter().find(|k| k.kind == "coll_tp").unwrap();
    assert!(tp.simulated_ns > 0 && Some(tp.simulated_ns) != tp.measured_ns);
    // Per-rank simulation: every rank of every stage program is a lane group.
    assert!(!out.summary().representative_ranks);
    assert_eq!(out.summary().simulated_ranks, 4);
    // The measured timeline: every op and sub-op, nothing untimed.
    let m = out.measured.as_ref().unwrap();
    assert_eq!(m.timeline.as_ref().unwrap().span_count(), 57);
    assert_eq!(m.untimed_spans, 0);
}

#[test]
fn optimus_forward_per_micro_batch_from_the_steady_steps() {
    let bytes = fixture_bytes("seeds/optimus_prime_llama1b_pp8_train.log");
    let text = std::str::from_utf8(&bytes).unwrap();
    let log = optimus::parse("op.log", text).unwrap();
    let run = optimus::to_run("op.log", &log);
    let (rj, warnings) = replay::optimus_job(&run, 2.0).unwrap();
    assert!(warnings.iter().any(|w| w.contains("warm-up")));
    assert_eq!(rj.job.micro_batches, 32);
    assert_eq!(rj.job.programs.len(), 8);
    for prog in &rj.job.programs {
        // Straight from the parsed log: steps >= 2 of this stage.
        let steps: Vec<&optimus::OptimusStep> = log
            .steps
            .iter()
            .filter(|s| s.stage == prog.stage && s.step >= 2)
            .collect();
        let total: u64 = steps
            .iter()
            .flat_map(|s| s.entries.iter())
            .map(|e| e.total_ns)
            .sum();
        let want = total as f64 / steps.len() as f64 / 32.0;
        let layers = &prog.blocks[0].layers;
        let fwd: u64 = layers.iter().map(|l| l.forward.compute_ns).sum();
        assert!(
            (fwd as f64 - want).abs() <= layers.len() as f64,
            "stage {}: {fwd} vs {want}",
            prog.stage
        );
        for l in layers {
            assert_eq!(l.input_grad.compute_ns, l.forward.compute_ns);
            assert_eq!(l.weight_grad.compute_ns, l.forward.compute_ns);
        }
    }
    // Factor 3: input gradient = weight gradient = 1.5 x forward.
    let (rj3, _) = replay::optimus_job(&run, 3.0).unwrap();
    let l = &rj3.job.programs[0].blocks[0].layers[1];
    assert_eq!(
        l.input_grad.compute_ns,
        (l.forward.compute_ns as f64 * 1.5).round() as u64
    );
    assert!(replay::optimus_job(&run, f64::NAN).is_err());
}

#[test]
fn optimus_calibration_meets_the_measurement_then_what_if() {
    let bytes = fixture_bytes("seeds/optimus_prime_llama1b_pp8_train.log");
    let files = [("op.log", bytes.as_slice())];
    let plain = run_files(&files, &SimConfig::default(), &RunOptions::default()).unwrap();
    let err = plain.comparison.as_ref().unwrap().error_percent;
    assert!(err < -10.0, "{err}");
    let cal_opts = RunOptions {
        calibrate: true,
        ..RunOptions::default()
    };
    let cal = run_files(&files, &SimConfig::default(), &cal_opts).unwrap();
    let c = cal.calibration.as_ref().unwrap();
    assert!(c.error_percent.abs() < 0.1, "{c:?}");
    assert!(!c.what_if);
    assert_eq!(cal.config.compute_scale, c.compute_scale);
    // What-if: another schedule, same fitted scale.
    let gpipe = run_files(
        &files,
        &SimConfig {
            schedule: trainscope_core::engine::ScheduleKind::GPipe,
            micro_batches: Some(16),
            ..SimConfig::default()
        },
        &cal_opts,
    )
    .unwrap();
    let g = gpipe.calibration.as_ref().unwrap();
    assert!(g.what_if);
    assert_eq!(g.compute_scale, c.compute_scale);
    assert_eq!(gpipe.summary().micro_batches, 16);
    assert!(gpipe.summary().iteration_time_ns < cal.summary().iteration_time_ns);
}

// ---------------------------------------------------------------------------
// The entry

#[test]
fn run_files_is_deterministic() {
    for name in [
        "seeds/simai_405b_tp8_pp16_ga16_sp.txt",
        "seeds/echo_megatron_trace_rank7_tp2_pp4.txt",
        "seeds/optimus_prime_llama1b_pp8_train.log",
        "seeds/neusight_gpt2large_dp_workitems.tsv",
    ] {
        let bytes = fixture_bytes(name);
        let run = || {
            run_files(
                &[(name, bytes.as_slice())],
                &SimConfig::default(),
                &RunOptions::default(),
            )
            .unwrap()
        };
        let (a, b) = (run(), run());
        assert_eq!(a.report_json(), b.report_json(), "{name}");
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        assert_eq!(
            export::chrome_trace_json(&a.result.timeline),
            export::chrome_trace_json(&b.result.timeline)
        );
        // The output is serialisable with its timelines, and they come back.
        let v = serde_json::to_value(&a).unwrap();
        let t: trainscope_core::timeline::Timeline =
            serde_json::from_value(v["result"]["timeline"].clone()).unwrap();
        assert_eq!(t, a.result.timeline, "{name}");
        if let Some(m) = &a.measured {
            let t: trainscope_core::timeline::Timeline =
                serde_json::from_value(v["measured"]["timeline"].clone()).unwrap();
            assert_eq!(Some(&t), m.timeline.as_ref());
        }
        assert_eq!(
            v["result"]["summary"]["iteration_time_ns"],
            a.report_json()["iteration_time_ns"]
        );
    }
}

/// `RunOptions::report_only` (the CLI's `simulate`) leaves the measured
/// timeline out and nothing else: the same report, warnings and measured
/// figures (an Optimus-Prime log has untimed ops: the same warning), and a
/// measured run's timeline is `None` only then.
#[test]
fn report_only_skips_the_measured_timeline_and_nothing_else() {
    let sets: [&[&str]; 5] = [
        &["seeds/echo_megatron_trace_rank7_tp2_pp4.txt"],
        &["seeds/optimus_prime_llama1b_pp8_train.log"],
        &[
            "kineto/job2_rank0.json",
            "kineto/job2_rank1.pt.trace.json.gz",
        ],
        &["chakra/job.0.et", "chakra/job.1.et"],
        &["seeds/neusight_gpt2large_dp_workitems.tsv"],
    ];
    let mut untimed_seen = false;
    for names in sets {
        let fx = FixtureSet::read(names);
        let files = fx.files();
        let run = |report_only| {
            run_files(
                &files,
                &SimConfig::default(),
                &RunOptions {
                    report_only,
                    ..RunOptions::default()
                },
            )
            .unwrap()
        };
        let (full, report) = (run(false), run(true));
        assert_eq!(full.report_json(), report.report_json(), "{names:?}");
        assert_eq!(full.warnings, report.warnings, "{names:?}");
        match (&full.measured, &report.measured) {
            (Some(f), Some(r)) => {
                assert!(f.timeline.is_some(), "{names:?}");
                assert!(r.timeline.is_none(), "{names:?}");
                let mut f = f.clone();
                f.timeline = None;
                assert_eq!(
                    serde_json::to_value(&f).unwrap(),
                    serde_json::to_value(r).unwrap(),
                    "{names:?}"
                );
                untimed_seen |= r.untimed_spans > 0 && !r.warnings.is_empty();
            }
            (None, None) => {}
            _ => panic!("{names:?}: one run is measured, the other not"),
        }
    }
    assert!(untimed_seen, "no set with untimed ops was compared");
}

#[test]
fn run_files_errors_are_classified() {
    let s0 = fixture_bytes("seeds/simai_llama65b_tp8_pp4_vpp8.txt");
    let ns = fixture_bytes("seeds/neusight_gpt2large_dp_workitems.tsv");
    let e = run_files(&[], &SimConfig::default(), &RunOptions::default()).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let e = run_files(
        &[("a.txt", s0.as_slice()), ("b.tsv", ns.as_slice())],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, RunError::Usage(_)));
    let e = run_files(
        &[("bad.txt", b"not a workload\n".as_slice())],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 3);
    let e = run_files(
        &[("s0.txt", s0.as_slice())],
        &SimConfig {
            schedule: trainscope_core::engine::ScheduleKind::Interleaved,
            virtual_stages: 2,
            ..SimConfig::default()
        },
        &RunOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(
        e,
        RunError::Sim(SimError::InterleavedMicroBatches { .. })
    ));
    assert_eq!(e.exit_code(), 4);
    // convert refuses a described workload, pointing at simulate.
    let e =
        trainscope_core::run::convert_files(&[("s0.txt", s0.as_slice())], &RunOptions::default())
            .unwrap_err();
    assert!(e.to_string().contains("--chrome-trace"));
}

#[test]
fn described_jobs_go_through_the_model() {
    // SimAI via the model and via the direct adapter simulate alike.
    for name in [
        "seeds/simai_llama65b_tp8_pp4_vpp8.txt",
        "seeds/simai_405b_tp8_pp16_ga16_sp.txt",
    ] {
        let bytes = fixture_bytes(name);
        let w = simai::parse(name, std::str::from_utf8(&bytes).unwrap()).unwrap();
        let direct = trainscope_core::engine::simulate(
            &JobSpec::from_simai(&w).unwrap(),
            &SimConfig::default(),
        )
        .unwrap();
        let out = run_files(
            &[(name, bytes.as_slice())],
            &SimConfig::default(),
            &RunOptions::default(),
        )
        .unwrap();
        let (a, b) = (&direct.summary, out.summary());
        assert_eq!(a.iteration_time_ns, b.iteration_time_ns, "{name}");
        assert_eq!(a.exposed_comm_ns, b.exposed_comm_ns);
        assert_eq!(a.simai_bubble_ns, b.simai_bubble_ns);
        assert!(out.summary().representative_ranks);
    }
    // A world override changes DP (and the DP collectives' cost).
    let bytes = fixture_bytes("seeds/simai_llama65b_tp8_pp4_vpp8.txt");
    let at = |world| {
        run_files(
            &[("s0.txt", bytes.as_slice())],
            &SimConfig::default(),
            &RunOptions {
                world,
                ..RunOptions::default()
            },
        )
        .unwrap()
    };
    let (a, b) = (at(None), at(Some(128)));
    assert_eq!((a.parallel.dp, b.parallel.dp), (16, 4));
    assert_ne!(
        a.summary().exposed_comm_ns.dp,
        b.summary().exposed_comm_ns.dp
    );
    // Pipeline transfers exist between the four stages.
    assert!(a
        .result
        .timeline
        .flows()
        .iter()
        .all(|f| f.bytes == 20_971_520));
    let sends = (0..a.result.timeline.lanes().len() as u32)
        .flat_map(|l| a.result.timeline.spans(l))
        .filter(|s| s.kind == SpanKind::Send)
        .count();
    assert_eq!(sends, a.result.timeline.flows().len());
}
