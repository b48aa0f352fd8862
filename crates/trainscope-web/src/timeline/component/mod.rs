//! The [`Timeline`] Yew component: a canvas timeline of one run, or of two
//! aligned runs sharing one time axis (compare mode: measured vs simulated,
//! A vs B). It owns the interaction state (viewport, vertical scroll,
//! collapsed groups, hover, selection, critical-path toggle) and redraws at
//! most once per animation frame: every event only updates state and asks
//! for a frame. The DOM around the canvas (toolbar, `view-range`, tooltip,
//! details panel, legend) is ordinary Yew markup.
//!
//! New data with the same lanes and groups (a settings edit re-simulating
//! the same job) keeps the view: the time window (clamped to the new
//! extent), the collapsed groups and the selection when the same span
//! (lane, index, label) still exists; other data resets the view.
//! Keyboard (the timeline focused): W/S zoom, A/D pan, F fits, arrows move
//! the selection (Left/Right along the lane, Up/Down to the neighbouring
//! row), Enter/Space opens the selected span's details, C collapses or
//! expands its group, Escape clears.

mod details;
mod input;
mod selection;

use super::draw::{self, FrameStats, Scratch, Section, Selection, LABEL_W, OVERVIEW_H, RULER_H};
use super::format;
use super::hit::{self, Hit};
use super::layout::{self, Layout, RowKind};
use super::palette;
use super::viewport::Viewport;
use gloo::events::{EventListener, EventListenerOptions};
use gloo::render::{request_animation_frame, AnimationFrame};
use input::{relative, wheel_action, WheelAction, DRAG_SLOP, KEY_PAN, KEY_ZOOM, WHEEL_ZOOM_PER_PX};
use std::cell::Cell;
use std::rc::Rc;
use trainscope_core::timeline::{LaneGroup, SpanKind, SpanRef, Timeline as Model};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{
    CanvasRenderingContext2d, Element, HtmlCanvasElement, HtmlElement, KeyboardEvent, MouseEvent,
    ResizeObserver, WheelEvent,
};
use yew::prelude::*;

/// Properties of [`Timeline`].
#[derive(Properties, Clone)]
pub struct TimelineProps {
    /// The run to show.
    pub timeline: Rc<Model>,
    /// Its name in compare mode (default `A`).
    #[prop_or_default]
    pub label: AttrValue,
    /// A second run drawn below the first on the same time axis.
    #[prop_or_default]
    pub compare: Option<Rc<Model>>,
    /// The second run's name (default `B`).
    #[prop_or_default]
    pub compare_label: AttrValue,
    /// More runs stacked below, each with its name, on the same time axis
    /// (the schedule comparison's timelines).
    #[prop_or_default]
    pub stack: Vec<(AttrValue, Rc<Model>)>,
    /// Start with every group collapsed (one row per stage or rank).
    #[prop_or_default]
    pub start_collapsed: bool,
    /// Prefix of every `data-testid` inside (`schedule-` gives
    /// `schedule-timeline`, `schedule-view-range`, ...), so a second
    /// timeline on the page has its own names; empty for the main one.
    #[prop_or_default]
    pub testid_prefix: AttrValue,
    /// Highlight the critical path (initial state of the toggle; a change of
    /// this prop sets the toggle).
    #[prop_or_default]
    pub critical_path: bool,
    /// Offered on a selected span: re-run with its GPU 20% slower (a
    /// `--slow` argument, `17:1.2` or `stage2:1.2`), the run shown pinned
    /// as A (the what-if).
    #[prop_or_default]
    pub on_slow: Option<Callback<String>>,
    /// Tallest the lane canvas gets, CSS px (more rows scroll).
    #[prop_or(560.0)]
    pub max_height_px: f64,
    /// Called after every frame with what it drew (benchmarks).
    #[prop_or_default]
    pub on_frame: Option<Callback<FrameStats>>,
}

impl PartialEq for TimelineProps {
    /// Timelines compare by identity (a deep comparison of a million spans
    /// per parent render would be wasteful).
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.timeline, &other.timeline)
            && match (&self.compare, &other.compare) {
                (None, None) => true,
                (Some(a), Some(b)) => Rc::ptr_eq(a, b),
                _ => false,
            }
            && self.stack.len() == other.stack.len()
            && self
                .stack
                .iter()
                .zip(&other.stack)
                .all(|((la, a), (lb, b))| la == lb && Rc::ptr_eq(a, b))
            && self.start_collapsed == other.start_collapsed
            && self.testid_prefix == other.testid_prefix
            && self.label == other.label
            && self.compare_label == other.compare_label
            && self.critical_path == other.critical_path
            && self.max_height_px == other.max_height_px
            && self.on_frame == other.on_frame
    }
}

/// Messages of [`Timeline`] (positions in CSS px relative to the element
/// named).
#[doc(hidden)]
pub enum Msg {
    /// Wheel over the lane canvas: position and deltas in px.
    Wheel {
        x: f64,
        y: f64,
        dx: f64,
        dy: f64,
        shift: bool,
        ctrl: bool,
    },
    /// Button pressed on the lane canvas.
    Down {
        x: f64,
        y: f64,
    },
    /// Button pressed on the overview.
    OverviewDown {
        x: f64,
    },
    /// Pointer moved during a drag (client coordinates).
    DragMove {
        cx: f64,
        cy: f64,
    },
    /// Button released (client coordinates).
    DragEnd {
        cx: f64,
        cy: f64,
    },
    /// Pointer moved over the lane canvas without a button.
    Hover {
        x: f64,
        y: f64,
    },
    Leave,
    Key(KeyboardEvent),
    ZoomIn,
    ZoomOut,
    Fit,
    ToggleCritical,
    ToggleAll,
    Select(Option<Hit>),
    ZoomToSelection,
    Frame,
    Resized,
}

enum Drag {
    Plot {
        x0: f64,
        y0: f64,
        vp0: Viewport,
        scroll0: f64,
        moved: bool,
    },
    Overview,
}

struct HoverInfo {
    hit: Hit,
    x: f64,
    y: f64,
}

/// The pointer over a counter lane: which one, the time under it, where.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CounterHover {
    section: usize,
    counter: u32,
    t_ns: u64,
    x: f64,
    y: f64,
}

/// The timeline component (see the module docs).
pub struct Timeline {
    canvas: NodeRef,
    overview: NodeRef,
    root: NodeRef,
    details: NodeRef,
    /// The view-range label: its text and `data-start-ns`/`data-end-ns`
    /// are written by each frame (not by `view`), so a drag moves the view
    /// without re-rendering the component.
    range_label: NodeRef,
    /// The viewport the label shows.
    range_label_of: Option<Viewport>,
    sections: Vec<Section>,
    layout: Layout,
    collapsed: Vec<bool>,
    vp: Viewport,
    scroll_y: f64,
    hover: Option<HoverInfo>,
    counter_hover: Option<CounterHover>,
    start_collapsed: bool,
    testid_prefix: AttrValue,
    selection: Selection,
    critical: bool,
    drag: Option<Drag>,
    pointer_x: Option<f64>,
    raf: Option<AnimationFrame>,
    listeners: Vec<EventListener>,
    /// A drag is in progress: set by the mousedown listeners and cleared by
    /// the window's mouseup listener, synchronously in the event handlers.
    /// The window listeners stay attached for the component's life (they
    /// return at once when no drag is on), so no attach/detach can race a
    /// release or the next press.
    dragging: Rc<Cell<bool>>,
    /// The lanes' vertical scroll and its maximum, px, kept current by
    /// `clamp_scroll`: the wheel listener reads it synchronously to decide
    /// whether a plain wheel scrolls the lanes (they can move that way) or
    /// is left to the page (at the lanes' top or bottom, or all lanes shown).
    lane_scroll: Rc<Cell<(f64, f64)>>,
    resize: Option<(ResizeObserver, Closure<dyn FnMut()>)>,
    ctx2d: Option<CanvasRenderingContext2d>,
    overview_ctx: Option<CanvasRenderingContext2d>,
    overview_cache: Option<(HtmlCanvasElement, f64, f64)>,
    scratch: Scratch,
    legend: Vec<SpanKind>,
}

fn sections_of(props: &TimelineProps) -> Vec<Section> {
    let mut v = Vec::new();
    let compare = props.compare.is_some();
    let name = |a: &AttrValue, d: &str| {
        if a.is_empty() {
            d.to_string()
        } else {
            a.to_string()
        }
    };
    v.push(Section {
        tl: props.timeline.clone(),
        label: if compare {
            name(&props.label, "A")
        } else {
            props.label.to_string()
        },
    });
    if let Some(c) = &props.compare {
        v.push(Section {
            tl: c.clone(),
            label: name(&props.compare_label, "B"),
        });
    }
    for (label, tl) in &props.stack {
        v.push(Section {
            tl: tl.clone(),
            label: label.to_string(),
        });
    }
    v
}

/// Kinds present in the timelines, in legend order.
fn kinds_present(sections: &[Section]) -> Vec<SpanKind> {
    let mut seen = [false; 12];
    for sec in sections {
        for l in 0..sec.tl.lanes().len() as u32 {
            for s in sec.tl.spans(l) {
                if let Some(x) = seen.get_mut(s.kind as usize) {
                    *x = true;
                }
            }
        }
    }
    SpanKind::ALL
        .iter()
        .copied()
        .filter(|k| seen.get(*k as usize).copied().unwrap_or(false))
        .collect()
}

/// Extent of the time axis: the latest end plus 2 % room.
fn extent_of(sections: &[Section]) -> u64 {
    let end = sections.iter().map(|s| s.tl.end_ns()).max().unwrap_or(0);
    end.saturating_add(end / 50).max(1)
}

impl Timeline {
    /// `data-testid` of an element inside: the prop's prefix + `name`.
    fn tid(&self, name: &str) -> String {
        format!("{}{name}", self.testid_prefix)
    }

    fn rows_height(&self, props: &TimelineProps) -> f64 {
        let max_rows = (props.max_height_px - RULER_H).max(2.0 * layout::LANE_H);
        self.layout.height.min(max_rows)
    }

    fn relayout(&mut self) {
        let groups = self.layout.groups.clone();
        self.layout = Layout::build(
            groups,
            self.sections.len(),
            &self.collapsed,
            self.sections.len() > 1,
        );
    }

    /// Show `sections` (what any new data needs: no hover, a new overview
    /// and legend).
    fn install(&mut self, sections: Vec<Section>) {
        self.sections = sections;
        self.hover = None;
        self.counter_hover = None;
        self.overview_cache = None;
        self.legend = kinds_present(&self.sections);
    }

    /// Show `sections` with a fresh view: layout `groups`, fitted window,
    /// no selection, large runs collapsed.
    fn reset(&mut self, sections: Vec<Section>, groups: Vec<layout::Group>) {
        self.install(sections);
        let rows: usize = groups.iter().map(|g| g.lanes.len()).sum();
        // Large runs start collapsed (one row per stage or rank).
        self.collapsed = vec![rows > 80 || self.start_collapsed; groups.len()];
        self.layout = Layout::build(groups, self.sections.len(), &self.collapsed, false);
        self.relayout();
        self.vp = Viewport::new(extent_of(&self.sections), self.vp.width_px());
        self.scroll_y = 0.0;
        self.selection = Selection::default();
    }

    /// New data: keep the view when the lane structure is the same (see
    /// the module docs), else [`Timeline::reset`].
    fn refresh(&mut self, props: &TimelineProps) {
        let sections = sections_of(props);
        let refs: Vec<&Model> = sections.iter().map(|s| s.tl.as_ref()).collect();
        let groups = layout::groups(&refs);
        let same = !self.sections.is_empty()
            && sections.len() == self.sections.len()
            && sections
                .iter()
                .zip(&self.sections)
                .all(|(a, b)| a.label == b.label && a.tl.lanes() == b.tl.lanes())
            && groups == self.layout.groups;
        if !same {
            self.reset(sections, groups);
            return;
        }
        let keep = self.selection.hit.and_then(|h| {
            let sec = self.sections.get(h.section)?;
            Some((
                h,
                sec.tl.label(sec.tl.span(h.span_ref())?.label).to_string(),
            ))
        });
        let was_fit = self.vp.is_fit();
        self.install(sections);
        self.relayout();
        self.vp.set_extent(extent_of(&self.sections));
        if was_fit {
            self.vp.fit();
        }
        let still = keep.filter(|(h, label)| {
            self.sections.get(h.section).is_some_and(|sec| {
                sec.tl
                    .span(h.span_ref())
                    .is_some_and(|s| sec.tl.label(s.label) == label)
            })
        });
        self.select(still.map(|(h, _)| h));
    }

    /// After the view moved under the pointer: the hover is dropped and a
    /// frame requested (the canvas and the range label are the frame's).
    /// Whether the component must re-render: only to drop a tooltip.
    fn move_view(&mut self, ctx: &Context<Self>) -> bool {
        let had_tooltip = self.hover.take().is_some() | self.counter_hover.take().is_some();
        self.request_frame(ctx);
        had_tooltip
    }

    fn request_frame(&mut self, ctx: &Context<Self>) {
        if self.raf.is_none() {
            let link = ctx.link().clone();
            self.raf = Some(request_animation_frame(move |_| {
                link.send_message(Msg::Frame)
            }));
        }
    }

    fn frame(&mut self, ctx: &Context<Self>) {
        self.raf = None;
        let Some(canvas) = self.canvas.cast::<HtmlCanvasElement>() else {
            return;
        };
        let css_w = f64::from(canvas.client_width());
        let css_h = f64::from(canvas.client_height());
        if css_w < 1.0 || css_h < 1.0 {
            return; // not laid out (hidden): the resize observer calls back
        }
        let window = gloo::utils::window();
        let perf = window.performance();
        let t0 = perf.as_ref().map_or(0.0, |p| p.now());
        let dpr = window.device_pixel_ratio().clamp(0.5, 4.0);
        let (bw, bh) = ((css_w * dpr).round() as u32, (css_h * dpr).round() as u32);
        if canvas.width() != bw || canvas.height() != bh {
            canvas.set_width(bw);
            canvas.set_height(bh);
        }
        if self.ctx2d.is_none() {
            self.ctx2d = context_2d(&canvas);
        }
        let plot_w = draw::plot_width(css_w);
        if (self.vp.width_px() - plot_w).abs() > 1e-9 {
            self.vp.set_width(plot_w);
            self.overview_cache = None;
        }
        self.clamp_scroll(ctx.props());
        let Some(c2) = self.ctx2d.clone() else {
            return;
        };
        let _ = c2.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
        self.scroll_y = (self.scroll_y * dpr).round() / dpr;
        let scene = draw::Scene {
            dpr,
            sections: &self.sections,
            layout: &self.layout,
            vp: &self.vp,
            scroll_y: self.scroll_y,
            width: css_w,
            height: css_h,
            selection: &self.selection,
            hover: self.hover.as_ref().map(|h| h.hit),
            critical: self.critical,
        };
        let mut stats = draw::draw(&c2, &scene, &mut self.scratch);
        self.draw_overview(css_w, dpr);
        self.show_range();
        stats.draw_ms = perf.as_ref().map_or(0.0, |p| p.now()) - t0;
        if let Some(cb) = &ctx.props().on_frame {
            cb.emit(stats);
        }
    }

    /// Write the view's range into the range label (text, `data-start-ns`,
    /// `data-end-ns`) when it changed.
    fn show_range(&mut self) {
        let Some(el) = self.range_label.cast::<Element>() else {
            return;
        };
        // (A label element made anew, e.g. on a remount, is written again.)
        if self.range_label_of == Some(self.vp) && el.has_attribute("data-start-ns") {
            return;
        }
        let vp = self.vp;
        let res = vp.range_ns() / 100;
        el.set_text_content(Some(&format!(
            "{} – {} ({} shown)",
            format::instant(vp.start_ns(), res),
            format::instant(vp.end_ns(), res),
            format::duration(vp.range_ns())
        )));
        let _ = el.set_attribute("data-start-ns", &vp.start_ns().to_string());
        let _ = el.set_attribute("data-end-ns", &vp.end_ns().to_string());
        self.range_label_of = Some(vp);
    }

    fn draw_overview(&mut self, css_w: f64, dpr: f64) {
        let Some(ov) = self.overview.cast::<HtmlCanvasElement>() else {
            return;
        };
        let (bw, bh) = (
            (css_w * dpr).round() as u32,
            (OVERVIEW_H * dpr).round() as u32,
        );
        if ov.width() != bw || ov.height() != bh {
            ov.set_width(bw);
            ov.set_height(bh);
        }
        if self.overview_ctx.is_none() {
            self.overview_ctx = context_2d(&ov);
        }
        let Some(octx) = self.overview_ctx.clone() else {
            return;
        };
        let full = Viewport::new(self.vp.extent_ns(), self.vp.width_px());
        let stale = match &self.overview_cache {
            Some((_, w, d)) => (*w - css_w).abs() > 1e-9 || (*d - dpr).abs() > 1e-9,
            None => true,
        };
        if stale {
            let Ok(el) = gloo::utils::document().create_element("canvas") else {
                return;
            };
            let Ok(cache) = el.dyn_into::<HtmlCanvasElement>() else {
                return;
            };
            cache.set_width(bw);
            cache.set_height(bh);
            if let Some(cctx) = context_2d(&cache) {
                let _ = cctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
                draw::draw_overview_content(
                    &cctx,
                    &self.sections,
                    &self.layout,
                    &full,
                    css_w,
                    OVERVIEW_H,
                );
            }
            self.overview_cache = Some((cache, css_w, dpr));
        }
        if let Some((cache, _, _)) = &self.overview_cache {
            let _ = octx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
            draw::draw_overview(&octx, cache, &self.vp, &full, css_w, OVERVIEW_H);
        }
    }
}

fn context_2d(c: &HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    c.get_context("2d")
        .ok()
        .flatten()
        .and_then(|o| o.dyn_into::<CanvasRenderingContext2d>().ok())
}

impl Component for Timeline {
    type Message = Msg;
    type Properties = TimelineProps;

    fn create(ctx: &Context<Self>) -> Self {
        let mut t = Timeline {
            canvas: NodeRef::default(),
            overview: NodeRef::default(),
            root: NodeRef::default(),
            details: NodeRef::default(),
            range_label: NodeRef::default(),
            range_label_of: None,
            sections: Vec::new(),
            layout: Layout::default(),
            collapsed: Vec::new(),
            vp: Viewport::new(1, 800.0),
            scroll_y: 0.0,
            hover: None,
            counter_hover: None,
            start_collapsed: ctx.props().start_collapsed,
            testid_prefix: ctx.props().testid_prefix.clone(),
            selection: Selection::default(),
            critical: ctx.props().critical_path,
            drag: None,
            pointer_x: None,
            raf: None,
            listeners: Vec::new(),
            dragging: Rc::default(),
            lane_scroll: Rc::default(),
            resize: None,
            ctx2d: None,
            overview_ctx: None,
            overview_cache: None,
            scratch: Scratch::default(),
            legend: Vec::new(),
        };
        t.refresh(ctx.props());
        t
    }

    fn changed(&mut self, ctx: &Context<Self>, old: &Self::Properties) -> bool {
        let p = ctx.props();
        let same_data = Rc::ptr_eq(&p.timeline, &old.timeline)
            && match (&p.compare, &old.compare) {
                (None, None) => true,
                (Some(a), Some(b)) => Rc::ptr_eq(a, b),
                _ => false,
            }
            && p.stack.len() == old.stack.len()
            && p.stack
                .iter()
                .zip(&old.stack)
                .all(|((la, a), (lb, b))| la == lb && Rc::ptr_eq(a, b));
        self.start_collapsed = p.start_collapsed;
        self.testid_prefix = p.testid_prefix.clone();
        if !same_data || p.label != old.label || p.compare_label != old.compare_label {
            self.refresh(p);
        }
        if p.critical_path != old.critical_path {
            self.critical = p.critical_path;
        }
        self.request_frame(ctx);
        true
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Self::Message) -> bool {
        let props = ctx.props();
        match msg {
            Msg::Frame => {
                self.frame(ctx);
                return false;
            }
            Msg::Resized => {
                self.request_frame(ctx);
                return false;
            }
            Msg::Wheel {
                x,
                y: _,
                dx,
                dy,
                shift,
                ctrl,
            } => {
                let px = x - LABEL_W;
                self.pointer_x = Some(px);
                match wheel_action(dx, dy, shift, ctrl) {
                    WheelAction::Zoom(d) => {
                        self.vp
                            .zoom_around(px.max(0.0), (-d * WHEEL_ZOOM_PER_PX).exp());
                    }
                    WheelAction::Pan(d) => self.vp.pan(d),
                    WheelAction::Scroll(d) => {
                        // The scroll indicator is the view's: re-render.
                        self.scroll_y += d;
                        self.clamp_scroll(props);
                        self.move_view(ctx);
                        return true;
                    }
                }
                return self.move_view(ctx);
            }
            Msg::Down { x, y } => {
                // The root (tabindex 0) takes the focus from the press
                // itself, so W/S/A/D work after a click.
                let drag = Drag::Plot {
                    x0: x,
                    y0: y,
                    vp0: self.vp,
                    scroll0: self.scroll_y,
                    moved: false,
                };
                self.start_drag(drag);
                return false;
            }
            Msg::OverviewDown { x } => {
                let t = self.overview_x_to_ns(x);
                self.vp.center_on(t);
                self.start_drag(Drag::Overview);
            }
            Msg::DragMove { cx, cy } => match &mut self.drag {
                Some(Drag::Plot {
                    x0,
                    y0,
                    vp0,
                    scroll0,
                    moved,
                }) => {
                    let Some(canvas) = self.canvas.cast::<Element>() else {
                        return false;
                    };
                    let (x, y) = relative(&canvas, cx, cy);
                    if !*moved && (x - *x0).abs() + (y - *y0).abs() < DRAG_SLOP {
                        return false;
                    }
                    *moved = true;
                    let mut vp = *vp0;
                    vp.set_width(self.vp.width_px());
                    vp.pan(*x0 - x);
                    self.vp = vp;
                    self.scroll_y = *scroll0 + (*y0 - y);
                    self.clamp_scroll(props);
                    // Re-rendered when the drag ends.
                    return self.move_view(ctx);
                }
                Some(Drag::Overview) => {
                    let Some(ov) = self.overview.cast::<Element>() else {
                        return false;
                    };
                    let (x, _) = relative(&ov, cx, cy);
                    let t = self.overview_x_to_ns(x);
                    self.vp.center_on(t);
                    self.request_frame(ctx);
                    return false;
                }
                None => return false,
            },
            Msg::DragEnd { cx, cy } => {
                let drag = self.drag.take();
                if let Some(Drag::Plot { moved: false, .. }) = drag {
                    let Some(canvas) = self.canvas.cast::<Element>() else {
                        return false;
                    };
                    let (x, y) = relative(&canvas, cx, cy);
                    if x < LABEL_W {
                        if !self.toggle_group_at(y) {
                            return false;
                        }
                        self.clamp_scroll(props);
                    } else {
                        let h = self.hit_at(x, y);
                        self.select(h);
                    }
                }
            }
            Msg::Hover { x, y } => {
                self.pointer_x = Some(x - LABEL_W);
                if self.drag.is_some() {
                    return false;
                }
                let h = self.hit_at(x, y);
                let old = self.hover.as_ref().map(|h| h.hit);
                self.hover = h.map(|hit| HoverInfo { hit, x, y });
                let old_counter = self.counter_hover.take();
                self.counter_hover = self.counter_at(x, y);
                if old != h {
                    self.request_frame(ctx);
                }
                return old.is_some()
                    || h.is_some()
                    || old_counter.is_some()
                    || self.counter_hover.is_some();
            }
            Msg::Leave => {
                self.pointer_x = None;
                let had_counter = self.counter_hover.take().is_some();
                if self.hover.take().is_none() && !had_counter {
                    return false;
                }
            }
            Msg::Key(e) => {
                if e.ctrl_key() || e.meta_key() || e.alt_key() {
                    return false;
                }
                let w = self.vp.width_px();
                // Enter / Space on a button inside (a dependency link)
                // belong to the button.
                let on_control = e
                    .target()
                    .and_then(|t| t.dyn_into::<Element>().ok())
                    .is_some_and(|el| {
                        matches!(
                            el.tag_name().as_str(),
                            "BUTTON" | "INPUT" | "SELECT" | "TEXTAREA" | "A"
                        )
                    });
                match e.key().as_str() {
                    "w" | "W" | "+" | "=" => self.vp.zoom_around(self.zoom_center(), KEY_ZOOM),
                    "s" | "S" | "-" | "_" => {
                        self.vp.zoom_around(self.zoom_center(), 1.0 / KEY_ZOOM)
                    }
                    "a" | "A" => self.vp.pan(-KEY_PAN * w),
                    "d" | "D" => self.vp.pan(KEY_PAN * w),
                    k @ ("ArrowLeft" | "ArrowRight" | "ArrowUp" | "ArrowDown") => {
                        let (dx, dy) = match k {
                            "ArrowLeft" => (-1, 0),
                            "ArrowRight" => (1, 0),
                            "ArrowUp" => (0, -1),
                            _ => (0, 1),
                        };
                        if let Some(h) = self.neighbour(props, dx, dy) {
                            self.select(Some(h));
                            self.reveal_selection(props);
                        }
                    }
                    "Enter" | " " if !on_control => {
                        if self.selection.hit.is_none() {
                            let h = self.first_visible_span(props);
                            self.select(h);
                            self.reveal_selection(props);
                        }
                        if let Some(d) = self.details.cast::<HtmlElement>() {
                            d.scroll_into_view_with_bool(false);
                            let _ = d.focus();
                        }
                    }
                    "c" | "C" => {
                        if !self.toggle_selected_group(props) {
                            return false;
                        }
                    }
                    "f" | "F" | "0" => self.vp.fit(),
                    "Escape" => self.select(None),
                    _ => return false,
                }
                e.prevent_default();
                self.hover = None;
                self.counter_hover = None;
            }
            Msg::ZoomIn => self.vp.zoom_around(self.vp.width_px() / 2.0, KEY_ZOOM),
            Msg::ZoomOut => self
                .vp
                .zoom_around(self.vp.width_px() / 2.0, 1.0 / KEY_ZOOM),
            Msg::Fit => self.vp.fit(),
            Msg::ToggleCritical => self.critical = !self.critical,
            Msg::ToggleAll => {
                let any_open = self.collapsed.iter().any(|c| !c);
                self.collapsed.iter_mut().for_each(|c| *c = any_open);
                self.relayout();
                self.clamp_scroll(props);
            }
            Msg::Select(h) => self.select(h),
            Msg::ZoomToSelection => {
                if let Some(s) = self
                    .selection
                    .hit
                    .and_then(|h| self.sections.get(h.section)?.tl.span(h.span_ref()).copied())
                {
                    let pad = (s.duration_ns / 4).max(Viewport::MIN_RANGE_NS);
                    self.vp.set_range(
                        s.start_ns.saturating_sub(pad),
                        s.end_ns().saturating_add(pad),
                    );
                }
            }
        }
        self.request_frame(ctx);
        true
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let props = ctx.props();
        let canvas_h = RULER_H + self.rows_height(props);
        let onkeydown = link.callback(Msg::Key);
        let all_collapsed = self.collapsed.iter().all(|c| *c);
        let legend: Html = self
            .legend
            .iter()
            .map(|k| {
                html! {
                    <li><span class="ts-tl-swatch" style={format!("background:{}", palette::kind_color(*k))}></span>{ palette::kind_label(*k) }</li>
                }
            })
            .collect();
        html! {
            <div class="ts-timeline" ref={self.root.clone()} tabindex="0" {onkeydown}
                aria-label="Timeline. The wheel scrolls the lanes, then the page; Ctrl and the wheel zoom; Shift and the wheel, or dragging, pan. Keys: W and S zoom, A and D pan, F fits; arrow keys select the previous or next span on a lane (Left, Right) or on the neighbouring lane (Up, Down); Enter or Space opens the selected span's details; C collapses or expands its group; Escape clears the selection.">
                <div class="ts-tl-toolbar">
                    <div class="ts-tl-group" role="group" aria-label="Zoom">
                        <button class="secondary ts-tl-btn" data-testid={self.tid("timeline-zoom-out")} title="Zoom out (S)" aria-label="Zoom out"
                            onclick={link.callback(|_| Msg::ZoomOut)}>{ "−" }</button>
                        <button class="secondary ts-tl-btn" data-testid={self.tid("timeline-zoom-in")} title="Zoom in (W)" aria-label="Zoom in"
                            onclick={link.callback(|_| Msg::ZoomIn)}>{ "+" }</button>
                        <button class="secondary ts-tl-btn" data-testid={self.tid("timeline-fit")} title="Show the whole iteration (F)"
                            onclick={link.callback(|_| Msg::Fit)}>{ "Fit" }</button>
                    </div>
                    <button class={classes!("secondary", "ts-tl-btn", self.critical.then_some("on"))} data-testid={self.tid("timeline-critical")}
                        aria-pressed={self.critical.to_string()} title={crate::glossary::definition(crate::views::ResultKind::Event, "critical_path")}
                        onclick={link.callback(|_| Msg::ToggleCritical)}>{ "Critical path" }</button>
                    <button class="secondary ts-tl-btn" data-testid={self.tid("timeline-collapse")}
                        onclick={link.callback(|_| Msg::ToggleAll)}>{ if all_collapsed { "Expand all" } else { "Collapse all" } }</button>
                    <span class="ts-tl-range" data-testid={self.tid("view-range")} ref={self.range_label.clone()}></span>
                    <span class="ts-tl-hint">{ "wheel: scroll · Ctrl+wheel / W S: zoom · drag / A D / Shift+wheel: pan · click / arrows: select · Enter: details · C: collapse group · Esc: clear" }</span>
                </div>
                <div class="ts-tl-main">
                    <div class="ts-tl-canvases" style="position:relative">
                        <canvas ref={self.overview.clone()} class="ts-tl-overview" data-testid={self.tid("timeline-overview")}
                            style={format!("display:block;width:100%;height:{OVERVIEW_H}px")} aria-label="Overview of the whole iteration; click or drag to move the view" />
                        <canvas ref={self.canvas.clone()} class="ts-tl-canvas" data-testid={self.tid("timeline")}
                            data-plot-left={LABEL_W.to_string()} data-ruler-height={RULER_H.to_string()}
                            data-scroll-y={format!("{:.0}", self.scroll_y)}
                            data-scroll-max={format!("{:.0}", (self.layout.height - self.rows_height(props)).max(0.0))}
                            data-runs={self.sections.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(",")}
                            data-lanes={self.sections.iter().map(|s| s.tl.lanes().len()).sum::<usize>().to_string()}
                            data-memory-lanes={self.layout.counter_rows().to_string()}
                            data-memory-rows={self.layout.rows.iter().filter(|r| matches!(r.kind, RowKind::Counter { .. })).map(|r| format!("{}-{}", RULER_H + r.y, RULER_H + r.y + r.h)).collect::<Vec<_>>().join(",")}
                            data-memory-first-y={self.layout.rows.iter().find(|r| matches!(r.kind, RowKind::Counter { .. })).map(|r| (RULER_H + r.y + r.h / 2.0).to_string())}
                            data-memory-peaks={self.peak_marks()}
                            data-counters={self.sections.iter().map(|s| s.tl.counters().len()).sum::<usize>().to_string()}
                            data-groups={self.layout.groups.iter().map(|g| format!("{}:{}", g.section, g.name)).collect::<Vec<_>>().join("|")}
                            style={format!("display:block;width:100%;height:{canvas_h}px")} role="img"
                            aria-label="Timeline of the run's lanes; hover a span for its details" />
                        { self.view_tooltip() }
                    </div>
                    { self.view_details(ctx) }
                </div>
                <ul class="ts-tl-legend" data-testid={self.tid("timeline-legend")} aria-label="Span kinds">{ legend }</ul>
            </div>
        }
    }

    fn rendered(&mut self, ctx: &Context<Self>, first_render: bool) {
        if first_render {
            self.attach_listeners(ctx);
            self.request_frame(ctx);
        }
    }

    fn destroy(&mut self, _ctx: &Context<Self>) {
        if let Some((obs, _)) = self.resize.take() {
            obs.disconnect();
        }
        self.listeners.clear();
        self.dragging.set(false);
        self.raf = None;
    }
}
