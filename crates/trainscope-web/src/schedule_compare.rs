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
//! `peak_activation_bytes`), for a described job each stage's whole memory
//! at its peak (the core's memory model, as `memory.per_stage[].peak_bytes`)
//! against the GPU's capacity, and the speed-up over 1F1B (1F1B's iteration
//! time / the row's).
//!
//! The input is parsed once (a file set with the core's `load_files`, a
//! described job's model with [`crate::model_job::resolve_model`]) and each
//! schedule simulated once; the schedule the run itself used is not
//! simulated again: its row and timeline come from the run
//! ([`ExportSource`]) when the settings are the same. Every row's timeline
//! comes back too, compacted ([`compact_timeline`]: the compute and
//! collective lanes and the activation memory lanes), labelled [`TIMELINE_PREFIX`] + the row's
//! name, for the stacked view under the table.
//!
//! [`ScheduleKind::ALL`]: trainscope_core::engine::ScheduleKind::ALL

use crate::engine_run::{event_config, run_error_diagnostics, ExportSource, Simulated};
use crate::job::{JobModel, JobSettings};
use crate::protocol::NamedTimeline;
use crate::settings::{schedule_name, Field, Mode, Schedule, Settings};
use crate::simulate::{pick_input, RunFiles};
use crate::views::{ScheduleComparison, ScheduleRefusal, ScheduleRow};
use std::collections::BTreeSet;
use trainscope_core::engine::Summary;
use trainscope_core::inspect::FileSummary;
use trainscope_core::run::run_loaded;
use trainscope_core::timeline::{Stream, Timeline, TimelineBuilder};
use trainscope_core::Diagnostic;

/// Label prefix of a compared schedule's timeline (`schedule:zb-h1`), so
/// the page tells them from the run's own (`simulated`, `measured`).
pub const TIMELINE_PREFIX: &str = "schedule:";

/// What is compared: the picked files (indices), or a described job.
enum Input {
    Files(Vec<usize>),
    Job(JobSettings),
}

/// The table and each row's compacted timeline (in row order).
#[derive(Debug, Clone)]
pub struct Compared {
    pub table: ScheduleComparison,
    pub timelines: Vec<NamedTimeline>,
}

/// A compact copy of a simulated timeline for the stacked view: its
/// compute and collective lanes (the spans and their labels; the DP
/// collectives keep the iteration's end) and its counter lanes (activation
/// memory); no pipeline send / receive lanes, flows, dependencies or
/// critical path.
pub fn compact_timeline(tl: &Timeline) -> Timeline {
    let mut tb = TimelineBuilder::new();
    // Labels keep their ids: a timeline's labels are already interned.
    for l in tl.labels() {
        tb.label(l);
    }
    for (i, lane) in tl.lanes().iter().enumerate() {
        if matches!(lane.stream, Stream::Send | Stream::Recv) {
            continue;
        }
        let k = tb.lane(lane.clone());
        for s in tl.spans(i as u32) {
            tb.push(k, *s);
        }
    }
    for c in tl.counters() {
        tb.counter(c.clone());
    }
    tb.build()
}

/// A row's name: `zb-h1`, `interleaved (vpp 2)`.
pub fn row_label(schedule: Schedule, virtual_stages: u32) -> String {
    let name = schedule_name(schedule);
    if virtual_stages > 1 {
        format!("{name} (vpp {virtual_stages})")
    } else {
        name.to_string()
    }
}

/// Run the input under every schedule. `run` is what the run itself
/// produced with `settings` and `job` (its output reused for the schedule
/// it ran, not simulated again; its parsed input simulated under the
/// others). `progress(i, schedule)` is called before the i-th
/// (0-based) schedule. An error when nothing can be compared (no input,
/// the SimAI-compatible mode).
#[allow(clippy::too_many_arguments)]
pub fn compare_schedules(
    files: &mut RunFiles,
    summaries: &[FileSummary],
    settings: &Settings,
    pinned: &BTreeSet<Field>,
    job: &JobSettings,
    job_active: bool,
    run: &Simulated,
    progress: &mut dyn FnMut(usize, Schedule),
) -> Result<Compared, Diagnostic> {
    let current = run.source.as_ref();
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
        let names = files.names();
        let picked = pick_input(&names, summaries, &mut ignored);
        let Some(first) = picked.first().map(|&i| names[i]) else {
            return Err(
                Diagnostic::error("nothing to compare: no loaded file can be simulated")
                    .with_hint("load a workload (or pick an example), or describe a job"),
            );
        };
        match crate::model_job::config_file_job(summaries, first, job) {
            Some(job) => {
                let name = job_name(&job);
                (Input::Job(job), name)
            }
            None => {
                let picked_names: Vec<&str> = picked.iter().map(|&i| names[i]).collect();
                (Input::Files(picked), picked_names.join(", "))
            }
        }
    };
    let vpp = match &input {
        Input::Job(j) => j.training.vpp,
        Input::Files(_) => settings.virtual_stages,
    };
    // Parsed once: the files, or the job's model.
    let (main_config, options) = event_config(settings, pinned);
    // The run's own input when it is these files parsed with these
    // options (nothing parsed again), else the files loaded now.
    let fresh;
    let loaded = match &input {
        Input::Files(picked) => Some(match &run.loaded {
            Some(l) if &l.picked == picked && l.options == options => Ok(&l.input),
            _ => {
                fresh = files.load(picked, &options);
                fresh.as_ref().map_err(first_error)
            }
        }),
        Input::Job(_) => None,
    };
    let model = match &input {
        Input::Job(j) => {
            let mut ignored = Vec::new();
            let file = files.model_file(j, &mut ignored);
            let pairs: Vec<(&str, &[u8])> = file
                .iter()
                .map(|(n, b)| (n.as_str(), b.as_slice()))
                .collect();
            Some(crate::model_job::resolve_model(&pairs, &j.model))
        }
        Input::Files(_) => None,
    };
    let mut rows = Vec::new();
    let mut refused = Vec::new();
    let mut timelines = Vec::new();
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
            Input::Files(_) => {
                if interleaved {
                    s.virtual_stages = vpp;
                }
                let (config, _) = event_config(&s, pinned);
                match (current, &loaded) {
                    (Some(ExportSource::Event(out)), _) if config == main_config => Ok((
                        row(schedule, virtual_stages, &out.result.summary, None),
                        compact_timeline(&out.result.timeline),
                    )),
                    (_, Some(Ok(l))) => run_loaded(l, &config, &options)
                        .map(|out| {
                            (
                                row(schedule, virtual_stages, &out.result.summary, None),
                                compact_timeline(&out.result.timeline),
                            )
                        })
                        .map_err(|e| first_error(&e)),
                    (_, Some(Err(d))) => Err(d.clone()),
                    (_, None) => Err(Diagnostic::error("no input")),
                }
            }
            Input::Job(j) => {
                let mut jr = j.clone();
                jr.training.vpp = virtual_stages;
                let reuse = match current {
                    Some(ExportSource::Model(out)) if &jr == j && &s == settings => Some(&**out),
                    _ => None,
                };
                let fresh;
                let out = match (reuse, &model) {
                    (Some(out), _) => Ok(out),
                    (None, Some(Ok(m))) => {
                        fresh = crate::model_job::run_job_with(m.clone(), &jr, &s, pinned);
                        fresh.as_ref().map_err(Clone::clone)
                    }
                    (None, Some(Err(d))) => Err(d.clone()),
                    (None, None) => Err(Diagnostic::error("no model")),
                };
                out.map(|out| {
                    let per_stage = &out.memory.per_stage;
                    let mut r = row(
                        schedule,
                        virtual_stages,
                        &out.run.result.summary,
                        Some(per_stage.iter().map(|m| m.activations_bytes).collect()),
                    );
                    r.memory_bytes = Some(per_stage.iter().map(|m| m.peak_bytes).collect());
                    r.capacity_bytes = Some(out.memory.capacity_bytes);
                    (r, compact_timeline(&out.run.result.timeline))
                })
            }
        };
        match outcome {
            Ok((r, tl)) => {
                timelines.push(NamedTimeline {
                    label: format!("{TIMELINE_PREFIX}{}", row_label(schedule, virtual_stages)),
                    timeline: tl,
                });
                rows.push(r);
            }
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
    Ok(Compared {
        table: ScheduleComparison {
            input: name,
            rows,
            refused,
        },
        timelines,
    })
}

/// A run error's first diagnostic.
fn first_error(e: &trainscope_core::run::RunError) -> Diagnostic {
    run_error_diagnostics(e)
        .into_iter()
        .next()
        .unwrap_or_else(|| Diagnostic::error("the run failed"))
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
        memory_bytes: None,
        capacity_bytes: None,
        speedup_over_1f1b: None,
    }
}
