//! Level of detail: what to draw for one lane in the visible window, with a
//! bounded amount of work. The window is cut into one column per CSS pixel
//! and [`Timeline::buckets`] aggregates every column in O(log spans); a
//! column holding exactly one span draws that span itself (once, however
//! many columns it covers), a column holding several spans becomes an
//! aggregate bar coloured by its dominant kind, its height quantised from
//! the busy fraction, and consecutive aggregate columns with the same
//! colour and height merge into one bar. So a lane never yields more
//! primitives than the plot has pixel columns, whatever the span count.

use super::viewport::Viewport;
use trainscope_core::sim::timeline::{SpanKind, Timeline as Model, MAX_BUCKETS};

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

/// Number of columns for a plot of `vp.width_px()` pixels.
pub fn columns(vp: &Viewport) -> usize {
    (vp.width_px().ceil() as usize).clamp(1, MAX_BUCKETS)
}

/// Append the primitives of `lane` in `vp`'s window to `out` (cleared
/// first); returns how many were appended, never more than
/// [`columns`]`(vp)`.
pub fn lane_prims(tl: &Model, lane: u32, vp: &Viewport, out: &mut Vec<Prim>) -> usize {
    out.clear();
    let n = columns(vp);
    let spans = tl.spans(lane);
    if spans.is_empty() {
        return 0;
    }
    // Columns are exact pixel columns: the plot may be a fraction of a
    // pixel narrower than n, so the last column can stick out a little.
    let col_ns = vp.range_ns() as f64 / vp.width_px();
    let end = vp.start_ns() as f64 + col_ns * n as f64;
    let end_ns = (end.ceil() as u64).max(vp.start_ns() + 1);
    let buckets = tl.buckets(lane, vp.start_ns(), end_ns, n);
    let scale = n as f64 / buckets.len().max(1) as f64;
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
        let x0 = i as f64 * scale;
        let x1 = (i + 1) as f64 * scale;
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
    out.len()
}
