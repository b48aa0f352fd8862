//! GPipe (Huang et al., "GPipe: Efficient Training of Giant Neural Networks
//! using Pipeline Parallelism", NeurIPS 2019): every stage runs all m
//! forwards, then all m backwards, micro-batch 0 first.
//!
//! Makespan on p identical stages with no communication: (m + p - 1)(F + B),
//! with F and B one micro-batch's forward and backward on one stage. Every
//! stage holds all m micro-batches' activations at its peak.

use crate::engine::schedule::PipeStep;

/// The order of every stage.
pub fn order(m: u32) -> Vec<PipeStep> {
    let mut out = Vec::with_capacity(2 * m as usize);
    out.extend((0..m).map(|j| PipeStep::f(j, 0)));
    out.extend((0..m).map(|j| PipeStep::b(j, 0)));
    out
}

#[cfg(test)]
mod tests {
    use crate::engine::schedule::fmt;

    #[test]
    fn all_forwards_then_all_backwards() {
        assert_eq!(fmt(&super::order(3)), "F0.0 F1.0 F2.0 B0.0 B1.0 B2.0");
    }
}
