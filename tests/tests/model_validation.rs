//! Model-level jobs against published measurements: every case of
//! `tests/fixtures/model_jobs/published.jsonl` (source, configuration and
//! the published iteration time, and where published the peak memory) is
//! rebuilt from its stated configuration and simulated with the defaults a
//! user gets (GPU preset, its NIC, nothing fitted to any case). The test
//! prints the tables the README shows (dense models, then mixture-of-experts
//! models, then all cases together) and fails only when an error regresses
//! beyond the documented tolerance ([`MEDIAN_TOLERANCE`], [`WORST_TOLERANCE`]
//! for the dense cases, [`MOE_MEDIAN_TOLERANCE`] and [`MOE_WORST_TOLERANCE`]
//! for the MoE ones, [`SHARDED_MEDIAN_TOLERANCE`] and
//! [`SHARDED_WORST_TOLERANCE`] for sharded data parallelism: torchtitan's
//! published FSDP2 runs, each with its stack, `torch-compile` or
//! `pytorch-eager`, and `zero` 3).
//!
//! Run `cargo test -p trainscope-tests --test model_validation -- --nocapture`
//! to see the table.

use serde::Deserialize;
use trainscope_core::engine::SimConfig;
use trainscope_core::hardware::NicType;
use trainscope_core::hardware::{gpu_preset, Precision};
use trainscope_core::job::calibrate::fit_compute_scale;
use trainscope_core::job::run::run_model;
use trainscope_core::job::sharding::{Sharding, ZeroStage};
use trainscope_core::job::{ModelJob, Recompute, TrainingSetup};
use trainscope_core::model::attention_kernel::AttentionKernel;
use trainscope_core::model::dispatcher::Dispatcher;
use trainscope_core::model::stack::{CudaGraphs, Stack, StackSettings};
use trainscope_core::model::{presets, Family, ModelSpec};
use trainscope_core::named::Named;
use trainscope_tests::median;

const CASES: &str = include_str!("../fixtures/model_jobs/published.jsonl");

/// Documented accuracy (README "Validation"): the median and the worst
/// absolute error of the predicted iteration time over the table. The test
/// guards against regressions; the numbers are what the model achieves,
/// not targets met by tuning.
const MEDIAN_TOLERANCE: f64 = 0.10;
const WORST_TOLERANCE: f64 = 0.30;
/// Documented accuracy on mixture-of-experts models (the worst absolute
/// error): far from the dense cases' (README "Validation"); a guard, not a
/// target. 65% before the dispatcher's kernels were placed ahead of its
/// sync point (issue 24); 69.0% since the MoE cases run their recipes' EP
/// overlap and dispatcher (the `recipe` field of each case), which the
/// table had left at the defaults; 70.8% since the launch queue holds 1024
/// launches (issue 24): on that case (H100 Qwen3-30B-A3B, EP overlap) the
/// host no longer runs one chain's launches far ahead of the other's, the
/// two chains' launches interleave and the step comes out 6% shorter (an
/// unbounded queue gives the old 69.0%); see [`MOE_MEDIAN_TOLERANCE`].
const MOE_WORST_TOLERANCE: f64 = 0.72;
/// Documented median accuracy on mixture-of-experts models; a guard. It
/// widened from 40% to 50% when Transformer Engine's grouped-GEMM launches
/// (a C++ loop over the experts) were charged the bare launch call instead
/// of a Python op each, and came back to 30% (median 23.6%) when the B200
/// GEMM curve was fitted to SimuMax's measured B200 table and each expert
/// GEMM of the multi-stream loop was charged TE's benchmarked 33 us.
const MOE_MEDIAN_TOLERANCE: f64 = 0.30;
/// Documented accuracy on sharded data parallelism (torchtitan's FSDP2
/// runs and Trainy's, README "Sharded data parallel cases"): every case is
/// predicted faster than measured (median 43.9%, worst 63.6% when the
/// cases were added; 27.6% / 41.5% with PyTorch's eager kernels and
/// FlashAttention-2; 20.4% / 36.2% since torchtitan's rows run on the
/// part they ran on, `H100-96G-500W`: 2.4 TB/s HBM2e, a lower compute
/// peak); far from the 10% / 25% targets, a guard.
const SHARDED_MEDIAN_TOLERANCE: f64 = 0.25;
const SHARDED_WORST_TOLERANCE: f64 = 0.40;
/// Documented accuracy of predictions calibrated on another case of the
/// same model and GPU (median absolute error).
const CALIBRATED_MEDIAN_TOLERANCE: f64 = 0.10;

#[derive(Deserialize)]
struct Dims {
    preset: Option<String>,
    family: Option<String>,
    hidden_size: Option<u64>,
    num_layers: Option<u32>,
    num_attention_heads: Option<u32>,
    num_kv_heads: Option<u32>,
    ffn_hidden_size: Option<u64>,
    vocab_size: Option<u64>,
    max_position_embeddings: Option<u64>,
    tied_embeddings: Option<bool>,
}

#[derive(Deserialize)]
struct Case {
    id: String,
    model: Dims,
    gpu: String,
    nic: String,
    world: u32,
    tp: u32,
    pp: u32,
    vpp: u32,
    sequence_parallel: bool,
    micro_batch_size: u32,
    global_batch_size: u32,
    seq_length: u32,
    precision: String,
    recompute: String,
    distributed_optimizer: bool,
    /// Expert parallelism (absent: 1).
    ep: Option<u32>,
    /// Expert tensor parallelism (absent: TP).
    expert_tp: Option<u32>,
    /// Context parallelism (absent: 1).
    cp: Option<u32>,
    /// Megatron's embedding / loss counted as layers in the pipeline
    /// split (absent: false).
    #[serde(default)]
    account_for_embedding: bool,
    #[serde(default)]
    account_for_loss: bool,
    /// Gradients kept and reduced in bf16 (the recipe's grad_reduce_in_fp32
    /// = False; absent: false).
    #[serde(default)]
    bf16_grads: bool,
    /// Linear weights stored and all-gathered in FP8 (the recipe's
    /// fp8_param_gather; absent: false).
    #[serde(default)]
    fp8_param_gather: bool,
    /// CUDA graphs as the recipe sets them (`none`, `layers`, `full`;
    /// absent: none).
    #[serde(default)]
    cuda_graphs: Option<String>,
    /// Megatron's token dispatcher as the recipe sets it (`alltoall`,
    /// `allgather`, `flex`; absent: alltoall). The MoE cases cite the
    /// recipe file in their `recipe` field.
    #[serde(default)]
    moe_token_dispatcher: Option<String>,
    /// Megatron's EP overlap as the recipe sets it (absent: off).
    #[serde(default)]
    moe_a2a_overlap: bool,
    /// A fused (flash) attention kernel; absent: true (every source after
    /// 2023 runs one).
    flash_attention: Option<bool>,
    /// The ZeRO stage (`--zero`; 3 is FSDP; absent: what
    /// `distributed_optimizer` says).
    #[serde(default)]
    zero: Option<u8>,
    /// The software stack (`--stack`: `megatron-te`, `pytorch-eager`,
    /// `torch-compile`; absent: megatron-te).
    #[serde(default)]
    stack: Option<String>,
    /// The fused attention kernel the run's software picked
    /// (`--attention-kernel`: `cudnn`, `flash2`; absent: cudnn), with its
    /// reasoning in the case's notes.
    #[serde(default)]
    attention_kernel: Option<String>,
    iteration_time_s: f64,
    peak_memory_gib_last_stage: Option<f64>,
    /// Where the run's publisher reports that this software state was
    /// regressed (a performance bug the model does not contain); such a
    /// case stays in every figure and is also reported apart.
    #[serde(default)]
    known_regression: Option<String>,
}

fn model(id: &str, d: &Dims) -> ModelSpec {
    if let Some(p) = &d.preset {
        return presets::preset(p).unwrap_or_else(|| panic!("{id}: no preset {p}"));
    }
    let gpt = d.family.as_deref() == Some("gpt");
    let h = d.hidden_size.expect("hidden_size");
    let a = d.num_attention_heads.expect("heads");
    ModelSpec {
        name: id.to_string(),
        source: "tests/fixtures/model_jobs/published.jsonl".to_string(),
        family: if gpt { Family::Gpt } else { Family::Llama },
        hidden_size: h,
        num_layers: d.num_layers.expect("layers"),
        num_attention_heads: a,
        num_kv_heads: d.num_kv_heads.unwrap_or(a),
        head_dim: h / u64::from(a),
        ffn_hidden_size: d.ffn_hidden_size.expect("ffn"),
        gated_mlp: !gpt,
        vocab_size: d.vocab_size.expect("vocab"),
        max_position_embeddings: d.max_position_embeddings.unwrap_or(4096),
        learned_positions: gpt,
        tied_embeddings: d.tied_embeddings.unwrap_or(gpt),
        linear_bias: gpt,
        layernorm: gpt,
        moe: None,
        mla: None,
    }
}

/// The tables of the validation: each has its own median and worst.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Dense models without sharded data parallelism.
    Dense,
    /// Mixture-of-experts models.
    Moe,
    /// Sharded data parallelism (ZeRO-2 / ZeRO-3 / FSDP).
    Sharded,
}

struct Row {
    id: String,
    /// Which table the case belongs to (prints in it, counts in its
    /// median and worst).
    kind: Kind,
    /// Same model on the same GPU: the cases a calibration carries over to.
    group: String,
    job: ModelJob,
    config: SimConfig,
    published_s: f64,
    predicted_s: f64,
    mfu: f64,
    memory: Option<(f64, f64)>,
    /// The publisher reports this run's software as regressed.
    regressed: bool,
}

fn evaluate(c: &Case) -> Row {
    let spec = model(&c.id, &c.model);
    let setup = TrainingSetup {
        tp: c.tp,
        pp: c.pp,
        dp: None,
        cp: c.cp.unwrap_or(1),
        ep: c.ep.unwrap_or(1),
        expert_tp: c.expert_tp,
        vpp: c.vpp,
        sequence_parallel: c.sequence_parallel,
        micro_batch_size: c.micro_batch_size,
        global_batch_size: Some(c.global_batch_size),
        seq_length: c.seq_length,
        precision: Precision::from_name(&c.precision).expect("precision"),
        recompute: Recompute::from_name(&c.recompute).expect("recompute"),
        distributed_optimizer: c.distributed_optimizer,
        flash_attention: c.flash_attention.unwrap_or(true),
        first_stage_layers: None,
        last_stage_layers: None,
        account_for_embedding: c.account_for_embedding,
        account_for_loss: c.account_for_loss,
        bf16_grads: c.bf16_grads,
        fp8_param_gather: c.fp8_param_gather,
        stack: StackSettings {
            cuda_graphs: c
                .cuda_graphs
                .as_deref()
                .map(|g| CudaGraphs::from_name(g).expect("cuda_graphs"))
                .unwrap_or_default(),
            dispatcher: c
                .moe_token_dispatcher
                .as_deref()
                .map(|d| Dispatcher::parse(d).expect("moe_token_dispatcher"))
                .unwrap_or_default(),
            moe_a2a_overlap: c.moe_a2a_overlap,
            attention_kernel: c
                .attention_kernel
                .as_deref()
                .map(|k| AttentionKernel::parse(k).expect("attention_kernel"))
                .unwrap_or_default(),
            stack: c
                .stack
                .as_deref()
                .map(|n| Stack::from_name(n).expect("stack"))
                .unwrap_or_default(),
            ..StackSettings::default()
        },
        sharding: Sharding {
            zero: c
                .zero
                .map(|z| ZeroStage::from_level(z).expect("zero"))
                .unwrap_or_default(),
            ..Sharding::default()
        },
    };
    let gpu = gpu_preset(&c.gpu).unwrap_or_else(|| panic!("{}: no GPU {}", c.id, c.gpu));
    let nvlink_gbps = gpu.nvlink_busbw_gbps;
    let job =
        ModelJob::new(spec, setup, gpu, Some(c.world)).unwrap_or_else(|e| panic!("{}: {e}", c.id));
    let mut config = SimConfig::default();
    // What `--gpu-type` and `--nic-type` set on the command line.
    config.network.nvlink_gbps = nvlink_gbps;
    config.network.nic_gbps = NicType::from_name(&c.nic).expect("nic").nic_busbw_gbps();
    config.record_dependencies = false;
    let out = run_model(&job, &config).unwrap_or_else(|e| panic!("{}: {e}", c.id));
    let job = job.clone();
    let memory = c.peak_memory_gib_last_stage.map(|m| {
        let last = out.memory.per_stage.last().expect("a stage");
        (m, last.allocated_bytes as f64 / (1u64 << 30) as f64)
    });
    let group = format!(
        "{}/{}/{}/zero{}",
        c.model.preset.clone().unwrap_or_else(|| format!(
            "h{}-l{}-v{}",
            c.model.hidden_size.unwrap_or(0),
            c.model.num_layers.unwrap_or(0),
            c.model.vocab_size.unwrap_or(0)
        )),
        c.gpu,
        job.setup.stack.stack.name(),
        job.setup.sharding.zero.level()
    );
    Row {
        id: c.id.clone(),
        kind: if job.model.moe.is_some() {
            Kind::Moe
        } else if job.setup.sharding.zero >= ZeroStage::Gradients {
            Kind::Sharded
        } else {
            Kind::Dense
        },
        group,
        job,
        config,
        published_s: c.iteration_time_s,
        predicted_s: out.run.summary().iteration_time_ns as f64 / 1e9,
        mfu: out.throughput.mfu,
        memory,
        regressed: c.known_regression.is_some(),
    }
}

#[test]
fn published_measurements_table() {
    let cases: Vec<Case> = CASES
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a case"))
        .collect();
    assert!(cases.len() >= 15, "the table has {} cases", cases.len());
    let rows: Vec<Row> = cases.iter().map(evaluate).collect();
    let mut errors = Vec::new();
    let mut moe_errors = Vec::new();
    // |error| of the cases whose publisher does not report a regression.
    let mut unregressed = Vec::new();
    let mut sharded_errors = Vec::new();
    for (title, kind) in [
        ("case", Kind::Dense),
        ("MoE case", Kind::Moe),
        ("sharded data parallel case", Kind::Sharded),
    ] {
        println!(
            "\n| {title} | published (s) | predicted (s) | error | predicted MFU |\n|---|---:|---:|---:|---:|"
        );
        for r in rows.iter().filter(|r| r.kind == kind) {
            let e = (r.predicted_s - r.published_s) / r.published_s;
            match kind {
                Kind::Dense => &mut errors,
                Kind::Moe => &mut moe_errors,
                Kind::Sharded => &mut sharded_errors,
            }
            .push(e.abs());
            if !r.regressed {
                unregressed.push((kind, e.abs()));
            }
            println!(
                "| {}{} | {:.3} | {:.3} | {:+.1}% | {:.1}% |",
                r.id,
                if r.regressed { " (regressed)" } else { "" },
                r.published_s,
                r.predicted_s,
                e * 100.0,
                r.mfu * 100.0
            );
        }
    }
    let worst_of = |e: &[f64]| e.iter().copied().fold(0.0, f64::max);
    let med = median(errors.clone());
    let worst = worst_of(&errors);
    let moe_worst = worst_of(&moe_errors);
    let sharded_worst = worst_of(&sharded_errors);
    let all: Vec<f64> = errors
        .iter()
        .chain(&moe_errors)
        .chain(&sharded_errors)
        .copied()
        .collect();
    println!(
        "\niteration time, dense models: {} cases, median |error| {:.1}%, worst {:.1}%",
        errors.len(),
        med * 100.0,
        worst * 100.0
    );
    println!(
        "iteration time, MoE models: {} cases, median |error| {:.1}%, worst {:.1}%",
        moe_errors.len(),
        median(moe_errors.clone()) * 100.0,
        moe_worst * 100.0
    );
    println!(
        "iteration time, sharded data parallel: {} cases, median |error| {:.1}%, worst {:.1}%",
        sharded_errors.len(),
        median(sharded_errors.clone()) * 100.0,
        sharded_worst * 100.0
    );
    let megatron: Vec<f64> = errors.iter().chain(&moe_errors).copied().collect();
    println!(
        "iteration time, Megatron-style cases (dense and MoE): {} cases, median |error| {:.1}%, worst {:.1}%",
        megatron.len(),
        median(megatron.clone()) * 100.0,
        worst_of(&megatron) * 100.0
    );
    println!(
        "iteration time, all cases: {} cases, median |error| {:.1}%, worst {:.1}%",
        all.len(),
        median(all.clone()) * 100.0,
        worst_of(&all) * 100.0
    );
    // The same figures without the runs their publisher reports regressed
    // (the `known_regression` of each case says where).
    for (label, kinds) in [
        ("MoE models", &[Kind::Moe][..]),
        (
            "Megatron-style cases (dense and MoE)",
            &[Kind::Dense, Kind::Moe][..],
        ),
        ("all cases", &[Kind::Dense, Kind::Moe, Kind::Sharded][..]),
    ] {
        let e: Vec<f64> = unregressed
            .iter()
            .filter(|(k, _)| kinds.contains(k))
            .map(|(_, e)| *e)
            .collect();
        println!(
            "iteration time, {label} without the runs reported regressed: {} cases, median |error| {:.1}%, worst {:.1}%",
            e.len(),
            median(e.clone()) * 100.0,
            worst_of(&e) * 100.0
        );
    }
    println!(
        "\n| case | measured peak (GiB) | predicted peak (GiB) | error |\n|---|---:|---:|---:|"
    );
    for r in &rows {
        if let Some((m, p)) = r.memory {
            println!(
                "| {} | {:.1} | {:.1} | {:+.1}% |",
                r.id,
                m,
                p,
                (p - m) / m * 100.0
            );
        }
    }
    // Calibrated on one case, predicted for the others of the same model
    // and GPU (another layout, recompute or scale): the fitted case itself
    // is not counted.
    println!("\n| calibrated on | predicted | published (s) | predicted (s) | error |\n|---|---|---:|---:|---:|");
    let mut calibrated = Vec::new();
    for (i, a) in rows.iter().enumerate() {
        if rows[..i].iter().any(|r| r.group == a.group) {
            continue; // calibrate on the first case of each group
        }
        let target = (a.published_s * 1e9) as u64;
        let fit = fit_compute_scale(&a.job, &a.config, target).expect("fit");
        for b in rows[i + 1..].iter().filter(|r| r.group == a.group) {
            let mut c = b.config.clone();
            c.compute_scale = fit.compute_scale;
            let t = run_model(&b.job, &c)
                .expect("runs")
                .run
                .summary()
                .iteration_time_ns as f64
                / 1e9;
            let e = (t - b.published_s) / b.published_s;
            calibrated.push(e.abs());
            println!(
                "| {} | {} | {:.3} | {:.3} | {:+.1}% |",
                a.id,
                b.id,
                b.published_s,
                t,
                e * 100.0
            );
        }
    }
    let cal_med = median(calibrated.clone());
    let cal_worst = calibrated.iter().copied().fold(0.0, f64::max);
    println!(
        "\ncalibrated predictions: {} cases, median |error| {:.1}%, worst {:.1}%",
        calibrated.len(),
        cal_med * 100.0,
        cal_worst * 100.0
    );
    assert!(
        calibrated.len() >= 8,
        "{} calibrated cases",
        calibrated.len()
    );
    assert!(
        cal_med <= CALIBRATED_MEDIAN_TOLERANCE,
        "calibrated median error {:.1}% regressed beyond {:.0}%",
        cal_med * 100.0,
        CALIBRATED_MEDIAN_TOLERANCE * 100.0
    );
    assert!(
        med <= MEDIAN_TOLERANCE,
        "median error {:.1}% regressed beyond {:.0}%",
        med * 100.0,
        MEDIAN_TOLERANCE * 100.0
    );
    assert!(
        worst <= WORST_TOLERANCE,
        "worst error {:.1}% regressed beyond {:.0}%",
        worst * 100.0,
        WORST_TOLERANCE * 100.0
    );
    assert!(
        sharded_errors.len() >= 10,
        "{} sharded cases",
        sharded_errors.len()
    );
    let sharded_median = median(sharded_errors.clone());
    assert!(
        sharded_median <= SHARDED_MEDIAN_TOLERANCE,
        "median sharded error {:.1}% regressed beyond {:.0}%",
        sharded_median * 100.0,
        SHARDED_MEDIAN_TOLERANCE * 100.0
    );
    assert!(
        sharded_worst <= SHARDED_WORST_TOLERANCE,
        "worst sharded error {:.1}% regressed beyond {:.0}%",
        sharded_worst * 100.0,
        SHARDED_WORST_TOLERANCE * 100.0
    );
    assert!(moe_errors.len() >= 2, "{} MoE cases", moe_errors.len());
    let moe_median = median(moe_errors.clone());
    assert!(
        moe_median <= MOE_MEDIAN_TOLERANCE,
        "median MoE error {:.1}% regressed beyond {:.0}%",
        moe_median * 100.0,
        MOE_MEDIAN_TOLERANCE * 100.0
    );
    assert!(
        moe_worst <= MOE_WORST_TOLERANCE,
        "worst MoE error {:.1}% regressed beyond {:.0}%",
        moe_worst * 100.0,
        MOE_WORST_TOLERANCE * 100.0
    );
}
