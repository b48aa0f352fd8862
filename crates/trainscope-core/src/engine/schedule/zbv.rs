//! ZB-V, the V-shaped zero-bubble schedule (Qi, Wan, Huang, Lin, "Zero Bubble
//! Pipeline Parallelism", arXiv 2401.10241, section "ZB-V"): every rank
//! holds two model chunks in a V shape (chunk 0 of stage s is virtual stage
//! s, chunk 1 is virtual stage 2p - 1 - s;
//! [`crate::engine::schedule::ChunkPlacement::VShape`]), so the first stage
//! computes the loss and the last stage passes its chunk-0 output to its own
//! chunk 1 without a transfer. The backward is split into B and W as in
//! ZB-H1.
//!
//! The order is the authors' (public repository
//! sail-sg/zero-bubble-pipeline-parallelism, commit 39f2c186,
//! `megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py`,
//! `PipelineGraph.try_v_schedule` and `create_schedule`; the algorithm
//! re-implemented here, not copied): a greedy placement that simulates every
//! stage's clock on the step costs it is given (one micro-batch's forward f,
//! input-gradient b and weight-gradient w time on one chunk, and the
//! stage-to-stage hop c):
//! 1. warm-up: chunk-0 forwards down the stages, then chunk-1 forwards back
//!    up, each stage filling with chunk-0 forwards while the chunk-1 input
//!    from the stage below is not there yet (and memory allows);
//! 2. then 2m rounds: per stage a backward (B of chunk 1 when the one from
//!    the stage below is there, else chunk 0; stages whose chunk-1 backward
//!    is ready go first, from the last), then a forward (chunk 1 when its
//!    input from below is there, else chunk 0 when its input from above
//!    is); before each, pending W's fill the wait for its input, and one W
//!    more runs when the wait would exceed the largest bubble allowed;
//! 3. the remaining W's;
//!
//! tried with and without the extra W before a forward and before a
//! backward (four variants, the one with the smallest largest per-stage
//! bubble kept), each variant re-run with the bubbles of its previous run
//! as the allowed ones while that lowers the largest bubble. Memory: a
//! forward holds one unit until its W frees it, at most 2p units per stage
//! (the repository's own fixed setting: `f_mem`, `b_mem` 0, `w_mem` =
//! -`f_mem`, limit `f_mem` x 2p, in `runtime.py`), so every stage holds at
//! most 2p chunk activations (p micro-batches): 1F1B's peak, as the paper
//! states. The costs come from the job ([`StepCosts`]: per stage the mean
//! chunk's times, then the median stage, as the repository's `avg_then_mid`
//! does; c = 0, the transfers being costed by the engine), unit costs when
//! none are given.
//!
//! Makespan on p identical stages with no communication: 2m(f + b + w) +
//! (p - 1)f when f = b = w (every stage busy from its first forward to its
//! last W); with unequal times the authors' order (e.g. p = 4, m = 8, f = 5,
//! b = 7, w = 3: 261, as their `zbv.py` gives) has some bubble. Should the
//! greedy placement fail a step's precondition (it never did over the
//! tests' ranges), the handcrafted order of [`fallback_order`] is used.

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

/// A handcrafted V order (warm-up and steady phase as the authors' with
/// equal costs; cool-down: B1 and B0 in turn, each W delayed until more
/// than s are pending), used only if the greedy placement fails.
pub fn fallback_order(p: u32, m: u32, stage: u32) -> Vec<PipeStep> {
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

/// The costs the greedy placement runs on, per chunk and micro-batch, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepCosts {
    pub forward_ns: u64,
    pub input_grad_ns: u64,
    pub weight_grad_ns: u64,
    /// A stage-to-stage hop.
    pub hop_ns: u64,
}

impl StepCosts {
    /// Equal unit costs (no job at hand).
    pub const UNIT: StepCosts = StepCosts {
        forward_ns: 1,
        input_grad_ns: 1,
        weight_grad_ns: 1,
        hop_ns: 0,
    };
}

/// A step's precondition failed (the greedy placement cannot go on).
struct Stuck;

/// Kinds of step in the placement: forward, input gradient, weight gradient.
const FWD: usize = 0;
const BWD: usize = 1;
const WGT: usize = 2;

/// One greedy pass (the repository's `try_v_schedule`). Chunks here are the
/// reference's: a backward's chunk 0 is the backward of forward chunk 1
/// (the first to run), converted at the end.
struct Greedy<'a> {
    p: usize,
    m: usize,
    cost: [i64; 3],
    hop: i64,
    mem_cost: [i64; 3],
    max_mem: i64,
    fill_f: bool,
    fill_b: bool,
    approved: &'a [i64],
    max_approved: i64,
    count: Vec<[usize; 6]>,
    /// End of each step, -1 before it is placed.
    end: Vec<i64>,
    cur: Vec<i64>,
    mem: Vec<i64>,
    bubble: Vec<i64>,
    pending_w: Vec<std::collections::VecDeque<usize>>,
    out: Vec<Vec<(usize, usize, usize)>>,
}

impl Greedy<'_> {
    fn id(&self, cat: usize, chunk: usize, stage: usize, micro: usize) -> Option<usize> {
        (micro < self.m).then(|| ((cat * 2 + chunk) * self.p + stage) * self.m + micro)
    }

    fn end_of(&self, id: Option<usize>) -> i64 {
        id.map_or(-1, |i| self.end[i])
    }

    fn max_bubble(&self, stage: Option<usize>) -> i64 {
        let b = self.bubble.iter().copied().fold(0, i64::max);
        match stage {
            Some(s) => b.max(self.max_approved - self.approved[s]),
            None => b,
        }
    }

    fn put(&mut self, cat: usize, chunk: usize, stage: usize) -> Result<(), Stuck> {
        let no_bubble = self.cur[stage] + self.cost[cat];
        let mut t = no_bubble;
        let cnt = self.count[stage][cat * 2 + chunk];
        if cnt >= self.m || self.mem[stage] + self.mem_cost[cat] > self.max_mem {
            return Err(Stuck);
        }
        if cat > 0 || chunk > 0 {
            let before = if cat < 2 {
                let last = cat * 2 + chunk - 1;
                self.id(last / 2, last % 2, stage, cnt)
            } else {
                self.id(BWD, chunk, stage, cnt)
            };
            if self.end_of(before) < 0 {
                return Err(Stuck);
            }
        }
        let from = match (cat < 2, chunk) {
            (true, 1) if stage + 1 < self.p => Some(self.id(cat, 1, stage + 1, cnt)),
            (true, 0) if stage > 0 => Some(self.id(cat, 0, stage - 1, cnt)),
            _ => None,
        };
        if let Some(from) = from {
            let e = self.end_of(from);
            if e < 0 {
                return Err(Stuck);
            }
            t = t.max(e + self.hop + self.cost[cat]);
        }
        if self.count[stage][0] > 0 {
            self.bubble[stage] += t - no_bubble;
        }
        let id = self.id(cat, chunk, stage, cnt).ok_or(Stuck)?;
        self.end[id] = t;
        self.cur[stage] = t;
        self.mem[stage] += self.mem_cost[cat];
        self.out[stage].push((cat, chunk, cnt));
        if cat == BWD {
            self.pending_w[stage].push_back(chunk);
        }
        self.count[stage][cat * 2 + chunk] += 1;
        Ok(())
    }

    fn put_w(&mut self, stage: usize) -> Result<(), Stuck> {
        let chunk = self.pending_w[stage].pop_front().ok_or(Stuck)?;
        self.put(WGT, chunk, stage)
    }

    /// Before a step whose input is `from`: W's fill the wait for it, and
    /// one more runs when the wait would pass the allowed bubble (`extra`).
    /// As the reference, a step without an input reads the last node's end
    /// (index -1 in Python) in the second test.
    fn fill(&mut self, i: usize, from: Option<usize>, extra: bool) -> Result<(), Stuck> {
        if let Some(f) = from {
            while !self.pending_w[i].is_empty()
                && self.end[f] + self.hop >= self.cur[i] + self.cost[WGT]
            {
                self.put_w(i)?;
            }
        }
        let e = match from {
            Some(f) => self.end[f],
            None => self.end[self.end.len() - 1],
        };
        if !self.pending_w[i].is_empty()
            && e + self.hop - self.cur[i] > self.max_bubble(Some(i)) - self.bubble[i]
            && extra
        {
            self.put_w(i)?;
        }
        Ok(())
    }

    fn run(&mut self) -> Result<(), Stuck> {
        let (p, m) = (self.p, self.m);
        for i in 0..p {
            self.put(FWD, 0, i)?;
        }
        for i in (0..p).rev() {
            if i == p - 1 {
                self.put(FWD, 1, i)?;
                continue;
            }
            let below = self.end_of(self.id(FWD, 1, i + 1, 0)) + self.hop;
            while self.mem[i] + self.mem_cost[FWD] * (2 + 2 * i as i64) <= self.max_mem
                && self.cur[i] + self.cost[FWD] <= below
                && self.count[i][0] < m
            {
                for j in 0..=i {
                    self.put(FWD, 0, j)?;
                }
            }
            self.put(FWD, 1, i)?;
        }
        let mut chunk = 0;
        for i in 1..p {
            let mut idle = 0;
            while self.count[i][0] + self.count[i][1] < self.count[i - 1][0] + self.count[i - 1][1]
                || (self.count[i][1] <= self.count[i - 1][1] && self.count[i - 1][1] < m)
            {
                let mut placed = false;
                for j in (i..p).rev() {
                    if self.count[j][chunk] < m {
                        self.put(FWD, chunk, j)?;
                        placed = true;
                    }
                }
                chunk = 1 - chunk;
                idle = if placed { 0 } else { idle + 1 };
                if idle > 2 {
                    return Err(Stuck);
                }
            }
        }
        for _ in 0..2 * m {
            for i in 0..p {
                while self.mem[i] + self.mem_cost[BWD] > self.max_mem {
                    self.put_w(i)?;
                }
            }
            let (mut b0, mut b1) = (Vec::new(), Vec::new());
            for i in 0..p {
                if self.count[i][3] >= self.count[i][2] {
                    b0.push(i);
                } else if i == p - 1
                    || self.end_of(self.id(BWD, 1, i + 1, self.count[i][3])) >= 0
                    || self.count[i][2] >= m
                {
                    b1.push(i);
                } else {
                    b0.push(i);
                }
            }
            let order: Vec<(usize, usize)> = b1
                .iter()
                .rev()
                .map(|i| (*i, 1))
                .chain(b0.iter().map(|i| (*i, 0)))
                .collect();
            for (i, c) in order {
                let from = match c {
                    1 if i + 1 < p => self.id(BWD, 1, i + 1, self.count[i][3]),
                    0 if i > 0 => self.id(BWD, 0, i - 1, self.count[i][2]),
                    _ => None,
                };
                let extra = c == 1 || self.fill_b;
                self.fill(i, from, extra)?;
                self.put(BWD, c, i)?;
            }
            for i in 0..p {
                if self.count[i][1] >= m {
                    continue;
                }
                let item = if self.count[i][1] >= self.count[i][0] {
                    Some(0)
                } else if i == p - 1 || self.end_of(self.id(FWD, 1, i + 1, self.count[i][1])) >= 0 {
                    Some(1)
                } else if self.count[i][0] < m
                    && (i == 0 || self.end_of(self.id(FWD, 0, i - 1, self.count[i][0])) >= 0)
                {
                    Some(0)
                } else {
                    None
                };
                let Some(item) = item else {
                    continue;
                };
                while self.mem[i] + self.mem_cost[FWD] > self.max_mem {
                    self.put_w(i)?;
                }
                let from = match item {
                    0 if i > 0 => self.id(FWD, 0, i - 1, self.count[i][0]),
                    1 if i + 1 < p => self.id(FWD, 1, i + 1, self.count[i][1]),
                    _ => None,
                };
                self.fill(i, from, self.fill_f)?;
                self.put(FWD, item, i)?;
            }
        }
        for i in 0..p {
            while !self.pending_w[i].is_empty() {
                self.put_w(i)?;
            }
        }
        Ok(())
    }
}

/// Placed steps per stage (reference chunks), per-stage bubbles, largest.
type Pass = (Vec<Vec<(usize, usize, usize)>>, Vec<i64>, i64);

fn one_pass(
    p: usize,
    m: usize,
    costs: &StepCosts,
    fill: (bool, bool),
    approved: &[i64],
) -> Result<Pass, Stuck> {
    let ns = |x: u64| i64::try_from(x).unwrap_or(i64::MAX / 4).min(i64::MAX / 4);
    let mut g = Greedy {
        p,
        m,
        cost: [
            ns(costs.forward_ns),
            ns(costs.input_grad_ns),
            ns(costs.weight_grad_ns),
        ],
        hop: ns(costs.hop_ns),
        mem_cost: [1, 0, -1],
        max_mem: 2 * p as i64,
        fill_f: fill.0,
        fill_b: fill.1,
        approved,
        max_approved: approved.iter().copied().max().unwrap_or(-1),
        count: vec![[0; 6]; p],
        end: vec![-1; 6 * p * m],
        cur: vec![0; p],
        mem: vec![0; p],
        bubble: vec![0; p],
        pending_w: vec![std::collections::VecDeque::new(); p],
        out: vec![Vec::with_capacity(6 * m); p],
    };
    g.run()?;
    let worst = g.max_bubble(None);
    Ok((g.out, g.bubble, worst))
}

/// Most re-runs of one variant with its bubbles as the allowed ones (the
/// reference recurses while the largest bubble drops; it stops within a
/// few runs).
const MAX_REFINE: usize = 64;

/// The authors' orders of every stage of `p` with `m >= 2p` micro-batches
/// on `costs` (see the module documentation), or `None` when the greedy
/// placement gets stuck.
pub fn greedy_orders(p: u32, m: u32, costs: &StepCosts) -> Option<Vec<Vec<PipeStep>>> {
    let (p, m) = (p as usize, m as usize);
    if p == 0 || m < 2 * p {
        return None;
    }
    let mut best: Option<Pass> = None;
    for fill_b in [true, false] {
        for fill_f in [true, false] {
            let mut cur = one_pass(p, m, costs, (fill_f, fill_b), &vec![-1; p]).ok()?;
            for _ in 0..MAX_REFINE {
                let next = one_pass(p, m, costs, (fill_f, fill_b), &cur.1).ok()?;
                if next.2 < cur.2 {
                    cur = next;
                } else {
                    break;
                }
            }
            if best.as_ref().is_none_or(|b| cur.2 < b.2) {
                best = Some(cur);
            }
        }
    }
    let (placed, _, _) = best?;
    Some(
        placed
            .into_iter()
            .map(|steps| {
                steps
                    .into_iter()
                    .map(|(cat, chunk, mb)| {
                        let mb = mb as u32;
                        match cat {
                            FWD => PipeStep::f(mb, chunk as u32),
                            BWD => PipeStep::b(mb, 1 - chunk as u32),
                            _ => PipeStep::w(mb, 1 - chunk as u32),
                        }
                    })
                    .collect()
            })
            .collect(),
    )
}

/// The order of `stage` of `p` with `m >= 2p` micro-batches on `costs`: the
/// authors' ([`greedy_orders`]), else [`fallback_order`].
pub fn order(p: u32, m: u32, stage: u32, costs: &StepCosts) -> Vec<PipeStep> {
    match greedy_orders(p, m, costs) {
        Some(mut all) if (stage as usize) < all.len() => all.swap_remove(stage as usize),
        _ => fallback_order(p, m, stage),
    }
}

#[cfg(test)]
mod tests {
    use super::{fallback_order, order, StepCosts};
    use crate::engine::schedule::fmt;

    /// p = 4, m = 8, equal costs: the orders the authors' `zbv.py`
    /// (`PipelineGraph(4, 8, 1, 1, 1, 0, 1, 0, -1).create_schedule`, commit
    /// 39f2c186) prints, in this module's chunk numbering.
    #[test]
    fn the_authors_order() {
        let want = [
            "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 F0.1 B0.1 W0.1 F1.1 B1.1 W1.1 F2.1 B2.1 W2.1 \
             F3.1 B3.1 W3.1 F7.0 B0.0 W0.0 F4.1 B4.1 W4.1 B1.0 W1.0 F5.1 B5.1 W5.1 B2.0 W2.0 \
             F6.1 B6.1 W6.1 B3.0 W3.0 F7.1 B7.1 B4.0 W7.1 B5.0 W4.0 B6.0 W5.0 B7.0 W6.0 W7.0",
            "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F5.0 F1.1 B0.1 W0.1 F2.1 B1.1 W1.1 F3.1 B2.1 W2.1 \
             F6.0 B0.0 W0.0 F4.1 B3.1 W3.1 F7.0 B1.0 W1.0 F5.1 B4.1 W4.1 B2.0 W2.0 F6.1 B5.1 \
             W5.1 B3.0 W3.0 F7.1 B6.1 B4.0 B7.1 B5.0 W6.1 B6.0 W4.0 B7.0 W7.1 W5.0 W6.0 W7.0",
            "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 F4.0 F2.1 B0.1 W0.1 F3.1 B1.1 W1.1 F5.0 B0.0 W0.0 \
             F4.1 B2.1 W2.1 F6.0 B1.0 W1.0 F5.1 B3.1 W3.1 F7.0 B2.0 W2.0 F6.1 B4.1 W4.1 B3.0 \
             W3.0 F7.1 B5.1 B4.0 B6.1 B5.0 B7.1 B6.0 W5.1 B7.0 W4.0 W6.1 W5.0 W7.1 W6.0 W7.0",
            "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 F3.0 F3.1 B0.1 W0.1 F4.0 B0.0 W0.0 F4.1 B1.1 W1.1 \
             F5.0 B1.0 W1.0 F5.1 B2.1 W2.1 F6.0 B2.0 W2.0 F6.1 B3.1 W3.1 F7.0 B3.0 W3.0 F7.1 \
             B4.1 B4.0 B5.1 B5.0 B6.1 B6.0 B7.1 B7.0 W4.1 W4.0 W5.1 W5.0 W6.1 W6.0 W7.1 W7.0",
        ];
        for (s, w) in want.iter().enumerate() {
            assert_eq!(
                fmt(&order(4, 8, s as u32, &StepCosts::UNIT)),
                *w,
                "stage {s}"
            );
        }
    }

    #[test]
    fn fallback_v_shaped_order() {
        // p = 3, m = 6.
        assert_eq!(
            fmt(&fallback_order(3, 6, 0)),
            "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 B0.1 W0.1 F1.1 B1.1 W1.1 F2.1 B2.1 W2.1 F5.0 B0.0 \
             W0.0 F3.1 B3.1 W3.1 B1.0 W1.0 F4.1 B4.1 W4.1 B2.0 W2.0 F5.1 B5.1 W5.1 B3.0 W3.0 \
             B4.0 W4.0 B5.0 W5.0"
        );
        assert_eq!(
            fmt(&fallback_order(3, 6, 1)),
            "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 B0.1 W0.1 F2.1 B1.1 W1.1 F4.0 B0.0 W0.0 F3.1 B2.1 \
             W2.1 F5.0 B1.0 W1.0 F4.1 B3.1 W3.1 B2.0 W2.0 F5.1 B4.1 B3.0 W4.1 B5.1 W3.0 B4.0 \
             W5.1 B5.0 W4.0 W5.0"
        );
        assert_eq!(
            fmt(&fallback_order(3, 6, 2)),
            "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 B0.1 W0.1 F3.0 B0.0 W0.0 F3.1 B1.1 W1.1 F4.0 B1.0 \
             W1.0 F4.1 B2.1 W2.1 F5.0 B2.0 W2.0 F5.1 B3.1 B3.0 B4.1 W3.1 B4.0 W3.0 B5.1 W4.1 \
             B5.0 W4.0 W5.1 W5.0"
        );
    }
}
