//! The seeded Monte-Carlo of a whole run: the same process as the renewal
//! model in [`super::formulas`], drawn event by event, so its mean meets
//! the closed form and its spread says how lucky a run can be.
//!
//! One run: the work is cut into checkpoint segments; failures arrive as a
//! Poisson process on the clock of the segments (work plus blocking
//! checkpoints), so the time to the next failure is exponential and the
//! segments completed before it are counted in one step (the run costs
//! work in proportion to its failures, not to its checkpoints). A failure
//! loses its segment so far, costs detection, restart, restore and, when
//! no warm spare is free, the re-queue; the failed node goes to repair and
//! comes back as a spare. Planned interruptions then arrive as a Poisson
//! process over that wall time, each costing a restart and a restore (the
//! job drains at a checkpoint first, so it loses no work).
//!
//! The generator is the core's seeded SplitMix64 ([`crate::rng`]), so a
//! seed gives the same runs on every build.

use super::Badput;
use crate::rng::SplitMix64;

/// The settings one simulated run needs, in seconds and per second.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Process {
    /// Work between checkpoints of a full segment.
    pub interval_s: f64,
    /// Full segments.
    pub full_segments: u64,
    /// Work of the last, shorter segment (0: none).
    pub remainder_s: f64,
    /// Blocking part of a checkpoint.
    pub blocking_s: f64,
    /// Async checkpoints: the background write's tail, lost again per
    /// failure (see the module doc of [`super`]).
    pub lag_s: f64,
    /// Unexpected failures per second of segment time.
    pub lambda_per_s: f64,
    /// Detection + restart (re-initialisation) per failure.
    pub recovery_s: f64,
    /// Reading the checkpoint back after a failure or planned stop.
    pub restore_s: f64,
    /// Waiting for a replacement node when no warm spare is free.
    pub requeue_s: f64,
    pub spares: u32,
    pub repair_s: f64,
    /// Planned interruptions per second of wall time.
    pub planned_per_s: f64,
    /// Restart (re-initialisation) of a planned stop, before the restore.
    pub planned_restart_s: f64,
}

/// One simulated run.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RunSample {
    pub wall_s: f64,
    pub failures: u64,
    pub planned: u64,
    pub badput: Badput,
}

/// One drawn run's course, for a picture of it: where the work stood
/// (seconds of work done, up to the last durable checkpoint after a
/// failure) at each moment of wall time the course turns, and when each
/// failure struck. The planned stops are drawn over the whole run's wall
/// time (they do not move the work), so they lengthen its last stretch.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct RunTrace {
    /// `(wall_s, work_s)`: the start, each failure (the work just before
    /// it, then the same moment at the work of the last checkpoint), the
    /// restart after each failure, the end.
    pub points: Vec<(f64, f64)>,
    /// Wall time of each failure, seconds.
    pub failures_s: Vec<f64>,
    /// Planned stops drawn in the run.
    pub planned: u64,
}

/// Simulate one run to completion (with `trace`, record its course).
pub(crate) fn simulate_run(
    p: &Process,
    rng: &mut SplitMix64,
    mut trace: Option<&mut RunTrace>,
) -> RunSample {
    let mut out = RunSample::default();
    let mut wall = 0.0;
    // Work up to the last completed checkpoint, seconds.
    let mut durable = 0.0;
    if let Some(t) = trace.as_deref_mut() {
        t.points.push((0.0, 0.0));
    }
    // Return times of the nodes in repair (only tracked with spares).
    let mut in_repair: Vec<f64> = Vec::new();
    let kinds = [
        (p.interval_s, p.full_segments),
        (p.remainder_s, u64::from(p.remainder_s > 0.0)),
    ];
    for (work_s, count) in kinds {
        let length = work_s + p.blocking_s;
        let mut left = count;
        while left > 0 {
            let to_failure = rng.exponential() / p.lambda_per_s;
            let done = to_failure / length;
            if done >= left as f64 {
                wall += left as f64 * length;
                durable += left as f64 * work_s;
                out.badput.checkpoint_save_s += left as f64 * p.blocking_s;
                break;
            }
            let done = done.floor() as u64;
            left -= done;
            let lost = to_failure - done as f64 * length;
            wall += done as f64 * length + lost;
            durable += done as f64 * work_s;
            out.badput.checkpoint_save_s += done as f64 * p.blocking_s;
            out.failures += 1;
            let mut requeue = p.requeue_s;
            if p.spares > 0 {
                in_repair.retain(|&back| back > wall);
                if in_repair.len() < p.spares as usize {
                    requeue = 0.0;
                }
                in_repair.push(wall + p.repair_s);
            }
            out.badput.wasted_progress_s += lost + p.lag_s;
            out.badput.checkpoint_restore_s += p.restore_s;
            out.badput.infrastructure_recovery_s += p.recovery_s + requeue;
            if let Some(t) = trace.as_deref_mut() {
                t.points.push((wall, durable + lost.min(work_s)));
                t.points.push((wall, durable));
                t.failures_s.push(wall);
            }
            wall += p.lag_s + p.restore_s + p.recovery_s + requeue;
            if let Some(t) = trace.as_deref_mut() {
                t.points.push((wall, durable));
            }
        }
    }
    // Planned interruptions over the run's wall time.
    if p.planned_per_s > 0.0 {
        let mut t = rng.exponential() / p.planned_per_s;
        while t < wall {
            out.planned += 1;
            t += rng.exponential() / p.planned_per_s;
        }
    }
    let planned_cost = out.planned as f64 * (p.planned_restart_s + p.restore_s);
    out.badput.planned_maintenance_s = planned_cost;
    out.wall_s = wall + planned_cost;
    if let Some(t) = trace {
        t.points.push((out.wall_s, durable));
        t.planned = out.planned;
    }
    out
}

/// The value below which `q` of the sorted samples lie (linear
/// interpolation between the two nearest ranks).
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}
