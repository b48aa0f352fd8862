//! A starting layout for a model given without one (a HuggingFace
//! `config.json` dropped on the page before any layout is set): the fewest
//! GPUs, in powers of two from 1 to [`MAX_START_WORLD`], on which a layout
//! of the sweep's lists ([`super::enumerate`]) fits the GPU by the sweep's
//! memory check ([`super::precheck`]; exact for 1F1B, whose peak has a
//! closed form). The layouts tried run 1F1B with micro-batch 1 and no
//! recomputation, the other dimensions at the sweep's defaults; among those
//! that fit on the fewest GPUs the first in the sweep's order (the least
//! TP, then the least PP). Memory only, no simulation, so it answers at
//! once; `None` when nothing fits on [`MAX_START_WORLD`] GPUs.

use super::{enumerate, precheck, Candidate, SweepSpec};
use crate::engine::schedule::ScheduleKind;
use crate::job::Recompute;

/// The largest world a starting layout is looked for on (the largest
/// presets, Llama 3 405B and DeepSeek-V3, fit far below it).
pub const MAX_START_WORLD: u32 = 4096;

/// The starting layout for `spec`'s model, GPU, batch and cluster (its
/// `worlds` and its layout lists are replaced as the module says).
pub fn smallest_fitting(spec: &SweepSpec) -> Option<Candidate> {
    let mut s = spec.clone();
    s.schedule = Some(vec![ScheduleKind::OneFOneB]);
    s.micro_batch_size = Some(vec![1]);
    s.recompute = Some(vec![Recompute::None]);
    s.vpp = Some(vec![1]);
    let mut world = 1;
    while world <= MAX_START_WORLD {
        s.worlds = vec![world];
        if let Some(c) = enumerate(&s)
            .candidates
            .into_iter()
            .find(|c| precheck(c).is_ok())
        {
            return Some(c);
        }
        world *= 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::gpu_preset;
    use crate::model::presets::preset;

    fn start(model: &str) -> Option<Candidate> {
        let spec = SweepSpec::new(preset(model).unwrap(), gpu_preset("H100-SXM").unwrap(), 1);
        smallest_fitting(&spec)
    }

    #[test]
    fn a_small_model_starts_on_one_gpu_and_a_large_one_on_the_fewest_that_hold_it() {
        let small = start("llama3.2-1b").expect("1B fits one H100");
        assert_eq!(small.job.world, 1);
        let big = start("llama3-70b").expect("70B fits some world");
        let w = big.job.world;
        assert!(w > 1 && w.is_power_of_two(), "world {w}");
        assert!(precheck(&big).is_ok());
        // Half as many GPUs hold no layout of the lists.
        let mut half = SweepSpec::new(
            preset("llama3-70b").unwrap(),
            gpu_preset("H100-SXM").unwrap(),
            w / 2,
        );
        half.schedule = Some(vec![ScheduleKind::OneFOneB]);
        half.micro_batch_size = Some(vec![1]);
        half.recompute = Some(vec![Recompute::None]);
        half.vpp = Some(vec![1]);
        assert!(enumerate(&half)
            .candidates
            .iter()
            .all(|c| precheck(c).is_err()));
    }
}
