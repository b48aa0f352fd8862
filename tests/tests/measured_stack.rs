//! The software stack's constants and the MoE layer against measurements
//! on an NVIDIA H200 they were not fitted to (`scripts/measure-gpu.py
//! --only=launch,moe`, data and method in `tests/fixtures/measured/h200/`):
//! the launch queue's depth, a CUDA graph's host cost per replay, the host
//! cost per kernel of an eager PyTorch loop over experts, and the routed
//! experts' GPU time of four published MoE models' layers as one
//! expert-parallel rank runs them. Each test prints its table (the README
//! quotes it) and fails only on a regression past the stated tolerance.

use trainscope_core::hardware::gpu_preset;
use trainscope_core::job::build::described_job;
use trainscope_core::job::{ModelJob, TrainingSetup};
use trainscope_core::model::presets;
use trainscope_core::model::stack::{
    Stack, StackSettings, EAGER_LAUNCH_NS, GRAPH_LAUNCH_NS, LAUNCH_QUEUE_DEPTH,
};
use trainscope_tests::{csv_num, csv_rows, median, one_gpu_setup, CsvRow};

const DIR: &str = "measured/h200";
/// Both runs of each section: two machines, same image.
const LAUNCH: [&str; 2] = ["launch.csv", "launch-repeat.csv"];
const MOE: [&str; 2] = ["moe.csv", "moe-repeat.csv"];

fn launch_value(file: &str, kind: &str, what: &str) -> f64 {
    let rows = csv_rows(DIR, file);
    let r = rows
        .iter()
        .find(|r| r["kind"] == kind && r["what"] == what)
        .unwrap_or_else(|| panic!("{file}: no {kind} / {what}"));
    csv_num(r, "value")
}

/// `LAUNCH_QUEUE_DEPTH` was an assumption taken from a forum post (about
/// 1,000 pending kernels per stream); the H200 accepted 1,021 launches
/// behind a running kernel before the next one blocked, on both machines.
#[test]
fn the_launch_queue_holds_about_1024_kernels() {
    for file in LAUNCH {
        let measured = launch_value(
            file,
            "queue_depth",
            "launches accepted behind a running kernel before one blocks",
        );
        let err = f64::from(LAUNCH_QUEUE_DEPTH) / measured - 1.0;
        println!(
            "{file}: queue depth measured {measured}, model {LAUNCH_QUEUE_DEPTH} ({:+.1}%)",
            err * 100.0
        );
        assert!(err.abs() < 0.01, "{file}: {measured}");
    }
}

/// The host cost of one CUDA graph launch: the model charges
/// `GRAPH_LAUNCH_NS` per captured region (an assumption that includes the
/// Python of a graphed callable around the replay); a bare `replay()` from
/// Python measured 2.5-6.3 us for graphs of 1 to 1,000 kernels. The
/// constant must stay above the bare replay and within the same order.
#[test]
fn a_graph_replay_costs_the_host_a_few_microseconds() {
    for file in LAUNCH {
        for kernels in [1, 10, 100, 1000] {
            let us = launch_value(file, "graph", &format!("replay of {kernels} kernels, host"));
            let model_us = GRAPH_LAUNCH_NS as f64 / 1e3;
            println!("{file}: replay of {kernels} kernels {us:.2} us, model {model_us:.1} us");
            assert!(us < model_us && model_us < 10.0 * us, "{file}: {us}");
        }
    }
}

/// Variants that ran host-bound (eager wall time well past the GPU's own
/// time under a graph): the host's time per launched kernel is the eager
/// time over the kernels, for the eager stack's constant to be judged on.
#[test]
fn eager_host_cost_per_kernel_of_a_loop_over_experts() {
    println!("| run | layer | variant | kernels | eager (ms) | GPU (ms) | host us/kernel | model | error |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|");
    let model_us = EAGER_LAUNCH_NS as f64 / 1e3;
    let mut errors = Vec::new();
    for file in MOE {
        for r in csv_rows(DIR, file) {
            let (eager, gpu, kernels) = (
                csv_num(&r, "eager_ms"),
                csv_num(&r, "gpu_ms"),
                csv_num(&r, "kernels"),
            );
            if eager < 1.5 * gpu || kernels < 100.0 {
                continue;
            }
            let us = eager * 1e3 / kernels;
            let err = model_us / us - 1.0;
            errors.push(err);
            println!(
                "| {file} | {} | {} | {kernels} | {eager:.2} | {gpu:.2} | {us:.1} | {model_us:.0} | {:+.0}% |",
                r["shape"],
                r["variant"],
                err * 100.0
            );
        }
    }
    let med = median(errors.clone());
    println!(
        "{} host-bound variants: the model's {model_us:.0} us per kernel is {:+.0}% (median) of the measured",
        errors.len(),
        med * 100.0
    );
    assert!(errors.len() >= 4, "host-bound variants: {}", errors.len());
    assert!(med.abs() < 0.5, "median {med}");
}

/// The measured layers: (shape label in the CSV, preset, EP, micro-batch,
/// sequence length) with one micro-batch of `tokens` tokens per rank.
const LAYERS: [(&str, &str, u32, u32, u32); 5] = [
    ("qwen3-30b-a3b ep8", "qwen3-30b-a3b", 8, 1, 4096),
    ("qwen3-30b-a3b ep8 16k tokens", "qwen3-30b-a3b", 8, 4, 4096),
    ("qwen3-235b-a22b ep32", "qwen3-235b-a22b", 32, 1, 4096),
    ("deepseek-v3 ep64", "deepseek-v3", 64, 1, 4096),
    ("mixtral-8x7b ep8", "mixtral-8x7b", 8, 1, 4096),
];

/// The routed experts of one MoE layer (forward, input and weight
/// gradients of the up GEMM, SwiGLU and down GEMM) on one rank, as the
/// model builds it for an H200 at TP 1 with `ep` expert-parallel ranks on
/// the eager PyTorch stack: (GPU ms, host launch ms, kernels). The
/// benchmark's weights are bf16 tensors (no autocast, so no casts): bf16
/// gradients say so.
fn predicted_experts(preset: &str, ep: u32, mbs: u32, seq: u32) -> (f64, f64, u32) {
    let setup = TrainingSetup {
        tp: 1,
        pp: 1,
        ep,
        micro_batch_size: mbs,
        global_batch_size: Some(mbs * ep),
        seq_length: seq,
        bf16_grads: true,
        stack: StackSettings {
            stack: Stack::PytorchEager,
            ..StackSettings::default()
        },
        ..TrainingSetup::default()
    };
    let mut model = presets::preset(preset).expect("preset");
    // The measured layer runs the routed experts only (DeepSeek-V3's shared
    // expert is a dense MLP beside them, in the same op here).
    if let Some(moe) = model.moe.as_mut() {
        moe.num_shared_experts = 0;
    }
    let job = ModelJob::new(model, setup, gpu_preset("H200").unwrap(), Some(ep)).expect("job");
    let d = described_job(&job, "measured");
    let op = d.stages[0].blocks[0]
        .ops
        .iter()
        .find(|o| o.name.starts_with("moe_experts."))
        .expect("an MoE layer");
    let phases = [op.forward, op.input_grad, op.weight_grad];
    (
        phases.iter().map(|p| p.compute_ns).sum::<u64>() as f64 / 1e6,
        phases.iter().map(|p| p.launch_ns).sum::<u64>() as f64 / 1e6,
        phases.iter().map(|p| p.kernels).sum(),
    )
}

fn measured_row<'a>(rows: &'a [CsvRow], shape: &str, variant_prefix: &str) -> &'a CsvRow {
    rows.iter()
        .find(|r| {
            r["shape"] == shape
                && r["variant"].starts_with(variant_prefix)
                && !r["variant"].contains("views")
        })
        .unwrap_or_else(|| panic!("{shape}: {variant_prefix}"))
}

fn measured(rows: &[CsvRow], shape: &str, variant_prefix: &str) -> f64 {
    csv_num(measured_row(rows, shape, variant_prefix), "gpu_ms")
}

/// The model runs a layer's routed experts as one GEMM per local expert,
/// each on the GEMM curve at its own size (fitted on the H100's dense
/// sweep; nothing here was fitted). Measured: the same work as a loop of
/// separate GEMMs (Megatron's SequentialMLP) and as `torch._grouped_mm`,
/// each the GPU's own time under a CUDA graph, mean of the two runs.
#[test]
fn routed_experts_gpu_time_on_h200() {
    let runs: Vec<Vec<CsvRow>> = MOE.iter().map(|f| csv_rows(DIR, f)).collect();
    println!("| layer (one rank) | local experts x rows | measured loop (ms) | measured grouped (ms) | predicted (ms) | error vs loop | vs grouped |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    let (mut vs_loop, mut vs_grouped) = (Vec::new(), Vec::new());
    for (shape, preset, ep, mbs, seq) in LAYERS {
        let mean = |prefix: &str| {
            runs.iter().map(|r| measured(r, shape, prefix)).sum::<f64>() / runs.len() as f64
        };
        let (lp, grouped) = (mean("experts: loop of"), mean("experts: torch._grouped_mm"));
        let (predicted, _, _) = predicted_experts(preset, ep, mbs, seq);
        let row = runs[0].iter().find(|r| r["shape"] == shape).expect("shape");
        let (el, eg) = (predicted / lp - 1.0, predicted / grouped - 1.0);
        vs_loop.push(el.abs());
        vs_grouped.push(eg.abs());
        println!(
            "| {shape} | {} x {} | {lp:.2} | {grouped:.2} | {predicted:.2} | {:+.1}% | {:+.1}% |",
            row["local_experts"],
            row["rows_per_expert"],
            el * 100.0,
            eg * 100.0
        );
    }
    let (ml, mg) = (median(vs_loop.clone()), median(vs_grouped.clone()));
    println!(
        "median |error|: {:.1}% against the loop, {:.1}% against torch._grouped_mm",
        ml * 100.0,
        mg * 100.0
    );
    assert!(ml < 0.25, "median vs loop {ml}");
    assert!(mg < 0.25, "median vs grouped {mg}");
}

/// The same experts as eager PyTorch launches them (a Python loop over the
/// local experts, SequentialMLP's way): the model's host launch time and
/// kernel count for the op against the measured eager wall time of the
/// loop (host-bound where it exceeds the GPU's time) and its profiled
/// kernels, mean of the two runs.
#[test]
fn routed_experts_host_time_eager() {
    let runs: Vec<Vec<CsvRow>> = MOE.iter().map(|f| csv_rows(DIR, f)).collect();
    println!("| layer (one rank) | measured kernels | predicted kernels | measured eager (ms) | measured GPU (ms) | predicted host (ms) | predicted GPU (ms) | error max(host, GPU) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut errors = Vec::new();
    for (shape, preset, ep, mbs, seq) in LAYERS {
        let eager = runs
            .iter()
            .map(|r| csv_num(measured_row(r, shape, "experts: loop of"), "eager_ms"))
            .sum::<f64>()
            / runs.len() as f64;
        let r = measured_row(&runs[0], shape, "experts: loop of");
        let (gpu, host, kernels) = predicted_experts(preset, ep, mbs, seq);
        let err = host.max(gpu) / eager - 1.0;
        errors.push(err.abs());
        println!(
            "| {shape} | {} | {kernels} | {eager:.2} | {:.2} | {host:.2} | {gpu:.2} | {:+.1}% |",
            r["kernels"],
            csv_num(r, "gpu_ms"),
            err * 100.0
        );
    }
    let m = median(errors);
    println!("median |error| {:.1}%", m * 100.0);
    assert!(m < 0.35, "median {m}");
}

/// Gradient accumulation on the H200 (`accum.csv`: one optimizer step over
/// k micro-batches of one 2,048-token sequence, HF transformers eager, the
/// training steps' recipe) against the model's step for the same job
/// (micro-batch 1, global batch k, `pytorch-eager`): the step time and its
/// growth per added micro-batch. Nothing fitted.
#[test]
fn gradient_accumulation_steps_on_h200() {
    use trainscope_core::engine::SimConfig;
    use trainscope_core::formats::hf;
    use trainscope_core::job::run::run_model;
    println!("| model | micro-batches | measured (ms) | predicted (ms) | error | measured per micro-batch (ms) | predicted |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut errors = Vec::new();
    let mut first: Option<(String, f64)> = None;
    for r in csv_rows(DIR, "accum.csv") {
        let name = r["model"].clone();
        let k = csv_num(&r, "accumulation") as u32;
        let rel = format!("{DIR}/config-{name}.json");
        let text = String::from_utf8(trainscope_tests::fixture_bytes(&rel)).unwrap();
        let (spec, _) = hf::parse(&rel, &text).unwrap();
        let setup = one_gpu_setup(Stack::PytorchEager, 1, k, csv_num(&r, "seq") as u32);
        let job = ModelJob::new(spec, setup, gpu_preset("H200").unwrap(), Some(1)).unwrap();
        let out = run_model(&job, &SimConfig::default()).unwrap();
        let predicted = out.run.summary().iteration_time_ns as f64 / 1e6;
        let measured = csv_num(&r, "step_ms");
        let e = predicted / measured - 1.0;
        errors.push(e.abs());
        if k == 1 {
            first = Some((name.clone(), predicted));
        }
        let per_predicted = match (&first, k) {
            (Some((n, p1)), k) if *n == name && k > 1 => {
                format!("{:.1}", (predicted - p1) / f64::from(k - 1))
            }
            _ => String::new(),
        };
        println!(
            "| {name} | {k} | {measured:.1} | {predicted:.1} | {:+.1}% | {} | {per_predicted} |",
            e * 100.0,
            r["per_micro_batch_ms"]
                .parse::<f64>()
                .map_or(String::new(), |v| format!("{v:.1}"))
        );
    }
    let m = median(errors.clone());
    println!("{} steps, median |error| {:.1}%", errors.len(), m * 100.0);
    assert_eq!(errors.len(), 8);
    assert!(m < 0.45, "median {m}");
}
