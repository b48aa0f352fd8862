//! Activation memory over time, one small step chart per pipeline stage
//! (`data-testid="activation-memory-chart"`, one `<svg>` per stage with
//! `data-stage` and `data-peak`): the core's activation series
//! ([`ActivationView`]: stored at each forward, freed at the step that last
//! needs it), on the iteration's time axis, every stage on the same scale.
//! A model-level job's levels are bytes (chunks held x the memory model's
//! bytes per chunk); otherwise micro-batches in flight. SVG, not the
//! timeline's canvas: the timeline's lanes hold spans, not levels.

use crate::format;
use crate::views::{trim_float, ActivationView};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ActivationChartProps {
    pub activations: Vec<ActivationView>,
    /// The iteration's end (the charts' right edge), ns.
    pub end_ns: u64,
}

/// Plot width and one stage's height, in SVG units.
const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 44.0;

/// The SVG path of a step function `points` (time, level) from 0 to
/// `end_ns`, levels scaled so `top` is the full height.
pub fn step_path(points: &[(u64, u32)], end_ns: u64, top: u32) -> String {
    let end = end_ns.max(1) as f64;
    let x = |t: u64| (t.min(end_ns) as f64 / end * WIDTH).clamp(0.0, WIDTH);
    let y = |level: u32| HEIGHT - f64::from(level) / f64::from(top.max(1)) * (HEIGHT - 2.0);
    let mut d = format!("M0,{:.1}", y(0));
    for &(t, level) in points {
        d.push_str(&format!(" H{:.2} V{:.1}", x(t), y(level)));
    }
    d.push_str(&format!(" H{WIDTH:.0} V{HEIGHT:.0} H0 Z"));
    d
}

#[component]
pub fn ActivationChart(props: &ActivationChartProps) -> Html {
    let acts = &props.activations;
    let top = acts.iter().map(|a| a.peak_chunks).max().unwrap_or(0);
    let in_bytes = acts.iter().all(|a| a.bytes_per_chunk.is_some());
    let unit = if in_bytes {
        "bytes of activations held"
    } else {
        "micro-batches whose activations are held"
    };
    html! {
        <section class="activation-memory" aria-label="Activation memory over time"
                 data-testid="activation-memory-chart" data-unit={if in_bytes { "bytes" } else { "micro-batches" }}>
            <h3>{"Activation memory over time"}</h3>
            <p class="note">{ format!(
                "Per stage, the {unit}: stored at each forward, freed when the backward (or the delayed weight-gradient pass) that needs it ends; every stage on the same scale, over the iteration ({}).",
                format::duration_ns(props.end_ns)
            ) }</p>
            { for acts.iter().map(|a| {
                let peak_label = a.label(a.peak_chunks);
                let peak_value = match a.bytes(a.peak_chunks) {
                    Some(b) => b.to_string(),
                    None => trim_float(a.micro_batches(a.peak_chunks)),
                };
                html! {
                    <div class="activation-row">
                        <span class="activation-stage">{ format!("stage {}", a.stage) }</span>
                        <svg class="activation-svg" viewBox={format!("0 0 {WIDTH} {HEIGHT}")}
                             preserveAspectRatio="none" role="img"
                             data-stage={a.stage.to_string()} data-peak={peak_value}
                             aria-label={format!("stage {}: peak {peak_label}", a.stage)}>
                            <line x1="0" x2={WIDTH.to_string()} y1={HEIGHT.to_string()} y2={HEIGHT.to_string()} class="axis" />
                            <path d={step_path(&a.points, props.end_ns, top)} class="level" />
                        </svg>
                        <span class="activation-peak">{ format!("peak {peak_label}") }</span>
                    </div>
                }
            }) }
        </section>
    }
}
