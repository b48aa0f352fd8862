//! The normalised workload model every parser produces and the simulators
//! consume. Two kinds of input share it:
//!
//! * a [`DescribedJob`] (SimAI/AICB workloads, NeuSight TSVs): the parallel
//!   configuration and, per pipeline stage, the ordered per-micro-batch layer
//!   operations (forward, input-gradient and weight-gradient compute with their
//!   collectives) plus the once-per-iteration rows before (gradient sync) and
//!   after (loss, optimizer). An event-level simulator builds a pipeline
//!   schedule from it: for micro-batch `m` of stage `s` it runs
//!   [`StageWorkload::micro_batch`]`(m)` forward, later backward in reverse.
//! * a [`MeasuredRun`] (Echo per-rank traces, Optimus-Prime logs, PyTorch
//!   profiler (Kineto) traces): per rank and
//!   stage the operations that really ran, with measured start and duration,
//!   kind, sub-operations, micro-batch where known and message bytes, plus the
//!   run's measured iteration time(s). A simulator replays it or compares a
//!   prediction with it. A rank that runs another rank's program (the
//!   ranks of one stage of a large Chakra set) holds only its own values
//!   ([`RankCopy`]); [`MeasuredRun::ops_of`] reads any rank's ops.
//!
//! Units are in the names: times are integer nanoseconds (`_ns`, u64), sizes
//! are bytes (`_bytes`, u64). Every value carries the diagnostics of the file(s)
//! it came from. Nothing here does IO.

use crate::diag::Diagnostic;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// The input formats trainscope reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Format {
    /// SimAI / AICB text workload.
    #[serde(rename = "simai-workload")]
    SimaiWorkload,
    /// NeuSight "Work_Item" TSV.
    #[serde(rename = "neusight-tsv")]
    NeusightTsv,
    /// Echo / Megatron per-rank op trace.
    #[serde(rename = "echo-trace")]
    EchoTrace,
    /// Optimus-Prime pipeline training log.
    #[serde(rename = "optimus-prime-log")]
    OptimusPrimeLog,
    /// HuggingFace `config.json` of a model (an architecture, not a job).
    #[serde(rename = "hf-config")]
    HfConfig,
    /// PyTorch profiler (Kineto) trace JSON, plain or gzip'd, one per rank.
    #[serde(rename = "kineto-trace")]
    KinetoTrace,
    /// Chakra execution trace (protobuf `.et`, one per rank).
    #[serde(rename = "chakra-et")]
    ChakraEt,
    /// ASTRA-sim's communicator-group JSON (`comm_groups.json`) beside a
    /// set of Chakra `.et` files.
    #[serde(rename = "chakra-comm-groups")]
    ChakraCommGroups,
}

impl Format {
    pub const ALL: [Format; 8] = [
        Format::SimaiWorkload,
        Format::NeusightTsv,
        Format::EchoTrace,
        Format::OptimusPrimeLog,
        Format::HfConfig,
        Format::KinetoTrace,
        Format::ChakraEt,
        Format::ChakraCommGroups,
    ];

    /// The stable name used in the CLI, JSON and the web page.
    pub fn name(self) -> &'static str {
        match self {
            Format::SimaiWorkload => "simai-workload",
            Format::NeusightTsv => "neusight-tsv",
            Format::EchoTrace => "echo-trace",
            Format::OptimusPrimeLog => "optimus-prime-log",
            Format::HfConfig => "hf-config",
            Format::KinetoTrace => "kineto-trace",
            Format::ChakraEt => "chakra-et",
            Format::ChakraCommGroups => "chakra-comm-groups",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// What a file of this format looks like, for error messages.
    pub fn signature(self) -> &'static str {
        match self {
            Format::SimaiWorkload => "a policy such as HYBRID_TRANSFORMER_FWD_IN_BCKWD on line 1",
            Format::NeusightTsv => "a tab-separated header starting `name\\tforward_compute_time`",
            Format::EchoTrace => "lines like `rank:7:forward_step(stage_id=3,...)`",
            Format::OptimusPrimeLog => "log lines like `> World size: 8` or `| epoch   1 |`",
            Format::HfConfig => {
                "a HuggingFace config.json: a JSON object with `model_type` and `hidden_size`"
            }
            Format::KinetoTrace => {
                "a PyTorch profiler trace: a JSON object (optionally gzip'd) with `traceEvents` and `schemaVersion` / `distributedInfo`"
            }
            Format::ChakraEt => {
                "a Chakra execution trace: binary protobuf, a length-prefixed GlobalMetadata (version such as 0.0.4) then Node messages"
            }
            Format::ChakraCommGroups => {
                "ASTRA-sim's comm_groups.json: a JSON object mapping each group id to a list of ranks, `{\"1\": [0, 1]}`"
            }
        }
    }
}

/// The parallel configuration of a job. Rank layout (Megatron): TP fastest,
/// then DP, then PP, i.e. `rank = tp_rank + tp * (dp_rank + dp * stage)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParallelConfig {
    /// Number of ranks (GPUs) in the job: `tp * pp * dp`.
    pub world: u32,
    /// Tensor-parallel group size.
    pub tp: u32,
    /// Pipeline-parallel stages.
    pub pp: u32,
    /// Data-parallel replicas: `world / (tp * pp)` (with context
    /// parallelism DP x CP: the ranks that hold the same weights).
    pub dp: u32,
    /// Context-parallel group size: `cp` consecutive data-parallel indices
    /// (right after TP in rank order) share each sequence; 1 without
    /// context parallelism (then not written in JSON).
    #[serde(skip_serializing_if = "is_one")]
    pub cp: u32,
    /// Expert-parallel group size.
    pub ep: u32,
    /// Data parallelism across expert groups: `dp / ep` (at least 1);
    /// with an expert TP, TP x DP / (expert TP x EP).
    pub dp_ep: u32,
    /// Expert tensor-parallel size when other than TP (see
    /// [`crate::engine::spec::Parallelism::etp`]); `None` for every input format,
    /// set by model-level jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etp: Option<u32>,
    /// HSDP: data-parallel indices per shard group (see
    /// [`crate::engine::spec::Parallelism::dp_shard`]); 0 without hybrid
    /// sharding (then not written in JSON), set by model-level jobs.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub dp_shard: u32,
    /// Micro-batches per iteration (gradient-accumulation steps).
    pub micro_batches: u32,
    /// Virtual pipeline stages (model chunks per rank); 1 without interleaving.
    /// For SimAI workloads this is the header's `vpp` as written (AICB writes
    /// layers per stage there; SimAI uses it in its bubble formula).
    pub virtual_stages: u32,
    /// Samples per micro-batch, when the input says it.
    pub micro_batch_size: Option<u32>,
    /// Bytes of one stage-to-stage activation send of one micro-batch
    /// (0 when unknown or without pipelining).
    pub activation_bytes: u64,
}

impl ParallelConfig {
    /// A configuration from the sizes an input gives; missing or inconsistent
    /// values are resolved (world defaults to `tp * pp`, i.e. DP 1) and every
    /// assumption is returned as a warning message.
    pub fn resolve(
        world: Option<u32>,
        tp: u32,
        pp: u32,
        ep: u32,
        micro_batches: u32,
    ) -> (ParallelConfig, Vec<String>) {
        let mut notes = Vec::new();
        let tp = tp.max(1);
        let pp = pp.max(1);
        let ep = ep.max(1);
        let tp_pp = u64::from(tp) * u64::from(pp);
        let world_v = match world {
            Some(w) if w > 0 => w,
            _ => {
                let w = u32::try_from(tp_pp).unwrap_or(u32::MAX);
                notes.push(format!(
                    "world size not given; assuming TP x PP = {w} (data parallelism 1)"
                ));
                w
            }
        };
        let dp = (u64::from(world_v) / tp_pp).max(1);
        if u64::from(world_v) % tp_pp != 0 {
            notes.push(format!(
                "world size {world_v} is not a multiple of TP x PP = {tp_pp}; using DP = {dp}"
            ));
        }
        let dp = u32::try_from(dp).unwrap_or(u32::MAX);
        let dp_ep = (dp / ep).max(1);
        if dp % ep != 0 {
            notes.push(format!(
                "DP {dp} is not a multiple of EP {ep}; using DP/EP = {dp_ep}"
            ));
        }
        (
            ParallelConfig {
                world: world_v,
                tp,
                pp,
                dp,
                cp: 1,
                ep,
                dp_ep,
                micro_batches: micro_batches.max(1),
                virtual_stages: 1,
                micro_batch_size: None,
                activation_bytes: 0,
                etp: None,
                dp_shard: 0,
            },
            notes,
        )
    }

    /// Pipeline stage of `rank` under the TP-fastest, then DP, then PP layout.
    pub fn stage_of_rank(&self, rank: u32) -> u32 {
        let per_stage = u64::from(self.tp.max(1)) * u64::from(self.dp.max(1));
        u32::try_from(u64::from(rank) / per_stage).unwrap_or(u32::MAX)
    }

    /// Position of `rank` inside its tensor-parallel group.
    pub fn tp_rank(&self, rank: u32) -> u32 {
        rank % self.tp.max(1)
    }

    /// Data-parallel replica index of `rank`.
    pub fn dp_rank(&self, rank: u32) -> u32 {
        (rank / self.tp.max(1)) % self.dp.max(1)
    }
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// Which collective (or point-to-point) operation moves the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    Broadcast,
    /// A point-to-point send.
    Send,
    /// A point-to-point receive.
    Recv,
}

/// The process group a communication runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommGroup {
    /// Tensor-parallel group.
    Tp,
    /// Data-parallel group.
    Dp,
    /// Context-parallel group (CP consecutive data-parallel indices).
    Cp,
    /// Pipeline neighbours (stage to stage).
    Pp,
    /// Expert-parallel group.
    Ep,
    /// Data-parallel group across expert groups (`dp / ep` ranks).
    DpEp,
    /// Word-embedding group: first and last pipeline stage (Echo `ep`).
    Embedding,
    /// Position-embedding group (Echo `pep`).
    PositionEmbedding,
    /// HSDP's shard group: the data-parallel ranks one shard is split
    /// over (model-level jobs with `--hsdp-shard`).
    DpShard,
    /// HSDP's replicate group: the ranks holding the same shard (the
    /// gradient all-reduce across replicas).
    DpReplicate,
    /// No group named (e.g. SimAI `ALLREDUCE_ASYNC`): the simulator decides.
    Unscoped,
}

/// One communication attached to a compute phase of a described layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CommOp {
    pub kind: CommKind,
    pub group: CommGroup,
    /// Payload in bytes (per rank, as the input states it).
    pub size_bytes: u64,
    /// Issued without waiting for completion (SimAI weight-gradient column,
    /// NeuSight `ALLREDUCE_ASYNC`); blocking otherwise.
    pub asynchronous: bool,
    /// A prefetch this many units ahead (FSDP's all-gathers, forward and
    /// input-gradient columns; 0: none; see the engine's
    /// `CommSpec::prefetch`).
    #[serde(default, skip_serializing_if = "is_zero_u8")]
    pub prefetch: u8,
}

fn is_zero_u8(x: &u8) -> bool {
    *x == 0
}

/// Compute of one phase of a layer followed by its (optional) collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub struct PhaseOp {
    /// Compute time in ns (0 when the input has none).
    pub compute_ns: u64,
    /// The collective run after the compute, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<CommOp>,
    /// Host time to launch the compute's kernels, ns (0: no host model; see
    /// [`crate::engine::spec::PhaseOps::launch_ns`]).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub launch_ns: u64,
    /// The host waits for the device before launching this compute (see
    /// [`crate::engine::spec::PhaseOps::host_sync`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub host_sync: bool,
    /// Kernels the compute launches (0 where the input does not say; model
    /// jobs count them per op, for `kernels_per_iteration`).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub kernels: u32,
    /// Entries the launch adds to the device's launch queue (see
    /// [`crate::engine::spec::PhaseOps::launches`]; 0 where the input does
    /// not say).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub launches: u32,
    /// The collective runs alongside this compute instead of after it (see
    /// [`crate::engine::spec::PhaseOps::comm_overlap`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub comm_overlap: bool,
}

fn is_zero_u32(x: &u32) -> bool {
    *x == 0
}

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

/// What a layer row is for (drives special cases in the simulators).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerRole {
    /// Input embedding (SimAI `embedding_layer`; excluded from SimAI's bubble sum).
    Embedding,
    /// An ordinary layer / op.
    Layer,
    /// Once-per-iteration gradient synchronisation (before the micro-batches).
    GradSync,
    /// Loss computation (after the micro-batches).
    Loss,
    /// Optimizer step (after the micro-batches).
    Optimizer,
}

/// One described layer (or op): its three phases and the wait after each of
/// its collectives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerOp {
    pub name: String,
    pub role: LayerRole,
    /// 1-based line of the input this came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_line: Option<u32>,
    /// Index of the repeated block copy this op belongs to (NeuSight block
    /// repeats: 0..block_repeats), when the model repeats a block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_index: Option<u32>,
    /// An activation checkpoint: recomputation restarts from here (SimAI
    /// `checkpoints:` list).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub checkpoint: bool,
    /// Before this layer's input-gradient, forward is re-run from the nearest
    /// checkpoint before it (SimAI `checkpoint_initiates:` list).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub initiates_recompute: bool,
    pub forward: PhaseOp,
    pub input_grad: PhaseOp,
    pub weight_grad: PhaseOp,
    /// Wait after each of this layer's collectives completes, ns.
    pub update_ns: u64,
    /// The input-gradient and weight-gradient compute are the parser's
    /// estimate, not the file's (NeuSight rows with zero backward: each
    /// equals forward, i.e. backward = 2 x forward); a backward-factor
    /// setting replaces exactly these.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backward_estimated: bool,
}

impl LayerOp {
    /// A layer with no compute and no communication.
    pub fn empty(name: impl Into<String>, role: LayerRole) -> Self {
        LayerOp {
            name: name.into(),
            role,
            source_line: None,
            block_index: None,
            checkpoint: false,
            initiates_recompute: false,
            forward: PhaseOp::default(),
            input_grad: PhaseOp::default(),
            weight_grad: PhaseOp::default(),
            update_ns: 0,
            backward_estimated: false,
        }
    }

    /// Same compute and communication (name, role, times, comms; the source
    /// line and block index are ignored).
    pub fn same_work(&self, other: &LayerOp) -> bool {
        self.name == other.name
            && self.role == other.role
            && self.checkpoint == other.checkpoint
            && self.initiates_recompute == other.initiates_recompute
            && self.forward == other.forward
            && self.input_grad == other.input_grad
            && self.weight_grad == other.weight_grad
            && self.update_ns == other.update_ns
    }

    /// Forward + input-gradient + weight-gradient compute, ns (saturating).
    pub fn total_compute_ns(&self) -> u64 {
        self.forward
            .compute_ns
            .saturating_add(self.input_grad.compute_ns)
            .saturating_add(self.weight_grad.compute_ns)
    }
}

/// A block of layer ops run once per micro-batch, `repeat` times in a row
/// (run-length encoding of identical consecutive micro-batches).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MicroBatchBlock {
    pub repeat: u32,
    pub ops: Vec<LayerOp>,
}

/// Which pipeline stages a [`StageWorkload`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StageScope {
    /// Every stage runs this list (SPMD; SimAI workloads describe one stage).
    AllStages,
    /// Only this stage (0-based).
    Stage(u32),
}

/// What one pipeline stage runs in one iteration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageWorkload {
    pub scope: StageScope,
    /// Once-per-iteration rows before the micro-batches (gradient sync).
    pub before: Vec<LayerOp>,
    /// The per-micro-batch layer ops, in order; the sum of `repeat` is the
    /// number of micro-batches.
    pub blocks: Vec<MicroBatchBlock>,
    /// Once-per-iteration rows after the micro-batches (loss, optimizer).
    pub after: Vec<LayerOp>,
    /// Transformer layers of each model chunk of the stage when they are
    /// not equal (a model-level job with the embedding or loss counted in
    /// the pipeline split); empty: an even cut.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunk_layers: Vec<u32>,
}

impl StageWorkload {
    /// Number of micro-batches (sum of the blocks' repeats).
    pub fn micro_batch_count(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| u64::from(b.repeat))
            .fold(0u64, u64::saturating_add)
    }

    /// The layer ops of micro-batch `index` (0-based), if it exists.
    pub fn micro_batch(&self, index: u64) -> Option<&[LayerOp]> {
        let mut left = index;
        for b in &self.blocks {
            if left < u64::from(b.repeat) {
                return Some(&b.ops);
            }
            left -= u64::from(b.repeat);
        }
        None
    }

    /// Number of distinct layer ops stored (before + blocks + after).
    pub fn stored_op_count(&self) -> usize {
        self.before.len()
            + self.after.len()
            + self.blocks.iter().map(|b| b.ops.len()).sum::<usize>()
    }

    /// Number of layer ops executed in one iteration (blocks times repeats).
    pub fn executed_op_count(&self) -> u64 {
        ((self.before.len() + self.after.len()) as u64).saturating_add(
            self.blocks
                .iter()
                .map(|b| u64::from(b.repeat).saturating_mul(b.ops.len() as u64))
                .fold(0u64, u64::saturating_add),
        )
    }
}

/// A job described by a workload file (no measured times).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DescribedJob {
    /// The input file name.
    pub file: String,
    pub format: Format,
    pub parallel: ParallelConfig,
    /// Per-stage workloads; a single [`StageScope::AllStages`] entry when
    /// every stage runs the same list.
    pub stages: Vec<StageWorkload>,
    /// Parse and conversion diagnostics, in order.
    pub diagnostics: Vec<Diagnostic>,
}

impl DescribedJob {
    /// The workload of pipeline stage `stage` (0-based).
    pub fn stage(&self, stage: u32) -> Option<&StageWorkload> {
        self.stages.iter().find(|s| match s.scope {
            StageScope::AllStages => stage < self.parallel.pp.max(1),
            StageScope::Stage(x) => x == stage,
        })
    }
}

/// What a measured operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum OpKind {
    /// Device or host compute (may contain communication sub-operations).
    Compute,
    /// A collective over a group.
    Collective {
        collective: CommKind,
        group: CommGroup,
    },
    /// Point-to-point send to a neighbour stage.
    Send,
    /// Point-to-point receive; measured durations include waiting for the peer.
    Recv,
    /// Waiting (synchronisation) without work.
    Wait,
}

/// Which part of training a measured operation belongs to (forward,
/// backward, the gradient synchronisation, the optimizer); not the SimAI
/// column of an op, which is [`crate::analytical::TrainingPhase`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrainingPhase {
    Forward,
    Backward,
    /// Once-per-iteration gradient synchronisation.
    GradSync,
    Optimizer,
}

/// One measured operation of a rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MeasuredOp {
    pub name: String,
    pub kind: OpKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<TrainingPhase>,
    /// Start on the rank's clock, ns; `None` when the input has no timestamp
    /// (profiling placeholders, aggregated log entries).
    pub start_ns: Option<u64>,
    /// Measured duration, ns; `None` when unknown.
    pub duration_ns: Option<u64>,
    /// Micro-batch index (0-based) when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub micro_batch: Option<u32>,
    /// Training step / iteration number as logged, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// How many executions this entry aggregates (1 for a traced op;
    /// Optimus-Prime `ops=N` sums).
    pub count: u32,
    /// Message bytes from shape x dtype size, when both are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_bytes: Option<u64>,
    /// Tensor shape as logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Element type as logged (e.g. `torch.float32`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Schedule state (Megatron `mg_state`: warmup, steady, cooldown, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Free-text detail (description, function name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Operations run one after another inside this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sub_ops: Vec<MeasuredOp>,
    /// 1-based line of the input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_line: Option<u32>,
    /// The device stream the op ran on (Kineto traces: the CUDA stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<u32>,
    /// A point-to-point op's other rank (Chakra: `comm_dst` of a send,
    /// `comm_src` of a receive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<u32>,
    /// A point-to-point op matched with its partner (Chakra): the
    /// transfer's index in the run, the same on the send and its receive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer: Option<u32>,
    /// Indices (in the rank's op list, all earlier) of the matched
    /// point-to-point ops this op depends on directly (Chakra's data and
    /// control dependencies on sends and receives).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waits_for: Vec<u32>,
}

impl MeasuredOp {
    /// A compute op with nothing known but its name.
    pub fn new(name: impl Into<String>, kind: OpKind) -> Self {
        MeasuredOp {
            name: name.into(),
            kind,
            phase: None,
            start_ns: None,
            duration_ns: None,
            micro_batch: None,
            step: None,
            count: 1,
            message_bytes: None,
            shape: None,
            dtype: None,
            state: None,
            detail: None,
            sub_ops: Vec::new(),
            source_line: None,
            stream: None,
            peer: None,
            transfer: None,
            waits_for: Vec::new(),
        }
    }

    /// End time, ns (`start + duration`), when both are known.
    pub fn end_ns(&self) -> Option<u64> {
        Some(self.start_ns?.saturating_add(self.duration_ns?))
    }

    /// The op's own work: duration minus the sum of its sub-operations'
    /// durations (saturating at 0), ns.
    pub fn own_duration_ns(&self) -> Option<u64> {
        let d = self.duration_ns?;
        let subs = self
            .sub_ops
            .iter()
            .filter_map(|s| s.duration_ns)
            .fold(0u64, u64::saturating_add);
        Some(d.saturating_sub(subs))
    }
}

/// A time interval on one clock, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Span {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Span {
    /// `end - start`, ns (0 when reversed).
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// The measured operations of one rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankTrace {
    pub rank: u32,
    /// Pipeline stage this rank runs (0-based), when known.
    pub stage: Option<u32>,
    /// File the ops came from.
    pub file: String,
    /// Ops in the order they were recorded; empty for a rank that runs
    /// another rank's program ([`RankTrace::copy`]: read its ops with
    /// [`MeasuredRun::ops_of`]).
    pub ops: Vec<MeasuredOp>,
    /// This rank's measured iterations (first op start to optimizer end), on
    /// its own clock.
    pub iterations: Vec<Span>,
    /// The rank runs another rank's program (Chakra files of one stage's
    /// ranks): its ops are that rank's with its own values; None: `ops`
    /// holds them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy: Option<RankCopy>,
}

/// The ops of a rank that runs another rank's program: op `i` is rank
/// `of`'s op `i`, but for the ops listed in `values` or `shared_at`, which
/// take the listed fields from there (the values one rank of a program
/// holds for itself: its groups, peers and transfers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankCopy {
    /// The rank whose ops these are (one whose `ops` holds them).
    pub of: u32,
    /// (op index, this rank's values), ascending by index.
    pub values: Vec<(u32, OpValues)>,
    /// (op index, index in `shared`), ascending by op index, for ops not
    /// in `values`: values that many ranks' ops hold alike (a collective
    /// with its resolved group), kept once.
    pub shared_at: Vec<(u32, u32)>,
    /// The values `shared_at` names (one table for the run's copies).
    #[serde(serialize_with = "shared_values")]
    pub shared: Arc<[OpValues]>,
}

fn shared_values<S: serde::Serializer>(v: &Arc<[OpValues]>, s: S) -> Result<S::Ok, S::Error> {
    v[..].serialize(s)
}

/// Reads a rank's own values op by op, for ascending op indices (see
/// [`RankTrace::own_values`]).
#[derive(Debug, Clone, Copy)]
pub struct OwnValues<'a> {
    values: &'a [(u32, OpValues)],
    shared_at: &'a [(u32, u32)],
    shared: &'a [OpValues],
}

impl<'a> OwnValues<'a> {
    /// The values of op `i` when the rank holds its own; each call's `i`
    /// at least the previous one's.
    pub fn at(&mut self, i: usize) -> Option<&'a OpValues> {
        fn skip<T>(list: &mut &[(u32, T)], i: usize) -> bool {
            while list.first().is_some_and(|v| (v.0 as usize) < i) {
                *list = &list[1..];
            }
            list.first().is_some_and(|v| v.0 as usize == i)
        }
        if skip(&mut self.values, i) {
            return Some(&self.values[0].1);
        }
        if skip(&mut self.shared_at, i) {
            return self.shared.get(self.shared_at[0].1 as usize);
        }
        None
    }

    /// Op `i` of the rank as it runs it: the program's op `op` read
    /// through the rank's own values (same order rule as [`Self::at`]).
    pub fn op(&mut self, op: &'a MeasuredOp, i: usize) -> OwnOp<'a> {
        OwnOp {
            op,
            own: self.at(i),
        }
    }

    /// Every value held (ops in no particular order).
    pub fn all(self) -> impl Iterator<Item = &'a OpValues> {
        let shared = self.shared;
        self.values.iter().map(|v| &v.1).chain(
            self.shared_at
                .iter()
                .filter_map(move |v| shared.get(v.1 as usize)),
        )
    }
}

/// One op of a rank as the rank runs it, read in place: its program's op
/// with the fields the rank holds for itself ([`OpValues`]) taken from
/// there, so a copy's ops are never made to be read.
#[derive(Debug, Clone, Copy)]
pub struct OwnOp<'a> {
    /// The program's op (the fields every rank of the program shares).
    pub op: &'a MeasuredOp,
    /// The rank's own values for it, when it holds them.
    pub own: Option<&'a OpValues>,
}

impl<'a> OwnOp<'a> {
    pub fn kind(self) -> OpKind {
        self.own.map_or(self.op.kind, |v| v.kind)
    }

    pub fn duration_ns(self) -> Option<u64> {
        self.own.map_or(self.op.duration_ns, |v| v.duration_ns)
    }

    pub fn peer(self) -> Option<u32> {
        self.own.map_or(self.op.peer, |v| v.peer)
    }

    pub fn transfer(self) -> Option<u32> {
        self.own.map_or(self.op.transfer, |v| v.transfer)
    }

    pub fn detail(self) -> Option<&'a str> {
        match self.own {
            Some(v) => v.detail.as_deref(),
            None => self.op.detail.as_deref(),
        }
    }
}

/// The fields of a [`MeasuredOp`] a rank running another rank's program
/// may hold for itself (see [`RankCopy`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpValues {
    pub kind: OpKind,
    pub duration_ns: Option<u64>,
    /// Shared by the ops that read the same (a rank's collectives of one
    /// group).
    #[serde(serialize_with = "shared_text")]
    pub detail: Option<Arc<str>>,
    pub peer: Option<u32>,
    pub transfer: Option<u32>,
}

fn shared_text<S: serde::Serializer>(v: &Option<Arc<str>>, s: S) -> Result<S::Ok, S::Error> {
    v.as_deref().serialize(s)
}

impl OpValues {
    /// The values `op` holds.
    pub fn of(op: &MeasuredOp) -> OpValues {
        OpValues {
            kind: op.kind,
            duration_ns: op.duration_ns,
            detail: op.detail.as_deref().map(Arc::from),
            peer: op.peer,
            transfer: op.transfer,
        }
    }

    /// Whether `op` holds these values.
    pub fn held_by(&self, op: &MeasuredOp) -> bool {
        self.kind == op.kind
            && self.duration_ns == op.duration_ns
            && self.detail.as_deref() == op.detail.as_deref()
            && self.peer == op.peer
            && self.transfer == op.transfer
    }

    /// `op` with these values.
    pub fn apply(&self, op: &mut MeasuredOp) {
        op.kind = self.kind;
        op.duration_ns = self.duration_ns;
        op.detail = self.detail.as_deref().map(str::to_string);
        op.peer = self.peer;
        op.transfer = self.transfer;
    }
}

impl RankCopy {
    /// This rank's values of op `i`, when it holds its own.
    pub fn values_of(&self, i: usize) -> Option<&OpValues> {
        let i = u32::try_from(i).ok()?;
        if let Ok(k) = self.values.binary_search_by_key(&i, |v| v.0) {
            return Some(&self.values[k].1);
        }
        let k = self.shared_at.binary_search_by_key(&i, |v| v.0).ok()?;
        self.shared.get(self.shared_at[k].1 as usize)
    }
}

impl RankTrace {
    /// The values this rank holds for its program's ops (none but for a
    /// rank that runs another rank's program).
    pub fn own_values(&self) -> OwnValues<'_> {
        match &self.copy {
            Some(c) => OwnValues {
                values: &c.values,
                shared_at: &c.shared_at,
                shared: &c.shared,
            },
            None => OwnValues {
                values: &[],
                shared_at: &[],
                shared: &[],
            },
        }
    }
}

/// One measured iteration time of the whole job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MeasuredIteration {
    /// Iteration / batch number as logged (1-based), or the index in the run.
    pub index: u32,
    /// Wall time, ns.
    pub duration_ns: u64,
    /// How many training iterations the measurement covers (the first
    /// Optimus-Prime epoch line covers two).
    pub iterations_covered: u32,
    /// 1-based input line the number came from, when it came from one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_line: Option<u32>,
}

/// A measured training run: ranks, their ops and the iteration times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MeasuredRun {
    pub format: Format,
    /// Input files of the run (one per rank for Echo; one log for Optimus).
    pub files: Vec<String>,
    pub parallel: ParallelConfig,
    /// Ranks in ascending order.
    pub ranks: Vec<RankTrace>,
    /// The job's measured iteration times, in order.
    pub iterations: Vec<MeasuredIteration>,
    /// Parse and assembly diagnostics (missing or duplicate ranks, ...).
    pub diagnostics: Vec<Diagnostic>,
}

impl MeasuredRun {
    /// The trace of `rank`, if present.
    pub fn rank(&self, rank: u32) -> Option<&RankTrace> {
        self.ranks.iter().find(|r| r.rank == rank)
    }

    /// Total measured ops over all ranks (sub-ops not counted).
    pub fn op_count(&self) -> usize {
        self.ranks.iter().map(|r| self.op_count_of(r)).sum()
    }

    /// The trace whose `ops` hold `rt`'s ops: `rt` itself, or the rank
    /// whose program it runs ([`RankTrace::copy`]).
    pub fn program_of<'a>(&'a self, rt: &'a RankTrace) -> &'a RankTrace {
        match &rt.copy {
            Some(c) => self
                .ranks
                .binary_search_by_key(&c.of, |r| r.rank)
                .ok()
                .map_or(rt, |k| &self.ranks[k]),
            None => rt,
        }
    }

    /// How many ops `rt` runs.
    pub fn op_count_of(&self, rt: &RankTrace) -> usize {
        self.program_of(rt).ops.len()
    }

    /// Op `i` of `rt` (a copy's with its own values), if it exists.
    pub fn op_of<'a>(&'a self, rt: &'a RankTrace, i: usize) -> Option<Cow<'a, MeasuredOp>> {
        let op = self.program_of(rt).ops.get(i)?;
        Some(match rt.copy.as_ref().and_then(|c| c.values_of(i)) {
            Some(v) => {
                let mut own = op.clone();
                v.apply(&mut own);
                Cow::Owned(own)
            }
            None => Cow::Borrowed(op),
        })
    }

    /// Every op of `rt`, in order (a copy's with its own values: only
    /// those are made, the others are its program's).
    pub fn ops_iter<'a>(
        &'a self,
        rt: &'a RankTrace,
    ) -> impl Iterator<Item = Cow<'a, MeasuredOp>> + 'a {
        let ops = &self.program_of(rt).ops;
        let mut own = rt.own_values();
        ops.iter().enumerate().map(move |(i, op)| match own.at(i) {
            Some(v) => {
                let mut own = op.clone();
                v.apply(&mut own);
                Cow::Owned(own)
            }
            None => Cow::Borrowed(op),
        })
    }

    /// Every op of `rt` as one list (a copy's made; see
    /// [`MeasuredRun::ops_iter`]).
    pub fn ops_of<'a>(&'a self, rt: &'a RankTrace) -> Cow<'a, [MeasuredOp]> {
        if rt.copy.is_none() {
            return Cow::Borrowed(&rt.ops);
        }
        Cow::Owned(self.ops_iter(rt).map(Cow::into_owned).collect())
    }

    /// Mean wall time of the iterations that cover exactly one training
    /// iteration, ns; falls back to all measurements divided by what they
    /// cover. `None` without measurements.
    pub fn steady_iteration_ns(&self) -> Option<u64> {
        let single: Vec<u64> = self
            .iterations
            .iter()
            .filter(|i| i.iterations_covered == 1)
            .map(|i| i.duration_ns)
            .collect();
        if !single.is_empty() {
            // Exact mean in 128 bits: parsed durations may be huge.
            let total: u128 = single.iter().map(|d| u128::from(*d)).sum();
            return u64::try_from(total / single.len() as u128).ok();
        }
        let covered: u128 = self
            .iterations
            .iter()
            .map(|i| u128::from(i.iterations_covered))
            .sum();
        let total: u128 = self
            .iterations
            .iter()
            .map(|i| u128::from(i.duration_ns))
            .sum();
        (covered > 0).then(|| u64::try_from(total / covered).unwrap_or(u64::MAX))
    }
}

/// Bytes of one element of a PyTorch dtype name (`torch.float32` -> 4), if known.
pub fn dtype_size_bytes(dtype: &str) -> Option<u64> {
    let d = dtype.strip_prefix("torch.").unwrap_or(dtype);
    Some(match d {
        "float64" | "double" | "int64" | "long" | "complex64" | "uint64" => 8,
        "float32" | "float" | "int32" | "int" | "uint32" => 4,
        "float16" | "half" | "bfloat16" | "int16" | "short" | "uint16" => 2,
        "int8" | "uint8" | "bool" | "float8_e4m3fn" | "float8_e5m2" => 1,
        "complex128" => 16,
        _ => return None,
    })
}

/// Bytes of a tensor: product of the shape times the dtype size, `None` on
/// overflow or unknown dtype.
pub fn tensor_bytes(shape: &[u64], dtype: &str) -> Option<u64> {
    let elem = dtype_size_bytes(dtype)?;
    shape.iter().try_fold(elem, |acc, d| acc.checked_mul(*d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_derives_dp_and_warns() {
        let (p, notes) = ParallelConfig::resolve(Some(512), 8, 4, 1, 1);
        assert_eq!((p.dp, p.dp_ep), (16, 16));
        assert!(notes.is_empty());
        let (p, notes) = ParallelConfig::resolve(None, 2, 4, 1, 1);
        assert_eq!((p.world, p.dp), (8, 1));
        assert_eq!(notes.len(), 1);
        let (p, notes) = ParallelConfig::resolve(Some(10), 2, 2, 3, 1);
        assert_eq!((p.dp, p.dp_ep), (2, 1));
        assert_eq!(notes.len(), 2);
    }

    #[test]
    fn rank_layout_tp_fastest() {
        let (p, _) = ParallelConfig::resolve(Some(8), 2, 4, 1, 1);
        assert_eq!(p.stage_of_rank(7), 3);
        assert_eq!(p.tp_rank(7), 1);
        let (p, _) = ParallelConfig::resolve(Some(16), 2, 4, 1, 1);
        assert_eq!(p.stage_of_rank(7), 1);
        assert_eq!(p.dp_rank(7), 1);
    }

    #[test]
    fn tensor_bytes_checks_overflow() {
        assert_eq!(
            tensor_bytes(&[2048, 2, 5120], "torch.float32"),
            Some(83_886_080)
        );
        assert_eq!(tensor_bytes(&[u64::MAX, 2], "torch.bool"), None);
        assert_eq!(tensor_bytes(&[3], "torch.weird"), None);
    }

    #[test]
    fn micro_batch_lookup_walks_blocks() {
        let op = |n: &str| LayerOp::empty(n, LayerRole::Layer);
        let s = StageWorkload {
            scope: StageScope::AllStages,
            before: vec![],
            blocks: vec![
                MicroBatchBlock {
                    repeat: 1,
                    ops: vec![op("a")],
                },
                MicroBatchBlock {
                    repeat: 3,
                    ops: vec![op("b"), op("c")],
                },
            ],
            after: vec![],
            chunk_layers: Vec::new(),
        };
        assert_eq!(s.micro_batch_count(), 4);
        assert_eq!(s.micro_batch(0).unwrap()[0].name, "a");
        assert_eq!(s.micro_batch(3).unwrap()[1].name, "c");
        assert!(s.micro_batch(4).is_none());
        assert_eq!(s.executed_op_count(), 7);
    }
}
