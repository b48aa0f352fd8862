//! Failure-rate presets named by their source. Each keeps the counts its
//! source publishes (interruptions, days, GPUs) and derives the rate per
//! 1000 node-days from them, so the number can be checked against the
//! source rather than trusted.
//!
//! - `llama3-405b`: "The Llama 3 Herd of Models" (arXiv 2407.21783),
//!   section 3.3.4 and Table 5: 16,384 H100 GPUs (2,048 nodes of 8), 54
//!   days of pre-training, 466 job interruptions of which 47 planned
//!   (firmware, configuration, dataset updates) and 419 unexpected, 78% of
//!   those confirmed or suspected hardware.
//! - `meta-rsc1`, `meta-rsc2`: Kokolis et al., "Revisiting Reliability in
//!   Large-Scale Machine Learning Research Clusters" (arXiv 2410.21680):
//!   6.50 and 2.34 failures per 1000 node-days on Meta's RSC-1 and RSC-2
//!   (quoted second-hand in the project's notes; check the paper).
//! - `opt-175b`: metaseq's OPT-175B logbook (facebookresearch/metaseq,
//!   `projects/OPT/chronicles/`): about 90 restarts over about 56 days of
//!   wall time (11 Nov 2021 - 6 Jan 2022) on about 1024 A100 GPUs (the
//!   OPT paper says 992 80 GB A100s); restarts include loss divergences
//!   and manual interventions, not only hardware, so this is an upper
//!   bound on the hardware rate.
//! - `bloom-176b`: BigScience's BLOOM training notes: 384 A100 GPUs (48
//!   nodes), one to two GPU failures a week (1.5 used here).

use serde::Serialize;

/// A failure rate taken from a published run or cluster study.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FailurePreset {
    /// The name `--failure-preset` takes.
    pub name: &'static str,
    /// Where the numbers come from.
    pub source: &'static str,
    /// What the source counts.
    pub counts: PresetCounts,
}

/// What a preset's source publishes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum PresetCounts {
    /// Interruptions of one run: unexpected and planned ones, its days and
    /// its size.
    Run {
        unexpected: f64,
        planned: f64,
        days: f64,
        gpus: u32,
        gpus_per_node: u32,
    },
    /// A cluster's published rate, failures per 1000 node-days.
    Rate { per_1000_node_days: f64 },
}

impl FailurePreset {
    /// Unexpected failures per 1000 node-days.
    pub fn per_1000_node_days(&self) -> f64 {
        match self.counts {
            PresetCounts::Run {
                unexpected,
                days,
                gpus,
                gpus_per_node,
                ..
            } => unexpected / (days * node_count(gpus, gpus_per_node)) * 1000.0,
            PresetCounts::Rate { per_1000_node_days } => per_1000_node_days,
        }
    }

    /// Planned interruptions per 1000 node-days (0 where the source gives
    /// none).
    pub fn planned_per_1000_node_days(&self) -> f64 {
        match self.counts {
            PresetCounts::Run {
                planned,
                days,
                gpus,
                gpus_per_node,
                ..
            } => planned / (days * node_count(gpus, gpus_per_node)) * 1000.0,
            PresetCounts::Rate { .. } => 0.0,
        }
    }
}

fn node_count(gpus: u32, gpus_per_node: u32) -> f64 {
    f64::from(gpus.div_ceil(gpus_per_node.max(1)))
}

/// Every preset, in the order `--failure-preset` lists them.
pub const PRESETS: [FailurePreset; 5] = [
    FailurePreset {
        name: "llama3-405b",
        source: "Llama 3 405B pre-training, arXiv 2407.21783 section 3.3.4 and Table 5: 419 unexpected and 47 planned interruptions in 54 days on 16,384 H100",
        counts: PresetCounts::Run {
            unexpected: 419.0,
            planned: 47.0,
            days: 54.0,
            gpus: 16_384,
            gpus_per_node: 8,
        },
    },
    FailurePreset {
        name: "meta-rsc1",
        source: "Meta RSC-1, arXiv 2410.21680: 6.50 failures per 1000 node-days",
        counts: PresetCounts::Rate {
            per_1000_node_days: 6.50,
        },
    },
    FailurePreset {
        name: "meta-rsc2",
        source: "Meta RSC-2, arXiv 2410.21680: 2.34 failures per 1000 node-days",
        counts: PresetCounts::Rate {
            per_1000_node_days: 2.34,
        },
    },
    FailurePreset {
        name: "opt-175b",
        source: "OPT-175B logbook, facebookresearch/metaseq projects/OPT/chronicles: ~90 restarts in ~56 days on ~1024 A100 (all causes)",
        counts: PresetCounts::Run {
            unexpected: 90.0,
            planned: 0.0,
            days: 56.0,
            gpus: 1024,
            gpus_per_node: 8,
        },
    },
    FailurePreset {
        name: "bloom-176b",
        source: "BLOOM-176B training notes (BigScience): 1-2 GPU failures a week on 384 A100 (1.5 used)",
        counts: PresetCounts::Run {
            unexpected: 1.5,
            planned: 0.0,
            days: 7.0,
            gpus: 384,
            gpus_per_node: 8,
        },
    },
];

/// The preset called `name` (case-insensitive).
pub fn preset(name: &str) -> Option<FailurePreset> {
    PRESETS
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .copied()
}

/// The presets' names, comma-separated (for messages).
pub fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}
