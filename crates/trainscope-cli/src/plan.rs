//! `trainscope plan`: the whole run of a job — days to train, failures,
//! checkpoints, restarts, GPU-hours and cost — from the core's
//! [`trainscope_core::goodput`] planner. The job is either simulated here
//! from the flags of `simulate --model` (shared, not copied:
//! [`crate::model::simulate_job`]) or read from a `simulate --json` output
//! (`--from-json FILE`); both go through the same report JSON, so the two
//! give the same plan for the same job.
//!
//! From the report it takes the iteration time, the GPUs (`training.world`,
//! else the `parallel` sizes), the tokens per iteration (global batch x
//! sequence length) and the checkpoint size: one copy of the job's state,
//! counted per model replica, not per rank: the model's parameters times
//! the memory model's bytes per parameter for the weights and the
//! optimizer states (bf16: 2 + 12, the fp32 main weights and Adam's two
//! moments; gradients are not saved). A data-parallel job holds DP copies
//! of the weights but writes one. Reports of measured runs or workload
//! files carry no model: give `--checkpoint-bytes` or
//! `--checkpoint-seconds`, and `--steps`.
//!
//! Exit codes: 0 success, 2 usage (a missing or unreadable input), 3 a
//! JSON that does not parse, 4 an invalid run setting (the core's message
//! and hint) or an invalid job.

use crate::io::{EXIT_CONFIG, EXIT_PARSE, EXIT_USAGE};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::PathBuf;
use trainscope_core::goodput::job_facts::checkpoint_size_bytes;
use trainscope_core::goodput::presets::{preset_names, PRESETS};
use trainscope_core::goodput::{
    duration_text, plan, FailureRate, Interval, RunPlan, RunPlanInput, Work, DEFAULT_DETECTION_S,
    DEFAULT_RESTART_S, DEFAULT_RUNS, DEFAULT_SPARE_REPAIR_HOURS, DEFAULT_WRITE_GBPS_PER_NODE,
};
use trainscope_core::hardware::Precision;

/// `trainscope plan`: the job (the flags of `simulate --model`, or
/// `--from-json`) and the run.
#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// A `trainscope simulate --json` output to plan instead of simulating
    /// a `--model` job.
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub from_json: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunFlags,
    #[command(flatten)]
    pub job: crate::args::Args,
}

/// `auto` or seconds.
fn parse_interval(text: &str) -> std::result::Result<Interval, String> {
    if text.eq_ignore_ascii_case("auto") {
        return Ok(Interval::Auto);
    }
    text.parse::<f64>()
        .map(Interval::Seconds)
        .map_err(|_| format!("`{text}` is neither `auto` nor a number of seconds"))
}

/// The run's flags (`plan` requires an amount and a failure rate;
/// `sweep` only with `--rank-by time-to-train`: [`RunFlags::missing`]).
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Run (plan)")]
#[command(group(clap::ArgGroup::new("amount").args(["tokens", "steps"])))]
#[command(group(clap::ArgGroup::new("failures").args(["failure_rate", "failure_preset", "job_mtbf_hours"])))]
pub struct RunFlags {
    /// Tokens to train (rounded up to whole iterations of global batch x
    /// sequence length).
    #[arg(long, value_name = "N")]
    pub tokens: Option<u64>,
    /// Iterations to train.
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,
    /// Unexpected failures per 1000 node-days.
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub failure_rate: Option<f64>,
    /// A failure rate by its source: llama3-405b, meta-rsc1, meta-rsc2,
    /// opt-175b, bloom-176b (`--failure-preset list` prints them).
    #[arg(long, value_name = "NAME")]
    pub failure_preset: Option<String>,
    /// The whole job's mean time between failures, hours.
    #[arg(long, value_name = "H", allow_negative_numbers = true)]
    pub job_mtbf_hours: Option<f64>,
    /// Planned interruptions per 1000 node-days (default: the preset's,
    /// else 0).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub planned_rate: Option<f64>,
    /// Checkpoint size, bytes (default: weights and optimizer states of
    /// the job, once).
    #[arg(long, value_name = "N")]
    pub checkpoint_bytes: Option<u64>,
    /// Write time of one checkpoint, seconds (instead of size / bandwidth).
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub checkpoint_seconds: Option<f64>,
    /// Read time of a checkpoint at restart, seconds (default: size / read
    /// bandwidth).
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub restore_seconds: Option<f64>,
    /// Checkpoint write bandwidth of one node, GB/s (default 5, an
    /// assumption: give your storage's).
    #[arg(
        long,
        value_name = "X",
        default_value_t = DEFAULT_WRITE_GBPS_PER_NODE,
        allow_negative_numbers = true
    )]
    pub checkpoint_write_gbps: f64,
    /// The storage system's total write bandwidth, GB/s (default:
    /// unlimited).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub storage_write_gbps: Option<f64>,
    /// Checkpoint read bandwidth of one node, GB/s (default: the write's).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub checkpoint_read_gbps: Option<f64>,
    /// The storage system's total read bandwidth, GB/s (default: the
    /// write total).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub storage_read_gbps: Option<f64>,
    /// Asynchronous checkpointing: training blocks only while each GPU
    /// copies its share to host memory.
    #[arg(long)]
    pub async_checkpoint: bool,
    /// The blocking part of an asynchronous checkpoint, seconds (default:
    /// each GPU's share at 25 GB/s to host memory).
    #[arg(
        long,
        value_name = "S",
        requires = "async_checkpoint",
        allow_negative_numbers = true
    )]
    pub async_blocking_seconds: Option<f64>,
    /// Checkpoint interval: `auto` (Daly's optimum) or seconds of training.
    #[arg(long, value_name = "auto|SECONDS", value_parser = parse_interval, default_value = "auto")]
    pub checkpoint_interval: Interval,
    /// From a failure to the decision to restart, seconds (default 300).
    #[arg(
        long,
        value_name = "S",
        default_value_t = DEFAULT_DETECTION_S,
        allow_negative_numbers = true
    )]
    pub detection_seconds: f64,
    /// Restart after a failure or planned stop: re-initialisation and
    /// re-scheduling, not the checkpoint read, seconds (default 600).
    #[arg(
        long,
        value_name = "S",
        default_value_t = DEFAULT_RESTART_S,
        allow_negative_numbers = true
    )]
    pub restart_seconds: f64,
    /// Waiting for a replacement node when no warm spare is free, seconds
    /// (default 0).
    #[arg(
        long,
        value_name = "S",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    pub requeue_seconds: f64,
    /// Warm spare nodes next to the job (default 0).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warm_spares: u32,
    /// Hours before a failed node is back as a spare (default 24).
    #[arg(
        long,
        value_name = "H",
        default_value_t = DEFAULT_SPARE_REPAIR_HOURS,
        allow_negative_numbers = true
    )]
    pub spare_repair_hours: f64,
    /// Price of one GPU-hour (default 0: no cost printed).
    #[arg(
        long,
        value_name = "X",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    pub gpu_hour_price: f64,
    /// Monte-Carlo runs.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RUNS)]
    pub runs: u32,
}

impl RunFlags {
    /// What a plan needs and these flags lack (`--tokens`/`--steps`, a
    /// failure rate), as the message to print; None: complete.
    pub fn missing(&self) -> Option<&'static str> {
        if self.tokens.is_none() && self.steps.is_none() {
            return Some("give the run's amount: --tokens N or --steps N");
        }
        if self.failure_rate.is_none()
            && self.failure_preset.is_none()
            && self.job_mtbf_hours.is_none()
        {
            return Some(
                "give a failure rate: --failure-rate R, --failure-preset NAME or --job-mtbf-hours H",
            );
        }
        None
    }

    /// Whether any of the run's flags that only a plan reads is given.
    pub fn any_given(&self) -> bool {
        self.tokens.is_some()
            || self.steps.is_some()
            || self.failure_rate.is_some()
            || self.failure_preset.is_some()
            || self.job_mtbf_hours.is_some()
    }

    /// The failure rate given (`--job-mtbf-hours` first, then
    /// `--failure-rate`, then the preset; clap allows one).
    fn failure(&self) -> Option<FailureRate> {
        match (self.failure_rate, &self.failure_preset, self.job_mtbf_hours) {
            (_, _, Some(h)) => Some(FailureRate::JobMtbfHours(h)),
            (Some(x), _, _) => Some(FailureRate::Per1000NodeDays(x)),
            (None, Some(name), None) => Some(FailureRate::Preset(name.clone())),
            (None, None, None) => None,
        }
    }

    /// The core's plan input of `work` for a job of `iteration_time_ns` on
    /// `gpus`, with every run flag applied (the checkpoint size 0: the
    /// caller's).
    pub fn input(
        &self,
        iteration_time_ns: u64,
        work: Work,
        gpus: u32,
        gpus_per_node: u32,
        seed: u64,
    ) -> RunPlanInput {
        let r = self;
        let mut input = RunPlanInput::new(iteration_time_ns, work, gpus, gpus_per_node);
        input.checkpoint_size_bytes = r.checkpoint_bytes.unwrap_or(0);
        input.write_bw_gbps_per_node = r.checkpoint_write_gbps;
        input.write_bw_gbps_total = r.storage_write_gbps;
        input.read_bw_gbps_per_node = r.checkpoint_read_gbps;
        input.read_bw_gbps_total = r.storage_read_gbps;
        input.checkpoint_write_s = r.checkpoint_seconds;
        input.restore_s = r.restore_seconds;
        input.async_checkpoint = r.async_checkpoint;
        input.async_blocking_s = r.async_blocking_seconds;
        if let Some(f) = r.failure() {
            input.failure_rate = f;
        }
        input.planned_per_1000_node_days = r.planned_rate;
        input.detection_s = r.detection_seconds;
        input.restart_s = r.restart_seconds;
        input.requeue_s = r.requeue_seconds;
        input.warm_spares = r.warm_spares;
        input.spare_repair_hours = r.spare_repair_hours;
        input.checkpoint_interval = r.checkpoint_interval;
        input.gpu_hour_price = r.gpu_hour_price;
        input.seed = seed;
        input.runs = r.runs;
        input
    }
}

/// What the plan takes from a simulated job's report.
#[derive(Debug, Clone, PartialEq)]
struct JobFacts {
    what: String,
    iteration_time_ns: u64,
    gpus: u32,
    tokens_per_iteration: Option<u64>,
    checkpoint_size_bytes: Option<u64>,
    memory_bytes: Option<u64>,
}

/// The facts of a `simulate --json` report (`Err`: what is missing).
fn job_facts(v: &Value) -> std::result::Result<JobFacts, String> {
    let iteration_time_ns = v["iteration_time_ns"]
        .as_u64()
        .filter(|&t| t > 0)
        .ok_or("no `iteration_time_ns`: not a `trainscope simulate --json` output")?;
    let t = &v["training"];
    let p = &v["parallel"];
    let size = |x: &Value| x.as_u64().unwrap_or(1).max(1);
    let gpus = match t["world"].as_u64() {
        Some(w) => w,
        None if p.is_object() => size(&p["tp"]) * size(&p["dp"]) * size(&p["pp"]) * size(&p["cp"]),
        None => return Err("no `training.world` or `parallel` sizes".into()),
    };
    let gpus = u32::try_from(gpus).map_err(|_| format!("{gpus} GPUs is too many"))?;
    let tokens_per_iteration = t["global_batch_size"]
        .as_u64()
        .zip(t["seq_length"].as_u64())
        .map(|(b, s)| b * s);
    let checkpoint_size_bytes = match (v["model"]["parameters"].as_u64(), t["precision"].as_str()) {
        (Some(params), Some(name)) => {
            let precision = Precision::from_name(name)
                .ok_or_else(|| format!("unknown precision `{name}` in the report"))?;
            let bf16_grads = t["bf16_grads"].as_bool().unwrap_or(false);
            Some(checkpoint_size_bytes(params, precision, bf16_grads))
        }
        _ => None,
    };
    let memory_bytes = v["memory"]["capacity_bytes"]
        .as_u64()
        .map(|c| c.saturating_mul(u64::from(gpus)));
    let what = match v["model"]["name"].as_str() {
        Some(name) => format!("{name} on {gpus} {}", t["gpu"].as_str().unwrap_or("GPUs")),
        None => format!("{} on {gpus} GPUs", v["job"].as_str().unwrap_or("the job")),
    };
    Ok(JobFacts {
        what,
        iteration_time_ns,
        gpus,
        tokens_per_iteration,
        checkpoint_size_bytes,
        memory_bytes,
    })
}

fn presets_text() -> String {
    let mut out = String::from("failure presets (--failure-preset NAME):\n");
    for p in PRESETS {
        out.push_str(&format!(
            "  {:<12} {:>6.2} unexpected + {:.2} planned per 1000 node-days  {}\n",
            p.name,
            p.per_1000_node_days(),
            p.planned_per_1000_node_days(),
            p.source
        ));
    }
    out
}

/// Run `trainscope plan`; returns the exit code.
pub fn run(args: &PlanArgs) -> Result<u8> {
    let r = &args.run;
    if r.failure_preset.as_deref() == Some("list") {
        crate::io::print_stdout(&presets_text())?;
        return Ok(0);
    }
    if let Some(why) = r.missing() {
        eprintln!("error: {why}");
        return Ok(EXIT_USAGE);
    }
    let report = match (&args.from_json, &args.job.model.model) {
        (Some(path), _) => {
            if !args.job.files.is_empty() {
                eprintln!("error: --from-json reads one report; do not also give files");
                return Ok(EXIT_USAGE);
            }
            let given = args.job.model.given();
            if !given.is_empty() {
                eprintln!(
                    "error: {} describe a job to simulate; --from-json reads one already simulated",
                    given.join(", ")
                );
                return Ok(EXIT_USAGE);
            }
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("error: {} is not JSON: {e}", path.display());
                    return Ok(EXIT_PARSE);
                }
            }
        }
        (None, Some(model)) => {
            if model == "list" {
                eprintln!(
                    "error: `--model list` lists presets: run `trainscope simulate --model list`"
                );
                return Ok(EXIT_USAGE);
            }
            match crate::model::simulate_job(&args.job, model)? {
                Ok(out) => out.report_json(),
                Err(code) => return Ok(code),
            }
        }
        (None, None) => {
            eprintln!("error: plan needs a job: --model MODEL [job flags] or --from-json FILE (a `simulate --json` output)");
            return Ok(EXIT_USAGE);
        }
    };
    let facts = match job_facts(&report) {
        Ok(f) => f,
        Err(why) => {
            eprintln!("error: cannot plan from this report: {why}");
            return Ok(EXIT_USAGE);
        }
    };
    let work = match (r.tokens, r.steps) {
        (_, Some(steps)) => Work::Steps(steps),
        (Some(tokens), None) => match facts.tokens_per_iteration {
            Some(per) => Work::Tokens {
                tokens,
                tokens_per_iteration: per,
            },
            None => {
                eprintln!("error: the report gives no tokens per iteration (global batch x sequence length); give --steps");
                return Ok(EXIT_USAGE);
            }
        },
        (None, None) => unreachable!("RunFlags::missing checked the amount"),
    };
    let size = r.checkpoint_bytes.or(facts.checkpoint_size_bytes);
    if size.is_none() && r.checkpoint_seconds.is_none() {
        eprintln!("error: the report has no model to size the checkpoint from; give --checkpoint-bytes or --checkpoint-seconds");
        return Ok(EXIT_USAGE);
    }
    let gpus_per_node = args.job.simai.gpus_per_server.unwrap_or(8);
    let mut input = r.input(
        facts.iteration_time_ns,
        work,
        facts.gpus,
        gpus_per_node,
        args.job.whatif.faults.seed(),
    );
    input.checkpoint_size_bytes = size.unwrap_or(0);
    input.job_memory_bytes = facts.memory_bytes;
    let planned = match plan(&input) {
        Ok(p) => p,
        Err(e) => {
            eprint!("{}", e.to_diagnostic().render());
            if matches!(e, trainscope_core::goodput::PlanError::UnknownPreset(_)) {
                eprintln!("  (presets: {})", preset_names());
            }
            return Ok(EXIT_CONFIG);
        }
    };
    if args.job.json {
        let mut v = serde_json::to_value(&planned)?;
        v["job"] = json!({
            "what": facts.what,
            "iteration_time_ns": facts.iteration_time_ns,
            "gpus": facts.gpus,
            "gpus_per_node": gpus_per_node,
            "tokens_per_iteration": facts.tokens_per_iteration,
        });
        crate::io::print_stdout(&(serde_json::to_string_pretty(&v)? + "\n"))?;
    } else {
        crate::io::print_stdout(&render_text(&facts, &planned, r.gpu_hour_price > 0.0))?;
    }
    Ok(0)
}

/// The readable plan.
fn render_text(f: &JobFacts, p: &RunPlan, priced: bool) -> String {
    let d = &p.days_to_train;
    let mut out = format!(
        "{}: plan of {} iterations of {:.3} s on {} GPUs ({} nodes)\n",
        f.what,
        p.steps,
        f.iteration_time_ns as f64 / 1e9,
        p.gpus,
        p.nodes
    );
    out.push_str(&format!(
        "  failures: {:.2} unexpected + {:.2} planned per 1000 node-days; job MTTF {:.2} h\n",
        p.failure_rate_per_1000_node_days, p.planned_per_1000_node_days, p.mttf_hours
    ));
    out.push_str(&format!(
        "  checkpoint: {:.1} GB, write {} (training blocked {}), restore {}\n",
        p.checkpoint_size_bytes as f64 / 1e9,
        duration_text(p.checkpoint_seconds),
        duration_text(p.checkpoint_blocking_seconds),
        duration_text(p.restore_seconds)
    ));
    let source = match p.interval_source {
        trainscope_core::goodput::IntervalSource::Daly => "Daly's optimum".to_string(),
        trainscope_core::goodput::IntervalSource::Given => {
            format!(
                "given; Daly's optimum {}",
                duration_text(p.optimal_interval_s)
            )
        }
    };
    out.push_str(&format!(
        "  interval: {} every {} iterations ({source}; Young's {})\n",
        duration_text(p.checkpoint_interval_s),
        p.checkpoint_every_steps,
        duration_text(p.young_interval_s)
    ));
    out.push_str(&format!(
        "  cost of one failure: {} (detection, restart, restore, re-queue)\n\n",
        duration_text(p.failure_cost_seconds)
    ));
    out.push_str(&format!(
        "  ideal (no failures, no checkpoints): {:.2} days\n",
        p.ideal_days
    ));
    out.push_str(&format!(
        "  days to train: P10 {:.2} · P50 {:.2} · P90 {:.2} · expected {:.2} (renewal model)\n",
        d.p10, d.p50, d.p90, d.closed_form
    ));
    out.push_str(&format!(
        "  ETTR {:.1}% · interruptions: {:.1} expected unexpected (P10 {:.0}, P90 {:.0}) + {:.1} planned\n",
        p.ettr * 100.0,
        p.expected_interruptions,
        p.interruptions.p10,
        p.interruptions.p90,
        p.expected_planned_interruptions
    ));
    let g = &p.gpu_hours;
    out.push_str(&format!(
        "  GPU-hours: P50 {:.0} (P10 {:.0}, P90 {:.0})\n",
        g.p50, g.p10, g.p90
    ));
    if priced {
        let c = &p.cost;
        out.push_str(&format!(
            "  cost: P50 {:.0} (P10 {:.0}, P90 {:.0})\n",
            c.p50, c.p10, c.p90
        ));
    }
    let b = &p.badput;
    out.push_str("\n  badput (renewal model), ml-goodput-measurement categories:\n");
    let wall = d.closed_form * 86_400.0;
    for (what, s) in [
        ("checkpoint save", b.checkpoint_save_s),
        ("checkpoint restore", b.checkpoint_restore_s),
        ("wasted progress (lost work)", b.wasted_progress_s),
        ("infrastructure recovery", b.infrastructure_recovery_s),
        ("planned maintenance", b.planned_maintenance_s),
    ] {
        out.push_str(&format!(
            "    {what:<28} {:>12} {:>6.2}%\n",
            duration_text(s),
            s / wall * 100.0
        ));
    }
    out.push_str(&format!(
        "  Monte-Carlo: {} runs, seed {}\n",
        p.runs, p.seed
    ));
    for n in &p.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}
