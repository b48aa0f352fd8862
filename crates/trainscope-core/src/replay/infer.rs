//! The effective network of a measured run, inferred from its own traced
//! collectives (Echo traces), and the cost function that re-costs a replay
//! with it ([`InferredCost`]).
//!
//! Splitting ([`infer`]): a traced collective's duration on one member of
//! its group is `waiting + transfer + after`: the member waits until the
//! last member arrives (the transfer starts then), and it sees the end a
//! little after the first member does (host-side timing). When every member
//! of the group is traced on one shared clock, the k-th collective of a kind
//! on each member is the same collective (same bytes, same operation), so
//! transfer = earliest end − latest start; the member's waiting part =
//! latest start − its start, its after part = its end − earliest end. A
//! stage-to-stage transfer is split the same way from the `send_*` and the
//! matching `recv_*` (same micro-batch, neighbouring stage, same TP and DP
//! position). Where a member is not traced (a partial job), or the members'
//! times do not overlap, nothing is split: the durations include waiting.
//!
//! Fitting: per group ([`LinkGroup`]: TP, EP, DP, DP_EP, the embedding
//! group of first and last stage, stage-to-stage transfers) and direction
//! (forward, or backward including the once-per-iteration rows), the pairs
//! (bus bytes, transfer time) are fitted by least squares to
//! `time = latency + bus bytes / bandwidth`, with the bus bytes of the
//! network model (`sim::network`): ring all-reduce 2(n−1)/n × S,
//! all-gather / reduce-scatter / all-to-all (n−1)/n × S, transfer S; GB =
//! 2^30 bytes. The latency is identified only when the sizes differ and
//! the fit gives a positive bandwidth and a non-negative latency; otherwise
//! the latency is 0 and the bandwidth is total bus bytes / total time, so
//! the fitted times add up to the measured ones. Groups with split samples
//! use only those ([`FitBasis::Split`]); groups without use, per message
//! size seen at least twice, the shortest occurrence (the one that waited
//! least, an upper bound of the transfer: [`FitBasis::LeastWaiting`]); a
//! group seen only once per size cannot be told apart from its waiting
//! ([`FitBasis::NotIdentifiable`]) and keeps the configured network.
//!
//! Costing ([`InferredCost`]): a collective of a fitted group costs
//! `latency + bus bytes / bandwidth` (a direction without a fit uses the
//! other direction's), with no NIC-shared part (the measured bandwidth
//! already includes whatever sharing there was). Settings the user gave
//! explicitly ([`NetworkOverrides`]) win for their link: the NVLink or NIC
//! bandwidth replaces the bandwidth term of the groups on that link (inside
//! one node, or across nodes) with the configured model's, the latency
//! setting the latency term, and an explicit algorithm costs every
//! collective with the configured model.

use crate::engine::network::{CollectiveCost, CollectiveRequest, CostError};
use crate::engine::spec::{CollectiveKind, GroupKind, Parallelism, Phase};
use crate::workload::{
    CommGroup, CommKind, MeasuredOp, MeasuredRun, OpKind, ParallelConfig, TrainingPhase,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// ns per byte at 1 GB/s (GB = 2^30 bytes), as in `sim::network`.
const NS_PER_BYTE_AT_1GBPS: f64 = 1e9 / 1_073_741_824.0;

/// Marks "no sub-op" in an [`OpRef`].
pub const WHOLE_OP: u32 = u32::MAX;

/// One traced op or sub-op: (rank, index of the op in the rank's trace,
/// index of the sub-op in the op or [`WHOLE_OP`]).
pub type OpRef = (u32, u32, u32);

/// The groups fitted separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkGroup {
    Tp,
    Ep,
    Dp,
    DpEp,
    /// The word / position embedding group of first and last stage (Echo
    /// `ep`, `pep`).
    Embedding,
    /// Stage-to-stage transfers (`send_*` / `recv_*`).
    P2p,
}

impl LinkGroup {
    /// All groups, in report order.
    pub const ALL: [LinkGroup; 6] = [
        LinkGroup::Tp,
        LinkGroup::Ep,
        LinkGroup::Dp,
        LinkGroup::DpEp,
        LinkGroup::Embedding,
        LinkGroup::P2p,
    ];

    /// `TP`, `EP`, `DP`, `DP_EP`, `embedding`, `PP p2p`.
    pub fn name(self) -> &'static str {
        match self {
            LinkGroup::Tp => "TP",
            LinkGroup::Ep => "EP",
            LinkGroup::Dp => "DP",
            LinkGroup::DpEp => "DP_EP",
            LinkGroup::Embedding => "embedding",
            LinkGroup::P2p => "PP p2p",
        }
    }

    /// The group of a collective the engine asks to cost (a replay maps
    /// the embedding groups to the pipeline group kind).
    pub fn of_request(collective: CollectiveKind, group: GroupKind) -> LinkGroup {
        match (collective, group) {
            (CollectiveKind::SendRecv, _) => LinkGroup::P2p,
            (_, GroupKind::Tp) => LinkGroup::Tp,
            (_, GroupKind::Ep) => LinkGroup::Ep,
            (_, GroupKind::Dp | GroupKind::DpShard | GroupKind::DpReplicate) => LinkGroup::Dp,
            (_, GroupKind::DpEp) => LinkGroup::DpEp,
            // A CP group is a slice of the DP dimension: its links are DP's.
            (_, GroupKind::Cp) => LinkGroup::Dp,
            (_, GroupKind::Pp) => LinkGroup::Embedding,
        }
    }

    /// The group of a traced collective (`None`: not one the replay costs:
    /// broadcasts, point-to-point sub-ops, unscoped or pipeline-scoped
    /// collectives).
    pub fn of_measured(op: &MeasuredOp) -> Option<(LinkGroup, CommKind)> {
        let OpKind::Collective { collective, group } = op.kind else {
            return None;
        };
        if matches!(
            collective,
            CommKind::Broadcast | CommKind::Send | CommKind::Recv
        ) {
            return None;
        }
        let g = match group {
            CommGroup::Tp => LinkGroup::Tp,
            CommGroup::Dp => LinkGroup::Dp,
            CommGroup::Ep => LinkGroup::Ep,
            CommGroup::DpEp => LinkGroup::DpEp,
            CommGroup::Cp | CommGroup::DpShard | CommGroup::DpReplicate => LinkGroup::Dp,
            CommGroup::Embedding | CommGroup::PositionEmbedding => LinkGroup::Embedding,
            CommGroup::Pp | CommGroup::Unscoped => return None,
        };
        Some((g, collective))
    }

    /// Members of one group of this kind in a replay of `parallel` (the
    /// engine's sizes; the embedding group is first + last stage, so one
    /// member without pipelining). A collective over one member is local
    /// work.
    pub fn members(self, parallel: Parallelism) -> u32 {
        match self {
            LinkGroup::Embedding => {
                if parallel.pp > 1 {
                    2
                } else {
                    1
                }
            }
            LinkGroup::P2p => 2,
            LinkGroup::Tp => parallel.group_size(GroupKind::Tp),
            LinkGroup::Ep => parallel.group_size(GroupKind::Ep),
            LinkGroup::Dp => parallel.group_size(GroupKind::Dp),
            LinkGroup::DpEp => parallel.group_size(GroupKind::DpEp),
        }
    }
}

/// Forward, or backward (including the once-per-iteration rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Forward,
    Backward,
}

impl Direction {
    /// `forward` / `backward`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        }
    }

    /// The direction of an engine request's column.
    pub fn of_phase(p: Phase) -> Direction {
        if p == Phase::Forward {
            Direction::Forward
        } else {
            Direction::Backward
        }
    }

    /// The direction a replay runs a traced op in: forward-phase ops of a
    /// micro-batch forward, backward ones backward, gradient sync and
    /// optimizer backward (the weight-gradient column), anything else in the
    /// direction of the step it follows (`current_forward`), forward before
    /// the first step.
    pub fn of_op(op: &MeasuredOp, current_forward: Option<bool>) -> Direction {
        match (op.phase, op.micro_batch) {
            (Some(TrainingPhase::Forward), Some(_)) => Direction::Forward,
            (Some(TrainingPhase::Backward), Some(_)) => Direction::Backward,
            (Some(TrainingPhase::GradSync | TrainingPhase::Optimizer), _) => Direction::Backward,
            _ => {
                if current_forward == Some(false) {
                    Direction::Backward
                } else {
                    Direction::Forward
                }
            }
        }
    }

    fn other(self) -> Direction {
        match self {
            Direction::Forward => Direction::Backward,
            Direction::Backward => Direction::Forward,
        }
    }
}

/// The ops of a rank's first iteration: up to and including its first
/// `optimizer_step` (all of them without one).
pub fn first_iteration(ops: &[MeasuredOp]) -> &[MeasuredOp] {
    match ops
        .iter()
        .position(|o| o.phase == Some(TrainingPhase::Optimizer) && o.name == "optimizer_step")
    {
        Some(i) => &ops[..=i],
        None => ops,
    }
}

/// Bytes a collective moves per rank in the network model's terms (ring
/// all-reduce 2(n−1)/n × S, all-gather / reduce-scatter / all-to-all
/// (n−1)/n × S, a transfer S).
pub fn bus_bytes(collective: CollectiveKind, members: u32, size_bytes: u64) -> f64 {
    let n = f64::from(members.max(1));
    let s = size_bytes as f64;
    match collective {
        CollectiveKind::AllReduce => 2.0 * (n - 1.0) / n * s,
        CollectiveKind::AllGather | CollectiveKind::ReduceScatter | CollectiveKind::AllToAll => {
            (n - 1.0) / n * s
        }
        CollectiveKind::SendRecv => s,
    }
}

/// The engine's collective kind of a traced one.
pub fn collective_kind(c: CommKind) -> CollectiveKind {
    match c {
        CommKind::AllReduce => CollectiveKind::AllReduce,
        CommKind::AllGather => CollectiveKind::AllGather,
        CommKind::ReduceScatter => CollectiveKind::ReduceScatter,
        CommKind::AllToAll => CollectiveKind::AllToAll,
        CommKind::Broadcast | CommKind::Send | CommKind::Recv => CollectiveKind::SendRecv,
    }
}

/// One traced collective or transfer on one member, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Split {
    /// Waiting for the last member to arrive, ns.
    pub wait_ns: u64,
    /// The transfer (latest start to earliest end over the members), ns.
    pub transfer_ns: u64,
    /// This member's own time after the earliest end, ns (replayed as its
    /// own work).
    pub after_ns: u64,
}

/// How a group's parameters were found (module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FitBasis {
    /// From transfers split off by the measured start skew.
    Split,
    /// No member besides the traced ones: per message size, the shortest
    /// occurrence (includes whatever waiting it had: an upper bound).
    LeastWaiting,
    /// Each size seen once, with waiting that cannot be told apart: the
    /// configured network costs this group.
    NotIdentifiable,
}

/// The inferred parameters of one group and direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupFit {
    pub group: LinkGroup,
    pub direction: Direction,
    pub basis: FitBasis,
    /// Traced occurrences (one per collective; unsplit ones once per traced
    /// member).
    pub samples: u32,
    /// (bytes, time) points the fit used.
    pub points: u32,
    /// Effective bandwidth, GB/s (2^30 bytes), on the network model's bus
    /// bytes; `None` when not identifiable.
    pub bandwidth_gbps: Option<f64>,
    /// Fixed time per collective, ns (0 when not identified).
    pub latency_ns: u64,
    /// Whether the latency was identified (sizes differ and the fit is
    /// physical), rather than set to 0.
    pub latency_identified: bool,
    /// Root-mean-square of fitted − measured over the points, ns.
    pub rms_error_ns: u64,
    /// The same as a percentage of the mean measured time.
    pub rms_error_percent: f64,
    /// Median over the points of |fitted − measured| / measured, percent
    /// (robust to a few outliers, which dominate the RMS).
    pub median_error_percent: f64,
    /// Measured time of the points, ns.
    pub measured_ns: u64,
    /// Fitted time of the points, ns.
    pub fitted_ns: u64,
    /// Waiting split off over every member, ns (re-created by the
    /// simulation, not replayed).
    pub waiting_ns: u64,
    /// Members' own time after the transfer, ns (replayed as their work).
    pub after_ns: u64,
}

impl GroupFit {
    /// Fitted time of `bus` bus bytes, ns.
    fn time_ns(&self, bus: f64) -> Option<f64> {
        let bw = self.bandwidth_gbps?;
        Some(self.latency_ns as f64 + bus / bw * NS_PER_BYTE_AT_1GBPS)
    }
}

/// What [`infer`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InferredNetwork {
    /// One per (group, direction) with samples, in [`LinkGroup::ALL`] then
    /// direction order.
    pub fits: Vec<GroupFit>,
    splits: BTreeMap<OpRef, Split>,
    /// Whether the ranks' clocks look shared (else nothing is split).
    pub clocks_shared: bool,
    /// Collectives and transfers split by start skew.
    pub split_occurrences: u32,
    /// Complete groups whose members' times did not overlap (not split).
    pub inconsistent_occurrences: u32,
}

impl InferredNetwork {
    /// The split of a traced op or sub-op, when it was split.
    pub fn split(&self, at: OpRef) -> Option<Split> {
        self.splits.get(&at).copied()
    }

    /// The fit of `group` in `direction`, or in the other direction when
    /// that one has none; only identified fits.
    pub fn parameters(&self, group: LinkGroup, direction: Direction) -> Option<&GroupFit> {
        let find = |d: Direction| {
            self.fits.iter().find(|f| {
                f.group == group && f.direction == d && f.basis != FitBasis::NotIdentifiable
            })
        };
        find(direction).or_else(|| find(direction.other()))
    }
}

/// One traced collective on one member.
#[derive(Debug, Clone, Copy)]
struct Rec {
    at: OpRef,
    rank: u32,
    start: u64,
    dur: u64,
    bytes: u64,
    collective: CollectiveKind,
    direction: Direction,
}

impl Rec {
    fn end(&self) -> u64 {
        self.start.saturating_add(self.dur)
    }
}

/// Whether the ranks' first iterations overlap like ranks of one job on one
/// clock (the test of `formats::echo`: the joint span is at most twice the
/// slowest rank's).
fn clocks_shared(run: &MeasuredRun) -> bool {
    let spans: Vec<(u64, u64)> = run
        .ranks
        .iter()
        .filter_map(|r| {
            let ops = first_iteration(&r.ops);
            let s = ops.iter().filter_map(|o| o.start_ns).min()?;
            let e = ops.iter().filter_map(|o| o.end_ns()).max()?;
            Some((s, e))
        })
        .collect();
    if spans.len() < 2 {
        return true;
    }
    let start = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let end = spans.iter().map(|s| s.1).max().unwrap_or(0);
    let slowest = spans
        .iter()
        .map(|s| s.1.saturating_sub(s.0))
        .max()
        .unwrap_or(0);
    end.saturating_sub(start) <= slowest.saturating_mul(2)
}

/// Global rank of (stage, DP index, TP index), Megatron order.
fn rank_of(p: &ParallelConfig, stage: u32, dp: u32, tp: u32) -> u32 {
    let (t, d) = (p.tp.max(1), p.dp.max(1));
    stage
        .saturating_mul(t.saturating_mul(d))
        .saturating_add(dp.saturating_mul(t))
        .saturating_add(tp)
}

/// The traced group a rank's collective of `group` runs over (`None`: the
/// layout is not known, e.g. expert groups).
fn group_ranks(p: &ParallelConfig, rank: u32, group: LinkGroup) -> Option<Vec<u32>> {
    let stage = p.stage_of_rank(rank);
    let (t, d) = (p.tp_rank(rank), p.dp_rank(rank));
    let mut out: Vec<u32> = match group {
        LinkGroup::Tp => (0..p.tp.max(1)).map(|x| rank_of(p, stage, d, x)).collect(),
        LinkGroup::Dp => (0..p.dp.max(1)).map(|x| rank_of(p, stage, x, t)).collect(),
        LinkGroup::Embedding => vec![
            rank_of(p, 0, d, t),
            rank_of(p, p.pp.max(1).saturating_sub(1), d, t),
        ],
        LinkGroup::Ep | LinkGroup::DpEp | LinkGroup::P2p => return None,
    };
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// A (bus bytes, ns) point and whether it was split off waiting.
#[derive(Debug, Clone, Copy)]
struct Point {
    size_bytes: u64,
    bus: f64,
    ns: u64,
}

#[derive(Default)]
struct Pool {
    split: Vec<Point>,
    unsplit: Vec<Point>,
    waiting_ns: u64,
    after_ns: u64,
}

/// Least squares of `ns = latency + slope x bus`: (slope ns per bus byte,
/// latency ns, latency identified). Falls back to latency 0 and total time
/// / total bytes when the sizes are all alike or the fit is not physical.
pub fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64, bool)> {
    let n = points.len() as f64;
    let sx: f64 = points.iter().map(|p| p.0).sum();
    let sy: f64 = points.iter().map(|p| p.1).sum();
    let usable = |v: f64| v.is_finite() && v > 0.0;
    if points.is_empty() || !usable(sx) || !usable(sy) {
        return None;
    }
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let lo = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let hi = points.iter().map(|p| p.0).fold(0.0, f64::max);
    if hi > lo * (1.0 + 1e-9) && sxx > 0.0 {
        let slope = sxy / sxx;
        let latency = my - slope * mx;
        if slope > 0.0 && latency >= 0.0 && slope.is_finite() && latency.is_finite() {
            return Some((slope, latency, true));
        }
    }
    Some((sy / sx, 0.0, false))
}

fn make_fit(group: LinkGroup, direction: Direction, pool: &Pool) -> GroupFit {
    let samples = (pool.split.len() + pool.unsplit.len()) as u32;
    let (basis, points): (FitBasis, Vec<Point>) = if !pool.split.is_empty() {
        (FitBasis::Split, pool.split.clone())
    } else {
        // Per size: the shortest of at least two occurrences.
        let mut by_size: BTreeMap<u64, (u32, Point)> = BTreeMap::new();
        for p in &pool.unsplit {
            let e = by_size.entry(p.size_bytes).or_insert((0, *p));
            e.0 += 1;
            if p.ns < e.1.ns {
                e.1 = *p;
            }
        }
        let pts: Vec<Point> = by_size
            .values()
            .filter(|(count, _)| *count >= 2)
            .map(|(_, p)| *p)
            .collect();
        if pts.is_empty() {
            (FitBasis::NotIdentifiable, Vec::new())
        } else {
            (FitBasis::LeastWaiting, pts)
        }
    };
    let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.bus, p.ns as f64)).collect();
    let measured: u64 = points.iter().map(|p| p.ns).sum();
    let mut fit = GroupFit {
        group,
        direction,
        basis,
        samples,
        points: points.len() as u32,
        bandwidth_gbps: None,
        latency_ns: 0,
        latency_identified: false,
        rms_error_ns: 0,
        rms_error_percent: 0.0,
        median_error_percent: 0.0,
        measured_ns: measured,
        fitted_ns: 0,
        waiting_ns: pool.waiting_ns,
        after_ns: pool.after_ns,
    };
    match fit_line(&xy) {
        Some((slope, latency, identified)) => {
            fit.bandwidth_gbps = Some(NS_PER_BYTE_AT_1GBPS / slope);
            fit.latency_ns = latency.round() as u64;
            fit.latency_identified = identified;
            let mut sq = 0.0;
            let mut total = 0.0;
            let mut rel: Vec<f64> = Vec::with_capacity(xy.len());
            for (x, y) in &xy {
                let t = fit.time_ns(*x).unwrap_or(0.0).round();
                total += t;
                sq += (t - y) * (t - y);
                if *y > 0.0 {
                    rel.push((t - y).abs() / y * 100.0);
                }
            }
            rel.sort_by(f64::total_cmp);
            fit.median_error_percent = match rel.len() {
                0 => 0.0,
                n if n % 2 == 1 => rel[n / 2],
                n => (rel[n / 2 - 1] + rel[n / 2]) / 2.0,
            };
            let rms = (sq / xy.len() as f64).sqrt();
            fit.rms_error_ns = rms.round() as u64;
            fit.fitted_ns = total as u64;
            let mean = measured as f64 / xy.len() as f64;
            fit.rms_error_percent = if mean > 0.0 { rms / mean * 100.0 } else { 0.0 };
        }
        None if basis != FitBasis::NotIdentifiable => fit.basis = FitBasis::NotIdentifiable,
        None => {}
    }
    fit
}

/// A transfer's identity: (forward?, sending stage, TP index, DP index,
/// micro-batch), as `sim::measured` joins sends and receives.
type TransferKey = (bool, u32, u32, u32, u32);

/// Split every traced collective and transfer of `run`'s first iteration
/// and fit each group (module documentation). `parallel` is the replay's
/// (the engine's group sizes).
pub fn infer(run: &MeasuredRun, parallel: Parallelism) -> InferredNetwork {
    let p = &run.parallel;
    let shared = clocks_shared(run);
    // Collectives by (group, first member, k-th of the group on the rank).
    let mut occ: BTreeMap<(LinkGroup, u32, u32), (usize, Vec<Rec>)> = BTreeMap::new();
    let mut lone: Vec<(LinkGroup, Rec)> = Vec::new();
    let mut sends: BTreeMap<TransferKey, Rec> = BTreeMap::new();
    let mut recvs: BTreeMap<TransferKey, Rec> = BTreeMap::new();
    for rt in &run.ranks {
        let stage = rt.stage.unwrap_or_else(|| p.stage_of_rank(rt.rank));
        let mut seq: BTreeMap<LinkGroup, u32> = BTreeMap::new();
        let mut current: Option<bool> = None;
        for (oi, op) in first_iteration(&rt.ops).iter().enumerate() {
            if op.name == "forward_step" {
                current = Some(true);
            } else if op.name == "backward_step" {
                current = Some(false);
            }
            let direction = Direction::of_op(op, current);
            if matches!(op.kind, OpKind::Send | OpKind::Recv) {
                let (Some(mb), Some(start), Some(dur)) =
                    (op.micro_batch, op.start_ns, op.duration_ns)
                else {
                    continue;
                };
                let forward = match op.phase {
                    Some(TrainingPhase::Forward) => true,
                    Some(TrainingPhase::Backward) => false,
                    _ => continue,
                };
                let rec = Rec {
                    at: (rt.rank, oi as u32, WHOLE_OP),
                    rank: rt.rank,
                    start,
                    dur,
                    bytes: op.message_bytes.unwrap_or(0),
                    collective: CollectiveKind::SendRecv,
                    direction,
                };
                let (t, d) = (p.tp_rank(rt.rank), p.dp_rank(rt.rank));
                if op.kind == OpKind::Send {
                    sends.insert((forward, stage, t, d, mb), rec);
                } else {
                    let from = if forward {
                        stage.checked_sub(1)
                    } else {
                        stage.checked_add(1)
                    };
                    if let Some(from) = from {
                        recvs.insert((forward, from, t, d, mb), rec);
                    }
                }
                continue;
            }
            let mut colls: Vec<(u32, &MeasuredOp)> = if op.sub_ops.is_empty() {
                vec![(WHOLE_OP, op)]
            } else {
                op.sub_ops
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i as u32, s))
                    .collect()
            };
            colls.sort_by_key(|(_, s)| s.start_ns);
            for (si, o) in colls {
                let Some((group, c)) = LinkGroup::of_measured(o) else {
                    continue;
                };
                if group.members(parallel) <= 1 {
                    continue; // local work
                }
                let (Some(start), Some(dur), Some(bytes)) = (
                    o.start_ns,
                    o.duration_ns,
                    o.message_bytes.filter(|b| *b > 0),
                ) else {
                    continue;
                };
                let rec = Rec {
                    at: (rt.rank, oi as u32, si),
                    rank: rt.rank,
                    start,
                    dur,
                    bytes,
                    collective: collective_kind(c),
                    direction,
                };
                let k = seq.entry(group).or_insert(0);
                match group_ranks(p, rt.rank, group) {
                    Some(members) if members.len() > 1 => {
                        let e = occ
                            .entry((group, members[0], *k))
                            .or_insert((members.len(), Vec::new()));
                        e.1.push(rec);
                    }
                    _ => lone.push((group, rec)),
                }
                *k += 1;
            }
        }
    }
    let mut pools: BTreeMap<(LinkGroup, Direction), Pool> = BTreeMap::new();
    let mut splits = BTreeMap::new();
    let mut split_count = 0u32;
    let mut inconsistent = 0u32;
    let members_of = |g: LinkGroup| g.members(parallel);
    let point = |g: LinkGroup, r: &Rec, ns: u64| Point {
        size_bytes: r.bytes,
        bus: bus_bytes(r.collective, members_of(g), r.bytes),
        ns,
    };
    // Split one occurrence whose members are all here: Some(transfer).
    let split_of = |recs: &[Rec]| -> Option<(u64, u64)> {
        let max_start = recs.iter().map(|r| r.start).max()?;
        let min_end = recs.iter().map(Rec::end).min()?;
        (min_end >= max_start).then_some((max_start, min_end))
    };
    for ((group, _, _), (expected, recs)) in &occ {
        let Some(first) = recs.first() else {
            continue;
        };
        let pool = pools.entry((*group, first.direction)).or_default();
        let mut ranks: Vec<u32> = recs.iter().map(|r| r.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let complete = ranks.len() == *expected
            && recs.len() == *expected
            && recs
                .iter()
                .all(|r| r.bytes == first.bytes && r.collective == first.collective);
        if complete && shared {
            if let Some((max_start, min_end)) = split_of(recs) {
                let transfer = min_end - max_start;
                for r in recs {
                    let s = Split {
                        wait_ns: max_start - r.start,
                        transfer_ns: transfer,
                        after_ns: r.end().saturating_sub(min_end),
                    };
                    pool.waiting_ns += s.wait_ns;
                    pool.after_ns += s.after_ns;
                    splits.insert(r.at, s);
                }
                pool.split.push(point(*group, first, transfer));
                split_count += 1;
                continue;
            }
            inconsistent += 1;
        }
        if complete {
            // One collective: the member that waited least.
            let least = recs.iter().map(|r| r.dur).min().unwrap_or(0);
            pool.unsplit.push(point(*group, first, least));
        } else {
            for r in recs {
                pool.unsplit.push(point(*group, r, r.dur));
            }
        }
    }
    for (group, r) in &lone {
        pools
            .entry((*group, r.direction))
            .or_default()
            .unsplit
            .push(point(*group, r, r.dur));
    }
    for (key, s) in &sends {
        let pool = pools.entry((LinkGroup::P2p, s.direction)).or_default();
        if s.bytes == 0 {
            continue;
        }
        if let (Some(r), true) = (recvs.get(key), shared) {
            if let Some((max_start, min_end)) = split_of(&[*s, *r]) {
                let transfer = min_end - max_start;
                for x in [s, r] {
                    let sp = Split {
                        wait_ns: max_start - x.start,
                        transfer_ns: transfer,
                        after_ns: x.end().saturating_sub(min_end),
                    };
                    pool.waiting_ns += sp.wait_ns;
                    pool.after_ns += sp.after_ns;
                    splits.insert(x.at, sp);
                }
                pool.split.push(point(LinkGroup::P2p, s, transfer));
                split_count += 1;
                continue;
            }
            inconsistent += 1;
        }
        // The send alone (a receive without its send is mostly waiting).
        pool.unsplit.push(point(LinkGroup::P2p, s, s.dur));
    }
    let fits = pools
        .iter()
        .filter(|(_, pool)| !pool.split.is_empty() || !pool.unsplit.is_empty())
        .map(|((g, d), pool)| make_fit(*g, *d, pool))
        .collect();
    InferredNetwork {
        fits,
        splits,
        clocks_shared: shared,
        split_occurrences: split_count,
        inconsistent_occurrences: inconsistent,
    }
}

/// Network settings the user gave explicitly; each overrides, for its link,
/// what a replay inferred from the trace (module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkOverrides {
    /// The NVLink bandwidth (groups inside one node).
    pub nvlink_gbps: bool,
    /// The NIC bandwidth (groups across nodes).
    pub nic_gbps: bool,
    /// The latencies (both links).
    pub latency: bool,
    /// The collective algorithm: every collective is costed by the
    /// configured model.
    pub algorithm: bool,
}

impl NetworkOverrides {
    /// Whether anything is overridden.
    pub fn any(&self) -> bool {
        self.nvlink_gbps || self.nic_gbps || self.latency || self.algorithm
    }
}

/// What [`InferredCost`] uses for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Plan<'a> {
    Configured,
    Fit {
        fit: &'a GroupFit,
        bandwidth_overridden: bool,
        latency_overridden: bool,
    },
}

/// The replay's cost function: the inferred parameters where there are
/// some, the configured model elsewhere and where a setting overrides them
/// (module documentation).
pub struct InferredCost<'a> {
    network: &'a InferredNetwork,
    configured: &'a dyn CollectiveCost,
    /// The configured model with zero latencies (its bandwidth term).
    configured_bandwidth: &'a dyn CollectiveCost,
    overrides: NetworkOverrides,
}

impl<'a> InferredCost<'a> {
    /// `configured_bandwidth` must be `configured` with zero latencies.
    pub fn new(
        network: &'a InferredNetwork,
        configured: &'a dyn CollectiveCost,
        configured_bandwidth: &'a dyn CollectiveCost,
        overrides: NetworkOverrides,
    ) -> InferredCost<'a> {
        InferredCost {
            network,
            configured,
            configured_bandwidth,
            overrides,
        }
    }

    fn plan(&self, req: &CollectiveRequest) -> Plan<'a> {
        if self.overrides.algorithm {
            return Plan::Configured;
        }
        let group = LinkGroup::of_request(req.collective, req.group);
        let Some(fit) = self
            .network
            .parameters(group, Direction::of_phase(req.phase))
        else {
            return Plan::Configured;
        };
        let bandwidth_overridden = if req.placement.nodes > 1 {
            self.overrides.nic_gbps
        } else {
            self.overrides.nvlink_gbps
        };
        let latency_overridden = self.overrides.latency;
        if bandwidth_overridden && latency_overridden {
            return Plan::Configured;
        }
        Plan::Fit {
            fit,
            bandwidth_overridden,
            latency_overridden,
        }
    }
}

fn to_ns(x: f64) -> Result<u64, CostError> {
    if !x.is_finite() || !(0.0..1.8e19).contains(&x) {
        return Err(CostError {
            message: format!("an inferred collective time of {x} ns is out of range"),
        });
    }
    Ok(x.round() as u64)
}

impl CollectiveCost for InferredCost<'_> {
    fn name(&self) -> &str {
        "inferred"
    }

    fn cost_ns(&self, req: &CollectiveRequest) -> Result<u64, CostError> {
        match self.plan(req) {
            Plan::Configured => self.configured.cost_ns(req),
            Plan::Fit {
                fit,
                bandwidth_overridden,
                latency_overridden,
            } => {
                let bandwidth_ns = if bandwidth_overridden {
                    self.configured_bandwidth.cost_ns(req)?
                } else {
                    let bus = bus_bytes(req.collective, req.group_size, req.size_bytes);
                    to_ns(fit.time_ns(bus).unwrap_or(0.0) - fit.latency_ns as f64)?
                };
                let latency_ns = if latency_overridden {
                    self.configured
                        .cost_ns(req)?
                        .saturating_sub(self.configured_bandwidth.cost_ns(req)?)
                } else {
                    fit.latency_ns
                };
                Ok(bandwidth_ns.saturating_add(latency_ns))
            }
        }
    }

    fn nic_part_ns(&self, req: &CollectiveRequest, total_ns: u64) -> u64 {
        match self.plan(req) {
            Plan::Configured => self.configured.nic_part_ns(req, total_ns),
            Plan::Fit {
                bandwidth_overridden: true,
                ..
            } => {
                let bw = self.configured_bandwidth.cost_ns(req).unwrap_or(0);
                self.configured_bandwidth.nic_part_ns(req, bw).min(total_ns)
            }
            Plan::Fit { .. } => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_through_two_sizes_is_recovered() {
        // 10 us + bytes at 100 GB/s.
        let ns = |b: f64| 10_000.0 + b / 100.0 * NS_PER_BYTE_AT_1GBPS;
        let pts: Vec<(f64, f64)> = [1e3, 1e6, 1e8, 1e8, 1e6]
            .iter()
            .map(|b| (*b, ns(*b)))
            .collect();
        let (slope, latency, identified) = fit_line(&pts).unwrap();
        assert!(identified);
        assert!((NS_PER_BYTE_AT_1GBPS / slope - 100.0).abs() < 1e-6);
        assert!((latency - 10_000.0).abs() < 1e-3);
    }

    #[test]
    fn one_size_keeps_the_total() {
        let pts = [(1e8, 1e6), (1e8, 3e6)];
        let (slope, latency, identified) = fit_line(&pts).unwrap();
        assert!(!identified);
        assert_eq!(latency, 0.0);
        assert!((slope * 2e8 - 4e6).abs() < 1e-3);
        assert!(fit_line(&[]).is_none());
        assert!(fit_line(&[(0.0, 5.0)]).is_none());
    }

    #[test]
    fn bus_bytes_follow_the_network_model() {
        assert_eq!(bus_bytes(CollectiveKind::AllReduce, 2, 1000), 1000.0);
        assert_eq!(bus_bytes(CollectiveKind::AllReduce, 4, 1000), 1500.0);
        assert_eq!(bus_bytes(CollectiveKind::AllGather, 4, 1000), 750.0);
        assert_eq!(bus_bytes(CollectiveKind::SendRecv, 2, 1000), 1000.0);
    }
}
