//! "Plan the run" beside a described job's result: the whole run of the
//! job — days to train, failures, checkpoints, restarts, GPU-hours, cost —
//! from the core's goodput planner ([`trainscope_core::goodput`]), as
//! `trainscope plan` prints it for the same flags (the panel shows that
//! command line, `plan-cli`). The inputs ([`PlanInputs`]: amount, failure
//! rate or preset, checkpoint, detection, restart, interval, async, seed,
//! price) start at the core's defaults and travel in the link as `plan_*`
//! keys; a link with them opens the panel with those inputs. The plan is
//! computed here, on the page, when an input changes (a thousand
//! Monte-Carlo runs and two curves of closed forms: milliseconds).
//!
//! Outputs (`data-testid`, raw value in `data-value`): `plan-mttf` (hours),
//! `plan-interruptions`, `plan-interval-used` (seconds), `plan-daly`,
//! `plan-young`, `plan-ettr`, `plan-days-p10` / `-p50` / `-p90` /
//! `-closed`, `plan-gpu-hours` (P50), `plan-cost` (P50), the badput split
//! (`plan-badput`, one row per category with `data-seconds`). Pictures,
//! inline SVG like the sweep's plot: the first drawn run's progress over
//! wall-clock time with its failures and the P10-P90 spread of the finish
//! shaded (`plan-progress`), ETTR against the checkpoint interval with the
//! interval used marked (`plan-by-interval`), ETTR against the cluster
//! size with this job's marked (`plan-by-gpus`).

use crate::format;
use crate::job::JobSettings;
use crate::palette::{css, OKABE_ITO};
use crate::plan_inputs::{AmountKind, FailureKind, PlanInputs};
use crate::url;
use trainscope_core::goodput::curves::{ettr_by_gpus, ettr_by_interval, sizes_around, CurvePoint};
use trainscope_core::goodput::job_facts::PlanJob;
use trainscope_core::goodput::presets::PRESETS;
use trainscope_core::goodput::{duration_text, plan_with_trace, RunPlan, RunTrace};
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct PlanViewProps {
    /// The simulated job's facts (the core's).
    pub facts: PlanJob,
    /// The job as described (for the CLI line).
    pub job: JobSettings,
    /// GPUs per node of the page's cluster settings.
    pub gpus_per_node: u32,
    /// Whether the flag must be written (`--gpus-per-server`): the page's
    /// value differs from its default.
    #[prop_or_default]
    pub gpus_per_node_given: bool,
}

/// What the panel shows for one set of inputs.
#[derive(Debug, Clone, PartialEq)]
struct Computed {
    plan: RunPlan,
    trace: RunTrace,
    by_interval: Vec<CurvePoint>,
    by_gpus: Vec<CurvePoint>,
}

/// Points of the interval curve and its span (factor each side of Daly's).
const INTERVAL_POINTS: usize = 41;
const INTERVAL_FACTOR: f64 = 8.0;

fn compute(
    i: &PlanInputs,
    facts: &PlanJob,
    gpus_per_node: u32,
) -> Result<Computed, (String, String)> {
    let input = i.input(facts, gpus_per_node).map_err(|m| {
        (
            m,
            "give a number (the interval: auto or seconds)".to_string(),
        )
    })?;
    let (plan, trace) = plan_with_trace(&input).map_err(|e| (e.to_string(), e.hint()))?;
    let by_interval = ettr_by_interval(&input, &plan, INTERVAL_POINTS, INTERVAL_FACTOR);
    let by_gpus = ettr_by_gpus(&input, &plan, &sizes_around(input.gpus, gpus_per_node));
    Ok(Computed {
        plan,
        trace,
        by_interval,
        by_gpus,
    })
}

/// Replace the fragment's `plan_*` keys by the inputs.
fn write_link(inputs: &PlanInputs) {
    let mut parts: Vec<String> = url::current_fragment()
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("plan_"))
        .map(str::to_string)
        .collect();
    parts.push(inputs.fragment());
    url::replace_fragment(&parts.join("&"));
}

fn figure(testid: &'static str, label: &str, value: f64, text: String) -> Html {
    html! {
        <div class="figure">
            <dt>{ label.to_string() }</dt>
            <dd data-testid={testid} data-value={value.to_string()}>{ text }</dd>
        </div>
    }
}

// ---- SVG charts -------------------------------------------------------

const W: f64 = 460.0;
const H: f64 = 260.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 44.0;

/// A linear or log10 axis mapping.
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Axis {
    fn new(lo: f64, hi: f64, log: bool, from: f64, to: f64) -> Axis {
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
        Axis {
            lo,
            hi,
            log,
            from,
            to,
        }
    }
    fn at(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(1e-12).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.from + t * (self.to - self.from)
    }
    /// About five tick values.
    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut out = Vec::new();
            let mut v = 10f64.powf(self.lo.log10().floor());
            while v <= self.hi * 1.0001 {
                for m in [1.0, 2.0, 5.0] {
                    let t = v * m;
                    if t >= self.lo * 0.9999 && t <= self.hi * 1.0001 {
                        out.push(t);
                    }
                }
                v *= 10.0;
            }
            if out.len() > 7 {
                // Powers of ten only.
                out.retain(|t| (t.log10() - t.log10().round()).abs() < 1e-9);
            }
            out
        } else {
            let raw = (self.hi - self.lo) / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .into_iter()
                .map(|m| m * mag)
                .find(|s| *s >= raw)
                .unwrap_or(10.0 * mag);
            let mut out = Vec::new();
            let mut v = (self.lo / step).ceil() * step;
            while v <= self.hi + step * 1e-9 {
                out.push(v);
                v += step;
            }
            out
        }
    }
}

fn tick_text(v: f64) -> String {
    if v.abs() >= 1e4 || (v != 0.0 && v.abs() < 0.01) {
        format!("{v:.0e}")
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Axes, ticks and labels of a chart.
fn frame(x: &Axis, y: &Axis, x_label: &str, y_label: &str, x_fmt: fn(f64) -> String) -> Html {
    html! {
        <g class="plan-axes" font-size="11" fill="#5b6470">
            <line x1={LEFT.to_string()} y1={(H - BOTTOM).to_string()} x2={(W - RIGHT).to_string()} y2={(H - BOTTOM).to_string()} stroke="#8c959f" />
            <line x1={LEFT.to_string()} y1={TOP.to_string()} x2={LEFT.to_string()} y2={(H - BOTTOM).to_string()} stroke="#8c959f" />
            { for x.ticks().into_iter().map(|t| html! {
                <g>
                    <line x1={x.at(t).to_string()} x2={x.at(t).to_string()} y1={(H - BOTTOM).to_string()} y2={(H - BOTTOM + 4.0).to_string()} stroke="#8c959f" />
                    <text x={x.at(t).to_string()} y={(H - BOTTOM + 16.0).to_string()} text-anchor="middle">{ x_fmt(t) }</text>
                </g>
            }) }
            { for y.ticks().into_iter().map(|t| html! {
                <g>
                    <line x1={LEFT.to_string()} x2={(W - RIGHT).to_string()} y1={y.at(t).to_string()} y2={y.at(t).to_string()} stroke="#eaeef2" />
                    <text x={(LEFT - 6.0).to_string()} y={(y.at(t) + 4.0).to_string()} text-anchor="end">{ tick_text(t) }</text>
                </g>
            }) }
            <text x={((LEFT + W - RIGHT) / 2.0).to_string()} y={(H - 8.0).to_string()} text-anchor="middle">{ x_label.to_string() }</text>
            <text x="12" y={((TOP + H - BOTTOM) / 2.0).to_string()} text-anchor="middle"
                  transform={format!("rotate(-90 12 {})", (TOP + H - BOTTOM) / 2.0)}>{ y_label.to_string() }</text>
        </g>
    }
}

fn path(points: impl Iterator<Item = (f64, f64)>) -> String {
    let mut d = String::new();
    for (k, (x, y)) in points.enumerate() {
        d.push_str(&format!("{}{x:.1},{y:.1} ", if k == 0 { "M" } else { "L" }));
    }
    d
}

/// (a) The first drawn run: work done over wall-clock days, its failures
/// (each a drop back to the last checkpoint), the P10-P90 spread of the
/// finish shaded, the ideal run dashed.
fn progress_chart(c: &Computed) -> Html {
    let p = &c.plan;
    let work_s = p.ideal_days * 86_400.0;
    let end_days = c
        .trace
        .points
        .last()
        .map_or(0.0, |q| q.0 / 86_400.0)
        .max(p.days_to_train.p90);
    let x = Axis::new(0.0, end_days * 1.05, false, LEFT, W - RIGHT);
    let y = Axis::new(0.0, 100.0, false, H - BOTTOM, TOP);
    let pct = |w: f64| {
        if work_s > 0.0 {
            w / work_s * 100.0
        } else {
            0.0
        }
    };
    let run = path(
        c.trace
            .points
            .iter()
            .map(|&(t, w)| (x.at(t / 86_400.0), y.at(pct(w)))),
    );
    let spread = format!(
        "M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z",
        x.at(0.0),
        y.at(0.0),
        x.at(p.days_to_train.p10),
        y.at(100.0),
        x.at(p.days_to_train.p90),
        y.at(100.0)
    );
    let blue = css(OKABE_ITO[5]);
    let red = css(OKABE_ITO[6]);
    html! {
        <figure class="plan-chart">
            <svg data-testid="plan-progress" viewBox={format!("0 0 {W} {H}")} width={W.to_string()} height={H.to_string()}
                 role="img" aria-label="The run's progress over wall-clock time">
                <text x={LEFT.to_string()} y="16" font-size="13" font-weight="bold" fill="#1b1f24">{"One drawn run: work done over time"}</text>
                { frame(&x, &y, "wall-clock days", "work done, %", tick_text) }
                <path d={spread} fill={blue.clone()} fill-opacity="0.15" stroke="none">
                    <title>{ format!("P10-P90 of the finish: {:.2}-{:.2} days", p.days_to_train.p10, p.days_to_train.p90) }</title>
                </path>
                <line x1={x.at(0.0).to_string()} y1={y.at(0.0).to_string()} x2={x.at(p.ideal_days).to_string()} y2={y.at(100.0).to_string()}
                      stroke="#8c959f" stroke-dasharray="4 3" />
                <path d={run} fill="none" stroke={blue} stroke-width="1.5" />
                { for c.trace.failures_s.iter().map(|&f| html! {
                    <line x1={x.at(f / 86_400.0).to_string()} x2={x.at(f / 86_400.0).to_string()}
                          y1={(H - BOTTOM).to_string()} y2={(H - BOTTOM - 6.0).to_string()} stroke={red.clone()} stroke-width="1.5" />
                }) }
            </svg>
            <figcaption class="note small">{ format!(
                "Blue: the first run the seed draws ({} failure{}, red ticks; each drops back to the last checkpoint, every {}). Shaded: P10-P90 of the finish over {} runs. Dashed: no failures, no checkpoints ({:.2} days).",
                c.trace.failures_s.len(), if c.trace.failures_s.len() == 1 { "" } else { "s" }, duration_text(p.checkpoint_interval_s), p.runs, p.ideal_days) }</figcaption>
        </figure>
    }
}

/// An ETTR curve with one point marked.
fn ettr_chart(
    testid: &'static str,
    title: &str,
    x_label: &str,
    points: &[CurvePoint],
    mark: (f64, f64),
    mark_label: String,
    x_fmt: fn(f64) -> String,
) -> Html {
    if points.is_empty() {
        return html! {};
    }
    let (lo, hi) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.x), b.max(p.x))
        });
    let (ylo, yhi) = points
        .iter()
        .chain(std::iter::once(&CurvePoint {
            x: mark.0,
            ettr: mark.1,
        }))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.ettr), b.max(p.ettr))
        });
    let pad = ((yhi - ylo) * 0.1).max(0.005);
    let x = Axis::new(lo, hi, true, LEFT, W - RIGHT);
    let y = Axis::new(
        ((ylo - pad) * 100.0).max(0.0),
        ((yhi + pad) * 100.0).min(100.0),
        false,
        H - BOTTOM,
        TOP,
    );
    let line = path(points.iter().map(|p| (x.at(p.x), y.at(p.ettr * 100.0))));
    let blue = css(OKABE_ITO[5]);
    let orange = css(OKABE_ITO[1]);
    html! {
        <figure class="plan-chart">
            <svg data-testid={testid} viewBox={format!("0 0 {W} {H}")} width={W.to_string()} height={H.to_string()}
                 role="img" aria-label={title.to_string()} data-points={points.len().to_string()}>
                <text x={LEFT.to_string()} y="16" font-size="13" font-weight="bold" fill="#1b1f24">{ title.to_string() }</text>
                { frame(&x, &y, x_label, "ETTR, %", x_fmt) }
                <path d={line} fill="none" stroke={blue} stroke-width="1.5" />
                <circle cx={x.at(mark.0).to_string()} cy={y.at(mark.1 * 100.0).to_string()} r="4.5" fill={orange.clone()}
                        data-testid={format!("{testid}-mark")} data-x={mark.0.to_string()} data-ettr={mark.1.to_string()}>
                    <title>{ mark_label.clone() }</title>
                </circle>
                <text x={(x.at(mark.0) + 7.0).to_string()} y={(y.at(mark.1 * 100.0) - 7.0).to_string()} font-size="11" fill={orange}>{ mark_label }</text>
            </svg>
        </figure>
    }
}

fn minutes(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} min", s / 60.0)
    }
}

fn gpus_text(g: f64) -> String {
    format!("{g:.0}")
}

// ---- the panel --------------------------------------------------------

#[component]
pub fn PlanView(props: &PlanViewProps) -> Html {
    let from_link = use_memo((), |_| PlanInputs::from_fragment(&url::current_fragment()));
    let open = use_state(|| from_link.is_some());
    let inputs = use_state(|| (*from_link).clone().unwrap_or_default());
    {
        use_effect_with(((*inputs).clone(), *open), |(i, open)| {
            if *open {
                write_link(i);
            }
        });
    }
    let outcome = use_memo(
        (
            (*inputs).clone(),
            props.facts.clone(),
            props.gpus_per_node,
            *open,
        ),
        |(i, facts, g, open)| open.then(|| compute(i, facts, *g)),
    );
    let toggle = {
        let open = open.clone();
        Callback::from(move |_| open.set(!*open))
    };
    let edit = |f: fn(&mut PlanInputs, String)| {
        let inputs = inputs.clone();
        Callback::from(move |e: Event| {
            let v = match e.target_dyn_into::<HtmlSelectElement>() {
                Some(s) => s.value(),
                None => {
                    let i: HtmlInputElement = e.target_unchecked_into();
                    if i.type_() == "checkbox" {
                        if i.checked() {
                            "1".into()
                        } else {
                            "0".into()
                        }
                    } else {
                        i.value()
                    }
                }
            };
            let mut next = (*inputs).clone();
            f(&mut next, v);
            inputs.set(next);
        })
    };
    let i = &*inputs;
    let text_input = |testid: &'static str,
                      label: &'static str,
                      value: &str,
                      f: fn(&mut PlanInputs, String),
                      title: &'static str| {
        let placeholder = (testid == "plan-ckpt-s").then_some("from size ÷ bandwidth");
        html! {
            <label class="plan-field" {title}>
                <span>{ label }</span>
                <input type="text" data-testid={testid} value={value.to_string()} {placeholder} onchange={edit(f)} />
            </label>
        }
    };
    let mut cli = props
        .job
        .cli_command()
        .replacen("trainscope simulate", "trainscope plan", 1);
    if props.gpus_per_node_given {
        cli.push_str(&format!(" --gpus-per-server {}", props.gpus_per_node));
    }
    cli.push_str(&i.cli_flags());
    html! {
        <section class="plan-view" aria-label="Plan the run" data-testid="plan-view">
            <header class="results-head">
                <div>
                    <h2>{"Plan the run"}</h2>
                    <p class="subtitle">{"Days to train with failures, checkpoints and restarts (ETTR, Daly's interval, a seeded Monte-Carlo) — the core's planner, as trainscope plan prints it."}</p>
                </div>
                <button type="button" class="secondary" data-testid="plan-open" onclick={toggle} aria-expanded={open.to_string()}>
                    { if *open { "Hide the plan" } else { "Plan the run" } }
                </button>
            </header>
            if *open {
                <form class="plan-inputs" onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())}>
                    <label class="plan-field">
                        <span>{"Train for"}</span>
                        <select data-testid="plan-amount-kind" onchange={edit(|p, v| p.amount_kind = if v == "steps" { AmountKind::Steps } else { AmountKind::Tokens })}>
                            <option value="tokens" selected={i.amount_kind == AmountKind::Tokens}>{"tokens"}</option>
                            <option value="steps" selected={i.amount_kind == AmountKind::Steps}>{"steps"}</option>
                        </select>
                        <input type="text" data-testid="plan-amount" value={i.amount.clone()} onchange={edit(|p, v| p.amount = v)} />
                    </label>
                    <label class="plan-field">
                        <span>{"Failures"}</span>
                        <select data-testid="plan-failure-kind" onchange={edit(|p, v| {
                            let kind = match v.as_str() { "rate" => FailureKind::Rate, "mtbf" => FailureKind::Mtbf, _ => FailureKind::Preset };
                            if kind != p.failure_kind {
                                p.failure_kind = kind;
                                p.failure = match kind {
                                    FailureKind::Preset => PRESETS[0].name.to_string(),
                                    FailureKind::Rate => format!("{:.2}", PRESETS[0].per_1000_node_days()),
                                    FailureKind::Mtbf => "24".to_string(),
                                };
                            }
                        })}>
                            <option value="preset" selected={i.failure_kind == FailureKind::Preset}>{"preset (by source)"}</option>
                            <option value="rate" selected={i.failure_kind == FailureKind::Rate}>{"per 1000 node-days"}</option>
                            <option value="mtbf" selected={i.failure_kind == FailureKind::Mtbf}>{"job MTBF, hours"}</option>
                        </select>
                        if i.failure_kind == FailureKind::Preset {
                            <select data-testid="plan-preset" onchange={edit(|p, v| p.failure = v)}>
                                { for PRESETS.iter().map(|p| html! {
                                    <option value={p.name} selected={i.failure == p.name} title={p.source}>
                                        { format!("{} ({:.2} per 1000 node-days)", p.name, p.per_1000_node_days()) }
                                    </option>
                                }) }
                            </select>
                        } else {
                            <input type="text" data-testid="plan-failure" value={i.failure.clone()} onchange={edit(|p, v| p.failure = v)} />
                        }
                    </label>
                    { text_input("plan-ckpt-s", "Checkpoint write, s", &i.checkpoint_seconds, |p, v| p.checkpoint_seconds = v,
                        "Seconds to write one checkpoint; empty: its size over the nodes' write bandwidth") }
                    { text_input("plan-write-gbps", "Write GB/s per node", &i.write_gbps, |p, v| p.write_gbps = v,
                        "Checkpoint write bandwidth of one node (an assumption: give your storage's)") }
                    { text_input("plan-detect-s", "Detection, s", &i.detection_seconds, |p, v| p.detection_seconds = v,
                        "From a failure to the decision to restart") }
                    { text_input("plan-restart-s", "Restart, s", &i.restart_seconds, |p, v| p.restart_seconds = v,
                        "Re-initialisation after a failure (not the checkpoint read)") }
                    { text_input("plan-interval", "Checkpoint interval", &i.interval, |p, v| p.interval = v,
                        "auto (Daly's optimum) or seconds of training between checkpoints") }
                    <label class="plan-field" title="Training blocks only while each GPU copies its share to host memory">
                        <span>{"Async checkpoint"}</span>
                        <input type="checkbox" data-testid="plan-async" checked={i.async_checkpoint} onchange={edit(|p, v| p.async_checkpoint = v == "1")} />
                    </label>
                    { text_input("plan-seed", "Seed", &i.seed, |p, v| p.seed = v, "Seed of the Monte-Carlo") }
                    { text_input("plan-price", "GPU-hour price", &i.gpu_hour_price, |p, v| p.gpu_hour_price = v, "0: no cost") }
                </form>
                <p class="job-cli note small">{"CLI: "}<code data-testid="plan-cli">{ cli }</code></p>
                { match outcome.as_ref() {
                    Some(Ok(c)) => view_plan(c),
                    Some(Err((m, hint))) => html! {
                        <p class="diag error" data-testid="plan-error" role="alert">{ format!("{m} — {hint}") }</p>
                    },
                    None => html! {},
                } }
            }
        </section>
    }
}

fn view_plan(c: &Computed) -> Html {
    let p = &c.plan;
    let d = &p.days_to_train;
    let wall_s = d.closed_form * 86_400.0;
    let b = &p.badput;
    let interval_label = format!("used: {}", minutes(p.checkpoint_interval_s));
    let own = c
        .by_gpus
        .iter()
        .find(|q| q.x == f64::from(p.gpus))
        .map_or((f64::from(p.gpus), p.ettr), |q| (q.x, q.ettr));
    html! {
        <>
            <dl class="figures plan-figures">
                { figure("plan-ettr", "ETTR", p.ettr, format::percent(p.ettr)) }
                { figure("plan-days-p50", "Days to train, P50", d.p50, format!("{:.2}", d.p50)) }
                { figure("plan-days-p10", "P10", d.p10, format!("{:.2}", d.p10)) }
                { figure("plan-days-p90", "P90", d.p90, format!("{:.2}", d.p90)) }
                { figure("plan-days-closed", "Expected (closed form)", d.closed_form, format!("{:.2}", d.closed_form)) }
                { figure("plan-mttf", "Job MTTF", p.mttf_hours, format!("{:.2} h", p.mttf_hours)) }
                { figure("plan-interruptions", "Interruptions (expected)", p.expected_interruptions, format!("{:.1}", p.expected_interruptions)) }
                { figure("plan-interval-used", "Checkpoint interval", p.checkpoint_interval_s, format!("{} ({} steps)", duration_text(p.checkpoint_interval_s), p.checkpoint_every_steps)) }
                { figure("plan-daly", "Daly's optimum", p.optimal_interval_s, duration_text(p.optimal_interval_s)) }
                { figure("plan-young", "Young's", p.young_interval_s, duration_text(p.young_interval_s)) }
                { figure("plan-gpu-hours", "GPU-hours, P50", p.gpu_hours.p50, format!("{:.0}", p.gpu_hours.p50)) }
                { figure("plan-cost", "Cost, P50", p.cost.p50, if p.cost.p50 > 0.0 { format!("{:.0}", p.cost.p50) } else { "no price given".to_string() }) }
            </dl>
            <table class="plan-badput" data-testid="plan-badput">
                <caption>{"Badput (renewal model), ml-goodput-measurement's categories"}</caption>
                <tbody>
                { for [
                    ("checkpoint save", b.checkpoint_save_s),
                    ("checkpoint restore", b.checkpoint_restore_s),
                    ("wasted progress (lost work)", b.wasted_progress_s),
                    ("infrastructure recovery", b.infrastructure_recovery_s),
                    ("planned maintenance", b.planned_maintenance_s),
                ].into_iter().map(|(what, s)| html! {
                    <tr data-seconds={s.to_string()}>
                        <th scope="row">{ what }</th>
                        <td>{ duration_text(s) }</td>
                        <td>{ format!("{:.2}%", if wall_s > 0.0 { s / wall_s * 100.0 } else { 0.0 }) }</td>
                    </tr>
                }) }
                </tbody>
            </table>
            <div class="plan-charts">
                { progress_chart(c) }
                { ettr_chart("plan-by-interval", "ETTR against the checkpoint interval", "interval, seconds (log)",
                    &c.by_interval, (p.checkpoint_interval_s, p.ettr), interval_label, tick_text) }
                { ettr_chart("plan-by-gpus", "ETTR against the cluster size (Daly's interval)", "GPUs (log)",
                    &c.by_gpus, own, format!("this job: {} GPUs", p.gpus), gpus_text) }
            </div>
            { for p.notes.iter().map(|n| html! { <p class="note small">{ format!("note: {n}") }</p> }) }
        </>
    }
}
