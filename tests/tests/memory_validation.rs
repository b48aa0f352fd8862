//! "Does it fit?" against runs that were trained: every case of
//! `tests/fixtures/model_jobs/published.jsonl` is rebuilt from its stated
//! configuration (as `model_validation` rebuilds it) and its memory per
//! stage computed from the schedule's closed-form peak (1F1B / interleaved,
//! the same count the simulation holds). A run that was trained must fit:
//! the test prints each case's margin (capacity less the largest stage's
//! device peak) and fails when one is reported as not fitting. Where the
//! source publishes the peak allocated memory (Megatron-LM's CI golden
//! values), the predicted allocator peak is compared with it (median and
//! worst |error| guarded by [`MEDIAN_TOLERANCE`], [`WORST_TOLERANCE`]);
//! where it publishes the peak reserved memory (torchtitan's
//! `max_memory_reserved`, the largest over ranks), the predicted allocated
//! peak plus fragmentation is compared with it ([`RESERVED_MEDIAN_TOLERANCE`],
//! [`RESERVED_WORST_TOLERANCE`]). Each case runs on the preset of the part
//! it ran on (torchtitan's 96 GB HBM2e H100s: `H100-96G-500W`).
//!
//! Run `cargo test -p trainscope-tests --test memory_validation -- --nocapture`
//! to see the table the README shows.

use serde_json::Value;
use trainscope_core::engine::ScheduleKind;
use trainscope_core::hardware::{gpu_preset, Precision};
use trainscope_core::job::memory::{memory_report, MemoryReport};
use trainscope_core::job::run::peak_in_flight;
use trainscope_core::job::sharding::{Sharding, ZeroStage};
use trainscope_core::job::{ModelJob, Recompute, TrainingSetup};
use trainscope_core::model::stack::{CudaGraphs, Stack, StackSettings};
use trainscope_core::model::{presets, Family, ModelSpec};
use trainscope_core::named::Named;
use trainscope_tests::median;

const CASES: &str = include_str!("../fixtures/model_jobs/published.jsonl");

/// Documented accuracy of the allocator peak (README "Memory: parts and
/// validation"): a guard against regressions, not a fitted target.
const MEDIAN_TOLERANCE: f64 = 0.10;
const WORST_TOLERANCE: f64 = 0.20;

/// Trained runs the memory model still reports as not fitting (known
/// misses, listed in the README with their margins): NeMo 24.07's GPT-3
/// 175B on 512 H100s (the recipe's memory settings not in the table).
/// Llama 3.1 405B on 128 B200s fits since its recipe's FP8 parameter
/// gather is modelled (`--fp8-param-gather`: no bf16 copy of the linear
/// weights beside their FP8 copies); the three torchtitan Llama 3.1 8B
/// runs on 8 GPUs since their "op" checkpointing is (`--recompute op`).
const STILL_NOT_FITTING: [&str; 1] = ["nemo2407-h100-gpt3-175b-512gpu"];

/// Documented accuracy of the reserved peak against torchtitan's
/// published figures (README "Sharded data parallel cases"): median
/// 42.9%, worst 94.7% when the cases were added; 22.2% / 94.7% since
/// torchtitan's "op" checkpointing is modelled as itself; 21.9% / 36.5%
/// since Trainy's runs of the same config are too (mostly under: the
/// allocator's cache grows to the card; Trainy's H200 runs over); a guard,
/// far from the targets.
const RESERVED_MEDIAN_TOLERANCE: f64 = 0.30;
const RESERVED_WORST_TOLERANCE: f64 = 0.45;

const GIB: f64 = (1u64 << 30) as f64;

fn u(c: &Value, k: &str) -> Option<u64> {
    c.get(k).and_then(Value::as_u64)
}

fn model(id: &str, d: &Value) -> ModelSpec {
    if let Some(p) = d.get("preset").and_then(Value::as_str) {
        return presets::preset(p).unwrap_or_else(|| panic!("{id}: no preset {p}"));
    }
    let gpt = d.get("family").and_then(Value::as_str) == Some("gpt");
    let h = u(d, "hidden_size").expect("hidden_size");
    let a = u(d, "num_attention_heads").expect("heads") as u32;
    ModelSpec {
        name: id.to_string(),
        source: "tests/fixtures/model_jobs/published.jsonl".to_string(),
        family: if gpt { Family::Gpt } else { Family::Llama },
        hidden_size: h,
        num_layers: u(d, "num_layers").expect("layers") as u32,
        num_attention_heads: a,
        num_kv_heads: u(d, "num_kv_heads").map_or(a, |k| k as u32),
        head_dim: h / u64::from(a),
        ffn_hidden_size: u(d, "ffn_hidden_size").expect("ffn"),
        gated_mlp: !gpt,
        vocab_size: u(d, "vocab_size").expect("vocab"),
        max_position_embeddings: u(d, "max_position_embeddings").unwrap_or(4096),
        learned_positions: gpt,
        tied_embeddings: d
            .get("tied_embeddings")
            .and_then(Value::as_bool)
            .unwrap_or(gpt),
        linear_bias: gpt,
        layernorm: gpt,
        moe: None,
        mla: None,
    }
}

/// The case's job (as `model_validation` builds it) and its memory report.
fn evaluate(c: &Value) -> (String, ModelJob, MemoryReport) {
    let id = c["id"].as_str().expect("id").to_string();
    let b = |k: &str| c.get(k).and_then(Value::as_bool).unwrap_or(false);
    let n = |k: &str| u(c, k).map(|v| v as u32);
    let setup = TrainingSetup {
        tp: n("tp").expect("tp"),
        pp: n("pp").expect("pp"),
        dp: None,
        cp: n("cp").unwrap_or(1),
        ep: n("ep").unwrap_or(1),
        expert_tp: n("expert_tp"),
        vpp: n("vpp").expect("vpp"),
        sequence_parallel: b("sequence_parallel"),
        micro_batch_size: n("micro_batch_size").expect("mbs"),
        global_batch_size: n("global_batch_size"),
        seq_length: n("seq_length").expect("seq"),
        precision: Precision::from_name(c["precision"].as_str().expect("precision"))
            .expect("precision"),
        recompute: Recompute::from_name(c["recompute"].as_str().expect("recompute"))
            .expect("recompute"),
        distributed_optimizer: b("distributed_optimizer"),
        flash_attention: c
            .get("flash_attention")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        account_for_embedding: b("account_for_embedding"),
        account_for_loss: b("account_for_loss"),
        bf16_grads: b("bf16_grads"),
        fp8_param_gather: b("fp8_param_gather"),
        stack: StackSettings {
            cuda_graphs: c
                .get("cuda_graphs")
                .and_then(Value::as_str)
                .map(|g| CudaGraphs::from_name(g).expect("cuda_graphs"))
                .unwrap_or_default(),
            stack: c
                .get("stack")
                .and_then(Value::as_str)
                .map(|n| Stack::from_name(n).expect("stack"))
                .unwrap_or_default(),
            ..StackSettings::default()
        },
        sharding: Sharding {
            zero: u(c, "zero")
                .map(|z| ZeroStage::from_level(z as u8).expect("zero"))
                .unwrap_or_default(),
            ..Sharding::default()
        },
        ..TrainingSetup::default()
    };
    let gpu_name = c["gpu"].as_str().expect("gpu");
    let gpu = gpu_preset(gpu_name).unwrap_or_else(|| panic!("{id}: no GPU {gpu_name}"));
    let job = ModelJob::new(model(&id, &c["model"]), setup, gpu, n("world"))
        .unwrap_or_else(|e| panic!("{id}: {e}"));
    let s = &job.setup;
    let schedule = if s.vpp > 1 {
        ScheduleKind::Interleaved
    } else {
        ScheduleKind::OneFOneB
    };
    let in_flight: Vec<u32> = (0..s.pp)
        .map(|st| peak_in_flight(schedule, s.pp, job.micro_batches, s.vpp, st))
        .collect();
    let report = memory_report(&job, &in_flight, 1);
    (id, job, report)
}

#[test]
fn trained_runs_fit_and_measured_peaks_match() {
    let cases: Vec<Value> = CASES
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a case"))
        .collect();
    println!("\n| case | GPU | largest stage | device peak (GiB) | capacity (GiB) | margin (GiB) |\n|---|---|---:|---:|---:|---:|");
    let mut not_fitting = Vec::new();
    let mut errors = Vec::new();
    let mut measured_rows = Vec::new();
    let mut reserved_errors = Vec::new();
    let mut reserved_rows = Vec::new();
    for c in &cases {
        let (id, job, r) = evaluate(c);
        let top = r
            .per_stage
            .iter()
            .max_by_key(|s| s.peak_bytes)
            .expect("a stage");
        let margin = (r.capacity_bytes as f64 - top.peak_bytes as f64) / GIB;
        println!(
            "| {id} | {} | {} | {:.1} | {:.1} | {:+.1} |",
            job.gpu.name,
            top.stage,
            top.peak_bytes as f64 / GIB,
            r.capacity_bytes as f64 / GIB,
            margin
        );
        if std::env::var_os("TRAINSCOPE_MEMORY_PARTS").is_some() {
            let parts: Vec<String> = top
                .parts()
                .iter()
                .map(|(n, b)| format!("{n} {:.1}", *b as f64 / GIB))
                .collect();
            println!(
                "  parts: {} (in flight {})",
                parts.join(", "),
                top.in_flight
            );
        }
        if !r.fits {
            not_fitting.push(format!("{id}: {}", r.messages.join("; ")));
        }
        if let Some(m) = c.get("peak_memory_gib_last_stage").and_then(Value::as_f64) {
            let last = r.per_stage.last().expect("a stage");
            let p = last.allocated_bytes as f64 / GIB;
            errors.push(((p - m) / m).abs());
            measured_rows.push(format!(
                "| {id} | {m:.1} | {p:.1} | {:+.1}% |",
                (p - m) / m * 100.0
            ));
        }
        // torchtitan's published figure: torch.cuda.max_memory_reserved,
        // the largest over ranks: the allocator's allocated peak and its
        // fragmentation, without NCCL's buffers and the CUDA context.
        if let Some(m) = c.get("peak_reserved_gib").and_then(Value::as_f64) {
            let top = r
                .per_stage
                .iter()
                .map(|s| s.allocated_bytes + s.fragmentation_bytes)
                .max()
                .expect("a stage");
            let p = top as f64 / GIB;
            reserved_errors.push(((p - m) / m).abs());
            reserved_rows.push(format!(
                "| {id} | {m:.1} | {p:.1} | {:+.1}% |",
                (p - m) / m * 100.0
            ));
        }
    }
    println!(
        "\n| case | measured peak allocated (GiB) | predicted (GiB) | error |\n|---|---:|---:|---:|"
    );
    for r in &measured_rows {
        println!("{r}");
    }
    println!(
        "\n| case | measured peak reserved (GiB) | predicted (GiB) | error |\n|---|---:|---:|---:|"
    );
    for r in &reserved_rows {
        println!("{r}");
    }
    let reserved_median = median(reserved_errors.clone());
    let reserved_worst = reserved_errors.iter().copied().fold(0.0, f64::max);
    println!(
        "\npeak reserved memory (torchtitan): {} cases, median |error| {:.1}%, worst {:.1}%",
        reserved_errors.len(),
        reserved_median * 100.0,
        reserved_worst * 100.0
    );
    assert!(
        reserved_errors.len() >= 10,
        "{} reserved cases",
        reserved_errors.len()
    );
    assert!(
        reserved_median <= RESERVED_MEDIAN_TOLERANCE,
        "reserved median {:.1}%",
        reserved_median * 100.0
    );
    assert!(
        reserved_worst <= RESERVED_WORST_TOLERANCE,
        "reserved worst {:.1}%",
        reserved_worst * 100.0
    );
    let med = median(errors.clone());
    let worst = errors.iter().copied().fold(0.0, f64::max);
    println!(
        "\npeak allocated memory: {} cases, median |error| {:.1}%, worst {:.1}%; {} of {} trained runs reported as not fitting",
        errors.len(),
        med * 100.0,
        worst * 100.0,
        not_fitting.len(),
        cases.len()
    );
    assert!(errors.len() >= 4, "{} measured cases", errors.len());
    assert!(med <= MEDIAN_TOLERANCE, "median {:.1}%", med * 100.0);
    assert!(worst <= WORST_TOLERANCE, "worst {:.1}%", worst * 100.0);
    // The trained runs the model still reports as not fitting (README
    // "Does it fit?"), each named in [`STILL_NOT_FITTING`] with its cause.
    // A new one fails, and so does a listed one that now fits (the list
    // is kept exact).
    for id in STILL_NOT_FITTING {
        assert!(
            not_fitting.iter().any(|m| m.starts_with(&format!("{id}:"))),
            "{id} now fits: take it off STILL_NOT_FITTING and the README's misses"
        );
    }
    let unexpected: Vec<&String> = not_fitting
        .iter()
        .filter(|m| {
            !STILL_NOT_FITTING
                .iter()
                .any(|id| m.starts_with(&format!("{id}:")))
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "trained runs reported as not fitting:\n{}",
        unexpected
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// One stage's parts as a line of the snapshot.
fn parts_line(st: &trainscope_core::job::memory::StageMemory) -> String {
    let b = |v: u64| v.to_string();
    format!(
        "stage {}: parameters {} weights {} gradients {} optimizer {} activations {} (in flight {}) logits {} unsharded_units {} workspace {} cuda_graphs {} allocated {} nccl {} context {} peak {} fragmentation {} reserved {} largest {}",
        st.stage,
        st.parameters,
        b(st.weights_bytes),
        b(st.gradients_bytes),
        b(st.optimizer_bytes),
        b(st.activations_bytes),
        st.in_flight,
        b(st.logits_bytes),
        b(st.unsharded_unit_bytes),
        b(st.workspace_bytes),
        b(st.cuda_graph_bytes),
        b(st.allocated_bytes),
        b(st.nccl_bytes),
        b(st.context_bytes),
        b(st.peak_bytes),
        b(st.fragmentation_bytes),
        b(st.reserved_bytes),
        st.parts()[0].0
    )
}

/// The memory breakdown of one dense and one MoE job, byte for byte,
/// against the committed `tests/fixtures/memory/breakdown.txt` (written
/// when missing or with `UPDATE_MEMORY_SNAPSHOT=1`; review the diff).
#[test]
fn memory_breakdown_snapshot() {
    let gpu = gpu_preset("H100-SXM").unwrap();
    let mut text = String::new();
    let jobs = [
        (
            "llama3-70b, 64 x H100, TP 4 PP 8 vpp 5 DP 2, fp8, bf16 gradients, distributed optimizer, CUDA graphs per layer",
            presets::preset("llama3-70b").unwrap(),
            TrainingSetup {
                tp: 4,
                pp: 8,
                vpp: 5,
                sequence_parallel: true,
                global_batch_size: Some(128),
                seq_length: 8192,
                precision: Precision::Fp8,
                distributed_optimizer: true,
                bf16_grads: true,
                stack: StackSettings {
                    cuda_graphs: CudaGraphs::Layers,
                    ..StackSettings::default()
                },
                ..TrainingSetup::default()
            },
            64,
        ),
        (
            "qwen3-30b-a3b, 16 x H100, PP 2 vpp 12 EP 8, fp8, ZeRO-3",
            presets::preset("qwen3-30b-a3b").unwrap(),
            TrainingSetup {
                pp: 2,
                vpp: 12,
                ep: 8,
                global_batch_size: Some(512),
                precision: Precision::Fp8,
                sharding: trainscope_core::job::sharding::Sharding {
                    zero: trainscope_core::job::sharding::ZeroStage::Parameters,
                    ..Default::default()
                },
                ..TrainingSetup::default()
            },
            16,
        ),
    ];
    for (name, model, setup, world) in jobs {
        let job = ModelJob::new(model, setup, gpu.clone(), Some(world)).unwrap();
        let s = &job.setup;
        let in_flight: Vec<u32> = (0..s.pp)
            .map(|st| {
                peak_in_flight(
                    ScheduleKind::Interleaved,
                    s.pp,
                    job.micro_batches,
                    s.vpp,
                    st,
                )
            })
            .collect();
        let r = memory_report(&job, &in_flight, 1);
        text.push_str(&format!("{name}\n"));
        for st in &r.per_stage {
            text.push_str(&parts_line(st));
            text.push('\n');
        }
        text.push('\n');
    }
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/memory/breakdown.txt");
    if std::env::var_os("UPDATE_MEMORY_SNAPSHOT").is_some() || !path.exists() {
        std::fs::write(&path, &text).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap();
    assert_eq!(have, text, "{} differs from this build", path.display());
}
