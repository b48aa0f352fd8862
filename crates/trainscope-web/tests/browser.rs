//! Browser tests (`wasm-pack test --headless --chrome`): settings parsing
//! and validation, the URL fragment round trip, the worker protocol's
//! encoding, the worker's computation on real seed bytes, the reducer (run
//! ids, stale responses, cancel, pre-filling, pinning), number formatting
//! and Compare differences, table sorting, and mounted components (the app,
//! the settings form's messages, the results panel and its chart).

#![cfg(target_arch = "wasm32")]

use std::collections::BTreeSet;
use std::rc::Rc;
use trainscope_web::compute;
use trainscope_web::protocol::{
    decode_request, decode_request_head, decode_request_with, decode_response, decode_timelines,
    encode_request, encode_request_parts, encode_response, encode_timelines, ExportRequest,
    FileData, InputFile, PartInfo, Progress, Request, Response, RunRequest, RunView,
};
use trainscope_web::settings::{Field, GpuPreset, Mode, NicPreset, Schedule, Settings};
use trainscope_web::state::{Action, AppState, RunStatus};
use trainscope_web::url::{from_fragment, to_fragment};
use trainscope_web::views::{diff_figures, error_figures, Cell, Figure, Quantity, Verdict};
use trainscope_web::{format, views};
use wasm_bindgen_test::*;
use yew::Reducible;

wasm_bindgen_test_configure!(run_in_browser);

const SEED000: &[u8] =
    include_bytes!("../../../tests/fixtures/seeds/simai_llama65b_tp8_pp4_vpp8.txt");
const SEED001: &[u8] =
    include_bytes!("../../../tests/fixtures/seeds/simai_405b_tp8_pp16_ga16_sp.txt");
const ECHO: &[u8] =
    include_bytes!("../../../tests/fixtures/seeds/echo_megatron_trace_rank7_tp2_pp4.txt");
const MIXTRAL: &[u8] = include_bytes!("../../../tests/fixtures/hf/mixtral_8x7b.json");
const KINETO_RANK0: &[u8] = include_bytes!("../../../tests/fixtures/kineto/job2_rank0.json");
const KINETO_RANK1: &[u8] =
    include_bytes!("../../../tests/fixtures/kineto/job2_rank1.pt.trace.json.gz");
const OPTIMUS: &[u8] =
    include_bytes!("../../../tests/fixtures/seeds/optimus_prime_llama1b_pp8_train.log");
const NEUSIGHT: &[u8] =
    include_bytes!("../../../tests/fixtures/seeds/neusight_gpt2large_dp_workitems.tsv");

fn reduce(state: Rc<AppState>, action: Action) -> Rc<AppState> {
    state.reduce(action)
}

fn run_request(id: u64, files: &[(&str, &[u8])]) -> RunRequest {
    RunRequest {
        id,
        settings: Settings::default(),
        pinned: BTreeSet::new(),
        files: files
            .iter()
            .map(|(n, b)| InputFile {
                name: n.to_string(),
                data: b.to_vec().into(),
            })
            .collect(),
        job: Default::default(),
        job_active: false,
        compare_schedules: false,
    }
}

fn compute_output(req: &RunRequest) -> RunView {
    compute::run(req, &mut |_| {})
}

// ---------------------------------------------------------------- settings

#[wasm_bindgen_test]
fn default_settings_are_the_cores_defaults_and_valid() {
    use trainscope_core::analytical::{AnalyticalConfig, OverlapRatios};
    use trainscope_core::{engine::SimConfig, run::RunOptions};
    let s = Settings::default();
    assert_eq!(s.validate(), vec![]);
    // The values the form shows: H100 and CX7 presets, 8 + 8 per node.
    assert_eq!((s.gpu, s.nvlink_bw_gbps), (GpuPreset::H100, 370.8));
    assert_eq!((s.nic, s.nic_bw_gbps), (NicPreset::Cx7, 48.5));
    assert_eq!((s.gpus_per_node, s.nics_per_node), (8, 8));
    assert_eq!((s.latency_us, s.backward_factor, s.blocks), (5.0, 2.0, 36));
    // Event mode: an untouched page runs exactly `trainscope simulate FILE`.
    let (config, options) = trainscope_web::engine_run::event_config(&s, &BTreeSet::new());
    assert_eq!(config, SimConfig::default());
    assert_eq!(options, RunOptions::default());
    // SimAI mode: the cluster `trainscope simulate --mode simai FILE`
    // assumes, and SimAI's overlap ratios.
    let a = trainscope_web::engine_run::analytical_config(&s);
    let d = AnalyticalConfig::default();
    assert_eq!(
        (a.gpus_per_server, a.nics_per_server),
        (
            Some(AnalyticalConfig::DEFAULT_GPUS_PER_SERVER),
            Some(AnalyticalConfig::DEFAULT_NICS_PER_SERVER)
        )
    );
    assert_eq!(
        a.nvlink_busbw_gbps,
        Some(AnalyticalConfig::DEFAULT_GPU.nvlink_busbw_gbps())
    );
    assert_eq!(
        a.nic_busbw_gbps,
        Some(AnalyticalConfig::DEFAULT_NIC.nic_busbw_gbps())
    );
    assert_eq!(a.overlap, OverlapRatios::default());
    assert_eq!(a.overlap, d.overlap);
}

#[wasm_bindgen_test]
fn a_neusight_table_shows_the_world_and_blocks_its_run_uses() {
    // The table states no world size: the form shows the one the run
    // assumes (as `trainscope simulate FILE` does), not the page's 8.
    let out = compute_output(&run_request(1, &[("n.tsv", NEUSIGHT)]));
    assert_eq!(out.settings.world_size, 1);
    assert_eq!(out.settings.blocks, 36);
    assert!(
        out.hints
            .sources
            .iter()
            .any(|s| s
                == "n.tsv: world = 1 (assumed: the file states none) from the neusight-tsv input"),
        "{:?}",
        out.hints.sources
    );
    let r = out.result.expect("simulated");
    let cli = trainscope_core::run::run_files(
        &[("n.tsv", NEUSIGHT)],
        &trainscope_core::engine::SimConfig::default(),
        &trainscope_core::run::RunOptions::default(),
    )
    .unwrap();
    assert_eq!(r.iteration_time_ns, Some(cli.summary().iteration_time_ns));
}

#[wasm_bindgen_test]
fn world_not_divisible_by_tp_pp_is_reported_on_world() {
    let mut s = Settings::default();
    s.set(Field::Tp, "8").unwrap();
    s.set(Field::Pp, "4").unwrap();
    s.set(Field::World, "500").unwrap();
    let errs = s.validate();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].field, Field::World);
    assert!(errs[0]
        .message
        .contains("not divisible by TP × PP = 8 × 4 = 32"));
    s.set(Field::World, "512").unwrap();
    assert_eq!(s.validate(), vec![]);
    assert_eq!(s.dp(), 16);
    s.set(Field::Ep, "3").unwrap();
    assert_eq!(s.validate()[0].field, Field::Ep);
}

#[wasm_bindgen_test]
fn bandwidth_overlap_and_counts_are_checked_per_mode() {
    let mut s = Settings {
        nvlink_bw_gbps: 0.0,
        nic_bw_gbps: -1.0,
        dp_overlap: 1.5,
        pp_overlap: 0.0,
        micro_batches: 0,
        backward_factor: -1.0,
        ..Settings::default()
    };
    // Event mode: overlap ratios are not used, so not reported.
    let fields: Vec<Field> = s.validate().iter().map(|e| e.field).collect();
    assert_eq!(
        fields,
        vec![
            Field::NvlinkBw,
            Field::NicBw,
            Field::MicroBatches,
            Field::BackwardFactor
        ]
    );
    s.mode = Mode::Simai;
    let errs = s.validate();
    let fields: Vec<Field> = errs.iter().map(|e| e.field).collect();
    assert_eq!(
        fields,
        vec![
            Field::NvlinkBw,
            Field::NicBw,
            Field::MicroBatches,
            Field::DpOverlap,
            Field::PpOverlap
        ]
    );
    // The core's checks, in the CLI's words.
    assert_eq!(
        errs[0].message,
        "0 is not a positive bandwidth in GB/s of at most 1e9"
    );
    assert_eq!(errs[2].message, "0 is not between 1 and 1048576");
    assert_eq!(errs[3].message, "1.5 is not in [0, 1]");
    assert_eq!(
        errs[4].message,
        "0 is not in (0, 1] (SimAI divides the PP send time by it)"
    );
}

#[wasm_bindgen_test]
fn the_page_refuses_what_the_core_refuses() {
    // Every event-mode field the page checks, at a value just outside its
    // range: the page and the core's validation (the CLI's) both refuse it;
    // just inside, both accept it.
    let cases: [(Field, &str, &str); 10] = [
        (Field::GpusPerNode, "4097", "4096"),
        (Field::NicsPerNode, "0", "1"),
        (Field::NvlinkBw, "1e10", "1e9"),
        (Field::NicBw, "0", "0.001"),
        (Field::Latency, "1000001", "1000000"),
        (Field::Oversubscription, "0.99", "1"),
        (Field::World, "0", "8"),
        (Field::MicroBatches, "1048577", "1048576"),
        (Field::BackwardFactor, "1000.5", "0"),
        (Field::Blocks, "1025", "1024"),
    ];
    for (field, bad, good) in cases {
        for (text, ok) in [(bad, false), (good, true)] {
            let mut s = Settings::default();
            s.set(field, text).unwrap();
            let page_ok = !s.validate().iter().any(|e| e.field == field);
            let all: BTreeSet<Field> = Field::ALL.into_iter().collect();
            let (mut config, options) = trainscope_web::engine_run::event_config(&s, &all);
            // The latency setter refuses out-of-range values itself.
            let core_ok = config.network.set_latency_us(s.latency_us).is_ok()
                && config.validate().is_ok()
                && options.validate().is_ok();
            assert_eq!((page_ok, core_ok), (ok, ok), "{field} = {text}");
        }
    }
    // SimAI mode: the cluster and the overlap ratios.
    for (field, bad, good) in [
        (Field::GpusPerNode, "5000", "4096"),
        (Field::NvlinkBw, "1e300", "360"),
        (Field::World, "0", "512"),
        (Field::DpOverlap, "1.01", "1"),
        (Field::PpOverlap, "0", "0.5"),
    ] {
        for (text, ok) in [(bad, false), (good, true)] {
            let mut s = Settings {
                mode: Mode::Simai,
                world_size: 512,
                ..Settings::default()
            };
            s.set(field, text).unwrap();
            let page_ok = !s.validate().iter().any(|e| e.field == field);
            let a = trainscope_web::engine_run::analytical_config(&s);
            let cluster = trainscope_core::analytical::ClusterConfig {
                world_size: a.world_size.unwrap(),
                gpus_per_server: a.gpus_per_server.unwrap(),
                nics_per_server: a.nics_per_server.unwrap(),
                nvlink_busbw_gbps: a.nvlink_busbw_gbps.unwrap(),
                nic_busbw_gbps: a.nic_busbw_gbps.unwrap(),
            };
            let core_ok = cluster.validate().is_ok() && a.overlap.validate().is_ok();
            assert_eq!((page_ok, core_ok), (ok, ok), "simai {field} = {text}");
        }
    }
}

#[wasm_bindgen_test]
fn interleaved_needs_virtual_stages_and_pp() {
    let mut s = Settings::default();
    s.set(Field::Schedule, "interleaved").unwrap();
    let fields: Vec<Field> = s.validate().iter().map(|e| e.field).collect();
    assert_eq!(fields, vec![Field::Schedule, Field::VirtualStages]);
    s.set(Field::Pp, "4").unwrap();
    s.set(Field::World, "8").unwrap();
    s.set(Field::VirtualStages, "2").unwrap();
    assert_eq!(s.validate(), vec![]);
    assert_eq!(s.schedule, Schedule::Interleaved);
}

#[wasm_bindgen_test]
fn presets_set_bandwidths_and_typing_a_bandwidth_goes_custom() {
    let mut s = Settings::default();
    s.set(Field::Gpu, "H800").unwrap();
    assert_eq!((s.gpu, s.nvlink_bw_gbps), (GpuPreset::H800, 164.8));
    s.set(Field::NvlinkBw, "200").unwrap();
    assert_eq!(s.gpu, GpuPreset::Custom);
    s.set(Field::Nic, "CX6").unwrap();
    assert_eq!((s.nic, s.nic_bw_gbps), (NicPreset::Cx6, 23.5));
    assert!(s
        .set(Field::Gpu, "V100")
        .unwrap_err()
        .contains("not one of"));
    assert!(s.set(Field::World, "-3").is_err());
    assert!(s
        .set(Field::NicBw, "fast")
        .unwrap_err()
        .contains("not a number"));
    assert!(s
        .set(Field::Latency, "")
        .unwrap_err()
        .contains("enter a number"));
    assert_eq!(s.nic_bw_gbps, 23.5, "a failed set leaves the value");
    s.set(Field::Latency, "1.5").unwrap();
    assert_eq!(s.latency_ns(), 1500);
}

#[wasm_bindgen_test]
fn hints_fill_unpinned_fields_only() {
    let out = compute_output(&run_request(1, &[("a.txt", SEED000)]));
    let h = &out.hints;
    assert_eq!(
        (h.world_size, h.tp, h.pp, h.micro_batches, h.virtual_stages),
        (Some(512), Some(8), Some(4), Some(1), Some(8))
    );
    let pinned: BTreeSet<Field> = [Field::Tp].into_iter().collect();
    let base = Settings {
        tp: 2,
        ..Settings::default()
    };
    let s = base.with_hints(h, &pinned);
    assert_eq!((s.world_size, s.tp, s.pp, s.virtual_stages), (512, 2, 4, 8));
    assert_eq!(out.settings.world_size, 512, "the worker applies them too");
}

#[wasm_bindgen_test]
fn what_if_fields_give_the_cores_faults_and_refuse_in_its_words() {
    let mut s = Settings::default();
    s.set(Field::Slow, "5:1.5  node1:1.1@iter1+2;3:2@1.5ms+250us")
        .unwrap();
    s.set(Field::SlowLink, "0-8:2").unwrap();
    s.set(Field::Jitter, "5").unwrap();
    s.set(Field::Seed, "3").unwrap();
    s.set(Field::Blame, "1").unwrap();
    assert_eq!(s.validate(), Vec::new());
    let all: BTreeSet<Field> = Field::ALL.into_iter().collect();
    let (config, options) = trainscope_web::engine_run::event_config(&s, &all);
    assert_eq!(
        config.faults.flags(),
        [
            "--slow 5:1.5",
            "--slow node1:1.1@iter1+2",
            "--slow 3:2@1500us+250us",
            "--slow-link 0-8:2",
            "--jitter 5 --seed 3"
        ]
    );
    assert_eq!(
        options.blame,
        Some(trainscope_core::whatif::DEFAULT_SENSITIVITY_FACTOR)
    );
    for (field, bad, says) in [
        (Field::Slow, "5", "is not RANKS:FACTOR"),
        (Field::Slow, "5:0.5", "not a slow-down factor"),
        (Field::Slow, "5:1.5@2s", "@ONSET+DURATION"),
        (Field::Slow, "5:1.5@2+1s", "with a unit"),
        (Field::SlowLink, "3-3:2", "names one rank twice"),
        (Field::Jitter, "-1", "not a jitter"),
    ] {
        let mut t = s.clone();
        t.set(field, bad).unwrap();
        let e = t.validate();
        assert!(
            e.iter()
                .any(|e| e.field == field && e.message.contains(says)),
            "{field} = {bad}: {e:?}"
        );
    }
}

// ---------------------------------------------------------------- URL

#[wasm_bindgen_test]
fn fragment_round_trips_every_field_and_the_example() {
    let mut s = Settings::default();
    for (f, v) in [
        (Field::Mode, "simai"),
        (Field::Gpu, "H100"),
        (Field::NicBw, "30.25"),
        (Field::World, "1024"),
        (Field::Tp, "8"),
        (Field::Pp, "16"),
        (Field::Schedule, "interleaved"),
        (Field::VirtualStages, "3"),
        (Field::Algorithm, "tree"),
        (Field::DpOverlap, "0.3"),
        (Field::GradSyncOverlap, "0"),
        (Field::BackwardFactor, "2.5"),
        (Field::Latency, "0.75"),
        (Field::Slow, "5:1.5 stage2:1.2@2s+500ms"),
        (Field::Jitter, "2.5"),
        (Field::Seed, "7"),
        (Field::Blame, "1"),
    ] {
        s.set(f, v).unwrap();
    }
    let all: BTreeSet<Field> = Field::ALL.into_iter().collect();
    let frag = to_fragment(Some("simai_405b_tp8_pp16_ga16_sp.txt"), &s, &all);
    assert!(frag.starts_with("example=simai_405b_tp8_pp16_ga16_sp.txt&mode=simai&gpu=H100&"));
    let (back, notes) = from_fragment(&format!("#{frag}"));
    assert_eq!(notes, Vec::<String>::new());
    assert_eq!(back.settings, s);
    assert_eq!(
        back.example.as_deref(),
        Some("simai_405b_tp8_pp16_ga16_sp.txt")
    );
    assert_eq!(back.given, all);
    // Only the mode and the fields the user set: the rest stays the files'.
    let set: BTreeSet<Field> = [Field::World, Field::Gpu].into_iter().collect();
    let frag = to_fragment(None, &s, &set);
    assert_eq!(frag, "mode=simai&gpu=H100&world=1024");
    let (back, _) = from_fragment(&frag);
    let given: Vec<Field> = back.given.into_iter().collect();
    assert_eq!(given, [Field::Mode, Field::Gpu, Field::World]);
    assert_eq!(
        back.settings.nvlink_bw_gbps, s.nvlink_bw_gbps,
        "the preset's bandwidth"
    );
    assert_eq!(
        back.settings.backward_factor,
        Settings::default().backward_factor
    );
}

#[wasm_bindgen_test]
fn fragment_order_unknown_keys_and_bad_values() {
    // Bandwidth before its preset: the link's bandwidth still wins.
    let (st, notes) = from_fragment("nvlink_gbps=200&gpu=A100&bogus=1&world=x&example=..%2Fsecret");
    assert_eq!(st.settings.nvlink_bw_gbps, 200.0);
    assert_eq!(st.settings.gpu, GpuPreset::Custom);
    assert_eq!(st.example, None);
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("unknown setting `bogus`")));
    assert!(notes.iter().any(|n| n.contains("`world`")));
    assert!(notes
        .iter()
        .any(|n| n.contains("unknown example `../secret`")));
    let given: Vec<Field> = st.given.into_iter().collect();
    assert_eq!(given, vec![Field::Gpu, Field::NvlinkBw]);
    let (empty, notes) = from_fragment("");
    assert_eq!((empty.settings, notes.len()), (Settings::default(), 0));
}

// ---------------------------------------------------------------- protocol

#[wasm_bindgen_test]
fn request_encoding_round_trips_and_rejects_damage() {
    let mut req = run_request(
        42,
        &[
            ("a.txt", SEED000),
            ("empty", b""),
            ("é b.bin", &[0, 255, 7]),
        ],
    );
    req.pinned = [Field::World, Field::Mode].into_iter().collect();
    req.settings.mode = Mode::Simai;
    let buf = encode_request(&Request::Run(req.clone()));
    assert_eq!(&buf[..4], b"TSR1");
    assert_eq!(decode_request(&buf), Ok(Request::Run(req)));
    assert!(decode_request(&buf[..buf.len() - 1])
        .unwrap_err()
        .contains("truncated"));
    let mut longer = buf.clone();
    longer.push(0);
    assert!(decode_request(&longer).unwrap_err().contains("trailing"));
    assert!(decode_request(b"junk").unwrap_err().contains("magic"));
    let export = Request::Export(ExportRequest {
        id: 9,
        testid: "export-chrome-trace".into(),
    });
    assert_eq!(decode_request(&encode_request(&export)), Ok(export));
    let mut bad_len = buf.clone();
    bad_len[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(decode_request(&bad_len).is_err());
}

#[wasm_bindgen_test]
fn request_parts_share_the_files_and_decode_by_ranges() {
    let req = Request::Run(run_request(5, &[("a.txt", SEED000), ("b.bin", &[1, 2, 3])]));
    let Request::Run(run) = &req else {
        unreachable!()
    };
    // The parts borrow the request's own bytes (no copy) and concatenate
    // to the one-buffer encoding.
    let (head, files) = encode_request_parts(&req);
    assert_eq!(files.len(), 2);
    let mut joined = head.clone();
    for (part, file) in files.iter().zip(&run.files) {
        let FileData::Bytes(b) = part else {
            panic!("a byte file's part is its bytes")
        };
        assert_eq!(b.as_ptr(), file.bytes().unwrap().as_ptr());
        joined.extend_from_slice(b);
    }
    let buf = encode_request(&req);
    assert_eq!(joined, buf);
    // Decoding by ranges reads the head, the header, then one range per
    // file, each exactly that file, never the whole buffer.
    let mut ranges = Vec::new();
    let decoded = decode_request_with(buf.len(), &mut |start, end| {
        ranges.push((start, end));
        buf[start..end].to_vec()
    });
    assert_eq!(decoded, Ok(req.clone()));
    assert_eq!(ranges.len(), 4, "{ranges:?}");
    assert_eq!(ranges[2].1 - ranges[2].0, SEED000.len());
    assert_eq!(ranges[3], (buf.len() - 3, buf.len()));
    assert!(decode_request_with(buf.len() + 1, &mut |s, e| {
        let mut v = buf.get(s..e.min(buf.len())).unwrap_or_default().to_vec();
        v.resize(e - s, 0);
        v
    })
    .unwrap_err()
    .contains("trailing"));
}

/// A browser `Blob` holding `bytes` (what a dropped `File` is).
fn blob_of(bytes: &[u8]) -> web_sys::Blob {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    web_sys::Blob::new_with_u8_array_sequence(&parts).unwrap()
}

#[wasm_bindgen_test]
fn a_dropped_file_travels_as_its_blob_not_its_bytes() {
    // A dropped file is a Blob with an id of its own; an example is bytes.
    let dropped = FileData::blob(blob_of(SEED001));
    let FileData::Blob(b) = &dropped else {
        panic!("a Blob file")
    };
    assert_eq!(b.size_bytes, SEED001.len() as u64);
    let FileData::Blob(other) = FileData::blob(blob_of(b"x")) else {
        panic!("a Blob file")
    };
    assert_ne!(other.id, b.id, "every loaded file gets its own id");
    let mut run = run_request(3, &[("a.txt", SEED000)]);
    run.files.push(InputFile {
        name: "rank0.json".into(),
        data: dropped.clone(),
    });
    let req = Request::Run(run.clone());
    // Its part is the Blob itself; the head names its size and id.
    let (head, parts) = encode_request_parts(&req);
    assert_eq!(parts[1], &dropped);
    let decoded = decode_request_head(&head).unwrap();
    let infos = decoded.files();
    assert_eq!(
        infos,
        vec![
            PartInfo {
                name: "a.txt".into(),
                size_bytes: SEED000.len() as u64,
                blob: None,
            },
            PartInfo {
                name: "rank0.json".into(),
                size_bytes: SEED001.len() as u64,
                blob: Some(b.id),
            },
        ]
    );
    // With the parts received (the worker's side), the same request.
    assert_eq!(decoded.into_request(run.files.clone()), Ok(req.clone()));
    // A part that is not the file the head names is refused.
    let mut swapped = run.files.clone();
    swapped.swap(0, 1);
    let err = decode_request_head(&head)
        .unwrap()
        .into_request(swapped)
        .unwrap_err();
    assert!(err.contains("is not the"), "{err}");
    let err = decode_request_head(&head)
        .unwrap()
        .into_request(Vec::new())
        .unwrap_err();
    assert!(err.contains("carries 0"), "{err}");
    // A Blob has no bytes in the one-buffer form: decoding it says so.
    let err = decode_request(&encode_request(&req)).unwrap_err();
    assert!(err.contains("Blob"), "{err}");
    // A head with anything after it is refused.
    let mut longer = head.clone();
    longer.push(0);
    assert!(decode_request_head(&longer).is_err());
    // A Blob not read reaches the computation as a located run error, not
    // as an empty file passed over in silence.
    let out = compute::run(&run, &mut |_| {});
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.is_error() && d.message.contains("could not read `rank0.json`")),
        "{:?}",
        out.diagnostics
    );
}

#[wasm_bindgen_test]
fn a_run_reads_each_file_once_and_equals_the_cores_run() {
    use trainscope_core::{
        engine::SimConfig,
        run::{run_files, RunOptions},
    };
    use trainscope_web::engine_run::ExportSource;
    const K0: &[u8] = include_bytes!("../../../tests/fixtures/kineto/job2_rank0.json");
    const K1: &[u8] = include_bytes!("../../../tests/fixtures/kineto/job2_rank1.pt.trace.json.gz");
    let files = [("job2_rank0.json", K0), ("job2_rank1.pt.trace.json.gz", K1)];
    let mut req = run_request(4, &files);
    req.compare_schedules = true;
    // The worker's reader gives each file's bytes when asked (a `Blob`'s,
    // read then dropped once parsed): count the reads.
    let mut reads = Vec::new();
    let (out, source) = compute::run_with_reader(
        &req,
        &mut |i, f| {
            reads.push(i);
            Ok(Rc::new(f.bytes().unwrap().to_vec()))
        },
        &mut |_| {},
    );
    // Parsed once, file by file; the simulation, the analysis and every
    // compared schedule come from that parse.
    assert_eq!(reads, vec![0, 1]);
    let want = run_files(&files, &SimConfig::default(), &RunOptions::default()).unwrap();
    let Some(ExportSource::Event(got)) = source else {
        panic!("an event run")
    };
    assert_eq!(got.report_json(), want.report_json());
    assert!(out.analysis.is_some());
    assert_eq!(out.analysis, want.analysis);
    assert!(out
        .files
        .iter()
        .all(|f| f.format.as_deref() == Some("kineto-trace")));

    // Another input picked (a SimAI workload loaded last): only it is read
    // again, to be simulated alone.
    let mut reads = Vec::new();
    let three = run_request(5, &[files[0], files[1], ("a.txt", SEED000)]);
    let out = compute::run_with_reader(
        &three,
        &mut |i, f| {
            reads.push(i);
            Ok(Rc::new(f.bytes().unwrap().to_vec()))
        },
        &mut |_| {},
    )
    .0;
    assert_eq!(reads, vec![0, 1, 2, 2]);
    assert_eq!(
        out.result.as_ref().and_then(|r| r.iteration_time_ns),
        compute_output(&run_request(6, &[("a.txt", SEED000)]))
            .result
            .and_then(|r| r.iteration_time_ns)
    );

    // A file that cannot be read is an error naming it.
    let out = compute::run_with_reader(
        &req,
        &mut |i, f| match i {
            1 => Err("the file is gone".into()),
            _ => Ok(Rc::new(f.bytes().unwrap().to_vec())),
        },
        &mut |_| {},
    )
    .0;
    assert!(
        out.diagnostics.iter().any(|d| d.is_error()
            && d.message == "could not read `job2_rank1.pt.trace.json.gz`: the file is gone"),
        "{:?}",
        out.diagnostics
    );
}

#[wasm_bindgen_test]
fn responses_round_trip_as_json() {
    let out = compute_output(&run_request(7, &[("a.txt", SEED000)]));
    for r in [
        Response::Ready,
        Response::Progress(Progress {
            id: 7,
            done: 1,
            total: 2,
            label: "Parsing a.txt".into(),
            parsed_bytes: None,
        }),
        Response::Done {
            id: 7,
            output: Box::new(out),
        },
        Response::Failed {
            id: 7,
            message: "boom \"quoted\"".into(),
        },
    ] {
        let text = encode_response(&r);
        assert_eq!(decode_response(&text).as_ref(), Ok(&r));
    }
    assert!(decode_response("{\"type\":\"Nope\"}").is_err());
}

/// Timelines travel as bytes: they round-trip exactly (measured and
/// simulated), an empty list too, and damage is an error, never a panic.
#[wasm_bindgen_test]
fn timelines_round_trip_as_bytes_and_reject_damage() {
    let echo = compute_output(&run_request(
        3,
        &[("wd8_tp2_pp4_numl4_bs2_rank7_x.txt", ECHO)],
    ));
    assert_eq!(echo.timelines.len(), 2);
    for list in [echo.timelines.clone(), Vec::new()] {
        let bytes = encode_timelines(3, &list);
        let back = decode_timelines(&bytes).expect("round trip");
        assert_eq!(
            back,
            Response::Timelines {
                id: 3,
                timelines: list
            }
        );
    }
    let bytes = encode_timelines(3, &echo.timelines);
    assert!(
        decode_timelines(&bytes[..bytes.len() / 2]).is_err(),
        "truncated"
    );
    assert!(
        decode_timelines(b"TSR1 not timelines").is_err(),
        "foreign magic"
    );
    let mut huge = bytes[..12].to_vec();
    huge.extend_from_slice(&u64::MAX.to_le_bytes());
    assert!(
        decode_timelines(&huge).is_err(),
        "an absurd length is refused"
    );
    let json = encode_response(&Response::Timelines {
        id: 3,
        timelines: echo.timelines.clone(),
    });
    assert!(
        bytes.len() * 2 < json.len(),
        "bytes {} vs JSON {}",
        bytes.len(),
        json.len()
    );
}

// ---------------------------------------------------------------- worker computation

#[wasm_bindgen_test]
fn worker_run_simulates_seed000_in_simai_mode_with_progress() {
    let mut steps = Vec::new();
    let mut req = run_request(
        3,
        &[("junk.bin", b"not a workload\n"), ("seed000.txt", SEED000)],
    );
    req.settings.mode = Mode::Simai;
    req.settings.set(Field::NvlinkBw, "360").unwrap();
    let out = compute::run(&req, &mut |p| steps.push((p.id, p.done, p.total, p.label)));
    assert_eq!(
        steps,
        vec![
            (3, 0, 5, "Parsing 2 files".to_string()),
            (3, 1, 5, "Summarising junk.bin (file 1 of 2)".to_string()),
            (3, 2, 5, "Summarising seed000.txt (file 2 of 2)".to_string()),
            (3, 3, 5, "Simulating".to_string()),
            (3, 4, 5, "Preparing results".to_string()),
        ]
    );
    assert_eq!(out.files.len(), 2);
    assert_eq!(out.files[0].format, None);
    assert!(out.files[0].has_errors());
    assert_eq!(out.files[1].format.as_deref(), Some("simai-workload"));
    let world = out.files[1]
        .fields
        .iter()
        .find(|f| f.testid == "world")
        .unwrap();
    assert_eq!(world.value, "512");
    // The default settings and `-nv 360` are SimAI's reference flags (r000).
    let r = out.result.expect("a SimAI workload gives a result");
    assert_eq!(r.kind, views::ResultKind::Simai);
    assert_eq!(r.iteration_time_ns.map(|ns| ns / 1000), Some(534_975));
    let fig = |k: &str| r.figures.iter().find(|f| f.key == k).map(|f| f.value);
    assert_eq!(
        fig("compute").map(|q| q.as_f64() as u64 / 1000),
        Some(280_084)
    );
    assert_eq!(
        fig("comm.DP").map(|q| q.as_f64() as u64 / 1000),
        Some(112_271)
    );
    assert_eq!(
        r.breakdown.iter().map(|s| s.value_ns).sum::<u64>(),
        r.iteration_time_ns.unwrap(),
        "the breakdown adds up to the iteration time"
    );
    assert_eq!(r.tables[0].rows.len(), 33);
    assert!(r.exports.iter().any(|e| e.testid == "export-csv"));
    let (_, source) = compute::run_with_source(&req, &mut |_| {});
    let csv = trainscope_web::engine_run::export(&source.expect("exports"), "export-csv")
        .expect("the CSV");
    let reference = include_str!("../../../tests/fixtures/simai/expected/r000-EndToEnd.csv");
    assert_eq!(
        csv.lines().nth(1).unwrap().split_once(',').unwrap().1,
        reference.lines().nth(1).unwrap().split_once(',').unwrap().1,
        "the summary line equals SimAI's (after the file-name field)"
    );
    assert!(
        out.timelines.is_empty(),
        "the analytical mode has no timeline"
    );
}

#[wasm_bindgen_test]
fn worker_run_in_event_mode_equals_the_cli_and_returns_timelines() {
    // The page's defaults are the CLI's (cross fixture: `trainscope simulate
    // FILE --json`, no flags).
    let req = run_request(1, &[("simai_llama65b_tp8_pp4_vpp8.txt", SEED000)]);
    let out = compute_output(&req);
    let r = out.result.expect("simulated");
    assert_eq!(r.kind, views::ResultKind::Event);
    let cross: serde_json::Value = serde_json::from_str(include_str!(
        "../../../tests/fixtures/cross/event_seed000.json"
    ))
    .unwrap();
    assert_eq!(
        r.iteration_time_ns,
        cross["figures"]["iteration_time_ns"].as_u64()
    );
    assert_eq!(out.timelines.len(), 1);
    assert_eq!(out.timelines[0].label, "simulated");
    assert!(out.timelines[0].timeline.lanes().len() >= 4);
    for id in ["export-chrome-trace", "export-summary-json", "export-csv"] {
        assert!(r.exports.iter().any(|e| e.testid == id), "{id}");
    }
    assert_eq!(r.bars.len(), 4, "one utilisation bar per stage");
}

#[wasm_bindgen_test]
fn several_inputs_simulate_the_last_and_say_so_and_measured_runs_compare() {
    let out = compute_output(&run_request(1, &[("a.txt", SEED000), ("b.txt", SEED001)]));
    let msgs: Vec<&str> = out.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert!(
        msgs.iter().any(|m| m
            .contains("`b.txt` states World size (GPUs) = 1024 but an earlier file states 512")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains("simulating `b.txt`, the last loaded")),
        "{msgs:?}"
    );
    assert_eq!(out.settings.world_size, 512, "the first file wins");
    let echo = compute_output(&run_request(
        2,
        &[("wd8_tp2_pp4_numl4_bs2_rank7_x.txt", ECHO)],
    ));
    assert_eq!(echo.files[0].format.as_deref(), Some("echo-trace"));
    let r = echo.result.expect("a measured run replays");
    assert_eq!(
        r.measured.len(),
        1,
        "measured iteration time beside the simulated one"
    );
    let labels: Vec<&str> = echo.timelines.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels, ["simulated", "measured"]);
    // SimAI mode refuses a measured run with a hint to switch.
    let mut req = run_request(3, &[("rank7.txt", ECHO)]);
    req.settings.mode = Mode::Simai;
    let simai = compute_output(&req);
    assert_eq!(simai.result, None);
    assert!(simai
        .diagnostics
        .iter()
        .any(|d| d.is_error() && d.message.contains("needs a SimAI/AICB workload")));
}

// ---------------------------------------------------------------- reducer

#[wasm_bindgen_test]
fn run_ids_make_older_responses_stale() {
    let s = reduce(
        Rc::new(AppState::default()),
        Action::Loaded {
            files: vec![("a.txt".into(), SEED000.to_vec().into())],
            example: Some("a.txt".into()),
        },
    );
    assert_eq!((s.files_rev, s.example.as_deref()), (1, Some("a.txt")));
    assert!(s.can_run());
    let s = reduce(s, Action::RunStarted(1));
    let s = reduce(s, Action::RunStarted(2));
    let old = compute_output(&run_request(1, &[("a.txt", SEED001)]));
    let s2 = reduce(
        s.clone(),
        Action::Worker(Response::Done {
            id: 1,
            output: Box::new(old),
        }),
    );
    assert!(Rc::ptr_eq(&s, &s2), "run 1's result is stale");
    let s = reduce(
        s,
        Action::Worker(Response::Progress(Progress {
            id: 2,
            done: 0,
            total: 2,
            label: "Parsing a.txt".into(),
            parsed_bytes: None,
        })),
    );
    assert!(matches!(&s.run, RunStatus::Running { id: 2, progress: Some(p) } if p.done == 0));
    let mut out = compute_output(&run_request(2, &[("a.txt", SEED000)]));
    // The worker sends the timelines after `Done`.
    let timelines = std::mem::take(&mut out.timelines);
    assert_eq!(timelines.len(), 1);
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 2,
            output: Box::new(out),
        }),
    );
    assert_eq!(s.run, RunStatus::Done { id: 2 });
    assert!(s.files[0].view.is_some());
    assert_eq!(s.settings.world_size, 512, "pre-filled from the header");
    assert!(s.result().is_some());
    let stale = reduce(
        s.clone(),
        Action::Worker(Response::Timelines {
            id: 1,
            timelines: timelines.clone(),
        }),
    );
    assert!(Rc::ptr_eq(&s, &stale), "run 1's timelines are stale");
    assert!(s.timelines_stale(), "run 2's timelines have not come yet");
    let s = reduce(s, Action::Worker(Response::Timelines { id: 2, timelines }));
    assert_eq!(s.timelines.len(), 1);
    assert_eq!((s.timelines_run, s.timelines_stale()), (2, false));
}

/// Timelines become `Rc`s once; a pin keeps A's (also when the pin comes
/// before the timeline); the panel offers A vs B, then measured vs
/// simulated, and draws the right pair.
#[wasm_bindgen_test]
fn timelines_are_shared_pinned_and_offered_as_views() {
    use trainscope_web::components::timeline_panel::{available_views, pick, TimelineView};
    let finish = |s: Rc<AppState>, id: u64, files: &[(&str, &[u8])], pin_early: bool| {
        let s = reduce(s, Action::RunStarted(id));
        let mut out = compute_output(&run_request(id, files));
        let timelines = std::mem::take(&mut out.timelines);
        let s = reduce(
            s,
            Action::Worker(Response::Done {
                id,
                output: Box::new(out),
            }),
        );
        let s = if pin_early { reduce(s, Action::Pin) } else { s };
        reduce(s, Action::Worker(Response::Timelines { id, timelines }))
    };
    let s = finish(Rc::new(AppState::default()), 1, &[("a.txt", SEED000)], true);
    let a = s
        .compare_timeline
        .clone()
        .expect("A's timeline attached when it arrives");
    assert_eq!(a.label, "A");
    assert!(
        Rc::ptr_eq(&a.timeline, &s.timelines[0].timeline),
        "shared, not copied"
    );
    // Re-rendering the same state compares by identity.
    assert_eq!(s.timelines.clone(), s.timelines);
    assert_eq!(
        available_views(&s.timelines, s.compare_timeline.as_ref()),
        [TimelineView::Simulated],
        "A is this run: nothing to compare"
    );
    let s = finish(s, 2, &[("a.txt", SEED001)], false);
    let views = available_views(&s.timelines, s.compare_timeline.as_ref());
    assert_eq!(
        views,
        [TimelineView::PinnedVsCurrent, TimelineView::Simulated]
    );
    let (top, bottom) = pick(views[0], &s.timelines, s.compare_timeline.as_ref()).unwrap();
    assert!(Rc::ptr_eq(&top.timeline, &a.timeline));
    assert!(Rc::ptr_eq(
        &bottom.unwrap().timeline,
        &s.timelines[0].timeline
    ));
    // A measured run: measured vs simulated, either alone.
    let s = reduce(s, Action::Unpin);
    assert!(s.compare_timeline.is_none());
    let s = finish(s, 3, &[("wd8_tp2_pp4_numl4_bs2_rank7_x.txt", ECHO)], false);
    let views = available_views(&s.timelines, None);
    assert_eq!(
        views,
        [
            TimelineView::MeasuredVsSimulated,
            TimelineView::Simulated,
            TimelineView::Measured
        ]
    );
    let (top, bottom) = pick(views[0], &s.timelines, None).unwrap();
    assert_eq!(
        (top.label.as_str(), bottom.unwrap().label.as_str()),
        ("measured", "simulated")
    );
    // SimAI mode: an empty list replaces the old timelines.
    let s = reduce(s, Action::RunStarted(4));
    let mut req = run_request(4, &[("a.txt", SEED000)]);
    req.settings.mode = Mode::Simai;
    let mut out = compute_output(&req);
    let timelines = std::mem::take(&mut out.timelines);
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 4,
            output: Box::new(out),
        }),
    );
    let s = reduce(s, Action::Worker(Response::Timelines { id: 4, timelines }));
    assert!(s.timelines.is_empty() && available_views(&s.timelines, None).is_empty());
    let s = reduce(s, Action::Clear);
    assert!(s.timelines.is_empty());
}

#[wasm_bindgen_test]
fn cancel_and_crash_and_failed() {
    let s = reduce(Rc::new(AppState::default()), Action::RunStarted(5));
    let s = reduce(s, Action::Cancel);
    assert_eq!(s.run, RunStatus::Cancelled { id: 5 });
    let s2 = reduce(
        s.clone(),
        Action::Worker(Response::Failed {
            id: 5,
            message: "late".into(),
        }),
    );
    assert!(Rc::ptr_eq(&s, &s2), "nothing after a cancel counts");
    let s = reduce(s, Action::RunStarted(6));
    let s = reduce(s, Action::Crashed(Some(6), "trap".into()));
    assert_eq!(
        s.run,
        RunStatus::Failed {
            id: 6,
            message: "trap".into()
        }
    );
    let s = reduce(s, Action::Crashed(None, "cannot start".into()));
    assert_eq!(s.notices, vec!["cannot start".to_string()]);
}

#[wasm_bindgen_test]
fn edits_pin_fields_keep_text_and_report_parse_errors() {
    let s = Rc::new(AppState::default());
    let s = reduce(s, Action::Edit(Field::World, "1".into()));
    let s = reduce(s, Action::Edit(Field::World, "1x".into()));
    assert_eq!(s.field_text(Field::World), "1x");
    assert_eq!(s.settings.world_size, 1, "the last good value stays");
    let errs = s.field_errors();
    assert_eq!(errs.len(), 1);
    assert!(errs[0].message.contains("not a whole number"));
    assert!(s.pinned_fields.contains(&Field::World));
    assert_eq!(s.edit_rev, 2);
    // A preset changes the bandwidth text shown.
    let s = reduce(s, Action::Edit(Field::NvlinkBw, "300".into()));
    let s = reduce(s, Action::Edit(Field::Gpu, "A100".into()));
    assert_eq!(s.field_text(Field::NvlinkBw), "240");
    // Hints do not override the pinned world.
    let out = compute_output(&run_request(1, &[("a.txt", SEED000)]));
    let s = reduce(s, Action::Edit(Field::World, "64".into()));
    let s = reduce(s, Action::RunStarted(1));
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 1,
            output: Box::new(out),
        }),
    );
    assert_eq!((s.settings.world_size, s.settings.tp), (64, 8));
}

#[wasm_bindgen_test]
fn example_is_kept_only_for_a_single_gallery_file_and_pin_copies_the_result() {
    let s = reduce(
        Rc::new(AppState::default()),
        Action::Loaded {
            files: vec![("a.txt".into(), SEED000.to_vec().into())],
            example: Some("a.txt".into()),
        },
    );
    let s2 = reduce(
        s.clone(),
        Action::Loaded {
            files: vec![("b.txt".into(), SEED001.to_vec().into())],
            example: None,
        },
    );
    assert_eq!(s2.example, None);
    // Another example replaces both files.
    let s4 = reduce(
        s2.clone(),
        Action::Loaded {
            files: vec![("c.txt".into(), SEED000.to_vec().into())],
            example: Some("c.txt".into()),
        },
    );
    let names: Vec<&str> = s4.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        (names, s4.example.as_deref()),
        (vec!["c.txt"], Some("c.txt"))
    );
    let s3 = reduce(s2, Action::Remove("a.txt".into()));
    assert_eq!((s3.files.len(), s3.example.clone()), (1, None));
    let s = reduce(s, Action::Pin);
    assert!(s.compare.is_none(), "nothing to pin before a result");
    let s = reduce(s, Action::RunStarted(1));
    let out = compute_output(&run_request(1, &[("a.txt", SEED000)]));
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 1,
            output: Box::new(out),
        }),
    );
    let s = reduce(s, Action::Pin);
    assert_eq!(
        s.compare.as_ref().map(|p| p.files.clone()),
        Some(vec!["a.txt".to_string()])
    );
    let s = reduce(s, Action::Clear);
    assert!(s.files.is_empty() && s.output.is_none());
    assert!(s.compare.is_some(), "the pin survives a clear");
    let s = reduce(s, Action::Unpin);
    assert!(s.compare.is_none());
}

#[wasm_bindgen_test]
fn link_pins_hold_until_its_files_are_removed() {
    let (url, _) = from_fragment("world=64&tp=2");
    let s = reduce(Rc::new(AppState::default()), Action::Restore(Box::new(url)));
    let s = reduce(s, Action::Edit(Field::Tp, "4".into()));
    let s = reduce(
        s,
        Action::Loaded {
            files: vec![("a.txt".into(), SEED000.to_vec().into())],
            example: None,
        },
    );
    let s = reduce(s, Action::RunStarted(1));
    let out = compute_output(&run_request(1, &[("a.txt", SEED000)]));
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 1,
            output: Box::new(out),
        }),
    );
    assert_eq!(
        (s.settings.world_size, s.settings.tp),
        (64, 4),
        "the link and the user win"
    );
    let s = reduce(s, Action::Remove("a.txt".into()));
    let pinned: Vec<Field> = s.pinned_fields.iter().copied().collect();
    assert_eq!(pinned, vec![Field::Tp], "typed pins stay, link pins go");
    let s = reduce(
        s,
        Action::Loaded {
            files: vec![("b.txt".into(), SEED001.to_vec().into())],
            example: None,
        },
    );
    let s = reduce(s, Action::RunStarted(2));
    let out = compute_output(&RunRequest {
        pinned: s.pinned_fields.clone(),
        ..run_request(2, &[("b.txt", SEED001)])
    });
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 2,
            output: Box::new(out),
        }),
    );
    assert_eq!((s.settings.world_size, s.settings.tp), (1024, 4));
}

// ---------------------------------------------------------------- formatting, diff, sort

#[wasm_bindgen_test]
fn human_numbers() {
    assert_eq!(format::duration_ns(0), "0 ns");
    assert_eq!(format::duration_ns(999), "999 ns");
    assert_eq!(format::duration_ns(534_975_000), "534.975 ms");
    assert_eq!(format::duration_ns(7_213_000_000), "7.213 s");
    assert_eq!(format::signed_duration_ns(-1_500_000), "−1.500 ms");
    assert_eq!(format::bytes(20_971_520), "20.000 MiB");
    assert_eq!(format::bytes(1023), "1023 B");
    assert_eq!(format::count(1_234_567), "1\u{2009}234\u{2009}567");
    assert_eq!(format::relative_change(200.0, 250.0), "+25.0 %");
    assert_eq!(format::relative_change(200.0, 150.0), "−25.0 %");
    assert_eq!(format::relative_change(0.0, 1.0), "—");
}

#[wasm_bindgen_test]
fn compare_rows_pair_by_key() {
    let a = vec![
        Figure::new(
            "iteration_time",
            "Iteration",
            Quantity::DurationNs(1_000_000),
        ),
        Figure::new("comm.TP", "TP", Quantity::DurationNs(400)),
        Figure::new("util", "Utilisation", Quantity::Fraction(0.5)),
    ];
    let b = vec![
        Figure::new(
            "iteration_time",
            "Iteration",
            Quantity::DurationNs(1_250_000),
        ),
        Figure::new("util", "Utilisation", Quantity::Fraction(0.625)),
        Figure::new("bubble", "Bubble", Quantity::DurationNs(5)),
    ];
    let rows = diff_figures(&a, &b);
    let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, vec!["iteration_time", "comm.TP", "util", "bubble"]);
    assert_eq!(
        rows[0].delta,
        Some(("+250.000 µs".into(), "+25.0 %".into()))
    );
    assert_eq!(rows[1].delta, None);
    assert_eq!(rows[2].delta, Some(("+12.5 pts".into(), "+25.0 %".into())));
    assert_eq!((rows[3].a, rows[3].delta.clone()), (None, None));
    // Colours by meaning: a longer iteration is worse, a higher utilisation
    // better; a figure with no pair is neutral.
    assert_eq!(rows[0].verdict, Verdict::Worse);
    assert_eq!(rows[2].verdict, Verdict::Better);
    assert_eq!(rows[3].verdict, Verdict::Neutral);
    // Against a measurement the size of the error counts, not its sign:
    // +25 % is amber, a simulated time 56 % under its measurement red.
    let errs = error_figures(&a, &b);
    assert_eq!(errs[0].verdict, Verdict::Fair);
    let measured = [Figure::new(
        "iteration_time",
        "Iteration",
        Quantity::DurationNs(1_000),
    )];
    let off = [Figure::new(
        "iteration_time",
        "Iteration",
        Quantity::DurationNs(440),
    )];
    let close = [Figure::new(
        "iteration_time",
        "Iteration",
        Quantity::DurationNs(1_050),
    )];
    assert_eq!(error_figures(&measured, &off)[0].verdict, Verdict::Worse);
    assert_eq!(error_figures(&measured, &close)[0].verdict, Verdict::Better);
    // ... while as a change 56 % faster is better.
    assert_eq!(diff_figures(&measured, &off)[0].verdict, Verdict::Better);
}

#[wasm_bindgen_test]
fn table_sorts_numbers_by_value_and_is_stable() {
    use trainscope_web::components::table::{sorted_order, Direction};
    let rows = vec![
        vec![Cell::Text("b".into()), Cell::DurationNs(10)],
        vec![Cell::Text("a".into()), Cell::DurationNs(9)],
        vec![Cell::Text("c".into()), Cell::DurationNs(100)],
        vec![Cell::Text("a".into()), Cell::DurationNs(10)],
    ];
    assert_eq!(
        sorted_order(&rows, 1, Direction::Ascending),
        vec![1, 0, 3, 2]
    );
    assert_eq!(
        sorted_order(&rows, 1, Direction::Descending),
        vec![2, 0, 3, 1]
    );
    assert_eq!(
        sorted_order(&rows, 0, Direction::Ascending),
        vec![1, 3, 0, 2]
    );
}

// ---------------------------------------------------------------- mounted components

async fn mount<C: yew::BaseComponent>(props: C::Properties) -> web_sys::Element {
    let document = gloo::utils::document();
    let host = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&host).unwrap();
    yew::Renderer::<C>::with_root_and_props(host.clone(), props).render();
    gloo::timers::future::TimeoutFuture::new(20).await;
    host
}

#[wasm_bindgen_test]
async fn app_mounts_with_controls_labels_and_gallery() {
    let host = mount::<trainscope_web::app::App>(()).await;
    let input = host
        .query_selector("[data-testid=file-input]")
        .unwrap()
        .expect("file input rendered");
    assert_eq!(input.get_attribute("type").as_deref(), Some("file"));
    assert!(input.has_attribute("multiple"));
    assert_eq!(
        host.query_selector_all("[data-testid=example]")
            .unwrap()
            .length(),
        5
    );
    let mode = host
        .query_selector("select[data-testid=mode]")
        .unwrap()
        .expect("mode select");
    let values: Vec<String> = (0..2)
        .map(|i| {
            mode.query_selector_all("option")
                .unwrap()
                .get(i)
                .unwrap()
                .unchecked_into::<web_sys::Element>()
                .get_attribute("value")
                .unwrap()
        })
        .collect();
    assert_eq!(values, vec!["event", "simai"]);
    let simulate = host
        .query_selector("[data-testid=simulate]")
        .unwrap()
        .expect("simulate");
    assert!(simulate.has_attribute("disabled"), "nothing loaded yet");
    // Every settings control has a label pointing at it.
    let controls = host
        .query_selector_all(".settings input, .settings select")
        .unwrap();
    assert!(controls.length() >= 10);
    for i in 0..controls.length() {
        let el: web_sys::Element = controls.get(i).unwrap().unchecked_into();
        let id = el.id();
        let label = host.query_selector(&format!("label[for='{id}']")).unwrap();
        assert!(label.is_some(), "label for #{id}");
    }
    host.remove();
}

use wasm_bindgen::JsCast;

#[wasm_bindgen_test]
async fn results_panel_shows_iteration_time_figures_and_draws() {
    use trainscope_web::components::results::{Results, ResultsProps};
    use trainscope_web::views::{Bar, ResultKind, ResultView, Segment};
    let mut r = ResultView::new(ResultKind::Event, "Event-level simulation", "test");
    r.iteration_time_ns = Some(534_975_000);
    r.figures = vec![Figure::new("bubble", "Bubble", Quantity::DurationNs(1_000))];
    r.measured = vec![Figure::new(
        "iteration_time",
        "Iteration time",
        Quantity::DurationNs(500_000_000),
    )];
    r.breakdown = vec![
        Segment {
            key: "compute".into(),
            label: "Compute".into(),
            value_ns: 300,
        },
        Segment {
            key: "comm.TP".into(),
            label: "TP".into(),
            value_ns: 100,
        },
        Segment {
            key: "bubble".into(),
            label: "Bubble".into(),
            value_ns: 100,
        },
    ];
    r.bars = vec![Bar {
        label: "stage 0".into(),
        fraction: 0.75,
    }];
    r.exports = vec![views::ExportFile {
        label: "Chrome trace".into(),
        testid: "export-chrome-trace".into(),
        file_name: "t.json".into(),
        mime: "application/json".into(),
    }];
    let host = mount::<Results>(ResultsProps {
        result: r,
        stale: false,
        on_pin: yew::Callback::noop(),
        pinned: false,
        on_error: yew::Callback::noop(),
        on_export: yew::Callback::noop(),
        stale_note: None,
        downloads_blocked: None,
    })
    .await;
    let it = host
        .query_selector("[data-testid=iteration-time]")
        .unwrap()
        .unwrap();
    assert_eq!(it.get_attribute("data-ns").as_deref(), Some("534975000"));
    assert_eq!(it.text_content().unwrap().trim(), "534.975 ms");
    assert!(host
        .query_selector("[data-testid=export-chrome-trace]")
        .unwrap()
        .is_some());
    assert!(host
        .query_selector("[data-testid=compare-pin]")
        .unwrap()
        .is_some());
    let row = host
        .query_selector("[data-testid=compare-row][data-key=iteration_time]")
        .unwrap()
        .unwrap();
    assert!(
        row.text_content().unwrap().contains("+34.975 ms"),
        "measured vs simulated"
    );
    let canvas: web_sys::HtmlCanvasElement = host
        .query_selector("canvas")
        .unwrap()
        .unwrap()
        .unchecked_into();
    let ctx: web_sys::CanvasRenderingContext2d =
        canvas.get_context("2d").unwrap().unwrap().unchecked_into();
    // The first segment (compute, Okabe-Ito blue #0072b2) is drawn at the
    // left of the bar, by an effect after the render: poll for it (up to
    // 10 s on a loaded machine) rather than race it.
    let mut rgb = (0, 0, 0);
    for _ in 0..200 {
        let px = ctx.get_image_data(20.0, 50.0, 1.0, 1.0).unwrap().data();
        rgb = (px[0], px[1], px[2]);
        if rgb == (0, 114, 178) {
            break;
        }
        gloo::timers::future::TimeoutFuture::new(50).await;
    }
    assert_eq!(rgb, (0, 114, 178));
    host.remove();
}

/// Placement order and fabric oversubscription: validated with a message
/// next to their field, carried through the URL fragment, and mapped onto
/// the event mode's network configuration.
#[wasm_bindgen_test]
fn placement_and_oversubscription_settings() {
    use trainscope_core::engine::config::PlacementOrder;
    let mut s = Settings::default();
    assert_eq!(s.placement, PlacementOrder::from_name("tp-dp-pp").unwrap());
    assert_eq!(s.oversubscription, 1.0);
    assert_eq!(s.validate(), vec![]);
    // Below 1: an error on the oversubscription field only.
    s.set(Field::Oversubscription, "0.5").unwrap();
    let errs = s.validate();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].field, Field::Oversubscription);
    assert!(
        errs[0]
            .message
            .contains("0.5 is not a factor between 1 (full bisection bandwidth)"),
        "{}",
        errs[0].message
    );
    // Not a number / not an order: refused by `set`, value unchanged.
    assert!(s.set(Field::Oversubscription, "x").is_err());
    assert_eq!(s.oversubscription, 0.5);
    let e = s.set(Field::Placement, "tp-tp-dp").unwrap_err();
    assert!(e.contains("tp-pp-dp"), "{e}");
    // The SimAI mode does not use them: not checked there.
    s.mode = Mode::Simai;
    assert_eq!(s.validate(), vec![]);
    s.mode = Mode::Event;
    s.set(Field::Oversubscription, "2.5").unwrap();
    s.set(Field::Placement, "pp-dp-tp").unwrap();
    assert_eq!(s.validate(), vec![]);
    // URL round trip.
    let set: BTreeSet<Field> = [Field::Placement, Field::Oversubscription]
        .into_iter()
        .collect();
    let frag = to_fragment(None, &s, &set);
    assert_eq!(frag, "mode=event&placement=pp-dp-tp&oversubscription=2.5");
    let (back, notes) = from_fragment(&format!("#{frag}"));
    assert_eq!(notes, Vec::<String>::new());
    assert_eq!(
        back.settings.placement,
        PlacementOrder::from_name("pp-dp-tp").unwrap()
    );
    assert_eq!(back.settings.oversubscription, 2.5);
    assert!(back.given.contains(&Field::Placement));
    let (_, notes) = from_fragment("placement=tp-dp");
    assert!(notes.iter().any(|n| n.contains("placement")), "{notes:?}");
    // Every order the form offers is one the core reads.
    for name in PlacementOrder::NAMES {
        let order = PlacementOrder::from_name(name);
        assert!(order.is_some(), "{name}");
        assert_eq!(order.map(|o| o.name()).as_deref(), Some(name));
    }
    // The event configuration carries them.
    let (config, _) = trainscope_web::engine_run::event_config(&s, &set);
    assert_eq!(config.network.oversubscription, 2.5);
    assert_eq!(
        config.network.placement,
        PlacementOrder::from_name("pp-dp-tp").unwrap()
    );
    assert!(config.validate().is_ok());
}

// ---------------------------------------------------------------- downloads, stale results, pins (web UX audit)

/// One finished run of `a.txt` (seed 000), its timelines not yet arrived.
fn finished_run(id: u64) -> (Rc<AppState>, Vec<trainscope_web::protocol::NamedTimeline>) {
    let s = reduce(
        Rc::new(AppState::default()),
        Action::Loaded {
            files: vec![("a.txt".into(), SEED000.to_vec().into())],
            example: None,
        },
    );
    let s = reduce(s, Action::RunStarted(id));
    let mut out = compute_output(&run_request(id, &[("a.txt", SEED000)]));
    let timelines = std::mem::take(&mut out.timelines);
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id,
            output: Box::new(out),
        }),
    );
    (s, timelines)
}

#[wasm_bindgen_test]
fn downloads_only_for_a_finished_result_and_export_failures_are_notices() {
    let s = Rc::new(AppState::default());
    assert!(s.downloads_blocked().is_some(), "nothing to download yet");
    let (s, _) = finished_run(1);
    assert_eq!(s.downloads_blocked(), None);
    assert!(!s.results_stale() && s.stale_note().is_none());
    // The worker could not make a download of the shown run: a notice.
    let s = reduce(
        s,
        Action::Worker(Response::ExportFailed {
            id: 1,
            testid: "export-chrome-trace".into(),
            message: "no such download".into(),
        }),
    );
    assert_eq!(s.run, RunStatus::Done { id: 1 }, "the run stays done");
    assert_eq!(
        s.notices,
        vec!["download failed: no such download".to_string()]
    );
    // The worker failing after the run finished (its timelines not yet
    // sent) is not a download failure, and the timeline wait ends.
    assert!(s.timeline_wait_note().is_some());
    let failed = reduce(
        s.clone(),
        Action::Worker(Response::Failed {
            id: 1,
            message: "trap".into(),
        }),
    );
    assert_eq!(
        failed.notices.last().map(String::as_str),
        Some("the worker failed after run 1 finished: trap")
    );
    assert!(failed.timeline_wait_note().is_none());
    let s = reduce(s, Action::ExportFailed("t.json: gone".into()));
    assert_eq!(s.notices.len(), 2);
    // During a run: blocked, and the result is stale (dimmed, no note).
    let s = reduce(s, Action::RunStarted(2));
    assert!(s.downloads_blocked().unwrap().contains("in progress"));
    assert!(s.results_stale() && s.stale_note().is_none());
    // Cancelled: still blocked, stale with the note; files not parsed by
    // the cancelled run say so.
    let s = reduce(s, Action::Cancel);
    assert!(s.downloads_blocked().unwrap().contains("cancelled"));
    assert!(s.results_stale());
    assert!(s
        .stale_note()
        .unwrap()
        .contains("earlier run: press Simulate"));
    assert_eq!(
        s.unparsed_label(),
        "not parsed (run cancelled) — press Simulate"
    );
    // A failed run: the same.
    let s = reduce(s, Action::RunStarted(3));
    assert_eq!(s.unparsed_label(), "parsing…");
    let s = reduce(s, Action::Crashed(Some(3), "trap".into()));
    assert!(s.downloads_blocked().unwrap().contains("failed"));
    assert!(s.stale_note().is_some());
    assert_eq!(
        s.unparsed_label(),
        "not parsed (run failed) — press Simulate"
    );
}

#[wasm_bindgen_test]
fn an_edit_makes_the_result_stale_until_its_run_finishes() {
    let (s, _) = finished_run(1);
    let s = reduce(s, Action::Edit(Field::NicBw, "100".into()));
    assert!(s.results_stale(), "the settings changed since the run");
    assert!(
        s.stale_note().is_none(),
        "a valid edit's run follows the debounce pause: dimmed, no note to flash"
    );
    let s = reduce(s, Action::RunStarted(2));
    let out = compute_output(&run_request(2, &[("a.txt", SEED000)]));
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 2,
            output: Box::new(out),
        }),
    );
    assert!(!s.results_stale() && s.stale_note().is_none());
    // A value that does not parse: the note says to correct it first.
    let s = reduce(s, Action::Edit(Field::World, "x".into()));
    assert!(s.stale_note().unwrap().contains("correct the settings"));
}

#[wasm_bindgen_test]
fn the_timeline_is_drawing_until_it_arrives_then_empty_means_none() {
    let (s, timelines) = finished_run(1);
    assert!(s.timelines_pending());
    assert_eq!(s.timeline_wait_note(), Some("Drawing the timeline…"));
    // A newer run started before they arrived: they still belong to the
    // result shown.
    let s = reduce(s, Action::RunStarted(2));
    let s = reduce(s, Action::Worker(Response::Timelines { id: 1, timelines }));
    assert!(!s.timelines_pending());
    assert_eq!(s.timeline_wait_note(), None);
    assert_eq!(s.timelines.len(), 1);
    // A run with no timeline: once its empty list arrives, no wait note.
    let s = reduce(s, Action::Cancel);
    let s = reduce(s, Action::RunStarted(3));
    let out = compute_output(&run_request(3, &[("junk.bin", b"junk\n")]));
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 3,
            output: Box::new(out),
        }),
    );
    assert!(s.timeline_wait_note().is_some());
    let s = reduce(
        s,
        Action::Worker(Response::Timelines {
            id: 3,
            timelines: Vec::new(),
        }),
    );
    assert_eq!(s.timeline_wait_note(), None);
    assert!(s.timelines.is_empty());
}

#[wasm_bindgen_test]
fn a_replacing_file_set_unpins_file_fields_an_added_file_keeps_them() {
    let (s, _) = finished_run(1);
    let s = reduce(s, Action::Edit(Field::MicroBatches, "8".into()));
    let s = reduce(s, Action::Edit(Field::NicBw, "100".into()));
    // Adding a file keeps what the user typed.
    let added = reduce(
        s.clone(),
        Action::Loaded {
            files: vec![("b.txt".into(), SEED001.to_vec().into())],
            example: None,
        },
    );
    assert!(added.pinned_fields.contains(&Field::MicroBatches));
    assert_eq!(added.field_text(Field::MicroBatches), "8");
    // An example replacing the files: the file-derived field is the
    // example's again; the cluster field the user chose stays.
    let s = reduce(
        s,
        Action::Loaded {
            files: vec![("c.txt".into(), SEED001.to_vec().into())],
            example: Some("c.txt".into()),
        },
    );
    assert!(!s.pinned_fields.contains(&Field::MicroBatches));
    assert!(s.pinned_fields.contains(&Field::NicBw));
    assert_eq!(s.field_text(Field::NicBw), "100");
    // Until the new file's hints arrive the form shows the default, not
    // the value typed for the old file (which the run would not use).
    assert_eq!(
        s.settings.micro_batches,
        trainscope_web::settings::Settings::default().micro_batches
    );
    let s = reduce(s, Action::RunStarted(2));
    let out = compute_output(&RunRequest {
        settings: s.settings.clone(),
        pinned: s.pinned_fields.clone(),
        ..run_request(2, &[("c.txt", SEED001)])
    });
    let hinted = out
        .hints
        .micro_batches
        .expect("seed 001 states its micro-batches");
    assert_ne!(hinted, 8);
    let s = reduce(
        s,
        Action::Worker(Response::Done {
            id: 2,
            output: Box::new(out),
        }),
    );
    assert_eq!(
        s.settings.micro_batches, hinted,
        "the new file's value applies"
    );
    assert_eq!(s.field_text(Field::MicroBatches), hinted.to_string());
    // Clear all: the next files are a new set too.
    let s = reduce(s, Action::Edit(Field::World, "64".into()));
    let s = reduce(s, Action::Clear);
    assert!(!s.pinned_fields.contains(&Field::World));
    assert_ne!(
        s.settings.world_size, 64,
        "the typed world is gone with its files"
    );
    assert!(s.pinned_fields.contains(&Field::NicBw));
}

#[wasm_bindgen_test]
async fn disabled_downloads_say_why_and_a_stale_result_says_so() {
    use trainscope_web::components::results::{Results, ResultsProps};
    use trainscope_web::views::{ResultKind, ResultView};
    let mut r = ResultView::new(ResultKind::Event, "Event-level simulation", "test");
    r.exports = vec![views::ExportFile {
        label: "Chrome trace".into(),
        testid: "export-chrome-trace".into(),
        file_name: "t.json".into(),
        mime: "application/json".into(),
    }];
    let host = mount::<Results>(yew::props!(ResultsProps {
        result: r,
        stale: true,
        stale_note: Some(yew::AttrValue::from(
            "These results are from an earlier run: press Simulate."
        )),
        downloads_blocked: Some(yew::AttrValue::from("The last run was cancelled")),
        on_pin: yew::Callback::noop(),
        on_error: yew::Callback::noop(),
        on_export: yew::Callback::noop(),
    }))
    .await;
    let button = host
        .query_selector("[data-testid=export-chrome-trace]")
        .unwrap()
        .unwrap();
    assert!(button.has_attribute("disabled"));
    assert_eq!(
        button.get_attribute("title").as_deref(),
        Some("The last run was cancelled")
    );
    let note = host
        .query_selector("[data-testid=stale-note]")
        .unwrap()
        .expect("the stale note");
    assert!(note.text_content().unwrap().contains("earlier run"));
    assert!(host.query_selector(".results.stale").unwrap().is_some());
    host.remove();
}

#[wasm_bindgen_test]
async fn the_timeline_panel_says_drawing_before_the_timelines_arrive() {
    use trainscope_web::components::timeline_panel::{TimelinePanel, TimelinePanelProps};
    let host = mount::<TimelinePanel>(yew::props!(TimelinePanelProps {
        timelines: Vec::new(),
        waiting: Some(yew::AttrValue::from("Drawing the timeline…")),
    }))
    .await;
    let text = host.text_content().unwrap_or_default();
    assert!(text.contains("Drawing the timeline…"), "{text}");
    assert!(!text.contains("produced no timeline"));
    host.remove();
    let host = mount::<TimelinePanel>(yew::props!(TimelinePanelProps {
        timelines: Vec::new(),
    }))
    .await;
    assert!(host
        .query_selector("[data-testid=timeline-none]")
        .unwrap()
        .is_some());
    host.remove();
}

// ---------------------------------------------------------------- models

#[wasm_bindgen_test]
fn a_model_config_shows_its_model_and_runs_as_the_described_job() {
    let mut req = run_request(9, &[("Mixtral-8x7B/config.json", MIXTRAL)]);
    req.settings.mode = Mode::Event;
    // The job panel's settings (not active: the file is the input).
    req.job.training.ep = 2;
    req.job.training.dp = Some(2);
    req.job.training.global_batch_size = Some(4);
    let out = compute_output(&req);
    let f = &out.files[0];
    assert_eq!(f.format.as_deref(), Some("hf-config"));
    let field = |id: &str| {
        f.fields
            .iter()
            .find(|x| x.testid == id)
            .map(|x| x.value.clone())
    };
    assert_eq!(field("model").as_deref(), Some("Mixtral-8x7B"));
    assert_eq!(field("family").as_deref(), Some("mixtral"));
    assert_eq!(field("heads").as_deref(), Some("32 / 8"));
    assert_eq!(
        field("experts").as_deref(),
        Some("8 routed, top-2, 0 shared")
    );
    assert_eq!(
        field("parameters").as_deref(),
        Some("46\u{2009}702\u{2009}792\u{2009}704 (12\u{2009}879\u{2009}925\u{2009}248 active)")
    );
    // Simulated as a model-level job: that model, the panel's settings.
    let job = out.job.as_ref().expect("ran as a job");
    assert_eq!(
        job.model,
        trainscope_web::job::JobModel::File("Mixtral-8x7B/config.json".into())
    );
    assert_eq!(job.error, None);
    let r = out.result.expect("simulated");
    let m = r.model.expect("model figures");
    assert!(m.description.contains("EP 2"), "{}", m.description);
    assert!(m.mfu > 0.0 && m.mfu < 1.0);
    assert!(!out
        .diagnostics
        .iter()
        .any(|d| d.message.contains("trainscope simulate --model")));
    // In the SimAI-compatible mode a model config is still refused.
    req.settings.mode = Mode::Simai;
    let out = compute_output(&req);
    assert!(out.result.is_none() && out.job.is_none());
    assert!(out.diagnostics.iter().any(|d| d.is_error()));
}

// ---------------------------------------------------------------- definitions

/// Every figure any run shows (both modes, every input kind) has a one-line
/// definition in the one list, and a measured input says what "measured"
/// covers for its format.
#[wasm_bindgen_test]
fn every_figure_shown_has_a_definition_and_measured_says_what_it_covers() {
    use trainscope_web::glossary::{self, DEFINITIONS, MEASURED};
    let mut keys: Vec<&str> = DEFINITIONS.iter().map(|d| d.key).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), DEFINITIONS.len(), "one entry per key");
    for d in DEFINITIONS {
        for text in [d.event, d.simai].into_iter().flatten() {
            assert!(
                !text.is_empty() && !text.contains('\n'),
                "{}: one line",
                d.key
            );
        }
    }
    let runs: [(&str, &[u8], Mode); 6] = [
        ("s0.txt", SEED000, Mode::Event),
        ("s0.txt", SEED000, Mode::Simai),
        ("s1.txt", SEED001, Mode::Simai),
        ("n.tsv", NEUSIGHT, Mode::Event),
        ("echo_megatron_trace_rank7_tp2_pp4.txt", ECHO, Mode::Event),
        ("o.log", OPTIMUS, Mode::Event),
    ];
    let mut measured_formats = Vec::new();
    for (name, bytes, mode) in runs {
        let mut req = run_request(1, &[(name, bytes)]);
        req.settings.mode = mode;
        let r = compute_output(&req).result.expect("a result");
        let mut shown: Vec<&str> = r.figures.iter().map(|f| f.key.as_str()).collect();
        shown.push("iteration_time");
        for key in shown {
            assert!(
                glossary::definition(r.kind, key).is_some(),
                "{name} ({mode:?}): `{key}` has no definition"
            );
        }
        if !r.measured.is_empty() {
            let format = r
                .measured_format
                .clone()
                .expect("a measured input's format");
            assert!(glossary::measured_covers(&format).is_some(), "{format}");
            measured_formats.push(format);
        }
    }
    assert_eq!(measured_formats, ["echo-trace", "optimus-prime-log"]);
    assert_eq!(MEASURED.len(), 4);
    assert!(glossary::measured_covers("kineto-trace")
        .unwrap()
        .contains("ProfilerStep"));
    // Each format in its own words: no two share a sentence.
    let chakra = glossary::measured_covers("chakra-et").unwrap();
    assert!(chakra.contains("Chakra") && chakra.contains("duration"));
    for (i, (_, a)) in MEASURED.iter().enumerate() {
        for (_, b) in &MEASURED[i + 1..] {
            for sentence in a.split("; ").flat_map(|p| p.split(". ")) {
                assert!(!b.contains(sentence), "shared wording: {sentence}");
            }
        }
    }
    assert!(glossary::measured_covers("optimus-prime-log")
        .unwrap()
        .contains("forward passes only"));
}

/// The definitions are reachable from the figures: each tile's tooltip, the
/// "What these numbers mean" disclosure (with the critical path in event
/// mode), and the measured block's note.
#[wasm_bindgen_test]
async fn figures_carry_their_definitions_and_the_measured_block_its_coverage() {
    use trainscope_web::components::results::{Results, ResultsProps};
    use trainscope_web::glossary;
    use trainscope_web::views::{ResultKind, ResultView};
    for kind in [ResultKind::Event, ResultKind::Simai] {
        let mut r = ResultView::new(kind, "t", "t");
        r.iteration_time_ns = Some(1_000);
        r.figures = ["compute", "bubble", "comm", "comm.TP", "comm.PP"]
            .iter()
            .map(|k| Figure::new(k, k, Quantity::DurationNs(10)))
            .collect();
        if kind == ResultKind::Event {
            r.figures.push(Figure::new(
                "simai_bubble",
                "SimAI",
                Quantity::DurationNs(1),
            ));
            r.measured = vec![Figure::new(
                "iteration_time",
                "Iteration time",
                Quantity::DurationNs(900),
            )];
            r.measured_format = Some("optimus-prime-log".into());
        }
        let host = mount::<Results>(ResultsProps {
            result: r.clone(),
            stale: false,
            on_pin: yew::Callback::noop(),
            pinned: false,
            on_error: yew::Callback::noop(),
            on_export: yew::Callback::noop(),
            stale_note: None,
            downloads_blocked: None,
        })
        .await;
        for f in &r.figures {
            let tile = host
                .query_selector(&format!("[data-testid=figure][data-key='{}']", f.key))
                .unwrap()
                .unwrap();
            assert_eq!(
                tile.get_attribute("title").as_deref(),
                glossary::definition(kind, &f.key),
                "{kind:?} {}",
                f.key
            );
        }
        let headline = host.query_selector(".headline").unwrap().unwrap();
        assert_eq!(
            headline.get_attribute("title").as_deref(),
            glossary::definition(kind, "iteration_time")
        );
        let listed = host
            .query_selector_all("[data-testid=definitions] [data-testid=definition]")
            .unwrap();
        let extra = usize::from(kind == ResultKind::Event); // the critical path
        assert_eq!(listed.length() as usize, 1 + r.figures.len() + extra);
        let critical = host
            .query_selector("[data-testid=definition][data-key=critical_path]")
            .unwrap();
        assert_eq!(critical.is_some(), kind == ResultKind::Event);
        let covers = host
            .query_selector("[data-testid=measured-covers]")
            .unwrap();
        match kind {
            ResultKind::Event => assert!(covers
                .unwrap()
                .text_content()
                .unwrap()
                .contains("Optimus-Prime logs time forward passes only")),
            ResultKind::Simai => assert!(covers.is_none()),
        }
        host.remove();
    }
}

/// The profiler's rank files of one job, one gzip'd, are one measured run on
/// the page (as on the command line): two ranks, measured and simulated.
#[wasm_bindgen_test]
fn kineto_rank_files_are_one_measured_run() {
    let req = run_request(
        31,
        &[
            ("job2_rank0.json", KINETO_RANK0),
            ("job2_rank1.pt.trace.json.gz", KINETO_RANK1),
        ],
    );
    let out = compute_output(&req);
    assert_eq!(out.files.len(), 2);
    for f in &out.files {
        assert_eq!(
            f.format.as_deref(),
            Some("kineto-trace"),
            "{:?}",
            f.diagnostics
        );
    }
    let r = out.result.as_ref().expect("a result");
    assert_eq!(r.measured_format.as_deref(), Some("kineto-trace"));
    assert!(!r.measured.is_empty());
    assert!(
        out.diagnostics
            .iter()
            .all(|d| !d.message.contains("one simulation takes one input")),
        "{:?}",
        out.diagnostics
    );
}

#[wasm_bindgen_test]
fn plan_inputs_round_trip_the_link_and_plan_as_the_cli_flags_say() {
    use trainscope_core::goodput::job_facts::PlanJob;
    use trainscope_core::goodput::{FailureRate, Interval, Work, DEFAULT_RESTART_S};
    use trainscope_web::plan_inputs::{AmountKind, FailureKind, PlanInputs};
    // Nothing in the link: no plan.
    assert_eq!(PlanInputs::from_fragment("model=llama3-8b&job_tp=2"), None);
    let mut p = PlanInputs::default();
    assert_eq!(p.restart_seconds, DEFAULT_RESTART_S.to_string());
    p.amount_kind = AmountKind::Steps;
    p.amount = "5000".into();
    p.failure_kind = FailureKind::Rate;
    p.failure = "6.5".into();
    p.interval = "3600".into();
    p.async_checkpoint = true;
    p.checkpoint_seconds = "30".into();
    let fragment = format!("model=llama3-8b&{}", p.fragment());
    assert_eq!(PlanInputs::from_fragment(&fragment), Some(p.clone()));
    // The page's link reader leaves the plan's keys to the panel.
    let (_, notes) = from_fragment(&fragment);
    assert!(notes.is_empty(), "{notes:?}");
    // The core's input, as the CLI flags would make it.
    let job = PlanJob {
        iteration_time_ns: 2_000_000_000,
        gpus: 64,
        tokens_per_iteration: Some(1 << 20),
        checkpoint_size_bytes: Some(1 << 30),
        memory_bytes: None,
    };
    let i = p.input(&job, 8).expect("input");
    assert_eq!(i.work, Work::Steps(5000));
    assert_eq!(i.failure_rate, FailureRate::Per1000NodeDays(6.5));
    assert_eq!(i.checkpoint_interval, Interval::Seconds(3600.0));
    assert_eq!(i.checkpoint_write_s, Some(30.0));
    assert!(i.async_checkpoint);
    assert_eq!(
        p.cli_flags(),
        " --steps 5000 --failure-rate 6.5 --checkpoint-seconds 30 --checkpoint-interval 3600 --async-checkpoint"
    );
    // Not a number: a message naming the field.
    p.interval = "often".into();
    assert!(p
        .input(&job, 8)
        .unwrap_err()
        .contains("checkpoint interval"));
}
