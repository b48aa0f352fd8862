//! Browser tests of the configuration search (`wasm-pack test --headless
//! --chrome`): the bounds' text and link form, the page's sweep (the
//! request through the worker protocol, three shards as three workers
//! evaluate them, joined with the core's merge) equal to the core's
//! unsharded search row for row, and a row loaded into the job panel
//! simulating to the row's numbers, and the reducer taking a clicked row
//! (the job, the schedule, run at once, pinned as A on "Pin A").

#![cfg(target_arch = "wasm32")]

use std::collections::BTreeSet;
use std::rc::Rc;
use trainscope_core::engine::ScheduleKind;
use trainscope_core::job::TrainingSetup;
use trainscope_core::search::{build, enumerate, merge, process, rank, Row, ShardId};
use trainscope_web::job::{JobModel, JobSettings};
use trainscope_web::model_job::run_job;
use trainscope_web::protocol::{decode_request, encode_request, InputFile, Request, SweepRequest};
use trainscope_web::settings::{Field, Schedule, Settings};
use trainscope_web::state::{Action, AppState};
use trainscope_web::sweep::{chunk_due, common_flags, row_job, run_shard, sweep_spec};
use trainscope_web::sweep_inputs::SweepInputs;
use wasm_bindgen_test::*;
use yew::Reducible;

wasm_bindgen_test_configure!(run_in_browser);

/// llama3-8b on 8 GPUs, a small batch, narrow bounds.
fn small() -> (SweepInputs, JobSettings) {
    let mut i = SweepInputs::default();
    i.set("world", "8".into());
    i.set("tp", "2,4".into());
    i.set("pp", "1,2".into());
    i.set("mbs", "1".into());
    i.set("recompute", "selective".into());
    i.set("schedule", "1f1b,gpipe".into());
    let job = JobSettings {
        training: TrainingSetup {
            global_batch_size: Some(16),
            ..JobSettings::default().training
        },
        ..JobSettings::default()
    };
    (i, job)
}

/// Load `row` into the job panel (`row_job`) and run it with the row's
/// schedule: the row's iteration time comes back. Returns the job.
fn row_simulates_to_its_numbers(row: &Row, base: &JobSettings) -> JobSettings {
    let (j, schedule) = row_job(row, base).unwrap();
    assert_eq!(schedule.core().name(), row.schedule);
    let s = Settings {
        schedule,
        ..Settings::default()
    };
    let out = run_job(&[], &j, &s, &BTreeSet::from([Field::Schedule])).unwrap();
    assert_eq!(
        out.run.summary().iteration_time_ns,
        row.iteration_time_ns,
        "{}",
        row.flags
    );
    assert_eq!(out.job.world, row.world);
    j
}

#[wasm_bindgen_test]
fn bounds_parse_and_round_trip_through_a_link() {
    let (i, job) = small();
    let frag = i.fragment();
    assert_eq!(
        frag,
        "sweep_world=8&sweep_tp=2,4&sweep_pp=1,2&sweep_mbs=1&sweep_recompute=selective&sweep_schedule=1f1b,gpipe"
    );
    let back = SweepInputs::from_fragment(&format!("#model=llama3-8b&{frag}")).unwrap();
    assert_eq!(back, i);
    assert!(SweepInputs::from_fragment("model=x").is_none());
    let (spec, _) = sweep_spec(&i, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    assert_eq!(spec.worlds, vec![8]);
    assert_eq!(spec.tp, Some(vec![2, 4]));
    assert_eq!(
        spec.schedule,
        Some(vec![ScheduleKind::OneFOneB, ScheduleKind::GPipe])
    );
    assert_eq!(spec.global_batch_size, 16);
    assert_eq!(spec.common_flags, "--model llama3-8b");
    // An empty world: the job panel's TP x PP x DP.
    let mut no_world = i.clone();
    no_world.set("world", String::new());
    let (spec, _) =
        sweep_spec(&no_world, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    assert_eq!(spec.worlds, vec![1]);
    let mut bad = i.clone();
    bad.set("pp", "0".into());
    let err = sweep_spec(&bad, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap_err();
    assert!(err.contains("PP: `0`"), "{err}");
    bad.set("pp", "1".into());
    bad.set("schedule", "pipedream".into());
    let err = sweep_spec(&bad, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap_err();
    assert!(err.contains("unknown value `pipedream`"), "{err}");
    // A non-default cluster is in every row's flags, as the CLI writes it.
    let mut settings = Settings {
        gpus_per_node: 4,
        ..Settings::default()
    };
    settings.set(Field::Placement, "pp-dp-tp").unwrap();
    settings.set(Field::Algorithm, "tree").unwrap();
    let (spec, _) = sweep_spec(&i, &job, &settings, &BTreeSet::new(), &[]).unwrap();
    assert_eq!(
        spec.common_flags,
        "--model llama3-8b --gpus-per-node 4 --placement pp-dp-tp --algorithm tree"
    );
}

#[wasm_bindgen_test]
fn the_pages_sharded_sweep_equals_the_cores_search() {
    let (inputs, job) = small();
    let settings = Settings::default();
    let pinned: BTreeSet<Field> = BTreeSet::new();
    // The core, unsharded (what `trainscope sweep --json` prints).
    let (spec, config) = sweep_spec(&inputs, &job, &settings, &pinned, &[]).unwrap();
    let e = enumerate(&spec);
    assert!(e.candidates.len() >= 4, "{}", e.candidates.len());
    let outcomes = e
        .candidates
        .iter()
        .map(|c| process(c, &config, &spec.common_flags, None))
        .collect();
    let whole = build(
        spec.describe(),
        None,
        e.skipped,
        e.skipped_reasons.clone(),
        outcomes,
    );
    // The page: three workers, each its decoded request's shard.
    let n = 3;
    let mut shards = Vec::new();
    let mut progress_calls = 0;
    for i in 0..n {
        let req = Request::Sweep(SweepRequest {
            id: 7 << 16 | u64::from(i),
            settings: settings.clone(),
            pinned: pinned.clone(),
            job: job.clone(),
            inputs: inputs.clone(),
            shard: ShardId { index: i, count: n },
            files: Vec::new(),
        });
        let Ok(Request::Sweep(x)) = decode_request(&encode_request(&req)) else {
            panic!("the sweep request does not round-trip");
        };
        assert_eq!(Request::Sweep(x.clone()), req);
        let (spec, config) = sweep_spec(&x.inputs, &x.job, &x.settings, &x.pinned, &[]).unwrap();
        // The rows as the worker sends them: in chunks while it runs (here
        // every row is due at once, as when 100 ms have passed).
        let mut chunks: Vec<Row> = Vec::new();
        let mut report = run_shard(
            &spec,
            &config,
            x.shard.index,
            x.shard.count,
            &mut |done, total, pending| {
                assert!(done <= total);
                progress_calls += 1;
                if chunk_due(pending.len(), done, total, 1000.0) {
                    chunks.append(pending);
                }
            },
        );
        let mut sorted = chunks.clone();
        rank(&mut sorted);
        assert_eq!(sorted, report.results, "the chunks hold the shard's rows");
        report.results.clear();
        shards.push((report, chunks));
    }
    assert_eq!(progress_calls, e.candidates.len());
    // The page: every row back into its shard (candidate k is shard k mod n).
    let rows: Vec<Row> = shards.iter().flat_map(|(_, c)| c.iter().cloned()).collect();
    let mut shards: Vec<_> = shards.into_iter().map(|(r, _)| r).collect();
    for row in rows {
        shards[row.index as usize % n as usize].results.push(row);
    }
    let merged = merge(&shards).unwrap();
    assert_eq!(merged, whole);
    assert!(merged.fitting >= 1);
    assert!(merged.explain.is_some());
}

#[wasm_bindgen_test]
fn a_row_loaded_into_the_job_panel_simulates_to_its_numbers() {
    let (inputs, job) = small();
    let settings = Settings::default();
    let pinned: BTreeSet<Field> = BTreeSet::new();
    let (spec, config) = sweep_spec(&inputs, &job, &settings, &pinned, &[]).unwrap();
    let report = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    // The best row and one with the other schedule.
    let best = &report.results[0];
    let other = report
        .results
        .iter()
        .find(|r| r.schedule != best.schedule)
        .expect("both schedules simulated");
    for row in [best, other] {
        row_simulates_to_its_numbers(row, &job);
    }
}

#[wasm_bindgen_test]
fn a_row_with_an_uneven_split_loads_its_split_into_the_job_panel() {
    // Llama 3.2 1B's 16 layers on 3 stages: 6 + 6 + 4.
    let mut i = SweepInputs::default();
    i.set("world", "3".into());
    i.set("tp", "1".into());
    i.set("pp", "3".into());
    i.set("mbs", "1".into());
    i.set("recompute", "none".into());
    i.set("schedule", "1f1b".into());
    let job = JobSettings {
        model: JobModel::Preset("llama3.2-1b".into()),
        training: TrainingSetup {
            global_batch_size: Some(6),
            seq_length: 1024,
            ..JobSettings::default().training
        },
        ..JobSettings::default()
    };
    let (spec, config) = sweep_spec(&i, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    let report = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    let row = &report.results[0];
    assert_eq!(
        (row.first_stage_layers, row.last_stage_layers),
        (Some(6), Some(4))
    );
    let j = row_simulates_to_its_numbers(row, &job);
    assert_eq!(
        (j.training.first_stage_layers, j.training.last_stage_layers),
        (Some(6), Some(4))
    );
}

#[wasm_bindgen_test]
fn a_cp_bound_sweeps_context_parallel_rows_and_a_row_loads_its_cp() {
    let (mut i, job) = small();
    i.set("cp", "1,2".into());
    i.set("tp", "2".into());
    i.set("pp", "1".into());
    i.set("schedule", "1f1b".into());
    assert!(i.fragment().contains("&sweep_cp=1,2&"), "{}", i.fragment());
    let back = SweepInputs::from_fragment(&format!("#model=llama3-8b&{}", i.fragment())).unwrap();
    assert_eq!(back, i);
    let (spec, config) = sweep_spec(&i, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    assert_eq!(spec.cp, Some(vec![1, 2]));
    let report = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    let row = report
        .results
        .iter()
        .find(|r| r.cp == 2)
        .expect("a CP 2 row");
    assert!(row.flags.contains("--cp 2"), "{}", row.flags);
    assert_eq!(row_simulates_to_its_numbers(row, &job).training.cp, 2);
}

#[wasm_bindgen_test]
fn a_clicked_row_becomes_the_job_and_runs_pinned_or_not() {
    let (inputs, job) = small();
    let (spec, config) =
        sweep_spec(&inputs, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    let report = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    let row = report
        .results
        .iter()
        .find(|r| r.pp == 2 && r.schedule == "gpipe")
        .expect("a gpipe row");
    let (j, schedule) = row_job(row, &job).unwrap();
    let s = Rc::new(AppState::default());
    let before = s.files_rev;
    let s = s.reduce(Action::RunConfig(Box::new(j.clone()), schedule, false));
    assert!(s.job_active);
    assert_eq!(s.job, j);
    assert_eq!(
        (s.job.training.tp, s.job.training.pp, s.job.dp()),
        (row.tp, row.pp, row.dp)
    );
    assert_eq!(s.settings.schedule, Schedule::Gpipe);
    assert!(s.pinned_fields.contains(&Field::Schedule));
    assert_eq!(s.files_rev, before + 1, "runs at once");
    assert!(!s.pin_next_run);
    let s = s.reduce(Action::RunConfig(Box::new(j), schedule, true));
    assert!(s.pin_next_run, "Pin A pins the run it starts");
}

#[wasm_bindgen_test]
fn a_dropped_config_json_is_searched_like_its_preset() {
    let (inputs, job) = small();
    let settings = Settings::default();
    let pinned: BTreeSet<Field> = BTreeSet::new();
    let (spec, config) = sweep_spec(&inputs, &job, &settings, &pinned, &[]).unwrap();
    let preset = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    // The same architecture as a dropped file, its bytes in the request.
    let bytes = include_bytes!("../../../tests/fixtures/hf/llama3_8b.json").to_vec();
    let file_job = JobSettings {
        model: JobModel::File("llama3_8b.json".into()),
        ..job.clone()
    };
    let req = Request::Sweep(SweepRequest {
        id: 1,
        settings: settings.clone(),
        pinned: pinned.clone(),
        job: file_job.clone(),
        inputs: inputs.clone(),
        shard: ShardId { index: 0, count: 1 },
        files: vec![InputFile {
            name: "llama3_8b.json".into(),
            data: bytes.into(),
        }],
    });
    let Ok(Request::Sweep(x)) = decode_request(&encode_request(&req)) else {
        panic!("the sweep request does not round-trip");
    };
    assert_eq!(Request::Sweep(x.clone()), req);
    let files: Vec<(&str, &[u8])> = x
        .files
        .iter()
        .map(|f| (f.name.as_str(), f.bytes().unwrap()))
        .collect();
    let (spec, config) = sweep_spec(&x.inputs, &x.job, &x.settings, &x.pinned, &files).unwrap();
    assert_eq!(spec.common_flags, "--model llama3_8b.json");
    let from_file = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    assert_eq!(from_file.results.len(), preset.results.len());
    for (a, b) in from_file.results.iter().zip(&preset.results) {
        assert_eq!(a.iteration_time_ns, b.iteration_time_ns);
        assert_eq!(a.peak_bytes, b.peak_bytes);
        assert_eq!(
            a.flags,
            b.flags
                .replace("--model llama3-8b", "--model llama3_8b.json")
        );
    }
    // A file name a shell would split is quoted in the flags.
    let spaced = JobSettings {
        model: JobModel::File("my config.json".into()),
        ..job.clone()
    };
    assert_eq!(
        common_flags(&spaced, &settings, &pinned),
        "--model 'my config.json'"
    );
    // Not loaded: the worker says so, with the hint to drop it.
    let err = sweep_spec(&inputs, &file_job, &settings, &pinned, &[]).unwrap_err();
    assert!(err.contains("is not loaded"), "{err}");
}

/// The ZeRO stage and HSDP shard group are sweep dimensions as on the
/// CLI (`--zero LIST`, `--hsdp-shard LIST`): the bounds parse into the
/// core's spec, the rows carry them (HSDP only where ZeRO-3 shards), and a
/// ZeRO-3 HSDP row loaded into the job panel simulates to its numbers.
#[wasm_bindgen_test]
fn zero_and_hsdp_bounds_sweep_sharded_rows() {
    use trainscope_core::job::sharding::ZeroStage;
    let (mut i, job) = small();
    i.set("tp", "2".into());
    i.set("pp", "1".into());
    i.set("schedule", "1f1b".into());
    i.set("zero", "1,3".into());
    i.set("hsdp", "0,2".into());
    assert!(i.fragment().ends_with("&sweep_zero=1,3&sweep_hsdp=0,2"));
    let (spec, config) = sweep_spec(&i, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    assert_eq!(
        spec.zero,
        Some(vec![ZeroStage::Optimizer, ZeroStage::Parameters])
    );
    assert_eq!(spec.hsdp_shard, Some(vec![0, 2]));
    let e = enumerate(&spec);
    let rows: Vec<Row> = e
        .candidates
        .iter()
        .filter_map(|c| match process(c, &config, &spec.common_flags, None) {
            trainscope_core::search::Outcome::Simulated(r) => Some(*r),
            _ => None,
        })
        .collect();
    let pairs: Vec<(u8, u32)> = rows.iter().map(|r| (r.zero, r.hsdp_shard)).collect();
    assert_eq!(pairs, vec![(1, 0), (3, 0), (3, 2)], "{pairs:?}");
    let hsdp = rows.iter().find(|r| r.hsdp_shard == 2).unwrap();
    assert!(
        hsdp.flags.contains("--zero 3 --hsdp-shard 2"),
        "{}",
        hsdp.flags
    );
    let j = row_simulates_to_its_numbers(hsdp, &job);
    assert_eq!(j.training.sharding.hsdp_shard, 2);
    let mut bad = i.clone();
    bad.set("zero", "4".into());
    let err = sweep_spec(&bad, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap_err();
    assert!(err.contains("ZeRO stage: unknown value `4`"), "{err}");
}

#[wasm_bindgen_test]
fn software_bounds_sweep_graphs_dispatchers_and_overlap_and_a_row_loads_its_software() {
    let mut i = SweepInputs::default();
    for (k, v) in [
        ("world", "8"),
        ("tp", "1"),
        ("pp", "1"),
        ("ep", "8"),
        ("mbs", "1"),
        ("recompute", "full"),
        ("schedule", "1f1b"),
        ("graphs", "none,layers"),
        ("dispatcher", "alltoall,flex"),
        ("a2a", "off"),
    ] {
        i.set(k, v.into());
    }
    let frag = i.fragment();
    assert!(
        frag.ends_with("&sweep_graphs=none,layers&sweep_dispatcher=alltoall,flex&sweep_a2a=off"),
        "{frag}"
    );
    assert_eq!(
        SweepInputs::from_fragment(&format!("#model=qwen3-30b-a3b&{frag}")).unwrap(),
        i
    );
    let job = JobSettings {
        model: JobModel::Preset("qwen3-30b-a3b".into()),
        training: TrainingSetup {
            global_batch_size: Some(8),
            seq_length: 1024,
            ..JobSettings::default().training
        },
        ..JobSettings::default()
    };
    let (spec, config) = sweep_spec(&i, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    assert_eq!(spec.stack_values().len(), 4);
    let report = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    let mut software: Vec<&str> = report.results.iter().map(|r| r.software.as_str()).collect();
    software.sort_unstable();
    software.dedup();
    assert_eq!(software.len(), 4, "{software:?}");
    let row = report
        .results
        .iter()
        .find(|r| r.software.contains("--cuda-graphs layers") && r.software.contains("flex"))
        .expect("a row with graphs and the flex dispatcher");
    let j = row_simulates_to_its_numbers(row, &job);
    assert_eq!(j.training.stack.flags().trim(), row.software);
    // A value the core does not know is refused, naming the bound.
    i.set("dispatcher", "deepgemm".into());
    let e = sweep_spec(&i, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap_err();
    assert!(
        e.starts_with("MoE dispatcher: unknown value `deepgemm`"),
        "{e}"
    );
}

/// The page's Offload bound as the CLI's `--offload LIST`: the bound
/// parses into the core's spec, the link keeps it, rows carry it (weights
/// offload only with ZeRO-3), and an offloaded row loaded into the job
/// panel keeps its offload and simulates to its numbers.
#[wasm_bindgen_test]
fn offload_bound_sweeps_offloaded_rows() {
    use trainscope_core::job::sharding::Offload;
    let (mut i, job) = small();
    i.set("tp", "2".into());
    i.set("pp", "1".into());
    i.set("schedule", "1f1b".into());
    i.set("zero", "1".into());
    i.set("offload", "none,optimizer,optimizer+params".into());
    assert!(i
        .fragment()
        .ends_with("&sweep_zero=1&sweep_offload=none,optimizer,optimizer+params"));
    let (spec, config) = sweep_spec(&i, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    assert_eq!(spec.offload, Some(Offload::ALL.to_vec()));
    let e = enumerate(&spec);
    // optimizer+params needs ZeRO-3: skipped with the job's reason.
    assert_eq!(e.skipped, 1);
    let rows: Vec<Row> = e
        .candidates
        .iter()
        .filter_map(|c| match process(c, &config, &spec.common_flags, None) {
            trainscope_core::search::Outcome::Simulated(r) => Some(*r),
            _ => None,
        })
        .collect();
    let offloads: Vec<Offload> = rows.iter().map(|r| r.offload).collect();
    assert_eq!(offloads, vec![Offload::None, Offload::Optimizer]);
    let j = row_simulates_to_its_numbers(&rows[1], &job);
    assert_eq!(j.training.sharding.offload, Offload::Optimizer);
    let mut bad = i.clone();
    bad.set("offload", "disk".into());
    let err = sweep_spec(&bad, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap_err();
    assert!(err.contains("offload: unknown value `disk`"), "{err}");
}

/// The page's Straggler bound as the CLI's `--straggler FACTOR`: it parses
/// into the core's spec, the link keeps it, every row carries its step
/// with one GPU slowed (never faster than the plain step, and equal to the
/// core's worst placement of the straggler), rows rank by it, and a bad
/// factor is refused with the field's name.
#[wasm_bindgen_test]
fn straggler_bound_ranks_rows_by_their_step_with_one_gpu_slowed() {
    let (mut i, job) = small();
    i.set("straggler", "1.2".into());
    assert!(
        i.fragment().ends_with("&sweep_straggler=1.2"),
        "{}",
        i.fragment()
    );
    assert_eq!(SweepInputs::from_fragment(&i.fragment()), Some(i.clone()));
    let (spec, config) = sweep_spec(&i, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap();
    assert_eq!(spec.straggler, Some(1.2));
    let report = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    assert!(report.results.len() >= 4, "{} rows", report.results.len());
    for r in &report.results {
        let t = r.straggler_iteration_time_ns.expect("a straggler step");
        assert!(t >= r.iteration_time_ns, "{t} < {}", r.iteration_time_ns);
        assert!(r.straggler_stage.is_some());
        let c = enumerate(&spec)
            .candidates
            .into_iter()
            .find(|c| c.flags(&spec.common_flags) == r.flags)
            .expect("the row's candidate");
        let (worst_ns, stage) = trainscope_core::search::worst_straggler(&c, &config, 1.2).unwrap();
        assert_eq!(
            (Some(worst_ns), Some(stage)),
            (r.straggler_iteration_time_ns, r.straggler_stage)
        );
    }
    let mut ranked = report.results.clone();
    trainscope_core::search::report::rank(&mut ranked);
    let order: Vec<u64> = ranked.iter().map(|r| r.ranking_time_ns()).collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
    // The winner line leads with what the rows rank by.
    let merged = merge(std::slice::from_ref(&report)).unwrap();
    let why = merged.explain.expect("a winner line");
    assert!(why.contains(": with one GPU slowed "), "{why}");
    for (bad, want) in [("fast", "is not a number"), ("0", "Straggler:")] {
        let mut b = i.clone();
        b.set("straggler", bad.into());
        let err = sweep_spec(&b, &job, &Settings::default(), &BTreeSet::new(), &[]).unwrap_err();
        assert!(err.contains(want), "{bad}: {err}");
    }
}

/// The Configure panel's what-if faults apply to every candidate as
/// `sweep --slow --slow-link --jitter --seed` does: the rows' flags carry
/// them in the CLI's order (before `--overlap-grad-sync`), a row loaded
/// into the job panel and run with the same settings gives the row's step,
/// and each row is slower than the same layout without the faults.
#[wasm_bindgen_test]
fn what_if_faults_apply_to_every_candidate() {
    let (i, job) = small();
    let mut s = Settings {
        grad_sync_overlap: true,
        ..Settings::default()
    };
    let pinned = BTreeSet::new();
    let (plain_spec, plain_config) = sweep_spec(&i, &job, &s, &pinned, &[]).unwrap();
    for (f, v) in [
        (Field::Slow, "0:1.5"),
        (Field::SlowLink, "0-1:2"),
        (Field::Jitter, "5"),
        (Field::Seed, "3"),
    ] {
        s.set(f, v).unwrap();
    }
    let (spec, config) = sweep_spec(&i, &job, &s, &pinned, &[]).unwrap();
    let faults = " --slow 0:1.5 --slow-link 0-1:2 --jitter 5 --seed 3";
    assert_eq!(
        spec.common_flags,
        format!("--model llama3-8b{faults} --overlap-grad-sync")
    );
    assert_eq!(config.faults, s.what_if().unwrap().0);
    let plain = run_shard(&plain_spec, &plain_config, 0, 1, &mut |_, _, _| {});
    let slowed = run_shard(&spec, &config, 0, 1, &mut |_, _, _| {});
    assert_eq!(slowed.results.len(), plain.results.len());
    for r in &slowed.results {
        let p = plain
            .results
            .iter()
            .find(|p| p.flags == r.flags.replace(faults, ""))
            .expect("the same layout without faults");
        assert!(r.iteration_time_ns > p.iteration_time_ns, "{}", r.flags);
    }
    let best = &slowed.results[0];
    let (j, schedule) = row_job(best, &job).unwrap();
    let run = Settings {
        schedule,
        ..s.clone()
    };
    let out = run_job(&[], &j, &run, &BTreeSet::from([Field::Schedule])).unwrap();
    assert_eq!(out.run.summary().iteration_time_ns, best.iteration_time_ns);
}
