//! DualPipeV (DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv 2412.19437,
//! section 3.2.1, DualPipe; the V-shaped "cut-in-half" variant, credited to
//! Sea AI Lab, as implemented in the public deepseek-ai/DualPipe repository,
//! `dualpipe/dualpipev.py`): two chunks per rank in a V shape (chunk 0 of
//! stage s is virtual stage s, chunk 1 is virtual stage 2p - 1 - s;
//! [`crate::engine::schedule::ChunkPlacement::VShape`]), and in the steady
//! phase the forward of one chunk runs overlapped with the backward of the
//! other (F&B), so one's communication hides behind the other's compute.
//!
//! Ordering rules on rank r of p (0-based), m >= 2p micro-batches (F0/F1,
//! B0/B1: forward and backward of chunk 0/1; a backward is full, input and
//! weight gradients, unless marked "zb", whose W goes to a FIFO queue that
//! a W step pops):
//! 1. 2(p - r - 1) × F0;
//! 2. r + 1 × (F0, F1);
//! 3. p - r - 1 × (B1 zb, W, F1);
//! 4. m - 2p + r + 1 × (F0 & B1, F1 & B0), `&` = overlapped pair; on the last
//!    rank the first F0 and B1 run one after the other;
//! 5. p - r - 1 × (B1, F1 & B0);
//! 6. r + 1 × (B1, B0), the second half of them zb (from the middle on; on
//!    odd ranks the middle B1 included);
//! 7. p - r - 1 × (W, B0 zb);
//! 8. r + 1 × W.
//!
//! An overlapped pair ([`crate::engine::schedule::StagePlan::overlapped`])
//! starts when both inputs are there, runs as two chains on the rank's
//! streams (the compute stream serves them first-come-first-served, so with
//! no communication the pair takes F + B) and hands both outputs on when
//! both are done, as DualPipe sends after the overlapped computation.
//!
//! Makespan on p identical ranks with no communication, f, b, w one
//! micro-batch's forward, input-gradient and weight-gradient time on one
//! chunk: 2m(f + b + w) + (p - 1)(f + 2b - w) when f = b and w <= f. This is
//! the repository's bubble (PP/2 - 1)(F&B + B - 3W) with PP = 2p stages,
//! F&B = f + b + w (no overlap to gain without communication), B = b + w
//! and W = w. Every rank holds at most 2p + 1 chunk activations (the
//! repository's PP + 1).

use crate::engine::schedule::PipeStep;
use std::collections::VecDeque;

struct Plan {
    steps: Vec<PipeStep>,
    overlapped: Vec<bool>,
    forwards: [u32; 2],
    backwards: [u32; 2],
    queue: VecDeque<(u32, u32)>,
}

impl Plan {
    fn push(&mut self, step: PipeStep) {
        self.steps.push(step);
        self.overlapped.push(false);
    }

    fn f(&mut self, chunk: u32) {
        let mb = self.forwards[chunk as usize];
        self.forwards[chunk as usize] += 1;
        self.push(PipeStep::f(mb, chunk));
    }

    fn b(&mut self, chunk: u32, zb: bool) {
        let mb = self.backwards[chunk as usize];
        self.backwards[chunk as usize] += 1;
        self.push(PipeStep::b(mb, chunk));
        if zb {
            self.queue.push_back((mb, chunk));
        }
    }

    fn w(&mut self) {
        if let Some((mb, chunk)) = self.queue.pop_front() {
            self.push(PipeStep::w(mb, chunk));
        }
    }

    /// F of `f_chunk` overlapped with the (full) B of `b_chunk`.
    fn pair(&mut self, f_chunk: u32, b_chunk: u32) {
        let at = self.steps.len();
        self.f(f_chunk);
        self.b(b_chunk, false);
        self.overlapped[at] = true;
    }
}

/// The order of rank `rank` of `p` with `m >= 2p` micro-batches, and which
/// steps run overlapped with the next.
pub fn plan(p: u32, m: u32, rank: u32) -> (Vec<PipeStep>, Vec<bool>) {
    let r = rank;
    let mut x = Plan {
        steps: Vec::with_capacity(6 * m as usize),
        overlapped: Vec::with_capacity(6 * m as usize),
        forwards: [0, 0],
        backwards: [0, 0],
        queue: VecDeque::new(),
    };
    for _ in 0..(p - r - 1) * 2 {
        x.f(0);
    }
    for _ in 0..=r {
        x.f(0);
        x.f(1);
    }
    for _ in 0..(p - r - 1) {
        x.b(1, true);
        x.w();
        x.f(1);
    }
    for i in 0..(m - 2 * p + r + 1) {
        if i == 0 && r == p - 1 {
            x.f(0);
            x.b(1, false);
        } else {
            x.pair(0, 1);
        }
        x.pair(1, 0);
    }
    for _ in 0..(p - r - 1) {
        x.b(1, false);
        x.pair(1, 0);
    }
    let (mut zb, middle, odd) = (false, r.div_ceil(2), !r.is_multiple_of(2));
    for i in 0..=r {
        if i == middle && odd {
            zb = true;
        }
        x.b(1, zb);
        if i == middle && !odd {
            zb = true;
        }
        x.b(0, zb);
    }
    for _ in 0..(p - r - 1) {
        x.w();
        x.b(0, true);
    }
    for _ in 0..=r {
        x.w();
    }
    (x.steps, x.overlapped)
}

#[cfg(test)]
mod tests {
    use super::plan;
    use crate::engine::schedule::fmt;

    /// Steps, with `&` joining an overlapped pair.
    fn show(p: u32, m: u32, r: u32) -> String {
        let (steps, overlapped) = plan(p, m, r);
        let words: Vec<String> = fmt(&steps).split(' ').map(String::from).collect();
        let mut out = String::new();
        for (i, w) in words.iter().enumerate() {
            if i > 0 {
                out.push(if overlapped[i - 1] { '&' } else { ' ' });
            }
            out.push_str(w);
        }
        out
    }

    #[test]
    fn dualpipev_order() {
        // p = 2, m = 4.
        assert_eq!(
            show(2, 4, 0),
            "F0.0 F1.0 F2.0 F0.1 B0.1 W0.1 F1.1 F3.0&B1.1 F2.1&B0.0 B2.1 F3.1&B1.0 B3.1 B2.0 \
             W2.0 B3.0 W3.0"
        );
        assert_eq!(
            show(2, 4, 1),
            "F0.0 F0.1 F1.0 F1.1 F2.0 B0.1 F2.1&B0.0 F3.0&B1.1 F3.1&B1.0 B2.1 B2.0 B3.1 B3.0 \
             W3.1 W3.0"
        );
        for p in 1..5 {
            for m in [2 * p, 2 * p + 3] {
                for r in 0..p {
                    let (steps, overlapped) = plan(p, m, r);
                    assert_eq!(steps.len(), overlapped.len());
                    // Every zb backward's W is listed, after it.
                    let ws = steps
                        .iter()
                        .filter(|s| s.direction == crate::engine::schedule::Direction::Weight)
                        .count();
                    assert_eq!(steps.len(), 4 * m as usize + ws);
                }
            }
        }
    }
}
