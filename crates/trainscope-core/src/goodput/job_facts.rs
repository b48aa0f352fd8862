//! What a plan takes from a simulated job: the iteration time, the GPUs,
//! the tokens per iteration (global batch x sequence length), the
//! checkpoint size and the job's memory. One home for the checkpoint's
//! size: one copy of the job's state, counted per model replica, not per
//! rank — the model's parameters times the memory model's bytes per
//! parameter for the weights ([`crate::job::layout::weight_bytes`]) and the
//! optimizer states ([`crate::job::memory::optimizer_bytes`]; bf16: 2 + 12,
//! the fp32 main weights and Adam's two moments; gradients are not saved).
//! The CLI reads these facts back from a `simulate --json` report, the page
//! from the simulated job itself; both end here, so they plan the same job
//! the same way.

use crate::hardware::Precision;
use crate::job::layout::weight_bytes;
use crate::job::memory::optimizer_bytes;
use crate::job::run::ModelRunOutput;
use crate::job::TrainingSetup;
use serde::{Deserialize, Serialize};

/// Bytes of one checkpoint of a model of `parameters` trained at
/// `precision` (`bf16_grads`: gradients kept in bf16, which changes the
/// optimizer's bytes per parameter).
pub fn checkpoint_size_bytes(parameters: u64, precision: Precision, bf16_grads: bool) -> u64 {
    let setup = TrainingSetup {
        precision,
        bf16_grads,
        ..TrainingSetup::default()
    };
    parameters.saturating_mul(weight_bytes(precision) + optimizer_bytes(&setup))
}

/// The facts of one simulated job a plan needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanJob {
    /// One iteration, nanoseconds.
    pub iteration_time_ns: u64,
    pub gpus: u32,
    /// Global batch x sequence length (None: not known, plan `Steps`).
    pub tokens_per_iteration: Option<u64>,
    /// [`checkpoint_size_bytes`] of the model (None: no model).
    pub checkpoint_size_bytes: Option<u64>,
    /// The GPUs' memory, all of them (None: not known).
    pub memory_bytes: Option<u64>,
}

impl PlanJob {
    /// The facts of a described (model-level) job's run.
    pub fn of_model_run(out: &ModelRunOutput) -> PlanJob {
        let j = &out.job;
        let s = &j.setup;
        PlanJob {
            iteration_time_ns: out.run.summary().iteration_time_ns,
            gpus: j.world,
            tokens_per_iteration: Some(u64::from(j.global_batch_size) * u64::from(s.seq_length)),
            checkpoint_size_bytes: Some(checkpoint_size_bytes(
                j.model.parameters().total,
                s.precision,
                s.bf16_grads,
            )),
            memory_bytes: Some(out.memory.capacity_bytes.saturating_mul(u64::from(j.world))),
        }
    }
}
