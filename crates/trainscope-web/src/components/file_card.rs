//! One loaded file: detected format, the job description from its header,
//! record counts, and every warning/error with its line and quoted text.

use crate::state::{Action, AppState};
use trainscope_core::inspect::FileSummary;
use trainscope_core::{Diagnostic, Severity};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct FileCardProps {
    pub summary: FileSummary,
    pub dispatch: UseReducerDispatcher<AppState>,
}

fn field(label: &'static str, testid: &'static str, value: String) -> Html {
    let wide = value.len() > 14;
    html! {
        <div class={classes!("field", wide.then_some("wide"))}>
            <dt>{ label }</dt>
            <dd data-testid={testid}>{ value }</dd>
        </div>
    }
}

fn diagnostic(d: &Diagnostic) -> Html {
    let (class, testid) = match d.severity {
        Severity::Error => ("diag error", "error"),
        Severity::Warning => ("diag warning", "warning"),
    };
    html! {
        <li class={class} data-testid={testid}>
            if let Some(loc) = &d.location {
                <span class="diag-loc">{ format!("line {}:{}", loc.line, loc.column) }</span>
            }
            <span class="diag-msg">{ &d.message }</span>
            if let Some(loc) = &d.location {
                <pre class="diag-text">{ &loc.text }</pre>
            }
            if let Some(hint) = &d.hint {
                <span class="diag-hint">{ format!("hint: {hint}") }</span>
            }
        </li>
    }
}

#[component]
pub fn FileCard(props: &FileCardProps) -> Html {
    let s = &props.summary;
    let on_remove = {
        let dispatch = props.dispatch.clone();
        let name = s.file.clone();
        Callback::from(move |_| dispatch.dispatch(Action::Remove(name.clone())))
    };
    let format = s.format.map_or("unrecognised", |f| f.name());
    html! {
        <article class="file-card" data-testid="file-card" data-file={s.file.clone()}>
            <header>
                <h3>{ &s.file }</h3>
                <span class={classes!("badge", s.format.is_none().then_some("bad"))}
                      data-testid="format">{ format }</span>
                <button class="icon" aria-label={format!("Remove {}", s.file)} onclick={on_remove}>{"×"}</button>
            </header>
            if let Some(h) = &s.simai {
                <dl class="fields">
                    { field("Policy", "policy", h.policy.to_string()) }
                    { field("TP", "tp", h.tp.to_string()) }
                    { field("PP", "pp", h.pp.to_string()) }
                    { field("EP", "ep", h.ep.to_string()) }
                    { field("vpp", "vpp", h.vpp.to_string()) }
                    { field("GA", "ga", h.ga.to_string()) }
                    { field("World", "world", h.world.map_or("—".into(), |w| w.to_string())) }
                    { field("pp_comm", "pp-comm", format!("{} B", h.pp_comm_bytes)) }
                    { field("Records", "records", format!("{} read, {} skipped", h.records, h.skipped_records)) }
                </dl>
            }
            if !s.diagnostics.is_empty() {
                <ul class="diags">{ for s.diagnostics.iter().map(diagnostic) }</ul>
            }
        </article>
    }
}
