//! Level of detail: what to draw for one lane in the visible window, with a
//! bounded amount of work. The window is cut into the viewport's pixel
//! columns ([`Viewport::column_bounds`]) and [`Timeline::buckets_into`]
//! aggregates every column (a galloping search from the previous column
//! and two prefix-sum lookups, into buffers reused frame after frame:
//! [`LodScratch`]); a column holding exactly one
//! span draws that span itself (once, however many columns it covers), a
//! column holding several spans becomes an aggregate bar coloured by the
//! kind with the most busy time in it, its height quantised from the busy
//! fraction, and consecutive aggregate columns with the same colour and
//! height merge into one bar. So a lane never yields more primitives than
//! the plot has pixel columns, whatever the span count. The critical path
//! is bounded the same way, lane by lane ([`critical_runs`]).

use super::viewport::Viewport;
use trainscope_core::timeline::{Bucket, SpanKind, Timeline as Model};

/// Busy-fraction levels of aggregate bars (level `k` of `LEVELS` draws
/// `k / LEVELS` of the lane height).
pub const LEVELS: u8 = 4;

/// One thing to draw in a lane, x in CSS px from the plot's left edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prim {
    /// A span drawn as itself (index into the lane's spans).
    Span { index: u32, x0: f64, x1: f64 },
    /// Several sub-pixel spans merged: columns `[x0, x1)`, the dominant
    /// kind, and the busy level `1..=LEVELS`.
    Agg {
        x0: f64,
        x1: f64,
        kind: SpanKind,
        level: u8,
    },
}

/// Busy level of a column: `ceil(busy / width * LEVELS)`, at least 1.
pub fn level(busy_ns: u64, width_ns: u64) -> u8 {
    if width_ns == 0 {
        return LEVELS;
    }
    let l = (u128::from(busy_ns) * u128::from(LEVELS)).div_ceil(u128::from(width_ns));
    l.clamp(1, u128::from(LEVELS)) as u8
}

/// Buffers of [`lane_prims_in`], kept between calls so a frame allocates
/// nothing once warm: the window's column edges (filled once per viewport)
/// and one lane's buckets.
#[derive(Debug, Default)]
pub struct LodScratch {
    /// The viewport the edges were computed for.
    edges_of: Option<Viewport>,
    edges: Vec<u64>,
    buckets: Vec<Bucket>,
}

impl LodScratch {
    /// The edges of `vp`'s pixel columns (`columns + 1` of them).
    fn edges(&mut self, vp: &Viewport) -> &[u64] {
        if self.edges_of != Some(*vp) {
            self.edges.clear();
            self.edges
                .extend((0..=vp.columns()).map(|i| vp.column_start_ns(i)));
            self.edges_of = Some(*vp);
        }
        &self.edges
    }
}

/// Append the primitives of `lane` in `vp`'s window to `out` (cleared
/// first); returns how many were appended, never more than
/// [`Viewport::columns`]. Allocates its buffers: a frame drawing many
/// lanes uses [`lane_prims_in`].
pub fn lane_prims(tl: &Model, lane: u32, vp: &Viewport, out: &mut Vec<Prim>) -> usize {
    lane_prims_in(tl, lane, vp, &mut LodScratch::default(), out)
}

/// [`lane_prims`] with the buffers of `scratch`.
pub fn lane_prims_in(
    tl: &Model,
    lane: u32,
    vp: &Viewport,
    scratch: &mut LodScratch,
    out: &mut Vec<Prim>,
) -> usize {
    out.clear();
    let spans = tl.spans(lane);
    if spans.is_empty() {
        return 0;
    }
    let mut buckets = std::mem::take(&mut scratch.buckets);
    tl.buckets_into(lane, scratch.edges(vp), &mut buckets);
    push_prims(&buckets, spans, vp, out);
    scratch.buckets = buckets;
    out.len()
}

/// The primitives of one lane's buckets (see the module docs).
fn push_prims(
    buckets: &[Bucket],
    spans: &[trainscope_core::timeline::Span],
    vp: &Viewport,
    out: &mut Vec<Prim>,
) {
    let mut last_span: Option<u32> = None;
    for (i, b) in buckets.iter().enumerate() {
        if b.spans == 0 {
            continue;
        }
        if b.spans == 1 {
            if last_span == Some(b.first) {
                continue;
            }
            let Some(s) = spans.get(b.first as usize) else {
                continue;
            };
            last_span = Some(b.first);
            out.push(Prim::Span {
                index: b.first,
                x0: vp.ns_to_px(s.start_ns),
                x1: vp.ns_to_px(s.end_ns()),
            });
            continue;
        }
        let Some(kind) = b.kind else { continue };
        let lv = level(b.busy_ns, b.end_ns - b.start_ns);
        let (x0, x1) = (vp.column_px(i), vp.column_px(i + 1));
        if let Some(Prim::Agg {
            x1: px1,
            kind: pk,
            level: pl,
            ..
        }) = out.last_mut()
        {
            if *pk == kind && *pl == lv && (*px1 - x0).abs() < 1e-9 {
                *px1 = x1;
                continue;
            }
        }
        out.push(Prim::Agg {
            x0,
            x1,
            kind,
            level: lv,
        });
    }
}

/// A run of the critical path on one lane: `[x0, x1)` CSS px from the
/// plot's left edge, coloured `kind` (the first span of the run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CritRun {
    pub x0: f64,
    pub x1: f64,
    pub kind: SpanKind,
}

/// Append the critical-path runs of `lane` in `vp`'s window to `out`
/// (cleared first); returns how many, never more than [`Viewport::columns`].
/// Walks the lane's critical spans ([`Model::critical_on_lane`]) from the
/// window's start; after drawing a span it jumps (binary search) past
/// every critical span ending inside the same pixel column, so each step
/// advances at least one column: O(columns x log path) per lane, whatever
/// the path length. Runs merge while they touch (a sub-pixel span joins
/// whatever precedes it).
pub fn critical_runs(tl: &Model, lane: u32, vp: &Viewport, out: &mut Vec<CritRun>) -> usize {
    out.clear();
    let crit = tl.critical_on_lane(lane);
    let spans = tl.spans(lane);
    // Critical spans of a lane form a chain: their ends ascend.
    let end_of = |i: &u32| spans.get(*i as usize).map_or(0, |s| s.end_ns());
    let n = vp.columns();
    let hi_px = vp.column_px(n) + 2.0;
    let mut k = crit.partition_point(|i| end_of(i) <= vp.start_ns());
    let mut next_col = 0usize;
    let mut last_col: Option<usize> = None;
    while let Some(s) = crit.get(k).and_then(|&i| spans.get(i as usize)) {
        let x0 = vp.ns_to_px(s.start_ns).max(-2.0);
        if x0 >= vp.column_px(n) {
            break;
        }
        let x1 = vp.ns_to_px(s.end_ns()).min(hi_px).max(x0);
        let c0 = vp.column_at_px(x0);
        // The column after the one holding the span's end (strictly
        // increasing, so the walk ends after at most n + 1 steps): every
        // critical span ending before it is drawn by this run.
        next_col = next_col.max(vp.column_at_px(x1)).max(c0) + 1;
        let next_t = vp.column_start_ns(next_col);
        let rest = crit.get(k + 1..).unwrap_or(&[]);
        let skip = rest.partition_point(|i| end_of(i) <= next_t);
        let x1 = if skip > 0 {
            x1.max(vp.column_px(next_col).min(hi_px))
        } else {
            x1
        };
        let sub_pixel = x1 - x0 <= 1.0;
        match out.last_mut() {
            // One run per starting column at most (so at most n runs).
            Some(o) if last_col == Some(c0) => o.x1 = o.x1.max(x1),
            Some(o) if x0 <= o.x1 + 0.5 && (o.kind == s.kind || sub_pixel) => o.x1 = o.x1.max(x1),
            _ => out.push(CritRun {
                x0,
                x1,
                kind: s.kind,
            }),
        }
        last_col = Some(c0);
        if next_col > n {
            break;
        }
        k += 1 + skip;
    }
    out.len()
}
