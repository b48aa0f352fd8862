//! "Compare schedules": the button (`data-testid="schedule-compare-run"`)
//! that runs the current input under every pipeline schedule in the worker
//! ([`crate::schedule_compare`]), and the table of what came back
//! (`schedule-compare-table`, one row per schedule with `data-schedule`:
//! iteration time, bubble, activations in flight per stage in
//! micro-batches and, for a described job, each stage's whole memory
//! (`schedule-memory`, the core's memory model) with the rows that do not
//! fit the GPU marked (`no-fit`, `schedule-no-fit`), speed-up over 1F1B;
//! more than four stages show as their largest, to keep the page's
//! width), then
//! the schedules that could not run with the core's reason
//! (`schedule-compare-refused`). Clicking a row runs that schedule as the
//! current run (its timeline and memory chart show); the row of the
//! schedule the settings name is marked current. A row's "pin as A"
//! (`schedule-compare-pin`) runs it and pins its result, so the next row
//! clicked is compared with it (the Compare panel, and both timelines on
//! one time axis).
//!
//! Below the table every row's timeline, stacked on one time axis
//! (`schedule-compare-timelines`, `data-count` = how many): one canvas
//! [`Timeline`] whose sections are the schedules (the same ns-to-pixel
//! mapping for all, so a shorter schedule ends further left), each stage
//! collapsed to its compute row (spans coloured forward / input gradient /
//! weight gradient); expanding a stage shows its activation memory lane.
//! Its elements' test ids carry the prefix `schedule-` (`schedule-timeline`
//! is its canvas), apart from the run's own timeline's.

use crate::format;
use crate::schedule_compare::TIMELINE_PREFIX;
use crate::settings::{schedule_name, Schedule};
use crate::state::SharedTimeline;
use crate::timeline::Timeline;
use crate::views::{trim_float, ScheduleComparison, ScheduleRow};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ScheduleCompareProps {
    pub comparison: Option<std::rc::Rc<ScheduleComparison>>,
    /// The schedule the settings name now.
    pub current: Schedule,
    /// A run is in progress (the button waits).
    pub running: bool,
    pub on_compare: Callback<()>,
    /// Run this schedule (with the row's virtual stages).
    pub on_pick: Callback<(Schedule, u32)>,
    /// Run this schedule and pin its result as "A".
    pub on_pin: Callback<(Schedule, u32)>,
    /// The rows' timelines (labelled `schedule:NAME`), stacked under the
    /// table.
    #[prop_or_default]
    pub timelines: Vec<SharedTimeline>,
}

/// The rows' timelines stacked on one time axis.
fn stacked(timelines: &[SharedTimeline]) -> Html {
    let Some((first, rest)) = timelines.split_first() else {
        return html! {};
    };
    let name = |t: &SharedTimeline| {
        AttrValue::from(
            t.label
                .strip_prefix(TIMELINE_PREFIX)
                .unwrap_or(&t.label)
                .to_string(),
        )
    };
    let stack: Vec<(AttrValue, std::rc::Rc<trainscope_core::timeline::Timeline>)> =
        rest.iter().map(|t| (name(t), t.timeline.clone())).collect();
    html! {
        <div class="schedule-compare-timelines" data-testid="schedule-compare-timelines"
             data-count={timelines.len().to_string()}>
            <h3>{"Timelines on one time axis"}</h3>
            <p class="note">{ "Every schedule's compute, one row per stage (forward, input gradient, weight gradient), on the same time scale: a shorter iteration ends further left. Click a stage's name to expand it and see its activation memory over time." }</p>
            <Timeline timeline={first.timeline.clone()} label={name(first)} {stack}
                      start_collapsed={true} max_height_px={900.0}
                      testid_prefix="schedule-" />
        </div>
    }
}

/// Per-stage values as one cell: `2 · 1.5 · 1` for up to four stages; for
/// more, the largest and its stage (`max 3 (stage 0)`), so the table keeps
/// to the page's width; the title lists every stage.
fn per_stage<T: PartialOrd>(values: &[T], show: impl Fn(&T) -> String) -> (String, String) {
    let all = values.iter().map(&show).collect::<Vec<_>>().join(" · ");
    if values.len() <= 4 {
        return (all.clone(), format!("stage 0 first: {all}"));
    }
    let (stage, max) = values
        .iter()
        .enumerate()
        .fold(None::<(usize, &T)>, |best, (i, v)| match best {
            Some((_, b)) if *b >= *v => best,
            _ => Some((i, v)),
        })
        .expect("more than four stages");
    (
        format!("max {} (stage {stage})", show(max)),
        format!("stage 0 first: {all}"),
    )
}

/// Bytes in a table cell: GiB with one decimal from 1 GiB up.
fn short_bytes(b: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / GIB)
    } else {
        format::bytes(b)
    }
}

fn row_html(
    r: &ScheduleRow,
    current: Schedule,
    on_pick: &Callback<(Schedule, u32)>,
    on_pin: &Callback<(Schedule, u32)>,
) -> Html {
    let name = schedule_name(r.schedule);
    let pick = {
        let cb = on_pick.clone();
        let (s, v) = (r.schedule, r.virtual_stages);
        Callback::from(move |_: MouseEvent| cb.emit((s, v)))
    };
    let pin = {
        let cb = on_pin.clone();
        let (s, v) = (r.schedule, r.virtual_stages);
        Callback::from(move |e: MouseEvent| {
            // Not also a row click.
            e.stop_propagation();
            cb.emit((s, v))
        })
    };
    let label = if r.virtual_stages > 1 {
        format!("{name} (vpp {})", r.virtual_stages)
    } else {
        name.to_string()
    };
    let is_current = r.schedule == current;
    let (mb, mb_title) = per_stage(&r.peak_micro_batches, |x| trim_float(*x));
    let fits = r.fits();
    let memory = r.memory_bytes.as_ref().map(|m| {
        let (text, title) = per_stage(m, |b| short_bytes(*b));
        let cap = r.capacity_bytes.map_or(String::new(), |c| {
            format!(" (the GPU holds {})", short_bytes(c))
        });
        (text, format!("{title}{cap}"))
    });
    html! {
        <tr data-schedule={name}
            class={classes!("schedule-row", is_current.then_some("current"), (fits == Some(false)).then_some("no-fit"))}
            onclick={pick} title={format!("Run {name} as the current run")}
            aria-current={is_current.then_some("true")}>
            <th scope="row">
                <button type="button" class="link" data-testid="schedule-compare-pick">{ label }</button>
            </th>
            <td class="num" data-ns={r.iteration_time_ns.to_string()}>{ format::duration_ns(r.iteration_time_ns) }</td>
            <td class="num" data-testid="schedule-bubble" data-ns={r.bubble_ns.to_string()}>{ format::duration_ns(r.bubble_ns) }</td>
            <td class="num" data-testid="schedule-peak-mb" title={mb_title}>{ mb }</td>
            if let Some((text, title)) = memory {
                <td data-testid="schedule-memory" title={title}
                    data-fits={fits.map(|f| f.to_string())}
                    data-bytes={r.memory_bytes.as_ref().map(|m| m.iter().map(u64::to_string).collect::<Vec<_>>().join(","))}>
                    { text }
                    if fits == Some(false) {
                        <span class="no-fit-badge" data-testid="schedule-no-fit">{"does not fit"}</span>
                    }
                </td>
            }
            <td data-testid="schedule-speedup" data-value={r.speedup_over_1f1b.map(|x| x.to_string()).unwrap_or_default()}>
                { r.speedup_over_1f1b.map_or("—".to_string(), |x| format!("{x:.3}×")) }
            </td>
            <td>
                <button type="button" class="secondary small" data-testid="schedule-compare-pin"
                        onclick={pin} title={format!("Run {name} and pin it as A: the next row you click is drawn with it on one time axis")}>
                    {"pin as A"}
                </button>
            </td>
        </tr>
    }
}

#[component]
pub fn ScheduleCompare(props: &ScheduleCompareProps) -> Html {
    let on_compare = {
        let cb = props.on_compare.clone();
        Callback::from(move |_: MouseEvent| cb.emit(()))
    };
    let table = props.comparison.as_ref().map(|c| {
        let memory = c.rows.iter().any(|r| r.memory_bytes.is_some());
        let capacity = c.rows.iter().find_map(|r| r.capacity_bytes);
        let no_fit = c.rows.iter().filter(|r| r.fits() == Some(false)).count();
        html! {
            <>
                <p class="note">{ format!(
                    "{} under every schedule, with the other settings unchanged. Activations in flight per stage, stage 0 first{}. Click a row to run that schedule; pin one as A, then click another to see both timelines on one time axis.",
                    c.input,
                    match capacity {
                        Some(cap) => format!("; memory: each stage's whole memory at its peak (weights, gradients, optimizer states, activations, buffers), against the GPU's {}{}", short_bytes(cap),
                            if no_fit > 0 { format!(": {} marked “does not fit” would run out of memory", format::counted(no_fit as u64, "schedule", "schedules")) } else { String::new() }),
                        None => String::new(),
                    }
                ) }</p>
                <div class="schedule-table-wrap">
                <table class="schedule-table" data-testid="schedule-compare-table">
                    <thead>
                        <tr>
                            <th scope="col">{"schedule"}</th>
                            <th scope="col">{"iteration time"}</th>
                            <th scope="col">{"bubble"}</th>
                            <th scope="col">{"in flight (micro-batches)"}</th>
                            if memory {
                                <th scope="col">{"memory per stage"}</th>
                            }
                            <th scope="col">{"speed-up vs 1F1B"}</th>
                            <th scope="col"><span class="visually-hidden">{"pin"}</span></th>
                        </tr>
                    </thead>
                    <tbody>
                        { for c.rows.iter().map(|r| row_html(r, props.current, &props.on_pick, &props.on_pin)) }
                    </tbody>
                </table>
                </div>
                if !c.refused.is_empty() {
                    <ul class="diags schedule-refused">
                        { for c.refused.iter().map(|r| html! {
                            <li class="diag warning" data-testid="schedule-compare-refused"
                                data-schedule={schedule_name(r.schedule)}>
                                <span><strong>{ schedule_name(r.schedule) }</strong>{ ": " }{ &r.message }</span>
                            </li>
                        }) }
                    </ul>
                }
                { stacked(&props.timelines) }
            </>
        }
    });
    html! {
        <section class="schedule-compare" aria-label="Compare schedules">
            <div class="schedule-compare-head">
                <h2>{"Schedules"}</h2>
                <button type="button" class="secondary" data-testid="schedule-compare-run"
                        disabled={props.running} onclick={on_compare}
                        title="Run the current input under every pipeline schedule">
                    {"Compare schedules"}
                </button>
            </div>
            { table.unwrap_or_default() }
        </section>
    }
}
