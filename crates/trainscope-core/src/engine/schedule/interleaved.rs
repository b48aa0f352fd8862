//! Interleaved 1F1B (Narayanan et al., "Efficient Large-Scale Language Model
//! Training on GPU Clusters Using Megatron-LM", SC 2021), in the ordering of
//! classic Megatron-LM's `forward_backward_pipelining_with_interleaving`
//! (`megatron/core/pipeline_parallel/schedules.py`, without the later
//! `microbatch_group_size_per_vp_stage` option: groups of p micro-batches per
//! chunk).
//!
//! With v model chunks per rank, chunk c of stage s is virtual stage c·p + s;
//! a chunk is layers / (p·v) whole transformer layers ([`crate::engine::chunks`]).
//! Micro-step k (0 <= k < m·v) of the forward sequence runs micro-batch
//! (k / (p·v))·p + k % p on chunk (k % (p·v)) / p; backward micro-step k runs
//! the same micro-batch on chunk v - 1 - that. Stage s warms up with
//! min((p - s - 1)·2 + (v - 1)·p, m·v) forwards, then alternates forward
//! k + w / backward k, then cools down; when m == p every stage warms up with
//! all m·v forwards and then runs all backwards (Megatron's
//! `all_warmup_microbatches`). m must be a multiple of p
//! ([`crate::engine::SimError::InterleavedMicroBatches`]).
//!
//! Makespan on p identical stages with no communication:
//! m(F + B) + (p - 1)(F + B)/v, m == p included: the all-forwards-first
//! order then keeps every stage busy from its first forward to its last (each
//! chunk's p forwards end exactly when the next chunk's first input arrives),
//! so the forward pass ends at m·F + (p - 1)F/v on the last stage and the
//! backward pass mirrors it. Stage s holds at most
//! min((p - s - 1)·2 + (v - 1)·p + 1, m·v) chunk activations (the warm-up
//! plus the first steady forward), i.e. that over v micro-batches.

use crate::engine::schedule::{Direction, PipeStep};

/// The order of `stage` of `p` with `m` micro-batches (a multiple of `p`)
/// and `v` chunks per rank.
pub fn order(p: u32, m: u32, v: u32, stage: u32) -> Vec<PipeStep> {
    let total = u64::from(m) * u64::from(v);
    let mut out = Vec::with_capacity(2 * total as usize);
    let warm = if m == p {
        // Megatron: all_warmup_microbatches.
        total
    } else {
        ((u64::from(p - stage - 1)) * 2 + u64::from(v - 1) * u64::from(p)).min(total)
    };
    let step = |k: u64, dir: Direction| -> PipeStep {
        let pv = u64::from(p) * u64::from(v);
        let in_group = k % pv;
        let fwd_chunk = (in_group / u64::from(p)) as u32;
        let mb = ((k / pv) * u64::from(p) + in_group % u64::from(p)) as u32;
        let chunk = match dir {
            Direction::Forward => fwd_chunk,
            Direction::Backward | Direction::Weight => v - 1 - fwd_chunk,
        };
        PipeStep {
            direction: dir,
            micro_batch: mb,
            chunk,
        }
    };
    out.extend((0..warm).map(|k| step(k, Direction::Forward)));
    for i in 0..(total - warm) {
        out.push(step(warm + i, Direction::Forward));
        out.push(step(i, Direction::Backward));
    }
    out.extend((total - warm..total).map(|k| step(k, Direction::Backward)));
    out
}

#[cfg(test)]
mod tests {
    use super::order;
    use crate::engine::schedule::fmt;

    #[test]
    fn megatron_order() {
        // warm-up (2-0-1)*2 + (2-1)*2 = 4
        assert_eq!(
            fmt(&order(2, 4, 2, 0)),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0"
        );
        // m == p: every stage runs all forwards first (Megatron's
        // all_warmup_microbatches), stage 1 included (whose usual warm-up
        // would be (2-1-1)*2 + (2-1)*2 = 2).
        for stage in 0..2 {
            assert_eq!(
                fmt(&order(2, 2, 2, stage)),
                "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0",
                "stage {stage}"
            );
        }
    }
}
