//! ZB-H1, the memory-efficient handcrafted schedule of Zero Bubble Pipeline
//! Parallelism (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism",
//! ICLR 2024, section 2.1 and figure 3 top; public implementation in the
//! sail-sg/zero-bubble-pipeline-parallelism repository).
//!
//! The backward is split into B (gradient of the input, what the previous
//! stage waits for) and W (gradient of the weights, needed only by the
//! optimizer), so B passes travel up the pipeline without waiting for W.
//! Ordering rules on stage s of p (0-based), m micro-batches:
//! - 1F1B's F/B order: a warm-up of p - s - 1 forwards, then one forward and
//!   one backward in turn, then the remaining backwards;
//! - the W passes are delayed by s: after each B, the stage runs the oldest
//!   pending W once more than s are pending; the last s run at the end,
//!   where they fill the bubbles of the pipeline's drain.
//!
//! So stage 0 runs W right after each B, the last stage holds p - 1 W passes
//! back, and every stage has p micro-batches in flight (first forward begun,
//! W not yet run): the paper's "same number of in-flight micro-batches" on
//! every worker, 1F1B's peak (that of its first stage). This is the order the
//! repository's heuristic scheduler (`zb.py`) produces for a memory limit of
//! p micro-batches with T_F = T_B = T_W (checked for p = 4, m = 8).
//!
//! Makespan on p identical stages with no communication, F, B, W one
//! micro-batch's passes on one stage: m(F + B + W) + (p - 1)(F + B - W)
//! whenever W <= F and W <= B (the paper assumes T_F = T_B = T_W: a third of
//! 1F1B's bubble (p - 1)(F + B + W)); with a larger W the delayed W passes
//! no longer fit the drain's bubbles.
//!
//! Fewer micro-batches than stages (m < p) degenerate gracefully rather
//! than being refused: the warm-up is capped at m forwards (1F1B's own
//! rule), and a stage s >= m - 1 never has more than s W passes pending, so
//! it runs its forwards and backwards as 1F1B does and all its W passes
//! after its last B, where the drain leaves it idle; stages above keep the
//! delay by s. The batch then takes no longer than 1F1B's
//! (m + p - 1)(F + B + W): the W passes of the later stages are off the
//! path of the B passes travelling up.

use crate::engine::schedule::PipeStep;

/// The order of `stage` of `p` with `m` micro-batches (any m >= 1).
pub fn order(p: u32, m: u32, stage: u32) -> Vec<PipeStep> {
    with_delayed_w(m, p - stage - 1, stage)
}

/// 1F1B's forward/backward order with a warm-up of `warm` forwards (capped
/// at m) and every W pass delayed until more than `lag` are pending (the
/// rest at the end). Shared with ZB-H2.
pub(super) fn with_delayed_w(m: u32, warm: u32, lag: u32) -> Vec<PipeStep> {
    let warm = warm.min(m);
    let mut out = Vec::with_capacity(3 * m as usize);
    out.extend((0..warm).map(|j| PipeStep::f(j, 0)));
    let mut next_w = 0u32;
    let mut after_b = |out: &mut Vec<PipeStep>, b_done: u32| {
        if b_done - next_w > lag {
            out.push(PipeStep::w(next_w, 0));
            next_w += 1;
        }
    };
    for j in 0..(m - warm) {
        out.push(PipeStep::f(warm + j, 0));
        out.push(PipeStep::b(j, 0));
        after_b(&mut out, j + 1);
    }
    for j in (m - warm)..m {
        out.push(PipeStep::b(j, 0));
        after_b(&mut out, j + 1);
    }
    out.extend((next_w..m).map(|j| PipeStep::w(j, 0)));
    out
}

#[cfg(test)]
mod tests {
    use super::order;
    use crate::engine::schedule::fmt;

    #[test]
    fn w_delayed_by_the_stage_index() {
        // p = 4, m = 8: the order of figure 3 (top) of the paper, and of the
        // repository's scheduler with a memory limit of p micro-batches.
        assert_eq!(
            fmt(&order(4, 8, 0)),
            "F0.0 F1.0 F2.0 F3.0 B0.0 W0.0 F4.0 B1.0 W1.0 F5.0 B2.0 W2.0 F6.0 B3.0 W3.0 \
             F7.0 B4.0 W4.0 B5.0 W5.0 B6.0 W6.0 B7.0 W7.0"
        );
        assert_eq!(
            fmt(&order(4, 8, 1)),
            "F0.0 F1.0 F2.0 B0.0 F3.0 B1.0 W0.0 F4.0 B2.0 W1.0 F5.0 B3.0 W2.0 F6.0 B4.0 W3.0 \
             F7.0 B5.0 W4.0 B6.0 W5.0 B7.0 W6.0 W7.0"
        );
        assert_eq!(
            fmt(&order(4, 8, 3)),
            "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0 F3.0 B3.0 W0.0 F4.0 B4.0 W1.0 F5.0 B5.0 W2.0 \
             F6.0 B6.0 W3.0 F7.0 B7.0 W4.0 W5.0 W6.0 W7.0"
        );
    }
}
