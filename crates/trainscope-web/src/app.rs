//! The root component: page layout, drag-and-drop anywhere on the page,
//! reading files (gloo, async), the worker host, when runs start (at once
//! for new files or the job panel's Run button, [`DEBOUNCE_MS`] after the
//! last settings or job edit, or on the Simulate button), and the URL
//! fragment (restored on load and on `hashchange`, rewritten when the
//! example, the settings or the described job change). On mount it takes
//! the files dropped while the page was starting (queued by index.html's
//! inline script, [`crate::browser_files`]) and marks the page ready
//! (`<body data-ready="1">`).

use crate::browser_files::{dropped_files, read_files, take_early_files};
use crate::components::activation_chart::ActivationChart;
use crate::components::compare::Compare;
use crate::components::file_card::{diagnostic, FileCard};
use crate::components::ingest::{load_example, Ingest};
use crate::components::job_panel::JobPanel;
use crate::components::kineto_analysis::KinetoAnalysis;
use crate::components::plan_view::PlanView;
use crate::components::results::Results;
use crate::components::run_bar::RunBar;
use crate::components::schedule_compare::ScheduleCompare;
use crate::components::settings_form::SettingsForm;
use crate::components::sweep_view::SweepView;
use crate::components::timeline_panel::TimelinePanel;
use crate::examples::EXAMPLES;
use crate::protocol::{ExportRequest, InputFile, Request, Response, RunRequest};
use crate::settings::{Field, Mode, Schedule};
use crate::state::{Action, AppState};
use crate::url;
use crate::views::{ExportFile, ResultKind};
use crate::worker_host::{HostEvent, WorkerHost, WORKER_URL};
use gloo::timers::callback::Timeout;
use std::cell::RefCell;
use std::collections::VecDeque;
use yew::prelude::*;

/// Pause after the last settings edit before re-running.
pub const DEBOUNCE_MS: u32 = 300;

/// The app has mounted: remove the start-up placeholder (`#boot`) and mark
/// `<body data-ready="1">`, the signal the end-to-end harness waits for.
pub fn mark_ready() {
    let document = gloo::utils::document();
    if let Some(boot) = document.get_element_by_id("boot") {
        boot.remove();
    }
    if let Some(body) = document.body() {
        let _ = body.set_attribute("data-ready", "1");
    }
}

/// Downloads asked of the worker and not yet answered (run id, file), in
/// the order asked: every click gets its file, however quick.
type PendingExports = VecDeque<(u64, ExportFile)>;

/// The pending download of run `id`'s `testid` (the oldest such click),
/// taken off the queue: the worker answered it.
/// Bring the newest result on screen (issue 29: results opened 2,000 px
/// down): the run's messages when it has any, else the results section,
/// aligned to the top of the viewport; left alone when its top is already
/// in the upper part of the viewport, so a result in view does not jump.
fn scroll_result_into_view() {
    let document = gloo::utils::document();
    let Ok(Some(el)) = document.query_selector(".main-col .run-diags, .main-col .results") else {
        return;
    };
    let top = el.get_bounding_client_rect().top();
    let height = gloo::utils::window()
        .inner_height()
        .ok()
        .and_then(|h| h.as_f64())
        .unwrap_or(0.0);
    if (0.0..height * 0.4).contains(&top) {
        return;
    }
    el.scroll_into_view_with_bool(true);
}

fn take_pending(pending: &RefCell<PendingExports>, id: u64, testid: &str) -> Option<ExportFile> {
    let mut queue = pending.borrow_mut();
    let at = queue
        .iter()
        .position(|(run, file)| *run == id && file.testid == testid)?;
    queue.remove(at).map(|(_, file)| file)
}

/// Save a download the worker made, if it was asked for.
fn save_export(
    dispatch: &UseReducerDispatcher<AppState>,
    pending: &RefCell<PendingExports>,
    id: u64,
    testid: &str,
    content: &str,
) {
    let Some(file) = take_pending(pending, id, testid) else {
        return;
    };
    if let Err(e) = crate::download::download_text(&file.file_name, &file.mime, content) {
        dispatch.dispatch(Action::Notice(format!(
            "download of {} failed: {e}",
            file.file_name
        )));
    }
}

/// Apply the page's URL fragment: settings, then the example (if any).
fn restore_from_fragment(dispatch: &UseReducerDispatcher<AppState>) {
    let fragment = url::current_fragment();
    if fragment.is_empty() {
        return;
    }
    let (state, notes) = url::from_fragment(&fragment);
    for n in notes {
        dispatch.dispatch(Action::Notice(n));
    }
    let example = state.example.clone();
    dispatch.dispatch(Action::Restore(Box::new(state)));
    if let Some(name) = example {
        if let Some(ex) = EXAMPLES.iter().find(|e| e.file_name == name) {
            load_example(ex.file_name, dispatch.clone());
        }
    }
}

#[component]
pub fn App() -> Html {
    let state = use_reducer(AppState::default);
    let dragging = use_state(|| false);
    let host = use_mut_ref(|| None::<WorkerHost>);
    let next_id = use_mut_ref(|| 0u64);
    let debounce = use_mut_ref(|| None::<Timeout>);
    let pending = use_mut_ref(PendingExports::new);
    // A run the user asked for (files, an example, Simulate, a sweep row,
    // a schedule) brings its result on screen when it comes; a settings
    // edit's re-run leaves the page where the user is editing.
    let scroll_wanted = use_mut_ref(|| false);
    // The Configure column folds to a narrow strip, giving the results the
    // page's width.
    let config_open = use_state(|| true);

    // Mount: start the worker, restore a shared link, follow later edits of
    // the fragment by hand.
    {
        let dispatch = state.dispatcher();
        let host = host.clone();
        let pending_sink = pending.clone();
        use_effect_with((), move |_| {
            let d = dispatch.clone();
            let sink = Callback::from(move |ev: HostEvent| match ev {
                HostEvent::Response(Response::Export {
                    id,
                    testid,
                    content,
                }) => save_export(&d, &pending_sink, id, &testid, &content),
                HostEvent::Response(Response::ExportFailed {
                    id,
                    testid,
                    message,
                }) => {
                    // That click's download will not come: no longer pending.
                    take_pending(&pending_sink, id, &testid);
                    d.dispatch(Action::Worker(Response::ExportFailed {
                        id,
                        testid,
                        message,
                    }));
                }
                HostEvent::Response(Response::Failed { id, message }) => {
                    // The worker failed (it may have been making a download
                    // of run `id`): nothing more will come for that run.
                    pending_sink.borrow_mut().retain(|(run, _)| *run != id);
                    d.dispatch(Action::Worker(Response::Failed { id, message }));
                }
                HostEvent::Response(r) => d.dispatch(Action::Worker(r)),
                HostEvent::Crashed { id, message } => d.dispatch(Action::Crashed(id, message)),
            });
            *host.borrow_mut() = Some(WorkerHost::new(WORKER_URL, sink));
            restore_from_fragment(&dispatch);
            // Files dropped while the page was starting: load them now.
            read_files(take_early_files(), dispatch.clone());
            mark_ready();
            let d = dispatch.clone();
            let listener =
                gloo::events::EventListener::new(&gloo::utils::window(), "hashchange", move |_| {
                    d.dispatch(Action::Clear);
                    restore_from_fragment(&d);
                });
            move || drop(listener)
        });
    }

    let start_run = {
        let state = state.clone();
        let host = host.clone();
        let next_id = next_id.clone();
        let debounce = debounce.clone();
        // `compare`: also run every schedule (Compare schedules).
        Callback::from(move |compare: bool| {
            debounce.borrow_mut().take();
            if !state.can_run() {
                return;
            }
            let id = {
                let mut n = next_id.borrow_mut();
                *n += 1;
                *n
            };
            state.dispatch(Action::RunStarted(id));
            let req = Request::Run(RunRequest {
                id,
                settings: state.settings.clone(),
                pinned: state.pinned_fields.clone(),
                files: state
                    .files
                    .iter()
                    .map(|f| InputFile {
                        name: f.name.clone(),
                        data: f.data.clone(),
                    })
                    .collect(),
                job: state.job.clone(),
                job_active: state.job_active,
                compare_schedules: compare,
            });
            if let Some(h) = host.borrow().as_ref() {
                h.run(&req);
            }
        })
    };

    // New files: run at once.
    {
        let start_run = start_run.clone();
        let scroll_wanted = scroll_wanted.clone();
        use_effect_with(state.files_rev, move |rev| {
            if *rev > 0 {
                *scroll_wanted.borrow_mut() = true;
                start_run.emit(false);
            }
        });
    }
    // A new output shown: on screen if the user asked for that run.
    {
        let scroll_wanted = scroll_wanted.clone();
        let done = !state.run.is_running();
        use_effect_with((state.output_run, done), move |(run, done)| {
            if *run > 0 && *done && std::mem::take(&mut *scroll_wanted.borrow_mut()) {
                scroll_result_into_view();
            }
        });
    }
    // Settings edits: run after a pause.
    {
        let start_run = start_run.clone();
        let debounce = debounce.clone();
        use_effect_with(state.edit_rev, move |rev| {
            if *rev > 0 {
                let timer = Timeout::new(DEBOUNCE_MS, move || start_run.emit(false));
                *debounce.borrow_mut() = Some(timer);
            }
        });
    }
    // Keep the fragment in step with the view (a described job whole).
    {
        let touched =
            !state.files.is_empty() || !state.pinned_fields.is_empty() || state.job_active;
        let job = state.job_active.then(|| state.job.clone());
        use_effect_with(
            (
                state.example.clone(),
                state.settings.clone(),
                state.pinned_fields.clone(),
                job,
                touched,
            ),
            move |(example, settings, pinned, job, touched)| {
                if *touched {
                    let mut fragment = url::to_fragment(example.as_deref(), settings, pinned);
                    if let Some(job) = job {
                        fragment.push('&');
                        fragment.push_str(&url::job_fragment(job));
                    }
                    // The search view's bounds and the plan's inputs stay
                    // in the link.
                    for part in url::current_fragment()
                        .split('&')
                        .filter(|p| p.starts_with("sweep_") || p.starts_with("plan_"))
                    {
                        fragment.push('&');
                        fragment.push_str(part);
                    }
                    url::replace_fragment(&fragment);
                }
            },
        );
    }

    let ondragover = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            if !*dragging {
                dragging.set(true);
            }
        })
    };
    let ondragleave = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            // Only when the pointer leaves the window, not a child element.
            if e.related_target().is_none() {
                dragging.set(false);
            }
        })
    };
    let ondrop = {
        let dragging = dragging.clone();
        let dispatch = state.dispatcher();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            read_files(dropped_files(&e), dispatch.clone());
        })
    };
    let on_clear = {
        let dispatch = state.dispatcher();
        Callback::from(move |_| dispatch.dispatch(Action::Clear))
    };
    let on_cancel = {
        let dispatch = state.dispatcher();
        let host = host.clone();
        Callback::from(move |_| {
            if let Some(h) = host.borrow().as_ref() {
                h.cancel();
            }
            dispatch.dispatch(Action::Cancel);
        })
    };
    let on_pin = {
        let dispatch = state.dispatcher();
        Callback::from(move |_| dispatch.dispatch(Action::Pin))
    };
    // The timeline's "Slow this GPU": pin the run shown, then re-run with
    // that GPU slowed (the compare view shows both on one axis).
    let on_slow = {
        let dispatch = state.dispatcher();
        Callback::from(move |arg: String| {
            dispatch.dispatch(Action::Pin);
            dispatch.dispatch(Action::Edit(Field::Slow, arg));
        })
    };
    let on_unpin = {
        let dispatch = state.dispatcher();
        Callback::from(move |_| dispatch.dispatch(Action::Unpin))
    };
    let on_error = {
        let dispatch = state.dispatcher();
        Callback::from(move |m: String| dispatch.dispatch(Action::Notice(m)))
    };
    let on_dismiss = {
        let dispatch = state.dispatcher();
        Callback::from(move |_| dispatch.dispatch(Action::DismissNotices))
    };

    let on_export = {
        let host = host.clone();
        let state = state.clone();
        let pending = pending.clone();
        Callback::from(move |file: ExportFile| {
            // The buttons are disabled then; a click that slips through
            // (a run started meanwhile) is explained, not dropped.
            if let Some(why) = state.downloads_blocked() {
                state.dispatch(Action::ExportFailed(format!("{}: {why}", file.file_name)));
                return;
            }
            let id = state.output_run;
            let testid = file.testid.clone();
            let name = file.file_name.clone();
            pending.borrow_mut().push_back((id, file));
            let posted = host
                .borrow()
                .as_ref()
                .is_some_and(|h| h.export(&Request::Export(ExportRequest { id, testid })));
            if !posted {
                pending.borrow_mut().pop_back();
                state.dispatch(Action::ExportFailed(format!(
                    "{name}: the worker is restarting; press Simulate, then download"
                )));
            }
        })
    };

    let on_simulate = {
        let start_run = start_run.clone();
        let scroll_wanted = scroll_wanted.clone();
        Callback::from(move |_: ()| {
            *scroll_wanted.borrow_mut() = true;
            start_run.emit(false)
        })
    };
    let on_compare_schedules = {
        let start_run = start_run.clone();
        Callback::from(move |_: ()| start_run.emit(true))
    };
    let on_pick_schedule = {
        let dispatch = state.dispatcher();
        Callback::from(move |(s, v): (Schedule, u32)| dispatch.dispatch(Action::RunSchedule(s, v)))
    };

    let on_pin_schedule = {
        let dispatch = state.dispatcher();
        Callback::from(move |(s, v): (Schedule, u32)| dispatch.dispatch(Action::PinSchedule(s, v)))
    };

    let on_pick_config = {
        let dispatch = state.dispatcher();
        Callback::from(
            move |(job, s, pin): (crate::job::JobSettings, Schedule, bool)| {
                dispatch.dispatch(Action::RunConfig(Box::new(job), s, pin))
            },
        )
    };

    let output = state.output.clone();
    // The configuration search's model file: the job's dropped config.json.
    let sweep_model_file = match &state.job.model {
        crate::job::JobModel::File(name) => state
            .files
            .iter()
            .find(|f| &f.name == name)
            .map(|f| (f.name.clone(), f.data.clone())),
        crate::job::JobModel::Preset(_) => None,
    };
    let result = state.result().cloned();
    let stale = state.results_stale();
    let unparsed = AttrValue::from(state.unparsed_label());
    let pinned_is_current = match (&state.compare, &result) {
        (Some(p), Some(r)) => p.result == *r,
        _ => false,
    };

    html! {
        <div class={classes!("page", dragging.then_some("dragging"))}
             {ondragover} {ondragleave} {ondrop}>
            <a class="skip-link" href="#results-start" data-testid="skip-to-results">{"Skip to the results"}</a>
            <header class="topbar">
                <h1>{"trainscope"}</h1>
                <p class="tagline">{"Distributed-training simulator, entirely in your browser"}</p>
            </header>
            <Ingest dispatch={state.dispatcher()} loading={state.loading}>
                <JobPanel state={state.clone()} />
            </Ingest>
            if !state.notices.is_empty() {
                <div class="notices-wrap">
                    <ul class="notices">
                        { for state.notices.iter().map(|n| html! {
                            <li class="diag error" data-testid="error">{ n }</li>
                        }) }
                    </ul>
                    <button type="button" class="secondary small" onclick={on_dismiss}>{"Dismiss"}</button>
                </div>
            }
            <div class={classes!("workspace", (!*config_open).then_some("config-folded"))}>
                <aside class="config" data-testid="config-column">
                    <button type="button" class="secondary small config-toggle" data-testid="config-toggle"
                            aria-expanded={config_open.to_string()}
                            title={if *config_open { "Fold the Configure column: the results take the page's width" } else { "Show the Configure column" }}
                            onclick={{
                                let config_open = config_open.clone();
                                Callback::from(move |_| config_open.set(!*config_open))
                            }}>
                        { if *config_open { "« Hide Configure" } else { "Configure »" } }
                    </button>
                    if *config_open {
                        <SettingsForm state={state.clone()} on_simulate={on_simulate} />
                    }
                </aside>
                <div class="main-col" id="results-start" tabindex="-1">
                    <SweepView job={state.job.clone()} settings={state.settings.clone()}
                               pinned={state.pinned_fields.clone()} on_pick={on_pick_config}
                               model_file={sweep_model_file} />
                    <RunBar status={state.run.clone()} {on_cancel}
                            no_result={output.as_ref().filter(|o| o.result.is_none() && o.analysis.is_none()).map(|o| AttrValue::from(
                                if o.job.is_some() { "the Describe a job panel says why" }
                                else if !o.diagnostics.is_empty() { "the messages below say why" }
                                else { "each file's card under Files says why" }))} />
                    if let Some(o) = &output {
                        if !o.diagnostics.is_empty() {
                            <ul class="diags run-diags">{ for o.diagnostics.iter().map(diagnostic) }</ul>
                        }
                    }
                    if let Some(p) = &state.compare {
                        <Compare pinned={(**p).clone()}
                                 current={(!pinned_is_current).then(|| output.as_ref().and_then(|o| o.result.clone().map(|r| (r, o.settings.clone(), o.files.iter().map(|f| f.name.clone()).collect())))).flatten()}
                                 {on_unpin} />
                    }
                    if let Some(r) = &result {
                        <Results result={r.clone()} {stale} on_pin={on_pin}
                                 stale_note={state.stale_note().map(AttrValue::from)}
                                 downloads_blocked={state.downloads_blocked().map(AttrValue::from)}
                                 pinned={pinned_is_current} on_error={on_error} {on_export} />
                        if let Some(facts) = r.model.as_ref().and_then(|m| m.plan.clone()).filter(|_| state.job_active) {
                            <PlanView {facts} job={state.job.clone()} gpus_per_node={state.settings.gpus_per_node}
                                      gpus_per_node_given={state.settings.gpus_per_node != crate::settings::Settings::default().gpus_per_node} />
                        }
                    } else if state.has_input() && output.as_ref().is_some_and(|o| o.job.is_some()) {
                        <section class="results empty" aria-label="Results">
                            <p class="note">{"No result for this job: the Describe a job panel says what is wrong with it."}</p>
                        </section>
                    } else if state.has_input() && output.is_some() {
                        <section class="results empty" aria-label="Results">
                            <p class="note">{ if output.as_ref().is_some_and(|o| !o.diagnostics.is_empty()) {
                                "No result for these files: the messages above this note say what is wrong with the input or the settings."
                            } else {
                                "No result for these files: each file's card under Files, below, says what is wrong with it."
                            } }</p>
                        </section>
                    } else if !state.has_input() {
                        <section class="results empty" aria-label="Results">
                            <p class="note">{"Load a workload or a training log (drop it, choose it, or pick an example), or describe a job, to see its results here."}</p>
                        </section>
                    }
                    if let Some(a) = output.as_ref().and_then(|o| o.analysis.clone()) {
                        <KinetoAnalysis analysis={a} {stale} />
                    }
                    if let Some(r) = result.as_ref().filter(|r| r.activations.iter().any(|a| a.peak_chunks > 0)) {
                        <ActivationChart activations={r.activations.clone()}
                                         end_ns={r.iteration_time_ns.unwrap_or(0)} />
                    }
                    if state.has_input() && state.settings.mode == Mode::Event {
                        <ScheduleCompare comparison={state.schedules.clone()}
                                         current={state.simulated_settings().schedule}
                                         running={state.run.is_running()}
                                         on_compare={on_compare_schedules}
                                         on_pick={on_pick_schedule}
                                         on_pin={on_pin_schedule}
                                         timelines={state.schedule_timelines.clone()} />
                    }
                    // A refused job has nothing to draw: its panel says why.
                    if output.as_ref().is_some_and(|o| o.result.is_some() || o.job.is_none())
                        && state.has_input() {
                        <TimelinePanel timelines={state.timelines.clone()}
                                       pinned={state.compare_timeline.clone()}
                                       stale={state.timelines_stale()}
                                       waiting={state.timeline_wait_note().map(AttrValue::from)}
                                       simai_mode={result.as_ref().is_some_and(|r| r.kind == ResultKind::Simai)}
                                       on_slow={Some(on_slow.clone())} />
                    }
                    if !state.files.is_empty() {
                        <section class="files" aria-label="Loaded files">
                            <div class="files-head">
                                <h2>{ format!("Files ({})", state.files.len()) }</h2>
                                <button class="secondary" onclick={on_clear}>{"Clear all"}</button>
                            </div>
                            { for state.files.iter().map(|f| html! {
                                <FileCard key={f.name.clone()} file={f.clone()}
                                          unparsed={unparsed.clone()}
                                          dispatch={state.dispatcher()} />
                            }) }
                        </section>
                    }
                </div>
            </div>
            if *dragging {
                <div class="drop-overlay" aria-hidden="true">{"Drop files to load them"}</div>
            }
        </div>
    }
}
