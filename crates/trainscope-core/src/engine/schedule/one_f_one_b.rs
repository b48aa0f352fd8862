//! 1F1B, "one forward, one backward" (PipeDream-Flush: Narayanan et al.,
//! "Memory-Efficient Pipeline-Parallel DNN Training", ICML 2021; Megatron-LM's
//! default non-interleaved schedule): stage s warms up with
//! min(p - s - 1, m) forwards, then alternates one forward and one backward,
//! then runs the remaining backwards.
//!
//! Makespan on p identical stages with no communication:
//! (m + p - 1)(F + B), as GPipe, but stage s holds at most min(p - s, m)
//! micro-batches' activations instead of m.

use crate::engine::schedule::PipeStep;

/// The order of `stage` of `p` with `m` micro-batches.
pub fn order(p: u32, m: u32, stage: u32) -> Vec<PipeStep> {
    let mut out = Vec::with_capacity(2 * m as usize);
    let warm = (p - stage - 1).min(m);
    out.extend((0..warm).map(|j| PipeStep::f(j, 0)));
    for i in 0..(m - warm) {
        out.push(PipeStep::f(warm + i, 0));
        out.push(PipeStep::b(i, 0));
    }
    out.extend((m - warm..m).map(|j| PipeStep::b(j, 0)));
    out
}

#[cfg(test)]
mod tests {
    use super::order;
    use crate::engine::schedule::fmt;

    #[test]
    fn warm_up_then_alternate() {
        assert_eq!(
            fmt(&order(4, 6, 0)),
            "F0.0 F1.0 F2.0 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 B3.0 B4.0 B5.0"
        );
        assert!(fmt(&order(4, 6, 3)).starts_with("F0.0 B0.0 F1.0 B1.0"));
        // m smaller than the warm-up
        assert_eq!(fmt(&order(4, 2, 0)), "F0.0 F1.0 B0.0 B1.0");
    }
}
