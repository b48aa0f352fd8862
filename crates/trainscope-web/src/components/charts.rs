//! The charts canvas, drawn with plotters-canvas: a stacked breakdown bar
//! (compute / exposed communication by group / bubble, or whatever segments
//! the result has) with its legend, and a horizontal bar chart of fractions
//! (per-stage utilisation). One canvas holds both, so "Download PNG" saves
//! every chart. The parent owns the `NodeRef` (for the PNG export).
//! Colours come from [`crate::palette`] (Okabe-Ito). When drawing fails,
//! a message (`data-testid="chart-error"`) replaces the blank canvas.

use crate::format;
use crate::palette::{colour_for, OKABE_ITO};
use crate::views::{Bar, Segment};
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use web_sys::HtmlCanvasElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ChartsProps {
    pub canvas: NodeRef,
    pub breakdown_title: AttrValue,
    pub breakdown: Vec<Segment>,
    pub bars_title: AttrValue,
    pub bars: Vec<Bar>,
    /// Told why a drawing failed (`None` once a drawing succeeds), so the
    /// PNG download can say it has nothing to save.
    #[prop_or_default]
    pub on_outcome: Callback<Option<String>>,
}

/// Canvas size in pixels for the given content.
pub fn canvas_size(segments: usize, bars: usize) -> (u32, u32) {
    let legend_rows = segments.div_ceil(3) as u32;
    let mut h = 0;
    if segments > 0 {
        h += 36 + 40 + 22 * legend_rows + 16;
    }
    if bars > 0 {
        h += 36 + 24 * bars as u32 + 12;
    }
    (960, h.max(40))
}

fn rgb(c: (u8, u8, u8)) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Draw both charts on `canvas` (already sized by [`canvas_size`]).
pub fn draw(
    canvas: HtmlCanvasElement,
    breakdown_title: &str,
    breakdown: &[Segment],
    bars_title: &str,
    bars: &[Bar],
) -> Result<(), String> {
    let backend = CanvasBackend::with_canvas_object(canvas).ok_or("no 2D canvas context")?;
    let root = backend.into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("{e:?}");
    root.fill(&WHITE).map_err(err)?;
    let (w, _) = root.dim_in_pixel();
    let w = w as i32;
    let ink = RGBColor(27, 31, 36);
    let muted = RGBColor(91, 100, 112);
    let title = ("sans-serif", 16)
        .into_font()
        .style(FontStyle::Bold)
        .color(&ink);
    let label = ("sans-serif", 13).into_font().color(&ink);
    let small = ("sans-serif", 12).into_font().color(&muted);
    let left = 12;
    let mut y = 8;
    if !breakdown.is_empty() {
        let total: u64 = breakdown.iter().map(|s| s.value_ns).sum();
        root.draw(&Text::new(
            format!("{breakdown_title} — total {}", format::duration_ns(total)),
            (left, y),
            title.clone(),
        ))
        .map_err(err)?;
        y += 28;
        let (x0, x1) = (left, w - left);
        let bar_h = 32;
        let mut x = x0 as f64;
        let span = (x1 - x0) as f64;
        for (i, s) in breakdown.iter().enumerate() {
            if total == 0 {
                break;
            }
            let wpx = span * s.value_ns as f64 / total as f64;
            let (a, b) = (x.round() as i32, (x + wpx).round() as i32);
            if b > a {
                root.draw(&Rectangle::new(
                    [(a, y), (b, y + bar_h)],
                    rgb(colour_for(&s.key, i)).filled(),
                ))
                .map_err(err)?;
            }
            x += wpx;
        }
        root.draw(&Rectangle::new(
            [(x0, y), (x1, y + bar_h)],
            ink.stroke_width(1),
        ))
        .map_err(err)?;
        y += bar_h + 10;
        let col_w = (x1 - x0) / 3;
        for (i, s) in breakdown.iter().enumerate() {
            let (cx, cy) = (x0 + (i as i32 % 3) * col_w, y + (i as i32 / 3) * 22);
            root.draw(&Rectangle::new(
                [(cx, cy + 1), (cx + 14, cy + 15)],
                rgb(colour_for(&s.key, i)).filled(),
            ))
            .map_err(err)?;
            let share = if total > 0 {
                s.value_ns as f64 / total as f64
            } else {
                0.0
            };
            root.draw(&Text::new(
                format!(
                    "{}  {}  ({})",
                    s.label,
                    format::duration_ns(s.value_ns),
                    format::percent(share)
                ),
                (cx + 20, cy + 1),
                label.clone(),
            ))
            .map_err(err)?;
        }
        y += 22 * breakdown.len().div_ceil(3) as i32 + 16;
    }
    if !bars.is_empty() {
        root.draw(&Text::new(bars_title.to_string(), (left, y), title.clone()))
            .map_err(err)?;
        y += 28;
        let label_w = 230;
        let (x0, x1) = (left + label_w, w - 80);
        for b in bars {
            let f = if b.fraction.is_finite() {
                b.fraction.clamp(0.0, 1.0)
            } else {
                0.0
            };
            let name: String = b.label.chars().take(32).collect();
            root.draw(&Text::new(name, (left, y + 3), label.clone()))
                .map_err(err)?;
            root.draw(&Rectangle::new(
                [(x0, y), (x1, y + 18)],
                RGBColor(238, 240, 243).filled(),
            ))
            .map_err(err)?;
            let end = x0 + ((x1 - x0) as f64 * f).round() as i32;
            if end > x0 {
                root.draw(&Rectangle::new(
                    [(x0, y), (end, y + 18)],
                    rgb(OKABE_ITO[5]).filled(),
                ))
                .map_err(err)?;
            }
            root.draw(&Text::new(
                format::percent(f),
                (x1 + 8, y + 3),
                small.clone(),
            ))
            .map_err(err)?;
            y += 24;
        }
    }
    root.present().map_err(err)?;
    Ok(())
}

#[component]
pub fn Charts(props: &ChartsProps) -> Html {
    let (w, h) = canvas_size(props.breakdown.len(), props.bars.len());
    // Why the last drawing failed (shown in place of the blank canvas).
    let failed = use_state(|| None::<String>);
    {
        let canvas = props.canvas.clone();
        let failed = failed.clone();
        let on_outcome = props.on_outcome.clone();
        let deps = (
            props.breakdown_title.clone(),
            props.breakdown.clone(),
            props.bars_title.clone(),
            props.bars.clone(),
        );
        use_effect_with(deps, move |(bt, segs, t, bars)| {
            let outcome = match canvas.cast::<HtmlCanvasElement>() {
                Some(c) => draw(c, bt, segs, t, bars),
                None => Err("the chart canvas is missing".to_string()),
            };
            let message = outcome.err();
            if *failed != message {
                on_outcome.emit(message.clone());
                failed.set(message);
            }
        });
    }
    let summary = props
        .breakdown
        .iter()
        .map(|s| format!("{} {}", s.label, format::duration_ns(s.value_ns)))
        .collect::<Vec<_>>()
        .join(", ");
    html! {
        <>
            if let Some(e) = &*failed {
                <p class="note chart-error" data-testid="chart-error" role="alert">
                    { format!("The charts could not be drawn ({e}); the figures above and the tables below hold the same numbers.") }
                </p>
            }
            <canvas ref={props.canvas.clone()} class="charts" data-testid="charts"
                    hidden={failed.is_some()}
                    width={w.to_string()} height={h.to_string()} role="img"
                    aria-label={format!("{}: {summary}", props.breakdown_title)} />
        </>
    }
}
