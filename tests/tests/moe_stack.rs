//! MoE as Megatron runs it (issue 24): the kernel list and collectives of
//! one MoE layer per token dispatcher and fusion setting and of one dense
//! layer per stack (snapshots), the grouped GEMM's shapes per expert, and
//! the engine-level effects: EP overlap shortens an EP-bound step, the
//! busiest rank's imbalance lengthens it, the flex dispatcher moves fewer
//! bytes than the all-to-all, and the settings change nothing on a dense
//! model.

use std::fmt::Write;
use trainscope_core::engine::SimConfig;
use trainscope_core::hardware::gpu_preset;
use trainscope_core::job::build::described_job;
use trainscope_core::job::layout::shape;
use trainscope_core::job::run::run_model;
use trainscope_core::job::{ModelJob, TrainingSetup};
use trainscope_core::model::dispatcher::Dispatcher;
use trainscope_core::model::presets;
use trainscope_core::model::stack::{Stack, StackSettings};
use trainscope_core::workload::{CommOp, PhaseOp};

fn job(model: &str, world: u32, ep: u32, stack: StackSettings) -> ModelJob {
    let setup = TrainingSetup {
        ep,
        micro_batch_size: 1,
        global_batch_size: Some(world * 2),
        seq_length: 2048,
        distributed_optimizer: true,
        stack,
        ..TrainingSetup::default()
    };
    ModelJob::new(
        presets::preset(model).expect("preset"),
        setup,
        gpu_preset("H100-SXM").expect("gpu"),
        Some(world),
    )
    .expect("a valid job")
}

fn comm(c: &Option<CommOp>) -> String {
    c.map_or(String::new(), |c| {
        format!(" {:?}({} B)", c.kind, c.size_bytes)
    })
}

fn phase(p: &PhaseOp) -> String {
    format!(
        "{}k{}{}",
        p.kernels,
        if p.host_sync { " sync" } else { "" },
        comm(&p.comm)
    )
}

/// One layer's ops of stage 0 (the ops of the first transformer layer):
/// name, then forward / input-gradient / weight-gradient kernels, syncs
/// and collectives.
fn first_layer(j: &ModelJob) -> String {
    let d = described_job(j, "snapshot");
    let mut out = String::new();
    for o in &d.stages[0].blocks[0].ops {
        if o.block_index != Some(0) {
            continue;
        }
        writeln!(
            out,
            "{:<28} fwd {:<34} ig {:<34} wg {}",
            o.name,
            phase(&o.forward),
            phase(&o.input_grad),
            phase(&o.weight_grad)
        )
        .unwrap();
    }
    out
}

#[test]
fn moe_layer_kernels_and_collectives_per_dispatcher() {
    let mut all = String::new();
    for d in Dispatcher::ALL {
        for fusion in [Some(true), Some(false)] {
            let stack = StackSettings {
                dispatcher: d,
                moe_fusion: fusion,
                ..StackSettings::default()
            };
            let j = job("qwen3-30b-a3b", 16, 16, stack);
            writeln!(all, "## {} fused={:?}", d.name(), fusion.unwrap()).unwrap();
            all.push_str(&first_layer(&j));
        }
    }
    insta::assert_snapshot!("moe_layer_per_dispatcher", all);
}

#[test]
fn dense_layer_kernels_per_stack() {
    let mut all = String::new();
    for s in Stack::ALL {
        let stack = StackSettings {
            stack: s,
            ..StackSettings::default()
        };
        writeln!(all, "## {}", s.name()).unwrap();
        all.push_str(&first_layer(&job("llama3-8b", 8, 1, stack)));
    }
    insta::assert_snapshot!("dense_layer_per_stack", all);
}

#[test]
fn grouped_gemm_runs_one_gemm_per_local_expert_at_its_share() {
    let j = job("qwen3-30b-a3b", 16, 8, StackSettings::default());
    let s = shape(&j);
    assert_eq!(s.local_experts, 16);
    let ops = j.model.mlp_ops(0, &s);
    let up = ops
        .iter()
        .find(|o| o.name == "experts_up")
        .expect("experts");
    assert_eq!(up.forward.groups, 16);
    assert_eq!(up.forward.kernels, 16);
    // Each local expert's GEMM: tokens x top-k / experts rows.
    let moe = j.model.moe.as_ref().unwrap();
    let per_expert_rows = s.tokens() * u64::from(moe.top_k) / u64::from(moe.num_experts);
    let per_gemm = up.forward.flops / 16.0;
    let k = j.model.hidden_size as f64;
    let n = 2.0 * moe.expert_ffn_hidden_size as f64;
    assert!(
        (per_gemm / (2.0 * k * n) - (per_expert_rows * 8) as f64).abs() < 1.0,
        "rows per expert GEMM: {}",
        per_gemm / (2.0 * k * n)
    );
}

fn step_ns(j: &ModelJob) -> u64 {
    let c = SimConfig {
        record_dependencies: false,
        ..SimConfig::default()
    };
    run_model(j, &c)
        .expect("runs")
        .run
        .result
        .summary
        .iteration_time_ns
}

#[test]
fn ep_overlap_shortens_an_ep_bound_step_and_imbalance_lengthens_it() {
    let base = StackSettings::default();
    let plain = step_ns(&job("qwen3-30b-a3b", 16, 16, base));
    let overlapped = step_ns(&job(
        "qwen3-30b-a3b",
        16,
        16,
        StackSettings {
            moe_a2a_overlap: true,
            ..base
        },
    ));
    assert!(overlapped < plain, "{overlapped} vs {plain}");
    let skewed = step_ns(&job(
        "qwen3-30b-a3b",
        16,
        16,
        StackSettings {
            moe_imbalance_milli: Some(1500),
            ..base
        },
    ));
    assert!(skewed > plain, "{skewed} vs {plain}");
    let flex = step_ns(&job(
        "qwen3-30b-a3b",
        16,
        16,
        StackSettings {
            dispatcher: Dispatcher::Flex,
            ..base
        },
    ));
    assert!(flex < plain, "{flex} vs {plain}");
}

#[test]
fn ep_overlap_runs_under_every_pipeline_layout() {
    for (pp, vpp) in [(1, 1), (2, 1), (2, 2), (4, 2)] {
        let setup = TrainingSetup {
            pp,
            vpp,
            ep: 4,
            micro_batch_size: 1,
            global_batch_size: Some(128),
            seq_length: 1024,
            stack: StackSettings {
                moe_a2a_overlap: true,
                ..StackSettings::default()
            },
            ..TrainingSetup::default()
        };
        let j = ModelJob::new(
            presets::preset("qwen3-30b-a3b").unwrap(),
            setup,
            gpu_preset("H100-SXM").unwrap(),
            Some(16 * pp),
        )
        .expect("job");
        let with = step_ns(&j);
        let mut plain = j.clone();
        plain.setup.stack.moe_a2a_overlap = false;
        let without = step_ns(&plain);
        // Overlap reorders and relaxes; it never makes a step much slower.
        assert!(
            with as f64 <= without as f64 * 1.02,
            "PP {pp} VPP {vpp}: {with} with overlap, {without} without"
        );
    }
}

#[test]
fn moe_settings_change_nothing_on_a_dense_model() {
    let dense = |stack| job("llama3.2-1b", 8, 1, stack);
    let base = step_ns(&dense(StackSettings::default()));
    let set = StackSettings {
        dispatcher: Dispatcher::Flex,
        moe_fusion: Some(false),
        moe_imbalance_milli: Some(2000),
        moe_a2a_overlap: true,
        ..StackSettings::default()
    };
    assert_eq!(step_ns(&dense(set)), base);
}
