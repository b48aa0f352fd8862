//! Configuration search: every valid layout of a model-level job for a
//! world size (or several), within bounds, pruned by memory before it is
//! simulated, then ranked. Pure and single-threaded: the front ends
//! (the CLI with a thread pool, the page with Web Workers) call
//! [`enumerate`] once, split the candidates with [`shard`], run
//! [`evaluate`] on each, and join the rows with [`report::build`] /
//! [`report::merge`].
//!
//! - [`SweepSpec`]: the model, GPU, worlds, global batch, sequence length,
//!   precision and one list per dimension (TP, CP, PP, EP, virtual stages,
//!   micro-batch size, recompute, schedule, sequence parallelism,
//!   distributed optimizer, expert TP); `None` takes the default list
//!   ([`SweepSpec::tp_values`] and its siblings).
//! - [`enumerate`]: the cartesian product in a fixed order (world, TP, CP, PP,
//!   EP, schedule, virtual stages, micro-batch, recompute, sequence
//!   parallelism, distributed optimizer, expert TP; an expert TP equal to
//!   TP is the default layout, tried once; so is a layout whose
//!   distributed optimizer has nothing to shard over, DP x CP 1 and no
//!   expert DP, where on and off are the same job); each combination
//!   [`crate::job::ModelJob::new`] refuses, or whose schedule's conditions
//!   ([`ScheduleKind::check`]) fail, is counted under its reason (the
//!   message with its numbers written as `N`). Every survivor gets its
//!   position as [`Candidate::index`].
//! - [`precheck`]: memory without simulating ([`crate::job::memory`]).
//!   GPipe, 1F1B and interleaved 1F1B have a closed-form peak of chunks in
//!   flight ([`peak_in_flight`]), the count the simulation holds; for the
//!   other schedules only one chunk per stage is assumed, a lower bound
//!   (every stage holds at least the chunk it runs), so the check never
//!   prunes a configuration that fits: what it does not prune is simulated
//!   and the simulation decides.
//! - [`evaluate`]: [`run_model`] for one candidate; the row carries the
//!   exact `trainscope simulate --model` flags that give the same numbers.
//!
//! A pipeline of one stage has no schedule to choose: with PP 1 only 1F1B
//! is enumerated when the list holds it (the others are counted as
//! skipped).
//!
//! A PP that does not divide the layer count is tried with the uneven
//! split of [`uneven_split`] (Megatron's first/last-stage layer counts:
//! the middle stages a whole share, the last stage lighter, as it also
//! runs the output layer and the loss), with the schedules that run one
//! chunk per stage; the default PP list adds such stage counts where they
//! are powers of two (DeepSeek-V3's 61 layers on 16 stages, Llama 3
//! 405B's 126 on 16). With the interleaved schedule, virtual-stage counts
//! that cut only the layers + embedding + loss are tried with Megatron's
//! accounted split ([`accounted_split`]; Llama 3.1 405B's 126 layers on
//! PP 8 x 8 virtual stages, as NVIDIA runs it).

pub mod report;
pub mod start;
pub mod time_to_train;

use crate::engine::schedule::{ChunkPlacement, ScheduleKind};
use crate::engine::SimConfig;
use crate::hardware::{GpuSpec, Precision};
use crate::job::memory::{memory_report, MemoryReport};
use crate::job::run::{peak_in_flight, run_model};
use crate::job::sharding::{Offload, Sharding, ZeroStage};
use crate::job::{ModelJob, Recompute, TrainingSetup, DEFAULT_GLOBAL_BATCH, DEFAULT_SEQ_LENGTH};
use crate::model::dispatcher::Dispatcher;
use crate::model::stack::{CudaGraphs, StackSettings};
use crate::model::ModelSpec;
use std::collections::BTreeMap;

pub use report::{
    build, explain, merge, pareto, process, rank, MergeError, Outcome, ReasonCount, Row, ShardId,
    SweepReport,
};

/// Counts per reason, sorted by reason.
pub(crate) type ReasonCountMap = BTreeMap<String, u64>;

/// One word of a row's flags as a POSIX shell reads it back: unchanged
/// when it holds only characters a shell takes literally (letters, digits,
/// `_ - . / , : = + @ %`), else in single quotes (a `'` inside written
/// `'\''`), so `--model "runs/my model/config.json"` survives a copy
/// into a shell and stays one argument.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./,:=+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Words joined into flags, each quoted by [`shell_word`] where a shell
/// needs it.
pub fn shell_join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| shell_word(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Micro-batch sizes tried when none are given.
pub const DEFAULT_MICRO_BATCH_SIZES: [u32; 3] = [1, 2, 4];

/// What to search: the job every candidate shares and the values of each
/// dimension (`None`: the default list).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSpec {
    pub model: ModelSpec,
    pub gpu: GpuSpec,
    /// World sizes (GPUs) to try, in order.
    pub worlds: Vec<u32>,
    /// GPUs per node: the default TP list stays inside one node.
    pub gpus_per_node: u32,
    /// Sequences per iteration, the same for every candidate.
    pub global_batch_size: u32,
    pub seq_length: u32,
    pub precision: Precision,
    pub flash_attention: bool,
    /// Gradients in bf16 for every candidate
    /// ([`crate::job::TrainingSetup::bf16_grads`]).
    pub bf16_grads: bool,
    /// FP8 parameter gather for every candidate that can take it (FP8,
    /// not ZeRO-3; [`crate::job::TrainingSetup::fp8_param_gather`]).
    pub fp8_param_gather: bool,
    /// Rank rows by their step with one GPU slowed by this factor at its
    /// worst place (`sweep --straggler`; [`worst_straggler`]); `None`: off.
    pub straggler: Option<f64>,
    /// The software stack every candidate runs on
    /// ([`crate::job::TrainingSetup::stack`]).
    pub stack: crate::model::stack::StackSettings,
    /// Default: powers of two up to the GPUs per node that divide the
    /// attention heads.
    pub tp: Option<Vec<u32>>,
    /// Default: the divisors of the layer count up to the largest world,
    /// and the powers of two [`uneven_split`] splits.
    pub pp: Option<Vec<u32>>,
    /// Context-parallel sizes. Default: 1 only.
    pub cp: Option<Vec<u32>>,
    /// Default: 1 for a dense model; the powers of two dividing the expert
    /// count for a mixture of experts.
    pub ep: Option<Vec<u32>>,
    /// Expert tensor-parallel sizes (`None`: TP, Megatron's default).
    /// Default: TP for a dense model; TP and 1 (whole experts per rank,
    /// EP out of TP x DP) for a mixture of experts.
    pub expert_tp: Option<Vec<Option<u32>>>,
    /// Virtual stages of the interleaved schedule. Default: every v > 1
    /// with PP x v dividing the layers.
    pub vpp: Option<Vec<u32>>,
    /// Default [`DEFAULT_MICRO_BATCH_SIZES`].
    pub micro_batch_size: Option<Vec<u32>>,
    /// Default: none, selective, full ([`Recompute::SWEPT`]).
    pub recompute: Option<Vec<Recompute>>,
    /// Default: every schedule ([`ScheduleKind::ALL`]).
    pub schedule: Option<Vec<ScheduleKind>>,
    /// Default: on. Where TP is 1 every layout is tried once, without
    /// (the second value of the list is counted as skipped).
    pub sequence_parallel: Option<Vec<bool>>,
    /// Default: on.
    pub distributed_optimizer: Option<Vec<bool>>,
    /// ZeRO stages ([`ZeroStage`]) as a dimension: when given it replaces
    /// the distributed-optimizer list (stage 1 is the distributed
    /// optimizer, 0 without it); `None`: that list decides.
    pub zero: Option<Vec<ZeroStage>>,
    /// HSDP shard-group sizes as a dimension (`--hsdp-shard`; 0: shard
    /// over all of DP); `None`: none. Layouts a size does not fit (not
    /// ZeRO-3, not dividing DP) are skipped with the job's reason.
    pub hsdp_shard: Option<Vec<u32>>,
    /// What lives in host memory as a dimension (`--offload`, [`Offload`]);
    /// `None`: nothing. A layout that fits only with offload is found;
    /// combinations the job refuses (parameters offloaded without ZeRO-3)
    /// are skipped with the job's reason.
    pub offload: Option<Vec<Offload>>,
    /// CUDA-graph scopes as a dimension (`None`: [`SweepSpec::stack`]'s).
    pub cuda_graphs: Option<Vec<CudaGraphs>>,
    /// MoE token dispatchers as a dimension (`None`: the stack's; dense
    /// models try only the stack's).
    pub dispatcher: Option<Vec<Dispatcher>>,
    /// EP overlap off / on as a dimension (`None`: the stack's; dense
    /// models try only the stack's).
    pub moe_a2a_overlap: Option<Vec<bool>>,
    /// The flags every row shares, as the front end spells them (`--model
    /// NAME`, the GPU and the cluster): prepended to each row's flags.
    pub common_flags: String,
}

impl SweepSpec {
    /// A sweep of `model` on `gpu` for `world` GPUs with every default.
    pub fn new(model: ModelSpec, gpu: GpuSpec, world: u32) -> SweepSpec {
        SweepSpec {
            model,
            gpu,
            worlds: vec![world],
            gpus_per_node: 8,
            global_batch_size: DEFAULT_GLOBAL_BATCH,
            seq_length: DEFAULT_SEQ_LENGTH,
            precision: Precision::Bf16,
            flash_attention: true,
            bf16_grads: false,
            fp8_param_gather: false,
            straggler: None,
            stack: crate::model::stack::StackSettings::default(),
            tp: None,
            pp: None,
            cp: None,
            ep: None,
            expert_tp: None,
            vpp: None,
            micro_batch_size: None,
            recompute: None,
            schedule: None,
            sequence_parallel: None,
            distributed_optimizer: None,
            zero: None,
            hsdp_shard: None,
            offload: None,
            cuda_graphs: None,
            dispatcher: None,
            moe_a2a_overlap: None,
            common_flags: String::new(),
        }
    }

    /// The TP values tried.
    pub fn tp_values(&self) -> Vec<u32> {
        self.tp.clone().unwrap_or_else(|| {
            let heads = self.model.num_attention_heads;
            (0..31)
                .map(|k| 1u32 << k)
                .take_while(|t| *t <= self.gpus_per_node.max(1))
                .filter(|t| heads.is_multiple_of(*t))
                .collect()
        })
    }

    /// The PP values tried.
    pub fn pp_values(&self) -> Vec<u32> {
        self.pp.clone().unwrap_or_else(|| {
            let layers = self.model.num_layers;
            let max_world = self.worlds.iter().copied().max().unwrap_or(1);
            (1..=layers.min(max_world))
                .filter(|p| {
                    layers.is_multiple_of(*p)
                        || (p.is_power_of_two() && uneven_split(layers, *p).is_some())
                })
                .collect()
        })
    }

    /// The CP values tried.
    pub fn cp_values(&self) -> Vec<u32> {
        self.cp.clone().unwrap_or_else(|| vec![1])
    }

    /// The EP values tried.
    pub fn ep_values(&self) -> Vec<u32> {
        self.ep.clone().unwrap_or_else(|| match &self.model.moe {
            None => vec![1],
            Some(moe) => (0..31)
                .map(|k| 1u32 << k)
                .take_while(|e| *e <= moe.num_experts)
                .filter(|e| moe.num_experts.is_multiple_of(*e))
                .collect(),
        })
    }

    /// The expert tensor-parallel sizes tried (`None`: TP).
    pub fn expert_tp_values(&self) -> Vec<Option<u32>> {
        self.expert_tp
            .clone()
            .unwrap_or_else(|| match &self.model.moe {
                None => vec![None],
                Some(_) => vec![None, Some(1)],
            })
    }

    /// The virtual-stage counts tried with the interleaved schedule at
    /// `pp` stages.
    pub fn vpp_values(&self, pp: u32) -> Vec<u32> {
        self.vpp.clone().unwrap_or_else(|| {
            let layers = self.model.num_layers;
            (2..=(layers + 2) / pp.max(1))
                .filter(|v| layers.is_multiple_of(pp * v) || accounted_split(layers, pp, *v))
                .collect()
        })
    }

    pub fn micro_batch_values(&self) -> Vec<u32> {
        self.micro_batch_size
            .clone()
            .unwrap_or_else(|| DEFAULT_MICRO_BATCH_SIZES.to_vec())
    }

    pub fn recompute_values(&self) -> Vec<Recompute> {
        self.recompute
            .clone()
            .unwrap_or_else(|| Recompute::SWEPT.to_vec())
    }

    pub fn schedule_values(&self) -> Vec<ScheduleKind> {
        self.schedule
            .clone()
            .unwrap_or_else(|| ScheduleKind::ALL.to_vec())
    }

    pub fn sequence_parallel_values(&self) -> Vec<bool> {
        self.sequence_parallel.clone().unwrap_or_else(|| vec![true])
    }

    /// The ZeRO stages tried: the given list, else the distributed
    /// optimizer's values (off: 0, on: 1).
    pub fn zero_values(&self) -> Vec<ZeroStage> {
        match &self.zero {
            Some(z) => z.clone(),
            None => self
                .distributed_optimizer_values()
                .into_iter()
                .map(|d| {
                    if d {
                        ZeroStage::Optimizer
                    } else {
                        ZeroStage::None
                    }
                })
                .collect(),
        }
    }

    /// The software stacks tried: [`SweepSpec::stack`] with each CUDA-graph
    /// scope, dispatcher and EP-overlap value of the lists (the MoE ones
    /// only for a mixture of experts), in list order.
    pub fn stack_values(&self) -> Vec<StackSettings> {
        let base = self.stack;
        let moe = self.model.moe.is_some();
        let graphs = self.cuda_graphs.clone().unwrap_or(vec![base.cuda_graphs]);
        let dispatchers = match &self.dispatcher {
            Some(d) if moe => d.clone(),
            _ => vec![base.dispatcher],
        };
        let overlaps = match &self.moe_a2a_overlap {
            Some(o) if moe => o.clone(),
            _ => vec![base.moe_a2a_overlap],
        };
        let mut out = Vec::new();
        for &cuda_graphs in &graphs {
            for &dispatcher in &dispatchers {
                for &moe_a2a_overlap in &overlaps {
                    out.push(StackSettings {
                        cuda_graphs,
                        dispatcher,
                        moe_a2a_overlap,
                        ..base
                    });
                }
            }
        }
        out
    }

    /// The HSDP shard sizes tried: the given list, else none (0).
    pub fn hsdp_values(&self) -> Vec<u32> {
        self.hsdp_shard.clone().unwrap_or_else(|| vec![0])
    }

    /// The offload choices tried: the given list, else none.
    pub fn offload_values(&self) -> Vec<Offload> {
        self.offload.clone().unwrap_or_else(|| vec![Offload::None])
    }

    pub fn distributed_optimizer_values(&self) -> Vec<bool> {
        self.distributed_optimizer
            .clone()
            .unwrap_or_else(|| vec![true])
    }

    /// One line naming the sweep's inputs (model, GPU, worlds, batch and
    /// every list): shards of different sweeps do not merge.
    pub fn describe(&self) -> String {
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let vpp = match &self.vpp {
            Some(v) => list(v),
            None => "auto".to_string(),
        };
        // CP only when swept (older sweeps' shards keep their line).
        let cp = match self.cp_values().as_slice() {
            [1] => String::new(),
            v => format!(" | cp {}", list(v)),
        };
        // bf16 gradients only when on (older shards keep their line).
        let cp = if self.bf16_grads {
            format!("{cp} | bf16 grads")
        } else {
            cp
        };
        let cp = if self.fp8_param_gather {
            format!("{cp} | fp8 param gather")
        } else {
            cp
        };
        // ZeRO stages only when swept (older shards keep their line).
        let cp = match &self.zero {
            Some(z) => format!(
                "{cp} | zero {}",
                z.iter()
                    .map(|z| z.level().to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            None => cp,
        };
        // HSDP only when swept (older shards keep their line).
        let cp = match &self.hsdp_shard {
            Some(h) => format!("{cp} | hsdp shard {}", list(h)),
            None => cp,
        };
        // Offload only when swept (older shards keep their line).
        let cp = match &self.offload {
            Some(o) => format!(
                "{cp} | offload {}",
                o.iter().map(|o| o.name()).collect::<Vec<_>>().join(",")
            ),
            None => cp,
        };
        // The software dimensions only when swept (older shards keep
        // their line).
        let cp = if self.cuda_graphs.is_some()
            || self.dispatcher.is_some()
            || self.moe_a2a_overlap.is_some()
        {
            format!(
                "{cp} | stacks {}",
                self.stack_values()
                    .iter()
                    .map(|s| s.flags())
                    .collect::<Vec<_>>()
                    .join(";")
            )
        } else {
            cp
        };
        // Expert TP likewise only when other than TP.
        let tail = match self.expert_tp_values().as_slice() {
            [None] => cp,
            v => format!(
                "{cp} | expert_tp {}",
                v.iter()
                    .map(|e| e.map_or("tp".to_string(), |e| e.to_string()))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        format!(
            "{} | world {} | gbs {} | seq {} | {} | flash {} | tp {} | pp {} | ep {} | vpp {} | mbs {} | recompute {} | schedule {} | sp {:?} | distopt {:?}{tail}",
            self.common_flags,
            list(&self.worlds),
            self.global_batch_size,
            self.seq_length,
            self.precision.name(),
            self.flash_attention,
            list(&self.tp_values()),
            list(&self.pp_values()),
            list(&self.ep_values()),
            vpp,
            list(&self.micro_batch_values()),
            self.recompute_values()
                .iter()
                .map(|r| r.name())
                .collect::<Vec<_>>()
                .join(","),
            self.schedule_values()
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(","),
            self.sequence_parallel_values(),
            self.distributed_optimizer_values(),
        )
    }
}

/// One valid configuration, ready to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Position in the enumeration (the tie-break of every ordering).
    pub index: u32,
    pub schedule: ScheduleKind,
    /// The validated job (its setup holds DP and the global batch).
    pub job: ModelJob,
}

impl Candidate {
    /// The `trainscope simulate --model` flags of this configuration
    /// after the sweep's common flags.
    pub fn flags(&self, common: &str) -> String {
        let j = &self.job;
        let s = &j.setup;
        let mut f = String::new();
        if !common.trim().is_empty() {
            f.push_str(common.trim());
            f.push(' ');
        }
        f.push_str(&format!("--world {} --tp {} --pp {}", j.world, s.tp, s.pp));
        if s.cp > 1 {
            f.push_str(&format!(" --cp {}", s.cp));
        }
        if s.ep > 1 {
            f.push_str(&format!(" --ep {}", s.ep));
        }
        if let Some(e) = s.expert_tp {
            f.push_str(&format!(" --expert-tp {e}"));
        }
        if s.vpp > 1 {
            f.push_str(&format!(" --vpp {}", s.vpp));
        }
        f.push_str(&format!(
            " --micro-batch-size {} --global-batch-size {} --seq-length {} --precision {} --recompute {} --schedule {}",
            s.micro_batch_size,
            j.global_batch_size,
            s.seq_length,
            s.precision.name(),
            s.recompute.name(),
            self.schedule.name()
        ));
        if s.sequence_parallel {
            f.push_str(" --sequence-parallel");
        }
        if s.distributed_optimizer {
            f.push_str(" --distributed-optimizer");
        }
        for flag in s.sharding.flags() {
            f.push(' ');
            f.push_str(&flag);
        }
        if s.bf16_grads {
            f.push_str(" --no-grad-reduce-in-fp32");
        }
        if s.fp8_param_gather {
            f.push_str(" --fp8-param-gather");
        }
        if !s.flash_attention {
            f.push_str(" --no-flash-attention");
        }
        f.push_str(&s.stack.flags());
        if let Some(n) = s.first_stage_layers {
            f.push_str(&format!(" --first-stage-layers {n}"));
        }
        if let Some(n) = s.last_stage_layers {
            f.push_str(&format!(" --last-stage-layers {n}"));
        }
        if s.account_for_embedding {
            f.push_str(" --account-for-embedding-in-pipeline-split");
        }
        if s.account_for_loss {
            f.push_str(" --account-for-loss-in-pipeline-split");
        }
        f
    }

    /// The job as the schedule runs it (V-shaped schedules put two chunks
    /// per stage in a V).
    fn shaped_job(&self) -> ModelJob {
        let mut j = self.job.clone();
        j.v_shape = self.schedule.placement() == ChunkPlacement::VShape;
        j
    }
}

/// The enumeration: valid candidates and what was skipped, by reason.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Enumeration {
    pub candidates: Vec<Candidate>,
    /// Combinations refused, in total.
    pub skipped: u64,
    /// Per reason (the message with numbers as `N`), sorted by reason.
    pub skipped_reasons: Vec<ReasonCount>,
}

/// A message with each standalone number written as `N`, so that the same
/// refusal for different numbers counts once.
pub fn reason_key(message: &str) -> String {
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '-');
        if c.is_ascii_digit() && !prev_word {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let next_word = j < chars.len() && chars[j].is_alphabetic();
            if !next_word {
                out.push('N');
                i = j;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

pub(crate) fn counts_of(map: BTreeMap<String, u64>) -> Vec<ReasonCount> {
    map.into_iter()
        .map(|(reason, count)| ReasonCount { reason, count })
        .collect()
}

/// The first and last stages' layer counts the search gives `layers`
/// layers on `pp` stages that do not divide them: the middle stages
/// ceil(layers / pp) each, the first stage as many or one fewer than the
/// rest, the last stage what remains (at least one). `None` when PP
/// divides the layers (an even split), PP is 1, or no stage split leaves
/// every stage a layer.
pub fn uneven_split(layers: u32, pp: u32) -> Option<(u32, u32)> {
    if pp < 2 || layers.is_multiple_of(pp) {
        return None;
    }
    let middle = layers.div_ceil(pp);
    let rest = layers.checked_sub((pp - 2).checked_mul(middle)?)?;
    if rest < 2 {
        return None;
    }
    let first = middle.min(rest - 1);
    Some((first, rest - first))
}

/// Whether `pp` stages of `vpp` chunks cut `layers` layers only with the
/// embedding and the loss counted as layers (Megatron's
/// `--account-for-*-in-pipeline-split`): PP > 1 and vpp > 1, PP x vpp
/// divides layers + 2, not the layers, and every chunk keeps a layer.
pub fn accounted_split(layers: u32, pp: u32, vpp: u32) -> bool {
    let chunks = pp * vpp;
    pp > 1
        && vpp > 1
        && !layers.is_multiple_of(chunks)
        && (layers + 2).is_multiple_of(chunks)
        && (layers + 2) / chunks >= 2
}

/// Every combination of the spec's lists, in the fixed order of the module
/// documentation; the refused ones counted by reason.
pub fn enumerate(spec: &SweepSpec) -> Enumeration {
    enumerate_shard(spec, None)
}

/// [`enumerate`] keeping only the candidates of one slice (`Some`): the
/// same numbering and refusal counts, but a worker holds only its own
/// candidates (candidate k goes to slice k mod count, which spreads the
/// costly layouts evenly). A slice that does not exist (`index >= count`, or
/// `count` 0) keeps none.
pub fn enumerate_shard(spec: &SweepSpec, slice: Option<ShardId>) -> Enumeration {
    let mut skipped: BTreeMap<String, u64> = BTreeMap::new();
    let mut candidates = Vec::new();
    let mut next_index: u32 = 0;
    let mine = |k: u32| match slice {
        None => true,
        Some(ShardId { index, count }) => count > 0 && k % count == index,
    };
    let mut skip = |why: String, n: u64| {
        *skipped.entry(reason_key(&why)).or_insert(0) += n;
    };
    let schedules = spec.schedule_values();
    let has_1f1b = schedules.contains(&ScheduleKind::OneFOneB);
    let mbs_list = spec.micro_batch_values();
    let recompute = spec.recompute_values();
    let sp_list = spec.sequence_parallel_values();
    let dist_list = spec.zero_values();
    let etp_list = spec.expert_tp_values();
    // The software stacks, each with every HSDP shard size and every
    // offload choice.
    let hsdp_list = spec.hsdp_values();
    let offload_list = spec.offload_values();
    let stacks: Vec<(StackSettings, u32, Offload)> = spec
        .stack_values()
        .into_iter()
        .flat_map(|st| hsdp_list.iter().map(move |&h| (st, h)))
        .flat_map(|(st, h)| offload_list.iter().map(move |&o| (st, h, o)))
        .collect();
    for &world in &spec.worlds {
        for tp in spec.tp_values() {
            for cp in spec.cp_values() {
                for pp in spec.pp_values() {
                    for ep in spec.ep_values() {
                        for &schedule in &schedules {
                            let vpps = if schedule == ScheduleKind::Interleaved {
                                spec.vpp_values(pp)
                            } else {
                                vec![1]
                            };
                            for vpp in vpps {
                                let inner = (mbs_list.len()
                                    * recompute.len()
                                    * sp_list.len()
                                    * dist_list.len()
                                    * etp_list.len()
                                    * stacks.len())
                                    as u64;
                                if pp == 1 && schedule != ScheduleKind::OneFOneB && has_1f1b {
                                    skip("one pipeline stage has no schedule to choose (1f1b stands for all)".to_string(), inner);
                                    continue;
                                }
                                if schedule == ScheduleKind::Interleaved && vpp < 2 {
                                    skip(
                                    "the interleaved schedule needs virtual stages > 1 (1 is 1f1b)"
                                        .to_string(),
                                    inner,
                                );
                                    continue;
                                }
                                if schedule.placement() == ChunkPlacement::VShape
                                    && !spec.model.num_layers.is_multiple_of(2 * pp)
                                {
                                    skip(format!(
                                    "{} places two chunks per stage: {} layers are not divisible by 2 x PP = {}",
                                    schedule.name(),
                                    spec.model.num_layers,
                                    2 * pp
                                ), inner);
                                    continue;
                                }
                                // Interleaved chunks that divide only the
                                // layers + embedding + loss: Megatron's
                                // accounted split, not a first/last split.
                                let accounted = accounted_split(spec.model.num_layers, pp, vpp);
                                let split = if accounted {
                                    None
                                } else {
                                    uneven_split(spec.model.num_layers, pp)
                                };
                                if pp > 1
                                    && !accounted
                                    && !spec.model.num_layers.is_multiple_of(pp)
                                    && split.is_none()
                                {
                                    skip(format!(
                                    "{} layers cannot be split over {pp} stages with a whole share on each middle stage and a layer on every stage",
                                    spec.model.num_layers
                                ), inner);
                                    continue;
                                }
                                for &mbs in &mbs_list {
                                    for &rc in &recompute {
                                        for (k, &sp) in sp_list.iter().enumerate() {
                                            // TP 1 has no sequence parallelism:
                                            // its layouts are tried once, off.
                                            let sp = sp && tp > 1;
                                            if tp == 1 && k > 0 {
                                                skip(
                                                    SKIP_SP_AT_TP1.to_string(),
                                                    (dist_list.len()
                                                        * etp_list.len()
                                                        * stacks.len())
                                                        as u64,
                                                );
                                                continue;
                                            }
                                            // Expert TP = TP is the default
                                            // layout (at TP 1, expert TP 1
                                            // too): each layout tried once.
                                            let effective = |e: Option<u32>| e.filter(|e| *e != tp);
                                            for ((i, &zero), (j, &expert_tp)) in
                                                dist_list.iter().enumerate().flat_map(|d| {
                                                    etp_list.iter().enumerate().map(move |e| (d, e))
                                                })
                                            {
                                                let expert_tp = effective(expert_tp);
                                                if etp_list[..j]
                                                    .iter()
                                                    .any(|e| effective(*e) == expert_tp)
                                                {
                                                    skip(
                                                        SKIP_EXPERT_TP_IS_TP.to_string(),
                                                        stacks.len() as u64,
                                                    );
                                                    continue;
                                                }
                                                for &(stack, hsdp_shard, offload) in &stacks {
                                                    let setup = TrainingSetup {
                                                        tp,
                                                        pp,
                                                        dp: None,
                                                        cp,
                                                        ep,
                                                        expert_tp,
                                                        vpp,
                                                        sequence_parallel: sp,
                                                        micro_batch_size: mbs,
                                                        global_batch_size: Some(
                                                            spec.global_batch_size,
                                                        ),
                                                        seq_length: spec.seq_length,
                                                        precision: spec.precision,
                                                        recompute: rc,
                                                        distributed_optimizer: zero
                                                            >= ZeroStage::Optimizer,
                                                        flash_attention: spec.flash_attention,
                                                        first_stage_layers: split.map(|(f, _)| f),
                                                        last_stage_layers: split.map(|(_, l)| l),
                                                        account_for_embedding: accounted,
                                                        account_for_loss: accounted,
                                                        bf16_grads: spec.bf16_grads,
                                                        fp8_param_gather: spec.fp8_param_gather
                                                            && spec.precision == Precision::Fp8
                                                            && zero != ZeroStage::Parameters,
                                                        stack,
                                                        sharding: Sharding {
                                                            zero,
                                                            hsdp_shard,
                                                            offload,
                                                            ..Sharding::default()
                                                        },
                                                    };
                                                    let job = match ModelJob::new(
                                                        spec.model.clone(),
                                                        setup,
                                                        spec.gpu.clone(),
                                                        Some(world),
                                                    ) {
                                                        Ok(j) => j,
                                                        Err(e) => {
                                                            skip(e.message, 1);
                                                            continue;
                                                        }
                                                    };
                                                    // Nothing to shard over (DP x CP 1,
                                                    // no expert DP): on and off are the
                                                    // same job, tried once (the list's
                                                    // first value).
                                                    if !job.optimizer_shards()
                                                        && dist_list[..i].iter().any(|d| *d != zero)
                                                    {
                                                        skip(
                                                            SKIP_DIST_OPT_UNSHARDED.to_string(),
                                                            1,
                                                        );
                                                        continue;
                                                    }
                                                    if let Err(e) =
                                                        schedule.check(pp, job.micro_batches)
                                                    {
                                                        skip(e.to_string(), 1);
                                                        continue;
                                                    }
                                                    let index = next_index;
                                                    next_index += 1;
                                                    if mine(index) {
                                                        candidates.push(Candidate {
                                                            index,
                                                            schedule,
                                                            job,
                                                        });
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let total = skipped.values().sum();
    Enumeration {
        candidates,
        skipped: total,
        skipped_reasons: counts_of(skipped),
    }
}

/// Why an expert TP equal to TP (the default) is skipped after the first.
pub const SKIP_EXPERT_TP_IS_TP: &str =
    "expert TP equal to TP is the default layout: each layout is tried once";

/// Why a second distributed-optimizer value is skipped where the
/// optimizer has nothing to shard over ([`ModelJob::optimizer_shards`]).
pub const SKIP_DIST_OPT_UNSHARDED: &str =
    "the distributed optimizer has no data-parallel ranks to shard over (DP x CP and expert DP of one rank): on and off are the same job, tried once";

/// Why a second sequence-parallel value is skipped at TP 1.
pub const SKIP_SP_AT_TP1: &str =
    "sequence parallelism needs tensor parallelism: without it each layout is tried once, off";

/// Why the memory check pruned a candidate with a closed-form peak.
pub const PRUNED_CLOSED_FORM: &str =
    "the schedule's peak memory (closed form) exceeds the GPU's capacity";
/// Why the memory check pruned a candidate by the lower bound.
pub const PRUNED_LOWER_BOUND: &str =
    "weights, gradients, optimizer states and one chunk of activations exceed the GPU's capacity";

/// True when the schedule's peak chunks in flight have a closed form
/// ([`peak_in_flight`]) the simulation holds exactly.
pub fn has_closed_form(schedule: ScheduleKind) -> bool {
    matches!(
        schedule,
        ScheduleKind::GPipe | ScheduleKind::OneFOneB | ScheduleKind::Interleaved
    )
}

/// The memory the check computes without simulating, per stage, and the
/// reason it gives when that does not fit: the closed-form peak (equal to
/// the simulated one) or the lower bound (at most the simulated one).
pub fn precheck_memory(c: &Candidate) -> (MemoryReport, &'static str) {
    let job = c.shaped_job();
    let s = &job.setup;
    let (in_flight, logits, why): (Vec<u32>, u32, &'static str) = if has_closed_form(c.schedule) {
        (
            (0..s.pp)
                .map(|st| peak_in_flight(c.schedule, s.pp, job.micro_batches, s.vpp, st))
                .collect(),
            if c.schedule == ScheduleKind::GPipe {
                job.micro_batches
            } else {
                1
            },
            PRUNED_CLOSED_FORM,
        )
    } else {
        (vec![1; s.pp as usize], 1, PRUNED_LOWER_BOUND)
    };
    (memory_report(&job, &in_flight, logits), why)
}

/// Memory without simulating: `Err(reason)` when the candidate cannot fit
/// (see the module documentation), `Ok` otherwise.
pub fn precheck(c: &Candidate) -> Result<(), &'static str> {
    let (m, why) = precheck_memory(c);
    if m.fits {
        Ok(())
    } else {
        Err(why)
    }
}

/// The simulation settings a sweep runs with: `config` without a
/// timeline ([`SimConfig::summary_only`]: a row needs only the summary, and
/// a run then holds no spans; the numbers are the same) and so without its
/// dependency edges.
pub fn sweep_config(config: &SimConfig) -> SimConfig {
    let mut c = config.clone();
    c.record_dependencies = false;
    c.summary_only = true;
    c
}

/// Simulate one candidate: its row (`Err`: why the simulation refused it).
pub fn evaluate(
    c: &Candidate,
    config: &SimConfig,
    common_flags: &str,
    straggler: Option<f64>,
) -> Result<Row, String> {
    let mut cfg = config.clone();
    cfg.schedule = c.schedule;
    cfg.virtual_stages = 1;
    cfg.micro_batches = None;
    let out = run_model(&c.job, &cfg).map_err(|e| e.to_string())?;
    let straggler = match straggler {
        Some(f) => Some(worst_straggler(c, &cfg, f)?),
        None => None,
    };
    let s = &out.job.setup;
    let summary = out.run.summary();
    let peak_per_stage: Vec<u64> = out.memory.per_stage.iter().map(|m| m.peak_bytes).collect();
    Ok(Row {
        index: c.index,
        flags: c.flags(common_flags),
        world: out.job.world,
        tp: s.tp,
        pp: s.pp,
        dp: out.job.dp,
        cp: s.cp,
        ep: s.ep,
        expert_tp: s.expert_tp,
        vpp: s.vpp,
        first_stage_layers: s.first_stage_layers,
        last_stage_layers: s.last_stage_layers,
        account_for_embedding: s.account_for_embedding,
        account_for_loss: s.account_for_loss,
        micro_batch_size: s.micro_batch_size,
        micro_batches: out.job.micro_batches,
        recompute: s.recompute.name().to_string(),
        schedule: c.schedule.name().to_string(),
        sequence_parallel: s.sequence_parallel,
        distributed_optimizer: s.distributed_optimizer,
        zero: s.sharding.zero.level(),
        hsdp_shard: s.sharding.hsdp_shard,
        offload: s.sharding.offload,
        software: s.stack.flags().trim().to_string(),
        iteration_time_ns: summary.iteration_time_ns,
        tokens_per_second: out.throughput.tokens_per_second,
        mfu: out.throughput.mfu,
        peak_bytes: peak_per_stage.iter().copied().max().unwrap_or(0),
        peak_bytes_per_stage: peak_per_stage,
        capacity_bytes: out.memory.capacity_bytes,
        fits: out.memory.fits,
        bubble_ns: summary.bubble_ns,
        exposed_comm_ns: summary.exposed_comm_ns,
        straggler_iteration_time_ns: straggler.map(|s| s.0),
        straggler_stage: straggler.map(|s| s.1),
        days_to_train: None,
        pareto: false,
    })
}

/// Most stages [`worst_straggler`] slows in turn (evenly spaced, first
/// and last included).
pub const MAX_STRAGGLER_STAGES: usize = 8;

/// The candidate's step with one GPU `factor` times slower at its worst
/// place: each pipeline stage's ranks in turn (a described job simulates
/// one rank per stage for all its ranks, so one slow GPU holds back its
/// stage: [`crate::engine::faults`]), at most [`MAX_STRAGGLER_STAGES`]
/// of them; the slowest step and its stage (the first on ties).
pub fn worst_straggler(
    c: &Candidate,
    config: &SimConfig,
    factor: f64,
) -> Result<(u64, u32), String> {
    crate::engine::faults::check_factor(factor).map_err(|e| format!("--straggler: {e}"))?;
    let mut worst = (0u64, 0u32);
    for s in crate::whatif::sampled_stages(c.job.setup.pp, MAX_STRAGGLER_STAGES) {
        let mut cfg = config.clone();
        cfg.faults.slow.push(crate::engine::faults::SlowCompute {
            scope: crate::engine::faults::RankScope::Stage(s),
            factor,
            window: None,
        });
        let t = run_model(&c.job, &cfg)
            .map_err(|e| e.to_string())?
            .run
            .summary()
            .iteration_time_ns;
        if t > worst.0 {
            worst = (t, s);
        }
    }
    Ok(worst)
}

#[cfg(test)]
mod tests;
