//! Pipeline schedules: the order in which one stage runs its steps. A step
//! is one micro-batch through one model chunk of the stage ([`PipeStep`]):
//! a forward (F), a backward (B) and, in the schedules that split the
//! backward, a weight-gradient pass (W).
//!
//! This module holds the vocabulary ([`ScheduleKind`], [`Direction`],
//! [`PipeStep`]) and [`stage_order`], which checks a
//! schedule's conditions and asks its module in [`crate::engine::schedule`] for the
//! order. Each schedule's module documents its source, its ordering rules and
//! its closed-form makespan:
//!
//! | name | module | chunks per rank | backward |
//! |---|---|---|---|
//! | `gpipe` | [`crate::engine::schedule::gpipe`] | 1 | B and W together |
//! | `1f1b` | [`crate::engine::schedule::one_f_one_b`] | 1 | B and W together |
//! | `interleaved` | [`crate::engine::schedule::interleaved`] | `virtual_stages` | B and W together |
//! | `zb-h1` | [`crate::engine::schedule::zb_h1`] | 1 | split: B, later W |
//! | `zb-h2` | [`crate::engine::schedule::zb_h2`] | 1 | split: B, later W |
//! | `zbv` | [`crate::engine::schedule::zbv`] | 2, V-shaped | split: B, later W |
//! | `dualpipev` | [`crate::engine::schedule::dualpipev`] | 2, V-shaped | full, or split in the warm-up and cool-down |
//!
//! A backward step runs the chunk's input-gradient and weight-gradient work
//! together (in reverse layer order, each layer's input gradient then its
//! weight gradient) unless the order also lists a [`Direction::Weight`]
//! step for that micro-batch and chunk: then the backward runs only the
//! input gradients (what the previous stage waits for) and the weight step
//! the weight gradients (in reverse layer order). Explicit per-rank orders
//! (measured runs) follow the same rule. Some steps may run overlapped with
//! the next ([`StagePlan`], DualPipeV).
//!
//! With v chunks per rank the model is cut into p·v virtual stages, and the
//! layers of a chunk are whole transformer layers ([`crate::engine::chunks`]).
//! Chunk placement ([`ChunkPlacement`]): looped (Megatron's interleaving),
//! chunk c of stage s is virtual stage c·p + s; V-shaped (two chunks),
//! chunk 0 of stage s is virtual stage s and chunk 1 is virtual stage
//! 2p - 1 - s, so the last stage runs the two middle virtual stages (no
//! transfer between them) and the first stage both ends of the model.
//!
//! Fewer micro-batches than a schedule's warm-up (m < p, or m < 2p for the
//! V shapes): GPipe, 1F1B and ZB-H1 run any m (the warm-up is capped at m;
//! ZB-H1's stages s >= m - 1 then hold every W until after their last B,
//! as PyTorch's `Schedule1F1B`-derived zero-bubble schedules and the
//! authors' scheduler run such a batch); interleaved 1F1B needs m a
//! multiple of p (Megatron's condition), ZB-H2 m >= 2p - 1 (its first stage
//! warms up with 2p - 1 forwards), ZB-V and DualPipeV m >= 2p; those are
//! refused naming the numbers ([`ScheduleKind::check`]).
//!
//! The AICB header's `vpp` is layers per stage, not virtual stages: the
//! schedule ignores it (the count comes from the settings), and only SimAI's
//! closed-form bubble in the summary uses it, as SimAI does.

pub mod dualpipev;
pub mod gpipe;
pub mod interleaved;
pub mod one_f_one_b;
pub mod overlap;
pub mod zb_h1;
pub mod zb_h2;
pub mod zbv;

use crate::engine::SimError;
use serde::{Deserialize, Serialize};

pub use zbv::StepCosts;

/// Which pipeline schedule (the CLI's `--schedule` values, with the
/// `clap` feature, are the serde names; the doc lines are its help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ScheduleKind {
    /// All forwards, then all backwards.
    #[serde(rename = "gpipe")]
    #[cfg_attr(feature = "clap", value(name = "gpipe"))]
    GPipe,
    /// One forward, one backward after a warm-up (Megatron's default).
    #[default]
    #[serde(rename = "1f1b")]
    #[cfg_attr(feature = "clap", value(name = "1f1b"))]
    OneFOneB,
    /// Interleaved 1F1B with --virtual-stages model chunks per rank.
    #[serde(rename = "interleaved")]
    Interleaved,
    /// Zero Bubble ZB-H1: backward split into B and W, W delayed into the
    /// bubbles, 1F1B's peak memory (any m; with m < p the later stages run
    /// their W's after their last B).
    #[serde(rename = "zb-h1")]
    #[cfg_attr(feature = "clap", value(name = "zb-h1"))]
    ZbH1,
    /// Zero Bubble ZB-H2: longer warm-up, up to 2p - 1 micro-batches in
    /// flight, no bubble once full (needs m >= 2p - 1).
    #[serde(rename = "zb-h2")]
    #[cfg_attr(feature = "clap", value(name = "zb-h2"))]
    ZbH2,
    /// Zero Bubble ZB-V: two chunks per rank in a V shape, 1F1B's peak
    /// memory (needs m >= 2p and an even number of layers per stage).
    #[serde(rename = "zbv")]
    #[cfg_attr(feature = "clap", value(name = "zbv"))]
    ZbV,
    /// DeepSeek-V3's DualPipeV: two V-shaped chunks per rank, forward and
    /// backward of the two chunks overlapped (needs m >= 2p).
    #[serde(rename = "dualpipev")]
    #[cfg_attr(feature = "clap", value(name = "dualpipev"))]
    DualPipeV,
}

/// How a rank's chunks map to virtual stages (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkPlacement {
    /// Chunk c of stage s is virtual stage c·p + s (Megatron's interleaving).
    Looped,
    /// Two chunks: chunk 0 of stage s is virtual stage s, chunk 1 is
    /// virtual stage 2p - 1 - s.
    VShape,
}

impl ChunkPlacement {
    /// The virtual stage (0-based, model order) of `chunk` on `stage` of `p`.
    pub fn virtual_stage(self, p: u32, stage: u32, chunk: u32) -> u32 {
        match self {
            ChunkPlacement::Looped => chunk * p + stage,
            ChunkPlacement::VShape if chunk == 0 => stage,
            ChunkPlacement::VShape => 2 * p - 1 - stage,
        }
    }

    /// The (stage, chunk) that runs virtual stage `k` (0 <= k < p x chunks).
    pub fn locate(self, p: u32, k: u32) -> (u32, u32) {
        match self {
            ChunkPlacement::Looped => (k % p, k / p),
            ChunkPlacement::VShape if k < p => (k, 0),
            ChunkPlacement::VShape => (2 * p - 1 - k, 1),
        }
    }
}

impl ScheduleKind {
    /// Every schedule, in the order the CLI and the page list them.
    pub const ALL: [ScheduleKind; 7] = [
        ScheduleKind::GPipe,
        ScheduleKind::OneFOneB,
        ScheduleKind::Interleaved,
        ScheduleKind::ZbH1,
        ScheduleKind::ZbH2,
        ScheduleKind::ZbV,
        ScheduleKind::DualPipeV,
    ];

    /// `gpipe`, `1f1b`, `interleaved`, `zb-h1`, `zb-h2`, `zbv`, `dualpipev`
    /// (CLI and JSON names).
    pub fn name(self) -> &'static str {
        match self {
            ScheduleKind::GPipe => "gpipe",
            ScheduleKind::OneFOneB => "1f1b",
            ScheduleKind::Interleaved => "interleaved",
            ScheduleKind::ZbH1 => "zb-h1",
            ScheduleKind::ZbH2 => "zb-h2",
            ScheduleKind::ZbV => "zbv",
            ScheduleKind::DualPipeV => "dualpipev",
        }
    }

    /// Parse a CLI name.
    pub fn from_name(name: &str) -> Option<ScheduleKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Model chunks per rank: `virtual_stages` for the interleaved
    /// schedule, 2 for the V-shaped ones, else 1.
    pub fn chunks(self, virtual_stages: u32) -> u32 {
        match self {
            ScheduleKind::Interleaved => virtual_stages,
            ScheduleKind::ZbV | ScheduleKind::DualPipeV => 2,
            _ => 1,
        }
    }

    /// How chunks map to virtual stages.
    pub fn placement(self) -> ChunkPlacement {
        match self {
            ScheduleKind::ZbV | ScheduleKind::DualPipeV => ChunkPlacement::VShape,
            _ => ChunkPlacement::Looped,
        }
    }

    /// True when the schedule runs some weight gradients as separate W
    /// steps (every one for the zero-bubble schedules, those of the warm-up
    /// and cool-down for DualPipeV).
    pub fn splits_backward(self) -> bool {
        matches!(
            self,
            ScheduleKind::ZbH1 | ScheduleKind::ZbH2 | ScheduleKind::ZbV | ScheduleKind::DualPipeV
        )
    }

    /// Check the schedule's conditions on `p` stages and `m` micro-batches;
    /// the error names the condition and the numbers.
    pub fn check(self, p: u32, m: u32) -> Result<(), SimError> {
        let needs = |needs: String| {
            Err(SimError::ScheduleNeeds {
                schedule: self.name(),
                needs,
            })
        };
        match self {
            ScheduleKind::GPipe | ScheduleKind::OneFOneB => Ok(()),
            ScheduleKind::Interleaved if !m.is_multiple_of(p) => {
                Err(SimError::InterleavedMicroBatches {
                    micro_batches: m,
                    stages: p,
                })
            }
            ScheduleKind::Interleaved => Ok(()),
            ScheduleKind::ZbH2 if u64::from(m) + 1 < 2 * u64::from(p) => needs(format!(
                "m >= 2p - 1 micro-batches (the first stage warms up with 2p - 1 forwards); the run has m = {m}, 2p - 1 = {}",
                2 * u64::from(p) - 1
            )),
            ScheduleKind::ZbV if u64::from(m) < 2 * u64::from(p) => needs(format!(
                "m >= 2p micro-batches (two chunks per rank in a V shape); the run has m = {m}, 2p = {}",
                2 * u64::from(p)
            )),
            ScheduleKind::DualPipeV if u64::from(m) < 2 * u64::from(p) => needs(format!(
                "m >= 2p micro-batches (DualPipe's num_chunks >= 2 x ranks); the run has m = {m}, 2p = {}",
                2 * u64::from(p)
            )),
            ScheduleKind::ZbH1 | ScheduleKind::ZbH2 | ScheduleKind::ZbV | ScheduleKind::DualPipeV => {
                Ok(())
            }
        }
    }
}

/// Forward, backward (input gradient; with the weight gradient too unless
/// the order splits it) or weight-gradient pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Forward,
    Backward,
    /// The weight-gradient pass (W) of a split backward.
    Weight,
}

/// One step of a stage: a micro-batch through one of its model chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PipeStep {
    pub direction: Direction,
    pub micro_batch: u32,
    /// Model chunk on this rank (0 unless the schedule has several).
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

    /// A weight-gradient step (split backward).
    pub fn w(micro_batch: u32, chunk: u32) -> PipeStep {
        PipeStep {
            direction: Direction::Weight,
            micro_batch,
            chunk,
        }
    }
}

/// The order of one stage, with the steps that run overlapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagePlan {
    pub steps: Vec<PipeStep>,
    /// Per step: true when it and the next step run overlapped (DualPipeV's
    /// forward & backward pairs: both start when both inputs are there, run
    /// as two chains sharing the rank's streams, so one's communication
    /// overlaps the other's compute, and hand on their outputs when both
    /// are done). Empty when no step overlaps.
    pub overlapped: Vec<bool>,
    /// The overlapped pairs run as independent chains: each starts from
    /// the same anchor as soon as its own input is there, and hands its
    /// output on when it is done ([`overlap`]: Megatron's EP overlap).
    /// False: both wait for both inputs (DualPipeV).
    pub independent: bool,
}

/// The step order of `stage` (0-based) for `p` stages, `m` micro-batches and
/// `v` chunks per rank ([`ScheduleKind::chunks`]: the interleaved
/// schedule's virtual stages, else 1). Refuses what the schedule cannot run
/// ([`ScheduleKind::check`]).
pub fn stage_order(
    kind: ScheduleKind,
    p: u32,
    m: u32,
    v: u32,
    stage: u32,
) -> Result<Vec<PipeStep>, SimError> {
    Ok(stage_plan(kind, p, m, v, stage)?.steps)
}

/// [`stage_order`] with the overlapped steps ([`StagePlan`]).
pub fn stage_plan(
    kind: ScheduleKind,
    p: u32,
    m: u32,
    v: u32,
    stage: u32,
) -> Result<StagePlan, SimError> {
    stage_plan_costed(kind, p, m, v, stage, &StepCosts::UNIT)
}

/// [`stage_plan`] for a schedule whose order depends on the step times
/// (ZB-V: the authors' greedy placement simulates them), given as `costs`;
/// the other schedules ignore them.
pub fn stage_plan_costed(
    kind: ScheduleKind,
    p: u32,
    m: u32,
    v: u32,
    stage: u32,
    costs: &StepCosts,
) -> Result<StagePlan, SimError> {
    if p == 0 || m == 0 || v == 0 || stage >= p {
        return Err(SimError::InvalidJob(format!(
            "schedule for stage {stage} of {p} with {m} micro-batches and {v} chunks"
        )));
    }
    if v != kind.chunks(v) {
        return Err(SimError::InvalidJob(format!(
            "the {} schedule runs {} chunk(s) per rank, not {v}",
            kind.name(),
            kind.chunks(v)
        )));
    }
    kind.check(p, m)?;
    let steps = match kind {
        ScheduleKind::GPipe => gpipe::order(m),
        ScheduleKind::OneFOneB => one_f_one_b::order(p, m, stage),
        ScheduleKind::Interleaved => interleaved::order(p, m, v, stage),
        ScheduleKind::ZbH1 => zb_h1::order(p, m, stage),
        ScheduleKind::ZbH2 => zb_h2::order(p, m, stage),
        ScheduleKind::ZbV => zbv::order(p, m, stage, costs),
        ScheduleKind::DualPipeV => {
            let (steps, overlapped) = dualpipev::plan(p, m, stage);
            return Ok(StagePlan {
                steps,
                overlapped,
                independent: false,
            });
        }
    };
    Ok(StagePlan {
        steps,
        overlapped: Vec::new(),
        independent: false,
    })
}

#[cfg(test)]
pub(crate) fn fmt(steps: &[PipeStep]) -> String {
    steps
        .iter()
        .map(|s| {
            let d = match s.direction {
                Direction::Forward => 'F',
                Direction::Backward => 'B',
                Direction::Weight => 'W',
            };
            format!("{d}{}.{}", s.micro_batch, s.chunk)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in ScheduleKind::ALL {
            assert_eq!(ScheduleKind::from_name(k.name()), Some(k));
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<ScheduleKind>(&json).unwrap(), k);
        }
        assert_eq!(ScheduleKind::from_name("zb-h3"), None);
    }

    #[test]
    fn placements_are_inverse() {
        for p in 1..6 {
            for (placement, v) in [
                (ChunkPlacement::Looped, 1),
                (ChunkPlacement::Looped, 3),
                (ChunkPlacement::VShape, 2),
            ] {
                let mut seen = vec![false; (p * v) as usize];
                for s in 0..p {
                    for c in 0..v {
                        let k = placement.virtual_stage(p, s, c);
                        assert_eq!(placement.locate(p, k), (s, c));
                        seen[k as usize] = true;
                    }
                }
                assert!(seen.iter().all(|x| *x));
            }
        }
        // V shape: the last stage holds the two middle virtual stages.
        assert_eq!(ChunkPlacement::VShape.virtual_stage(4, 3, 0), 3);
        assert_eq!(ChunkPlacement::VShape.virtual_stage(4, 3, 1), 4);
        assert_eq!(ChunkPlacement::VShape.virtual_stage(4, 0, 1), 7);
    }

    #[test]
    fn every_step_exactly_once() {
        for kind in ScheduleKind::ALL {
            let v = kind.chunks(3);
            for p in 1..5 {
                for s in 0..p {
                    let mut o = stage_order(kind, p, 12, v, s).unwrap();
                    let n = o.len();
                    o.sort();
                    o.dedup();
                    assert_eq!(o.len(), n, "{kind:?} p={p} s={s}: a step twice");
                    let count = |d: Direction| o.iter().filter(|x| x.direction == d).count();
                    assert_eq!(count(Direction::Forward), 12 * v as usize);
                    assert_eq!(count(Direction::Backward), 12 * v as usize);
                    let w = count(Direction::Weight);
                    if kind.splits_backward() {
                        assert!(w > 0, "{kind:?}");
                    } else {
                        assert_eq!(w, 0, "{kind:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn conditions_name_the_numbers() {
        assert!(matches!(
            stage_order(ScheduleKind::Interleaved, 4, 6, 2, 0),
            Err(SimError::InterleavedMicroBatches { .. })
        ));
        // ZB-H1 runs any m (m < p degenerates gracefully).
        assert!(stage_order(ScheduleKind::ZbH1, 4, 3, 1, 0).is_ok());
        assert!(stage_order(ScheduleKind::ZbH1, 4, 1, 1, 3).is_ok());
        let e = stage_order(ScheduleKind::ZbH2, 4, 6, 1, 0).unwrap_err();
        assert!(e.to_string().contains("2p - 1 = 7"), "{e}");
        assert!(e.hint().is_some());
        assert!(stage_order(ScheduleKind::ZbH2, 4, 7, 1, 0).is_ok());
        let e = stage_order(ScheduleKind::ZbV, 4, 7, 2, 0).unwrap_err();
        assert!(e.to_string().contains("m = 7, 2p = 8"), "{e}");
        assert!(stage_order(ScheduleKind::ZbV, 4, 8, 2, 0).is_ok());
        assert!(stage_order(ScheduleKind::ZbV, 4, 8, 1, 0).is_err());
        let e = stage_order(ScheduleKind::DualPipeV, 3, 5, 2, 0).unwrap_err();
        assert!(e.to_string().contains("m = 5, 2p = 6"), "{e}");
        assert!(stage_order(ScheduleKind::OneFOneB, 4, 1, 2, 0).is_err());
    }
}
