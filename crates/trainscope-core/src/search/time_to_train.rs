//! The sweep ranked by time to train (`sweep --rank-by time-to-train`):
//! each row's days to train the run's tokens (or steps) with failures,
//! checkpoints and restarts, from the goodput planner's closed form
//! ([`crate::goodput::plan`], the renewal model; deterministic, no
//! Monte-Carlo). The row's iteration time, GPUs and the job's memory come
//! from the row; the tokens per iteration (the sweep's global batch x
//! sequence length) and the checkpoint size
//! ([`crate::goodput::job_facts::checkpoint_size_bytes`]) from the sweep;
//! every other setting from the run given. A larger cluster fails more
//! often (the job's rate is the node rate times the nodes), so the layout
//! that is best per iteration need not be best per token-day.

use super::report::{finish, SweepReport};
use super::SweepSpec;
use crate::goodput::job_facts::checkpoint_size_bytes;
use crate::goodput::{plan, PlanError, RunPlanInput, Work};

/// Give every row its `days_to_train` and rank the report by them (fits
/// first, then days, then the usual keys). `run` is the run's settings:
/// its `work` (tokens: the tokens per iteration are replaced by the
/// sweep's), failure rate, checkpoint and recovery settings; its
/// `checkpoint_size_bytes` when not 0, else the model's. The first row the
/// planner refuses stops the ranking with its error.
pub fn rank_by_time_to_train(
    report: &mut SweepReport,
    spec: &SweepSpec,
    run: &RunPlanInput,
) -> Result<(), PlanError> {
    let tokens_per_iteration = u64::from(spec.global_batch_size) * u64::from(spec.seq_length);
    let size = if run.checkpoint_size_bytes > 0 {
        run.checkpoint_size_bytes
    } else {
        checkpoint_size_bytes(
            spec.model.parameters().total,
            spec.precision,
            spec.bf16_grads,
        )
    };
    for row in &mut report.results {
        let mut i = run.clone();
        i.iteration_time_ns = row.iteration_time_ns;
        i.gpus = row.world;
        i.gpus_per_node = spec.gpus_per_node;
        if let Work::Tokens { tokens, .. } = run.work {
            i.work = Work::Tokens {
                tokens,
                tokens_per_iteration,
            };
        }
        i.checkpoint_size_bytes = size;
        i.job_memory_bytes = Some(row.capacity_bytes.saturating_mul(u64::from(row.world)));
        i.runs = 1;
        row.days_to_train = Some(plan(&i)?.days_to_train.closed_form);
    }
    *report = finish(report.clone());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goodput::FailureRate;
    use crate::search::report::Row;

    fn row(index: u32, world: u32, iteration_time_ns: u64) -> Row {
        Row {
            index,
            flags: format!("--world {world}"),
            world,
            tp: 1,
            pp: 1,
            dp: world,
            cp: 1,
            ep: 1,
            expert_tp: None,
            vpp: 1,
            first_stage_layers: None,
            last_stage_layers: None,
            account_for_embedding: false,
            account_for_loss: false,
            micro_batch_size: 1,
            micro_batches: 1,
            recompute: "none".into(),
            schedule: "1f1b".into(),
            sequence_parallel: false,
            distributed_optimizer: true,
            zero: 1,
            hsdp_shard: 0,
            offload: Default::default(),
            software: String::new(),
            iteration_time_ns,
            tokens_per_second: 0.0,
            mfu: 0.0,
            peak_bytes: 1,
            peak_bytes_per_stage: vec![1],
            capacity_bytes: 80 << 30,
            fits: true,
            bubble_ns: 0,
            exposed_comm_ns: Default::default(),
            straggler_iteration_time_ns: None,
            straggler_stage: None,
            days_to_train: None,
            pareto: false,
        }
    }

    #[test]
    fn a_larger_faster_layout_can_lose_on_days_to_train() {
        let model = crate::model::presets::preset("llama3-8b").expect("preset");
        let gpu = crate::hardware::gpu_preset("H100-SXM").expect("gpu");
        let spec = SweepSpec::new(model, gpu, 64);
        // 128 GPUs, 5% faster per iteration than 64: the iteration ranking
        // puts it first.
        let rows = vec![row(0, 64, 1_000_000_000), row(1, 128, 950_000_000)];
        let mut report = crate::search::report::build(String::new(), None, 0, Vec::new(), {
            rows.into_iter()
                .map(|r| crate::search::report::Outcome::Simulated(Box::new(r)))
                .collect()
        });
        assert_eq!(report.results[0].world, 128);
        // At 200 failures per 1000 node-days, a 10-minute checkpoint and
        // 15 minutes of detection and restart, twice the nodes fail twice
        // as often and cost more than the 5% they gain.
        let mut run = RunPlanInput::new(
            1,
            Work::Tokens {
                tokens: 1 << 40,
                tokens_per_iteration: 1,
            },
            1,
            8,
        );
        run.failure_rate = FailureRate::Per1000NodeDays(200.0);
        run.checkpoint_write_s = Some(600.0);
        run.detection_s = 300.0;
        run.restart_s = 600.0;
        rank_by_time_to_train(&mut report, &spec, &run).expect("ranked");
        let r = &report.results;
        assert_eq!(r[0].world, 64, "{r:?}");
        let (a, b) = (r[0].days_to_train.unwrap(), r[1].days_to_train.unwrap());
        assert!(a < b, "{a} {b}");
        // Each row's days are the planner's closed form for that row.
        let mut one = run.clone();
        one.iteration_time_ns = 1_000_000_000;
        one.gpus = 64;
        one.work = Work::Tokens {
            tokens: 1 << 40,
            tokens_per_iteration: u64::from(spec.global_batch_size) * u64::from(spec.seq_length),
        };
        one.checkpoint_size_bytes = checkpoint_size_bytes(
            spec.model.parameters().total,
            spec.precision,
            spec.bf16_grads,
        );
        one.runs = 1;
        assert_eq!(a, plan(&one).unwrap().days_to_train.closed_form);
        // Without failures to speak of, the faster layout wins again.
        run.failure_rate = FailureRate::Per1000NodeDays(1e-6);
        rank_by_time_to_train(&mut report, &spec, &run).expect("ranked");
        assert_eq!(report.results[0].world, 128);
    }
}
