//! The "Search configurations" view's logic, pure Rust (the page and the
//! worker share it): the core's [`SweepSpec`] built from the bounds the
//! user types ([`SweepInputs`], [`crate::sweep_inputs`]) with the job
//! panel's model, GPU, batch and sequence length and the page's cluster
//! settings
//! ([`sweep_spec`], the same spec `trainscope sweep` builds from the same
//! flags), one worker's slice ([`run_shard`]: enumerate, take
//! [`enumerate_shard`]`(i, n)`, precheck and simulate each candidate with the core's
//! [`process`], build that shard's report), and the row a click loads into
//! the job panel ([`row_job`]). The page joins the workers' reports with
//! the core's [`trainscope_core::search::merge`].

use crate::job::JobSettings;
use crate::model_job::{job_sim_config, nvlink_pinned, resolve_model};
use crate::settings::{Field, Schedule, Settings};
use crate::sweep_inputs::SweepInputs;
use std::collections::BTreeSet;
use trainscope_core::engine::{ScheduleKind, SimConfig};
use trainscope_core::hardware::gpu_preset;
use trainscope_core::job::sharding::{Offload, ZeroStage};
use trainscope_core::job::{Recompute, DEFAULT_GLOBAL_BATCH, DEFAULT_GPU};
use trainscope_core::model::dispatcher::Dispatcher;
use trainscope_core::model::stack::{CudaGraphs, StackSettings};
use trainscope_core::named::Named;
use trainscope_core::search::report::ShardId;
use trainscope_core::search::{
    build, enumerate_shard, process, shell_word, sweep_config, Outcome, Row, SweepReport, SweepSpec,
};

/// `1,2,4` → `Some([1, 2, 4])`; empty → `None`; every value >= 1.
fn numbers(label: &str, text: &str) -> Result<Option<Vec<u32>>, String> {
    let items: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Ok(None);
    }
    items
        .iter()
        .map(|s| match s.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "{label}: `{s}` is not a whole number >= 1 (give a list like 1,2,4)"
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn names<T>(
    label: &str,
    text: &str,
    parse: impl Fn(&str) -> Option<T>,
    expected: &str,
) -> Result<Option<Vec<T>>, String> {
    let items: Vec<String> = text
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Ok(None);
    }
    items
        .iter()
        .map(|s| {
            parse(s).ok_or_else(|| format!("{label}: unknown value `{s}`; expected {expected}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The flags every row shares, as `trainscope sweep` spells them for the
/// same settings and in its order: the model, then the GPU and cluster
/// flags that differ from the CLI's defaults (the NIC type is written as
/// its bandwidth, `--nic-gbps`).
pub fn common_flags(job: &JobSettings, settings: &Settings, pinned: &BTreeSet<Field>) -> String {
    let mut f = format!("--model {}", shell_word(job.model.name()));
    if job.gpu != DEFAULT_GPU {
        f.push_str(&format!(" --gpu-type {}", job.gpu));
    }
    let d = Settings::default();
    if settings.gpus_per_node != d.gpus_per_node {
        f.push_str(&format!(" --gpus-per-node {}", settings.gpus_per_node));
    }
    if settings.nics_per_node != d.nics_per_node {
        f.push_str(&format!(" --nics-per-node {}", settings.nics_per_node));
    }
    if nvlink_pinned(pinned) {
        f.push_str(&format!(" --nvlink-gbps {}", settings.nvlink_bw_gbps));
    }
    if settings.nic_bw_gbps != d.nic_bw_gbps {
        f.push_str(&format!(" --nic-gbps {}", settings.nic_bw_gbps));
    }
    if settings.latency_us != d.latency_us {
        f.push_str(&format!(" --latency-us {}", settings.latency_us));
    }
    if settings.placement != d.placement {
        f.push_str(&format!(" --placement {}", settings.placement.name()));
    }
    if settings.oversubscription != d.oversubscription {
        f.push_str(&format!(
            " --oversubscription {}",
            settings.oversubscription
        ));
    }
    if settings.algorithm != d.algorithm {
        f.push_str(&format!(" --algorithm {}", settings.get(Field::Algorithm)));
    }
    // The what-if faults every candidate runs with (`sweep --slow`,
    // `--slow-link`, `--jitter --seed`), before `--overlap-grad-sync` as
    // the CLI writes them.
    if let Ok((faults, _)) = settings.what_if() {
        for flag in faults.flags() {
            f.push(' ');
            f.push_str(&flag);
        }
    }
    if settings.grad_sync_overlap {
        f.push_str(" --overlap-grad-sync");
    }
    f
}

/// The core's spec and simulation settings of a sweep: the job panel's
/// model (a preset, or a dropped `config.json` found by name among
/// `files`), GPU, global batch, sequence length, precision and flash
/// attention, the page's cluster, and the bounds. `Err`: why not (a bound
/// that does not parse, a model file missing or not a model config, an
/// unknown GPU).
pub fn sweep_spec(
    inputs: &SweepInputs,
    job: &JobSettings,
    settings: &Settings,
    pinned: &BTreeSet<Field>,
    files: &[(&str, &[u8])],
) -> Result<(SweepSpec, SimConfig), String> {
    let model = resolve_model(files, &job.model).map_err(|d| match d.hint {
        Some(h) => format!("{} ({h})", d.message),
        None => d.message,
    })?;
    let gpu = gpu_preset(&job.gpu).ok_or_else(|| format!("unknown GPU type `{}`", job.gpu))?;
    let config = job_sim_config(&gpu, settings, pinned);
    let worlds = match numbers("GPUs", &inputs.world)? {
        Some(w) => w,
        None => vec![u32::try_from(job.world()).map_err(|_| "the job's world is too large")?],
    };
    let mut spec = SweepSpec::new(model, gpu, worlds[0]);
    spec.worlds = worlds;
    spec.gpus_per_node = settings.gpus_per_node;
    spec.global_batch_size = job
        .training
        .global_batch_size
        .unwrap_or(DEFAULT_GLOBAL_BATCH);
    spec.seq_length = job.training.seq_length;
    spec.precision = job.training.precision;
    spec.flash_attention = job.training.flash_attention;
    spec.bf16_grads = job.training.bf16_grads;
    spec.fp8_param_gather = job.training.fp8_param_gather;
    spec.stack = job.training.stack;
    spec.tp = numbers("TP", &inputs.tp)?;
    spec.cp = numbers("CP", &inputs.cp)?;
    spec.pp = numbers("PP", &inputs.pp)?;
    spec.ep = numbers("EP", &inputs.ep)?;
    spec.vpp = numbers("Virtual stages", &inputs.vpp)?;
    spec.micro_batch_size = numbers("Micro-batch size", &inputs.micro_batch_size)?;
    spec.recompute = names(
        "Recompute",
        &inputs.recompute,
        Recompute::from_name,
        &Recompute::names(),
    )?;
    spec.schedule = names(
        "Schedule",
        &inputs.schedule,
        ScheduleKind::from_name,
        &ScheduleKind::ALL.map(|k| k.name()).join(", "),
    )?;
    spec.zero = names(
        "ZeRO stage",
        &inputs.zero,
        |s| s.parse::<u8>().ok().and_then(ZeroStage::from_level),
        "0, 1, 2, 3",
    )?;
    spec.hsdp_shard = names(
        "HSDP shard group",
        &inputs.hsdp_shard,
        |s| s.parse::<u32>().ok(),
        "whole numbers (0: none)",
    )?;
    spec.cuda_graphs = names(
        "CUDA graphs",
        &inputs.cuda_graphs,
        |s| CudaGraphs::parse(s).ok(),
        &CudaGraphs::ALL.map(CudaGraphs::name).join(", "),
    )?;
    spec.dispatcher = names(
        "MoE dispatcher",
        &inputs.dispatcher,
        |s| Dispatcher::parse(s).ok(),
        &Dispatcher::ALL.map(Dispatcher::name).join(", "),
    )?;
    spec.moe_a2a_overlap = names(
        "EP overlap",
        &inputs.moe_a2a_overlap,
        trainscope_core::limits::on_off,
        "off, on",
    )?;
    spec.offload = names(
        "offload",
        &inputs.offload,
        Offload::from_name,
        &Offload::ALL.map(|o| o.name()).join(", "),
    )?;
    spec.straggler = straggler_factor(&inputs.straggler)?;
    spec.common_flags = common_flags(job, settings, pinned);
    Ok((spec, sweep_config(&config)))
}

/// The Straggler bound (`sweep --straggler FACTOR`): empty for none, else
/// the factor one GPU is slowed by, checked as the core checks it.
pub fn straggler_factor(text: &str) -> Result<Option<f64>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let f: f64 = t.parse().map_err(|_| {
        format!("Straggler: `{t}` is not a number (a factor such as 1.2; empty: none)")
    })?;
    trainscope_core::engine::faults::check_factor(f).map_err(|e| format!("Straggler: {e}"))?;
    Ok(Some(f))
}

/// Shard `index` of `count` of the sweep: its report (every row in it).
/// After each candidate `step(done, total, pending)` is called, where
/// `pending` holds the rows simulated since the caller last emptied it:
/// the worker takes them when a chunk is due ([`chunk_due`]), so the page
/// gets rows while the shard runs. On the last call `done == total`.
pub fn run_shard(
    spec: &SweepSpec,
    config: &SimConfig,
    index: u32,
    count: u32,
    step: &mut dyn FnMut(u32, u32, &mut Vec<Row>),
) -> SweepReport {
    let e = enumerate_shard(spec, Some(ShardId { index, count }));
    let mine = e.candidates;
    let total = mine.len() as u32;
    let mut outcomes = Vec::with_capacity(mine.len());
    let mut pending = Vec::new();
    for (k, c) in mine.iter().enumerate() {
        let o = process(c, config, &spec.common_flags, spec.straggler);
        if let Outcome::Simulated(row) = &o {
            pending.push((**row).clone());
        }
        outcomes.push(o);
        step(k as u32 + 1, total, &mut pending);
    }
    build(
        spec.describe(),
        Some(ShardId { index, count }),
        e.skipped,
        e.skipped_reasons,
        outcomes,
    )
}

/// Rows a worker holds back at most before sending them.
pub const CHUNK_ROWS: usize = 256;
/// Milliseconds of work a worker holds rows back at most.
pub const CHUNK_MS: f64 = 100.0;

/// Whether a worker sends its pending rows now: the shard is finished, or
/// [`CHUNK_ROWS`] rows or [`CHUNK_MS`] of work have piled up since the
/// last chunk (`since_ms`).
pub fn chunk_due(pending: usize, done: u32, total: u32, since_ms: f64) -> bool {
    pending > 0 && (done == total || pending >= CHUNK_ROWS || since_ms >= CHUNK_MS)
}

/// The job panel's values and the schedule a row stands for (the base's
/// model, GPU, sequence length, precision and flash attention are the
/// sweep's).
pub fn row_job(row: &Row, base: &JobSettings) -> Option<(JobSettings, Schedule)> {
    let schedule = Schedule::ALL
        .into_iter()
        .find(|s| s.core().name() == row.schedule)?;
    let mut job = base.clone();
    job.training.tp = row.tp;
    job.training.pp = row.pp;
    job.training.dp = Some(row.dp);
    job.training.cp = row.cp;
    job.training.expert_tp = row.expert_tp;
    job.training.ep = row.ep;
    job.training.vpp = row.vpp;
    job.training.micro_batch_size = row.micro_batch_size;
    job.training.global_batch_size = Some(row.micro_batch_size * row.micro_batches * row.dp);
    job.training.recompute = Recompute::from_name(&row.recompute)?;
    job.training.sequence_parallel = row.sequence_parallel;
    job.training.distributed_optimizer = row.distributed_optimizer;
    // The row's ZeRO stage (rows of older sweeps: as the distributed
    // optimizer says).
    // The row's sharding as the sweep ran it (FSDP's defaults, its HSDP
    // shard group).
    job.training.sharding = trainscope_core::job::sharding::Sharding {
        zero: ZeroStage::from_level(row.zero).unwrap_or_default(),
        hsdp_shard: row.hsdp_shard,
        offload: row.offload,
        ..Default::default()
    };
    // The row's software (its swept CUDA graphs, dispatcher and EP
    // overlap on the base's stack): the setting whose flags the row carries.
    job.training.stack = row_stack(row, &base.training.stack)?;
    // A PP that does not divide the layers: the row's uneven split.
    job.training.first_stage_layers = row.first_stage_layers;
    job.training.last_stage_layers = row.last_stage_layers;
    job.training.account_for_embedding = row.account_for_embedding;
    job.training.account_for_loss = row.account_for_loss;
    Some((job, schedule))
}

/// The software a row ran on: `base` with the CUDA-graph scope, MoE
/// dispatcher and EP overlap whose flags ([`StackSettings::flags`]) are the
/// row's `software` (the sweep's software dimensions). `None` when no
/// setting writes them (a row of another base stack).
fn row_stack(row: &Row, base: &StackSettings) -> Option<StackSettings> {
    CudaGraphs::ALL
        .into_iter()
        .flat_map(|cuda_graphs| {
            Dispatcher::ALL.into_iter().flat_map(move |dispatcher| {
                [false, true].map(|moe_a2a_overlap| StackSettings {
                    cuda_graphs,
                    dispatcher,
                    moe_a2a_overlap,
                    ..*base
                })
            })
        })
        .find(|s| s.flags().trim() == row.software)
}
