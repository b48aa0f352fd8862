//! One loaded file: detected format, the fields the worker extracted (job
//! description, record counts, declared totals), and every warning/error
//! with its line and quoted text (`data-testid="warning"` / `"error"`, one
//! element per message).

use crate::state::{Action, AppState, LoadedFile};
use trainscope_core::{Diagnostic, Severity};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct FileCardProps {
    pub file: LoadedFile,
    /// The badge while the file has no parse result (`parsing…`, or why
    /// it was not parsed).
    #[prop_or(AttrValue::Static("parsing…"))]
    pub unparsed: AttrValue,
    pub dispatch: UseReducerDispatcher<AppState>,
}

/// One diagnostic as a list item (also used for run-level diagnostics).
pub fn diagnostic(d: &Diagnostic) -> Html {
    let (class, testid) = match d.severity {
        Severity::Error => ("diag error", "error"),
        Severity::Warning => ("diag warning", "warning"),
    };
    html! {
        <li class={class} data-testid={testid}>
            if let Some(loc) = &d.location {
                <span class="diag-loc">{ format!("{} line {}:{}", loc.file, loc.line, loc.column) }</span>
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
    let f = &props.file;
    let on_remove = {
        let dispatch = props.dispatch.clone();
        let name = f.name.clone();
        Callback::from(move |_| dispatch.dispatch(Action::Remove(name.clone())))
    };
    let (badge, bad) = match &f.view {
        None => (props.unparsed.to_string(), false),
        Some(v) => match &v.format {
            Some(name) => (name.clone(), false),
            None => ("unrecognised".to_string(), true),
        },
    };
    html! {
        <article class="file-card" data-testid="file-card" data-file={f.name.clone()}>
            <header>
                <h3>{ &f.name }</h3>
                <span class="size">{ crate::format::bytes(f.data.size_bytes()) }</span>
                <span class={classes!("badge", bad.then_some("bad"))}
                      data-testid={ if f.view.is_some() { "format" } else { "format-pending" } }>{ badge }</span>
                <button class="icon" aria-label={format!("Remove {}", f.name)} onclick={on_remove}>{"×"}</button>
            </header>
            if let Some(v) = &f.view {
                if !v.fields.is_empty() {
                    <dl class="fields">
                        { for v.fields.iter().map(|fv| {
                            let wide = fv.value.chars().count() > 14;
                            html! {
                                <div class={classes!("field", wide.then_some("wide"))}>
                                    <dt>{ &fv.label }</dt>
                                    <dd data-testid={fv.testid.clone()}>{ &fv.value }</dd>
                                </div>
                            }
                        }) }
                    </dl>
                }
                if !v.diagnostics.is_empty() {
                    <ul class="diags">{ for v.diagnostics.iter().map(diagnostic) }</ul>
                }
            }
        </article>
    }
}
