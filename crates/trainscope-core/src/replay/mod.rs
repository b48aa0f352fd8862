//! Replay of measured runs: rebuild a run's schedule from its measured
//! compute durations as a per-rank [`JobSpec`], so the engine can simulate
//! it with the network model and the result can be compared with the
//! measurement, op kind by op kind ([`ByKind`]).
//!
//! Echo / Megatron traces ([`echo_job`]), per present rank, first iteration
//! (ops up to the first `optimizer_step`), every traced op as measured:
//! - the step order is the order of the rank's `forward_step` /
//!   `backward_step` ops (micro-batch = their `batch_id`), kept explicitly;
//! - a compute op with sub-operations becomes a chain of pieces: the
//!   measured compute between sub-ops (gaps on the trace's clock), each
//!   followed by the sub-op's collective; forward-phase ops (`get_batch`,
//!   `forward_step`, `loss_func`) make the forward of their micro-batch,
//!   backward ones its backward; the host time between ops is measured
//!   compute too (before the op, or closing the step before a transfer);
//! - collectives are split by [`infer::infer`] into waiting, transfer and
//!   the rank's own time after it: the transfer is re-costed (with the
//!   network inferred from the trace, [`infer::InferredCost`]), the time
//!   after it is replayed as compute, the waiting is left to the
//!   simulation;
//! - collectives over TP, EP, DP, DP_EP keep their group; the embedding
//!   groups of the first and last stage (Echo `ep`, `pep`) become an
//!   all-reduce between the two (the pipeline group, 2 ranks); broadcasts,
//!   unscoped collectives, collectives of unknown size and collectives over
//!   a group of one member (DP 1) keep their measured duration as compute;
//! - `dp_allreduce` / `ep_allreduce` / `pep_allreduce` are the
//!   once-per-iteration gradient-sync rows, `optimizer_step` the closing
//!   row; sends and receives are not replayed (the engine makes the
//!   stage-to-stage transfers, `activation_bytes` from their shapes) but
//!   their measured transfer time is compared;
//! - stages without a measured rank (below) get their compute scaled to
//!   the measured ranks' waits by [`fit_copies`].
//!
//! PyTorch profiler (Kineto) traces ([`kineto_job`]), per present rank, the
//! chosen `ProfilerStep`: the GPU time between one NCCL collective and the
//! next (compute kernels, copies and idle, as measured) is replayed as
//! compute, each collective over the whole world (the data-parallel group)
//! of known size as a collective, split and re-costed like Echo's by
//! [`infer::infer`]; other NCCL kernels keep their measured time inside the
//! compute between collectives. A collective during which work started on
//! another stream (DDP's gradient all-reduces on their NCCL stream while
//! the backward goes on) did not hold the rank's compute up: it is replayed
//! alongside ([`PhaseOps::comm_overlap`]) the compute measured from its
//! start to the next collective, which keeps its whole measured time (the
//! idle of a host-bound step included); the next collective waits for
//! both, as on one NCCL stream. Replaying it in the chain instead would
//! drop the compute that ran beside it when the collective is re-costed
//! shorter than measured (HolisticTraceAnalysis's `nccl_parser_config`
//! trace: 22.6 ms of all-reduces beside the backward, the replay 10.2%
//! short). A collective with no other work starting beside it blocked the
//! rank: it is in the chain, and compute that ran while a collective was
//! in flight on another NCCL stream is kept in the measured time between
//! collectives, so the replay meets the measured step when the collectives
//! are costed as measured.
//! The GPU time is split where the part of training changes: from the first
//! op of a micro-batch's forward (ops whose launch the parser traced to the
//! step's thread, [`crate::formats::kineto`]) to the first op of its
//! backward (launched by the autograd thread) is that forward, and so on;
//! the forward and backward of each micro-batch are its block's two
//! columns, in the measured order, and the optimizer's time (wherever it
//! ran) the rows that close the iteration. A trace that does not tell the
//! parts apart is replayed as one forward block.
//!
//! Optimus-Prime logs ([`optimus_job`]): per rank, the forward of each logged
//! layer per micro-batch = its mean per-step total over the steady steps
//! (step 1, the warm-up, excluded) / GAS; backward = factor x forward, split
//! equally into input and weight gradient; the logged schedule (1F1B) comes
//! from the settings (order not fixed, so other schedules are what-ifs).
//!
//! Missing stages: a stage without any measured rank is simulated as a
//! copy of the nearest present stage (ties: the lower one), rank by rank
//! with the same TP and DP position, running the configured schedule's order
//! for its stage; embedding-group rows are kept only on the first and last
//! stage. A warning names every copy ([`AssumedRank`]).

pub mod chakra;
pub mod infer;
pub mod measured;

use crate::engine::scale;
use crate::engine::schedule::PipeStep;
use crate::engine::spec::{
    check_size, Block, CommSpec, GroupKind, JobMode, JobSpec, LayerSpec, Parallelism, PhaseOps,
    RankProgram,
};
use crate::engine::SimError;
use crate::engine::{
    config::PlacementOrder,
    network::{Coords, Placement},
};
use crate::engine::{CollectiveCost, SimConfig};
use crate::replay::infer::{first_iteration, InferredNetwork, LinkGroup, WHOLE_OP};
use crate::timeline::{LaneGroup, Span, SpanKind, Stream, Timeline};
use crate::workload::{MeasuredOp, MeasuredRun, OpKind, RankTrace, TrainingPhase};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Op kinds compared between a measurement and its replay, in report order.
pub const KINDS: [&str; 10] = [
    "forward",
    "backward",
    "iteration_compute",
    "coll_tp",
    "coll_ep",
    "coll_dp",
    "coll_dp_ep",
    "coll_other",
    "send",
    "recv",
];

const FORWARD: usize = 0;
const BACKWARD: usize = 1;
const ITERATION: usize = 2;
const SEND: usize = 8;
const RECV: usize = 9;

/// Time per op kind ([`KINDS`]), ns, and which kinds were measured at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ByKind {
    /// Time per kind, ns, indexed like [`KINDS`].
    pub ns: [u64; KINDS.len()],
    /// Whether anything of the kind was seen (measured inputs lack some).
    pub seen: [bool; KINDS.len()],
}

impl ByKind {
    fn add(&mut self, kind: usize, ns: u64) {
        if let (Some(x), Some(s)) = (self.ns.get_mut(kind), self.seen.get_mut(kind)) {
            *x = x.saturating_add(ns);
            *s = true;
        }
    }

    fn merge(&mut self, other: &ByKind) {
        for k in 0..KINDS.len() {
            if other.seen[k] {
                self.add(k, other.ns[k]);
            }
        }
    }

    /// Span time of `ranks`' lanes in a (simulated or measured) timeline,
    /// by kind: compute spans of a micro-batch are forward or backward,
    /// once-per-iteration compute is `iteration_compute`, collectives by
    /// group, transfers as sends (sender's lane) and receives (receiver's).
    pub fn of_timeline(t: &Timeline, ranks: &[u32]) -> ByKind {
        let mut out = ByKind::default();
        for (li, lane) in t.lanes().iter().enumerate() {
            if lane.group_kind != LaneGroup::Rank || !ranks.contains(&lane.group) {
                continue;
            }
            for s in t.spans(li as u32) {
                let per_mb = s.micro_batch().is_some();
                let k = match s.kind {
                    SpanKind::Forward if per_mb => FORWARD,
                    SpanKind::InputGrad | SpanKind::WeightGrad if per_mb => BACKWARD,
                    SpanKind::Forward
                    | SpanKind::InputGrad
                    | SpanKind::WeightGrad
                    | SpanKind::Compute => ITERATION,
                    SpanKind::CollTp => 3,
                    SpanKind::CollEp => 4,
                    SpanKind::CollDp => 5,
                    SpanKind::CollDpEp => 6,
                    SpanKind::CollOther | SpanKind::CollCp => 7,
                    SpanKind::Send => SEND,
                    SpanKind::Recv => RECV,
                    SpanKind::Wait | SpanKind::HostLaunch | SpanKind::HostSync => continue,
                };
                out.add(k, s.duration_ns);
            }
        }
        out
    }
}

fn kind_of_group(g: GroupKind) -> usize {
    match g {
        GroupKind::Tp => 3,
        GroupKind::Ep => 4,
        GroupKind::Dp | GroupKind::DpShard | GroupKind::DpReplicate => 5,
        GroupKind::DpEp => 6,
        GroupKind::Pp | GroupKind::Cp => 7,
    }
}

/// A rank simulated as a copy of a measured one (nearest present stage).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssumedRank {
    /// The simulated rank without measurement.
    pub rank: u32,
    /// Its stage.
    pub stage: u32,
    /// The measured rank it copies.
    pub like_rank: u32,
    /// The stage of that rank (the nearest present one).
    pub like_stage: u32,
}

/// A measured run rebuilt for the engine.
#[derive(Debug, Clone)]
pub struct ReplayJob {
    /// The per-rank job to simulate.
    pub job: JobSpec,
    /// Ranks with measured data that are simulated, ascending.
    pub present_ranks: Vec<u32>,
    /// Ranks simulated as copies of the nearest present stage.
    pub assumed: Vec<AssumedRank>,
    /// Measured time by kind over the present ranks, one iteration, ns, as
    /// the replay uses it: compute includes the host time between ops and
    /// the ranks' own time after collectives; a collective or transfer
    /// split by the inference counts its transfer only (its waiting is
    /// re-created by the simulation), an unsplit one its whole duration.
    pub measured: ByKind,
    /// True when the replay keeps each rank's measured step order.
    pub explicit_order: bool,
    /// Echo: the network inferred from the trace's own collectives, which
    /// re-costs the replay ([`infer::InferredCost`]); `None` for inputs
    /// that time no collectives (Optimus-Prime).
    pub network: Option<InferredNetwork>,
}

impl ReplayJob {
    /// A replay of every present rank in its own recorded order (Kineto
    /// steps, Chakra graphs): one program per rank, one pass, no assumed
    /// copies.
    pub fn per_rank(
        name: &str,
        parallel: Parallelism,
        programs: Vec<RankProgram>,
        present_ranks: Vec<u32>,
        measured: ByKind,
        network: Option<InferredNetwork>,
    ) -> ReplayJob {
        ReplayJob {
            job: JobSpec::per_rank(name, parallel, 1, 0, programs),
            present_ranks,
            assumed: Vec::new(),
            measured,
            explicit_order: true,
            network,
        }
    }
}

/// One piece of measured work.
#[derive(Debug, Clone)]
enum Item {
    Compute {
        name: String,
        ns: u64,
    },
    Coll {
        name: String,
        spec: CommSpec,
    },
    /// A collective that ran alongside the compute measured after it (on
    /// its own stream): it starts with that compute and what follows waits
    /// for both ([`PhaseOps::comm_overlap`]).
    CollAlongside {
        name: String,
        spec: CommSpec,
    },
}

/// The engine's collective for a traced one, or `None` when the replay
/// keeps it as measured compute: broadcasts, point-to-point sub-ops,
/// unscoped collectives, unknown sizes, and groups of one member in this
/// job (local work, e.g. a DP all-reduce with DP 1).
fn coll_spec(op: &MeasuredOp, parallel: Parallelism) -> Option<CommSpec> {
    let (link, c) = LinkGroup::of_measured(op)?;
    if link.members(parallel) <= 1 {
        return None;
    }
    let group = match link {
        LinkGroup::Tp => GroupKind::Tp,
        LinkGroup::Dp => GroupKind::Dp,
        LinkGroup::Ep => GroupKind::Ep,
        LinkGroup::DpEp => GroupKind::DpEp,
        LinkGroup::Embedding | LinkGroup::P2p => GroupKind::Pp,
    };
    let size_bytes = op.message_bytes.filter(|b| *b > 0)?;
    Some(CommSpec {
        collective: infer::collective_kind(c),
        group,
        size_bytes,
        prefetch: 0,
    })
}

/// What [`op_items`] needs besides the op.
struct RankCtx<'a> {
    rank: u32,
    parallel: Parallelism,
    network: &'a InferredNetwork,
}

/// One op (with its sub-ops) as pieces, and the measured time of its
/// collectives by kind. A collective split by the inference
/// ([`InferredNetwork::split`]) is its transfer (the engine re-costs it)
/// followed by the rank's own time after it (measured compute); its
/// waiting part is left to the simulation. `oi` is the op's index in the
/// rank's trace.
fn op_items(op: &MeasuredOp, oi: u32, ctx: &RankCtx<'_>, measured: &mut ByKind) -> Vec<Item> {
    let item_of = |o: &MeasuredOp, si: u32, measured: &mut ByKind| -> Vec<Item> {
        let d = o.duration_ns.unwrap_or(0);
        let Some(spec) = coll_spec(o, ctx.parallel) else {
            return vec![Item::Compute {
                name: op.name.clone(),
                ns: d,
            }];
        };
        let name = if si == WHOLE_OP {
            op.name.clone()
        } else {
            format!("{} / {}", op.name, o.name)
        };
        let kind = kind_of_group(spec.group);
        match ctx.network.split((ctx.rank, oi, si)) {
            Some(s) => {
                measured.add(kind, s.transfer_ns);
                vec![
                    Item::Coll { name, spec },
                    Item::Compute {
                        name: op.name.clone(),
                        ns: s.after_ns,
                    },
                ]
            }
            None => {
                measured.add(kind, d);
                vec![Item::Coll { name, spec }]
            }
        }
    };
    if op.sub_ops.is_empty() {
        return item_of(op, WHOLE_OP, measured);
    }
    let mut out = Vec::new();
    let timed = op.start_ns.is_some()
        && op.duration_ns.is_some()
        && op.sub_ops.iter().all(|s| s.start_ns.is_some());
    if timed {
        let mut cursor = op.start_ns.unwrap_or(0);
        let mut subs: Vec<(u32, &MeasuredOp)> = op
            .sub_ops
            .iter()
            .enumerate()
            .map(|(i, s)| (i as u32, s))
            .collect();
        subs.sort_by_key(|(_, s)| s.start_ns);
        for (si, s) in subs {
            let start = s.start_ns.unwrap_or(cursor);
            out.push(Item::Compute {
                name: op.name.clone(),
                ns: start.saturating_sub(cursor),
            });
            out.extend(item_of(s, si, measured));
            cursor = cursor.max(start.saturating_add(s.duration_ns.unwrap_or(0)));
        }
        out.push(Item::Compute {
            name: op.name.clone(),
            ns: op.end_ns().unwrap_or(cursor).saturating_sub(cursor),
        });
    } else {
        out.push(Item::Compute {
            name: op.name.clone(),
            ns: op.own_duration_ns().unwrap_or(0),
        });
        for (si, s) in op.sub_ops.iter().enumerate() {
            out.extend(item_of(s, si as u32, measured));
        }
    }
    out
}

/// Collapse items into (name, compute, collective) pieces: compute
/// accumulates until a collective closes the piece; a collective alongside
/// ([`Item::CollAlongside`]) closes the compute before it and opens a
/// piece whose compute is what follows, run together with it.
fn pieces(items: &[Item], compute_kind: usize, measured: &mut ByKind) -> Vec<LayerSpec> {
    let mut out = Vec::new();
    let mut acc = 0u64;
    let mut name: Option<&str> = None;
    // The open alongside collective: its name and spec.
    let mut open: Option<(&str, CommSpec)> = None;
    let piece = |name: &str, compute_ns: u64, comm: Option<CommSpec>, overlap: bool| LayerSpec {
        name: name.to_string(),
        forward: PhaseOps {
            compute_ns,
            comm,
            comm_overlap: overlap,
            ..Default::default()
        },
        input_grad: PhaseOps::default(),
        weight_grad: PhaseOps::default(),
        update_ns: 0,
    };
    for it in items {
        match it {
            Item::Compute { name: n, ns } => {
                acc = acc.saturating_add(*ns);
                measured.add(compute_kind, *ns);
                name.get_or_insert(n);
            }
            Item::Coll { name: n, spec } => {
                if let Some((an, aspec)) = open.take() {
                    out.push(piece(an, acc, Some(aspec), true));
                    acc = 0;
                }
                out.push(piece(n, acc, Some(*spec), false));
                acc = 0;
                name = None;
            }
            Item::CollAlongside { name: n, spec } => {
                match open.take() {
                    Some((an, aspec)) => out.push(piece(an, acc, Some(aspec), true)),
                    None if acc > 0 => out.push(piece(name.unwrap_or("idle"), acc, None, false)),
                    None => {}
                }
                acc = 0;
                name = None;
                open = Some((n, *spec));
            }
        }
    }
    if let Some((an, aspec)) = open {
        out.push(piece(an, acc, Some(aspec), true));
    } else if acc > 0 || out.is_empty() {
        out.push(LayerSpec::compute(name.unwrap_or("idle"), acc, 0, 0));
    }
    out
}

/// A micro-batch block: forward pieces as layers 0..nf (forward column),
/// then backward pieces in the input-gradient column of layers placed so
/// that the engine's reverse walk runs them in measured order.
fn block(fwd: Vec<LayerSpec>, bwd: Vec<LayerSpec>) -> Block {
    let mut layers = fwd;
    layers.extend(bwd.into_iter().rev().map(|p| LayerSpec {
        name: p.name,
        forward: PhaseOps::default(),
        input_grad: p.forward,
        weight_grad: PhaseOps::default(),
        update_ns: 0,
    }));
    Block { layers }
}

/// Once-per-iteration rows from pieces: compute in the forward column, the
/// collective in the weight-gradient column (DP semantics).
fn rows(pieces: Vec<LayerSpec>) -> Vec<LayerSpec> {
    pieces
        .into_iter()
        .filter(|p| p.forward.compute_ns > 0 || p.forward.comm.is_some())
        .map(|p| LayerSpec {
            name: p.name,
            forward: PhaseOps::compute(p.forward.compute_ns),
            input_grad: PhaseOps::default(),
            weight_grad: PhaseOps {
                compute_ns: 0,
                comm: p.forward.comm,
                ..Default::default()
            },
            update_ns: 0,
        })
        .collect()
}

/// Where a traced op's items go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bucket {
    /// Before the first step (joins it).
    Lead,
    Forward(u32),
    Backward(u32),
    /// Gradient-sync rows.
    Pre,
    /// Closing rows (optimizer).
    Post,
}

#[derive(Default)]
struct Buckets {
    lead: Vec<Item>,
    fwd: BTreeMap<u32, Vec<Item>>,
    bwd: BTreeMap<u32, Vec<Item>>,
    pre: Vec<Item>,
    post: Vec<Item>,
}

impl Buckets {
    fn list(&mut self, b: Bucket) -> &mut Vec<Item> {
        match b {
            Bucket::Lead => &mut self.lead,
            Bucket::Forward(j) => self.fwd.entry(j).or_default(),
            Bucket::Backward(j) => self.bwd.entry(j).or_default(),
            Bucket::Pre => &mut self.pre,
            Bucket::Post => &mut self.post,
        }
    }
}

/// The program of one Echo rank and its measured time by kind.
///
/// Besides the ops' own items ([`op_items`]), the rank's time between ops
/// (host gaps on the trace's clock) is replayed as measured compute: before
/// a compute or collective op it opens that op's items; before a send or
/// receive it closes the current step (the transfer waits for it). A gap
/// inside a step that needs a neighbour stage's data (a forward after the
/// first stage, a backward before the last) whose receive is not traced is
/// not replayed: it may be the wait for that data, which the simulation
/// re-creates. A split
/// send or receive ([`InferredNetwork::split`]) contributes its transfer to
/// the comparison and the rank's own time after it to the next op's items;
/// the transfer itself is made by the engine.
fn echo_program(
    rt: &RankTrace,
    stage: u32,
    m: u32,
    parallel: Parallelism,
    network: &InferredNetwork,
    warnings: &mut Vec<String>,
) -> Option<(RankProgram, ByKind)> {
    let ctx = RankCtx {
        rank: rt.rank,
        parallel,
        network,
    };
    let mut measured = ByKind::default();
    let mut order: Vec<PipeStep> = Vec::new();
    let mut b = Buckets::default();
    let mut current: Option<(bool, u32)> = None;
    let mut last = Bucket::Lead;
    let mut last_name = String::from("idle");
    let mut prev_end: Option<u64> = None;
    let mut carry = 0u64;
    let mut received: BTreeSet<(bool, u32)> = BTreeSet::new();
    let ops = first_iteration(&rt.ops);
    let after = rt.ops.len() - ops.len();
    for (oi, op) in ops.iter().enumerate() {
        let oi = oi as u32;
        let gap = match (prev_end, op.start_ns) {
            (Some(e), Some(s)) => s.saturating_sub(e),
            _ => 0,
        };
        if let Some(e) = op.end_ns() {
            prev_end = Some(prev_end.map_or(e, |p| p.max(e)));
        }
        if matches!(op.kind, OpKind::Send | OpKind::Recv) {
            let own = gap.saturating_add(carry);
            if own > 0 {
                b.list(last).push(Item::Compute {
                    name: last_name.clone(),
                    ns: own,
                });
            }
            let kind = if op.kind == OpKind::Send { SEND } else { RECV };
            if let (OpKind::Recv, Some(j), Some(ph)) = (op.kind, op.micro_batch, op.phase) {
                received.insert((ph == TrainingPhase::Forward, j));
            }
            match network.split((rt.rank, oi, WHOLE_OP)) {
                Some(s) => {
                    measured.add(kind, s.transfer_ns);
                    carry = s.after_ns;
                }
                None => {
                    measured.add(kind, op.duration_ns.unwrap_or(0));
                    carry = 0;
                }
            }
            continue;
        }
        let bucket = match (op.phase, op.micro_batch) {
            (Some(TrainingPhase::Forward), Some(j)) => {
                if op.name == "forward_step" {
                    order.push(PipeStep::f(j, 0));
                    current = Some((true, j));
                }
                Bucket::Forward(j)
            }
            (Some(TrainingPhase::Backward), Some(j)) => {
                if op.name == "backward_step" {
                    order.push(PipeStep::b(j, 0));
                    current = Some((false, j));
                }
                Bucket::Backward(j)
            }
            (Some(TrainingPhase::GradSync), _) => Bucket::Pre,
            (Some(TrainingPhase::Optimizer), _) => Bucket::Post,
            _ => match current {
                Some((true, j)) => Bucket::Forward(j),
                Some((false, j)) => Bucket::Backward(j),
                None => Bucket::Lead,
            },
        };
        // Before a step that needs a neighbour's data, a gap without a
        // traced receive may be waiting for it: left to the simulation.
        let untraced_wait = match bucket {
            Bucket::Forward(j) => stage > 0 && !received.contains(&(true, j)),
            Bucket::Backward(j) => stage + 1 < parallel.pp && !received.contains(&(false, j)),
            _ => false,
        };
        let own = if untraced_wait {
            carry
        } else {
            gap.saturating_add(carry)
        };
        carry = 0;
        let items = op_items(op, oi, &ctx, &mut measured);
        let list = b.list(bucket);
        if own > 0 {
            list.push(Item::Compute {
                name: op.name.clone(),
                ns: own,
            });
        }
        list.extend(items);
        last = bucket;
        last_name.clone_from(&op.name);
    }
    if carry > 0 {
        b.list(last).push(Item::Compute {
            name: last_name,
            ns: carry,
        });
    }
    if after > 0 {
        warnings.push(format!(
            "rank {}: the replay covers the first iteration; {after} later op(s) are not replayed",
            rt.rank
        ));
    }
    if order.is_empty() {
        warnings.push(format!(
            "rank {} has no forward_step / backward_step: not simulated",
            rt.rank
        ));
        return None;
    }
    if !b.lead.is_empty() {
        if let Some(first) = order.first() {
            let target = if first.direction == crate::engine::schedule::Direction::Forward {
                Bucket::Forward(first.micro_batch)
            } else {
                Bucket::Backward(first.micro_batch)
            };
            let mut lead = std::mem::take(&mut b.lead);
            let list = b.list(target);
            lead.append(list);
            *list = lead;
        }
    }
    let mut blocks = Vec::with_capacity(m as usize);
    for j in 0..m {
        let f = pieces(b.fwd.get(&j).map_or(&[][..], |v| v), FORWARD, &mut measured);
        let bw = pieces(
            b.bwd.get(&j).map_or(&[][..], |v| v),
            BACKWARD,
            &mut measured,
        );
        blocks.push(block(f, bw));
    }
    let micro_batch_blocks = if blocks.len() > 1 {
        (0..blocks.len() as u32).collect()
    } else {
        Vec::new()
    };
    Some((
        RankProgram {
            rank: rt.rank,
            stage,
            blocks,
            micro_batch_blocks,
            pre_rows: rows(pieces(&b.pre, ITERATION, &mut measured)),
            post_rows: rows(pieces(&b.post, ITERATION, &mut measured)),
            order: Some(order),
            chunk_layers: Vec::new(),
        },
        measured,
    ))
}

/// Add copies of the nearest present stage for every stage without a
/// program; returns the copies made.
fn fill_missing_stages(
    programs: &mut Vec<RankProgram>,
    parallel: Parallelism,
    warnings: &mut Vec<String>,
) -> Vec<AssumedRank> {
    let placement = Placement::new(parallel, PlacementOrder::default(), 1);
    let present: Vec<u32> = {
        let mut s: Vec<u32> = programs.iter().map(|p| p.stage).collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    let mut assumed = Vec::new();
    if present.is_empty() {
        return assumed;
    }
    // The callers checked the sizes (`check_replay_size`) before this: at
    // most MAX_WORLD stages, each copy within the task limit.
    let last = parallel.pp.saturating_sub(1);
    let mut copies = Vec::new();
    for stage in 0..parallel.pp {
        if present.binary_search(&stage).is_ok() {
            continue;
        }
        let like = present
            .iter()
            .copied()
            .min_by_key(|t| (t.abs_diff(stage), *t))
            .unwrap_or(0);
        for p in programs.iter().filter(|p| p.stage == like) {
            let c = placement.coords_of(p.rank);
            let rank = placement.rank_of(Coords { pp: stage, ..c });
            let keep_embedding = stage == 0 || stage == last;
            let drop = |rows: &[LayerSpec]| -> Vec<LayerSpec> {
                rows.iter()
                    .filter(|r| {
                        keep_embedding
                            || r.weight_grad.comm.is_none_or(|c| c.group != GroupKind::Pp)
                    })
                    .cloned()
                    .collect()
            };
            copies.push(RankProgram {
                rank,
                stage,
                blocks: p.blocks.clone(),
                micro_batch_blocks: p.micro_batch_blocks.clone(),
                pre_rows: drop(&p.pre_rows),
                post_rows: drop(&p.post_rows),
                order: None,
                chunk_layers: Vec::new(),
            });
            assumed.push(AssumedRank {
                rank,
                stage,
                like_rank: p.rank,
                like_stage: like,
            });
        }
    }
    programs.extend(copies);
    programs.sort_by_key(|p| (p.stage, p.rank));
    if !assumed.is_empty() {
        let list: Vec<String> = assumed
            .iter()
            .map(|a| {
                format!(
                    "rank {} (stage {}) as rank {} (stage {})",
                    a.rank, a.stage, a.like_rank, a.like_stage
                )
            })
            .collect();
        warnings.push(format!(
            "only some ranks are measured: stages without a measured rank are assumed to be like the nearest present stage, with the schedule's step order for their stage: {}",
            list.join(", ")
        ));
    }
    assumed
}

/// Refuse a measured run whose sizes exceed the limits before any stage is
/// filled in: the world, the micro-batch count, and `pp` stage programs as
/// big as the largest measured one.
fn check_replay_size(
    parallel: Parallelism,
    micro_batches: u32,
    programs: &[RankProgram],
) -> Result<(), SimError> {
    let layers = programs
        .iter()
        .flat_map(|p| p.blocks.iter().map(|b| b.layers.len()))
        .max()
        .unwrap_or(0);
    let once = programs
        .iter()
        .map(|p| p.pre_rows.len() + p.post_rows.len())
        .max()
        .unwrap_or(0);
    check_size(
        parallel,
        u64::from(parallel.pp).max(programs.len() as u64),
        u64::from(micro_batches),
        1,
        layers as u64,
        once as u64,
    )
}

fn parallel_of(run: &MeasuredRun) -> Parallelism {
    Parallelism {
        tp: run.parallel.tp.max(1),
        dp: run.parallel.dp.max(1),
        pp: run.parallel.pp.max(1),
        ep: 1,
        cp: 1,
        etp: None,
        dp_shard: 0,
    }
}

fn stage_of(run: &MeasuredRun, rt: &RankTrace) -> u32 {
    rt.stage
        .unwrap_or_else(|| run.parallel.stage_of_rank(rt.rank))
}

fn unmeasured_note(
    run: &MeasuredRun,
    programs: &[RankProgram],
    world: u64,
    warnings: &mut Vec<String>,
) {
    let simulated = programs.len() as u64;
    if simulated < world {
        let measured = run.ranks.len();
        warnings.push(format!(
            "{} of {world} ranks are simulated ({measured} measured); the others are not: their collectives are assumed to start with the simulated members of each group",
            simulated
        ));
    }
}

/// What the Echo and Optimus-Prime rebuilds make of a run's present ranks,
/// before [`finish_rebuild`] completes it.
struct Rebuilt {
    name: &'static str,
    programs: Vec<RankProgram>,
    present: Vec<u32>,
    measured: ByKind,
    explicit_order: bool,
    network: Option<InferredNetwork>,
}

/// The common end of the Echo and Optimus-Prime rebuilds: the size check,
/// the missing stages filled with copies, the note on unmeasured ranks, and
/// the per-rank job.
fn finish_rebuild(
    run: &MeasuredRun,
    parallel: Parallelism,
    m: u32,
    r: Rebuilt,
    mut warnings: Vec<String>,
) -> Result<(ReplayJob, Vec<String>), SimError> {
    let Rebuilt {
        name,
        mut programs,
        present,
        measured,
        explicit_order,
        network,
    } = r;
    check_replay_size(parallel, m, &programs)?;
    let assumed = fill_missing_stages(&mut programs, parallel, &mut warnings);
    unmeasured_note(run, &programs, parallel.world(), &mut warnings);
    let job = JobSpec::per_rank(name, parallel, m, run.parallel.activation_bytes, programs);
    Ok((
        ReplayJob {
            job,
            present_ranks: present,
            assumed,
            measured,
            explicit_order,
            network,
        },
        warnings,
    ))
}

/// Rebuild an Echo run (see the module documentation).
pub fn echo_job(run: &MeasuredRun) -> Result<(ReplayJob, Vec<String>), SimError> {
    let mut warnings = Vec::new();
    let parallel = parallel_of(run);
    let m = run.parallel.micro_batches.max(1);
    check_size(parallel, 0, u64::from(m), 1, 0, 0)?;
    let network = infer::infer(run, parallel);
    if !network.clocks_shared {
        warnings.push(
            "the ranks' clocks do not look shared: collectives are not split into waiting and transfer; the inferred bandwidths include waiting"
                .to_string(),
        );
    }
    let mut programs = Vec::new();
    let mut measured = ByKind::default();
    let mut present = Vec::new();
    for rt in &run.ranks {
        if u64::from(rt.rank) >= parallel.world() {
            warnings.push(format!(
                "rank {} is outside the world of {} ranks: not simulated",
                rt.rank,
                parallel.world()
            ));
            continue;
        }
        let stage = stage_of(run, rt);
        if let Some((p, k)) = echo_program(rt, stage, m, parallel, &network, &mut warnings) {
            measured.merge(&k);
            present.push(rt.rank);
            programs.push(p);
        }
    }
    if programs.is_empty() {
        return Err(SimError::InvalidJob(
            "no rank of the trace has a forward_step or backward_step to replay".to_string(),
        ));
    }
    let rebuilt = Rebuilt {
        name: "echo replay",
        programs,
        present,
        measured,
        explicit_order: true,
        network: Some(network),
    };
    finish_rebuild(run, parallel, m, rebuilt, warnings)
}

/// Rebuild a Kineto run (see the module documentation).
pub fn kineto_job(run: &MeasuredRun) -> Result<(ReplayJob, Vec<String>), SimError> {
    let mut warnings = Vec::new();
    let parallel = parallel_of(run);
    check_size(parallel, 0, 1, 1, 0, 0)?;
    let network = infer::infer(run, parallel);
    let mut programs = Vec::new();
    let mut measured = ByKind::default();
    let mut present = Vec::new();
    for rt in &run.ranks {
        if u64::from(rt.rank) >= parallel.world() {
            warnings.push(format!(
                "rank {} is outside the world of {} ranks: not simulated",
                rt.rank,
                parallel.world()
            ));
            continue;
        }
        let Some(span) = rt.iterations.first() else {
            warnings.push(format!(
                "rank {} has no measured iteration: not simulated",
                rt.rank
            ));
            continue;
        };
        let ctx = RankCtx {
            rank: rt.rank,
            parallel,
            network: &network,
        };
        let mut b = Buckets::default();
        let mut bucket = Bucket::Lead;
        let mut order: Vec<PipeStep> = Vec::new();
        let mut cursor = span.start_ns;
        let mut last_coll_end = span.start_ns;
        let mut overlapping = 0u32;
        let mut alongside = 0u32;
        for (oi, op) in rt.ops.iter().enumerate() {
            if coll_spec(op, parallel).is_none() {
                // Compute: the part of training it belongs to starts at
                // its start; the GPU time before it (idle included) is the
                // part that ran until then.
                let next = match (op.kind, op.phase, op.micro_batch) {
                    (OpKind::Compute, Some(TrainingPhase::Forward), Some(j)) => Bucket::Forward(j),
                    (OpKind::Compute, Some(TrainingPhase::Backward), Some(j)) => {
                        Bucket::Backward(j)
                    }
                    (OpKind::Compute, Some(TrainingPhase::Optimizer), _) => Bucket::Post,
                    _ => bucket,
                };
                if next != bucket {
                    if let Some(start) = op.start_ns.filter(|s| *s > cursor) {
                        b.list(bucket).push(Item::Compute {
                            name: "gpu".to_string(),
                            ns: start - cursor,
                        });
                        cursor = start;
                    }
                    match next {
                        Bucket::Forward(j) if !order.contains(&PipeStep::f(j, 0)) => {
                            order.push(PipeStep::f(j, 0));
                        }
                        Bucket::Backward(j) if !order.contains(&PipeStep::b(j, 0)) => {
                            order.push(PipeStep::b(j, 0));
                        }
                        _ => {}
                    }
                    bucket = next;
                }
                continue;
            }
            let (Some(start), Some(end)) = (op.start_ns, op.end_ns()) else {
                continue;
            };
            if start < last_coll_end {
                overlapping += 1;
                continue;
            }
            let list = b.list(bucket);
            list.push(Item::Compute {
                name: "gpu".to_string(),
                ns: start.saturating_sub(cursor),
            });
            last_coll_end = end;
            if ran_alongside(&rt.ops[oi + 1..], op.stream, end) {
                // The compute stream went on while the collective ran: its
                // measured time is kept; the collective runs beside it.
                alongside += 1;
                list.extend(
                    op_items(op, oi as u32, &ctx, &mut measured)
                        .into_iter()
                        .filter_map(|it| match it {
                            Item::Coll { name, spec } => Some(Item::CollAlongside { name, spec }),
                            _ => None,
                        }),
                );
                cursor = start;
            } else {
                list.extend(op_items(op, oi as u32, &ctx, &mut measured));
                cursor = end;
            }
        }
        b.list(bucket).push(Item::Compute {
            name: "gpu".to_string(),
            ns: span.end_ns.saturating_sub(cursor),
        });
        if overlapping > 0 {
            warnings.push(format!(
                "rank {}: {overlapping} collective(s) overlap an earlier one (another NCCL stream): kept in the measured time between collectives",
                rt.rank
            ));
        }
        if alongside > 0 {
            warnings.push(format!(
                "rank {}: {alongside} collective(s) ran while other streams started work: replayed alongside the measured compute, which keeps its time",
                rt.rank
            ));
        }
        // Every micro-batch runs a forward and a backward step (a part the
        // trace lacks is empty); what ran before the first step joins it.
        let m = b.fwd.keys().chain(b.bwd.keys()).max().map_or(1, |j| j + 1);
        for j in 0..m {
            let (f, bw) = (PipeStep::f(j, 0), PipeStep::b(j, 0));
            if !order.contains(&f) {
                let at = order.iter().position(|s| *s == bw).unwrap_or(order.len());
                order.insert(at, f);
            }
            if !order.contains(&bw) {
                let at = order
                    .iter()
                    .position(|s| *s == f)
                    .map_or(order.len(), |i| i + 1);
                order.insert(at, bw);
            }
        }
        let lead = std::mem::take(&mut b.lead);
        let first = match order.first() {
            Some(s) if s.direction == crate::engine::schedule::Direction::Backward => {
                Bucket::Backward(s.micro_batch)
            }
            Some(s) => Bucket::Forward(s.micro_batch),
            None => Bucket::Forward(0),
        };
        let list = b.list(first);
        let rest = std::mem::replace(list, lead);
        list.extend(rest);
        let mut blocks = Vec::with_capacity(m as usize);
        for j in 0..m {
            let f = pieces(b.fwd.get(&j).map_or(&[][..], |v| v), FORWARD, &mut measured);
            let bw = match b.bwd.get(&j) {
                Some(v) => pieces(v, BACKWARD, &mut measured),
                None => Vec::new(),
            };
            blocks.push(block(f, bw));
        }
        let micro_batch_blocks = if blocks.len() > 1 {
            (0..blocks.len() as u32).collect()
        } else {
            Vec::new()
        };
        present.push(rt.rank);
        programs.push(RankProgram {
            rank: rt.rank,
            stage: 0,
            blocks,
            micro_batch_blocks,
            pre_rows: Vec::new(),
            post_rows: if b.post.is_empty() {
                Vec::new()
            } else {
                rows(pieces(&b.post, ITERATION, &mut measured))
            },
            order: Some(order),
            chunk_layers: Vec::new(),
        });
    }
    if programs.is_empty() {
        return Err(SimError::InvalidJob(
            "no rank of the Kineto traces has a measured iteration to replay".to_string(),
        ));
    }
    // Ranks that ran fewer micro-batches than another get empty ones
    // (the engine runs one count for the job).
    let m = programs.iter().map(|p| p.blocks.len()).max().unwrap_or(1) as u32;
    for p in &mut programs {
        for j in p.blocks.len() as u32..m {
            p.blocks
                .push(block(vec![LayerSpec::compute("idle", 0, 0, 0)], Vec::new()));
            if let Some(order) = p.order.as_mut() {
                order.extend([PipeStep::f(j, 0), PipeStep::b(j, 0)]);
            }
        }
        if m > 1 {
            p.micro_batch_blocks = (0..m).collect();
        }
    }
    check_replay_size(parallel, m, &programs)?;
    unmeasured_note(run, &programs, parallel.world(), &mut warnings);
    let mut rj = ReplayJob::per_rank(
        "kineto replay",
        parallel,
        programs,
        present,
        measured,
        Some(network),
    );
    rj.job.micro_batches = m;
    Ok((rj, warnings))
}

/// Whether work on a stream other than `stream` started while a collective
/// on `stream` ran (until `end_ns`): the ops after it, in start order. Such
/// a collective did not hold up the rank's compute.
fn ran_alongside(after: &[MeasuredOp], stream: Option<u32>, end_ns: u64) -> bool {
    after
        .iter()
        .take_while(|o| o.start_ns.is_some_and(|s| s < end_ns))
        .any(|o| o.stream != stream)
}

/// How the stages simulated as copies were scaled to the measured ranks'
/// waits ([`fit_copies`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CopyScales {
    /// The stages simulated as copies.
    pub stages: Vec<u32>,
    /// Their forward compute is the copied stage's times this.
    pub forward_scale: f64,
    /// Their backward compute is the copied stage's times this.
    pub backward_scale: f64,
    /// The measured rank whose first forward receive set the forward
    /// scale, with that receive's measured end and the simulated one, ns
    /// from the iteration start (`None`: no such receive; one scale for
    /// both directions).
    pub forward_rank: Option<u32>,
    pub forward_target_ns: Option<u64>,
    pub forward_simulated_ns: Option<u64>,
    /// The measured ranks' iteration end, measured and simulated, ns.
    pub end_target_ns: u64,
    pub end_simulated_ns: u64,
    /// Simulations the fit ran.
    pub simulations: u32,
}

/// `job` with every compute piece of `rank` (its blocks' three phases, the
/// rows before and after them) times `factor`: the slowed-rank what-if of
/// a per-rank replay ([`crate::run::RunOptions::slow_rank`]). A job that
/// is not per rank, or does not simulate `rank`, is refused.
pub fn slow_rank(job: &JobSpec, rank: u32, factor: f64) -> Result<JobSpec, SimError> {
    let refuse = |reason: String| {
        Err(SimError::InvalidConfig {
            name: "slow_rank",
            reason,
        })
    };
    if job.mode != JobMode::PerRank {
        return refuse(
            "the replay simulates one rank per stage for all ranks of it, so one rank cannot be slowed alone".to_string(),
        );
    }
    let mut j = job.clone();
    let Some(p) = j.programs.iter_mut().find(|p| p.rank == rank) else {
        let mut ranks: Vec<u32> = job.programs.iter().map(|p| p.rank).collect();
        ranks.sort_unstable();
        return refuse(format!(
            "rank {rank} is not simulated by this replay (its ranks: {})",
            crate::formats::lex::number_ranges(&ranks)
        ));
    };
    let rows = p.pre_rows.iter_mut().chain(p.post_rows.iter_mut());
    for l in p
        .blocks
        .iter_mut()
        .flat_map(|b| b.layers.iter_mut())
        .chain(rows)
    {
        for ph in [&mut l.forward, &mut l.input_grad, &mut l.weight_grad] {
            ph.compute_ns = scale(ph.compute_ns, factor);
        }
    }
    Ok(j)
}

/// `job` with the compute of `copies` (ranks) scaled: forward by `fwd`,
/// backward by `bwd`.
fn scale_copies(job: &JobSpec, copies: &[u32], fwd: f64, bwd: f64) -> JobSpec {
    let mut j = job.clone();
    for p in j.programs.iter_mut().filter(|p| copies.contains(&p.rank)) {
        for b in &mut p.blocks {
            for l in &mut b.layers {
                l.forward.compute_ns = scale(l.forward.compute_ns, fwd);
                l.input_grad.compute_ns = scale(l.input_grad.compute_ns, bwd);
                l.weight_grad.compute_ns = scale(l.weight_grad.compute_ns, bwd);
            }
        }
    }
    j
}

/// The scale in [1e-3, 1e3] (log-scale bisection from 1, at most 50 steps,
/// within 0.01 % of `target`) for which the monotone `f` meets `target`;
/// the closest one found, with its value.
fn bisect(
    mut f: impl FnMut(f64) -> Result<u64, SimError>,
    target: u64,
    sims: &mut u32,
) -> Result<(f64, u64), SimError> {
    let close = |t: u64| t.abs_diff(target) <= (target / 10_000).max(1);
    let first = f(1.0)?;
    *sims += 1;
    let mut best = (1.0, first);
    if close(first) {
        return Ok(best);
    }
    let (mut lo, mut hi) = if first < target {
        (0.0, 1e3f64.ln())
    } else {
        (1e-3f64.ln(), 0.0)
    };
    for _ in 0..50 {
        let mid = (lo + hi) / 2.0;
        let s = mid.exp();
        let t = f(s)?;
        *sims += 1;
        if t.abs_diff(target) < best.1.abs_diff(target) {
            best = (s, t);
        }
        if close(t) || hi - lo < 1e-9 {
            break;
        }
        if t < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(best)
}

/// Lane indices of `rank` in a simulated timeline.
fn rank_lanes(t: &Timeline, rank: u32) -> impl Iterator<Item = u32> + '_ {
    t.lanes()
        .iter()
        .enumerate()
        .filter(move |(_, l)| l.group_kind == LaneGroup::Rank && l.group == rank)
        .map(|(i, _)| i as u32)
}

/// Infer the work of the stages a partial Echo job simulates as copies
/// from the measured ranks' waits: the copies' forward compute is scaled so
/// that the first forward receive of the lowest measured stage that has
/// copies upstream ends when it was measured to (how long the upstream
/// stages took), then their backward compute so that the measured ranks'
/// iteration ends when it was measured to (how long the others kept them
/// waiting); with no such receive, one scale for both. Times are from the
/// iteration start (the earliest traced start). The measured ranks' own
/// ops keep their durations, so for a partial job the iteration time
/// meets the measurement by construction: the error says how well the
/// copies could be fitted, not how good the replay is. `Ok(None)` (with
/// a warning) when the trace cannot say: a copy upstream of every measured
/// rank without a timed first forward receive to measure it by.
pub fn fit_copies(
    rj: &ReplayJob,
    run: &MeasuredRun,
    config: &SimConfig,
    cost: &dyn CollectiveCost,
    warnings: &mut Vec<String>,
) -> Result<Option<(JobSpec, CopyScales)>, SimError> {
    let copies: Vec<u32> = rj.assumed.iter().map(|a| a.rank).collect();
    if copies.is_empty() {
        return Ok(None);
    }
    let mut stages: Vec<u32> = rj.assumed.iter().map(|a| a.stage).collect();
    stages.sort_unstable();
    stages.dedup();
    let lowest_copy = stages.first().copied().unwrap_or(0);
    let origin = run
        .ranks
        .iter()
        .flat_map(|r| first_iteration(&r.ops))
        .flat_map(|o| std::iter::once(o).chain(o.sub_ops.iter()))
        .filter_map(|o| o.start_ns)
        .min()
        .unwrap_or(0);
    let present: Vec<&RankTrace> = run
        .ranks
        .iter()
        .filter(|r| rj.present_ranks.contains(&r.rank))
        .collect();
    let end_target = present
        .iter()
        .filter_map(|r| {
            first_iteration(&r.ops)
                .iter()
                .filter_map(|o| o.end_ns())
                .max()
        })
        .max()
        .map(|e| e.saturating_sub(origin));
    let Some(end_target) = end_target.filter(|t| *t > 0) else {
        return Ok(None);
    };
    // The lowest measured stage with copies upstream whose first op is a
    // timed forward receive.
    let mut by_stage: Vec<(u32, &RankTrace)> =
        present.iter().map(|r| (stage_of(run, r), *r)).collect();
    by_stage.sort_by_key(|(s, r)| (*s, r.rank));
    let forward = by_stage
        .iter()
        .filter(|(s, _)| *s > lowest_copy)
        .find_map(|(_, r)| {
            let op = first_iteration(&r.ops).first()?;
            (op.kind == OpKind::Recv && op.phase == Some(TrainingPhase::Forward))
                .then(|| op.end_ns())
                .flatten()
                .map(|e| (r.rank, e.saturating_sub(origin)))
        });
    let min_present = by_stage.first().map_or(0, |(s, _)| *s);
    if forward.is_none() && min_present > lowest_copy {
        warnings.push(format!(
            "stage(s) {stages:?} are not measured and no measured rank shows how long they took (no timed first forward receive): they keep the copied stage's durations"
        ));
        return Ok(None);
    }
    let mut sims = 0u32;
    let simulate = |job: &JobSpec| crate::engine::simulate_with(job, config, cost);
    let end_of = |t: &Timeline| -> u64 {
        rj.present_ranks
            .iter()
            .flat_map(|r| rank_lanes(t, *r).collect::<Vec<_>>())
            .flat_map(|l| t.spans(l).iter().map(Span::end_ns))
            .max()
            .unwrap_or(0)
    };
    let (fwd, fwd_sim) = match forward {
        Some((rank, target)) => {
            let recv_end = |t: &Timeline| -> u64 {
                rank_lanes(t, rank)
                    .filter(|l| t.lanes()[*l as usize].stream == Stream::Recv)
                    .filter_map(|l| t.spans(l).first().map(Span::end_ns))
                    .min()
                    .unwrap_or(0)
            };
            let (s, got) = bisect(
                |x| {
                    Ok(recv_end(
                        &simulate(&scale_copies(&rj.job, &copies, x, x))?.timeline,
                    ))
                },
                target,
                &mut sims,
            )?;
            (Some(s), Some(got))
        }
        None => (None, None),
    };
    let (bwd, end_sim) = bisect(
        |x| {
            let f = fwd.unwrap_or(x);
            Ok(end_of(
                &simulate(&scale_copies(&rj.job, &copies, f, x))?.timeline,
            ))
        },
        end_target,
        &mut sims,
    )?;
    let fwd = fwd.unwrap_or(bwd);
    Ok(Some((
        scale_copies(&rj.job, &copies, fwd, bwd),
        CopyScales {
            stages,
            forward_scale: fwd,
            backward_scale: bwd,
            forward_rank: forward.map(|f| f.0),
            forward_target_ns: forward.map(|f| f.1),
            forward_simulated_ns: fwd_sim,
            end_target_ns: end_target,
            end_simulated_ns: end_sim,
            simulations: sims,
        },
    )))
}

/// Rebuild an Optimus-Prime run with backward = `backward_factor` x forward
/// (see the module documentation).
pub fn optimus_job(
    run: &MeasuredRun,
    backward_factor: f64,
) -> Result<(ReplayJob, Vec<String>), SimError> {
    if !backward_factor.is_finite() || !(0.0..=1000.0).contains(&backward_factor) {
        return Err(SimError::InvalidConfig {
            name: "backward_factor",
            reason: format!("{backward_factor} is not between 0 and 1000"),
        });
    }
    let mut warnings = Vec::new();
    let parallel = parallel_of(run);
    let m = run.parallel.micro_batches.max(1);
    check_size(parallel, 0, u64::from(m), 1, 0, 0)?;
    let mut programs = Vec::new();
    let mut measured = ByKind::default();
    let mut present = Vec::new();
    let mut warmup_only = Vec::new();
    for rt in &run.ranks {
        if u64::from(rt.rank) >= parallel.world() {
            continue;
        }
        let steady = |o: &&MeasuredOp| o.step.is_some_and(|s| s >= 2);
        let use_all = !rt.ops.iter().any(|o| steady(&o));
        if use_all {
            warmup_only.push(rt.rank);
        }
        let ops: Vec<&MeasuredOp> = rt
            .ops
            .iter()
            .filter(|o| use_all || steady(o))
            .filter(|o| o.duration_ns.is_some())
            .collect();
        let mut steps: Vec<u32> = ops.iter().filter_map(|o| o.step).collect();
        steps.sort_unstable();
        steps.dedup();
        let n_steps = steps.len().max(1) as u128;
        // Per layer name (first-appearance order): summed total.
        let mut names: Vec<&str> = Vec::new();
        let mut totals: BTreeMap<&str, u128> = BTreeMap::new();
        for o in &ops {
            if !totals.contains_key(o.name.as_str()) {
                names.push(&o.name);
            }
            *totals.entry(&o.name).or_insert(0) += u128::from(o.duration_ns.unwrap_or(0));
        }
        if names.is_empty() {
            continue;
        }
        let den = n_steps * u128::from(m);
        let layers: Vec<LayerSpec> = names
            .iter()
            .map(|n| {
                let total = totals.get(n).copied().unwrap_or(0);
                let f = u64::try_from((total + den / 2) / den).unwrap_or(u64::MAX / 4);
                let half = scale(f, backward_factor / 2.0);
                measured.add(FORWARD, f.saturating_mul(u64::from(m)));
                LayerSpec::compute(n, f, half, half)
            })
            .collect();
        present.push(rt.rank);
        programs.push(RankProgram {
            rank: rt.rank,
            stage: stage_of(run, rt),
            blocks: vec![Block { layers }],
            micro_batch_blocks: Vec::new(),
            pre_rows: Vec::new(),
            post_rows: Vec::new(),
            order: None,
            chunk_layers: Vec::new(),
        });
    }
    if programs.is_empty() {
        return Err(SimError::InvalidJob(
            "the log has no forward times to replay".to_string(),
        ));
    }
    if !warmup_only.is_empty() {
        warnings.push(format!(
            "rank(s) {warmup_only:?} logged only the warm-up step: its inflated times are used"
        ));
    }
    warnings.push(format!(
        "forward per micro-batch = mean per-step forward total over the steady steps (step 1, warm-up, excluded) / {m} micro-batches; backward is not logged: estimated as {backward_factor} x forward, split equally into input and weight gradient"
    ));
    warnings.push(
        "send/recv times are not logged: stage-to-stage transfers carry the activation-bytes setting (none by default: not simulated)"
            .to_string(),
    );
    let rebuilt = Rebuilt {
        name: "optimus-prime replay",
        programs,
        present,
        measured,
        explicit_order: false,
        network: None,
    };
    finish_rebuild(run, parallel, m, rebuilt, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::echo;

    const SEED: &str =
        include_str!("../../../../tests/fixtures/seeds/echo_megatron_trace_rank7_tp2_pp4.txt");

    #[test]
    fn echo_seed_rank7_and_copies() {
        let run = echo::parse_run(&[("echo_megatron_trace_rank7_tp2_pp4.txt", SEED)]);
        let (r, warnings) = echo_job(&run).unwrap();
        assert_eq!(r.present_ranks, vec![7]);
        let ranks: Vec<(u32, u32)> = r.job.programs.iter().map(|p| (p.stage, p.rank)).collect();
        assert_eq!(ranks, vec![(0, 1), (1, 3), (2, 5), (3, 7)]);
        assert_eq!(r.assumed.len(), 3);
        assert!(warnings.iter().any(|w| w.contains("nearest present stage")));
        let p7 = &r.job.programs[3];
        assert_eq!(
            p7.order.as_deref(),
            Some(&[PipeStep::f(0, 0), PipeStep::b(0, 0)][..])
        );
        // forward_step with 23 TP all-reduce sub-ops: 23 pieces with a
        // collective, plus get_batch / loss_func compute.
        let b = &p7.blocks[0];
        let fwd_colls = b
            .layers
            .iter()
            .filter(|l| l.forward.comm.is_some_and(|c| c.group == GroupKind::Tp))
            .count();
        assert_eq!(fwd_colls, 23);
        // Measured forward compute = the forward ops less their TP
        // collectives (unsplit: rank 6 is not traced), plus the host time
        // before each of them (after the previous op ended). loss_func's
        // 4-byte DP all-reduce is local work with DP 1: compute.
        let ops = &run.ranks[0].ops;
        let mut want = 0u64;
        for (i, o) in ops.iter().enumerate() {
            if o.phase != Some(TrainingPhase::Forward) || o.kind != OpKind::Compute {
                continue;
            }
            let tp: u64 = o
                .sub_ops
                .iter()
                .filter(|s| coll_spec(s, r.job.parallel).is_some())
                .map(|s| s.duration_ns.unwrap())
                .sum();
            let gap = o.start_ns.unwrap() - ops[i - 1].end_ns().unwrap();
            want += o.duration_ns.unwrap() - tp + gap;
        }
        let m = &r.measured;
        assert_eq!(m.ns[FORWARD], want);
        assert!(want > 590_000_000, "{want}");
        // Gradient sync rows: dp_allreduce is local work (DP 1), the
        // ep_allreduce the embedding group of first and last stage; the
        // middle-stage copies drop the embedding row, the stage-0 copy keeps
        // it.
        let groups = |p: &RankProgram| -> Vec<GroupKind> {
            p.pre_rows
                .iter()
                .filter_map(|r| r.weight_grad.comm.map(|c| c.group))
                .collect()
        };
        assert_eq!(groups(p7), vec![GroupKind::Pp]);
        assert_eq!(groups(&r.job.programs[0]), vec![GroupKind::Pp]);
        assert!(groups(&r.job.programs[1]).is_empty());
        let dp = run.ranks[0]
            .ops
            .iter()
            .find(|o| o.name == "dp_allreduce")
            .unwrap();
        assert!(p7
            .pre_rows
            .iter()
            .any(|row| row.forward.compute_ns >= dp.duration_ns.unwrap()));
        assert_eq!(r.measured.ns[RECV], 629_770_000);
    }
}
