//! One module per pipeline schedule: each builds the step order of one
//! stage and documents where the schedule comes from, its ordering rules and
//! its closed-form makespan on identical stages with no communication (the
//! oracle of its tests in `tests/tests/engine_schedules.rs`). Conditions are
//! checked before these run ([`super::schedule::ScheduleKind::check`]), so
//! an order function may assume them. [`super::schedule::stage_order`] is
//! the entry point.

pub mod dualpipev;
pub mod gpipe;
pub mod interleaved;
pub mod one_f_one_b;
pub mod zb_h1;
pub mod zb_h2;
pub mod zbv;

#[cfg(test)]
pub(crate) fn fmt(steps: &[super::schedule::PipeStep]) -> String {
    use super::schedule::Direction;
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
