//! Compare: the pinned result "A" next to the current result "B", figure by
//! figure with the difference B − A (absolute and percent), plus which
//! settings and files differ. [`DiffTable`] also shows measured vs
//! simulated inside a result.

use crate::settings::Settings;
use crate::state::PinnedResult;
use crate::views::{diff_figures, DiffRow, ResultView};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct DiffTableProps {
    pub a_label: AttrValue,
    pub b_label: AttrValue,
    pub rows: Vec<DiffRow>,
}

/// Rows of figures: label, A, B, B − A, change in percent; the difference
/// coloured by what it means ([`crate::views::Verdict`]: better or worse
/// for this figure, or an error's size), its sign in the text.
#[component]
pub fn DiffTable(props: &DiffTableProps) -> Html {
    html! {
        <table class="diff">
            <thead>
                <tr>
                    <th scope="col">{"Figure"}</th>
                    <th scope="col" class="num">{ props.a_label.clone() }</th>
                    <th scope="col" class="num">{ props.b_label.clone() }</th>
                    <th scope="col" class="num">{ format!("{} − {}", props.b_label, props.a_label) }</th>
                    <th scope="col" class="num">{"Change"}</th>
                </tr>
            </thead>
            <tbody>
                { for props.rows.iter().map(|row| {
                    let (abs, pct) = row.delta.clone().unwrap_or_else(|| ("—".into(), "—".into()));
                    let dir = row.verdict.class();
                    html! {
                        <tr data-testid="compare-row" data-key={row.key.clone()}>
                            <th scope="row">{ &row.label }</th>
                            <td class="num" data-testid="compare-a">{ row.a.map_or("—".into(), |q| q.text()) }</td>
                            <td class="num" data-testid="compare-b">{ row.b.map_or("—".into(), |q| q.text()) }</td>
                            <td class={classes!("num", "delta", dir)} data-testid="compare-delta" data-verdict={dir}>{ abs }</td>
                            <td class={classes!("num", "delta", dir)} data-testid="compare-pct">{ pct }</td>
                        </tr>
                    }
                }) }
            </tbody>
        </table>
    }
}

#[derive(Properties, PartialEq)]
pub struct CompareProps {
    pub pinned: PinnedResult,
    /// The current result and its settings and files, if any.
    pub current: Option<(ResultView, Settings, Vec<String>)>,
    pub on_unpin: Callback<()>,
}

#[component]
pub fn Compare(props: &CompareProps) -> Html {
    let a = &props.pinned;
    let on_unpin = {
        let cb = props.on_unpin.clone();
        Callback::from(move |_| cb.emit(()))
    };
    html! {
        <section class="compare" aria-label="Compare" data-testid="compare">
            <header class="results-head">
                <div>
                    <h2>{"Compare: A (pinned) vs B (current)"}</h2>
                    <p class="subtitle">{ format!("A: {} — {}", a.result.title, match &a.result.model {
                        Some(m) => m.description.clone(),
                        None => a.files.join(", "),
                    }) }</p>
                </div>
                <button type="button" class="secondary" data-testid="compare-unpin" onclick={on_unpin}>{"Unpin A"}</button>
            </header>
            {
                match &props.current {
                    None => html! { <p class="note">{"Change settings or files: the next result shows here as B."}</p> },
                    Some((b, settings, files)) => {
                        let rows = diff_figures(&a.result.all_figures(), &b.all_figures());
                        let changed = a.settings.diff(settings);
                        // A described job is told by its description.
                        let job = |r: &ResultView| r.model.as_ref().map(|m| m.description.clone());
                        let job_changed = job(&a.result) != job(b);
                        html! {
                            <>
                                <DiffTable a_label="A" b_label="B" {rows} />
                                <p class="note" data-testid="compare-changes">
                                    if changed.is_empty() && a.files == *files && !job_changed {
                                        {"Same files and settings as A."}
                                    } else {
                                        { "B differs from A in: " }
                                        { changed.iter().map(|f| format!("{} ({} → {})", f.label(), a.settings.get(*f), settings.get(*f)))
                                              .chain((a.files != *files).then(|| format!("files ({})", files.join(", "))))
                                              .chain(job_changed.then(|| format!("the job ({})", job(b).unwrap_or_else(|| "none".into()))))
                                              .collect::<Vec<_>>().join("; ") }
                                    }
                                </p>
                            </>
                        }
                    }
                }
            }
        </section>
    }
}
