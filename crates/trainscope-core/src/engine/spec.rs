//! The engine's input: a schedule-ready job ([`JobSpec`]). A job is a
//! parallel configuration plus one [`RankProgram`] per simulated rank: the
//! per-micro-batch op blocks it runs (forward, input-gradient and
//! weight-gradient compute and collectives per layer), the once-per-iteration
//! rows before (gradient sync) and after (loss, optimizer), and optionally an
//! explicit step order.
//!
//! Two shapes:
//! - [`JobMode::Spmd`] (described jobs: SimAI/AICB, NeuSight): every rank of a
//!   stage does the same work, so one representative rank per stage is
//!   simulated (the stage's first rank in placement order).
//! - [`JobMode::PerRank`] (measured runs): one program per simulated rank with
//!   its own measured durations, per micro-batch if wanted
//!   ([`RankProgram::micro_batch_blocks`]), and its own step order
//!   ([`RankProgram::order`]); its ranks may exchange point-to-point
//!   [`Transfer`]s where their programs say (Chakra graphs).
//!
//! [`JobSpec::from_simai`] adapts a parsed SimAI/AICB workload: AICB unrolls
//! gradient accumulation, writing the per-micro-batch block (from
//! `embedding_layer` to the row before the next `embedding_layer`) `ga`
//! times after the gradient-sync rows, then `cross_entropy*` / `optimizer*`
//! rows. The adapter splits the file back into those parts, keeps each
//! distinct block once and maps every micro-batch to its block.

use crate::engine::schedule::PipeStep;
use crate::engine::SimError;
use crate::formats::simai::{self, CommGroup, CommType, SimaiRecord, SimaiWorkload};
use crate::timeline::SpanKind;
use serde::Serialize;

/// Most ranks a job may have (tp x dp x pp).
pub const MAX_WORLD: u64 = 1 << 20;

/// Tasks one stage program makes, as the builder estimates them: per
/// micro-batch 10 per layer of its biggest block plus 4, and 6 per
/// once-per-iteration row.
pub fn estimated_stage_tasks(micro_batches: u64, block_layers: u64, once_rows: u64) -> u64 {
    micro_batches
        .saturating_mul(block_layers.saturating_mul(10).saturating_add(4))
        .saturating_add(once_rows.saturating_mul(6))
}

/// Refuse, before anything proportional to them is allocated, sizes beyond
/// the limits: a world (tp x dp x pp) above [`MAX_WORLD`], more than
/// [`crate::limits::MAX_MICRO_BATCHES`] micro-batches, more than
/// [`crate::limits::MAX_VIRTUAL_STAGES`] virtual stages, or `programs`
/// stage programs of the given shape making more than
/// [`crate::limits::MAX_TASKS`] tasks. Adapters call it with the sizes the
/// input states (and one micro-batch when the count may still be
/// overridden); the builder with the final ones. The error names the
/// numbers and the limit.
pub fn check_size(
    parallel: Parallelism,
    programs: u64,
    micro_batches: u64,
    virtual_stages: u64,
    block_layers: u64,
    once_rows: u64,
) -> Result<(), SimError> {
    use crate::limits::MAX_TASKS;
    use crate::limits::{MAX_MICRO_BATCHES, MAX_VIRTUAL_STAGES};
    let world = parallel.world();
    if world > MAX_WORLD {
        return Err(SimError::TooLarge(format!(
            "a world of tp {} x dp {} x pp {} = {world} ranks (limit {MAX_WORLD})",
            parallel.tp, parallel.dp, parallel.pp
        )));
    }
    if micro_batches > u64::from(MAX_MICRO_BATCHES) {
        return Err(SimError::TooLarge(format!(
            "{micro_batches} micro-batches (limit {MAX_MICRO_BATCHES})"
        )));
    }
    if virtual_stages > u64::from(MAX_VIRTUAL_STAGES) {
        return Err(SimError::TooLarge(format!(
            "{virtual_stages} virtual stages (limit {MAX_VIRTUAL_STAGES})"
        )));
    }
    let tasks = programs.saturating_mul(estimated_stage_tasks(
        micro_batches.max(1),
        block_layers,
        once_rows,
    ));
    if tasks > MAX_TASKS {
        return Err(SimError::TooLarge(format!(
            "about {tasks} tasks ({programs} stage program(s) x {micro_batches} micro-batch(es) of {block_layers} layer(s), {once_rows} once-per-iteration row(s); limit {MAX_TASKS})"
        )));
    }
    Ok(())
}

/// Parallel sizes. World = tp x dp x pp; EP splits DP (ep divides dp);
/// so does CP: with context parallelism `dp` counts DP x CP (the ranks
/// that hold the same weights) and a CP group is `cp` consecutive DP
/// indices (Megatron's order tp-cp-dp-pp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Parallelism {
    pub tp: u32,
    pub dp: u32,
    pub pp: u32,
    pub ep: u32,
    /// Context-parallel group size (1: none, then not written in JSON).
    #[serde(skip_serializing_if = "is_one")]
    pub cp: u32,
    /// Expert tensor-parallel size when other than `tp` (MoE parallel
    /// folding, a model-level job's expert TP 1): a stage's TP x DP ranks
    /// (local index tp + TP x dp) are regrouped as expert TP x EP x expert
    /// DP, expert TP fastest; `None`: EP groups are carved out of DP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etp: Option<u32>,
    /// HSDP (hybrid sharded data parallelism): DP indices per shard group
    /// ([`GroupKind::DpShard`], consecutive indices; with CP, whole CP
    /// groups), the replicas of a shard across [`GroupKind::DpReplicate`].
    /// 0: no hybrid sharding (then not written in JSON).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub dp_shard: u32,
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

impl Parallelism {
    /// tp x dp x pp.
    pub fn world(&self) -> u64 {
        u64::from(self.tp) * u64::from(self.dp) * u64::from(self.pp)
    }

    /// Expert tensor-parallel size: [`Parallelism::etp`], else TP.
    pub fn expert_tp(&self) -> u32 {
        self.etp.unwrap_or(self.tp).max(1)
    }

    /// Members of one group of this kind.
    pub fn group_size(&self, group: GroupKind) -> u32 {
        match group {
            GroupKind::Tp => self.tp,
            GroupKind::Dp => self.dp,
            GroupKind::Ep => self.ep,
            GroupKind::DpEp => {
                let ranks = u64::from(self.tp) * u64::from(self.dp);
                let per = u64::from(self.expert_tp()) * u64::from(self.ep.max(1));
                u32::try_from((ranks / per).max(1)).unwrap_or(u32::MAX)
            }
            GroupKind::Pp => 2,
            GroupKind::Cp => self.cp.max(1),
            GroupKind::DpShard => self.hsdp_shard(),
            GroupKind::DpReplicate => (self.dp / self.hsdp_shard()).max(1),
        }
    }

    /// DP indices per HSDP shard group: [`Parallelism::dp_shard`] when it
    /// splits DP, else the whole DP group.
    pub fn hsdp_shard(&self) -> u32 {
        if self.dp_shard > 0 && self.dp.is_multiple_of(self.dp_shard) {
            self.dp_shard
        } else {
            self.dp.max(1)
        }
    }
}

/// A collective operation (or a point-to-point transfer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    /// A point-to-point send (pipeline transfer).
    SendRecv,
}

impl CollectiveKind {
    /// Short name for labels (`AR`, `AG`, `RS`, `A2A`, `P2P`).
    pub fn short(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "AR",
            CollectiveKind::AllGather => "AG",
            CollectiveKind::ReduceScatter => "RS",
            CollectiveKind::AllToAll => "A2A",
            CollectiveKind::SendRecv => "P2P",
        }
    }
}

/// The process group a collective runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum GroupKind {
    #[serde(rename = "TP")]
    Tp,
    #[serde(rename = "EP")]
    Ep,
    #[serde(rename = "DP")]
    Dp,
    #[serde(rename = "DP_EP")]
    DpEp,
    /// Pipeline neighbours (stage-to-stage transfers).
    #[serde(rename = "PP")]
    Pp,
    /// Context parallel (model-level jobs with CP > 1).
    #[serde(rename = "CP")]
    Cp,
    /// HSDP's shard group ([`Parallelism::dp_shard`] consecutive DP
    /// indices): ZeRO-3's all-gathers and reduce-scatters under hybrid
    /// sharding. Drawn and reported as DP.
    #[serde(rename = "DP_SHARD")]
    DpShard,
    /// HSDP's replicate group (the DP indices equal modulo the shard
    /// size): the gradient all-reduce across the shard's replicas. Drawn
    /// and reported as DP.
    #[serde(rename = "DP_REPLICATE")]
    DpReplicate,
}

impl GroupKind {
    /// All kinds, in report order.
    pub const ALL: [GroupKind; 6] = [
        GroupKind::Tp,
        GroupKind::Ep,
        GroupKind::Dp,
        GroupKind::DpEp,
        GroupKind::Pp,
        GroupKind::Cp,
    ];

    /// Every kind: [`GroupKind::ALL`] and HSDP's two sub-groups of DP.
    pub const EVERY: [GroupKind; 8] = [
        GroupKind::Tp,
        GroupKind::Ep,
        GroupKind::Dp,
        GroupKind::DpEp,
        GroupKind::Pp,
        GroupKind::Cp,
        GroupKind::DpShard,
        GroupKind::DpReplicate,
    ];

    /// Whether the kind runs on the gradient-sync stream (DP and its
    /// slices, expert DP).
    pub fn is_data_parallel(self) -> bool {
        matches!(
            self,
            GroupKind::Dp | GroupKind::DpEp | GroupKind::DpShard | GroupKind::DpReplicate
        )
    }

    /// `TP`, `EP`, `DP`, `DP_EP`, `PP`, `CP`, `DP_SHARD`, `DP_REPLICATE`.
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Tp => "TP",
            GroupKind::Ep => "EP",
            GroupKind::Dp => "DP",
            GroupKind::DpEp => "DP_EP",
            GroupKind::Pp => "PP",
            GroupKind::Cp => "CP",
            GroupKind::DpShard => "DP_SHARD",
            GroupKind::DpReplicate => "DP_REPLICATE",
        }
    }

    /// Index in [`GroupKind::EVERY`] (and [`GroupKind::ALL`] for its kinds).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The group of a collective span of one of the groups' own kinds
    /// (TP, EP, DP, DP_EP, CP); `None` for any other span (the pipeline's
    /// spans are told apart by their callers: transfers, or the
    /// first-and-last-stage all-reduce).
    pub fn of_collective_span(kind: SpanKind) -> Option<GroupKind> {
        match kind {
            SpanKind::CollTp => Some(GroupKind::Tp),
            SpanKind::CollEp => Some(GroupKind::Ep),
            SpanKind::CollDp => Some(GroupKind::Dp),
            SpanKind::CollDpEp => Some(GroupKind::DpEp),
            SpanKind::CollCp => Some(GroupKind::Cp),
            _ => None,
        }
    }
}

/// Which part of a layer an op belongs to (the SimAI column): the
/// analytical model's type, one for both.
pub use crate::analytical::Phase;

/// One collective of a layer phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CommSpec {
    pub collective: CollectiveKind,
    pub group: GroupKind,
    /// Full (gathered) tensor size, bytes.
    pub size_bytes: u64,
    /// A prefetch this many units ahead (FSDP / ZeRO-3's all-gathers of a
    /// unit's weights, forward or input-gradient column; 0: none): issued
    /// on its stream when the first compute after the prefetch point that
    /// many points back may start, not in the chain; the next compute
    /// waits for it ([`crate::engine::build`]).
    #[serde(skip_serializing_if = "is_zero_u8")]
    pub prefetch: u8,
}

/// Compute then (optionally) a collective, and what the rank's host does
/// to launch the compute ([`PhaseOps::launch_ns`], [`PhaseOps::host_sync`];
/// both zero/false: no host model, the device runs the op as soon as its
/// inputs are ready).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub struct PhaseOps {
    pub compute_ns: u64,
    pub comm: Option<CommSpec>,
    /// Host time to launch this op's kernels, ns: the rank's host thread
    /// launches ops one after another in program order, running ahead of
    /// the device; the device cannot start the op before its launch ends.
    #[serde(skip_serializing_if = "is_zero")]
    pub launch_ns: u64,
    /// A sync point before this op: the host waits until the device has
    /// finished the work issued before it (a device-to-host copy such as
    /// Megatron's all-to-all dispatcher reading its token counts, or an
    /// `.item()`), so the launch queue drains and the device then waits for
    /// the host's launches.
    #[serde(skip_serializing_if = "is_false")]
    pub host_sync: bool,
    /// Entries this op's launch adds to the device's launch queue: one per
    /// kernel the host launches, one per CUDA graph launch (0 is read as 1
    /// where the op has a launch). With a bounded queue
    /// ([`crate::engine::SimConfig::launch_queue_depth`]) the host waits
    /// before launching the op until its entries fit.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub launches: u32,
    /// The collective runs alongside the compute, both after what comes
    /// before the op, and what follows waits for both (Transformer
    /// Engine's tensor-parallel overlap: the all-gather or reduce-scatter
    /// split into chunks that stream with the GEMM using or making them);
    /// false: the collective runs after the compute.
    #[serde(skip_serializing_if = "is_false")]
    pub comm_overlap: bool,
}

fn is_zero_u8(x: &u8) -> bool {
    *x == 0
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn is_false(x: &bool) -> bool {
    !*x
}

impl PhaseOps {
    /// Compute only.
    pub fn compute(compute_ns: u64) -> PhaseOps {
        PhaseOps {
            compute_ns,
            ..PhaseOps::default()
        }
    }
}

/// One layer (row): forward, input-gradient and weight-gradient phases.
/// Forward and input-gradient collectives block the compute stream; the
/// weight-gradient collective is asynchronous. After each collective the
/// rank waits `update_ns` before its dependents start.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct LayerSpec {
    pub name: String,
    pub forward: PhaseOps,
    pub input_grad: PhaseOps,
    pub weight_grad: PhaseOps,
    pub update_ns: u64,
}

impl LayerSpec {
    /// A layer with compute only.
    pub fn compute(name: &str, fwd_ns: u64, ig_ns: u64, wg_ns: u64) -> LayerSpec {
        LayerSpec {
            name: name.to_string(),
            forward: PhaseOps::compute(fwd_ns),
            input_grad: PhaseOps::compute(ig_ns),
            weight_grad: PhaseOps::compute(wg_ns),
            update_ns: 0,
        }
    }

    /// The phase ops of `phase`.
    pub fn phase(&self, phase: Phase) -> &PhaseOps {
        match phase {
            Phase::Forward => &self.forward,
            Phase::InputGrad => &self.input_grad,
            Phase::WeightGrad => &self.weight_grad,
        }
    }
}

/// The per-micro-batch work of one rank: layers in forward order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Default)]
pub struct Block {
    pub layers: Vec<LayerSpec>,
}

impl Block {
    /// A stage-to-stage send's bytes when the workload does not give them:
    /// the largest forward TP collective of `blocks` over `tp` (the
    /// activation a TP rank holds), with a warning saying so.
    pub(crate) fn estimated_stage_send_bytes<'a>(
        blocks: impl IntoIterator<Item = &'a Block>,
        tp: u32,
        warnings: &mut Vec<String>,
    ) -> u64 {
        let largest = blocks
            .into_iter()
            .flat_map(|b| b.layers.iter())
            .filter_map(|l| l.forward.comm)
            .filter(|c| c.group == GroupKind::Tp)
            .map(|c| c.size_bytes)
            .max()
            .unwrap_or(0);
        let est = largest / u64::from(tp);
        warnings.push(format!(
            "no pp_comm in the header; stage-to-stage sends estimated at {est} bytes (largest forward TP collective {largest} B / tp {tp}); set the activation bytes to override"
        ));
        est
    }
}

/// How the programs of a job relate to the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobMode {
    /// One program per stage stands for every rank of that stage.
    Spmd,
    /// One program per simulated rank.
    PerRank,
}

/// What one simulated rank runs in an iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankProgram {
    /// Global rank (per-rank jobs). In SPMD jobs the builder uses the stage's
    /// first rank in placement order instead.
    pub rank: u32,
    /// Pipeline stage, 0-based.
    pub stage: u32,
    /// Distinct per-micro-batch blocks.
    pub blocks: Vec<Block>,
    /// Block index per micro-batch; micro-batches past the end use the last
    /// entry; empty = block 0 for all.
    pub micro_batch_blocks: Vec<u32>,
    /// Once-per-iteration rows run after the last backward (gradient sync).
    pub pre_rows: Vec<LayerSpec>,
    /// Rows that close the iteration (loss, optimizer), after the gradient
    /// sync completed.
    pub post_rows: Vec<LayerSpec>,
    /// Explicit compute-step order (measured runs); `None` = the schedule's.
    pub order: Option<Vec<PipeStep>>,
    /// Transformer layers of each model chunk (virtual stage) of this
    /// rank, in chunk order, when they differ (Megatron's embedding and loss
    /// counted as layers in the pipeline split); empty: L / v each
    /// ([`crate::engine::chunks::BlockLayers::chunk_rows`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunk_layers: Vec<u32>,
}

impl RankProgram {
    /// The block micro-batch `mb` runs (None only when there are no blocks).
    pub fn block_of(&self, mb: u32) -> Option<&Block> {
        self.block_index_of(mb).and_then(|i| self.blocks.get(i))
    }

    /// The index in [`RankProgram::blocks`] of the block micro-batch `mb`
    /// runs (None only when there are no blocks).
    pub fn block_index_of(&self, mb: u32) -> Option<usize> {
        let idx = if self.micro_batch_blocks.is_empty() {
            0
        } else {
            let i = (mb as usize).min(self.micro_batch_blocks.len() - 1);
            self.micro_batch_blocks[i] as usize
        };
        (idx < self.blocks.len()).then_some(idx)
    }
}

/// One row of a SimAI file as SimAI's closed-form bubble reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BubbleRow {
    /// Forward, input-gradient and weight-gradient compute as written, ns
    /// (AICB's placeholder `1` counts as 1 ns, as in SimAI).
    pub compute_ns: [u64; 3],
    /// The forward and input-gradient collectives (any size > 0; the group
    /// as SimAI resolves it for the column: an unscoped all-reduce is TP).
    pub comms: Vec<(Phase, CommSpec)>,
}

/// The inputs of SimAI's closed-form bubble (docs/FORMATS.md §4): every
/// row the file holds except `embedding_layer`, once each in file order,
/// and the header's `ga` and `vpp`. The bubble is
/// trunc(sum over rows of (fwd comm + ig comm + fwd + ig + wg compute) x
/// (pp - 1) / (ga x vpp)), computed by the builder with the run's
/// collective cost function; a collective's group size is SimAI's (EP for
/// an EP collective, else TP).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimaiBubbleBasis {
    pub rows: Vec<BubbleRow>,
    /// The header's `ga` (at least 1).
    pub ga: u32,
    /// The header's `vpp` (at least 1).
    pub vpp: u32,
}

impl SimaiBubbleBasis {
    /// From a parsed workload: every record except `embedding_layer`, with
    /// its values as written.
    pub fn from_workload(w: &SimaiWorkload) -> SimaiBubbleBasis {
        let comm = |c: &simai::SimaiComm, phase: Phase| -> Option<(Phase, CommSpec)> {
            let CommType::Collective(coll, group) = c.comm_type else {
                return None;
            };
            if c.size_bytes == 0 {
                return None;
            }
            let collective = collective_kind(coll);
            let group = match group {
                CommGroup::Tp | CommGroup::Unscoped => GroupKind::Tp,
                CommGroup::Dp => GroupKind::Dp,
                CommGroup::Ep => GroupKind::Ep,
                CommGroup::DpEp => GroupKind::DpEp,
            };
            Some((
                phase,
                CommSpec {
                    collective,
                    group,
                    size_bytes: c.size_bytes,
                    prefetch: 0,
                },
            ))
        };
        SimaiBubbleBasis {
            rows: w
                .records
                .iter()
                .filter(|r| r.name != "embedding_layer")
                .map(|r| BubbleRow {
                    compute_ns: [r.fwd_compute_ns, r.ig_compute_ns, r.wg_compute_ns],
                    comms: [
                        comm(&r.fwd_comm, Phase::Forward),
                        comm(&r.ig_comm, Phase::InputGrad),
                    ]
                    .into_iter()
                    .flatten()
                    .collect(),
                })
                .collect(),
            ga: w.header.ga.max(1),
            vpp: w.header.vpp.max(1),
        }
    }
}

/// A point-to-point transfer between two programs of a per-rank job
/// whose ranks meet where their graphs say (Chakra: a send matched with
/// its receive). Points are layer boundaries of the first block of a
/// program, run in its forward step of micro-batch 0, chunk 0 (boundary
/// `k`: before layer `k`; the block's layer count: after its last layer).
/// The transfer holds the sender's send stream and the receiver's receive
/// stream, as the pipeline's stage-to-stage transfers do, costed as
/// point-to-point over the link between the two ranks' placements.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transfer {
    /// For the timeline (the send's name).
    pub label: String,
    pub from_rank: u32,
    pub to_rank: u32,
    pub size_bytes: u64,
    /// The sender issues it at this boundary, after the chain before it
    /// (the rank's chain does not wait for it: an asynchronous send).
    pub send_at: u32,
    /// Transfers (indices in [`JobSpec::transfers`]) that must end before
    /// it is issued.
    pub after: Vec<u32>,
    /// (rank, boundary): where a rank's chain waits for it to end (the
    /// receiver's nodes that depend on the receive, the sender's that
    /// depend on the send).
    pub waited_at: Vec<(u32, u32)>,
}

/// A schedule-ready job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSpec {
    /// For reports.
    pub name: String,
    pub parallel: Parallelism,
    /// Micro-batches per iteration (m).
    pub micro_batches: u32,
    /// Bytes of one stage-to-stage send (activation forward, gradient
    /// backward).
    pub activation_bytes: u64,
    pub mode: JobMode,
    /// SPMD: one per stage, in stage order. Per-rank: any simulated ranks,
    /// at least one per stage.
    pub programs: Vec<RankProgram>,
    /// The AICB header's `vpp` (used only for SimAI's closed-form bubble).
    pub header_vpp: Option<u32>,
    /// SimAI workloads: what SimAI's closed-form bubble is computed from
    /// (every row of the file once, `ga`, `vpp`). `None`: the summary's
    /// `simai_bubble_ns` uses the fallback over the simulated micro-batches
    /// (see [`crate::engine::summary::Summary::simai_bubble_ns`]).
    pub simai_bubble: Option<SimaiBubbleBasis>,
    /// Whether stages are linked as a pipeline: a step waits for its
    /// neighbour stage's (a forward for the previous stage's forward, a
    /// backward for the next stage's backward). False for Chakra graphs,
    /// whose ranks meet in their collectives and in the point-to-point
    /// transfers their graphs name ([`JobSpec::transfers`]).
    pub pipelined: bool,
    /// Point-to-point transfers between programs of a per-rank job
    /// ([`Transfer`]); empty for every job but Chakra graphs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<Transfer>,
    /// A per-rank job whose every program stands for all ranks of its
    /// stage (Chakra sets whose ranks of a stage run the same program,
    /// [`crate::replay::chakra::chakra_job`]): one program per stage is
    /// simulated, with the NIC share of its stage's ranks on its node, as
    /// an SPMD job's representative; false for every other job.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stage_copies: bool,
    /// Assumptions made while building the job.
    pub warnings: Vec<String>,
}

impl JobSpec {
    /// A per-rank job (a replay: one program per simulated rank), pipelined,
    /// with no transfers of its own yet.
    pub fn per_rank(
        name: &str,
        parallel: Parallelism,
        micro_batches: u32,
        activation_bytes: u64,
        programs: Vec<RankProgram>,
    ) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            parallel,
            micro_batches,
            activation_bytes,
            mode: JobMode::PerRank,
            programs,
            header_vpp: None,
            simai_bubble: None,
            pipelined: true,
            transfers: Vec::new(),
            stage_copies: false,
            warnings: Vec::new(),
        }
    }

    /// An SPMD job in which every stage runs `block` for every micro-batch.
    pub fn spmd(
        name: &str,
        parallel: Parallelism,
        micro_batches: u32,
        activation_bytes: u64,
        block: Block,
    ) -> JobSpec {
        let programs = (0..parallel.pp)
            .map(|stage| RankProgram {
                rank: 0,
                stage,
                blocks: vec![block.clone()],
                micro_batch_blocks: Vec::new(),
                pre_rows: Vec::new(),
                post_rows: Vec::new(),
                order: None,
                chunk_layers: Vec::new(),
            })
            .collect();
        JobSpec {
            mode: JobMode::Spmd,
            ..JobSpec::per_rank(name, parallel, micro_batches, activation_bytes, programs)
        }
    }

    /// Adapt a parsed SimAI/AICB workload (docs/FORMATS.md §2.1) into an
    /// SPMD job: one block per distinct unrolled micro-batch block, the rows
    /// before the first `embedding_layer` as gradient-sync rows, the
    /// `cross_entropy*` / `optimizer*` rows after the last block as closing
    /// rows. Compute value 1 (AICB's "not measured") and collective sizes 0
    /// or 1 ("no data") become nothing. `pp_comm` gives the activation
    /// bytes; when it is absent it is estimated (with a warning) as the
    /// largest forward TP collective / tp, the sequence-parallel shard
    /// Megatron sends between stages.
    pub fn from_simai(w: &SimaiWorkload) -> Result<JobSpec, SimError> {
        let h = &w.header;
        let mut warnings = Vec::new();
        if w.records.is_empty() {
            return Err(SimError::InvalidJob(
                "the workload has no layer records".to_string(),
            ));
        }
        let (tp, pp, ep) = (h.tp.max(1), h.pp.max(1), h.ep.max(1));
        let tp_pp = u64::from(tp) * u64::from(pp);
        let dp = match h.world {
            Some(world) => {
                let world = u64::from(world);
                if !world.is_multiple_of(tp_pp) || world < tp_pp {
                    warnings.push(format!(
                        "all_gpus {world} is not a multiple of tp x pp = {tp_pp}; using dp = {}",
                        (world / tp_pp).max(1)
                    ));
                }
                u32::try_from((world / tp_pp).max(1)).unwrap_or(u32::MAX)
            }
            None => {
                warnings.push("no all_gpus in the header; assuming dp = 1".to_string());
                1
            }
        };
        let mut ep_used = ep;
        if ep > 1 && !dp.is_multiple_of(ep) {
            warnings.push(format!(
                "ep {ep} does not divide dp {dp}; EP groups are placed as if ep = 1"
            ));
            ep_used = 1;
        }
        let parallel = Parallelism {
            tp,
            dp,
            pp,
            ep: ep_used,
            cp: 1,
            etp: None,
            dp_shard: 0,
        };
        let rows: Vec<LayerSpec> = w
            .records
            .iter()
            .map(|r| layer_from_record(r, &mut warnings))
            .collect();
        let is_tail =
            |name: &str| name.starts_with("cross_entropy") || name.starts_with("optimizer");
        let starts: Vec<usize> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.name == "embedding_layer")
            .map(|(i, _)| i)
            .collect();
        let ga = h.ga.max(1);
        let (pre, block_rows, post): (Vec<LayerSpec>, Vec<Vec<LayerSpec>>, Vec<LayerSpec>) =
            if let Some(&first) = starts.first() {
                let pre = rows[..first].to_vec();
                let mut blocks = Vec::new();
                for (k, &s) in starts.iter().enumerate() {
                    let end = starts.get(k + 1).copied().unwrap_or(rows.len());
                    blocks.push(rows[s..end].to_vec());
                }
                // The last block ends where the closing rows start.
                let mut post = Vec::new();
                if let Some(last) = blocks.last_mut() {
                    if let Some(cut) = last.iter().position(|r| is_tail(&r.name)) {
                        post = last.split_off(cut);
                    }
                }
                (pre, blocks, post)
            } else {
                warnings.push(
                    "no `embedding_layer` row: every row except cross_entropy*/optimizer* is taken as the per-micro-batch block"
                        .to_string(),
                );
                let cut = rows
                    .iter()
                    .position(|r| is_tail(&r.name))
                    .unwrap_or(rows.len());
                (Vec::new(), vec![rows[..cut].to_vec()], rows[cut..].to_vec())
            };
        let found = block_rows.len() as u32;
        let micro_batches = if found == ga {
            ga
        } else if found == 1 {
            warnings.push(format!(
                "the file holds one micro-batch block and ga = {ga}; the block is repeated {ga} times"
            ));
            ga
        } else {
            warnings.push(format!(
                "the file holds {found} micro-batch blocks but ga = {ga}; simulating {found} micro-batches"
            ));
            found
        };
        let mut blocks: Vec<Block> = Vec::new();
        let mut micro_batch_blocks = Vec::new();
        for layers in block_rows {
            let b = Block { layers };
            let idx = match blocks.iter().position(|x| *x == b) {
                Some(i) => i,
                None => {
                    blocks.push(b);
                    blocks.len() - 1
                }
            };
            micro_batch_blocks.push(idx as u32);
        }
        if blocks.len() > 1 {
            warnings.push(format!(
                "the {found} unrolled micro-batch blocks are not identical ({} distinct); each micro-batch runs its own block",
                blocks.len()
            ));
        }
        if !h.checkpoints.is_empty() || !h.checkpoint_initiates.is_empty() {
            warnings.push(
                "activation-recompute checkpoints in the header are not simulated".to_string(),
            );
        }
        let activation_bytes = if h.pp_comm_bytes > 0 {
            h.pp_comm_bytes
        } else if pp > 1 {
            Block::estimated_stage_send_bytes(&blocks, tp, &mut warnings)
        } else {
            0
        };
        let biggest = blocks.iter().map(|b| b.layers.len()).max().unwrap_or(0);
        check_size(
            parallel,
            u64::from(pp),
            1,
            1,
            biggest as u64,
            (pre.len() + post.len()) as u64,
        )?;
        let programs = (0..pp)
            .map(|stage| RankProgram {
                rank: 0,
                stage,
                blocks: blocks.clone(),
                micro_batch_blocks: if blocks.len() > 1 {
                    micro_batch_blocks.clone()
                } else {
                    Vec::new()
                },
                pre_rows: pre.clone(),
                post_rows: post.clone(),
                order: None,
                chunk_layers: Vec::new(),
            })
            .collect();
        Ok(JobSpec {
            name: "simai".to_string(),
            parallel,
            micro_batches,
            activation_bytes,
            mode: JobMode::Spmd,
            programs,
            header_vpp: Some(h.vpp.max(1)),
            simai_bubble: Some(SimaiBubbleBasis::from_workload(w)),
            pipelined: true,
            transfers: Vec::new(),
            stage_copies: false,
            warnings,
        })
    }

    /// Structural checks (sizes, stages, block references).
    pub fn validate(&self) -> Result<(), SimError> {
        let p = self.parallel;
        if p.tp == 0 || p.dp == 0 || p.pp == 0 || p.ep == 0 {
            return Err(SimError::InvalidJob(format!(
                "parallel sizes must be at least 1 (tp {}, dp {}, pp {}, ep {})",
                p.tp, p.dp, p.pp, p.ep
            )));
        }
        if p.world() > MAX_WORLD {
            return Err(SimError::TooLarge(format!("world of {} ranks", p.world())));
        }
        match p.etp {
            Some(etp) => {
                let ranks = u64::from(p.tp) * u64::from(p.dp);
                if etp == 0
                    || !p.tp.is_multiple_of(etp)
                    || !ranks.is_multiple_of(u64::from(etp) * u64::from(p.ep))
                {
                    return Err(SimError::InvalidJob(format!(
                        "expert tp {etp} x ep {} must divide tp {} x dp {} (and expert tp divide tp)",
                        p.ep, p.tp, p.dp
                    )));
                }
            }
            None if p.ep > 1 && !p.dp.is_multiple_of(p.ep) => {
                return Err(SimError::InvalidJob(format!(
                    "ep {} must divide dp {}",
                    p.ep, p.dp
                )));
            }
            None => {}
        }
        if self.micro_batches == 0 {
            return Err(SimError::InvalidJob("no micro-batches".to_string()));
        }
        if self.programs.is_empty() {
            return Err(SimError::InvalidJob("no rank programs".to_string()));
        }
        let mut stage_seen = vec![false; p.pp as usize];
        for (i, prog) in self.programs.iter().enumerate() {
            let Some(seen) = stage_seen.get_mut(prog.stage as usize) else {
                return Err(SimError::InvalidJob(format!(
                    "program {i} is on stage {} but pp is {}",
                    prog.stage, p.pp
                )));
            };
            if *seen && self.mode == JobMode::Spmd {
                return Err(SimError::InvalidJob(format!(
                    "SPMD job has two programs for stage {}",
                    prog.stage
                )));
            }
            *seen = true;
            if prog.blocks.is_empty() {
                return Err(SimError::InvalidJob(format!(
                    "program {i} (stage {}) has no block",
                    prog.stage
                )));
            }
            if let Some(bad) = prog
                .micro_batch_blocks
                .iter()
                .find(|b| **b as usize >= prog.blocks.len())
            {
                return Err(SimError::InvalidJob(format!(
                    "program {i} maps a micro-batch to block {bad} but has {} blocks",
                    prog.blocks.len()
                )));
            }
            if self.mode == JobMode::PerRank {
                if u64::from(prog.rank) >= p.world() {
                    return Err(SimError::InvalidJob(format!(
                        "program {i} is rank {} but the world has {} ranks",
                        prog.rank,
                        p.world()
                    )));
                }
                if self.programs[..i].iter().any(|q| q.rank == prog.rank) {
                    return Err(SimError::InvalidJob(format!(
                        "rank {} has two programs",
                        prog.rank
                    )));
                }
            }
        }
        if let Some(missing) = stage_seen.iter().position(|s| !s) {
            return Err(SimError::InvalidJob(format!(
                "no simulated rank on stage {missing}; every stage needs at least one"
            )));
        }
        self.validate_transfers()
    }

    /// [`JobSpec::transfers`] name simulated ranks of a per-rank job,
    /// boundaries of their first block, and earlier transfers only.
    fn validate_transfers(&self) -> Result<(), SimError> {
        if self.transfers.is_empty() {
            return Ok(());
        }
        if self.mode != JobMode::PerRank {
            return Err(SimError::InvalidJob(
                "point-to-point transfers need a per-rank job".to_string(),
            ));
        }
        let layers = |rank: u32| {
            self.programs
                .iter()
                .find(|p| p.rank == rank)
                .map(|p| p.blocks.first().map_or(0, |b| b.layers.len()))
        };
        for (i, t) in self.transfers.iter().enumerate() {
            let bad = |what: String| {
                Err(SimError::InvalidJob(format!(
                    "transfer {i} (`{}`, rank {} to rank {}): {what}",
                    t.label, t.from_rank, t.to_rank
                )))
            };
            if t.from_rank == t.to_rank {
                return bad("sends to its own rank".to_string());
            }
            let Some(n) = layers(t.from_rank) else {
                return bad(format!("rank {} is not simulated", t.from_rank));
            };
            if layers(t.to_rank).is_none() {
                return bad(format!("rank {} is not simulated", t.to_rank));
            }
            if t.send_at as usize > n {
                return bad(format!("is sent at layer {} of {n}", t.send_at));
            }
            if let Some(a) = t
                .after
                .iter()
                .find(|a| **a as usize >= self.transfers.len())
            {
                return bad(format!("waits for transfer {a}, which does not exist"));
            }
            for &(rank, at) in &t.waited_at {
                match layers(rank) {
                    None => return bad(format!("is waited for on rank {rank}, not simulated")),
                    Some(n) if at as usize > n => {
                        return bad(format!("is waited for at layer {at} of {n} on rank {rank}"))
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }
}

/// AICB writes 1 for "not measured".
fn compute_value(ns: u64) -> u64 {
    if ns <= 1 {
        0
    } else {
        ns
    }
}

/// The engine's collective for a SimAI comm type's collective.
fn collective_kind(coll: simai::Collective) -> CollectiveKind {
    match coll {
        simai::Collective::AllReduce => CollectiveKind::AllReduce,
        simai::Collective::AllGather => CollectiveKind::AllGather,
        simai::Collective::ReduceScatter => CollectiveKind::ReduceScatter,
        simai::Collective::AllToAll => CollectiveKind::AllToAll,
    }
}

fn comm_from(
    c: &simai::SimaiComm,
    phase: Phase,
    warnings: &mut Vec<String>,
    name: &str,
) -> Option<CommSpec> {
    let CommType::Collective(coll, group) = c.comm_type else {
        return None;
    };
    if c.size_bytes <= 1 {
        return None;
    }
    let collective = collective_kind(coll);
    let group = match group {
        CommGroup::Tp => GroupKind::Tp,
        CommGroup::Dp => GroupKind::Dp,
        CommGroup::Ep => GroupKind::Ep,
        CommGroup::DpEp => GroupKind::DpEp,
        CommGroup::Unscoped => {
            let g = if phase == Phase::WeightGrad {
                GroupKind::Dp
            } else {
                GroupKind::Tp
            };
            let msg = format!(
                "all-reduce without a group in `{name}` is run over {} (the column's plain group)",
                g.name()
            );
            if !warnings.contains(&msg) {
                warnings.push(msg);
            }
            g
        }
    };
    Some(CommSpec {
        collective,
        group,
        size_bytes: c.size_bytes,
        prefetch: 0,
    })
}

fn layer_from_record(r: &SimaiRecord, warnings: &mut Vec<String>) -> LayerSpec {
    LayerSpec {
        name: r.name.clone(),
        forward: PhaseOps {
            compute_ns: compute_value(r.fwd_compute_ns),
            comm: comm_from(&r.fwd_comm, Phase::Forward, warnings, &r.name),
            ..Default::default()
        },
        input_grad: PhaseOps {
            compute_ns: compute_value(r.ig_compute_ns),
            comm: comm_from(&r.ig_comm, Phase::InputGrad, warnings, &r.name),
            ..Default::default()
        },
        weight_grad: PhaseOps {
            compute_ns: compute_value(r.wg_compute_ns),
            comm: comm_from(&r.wg_comm, Phase::WeightGrad, warnings, &r.name),
            ..Default::default()
        },
        update_ns: r.update_ns,
    }
}
