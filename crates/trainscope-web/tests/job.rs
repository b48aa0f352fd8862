//! Browser tests of the "Describe a job" panel (`wasm-pack test --headless
//! --chrome`): the job's text fields and their link form, the worker
//! simulating a preset (memory per stage, MFU, the timeline, the CLI's
//! JSON as the summary download), the core's refusal of an invalid TP word
//! for word, the reducer (what activates the job, a dropped config.json
//! adopted by the panel, removing it), the NVLink bandwidth of the job's
//! GPU, and the mounted panel and results (test ids, the memory chart
//! drawn, the error shown), and the CP field (activations halved, the
//! link restoring it, the core's refusal).

#![cfg(target_arch = "wasm32")]

use std::collections::BTreeSet;
use std::rc::Rc;
use trainscope_core::hardware::{gpu_preset, Precision};
use trainscope_core::job::sharding::{Sharding, ZeroStage};
use trainscope_core::job::{ModelJob, Recompute, TrainingSetup};
use trainscope_core::model::attention_kernel::AttentionKernel;
use trainscope_core::model::presets::preset;
use trainscope_core::model::stack::{CudaGraphs, Stack, StackSettings};
use trainscope_web::compute;
use trainscope_web::job::{JobField, JobModel, JobSettings};
use trainscope_web::protocol::{
    decode_request, encode_request, Request, Response, RunRequest, RunView,
};
use trainscope_web::settings::{Field, Mode, Settings};
use trainscope_web::state::{Action, AppState, LoadedFile};
use trainscope_web::url::{from_fragment, job_fragment, to_fragment};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use yew::prelude::*;
use yew::Reducible;

wasm_bindgen_test_configure!(run_in_browser);

const LLAMA8B_CONFIG: &[u8] = include_bytes!("../../../tests/fixtures/hf/llama3_8b.json");

/// llama3-8b on 8 GPUs, TP 2, DP 4, a small batch (quick to simulate).
fn small_job(tp: u32) -> JobSettings {
    JobSettings {
        training: TrainingSetup {
            tp,
            dp: Some(8 / tp),
            global_batch_size: Some(32),
            ..JobSettings::default().training
        },
        ..JobSettings::default()
    }
}

fn job_request(id: u64, job: JobSettings) -> RunRequest {
    RunRequest {
        id,
        settings: Settings::default(),
        pinned: BTreeSet::new(),
        files: Vec::new(),
        job,
        job_active: true,
        compare_schedules: false,
    }
}

fn run(req: &RunRequest) -> RunView {
    compute::run(req, &mut |_| {})
}

// ---------------------------------------------------------------- settings and links

#[wasm_bindgen_test]
fn defaults_are_the_cores_and_fields_parse_as_the_cli_does() {
    let j = JobSettings::default();
    assert_eq!(
        j.setup(),
        TrainingSetup {
            dp: Some(1),
            ..TrainingSetup::default()
        }
    );
    assert_eq!(j.gpu, trainscope_core::job::DEFAULT_GPU);
    assert_eq!(j.model, JobModel::Preset("llama3-8b".into()));
    let mut j = JobSettings::default();
    j.set(JobField::Model, "LLAMA3-70B").unwrap();
    assert_eq!(j.model, JobModel::Preset("llama3-70b".into()));
    let e = j.set(JobField::Model, "llama3-7b").unwrap_err();
    assert!(e.starts_with("unknown model preset `llama3-7b`"), "{e}");
    assert!(e.contains("did you mean"), "{e}");
    j.set(JobField::Gpu, "h100").unwrap();
    assert_eq!(j.gpu, "H100-SXM");
    assert!(j
        .set(JobField::Gpu, "V100")
        .unwrap_err()
        .starts_with("unknown GPU type `V100`"));
    j.set(JobField::GlobalBatchSize, "").unwrap();
    assert_eq!(j.training.global_batch_size, None);
    // Uneven pipeline split: empty is the even split, a count the CLI's flag.
    j.set(JobField::FirstStageLayers, "4").unwrap();
    assert_eq!(j.setup().first_stage_layers, Some(4));
    assert_eq!(JobField::FirstStageLayers.flag(), "--first-stage-layers");
    j.set(JobField::FirstStageLayers, " ").unwrap();
    assert_eq!(j.training.first_stage_layers, None);
    assert!(j.set(JobField::LastStageLayers, "x").is_err());
    j.set(JobField::GlobalBatchSize, "64").unwrap();
    assert_eq!(j.get(JobField::GlobalBatchSize), "64");
    assert_eq!(
        j.set(JobField::Tp, "two").unwrap_err(),
        "`two` is not a whole number ≥ 0"
    );
    j.set(JobField::Precision, "FP8").unwrap();
    j.set(JobField::Recompute, "full").unwrap();
    assert_eq!(
        (j.training.precision, j.training.recompute),
        (Precision::Fp8, Recompute::Full)
    );
    assert!(j
        .set(JobField::Precision, "fp4")
        .unwrap_err()
        .starts_with("unknown precision `fp4`"));
    j.set(JobField::Model, "file:my/config.json").unwrap();
    assert_eq!(j.model, JobModel::File("my/config.json".into()));
    // Test ids.
    assert_eq!(JobField::Model.testid(), "job-model");
    assert_eq!(JobField::Tp.testid(), "job-tp");
    assert_eq!(JobField::DistributedOptimizer.testid(), "job-dist-opt");
}

#[wasm_bindgen_test]
fn a_link_carries_the_whole_job_and_names_a_dropped_file() {
    let job = JobSettings {
        model: JobModel::Preset("mixtral-8x7b".into()),
        gpu: "B200".into(),
        training: TrainingSetup {
            tp: 2,
            pp: 4,
            dp: Some(8),
            cp: 2,
            ep: 4,
            expert_tp: Some(1),
            vpp: 2,
            sequence_parallel: true,
            micro_batch_size: 2,
            global_batch_size: Some(256),
            seq_length: 8192,
            precision: Precision::Fp8,
            recompute: Recompute::Selective,
            distributed_optimizer: true,
            flash_attention: false,
            first_stage_layers: Some(7),
            last_stage_layers: Some(9),
            account_for_embedding: true,
            account_for_loss: true,
            bf16_grads: true,
            fp8_param_gather: true,
            stack: StackSettings {
                stack: Stack::TorchCompile,
                cuda_graphs: CudaGraphs::Layers,
                launch_ns_per_kernel: Some(12_500),
                dispatcher: trainscope_core::model::dispatcher::Dispatcher::Flex,
                moe_fusion: Some(false),
                moe_a2a_overlap: true,
                moe_imbalance_milli: Some(1_250),
                tp_comm_overlap: true,
                launch_queue_depth: Some(256),
                attention_kernel: AttentionKernel::Flash2,
            },
            sharding: Sharding {
                zero: ZeroStage::Parameters,
                prefetch: 2,
                reshard_after_forward: false,
                hsdp_shard: 4,
                offload: trainscope_core::job::sharding::Offload::OptimizerParams,
            },
        },
    };
    assert!(
        job.cli_command()
            .ends_with(" --zero 3 --fsdp-prefetch 2 --no-reshard-after-forward --hsdp-shard 4 --offload optimizer+params"),
        "{}",
        job.cli_command()
    );
    assert!(!job.cli_command().contains("--distributed-optimizer"));
    assert!(
        job.cli_command().contains(" --attention-kernel flash2"),
        "{}",
        job.cli_command()
    );
    let fragment = format!(
        "{}&{}",
        to_fragment(None, &Settings::default(), &BTreeSet::new()),
        job_fragment(&job)
    );
    for f in JobField::ALL {
        assert!(
            fragment.contains(&format!("{}=", f.key())),
            "{f}: {fragment}"
        );
    }
    let (state, notes) = from_fragment(&fragment);
    assert_eq!(notes, Vec::<String>::new());
    assert_eq!(state.job, Some(job.clone()));
    // A dropped file is named, not carried.
    let file = job.with_model(JobModel::File("conf ig.json".into()));
    let frag = job_fragment(&file);
    assert!(frag.starts_with("model_file=conf%20ig.json&"), "{frag}");
    assert_eq!(from_fragment(&frag).0.job, Some(file));
    // No job key: no job; a bad job value is a note, the rest applies.
    assert_eq!(from_fragment("mode=event&tp=2").0.job, None);
    let (state, notes) = from_fragment("model=llama3-70b&job_tp=x&job_pp=4");
    let j = state.job.expect("a job link");
    assert_eq!(
        (j.model.name(), j.training.tp, j.training.pp),
        ("llama3-70b", 1, 4)
    );
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("job_tp"), "{notes:?}");
    // The request carries the job to the worker.
    let req = Request::Run(job_request(3, job));
    assert_eq!(decode_request(&encode_request(&req)).unwrap(), req);
}

// ---------------------------------------------------------------- the worker

#[wasm_bindgen_test]
fn a_preset_job_runs_in_the_worker_with_memory_mfu_and_timeline() {
    let (out, source) = compute::run_with_source(&job_request(1, small_job(2)), &mut |_| {});
    assert_eq!(out.job.as_ref().and_then(|j| j.error.clone()), None);
    let r = out.result.expect("simulated");
    let m = r.model.as_ref().expect("model figures");
    assert!(m.mfu > 0.05 && m.mfu < 1.0, "{}", m.mfu);
    assert!(m.model_tflops_per_gpu > 10.0);
    let t = r.iteration_time_ns.unwrap() as f64 / 1e9;
    assert!((m.tokens_per_second - 32.0 * 4096.0 / t).abs() / m.tokens_per_second < 1e-9);
    assert_eq!(m.memory.stages.len(), 1);
    assert_eq!(m.memory.gpu, "H100-SXM");
    let st = &m.memory.stages[0];
    assert_eq!(
        st.peak_bytes,
        st.weights_bytes
            + st.gradients_bytes
            + st.optimizer_bytes
            + st.activations_bytes
            + st.logits_bytes
            + st.buffers_bytes
    );
    assert!(st.buffers_bytes > 0, "cuBLAS workspace, NCCL, context");
    // The event result around it: breakdown, timeline, downloads named
    // after the model.
    assert!(!r.breakdown.is_empty());
    assert_eq!(out.timelines.len(), 1);
    assert!(r
        .exports
        .iter()
        .any(|x| x.file_name == "llama3-8b.summary.json"));
    let json = trainscope_web::engine_run::export(&source.expect("exports"), "export-summary-json")
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["kind"], "model");
    assert_eq!(v["training"]["tp"], 2);
    assert_eq!(v["mfu"].as_f64(), Some(m.mfu));
    // Compare pairs the model's figures by key.
    let keys: Vec<String> = r.all_figures().into_iter().map(|f| f.key).collect();
    for k in [
        "mfu",
        "model_tflops_per_gpu",
        "tokens_per_second",
        "memory_peak",
    ] {
        assert!(keys.iter().any(|x| x == k), "{k}");
    }
}

#[wasm_bindgen_test]
fn changing_tp_changes_memory_and_mfu() {
    let figures = |tp| {
        let out = run(&job_request(1, small_job(tp)));
        let m = out.result.unwrap().model.unwrap();
        (m.mfu, m.memory.stages[0].weights_bytes)
    };
    let (mfu1, w1) = figures(1);
    let (mfu2, w2) = figures(2);
    assert_ne!(mfu1, mfu2);
    assert!(w2 < w1, "TP 2 halves the weights: {w1} -> {w2}");
}

#[wasm_bindgen_test]
fn an_invalid_tp_gets_the_cores_message_and_hint() {
    let out = run(&job_request(1, small_job(3)));
    assert!(out.result.is_none());
    let err = out.job.unwrap().error.expect("refused");
    let core = ModelJob::new(
        preset("llama3-8b").unwrap(),
        TrainingSetup {
            tp: 3,
            dp: Some(2),
            global_batch_size: Some(32),
            ..TrainingSetup::default()
        },
        gpu_preset("H100-SXM").unwrap(),
        None,
    )
    .unwrap_err()
    .to_diagnostic();
    assert_eq!(err, core);
    assert_eq!(
        err.message,
        "invalid model-level job: 32 attention heads are not divisible by TP 3"
    );
    assert_eq!(
        err.hint.as_deref(),
        Some("choose a TP that divides the head count")
    );
    // The SimAI-compatible mode does not run a described job.
    let mut req = job_request(2, small_job(2));
    req.settings.mode = Mode::Simai;
    let err = run(&req).job.unwrap().error.unwrap();
    assert!(err.message.contains("event-level"), "{}", err.message);
    // A named file that is not loaded (a link) says to drop it.
    let req = job_request(3, small_job(2).with_model(JobModel::File("c.json".into())));
    let err = run(&req).job.unwrap().error.unwrap();
    assert_eq!(err.message, "the model file `c.json` is not loaded");
}

#[wasm_bindgen_test]
fn a_cp_field_splits_the_sequences_halves_activations_and_its_link_restores_it() {
    // The field parses as the CLI's --cp and is the setup's CP.
    let mut j = small_job(2);
    j.set(JobField::Cp, "2").unwrap();
    assert_eq!(j.setup().cp, 2);
    assert_eq!(JobField::Cp.flag(), "--cp");
    assert_eq!(j.world(), 16, "TP x CP x PP x DP = 2 x 2 x 1 x 4");
    assert!(
        j.cli_command().contains(" --cp 2 --dp 4"),
        "{}",
        j.cli_command()
    );
    assert!(j.set(JobField::Cp, "x").is_err());
    // Memory: the same DP with CP 2 holds half the activations per rank.
    let memory = |job: JobSettings| {
        let out = run(&job_request(1, job));
        assert_eq!(out.job.as_ref().and_then(|x| x.error.clone()), None);
        let r = out.result.unwrap();
        let st = r.model.as_ref().unwrap().memory.stages[0].clone();
        (st.activations_bytes, r.all_figures())
    };
    let (a1, _) = memory(small_job(2));
    let (a2, figures) = memory(j.clone());
    assert_eq!(a2 * 2, a1);
    // CP communication is reported as its own group.
    assert!(
        figures.iter().any(|f| f.key == "comm.CP"),
        "{:?}",
        figures.iter().map(|f| &f.key).collect::<Vec<_>>()
    );
    // Every figure of the CP job has its definition.
    for f in &figures {
        assert!(
            trainscope_web::glossary::definition(trainscope_web::views::ResultKind::Event, &f.key)
                .is_some(),
            "`{}` has no definition",
            f.key
        );
    }
    // The link carries it.
    let (state, notes) = from_fragment(&job_fragment(&j));
    assert_eq!(notes, Vec::<String>::new());
    assert_eq!(state.job.as_ref().map(|x| x.training.cp), Some(2));
    assert!(job_fragment(&j).contains("job_cp=2"));
    // The core's refusal, word for word as the CLI prints it.
    let mut bad = j.clone();
    bad.set(JobField::Cp, "3").unwrap();
    let err = run(&job_request(2, bad))
        .job
        .unwrap()
        .error
        .expect("refused");
    assert_eq!(
        err.message,
        "invalid model-level job: sequence length 4096 is not divisible by 2 x CP = 2 x 3 = 6 (context parallelism splits every sequence into 2 x CP chunks)"
    );
}

#[wasm_bindgen_test]
fn an_expert_tp_field_folds_ep_over_tp_and_dp_and_its_link_restores_it() {
    // Qwen3-30B-A3B on 8 GPUs at TP 2: EP 8 is more than DP 4, so only the
    // folded layout (expert TP 1) runs it, as the CLI's --expert-tp 1.
    let mut j = JobSettings {
        model: JobModel::Preset("qwen3-30b-a3b".into()),
        training: TrainingSetup {
            tp: 2,
            dp: Some(4),
            ep: 8,
            sequence_parallel: true,
            global_batch_size: Some(8),
            ..JobSettings::default().training
        },
        ..JobSettings::default()
    };
    let refused = run(&job_request(1, j.clone())).job.unwrap().error;
    assert!(
        refused
            .as_ref()
            .is_some_and(|e| e.message.contains("EP 8 does not divide DP 4")),
        "{refused:?}"
    );
    j.set(JobField::ExpertTp, "1").unwrap();
    assert_eq!(j.setup().expert_tp, Some(1));
    assert!(
        j.cli_command().contains(" --ep 8 --expert-tp 1"),
        "{}",
        j.cli_command()
    );
    let out = run(&job_request(2, j.clone()));
    assert_eq!(out.job.as_ref().and_then(|x| x.error.clone()), None);
    let r = out.result.unwrap();
    assert!(r.all_figures().iter().any(|f| f.key == "comm.EP"));
    // Empty is TP (the default); the link carries a set value.
    let mut k = j.clone();
    k.set(JobField::ExpertTp, "").unwrap();
    assert_eq!(k.training.expert_tp, None);
    assert!(j.set(JobField::ExpertTp, "x").is_err());
    let (state, notes) = from_fragment(&job_fragment(&j));
    assert_eq!(notes, Vec::<String>::new());
    assert_eq!(
        state.job.as_ref().and_then(|x| x.training.expert_tp),
        Some(1)
    );
    assert!(job_fragment(&j).contains("job_etp=1"));
}

#[wasm_bindgen_test]
fn embedding_and_loss_in_the_split_run_126_layers_on_64_chunks_as_the_cli() {
    // Llama 3.1 405B's 126 layers on PP 8 x 8 virtual stages: refused
    // until the embedding and loss count as layers (128 / 64 = 2 a chunk).
    let mut j = JobSettings {
        model: JobModel::Preset("llama3-405b".into()),
        training: TrainingSetup {
            tp: 8,
            pp: 8,
            vpp: 8,
            dp: Some(1),
            sequence_parallel: true,
            global_batch_size: Some(8),
            ..JobSettings::default().training
        },
        ..JobSettings::default()
    };
    let refused = run(&job_request(1, j.clone())).job.unwrap().error.unwrap();
    assert!(
        refused
            .message
            .contains("126 layers are not divisible by PP x virtual stages = 8 x 8 = 64"),
        "{}",
        refused.message
    );
    j.set(JobField::AccountForEmbedding, "1").unwrap();
    j.set(JobField::AccountForLoss, "1").unwrap();
    assert!(JobField::AccountForLoss.is_check());
    assert!(
        j.cli_command().ends_with(
            " --sequence-parallel --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
        ),
        "{}",
        j.cli_command()
    );
    let out = run(&job_request(2, j.clone()));
    assert_eq!(out.job.as_ref().and_then(|x| x.error.clone()), None);
    assert!(out.result.is_some());
    let (state, _) = from_fragment(&job_fragment(&j));
    let back = state.job.unwrap();
    assert!(back.training.account_for_embedding && back.training.account_for_loss);
}

#[wasm_bindgen_test]
fn the_bf16_gradients_box_halves_the_gradient_memory_as_the_cli_flag() {
    let grads = |job: JobSettings| {
        let out = run(&job_request(1, job));
        assert_eq!(out.job.as_ref().and_then(|x| x.error.clone()), None);
        out.result.unwrap().model.unwrap().memory.stages[0].gradients_bytes
    };
    let mut j = small_job(2);
    let fp32 = grads(j.clone());
    j.set(JobField::Bf16Grads, "1").unwrap();
    assert!(
        j.cli_command().ends_with(" --no-grad-reduce-in-fp32"),
        "{}",
        j.cli_command()
    );
    assert_eq!(grads(j) * 2, fp32);
}

#[wasm_bindgen_test]
fn the_jobs_gpu_sets_nvlink_unless_the_user_set_it() {
    let iter = |job: JobSettings, pinned: &[(Field, &str)]| {
        let mut req = job_request(1, job);
        for (f, v) in pinned {
            req.settings.set(*f, v).unwrap();
            req.pinned.insert(*f);
        }
        run(&req).result.unwrap().iteration_time_ns.unwrap()
    };
    let h100 = iter(small_job(8), &[]);
    let mut a100 = small_job(8);
    a100.gpu = "A100-80G".into();
    let slow = iter(a100.clone(), &[]);
    assert_ne!(h100, slow);
    // The bandwidth the CLI would use: --gpu-type A100-80G.
    let core = |nvlink: f64| {
        let job = ModelJob::new(
            preset("llama3-8b").unwrap(),
            a100.setup(),
            gpu_preset("A100-80G").unwrap(),
            None,
        )
        .unwrap();
        let mut c = trainscope_core::engine::SimConfig::default();
        c.network.nvlink_gbps = nvlink;
        trainscope_core::job::run::run_model(&job, &c)
            .unwrap()
            .run
            .summary()
            .iteration_time_ns
    };
    assert_eq!(
        slow,
        core(gpu_preset("A100-80G").unwrap().nvlink_busbw_gbps)
    );
    // --nvlink-gbps 100 wins over the GPU's.
    assert_eq!(iter(a100.clone(), &[(Field::NvlinkBw, "100")]), core(100.0));
    // Configure's GPU type does not: the job's GPU is the one GPU choice.
    assert_eq!(iter(a100.clone(), &[(Field::Gpu, "H100")]), slow);
}

#[wasm_bindgen_test]
fn a_jobs_settings_are_what_configure_shows_and_the_worker_runs() {
    use trainscope_web::settings::Schedule;
    let mut job = small_job(8);
    job.gpu = "A100-80G".into();
    job.training.vpp = 2;
    let mut settings = Settings {
        schedule: Schedule::Gpipe,
        tp: 4,
        ..Settings::default()
    };
    let s = job.sim_settings(&settings, &BTreeSet::new());
    // Its virtual stages select the interleaved schedule (as --vpp does).
    assert_eq!(s.schedule, Schedule::Interleaved);
    assert_eq!(s.virtual_stages, 2);
    assert_eq!((s.tp, s.pp), (job.training.tp, job.training.pp));
    assert_eq!(
        s.nvlink_bw_gbps,
        gpu_preset("A100-80G").unwrap().nvlink_busbw_gbps
    );
    // A typed bandwidth wins; without virtual stages the schedule is Configure's.
    settings.nvlink_bw_gbps = 100.0;
    job.training.vpp = 1;
    let s = job.sim_settings(&settings, &BTreeSet::from([Field::NvlinkBw]));
    assert_eq!(s.nvlink_bw_gbps, 100.0);
    assert_eq!(s.schedule, Schedule::Gpipe);
}

#[wasm_bindgen_test]
fn echo_replays_take_the_network_the_user_set() {
    const ECHO: &[u8] =
        include_bytes!("../../../tests/fixtures/seeds/echo_megatron_trace_rank7_tp2_pp4.txt");
    let name = "echo_megatron_trace_rank7_tp2_pp4.txt";
    let iter = |pinned: &[(Field, &str)]| {
        let mut req = RunRequest {
            files: vec![trainscope_web::protocol::InputFile {
                name: name.into(),
                data: ECHO.to_vec().into(),
            }],
            job_active: false,
            ..job_request(1, JobSettings::default())
        };
        for (f, v) in pinned {
            req.settings.set(*f, v).unwrap();
            req.pinned.insert(*f);
        }
        let (config, options) =
            trainscope_web::engine_run::event_config(&req.settings, &req.pinned);
        let core = trainscope_core::run::run_files(&[(name, ECHO)], &config, &options)
            .unwrap()
            .summary()
            .iteration_time_ns;
        let page = run(&req).result.unwrap().iteration_time_ns.unwrap();
        assert_eq!(page, core);
        (page, options.network_overrides)
    };
    let (inferred, o) = iter(&[]);
    assert!(!o.nvlink_gbps && !o.nic_gbps && !o.latency && !o.algorithm);
    let (slow, o) = iter(&[(Field::NvlinkBw, "5")]);
    assert!(o.nvlink_gbps && !o.nic_gbps);
    assert_ne!(
        inferred, slow,
        "the typed NVLink bandwidth replaces the inferred one"
    );
    let (_, o) = iter(&[(Field::Oversubscription, "2"), (Field::Latency, "9")]);
    assert!(o.nic_gbps && o.latency && !o.nvlink_gbps);
}

// ---------------------------------------------------------------- the reducer

fn done(s: Rc<AppState>, id: u64, out: RunView) -> Rc<AppState> {
    let s = s.reduce(Action::RunStarted(id));
    s.reduce(Action::Worker(Response::Done {
        id,
        output: Box::new(out),
    }))
}

#[wasm_bindgen_test]
fn editing_the_job_makes_it_the_input_and_new_files_take_over() {
    let s = Rc::new(AppState::default());
    assert!(!s.can_run(), "nothing to simulate yet");
    assert!(s.can_run_job());
    let s = s.reduce(Action::JobEdit(JobField::Tp, "2".into()));
    assert!(s.job_active && s.can_run());
    assert_eq!(s.job.training.tp, 2);
    assert_eq!(s.edit_rev, 1, "runs after the pause, like a settings edit");
    let s = s.reduce(Action::JobEdit(JobField::Pp, "x".into()));
    assert!(!s.can_run() && !s.can_run_job());
    assert_eq!(s.job_text(JobField::Pp), "x");
    let s = s.reduce(Action::JobEdit(JobField::Pp, "1".into()));
    let rev = s.files_rev;
    let s = s.reduce(Action::RunJob);
    assert_eq!(s.files_rev, rev + 1, "the Run button runs at once");
    // New files replace the job as the input.
    let s = s.reduce(Action::Loaded {
        files: vec![("a.txt".into(), b"x".to_vec().into())],
        example: None,
    });
    assert!(!s.job_active);
    assert_eq!(s.job.training.tp, 2, "the panel keeps its values");
    // A link with a job restores it and makes it the input.
    let (url, _) = from_fragment("model=llama3-70b&job_tp=8");
    let s = s.reduce(Action::Restore(Box::new(url)));
    assert!(s.job_active);
    assert_eq!((s.job.model.name(), s.job.training.tp), ("llama3-70b", 8));
}

#[wasm_bindgen_test]
fn a_dropped_config_runs_as_the_job_and_the_panel_adopts_it() {
    let name = "Meta-Llama-3-8B/config.json";
    let s = Rc::new(AppState::default()).reduce(Action::JobEdit(JobField::Tp, "2".into()));
    let s = s.reduce(Action::Loaded {
        files: vec![(name.into(), LLAMA8B_CONFIG.to_vec().into())],
        example: None,
    });
    assert!(!s.job_active);
    let req = RunRequest {
        files: vec![trainscope_web::protocol::InputFile {
            name: name.into(),
            data: LLAMA8B_CONFIG.to_vec().into(),
        }],
        job_active: s.job_active,
        ..job_request(1, small_job(2))
    };
    let out = run(&req);
    let m = out.result.as_ref().unwrap().model.as_ref().unwrap();
    assert!(m.description.contains("TP 2"), "{}", m.description);
    // The same numbers as the preset of the same model.
    let preset_out = run(&job_request(2, small_job(2)));
    assert_eq!(
        out.result.as_ref().unwrap().iteration_time_ns,
        preset_out.result.unwrap().iteration_time_ns
    );
    let s = done(s, 1, out);
    assert!(s.job_active);
    assert_eq!(s.job.model, JobModel::File(name.into()));
    assert_eq!(s.model_files(), vec![name.to_string()]);
    // Removing the file: back to the preset, nothing to simulate.
    let s = s.reduce(Action::Remove(name.into()));
    assert!(!s.job_active && s.output.is_none());
    assert_eq!(s.job.model, JobModel::default());
}

#[wasm_bindgen_test]
fn a_dropped_config_without_a_layout_starts_from_the_fewest_gpus_it_fits_on() {
    let name = "Meta-Llama-3-8B/config.json";
    let s = Rc::new(AppState::default()).reduce(Action::Loaded {
        files: vec![(name.into(), LLAMA8B_CONFIG.to_vec().into())],
        example: None,
    });
    let req = RunRequest {
        files: vec![trainscope_web::protocol::InputFile {
            name: name.into(),
            data: LLAMA8B_CONFIG.to_vec().into(),
        }],
        job_active: false,
        ..job_request(1, JobSettings::default())
    };
    let out = run(&req);
    let start = out
        .job
        .as_ref()
        .and_then(|j| j.start.clone())
        .expect("a start");
    let m = out.result.as_ref().unwrap().model.as_ref().unwrap();
    assert!(m.memory.fits, "the starting layout fits");
    let t = &start.training;
    let world = t.tp * t.pp * t.dp.unwrap();
    assert!(world > 1, "8B with Adam does not fit one GPU");
    assert!(
        start.note.contains(&format!("on {world} × H100-SXM")),
        "{}",
        start.note
    );
    // The panel adopts it: its edits now run from that layout.
    let s = done(s, 1, out);
    assert!(s.job_active);
    assert_eq!(&s.job.training, t);
}

// ---------------------------------------------------------------- mounted

#[derive(Properties, PartialEq)]
struct PanelHostProps {
    init: Rc<AppState>,
}

/// The job panel over a reducer that starts from `init`.
#[component]
fn PanelHost(props: &PanelHostProps) -> Html {
    let init = props.init.clone();
    let state = use_reducer(move || (*init).clone());
    html! { <trainscope_web::components::job_panel::JobPanel state={state} /> }
}

async fn mount<C: yew::BaseComponent>(props: C::Properties) -> web_sys::Element {
    let document = gloo::utils::document();
    let host = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&host).unwrap();
    yew::Renderer::<C>::with_root_and_props(host.clone(), props).render();
    gloo::timers::future::TimeoutFuture::new(30).await;
    host
}

fn testid(host: &web_sys::Element, id: &str) -> web_sys::Element {
    host.query_selector(&format!("[data-testid='{id}']"))
        .unwrap()
        .unwrap_or_else(|| panic!("{id} rendered"))
}

#[wasm_bindgen_test]
async fn the_panel_renders_beside_the_drop_zone_with_its_test_ids() {
    let host = mount::<trainscope_web::app::App>(()).await;
    let panel = testid(&host, "job-panel");
    assert_eq!(panel.get_attribute("data-active").as_deref(), Some("false"));
    let ingest = host.query_selector(".ingest").unwrap().unwrap();
    assert!(ingest.contains(Some(&panel)), "beside the file drop");
    for id in [
        "job-model",
        "job-tp",
        "job-pp",
        "job-dp",
        "job-gpu",
        "job-run",
    ] {
        testid(&host, id);
    }
    let options = testid(&host, "job-model")
        .query_selector_all("option")
        .unwrap();
    assert_eq!(
        options.length() as usize,
        trainscope_core::model::presets::NAMES.len()
    );
    let model: web_sys::HtmlSelectElement = testid(&host, "job-model").unchecked_into();
    assert_eq!(model.value(), "llama3-8b");
    let gpu: web_sys::HtmlSelectElement = testid(&host, "job-gpu").unchecked_into();
    assert_eq!(gpu.value(), "H100-SXM");
    // Every control has a label.
    let controls = panel.query_selector_all("input, select").unwrap();
    assert!(controls.length() >= 15);
    for i in 0..controls.length() {
        let el: web_sys::Element = controls.get(i).unwrap().unchecked_into();
        let label = host
            .query_selector(&format!("label[for='{}']", el.id()))
            .unwrap();
        assert!(label.is_some(), "label for #{}", el.id());
    }
    host.remove();
}

#[wasm_bindgen_test]
async fn an_invalid_tp_shows_the_cores_message_in_the_panel() {
    let s = Rc::new(AppState::default()).reduce(Action::JobEdit(JobField::Tp, "3".into()));
    let out = run(&job_request(1, s.job.clone()));
    let s = done(s, 1, out);
    let host = mount::<PanelHost>(PanelHostProps { init: s }).await;
    let tp: web_sys::HtmlInputElement = testid(&host, "job-tp").unchecked_into();
    assert_eq!(tp.value(), "3");
    let text = testid(&host, "job-error").text_content().unwrap();
    assert!(
        text.contains("invalid model-level job: 32 attention heads are not divisible by TP 3"),
        "{text}"
    );
    assert!(
        text.contains("hint: choose a TP that divides the head count"),
        "{text}"
    );
    assert!(testid(&host, "job-cli")
        .text_content()
        .unwrap()
        .contains("--tp 3"));
    host.remove();
}

#[wasm_bindgen_test]
async fn a_preset_jobs_result_shows_mfu_and_draws_the_memory_chart() {
    let out = run(&job_request(
        1,
        JobSettings {
            training: TrainingSetup {
                pp: 2,
                ..small_job(2).training
            },
            ..small_job(2)
        },
    ));
    let r = out.result.unwrap();
    let m = r.model.clone().unwrap();
    let host = mount::<trainscope_web::components::results::Results>(yew::props!(
        trainscope_web::components::results::ResultsProps {
            result: r,
            on_pin: Callback::noop(),
            on_error: Callback::noop(),
            on_export: Callback::noop(),
        }
    ))
    .await;
    let mfu = testid(&host, "job-mfu");
    assert_eq!(
        mfu.get_attribute("data-value")
            .unwrap()
            .parse::<f64>()
            .unwrap(),
        m.mfu
    );
    assert!(mfu.text_content().unwrap().ends_with('%'));
    let rows = host
        .query_selector_all("[data-testid='job-memory-table'] [data-testid='job-memory-row']")
        .unwrap();
    assert_eq!(rows.length(), 2, "one row per stage");
    for i in 0..rows.length() {
        let row: web_sys::Element = rows.get(i).unwrap().unchecked_into();
        assert_eq!(
            row.get_attribute("data-peak-bytes").unwrap(),
            m.memory.stages[i as usize].peak_bytes.to_string()
        );
    }
    // The chart has ink: bars and the capacity line. It is drawn by an
    // effect after the render, which a loaded machine may run later than
    // `mount`'s wait: poll for it (up to 10 s) rather than race it.
    let canvas: web_sys::HtmlCanvasElement = testid(&host, "job-memory-chart").unchecked_into();
    let ctx: web_sys::CanvasRenderingContext2d =
        canvas.get_context("2d").unwrap().unwrap().unchecked_into();
    let mut coloured = 0;
    for _ in 0..200 {
        let data = ctx
            .get_image_data(0.0, 0.0, canvas.width() as f64, canvas.height() as f64)
            .unwrap()
            .data();
        coloured = data
            .chunks(4)
            .filter(|p| p[0] != p[1] || p[1] != p[2])
            .count();
        if coloured > 2000 {
            break;
        }
        gloo::timers::future::TimeoutFuture::new(50).await;
    }
    assert!(coloured > 2000, "{coloured} coloured pixels");
    host.remove();
}

#[wasm_bindgen_test]
async fn a_job_that_does_not_fit_says_so_per_stage() {
    // llama3-8b on one H100 without any parallelism: 8 B x 18 bytes > 80 GB.
    let out = run(&job_request(
        1,
        JobSettings {
            training: TrainingSetup {
                global_batch_size: Some(2),
                ..JobSettings::default().training
            },
            ..JobSettings::default()
        },
    ));
    let r = out.result.unwrap();
    let m = r.model.clone().unwrap();
    assert!(!m.memory.fits);
    assert_eq!(m.memory.messages.len(), 1);
    assert!(m.memory.messages[0].starts_with("does not fit on stage 0: needs "));
    assert!(
        !r.diagnostics
            .iter()
            .any(|d| d.message.contains("does not fit")),
        "shown once, in the memory panel"
    );
    let host = mount::<trainscope_web::components::results::Results>(yew::props!(
        trainscope_web::components::results::ResultsProps {
            result: r,
            on_pin: Callback::noop(),
            on_error: Callback::noop(),
            on_export: Callback::noop(),
        }
    ))
    .await;
    let msg = testid(&host, "job-memory-message").text_content().unwrap();
    assert_eq!(msg, m.memory.messages[0]);
    host.remove();
}

#[wasm_bindgen_test]
fn file_view_of_a_loaded_config_is_offered_as_a_model() {
    let s = AppState {
        files: vec![LoadedFile {
            name: "c.json".into(),
            data: LLAMA8B_CONFIG.to_vec().into(),
            view: Some(trainscope_web::views::FileView {
                name: "c.json".into(),
                format: Some("hf-config".into()),
                fields: Vec::new(),
                diagnostics: Vec::new(),
            }),
        }],
        ..AppState::default()
    };
    assert_eq!(s.model_files(), vec!["c.json".to_string()]);
}

#[wasm_bindgen_test]
async fn compare_pairs_two_jobs_by_mfu_and_names_the_job_that_changed() {
    use trainscope_web::components::compare::{Compare, CompareProps};
    use trainscope_web::state::PinnedResult;
    let result = |tp| run(&job_request(1, small_job(tp))).result.unwrap();
    let (a, b) = (result(1), result(2));
    let host = mount::<Compare>(yew::props!(CompareProps {
        pinned: PinnedResult {
            result: a.clone(),
            settings: Settings::default(),
            files: Vec::new(),
            run: 1,
        },
        current: Some((b.clone(), Settings::default(), Vec::new())),
        on_unpin: Callback::noop(),
    }))
    .await;
    let row = testid(&host, "compare")
        .query_selector("[data-testid='compare-row'][data-key='mfu']")
        .unwrap()
        .expect("an MFU row");
    let cell = |id: &str| {
        row.query_selector(&format!("[data-testid='{id}']"))
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap()
    };
    assert_eq!(
        cell("compare-a"),
        trainscope_web::format::percent(a.model.as_ref().unwrap().mfu)
    );
    assert!(
        cell("compare-delta").ends_with("pts"),
        "{}",
        cell("compare-delta")
    );
    let changes = testid(&host, "compare-changes").text_content().unwrap();
    assert!(
        changes.contains("the job (") && changes.contains("TP 2"),
        "{changes}"
    );
    assert!(testid(&host, "compare")
        .text_content()
        .unwrap()
        .contains("TP 1"));
    host.remove();
}

/// The memory lanes of a described job's timeline (PP 2) mark each stage's
/// peak at the run JSON's `memory.per_stage[i].peak_time_ns`, after the
/// trip from the worker (bincode), and hovering the marker shows what is
/// resident then in GiB and the micro-batches in flight, as the JSON's
/// `resident_at_peak` gives them.
#[wasm_bindgen_test]
async fn the_memory_lanes_mark_each_stages_peak_at_the_jsons_time() {
    let mut job = small_job(2);
    job.training.pp = 2;
    job.training.dp = Some(2);
    let (out, source) = compute::run_with_source(&job_request(1, job), &mut |_| {});
    let json = trainscope_web::engine_run::export(&source.expect("exports"), "export-summary-json")
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let stages = v["memory"]["per_stage"].as_array().unwrap();
    assert_eq!(stages.len(), 2);
    let bytes = trainscope_web::protocol::encode_timelines(1, &out.timelines);
    let Response::Timelines { timelines, .. } =
        trainscope_web::protocol::decode_timelines(&bytes).unwrap()
    else {
        panic!("timelines")
    };
    let tl = Rc::new(timelines[0].timeline.clone());
    let document = gloo::utils::document();
    let host = document.create_element("div").unwrap();
    host.set_attribute("style", "width:1100px").unwrap();
    document.body().unwrap().append_child(&host).unwrap();
    yew::Renderer::<trainscope_web::timeline::Timeline>::with_root_and_props(
        host.clone(),
        yew::props!(trainscope_web::timeline::TimelineProps { timeline: tl }),
    )
    .render();
    gloo::timers::future::TimeoutFuture::new(100).await;
    let c = testid(&host, "timeline");
    let marks: Vec<(u64, u64, f64)> = c
        .get_attribute("data-memory-peaks")
        .unwrap()
        .split(',')
        .map(|m| {
            let f: Vec<&str> = m.split(':').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(marks.len(), 2, "a marker per stage's lane");
    for (stage, time_ns, _) in &marks {
        let st = &stages[*stage as usize];
        assert_eq!(Some(*time_ns), st["peak_time_ns"].as_u64(), "stage {stage}");
        assert!(*time_ns > 0);
    }
    // Hover the first lane's marker.
    let rows: Vec<f64> = c
        .get_attribute("data-memory-rows")
        .unwrap()
        .split(',')
        .map(|r| {
            let (a, b) = r.split_once('-').unwrap();
            (a.parse::<f64>().unwrap() + b.parse::<f64>().unwrap()) / 2.0
        })
        .collect();
    let r = c.get_bounding_client_rect();
    let (stage, time_ns, x) = marks[0];
    let init = web_sys::MouseEventInit::new();
    init.set_bubbles(true);
    init.set_client_x((r.left() + x).round() as i32);
    init.set_client_y((r.top() + rows[0]).round() as i32);
    let e = web_sys::MouseEvent::new_with_mouse_event_init_dict("mousemove", &init).unwrap();
    c.dispatch_event(&e).unwrap();
    gloo::timers::future::TimeoutFuture::new(100).await;
    let tip = testid(&host, "tooltip");
    assert_eq!(
        tip.get_attribute("data-peak-time-ns"),
        Some(time_ns.to_string())
    );
    let text = tip.text_content().unwrap();
    let resident = &stages[stage as usize]["resident_at_peak"];
    let gib = trainscope_core::job::memory::gib;
    assert!(
        text.contains(&format!(
            "stage {stage} peaks at {:.3} ms",
            time_ns as f64 / 1e6
        )),
        "{text}"
    );
    for part in ["weights", "optimizer", "activations"] {
        let b = resident[format!("{part}_bytes")].as_u64().unwrap();
        assert!(
            text.contains(&format!("{part}{}", gib(b))),
            "{part}: {text}"
        );
    }
    let in_flight = resident["micro_batches_in_flight"].as_f64().unwrap();
    assert!(
        text.contains(&format!("micro-batches in flight{in_flight:.1}")),
        "{text}"
    );
    host.remove();
}

/// The Recompute select offers `op` (torchtitan's per-op checkpointing,
/// the core's `Recompute::ALL`) and the worker runs it as the CLI's
/// `--recompute op` does: the core's iteration time and activations.
#[wasm_bindgen_test]
fn the_recompute_select_runs_torchtitans_op_policy_as_the_core() {
    let mut job = small_job(2);
    job.set(JobField::Recompute, "op").unwrap();
    assert_eq!(job.training.recompute, Recompute::Op);
    assert!(job
        .set(JobField::Recompute, "ops")
        .unwrap_err()
        .contains("none, selective, full, op"));
    let r = run(&job_request(1, job.clone())).result.unwrap();
    let core = ModelJob::new(
        preset("llama3-8b").unwrap(),
        job.setup(),
        gpu_preset(&job.gpu).unwrap(),
        None,
    )
    .unwrap();
    let out =
        trainscope_core::job::run::run_model(&core, &trainscope_core::engine::SimConfig::default())
            .unwrap();
    assert_eq!(
        r.iteration_time_ns,
        Some(out.run.summary().iteration_time_ns)
    );
    let m = &r.model.as_ref().unwrap().memory.stages[0];
    assert_eq!(
        m.activations_bytes,
        out.memory.per_stage[0].activations_bytes
    );
}
