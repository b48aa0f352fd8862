//! The command line's flags, below every command that reads them: the
//! `simulate` arguments of both modes ([`Args`]: SimAI-compatible flags,
//! event-engine flags, model-level job flags), `convert`'s ([`ConvertArgs`]),
//! the exit codes, and [`settings`], the one translation of the event flags
//! into the core's settings ([`SimConfig`], [`RunOptions`]) that `simulate`,
//! `sweep` and `--model` share.

use crate::io::{load_tables, EXIT_CONFIG, EXIT_USAGE};
use anyhow::Result;
use std::path::PathBuf;
use trainscope_core::analytical::RatioTables;
use trainscope_core::engine::config::PlacementOrder;
use trainscope_core::engine::faults::{self, Faults};
use trainscope_core::engine::{Algorithm, ScheduleKind, SimConfig};
use trainscope_core::hardware::{gpu_preset, NicType, GPU_NAMES};
use trainscope_core::hardware::{GpuSpec, Precision};
use trainscope_core::job::sharding::{Offload, Sharding, ZeroStage};
use trainscope_core::job::{Recompute, TrainingSetup};
use trainscope_core::model::attention_kernel::AttentionKernel;
use trainscope_core::model::dispatcher::{imbalance_milli, parse_fusion, Dispatcher};
use trainscope_core::model::stack::{
    launch_ns_from_us, queue_depth_from_text, CudaGraphs, Stack, StackSettings,
};
use trainscope_core::named::Named;
use trainscope_core::replay::infer::NetworkOverrides;
use trainscope_core::run::{RunOptions, SlowRank};
use trainscope_core::whatif::DEFAULT_SENSITIVITY_FACTOR;
use trainscope_core::workload::Format;

/// Which simulator runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The event-level engine: pipeline schedules, network model, replay of
    /// measured runs.
    Event,
    /// SimAI-Analytical's closed-form cost model, reproducing its numbers.
    Simai,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input files: a SimAI/AICB workload, a NeuSight TSV, the rank traces
    /// of one Echo job, or an Optimus-Prime log (`--mode simai`: one SimAI
    /// workload; SimAI's `-w FILE` also works).
    #[arg(required_unless_present = "model", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Simulator: `event` (default) or `simai` (SimAI-compatible).
    #[arg(long, value_enum, default_value_t = Mode::Event)]
    pub mode: Mode,
    /// Print the report as a JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also write SimAI's EndToEnd CSV to PATH (its first field is the file
    /// name up to `EndToEnd.csv`, e.g. `r000-` for `r000-EndToEnd.csv`).
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    #[command(flatten)]
    pub simai: SimaiFlags,
    #[command(flatten)]
    pub event: EventFlags,
    #[command(flatten)]
    pub model: ModelFlags,
    #[command(flatten)]
    pub whatif: WhatIfFlags,
}

/// Cluster flags of both modes and the SimAI-compatible mode's own flags
/// (SimAI's spelling in brackets).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "SimAI mode")]
pub struct SimaiFlags {
    /// World size, GPUs [-g] (default: the header's `all_gpus`; NeuSight
    /// inputs: the data-parallel size, default 1).
    #[arg(long, value_name = "N", help_heading = "Cluster (both modes)")]
    pub world: Option<u32>,
    /// GPUs per server (node) [-g_p_s] (default 8).
    #[arg(
        long,
        value_name = "N",
        visible_alias = "gpus-per-node",
        help_heading = "Cluster (both modes)"
    )]
    pub gpus_per_server: Option<u32>,
    /// NICs per server (node) [-n_p_s] (default 8).
    #[arg(
        long,
        value_name = "N",
        visible_alias = "nics-per-node",
        help_heading = "Cluster (both modes)"
    )]
    pub nics_per_server: Option<u32>,
    /// NVLink bus bandwidth, GB/s [-nv] (default: from --gpu-type, else H100).
    #[arg(
        long,
        value_name = "X",
        allow_negative_numbers = true,
        help_heading = "Cluster (both modes)"
    )]
    pub nvlink_gbps: Option<f64>,
    /// Per-NIC bus bandwidth, GB/s [-nic] (default: from --nic-type, else CX7).
    #[arg(
        long,
        value_name = "X",
        allow_negative_numbers = true,
        help_heading = "Cluster (both modes)"
    )]
    pub nic_gbps: Option<f64>,
    /// GPU preset (case-insensitive): A100-40G, A100-80G (= A100), A800,
    /// H100-SXM (= H100), H800, H20, H200, B200, A40, L40S, MI300X. Sets the
    /// NVLink bandwidth (SimAI mode: H100, H20, H800, A100, A800) and, for
    /// --model, the GPU (default H100-SXM).
    #[arg(long, value_name = "T", help_heading = "Cluster (both modes)")]
    pub gpu_type: Option<String>,
    /// NIC preset for the NIC bandwidth: CX6, CX7, BF3.
    #[arg(long, value_name = "T", help_heading = "Cluster (both modes)")]
    pub nic_type: Option<String>,
    /// DP overlap ratio in [0, 1] [-dp_o] (default 0).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub dp_overlap: Option<f64>,
    /// TP overlap ratio in [0, 1] [-tp_o] (default 0).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub tp_overlap: Option<f64>,
    /// EP overlap ratio in [0, 1] [-ep_o] (default 0).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub ep_overlap: Option<f64>,
    /// PP overlap ratio in (0, 1] [-pp_o] (default 1).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub pp_overlap: Option<f64>,
    /// Directory with nvlink_ratio.csv / nic_ratio.csv / ata_ratio.csv
    /// replacing the built-in bandwidth-efficiency tables (each file found
    /// replaces its table; event mode: for `--algorithm simai`).
    #[arg(long, value_name = "DIR", help_heading = "Cluster (both modes)")]
    pub ratio_table_dir: Option<PathBuf>,
}

/// Flags of the event mode.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Event mode")]
pub struct EventFlags {
    /// Pipeline schedule (default 1f1b; --virtual-stages > 1 implies
    /// interleaved).
    #[arg(long, value_enum)]
    pub schedule: Option<ScheduleKind>,
    /// Model chunks per rank for the interleaved schedule (default 1).
    #[arg(long, value_name = "V")]
    pub virtual_stages: Option<u32>,
    /// Micro-batches per iteration (default: the file's `ga` / GAS).
    #[arg(long, value_name = "M")]
    pub micro_batches: Option<u32>,
    /// Per-step latency across nodes, microseconds (NVLink: a fifth of it;
    /// default 5 / 1).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub latency_us: Option<f64>,
    /// How ranks are laid out on the nodes, fastest-varying dimension first:
    /// tp-dp-pp (default, Megatron), tp-pp-dp, dp-tp-pp, dp-pp-tp, pp-tp-dp,
    /// pp-dp-tp.
    #[arg(long, value_name = "ORDER")]
    pub placement: Option<String>,
    /// Fabric oversubscription X >= 1: inter-node bandwidth is divided by X
    /// (default 1).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub oversubscription: Option<f64>,
    /// Collective cost: ring (default), tree or simai (SimAI-compatible).
    #[arg(long, value_enum)]
    pub algorithm: Option<Algorithm>,
    /// Backward = X x forward where backward is not given (NeuSight
    /// forward-only files, Optimus-Prime logs: default 2; SimAI layers with
    /// no backward compute: off unless given).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub backward_factor: Option<f64>,
    /// Measured runs: fit one compute-scale factor so the prediction meets
    /// the measured iteration time, report it, then simulate the given
    /// settings with it (what-if). An Echo replay meets the measurement
    /// without it (network inferred from the trace; explicit network flags
    /// replace the inferred values as a what-if), so the factor fits only
    /// what is left; Optimus-Prime logs need it.
    #[arg(long)]
    pub calibrate: bool,
    /// Bytes of one stage-to-stage send (default: the file's `pp_comm` or
    /// the traced activation shape).
    #[arg(long, value_name = "N")]
    pub activation_bytes: Option<u64>,
    /// Issue the gradient-sync collectives when the last backward starts
    /// (overlapping it) instead of after it.
    #[arg(long)]
    pub overlap_grad_sync: bool,
    /// NeuSight inputs: how many times the model repeats the described
    /// transformer block (default 36, GPT-2-large).
    #[arg(long, value_name = "N")]
    pub block_repeats: Option<u32>,
    /// Force the input format instead of detecting it: simai-workload,
    /// neusight-tsv, echo-trace, optimus-prime-log, kineto-trace, chakra-et
    /// (hf-config files are models, simulated with --model; with chakra-et a
    /// Chakra set's comm_groups.json is still detected as its groups).
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,
    /// Kineto traces: the ProfilerStep number to analyse (default: the last
    /// one every rank has).
    #[arg(long, value_name = "N")]
    pub iteration: Option<u32>,
    /// Measured runs replayed per rank (Kineto, Echo, Chakra traces): a
    /// what-if with rank R's compute PCT percent slower (`5:30`); its
    /// collectives start later and the others wait for it. The report gives
    /// the iteration with and without it (JSON `slow_rank`).
    #[arg(long, value_name = "R:PCT")]
    pub slow_rank: Option<String>,
    /// Write the simulated timeline as Chrome Trace Event JSON (Perfetto,
    /// chrome://tracing; times in microseconds).
    #[arg(long, value_name = "PATH")]
    pub chrome_trace: Option<PathBuf>,
    /// Write the simulated timeline's spans as CSV.
    #[arg(long, value_name = "PATH")]
    pub spans_csv: Option<PathBuf>,
}

impl EventFlags {
    /// The event-only flags that were given (for the SimAI mode's warning).
    pub fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut add = |set: bool, name: &'static str| {
            if set {
                out.push(name);
            }
        };
        add(self.schedule.is_some(), "--schedule");
        add(self.virtual_stages.is_some(), "--virtual-stages");
        add(self.micro_batches.is_some(), "--micro-batches");
        add(self.latency_us.is_some(), "--latency-us");
        add(self.placement.is_some(), "--placement");
        add(self.oversubscription.is_some(), "--oversubscription");
        add(self.algorithm.is_some(), "--algorithm");
        add(self.backward_factor.is_some(), "--backward-factor");
        add(self.calibrate, "--calibrate");
        add(self.activation_bytes.is_some(), "--activation-bytes");
        add(self.overlap_grad_sync, "--overlap-grad-sync");
        add(self.block_repeats.is_some(), "--block-repeats");
        add(self.format.is_some(), "--format");
        add(self.iteration.is_some(), "--iteration");
        add(self.slow_rank.is_some(), "--slow-rank");
        add(self.chrome_trace.is_some(), "--chrome-trace");
        add(self.spans_csv.is_some(), "--spans-csv");
        out
    }
}

pub(crate) fn parse_format(name: &str) -> std::result::Result<Format, u8> {
    Format::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        eprintln!(
            "error: unknown format `{name}`; expected one of: {}",
            names.join(", ")
        );
        EXIT_USAGE
    })
}

/// The settings the flags give (`Err(code)`: already reported).
pub(crate) fn settings(args: &Args) -> Result<std::result::Result<(SimConfig, RunOptions), u8>> {
    let f = &args.simai;
    let e = &args.event;
    let mut config = SimConfig::default();
    let net = &mut config.network;
    if let Some(g) = f.gpus_per_server {
        net.gpus_per_node = g;
    }
    if let Some(k) = f.nics_per_server {
        net.nics_per_node = k;
    }
    match (f.nvlink_gbps, &f.gpu_type) {
        (Some(v), _) => net.nvlink_gbps = v,
        (None, Some(name)) => match gpu_preset(name) {
            Some(g) => net.nvlink_gbps = g.nvlink_busbw_gbps,
            None => {
                eprintln!(
                    "error: unknown GPU type `{name}`; expected one of: {}",
                    GPU_NAMES.join(", ")
                );
                return Ok(Err(EXIT_CONFIG));
            }
        },
        (None, None) => {}
    }
    match (f.nic_gbps, &f.nic_type) {
        (Some(v), _) => net.nic_gbps = v,
        (None, Some(name)) => match NicType::from_name(name) {
            Some(n) => net.nic_gbps = n.nic_busbw_gbps(),
            None => {
                eprintln!(
                    "error: unknown NIC type `{name}`; expected one of: {}",
                    NicType::NAMES
                );
                return Ok(Err(EXIT_CONFIG));
            }
        },
        (None, None) => {}
    }
    if let Some(us) = e.latency_us {
        if let Err(err) = net.set_latency_us(us) {
            eprint!("{}", err.to_diagnostic().render());
            return Ok(Err(EXIT_CONFIG));
        }
    }
    if let Some(name) = &e.placement {
        match PlacementOrder::parse(name) {
            Ok(order) => net.placement = order,
            Err(why) => {
                eprintln!("error: invalid setting `placement`: {why}");
                return Ok(Err(EXIT_CONFIG));
            }
        }
    }
    if let Some(x) = e.oversubscription {
        // Range-checked with the other settings (exit 4 when below 1).
        net.oversubscription = x;
    }
    if let Some(v) = e.virtual_stages {
        config.virtual_stages = v;
        if v > 1 && e.schedule.is_none() {
            config.schedule = ScheduleKind::Interleaved;
        }
    }
    if let Some(s) = e.schedule {
        config.schedule = s;
    }
    config.micro_batches = e.micro_batches;
    if let Some(a) = e.algorithm {
        config.algorithm = a;
    }
    config.backward_factor = e.backward_factor;
    config.activation_bytes = e.activation_bytes;
    config.overlap_grad_sync = e.overlap_grad_sync;
    if let Some(n) = e.block_repeats {
        if let Err(d) = trainscope_core::formats::neusight::check_block_repeats(n) {
            eprint!("{}", d.render());
            return Ok(Err(EXIT_CONFIG));
        }
    }
    // Measured replays: an explicit network setting replaces, for its
    // link, what the replay inferred from the trace.
    let network_overrides = NetworkOverrides {
        nvlink_gbps: f.nvlink_gbps.is_some() || f.gpu_type.is_some(),
        nic_gbps: f.nic_gbps.is_some()
            || f.nic_type.is_some()
            || f.nics_per_server.is_some()
            || e.oversubscription.is_some(),
        latency: e.latency_us.is_some(),
        algorithm: e.algorithm.is_some(),
    };
    let mut options = RunOptions {
        block_repeats: e.block_repeats,
        world: f.world,
        calibrate: e.calibrate,
        iteration: e.iteration,
        network_overrides,
        ..RunOptions::default()
    };
    if let Some(text) = &e.slow_rank {
        match SlowRank::parse(text) {
            Ok(sr) => options.slow_rank = Some(sr),
            Err(why) => {
                eprintln!("error: invalid setting `slow-rank`: {why}");
                return Ok(Err(EXIT_CONFIG));
            }
        }
    }
    if let Some(name) = &e.format {
        match parse_format(name) {
            Ok(fm) => options.format = Some(fm),
            Err(code) => return Ok(Err(code)),
        }
    }
    if let Some(dir) = &f.ratio_table_dir {
        let mut tables = RatioTables::builtin();
        let mut warnings = Vec::new();
        if let Err(code) = load_tables(dir, &mut tables, &mut warnings)? {
            return Ok(Err(code));
        }
        for w in &warnings {
            eprintln!("{}", w.short());
        }
        options.ratio_tables = Some(tables);
    }
    match (args.whatif.faults.faults(), args.whatif.blame()) {
        (Ok(faults), Ok(blame)) => {
            config.faults = faults;
            options.blame = blame;
        }
        (Err(why), _) | (_, Err(why)) => {
            eprintln!("error: {why}");
            return Ok(Err(EXIT_CONFIG));
        }
    }
    Ok(Ok((config, options)))
}

/// What `convert` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvertTo {
    /// Chrome Trace Event JSON (times in microseconds).
    ChromeTrace,
    /// One CSV row per span.
    SpansCsv,
    /// A SimAI/AICB workload (model-level jobs: `--model`).
    SimaiWorkload,
    /// Chakra execution traces of the simulated job, one `.et` per
    /// simulated rank (per stage for model-level jobs), into the directory
    /// given by -o (ASTRA-sim's input).
    ChakraEt,
}

/// `trainscope convert FILE... --to chrome-trace -o PATH`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// A measured run: the rank traces of one Echo job, or an Optimus-Prime
    /// log (or none with --model); with --to chakra-et any input that
    /// simulates (its simulated job is written).
    #[arg(required_unless_present = "model", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ConvertTo::ChromeTrace)]
    pub to: ConvertTo,
    /// Output file (with --to chakra-et: the output directory).
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: PathBuf,
    /// Force the input format instead of detecting it.
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,
    /// With --model: world size, GPUs.
    #[arg(long, value_name = "N")]
    pub world: Option<u32>,
    /// With --model: the GPU preset (default H100-SXM).
    #[arg(long, value_name = "T")]
    pub gpu_type: Option<String>,
    #[command(flatten)]
    pub model: ModelFlags,
}

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
    /// reduction's bytes, an fp32 copy of the optimizer's shard. With a
    /// PyTorch-level stack (eager, compiled): bf16 weights and gradients,
    /// so no per-micro-batch autocast casts of fp32 weights.
    #[arg(long = "no-grad-reduce-in-fp32")]
    pub bf16_grads: bool,
    /// FP8 training keeps the linear layers' weights in FP8 and the
    /// distributed optimizer all-gathers them in FP8 (Megatron's
    /// --fp8-param-gather, set by Megatron-Bridge's FP8 recipes): 2 bytes a
    /// linear weight fewer, half the parameter all-gather's bytes for them.
    #[arg(long)]
    pub fp8_param_gather: bool,
    #[command(flatten)]
    pub software: StackFlags,
    #[command(flatten)]
    pub sharding: ShardingFlags,
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
    /// Activation recompute: none (default), selective, full, op
    /// (torchtitan's per-op selective checkpointing).
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
        add(self.fp8_param_gather, "--fp8-param-gather");
        add(self.software.stack.is_some(), "--stack");
        add(self.software.cuda_graphs.is_some(), "--cuda-graphs");
        add(
            self.software.attention_kernel.is_some(),
            "--attention-kernel",
        );
        add(self.software.host_launch_us.is_some(), "--host-launch-us");
        add(
            self.software.launch_queue_depth.is_some(),
            "--launch-queue-depth",
        );
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
        out.extend(self.sharding.given());
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
                format!(
                    "unknown recompute mode `{r}`; expected one of: {}",
                    Recompute::names()
                )
            })?,
        };
        let stack = self.software.settings()?;
        let sharding = self.sharding.settings()?;
        Ok(TrainingSetup {
            stack,
            sharding,
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
            fp8_param_gather: self.fp8_param_gather,
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

/// The software stack's flags, shared by `simulate --model` and `sweep`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct StackFlags {
    /// The software stack that launches the kernels: megatron-te (the
    /// default), pytorch-eager or torch-compile; each rank's host launches
    /// them at the stack's cost per kernel.
    #[arg(long, value_name = "STACK")]
    pub stack: Option<String>,
    /// CUDA graphs: none (default), layers (per layer block, Megatron's
    /// partial scopes; `partial` also works) or full (the whole step).
    #[arg(long, value_name = "SCOPE")]
    pub cuda_graphs: Option<String>,
    /// Host time per kernel launch, microseconds, instead of the stack's
    /// (0 turns the host model off).
    #[arg(long, value_name = "US")]
    pub host_launch_us: Option<f64>,
    /// Launches the device's queue holds per rank before the host's next
    /// launch blocks (default 1024, the CUDA driver's observed limit per
    /// stream; 0 or `unbounded`: the host may run a whole iteration ahead).
    #[arg(long, value_name = "N")]
    pub launch_queue_depth: Option<String>,
    /// MoE token dispatcher (Megatron's `--moe-token-dispatcher-type`):
    /// alltoall (default), allgather, or flex (DeepEP / HybridEP: fused
    /// kernels, tokens sent once per destination rank and node).
    #[arg(long, value_name = "D")]
    pub moe_token_dispatcher: Option<String>,
    /// Megatron's MoE router and permute fusions: on or off (default: the
    /// stack's; megatron-te and torch-compile on, pytorch-eager off).
    #[arg(long, value_name = "ON|OFF")]
    pub moe_fusion: Option<String>,
    /// Megatron's EP overlap (`--overlap-moe-expert-parallel-comm`): a
    /// micro-batch's forward runs with another's backward, one's
    /// all-to-alls overlapping the other's compute.
    #[arg(long)]
    pub moe_a2a_overlap: bool,
    /// Tokens of the busiest expert rank over the mean, >= 1 (default 1:
    /// balanced routing): its experts and all-to-alls take that much longer.
    #[arg(long, value_name = "X")]
    pub moe_imbalance: Option<f64>,
    /// Transformer Engine's tensor-parallel communication overlap (needs
    /// --sequence-parallel): a block's all-gather streams with its first
    /// GEMM, its reduce-scatter with its last.
    #[arg(long)]
    pub tp_comm_overlap: bool,
    /// The fused attention kernel: cudnn (default; Transformer Engine's,
    /// and PyTorch's SDPA where it picks cuDNN) or flash2
    /// (FlashAttention-2, PyTorch's SDPA flash backend: slower on H100-class
    /// GPUs; what PyTorch releases from late 2024 to mid 2025 ran).
    #[arg(long, value_name = "KERNEL")]
    pub attention_kernel: Option<String>,
}

impl StackFlags {
    /// The core's stack settings (absent flags: its defaults; `Err`: the
    /// message for exit 4).
    pub fn settings(&self) -> std::result::Result<StackSettings, String> {
        let d = StackSettings::default();
        Ok(StackSettings {
            stack: self.stack.as_deref().map_or(Ok(d.stack), Stack::parse)?,
            cuda_graphs: self
                .cuda_graphs
                .as_deref()
                .map_or(Ok(d.cuda_graphs), CudaGraphs::parse)?,
            launch_ns_per_kernel: self.host_launch_us.map(launch_ns_from_us).transpose()?,
            launch_queue_depth: self
                .launch_queue_depth
                .as_deref()
                .map(queue_depth_from_text)
                .transpose()?,
            dispatcher: self
                .moe_token_dispatcher
                .as_deref()
                .map_or(Ok(d.dispatcher), Dispatcher::parse)?,
            moe_fusion: self.moe_fusion.as_deref().map(parse_fusion).transpose()?,
            moe_a2a_overlap: self.moe_a2a_overlap,
            tp_comm_overlap: self.tp_comm_overlap,
            moe_imbalance_milli: self.moe_imbalance.map(imbalance_milli).transpose()?,
            attention_kernel: self
                .attention_kernel
                .as_deref()
                .map_or(Ok(d.attention_kernel), AttentionKernel::parse)?,
        })
    }
}

/// Sharded data parallelism's flags (`simulate --model`): the ZeRO stage,
/// FSDP's prefetch and resharding (the core's
/// [`trainscope_core::job::sharding`]).
#[derive(clap::Args, Debug, Default, Clone)]
pub struct ShardingFlags {
    /// ZeRO stage: 1 shards the optimizer states over the data-parallel
    /// ranks (the distributed optimizer), 2 also the gradients, 3 also the
    /// weights (all-gathered per layer before its forward and backward,
    /// gradients reduce-scattered after it).
    #[arg(long, value_name = "N")]
    pub zero: Option<u8>,
    /// FSDP (FSDP2's form): ZeRO-3.
    #[arg(long)]
    pub fsdp: bool,
    /// ZeRO-3: units all-gathered ahead of the one computing (default 1).
    #[arg(long, value_name = "N")]
    pub fsdp_prefetch: Option<u32>,
    /// ZeRO-3: keep each unit's gathered weights from its forward to its
    /// backward (FSDP2's `reshard_after_forward=False`): one all-gather a
    /// unit, more memory.
    #[arg(long)]
    pub no_reshard_after_forward: bool,
    /// HSDP (ZeRO-3 / FSDP with hybrid sharding; torchtitan's
    /// data_parallel_shard_degree): weights, gradients and optimizer
    /// states sharded inside groups of N data-parallel ranks (all-gathers
    /// and reduce-scatters there), gradients all-reduced across the DP / N
    /// replicas. N divides DP; needs --zero 3 or --fsdp.
    #[arg(long, value_name = "N")]
    pub hsdp_shard: Option<u32>,
    /// Keep state in host memory (DeepSpeed ZeRO-Offload / FSDP2
    /// CPUOffloadPolicy): `optimizer` (ZeRO 1-3: the optimizer states, the
    /// step on the CPU, gradients down and weights up over PCIe) or
    /// `optimizer+params` (ZeRO-3: also the sharded weights and
    /// gradients).
    #[arg(long, value_name = "WHAT")]
    pub offload: Option<String>,
}

impl ShardingFlags {
    /// The flags that were given (model-only).
    pub fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.zero.is_some() {
            out.push("--zero");
        }
        if self.fsdp {
            out.push("--fsdp");
        }
        if self.fsdp_prefetch.is_some() {
            out.push("--fsdp-prefetch");
        }
        if self.no_reshard_after_forward {
            out.push("--no-reshard-after-forward");
        }
        if self.hsdp_shard.is_some() {
            out.push("--hsdp-shard");
        }
        if self.offload.is_some() {
            out.push("--offload");
        }
        out
    }

    /// The core's sharding settings (`Err`: the message for exit 4).
    pub fn settings(&self) -> std::result::Result<Sharding, String> {
        let d = Sharding::default();
        let zero = match (self.zero, self.fsdp) {
            (Some(z), true) if z != 3 => {
                return Err(format!(
                    "--fsdp is ZeRO-3 but --zero {z} is given; give one of them"
                ))
            }
            (_, true) => ZeroStage::Parameters,
            (Some(z), false) => ZeroStage::from_level(z)
                .ok_or_else(|| format!("--zero {z}: the ZeRO stage is 0, 1, 2 or 3"))?,
            (None, false) => d.zero,
        };
        Ok(Sharding {
            zero,
            prefetch: self.fsdp_prefetch.unwrap_or(d.prefetch),
            reshard_after_forward: !self.no_reshard_after_forward,
            hsdp_shard: self.hsdp_shard.unwrap_or(d.hsdp_shard),
            offload: match &self.offload {
                None => d.offload,
                Some(o) => Offload::from_name(o).ok_or_else(|| {
                    format!("--offload {o}: give none, optimizer or optimizer+params")
                })?,
            },
        })
    }
}

/// The what-if faults of a run (slow GPUs, slow links, kernel jitter and
/// its seed), the core's [`Faults`]: `simulate` takes them, `sweep` applies
/// them to every candidate.
#[derive(clap::Args, Debug, Default, Clone)]
#[command(next_help_heading = "What-if faults")]
pub struct FaultFlags {
    /// Slow GPUs: RANKS:FACTOR, every compute task of the ranks FACTOR
    /// times as long (`17:1.25`, `4-7,9:2`, `node3:1.1`, `stage2:1.5`);
    /// repeatable. The report's `whatif` gives the step with and without
    /// and who carries the delay. A transient slow-down adds a window,
    /// @ONSET+DURATION from the run's start: in time (`17:1.5@2s+500ms`;
    /// ns, us, ms, s, min), compute inside it at 1/FACTOR speed, a task
    /// slowed for its part inside; or in iterations (`17:1.5@iter2+1`:
    /// after two iterations, for one). The what-if then runs iterations
    /// back to back until the window has ended and one more
    /// (`whatif.iteration_times_ns`).
    #[arg(long, value_name = "RANKS:FACTOR[@ONSET+DURATION]")]
    pub slow: Vec<String>,
    /// Slow links: A-B:FACTOR (between ranks A and B) or nodeN:FACTOR (a
    /// node's NICs): collectives and transfers over it run FACTOR times as
    /// long (their NVLink or NIC part); repeatable.
    #[arg(long, value_name = "LINK:FACTOR")]
    pub slow_link: Vec<String>,
    /// Per-kernel jitter: each compute task's time times a log-normal draw
    /// with mean 1 and this coefficient of variation, percent (seeded by
    /// --seed).
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub jitter: Option<f64>,
    /// Seed of every random draw of the command (the jitter; `plan`'s
    /// Monte-Carlo). Default 0.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

impl FaultFlags {
    /// The seed (0 when not given).
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(0)
    }

    /// The core's faults (`Err`: the message for exit 4).
    pub fn faults(&self) -> std::result::Result<Faults, String> {
        Faults::from_flags(
            self.slow.iter().map(String::as_str),
            self.slow_link.iter().map(String::as_str),
            self.jitter,
            self.seed(),
        )
        .map_err(|(name, e)| format!("invalid setting `{name}`: {e}"))
    }

    /// The faults as `simulate` spells them (a sweep row's command): no
    /// jitter (0%) is no flag, as the page writes it; the seed goes with
    /// the jitter.
    pub fn flags(&self) -> Vec<String> {
        let mut f = Vec::new();
        for s in &self.slow {
            f.extend(["--slow".to_string(), s.clone()]);
        }
        for s in &self.slow_link {
            f.extend(["--slow-link".to_string(), s.clone()]);
        }
        if let Some(j) = self.jitter.filter(|j| *j != 0.0) {
            f.extend(["--jitter".to_string(), j.to_string()]);
            f.extend(["--seed".to_string(), self.seed().to_string()]);
        }
        f
    }
}

/// What-if faults and blame, for `simulate` (files and `--model`); the
/// core's [`Faults`] and blame.
#[derive(clap::Args, Debug, Default, Clone)]
#[command(next_help_heading = "What-if faults")]
pub struct WhatIfFlags {
    #[command(flatten)]
    pub faults: FaultFlags,
    /// The blame: a measured per-rank replay against every rank's compute
    /// at the ranks' mean (the slow-down and who causes it); a described
    /// job, each stage slowed by --blame-factor in turn (what it costs the
    /// step, which group waits).
    #[arg(long)]
    pub blame: bool,
    /// The slow-down of --blame's sensitivity table (default 1.1).
    #[arg(long, value_name = "X")]
    pub blame_factor: Option<f64>,
}

impl WhatIfFlags {
    /// `--blame` with its factor (`Err`: the message for exit 4).
    pub fn blame(&self) -> std::result::Result<Option<f64>, String> {
        if self.blame_factor.is_some() && !self.blame {
            return Err("--blame-factor sets --blame's slow-down; give --blame too".to_string());
        }
        let f = self.blame_factor.unwrap_or(DEFAULT_SENSITIVITY_FACTOR);
        faults::check_factor(f).map_err(|e| format!("invalid setting `blame-factor`: {e}"))?;
        Ok(self.blame.then_some(f))
    }

    /// The what-if flags that were given (for the SimAI mode's warning).
    pub fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for (set, name) in [
            (!self.faults.slow.is_empty(), "--slow"),
            (!self.faults.slow_link.is_empty(), "--slow-link"),
            (self.faults.jitter.is_some(), "--jitter"),
            (self.blame, "--blame"),
        ] {
            if set {
                out.push(name);
            }
        }
        out
    }
}
