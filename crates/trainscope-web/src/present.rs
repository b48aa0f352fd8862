//! The core's values as the page's display data ([`crate::views`]): a
//! file's card ([`file_view`]) and the settings its header states
//! ([`hints_from_summary`]), the SimAI-compatible mode's result
//! ([`simai_view`]) and the event engine's ([`event_view`]: breakdown,
//! per-stage table, timeline), and a table as CSV ([`table_csv`]).

use crate::format::counted;
use crate::settings::SettingsHints;
use crate::views::{
    ActivationView, Bar, Cell, ExportFile, FieldView, Figure, FileView, Quantity, ResultKind,
    ResultView, Segment, TableView,
};
use std::collections::BTreeMap;
use trainscope_core::analytical::{self, AnalyticalReport};
use trainscope_core::formats::simai::{CommGroup, SimaiWorkload};
use trainscope_core::inspect::FileSummary;
use trainscope_core::run::RunOutput;
use trainscope_core::Diagnostic;

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
    } else if let (Some(job), Some(format)) = (&s.job, s.format) {
        // The other formats: what their parser established (measured runs
        // state the whole layout; a NeuSight table states no world size, so
        // the field shows the one the simulation assumes, as the CLI does).
        let p = &job.parallel;
        let measured = job.kind == "measured";
        h.world_size = Some(p.world);
        h.tp = Some(p.tp);
        h.pp = Some(p.pp);
        h.ep = Some(p.ep);
        h.micro_batches = Some(p.micro_batches);
        let src = vec![
            if measured {
                format!("world = {}", p.world)
            } else {
                format!("world = {} (assumed: the file states none)", p.world)
            },
            format!("TP = {}", p.tp),
            format!("PP = {}", p.pp),
            format!("EP = {}", p.ep),
            format!("micro-batches = {}", p.micro_batches),
        ];
        h.sources = src
            .into_iter()
            .map(|m| format!("{}: {m} from the {} input", s.file, format.name()))
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
    if let Some(job) = &s.job {
        if s.simai.is_none() {
            let p = &job.parallel;
            fields.push(FieldView::new("Kind", "kind", job.kind));
            fields.push(FieldView::new("TP", "tp", p.tp.to_string()));
            fields.push(FieldView::new("PP", "pp", p.pp.to_string()));
            fields.push(FieldView::new("DP", "dp", p.dp.to_string()));
            fields.push(FieldView::new("World", "world", p.world.to_string()));
            fields.push(FieldView::new(
                "Micro-batches",
                "micro-batches",
                p.micro_batches.to_string(),
            ));
        }
        // A rank file measures its own stage(s), not the job's PP.
        let stages_label = if job.kind == "measured" {
            "Stages measured"
        } else {
            "Stages"
        };
        fields.push(FieldView::new(
            stages_label,
            "stages",
            job.stages.to_string(),
        ));
        fields.push(FieldView::new("Ops", "ops", crate::format::count(job.ops)));
        if let (Some(f), Some(b)) = (
            job.forward_ns_per_micro_batch,
            job.backward_ns_per_micro_batch,
        ) {
            fields.push(FieldView::new(
                "Fwd / bwd per micro-batch",
                "fwd-bwd",
                format!(
                    "{} / {}",
                    crate::format::duration_ns(f),
                    crate::format::duration_ns(b)
                ),
            ));
        }
    }
    if let Some(m) = &s.model {
        fields.push(FieldView::new("Model", "model", m.name.clone()));
        fields.push(FieldView::new("Family", "family", m.family.name()));
        fields.push(FieldView::new("Layers", "layers", m.layers.to_string()));
        fields.push(FieldView::new(
            "Hidden size",
            "hidden-size",
            m.hidden_size.to_string(),
        ));
        fields.push(FieldView::new(
            "Heads / KV heads",
            "heads",
            format!("{} / {}", m.attention_heads, m.kv_heads),
        ));
        if let (Some(e), Some(k)) = (m.experts, m.top_k) {
            fields.push(FieldView::new(
                "Experts",
                "experts",
                format!(
                    "{e} routed, top-{k}, {} shared",
                    m.shared_experts.unwrap_or(0)
                ),
            ));
        }
        fields.push(FieldView::new(
            "Parameters",
            "parameters",
            if m.parameters_active == m.parameters_total {
                crate::format::count(m.parameters_total)
            } else {
                format!(
                    "{} ({} active)",
                    crate::format::count(m.parameters_total),
                    crate::format::count(m.parameters_active)
                )
            },
        ));
    }
    if let Some(ranks) = &s.ranks {
        let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
        fields.push(FieldView::new("Ranks", "ranks", list.join(", ")));
    }
    if let Some(times) = &s.iteration_times_ns {
        let list: Vec<String> = times
            .iter()
            .take(4)
            .map(|t| crate::format::duration_ns(*t))
            .collect();
        let more = if times.len() > 4 {
            format!(" (+{} more)", times.len() - 4)
        } else {
            String::new()
        };
        fields.push(FieldView::new(
            "Measured iterations",
            "iteration-times",
            format!("{}{more}", list.join(", ")),
        ));
    }
    if s.simai.is_none() && s.format.is_some() {
        fields.push(FieldView::new(
            "Read",
            "read",
            format!("{} {}, {} skipped", s.read, s.unit, s.skipped),
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
                Cell::Int(i) | Cell::DeltaNs(i) => i.to_string(),
                Cell::DurationNs(v) | Cell::Bytes(v) => v.to_string(),
                Cell::Float(f) => f.to_string(),
            })
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

pub(crate) fn file_stem(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// Exposed communication per group as `(key, label, ns)`, in display order.
/// The expert groups (EP, DP_EP) only for jobs with expert parallelism
/// (`has_ep`) or time in them: a dense model has no such part.
fn exposed_groups(
    tp: u64,
    (ep, dp_ep, has_ep): (u64, u64, bool),
    dp: u64,
    pp: u64,
    cp: u64,
) -> Vec<(&'static str, &'static str, u64)> {
    let experts = has_ep || ep > 0 || dp_ep > 0;
    let mut groups = vec![("comm.TP", "Exposed TP comm", tp)];
    if experts {
        groups.push(("comm.EP", "Exposed EP comm", ep));
    }
    groups.push(("comm.DP", "Exposed DP comm", dp));
    if experts {
        groups.push(("comm.DP_EP", "Exposed DP_EP comm", dp_ep));
    }
    groups.push(("comm.PP", "Exposed PP comm", pp));
    // Context parallelism's group only for jobs that have one.
    if cp > 0 {
        groups.push(("comm.CP", "Exposed CP comm", cp));
    }
    groups
}

/// Headline figures and breakdown segments shared by both modes.
fn fill_breakdown(
    v: &mut ResultView,
    compute_ns: u64,
    bubble_ns: u64,
    groups: Vec<(&'static str, &'static str, u64)>,
) {
    v.figures.push(Figure::new(
        "compute",
        "Compute",
        Quantity::DurationNs(compute_ns),
    ));
    v.figures.push(Figure::new(
        "bubble",
        "Bubble",
        Quantity::DurationNs(bubble_ns),
    ));
    let exposed: u64 = groups.iter().map(|g| g.2).fold(0, u64::saturating_add);
    v.figures.push(Figure::new(
        "comm",
        "Exposed comm (total)",
        Quantity::DurationNs(exposed),
    ));
    for &(key, label, ns) in &groups {
        v.figures
            .push(Figure::new(key, label, Quantity::DurationNs(ns)));
    }
    v.breakdown_title = "Where the iteration goes".into();
    v.breakdown.push(Segment {
        key: "compute".into(),
        label: "Compute".into(),
        value_ns: compute_ns,
    });
    for (key, label, ns) in groups {
        if ns > 0 {
            v.breakdown.push(Segment {
                key: key.into(),
                label: label.trim_start_matches("Exposed ").into(),
                value_ns: ns,
            });
        }
    }
    v.breakdown.push(Segment {
        key: "bubble".into(),
        label: "Bubble".into(),
        value_ns: bubble_ns,
    });
}

/// The SimAI-compatible mode's report as the Read panel.
pub fn simai_view(name: &str, r: &AnalyticalReport) -> ResultView {
    let p = &r.parallelism;
    let mut v = ResultView::new(
        ResultKind::Simai,
        "SimAI-compatible mode",
        &format!(
            "{name}: SimAI-Analytical's cost model, one stage's pass scaled by the closed-form \
             bubble; TP {} · PP {} · EP {} · DP {} · vpp {} · GA {}",
            p.tp, p.pp, p.ep, p.dp, p.vpp, p.ga
        ),
    );
    v.iteration_time_ns = Some(r.iteration_time_ns);
    let e = &r.exposed_comm_ns;
    fill_breakdown(
        &mut v,
        r.compute_ns,
        r.bubble_ns,
        exposed_groups(e.tp, (e.ep, e.dp_ep, p.ep > 1), e.dp, e.pp, 0),
    );
    let comm_cell = |c: &analytical::PhaseComm| match (c.collective, c.group) {
        (Some(coll), Some(g)) => Cell::Text(format!("{coll:?} {g:?}×{}", c.group_size)),
        _ => Cell::Text("—".into()),
    };
    // No bandwidth for a row without communication: "—", not 0.
    let bw = |x: Option<f64>| match x {
        Some(v) if v > 0.0 => Cell::Float(v),
        _ => Cell::Text("—".into()),
    };
    // AICB writes compute `1` for "not measured".
    let compute = |ns: u64| {
        if ns == 1 {
            Cell::Text("—".into())
        } else {
            Cell::DurationNs(ns)
        }
    };
    let table = TableView {
        title: "Per layer (SimAI EndToEnd rows)".into(),
        columns: [
            "line",
            "layer",
            "fwd compute",
            "ig compute",
            "wg compute",
            "fwd comm",
            "fwd total",
            "fwd exposed",
            "fwd busbw GB/s",
            "ig comm",
            "ig total",
            "ig exposed",
            "ig busbw GB/s",
            "wg comm",
            "wg total",
            "wg exposed",
            "wg busbw GB/s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: r
            .layers
            .iter()
            .map(|l| {
                vec![
                    Cell::Int(i64::from(l.line)),
                    Cell::Text(l.name.clone()),
                    compute(l.fwd_compute_ns),
                    compute(l.ig_compute_ns),
                    compute(l.wg_compute_ns),
                    comm_cell(&l.fwd),
                    Cell::DurationNs(l.fwd.total_ns),
                    Cell::DurationNs(l.fwd.exposed_ns),
                    bw(l.fwd.busbw_gbps),
                    comm_cell(&l.ig),
                    Cell::DurationNs(l.ig.total_ns),
                    Cell::DurationNs(l.ig.exposed_ns),
                    bw(l.ig.busbw_gbps),
                    comm_cell(&l.wg),
                    Cell::DurationNs(l.wg.total_ns),
                    Cell::DurationNs(l.wg.exposed_ns),
                    bw(l.wg.busbw_gbps),
                ]
            })
            .collect(),
        total_rows: r.layers.len() as u64,
    };
    v.tables.push(table.truncated());
    let stem = file_stem(name);
    v.exports = vec![
        ExportFile {
            label: "SimAI EndToEnd CSV".into(),
            testid: "export-csv".into(),
            file_name: format!("{stem}-EndToEnd.csv"),
            mime: "text/csv".into(),
        },
        ExportFile {
            label: "Summary (JSON)".into(),
            testid: "export-summary-json".into(),
            file_name: format!("{stem}.simai.json"),
            mime: "application/json".into(),
        },
    ];
    v.diagnostics = r.warnings.clone();
    v
}

/// The event-level simulation (and, for measured runs, the measurement) as
/// the Read panel.
pub fn event_view(out: &RunOutput) -> ResultView {
    let s = out.summary();
    // A model-level job has no file: it is named by its model.
    let label = if out.files.is_empty() {
        s.job.clone()
    } else {
        crate::format::name_list(&out.files)
    };
    let stem = match out.files.first() {
        Some(f) => file_stem(f).to_string(),
        None => s.job.clone(),
    };
    let mut v = ResultView::new(
        ResultKind::Event,
        "Event-level simulation",
        &format!(
            "{}: {} schedule, {} × {}, {} collectives, {}{}",
            label,
            s.schedule,
            counted(u64::from(s.pipeline_stages), "stage", "stages"),
            counted(u64::from(s.micro_batches), "micro-batch", "micro-batches"),
            s.algorithm,
            counted(
                u64::from(s.simulated_ranks),
                "simulated rank",
                "simulated ranks"
            ),
            if s.representative_ranks {
                " (one representative rank per stage)"
            } else {
                ""
            }
        ),
    );
    v.iteration_time_ns = Some(s.iteration_time_ns);
    let e = &s.exposed_comm_ns;
    fill_breakdown(
        &mut v,
        s.compute_ns,
        s.bubble_ns,
        exposed_groups(e.tp, (e.ep, e.dp_ep, out.parallel.ep > 1), e.dp, e.pp, e.cp),
    );
    // Idle parts beyond the exposed communication: a figure and a part of
    // the breakdown each, where there is any.
    for (key, label, ns) in [
        ("other", "Other idle", s.other_idle_ns),
        ("host_bound", "Host-bound", s.host_bound_ns),
    ] {
        if ns > 0 {
            v.figures
                .push(Figure::new(key, label, Quantity::DurationNs(ns)));
            v.breakdown.push(Segment {
                key: key.into(),
                label: label.into(),
                value_ns: ns,
            });
        }
    }
    for (key, label, ns) in [
        ("sync_stall", "Host sync stall", s.sync_stall_ns),
        (
            "launch_queue_wait",
            "Launch queue wait",
            s.launch_queue_wait_ns,
        ),
    ] {
        if ns > 0 {
            v.figures
                .push(Figure::new(key, label, Quantity::DurationNs(ns)));
        }
    }
    v.figures.push(Figure::new(
        "simai_bubble",
        "SimAI closed-form bubble",
        Quantity::DurationNs(s.simai_bubble_ns),
    ));
    v.bars_title = "Per-stage utilisation (compute busy share)".into();
    v.bars = s
        .stages
        .iter()
        .map(|st| Bar {
            label: format!("stage {}", st.stage),
            fraction: st.busy_share,
        })
        .collect();
    if out.kind == "measured" {
        v.measured_format = Some(out.format.name().to_string());
    }
    if let Some(c) = &out.comparison {
        v.measured.push(Figure::new(
            "iteration_time",
            "Iteration time",
            Quantity::DurationNs(c.measured_iteration_time_ns),
        ));
        v.tables.push(TableView {
            title: format!(
                "Measured vs simulated by op kind (iteration: {:+.1}%)",
                c.error_percent
            ),
            columns: ["kind", "measured", "simulated", "difference"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows: c
                .by_kind
                .iter()
                .map(|k| {
                    vec![
                        Cell::Text(k.kind.to_string()),
                        k.measured_ns
                            .map_or(Cell::Text("—".into()), Cell::DurationNs),
                        Cell::DurationNs(k.simulated_ns),
                        k.difference_ns
                            .map_or(Cell::Text("—".into()), Cell::DeltaNs),
                    ]
                })
                .collect(),
            total_rows: c.by_kind.len() as u64,
        });
    }
    if let Some(cal) = &out.calibration {
        v.figures.push(Figure::new(
            "compute_scale",
            "Calibrated compute scale",
            Quantity::Fraction(cal.compute_scale),
        ));
    }
    // A CP column only for jobs with context parallelism; the expert
    // columns only for jobs with expert parallelism (or time in them).
    let has_cp = s.stages.iter().any(|st| st.exposed_comm_ns.cp > 0);
    let has_ep = out.parallel.ep > 1
        || s.stages
            .iter()
            .any(|st| st.exposed_comm_ns.ep > 0 || st.exposed_comm_ns.dp_ep > 0);
    v.tables.push(TableView {
        title: "Per stage".into(),
        columns: [
            "stage",
            "rank",
            "compute",
            "bubble",
            "exposed TP",
            "exposed EP",
            "exposed DP",
            "exposed DP_EP",
            "exposed PP",
            "other idle",
            "busy share",
        ]
        .iter()
        .filter(|c| has_ep || !matches!(**c, "exposed EP" | "exposed DP_EP"))
        .map(|s| s.to_string())
        .chain(has_cp.then(|| "exposed CP".to_string()))
        .collect(),
        rows: s
            .stages
            .iter()
            .map(|st| {
                let x = &st.exposed_comm_ns;
                [
                    Some(Cell::Int(i64::from(st.stage))),
                    Some(Cell::Int(i64::from(st.rank))),
                    Some(Cell::DurationNs(st.compute_ns)),
                    Some(Cell::DurationNs(st.bubble_ns)),
                    Some(Cell::DurationNs(x.tp)),
                    has_ep.then_some(Cell::DurationNs(x.ep)),
                    Some(Cell::DurationNs(x.dp)),
                    has_ep.then_some(Cell::DurationNs(x.dp_ep)),
                    Some(Cell::DurationNs(x.pp)),
                    Some(Cell::DurationNs(st.other_idle_ns)),
                    Some(Cell::Float(st.busy_share)),
                ]
                .into_iter()
                .flatten()
                .chain(has_cp.then_some(Cell::DurationNs(x.cp)))
                .collect()
            })
            .collect(),
        total_rows: s.stages.len() as u64,
    });
    v.exports = vec![
        ExportFile {
            label: "Chrome trace (JSON)".into(),
            testid: "export-chrome-trace".into(),
            file_name: format!("{stem}.trace.json"),
            mime: "application/json".into(),
        },
        ExportFile {
            label: "Summary (JSON)".into(),
            testid: "export-summary-json".into(),
            file_name: format!("{stem}.summary.json"),
            mime: "application/json".into(),
        },
        ExportFile {
            label: "Spans (CSV)".into(),
            testid: "export-csv".into(),
            file_name: format!("{stem}.spans.csv"),
            mime: "text/csv".into(),
        },
    ];
    v.diagnostics = out
        .warnings
        .iter()
        .map(|w| Diagnostic::warning(w.clone()))
        .collect();
    v.activations = out
        .result
        .activations
        .iter()
        .map(|a| ActivationView {
            stage: a.stage,
            chunks_per_micro_batch: a.chunks_per_micro_batch,
            points: a.points.iter().map(|p| (p.time_ns, p.chunks)).collect(),
            peak_chunks: a.peak_chunks,
            bytes_per_chunk: None,
        })
        .collect();
    v.whatif = out.whatif.clone();
    v
}
