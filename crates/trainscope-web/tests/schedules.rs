//! Browser tests of the schedule lab on the page (`wasm-pack test --headless
//! --chrome`): the worker's Compare-schedules computation on a bundled
//! SimAI example and on a described job (rows, the core's refusals word for
//! word, speed-ups over 1F1B, peaks per stage in micro-batches and bytes),
//! the request flag on the wire, the reducer (the table arrives with the
//! run, picking a row runs that schedule and keeps the table, another edit
//! drops it), the activation series in the result (peaks equal the core's,
//! bytes per chunk from the memory model), and the mounted chart and table;
//! every row's timeline (compacted, with its activation memory lanes) comes
//! back with the run, the reducer keeps them with the table, and the stacked
//! view and the memory lanes render their data attributes.

#![cfg(target_arch = "wasm32")]

use std::collections::BTreeSet;
use std::rc::Rc;
use trainscope_core::job::TrainingSetup;
use trainscope_core::timeline::Stream;
use trainscope_core::{engine::ScheduleKind, run::run_files};
use trainscope_web::components::activation_chart::{step_path, ActivationChart};
use trainscope_web::components::schedule_compare::ScheduleCompare;
use trainscope_web::compute;
use trainscope_web::job::{JobField, JobSettings};
use trainscope_web::protocol::{
    decode_request, encode_request, InputFile, Request, Response, RunRequest, RunView,
};
use trainscope_web::schedule_compare::compact_timeline;
use trainscope_web::settings::{Field, Schedule, Settings};
use trainscope_web::state::SharedTimeline;
use trainscope_web::state::{Action, AppState};
use trainscope_web::timeline::Timeline;
use trainscope_web::views::{ScheduleComparison, ScheduleRow};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use yew::prelude::*;
use yew::Reducible;

wasm_bindgen_test_configure!(run_in_browser);

const LLAMA65B: &[u8] = include_bytes!("../../../www/examples/simai_llama65b_tp8_pp4_vpp8.txt");
const LLAMA65B_NAME: &str = "simai_llama65b_tp8_pp4_vpp8.txt";

/// The bundled LLaMA-65B example (PP 4, vpp 8, ga 1), with these settings
/// typed.
/// The page with the LLaMA-65B example loaded and `typed` edited in, in
/// order.
fn loaded_with(typed: &[(Field, &str)]) -> Rc<AppState> {
    let loaded = Rc::new(AppState::default()).reduce(Action::Loaded {
        files: vec![(LLAMA65B_NAME.into(), LLAMA65B.to_vec().into())],
        example: None,
    });
    typed
        .iter()
        .fold(loaded, |s, (f, v)| s.reduce(Action::Edit(*f, (*v).into())))
}

fn file_request(typed: &[(Field, &str)], compare: bool) -> RunRequest {
    let mut req = RunRequest {
        id: 1,
        settings: Settings::default(),
        pinned: BTreeSet::new(),
        files: vec![InputFile {
            name: LLAMA65B_NAME.into(),
            data: LLAMA65B.to_vec().into(),
        }],
        job: JobSettings::default(),
        job_active: false,
        compare_schedules: compare,
    };
    for (f, v) in typed {
        req.settings.set(*f, v).unwrap();
        req.pinned.insert(*f);
    }
    req
}

/// llama3-8b on 8 GPUs, TP 2, PP 2, DP 2, 16 micro-batches.
fn small_job() -> JobSettings {
    JobSettings {
        training: TrainingSetup {
            tp: 2,
            pp: 2,
            dp: Some(2),
            global_batch_size: Some(32),
            ..JobSettings::default().training
        },
        ..JobSettings::default()
    }
}

fn run(req: &RunRequest) -> RunView {
    compute::run(req, &mut |_| {})
}

fn row(c: &ScheduleComparison, s: Schedule) -> &ScheduleRow {
    c.rows
        .iter()
        .find(|r| r.schedule == s)
        .unwrap_or_else(|| panic!("no row for {s:?}: {c:?}"))
}

/// The core's own iteration time of the example under `kind` with `m`
/// micro-batches and `vpp` virtual stages for interleaved.
fn core_time(kind: ScheduleKind, m: Option<u32>, vpp: u32) -> Result<u64, String> {
    let req = file_request(&[], false);
    let mut settings = req.settings.clone();
    settings.virtual_stages = vpp;
    let mut pinned = BTreeSet::new();
    if let Some(m) = m {
        settings.micro_batches = m;
        pinned.insert(Field::MicroBatches);
    }
    let (mut config, options) = trainscope_web::engine_run::event_config(&settings, &pinned);
    config.schedule = kind;
    if kind == ScheduleKind::Interleaved {
        config.virtual_stages = vpp;
    }
    run_files(&[(LLAMA65B_NAME, LLAMA65B)], &config, &options)
        .map(|o| o.summary().iteration_time_ns)
        .map_err(|e| {
            trainscope_web::engine_run::run_error_diagnostics(&e)[0]
                .message
                .clone()
        })
}

// ---------------------------------------------------------------- the computation

#[wasm_bindgen_test]
fn one_micro_batch_keeps_gpipe_and_1f1b_and_lists_the_cores_refusals() {
    let out = run(&file_request(&[], true));
    let c = out.schedules.expect("the table");
    assert_eq!(c.input, LLAMA65B_NAME);
    let ran: Vec<Schedule> = c.rows.iter().map(|r| r.schedule).collect();
    // ZB-H1 runs m < p (the core degenerates it gracefully).
    assert_eq!(
        ran,
        vec![Schedule::Gpipe, Schedule::OneFOneB, Schedule::ZbH1]
    );
    let refused: Vec<Schedule> = c.refused.iter().map(|r| r.schedule).collect();
    assert_eq!(
        refused,
        vec![
            Schedule::Interleaved,
            Schedule::ZbH2,
            Schedule::Zbv,
            Schedule::Dualpipev
        ]
    );
    // Word for word the core's message (the file's vpp 8 makes interleaved
    // applicable; one micro-batch is not a multiple of 4 stages).
    for r in &c.refused {
        let kind = r.schedule.core();
        let core = core_time(kind, None, 8).expect_err("refused by the core");
        assert_eq!(r.message, core, "{kind:?}");
    }
    assert!(
        c.refused[1].message.contains("m >= 2p - 1"),
        "{}",
        c.refused[1].message
    );
    let one = row(&c, Schedule::OneFOneB);
    assert_eq!(one.speedup_over_1f1b, Some(1.0));
    assert_eq!(
        one.iteration_time_ns,
        core_time(ScheduleKind::OneFOneB, None, 8).unwrap()
    );
    let g = row(&c, Schedule::Gpipe);
    let expected = one.iteration_time_ns as f64 / g.iteration_time_ns as f64;
    assert!((g.speedup_over_1f1b.unwrap() - expected).abs() < 1e-12);
    assert_eq!(one.peak_micro_batches.len(), 4, "one peak per stage");
    assert!(
        one.peak_bytes.is_none(),
        "a file states no activation sizes"
    );
    // The run's own result is the current schedule's, as without the table.
    let plain = run(&file_request(&[], false));
    assert_eq!(out.result, plain.result);
    assert!(plain.schedules.is_none());
}

#[wasm_bindgen_test]
fn eight_micro_batches_run_every_schedule_with_the_papers_peaks() {
    let c = run(&file_request(
        &[(Field::MicroBatches, "8"), (Field::VirtualStages, "4")],
        true,
    ))
    .schedules
    .unwrap();
    assert!(c.refused.is_empty(), "{:?}", c.refused);
    let ran: Vec<Schedule> = c.rows.iter().map(|r| r.schedule).collect();
    assert_eq!(ran, Schedule::ALL.to_vec());
    for r in &c.rows {
        let core = core_time(r.schedule.core(), Some(8), 4).unwrap();
        assert_eq!(r.iteration_time_ns, core, "{:?}", r.schedule);
        assert!(r.bubble_ns < r.iteration_time_ns);
        let one = row(&c, Schedule::OneFOneB).iteration_time_ns as f64;
        let s = r.speedup_over_1f1b.unwrap();
        assert!((s * r.iteration_time_ns as f64 - one).abs() < 1.0, "{s}");
    }
    assert_eq!(row(&c, Schedule::Interleaved).virtual_stages, 4);
    assert_eq!(row(&c, Schedule::ZbH1).virtual_stages, 1);
    // 1F1B: stage i holds p - i micro-batches; ZB-H1 the same peak (the
    // first stage's p; later stages hold a W's inputs a little longer);
    // GPipe all m.
    assert_eq!(
        row(&c, Schedule::OneFOneB).peak_micro_batches,
        vec![4.0, 3.0, 2.0, 1.0]
    );
    assert_eq!(row(&c, Schedule::ZbH1).peak_micro_batches[0], 4.0);
    let max = |s| {
        row(&c, s)
            .peak_micro_batches
            .iter()
            .copied()
            .fold(0.0, f64::max)
    };
    assert_eq!(max(Schedule::ZbH1), max(Schedule::OneFOneB));
    assert_eq!(row(&c, Schedule::Gpipe).peak_micro_batches, vec![8.0; 4]);
    // Splitting the weight gradient fills bubbles: faster than 1F1B here.
    assert!(row(&c, Schedule::ZbH1).speedup_over_1f1b.unwrap() > 1.0);
}

#[wasm_bindgen_test]
fn interleaved_is_compared_only_with_virtual_stages() {
    let c = run(&file_request(
        &[(Field::MicroBatches, "8"), (Field::VirtualStages, "1")],
        true,
    ))
    .schedules
    .unwrap();
    assert_eq!(c.rows.len(), 6);
    assert_eq!(c.refused.len(), 1);
    assert_eq!(c.refused[0].schedule, Schedule::Interleaved);
    assert!(c.refused[0].message.contains("more than one virtual stage"));
}

#[wasm_bindgen_test]
fn a_described_job_compares_in_bytes_and_memory_follows_the_schedule() {
    let req = RunRequest {
        files: Vec::new(),
        job: small_job(),
        job_active: true,
        ..file_request(&[], true)
    };
    let out = run(&req);
    let c = out.schedules.expect("the table");
    assert!(c.input.contains("llama3-8b"), "{}", c.input);
    // vpp 1: interleaved is not compared; the rest run (16 >= 2 x 2).
    assert_eq!(c.refused.len(), 1, "{:?}", c.refused);
    assert_eq!(c.refused[0].schedule, Schedule::Interleaved);
    assert_eq!(c.rows.len(), 6);
    let bytes = |s| row(&c, s).peak_bytes.clone().expect("bytes for a job");
    assert_eq!(
        bytes(Schedule::ZbH1)[0],
        bytes(Schedule::OneFOneB)[0],
        "ZB-H1 keeps 1F1B's peak"
    );
    assert!(bytes(Schedule::Gpipe)[0] > bytes(Schedule::OneFOneB)[0]);
    // Bytes per micro-batch are the same for every schedule of one chunk.
    let one = row(&c, Schedule::OneFOneB);
    let per_mb = bytes(Schedule::OneFOneB)[0] as f64 / one.peak_micro_batches[0];
    let g = row(&c, Schedule::Gpipe);
    assert!((bytes(Schedule::Gpipe)[0] as f64 / g.peak_micro_batches[0] - per_mb).abs() < 1.0);
    // The job's own result: its activation chart is in bytes, and the
    // peak in bytes is the memory model's activations.
    let r = out.result.unwrap();
    let mem = &r.model.as_ref().unwrap().memory;
    assert_eq!(r.activations.len(), 2);
    for (a, m) in r.activations.iter().zip(&mem.stages) {
        assert_eq!(a.peak_chunks, m.in_flight);
        assert_eq!(a.bytes(a.peak_chunks), Some(m.activations_bytes));
    }
}

#[wasm_bindgen_test]
fn a_files_activation_series_is_the_cores_in_micro_batches() {
    let req = file_request(
        &[(Field::MicroBatches, "8"), (Field::Schedule, "zb-h2")],
        false,
    );
    let r = run(&req).result.unwrap();
    let (config, options) = trainscope_web::engine_run::event_config(&req.settings, &req.pinned);
    let core = run_files(&[(LLAMA65B_NAME, LLAMA65B)], &config, &options).unwrap();
    assert_eq!(r.activations.len(), core.result.activations.len());
    for (a, c) in r.activations.iter().zip(&core.result.activations) {
        assert_eq!(a.peak_chunks, c.peak_chunks);
        assert_eq!(a.bytes_per_chunk, None);
        let points: Vec<(u64, u32)> = c.points.iter().map(|p| (p.time_ns, p.chunks)).collect();
        assert_eq!(a.points, points);
        assert_eq!(
            a.points.last().map(|p| p.1),
            Some(0),
            "everything freed by the end"
        );
    }
    // ZB-H2 warms up with 2p - 1 = 7 micro-batches on the first stage.
    assert_eq!(r.activations[0].peak_chunks, 7);
    assert_eq!(r.activations[0].label(7), "7 micro-batches");
}

#[wasm_bindgen_test]
fn the_step_path_rises_and_falls_with_the_points() {
    let d = step_path(&[(0, 1), (50, 2), (100, 0)], 100, 2);
    assert_eq!(
        d,
        "M0,44.0 H0.00 V23.0 H320.00 V2.0 H640.00 V44.0 H640 V44 H0 Z"
    );
}

// ---------------------------------------------------------------- wire and reducer

#[wasm_bindgen_test]
fn the_compare_flag_travels_with_the_request() {
    for flag in [false, true] {
        let req = file_request(&[], flag);
        let Ok(Request::Run(back)) = decode_request(&encode_request(&Request::Run(req.clone())))
        else {
            panic!("decodes")
        };
        assert_eq!(back, req);
    }
}

fn done(s: Rc<AppState>, id: u64, out: RunView) -> Rc<AppState> {
    let s = s.reduce(Action::RunStarted(id));
    s.reduce(Action::Worker(Response::Done {
        id,
        output: Box::new(out),
    }))
}

#[wasm_bindgen_test]
fn picking_a_row_runs_that_schedule_and_keeps_the_table() {
    let s = Rc::new(AppState::default()).reduce(Action::Loaded {
        files: vec![(LLAMA65B_NAME.into(), LLAMA65B.to_vec().into())],
        example: None,
    });
    let out = run(&file_request(
        &[(Field::MicroBatches, "8"), (Field::VirtualStages, "4")],
        true,
    ));
    let s = s
        .reduce(Action::Edit(Field::MicroBatches, "8".into()))
        .reduce(Action::Edit(Field::VirtualStages, "4".into()));
    let s = done(s, 1, out);
    assert_eq!(s.schedules.as_ref().unwrap().rows.len(), 7);
    let rev = s.files_rev;
    let s = s.reduce(Action::RunSchedule(Schedule::Interleaved, 4));
    assert_eq!(s.settings.schedule, Schedule::Interleaved);
    assert_eq!(s.settings.virtual_stages, 4);
    assert!(s.pinned_fields.contains(&Field::Schedule));
    assert_eq!(s.files_rev, rev + 1, "runs at once");
    // That run's output has no table: the table stays.
    let s = done(
        s,
        2,
        run(&file_request(
            &[(Field::MicroBatches, "8"), (Field::VirtualStages, "4")],
            false,
        )),
    );
    assert!(s.schedules.is_some());
    // Choosing another schedule in the select keeps it too.
    let s = s.reduce(Action::Edit(Field::Schedule, "zbv".into()));
    assert!(s.schedules.is_some());
    // Another setting changes what was compared: gone.
    let s = s.reduce(Action::Edit(Field::MicroBatches, "12".into()));
    assert!(s.schedules.is_none());
}

#[wasm_bindgen_test]
fn pinning_a_row_pins_that_runs_result_as_a() {
    let typed = [(Field::MicroBatches, "8"), (Field::VirtualStages, "4")];
    let s = loaded_with(&typed);
    let s = done(s, 1, run(&file_request(&typed, true)));
    assert!(s.compare.is_none());
    let s = s.reduce(Action::PinSchedule(Schedule::Gpipe, 1));
    assert_eq!(s.settings.schedule, Schedule::Gpipe);
    let mut req = file_request(&typed, false);
    req.settings.schedule = Schedule::Gpipe;
    let gpipe = run(&req);
    let s = done(s, 2, gpipe.clone());
    let pinned = s.compare.as_ref().expect("pinned when its run finished");
    assert_eq!(pinned.run, 2);
    assert_eq!(Some(&pinned.result), gpipe.result.as_ref());
    // Its timeline arrives after the result: it becomes A's.
    let s = s.reduce(Action::Worker(Response::Timelines {
        id: 2,
        timelines: gpipe.timelines.clone(),
    }));
    assert_eq!(
        s.compare_timeline.as_ref().map(|t| t.label.as_str()),
        Some("A")
    );
    // The next row clicked is not pinned: it is B.
    let s = s.reduce(Action::RunSchedule(Schedule::Zbv, 1));
    let mut req = file_request(&typed, false);
    req.settings.schedule = Schedule::Zbv;
    let s = done(s, 3, run(&req));
    assert_eq!(s.compare.as_ref().unwrap().run, 2);
}

#[wasm_bindgen_test]
fn picking_a_row_of_a_job_sets_its_virtual_stages() {
    let s = Rc::new(AppState::default())
        .reduce(Action::JobEdit(JobField::Vpp, "2".into()))
        .reduce(Action::RunSchedule(Schedule::ZbH1, 1));
    assert_eq!(
        s.job.training.vpp, 1,
        "the zero-bubble schedules run with one chunk"
    );
    assert_eq!(s.settings.schedule, Schedule::ZbH1);
    assert_eq!(s.job_text(JobField::Vpp), "1");
    let s = s.reduce(Action::RunSchedule(Schedule::Interleaved, 2));
    assert_eq!(s.job.training.vpp, 2);
}

// ---------------------------------------------------------------- mounted

fn mount(html: Html) -> web_sys::Element {
    let doc = gloo::utils::document();
    let host = doc.create_element("div").unwrap();
    doc.body().unwrap().append_child(&host).unwrap();
    yew::Renderer::<Wrapper>::with_root_and_props(host.clone(), WrapperProps { html }).render();
    host
}

#[derive(Properties, PartialEq)]
struct WrapperProps {
    html: Html,
}

#[component]
fn Wrapper(props: &WrapperProps) -> Html {
    props.html.clone()
}

async fn settle() {
    gloo::timers::future::TimeoutFuture::new(30).await;
}

#[wasm_bindgen_test]
async fn the_table_and_the_chart_render_their_test_ids() {
    let out = run(&file_request(
        &[(Field::MicroBatches, "8"), (Field::VirtualStages, "4")],
        true,
    ));
    let c = Rc::new(out.schedules.unwrap());
    let r = out.result.unwrap();
    let picked = Rc::new(std::cell::RefCell::new(None));
    let on_pick = {
        let picked = picked.clone();
        Callback::from(move |x: (Schedule, u32)| *picked.borrow_mut() = Some(x))
    };
    let host = mount(html! {
        <>
            <ActivationChart activations={r.activations.clone()} end_ns={r.iteration_time_ns.unwrap()} />
            <ScheduleCompare comparison={Some(c.clone())} current={Schedule::OneFOneB}
                             running={false} on_compare={Callback::noop()} {on_pick} on_pin={Callback::noop()} />
        </>
    });
    settle().await;
    let chart = host
        .query_selector("[data-testid=activation-memory-chart]")
        .unwrap()
        .expect("chart");
    assert_eq!(
        chart.get_attribute("data-unit").as_deref(),
        Some("micro-batches")
    );
    let svgs = chart.query_selector_all("svg[data-stage]").unwrap();
    assert_eq!(svgs.length(), 4);
    let rows = host
        .query_selector_all("[data-testid=schedule-compare-table] tr[data-schedule]")
        .unwrap();
    assert_eq!(rows.length(), 7);
    assert_eq!(
        host.query_selector_all("[data-testid=schedule-compare-pin]")
            .unwrap()
            .length(),
        7
    );
    let zb = host
        .query_selector("tr[data-schedule=zb-h1]")
        .unwrap()
        .expect("zb-h1 row");
    zb.dyn_ref::<web_sys::HtmlElement>().unwrap().click();
    settle().await;
    assert_eq!(*picked.borrow(), Some((Schedule::ZbH1, 1)));
    let current = host.query_selector("tr.current").unwrap().unwrap();
    assert_eq!(
        current.get_attribute("data-schedule").as_deref(),
        Some("1f1b")
    );
}

// ---------------------------------------------------------------- stacked timelines

/// The comparison's timelines come with the run's: the run's own first,
/// then one per row (`schedule:NAME`), compacted to the compute and
/// collective lanes and the activation memory lanes; the current schedule's (1F1B) is the run's
/// own, compacted (not simulated again).
#[wasm_bindgen_test]
fn compare_returns_every_rows_timeline_with_memory_lanes() {
    let out = run(&file_request(
        &[(Field::MicroBatches, "8"), (Field::VirtualStages, "4")],
        true,
    ));
    let labels: Vec<&str> = out.timelines.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(
        labels,
        vec![
            "simulated",
            "schedule:gpipe",
            "schedule:1f1b",
            "schedule:interleaved (vpp 4)",
            "schedule:zb-h1",
            "schedule:zb-h2",
            "schedule:zbv",
            "schedule:dualpipev"
        ]
    );
    let own = &out.timelines[0].timeline;
    assert_eq!(own.counters().len(), 4, "a memory lane per stage");
    assert_eq!(
        out.timelines[2].timeline,
        compact_timeline(own),
        "1F1B is the run's own"
    );
    let c = out.schedules.unwrap();
    for (t, r) in out.timelines[1..].iter().zip(&c.rows) {
        let tl = &t.timeline;
        assert!(tl
            .lanes()
            .iter()
            .all(|l| !matches!(l.stream, Stream::Send | Stream::Recv)));
        assert_eq!(tl.lanes().len(), 4 * 3, "compute and collectives");
        assert!(tl.flows().is_empty() && tl.critical_path().is_empty());
        assert_eq!(tl.counters().len(), 4, "{}", t.label);
        assert_eq!(tl.end_ns(), r.iteration_time_ns, "{}", t.label);
        // The memory lanes' peaks are the row's peaks per stage.
        let peaks: Vec<f64> = tl.counters().iter().map(|c| c.max_value()).collect();
        assert_eq!(peaks, r.peak_micro_batches, "{}", t.label);
    }
}

/// The reducer keeps the rows' timelines apart from the run's own: a
/// comparison's replace them; a row's run (no comparison) keeps them.
#[wasm_bindgen_test]
fn the_rows_timelines_are_kept_with_the_table() {
    let typed = [(Field::MicroBatches, "8"), (Field::VirtualStages, "4")];
    let s = loaded_with(&typed);
    let mut out = run(&file_request(&typed, true));
    let timelines = std::mem::take(&mut out.timelines);
    let s = done(s, 1, out).reduce(Action::Worker(Response::Timelines { id: 1, timelines }));
    assert_eq!(s.timelines.len(), 1);
    assert_eq!(s.timelines[0].label, "simulated");
    assert_eq!(s.schedule_timelines.len(), 7);
    let s = s.reduce(Action::RunSchedule(Schedule::ZbH1, 1));
    let mut req = file_request(&typed, false);
    req.settings.schedule = Schedule::ZbH1;
    let mut out = run(&req);
    let timelines = std::mem::take(&mut out.timelines);
    let s = done(s, 2, out).reduce(Action::Worker(Response::Timelines { id: 2, timelines }));
    assert_eq!(s.timelines.len(), 1);
    assert_eq!(s.schedule_timelines.len(), 7, "kept with the table");
}

#[wasm_bindgen_test]
async fn the_stacked_timelines_and_the_memory_lanes_render() {
    let out = run(&file_request(
        &[(Field::MicroBatches, "8"), (Field::VirtualStages, "4")],
        true,
    ));
    let c = Rc::new(out.schedules.clone().unwrap());
    let shared: Vec<SharedTimeline> = out
        .timelines
        .iter()
        .map(|t| SharedTimeline {
            label: t.label.clone(),
            timeline: Rc::new(t.timeline.clone()),
        })
        .collect();
    let own = shared[0].timeline.clone();
    let stacked = shared[1..].to_vec();
    let host = mount(html! {
        <>
            <ScheduleCompare comparison={Some(c)} current={Schedule::OneFOneB}
                             running={false} on_compare={Callback::noop()} on_pick={Callback::noop()}
                             on_pin={Callback::noop()} timelines={stacked} />
            <Timeline timeline={own} />
        </>
    });
    settle().await;
    let wrap = host
        .query_selector("[data-testid=schedule-compare-timelines]")
        .unwrap()
        .expect("stacked view");
    assert_eq!(wrap.get_attribute("data-count").as_deref(), Some("7"));
    let sc = host
        .query_selector("[data-testid=schedule-timeline]")
        .unwrap()
        .expect("its canvas");
    assert_eq!(
        sc.get_attribute("data-runs").as_deref(),
        Some("gpipe,1f1b,interleaved (vpp 4),zb-h1,zb-h2,zbv,dualpipev")
    );
    assert_eq!(sc.get_attribute("data-counters").as_deref(), Some("28"));
    assert_eq!(
        sc.get_attribute("data-memory-lanes").as_deref(),
        Some("0"),
        "collapsed"
    );
    // The run's own timeline (its own test ids) shows a lane per stage.
    let main = host
        .query_selector("[data-testid=timeline]")
        .unwrap()
        .expect("the run's timeline");
    assert_eq!(
        main.get_attribute("data-memory-lanes").as_deref(),
        Some("4")
    );
    assert!(main.get_attribute("data-memory-first-y").is_some());
}
