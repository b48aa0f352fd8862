//! The run status line: progress of the run in the worker (a `<progress>`
//! bar and what is being done; while a large file is parsed, the bar is
//! that file's bytes read, `data-parsed-bytes` on `run-progress`), the
//! Cancel button (`data-testid="cancel"`)
//! while it runs, and why the last run stopped (cancelled, failed — an
//! `error` element).

use crate::state::RunStatus;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct RunBarProps {
    pub status: RunStatus,
    pub on_cancel: Callback<()>,
    /// The finished run gave no result: where the user reads why (the run
    /// reads "Run N failed: ..." then, not "done"; `data-state` stays `done`,
    /// the run is over).
    #[prop_or_default]
    pub no_result: Option<AttrValue>,
}

#[component]
pub fn RunBar(props: &RunBarProps) -> Html {
    let on_cancel = {
        let cb = props.on_cancel.clone();
        Callback::from(move |_| cb.emit(()))
    };
    let state = match &props.status {
        RunStatus::Idle => "idle",
        RunStatus::Running { .. } => "running",
        RunStatus::Done { .. } => "done",
        RunStatus::Cancelled { .. } => "cancelled",
        RunStatus::Failed { .. } => "failed",
    };
    html! {
        <div class="run-bar" data-testid="run-status" data-state={state} role="status" aria-live="polite">
            {
                match &props.status {
                    RunStatus::Idle => html! {},
                    RunStatus::Running { id, progress } => {
                        let (done, total, label) = progress.as_ref()
                            .map_or((0, 1, "Starting the worker…".to_string()), |p| match p.parsed_bytes {
                                // Within a large file: its bytes read.
                                Some((read, size)) => (read, size.max(1), p.label.clone()),
                                None => (u64::from(p.done), u64::from(p.total.max(1)), p.label.clone()),
                            });
                        let parsed = progress.as_ref().and_then(|p| p.parsed_bytes).map(|(read, _)| read.to_string());
                        html! {
                            <>
                                <progress max={total.to_string()} value={done.to_string()}
                                          data-testid="run-progress" data-parsed-bytes={parsed}
                                          aria-label="Run progress"></progress>
                                <span class="run-label">{ format!("Run {id}: {label}") }</span>
                                <button type="button" class="secondary" data-testid="cancel" onclick={on_cancel}>{"Cancel"}</button>
                            </>
                        }
                    }
                    RunStatus::Done { id } => match &props.no_result {
                        Some(why) => html! { <span class="run-label" data-outcome="no-result">{ format!("Run {id} failed: {why}") }</span> },
                        None => html! { <span class="run-label">{ format!("Run {id} done") }</span> },
                    },
                    RunStatus::Cancelled { id } => html! { <span class="run-label">{ format!("Run {id} cancelled") }</span> },
                    RunStatus::Failed { id, message } => html! {
                        <ul class="diags"><li class="diag error" data-testid="error">{ format!("Run {id} failed: {message}") }</li></ul>
                    },
                }
            }
        </div>
    }
}
