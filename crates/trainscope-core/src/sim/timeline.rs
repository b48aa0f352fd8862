//! The timeline model, independent of drawing: lanes (one per rank or stage
//! and stream), spans on them (start, duration, kind, interned label, layer,
//! micro-batch, bytes), flows (stage-to-stage transfers as send span ->
//! receive span), span-to-span dependencies and the critical path.
//!
//! Spans of a lane are sorted by start; a per-lane running maximum of span
//! ends makes [`Timeline::query`] a binary search plus a walk over the
//! visible spans, even when spans of a lane overlap (measured traces with
//! sub-ops). [`Timeline::buckets`] serves level-of-detail drawing: one
//! aggregate per pixel column in O(columns x log spans), whatever the number
//! of spans in view (exact busy time from a per-lane prefix sum of
//! durations, dominant kind from three samples). A [`Span`] is 40 bytes;
//! labels are interned ([`LabelId`]).
//! Measured-run parsers build timelines with [`TimelineBuilder`] too.

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
}

impl Stream {
    /// All streams, in lane order.
    pub const ALL: [Stream; 5] = [
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
        }
    }

    /// Machine name (CSV, JSON): `compute`, `collective`, `grad_sync`,
    /// `send`, `recv`.
    pub fn key(self) -> &'static str {
        match self {
            Stream::Compute => "compute",
            Stream::Collective => "collective",
            Stream::GradSync => "grad_sync",
            Stream::Send => "send",
            Stream::Recv => "recv",
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
}

impl SpanKind {
    /// Every kind, in legend order.
    pub const ALL: [SpanKind; 12] = [
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
    /// The kind covering most of three sampled spans (first, middle, last).
    pub kind: Option<SpanKind>,
}

/// Most columns [`Timeline::buckets`] computes in one call.
pub const MAX_BUCKETS: usize = 1 << 16;

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
    lane_offset: Vec<u32>,
    labels: Vec<String>,
    flows: Vec<Flow>,
    dep_offset: Vec<u32>,
    deps: Vec<SpanRef>,
    critical_path: Vec<SpanRef>,
    end_ns: u64,
}

impl Timeline {
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
        let n = n.min(MAX_BUCKETS);
        let (Some(spans), Some(prefix)) = (
            self.spans.get(lane as usize),
            self.dur_prefix.get(lane as usize),
        ) else {
            return Vec::new();
        };
        if n == 0 || end_ns <= start_ns {
            return Vec::new();
        }
        let width = u128::from(end_ns - start_ns);
        let at = |i: usize| start_ns + (width * i as u128 / n as u128) as u64;
        let overlap =
            |s: &Span, a: u64, b: u64| s.end_ns().min(b).saturating_sub(s.start_ns.max(a));
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (a, b) = (at(i), at(i + 1));
            let r = self.query_range(lane, a, b);
            let (lo, hi) = (r.start, r.end);
            let mut bucket = Bucket {
                start_ns: a,
                end_ns: b,
                spans: (hi - lo) as u32,
                first: lo as u32,
                busy_ns: 0,
                kind: None,
            };
            if hi > lo {
                // Spans strictly inside count fully; only the first and the
                // last can stick out of the column (lanes without nesting).
                let mut busy = prefix[hi] - prefix[lo];
                let first = &spans[lo];
                busy = busy.saturating_sub(first.duration_ns - overlap(first, a, b));
                if hi - 1 > lo {
                    let last = &spans[hi - 1];
                    busy = busy.saturating_sub(last.duration_ns - overlap(last, a, b));
                }
                bucket.busy_ns = busy.min(b - a);
                let mut best: Option<(u64, SpanKind)> = None;
                for j in [lo, lo + (hi - lo) / 2, hi - 1] {
                    let s = &spans[j];
                    let w = overlap(s, a, b).max(u64::from(s.duration_ns == 0));
                    if best.is_none_or(|(bw, bk)| w > bw || (w == bw && s.kind < bk)) {
                        best = Some((w, s.kind));
                    }
                }
                bucket.kind = best.map(|(_, k)| k);
            }
            out.push(bucket);
        }
        out
    }

    /// Approximate memory held, bytes (spans, indexes, flows, dependencies).
    pub fn heap_bytes(&self) -> usize {
        let spans = self.span_count();
        spans * (std::mem::size_of::<Span>() + 16)
            + self.flows.len() * std::mem::size_of::<Flow>()
            + self.dep_offset.len() * 4
            + self.deps.len() * std::mem::size_of::<SpanRef>()
            + self.labels.iter().map(|l| l.len() + 24).sum::<usize>()
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

    /// Sort, index and remap.
    pub fn build(self) -> Timeline {
        let mut remap: Vec<Vec<u32>> = Vec::with_capacity(self.spans.len());
        let mut spans = Vec::with_capacity(self.spans.len());
        let mut max_end = Vec::with_capacity(self.spans.len());
        let mut dur_prefix = Vec::with_capacity(self.spans.len());
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
        let critical_path = self.critical_path.iter().filter_map(|r| fix(*r)).collect();
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
            lane_offset,
            labels: self.labels,
            flows,
            dep_offset,
            deps,
            critical_path,
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
        let t = b.build();
        let json = serde_json::to_string(&t).unwrap();
        let back: Timeline = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        // Out-of-range references are dropped, not a panic.
        let bad = r#"{"lanes":[],"labels":[],"spans":[[]],"flows":[{"from":{"lane":9,"index":0},"to":{"lane":0,"index":0},"bytes":0,"micro_batch":0}],"dependencies":[],"critical_path":[{"lane":3,"index":3}]}"#;
        let t: Timeline = serde_json::from_str(bad).unwrap();
        assert!(t.flows().is_empty() && t.critical_path().is_empty());
    }

    fn b_label_roundtrip() -> String {
        let mut b = TimelineBuilder::new();
        let a = b.label("x");
        assert_eq!(b.label("x"), a);
        b.build().label(a).to_string()
    }
}
