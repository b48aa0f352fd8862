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

use crate::args::{Args, ModelFlags};
use crate::io::{EXIT_CONFIG, EXIT_PARSE, EXIT_USAGE};
use anyhow::{Context, Result};
use std::path::PathBuf;
use trainscope_core::hardware::{gpu_preset, GpuSpec, GPU_NAMES};
use trainscope_core::job::calibrate::calibrate_from;
use trainscope_core::job::memory::gib;
use trainscope_core::job::run::{run_model, run_model_with, ModelRunOutput};
use trainscope_core::job::sharding::ZeroStage;
use trainscope_core::job::ModelJob;
use trainscope_core::{
    formats::hf,
    model::{presets, ModelSpec},
};

/// The GPU of a model-level job when `--gpu-type` is not given (the
/// core's, which the page uses too).
pub use trainscope_core::job::DEFAULT_GPU;

/// `trainscope convert --model ... --to simai-workload -o FILE`: the job
/// as a SimAI/AICB workload. Returns the exit code.
pub fn convert(args: &crate::args::ConvertArgs, model: &str) -> Result<u8> {
    if !args.files.is_empty() {
        eprintln!("error: --model converts a model-level job; do not also give files");
        return Ok(EXIT_USAGE);
    }
    if args.to == crate::args::ConvertTo::ChakraEt {
        let job = match load_job(&args.model, model, args.gpu_type.as_deref(), args.world)? {
            Ok(j) => j,
            Err(code) => return Ok(code),
        };
        let config = trainscope_core::engine::SimConfig::default();
        let out = match run_model(&job, &config) {
            Ok(o) => o,
            Err(e) => return Ok(crate::io::report_error(&e)),
        };
        for w in &out.run.warnings {
            eprintln!("{w}");
        }
        return crate::io::write_chakra(
            &job.model.name,
            &out.run.result.timeline,
            out.run.parallel,
            config.network.placement,
            &args.output,
        );
    }
    if args.to != crate::args::ConvertTo::SimaiWorkload {
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
    crate::io::print_stdout(&format!(
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
        crate::io::print_stdout(&list_presets())?;
        return Ok(0);
    }
    let out = match simulate_job(args, model)? {
        Ok(o) => o,
        Err(code) => return Ok(code),
    };
    let e = &args.event;
    crate::io::write_timeline(
        &out.run.result.timeline,
        e.chrome_trace.as_deref(),
        e.spans_csv.as_deref(),
    )?;
    if args.json {
        crate::io::print_stdout(&(serde_json::to_string_pretty(&out.report_json())? + "\n"))?;
    } else {
        crate::io::print_stdout(&render_text(&out))?;
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
    let (mut config, blame) = match crate::args::settings(args)? {
        Ok((c, o)) => (c, o.blame),
        Err(code) => return Ok(Err(code)),
    };
    let mut fit = None;
    if !args.model.calibrate_from.is_empty() {
        let files = crate::io::read_files(&args.model.calibrate_from)?;
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        match calibrate_from(&job, &refs, &config) {
            Ok(f) => {
                config.compute_scale = f.compute_scale();
                fit = Some(f);
            }
            Err(e) => return Ok(Err(crate::io::report_error(&e))),
        }
    }
    let mut out = match run_model_with(&job, &config, blame) {
        Ok(o) => o,
        Err(e) => return Ok(Err(crate::io::report_error(&e))),
    };
    if let Some(f) = fit {
        out.attach_calibration(f);
    }
    Ok(Ok(out))
}

/// The software-stack line of the readable report: the stack, CUDA graphs,
/// the attention kernel and the host's time per kernel, the MoE dispatcher
/// settings for MoE models, TP comm overlap when on.
fn software_line(st: &trainscope_core::model::stack::StackSettings, moe: bool) -> String {
    let mut out = format!(
        "  software: {} · CUDA graphs {} · attention kernel {} · host {} us a kernel{}",
        st.stack.name(),
        st.cuda_graphs.name(),
        st.attention_kernel.name(),
        trainscope_core::model::stack::launch_us_text(st.per_kernel_ns()),
        if st.tp_comm_overlap {
            " · TP comm overlap"
        } else {
            ""
        }
    );
    if moe {
        out.push_str(&format!(
            " · MoE dispatcher {}{}{}",
            st.dispatcher.name(),
            if st.moe_a2a_overlap {
                " with EP overlap"
            } else {
                ""
            },
            if st.moe_fused() {
                ", fused router"
            } else {
                ", unfused router"
            }
        ));
        if st.moe_imbalance_milli.is_some() {
            out.push_str(&format!(
                " · busiest expert rank x {}",
                trainscope_core::limits::number(st.moe_imbalance())
            ));
        }
    }
    out.push('\n');
    out
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
        "  training: {} x {} · global batch {} · micro-batch {} · seq {} · {} · recompute {}{}{}{}{}\n",
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
        match s.sharding.zero {
            ZeroStage::None => String::new(),
            ZeroStage::Optimizer => " · distributed optimizer".to_string(),
            z => format!(
                " · ZeRO-{}{}",
                z.level(),
                if z == ZeroStage::Parameters {
                    format!(
                        " (FSDP, prefetch {}{}{})",
                        s.sharding.prefetch,
                        if s.sharding.reshard_after_forward {
                            ""
                        } else {
                            ", no reshard after forward"
                        },
                        match trainscope_core::job::sharding::hsdp(j) {
                            Some((n, r)) => format!(", HSDP shard {n} x replicate {r}"),
                            None => String::new(),
                        }
                    )
                } else {
                    String::new()
                }
            ),
        },
        match s.sharding.offload {
            trainscope_core::job::sharding::Offload::None => String::new(),
            o => format!(
                " · offload {} (PCIe {} GB/s a direction)",
                o.name(),
                j.gpu.pcie_gbps
            ),
        },
    ));
    out.push_str(&software_line(&s.stack, m.moe.is_some()));
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
    out.push_str(&crate::render::render_text(&o.run));
    out.push_str(&format!(
        "\n  memory per stage (first rank; capacity {}; buffers: unsharded FSDP units, cuBLAS workspace, CUDA graphs, NCCL, CUDA context; reserved adds the allocator's expected fragmentation):\n  {:>5} {:>10} {:>10} {:>10} {:>11} {:>8} {:>9} {:>10} {:>10}\n",
        gib(o.memory.capacity_bytes),
        "stage",
        "weights",
        "grads",
        "optimizer",
        "activations",
        "logits",
        "buffers",
        "peak",
        "reserved"
    ));
    for st in &o.memory.per_stage {
        let buffers = st.unsharded_unit_bytes
            + st.workspace_bytes
            + st.cuda_graph_bytes
            + st.nccl_bytes
            + st.context_bytes;
        out.push_str(&format!(
            "  {:>5} {:>10} {:>10} {:>10} {:>11} {:>8} {:>9} {:>10} {:>10}{}\n",
            st.stage,
            gib(st.weights_bytes),
            gib(st.gradients_bytes),
            gib(st.optimizer_bytes),
            gib(st.activations_bytes),
            gib(st.logits_bytes),
            gib(buffers),
            gib(st.peak_bytes),
            gib(st.reserved_bytes),
            if st.peak_bytes > o.memory.capacity_bytes {
                "  does not fit"
            } else {
                ""
            }
        ));
    }
    // When each stage's peak happens (its first rank's activation series;
    // the other parts are resident all step), as `memory.per_stage[i]`'s
    // `peak_time_ns` in the JSON.
    for st in &o.memory.per_stage {
        if let Some(a) = o
            .run
            .result
            .activations
            .iter()
            .find(|a| a.stage == st.stage)
        {
            out.push_str(&format!(
                "  stage {} peaks at {} ms: {} of activations, {:.1} micro-batches in flight, on top of the parts above\n",
                st.stage,
                crate::render::ms(a.peak_time_ns()),
                gib(st.activations_bytes),
                a.peak_micro_batches()
            ));
        }
    }
    if let Some(host) = o.memory.per_stage.iter().map(|st| st.host_bytes).max() {
        if host > 0 {
            out.push_str(&format!(
                "  offloaded to host memory: {} per rank at most (not in the GPU's peak)\n",
                gib(host)
            ));
        }
    }
    out
}
