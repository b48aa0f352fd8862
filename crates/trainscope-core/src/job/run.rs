//! Simulating a model-level job: [`run_model`] builds the workload
//! ([`super::build::described_job`]), runs it through the same adapter,
//! cost model and engine as a dropped workload file
//! ([`crate::engine::JobSpec::from_described`], [`crate::engine::simulate_with`]),
//! and adds what only a model-level job knows: memory per stage (and the
//! timeline's activation memory lanes in bytes), MFU, tokens/s. [`ModelRunOutput::report_json`] is `trainscope simulate
//! --model ... --json`: the file run's keys plus `model`, `mfu`,
//! `model_tflops_per_gpu`, `tokens_per_second` and `memory`.
//!
//! The settings a model-level job states itself override the simulation
//! settings: its micro-batch count, its virtual stages (the interleaved
//! schedule when vpp > 1), its activation bytes and its stack's launch
//! queue depth ([`crate::model::stack::StackSettings::queue_depth`]); the cluster, the
//! collective algorithm and the schedule otherwise come from the
//! [`SimConfig`].

use super::calibrate::CalibrationFit;
use super::memory::{chunk_activation_bytes, memory_report, MemoryReport, StageMemory};
use super::{ModelJob, Throughput};
use crate::engine::described::DescribedOptions;
use crate::engine::schedule::{ChunkPlacement, ScheduleKind};
use crate::engine::simai_cost::cost_for;
use crate::engine::summary::activation_counters;
use crate::engine::{simulate_with, JobSpec, SimConfig, SimError};
use crate::run::{as_warning_lines, push_unique, RunError, RunOutput, RUN_SCHEMA_VERSION};
use crate::timeline::ResidentPart;
use serde::Serialize;
use serde_json::{json, Value};

/// What a model-level run produces: the simulation as for a file, plus the
/// model's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRunOutput {
    pub run: RunOutput,
    /// The resolved job (model, setup, GPU).
    pub job: ModelJob,
    pub throughput: Throughput,
    pub memory: MemoryReport,
    /// `--calibrate-from`: what the measured run fitted.
    pub calibration: Option<CalibrationFit>,
    /// Kernels each stage's first rank launches per iteration
    /// ([`super::build::kernels_per_iteration`]).
    pub kernels_per_iteration: Vec<u64>,
}

/// Peak chunks in flight on `stage` (activations of one micro-batch's
/// chunk of layers held) for the schedule: GPipe all m; 1F1B p - stage
/// (at most m); interleaved 1F1B Megatron's warm-up 2(p - stage - 1) + (v -
/// 1)p, plus the one in the steady state (at most m x v), and all m x v
/// when m = p (Megatron's `all_warmup_microbatches`, as
/// [`crate::engine::schedule::interleaved`] runs it).
pub fn peak_in_flight(schedule: ScheduleKind, p: u32, m: u32, v: u32, stage: u32) -> u32 {
    let (p, m, v, s) = (u64::from(p), u64::from(m), u64::from(v), u64::from(stage));
    let k = match schedule {
        ScheduleKind::GPipe => m * v,
        ScheduleKind::OneFOneB if v == 1 => (p - s).min(m),
        ScheduleKind::Interleaved if v > 1 && m == p => m * v,
        _ => (2 * (p - s - 1) + (v - 1) * p + 1).min(m * v),
    };
    u32::try_from(k).unwrap_or(u32::MAX)
}

/// Simulate a validated model-level job under `config` (see the module
/// documentation for which settings the job overrides).
pub fn run_model(job: &ModelJob, config: &SimConfig) -> Result<ModelRunOutput, RunError> {
    run_model_with(job, config, None)
}

/// [`run_model`] with the what-if blame ([`crate::run::RunOptions::blame`]:
/// a sensitivity table with each stage slowed by the factor in turn).
/// Injected faults ([`SimConfig::faults`]) get their what-if report either
/// way, except in summary-only runs (the sweep ranks by the slowed time).
pub fn run_model_with(
    job: &ModelJob,
    config: &SimConfig,
    blame: Option<f64>,
) -> Result<ModelRunOutput, RunError> {
    let mut c = config.clone();
    let s = &job.setup;
    let mut warnings = job.notes.clone();
    if let Some(m) = c.micro_batches {
        if m != job.micro_batches {
            warnings.push(format!(
                "the micro-batch count comes from the global batch ({} = {} / ({} x {})); the micro-batch setting {m} is ignored",
                job.micro_batches, job.global_batch_size, s.micro_batch_size, job.dp
            ));
        }
    }
    c.micro_batches = None;
    if s.vpp > 1 {
        if !matches!(
            c.schedule,
            ScheduleKind::OneFOneB | ScheduleKind::Interleaved
        ) {
            return Err(RunError::Sim(SimError::InvalidConfig {
                name: "virtual_stages",
                reason: format!(
                    "{} virtual stages (--vpp) need the interleaved schedule, not {}",
                    s.vpp,
                    c.schedule.name()
                ),
            }));
        }
        c.virtual_stages = s.vpp;
        c.schedule = ScheduleKind::Interleaved;
    } else if c.schedule == ScheduleKind::Interleaved && c.virtual_stages > 1 {
        return Err(RunError::Sim(SimError::InvalidConfig {
            name: "virtual_stages",
            reason: "a model-level job takes its virtual stages from --vpp".to_string(),
        }));
    }
    c.activation_bytes = None;
    c.backward_factor = None;
    if s.stack.tp_comm_overlap && !(s.sequence_parallel && s.tp > 1) {
        warnings.push(format!(
            "TP communication overlap (--tp-comm-overlap) streams sequence parallelism's all-gathers and reduce-scatters with the GEMMs: this job has TP {}{}, so it changes nothing",
            s.tp,
            if s.sequence_parallel { "" } else { " without --sequence-parallel" }
        ));
    }
    c.launch_queue_depth = s.stack.queue_depth();
    if s.stack.moe_a2a_overlap {
        if job.model.moe.is_some() && s.ep > 1 {
            c.overlap_forward_backward = true;
        } else {
            warnings.push(
                "EP overlap (--moe-a2a-overlap) overlaps the expert-parallel all-to-alls: this job has no MoE layers with EP > 1, so it changes nothing".to_string(),
            );
        }
    }
    c.validate()?;
    // V-shaped schedules place two chunks per stage in a V: the builder
    // needs to know (the output layer moves to stage 0).
    let mut shaped = job.clone();
    shaped.v_shape = c.schedule.placement() == ChunkPlacement::VShape;
    shaped.gpus_per_node = c.network.gpus_per_node;
    let job = &shaped;
    let groups = 2 * s.pp;
    if job.v_shape && job.accounts_in_split() {
        return Err(RunError::Sim(SimError::InvalidConfig {
            name: "schedule",
            reason: format!(
                "{} places two chunks per stage in a V: the embedding or loss counted in the pipeline split is modelled with looped chunks",
                c.schedule.name()
            ),
        }));
    }
    if job.v_shape && job.is_uneven() {
        return Err(RunError::Sim(SimError::InvalidConfig {
            name: "schedule",
            reason: format!(
                "{} places two chunks per stage in a V: first/last-stage layer counts are modelled with one chunk per stage",
                c.schedule.name()
            ),
        }));
    }
    if job.v_shape && !job.model.num_layers.is_multiple_of(groups) {
        return Err(RunError::Sim(SimError::InvalidConfig {
            name: "schedule",
            reason: format!(
                "{} places two chunks per stage: {} layers are not divisible by 2 x PP = {groups}",
                c.schedule.name(),
                job.model.num_layers
            ),
        }));
    }
    let name = job.model.name.clone();
    let described = super::build::described_job(job, &name);
    let kernels_per_iteration = super::build::kernels_per_iteration(&described);
    let spec = JobSpec::from_described(&described, &DescribedOptions::default())?;
    let cost = cost_for(spec.parallel, &c, None)?;
    let mut result = simulate_with(&spec, &c, cost.as_ref())?;
    let whatif = if c.summary_only && blame.is_none() {
        None
    } else {
        crate::whatif::report(&spec, &c, cost.as_ref(), blame)?
    };
    let expert_tp = job.expert_layout_label();
    let mut notes = vec![format!(
        "model-level job: {} ({:.2} B parameters) on {} x {}, TP {} PP {} DP {} EP {}{expert_tp}, {} micro-batches of {} x {} tokens",
        job.model.name,
        job.model.parameters().total as f64 / 1e9,
        job.world,
        job.gpu.name,
        s.tp,
        s.pp,
        job.dp,
        s.ep,
        job.micro_batches,
        s.micro_batch_size,
        s.seq_length
    )];
    push_unique(&mut warnings, spec.warnings.iter().cloned());
    push_unique(&mut warnings, result.summary.warnings.iter().cloned());
    push_unique(&mut notes, result.summary.notes.iter().cloned());
    if whatif.is_some() && c.faults.has_windows() {
        notes.push(crate::whatif::WINDOW_NOTE.to_string());
    }
    // Chunks whose activations are held at the peak: what the simulated
    // schedule held (closed form where the summary has no count).
    let in_flight: Vec<u32> = (0..s.pp)
        .map(|st| {
            result
                .summary
                .stages
                .get(st as usize)
                .map(|x| x.peak_activation_chunks)
                .filter(|k| *k > 0)
                .unwrap_or_else(|| peak_in_flight(c.schedule, s.pp, job.micro_batches, s.vpp, st))
        })
        .collect();
    let logits = if c.schedule == ScheduleKind::GPipe {
        job.micro_batches
    } else {
        1
    };
    let memory = memory_report(job, &in_flight, logits);
    // The timeline's activation memory lanes in bytes: the simulated chunk
    // counts times the memory model's bytes per chunk, each lane's peak
    // with what is resident then (a summary-only run has no timeline to
    // put them in).
    if !c.summary_only {
        let mut counters = activation_counters(
            &result.timeline,
            &result.activations,
            Some(&chunk_activation_bytes(job)),
        );
        for lane in &mut counters {
            let stage = memory.per_stage.iter().find(|m| m.stage == lane.stage);
            if let (Some(peak), Some(m)) = (lane.peak.as_mut(), stage) {
                peak.resident = resident_at_peak(m);
            }
        }
        result.timeline.set_counters(counters);
    }
    push_unique(&mut warnings, memory.messages.iter().cloned());
    let throughput = job.throughput(result.summary.iteration_time_ns);
    let run = RunOutput {
        schema_version: RUN_SCHEMA_VERSION,
        mode: "event",
        kind: "model",
        format: described.format,
        files: Vec::new(),
        parallel: spec.parallel,
        config: c,
        result,
        measured: None,
        comparison: None,
        calibration: None,
        assumed_ranks: Vec::new(),
        inferred: None,
        analysis: None,
        slow_rank: None,
        whatif,
        warnings: as_warning_lines(Vec::new(), warnings),
        notes,
    };
    Ok(ModelRunOutput {
        run,
        job: shaped,
        throughput,
        memory,
        calibration: None,
        kernels_per_iteration,
    })
}

/// What a stage holds at its peak: the memory model's parts (the activations being the schedule's peak), as the
/// JSON's `resident_at_peak` and the timeline's peak marker give them.
pub fn resident_at_peak(m: &StageMemory) -> Vec<ResidentPart> {
    [
        ("weights", m.weights_bytes),
        ("gradients", m.gradients_bytes),
        ("optimizer", m.optimizer_bytes),
        ("activations", m.activations_bytes),
        ("logits", m.logits_bytes),
        ("unsharded_unit", m.unsharded_unit_bytes),
        (
            "buffers",
            m.workspace_bytes + m.cuda_graph_bytes + m.nccl_bytes,
        ),
    ]
    .into_iter()
    .map(|(name, size_bytes)| ResidentPart {
        name: name.to_string(),
        size_bytes,
    })
    .collect()
}

impl ModelRunOutput {
    /// Attach a calibration fit to this output (its note and its numbers).
    pub fn attach_calibration(&mut self, fit: CalibrationFit) {
        self.run.notes.push(format!(
            "calibrated on {} ({}): compute scale {:.4}, measured {:.1} ms, the measured configuration simulated {:.1} ms before and {:.1} ms after",
            fit.files.join(", "),
            fit.format.name(),
            fit.compute_scale(),
            fit.measured_iteration_time_ns as f64 / 1e6,
            fit.uncalibrated_iteration_time_ns as f64 / 1e6,
            fit.calibrated_iteration_time_ns as f64 / 1e6
        ));
        self.calibration = Some(fit);
    }

    /// The JSON of `trainscope simulate --model ... --json`.
    pub fn report_json(&self) -> Value {
        let mut v = self.run.report_json();
        let m = &self.job.model;
        let counts = m.parameters();
        let s = &self.job.setup;
        v["model"] = json!({
            "name": m.name,
            "family": m.family.name(),
            "source": m.source,
            "parameters": counts.total,
            "active_parameters": counts.active,
            "layers": m.num_layers,
            "hidden_size": m.hidden_size,
        });
        v["training"] = json!({
            "tp": s.tp, "pp": s.pp, "dp": self.job.dp, "ep": s.ep, "vpp": s.vpp,
            "world": self.job.world,
            "sequence_parallel": s.sequence_parallel,
            "micro_batch_size": s.micro_batch_size,
            "global_batch_size": self.job.global_batch_size,
            "micro_batches": self.job.micro_batches,
            "seq_length": s.seq_length,
            "precision": s.precision.name(),
            "recompute": s.recompute.name(),
            "distributed_optimizer": s.distributed_optimizer,
            "zero": s.sharding.zero.level(),
            "flash_attention": s.flash_attention,
            "gpu": self.job.gpu.name,
            "stack": s.stack.stack.name(),
            "cuda_graphs": s.stack.cuda_graphs.name(),
            "host_launch_ns_per_kernel": s.stack.per_kernel_ns(),
            "attention_kernel": s.stack.attention_kernel.name(),
        });
        if m.moe.is_some() {
            // How the MoE layers run (model::dispatcher).
            v["training"]["moe_token_dispatcher"] = json!(s.stack.dispatcher.name());
            v["training"]["moe_fusion"] = json!(s.stack.moe_fused());
            v["training"]["moe_a2a_overlap"] = json!(s.stack.moe_a2a_overlap);
            v["training"]["moe_imbalance"] = json!(s.stack.moe_imbalance());
        }
        if s.stack.tp_comm_overlap {
            v["training"]["tp_comm_overlap"] = json!(true);
        }
        v["kernels_per_iteration"] = json!(self.kernels_per_iteration);
        if s.cp > 1 {
            // Context parallelism: world = TP x CP x PP x DP.
            v["training"]["cp"] = json!(s.cp);
        }
        if s.sharding.zero == super::sharding::ZeroStage::Parameters {
            // ZeRO-3 / FSDP: units gathered ahead, resharding.
            v["training"]["fsdp_prefetch"] = json!(s.sharding.prefetch);
            v["training"]["reshard_after_forward"] = json!(s.sharding.reshard_after_forward);
            if let Some((shard, replicate)) = super::sharding::hsdp(&self.job) {
                // HSDP: ZeRO-3 inside groups of `shard` ranks.
                v["training"]["hsdp_shard"] = json!(shard);
                v["training"]["hsdp_replicate"] = json!(replicate);
            }
        }
        if s.sharding.offload != super::sharding::Offload::None {
            // Offload: what lives in host memory, over which link.
            v["training"]["offload"] = json!(s.sharding.offload.name());
            v["training"]["pcie_gbps"] = json!(self.job.gpu.pcie_gbps);
        }
        if s.bf16_grads {
            // Gradients kept and reduced in bf16.
            v["training"]["bf16_grads"] = json!(true);
        }
        if s.fp8_param_gather {
            // Linear weights stored and all-gathered in FP8.
            v["training"]["fp8_param_gather"] = json!(true);
        }
        if let Some(etp) = s.expert_tp {
            // Expert TP other than TP: the experts' own layout.
            v["training"]["expert_tp"] = json!(etp);
            v["training"]["expert_dp"] = json!(self.job.expert_dp());
        }
        if self.job.is_uneven() {
            // The layers of every stage, first to last.
            v["training"]["stage_layers"] = (0..s.pp)
                .map(|st| self.job.stage_layer_range(st).len())
                .collect::<Vec<_>>()
                .into();
        }
        if self.job.accounts_in_split() {
            // Megatron's flags, and the layers of every chunk of every
            // stage (stage-major, chunks in run order).
            v["training"]["account_for_embedding"] = json!(s.account_for_embedding);
            v["training"]["account_for_loss"] = json!(s.account_for_loss);
            v["training"]["chunk_layers"] = (0..s.pp)
                .map(|st| {
                    super::layout::stage_chunk_layers(&self.job, st)
                        .iter()
                        .map(Vec::len)
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
                .into();
        }
        v["mfu"] = json!(self.throughput.mfu);
        v["model_tflops_per_gpu"] = json!(self.throughput.model_tflops_per_gpu);
        v["tokens_per_second"] = json!(self.throughput.tokens_per_second);
        v["model_flops_per_iteration"] = json!(self.throughput.model_flops_per_iteration);
        v["memory"] = json!({
            "per_stage": self.memory.per_stage.iter().map(|st| json!({
                "stage": st.stage,
                "parameters": st.parameters,
                "weights_bytes": st.weights_bytes,
                "gradients_bytes": st.gradients_bytes,
                "optimizer_bytes": st.optimizer_bytes,
                "activations_bytes": st.activations_bytes,
                "activation_chunks_in_flight": st.in_flight,
                "logits_bytes": st.logits_bytes,
                "unsharded_unit_bytes": st.unsharded_unit_bytes,
                "workspace_bytes": st.workspace_bytes,
                "cuda_graph_bytes": st.cuda_graph_bytes,
                "allocated_bytes": st.allocated_bytes,
                "nccl_bytes": st.nccl_bytes,
                "context_bytes": st.context_bytes,
                "peak_bytes": st.peak_bytes,
                "fragmentation_bytes": st.fragmentation_bytes,
                "reserved_bytes": st.reserved_bytes,
                "largest_part": st.parts()[0].0,
            })).collect::<Vec<_>>(),
            "capacity_bytes": self.memory.capacity_bytes,
            "fits": self.memory.fits,
        });
        if self.job.setup.sharding.offload != super::sharding::Offload::None {
            // Offload: what each stage keeps in host memory instead.
            if let Some(stages) = v["memory"]["per_stage"].as_array_mut() {
                for (st, m) in stages.iter_mut().zip(&self.memory.per_stage) {
                    st["host_bytes"] = json!(m.host_bytes);
                }
            }
        }
        // The peak's time per stage (its first rank's activation series)
        // and what is resident then: the stage's parts, the activations
        // being the schedule's peak.
        if let Some(stages) = v["memory"]["per_stage"].as_array_mut() {
            for (st, m) in stages.iter_mut().zip(&self.memory.per_stage) {
                let Some(a) = self
                    .run
                    .result
                    .activations
                    .iter()
                    .find(|a| a.stage == m.stage)
                else {
                    continue;
                };
                st["peak_time_ns"] = json!(a.peak_time_ns());
                let mut resident = serde_json::Map::new();
                for part in resident_at_peak(m) {
                    resident.insert(format!("{}_bytes", part.name), json!(part.size_bytes));
                }
                resident.insert(
                    "micro_batches_in_flight".into(),
                    json!(a.peak_micro_batches()),
                );
                st["resident_at_peak"] = Value::Object(resident);
            }
        }
        v["calibration"] = json!(self.calibration);
        // The schedule's activation peak per stage in bytes, next to its
        // count of micro-batches in the stage summaries.
        if let Some(stages) = v["stages"].as_array_mut() {
            for st in stages {
                let i = st["stage"].as_u64().unwrap_or(u64::MAX) as usize;
                if let Some(m) = self.memory.per_stage.get(i) {
                    st["peak_activation_bytes"] = json!(m.activations_bytes);
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::gpu_preset;
    use crate::job::tests::{llama3_70b, setup};

    #[test]
    fn llama3_70b_on_1024_h100() {
        let gpu = gpu_preset("H100").unwrap();
        let j = ModelJob::new(llama3_70b(), setup(8, 8, 256), gpu, Some(1024)).unwrap();
        let out = run_model(&j, &SimConfig::default()).unwrap();
        // One activation memory lane per stage, in bytes, peaking at the
        // memory model's activations of the schedule's peak.
        let counters = out.run.result.timeline.counters();
        assert_eq!(counters.len(), out.memory.per_stage.len());
        for (c, m) in counters.iter().zip(&out.memory.per_stage) {
            assert_eq!(c.unit, crate::timeline::CounterUnit::Bytes);
            assert_eq!(
                c.max_value(),
                m.activations_bytes as f64,
                "stage {}",
                c.stage
            );
        }
        let v = out.report_json();
        eprintln!("{}", serde_json::to_string_pretty(&v["memory"]).unwrap());
        eprintln!(
            "iter {} ms mfu {} tflops {} bubble {} exposed {}",
            out.run.summary().iteration_time_ns as f64 / 1e6,
            out.throughput.mfu,
            out.throughput.model_tflops_per_gpu,
            out.run.summary().bubble_ns as f64 / 1e6,
            v["exposed_comm_total_ns"]
        );
        eprintln!("{:?}", out.run.warnings);
        assert!(out.throughput.mfu > 0.2 && out.throughput.mfu < 0.7);
    }

    #[test]
    fn every_schedule_runs_and_memory_follows_its_peak() {
        let gpu = gpu_preset("H100").unwrap();
        let mut s = setup(2, 4, 16);
        s.seq_length = 2048;
        let j = ModelJob::new(
            crate::model::presets::preset("llama3-8b").unwrap(),
            s,
            gpu,
            Some(8),
        )
        .unwrap();
        assert_eq!(j.micro_batches, 16);
        let mut times = Vec::new();
        for schedule in ScheduleKind::ALL {
            let c = SimConfig {
                schedule,
                virtual_stages: if schedule == ScheduleKind::Interleaved {
                    2
                } else {
                    1
                },
                ..SimConfig::default()
            };
            let out = match run_model(&j, &c) {
                Ok(o) => o,
                // Interleaving needs --vpp on a model-level job.
                Err(e) => {
                    assert_eq!(schedule, ScheduleKind::Interleaved, "{e}");
                    continue;
                }
            };
            let v = out.report_json();
            assert_eq!(v["schedule"], schedule.name());
            for (st, m) in out.memory.per_stage.iter().enumerate() {
                let summary = &out.run.summary().stages[st];
                assert_eq!(
                    m.in_flight, summary.peak_activation_chunks,
                    "{schedule:?} stage {st}"
                );
                assert_eq!(
                    v["stages"][st]["peak_activation_bytes"],
                    m.activations_bytes
                );
                // The peak's time: the first rank's series holds its peak
                // then and less just before; the breakdown reuses the parts.
                let a = out
                    .run
                    .result
                    .activations
                    .iter()
                    .find(|a| a.stage == m.stage)
                    .unwrap();
                let t = v["memory"]["per_stage"][st]["peak_time_ns"]
                    .as_u64()
                    .unwrap();
                assert!(
                    t > 0 && t <= out.run.summary().iteration_time_ns,
                    "{schedule:?} {st}"
                );
                assert_eq!(a.at(t), a.peak_chunks, "{schedule:?} stage {st}");
                assert!(a.at(t - 1) < a.peak_chunks, "{schedule:?} stage {st}");
                let r = &v["memory"]["per_stage"][st]["resident_at_peak"];
                assert_eq!(r["activations_bytes"], m.activations_bytes);
                assert_eq!(r["weights_bytes"], m.weights_bytes);
                assert_eq!(r["micro_batches_in_flight"], a.peak_micro_batches());
                // The timeline's memory lane of the stage marks the same
                // peak with the same parts.
                let lane = out
                    .run
                    .result
                    .timeline
                    .counters()
                    .iter()
                    .find(|c| c.stage == m.stage)
                    .unwrap();
                let peak = lane.peak.as_ref().unwrap();
                assert_eq!(peak.time_ns, t, "{schedule:?} stage {st}");
                assert_eq!(peak.micro_batches_in_flight, a.peak_micro_batches());
                for part in &peak.resident {
                    assert_eq!(r[format!("{}_bytes", part.name)], part.size_bytes);
                }
            }
            let output_stage = if schedule.placement() == ChunkPlacement::VShape {
                0
            } else {
                3
            };
            assert!(
                out.memory.per_stage[output_stage].logits_bytes > 0,
                "{schedule:?}"
            );
            times.push((schedule, out.run.summary().iteration_time_ns));
        }
        assert_eq!(times.len(), ScheduleKind::ALL.len() - 1);
        let t = |k: ScheduleKind| times.iter().find(|x| x.0 == k).unwrap().1;
        assert!(t(ScheduleKind::ZbH1) < t(ScheduleKind::OneFOneB));
        assert!(t(ScheduleKind::GPipe) >= t(ScheduleKind::OneFOneB));
        // 1F1B holds p - s micro-batches on stage s.
        let one = run_model(&j, &SimConfig::default()).unwrap();
        let held: Vec<u32> = one.memory.per_stage.iter().map(|m| m.in_flight).collect();
        assert_eq!(held, vec![4, 3, 2, 1]);
        // --vpp with a non-interleaved schedule is refused.
        let mut s2 = j.setup.clone();
        s2.vpp = 2;
        let j2 = ModelJob::new(j.model.clone(), s2, j.gpu.clone(), Some(8)).unwrap();
        let c = SimConfig {
            schedule: ScheduleKind::ZbH1,
            ..SimConfig::default()
        };
        assert!(run_model(&j2, &c)
            .unwrap_err()
            .to_string()
            .contains("need the interleaved schedule"));
        let out = run_model(&j2, &SimConfig::default()).unwrap();
        assert_eq!(out.run.summary().schedule, "interleaved");
    }
}
