//! Described jobs from the normalised model: [`JobSpec::from_described`]
//! turns a [`DescribedJob`] (SimAI/AICB workload, NeuSight TSV) into an SPMD
//! [`JobSpec`], one program per pipeline stage.
//!
//! Mapping:
//! - parallel sizes from the job's [`crate::workload::ParallelConfig`]; an EP
//!   that does not divide DP is placed as EP 1 (warned);
//! - per stage: the once-per-iteration rows before the micro-batches become
//!   gradient-sync rows ([`crate::engine::spec::RankProgram::pre_rows`]), the rows
//!   after them the closing rows; the micro-batch blocks (run-length
//!   encoded, `repeat` micro-batches each) become distinct blocks with a
//!   block index per micro-batch; the micro-batch count is the sum of the
//!   repeats;
//! - layer ops keep their three phases, compute, collectives and update
//!   wait; collectives over TP, EP, DP, DP_EP keep their group, a collective
//!   without a group runs over its column's plain group (TP in the forward
//!   and input-gradient columns, DP in the weight-gradient column, warned),
//!   broadcasts and point-to-point rows are not collectives here (warned:
//!   pipeline transfers come from the schedule);
//! - the activation bytes are the job's; a pipelined job without them gets
//!   the largest forward TP collective / tp (warned), as
//!   [`JobSpec::from_simai`] does;
//! - SimAI workloads keep the header's `vpp` for SimAI's closed-form bubble
//!   only ([`JobSpec::header_vpp`]).
//!
//! NeuSight semantics (docs/FORMATS.md §2.2) follow from this and the
//! engine: one stage, one micro-batch per block; forward runs the ops in
//! order, backward walks them in reverse, and a `_grad` row's all-reduce
//! (attached by the parser to its op's weight-gradient column) starts
//! asynchronously when the backward reaches that op; all DP collectives of a
//! rank queue on its one asynchronous stream (they serialise), and the
//! iteration ends when the last of them or the backward compute ends. The
//! parser estimates the backward of rows without one as 2 x forward (input
//! gradient = weight gradient = forward) and marks them
//! ([`LayerOp::backward_estimated`]); [`DescribedOptions::backward_factor`]
//! changes that factor for exactly those rows.

use crate::engine::scale;
use crate::engine::spec::{
    check_size, Block, CollectiveKind, CommSpec, GroupKind, JobMode, JobSpec, LayerSpec,
    Parallelism, Phase, PhaseOps, RankProgram,
};
use crate::engine::SimError;
use crate::limits::MAX_MICRO_BATCHES;
use crate::workload::Format;
use crate::workload::{CommGroup, CommKind, CommOp, DescribedJob, LayerOp, PhaseOp, StageWorkload};
use serde::{Deserialize, Serialize};

/// Settings of [`JobSpec::from_described`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DescribedOptions {
    /// For the ops whose backward the parser estimated (NeuSight rows with
    /// zero backward: input gradient = weight gradient = forward, i.e.
    /// backward = 2 x forward): backward = `factor` x forward instead, split
    /// equally; measured rows keep their times. `None` keeps the estimate.
    pub backward_factor: Option<f64>,
}

/// True when the parser estimated the backward of some op of `job`
/// ([`LayerOp::backward_estimated`]: NeuSight rows with zero backward).
pub fn backward_was_estimated(job: &DescribedJob) -> bool {
    job.stages.iter().any(|s| {
        s.before
            .iter()
            .chain(s.blocks.iter().flat_map(|b| b.ops.iter()))
            .chain(s.after.iter())
            .any(|o| o.backward_estimated)
    })
}

fn push_once(warnings: &mut Vec<String>, msg: String) {
    if !warnings.contains(&msg) {
        warnings.push(msg);
    }
}

fn comm_spec(c: &CommOp, phase: Phase, name: &str, warnings: &mut Vec<String>) -> Option<CommSpec> {
    let collective = match c.kind {
        CommKind::AllReduce => CollectiveKind::AllReduce,
        CommKind::AllGather => CollectiveKind::AllGather,
        CommKind::ReduceScatter => CollectiveKind::ReduceScatter,
        CommKind::AllToAll => CollectiveKind::AllToAll,
        CommKind::Broadcast => {
            push_once(
                warnings,
                "broadcast rows are not simulated (kept as no-ops, as SimAI does)".to_string(),
            );
            return None;
        }
        CommKind::Send | CommKind::Recv => {
            push_once(
                warnings,
                "point-to-point (SENDRECV) rows are not simulated as collectives: stage-to-stage transfers come from the pipeline schedule"
                    .to_string(),
            );
            return None;
        }
    };
    let group = match c.group {
        CommGroup::Tp => GroupKind::Tp,
        CommGroup::Dp => GroupKind::Dp,
        CommGroup::Ep => GroupKind::Ep,
        CommGroup::DpEp => GroupKind::DpEp,
        CommGroup::Cp => GroupKind::Cp,
        CommGroup::DpShard => GroupKind::DpShard,
        CommGroup::DpReplicate => GroupKind::DpReplicate,
        CommGroup::Unscoped => {
            let g = if phase == Phase::WeightGrad {
                GroupKind::Dp
            } else {
                GroupKind::Tp
            };
            push_once(
                warnings,
                format!(
                    "all-reduce without a group in `{name}` is run over {} (the column's plain group)",
                    g.name()
                ),
            );
            g
        }
        // The tied-embedding all-reduce between the first and the last stage
        // runs over the pipeline group, as in the replay of measured runs.
        CommGroup::Embedding | CommGroup::PositionEmbedding => GroupKind::Pp,
        CommGroup::Pp => {
            push_once(
                warnings,
                format!(
                    "a collective over the {:?} group in `{name}` is not simulated (no such group in a described job)",
                    c.group
                ),
            );
            return None;
        }
    };
    if c.size_bytes == 0 {
        return None;
    }
    Some(CommSpec {
        collective,
        group,
        size_bytes: c.size_bytes,
        // Prefetches are the forward and input-gradient columns' (the
        // FSDP builder's gathers; no file format writes one).
        prefetch: if phase == Phase::WeightGrad {
            0
        } else {
            c.prefetch
        },
    })
}

fn phase_ops(p: &PhaseOp, phase: Phase, name: &str, warnings: &mut Vec<String>) -> PhaseOps {
    PhaseOps {
        compute_ns: p.compute_ns,
        comm: p
            .comm
            .as_ref()
            .and_then(|c| comm_spec(c, phase, name, warnings)),
        launch_ns: p.launch_ns,
        host_sync: p.host_sync,
        launches: p.launches,
        comm_overlap: p.comm_overlap,
    }
}

/// One layer op as an engine layer.
fn layer(op: &LayerOp, factor: Option<f64>, warnings: &mut Vec<String>) -> LayerSpec {
    let mut l = LayerSpec {
        name: op.name.clone(),
        forward: phase_ops(&op.forward, Phase::Forward, &op.name, warnings),
        input_grad: phase_ops(&op.input_grad, Phase::InputGrad, &op.name, warnings),
        weight_grad: phase_ops(&op.weight_grad, Phase::WeightGrad, &op.name, warnings),
        update_ns: op.update_ns,
    };
    if let (Some(f), true) = (factor, op.backward_estimated) {
        let half = scale(op.forward.compute_ns, f / 2.0);
        l.input_grad.compute_ns = half;
        l.weight_grad.compute_ns = half;
    }
    l
}

struct StageParts {
    blocks: Vec<Block>,
    micro_batch_blocks: Vec<u32>,
    micro_batches: u64,
    pre: Vec<LayerSpec>,
    post: Vec<LayerSpec>,
}

fn stage_parts(
    s: &StageWorkload,
    stage: u32,
    factor: Option<f64>,
    warnings: &mut Vec<String>,
) -> Result<StageParts, SimError> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut micro_batch_blocks: Vec<u32> = Vec::new();
    let mut micro_batches: u64 = 0;
    let n = s.blocks.len();
    for (i, mb) in s.blocks.iter().enumerate() {
        if mb.repeat == 0 {
            continue;
        }
        let b = Block {
            layers: mb.ops.iter().map(|o| layer(o, factor, warnings)).collect(),
        };
        let idx = match blocks.iter().position(|x| *x == b) {
            Some(i) => i,
            None => {
                blocks.push(b);
                blocks.len() - 1
            }
        } as u32;
        // Micro-batches past the end of the map use its last entry, so the
        // last block needs one entry whatever its repeat.
        let entries = if i + 1 == n { 1 } else { u64::from(mb.repeat) };
        if micro_batch_blocks.len() as u64 + entries > u64::from(MAX_MICRO_BATCHES) {
            return Err(SimError::TooLarge(format!(
                "stage {stage} describes more than {MAX_MICRO_BATCHES} micro-batches"
            )));
        }
        micro_batch_blocks.extend(std::iter::repeat_n(idx, entries as usize));
        micro_batches = micro_batches.saturating_add(u64::from(mb.repeat));
    }
    if blocks.is_empty() || blocks.iter().all(|b| b.layers.is_empty()) {
        return Err(SimError::InvalidJob(format!(
            "stage {stage} has no per-micro-batch layers to schedule"
        )));
    }
    if blocks.len() == 1 {
        micro_batch_blocks.clear();
    }
    Ok(StageParts {
        blocks,
        micro_batch_blocks,
        micro_batches,
        pre: s
            .before
            .iter()
            .map(|o| layer(o, factor, warnings))
            .collect(),
        post: s.after.iter().map(|o| layer(o, factor, warnings)).collect(),
    })
}

impl JobSpec {
    /// Adapt a described job (see the module documentation for the
    /// mapping). Errors when a stage has no workload or no per-micro-batch
    /// layers, or when the job describes more micro-batches than the engine
    /// accepts.
    pub fn from_described(
        job: &DescribedJob,
        options: &DescribedOptions,
    ) -> Result<JobSpec, SimError> {
        let mut warnings = Vec::new();
        let p = &job.parallel;
        let (tp, dp, pp) = (p.tp.max(1), p.dp.max(1), p.pp.max(1));
        let mut ep = p.ep.max(1);
        // With an expert TP, EP is carved out of TP x DP (checked when the
        // model-level job was built).
        let folded = p.etp.is_some_and(|e| e != tp);
        if ep > 1 && !folded && !dp.is_multiple_of(ep) {
            warnings.push(format!(
                "ep {ep} does not divide dp {dp}; EP groups are placed as if ep = 1"
            ));
            ep = 1;
        }
        let mut cp = p.cp.max(1);
        if cp > 1 && !dp.is_multiple_of(cp) {
            warnings.push(format!(
                "cp {cp} does not divide dp {dp}; CP groups are placed as if cp = 1"
            ));
            cp = 1;
        }
        let parallel = Parallelism {
            tp,
            dp,
            pp,
            ep,
            cp,
            etp: p.etp.filter(|e| *e != tp),
            dp_shard: p.dp_shard,
        };
        let factor = match options.backward_factor {
            Some(f) if backward_was_estimated(job) => {
                if !f.is_finite() || !(0.0..=1000.0).contains(&f) {
                    return Err(SimError::InvalidConfig {
                        name: "backward_factor",
                        reason: format!("{f} is not between 0 and 1000"),
                    });
                }
                warnings.push(format!(
                    "backward estimated as {f} x forward (input gradient = weight gradient = {} x forward)",
                    f / 2.0
                ));
                Some(f)
            }
            _ => None,
        };
        // Sizes first: nothing proportional to pp is allocated before this.
        let biggest = job
            .stages
            .iter()
            .flat_map(|s| s.blocks.iter().map(|b| b.ops.len()))
            .max()
            .unwrap_or(0);
        let once = job
            .stages
            .iter()
            .map(|s| s.before.len() + s.after.len())
            .max()
            .unwrap_or(0);
        check_size(parallel, u64::from(pp), 1, 1, biggest as u64, once as u64)?;
        let mut programs = Vec::with_capacity(pp as usize);
        let mut micro_batches: Option<u64> = None;
        for stage in 0..pp {
            let Some(s) = job.stage(stage) else {
                return Err(SimError::InvalidJob(format!(
                    "the job describes no workload for pipeline stage {stage} of {pp}"
                )));
            };
            let parts = stage_parts(s, stage, factor, &mut warnings)?;
            match micro_batches {
                None => micro_batches = Some(parts.micro_batches),
                Some(m) if m != parts.micro_batches => warnings.push(format!(
                    "stage {stage} describes {} micro-batches, stage 0 {m}; every stage runs {m}",
                    parts.micro_batches
                )),
                Some(_) => {}
            }
            programs.push(RankProgram {
                rank: 0,
                stage,
                blocks: parts.blocks,
                micro_batch_blocks: parts.micro_batch_blocks,
                pre_rows: parts.pre,
                post_rows: parts.post,
                order: None,
                chunk_layers: s.chunk_layers.clone(),
            });
        }
        let micro_batches = u32::try_from(micro_batches.unwrap_or(1).max(1)).unwrap_or(u32::MAX);
        let checkpoints = job.stages.iter().any(|s| {
            s.blocks
                .iter()
                .flat_map(|b| b.ops.iter())
                .chain(s.before.iter())
                .chain(s.after.iter())
                .any(|o| o.checkpoint || o.initiates_recompute)
        });
        if checkpoints {
            warnings.push(
                "activation-recompute checkpoints in the header are not simulated".to_string(),
            );
        }
        let activation_bytes = if p.activation_bytes > 0 {
            p.activation_bytes
        } else if pp > 1 {
            Block::estimated_stage_send_bytes(
                programs.iter().flat_map(|prog| prog.blocks.iter()),
                tp,
                &mut warnings,
            )
        } else {
            0
        };
        let name = job
            .file
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(&job.file)
            .to_string();
        Ok(JobSpec {
            name,
            parallel,
            micro_batches,
            activation_bytes,
            mode: JobMode::Spmd,
            programs,
            header_vpp: (job.format == Format::SimaiWorkload).then(|| p.virtual_stages.max(1)),
            // The model does not keep the file's rows as written (copies,
            // placeholder values): `run_files` attaches them from the parsed
            // workload (`LoadedSet::simai_sources`).
            simai_bubble: None,
            pipelined: true,
            transfers: Vec::new(),
            stage_copies: false,
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{neusight, simai};

    const SEED000: &str =
        include_str!("../../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");

    #[test]
    fn simai_through_the_model_equals_the_direct_adapter() {
        let w = simai::parse("s.txt", SEED000).unwrap();
        let direct = JobSpec::from_simai(&w).unwrap();
        let via =
            JobSpec::from_described(&simai::to_model("s.txt", &w), &Default::default()).unwrap();
        assert_eq!(via.parallel, direct.parallel);
        assert_eq!(via.micro_batches, direct.micro_batches);
        assert_eq!(via.activation_bytes, direct.activation_bytes);
        assert_eq!(via.header_vpp, direct.header_vpp);
        assert_eq!(via.programs, direct.programs);
    }

    #[test]
    fn repeats_become_a_block_map() {
        let text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 pp: 1 vpp: 1 ga: 3 all_gpus: 1 pp_comm: 0\n\
            6\n\
            embedding_layer -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n\
            a -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n\
            embedding_layer -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n\
            a -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n\
            embedding_layer -1 1000 NONE 0 1000 NONE 0 1000 NONE 0 100\n\
            a -1 2000 NONE 0 1000 NONE 0 1000 NONE 0 100\n";
        let w = simai::parse("r.txt", text).unwrap();
        let j =
            JobSpec::from_described(&simai::to_model("r.txt", &w), &Default::default()).unwrap();
        assert_eq!(j.micro_batches, 3);
        let p = &j.programs[0];
        assert_eq!(p.blocks.len(), 2);
        assert_eq!(p.micro_batch_blocks, vec![0, 0, 1]);
        assert_eq!(p.block_of(2).unwrap().layers[1].forward.compute_ns, 2000);
    }

    #[test]
    fn neusight_backward_factor_rescales_the_estimate() {
        let tsv = "name\tforward_compute_time\tforward_comm_type\tforward_comm_size\tbackward_compute_time\tbackward_comm_type\tbackward_comm_size\tweight_grad_compute_time\tweight_grad_comm_type\tweight_grad_comm_size\tprocess_time\n\
            a\t1.0\tNone\t0\t0\tNone\t0\t0\tNone\t0\t0\n";
        let t = neusight::parse("n.tsv", tsv).unwrap();
        let job = neusight::to_model("n.tsv", &t, &Default::default());
        assert!(backward_was_estimated(&job));
        let keep = JobSpec::from_described(&job, &Default::default()).unwrap();
        let l = &keep.programs[0].blocks[0].layers[0];
        assert_eq!(
            (l.input_grad.compute_ns, l.weight_grad.compute_ns),
            (1_000_000, 1_000_000)
        );
        let three = JobSpec::from_described(
            &job,
            &DescribedOptions {
                backward_factor: Some(3.0),
            },
        )
        .unwrap();
        let l = &three.programs[0].blocks[0].layers[0];
        assert_eq!(
            (l.input_grad.compute_ns, l.weight_grad.compute_ns),
            (1_500_000, 1_500_000)
        );
        assert!(three.warnings.iter().any(|w| w.contains("3 x forward")));
    }

    /// In a file that mixes measured and zero backward rows, the factor
    /// replaces the estimate of the zero rows only; measured rows, and an op
    /// whose `_grad` row carries its backward time, keep the file's values.
    #[test]
    fn neusight_backward_factor_rescales_only_estimated_rows() {
        let tsv = "name\tforward_compute_time\tforward_comm_type\tforward_comm_size\tbackward_compute_time\tbackward_comm_type\tbackward_comm_size\tweight_grad_compute_time\tweight_grad_comm_type\tweight_grad_comm_size\tprocess_time\n\
            embed\t0.5\tNone\t0\t1.0\tNone\t0\t0.5\tNone\t0\t0\n\
            ln\t0.2\tNone\t0\t0\tNone\t0\t0\tNone\t0\t0\n\
            mm_grad\t0\tNone\t0\t0.3\tALLREDUCE_ASYNC\t1024\t0.1\tNone\t0\t0\n\
            mm\t2.0\tNone\t0\t0\tNone\t0\t0\tNone\t0\t0\n";
        let t = neusight::parse("n.tsv", tsv).unwrap();
        let job = neusight::to_model("n.tsv", &t, &Default::default());
        assert!(backward_was_estimated(&job));
        let three = JobSpec::from_described(
            &job,
            &DescribedOptions {
                backward_factor: Some(3.0),
            },
        )
        .unwrap();
        let layers: Vec<_> = three.programs[0]
            .blocks
            .iter()
            .flat_map(|b| b.layers.iter())
            .chain(three.programs[0].pre_rows.iter())
            .chain(three.programs[0].post_rows.iter())
            .map(|l| {
                (
                    l.name.as_str(),
                    l.input_grad.compute_ns,
                    l.weight_grad.compute_ns,
                )
            })
            .collect();
        let find = |n: &str| *layers.iter().find(|l| l.0 == n).unwrap();
        assert_eq!(find("embed"), ("embed", 1_000_000, 500_000), "measured");
        assert_eq!(
            find("ln"),
            ("ln", 300_000, 300_000),
            "estimated: 3 x 0.2 ms, split"
        );
        assert_eq!(
            find("mm"),
            ("mm", 300_000, 100_000),
            "its _grad row's times"
        );
    }
}
