//! The Read panel for one [`ResultView`]: the headline iteration time
//! (`data-testid="iteration-time"`, `data-ns` = integer ns), the figure
//! tiles (compute, bubble, exposed communication per group, ...), each with
//! its one-line definition as a tooltip and all of them in a "What these
//! numbers mean" disclosure (`data-testid="definitions"`, from
//! [`crate::glossary`]), measured vs simulated side by side when the input
//! had measurements (with what "measured" covers for its format,
//! `data-testid="measured-covers"`), the charts
//! canvas, tables, the result's own warnings/errors, the downloads
//! (`data-testid` from each export, e.g. `export-chrome-trace`, plus
//! `export-png` for the charts; disabled, with a title saying why, when the
//! result cannot be saved) and the Compare pin (`compare-pin`). A stale
//! result is dimmed, with a note (`data-testid="stale-note"`) saying so.
//! A model-level job's result adds its throughput under the iteration time
//! and its memory per stage under the charts ([`crate::components::model_result`]).

use crate::components::charts::Charts;
use crate::components::compare::DiffTable;
use crate::components::file_card::diagnostic;
use crate::components::model_result::{MemoryPanel, ModelFigures};
use crate::components::table::SortableTable;
use crate::components::whatif_view::WhatIfView;
use crate::download::download_canvas_png;
use crate::format;
use crate::glossary;
use crate::views::{error_figures, ExportFile, Quantity, ResultView};
use web_sys::HtmlCanvasElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ResultsProps {
    pub result: ResultView,
    /// Whether the result shown is not the current settings' (a run is
    /// recomputing it, or was cancelled or failed): the panel dims.
    #[prop_or_default]
    pub stale: bool,
    /// What to say over a stale result (no run is updating it).
    #[prop_or_default]
    pub stale_note: Option<AttrValue>,
    /// Why the worker's downloads cannot be made now (buttons disabled).
    #[prop_or_default]
    pub downloads_blocked: Option<AttrValue>,
    pub on_pin: Callback<()>,
    /// Whether this result is the pinned "A".
    #[prop_or_default]
    pub pinned: bool,
    /// Download failures are reported here.
    pub on_error: Callback<String>,
    /// A download button was pressed; the worker makes the file.
    pub on_export: Callback<ExportFile>,
}

fn raw_value(q: &Quantity) -> String {
    match q {
        Quantity::DurationNs(v) | Quantity::Bytes(v) | Quantity::Count(v) => v.to_string(),
        Quantity::Fraction(f) | Quantity::Tflops(f) | Quantity::TokensPerSecond(f) => f.to_string(),
    }
}

#[component]
pub fn Results(props: &ResultsProps) -> Html {
    let r = &props.result;
    let canvas = use_node_ref();
    // Why the charts could not be drawn (then there is no PNG to save).
    let chart_failed = use_state(|| None::<String>);
    let on_chart_outcome = {
        let chart_failed = chart_failed.clone();
        Callback::from(move |m: Option<String>| chart_failed.set(m))
    };
    let on_png = {
        let canvas = canvas.clone();
        let on_error = props.on_error.clone();
        Callback::from(move |_| {
            if let Some(c) = canvas.cast::<HtmlCanvasElement>() {
                if let Err(e) = download_canvas_png(&c, "trainscope-charts.png") {
                    on_error.emit(format!("PNG download failed: {e}"));
                }
            }
        })
    };
    let on_pin = {
        let cb = props.on_pin.clone();
        Callback::from(move |_| cb.emit(()))
    };
    let kind = r.kind.name();
    let define = |key: &str| glossary::definition(r.kind, key);
    // The disclosure: the headline, every figure shown, and (event mode)
    // the critical path the timeline highlights.
    let defined: Vec<(String, String, &'static str)> = r
        .iteration_time_ns
        .map(|_| ("iteration_time".to_string(), "Iteration time".to_string()))
        .into_iter()
        .chain(r.figures.iter().map(|f| (f.key.clone(), f.label.clone())))
        .chain(
            (r.kind == crate::views::ResultKind::Event)
                .then(|| ("critical_path".to_string(), "Critical path".to_string())),
        )
        .filter_map(|(key, label)| define(&key).map(|d| (key, label, d)))
        .collect();
    let measured_covers = r
        .measured_format
        .as_deref()
        .and_then(glossary::measured_covers);
    html! {
        <section class={classes!("results", props.stale.then_some("stale"))} aria-label="Results"
                 data-testid="results" data-kind={kind} aria-busy={props.stale.then_some("true")}>
            <header class="results-head">
                <div>
                    <h2>{ &r.title }</h2>
                    <p class="subtitle">{ &r.subtitle }</p>
                </div>
                <button type="button" class="secondary" data-testid="compare-pin" onclick={on_pin}
                        aria-pressed={props.pinned.to_string()}>
                    { if props.pinned { "Pinned as A" } else { "Pin as A (compare)" } }
                </button>
            </header>
            if let Some(note) = &props.stale_note {
                <p class="stale-note" data-testid="stale-note" role="status">{ note.clone() }</p>
            }
            if let Some(ns) = r.iteration_time_ns {
                <div class="headline" title={define("iteration_time")}>
                    <span class="headline-label">{"Iteration time"}</span>
                    <span class="headline-value" data-testid="iteration-time" data-ns={ns.to_string()}>
                        { format::duration_ns(ns) }
                    </span>
                </div>
            }
            if let Some(m) = &r.model {
                <ModelFigures model={m.clone()} />
            }
            <dl class="figures">
                { for r.figures.iter().map(|f| html! {
                    <div class="figure" data-testid="figure" data-key={f.key.clone()}
                         data-value={raw_value(&f.value)} title={define(&f.key)}>
                        <dt>{ &f.label }</dt>
                        <dd>{ f.value.text() }</dd>
                    </div>
                }) }
            </dl>
            if !defined.is_empty() {
                <details class="definitions" data-testid="definitions">
                    <summary>{"What these numbers mean"}</summary>
                    <dl>
                        { for defined.iter().map(|(key, label, text)| html! {
                            <div data-testid="definition" data-key={key.clone()}>
                                <dt>{ label }</dt>
                                <dd>{ *text }</dd>
                            </div>
                        }) }
                    </dl>
                </details>
            }
            if !r.measured.is_empty() {
                <div class="measured">
                    <h3>{"Measured vs simulated"}</h3>
                    if let Some(text) = measured_covers {
                        <p class="measured-covers" data-testid="measured-covers">{ text }</p>
                    }
                    <DiffTable a_label="Measured" b_label="Simulated"
                               rows={error_figures(&r.measured, &r.all_figures())} />
                    <p class="note" data-testid="measured-legend">{ format!(
                        "Colour by the size of the error, whatever its sign: green within {:.0} % of the measurement, amber within {:.0} %, red further off.",
                        crate::views::ERROR_CLOSE * 100.0, crate::views::ERROR_FAIR * 100.0) }</p>
                </div>
            }
            else if let Some(text) = measured_covers {
                // A measured input without a measured iteration (Chakra):
                // what it does record.
                <div class="measured">
                    <h3>{"What the input measured"}</h3>
                    <p class="measured-covers" data-testid="measured-covers">{ text }</p>
                </div>
            }
            if !r.breakdown.is_empty() || !r.bars.is_empty() {
                <Charts canvas={canvas.clone()} breakdown_title={r.breakdown_title.clone()}
                        breakdown={r.breakdown.clone()} bars_title={r.bars_title.clone()}
                        bars={r.bars.clone()} on_outcome={on_chart_outcome} />
            }
            if let Some(m) = &r.model {
                <MemoryPanel memory={m.memory.clone()} />
            }
            if !r.diagnostics.is_empty() {
                <ul class="diags">{ for r.diagnostics.iter().map(diagnostic) }</ul>
            }
            <div class="exports" role="group" aria-label="Downloads">
                <span class="exports-label">{"Download:"}</span>
                { for r.exports.iter().map(|x| {
                    let on_export = props.on_export.clone();
                    let file = x.clone();
                    let onclick = Callback::from(move |_| on_export.emit(file.clone()));
                    let blocked = props.downloads_blocked.clone();
                    let title = blocked.clone().unwrap_or_else(|| AttrValue::from(x.file_name.clone()));
                    html! {
                        <button type="button" class="secondary" data-testid={x.testid.clone()}
                                disabled={blocked.is_some()} {title} {onclick}>{ &x.label }</button>
                    }
                }) }
                if !r.breakdown.is_empty() || !r.bars.is_empty() {
                    <button type="button" class="secondary" data-testid="export-png" onclick={on_png}
                            disabled={chart_failed.is_some()}
                            title={chart_failed.as_ref().map_or_else(
                                || "trainscope-charts.png".to_string(),
                                |e| format!("The charts could not be drawn ({e}): no PNG to save"),
                            )}>
                        {"Charts (PNG)"}
                    </button>
                }
            </div>
            if let Some(w) = &r.whatif {
                <WhatIfView report={w.clone()} />
            }
            { for r.tables.iter().map(|t| html! { <SortableTable table={t.clone()} /> }) }
        </section>
    }
}
