//! What the worker computes for a run ([`run`]): parse every file with
//! `trainscope_core`, collect the settings the files state
//! ([`SettingsHints`]), apply them to the unpinned settings, and turn the
//! core's values into display data ([`crate::views`]). Pure and
//! synchronous, so the browser tests call it directly; in the app it only
//! ever runs inside the Web Worker (`src/bin/worker.rs`).
//!
//! **Where simulation plugs in**: [`simulate`] receives the parsed inputs
//! and the effective settings and returns the Read panel's
//! [`ResultView`]: the SimAI-compatible mode ([`simai_view`]) or the
//! event-level engine ([`event_view`]). A described job (the job panel's,
//! or a picked `config.json` with the panel's settings) goes to
//! [`crate::model_job`] instead.

use crate::job::JobSettings;
use crate::protocol::{
    FileData, InputFile, JobOutcome, NamedTimeline, Progress, RunOutput, RunRequest,
};
use crate::settings::{Field, Mode, Schedule};
use crate::settings::{Settings, SettingsHints};
use crate::views::{
    ActivationView, Bar, Cell, ExportFile, FieldView, Figure, FileView, Quantity, ResultKind,
    ResultView, Segment, TableView,
};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use trainscope_core::analysis::Analysis;
use trainscope_core::analytical::{self, AnalyticalConfig, AnalyticalReport, OverlapRatios};
use trainscope_core::engine::SimConfig;
use trainscope_core::formats::simai::{self, CommGroup, SimaiWorkload};
use trainscope_core::inspect::{FileSummary, LoadOptions, LoadedSet, SetLoader};
use trainscope_core::job::run::ModelRunOutput;
use trainscope_core::replay::infer::NetworkOverrides;
use trainscope_core::run::{
    load_from_set, load_options, run_loaded, LoadedInput, RunError, RunOptions,
    RunOutput as SimRunOutput,
};
use trainscope_core::Diagnostic;
use trainscope_core::{
    formats::{decode_text, echo},
    workload::Format,
};

/// Files from this size on report progress while they are parsed
/// ([`Progress::parsed_bytes`]); smaller ones parse in a blink.
pub const PARSE_PROGRESS_MIN_BYTES: u64 = 4 << 20;

/// Run one request: parse every file (Echo rank files of one job form one
/// run), pre-fill settings from the headers, then simulate in the chosen
/// mode. `progress` is called before each step: parsing the set, then
/// each file's summary (so a multi-file load moves), simulating, and
/// preparing the results.
pub fn run(req: &RunRequest, progress: &mut dyn FnMut(Progress)) -> RunOutput {
    run_with_source(req, progress).0
}

/// The steps of a run's progress ([`Progress::total`]): the set's parse,
/// each file's summary, simulating, each compared schedule, preparing.
pub fn progress_total(req: &RunRequest) -> u32 {
    let n = u32::try_from(req.files.len()).unwrap_or(u32::MAX);
    n.saturating_add(3).saturating_add(compared_steps(req))
}

fn compared_steps(req: &RunRequest) -> u32 {
    if req.compare_schedules {
        Schedule::ALL.len() as u32
    } else {
        0
    }
}

/// Reads file `i` of a request: its bytes (a byte file's own, shared; the
/// worker reads a `Blob` file), or why it could not be read.
pub type ReadFile<'a> = dyn FnMut(usize, &InputFile) -> Result<Rc<Vec<u8>>, String> + 'a;

/// [`run`], also returning what the run's downloads are made from. A
/// `Blob` file is not read here: it is reported as a file that could not
/// be read ([`run_with_reader`] reads it).
pub fn run_with_source(
    req: &RunRequest,
    progress: &mut dyn FnMut(Progress),
) -> (RunOutput, Option<ExportSource>) {
    run_with_reader(req, &mut own_bytes, progress)
}

/// A byte file's bytes; a `Blob` cannot be read outside the worker.
fn own_bytes(_: usize, f: &InputFile) -> Result<Rc<Vec<u8>>, String> {
    match &f.data {
        FileData::Bytes(b) => Ok(b.clone()),
        FileData::Blob(_) => Err("its content did not reach the worker".into()),
    }
}

/// [`run_with_source`], reading each file with `read` when it is needed,
/// one at a time: the set is parsed file by file (each file's bytes
/// dropped once it is parsed: [`SetLoader`]), and a run of all the files
/// (8 PyTorch profiler ranks) simulates that parsed set without reading
/// them again ([`RunFiles::load`]); only what needs the text again (a
/// SimAI workload in the SimAI mode, a model config, a subset of the
/// files picked) reads it again. A file that cannot be read is an error
/// naming it (its card then shows it as empty).
pub fn run_with_reader(
    req: &RunRequest,
    read: &mut ReadFile,
    progress: &mut dyn FnMut(Progress),
) -> (RunOutput, Option<ExportSource>) {
    let n = u32::try_from(req.files.len()).unwrap_or(u32::MAX);
    let compared = compared_steps(req);
    let total = progress_total(req);
    progress(Progress {
        id: req.id,
        done: 0,
        total,
        label: format!("Parsing {} file(s)", req.files.len()),
        parsed_bytes: None,
    });
    let mut unread = Vec::new();
    let mut loader = SetLoader::new(None, &LoadOptions::default());
    // Per file: its SimAI workload (the file card shows its header), parsed
    // while its bytes are at hand.
    let mut workloads: Vec<Option<SimaiWorkload>> = Vec::with_capacity(req.files.len());
    for (i, f) in req.files.iter().enumerate() {
        let bytes = match read(i, f) {
            Ok(bytes) => bytes,
            Err(e) => {
                unread.push(unread_error(&f.name, &e));
                Rc::new(Vec::new())
            }
        };
        let name = f.name.as_str();
        // Within a large file (a PyTorch profiler trace): bytes read so far.
        loader.add(name, &bytes, &mut |done, size| {
            if size < PARSE_PROGRESS_MIN_BYTES {
                return;
            }
            progress(Progress {
                id: req.id,
                done: 0,
                total,
                label: format!(
                    "Parsing {name} (file {} of {n}): {} of {}",
                    i + 1,
                    crate::format::bytes(done),
                    crate::format::bytes(size)
                ),
                parsed_bytes: Some((done, size)),
            })
        });
        let simai_file = loader
            .summaries()
            .last()
            .is_some_and(|s| s.format == Some(Format::SimaiWorkload));
        workloads.push(if simai_file {
            decode_text(name, &bytes)
                .ok()
                .and_then(|(text, _)| simai::parse(name, &text).ok())
        } else {
            None
        });
    }
    let set = loader.finish();
    let summaries = set.summaries.clone();
    let mut run_files = RunFiles {
        files: &req.files,
        read,
        set: Some(set),
    };
    let mut step = |done: u32, label: String| {
        progress(Progress {
            id: req.id,
            done,
            total,
            label,
            parsed_bytes: None,
        })
    };
    let mut hints = SettingsHints::default();
    let mut diagnostics = unread;
    let mut files = Vec::with_capacity(summaries.len());
    for (i, ((summary, f), workload)) in
        summaries.iter().zip(&req.files).zip(&workloads).enumerate()
    {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        step(
            i.saturating_add(1),
            format!(
                "Summarising {} (file {} of {n})",
                f.name,
                i.saturating_add(1)
            ),
        );
        let file_hints = hints_from_summary(summary);
        for field in hints.merge(&file_hints) {
            diagnostics.push(Diagnostic::warning(format!(
                "`{}` states {} = {} but an earlier file states {}; the first value is used",
                f.name,
                field.label(),
                file_hints.get(field).unwrap_or_default(),
                hints.get(field).unwrap_or_default(),
            )));
        }
        files.push(file_view(summary, workload.as_ref()));
    }
    let settings = req.settings.with_hints(&hints, &req.pinned);
    step(n.saturating_add(1), "Simulating".into());
    let mut sim = if req.job_active {
        run_files.simulate_job(&req.job, &settings, &req.pinned, &mut diagnostics)
    } else {
        simulate(
            &mut run_files,
            &summaries,
            &settings,
            &req.pinned,
            &req.job,
            &mut diagnostics,
        )
    };
    let mut schedules = None;
    let mut timelines = std::mem::take(&mut sim.timelines);
    if req.compare_schedules {
        let compared = crate::schedule_compare::compare_schedules(
            &mut run_files,
            &summaries,
            &settings,
            &req.pinned,
            &req.job,
            req.job_active,
            &sim,
            &mut |i, s| {
                step(
                    n.saturating_add(2).saturating_add(i as u32),
                    format!(
                        "Comparing schedules: {} ({} of {})",
                        crate::settings::schedule_name(s),
                        i + 1,
                        Schedule::ALL.len()
                    ),
                )
            },
        );
        match compared {
            Ok(c) => {
                schedules = Some(c.table);
                // The stacked view's timelines travel with the run's.
                timelines.extend(c.timelines);
            }
            Err(d) => diagnostics.push(d),
        }
    }
    step(
        n.saturating_add(2).saturating_add(compared),
        "Preparing results".into(),
    );
    let output = RunOutput {
        settings,
        hints,
        files,
        result: sim.view,
        timelines,
        diagnostics,
        job: sim.job,
        schedules,
        analysis: sim.analysis,
    };
    (output, sim.source)
}

/// The files one simulation takes (their indices): the last loaded usable
/// input (with every rank file of its Echo job, every Kineto rank file,
/// every Chakra `.et` file and the set's comm_groups.json). A file with
/// skipped records is usable (the
/// simulation leaves them out and warns); files that gave no result are left
/// out; a warning names what else is loaded but not simulated.
pub fn pick_input(
    names: &[&str],
    summaries: &[FileSummary],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<usize> {
    let usable: Vec<usize> = (0..names.len().min(summaries.len()))
        .filter(|&i| summaries[i].is_usable())
        .collect();
    let Some(&last) = usable.last() else {
        return Vec::new();
    };
    let chosen: Vec<usize> = if summaries[last].format == Some(Format::EchoTrace) {
        let job = echo::job_key(names[last]);
        usable
            .iter()
            .copied()
            .filter(|&i| {
                summaries[i].format == Some(Format::EchoTrace) && echo::job_key(names[i]) == job
            })
            .collect()
    } else if summaries[last].format == Some(Format::KinetoTrace) {
        // The PyTorch profiler's files of one job: every rank file together
        // (the core reads all Kineto files of a set as one run).
        usable
            .iter()
            .copied()
            .filter(|&i| summaries[i].format == Some(Format::KinetoTrace))
            .collect()
    } else if matches!(
        summaries[last].format,
        Some(Format::ChakraEt | Format::ChakraCommGroups)
    ) {
        // A Chakra set: every rank's .et file and its comm_groups.json.
        usable
            .iter()
            .copied()
            .filter(|&i| {
                matches!(
                    summaries[i].format,
                    Some(Format::ChakraEt | Format::ChakraCommGroups)
                )
            })
            .collect()
    } else {
        vec![last]
    };
    let left_out: Vec<&str> = usable
        .iter()
        .filter(|i| !chosen.contains(i))
        .map(|&i| names[i])
        .collect();
    if !left_out.is_empty() {
        diagnostics.push(Diagnostic::warning(format!(
            "one simulation takes one input: simulating `{}`, the last loaded; also loaded: {}",
            names[last],
            left_out.join(", ")
        )));
    }
    chosen
}

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
    let options = RunOptions {
        world: set(Field::World).then_some(settings.world_size),
        block_repeats: set(Field::Blocks).then_some(settings.blocks),
        network_overrides,
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
    Event(Box<SimRunOutput>),
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

/// Simulate the picked input in the chosen mode. A model config
/// (`config.json`) picked in the event mode is simulated as a described
/// job: that model with the job panel's settings (`job`).
pub fn simulate(
    files: &mut RunFiles,
    summaries: &[FileSummary],
    settings: &Settings,
    pinned: &BTreeSet<Field>,
    job: &JobSettings,
    diagnostics: &mut Vec<Diagnostic>,
) -> Simulated {
    let picked = pick_input(&files.names(), summaries, diagnostics);
    let Some(&first) = picked.first() else {
        return Simulated::default();
    };
    let name = files.files[first].name.clone();
    let name = name.as_str();
    match settings.mode {
        Mode::Simai => {
            let format = summaries.get(first).and_then(|s| s.format);
            if format != Some(Format::SimaiWorkload) {
                diagnostics.push(
                    Diagnostic::error(format!(
                        "the SimAI-compatible mode needs a SimAI/AICB workload; `{name}` is {}",
                        format.map_or("unrecognised", Format::name)
                    ))
                    .with_hint("switch the mode to event-level to simulate this input"),
                );
                return Simulated::default();
            }
            let bytes = match files.read(first) {
                Ok(bytes) => bytes,
                Err(d) => {
                    diagnostics.push(d);
                    return Simulated::default();
                }
            };
            match simai_report(name, &bytes, settings, pinned) {
                Ok(report) => Simulated {
                    view: Some(simai_view(name, &report)),
                    source: Some(ExportSource::Simai {
                        name: name.to_string(),
                        report: Box::new(report),
                    }),
                    ..Simulated::default()
                },
                Err(mut ds) => {
                    diagnostics.append(&mut ds);
                    Simulated::default()
                }
            }
        }
        Mode::Event => {
            if let Some(job) = crate::model_job::config_file_job(summaries, name, job) {
                return files.simulate_job(&job, settings, pinned, diagnostics);
            }
            let (config, options) = event_config(settings, pinned);
            let ran = config
                .validate()
                .map_err(RunError::from)
                .and_then(|()| files.load(&picked, &options))
                .and_then(|loaded| run_loaded(&loaded, &config, &options).map(|out| (out, loaded)));
            match ran {
                Ok((out, loaded)) => {
                    let mut timelines = vec![NamedTimeline {
                        label: "simulated".into(),
                        timeline: out.result.timeline.clone(),
                    }];
                    if let Some(m) = &out.measured {
                        timelines.push(NamedTimeline {
                            label: "measured".into(),
                            timeline: m.timeline.clone(),
                        });
                    }
                    Simulated {
                        view: Some(event_view(&out)),
                        timelines,
                        analysis: out.analysis.clone(),
                        source: Some(ExportSource::Event(Box::new(out))),
                        job: None,
                        loaded: Some(LoadedFiles {
                            picked,
                            options,
                            input: loaded,
                        }),
                    }
                }
                Err(e) => {
                    diagnostics.extend(run_error_diagnostics(&e));
                    Simulated::default()
                }
            }
        }
    }
}

/// A request's files as a run reads them: on demand, one at a time
/// (`read`), and the set the run's first pass parsed, until a simulation
/// of all of them takes it ([`RunFiles::load`]).
pub struct RunFiles<'a> {
    pub files: &'a [InputFile],
    read: &'a mut ReadFile<'a>,
    /// The whole set as parsed by the first pass (default parser options).
    set: Option<LoadedSet>,
}

impl<'a> RunFiles<'a> {
    /// A request's files with no set parsed yet (every load reads them).
    pub fn new(files: &'a [InputFile], read: &'a mut ReadFile<'a>) -> Self {
        RunFiles {
            files,
            read,
            set: None,
        }
    }

    pub fn names(&self) -> Vec<&'a str> {
        self.files.iter().map(|f| f.name.as_str()).collect()
    }

    /// File `i`'s bytes, or a located error saying why they could not be read.
    pub fn read(&mut self, i: usize) -> Result<Rc<Vec<u8>>, Diagnostic> {
        let f = &self.files[i];
        (self.read)(i, f).map_err(|e| unread_error(&f.name, &e))
    }

    /// The core's input of the files `picked` (indices, in order) under
    /// `options`: the first pass's set when `picked` is the whole set and
    /// the options parse as it did (no file read again), else the picked
    /// files read and parsed again one at a time. The same input as the
    /// core's `load_files` of those files.
    pub fn load(
        &mut self,
        picked: &[usize],
        options: &RunOptions,
    ) -> Result<LoadedInput, RunError> {
        options.validate()?;
        let parse_options = load_options(options);
        let whole = picked.iter().copied().eq(0..self.files.len());
        let same = |set: &LoadedSet| {
            let neusight = set
                .summaries
                .iter()
                .any(|s| s.format == Some(Format::NeusightTsv));
            let default = LoadOptions::default();
            options.format.is_none()
                && parse_options.kineto == default.kineto
                && (!neusight || parse_options.neusight == default.neusight)
        };
        if whole && self.set.as_ref().is_some_and(same) {
            if let Some(set) = self.set.take() {
                return load_from_set(set, options);
            }
        }
        if picked.is_empty() {
            return Err(RunError::Usage("no input file".to_string()));
        }
        let mut loader = SetLoader::new(options.format, &parse_options);
        for &i in picked {
            let bytes = self.read(i).map_err(|d| RunError::Parse(vec![d]))?;
            loader.add(&self.files[i].name, &bytes, &mut |_, _| {});
        }
        load_from_set(loader.finish(), options)
    }

    /// Simulate a described job, reading its model file (when it is one of
    /// these files) for it.
    pub fn simulate_job(
        &mut self,
        job: &JobSettings,
        settings: &Settings,
        pinned: &BTreeSet<Field>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Simulated {
        let model = self.model_file(job, diagnostics);
        let pairs: Vec<(&str, &[u8])> = model
            .iter()
            .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
            .collect();
        crate::model_job::simulate_job(&pairs, job, settings, pinned)
    }

    /// The job's model file (name, bytes) when it names one of these files
    /// (the first of that name), read; a read error is added to
    /// `diagnostics` (the job then says the file is not loaded).
    pub fn model_file(
        &mut self,
        job: &JobSettings,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Option<(String, Rc<Vec<u8>>)> {
        let crate::job::JobModel::File(name) = &job.model else {
            return None;
        };
        let i = self.files.iter().position(|f| &f.name == name)?;
        match self.read(i) {
            Ok(bytes) => Some((name.clone(), bytes)),
            Err(d) => {
                diagnostics.push(d);
                None
            }
        }
    }
}

/// A file that could not be read, as a located error.
fn unread_error(name: &str, why: &str) -> Diagnostic {
    Diagnostic::error(format!("could not read `{name}`: {why}"))
        .with_hint("load the file again (it may have been moved or changed on disk)")
}

/// A run's error as diagnostics.
pub fn run_error_diagnostics(e: &RunError) -> Vec<Diagnostic> {
    match e {
        RunError::Usage(m) => vec![Diagnostic::error(m.clone())],
        RunError::Parse(ds) => ds.clone(),
        RunError::Sim(err) => vec![err.to_diagnostic()],
    }
}

/// SimAI mode: the workload with the user's micro-batch (`ga`) and virtual
/// stage (`vpp`) overrides, analysed with SimAI-Analytical's cost model.
fn simai_report(
    name: &str,
    bytes: &[u8],
    settings: &Settings,
    pinned: &BTreeSet<Field>,
) -> Result<AnalyticalReport, Vec<Diagnostic>> {
    let mut workload = analytical::parse_workload(name, bytes).map_err(|e| match e {
        analytical::SimulateError::Parse(ds) => ds,
        analytical::SimulateError::Config(c) => vec![c.to_diagnostic()],
    })?;
    if pinned.contains(&Field::MicroBatches) {
        workload.header.ga = settings.micro_batches;
    }
    if pinned.contains(&Field::VirtualStages) {
        workload.header.vpp = settings.virtual_stages;
    }
    analytical::analyse(&workload, &analytical_config(settings))
        .map_err(|e| vec![e.to_diagnostic()])
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

fn file_stem(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// Exposed communication per group as `(key, label, ns)`, in display order.
fn exposed_groups(
    tp: u64,
    ep: u64,
    dp: u64,
    dp_ep: u64,
    pp: u64,
    cp: u64,
) -> Vec<(&'static str, &'static str, u64)> {
    let mut groups = vec![
        ("comm.TP", "Exposed TP comm", tp),
        ("comm.EP", "Exposed EP comm", ep),
        ("comm.DP", "Exposed DP comm", dp),
        ("comm.DP_EP", "Exposed DP_EP comm", dp_ep),
        ("comm.PP", "Exposed PP comm", pp),
    ];
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
        exposed_groups(e.tp, e.ep, e.dp, e.dp_ep, e.pp, 0),
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
pub fn event_view(out: &SimRunOutput) -> ResultView {
    let s = out.summary();
    // A model-level job has no file: it is named by its model.
    let label = if out.files.is_empty() {
        s.job.clone()
    } else {
        out.files.join(", ")
    };
    let stem = match out.files.first() {
        Some(f) => file_stem(f).to_string(),
        None => s.job.clone(),
    };
    let mut v = ResultView::new(
        ResultKind::Event,
        "Event-level simulation",
        &format!(
            "{}: {} schedule, {} stage(s) × {} micro-batch(es), {} collectives, {} simulated rank(s){}",
            label,
            s.schedule,
            s.pipeline_stages,
            s.micro_batches,
            s.algorithm,
            s.simulated_ranks,
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
        exposed_groups(e.tp, e.ep, e.dp, e.dp_ep, e.pp, e.cp),
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
    if s.sync_stall_ns > 0 {
        v.figures.push(Figure::new(
            "sync_stall",
            "Host sync stall",
            Quantity::DurationNs(s.sync_stall_ns),
        ));
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
    if let Some(c) = &out.comparison {
        v.measured_format = Some(out.format.name().to_string());
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
    // A CP column only for jobs with context parallelism.
    let has_cp = s.stages.iter().any(|st| st.exposed_comm_ns.cp > 0);
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
        .map(|s| s.to_string())
        .chain(has_cp.then(|| "exposed CP".to_string()))
        .collect(),
        rows: s
            .stages
            .iter()
            .map(|st| {
                let x = &st.exposed_comm_ns;
                vec![
                    Cell::Int(i64::from(st.stage)),
                    Cell::Int(i64::from(st.rank)),
                    Cell::DurationNs(st.compute_ns),
                    Cell::DurationNs(st.bubble_ns),
                    Cell::DurationNs(x.tp),
                    Cell::DurationNs(x.ep),
                    Cell::DurationNs(x.dp),
                    Cell::DurationNs(x.dp_ep),
                    Cell::DurationNs(x.pp),
                    Cell::DurationNs(st.other_idle_ns),
                    Cell::Float(st.busy_share),
                ]
                .into_iter()
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
    v
}
