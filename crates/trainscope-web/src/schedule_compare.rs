//! Worker side of "Compare schedules": the current input (the picked
//! workload file, or the described job) simulated once under every pipeline
//! schedule of the core ([`ScheduleKind::ALL`], as the page's
//! [`Schedule::ALL`]), each with the page's other settings unchanged, as
//! `trainscope simulate --schedule NAME` would. A schedule whose conditions
//! the run does not meet (the core's `ScheduleKind::check`, or anything
//! else the core refuses for it) is listed with the core's message instead
//! of a row. Interleaved 1F1B is compared only when the input has more than
//! one virtual stage (the settings' `vpp` for a file, the job's `--vpp` for a
//! described job); a described job runs every other schedule with one
//! virtual stage (the core refuses `--vpp` > 1 with them).
//!
//! Each row: iteration time, bubble (the summary's, of the rank the critical
//! path ends on), the peak activation memory per stage in micro-batches
//! (`peak_activation_micro_batches`) and, for a described job, in bytes (the
//! memory model's activations at that peak, the CLI's
//! `peak_activation_bytes`), and the speed-up over 1F1B (1F1B's iteration
//! time / the row's).
//!
//! [`ScheduleKind::ALL`]: trainscope_core::sim::ScheduleKind::ALL

use crate::compute::{event_config, pick_input, run_error_diagnostics};
use crate::job::{JobModel, JobSettings};
use crate::settings::{Field, Mode, Schedule, Settings};
use crate::views::{ScheduleComparison, ScheduleRefusal, ScheduleRow};
use std::collections::BTreeSet;
use trainscope_core::formats::Format;
use trainscope_core::inspect::FileSummary;
use trainscope_core::sim::run::run_files;
use trainscope_core::sim::Summary;
use trainscope_core::Diagnostic;

/// What is compared.
enum Input<'a> {
    Files(Vec<(&'a str, &'a [u8])>),
    Job(JobSettings),
}

/// Run the input under every schedule. `progress(i, schedule)` is called
/// before the i-th (0-based) schedule. An error when nothing can be
/// compared (no input, the SimAI-compatible mode).
pub fn compare_schedules(
    pairs: &[(&str, &[u8])],
    summaries: &[FileSummary],
    settings: &Settings,
    pinned: &BTreeSet<Field>,
    job: &JobSettings,
    job_active: bool,
    progress: &mut dyn FnMut(usize, Schedule),
) -> Result<ScheduleComparison, Diagnostic> {
    if settings.mode == Mode::Simai {
        return Err(Diagnostic::error(
            "schedules are compared in the event-level mode (the SimAI-compatible mode has no schedule: it scales one stage by the closed-form bubble)",
        )
        .with_hint("switch the mode to event-level, then press Compare schedules"));
    }
    let (input, name) = if job_active {
        (Input::Job(job.clone()), job_name(job))
    } else {
        let mut ignored = Vec::new();
        let picked = pick_input(pairs, summaries, &mut ignored);
        let Some(&(first, _)) = picked.first() else {
            return Err(
                Diagnostic::error("nothing to compare: no loaded file can be simulated")
                    .with_hint("load a workload (or pick an example), or describe a job"),
            );
        };
        let format = summaries
            .iter()
            .find(|s| s.file == first)
            .and_then(|s| s.format);
        if format == Some(Format::HfConfig) {
            let job = job.with_model(JobModel::File(first.to_string()));
            let name = job_name(&job);
            (Input::Job(job), name)
        } else {
            let names: Vec<&str> = picked.iter().map(|(n, _)| *n).collect();
            (Input::Files(picked), names.join(", "))
        }
    };
    let vpp = match &input {
        Input::Job(j) => j.vpp,
        Input::Files(_) => settings.virtual_stages,
    };
    let mut rows = Vec::new();
    let mut refused = Vec::new();
    for (i, schedule) in Schedule::ALL.into_iter().enumerate() {
        progress(i, schedule);
        let interleaved = schedule == Schedule::Interleaved;
        if interleaved && vpp <= 1 {
            refused.push(ScheduleRefusal {
                schedule,
                message: "interleaved 1F1B needs more than one virtual stage; this input has 1 (set Virtual stages, or the job's --vpp, to compare it)".into(),
            });
            continue;
        }
        let mut s = settings.clone();
        s.schedule = schedule;
        let virtual_stages = if interleaved { vpp } else { 1 };
        let outcome = match &input {
            Input::Files(files) => {
                if interleaved {
                    s.virtual_stages = vpp;
                }
                let (config, options) = event_config(&s, pinned);
                run_files(files, &config, &options)
                    .map(|out| row(schedule, virtual_stages, &out.result.summary, None))
                    .map_err(|e| {
                        run_error_diagnostics(&e)
                            .into_iter()
                            .next()
                            .unwrap_or_else(|| Diagnostic::error("the run failed"))
                    })
            }
            Input::Job(j) => {
                let mut j = j.clone();
                j.vpp = virtual_stages;
                crate::model_job::run_job(pairs, &j, &s, pinned).map(|out| {
                    let bytes = out
                        .memory
                        .per_stage
                        .iter()
                        .map(|m| m.activations_bytes)
                        .collect();
                    row(
                        schedule,
                        virtual_stages,
                        &out.run.result.summary,
                        Some(bytes),
                    )
                })
            }
        };
        match outcome {
            Ok(r) => rows.push(r),
            Err(d) => refused.push(ScheduleRefusal {
                schedule,
                message: d.message,
            }),
        }
    }
    let base = rows
        .iter()
        .find(|r| r.schedule == Schedule::OneFOneB)
        .map(|r| r.iteration_time_ns);
    for r in &mut rows {
        r.speedup_over_1f1b = base
            .filter(|_| r.iteration_time_ns > 0)
            .map(|b| b as f64 / r.iteration_time_ns as f64);
    }
    Ok(ScheduleComparison {
        input: name,
        rows,
        refused,
    })
}

fn job_name(job: &JobSettings) -> String {
    match &job.model {
        JobModel::Preset(n) | JobModel::File(n) => format!("{n} (described job)"),
    }
}

fn row(
    schedule: Schedule,
    virtual_stages: u32,
    s: &Summary,
    peak_bytes: Option<Vec<u64>>,
) -> ScheduleRow {
    ScheduleRow {
        schedule,
        virtual_stages,
        iteration_time_ns: s.iteration_time_ns,
        bubble_ns: s.bubble_ns,
        peak_micro_batches: s
            .stages
            .iter()
            .map(|st| st.peak_activation_micro_batches)
            .collect(),
        peak_bytes,
        speedup_over_1f1b: None,
    }
}
