//! The timeline's input: wheel (by Perfetto's conventions), drag, keyboard
//! constants and the DOM listeners that turn events into [`Msg`]s; the
//! vertical scroll's clamp and the zoom centre they act on.

use super::*;

/// Zoom of Ctrl+wheel: the view narrows by `exp(delta_px x this)` (one
/// notch of a mouse wheel, 100 px, zooms by about 1.3x).
pub(super) const WHEEL_ZOOM_PER_PX: f64 = 0.0025;

/// What a wheel event over the lanes does, by Perfetto's conventions:
/// Ctrl (or Cmd) + wheel zooms around the pointer; a horizontal wheel
/// (trackpad) or Shift+wheel pans; a plain vertical wheel scrolls the lanes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum WheelAction {
    /// Zoom by this vertical delta, px (negative: in).
    Zoom(f64),
    /// Pan by this many px (positive: later).
    Pan(f64),
    /// Scroll the lanes by this many px (positive: down).
    Scroll(f64),
}

pub(crate) fn wheel_action(dx: f64, dy: f64, shift: bool, ctrl: bool) -> WheelAction {
    if ctrl {
        WheelAction::Zoom(if dy != 0.0 { dy } else { dx })
    } else if shift {
        // Browsers turn Shift+wheel into a horizontal delta, or not.
        WheelAction::Pan(if dx != 0.0 { dx } else { dy })
    } else if dx.abs() > dy.abs() {
        WheelAction::Pan(dx)
    } else {
        WheelAction::Scroll(dy)
    }
}

/// Whether the timeline takes a wheel event (and keeps it from the page):
/// always to zoom or pan; to scroll the lanes only while they can still
/// move that way (`lane_scroll`: the scroll and its maximum, px), so at the
/// top or bottom of the lanes, or with every lane shown, the page scrolls.
pub(crate) fn wheel_is_ours(
    dx: f64,
    dy: f64,
    shift: bool,
    ctrl: bool,
    lane_scroll: (f64, f64),
) -> bool {
    match wheel_action(dx, dy, shift, ctrl) {
        WheelAction::Zoom(_) | WheelAction::Pan(_) => true,
        WheelAction::Scroll(d) => {
            let (top, max) = lane_scroll;
            (d < 0.0 && top > 0.5) || (d > 0.0 && top < max - 0.5)
        }
    }
}

/// Zoom factor of one W/S key press or button click.
pub(super) const KEY_ZOOM: f64 = 1.5;

/// Fraction of the plot width one A/D key press pans.
pub(super) const KEY_PAN: f64 = 0.2;

/// Pixels of pointer motion before a press becomes a drag.
pub(super) const DRAG_SLOP: f64 = 3.0;

/// Position of a client point relative to `el`'s top-left corner.
pub(super) fn relative(el: &Element, cx: f64, cy: f64) -> (f64, f64) {
    let r = el.get_bounding_client_rect();
    (cx - r.left(), cy - r.top())
}

/// The window's mousemove / mouseup listeners of drags: they forward
/// events while `dragging` is set, and the mouseup clears it.
pub(super) fn watch_drag(
    link: &yew::html::Scope<Timeline>,
    dragging: &Rc<Cell<bool>>,
    listeners: &mut Vec<EventListener>,
) {
    let window = gloo::utils::window();
    let l = link.clone();
    let on = dragging.clone();
    listeners.push(EventListener::new(&window, "mousemove", move |e| {
        if !on.get() {
            return;
        }
        if let Some(e) = e.dyn_ref::<MouseEvent>() {
            l.send_message(Msg::DragMove {
                cx: f64::from(e.client_x()),
                cy: f64::from(e.client_y()),
            });
        }
    }));
    let l = link.clone();
    let on = dragging.clone();
    listeners.push(EventListener::new(&window, "mouseup", move |e| {
        if !on.replace(false) {
            return;
        }
        if let Some(e) = e.dyn_ref::<MouseEvent>() {
            l.send_message(Msg::DragEnd {
                cx: f64::from(e.client_x()),
                cy: f64::from(e.client_y()),
            });
        }
    }));
}

impl Timeline {
    pub(super) fn zoom_center(&self) -> f64 {
        match self.pointer_x {
            Some(x) if x >= 0.0 && x <= self.vp.width_px() => x,
            _ => self.vp.width_px() / 2.0,
        }
    }

    pub(super) fn clamp_scroll(&mut self, props: &TimelineProps) {
        let max = (self.layout.height - self.rows_height(props)).max(0.0);
        self.scroll_y = self.scroll_y.clamp(0.0, max);
        self.lane_scroll.set((self.scroll_y, max));
    }

    pub(super) fn attach_listeners(&mut self, ctx: &Context<Self>) {
        let (Some(canvas), Some(overview)) = (
            self.canvas.cast::<HtmlCanvasElement>(),
            self.overview.cast::<HtmlCanvasElement>(),
        ) else {
            return;
        };
        let link = ctx.link().clone();
        let el: Element = canvas.clone().into();
        let opts = EventListenerOptions::enable_prevent_default();
        let e2 = el.clone();
        let lane_scroll = self.lane_scroll.clone();
        self.listeners.push(EventListener::new_with_options(
            &canvas,
            "wheel",
            opts,
            move |e| {
                let Some(e) = e.dyn_ref::<WheelEvent>() else {
                    return;
                };
                let unit = match e.delta_mode() {
                    1 => 16.0,
                    2 => 400.0,
                    _ => 1.0,
                };
                let (dx, dy) = (e.delta_x() * unit, e.delta_y() * unit);
                let (shift, ctrl) = (e.shift_key(), e.ctrl_key() || e.meta_key());
                if !wheel_is_ours(dx, dy, shift, ctrl, lane_scroll.get()) {
                    // The page scrolls (Perfetto's convention: the wheel
                    // scrolls; Ctrl+wheel zooms).
                    return;
                }
                e.prevent_default();
                let (x, y) = relative(&e2, f64::from(e.client_x()), f64::from(e.client_y()));
                link.send_message(Msg::Wheel {
                    x,
                    y,
                    dx,
                    dy,
                    shift,
                    ctrl,
                });
            },
        ));
        let link = ctx.link().clone();
        let e2 = el.clone();
        let dragging = self.dragging.clone();
        self.listeners
            .push(EventListener::new(&canvas, "mousedown", move |e| {
                let Some(e) = e.dyn_ref::<MouseEvent>() else {
                    return;
                };
                if e.button() != 0 {
                    return;
                }
                let (x, y) = relative(&e2, f64::from(e.client_x()), f64::from(e.client_y()));
                dragging.set(true);
                link.send_message(Msg::Down { x, y });
            }));
        let link = ctx.link().clone();
        let e2 = el.clone();
        self.listeners
            .push(EventListener::new(&canvas, "mousemove", move |e| {
                let Some(e) = e.dyn_ref::<MouseEvent>() else {
                    return;
                };
                let (x, y) = relative(&e2, f64::from(e.client_x()), f64::from(e.client_y()));
                link.send_message(Msg::Hover { x, y });
            }));
        let link = ctx.link().clone();
        self.listeners
            .push(EventListener::new(&canvas, "mouseleave", move |_| {
                link.send_message(Msg::Leave)
            }));
        let link = ctx.link().clone();
        let ov: Element = overview.clone().into();
        let dragging = self.dragging.clone();
        self.listeners.push(EventListener::new_with_options(
            &overview,
            "mousedown",
            EventListenerOptions::enable_prevent_default(),
            move |e| {
                let Some(e) = e.dyn_ref::<MouseEvent>() else {
                    return;
                };
                if e.button() != 0 {
                    return;
                }
                e.prevent_default();
                let (x, _) = relative(&ov, f64::from(e.client_x()), f64::from(e.client_y()));
                dragging.set(true);
                link.send_message(Msg::OverviewDown { x });
            },
        ));
        watch_drag(ctx.link(), &self.dragging, &mut self.listeners);
        // Redraw when the canvas changes size (window, layout, a tab shown).
        let link = ctx.link().clone();
        let cb = Closure::<dyn FnMut()>::new(move || link.send_message(Msg::Resized));
        if let Ok(obs) = ResizeObserver::new(cb.as_ref().unchecked_ref()) {
            obs.observe(&el);
            self.resize = Some((obs, cb));
        }
    }

    pub(super) fn start_drag(&mut self, drag: Drag) {
        self.drag = Some(drag);
    }

    pub(super) fn overview_x_to_ns(&self, x: f64) -> u64 {
        let full = Viewport::new(self.vp.extent_ns(), self.vp.width_px());
        full.px_to_ns(x - LABEL_W)
    }
}
