//! Where simulation plugs in: [`simulate`] receives the parsed inputs
//! ([`RunFiles`], the files a run reads on demand; [`pick_input`] chooses
//! which of them one simulation takes) and the effective settings and
//! returns the Read panel's view: the SimAI-compatible mode or the
//! event-level engine ([`crate::present`] builds both views). A described
//! job (the job panel's, or a picked `config.json` with the panel's
//! settings) goes to [`crate::model_job`] instead.

use crate::engine_run::{
    analytical_config, event_config, run_error_diagnostics, ExportSource, LoadedFiles, Simulated,
};
use crate::job::JobSettings;
use crate::present::{event_view, simai_view};
use crate::protocol::{InputFile, NamedTimeline};
use crate::settings::Settings;
use crate::settings::{Field, Mode};
use std::collections::BTreeSet;
use std::rc::Rc;
use trainscope_core::analytical::{self, AnalyticalReport};
use trainscope_core::formats::{decode_text, simai::SimaiWorkload};
use trainscope_core::inspect::{FileSummary, LoadOptions, LoadedSet, SetLoader};
use trainscope_core::run::{
    load_from_set, load_options, run_loaded, LoadedInput, RunError, RunOptions,
};
use trainscope_core::Diagnostic;
use trainscope_core::{formats::echo, workload::Format};

/// Reads file `i` of a request: its bytes (a byte file's own, shared; the
/// worker reads a `Blob` file), or why it could not be read.
pub type ReadFile<'a> = dyn FnMut(usize, &InputFile) -> Result<Rc<Vec<u8>>, String> + 'a;

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
            match simai_report(name, &bytes, files.simai_workload(first), settings, pinned) {
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
                // No layout set yet: start from the fewest GPUs it fits on.
                let start = files.model_file(&job, &mut Vec::new()).and_then(|(n, b)| {
                    crate::model_job::resolve_model(&[(n.as_str(), b.as_slice())], &job.model)
                        .ok()
                        .and_then(|m| crate::model_job::start_layout(&m, &job, settings))
                });
                let job = start.as_ref().map_or(job, |(j, _)| j.clone());
                let mut sim = files.simulate_job(&job, settings, pinned, diagnostics);
                if let (Some(o), Some((j, note))) = (&mut sim.job, start) {
                    o.start = Some(crate::protocol::StartLayout {
                        training: j.training,
                        note,
                    });
                }
                return sim;
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
                    if let Some(t) = out.measured.as_ref().and_then(|m| m.timeline.as_ref()) {
                        timelines.push(NamedTimeline {
                            label: "measured".into(),
                            timeline: t.clone(),
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

    /// The SimAI workload file `i` parsed to in the first pass (the k-th
    /// file with a SimAI header is the set's k-th SimAI source: both are
    /// kept only for a workload that parsed); `None` without one.
    pub fn simai_workload(&self, i: usize) -> Option<&SimaiWorkload> {
        let set = self.set.as_ref()?;
        set.summaries.get(i)?.simai.as_ref()?;
        let k = set.summaries[..i]
            .iter()
            .filter(|s| s.simai.is_some())
            .count();
        set.simai_sources.iter().flatten().nth(k)
    }

    /// A request's files with the set the run's first pass parsed
    /// ([`RunFiles::load`] takes it instead of parsing them again).
    pub fn with_set(files: &'a [InputFile], read: &'a mut ReadFile<'a>, set: LoadedSet) -> Self {
        RunFiles {
            files,
            read,
            set: Some(set),
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
pub(crate) fn unread_error(name: &str, why: &str) -> Diagnostic {
    Diagnostic::error(format!("could not read `{name}`: {why}"))
        .with_hint("load the file again (it may have been moved or changed on disk)")
}

/// SimAI mode: the workload with the user's micro-batch (`ga`) and virtual
/// stage (`vpp`) overrides, analysed with SimAI-Analytical's cost model.
/// `parsed`: the workload as the run's first pass parsed it (used as it is,
/// not parsed again); `None`: parsed here.
fn simai_report(
    name: &str,
    bytes: &[u8],
    parsed: Option<&SimaiWorkload>,
    settings: &Settings,
    pinned: &BTreeSet<Field>,
) -> Result<AnalyticalReport, Vec<Diagnostic>> {
    let prepared = match parsed {
        Some(w) => {
            let lossy = decode_text(name, bytes).is_ok_and(|(_, lossy)| lossy);
            analytical::prepare_workload(name, w.clone(), lossy)
        }
        None => analytical::parse_workload(name, bytes),
    };
    let mut workload = prepared.map_err(|e| match e {
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
