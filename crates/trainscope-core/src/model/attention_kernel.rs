//! Which fused attention kernel runs the attention core (issue 24,
//! kernels per stack): cuDNN's (Transformer Engine's fused attention,
//! PyTorch's SDPA where it picks cuDNN, FlashAttention-3-class on Hopper)
//! or FlashAttention-2 (PyTorch's SDPA flash backend). The H100-class
//! attention curve ([`crate::hardware::EFFICIENCY_SOURCES`]) was measured with
//! PyTorch 2.11's SDPA, which ran cuDNN's kernels (the committed traces
//! name them); FlashAttention-2 runs that core slower on Hopper, by the
//! ratios of [`ATTENTION_KERNEL_SOURCES`]. Which one a PyTorch run got
//! depends on its version: cuDNN was made opt-in after PyTorch 2.5's bugs
//! (pytorch/pytorch#138522, October 2024) and the default again on sm90
//! from about 2.9/2.10 (pytorch/pytorch#162073, gated on the bundled
//! cuDNN): runs of PyTorch nightlies from late 2024 to mid 2025
//! (torchtitan's published benchmarks among them) ran FlashAttention-2.

use crate::named::Named;
use serde::{Deserialize, Serialize};

/// The fused attention kernel of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionKernel {
    /// cuDNN's fused attention (what the H100 curve was measured on).
    #[default]
    Cudnn,
    /// FlashAttention-2 (PyTorch's SDPA flash backend).
    Flash2,
}

/// Where the ratios come from.
pub const ATTENTION_KERNEL_SOURCES: &str = "\
FlashAttention-2 against cuDNN on an H100, forward: 329.5 against 631.3 TFLOP/s, PyTorch's SDPA \
(flash backend) and its cuDNN backend on the same shape (batch 1, 24 heads, 4,608 tokens, head \
size 128; pytorch/pytorch#142132, PyTorch 2.6.0.dev20241204): 0.522. Backward: FlashAttention-3's \
paper (Shah et al. 2024) reports its backward 1.5-1.75x FlashAttention-2's on H100 at head size \
128, and cuDNN's forward equals FlashAttention-3's in the same benchmark (631.3 against 631.8): \
1 / 1.625 = 0.615, an assumption that cuDNN's backward is FlashAttention-3's. Other GPUs: no \
ratio is known; the A100-class figure already is FlashAttention-2's, Blackwell's is not measured \
(1).";

/// GPUs whose attention curve is cuDNN's measured one (the H100 class).
const HOPPER: [&str; 5] = ["H100-SXM", "H100-96G-500W", "H800", "H20", "H200"];

impl Named for AttentionKernel {
    const KIND: &'static str = "attention kernel";
    const CHOICES: &'static [AttentionKernel] = &AttentionKernel::ALL;
    const ALIASES: &'static [(&'static str, AttentionKernel)] = &[("fa2", AttentionKernel::Flash2)];
    fn name(self) -> &'static str {
        AttentionKernel::name(self)
    }
}

impl AttentionKernel {
    pub const ALL: [AttentionKernel; 2] = [AttentionKernel::Cudnn, AttentionKernel::Flash2];

    /// The flag's and the JSON's name.
    pub fn name(self) -> &'static str {
        match self {
            AttentionKernel::Cudnn => "cudnn",
            AttentionKernel::Flash2 => "flash2",
        }
    }

    /// This kernel's speed over the GPU's attention curve for one pass
    /// (1: the curve's own kernel).
    pub fn speed(self, gpu_name: &str, backward: bool) -> f64 {
        match self {
            AttentionKernel::Cudnn => 1.0,
            AttentionKernel::Flash2 if HOPPER.contains(&gpu_name) => {
                if backward {
                    1.0 / 1.625
                } else {
                    329.5 / 631.3
                }
            }
            AttentionKernel::Flash2 => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_a_bad_name_lists_the_choices() {
        for k in AttentionKernel::ALL {
            assert_eq!(AttentionKernel::from_name(k.name()), Some(k));
        }
        assert_eq!(
            AttentionKernel::from_name(" FA2 "),
            Some(AttentionKernel::Flash2)
        );
        let e = AttentionKernel::parse("flash3").unwrap_err();
        assert!(e.contains("flash3") && e.contains("cudnn, flash2"), "{e}");
    }

    #[test]
    fn flash2_is_slower_on_hopper_only() {
        let f = AttentionKernel::Flash2;
        assert!((f.speed("H100-SXM", false) - 0.522).abs() < 1e-3);
        assert!((f.speed("H200", true) - 0.615).abs() < 1e-3);
        assert_eq!(f.speed("A100-80G", false), 1.0);
        assert_eq!(f.speed("B200", true), 1.0);
        assert_eq!(AttentionKernel::Cudnn.speed("H100-SXM", true), 1.0);
    }
}
