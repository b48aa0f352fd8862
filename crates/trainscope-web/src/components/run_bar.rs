//! The run status line: progress of the run in the worker (a `<progress>`
//! bar and what is being done), the Cancel button (`data-testid="cancel"`)
//! while it runs, and why the last run stopped (cancelled, failed — an
//! `error` element).

use crate::state::RunStatus;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct RunBarProps {
    pub status: RunStatus,
    pub on_cancel: Callback<()>,
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
                            .map_or((0, 1, "Starting the worker…".to_string()), |p| (p.done, p.total.max(1), p.label.clone()));
                        html! {
                            <>
                                <progress max={total.to_string()} value={done.to_string()}
                                          aria-label="Run progress"></progress>
                                <span class="run-label">{ format!("Run {id}: {label}") }</span>
                                <button type="button" class="secondary" data-testid="cancel" onclick={on_cancel}>{"Cancel"}</button>
                            </>
                        }
                    }
                    RunStatus::Done { id } => html! { <span class="run-label">{ format!("Run {id} done") }</span> },
                    RunStatus::Cancelled { id } => html! { <span class="run-label">{ format!("Run {id} cancelled") }</span> },
                    RunStatus::Failed { id, message } => html! {
                        <ul class="diags"><li class="diag error" data-testid="error">{ format!("Run {id} failed: {message}") }</li></ul>
                    },
                }
            }
        </div>
    }
}
