//! `trainscope simulate --model MODEL [training and parallelism flags]`: a
//! model-level job. MODEL is a built-in preset name or a path to a
//! HuggingFace `config.json`; the flags become the core's
//! [`TrainingSetup`], the GPU preset comes from `--gpu-type` (default
//! H100-SXM) and the cluster flags are the event mode's. The core builds,
//! simulates and reports ([`trainscope_core::job::run::run_model`]); this
//! file only reads the config file and prints.
//!
//! Exit codes: 0 success, 2 usage, 3 the config file failed to parse, 4 an
//! invalid job (unknown preset or GPU, inconsistent parallelism).

use crate::simulate::{Args, EXIT_CONFIG, EXIT_PARSE, EXIT_USAGE};
use anyhow::{Context, Result};
use std::path::PathBuf;
use trainscope_core::hardware::{gpu_preset, GpuSpec, Precision, GPU_NAMES};
use trainscope_core::job::calibrate::{attach, calibrate_from};
use trainscope_core::job::memory::gib;
use trainscope_core::job::run::{run_model, ModelRunOutput};
use trainscope_core::job::{ModelJob, Recompute, TrainingSetup};
use trainscope_core::model::{hf, presets, ModelSpec};

/// Flags of a model-level job.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Model-level job (--model)")]
pub struct ModelFlags {
    /// A model preset name (see `--model list`) or the path of a
    /// HuggingFace config.json; simulates the job the flags below describe
    /// instead of reading workload files.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Tensor-parallel size (default 1).
    #[arg(long, value_name = "N")]
    pub tp: Option<u32>,
    /// Pipeline stages (default 1).
    #[arg(long, value_name = "N")]
    pub pp: Option<u32>,
    /// Context-parallel size (Megatron's --context-parallel-size; default
    /// 1): every sequence split over CP ranks; the sequence length must be
    /// a multiple of 2 x CP.
    #[arg(long, value_name = "N", alias = "context-parallel-size")]
    pub cp: Option<u32>,
    /// Data-parallel size (default: world / (TP x CP x PP), else 1).
    #[arg(long, value_name = "N")]
    pub dp: Option<u32>,
    /// Expert-parallel size, carved out of DP (default 1); with
    /// --expert-tp 1 out of TP x DP.
    #[arg(long, value_name = "N")]
    pub ep: Option<u32>,
    /// Expert tensor-parallel size (Megatron's
    /// --expert-tensor-parallel-size): 1 keeps whole experts on each rank
    /// and carves EP out of TP x DP (MoE parallel folding; needs
    /// --sequence-parallel when TP > 1); default TP.
    #[arg(long, value_name = "N", alias = "expert-tensor-parallel-size")]
    pub expert_tp: Option<u32>,
    /// Virtual pipeline stages per rank (interleaved 1F1B; default 1).
    #[arg(long, value_name = "N")]
    pub vpp: Option<u32>,
    /// Transformer layers on the first pipeline stage (Megatron's
    /// --decoder-first-pipeline-num-layers); the stages between share the
    /// rest evenly. Default: an even split.
    #[arg(long, value_name = "N", alias = "decoder-first-pipeline-num-layers")]
    pub first_stage_layers: Option<u32>,
    /// Transformer layers on the last pipeline stage (Megatron's
    /// --decoder-last-pipeline-num-layers). Default: an even split.
    #[arg(long, value_name = "N", alias = "decoder-last-pipeline-num-layers")]
    pub last_stage_layers: Option<u32>,
    /// Megatron's --account-for-embedding-in-pipeline-split: the embedding
    /// counts as a layer when the layers are cut into PP x vpp model
    /// chunks, so stage 0's first chunk holds one layer fewer.
    #[arg(long = "account-for-embedding-in-pipeline-split")]
    pub account_for_embedding: bool,
    /// Megatron's --account-for-loss-in-pipeline-split: the output layer
    /// and loss count as a layer, so the last stage's last chunk holds one
    /// layer fewer.
    #[arg(long = "account-for-loss-in-pipeline-split")]
    pub account_for_loss: bool,
    /// Keep and reduce gradients in bf16 under bf16/FP8 training
    /// (Megatron-Bridge's grad_reduce_in_fp32 = False, set by NVIDIA's
    /// performance recipes): 2 bytes a gradient, half the gradient
    /// reduction's bytes, an fp32 copy of the optimizer's shard.
    #[arg(long = "no-grad-reduce-in-fp32")]
    pub bf16_grads: bool,
    /// Megatron sequence parallelism (needs TP > 1).
    #[arg(long)]
    pub sequence_parallel: bool,
    /// Sequences per micro-batch (default 1).
    #[arg(long, value_name = "N")]
    pub micro_batch_size: Option<u32>,
    /// Sequences per iteration (default 1024, rounded up to a multiple of
    /// micro-batch x DP).
    #[arg(long, value_name = "N")]
    pub global_batch_size: Option<u32>,
    /// Tokens per sequence (default 4096).
    #[arg(long, value_name = "N")]
    pub seq_length: Option<u32>,
    /// GEMM precision: fp32, bf16 (default), fp16, fp8.
    #[arg(long, value_name = "P")]
    pub precision: Option<String>,
    /// Activation recompute: none (default), selective, full.
    #[arg(long, value_name = "R")]
    pub recompute: Option<String>,
    /// Megatron's distributed optimizer (ZeRO-1 over DP).
    #[arg(long)]
    pub distributed_optimizer: bool,
    /// Megatron's unfused core attention instead of a fused (flash) kernel:
    /// scores, softmax, dropout and context as separate kernels over the
    /// full score matrix, which is stored unless recomputed.
    #[arg(long)]
    pub no_flash_attention: bool,
    /// Fraction of the dense peak a large GEMM reaches (default: the GPU
    /// preset's).
    #[arg(long, value_name = "X")]
    pub gemm_efficiency: Option<f64>,
    /// Fraction of the dense peak the fused attention core reaches on long
    /// sequences, forward and backward (the preset's curve over the
    /// sequence length keeps its shape).
    #[arg(long, value_name = "X")]
    pub attention_efficiency: Option<f64>,
    /// Fraction of the memory bandwidth bandwidth-bound kernels reach.
    #[arg(long, value_name = "X")]
    pub hbm_efficiency: Option<f64>,
    /// Launch overhead per kernel, microseconds.
    #[arg(long, value_name = "US")]
    pub launch_overhead_us: Option<f64>,
    /// A measured run of the same model on the same GPU type (an
    /// Optimus-Prime log, the rank traces of one Echo job): fit the compute
    /// scale on its configuration, then simulate the job the flags give.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub calibrate_from: Vec<PathBuf>,
}

impl ModelFlags {
    /// The model-only flags that were given (refused without `--model`).
    pub fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut add = |set: bool, name: &'static str| {
            if set {
                out.push(name);
            }
        };
        add(self.tp.is_some(), "--tp");
        add(self.pp.is_some(), "--pp");
        add(self.dp.is_some(), "--dp");
        add(self.cp.is_some(), "--cp");
        add(self.ep.is_some(), "--ep");
        add(self.expert_tp.is_some(), "--expert-tp");
        add(self.vpp.is_some(), "--vpp");
        add(self.first_stage_layers.is_some(), "--first-stage-layers");
        add(self.last_stage_layers.is_some(), "--last-stage-layers");
        add(
            self.account_for_embedding,
            "--account-for-embedding-in-pipeline-split",
        );
        add(
            self.account_for_loss,
            "--account-for-loss-in-pipeline-split",
        );
        add(self.bf16_grads, "--no-grad-reduce-in-fp32");
        add(self.sequence_parallel, "--sequence-parallel");
        add(self.micro_batch_size.is_some(), "--micro-batch-size");
        add(self.global_batch_size.is_some(), "--global-batch-size");
        add(self.seq_length.is_some(), "--seq-length");
        add(self.precision.is_some(), "--precision");
        add(self.recompute.is_some(), "--recompute");
        add(self.distributed_optimizer, "--distributed-optimizer");
        add(self.no_flash_attention, "--no-flash-attention");
        add(self.gemm_efficiency.is_some(), "--gemm-efficiency");
        add(
            self.attention_efficiency.is_some(),
            "--attention-efficiency",
        );
        add(self.hbm_efficiency.is_some(), "--hbm-efficiency");
        add(self.launch_overhead_us.is_some(), "--launch-overhead-us");
        add(!self.calibrate_from.is_empty(), "--calibrate-from");
        out
    }

    /// The training setup the flags give (`Err`: the message for exit 4).
    pub fn setup(&self) -> std::result::Result<TrainingSetup, String> {
        let d = TrainingSetup::default();
        let precision = match &self.precision {
            None => d.precision,
            Some(p) => Precision::from_name(p).ok_or_else(|| {
                format!("unknown precision `{p}`; expected one of: fp32, bf16, fp16, fp8")
            })?,
        };
        let recompute = match &self.recompute {
            None => d.recompute,
            Some(r) => Recompute::from_name(r).ok_or_else(|| {
                format!("unknown recompute mode `{r}`; expected one of: none, selective, full")
            })?,
        };
        Ok(TrainingSetup {
            tp: self.tp.unwrap_or(d.tp),
            pp: self.pp.unwrap_or(d.pp),
            dp: self.dp,
            cp: self.cp.unwrap_or(d.cp),
            ep: self.ep.unwrap_or(d.ep),
            expert_tp: self.expert_tp,
            vpp: self.vpp.unwrap_or(d.vpp),
            sequence_parallel: self.sequence_parallel,
            micro_batch_size: self.micro_batch_size.unwrap_or(d.micro_batch_size),
            global_batch_size: self.global_batch_size,
            seq_length: self.seq_length.unwrap_or(d.seq_length),
            precision,
            recompute,
            distributed_optimizer: self.distributed_optimizer,
            flash_attention: !self.no_flash_attention,
            first_stage_layers: self.first_stage_layers,
            last_stage_layers: self.last_stage_layers,
            account_for_embedding: self.account_for_embedding,
            account_for_loss: self.account_for_loss,
            bf16_grads: self.bf16_grads,
        })
    }

    /// `gpu` with the efficiency overrides applied (`Err`: the message).
    pub fn apply_efficiency(&self, gpu: &mut GpuSpec) -> std::result::Result<(), String> {
        let e = &mut gpu.efficiency;
        if let Some(x) = self.gemm_efficiency {
            e.gemm_max = x;
        }
        if let Some(x) = self.attention_efficiency {
            e.attention = x;
            e.attention_backward = x;
        }
        if let Some(x) = self.hbm_efficiency {
            e.memory = x;
        }
        if let Some(us) = self.launch_overhead_us {
            if !us.is_finite() || !(0.0..=1e6).contains(&us) {
                return Err(format!(
                    "launch overhead {us} us is not between 0 and 1000000"
                ));
            }
            e.launch_ns = (us * 1000.0).round() as u64;
        }
        e.validate()
    }
}

/// The GPU of a model-level job when `--gpu-type` is not given (the
/// core's, which the page uses too).
pub use trainscope_core::job::DEFAULT_GPU;

/// `trainscope convert --model ... --to simai-workload -o FILE`: the job
/// as a SimAI/AICB workload. Returns the exit code.
pub fn convert(args: &crate::event::ConvertArgs, model: &str) -> Result<u8> {
    if !args.files.is_empty() {
        eprintln!("error: --model converts a model-level job; do not also give files");
        return Ok(EXIT_USAGE);
    }
    if args.to == crate::event::ConvertTo::ChakraEt {
        let job = match load_job(&args.model, model, args.gpu_type.as_deref(), args.world)? {
            Ok(j) => j,
            Err(code) => return Ok(code),
        };
        let config = trainscope_core::sim::SimConfig::default();
        let out = match run_model(&job, &config) {
            Ok(o) => o,
            Err(e) => return Ok(crate::event::report_error(&e)),
        };
        for w in &out.run.warnings {
            eprintln!("{w}");
        }
        return crate::event::write_chakra(
            &job.model.name,
            &out.run.result.timeline,
            out.run.parallel,
            config.network.placement,
            &args.output,
        );
    }
    if args.to != crate::event::ConvertTo::SimaiWorkload {
        eprintln!("error: a model-level job converts to `--to simai-workload` (its simulated timeline: `simulate --model ... --chrome-trace PATH`)");
        return Ok(EXIT_USAGE);
    }
    let job = match load_job(&args.model, model, args.gpu_type.as_deref(), args.world)? {
        Ok(j) => j,
        Err(code) => return Ok(code),
    };
    let (text, warnings) = trainscope_core::job::export::simai_workload(&job);
    std::fs::write(&args.output, &text)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    crate::event::print_stdout(&format!(
        "{}: SimAI workload ({} records, TP {} PP {} DP {}, {} micro-batches) written to {}\n",
        job.model.name,
        text.lines().count().saturating_sub(2),
        job.setup.tp,
        job.setup.pp,
        job.dp,
        job.micro_batches,
        args.output.display()
    ))?;
    Ok(0)
}

/// The model `name` refers to: an existing file is read as a config.json,
/// anything else must be a preset. `Err(code)`: already reported.
pub fn load_model(name: &str) -> Result<std::result::Result<ModelSpec, u8>> {
    let path = PathBuf::from(name);
    if !path.is_file() {
        return Ok(presets::preset(name).ok_or_else(|| {
            eprintln!(
                "error: unknown model `{name}`: no such file and not a preset; presets: {}",
                presets::NAMES.join(", ")
            );
            EXIT_CONFIG
        }));
    }
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {name}"))?;
    // The one text decoding every input goes through (BOM, binary refusal,
    // a warning when bytes were replaced).
    let (text, replaced) = match trainscope_core::formats::decode_text(name, &bytes) {
        Ok(t) => t,
        Err(d) => {
            eprint!("{}", d.render());
            return Ok(Err(EXIT_PARSE));
        }
    };
    if replaced {
        eprintln!("warning: `{name}` is not valid UTF-8; invalid bytes were replaced");
    }
    match hf::parse(name, &text) {
        Ok((m, warnings)) => {
            for w in &warnings {
                eprint!("{}", w.render());
            }
            Ok(Ok(m))
        }
        Err(diags) => {
            for d in &diags {
                eprint!("{}", d.render());
            }
            Ok(Err(EXIT_PARSE))
        }
    }
}

/// The GPU preset `--gpu-type` names (default H100-SXM), with the
/// efficiency overrides. `Err(code)`: already reported.
pub fn load_gpu(flags: &ModelFlags, gpu_type: Option<&str>) -> std::result::Result<GpuSpec, u8> {
    let name = gpu_type.unwrap_or(DEFAULT_GPU);
    let Some(mut gpu) = gpu_preset(name) else {
        eprintln!(
            "error: unknown GPU type `{name}`; expected one of: {}",
            GPU_NAMES.join(", ")
        );
        return Err(EXIT_CONFIG);
    };
    if let Err(why) = flags.apply_efficiency(&mut gpu) {
        eprintln!("error: invalid setting: {why}");
        return Err(EXIT_CONFIG);
    }
    Ok(gpu)
}

/// The job the flags describe. `Err(code)`: already reported.
pub fn load_job(
    flags: &ModelFlags,
    model: &str,
    gpu_type: Option<&str>,
    world: Option<u32>,
) -> Result<std::result::Result<ModelJob, u8>> {
    let spec = match load_model(model)? {
        Ok(m) => m,
        Err(code) => return Ok(Err(code)),
    };
    let gpu = match load_gpu(flags, gpu_type) {
        Ok(g) => g,
        Err(code) => return Ok(Err(code)),
    };
    let setup = match flags.setup() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("error: invalid setting: {why}");
            return Ok(Err(EXIT_CONFIG));
        }
    };
    match ModelJob::new(spec, setup, gpu, world) {
        Ok(j) => Ok(Ok(j)),
        Err(e) => {
            eprint!("{}", e.to_diagnostic().render());
            Ok(Err(EXIT_CONFIG))
        }
    }
}

/// `--model list`: every model preset (parameters, source) and every GPU
/// preset (bf16 peak, memory, source).
fn list_presets() -> String {
    let mut out = String::from("model presets (--model NAME):\n");
    for name in presets::NAMES {
        if let Some(m) = presets::preset(name) {
            let p = m.parameters();
            out.push_str(&format!(
                "  {name:<22} {:>9.2} B parameters  {}\n",
                p.total as f64 / 1e9,
                m.source
            ));
        }
    }
    out.push_str("\nGPU presets (--gpu-type NAME):\n");
    for name in GPU_NAMES {
        if let Some(g) = gpu_preset(name) {
            out.push_str(&format!(
                "  {name:<10} bf16 {:>7.1} TFLOP/s  {:>6.1} GiB  {}\n",
                g.peaks.bf16_tflops,
                g.memory_bytes as f64 / (1u64 << 30) as f64,
                g.source
            ));
        }
    }
    out
}

/// Run `simulate --model`; returns the exit code.
pub fn run(args: &Args, model: &str) -> Result<u8> {
    if model == "list" {
        crate::event::print_stdout(&list_presets())?;
        return Ok(0);
    }
    let out = match simulate_job(args, model)? {
        Ok(o) => o,
        Err(code) => return Ok(code),
    };
    let e = &args.event;
    crate::event::write_timeline(
        &out.run.result.timeline,
        e.chrome_trace.as_deref(),
        e.spans_csv.as_deref(),
    )?;
    if args.json {
        crate::event::print_stdout(&(serde_json::to_string_pretty(&out.report_json())? + "\n"))?;
    } else {
        crate::event::print_stdout(&render_text(&out))?;
        for w in &out.run.warnings {
            eprintln!("{w}");
        }
    }
    Ok(0)
}

/// Build and simulate the model-level job `simulate --model` describes
/// (warning about the event-mode flags it ignores); `trainscope plan`
/// plans the same job. `Err(code)`: already reported.
pub fn simulate_job(args: &Args, model: &str) -> Result<std::result::Result<ModelRunOutput, u8>> {
    if !args.files.is_empty() {
        eprintln!("error: --model simulates a model-level job; do not also give workload files");
        return Ok(Err(EXIT_USAGE));
    }
    let e = &args.event;
    for (set, flag, instead) in [
        (e.calibrate, "--calibrate", "use --calibrate-from FILE..."),
        (
            e.backward_factor.is_some(),
            "--backward-factor",
            "the job computes its backward",
        ),
        (
            e.activation_bytes.is_some(),
            "--activation-bytes",
            "the job computes its activations",
        ),
        (
            e.block_repeats.is_some(),
            "--block-repeats",
            "it is for NeuSight files",
        ),
        (e.format.is_some(), "--format", "it is for input files"),
    ] {
        if set {
            eprintln!("warning: {flag} does not apply to a model-level job ({instead}); ignored");
        }
    }
    let job = match load_job(
        &args.model,
        model,
        args.simai.gpu_type.as_deref(),
        args.simai.world,
    )? {
        Ok(j) => j,
        Err(code) => return Ok(Err(code)),
    };
    let mut config = match crate::event::settings(args)? {
        Ok((c, _)) => c,
        Err(code) => return Ok(Err(code)),
    };
    let mut fit = None;
    if !args.model.calibrate_from.is_empty() {
        let files = crate::event::read_files(&args.model.calibrate_from)?;
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        match calibrate_from(&job, &refs, &config) {
            Ok(f) => {
                config.compute_scale = f.compute_scale();
                fit = Some(f);
            }
            Err(e) => return Ok(Err(crate::event::report_error(&e))),
        }
    }
    let mut out = match run_model(&job, &config) {
        Ok(o) => o,
        Err(e) => return Ok(Err(crate::event::report_error(&e))),
    };
    if let Some(f) = fit {
        attach(&mut out, f);
    }
    Ok(Ok(out))
}

/// The readable report: the event report, then the model's figures and the
/// memory per stage.
pub fn render_text(o: &ModelRunOutput) -> String {
    let j = &o.job;
    let m = &j.model;
    let s = &j.setup;
    let p = m.parameters();
    let mut out = format!(
        "{}: model-level job ({}, {:.2} B parameters{}; {})\n",
        m.name,
        m.family.name(),
        p.total as f64 / 1e9,
        if p.active != p.total {
            format!(", {:.2} B active", p.active as f64 / 1e9)
        } else {
            String::new()
        },
        m.source
    );
    out.push_str(&format!(
        "  training: {} x {} · global batch {} · micro-batch {} · seq {} · {} · recompute {}{}{}{}\n",
        j.world,
        j.gpu.name,
        j.global_batch_size,
        s.micro_batch_size,
        s.seq_length,
        s.precision.name(),
        s.recompute.name(),
        if s.cp > 1 {
            format!(" · context parallel {} (TP {} x CP {} x PP {} x DP {})", s.cp, s.tp, s.cp, s.pp, j.dp)
        } else {
            String::new()
        },
        if s.sequence_parallel {
            " · sequence parallel"
        } else {
            ""
        },
        if s.distributed_optimizer {
            " · distributed optimizer"
        } else {
            ""
        },
    ));
    let t = &o.throughput;
    out.push_str(&format!(
        "  throughput: MFU {:.1}% · {:.1} model TFLOP/s per GPU · {:.0} tokens/s\n\n",
        t.mfu * 100.0,
        t.model_tflops_per_gpu,
        t.tokens_per_second
    ));
    if let Some(c) = &o.calibration {
        out.push_str(&format!(
            "  calibrated on {} ({}, TP {} PP {} DP {}, {} micro-batches): measured {:.1} ms, simulated {:.1} ms before the fit\n",
            c.files.join(", "),
            c.format.name(),
            c.reference.tp,
            c.reference.pp,
            c.reference.dp.unwrap_or(1),
            c.reference.global_batch_size.unwrap_or(0)
                / (c.reference.micro_batch_size * c.reference.dp.unwrap_or(1)).max(1),
            c.measured_iteration_time_ns as f64 / 1e6,
            c.uncalibrated_iteration_time_ns as f64 / 1e6
        ));
        for f in &c.fitted {
            out.push_str(&format!(
                "    fitted {} = {:.4} ({})\n",
                f.name, f.value, f.meaning
            ));
        }
        for n in &c.notes {
            out.push_str(&format!("    note: {n}\n"));
        }
        out.push('\n');
    }
    out.push_str(&crate::event::render_text(&o.run));
    out.push_str(&format!(
        "\n  memory per stage (first rank; capacity {}):\n  {:>5} {:>10} {:>10} {:>10} {:>11} {:>8} {:>10}\n",
        gib(o.memory.capacity_bytes),
        "stage",
        "weights",
        "grads",
        "optimizer",
        "activations",
        "logits",
        "peak"
    ));
    for st in &o.memory.per_stage {
        out.push_str(&format!(
            "  {:>5} {:>10} {:>10} {:>10} {:>11} {:>8} {:>10}{}\n",
            st.stage,
            gib(st.weights_bytes),
            gib(st.gradients_bytes),
            gib(st.optimizer_bytes),
            gib(st.activations_bytes),
            gib(st.logits_bytes),
            gib(st.peak_bytes),
            if st.peak_bytes > o.memory.capacity_bytes {
                "  does not fit"
            } else {
                ""
            }
        ));
    }
    out
}
