//! Sharded data parallelism: the ZeRO stages (Rajbhandari et al. 2020,
//! "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
//! section 5) as one setting, [`ZeroStage`], and FSDP2's per-unit
//! collectives for stage 3.
//!
//! - ZeRO-1 shards the optimizer states over the data-parallel ranks (DP x
//!   CP; routed experts over the expert data-parallel ranks): Megatron's
//!   distributed optimizer, `TrainingSetup::distributed_optimizer`, which
//!   [`super::ModelJob::new`] keeps equal to `zero >= 1`; one concept, two
//!   spellings on the command line (`--distributed-optimizer`, `--zero 1`).
//! - ZeRO-2 also shards the gradients: each rank keeps its 1/N of them, a
//!   layer's full gradients live only until their reduce-scatter. Its own
//!   collectives ([`gradient_reduce_scatter`]), as DeepSpeed's
//!   `DeepSpeedZeroOptimizer` runs them (`deepspeed/runtime/zero/
//!   stage_1_and_2.py`: the backward hook
//!   `reduce_independent_p_g_buckets_and_remove_grads` fills a bucket,
//!   `reduce_ipg_grads` reduces it to the ranks owning each partition with
//!   `overlap_comm` on a side stream; after `step` the updated partitions
//!   are all-gathered, `all_gather_dp_groups`): each layer's gradients are
//!   reduce-scattered over the data-parallel ranks as soon as its backward
//!   is done, every micro-batch (the partitioned gradients accumulate in
//!   place; this is why DeepSpeed and this model refuse ZeRO-2 with
//!   pipeline parallelism), asynchronously on the DP lane, instead of one
//!   all-reduce or reduce-scatter of every gradient after the last
//!   micro-batch; after the optimizer step the weights are all-gathered
//!   (the rows `optimizer_param_allgather`). One bucket per layer: the
//!   granularity at which the memory model holds full gradients
//!   ([`unsharded_unit_bytes`]); DeepSpeed fills buckets of
//!   `reduce_bucket_size` elements (default 5e8, deepspeed.ai/docs/config-json),
//!   so with layers smaller than that it issues fewer, larger reduce-scatters
//!   of the same total bytes. Bytes per step (ZeRO paper section 7.2.1):
//!   the reduce-scatter carries Psi gradients and the all-gather Psi
//!   weights per rank, 2 Psi in all, as baseline data parallelism's
//!   all-reduce (per micro-batch for the reduce-scatter here).
//! - ZeRO-3 (`--fsdp`, FSDP2's form) also shards the weights: each FSDP
//!   unit (here one transformer layer; the embedding and output layer with
//!   their stage's first and last layer) is all-gathered before its forward
//!   and, when it was resharded after the forward (FSDP2's
//!   `reshard_after_forward`, the default), again before its backward; its
//!   gradients are reduce-scattered after its backward. Per micro-batch:
//!   FSDP2 and ZeRO-3 gather per micro-batch (no gradient-accumulation
//!   fusion across micro-batches is modelled). The gathers are prefetches
//!   `prefetch` units ahead (`CommOp::prefetch`): the engine issues each
//!   when the unit that many before it starts computing, so it hides
//!   behind that compute.
//!
//! - HSDP (hybrid sharding; torchtitan's `data_parallel_shard_degree` N,
//!   `data_parallel_replicate_degree` DP / N; FSDP2's `fully_shard` on a
//!   2-D device mesh; DeepSpeed's ZeRO++ hpZ is the like for weights):
//!   ZeRO-3 inside groups of N data-parallel ranks (with CP, N x CP: the
//!   CP ranks join the shard group as torchtitan's `dp_shard_cp` mesh),
//!   the shard replicated DP / N times. Each unit's all-gathers and
//!   reduce-scatter run in the shard group (`CommGroup::DpShard`), then
//!   its sharded gradients (1 / N of the unit's) are all-reduced across
//!   the replicas (`CommGroup::DpReplicate`), per micro-batch as FSDP2's
//!   `foreach_reduce` does by default; memory shards over N, not DP.
//!   Refused with a message: N not dividing DP, N = 1 (nothing sharded:
//!   plain DP), HSDP without ZeRO-3, HSDP with MoE experts (their expert
//!   data-parallel groups are not split here).
//!
//! - Offload ([`Offload`], `--offload optimizer|optimizer+params`):
//!   DeepSpeed's ZeRO-Offload (Ren et al. 2021, "ZeRO-Offload:
//!   Democratizing Billion-Scale Model Training", USENIX ATC;
//!   `offload_optimizer`, valid for ZeRO 1-3) keeps the optimizer states
//!   (the fp32 master weights and Adam's moments, and with 2-byte
//!   gradients their fp32 copy: all of `memory::optimizer_bytes`) in host
//!   memory and runs the optimizer step on the CPU: the rank's gradient
//!   shard goes down over PCIe, DeepSpeedCPUAdam updates it, the updated
//!   weights come back up ([`offload_step_ns`]). `optimizer+params`
//!   (DeepSpeed's `offload_param`, FSDP2's `CPUOffloadPolicy`; ZeRO-3
//!   only) also keeps the sharded weights and gradients on the host: the
//!   GPU holds only the gathered units. The PCIe bandwidth is the GPU
//!   preset's (`GpuSpec::pcie_gbps`, per direction). Assumptions: the
//!   CPU Adam rate is the ZeRO-Offload paper's Table 3 figure for
//!   CPU-Adam at 10 billion parameters (2.57 s, i.e. [`CPU_ADAM_PS_PER_PARAM`]
//!   picoseconds a parameter) for each rank's shard, on a host whose
//!   cores no other rank shares (ranks sharing a host are not slowed
//!   here); the transfers and the CPU step run one after another after
//!   the backward (DeepSpeed overlaps part of the gradient copy with the
//!   backward, and its one-step delayed update hides the step; neither is
//!   modelled, so this is the slow end); under `optimizer+params` FSDP2
//!   copies each unit's shard up before every all-gather: counted here
//!   once per iteration, an underestimate of the uploads.
//!
//! Memory per parameter is the ZeRO paper's (2 + 2 + K) split over N (the
//! paper's Psi (2 + 2 + K) / N_d for stage 3), with Megatron's byte counts
//! for each precision (`memory::optimizer_bytes`: K = 12 with fp32
//! gradients kept in the gradient buffer, 16 with 2-byte gradients and the
//! optimizer's fp32 copy of them): ZeRO-1 `w + g + K / N`, ZeRO-2 `w + (g +
//! K) / N`, ZeRO-3 `(w + g + K) / N`, plus ZeRO-3's unsharded units: the
//! unit being computed and the `prefetch` units gathered ahead of it (their
//! full weights, and FP8 copies under FP8 training), and one unit's full
//! gradients before their reduce-scatter (ZeRO-2 and 3). Without resharding
//! after the forward, every layer of the stage stays gathered from its
//! forward to its backward.
//!
//! Refused with a message: ZeRO-2 with pipeline parallelism (DeepSpeed
//! refuses it: gradient partitioning would reduce-scatter every
//! micro-batch's gradients of every stage; torchtitan composes only FSDP,
//! ZeRO-3, with PP); prefetch or reshard settings without ZeRO-3; a ZeRO
//! stage above 3.

use super::{JobError, ModelJob, TrainingSetup};
use crate::workload::{CommGroup, CommKind, CommOp, LayerOp, LayerRole};
use serde::{Deserialize, Serialize};

/// How much of the training state the data-parallel ranks shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum ZeroStage {
    /// Every data-parallel rank keeps everything.
    #[default]
    None,
    /// ZeRO-1: optimizer states (Megatron's distributed optimizer).
    Optimizer,
    /// ZeRO-2: optimizer states and gradients.
    Gradients,
    /// ZeRO-3 / FSDP: optimizer states, gradients and weights.
    Parameters,
}

impl ZeroStage {
    /// Every stage, in order.
    pub const ALL: [ZeroStage; 4] = [
        ZeroStage::None,
        ZeroStage::Optimizer,
        ZeroStage::Gradients,
        ZeroStage::Parameters,
    ];

    /// 0 to 3, as `--zero` and JSON's `training.zero` write it.
    pub fn level(self) -> u8 {
        self as u8
    }

    /// The stage of `--zero N`.
    pub fn from_level(level: u8) -> Option<ZeroStage> {
        ZeroStage::ALL.get(usize::from(level)).copied()
    }

    /// What the stage shards, in words.
    pub fn describe(self) -> &'static str {
        match self {
            ZeroStage::None => "nothing sharded",
            ZeroStage::Optimizer => "optimizer states sharded (ZeRO-1)",
            ZeroStage::Gradients => "optimizer states and gradients sharded (ZeRO-2)",
            ZeroStage::Parameters => {
                "optimizer states, gradients and weights sharded (ZeRO-3 / FSDP)"
            }
        }
    }
}

impl Serialize for ZeroStage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.level())
    }
}

impl<'de> Deserialize<'de> for ZeroStage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u8::deserialize(d)?;
        ZeroStage::from_level(v)
            .ok_or_else(|| serde::de::Error::custom(format!("ZeRO stage {v} is not 0, 1, 2 or 3")))
    }
}

/// FSDP2's default: the next unit is gathered while the current one
/// computes (its forward and backward prefetch of one unit).
pub const DEFAULT_FSDP_PREFETCH: u32 = 1;
/// The most units a user may prefetch.
pub const MAX_FSDP_PREFETCH: u32 = 64;

/// The sharding settings of a job (`TrainingSetup::sharding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sharding {
    /// The ZeRO stage. 1 is the distributed optimizer; after
    /// [`super::ModelJob::new`] it agrees with `distributed_optimizer`.
    pub zero: ZeroStage,
    /// ZeRO-3: units all-gathered ahead of the one computing (FSDP2's
    /// forward/backward prefetch).
    pub prefetch: u32,
    /// ZeRO-3: free each unit's gathered weights after its forward and
    /// gather them again for its backward (FSDP2's default).
    pub reshard_after_forward: bool,
    /// HSDP: data-parallel ranks per shard group (torchtitan's
    /// `data_parallel_shard_degree`); 0: shard over all of DP.
    pub hsdp_shard: u32,
    /// What lives in host memory ([`Offload`]).
    pub offload: Offload,
}

/// What the job keeps in host memory instead of the GPU's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Offload {
    /// Everything on the GPU.
    #[default]
    None,
    /// The optimizer states, and the optimizer step on the CPU
    /// (DeepSpeed's `offload_optimizer`).
    Optimizer,
    /// Also the sharded weights and gradients (ZeRO-3: DeepSpeed's
    /// `offload_param`, FSDP2's `CPUOffloadPolicy`).
    OptimizerParams,
}

impl Offload {
    /// Every value, in order.
    pub const ALL: [Offload; 3] = [Offload::None, Offload::Optimizer, Offload::OptimizerParams];

    /// `none`, `optimizer`, `optimizer+params` (`--offload`, JSON).
    pub fn name(self) -> &'static str {
        match self {
            Offload::None => "none",
            Offload::Optimizer => "optimizer",
            Offload::OptimizerParams => "optimizer+params",
        }
    }

    /// The value of [`Offload::name`] (case-insensitive).
    pub fn from_name(name: &str) -> Option<Offload> {
        Offload::ALL
            .into_iter()
            .find(|o| o.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl Serialize for Offload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Offload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = String::deserialize(d)?;
        Offload::from_name(&v).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "offload `{v}` is not none, optimizer or optimizer+params"
            ))
        })
    }
}

/// DeepSpeedCPUAdam's time per parameter, picoseconds: the ZeRO-Offload
/// paper's Table 3, CPU-Adam at 10 billion parameters, 2.57 s (an
/// assumption for every host; see the module documentation).
pub const CPU_ADAM_PS_PER_PARAM: u64 = 257;

/// The optimizer step under offload, ns, for `params` elements of the
/// rank's shard: the gradients down (`grad_bytes` a parameter), CPU Adam,
/// the updated weights up (`weight_bytes` a parameter), one after another
/// over a PCIe link of `pcie_gbps` GB/s (10^9 bytes/s) per direction.
/// `(down, cpu, up)`.
pub fn offload_step_ns(
    params: u64,
    grad_bytes: u64,
    weight_bytes: u64,
    pcie_gbps: f64,
) -> (u64, u64, u64) {
    let xfer = |bytes: u64| {
        if pcie_gbps > 0.0 {
            (bytes as f64 / pcie_gbps).round() as u64
        } else {
            0
        }
    };
    (
        xfer(params * grad_bytes),
        params * CPU_ADAM_PS_PER_PARAM / 1000,
        xfer(params * weight_bytes),
    )
}

impl Default for Sharding {
    fn default() -> Self {
        Sharding {
            zero: ZeroStage::None,
            prefetch: DEFAULT_FSDP_PREFETCH,
            reshard_after_forward: true,
            hsdp_shard: 0,
            offload: Offload::None,
        }
    }
}

impl Sharding {
    /// Nothing beyond the defaults and ZeRO-1 (then not written in JSON:
    /// ZeRO-1 is written as `distributed_optimizer`).
    pub fn is_default(&self) -> bool {
        Sharding {
            zero: ZeroStage::None,
            ..*self
        } == Sharding::default()
            && self.zero <= ZeroStage::Optimizer
    }

    /// The command-line flags that state these settings beyond the
    /// defaults (ZeRO-1 is written as `--distributed-optimizer` by the
    /// caller, as before).
    pub fn flags(&self) -> Vec<String> {
        let mut f = Vec::new();
        if self.zero >= ZeroStage::Gradients {
            f.push(format!("--zero {}", self.zero.level()));
        }
        if self.prefetch != DEFAULT_FSDP_PREFETCH {
            f.push(format!("--fsdp-prefetch {}", self.prefetch));
        }
        if !self.reshard_after_forward {
            f.push("--no-reshard-after-forward".to_string());
        }
        if self.hsdp_shard > 0 {
            f.push(format!("--hsdp-shard {}", self.hsdp_shard));
        }
        if self.offload != Offload::None {
            f.push(format!("--offload {}", self.offload.name()));
        }
        f
    }
}

/// Check the sharding settings against the rest of the setup and resolve
/// the ZeRO stage with the distributed-optimizer flag (both spell ZeRO-1).
pub(super) fn resolve(setup: &mut TrainingSetup) -> Result<(), JobError> {
    let sh = setup.sharding;
    if setup.distributed_optimizer && sh.zero == ZeroStage::None {
        setup.sharding.zero = ZeroStage::Optimizer;
    }
    let zero = setup.sharding.zero;
    setup.distributed_optimizer = zero >= ZeroStage::Optimizer;
    if zero < ZeroStage::Parameters {
        if sh.prefetch != DEFAULT_FSDP_PREFETCH {
            return Err(JobError::new(
                format!(
                    "FSDP prefetch {} is set but the weights are not sharded (ZeRO {})",
                    sh.prefetch,
                    zero.level()
                ),
                "use --zero 3 (or --fsdp) with --fsdp-prefetch, or drop --fsdp-prefetch",
            ));
        }
        if !sh.reshard_after_forward {
            return Err(JobError::new(
                format!(
                    "reshard-after-forward is a ZeRO-3 / FSDP setting; this job is ZeRO {}",
                    zero.level()
                ),
                "use --zero 3 (or --fsdp), or drop --no-reshard-after-forward",
            ));
        }
    }
    if sh.prefetch > MAX_FSDP_PREFETCH {
        return Err(JobError::new(
            format!(
                "FSDP prefetch {} is more than {MAX_FSDP_PREFETCH} units",
                sh.prefetch
            ),
            "prefetch a few units (FSDP2's default is 1)",
        ));
    }
    match sh.offload {
        Offload::Optimizer if zero == ZeroStage::None => {
            return Err(JobError::new(
                "optimizer offload moves the partitioned optimizer states to the host, but this job is ZeRO 0".to_string(),
                "use --zero 1, 2 or 3 with --offload optimizer (DeepSpeed: valid for ZeRO stages 1 to 3)",
            ))
        }
        Offload::OptimizerParams if zero != ZeroStage::Parameters => {
            return Err(JobError::new(
                format!(
                    "weight offload keeps the sharded weights on the host (ZeRO-3 only); this job is ZeRO {}",
                    zero.level()
                ),
                "use --zero 3 (or --fsdp) with --offload optimizer+params, or --offload optimizer",
            ))
        }
        _ => {}
    }
    if zero == ZeroStage::Gradients && setup.pp > 1 {
        return Err(JobError::new(
            format!(
                "ZeRO-2 with pipeline parallelism (PP {}): DeepSpeed refuses this combination (gradient partitioning would reduce-scatter every micro-batch's gradients)",
                setup.pp
            ),
            "use --zero 1 (the distributed optimizer) or --zero 3 / --fsdp with PP, or --pp 1",
        ));
    }
    Ok(())
}

/// Check HSDP against the rest of the job (`dp`: the job's data-parallel
/// size, CP not counted; see the module documentation for the refusals).
pub(super) fn check_hsdp(setup: &TrainingSetup, dp: u32, moe: bool) -> Result<(), JobError> {
    let n = setup.sharding.hsdp_shard;
    if n == 0 {
        return Ok(());
    }
    if setup.sharding.zero != ZeroStage::Parameters {
        return Err(JobError::new(
            format!(
                "HSDP shard {n} shards the weights inside groups of {n} ranks, but this job is ZeRO {}",
                setup.sharding.zero.level()
            ),
            "use --zero 3 (or --fsdp) with --hsdp-shard, or drop --hsdp-shard",
        ));
    }
    if n == 1 {
        return Err(JobError::new(
            "HSDP shard 1 shards nothing: every rank keeps all the weights (plain data parallelism)".to_string(),
            "give a shard group of 2 or more ranks that divides DP, or use --zero 0",
        ));
    }
    if !dp.is_multiple_of(n) {
        return Err(JobError::new(
            format!("HSDP shard {n} does not divide DP {dp}: the replicate degree DP / {n} is not whole"),
            format!("use a divisor of {dp} for --hsdp-shard"),
        ));
    }
    if moe {
        return Err(JobError::new(
            "HSDP with MoE experts is not modelled (their expert data-parallel groups are not split into shard and replicate groups)".to_string(),
            "drop --hsdp-shard (FSDP over all of DP), or use a dense model",
        ));
    }
    Ok(())
}

/// HSDP's (shard, replicate) degrees (torchtitan's
/// `data_parallel_shard_degree` and `data_parallel_replicate_degree`;
/// CP not counted), when the job shards its weights hybridly with more
/// than one replica.
pub fn hsdp(job: &ModelJob) -> Option<(u32, u32)> {
    let n = job.setup.sharding.hsdp_shard;
    (shards_parameters(job) && n > 1 && n < job.dp).then(|| (n, job.dp / n))
}

/// Ranks each shard is split over for the dense weights (DP x CP; under
/// HSDP the shard group, N x CP) and the routed experts (expert DP).
pub fn shard_ranks(job: &ModelJob) -> (u32, u32) {
    let dense = match hsdp(job) {
        Some((n, _)) => n * job.setup.cp.max(1),
        None => job.dp_cp(),
    };
    (dense.max(1), job.expert_dp().max(1))
}

/// Whether ZeRO-3 has anything to shard (more than one rank).
pub fn shards_parameters(job: &ModelJob) -> bool {
    job.setup.sharding.zero == ZeroStage::Parameters && job.optimizer_shards()
}

/// Whether ZeRO-2 or 3 shard gradients here (more than one rank).
pub fn shards_gradients(job: &ModelJob) -> bool {
    job.setup.sharding.zero >= ZeroStage::Gradients && job.optimizer_shards()
}

/// The weights of one FSDP unit on one rank before sharding (elements):
/// one transformer layer's (TP-sharded; routed experts split over EP and
/// expert TP), with the embedding on the first layer of stage 0 and the
/// final norm and output layer on the last layer of the output stage.
/// `(dense, expert)`.
pub fn unit_params(job: &ModelJob, layer: u32) -> (u64, u64) {
    let m = &job.model;
    let s = &job.setup;
    let t = u64::from(s.tp);
    let norm = m.norm_params();
    let l = super::layout::layer_params(job, layer);
    let (mut dense, expert) = (l.dense, l.expert);
    let vocab_rows = job.padded_vocab_size / t * m.hidden_size;
    let first = (0..s.pp).find_map(|st| super::layout::stage_layers(job, st).first().copied());
    if first == Some(layer) {
        dense += vocab_rows;
        if m.learned_positions {
            dense += m.max_position_embeddings * m.hidden_size;
        }
    }
    let out = job.output_stage();
    let last_of_output = super::layout::stage_layers(job, out).last().copied();
    if last_of_output == Some(layer) && (!m.tied_embeddings || out != 0) {
        dense += vocab_rows + norm;
    }
    (dense, expert)
}

/// Bytes of the unsharded units stage `stage` holds at its peak under
/// ZeRO-2/3 (see the module documentation): ZeRO-3's gathered weights
/// (`1 + prefetch` of the largest units, every layer of the stage without
/// resharding after the forward; their FP8 copies under FP8 training) and
/// one unit's full gradients before their reduce-scatter (ZeRO-2 and 3).
/// 0 otherwise.
pub fn unsharded_unit_bytes(job: &ModelJob, stage: u32) -> u64 {
    if !shards_gradients(job) {
        return 0;
    }
    let s = &job.setup;
    let w = super::layout::weight_bytes(s.precision)
        + if s.precision == crate::hardware::Precision::Fp8 {
            super::layout::FP8_COPY_BYTES
        } else {
            0
        };
    let g = super::layout::gradient_bytes(s);
    let units: Vec<u64> = super::layout::stage_layers(job, stage)
        .into_iter()
        .map(|l| {
            let (d, e) = unit_params(job, l);
            d + e
        })
        .collect();
    let largest = units.iter().copied().max().unwrap_or(0);
    let grads = largest * g;
    if !shards_parameters(job) {
        return grads;
    }
    let gathered = if s.sharding.reshard_after_forward {
        let k = (1 + u64::from(s.sharding.prefetch)).min(units.len() as u64);
        k * largest
    } else {
        units.iter().sum()
    };
    gathered * w + grads
}

/// The collectives of one FSDP unit (ZeRO-3) around layer `layer`'s ops,
/// for the workload builder: `(before, after)` rows of the layer. `before`
/// all-gathers the unit's weights ahead of its forward and, in its
/// weight-gradient column (asynchronous, on the DP lane), reduce-scatters
/// its gradients once the layer's backward is done; `after` (run first in
/// the backward) all-gathers the weights again before the layer's backward
/// when they were resharded after the forward. Sizes are the gathered
/// unit's bytes, as the distributed optimizer's all-gather states them.
/// Under HSDP the gathers and the reduce-scatter run in the shard group
/// and `before` starts with a row whose weight-gradient column all-reduces
/// the unit's gradient shard across the replicas (after the
/// reduce-scatter in the backward).
/// The names keep the engine's layer grouping ([`crate::engine::chunks`]:
/// a layer starts at its first `attention*` row): `before` opens the layer,
/// `after` closes it.
/// Both empty when the job does not shard its weights.
pub fn unit_collectives(job: &ModelJob, layer: u32) -> (Vec<LayerOp>, Vec<LayerOp>) {
    if !shards_parameters(job) {
        return (Vec::new(), Vec::new());
    }
    let s = &job.setup;
    let w = super::layout::weight_bytes(s.precision);
    let g = super::layout::gradient_bytes(s);
    let comm = |kind, group, bytes: u64| CommOp {
        kind,
        group,
        size_bytes: bytes,
        asynchronous: false,
        prefetch: 0,
    };
    let (group, elems) = unit_group(job, layer);
    // The gathers are prefetches `prefetch` units ahead: the engine issues
    // each when the unit that many before it starts computing.
    let gather = CommOp {
        prefetch: u8::try_from(s.sharding.prefetch.max(1)).unwrap_or(u8::MAX),
        ..comm(CommKind::AllGather, group, elems * w)
    };
    let mut before = LayerOp::empty(
        format!("attention_fsdp_allgather.{layer}"),
        LayerRole::Layer,
    );
    before.forward.comm = Some(gather);
    before.weight_grad.comm = Some(CommOp {
        asynchronous: true,
        ..comm(CommKind::ReduceScatter, group, elems * g)
    });
    let mut rows = Vec::new();
    if let Some((n, _)) = hsdp(job) {
        // HSDP: the unit's gradient shard all-reduced across the replicas
        // after its reduce-scatter (the backward runs rows in reverse:
        // this row, first in the forward, runs after the one below).
        let mut ar = LayerOp::empty(
            format!("attention_hsdp_grad_allreduce.{layer}"),
            LayerRole::Layer,
        );
        let shard = u64::from(n * s.cp.max(1));
        ar.weight_grad.comm = Some(CommOp {
            asynchronous: true,
            ..comm(
                CommKind::AllReduce,
                CommGroup::DpReplicate,
                (elems * g).div_ceil(shard),
            )
        });
        rows.push(ar);
    }
    rows.push(before);
    let mut after = Vec::new();
    if s.sharding.reshard_after_forward {
        let mut o = LayerOp::empty(
            format!("mlp_fsdp_backward_allgather.{layer}"),
            LayerRole::Layer,
        );
        o.input_grad.comm = Some(gather);
        after.push(o);
    }
    (rows, after)
}

/// ZeRO-2's reduce-scatter of layer `layer`'s gradients (one bucket per
/// layer, see the module documentation): a row opening the layer whose
/// weight-gradient column (asynchronous, on the DP lane) reduce-scatters
/// the layer's full gradients over the data-parallel ranks once the
/// layer's backward is done, every micro-batch. Empty unless the job shards
/// its gradients but not its weights (ZeRO-3 reduces per unit in
/// [`unit_collectives`]).
pub fn gradient_reduce_scatter(job: &ModelJob, layer: u32) -> Vec<LayerOp> {
    if !shards_gradients(job) || shards_parameters(job) {
        return Vec::new();
    }
    let g = super::layout::gradient_bytes(&job.setup);
    let (group, elems) = unit_group(job, layer);
    if elems == 0 {
        return Vec::new();
    }
    let mut o = LayerOp::empty(
        format!("attention_zero2_grad_reduce_scatter.{layer}"),
        LayerRole::Layer,
    );
    o.weight_grad.comm = Some(CommOp {
        kind: CommKind::ReduceScatter,
        group,
        size_bytes: elems * g,
        asynchronous: true,
        prefetch: 0,
    });
    vec![o]
}

/// The group one unit's (layer's) sharded collectives run over and the
/// elements they carry: dense weights over DP x CP, routed experts over
/// expert DP; the engine runs one collective per column, so a MoE unit's
/// expert part rides with the dense one when both shard (the smaller
/// group's own time is not modelled apart).
fn unit_group(job: &ModelJob, layer: u32) -> (CommGroup, u64) {
    let (dense, expert) = unit_params(job, layer);
    let (dp, edp) = shard_ranks(job);
    if hsdp(job).is_some() {
        // HSDP refuses MoE experts: every weight shards in the group.
        (CommGroup::DpShard, dense + expert)
    } else if dense > 0 && dp > 1 {
        (CommGroup::Dp, dense + if edp > 1 { expert } else { 0 })
    } else if edp > 1 {
        (CommGroup::DpEp, expert)
    } else {
        (CommGroup::DpEp, 0)
    }
}
