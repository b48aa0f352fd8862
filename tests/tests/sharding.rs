//! Sharded data parallelism (issue 25): the ZeRO stages' bytes per
//! parameter against the ZeRO paper's Psi (2 + 2 + K) / N_d with
//! Megatron's byte counts, ZeRO-1 as the distributed optimizer, the
//! refusals, FSDP's collective sizes per unit and the unsharded units in
//! memory, the event engine's all-gathers and reduce-scatters on the DP
//! lane, and the sweep finding a layout that fits only with sharding or
//! only with offload.

use trainscope_core::engine::SimConfig;
use trainscope_core::hardware::{gpu_preset, Precision};
use trainscope_core::job::layout::{gradient_bytes, weight_bytes};
use trainscope_core::job::memory::{memory_report, optimizer_bytes, stage_params};
use trainscope_core::job::run::run_model;
use trainscope_core::job::sharding::{
    gradient_reduce_scatter, unit_collectives, unit_params, unsharded_unit_bytes, ZeroStage,
    MAX_FSDP_PREFETCH,
};
use trainscope_core::job::{JobError, ModelJob, TrainingSetup};
use trainscope_core::model::presets::preset;
use trainscope_core::search::{enumerate, evaluate, sweep_config, SweepSpec};
use trainscope_core::timeline::{CollOp, SpanKind};
use trainscope_core::workload::{CommGroup, CommKind};

fn llama3_70b() -> trainscope_core::model::ModelSpec {
    preset("llama3-70b").unwrap()
}

/// Llama 3 70B on 64 H100s, TP 8 x DP 8, the setup changed by `f`.
fn job(f: impl FnOnce(&mut TrainingSetup)) -> Result<ModelJob, JobError> {
    let mut s = TrainingSetup {
        tp: 8,
        pp: 1,
        dp: Some(8),
        global_batch_size: Some(64),
        ..TrainingSetup::default()
    };
    f(&mut s);
    ModelJob::new(llama3_70b(), s, gpu_preset("H100").unwrap(), None)
}

/// (weights + gradients + optimizer) / parameters of the only stage.
fn bytes_per_param(j: &ModelJob) -> f64 {
    let st = &memory_report(j, &[1], 1).per_stage[0];
    (st.weights_bytes + st.gradients_bytes + st.optimizer_bytes) as f64 / st.parameters as f64
}

/// The ZeRO paper's Psi (2 + 2 + K) split over N_d = 8, with the
/// byte counts of Megatron's table for each precision (w weight, g
/// gradient, K optimizer bytes per parameter).
#[test]
fn bytes_per_parameter_follow_the_zero_paper() {
    for (precision, bf16_grads) in [
        (Precision::Bf16, false),
        (Precision::Bf16, true),
        (Precision::Fp16, false),
        (Precision::Fp32, false),
    ] {
        let base = job(|s| {
            s.precision = precision;
            s.bf16_grads = bf16_grads;
        })
        .unwrap();
        let w = weight_bytes(precision) as f64;
        let g = gradient_bytes(&base.setup) as f64;
        let k = optimizer_bytes(&base.setup) as f64;
        let n = 8.0;
        for (zero, want) in [
            (ZeroStage::None, w + g + k),
            (ZeroStage::Optimizer, w + g + k / n),
            (ZeroStage::Gradients, w + (g + k) / n),
            (ZeroStage::Parameters, (w + g + k) / n),
        ] {
            let j = job(|s| {
                s.precision = precision;
                s.bf16_grads = bf16_grads;
                s.sharding.zero = zero;
            })
            .unwrap();
            let got = bytes_per_param(&j);
            assert!(
                (got - want).abs() < 1e-3,
                "{precision:?} bf16 grads {bf16_grads} ZeRO {}: {got} vs {want}",
                zero.level()
            );
        }
    }
    // bf16 mixed precision: 2 + 4 + 12 = 18 bytes, 18 / 8 at ZeRO-3.
    let j = job(|s| s.sharding.zero = ZeroStage::Parameters).unwrap();
    assert!((bytes_per_param(&j) - 18.0 / 8.0).abs() < 1e-3);
}

#[test]
fn zero_1_is_the_distributed_optimizer() {
    let a = job(|s| s.distributed_optimizer = true).unwrap();
    let b = job(|s| s.sharding.zero = ZeroStage::Optimizer).unwrap();
    assert_eq!(a.setup, b.setup);
    assert_eq!(a.setup.sharding.zero, ZeroStage::Optimizer);
    for z in [ZeroStage::Gradients, ZeroStage::Parameters] {
        assert!(
            job(|s| s.sharding.zero = z)
                .unwrap()
                .setup
                .distributed_optimizer
        );
    }
    assert!(!job(|_| {}).unwrap().setup.distributed_optimizer);
}

#[test]
fn meaningless_combinations_are_refused_with_a_message() {
    let e = job(|s| {
        s.pp = 2;
        s.dp = Some(4);
        s.sharding.zero = ZeroStage::Gradients;
    })
    .unwrap_err();
    assert!(
        e.message
            .starts_with("ZeRO-2 with pipeline parallelism (PP 2)"),
        "{}",
        e.message
    );
    assert!(e.hint.contains("--zero 3"), "{}", e.hint);
    // ZeRO-3 composes with PP (torchtitan's FSDP + PP).
    assert!(job(|s| {
        s.pp = 2;
        s.dp = Some(4);
        s.sharding.zero = ZeroStage::Parameters;
    })
    .is_ok());
    let e = job(|s| s.sharding.prefetch = 2).unwrap_err();
    assert!(e.message.contains("FSDP prefetch 2"), "{}", e.message);
    let e = job(|s| s.sharding.reshard_after_forward = false).unwrap_err();
    assert!(e.message.contains("ZeRO-3"), "{}", e.message);
    let e = job(|s| {
        s.sharding.zero = ZeroStage::Parameters;
        s.sharding.prefetch = MAX_FSDP_PREFETCH + 1;
    })
    .unwrap_err();
    assert!(e.message.contains("more than"), "{}", e.message);
}

#[test]
fn units_add_up_to_the_stage_and_their_collectives_move_them() {
    let j = job(|s| s.sharding.zero = ZeroStage::Parameters).unwrap();
    let total: u64 = (0..j.model.num_layers)
        .map(|l| {
            let (d, e) = unit_params(&j, l);
            d + e
        })
        .sum();
    assert_eq!(total, stage_params(&j, 0).total());
    for layer in [0, 7, j.model.num_layers - 1] {
        let (before, after) = unit_collectives(&j, layer);
        let (d, _) = unit_params(&j, layer);
        let ag = before[0].forward.comm.unwrap();
        assert_eq!(
            (ag.kind, ag.group, ag.size_bytes),
            (CommKind::AllGather, CommGroup::Dp, 2 * d)
        );
        assert_eq!(ag.prefetch, 1);
        let rs = before[0].weight_grad.comm.unwrap();
        assert_eq!((rs.kind, rs.size_bytes), (CommKind::ReduceScatter, 4 * d));
        assert!(rs.asynchronous);
        let again = after[0].input_grad.comm.unwrap();
        assert_eq!((again.kind, again.size_bytes), (CommKind::AllGather, 2 * d));
        assert!(before[0].name.starts_with("attention"));
    }
    // Without resharding: one all-gather a unit, every layer gathered.
    let keep = job(|s| {
        s.sharding.zero = ZeroStage::Parameters;
        s.sharding.reshard_after_forward = false;
    })
    .unwrap();
    assert!(unit_collectives(&keep, 3).1.is_empty());
    assert!(unsharded_unit_bytes(&keep, 0) > unsharded_unit_bytes(&j, 0));
    // Only ZeRO-3 gathers per unit.
    let z2 = job(|s| s.sharding.zero = ZeroStage::Gradients).unwrap();
    assert!(unit_collectives(&z2, 3).0.is_empty());
}

#[test]
fn prefetch_holds_more_units() {
    let p = |k| {
        let j = job(|s| {
            s.sharding.zero = ZeroStage::Parameters;
            s.sharding.prefetch = k;
        })
        .unwrap();
        unsharded_unit_bytes(&j, 0)
    };
    // The last layer carries the final norm and output layer: the
    // largest unit.
    let j = job(|_| {}).unwrap();
    let (d, _) = unit_params(&j, j.model.num_layers - 1);
    assert_eq!(p(1), 2 * 2 * d + 4 * d);
    assert_eq!(p(2) - p(1), 2 * d);
}

/// Every DP-lane collective of a simulated job: (op, bytes).
fn dp_collectives(j: &ModelJob) -> (Vec<(CollOp, u64)>, u64) {
    let mut c = SimConfig::default();
    c.network.nvlink_gbps = j.gpu.nvlink_busbw_gbps;
    let out = run_model(j, &c).unwrap();
    let t = &out.run.result.timeline;
    let mut v = Vec::new();
    for (li, _) in t.lanes().iter().enumerate() {
        for s in t.spans(li as u32) {
            if s.kind == SpanKind::CollDp {
                v.push((s.coll, s.bytes));
            }
        }
    }
    (v, out.run.summary().iteration_time_ns)
}

/// Llama 3 8B on 8 GPUs, DP 8, 2 micro-batches: ZeRO-3 all-gathers each
/// layer's weights before its forward and its backward and
/// reduce-scatters its gradients after the backward, per micro-batch, on
/// the DP lane; ZeRO-1 reduce-scatters once and all-gathers once.
#[test]
fn fsdp_collectives_run_per_unit_on_the_dp_lane() {
    let setup = |zero| TrainingSetup {
        global_batch_size: Some(16),
        seq_length: 2048,
        sharding: trainscope_core::job::sharding::Sharding {
            zero,
            ..Default::default()
        },
        ..TrainingSetup::default()
    };
    let gpu = gpu_preset("H100").unwrap();
    let m = preset("llama3-8b").unwrap();
    let z3 = ModelJob::new(
        m.clone(),
        setup(ZeroStage::Parameters),
        gpu.clone(),
        Some(8),
    )
    .unwrap();
    let z1 = ModelJob::new(m.clone(), setup(ZeroStage::Optimizer), gpu, Some(8)).unwrap();
    let layers = u64::from(m.num_layers);
    let micro = u64::from(z3.micro_batches);
    assert_eq!(micro, 2);
    let (c3, t3) = dp_collectives(&z3);
    let count = |v: &[(CollOp, u64)], op| v.iter().filter(|c| c.0 == op).count() as u64;
    assert_eq!(count(&c3, CollOp::AllGather), 2 * layers * micro);
    assert_eq!(count(&c3, CollOp::ReduceScatter), layers * micro);
    // The bytes of each layer's gathers: its weights in bf16.
    let gathered: u64 = c3
        .iter()
        .filter(|c| c.0 == CollOp::AllGather)
        .map(|c| c.1)
        .sum();
    let all: u64 = (0..m.num_layers)
        .map(|l| unit_params(&z3, l).0 + unit_params(&z3, l).1)
        .sum();
    assert_eq!(gathered, 2 * micro * 2 * all);
    let (c1, t1) = dp_collectives(&z1);
    assert_eq!(count(&c1, CollOp::AllGather), 1);
    assert_eq!(count(&c1, CollOp::ReduceScatter), 1);
    // Both simulate; ZeRO-3's gathers are prefetched behind the compute
    // (see `prefetch_hides_the_gathers_behind_long_compute`), its
    // reduce-scatters overlap the backward, where ZeRO-1's closing
    // reduce-scatter and all-gather wait for the last backward.
    assert!(t3 > 0 && t1 > 0);
}

/// Llama 3 70B on 64 H100s without model parallelism (TP 1, PP 1, DP
/// 64): with the distributed optimizer alone every rank keeps 70 B bf16
/// weights and fp32 gradients (6 bytes a parameter, over 390 GiB); ZeRO-3
/// shards them (18 / 64 bytes a parameter) and the sweep finds that it
/// fits.
#[test]
fn the_sweep_finds_layouts_that_fit_only_with_sharding() {
    let gpu = gpu_preset("H100").unwrap();
    let mut spec = SweepSpec::new(llama3_70b(), gpu, 64);
    spec.global_batch_size = 64;
    spec.seq_length = 2048;
    spec.tp = Some(vec![1]);
    spec.pp = Some(vec![1]);
    spec.micro_batch_size = Some(vec![1]);
    spec.recompute = Some(vec![trainscope_core::job::Recompute::Full]);
    spec.schedule = Some(vec![trainscope_core::engine::ScheduleKind::OneFOneB]);
    spec.zero = Some(vec![ZeroStage::Optimizer, ZeroStage::Parameters]);
    let e = enumerate(&spec);
    assert_eq!(e.candidates.len(), 2);
    let config = sweep_config(&SimConfig::default());
    let rows: Vec<_> = e
        .candidates
        .iter()
        .map(|c| evaluate(c, &config, "--model llama3-70b", None).unwrap())
        .collect();
    assert_eq!(rows[0].zero, 1);
    assert!(!rows[0].fits, "ZeRO-1 at TP 1 x DP 64 keeps 70 B weights");
    assert_eq!(rows[1].zero, 3);
    assert!(rows[1].fits, "{} bytes", rows[1].peak_bytes);
    assert!(rows[1].flags.contains("--zero 3"), "{}", rows[1].flags);
}

/// Offload as a sweep dimension: Llama 3 8B on 2 H100s (TP 1, PP 1, DP
/// 2, ZeRO-1) keeps bf16 weights, fp32 gradients and half the optimizer
/// states (2 + 4 + 12 / 2 bytes a parameter, about 90 GiB): it does not
/// fit; with the optimizer states in host memory (2 + 4 bytes) it does,
/// and the sweep finds it. Weights offload needs ZeRO-3: skipped with the
/// job's reason.
#[test]
fn the_sweep_finds_layouts_that_fit_only_with_offload() {
    use trainscope_core::job::sharding::Offload;
    let gpu = gpu_preset("H100").unwrap();
    let mut spec = SweepSpec::new(preset("llama3-8b").unwrap(), gpu, 2);
    spec.global_batch_size = 2;
    spec.seq_length = 2048;
    spec.tp = Some(vec![1]);
    spec.pp = Some(vec![1]);
    spec.micro_batch_size = Some(vec![1]);
    spec.recompute = Some(vec![trainscope_core::job::Recompute::Full]);
    spec.schedule = Some(vec![trainscope_core::engine::ScheduleKind::OneFOneB]);
    spec.zero = Some(vec![ZeroStage::Optimizer]);
    spec.offload = Some(Offload::ALL.to_vec());
    assert!(spec
        .describe()
        .ends_with("| offload none,optimizer,optimizer+params"));
    let e = enumerate(&spec);
    assert_eq!(e.candidates.len(), 2);
    assert_eq!(e.skipped, 1);
    assert!(
        e.skipped_reasons[0].reason.contains("ZeRO-3"),
        "{}",
        e.skipped_reasons[0].reason
    );
    let config = sweep_config(&SimConfig::default());
    let rows: Vec<_> = e
        .candidates
        .iter()
        .map(|c| evaluate(c, &config, "--model llama3-8b", None).unwrap())
        .collect();
    assert_eq!(rows[0].offload, Offload::None);
    assert!(!rows[0].fits, "{} bytes", rows[0].peak_bytes);
    assert_eq!(rows[1].offload, Offload::Optimizer);
    assert!(rows[1].fits, "{} bytes", rows[1].peak_bytes);
    assert!(
        rows[1].flags.contains("--offload optimizer"),
        "{}",
        rows[1].flags
    );
    // The row's JSON names it; rows without offload do not.
    let json = serde_json::to_value(&rows[1]).unwrap();
    assert_eq!(json["offload"], "optimizer");
    assert!(serde_json::to_value(&rows[0])
        .unwrap()
        .get("offload")
        .is_none());
}

/// Prefetch on a toy where compute is long (Llama 3 8B, 8192-token
/// sequences on 2 GPUs of one node): each unit's all-gather is issued
/// when the previous unit starts computing and hides behind it, so the
/// exposed DP time is at most the gathers nothing can hide (the first
/// unit's, before any compute) and the last reduce-scatter (after the last
/// backward): far below the gathers' total.
#[test]
fn prefetch_hides_the_gathers_behind_long_compute() {
    let setup = TrainingSetup {
        global_batch_size: Some(2),
        seq_length: 8192,
        sharding: trainscope_core::job::sharding::Sharding {
            zero: ZeroStage::Parameters,
            ..Default::default()
        },
        ..TrainingSetup::default()
    };
    let gpu = gpu_preset("H100").unwrap();
    let j = ModelJob::new(preset("llama3-8b").unwrap(), setup, gpu, Some(2)).unwrap();
    let mut c = SimConfig::default();
    c.network.nvlink_gbps = j.gpu.nvlink_busbw_gbps;
    let out = run_model(&j, &c).unwrap();
    let t = &out.run.result.timeline;
    let mut gathers = Vec::new();
    let mut scatters = Vec::new();
    for (li, _) in t.lanes().iter().enumerate() {
        for s in t.spans(li as u32) {
            match (s.kind, s.coll) {
                (SpanKind::CollDp, CollOp::AllGather) => gathers.push(s.duration_ns),
                (SpanKind::CollDp, CollOp::ReduceScatter) => scatters.push(s.duration_ns),
                _ => {}
            }
        }
    }
    let summary = out.run.summary();
    let exposed = summary.exposed_comm_ns.dp;
    let total: u64 = gathers.iter().sum();
    let unavoidable = gathers.first().copied().unwrap_or(0) + scatters.last().copied().unwrap_or(0);
    println!(
        "gathers {} total {:.1} ms, exposed DP {:.1} ms, first gather + last reduce-scatter {:.1} ms",
        gathers.len(),
        total as f64 / 1e6,
        exposed as f64 / 1e6,
        unavoidable as f64 / 1e6
    );
    assert_eq!(gathers.len(), 2 * 32);
    assert!(exposed <= unavoidable, "{exposed} > {unavoidable}");
    assert!(exposed * 5 < total, "{exposed} vs {total}");
}

/// Prefetching further ahead hides more where the gathers queue behind
/// the reduce-scatters on the DP stream (Llama 3 8B on 8 GPUs, 2048
/// tokens): the exposed DP time does not grow with the depth, and the
/// gathers are issued earlier.
#[test]
fn deeper_prefetch_exposes_no_more() {
    let run = |prefetch| {
        let setup = TrainingSetup {
            global_batch_size: Some(16),
            seq_length: 2048,
            sharding: trainscope_core::job::sharding::Sharding {
                zero: ZeroStage::Parameters,
                prefetch,
                ..Default::default()
            },
            ..TrainingSetup::default()
        };
        let gpu = gpu_preset("H100").unwrap();
        let j = ModelJob::new(preset("llama3-8b").unwrap(), setup, gpu, Some(8)).unwrap();
        let mut c = SimConfig::default();
        c.network.nvlink_gbps = j.gpu.nvlink_busbw_gbps;
        let out = run_model(&j, &c).unwrap();
        let s = out.run.summary();
        (s.exposed_comm_ns.dp, s.iteration_time_ns)
    };
    let (e1, t1) = run(1);
    let (e2, t2) = run(2);
    let (e4, t4) = run(4);
    println!("prefetch 1: exposed DP {e1} ns, {t1} ns; 2: {e2}, {t2}; 4: {e4}, {t4}");
    assert!(e2 <= e1 && e4 <= e2, "{e1} {e2} {e4}");
    assert!(t2 <= t1 && t4 <= t2, "{t1} {t2} {t4}");
}

/// ZeRO-2's own collectives (Llama 3 8B on 8 GPUs, DP 8, 2 micro-batches):
/// each layer's gradients reduce-scattered after its backward, every
/// micro-batch, on the DP lane, and the weights all-gathered once after the
/// optimizer step; no all-reduce. Bytes per step against the ZeRO paper
/// (section 7.2.1): the reduce-scatter carries Psi gradients, the
/// all-gather Psi weights, where plain data parallelism all-reduces Psi
/// gradients (2 Psi on the wire, as RS + AG).
#[test]
fn zero_2_reduce_scatters_each_layer_and_gathers_after_the_step() {
    let setup = |zero| TrainingSetup {
        global_batch_size: Some(16),
        seq_length: 2048,
        sharding: trainscope_core::job::sharding::Sharding {
            zero,
            ..Default::default()
        },
        ..TrainingSetup::default()
    };
    let gpu = gpu_preset("H100").unwrap();
    let m = preset("llama3-8b").unwrap();
    let mk = |z| ModelJob::new(m.clone(), setup(z), gpu.clone(), Some(8)).unwrap();
    let (z0, z1, z2) = (
        mk(ZeroStage::None),
        mk(ZeroStage::Optimizer),
        mk(ZeroStage::Gradients),
    );
    let psi = stage_params(&z2, 0).total();
    let (g, w) = (gradient_bytes(&z2.setup), weight_bytes(z2.setup.precision));
    let micro = u64::from(z2.micro_batches);
    assert_eq!(micro, 2);
    // Per layer: the layer's gradients, asynchronous, in a row that opens
    // the layer (so the engine's layer grouping keeps it).
    for layer in [0, 5, m.num_layers - 1] {
        let rows = gradient_reduce_scatter(&z2, layer);
        let rs = rows[0].weight_grad.comm.unwrap();
        let (d, e) = unit_params(&z2, layer);
        assert_eq!(
            (rs.kind, rs.group, rs.size_bytes, rs.asynchronous),
            (CommKind::ReduceScatter, CommGroup::Dp, (d + e) * g, true)
        );
        assert!(rows[0].name.starts_with("attention"));
        assert!(gradient_reduce_scatter(&z1, layer).is_empty());
    }
    let count = |v: &[(CollOp, u64)], op| v.iter().filter(|c| c.0 == op).count() as u64;
    let bytes =
        |v: &[(CollOp, u64)], op| -> u64 { v.iter().filter(|c| c.0 == op).map(|c| c.1).sum() };
    let (c2, t2) = dp_collectives(&z2);
    assert_eq!(
        count(&c2, CollOp::ReduceScatter),
        u64::from(m.num_layers) * micro
    );
    assert_eq!(bytes(&c2, CollOp::ReduceScatter), micro * psi * g);
    assert_eq!(count(&c2, CollOp::AllGather), 1);
    assert_eq!(bytes(&c2, CollOp::AllGather), psi * w);
    assert_eq!(count(&c2, CollOp::AllReduce), 0);
    // ZeRO-1 (Megatron's distributed optimizer) reduce-scatters the same
    // Psi gradients once; plain DP all-reduces them once.
    let (c1, _) = dp_collectives(&z1);
    assert_eq!(bytes(&c1, CollOp::ReduceScatter), psi * g);
    let (c0, _) = dp_collectives(&z0);
    assert_eq!(bytes(&c0, CollOp::AllReduce), psi * g);
    assert_eq!(count(&c0, CollOp::AllGather), 0);
    assert!(t2 > 0);
}

/// HSDP's refusals, each with its message: ZeRO-3 only, a shard group
/// dividing DP, more than one rank, no MoE experts.
#[test]
fn hsdp_refuses_what_it_cannot_be() {
    let hsdp = |zero, n| {
        job(move |s| {
            s.sharding.zero = zero;
            s.sharding.hsdp_shard = n;
        })
    };
    let e = hsdp(ZeroStage::Optimizer, 2).unwrap_err();
    assert!(e.message.contains("this job is ZeRO 1"), "{}", e.message);
    assert!(e.hint.contains("--zero 3"), "{}", e.hint);
    let e = hsdp(ZeroStage::Parameters, 3).unwrap_err();
    assert!(
        e.message.contains("HSDP shard 3 does not divide DP 8"),
        "{}",
        e.message
    );
    let e = hsdp(ZeroStage::Parameters, 1).unwrap_err();
    assert!(e.message.contains("shards nothing"), "{}", e.message);
    assert!(hsdp(ZeroStage::Parameters, 4).is_ok());
    let moe = ModelJob::new(
        preset("mixtral-8x7b").unwrap(),
        TrainingSetup {
            dp: Some(8),
            global_batch_size: Some(8),
            sharding: trainscope_core::job::sharding::Sharding {
                zero: ZeroStage::Parameters,
                hsdp_shard: 4,
                ..Default::default()
            },
            ..TrainingSetup::default()
        },
        gpu_preset("H100").unwrap(),
        None,
    )
    .unwrap_err();
    assert!(moe.message.contains("MoE"), "{}", moe.message);
}

/// HSDP's memory shards over the shard group, not DP: Llama 3 70B at TP 8
/// x DP 8 with shard groups of 4 keeps (w + g + K) / 4 bytes a parameter
/// (18 / 4 in bf16 mixed precision), twice ZeRO-3's 18 / 8; a shard group
/// of all 8 ranks is plain FSDP.
#[test]
fn hsdp_memory_shards_over_the_group() {
    let j = job(|s| {
        s.sharding.zero = ZeroStage::Parameters;
        s.sharding.hsdp_shard = 4;
    })
    .unwrap();
    assert_eq!(
        trainscope_core::job::sharding::hsdp(&j),
        Some((4, 2)),
        "shard 4 x replicate 2"
    );
    assert!((bytes_per_param(&j) - 18.0 / 4.0).abs() < 1e-3);
    let all = job(|s| {
        s.sharding.zero = ZeroStage::Parameters;
        s.sharding.hsdp_shard = 8;
    })
    .unwrap();
    assert_eq!(trainscope_core::job::sharding::hsdp(&all), None);
    assert!((bytes_per_param(&all) - 18.0 / 8.0).abs() < 1e-3);
}

/// HSDP's collectives (Llama 3 8B on 8 GPUs, DP 8, shard groups of 4, 2
/// micro-batches): each unit's all-gathers and reduce-scatter in its shard
/// group of 4 ranks, then its gradient shard (1/4 of the unit's
/// gradients) all-reduced across the 2 replicas, per micro-batch, all on
/// the DP lane; the engine's groups are 4 consecutive DP ranks and the
/// ranks 4 apart.
#[test]
fn hsdp_gathers_in_the_shard_group_and_all_reduces_across_replicas() {
    use trainscope_core::engine::config::PlacementOrder;
    use trainscope_core::engine::network::Placement;
    use trainscope_core::engine::spec::{GroupKind, Parallelism};
    let setup = |hsdp_shard| TrainingSetup {
        global_batch_size: Some(16),
        seq_length: 2048,
        sharding: trainscope_core::job::sharding::Sharding {
            zero: ZeroStage::Parameters,
            hsdp_shard,
            ..Default::default()
        },
        ..TrainingSetup::default()
    };
    let gpu = gpu_preset("H100").unwrap();
    let m = preset("llama3-8b").unwrap();
    let j = ModelJob::new(m.clone(), setup(4), gpu.clone(), Some(8)).unwrap();
    let g = gradient_bytes(&j.setup);
    for layer in [0, 9, m.num_layers - 1] {
        let (before, _) = unit_collectives(&j, layer);
        let (d, e) = unit_params(&j, layer);
        let ar = before[0].weight_grad.comm.unwrap();
        assert_eq!(
            (ar.kind, ar.group, ar.size_bytes, ar.asynchronous),
            (
                CommKind::AllReduce,
                CommGroup::DpReplicate,
                ((d + e) * g).div_ceil(4),
                true
            )
        );
        let ag = before[1].forward.comm.unwrap();
        assert_eq!(ag.group, CommGroup::DpShard);
        let rs = before[1].weight_grad.comm.unwrap();
        assert_eq!(
            (rs.kind, rs.group, rs.size_bytes),
            (CommKind::ReduceScatter, CommGroup::DpShard, (d + e) * g)
        );
        assert!(before.iter().all(|r| r.name.starts_with("attention")));
    }
    let micro = u64::from(j.micro_batches);
    let layers = u64::from(m.num_layers);
    let (c, t) = dp_collectives(&j);
    let count = |op| c.iter().filter(|x| x.0 == op).count() as u64;
    assert_eq!(count(CollOp::AllGather), 2 * layers * micro);
    assert_eq!(count(CollOp::ReduceScatter), layers * micro);
    assert_eq!(count(CollOp::AllReduce), layers * micro);
    let bytes = |op| -> u64 { c.iter().filter(|x| x.0 == op).map(|x| x.1).sum() };
    let psi = stage_params(&j, 0).total();
    assert_eq!(bytes(CollOp::ReduceScatter), micro * psi * g);
    // Each unit's shard rounds up on its own.
    let shards: u64 = (0..m.num_layers)
        .map(|l| {
            let (d, e) = unit_params(&j, l);
            ((d + e) * g).div_ceil(4)
        })
        .sum();
    assert_eq!(bytes(CollOp::AllReduce), micro * shards);
    // The engine's groups: shard = 4 consecutive DP ranks, replicate = 4 apart.
    let p = Placement::new(
        Parallelism {
            tp: 1,
            dp: 8,
            pp: 1,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 4,
        },
        PlacementOrder::default(),
        8,
    );
    assert_eq!(p.group_members(5, GroupKind::DpShard), vec![4, 5, 6, 7]);
    assert_eq!(p.group_members(5, GroupKind::DpReplicate), vec![1, 5]);
    assert_eq!(p.parallel.group_size(GroupKind::DpReplicate), 2);
    let fsdp = ModelJob::new(m, setup(0), gpu, Some(8)).unwrap();
    let (_, t_fsdp) = dp_collectives(&fsdp);
    println!("Llama 3 8B on 8 H100: FSDP {t_fsdp} ns, HSDP 4 x 2 {t} ns");
    assert!(t > 0 && t_fsdp > 0);
}

/// Every span whose label contains `name` (first rank's lanes): durations.
fn spans_named(out: &trainscope_core::job::run::ModelRunOutput, name: &str) -> Vec<u64> {
    let t = &out.run.result.timeline;
    let mut v = Vec::new();
    for (li, _) in t.lanes().iter().enumerate() {
        for s in t.spans(li as u32) {
            if t.label(s.label).contains(name) {
                v.push(s.duration_ns);
            }
        }
    }
    v
}

/// Offload (Llama 3 8B on 8 H100s, ZeRO-1 and ZeRO-3): `optimizer` moves
/// exactly the optimizer states off the GPU (the peak drops by them, the
/// report counts them as host bytes); the step becomes the gradient shard
/// down over PCIe Gen5 (64 GB/s a direction), CPU Adam at the ZeRO-Offload
/// paper's rate, the weights up, and the iteration grows by at least that
/// less the GPU's own step. `optimizer+params` (ZeRO-3) also moves the sharded
/// weights and gradients.
#[test]
fn offload_moves_the_optimizer_to_the_host_and_adds_the_transfers() {
    use trainscope_core::job::sharding::{offload_step_ns, Offload, Sharding};
    let gpu = gpu_preset("H100").unwrap();
    assert_eq!(gpu.pcie_gbps, 64.0);
    let mk = |zero, offload| {
        ModelJob::new(
            preset("llama3-8b").unwrap(),
            TrainingSetup {
                global_batch_size: Some(16),
                seq_length: 2048,
                sharding: Sharding {
                    zero,
                    offload,
                    ..Default::default()
                },
                ..TrainingSetup::default()
            },
            gpu.clone(),
            Some(8),
        )
        .unwrap()
    };
    let (a, b) = (
        mk(ZeroStage::Optimizer, Offload::None),
        mk(ZeroStage::Optimizer, Offload::Optimizer),
    );
    let (ma, mb) = (
        memory_report(&a, &[1], 1).per_stage[0].clone(),
        memory_report(&b, &[1], 1).per_stage[0].clone(),
    );
    assert!(ma.optimizer_bytes > 0);
    assert_eq!(mb.optimizer_bytes, 0);
    assert_eq!(mb.host_bytes, ma.optimizer_bytes);
    assert_eq!(ma.peak_bytes - mb.peak_bytes, ma.optimizer_bytes);
    assert_eq!(mb.weights_bytes, ma.weights_bytes);
    let mut c = SimConfig::default();
    c.network.nvlink_gbps = gpu.nvlink_busbw_gbps;
    let (ra, rb) = (run_model(&a, &c).unwrap(), run_model(&b, &c).unwrap());
    let local = stage_params(&b, 0).total().div_ceil(8);
    let (down, cpu, up) = offload_step_ns(
        local,
        gradient_bytes(&b.setup),
        weight_bytes(b.setup.precision),
        64.0,
    );
    // 1 B parameters a rank: 4 GB of fp32 gradients at 64 GB/s, 2 GB of
    // bf16 weights back.
    assert_eq!(down, (local as f64 * 4.0 / 64.0).round() as u64);
    assert_eq!(cpu, local * 257 / 1000);
    let step = spans_named(&rb, "optimizer_step_offload");
    assert_eq!(step, vec![down + cpu + up]);
    let gpu_step: u64 = spans_named(&ra, "optimizer_step").iter().sum();
    let (ta, tb) = (
        ra.run.summary().iteration_time_ns,
        rb.run.summary().iteration_time_ns,
    );
    println!(
        "Llama 3 8B, 8 H100, ZeRO-1: GPU step {:.1} ms, offloaded step {:.1} ms (down {:.1}, CPU Adam {:.1}, up {:.1}); iteration {:.1} -> {:.1} ms",
        gpu_step as f64 / 1e6,
        (down + cpu + up) as f64 / 1e6,
        down as f64 / 1e6,
        cpu as f64 / 1e6,
        up as f64 / 1e6,
        ta as f64 / 1e6,
        tb as f64 / 1e6
    );
    // The step is on the critical path: the iteration grows by at least
    // the step's growth and by at most the whole offloaded step.
    assert!(tb - ta >= down + cpu + up - gpu_step, "{ta} -> {tb}");
    assert!(tb - ta <= down + cpu + up, "{ta} -> {tb}");
    // optimizer+params: ZeRO-3 only; the sharded weights and gradients go too.
    let z3 = mk(ZeroStage::Parameters, Offload::None);
    let z3p = mk(ZeroStage::Parameters, Offload::OptimizerParams);
    let (m3, m3p) = (
        memory_report(&z3, &[1], 1).per_stage[0].clone(),
        memory_report(&z3p, &[1], 1).per_stage[0].clone(),
    );
    let moved = m3.weights_bytes + m3.gradients_bytes + m3.optimizer_bytes;
    assert_eq!(m3p.host_bytes, moved);
    assert_eq!(m3.peak_bytes - m3p.peak_bytes, moved);
    assert_eq!(m3p.unsharded_unit_bytes, m3.unsharded_unit_bytes);
    let e = ModelJob::new(
        preset("llama3-8b").unwrap(),
        TrainingSetup {
            sharding: Sharding {
                zero: ZeroStage::Optimizer,
                offload: Offload::OptimizerParams,
                ..Default::default()
            },
            ..TrainingSetup::default()
        },
        gpu.clone(),
        Some(8),
    )
    .unwrap_err();
    assert!(e.message.contains("ZeRO-3 only"), "{}", e.message);
    let e = ModelJob::new(
        preset("llama3-8b").unwrap(),
        TrainingSetup {
            sharding: Sharding {
                offload: Offload::Optimizer,
                ..Default::default()
            },
            ..TrainingSetup::default()
        },
        gpu,
        Some(8),
    )
    .unwrap_err();
    assert!(e.message.contains("this job is ZeRO 0"), "{}", e.message);
}
