//! The closed-form models of a run interrupted by failures: the job's
//! failure rate from a per-node rate, Young's and Daly's optimum checkpoint
//! intervals, the renewal model of one checkpoint segment (expected wall
//! time, failures and time lost), and the chance that no warm spare is free.
//! Plain functions of seconds and rates, so the tests can check each one
//! against hand-computed values.
//!
//! Notation: `lambda_per_s` is the job's failure rate (1 / MTTF), `d` the
//! blocking checkpoint time, `m` the MTTF, `r` the fixed cost of one
//! failure (detection, restart, restore, re-queue), `x` the work between
//! two checkpoints, all in seconds.

/// Seconds in a day.
pub const DAY_S: f64 = 86_400.0;

/// The job's failure rate, per second, from a rate per 1000 node-days:
/// every node fails independently at the same rate, so the job (which
/// stops when any of its nodes fails) fails at `nodes` times that rate.
pub fn job_rate_per_s(per_1000_node_days: f64, nodes: u32) -> f64 {
    per_1000_node_days / 1000.0 * f64::from(nodes) / DAY_S
}

/// Young's first-order optimum interval (Young 1974): `sqrt(2 d M)`.
pub fn young_interval_s(checkpoint_s: f64, mttf_s: f64) -> f64 {
    (2.0 * checkpoint_s * mttf_s).sqrt()
}

/// Daly's higher-order optimum interval (Daly 2006, "A higher order
/// estimate of the optimum checkpoint interval for restart dumps", FGCS
/// 22(3), eq. 37): for `d < 2M`,
/// `sqrt(2 d M) [1 + sqrt(d / 2M) / 3 + (d / 2M) / 9] - d`; otherwise `M`.
/// The restart time does not enter the optimum.
pub fn daly_interval_s(checkpoint_s: f64, mttf_s: f64) -> f64 {
    if checkpoint_s >= 2.0 * mttf_s {
        return mttf_s;
    }
    let ratio = checkpoint_s / (2.0 * mttf_s);
    young_interval_s(checkpoint_s, mttf_s) * (1.0 + ratio.sqrt() / 3.0 + ratio / 9.0) - checkpoint_s
}

/// One checkpoint segment in the renewal model: `x` seconds of work then a
/// blocking checkpoint of `d`; a failure anywhere in those `x + d` seconds
/// loses the whole segment so far, costs `r` and the segment starts again
/// (failures during the recovery itself are not drawn).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Expected wall time until the segment is done, seconds:
    /// `(exp(lambda (x + d)) - 1) (1 / lambda + r)`.
    pub wall_s: f64,
    /// Expected failures before it is done: `exp(lambda (x + d)) - 1`.
    pub failures: f64,
    /// Expected seconds of the segment run and then lost to failures (work
    /// and partial checkpoint): `failures / lambda - (x + d)`.
    pub lost_s: f64,
}

/// The renewal model of one segment (see [`Segment`]).
pub fn segment(work_s: f64, checkpoint_s: f64, failure_cost_s: f64, lambda_per_s: f64) -> Segment {
    let length = work_s + checkpoint_s;
    // exp_m1 keeps the precision when lambda x length is tiny.
    let failures = (lambda_per_s * length).exp_m1();
    Segment {
        wall_s: failures * (1.0 / lambda_per_s + failure_cost_s),
        failures,
        lost_s: (failures / lambda_per_s - length).max(0.0),
    }
}

/// Effective training time ratio of a long run in the renewal model:
/// `x / [(exp(lambda (x + d)) - 1) (1 / lambda + r)]`.
pub fn renewal_ettr(
    interval_s: f64,
    checkpoint_s: f64,
    failure_cost_s: f64,
    lambda_per_s: f64,
) -> f64 {
    interval_s / segment(interval_s, checkpoint_s, failure_cost_s, lambda_per_s).wall_s
}

/// The chance that a failure finds no warm spare: failed nodes go to
/// repair for `repair_s` and come back as spares; while being repaired
/// they are a Poisson number with mean `lambda repair_s` (an M/G/infinity
/// queue), so no spare is free when that number is `spares` or more.
pub fn no_spare_probability(spares: u32, lambda_per_s: f64, repair_s: f64) -> f64 {
    if spares == 0 {
        return 1.0;
    }
    let mean = lambda_per_s * repair_s;
    let mut term = (-mean).exp();
    let mut below = 0.0;
    for k in 0..spares {
        below += term;
        term *= mean / f64::from(k + 1);
    }
    (1.0 - below).clamp(0.0, 1.0)
}
