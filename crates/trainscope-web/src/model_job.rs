//! Worker side of a described job ("Describe a job" panel, or a dropped
//! `config.json` run with the panel's settings): resolve the model (a
//! preset, or the loaded file parsed with the core's HuggingFace reader),
//! the GPU preset and the training setup, let the core validate the
//! combination ([`ModelJob::new`]: its [`JobError`] message and hint are
//! the CLI's), and simulate with [`run_model`] under the page's event
//! settings ([`crate::engine_run::event_config`]): the same entry and the same
//! settings as `trainscope simulate --model ... [cluster flags]`, so page
//! and CLI print the same numbers. The result is an ordinary event view
//! ([`crate::present::event_view`]: breakdown, per-stage table, timeline,
//! downloads) plus the model's figures ([`ModelView`]: MFU, model TFLOP/s
//! per GPU, tokens/s, memory per stage against the capacity).
//!
//! The settings are the job's ([`JobSettings::sim_settings`]: its layout,
//! its GPU's NVLink bandwidth unless the user typed the bandwidth in the
//! Configure panel, as `--nvlink-gbps` wins on the command line, and the
//! interleaved schedule when it has virtual stages, as `--vpp` selects).
//!
//! [`JobError`]: trainscope_core::job::JobError

use crate::engine_run::{event_config, run_error_diagnostics, ExportSource, Simulated};
use crate::job::{JobModel, JobSettings};
use crate::present::event_view;
use crate::protocol::{JobOutcome, NamedTimeline};
use crate::settings::{Field, Mode, Settings};
use crate::views::{MemoryView, ModelView, ResultView, StageMemoryView};
use std::collections::BTreeSet;
use trainscope_core::engine::SimConfig;
use trainscope_core::formats::decode_text;
use trainscope_core::hardware::{gpu_preset, GpuSpec, GPU_NAMES};
use trainscope_core::job::memory;
use trainscope_core::job::run::{run_model_with, ModelRunOutput};
use trainscope_core::job::{ModelJob, TrainingSetup, DEFAULT_GLOBAL_BATCH};
use trainscope_core::search::start::smallest_fitting;
use trainscope_core::search::SweepSpec;
use trainscope_core::Diagnostic;
use trainscope_core::{
    formats::hf,
    model::{presets, ModelSpec},
};

/// The model a job names: a preset, or a loaded config file (found by
/// name among `pairs`) parsed; the configuration search takes it too.
pub fn resolve_model(pairs: &[(&str, &[u8])], model: &JobModel) -> Result<ModelSpec, Diagnostic> {
    match model {
        JobModel::Preset(name) => presets::lookup(name),
        JobModel::File(name) => {
            let Some(&(_, bytes)) = pairs.iter().find(|(n, _)| n == name) else {
                return Err(Diagnostic::error(format!(
                    "the model file `{name}` is not loaded"
                ))
                .with_hint(format!(
                    "drop `{name}` on the page (a link names a dropped file but cannot carry it), or choose a preset"
                )));
            };
            let (text, _) = decode_text(name, bytes)?;
            // The file card lists every message; the first error is the
            // reason the job cannot run.
            hf::parse(name, &text).map(|(m, _)| m).map_err(|ds| {
                ds.into_iter()
                    .next()
                    .unwrap_or_else(|| Diagnostic::error(format!("`{name}` is not a model config")))
            })
        }
    }
}

fn gpu(name: &str) -> Result<GpuSpec, Diagnostic> {
    gpu_preset(name).ok_or_else(|| {
        Diagnostic::error(format!(
            "unknown GPU type `{name}`; expected one of: {}",
            GPU_NAMES.join(", ")
        ))
    })
}

/// Simulate the described `job` (its model file, if any, among `pairs`)
/// under the page's event settings. Every reason it cannot run is the
/// outcome's `error`, shown in the job panel.
pub fn simulate_job(
    pairs: &[(&str, &[u8])],
    job: &JobSettings,
    settings: &Settings,
    pinned: &BTreeSet<Field>,
) -> Simulated {
    let mut outcome = JobOutcome {
        model: job.model.clone(),
        error: None,
        start: None,
    };
    match run_job(pairs, job, settings, pinned) {
        Ok(out) => {
            let timelines = vec![NamedTimeline {
                label: "simulated".into(),
                timeline: out.run.result.timeline.clone(),
            }];
            Simulated {
                view: Some(model_view(&out)),
                timelines,
                source: Some(ExportSource::Model(Box::new(out))),
                job: Some(outcome),
                ..Simulated::default()
            }
        }
        Err(d) => {
            outcome.error = Some(d);
            Simulated {
                job: Some(outcome),
                ..Simulated::default()
            }
        }
    }
}

/// The job built, validated and simulated, or the first reason it cannot be.
pub fn run_job(
    pairs: &[(&str, &[u8])],
    job: &JobSettings,
    settings: &Settings,
    pinned: &BTreeSet<Field>,
) -> Result<ModelRunOutput, Diagnostic> {
    if settings.mode == Mode::Simai {
        return Err(Diagnostic::error(
            "the SimAI-compatible mode reads a SimAI workload; a described job is simulated in the event-level mode",
        )
        .with_hint("switch the mode to event-level, or export the job with `trainscope convert --model ... --to simai-workload` and load that"));
    }
    let model = resolve_model(pairs, &job.model)?;
    run_job_with(model, job, settings, pinned)
}

pub use crate::job::nvlink_pinned;

/// The simulation settings of a model-level job on `gpu`: Configure's,
/// with the GPU's NVLink bandwidth unless [`nvlink_pinned`].
pub fn job_sim_config(gpu: &GpuSpec, settings: &Settings, pinned: &BTreeSet<Field>) -> SimConfig {
    let (mut config, _) = event_config(settings, pinned);
    if !nvlink_pinned(pinned) {
        config.network.nvlink_gbps = gpu.nvlink_busbw_gbps;
    }
    config
}

/// [`run_job`] with the model already resolved (parsed once when one
/// model is simulated several times, as Compare schedules does).
pub fn run_job_with(
    model: ModelSpec,
    job: &JobSettings,
    settings: &Settings,
    pinned: &BTreeSet<Field>,
) -> Result<ModelRunOutput, Diagnostic> {
    let gpu = gpu(&job.gpu)?;
    let settings = &job.sim_settings(settings, pinned);
    let config = job_sim_config(&gpu, settings, pinned);
    let blame = event_config(settings, pinned).1.blame;
    let model_job = ModelJob::new(model, job.setup(), gpu, None).map_err(|e| e.to_diagnostic())?;
    run_model_with(&model_job, &config, blame).map_err(|e| {
        run_error_diagnostics(&e)
            .into_iter()
            .next()
            .unwrap_or_else(|| Diagnostic::error("the job could not be simulated"))
    })
}

/// The job to run when the loaded input `name` is a HuggingFace
/// `config.json` (format from `summaries`): the panel's `job` on that
/// file's model. `None` for any other input.
pub fn config_file_job(
    summaries: &[trainscope_core::inspect::FileSummary],
    name: &str,
    job: &JobSettings,
) -> Option<JobSettings> {
    let format = summaries.iter().find(|s| s.file == name)?.format;
    (format == Some(trainscope_core::workload::Format::HfConfig))
        .then(|| job.with_model(JobModel::File(name.to_string())))
}

/// The layout a dropped `config.json` starts from when the panel has none
/// set (its training setup is the default): the fewest GPUs of the job's
/// GPU it fits on ([`smallest_fitting`]), with the panel's batch, sequence
/// length, precision and software stack and Configure's GPUs per node; the
/// job with that layout and the line that says so. `None` when the panel
/// has a layout, or nothing fits.
pub fn start_layout(
    model: &ModelSpec,
    job: &JobSettings,
    settings: &Settings,
) -> Option<(JobSettings, String)> {
    if job.training != JobSettings::default().training {
        return None;
    }
    let gpu = gpu(&job.gpu).ok()?;
    let t = &job.training;
    let mut spec = SweepSpec::new(model.clone(), gpu.clone(), 1);
    spec.gpus_per_node = settings.gpus_per_node;
    spec.global_batch_size = t.global_batch_size.unwrap_or(DEFAULT_GLOBAL_BATCH);
    spec.seq_length = t.seq_length;
    spec.precision = t.precision;
    spec.flash_attention = t.flash_attention;
    spec.bf16_grads = t.bf16_grads;
    spec.fp8_param_gather = t.fp8_param_gather;
    spec.stack = t.stack;
    let c = smallest_fitting(&spec)?;
    let s = &c.job.setup;
    let mut out = job.clone();
    out.training = TrainingSetup {
        dp: Some(c.job.dp),
        global_batch_size: t.global_batch_size,
        ..s.clone()
    };
    let note = format!(
        "Starting layout: TP {} · PP {} · DP {}{} on {} × {}, the fewest GPUs the model fits on (memory check: 1F1B, micro-batch 1, {} micro-batches); change it here.",
        s.tp,
        s.pp,
        c.job.dp,
        if s.ep > 1 { format!(" · EP {}", s.ep) } else { String::new() },
        c.job.world,
        gpu.name,
        c.job.micro_batches,
    );
    Some((out, note))
}

/// A model-level run as the Read panel: the event view (breakdown,
/// per-stage table, downloads named after the model) with the model's
/// figures; the memory messages move from the warnings to the memory view.
pub fn model_view(out: &ModelRunOutput) -> ResultView {
    let mut v = event_view(&out.run);
    v.title = "Model-level job (event-level simulation)".into();
    let j = &out.job;
    let m = &j.model;
    let p = m.parameters();
    let active = if p.active != p.total {
        format!(", {:.2} B active", p.active as f64 / 1e9)
    } else {
        String::new()
    };
    let s = &j.setup;
    let expert_tp = j.expert_layout_label();
    let description = format!(
        "{} ({}, {:.2} B parameters{active}) on {} × {}: TP {} · PP {} · DP {} · EP {}{expert_tp} · vpp {} · global batch {} = {} micro-batches of {} × {} tokens · {} · recompute {}{}{} — model: {}",
        m.name,
        m.family.name(),
        p.total as f64 / 1e9,
        j.world,
        j.gpu.name,
        s.tp,
        s.pp,
        j.dp,
        s.ep,
        s.vpp,
        j.global_batch_size,
        j.micro_batches,
        s.micro_batch_size,
        s.seq_length,
        s.precision.name(),
        s.recompute.name(),
        if s.sequence_parallel { " · sequence parallel" } else { "" },
        match s.sharding.zero.level() {
            0 => String::new(),
            1 => " · distributed optimizer".to_string(),
            z => format!(" · ZeRO-{z}"),
        },
        m.source,
    );
    let description = if s.cp > 1 {
        format!(
            "{description} · context parallel CP {} (each rank holds {} of the {} tokens of a sequence)",
            s.cp,
            s.seq_length / s.cp,
            s.seq_length
        )
    } else {
        description
    };
    let description = if j.is_uneven() {
        let layers: Vec<String> = (0..s.pp)
            .map(|st| j.stage_layer_range(st).len().to_string())
            .collect();
        format!("{description} · layers per stage {}", layers.join("/"))
    } else {
        description
    };
    let mem = &out.memory;
    let per_chunk = memory::chunk_activation_bytes(&out.job);
    for a in &mut v.activations {
        a.bytes_per_chunk = per_chunk.get(a.stage as usize).copied();
    }
    v.diagnostics.retain(|d| {
        !mem.messages
            .iter()
            .any(|msg| d.message.contains(msg.as_str()))
    });
    v.model = Some(ModelView {
        name: m.name.clone(),
        description,
        mfu: out.throughput.mfu,
        model_tflops_per_gpu: out.throughput.model_tflops_per_gpu,
        tokens_per_second: out.throughput.tokens_per_second,
        memory: MemoryView {
            gpu: j.gpu.name.clone(),
            capacity_bytes: mem.capacity_bytes,
            fits: mem.fits,
            stages: mem
                .per_stage
                .iter()
                .map(|st| StageMemoryView {
                    stage: st.stage,
                    weights_bytes: st.weights_bytes,
                    gradients_bytes: st.gradients_bytes,
                    optimizer_bytes: st.optimizer_bytes,
                    activations_bytes: st.activations_bytes,
                    in_flight: st.in_flight,
                    logits_bytes: st.logits_bytes,
                    buffers_bytes: st.unsharded_unit_bytes
                        + st.workspace_bytes
                        + st.cuda_graph_bytes
                        + st.nccl_bytes
                        + st.context_bytes,
                    peak_bytes: st.peak_bytes,
                })
                .collect(),
            messages: mem.messages.clone(),
        },
        plan: Some(trainscope_core::goodput::job_facts::PlanJob::of_model_run(
            out,
        )),
    });
    v
}
