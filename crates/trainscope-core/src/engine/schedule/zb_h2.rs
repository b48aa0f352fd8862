//! ZB-H2, the zero-bubble handcrafted schedule of Zero Bubble Pipeline
//! Parallelism (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism",
//! ICLR 2024, section 2.2 and figure 3 bottom): more memory than 1F1B (up to
//! 2p - 1 micro-batches in flight on the first stage) for no bubble once
//! the pipeline is full.
//!
//! The paper fills the bubble before the first B with extra forwards and
//! moves W passes to the tail, which turns the per-stage busy time into a
//! parallelogram. Ordering rules here, on stage s of p (0-based), m >= 2p - 1
//! micro-batches:
//! - a warm-up of 2(p - s) - 2 forwards (so the first B comes after
//!   2(p - s) - 1 forwards: exactly as many as fit before the first
//!   gradient arrives when T_F = T_B), then one forward and one backward in
//!   turn, then the remaining backwards;
//! - W passes delayed by s, as in ZB-H1 ([`crate::engine::schedule::zb_h1`]).
//!
//! Stage s holds at most 2p - 1 - s micro-batches in flight (first forward
//! begun, W not yet run): 2p - 1 on the first stage, as the paper states.
//!
//! Makespan on p identical stages with no communication: every stage is busy
//! from its first forward to its last W, so the iteration takes
//! m(F + B + W) + (p - 1)F (the last stage starts after p - 1 forwards and
//! never waits), whenever B <= W and B <= 2F; this includes the paper's
//! T_F = T_B = T_W. Outside those conditions the tail's W passes no longer
//! cover the gaps and the iteration is longer.

use crate::engine::schedule::PipeStep;

/// The order of `stage` of `p` with `m >= 2p - 1` micro-batches.
pub fn order(p: u32, m: u32, stage: u32) -> Vec<PipeStep> {
    crate::engine::schedule::zb_h1::with_delayed_w(m, 2 * (p - stage) - 2, stage)
}

#[cfg(test)]
mod tests {
    use super::order;
    use crate::engine::schedule::fmt;

    #[test]
    fn longer_warm_up_then_delayed_w() {
        // p = 4, m = 8: the first stage warms up with 2p - 1 = 7 forwards.
        assert_eq!(
            fmt(&order(4, 8, 0)),
            "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 B0.0 W0.0 F7.0 B1.0 W1.0 B2.0 W2.0 B3.0 W3.0 \
             B4.0 W4.0 B5.0 W5.0 B6.0 W6.0 B7.0 W7.0"
        );
        assert_eq!(
            fmt(&order(4, 8, 3)),
            "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0 F3.0 B3.0 W0.0 F4.0 B4.0 W1.0 F5.0 B5.0 W2.0 \
             F6.0 B6.0 W3.0 F7.0 B7.0 W4.0 W5.0 W6.0 W7.0"
        );
        assert_eq!(
            fmt(&order(4, 8, 2)),
            "F0.0 F1.0 F2.0 B0.0 F3.0 B1.0 F4.0 B2.0 W0.0 F5.0 B3.0 W1.0 F6.0 B4.0 W2.0 \
             F7.0 B5.0 W3.0 B6.0 W4.0 B7.0 W5.0 W6.0 W7.0"
        );
    }
}
