//! The event engine: one training iteration of a schedule-ready job
//! ([`spec::JobSpec`]) simulated event by event. A pipeline schedule
//! ([`schedule`]) orders each stage's steps, [`build`] expands them into a
//! task graph over per-rank streams with the network model ([`network`]),
//! the deterministic discrete-event loop ([`event`]) runs it, and the result
//! is a drawable [`crate::timeline::Timeline`] and a [`summary::Summary`]
//! (bubble, exposed communication per group, critical path).
//!
//! Adapters into a [`JobSpec`]: [`JobSpec::from_simai`] and
//! [`JobSpec::from_described`] ([`described`]); [`simai_cost`] is the
//! SimAI-compatible collective cost (`Algorithm::Simai`). Measured runs are
//! rebuilt as jobs in [`crate::replay`]; [`crate::run`] is the entry the CLI
//! and the page call.
//!
//! Everything here is pure: integer-nanosecond time, no threads, clocks or
//! IO, and the same input gives byte-identical output on every platform.
//!
//! ```
//! use trainscope_core::engine::{self, spec::JobSpec, SimConfig};
//! let w = trainscope_core::formats::simai::parse("w.txt",
//!     "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 2 vpp: 1 ga: 2 all_gpus: 4 pp_comm: 1048576\n\
//!      2\n\
//!      embedding_layer -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n\
//!      embedding_layer -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n").unwrap();
//! let job = JobSpec::from_simai(&w).unwrap();
//! let result = engine::simulate(&job, &SimConfig::default()).unwrap();
//! assert!(result.summary.iteration_time_ns > 0);
//! ```

pub mod build;
pub mod chunks;
pub mod config;
pub mod described;
pub mod event;
pub mod faults;
pub mod injection;
pub mod network;
pub mod schedule;
pub mod simai_cost;
pub mod spec;
pub mod summary;
pub mod task;

pub use config::{Algorithm, NetworkConfig, SimConfig};
pub use network::{CollectiveCost, CollectiveRequest, CostError, NetworkModel};
pub use schedule::ScheduleKind;
pub use simai_cost::SimaiCost;
pub use spec::JobSpec;
pub use summary::Summary;

use crate::timeline::Timeline;

/// `ns * factor`, rounded, saturating.
pub(crate) fn scale(ns: u64, factor: f64) -> u64 {
    if factor == 1.0 {
        return ns;
    }
    let x = (ns as f64 * factor).round();
    if !x.is_finite() || x <= 0.0 {
        0
    } else if x >= 1.8e19 {
        u64::MAX / 4
    } else {
        x as u64
    }
}

/// Why a simulation could not run. Every variant is a problem with the input
/// or the settings (never a panic); [`SimError::hint`] says what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// A setting is out of range.
    #[error("invalid setting `{name}`: {reason}")]
    InvalidConfig {
        /// The setting's name as in [`SimConfig`] (and the CLI flag).
        name: &'static str,
        reason: String,
    },
    /// The job description is inconsistent.
    #[error("invalid job: {0}")]
    InvalidJob(String),
    /// Interleaved 1F1B (Megatron ordering) needs m to be a multiple of p.
    #[error(
        "the interleaved schedule needs the micro-batch count ({micro_batches}) to be a multiple of the stage count ({stages})"
    )]
    InterleavedMicroBatches { micro_batches: u32, stages: u32 },
    /// The schedule cannot run with these sizes ([`ScheduleKind::check`]).
    #[error("the {schedule} schedule needs {needs}")]
    ScheduleNeeds {
        schedule: &'static str,
        /// The condition and the run's numbers.
        needs: String,
    },
    /// The block has fewer transformer layers than the requested number of
    /// virtual stages ([`chunks`]).
    #[error("cannot split a block of {layers} layers into {virtual_stages} virtual stages")]
    TooFewLayers { layers: usize, virtual_stages: u32 },
    /// A stage's transformer layers do not split evenly into its model
    /// chunks (Megatron gives every chunk layers / (pp x virtual stages)
    /// whole layers; [`chunks`]).
    #[error(
        "stage {stage} has {layers} transformer layers, which do not split evenly into {virtual_stages} virtual stages: Megatron gives each chunk layers / (pp x virtual stages) = {} / ({stages} x {virtual_stages}) whole layers",
        u64::from(*stages) * *layers as u64
    )]
    LayersNotDivisible {
        stage: u32,
        layers: usize,
        stages: u32,
        virtual_stages: u32,
    },
    /// The collective cost function refused a collective.
    #[error("cost model `{model}`: {message}")]
    Cost { model: String, message: String },
    /// The requested cost model is not available from this entry point
    /// ([`NetworkModel::new`] with `Algorithm::Simai`: the SimAI-compatible
    /// function is [`simai_cost::SimaiCost`]).
    #[error("the `{0}` collective algorithm needs an external cost function")]
    CostModelUnavailable(&'static str),
    /// The job would need more simulated work than the limits allow.
    #[error("the job is too large to simulate: {0}")]
    TooLarge(String),
    /// An explicit per-rank step order cannot be executed (a step waits for
    /// one that can never come), or collectives never met.
    #[error("the simulation stalled: {0}")]
    Stalled(String),
}

impl SimError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            SimError::InterleavedMicroBatches { .. } => {
                "set the micro-batch count to a multiple of the stage count, or use the 1f1b schedule"
            }
            SimError::ScheduleNeeds { .. } => {
                "use more micro-batches (the micro-batch setting), or the 1f1b schedule"
            }
            SimError::TooFewLayers { .. } => "use fewer virtual stages",
            SimError::LayersNotDivisible { .. } => {
                "use a virtual-stage count that divides the layers per stage (a layer starts at each `attention*` row; without such rows every row is a layer)"
            }
            SimError::CostModelUnavailable(_) => {
                "use `engine::simulate`, or `SimaiCost` with `simulate_with`, for the SimAI-compatible cost function"
            }
            SimError::TooLarge(_) => "reduce the micro-batch count or the number of simulated ranks",
            _ => return None,
        })
    }

    /// As a diagnostic (error severity, with the hint), for the CLI and the
    /// web page.
    pub fn to_diagnostic(&self) -> crate::Diagnostic {
        let d = crate::Diagnostic::error(format!("cannot simulate: {self}"));
        match self.hint() {
            Some(h) => d.with_hint(h),
            None => d,
        }
    }
}

/// Everything a simulation produces (serialisable: the timeline with its
/// spans, the summary, the counters).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SimResult {
    /// Spans per (rank or stage, stream), flows and dependencies.
    pub timeline: Timeline,
    /// Iteration time and its decomposition.
    pub summary: Summary,
    /// Activation memory over time per simulated rank, in program order
    /// (its peaks are in the summary's stages).
    pub activations: Vec<summary::ActivationSeries>,
    /// Engine counters.
    pub stats: event::EngineStats,
}

/// Simulate one iteration of `job` with the cost function `config.algorithm`
/// names: the built-in network model ([`NetworkModel`], ring or tree) or the
/// SimAI-compatible function ([`simai_cost::SimaiCost`] with SimAI's
/// built-in bandwidth-efficiency tables; use [`simulate_with`] for others).
pub fn simulate(job: &JobSpec, config: &SimConfig) -> Result<SimResult, SimError> {
    let cost = simai_cost::cost_for(job.parallel, config, None)?;
    let mut result = simulate_with(job, config, cost.as_ref())?;
    if config.algorithm == Algorithm::Simai {
        result
            .summary
            .notes
            .push(simai_cost::SIMAI_P2P_NOTE.to_string());
    }
    Ok(result)
}

/// A fitted compute scale ([`calibrate_compute_scale`]).
#[derive(Debug, Clone)]
pub struct Calibration {
    /// The factor every compute duration was multiplied by.
    pub compute_scale: f64,
    /// The run with that factor.
    pub result: SimResult,
    /// Simulations run to find it.
    pub simulations: u32,
}

/// Smallest and largest compute scale [`calibrate_compute_scale`] tries.
pub const CALIBRATION_RANGE: (f64, f64) = (1e-3, 1e3);

/// Find the compute scale (`config.compute_scale` is ignored) for which the
/// simulated iteration time meets `target_ns`, by bisection on a log scale
/// within [`CALIBRATION_RANGE`] (at most 60 simulations; it stops within
/// 0.01 % of the target). The iteration time grows with the scale, so the
/// fit is unique up to that tolerance; when the target lies outside what the
/// range can reach, the nearest end is returned (check
/// `result.summary.iteration_time_ns`).
pub fn calibrate_compute_scale(
    job: &JobSpec,
    config: &SimConfig,
    cost: &dyn CollectiveCost,
    target_ns: u64,
) -> Result<Calibration, SimError> {
    let run = |scale: f64| -> Result<SimResult, SimError> {
        let c = SimConfig {
            compute_scale: scale,
            ..config.clone()
        };
        simulate_with(job, &c, cost)
    };
    let close = |t: u64| t.abs_diff(target_ns) <= (target_ns / 10_000).max(1);
    let (mut lo, mut hi) = (CALIBRATION_RANGE.0.ln(), CALIBRATION_RANGE.1.ln());
    let mut sims = 0u32;
    let mut best: Option<(u64, f64, SimResult)> = None;
    let keep = |scale: f64, r: SimResult, best: &mut Option<(u64, f64, SimResult)>| {
        let miss = r.summary.iteration_time_ns.abs_diff(target_ns);
        if best.as_ref().is_none_or(|(m, _, _)| miss < *m) {
            *best = Some((miss, scale, r));
        }
    };
    // Start at 1 (no change), then bisect.
    let first = run(1.0)?;
    sims += 1;
    if first.summary.iteration_time_ns < target_ns {
        lo = 0.0;
    } else {
        hi = 0.0;
    }
    let done = close(first.summary.iteration_time_ns);
    keep(1.0, first, &mut best);
    if !done {
        while sims < 60 {
            let mid = (lo + hi) / 2.0;
            let scale = mid.exp();
            let r = run(scale)?;
            sims += 1;
            let t = r.summary.iteration_time_ns;
            keep(scale, r, &mut best);
            if close(t) || hi - lo < 1e-9 {
                break;
            }
            if t < target_ns {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    let (_, compute_scale, result) =
        best.ok_or_else(|| SimError::InvalidJob("nothing to calibrate".into()))?;
    Ok(Calibration {
        compute_scale,
        result,
        simulations: sims,
    })
}

/// Simulate one iteration of `job`, costing every collective and transfer
/// with `cost` (for example the SimAI-compatible function).
pub fn simulate_with(
    job: &JobSpec,
    config: &SimConfig,
    cost: &dyn CollectiveCost,
) -> Result<SimResult, SimError> {
    let build::Model { graph, meta } = build::build(job, config, cost)?;
    let mut engine = event::Engine::new(graph)?;
    engine.run().map_err(|e| meta.explain_stall(e, &engine))?;
    let stats = engine.stats();
    let (timeline, summary, activations) = build::finish_all(&meta, &engine, config)?;
    Ok(SimResult {
        timeline,
        summary,
        activations,
        stats,
    })
}
