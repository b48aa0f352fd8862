//! ZB-V, the V-shaped zero-bubble schedule (Qi, Wan, Huang, Lin, "Zero Bubble
//! Pipeline Parallelism", arXiv 2401.10241, section "ZB-V"; the public
//! sail-sg/zero-bubble-pipeline-parallelism repository generates it with a
//! heuristic, `zbv.py`): every rank holds two model chunks in a V shape
//! (chunk 0 of stage s is virtual stage s, chunk 1 is virtual stage
//! 2p - 1 - s; [`crate::engine::schedule::ChunkPlacement::VShape`]), so the
//! first stage computes the loss and the last stage passes its chunk-0
//! output to its own chunk 1 without a transfer. The backward is split into
//! B and W as in ZB-H1.
//!
//! Ordering rules here (handcrafted after the repository's heuristic, which
//! they reproduce in the warm-up and the steady phase; the cool-down differs
//! but has no bubble either), on stage s of p (0-based), m >= 2p micro-batches
//! (F0/F1, B0/B1: forward and backward of chunk 0/1):
//! 1. 2(p - s) - 1 forwards of chunk 0;
//! 2. s + 1 forwards of chunk 1, each but the last followed by the next
//!    chunk-0 forward;
//! 3. p - 1 - s times: B1, its W, the next F1;
//! 4. until both chunks' forwards are done: B1 and its W, the next F0; B0
//!    and its W, the next F1 (a step with nothing left to run is skipped:
//!    a B1 needs an F1 not yet backwarded, a B0 a B1 of the same
//!    micro-batch, an F1 the F0 of its micro-batch);
//! 5. the remaining backwards, B1 and B0 in turn as available, each W
//!    delayed until more than s are pending (FIFO), then the remaining W.
//!
//! Every stage then holds at most 2p chunk activations (first forward of a
//! chunk begun, its W not yet run), i.e. p micro-batches: 1F1B's peak, as the
//! paper states.
//!
//! Makespan on p identical stages with no communication, f, b, w one
//! micro-batch's forward, input-gradient and weight-gradient time on one
//! chunk (half a stage): 2m(f + b + w) + (p - 1)f when f = b = w, the
//! paper's assumption (every stage busy from its first forward to its last
//! W); with unequal times the order still runs, with some bubble.

use crate::engine::schedule::PipeStep;

struct Counts {
    m: u32,
    f0: u32,
    f1: u32,
    b1: u32,
    b0: u32,
    pending: std::collections::VecDeque<(u32, u32)>,
    out: Vec<PipeStep>,
}

impl Counts {
    fn f0(&mut self) {
        if self.f0 < self.m {
            self.out.push(PipeStep::f(self.f0, 0));
            self.f0 += 1;
        }
    }

    fn f1(&mut self) {
        if self.f1 < self.m && self.f1 < self.f0 {
            self.out.push(PipeStep::f(self.f1, 1));
            self.f1 += 1;
        }
    }

    /// A backward of `chunk` if one is available; its W right after when
    /// `w_now`, else queued. True when one ran.
    fn b(&mut self, chunk: u32, w_now: bool) -> bool {
        let (done, limit) = if chunk == 1 {
            (self.b1, self.f1)
        } else {
            (self.b0, self.b1)
        };
        if done >= limit {
            return false;
        }
        self.out.push(PipeStep::b(done, chunk));
        self.pending.push_back((done, chunk));
        if chunk == 1 {
            self.b1 += 1;
        } else {
            self.b0 += 1;
        }
        if w_now {
            self.w();
        }
        true
    }

    fn w(&mut self) {
        if let Some((mb, chunk)) = self.pending.pop_front() {
            self.out.push(PipeStep::w(mb, chunk));
        }
    }
}

/// The order of `stage` of `p` with `m >= 2p` micro-batches.
pub fn order(p: u32, m: u32, stage: u32) -> Vec<PipeStep> {
    let s = stage;
    let mut c = Counts {
        m,
        f0: 0,
        f1: 0,
        b1: 0,
        b0: 0,
        pending: std::collections::VecDeque::new(),
        out: Vec::with_capacity(6 * m as usize),
    };
    for _ in 0..(2 * (p - s) - 1) {
        c.f0();
    }
    for i in 0..=s {
        c.f1();
        if i < s {
            c.f0();
        }
    }
    for _ in 0..(p - 1 - s) {
        c.b(1, true);
        c.f1();
    }
    while c.f0 < m || c.f1 < m {
        c.b(1, true);
        c.f0();
        c.b(0, true);
        c.f1();
    }
    while c.b0 < m {
        for chunk in [1, 0] {
            if c.b(chunk, false) {
                while c.pending.len() > s as usize {
                    c.w();
                }
            }
        }
    }
    while !c.pending.is_empty() {
        c.w();
    }
    c.out
}

#[cfg(test)]
mod tests {
    use super::order;
    use crate::engine::schedule::fmt;

    #[test]
    fn v_shaped_order() {
        // p = 3, m = 6.
        assert_eq!(
            fmt(&order(3, 6, 0)),
            "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 B0.1 W0.1 F1.1 B1.1 W1.1 F2.1 B2.1 W2.1 F5.0 B0.0 \
             W0.0 F3.1 B3.1 W3.1 B1.0 W1.0 F4.1 B4.1 W4.1 B2.0 W2.0 F5.1 B5.1 W5.1 B3.0 W3.0 \
             B4.0 W4.0 B5.0 W5.0"
        );
        assert_eq!(
            fmt(&order(3, 6, 1)),
            "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 B0.1 W0.1 F2.1 B1.1 W1.1 F4.0 B0.0 W0.0 F3.1 B2.1 \
             W2.1 F5.0 B1.0 W1.0 F4.1 B3.1 W3.1 B2.0 W2.0 F5.1 B4.1 B3.0 W4.1 B5.1 W3.0 B4.0 \
             W5.1 B5.0 W4.0 W5.0"
        );
        assert_eq!(
            fmt(&order(3, 6, 2)),
            "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 B0.1 W0.1 F3.0 B0.0 W0.0 F3.1 B1.1 W1.1 F4.0 B1.0 \
             W1.0 F4.1 B2.1 W2.1 F5.0 B2.0 W2.0 F5.1 B3.1 B3.0 B4.1 W3.1 B4.0 W3.0 B5.1 W4.1 \
             B5.0 W4.0 W5.1 W5.0"
        );
    }
}
