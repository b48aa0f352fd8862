//! The timeline's only time <-> pixel mapping: a [`Viewport`] is the visible
//! time window `[start_ns, end_ns)` (integer nanoseconds) laid over a plot
//! `width_px` CSS pixels wide, inside the extent `[0, extent_ns]` of the run.
//! Zooming keeps the time under the pointer fixed, panning moves the window
//! by a number of pixels, and every change is clamped so the window stays
//! inside the extent and never narrower than [`Viewport::MIN_RANGE_NS`].
//! Pixel columns (one per CSS px, the level-of-detail grid) are defined
//! here too: [`Viewport::column_bounds`] tiles the window without gaps or
//! overlap. Pure Rust (no DOM); the level of detail, drawing, critical
//! path, hit testing, ruler and minimap all go through it: no other module
//! converts between time and pixels.

use trainscope_core::timeline::MAX_BUCKETS;

/// A visible time window mapped onto a plot of a given pixel width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    start_ns: u64,
    end_ns: u64,
    extent_ns: u64,
    width_px: f64,
}

impl Viewport {
    /// The narrowest window, ns (zooming in stops there).
    pub const MIN_RANGE_NS: u64 = 32;

    /// A viewport fitted to `[0, extent_ns]` (an extent of 0 becomes 1 ns)
    /// over `width_px` pixels (at least 1).
    pub fn new(extent_ns: u64, width_px: f64) -> Viewport {
        let mut v = Viewport {
            start_ns: 0,
            end_ns: extent_ns.max(1),
            extent_ns: extent_ns.max(1),
            width_px: 1.0,
        };
        v.set_width(width_px);
        v
    }

    /// First visible ns.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// End of the visible window, ns (exclusive).
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// Visible duration, ns (`end_ns - start_ns`, at least 1).
    pub fn range_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }

    /// The whole navigable extent, ns.
    pub fn extent_ns(&self) -> u64 {
        self.extent_ns
    }

    /// Plot width, CSS pixels.
    pub fn width_px(&self) -> f64 {
        self.width_px
    }

    /// Nanoseconds per pixel at this zoom.
    pub fn ns_per_px(&self) -> f64 {
        self.range_ns() as f64 / self.width_px
    }

    /// Smallest window at this extent: [`Viewport::MIN_RANGE_NS`], or the
    /// extent when it is shorter.
    fn min_range(&self) -> u64 {
        Self::MIN_RANGE_NS.min(self.extent_ns)
    }

    /// Change the plot width (resizes keep the visible time window).
    /// Non-finite or sub-pixel widths become 1 px.
    pub fn set_width(&mut self, width_px: f64) {
        self.width_px = if width_px.is_finite() && width_px >= 1.0 {
            width_px
        } else {
            1.0
        };
    }

    /// Change the extent (another run), keeping the window where possible.
    pub fn set_extent(&mut self, extent_ns: u64) {
        self.extent_ns = extent_ns.max(1);
        self.set_range(self.start_ns, self.end_ns);
    }

    /// Show `[start_ns, end_ns)`, clamped: the window is at least
    /// `min(MIN_RANGE_NS, extent)` wide, at most the extent, and inside
    /// `[0, extent]` (a window sticking out is shifted back in).
    pub fn set_range(&mut self, start_ns: u64, end_ns: u64) {
        let range = end_ns
            .saturating_sub(start_ns)
            .clamp(self.min_range(), self.extent_ns);
        let start = start_ns.min(self.extent_ns - range);
        self.start_ns = start;
        self.end_ns = start + range;
    }

    /// Show the whole extent.
    pub fn fit(&mut self) {
        self.start_ns = 0;
        self.end_ns = self.extent_ns;
    }

    /// True when the whole extent is visible.
    pub fn is_fit(&self) -> bool {
        self.start_ns == 0 && self.end_ns == self.extent_ns
    }

    /// x of time `t_ns`, CSS px from the plot's left edge (negative or
    /// beyond the width for times outside the window):
    /// `x = (t - start) * width / range`.
    pub fn ns_to_px(&self, t_ns: u64) -> f64 {
        let dt = t_ns as i128 - self.start_ns as i128;
        dt as f64 * self.width_px / self.range_ns() as f64
    }

    /// Time at x (unclamped, fractional ns): `t = start + x * range / width`.
    pub fn px_to_ns_f64(&self, x_px: f64) -> f64 {
        self.start_ns as f64 + x_px * self.range_ns() as f64 / self.width_px
    }

    /// Time at x, rounded to the nearest ns and clamped to `[0, extent]`.
    /// For any visible `t`, `px_to_ns(ns_to_px(t)) == t`.
    pub fn px_to_ns(&self, x_px: f64) -> u64 {
        let t = self.px_to_ns_f64(x_px).round();
        if t.is_nan() || t <= 0.0 {
            0
        } else if t >= self.extent_ns as f64 {
            self.extent_ns
        } else {
            t as u64
        }
    }

    /// Pixels covered by a duration of `ns` at this zoom.
    pub fn ns_len_to_px(&self, ns: f64) -> f64 {
        ns * self.width_px / self.range_ns() as f64
    }

    /// Duration covered by `px` pixels at this zoom, ns (fractional).
    pub fn px_len_to_ns(&self, px: f64) -> f64 {
        px * self.range_ns() as f64 / self.width_px
    }

    /// Number of pixel columns of the plot: `ceil(width)`, 1 to
    /// [`MAX_BUCKETS`] (the last one may stick out of a fractional width).
    pub fn columns(&self) -> usize {
        (self.width_px.ceil() as usize).clamp(1, MAX_BUCKETS)
    }

    /// x of the left edge of column `i`, CSS px (columns are 1 px wide).
    pub fn column_px(&self, i: usize) -> f64 {
        i as f64
    }

    /// First ns of column `i`: `start + round(i * range / width)`
    /// (saturating), never decreasing in `i`; equals
    /// `px_to_ns(column_px(i))` inside the extent.
    pub fn column_start_ns(&self, i: usize) -> u64 {
        let off = (self.px_len_to_ns(self.column_px(i))).round();
        let off = if off.is_finite() && off > 0.0 {
            off.min(u64::MAX as f64) as u64
        } else {
            0
        };
        self.start_ns.saturating_add(off)
    }

    /// Time range `[a, b)` of column `i`: column `i + 1` starts where
    /// column `i` ends, so the columns tile the window.
    pub fn column_bounds(&self, i: usize) -> (u64, u64) {
        (self.column_start_ns(i), self.column_start_ns(i + 1))
    }

    /// The column holding x (floor, at least 0).
    pub fn column_at_px(&self, x_px: f64) -> usize {
        if x_px.is_finite() && x_px > 0.0 {
            x_px.floor().min(usize::MAX as f64) as usize
        } else {
            0
        }
    }

    /// Zoom by `factor` (> 1 zooms in, < 1 out) keeping the time under
    /// `x_px` at `x_px` (to within the 1 ns rounding; exactly while no
    /// clamp applies). Non-finite or non-positive factors do nothing.
    pub fn zoom_around(&mut self, x_px: f64, factor: f64) {
        if !factor.is_finite() || factor <= 0.0 || !x_px.is_finite() {
            return;
        }
        let anchor = self.px_to_ns_f64(x_px);
        let new_range = (self.range_ns() as f64 / factor)
            .round()
            .clamp(self.min_range() as f64, self.extent_ns as f64);
        let start = (anchor - x_px / self.width_px * new_range).round().max(0.0);
        let start = start.min(self.extent_ns as f64) as u64;
        self.set_range(start, start.saturating_add(new_range as u64));
    }

    /// Move the window by `dx_px` pixels' worth of time: positive shows
    /// later times (dragging the content left), negative earlier ones.
    pub fn pan(&mut self, dx_px: f64) {
        if !dx_px.is_finite() {
            return;
        }
        let shift = self.px_len_to_ns(dx_px).round();
        let range = self.range_ns();
        let start = if shift >= 0.0 {
            self.start_ns
                .saturating_add(shift.min(u64::MAX as f64) as u64)
        } else {
            self.start_ns
                .saturating_sub((-shift).min(u64::MAX as f64) as u64)
        };
        self.set_range(start, start.saturating_add(range));
    }

    /// Centre the window on `t_ns`, keeping its width.
    pub fn center_on(&mut self, t_ns: u64) {
        let range = self.range_ns();
        let start = t_ns.saturating_sub(range / 2);
        self.set_range(start, start.saturating_add(range));
    }
}
