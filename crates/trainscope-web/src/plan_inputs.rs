//! The "Plan the run" panel's inputs as the user types them
//! ([`PlanInputs`]): the amount (tokens or steps), the failure rate (a
//! preset of the core's [`PRESETS`], a rate per 1000 node-days or the job's
//! MTBF), the checkpoint (its write time, or its size over the write
//! bandwidth as the core computes it), detection and restart, the interval
//! (`auto` or seconds), asynchronous checkpointing, the seed and the
//! GPU-hour price. Defaults are the core's ([`crate::goodput`]'s constants
//! and [`RunPlanInput::new`]); the tokens start at one trillion, a starting
//! value to edit. [`PlanInputs::input`] makes the core's [`RunPlanInput`]
//! for a simulated job's [`PlanJob`] exactly as `trainscope plan` does from
//! the same flags ([`PlanInputs::cli_flags`]), and the inputs travel in the
//! page's link as `plan_*` keys ([`PlanInputs::fragment`],
//! [`PlanInputs::from_fragment`]). Pure Rust, no DOM.

use serde::{Deserialize, Serialize};
use trainscope_core::goodput::job_facts::PlanJob;
use trainscope_core::goodput::presets::PRESETS;
use trainscope_core::goodput::{
    FailureRate, Interval, RunPlanInput, Work, DEFAULT_DETECTION_S, DEFAULT_RESTART_S,
    DEFAULT_RUNS, DEFAULT_WRITE_GBPS_PER_NODE,
};

/// How much to train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AmountKind {
    Tokens,
    Steps,
}

/// How the failure rate is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FailureKind {
    /// A preset by name ([`PRESETS`]).
    Preset,
    /// Unexpected failures per 1000 node-days.
    Rate,
    /// The job's MTBF, hours.
    Mtbf,
}

/// The panel's inputs, as typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanInputs {
    pub amount_kind: AmountKind,
    pub amount: String,
    pub failure_kind: FailureKind,
    /// The preset's name, the rate or the MTBF.
    pub failure: String,
    /// Write time of one checkpoint, seconds (empty: size / bandwidth).
    pub checkpoint_seconds: String,
    /// Write bandwidth of one node, GB/s.
    pub write_gbps: String,
    pub detection_seconds: String,
    pub restart_seconds: String,
    /// `auto` or seconds.
    pub interval: String,
    pub async_checkpoint: bool,
    pub seed: String,
    pub gpu_hour_price: String,
}

fn number(f: f64) -> String {
    trainscope_core::limits::number(f)
}

impl Default for PlanInputs {
    fn default() -> Self {
        let neutral = RunPlanInput::new(1, Work::Steps(1), 1, 1);
        PlanInputs {
            amount_kind: AmountKind::Tokens,
            amount: "1000000000000".into(),
            failure_kind: FailureKind::Preset,
            failure: PRESETS[0].name.into(),
            checkpoint_seconds: String::new(),
            write_gbps: number(DEFAULT_WRITE_GBPS_PER_NODE),
            detection_seconds: number(DEFAULT_DETECTION_S),
            restart_seconds: number(DEFAULT_RESTART_S),
            interval: "auto".into(),
            async_checkpoint: neutral.async_checkpoint,
            seed: neutral.seed.to_string(),
            gpu_hour_price: number(neutral.gpu_hour_price),
        }
    }
}

/// The text fields of the link (`plan_KEY`), besides the amount, the
/// failure rate and the async flag.
const TEXT_KEYS: [&str; 7] = [
    "ckpt_s",
    "write_gbps",
    "detect_s",
    "restart_s",
    "interval",
    "seed",
    "price",
];

fn parse(name: &str, text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| format!("{name}: `{}` is not a number", text.trim()))
}

impl PlanInputs {
    fn text(&self, key: &str) -> &str {
        match key {
            "ckpt_s" => &self.checkpoint_seconds,
            "write_gbps" => &self.write_gbps,
            "detect_s" => &self.detection_seconds,
            "restart_s" => &self.restart_seconds,
            "interval" => &self.interval,
            "seed" => &self.seed,
            "price" => &self.gpu_hour_price,
            _ => "",
        }
    }

    fn text_mut(&mut self, key: &str) -> Option<&mut String> {
        Some(match key {
            "ckpt_s" => &mut self.checkpoint_seconds,
            "write_gbps" => &mut self.write_gbps,
            "detect_s" => &mut self.detection_seconds,
            "restart_s" => &mut self.restart_seconds,
            "interval" => &mut self.interval,
            "seed" => &mut self.seed,
            "price" => &mut self.gpu_hour_price,
            _ => return None,
        })
    }

    /// The core's input for `job` on nodes of `gpus_per_node`, as
    /// `trainscope plan` builds it from [`PlanInputs::cli_flags`];
    /// `Err`: a field that is not a value (the core checks the ranges).
    pub fn input(&self, job: &PlanJob, gpus_per_node: u32) -> Result<RunPlanInput, String> {
        let amount: u64 = self
            .amount
            .trim()
            .parse()
            .map_err(|_| format!("amount: `{}` is not a whole number", self.amount.trim()))?;
        let work = match (self.amount_kind, job.tokens_per_iteration) {
            (AmountKind::Steps, _) => Work::Steps(amount),
            (AmountKind::Tokens, Some(per)) => Work::Tokens {
                tokens: amount,
                tokens_per_iteration: per,
            },
            (AmountKind::Tokens, None) => {
                return Err("this job gives no tokens per iteration: plan steps".into())
            }
        };
        let mut i = RunPlanInput::new(job.iteration_time_ns, work, job.gpus, gpus_per_node);
        i.checkpoint_size_bytes = job.checkpoint_size_bytes.unwrap_or(0);
        i.job_memory_bytes = job.memory_bytes;
        i.failure_rate = match self.failure_kind {
            FailureKind::Preset => FailureRate::Preset(self.failure.trim().to_string()),
            FailureKind::Rate => {
                FailureRate::Per1000NodeDays(parse("failure rate", &self.failure)?)
            }
            FailureKind::Mtbf => FailureRate::JobMtbfHours(parse("job MTBF", &self.failure)?),
        };
        if !self.checkpoint_seconds.trim().is_empty() {
            i.checkpoint_write_s = Some(parse("checkpoint seconds", &self.checkpoint_seconds)?);
        }
        i.write_bw_gbps_per_node = parse("write bandwidth", &self.write_gbps)?;
        i.detection_s = parse("detection seconds", &self.detection_seconds)?;
        i.restart_s = parse("restart seconds", &self.restart_seconds)?;
        i.checkpoint_interval = if self.interval.trim().eq_ignore_ascii_case("auto") {
            Interval::Auto
        } else {
            Interval::Seconds(parse(
                "checkpoint interval (auto or seconds)",
                &self.interval,
            )?)
        };
        i.async_checkpoint = self.async_checkpoint;
        i.seed = self
            .seed
            .trim()
            .parse()
            .map_err(|_| format!("seed: `{}` is not a whole number", self.seed.trim()))?;
        i.gpu_hour_price = parse("GPU-hour price", &self.gpu_hour_price)?;
        i.runs = DEFAULT_RUNS;
        Ok(i)
    }

    /// `trainscope plan`'s run flags for these inputs (after the job's
    /// flags): the amount and the failure rate always, the others where
    /// they differ from the defaults.
    pub fn cli_flags(&self) -> String {
        let d = PlanInputs::default();
        let mut out = String::new();
        out.push_str(match self.amount_kind {
            AmountKind::Tokens => " --tokens ",
            AmountKind::Steps => " --steps ",
        });
        out.push_str(self.amount.trim());
        out.push_str(match self.failure_kind {
            FailureKind::Preset => " --failure-preset ",
            FailureKind::Rate => " --failure-rate ",
            FailureKind::Mtbf => " --job-mtbf-hours ",
        });
        out.push_str(self.failure.trim());
        for (key, flag) in [
            ("ckpt_s", "--checkpoint-seconds"),
            ("write_gbps", "--checkpoint-write-gbps"),
            ("detect_s", "--detection-seconds"),
            ("restart_s", "--restart-seconds"),
            ("interval", "--checkpoint-interval"),
            ("price", "--gpu-hour-price"),
            ("seed", "--seed"),
        ] {
            let v = self.text(key).trim();
            if v != d.text(key).trim() && !v.is_empty() {
                out.push_str(&format!(" {flag} {v}"));
            }
        }
        if self.async_checkpoint {
            out.push_str(" --async-checkpoint");
        }
        out
    }

    /// The link's part: every input as a `plan_KEY=VALUE` pair.
    pub fn fragment(&self) -> String {
        let enc = |s: &str| crate::url::encode_component(s.trim());
        let mut parts = vec![
            match self.amount_kind {
                AmountKind::Tokens => format!("plan_tokens={}", enc(&self.amount)),
                AmountKind::Steps => format!("plan_steps={}", enc(&self.amount)),
            },
            match self.failure_kind {
                FailureKind::Preset => format!("plan_preset={}", enc(&self.failure)),
                FailureKind::Rate => format!("plan_rate={}", enc(&self.failure)),
                FailureKind::Mtbf => format!("plan_mtbf={}", enc(&self.failure)),
            },
        ];
        for key in TEXT_KEYS {
            parts.push(format!("plan_{key}={}", enc(self.text(key))));
        }
        parts.push(format!("plan_async={}", u8::from(self.async_checkpoint)));
        parts.join("&")
    }

    /// The inputs a link carries (its `plan_*` pairs over the defaults);
    /// `None` when it carries none.
    pub fn from_fragment(fragment: &str) -> Option<PlanInputs> {
        let mut p = PlanInputs::default();
        let mut any = false;
        for (k, v) in fragment
            .trim_start_matches('#')
            .split('&')
            .filter_map(|kv| kv.split_once('='))
        {
            let Some(key) = k.strip_prefix("plan_") else {
                continue;
            };
            let v = crate::url::decode_component(v);
            any = true;
            match key {
                "tokens" | "steps" => {
                    p.amount_kind = if key == "tokens" {
                        AmountKind::Tokens
                    } else {
                        AmountKind::Steps
                    };
                    p.amount = v;
                }
                "preset" | "rate" | "mtbf" => {
                    p.failure_kind = match key {
                        "preset" => FailureKind::Preset,
                        "rate" => FailureKind::Rate,
                        _ => FailureKind::Mtbf,
                    };
                    p.failure = v;
                }
                "async" => p.async_checkpoint = v == "1",
                other => {
                    if let Some(slot) = p.text_mut(other) {
                        *slot = v;
                    }
                }
            }
        }
        any.then_some(p)
    }
}
