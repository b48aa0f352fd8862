//! Level of detail: what to draw for one lane in the visible window, with a
//! bounded amount of work. The window is cut into pixel columns on the
//! zoom's global grid (column `k` covers `[round(k * ns_per_px),
//! round((k + 1) * ns_per_px))`, so a column's content does not depend on
//! where the window starts) and [`Timeline::buckets_into`] aggregates
//! every column (a galloping search from the previous column and two
//! prefix-sum lookups, into buffers reused frame after frame:
//! [`LodScratch`], which also keeps each lane's columns of the last frame,
//! so a pan computes only the columns it brings into view:
//! [`lane_prims_cached`]); a column holding exactly one span draws that
//! span itself (once, however many columns it covers), a column holding
//! several spans becomes an aggregate bar coloured by the kind with the
//! most busy time in it, its height quantised from the busy fraction, and
//! consecutive aggregate columns with the same colour and height merge
//! into one bar. So a lane never yields more primitives than the plot has
//! pixel columns (plus one: the grid's first column may start left of the
//! window), whatever the span count. The critical path is bounded the same
//! way, lane by lane ([`critical_runs`]).

use super::viewport::Viewport;
use std::collections::HashMap;
use std::rc::{Rc, Weak};
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

/// The window's columns on the zoom's global grid: column `k` covers
/// `[round(k * ns_per_px), round((k + 1) * ns_per_px))`, so a column's
/// bucket depends on the zoom and `k` only, never on where the window
/// starts, and a pan by whole pixels finds most of its columns computed.
/// Returns the first and one past the last column overlapping the window
/// (at most [`Viewport::columns`] + 1: the first may start left of it).
fn grid_columns(vp: &Viewport) -> (u64, u64) {
    let npp = vp.ns_per_px();
    if !(npp.is_finite() && npp > 0.0) {
        return (0, 0);
    }
    let k0 = (vp.start_ns() as f64 / npp).floor().max(0.0) as u64;
    let k1 = (vp.end_ns() as f64 / npp).ceil().max(0.0) as u64;
    let k1 = k1.clamp(k0, k0 + vp.columns() as u64 + 1);
    (k0, k1)
}

/// First ns of grid column `k` at `npp` ns per px.
fn grid_edge(k: u64, npp: f64) -> u64 {
    let t = (k as f64 * npp).round();
    if t.is_finite() && t > 0.0 {
        t.min(u64::MAX as f64) as u64
    } else {
        0
    }
}

/// One lane's buckets of grid columns `k0..` at one zoom, kept from the
/// frame before.
#[derive(Debug)]
struct LaneBuckets {
    /// The timeline they were computed on (a dropped one never matches).
    tl: Weak<Model>,
    npp_bits: u64,
    k0: u64,
    buckets: Vec<Bucket>,
}

/// Buffers of [`lane_prims_cached`], kept between calls: column edges, one
/// lane's buckets, and each drawn lane's buckets of the last frame (a pan
/// computes only the columns it brings into view).
#[derive(Debug, Default)]
pub struct LodScratch {
    edges: Vec<u64>,
    buckets: Vec<Bucket>,
    lanes: HashMap<(usize, u32), LaneBuckets>,
}

impl LodScratch {
    /// Forget the kept buckets of timelines no longer alive.
    pub fn prune(&mut self) {
        self.lanes.retain(|_, c| c.tl.strong_count() > 0);
    }

    /// Buckets of grid columns `k0..k1` of `lane` at `npp`, appended to `out`.
    fn compute(
        &mut self,
        tl: &Model,
        lane: u32,
        npp: f64,
        k0: u64,
        k1: u64,
        out: &mut Vec<Bucket>,
    ) {
        if k1 <= k0 {
            return;
        }
        self.edges.clear();
        self.edges.extend((k0..=k1).map(|k| grid_edge(k, npp)));
        tl.buckets_into(lane, &self.edges, &mut self.buckets);
        out.extend_from_slice(&self.buckets);
    }
}

/// Append the primitives of `lane` in `vp`'s window to `out` (cleared
/// first); returns how many were appended, never more than
/// [`Viewport::columns`] + 1. Keeps nothing between calls: a frame drawing
/// many lanes uses [`lane_prims_cached`].
pub fn lane_prims(tl: &Model, lane: u32, vp: &Viewport, out: &mut Vec<Prim>) -> usize {
    out.clear();
    let (k0, k1) = grid_columns(vp);
    let mut buckets = Vec::new();
    LodScratch::default().compute(tl, lane, vp.ns_per_px(), k0, k1, &mut buckets);
    push_prims(&buckets, tl.spans(lane), vp, out);
    out.len()
}

/// [`lane_prims`] keeping the lane's buckets in `scratch` for the next
/// frame: at the same zoom, the columns still in view are reused and only
/// those the window newly covers are computed (a drag computes a few
/// columns a lane instead of all). The same result as [`lane_prims`],
/// whatever came before.
pub fn lane_prims_cached(
    tl: &Rc<Model>,
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
    let npp = vp.ns_per_px();
    let (k0, k1) = grid_columns(vp);
    let key = (Rc::as_ptr(tl) as usize, lane);
    let old = scratch.lanes.remove(&key).filter(|c| {
        c.npp_bits == npp.to_bits() && c.tl.upgrade().is_some_and(|t| Rc::ptr_eq(&t, tl))
    });
    let mut buckets = Vec::with_capacity((k1 - k0) as usize);
    match old {
        Some(c) if c.k0 < k1 && k0 < c.k0 + c.buckets.len() as u64 => {
            let (c0, c1) = (c.k0, c.k0 + c.buckets.len() as u64);
            scratch.compute(tl, lane, npp, k0, c0.max(k0), &mut buckets);
            let (a, b) = (k0.max(c0), k1.min(c1));
            buckets.extend_from_slice(&c.buckets[(a - c0) as usize..(b - c0) as usize]);
            scratch.compute(tl, lane, npp, c1.max(k0), k1, &mut buckets);
        }
        _ => scratch.compute(tl, lane, npp, k0, k1, &mut buckets),
    }
    push_prims(&buckets, spans, vp, out);
    scratch.lanes.insert(
        key,
        LaneBuckets {
            tl: Rc::downgrade(tl),
            npp_bits: npp.to_bits(),
            k0,
            buckets,
        },
    );
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
    for b in buckets {
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
        let (x0, x1) = (vp.ns_to_px(b.start_ns), vp.ns_to_px(b.end_ns));
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
