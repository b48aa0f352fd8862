//! The analysis panel of a measured run with timed GPU work (PyTorch
//! profiler / Kineto traces): the core's [`Analysis`] as `trainscope
//! analyze` prints it, nothing recomputed here. The section
//! (`data-testid="kineto-analysis"`, `data-iteration` = the
//! `ProfilerStep`) holds the straggler line (`data-testid="straggler"`,
//! `data-rank` = the rank with the longest compute, `data-excess-ns`), the
//! last arrivals at collectives, the per-rank table
//! (`analysis-rank` rows with `data-rank` and the integer-ns breakdown as
//! `data-compute-ns`, `data-communication-ns`, `data-overlap-ns`,
//! `data-exposed-ns`, `data-idle-ns`, `data-iteration-ns`, each with a
//! stacked bar of compute only / overlap / exposed communication / idle),
//! the collectives table (`analysis-collective` rows with
//! `data-last-rank` and `data-wait-ns`: who arrived last, how long the
//! others waited, the transfer part), the top kernels
//! (`analysis-kernel` rows) and the analysis's notes (a partial set).

use crate::format;
use crate::palette::{css, OKABE_ITO};
use trainscope_core::analysis::{Analysis, RankBreakdown};
use yew::prelude::*;

/// Collectives listed before "… N more" (the CLI's text lists 32 too).
const COLLECTIVES_SHOWN: usize = 32;

#[derive(Properties, PartialEq)]
pub struct KinetoAnalysisProps {
    pub analysis: Analysis,
    /// The run shown is not the current settings' (dimmed like the results).
    #[prop_or_default]
    pub stale: bool,
}

/// The bar's parts of one rank, in order: (label, ns, colour).
fn parts(r: &RankBreakdown) -> [(&'static str, u64, String); 4] {
    [
        (
            "compute only",
            r.compute_ns.saturating_sub(r.overlap_ns),
            css(OKABE_ITO[5]),
        ),
        ("compute + communication", r.overlap_ns, css(OKABE_ITO[3])),
        (
            "exposed communication",
            r.exposed_communication_ns,
            css(OKABE_ITO[6]),
        ),
        ("idle", r.idle_ns, "#d9d9d9".to_string()),
    ]
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

fn rank_row(r: &RankBreakdown, longest_ns: u64, straggler: Option<u32>) -> Html {
    let bar = parts(r);
    let title = bar
        .iter()
        .map(|(label, ns, _)| format!("{label}: {}", format::duration_ns(*ns)))
        .collect::<Vec<_>>()
        .join(" · ");
    let width = share(r.iteration_ns, longest_ns) * 100.0;
    html! {
        <tr data-testid="analysis-rank" data-rank={r.rank.to_string()}
            class={classes!((straggler == Some(r.rank)).then_some("straggler-row"))}
            data-iteration-ns={r.iteration_ns.to_string()}
            data-compute-ns={r.compute_ns.to_string()}
            data-communication-ns={r.communication_ns.to_string()}
            data-overlap-ns={r.overlap_ns.to_string()}
            data-exposed-ns={r.exposed_communication_ns.to_string()}
            data-idle-ns={r.idle_ns.to_string()}>
            <td class="num">{ r.rank }</td>
            <td class="num">{ format::duration_ns(r.iteration_ns) }</td>
            <td class="num" title={format::percent(share(r.compute_ns, r.iteration_ns))}>{ format::duration_ns(r.compute_ns) }</td>
            <td class="num">{ format::duration_ns(r.communication_ns) }</td>
            <td class="num">{ format::duration_ns(r.overlap_ns) }</td>
            <td class="num">{ format::duration_ns(r.exposed_communication_ns) }</td>
            <td class="num" title={format::percent(share(r.idle_ns, r.iteration_ns))}>{ format::duration_ns(r.idle_ns) }</td>
            <td class="bar-cell">
                <div class="analysis-bar" title={title} style={format!("width: {width:.2}%")}>
                    { for bar.iter().map(|(label, ns, colour)| html! {
                        <span aria-label={*label}
                              style={format!("width: {:.3}%; background: {colour}", share(*ns, r.iteration_ns) * 100.0)} />
                    }) }
                </div>
            </td>
        </tr>
    }
}

#[component]
pub fn KinetoAnalysis(props: &KinetoAnalysisProps) -> Html {
    let a = &props.analysis;
    let step = a.iteration.map_or("the whole trace".to_string(), |i| {
        format!("ProfilerStep#{i}")
    });
    let longest = a.ranks.iter().map(|r| r.iteration_ns).max().unwrap_or(0);
    let straggler = a.compute_straggler.map(|rank| {
        let compute = a
            .ranks
            .iter()
            .find(|r| r.rank == rank)
            .map_or(0, |r| r.compute_ns);
        html! {
            <p class="straggler" data-testid="straggler" data-rank={rank.to_string()}
               data-excess-ns={a.straggler_excess_ns.to_string()}>
                <strong>{ format!("Straggler: rank {rank}") }</strong>
                { format!(
                    " — the longest compute ({}), {} above the median of the other ranks.",
                    format::duration_ns(compute),
                    format::duration_ns(a.straggler_excess_ns)
                ) }
            </p>
        }
    });
    let arrivals = (!a.last_arrivals.is_empty()).then(|| {
        let list = a
            .last_arrivals
            .iter()
            .map(|(r, n)| format!("rank {r}: {n}"))
            .collect::<Vec<_>>()
            .join(" · ");
        html! {
            <p class="note" data-testid="last-arrivals">
                { format!("Last to arrive at collectives (of {}): {list}", a.collectives.len()) }
            </p>
        }
    });
    let more = a.collectives.len().saturating_sub(COLLECTIVES_SHOWN);
    html! {
        <section class={classes!("kineto-analysis", props.stale.then_some("stale"))}
                 data-testid="kineto-analysis" aria-label="Measured run analysis"
                 data-iteration={a.iteration.map(|i| i.to_string())}>
            <h2>{ format!("Where the time went, per rank ({step})") }</h2>
            <p class="note">
                { "Measured, from the traces: compute = time with a compute kernel, copy or set running; communication = time with an NCCL kernel running; overlap = both; exposed = communication without compute; idle = neither (HolisticTraceAnalysis's breakdowns). The same analysis as " }
                <code>{ "trainscope analyze" }</code>{ "." }
            </p>
            { for straggler }
            { for arrivals }
            <div class="table-wrap">
                <table class="analysis-ranks" data-testid="analysis-ranks">
                    <thead><tr>
                        <th class="num">{"rank"}</th><th class="num">{"iteration"}</th>
                        <th class="num">{"compute"}</th><th class="num">{"communication"}</th>
                        <th class="num">{"overlap"}</th><th class="num">{"exposed comm"}</th>
                        <th class="num">{"idle"}</th><th>{"breakdown"}</th>
                    </tr></thead>
                    <tbody>{ for a.ranks.iter().map(|r| rank_row(r, longest, a.compute_straggler)) }</tbody>
                </table>
            </div>
            <ul class="analysis-legend">
                { for a.ranks.first().map(parts).into_iter().flatten().map(|(label, _, colour)| html! {
                    <li><span class="swatch" style={format!("background: {colour}")} />{ label }</li>
                }) }
            </ul>
            if !a.collectives.is_empty() {
                <h3>{ "Collectives: who arrived last" }</h3>
                <div class="table-wrap">
                    <table data-testid="analysis-collectives">
                        <thead><tr>
                            <th class="num">{"#"}</th><th>{"collective"}</th><th class="num">{"size"}</th>
                            <th class="num">{"ranks"}</th><th class="num">{"last rank"}</th>
                            <th class="num" title="the last start minus the first: how long the earliest member waited">{"longest wait"}</th>
                            <th class="num" title="the earliest end minus the last start">{"transfer"}</th>
                        </tr></thead>
                        <tbody>{ for a.collectives.iter().take(COLLECTIVES_SHOWN).map(|c| html! {
                            <tr data-testid="analysis-collective" data-last-rank={c.last_rank.to_string()}
                                data-wait-ns={c.max_wait_ns.to_string()} data-transfer-ns={c.transfer_ns.to_string()}>
                                <td class="num">{ c.index }</td>
                                <td class="name" title={c.name.clone()}>{ c.name.clone() }</td>
                                <td class="num">{ c.message_bytes.map_or("—".to_string(), format::bytes) }</td>
                                <td class="num">{ c.ranks }</td>
                                <td class="num">{ c.last_rank }</td>
                                <td class="num">{ format::duration_ns(c.max_wait_ns) }</td>
                                <td class="num">{ format::duration_ns(c.transfer_ns) }</td>
                            </tr>
                        }) }</tbody>
                    </table>
                </div>
                if more > 0 {
                    <p class="note">{ format!("… {more} more collectives (`trainscope analyze --json` lists them all)") }</p>
                }
            }
            if !a.top_kernels.is_empty() {
                <h3>{ "Top kernels (all ranks)" }</h3>
                <div class="table-wrap">
                    <table data-testid="analysis-kernels">
                        <thead><tr><th class="num">{"total"}</th><th class="num">{"count"}</th><th>{"kernel"}</th></tr></thead>
                        <tbody>{ for a.top_kernels.iter().map(|k| html! {
                            <tr data-testid="analysis-kernel" data-total-ns={k.total_ns.to_string()}>
                                <td class="num">{ format::duration_ns(k.total_ns) }</td>
                                <td class="num">{ format::count(k.count) }</td>
                                <td class="name" title={k.name.clone()}>{ k.name.clone() }</td>
                            </tr>
                        }) }</tbody>
                    </table>
                </div>
            }
            { for a.notes.iter().map(|n| html! { <p class="note" data-testid="analysis-note">{ n }</p> }) }
        </section>
    }
}
