//! Hit testing: which span lies under a pointer position. A query of the
//! lane's spans within a few pixels of the pointer (through the lane's time
//! index, so the cost follows the spans near the pointer, capped) picks the
//! innermost span containing the pointer's time, else the nearest one.

use super::viewport::Viewport;
use trainscope_core::sim::timeline::{SpanRef, Timeline as Model};

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
    let tol = tol_px.max(0.0) * vp.ns_per_px();
    let a = (t - tol).floor().max(0.0) as u64;
    let b = ((t + tol).ceil().max(0.0) as u64).saturating_add(1);
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
