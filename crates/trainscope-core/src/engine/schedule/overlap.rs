//! Forward-backward overlap of two micro-batches in a stage's order
//! (Megatron's EP overlap, `--overlap-moe-expert-parallel-comm`, which
//! runs "combined 1F1B" steps: the forward of one micro-batch together
//! with the backward of another, so that one's all-to-alls run while the
//! other computes). [`pair_forward_backward`] marks such pairs in a plan
//! ([`super::StagePlan::overlapped`]) as independent chains
//! ([`super::StagePlan::independent`]): both start from the same point of
//! the rank's chain, each as soon as its own input is there, and share the
//! rank's streams, so neither waits for the other's communication.
//!
//! The rule, per stage order: a forward directly followed by a full
//! backward of another micro-batch runs with it. Without pipelining (one
//! stage) the order F1 B1 F2 B2 ... becomes F1, F2 & B1, F3 & B2, ..., Bm:
//! each backward waits for the next forward, one more micro-batch in
//! flight, as Megatron's combined 1F1B does. With several stages the
//! adjacent pairs of different micro-batches of the steady state overlap
//! (the last stage's F_i B_i pairs stay in order: delaying them would hold
//! the gradient the previous stage waits for). Split backwards (B and W) and
//! plans that already overlap (DualPipeV) are left as they are.

use super::{Direction, PipeStep, StagePlan};

/// `plan` with forward-backward pairs overlapped (see the module
/// documentation); `stages`: the pipeline's stage count.
pub fn pair_forward_backward(plan: StagePlan, stages: u32) -> StagePlan {
    if !plan.overlapped.is_empty() || plan.steps.iter().any(|s| s.direction == Direction::Weight) {
        return plan;
    }
    let steps = plan.steps;
    let n = steps.len();
    let mut out: Vec<PipeStep> = Vec::with_capacity(n);
    let mut overlapped = Vec::with_capacity(n);
    let push = |out: &mut Vec<PipeStep>, ov: &mut Vec<bool>, s: PipeStep, with_next: bool| {
        out.push(s);
        ov.push(with_next);
    };
    let mut pending: Option<PipeStep> = None;
    let mut i = 0;
    while i < n {
        let s = steps[i];
        match s.direction {
            Direction::Forward => {
                if let Some(b) = pending.take() {
                    push(&mut out, &mut overlapped, s, true);
                    push(&mut out, &mut overlapped, b, false);
                    i += 1;
                } else if let Some(&b) = steps.get(i + 1).filter(|b| {
                    b.direction == Direction::Backward && b.micro_batch != s.micro_batch
                }) {
                    push(&mut out, &mut overlapped, s, true);
                    push(&mut out, &mut overlapped, b, false);
                    i += 2;
                } else {
                    push(&mut out, &mut overlapped, s, false);
                    i += 1;
                }
            }
            _ => {
                if let Some(b) = pending.take() {
                    push(&mut out, &mut overlapped, b, false);
                }
                let later_forward = steps[i + 1..]
                    .iter()
                    .any(|x| x.direction == Direction::Forward);
                if stages == 1 && later_forward {
                    pending = Some(s);
                } else {
                    push(&mut out, &mut overlapped, s, false);
                }
                i += 1;
            }
        }
    }
    if let Some(b) = pending {
        push(&mut out, &mut overlapped, b, false);
    }
    StagePlan {
        steps: out,
        overlapped,
        independent: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::schedule::{fmt, stage_plan, ScheduleKind};

    fn paired(kind: ScheduleKind, p: u32, m: u32, v: u32, stage: u32) -> String {
        let plan = pair_forward_backward(stage_plan(kind, p, m, v, stage).unwrap(), p);
        assert_eq!(plan.steps.len(), plan.overlapped.len());
        let mut sorted = plan.steps.clone();
        sorted.sort();
        let mut orig = stage_plan(kind, p, m, v, stage).unwrap().steps;
        orig.sort();
        assert_eq!(sorted, orig, "the same steps, reordered");
        plan.steps
            .iter()
            .zip(&plan.overlapped)
            .map(|(s, o)| {
                format!(
                    "{}{}",
                    fmt(std::slice::from_ref(s)),
                    if *o { "&" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn one_stage_pairs_each_backward_with_the_next_forward() {
        assert_eq!(
            paired(ScheduleKind::OneFOneB, 1, 4, 1, 0),
            "F0.0 F1.0& B0.0 F2.0& B1.0 F3.0& B2.0 B3.0"
        );
    }

    #[test]
    fn the_steady_state_of_a_pipeline_pairs_adjacent_steps_and_the_last_stage_stays() {
        let first = paired(ScheduleKind::OneFOneB, 2, 4, 1, 0);
        assert!(first.contains('&'), "{first}");
        let last = paired(ScheduleKind::OneFOneB, 2, 4, 1, 1);
        assert!(!last.contains('&'), "{last}");
    }
}
