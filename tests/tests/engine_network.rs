//! The network model inside the engine: transfers that use the same node's
//! NICs at the same time share their bandwidth. A DP gradient sync that
//! overlaps a pipeline send takes longer than either alone, and so does the
//! send.

use trainscope_core::engine::spec::{
    Block, CollectiveKind, CommSpec, GroupKind, JobSpec, LayerSpec, Parallelism, PhaseOps,
};
use trainscope_core::timeline::{SpanKind, Stream};
use trainscope_core::{engine::SimConfig, timeline::Timeline};

/// tp 8 fills a node, dp 2 puts the DP group on two nodes, pp 2 puts the
/// stages on different nodes: the last stage's gradient send and its
/// gradient sync both leave through its node's NICs, right after its only
/// backward.
fn job(send_bytes: u64, sync_bytes: u64) -> JobSpec {
    let block = Block {
        layers: vec![LayerSpec::compute("layer", 1_000_000, 1_000_000, 1_000_000)],
    };
    let mut j = JobSpec::spmd(
        "nic",
        Parallelism {
            tp: 8,
            dp: 2,
            pp: 2,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        },
        1,
        send_bytes,
        block,
    );
    if sync_bytes > 0 {
        for p in &mut j.programs {
            p.pre_rows.push(LayerSpec {
                name: "grad_sync".into(),
                forward: PhaseOps::default(),
                input_grad: PhaseOps::default(),
                weight_grad: PhaseOps {
                    compute_ns: 0,
                    comm: Some(CommSpec {
                        collective: CollectiveKind::ReduceScatter,
                        group: GroupKind::Dp,
                        size_bytes: sync_bytes,
                        prefetch: 0,
                    }),
                    ..Default::default()
                },
                update_ns: 0,
            });
        }
    }
    j
}

/// (start, duration) of the only span of `kind` on stage 1's `stream` lane.
fn span_of(t: &Timeline, stream: Stream, kind: SpanKind) -> Option<(u64, u64)> {
    let lane = t
        .lanes()
        .iter()
        .position(|l| l.stage == 1 && l.stream == stream)? as u32;
    let spans: Vec<_> = t.spans(lane).iter().filter(|s| s.kind == kind).collect();
    assert!(spans.len() <= 1, "expected at most one {kind:?} span");
    spans.first().map(|s| (s.start_ns, s.duration_ns))
}

#[test]
fn dp_sync_and_pipeline_send_share_the_nics() {
    let config = SimConfig::default();
    let bytes = 256 << 20;
    let send_alone = trainscope_core::engine::simulate(&job(bytes, 0), &config).unwrap();
    let sync_alone = trainscope_core::engine::simulate(&job(0, bytes), &config).unwrap();
    let both = trainscope_core::engine::simulate(&job(bytes, bytes), &config).unwrap();

    // Stage 1's gradient send (the only send of stage 1: m = 1).
    let (_, send_a) = span_of(&send_alone.timeline, Stream::Send, SpanKind::Send).unwrap();
    let (_, sync_a) = span_of(&sync_alone.timeline, Stream::GradSync, SpanKind::CollDp).unwrap();
    let (send_start, send_b) = span_of(&both.timeline, Stream::Send, SpanKind::Send).unwrap();
    let (sync_start, sync_b) = span_of(&both.timeline, Stream::GradSync, SpanKind::CollDp).unwrap();

    // They do overlap in the combined run.
    assert!(send_start < sync_start + sync_b && sync_start < send_start + send_b);
    // Each is slower than alone, and neither more than twice (equal sharing
    // of two flows).
    assert!(send_b > send_a, "send {send_b} vs alone {send_a}");
    assert!(sync_b > sync_a, "sync {sync_b} vs alone {sync_a}");
    assert!(send_b <= 2 * send_a && sync_b <= 2 * sync_a);
    // The iteration is longer than with either transfer alone.
    let it = |r: &trainscope_core::engine::SimResult| r.summary.iteration_time_ns;
    assert!(it(&both) > it(&send_alone) && it(&both) > it(&sync_alone));
}

#[test]
fn no_sharing_inside_a_node() {
    // Same job on nodes of 32 GPUs: everything is NVLink, nothing is shared,
    // so the send takes as long with or without the sync.
    let mut config = SimConfig::default();
    config.network.gpus_per_node = 32;
    let bytes = 64 << 20;
    let send_alone = trainscope_core::engine::simulate(&job(bytes, 0), &config).unwrap();
    let both = trainscope_core::engine::simulate(&job(bytes, bytes), &config).unwrap();
    let a = span_of(&send_alone.timeline, Stream::Send, SpanKind::Send)
        .unwrap()
        .1;
    let b = span_of(&both.timeline, Stream::Send, SpanKind::Send)
        .unwrap()
        .1;
    assert_eq!(a, b);
}

#[test]
fn oversubscription_slows_cross_node_traffic_only() {
    let bytes = 64 << 20;
    let base =
        trainscope_core::engine::simulate(&job(bytes, bytes), &SimConfig::default()).unwrap();
    let mut config = SimConfig::default();
    config.network.oversubscription = 2.0;
    let over = trainscope_core::engine::simulate(&job(bytes, bytes), &config).unwrap();
    let d = |r: &trainscope_core::engine::SimResult, s, k| span_of(&r.timeline, s, k).unwrap().1;
    assert!(
        d(&over, Stream::GradSync, SpanKind::CollDp) > d(&base, Stream::GradSync, SpanKind::CollDp)
    );
    assert!(d(&over, Stream::Send, SpanKind::Send) > d(&base, Stream::Send, SpanKind::Send));
}
