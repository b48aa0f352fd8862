//! Canvas 2D drawing of the timeline: the ruler, the label column, the lanes
//! (level-of-detail primitives from [`super::lod`], filled into a pixel
//! buffer and put on the canvas in one call: [`super::raster`]),
//! micro-batch numbers on wide spans, the critical-path overlay, the
//! selection with its dependencies and flow arrows, the counter lanes
//! (activation memory per stage: a filled step area scaled to the lane's
//! peak, one vertex pair per change in view, and a marker where the peak is
//! first reached), and the overview strip. Everything is in CSS pixels
//! (the pixel buffer in device pixels); the caller
//! scales the context by the device pixel ratio. Work per frame is bounded
//! by the visible rows x plot width, never by the span count.

use super::format;
use super::hit::Hit;
use super::layout::{Layout, Row, RowKind};
use super::lod::{self, Prim, LEVELS};
use super::palette;
use super::raster;
use super::viewport::Viewport;
use std::rc::Rc;
use trainscope_core::timeline::{CounterLane, Span, SpanKind, SpanRef, Stream, Timeline as Model};
use wasm_bindgen::Clamped;
use web_sys::{CanvasRenderingContext2d as Ctx, HtmlCanvasElement};

/// Width of the label column, CSS px (the plot starts there).
pub const LABEL_W: f64 = 180.0;
/// Height of the time ruler, CSS px.
pub const RULER_H: f64 = 24.0;
/// Height of the overview strip, CSS px.
pub const OVERVIEW_H: f64 = 44.0;
/// Minimum spacing of labelled ruler ticks, CSS px.
pub const TICK_MIN_PX: f64 = 90.0;
/// Width of the vertical scroll indicator, CSS px.
pub const SCROLLBAR_W: f64 = 6.0;
/// Plot width for a canvas `css_w` CSS px wide: what is left of the label
/// column and the scroll indicator (at least 1 px).
pub fn plot_width(css_w: f64) -> f64 {
    (css_w - LABEL_W - SCROLLBAR_W - 2.0).max(1.0)
}

/// Vertical padding of a span inside its lane, CSS px.
const PAD_Y: f64 = 2.0;
/// Average width of a character of the 11 px label font, CSS px (a
/// conservative estimate: texts are fitted without measuring).
const CHAR_W: f64 = 6.6;
/// Fonts.
const FONT: &str = "11px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
const FONT_BOLD: &str = "600 11px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
const FONT_SMALL: &str = "10px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";

/// One timeline shown by the component.
#[derive(Debug, Clone)]
pub struct Section {
    pub tl: Rc<Model>,
    /// `measured`, `simulated`, `A`, `B` (empty: no header).
    pub label: String,
}

/// The selected span and what to highlight with it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    pub hit: Option<Hit>,
    /// Spans the selected one waited for.
    pub deps: Vec<SpanRef>,
    /// Pipeline transfers (send span, receive span) touching the selected
    /// span or one of its dependencies.
    pub flows: Vec<(SpanRef, SpanRef)>,
}

/// Everything a frame depends on.
pub struct Scene<'a> {
    /// Device pixels per CSS pixel (rectangles snap to device pixels).
    pub dpr: f64,
    pub sections: &'a [Section],
    pub layout: &'a Layout,
    pub vp: &'a Viewport,
    /// Vertical scroll of the rows, CSS px.
    pub scroll_y: f64,
    /// Canvas size, CSS px.
    pub width: f64,
    pub height: f64,
    pub selection: &'a Selection,
    pub hover: Option<Hit>,
    pub critical: bool,
}

impl Scene<'_> {
    /// Counter lane `counter` of section `section` (a memory row's series).
    fn counter(&self, section: usize, counter: u32) -> Option<&CounterLane> {
        self.sections
            .get(section)
            .and_then(|sec| sec.tl.counters().get(counter as usize))
    }
}

/// What a frame drew.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameStats {
    /// Time spent in the draw call, ms (filled in by the component).
    pub draw_ms: f64,
    /// Rectangles filled for lanes (spans and aggregate bars).
    pub rects: u32,
    /// Texts drawn on spans.
    pub texts: u32,
    /// Lanes drawn.
    pub lanes: u32,
    /// Most primitives of one lane.
    pub max_lane_prims: u32,
    /// Rectangles filled for the critical path (0 when it is off).
    pub critical_rects: u32,
    /// Most critical-path rectangles of one lane (at most the plot's
    /// pixel columns).
    pub max_lane_critical: u32,
    /// Counter lanes drawn, and the points they drew.
    pub counters: u32,
    pub counter_points: u32,
    /// Peak markers drawn on counter lanes.
    pub counter_peaks: u32,
}

/// Reusable buffers (no allocation per frame once warm).
#[derive(Debug, Default)]
pub struct Scratch {
    prims: Vec<Prim>,
    lod: lod::LodScratch,
    crit: Vec<lod::CritRun>,
    /// Outlines of the critical path's runs, reused every frame.
    crit_outlines: Vec<[f64; 4]>,
    /// Critical-path rectangles per span kind (one fill per kind).
    rects: Vec<Vec<[f64; 4]>>,
    /// The lane area's pixels ([`raster`]).
    pixels: raster::Pixels,
    texts: Vec<(f64, f64, String, bool)>,
    /// What `pixels` and `texts` were made from: a frame of the same lanes
    /// puts them again.
    lanes_of: LanesKey,
}

/// What the lanes' pixels of a frame depend on (the hover, the selection
/// and the critical path are drawn over them: a frame that changes only
/// those reuses the last frame's pixels), and what making them counted
/// (`None`: nothing made yet). Refilled in place (no allocation per frame
/// once warm).
#[derive(Debug, Default)]
struct LanesKey {
    timelines: Vec<Rc<Model>>,
    rows: Vec<Row>,
    vp: Option<Viewport>,
    scroll_y: f64,
    size: (f64, f64),
    dpr: f64,
    made: Option<FrameStats>,
}

impl LanesKey {
    /// Key the pixels just made for `scene`, which counted `made`.
    fn set(&mut self, scene: &Scene, visible: std::ops::Range<usize>, made: FrameStats) {
        self.timelines.clear();
        self.timelines
            .extend(scene.sections.iter().map(|s| Rc::clone(&s.tl)));
        self.rows.clear();
        self.rows.extend_from_slice(&scene.layout.rows[visible]);
        self.vp = Some(*scene.vp);
        self.scroll_y = scene.scroll_y;
        self.size = (scene.width, scene.height);
        self.dpr = scene.dpr;
        self.made = Some(made);
    }

    /// What making the pixels counted, when they were made for `scene`.
    fn made_for(&self, scene: &Scene, visible: std::ops::Range<usize>) -> Option<FrameStats> {
        let same = self.vp == Some(*scene.vp)
            && self.scroll_y == scene.scroll_y
            && self.size == (scene.width, scene.height)
            && self.dpr == scene.dpr
            && self.rows[..] == scene.layout.rows[visible]
            && self.timelines.len() == scene.sections.len()
            && self
                .timelines
                .iter()
                .zip(scene.sections)
                .all(|(a, b)| Rc::ptr_eq(a, &b.tl));
        self.made.filter(|_| same)
    }
}

/// The lane-area statistics of `made` added to `stats`.
fn add_lane_stats(stats: &mut FrameStats, made: &FrameStats) {
    stats.rects += made.rects;
    stats.lanes += made.lanes;
    stats.max_lane_prims = stats.max_lane_prims.max(made.max_lane_prims);
}

/// The rows of `visible` on a shaded group band (every other group).
fn banded_rows<'a>(
    scene: &'a Scene,
    visible: std::ops::Range<usize>,
) -> impl Iterator<Item = &'a Row> + 'a {
    scene.layout.rows[visible].iter().filter(|row| {
        matches!(
            row.kind,
            RowKind::Lane { group, .. } | RowKind::Counter { group, .. } if group % 2 == 1
        )
    })
}

fn kind_index(k: SpanKind) -> usize {
    k as usize
}

/// Short lane name for the label column.
pub fn stream_label(s: Stream) -> &'static str {
    match s {
        Stream::Compute => "compute",
        Stream::Collective => "TP/EP coll.",
        Stream::GradSync => "DP coll.",
        Stream::Send => "PP send",
        Stream::Recv => "PP recv",
        Stream::Host => "host",
    }
}

/// `x` rounded to the nearest device pixel (crisp, cheaper to rasterise
/// than anti-aliased edges).
fn snap(x: f64, dpr: f64) -> f64 {
    (x * dpr).round() / dpr
}

/// y of the top of the rows area on the canvas for layout y `y`.
fn screen_y(scene: &Scene, y: f64) -> f64 {
    RULER_H + y - scene.scroll_y
}

/// Fit `text` into `max_px` (with an ellipsis), or None when not even two
/// characters fit.
fn fit_text(text: &str, max_px: f64) -> Option<String> {
    let fits = (max_px / CHAR_W).floor();
    if fits < 1.0 {
        return None;
    }
    let fits = fits as usize;
    let n = text.chars().count();
    if n <= fits {
        return Some(text.to_string());
    }
    if fits < 3 {
        return None;
    }
    let mut s: String = text.chars().take(fits - 1).collect();
    s.push('…');
    Some(s)
}

/// Text to draw on a span `w` px wide: `label · mb 3` when it fits, else
/// the micro-batch number, else nothing.
fn span_text(tl: &Model, s: &Span, w: f64) -> Option<String> {
    let mb = s.micro_batch();
    let label = tl.label(s.label);
    if w >= 90.0 && !label.is_empty() {
        let full = match mb {
            Some(m) => format!("{label} · mb {m}"),
            None => label.to_string(),
        };
        return fit_text(&full, w - 6.0);
    }
    let m = mb?;
    let t = m.to_string();
    (w >= t.len() as f64 * CHAR_W + 4.0).then_some(t)
}

/// Draw a frame of the main canvas.
pub fn draw(ctx: &Ctx, scene: &Scene, scratch: &mut Scratch) -> FrameStats {
    let mut stats = FrameStats::default();
    let (w, h) = (scene.width, scene.height);
    let plot_w = scene.vp.width_px();
    ctx.set_fill_style_str(palette::BACKGROUND);
    ctx.fill_rect(0.0, 0.0, w, h);
    let rows_h = (h - RULER_H).max(0.0);
    let visible = scene
        .layout
        .rows_between(scene.scroll_y, scene.scroll_y + rows_h);

    ctx.save();
    ctx.begin_path();
    ctx.rect(0.0, RULER_H, w, rows_h);
    ctx.clip();

    // Group bands beside the plot (the label column, the scroll indicator's
    // strip); inside it the lanes' pixels carry them, with the grid lines.
    ctx.set_fill_style_str(palette::BAND);
    let right = LABEL_W + plot_w;
    for row in banded_rows(scene, visible.clone()) {
        let y = screen_y(scene, row.y);
        ctx.fill_rect(0.0, y, LABEL_W, row.h);
        ctx.fill_rect(right, y, (w - right).max(0.0), row.h);
    }
    let step = format::tick_step_ns(scene.vp.px_len_to_ns(TICK_MIN_PX));

    // Lanes, clipped to the plot.
    ctx.save();
    ctx.begin_path();
    ctx.rect(LABEL_W, RULER_H, plot_w, rows_h);
    ctx.clip();
    draw_lanes(ctx, scene, scratch, visible.clone(), step, &mut stats);
    draw_counters(ctx, scene, visible.clone(), &mut stats);
    if scene.critical {
        draw_critical(ctx, scene, scratch, visible.clone(), &mut stats);
    }
    draw_selection(ctx, scene);
    draw_texts(ctx, scratch, &mut stats);
    ctx.restore();

    // Group separators, section headers, labels.
    draw_labels(ctx, scene, visible);
    ctx.restore();

    draw_ruler(ctx, scene, step);
    draw_scrollbar(ctx, scene);
    stats
}

/// Major tick times in the window.
fn ticks(vp: &Viewport, step: u64) -> impl Iterator<Item = u64> {
    let step = step.max(1);
    let first = vp.start_ns().div_ceil(step).saturating_mul(step);
    let end = vp.end_ns();
    (0..)
        .map(move |k: u64| first.saturating_add(k.saturating_mul(step)))
        .take_while(move |t| *t <= end)
        .take(10_000)
}

/// The spans and aggregate bars of the visible lanes, filled into the
/// scratch pixel buffer over the plot's rows (with the group bands and the
/// grid lines at the ruler's major ticks beneath them) and put on the canvas
/// in one call.
fn draw_lanes(
    ctx: &Ctx,
    scene: &Scene,
    scratch: &mut Scratch,
    visible: std::ops::Range<usize>,
    grid_step: u64,
    stats: &mut FrameStats,
) {
    let vp = scene.vp;
    let plot_w = vp.width_px();
    let dpr = scene.dpr.max(0.5);
    let dev = |v: f64| (v * dpr).round() as i64;
    let (ox, oy) = (dev(LABEL_W), dev(RULER_H));
    let width = (dev(LABEL_W + plot_w) - ox).max(0) as usize;
    let height = (dev(scene.height) - oy).max(0) as usize;
    if width == 0 || height == 0 {
        return;
    }
    // The same lanes as the last frame's: its pixels and texts again.
    if let Some(made) = scratch.lanes_of.made_for(scene, visible.clone()) {
        add_lane_stats(stats, &made);
        put_pixels(ctx, &scratch.pixels);
        return;
    }
    let mut made = FrameStats::default();
    let px = &mut scratch.pixels;
    px.reset((ox, oy), width, height, raster::rgba(palette::BACKGROUND));
    let band = raster::rgba(palette::BAND);
    for row in banded_rows(scene, visible.clone()) {
        px.fill_css(LABEL_W, screen_y(scene, row.y), plot_w, row.h, dpr, band);
    }
    let grid = raster::rgba(palette::GRID);
    for t in ticks(vp, grid_step) {
        let x = (LABEL_W + vp.ns_to_px(t)).round();
        px.fill_css(x, RULER_H, 1.0, scene.height, dpr, grid);
    }
    scratch.lod.prune();
    let colors = SpanKind::ALL.map(|k| raster::rgba(palette::kind_color(k)));
    scratch.texts.clear();
    for row in &scene.layout.rows[visible.clone()] {
        let RowKind::Lane { section, lane, .. } = row.kind else {
            continue;
        };
        let Some(sec) = scene.sections.get(section) else {
            continue;
        };
        let tl = &sec.tl;
        let n = lod::lane_prims_cached(tl, lane, vp, &mut scratch.lod, &mut scratch.prims);
        made.lanes += 1;
        made.max_lane_prims = made.max_lane_prims.max(n as u32);
        let y = screen_y(scene, row.y) + PAD_Y;
        let full_h = row.h - 2.0 * PAD_Y;
        let spans = tl.spans(lane);
        for p in &scratch.prims {
            match *p {
                Prim::Span { index, x0, x1 } => {
                    let Some(s) = spans.get(index as usize) else {
                        continue;
                    };
                    let a = snap(x0.max(-2.0), dpr);
                    let b = snap(x1.min(plot_w + 2.0), dpr);
                    let mut wpx = (b - a).max(1.0);
                    // A 1 px gap between consecutive wide spans.
                    if wpx >= 5.0 {
                        wpx -= 1.0;
                    }
                    px.fill_css(LABEL_W + a, y, wpx, full_h, dpr, colors[kind_index(s.kind)]);
                    made.rects += 1;
                    if wpx >= 12.0 {
                        if let Some(t) = span_text(tl, s, wpx) {
                            let cx = LABEL_W + a.max(0.0) + (b.min(plot_w) - a.max(0.0)) / 2.0;
                            let dark = palette::text_on(s.kind) == "#000000";
                            scratch.texts.push((cx, y + full_h / 2.0, t, dark));
                        }
                    }
                }
                Prim::Agg {
                    x0,
                    x1,
                    kind,
                    level,
                } => {
                    let bh = (full_h * f64::from(level) / f64::from(LEVELS)).max(2.0);
                    let (a, b) = (snap(x0, dpr), snap(x1, dpr));
                    px.fill_css(
                        LABEL_W + a,
                        y + (full_h - bh) / 2.0,
                        (b - a).max(1.0),
                        bh,
                        dpr,
                        colors[kind_index(kind)],
                    );
                    made.rects += 1;
                }
            }
        }
    }
    put_pixels(ctx, &scratch.pixels);
    add_lane_stats(stats, &made);
    scratch.lanes_of.set(scene, visible, made);
}

/// Put `px` on the canvas at its device-pixel origin (`putImageData` ignores
/// the context's scale and clip: the buffer is already in device pixels and
/// inside the plot).
fn put_pixels(ctx: &Ctx, px: &raster::Pixels) {
    let (w, h) = (px.width() as u32, px.height() as u32);
    let Ok(img) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(Clamped(px.bytes()), w, h)
    else {
        return;
    };
    let (ox, oy) = px.origin();
    let _ = ctx.put_image_data(&img, ox as f64, oy as f64);
}

/// Half width of a counter lane's peak marker, CSS px (the hover picks the
/// peak within this distance and a little more).
pub const PEAK_MARK_PX: f64 = 5.0;

/// The counter lanes in view: per row a filled step area from the value in
/// force at the window's start through every change in the window (a binary
/// search, then the few points of a series: one per forward or backward),
/// scaled so the lane's peak fills the row.
fn draw_counters(
    ctx: &Ctx,
    scene: &Scene,
    visible: std::ops::Range<usize>,
    stats: &mut FrameStats,
) {
    let vp = scene.vp;
    let plot_w = vp.width_px();
    let (lo, hi) = (LABEL_W - 2.0, LABEL_W + plot_w + 2.0);
    for row in &scene.layout.rows[visible] {
        let RowKind::Counter {
            section, counter, ..
        } = row.kind
        else {
            continue;
        };
        let Some(c) = scene.counter(section, counter) else {
            continue;
        };
        let max = c.max_value();
        if max <= 0.0 {
            continue;
        }
        let top = screen_y(scene, row.y) + PAD_Y;
        let h = row.h - 2.0 * PAD_Y;
        let base = top + h;
        let y_of = |v: f64| base - h * (v / max).clamp(0.0, 1.0);
        let x_of = |t: u64| (LABEL_W + vp.ns_to_px(t)).clamp(lo, hi);
        let (t0, t1) = (vp.start_ns(), vp.end_ns());
        let mut cur = c.value_at(t0);
        ctx.begin_path();
        ctx.move_to(lo, base);
        ctx.line_to(lo, y_of(cur));
        let mut n = 0u32;
        for p in c.points_in(t0, t1) {
            if p.time_ns <= t0 {
                continue;
            }
            let x = x_of(p.time_ns);
            ctx.line_to(x, y_of(cur));
            ctx.line_to(x, y_of(p.value));
            cur = p.value;
            n += 1;
        }
        ctx.line_to(hi, y_of(cur));
        ctx.line_to(hi, base);
        ctx.close_path();
        ctx.set_fill_style_str(palette::COUNTER_FILL);
        ctx.fill();
        ctx.set_stroke_style_str(palette::COUNTER_LINE);
        ctx.set_line_width(1.0);
        ctx.stroke();
        stats.counters += 1;
        stats.counter_points += n;
        // The peak: a vertical line through the lane and a downward
        // triangle on top of it, where the series first reaches its most.
        if let Some(peak) = c.peak.as_ref().filter(|p| (t0..=t1).contains(&p.time_ns)) {
            let x = (LABEL_W + vp.ns_to_px(peak.time_ns)).round() + 0.5;
            ctx.begin_path();
            ctx.move_to(x, top);
            ctx.line_to(x, base);
            ctx.set_stroke_style_str(palette::COUNTER_PEAK);
            ctx.set_line_width(1.5);
            ctx.stroke();
            ctx.begin_path();
            ctx.move_to(x - PEAK_MARK_PX, top);
            ctx.line_to(x + PEAK_MARK_PX, top);
            ctx.line_to(x, top + PEAK_MARK_PX * 1.5);
            ctx.close_path();
            ctx.set_fill_style_str(palette::COUNTER_PEAK);
            ctx.fill();
            stats.counter_peaks += 1;
        }
    }
}

/// The span labels [`draw_lanes`] collected, drawn last so the
/// critical-path overlay and the selection never hide them.
fn draw_texts(ctx: &Ctx, scratch: &Scratch, stats: &mut FrameStats) {
    if !scratch.texts.is_empty() {
        ctx.set_font(FONT);
        ctx.set_text_align("center");
        ctx.set_text_baseline("middle");
        for dark in [true, false] {
            ctx.set_fill_style_str(if dark { "#000000" } else { "#FFFFFF" });
            for (x, y, t, d) in &scratch.texts {
                if *d == dark {
                    let _ = ctx.fill_text(t, *x, *y + 0.5);
                }
            }
        }
        stats.texts = scratch.texts.len() as u32;
    }
}

/// Screen rectangle (x, y, w, h) of span `r` of `section`, when its row
/// is laid out (it may be off screen).
fn span_rect(scene: &Scene, section: usize, r: SpanRef) -> Option<(f64, f64, f64, f64)> {
    let sec = scene.sections.get(section)?;
    let s = sec.tl.span(r)?;
    let row = scene.layout.row_of_lane(section, r.lane)?;
    let x0 = LABEL_W + scene.vp.ns_to_px(s.start_ns);
    let x1 = LABEL_W + scene.vp.ns_to_px(s.end_ns());
    let y = screen_y(scene, row.y) + PAD_Y;
    Some((x0, y, (x1 - x0).max(1.0), row.h - 2.0 * PAD_Y))
}

/// Clamp a rectangle horizontally to a little beyond the plot (huge
/// coordinates at deep zoom upset the rasteriser).
fn clamp_rect(scene: &Scene, (x, y, w, h): (f64, f64, f64, f64)) -> (f64, f64, f64, f64) {
    let lo = LABEL_W - 10.0;
    let hi = LABEL_W + scene.vp.width_px() + 10.0;
    let a = x.clamp(lo, hi);
    let b = (x + w).clamp(lo, hi);
    (a, y, (b - a).max(1.0), h)
}

/// The critical path, bounded by pixels, not path length: per visible row,
/// each lane the row shows ([`lod::critical_runs`], at most one run per
/// pixel column), filled by kind and outlined (outlines merge across gaps
/// under 3 px); row-change links sampled every 4 px of the window through
/// the chronological path (a binary search per sample).
fn draw_critical(
    ctx: &Ctx,
    scene: &Scene,
    scratch: &mut Scratch,
    visible: std::ops::Range<usize>,
    stats: &mut FrameStats,
) {
    let vp = scene.vp;
    let rows_h = (scene.height - RULER_H).max(0.0);
    // Dim everything, then redraw the path on top.
    ctx.set_fill_style_str("rgba(255,255,255,0.62)");
    ctx.fill_rect(LABEL_W, RULER_H, vp.width_px(), rows_h);
    if scratch.rects.len() != SpanKind::ALL.len() {
        scratch.rects = vec![Vec::new(); SpanKind::ALL.len()];
    }
    for r in &mut scratch.rects {
        r.clear();
    }
    let outlines = &mut scratch.crit_outlines;
    outlines.clear();
    let lo = LABEL_W - 10.0;
    let hi = LABEL_W + vp.width_px() + 10.0;
    for row in &scene.layout.rows[visible] {
        let RowKind::Lane {
            section,
            group,
            lane,
            collapsed,
            ..
        } = row.kind
        else {
            continue;
        };
        let Some(sec) = scene.sections.get(section) else {
            continue;
        };
        let lanes: &[u32] = match scene.layout.groups.get(group) {
            Some(g) if collapsed => &g.lanes,
            _ => std::slice::from_ref(&lane),
        };
        let y = screen_y(scene, row.y) + PAD_Y;
        let h = row.h - 2.0 * PAD_Y;
        for &l in lanes {
            let n = lod::critical_runs(&sec.tl, l, vp, &mut scratch.crit);
            stats.critical_rects += n as u32;
            stats.max_lane_critical = stats.max_lane_critical.max(n as u32);
            let mut open: Option<[f64; 2]> = None;
            for run in &scratch.crit {
                let a = (LABEL_W + run.x0).clamp(lo, hi);
                let b = (LABEL_W + run.x1).clamp(lo, hi);
                let w = (b - a).max(1.0);
                scratch.rects[kind_index(run.kind)].push([a, y, w, h]);
                match &mut open {
                    Some(o) if a <= o[1] + 3.0 => o[1] = o[1].max(a + w),
                    _ => {
                        if let Some(o) = open.take() {
                            outlines.push([o[0], y, o[1] - o[0], h]);
                        }
                        open = Some([a, a + w]);
                    }
                }
            }
            if let Some(o) = open {
                outlines.push([o[0], y, o[1] - o[0], h]);
            }
        }
    }
    for (k, rects) in scratch.rects.iter().enumerate() {
        let Some(kind) = SpanKind::ALL.get(k) else {
            continue;
        };
        if rects.is_empty() {
            continue;
        }
        ctx.set_fill_style_str(palette::kind_color(*kind));
        ctx.begin_path();
        for r in rects {
            ctx.rect(r[0], r[1], r[2], r[3]);
        }
        ctx.fill();
    }
    ctx.set_stroke_style_str(palette::CRITICAL);
    ctx.set_line_width(1.5);
    ctx.begin_path();
    for o in outlines.iter() {
        ctx.rect(o[0] - 0.75, o[1] - 0.75, o[2] + 1.5, o[3] + 1.5);
    }
    // Row-change links: one sample every 4 px.
    for (si, sec) in scene.sections.iter().enumerate() {
        let tl = &sec.tl;
        let path = tl.critical_path();
        let end_of = |r: &SpanRef| tl.span(*r).map_or(0, |s| s.end_ns());
        let mut last_k = usize::MAX;
        for c in (0..vp.columns()).step_by(4) {
            let t0 = vp.column_start_ns(c);
            let t1 = vp.column_start_ns(c + 4);
            let k = path.partition_point(|r| end_of(r) <= t0);
            if k == 0 || k >= path.len() || k == last_k {
                continue;
            }
            let (prev, cur) = (path[k - 1], path[k]);
            if tl.span(cur).is_none_or(|s| s.start_ns >= t1) {
                continue;
            }
            let (Some(a), Some(b)) = (span_rect(scene, si, prev), span_rect(scene, si, cur)) else {
                continue;
            };
            if (a.1 - b.1).abs() <= 0.5 {
                continue;
            }
            last_k = k;
            let (ax, ay, aw, ah) = clamp_rect(scene, a);
            let (bx, by, _, bh) = clamp_rect(scene, b);
            ctx.move_to(ax + aw, ay + ah / 2.0);
            ctx.line_to(bx, by + bh / 2.0);
        }
    }
    ctx.stroke();
}

/// An arrow from (x0, y0) to (x1, y1): a cubic curve with a head.
fn arrow(ctx: &Ctx, x0: f64, y0: f64, x1: f64, y1: f64) {
    let dx = ((x1 - x0).abs() / 2.0).max(16.0);
    let (c1x, c1y, c2x, c2y) = if (y1 - y0).abs() < 1.0 {
        // Same row: arc over the top.
        (x0 + dx / 2.0, y0 - 14.0, x1 - dx / 2.0, y1 - 14.0)
    } else {
        (x0 + dx, y0, x1 - dx, y1)
    };
    ctx.begin_path();
    ctx.move_to(x0, y0);
    ctx.bezier_curve_to(c1x, c1y, c2x, c2y, x1, y1);
    ctx.stroke();
    let ang = (y1 - c2y).atan2(x1 - c2x);
    let l = 7.0;
    ctx.begin_path();
    ctx.move_to(x1, y1);
    ctx.line_to(x1 - l * (ang - 0.45).cos(), y1 - l * (ang - 0.45).sin());
    ctx.line_to(x1 - l * (ang + 0.45).cos(), y1 - l * (ang + 0.45).sin());
    ctx.close_path();
    ctx.fill();
}

fn draw_selection(ctx: &Ctx, scene: &Scene) {
    let sel = scene.selection;
    ctx.set_stroke_style_str(palette::SELECT);
    ctx.set_fill_style_str(palette::SELECT);
    if let Some(hit) = sel.hit {
        let target = span_rect(scene, hit.section, hit.span_ref());
        // Dependencies: dashed outlines and arrows into the selected span.
        ctx.set_line_width(1.5);
        let dash = js_sys::Array::of2(&4.0.into(), &3.0.into());
        for d in &sel.deps {
            let Some(r) = span_rect(scene, hit.section, *d) else {
                continue;
            };
            let (x, y, w, h) = clamp_rect(scene, r);
            let _ = ctx.set_line_dash(&dash);
            ctx.stroke_rect(x, y, w, h);
            let _ = ctx.set_line_dash(&js_sys::Array::new());
            if let Some(t) = target {
                let (tx, ty, _, th) = clamp_rect(scene, t);
                arrow(ctx, (x + w).min(tx), y + h / 2.0, tx, ty + th / 2.0);
            }
        }
        // Pipeline transfers: send -> receive, between lanes.
        ctx.set_stroke_style_str(palette::CRITICAL);
        ctx.set_fill_style_str(palette::CRITICAL);
        ctx.set_line_width(1.5);
        for (from, to) in &sel.flows {
            let (Some(a), Some(b)) = (
                span_rect(scene, hit.section, *from),
                span_rect(scene, hit.section, *to),
            ) else {
                continue;
            };
            let (ax, ay, aw, ah) = clamp_rect(scene, a);
            let (bx, by, bw, bh) = clamp_rect(scene, b);
            let (x0, x1) = (ax + aw / 2.0, bx + bw / 2.0);
            let (y0, y1) = if by > ay {
                (ay + ah, by)
            } else {
                (ay, by + bh)
            };
            arrow(ctx, x0, y0, x1, y1);
        }
        if let Some(t) = target {
            let (x, y, w, h) = clamp_rect(scene, t);
            ctx.set_line_width(3.0);
            ctx.set_stroke_style_str("#FFFFFF");
            ctx.stroke_rect(x - 1.5, y - 1.5, w + 3.0, h + 3.0);
            ctx.set_line_width(2.0);
            ctx.set_stroke_style_str(palette::SELECT);
            ctx.stroke_rect(x - 1.0, y - 1.0, w + 2.0, h + 2.0);
        }
    }
    if let Some(hv) = scene.hover {
        if let Some(r) = span_rect(scene, hv.section, hv.span_ref()) {
            let (x, y, w, h) = clamp_rect(scene, r);
            ctx.set_line_width(1.0);
            ctx.set_stroke_style_str(palette::INK);
            ctx.stroke_rect(x - 0.5, y - 0.5, w + 1.0, h + 1.0);
        }
    }
}

fn draw_labels(ctx: &Ctx, scene: &Scene, visible: std::ops::Range<usize>) {
    let w = scene.width;
    // Label column background (bands continue under it).
    ctx.set_text_baseline("middle");
    for row in &scene.layout.rows[visible.clone()] {
        let y = screen_y(scene, row.y);
        match row.kind {
            RowKind::Section(s) => {
                ctx.set_fill_style_str("#E4ECF3");
                ctx.fill_rect(0.0, y, w, row.h);
                let Some(sec) = scene.sections.get(s) else {
                    continue;
                };
                ctx.set_fill_style_str(palette::INK);
                ctx.set_font(FONT_BOLD);
                ctx.set_text_align("left");
                // "ends at", not "iteration": a measured timeline may hold
                // more than one iteration (an Optimus-Prime log's steps).
                let text = format!(
                    "{} — ends at {}",
                    sec.label,
                    format::duration(sec.tl.end_ns())
                );
                let _ = ctx.fill_text(&text, 8.0, y + row.h / 2.0);
            }
            RowKind::Lane {
                section,
                group,
                lane,
                first,
                collapsed,
            } => {
                let Some(g) = scene.layout.groups.get(group) else {
                    continue;
                };
                let mid = y + row.h / 2.0;
                if first {
                    ctx.set_fill_style_str(palette::INK);
                    ctx.set_font(FONT_BOLD);
                    ctx.set_text_align("left");
                    let tri = if collapsed { "▸" } else { "▾" };
                    let _ = ctx.fill_text(tri, 6.0, mid);
                    let _ = ctx.fill_text_with_max_width(&g.name, 18.0, mid, LABEL_W - 100.0);
                }
                ctx.set_fill_style_str(palette::MUTED);
                ctx.set_font(FONT_SMALL);
                ctx.set_text_align("right");
                let name = if collapsed {
                    format!("{} lanes", g.lanes.len())
                } else {
                    scene
                        .sections
                        .get(section)
                        .and_then(|s| s.tl.lanes().get(lane as usize))
                        .map_or(String::new(), |l| stream_label(l.stream).to_string())
                };
                let _ = ctx.fill_text(&name, LABEL_W - 8.0, mid);
            }
            RowKind::Counter {
                section, counter, ..
            } => {
                let Some(c) = scene.counter(section, counter) else {
                    continue;
                };
                ctx.set_fill_style_str(palette::MUTED);
                ctx.set_font(FONT_SMALL);
                ctx.set_text_align("right");
                let peak = format::counter_value(c.max_value(), c.unit, true);
                let _ = ctx.fill_text(&format!("act. peak {peak}"), LABEL_W - 8.0, y + row.h / 2.0);
            }
        }
    }
    // Separators: above each group, and the label column's edge.
    ctx.begin_path();
    for row in &scene.layout.rows[visible.clone()] {
        if let RowKind::Lane { first: true, .. } = row.kind {
            let y = screen_y(scene, row.y).round() + 0.5;
            ctx.move_to(0.0, y);
            ctx.line_to(w, y);
        }
    }
    let x = LABEL_W.round() - 0.5;
    for row in &scene.layout.rows[visible] {
        if let RowKind::Lane { .. } | RowKind::Counter { .. } = row.kind {
            let y = screen_y(scene, row.y);
            ctx.move_to(x, y.max(RULER_H));
            ctx.line_to(x, y + row.h);
        }
    }
    ctx.set_stroke_style_str("#C9CFD6");
    ctx.set_line_width(1.0);
    ctx.stroke();
}

fn draw_ruler(ctx: &Ctx, scene: &Scene, step: u64) {
    let vp = scene.vp;
    let w = scene.width;
    ctx.set_fill_style_str("#F7F8FA");
    ctx.fill_rect(0.0, 0.0, w, RULER_H);
    ctx.begin_path();
    ctx.move_to(0.0, RULER_H - 0.5);
    ctx.line_to(w, RULER_H - 0.5);
    // Minor ticks.
    let lead = step / 10u64.pow(step.checked_ilog10().unwrap_or(0));
    let minor = step / if lead == 2 { 4 } else { 5 };
    if minor >= 1 && vp.ns_len_to_px(minor as f64) >= 6.0 {
        for t in ticks(vp, minor) {
            let x = (LABEL_W + vp.ns_to_px(t)).round() + 0.5;
            ctx.move_to(x, RULER_H - 4.0);
            ctx.line_to(x, RULER_H);
        }
    }
    for t in ticks(vp, step) {
        let x = (LABEL_W + vp.ns_to_px(t)).round() + 0.5;
        ctx.move_to(x, RULER_H - 9.0);
        ctx.line_to(x, RULER_H);
    }
    ctx.set_stroke_style_str(palette::MUTED);
    ctx.set_line_width(1.0);
    ctx.stroke();
    ctx.save();
    ctx.begin_path();
    ctx.rect(LABEL_W, 0.0, vp.width_px(), RULER_H);
    ctx.clip();
    ctx.set_fill_style_str(palette::INK);
    ctx.set_font(FONT);
    ctx.set_text_align("left");
    ctx.set_text_baseline("middle");
    let right = LABEL_W + vp.width_px();
    for t in ticks(vp, step) {
        let x = (LABEL_W + vp.ns_to_px(t)).round() + 3.0;
        let label = format::tick_label(t, step);
        // Skip a label that would be cut by the plot's right edge.
        if x + label.chars().count() as f64 * CHAR_W * 0.95 > right {
            continue;
        }
        let _ = ctx.fill_text(&label, x, 8.5);
    }
    ctx.restore();
    ctx.set_fill_style_str(palette::MUTED);
    ctx.set_font(FONT_SMALL);
    ctx.set_text_align("left");
    let _ = ctx.fill_text(
        &format!("{} visible", format::duration(vp.range_ns())),
        8.0,
        RULER_H / 2.0,
    );
}

fn draw_scrollbar(ctx: &Ctx, scene: &Scene) {
    let rows_h = (scene.height - RULER_H).max(0.0);
    let total = scene.layout.height;
    if total <= rows_h + 0.5 || rows_h <= 0.0 {
        return;
    }
    let thumb = (rows_h * rows_h / total).max(16.0);
    let y = RULER_H + (rows_h - thumb) * (scene.scroll_y / (total - rows_h)).clamp(0.0, 1.0);
    ctx.set_fill_style_str("rgba(27,31,36,0.30)");
    ctx.fill_rect(scene.width - SCROLLBAR_W - 1.0, y, SCROLLBAR_W, thumb);
}

/// Render the overview of every section (one thin row per group, sampled
/// when there are more groups than pixel rows) into `ctx`, `width` x
/// `height` CSS px, over the full extent `full`.
pub fn draw_overview_content(
    ctx: &Ctx,
    sections: &[Section],
    layout: &Layout,
    full: &Viewport,
    width: f64,
    height: f64,
) {
    ctx.set_fill_style_str("#F7F8FA");
    ctx.fill_rect(0.0, 0.0, width, height);
    ctx.set_fill_style_str(palette::MUTED);
    ctx.set_font(FONT_SMALL);
    ctx.set_text_align("left");
    ctx.set_text_baseline("middle");
    let _ = ctx.fill_text("overview", 8.0, height / 2.0 - 6.0);
    let _ = ctx.fill_text("click or drag to move", 8.0, height / 2.0 + 7.0);
    let n_sec = sections.len().max(1);
    let top = 3.0;
    let sec_h = (height - 2.0 * top) / n_sec as f64;
    let mut prims = Vec::new();
    let mut rects: Vec<Vec<[f64; 4]>> = vec![Vec::new(); SpanKind::ALL.len()];
    for (si, sec) in sections.iter().enumerate() {
        let groups: Vec<u32> = layout
            .groups
            .iter()
            .filter(|g| g.section == si)
            .map(|g| g.primary)
            .collect();
        if groups.is_empty() {
            continue;
        }
        let max_rows = (sec_h / 1.5).floor().max(1.0) as usize;
        let shown = groups.len().min(max_rows);
        let row_h = sec_h / shown as f64;
        for k in 0..shown {
            let Some(&lane) = groups.get(k * groups.len() / shown) else {
                continue;
            };
            lod::lane_prims(&sec.tl, lane, full, &mut prims);
            let y = top + si as f64 * sec_h + k as f64 * row_h;
            let hh = if row_h >= 3.0 { row_h - 0.5 } else { row_h };
            for p in &prims {
                let (x0, x1, kind, frac) = match *p {
                    Prim::Span { index, x0, x1 } => {
                        let Some(s) = sec.tl.spans(lane).get(index as usize) else {
                            continue;
                        };
                        (x0, x1, s.kind, 1.0)
                    }
                    Prim::Agg {
                        x0,
                        x1,
                        kind,
                        level,
                    } => (x0, x1, kind, f64::from(level) / f64::from(LEVELS)),
                };
                let bh = (hh * frac).max(1.0);
                rects[kind_index(kind)].push([
                    LABEL_W + x0.max(0.0),
                    y + (hh - bh),
                    (x1.min(full.width_px()) - x0.max(0.0)).max(1.0),
                    bh,
                ]);
            }
        }
    }
    for (k, rs) in rects.iter().enumerate() {
        let Some(kind) = SpanKind::ALL.get(k) else {
            continue;
        };
        if rs.is_empty() {
            continue;
        }
        ctx.set_fill_style_str(palette::kind_color(*kind));
        ctx.begin_path();
        for r in rs {
            ctx.rect(r[0], r[1], r[2], r[3]);
        }
        ctx.fill();
    }
}

/// Draw the overview strip: the cached content, a veil outside the visible
/// window and the window's frame.
pub fn draw_overview(
    ctx: &Ctx,
    cache: &HtmlCanvasElement,
    vp: &Viewport,
    full: &Viewport,
    width: f64,
    height: f64,
) {
    ctx.set_fill_style_str(palette::BACKGROUND);
    ctx.fill_rect(0.0, 0.0, width, height);
    let _ = ctx.draw_image_with_html_canvas_element_and_dw_and_dh(cache, 0.0, 0.0, width, height);
    let x0 = LABEL_W + full.ns_to_px(vp.start_ns());
    let mut x1 = LABEL_W + full.ns_to_px(vp.end_ns());
    if x1 - x0 < 3.0 {
        x1 = x0 + 3.0;
    }
    ctx.set_fill_style_str("rgba(60,70,85,0.22)");
    ctx.fill_rect(LABEL_W, 0.0, (x0 - LABEL_W).max(0.0), height);
    ctx.fill_rect(x1, 0.0, (LABEL_W + full.width_px() - x1).max(0.0), height);
    ctx.set_stroke_style_str(palette::kind_color(SpanKind::Forward));
    ctx.set_line_width(2.0);
    ctx.stroke_rect(x0, 1.0, x1 - x0, height - 2.0);
    ctx.begin_path();
    ctx.move_to(0.0, height - 0.5);
    ctx.line_to(width, height - 0.5);
    ctx.move_to(LABEL_W - 0.5, 0.0);
    ctx.line_to(LABEL_W - 0.5, height);
    ctx.set_stroke_style_str("#C9CFD6");
    ctx.set_line_width(1.0);
    ctx.stroke();
}
