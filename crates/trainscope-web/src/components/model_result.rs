//! What only a model-level job's result shows ([`ModelView`]): the
//! throughput summary ([`ModelFigures`]: MFU `data-testid="job-mfu"`, model
//! TFLOP/s per GPU `job-tflops`, tokens/s `job-tokens`, each with its raw
//! value in `data-value`) and the memory per pipeline stage
//! ([`MemoryPanel`]: a stacked bar per stage of weights, gradients,
//! optimizer states, activations and logits against the GPU's capacity
//! line on a canvas, `job-memory-chart`; the same numbers as a table,
//! `job-memory-table`, one row per stage with `data-peak-bytes`; and the
//! core's "does not fit on stage k: needs X GiB of Y" lines,
//! `job-memory-message`).

use crate::format;
use crate::palette::OKABE_ITO;
use crate::views::{MemoryView, ModelView, MEMORY_PARTS};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use web_sys::HtmlCanvasElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ModelFiguresProps {
    pub model: ModelView,
}

/// The throughput strip under the iteration time.
#[component]
pub fn ModelFigures(props: &ModelFiguresProps) -> Html {
    let m = &props.model;
    let peak = m
        .memory
        .stages
        .iter()
        .map(|s| s.peak_bytes)
        .max()
        .unwrap_or(0);
    html! {
        <div class="job-summary" data-testid="job-summary">
            <p class="subtitle" data-testid="job-description">{ &m.description }</p>
            <dl class="figures job-figures">
                <div class="figure">
                    <dt>{"MFU"}</dt>
                    <dd data-testid="job-mfu" data-value={m.mfu.to_string()}>{ format::percent(m.mfu) }</dd>
                </div>
                <div class="figure">
                    <dt>{"Model TFLOP/s per GPU"}</dt>
                    <dd data-testid="job-tflops" data-value={m.model_tflops_per_gpu.to_string()}>
                        { format::tflops(m.model_tflops_per_gpu) }
                    </dd>
                </div>
                <div class="figure">
                    <dt>{"Tokens per second"}</dt>
                    <dd data-testid="job-tokens" data-value={m.tokens_per_second.to_string()}>
                        { format::tokens_per_second(m.tokens_per_second) }
                    </dd>
                </div>
                <div class={classes!("figure", (!m.memory.fits).then_some("over"))}>
                    <dt>{ format!("Peak memory (capacity {})", format::bytes(m.memory.capacity_bytes)) }</dt>
                    <dd data-testid="job-peak" data-value={peak.to_string()}>
                        { format!("{}{}", format::bytes(peak), if m.memory.fits { "" } else { " — does not fit" }) }
                    </dd>
                </div>
            </dl>
        </div>
    }
}

/// Colour of a memory part (fixed, colour-blind safe).
pub fn part_colour(key: &str) -> (u8, u8, u8) {
    match key {
        "weights" => OKABE_ITO[5],
        "gradients" => OKABE_ITO[2],
        "optimizer" => OKABE_ITO[3],
        "activations" => OKABE_ITO[1],
        "buffers" => OKABE_ITO[4],
        _ => OKABE_ITO[7],
    }
}

/// Colour of the capacity line.
pub const CAPACITY_COLOUR: (u8, u8, u8) = OKABE_ITO[6];

const GIB: f64 = (1u64 << 30) as f64;

/// A round axis step (1, 2 or 5 x 10^k GiB) giving about `ticks` ticks up to `max`.
pub fn tick_step_gib(max_gib: f64, ticks: f64) -> f64 {
    if !(max_gib.is_finite() && max_gib > 0.0) {
        return 1.0;
    }
    let raw = max_gib / ticks;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// Canvas size of the memory chart, pixels (bars narrow with more stages).
pub const CHART_SIZE: (u32, u32) = (960, 320);

fn rgb(c: (u8, u8, u8)) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Draw the stacked memory bars and the capacity line on `canvas`.
pub fn draw_memory(canvas: HtmlCanvasElement, m: &MemoryView) -> Result<(), String> {
    let backend = CanvasBackend::with_canvas_object(canvas).ok_or("no 2D canvas context")?;
    let root = backend.into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("{e:?}");
    root.fill(&WHITE).map_err(err)?;
    let (w, h) = root.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let ink = RGBColor(27, 31, 36);
    let muted = RGBColor(91, 100, 112);
    let title = ("sans-serif", 16)
        .into_font()
        .style(FontStyle::Bold)
        .color(&ink);
    let label = ("sans-serif", 13).into_font().color(&ink);
    let small = ("sans-serif", 12).into_font().color(&muted);
    root.draw(&Text::new(
        format!(
            "Memory per stage (first rank) — capacity {} ({})",
            format::bytes(m.capacity_bytes),
            m.gpu
        ),
        (12, 8),
        title,
    ))
    .map_err(err)?;
    // Legend.
    let mut lx = 12;
    for (key, name) in MEMORY_PARTS {
        root.draw(&Rectangle::new(
            [(lx, 36), (lx + 14, 50)],
            rgb(part_colour(key)).filled(),
        ))
        .map_err(err)?;
        root.draw(&Text::new(name, (lx + 20, 36), label.clone()))
            .map_err(err)?;
        lx += 30 + 9 * name.len() as i32;
    }
    root.draw(&PathElement::new(
        vec![(lx, 43), (lx + 24, 43)],
        rgb(CAPACITY_COLOUR).stroke_width(2),
    ))
    .map_err(err)?;
    root.draw(&Text::new("Capacity", (lx + 30, 36), label.clone()))
        .map_err(err)?;
    // Plot area.
    let (x0, x1, y0, y1) = (70, w - 16, 66, h - 30);
    let peak = m.stages.iter().map(|s| s.peak_bytes).max().unwrap_or(0);
    let top_gib = (peak.max(m.capacity_bytes) as f64 / GIB * 1.08).max(1.0);
    let y_of = |bytes: f64| -> i32 {
        let f = (bytes / GIB / top_gib).clamp(0.0, 1.0);
        y1 - ((y1 - y0) as f64 * f).round() as i32
    };
    let step = tick_step_gib(top_gib, 5.0);
    let mut t = 0.0;
    while t <= top_gib + 1e-9 {
        let y = y_of(t * GIB);
        root.draw(&PathElement::new(
            vec![(x0, y), (x1, y)],
            RGBColor(232, 235, 239).stroke_width(1),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            format!("{t} GiB"),
            (x0 - 6, y),
            small.clone().pos(Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(err)?;
        t += step;
    }
    let n = m.stages.len().max(1) as f64;
    let slot = (x1 - x0) as f64 / n;
    let bar_w = (slot * 0.6).max(1.0);
    let label_every = (28.0 / slot).ceil().max(1.0) as usize;
    for (i, st) in m.stages.iter().enumerate() {
        let cx = x0 as f64 + slot * (i as f64 + 0.5);
        let (a, b) = (
            (cx - bar_w / 2.0).round() as i32,
            (cx + bar_w / 2.0).round() as i32,
        );
        let mut base = 0u64;
        for (key, _, bytes) in st.parts() {
            if bytes == 0 {
                continue;
            }
            let top = base.saturating_add(bytes);
            let (yb, yt) = (y_of(base as f64), y_of(top as f64));
            if yb > yt {
                root.draw(&Rectangle::new(
                    [(a, yt), (b.max(a + 1), yb)],
                    rgb(part_colour(key)).filled(),
                ))
                .map_err(err)?;
            }
            base = top;
        }
        if i % label_every == 0 {
            root.draw(&Text::new(
                st.stage.to_string(),
                (cx.round() as i32, y1 + 6),
                small.clone().pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(err)?;
        }
        if slot >= 64.0 {
            root.draw(&Text::new(
                format::bytes(st.peak_bytes),
                (cx.round() as i32, y_of(st.peak_bytes as f64) - 4),
                small.clone().pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))
            .map_err(err)?;
        }
    }
    root.draw(&PathElement::new(
        vec![(x0, y1), (x1, y1)],
        ink.stroke_width(1),
    ))
    .map_err(err)?;
    let cap_y = y_of(m.capacity_bytes as f64);
    root.draw(&PathElement::new(
        vec![(x0, cap_y), (x1, cap_y)],
        rgb(CAPACITY_COLOUR).stroke_width(2),
    ))
    .map_err(err)?;
    root.draw(&Text::new(
        "stage",
        (x1, h - 4),
        small.pos(Pos::new(HPos::Right, VPos::Bottom)),
    ))
    .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

#[derive(Properties, PartialEq)]
pub struct MemoryPanelProps {
    pub memory: MemoryView,
}

/// The memory chart, its table and the "does not fit" lines.
#[component]
pub fn MemoryPanel(props: &MemoryPanelProps) -> Html {
    let m = &props.memory;
    let canvas = use_node_ref();
    let failed = use_state(|| None::<String>);
    {
        let canvas = canvas.clone();
        let failed = failed.clone();
        use_effect_with(m.clone(), move |m| {
            let outcome = match canvas.cast::<HtmlCanvasElement>() {
                Some(c) => draw_memory(c, m),
                None => Err("the memory canvas is missing".to_string()),
            };
            let message = outcome.err();
            if *failed != message {
                failed.set(message);
            }
        });
    }
    let (w, h) = CHART_SIZE;
    let summary = m
        .stages
        .iter()
        .map(|s| format!("stage {} {}", s.stage, format::bytes(s.peak_bytes)))
        .collect::<Vec<_>>()
        .join(", ");
    let cell = |b: u64| html! { <td class="num">{ format::bytes(b) }</td> };
    html! {
        <div class="job-memory" data-testid="job-memory" data-fits={m.fits.to_string()}>
            <h3>{"Memory per stage"}</h3>
            if !m.messages.is_empty() {
                <ul class="diags">
                    { for m.messages.iter().map(|msg| html! {
                        <li class="diag warning" data-testid="job-memory-message">{ msg }</li>
                    }) }
                </ul>
            }
            if let Some(e) = &*failed {
                <p class="note chart-error" role="alert">
                    { format!("The memory chart could not be drawn ({e}); the table below holds the same numbers.") }
                </p>
            }
            <canvas ref={canvas} class="charts" data-testid="job-memory-chart"
                    hidden={failed.is_some()} width={w.to_string()} height={h.to_string()} role="img"
                    aria-label={format!("Memory per stage against the capacity {}: {summary}", format::bytes(m.capacity_bytes))} />
            <div class="table-wrap">
                <table data-testid="job-memory-table">
                    <caption>{ format!("Memory per stage (first rank), capacity {} ({})", format::bytes(m.capacity_bytes), m.gpu) }</caption>
                    <thead>
                        <tr>
                            <th class="num">{"stage"}</th>
                            <th class="num">{"weights"}</th>
                            <th class="num">{"gradients"}</th>
                            <th class="num">{"optimizer"}</th>
                            <th class="num">{"activations"}</th>
                            <th class="num">{"in flight"}</th>
                            <th class="num">{"logits"}</th>
                            <th class="num" title="ZeRO-3's unsharded units, cuBLAS workspace, CUDA graph buffers, NCCL buffers, CUDA context">{"buffers"}</th>
                            <th class="num">{"peak"}</th>
                            <th>{"fits"}</th>
                        </tr>
                    </thead>
                    <tbody>
                        { for m.stages.iter().map(|s| {
                            let fits = s.peak_bytes <= m.capacity_bytes;
                            html! {
                                <tr data-testid="job-memory-row" data-stage={s.stage.to_string()}
                                    data-peak-bytes={s.peak_bytes.to_string()}
                                    class={classes!((!fits).then_some("over"))}>
                                    <td class="num">{ s.stage }</td>
                                    { cell(s.weights_bytes) }
                                    { cell(s.gradients_bytes) }
                                    { cell(s.optimizer_bytes) }
                                    { cell(s.activations_bytes) }
                                    <td class="num">{ s.in_flight }</td>
                                    { cell(s.logits_bytes) }
                                    { cell(s.buffers_bytes) }
                                    { cell(s.peak_bytes) }
                                    <td>{ if fits { "yes" } else { "no" } }</td>
                                </tr>
                            }
                        }) }
                    </tbody>
                </table>
            </div>
        </div>
    }
}
