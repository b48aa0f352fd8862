//! From a job, settings and a cost function to an engine [`TaskGraph`]
//! (plus what each task means), and from a finished run back to a
//! [`Timeline`] and a [`Summary`].
//!
//! Per simulated rank there are five resources (the lanes of
//! [`Stream::ALL`]): compute, blocking TP/EP collectives, asynchronous
//! DP/DP_EP collectives, pipeline send and pipeline receive.
//!
//! A rank's program is a chain: every compute task and every blocking
//! collective depends on the one before it (so compute waits for TP/EP
//! collectives), weight-gradient collectives are issued on the side
//! (asynchronous). A step (micro-batch through a chunk) runs the chunk's
//! layers: forward = compute then collective per layer; backward, in reverse
//! layer order = input-gradient compute and collective, then
//! weight-gradient compute and collective. When the rank's order also lists
//! a weight-gradient step for that micro-batch and chunk (zero-bubble
//! schedules, DualPipeV's warm-up and cool-down) the backward runs only the
//! input-gradient part and the weight step, later, the weight-gradient part
//! (reverse layer order); the previous stage waits only for the backward.
//! Two steps the plan overlaps ([`schedule::StagePlan::overlapped`],
//! DualPipeV's forward & backward pairs) start together when both inputs are
//! there and run as two chains from that anchor, queueing on the rank's
//! streams first-come-first-served (one's collective runs while the other
//! computes); both outputs are handed on when both chains are done. A
//! chunk's layers are whole transformer layers ([`crate::engine::chunks`]); its
//! virtual stage follows the schedule's [`schedule::ChunkPlacement`].
//! After a collective its layer's
//! `update_ns` passes before dependents start (an edge lag). A prefetch
//! collective ([`CommSpec::prefetch`], FSDP's gathers) in the forward or
//! input-gradient column is not in the chain: it is issued with the
//! dependencies of the first compute after the previous prefetch (when
//! the previous unit could start) and the next compute waits for it. A forward step's
//! first task also waits for the activation from the previous virtual stage
//! (a transfer holding the sender's send stream and the receiver's receive
//! stream, costed as point-to-point), a backward for the gradient from the
//! next one. Zero durations and collectives without data make no task.
//!
//! A per-rank job's point-to-point transfers ([`JobSpec::transfers`],
//! Chakra's matched sends and receives) sit at layer boundaries of its
//! programs' first forward step: at a send point the transfer task is
//! made (after the chain so far, its pending waits and the transfers the
//! send waits for; the chain goes on without waiting for it), at a wait
//! point the chain's next task waits for the transfer's end. A rank at a
//! wait point whose transfer its sender has not made yet stops there and
//! resumes when it exists (sends come before waits at one boundary); ranks
//! that wait on each other for ever are a [`SimError::Stalled`] naming the
//! transfers.
//!
//! After its last step a rank runs its once-per-iteration rows: compute and
//! TP/EP collectives in the chain, DP/DP_EP collectives asynchronously (when
//! `overlap_grad_sync` is on they are issued as the rank's last step starts:
//! its last backward, or its last weight step when the backward is split).
//! The closing rows wait for all asynchronous collectives of the rank.
//!
//! Tasks are created in a topological order by advancing every rank's step
//! list round-robin as far as its inputs exist; an explicit order that can
//! never run is reported as [`SimError::Stalled`].

use crate::engine::chunks::BlockLayers;
use crate::engine::event::{
    Dep, Engine, FlowDef, GangId, NodeId, TaskDef, TaskGraph, TaskId, NONE,
};
use crate::engine::injection;
use crate::engine::network::{
    CollectiveCost, CollectiveRequest, Coords, GroupPlacement, Placement,
};
use crate::engine::scale;
use crate::engine::schedule::{self, Direction, PipeStep, ScheduleKind, StagePlan};
use crate::engine::spec::{
    estimated_stage_tasks, CollectiveKind, CommSpec, GroupKind, JobMode, JobSpec, LayerSpec, Phase,
    PhaseOps,
};
use crate::engine::summary::{self, ActivationSeries, Summary};
use crate::engine::task::{Meta, ProgramInfo, StepRecord, TaskMeta};
use crate::engine::SimError;
use crate::limits::MAX_TASKS;
use crate::timeline::{
    CollOp, Flow, Lane, LaneGroup, Span, SpanKind, SpanRef, Stream, Timeline, TimelineBuilder,
};
use crate::{engine::config::SimConfig, limits::MAX_MICRO_BATCHES};
use std::collections::BTreeMap;
use std::ops::Range;

/// Prefetch points remembered per program (the deepest prefetch a
/// collective may ask for, [`CommSpec::prefetch`]).
const MAX_PREFETCH_ANCHORS: usize = u8::MAX as usize;

/// Engine resources per program: one per [`Stream`] (the host's included).
const STREAMS: u32 = Stream::ALL.len() as u32;

/// A built model: the graph for the engine and the meaning of its tasks.
#[derive(Debug, Clone)]
pub struct Model {
    pub graph: TaskGraph,
    pub meta: Meta,
}

struct ProgState {
    order: Vec<PipeStep>,
    /// Per step: it and the next run overlapped (empty: none do).
    overlapped: Vec<bool>,
    /// Per (micro-batch, chunk), index mb·v + chunk: the order lists its
    /// weight-gradient step, so its backward runs only the input gradients.
    weighted: Vec<bool>,
    pos: usize,
    frontier: Vec<Dep>,
    outputs: Vec<Option<Vec<Dep>>>,
    async_tasks: Vec<Dep>,
    last_bwd_start: Vec<Dep>,
    coll_seq: [u32; GroupKind::EVERY.len()],
    closed: bool,
    /// The rank's last host launch (jobs with a host model).
    host_last: Option<TaskId>,
    /// The rank's last compute task: what a sync point waits for.
    last_compute: Option<TaskId>,
    /// The launched compute tasks the device may not have run yet
    /// ([`SimConfig::launch_queue_depth`]).
    queue: LaunchQueue,
    /// The dependencies of the first compute after each of the latest
    /// prefetch points, oldest first ([`CommSpec::prefetch`] of them):
    /// where a prefetch that many points ahead is issued.
    prefetch_anchors: std::collections::VecDeque<Vec<Dep>>,
    /// A prefetch was issued: the next compute sets the anchor.
    prefetch_armed: bool,
    /// A step stopped at a point-to-point wait whose transfer its sender has
    /// not issued yet ([`JobSpec::transfers`]); it resumes there.
    resume: Option<Resume>,
    /// Overlapped pairs run as independent chains
    /// ([`schedule::StagePlan::independent`]).
    independent: bool,
    /// Compute tasks issued so far: the jitter's key
    /// ([`crate::engine::faults::Jitter::factor_of`]).
    compute_seq: u64,
    /// The first of an independent pair has run: where the second starts.
    pair: Option<PairStart>,
}

/// Where the second step of an independent pair starts: the frontier and
/// the host's last launch and compute before the first.
struct PairStart {
    anchor: Vec<Dep>,
    host_last: Option<TaskId>,
    last_compute: Option<TaskId>,
    queue: LaunchQueue,
}

/// A rank's launch queue as the builder sees it: its launched compute
/// tasks in launch order with their entries
/// ([`crate::engine::spec::PhaseOps::launches`]). The device runs a rank's
/// chain in order, so once a task ends the ones before it have ended: a
/// launch that needs room waits for the end of the last task it pops.
/// Room is counted per task, not per kernel: a launch waits until all of
/// its entries fit (a task of more entries than the queue holds waits for
/// an empty queue).
#[derive(Debug, Clone, Default)]
struct LaunchQueue {
    pending: std::collections::VecDeque<(TaskId, u32)>,
    entries: u64,
}

impl LaunchQueue {
    /// Make room for `entries` in a queue of `depth`: the task whose end
    /// frees it (`None`: room already).
    fn room(&mut self, entries: u32, depth: u32) -> Option<TaskId> {
        let need = u64::from(entries.min(depth));
        let mut wait = None;
        while self.entries + need > u64::from(depth) {
            let Some((t, e)) = self.pending.pop_front() else {
                break;
            };
            self.entries -= u64::from(e);
            wait = Some(t);
        }
        wait
    }

    fn push(&mut self, task: TaskId, entries: u32, depth: u32) {
        let e = entries.min(depth);
        self.pending.push_back((task, e));
        self.entries += u64::from(e);
    }

    fn clear(&mut self) {
        self.pending.clear();
        self.entries = 0;
    }

    /// After two chains launched from one anchor: what either still has
    /// pending, in launch order, once each (each chain waited for room in
    /// its own queue).
    fn merged(a: &LaunchQueue, b: &LaunchQueue) -> LaunchQueue {
        let mut out = LaunchQueue::default();
        let (mut i, mut j) = (a.pending.iter().peekable(), b.pending.iter().peekable());
        loop {
            let next = match (i.peek(), j.peek()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    j.next();
                    i.next()
                }
                (Some(x), Some(y)) => {
                    if x.0 < y.0 {
                        i.next()
                    } else {
                        j.next()
                    }
                }
                (Some(_), None) => i.next(),
                (None, Some(_)) => j.next(),
                (None, None) => break,
            };
            if let Some(&(t, e)) = next {
                out.pending.push_back((t, e));
                out.entries += u64::from(e);
            }
        }
        out
    }
}

/// Where a suspended step goes on.
struct Resume {
    /// Next layer position in the step's layer order.
    layer: usize,
    /// Next transfer point of the program.
    point: usize,
    /// The step's input and the waits gathered, not yet consumed by a task.
    pending: Vec<Dep>,
    /// The step's first task.
    first_task: TaskId,
}

/// What a program does at a layer boundary of its first forward step
/// ([`JobSpec::transfers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    /// Issue transfer `t` (after its `after` transfers end).
    Send(u32),
    /// The chain waits for transfer `t` to end.
    Wait(u32),
}

/// One point-to-point transfer to make ([`Builder::p2p`]).
struct P2p<'d> {
    from: u32,
    to: u32,
    size_bytes: u64,
    phase: Phase,
    label: u32,
    micro_batch: u32,
    chunk: u8,
    deps: &'d [Dep],
}

struct Builder<'a> {
    job: &'a JobSpec,
    config: &'a SimConfig,
    cost: &'a dyn CollectiveCost,
    placement: Placement,
    m: u32,
    v: u32,
    p: u32,
    activation: u64,
    /// Per program, per block: the rows of each chunk ([`BlockLayers`]).
    chunk_rows: Vec<Vec<Vec<Range<usize>>>>,
    graph: TaskGraph,
    tasks: Vec<TaskMeta>,
    steps: Vec<StepRecord>,
    labels: Vec<String>,
    label_ids: BTreeMap<String, u32>,
    ranks: Vec<u32>,
    node_of_prog: Vec<NodeId>,
    weight_of_prog: Vec<u32>,
    by_rank: BTreeMap<u32, u32>,
    first_of_stage: Vec<u32>,
    group_cache: BTreeMap<(u32, GroupKind), (GroupPlacement, u32)>,
    cost_cache: BTreeMap<CollectiveRequest, (u64, u64)>,
    gangs: BTreeMap<(GroupKind, u32, u32), GangId>,
    scratch: Vec<Dep>,
    /// Some op had a host launch (the timeline gets host lanes).
    has_host: bool,
    /// Per transfer of [`JobSpec::transfers`]: its task once issued.
    p2p_task: Vec<TaskId>,
    /// Per program: its transfer points (boundary, point), by boundary,
    /// sends before waits at one boundary.
    points: Vec<Vec<(u32, Point)>>,
    /// What-if faults against this job (`None`: no fault).
    faults: Option<injection::Resolved>,
    /// Per program: its slow windows in the graph, or NONE (empty: none).
    window_ids: Vec<u32>,
    /// Per program, per block, per layer: its label once looked up
    /// ([`NONE`] before), so a step's layers skip the by-name map.
    layer_labels: Vec<Vec<Vec<u32>>>,
}

fn merge_deps(out: &mut Vec<Dep>, a: &[Dep], b: &[Dep]) {
    out.clear();
    for d in a.iter().chain(b) {
        match out.iter_mut().find(|x| x.task == d.task) {
            Some(x) => x.lag_ns = x.lag_ns.max(d.lag_ns),
            None => out.push(*d),
        }
    }
}

impl Builder<'_> {
    fn label(&mut self, text: &str) -> u32 {
        if let Some(id) = self.label_ids.get(text) {
            return *id;
        }
        let id = self.labels.len() as u32;
        self.labels.push(text.to_string());
        self.label_ids.insert(text.to_string(), id);
        id
    }

    /// The label of layer `li` of block `bi` of `prog` ([`Self::label`] of
    /// its name, looked up once).
    fn layer_label(&mut self, prog: u32, bi: usize, li: usize) -> u32 {
        let cached = self.layer_labels[prog as usize][bi][li];
        if cached != NONE {
            return cached;
        }
        let job: &JobSpec = self.job;
        let id = self.label(&job.programs[prog as usize].blocks[bi].layers[li].name);
        self.layer_labels[prog as usize][bi][li] = id;
        id
    }

    /// Compute of a layer phase after the settings' scale and backward factor.
    fn compute_ns(&self, layer: &LayerSpec, phase: Phase) -> u64 {
        let mut ns = layer.phase(phase).compute_ns;
        if let Some(f) = self.config.backward_factor {
            if phase != Phase::Forward
                && layer.input_grad.compute_ns == 0
                && layer.weight_grad.compute_ns == 0
            {
                ns = scale(layer.forward.compute_ns, f / 2.0);
            }
        }
        scale(ns, self.config.compute_scale)
    }

    /// One micro-batch's forward, input-gradient and weight-gradient time
    /// on one of `v` chunks, as the zero-bubble authors' scheduler takes
    /// them (`avg_then_mid` in their `runtime.py`): per stage the mean over
    /// its ranks of the first micro-batch's block divided by `v`, then the
    /// median stage (the upper one of two), at least 1 ns; the hop is left
    /// to the engine (0).
    fn step_costs(&self, v: u32) -> schedule::StepCosts {
        let p = self.job.parallel.pp as usize;
        let mut sums = vec![[0u128; 3]; p];
        let mut n = vec![0u128; p];
        for prog in &self.job.programs {
            let (Some(block), Some(s)) = (prog.block_of(0), sums.get_mut(prog.stage as usize))
            else {
                continue;
            };
            for layer in &block.layers {
                for (i, phase) in [Phase::Forward, Phase::InputGrad, Phase::WeightGrad]
                    .into_iter()
                    .enumerate()
                {
                    s[i] += u128::from(self.compute_ns(layer, phase));
                }
            }
            n[prog.stage as usize] += 1;
        }
        let mid = |i: usize| -> u64 {
            let mut per: Vec<u128> = sums
                .iter()
                .zip(&n)
                .filter(|(_, k)| **k > 0)
                .map(|(s, k)| s[i] / (k * u128::from(v.max(1))))
                .collect();
            per.sort_unstable();
            let x = per.get(per.len() / 2).copied().unwrap_or(1);
            u64::try_from(x).unwrap_or(u64::MAX).max(1)
        };
        schedule::StepCosts {
            forward_ns: mid(0),
            input_grad_ns: mid(1),
            weight_grad_ns: mid(2),
            hop_ns: 0,
        }
    }

    fn group_placement(&mut self, prog: u32, group: GroupKind) -> (GroupPlacement, u32) {
        if let Some(x) = self.group_cache.get(&(prog, group)) {
            return *x;
        }
        let rank = self.ranks[prog as usize];
        let members = self.placement.group_members(rank, group);
        let gp = self.placement.placement_of(&members);
        let id = members.first().copied().unwrap_or(rank);
        self.group_cache.insert((prog, group), (gp, id));
        (gp, id)
    }

    fn cost(&mut self, req: CollectiveRequest) -> Result<(u64, u64), SimError> {
        if let Some(c) = self.cost_cache.get(&req) {
            return Ok(*c);
        }
        let total = self.cost.cost_ns(&req).map_err(|e| SimError::Cost {
            model: self.cost.name().to_string(),
            message: e.message,
        })?;
        let nic = self.cost.nic_part_ns(&req, total).min(total);
        self.cost_cache.insert(req, (total, nic));
        Ok((total, nic))
    }

    fn task(&mut self, def: TaskDef, deps: &[Dep], meta: TaskMeta) -> Result<TaskId, SimError> {
        let id = self.graph.add_task(def, deps)?;
        self.tasks.push(meta);
        Ok(id)
    }

    fn res(prog: u32, stream: Stream) -> u32 {
        prog * STREAMS + stream.index()
    }

    /// A chain compute task (skipped when zero), after its host launch
    /// when `ops` has one ([`PhaseOps::launch_ns`], [`PhaseOps::host_sync`]):
    /// the launch runs on the rank's host lane after the previous launch
    /// (and, at a sync point, after the rank's last compute task: the
    /// device-to-host copy is queued on the compute stream, so the host
    /// waits for the compute issued before it, not for collectives it
    /// launched in between), and the compute waits for its launch.
    fn compute(
        &mut self,
        st: &mut ProgState,
        pending: &mut Vec<Dep>,
        prog: u32,
        ns: u64,
        ops: &PhaseOps,
        meta: TaskMeta,
    ) -> Result<(), SimError> {
        if ns == 0 {
            return Ok(());
        }
        let ns = match &self.faults {
            Some(f) => {
                st.compute_seq += 1;
                f.compute_ns(prog, self.ranks[prog as usize], st.compute_seq, ns)
            }
            None => ns,
        };
        let mut deps = std::mem::take(&mut self.scratch);
        merge_deps(&mut deps, &st.frontier, pending);
        if st.prefetch_armed {
            // This unit's first compute: later prefetches go when it may
            // start.
            let mut a = if st.prefetch_anchors.len() >= MAX_PREFETCH_ANCHORS {
                st.prefetch_anchors.pop_front().unwrap_or_default()
            } else {
                Vec::new()
            };
            a.clear();
            a.extend_from_slice(&deps);
            st.prefetch_anchors.push_back(a);
            st.prefetch_armed = false;
        }
        let depth = self.config.launch_queue_depth;
        let hosted = ops.launch_ns > 0 || ops.host_sync;
        if hosted {
            // After the previous launch, at a sync point after the last
            // compute (the queue drains), and with a bounded launch queue
            // once the launch fits in it: at most three dependencies, no
            // allocation per task.
            let sync_on = st.last_compute.filter(|_| ops.host_sync);
            if ops.host_sync {
                st.queue.clear();
            }
            let room = depth.and_then(|d| st.queue.room(ops.launches.max(1), d));
            let mut host_deps = [Dep::on(0); 3];
            let mut n = 0;
            for t in [st.host_last, sync_on, room].into_iter().flatten() {
                host_deps[n] = Dep::on(t);
                n += 1;
            }
            let kind = if ops.host_sync {
                SpanKind::HostSync
            } else {
                SpanKind::HostLaunch
            };
            let host = self.task(
                TaskDef::on(Self::res(prog, Stream::Host), ops.launch_ns),
                &host_deps[..n],
                TaskMeta {
                    kind,
                    stream: Stream::Host,
                    ..meta
                },
            )?;
            st.host_last = Some(host);
            self.has_host = true;
            deps.push(Dep::on(host));
        }
        let id = self.task(
            TaskDef::on(Self::res(prog, Stream::Compute), ns),
            &deps,
            meta,
        )?;
        if let Some(&w) = self.window_ids.get(prog as usize) {
            if w != NONE {
                self.graph.set_windows(id, w);
            }
        }
        self.scratch = deps;
        if let (true, Some(d)) = (hosted, depth) {
            st.queue.push(id, ops.launches.max(1), d);
        }
        pending.clear();
        st.frontier.clear();
        st.frontier.push(Dep::on(id));
        st.last_compute = Some(id);
        Ok(())
    }

    /// A collective; `blocking` puts it in the chain. `issue_after`
    /// overrides the dependencies of an asynchronous one.
    #[allow(clippy::too_many_arguments)]
    fn collective(
        &mut self,
        st: &mut ProgState,
        pending: &mut Vec<Dep>,
        prog: u32,
        comm: CommSpec,
        phase: Phase,
        blocking: bool,
        issue_after: Option<&[Dep]>,
        update_ns: u64,
        meta: TaskMeta,
    ) -> Result<(), SimError> {
        let group_size = self.job.parallel.group_size(comm.group);
        if group_size <= 1 || comm.size_bytes == 0 {
            return Ok(());
        }
        let (placement, group_id) = self.group_placement(prog, comm.group);
        let req = CollectiveRequest {
            collective: comm.collective,
            group: comm.group,
            group_size,
            size_bytes: comm.size_bytes,
            phase,
            placement,
        };
        let (total, nic) = self.cost(req)?;
        if total == 0 {
            return Ok(());
        }
        let (total, nic) = match &self.faults {
            Some(f) => f.collective(prog, comm.group, total, nic),
            None => (total, nic),
        };
        let stream = if comm.group.is_data_parallel() {
            Stream::GradSync
        } else {
            Stream::Collective
        };
        let gang = if self.job.mode == JobMode::PerRank && self.config.sync_collectives {
            let gi = comm.group.index();
            let seq = st.coll_seq[gi];
            st.coll_seq[gi] += 1;
            let key = (comm.group, group_id, seq);
            Some(match self.gangs.get(&key) {
                Some(g) => *g,
                None => {
                    let g = self.graph.add_gang();
                    self.gangs.insert(key, g);
                    g
                }
            })
        } else {
            None
        };
        let flow = (nic > 0).then(|| FlowDef {
            nic_ns: nic,
            nodes: [
                (
                    self.node_of_prog[prog as usize],
                    self.weight_of_prog[prog as usize],
                ),
                (NONE, 0),
            ],
        });
        let def = TaskDef {
            resources: [Self::res(prog, stream), NONE],
            duration_ns: total,
            flow,
            gang,
        };
        let mut deps = std::mem::take(&mut self.scratch);
        match issue_after {
            Some(d) => merge_deps(&mut deps, d, &[]),
            None => merge_deps(&mut deps, &st.frontier, pending),
        }
        let meta = TaskMeta {
            bytes: comm.size_bytes,
            stream,
            kind: match comm.group {
                GroupKind::Tp => SpanKind::CollTp,
                GroupKind::Ep => SpanKind::CollEp,
                GroupKind::Dp | GroupKind::DpShard | GroupKind::DpReplicate => SpanKind::CollDp,
                GroupKind::DpEp => SpanKind::CollDpEp,
                GroupKind::Pp => SpanKind::CollOther,
                GroupKind::Cp => SpanKind::CollCp,
            },
            coll: match comm.collective {
                CollectiveKind::AllReduce => CollOp::AllReduce,
                CollectiveKind::AllGather => CollOp::AllGather,
                CollectiveKind::ReduceScatter => CollOp::ReduceScatter,
                CollectiveKind::AllToAll => CollOp::AllToAll,
                CollectiveKind::SendRecv => CollOp::SendRecv,
            },
            ..meta
        };
        let id = self.task(def, &deps, meta)?;
        self.scratch = deps;
        let dep = Dep {
            task: id,
            lag_ns: update_ns,
        };
        if blocking {
            pending.clear();
            st.frontier.clear();
            st.frontier.push(dep);
        } else {
            st.async_tasks.push(dep);
        }
        Ok(())
    }

    /// Run `rows` (once-per-iteration) on `prog`. `grad_sync`: DP/DP_EP
    /// collectives are asynchronous (issued after `issue_after` if given).
    fn rows(
        &mut self,
        st: &mut ProgState,
        prog: u32,
        rows: &[LayerSpec],
        grad_sync: bool,
        pending: &mut Vec<Dep>,
        issue_after: Option<&[Dep]>,
    ) -> Result<(), SimError> {
        for (ri, row) in rows.iter().enumerate() {
            let label = self.label(&row.name);
            // A once-per-iteration row (the optimizer step, gradient-sync
            // rows) is no micro-batch's forward or backward: its compute
            // is drawn and counted as other compute, whichever column of
            // the workload holds its time.
            for phase in [Phase::Forward, Phase::InputGrad, Phase::WeightGrad] {
                let kind = SpanKind::Compute;
                let meta = TaskMeta {
                    program: prog,
                    peer: NONE,
                    label,
                    layer: ri as u32,
                    micro_batch: Span::NONE,
                    bytes: 0,
                    kind,
                    stream: Stream::Compute,
                    coll: CollOp::None,
                    chunk: 0,
                };
                let ns = self.compute_ns(row, phase);
                self.compute(st, pending, prog, ns, row.phase(phase), meta)?;
                if let Some(comm) = row.phase(phase).comm {
                    let is_dp = comm.group.is_data_parallel();
                    let (blocking, after) = if grad_sync {
                        (!is_dp, if is_dp { issue_after } else { None })
                    } else {
                        (phase != Phase::WeightGrad, None)
                    };
                    self.collective(
                        st,
                        pending,
                        prog,
                        comm,
                        phase,
                        blocking,
                        after,
                        row.update_ns,
                        meta,
                    )?;
                }
            }
        }
        Ok(())
    }

    fn out_index(&self, dir: Direction, mb: u32, chunk: u32) -> usize {
        let d = match dir {
            Direction::Forward => 0,
            Direction::Backward => 1,
            Direction::Weight => 2,
        };
        (d * self.m as usize + mb as usize) * self.v as usize + chunk as usize
    }

    /// The program on `stage` that exchanges with `prog`: same TP/DP
    /// coordinates if simulated, else the stage's first simulated rank.
    fn peer(&self, prog: u32, stage: u32) -> u32 {
        if self.job.mode == JobMode::Spmd {
            return self.first_of_stage[stage as usize];
        }
        let c = self.placement.coords_of(self.ranks[prog as usize]);
        let r = self.placement.rank_of(Coords { pp: stage, ..c });
        self.by_rank
            .get(&r)
            .copied()
            .unwrap_or(self.first_of_stage[stage as usize])
    }

    /// The program and output index a step needs from a neighbour, if any.
    fn upstream(&self, prog: u32, step: PipeStep) -> Option<(u32, usize)> {
        if !self.job.pipelined {
            return None;
        }
        let s = self.job.programs[prog as usize].stage;
        let placement = self.config.schedule.placement();
        let k = placement.virtual_stage(self.p, s, step.chunk);
        let last = self.v * self.p - 1;
        match step.direction {
            Direction::Forward if k > 0 => {
                let (st, ch) = placement.locate(self.p, k - 1);
                Some((
                    self.peer(prog, st),
                    self.out_index(Direction::Forward, step.micro_batch, ch),
                ))
            }
            Direction::Backward if k < last => {
                let (st, ch) = placement.locate(self.p, k + 1);
                Some((
                    self.peer(prog, st),
                    self.out_index(Direction::Backward, step.micro_batch, ch),
                ))
            }
            _ => None,
        }
    }

    /// Check that `step` (of `prog`'s order) is in range and new.
    fn check_step(&self, st: &ProgState, pi: usize, step: PipeStep) -> Result<(), SimError> {
        if step.micro_batch >= self.m || step.chunk >= self.v {
            return Err(SimError::InvalidJob(format!(
                "rank {} has step {:?} outside {} micro-batches x {} chunks",
                self.ranks[pi], step, self.m, self.v
            )));
        }
        let own = self.out_index(step.direction, step.micro_batch, step.chunk);
        if st.outputs[own].is_some() {
            return Err(SimError::InvalidJob(format!(
                "rank {} runs step {:?} twice",
                self.ranks[pi], step
            )));
        }
        Ok(())
    }

    /// What `step` waits for from a neighbour: `None` when not ready yet
    /// (its own earlier step or the neighbour's output is missing), else
    /// the neighbour (if any) and that output.
    fn inputs(
        &self,
        states: &[ProgState],
        prog: u32,
        step: PipeStep,
    ) -> Option<Option<(u32, Vec<Dep>)>> {
        let st = &states[prog as usize];
        if let Some(before) = match step.direction {
            Direction::Forward => None,
            Direction::Backward => Some(Direction::Forward),
            Direction::Weight => Some(Direction::Backward),
        } {
            let f = self.out_index(before, step.micro_batch, step.chunk);
            st.outputs[f].as_ref()?;
        }
        match self.upstream(prog, step) {
            None => Some(None),
            Some((up, idx)) => states
                .get(up as usize)
                .and_then(|s| s.outputs.get(idx))
                .and_then(|o| o.clone())
                .map(|out| Some((up, out))),
        }
    }

    /// The dependencies of `step` on its input: the transfer from another
    /// rank, or the neighbour's output directly.
    fn receive(
        &mut self,
        prog: u32,
        step: PipeStep,
        input: Option<(u32, Vec<Dep>)>,
    ) -> Result<Vec<Dep>, SimError> {
        Ok(match input {
            None => Vec::new(),
            Some((up, up_out)) if up != prog && self.activation > 0 => {
                vec![Dep::on(self.transfer(up, prog, step, &up_out)?)]
            }
            Some((_, up_out)) => up_out,
        })
    }

    /// Advance `prog` by its next step, or by its next two when the order
    /// overlaps them ([`schedule::StagePlan::overlapped`]: both start when
    /// both inputs are there, run as two chains sharing the rank's streams,
    /// and hand on their outputs when both are done). False when not ready.
    fn step(&mut self, states: &mut [ProgState], prog: u32) -> Result<bool, SimError> {
        let pi = prog as usize;
        let pos = states[pi].pos;
        let Some(&step) = states[pi].order.get(pos) else {
            return Ok(false);
        };
        if let Some(r) = &states[pi].resume {
            let at = (r.layer, r.point);
            let done = self.run_step(&mut states[pi], prog, step, Vec::new())?;
            return Ok(done
                || states[pi]
                    .resume
                    .as_ref()
                    .is_some_and(|r| (r.layer, r.point) != at));
        }
        self.check_step(&states[pi], pi, step)?;
        let second = match states[pi].overlapped.get(pos) {
            Some(true) => states[pi].order.get(pos + 1).copied(),
            _ => None,
        };
        let Some(input) = self.inputs(states, prog, step) else {
            return Ok(false);
        };
        if states[pi].independent && (second.is_some() || states[pi].pair.is_some()) {
            let pending = self.receive(prog, step, input)?;
            return self.independent_pair_step(&mut states[pi], prog, step, second, pending);
        }
        let Some(second) = second else {
            let pending = self.receive(prog, step, input)?;
            self.run_step(&mut states[pi], prog, step, pending)?;
            // Done, or stopped at a transfer point after having started.
            return Ok(true);
        };
        self.check_step(&states[pi], pi, second)?;
        let Some(input2) = self.inputs(states, prog, second) else {
            return Ok(false);
        };
        let p1 = self.receive(prog, step, input)?;
        let p2 = self.receive(prog, second, input2)?;
        let st = &mut states[pi];
        let mut anchor = Vec::new();
        merge_deps(&mut anchor, &st.frontier, &p1);
        let a = anchor.clone();
        merge_deps(&mut anchor, &a, &p2);
        st.frontier = anchor.clone();
        let overlapped_done = |done: bool| {
            if done {
                Ok(())
            } else {
                Err(SimError::InvalidJob(
                    "point-to-point transfers in overlapped steps are not supported".to_string(),
                ))
            }
        };
        // Each chain launches from the host in its own order: the second's
        // launches do not wait for the first's (one host thread still runs
        // them one at a time, first come first served), and each chain's
        // sync points wait for its own compute.
        let host_at_anchor = (st.host_last, st.last_compute);
        let queue_at_anchor = st.queue.clone();
        overlapped_done(self.run_step(st, prog, step, Vec::new())?)?;
        let first_end = std::mem::replace(&mut st.frontier, anchor);
        let first_host = (st.host_last, st.last_compute);
        let first_queue = std::mem::replace(&mut st.queue, queue_at_anchor);
        (st.host_last, st.last_compute) = host_at_anchor;
        overlapped_done(self.run_step(st, prog, second, Vec::new())?)?;
        st.host_last = st.host_last.or(first_host.0);
        st.last_compute = st.last_compute.or(first_host.1);
        st.queue = LaunchQueue::merged(&first_queue, &st.queue);
        let f = std::mem::take(&mut st.frontier);
        merge_deps(&mut st.frontier, &f, &first_end);
        for s in [step, second] {
            let own = self.out_index(s.direction, s.micro_batch, s.chunk);
            st.outputs[own] = Some(st.frontier.clone());
        }
        Ok(true)
    }

    /// One step of an independent pair ([`schedule::StagePlan::independent`]):
    /// the first (`second` is its partner) runs from the frontier and hands
    /// its output on when done; the partner later starts from the same
    /// anchor, as soon as its own input is there, and the frontier after
    /// both is the end of both chains. Each chain launches from the host in
    /// its own order (the host thread still runs one launch at a time).
    fn independent_pair_step(
        &mut self,
        st: &mut ProgState,
        prog: u32,
        step: PipeStep,
        second: Option<PipeStep>,
        pending: Vec<Dep>,
    ) -> Result<bool, SimError> {
        let whole = |done: bool| {
            if done {
                Ok(true)
            } else {
                Err(SimError::InvalidJob(
                    "point-to-point transfers in overlapped steps are not supported".to_string(),
                ))
            }
        };
        if let Some(start) = st.pair.take() {
            let first_end = std::mem::replace(&mut st.frontier, start.anchor);
            let first_host = (st.host_last, st.last_compute);
            let first_queue = std::mem::replace(&mut st.queue, start.queue);
            (st.host_last, st.last_compute) = (start.host_last, start.last_compute);
            let done = self.run_step(st, prog, step, pending)?;
            st.host_last = st.host_last.or(first_host.0);
            st.last_compute = st.last_compute.or(first_host.1);
            st.queue = LaunchQueue::merged(&first_queue, &st.queue);
            let f = std::mem::take(&mut st.frontier);
            merge_deps(&mut st.frontier, &f, &first_end);
            return whole(done);
        }
        debug_assert!(second.is_some());
        st.pair = Some(PairStart {
            anchor: st.frontier.clone(),
            host_last: st.host_last,
            last_compute: st.last_compute,
            queue: st.queue.clone(),
        });
        let done = self.run_step(st, prog, step, pending)?;
        whole(done)
    }

    /// Make the tasks of `step` on `prog`'s chain after its frontier and
    /// `pending` (its input), record it and advance the order: true. False
    /// when it stopped at a transfer point not ready yet (it resumes there
    /// on the next call, `pending` then unused).
    fn run_step(
        &mut self,
        st: &mut ProgState,
        prog: u32,
        step: PipeStep,
        pending: Vec<Dep>,
    ) -> Result<bool, SimError> {
        let pi = prog as usize;
        let own = self.out_index(step.direction, step.micro_batch, step.chunk);
        let (start_layer, mut next_point, first_task, mut pending) = match st.resume.take() {
            Some(r) => (r.layer, r.point, r.first_task, r.pending),
            None => {
                if st.pos + 1 == st.order.len() {
                    let mut d = Vec::new();
                    merge_deps(&mut d, &st.frontier, &pending);
                    st.last_bwd_start = d;
                }
                (0, 0, self.tasks.len() as TaskId, pending)
            }
        };
        // Transfer points run in the first forward step only.
        let with_points = step == PipeStep::f(0, 0) && !self.points[pi].is_empty();
        let job: &JobSpec = self.job;
        let program = &job.programs[pi];
        let block_index = program.block_index_of(step.micro_batch);
        let (Some(block), Some(bi), Some(rows)) = (
            program.block_of(step.micro_batch),
            block_index,
            block_index
                .and_then(|bi| self.chunk_rows[pi].get(bi))
                .and_then(|chunks| chunks.get(step.chunk as usize)),
        ) else {
            return Err(SimError::InvalidJob(format!(
                "rank {} has no block",
                self.ranks[pi]
            )));
        };
        let layers: Vec<usize> = match step.direction {
            Direction::Forward => rows.clone().collect(),
            Direction::Backward | Direction::Weight => rows.clone().rev().collect(),
        };
        let split = st.weighted[step.micro_batch as usize * self.v as usize + step.chunk as usize];
        let n_layers = layers.len();
        for (k, li) in layers.into_iter().enumerate().skip(start_layer) {
            if with_points && !self.points_at(st, prog, k, &mut next_point, &mut pending)? {
                st.resume = Some(Resume {
                    layer: k,
                    point: next_point,
                    pending,
                    first_task,
                });
                return Ok(false);
            }
            let layer = &block.layers[li];
            let label = self.layer_label(prog, bi, li);
            let meta = TaskMeta {
                program: prog,
                peer: NONE,
                label,
                layer: li as u32,
                micro_batch: step.micro_batch,
                bytes: 0,
                kind: SpanKind::Forward,
                stream: Stream::Compute,
                coll: CollOp::None,
                chunk: step.chunk.min(255) as u8,
            };
            let phases: &[(Phase, SpanKind, bool)] = match step.direction {
                Direction::Forward => &[(Phase::Forward, SpanKind::Forward, true)],
                Direction::Backward if split => &[(Phase::InputGrad, SpanKind::InputGrad, true)],
                Direction::Backward => &[
                    (Phase::InputGrad, SpanKind::InputGrad, true),
                    (Phase::WeightGrad, SpanKind::WeightGrad, false),
                ],
                Direction::Weight => &[(Phase::WeightGrad, SpanKind::WeightGrad, false)],
            };
            for &(phase, kind, blocking) in phases {
                let meta = TaskMeta { kind, ..meta };
                let ns = self.compute_ns(layer, phase);
                let ops = layer.phase(phase);
                // A collective alongside the compute (`comm_overlap`): both
                // after what came before, the chain goes on after both.
                let alongside =
                    ops.comm.is_some_and(|c| c.prefetch == 0) && ops.comm_overlap && blocking;
                let before = alongside.then(|| {
                    let mut d = Vec::new();
                    merge_deps(&mut d, &st.frontier, &pending);
                    d
                });
                self.compute(st, &mut pending, prog, ns, ops, meta)?;
                if let Some(comm) = ops.comm {
                    // FSDP prefetch: issued on the side when the compute
                    // `prefetch` units back could start (the oldest known
                    // when fewer; FIFO on its stream), awaited by the next
                    // compute.
                    let prefetch = comm.prefetch > 0 && blocking;
                    let slot = prefetch.then(|| {
                        let n = st.prefetch_anchors.len();
                        let i = n.saturating_sub(usize::from(comm.prefetch));
                        (n > 0).then(|| (i, std::mem::take(&mut st.prefetch_anchors[i])))
                    });
                    let issue_after = match &slot {
                        Some(Some((_, anchor))) => Some(anchor.as_slice()),
                        Some(None) => Some(&[][..]),
                        None => before.as_deref(),
                    };
                    let computed = if alongside {
                        std::mem::take(&mut st.frontier)
                    } else {
                        Vec::new()
                    };
                    let issued = st.async_tasks.len();
                    self.collective(
                        st,
                        &mut pending,
                        prog,
                        comm,
                        phase,
                        blocking && !prefetch,
                        issue_after,
                        layer.update_ns,
                        meta,
                    )?;
                    st.frontier.extend(computed);
                    if let Some(slot) = slot {
                        if let Some((i, anchor)) = slot {
                            st.prefetch_anchors[i] = anchor;
                        }
                        if st.async_tasks.len() > issued {
                            pending.extend(st.async_tasks.pop());
                        }
                        st.prefetch_armed = true;
                    }
                }
            }
        }
        if with_points && !self.points_at(st, prog, n_layers, &mut next_point, &mut pending)? {
            st.resume = Some(Resume {
                layer: n_layers,
                point: next_point,
                pending,
                first_task,
            });
            return Ok(false);
        }
        if !pending.is_empty() {
            let f = std::mem::take(&mut st.frontier);
            merge_deps(&mut st.frontier, &f, &pending);
        }
        let made = self.tasks.len() as TaskId;
        self.steps.push(StepRecord {
            program: prog,
            step,
            // The step's first device task: its host launches may run far
            // ahead of the device and would start the step too early.
            first: (first_task..made)
                .find(|&t| self.tasks[t as usize].stream != Stream::Host)
                .unwrap_or(NONE),
            last: st
                .frontier
                .iter()
                .map(|d| d.task)
                .filter(|&t| t >= first_task)
                .max()
                .unwrap_or(NONE),
            releases: match step.direction {
                Direction::Forward => false,
                Direction::Backward => !split,
                Direction::Weight => true,
            },
        });
        st.outputs[own] = Some(st.frontier.clone());
        st.pos += 1;
        Ok(true)
    }

    /// Run `prog`'s transfer points at layer boundary `k` from
    /// `*next`: issue its sends (after the chain so far, its pending waits
    /// included, and the transfers each waits for), add the transfers its
    /// chain waits for to `pending`. False when one is not ready (a transfer its sender has
    /// not issued yet); `*next` is then that point.
    fn points_at(
        &mut self,
        st: &ProgState,
        prog: u32,
        k: usize,
        next: &mut usize,
        pending: &mut Vec<Dep>,
    ) -> Result<bool, SimError> {
        let pi = prog as usize;
        while let Some(&(at, point)) = self.points[pi].get(*next) {
            if at as usize != k {
                break;
            }
            match point {
                Point::Wait(t) => {
                    let task = self.p2p_task[t as usize];
                    if task == NONE {
                        return Ok(false);
                    }
                    pending.push(Dep::on(task));
                }
                Point::Send(t) => {
                    let job: &JobSpec = self.job;
                    let tr = &job.transfers[t as usize];
                    let mut deps = st.frontier.clone();
                    for &a in &tr.after {
                        let task = self.p2p_task[a as usize];
                        if task == NONE {
                            return Ok(false);
                        }
                        deps.push(Dep::on(task));
                    }
                    let Some(&to) = self.by_rank.get(&tr.to_rank) else {
                        return Err(SimError::InvalidJob(format!(
                            "transfer `{}` goes to rank {}, which is not simulated",
                            tr.label, tr.to_rank
                        )));
                    };
                    let label = self.label(&tr.label);
                    // The chain so far includes the waits of zero-work
                    // nodes before the send, still pending.
                    let mut d = Vec::new();
                    merge_deps(&mut d, &deps, pending);
                    let id = self.p2p(P2p {
                        from: prog,
                        to,
                        size_bytes: tr.size_bytes,
                        phase: Phase::Forward,
                        label,
                        micro_batch: 0,
                        chunk: 0,
                        deps: &d,
                    })?;
                    self.p2p_task[t as usize] = id;
                }
            }
            *next += 1;
        }
        Ok(true)
    }

    /// A stage-to-stage transfer of the pipeline.
    fn transfer(
        &mut self,
        from: u32,
        to: u32,
        step: PipeStep,
        deps: &[Dep],
    ) -> Result<TaskId, SimError> {
        let phase = match step.direction {
            Direction::Forward => Phase::Forward,
            Direction::Backward | Direction::Weight => Phase::InputGrad,
        };
        let label = self.label(match step.direction {
            Direction::Forward => "activation",
            Direction::Backward | Direction::Weight => "gradient",
        });
        self.p2p(P2p {
            from,
            to,
            size_bytes: self.activation,
            phase,
            label,
            micro_batch: step.micro_batch,
            chunk: step.chunk.min(255) as u8,
            deps,
        })
    }

    /// A point-to-point transfer task: it holds the sender's send stream
    /// and the receiver's receive stream (NCCL's send/recv rendezvous),
    /// costed as point-to-point over the link between the two ranks'
    /// placements (NVLink in a node, the NICs across nodes).
    fn p2p(&mut self, x: P2p<'_>) -> Result<TaskId, SimError> {
        let P2p {
            from,
            to,
            size_bytes,
            phase,
            label,
            micro_batch,
            chunk,
            deps,
        } = x;
        let (ra, rb) = (self.ranks[from as usize], self.ranks[to as usize]);
        let members = if ra < rb { [ra, rb] } else { [rb, ra] };
        let placement = self.placement.placement_of(&members);
        let req = CollectiveRequest {
            collective: CollectiveKind::SendRecv,
            group: GroupKind::Pp,
            group_size: 2,
            size_bytes,
            phase,
            placement,
        };
        let (total, nic) = self.cost(req)?;
        let (total, nic) = match &self.faults {
            Some(f) => f.transfer(&self.placement, (from, ra), (to, rb), total, nic),
            None => (total, nic),
        };
        let (na, nb) = (
            self.node_of_prog[from as usize],
            self.node_of_prog[to as usize],
        );
        let flow = (nic > 0).then(|| FlowDef {
            nic_ns: nic,
            nodes: [
                (na, self.weight_of_prog[from as usize]),
                if nb == na {
                    (NONE, 0)
                } else {
                    (nb, self.weight_of_prog[to as usize])
                },
            ],
        });
        let def = TaskDef {
            resources: [Self::res(from, Stream::Send), Self::res(to, Stream::Recv)],
            duration_ns: total,
            flow,
            gang: None,
        };
        let meta = TaskMeta {
            program: from,
            peer: to,
            label,
            layer: Span::NONE,
            micro_batch,
            bytes: size_bytes,
            kind: SpanKind::Send,
            stream: Stream::Send,
            coll: CollOp::SendRecv,
            chunk,
        };
        self.task(def, deps, meta)
    }

    fn close(&mut self, st: &mut ProgState, prog: u32) -> Result<(), SimError> {
        let job: &JobSpec = self.job;
        let program = &job.programs[prog as usize];
        let mut pending = Vec::new();
        let after = if self.config.overlap_grad_sync {
            Some(std::mem::take(&mut st.last_bwd_start))
        } else {
            None
        };
        self.rows(
            st,
            prog,
            &program.pre_rows,
            true,
            &mut pending,
            after.as_deref(),
        )?;
        let mut pending = std::mem::take(&mut st.async_tasks);
        self.rows(st, prog, &program.post_rows, false, &mut pending, None)?;
        st.closed = true;
        Ok(())
    }

    /// The time of collective `c` over `group_size` ranks placed as stage
    /// 0's group (0 for a group of one), for the closed-form bubble.
    fn stage0_cost_ns(
        &mut self,
        c: CommSpec,
        group_size: u32,
        phase: Phase,
    ) -> Result<u64, SimError> {
        if group_size <= 1 {
            return Ok(0);
        }
        let (placement, _) = self.group_placement(0, c.group);
        let req = CollectiveRequest {
            collective: c.collective,
            group: c.group,
            group_size,
            size_bytes: c.size_bytes,
            phase,
            placement,
        };
        Ok(self.cost(req)?.0)
    }

    /// SimAI's closed form (docs/FORMATS.md §4). With the file's rows
    /// ([`JobSpec::simai_bubble`]): per row except `embedding_layer`, once
    /// each, (fwd comm + ig comm + fwd + ig + wg compute as written, times
    /// the compute scale), summed, times (p - 1) / (ga * vpp), truncated
    /// ([`crate::analytical::report::bubble_ns`]); collectives are costed
    /// by the run's cost function with SimAI's group size (EP or TP), so
    /// with `Algorithm::Simai` this is the SimAI-compatible mode's bubble
    /// exactly, and with ring or tree the same formula with that
    /// algorithm's collective times. Without them (jobs not read from a
    /// SimAI file): the simulated program of stage 0, its once-per-iteration
    /// rows and one block per micro-batch, times (p - 1) / (m * vpp).
    fn simai_bubble(&mut self, vpp: u32) -> Result<u64, SimError> {
        let job: &JobSpec = self.job;
        if let Some(basis) = &job.simai_bubble {
            let (tp, ep) = (job.parallel.tp, job.parallel.ep);
            let mut sum: u128 = 0;
            for row in &basis.rows {
                for c in row.compute_ns {
                    sum += u128::from(scale(c, self.config.compute_scale));
                }
                for &(phase, c) in &row.comms {
                    let group_size = if c.group == GroupKind::Ep { ep } else { tp };
                    sum += u128::from(self.stage0_cost_ns(c, group_size, phase)?);
                }
            }
            return Ok(
                crate::analytical::report::bubble_ns(sum, self.p, basis.ga, basis.vpp)
                    .unwrap_or(u64::MAX),
            );
        }
        let Some(program) = job.programs.first() else {
            return Ok(0);
        };
        let mut rows: Vec<&LayerSpec> = program.pre_rows.iter().collect();
        for mb in 0..self.m {
            if let Some(b) = program.block_of(mb) {
                rows.extend(b.layers.iter());
            }
        }
        rows.extend(program.post_rows.iter());
        let mut sum: u128 = 0;
        for row in rows.into_iter().filter(|r| r.name != "embedding_layer") {
            for phase in [Phase::Forward, Phase::InputGrad, Phase::WeightGrad] {
                sum += u128::from(self.compute_ns(row, phase));
            }
            for phase in [Phase::Forward, Phase::InputGrad] {
                if let Some(c) = row.phase(phase).comm {
                    let group_size = self.job.parallel.group_size(c.group);
                    sum += u128::from(self.stage0_cost_ns(c, group_size, phase)?);
                }
            }
        }
        let num = sum * u128::from(self.p - 1);
        let den = u128::from(self.m) * u128::from(vpp.max(1));
        Ok(u64::try_from(num / den).unwrap_or(u64::MAX))
    }
}

/// Per program (index of `by_rank`'s values): the transfer points of
/// [`JobSpec::transfers`], by boundary, sends first at one boundary (a
/// rank issues what it sends before it waits), then by transfer.
fn transfer_points(job: &JobSpec, by_rank: &BTreeMap<u32, u32>) -> Vec<Vec<(u32, Point)>> {
    let mut points: Vec<Vec<(u32, u8, u32)>> = vec![Vec::new(); job.programs.len()];
    for (t, tr) in job.transfers.iter().enumerate() {
        let t = t as u32;
        if let Some(&p) = by_rank.get(&tr.from_rank) {
            points[p as usize].push((tr.send_at, 0, t));
        }
        for &(rank, at) in &tr.waited_at {
            if let Some(&p) = by_rank.get(&rank) {
                points[p as usize].push((at, 1, t));
            }
        }
    }
    points
        .into_iter()
        .map(|mut v| {
            v.sort_unstable();
            v.dedup();
            v.into_iter()
                .map(|(at, kind, t)| {
                    (
                        at,
                        if kind == 0 {
                            Point::Send(t)
                        } else {
                            Point::Wait(t)
                        },
                    )
                })
                .collect()
        })
        .collect()
}

/// Why no rank can advance: a backward listed before its own forward (a
/// weight step before its backward), ranks waiting for point-to-point
/// transfers never sent, or the blocked ranks and their next steps.
fn stall_message(b: &Builder<'_>, states: &[ProgState], ranks: &[u32]) -> String {
    let stage = |i: usize| b.job.programs.get(i).map_or(0, |p| p.stage);
    let waiting: Vec<String> = states
        .iter()
        .enumerate()
        .filter_map(|(i, st)| {
            let r = st.resume.as_ref()?;
            let (_, point) = *b.points.get(i)?.get(r.point)?;
            let t = match point {
                Point::Wait(t) => t,
                Point::Send(t) => b
                    .job
                    .transfers
                    .get(t as usize)?
                    .after
                    .iter()
                    .copied()
                    .find(|a| b.p2p_task.get(*a as usize) == Some(&NONE))?,
            };
            let tr = b.job.transfers.get(t as usize)?;
            Some(format!(
                "rank {} waits for `{}` from rank {} to rank {}",
                ranks[i], tr.label, tr.from_rank, tr.to_rank
            ))
        })
        .take(4)
        .collect();
    if !waiting.is_empty() {
        return format!(
            "the point-to-point transfers wait on each other (each rank runs its nodes in one order): {}",
            waiting.join("; ")
        );
    }
    for (i, st) in states.iter().enumerate() {
        if let Some(step) = st.order.get(st.pos) {
            let (what, before, name) = match step.direction {
                Direction::Forward => continue,
                Direction::Backward => ("backward", Direction::Forward, "forward"),
                Direction::Weight => ("weight-gradient step", Direction::Backward, "backward"),
            };
            let f = b.out_index(before, step.micro_batch, step.chunk);
            if st.outputs.get(f).is_some_and(|o| o.is_none()) {
                return format!(
                    "rank {} (stage {}) lists the {what} of micro-batch {} (chunk {}) before its {name}",
                    ranks[i],
                    stage(i),
                    step.micro_batch,
                    step.chunk
                );
            }
        }
    }
    let blocked: Vec<String> = states
        .iter()
        .enumerate()
        .filter_map(|(i, st)| {
            st.order.get(st.pos).map(|step| {
                format!(
                    "rank {} (stage {}) waits to run {:?} of micro-batch {} (chunk {})",
                    ranks[i],
                    stage(i),
                    step.direction,
                    step.micro_batch,
                    step.chunk
                )
            })
        })
        .take(4)
        .collect();
    format!("the step orders wait on each other: {}", blocked.join("; "))
}

/// Build the task graph of `job` under `config`, costing with `cost`.
pub fn build(
    job: &JobSpec,
    config: &SimConfig,
    cost: &dyn CollectiveCost,
) -> Result<Model, SimError> {
    config.validate()?;
    job.validate()?;
    let p = job.parallel.pp;
    let m = config.micro_batches.unwrap_or(job.micro_batches);
    if !(1..=MAX_MICRO_BATCHES).contains(&m) {
        return Err(SimError::InvalidConfig {
            name: "micro_batches",
            reason: format!("{m} is not between 1 and {MAX_MICRO_BATCHES}"),
        });
    }
    let v = config.schedule.chunks(config.virtual_stages);
    config.schedule.check(p, m)?;
    let mut warnings = job.warnings.clone();
    let mut notes = Vec::new();
    let placement = Placement::new(
        job.parallel,
        config.network.placement,
        config.network.gpus_per_node,
    );
    // Size limit before allocating anything proportional to the work.
    let mut estimate: u64 = 0;
    let mut chunk_rows = Vec::with_capacity(job.programs.len());
    for prog in &job.programs {
        let biggest = prog
            .blocks
            .iter()
            .map(|b| b.layers.len() as u64)
            .max()
            .unwrap_or(0);
        estimate = estimate.saturating_add(estimated_stage_tasks(
            u64::from(m),
            biggest,
            (prog.pre_rows.len() + prog.post_rows.len()) as u64,
        ));
        chunk_rows.push(
            prog.blocks
                .iter()
                .map(|b| {
                    let layers = BlockLayers::of(b);
                    if prog.chunk_layers.is_empty() {
                        layers.chunk_rows(v, prog.stage, p)
                    } else {
                        layers.chunk_rows_of(&prog.chunk_layers, v, prog.stage)
                    }
                })
                .collect::<Result<Vec<_>, _>>()?,
        );
        if let Some(order) = &prog.order {
            let per = if order.iter().any(|s| s.direction == Direction::Weight) {
                3
            } else {
                2
            };
            if order.len() as u64 > per * u64::from(m) * u64::from(v) {
                return Err(SimError::InvalidJob(format!(
                    "rank {} lists {} steps; at most {} exist",
                    prog.rank,
                    order.len(),
                    per * u64::from(m) * u64::from(v)
                )));
            }
        }
    }
    if estimate > MAX_TASKS {
        return Err(SimError::TooLarge(format!(
            "about {estimate} tasks for {} simulated rank(s), {m} micro-batches and {v} virtual stage(s) (limit {MAX_TASKS})",
            job.programs.len()
        )));
    }
    let ranks: Vec<u32> = job
        .programs
        .iter()
        .map(|prog| match job.mode {
            JobMode::Spmd => placement.rank_of(Coords {
                tp: 0,
                dp: 0,
                pp: prog.stage,
            }),
            JobMode::PerRank => prog.rank,
        })
        .collect();
    if job.mode == JobMode::PerRank {
        for (prog, &r) in job.programs.iter().zip(&ranks) {
            let c = placement.coords_of(r);
            if c.pp != prog.stage {
                return Err(SimError::InvalidJob(format!(
                    "rank {r} is on stage {} in the placement, not {}",
                    c.pp, prog.stage
                )));
            }
        }
    }
    let mut graph = TaskGraph::new();
    for _ in 0..job.programs.len() * STREAMS as usize {
        graph.add_resource();
    }
    let mut node_ids: BTreeMap<u32, NodeId> = BTreeMap::new();
    let mut node_of_prog = Vec::new();
    let mut weight_of_prog = Vec::new();
    let g = config.network.gpus_per_node;
    for (prog, &r) in job.programs.iter().zip(&ranks) {
        let node = placement.node_of(r);
        let id = *node_ids.entry(node).or_insert_with(|| graph.add_node(g));
        node_of_prog.push(id);
        let weight = match job.mode {
            JobMode::PerRank if !job.stage_copies => 1,
            JobMode::PerRank | JobMode::Spmd => {
                let lo = u64::from(node) * u64::from(g);
                let hi = (lo + u64::from(g)).min(job.parallel.world());
                (lo..hi)
                    .filter(|x| placement.coords_of(*x as u32).pp == prog.stage)
                    .count()
                    .max(1) as u32
            }
        };
        weight_of_prog.push(weight);
    }
    let mut first_of_stage = vec![NONE; p as usize];
    let mut by_rank = BTreeMap::new();
    for (i, (prog, &r)) in job.programs.iter().zip(&ranks).enumerate() {
        by_rank.insert(r, i as u32);
        let f = &mut first_of_stage[prog.stage as usize];
        if *f == NONE || ranks[*f as usize] > r {
            *f = i as u32;
        }
    }
    let activation = config.activation_bytes.unwrap_or(job.activation_bytes);
    let by_rank_copy = by_rank.clone();
    let faults = if config.faults.is_empty() {
        None
    } else {
        Some(injection::resolve(&config.faults, job, &placement, &ranks)?)
    };
    // Each program's slow windows of time, registered once with the graph.
    let window_ids: Vec<u32> = match &faults {
        Some(f) => (0..job.programs.len() as u32)
            .map(|prog| match f.windows(prog) {
                Some(w) => graph.add_windows(w.to_vec()),
                None => NONE,
            })
            .collect(),
        None => Vec::new(),
    };
    let mut b = Builder {
        job,
        config,
        cost,
        placement,
        m,
        v,
        p,
        activation,
        chunk_rows,
        graph,
        tasks: Vec::new(),
        steps: Vec::new(),
        labels: Vec::new(),
        label_ids: BTreeMap::new(),
        ranks: ranks.clone(),
        node_of_prog,
        weight_of_prog,
        by_rank,
        first_of_stage,
        group_cache: BTreeMap::new(),
        cost_cache: BTreeMap::new(),
        gangs: BTreeMap::new(),
        scratch: Vec::new(),
        p2p_task: vec![NONE; job.transfers.len()],
        points: transfer_points(job, &by_rank_copy),
        has_host: false,
        faults,
        window_ids,
        layer_labels: job
            .programs
            .iter()
            .map(|prog| {
                prog.blocks
                    .iter()
                    .map(|b| vec![NONE; b.layers.len()])
                    .collect()
            })
            .collect(),
    };
    let mut states = Vec::with_capacity(job.programs.len());
    let costs = if config.schedule == ScheduleKind::ZbV {
        b.step_costs(v)
    } else {
        schedule::StepCosts::UNIT
    };
    let mut plans: BTreeMap<u32, StagePlan> = BTreeMap::new();
    for prog in &job.programs {
        let order = match &prog.order {
            Some(o) => StagePlan {
                steps: o.clone(),
                overlapped: Vec::new(),
                independent: false,
            },
            None => {
                let plan = match plans.get(&prog.stage) {
                    Some(plan) => plan.clone(),
                    None => {
                        let plan = schedule::stage_plan_costed(
                            config.schedule,
                            p,
                            m,
                            v,
                            prog.stage,
                            &costs,
                        )?;
                        plans.insert(prog.stage, plan.clone());
                        plan
                    }
                };
                if config.overlap_forward_backward {
                    schedule::overlap::pair_forward_backward(plan, p)
                } else {
                    plan
                }
            }
        };
        let mut weighted = vec![false; m as usize * v as usize];
        for s in order
            .steps
            .iter()
            .filter(|s| s.direction == Direction::Weight)
        {
            if s.micro_batch < m && s.chunk < v {
                weighted[s.micro_batch as usize * v as usize + s.chunk as usize] = true;
            }
        }
        states.push(ProgState {
            order: order.steps,
            overlapped: order.overlapped,
            independent: order.independent,
            compute_seq: 0,
            pair: None,
            weighted,
            pos: 0,
            frontier: Vec::new(),
            outputs: vec![None; 3 * m as usize * v as usize],
            async_tasks: Vec::new(),
            last_bwd_start: Vec::new(),
            coll_seq: [0; GroupKind::EVERY.len()],
            closed: false,
            host_last: None,
            last_compute: None,
            queue: LaunchQueue::default(),
            prefetch_anchors: std::collections::VecDeque::new(),
            prefetch_armed: false,
            resume: None,
        });
    }
    loop {
        let mut progressed = false;
        let mut open = false;
        for i in 0..states.len() {
            while b.step(&mut states, i as u32)? {
                progressed = true;
            }
            if states[i].pos == states[i].order.len() {
                if !states[i].closed {
                    b.close(&mut states[i], i as u32)?;
                    progressed = true;
                }
            } else {
                open = true;
            }
        }
        if !open {
            break;
        }
        if !progressed {
            return Err(SimError::Stalled(stall_message(&b, &states, &ranks)));
        }
    }
    // Every micro-batch passes every chunk once forward and once backward
    // (a weight-gradient pass may be split off the backward, or not: DualPipeV
    // mixes both, so the steps are not counted as a whole).
    for (i, st) in states.iter().enumerate() {
        let all = u64::from(m) * u64::from(v);
        let count = |d: Direction| st.order.iter().filter(|s| s.direction == d).count() as u64;
        let (f, bw) = (count(Direction::Forward), count(Direction::Backward));
        if f != all || bw != all {
            warnings.push(format!(
                "the schedule on rank {} passes {f} forward and {bw} backward of the {all} micro-batch chunks it should; its figures are incomplete",
                ranks[i],
            ));
        }
    }
    let vpp = job.header_vpp.unwrap_or(v);
    let simai_bubble_ns = b.simai_bubble(vpp)?;
    match job.mode {
        JobMode::Spmd => notes.push(format!(
            "SPMD job: one representative rank per stage is simulated (ranks {}); the {} ranks of each stage are assumed identical",
            ranks.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", "),
            u64::from(job.parallel.tp) * u64::from(job.parallel.dp)
        )),
        JobMode::PerRank if job.stage_copies => notes.push(format!(
            "per-rank job whose ranks of a stage run the same program: one rank per stage is simulated (ranks {}), standing for the {} ranks of its stage",
            ranks.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", "),
            u64::from(job.parallel.tp) * u64::from(job.parallel.dp)
        )),
        JobMode::PerRank => notes.push(format!(
            "per-rank job: {} of {} ranks simulated",
            ranks.len(),
            job.parallel.world()
        )),
    }
    if let Some(h) = job.header_vpp {
        if h > 1 {
            notes.push(format!(
                "the header's vpp = {h} (AICB: layers per stage) is used only for SimAI's closed-form bubble; the schedule uses {v} virtual stage(s)"
            ));
        }
    }
    if m != job.micro_batches {
        warnings.push(format!(
            "micro-batches set to {m} (the job has {}); micro-batches past the job's blocks repeat its last block",
            job.micro_batches
        ));
    }
    if p > 1 && activation == 0 && job.pipelined {
        warnings.push(
            "stage-to-stage sends carry 0 bytes: pipeline transfers are not simulated".to_string(),
        );
    }
    let Builder {
        graph,
        mut tasks,
        mut steps,
        labels,
        has_host,
        ..
    } = b;
    // Kept through the run: no spare capacity from growing.
    tasks.shrink_to_fit();
    steps.shrink_to_fit();
    let meta = Meta {
        tasks,
        programs: job
            .programs
            .iter()
            .zip(&ranks)
            .map(|(prog, &rank)| ProgramInfo {
                rank,
                stage: prog.stage,
            })
            .collect(),
        steps,
        labels,
        mode: job.mode,
        stage_copies: job.stage_copies,
        job_name: job.name.clone(),
        stages: p,
        micro_batches: m,
        virtual_stages: v,
        schedule: config.schedule,
        cost_model: cost.name().to_string(),
        activation_bytes: activation,
        simai_bubble_ns,
        host: has_host,
        warnings,
        notes,
    };
    Ok(Model { graph, meta })
}

/// Turn a finished run into its timeline, summary and activation memory
/// over time per simulated rank ([`summary::activation_series`]; the
/// timeline gets it as counter lanes in micro-batches,
/// [`summary::activation_counters`]). With [`SimConfig::summary_only`] no
/// timeline is built (an empty one is returned): the summary comes from the
/// task records and the engine's times alone, as it always does, with the
/// iteration end taken from the tasks' ends (what the timeline's latest
/// span end is).
pub fn finish_all(
    meta: &Meta,
    engine: &Engine,
    config: &SimConfig,
) -> Result<(Timeline, Summary, Vec<ActivationSeries>), SimError> {
    let times = engine.all_times();
    if config.summary_only {
        let path = summary::critical_path_tasks(times);
        let end_ns = times.iter().map(|t| t.end_ns).max().unwrap_or(0);
        let activations = summary::activation_series(meta, engine);
        let summary = summary::summarize(meta, engine, &path, end_ns, &activations);
        return Ok((Timeline::default(), summary, activations));
    }
    let mut tb = TimelineBuilder::new();
    for l in &meta.labels {
        tb.label(l);
    }
    // Host lanes only where some op had a host launch: every other
    // timeline keeps its five device lanes per rank.
    let streams: &[Stream] = if meta.host {
        &Stream::ALL
    } else {
        &Stream::DEVICE
    };
    for prog in &meta.programs {
        for &stream in streams {
            let (group_kind, group, name) = match meta.mode {
                JobMode::Spmd => (
                    LaneGroup::Stage,
                    prog.stage,
                    format!("stage {} / {}", prog.stage, stream.name()),
                ),
                JobMode::PerRank => (
                    LaneGroup::Rank,
                    prog.rank,
                    format!(
                        "rank {} (stage {}) / {}",
                        prog.rank,
                        prog.stage,
                        stream.name()
                    ),
                ),
            };
            tb.lane(Lane {
                group_kind,
                group,
                stage: prog.stage,
                stream,
                name,
            });
        }
    }
    let per_prog = streams.len() as u32;
    let lane = |prog: u32, stream: Stream| prog * per_prog + stream.index();
    let mut primary = Vec::with_capacity(meta.tasks.len());
    let mut recv_of: BTreeMap<u32, SpanRef> = BTreeMap::new();
    for (id, (m, t)) in meta.tasks.iter().zip(times).enumerate() {
        let span = Span {
            start_ns: t.start_ns,
            duration_ns: t.end_ns - t.start_ns,
            bytes: m.bytes,
            label: crate::timeline::LabelId(m.label),
            layer: m.layer,
            micro_batch: m.micro_batch,
            kind: m.kind,
            coll: m.coll,
            chunk: m.chunk,
        };
        let r = tb.push(lane(m.program, m.stream), span);
        primary.push(r);
        if m.is_transfer() {
            let rr = tb.push(
                lane(m.peer, Stream::Recv),
                Span {
                    kind: SpanKind::Recv,
                    ..span
                },
            );
            recv_of.insert(id as u32, rr);
            tb.flow(Flow {
                from: r,
                to: rr,
                bytes: m.bytes,
                micro_batch: m.micro_batch,
            });
        }
    }
    if config.record_dependencies {
        for (id, m) in meta.tasks.iter().enumerate() {
            for d in engine.graph().deps_of(id as u32) {
                let dm = &meta.tasks[d.task as usize];
                let from = match recv_of.get(&d.task) {
                    Some(rr) if dm.peer == m.program => *rr,
                    _ => primary[d.task as usize],
                };
                tb.dependency(from, primary[id]);
            }
        }
    }
    let path = summary::critical_path_tasks(times);
    tb.critical_path(path.iter().map(|t| primary[*t as usize]).collect());
    let mut timeline = tb.build();
    let activations = summary::activation_series(meta, engine);
    timeline.set_counters(summary::activation_counters(&timeline, &activations, None));
    let summary = summary::summarize(meta, engine, &path, timeline.end_ns(), &activations);
    Ok((timeline, summary, activations))
}
