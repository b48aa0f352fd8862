//! A sortable table of typed cells: click (or Enter on) a column header to
//! sort by it, again to reverse. Numbers sort by value, text
//! lexicographically; ties keep the original order (stable sort). The
//! first [`FIRST_ROWS`] rows render at once (a result appears fast), "Show
//! more" adds rows up to the rows the result carries (at most
//! [`MAX_ROWS`]; the CSV export has all).

use crate::views::{Cell, TableView};
use yew::prelude::*;

/// Rows rendered at most (the DOM stays light for 100k-row traces).
pub const MAX_ROWS: usize = crate::views::TableView::MAX_ROWS_SENT;

/// Rows rendered before "Show more".
pub const FIRST_ROWS: usize = 50;

#[derive(Properties, PartialEq)]
pub struct SortableTableProps {
    pub table: TableView,
}

/// Sort direction of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Ascending,
    Descending,
}

/// Row order for sorting `rows` by `column` (stable; rows lacking the
/// column sort last).
pub fn sorted_order(rows: &[Vec<Cell>], column: usize, dir: Direction) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (rows[a].get(column), rows[b].get(column));
        let ord = match (ca, cb) {
            (Some(x), Some(y)) => x.cmp_key(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        match dir {
            Direction::Ascending => ord,
            Direction::Descending => ord.reverse(),
        }
    });
    order
}

#[component]
pub fn SortableTable(props: &SortableTableProps) -> Html {
    let sort = use_state(|| None::<(usize, Direction)>);
    let limit = use_state(|| FIRST_ROWS);
    let t = &props.table;
    let total = t.total_rows.max(t.rows.len() as u64);
    let shown = t.rows.len().min(MAX_ROWS).min(*limit) as u64;
    let more = (shown as usize) < t.rows.len().min(MAX_ROWS);
    let on_more = {
        let limit = limit.clone();
        Callback::from(move |_| limit.set((*limit).saturating_mul(10).min(MAX_ROWS)))
    };
    let order: Vec<usize> = match *sort {
        Some((col, dir)) => sorted_order(&t.rows, col, dir),
        None => (0..t.rows.len()).collect(),
    };
    let numeric: Vec<bool> = (0..t.columns.len())
        .map(|c| {
            t.rows
                .first()
                .and_then(|r| r.get(c))
                .is_some_and(Cell::is_numeric)
        })
        .collect();
    html! {
        <div class="table-block">
        <div class="table-wrap">
            <table class="sortable" data-testid="table">
                <caption>{ &t.title }{ format!(" ({} rows)", crate::format::count(total)) }</caption>
                <thead>
                    <tr>
                        { for t.columns.iter().enumerate().map(|(i, name)| {
                            let state = sort.clone();
                            let onclick = Callback::from(move |_| {
                                let next = match *state {
                                    Some((c, Direction::Ascending)) if c == i => (i, Direction::Descending),
                                    _ => (i, Direction::Ascending),
                                };
                                state.set(Some(next));
                            });
                            let aria = match *sort {
                                Some((c, Direction::Ascending)) if c == i => "ascending",
                                Some((c, Direction::Descending)) if c == i => "descending",
                                _ => "none",
                            };
                            let arrow = match aria { "ascending" => " ▲", "descending" => " ▼", _ => "" };
                            html! {
                                <th scope="col" aria-sort={aria}
                                    class={classes!(numeric.get(i).copied().unwrap_or(false).then_some("num"))}>
                                    <button type="button" class="th-sort" data-testid="sort" {onclick}>
                                        { name }{ arrow }
                                    </button>
                                </th>
                            }
                        }) }
                    </tr>
                </thead>
                <tbody>
                    { for order.iter().take(shown as usize).map(|&r| html! {
                        <tr>
                            { for t.rows[r].iter().map(|c| html! {
                                <td class={classes!(c.is_numeric().then_some("num"))}>{ c.text() }</td>
                            }) }
                        </tr>
                    }) }
                </tbody>
            </table>
        </div>
            if shown < total {
                <p class="note" data-testid="table-note">
                    { format!("Showing {shown} of {} rows", crate::format::count(total)) }
                    { if total > t.rows.len() as u64 { format!(" (sorting applies to the first {})", crate::format::count(t.rows.len() as u64)) } else { String::new() } }
                    {"; the CSV download has them all. "}
                    if more {
                        <button type="button" class="secondary small" data-testid="table-more" onclick={on_more}>{"Show more"}</button>
                    }
                </p>
            }
        </div>
    }
}
