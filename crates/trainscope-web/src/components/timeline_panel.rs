//! The Timeline section of the results: mounts the canvas
//! [`crate::timeline::Timeline`] on the run's timelines and picks what is
//! drawn (`data-testid="timeline-view"`): the simulated run, the measured
//! one, measured vs simulated, or the pinned run A vs this run B, always
//! as aligned timelines on one time axis. Until the result's timelines
//! arrive it says they are being drawn; when they arrived empty (SimAI
//! mode, a failed input) it says why and how to get one.

use crate::state::SharedTimeline;
use crate::timeline::Timeline;
use std::rc::Rc;
use yew::prelude::*;

/// What the panel can draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineView {
    Simulated,
    Measured,
    MeasuredVsSimulated,
    PinnedVsCurrent,
}

impl TimelineView {
    /// The `<option>` value.
    pub fn value(self) -> &'static str {
        match self {
            TimelineView::Simulated => "simulated",
            TimelineView::Measured => "measured",
            TimelineView::MeasuredVsSimulated => "measured-vs-simulated",
            TimelineView::PinnedVsCurrent => "a-vs-b",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TimelineView::Simulated => "Simulated",
            TimelineView::Measured => "Measured",
            TimelineView::MeasuredVsSimulated => "Measured vs simulated",
            TimelineView::PinnedVsCurrent => "A (pinned) vs B (this run)",
        }
    }

    fn from_value(v: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.value() == v)
    }

    const ALL: [TimelineView; 4] = [
        TimelineView::Simulated,
        TimelineView::Measured,
        TimelineView::MeasuredVsSimulated,
        TimelineView::PinnedVsCurrent,
    ];
}

/// The views available for these timelines, the default first: A vs B when
/// a different run is pinned, else measured vs simulated for a measured
/// run, else the simulated run alone.
pub fn available_views(
    timelines: &[SharedTimeline],
    pinned: Option<&SharedTimeline>,
) -> Vec<TimelineView> {
    let simulated = timelines.iter().find(|t| t.label == "simulated");
    let measured = timelines.iter().any(|t| t.label == "measured");
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (pinned, simulated) {
        if !Rc::ptr_eq(&a.timeline, &b.timeline) {
            out.push(TimelineView::PinnedVsCurrent);
        }
    }
    if measured && simulated.is_some() {
        out.push(TimelineView::MeasuredVsSimulated);
    }
    if simulated.is_some() {
        out.push(TimelineView::Simulated);
    }
    if measured {
        out.push(TimelineView::Measured);
    }
    out
}

/// The (top, bottom) timelines of a view.
pub fn pick<'a>(
    view: TimelineView,
    timelines: &'a [SharedTimeline],
    pinned: Option<&'a SharedTimeline>,
) -> Option<(&'a SharedTimeline, Option<&'a SharedTimeline>)> {
    let by = |label: &str| timelines.iter().find(|t| t.label == label);
    match view {
        TimelineView::Simulated => Some((by("simulated")?, None)),
        TimelineView::Measured => Some((by("measured")?, None)),
        TimelineView::MeasuredVsSimulated => Some((by("measured")?, Some(by("simulated")?))),
        TimelineView::PinnedVsCurrent => Some((pinned?, Some(by("simulated")?))),
    }
}

#[derive(Properties, PartialEq)]
pub struct TimelinePanelProps {
    /// The run's timelines (simulated first, then measured).
    pub timelines: Vec<SharedTimeline>,
    /// The pinned A's simulated timeline.
    #[prop_or_default]
    pub pinned: Option<SharedTimeline>,
    /// The timelines belong to an older run than the result shown.
    #[prop_or_default]
    pub stale: bool,
    /// Whether the run shown came from the SimAI-compatible mode.
    #[prop_or_default]
    pub simai_mode: bool,
    /// The timelines of the result shown have not arrived: what to say
    /// instead of "no timeline" when there is nothing to draw meanwhile.
    #[prop_or_default]
    pub waiting: Option<AttrValue>,
    /// The what-if of a selected span's GPU ([`Timeline`]'s `on_slow`).
    #[prop_or_default]
    pub on_slow: Option<Callback<String>>,
}

#[component]
pub fn TimelinePanel(props: &TimelinePanelProps) -> Html {
    let chosen = use_state(|| None::<TimelineView>);
    let views = available_views(&props.timelines, props.pinned.as_ref());
    let view = match *chosen {
        Some(v) if views.contains(&v) => Some(v),
        _ => views.first().copied(),
    };
    let onchange = {
        let chosen = chosen.clone();
        Callback::from(move |e: Event| {
            let select: web_sys::HtmlSelectElement = e.target_unchecked_into();
            chosen.set(TimelineView::from_value(&select.value()));
        })
    };
    let picked = view.and_then(|v| pick(v, &props.timelines, props.pinned.as_ref()));
    let body = match picked {
        Some((top, bottom)) => {
            let (label, compare_label) = match view {
                Some(TimelineView::PinnedVsCurrent) => ("A (pinned)", "B (this run)"),
                _ => (top.label.as_str(), bottom.map_or("", |b| b.label.as_str())),
            };
            html! {
                <Timeline timeline={top.timeline.clone()} label={AttrValue::from(label.to_string())}
                          compare={bottom.map(|b| b.timeline.clone())}
                          compare_label={AttrValue::from(compare_label.to_string())}
                          on_slow={props.on_slow.clone()} />
            }
        }
        None if props.waiting.is_some() => html! {
            <p class="note" data-testid="timeline-waiting" role="status">
                { props.waiting.clone().unwrap_or_default() }
            </p>
        },
        None if props.simai_mode => html! {
            <p class="note" data-testid="timeline-none">
                {"The SimAI-compatible mode reproduces SimAI-Analytical's per-layer totals and has no \
                  schedule to draw. Switch the mode to event-level to see the pipeline timeline."}
            </p>
        },
        None => html! {
            <p class="note" data-testid="timeline-none">
                {"This run produced no timeline: the run's messages above, or each file's card under Files below, say what is wrong with the input or the settings."}
            </p>
        },
    };
    html! {
        <section class={classes!("timeline-panel", props.stale.then_some("stale"))}
                 aria-label="Timeline" data-testid="timeline-panel"
                 aria-busy={props.stale.then_some("true")}>
            <header class="timeline-panel-head">
                <h2>{"Timeline"}</h2>
                if views.len() > 1 {
                    <label class="timeline-view">
                        <span>{"Show"}</span>
                        <select data-testid="timeline-view" {onchange}>
                            { for views.iter().map(|v| html! {
                                <option value={v.value()} selected={Some(*v) == view}>{ v.label() }</option>
                            }) }
                        </select>
                    </label>
                }
            </header>
            { body }
        </section>
    }
}
