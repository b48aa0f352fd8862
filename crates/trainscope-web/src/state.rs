//! The app's state and its reducer. Pure Rust (no DOM), so the browser test
//! suite drives it without mounting anything. Loaded files keep their
//! content ([`FileData`]: a dropped or picked file as the browser's
//! `Blob`, unread, outside the page's wasm memory; a bundled example as
//! bytes); every run sends them to the worker. The reducer owns the run
//! bookkeeping: the current run id, progress, and which worker responses
//! are stale (an id other than the current run's is ignored). It also
//! decides what a run simulates: the loaded files, or the job the "Describe
//! a job" panel describes (`job_active`: set by its Run button, an edit of
//! the panel, a link that describes a job, or a run that simulated a
//! dropped `config.json` with the panel's settings; cleared when new files
//! are loaded).

use crate::job::{JobField, JobModel, JobSettings};
use crate::protocol::{FileData, Progress, Response, RunView};
use crate::settings::{Field, FieldError, Mode, Schedule, Settings, SettingsHints};
use crate::url::UrlState;
use crate::views::{FileView, ResultView, ScheduleComparison};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use trainscope_core::timeline::Timeline;
use yew::Reducible;

/// One file the user dropped, picked or loaded from the gallery.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedFile {
    pub name: String,
    pub data: FileData,
    /// What the worker made of it (`None` until a run has parsed it).
    pub view: Option<FileView>,
}

/// Where the current run is.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum RunStatus {
    /// Nothing started yet (or the inputs were cleared).
    #[default]
    Idle,
    Running {
        id: u64,
        progress: Option<Progress>,
    },
    Done {
        id: u64,
    },
    Cancelled {
        id: u64,
    },
    Failed {
        id: u64,
        message: String,
    },
}

impl RunStatus {
    pub fn is_running(&self) -> bool {
        matches!(self, RunStatus::Running { .. })
    }
}

/// A result pinned as "A" for Compare.
#[derive(Debug, Clone, PartialEq)]
pub struct PinnedResult {
    pub result: ResultView,
    pub settings: Settings,
    pub files: Vec<String>,
    /// The run it came from (its timeline may arrive after the pin).
    pub run: u64,
}

/// A timeline the page draws (`simulated`, `measured`, `A`): converted
/// into an `Rc` once when the worker sends it, then shared by every render
/// and compared by identity (a deep comparison of a million spans per
/// render would be wasteful).
#[derive(Debug, Clone)]
pub struct SharedTimeline {
    pub label: String,
    pub timeline: Rc<Timeline>,
}

impl PartialEq for SharedTimeline {
    fn eq(&self, other: &Self) -> bool {
        self.label == other.label && Rc::ptr_eq(&self.timeline, &other.timeline)
    }
}

/// Everything the page shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AppState {
    pub files: Vec<LoadedFile>,
    /// Problems outside any file (a file that could not be read, a failed
    /// example download, a bad link).
    pub notices: Vec<String>,
    /// Files being read.
    pub loading: usize,
    /// The bundled example shown, when the loaded files are exactly it (a
    /// link can then reproduce the view).
    pub example: Option<String>,
    pub settings: Settings,
    /// Fields the user typed or a link set: the files' values do not
    /// override them.
    pub pinned_fields: BTreeSet<Field>,
    /// Pinned fields that a link set (not typed): unpinned again when the
    /// files the link loaded are removed, so a new file pre-fills them.
    pub link_fields: BTreeSet<Field>,
    /// Raw text of fields being edited (so typing `1.` is not reformatted).
    pub texts: BTreeMap<Field, String>,
    /// Fields whose text does not parse, with the message.
    pub parse_errors: BTreeMap<Field, String>,
    /// The id of the newest run started.
    pub current_run: u64,
    pub run: RunStatus,
    /// The newest finished run's output (its `timelines` are empty: they
    /// live in [`AppState::timelines`]).
    pub output: Option<Rc<RunView>>,
    /// The run `output` came from.
    pub output_run: u64,
    /// The timelines of run `timelines_run`: the simulated one first, then
    /// the measured one of a measured run. They arrive after the run's
    /// result; until then the previous run's are shown (dimmed).
    pub timelines: Vec<SharedTimeline>,
    pub timelines_run: u64,
    /// The result pinned as "A".
    pub compare: Option<Rc<PinnedResult>>,
    /// The pinned A's simulated timeline, when it has one.
    pub compare_timeline: Option<SharedTimeline>,
    /// The "Describe a job" panel's values.
    pub job: JobSettings,
    /// Runs simulate the described job instead of the files.
    pub job_active: bool,
    /// Raw text of job fields being edited.
    pub job_texts: BTreeMap<JobField, String>,
    /// Job fields whose text does not parse, with the message.
    pub job_parse_errors: BTreeMap<JobField, String>,
    /// Bumped when the input changes: the file set, or the described job
    /// becoming the input (the page runs at once).
    pub files_rev: u64,
    /// Bumped when the user edits a setting (the page runs after a pause).
    pub edit_rev: u64,
    /// The (`files_rev`, `edit_rev`) the current run started from.
    pub run_basis: (u64, u64),
    /// The (`files_rev`, `edit_rev`) the shown output's run started from:
    /// when it differs from the current ones the result is stale.
    pub output_basis: (u64, u64),
    /// The last Compare-schedules table: kept while the input and the
    /// settings other than the schedule stay (picking a row runs that
    /// schedule and keeps the table); dropped by any other change.
    pub schedules: Option<Rc<ScheduleComparison>>,
    /// The timelines of the last Compare-schedules table's rows (compacted,
    /// labelled `schedule:NAME`), drawn stacked under the table while it is
    /// shown; they arrive with that run's timelines.
    pub schedule_timelines: Vec<SharedTimeline>,
    /// Pin the next run's result as "A" when it finishes (a schedule row's
    /// "pin as A"); becomes `pin_run` when that run starts.
    pub pin_next_run: bool,
    /// The run whose result is pinned as "A" when it finishes.
    pub pin_run: Option<u64>,
}

/// What can happen to the state.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Files are being read; show progress.
    Reading(usize),
    /// Files read (a file with the same name replaces the old one);
    /// `example` names the gallery entry they came from (an example
    /// replaces every loaded file).
    Loaded {
        files: Vec<(String, FileData)>,
        example: Option<String>,
    },
    /// Reading failed (name, reason).
    ReadFailed(String, String),
    Remove(String),
    /// Remove every file and the result (settings stay).
    Clear,
    /// The user set a field to this text.
    Edit(Field, String),
    /// The user set a job field to this text (the job becomes the input).
    JobEdit(JobField, String),
    /// Simulate the described job now (its Run button).
    RunJob,
    /// A link's settings (from the URL fragment).
    Restore(Box<UrlState>),
    /// A message to show (link problems and the like).
    Notice(String),
    DismissNotices,
    /// The page posted run `id` to the worker.
    RunStarted(u64),
    /// A message from the worker.
    Worker(Response),
    /// The worker died during run `id` (or at start).
    Crashed(Option<u64>, String),
    /// The user cancelled the current run.
    Cancel,
    /// A download could not be asked of the worker (why).
    ExportFailed(String),
    /// Pin the current result as "A".
    Pin,
    Unpin,
    /// Run this schedule now (a row of the Compare-schedules table) with
    /// the row's virtual stages: the schedule setting (and, for
    /// interleaved, the virtual stages; for a described job its `--vpp`)
    /// is set as if typed.
    RunSchedule(Schedule, u32),
    /// [`Action::RunSchedule`], then pin that run's result as "A" (its
    /// timeline then shows with the next run's on one time axis).
    PinSchedule(Schedule, u32),
    /// Load a configuration into the job panel (a row of the configuration
    /// search) with its schedule, and simulate it at once; `true`: then pin
    /// that run's result as "A" (the next row clicked is compared with it).
    RunConfig(Box<JobSettings>, Schedule, bool),
}

/// The Configure fields a described job defines (its parallelism, world
/// and micro-batches): while the job is active they show the job's values,
/// read-only ("from the job"): the layout ([`Field::LAYOUT`]).
pub const JOB_DEFINED_FIELDS: [Field; 6] = Field::LAYOUT;

impl AppState {
    /// Text to show in a field's input.
    pub fn field_text(&self, field: Field) -> String {
        self.texts
            .get(&field)
            .cloned()
            .unwrap_or_else(|| self.settings.get(field))
    }

    /// Every message to show next to a field: parse errors first, then the
    /// settings' validation (for fields that parsed).
    pub fn field_errors(&self) -> Vec<FieldError> {
        // With a described job active, the fields it defines are shown, not
        // set, here: checks run against the job's values (what will be
        // simulated), and no read-only field can hold an error (the job's
        // own checks are the Describe a job panel's).
        let job_defined = |f: &Field| self.job_active && JOB_DEFINED_FIELDS.contains(f);
        let checked = self.simulated_settings();
        let mut out: Vec<FieldError> = self
            .parse_errors
            .iter()
            .filter(|(f, _)| !job_defined(f))
            .map(|(f, m)| FieldError::new(*f, m.clone()))
            .collect();
        out.extend(
            checked
                .validate()
                .into_iter()
                .filter(|e| !self.parse_errors.contains_key(&e.field) && !job_defined(&e.field)),
        );
        // The interleaved schedule picked here on a job without virtual
        // stages: said at the schedule (editable), not at the read-only
        // virtual stages, so the user is never left without a way out.
        if self.job_active
            && checked.mode == Mode::Event
            && checked.schedule == Schedule::Interleaved
            && checked.virtual_stages < 2
            && !out.iter().any(|e| e.field == Field::Schedule)
        {
            out.push(FieldError::new(
                Field::Schedule,
                "the interleaved schedule needs at least 2 virtual stages: set the job's virtual stages in Describe a job, or pick another schedule",
            ));
        }
        out.sort_by_key(|e| Field::ALL.iter().position(|f| *f == e.field));
        out
    }

    /// The settings the next run simulates: Configure's, or with a described
    /// job active the job's ([`JobSettings::sim_settings`]: its layout, its
    /// GPU's NVLink bandwidth, the interleaved schedule when it has virtual
    /// stages). Configure shows these values and the checks run on them.
    pub fn simulated_settings(&self) -> Settings {
        if self.job_active {
            self.job.sim_settings(&self.settings, &self.pinned_fields)
        } else {
            self.settings.clone()
        }
    }

    /// Text to show in a job field's control.
    pub fn job_text(&self, field: JobField) -> String {
        self.job_texts
            .get(&field)
            .cloned()
            .unwrap_or_else(|| self.job.get(field))
    }

    /// Whether there is something to simulate: files, or the described job.
    pub fn has_input(&self) -> bool {
        self.job_active || !self.files.is_empty()
    }

    /// Whether a run can start now.
    pub fn can_run(&self) -> bool {
        self.has_input()
            && self.loading == 0
            && self.field_errors().is_empty()
            && (!self.job_active || self.job_parse_errors.is_empty())
    }

    /// Whether the described job can be simulated now (its Run button).
    pub fn can_run_job(&self) -> bool {
        self.loading == 0 && self.field_errors().is_empty() && self.job_parse_errors.is_empty()
    }

    /// Why the job cannot be simulated (the shown output's), if it was the
    /// job that ran: the core's message and hint.
    pub fn job_error(&self) -> Option<&trainscope_core::Diagnostic> {
        self.output
            .as_ref()
            .and_then(|o| o.job.as_ref())
            .and_then(|j| j.error.as_ref())
    }

    /// The loaded files the worker recognised as model configs.
    pub fn model_files(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|f| {
                f.view
                    .as_ref()
                    .is_some_and(|v| v.format.as_deref() == Some("hf-config"))
            })
            .map(|f| f.name.clone())
            .collect()
    }

    /// The result the Read panel shows (the newest finished run's).
    pub fn result(&self) -> Option<&ResultView> {
        self.output.as_ref().and_then(|o| o.result.as_ref())
    }

    /// Whether the timelines shown are older than the result shown.
    pub fn timelines_stale(&self) -> bool {
        self.timelines_run != self.output_run || self.run.is_running()
    }

    /// Whether the timelines of the shown output's run have not arrived yet
    /// (the worker sends them after the result).
    pub fn timelines_pending(&self) -> bool {
        self.output.is_some() && self.timelines_run != self.output_run
    }

    /// What the timeline panel says while it has nothing of this run to
    /// draw: `None` once the run's timelines arrived (an empty list then
    /// means the run has none).
    pub fn timeline_wait_note(&self) -> Option<&'static str> {
        if !self.timelines_pending() {
            return None;
        }
        Some(match self.run {
            RunStatus::Cancelled { .. } | RunStatus::Failed { .. } => {
                "The timeline of this result did not arrive before the next run stopped: press Simulate to draw it."
            }
            _ => "Drawing the timeline…",
        })
    }

    /// Whether the shown result is not the result of the current settings
    /// and files: a run is in progress, a later run was cancelled or
    /// failed, or the settings or files changed since its run started.
    pub fn results_stale(&self) -> bool {
        self.output.is_some()
            && (self.run.is_running()
                || self.output_run != self.current_run
                || self.output_basis != (self.files_rev, self.edit_rev))
    }

    /// The note over a stale result when no run is updating it. A valid
    /// settings edit is followed by its run after the debounce pause, so
    /// that moment gets no note (it would flash on every keystroke); the
    /// result is still dimmed ([`AppState::results_stale`]).
    pub fn stale_note(&self) -> Option<&'static str> {
        if !self.results_stale() || self.run.is_running() {
            return None;
        }
        let valid = self.field_errors().is_empty();
        let edit_pending = self.output_run == self.current_run
            && self.output_basis.0 == self.files_rev
            && self.can_run();
        if valid && edit_pending {
            return None;
        }
        Some(if valid {
            "These results are from an earlier run: press Simulate to update them."
        } else {
            "These results are from an earlier run: correct the settings marked in red, then press Simulate."
        })
    }

    /// Why the shown result's downloads are unavailable (`None`: they
    /// work). The worker keeps only its last finished run's data, so only
    /// a result whose run finished, with no run after it, can be saved.
    pub fn downloads_blocked(&self) -> Option<&'static str> {
        if self.output.is_none() {
            return Some("No result to download yet");
        }
        match self.run {
            RunStatus::Done { id } if id == self.output_run => None,
            RunStatus::Running { .. } => {
                Some("A run is in progress: downloads are available when it finishes")
            }
            RunStatus::Cancelled { .. } => {
                Some("The last run was cancelled: press Simulate, then download")
            }
            RunStatus::Failed { .. } => Some("The last run failed: press Simulate, then download"),
            _ => Some("This result is from an earlier run: press Simulate, then download"),
        }
    }

    /// The badge of a file the worker has not parsed yet.
    pub fn unparsed_label(&self) -> &'static str {
        match self.run {
            RunStatus::Cancelled { .. } => "not parsed (run cancelled) — press Simulate",
            RunStatus::Failed { .. } => "not parsed (run failed) — press Simulate",
            _ => "parsing…",
        }
    }

    /// The current simulated timeline, labelled as the pinned A.
    fn pinned_timeline(&self) -> Option<SharedTimeline> {
        self.timelines
            .iter()
            .find(|t| t.label == "simulated")
            .map(|t| SharedTimeline {
                label: "A".into(),
                timeline: t.timeline.clone(),
            })
    }

    /// Set the schedule a row names (and its virtual stages: the job's vpp
    /// for a described job, the setting for interleaved) as if typed, and
    /// run at once.
    fn run_schedule(&mut self, schedule: Schedule, virtual_stages: u32) {
        self.settings.schedule = schedule;
        self.texts.remove(&Field::Schedule);
        self.parse_errors.remove(&Field::Schedule);
        self.pinned_fields.insert(Field::Schedule);
        self.link_fields.remove(&Field::Schedule);
        if self.job_active {
            self.job.training.vpp = virtual_stages;
            self.job_texts.remove(&JobField::Vpp);
            self.job_parse_errors.remove(&JobField::Vpp);
        } else if schedule == Schedule::Interleaved {
            self.settings.virtual_stages = virtual_stages;
            self.texts.remove(&Field::VirtualStages);
            self.parse_errors.remove(&Field::VirtualStages);
            self.pinned_fields.insert(Field::VirtualStages);
            self.link_fields.remove(&Field::VirtualStages);
        }
        // Runs at once, like new files; the table stays.
        self.files_rev += 1;
    }

    /// Pin the shown output's result as "A" (false: there is none).
    fn pin_output(&mut self) -> bool {
        let Some(output) = &self.output else {
            return false;
        };
        let Some(result) = &output.result else {
            return false;
        };
        self.compare = Some(Rc::new(PinnedResult {
            result: result.clone(),
            settings: output.settings.clone(),
            files: output.files.iter().map(|f| f.name.clone()).collect(),
            run: self.output_run,
        }));
        self.compare_timeline = if self.timelines_run == self.output_run {
            self.pinned_timeline()
        } else {
            None
        };
        true
    }

    /// Forget the pins a link made (its files are gone).
    fn drop_link_pins(&mut self) {
        for f in std::mem::take(&mut self.link_fields) {
            self.pinned_fields.remove(&f);
        }
    }

    /// Unpin the settings files state ([`SettingsHints::FIELDS`], typed or
    /// set by a link) and put their defaults back, so a file set that
    /// replaces the loaded one applies its own values and the form shows
    /// (and validates) what the next run uses. The cluster the user chose
    /// (GPU, bandwidths, overlaps, ...) stays.
    fn unpin_file_fields(&mut self) {
        let defaults = Settings::default();
        for f in SettingsHints::FIELDS {
            self.pinned_fields.remove(&f);
            self.link_fields.remove(&f);
            self.texts.remove(&f);
            self.parse_errors.remove(&f);
            // A default's own text always parses back.
            let _ = self.settings.set(f, &defaults.get(f));
        }
    }

    fn files_changed(&mut self) {
        self.files_rev += 1;
        self.schedules = None;
        // The job's model file is gone: back to the panel's preset.
        if let JobModel::File(name) = &self.job.model {
            if !self.files.iter().any(|f| &f.name == name) {
                self.job.model = JobModel::default();
                self.job_active = false;
                self.job_texts.remove(&JobField::Model);
            }
        }
        if !self.has_input() {
            self.output = None;
            self.timelines.clear();
            self.run = RunStatus::Idle;
        }
    }
}

impl Reducible for AppState {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut next = (*self).clone();
        match action {
            Action::Reading(n) => next.loading += n,
            Action::Loaded { files, example } => {
                next.loading = next.loading.saturating_sub(files.len());
                // An example is a whole run: it replaces what was loaded
                // (and the pins a link made for those files, and the values
                // typed over those files' values: the example's own apply).
                if example.is_some() && !next.files.is_empty() {
                    next.files.clear();
                    next.drop_link_pins();
                    next.unpin_file_fields();
                }
                for (name, data) in files {
                    let file = LoadedFile {
                        name,
                        data,
                        view: None,
                    };
                    match next.files.iter_mut().find(|f| f.name == file.name) {
                        Some(slot) => *slot = file,
                        None => next.files.push(file),
                    }
                }
                next.example = match (example, next.files.as_slice()) {
                    (Some(ex), [only]) if only.name == ex => Some(ex),
                    _ => None,
                };
                // New files are the input (a model config among them runs
                // as the job again: the worker says so).
                next.job_active = false;
                next.files_changed();
            }
            Action::ReadFailed(name, reason) => {
                next.loading = next.loading.saturating_sub(1);
                next.notices
                    .push(format!("could not read {name}: {reason}"));
            }
            Action::Remove(name) => {
                next.files.retain(|f| f.name != name);
                next.drop_link_pins();
                if next.example.as_deref() == Some(name.as_str()) || next.files.is_empty() {
                    next.example = None;
                }
                next.files_changed();
            }
            Action::Clear => {
                next.files.clear();
                next.job_active = false;
                next.drop_link_pins();
                // The next files form a new set: their values apply.
                next.unpin_file_fields();
                next.example = None;
                next.notices.clear();
                next.files_changed();
            }
            Action::Edit(field, text) => {
                let before = next.settings.clone();
                match next.settings.set(field, &text) {
                    Ok(()) => {
                        next.parse_errors.remove(&field);
                    }
                    Err(m) => {
                        next.parse_errors.insert(field, m);
                    }
                }
                // A preset that changed another field's value: show the new value.
                next.texts
                    .retain(|f, _| *f == field || before.get(*f) == next.settings.get(*f));
                next.texts.insert(field, text);
                next.pinned_fields.insert(field);
                next.link_fields.remove(&field);
                next.edit_rev += 1;
                // The table compares schedules on the other settings.
                if field != Field::Schedule && before != next.settings {
                    next.schedules = None;
                }
            }
            Action::JobEdit(field, text) => {
                match next.job.set(field, &text) {
                    Ok(()) => {
                        next.job_parse_errors.remove(&field);
                        // Fields that show the same setting follow it.
                        for f in field.linked() {
                            next.job_texts.remove(f);
                        }
                    }
                    Err(m) => {
                        next.job_parse_errors.insert(field, m);
                    }
                }
                next.job_texts.insert(field, text);
                next.job_active = true;
                next.edit_rev += 1;
                next.schedules = None;
            }
            Action::RunJob => {
                next.job_active = true;
                // Runs at once, like new files.
                next.files_rev += 1;
            }
            Action::Restore(url) => {
                let url = *url;
                next.settings = url.settings;
                next.link_fields = url.given.clone();
                next.pinned_fields = url.given;
                next.texts.clear();
                next.parse_errors.clear();
                next.job_texts.clear();
                next.job_parse_errors.clear();
                match url.job {
                    Some(job) => {
                        next.job = job;
                        next.job_active = true;
                    }
                    None => next.job_active = false,
                }
                next.edit_rev += 1;
                next.schedules = None;
            }
            Action::Notice(m) => next.notices.push(m),
            Action::DismissNotices => next.notices.clear(),
            Action::RunStarted(id) => {
                next.pin_run = std::mem::take(&mut next.pin_next_run).then_some(id);
                next.current_run = id;
                next.run = RunStatus::Running { id, progress: None };
                next.run_basis = (next.files_rev, next.edit_rev);
            }
            Action::Worker(response) => {
                let current = next.current_run;
                let running = next.run.is_running();
                match response {
                    Response::Ready => return self,
                    Response::Progress(p) if running && p.id == current => {
                        next.run = RunStatus::Running {
                            id: current,
                            progress: Some(p),
                        };
                    }
                    Response::Done { id, output } if running && id == current => {
                        for view in &output.files {
                            if let Some(f) = next.files.iter_mut().find(|f| f.name == view.name) {
                                f.view = Some(view.clone());
                            }
                        }
                        next.settings =
                            next.settings.with_hints(&output.hints, &next.pinned_fields);
                        // A dropped config.json ran as the job: the panel
                        // shows that model, and its edits run the job.
                        if let Some(j) = &output.job {
                            if !next.job_active && matches!(j.model, JobModel::File(_)) {
                                next.job.model = j.model.clone();
                                next.job_texts.remove(&JobField::Model);
                                // The layout it started from (none was set).
                                if let Some(start) = &j.start {
                                    next.job.training = start.training.clone();
                                    next.job_texts.clear();
                                    next.job_parse_errors.clear();
                                }
                                next.job_active = true;
                            }
                        }
                        if let Some(c) = &output.schedules {
                            next.schedules = Some(Rc::new(c.clone()));
                            // This table's timelines follow.
                            next.schedule_timelines.clear();
                        }
                        next.output = Some(Rc::new(*output));
                        next.output_run = id;
                        next.output_basis = next.run_basis;
                        next.run = RunStatus::Done { id };
                        if next.pin_run.take() == Some(id) {
                            next.pin_output();
                        }
                    }
                    Response::Failed { id, message } if running && id == current => {
                        next.run = RunStatus::Failed { id, message };
                    }
                    // A download the worker could not make.
                    Response::ExportFailed { message, .. } => {
                        next.notices.push(format!("download failed: {message}"));
                    }
                    // The worker failed after the shown result's run had
                    // finished (preparing its timelines or a download): say
                    // so, and stop waiting for timelines that will not come.
                    Response::Failed { id, message }
                        if next.output.is_some() && id == next.output_run =>
                    {
                        next.notices.push(format!(
                            "the worker failed after run {id} finished: {message}"
                        ));
                        if next.timelines_run != id {
                            next.timelines.clear();
                            next.timelines_run = id;
                        }
                    }
                    // The shown result's timelines (also when a newer run
                    // has started since: they belong to what is shown).
                    Response::Timelines { id, timelines }
                        if next.output.is_some() && next.output_run == id =>
                    {
                        let (compared, own): (Vec<_>, Vec<_>) = timelines
                            .into_iter()
                            .map(|t| SharedTimeline {
                                label: t.label,
                                timeline: Rc::new(t.timeline),
                            })
                            .partition(|t| {
                                t.label
                                    .starts_with(crate::schedule_compare::TIMELINE_PREFIX)
                            });
                        next.timelines = own;
                        // A schedule row's run keeps the table and its
                        // timelines; a new comparison replaces them.
                        if !compared.is_empty() || next.schedules.is_none() {
                            next.schedule_timelines = compared;
                        }
                        next.timelines_run = id;
                        if next.compare.as_ref().is_some_and(|p| p.run == id) {
                            next.compare_timeline = next.pinned_timeline();
                        }
                    }
                    // A response of an older run (or after a cancel): stale.
                    _ => return self,
                }
            }
            Action::Crashed(id, message) => match id {
                Some(id) if next.run.is_running() && id == next.current_run => {
                    next.run = RunStatus::Failed { id, message };
                }
                None => next.notices.push(message),
                _ => return self,
            },
            Action::Cancel => {
                if let RunStatus::Running { id, .. } = next.run {
                    next.run = RunStatus::Cancelled { id };
                }
            }
            Action::ExportFailed(message) => {
                next.notices.push(format!("download failed: {message}"));
            }
            Action::Pin => {
                if !next.pin_output() {
                    return self;
                }
            }
            Action::Unpin => {
                next.compare = None;
                next.compare_timeline = None;
            }
            Action::PinSchedule(schedule, virtual_stages) => {
                next.run_schedule(schedule, virtual_stages);
                next.pin_next_run = true;
            }
            Action::RunSchedule(schedule, virtual_stages) => {
                next.run_schedule(schedule, virtual_stages);
            }
            Action::RunConfig(job, schedule, pin) => {
                let vpp = job.training.vpp;
                next.job = *job;
                next.job_texts.clear();
                next.job_parse_errors.clear();
                next.job_active = true;
                next.schedules = None;
                next.run_schedule(schedule, vpp);
                next.pin_next_run = pin;
            }
        }
        Rc::new(next)
    }
}
