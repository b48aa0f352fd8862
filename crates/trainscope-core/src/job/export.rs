//! A model-level job written as a SimAI/AICB text workload (docs/FORMATS.md
//! §2.1), for users who want to cross-check with SimAI itself:
//! `trainscope convert --model ... --to simai-workload -o FILE`. The text
//! reads back through our own SimAI parser (tested) and follows AICB's
//! layout: the once-per-iteration gradient sync first (collectives in the
//! weight-gradient column), then the per-micro-batch block written `ga`
//! times, each starting with `embedding_layer`, then the optimizer rows.
//! The host's kernel launches ([`crate::model::stack`]) are not written:
//! SimAI's format has no place for them, so the file simulates like the
//! job with `--host-launch-us 0`.
//!
//! SimAI describes one SPMD stage: the block written is stage 0's layers
//! with the last stage's output layer and loss appended (AICB does the
//! same), so a pipelined job is exported as its most loaded stage. Header:
//! `vpp` is the job's virtual-stage count (AICB writes layers per stage
//! there; SimAI only uses it in its closed-form bubble), `pp_comm` the
//! stage-to-stage activation bytes. Collectives SimAI has no group for (the
//! tied-embedding all-reduce between the first and the last stage, the
//! context-parallel K/V exchange) are left out, and the returned warnings
//! say so (the CP exchange in one line; `all_gpus` counts DP x CP, so
//! SimAI reduces the gradients over DP x CP as Megatron does).

use super::build::described_job;
use super::ModelJob;
use crate::workload::{CommGroup, CommKind, CommOp, LayerOp, LayerRole};
use std::fmt::Write as _;

/// Which SimAI column a collective is written in (it decides the default
/// group: TP for forward and input gradient, DP for weight gradient).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Column {
    Forward,
    InputGrad,
    WeightGrad,
}

fn comm_type(c: &CommOp, column: Column) -> Option<String> {
    let base = match c.kind {
        CommKind::AllReduce => "ALLREDUCE",
        CommKind::AllGather => "ALLGATHER",
        CommKind::ReduceScatter => "REDUCESCATTER",
        CommKind::AllToAll => "ALLTOALL",
        CommKind::Broadcast => "BROADCAST",
        CommKind::Send | CommKind::Recv => return None,
    };
    let suffix = match (c.group, column) {
        (CommGroup::Tp, Column::Forward | Column::InputGrad) => "",
        (CommGroup::Dp, Column::WeightGrad) => "",
        (CommGroup::Ep, _) => "_EP",
        (CommGroup::DpEp, _) => "_DP_EP",
        _ => return None,
    };
    Some(format!("{base}{suffix}"))
}

fn field(
    c: Option<&CommOp>,
    column: Column,
    name: &str,
    warnings: &mut Vec<String>,
) -> (String, u64) {
    match c {
        None => ("NONE".to_string(), 0),
        Some(c) => match comm_type(c, column) {
            Some(t) => (t, c.size_bytes),
            None => {
                // One line for every layer's context-parallel exchange.
                let w = if c.group == CommGroup::Cp {
                    "`attention_cp_kv_exchange.*`: SimAI has no context-parallel group: the K/V all-gathers and their gradients' reduce-scatters are left out".to_string()
                } else {
                    format!(
                        "`{name}`: a {:?} over the {:?} group has no SimAI spelling in this column; left out",
                        c.kind, c.group
                    )
                };
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
                ("NONE".to_string(), 0)
            }
        },
    }
}

fn row(out: &mut String, op: &LayerOp, update_ns: u64, warnings: &mut Vec<String>) {
    // Compute 1 means "not measured" to SimAI: write 2 ns instead.
    let ns = |v: u64| if v == 1 { 2 } else { v };
    let (ft, fs) = field(
        op.forward.comm.as_ref(),
        Column::Forward,
        &op.name,
        warnings,
    );
    let (it, is) = field(
        op.input_grad.comm.as_ref(),
        Column::InputGrad,
        &op.name,
        warnings,
    );
    let (wt, ws) = field(
        op.weight_grad.comm.as_ref(),
        Column::WeightGrad,
        &op.name,
        warnings,
    );
    let _ = writeln!(
        out,
        "{}\t-1\t{}\t{ft}\t{fs}\t{}\t{it}\t{is}\t{}\t{wt}\t{ws}\t{update_ns}",
        op.name,
        ns(op.forward.compute_ns),
        ns(op.input_grad.compute_ns),
        ns(op.weight_grad.compute_ns),
    );
}

/// The SimAI workload text of `job` and the warnings about what SimAI
/// cannot express.
pub fn simai_workload(job: &ModelJob) -> (String, Vec<String>) {
    let d = described_job(job, &job.model.name);
    let mut warnings = Vec::new();
    let p = &d.parallel;
    let first = &d.stages[0];
    let last = &d.stages[d.stages.len() - 1];
    let mut block: Vec<LayerOp> = first.blocks[0].ops.clone();
    if d.stages.len() > 1 {
        block.extend(
            last.blocks[0]
                .ops
                .iter()
                .filter(|o| o.role == LayerRole::Loss)
                .cloned(),
        );
        warnings.push(format!(
            "SimAI describes one stage: exported stage 0's {} layers with the last stage's output layer and loss",
            super::layout::stage_layers(job, 0).len()
        ));
    }
    let ga = p.micro_batches;
    let records = first.before.len() + block.len() * ga as usize + first.after.len();
    let mut out = format!(
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {} ep: {} pp: {} vpp: {} ga: {} all_gpus: {} pp_comm: {} checkpoints: 0 checkpoint_initiates: 0\n{records}\n",
        p.tp, p.ep, p.pp, p.virtual_stages, ga, p.world, p.activation_bytes
    );
    let update_ns = 0;
    for op in &first.before {
        row(&mut out, op, update_ns, &mut warnings);
    }
    for _ in 0..ga {
        for op in &block {
            row(&mut out, op, update_ns, &mut warnings);
        }
    }
    for op in &first.after {
        row(&mut out, op, update_ns, &mut warnings);
    }
    (out, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{simulate, JobSpec, SimConfig};
    use crate::formats::simai;
    use crate::hardware::gpu_preset;
    use crate::job::tests::{llama3_70b, setup};

    #[test]
    fn a_cp_job_exports_gradients_over_dp_x_cp_and_names_the_left_out_exchange_once() {
        let gpu = gpu_preset("H100").unwrap();
        let s = crate::job::TrainingSetup {
            tp: 2,
            cp: 2,
            global_batch_size: Some(8),
            seq_length: 8192,
            ..crate::job::TrainingSetup::default()
        };
        let m = crate::model::presets::preset("llama3-8b").unwrap();
        let job = ModelJob::new(m, s, gpu, Some(8)).unwrap();
        let (text, warnings) = simai_workload(&job);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("no context-parallel group"));
        let back = simai::to_model("cp.txt", &simai::parse("cp.txt", &text).unwrap());
        // SimAI derives DP from all_gpus / (TP x PP): DP x CP = 4.
        assert_eq!((back.parallel.tp, back.parallel.dp), (2, 4));
    }

    #[test]
    fn exported_workload_reads_back_and_simulates_the_same() {
        let gpu = gpu_preset("H100").unwrap();
        // One stage, so the exported stage is the whole job.
        let mut s = setup(8, 1, 32);
        s.seq_length = 4096;
        // SimAI's format carries no host launches: compared without them.
        s.stack.launch_ns_per_kernel = Some(0);
        let job = ModelJob::new(llama3_70b(), s, gpu, Some(32)).unwrap();
        let (text, warnings) = simai_workload(&job);
        assert!(warnings.is_empty(), "{warnings:?}");
        let w = simai::parse("export.txt", &text).unwrap();
        assert!(
            w.diagnostics.iter().all(|d| !d.is_error()),
            "{:?}",
            w.diagnostics
        );
        let back = simai::to_model("export.txt", &w);
        let ours = described_job(&job, "llama3-70b");
        assert_eq!(back.parallel.tp, 8);
        assert_eq!(back.parallel.dp, 4);
        assert_eq!(back.parallel.micro_batches, ours.parallel.micro_batches);
        assert_eq!(
            back.parallel.activation_bytes,
            ours.parallel.activation_bytes
        );
        let total = |ops: &[LayerOp]| -> (u64, u64) {
            (
                ops.iter().map(|o| o.total_compute_ns()).sum(),
                ops.iter()
                    .flat_map(|o| [o.forward.comm, o.input_grad.comm, o.weight_grad.comm])
                    .flatten()
                    .map(|c| c.size_bytes)
                    .sum(),
            )
        };
        let bs = back.stage(0).unwrap();
        let os = ours.stage(0).unwrap();
        assert_eq!(bs.micro_batch_count(), os.micro_batch_count());
        assert_eq!(total(&bs.blocks[0].ops), total(&os.blocks[0].ops));
        assert_eq!(total(&bs.before), total(&os.before));
        assert_eq!(total(&bs.after), total(&os.after));
        // Same numbers through the event engine.
        let opts = crate::engine::described::DescribedOptions::default();
        let a = simulate(
            &JobSpec::from_described(&back, &opts).unwrap(),
            &SimConfig::default(),
        )
        .unwrap();
        let b = simulate(
            &JobSpec::from_described(&ours, &opts).unwrap(),
            &SimConfig::default(),
        )
        .unwrap();
        assert_eq!(a.summary.iteration_time_ns, b.summary.iteration_time_ns);
    }
}
