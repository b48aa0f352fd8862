//! The summary of a run: iteration time, and for every simulated rank where
//! its compute stream's time went, plus the critical path and SimAI's
//! closed-form bubble for comparison.
//!
//! Decomposition of one rank's [0, iteration end]: compute busy time plus
//! every idle gap of its compute stream, attributed by walking back the
//! chain of tasks that made the next compute start (each task's "binding":
//! the dependency, or resource occupant, that ended last). Walking back from
//! the end of the gap, each task on the chain owns the part of the gap from
//! its start to where the previous piece began:
//! - a TP / EP / DP / DP_EP collective of this rank: exposed communication
//!   of that group (including the update wait after it);
//! - a stage-to-stage transfer into or out of this rank: exposed PP;
//! - anything beyond a transfer or on another rank: bubble (waiting for the
//!   pipeline);
//! - whatever is left (nothing on the chain): other.
//!
//! The time after the rank's last task until the iteration ends is bubble
//! too (waiting for the other stages). So for every rank
//! compute + bubble + exposed (all groups) + other = iteration time.
//! The top-level numbers are those of the rank on which the critical path
//! ends (the last to finish; ties: the lowest program index).
//!
//! Activation memory over time ([`activation_series`]), per simulated rank,
//! in chunk activations (one micro-batch through one model chunk; a
//! micro-batch's activations on a rank are `chunks` of them): one is stored
//! when a chunk's forward starts (its first task) and freed when the step
//! that last needs it ends (its last task on the rank's chain): the backward,
//! or, when the order lists a W step for that micro-batch and chunk
//! (zero-bubble schedules, DualPipeV's warm-up and cool-down), the W step,
//! whose inputs are held until it runs. So a micro-batch counts as in flight
//! from its forward to its W. Frees come before stores at the same instant; a
//! step with no work takes the time of the rank's previous event. The peak
//! per rank is [`StageSummary::peak_activation_micro_batches`]. The series
//! is [`crate::engine::SimResult::activations`]; [`activation_counters`] turns it
//! into the timeline's counter lanes (one per stage or rank, in its lane
//! group: micro-batches in flight, or bytes for a model-level job).

use crate::engine::event::{Engine, TaskId, TaskTimes, NONE};
use crate::engine::schedule::Direction;
use crate::engine::spec::{GroupKind, JobMode};
use crate::engine::task::{Meta, TaskMeta};
use crate::timeline::{
    CounterLane, CounterPeak, CounterPoint, CounterUnit, LaneGroup, Span, SpanKind, Stream,
    Timeline,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// Version of the summary JSON layout. 2: the exposed-communication groups
/// are spelled `tp`, `ep`, `dp`, `dp_ep`, `pp` (as in `simulate --json`);
/// version 1 wrote `TP`, `EP`, `DP`, `DP_EP`, `PP`.
pub const SCHEMA_VERSION: u32 = 2;

/// Exposed communication per group, ns (JSON keys `tp`, `ep`, `dp`, `dp_ep`,
/// `pp`, and `cp` for jobs with context parallelism (absent when 0), the
/// same in the summary export and in `simulate --json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub struct ExposedComm {
    pub tp: u64,
    pub ep: u64,
    pub dp: u64,
    pub dp_ep: u64,
    pub pp: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cp: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl ExposedComm {
    /// Sum over groups.
    pub fn total(&self) -> u64 {
        self.tp + self.ep + self.dp + self.dp_ep + self.pp + self.cp
    }

    fn add(&mut self, g: GroupKind, ns: u64) {
        match g {
            GroupKind::Tp => self.tp += ns,
            GroupKind::Ep => self.ep += ns,
            GroupKind::Dp | GroupKind::DpShard | GroupKind::DpReplicate => self.dp += ns,
            GroupKind::DpEp => self.dp_ep += ns,
            GroupKind::Pp => self.pp += ns,
            GroupKind::Cp => self.cp += ns,
        }
    }

    /// The value for `g` (HSDP's sub-groups: DP's, where they count).
    pub fn get(&self, g: GroupKind) -> u64 {
        match g {
            GroupKind::Tp => self.tp,
            GroupKind::Ep => self.ep,
            GroupKind::Dp | GroupKind::DpShard | GroupKind::DpReplicate => self.dp,
            GroupKind::DpEp => self.dp_ep,
            GroupKind::Pp => self.pp,
            GroupKind::Cp => self.cp,
        }
    }
}

/// Where one simulated rank's time went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageSummary {
    pub stage: u32,
    pub rank: u32,
    /// Compute stream busy, ns.
    pub compute_ns: u64,
    /// compute / iteration time.
    pub busy_share: f64,
    /// 1 - busy_share.
    pub idle_share: f64,
    pub bubble_ns: u64,
    pub exposed_comm_ns: ExposedComm,
    pub other_idle_ns: u64,
    /// Idle waiting for the host's kernel launches, ns (jobs with a host
    /// model; part of the idle time the other fields do not count).
    #[serde(skip_serializing_if = "is_zero")]
    pub host_bound_ns: u64,
    /// Host time blocked at sync points waiting for the device, ns.
    #[serde(skip_serializing_if = "is_zero")]
    pub sync_stall_ns: u64,
    /// Host time blocked on a full launch queue, ns: the host as far ahead
    /// of the device as the queue lets it be
    /// ([`crate::engine::SimConfig::launch_queue_depth`]); not a sync stall.
    #[serde(skip_serializing_if = "is_zero")]
    pub launch_queue_wait_ns: u64,
    /// Busy time of the other streams, ns.
    pub collective_busy_ns: u64,
    pub grad_sync_busy_ns: u64,
    pub send_busy_ns: u64,
    pub recv_busy_ns: u64,
    /// When this rank's last task ended, ns.
    pub end_ns: u64,
    /// Most chunk activations held at once ([`activation_series`]).
    pub peak_activation_chunks: u32,
    /// The same in micro-batches: peak chunks / chunks per rank (1F1B:
    /// p - stage; GPipe: m).
    pub peak_activation_micro_batches: f64,
}

/// From `time_ns` on, `chunks` chunk activations are held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ActivationPoint {
    pub time_ns: u64,
    pub chunks: u32,
}

/// Activation memory of one simulated rank over the iteration (see the
/// module documentation): a step function starting at 0 held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActivationSeries {
    pub stage: u32,
    pub rank: u32,
    /// Model chunks per rank (a micro-batch's activations are this many
    /// chunk activations).
    pub chunks_per_micro_batch: u32,
    /// Every change, in time order, one point per instant.
    pub points: Vec<ActivationPoint>,
    /// Most chunk activations held at once.
    pub peak_chunks: u32,
}

impl ActivationSeries {
    /// [`ActivationSeries::peak_chunks`] in micro-batches.
    pub fn peak_micro_batches(&self) -> f64 {
        f64::from(self.peak_chunks) / f64::from(self.chunks_per_micro_batch.max(1))
    }

    /// When the peak is first reached, ns (0 when nothing is held): the
    /// first point of the series at [`ActivationSeries::peak_chunks`]. The
    /// static parts of memory being constant, the allocator's peak is then.
    pub fn peak_time_ns(&self) -> u64 {
        self.points
            .iter()
            .find(|p| p.chunks == self.peak_chunks && p.chunks > 0)
            .map_or(0, |p| p.time_ns)
    }

    /// Chunk activations held at `time_ns`.
    pub fn at(&self, time_ns: u64) -> u32 {
        match self.points.partition_point(|p| p.time_ns <= time_ns) {
            0 => 0,
            i => self.points[i - 1].chunks,
        }
    }
}

impl ActivationSeries {
    /// The series as a counter lane of the timeline's lane group
    /// (`group_kind`, `group`): bytes when `bytes_per_chunk` is known
    /// (chunks x bytes), else micro-batches in flight (chunks / chunks per
    /// micro-batch).
    pub fn counter_lane(
        &self,
        group_kind: LaneGroup,
        group: u32,
        bytes_per_chunk: Option<u64>,
    ) -> CounterLane {
        let unit = match bytes_per_chunk {
            Some(_) => CounterUnit::Bytes,
            None => CounterUnit::MicroBatches,
        };
        let per = f64::from(self.chunks_per_micro_batch.max(1));
        let value = |chunks: u32| match bytes_per_chunk {
            Some(b) => b.saturating_mul(u64::from(chunks)) as f64,
            None => f64::from(chunks) / per,
        };
        let name = match group_kind {
            LaneGroup::Stage => format!("stage {} / activation memory", self.stage),
            LaneGroup::Rank => format!(
                "rank {} (stage {}) / activation memory",
                self.rank, self.stage
            ),
        };
        CounterLane {
            group_kind,
            group,
            stage: self.stage,
            name,
            unit,
            peak: (self.peak_chunks > 0).then(|| CounterPeak {
                time_ns: self.peak_time_ns(),
                micro_batches_in_flight: self.peak_micro_batches(),
                resident: Vec::new(),
            }),
            points: self
                .points
                .iter()
                .map(|p| CounterPoint {
                    time_ns: p.time_ns,
                    value: value(p.chunks),
                })
                .collect(),
        }
    }
}

/// The counter lanes of `timeline` for `series` (one per simulated rank
/// whose series has points, in order): each goes in the lane group of its
/// rank (the group of the timeline's first lane of that stage, for SPMD
/// jobs, or of that rank), in bytes where `bytes_per_chunk` has the
/// stage's entry, else in micro-batches. No memory is computed here: the
/// values are [`activation_series`]'.
pub fn activation_counters(
    timeline: &Timeline,
    series: &[ActivationSeries],
    bytes_per_chunk: Option<&[u64]>,
) -> Vec<CounterLane> {
    series
        .iter()
        .filter(|a| !a.points.is_empty())
        .filter_map(|a| {
            let lane = timeline.lanes().iter().find(|l| match l.group_kind {
                LaneGroup::Stage => l.group == a.stage,
                LaneGroup::Rank => l.group == a.rank,
            })?;
            let bytes = bytes_per_chunk.and_then(|b| b.get(a.stage as usize).copied());
            Some(a.counter_lane(lane.group_kind, lane.group, bytes))
        })
        .collect()
}

/// Activation memory over time of every simulated rank, in program order.
pub fn activation_series(meta: &Meta, engine: &Engine) -> Vec<ActivationSeries> {
    let times = engine.all_times();
    let n = meta.programs.len();
    // (time, 0 = free / 1 = store, sequence)
    let mut events: Vec<Vec<(u64, u8, usize)>> = vec![Vec::new(); n];
    let mut last_time = vec![0u64; n];
    for (seq, rec) in meta.steps.iter().enumerate() {
        let p = rec.program as usize;
        if p >= n {
            continue;
        }
        let releases = match rec.step.direction {
            Direction::Forward => None,
            Direction::Backward | Direction::Weight => Some(rec.releases),
        };
        let time = match releases {
            None => times.get(rec.first as usize).map(|t| t.start_ns),
            Some(_) => times.get(rec.last as usize).map(|t| t.end_ns),
        }
        .unwrap_or(last_time[p]);
        last_time[p] = last_time[p].max(time);
        match releases {
            None => events[p].push((time, 1, seq)),
            Some(true) => events[p].push((time, 0, seq)),
            Some(false) => {}
        }
    }
    events
        .into_iter()
        .zip(&meta.programs)
        .map(|(mut ev, info)| {
            ev.sort_unstable();
            let mut points: Vec<ActivationPoint> = Vec::new();
            let (mut held, mut peak) = (0u32, 0u32);
            for (time_ns, store, _) in ev {
                held = if store == 1 {
                    held + 1
                } else {
                    held.saturating_sub(1)
                };
                peak = peak.max(held);
                match points.last_mut() {
                    Some(last) if last.time_ns == time_ns => last.chunks = held,
                    _ => points.push(ActivationPoint {
                        time_ns,
                        chunks: held,
                    }),
                }
            }
            ActivationSeries {
                stage: info.stage,
                rank: info.rank,
                chunks_per_micro_batch: meta.virtual_stages,
                points,
                peak_chunks: peak,
            }
        })
        .collect()
}

/// Consecutive critical-path spans of one step on one rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CriticalSegment {
    pub stage: u32,
    pub rank: u32,
    /// `forward`, `backward`, `iteration` (once-per-iteration rows) or
    /// `transfer`.
    pub what: &'static str,
    /// Micro-batch, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub micro_batch: Option<u32>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub spans: u32,
}

/// The critical path in short.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CriticalPathSummary {
    pub spans: u64,
    /// Span time on the path by span kind, ns.
    pub by_kind_ns: BTreeMap<&'static str, u64>,
    /// Path time not covered by spans (update waits, start offset), ns.
    pub wait_ns: u64,
    pub segments: Vec<CriticalSegment>,
}

/// Result summary (serialised as the summary JSON export).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub schema_version: u32,
    /// Always `event`.
    pub mode: &'static str,
    pub job: String,
    pub schedule: &'static str,
    pub algorithm: String,
    pub pipeline_stages: u32,
    pub micro_batches: u32,
    pub virtual_stages: u32,
    pub simulated_ranks: u32,
    /// True when each simulated rank stands for a whole stage (SPMD, or a
    /// per-rank job of stage copies).
    pub representative_ranks: bool,
    pub activation_bytes: u64,
    pub iteration_time_ns: u64,
    /// Compute busy of the reference rank, ns.
    pub compute_ns: u64,
    pub bubble_ns: u64,
    pub exposed_comm_ns: ExposedComm,
    pub other_idle_ns: u64,
    /// The reference rank's compute stream idle waiting for kernel launches
    /// (host-bound), ns; 0 without a host model.
    #[serde(skip_serializing_if = "is_zero")]
    pub host_bound_ns: u64,
    /// The reference rank's host blocked at sync points, ns: the device
    /// work it could not run ahead of (with a bounded launch queue, what
    /// was still queued when it got there).
    #[serde(skip_serializing_if = "is_zero")]
    pub sync_stall_ns: u64,
    /// The reference rank's host blocked on a full launch queue, ns
    /// ([`StageSummary::launch_queue_wait_ns`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub launch_queue_wait_ns: u64,
    /// The rank whose decomposition is reported at the top level.
    pub reference_stage: u32,
    pub reference_rank: u32,
    /// SimAI's closed-form bubble for the same job (docs/FORMATS.md §4),
    /// ns: for a SimAI workload, every row of the file once (except
    /// `embedding_layer`, compute as written) x (pp - 1) / (ga x vpp) from
    /// the header, whatever the simulated micro-batch count. Collectives are
    /// costed by this run's cost function: with `--algorithm simai` (same
    /// cluster) it equals the SimAI-compatible mode's `bubble_ns` exactly;
    /// with ring or tree it is the same formula with that algorithm's
    /// collective times (latencies included). Other jobs: stage 0's rows
    /// per simulated micro-batch x (pp - 1) / (m x v).
    pub simai_bubble_ns: u64,
    pub stages: Vec<StageSummary>,
    pub critical_path: CriticalPathSummary,
    pub events: u64,
    pub tasks: u64,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
}

/// The chain of tasks that determines the end, first to last.
pub fn critical_path_tasks(times: &[TaskTimes]) -> Vec<TaskId> {
    let mut last = NONE;
    let mut end = 0;
    for (i, t) in times.iter().enumerate() {
        if last == NONE || t.end_ns > end {
            last = i as u32;
            end = t.end_ns;
        }
    }
    let mut path = Vec::new();
    let mut x = last;
    while x != NONE && path.len() < times.len() {
        path.push(x);
        x = times[x as usize].binding;
    }
    path.reverse();
    path
}

#[derive(Default)]
struct Breakdown {
    compute: u64,
    bubble: u64,
    exposed: ExposedComm,
    other: u64,
    /// Waiting for the host's launches.
    host: u64,
}

/// The group a span waits on: a collective's, or the pipeline's for a
/// stage-to-stage transfer.
fn group_of(kind: SpanKind) -> Option<GroupKind> {
    GroupKind::of_collective_span(kind)
        .or_else(|| matches!(kind, SpanKind::Send | SpanKind::Recv).then_some(GroupKind::Pp))
}

/// Attribute [lo, hi) of program `prog`, walking back from `x`.
fn attribute(
    b: &mut Breakdown,
    tasks: &[TaskMeta],
    times: &[TaskTimes],
    prog: u32,
    lo: u64,
    mut hi: u64,
    mut x: TaskId,
) {
    let mut local = true;
    let mut guard = 0usize;
    while x != NONE && hi > lo && guard <= times.len() {
        guard += 1;
        let m = &tasks[x as usize];
        let t = &times[x as usize];
        let seg_lo = t.start_ns.max(lo);
        let transfer = m.is_transfer();
        let mine = m.program == prog || (transfer && m.peer == prog);
        if !mine {
            local = false;
        }
        if seg_lo < hi {
            let ns = hi - seg_lo;
            if !local {
                b.bubble += ns;
            } else if m.stream == Stream::Host {
                b.host += ns;
            } else if let Some(g) = group_of(m.kind) {
                b.exposed.add(g, ns);
            } else {
                b.other += ns;
            }
            hi = seg_lo;
        }
        if transfer {
            local = false;
        }
        x = t.binding;
    }
    if hi > lo {
        if local {
            b.other += hi - lo;
        } else {
            b.bubble += hi - lo;
        }
    }
}

fn step_class(m: &TaskMeta) -> &'static str {
    if m.is_transfer() {
        return "transfer";
    }
    if m.micro_batch == Span::NONE {
        return "iteration";
    }
    match m.kind {
        SpanKind::Forward => "forward",
        SpanKind::InputGrad | SpanKind::WeightGrad => "backward",
        _ => "",
    }
}

/// Build the summary of a finished run; `activations` from
/// [`activation_series`] (per program).
pub fn summarize(
    meta: &Meta,
    engine: &Engine,
    path: &[TaskId],
    end_ns: u64,
    activations: &[ActivationSeries],
) -> Summary {
    let times = engine.all_times();
    let tasks = &meta.tasks;
    let n = meta.programs.len();
    let mut per_prog: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    let mut last_of: Vec<TaskId> = vec![NONE; n];
    let mut busy = vec![[0u64; Stream::ALL.len()]; n];
    let mut per_host: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    for (i, m) in tasks.iter().enumerate() {
        let t = &times[i];
        let p = m.program as usize;
        let dur = t.end_ns - t.start_ns;
        busy[p][m.stream.index() as usize] += dur;
        if m.is_transfer() {
            busy[m.peer as usize][Stream::Recv.index() as usize] += dur;
        }
        if m.stream == Stream::Compute {
            per_prog[p].push(i as u32);
        }
        if m.stream == Stream::Host {
            per_host[p].push(i as u32);
        }
        let l = last_of[p];
        if l == NONE || t.end_ns > times[l as usize].end_ns {
            last_of[p] = i as u32;
        }
    }
    // The host lane's idle time before a launch, in the order the lane
    // ran them (one at a time; EP overlap's two chains interleave): before
    // a sync point a sync stall, before a launch held back by the launch
    // queue (its binding task is a compute task) a queue wait.
    let mut sync_stall = vec![0u64; n];
    let mut queue_wait = vec![0u64; n];
    for (p, host) in per_host.iter_mut().enumerate() {
        host.sort_by_key(|&t| (times[t as usize].start_ns, t));
        let mut lane_end = 0u64;
        for &h in host.iter() {
            let t = &times[h as usize];
            let gap = t.start_ns.saturating_sub(lane_end);
            if tasks[h as usize].kind == SpanKind::HostSync {
                sync_stall[p] += gap;
            } else if t.binding != NONE && tasks[t.binding as usize].stream == Stream::Compute {
                queue_wait[p] += gap;
            }
            lane_end = lane_end.max(t.end_ns);
        }
    }
    let mut stages = Vec::with_capacity(n);
    for (p, compute) in per_prog.iter_mut().enumerate() {
        compute.sort_by_key(|&t| (times[t as usize].start_ns, t));
        let mut b = Breakdown::default();
        let mut prev_end = 0u64;
        for &c in compute.iter() {
            let t = &times[c as usize];
            if t.start_ns > prev_end {
                attribute(
                    &mut b, tasks, times, p as u32, prev_end, t.start_ns, t.binding,
                );
            }
            b.compute += t.end_ns - t.start_ns;
            prev_end = prev_end.max(t.end_ns);
        }
        let rank_end = match last_of[p] {
            NONE => 0,
            l => times[l as usize].end_ns,
        };
        if rank_end > prev_end {
            attribute(
                &mut b, tasks, times, p as u32, prev_end, rank_end, last_of[p],
            );
        }
        b.bubble += end_ns.saturating_sub(rank_end.max(prev_end));
        let share = if end_ns == 0 {
            0.0
        } else {
            b.compute as f64 / end_ns as f64
        };
        let info = &meta.programs[p];
        stages.push((
            b,
            StageSummary {
                stage: info.stage,
                rank: info.rank,
                compute_ns: 0,
                busy_share: share,
                idle_share: 1.0 - share,
                bubble_ns: 0,
                exposed_comm_ns: ExposedComm::default(),
                other_idle_ns: 0,
                host_bound_ns: 0,
                sync_stall_ns: sync_stall[p],
                launch_queue_wait_ns: queue_wait[p],
                collective_busy_ns: busy[p][Stream::Collective.index() as usize],
                grad_sync_busy_ns: busy[p][Stream::GradSync.index() as usize],
                send_busy_ns: busy[p][Stream::Send.index() as usize],
                recv_busy_ns: busy[p][Stream::Recv.index() as usize],
                end_ns: rank_end,
                peak_activation_chunks: activations.get(p).map_or(0, |a| a.peak_chunks),
                peak_activation_micro_batches: activations
                    .get(p)
                    .map_or(0.0, ActivationSeries::peak_micro_batches),
            },
        ));
    }
    let stages: Vec<StageSummary> = stages
        .into_iter()
        .map(|(b, s)| StageSummary {
            compute_ns: b.compute,
            bubble_ns: b.bubble,
            exposed_comm_ns: b.exposed,
            other_idle_ns: b.other,
            host_bound_ns: b.host,
            ..s
        })
        .collect();
    let reference = path
        .last()
        .map(|t| {
            let m = &tasks[*t as usize];
            if m.is_transfer() {
                m.peer
            } else {
                m.program
            }
        })
        .unwrap_or(0) as usize;
    let fallback = StageSummary {
        stage: 0,
        rank: 0,
        compute_ns: 0,
        busy_share: 0.0,
        idle_share: 1.0,
        bubble_ns: 0,
        exposed_comm_ns: ExposedComm::default(),
        other_idle_ns: 0,
        host_bound_ns: 0,
        sync_stall_ns: 0,
        launch_queue_wait_ns: 0,
        collective_busy_ns: 0,
        grad_sync_busy_ns: 0,
        send_busy_ns: 0,
        recv_busy_ns: 0,
        end_ns: 0,
        peak_activation_chunks: 0,
        peak_activation_micro_batches: 0.0,
    };
    let r = stages.get(reference).cloned().unwrap_or(fallback);
    // Critical path summary.
    let mut by_kind: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut covered = 0u64;
    let mut segments: Vec<CriticalSegment> = Vec::new();
    for &t in path {
        let m = &tasks[t as usize];
        let tt = &times[t as usize];
        let d = tt.end_ns - tt.start_ns;
        *by_kind.entry(m.kind.name()).or_insert(0) += d;
        covered += d;
        let info = &meta.programs[m.program as usize];
        let what = step_class(m);
        let mb = (m.micro_batch != Span::NONE).then_some(m.micro_batch);
        let same = segments.last().is_some_and(|s| {
            s.rank == info.rank
                && s.micro_batch == mb
                && (s.what == what || what.is_empty() || s.what.is_empty())
                && what != "transfer"
                && s.what != "transfer"
        });
        if same {
            if let Some(s) = segments.last_mut() {
                s.end_ns = tt.end_ns;
                s.spans += 1;
                if s.what.is_empty() {
                    s.what = what;
                }
            }
        } else {
            segments.push(CriticalSegment {
                stage: info.stage,
                rank: info.rank,
                what,
                micro_batch: mb,
                start_ns: tt.start_ns,
                end_ns: tt.end_ns,
                spans: 1,
            });
        }
    }
    for s in &mut segments {
        if s.what.is_empty() {
            s.what = "iteration";
        }
    }
    let stats = engine.stats();
    Summary {
        schema_version: SCHEMA_VERSION,
        mode: "event",
        job: meta.job_name.clone(),
        schedule: meta.schedule.name(),
        algorithm: meta.cost_model.clone(),
        pipeline_stages: meta.stages,
        micro_batches: meta.micro_batches,
        virtual_stages: meta.virtual_stages,
        simulated_ranks: n as u32,
        representative_ranks: meta.mode == JobMode::Spmd || meta.stage_copies,
        activation_bytes: meta.activation_bytes,
        iteration_time_ns: end_ns,
        compute_ns: r.compute_ns,
        bubble_ns: r.bubble_ns,
        exposed_comm_ns: r.exposed_comm_ns,
        other_idle_ns: r.other_idle_ns,
        host_bound_ns: r.host_bound_ns,
        sync_stall_ns: r.sync_stall_ns,
        launch_queue_wait_ns: r.launch_queue_wait_ns,
        reference_stage: r.stage,
        reference_rank: r.rank,
        simai_bubble_ns: meta.simai_bubble_ns,
        stages,
        critical_path: CriticalPathSummary {
            spans: path.len() as u64,
            by_kind_ns: by_kind,
            wait_ns: end_ns.saturating_sub(covered),
            segments,
        },
        events: stats.events,
        tasks: stats.tasks,
        notes: meta.notes.clone(),
        warnings: {
            let mut w = meta.warnings.clone();
            if end_ns == u64::MAX {
                w.push(
                    "simulated time reached the 64-bit nanosecond limit (about 584 years): durations or sizes in the input are out of range"
                        .to_string(),
                );
            }
            w
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::spec::{Block, JobSpec, LayerSpec, Parallelism};
    use crate::engine::{simulate, ScheduleKind, SimConfig};
    use crate::timeline::{CounterUnit, LaneGroup};

    /// p stages of one layer (forward 10 ns, backward 10 ns), m
    /// micro-batches, no communication.
    fn job(p: u32, m: u32) -> JobSpec {
        let block = Block {
            layers: vec![LayerSpec::compute("l0", 10, 10, 0)],
        };
        let par = Parallelism {
            tp: 1,
            dp: 1,
            pp: p,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        };
        JobSpec::spmd("counters", par, m, 0, block)
    }

    /// 1F1B, p = 3, m = 4: stage 0 runs F0 [0, 10), F1 [10, 20), F2 [20,
    /// 30), then waits for B0 [50, 60); the last stage alternates F0 [20, 30),
    /// B0 [30, 40), F1 [40, 50), ... Stage i holds p - i micro-batches at
    /// its peak; each stage's counter lane sits in its stage group.
    #[test]
    fn one_f_one_b_counter_lanes() {
        let (p, m) = (3u32, 4u32);
        let r = simulate(&job(p, m), &SimConfig::default()).unwrap();
        let counters = r.timeline.counters();
        assert_eq!(counters.len(), p as usize);
        for (i, c) in counters.iter().enumerate() {
            assert_eq!(
                (c.group_kind, c.group, c.stage),
                (LaneGroup::Stage, i as u32, i as u32)
            );
            assert_eq!(c.unit, CounterUnit::MicroBatches);
            assert_eq!(c.name, format!("stage {i} / activation memory"));
            assert_eq!(c.max_value(), f64::from(p - i as u32), "stage {i}");
            // The same steps as the series: nothing computed twice.
            let a = &r.activations[i];
            assert_eq!(c.points.len(), a.points.len());
            for (cp, ap) in c.points.iter().zip(&a.points) {
                assert_eq!((cp.time_ns, cp.value), (ap.time_ns, f64::from(ap.chunks)));
            }
            assert_eq!(c.points.last().map(|x| x.value), Some(0.0), "all freed");
        }
        let (s0, s2) = (&counters[0], &counters[2]);
        assert_eq!(s0.points[0].time_ns, 0);
        assert_eq!(
            [5, 15, 25, 45].map(|t| s0.value_at(t)),
            [1.0, 2.0, 3.0, 3.0]
        );
        assert_eq!(s0.value_at(r.summary.iteration_time_ns), 0.0);
        assert_eq!(
            [15, 25, 35, 45].map(|t| s2.value_at(t)),
            [0.0, 1.0, 1.0, 1.0]
        );
        // Bytes when a chunk's size is known (a model-level job).
        let bytes = super::activation_counters(&r.timeline, &r.activations, Some(&[100, 200, 300]));
        assert_eq!(bytes[1].unit, CounterUnit::Bytes);
        assert_eq!(bytes[1].max_value(), 400.0);
        assert_eq!(bytes[2].max_value(), 300.0);
    }

    /// Interleaved with two chunks per rank: values are chunk activations
    /// over 2 (fractions of a micro-batch).
    #[test]
    fn interleaved_counter_lanes_count_micro_batches() {
        let block = Block {
            layers: vec![
                LayerSpec::compute("l0", 10, 10, 0),
                LayerSpec::compute("l1", 10, 10, 0),
            ],
        };
        let par = Parallelism {
            tp: 1,
            dp: 1,
            pp: 2,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        };
        let j = JobSpec::spmd("counters", par, 4, 0, block);
        let config = SimConfig {
            schedule: ScheduleKind::Interleaved,
            virtual_stages: 2,
            ..SimConfig::default()
        };
        let r = simulate(&j, &config).unwrap();
        for (c, a) in r.timeline.counters().iter().zip(&r.activations) {
            assert_eq!(c.max_value(), f64::from(a.peak_chunks) / 2.0);
            assert!(c.points.iter().any(|p| p.value.fract() == 0.5));
        }
    }
}
