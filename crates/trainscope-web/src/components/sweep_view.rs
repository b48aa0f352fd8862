//! The "Search configurations" view (`data-testid="sweep-view"`): the job
//! panel's model, GPU and batch with the Configure panel's cluster, one
//! bound per dimension ([`crate::sweep::BOUNDS`], empty = the core's
//! default list), and a Run button (`sweep-run`). A run starts a pool of
//! Web Workers (one per `navigator.hardwareConcurrency`, at most
//! [`MAX_WORKERS`]), worker `i` of `n` evaluating the core's `enumerate_shard(i, n)`
//! ([`crate::sweep::run_shard`]) and reporting progress after each
//! candidate (`sweep-progress`, with a Cancel button that terminates the
//! workers) and its rows in chunks while it runs: the plot and the table
//! show the rows received so far, ranked and with their Pareto front
//! (the core's [`rank`]), redrawn at most every [`REDRAW_MS`]; when every
//! worker is done the page joins the shards' reports (each given back
//! its rows) with the core's [`merge`], so the result is the unsharded one
//! (`trainscope sweep --json`'s rows). Cancel keeps the rows received,
//! marked as partial (`data-partial` on the table). The model may be a
//! dropped `config.json` (its bytes go to each worker once, with its
//! request); a link names that file but cannot carry it (`sweep-file-note`).
//! Results: counts (candidates, skipped, pruned,
//! simulated, fitting), the explanation of the winner (`sweep-explain`),
//! a scatter plot (`sweep-plot`, SVG: peak memory across, iteration time
//! up, colour by TP or schedule, the GPU's capacity as a dashed line, the
//! Pareto front as a line through its points) and a sortable table, paged
//! [`TOP_ROWS`] rows a page with "Rows 1–50 of N" (`sweep-table`, each `<tr data-config=FLAGS>`,
//! `data-rows` = the rows received).
//! Clicking a row or a point loads that configuration into the job panel
//! and simulates it (`on_pick`); a row's "Pin A" (`sweep-pin`) does the
//! same and pins the result as run A of the compare view, so the next row
//! clicked is compared with it (run B). Running writes the bounds (and the job)
//! into the URL fragment as `sweep_*` keys, and a link with them opens
//! the view with those bounds.

use crate::format;
use crate::job::{JobModel, JobSettings};
use crate::palette::{colour_for, css};
use crate::protocol::{FileData, InputFile, Request, Response, SweepRequest};
use crate::settings::{Field, Schedule, Settings};
use crate::sweep::row_job;
use crate::sweep_inputs::{SweepInputs, BOUNDS};
use crate::url;
use crate::worker_host::{HostEvent, WorkerHost, WORKER_URL};
use std::collections::BTreeSet;
use std::rc::Rc;
use trainscope_core::search::{explain, merge, rank, Row, ShardId, SweepReport};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlInputElement};
use yew::prelude::*;

/// Most workers a sweep starts, whatever the core count.
pub const MAX_WORKERS: u32 = 16;
/// Rows the table shows.
pub const TOP_ROWS: usize = 50;
/// Points the plot draws beyond the Pareto front (the fastest first, the
/// report's order): a large sweep stays quick to draw.
pub const MAX_POINTS: usize = 3000;
/// The same while a sweep runs (the plot is redrawn as rows arrive).
pub const PARTIAL_POINTS: usize = 1000;
/// While a sweep runs, the view is redrawn at most this often (ms): rows
/// arrive from every worker every 100 ms, a redraw ranks them and draws
/// the plot and the table.
pub const REDRAW_MS: u32 = 250;
/// While a sweep runs, the plot and the table take the rows received at
/// most this often (ms): ranking and drawing thousands of rows is the
/// costly part of a redraw, the progress bar is not.
pub const ROWS_REDRAW_MS: f64 = 1000.0;

#[derive(Properties, PartialEq)]
pub struct SweepViewProps {
    pub job: JobSettings,
    pub settings: Settings,
    pub pinned: BTreeSet<Field>,
    /// The job's model file (name, content) when its model is a dropped
    /// `config.json` that is loaded.
    #[prop_or_default]
    pub model_file: Option<(String, FileData)>,
    /// Load this configuration into the job panel and simulate it (`true`:
    /// and pin its result as run A of the compare view).
    pub on_pick: Callback<(JobSettings, Schedule, bool)>,
}

/// One sweep in progress or finished.
#[derive(Default)]
struct Run {
    /// Sequence number of the run (message ids are `seq << 16 | shard`).
    seq: u64,
    running: bool,
    /// Per shard: (done, total).
    progress: Vec<(u32, u32)>,
    /// Per shard: its report once done, without its rows.
    reports: Vec<Option<SweepReport>>,
    /// Every row received and not yet in `result`: ranked ([`rank`]) before
    /// it is drawn when `unranked`.
    rows: Vec<Row>,
    unranked: bool,
    /// Bumped when the rows drawn change (rows shown, the result, a new
    /// run): the plot and the table redraw only then.
    version: u64,
    /// When `version` last moved for new rows (`Date.now()`, ms).
    shown_at_ms: f64,
    /// When the run started (`Date.now()`, ms): the time-left estimate.
    started_ms: f64,
    /// The job the sweep ran with: a clicked row is this job with the
    /// row's layout.
    base: JobSettings,
    result: Option<Rc<SweepReport>>,
    error: Option<String>,
}

impl Run {
    /// Every shard done: give each report its rows back (candidate `k` is
    /// shard `k mod n`'s) and join them into the unsharded report.
    fn finish(&mut self) {
        let n = self.reports.len();
        let mut shards: Vec<SweepReport> = self.reports.iter_mut().flat_map(Option::take).collect();
        for row in std::mem::take(&mut self.rows) {
            if let Some(s) = shards.get_mut(row.index as usize % n) {
                s.results.push(row);
            }
        }
        match merge(&shards) {
            Ok(m) => self.result = Some(Rc::new(m)),
            Err(e) => self.error = Some(format!("cannot join the workers' results: {e}")),
        }
        self.running = false;
        self.version += 1;
    }

    /// The rows to draw: the result's, else those received so far, ranked.
    fn shown(&mut self) -> &[Row] {
        if let Some(r) = &self.result {
            return &r.results;
        }
        if self.unranked {
            rank(&mut self.rows);
            self.unranked = false;
        }
        &self.rows
    }
}

/// The column the table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortKey {
    Rank,
    Time,
    Tokens,
    Mfu,
    Peak,
}

/// The rows of table page `page` ([`TOP_ROWS`] a page) of `all` sorted
/// by `key`, each with its rank.
fn sorted_rows(all: &[Row], key: SortKey, descending: bool, page: usize) -> Vec<(usize, &Row)> {
    let skip = page * TOP_ROWS;
    if key == SortKey::Rank && !descending {
        return all.iter().enumerate().skip(skip).take(TOP_ROWS).collect();
    }
    let mut rows: Vec<(usize, &Row)> = all.iter().enumerate().collect();
    let cmp = |a: &(usize, &Row), b: &(usize, &Row)| -> std::cmp::Ordering {
        let o = match key {
            SortKey::Rank => a.0.cmp(&b.0),
            SortKey::Time => a.1.iteration_time_ns.cmp(&b.1.iteration_time_ns),
            SortKey::Tokens => a.1.tokens_per_second.total_cmp(&b.1.tokens_per_second),
            SortKey::Mfu => a.1.mfu.total_cmp(&b.1.mfu),
            SortKey::Peak => a.1.peak_bytes.cmp(&b.1.peak_bytes),
        };
        // Ties: the report's order.
        o.then(a.0.cmp(&b.0))
    };
    rows.sort_by(|a, b| if descending { cmp(b, a) } else { cmp(a, b) });
    rows.into_iter().skip(skip).take(TOP_ROWS).collect()
}

fn layout(r: &Row) -> String {
    let mut s = match (r.first_stage_layers, r.last_stage_layers) {
        (Some(f), Some(l)) => format!(
            "TP {} · PP {} (first {f}, last {l} layers) · DP {}",
            r.tp, r.pp, r.dp
        ),
        _ => format!("TP {} · PP {} · DP {}", r.tp, r.pp, r.dp),
    };
    if r.cp > 1 {
        s.push_str(&format!(" · CP {}", r.cp));
    }
    if r.ep > 1 {
        s.push_str(&format!(" · EP {}", r.ep));
    }
    if let Some(e) = r.expert_tp {
        s.push_str(&format!(" · expert TP {e}"));
    }
    if r.vpp > 1 {
        s.push_str(&format!(" · vpp {}", r.vpp));
    }
    s
}

/// The scatter plot of every row: peak memory across, iteration time up.
/// One click handler for the whole plot (`onclick`: the point's
/// `data-config` names its row), so a redraw makes no closure per point.
/// Round axis ticks from `lo` to past `hi`: steps of 1, 2 or 5 × 10^k,
/// about five of them, the first at or below `lo` and the last at or above
/// `hi` (so the axis ends on a tick: `0 20 40 60 80 100`, not `85926`).
pub fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::EPSILON);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|f| f * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() * step;
    let n = ((hi - first) / step).ceil().max(1.0) as usize;
    (0..=n).map(|k| first + step * k as f64).collect()
}

/// Ticks' texts with as many decimals as their step needs (`0 20 40`,
/// `0.5 1 1.5`).
fn tick_texts(ticks: &[f64]) -> Vec<String> {
    let step = match ticks {
        [a, b, ..] => b - a,
        _ => 1.0,
    };
    let decimals = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
    ticks.iter().map(|v| format!("{v:.decimals$}")).collect()
}

fn plot(all: &[Row], max_points: usize, by_tp: bool, onclick: &Callback<MouseEvent>) -> Html {
    const W: f64 = 640.0;
    const H: f64 = 320.0;
    const L: f64 = 64.0;
    const B: f64 = 40.0;
    const T: f64 = 12.0;
    const R: f64 = 16.0;
    let rows: Vec<&Row> = all
        .iter()
        .filter(|r| r.pareto)
        .chain(all.iter().filter(|r| !r.pareto).take(max_points))
        .collect();
    let hidden = all.len() - rows.len();
    if rows.is_empty() {
        return html! { <p class="note">{"No configuration was simulated: nothing to plot."}</p> };
    }
    let capacity = rows.iter().map(|r| r.capacity_bytes).max().unwrap_or(0);
    // The axes frame the configurations that fit (and the capacity line):
    // one that does not fit lies beyond, clamped to the plot's edge as a
    // hollow point past the axis break, its values in its tooltip.
    let framed: Vec<&Row> = match rows.iter().any(|r| r.fits) {
        true => rows.iter().copied().filter(|r| r.fits).collect(),
        false => rows.clone(),
    };
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let mem_hi = framed
        .iter()
        .map(|r| r.peak_bytes)
        .max()
        .unwrap_or(1)
        .max(capacity)
        .max(1);
    let x_ticks = nice_ticks(0.0, gib(mem_hi) * 1.05);
    let max_gib = *x_ticks.last().unwrap_or(&1.0);
    let t_min = framed
        .iter()
        .map(|r| r.iteration_time_ns)
        .min()
        .unwrap_or(0) as f64
        / 1e6;
    let t_max = framed
        .iter()
        .map(|r| r.iteration_time_ns)
        .max()
        .unwrap_or(1) as f64
        / 1e6;
    let pad = ((t_max - t_min) * 0.05).max(t_max * 0.01);
    let y_ticks = nice_ticks((t_min - pad).max(0.0), t_max + pad);
    let (t_lo, t_hi) = (y_ticks[0], *y_ticks.last().unwrap_or(&1.0));
    let t_span = (t_hi - t_lo).max(f64::EPSILON);
    let clamped = |r: &Row| {
        gib(r.peak_bytes) > max_gib
            || (r.iteration_time_ns as f64 / 1e6) > t_hi
            || (r.iteration_time_ns as f64 / 1e6) < t_lo
    };
    let broken_x = rows.iter().any(|r| gib(r.peak_bytes) > max_gib);
    let xg = |g: f64| L + (g.min(max_gib) / max_gib) * (W - L - R);
    let x = |b: u64| xg(gib(b));
    let yms = |t: f64| H - B - ((t.clamp(t_lo, t_hi) - t_lo) / t_span) * (H - B - T);
    let y = |t: u64| yms(t as f64 / 1e6);
    let key = |r: &Row| {
        if by_tp {
            format!("TP {}", r.tp)
        } else {
            r.schedule.clone()
        }
    };
    let mut keys: Vec<String> = rows.iter().map(|r| key(r)).collect();
    keys.sort();
    keys.dedup();
    if by_tp {
        keys.sort_by_key(|k| k[3..].parse::<u32>().unwrap_or(0));
    }
    let colour = |k: &str| {
        let i = keys.iter().position(|x| x == k).unwrap_or(0);
        css(colour_for(k, i))
    };
    let mut front: Vec<&Row> = rows.iter().copied().filter(|r| r.pareto).collect();
    front.sort_by_key(|r| (r.peak_bytes, r.iteration_time_ns));
    let front_points = front
        .iter()
        .map(|r| format!("{:.1},{:.1}", x(r.peak_bytes), y(r.iteration_time_ns)))
        .collect::<Vec<_>>()
        .join(" ");
    html! {
        <figure class="sweep-plot-wrap">
            <svg data-testid="sweep-plot" class="sweep-plot" viewBox={format!("0 0 {W} {H}")}
                 role="img" aria-label="Iteration time against peak memory per configuration"
                 onclick={onclick.clone()}>
                <line x1={L.to_string()} y1={(H - B).to_string()} x2={(W - R).to_string()} y2={(H - B).to_string()} class="axis" />
                <line x1={L.to_string()} y1={T.to_string()} x2={L.to_string()} y2={(H - B).to_string()} class="axis" />
                { for x_ticks.iter().zip(tick_texts(&x_ticks)).map(|(g, text)| html! {
                    <text x={format!("{:.1}", xg(*g))} y={(H - B + 16.0).to_string()} text-anchor="middle"
                          class="tick" data-testid="sweep-x-tick">{ text }</text>
                }) }
                { for y_ticks.iter().zip(tick_texts(&y_ticks)).map(|(t, text)| html! {
                    <text x={(L - 6.0).to_string()} y={format!("{:.1}", yms(*t) + 4.0)} text-anchor="end"
                          class="tick" data-testid="sweep-y-tick">{ text }</text>
                }) }
                if broken_x {
                    // The axis break: points past it do not fit and are clamped.
                    <text x={(W - R + 2.0).to_string()} y={(H - B + 4.0).to_string()} class="tick axis-break"
                          data-testid="sweep-axis-break">{"≫"}</text>
                }
                <text x={((L + W - R) / 2.0).to_string()} y={(H - 6.0).to_string()} text-anchor="middle" class="axis-label">{"peak memory per GPU (GiB)"}</text>
                <text x="12" y={((H - B) / 2.0).to_string()} text-anchor="middle" class="axis-label"
                      transform={format!("rotate(-90 12 {})", (H - B) / 2.0)}>{"iteration time (ms)"}</text>
                if capacity > 0 {
                    <line data-testid="sweep-capacity" class="capacity"
                          x1={format!("{:.1}", x(capacity))} y1={T.to_string()}
                          x2={format!("{:.1}", x(capacity))} y2={(H - B).to_string()}
                          stroke="#c00" stroke-dasharray="4 3" />
                    // Beside the line at the top, clear of the axes' ticks.
                    <text x={format!("{:.1}", if x(capacity) - L > 140.0 { x(capacity) - 4.0 } else { x(capacity) + 4.0 })}
                          y={(T + 10.0).to_string()}
                          text-anchor={if x(capacity) - L > 140.0 { "end" } else { "start" }}
                          class="tick capacity-label" data-testid="sweep-capacity-label">
                        { format!("GPU memory {:.0} GiB", gib(capacity)) }
                    </text>
                }
                if front.len() > 1 {
                    <polyline data-testid="sweep-front" points={front_points} fill="none" stroke="#333" stroke-width="1.5" />
                }
                { for rows.iter().map(|r| {
                    html! {
                        <circle cx={format!("{:.1}", x(r.peak_bytes))} cy={format!("{:.1}", y(r.iteration_time_ns))}
                                r={if r.pareto { "5" } else { "3.5" }}
                                fill={if clamped(r) { "none".to_string() } else { colour(&key(r)) }}
                                fill-opacity={if r.fits { "0.9" } else { "0.3" }}
                                stroke={if r.pareto { "#000".to_string() } else if clamped(r) { "#8a8f98".to_string() } else { "none".to_string() }}
                                data-config={r.flags.clone()} data-clamped={clamped(r).to_string()} class="sweep-point">
                            <title>{ format!("{} · {} · {} · {}", layout(r), r.schedule, format::duration_ns(r.iteration_time_ns), format::bytes(r.peak_bytes)) }</title>
                        </circle>
                    }
                }) }
            </svg>
            <figcaption class="legend">
                { for keys.iter().map(|k| html! {
                    <span class="legend-item"><span class="swatch" style={format!("background:{}", colour(k))}></span>{ k.clone() }</span>
                }) }
                <span class="legend-item">{ if broken_x {
                    "— Pareto front · dashed: GPU memory · faded: does not fit · hollow past ≫: beyond the axes (values in the tooltip)"
                } else {
                    "— Pareto front · dashed: GPU memory · faded: does not fit"
                } }</span>
                if hidden > 0 {
                    <span class="legend-item" data-testid="sweep-plot-hidden">{ format!("{hidden} slower points not drawn (the Pareto front is drawn whole)") }</span>
                }
            </figcaption>
        </figure>
    }
}

/// A time left, rounded as people say it: `5 s`, `40 s`, `3 min`, `1 h 10 min`.
fn time_left_text(ms: f64) -> String {
    let s = (ms / 1000.0).max(1.0);
    if s < 60.0 {
        format!("{} s", ((s / 5.0).ceil() * 5.0).min(60.0) as u64)
    } else if s < 3600.0 {
        format!("{} min", (s / 60.0).ceil() as u64)
    } else {
        let m = (s / 60.0).ceil() as u64;
        format!("{} h {} min", m / 60, m % 60)
    }
}

/// `navigator.hardwareConcurrency` (1 when the browser does not say),
/// at most [`MAX_WORKERS`].
pub fn worker_count() -> u32 {
    use js_sys::Reflect;
    use wasm_bindgen::JsValue;
    let cores = Reflect::get(&gloo::utils::window(), &JsValue::from_str("navigator"))
        .and_then(|n| Reflect::get(&n, &JsValue::from_str("hardwareConcurrency")))
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(1.0);
    cores.clamp(1.0, f64::from(MAX_WORKERS)) as u32
}

/// Replace the fragment's `sweep_*` keys by the bounds (and add the job
/// when the link does not describe one yet).
fn write_link(inputs: &SweepInputs, job: &JobSettings) {
    let current = url::current_fragment();
    let mut parts: Vec<String> = current
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("sweep_"))
        .map(str::to_string)
        .collect();
    // The job is in the link already when it names its model (a preset, or a
    // dropped file by name).
    if !parts
        .iter()
        .any(|p| p.starts_with("model=") || p.starts_with("model_file="))
    {
        parts.push(url::job_fragment(job));
    }
    let sweep = inputs.fragment();
    if !sweep.is_empty() {
        parts.push(sweep);
    } else {
        // The view's state: an empty search still opens with the link.
        parts.push("sweep_world=".to_string() + &job.world().to_string());
    }
    url::replace_fragment(&parts.join("&"));
}

#[component]
pub fn SweepView(props: &SweepViewProps) -> Html {
    let from_link = use_memo((), |_| SweepInputs::from_fragment(&url::current_fragment()));
    let open = use_state(|| from_link.is_some());
    let inputs = use_state(|| (*from_link).clone().unwrap_or_default());
    let run = use_mut_ref(Run::default);
    let hosts = use_mut_ref(Vec::<WorkerHost>::new);
    let redraw = use_force_update();

    // A redraw within REDRAW_MS is pending (progress and rows only; the
    // end of a run redraws at once).
    let redraw_due = use_mut_ref(|| false);
    let later = {
        let redraw = redraw.clone();
        let due = redraw_due.clone();
        move || {
            if std::mem::replace(&mut *due.borrow_mut(), true) {
                return;
            }
            let redraw = redraw.clone();
            let due = due.clone();
            yew::platform::spawn_local(async move {
                gloo::timers::future::TimeoutFuture::new(REDRAW_MS).await;
                *due.borrow_mut() = false;
                redraw.force_update();
            });
        }
    };

    let sink = {
        let run = run.clone();
        let hosts = hosts.clone();
        let redraw = redraw.clone();
        Callback::from(move |event: HostEvent| {
            let mut r = run.borrow_mut();
            let (seq, live) = (r.seq, r.running);
            let shard_of = move |id: u64| -> Option<usize> {
                (id >> 16 == seq && live).then_some((id & 0xffff) as usize)
            };
            match event {
                HostEvent::Response(Response::SweepProgress { id, done, total }) => {
                    let Some(i) = shard_of(id) else { return };
                    if let Some(p) = r.progress.get_mut(i) {
                        *p = (done, total);
                    }
                    // Rows received but not drawn yet (a stretch of pruned
                    // candidates sends none): drawn once their time comes.
                    let now = js_sys::Date::now();
                    if r.unranked && now - r.shown_at_ms >= ROWS_REDRAW_MS {
                        r.version += 1;
                        r.shown_at_ms = now;
                    }
                    drop(r);
                    later();
                    return;
                }
                HostEvent::Response(Response::SweepRows { id, rows }) => {
                    if shard_of(id).is_none() {
                        return;
                    }
                    r.rows.extend(rows);
                    r.unranked = true;
                    let now = js_sys::Date::now();
                    if now - r.shown_at_ms >= ROWS_REDRAW_MS {
                        r.version += 1;
                        r.shown_at_ms = now;
                    }
                    drop(r);
                    later();
                    return;
                }
                HostEvent::Response(Response::SweepDone { id, report }) => {
                    let Some(i) = shard_of(id) else { return };
                    if let Some(slot) = r.reports.get_mut(i) {
                        *slot = Some(*report);
                    }
                    if !r.reports.iter().all(Option::is_some) {
                        drop(r);
                        later();
                        return;
                    }
                    // Join the shards in a task of its own, then draw in
                    // another: neither blocks the page long.
                    drop(r);
                    let run = run.clone();
                    let redraw = redraw.clone();
                    yew::platform::spawn_local(async move {
                        gloo::timers::future::TimeoutFuture::new(0).await;
                        {
                            let mut r = run.borrow_mut();
                            if r.seq != seq || !r.running {
                                return;
                            }
                            r.finish();
                        }
                        gloo::timers::future::TimeoutFuture::new(0).await;
                        redraw.force_update();
                    });
                    return;
                }
                HostEvent::Response(Response::Failed { id, message }) => {
                    if shard_of(id).is_none() {
                        return;
                    }
                    r.error = Some(message);
                    r.running = false;
                    for h in hosts.borrow().iter() {
                        h.cancel();
                    }
                }
                HostEvent::Crashed { id, message } => {
                    if !live || id.is_some_and(|id| shard_of(id).is_none()) {
                        return;
                    }
                    r.error = Some(format!("a search worker stopped: {message}"));
                    r.running = false;
                }
                HostEvent::Response(_) => return,
            }
            drop(r);
            redraw.force_update();
        })
    };

    let on_run = {
        let run = run.clone();
        let hosts = hosts.clone();
        let inputs = inputs.clone();
        let redraw = redraw.clone();
        let job = props.job.clone();
        let settings = props.settings.clone();
        let pinned = props.pinned.clone();
        let model_file = props.model_file.clone();
        Callback::from(move |_: MouseEvent| {
            let n = worker_count();
            {
                let mut hs = hosts.borrow_mut();
                for h in hs.iter() {
                    if h.busy() {
                        h.cancel();
                    }
                }
                while hs.len() < n as usize {
                    hs.push(WorkerHost::new(WORKER_URL, sink.clone()));
                }
            }
            let seq = {
                let mut r = run.borrow_mut();
                let seq = r.seq + 1;
                *r = Run {
                    seq,
                    running: true,
                    progress: vec![(0, 0); n as usize],
                    reports: vec![None; n as usize],
                    version: r.version + 1,
                    base: job.clone(),
                    started_ms: js_sys::Date::now(),
                    ..Run::default()
                };
                seq
            };
            write_link(&inputs, &job);
            // A dropped model file: its bytes, once per worker.
            let files: Vec<InputFile> = match (&job.model, &model_file) {
                (JobModel::File(name), Some((loaded, data))) if name == loaded => {
                    vec![InputFile {
                        name: name.clone(),
                        data: data.clone(),
                    }]
                }
                _ => Vec::new(),
            };
            for (i, h) in hosts.borrow().iter().take(n as usize).enumerate() {
                h.run(&Request::Sweep(SweepRequest {
                    id: seq << 16 | i as u64,
                    settings: settings.clone(),
                    pinned: pinned.clone(),
                    job: job.clone(),
                    inputs: (*inputs).clone(),
                    shard: ShardId {
                        index: i as u32,
                        count: n,
                    },
                    files: files.clone(),
                }));
            }
            redraw.force_update();
        })
    };

    let on_cancel = {
        let run = run.clone();
        let hosts = hosts.clone();
        let redraw = redraw.clone();
        Callback::from(move |_: MouseEvent| {
            for h in hosts.borrow().iter() {
                h.cancel();
            }
            let mut r = run.borrow_mut();
            if r.running {
                r.running = false;
                r.error = Some("cancelled".into());
                // Every row received is drawn.
                r.version += 1;
            }
            drop(r);
            redraw.force_update();
        })
    };

    // A click on a point or a table row: the element's `data-config`
    // names the row among those shown; on a row's "Pin A", pin it too.
    let pick = {
        let on_pick = props.on_pick.clone();
        let run = run.clone();
        Callback::from(move |e: MouseEvent| {
            let Some(target) = e.target().and_then(|t| t.dyn_into::<Element>().ok()) else {
                return;
            };
            let pin = target
                .closest("[data-testid=sweep-pin]")
                .ok()
                .flatten()
                .is_some();
            let Some(flags) = target
                .closest("[data-config]")
                .ok()
                .flatten()
                .and_then(|el| el.get_attribute("data-config"))
            else {
                return;
            };
            let mut r = run.borrow_mut();
            let base = r.base.clone();
            let found = r
                .shown()
                .iter()
                .find(|r| r.flags == flags)
                .and_then(|row| row_job(row, &base));
            drop(r);
            if let Some((job, schedule)) = found {
                on_pick.emit((job, schedule, pin));
            }
        })
    };

    let toggle = {
        let open = open.clone();
        Callback::from(move |_: MouseEvent| open.set(!*open))
    };

    let r = run.borrow();
    let (done, total) = r
        .progress
        .iter()
        .fold((0u32, 0u32), |(d, t), (a, b)| (d + a, t + b));
    let error = r.error.clone();
    let running = r.running;
    let workers = r.progress.len();
    let version = r.version;
    // Time left at the pace so far (shown once a tenth is done, when the
    // pace says something).
    let time_left = (running && done > 0 && done < total && done * 10 >= total).then(|| {
        let elapsed_ms = js_sys::Date::now() - r.started_ms;
        let left_ms = elapsed_ms / f64::from(done) * f64::from(total - done);
        format!(" · about {} left", time_left_text(left_ms))
    });
    let counts = match &r.result {
        Some(rep) => Some(format!(
            "{} candidates ({} combinations skipped) · {} pruned by memory · {} simulated · {} fit",
            rep.candidates, rep.skipped, rep.pruned, rep.simulated, rep.fitting
        )),
        None if r.rows.is_empty() => None,
        None => Some(format!(
            "{}: {done} of {total} candidates evaluated · {} simulated · {} fit",
            if running {
                "Partial result so far"
            } else {
                "Partial result (stopped)"
            },
            r.rows.len(),
            r.rows.iter().filter(|x| x.fits).count()
        )),
    };
    let partial = r.result.is_none();
    drop(r);
    let file_note = match &props.job.model {
        JobModel::File(name) => Some(format!(
            "The model is the dropped file {name}: the workers search it, but a link names {name} and cannot carry it: whoever opens the link drops that config.json again."
        )),
        JobModel::Preset(_) => None,
    };

    html! {
        <section class="sweep" data-testid="sweep-view" aria-label="Search configurations">
            <div class="files-head">
                <h2>{"Search configurations"}</h2>
                <button type="button" class="secondary small" data-testid="sweep-toggle" onclick={toggle}>
                    { if *open { "Hide" } else { "Show" } }
                </button>
            </div>
            if *open {
                <p class="note">
                    { format!("Every layout of {} on {} GPUs within these bounds (empty: the default list, as `trainscope sweep`), pruned by memory, then simulated in {} Web Workers. The model, GPU, batch, sequence length and precision are the job panel's; the cluster is the Configure panel's.",
                        props.job.model.name(), props.job.gpu,
                        worker_count()) }
                </p>
                if let Some(note) = file_note {
                    <p class="note small" data-testid="sweep-file-note">{ note }</p>
                }
                <div class="sweep-bounds">
                    { for BOUNDS.iter().map(|b| {
                        let value = inputs.get(b.key).to_string();
                        let inputs = inputs.clone();
                        let key = b.key;
                        let oninput = Callback::from(move |e: InputEvent| {
                            let el: HtmlInputElement = e.target_unchecked_into();
                            let mut next = (*inputs).clone();
                            next.set(key, el.value());
                            inputs.set(next);
                        });
                        html! {
                            // The default under the box, whole (a placeholder
                            // that long is cut off at 1280 px).
                            <label class="field">
                                <span>{ b.label }</span>
                                <input type="text" data-testid={format!("sweep-{}", b.key)}
                                       {value} placeholder="default" title={b.placeholder} {oninput} />
                                <small class="bound-hint" data-testid="sweep-bound-hint">{ b.placeholder }</small>
                            </label>
                        }
                    }) }
                </div>
                <div class="sweep-actions">
                    <button type="button" data-testid="sweep-run" onclick={on_run} disabled={running}>{"Run search"}</button>
                    if running {
                        <button type="button" class="secondary" data-testid="sweep-cancel" onclick={on_cancel}>{"Cancel"}</button>
                    }
                </div>
                if workers > 0 {
                    <div class="sweep-progress" data-testid="sweep-progress" data-done={done.to_string()} data-total={total.to_string()}>
                        <progress max={total.max(1).to_string()} value={done.to_string()} />
                        <span data-testid="sweep-progress-text">{ format!("{done} / {total} candidates evaluated by {workers} workers{}",
                            if running { time_left.clone().unwrap_or_default() } else if !partial { " — finished".into() } else { " — stopped".into() }) }</span>
                    </div>
                }
                if let Some(e) = &error {
                    <p class="diag error" data-testid="sweep-error">{ e.clone() }</p>
                }
                if let Some(counts) = counts {
                    <p class="note" data-testid="sweep-counts" data-partial={partial.to_string()}>{ counts }</p>
                    <RowsView run={run.clone()} {version} {pick} />
                }
            }
        </section>
    }
}

/// The rows part of the view: the explanation of the winner (so far), the
/// colour choice, the plot and the table. Redrawn only when the rows drawn
/// change (`version`), not on every progress message.
#[derive(Properties)]
struct RowsViewProps {
    run: Rc<std::cell::RefCell<Run>>,
    version: u64,
    pick: Callback<MouseEvent>,
}

impl PartialEq for RowsViewProps {
    fn eq(&self, other: &Self) -> bool {
        // `pick` is made anew on each render of the view and does the same
        // (it reads the run it holds): it does not count.
        Rc::ptr_eq(&self.run, &other.run) && self.version == other.version
    }
}

#[component]
fn RowsView(props: &RowsViewProps) -> Html {
    let sort = use_state(|| (SortKey::Rank, false));
    let page = use_state(|| 0usize);
    let by_tp = use_state(|| true);
    let mut r = props.run.borrow_mut();
    let partial = r.result.is_none();
    let winner = match &r.result {
        Some(rep) => rep.explain.clone().map(|x| ("Winner: ", x)),
        None => match r.shown() {
            [a, b, ..] if a.fits && b.fits => Some(("Winner so far: ", explain(a, b))),
            _ => None,
        },
    };
    let shown = r.shown();
    html! {
        <>
            if let Some((label, x)) = winner {
                <p class="sweep-explain" data-testid="sweep-explain"><strong>{ label }</strong>{ x }</p>
            }
            <label class="field inline">
                <span>{"Colour by"}</span>
                <select data-testid="sweep-colour" onchange={{
                    let by_tp = by_tp.clone();
                    Callback::from(move |e: Event| {
                        let el: web_sys::HtmlSelectElement = e.target_unchecked_into();
                        by_tp.set(el.value() == "tp");
                    })
                }}>
                    <option value="tp" selected={*by_tp}>{"TP"}</option>
                    <option value="schedule" selected={!*by_tp}>{"schedule"}</option>
                </select>
            </label>
            { plot(shown, if partial { PARTIAL_POINTS } else { MAX_POINTS }, *by_tp, &props.pick) }
            { table(shown, partial, &sort, &page, &props.pick) }
        </>
    }
}

/// One page of [`TOP_ROWS`] of `all` (ranked) by the chosen column, with
/// "Rows 1–50 of 498" and Previous / Next (`sweep-page`, `sweep-prev`,
/// `sweep-next`); one click handler for the body (`onclick`: the row's
/// `data-config`, "Pin A").
fn table(
    all: &[Row],
    partial: bool,
    sort: &UseStateHandle<(SortKey, bool)>,
    page: &UseStateHandle<usize>,
    onclick: &Callback<MouseEvent>,
) -> Html {
    let (key, desc) = **sort;
    // `--straggler`: the step with one GPU slowed, what rows rank by.
    let straggler = all.iter().any(|r| r.straggler_iteration_time_ns.is_some());
    let pages = all.len().div_ceil(TOP_ROWS).max(1);
    let at = (**page).min(pages - 1);
    let rows = sorted_rows(all, key, desc, at);
    let first = at * TOP_ROWS;
    let pager = |label: &'static str, testid: &'static str, to: Option<usize>| {
        let page = page.clone();
        html! {
            <button type="button" class="secondary small" data-testid={testid} disabled={to.is_none()}
                    onclick={Callback::from(move |_: MouseEvent| if let Some(p) = to { page.set(p) })}>{ label }</button>
        }
    };
    let head = |label: &'static str, k: SortKey, first_desc: bool| {
        let sort = sort.clone();
        let page = page.clone();
        let onclick = Callback::from(move |_: MouseEvent| {
            let (cur, d) = *sort;
            sort.set(if cur == k { (k, !d) } else { (k, first_desc) });
            page.set(0);
        });
        let mark = if key == k {
            if desc {
                " ▼"
            } else {
                " ▲"
            }
        } else {
            ""
        };
        html! { <th class="sortable" {onclick} data-sort={format!("{k:?}")}>{ label }{ mark }</th> }
    };
    html! {
        <>
        <div class="sweep-pager">
            <span data-testid="sweep-page" data-first={(first + 1).to_string()}
                  data-last={(first + rows.len()).to_string()} data-total={all.len().to_string()}>
                { if all.is_empty() { "No rows yet".to_string() } else {
                    format!("Rows {}–{} of {}{}", first + 1, first + rows.len(), all.len(), if partial { " so far" } else { "" })
                } }
            </span>
            if pages > 1 {
                { pager("‹ Previous", "sweep-prev", at.checked_sub(1)) }
                { pager("Next ›", "sweep-next", (at + 1 < pages).then_some(at + 1)) }
            }
        </div>
        <div class="table-wrap">
            <table class="data sweep-table" data-testid="sweep-table"
                   data-rows={all.len().to_string()} data-partial={partial.to_string()}>
                <thead>
                    <tr>
                        { head("#", SortKey::Rank, false) }
                        <th>{"Layout"}</th>
                        <th>{"Schedule"}</th>
                        <th>{"mbs"}</th>
                        <th>{"Recompute"}</th>
                        { head("Iteration", SortKey::Time, false) }
                        if straggler {
                            <th title="The step with one GPU slowed by the Straggler factor at its worst place (the stage named); rows rank by it">{"With straggler"}</th>
                        }
                        { head("Tokens/s", SortKey::Tokens, true) }
                        { head("MFU", SortKey::Mfu, true) }
                        { head("Peak memory", SortKey::Peak, false) }
                        <th>{"Fits"}</th>
                        <th>{"Pareto"}</th>
                        <th></th>
                    </tr>
                </thead>
                <tbody onclick={onclick.clone()}>
                    { for rows.into_iter().map(|(rank, r)| {
                        html! {
                            <tr data-config={r.flags.clone()} class="clickable" title="Simulate this configuration">
                                <td>{ rank + 1 }</td>
                                <td>{ layout(r) }</td>
                                <td>{ r.schedule.clone() }</td>
                                <td>{ r.micro_batch_size }</td>
                                <td>{ r.recompute.clone() }</td>
                                // The winner line's unit (the core's).
                                <td>{ trainscope_core::search::report::ms(r.iteration_time_ns) }</td>
                                if straggler {
                                    <td data-testid="sweep-straggler-step">{ match (r.straggler_iteration_time_ns, r.straggler_stage) {
                                        (Some(t), Some(st)) => format!("{} (stage {st})", trainscope_core::search::report::ms(t)),
                                        (Some(t), None) => trainscope_core::search::report::ms(t),
                                        _ => String::new(),
                                    } }</td>
                                }
                                <td>{ format::tokens_per_second(r.tokens_per_second) }</td>
                                <td>{ format::percent(r.mfu) }</td>
                                <td>{ format::bytes(r.peak_bytes) }</td>
                                <td>{ if r.fits { "yes" } else { "no" } }</td>
                                <td>{ if r.pareto { "●" } else { "" } }</td>
                                <td><button type="button" class="secondary small" data-testid="sweep-pin"
                                            title="Simulate it and pin it as run A; the next row clicked is compared with it">{"Pin A"}</button></td>
                            </tr>
                        }
                    }) }
                </tbody>
            </table>
        </div>
        </>
    }
}
