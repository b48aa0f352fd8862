//! Hit testing: which span lies under a pointer position. A query of the
//! lane's spans within a few pixels of the pointer (through the lane's time
//! index, so the cost follows the spans near the pointer, capped) picks the
//! innermost span containing the pointer's time, else the nearest one.

use super::viewport::Viewport;
use trainscope_core::timeline::{SpanRef, Timeline as Model};

/// A span of one of the shown timelines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hit {
    /// Which timeline (0 = main, 1 = compared).
    pub section: usize,
    pub lane: u32,
    /// Index into the lane's spans.
    pub index: u32,
}

impl Hit {
    /// The span's reference within its timeline.
    pub fn span_ref(&self) -> SpanRef {
        SpanRef {
            lane: self.lane,
            index: self.index,
        }
    }
}

/// Most candidate spans examined per hit test.
pub const MAX_CANDIDATES: usize = 4096;

/// Index of the span of `lane` under x (CSS px from the plot's left edge),
/// looking `tol_px` pixels either side: the shortest span containing the
/// time at x, else the span nearest to it.
pub fn span_at(tl: &Model, lane: u32, vp: &Viewport, x_px: f64, tol_px: f64) -> Option<u32> {
    let t = vp.px_to_ns_f64(x_px);
    if !t.is_finite() {
        return None;
    }
    let tol = tol_px.max(0.0);
    let a = vp.px_to_ns_f64(x_px - tol).floor().max(0.0) as u64;
    let b = (vp.px_to_ns_f64(x_px + tol).ceil().max(0.0) as u64).saturating_add(1);
    let mut best: Option<(bool, f64, u64, u32)> = None; // (contains, distance, duration, index)
    for (i, s) in tl.query(lane, a, b).take(MAX_CANDIDATES) {
        let (st, en) = (s.start_ns as f64, s.end_ns() as f64);
        let contains = st <= t && t < en;
        let dist = if contains {
            0.0
        } else {
            (st - t).abs().min((en - t).abs())
        };
        let better = match best {
            None => true,
            Some((bc, bd, bdur, _)) => {
                (contains && !bc)
                    || (contains == bc && (dist < bd || (dist == bd && s.duration_ns < bdur)))
            }
        };
        if better {
            best = Some((contains, dist, s.duration_ns, i));
        }
    }
    best.map(|(_, _, _, i)| i)
}

/// Index of the span of `lane` at time `t_ns` (the shortest containing
/// it), else the nearest one: keyboard navigation between lanes.
pub fn span_near_ns(tl: &Model, lane: u32, t_ns: u64) -> Option<u32> {
    let spans = tl.spans(lane);
    if let Some((i, _)) = tl
        .query(lane, t_ns, t_ns.saturating_add(1))
        .take(MAX_CANDIDATES)
        .min_by_key(|(i, s)| (s.duration_ns, *i))
    {
        return Some(i);
    }
    let i = spans.partition_point(|s| s.start_ns <= t_ns);
    let before = i
        .checked_sub(1)
        .and_then(|j| Some((t_ns.saturating_sub(spans.get(j)?.end_ns()), j)));
    let after = spans.get(i).map(|s| (s.start_ns.saturating_sub(t_ns), i));
    match (before, after) {
        (Some(b), Some(a)) => Some(if a.0 < b.0 { a.1 } else { b.1 } as u32),
        (Some((_, j)), None) | (None, Some((_, j))) => Some(j as u32),
        (None, None) => None,
    }
}
