//! Whole-run planning: how many days, GPU-hours and how much money it takes
//! to train on N tokens when nodes fail, checkpoints cost time and every
//! restart loses work ("goodput"). Self-contained: its input is a plain
//! [`RunPlanInput`] (the iteration time and checkpoint size come from a
//! simulated job, computed by the caller), its output a [`RunPlan`].
//!
//! The model:
//! - failures: every node fails at the same constant rate (per 1000
//!   node-days, or the whole job's MTBF given directly), so the job's MTTF
//!   is the node MTTF over the node count; presets from published runs in
//!   [`presets`]; planned interruptions (maintenance, upgrades) at their own
//!   rate;
//! - checkpoints: the write takes the checkpoint's size over the smaller
//!   of the nodes' summed write bandwidth and the storage system's total
//!   (or a given time); a synchronous save blocks training for all of it,
//!   an asynchronous one only for its blocking part (by default each GPU's
//!   share copied to host memory) while the rest is written in the
//!   background; a failure during that tail loses the checkpoint being
//!   written, which costs, on average, the tail's length once more per
//!   failure (a failure falls in the first `tail` seconds of an interval of
//!   `T` with chance `tail / T` and then loses `T` more);
//! - the interval: Daly's higher-order optimum (Daly 2006, FGCS 22(3)) of
//!   the blocking checkpoint time and the job's MTTF unless one is given,
//!   rounded to whole iterations; Young's first-order one is reported too;
//! - recovery after a failure: detection, restart (re-initialisation),
//!   reading the checkpoint back and, when no warm spare node is free, the
//!   re-queue for a replacement; planned stops drain at a checkpoint and
//!   pay the restart and the restore only;
//! - the renewal model (the closed form): a segment of `x` seconds of work
//!   and a checkpoint of `d` completes after `(exp(lambda (x + d)) - 1)
//!   (1 / lambda + r)` seconds on average; the run is its segments plus the
//!   planned stops; ETTR is the work over that expected wall time;
//! - the Monte-Carlo ([`montecarlo`]): the same process drawn event by
//!   event with a seeded SplitMix64, `runs` times; days to train P10, P50
//!   and P90 (the closed form meets the mean; tested).
//!
//! The badput split uses the categories of Google's ml-goodput-measurement
//! library (AI-Hypercomputer/ml-goodput-measurement, `BadputType`): checkpoint
//! save and restore time, wasted progress from a disruption, infrastructure
//! recovery from a disruption (detection, restart, re-queue), and planned
//! maintenance (what the library would log as a custom badput event).
//!
//! Sources for the presets and validation figures: the Llama 3 paper
//! (arXiv 2407.21783, section 3.3.4, Table 5), Meta's reliability study
//! (arXiv 2410.21680), metaseq's OPT-175B chronicles, BigScience's BLOOM
//! notes; context: MegaScale (arXiv 2402.15627), ByteRobust (arXiv
//! 2509.16293) and Gemini 1.0 (arXiv 2312.11805) report 85-97% goodput.

pub mod curves;
pub mod formulas;
pub mod job_facts;
pub mod montecarlo;
pub mod presets;
#[cfg(test)]
mod tests;

use crate::rng::SplitMix64;
use formulas::{daly_interval_s, job_rate_per_s, no_spare_probability, segment, young_interval_s};
pub use montecarlo::RunTrace;
use montecarlo::{percentile, simulate_run, Process};
use serde::{Deserialize, Serialize};

/// Most Monte-Carlo runs.
pub const MAX_RUNS: u32 = 100_000;
/// Most failures the Monte-Carlo draws over all its runs (keeps a plan
/// within a second or two, native or in the page).
pub const MAX_DRAWN_FAILURES: f64 = 5e7;
/// Default Monte-Carlo runs.
pub const DEFAULT_RUNS: u32 = 1000;
/// Default bandwidth of the copy of each GPU's checkpoint share to host
/// memory, GB/s, for the blocking part of an asynchronous checkpoint: a
/// round figure below a PCIe Gen5 x16 link's 64 GB/s (an assumption; give
/// the blocking time where it is measured).
pub const DEFAULT_HOST_COPY_GBPS: f64 = 25.0;
/// Default write bandwidth of one node to the checkpoint storage, GB/s: an
/// assumption (a round figure for one node's share of a parallel file
/// system; give your storage's).
pub const DEFAULT_WRITE_GBPS_PER_NODE: f64 = 5.0;
/// Default time from a failure to the decision to restart, seconds: a
/// round figure under MegaScale's "diagnosis in under 10 minutes" (arXiv
/// 2402.15627), an assumption for a cluster with automatic detection.
pub const DEFAULT_DETECTION_S: f64 = 300.0;
/// Default restart (re-scheduling, process start, NCCL init), seconds: a
/// round figure inside MegaScale's "back within 15 minutes" (arXiv
/// 2402.15627) once detection is counted apart; an assumption.
pub const DEFAULT_RESTART_S: f64 = 600.0;
/// Default hours before a failed node is back as a warm spare (an
/// assumption: a day's repair or swap).
pub const DEFAULT_SPARE_REPAIR_HOURS: f64 = 24.0;

/// How much to train.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// Iterations.
    Steps(u64),
    /// Tokens, at `tokens_per_iteration` (global batch x sequence length);
    /// rounded up to whole iterations.
    Tokens {
        tokens: u64,
        tokens_per_iteration: u64,
    },
}

/// How often nodes fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureRate {
    /// Unexpected failures per 1000 node-days.
    Per1000NodeDays(f64),
    /// The whole job's mean time between failures, hours (whatever its
    /// size).
    JobMtbfHours(f64),
    /// A preset of [`presets::PRESETS`] by name.
    Preset(String),
}

/// The checkpoint interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interval {
    /// Daly's higher-order optimum.
    #[default]
    Auto,
    /// Seconds of training between checkpoints.
    Seconds(f64),
}

/// Everything a plan needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPlanInput {
    /// One iteration, nanoseconds (from the simulated job).
    pub iteration_time_ns: u64,
    pub work: Work,
    pub gpus: u32,
    pub gpus_per_node: u32,
    /// Bytes written per checkpoint (weights and optimizer states of the
    /// whole job, counted once; the caller computes it). 0 with a given
    /// `checkpoint_write_s`.
    pub checkpoint_size_bytes: u64,
    /// Write bandwidth of one node to the storage, GB/s (1e9 bytes).
    pub write_bw_gbps_per_node: f64,
    /// The storage system's total write bandwidth, GB/s (None: unlimited).
    pub write_bw_gbps_total: Option<f64>,
    /// Read bandwidth of one node, GB/s (None: the write bandwidth).
    pub read_bw_gbps_per_node: Option<f64>,
    /// The storage system's total read bandwidth, GB/s (None: the write
    /// total).
    pub read_bw_gbps_total: Option<f64>,
    /// The checkpoint's write time, seconds, instead of size / bandwidth.
    pub checkpoint_write_s: Option<f64>,
    /// The restore (read) time, seconds, instead of size / bandwidth.
    pub restore_s: Option<f64>,
    /// Asynchronous checkpointing: training blocks only for the blocking
    /// part.
    pub async_checkpoint: bool,
    /// The blocking part of an asynchronous save, seconds (None: each GPU's
    /// share copied to host memory at `host_copy_gbps`).
    pub async_blocking_s: Option<f64>,
    /// Device-to-host copy bandwidth per GPU, GB/s.
    pub host_copy_gbps: f64,
    /// The job's memory, bytes (all GPUs; None: not checked): a checkpoint
    /// larger than it is refused.
    pub job_memory_bytes: Option<u64>,
    pub failure_rate: FailureRate,
    /// Planned interruptions per 1000 node-days (None: the preset's, else
    /// 0).
    pub planned_per_1000_node_days: Option<f64>,
    /// From a failure to the decision to restart, seconds.
    pub detection_s: f64,
    /// Re-initialisation after a failure or planned stop (scheduling,
    /// process start, NCCL init, compilation), seconds; not the restore.
    pub restart_s: f64,
    /// Waiting for a replacement node when no warm spare is free, seconds.
    pub requeue_s: f64,
    /// Warm spare nodes kept next to the job.
    pub warm_spares: u32,
    /// How long a failed node takes to come back as a spare, hours.
    pub spare_repair_hours: f64,
    pub checkpoint_interval: Interval,
    /// Price of one GPU-hour (any currency; 0: no cost).
    pub gpu_hour_price: f64,
    pub seed: u64,
    /// Monte-Carlo runs.
    pub runs: u32,
}

impl RunPlanInput {
    /// A plan of `work` at `iteration_time_ns` on `gpus` GPUs with the
    /// other settings neutral: a failure rate of 0 (refused: set
    /// `failure_rate`), no checkpoint size (set it or
    /// `checkpoint_write_s`), 5 GB/s of write bandwidth per node, no
    /// detection, restart or re-queue time, no spares, Daly's interval,
    /// seed 0, [`DEFAULT_RUNS`] runs.
    pub fn new(iteration_time_ns: u64, work: Work, gpus: u32, gpus_per_node: u32) -> RunPlanInput {
        RunPlanInput {
            iteration_time_ns,
            work,
            gpus,
            gpus_per_node,
            checkpoint_size_bytes: 0,
            write_bw_gbps_per_node: DEFAULT_WRITE_GBPS_PER_NODE,
            write_bw_gbps_total: None,
            read_bw_gbps_per_node: None,
            read_bw_gbps_total: None,
            checkpoint_write_s: None,
            restore_s: None,
            async_checkpoint: false,
            async_blocking_s: None,
            host_copy_gbps: DEFAULT_HOST_COPY_GBPS,
            job_memory_bytes: None,
            failure_rate: FailureRate::Per1000NodeDays(0.0),
            planned_per_1000_node_days: None,
            detection_s: 0.0,
            restart_s: 0.0,
            requeue_s: 0.0,
            warm_spares: 0,
            spare_repair_hours: DEFAULT_SPARE_REPAIR_HOURS,
            checkpoint_interval: Interval::Auto,
            gpu_hour_price: 0.0,
            seed: 0,
            runs: DEFAULT_RUNS,
        }
    }
}

/// Seconds lost per badput category (ml-goodput-measurement's kinds).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Badput {
    /// Training blocked by checkpoint saves (UNPRODUCTIVE_CHECKPOINT_SAVE_TIME).
    pub checkpoint_save_s: f64,
    /// Reading checkpoints back after interruptions
    /// (UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME).
    pub checkpoint_restore_s: f64,
    /// Work done since the last durable checkpoint and lost
    /// (WASTED_PROGRESS_FROM_DISRUPTION).
    pub wasted_progress_s: f64,
    /// Detection, restart (re-initialisation) and re-queue after failures
    /// (INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION).
    pub infrastructure_recovery_s: f64,
    /// Restart and restore of planned stops (CUSTOM_BADPUT_EVENTS).
    pub planned_maintenance_s: f64,
}

impl Badput {
    pub fn total_s(&self) -> f64 {
        self.checkpoint_save_s
            + self.checkpoint_restore_s
            + self.wasted_progress_s
            + self.infrastructure_recovery_s
            + self.planned_maintenance_s
    }

    fn add(&mut self, o: &Badput) {
        self.checkpoint_save_s += o.checkpoint_save_s;
        self.checkpoint_restore_s += o.checkpoint_restore_s;
        self.wasted_progress_s += o.wasted_progress_s;
        self.infrastructure_recovery_s += o.infrastructure_recovery_s;
        self.planned_maintenance_s += o.planned_maintenance_s;
    }

    fn scaled(&self, k: f64) -> Badput {
        Badput {
            checkpoint_save_s: self.checkpoint_save_s * k,
            checkpoint_restore_s: self.checkpoint_restore_s * k,
            wasted_progress_s: self.wasted_progress_s * k,
            infrastructure_recovery_s: self.infrastructure_recovery_s * k,
            planned_maintenance_s: self.planned_maintenance_s * k,
        }
    }
}

/// A quantity's Monte-Carlo spread and its closed form.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
    pub mean: f64,
    /// The renewal model's expectation.
    pub closed_form: f64,
}

impl Spread {
    fn scaled(&self, k: f64) -> Spread {
        Spread {
            p10: self.p10 * k,
            p50: self.p50 * k,
            p90: self.p90 * k,
            mean: self.mean * k,
            closed_form: self.closed_form * k,
        }
    }
}

/// Where the checkpoint interval came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalSource {
    /// Daly's higher-order optimum.
    Daly,
    /// Given.
    Given,
}

/// The plan of a whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPlan {
    pub steps: u64,
    pub nodes: u32,
    pub gpus: u32,
    /// Training time without interruptions or checkpoints, days.
    pub ideal_days: f64,
    /// Unexpected failures per 1000 node-days (as used).
    pub failure_rate_per_1000_node_days: f64,
    pub planned_per_1000_node_days: f64,
    /// The job's mean time to an unexpected failure, hours.
    pub mttf_hours: f64,
    /// Unexpected interruptions of the whole run, renewal model.
    pub expected_interruptions: f64,
    /// Planned interruptions of the whole run, expected.
    pub expected_planned_interruptions: f64,
    pub checkpoint_size_bytes: u64,
    /// Time to write one checkpoint, seconds.
    pub checkpoint_seconds: f64,
    /// Of which training is blocked, seconds (all of it when synchronous).
    pub checkpoint_blocking_seconds: f64,
    pub restore_seconds: f64,
    /// Detection + restart + restore + expected re-queue (+ an async
    /// checkpoint's tail) per unexpected failure, seconds.
    pub failure_cost_seconds: f64,
    /// The interval used, seconds of training (whole iterations).
    pub checkpoint_interval_s: f64,
    pub checkpoint_every_steps: u64,
    pub interval_source: IntervalSource,
    /// Daly's higher-order optimum, seconds.
    pub optimal_interval_s: f64,
    /// Young's first-order optimum, seconds.
    pub young_interval_s: f64,
    /// Effective training time ratio: ideal time over expected wall time
    /// (renewal model, planned stops included).
    pub ettr: f64,
    pub days_to_train: Spread,
    pub gpu_hours: Spread,
    pub cost: Spread,
    /// Unexpected interruptions per run (the Monte-Carlo's spread).
    pub interruptions: Spread,
    /// Seconds per badput category, renewal model.
    pub badput: Badput,
    /// The same, mean over the Monte-Carlo runs.
    pub badput_monte_carlo: Badput,
    pub seed: u64,
    pub runs: u32,
    /// Assumptions and adjustments, one sentence each.
    pub notes: Vec<String>,
}

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("invalid run setting `{name}`: {value} {why}")]
    Invalid {
        name: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("unknown failure preset `{0}`")]
    UnknownPreset(String),
    #[error("checkpoint interval {interval_s} s is shorter than the checkpoint itself ({checkpoint_s} s)")]
    IntervalTooShort { interval_s: f64, checkpoint_s: f64 },
    #[error(
        "checkpoint of {size_bytes} bytes is larger than the job's memory ({memory_bytes} bytes)"
    )]
    CheckpointTooLarge { size_bytes: u64, memory_bytes: u64 },
    #[error("the Monte-Carlo would draw about {0:.0} failures")]
    TooManyDraws(f64),
}

impl PlanError {
    /// How to fix it.
    pub fn hint(&self) -> String {
        match self {
            PlanError::Invalid { name, .. } => format!(
                "give `{name}` a finite value in its range (rates and times >= 0, bandwidths, counts and the iteration time > 0)"
            ),
            PlanError::UnknownPreset(_) => {
                format!("failure presets: {}", presets::preset_names())
            }
            PlanError::IntervalTooShort { .. } => {
                "checkpoint less often (or `auto`), or make the write faster (more bandwidth, asynchronous checkpointing)".into()
            }
            PlanError::CheckpointTooLarge { .. } => {
                "the checkpoint holds weights and optimizer states, which live in the GPUs' memory; check the size given".into()
            }
            PlanError::TooManyDraws(_) => format!(
                "use fewer Monte-Carlo runs or a lower failure rate (at most {MAX_DRAWN_FAILURES:e} failures drawn in all)"
            ),
        }
    }

    /// As a diagnostic (message + hint).
    pub fn to_diagnostic(&self) -> crate::diag::Diagnostic {
        crate::diag::Diagnostic::error(self.to_string()).with_hint(self.hint())
    }
}

fn check(name: &'static str, value: f64, positive: bool) -> Result<f64, PlanError> {
    let ok = value.is_finite() && if positive { value > 0.0 } else { value >= 0.0 };
    if ok {
        Ok(value)
    } else {
        Err(PlanError::Invalid {
            name,
            value: crate::limits::number(value),
            why: if positive {
                "is not a finite number above 0"
            } else {
                "is not a finite number >= 0"
            },
        })
    }
}

fn check_count(name: &'static str, value: u64) -> Result<u64, PlanError> {
    if value == 0 {
        return Err(PlanError::Invalid {
            name,
            value: "0".into(),
            why: "is not at least 1",
        });
    }
    Ok(value)
}

/// `size` bytes over the smaller of `nodes x per_node` and `total` GB/s.
fn transfer_s(size_bytes: u64, nodes: u32, per_node_gbps: f64, total_gbps: Option<f64>) -> f64 {
    let aggregate = f64::from(nodes) * per_node_gbps;
    let bw = total_gbps.map_or(aggregate, |t| t.min(aggregate));
    size_bytes as f64 / (bw * 1e9)
}

/// A plan's durations as people read them: seconds below two minutes,
/// then minutes, hours below three days, then days ("—" for a value that
/// is not finite). One wording for the CLI's text and the page's panel.
pub fn duration_text(seconds: f64) -> String {
    let s = seconds;
    if !s.is_finite() {
        "—".into()
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 2.0 * 3600.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 3.0 * 86_400.0 {
        format!("{:.2} h", s / 3600.0)
    } else {
        format!("{:.2} days", s / 86_400.0)
    }
}

/// Plan the run: validate, compute the closed form, draw the Monte-Carlo.
pub fn plan(input: &RunPlanInput) -> Result<RunPlan, PlanError> {
    plan_traced(input, None)
}

/// [`plan`], recording the course of the first drawn run (the one the
/// seed draws first) into `trace`.
pub fn plan_with_trace(input: &RunPlanInput) -> Result<(RunPlan, RunTrace), PlanError> {
    let mut trace = RunTrace::default();
    let p = plan_traced(input, Some(&mut trace))?;
    Ok((p, trace))
}

fn plan_traced(
    input: &RunPlanInput,
    mut trace: Option<&mut RunTrace>,
) -> Result<RunPlan, PlanError> {
    let mut notes = Vec::new();
    let i = input;
    check_count("iteration_time_ns", i.iteration_time_ns)?;
    check_count("gpus", u64::from(i.gpus))?;
    check_count("gpus_per_node", u64::from(i.gpus_per_node))?;
    check_count("runs", u64::from(i.runs))?;
    if i.runs > MAX_RUNS {
        return Err(PlanError::Invalid {
            name: "runs",
            value: i.runs.to_string(),
            why: "is above 100000",
        });
    }
    let steps = match i.work {
        Work::Steps(s) => check_count("steps", s)?,
        Work::Tokens {
            tokens,
            tokens_per_iteration,
        } => check_count("tokens", tokens)?
            .div_ceil(check_count("tokens_per_iteration", tokens_per_iteration)?),
    };
    let iteration_s = i.iteration_time_ns as f64 / 1e9;
    let work_s = steps as f64 * iteration_s;
    let nodes = i.gpus.div_ceil(i.gpus_per_node);

    // Failure rates.
    let (rate, preset_planned) = match &i.failure_rate {
        FailureRate::Per1000NodeDays(r) => {
            (check("failure_rate_per_1000_node_days", *r, true)?, 0.0)
        }
        FailureRate::JobMtbfHours(h) => {
            let h = check("job_mtbf_hours", *h, true)?;
            // The per-node rate that gives this job MTBF at this size.
            (
                formulas::DAY_S / (h * 3600.0) / f64::from(nodes) * 1000.0,
                0.0,
            )
        }
        FailureRate::Preset(name) => {
            let p = presets::preset(name).ok_or_else(|| PlanError::UnknownPreset(name.clone()))?;
            (p.per_1000_node_days(), p.planned_per_1000_node_days())
        }
    };
    let planned_rate = match i.planned_per_1000_node_days {
        Some(p) => check("planned_per_1000_node_days", p, false)?,
        None => preset_planned,
    };
    let lambda = job_rate_per_s(rate, nodes);
    let mu = job_rate_per_s(planned_rate, nodes);
    let mttf_s = 1.0 / lambda;

    // Checkpoint write, blocking part and restore.
    check("write_bw_gbps_per_node", i.write_bw_gbps_per_node, true)?;
    if let Some(t) = i.write_bw_gbps_total {
        check("write_bw_gbps_total", t, true)?;
    }
    let read_node = check(
        "read_bw_gbps_per_node",
        i.read_bw_gbps_per_node.unwrap_or(i.write_bw_gbps_per_node),
        true,
    )?;
    let read_total = match i.read_bw_gbps_total.or(i.write_bw_gbps_total) {
        Some(t) => Some(check("read_bw_gbps_total", t, true)?),
        None => None,
    };
    if let Some(mem) = i.job_memory_bytes {
        if i.checkpoint_size_bytes > mem {
            return Err(PlanError::CheckpointTooLarge {
                size_bytes: i.checkpoint_size_bytes,
                memory_bytes: mem,
            });
        }
    }
    let write_s = match i.checkpoint_write_s {
        Some(s) => check("checkpoint_write_s", s, true)?,
        None => {
            check_count("checkpoint_size_bytes", i.checkpoint_size_bytes)?;
            transfer_s(
                i.checkpoint_size_bytes,
                nodes,
                i.write_bw_gbps_per_node,
                i.write_bw_gbps_total,
            )
        }
    };
    let restore_s = match i.restore_s {
        Some(s) => check("restore_s", s, false)?,
        None if i.checkpoint_size_bytes == 0 => {
            notes.push(
                "no checkpoint size: the restore is taken to last as long as the write".into(),
            );
            write_s
        }
        None => transfer_s(i.checkpoint_size_bytes, nodes, read_node, read_total),
    };
    let blocking_s = if i.async_checkpoint {
        match i.async_blocking_s {
            Some(s) => check("async_blocking_s", s, false)?.min(write_s),
            None => {
                let copy = check("host_copy_gbps", i.host_copy_gbps, true)?;
                let share = i.checkpoint_size_bytes as f64 / f64::from(i.gpus);
                notes.push(format!(
                    "asynchronous checkpoint: training blocks while each GPU copies its share to host memory at {copy} GB/s (an assumption; give the measured blocking time)"
                ));
                (share / (copy * 1e9)).min(write_s)
            }
        }
    } else {
        write_s
    };
    let lag_s = write_s - blocking_s;

    // Recovery.
    let detection_s = check("detection_s", i.detection_s, false)?;
    let restart_s = check("restart_s", i.restart_s, false)?;
    let requeue_s = check("requeue_s", i.requeue_s, false)?;
    let repair_s = check("spare_repair_hours", i.spare_repair_hours, false)? * 3600.0;
    let price = check("gpu_hour_price", i.gpu_hour_price, false)?;
    let recovery_s = detection_s + restart_s;

    // The interval, in whole iterations.
    let optimal_s = daly_interval_s(blocking_s, mttf_s);
    let young_s = young_interval_s(blocking_s, mttf_s);
    let (wanted_s, source) = match i.checkpoint_interval {
        Interval::Seconds(s) => {
            let s = check("checkpoint_interval_s", s, true)?;
            if s < write_s {
                return Err(PlanError::IntervalTooShort {
                    interval_s: s,
                    checkpoint_s: write_s,
                });
            }
            (s, IntervalSource::Given)
        }
        Interval::Auto => {
            let floor = if i.async_checkpoint { lag_s } else { 0.0 };
            if optimal_s < floor {
                notes.push(format!(
                    "Daly's optimum ({optimal_s:.0} s) is shorter than the background write ({floor:.0} s); checkpoints are taken as often as the writes allow"
                ));
            }
            (optimal_s.max(floor), IntervalSource::Daly)
        }
    };
    let every = ((wanted_s / iteration_s).round() as u64).clamp(1, steps);
    let interval_s = every as f64 * iteration_s;
    let full_segments = steps / every;
    let remainder_s = (steps % every) as f64 * iteration_s;
    let n = full_segments as f64;
    let segments = n + f64::from(u8::from(remainder_s > 0.0));

    // Closed form. The chance that a failure finds no spare depends on how
    // often failures come in wall time, which depends on that chance: a
    // few fixed-point steps (one without spares or re-queue).
    let closed = |p_no_spare: f64| {
        let cost_s = recovery_s + restore_s + requeue_s * p_no_spare + lag_s;
        let full = segment(interval_s, blocking_s, cost_s, lambda);
        let last = if remainder_s > 0.0 {
            segment(remainder_s, blocking_s, cost_s, lambda)
        } else {
            formulas::Segment {
                wall_s: 0.0,
                failures: 0.0,
                lost_s: 0.0,
            }
        };
        (
            cost_s,
            n * full.wall_s + last.wall_s,
            n * full.failures + last.failures,
            n * full.lost_s + last.lost_s,
        )
    };
    let mut p_no_spare = 1.0;
    let mut state = closed(p_no_spare);
    if i.warm_spares > 0 && requeue_s > 0.0 {
        for _ in 0..20 {
            let (_, base_s, failures, _) = state;
            p_no_spare = no_spare_probability(i.warm_spares, failures / base_s, repair_s);
            state = closed(p_no_spare);
        }
    }
    let (failure_cost_s, base_s, failures, lost_s) = state;
    let planned = mu * base_s;
    let planned_cost_s = restart_s + restore_s;
    let wall_s = base_s + planned * planned_cost_s;
    let badput = Badput {
        checkpoint_save_s: segments * blocking_s,
        checkpoint_restore_s: failures * restore_s,
        wasted_progress_s: lost_s + failures * lag_s,
        infrastructure_recovery_s: failures * (recovery_s + requeue_s * p_no_spare),
        planned_maintenance_s: planned * planned_cost_s,
    };

    // Monte-Carlo.
    let drawn = failures * f64::from(i.runs);
    if drawn > MAX_DRAWN_FAILURES {
        return Err(PlanError::TooManyDraws(drawn));
    }
    let process = Process {
        interval_s,
        full_segments,
        remainder_s,
        blocking_s,
        lag_s,
        lambda_per_s: lambda,
        recovery_s,
        restore_s,
        requeue_s,
        spares: i.warm_spares,
        repair_s,
        planned_per_s: mu,
        planned_restart_s: restart_s,
    };
    let mut rng = SplitMix64::new(i.seed);
    let mut walls = Vec::with_capacity(i.runs as usize);
    let mut counts = Vec::with_capacity(i.runs as usize);
    let mut badput_mc = Badput::default();
    for _ in 0..i.runs {
        let r = simulate_run(&process, &mut rng, trace.take());
        walls.push(r.wall_s);
        counts.push(r.failures as f64);
        badput_mc.add(&r.badput);
    }
    let runs = f64::from(i.runs);
    let spread = |mut v: Vec<f64>, closed: f64| {
        v.sort_by(f64::total_cmp);
        Spread {
            p10: percentile(&v, 0.1),
            p50: percentile(&v, 0.5),
            p90: percentile(&v, 0.9),
            mean: v.iter().sum::<f64>() / runs,
            closed_form: closed,
        }
    };
    let days = spread(walls, wall_s).scaled(1.0 / formulas::DAY_S);
    let gpu_hours = days.scaled(24.0 * f64::from(i.gpus));
    Ok(RunPlan {
        steps,
        nodes,
        gpus: i.gpus,
        ideal_days: work_s / formulas::DAY_S,
        failure_rate_per_1000_node_days: rate,
        planned_per_1000_node_days: planned_rate,
        mttf_hours: mttf_s / 3600.0,
        expected_interruptions: failures,
        expected_planned_interruptions: planned,
        checkpoint_size_bytes: i.checkpoint_size_bytes,
        checkpoint_seconds: write_s,
        checkpoint_blocking_seconds: blocking_s,
        restore_seconds: restore_s,
        failure_cost_seconds: failure_cost_s,
        checkpoint_interval_s: interval_s,
        checkpoint_every_steps: every,
        interval_source: source,
        optimal_interval_s: optimal_s,
        young_interval_s: young_s,
        ettr: work_s / wall_s,
        days_to_train: days,
        cost: gpu_hours.scaled(price),
        gpu_hours,
        interruptions: spread(counts, failures),
        badput,
        badput_monte_carlo: badput_mc.scaled(1.0 / runs),
        seed: i.seed,
        runs: i.runs,
        notes,
    })
}
