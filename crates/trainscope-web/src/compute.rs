//! What the worker computes for a run ([`run`]): parse every file with
//! `trainscope_core`, collect the settings the files state
//! ([`SettingsHints`]), apply them to the unpinned settings, and turn the
//! core's values into display data ([`crate::views`]). Pure and
//! synchronous, so the browser tests call it directly; in the app it only
//! ever runs inside the Web Worker (`src/bin/worker.rs`).
//!
//! **Where simulation plugs in**: [`simulate`] receives the parsed inputs
//! and the effective settings and returns the Read panel's
//! [`ResultView`]. Today it returns the workload as declared (sums of what a
//! SimAI workload states, no simulation); the SimAI-compatible and
//! event-level simulators add a `match settings.mode` there, each with a
//! `fn …_view(report) -> ResultView` conversion next to [`declared_view`].

use crate::protocol::{Progress, RunOutput, RunRequest};
use crate::settings::{Settings, SettingsHints};
use crate::views::{
    Bar, Cell, ExportFile, FieldView, Figure, FileView, Quantity, ResultKind, ResultView, Segment,
    TableView,
};
use std::collections::BTreeMap;
use trainscope_core::formats::simai::{self, CommGroup, CommType, SimaiComm, SimaiWorkload};
use trainscope_core::formats::{decode_text, Format};
use trainscope_core::inspect::{inspect, FileSummary};
use trainscope_core::Diagnostic;

/// Everything parsed from a run's files that simulation needs.
#[derive(Debug, Default)]
pub struct Parsed {
    /// SimAI workloads, with their file names, in input order.
    pub simai: Vec<(String, SimaiWorkload)>,
}

/// Run one request: parse, pre-fill settings, summarise (and later
/// simulate). `progress` is called before each step.
pub fn run(req: &RunRequest, progress: &mut dyn FnMut(Progress)) -> RunOutput {
    let total = req.files.len() as u32 + 1;
    let mut step = |done: u32, label: String| {
        progress(Progress {
            id: req.id,
            done,
            total,
            label,
        })
    };
    let mut files = Vec::with_capacity(req.files.len());
    let mut hints = SettingsHints::default();
    let mut diagnostics = Vec::new();
    let mut parsed = Parsed::default();
    for (i, f) in req.files.iter().enumerate() {
        step(i as u32, format!("Parsing {}", f.name));
        let summary = inspect(&f.name, &f.bytes, None);
        let file_hints = hints_from_summary(&summary);
        for field in hints.merge(&file_hints) {
            diagnostics.push(Diagnostic::warning(format!(
                "`{}` states {} = {} but an earlier file states {}; the first value is used",
                f.name,
                field.label(),
                file_hints.get(field).unwrap_or_default(),
                hints.get(field).unwrap_or_default(),
            )));
        }
        let workload = if summary.format == Some(Format::SimaiWorkload) {
            decode_text(&f.name, &f.bytes)
                .ok()
                .and_then(|(text, _)| simai::parse(&f.name, &text).ok())
        } else {
            None
        };
        files.push(file_view(&summary, workload.as_ref()));
        if let Some(w) = workload {
            parsed.simai.push((f.name.clone(), w));
        }
    }
    let settings = req.settings.with_hints(&hints, &req.pinned);
    step(total - 1, "Summarising".into());
    let result = simulate(&parsed, &settings, &mut diagnostics);
    RunOutput {
        settings,
        hints,
        files,
        result,
        diagnostics,
    }
}

/// The Read panel's content for the parsed inputs and effective settings.
/// The seam for the simulators (see the module docs).
pub fn simulate(
    parsed: &Parsed,
    _settings: &Settings,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ResultView> {
    let (name, workload) = parsed.simai.first()?;
    if parsed.simai.len() > 1 {
        diagnostics.push(Diagnostic::warning(format!(
            "{} SimAI workloads are loaded; the results show the first, `{name}`",
            parsed.simai.len()
        )));
    }
    Some(declared_view(name, workload))
}

/// Settings a file's header states.
pub fn hints_from_summary(s: &FileSummary) -> SettingsHints {
    let mut h = SettingsHints::default();
    if let Some(x) = &s.simai {
        h.world_size = x.world;
        h.tp = Some(x.tp);
        h.pp = Some(x.pp);
        h.ep = Some(x.ep);
        h.micro_batches = Some(x.ga);
        h.virtual_stages = Some(x.vpp);
        let mut src = vec![
            format!("TP = {} from model_parallel_NPU_group", x.tp),
            format!("PP = {} from pp", x.pp),
            format!("EP = {} from ep", x.ep),
            format!("micro-batches = {} from ga", x.ga),
            format!("virtual stages = {} from vpp", x.vpp),
        ];
        if let Some(w) = x.world {
            src.insert(0, format!("world = {w} from all_gpus"));
        }
        h.sources = src
            .into_iter()
            .map(|m| format!("{}: {m}", s.file))
            .collect();
    }
    h
}

/// AICB writes compute `1` for "not measured": counted as 0 in sums.
fn measured_ns(v: u64) -> u64 {
    if v == 1 {
        0
    } else {
        v
    }
}

/// Sums of what a SimAI workload declares.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DeclaredTotals {
    pub fwd_ns: u64,
    pub ig_ns: u64,
    pub wg_ns: u64,
    /// Collective bytes by group name (`TP`, `DP`, `EP`, `DP_EP`, `ungrouped`).
    pub comm_bytes: BTreeMap<&'static str, u64>,
    pub collectives: u64,
    /// Compute by layer name (fwd + ig + wg), for the share chart.
    pub by_layer: BTreeMap<String, u64>,
}

impl DeclaredTotals {
    pub fn compute_ns(&self) -> u64 {
        self.fwd_ns
            .saturating_add(self.ig_ns)
            .saturating_add(self.wg_ns)
    }
}

fn group_name(g: CommGroup) -> &'static str {
    match g {
        CommGroup::Tp => "TP",
        CommGroup::Dp => "DP",
        CommGroup::Ep => "EP",
        CommGroup::DpEp => "DP_EP",
        CommGroup::Unscoped => "ungrouped",
    }
}

fn comm_text(c: &SimaiComm) -> String {
    match c.comm_type {
        CommType::None => "—".into(),
        CommType::Broadcast => "BROADCAST (no-op)".into(),
        CommType::SendRecv => "SENDRECV (no-op)".into(),
        CommType::Unknown => "unknown (no-op)".into(),
        CommType::Collective(coll, group) => format!("{coll:?} {}", group_name(group)),
    }
}

/// Add up a workload's compute times and collective sizes.
pub fn declared_totals(w: &SimaiWorkload) -> DeclaredTotals {
    let mut t = DeclaredTotals::default();
    for r in &w.records {
        let (f, i, g) = (
            measured_ns(r.fwd_compute_ns),
            measured_ns(r.ig_compute_ns),
            measured_ns(r.wg_compute_ns),
        );
        t.fwd_ns = t.fwd_ns.saturating_add(f);
        t.ig_ns = t.ig_ns.saturating_add(i);
        t.wg_ns = t.wg_ns.saturating_add(g);
        let layer = t.by_layer.entry(r.name.clone()).or_default();
        *layer = layer.saturating_add(f).saturating_add(i).saturating_add(g);
        for c in [&r.fwd_comm, &r.ig_comm, &r.wg_comm] {
            // Size 0 or 1 with a type set means "no data".
            if let (Some((_, group)), true) = (c.collective(), c.size_bytes > 1) {
                let e = t.comm_bytes.entry(group_name(group)).or_default();
                *e = e.saturating_add(c.size_bytes);
                t.collectives += 1;
            }
        }
    }
    t
}

/// A file card's content.
pub fn file_view(s: &FileSummary, workload: Option<&SimaiWorkload>) -> FileView {
    let mut fields = Vec::new();
    if let Some(h) = &s.simai {
        fields.push(FieldView::new("Policy", "policy", h.policy));
        fields.push(FieldView::new("TP", "tp", h.tp.to_string()));
        fields.push(FieldView::new("PP", "pp", h.pp.to_string()));
        fields.push(FieldView::new("EP", "ep", h.ep.to_string()));
        fields.push(FieldView::new("vpp", "vpp", h.vpp.to_string()));
        fields.push(FieldView::new("GA", "ga", h.ga.to_string()));
        fields.push(FieldView::new(
            "World",
            "world",
            h.world.map_or("—".into(), |w| w.to_string()),
        ));
        fields.push(FieldView::new(
            "pp_comm",
            "pp-comm",
            format!("{} B", h.pp_comm_bytes),
        ));
        fields.push(FieldView::new(
            "Records",
            "records",
            format!("{} read, {} skipped", h.records, h.skipped_records),
        ));
    }
    if let Some(w) = workload {
        let t = declared_totals(w);
        fields.push(FieldView::new(
            "Compute declared",
            "compute-declared",
            crate::format::duration_ns(t.compute_ns()),
        ));
        let bytes: u64 = t.comm_bytes.values().fold(0, |a, b| a.saturating_add(*b));
        fields.push(FieldView::new(
            "Collective volume",
            "comm-volume",
            format!(
                "{} in {} collectives",
                crate::format::bytes(bytes),
                t.collectives
            ),
        ));
    }
    FileView {
        name: s.file.clone(),
        format: s.format.map(|f| f.name().to_string()),
        fields,
        diagnostics: s.diagnostics.clone(),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A table as CSV (raw numbers: ns and bytes as integers).
pub fn table_csv(t: &TableView) -> String {
    let mut out = t
        .columns
        .iter()
        .map(|c| csv_field(c))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for row in &t.rows {
        let cells: Vec<String> = row
            .iter()
            .map(|c| match c {
                Cell::Text(s) => csv_field(s),
                Cell::Int(i) => i.to_string(),
                Cell::DurationNs(v) | Cell::Bytes(v) => v.to_string(),
                Cell::Float(f) => f.to_string(),
            })
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn file_stem(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// The Read panel for a SimAI workload without simulation: what the file
/// declares, summed over one pass of its records.
pub fn declared_view(name: &str, w: &SimaiWorkload) -> ResultView {
    let t = declared_totals(w);
    let mut v = ResultView::new(
        ResultKind::Declared,
        "Workload as declared",
        &format!(
            "{name}: compute times and collective sizes written in the file, summed over its {} \
             records (one pass of one pipeline stage; AICB's placeholder 1 ns counts as 0). \
             Not a simulation.",
            w.records.len()
        ),
    );
    v.figures = vec![
        Figure::new(
            "compute",
            "Compute (declared)",
            Quantity::DurationNs(t.compute_ns()),
        ),
        Figure::new(
            "compute.fwd",
            "Forward compute",
            Quantity::DurationNs(t.fwd_ns),
        ),
        Figure::new(
            "compute.ig",
            "Input-grad compute",
            Quantity::DurationNs(t.ig_ns),
        ),
        Figure::new(
            "compute.wg",
            "Weight-grad compute",
            Quantity::DurationNs(t.wg_ns),
        ),
    ];
    for (group, bytes) in &t.comm_bytes {
        v.figures.push(Figure::new(
            &format!("comm_bytes.{group}"),
            &format!("{group} collective volume"),
            Quantity::Bytes(*bytes),
        ));
    }
    v.figures.push(Figure::new(
        "collectives",
        "Collectives",
        Quantity::Count(t.collectives),
    ));
    v.figures.push(Figure::new(
        "records",
        "Layer records",
        Quantity::Count(w.records.len() as u64),
    ));
    v.breakdown_title = "Declared compute by phase".into();
    v.breakdown = vec![
        Segment {
            key: "compute.fwd".into(),
            label: "Forward".into(),
            value_ns: t.fwd_ns,
        },
        Segment {
            key: "compute.ig".into(),
            label: "Input-grad".into(),
            value_ns: t.ig_ns,
        },
        Segment {
            key: "compute.wg".into(),
            label: "Weight-grad".into(),
            value_ns: t.wg_ns,
        },
    ];
    let total = t.compute_ns();
    if total > 0 {
        let mut layers: Vec<(&String, &u64)> =
            t.by_layer.iter().filter(|(_, ns)| **ns > 0).collect();
        // Largest first; names break ties (deterministic).
        layers.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        const SHOWN: usize = 8;
        let rest: u64 = layers.iter().skip(SHOWN).map(|(_, ns)| **ns).sum();
        v.bars_title = "Share of declared compute by layer".into();
        v.bars = layers
            .iter()
            .take(SHOWN)
            .map(|(name, ns)| Bar {
                label: (*name).clone(),
                fraction: **ns as f64 / total as f64,
            })
            .collect();
        if rest > 0 {
            v.bars.push(Bar {
                label: format!("{} other layers", layers.len() - SHOWN),
                fraction: rest as f64 / total as f64,
            });
        }
    }
    let table = TableView {
        title: "Layer records".into(),
        columns: [
            "#",
            "line",
            "layer",
            "fwd compute",
            "fwd comm",
            "fwd bytes",
            "ig compute",
            "ig comm",
            "ig bytes",
            "wg compute",
            "wg comm",
            "wg bytes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: w
            .records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                vec![
                    Cell::Int(i as i64 + 1),
                    Cell::Int(i64::from(r.line)),
                    Cell::Text(r.name.clone()),
                    Cell::DurationNs(r.fwd_compute_ns),
                    Cell::Text(comm_text(&r.fwd_comm)),
                    Cell::Bytes(r.fwd_comm.size_bytes),
                    Cell::DurationNs(r.ig_compute_ns),
                    Cell::Text(comm_text(&r.ig_comm)),
                    Cell::Bytes(r.ig_comm.size_bytes),
                    Cell::DurationNs(r.wg_compute_ns),
                    Cell::Text(comm_text(&r.wg_comm)),
                    Cell::Bytes(r.wg_comm.size_bytes),
                ]
            })
            .collect(),
        total_rows: w.records.len() as u64,
    };
    let stem = file_stem(name);
    let summary = serde_json::json!({
        "schema": "trainscope.workload-summary/1",
        "file": name,
        "header": &w.header,
        "records": w.records.len(),
        "declared_records": w.declared_records,
        "skipped_records": w.skipped_records,
        "compute_ns": { "forward": t.fwd_ns, "input_grad": t.ig_ns, "weight_grad": t.wg_ns,
                        "total": t.compute_ns() },
        "collective_bytes": &t.comm_bytes,
        "collectives": t.collectives,
        "diagnostics": &w.diagnostics,
    });
    v.exports = vec![
        ExportFile {
            label: "Summary (JSON)".into(),
            testid: "export-summary-json".into(),
            file_name: format!("{stem}.summary.json"),
            mime: "application/json".into(),
            content: serde_json::to_string_pretty(&summary).unwrap_or_default(),
        },
        ExportFile {
            label: "Layer table (CSV)".into(),
            testid: "export-csv".into(),
            file_name: format!("{stem}.layers.csv"),
            mime: "text/csv".into(),
            content: table_csv(&table),
        },
    ];
    v.tables.push(table.truncated());
    v
}
