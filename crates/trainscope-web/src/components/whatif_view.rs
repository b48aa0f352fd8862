//! The What-if block of the Read panel (`data-testid="whatif"`): the
//! injected faults as the CLI flags that give them
//! (`data-testid="whatif-injected"`), the slow-down S against the ideal run
//! (`data-testid="whatif-slowdown"`, with `data-slowdown`, `data-ns` and
//! `data-baseline-ns`), the blame as a bar chart of each slice's share of
//! S - 1 (`data-testid="whatif-blame"`, one row per slice), and a
//! described job's per-stage sensitivity (`data-testid="whatif-sensitivity"`),
//! and, for a slow-down with a window (`--slow 5:1.5@iter1+1`), each
//! iteration of the run as a bar against the baseline
//! (`data-testid="whatif-iterations"`, one row per iteration with `data-ns`).
//! The numbers are the core's [`WhatIfReport`], the CLI's `whatif` object.

use crate::format;
use trainscope_core::whatif::{BlameBy, WhatIfReport};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct WhatIfProps {
    pub report: WhatIfReport,
}

fn by_name(by: BlameBy) -> &'static str {
    match by {
        BlameBy::Rank => "rank",
        BlameBy::Stage => "stage",
        BlameBy::Group => "group",
        BlameBy::Op => "op",
    }
}

/// A bar's width in percent of the largest value (0 when all are 0).
fn width(v: f64, max: f64) -> String {
    let w = if max > 0.0 {
        (v / max * 100.0).clamp(0.0, 100.0)
    } else {
        0.0
    };
    format!("width: {w:.1}%")
}

#[function_component(WhatIfView)]
pub fn whatif_view(props: &WhatIfProps) -> Html {
    let r = &props.report;
    let excess = (r.slowdown - 1.0).max(0.0);
    let top = r.blame.iter().map(|b| b.share).fold(0.0f64, f64::max);
    let longest = r.iteration_times_ns.iter().copied().max().unwrap_or(0);
    let worst = r
        .sensitivity
        .iter()
        .map(|s| s.cost_percent)
        .fold(0.0f64, f64::max);
    html! {
        <section class="whatif" data-testid="whatif" aria-label="What-if">
            <h3>{"What-if"}</h3>
            if !r.injected.is_empty() {
                <p class="small">{"Injected: "}<code data-testid="whatif-injected">{ r.injected.join(" ") }</code></p>
            }
            if r.ideal != "as given" {
                <p data-testid="whatif-slowdown"
                   data-slowdown={r.slowdown.to_string()}
                   data-ns={r.iteration_time_ns.to_string()}
                   data-baseline-ns={r.baseline_iteration_time_ns.to_string()}>
                    { format!(
                        "Step {} vs {} with {}: slow-down S = {:.4}",
                        format::duration_ns(r.iteration_time_ns),
                        format::duration_ns(r.baseline_iteration_time_ns),
                        r.ideal,
                        r.slowdown
                    ) }
                </p>
            }
            if !r.iteration_times_ns.is_empty() {
                <div class="whatif-blame" data-testid="whatif-iterations" role="table"
                     aria-label="Each iteration of the run as run">
                    <p class="small note">{ format!(
                        "The run, iteration by iteration, until the window has ended and one more (the step above is their mean; baseline {})",
                        format::duration_ns(r.baseline_iteration_time_ns)
                    ) }</p>
                    { for r.iteration_times_ns.iter().enumerate().map(|(i, &t)| html! {
                        <div class="whatif-row" role="row" data-iteration={i.to_string()}
                             data-ns={t.to_string()}>
                            <span class="whatif-label" role="cell">{ format!("iteration {i}") }</span>
                            <span class="whatif-bar" role="cell"><span style={width(t as f64, longest as f64)}></span></span>
                            <span class="whatif-value" role="cell">{ format!(
                                "{} · {:+.2}%",
                                format::duration_ns(t),
                                (t as f64 / r.baseline_iteration_time_ns.max(1) as f64 - 1.0) * 100.0
                            ) }</span>
                        </div>
                    }) }
                </div>
            }
            if !r.blame.is_empty() {
                <div class="whatif-blame" data-testid="whatif-blame" role="table"
                     aria-label="Blame: each slice's share of the slow-down">
                    <p class="small note">{ format!(
                        "Blame: how much of S − 1 = {excess:.4} goes away when one slice runs at its ideal (Lin et al., OSDI 2025)"
                    ) }</p>
                    { for r.blame.iter().map(|b| html! {
                        <div class="whatif-row" role="row" data-by={by_name(b.by)} data-name={b.name.clone()}
                             data-share={b.share.to_string()}>
                            <span class="whatif-label" role="cell">{
                                if b.by == BlameBy::Op { format!("op · {}", b.name) } else { b.name.clone() }
                            }</span>
                            <span class="whatif-bar" role="cell"><span style={width(b.share, top)}></span></span>
                            <span class="whatif-value" role="cell">{ format!("{:.4}", b.share) }</span>
                        </div>
                    }) }
                </div>
            }
            if let Some(first) = r.sensitivity.first() {
                <div class="whatif-blame" data-testid="whatif-sensitivity" role="table"
                     aria-label="Sensitivity: each stage slowed in turn">
                    <p class="small note">{ format!(
                        "Each stage's GPUs {}× slower in turn: what it costs the step, and which wait grows most",
                        trainscope_core::limits::number(first.factor)
                    ) }</p>
                    { for r.sensitivity.iter().map(|s| html! {
                        <div class="whatif-row" role="row" data-stage={s.stage.to_string()}
                             data-cost={s.cost_percent.to_string()}>
                            <span class="whatif-label" role="cell">{ format!("stage {}", s.stage) }</span>
                            <span class="whatif-bar" role="cell"><span style={width(s.cost_percent, worst)}></span></span>
                            <span class="whatif-value" role="cell">{ format!("{:+.2}% · {}", s.cost_percent, s.carried_by) }</span>
                        </div>
                    }) }
                </div>
            }
            <p class="small note">{ format!("{} simulations", r.simulations) }</p>
        </section>
    }
}
