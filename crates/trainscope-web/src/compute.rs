//! What the worker computes for a run ([`run`]): parse every file with
//! `trainscope_core`, collect the settings the files state
//! ([`SettingsHints`]), apply them to the unpinned settings, simulate
//! ([`crate::simulate`]), compare schedules when asked
//! ([`crate::schedule_compare`]) and report progress along the way. Pure
//! and synchronous, so the browser tests call it directly; in the app it
//! only ever runs inside the Web Worker (`src/bin/worker.rs`).

use crate::engine_run::ExportSource;
use crate::present::{file_view, hints_from_summary};
use crate::protocol::{FileData, InputFile, Progress, RunRequest, RunView};
use crate::settings::Schedule;
use crate::settings::SettingsHints;
use crate::simulate::{simulate, unread_error, ReadFile, RunFiles};
use std::rc::Rc;
use trainscope_core::formats::simai::SimaiWorkload;
use trainscope_core::inspect::{LoadOptions, SetLoader};
use trainscope_core::Diagnostic;

/// Files from this size on report progress while they are parsed
/// ([`Progress::parsed_bytes`]); smaller ones parse in a blink.
pub const PARSE_PROGRESS_MIN_BYTES: u64 = 4 << 20;

/// Run one request: parse every file (Echo rank files of one job form one
/// run), pre-fill settings from the headers, then simulate in the chosen
/// mode. `progress` is called before each step: parsing the set, then
/// each file's summary (so a multi-file load moves), simulating, and
/// preparing the results.
pub fn run(req: &RunRequest, progress: &mut dyn FnMut(Progress)) -> RunView {
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

/// [`run`], also returning what the run's downloads are made from. A
/// `Blob` file is not read here: it is reported as a file that could not
/// be read ([`run_with_reader`] reads it).
pub fn run_with_source(
    req: &RunRequest,
    progress: &mut dyn FnMut(Progress),
) -> (RunView, Option<ExportSource>) {
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
) -> (RunView, Option<ExportSource>) {
    let n = u32::try_from(req.files.len()).unwrap_or(u32::MAX);
    let compared = compared_steps(req);
    let total = progress_total(req);
    progress(Progress {
        id: req.id,
        done: 0,
        total,
        label: format!(
            "Parsing {}",
            crate::format::counted(req.files.len() as u64, "file", "files")
        ),
        parsed_bytes: None,
    });
    let mut unread = Vec::new();
    let mut loader = SetLoader::new(None, &LoadOptions::default());
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
    }
    let set = loader.finish();
    let summaries = set.summaries.clone();
    let mut run_files = RunFiles::with_set(&req.files, read, set);
    // Per file: its SimAI workload (the file card's declared totals), as the
    // set parsed it.
    let workloads: Vec<Option<SimaiWorkload>> = (0..summaries.len())
        .map(|i| run_files.simai_workload(i).cloned())
        .collect();
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
    let output = RunView {
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
