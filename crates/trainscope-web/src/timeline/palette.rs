//! Colours of the timeline, colour-blind safe: span kinds take the
//! Okabe-Ito palette (blue, orange, yellow, bluish green, reddish purple,
//! vermillion, sky blue) plus a few neutral or darker companions for the
//! rarer kinds; each colour comes with a legible text colour for labels
//! drawn on it, and the legend's display names.

use trainscope_core::timeline::SpanKind;

/// Fill colour of a span kind (CSS hex).
pub fn kind_color(kind: SpanKind) -> &'static str {
    match kind {
        SpanKind::Forward => "#0072B2",    // Okabe-Ito blue
        SpanKind::InputGrad => "#E69F00",  // orange
        SpanKind::WeightGrad => "#F0E442", // yellow
        SpanKind::Compute => "#8C8C8C",    // grey
        SpanKind::CollTp => "#009E73",     // bluish green
        SpanKind::CollEp => "#CC79A7",     // reddish purple
        SpanKind::CollDp => "#D55E00",     // vermillion
        SpanKind::CollDpEp => "#7A3A00",   // dark vermillion
        SpanKind::CollOther => "#4D4D4D",  // dark grey
        SpanKind::Send => "#56B4E9",       // sky blue
        SpanKind::Recv => "#2A6F97",       // dark sky blue
        SpanKind::Wait => "#C8C8C8",       // light grey
        SpanKind::CollCp => "#005C45",     // dark bluish green
        SpanKind::HostLaunch => "#A6BDD7", // pale steel blue
        SpanKind::HostSync => "#5E3C99",   // dark purple
    }
}

/// Fill of a counter lane's step area (activation memory): Okabe-Ito
/// reddish purple, translucent so the grid shows through.
pub const COUNTER_FILL: &str = "rgba(204,121,167,0.45)";
/// Outline of a counter lane's step area.
pub const COUNTER_LINE: &str = "#8E3B6B";
/// A counter lane's peak marker: near-black, legible on the lane's light
/// purple fill and on the white ground, and no span kind's colour.
pub const COUNTER_PEAK: &str = "#1F1F1F";

/// Text colour legible on [`kind_color`] (black on light fills, white on
/// dark ones; WCAG relative luminance above 0.4 counts as light).
pub fn text_on(kind: SpanKind) -> &'static str {
    if luminance(kind_color(kind)) > 0.4 {
        "#000000"
    } else {
        "#FFFFFF"
    }
}

/// WCAG relative luminance of a `#RRGGBB` colour (0 black .. 1 white).
pub fn luminance(hex: &str) -> f64 {
    let h = hex.trim_start_matches('#');
    let ch = |i: usize| {
        let v = h
            .get(i..i + 2)
            .and_then(|s| u8::from_str_radix(s, 16).ok())
            .unwrap_or(0) as f64
            / 255.0;
        if v <= 0.03928 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * ch(0) + 0.7152 * ch(2) + 0.0722 * ch(4)
}

/// Legend name of a span kind.
pub fn kind_label(kind: SpanKind) -> &'static str {
    match kind {
        SpanKind::Forward => "forward",
        SpanKind::InputGrad => "input gradient",
        SpanKind::WeightGrad => "weight gradient",
        SpanKind::Compute => "other compute",
        SpanKind::CollTp => "TP collective",
        SpanKind::CollEp => "EP collective",
        SpanKind::CollDp => "DP collective",
        SpanKind::CollDpEp => "DP-EP collective",
        SpanKind::CollOther => "other collective",
        SpanKind::Send => "pipeline send",
        SpanKind::Recv => "pipeline receive",
        SpanKind::Wait => "wait",
        SpanKind::CollCp => "CP collective",
        SpanKind::HostLaunch => "host launch",
        SpanKind::HostSync => "host sync (waits for the GPU)",
    }
}

/// Background of the plot.
pub const BACKGROUND: &str = "#FFFFFF";
/// Alternate band behind every other lane group.
pub const BAND: &str = "#F3F5F8";
/// Grid lines, separators.
pub const GRID: &str = "#E1E5EA";
/// Main text.
pub const INK: &str = "#1B1F24";
/// Secondary text.
pub const MUTED: &str = "#5B6470";
/// Selection and dependency outlines, flow arrows.
pub const SELECT: &str = "#000000";
/// Critical-path outline.
pub const CRITICAL: &str = "#CC0044";
