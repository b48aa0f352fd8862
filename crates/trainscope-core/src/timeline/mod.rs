//! The timeline model, independent of drawing: lanes (one per rank or stage
//! and stream), spans on them (start, duration, kind, interned label, layer,
//! micro-batch, bytes), flows (stage-to-stage transfers as send span ->
//! receive span), span-to-span dependencies and the critical path.
//!
//! Spans of a lane are sorted by start; a per-lane running maximum of span
//! ends makes [`Timeline::query`] a binary search plus a walk over the
//! visible spans, even when spans of a lane overlap (measured traces with
//! sub-ops). [`Timeline::buckets`] serves level-of-detail drawing: one
//! aggregate per column in O(columns x log spans), whatever the number of
//! spans in view (each column's spans found by a galloping search from the
//! previous column's, [`Timeline::buckets_into`]): exact busy time from a
//! per-lane prefix sum of durations, and the dominant kind (most busy time
//! in the column) from an exact walk when the column holds few spans, else
//! from a per-lane summary ([`KindSummary`]: prefix sums of busy time per
//! kind over power-of-two time bins, about half an 8-byte cell per span,
//! two lookups a column). The critical path
//! is also indexed per lane ([`Timeline::critical_on_lane`]) so a view can
//! draw it lane by lane. A [`Span`] is 40 bytes; labels are interned
//! ([`LabelId`]).
//! Measured-run parsers build timelines with [`TimelineBuilder`] too.
//!
//! Besides span lanes a timeline holds counter lanes ([`CounterLane`]): a
//! piecewise-constant series of (time, value) with a unit, placed in a lane
//! group (a simulated stage's activation memory over time, one point per
//! forward or backward: few points, so they need no level-of-detail index).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A stream of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// Compute kernels.
    Compute,
    /// Blocking TP / EP collectives (compute waits for them).
    Collective,
    /// Asynchronous DP / DP_EP gradient collectives.
    GradSync,
    /// Pipeline sends.
    Send,
    /// Pipeline receives.
    Recv,
    /// The rank's host thread launching kernels (only in jobs with a host
    /// model: [`crate::engine::spec::PhaseOps::launch_ns`]).
    Host,
}

impl Stream {
    /// All streams, in lane order.
    pub const ALL: [Stream; 6] = [
        Stream::Compute,
        Stream::Collective,
        Stream::GradSync,
        Stream::Send,
        Stream::Recv,
        Stream::Host,
    ];

    /// The device's streams: every stream but the host's.
    pub const DEVICE: [Stream; 5] = [
        Stream::Compute,
        Stream::Collective,
        Stream::GradSync,
        Stream::Send,
        Stream::Recv,
    ];

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Compute => "compute",
            Stream::Collective => "tp/ep collectives",
            Stream::GradSync => "dp collectives",
            Stream::Send => "pp send",
            Stream::Recv => "pp recv",
            Stream::Host => "host launches",
        }
    }

    /// Machine name (CSV, JSON): `compute`, `collective`, `grad_sync`,
    /// `send`, `recv`, `host`.
    pub fn key(self) -> &'static str {
        match self {
            Stream::Compute => "compute",
            Stream::Collective => "collective",
            Stream::GradSync => "grad_sync",
            Stream::Send => "send",
            Stream::Recv => "recv",
            Stream::Host => "host",
        }
    }

    /// Position in [`Stream::ALL`].
    pub fn index(self) -> u32 {
        self as u32
    }
}

/// What a lane group stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneGroup {
    /// A representative rank of a pipeline stage (SPMD jobs).
    Stage,
    /// One rank.
    Rank,
}

/// One horizontal lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lane {
    pub group_kind: LaneGroup,
    /// Stage index (`Stage`) or global rank (`Rank`).
    pub group: u32,
    /// Pipeline stage of the group.
    pub stage: u32,
    pub stream: Stream,
    /// `stage 3 / compute`, `rank 17 / pp send`.
    pub name: String,
}

/// An interned label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LabelId(pub u32);

/// What a span is (colours, legends, summary categories).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum SpanKind {
    Forward,
    InputGrad,
    WeightGrad,
    /// Other compute (measured ops without a phase).
    Compute,
    CollTp,
    CollEp,
    CollDp,
    CollDpEp,
    /// A collective of another or unknown group (measured runs).
    CollOther,
    Send,
    Recv,
    /// A wait (measured runs).
    Wait,
    /// A context-parallel collective (after the others: the discriminants
    /// of the older kinds stay as they were).
    CollCp,
    /// The host launching an op's kernels.
    HostLaunch,
    /// A launch that first waited for the device (a sync point: a
    /// device-to-host copy such as the all-to-all dispatcher's token counts).
    HostSync,
}

impl SpanKind {
    /// Every kind, in legend order.
    pub const ALL: [SpanKind; 15] = [
        SpanKind::Forward,
        SpanKind::InputGrad,
        SpanKind::WeightGrad,
        SpanKind::Compute,
        SpanKind::CollTp,
        SpanKind::CollEp,
        SpanKind::CollDp,
        SpanKind::CollDpEp,
        SpanKind::CollOther,
        SpanKind::Send,
        SpanKind::Recv,
        SpanKind::Wait,
        SpanKind::CollCp,
        SpanKind::HostLaunch,
        SpanKind::HostSync,
    ];

    /// Stable name (JSON, CSV, Chrome trace `cat`).
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Forward => "forward",
            SpanKind::InputGrad => "input_grad",
            SpanKind::WeightGrad => "weight_grad",
            SpanKind::Compute => "compute",
            SpanKind::CollTp => "coll_tp",
            SpanKind::CollEp => "coll_ep",
            SpanKind::CollDp => "coll_dp",
            SpanKind::CollDpEp => "coll_dp_ep",
            SpanKind::CollOther => "coll_other",
            SpanKind::Send => "send",
            SpanKind::Recv => "recv",
            SpanKind::Wait => "wait",
            SpanKind::CollCp => "coll_cp",
            SpanKind::HostLaunch => "host_launch",
            SpanKind::HostSync => "host_sync",
        }
    }

    /// True for compute kinds.
    pub fn is_compute(self) -> bool {
        matches!(
            self,
            SpanKind::Forward | SpanKind::InputGrad | SpanKind::WeightGrad | SpanKind::Compute
        )
    }
}

/// Which collective a span runs (0 = none), see [`CollOp::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum CollOp {
    None,
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    SendRecv,
}

impl CollOp {
    /// `""`, `all_reduce`, ...
    pub fn name(self) -> &'static str {
        match self {
            CollOp::None => "",
            CollOp::AllReduce => "all_reduce",
            CollOp::AllGather => "all_gather",
            CollOp::ReduceScatter => "reduce_scatter",
            CollOp::AllToAll => "all_to_all",
            CollOp::SendRecv => "send_recv",
        }
    }
}

/// One span: 48 bytes. Optional numbers use [`Span::NONE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Bytes moved (collectives, transfers), 0 for compute.
    pub bytes: u64,
    pub label: LabelId,
    /// Layer index in the block (or row index), or NONE.
    pub layer: u32,
    /// Micro-batch, or NONE (once-per-iteration work).
    pub micro_batch: u32,
    pub kind: SpanKind,
    pub coll: CollOp,
    /// Model chunk (virtual stage on this rank), 0 unless interleaved.
    pub chunk: u8,
}

impl Span {
    /// "No value" for `layer` / `micro_batch`.
    pub const NONE: u32 = u32::MAX;

    /// start + duration, ns.
    pub fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.duration_ns)
    }

    /// The layer, if any.
    pub fn layer(&self) -> Option<u32> {
        (self.layer != Span::NONE).then_some(self.layer)
    }

    /// The micro-batch, if any.
    pub fn micro_batch(&self) -> Option<u32> {
        (self.micro_batch != Span::NONE).then_some(self.micro_batch)
    }

    /// Achieved bandwidth, GB/s (2^30 bytes/s); None without bytes or time.
    pub fn achieved_gbps(&self) -> Option<f64> {
        (self.bytes > 0 && self.duration_ns > 0)
            .then(|| self.bytes as f64 / self.duration_ns as f64 * 1e9 / 1_073_741_824.0)
    }
}

/// A span's address: lane and position in that lane's sorted spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SpanRef {
    pub lane: u32,
    pub index: u32,
}

/// One column of a lane at some zoom level ([`Timeline::buckets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Spans overlapping the column (an upper bound on lanes whose spans
    /// nest; exact otherwise).
    pub spans: u32,
    /// Index of the first of them (meaningful when `spans > 0`): with one
    /// span, draw that span itself.
    pub first: u32,
    /// Busy time inside the column, ns (exact on lanes without nesting,
    /// capped at the column width).
    pub busy_ns: u64,
    /// The kind with the most busy time in the column (ties: the earlier
    /// kind in [`SpanKind::ALL`]); exact when the column holds at most
    /// [`EXACT_KIND_SPANS`] spans, else from the lane's [`KindSummary`].
    pub kind: Option<SpanKind>,
}

/// Most columns [`Timeline::buckets`] computes in one call.
pub const MAX_BUCKETS: usize = 1 << 16;

/// Columns holding at most this many spans get their dominant kind from an
/// exact walk over those spans; busier columns use the [`KindSummary`].
pub const EXACT_KIND_SPANS: usize = 32;

/// Busy time per kind over a lane, as prefix sums: the lane's time range
/// is cut into bins of `2^shift` ns (sized so that there are about half as
/// many cells, bins x kinds, as spans) and each cell holds the busy ns of
/// one kind in every bin before it. The busy time of a kind up to an
/// instant is then the cell of the bin holding it plus a proportional share
/// of that bin ([`KindSummary::cumulative`]), so a time range costs two
/// lookups per kind, and adjacent columns share the lookup at their common
/// edge. Lanes with a single kind keep no bins.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KindSummary {
    /// Kinds present on the lane, in [`SpanKind::ALL`] order.
    kinds: Vec<SpanKind>,
    /// Start of bin 0, ns (a multiple of the bin width).
    origin: u64,
    /// log2 of the bin width, ns.
    shift: u32,
    /// `cum[bin * kinds + k]`: busy ns of kind `kinds[k]` in bins
    /// `0..bin` (`bins + 1` rows; saturating).
    cum: Vec<u64>,
}

/// Busy ns per kind up to an instant, indexed like [`KindSummary`]'s kinds.
type KindTotals = [f64; SpanKind::ALL.len()];

impl KindSummary {
    fn build(spans: &[Span], lane_end: u64) -> KindSummary {
        let mut present = [false; SpanKind::ALL.len()];
        for s in spans {
            present[s.kind as usize] = true;
        }
        let kinds: Vec<SpanKind> = SpanKind::ALL
            .iter()
            .copied()
            .filter(|k| present[*k as usize])
            .collect();
        let nk = kinds.len();
        if nk <= 1 {
            return KindSummary {
                kinds,
                ..KindSummary::default()
            };
        }
        let mut slot = [0usize; SpanKind::ALL.len()];
        for (i, k) in kinds.iter().enumerate() {
            slot[*k as usize] = i;
        }
        let first = spans.first().map_or(0, |s| s.start_ns);
        let target = (spans.len() / (2 * nk)).max(1) as u64;
        let mut shift = 0u32;
        while shift < 63 && ((lane_end - first) >> shift) >= target {
            shift += 1;
        }
        let origin = (first >> shift) << shift;
        let bins = (((lane_end - origin) >> shift) + 1) as usize;
        let w = 1u64 << shift;
        let sat = |x: u128| u64::try_from(x).unwrap_or(u64::MAX);
        // Row `b + 1` of `cum` first holds bin `b`'s own busy time.
        let mut cum = vec![0u64; (bins + 1) * nk];
        // Bins a span covers entirely: counted with a difference array,
        // so a long span costs O(1) however many bins it covers.
        let mut full = vec![0i32; (bins + 1) * nk];
        for s in spans {
            let k = slot[s.kind as usize];
            let (a, e) = (s.start_ns - origin, s.end_ns() - origin);
            if e <= a {
                continue;
            }
            let (b0, b1) = ((a >> shift) as usize, ((e - 1) >> shift) as usize);
            let cell = |b: usize| (b + 1) * nk + k;
            if b0 == b1 {
                cum[cell(b0)] = cum[cell(b0)].saturating_add(e - a);
                continue;
            }
            let edge = |b: usize| (b as u128) << shift;
            cum[cell(b0)] = cum[cell(b0)].saturating_add(sat(edge(b0 + 1) - u128::from(a)));
            cum[cell(b1)] = cum[cell(b1)].saturating_add(sat(u128::from(e) - edge(b1)));
            if b1 > b0 + 1 {
                full[(b0 + 1) * nk + k] += 1;
                full[b1 * nk + k] -= 1;
            }
        }
        let mut run = vec![0i64; nk];
        for b in 0..bins {
            for k in 0..nk {
                run[k] += i64::from(full[b * nk + k]);
                let whole = (run[k].max(0) as u64).saturating_mul(w);
                let own = cum[(b + 1) * nk + k].saturating_add(whole);
                cum[(b + 1) * nk + k] = cum[b * nk + k].saturating_add(own);
            }
        }
        KindSummary {
            kinds,
            origin,
            shift,
            cum,
        }
    }

    /// Number of bins (0 for a lane with a single kind).
    fn bins(&self) -> usize {
        (self.cum.len() / self.kinds.len().max(1)).saturating_sub(1)
    }

    /// Approximate busy ns per kind (indexed like the lane's kinds) before
    /// `t`: whole bins exactly, the bin holding `t` in proportion; written
    /// to `out`. Lanes with a single kind count every ns (`t` itself).
    fn cumulative(&self, t: u64, out: &mut KindTotals) {
        let nk = self.kinds.len();
        let bins = self.bins();
        if bins == 0 {
            out[0] = t as f64;
            return;
        }
        let w = (1u64 << self.shift) as f64;
        let x = (t.saturating_sub(self.origin) as f64 / w).min(bins as f64);
        let i = (x.floor() as usize).min(bins);
        let frac = x - i as f64;
        let row = self.cum.get(i * nk..(i + 1) * nk).unwrap_or(&[]);
        let next = self.cum.get((i + 1) * nk..(i + 2) * nk).unwrap_or(row);
        for ((o, &c), &n) in out.iter_mut().zip(row).zip(next) {
            *o = c as f64 + frac * n.saturating_sub(c) as f64;
        }
    }

    /// Approximate busy ns per kind (indexed like [`SpanKind::ALL`]) in
    /// `[a, b)`, added to `out`, from the cumulative totals at both ends.
    fn add_between(&self, at_a: &KindTotals, at_b: &KindTotals, out: &mut KindTotals) {
        for (k, kind) in self.kinds.iter().enumerate() {
            out[*kind as usize] += (at_b[k] - at_a[k]).max(0.0);
        }
    }

    /// Bytes held.
    fn heap_bytes(&self) -> usize {
        self.kinds.len() + self.cum.len() * 8 + 24
    }
}

/// The partition point of `v` under `pred` (true on a prefix of `v`),
/// known to be at least `from`: a galloping search from `from` (steps of
/// 1, 2, 4, ... then a binary search in the last step), so finding a point
/// `d` places on costs O(log d) and touches memory near `from`.
fn gallop<T>(v: &[T], from: usize, pred: impl Fn(&T) -> bool) -> usize {
    let (mut lo, mut probe, mut step) = (from.min(v.len()), from, 1usize);
    while let Some(x) = v.get(probe) {
        if !pred(x) {
            break;
        }
        lo = probe + 1;
        probe = probe.saturating_add(step);
        step = step.saturating_mul(2);
    }
    let hi = probe.min(v.len()).max(lo);
    lo + v.get(lo..hi).map_or(0, |s| s.partition_point(pred))
}

/// What a counter lane's values count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterUnit {
    /// Bytes (a model-level job's activation memory, from the memory model).
    Bytes,
    /// Micro-batches whose activations are held (fractions: chunks of
    /// interleaved or V-shaped schedules).
    MicroBatches,
}

impl CounterUnit {
    /// Stable name (JSON, the Chrome trace's counter argument): `bytes`,
    /// `micro_batches`.
    pub fn name(self) -> &'static str {
        match self {
            CounterUnit::Bytes => "bytes",
            CounterUnit::MicroBatches => "micro_batches",
        }
    }
}

/// From `time_ns` on, a counter holds `value`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterPoint {
    pub time_ns: u64,
    pub value: f64,
}

/// A counter lane: a step function over the iteration, 0 before its first
/// point, drawn in the lane group (`group_kind`, `group`) as a filled step
/// area.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterLane {
    pub group_kind: LaneGroup,
    /// Stage index (`Stage`) or global rank (`Rank`).
    pub group: u32,
    /// Pipeline stage of the group.
    pub stage: u32,
    /// `stage 3 / activation memory`.
    pub name: String,
    pub unit: CounterUnit,
    /// Every change, in time order, one point per instant.
    pub points: Vec<CounterPoint>,
    /// Where the series first reaches its largest value and what is
    /// resident then (`None`: nothing held). Always serialised (the page's
    /// worker sends timelines as bincode, which needs every field).
    #[serde(default)]
    pub peak: Option<CounterPeak>,
}

/// A counter lane's peak: when it is first reached, the micro-batches
/// whose activations are held then, and, for a model-level job, the
/// memory model's parts resident at that moment (empty otherwise).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterPeak {
    pub time_ns: u64,
    pub micro_batches_in_flight: f64,
    /// `(part, bytes)` in the memory report's order: weights, gradients,
    /// optimizer, activations, logits, buffers.
    #[serde(default)]
    pub resident: Vec<ResidentPart>,
}

/// One part of memory resident at a peak.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidentPart {
    /// `weights`, `gradients`, `optimizer`, `activations`, `logits`,
    /// `unsharded_unit`, `buffers`.
    pub name: String,
    pub size_bytes: u64,
}

impl CounterLane {
    /// The largest value (0 for an empty series).
    pub fn max_value(&self) -> f64 {
        self.points.iter().map(|p| p.value).fold(0.0, f64::max)
    }

    /// The value at `time_ns` (0 before the first point).
    pub fn value_at(&self, time_ns: u64) -> f64 {
        match self.points.partition_point(|p| p.time_ns <= time_ns) {
            0 => 0.0,
            i => self.points[i - 1].value,
        }
    }

    /// The points that shape `[start_ns, end_ns)`: the one in force at
    /// `start_ns` (if any) and every later one before `end_ns` (a binary
    /// search, then a slice).
    pub fn points_in(&self, start_ns: u64, end_ns: u64) -> &[CounterPoint] {
        let a = self
            .points
            .partition_point(|p| p.time_ns <= start_ns)
            .saturating_sub(1);
        let b = self.points.partition_point(|p| p.time_ns < end_ns);
        self.points.get(a..b.max(a)).unwrap_or(&[])
    }
}

/// A stage-to-stage transfer: the send span and the receive span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    pub from: SpanRef,
    pub to: SpanRef,
    pub bytes: u64,
    pub micro_batch: u32,
}

/// The timeline of one run. Serialises as lanes, labels, spans per lane,
/// flows, dependencies (`[to, from]` pairs) and the critical path;
/// deserialising rebuilds the indexes (a round trip gives an equal
/// timeline; references out of range are dropped, never a panic).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Timeline {
    lanes: Vec<Lane>,
    spans: Vec<Vec<Span>>,
    max_end: Vec<Vec<u64>>,
    dur_prefix: Vec<Vec<u64>>,
    kind_summary: Vec<KindSummary>,
    lane_offset: Vec<u32>,
    labels: Vec<String>,
    flows: Vec<Flow>,
    dep_offset: Vec<u32>,
    deps: Vec<SpanRef>,
    critical_path: Vec<SpanRef>,
    /// Per lane, the indices of its critical-path spans, ascending.
    critical_lane: Vec<Vec<u32>>,
    counters: Vec<CounterLane>,
    end_ns: u64,
}

impl Timeline {
    /// The counter lanes (activation memory per stage of a simulated run;
    /// none for measured runs).
    pub fn counters(&self) -> &[CounterLane] {
        &self.counters
    }

    /// Replace the counter lanes (a model-level job's series in bytes
    /// replace the simulator's micro-batches).
    pub fn set_counters(&mut self, counters: Vec<CounterLane>) {
        self.counters = counters;
    }

    /// The lanes.
    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    /// Spans of `lane`, sorted by start (empty for an unknown lane).
    pub fn spans(&self, lane: u32) -> &[Span] {
        self.spans.get(lane as usize).map_or(&[], |v| v.as_slice())
    }

    /// The span at `r`.
    pub fn span(&self, r: SpanRef) -> Option<&Span> {
        self.spans.get(r.lane as usize)?.get(r.index as usize)
    }

    /// Text of a label.
    pub fn label(&self, id: LabelId) -> &str {
        self.labels.get(id.0 as usize).map_or("", |s| s.as_str())
    }

    /// Every label, by id.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// Stage-to-stage transfers.
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// The spans `r` waited for (empty when dependencies were not recorded).
    pub fn dependencies(&self, r: SpanRef) -> &[SpanRef] {
        let Some(g) = self.global(r) else {
            return &[];
        };
        match (self.dep_offset.get(g), self.dep_offset.get(g + 1)) {
            (Some(&a), Some(&b)) => &self.deps[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The chain of spans that determines the end, first to last.
    pub fn critical_path(&self) -> &[SpanRef] {
        &self.critical_path
    }

    /// Indices (ascending, so by start) of `lane`'s spans that are on the
    /// critical path (empty for an unknown lane).
    pub fn critical_on_lane(&self, lane: u32) -> &[u32] {
        self.critical_lane
            .get(lane as usize)
            .map_or(&[], |v| v.as_slice())
    }

    /// Latest span end, ns.
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// Number of spans.
    pub fn span_count(&self) -> usize {
        self.spans.iter().map(Vec::len).sum()
    }

    fn global(&self, r: SpanRef) -> Option<usize> {
        let off = *self.lane_offset.get(r.lane as usize)? as usize;
        let len = self.spans.get(r.lane as usize)?.len();
        ((r.index as usize) < len).then_some(off + r.index as usize)
    }

    /// Index range of `lane`'s spans that may overlap [start_ns, end_ns):
    /// every overlapping span is inside, and the walk is proportional to the
    /// spans in view.
    pub fn query_range(&self, lane: u32, start_ns: u64, end_ns: u64) -> std::ops::Range<usize> {
        let (Some(spans), Some(max_end)) = (
            self.spans.get(lane as usize),
            self.max_end.get(lane as usize),
        ) else {
            return 0..0;
        };
        let lo = max_end.partition_point(|e| *e <= start_ns);
        let hi = spans.partition_point(|s| s.start_ns < end_ns);
        lo..hi.max(lo)
    }

    /// Spans of `lane` overlapping [start_ns, end_ns), with their index.
    /// Zero-length spans count when they lie inside the range.
    pub fn query(
        &self,
        lane: u32,
        start_ns: u64,
        end_ns: u64,
    ) -> impl Iterator<Item = (u32, &Span)> + '_ {
        let range = self.query_range(lane, start_ns, end_ns);
        let spans = self.spans(lane);
        range.filter_map(move |i| {
            let s = spans.get(i)?;
            let hit = s.start_ns < end_ns
                && (s.end_ns() > start_ns || (s.duration_ns == 0 && s.start_ns >= start_ns));
            hit.then_some((i as u32, s))
        })
    }

    /// Level of detail: `n` equal columns of [start_ns, end_ns) on `lane`
    /// (n capped at [`MAX_BUCKETS`]), each with the number of spans in it,
    /// its busy time and dominant kind. Cost O(n log spans).
    pub fn buckets(&self, lane: u32, start_ns: u64, end_ns: u64, n: usize) -> Vec<Bucket> {
        if n == 0 || end_ns <= start_ns {
            return Vec::new();
        }
        let width = u128::from(end_ns - start_ns);
        let n = n.min(MAX_BUCKETS);
        self.buckets_with(lane, n, |i| {
            start_ns + (width * i as u128 / n as u128) as u64
        })
    }

    /// Level of detail over caller-given columns: column `i` (of `n`,
    /// capped at [`MAX_BUCKETS`]) is `[edge(i), edge(i + 1))`; `edge` must
    /// not decrease. Empty columns are returned with `spans == 0`. Cost
    /// O(n log spans), at most [`EXACT_KIND_SPANS`] spans walked per column
    /// (see [`Timeline::buckets_into`]).
    pub fn buckets_with(&self, lane: u32, n: usize, edge: impl Fn(usize) -> u64) -> Vec<Bucket> {
        let n = n.min(MAX_BUCKETS);
        if n == 0 {
            return Vec::new();
        }
        let edges: Vec<u64> = (0..=n).map(edge).collect();
        let mut out = Vec::with_capacity(n);
        self.buckets_into(lane, &edges, &mut out);
        out
    }

    /// Level of detail over the columns between consecutive `edges` (column
    /// `i` is `[edges[i], edges[i + 1])`, at most [`MAX_BUCKETS`] of them;
    /// an edge below the one before it is raised to it), written to `out`
    /// (cleared first; empty for an unknown lane). Empty columns have
    /// `spans == 0`. The columns ascend, so each one's span range is found
    /// by a galloping search from the previous one's (cost about the log of
    /// the spans skipped); its busy time is a difference of the lane's
    /// prefix sum of durations; its dominant kind an exact walk when it
    /// holds at most [`EXACT_KIND_SPANS`] spans, else a difference of the
    /// [`KindSummary`]'s cumulative totals at its two edges, each edge
    /// looked up once for both columns that share it.
    pub fn buckets_into(&self, lane: u32, edges: &[u64], out: &mut Vec<Bucket>) {
        out.clear();
        let n = edges.len().saturating_sub(1).min(MAX_BUCKETS);
        let (Some(spans), Some(max_end), Some(prefix), Some(summary)) = (
            self.spans.get(lane as usize),
            self.max_end.get(lane as usize),
            self.dur_prefix.get(lane as usize),
            self.kind_summary.get(lane as usize),
        ) else {
            return;
        };
        if n == 0 {
            return;
        }
        out.reserve(n);
        let overlap =
            |s: &Span, a: u64, b: u64| s.end_ns().min(b).saturating_sub(s.start_ns.max(a));
        // The summary's totals at the last edge looked up: the next
        // column's start is this column's end.
        let mut at_edge: Option<(u64, KindTotals)> = None;
        let mut totals_at = |t: u64| -> KindTotals {
            match at_edge {
                Some((e, v)) if e == t => v,
                _ => {
                    let mut v = [0f64; SpanKind::ALL.len()];
                    summary.cumulative(t, &mut v);
                    at_edge = Some((t, v));
                    v
                }
            }
        };
        let (mut lo, mut hi) = (0usize, 0usize);
        let mut b_next = edges[0];
        for i in 0..n {
            let a = b_next;
            b_next = edges[i + 1].max(a);
            let b = b_next;
            let mut bucket = Bucket {
                start_ns: a,
                end_ns: b,
                spans: 0,
                first: 0,
                busy_ns: 0,
                kind: None,
            };
            // What `query_range` finds, searched from the last column's.
            let (c_lo, c_hi) = if b > a {
                lo = gallop(max_end, lo, |e| *e <= a);
                hi = gallop(spans, hi, |s| s.start_ns < b);
                (lo, hi.max(lo))
            } else {
                (0, 0)
            };
            bucket.spans = (c_hi - c_lo) as u32;
            bucket.first = c_lo as u32;
            let in_col = spans.get(c_lo..c_hi).unwrap_or(&[]);
            if let Some(first) = in_col.first() {
                let (lo, hi) = (c_lo, c_hi);
                // Spans strictly inside count fully; only the first and the
                // last can stick out of the column (lanes without nesting).
                let mut busy = prefix[hi] - prefix[lo];
                busy = busy.saturating_sub(first.duration_ns - overlap(first, a, b));
                if hi - 1 > lo {
                    let last = &spans[hi - 1];
                    busy = busy.saturating_sub(last.duration_ns - overlap(last, a, b));
                }
                bucket.busy_ns = busy.min(b - a);
                let mut per_kind = [0f64; SpanKind::ALL.len()];
                if in_col.len() <= EXACT_KIND_SPANS {
                    for s in in_col {
                        // Zero-length spans weigh a little, so a column of
                        // instants still gets their kind.
                        let w =
                            overlap(s, a, b) as f64 + if s.duration_ns == 0 { 0.5 } else { 0.0 };
                        per_kind[s.kind as usize] += w;
                    }
                } else {
                    let at_a = totals_at(a);
                    let at_b = totals_at(b);
                    summary.add_between(&at_a, &at_b, &mut per_kind);
                }
                let mut best: Option<(f64, SpanKind)> = None;
                for (k, w) in SpanKind::ALL.iter().zip(per_kind) {
                    if w > 0.0 && best.is_none_or(|(bw, _)| w > bw) {
                        best = Some((w, *k));
                    }
                }
                // A summary may see no time where a nested lane's spans lie
                // (rounding): fall back to the first span's kind.
                bucket.kind = Some(best.map_or(first.kind, |(_, k)| k));
            }
            out.push(bucket);
        }
    }

    /// Approximate memory held, bytes (spans, indexes, flows, dependencies).
    pub fn heap_bytes(&self) -> usize {
        let spans = self.span_count();
        spans * (std::mem::size_of::<Span>() + 16)
            + self.flows.len() * std::mem::size_of::<Flow>()
            + self.dep_offset.len() * 4
            + self.deps.len() * std::mem::size_of::<SpanRef>()
            + self.labels.iter().map(|l| l.len() + 24).sum::<usize>()
            + self
                .kind_summary
                .iter()
                .map(KindSummary::heap_bytes)
                .sum::<usize>()
            + self
                .critical_lane
                .iter()
                .map(|c| c.len() * 4 + 24)
                .sum::<usize>()
            + self
                .counters
                .iter()
                .map(|c| c.points.len() * std::mem::size_of::<CounterPoint>() + c.name.len() + 48)
                .sum::<usize>()
    }
}

/// Builds a [`Timeline`]: add lanes, intern labels, push spans in any order,
/// refer to them by the provisional [`SpanRef`] `push` returns; `build`
/// sorts each lane by start and rewrites every reference.
#[derive(Debug, Clone, Default)]
pub struct TimelineBuilder {
    lanes: Vec<Lane>,
    spans: Vec<Vec<Span>>,
    labels: Vec<String>,
    label_ids: BTreeMap<String, u32>,
    flows: Vec<Flow>,
    deps: Vec<(SpanRef, SpanRef)>,
    critical_path: Vec<SpanRef>,
    counters: Vec<CounterLane>,
}

impl TimelineBuilder {
    /// An empty builder.
    pub fn new() -> TimelineBuilder {
        TimelineBuilder::default()
    }

    /// Add a lane; returns its index.
    pub fn lane(&mut self, lane: Lane) -> u32 {
        self.lanes.push(lane);
        self.spans.push(Vec::new());
        (self.lanes.len() - 1) as u32
    }

    /// Intern `text`.
    pub fn label(&mut self, text: &str) -> LabelId {
        if let Some(id) = self.label_ids.get(text) {
            return LabelId(*id);
        }
        let id = self.labels.len() as u32;
        self.labels.push(text.to_string());
        self.label_ids.insert(text.to_string(), id);
        LabelId(id)
    }

    /// Room for `additional` more spans on `lane` (none for an unknown
    /// lane).
    pub fn reserve(&mut self, lane: u32, additional: usize) {
        if let Some(v) = self.spans.get_mut(lane as usize) {
            v.reserve_exact(additional);
        }
    }

    /// Add a span to `lane` (ignored for an unknown lane: returns lane NONE).
    pub fn push(&mut self, lane: u32, span: Span) -> SpanRef {
        match self.spans.get_mut(lane as usize) {
            Some(v) => {
                v.push(span);
                SpanRef {
                    lane,
                    index: (v.len() - 1) as u32,
                }
            }
            None => SpanRef {
                lane: u32::MAX,
                index: u32::MAX,
            },
        }
    }

    /// Add a flow between two pushed spans.
    pub fn flow(&mut self, flow: Flow) {
        self.flows.push(flow);
    }

    /// Record that `to` waited for `from`.
    pub fn dependency(&mut self, from: SpanRef, to: SpanRef) {
        self.deps.push((from, to));
    }

    /// Set the critical path (provisional references, first to last).
    pub fn critical_path(&mut self, path: Vec<SpanRef>) {
        self.critical_path = path;
    }

    /// Add a counter lane.
    pub fn counter(&mut self, counter: CounterLane) {
        self.counters.push(counter);
    }

    /// Sort, index and remap.
    pub fn build(self) -> Timeline {
        let mut remap: Vec<Vec<u32>> = Vec::with_capacity(self.spans.len());
        let mut spans = Vec::with_capacity(self.spans.len());
        let mut max_end = Vec::with_capacity(self.spans.len());
        let mut dur_prefix = Vec::with_capacity(self.spans.len());
        let mut kind_summary = Vec::with_capacity(self.spans.len());
        let mut lane_offset = Vec::with_capacity(self.spans.len() + 1);
        let mut end_ns = 0u64;
        let mut total = 0u32;
        for lane in self.spans {
            let mut order: Vec<u32> = (0..lane.len() as u32).collect();
            order.sort_by_key(|&i| {
                let s = &lane[i as usize];
                (s.start_ns, s.end_ns(), i)
            });
            let mut back = vec![0u32; lane.len()];
            for (new, &old) in order.iter().enumerate() {
                back[old as usize] = new as u32;
            }
            let sorted: Vec<Span> = order.iter().map(|&i| lane[i as usize]).collect();
            let mut run = 0u64;
            let me: Vec<u64> = sorted
                .iter()
                .map(|s| {
                    run = run.max(s.end_ns());
                    run
                })
                .collect();
            end_ns = end_ns.max(run);
            let mut acc = 0u64;
            let mut pre = Vec::with_capacity(sorted.len() + 1);
            pre.push(0);
            for s in &sorted {
                acc = acc.saturating_add(s.duration_ns);
                pre.push(acc);
            }
            dur_prefix.push(pre);
            kind_summary.push(KindSummary::build(&sorted, run));
            lane_offset.push(total);
            total = total.saturating_add(sorted.len() as u32);
            remap.push(back);
            spans.push(sorted);
            max_end.push(me);
        }
        lane_offset.push(total);
        let fix = |r: SpanRef| -> Option<SpanRef> {
            let idx = *remap.get(r.lane as usize)?.get(r.index as usize)?;
            Some(SpanRef {
                lane: r.lane,
                index: idx,
            })
        };
        let flows = self
            .flows
            .iter()
            .filter_map(|f| {
                Some(Flow {
                    from: fix(f.from)?,
                    to: fix(f.to)?,
                    ..*f
                })
            })
            .collect();
        let critical_path: Vec<SpanRef> =
            self.critical_path.iter().filter_map(|r| fix(*r)).collect();
        let mut critical_lane: Vec<Vec<u32>> = vec![Vec::new(); spans.len()];
        for r in &critical_path {
            critical_lane[r.lane as usize].push(r.index);
        }
        for c in &mut critical_lane {
            c.sort_unstable();
            c.dedup();
            c.shrink_to_fit();
        }
        // Dependencies: remapped in place (no second edge list, which keeps
        // the peak memory of a million-span build down), sorted by the
        // waiting span (the order of (lane, index) is the global order).
        let mut edges = self.deps;
        edges.retain_mut(|(from, to)| match (fix(*from), fix(*to)) {
            (Some(f), Some(t)) => {
                *from = f;
                *to = t;
                true
            }
            _ => false,
        });
        drop(remap);
        edges.sort_unstable_by_key(|&(from, to)| (to, from));
        edges.dedup();
        let mut dep_offset = Vec::new();
        let mut deps = Vec::new();
        if !edges.is_empty() {
            dep_offset = vec![0u32; total as usize + 1];
            for (_, to) in &edges {
                let g = lane_offset[to.lane as usize] as usize + to.index as usize;
                dep_offset[g + 1] += 1;
            }
            for i in 0..total as usize {
                dep_offset[i + 1] += dep_offset[i];
            }
            deps = edges.iter().map(|&(from, _)| from).collect();
        }
        Timeline {
            lanes: self.lanes,
            spans,
            max_end,
            dur_prefix,
            kind_summary,
            lane_offset,
            labels: self.labels,
            flows,
            dep_offset,
            deps,
            critical_path,
            critical_lane,
            counters: self.counters,
            end_ns,
        }
    }
}

/// The serialised form of a [`Timeline`].
#[derive(Serialize)]
struct TimelineView<'a> {
    lanes: &'a [Lane],
    labels: &'a [String],
    spans: &'a [Vec<Span>],
    flows: &'a [Flow],
    dependencies: Vec<[SpanRef; 2]>,
    critical_path: &'a [SpanRef],
    counters: &'a [CounterLane],
}

/// What [`Timeline`] deserialises from.
#[derive(Deserialize)]
struct TimelineData {
    lanes: Vec<Lane>,
    labels: Vec<String>,
    spans: Vec<Vec<Span>>,
    #[serde(default)]
    flows: Vec<Flow>,
    #[serde(default)]
    dependencies: Vec<[SpanRef; 2]>,
    #[serde(default)]
    critical_path: Vec<SpanRef>,
    #[serde(default)]
    counters: Vec<CounterLane>,
}

impl Serialize for Timeline {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut dependencies = Vec::with_capacity(self.deps.len());
        for (li, lane) in self.spans.iter().enumerate() {
            for i in 0..lane.len() {
                let to = SpanRef {
                    lane: li as u32,
                    index: i as u32,
                };
                for from in self.dependencies(to) {
                    dependencies.push([to, *from]);
                }
            }
        }
        TimelineView {
            lanes: &self.lanes,
            labels: &self.labels,
            spans: &self.spans,
            flows: &self.flows,
            dependencies,
            critical_path: &self.critical_path,
            counters: &self.counters,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Timeline {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Timeline, D::Error> {
        let data = TimelineData::deserialize(d)?;
        let mut tb = TimelineBuilder::new();
        for lane in data.lanes {
            tb.lane(lane);
        }
        // Labels keep their ids (no re-interning).
        tb.labels = data.labels;
        for (li, spans) in data.spans.into_iter().enumerate() {
            for span in spans {
                tb.push(li as u32, span);
            }
        }
        for f in data.flows {
            tb.flow(f);
        }
        for [to, from] in data.dependencies {
            tb.dependency(from, to);
        }
        tb.critical_path(data.critical_path);
        for c in data.counters {
            tb.counter(c);
        }
        Ok(tb.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: u64, dur: u64) -> Span {
        Span {
            start_ns: start,
            duration_ns: dur,
            bytes: 0,
            label: LabelId(0),
            layer: Span::NONE,
            micro_batch: Span::NONE,
            kind: SpanKind::Compute,
            coll: CollOp::None,
            chunk: 0,
        }
    }

    #[test]
    fn span_is_compact() {
        assert!(std::mem::size_of::<Span>() <= 48);
    }

    #[test]
    fn query_finds_overlaps_even_with_nesting() {
        let mut b = TimelineBuilder::new();
        let l = b.lane(Lane {
            group_kind: LaneGroup::Rank,
            group: 0,
            stage: 0,
            stream: Stream::Compute,
            name: "r0".into(),
        });
        b.push(l, span(50, 10));
        b.push(l, span(0, 100)); // encloses the others
        b.push(l, span(20, 5));
        b.push(l, span(200, 0));
        let t = b.build();
        let hits: Vec<u64> = t.query(l, 55, 58).map(|(_, s)| s.start_ns).collect();
        assert_eq!(hits, vec![0, 50]);
        let hits: Vec<u64> = t.query(l, 100, 300).map(|(_, s)| s.start_ns).collect();
        assert_eq!(hits, vec![200]);
        assert_eq!(t.query(l, 101, 199).count(), 0);
        assert_eq!(t.end_ns(), 200);
    }

    #[test]
    fn build_remaps_refs() {
        let mut b = TimelineBuilder::new();
        let mk = |b: &mut TimelineBuilder, s| {
            b.lane(Lane {
                group_kind: LaneGroup::Stage,
                group: s,
                stage: s,
                stream: Stream::Send,
                name: String::new(),
            })
        };
        let (l0, l1) = (mk(&mut b, 0), mk(&mut b, 1));
        let late = b.push(l0, span(10, 1));
        let early = b.push(l0, span(0, 1));
        let r = b.push(l1, span(10, 1));
        b.flow(Flow {
            from: late,
            to: r,
            bytes: 8,
            micro_batch: 0,
        });
        b.dependency(early, r);
        let t = b.build();
        assert_eq!(t.flows()[0].from, SpanRef { lane: l0, index: 1 });
        assert_eq!(
            t.dependencies(SpanRef { lane: l1, index: 0 }),
            &[SpanRef { lane: l0, index: 0 }]
        );
        assert_eq!(b_label_roundtrip(), "x");
    }

    #[test]
    fn buckets_match_brute_force() {
        let mut b = TimelineBuilder::new();
        let l = b.lane(Lane {
            group_kind: LaneGroup::Stage,
            group: 0,
            stage: 0,
            stream: Stream::Compute,
            name: String::new(),
        });
        // Deterministic pseudo-random non-overlapping spans.
        let mut t = 0u64;
        let mut x = 12345u64;
        for i in 0..500 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t += (x >> 33) % 50;
            let d = (x >> 40) % 80;
            let mut s = span(t, d);
            s.kind = if i % 3 == 0 {
                SpanKind::Forward
            } else {
                SpanKind::CollTp
            };
            b.push(l, s);
            t += d;
        }
        let tl = b.build();
        for n in [1usize, 7, 64, 1000] {
            let (a, e) = (13u64, tl.end_ns() + 5);
            let bs = tl.buckets(l, a, e, n);
            assert_eq!(bs.len(), n);
            assert_eq!(bs[0].start_ns, a);
            assert_eq!(bs[n - 1].end_ns, e);
            let mut total = 0;
            for k in &bs {
                let hits: Vec<&Span> = tl
                    .spans(l)
                    .iter()
                    .filter(|s| s.start_ns < k.end_ns && s.end_ns() > k.start_ns)
                    .collect();
                assert_eq!(k.spans as usize, hits.len(), "{k:?}");
                let busy: u64 = hits
                    .iter()
                    .map(|s| s.end_ns().min(k.end_ns) - s.start_ns.max(k.start_ns))
                    .sum();
                assert_eq!(k.busy_ns, busy, "{k:?}");
                assert_eq!(k.kind.is_some(), !hits.is_empty());
                total += k.busy_ns;
            }
            let all: u64 = tl
                .spans(l)
                .iter()
                .map(|s| s.end_ns().min(e) - s.start_ns.max(a).min(s.end_ns().min(e)))
                .sum();
            assert_eq!(total, all);
        }
        assert!(tl.buckets(l, 10, 10, 5).is_empty());
        assert_eq!(tl.buckets(l, 0, 100, usize::MAX).len(), MAX_BUCKETS);
    }

    #[test]
    fn counter_lane_is_a_step_function() {
        let pts = |v: &[(u64, f64)]| {
            v.iter()
                .map(|&(time_ns, value)| CounterPoint { time_ns, value })
                .collect::<Vec<_>>()
        };
        let c = CounterLane {
            group_kind: LaneGroup::Stage,
            group: 1,
            stage: 1,
            name: String::new(),
            unit: CounterUnit::Bytes,
            peak: None,
            points: pts(&[(10, 2.0), (20, 5.0), (30, 1.0)]),
        };
        assert_eq!(c.max_value(), 5.0);
        assert_eq!(c.value_at(0), 0.0);
        assert_eq!(c.value_at(10), 2.0);
        assert_eq!(c.value_at(29), 5.0);
        assert_eq!(c.value_at(1000), 1.0);
        // The point in force at the window's start and the later ones.
        assert_eq!(c.points_in(25, 35), &c.points[1..3]);
        assert_eq!(c.points_in(0, 15), &c.points[0..1]);
        assert_eq!(c.points_in(0, 10), &c.points[0..0]);
        assert_eq!(c.points_in(40, 50), &c.points[2..3]);
    }

    #[test]
    fn serde_round_trip_is_identity() {
        let mut b = TimelineBuilder::new();
        let l0 = b.lane(Lane {
            group_kind: LaneGroup::Stage,
            group: 0,
            stage: 0,
            stream: Stream::Send,
            name: "s0".into(),
        });
        let l1 = b.lane(Lane {
            group_kind: LaneGroup::Stage,
            group: 1,
            stage: 1,
            stream: Stream::Recv,
            name: "s1".into(),
        });
        let x = b.label("x");
        let y = b.label("y");
        let a = b.push(
            l0,
            Span {
                label: y,
                ..span(10, 5)
            },
        );
        let c = b.push(l0, span(10, 5));
        let r = b.push(
            l1,
            Span {
                label: x,
                ..span(15, 2)
            },
        );
        b.flow(Flow {
            from: a,
            to: r,
            bytes: 8,
            micro_batch: 0,
        });
        b.dependency(c, r);
        b.dependency(a, r);
        b.critical_path(vec![c, r]);
        b.counter(CounterLane {
            group_kind: LaneGroup::Stage,
            group: 0,
            stage: 0,
            name: "stage 0 / activation memory".into(),
            unit: CounterUnit::MicroBatches,
            points: vec![
                CounterPoint {
                    time_ns: 10,
                    value: 1.5,
                },
                CounterPoint {
                    time_ns: 15,
                    value: 0.0,
                },
            ],
            peak: Some(CounterPeak {
                time_ns: 10,
                micro_batches_in_flight: 1.5,
                resident: vec![ResidentPart {
                    name: "weights".into(),
                    size_bytes: 7,
                }],
            }),
        });
        let t = b.build();
        assert_eq!(t.counters().len(), 1);
        let json = serde_json::to_string(&t).unwrap();
        let back: Timeline = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        // Out-of-range references are dropped, not a panic.
        let bad = r#"{"lanes":[],"labels":[],"spans":[[]],"flows":[{"from":{"lane":9,"index":0},"to":{"lane":0,"index":0},"bytes":0,"micro_batch":0}],"dependencies":[],"critical_path":[{"lane":3,"index":3}]}"#;
        let t: Timeline = serde_json::from_str(bad).unwrap();
        assert!(t.flows().is_empty() && t.critical_path().is_empty());
    }

    fn one_lane() -> (TimelineBuilder, u32) {
        let mut b = TimelineBuilder::new();
        let l = b.lane(Lane {
            group_kind: LaneGroup::Stage,
            group: 0,
            stage: 0,
            stream: Stream::Compute,
            name: String::new(),
        });
        (b, l)
    }

    fn kinded(start: u64, dur: u64, kind: SpanKind) -> Span {
        Span {
            kind,
            ..span(start, dur)
        }
    }

    #[test]
    fn dominant_kind_is_the_one_with_most_time_not_a_sample() {
        // Column [0, 100): 3 tiny B spans, one long A span, 7 tiny B spans.
        // The first, middle and last spans are all B; A has most time.
        let (mut b, l) = one_lane();
        for t in 0..3 {
            b.push(l, kinded(t, 1, SpanKind::CollTp));
        }
        b.push(l, kinded(3, 77, SpanKind::Forward));
        for t in 0..7 {
            b.push(l, kinded(81 + 2 * t, 1, SpanKind::CollTp));
        }
        let tl = b.build();
        let bs = tl.buckets(l, 0, 100, 1);
        assert_eq!(bs[0].spans, 11);
        assert_eq!(bs[0].kind, Some(SpanKind::Forward));
        // Ten tiny B spans and a long A span: A.
        let (mut b, l) = one_lane();
        for t in 0..10 {
            let at = if t < 5 { 2 * t } else { 70 + 2 * t };
            b.push(l, kinded(at, 1, SpanKind::CollTp));
        }
        b.push(l, kinded(20, 50, SpanKind::Forward));
        let tl = b.build();
        assert_eq!(tl.buckets(l, 0, 100, 1)[0].kind, Some(SpanKind::Forward));
        // Extreme times: no overflow in the summary.
        let (mut b, l) = one_lane();
        b.push(l, kinded(u64::MAX - 10, 5, SpanKind::Recv));
        b.push(l, kinded(0, 0, SpanKind::Wait));
        b.push(l, kinded(1 << 62, u64::MAX, SpanKind::CollEp));
        for i in 0..100 {
            b.push(l, kinded(1000 + i, 1, SpanKind::Wait));
        }
        let tl = b.build();
        assert_eq!(tl.buckets(l, 0, 1 << 60, 2)[0].kind, Some(SpanKind::Wait));
        let bs = tl.buckets(l, 1 << 62, u64::MAX, 3);
        assert!(
            bs.iter().all(|k| k.kind == Some(SpanKind::CollEp)),
            "{bs:?}"
        );
    }

    #[test]
    fn dominant_kind_of_busy_columns_comes_from_the_summary() {
        // 2000 columns' worth of data: per block of 1000 ns, 200 tiny B
        // spans (1 ns each) around one A span of 600 ns; then blocks of
        // only B. Columns span many blocks (summary path).
        let (mut b, l) = one_lane();
        for blk in 0..400u64 {
            let t0 = blk * 1000;
            for i in 0..100 {
                b.push(l, kinded(t0 + i, 1, SpanKind::CollTp));
            }
            if blk < 200 {
                b.push(l, kinded(t0 + 200, 600, SpanKind::Forward));
            }
            for i in 0..100 {
                b.push(l, kinded(t0 + 850 + i, 1, SpanKind::CollTp));
            }
        }
        let tl = b.build();
        let bs = tl.buckets(l, 0, 400_000, 8);
        for (i, k) in bs.iter().enumerate() {
            assert!(k.spans as usize > EXACT_KIND_SPANS);
            let want = if i < 4 {
                SpanKind::Forward
            } else {
                SpanKind::CollTp
            };
            assert_eq!(k.kind, Some(want), "column {i}: {k:?}");
        }
        // The summary is small: about half an 8-byte cell per span.
        let extra = tl.kind_summary[0].heap_bytes();
        assert!(extra <= tl.span_count() * 6, "{extra} bytes");
        // Columns that cut bins anywhere still pick the right kind.
        let bs = tl.buckets(l, 1_234, 151_234, 3);
        assert!(
            bs.iter().all(|k| k.kind == Some(SpanKind::Forward)),
            "{bs:?}"
        );
    }

    /// A random lane of `rng`: up to 400 spans (overlapping, some of zero
    /// length) of one to four kinds.
    fn random_lane(rng: &mut crate::rng::SplitMix64) -> Timeline {
        let (mut b, l) = one_lane();
        let kinds = 1 + (rng.next_u64() % 4) as usize;
        let first = (rng.next_u64() % SpanKind::ALL.len() as u64) as usize;
        let n = 1 + rng.next_u64() % 400;
        let reach = 1 + rng.next_u64() % 200_000;
        for _ in 0..n {
            let kind =
                SpanKind::ALL[(first + (rng.next_u64() as usize % kinds)) % SpanKind::ALL.len()];
            let start = rng.next_u64() % reach;
            let dur = match rng.next_u64() % 8 {
                0 => 0,
                1 => rng.next_u64() % (reach / 4 + 1),
                _ => rng.next_u64() % 300,
            };
            b.push(l, kinded(start, dur, kind));
        }
        b.build()
    }

    #[test]
    fn kind_summary_prefix_sums_equal_a_naive_walk() {
        // Property-style over seeded random lanes: a column's per-kind
        // busy time from two cumulative lookups equals a naive walk that
        // measures each kind's exact busy time in every bin and takes the
        // share of each bin the column covers; on bin-aligned columns both
        // equal the spans' exact busy time.
        let mut rng = crate::rng::SplitMix64::new(28);
        for case in 0..200 {
            let tl = random_lane(&mut rng);
            let ks = &tl.kind_summary[0];
            let spans = tl.spans(0);
            let overlap =
                |s: &Span, a: u64, b: u64| s.end_ns().min(b).saturating_sub(s.start_ns.max(a));
            let exact = |a: u64, b: u64| {
                let mut v = [0f64; SpanKind::ALL.len()];
                for s in spans {
                    v[s.kind as usize] += overlap(s, a, b) as f64;
                }
                v
            };
            let column = |a: u64, b: u64| {
                let (mut at_a, mut at_b) =
                    ([0f64; SpanKind::ALL.len()], [0f64; SpanKind::ALL.len()]);
                ks.cumulative(a, &mut at_a);
                ks.cumulative(b, &mut at_b);
                let mut v = [0f64; SpanKind::ALL.len()];
                ks.add_between(&at_a, &at_b, &mut v);
                v
            };
            let end = tl.end_ns() + 10;
            if ks.bins() == 0 {
                // One kind: every ns of the column counts for it.
                assert!(ks.kinds.len() <= 1, "case {case}");
                let v = column(3, end);
                let want = if ks.kinds.is_empty() {
                    0.0
                } else {
                    (end - 3) as f64
                };
                assert_eq!(v.iter().sum::<f64>(), want, "case {case}");
                continue;
            }
            let w = 1u64 << ks.shift;
            let bins = ks.bins() as u64;
            let bin_exact: Vec<[f64; SpanKind::ALL.len()]> = (0..bins)
                .map(|i| exact(ks.origin + i * w, ks.origin + (i + 1) * w))
                .collect();
            let naive = |a: u64, b: u64| {
                let mut v = [0f64; SpanKind::ALL.len()];
                for (i, cell) in bin_exact.iter().enumerate() {
                    let (b0, b1) = (ks.origin + i as u64 * w, ks.origin + (i as u64 + 1) * w);
                    let share = b.min(b1).saturating_sub(a.max(b0)) as f64 / w as f64;
                    for (o, c) in v.iter_mut().zip(cell) {
                        *o += c * share;
                    }
                }
                v
            };
            for _ in 0..20 {
                let a = rng.next_u64() % end;
                let b = a + rng.next_u64() % (end - a + 1);
                let (got, want) = (column(a, b), naive(a, b));
                for k in 0..SpanKind::ALL.len() {
                    assert!(
                        (got[k] - want[k]).abs() <= 1e-6 * want[k].max(1.0),
                        "case {case}, [{a}, {b}), kind {k}: {} vs {}",
                        got[k],
                        want[k]
                    );
                }
                // Bin-aligned: the exact busy time, to the ns.
                let (i, j) = (rng.next_u64() % (bins + 1), rng.next_u64() % (bins + 1));
                let (a, b) = (ks.origin + i.min(j) * w, ks.origin + i.max(j) * w);
                assert_eq!(column(a, b), exact(a, b), "case {case}, [{a}, {b})");
            }
        }
    }

    #[test]
    fn buckets_into_finds_what_query_range_finds() {
        // The galloping search from column to column finds each column's
        // span range as a fresh binary search does, on nested lanes, with
        // empty, zero-width and decreasing edges; busy time and counts
        // match a walk over the spans.
        let mut rng = crate::rng::SplitMix64::new(16);
        let mut out = Vec::new();
        for case in 0..200 {
            let tl = random_lane(&mut rng);
            let end = tl.end_ns() + 50;
            let n = 1 + (rng.next_u64() % 300) as usize;
            let mut edges: Vec<u64> = (0..=n).map(|_| rng.next_u64() % end).collect();
            edges.sort_unstable();
            if rng.next_u64().is_multiple_of(4) {
                edges.swap(0, n / 2); // a decreasing edge is raised
            }
            tl.buckets_into(0, &edges, &mut out);
            assert_eq!(out.len(), n, "case {case}");
            let mut a = edges[0];
            for (i, k) in out.iter().enumerate() {
                let b = edges[i + 1].max(a);
                assert_eq!((k.start_ns, k.end_ns), (a, b), "case {case}, column {i}");
                let r = if b > a { tl.query_range(0, a, b) } else { 0..0 };
                assert_eq!(k.spans as usize, r.len(), "case {case}, column {i}");
                if !r.is_empty() {
                    assert_eq!(k.first as usize, r.start, "case {case}, column {i}");
                }
                assert_eq!(k.kind.is_some(), !r.is_empty(), "case {case}, column {i}");
                a = b;
            }
            assert_eq!(tl.buckets_with(0, n, |i| edges[i]), out, "case {case}");
        }
        tl_unknown_lane_is_empty(&mut out);
    }

    fn tl_unknown_lane_is_empty(out: &mut Vec<Bucket>) {
        let (b, _) = one_lane();
        b.build().buckets_into(7, &[0, 10, 20], out);
        assert!(out.is_empty());
    }

    #[test]
    fn critical_path_is_indexed_per_lane() {
        let (mut b, l) = one_lane();
        let late = b.push(l, span(50, 10));
        let early = b.push(l, span(0, 10));
        let _other = b.push(l, span(20, 10));
        b.critical_path(vec![early, late]);
        let t = b.build();
        assert_eq!(t.critical_on_lane(l), &[0, 2]);
        assert!(t.critical_on_lane(9).is_empty());
    }

    fn b_label_roundtrip() -> String {
        let mut b = TimelineBuilder::new();
        let a = b.label("x");
        assert_eq!(b.label("x"), a);
        b.build().label(a).to_string()
    }
}
