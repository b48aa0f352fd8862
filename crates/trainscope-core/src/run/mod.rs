//! The one high-level entry of the event mode, shared by the CLI and the web
//! page so both give identical numbers: [`run_files`] takes the input files'
//! names and bytes, the simulation settings ([`SimConfig`]) and the run
//! options ([`RunOptions`]) and returns everything to show ([`RunOutput`]):
//! the simulation result (timeline and summary), for measured runs the
//! measured timeline, the measured-vs-simulated comparison and the
//! calibration, and every warning. [`convert_files`] returns a measured
//! run's timeline without simulating. [`RunOutput::report_json`] is the JSON
//! object `trainscope simulate --json` prints.
//!
//! What runs (exactly one input per call; Echo rank files of one job are one
//! input):
//! - a described job (SimAI/AICB workload, NeuSight TSV): adapted with
//!   [`JobSpec::from_described`] and simulated with the configured schedule
//!   (a SimAI workload also gets its rows as written for SimAI's
//!   closed-form bubble, [`SimaiBubbleBasis`]);
//! - an Echo trace: replayed ([`replay::echo_job`]: every traced op as
//!   measured, the measured step order, collectives and transfers re-costed
//!   with the network inferred from the trace, [`crate::replay::infer`]; unmeasured
//!   stages scaled to the measured ranks' waits, [`replay::fit_copies`]),
//!   and so are PyTorch profiler (Kineto) traces, all files of a set one
//!   run, one `ProfilerStep` ([`replay::kineto_job`]),
//!   compared with the measured iteration; explicit network settings
//!   ([`RunOptions::network_overrides`]) replace inferred values (what-if);
//! - an Optimus-Prime log: rebuilt ([`replay::optimus_job`]: per-stage
//!   forward per micro-batch, backward = `backward_factor` x forward, default
//!   2) and simulated with the configured schedule (1F1B, the logged one, by
//!   default), compared with the measured ms/batch.
//!
//! A HuggingFace `config.json` (`hf-config`) describes a model, not a job:
//! it needs a training setup (parallelism, batch, GPU), so [`run_files`]
//! refuses it with a usage error pointing at `trainscope simulate --model`.
//!
//! Calibration ([`RunOptions::calibrate`], measured runs): the compute scale
//! is fitted ([`crate::engine::calibrate_compute_scale`]) with the settings as
//! logged (for Optimus-Prime: 1F1B, one chunk, the logged micro-batch
//! count; for Echo the inferred network without overrides; the cluster
//! settings as given) so the prediction meets the measured iteration time;
//! then the given settings are simulated with that scale (a what-if when
//! they differ from the logged ones). It fits only what the replay leaves:
//! the report gives the uncalibrated error next to the scale.
//!
//! Everything is deterministic: same bytes, settings and options give the
//! same output, natively and in wasm. The inputs ([`SimConfig`],
//! [`RunOptions`]) serialise and deserialise; the output ([`RunOutput`])
//! serialises whole, timelines included (a [`crate::timeline::Timeline`] deserialises
//! back to an equal value), for a web worker to post it.

use crate::analysis::{analyse, Analysis};
use crate::analytical::RatioTables;
use crate::diag::{merge_by_file, Diagnostic, FileDiagnostic};
use crate::engine::described::DescribedOptions;
use crate::engine::schedule::ScheduleKind;
use crate::engine::simai_cost::{cost_for, SIMAI_P2P_NOTE};
use crate::engine::spec::{Parallelism, SimaiBubbleBasis};
use crate::engine::summary::{ExposedComm, StageSummary};
use crate::engine::CollectiveCost;
use crate::engine::{
    calibrate_compute_scale, simulate_with, Algorithm, JobSpec, SimConfig, SimError,
};
use crate::engine::{SimResult, Summary};
use crate::formats::simai::SimaiWorkload;
use crate::inspect::{failed_file_errors, load_set, LoadOptions, LoadedSet};
use crate::limits;
use crate::replay::infer::{FitBasis, GroupFit, InferredCost, InferredNetwork, NetworkOverrides};
use crate::replay::measured::{measured_figures, measured_timeline, MeasuredTimeline};
use crate::replay::{self, AssumedRank, ByKind, CopyScales, KINDS};
use crate::timeline::Timeline;
use crate::workload::{DescribedJob, MeasuredRun, ParallelConfig};
use crate::{formats::neusight, workload::Format};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Version of [`RunOutput`]'s JSON layout ([`RunOutput::report_json`]).
pub const RUN_SCHEMA_VERSION: u32 = 1;

/// Options of [`run_files`] besides the simulation settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunOptions {
    /// Parse every file as this format instead of detecting it.
    pub format: Option<Format>,
    /// NeuSight TSVs: how many times the model repeats the described block
    /// (default [`neusight::DEFAULT_BLOCK_REPEATS`], GPT-2-large).
    pub block_repeats: Option<u32>,
    /// Described jobs: the world size (GPUs). SimAI workloads: replaces
    /// the header's `all_gpus`; NeuSight TSVs (data parallel): the number of
    /// replicas. Ignored (warned) for measured runs.
    pub world: Option<u32>,
    /// Kineto traces: the `ProfilerStep` number to analyse (default: the
    /// last one every rank has).
    pub iteration: Option<u32>,
    /// Measured runs: fit the compute scale to the measurement first.
    pub calibrate: bool,
    /// Measured runs: the network settings given explicitly; each replaces,
    /// for its link, what the replay inferred from the trace (a what-if).
    pub network_overrides: NetworkOverrides,
    /// Measured runs replayed per rank (Kineto, Echo, Chakra): one rank's
    /// compute slowed by a percentage (a what-if straggler).
    pub slow_rank: Option<SlowRank>,
    /// The what-if blame ([`crate::whatif`]): per-rank replays against
    /// every rank's compute at the ranks' mean; other jobs a sensitivity
    /// table with each stage slowed by this factor in turn (`None`: no
    /// blame; injected faults, [`SimConfig::faults`], always get theirs).
    pub blame: Option<f64>,
    /// Bandwidth-efficiency tables for `Algorithm::Simai` (SimAI's built-in
    /// ones when `None`).
    #[serde(skip)]
    pub ratio_tables: Option<RatioTables>,
    /// Measured runs: the caller reads the report, not the measured
    /// timeline (the CLI's `simulate`): [`RunOutput::measured`] holds its
    /// figures and warnings without the timeline
    /// ([`crate::replay::measured::measured_figures`]; every other output
    /// equal). The page draws the timeline: `false`.
    pub report_only: bool,
}

/// A what-if straggler: every compute piece of `rank`'s replay (the
/// measured GPU or host time between its collectives) takes
/// `1 + percent / 100` times as long; its collectives then start later and
/// the other members wait for it as the network model says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SlowRank {
    pub rank: u32,
    pub percent: f64,
}

impl SlowRank {
    /// `R:PCT` (`5:30` = rank 5 thirty percent slower), as the CLI takes it.
    pub fn parse(text: &str) -> Result<SlowRank, String> {
        let (r, p) = text
            .split_once(':')
            .ok_or_else(|| format!("`{text}` is not RANK:PERCENT (e.g. `5:30`)"))?;
        let rank = r
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("`{r}` in `{text}` is not a rank (a whole number)"))?;
        let percent = p
            .trim()
            .trim_end_matches('%')
            .parse::<f64>()
            .map_err(|_| format!("`{p}` in `{text}` is not a percentage"))?;
        let s = SlowRank { rank, percent };
        limits::slowdown_percent(percent)?;
        Ok(s)
    }

    /// The compute factor, `1 + percent / 100`.
    pub fn factor(&self) -> f64 {
        1.0 + self.percent / 100.0
    }
}

/// What a [`SlowRank`] what-if did ([`RunOutput::slow_rank`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowRankReport {
    pub rank: u32,
    pub percent: f64,
    /// The replay's iteration with the same settings and no slowdown, ns.
    pub baseline_iteration_time_ns: u64,
    /// With the rank slowed (the reported simulation), ns.
    pub iteration_time_ns: u64,
    /// `iteration_time_ns - baseline_iteration_time_ns`.
    pub difference_ns: i64,
}

impl RunOptions {
    /// Check the options a user gives ([`limits`]: the world as the
    /// SimAI-compatible mode and the page check it, the NeuSight block
    /// repeat count). [`run_files`] calls it first.
    pub fn validate(&self) -> Result<(), SimError> {
        if let Some(w) = self.world {
            limits::count(w, limits::MAX_WORLD).map_err(|reason| SimError::InvalidConfig {
                name: "world",
                reason,
            })?;
        }
        if let Some(f) = self.blame {
            crate::engine::faults::check_factor(f).map_err(|reason| SimError::InvalidConfig {
                name: "blame",
                reason,
            })?;
        }
        if let Some(s) = &self.slow_rank {
            limits::slowdown_percent(s.percent).map_err(|reason| SimError::InvalidConfig {
                name: "slow_rank",
                reason,
            })?;
        }
        if let Some(n) = self.block_repeats {
            limits::count(n, neusight::MAX_BLOCK_REPEATS).map_err(|reason| {
                SimError::InvalidConfig {
                    name: "block_repeats",
                    reason,
                }
            })?;
        }
        Ok(())
    }
}

/// Why [`run_files`] produced no output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The inputs do not make one simulation (none, several, or the wrong
    /// kind for the request).
    #[error("{0}")]
    Usage(String),
    /// A file could not be read: its error diagnostics.
    #[error("{}", .0.first().map(|d| d.message.as_str()).unwrap_or("an input failed to parse"))]
    Parse(Vec<Diagnostic>),
    /// The settings or the job cannot be simulated.
    #[error(transparent)]
    Sim(#[from] SimError),
}

impl RunError {
    /// The CLI's exit code: 2 usage, 3 parse failure, 4 invalid
    /// configuration.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Usage(_) => 2,
            RunError::Parse(_) => 3,
            RunError::Sim(_) => 4,
        }
    }

    /// What to show: the parse diagnostics, or one error with a hint.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            RunError::Usage(m) => vec![Diagnostic::error(m.clone())],
            RunError::Parse(d) => d.clone(),
            RunError::Sim(e) => vec![e.to_diagnostic()],
        }
    }
}

/// One op kind of a measured-vs-simulated comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KindComparison {
    /// One of [`replay::KINDS`].
    pub kind: &'static str,
    /// Measured time of this kind over the compared ranks, ns (`None`: the
    /// input does not measure it).
    pub measured_ns: Option<u64>,
    /// Simulated time of this kind over the same ranks, ns.
    pub simulated_ns: u64,
    /// simulated - measured, ns.
    pub difference_ns: Option<i64>,
}

/// Measured vs simulated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The run's measured iteration time (steady iterations), ns.
    pub measured_iteration_time_ns: u64,
    /// The simulated iteration time, ns.
    pub simulated_iteration_time_ns: u64,
    /// simulated - measured, ns.
    pub difference_ns: i64,
    /// 100 x (simulated - measured) / measured.
    pub error_percent: f64,
    /// The measured ranks the per-kind figures cover.
    pub ranks: Vec<u32>,
    /// Per op kind, in [`replay::KINDS`] order.
    pub by_kind: Vec<KindComparison>,
}

/// A fitted compute scale.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    /// Every compute duration is multiplied by this.
    pub compute_scale: f64,
    /// The measured iteration time it was fitted to, ns.
    pub measured_iteration_time_ns: u64,
    /// The simulated iteration time with the scale under the logged
    /// settings, ns.
    pub calibrated_iteration_time_ns: u64,
    /// 100 x (calibrated - measured) / measured.
    pub error_percent: f64,
    /// The simulated iteration time before calibration (scale 1, the
    /// logged settings), ns: what the replay explains by itself.
    pub uncalibrated_iteration_time_ns: u64,
    /// 100 x (uncalibrated - measured) / measured.
    pub uncalibrated_error_percent: f64,
    /// Simulations the fit ran.
    pub simulations: u32,
    /// True when the reported simulation uses settings other than the ones
    /// calibrated on (a what-if).
    pub what_if: bool,
    /// The schedule the calibration ran.
    pub schedule: &'static str,
}

/// What an Echo replay inferred from its trace ([`crate::replay::infer`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InferredReport {
    /// How to read it (one line).
    pub note: &'static str,
    /// Whether the ranks' clocks look shared (else nothing was split).
    pub clocks_shared: bool,
    /// Collectives and transfers split into waiting and transfer by the
    /// measured start skew.
    pub split_occurrences: u32,
    /// Complete groups whose members' times did not overlap (not split).
    pub inconsistent_occurrences: u32,
    /// Per group and direction: bandwidth, latency, samples, fit error.
    pub groups: Vec<GroupFit>,
    /// The settings that replaced inferred values (what-if).
    pub overridden: NetworkOverrides,
    /// Partial jobs: how the stages simulated as copies were scaled to the
    /// measured ranks' waits.
    pub unmeasured_stages: Option<CopyScales>,
}

/// The note on every Echo replay.
pub const ECHO_REPLAY_NOTE: &str = "replay: every traced op keeps its measured duration (compute between collectives, get_batch, loss_func, optimizer_step, the host time between ops, collectives over a group of one such as a DP all-reduce with DP 1); collectives and stage-to-stage transfers are split into waiting and transfer by the measured start skew, re-costed with the bandwidth and latency inferred per group from the trace (`inferred`), and their waiting is re-created by the simulation";

/// The note on every Kineto replay.
pub const KINETO_REPLAY_NOTE: &str = "replay of the chosen ProfilerStep: the GPU time between one collective and the next (kernels, copies, idle) keeps its measured duration, split into forward, backward and optimizer where the trace's launches tell them apart; each NCCL collective over the data-parallel group is split into waiting and transfer by the measured start skew and re-costed with the bandwidth and latency inferred from the traces (`inferred`), its waiting re-created by the simulation; a collective that ran beside other streams' work (gradient all-reduces overlapping the backward) is replayed alongside that work, not in the rank's chain";

/// The note of `inferred`.
pub const INFERRED_NOTE: &str = "effective bandwidth (GB/s = 2^30 bytes/s, on the network model's bus bytes) and latency per group and direction, least squares over the traced transfers (waiting split off by start skew where every member is traced); explicit network settings override them per link";

/// The note on every Optimus-Prime replay.
pub const FORWARD_ONLY_NOTE: &str = "Optimus-Prime logs time forward passes only: backward (estimated as backward_factor x forward) and communication are not measured, so the uncalibrated replay is not expected to meet the measurement; use calibration (--calibrate) to fit the compute scale";

/// What calibration changed, in words.
fn calibration_note(format: Format, uncalibrated_percent: f64, scale: f64) -> String {
    let what = if format == Format::OptimusPrimeLog {
        "the forward-only log leaves backward and communication to estimates"
    } else {
        "the replay re-creates every traced op and the inferred network"
    };
    format!(
        "calibration fits only what the replay does not explain: {what}; uncalibrated it is {uncalibrated_percent:+.2}% off the measurement, and the compute scale that closes the gap is {scale:.4}"
    )
}

/// Notes on the groups that could not be split.
fn basis_notes(net: &InferredNetwork) -> Vec<String> {
    let names = |b: FitBasis| -> Vec<String> {
        net.fits
            .iter()
            .filter(|f| f.basis == b)
            .map(|f| format!("{} {}", f.group.name(), f.direction.name()))
            .collect()
    };
    let mut out = Vec::new();
    let least = names(FitBasis::LeastWaiting);
    if !least.is_empty() {
        out.push(format!(
            "{}: waiting cannot be split off (not every member of the group is traced, or the members' traces do not match); the shortest occurrence of each message size (an upper bound of the transfer) sets the bandwidth",
            least.join(", ")
        ));
    }
    let none = names(FitBasis::NotIdentifiable);
    if !none.is_empty() {
        out.push(format!(
            "{}: each message size is traced once, with waiting for untraced members that cannot be told apart from the transfer; costed by the configured network",
            none.join(", ")
        ));
    }
    out
}

/// One note per overridden setting of a replay with an inferred network.
fn override_notes(net: &InferredNetwork, o: NetworkOverrides, c: &SimConfig) -> Vec<String> {
    let mut out = Vec::new();
    if o.algorithm {
        out.push(format!(
            "what-if: the collective algorithm you set ({}) costs every collective and transfer on the configured cluster; nothing inferred from the trace is used",
            c.algorithm.name()
        ));
        return out;
    }
    let fitted = |f: &GroupFit| {
        f.bandwidth_gbps.map(|bw| {
            let latency = if f.latency_identified {
                format!(", {:.1} us", f.latency_ns as f64 / 1000.0)
            } else {
                String::new()
            };
            format!(
                "{} {} {bw:.1} GB/s{latency}",
                f.group.name(),
                f.direction.name()
            )
        })
    };
    let list: Vec<String> = net.fits.iter().filter_map(fitted).collect();
    let inferred = if list.is_empty() {
        String::new()
    } else {
        format!(" (inferred: {})", list.join("; "))
    };
    let n = &c.network;
    if o.nvlink_gbps {
        out.push(format!(
            "what-if: the NVLink bandwidth you set ({} GB/s) replaces the inferred bandwidth of every group inside one node{inferred}",
            n.nvlink_gbps
        ));
    }
    if o.nic_gbps {
        out.push(format!(
            "what-if: the NIC settings you set ({} NIC(s) of {} GB/s per node, oversubscription {}) replace the inferred bandwidth of every group across nodes{inferred}",
            n.nics_per_node, n.nic_gbps, n.oversubscription
        ));
    }
    if o.latency {
        out.push(format!(
            "what-if: the latency you set ({} / {} us per step, NVLink / NIC) replaces the inferred latency of every group{inferred}",
            n.nvlink_latency_ns as f64 / 1000.0,
            n.nic_latency_ns as f64 / 1000.0
        ));
    }
    out
}

/// Everything one event-mode run produces (see the module documentation).
#[derive(Debug, Clone, Serialize)]
pub struct RunOutput {
    /// [`RUN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `event`.
    pub mode: &'static str,
    /// `described` or `measured`.
    pub kind: &'static str,
    /// The input's format.
    pub format: Format,
    /// The input files the simulation used.
    pub files: Vec<String>,
    /// Parallel sizes of the simulated job.
    pub parallel: Parallelism,
    /// The settings of the reported simulation (after calibration, with the
    /// fitted compute scale).
    pub config: SimConfig,
    /// The simulation: timeline, summary, engine counters.
    pub result: SimResult,
    /// Measured runs: the measured timeline and iteration times.
    pub measured: Option<MeasuredTimeline>,
    /// Measured runs: measured vs simulated.
    pub comparison: Option<Comparison>,
    /// Measured runs with [`RunOptions::calibrate`].
    pub calibration: Option<CalibrationReport>,
    /// Echo replays: what was inferred from the trace (`None` for other
    /// inputs).
    pub inferred: Option<InferredReport>,
    /// Ranks simulated as copies of the nearest measured stage.
    pub assumed_ranks: Vec<AssumedRank>,
    /// Measured runs with timed GPU work (Kineto): the per-rank breakdown,
    /// top kernels and stragglers ([`crate::analysis::analyse`]), as
    /// `trainscope analyze` prints it.
    pub analysis: Option<Analysis>,
    /// [`RunOptions::slow_rank`]: the what-if's iteration against the
    /// replay without it.
    pub slow_rank: Option<SlowRankReport>,
    /// Injected faults or [`RunOptions::blame`]: the what-if's slow-down
    /// and blame ([`crate::whatif::report`]).
    pub whatif: Option<crate::whatif::WhatIfReport>,
    /// Every warning (files, adapters, simulation), one line each, in order.
    pub warnings: Vec<String>,
    /// Notes on what was simulated.
    pub notes: Vec<String>,
}

fn exposed_json(e: &ExposedComm) -> Value {
    let mut v = json!({ "dp": e.dp, "dp_ep": e.dp_ep, "tp": e.tp, "ep": e.ep, "pp": e.pp });
    // Context parallelism's key only where a job has CP collectives.
    if e.cp > 0 {
        v["cp"] = json!(e.cp);
    }
    v
}

fn stage_json(s: &StageSummary) -> Value {
    json!({
        "stage": s.stage,
        "rank": s.rank,
        "compute_ns": s.compute_ns,
        "busy_share": s.busy_share,
        "idle_share": s.idle_share,
        "bubble_ns": s.bubble_ns,
        "exposed_comm_ns": exposed_json(&s.exposed_comm_ns),
        "other_idle_ns": s.other_idle_ns,
        "host_bound_ns": s.host_bound_ns,
        "sync_stall_ns": s.sync_stall_ns,
        "launch_queue_wait_ns": s.launch_queue_wait_ns,
        "collective_busy_ns": s.collective_busy_ns,
        "grad_sync_busy_ns": s.grad_sync_busy_ns,
        "send_busy_ns": s.send_busy_ns,
        "recv_busy_ns": s.recv_busy_ns,
        "end_ns": s.end_ns,
        "peak_activation_chunks": s.peak_activation_chunks,
        "peak_activation_micro_batches": s.peak_activation_micro_batches,
    })
}

impl RunOutput {
    /// The summary of the reported simulation.
    pub fn summary(&self) -> &Summary {
        &self.result.summary
    }

    /// The measured iteration time, ns (measured runs with one).
    pub fn measured_iteration_time_ns(&self) -> Option<u64> {
        self.measured.as_ref().and_then(|m| m.iteration_time_ns)
    }

    /// The JSON object of `trainscope simulate --json` (same keys as the
    /// SimAI-compatible mode where they mean the same: `mode`,
    /// `iteration_time_ns`, `compute_ns`, `bubble_ns`, `exposed_comm_ns`
    /// with `dp`, `dp_ep`, `tp`, `ep`, `pp`, `exposed_comm_total_ns`,
    /// `warnings`; plus `stages`, `critical_path`,
    /// `measured_iteration_time_ns` (always present, `null` for described
    /// jobs), and for measured runs `comparison`, `calibration`).
    pub fn report_json(&self) -> Value {
        let s = self.summary();
        let mut v = json!({
            "schema_version": RUN_SCHEMA_VERSION,
            "mode": self.mode,
            "kind": self.kind,
            "format": self.format.name(),
            "files": self.files,
            "job": s.job,
            "parallel": self.parallel,
            "schedule": s.schedule,
            "algorithm": s.algorithm,
            "pipeline_stages": s.pipeline_stages,
            "micro_batches": s.micro_batches,
            "virtual_stages": s.virtual_stages,
            "simulated_ranks": s.simulated_ranks,
            "representative_ranks": s.representative_ranks,
            "activation_bytes": s.activation_bytes,
            "compute_scale": self.config.compute_scale,
            "iteration_time_ns": s.iteration_time_ns,
            "compute_ns": s.compute_ns,
            "bubble_ns": s.bubble_ns,
            "exposed_comm_ns": exposed_json(&s.exposed_comm_ns),
            "exposed_comm_total_ns": s.exposed_comm_ns.total(),
            "other_idle_ns": s.other_idle_ns,
            "host_bound_ns": s.host_bound_ns,
            "sync_stall_ns": s.sync_stall_ns,
            "launch_queue_wait_ns": s.launch_queue_wait_ns,
            "reference_stage": s.reference_stage,
            "reference_rank": s.reference_rank,
            "simai_bubble_ns": s.simai_bubble_ns,
            "stages": s.stages.iter().map(stage_json).collect::<Vec<_>>(),
            "critical_path": s.critical_path,
            "events": s.events,
            "tasks": s.tasks,
        });
        // Always present (null for described jobs) so consumers see one layout.
        v["measured_iteration_time_ns"] = json!(self.measured_iteration_time_ns());
        if self.kind == "measured" {
            if let Some(m) = &self.measured {
                v["measured_iteration_times_ns"] = json!(m.iteration_times_ns);
                v["measured_iterations_covered"] = json!(m.iterations_covered);
            }
            v["comparison"] = json!(self.comparison);
            v["calibration"] = json!(self.calibration);
            v["inferred"] = json!(self.inferred);
            v["assumed_ranks"] = json!(self.assumed_ranks);
            if let Some(sr) = &self.slow_rank {
                v["slow_rank"] = json!(sr);
            }
        }
        if let Some(w) = &self.whatif {
            v["whatif"] = json!(w);
        }
        v["warnings"] = json!(self.warnings);
        v["notes"] = json!(self.notes);
        v
    }
}

/// A measured run's timeline ([`convert_files`]).
#[derive(Debug, Clone, Serialize)]
pub struct ConvertOutput {
    /// The run's format.
    pub format: Format,
    /// Its files.
    pub files: Vec<String>,
    /// The measured timeline.
    pub timeline: Timeline,
    /// Its iteration times and figures (`timeline` taken out: `None`).
    pub measured: MeasuredTimeline,
    /// Warnings (files, timeline), one line each.
    pub warnings: Vec<String>,
}

enum Input {
    /// A described job, with the SimAI workload it came from (if any).
    Described(DescribedJob, Option<SimaiWorkload>),
    Measured(MeasuredRun),
}

pub(crate) fn push_unique(out: &mut Vec<String>, items: impl IntoIterator<Item = String>) {
    for s in items {
        if !out.contains(&s) {
            out.push(s);
        }
    }
}

/// Warnings as one-line diagnostics (`warning: ...`), as the files' are
/// (`file:line:col: warning: ...`); duplicates dropped.
pub(crate) fn as_warning_lines(file_warnings: Vec<String>, others: Vec<String>) -> Vec<String> {
    let mut out = file_warnings;
    push_unique(
        &mut out,
        others.into_iter().map(|m| Diagnostic::warning(m).short()),
    );
    out
}

/// The parser options a run's `options` ask for (NeuSight's block
/// repeats and world, the Kineto step): what [`load_files`] parses with.
pub fn load_options(options: &RunOptions) -> LoadOptions {
    LoadOptions {
        neusight: neusight::NeusightOptions {
            block_repeats: options
                .block_repeats
                .unwrap_or(neusight::DEFAULT_BLOCK_REPEATS),
            data_parallel: options.world,
        },
        kineto: crate::formats::kineto::KinetoOptions {
            iteration: options.iteration,
        },
    }
}

/// Parse `files` and pick the one input (see the module documentation).
fn load(
    files: &[(&str, &[u8])],
    options: &RunOptions,
) -> Result<(Input, Vec<String>, Vec<String>), RunError> {
    if files.is_empty() {
        return Err(RunError::Usage("no input file".to_string()));
    }
    pick(load_set(files, options.format, &load_options(options)))
}

/// The one input of a parsed set (see the module documentation).
fn pick(set: LoadedSet) -> Result<(Input, Vec<String>, Vec<String>), RunError> {
    let LoadedSet {
        summaries,
        described,
        simai_sources,
        runs,
        models: _,
    } = set;
    if summaries.is_empty() {
        return Err(RunError::Usage("no input file".to_string()));
    }
    // A file that gave no result fails the run (`load_set` gives every such
    // file an error saying why); a usable file with skipped records is
    // simulated without them, with a warning naming them.
    let errors = failed_file_errors(&summaries);
    if !errors.is_empty() {
        return Err(RunError::Parse(errors));
    }
    // The files' warnings, then their skipped-records notes, merged by value
    // (one line for a warning said alike of several files), rendered last.
    let file_warnings = summaries.iter().flat_map(|s| {
        s.diagnostics
            .iter()
            .filter(|d| !d.is_error())
            .map(|d| (s.file.as_str(), d.clone()))
    });
    let notes = summaries.iter().filter_map(|s| {
        s.skipped_note()
            .map(|m| (s.file.as_str(), Diagnostic::warning(m)))
    });
    let warnings: Vec<String> = merge_by_file(file_warnings.chain(notes))
        .iter()
        .map(FileDiagnostic::short)
        .collect();
    // A model config is an architecture, not a job: it needs a training setup.
    if let Some(config) = summaries
        .iter()
        .find(|s| s.format == Some(Format::HfConfig))
    {
        let name = &config.file;
        return Err(RunError::Usage(format!(
            "`{name}` is a model configuration (hf-config), not a workload or a measured run: a model needs a training setup (parallelism, batch, GPU) to be simulated; run `trainscope simulate --model {name} --tp N --pp N ...`"
        )));
    }
    let inputs = described.len() + runs.len();
    if inputs != 1 {
        let names: Vec<String> = summaries
            .iter()
            .map(|s| {
                format!(
                    "`{}` ({})",
                    s.file,
                    s.format.map_or("unrecognised", Format::name)
                )
            })
            .collect();
        return Err(RunError::Usage(format!(
            "one simulation takes one workload or one measured run (the rank files of one Echo job count as one); got {inputs}: {}",
            names.join(", ")
        )));
    }
    let first_described = described.into_iter().zip(simai_sources).next();
    let (input, used) = match (first_described, runs.into_iter().next()) {
        (Some((d, source)), _) => {
            let f = vec![d.file.clone()];
            (Input::Described(d, source), f)
        }
        (None, Some(r)) => {
            let f = r.files.clone();
            (Input::Measured(r), f)
        }
        (None, None) => return Err(RunError::Usage("no input".to_string())),
    };
    Ok((input, used, warnings))
}

fn error_percent(simulated: u64, measured: u64) -> f64 {
    if measured == 0 {
        return 0.0;
    }
    (simulated as f64 - measured as f64) / measured as f64 * 100.0
}

fn diff(a: u64, b: u64) -> i64 {
    let d = i128::from(a) - i128::from(b);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

fn comparison(
    measured_ns: u64,
    result: &SimResult,
    measured: &ByKind,
    ranks: &[u32],
) -> Comparison {
    let sim = ByKind::of_timeline(&result.timeline, ranks);
    let t = result.summary.iteration_time_ns;
    Comparison {
        measured_iteration_time_ns: measured_ns,
        simulated_iteration_time_ns: t,
        difference_ns: diff(t, measured_ns),
        error_percent: error_percent(t, measured_ns),
        ranks: ranks.to_vec(),
        by_kind: KINDS
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let m = measured.seen[k].then_some(measured.ns[k]);
                KindComparison {
                    kind: name,
                    measured_ns: m,
                    simulated_ns: sim.ns[k],
                    difference_ns: m.map(|m| diff(sim.ns[k], m)),
                }
            })
            .collect(),
    }
}

/// Apply a world-size override to a described job. A world the job's TP x
/// PP does not divide, or whose DP its EP does not divide, cannot be meant
/// (as in the SimAI-compatible mode and on the page): refused.
fn apply_world(
    job: &mut DescribedJob,
    world: u32,
    warnings: &mut Vec<String>,
) -> Result<(), SimError> {
    if job.format != Format::SimaiWorkload {
        return Ok(()); // NeuSight: applied by the parser options.
    }
    let p = &job.parallel;
    let (tp, pp, ep) = (p.tp.max(1), p.pp.max(1), p.ep.max(1));
    let tp_pp = u64::from(tp) * u64::from(pp);
    let refuse = |reason: String| {
        Err(SimError::InvalidConfig {
            name: "world",
            reason,
        })
    };
    if u64::from(world) % tp_pp != 0 {
        return refuse(format!(
            "{world} is not a multiple of TP x PP = {tp} x {pp} = {tp_pp}, so the DP size is not an integer"
        ));
    }
    let dp = u64::from(world) / tp_pp;
    if dp % u64::from(ep) != 0 {
        return refuse(format!(
            "{world} gives DP = {world} / (TP {tp} x PP {pp}) = {dp}, which EP {ep} does not divide"
        ));
    }
    let (mut parallel, notes) =
        ParallelConfig::resolve(Some(world), p.tp, p.pp, p.ep, p.micro_batches);
    parallel.virtual_stages = p.virtual_stages;
    parallel.micro_batch_size = p.micro_batch_size;
    parallel.activation_bytes = p.activation_bytes;
    warnings.extend(notes);
    job.parallel = parallel;
    Ok(())
}

/// Simulate the one input in `files` (see the module documentation):
/// [`load_files`] then [`run_loaded`].
pub fn run_files(
    files: &[(&str, &[u8])],
    config: &SimConfig,
    options: &RunOptions,
) -> Result<RunOutput, RunError> {
    config.validate()?;
    options.validate()?;
    let loaded = load_files(files, options)?;
    run_loaded(&loaded, config, options)
}

/// The one input of a set of files, parsed: what [`run_loaded`] simulates,
/// any number of times (the page's schedule comparison parses once and
/// simulates every schedule).
pub struct LoadedInput {
    input: Input,
    used: Vec<String>,
    file_warnings: Vec<String>,
    /// A Kineto run's analysis (it depends on the traces alone: made once
    /// here, not per simulation).
    analysis: Option<Analysis>,
}

/// Parse `files` and pick the one input (see the module documentation);
/// `options` as for [`run_files`] (the parser options: block repeats, world).
pub fn load_files(files: &[(&str, &[u8])], options: &RunOptions) -> Result<LoadedInput, RunError> {
    options.validate()?;
    loaded_input(load(files, options)?)
}

/// [`load_files`] of a set already parsed: `set` must be the
/// [`LoadedSet`] of the files (all of them, in order) parsed with
/// `options.format` forced (or not) and [`load_options`]`(options)`, e.g.
/// made one file at a time by [`crate::inspect::SetLoader`], so large files
/// never have to be in memory together. The same input as `load_files`.
pub fn load_from_set(set: LoadedSet, options: &RunOptions) -> Result<LoadedInput, RunError> {
    options.validate()?;
    loaded_input(pick(set)?)
}

fn loaded_input(
    (input, used, file_warnings): (Input, Vec<String>, Vec<String>),
) -> Result<LoadedInput, RunError> {
    let analysis = match &input {
        Input::Measured(run) if run.format == Format::KinetoTrace => {
            Some(analyse(run, crate::analysis::DEFAULT_TOP_KERNELS))
        }
        _ => None,
    };
    Ok(LoadedInput {
        input,
        used,
        file_warnings,
        analysis,
    })
}

/// Simulate a [`load_files`] input under `config`; `options` must be the
/// ones it was loaded with. The same output as [`run_files`].
pub fn run_loaded(
    loaded: &LoadedInput,
    config: &SimConfig,
    options: &RunOptions,
) -> Result<RunOutput, RunError> {
    config.validate()?;
    options.validate()?;
    let (input, used, file_warnings) = (
        &loaded.input,
        loaded.used.clone(),
        loaded.file_warnings.clone(),
    );
    let mut warnings = Vec::new();
    let tables = options.ratio_tables.as_ref();
    let mut notes = Vec::new();
    if config.algorithm == Algorithm::Simai {
        notes.push(SIMAI_P2P_NOTE.to_string());
    }
    match input {
        Input::Described(d, source) => {
            let mut d = d.clone();
            if let Some(w) = options.world {
                apply_world(&mut d, w, &mut warnings)?;
            }
            if options.slow_rank.is_some() {
                warnings.push(
                    "slowing one rank needs a measured run replayed per rank (Kineto, Echo, Chakra traces); ignored for a described workload"
                        .to_string(),
                );
            }
            if options.calibrate {
                warnings.push(
                    "calibration needs a measured run (Echo trace, Optimus-Prime log); ignored for a described workload"
                        .to_string(),
                );
            }
            let mut job = JobSpec::from_described(
                &d,
                &DescribedOptions {
                    backward_factor: config.backward_factor,
                },
            )?;
            // SimAI's closed-form bubble reads the file's rows as written
            // (every copy of the block, AICB's placeholder values).
            job.simai_bubble = source.as_ref().map(SimaiBubbleBasis::from_workload);
            let cost = cost_for(job.parallel, config, tables)?;
            let result = simulate_with(&job, config, cost.as_ref())?;
            let whatif = crate::whatif::report(&job, config, cost.as_ref(), options.blame)?;
            if config.faults.has_windows() {
                notes.push(crate::whatif::WINDOW_NOTE.to_string());
            }
            push_unique(&mut warnings, result.summary.warnings.iter().cloned());
            push_unique(&mut notes, result.summary.notes.iter().cloned());
            Ok(RunOutput {
                schema_version: RUN_SCHEMA_VERSION,
                mode: "event",
                kind: "described",
                format: d.format,
                files: used,
                parallel: job.parallel,
                config: config.clone(),
                result,
                measured: None,
                comparison: None,
                calibration: None,
                inferred: None,
                assumed_ranks: Vec::new(),
                analysis: None,
                slow_rank: None,
                whatif,
                warnings: as_warning_lines(file_warnings, warnings),
                notes,
            })
        }
        Input::Measured(run) => {
            if config.summary_only {
                // The comparison with the measurement is made span by span.
                return Err(RunError::Sim(SimError::InvalidConfig {
                    name: "summary_only",
                    reason: "a measured run is compared with the simulated timeline, which a summary-only run does not build".to_string(),
                }));
            }
            if options.world.is_some() {
                warnings.push(
                    "the world size of a measured run comes from its files; the world setting is ignored"
                        .to_string(),
                );
            }
            let measured = if options.report_only {
                measured_figures(run)
            } else {
                measured_timeline(run)
            };
            push_unique(&mut warnings, measured.warnings.iter().cloned());
            let mut c = config.clone();
            // Backward estimates of measured runs are made here, not by the builder.
            c.backward_factor = None;
            let (mut rj, replay_warnings, logged) = match run.format {
                Format::OptimusPrimeLog => {
                    let f = config.backward_factor.unwrap_or(2.0);
                    let (rj, w) = replay::optimus_job(run, f)?;
                    (rj, w, Some(ScheduleKind::OneFOneB))
                }
                Format::KinetoTrace => {
                    let (rj, w) = replay::kineto_job(run)?;
                    (rj, w, None)
                }
                Format::ChakraEt => {
                    // Ranks of a stage that run the same program are simulated
                    // once, unless ranks are treated one by one.
                    let copies = c.faults.is_empty()
                        && options.slow_rank.is_none()
                        && options.blame.is_none();
                    let (rj, mut w) = crate::replay::chakra::chakra_job(run, copies)?;
                    // The groups were matched to Megatron's placement.
                    let p = rj.job.parallel;
                    let default = crate::engine::config::PlacementOrder::default();
                    if (p.tp > 1 || p.pp > 1) && c.network.placement != default {
                        w.push(format!(
                            "the Chakra groups fit TP {} x DP {} x PP {} with ranks ordered TP fastest, then DP, then PP: that placement is simulated, not the configured {}",
                            p.tp,
                            p.dp,
                            p.pp,
                            c.network.placement.name()
                        ));
                        c.network.placement = default;
                    }
                    // Without stages (no layout from the groups), every
                    // collective is one group of all ranks: a rank's k-th
                    // collective waits for every other rank's k-th, which
                    // the transfers between them may only allow after it
                    // (a pipeline's stages run different collectives): the
                    // engine then stalls, and collectives are not
                    // synchronised.
                    if !rj.job.transfers.is_empty()
                        && p.pp == 1
                        && p.world() > 1
                        && c.sync_collectives
                    {
                        let probe = cost_for(p, &c, tables)?;
                        if let Err(SimError::Stalled(_)) =
                            simulate_with(&rj.job, &c, probe.as_ref())
                        {
                            c.sync_collectives = false;
                            w.push(
                                "the Chakra collectives run over all ranks (no pipeline layout from the groups), and synchronised they would wait on the point-to-point transfers forever: collectives are not synchronised across ranks (each rank runs its own, costed over all ranks; the transfers link the ranks)"
                                    .to_string(),
                            );
                        }
                    }
                    (rj, w, None)
                }
                _ => {
                    let (rj, w) = replay::echo_job(run)?;
                    (rj, w, None)
                }
            };
            push_unique(&mut warnings, replay_warnings);
            if rj.explicit_order {
                if c.micro_batches.is_some() || c.virtual_stages > 1 {
                    warnings.push(
                        "the replay follows the measured step order: the micro-batch and virtual-stage settings are ignored"
                            .to_string(),
                    );
                }
                c.micro_batches = None;
                c.virtual_stages = 1;
                if c.schedule != ScheduleKind::GPipe && c.schedule != ScheduleKind::OneFOneB {
                    if c.schedule != ScheduleKind::Interleaved {
                        warnings.push(format!(
                            "the replay follows the measured step order: the {} schedule is not applied",
                            c.schedule.name()
                        ));
                    }
                    c.schedule = ScheduleKind::OneFOneB;
                }
            }
            if let Some(l) = logged {
                if c.schedule != l
                    || c.virtual_stages != 1
                    || c.micro_batches.is_some_and(|m| m != rj.job.micro_batches)
                {
                    notes.push(format!(
                        "what-if: the log ran {} with {} micro-batches; simulating {} with {} micro-batches and {} virtual stage(s)",
                        l.name(),
                        rj.job.micro_batches,
                        c.schedule.name(),
                        c.micro_batches.unwrap_or(rj.job.micro_batches),
                        c.virtual_stages
                    ));
                }
            }
            // The configured model, and its bandwidth term alone (for
            // what-ifs that override one link's bandwidth).
            let configured = cost_for(rj.job.parallel, &c, tables)?;
            let mut c_bw = c.clone();
            c_bw.network.nvlink_latency_ns = 0;
            c_bw.network.nic_latency_ns = 0;
            let configured_bw = cost_for(rj.job.parallel, &c_bw, tables)?;
            let overrides = options.network_overrides;
            // As measured (inferred only) and as asked (with the overrides).
            let (logged_cost, run_cost) = match &rj.network {
                Some(net) => (
                    Some(InferredCost::new(
                        net,
                        configured.as_ref(),
                        configured_bw.as_ref(),
                        NetworkOverrides::default(),
                    )),
                    // An explicit algorithm: the configured model alone.
                    (!overrides.algorithm).then(|| {
                        InferredCost::new(
                            net,
                            configured.as_ref(),
                            configured_bw.as_ref(),
                            overrides,
                        )
                    }),
                ),
                None => (None, None),
            };
            let logged_cost: &dyn CollectiveCost = match &logged_cost {
                Some(x) => x,
                None => configured.as_ref(),
            };
            let cost: &dyn CollectiveCost = match &run_cost {
                Some(x) => x,
                None => configured.as_ref(),
            };
            let mut unmeasured = None;
            if rj.network.is_some() && !rj.assumed.is_empty() {
                let base = SimConfig {
                    compute_scale: 1.0,
                    ..c.clone()
                };
                if let Some((job, scales)) =
                    replay::fit_copies(&rj, run, &base, logged_cost, &mut warnings)?
                {
                    rj.job = job;
                    unmeasured = Some(scales);
                }
            }
            // The slowed-rank what-if: the replay with one rank's compute
            // scaled (the logged job stays for calibration and the baseline).
            let slowed = match options.slow_rank {
                Some(sr) => Some(replay::slow_rank(&rj.job, sr.rank, sr.factor())?),
                None => None,
            };
            let run_job = slowed.as_ref().unwrap_or(&rj.job);
            let network_what_if = rj.network.is_some() && overrides.any();
            let target = measured.iteration_time_ns;
            let mut calibration = None;
            let result = match (options.calibrate, target) {
                (true, Some(target)) if target > 0 => {
                    let mut base = c.clone();
                    if let Some(l) = logged {
                        base.schedule = l;
                        base.virtual_stages = 1;
                        base.micro_batches = None;
                    }
                    base.compute_scale = 1.0;
                    // Calibrated on the run as measured, without what-if faults.
                    base.faults = Default::default();
                    let plain = simulate_with(&rj.job, &base, logged_cost)?;
                    let plain_t = plain.summary.iteration_time_ns;
                    let cal = calibrate_compute_scale(&rj.job, &base, logged_cost, target)?;
                    let mut fin = c.clone();
                    fin.compute_scale = cal.compute_scale;
                    let what_if = network_what_if
                        || slowed.is_some()
                        || SimConfig {
                            compute_scale: 1.0,
                            ..c.clone()
                        } != base;
                    let t = cal.result.summary.iteration_time_ns;
                    calibration = Some(CalibrationReport {
                        compute_scale: cal.compute_scale,
                        measured_iteration_time_ns: target,
                        calibrated_iteration_time_ns: t,
                        error_percent: error_percent(t, target),
                        uncalibrated_iteration_time_ns: plain_t,
                        uncalibrated_error_percent: error_percent(plain_t, target),
                        simulations: cal.simulations,
                        what_if,
                        schedule: base.schedule.name(),
                    });
                    notes.push(calibration_note(
                        run.format,
                        error_percent(plain_t, target),
                        cal.compute_scale,
                    ));
                    let r = if what_if {
                        simulate_with(run_job, &fin, cost)?
                    } else {
                        cal.result
                    };
                    c = fin;
                    r
                }
                (true, _) => {
                    warnings.push(
                        "the run has no measured iteration time: nothing to calibrate against"
                            .to_string(),
                    );
                    simulate_with(run_job, &c, cost)?
                }
                _ => simulate_with(run_job, &c, cost)?,
            };
            let slow_rank = match options.slow_rank {
                Some(sr) if slowed.is_some() => {
                    let base = simulate_with(&rj.job, &c, cost)?.summary.iteration_time_ns;
                    let t = result.summary.iteration_time_ns;
                    notes.push(format!(
                        "what-if: rank {} slowed by {}% (its compute x {:.4}): iteration {} ns vs {} ns without ({:+.2}%)",
                        sr.rank,
                        limits::number(sr.percent),
                        sr.factor(),
                        t,
                        base,
                        error_percent(t, base)
                    ));
                    Some(SlowRankReport {
                        rank: sr.rank,
                        percent: sr.percent,
                        baseline_iteration_time_ns: base,
                        iteration_time_ns: t,
                        difference_ns: diff(t, base),
                    })
                }
                _ => None,
            };
            let whatif = crate::whatif::report(run_job, &c, cost, options.blame)?;
            if c.faults.has_windows() {
                notes.push(crate::whatif::WINDOW_NOTE.to_string());
            }
            let analysis = loaded.analysis.clone();
            match &rj.network {
                Some(net) => {
                    notes.push(if run.format == Format::KinetoTrace {
                        KINETO_REPLAY_NOTE.to_string()
                    } else {
                        ECHO_REPLAY_NOTE.to_string()
                    });
                    notes.extend(basis_notes(net));
                    if let Some(u) = &unmeasured {
                        notes.push(format!(
                            "stage(s) {:?} are not measured: simulated as copies of the nearest measured stage with forward x {:.3} and backward x {:.3}, fitted so the measured ranks' waits are re-created; the measured ranks' iteration end is then met by construction, so the error above does not test the replay",
                            u.stages, u.forward_scale, u.backward_scale
                        ));
                    }
                    notes.extend(override_notes(net, overrides, &c));
                }
                None if run.format == Format::ChakraEt => {
                    notes.push(crate::replay::chakra::CHAKRA_NOTE.to_string())
                }
                None => notes.push(FORWARD_ONLY_NOTE.to_string()),
            }
            let inferred = rj.network.as_ref().map(|net| InferredReport {
                note: INFERRED_NOTE,
                clocks_shared: net.clocks_shared,
                split_occurrences: net.split_occurrences,
                inconsistent_occurrences: net.inconsistent_occurrences,
                groups: net.fits.clone(),
                overridden: overrides,
                unmeasured_stages: unmeasured,
            });
            push_unique(&mut warnings, result.summary.warnings.iter().cloned());
            push_unique(&mut notes, result.summary.notes.iter().cloned());
            let comparison =
                target.map(|t| comparison(t, &result, &rj.measured, &rj.present_ranks));
            Ok(RunOutput {
                schema_version: RUN_SCHEMA_VERSION,
                mode: "event",
                kind: "measured",
                format: run.format,
                files: used,
                parallel: rj.job.parallel,
                config: c,
                result,
                measured: Some(measured),
                comparison,
                calibration,
                inferred,
                assumed_ranks: rj.assumed,
                analysis,
                slow_rank,
                whatif,
                warnings: as_warning_lines(file_warnings, warnings),
                notes,
            })
        }
    }
}

/// The measured timeline of the one measured run in `files`, without
/// simulating. A described workload is a usage error (it has no measured
/// timeline: simulate it and export the simulated one).
pub fn convert_files(
    files: &[(&str, &[u8])],
    options: &RunOptions,
) -> Result<ConvertOutput, RunError> {
    let (input, used, file_warnings) = load(files, options)?;
    match input {
        Input::Described(d, _) => Err(RunError::Usage(format!(
            "`{}` is a described workload ({}), not a measured run: it has no measured timeline; use `trainscope simulate {} --chrome-trace PATH` for its simulated timeline",
            d.file,
            d.format.name(),
            d.file
        ))),
        Input::Measured(run) => {
            let mut measured = measured_timeline(&run);
            let warnings = as_warning_lines(file_warnings, measured.warnings.clone());
            Ok(ConvertOutput {
                format: run.format,
                files: used,
                timeline: measured.timeline.take().unwrap_or_default(),
                measured,
                warnings,
            })
        }
    }
}
