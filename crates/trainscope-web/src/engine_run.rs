//! One engine run's two ends, shared by every way the worker simulates
//! (files, described jobs, compared schedules): the core's configuration
//! from the page's settings ([`event_config`], [`analytical_config`]), and
//! what a simulation gives ([`Simulated`]; the downloads' data,
//! [`ExportSource`] and [`export`]; a run error as diagnostics).

use crate::present::file_stem;
use crate::protocol::{JobOutcome, NamedTimeline};
use crate::settings::Settings;
use crate::settings::{Field, Schedule};
use crate::views::ResultView;
use std::collections::BTreeSet;
use trainscope_core::analysis::Analysis;
use trainscope_core::analytical::{self, AnalyticalConfig, AnalyticalReport, OverlapRatios};
use trainscope_core::engine::SimConfig;
use trainscope_core::job::run::ModelRunOutput;
use trainscope_core::replay::infer::NetworkOverrides;
use trainscope_core::run::{LoadedInput, RunError, RunOptions, RunOutput};
use trainscope_core::Diagnostic;

/// The SimAI-compatible mode's configuration from the page's settings.
pub fn analytical_config(settings: &Settings) -> AnalyticalConfig {
    AnalyticalConfig {
        world_size: Some(settings.world_size),
        gpus_per_server: Some(settings.gpus_per_node),
        nics_per_server: Some(settings.nics_per_node),
        nvlink_busbw_gbps: Some(settings.nvlink_bw_gbps),
        nic_busbw_gbps: Some(settings.nic_bw_gbps),
        overlap: OverlapRatios {
            dp: settings.dp_overlap,
            tp: settings.tp_overlap,
            ep: settings.ep_overlap,
            pp: settings.pp_overlap,
        },
        ..AnalyticalConfig::default()
    }
}

/// The event mode's configuration from the page's settings. Values the
/// files state (micro-batches, world, backward factor, block repeats) are
/// passed only when the user set them, so an untouched page gives exactly
/// `trainscope simulate FILE` with the same cluster flags.
pub fn event_config(settings: &Settings, pinned: &BTreeSet<Field>) -> (SimConfig, RunOptions) {
    let set = |f: Field| pinned.contains(&f);
    let mut config = SimConfig::default();
    config.network.gpus_per_node = settings.gpus_per_node;
    config.network.nics_per_node = settings.nics_per_node;
    config.network.nvlink_gbps = settings.nvlink_bw_gbps;
    config.network.nic_gbps = settings.nic_bw_gbps;
    // Validated by the settings form; an out-of-range value keeps the default.
    let _ = config.network.set_latency_us(settings.latency_us);
    config.network.placement = settings.placement;
    // Validated by the form (>= 1); the core refuses anything else.
    config.network.oversubscription = settings.oversubscription;
    config.schedule = settings.schedule.core();
    if settings.schedule == Schedule::Interleaved {
        config.virtual_stages = settings.virtual_stages;
    }
    config.algorithm = settings.algorithm.core();
    config.overlap_grad_sync = settings.grad_sync_overlap;
    config.micro_batches = set(Field::MicroBatches).then_some(settings.micro_batches);
    config.backward_factor = set(Field::BackwardFactor).then_some(settings.backward_factor);
    // Measured replays: a network setting the user set replaces, for its
    // link, what the replay inferred from the trace (the CLI's rule: the
    // NVLink bandwidth or GPU type; the NIC bandwidth or type, NICs per
    // node or the oversubscription; the latency; the algorithm).
    let network_overrides = NetworkOverrides {
        nvlink_gbps: set(Field::NvlinkBw) || set(Field::Gpu),
        nic_gbps: set(Field::NicBw)
            || set(Field::Nic)
            || set(Field::NicsPerNode)
            || set(Field::Oversubscription),
        latency: set(Field::Latency),
        algorithm: set(Field::Algorithm),
    };
    // Validated by the form; malformed faults run none (never reached).
    let (faults, blame) = settings.what_if().unwrap_or_default();
    config.faults = faults;
    let options = RunOptions {
        world: set(Field::World).then_some(settings.world_size),
        block_repeats: set(Field::Blocks).then_some(settings.blocks),
        network_overrides,
        blame,
        ..RunOptions::default()
    };
    (config, options)
}

/// What a simulation gives: the Read panel, the timelines to draw
/// (simulated first, then measured if any), what exports are made from,
/// and for a described job what became of it.
#[derive(Default)]
pub struct Simulated {
    pub view: Option<ResultView>,
    pub timelines: Vec<NamedTimeline>,
    pub source: Option<ExportSource>,
    pub job: Option<JobOutcome>,
    /// A Kineto run's analysis (the core's, from the replay's run).
    pub analysis: Option<Analysis>,
    /// The files' input as the core parsed it for this simulation (Compare
    /// schedules simulates it under every schedule, parsing nothing again).
    pub loaded: Option<LoadedFiles>,
}

/// The core's input of the picked files, with the options it was parsed
/// under.
pub struct LoadedFiles {
    pub picked: Vec<usize>,
    pub options: RunOptions,
    pub input: LoadedInput,
}

/// The data a run's downloads are made from, kept by the worker until the
/// next run.
pub enum ExportSource {
    Event(Box<RunOutput>),
    /// A model-level job (its summary JSON is `trainscope simulate --model
    /// ... --json`).
    Model(Box<ModelRunOutput>),
    Simai {
        name: String,
        report: Box<AnalyticalReport>,
    },
}

/// The text of one download (`testid` as in the result's [`ExportFile`]s),
/// or `None` when this run has no such export.
pub fn export(source: &ExportSource, testid: &str) -> Option<String> {
    match (source, testid) {
        (ExportSource::Event(out), "export-chrome-trace") => Some(
            trainscope_core::export::chrome_trace_json(&out.result.timeline),
        ),
        (ExportSource::Event(out), "export-summary-json") => {
            Some(serde_json::to_string_pretty(&out.report_json()).unwrap_or_default())
        }
        (ExportSource::Event(out), "export-csv") => {
            Some(trainscope_core::export::spans_csv(&out.result.timeline))
        }
        (ExportSource::Model(out), "export-chrome-trace") => Some(
            trainscope_core::export::chrome_trace_json(&out.run.result.timeline),
        ),
        (ExportSource::Model(out), "export-summary-json") => {
            Some(serde_json::to_string_pretty(&out.report_json()).unwrap_or_default())
        }
        (ExportSource::Model(out), "export-csv") => {
            Some(trainscope_core::export::spans_csv(&out.run.result.timeline))
        }
        (ExportSource::Simai { name, report }, "export-csv") => Some(analytical::end_to_end_csv(
            report,
            &format!("{}-", file_stem(name)),
        )),
        (ExportSource::Simai { report, .. }, "export-summary-json") => {
            Some(serde_json::to_string_pretty(report).unwrap_or_default())
        }
        _ => None,
    }
}

/// A run's error as diagnostics.
pub fn run_error_diagnostics(e: &RunError) -> Vec<Diagnostic> {
    match e {
        RunError::Usage(m) => vec![Diagnostic::error(m.clone())],
        RunError::Parse(ds) => ds.clone(),
        RunError::Sim(err) => vec![err.to_diagnostic()],
    }
}
