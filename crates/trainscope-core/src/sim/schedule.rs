//! Pipeline schedules: the order in which one stage runs its forward and
//! backward steps. A step is one micro-batch through one model chunk of the
//! stage ([`PipeStep`]).
//!
//! - GPipe: all m forwards, then all m backwards (micro-batch 0 first).
//! - 1F1B: on stage s, a warm-up of min(p - s - 1, m) forwards, then
//!   alternate one forward and one backward, then the remaining backwards.
//! - Interleaved 1F1B (Megatron ordering) with v model chunks per rank: the
//!   block's layers are split into v chunks; chunk c of stage s is virtual
//!   stage c*p + s. Micro-step k (0 <= k < m*v) of the forward sequence runs
//!   micro-batch (k / (p*v))*p + k % p on chunk (k % (p*v)) / p; backward
//!   micro-step k runs the same micro-batch on chunk v - 1 - that. Stage s
//!   warms up with min((p - s - 1)*2 + (v - 1)*p, m*v) forwards, then
//!   alternates forward k+w / backward k, then cools down; when m == p
//!   every stage warms up with all m*v forwards and then runs all
//!   backwards (Megatron's `all_warmup_microbatches`). m must be a multiple
//!   of p ([`SimError::InterleavedMicroBatches`]). This is the ordering of
//!   classic Megatron-LM's `forward_backward_pipelining_with_interleaving`
//!   (`megatron/core/pipeline_parallel/schedules.py`, without the later
//!   `microbatch_group_size_per_vp_stage` option: groups of p micro-batches
//!   per chunk).
//!
//! With no communication and identical stages, GPipe and 1F1B take
//! (m + p - 1)(t_f + t_b) and interleaved takes m(t_f + t_b) +
//! (p - 1)(t_f + t_b)/v, m == p included: the all-forwards-first order then
//! keeps every stage busy from its first forward to its last (each chunk's
//! p forwards end exactly when the next chunk's first input arrives), so
//! the forward pass ends at m t_f + (p - 1) t_f/v on the last stage and the
//! backward pass mirrors it (tested in `tests/engine_schedules.rs`).
//!
//! The AICB header's `vpp` is layers per stage, not virtual stages: the
//! schedule ignores it (the count comes from the settings), and only SimAI's
//! closed-form bubble in the summary uses it, as SimAI does.

use super::SimError;
use serde::{Deserialize, Serialize};

/// Which pipeline schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleKind {
    #[serde(rename = "gpipe")]
    GPipe,
    #[default]
    #[serde(rename = "1f1b")]
    OneFOneB,
    #[serde(rename = "interleaved")]
    Interleaved,
}

impl ScheduleKind {
    /// `gpipe`, `1f1b`, `interleaved` (CLI and JSON names).
    pub fn name(self) -> &'static str {
        match self {
            ScheduleKind::GPipe => "gpipe",
            ScheduleKind::OneFOneB => "1f1b",
            ScheduleKind::Interleaved => "interleaved",
        }
    }

    /// Parse a CLI name.
    pub fn from_name(name: &str) -> Option<ScheduleKind> {
        [
            ScheduleKind::GPipe,
            ScheduleKind::OneFOneB,
            ScheduleKind::Interleaved,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Forward,
    Backward,
}

/// One step of a stage: a micro-batch through one of its model chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PipeStep {
    pub direction: Direction,
    pub micro_batch: u32,
    /// Model chunk on this rank (0 unless interleaved).
    pub chunk: u32,
}

impl PipeStep {
    /// A forward step.
    pub fn f(micro_batch: u32, chunk: u32) -> PipeStep {
        PipeStep {
            direction: Direction::Forward,
            micro_batch,
            chunk,
        }
    }

    /// A backward step.
    pub fn b(micro_batch: u32, chunk: u32) -> PipeStep {
        PipeStep {
            direction: Direction::Backward,
            micro_batch,
            chunk,
        }
    }
}

/// The step order of `stage` (0-based) for `p` stages, `m` micro-batches and
/// `v` chunks per rank. `v` must be 1 unless `kind` is interleaved.
pub fn stage_order(
    kind: ScheduleKind,
    p: u32,
    m: u32,
    v: u32,
    stage: u32,
) -> Result<Vec<PipeStep>, SimError> {
    if p == 0 || m == 0 || v == 0 || stage >= p {
        return Err(SimError::InvalidJob(format!(
            "schedule for stage {stage} of {p} with {m} micro-batches and {v} chunks"
        )));
    }
    let mut out = Vec::with_capacity(2 * m as usize * v as usize);
    match kind {
        ScheduleKind::GPipe => {
            out.extend((0..m).map(|j| PipeStep::f(j, 0)));
            out.extend((0..m).map(|j| PipeStep::b(j, 0)));
        }
        ScheduleKind::OneFOneB => {
            let warm = (p - stage - 1).min(m);
            out.extend((0..warm).map(|j| PipeStep::f(j, 0)));
            for i in 0..(m - warm) {
                out.push(PipeStep::f(warm + i, 0));
                out.push(PipeStep::b(i, 0));
            }
            out.extend((m - warm..m).map(|j| PipeStep::b(j, 0)));
        }
        ScheduleKind::Interleaved => {
            if !m.is_multiple_of(p) {
                return Err(SimError::InterleavedMicroBatches {
                    micro_batches: m,
                    stages: p,
                });
            }
            let total = u64::from(m) * u64::from(v);
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
                    Direction::Backward => v - 1 - fwd_chunk,
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
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(steps: &[PipeStep]) -> String {
        steps
            .iter()
            .map(|s| {
                format!(
                    "{}{}.{}",
                    if s.direction == Direction::Forward {
                        'F'
                    } else {
                        'B'
                    },
                    s.micro_batch,
                    s.chunk
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn one_f_one_b_warmup() {
        let s0 = stage_order(ScheduleKind::OneFOneB, 4, 6, 1, 0).unwrap();
        assert_eq!(
            fmt(&s0),
            "F0.0 F1.0 F2.0 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 B3.0 B4.0 B5.0"
        );
        let s3 = stage_order(ScheduleKind::OneFOneB, 4, 6, 1, 3).unwrap();
        assert!(fmt(&s3).starts_with("F0.0 B0.0 F1.0 B1.0"));
        // m smaller than the warm-up
        let s0 = stage_order(ScheduleKind::OneFOneB, 4, 2, 1, 0).unwrap();
        assert_eq!(fmt(&s0), "F0.0 F1.0 B0.0 B1.0");
    }

    #[test]
    fn interleaved_megatron_order() {
        let s0 = stage_order(ScheduleKind::Interleaved, 2, 4, 2, 0).unwrap();
        // warm-up (2-0-1)*2 + (2-1)*2 = 4
        assert_eq!(
            fmt(&s0),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0"
        );
        // m == p: every stage runs all forwards first (Megatron's
        // all_warmup_microbatches), stage 1 included (whose usual warm-up
        // would be (2-1-1)*2 + (2-1)*2 = 2).
        for stage in 0..2 {
            let s = stage_order(ScheduleKind::Interleaved, 2, 2, 2, stage).unwrap();
            assert_eq!(
                fmt(&s),
                "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0",
                "stage {stage}"
            );
        }
        assert!(matches!(
            stage_order(ScheduleKind::Interleaved, 4, 6, 2, 0),
            Err(SimError::InterleavedMicroBatches { .. })
        ));
    }

    #[test]
    fn every_step_exactly_once() {
        for kind in [
            ScheduleKind::GPipe,
            ScheduleKind::OneFOneB,
            ScheduleKind::Interleaved,
        ] {
            let v = if kind == ScheduleKind::Interleaved {
                3
            } else {
                1
            };
            for s in 0..4 {
                let mut o = stage_order(kind, 4, 8, v, s).unwrap();
                assert_eq!(o.len(), 2 * 8 * v as usize);
                o.sort();
                o.dedup();
                assert_eq!(o.len(), 2 * 8 * v as usize);
            }
        }
    }
}
