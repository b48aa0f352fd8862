//! The per-file summary (`trainscope inspect`, the web page's file list):
//! detected format and confidence, the job description (parallel
//! configuration, stages, ops), measured iteration times for traces and
//! logs, the model of a HuggingFace `config.json` (sizes, experts,
//! parameters), read/skipped counts, and every diagnostic. One serialisable
//! value per input file so the CLI's JSON and the browser show the same data.
//!
//! [`load_set`] parses a SET of files together — Echo rank files of one job
//! (same file name up to the `rank<N>` token) form one measured run — and
//! returns the summaries plus the normalised models for the simulators;
//! [`inspect`] is the one-file shortcut.

use crate::diag::Diagnostic;
use crate::formats::simai::SimaiWorkload;
use crate::workload::{DescribedJob, MeasuredRun, ParallelConfig};
use crate::{
    formats::hf,
    model::{Family, ModelSpec},
};
use crate::{
    formats::{self, chakra, echo, kineto, lex, neusight, optimus, simai, Detection},
    workload::Format,
};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// Header facts of a SimAI workload, flattened for display and JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimaiSummary {
    pub policy: &'static str,
    pub tp: u32,
    pub pp: u32,
    pub ep: u32,
    pub vpp: u32,
    pub ga: u32,
    pub world: Option<u32>,
    pub pp_comm_bytes: u64,
    pub records: u64,
    pub declared_records: u64,
    pub skipped_records: u32,
}

/// The normalised job facts of any format (JSON key `job`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobSummary {
    /// `described` (workload files) or `measured` (traces, logs).
    pub kind: &'static str,
    pub parallel: ParallelConfig,
    /// Pipeline stages described or measured.
    pub stages: u32,
    /// Described jobs: distinct layer ops stored (before + blocks + after);
    /// measured runs: measured ops over all ranks.
    pub ops: u64,
    /// Described jobs: layer ops executed per iteration on one stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_per_iteration: Option<u64>,
    /// Described jobs: layer ops of one micro-batch (first block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_per_micro_batch: Option<u64>,
    /// Described jobs: once-per-iteration rows before / after the micro-batches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_ops: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_ops: Option<u64>,
    /// Described jobs: distinct micro-batch blocks (1 when every copy is equal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct_blocks: Option<u64>,
    /// Described jobs: forward / input-grad / weight-grad compute of one
    /// micro-batch on one stage, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_ns_per_micro_batch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backward_ns_per_micro_batch: Option<u64>,
}

/// What a PyTorch profiler (Kineto) trace holds (flattened into the file's
/// JSON: `rank`, `world` (`null` without `distributedInfo`), `iterations`,
/// `iteration`, `kernels`, `memcpy`, `memset`, `collectives`, `gzip`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KinetoSummary {
    /// `distributedInfo.rank`, `null` without it.
    pub rank: Option<u32>,
    /// `distributedInfo.world_size`, `null` without it.
    pub world: Option<u32>,
    /// The `ProfilerStep` numbers found in this file, ascending.
    pub iterations: Vec<u32>,
    /// The step the run analyses (present on every rank of the set; the
    /// last one unless asked), `null` when there is none.
    pub iteration: Option<u32>,
    /// GPU compute kernels (NCCL kernels not counted), memory copies and
    /// sets, NCCL kernels.
    pub kernels: u64,
    pub memcpy: u64,
    pub memset: u64,
    pub collectives: u64,
    /// GPU user annotations (other than `ProfilerStep#N`).
    pub gpu_annotations: u64,
    /// The file was gzip'd.
    pub gzip: bool,
    pub backend: Option<String>,
    pub device: Option<String>,
}

/// The model a HuggingFace `config.json` describes (JSON key `model`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelSummary {
    /// `_name_or_path`, else the file name.
    pub name: String,
    pub family: Family,
    pub layers: u32,
    pub hidden_size: u64,
    pub attention_heads: u32,
    pub kv_heads: u32,
    pub head_dim: u64,
    /// Width of the dense MLP.
    pub ffn_hidden_size: u64,
    pub vocab_size: u64,
    /// MoE models: routed experts per MoE layer, experts per token, shared
    /// experts and the number of MoE layers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_experts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_layers: Option<u32>,
    /// Multi-head latent attention (DeepSeek).
    pub latent_attention: bool,
    /// Parameters (elements): all, and those one token goes through.
    pub parameters_total: u64,
    pub parameters_active: u64,
}

impl ModelSummary {
    pub fn of(m: &ModelSpec) -> Self {
        let p = m.parameters();
        let moe = m.moe.as_ref();
        ModelSummary {
            name: m.name.clone(),
            family: m.family,
            layers: m.num_layers,
            hidden_size: m.hidden_size,
            attention_heads: m.num_attention_heads,
            kv_heads: m.num_kv_heads,
            head_dim: m.head_dim,
            ffn_hidden_size: m.ffn_hidden_size,
            vocab_size: m.vocab_size,
            experts: moe.map(|x| x.num_experts),
            top_k: moe.map(|x| x.top_k),
            shared_experts: moe.map(|x| x.num_shared_experts),
            moe_layers: moe.map(|_| m.moe_layers()),
            latent_attention: m.mla.is_some(),
            parameters_total: p.total,
            parameters_active: p.active,
        }
    }
}

/// What `inspect` reports about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileSummary {
    pub file: String,
    /// Detected (or forced) format; `None` when it could not be recognised.
    pub format: Option<Format>,
    /// Detection confidence in percent (`None` when the format was forced
    /// or nothing was recognised).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// Whether the user forced the format.
    pub forced: bool,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub simai: Option<SimaiSummary>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub kineto: Option<KinetoSummary>,
    /// The normalised job, when the file could be parsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<JobSummary>,
    /// The model, for a HuggingFace `config.json` that could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelSummary>,
    /// Items read and skipped (records, rows, op lines, log entries).
    pub read: u64,
    pub skipped: u64,
    /// What `read`/`skipped` count.
    pub unit: &'static str,
    /// Measured runs: ranks of the run this file belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Vec<u32>>,
    /// Measured runs: ranks this file itself contributed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_ranks: Option<Vec<u32>>,
    /// Measured runs assembled from several files: all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_files: Option<Vec<String>>,
    /// Measured runs: the job's measured iteration times, ns (serialised as
    /// `iteration_times_ms`, floats in milliseconds).
    #[serde(
        rename = "iteration_times_ms",
        serialize_with = "ns_as_ms",
        skip_serializing_if = "Option::is_none"
    )]
    pub iteration_times_ns: Option<Vec<u64>>,
    /// Measured runs: how many training iterations each time covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations_covered: Option<Vec<u32>>,
    /// Whether the file gave a result (records, rows, ops or entries were
    /// read, or a `config.json` gave a model), even if some were skipped: a
    /// usable file is simulated, its skipped items left out (see
    /// [`FileSummary::skipped_note`]). `false`: the file FAILED
    /// (unrecognised, unreadable header, nothing parsed).
    pub usable: bool,
    /// Every diagnostic, warnings and errors, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

fn ns_as_ms<S: Serializer>(v: &Option<Vec<u64>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        None => s.serialize_none(),
        Some(list) => s.collect_seq(list.iter().map(|ns| lex::ns_to_ms_f64(*ns))),
    }
}

impl FileSummary {
    fn new(file: &str) -> Self {
        FileSummary {
            file: file.to_string(),
            format: None,
            confidence: None,
            forced: false,
            simai: None,
            kineto: None,
            job: None,
            model: None,
            read: 0,
            skipped: 0,
            unit: "records",
            ranks: None,
            file_ranks: None,
            run_files: None,
            iteration_times_ns: None,
            iterations_covered: None,
            usable: false,
            diagnostics: Vec::new(),
        }
    }

    /// Whether the file gave a result (see [`FileSummary::usable`]).
    pub fn is_usable(&self) -> bool {
        self.usable
    }

    /// For a usable file with skipped items: one sentence naming the file,
    /// how many items were left out and their lines, e.g. "`x.txt`: 1
    /// record skipped (line 5); the result leaves it out".
    pub fn skipped_note(&self) -> Option<String> {
        skipped_note(&self.file, self.unit, self.skipped, &self.diagnostics)
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The warnings, one line each (`file:line:col: warning: message`).
    pub fn warnings(&self) -> Vec<String> {
        self.diagnostics
            .iter()
            .filter(|d| !d.is_error())
            .map(Diagnostic::short)
            .collect()
    }

    /// The errors, one line each (`file:line:col: error: message`).
    pub fn errors(&self) -> Vec<String> {
        self.diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(Diagnostic::short)
            .collect()
    }

    /// The readable multi-line summary printed by `trainscope inspect`.
    pub fn render_text(&self) -> String {
        let mut out = format!("{}\n", self.file);
        match (self.format, self.confidence) {
            (Some(f), Some(c)) => {
                out.push_str(&format!("  format: {} (detected, {c}%)\n", f.name()))
            }
            (Some(f), None) => out.push_str(&format!("  format: {} (forced)\n", f.name())),
            (None, _) => out.push_str("  format: unrecognised\n"),
        }
        if let Some(h) = &self.simai {
            out.push_str(&format!("  policy: {}\n", h.policy));
            out.push_str(&format!(
                "  header: TP {} · PP {} · EP {} · vpp {} · GA {} · world {}\n",
                h.tp,
                h.pp,
                h.ep,
                h.vpp,
                h.ga,
                h.world.map_or("?".to_string(), |w| w.to_string())
            ));
            out.push_str(&format!("  pp_comm: {} bytes\n", h.pp_comm_bytes));
            out.push_str(&format!("  declared records: {}\n", h.declared_records));
        }
        if let Some(k) = &self.kineto {
            let opt = |v: Option<u32>| v.map_or("unknown".to_string(), |x| x.to_string());
            out.push_str(&format!(
                "  rank {} of world {} · backend {} · device {}{}\n",
                opt(k.rank),
                opt(k.world),
                k.backend.as_deref().unwrap_or("unknown"),
                k.device.as_deref().unwrap_or("unknown"),
                if k.gzip { " · gzip" } else { "" }
            ));
            out.push_str(&format!(
                "  ProfilerSteps: {} · analysed: {}\n",
                list_u32(&k.iterations),
                k.iteration
                    .map_or("none (the whole trace)".to_string(), |i| i.to_string())
            ));
            out.push_str(&format!(
                "  GPU kernels {} · NCCL kernels {} · memcpy {} · memset {} · annotations {}\n",
                k.kernels, k.collectives, k.memcpy, k.memset, k.gpu_annotations
            ));
        }
        if let Some(j) = &self.job {
            let p = &j.parallel;
            out.push_str(&format!(
                "  job ({}): world {} = TP {} x PP {} x DP {} · EP {} · DP/EP {} · micro-batches {} · virtual stages {}{}{}\n",
                j.kind,
                p.world,
                p.tp,
                p.pp,
                p.dp,
                p.ep,
                p.dp_ep,
                p.micro_batches,
                p.virtual_stages,
                p.micro_batch_size
                    .map_or(String::new(), |m| format!(" · micro-batch size {m}")),
                if p.activation_bytes > 0 {
                    format!(" · activation {} bytes", p.activation_bytes)
                } else {
                    String::new()
                }
            ));
            if j.kind == "described" {
                out.push_str(&format!(
                    "  stages: {} · ops stored {} · per micro-batch {} · per iteration {} (before {}, after {}) · distinct blocks {}\n",
                    j.stages,
                    j.ops,
                    j.ops_per_micro_batch.unwrap_or(0),
                    j.ops_per_iteration.unwrap_or(0),
                    j.before_ops.unwrap_or(0),
                    j.after_ops.unwrap_or(0),
                    j.distinct_blocks.unwrap_or(0)
                ));
                out.push_str(&format!(
                    "  compute per micro-batch: forward {} ms · backward {} ms\n",
                    lex::ns_to_ms_string(j.forward_ns_per_micro_batch.unwrap_or(0)),
                    lex::ns_to_ms_string(j.backward_ns_per_micro_batch.unwrap_or(0))
                ));
            } else {
                out.push_str(&format!("  stages: {} · ops: {}\n", j.stages, j.ops));
            }
        }
        if let Some(m) = &self.model {
            out.push_str(&model_text(m));
        }
        if let Some(r) = &self.ranks {
            out.push_str(&format!("  ranks in run: {}\n", list_u32(r)));
        }
        if let Some(r) = &self.file_ranks {
            out.push_str(&format!("  ranks in this file: {}\n", list_u32(r)));
        }
        if let Some(f) = &self.run_files {
            out.push_str(&format!("  run files: {}\n", f.join(", ")));
        }
        if let Some(t) = &self.iteration_times_ns {
            let shown: Vec<String> = t
                .iter()
                .take(12)
                .map(|ns| lex::ns_to_ms_string(*ns))
                .collect();
            out.push_str(&format!(
                "  measured iteration time(s), ms: {}{}\n",
                if shown.is_empty() {
                    "none".to_string()
                } else {
                    shown.join(", ")
                },
                if t.len() > 12 {
                    format!(", … ({} in all)", t.len())
                } else {
                    String::new()
                }
            ));
        }
        if self.format.is_some() {
            out.push_str(&format!(
                "  {}: {} read, {} skipped\n",
                self.unit, self.read, self.skipped
            ));
        }
        let warnings = self.diagnostics.iter().filter(|d| !d.is_error()).count();
        let errors = self.diagnostics.len() - warnings;
        out.push_str(&format!("  {warnings} warning(s), {errors} error(s)\n"));
        for d in self.diagnostics.iter().filter(|d| !d.is_error()) {
            out.push_str(&format!("  {}\n", d.short()));
        }
        out
    }
}

/// "`file`: N `unit` skipped (line 5, 9); the result leaves them out", or
/// `None` when nothing was skipped. The lines are those of the file's
/// located error diagnostics (at most 8 listed).
pub fn skipped_note(
    file: &str,
    unit: &str,
    skipped: u64,
    diagnostics: &[Diagnostic],
) -> Option<String> {
    if skipped == 0 {
        return None;
    }
    let mut lines: Vec<u32> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| d.location.as_ref())
        .filter(|l| l.file == file)
        .map(|l| l.line)
        .collect();
    lines.dedup();
    let unit = if skipped == 1 {
        match unit.strip_suffix("ies") {
            Some(stem) => format!("{stem}y"),
            None => unit.strip_suffix('s').unwrap_or(unit).to_string(),
        }
    } else {
        unit.to_string()
    };
    let where_ = match lines.len() {
        0 => String::new(),
        1 => format!(" (line {})", lines[0]),
        n => {
            let shown: Vec<String> = lines.iter().take(8).map(u32::to_string).collect();
            format!(
                " (lines {}{})",
                shown.join(", "),
                if n > 8 { ", …" } else { "" }
            )
        }
    };
    Some(format!(
        "`{file}`: {skipped} {unit} skipped{where_}; the result leaves {} out",
        if skipped == 1 { "it" } else { "them" }
    ))
}

/// The model lines of [`FileSummary::render_text`].
fn model_text(m: &ModelSummary) -> String {
    let mut out = format!("  model: {} ({})\n", m.name, m.family.name());
    out.push_str(&format!(
        "  layers {} · hidden {} · heads {} · kv heads {} · head dim {} · MLP {} · vocabulary {}{}\n",
        m.layers,
        m.hidden_size,
        m.attention_heads,
        m.kv_heads,
        m.head_dim,
        m.ffn_hidden_size,
        m.vocab_size,
        if m.latent_attention {
            " · latent attention"
        } else {
            ""
        }
    ));
    if let (Some(e), Some(k), Some(s), Some(l)) =
        (m.experts, m.top_k, m.shared_experts, m.moe_layers)
    {
        out.push_str(&format!(
            "  experts: {e} routed, top-{k}, {s} shared · {l} MoE layer(s)\n"
        ));
    }
    out.push_str(&format!(
        "  parameters: {} total · {} active\n",
        group_digits(m.parameters_total),
        group_digits(m.parameters_active)
    ));
    out
}

/// `8030261248` → `8,030,261,248`.
fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn list_u32(v: &[u32]) -> String {
    if v.is_empty() {
        return "none".to_string();
    }
    let s: Vec<String> = v.iter().take(64).map(u32::to_string).collect();
    if v.len() > 64 {
        format!("{} … ({} in all)", s.join(" "), v.len())
    } else {
        s.join(" ")
    }
}

/// The JSON the CLI prints for `inspect --json`: one object per file with
/// the summary's fields plus `warnings` and `errors` as arrays of strings,
/// and, for every format whose job is known, the parallel configuration at
/// top level: `tp`, `pp`, `dp`, `ep`, `world`, `micro_batches` (= `ga`) and
/// `records` (items read: records, rows, op lines or entries). SimAI
/// workloads keep their header's values for the keys the header has.
pub fn to_json(summaries: &[FileSummary]) -> serde_json::Value {
    serde_json::Value::Array(
        summaries
            .iter()
            .map(|s| {
                let mut v = serde_json::to_value(s).unwrap_or(serde_json::Value::Null);
                if let Some(obj) = v.as_object_mut() {
                    // The job's parallel configuration at top level for every
                    // format (SimAI's header values, already there, are kept).
                    if let Some(j) = &s.job {
                        let p = &j.parallel;
                        let top: [(&str, serde_json::Value); 8] = [
                            ("tp", p.tp.into()),
                            ("pp", p.pp.into()),
                            ("dp", p.dp.into()),
                            ("ep", p.ep.into()),
                            ("world", p.world.into()),
                            ("micro_batches", p.micro_batches.into()),
                            ("ga", p.micro_batches.into()),
                            ("records", s.read.into()),
                        ];
                        for (k, val) in top {
                            obj.entry(k).or_insert(val);
                        }
                    }
                    obj.insert("warnings".to_string(), s.warnings().into());
                    obj.insert("errors".to_string(), s.errors().into());
                }
                v
            })
            .collect(),
    )
}

/// The errors of the files that gave nothing usable (a run refuses them;
/// a usable file with skipped records is not among them).
pub fn failed_file_errors(summaries: &[FileSummary]) -> Vec<Diagnostic> {
    summaries
        .iter()
        .filter(|s| !s.is_usable())
        .flat_map(|s| s.diagnostics.iter().filter(|d| d.is_error()).cloned())
        .collect()
}

/// Settings for turning files into models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LoadOptions {
    pub neusight: neusight::NeusightOptions,
    pub kineto: kineto::KinetoOptions,
}

/// Summaries and models of a set of files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadedSet {
    /// One summary per input file, in input order.
    pub summaries: Vec<FileSummary>,
    /// Described jobs (SimAI, NeuSight), in input order.
    pub described: Vec<DescribedJob>,
    /// Parallel to `described`: the SimAI workload a job was converted from
    /// (its rows as written, which SimAI's closed-form bubble reads and the
    /// normalised model does not keep); `None` for NeuSight.
    pub simai_sources: Vec<Option<SimaiWorkload>>,
    /// Measured runs (one per Echo job, one per Optimus-Prime log).
    pub runs: Vec<MeasuredRun>,
    /// Models read from HuggingFace `config.json` files, in input order.
    pub models: Vec<ModelSpec>,
}

/// Detect (unless `forced`) and parse one file, summarising it.
pub fn inspect(file: &str, bytes: &[u8], forced: Option<Format>) -> FileSummary {
    let mut set = load_set(&[(file, bytes)], forced, &LoadOptions::default());
    set.summaries
        .pop()
        .unwrap_or_else(|| FileSummary::new(file))
}

/// Inspect several files together (Echo rank files of one job form one run);
/// one summary per file, in input order.
pub fn inspect_set(files: &[(&str, &[u8])], forced: Option<Format>) -> Vec<FileSummary> {
    load_set(files, forced, &LoadOptions::default()).summaries
}

/// [`inspect_set`], reporting progress within large files:
/// `progress(file index, bytes read, total bytes)` as
/// [`load_set_with_progress`] does.
pub fn inspect_set_with_progress(
    files: &[(&str, &[u8])],
    forced: Option<Format>,
    progress: &mut dyn FnMut(usize, u64, u64),
) -> Vec<FileSummary> {
    load_set_with_progress(files, forced, &LoadOptions::default(), progress).summaries
}

fn described_summary(job: &DescribedJob) -> JobSummary {
    let stored: u64 = job.stages.iter().map(|s| s.stored_op_count() as u64).sum();
    let first = job.stages.first();
    let block = first.and_then(|s| s.blocks.first());
    let fwd = block.map(|b| {
        b.ops
            .iter()
            .map(|o| o.forward.compute_ns)
            .fold(0u64, u64::saturating_add)
    });
    let bwd = block.map(|b| {
        b.ops
            .iter()
            .map(|o| {
                o.input_grad
                    .compute_ns
                    .saturating_add(o.weight_grad.compute_ns)
            })
            .fold(0u64, u64::saturating_add)
    });
    JobSummary {
        kind: "described",
        parallel: job.parallel.clone(),
        stages: job.parallel.pp,
        ops: stored,
        ops_per_iteration: first.map(|s| s.executed_op_count()),
        ops_per_micro_batch: block.map(|b| b.ops.len() as u64),
        before_ops: first.map(|s| s.before.len() as u64),
        after_ops: first.map(|s| s.after.len() as u64),
        distinct_blocks: first.map(|s| s.blocks.len() as u64),
        forward_ns_per_micro_batch: fwd,
        backward_ns_per_micro_batch: bwd,
    }
}

fn measured_summary(run: &MeasuredRun) -> JobSummary {
    let stages: std::collections::BTreeSet<u32> =
        run.ranks.iter().filter_map(|r| r.stage).collect();
    JobSummary {
        kind: "measured",
        parallel: run.parallel.clone(),
        stages: u32::try_from(stages.len()).unwrap_or(u32::MAX),
        ops: run.op_count() as u64,
        ops_per_iteration: None,
        ops_per_micro_batch: None,
        before_ops: None,
        after_ops: None,
        distinct_blocks: None,
        forward_ns_per_micro_batch: None,
        backward_ns_per_micro_batch: None,
    }
}

/// Fill the summary of `file`, one of the `files` of a multi-file
/// measured run: the run's job, the ranks this file holds, the set's files,
/// and, on the first file only (`first`), the run-level diagnostics (those
/// after the files' own `file_diag_count`).
fn fill_run_file(
    s: &mut FileSummary,
    run: &MeasuredRun,
    file: &str,
    files: &[String],
    first: bool,
    file_diag_count: usize,
) {
    fill_run(s, run);
    s.file_ranks = Some(
        run.ranks
            .iter()
            .filter(|r| r.file == file)
            .map(|r| r.rank)
            .collect(),
    );
    if files.len() > 1 {
        s.run_files = Some(files.to_vec());
    }
    if first {
        s.diagnostics
            .extend(run.diagnostics.iter().skip(file_diag_count).cloned());
    }
}

fn fill_run(s: &mut FileSummary, run: &MeasuredRun) {
    s.job = Some(measured_summary(run));
    s.ranks = Some(run.ranks.iter().map(|r| r.rank).collect());
    s.iteration_times_ns = Some(run.iterations.iter().map(|i| i.duration_ns).collect());
    s.iterations_covered = Some(
        run.iterations
            .iter()
            .map(|i| i.iterations_covered)
            .collect(),
    );
}

/// Detect (unless `forced`) and parse every file; Echo traces with the same
/// job key ([`echo::job_key`]) are assembled into one measured run, whose
/// run-level diagnostics (missing or duplicate ranks, ...) are attached to
/// the first of its files.
pub fn load_set(
    files: &[(&str, &[u8])],
    forced: Option<Format>,
    options: &LoadOptions,
) -> LoadedSet {
    load_set_with_progress(files, forced, options, &mut |_, _, _| {})
}

/// [`load_set`], calling `progress(file index, bytes read, total bytes)`
/// while a PyTorch profiler trace is read (every
/// [`kineto::PROGRESS_EVERY_EVENTS`] events and at its end; bytes of the
/// decompressed text).
pub fn load_set_with_progress(
    files: &[(&str, &[u8])],
    forced: Option<Format>,
    options: &LoadOptions,
    progress: &mut dyn FnMut(usize, u64, u64),
) -> LoadedSet {
    let mut loader = SetLoader::new(forced, options);
    for (i, (file, bytes)) in files.iter().enumerate() {
        loader.add(file, bytes, &mut |done, total| progress(i, done, total));
    }
    loader.finish()
}

/// [`load_set`] one file at a time: [`SetLoader::add`] parses a file and
/// keeps only what it read (a caller can drop each file's bytes before
/// reading the next: a set of large files never has to be in memory at
/// once), [`SetLoader::finish`] groups the set (Echo jobs, the Kineto run,
/// the Chakra run) as [`load_set`] does. Adding the files of a set in order
/// and finishing gives exactly `load_set` of that set.
pub struct SetLoader {
    forced: Option<Format>,
    options: LoadOptions,
    summaries: Vec<FileSummary>,
    described: Vec<DescribedJob>,
    simai_sources: Vec<Option<SimaiWorkload>>,
    runs: Vec<MeasuredRun>,
    models: Vec<ModelSpec>,
    /// Echo traces waiting to be grouped: (summary index, trace).
    echo_traces: Vec<(usize, echo::EchoTrace)>,
    /// Kineto traces (all of a set form one run): (summary index, trace).
    kineto_traces: Vec<(usize, kineto::KinetoTrace)>,
    /// Chakra execution traces (binary; all of a set form one run).
    chakra_traces: Vec<(usize, chakra::ChakraTrace)>,
    /// Chakra files already parsed, reused for ranks running the same
    /// program ([`chakra::reuse`]).
    chakra_cache: chakra::reuse::ParseCache,
    /// ASTRA-sim communicator-group files (one per Chakra set).
    chakra_groups: Vec<(usize, chakra::groups::CommGroups)>,
}

impl SetLoader {
    pub fn new(forced: Option<Format>, options: &LoadOptions) -> Self {
        SetLoader {
            forced,
            options: *options,
            summaries: Vec::new(),
            described: Vec::new(),
            simai_sources: Vec::new(),
            runs: Vec::new(),
            models: Vec::new(),
            echo_traces: Vec::new(),
            kineto_traces: Vec::new(),
            chakra_traces: Vec::new(),
            chakra_cache: chakra::reuse::ParseCache::default(),
            chakra_groups: Vec::new(),
        }
    }

    /// The summaries of the files added so far (a file's is complete once
    /// the set is finished: a multi-file run's fields are filled then).
    pub fn summaries(&self) -> &[FileSummary] {
        &self.summaries
    }

    /// Detect (unless forced) and parse one file of the set, calling
    /// `progress(bytes read, total bytes)` while a PyTorch profiler trace
    /// is read.
    pub fn add(&mut self, file: &str, bytes: &[u8], progress: &mut dyn FnMut(u64, u64)) {
        let mut summary = FileSummary::new(file);
        // A Chakra set forced to `chakra-et` may hold its comm_groups.json:
        // that file is detected, not forced.
        let forced = match self.forced {
            Some(Format::ChakraEt)
                if chakra::looks_like(bytes).is_none()
                    && std::str::from_utf8(bytes)
                        .ok()
                        .and_then(|t| chakra::groups::looks_like(t, t))
                        .is_some() =>
            {
                None
            }
            f => f,
        };
        // Chakra ET files are binary protobuf: detected on bytes, before
        // any text decoding.
        let chakra_seen = if forced.is_none() {
            chakra::looks_like(bytes)
        } else {
            None
        };
        if forced == Some(Format::ChakraEt) || chakra_seen.is_some() {
            if let Some((confidence, _)) = chakra_seen {
                summary.confidence = Some(confidence);
            } else {
                summary.forced = true;
                if chakra::looks_like(bytes).is_none() {
                    summary.diagnostics.push(Diagnostic::warning(format!(
                        "format forced to {}, but the content does not look like it",
                        Format::ChakraEt.name()
                    )));
                }
            }
            summary.format = Some(Format::ChakraEt);
            summary.unit = "nodes";
            let t = self.chakra_cache.parse(file, bytes);
            summary.read = t.node_count() as u64;
            summary.skipped = t.nodes_skipped;
            self.chakra_traces.push((self.summaries.len(), t));
            self.summaries.push(summary);
            return;
        }
        // A gzip'd file (Kineto traces often are) is read decompressed.
        let gzip = kineto::is_gzip(bytes);
        let (unzipped, mut gzip_error) = if gzip {
            let (b, e) = kineto::gunzip(file, bytes);
            (Some(b), e)
        } else {
            (None, None)
        };
        let bytes: &[u8] = unzipped.as_deref().unwrap_or(bytes);
        let text = match formats::decode_text(file, bytes) {
            Ok((text, lossy)) => {
                if lossy {
                    summary.diagnostics.push(Diagnostic::warning(format!(
                        "`{file}` is not valid UTF-8; invalid bytes were replaced with U+FFFD"
                    )));
                }
                text
            }
            Err(d) => {
                summary.diagnostics.extend(gzip_error.take());
                summary.diagnostics.push(d);
                self.summaries.push(summary);
                return;
            }
        };
        let format = match forced {
            Some(f) => {
                summary.forced = true;
                let best = formats::detect_all(&text).into_iter().next();
                let fits = formats::detect_all(&text)
                    .iter()
                    .any(|d| d.format == f && d.confidence >= Detection::THRESHOLD);
                if !fits {
                    let looks = best.map_or("nothing known".to_string(), |d| {
                        format!("{} ({}%)", d.format.name(), d.confidence)
                    });
                    summary.diagnostics.push(Diagnostic::warning(format!(
                        "format forced to {}, but the content does not look like it (it looks like {looks})",
                        f.name()
                    )));
                }
                f
            }
            None => match formats::detect_with_confidence(file, &text) {
                Ok(d) => {
                    summary.confidence = Some(d.confidence);
                    d.format
                }
                Err(d) => {
                    summary.diagnostics.extend(gzip_error.take());
                    summary.diagnostics.push(d);
                    self.summaries.push(summary);
                    return;
                }
            },
        };
        if format != Format::KinetoTrace {
            summary.diagnostics.extend(gzip_error.take());
        }
        summary.format = Some(format);
        match format {
            Format::SimaiWorkload => {
                summary.unit = "records";
                match simai::parse(file, &text) {
                    Ok(w) => {
                        let h = &w.header;
                        summary.simai = Some(SimaiSummary {
                            policy: h.policy.as_str(),
                            tp: h.tp,
                            pp: h.pp,
                            ep: h.ep,
                            vpp: h.vpp,
                            ga: h.ga,
                            world: h.world,
                            pp_comm_bytes: h.pp_comm_bytes,
                            records: w.records.len() as u64,
                            declared_records: w.declared_records,
                            skipped_records: w.skipped_records,
                        });
                        summary.read = w.records.len() as u64;
                        summary.skipped = u64::from(w.skipped_records);
                        let job = simai::to_model(file, &w);
                        summary.job = Some(described_summary(&job));
                        summary.diagnostics.extend(job.diagnostics.iter().cloned());
                        self.described.push(job);
                        self.simai_sources.push(Some(w));
                    }
                    Err(d) => summary.diagnostics.push(d),
                }
            }
            Format::NeusightTsv => {
                summary.unit = "rows";
                match neusight::parse(file, &text) {
                    Ok(t) => {
                        summary.read = t.rows.len() as u64;
                        summary.skipped = u64::from(t.skipped_rows);
                        let job = neusight::to_model(file, &t, &self.options.neusight);
                        summary.job = Some(described_summary(&job));
                        summary.diagnostics.extend(job.diagnostics.iter().cloned());
                        self.described.push(job);
                        self.simai_sources.push(None);
                    }
                    Err(d) => summary.diagnostics.push(d),
                }
            }
            Format::OptimusPrimeLog => {
                summary.unit = "forward-time entries";
                match optimus::parse(file, &text) {
                    Ok(log) => {
                        summary.read = log.steps.iter().map(|s| s.entries.len() as u64).sum();
                        summary.skipped =
                            u64::from(log.unattributed_entries) + u64::from(log.unreadable);
                        let run = optimus::to_run(file, &log);
                        fill_run(&mut summary, &run);
                        summary.file_ranks.clone_from(&summary.ranks);
                        summary.diagnostics.extend(run.diagnostics.iter().cloned());
                        self.runs.push(run);
                    }
                    Err(d) => summary.diagnostics.push(d),
                }
            }
            Format::HfConfig => {
                summary.unit = "keys";
                match hf::parse(file, &text) {
                    Ok((model, warnings)) => {
                        summary.read = top_level_key_count(&text);
                        summary.model = Some(ModelSummary::of(&model));
                        summary.diagnostics.extend(warnings);
                        self.models.push(model);
                    }
                    Err(ds) => summary.diagnostics.extend(ds),
                }
            }
            // Binary Chakra files are read before text decoding (above);
            // text never detects as Chakra.
            Format::ChakraEt => {
                summary.diagnostics.push(Diagnostic::error(format!(
                    "`{file}` is text, not a binary Chakra execution trace"
                )));
            }
            Format::ChakraCommGroups => {
                summary.unit = "groups";
                let g = chakra::groups::parse(file, &text);
                summary.read = g.groups.len() as u64;
                summary.diagnostics.extend(g.diagnostics.iter().cloned());
                self.chakra_groups.push((self.summaries.len(), g));
            }
            Format::KinetoTrace => {
                // What counts is the GPU work kept: a trace without any
                // (CPU-only profiling, a Chrome trace of something else)
                // has nothing to analyse and fails, saying so.
                summary.unit = "GPU events";
                match kineto::parse_text_with_progress(file, &text, gzip_error.take(), progress) {
                    Ok(mut t) => {
                        t.gzip = gzip;
                        summary.read = t.ops.len() as u64;
                        summary.skipped = t.counts.skipped;
                        summary.diagnostics.extend(t.diagnostics.iter().cloned());
                        self.kineto_traces.push((self.summaries.len(), t));
                    }
                    Err(d) => summary.diagnostics.push(d),
                }
            }
            Format::EchoTrace => {
                summary.unit = "op lines";
                match echo::parse(file, &text) {
                    Ok(t) => {
                        summary.read = t.ops.len() as u64;
                        summary.skipped = u64::from(t.skipped_lines);
                        summary.diagnostics.extend(t.diagnostics.iter().cloned());
                        self.echo_traces.push((self.summaries.len(), t));
                    }
                    Err(d) => summary.diagnostics.push(d),
                }
            }
        }
        self.summaries.push(summary);
    }

    /// Group the files added into runs and judge each file usable or not:
    /// the [`LoadedSet`].
    pub fn finish(mut self) -> LoadedSet {
        // Group Echo traces into self.runs by job key (first appearance order).
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for (k, (_, t)) in self.echo_traces.iter().enumerate() {
            let key = echo::job_key(&t.file);
            if !groups.contains_key(&key) {
                order.push(key.clone());
            }
            groups.entry(key).or_default().push(k);
        }
        for key in order {
            let members = groups.remove(&key).unwrap_or_default();
            let traces: Vec<echo::EchoTrace> = members
                .iter()
                .map(|k| self.echo_traces[*k].1.clone())
                .collect();
            let run = echo::to_run(&traces);
            let file_diag_count: usize = traces.iter().map(|t| t.diagnostics.len()).sum();
            let files: Vec<String> = traces.iter().map(|t| t.file.clone()).collect();
            for (pos, k) in members.iter().enumerate() {
                let (idx, trace) = &self.echo_traces[*k];
                if let Some(s) = self.summaries.get_mut(*idx) {
                    fill_run_file(s, &run, &trace.file, &files, pos == 0, file_diag_count);
                }
            }
            self.runs.push(run);
        }

        // Kineto traces of the set form one run.
        if !self.kineto_traces.is_empty() {
            // Moved, not copied: a trace's kept events may be large.
            let (indices, traces): (Vec<usize>, Vec<kineto::KinetoTrace>) =
                self.kineto_traces.into_iter().unzip();
            let (run, choice) = kineto::to_run(&traces, &self.options.kineto);
            let file_diag_count: usize = traces.iter().map(|t| t.diagnostics.len()).sum();
            let files: Vec<String> = traces.iter().map(|t| t.file.clone()).collect();
            for (pos, (idx, t)) in indices.iter().zip(&traces).enumerate() {
                let Some(s) = self.summaries.get_mut(*idx) else {
                    continue;
                };
                fill_run_file(s, &run, &t.file, &files, pos == 0, file_diag_count);
                s.kineto = Some(KinetoSummary {
                    rank: t.rank,
                    world: t.world,
                    iterations: t.step_numbers(),
                    iteration: choice.chosen,
                    kernels: t.counts.kernels,
                    memcpy: t.counts.memcpy,
                    memset: t.counts.memset,
                    collectives: t.counts.collectives,
                    gpu_annotations: t.counts.gpu_annotations,
                    gzip: t.gzip,
                    backend: t.backend.clone(),
                    device: t.device_name.clone(),
                });
            }
            self.runs.push(run);
        }

        // A set takes one communicator-group file; the others are refused.
        for (idx, g) in self.chakra_groups.iter().skip(1) {
            if let Some(s) = self.summaries.get_mut(*idx) {
                s.diagnostics.push(
                    Diagnostic::error(format!(
                        "`{}` is a second communicator-group file for the Chakra set (the first is `{}`): not used",
                        g.file, self.chakra_groups[0].1.file
                    ))
                    .with_hint("give one comm_groups.json with the .et files of its job"),
                );
            }
        }
        let groups = self.chakra_groups.first();
        // Chakra traces of the set form one run.
        if !self.chakra_traces.is_empty() {
            let (indices, traces): (Vec<usize>, Vec<chakra::ChakraTrace>) =
                self.chakra_traces.into_iter().unzip();
            let run = chakra::to_run(&traces, groups.map(|(_, g)| g));
            let file_diag_count: usize = traces.iter().map(|t| t.diagnostics.len()).sum();
            let files: Vec<String> = traces.iter().map(|t| t.file.clone()).collect();
            // Run-level diagnostics located in the groups file go to its summary.
            let in_groups = |d: &Diagnostic| {
                groups.is_some_and(|(_, g)| d.location.as_ref().is_some_and(|l| l.file == g.file))
            };
            for (pos, (idx, t)) in indices.iter().zip(&traces).enumerate() {
                if let Some(s) = self.summaries.get_mut(*idx) {
                    s.diagnostics.extend(t.diagnostics.iter().cloned());
                    fill_run_file(s, &run, &t.file, &files, pos == 0, file_diag_count);
                    s.diagnostics.retain(|d| !in_groups(d));
                }
            }
            if let Some((idx, _)) = groups {
                if let Some(s) = self.summaries.get_mut(*idx) {
                    fill_run(s, &run);
                    s.run_files = Some(run.files.clone());
                    s.diagnostics.extend(
                        run.diagnostics
                            .iter()
                            .skip(file_diag_count)
                            .filter(|d| in_groups(d))
                            .cloned(),
                    );
                }
            }
            self.runs.push(run);
        } else if let Some((idx, g)) = groups {
            if let Some(s) = self.summaries.get_mut(*idx) {
                s.diagnostics.push(
                    Diagnostic::error(format!(
                        "`{}` is ASTRA-sim's communicator-group file: it is read with the Chakra .et files of its job, and none is given",
                        g.file
                    ))
                    .with_hint("give the .et files (one per rank) and this comm_groups.json together"),
                );
            }
        }

        for s in &mut self.summaries {
            s.usable = s.format.is_some() && ((s.job.is_some() && s.read > 0) || s.model.is_some());
            // A communicator-group file is usable with its Chakra set, without errors.
            if s.format == Some(Format::ChakraCommGroups) && s.has_errors() {
                s.usable = false;
            }
            // A file that failed says why, even when the parser only warned
            // (a log cut before its config or its first entry).
            if !s.usable && s.format.is_some() && !s.has_errors() {
                let why = if s.job.is_none() {
                    "its parallel configuration is missing or unreadable".to_string()
                } else {
                    format!("no {} could be read", s.unit)
                };
                s.diagnostics.push(
                    Diagnostic::error(format!("nothing to simulate in `{}`: {why}", s.file))
                        .with_hint("check that the file is complete (it may be truncated); the warnings above say what was found"),
                );
            }
        }
        LoadedSet {
            summaries: self.summaries,
            described: self.described,
            simai_sources: self.simai_sources,
            runs: self.runs,
            models: self.models,
        }
    }
}

/// Keys of the top-level object of a JSON text that parsed.
fn top_level_key_count(text: &str) -> u64 {
    serde_json::from_str::<serde_json::Value>(text.strip_prefix('\u{feff}').unwrap_or(text))
        .ok()
        .and_then(|v| v.as_object().map(|o| o.len() as u64))
        .unwrap_or(0)
}
