//! What the timeline says about a span: the hover tooltip (spans and
//! counters, a memory lane's peak with what is resident then), the selected
//! span's details panel, a span's name and fields.

use super::*;
use crate::timeline::draw::PEAK_MARK_PX;
use trainscope_core::job::memory::gib;
use trainscope_core::timeline::{CounterLane, CounterPeak};

/// `stage 3` / `rank 17 · stage 2` for a lane.
pub(super) fn group_name(tl: &Model, lane: u32) -> String {
    match tl.lanes().get(lane as usize) {
        Some(l) => match l.group_kind {
            LaneGroup::Stage => format!("stage {}", l.group),
            LaneGroup::Rank => format!("rank {} · stage {}", l.group, l.stage),
        },
        None => String::new(),
    }
}

/// A span's name: its label, or its kind's name when it has none.
pub(super) fn span_name(tl: &Model, s: &trainscope_core::timeline::Span) -> String {
    let l = tl.label(s.label);
    if l.is_empty() {
        palette::kind_label(s.kind).to_string()
    } else {
        l.to_string()
    }
}

/// The fields shown in the tooltip and the details panel.
pub(super) fn span_fields(
    sec: &Section,
    h: Hit,
    s: &trainscope_core::timeline::Span,
    long: bool,
) -> Html {
    let tl = &sec.tl;
    let mut rows: Vec<(&str, String)> = Vec::new();
    rows.push(("kind", palette::kind_label(s.kind).to_string()));
    let mut place = group_name(tl, h.lane);
    if let Some(l) = tl.lanes().get(h.lane as usize) {
        place = format!("{place} · {}", draw::stream_label(l.stream));
    }
    rows.push(("lane", place));
    if !sec.label.is_empty() {
        rows.push(("run", sec.label.clone()));
    }
    let none = || "—".to_string();
    rows.push(("layer", s.layer().map_or_else(none, |l| l.to_string())));
    rows.push((
        "micro-batch",
        s.micro_batch().map_or_else(none, |m| m.to_string()),
    ));
    if s.chunk > 0 || long {
        rows.push(("chunk", s.chunk.to_string()));
    }
    rows.push(("start", format::instant(s.start_ns, 1_000)));
    if long {
        rows.push(("end", format::instant(s.end_ns(), 1_000)));
    }
    rows.push(("duration", format::duration(s.duration_ns)));
    rows.push((
        "bytes",
        if s.bytes > 0 {
            format::bytes(s.bytes)
        } else {
            none()
        },
    ));
    rows.push((
        "bandwidth",
        s.achieved_gbps().map_or_else(none, format::gbps),
    ));
    if !s.coll.name().is_empty() {
        rows.push(("operation", s.coll.name().to_string()));
    }
    html! {
        <>
            <div class="ts-tl-name">
                <span class="ts-tl-swatch" style={format!("background:{}", palette::kind_color(s.kind))}></span>
                { span_name(tl, s) }
            </div>
            <dl class="ts-tl-fields">
                { for rows.into_iter().map(|(k, v)| html! { <><dt>{ k }</dt><dd>{ v }</dd></> }) }
            </dl>
        </>
    }
}

impl Timeline {
    /// Where a tooltip at pointer (x, y) goes.
    pub(super) fn tooltip_style(&self, x: f64, y: f64) -> String {
        let width = self
            .canvas
            .cast::<HtmlCanvasElement>()
            .map_or(1000.0, |c| f64::from(c.client_width()));
        let top = OVERVIEW_H + 4.0 + y + 16.0;
        if x > width - 300.0 {
            format!(
                "position:absolute;pointer-events:none;right:{:.0}px;top:{top:.0}px",
                (width - x + 12.0).max(0.0)
            )
        } else {
            format!(
                "position:absolute;pointer-events:none;left:{:.0}px;top:{top:.0}px",
                x + 14.0
            )
        }
    }

    /// The tooltip of a counter lane: its value at the pointer's time and
    /// its peak.
    /// The counter rows' peak markers, in row order, as
    /// `stage:time_ns:x_px` (x from the canvas's left edge at the current
    /// view), joined by commas: what tests read and hover.
    pub(super) fn peak_marks(&self) -> String {
        self.layout
            .rows
            .iter()
            .filter_map(|r| match r.kind {
                RowKind::Counter {
                    section, counter, ..
                } => {
                    let c = self
                        .sections
                        .get(section)?
                        .tl
                        .counters()
                        .get(counter as usize)?;
                    let p = c.peak.as_ref()?;
                    Some(format!(
                        "{}:{}:{:.1}",
                        c.stage,
                        p.time_ns,
                        LABEL_W + self.vp.ns_to_px(p.time_ns)
                    ))
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A counter lane's peak as the hover shows it: when, the micro-batches
    /// in flight and each resident part in GiB (the CLI's "stage N peaks at
    /// X ms" line and `memory.per_stage[i].resident_at_peak`).
    fn view_peak_tooltip(&self, h: &CounterHover, c: &CounterLane, p: &CounterPeak) -> Html {
        let mut rows: Vec<(String, String)> = vec![(
            "micro-batches in flight".into(),
            format!("{:.1}", p.micro_batches_in_flight),
        )];
        for part in p.resident.iter().filter(|x| x.size_bytes > 0) {
            rows.push((part.name.replace('_', " "), gib(part.size_bytes)));
        }
        if !p.resident.is_empty() {
            rows.push((
                "resident".into(),
                gib(p.resident.iter().map(|x| x.size_bytes).sum()),
            ));
        }
        let title = format!(
            "stage {} peaks at {:.3} ms",
            c.stage,
            p.time_ns as f64 / 1e6
        );
        html! {
            <div class="ts-tl-tooltip" data-testid={self.tid("tooltip")} data-counter={c.name.clone()}
                 data-peak-time-ns={p.time_ns.to_string()}
                 role="tooltip" style={self.tooltip_style(h.x, h.y)}>
                <div class="ts-tl-name">
                    <span class="ts-tl-swatch" style={format!("background:{}", palette::COUNTER_PEAK)}></span>
                    { title }
                </div>
                <dl class="ts-tl-fields">
                    { for rows.into_iter().map(|(k, v)| html! { <><dt>{ k }</dt><dd>{ v }</dd></> }) }
                </dl>
            </div>
        }
    }

    pub(super) fn view_counter_tooltip(&self, h: &CounterHover) -> Html {
        let Some(sec) = self.sections.get(h.section) else {
            return html! {};
        };
        let Some(c) = sec.tl.counters().get(h.counter as usize) else {
            return html! {};
        };
        // Near the peak's marker the hover tells the peak.
        if let Some(p) = c
            .peak
            .as_ref()
            .filter(|p| (LABEL_W + self.vp.ns_to_px(p.time_ns) - h.x).abs() <= PEAK_MARK_PX + 3.0)
        {
            return self.view_peak_tooltip(h, c, p);
        }
        let mut rows: Vec<(&str, String)> = vec![
            (
                "value",
                format::counter_value(c.value_at(h.t_ns), c.unit, false),
            ),
            ("at", format::instant(h.t_ns, 1_000)),
            ("peak", format::counter_value(c.max_value(), c.unit, false)),
        ];
        if !sec.label.is_empty() {
            rows.push(("run", sec.label.clone()));
        }
        html! {
            <div class="ts-tl-tooltip" data-testid={self.tid("tooltip")} data-counter={c.name.clone()}
                 role="tooltip" style={self.tooltip_style(h.x, h.y)}>
                <div class="ts-tl-name">
                    <span class="ts-tl-swatch" style={format!("background:{}", palette::COUNTER_LINE)}></span>
                    { c.name.replace(" / ", " · ") }
                </div>
                <dl class="ts-tl-fields">
                    { for rows.into_iter().map(|(k, v)| html! { <><dt>{ k }</dt><dd>{ v }</dd></> }) }
                </dl>
            </div>
        }
    }

    pub(super) fn view_tooltip(&self) -> Html {
        if let Some(c) = &self.counter_hover {
            return self.view_counter_tooltip(c);
        }
        let Some(h) = &self.hover else {
            return html! {};
        };
        let Some(sec) = self.sections.get(h.hit.section) else {
            return html! {};
        };
        let Some(s) = sec.tl.span(h.hit.span_ref()) else {
            return html! {};
        };
        let style = self.tooltip_style(h.x, h.y);
        html! {
            <div class="ts-tl-tooltip" data-testid={self.tid("tooltip")} role="tooltip" style={style}>
                { span_fields(sec, h.hit, s, false) }
            </div>
        }
    }

    pub(super) fn view_details(&self, ctx: &Context<Self>) -> Html {
        let body = match self.selection.hit.and_then(|h| {
            let sec = self.sections.get(h.section)?;
            Some((h, sec, sec.tl.span(h.span_ref())?))
        }) {
            None => html! {
                <p class="ts-tl-empty">{ "Click a span to see its details, what it waited for and its transfers." }</p>
            },
            Some((h, sec, s)) => {
                let link = ctx.link();
                let on_crit = sec.tl.critical_path().contains(&h.span_ref());
                let deps: Html = self
                    .selection
                    .deps
                    .iter()
                    .take(32)
                    .filter_map(|d| {
                        let ds = sec.tl.span(*d)?;
                        let target = Hit {
                            section: h.section,
                            lane: d.lane,
                            index: d.index,
                        };
                        let name = span_name(&sec.tl, ds);
                        let onclick = link.callback(move |_| Msg::Select(Some(target)));
                        Some(html! {
                            <li><button class="ts-tl-link" {onclick}>
                                <span class="ts-tl-swatch" style={format!("background:{}", palette::kind_color(ds.kind))}></span>
                                { format!("{name} · {} · ends {}", group_name(&sec.tl, d.lane), format::duration(ds.end_ns())) }
                            </button></li>
                        })
                    })
                    .collect();
                let flows: Html = self
                    .selection
                    .flows
                    .iter()
                    .map(|(f, t)| {
                        html! { <li>{ format!("{} → {}", group_name(&sec.tl, f.lane), group_name(&sec.tl, t.lane)) }</li> }
                    })
                    .collect();
                html! {
                    <>
                        { span_fields(sec, h, s, true) }
                        if on_crit { <p class="ts-tl-crit">{ "On the critical path" }</p> }
                        <button class="secondary ts-tl-btn" onclick={link.callback(|_| Msg::ZoomToSelection)}>{ "Zoom to span" }</button>
                        if let (Some(cb), Some(lane)) = (ctx.props().on_slow.clone(), sec.tl.lanes().get(h.lane as usize)) {
                            {{
                                let arg = match lane.group_kind {
                                    trainscope_core::timeline::LaneGroup::Stage => format!("stage{}:1.2", lane.group),
                                    trainscope_core::timeline::LaneGroup::Rank => format!("{}:1.2", lane.group),
                                };
                                let title = format!("What-if: re-run with --slow {arg}, this run pinned as A");
                                let onclick = Callback::from(move |_| cb.emit(arg.clone()));
                                html! {
                                    <button class="secondary ts-tl-btn" data-testid="slow-this-gpu" {title} {onclick}>
                                        { "Slow this GPU by 20%" }
                                    </button>
                                }
                            }}
                        }
                        <h4>{ format!("Waited for ({})", self.selection.deps.len()) }</h4>
                        if self.selection.deps.is_empty() {
                            <p class="ts-tl-empty">{ "No recorded dependencies." }</p>
                        } else {
                            <ul class="ts-tl-deps">{ deps }</ul>
                        }
                        if !self.selection.flows.is_empty() {
                            <h4>{ "Pipeline transfers" }</h4>
                            <ul class="ts-tl-deps">{ flows }</ul>
                        }
                    </>
                }
            }
        };
        html! {
            <aside class="ts-tl-details" data-testid={self.tid("timeline-details")} aria-live="polite" tabindex="-1" ref={self.details.clone()}
                data-lane={self.selection.hit.map(|h| h.lane.to_string())} data-index={self.selection.hit.map(|h| h.index.to_string())}>
                <h3>{ "Selected span" }</h3>
                { body }
            </aside>
        }
    }
}
