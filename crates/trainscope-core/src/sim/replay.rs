//! Replay of measured runs: rebuild a run's schedule from its measured
//! compute durations as a per-rank [`JobSpec`], so the engine can simulate
//! it with the network model and the result can be compared with the
//! measurement, op kind by op kind ([`ByKind`]).
//!
//! Echo / Megatron traces ([`echo_job`]), per present rank, first iteration
//! (ops up to the first `optimizer_step`):
//! - the step order is the order of the rank's `forward_step` /
//!   `backward_step` ops (micro-batch = their `batch_id`), kept explicitly;
//! - a compute op with sub-operations becomes a chain of pieces: the
//!   measured compute between sub-ops (gaps on the trace's clock), each
//!   followed by the sub-op's collective, re-costed by the network model;
//!   forward-phase ops (`get_batch`, `forward_step`, `loss_func`) make the
//!   forward of their micro-batch, backward ones its backward;
//! - collectives over TP, EP, DP, DP_EP keep their group; the embedding
//!   groups of the first and last stage (Echo `ep`, `pep`) become an
//!   all-reduce between the two (the pipeline group, 2 ranks); broadcasts,
//!   unscoped collectives and collectives of unknown size keep their measured
//!   duration as compute (the network model cannot cost them);
//! - `dp_allreduce` / `ep_allreduce` / `pep_allreduce` are the
//!   once-per-iteration gradient-sync rows, `optimizer_step` the closing
//!   row; sends and receives are not replayed (the engine makes the
//!   stage-to-stage transfers, `activation_bytes` from their shapes) but
//!   their measured time is compared.
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

use super::described::scale;
use super::job::{
    check_size, Block, CollectiveKind, CommSpec, GroupKind, JobMode, JobSpec, LayerSpec,
    Parallelism, PhaseOps, RankProgram,
};
use super::network::{Coords, Placement, PlacementOrder};
use super::schedule::PipeStep;
use super::timeline::{LaneGroup, SpanKind, Timeline};
use super::SimError;
use crate::workload::{CommGroup, CommKind, MeasuredOp, MeasuredRun, OpKind, Phase, RankTrace};
use serde::Serialize;
use std::collections::BTreeMap;

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
                    SpanKind::CollOther => 7,
                    SpanKind::Send => SEND,
                    SpanKind::Recv => RECV,
                    SpanKind::Wait => continue,
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
        GroupKind::Dp => 5,
        GroupKind::DpEp => 6,
        GroupKind::Pp => 7,
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
    /// Measured time by kind over the present ranks, one iteration, ns.
    pub measured: ByKind,
    /// True when the replay keeps each rank's measured step order.
    pub explicit_order: bool,
}

/// One piece of measured work.
#[derive(Debug, Clone)]
enum Item {
    Compute { name: String, ns: u64 },
    Coll { name: String, spec: CommSpec },
}

fn coll_spec(op: &MeasuredOp) -> Option<CommSpec> {
    let OpKind::Collective { collective, group } = op.kind else {
        return None;
    };
    let collective = match collective {
        CommKind::AllReduce => CollectiveKind::AllReduce,
        CommKind::AllGather => CollectiveKind::AllGather,
        CommKind::ReduceScatter => CollectiveKind::ReduceScatter,
        CommKind::AllToAll => CollectiveKind::AllToAll,
        CommKind::Broadcast | CommKind::Send | CommKind::Recv => return None,
    };
    let group = match group {
        CommGroup::Tp => GroupKind::Tp,
        CommGroup::Dp => GroupKind::Dp,
        CommGroup::Ep => GroupKind::Ep,
        CommGroup::DpEp => GroupKind::DpEp,
        CommGroup::Embedding | CommGroup::PositionEmbedding => GroupKind::Pp,
        CommGroup::Pp | CommGroup::Unscoped => return None,
    };
    let size_bytes = op.message_bytes.filter(|b| *b > 0)?;
    Some(CommSpec {
        collective,
        group,
        size_bytes,
    })
}

/// One op (with its sub-ops) as pieces, and the measured time of its
/// collectives by kind.
fn op_items(op: &MeasuredOp, measured: &mut ByKind) -> Vec<Item> {
    let item_of = |o: &MeasuredOp, measured: &mut ByKind| -> Item {
        let d = o.duration_ns.unwrap_or(0);
        match coll_spec(o) {
            Some(spec) => {
                measured.add(kind_of_group(spec.group), d);
                Item::Coll {
                    name: format!("{} / {}", op.name, o.name),
                    spec,
                }
            }
            None => Item::Compute {
                name: op.name.clone(),
                ns: d,
            },
        }
    };
    if op.sub_ops.is_empty() {
        if let Some(spec) = coll_spec(op) {
            measured.add(kind_of_group(spec.group), op.duration_ns.unwrap_or(0));
            return vec![Item::Coll {
                name: op.name.clone(),
                spec,
            }];
        }
        return vec![Item::Compute {
            name: op.name.clone(),
            ns: op.duration_ns.unwrap_or(0),
        }];
    }
    let mut out = Vec::new();
    let timed = op.start_ns.is_some()
        && op.duration_ns.is_some()
        && op.sub_ops.iter().all(|s| s.start_ns.is_some());
    if timed {
        let mut cursor = op.start_ns.unwrap_or(0);
        let mut subs: Vec<&MeasuredOp> = op.sub_ops.iter().collect();
        subs.sort_by_key(|s| s.start_ns);
        for s in subs {
            let start = s.start_ns.unwrap_or(cursor);
            out.push(Item::Compute {
                name: op.name.clone(),
                ns: start.saturating_sub(cursor),
            });
            out.push(item_of(s, measured));
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
        for s in &op.sub_ops {
            out.push(item_of(s, measured));
        }
    }
    out
}

/// Collapse items into (name, compute, collective) pieces: compute
/// accumulates until a collective closes the piece.
fn pieces(items: &[Item], compute_kind: usize, measured: &mut ByKind) -> Vec<LayerSpec> {
    let mut out = Vec::new();
    let mut acc = 0u64;
    let mut name: Option<&str> = None;
    for it in items {
        match it {
            Item::Compute { name: n, ns } => {
                acc = acc.saturating_add(*ns);
                measured.add(compute_kind, *ns);
                name.get_or_insert(n);
            }
            Item::Coll { name: n, spec } => {
                out.push(LayerSpec {
                    name: n.clone(),
                    forward: PhaseOps {
                        compute_ns: acc,
                        comm: Some(*spec),
                    },
                    input_grad: PhaseOps::default(),
                    weight_grad: PhaseOps::default(),
                    update_ns: 0,
                });
                acc = 0;
                name = None;
            }
        }
    }
    if acc > 0 || out.is_empty() {
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
            },
            update_ns: 0,
        })
        .collect()
}

/// The program of one Echo rank and its measured time by kind.
fn echo_program(
    rt: &RankTrace,
    stage: u32,
    m: u32,
    warnings: &mut Vec<String>,
) -> Option<(RankProgram, ByKind)> {
    let mut measured = ByKind::default();
    let mut order: Vec<PipeStep> = Vec::new();
    let mut fwd: BTreeMap<u32, Vec<Item>> = BTreeMap::new();
    let mut bwd: BTreeMap<u32, Vec<Item>> = BTreeMap::new();
    let mut lead: Vec<Item> = Vec::new();
    let mut pre: Vec<Item> = Vec::new();
    let mut post: Vec<Item> = Vec::new();
    let mut current: Option<(bool, u32)> = None;
    let mut ended = false;
    let mut after = 0usize;
    for op in &rt.ops {
        if ended {
            after += 1;
            continue;
        }
        match op.kind {
            OpKind::Send => {
                measured.add(SEND, op.duration_ns.unwrap_or(0));
                continue;
            }
            OpKind::Recv => {
                measured.add(RECV, op.duration_ns.unwrap_or(0));
                continue;
            }
            _ => {}
        }
        let items = op_items(op, &mut measured);
        match (op.phase, op.micro_batch) {
            (Some(Phase::Forward), Some(j)) => {
                if op.name == "forward_step" {
                    order.push(PipeStep::f(j, 0));
                    current = Some((true, j));
                }
                fwd.entry(j).or_default().extend(items);
            }
            (Some(Phase::Backward), Some(j)) => {
                if op.name == "backward_step" {
                    order.push(PipeStep::b(j, 0));
                    current = Some((false, j));
                }
                bwd.entry(j).or_default().extend(items);
            }
            (Some(Phase::GradSync), _) => pre.extend(items),
            (Some(Phase::Optimizer), _) => {
                post.extend(items);
                ended = op.name == "optimizer_step";
            }
            _ => match current {
                Some((true, j)) => fwd.entry(j).or_default().extend(items),
                Some((false, j)) => bwd.entry(j).or_default().extend(items),
                None => lead.extend(items),
            },
        }
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
    if !lead.is_empty() {
        if let Some(first) = order.first() {
            let list = if first.direction == super::schedule::Direction::Forward {
                fwd.entry(first.micro_batch).or_default()
            } else {
                bwd.entry(first.micro_batch).or_default()
            };
            lead.append(list);
            *list = lead;
        }
    }
    let mut blocks = Vec::with_capacity(m as usize);
    for j in 0..m {
        let f = pieces(fwd.get(&j).map_or(&[][..], |v| v), FORWARD, &mut measured);
        let b = pieces(bwd.get(&j).map_or(&[][..], |v| v), BACKWARD, &mut measured);
        blocks.push(block(f, b));
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
            pre_rows: rows(pieces(&pre, ITERATION, &mut measured)),
            post_rows: rows(pieces(&post, ITERATION, &mut measured)),
            order: Some(order),
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

/// Rebuild an Echo run (see the module documentation).
pub fn echo_job(run: &MeasuredRun) -> Result<(ReplayJob, Vec<String>), SimError> {
    let mut warnings = Vec::new();
    let parallel = parallel_of(run);
    let m = run.parallel.micro_batches.max(1);
    check_size(parallel, 0, u64::from(m), 1, 0, 0)?;
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
        if let Some((p, k)) = echo_program(rt, stage, m, &mut warnings) {
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
    check_replay_size(parallel, m, &programs)?;
    let assumed = fill_missing_stages(&mut programs, parallel, &mut warnings);
    unmeasured_note(run, &programs, parallel.world(), &mut warnings);
    let job = JobSpec {
        name: "echo replay".to_string(),
        parallel,
        micro_batches: m,
        activation_bytes: run.parallel.activation_bytes,
        mode: JobMode::PerRank,
        programs,
        header_vpp: None,
        simai_bubble: None,
        warnings: Vec::new(),
    };
    Ok((
        ReplayJob {
            job,
            present_ranks: present,
            assumed,
            measured,
            explicit_order: true,
        },
        warnings,
    ))
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
    check_replay_size(parallel, m, &programs)?;
    let assumed = fill_missing_stages(&mut programs, parallel, &mut warnings);
    unmeasured_note(run, &programs, parallel.world(), &mut warnings);
    let job = JobSpec {
        name: "optimus-prime replay".to_string(),
        parallel,
        micro_batches: m,
        activation_bytes: run.parallel.activation_bytes,
        mode: JobMode::PerRank,
        programs,
        header_vpp: None,
        simai_bubble: None,
        warnings: Vec::new(),
    };
    Ok((
        ReplayJob {
            job,
            present_ranks: present,
            assumed,
            measured,
            explicit_order: false,
        },
        warnings,
    ))
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
        // Measured forward compute + its TP collectives = the forward ops.
        let fwd_ops: u64 = run.ranks[0]
            .ops
            .iter()
            .filter(|o| o.phase == Some(Phase::Forward) && o.kind == OpKind::Compute)
            .map(|o| o.duration_ns.unwrap())
            .sum();
        let m = &r.measured;
        // loss_func's 4-byte DP all-reduce is in coll_dp; its other sub-ops
        // are TP.
        let fwd_coll_tp: u64 = run.ranks[0]
            .ops
            .iter()
            .filter(|o| o.name == "forward_step")
            .flat_map(|o| o.sub_ops.iter())
            .map(|s| s.duration_ns.unwrap())
            .sum();
        assert!(m.ns[FORWARD] + fwd_coll_tp <= fwd_ops);
        assert!(m.ns[FORWARD] + fwd_coll_tp + 100_000 >= fwd_ops - 70_000);
        // Gradient sync rows: dp_allreduce (DP) and ep_allreduce (embedding
        // group of first and last stage) on rank 7; the middle-stage copies
        // drop the embedding row, the stage-0 copy keeps it.
        let groups = |p: &RankProgram| -> Vec<GroupKind> {
            p.pre_rows
                .iter()
                .filter_map(|r| r.weight_grad.comm.map(|c| c.group))
                .collect()
        };
        assert_eq!(groups(p7), vec![GroupKind::Dp, GroupKind::Pp]);
        assert_eq!(
            groups(&r.job.programs[0]),
            vec![GroupKind::Dp, GroupKind::Pp]
        );
        assert_eq!(groups(&r.job.programs[1]), vec![GroupKind::Dp]);
        assert_eq!(r.measured.ns[RECV], 629_770_000);
    }
}
