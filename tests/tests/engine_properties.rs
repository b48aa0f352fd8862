//! Property tests over random small jobs (SPMD and per-rank, every schedule,
//! random layers, collectives, transfers, once-per-iteration rows, cluster
//! shapes): no two spans overlap on one lane, every dependency ends before
//! its dependent starts, every micro-batch's forward precedes its backward
//! on every stage, bytes sent equal bytes received, the summary adds up,
//! the same input gives the same output, a summary-only run gives the
//! same summary without a timeline, and the engine's FIFO of same-time
//! events runs each job (and the job with host launches and sync points)
//! exactly as the reference priority queue does.

use proptest::prelude::*;
use std::collections::BTreeMap;
use trainscope_core::engine::spec::{
    Block, CollectiveKind, CommSpec, GroupKind, JobMode, JobSpec, LayerSpec, Parallelism, PhaseOps,
    RankProgram,
};
use trainscope_core::engine::{build, event::Engine, simai_cost};
use trainscope_core::engine::{config::PlacementOrder, network::Placement};
use trainscope_core::timeline::{SpanKind, SpanRef, Stream};
use trainscope_core::{
    engine::{Algorithm, ScheduleKind, SimConfig, SimResult},
    export,
};

fn comm_strategy() -> impl Strategy<Value = Option<CommSpec>> {
    prop_oneof![
        3 => Just(None),
        1 => (0usize..4, 0usize..4, 1u64..(64 << 20)).prop_map(|(c, g, bytes)| {
            let collective = [
                CollectiveKind::AllReduce,
                CollectiveKind::AllGather,
                CollectiveKind::ReduceScatter,
                CollectiveKind::AllToAll,
            ][c];
            let group = [GroupKind::Tp, GroupKind::Dp, GroupKind::Ep, GroupKind::DpEp][g];
            Some(CommSpec { collective, group, size_bytes: bytes, prefetch: 0 })
        }),
    ]
}

fn phase_strategy() -> impl Strategy<Value = PhaseOps> {
    (
        prop_oneof![1 => Just(0u64), 4 => 1u64..5_000_000],
        comm_strategy(),
    )
        .prop_map(|(compute_ns, comm)| PhaseOps {
            compute_ns,
            comm,
            ..Default::default()
        })
}

fn layer_strategy() -> impl Strategy<Value = LayerSpec> {
    (
        phase_strategy(),
        phase_strategy(),
        phase_strategy(),
        0u64..2_000,
    )
        .prop_map(|(forward, input_grad, weight_grad, update_ns)| LayerSpec {
            name: "layer".into(),
            forward,
            input_grad,
            weight_grad,
            update_ns,
        })
}

#[derive(Debug, Clone)]
struct Case {
    job: JobSpec,
    config: SimConfig,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        (1u32..4, 1u32..3, 1u32..3, 1u32..3, 1u32..4),
        (
            0usize..3,
            1u32..4,
            prop::collection::vec(layer_strategy(), 1..5),
        ),
        (
            prop::collection::vec(layer_strategy(), 0..3),
            prop::collection::vec(layer_strategy(), 0..2),
        ),
        (
            prop_oneof![Just(0u64), 1u64..(32 << 20)],
            0usize..4,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
        (
            any::<bool>(),
            0u64..1000,
            prop::collection::vec(0u64..3_000_000, 8),
        ),
    )
        .prop_map(|(sizes, sched, rows, net, per_rank)| {
            let (pp, tp, dp_half, ep, k) = sizes;
            let (sched_i, v_raw, layers) = sched;
            let (pre_rows, post_rows) = rows;
            let (act, gpn_i, overlap, tree, ring_latency) = net;
            let (per_rank_mode, seed, jitter) = per_rank;
            let ep = if ep == 2 { 2 } else { 1 };
            let dp = dp_half * ep;
            let schedule = [
                ScheduleKind::GPipe,
                ScheduleKind::OneFOneB,
                ScheduleKind::Interleaved,
            ][sched_i];
            // Megatron's chunks are whole layers, layers / v each: the
            // largest divisor of the layer count not above v_raw.
            let v = if schedule == ScheduleKind::Interleaved {
                (1..=v_raw)
                    .rev()
                    .find(|d| (layers.len() as u32).is_multiple_of(*d))
                    .unwrap_or(1)
            } else {
                1
            };
            let m = if schedule == ScheduleKind::Interleaved {
                pp * k
            } else {
                k + seed as u32 % 3
            };
            let parallel = Parallelism {
                tp,
                dp,
                pp,
                ep,
                cp: 1,
                etp: None,
                dp_shard: 0,
            };
            let block = Block { layers };
            let mut job = JobSpec::spmd("prop", parallel, m, act, block.clone());
            for p in &mut job.programs {
                p.pre_rows = pre_rows.clone();
                p.post_rows = post_rows.clone();
            }
            let mut config = SimConfig {
                schedule,
                virtual_stages: v,
                overlap_grad_sync: overlap,
                algorithm: if tree {
                    Algorithm::Tree
                } else {
                    Algorithm::Ring
                },
                ..SimConfig::default()
            };
            config.network.gpus_per_node = [1, 2, 4, 8][gpn_i];
            config.network.nics_per_node = [1, 1, 2, 4][gpn_i];
            if ring_latency {
                config.network.nic_latency_ns = 0;
            }
            if per_rank_mode {
                // Every rank simulated, each with its own jittered durations
                // per micro-batch (as a measured run would give).
                let placement = Placement::new(
                    parallel,
                    PlacementOrder::default(),
                    config.network.gpus_per_node,
                );
                let mut programs = Vec::new();
                for rank in 0..(parallel.world() as u32) {
                    let stage = placement.coords_of(rank).pp;
                    let blocks: Vec<Block> = (0..m)
                        .map(|mb| {
                            let mut b = block.clone();
                            for (i, l) in b.layers.iter_mut().enumerate() {
                                let j = jitter[(rank as usize + mb as usize + i) % jitter.len()];
                                if l.forward.compute_ns > 0 {
                                    l.forward.compute_ns += j;
                                }
                            }
                            b
                        })
                        .collect();
                    programs.push(RankProgram {
                        rank,
                        stage,
                        blocks,
                        micro_batch_blocks: (0..m).collect(),
                        pre_rows: pre_rows.clone(),
                        post_rows: post_rows.clone(),
                        order: None,
                        chunk_layers: Vec::new(),
                    });
                }
                job.mode = JobMode::PerRank;
                job.programs = programs;
            }
            Case { job, config }
        })
}

fn check(case: &Case, r: &SimResult) -> Result<(), TestCaseError> {
    let t = &r.timeline;
    let job = &case.job;
    // 1. No overlap on a lane.
    for (li, _) in t.lanes().iter().enumerate() {
        let spans = t.spans(li as u32);
        for w in spans.windows(2) {
            prop_assert!(
                w[0].end_ns() <= w[1].start_ns,
                "overlap on lane {}: {:?} / {:?}",
                li,
                w[0],
                w[1]
            );
        }
    }
    // 2. Dependencies end before dependents start.
    let mut edges = 0usize;
    for (li, _) in t.lanes().iter().enumerate() {
        for i in 0..t.spans(li as u32).len() {
            let r = SpanRef {
                lane: li as u32,
                index: i as u32,
            };
            let s = t.span(r).unwrap();
            for d in t.dependencies(r) {
                edges += 1;
                let ds = t.span(*d).unwrap();
                prop_assert!(
                    ds.end_ns() <= s.start_ns,
                    "dependency {:?} ends after {:?} starts",
                    ds,
                    s
                );
            }
        }
    }
    let compute_spans: usize = t
        .lanes()
        .iter()
        .enumerate()
        .filter(|(_, l)| l.stream == Stream::Compute)
        .map(|(i, _)| t.spans(i as u32).len())
        .sum();
    if compute_spans > 1 {
        prop_assert!(edges > 0, "no dependency recorded");
    }
    // 3. Forward before backward, per (compute lane, micro-batch, chunk).
    for (li, lane) in t.lanes().iter().enumerate() {
        if lane.stream != Stream::Compute {
            continue;
        }
        let mut fwd_end: BTreeMap<(u32, u8), u64> = BTreeMap::new();
        let mut bwd_start: BTreeMap<(u32, u8), u64> = BTreeMap::new();
        for s in t.spans(li as u32) {
            let Some(mb) = s.micro_batch() else { continue };
            let key = (mb, s.chunk);
            match s.kind {
                SpanKind::Forward => {
                    let e = fwd_end.entry(key).or_insert(0);
                    *e = (*e).max(s.end_ns());
                }
                SpanKind::InputGrad | SpanKind::WeightGrad => {
                    let e = bwd_start.entry(key).or_insert(u64::MAX);
                    *e = (*e).min(s.start_ns);
                }
                _ => {}
            }
        }
        for (key, b) in &bwd_start {
            if let Some(f) = fwd_end.get(key) {
                prop_assert!(
                    f <= b,
                    "lane {} mb/chunk {:?}: forward ends {} after backward starts {}",
                    li,
                    key,
                    f,
                    b
                );
            }
        }
    }
    // 4. Bytes. A transfer is one rendezvous task drawn on both ends (the
    // sender's send lane, the receiver's receive lane), so the two lanes
    // agree by construction; what can fail is the flow count and the total
    // sent against what the job specifies (below), and flows that stay
    // inside one stage.
    let mut sent = 0u64;
    let mut received = 0u64;
    for (li, lane) in t.lanes().iter().enumerate() {
        let b: u64 = t.spans(li as u32).iter().map(|s| s.bytes).sum();
        match lane.stream {
            Stream::Send => sent += b,
            Stream::Recv => received += b,
            _ => {}
        }
    }
    prop_assert_eq!(sent, received);
    for f in t.flows() {
        let (a, b) = (t.span(f.from).unwrap(), t.span(f.to).unwrap());
        prop_assert_eq!(a.bytes, f.bytes);
        prop_assert_eq!(b.bytes, f.bytes);
        prop_assert_eq!((a.start_ns, a.duration_ns), (b.start_ns, b.duration_ns));
        prop_assert!(t.lanes()[f.from.lane as usize].stage != t.lanes()[f.to.lane as usize].stage);
    }
    // The number of transfers: every virtual-stage boundary, both ways, per
    // micro-batch and per receiving rank.
    let (p, m, v) = (
        job.parallel.pp,
        r.summary.micro_batches,
        r.summary.virtual_stages,
    );
    let receivers_per_stage = (job.programs.len() as u32) / p;
    // A V-shaped placement's middle boundary stays on the last stage.
    let local = u32::from(
        case.config.schedule.placement()
            == trainscope_core::engine::schedule::ChunkPlacement::VShape,
    );
    let want = if p > 1 && job.activation_bytes > 0 {
        2 * m * (v * p - 1 - local) * receivers_per_stage
    } else {
        0
    };
    prop_assert_eq!(t.flows().len() as u32, want);
    prop_assert_eq!(sent, u64::from(want) * job.activation_bytes);
    // 5. The decomposition adds up on every rank.
    let it = r.summary.iteration_time_ns;
    prop_assert_eq!(it, t.end_ns());
    for s in &r.summary.stages {
        let sum = s.compute_ns + s.bubble_ns + s.exposed_comm_ns.total() + s.other_idle_ns;
        prop_assert_eq!(sum, it, "stage {} rank {}", s.stage, s.rank);
    }
    // 6. The critical path is a chain that ends at the end.
    let path = t.critical_path();
    if let Some(last) = path.last() {
        prop_assert_eq!(t.span(*last).unwrap().end_ns(), it);
        for w in path.windows(2) {
            let (a, b) = (t.span(w[0]).unwrap(), t.span(w[1]).unwrap());
            prop_assert!(a.end_ns() <= b.start_ns);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(trainscope_tests::proptest_config(160))]
    #[test]
    fn random_jobs_keep_the_invariants(case in case_strategy()) {
        let r = trainscope_core::engine::simulate(&case.job, &case.config);
        let r = match r {
            Ok(r) => r,
            Err(e) => return Err(TestCaseError::fail(format!("simulation failed: {e}"))),
        };
        check(&case, &r)?;
        // Determinism: a second run gives identical exports.
        let again = trainscope_core::engine::simulate(&case.job, &case.config).unwrap();
        prop_assert_eq!(export::chrome_trace_json(&r.timeline), export::chrome_trace_json(&again.timeline));
        prop_assert_eq!(export::summary_json(&r.summary), export::summary_json(&again.summary));
        same_without_timeline(&case, &r)?;
        same_as_reference_queue(&case)?;
    }
}

/// One run through the engine, its event queue the reference priority
/// queue or not: every task's times and binding, the counters, the summary
/// and the activation series.
type EngineRun = (
    Vec<trainscope_core::engine::event::TaskTimes>,
    trainscope_core::engine::event::EngineStats,
    trainscope_core::engine::Summary,
    Vec<trainscope_core::engine::summary::ActivationSeries>,
);

fn engine_run(job: &JobSpec, config: &SimConfig, reference: bool) -> EngineRun {
    let cost = simai_cost::cost_for(job.parallel, config, None).unwrap();
    let model = build::build(job, config, cost.as_ref()).unwrap();
    let mut engine = Engine::new(model.graph).unwrap();
    if reference {
        engine = engine.with_reference_queue();
    }
    engine.run().unwrap();
    let (_, summary, activations) = build::finish_all(&model.meta, &engine, config).unwrap();
    (
        engine.all_times().to_vec(),
        engine.stats(),
        summary,
        activations,
    )
}

/// `job` with a host model: every compute op launched in a time drawn
/// from `seed` (from none to longer than the op, so some launches bind
/// and some do not) and every few ops a sync point.
fn with_host(job: &JobSpec, seed: u64) -> JobSpec {
    let mut job = job.clone();
    let mut i = seed;
    let mut host = |ops: &mut PhaseOps| {
        i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let x = i >> 33;
        ops.launch_ns = match x % 4 {
            0 => 0,
            1 => 3_000 + x % 5_000,
            2 => ops.compute_ns / 2,
            _ => ops.compute_ns + x % 100_000,
        };
        ops.host_sync = x.is_multiple_of(7);
        ops.launches = (x % 37) as u32;
    };
    for prog in &mut job.programs {
        let rows = prog.pre_rows.iter_mut().chain(prog.post_rows.iter_mut());
        let layers = prog.blocks.iter_mut().flat_map(|b| b.layers.iter_mut());
        for l in rows.chain(layers) {
            host(&mut l.forward);
            host(&mut l.input_grad);
            host(&mut l.weight_grad);
        }
    }
    job
}

/// The engine's FIFO of events at the current time gives what the
/// reference priority queue gives, field for field, with and without a
/// host model, summary-only and not, with a launch queue of a few entries;
/// an unbounded launch queue changes nothing.
fn same_as_reference_queue(case: &Case) -> Result<(), TestCaseError> {
    let hosted = with_host(&case.job, case.config.network.nic_latency_ns ^ 0x5eed);
    let lean = SimConfig {
        summary_only: true,
        ..case.config.clone()
    };
    // A launch queue of 1 to 64 entries. Per-rank jobs without gangs: a
    // host held back by its queue changes the order in which a rank's
    // collectives become ready, and ganged collectives issued in different
    // orders on two ranks wait for each other for ever (as NCCL's would);
    // model jobs, the only ones with launch queues, are SPMD.
    let queued = SimConfig {
        launch_queue_depth: Some(1 + (case.config.network.nic_latency_ns % 64) as u32),
        sync_collectives: false,
        ..lean.clone()
    };
    let queued_full = SimConfig {
        summary_only: false,
        ..queued.clone()
    };
    for (job, config) in [
        (&case.job, &case.config),
        (&hosted, &case.config),
        (&hosted, &lean),
        (&hosted, &queued),
        (&hosted, &queued_full),
    ] {
        let fast = engine_run(job, config, false);
        let reference = engine_run(job, config, true);
        prop_assert_eq!(&fast.0, &reference.0);
        prop_assert_eq!(fast.1, reference.1);
        prop_assert_eq!(&fast.2, &reference.2);
        prop_assert_eq!(&fast.3, &reference.3);
    }
    // A queue deeper than every launch of the iteration is no bound: the
    // same tasks at the same times as with none.
    let deep = SimConfig {
        launch_queue_depth: Some(u32::MAX),
        ..case.config.clone()
    };
    let none = engine_run(&hosted, &case.config, false);
    let bounded = engine_run(&hosted, &deep, false);
    prop_assert_eq!(&none.0, &bounded.0);
    prop_assert_eq!(&none.2, &bounded.2);
    Ok(())
}

/// A summary-only run (`SimConfig::summary_only`, what the configuration
/// search runs) gives the same summary, field for field, and the same
/// activation series, with an empty timeline.
fn same_without_timeline(case: &Case, r: &SimResult) -> Result<(), TestCaseError> {
    let lean = SimConfig {
        summary_only: true,
        ..case.config.clone()
    };
    let s = trainscope_core::engine::simulate(&case.job, &lean).unwrap();
    prop_assert_eq!(&s.summary, &r.summary);
    prop_assert_eq!(&s.activations, &r.activations);
    prop_assert_eq!(s.stats, r.stats);
    prop_assert_eq!(s.timeline.span_count(), 0);
    prop_assert!(s.timeline.lanes().is_empty() && s.timeline.counters().is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(trainscope_tests::proptest_config(96))]
    /// The same invariants under the zero-bubble schedules (backward split
    /// into B and W steps) and DualPipeV (overlapped pairs): the random job
    /// runs ZB-H1, ZB-H2, ZB-V or DualPipeV with enough micro-batches
    /// (any m, m >= 2p - 1, m >= 2p, m >= 2p).
    #[test]
    fn zero_bubble_jobs_keep_the_invariants(case in case_strategy(), which in 0usize..4) {
        let mut case = case;
        let p = case.job.parallel.pp;
        let (schedule, least) = [
            (ScheduleKind::ZbH1, 1),
            (ScheduleKind::ZbH2, 2 * p - 1),
            (ScheduleKind::ZbV, 2 * p),
            (ScheduleKind::DualPipeV, 2 * p),
        ][which];
        if schedule.chunks(1) == 2 {
            // Two chunks of whole layers: an even layer count per block.
            for prog in &mut case.job.programs {
                for b in &mut prog.blocks {
                    if b.layers.len() % 2 == 1 {
                        let last = b.layers[b.layers.len() - 1].clone();
                        b.layers.push(last);
                    }
                }
            }
        }
        case.config.schedule = schedule;
        case.config.virtual_stages = 1;
        case.job.micro_batches = case.job.micro_batches.max(least);
        let r = match trainscope_core::engine::simulate(&case.job, &case.config) {
            Ok(r) => r,
            Err(e) => return Err(TestCaseError::fail(format!("simulation failed: {e}"))),
        };
        prop_assert_eq!(r.summary.schedule, schedule.name());
        check(&case, &r)?;
        let again = trainscope_core::engine::simulate(&case.job, &case.config).unwrap();
        prop_assert_eq!(export::summary_json(&r.summary), export::summary_json(&again.summary));
        same_without_timeline(&case, &r)?;
        same_as_reference_queue(&case)?;
    }
}
