//! The measured timeline of a [`MeasuredRun`] (Echo traces, Optimus-Prime
//! logs), straight from the input without simulating: every op and every
//! sub-op becomes a span on its rank's lane of the right stream, built with
//! [`TimelineBuilder`] so the web page draws measured and simulated runs
//! alike.
//!
//! - Lanes: per rank (ascending), the five streams of [`Stream::DEVICE`],
//!   grouped by rank; a rank whose ops name their device stream (Kineto
//!   traces) gets one lane per CUDA stream instead (ascending; a stream
//!   running only NCCL kernels is a collective lane, named `(nccl)`).
//! - Streams and kinds: compute ops on the compute stream (forward phase:
//!   [`SpanKind::Forward`]; backward: [`SpanKind::InputGrad`], a measured
//!   backward step covers both gradients; other: [`SpanKind::Compute`]);
//!   collectives over TP / EP on the collective stream, over DP / DP_EP and
//!   the embedding groups on the gradient-sync stream (kinds `coll_tp`,
//!   `coll_ep`, `coll_dp`, `coll_dp_ep`, `coll_other` for embedding, pipeline
//!   and unscoped groups; broadcasts are `coll_other`); sends and receives
//!   on the send / receive streams (a measured receive includes waiting for
//!   the peer); waits on the compute stream. Sub-ops go to the stream of
//!   their own kind (compute sub-ops nest inside their parent).
//! - Time: the clock of the traces (one host clock shared by the ranks,
//!   docs/FORMATS.md §2.3) shifted so the earliest measured start is 0.
//!   Ops without a measured start (profiling placeholders, aggregated log
//!   entries such as Optimus-Prime's per-step forward totals) are laid end
//!   to end after the rank's previous op, and a warning says how many.
//! - Flows: a `send_forward` / `send_backward` of micro-batch j is joined to
//!   the `recv_forward` / `recv_backward` of micro-batch j on the
//!   neighbouring stage's rank with the same TP and DP position, when both
//!   are in the run.
//! - The measured iteration time is the run's steady value
//!   ([`MeasuredRun::steady_iteration_ns`]).
//!
//! [`measured_figures`] is the same without the timeline (`timeline:
//! None`): what a printed report reads (iteration times, untimed spans,
//! warnings), without a span per op (a 256-rank Chakra set has 690 688).

use crate::timeline::{
    CollOp, Flow, LabelId, Lane, LaneGroup, Span, SpanKind, SpanRef, Stream, Timeline,
    TimelineBuilder,
};
use crate::workload::{CommGroup, CommKind, MeasuredOp, MeasuredRun, OpKind, TrainingPhase};
use serde::Serialize;
use std::collections::BTreeMap;

/// A measured run's timeline and iteration time.
#[derive(Debug, Clone, Serialize)]
pub struct MeasuredTimeline {
    /// The spans; `None` from [`measured_figures`] (not built).
    pub timeline: Option<Timeline>,
    /// Clock value, ns, at timeline time 0 (the earliest measured start).
    pub origin_ns: u64,
    /// The run's measured iteration time, ns (steady iterations), if any.
    pub iteration_time_ns: Option<u64>,
    /// Every measured iteration time of the job, ns, in order.
    pub iteration_times_ns: Vec<u64>,
    /// How many training iterations each of them covers.
    pub iterations_covered: Vec<u32>,
    /// Ranks with lanes, ascending.
    pub ranks: Vec<u32>,
    /// Spans placed without a measured start.
    pub untimed_spans: u64,
    /// Assumptions made.
    pub warnings: Vec<String>,
}

/// Stream and span kind of a measured op (see the module documentation).
pub fn stream_and_kind(op: &MeasuredOp) -> (Stream, SpanKind, CollOp) {
    stream_and_kind_of(op.kind, op.phase)
}

/// [`stream_and_kind`] of an op of this kind and phase.
fn stream_and_kind_of(kind: OpKind, phase: Option<TrainingPhase>) -> (Stream, SpanKind, CollOp) {
    match kind {
        OpKind::Compute => (
            Stream::Compute,
            match phase {
                Some(TrainingPhase::Forward) => SpanKind::Forward,
                Some(TrainingPhase::Backward) => SpanKind::InputGrad,
                _ => SpanKind::Compute,
            },
            CollOp::None,
        ),
        OpKind::Collective { collective, group } => {
            let coll = match collective {
                CommKind::AllReduce => CollOp::AllReduce,
                CommKind::AllGather => CollOp::AllGather,
                CommKind::ReduceScatter => CollOp::ReduceScatter,
                CommKind::AllToAll => CollOp::AllToAll,
                CommKind::Send | CommKind::Recv => CollOp::SendRecv,
                CommKind::Broadcast => CollOp::None,
            };
            let (stream, kind) = match group {
                CommGroup::Tp => (Stream::Collective, SpanKind::CollTp),
                CommGroup::Ep => (Stream::Collective, SpanKind::CollEp),
                CommGroup::Dp | CommGroup::DpShard | CommGroup::DpReplicate => {
                    (Stream::GradSync, SpanKind::CollDp)
                }
                CommGroup::DpEp => (Stream::GradSync, SpanKind::CollDpEp),
                CommGroup::Cp => (Stream::Collective, SpanKind::CollCp),
                CommGroup::Embedding | CommGroup::PositionEmbedding => {
                    (Stream::GradSync, SpanKind::CollOther)
                }
                CommGroup::Pp | CommGroup::Unscoped => (Stream::Collective, SpanKind::CollOther),
            };
            let kind = if collective == CommKind::Broadcast {
                SpanKind::CollOther
            } else {
                kind
            };
            (stream, kind, coll)
        }
        OpKind::Send => (Stream::Send, SpanKind::Send, CollOp::SendRecv),
        OpKind::Recv => (Stream::Recv, SpanKind::Recv, CollOp::SendRecv),
        OpKind::Wait => (Stream::Compute, SpanKind::Wait, CollOp::None),
    }
}

/// A transfer's identity: (forward?, sending stage, TP index, DP index,
/// micro-batch).
type TransferKey = (bool, u32, u32, u32, u32);

/// A placed send (`kind`) or receive of a micro-batch, (forward, stage,
/// TP index, DP index, micro-batch), kept for the flows: a forward
/// receive on stage s comes from s - 1, a backward one from s + 1.
fn transfer_end(
    sends: &mut BTreeMap<TransferKey, SpanRef>,
    recvs: &mut Vec<(TransferKey, SpanRef, u64)>,
    (kind, forward, stage, tp, dp, mb): (OpKind, bool, u32, u32, u32, u32),
    placed: SpanRef,
    bytes: u64,
) {
    if kind == OpKind::Send {
        sends.insert((forward, stage, tp, dp, mb), placed);
        return;
    }
    let from = if forward {
        stage.checked_sub(1)
    } else {
        stage.checked_add(1)
    };
    if let Some(from) = from {
        recvs.push(((forward, from, tp, dp, mb), placed, bytes));
    }
}

fn earliest_start(run: &MeasuredRun) -> Option<u64> {
    // A rank running another rank's program starts its ops as that rank
    // does (start times are not a rank's own values).
    run.ranks
        .iter()
        .flat_map(|r| r.ops.iter())
        .flat_map(|o| std::iter::once(o).chain(o.sub_ops.iter()))
        .filter_map(|o| o.start_ns)
        .min()
}

/// Build the measured timeline of `run`.
pub fn measured_timeline(run: &MeasuredRun) -> MeasuredTimeline {
    let origin = earliest_start(run).unwrap_or(0);
    let mut tb = TimelineBuilder::new();
    let mut untimed = 0u64;
    let mut sends: BTreeMap<TransferKey, SpanRef> = BTreeMap::new();
    let mut recvs: Vec<(TransferKey, SpanRef, u64)> = Vec::new();
    let par = &run.parallel;
    let mut next_lane = 0u32;
    // Program rank -> its ops' labels.
    let mut labels_of: BTreeMap<u32, Vec<LabelId>> = BTreeMap::new();
    for rt in &run.ranks {
        let stage = rt.stage.unwrap_or_else(|| par.stage_of_rank(rt.rank));
        if run.program_of(rt).ops.iter().any(|o| o.stream.is_some()) {
            // Device streams named by the trace (Kineto): one lane each.
            let own;
            let rt = match &rt.copy {
                Some(_) => {
                    own = crate::workload::RankTrace {
                        ops: run.ops_of(rt).into_owned(),
                        copy: None,
                        ..rt.clone()
                    };
                    &own
                }
                None => rt,
            };
            next_lane = device_stream_lanes(&mut tb, rt, stage, origin, next_lane, &mut untimed);
            continue;
        }
        let base = next_lane;
        next_lane += 5;
        for stream in Stream::DEVICE {
            tb.lane(Lane {
                group_kind: LaneGroup::Rank,
                group: rt.rank,
                stage,
                stream,
                name: format!("rank {} (stage {stage}) / {}", rt.rank, stream.name()),
            });
        }
        let mut cursor = 0u64;
        let program = run.program_of(rt);
        if program.ops.iter().all(|o| o.sub_ops.is_empty()) {
            // Without sub-ops a rank's labels are its ops' names in order
            // (interned once per program), and a rank running another
            // rank's program reads its own values in place.
            let labels = labels_of
                .entry(program.rank)
                .or_insert_with(|| program.ops.iter().map(|o| tb.label(&o.name)).collect());
            // Each lane's spans counted first (one allocation per lane).
            let mut per_stream = [0usize; Stream::DEVICE.len()];
            let mut values = rt.own_values();
            for (i, op) in program.ops.iter().enumerate() {
                let (stream, _, _) = stream_and_kind_of(values.op(op, i).kind(), op.phase);
                if let Some(n) = per_stream.get_mut(stream.index() as usize) {
                    *n += 1;
                }
            }
            for (s, n) in per_stream.iter().enumerate() {
                tb.reserve(base + s as u32, *n);
            }
            let mut values = rt.own_values();
            for (i, op) in program.ops.iter().enumerate() {
                let own = values.op(op, i);
                let kind = own.kind();
                let dur = own.duration_ns().unwrap_or(0);
                let start = match op.start_ns {
                    Some(s) => s.saturating_sub(origin),
                    None => {
                        untimed += 1;
                        cursor
                    }
                };
                let (stream, span_kind, coll) = stream_and_kind_of(kind, op.phase);
                let placed = tb.push(
                    base + stream.index(),
                    Span {
                        start_ns: start,
                        duration_ns: dur,
                        bytes: op.message_bytes.unwrap_or(0),
                        label: labels[i],
                        layer: Span::NONE,
                        micro_batch: op.micro_batch.unwrap_or(Span::NONE),
                        kind: span_kind,
                        coll,
                        chunk: 0,
                    },
                );
                cursor = cursor.max(start.saturating_add(dur));
                if let (Some(mb), OpKind::Send | OpKind::Recv) = (op.micro_batch, kind) {
                    let forward = match op.phase {
                        Some(TrainingPhase::Forward) => true,
                        Some(TrainingPhase::Backward) => false,
                        _ => continue,
                    };
                    let (tp, dp) = (par.tp_rank(rt.rank), par.dp_rank(rt.rank));
                    transfer_end(
                        &mut sends,
                        &mut recvs,
                        (kind, forward, stage, tp, dp, mb),
                        placed,
                        op.message_bytes.unwrap_or(0),
                    );
                }
            }
            continue;
        }
        for op in run.ops_iter(rt) {
            let op = &*op;
            let rel = |t: u64| t.saturating_sub(origin);
            let dur = op.duration_ns.unwrap_or(0);
            let start = match op.start_ns {
                Some(s) => rel(s),
                None => {
                    untimed += 1;
                    cursor
                }
            };
            let placed = push_op(&mut tb, base, op, start, dur);
            cursor = cursor.max(start.saturating_add(dur));
            let mut sub_cursor = start;
            for so in &op.sub_ops {
                let d = so.duration_ns.unwrap_or(0);
                let s = match so.start_ns {
                    Some(s) => rel(s),
                    None => {
                        untimed += 1;
                        sub_cursor
                    }
                };
                push_op(&mut tb, base, so, s, d);
                sub_cursor = sub_cursor.max(s.saturating_add(d));
            }
            if let (Some(mb), OpKind::Send | OpKind::Recv) = (op.micro_batch, op.kind) {
                let forward = match (op.kind, op.phase) {
                    (_, Some(TrainingPhase::Forward)) => true,
                    (_, Some(TrainingPhase::Backward)) => false,
                    _ => continue,
                };
                let (tp, dp) = (par.tp_rank(rt.rank), par.dp_rank(rt.rank));
                transfer_end(
                    &mut sends,
                    &mut recvs,
                    (op.kind, forward, stage, tp, dp, mb),
                    placed,
                    op.message_bytes.unwrap_or(0),
                );
            }
        }
    }
    for (key, to, bytes) in recvs {
        if let Some(from) = sends.get(&key) {
            tb.flow(Flow {
                from: *from,
                to,
                bytes,
                micro_batch: key.4,
            });
        }
    }
    assemble(run, Some(tb.build()), origin, untimed)
}

/// The figures of `run` around its `timeline` (or none): the iterations,
/// the ranks in the run's order, the `untimed` spans and their warning.
fn assemble(
    run: &MeasuredRun,
    timeline: Option<Timeline>,
    origin_ns: u64,
    untimed: u64,
) -> MeasuredTimeline {
    MeasuredTimeline {
        timeline,
        origin_ns,
        iteration_time_ns: run.steady_iteration_ns(),
        iteration_times_ns: run.iterations.iter().map(|i| i.duration_ns).collect(),
        iterations_covered: run
            .iterations
            .iter()
            .map(|i| i.iterations_covered)
            .collect(),
        ranks: run.ranks.iter().map(|rt| rt.rank).collect(),
        untimed_spans: untimed,
        warnings: untimed_warning(untimed),
    }
}

/// [`measured_timeline`] without the timeline (`timeline: None`), every
/// other field equal: the spans without a start are counted as it places
/// them (a rank running another rank's program has its start times; a
/// rank with device streams has no sub-op spans).
pub fn measured_figures(run: &MeasuredRun) -> MeasuredTimeline {
    let untimed = |o: &&MeasuredOp| o.start_ns.is_none();
    let untimed: u64 = run
        .ranks
        .iter()
        .map(|rt| {
            let ops = &run.program_of(rt).ops;
            if ops.iter().any(|o| o.stream.is_some()) {
                ops.iter().filter(untimed).count()
            } else {
                ops.iter()
                    .flat_map(|o| std::iter::once(o).chain(o.sub_ops.iter()))
                    .filter(untimed)
                    .count()
            }
        })
        .sum::<usize>() as u64;
    assemble(run, None, earliest_start(run).unwrap_or(0), untimed)
}

fn untimed_warning(untimed: u64) -> Vec<String> {
    if untimed == 0 {
        return Vec::new();
    }
    vec![format!(
        "{untimed} measured op(s) have no start time (aggregated log entries or profiling placeholders); they are laid end to end after their rank's previous op, so their positions are not measured"
    )]
}

/// The lanes of a rank whose ops name their device stream: one lane per
/// stream (ascending), a collective lane when every op on it is
/// communication, else a compute lane; returns the next free lane index.
fn device_stream_lanes(
    tb: &mut TimelineBuilder,
    rt: &crate::workload::RankTrace,
    stage: u32,
    origin: u64,
    first_lane: u32,
    untimed: &mut u64,
) -> u32 {
    let mut streams: BTreeMap<u32, bool> = BTreeMap::new();
    for op in &rt.ops {
        let comm = matches!(
            op.kind,
            OpKind::Collective { .. } | OpKind::Send | OpKind::Recv
        );
        let all_comm = streams.entry(op.stream.unwrap_or(0)).or_insert(true);
        *all_comm &= comm;
    }
    let mut lane_of: BTreeMap<u32, u32> = BTreeMap::new();
    for (i, (id, all_comm)) in streams.iter().enumerate() {
        let stream = if *all_comm {
            Stream::Collective
        } else {
            Stream::Compute
        };
        tb.lane(Lane {
            group_kind: LaneGroup::Rank,
            group: rt.rank,
            stage,
            stream,
            name: format!(
                "rank {} (stage {stage}) / stream {id}{}",
                rt.rank,
                if *all_comm { " (nccl)" } else { "" }
            ),
        });
        lane_of.insert(*id, first_lane + i as u32);
    }
    let mut cursor = 0u64;
    for op in &rt.ops {
        let lane = lane_of
            .get(&op.stream.unwrap_or(0))
            .copied()
            .unwrap_or(first_lane);
        let dur = op.duration_ns.unwrap_or(0);
        let start = match op.start_ns {
            Some(s) => s.saturating_sub(origin),
            None => {
                *untimed += 1;
                cursor
            }
        };
        cursor = cursor.max(start.saturating_add(dur));
        push_on(tb, lane, op, start, dur);
    }
    first_lane + streams.len() as u32
}

fn push_op(tb: &mut TimelineBuilder, base: u32, op: &MeasuredOp, start: u64, dur: u64) -> SpanRef {
    let (stream, kind, coll) = stream_and_kind(op);
    push_span(tb, base + stream.index(), op, start, dur, kind, coll)
}

fn push_on(tb: &mut TimelineBuilder, lane: u32, op: &MeasuredOp, start: u64, dur: u64) -> SpanRef {
    let (_, kind, coll) = stream_and_kind(op);
    push_span(tb, lane, op, start, dur, kind, coll)
}

/// One span of `op` on `lane`, classified once by the caller.
fn push_span(
    tb: &mut TimelineBuilder,
    lane: u32,
    op: &MeasuredOp,
    start: u64,
    dur: u64,
    kind: SpanKind,
    coll: CollOp,
) -> SpanRef {
    let label: LabelId = tb.label(&op.name);
    tb.push(
        lane,
        Span {
            start_ns: start,
            duration_ns: dur,
            bytes: op.message_bytes.unwrap_or(0),
            label,
            layer: Span::NONE,
            micro_batch: op.micro_batch.unwrap_or(Span::NONE),
            kind,
            coll,
            chunk: 0,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::echo;

    const SEED: &str =
        include_str!("../../../../tests/fixtures/seeds/echo_megatron_trace_rank7_tp2_pp4.txt");

    #[test]
    fn every_op_and_sub_op_is_a_span() {
        let run = echo::parse_run(&[("echo_megatron_trace_rank7_tp2_pp4.txt", SEED)]);
        let m = measured_timeline(&run);
        let t = m.timeline.as_ref().unwrap();
        let ops = run.ranks[0].ops.len();
        let subs: usize = run.ranks[0].ops.iter().map(|o| o.sub_ops.len()).sum();
        assert_eq!(t.span_count(), ops + subs);
        assert_eq!(t.lanes().len(), 5);
        assert_eq!(m.untimed_spans, 0);
        // The first op starts at 0; the timeline ends at the iteration end.
        assert_eq!(m.iteration_time_ns, Some(t.end_ns()));
        // The TP all-reduce sub-ops of forward_step are on the collective lane.
        let coll = t.spans(Stream::Collective.index());
        assert!(coll.iter().any(|s| s.kind == SpanKind::CollTp));
        // dp_allreduce on the gradient-sync lane with its bytes.
        let dp = t.spans(Stream::GradSync.index());
        assert!(dp
            .iter()
            .any(|s| s.kind == SpanKind::CollDp && s.bytes == 1_702_466_560 * 4));
        let fwd = t
            .spans(Stream::Compute.index())
            .iter()
            .find(|s| t.label(s.label) == "forward_step")
            .unwrap();
        assert_eq!(fwd.duration_ns, 604_580_000);
        assert_eq!(fwd.kind, SpanKind::Forward);
    }
}
