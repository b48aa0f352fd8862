//! `trainscope sweep --model MODEL --world N [bounds]`: the configuration
//! search of [`trainscope_core::search`] on every core (rayon), with a
//! progress bar on stderr when it is a terminal (indicatif). The core
//! enumerates, prunes and simulates; this file parses the lists, reads the
//! model, runs the candidates in parallel (the order of the results does not
//! depend on the threads: rows are sorted with the enumeration index as the
//! last key) and prints text, JSON (`--json`) or CSV (`--csv PATH`).
//!
//! `--shard I/N` evaluates the I-th of N slices (Slurm job arrays,
//! Kubernetes Indexed Jobs); `sweep --merge FILE...` joins the shards'
//! `--json` outputs into the report an unsharded run prints.
//!
//! The GPU, the cluster and the efficiency flags are given to the sweep as
//! to `simulate --model`; they are parsed by `simulate`'s own parser
//! ([`crate::args::Args`]) so that each row's `flags` reproduce it;
//! a word a shell would split (a model path with a space) is quoted in
//! shell style ([`shell_join`]).
//!
//! Exit codes: 0 success, 2 usage, 3 a `--merge` file is not a sweep's JSON
//! (or the model's config file failed to parse), 4 an invalid sweep (unknown
//! preset, GPU, value; shards that do not belong together).

use crate::io::{EXIT_CONFIG, EXIT_PARSE, EXIT_USAGE};
use anyhow::{Context, Result};
use clap::Parser;
use rayon::prelude::*;
use std::io::IsTerminal;
use std::path::PathBuf;
use trainscope_core::engine::ScheduleKind;
use trainscope_core::goodput::Work;
use trainscope_core::hardware::Precision;
use trainscope_core::job::memory::gib;
use trainscope_core::job::sharding::{Offload, ZeroStage};
use trainscope_core::job::{Recompute, DEFAULT_GLOBAL_BATCH, DEFAULT_SEQ_LENGTH};
use trainscope_core::model::dispatcher::Dispatcher;
use trainscope_core::model::stack::CudaGraphs;
use trainscope_core::named::Named;
use trainscope_core::search::report::{summary, ShardId};
use trainscope_core::search::time_to_train::rank_by_time_to_train;
use trainscope_core::search::{
    build, enumerate_shard, merge, process, shell_join, sweep_config, SweepReport, SweepSpec,
};

/// What rows are ranked by.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RankBy {
    /// The iteration time (with `--straggler`, the straggler's).
    #[default]
    Iteration,
    /// Days to train `--tokens` (or `--steps`) with failures, checkpoints
    /// and restarts (the goodput planner's closed form; the run's flags
    /// are `plan`'s).
    TimeToTrain,
}

/// Flags of `trainscope sweep`.
#[derive(clap::Args, Debug)]
#[command(mut_arg("seed", |a| a.requires("jitter")))]
pub struct Args {
    /// A model preset name or the path of a HuggingFace config.json.
    #[arg(long, value_name = "MODEL", required_unless_present = "merge")]
    pub model: Option<String>,
    /// World sizes to try (GPUs), comma-separated.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub world: Vec<u32>,
    /// Node counts to try instead of --world (world = nodes x GPUs per
    /// node), comma-separated.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "world"
    )]
    pub nodes: Vec<u32>,
    /// Sequences per iteration, the same for every candidate (default 1024).
    #[arg(long, value_name = "N")]
    pub global_batch_size: Option<u32>,
    /// Tokens per sequence (default 4096).
    #[arg(long, value_name = "N")]
    pub seq_length: Option<u32>,
    /// GEMM precision: fp32, bf16 (default), fp16, fp8.
    #[arg(long, value_name = "P")]
    pub precision: Option<String>,
    /// Megatron's unfused core attention instead of a fused (flash) kernel.
    #[arg(long)]
    pub no_flash_attention: bool,
    /// Gradients kept and reduced in bf16 (as `simulate`'s flag).
    #[arg(long = "no-grad-reduce-in-fp32")]
    pub bf16_grads: bool,
    /// FP8 candidates keep their linear weights in FP8 and all-gather them
    /// in FP8 (as `simulate`'s flag; ZeRO-3 candidates do not take it).
    #[arg(long)]
    pub fp8_param_gather: bool,
    /// The software stack every candidate runs on.
    #[command(flatten)]
    pub software: crate::args::StackFlags,
    /// Tensor-parallel sizes (default: powers of two up to the GPUs per node
    /// that divide the attention heads).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub tp: Vec<u32>,
    /// Pipeline stages (default: the divisors of the layer count, and the
    /// powers of two split unevenly: middle stages a whole share, the
    /// last stage lighter). A PP that does not divide the layers is run
    /// with that uneven split (`--first-stage-layers/--last-stage-layers`
    /// in its row's flags).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub pp: Vec<u32>,
    /// Context-parallel sizes (default 1; the sequence length must be a
    /// multiple of 2 x CP, others are skipped with the reason).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub cp: Vec<u32>,
    /// Expert-parallel sizes (default 1; MoE: powers of two dividing the
    /// expert count).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub ep: Vec<u32>,
    /// Expert tensor-parallel sizes: `tp` (Megatron's default) and/or
    /// numbers (1: whole experts per rank, EP carved out of TP x DP).
    /// Default: tp for a dense model, tp,1 for a mixture of experts.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub expert_tp: Vec<String>,
    /// Virtual stages of the interleaved schedule (default: every v > 1
    /// with PP x v dividing the layers).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub vpp: Vec<u32>,
    /// Micro-batch sizes (default 1,2,4).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub micro_batch_size: Vec<u32>,
    /// Recompute modes: none, selective, full, op (default none,
    /// selective, full).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub recompute: Vec<String>,
    /// Schedules: gpipe, 1f1b, interleaved, zb-h1, zb-h2, zbv, dualpipev
    /// (default all).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub schedule: Vec<String>,
    /// Sequence parallelism: on, off or on,off (default on).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub sequence_parallel: Vec<String>,
    /// Distributed optimizer: on, off or on,off (default on).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub distributed_optimizer: Vec<String>,
    /// ZeRO stages to try, e.g. 1,3 (0: nothing sharded, 1: the
    /// distributed optimizer, 2: also gradients, 3: also weights, FSDP);
    /// replaces --distributed-optimizer's list.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "distributed_optimizer",
        help_heading = "Bounds"
    )]
    pub zero: Vec<u8>,
    /// HSDP shard-group sizes to try with ZeRO-3, e.g. 0,8 (0: shard over
    /// all of DP; a size that does not divide DP, or a layout without
    /// ZeRO-3, is skipped with the reason).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub hsdp_shard: Vec<u32>,
    /// What to keep in host memory, as a dimension, e.g.
    /// none,optimizer,optimizer+params (a layout that fits only with
    /// offload is found; optimizer+params without ZeRO-3 is skipped with
    /// the reason).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub offload: Vec<String>,
    /// EP overlap values to try for MoE models, e.g. off,on (the stack
    /// flags' --cuda-graphs and --moe-token-dispatcher take comma lists in
    /// a sweep too: each value is a dimension).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Bounds"
    )]
    pub moe_a2a_overlap_values: Vec<String>,
    /// Rows to print (text: default 10; JSON and CSV: default all).
    #[arg(long, value_name = "K", help_heading = "Output")]
    pub top: Option<usize>,
    /// Print the report as JSON (what --merge reads).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Rank rows by `iteration` time (default) or by `time-to-train`:
    /// days to train the run (`--tokens N` or `--steps N`, a failure rate
    /// and `plan`'s other run flags) with failures, checkpoints and
    /// restarts; rows gain `days_to_train`.
    #[arg(long, value_enum, default_value_t = RankBy::Iteration, help_heading = "Output")]
    pub rank_by: RankBy,
    #[command(flatten)]
    pub run: crate::plan::RunFlags,
    /// Also write every row as CSV to PATH.
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub csv: Option<PathBuf>,
    /// Evaluate only the I-th of N deterministic slices (0 <= I < N);
    /// print with --json and join the outputs with --merge.
    #[arg(long, value_name = "I/N", help_heading = "Output")]
    pub shard: Option<String>,
    /// Join the --json outputs of `sweep --shard I/N` (all N, any order)
    /// into the report of the unsharded sweep.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["model", "shard"], help_heading = "Output")]
    pub merge: Vec<PathBuf>,
    /// GPU preset (default H100-SXM); also sets the NVLink bandwidth.
    #[arg(long, value_name = "T", help_heading = "Cluster")]
    pub gpu_type: Option<String>,
    /// GPUs per node (default 8).
    #[arg(
        long,
        value_name = "N",
        visible_alias = "gpus-per-server",
        help_heading = "Cluster"
    )]
    pub gpus_per_node: Option<u32>,
    /// NICs per node (default 8).
    #[arg(
        long,
        value_name = "N",
        visible_alias = "nics-per-server",
        help_heading = "Cluster"
    )]
    pub nics_per_node: Option<u32>,
    /// NVLink bus bandwidth, GB/s.
    #[arg(long, value_name = "X", help_heading = "Cluster")]
    pub nvlink_gbps: Option<f64>,
    /// Per-NIC bus bandwidth, GB/s.
    #[arg(long, value_name = "X", help_heading = "Cluster")]
    pub nic_gbps: Option<f64>,
    /// NIC preset: CX6, CX7, BF3.
    #[arg(long, value_name = "T", help_heading = "Cluster")]
    pub nic_type: Option<String>,
    /// Per-step latency across nodes, microseconds.
    #[arg(long, value_name = "X", help_heading = "Cluster")]
    pub latency_us: Option<f64>,
    /// Rank layout on the nodes (default tp-dp-pp).
    #[arg(long, value_name = "ORDER", help_heading = "Cluster")]
    pub placement: Option<String>,
    /// Fabric oversubscription X >= 1.
    #[arg(long, value_name = "X", help_heading = "Cluster")]
    pub oversubscription: Option<f64>,
    /// Collective cost: ring (default), tree, simai.
    #[arg(long, value_name = "A", help_heading = "Cluster")]
    pub algorithm: Option<String>,
    /// Overlap the gradient sync with the last backward.
    #[arg(long, help_heading = "Cluster")]
    pub overlap_grad_sync: bool,
    /// Faults applied to every candidate (`simulate`'s flags; here
    /// `--seed` needs `--jitter`, the only random draw of a sweep).
    #[command(flatten)]
    pub faults: crate::args::FaultFlags,
    /// Rank layouts by their step with one GPU FACTOR times slower, at the
    /// worst place for it (each pipeline stage in turn, at most 8 evenly
    /// spaced): a layout that synchronises less tolerates a straggler
    /// better. Rows gain `straggler_iteration_time_ns` and
    /// `straggler_stage`.
    #[arg(long, value_name = "FACTOR", help_heading = "What-if")]
    pub straggler: Option<f64>,
    /// Fraction of the dense peak a large GEMM reaches.
    #[arg(long, value_name = "X", help_heading = "Cluster")]
    pub gemm_efficiency: Option<f64>,
    /// Fraction of the dense peak the fused attention core reaches.
    #[arg(long, value_name = "X", help_heading = "Cluster")]
    pub attention_efficiency: Option<f64>,
    /// Fraction of the memory bandwidth bandwidth-bound kernels reach.
    #[arg(long, value_name = "X", help_heading = "Cluster")]
    pub hbm_efficiency: Option<f64>,
    /// Launch overhead per kernel, microseconds.
    #[arg(long, value_name = "US", help_heading = "Cluster")]
    pub launch_overhead_us: Option<f64>,
}

/// `simulate`'s parser, to read the common flags exactly as `simulate`
/// reads them.
#[derive(Parser, Debug)]
struct SimulateCli {
    #[command(flatten)]
    args: crate::args::Args,
}

impl Args {
    /// The flags every row shares: the model, the GPU, the cluster and the
    /// efficiencies, as `simulate --model` spells them.
    fn common_flags(&self, model: &str) -> Vec<String> {
        let mut f = vec!["--model".to_string(), model.to_string()];
        let mut put = |name: &str, v: Option<String>| {
            if let Some(v) = v {
                f.push(name.to_string());
                f.push(v);
            }
        };
        put("--gpu-type", self.gpu_type.clone());
        put("--gpus-per-node", self.gpus_per_node.map(|x| x.to_string()));
        put("--nics-per-node", self.nics_per_node.map(|x| x.to_string()));
        put("--nvlink-gbps", self.nvlink_gbps.map(|x| x.to_string()));
        put("--nic-gbps", self.nic_gbps.map(|x| x.to_string()));
        put("--nic-type", self.nic_type.clone());
        put("--latency-us", self.latency_us.map(|x| x.to_string()));
        put("--placement", self.placement.clone());
        put(
            "--oversubscription",
            self.oversubscription.map(|x| x.to_string()),
        );
        put("--algorithm", self.algorithm.clone());
        put(
            "--gemm-efficiency",
            self.gemm_efficiency.map(|x| x.to_string()),
        );
        put(
            "--attention-efficiency",
            self.attention_efficiency.map(|x| x.to_string()),
        );
        put(
            "--hbm-efficiency",
            self.hbm_efficiency.map(|x| x.to_string()),
        );
        put(
            "--launch-overhead-us",
            self.launch_overhead_us.map(|x| x.to_string()),
        );
        f.extend(self.faults.flags());
        if self.overlap_grad_sync {
            f.push("--overlap-grad-sync".to_string());
        }
        f
    }
}

fn on_off(name: &str, values: &[String]) -> std::result::Result<Option<Vec<bool>>, String> {
    if values.is_empty() {
        return Ok(None);
    }
    values
        .iter()
        .map(|v| {
            trainscope_core::limits::on_off(v)
                .ok_or_else(|| format!("--{name}: `{}` is not on or off", v.trim()))
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(Some)
}

fn numbers(name: &str, values: &[u32]) -> std::result::Result<Option<Vec<u32>>, String> {
    if values.contains(&0) {
        return Err(format!(
            "--{name}: 0 is not a size; give whole numbers >= 1"
        ));
    }
    Ok((!values.is_empty()).then(|| values.to_vec()))
}

/// `I/N` with 0 <= I < N.
fn parse_shard(text: &str) -> std::result::Result<ShardId, String> {
    let bad = || format!("--shard `{text}`: expected I/N with 0 <= I < N (e.g. 0/4)");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let index: u32 = i.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(bad());
    }
    Ok(ShardId { index, count })
}

/// Run `trainscope sweep`; returns the exit code.
pub fn run(args: &Args) -> Result<u8> {
    if !args.merge.is_empty() {
        return run_merge(args);
    }
    let Some(model) = &args.model else {
        eprintln!("error: give --model MODEL (or --merge FILE...)");
        return Ok(EXIT_USAGE);
    };
    if args.world.is_empty() && args.nodes.is_empty() {
        eprintln!("error: give --world N (or --nodes LIST)");
        return Ok(EXIT_USAGE);
    }
    let shard_id = match args.shard.as_deref().map(parse_shard).transpose() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("error: {why}");
            return Ok(EXIT_USAGE);
        }
    };
    match (args.rank_by, args.run.missing()) {
        (RankBy::TimeToTrain, Some(why)) => {
            eprintln!("error: --rank-by time-to-train: {why}");
            return Ok(EXIT_USAGE);
        }
        (RankBy::Iteration, _) if args.run.any_given() => {
            eprintln!("error: the run's flags (--tokens, --steps, a failure rate) rank by time to train: add --rank-by time-to-train");
            return Ok(EXIT_USAGE);
        }
        _ => {}
    }
    if shard_id.is_some() && args.top.is_some() {
        eprintln!(
            "error: --top with --shard would drop rows the merge needs; give --top to --merge"
        );
        return Ok(EXIT_USAGE);
    }
    // The common flags through simulate's own parser.
    let common = args.common_flags(model);
    let mut argv = vec!["trainscope-simulate".to_string()];
    argv.extend(common.iter().cloned());
    let sim = match SimulateCli::try_parse_from(&argv) {
        Ok(s) => s.args,
        Err(e) => {
            let _ = e.print();
            return Ok(EXIT_USAGE);
        }
    };
    let config = match crate::args::settings(&sim)? {
        Ok((c, _)) => c,
        Err(code) => return Ok(code),
    };
    let spec_model = match crate::model::load_model(model)? {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let gpu = match crate::model::load_gpu(&sim.model, sim.simai.gpu_type.as_deref()) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let spec = match make_spec(args, spec_model, gpu, &config, &common) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("error: invalid setting: {why}");
            return Ok(EXIT_CONFIG);
        }
    };
    let started = std::time::Instant::now();
    let e = enumerate_shard(&spec, shard_id);
    let candidates = e.candidates;
    let config = sweep_config(&config);
    let bar = progress(candidates.len() as u64);
    let outcomes: Vec<_> = candidates
        .par_iter()
        .map(|c| {
            let o = process(c, &config, &spec.common_flags, spec.straggler);
            bar.inc(1);
            o
        })
        .collect();
    bar.finish_and_clear();
    let mut report = build(
        spec.describe(),
        shard_id,
        e.skipped,
        e.skipped_reasons,
        outcomes,
    );
    if args.rank_by == RankBy::TimeToTrain {
        let work = match (args.run.tokens, args.run.steps) {
            (_, Some(steps)) => Work::Steps(steps),
            // The tokens per iteration are the sweep's (set per row).
            (Some(tokens), None) => Work::Tokens {
                tokens,
                tokens_per_iteration: 1,
            },
            (None, None) => unreachable!("RunFlags::missing checked the amount"),
        };
        let run = args.run.input(1, work, 1, spec.gpus_per_node, 0);
        if let Err(e) = rank_by_time_to_train(&mut report, &spec, &run) {
            eprint!("{}", e.to_diagnostic().render());
            return Ok(EXIT_CONFIG);
        }
    }
    eprintln!(
        "sweep: {} candidates, {} pruned, {} simulated in {:.2} s on {} threads",
        report.candidates,
        report.pruned,
        report.simulated,
        started.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    output(args, report)
}

fn make_spec(
    args: &Args,
    model: trainscope_core::model::ModelSpec,
    gpu: trainscope_core::hardware::GpuSpec,
    config: &trainscope_core::engine::SimConfig,
    common: &[String],
) -> std::result::Result<SweepSpec, String> {
    let gpn = config.network.gpus_per_node;
    let worlds: Vec<u32> = if args.world.is_empty() {
        args.nodes
            .iter()
            .map(|n| {
                n.checked_mul(gpn)
                    .filter(|w| *w > 0)
                    .ok_or_else(|| format!("--nodes {n} x {gpn} GPUs per node is not a world size"))
            })
            .collect::<std::result::Result<_, _>>()?
    } else {
        numbers("world", &args.world)?.unwrap_or_default()
    };
    let precision = match &args.precision {
        None => Precision::Bf16,
        Some(p) => Precision::from_name(p).ok_or_else(|| {
            format!("unknown precision `{p}`; expected one of: fp32, bf16, fp16, fp8")
        })?,
    };
    let recompute = if args.recompute.is_empty() {
        None
    } else {
        Some(
            args.recompute
                .iter()
                .map(|r| {
                    Recompute::from_name(r).ok_or_else(|| {
                        format!(
                            "unknown recompute mode `{r}`; expected {}",
                            Recompute::names()
                        )
                    })
                })
                .collect::<std::result::Result<Vec<_>, _>>()?,
        )
    };
    let schedule = if args.schedule.is_empty() {
        None
    } else {
        Some(
            args.schedule
                .iter()
                .map(|s| {
                    ScheduleKind::from_name(&s.trim().to_ascii_lowercase()).ok_or_else(|| {
                        format!(
                            "unknown schedule `{s}`; expected one of: {}",
                            ScheduleKind::ALL.map(|k| k.name()).join(", ")
                        )
                    })
                })
                .collect::<std::result::Result<Vec<_>, _>>()?,
        )
    };
    let mut spec = SweepSpec::new(model, gpu, worlds.first().copied().unwrap_or(1));
    spec.worlds = worlds;
    spec.gpus_per_node = gpn;
    spec.global_batch_size = args.global_batch_size.unwrap_or(DEFAULT_GLOBAL_BATCH);
    spec.seq_length = args.seq_length.unwrap_or(DEFAULT_SEQ_LENGTH);
    if spec.global_batch_size == 0 || spec.seq_length == 0 {
        return Err("the global batch and the sequence length must be >= 1".to_string());
    }
    spec.precision = precision;
    spec.flash_attention = !args.no_flash_attention;
    spec.bf16_grads = args.bf16_grads;
    if args.fp8_param_gather && precision != Precision::Fp8 {
        return Err("--fp8-param-gather needs FP8 training: add --precision fp8".to_string());
    }
    spec.fp8_param_gather = args.fp8_param_gather;
    spec.straggler = args.straggler;
    // The stack flags' comma lists are dimensions; the first value of each
    // is the base stack.
    let first = |v: &Option<String>| {
        v.as_deref()
            .map(|t| t.split(',').next().unwrap_or("").to_string())
    };
    fn listed(v: &Option<String>) -> Option<&str> {
        v.as_deref().filter(|t| t.contains(','))
    }
    let base = crate::args::StackFlags {
        stack: args.software.stack.clone(),
        cuda_graphs: first(&args.software.cuda_graphs),
        host_launch_us: args.software.host_launch_us,
        launch_queue_depth: args.software.launch_queue_depth.clone(),
        moe_token_dispatcher: first(&args.software.moe_token_dispatcher),
        moe_fusion: args.software.moe_fusion.clone(),
        moe_a2a_overlap: args.software.moe_a2a_overlap,
        moe_imbalance: args.software.moe_imbalance,
        tp_comm_overlap: args.software.tp_comm_overlap,
        attention_kernel: args.software.attention_kernel.clone(),
    };
    spec.stack = base.settings()?;
    if let Some(list) = listed(&args.software.cuda_graphs) {
        spec.cuda_graphs = Some(
            list.split(',')
                .map(CudaGraphs::parse)
                .collect::<std::result::Result<Vec<_>, _>>()?,
        );
    }
    if let Some(list) = listed(&args.software.moe_token_dispatcher) {
        spec.dispatcher = Some(
            list.split(',')
                .map(Dispatcher::parse)
                .collect::<std::result::Result<Vec<_>, _>>()?,
        );
    }
    if !args.moe_a2a_overlap_values.is_empty() {
        spec.moe_a2a_overlap = on_off("moe-a2a-overlap-values", &args.moe_a2a_overlap_values)?;
    }
    spec.tp = numbers("tp", &args.tp)?;
    spec.pp = numbers("pp", &args.pp)?;
    spec.cp = numbers("cp", &args.cp)?;
    spec.ep = numbers("ep", &args.ep)?;
    spec.expert_tp = expert_tp_list(&args.expert_tp)?;
    spec.vpp = numbers("vpp", &args.vpp)?;
    spec.micro_batch_size = numbers("micro-batch-size", &args.micro_batch_size)?;
    spec.recompute = recompute;
    spec.schedule = schedule;
    spec.sequence_parallel = on_off("sequence-parallel", &args.sequence_parallel)?;
    spec.distributed_optimizer = on_off("distributed-optimizer", &args.distributed_optimizer)?;
    if !args.zero.is_empty() {
        spec.zero = Some(
            args.zero
                .iter()
                .map(|&z| {
                    ZeroStage::from_level(z).ok_or_else(|| {
                        format!("--zero takes ZeRO stages 0, 1, 2 or 3, separated by commas; found `{z}`")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    if !args.hsdp_shard.is_empty() {
        spec.hsdp_shard = Some(args.hsdp_shard.clone());
    }
    if !args.offload.is_empty() {
        spec.offload = Some(
            args.offload
                .iter()
                .map(|o| {
                    Offload::from_name(o).ok_or_else(|| {
                        format!("--offload takes none, optimizer or optimizer+params, separated by commas; found `{o}`")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    spec.common_flags = shell_join(common);
    Ok(spec)
}

/// `--expert-tp tp,1`: `None` for `tp`, else the number (at least 1).
fn expert_tp_list(values: &[String]) -> Result<Option<Vec<Option<u32>>>, String> {
    if values.is_empty() {
        return Ok(None);
    }
    values
        .iter()
        .map(|v| match v.trim() {
            t if t.eq_ignore_ascii_case("tp") => Ok(None),
            t => match t.parse::<u32>() {
                Ok(n) if n >= 1 => Ok(Some(n)),
                _ => Err(format!(
                    "--expert-tp takes `tp` or sizes >= 1, separated by commas; found `{t}`"
                )),
            },
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A progress bar on stderr when it is a terminal, else hidden.
fn progress(n: u64) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(n);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "sweep {bar:40} {pos}/{len} candidates, {per_sec}, eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}

fn run_merge(args: &Args) -> Result<u8> {
    let mut shards = Vec::new();
    for path in &args.merge {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        match serde_json::from_slice::<SweepReport>(&bytes) {
            Ok(r) => shards.push(r),
            Err(e) => {
                eprintln!(
                    "error: {}: not the --json output of `trainscope sweep --shard I/N`: {e}",
                    path.display()
                );
                return Ok(EXIT_PARSE);
            }
        }
    }
    match merge(&shards) {
        Ok(r) => output(args, r),
        Err(e) => {
            eprintln!("error: cannot merge: {e}");
            Ok(EXIT_CONFIG)
        }
    }
}

fn output(args: &Args, mut report: SweepReport) -> Result<u8> {
    if let Some(path) = &args.csv {
        std::fs::write(path, csv(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        if let Some(k) = args.top {
            report.results.truncate(k);
        }
        crate::io::print_stdout(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        crate::io::print_stdout(&render_text(&report, args.top.unwrap_or(10)))?;
    }
    Ok(0)
}

/// Every row as CSV (sorted as in the report): one column per row field
/// the JSON carries (`cp` 1 and the stage splits empty where the JSON
/// omits them), the exposed communication per group, the flags last.
pub fn csv(r: &SweepReport) -> String {
    let mut out = String::from(
        "rank,index,iteration_time_ns,tokens_per_second,mfu,peak_bytes,capacity_bytes,fits,pareto,world,tp,pp,dp,cp,ep,expert_tp,vpp,first_stage_layers,last_stage_layers,account_for_embedding,account_for_loss,micro_batch_size,micro_batches,recompute,schedule,sequence_parallel,distributed_optimizer,zero,bubble_ns,exposed_tp_ns,exposed_cp_ns,exposed_ep_ns,exposed_dp_ns,exposed_dp_ep_ns,exposed_pp_ns,flags\n",
    );
    let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    for (i, x) in r.results.iter().enumerate() {
        let e = &x.exposed_comm_ns;
        let fields = [
            (i + 1).to_string(),
            x.index.to_string(),
            x.iteration_time_ns.to_string(),
            x.tokens_per_second.to_string(),
            x.mfu.to_string(),
            x.peak_bytes.to_string(),
            x.capacity_bytes.to_string(),
            x.fits.to_string(),
            x.pareto.to_string(),
            x.world.to_string(),
            x.tp.to_string(),
            x.pp.to_string(),
            x.dp.to_string(),
            x.cp.to_string(),
            x.ep.to_string(),
            opt(x.expert_tp),
            x.vpp.to_string(),
            opt(x.first_stage_layers),
            opt(x.last_stage_layers),
            x.account_for_embedding.to_string(),
            x.account_for_loss.to_string(),
            x.micro_batch_size.to_string(),
            x.micro_batches.to_string(),
            x.recompute.clone(),
            x.schedule.clone(),
            x.sequence_parallel.to_string(),
            x.distributed_optimizer.to_string(),
            x.zero.to_string(),
            x.bubble_ns.to_string(),
            e.tp.to_string(),
            e.cp.to_string(),
            e.ep.to_string(),
            e.dp.to_string(),
            e.dp_ep.to_string(),
            e.pp.to_string(),
            format!("\"{}\"", x.flags.replace('"', "\"\"")),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// The readable report: counts and reasons, the top rows, the Pareto
/// front, the winner's flags and why it wins.
pub fn render_text(r: &SweepReport, top: usize) -> String {
    let mut out = format!(
        "sweep{}: {} candidates ({} combinations skipped), {} pruned by memory before simulating, {} simulated, {} fit\n",
        r.shard
            .map(|s| format!(" shard {}/{}", s.index, s.count))
            .unwrap_or_default(),
        r.candidates,
        r.skipped,
        r.pruned,
        r.simulated,
        r.fitting
    );
    for (title, list) in [
        ("skipped", &r.skipped_reasons),
        ("pruned", &r.pruned_reasons),
        ("simulation refused", &r.failed_reasons),
    ] {
        for x in list {
            out.push_str(&format!("  {title} {:>6}: {}\n", x.count, x.reason));
        }
    }
    let days = r.results.iter().any(|x| x.days_to_train.is_some());
    // `--straggler`: the step rows rank by, and the stage slowed.
    let straggler = r
        .results
        .iter()
        .any(|x| x.straggler_iteration_time_ns.is_some());
    out.push_str(&format!(
        "\n  {:>4}{} {:>12}{} {:>12} {:>6} {:>10} {:>4}  configuration\n",
        "rank",
        if days { "  days to train" } else { "" },
        "iteration",
        if straggler {
            format!(" {:>21}", "with straggler, stage")
        } else {
            String::new()
        },
        "tokens/s",
        "MFU",
        "peak",
        "fits"
    ));
    for (i, x) in r.results.iter().take(top).enumerate() {
        out.push_str(&format!(
            "  {:>4}{} {:>9.1} ms{} {:>12.0} {:>5.1}% {:>10} {:>4}{} {}\n",
            i + 1,
            x.days_to_train
                .map(|d| format!(" {d:>14.2}"))
                .unwrap_or_default(),
            x.iteration_time_ns as f64 / 1e6,
            match (x.straggler_iteration_time_ns, x.straggler_stage) {
                (Some(t), Some(st)) => format!(" {:>9.1} ms stage {st:<2}", t as f64 / 1e6),
                (Some(t), None) => format!(" {:>9.1} ms {:8}", t as f64 / 1e6, ""),
                _ if straggler => format!(" {:>21}", ""),
                _ => String::new(),
            },
            x.tokens_per_second,
            x.mfu * 100.0,
            gib(x.peak_bytes),
            if x.fits { "yes" } else { "no" },
            if x.pareto { "*" } else { " " },
            summary(x)
        ));
    }
    let front: Vec<_> = r.results.iter().filter(|x| x.pareto).collect();
    out.push_str(&format!(
        "\n  Pareto front (iteration time vs peak memory, marked *): {} configurations\n",
        front.len()
    ));
    for x in &front {
        out.push_str(&format!(
            "    {:>9.1} ms {:>10}  {}\n",
            x.iteration_time_ns as f64 / 1e6,
            gib(x.peak_bytes),
            summary(x)
        ));
    }
    match r.results.first().filter(|x| x.fits) {
        Some(best) => {
            out.push_str(&format!("\n  best: trainscope simulate {}\n", best.flags));
            let runner_up = r.results.get(1).filter(|x| x.fits);
            if let (Some(a), Some(b)) =
                (best.days_to_train, runner_up.and_then(|x| x.days_to_train))
            {
                out.push_str(&format!(
                    "  ranked by days to train (failures, checkpoints and restarts included): {a:.2} days, the runner-up {b:.2}\n"
                ));
            }
            if let Some(why) = &r.explain {
                out.push_str(&format!("  why: {why}\n"));
            }
        }
        None => out.push_str("\n  no configuration fits in memory\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_spelling() {
        assert_eq!(parse_shard("2/4"), Ok(ShardId { index: 2, count: 4 }));
        assert!(parse_shard("4/4").is_err());
        assert!(parse_shard("1/0").is_err());
        assert!(parse_shard("x").is_err());
        assert_eq!(
            on_off("sp", &["on".into(), "off".into()]),
            Ok(Some(vec![true, false]))
        );
        assert!(on_off("sp", &["maybe".into()]).is_err());
        assert!(numbers("tp", &[0]).is_err());
    }
}
