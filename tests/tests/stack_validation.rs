//! The same model under two software settings (issue 24): the ratio of the
//! predicted iteration times against the measured ratio, from sources that
//! publish both (`docs/SOFTWARE-STACK-DATA.md`, "Validation cases"). The
//! test prints the table the README shows and guards only what the model
//! claims to get right; nothing here is fitted to these cases.
//!
//! Run `cargo test -p trainscope-tests --test stack_validation -- --nocapture`.

use trainscope_core::engine::SimConfig;
use trainscope_core::hardware::{gpu_preset, NicType, Precision};
use trainscope_core::job::run::run_model;
use trainscope_core::job::{ModelJob, Recompute, TrainingSetup};
use trainscope_core::model::dispatcher::Dispatcher;
use trainscope_core::model::presets;
use trainscope_core::model::stack::{CudaGraphs, Stack, StackSettings};

/// Iteration time, seconds, of `model` on `world` GPUs of `gpu` with `setup`.
fn predict(model: &str, gpu: &str, world: u32, setup: TrainingSetup) -> (f64, u64, u64) {
    let spec = presets::preset(model).unwrap_or_else(|| panic!("no preset {model}"));
    let gpu = gpu_preset(gpu).expect("gpu preset");
    let mut config = SimConfig::default();
    config.network.nvlink_gbps = gpu.nvlink_busbw_gbps;
    config.network.nic_gbps = NicType::Cx7.nic_busbw_gbps();
    config.record_dependencies = false;
    let job = ModelJob::new(spec, setup, gpu, Some(world)).expect("a valid job");
    let out = run_model(&job, &config).expect("simulates");
    let s = &out.run.result.summary;
    (
        s.iteration_time_ns as f64 / 1e9,
        s.host_bound_ns,
        s.sync_stall_ns,
    )
}

/// Kernels the first rank launches per iteration (`kernels_per_iteration`).
fn kernel_count(model: &str, gpu: &str, world: u32, setup: TrainingSetup) -> u64 {
    let spec = presets::preset(model).expect("preset");
    let job = ModelJob::new(spec, setup, gpu_preset(gpu).expect("gpu"), Some(world)).expect("job");
    let config = SimConfig {
        record_dependencies: false,
        summary_only: true,
        ..SimConfig::default()
    };
    run_model(&job, &config)
        .expect("simulates")
        .kernels_per_iteration[0]
}

/// Qwen3-30B-A3B on 16 H100s, BF16, sequence 4096, EP 16, micro-batch 1,
/// global batch 1024, Megatron's all-to-all dispatcher (Megatron-Bridge's
/// CUDA-graph card, pitfall 13: 41.36 s eager, 42.00 s with graphs over
/// attention, router and preprocessing).
fn qwen3_30b(graphs: CudaGraphs) -> TrainingSetup {
    qwen3_30b_with(StackSettings {
        cuda_graphs: graphs,
        ..StackSettings::default()
    })
}

/// [`qwen3_30b`]'s layout under any stack settings.
fn qwen3_30b_with(stack: StackSettings) -> TrainingSetup {
    TrainingSetup {
        ep: 16,
        micro_batch_size: 1,
        global_batch_size: Some(1024),
        seq_length: 4096,
        precision: Precision::Bf16,
        recompute: Recompute::None,
        distributed_optimizer: true,
        bf16_grads: true,
        stack,
        ..TrainingSetup::default()
    }
}

/// The flex dispatcher (HybridEP) with graphs over attention, router and
/// preprocessing, EP overlap on or off (Megatron-Bridge's MoE
/// communication-overlap card).
fn hybridep(overlap: bool) -> StackSettings {
    StackSettings {
        cuda_graphs: CudaGraphs::Layers,
        dispatcher: Dispatcher::Flex,
        moe_a2a_overlap: overlap,
        ..StackSettings::default()
    }
}

#[test]
fn two_settings_of_one_model() {
    println!(
        "\n| model | setting A | setting B | measured A/B | predicted A/B | error | predicted A (s) | host-bound A (ms) |\n|---|---|---|---:|---:|---:|---:|---:|"
    );
    let mut errors = Vec::new();
    // CUDA graphs where the dispatcher's sync point keeps the experts eager.
    let (a, host_a, _) = predict("qwen3-30b-a3b", "H100-SXM", 16, qwen3_30b(CudaGraphs::None));
    let (b, _, _) = predict(
        "qwen3-30b-a3b",
        "H100-SXM",
        16,
        qwen3_30b(CudaGraphs::Layers),
    );
    let measured = 41.36 / 42.00;
    let predicted = a / b;
    let err = predicted / measured - 1.0;
    errors.push(err);
    println!(
        "| Qwen3-30B-A3B, 16 x H100, EP 16, all-to-all | eager | CUDA graphs (layers) | {measured:.3} | {predicted:.3} | {:+.1}% | {a:.2} | {:.1} |",
        err * 100.0,
        host_a as f64 / 1e6
    );
    // Settings of the same Qwen3-30B-A3B job that Megatron-Bridge measured
    // one against the other (docs/SOFTWARE-STACK-DATA.md §8, cases 1, 2
    // and the dispatcher change between them).
    let eager = StackSettings::default();
    let cases: [(&str, StackSettings, &str, StackSettings, f64); 3] = [
        (
            "all-to-all, eager",
            eager,
            "HybridEP, CUDA graphs (layers)",
            hybridep(false),
            41.25 / 24.7138,
        ),
        (
            "HybridEP, graphs, no EP overlap",
            hybridep(false),
            "EP overlap",
            hybridep(true),
            24.7138 / 21.0725,
        ),
        (
            "all-to-all, eager, no EP overlap",
            eager,
            "EP overlap",
            StackSettings {
                moe_a2a_overlap: true,
                ..eager
            },
            41.25 / 31.31,
        ),
    ];
    for (name_a, a_set, name_b, b_set, measured) in cases {
        let (a, host_a, _) = predict("qwen3-30b-a3b", "H100-SXM", 16, qwen3_30b_with(a_set));
        let (b, _, _) = predict("qwen3-30b-a3b", "H100-SXM", 16, qwen3_30b_with(b_set));
        let predicted = a / b;
        let err = predicted / measured - 1.0;
        errors.push(err);
        println!(
            "| Qwen3-30B-A3B, 16 x H100, EP 16 | {name_a} | {name_b} | {measured:.3} | {predicted:.3} | {:+.1}% | {a:.2} | {:.1} |",
            err * 100.0,
            host_a as f64 / 1e6
        );
    }
    // Kernels per iteration: Megatron-Bridge's Nsight comparison of the
    // HybridEP + graphs job "captured the same 463,348 rank-0 kernels per
    // case" (all kernels, communication included; §4 of the data doc).
    // trainscope counts compute kernels only.
    let kernels = kernel_count(
        "qwen3-30b-a3b",
        "H100-SXM",
        16,
        qwen3_30b_with(hybridep(false)),
    );
    let measured_kernels = 463_348.0;
    let kernel_err = kernels as f64 / measured_kernels - 1.0;
    println!(
        "\n| kernels per iteration, rank 0 | measured | predicted | error |\n|---|---:|---:|---:|\n| Qwen3-30B-A3B, 16 x H100, EP 16, HybridEP, graphs | 463348 | {kernels} | {:+.1}% |\n",
        kernel_err * 100.0
    );
    assert!(
        kernel_err.abs() <= 0.35,
        "kernel count {kernels} vs 463348 ({:+.1}%)",
        kernel_err * 100.0
    );
    // Eager vs compiled: the same single-GPU HF Llama 3.2 1B step
    // (tests/fixtures/measured/h100-sxm/train.csv, micro-batch 2 and 4,
    // sequence 2048). trainscope's stacks differ only in the host's cost
    // per kernel: what compilation fuses is not modelled, so the predicted
    // ratio shows how much of the measured one that leaves unexplained.
    for (mbs, eager_ms, compiled_ms) in [(2, 117.01, 89.41), (4, 205.83, 160.07)] {
        let setup = |stack| TrainingSetup {
            micro_batch_size: mbs,
            global_batch_size: Some(mbs),
            seq_length: 2048,
            precision: Precision::Bf16,
            stack: StackSettings {
                stack,
                ..StackSettings::default()
            },
            ..TrainingSetup::default()
        };
        let (a, host_a, _) = predict("llama3.2-1b", "H100-SXM", 1, setup(Stack::PytorchEager));
        let (b, _, _) = predict("llama3.2-1b", "H100-SXM", 1, setup(Stack::TorchCompile));
        let measured = eager_ms / compiled_ms;
        let predicted = a / b;
        let err = predicted / measured - 1.0;
        println!(
            "| Llama 3.2 1B, 1 x H100, micro-batch {mbs} | pytorch-eager | torch-compile | {measured:.3} | {predicted:.3} | {:+.1}% | {a:.3} | {:.1} |",
            err * 100.0,
            host_a as f64 / 1e6
        );
        assert!(predicted >= 1.0, "a cheaper launch never slows a step");
    }
    // The graphs ratio: the dispatcher's sync point keeps the experts'
    // launches exposed, so graphs over the rest buy little (as measured).
    assert!(
        errors.iter().all(|e| e.abs() <= 0.15),
        "ratio errors {errors:?}"
    );
}

/// Qwen3-235B-A22B on 64 B200s (TP 1, PP 8, EP 8, FP8, micro-batch 1,
/// global batch 1024, the all-to-all dispatcher, bf16 gradients):
/// Megatron-Bridge's 25.11 recipe (2 virtual stages, EP overlap) took
/// 20.1 s a step, the same recipe with EP overlap and virtual stages off
/// 16.9 s (pull request #1760: overlap disabled "due to CPU overhead").
/// trainscope prices EP overlap as hidden communication and no host cost
/// of its own, so it predicts the opposite direction: a documented miss
/// (README), guarded so that it does not grow.
#[test]
fn ep_overlap_on_b200_as_megatron_bridge_measured_it() {
    let setup = |vpp: u32, overlap: bool| TrainingSetup {
        pp: 8,
        vpp,
        ep: 8,
        micro_batch_size: 1,
        global_batch_size: Some(1024),
        seq_length: 4096,
        precision: Precision::Fp8,
        recompute: Recompute::None,
        distributed_optimizer: true,
        bf16_grads: true,
        account_for_embedding: true,
        account_for_loss: true,
        stack: StackSettings {
            moe_a2a_overlap: overlap,
            ..StackSettings::default()
        },
        ..TrainingSetup::default()
    };
    let (a, host_a, _) = predict("qwen3-235b-a22b", "B200", 64, setup(2, true));
    let (b, _, _) = predict("qwen3-235b-a22b", "B200", 64, setup(1, false));
    let measured = 20.1 / 16.9;
    let predicted = a / b;
    let err = predicted / measured - 1.0;
    println!(
        "| Qwen3-235B-A22B, 64 x B200, FP8, all-to-all | 2 virtual stages, EP overlap | neither | {measured:.3} | {predicted:.3} | {:+.1}% | {a:.2} | {:.1} |",
        err * 100.0,
        host_a as f64 / 1e6
    );
    assert!(err.abs() <= 0.30, "ratio error {:.1}%", err * 100.0);
}
