//! What each task of a simulation's graph is ([`TaskMeta`]), which rank runs
//! which program ([`ProgramInfo`]) and the schedule's steps ([`StepRecord`]),
//! gathered in [`Meta`]: built by [`super::build`], read by
//! [`super::summary`] and the timeline's finish.

use crate::engine::event::{Engine, TaskId, NONE};
use crate::engine::schedule::{PipeStep, ScheduleKind};
use crate::engine::spec::JobMode;
use crate::engine::SimError;
use crate::timeline::{CollOp, Span, SpanKind, Stream};

/// What a task is, for the timeline and the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskMeta {
    /// Program (simulated rank) that runs it; the sender for transfers.
    pub program: u32,
    /// Receiving program of a transfer, else NONE.
    pub peer: u32,
    pub label: u32,
    pub layer: u32,
    pub micro_batch: u32,
    pub bytes: u64,
    pub kind: SpanKind,
    pub stream: Stream,
    pub coll: CollOp,
    pub chunk: u8,
}

impl TaskMeta {
    /// True for a stage-to-stage transfer.
    pub fn is_transfer(&self) -> bool {
        self.peer != NONE
    }
}

/// One simulated rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramInfo {
    pub rank: u32,
    pub stage: u32,
}

/// The tasks of one step of a rank's order, for activation memory over time
/// ([`summary::activation_series`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRecord {
    /// Program (simulated rank) that ran it.
    pub program: u32,
    pub step: PipeStep,
    /// The step's first task (NONE when it made none: zero work).
    pub first: TaskId,
    /// Its last task on the rank's chain (compute or blocking collective;
    /// NONE when it made none).
    pub last: TaskId,
    /// Its end frees the activations of its micro-batch and chunk: a W
    /// step, or a backward without a W step of its own.
    pub releases: bool,
}

/// Everything known about the tasks of a built model.
#[derive(Debug, Clone)]
pub struct Meta {
    pub tasks: Vec<TaskMeta>,
    pub programs: Vec<ProgramInfo>,
    /// Every step run, per program in order.
    pub steps: Vec<StepRecord>,
    pub labels: Vec<String>,
    pub mode: JobMode,
    /// [`crate::engine::spec::JobSpec::stage_copies`]: each per-rank
    /// program stands for its stage's ranks.
    pub stage_copies: bool,
    pub job_name: String,
    pub stages: u32,
    pub micro_batches: u32,
    pub virtual_stages: u32,
    pub schedule: ScheduleKind,
    pub cost_model: String,
    pub activation_bytes: u64,
    /// SimAI's closed-form bubble for this job, ns.
    pub simai_bubble_ns: u64,
    /// Some op had a host launch ([`crate::engine::spec::PhaseOps::launch_ns`]).
    pub host: bool,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

impl Meta {
    /// Describe task `t` for messages.
    pub fn describe(&self, t: TaskId) -> String {
        let Some(m) = self.tasks.get(t as usize) else {
            return format!("task {t}");
        };
        let who = self
            .programs
            .get(m.program as usize)
            .map_or(String::new(), |p| {
                format!("rank {} (stage {})", p.rank, p.stage)
            });
        let mb = if m.micro_batch == Span::NONE {
            String::new()
        } else {
            format!(", micro-batch {}", m.micro_batch)
        };
        format!(
            "{} `{}` on {who}{mb}",
            m.kind.name(),
            self.labels.get(m.label as usize).map_or("", |s| s.as_str())
        )
    }

    /// Turn an engine stall into a message naming the first stuck task.
    pub fn explain_stall(&self, e: SimError, engine: &Engine) -> SimError {
        match e {
            SimError::Stalled(_) => {
                let stuck = engine
                    .all_times()
                    .iter()
                    .position(|t| t.state != crate::engine::event::TaskState::Done)
                    .unwrap_or(0) as u32;
                SimError::Stalled(format!(
                    "{} never ran (collectives of a group must come in the same order on every simulated member, and none may wait for a point-to-point transfer that waits for it)",
                    self.describe(stuck)
                ))
            }
            other => other,
        }
    }
}
