//! Plain display data ("view models") the worker sends to the page: what a
//! file card shows ([`FileView`]) and what the Read panel shows
//! ([`ResultView`]: headline figures, breakdown segments, bars, tables,
//! downloadable exports). The components render only these types, never a
//! parser's or simulator's, so the page's wasm does not link the simulators
//! and a new simulator output only needs a conversion into a `ResultView`
//! (written in [`crate::compute`], which runs in the worker).

use crate::format;
use serde::{Deserialize, Serialize};
use trainscope_core::Diagnostic;

/// One labelled value of a file card (`data-testid` = `testid`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldView {
    pub label: String,
    pub testid: String,
    pub value: String,
}

impl FieldView {
    pub fn new(label: &str, testid: &str, value: impl Into<String>) -> Self {
        FieldView {
            label: label.into(),
            testid: testid.into(),
            value: value.into(),
        }
    }
}

/// What the page shows about one input file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileView {
    pub name: String,
    /// Stable format name (`simai-workload`, ...) or `None` if unrecognised.
    pub format: Option<String>,
    pub fields: Vec<FieldView>,
    pub diagnostics: Vec<Diagnostic>,
}

impl FileView {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// A number with its unit, so formatting and differences are right.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "unit", content = "value", rename_all = "snake_case")]
pub enum Quantity {
    DurationNs(u64),
    Bytes(u64),
    Count(u64),
    /// A fraction in [0, 1] (utilisation), shown as a percentage.
    Fraction(f64),
    /// TFLOP/s (model FLOPs per GPU).
    Tflops(f64),
    /// Tokens per second (the whole job).
    TokensPerSecond(f64),
}

impl Quantity {
    pub fn text(&self) -> String {
        match *self {
            Quantity::DurationNs(ns) => format::duration_ns(ns),
            Quantity::Bytes(b) => format::bytes(b),
            Quantity::Count(n) => format::count(n),
            Quantity::Fraction(f) => format::percent(f),
            Quantity::Tflops(t) => format::tflops(t),
            Quantity::TokensPerSecond(t) => format::tokens_per_second(t),
        }
    }

    /// The value as f64 (for percentages and sorting).
    pub fn as_f64(&self) -> f64 {
        match *self {
            Quantity::DurationNs(v) | Quantity::Bytes(v) | Quantity::Count(v) => v as f64,
            Quantity::Fraction(f) | Quantity::Tflops(f) | Quantity::TokensPerSecond(f) => f,
        }
    }

    /// `other - self` as text, with the relative change in percent; `None`
    /// when the units differ.
    pub fn diff(&self, other: &Quantity) -> Option<(String, String)> {
        let abs = match (*self, *other) {
            (Quantity::DurationNs(a), Quantity::DurationNs(b)) => {
                format::signed_duration_ns(i128::from(b) - i128::from(a))
            }
            (Quantity::Bytes(a), Quantity::Bytes(b)) => {
                format::signed_bytes(i128::from(b) - i128::from(a))
            }
            (Quantity::Count(a), Quantity::Count(b)) => {
                let d = i128::from(b) - i128::from(a);
                let sign = if d > 0 {
                    "+"
                } else if d < 0 {
                    "−"
                } else {
                    ""
                };
                let mag = u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX);
                format!("{sign}{}", format::count(mag))
            }
            (Quantity::Fraction(a), Quantity::Fraction(b)) => {
                let pts = (b - a) * 100.0;
                if pts.abs() < 0.05 {
                    "0.0 pts".into()
                } else if pts > 0.0 {
                    format!("+{pts:.1} pts")
                } else {
                    format!("−{:.1} pts", -pts)
                }
            }
            (Quantity::Tflops(a), Quantity::Tflops(b)) => format::signed(b - a, format::tflops),
            (Quantity::TokensPerSecond(a), Quantity::TokensPerSecond(b)) => {
                format::signed(b - a, format::tokens_per_second)
            }
            _ => return None,
        };
        Some((abs, format::relative_change(self.as_f64(), other.as_f64())))
    }
}

/// One headline figure. `key` identifies it across results (Compare pairs
/// figures by key); `group` names the communication group for exposed-comm
/// figures (`TP`, `DP`, `EP`, `DP_EP`, `PP`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub key: String,
    pub label: String,
    pub value: Quantity,
}

impl Figure {
    pub fn new(key: &str, label: &str, value: Quantity) -> Self {
        Figure {
            key: key.into(),
            label: label.into(),
            value,
        }
    }
}

/// One segment of the stacked breakdown bar. `key` picks the colour (see
/// [`crate::palette::colour_for`]): `compute*`, `comm.<GROUP>`, `bubble`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub key: String,
    pub label: String,
    pub value_ns: u64,
}

/// One bar of a bar chart (per-stage utilisation): a fraction in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub label: String,
    pub fraction: f64,
}

/// A table cell: typed so that sorting is numeric for numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", content = "v", rename_all = "snake_case")]
pub enum Cell {
    Text(String),
    Int(i64),
    DurationNs(u64),
    /// A difference of durations (`+1.234 ms`, `−5 µs`).
    DeltaNs(i64),
    Bytes(u64),
    Float(f64),
}

impl Cell {
    pub fn text(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::DurationNs(ns) => format::duration_ns(*ns),
            Cell::DeltaNs(d) => format::signed_duration_ns(i128::from(*d)),
            Cell::Bytes(b) => format::bytes(*b),
            Cell::Float(f) => format!("{f:.3}"),
        }
    }

    /// Sort order: numbers by value (before text), text lexicographically.
    pub fn cmp_key(&self, other: &Cell) -> std::cmp::Ordering {
        fn num(c: &Cell) -> Option<f64> {
            match c {
                Cell::Text(_) => None,
                Cell::Int(i) | Cell::DeltaNs(i) => Some(*i as f64),
                Cell::DurationNs(v) | Cell::Bytes(v) => Some(*v as f64),
                Cell::Float(f) => Some(*f),
            }
        }
        match (num(self), num(other), self, other) {
            (Some(a), Some(b), _, _) => a.total_cmp(&b),
            (Some(_), None, _, _) => std::cmp::Ordering::Less,
            (None, Some(_), _, _) => std::cmp::Ordering::Greater,
            (None, None, Cell::Text(a), Cell::Text(b)) => a.cmp(b),
            _ => std::cmp::Ordering::Equal,
        }
    }

    pub fn is_numeric(&self) -> bool {
        !matches!(self, Cell::Text(_))
    }
}

/// A sortable table (the SimAI per-layer rows, a workload's records).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableView {
    pub title: String,
    pub columns: Vec<String>,
    /// The rows sent to the page (at most [`TableView::MAX_ROWS_SENT`]).
    pub rows: Vec<Vec<Cell>>,
    /// How many rows the full table has (the CSV export has them all).
    pub total_rows: u64,
}

impl TableView {
    /// Rows a result carries to the page: enough to read and sort, small
    /// enough that decoding the result never stalls the page.
    pub const MAX_ROWS_SENT: usize = 1000;

    /// Keep the first [`TableView::MAX_ROWS_SENT`] rows, remembering the total.
    pub fn truncated(mut self) -> Self {
        self.total_rows = self.total_rows.max(self.rows.len() as u64);
        self.rows.truncate(Self::MAX_ROWS_SENT);
        self
    }
}

/// A text file the user can download (Chrome trace, summary JSON, CSV). The
/// worker makes its content on request ([`crate::protocol::ExportRequest`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportFile {
    /// Button text.
    pub label: String,
    /// `data-testid` of the button (`export-chrome-trace`, ...).
    pub testid: String,
    pub file_name: String,
    pub mime: String,
}

/// Which simulator produced a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    /// The event-level engine (pipeline schedule simulated event by event).
    Event,
    /// The SimAI-compatible analytical mode.
    Simai,
}

impl ResultKind {
    /// The page's `data-kind` value.
    pub fn name(self) -> &'static str {
        match self {
            ResultKind::Event => "event",
            ResultKind::Simai => "simai",
        }
    }
}

/// Everything the Read panel shows for one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultView {
    pub kind: ResultKind,
    /// Panel heading, e.g. `Event-level simulation` or `SimAI-compatible mode`.
    pub title: String,
    /// One line saying what was computed from what.
    pub subtitle: String,
    /// The headline number (`data-testid="iteration-time"`).
    pub iteration_time_ns: Option<u64>,
    /// Headline figures (compute, bubble, exposed comm per group, ...).
    pub figures: Vec<Figure>,
    /// Measured counterparts of some figures (same keys), shown side by side.
    pub measured: Vec<Figure>,
    /// The measured input's format name (`echo-trace`, ...), for what
    /// "measured" covers ([`crate::glossary::measured_covers`]).
    #[serde(default)]
    pub measured_format: Option<String>,
    /// Stacked breakdown bar.
    pub breakdown_title: String,
    pub breakdown: Vec<Segment>,
    /// Bar chart (per-stage utilisation).
    pub bars_title: String,
    pub bars: Vec<Bar>,
    pub tables: Vec<TableView>,
    pub exports: Vec<ExportFile>,
    /// Warnings and errors of the simulation itself.
    pub diagnostics: Vec<Diagnostic>,
    /// What only a model-level job has (throughput, memory per stage).
    #[serde(default)]
    pub model: Option<ModelView>,
    /// Activation memory over time per stage (event mode; empty otherwise).
    #[serde(default)]
    pub activations: Vec<ActivationView>,
    /// Injected faults or `--blame`: the core's what-if report.
    #[serde(default)]
    pub whatif: Option<trainscope_core::whatif::WhatIfReport>,
}

/// One stage's activation memory over the iteration (the core's
/// `ActivationSeries`): a step function of chunk activations held, starting
/// at 0; `bytes_per_chunk` is known for a model-level job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivationView {
    pub stage: u32,
    /// Model chunks per rank: a micro-batch's activations are this many
    /// chunk activations.
    pub chunks_per_micro_batch: u32,
    /// `(time_ns, chunks held from then on)`, in time order.
    pub points: Vec<(u64, u32)>,
    pub peak_chunks: u32,
    /// Bytes of one chunk activation (the memory model's), when known.
    pub bytes_per_chunk: Option<u64>,
}

impl ActivationView {
    /// `chunks` chunk activations in micro-batches.
    pub fn micro_batches(&self, chunks: u32) -> f64 {
        f64::from(chunks) / f64::from(self.chunks_per_micro_batch.max(1))
    }

    /// `chunks` chunk activations in bytes, when the size is known.
    pub fn bytes(&self, chunks: u32) -> Option<u64> {
        self.bytes_per_chunk
            .map(|b| b.saturating_mul(u64::from(chunks)))
    }

    /// `chunks` as the chart labels it: bytes when known, else
    /// micro-batches in flight.
    pub fn label(&self, chunks: u32) -> String {
        match self.bytes(chunks) {
            Some(b) => format::bytes(b),
            None => format!("{} micro-batches", trim_float(self.micro_batches(chunks))),
        }
    }
}

/// `2`, `1.5`: a count without trailing zeros.
pub fn trim_float(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The Compare-schedules table: the same input run under every schedule
/// (a row each) and the schedules that could not run (with the core's
/// refusal message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleComparison {
    /// What was run (the file or the model).
    pub input: String,
    pub rows: Vec<ScheduleRow>,
    pub refused: Vec<ScheduleRefusal>,
}

/// One schedule's result on the compared input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRow {
    pub schedule: crate::settings::Schedule,
    /// Virtual stages it ran with (> 1 only for interleaved).
    pub virtual_stages: u32,
    pub iteration_time_ns: u64,
    pub bubble_ns: u64,
    /// Peak activation memory per stage in micro-batches.
    pub peak_micro_batches: Vec<f64>,
    /// The same in bytes (model-level jobs).
    pub peak_bytes: Option<Vec<u64>>,
    /// Model-level jobs: each stage's whole memory at its peak under this
    /// schedule (the core's memory model: weights, gradients, optimizer
    /// states, activations, buffers, NCCL and the CUDA context; the CLI's
    /// `memory.per_stage[].peak_bytes`), and the GPU's capacity it must fit.
    pub memory_bytes: Option<Vec<u64>>,
    pub capacity_bytes: Option<u64>,
    /// 1F1B's iteration time / this one's (`None` when 1F1B did not run).
    pub speedup_over_1f1b: Option<f64>,
}

impl ScheduleRow {
    /// Whether every stage fits the GPU (`None`: no memory model, a file).
    pub fn fits(&self) -> Option<bool> {
        let (m, cap) = (self.memory_bytes.as_ref()?, self.capacity_bytes?);
        Some(m.iter().all(|b| *b <= cap))
    }
}

/// A schedule that was not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRefusal {
    pub schedule: crate::settings::Schedule,
    pub message: String,
}

/// The figures of a model-level job (`trainscope simulate --model`): MFU,
/// model TFLOP/s per GPU, tokens/s and the memory per stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelView {
    /// Preset name or the config's model name.
    pub name: String,
    /// One line: parameters, family, where the numbers come from.
    pub description: String,
    /// Model FLOPs / (time x world x the GPU's dense peak), in [0, 1].
    pub mfu: f64,
    pub model_tflops_per_gpu: f64,
    /// Global batch x sequence length / iteration time.
    pub tokens_per_second: f64,
    pub memory: MemoryView,
    /// What the "Plan the run" panel plans from (the core's facts of the
    /// job: iteration time, GPUs, tokens per iteration, checkpoint size).
    #[serde(default)]
    pub plan: Option<trainscope_core::goodput::job_facts::PlanJob>,
}

/// Memory per pipeline stage (its first rank) against the GPU's capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryView {
    /// The GPU preset (`H100-SXM`).
    pub gpu: String,
    pub capacity_bytes: u64,
    /// Every stage's peak fits.
    pub fits: bool,
    pub stages: Vec<StageMemoryView>,
    /// The core's "does not fit on stage k: needs X GiB of Y GiB" lines.
    pub messages: Vec<String>,
}

/// One stage's memory, bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageMemoryView {
    pub stage: u32,
    pub weights_bytes: u64,
    pub gradients_bytes: u64,
    pub optimizer_bytes: u64,
    pub activations_bytes: u64,
    /// Micro-batches (chunks when interleaved) whose activations are held
    /// at the peak.
    pub in_flight: u32,
    pub logits_bytes: u64,
    /// Framework buffers: ZeRO-3's unsharded units, the cuBLAS workspace,
    /// CUDA graph buffers, NCCL's buffers and the CUDA context.
    #[serde(default)]
    pub buffers_bytes: u64,
    pub peak_bytes: u64,
}

/// The parts of a stage's memory in stacking order: (key, label).
pub const MEMORY_PARTS: [(&str, &str); 6] = [
    ("weights", "Weights"),
    ("gradients", "Gradients"),
    ("optimizer", "Optimizer"),
    ("activations", "Activations"),
    ("logits", "Logits"),
    ("buffers", "Buffers"),
];

impl StageMemoryView {
    /// The stacked parts in [`MEMORY_PARTS`] order: (key, label, bytes).
    pub fn parts(&self) -> [(&'static str, &'static str, u64); 6] {
        let bytes = [
            self.weights_bytes,
            self.gradients_bytes,
            self.optimizer_bytes,
            self.activations_bytes,
            self.logits_bytes,
            self.buffers_bytes,
        ];
        let mut out = [("", "", 0); 6];
        for (o, ((key, label), b)) in out.iter_mut().zip(MEMORY_PARTS.into_iter().zip(bytes)) {
            *o = (key, label, b);
        }
        out
    }
}

impl ResultView {
    /// An empty result with a title, to fill field by field.
    pub fn new(kind: ResultKind, title: &str, subtitle: &str) -> Self {
        ResultView {
            kind,
            title: title.into(),
            subtitle: subtitle.into(),
            iteration_time_ns: None,
            figures: Vec::new(),
            measured: Vec::new(),
            measured_format: None,
            breakdown_title: String::new(),
            breakdown: Vec::new(),
            bars_title: String::new(),
            bars: Vec::new(),
            tables: Vec::new(),
            exports: Vec::new(),
            diagnostics: Vec::new(),
            model: None,
            activations: Vec::new(),
            whatif: None,
        }
    }

    /// Figures with the iteration time first and, for a model-level job, its
    /// throughput and peak memory last (as Compare lists them).
    pub fn all_figures(&self) -> Vec<Figure> {
        let mut out = Vec::with_capacity(self.figures.len() + 1);
        if let Some(ns) = self.iteration_time_ns {
            out.push(Figure::new(
                "iteration_time",
                "Iteration time",
                Quantity::DurationNs(ns),
            ));
        }
        out.extend(self.figures.iter().cloned());
        if let Some(m) = &self.model {
            out.push(Figure::new("mfu", "MFU", Quantity::Fraction(m.mfu)));
            out.push(Figure::new(
                "model_tflops_per_gpu",
                "Model TFLOP/s per GPU",
                Quantity::Tflops(m.model_tflops_per_gpu),
            ));
            out.push(Figure::new(
                "tokens_per_second",
                "Tokens per second",
                Quantity::TokensPerSecond(m.tokens_per_second),
            ));
            let peak = m.memory.stages.iter().map(|s| s.peak_bytes).max();
            out.push(Figure::new(
                "memory_peak",
                "Peak memory (largest stage)",
                Quantity::Bytes(peak.unwrap_or(0)),
            ));
        }
        out
    }
}

/// One row of a two-result comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    pub key: String,
    pub label: String,
    pub a: Option<Quantity>,
    pub b: Option<Quantity>,
    /// Absolute and relative difference (b − a), when both exist.
    pub delta: Option<(String, String)>,
    /// Whether the difference is good news (issue 29: colours mean better
    /// or worse per figure, not the sign of the change).
    pub verdict: Verdict,
}

/// What a difference between two figures means to the user, drawn as its
/// colour (`td.delta.better` / `.worse` / `.fair`); the sign stays in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// B is better than A (time or memory down; MFU, throughput up), or a
    /// simulated figure within [`ERROR_CLOSE`] of its measurement.
    Better,
    /// B is worse than A, or a simulated figure more than [`ERROR_FAIR`]
    /// off its measurement.
    Worse,
    /// A simulated figure between [`ERROR_CLOSE`] and [`ERROR_FAIR`] off.
    Fair,
    /// No difference, or one with no better direction (a count), or no pair.
    Neutral,
}

impl Verdict {
    /// The CSS class of the difference's cells.
    pub fn class(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Fair => "fair",
            Verdict::Neutral => "same",
        }
    }
}

/// Relative error of a simulated figure against its measurement below which
/// it is drawn as close (green).
pub const ERROR_CLOSE: f64 = 0.10;
/// Relative error above which it is drawn as far off (red); between the
/// two, amber.
pub const ERROR_FAIR: f64 = 0.25;

/// Whether a larger value of the figure `key` of this kind is better: time
/// and memory down is good, MFU, TFLOP/s and throughput up is good; a
/// fraction is a utilisation (up good) unless it names a loss (bubble,
/// idle, stall, exposed); `None` for counts, which have no better direction.
pub fn higher_is_better(key: &str, value: &Quantity) -> Option<bool> {
    match value {
        Quantity::DurationNs(_) | Quantity::Bytes(_) => Some(false),
        Quantity::Tflops(_) | Quantity::TokensPerSecond(_) => Some(true),
        Quantity::Fraction(_) => {
            let loss = ["bubble", "idle", "stall", "exposed", "overhead"]
                .iter()
                .any(|w| key.contains(w));
            Some(!loss)
        }
        Quantity::Count(_) => None,
    }
}

/// The verdict of B against A as a change (Compare A vs B).
fn change_verdict(key: &str, a: &Quantity, b: &Quantity) -> Verdict {
    let (x, y) = (a.as_f64(), b.as_f64());
    let scale = x.abs().max(y.abs());
    if scale == 0.0 || ((y - x) / scale).abs() < 0.0005 {
        return Verdict::Neutral;
    }
    match higher_is_better(key, a) {
        Some(up) if (y > x) == up => Verdict::Better,
        Some(_) => Verdict::Worse,
        None => Verdict::Neutral,
    }
}

/// The verdict of a simulated figure `b` against its measurement `a`: by
/// the size of the error, whatever its sign.
fn error_verdict(a: &Quantity, b: &Quantity) -> Verdict {
    let (x, y) = (a.as_f64(), b.as_f64());
    if x == 0.0 {
        return Verdict::Neutral;
    }
    let err = ((y - x) / x).abs();
    if err <= ERROR_CLOSE {
        Verdict::Better
    } else if err <= ERROR_FAIR {
        Verdict::Fair
    } else {
        Verdict::Worse
    }
}

/// Pair two figure lists by key (A's order, then B-only figures); each
/// difference judged as a change from A to B ([`higher_is_better`]).
pub fn diff_figures(a: &[Figure], b: &[Figure]) -> Vec<DiffRow> {
    pair_figures(a, b, change_verdict)
}

/// Pair measured figures with simulated ones (as [`diff_figures`]); each
/// difference judged as an error by its size ([`ERROR_CLOSE`],
/// [`ERROR_FAIR`]), not its sign.
pub fn error_figures(measured: &[Figure], simulated: &[Figure]) -> Vec<DiffRow> {
    pair_figures(measured, simulated, |_, a, b| error_verdict(a, b))
}

fn pair_figures(
    a: &[Figure],
    b: &[Figure],
    judge: impl Fn(&str, &Quantity, &Quantity) -> Verdict,
) -> Vec<DiffRow> {
    let mut rows: Vec<DiffRow> = a
        .iter()
        .map(|fa| {
            let fb = b.iter().find(|f| f.key == fa.key);
            DiffRow {
                key: fa.key.clone(),
                label: fa.label.clone(),
                a: Some(fa.value),
                b: fb.map(|f| f.value),
                delta: fb.and_then(|f| fa.value.diff(&f.value)),
                verdict: fb
                    .filter(|f| fa.value.diff(&f.value).is_some())
                    .map_or(Verdict::Neutral, |f| judge(&fa.key, &fa.value, &f.value)),
            }
        })
        .collect();
    for fb in b {
        if !a.iter().any(|f| f.key == fb.key) {
            rows.push(DiffRow {
                key: fb.key.clone(),
                label: fb.label.clone(),
                a: None,
                b: Some(fb.value),
                delta: None,
                verdict: Verdict::Neutral,
            });
        }
    }
    rows
}
