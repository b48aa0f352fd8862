//! Calibration of a model-level job from a measured run of the same model
//! on the same GPU type (`--calibrate-from FILE...`: an Optimus-Prime log,
//! the rank traces of an Echo job): the measured configuration (TP, PP, DP,
//! micro-batches and micro-batch size as the files state them) is built as
//! a model-level job of the given model, its compute scale is fitted so its
//! simulated iteration meets the measured one
//! ([`crate::engine::calibrate_compute_scale`]), and the job asked about is
//! then simulated with that scale. A user calibrates on the run they have
//! and asks about the one they do not.
//!
//! What one measured iteration time can identify is one factor: the
//! compute scale, reported also as the effective large-GEMM efficiency it
//! implies (the preset's divided by the scale). The network is not fitted
//! (an iteration time cannot separate it from compute); what the files do
//! not say (the sequence length, the precision) is taken from the job asked
//! about, and each such assumption is a note.

use super::{ModelJob, TrainingSetup};
use crate::engine::described::DescribedOptions;
use crate::engine::simai_cost::cost_for;
use crate::engine::{calibrate_compute_scale, JobSpec, ScheduleKind, SimConfig};
use crate::inspect::{failed_file_errors, load_set, LoadOptions};
use crate::run::RunError;
use crate::workload::Format;
use serde::Serialize;

/// One fitted parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FittedParameter {
    pub name: &'static str,
    pub value: f64,
    /// What it means.
    pub meaning: &'static str,
}

/// What a calibration from a measured run found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationFit {
    /// The measured run's files and format.
    pub files: Vec<String>,
    pub format: Format,
    /// The measured iteration time the fit meets, ns.
    pub measured_iteration_time_ns: u64,
    /// The measured configuration as a model-level job.
    pub reference: TrainingSetup,
    /// The measured configuration simulated before the fit, ns.
    pub uncalibrated_iteration_time_ns: u64,
    /// ... and with the fitted compute scale, ns.
    pub calibrated_iteration_time_ns: u64,
    /// Every parameter fitted, with its value.
    pub fitted: Vec<FittedParameter>,
    /// Assumptions made and what the fit cannot identify.
    pub notes: Vec<String>,
}

impl CalibrationFit {
    /// The fitted compute scale (every compute duration is multiplied by it).
    pub fn compute_scale(&self) -> f64 {
        self.fitted
            .iter()
            .find(|f| f.name == "compute_scale")
            .map_or(1.0, |f| f.value)
    }
}

/// Fit the compute scale of `job`'s model on GPU `job.gpu` to the measured
/// run in `files` (see the module documentation). `config` is the cluster
/// of the measured run.
pub fn calibrate_from(
    job: &ModelJob,
    files: &[(&str, &[u8])],
    config: &SimConfig,
) -> Result<CalibrationFit, RunError> {
    let set = load_set(files, None, &LoadOptions::default());
    let errors = failed_file_errors(&set.summaries);
    if !errors.is_empty() {
        return Err(RunError::Parse(errors));
    }
    let [run] = set.runs.as_slice() else {
        return Err(RunError::Usage(format!(
            "--calibrate-from needs one measured run (an Optimus-Prime log or the rank traces of one Echo job); the files hold {} measured run(s) and {} workload(s)",
            set.runs.len(),
            set.described.len()
        )));
    };
    let Some(measured) = run.steady_iteration_ns().filter(|t| *t > 0) else {
        return Err(RunError::Usage(
            "the measured run has no iteration time to calibrate against".to_string(),
        ));
    };
    let p = &run.parallel;
    let mut notes = Vec::new();
    let mbs = match p.micro_batch_size {
        Some(b) => b,
        None => {
            notes.push(format!(
                "the measured run does not state its micro-batch size: assumed the job's {}",
                job.setup.micro_batch_size
            ));
            job.setup.micro_batch_size
        }
    };
    notes.push(format!(
        "the measured run's files do not state its sequence length or precision: assumed the job's ({} tokens, {})",
        job.setup.seq_length,
        job.setup.precision.name()
    ));
    let gbs = u64::from(p.micro_batches.max(1)) * u64::from(mbs) * u64::from(p.dp.max(1));
    let reference = TrainingSetup {
        tp: p.tp,
        pp: p.pp,
        dp: Some(p.dp.max(1)),
        cp: 1,
        ep: 1,
        expert_tp: None,
        vpp: 1,
        sequence_parallel: false,
        micro_batch_size: mbs,
        global_batch_size: Some(u32::try_from(gbs).unwrap_or(u32::MAX)),
        seq_length: job.setup.seq_length,
        precision: job.setup.precision,
        recompute: super::Recompute::None,
        distributed_optimizer: false,
        flash_attention: job.setup.flash_attention,
        first_stage_layers: None,
        last_stage_layers: None,
        account_for_embedding: false,
        account_for_loss: false,
        bf16_grads: false,
        fp8_param_gather: false,
        stack: job.setup.stack,
        sharding: super::sharding::Sharding::default(),
    };
    let ref_job = ModelJob::new(job.model.clone(), reference.clone(), job.gpu.clone(), None)
        .map_err(|e| {
            RunError::Usage(format!(
                "the measured run ({} x TP {} PP {} DP {}) is not a valid job of {}: {}",
                run.format.name(),
                p.tp,
                p.pp,
                p.dp,
                job.model.name,
                e.message
            ))
        })?;
    let fit = fit_compute_scale(&ref_job, config, measured)?;
    notes.push(
        "one iteration time identifies one factor: the compute scale; the network is not fitted"
            .to_string(),
    );
    Ok(CalibrationFit {
        files: set.summaries.iter().map(|s| s.file.clone()).collect(),
        format: run.format,
        measured_iteration_time_ns: measured,
        reference: ref_job.setup.clone(),
        uncalibrated_iteration_time_ns: fit.uncalibrated_ns,
        calibrated_iteration_time_ns: fit.calibrated_ns,
        fitted: vec![
            FittedParameter {
                name: "compute_scale",
                value: fit.compute_scale,
                meaning: "every compute duration of the model is multiplied by it",
            },
            FittedParameter {
                name: "effective_gemm_efficiency",
                value: job.gpu.efficiency.gemm_max / fit.compute_scale,
                meaning: "the large-GEMM efficiency the scale implies (the preset's / the scale)",
            },
        ],
        notes,
    })
}

/// A compute scale fitted to one iteration time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScaleFit {
    pub compute_scale: f64,
    /// The job simulated with scale 1, ns.
    pub uncalibrated_ns: u64,
    /// ... and with the fitted scale, ns.
    pub calibrated_ns: u64,
}

/// Fit the compute scale for which `job`, simulated as [`super::run::run_model`]
/// simulates it under `config`'s cluster (1F1B unless it interleaves), meets
/// `target_ns`.
pub fn fit_compute_scale(
    job: &ModelJob,
    config: &SimConfig,
    target_ns: u64,
) -> Result<ScaleFit, RunError> {
    let mut base = config.clone();
    base.schedule = if job.setup.vpp > 1 {
        ScheduleKind::Interleaved
    } else {
        ScheduleKind::OneFOneB
    };
    base.virtual_stages = job.setup.vpp;
    base.micro_batches = None;
    base.activation_bytes = None;
    base.backward_factor = None;
    base.compute_scale = 1.0;
    let described = super::build::described_job(job, &job.model.name);
    let spec = JobSpec::from_described(&described, &DescribedOptions::default())?;
    let cost = cost_for(spec.parallel, &base, None)?;
    let uncalibrated = crate::engine::simulate_with(&spec, &base, cost.as_ref())?;
    let cal = calibrate_compute_scale(&spec, &base, cost.as_ref(), target_ns)?;
    Ok(ScaleFit {
        compute_scale: cal.compute_scale,
        uncalibrated_ns: uncalibrated.summary.iteration_time_ns,
        calibrated_ns: cal.result.summary.iteration_time_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::gpu_preset;
    use crate::job::run::run_model;
    use crate::model::presets::preset;

    const OPTIMUS: &str =
        include_str!("../../../../tests/fixtures/seeds/optimus_prime_llama1b_pp8_train.log");

    fn job(pp: u32, mbs: u32, gbs: u32) -> ModelJob {
        let setup = TrainingSetup {
            pp,
            micro_batch_size: mbs,
            global_batch_size: Some(gbs),
            seq_length: 512,
            ..TrainingSetup::default()
        };
        ModelJob::new(
            preset("llama3.2-1b").unwrap(),
            setup,
            gpu_preset("A40").unwrap(),
            Some(8),
        )
        .unwrap()
    }

    #[test]
    fn fits_the_optimus_log_and_predicts_another_layout() {
        let files = [("train.log", OPTIMUS.as_bytes())];
        let config = SimConfig::default();
        let same = job(8, 1, 32);
        let fit = calibrate_from(&same, &files, &config).unwrap();
        assert_eq!(
            (fit.reference.tp, fit.reference.pp, fit.reference.dp),
            (1, 8, Some(1))
        );
        assert_eq!(fit.reference.global_batch_size, Some(32));
        let m = fit.measured_iteration_time_ns;
        assert!(fit.calibrated_iteration_time_ns.abs_diff(m) <= m / 5_000);
        assert!(fit.compute_scale() > 1.0, "{}", fit.compute_scale());
        assert_eq!(fit.fitted[1].name, "effective_gemm_efficiency");
        // The measured layout with the fitted scale meets the measurement.
        let mut c = config.clone();
        c.compute_scale = fit.compute_scale();
        let t = run_model(&same, &c)
            .unwrap()
            .run
            .summary()
            .iteration_time_ns;
        assert!(t.abs_diff(m) <= m / 5_000, "{t} vs {m}");
        // Another layout of the same model is a prediction with that scale.
        let other = run_model(&job(4, 2, 32), &c).unwrap();
        assert_ne!(other.run.summary().iteration_time_ns, t);
    }

    #[test]
    fn refuses_a_workload_and_a_layout_the_model_cannot_take() {
        let simai =
            include_str!("../../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");
        let err = calibrate_from(
            &job(8, 1, 32),
            &[("w.txt", simai.as_bytes())],
            &SimConfig::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("needs one measured run"), "{err}");
        // llama3-8b has 32 layers: PP 8 works, but the log is a 1B model's
        // run of PP 8; a 3-layer toy model cannot be split in 8.
        let mut toy = preset("llama3.2-1b").unwrap();
        toy.num_layers = 3;
        let j = ModelJob::new(
            toy,
            TrainingSetup::default(),
            gpu_preset("A40").unwrap(),
            None,
        )
        .unwrap();
        let err = calibrate_from(
            &j,
            &[("train.log", OPTIMUS.as_bytes())],
            &SimConfig::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("is not a valid job of"), "{err}");
    }
}
