//! The curves the page draws beside a plan, each a list of points computed
//! by the planner itself (nothing re-derived): ETTR against the checkpoint
//! interval (the renewal model at each interval, the optimum marked by the
//! caller from [`super::RunPlan::checkpoint_interval_s`] under `auto`), and
//! ETTR against the cluster size (the same job's iteration time and
//! checkpoint, the per-node failure rate of the plan, Daly's interval at
//! each size: a larger cluster fails more often and writes its checkpoint
//! with more nodes). Each point is a plan with one Monte-Carlo run, since
//! only its closed form is read; a point the planner refuses (an interval
//! shorter than the checkpoint write) is left out.

use super::{plan, FailureRate, Interval, RunPlan, RunPlanInput};
use serde::{Deserialize, Serialize};

/// One point of a curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The abscissa: the interval used (seconds, whole iterations) or the
    /// GPUs.
    pub x: f64,
    /// Effective training time ratio (renewal model).
    pub ettr: f64,
}

/// The closed form alone: `input` with one Monte-Carlo run.
fn closed(input: &RunPlanInput) -> Option<RunPlan> {
    let mut i = input.clone();
    i.runs = 1;
    plan(&i).ok()
}

/// ETTR at `points` intervals spaced evenly on a log scale from `factor`
/// times below to `factor` times above `base` (the plan's Daly optimum),
/// never below the checkpoint write `write_s`. Sorted by interval, one
/// point per distinct interval (intervals are whole iterations).
pub fn ettr_by_interval(
    input: &RunPlanInput,
    base: &RunPlan,
    points: usize,
    factor: f64,
) -> Vec<CurvePoint> {
    let centre = base.optimal_interval_s.max(base.checkpoint_seconds);
    let lo = (centre / factor).max(base.checkpoint_seconds);
    let hi = centre * factor;
    let mut out: Vec<CurvePoint> = Vec::with_capacity(points);
    let n = points.max(2);
    for k in 0..n {
        let s = lo * (hi / lo).powf(k as f64 / (n - 1) as f64);
        let mut i = input.clone();
        i.checkpoint_interval = Interval::Seconds(s);
        if let Some(p) = closed(&i) {
            if out.last().is_none_or(|l| l.x < p.checkpoint_interval_s) {
                out.push(CurvePoint {
                    x: p.checkpoint_interval_s,
                    ettr: p.ettr,
                });
            }
        }
    }
    out
}

/// ETTR of the same job on each of `gpus` GPU counts (in the order given;
/// nodes rounded up): the iteration time and checkpoint size held, the
/// per-node failure and planned rates of `base` (a job MTBF given for one
/// size becomes the per-node rate it implies), Daly's interval.
pub fn ettr_by_gpus(input: &RunPlanInput, base: &RunPlan, gpus: &[u32]) -> Vec<CurvePoint> {
    gpus.iter()
        .filter_map(|&g| {
            let mut i = input.clone();
            i.gpus = g.max(1);
            i.failure_rate = FailureRate::Per1000NodeDays(base.failure_rate_per_1000_node_days);
            i.planned_per_1000_node_days = Some(base.planned_per_1000_node_days);
            i.checkpoint_interval = Interval::Auto;
            i.job_memory_bytes = None;
            closed(&i).map(|p| CurvePoint {
                x: f64::from(i.gpus),
                ettr: p.ettr,
            })
        })
        .collect()
}

/// Cluster sizes around `gpus`: powers of two times it from 1/16 to 16,
/// none below one node of `gpus_per_node` (or `gpus` itself when it is
/// less than a node), without repeats; `gpus` is always one of them.
pub fn sizes_around(gpus: u32, gpus_per_node: u32) -> Vec<u32> {
    let floor = gpus.min(gpus_per_node).max(1);
    let mut out: Vec<u32> = Vec::new();
    for k in -4i32..=4 {
        let g = if k < 0 {
            gpus >> (-k) as u32
        } else {
            gpus.saturating_mul(1 << k)
        };
        let g = g.max(floor);
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}
