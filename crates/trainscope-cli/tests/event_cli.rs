//! End-to-end tests of `trainscope simulate` in the event mode (the default)
//! and of `trainscope convert`: JSON keys on all five seeds, Chrome trace
//! units, exit codes, calibration on the Optimus-Prime log, byte-identical
//! repeated runs, shared cluster flags, and the cross-check fixtures
//! `tests/fixtures/cross/event_seed00{0,1}.json` that the web crate's
//! browser tests also assert (CLI and browser must agree).

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Output;
use trainscope_core::{
    engine::SimConfig,
    run::{run_files, RunOptions},
};

mod common;
use common::{fixture, json_ok as json_of, stderr, trainscope};

fn tmp(name: &str) -> PathBuf {
    common::tmp("event_cli", name)
}

const SEED000: &str = "seeds/simai_llama65b_tp8_pp4_vpp8.txt";
const SEED001: &str = "seeds/simai_405b_tp8_pp16_ga16_sp.txt";
const NEUSIGHT: &str = "seeds/neusight_gpt2large_dp_workitems.tsv";
const ECHO: &str = "seeds/echo_megatron_trace_rank7_tp2_pp4.txt";
const OPTIMUS: &str = "seeds/optimus_prime_llama1b_pp8_train.log";

fn simulate(file: &str, extra: &[&str]) -> Output {
    let path = fixture(file);
    let mut args = vec!["simulate", path.as_str()];
    args.extend_from_slice(extra);
    trainscope(&args)
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("`{key}` is not a u64 in {v}"))
}

/// The documented keys, and the reference rank's decomposition adds up to
/// the iteration time.
fn check_keys(v: &Value, measured: bool) {
    assert_eq!(v["mode"], "event");
    let t = u(v, "iteration_time_ns");
    assert!(t > 0);
    let e = &v["exposed_comm_ns"];
    let exposed: u64 = ["dp", "dp_ep", "tp", "ep", "pp"]
        .iter()
        .map(|k| {
            e[k].as_u64()
                .unwrap_or_else(|| panic!("exposed_comm_ns.{k}"))
        })
        .sum();
    assert_eq!(exposed, u(v, "exposed_comm_total_ns"));
    assert_eq!(
        u(v, "compute_ns") + u(v, "bubble_ns") + exposed + u(v, "other_idle_ns"),
        t,
        "decomposition of {}",
        v["files"]
    );
    assert!(v["warnings"].is_array());
    let stages = v["stages"].as_array().expect("stages");
    assert!(!stages.is_empty());
    for s in stages {
        for k in ["stage", "rank", "compute_ns", "bubble_ns", "end_ns"] {
            assert!(s[k].is_u64(), "stages[].{k}");
        }
        assert!(s["exposed_comm_ns"]["dp_ep"].is_u64());
    }
    assert!(u(&v["critical_path"], "spans") > 0);
    assert!(v["critical_path"]["segments"].is_array());
    if measured {
        assert!(u(v, "measured_iteration_time_ns") > 0);
        assert!(v["comparison"]["error_percent"].is_f64());
    } else {
        assert!(
            v["measured_iteration_time_ns"].is_null()
                && v.get("measured_iteration_time_ns").is_some(),
            "described jobs carry measured_iteration_time_ns: null"
        );
    }
}

#[test]
fn json_keys_on_every_seed() {
    for (seed, measured, stages) in [
        (SEED000, false, 4),
        (SEED001, false, 16),
        (NEUSIGHT, false, 1),
        (ECHO, true, 4),
        (OPTIMUS, true, 8),
    ] {
        let v = json_of(&simulate(seed, &["--json"]));
        check_keys(&v, measured);
        assert_eq!(u(&v, "pipeline_stages"), stages, "{seed}");
    }
}

#[test]
fn measured_runs_report_their_measurement() {
    let v = json_of(&simulate(ECHO, &["--json"]));
    // Rank 7's first op start to its optimizer end (docs/FORMATS.md §2.3).
    assert_eq!(u(&v, "measured_iteration_time_ns"), 3_851_380_000);
    let w = v["warnings"].to_string();
    assert!(w.contains("nearest present stage"), "{w}");
    let ranks: Vec<u64> = v["assumed_ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, vec![1, 3, 5]);
    let by_kind = v["comparison"]["by_kind"].as_array().unwrap();
    let fwd = by_kind.iter().find(|k| k["kind"] == "forward").unwrap();
    // The replay keeps the measured compute.
    assert_eq!(fwd["measured_ns"], fwd["simulated_ns"]);

    let v = json_of(&simulate(OPTIMUS, &["--json"]));
    // Mean of the single-iteration epoch lines (~1.6 s).
    let m = u(&v, "measured_iteration_time_ns");
    assert!((1_550_000_000..1_700_000_000).contains(&m), "{m}");
    assert_eq!(u(&v, "micro_batches"), 32);
    assert_eq!(v["schedule"], "1f1b");
    assert!(v["warnings"]
        .to_string()
        .contains("estimated as 2 x forward"));
}

#[test]
fn calibrate_brings_the_optimus_error_under_one_percent() {
    let plain = json_of(&simulate(OPTIMUS, &["--json"]));
    let before = plain["comparison"]["error_percent"].as_f64().unwrap();
    assert!(before.abs() > 10.0, "{before}");
    let v = json_of(&simulate(OPTIMUS, &["--json", "--calibrate"]));
    let cal = &v["calibration"];
    assert!(cal["error_percent"].as_f64().unwrap().abs() < 1.0, "{cal}");
    assert!(v["comparison"]["error_percent"].as_f64().unwrap().abs() < 1.0);
    let scale = cal["compute_scale"].as_f64().unwrap();
    assert!(scale > 1.0 && scale < 10.0, "{scale}");
    assert_eq!(v["compute_scale"].as_f64(), Some(scale));
    assert_eq!(cal["what_if"], false);
    // Then the other flags apply: a what-if with twice the micro-batches
    // keeps the fitted scale and takes longer.
    let w = json_of(&simulate(
        OPTIMUS,
        &["--json", "--calibrate", "--micro-batches", "64"],
    ));
    assert_eq!(w["calibration"]["what_if"], true);
    assert_eq!(w["calibration"]["compute_scale"].as_f64(), Some(scale));
    assert!(u(&w, "iteration_time_ns") > u(&v, "iteration_time_ns"));
    assert!(w["notes"].to_string().contains("what-if"));
}

/// The eight rank files of the fixture Echo job, as paths.
fn echo_job() -> Vec<String> {
    let dir = fixture("echo_job");
    let mut paths: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".txt"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 8);
    paths
}

fn simulate_job(extra: &[&str]) -> Output {
    let paths = echo_job();
    let mut args = vec!["simulate"];
    args.extend(paths.iter().map(String::as_str));
    args.extend_from_slice(extra);
    trainscope(&args)
}

#[test]
fn echo_replays_report_what_they_inferred() {
    let v = json_of(&simulate_job(&["--json"]));
    check_keys(&v, true);
    let err = v["comparison"]["error_percent"].as_f64().unwrap();
    assert!(err.abs() < 3.0, "{err}");
    assert_eq!(v["algorithm"], "inferred");
    let inf = &v["inferred"];
    assert!(inf["note"].as_str().unwrap().contains("bandwidth"));
    assert_eq!(inf["clocks_shared"], true);
    assert!(u(inf, "split_occurrences") > 0);
    assert!(inf["unmeasured_stages"].is_null());
    for k in ["nvlink_gbps", "nic_gbps", "latency", "algorithm"] {
        assert_eq!(inf["overridden"][k], false, "{k}");
    }
    let groups = inf["groups"].as_array().unwrap();
    let names: Vec<String> = groups
        .iter()
        .map(|g| {
            format!(
                "{} {}",
                g["group"].as_str().unwrap(),
                g["direction"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "tp forward",
            "tp backward",
            "embedding backward",
            "p2p forward",
            "p2p backward"
        ]
    );
    for g in groups {
        assert_eq!(g["basis"], "split");
        assert!(g["bandwidth_gbps"].as_f64().unwrap() > 0.0, "{g}");
        assert!(g["latency_ns"].is_u64());
        assert!(g["latency_identified"].is_boolean());
        assert!(u(g, "samples") > 0 && u(g, "points") > 0);
        assert!(g["rms_error_percent"].as_f64().unwrap() >= 0.0);
        assert!(g["median_error_percent"].as_f64().unwrap() >= 0.0);
        for k in [
            "rms_error_ns",
            "measured_ns",
            "fitted_ns",
            "waiting_ns",
            "after_ns",
        ] {
            assert!(g[k].is_u64(), "{k} in {g}");
        }
    }
    assert!(v["notes"].to_string().contains("replay: every traced op"));

    // The text report lists them.
    let out = simulate_job(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("inferred from the trace"), "{text}");
    assert!(text.contains("TP         forward   split"), "{text}");

    // An explicit link setting overrides the inferred value and says so.
    let w = json_of(&simulate_job(&["--json", "--nvlink-gbps", "370.8"]));
    assert_eq!(w["inferred"]["overridden"]["nvlink_gbps"], true);
    assert_eq!(w["inferred"]["groups"], v["inferred"]["groups"]);
    assert!(w["notes"]
        .to_string()
        .contains("what-if: the NVLink bandwidth you set"));
    assert!(u(&w, "iteration_time_ns") < u(&v, "iteration_time_ns"));

    // The seed alone: its unmeasured stages are inferred from its waits.
    let s = json_of(&simulate(ECHO, &["--json"]));
    let st = &s["inferred"]["unmeasured_stages"];
    assert_eq!(st["stages"], json!([0, 1, 2]));
    assert!(st["forward_scale"].as_f64().unwrap() > 0.0);
    assert!(st["backward_scale"].as_f64().unwrap() > 0.0);
    assert!(s["comparison"]["error_percent"].as_f64().unwrap().abs() < 3.0);

    // Optimus-Prime times forward passes only: nothing inferred, and a note.
    let o = json_of(&simulate(OPTIMUS, &["--json"]));
    assert!(o["inferred"].is_null() && o.get("inferred").is_some());
    assert!(o["notes"].to_string().contains("forward passes only"));
}

/// Every complete event of a Chrome trace: `ts`/`dur` in microseconds equal
/// the exact `start_ns`/`duration_ns` / 1000.
fn check_chrome_units(trace: &Value) -> (usize, f64) {
    assert_eq!(trace["displayTimeUnit"], "ns");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let mut n = 0;
    let mut end_us = 0.0f64;
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let ts = e["ts"].as_f64().unwrap();
        let dur = e["dur"].as_f64().unwrap();
        let start_ns = e["args"]["start_ns"].as_u64().unwrap();
        let dur_ns = e["args"]["duration_ns"].as_u64().unwrap();
        assert!((ts - start_ns as f64 / 1000.0).abs() < 1e-6, "{e}");
        assert!((dur - dur_ns as f64 / 1000.0).abs() < 1e-6, "{e}");
        end_us = end_us.max(ts + dur);
        n += 1;
    }
    (n, end_us)
}

#[test]
fn chrome_trace_and_spans_csv_are_written_in_microseconds() {
    let trace = tmp("seed000.trace.json");
    let csv = tmp("seed000.spans.csv");
    let v = json_of(&simulate(
        SEED000,
        &[
            "--json",
            "--chrome-trace",
            trace.to_str().unwrap(),
            "--spans-csv",
            csv.to_str().unwrap(),
        ],
    ));
    let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let (n, end_us) = check_chrome_units(&t);
    assert!(n > 100);
    // The last span ends at the iteration end: microseconds, not ms or ns.
    let iter_us = u(&v, "iteration_time_ns") as f64 / 1000.0;
    assert!((end_us - iter_us).abs() < 1e-3, "{end_us} vs {iter_us}");
    let flows = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "s")
        .count();
    assert!(flows > 0, "stage-to-stage flows");
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("lane,group_kind,group,stage,stream,kind"));
    assert_eq!(text.lines().count(), n + 1);
}

#[test]
fn convert_writes_the_measured_timeline() {
    let out_path = tmp("echo.trace.json");
    let out = trainscope(&[
        "convert",
        &fixture(ECHO),
        "--to",
        "chrome-trace",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t: Value = serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
    let (n, end_us) = check_chrome_units(&t);
    // 9 ops and 48 sub-ops in the seed, every one a span.
    assert_eq!(n, 57);
    // Measured, not simulated: the trace spans rank 7's 3851.38 ms.
    assert!((end_us - 3_851_380.0).abs() < 1e-3, "{end_us}");
    let fwd = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "forward_step")
        .unwrap();
    assert_eq!(fwd["dur"].as_f64(), Some(604_580.0));
    assert_eq!(fwd["pid"], 7);

    let csv = tmp("echo.spans.csv");
    let out = trainscope(&[
        "convert",
        &fixture(ECHO),
        "--to",
        "spans-csv",
        "-o",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 58);

    // A described workload has no measured timeline: usage error with a pointer.
    let out = trainscope(&["convert", &fixture(SEED000), "-o", "/dev/null"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("simulate"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--chrome-trace"));
}

#[test]
fn exit_codes() {
    // 2: usage (unknown flag, two inputs, unreadable file).
    assert_eq!(simulate(SEED000, &["--bogus"]).status.code(), Some(2));
    let out = simulate(SEED000, &[&fixture(NEUSIGHT)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("one workload or one measured run"));
    // An unknown preset is an invalid configuration (4).
    assert_eq!(
        simulate(SEED000, &["--gpu-type", "V100"]).status.code(),
        Some(4)
    );
    assert_eq!(
        trainscope(&["simulate", "/nonexistent/file.txt"])
            .status
            .code(),
        Some(2)
    );
    // 3: a file that does not parse.
    let bad = tmp("garbage.txt");
    std::fs::write(&bad, "this is not a workload\n").unwrap();
    let out = trainscope(&["simulate", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("unrecognised format"));
    // 4: invalid configuration.
    let out = simulate(
        SEED000,
        &["--schedule", "interleaved", "--virtual-stages", "2"],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(stderr(&out).contains("multiple of the stage count"));
    assert_eq!(
        simulate(SEED000, &["--nvlink-gbps", "-1"]).status.code(),
        Some(4)
    );
    assert_eq!(
        simulate(SEED000, &["--latency-us", "-3"]).status.code(),
        Some(4)
    );
    // 0, with a text report and the warnings on stderr.
    let out = simulate(SEED001, &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("iteration time"), "{text}");
    assert!(stderr(&out).contains("no pp_comm in the header"));
}

#[test]
fn repeated_runs_are_byte_identical() {
    for seed in [SEED001, ECHO, OPTIMUS] {
        let a = tmp("det_a.json");
        let b = tmp("det_b.json");
        let run = |p: &PathBuf| simulate(seed, &["--json", "--chrome-trace", p.to_str().unwrap()]);
        let (x, y) = (run(&a), run(&b));
        assert_eq!(x.status.code(), Some(0));
        assert_eq!(x.stdout, y.stdout, "{seed}");
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    }
}

#[test]
fn shared_flags_and_algorithms() {
    let iter = |args: &[&str]| {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        u(&json_of(&simulate(SEED000, &a)), "iteration_time_ns")
    };
    let node = iter(&["--gpus-per-node", "4", "--nics-per-node", "2"]);
    assert_eq!(
        node,
        iter(&["--gpus-per-server", "4", "--nics-per-server", "2"])
    );
    assert_eq!(node, iter(&["-g_p_s", "4", "-n_p_s", "2"]));
    assert_ne!(node, iter(&[]));
    assert_eq!(iter(&["-nv", "200"]), iter(&["--nvlink-gbps", "200"]));
    assert_eq!(
        iter(&["--gpu-type", "A100"]),
        iter(&["--nvlink-gbps", "240"])
    );
    let v = json_of(&simulate(SEED000, &["--json", "--algorithm", "simai"]));
    assert_eq!(v["algorithm"], "simai");
    let v = json_of(&simulate(SEED000, &["--json", "--schedule", "gpipe"]));
    assert_eq!(v["schedule"], "gpipe");
    // --virtual-stages alone implies the interleaved schedule.
    let v = json_of(&simulate(
        SEED001,
        &["--json", "--virtual-stages", "2", "--micro-batches", "32"],
    ));
    assert_eq!(v["schedule"], "interleaved");
    assert_eq!(u(&v, "virtual_stages"), 2);
    // NeuSight: --world is the data-parallel size; all-reduces appear.
    let one = json_of(&simulate(NEUSIGHT, &["--json"]));
    let four = json_of(&simulate(NEUSIGHT, &["--json", "--world", "4"]));
    assert_eq!(one["parallel"]["dp"], 1);
    assert_eq!(four["parallel"]["dp"], 4);
    assert!(u(&four, "iteration_time_ns") > u(&one, "iteration_time_ns"));
    let repeats = json_of(&simulate(NEUSIGHT, &["--json", "--block-repeats", "12"]));
    assert!(u(&repeats, "iteration_time_ns") < u(&one, "iteration_time_ns"));
}

/// The figures the cross fixtures hold.
fn figures(v: &Value) -> Value {
    json!({
        "iteration_time_ns": v["iteration_time_ns"],
        "compute_ns": v["compute_ns"],
        "bubble_ns": v["bubble_ns"],
        "exposed_comm_ns": v["exposed_comm_ns"],
        "simai_bubble_ns": v["simai_bubble_ns"],
        "pipeline_stages": v["pipeline_stages"],
        "micro_batches": v["micro_batches"],
        "critical_path_spans": v["critical_path"]["spans"],
        "tasks": v["tasks"],
    })
}

/// CLI and core agree on seeds 000 and 001 with default settings, and both
/// equal the committed cross fixture (written when missing, or rewritten
/// with `UPDATE_CROSS_FIXTURES=1` after an intended change).
#[test]
fn cross_fixtures_cli_equals_core() {
    for (seed, name) in [
        (SEED000, "event_seed000.json"),
        (SEED001, "event_seed001.json"),
    ] {
        let cli = json_of(&simulate(seed, &["--json"]));
        let bytes = std::fs::read(fixture(seed)).unwrap();
        let base = seed.rsplit('/').next().unwrap();
        let core = run_files(
            &[(base, bytes.as_slice())],
            &SimConfig::default(),
            &RunOptions::default(),
        )
        .expect("core simulates")
        .report_json();
        assert_eq!(figures(&cli), figures(&core), "{seed}");
        let want = json!({
            "file": seed,
            "settings": "defaults: SimConfig::default(), RunOptions::default(); CLI: `trainscope simulate FILE --json`",
            "figures": figures(&cli),
        });
        let path = PathBuf::from(fixture(&format!("cross/{name}")));
        let update = std::env::var_os("UPDATE_CROSS_FIXTURES").is_some();
        if update || !path.exists() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, serde_json::to_string_pretty(&want).unwrap() + "\n").unwrap();
        }
        let have: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(have, want, "{} differs from this build", path.display());
    }
}

/// `--oversubscription 2` divides the inter-node bandwidth: on seed 000 (DP
/// 16 across 64 nodes) each rank's gradient sync (DP collectives over the
/// fabric) takes longer; `--placement` changes which groups leave a node;
/// out-of-range values are invalid configurations (4).
#[test]
fn oversubscription_and_placement_flags() {
    let base = json_of(&simulate(SEED000, &["--json"]));
    let over = json_of(&simulate(SEED000, &["--json", "--oversubscription", "2"]));
    let sync = |v: &Value| u(&v["stages"][0], "grad_sync_busy_ns");
    assert!(sync(&base) > 0);
    assert!(
        sync(&over) > sync(&base),
        "DP sync {} with oversubscription 2, {} without",
        sync(&over),
        sync(&base)
    );
    assert!(u(&over, "iteration_time_ns") > u(&base, "iteration_time_ns"));
    // The default placement is tp-dp-pp; naming it changes nothing.
    let same = json_of(&simulate(SEED000, &["--json", "--placement", "tp-dp-pp"]));
    assert_eq!(u(&same, "iteration_time_ns"), u(&base, "iteration_time_ns"));
    // PP fastest puts TP groups across nodes: TP collectives get slower.
    let pp_first = json_of(&simulate(SEED000, &["--json", "--placement", "pp-dp-tp"]));
    assert!(
        u(&pp_first["exposed_comm_ns"], "tp") > u(&base["exposed_comm_ns"], "tp"),
        "TP across nodes"
    );
    for bad in [
        &["--placement", "tp-tp-dp"][..],
        &["--placement", "nope"][..],
        &["--oversubscription", "0.5"][..],
    ] {
        let out = simulate(SEED000, bad);
        assert_eq!(out.status.code(), Some(4), "{bad:?}: {}", stderr(&out));
    }
    let out = simulate(SEED000, &["--placement", "nope"]);
    assert!(stderr(&out).contains("tp-pp-dp"), "{}", stderr(&out));
    let out = simulate(SEED000, &["--oversubscription", "0.5"]);
    assert!(
        stderr(&out).contains("oversubscription"),
        "{}",
        stderr(&out)
    );
    let help = String::from_utf8_lossy(&trainscope(&["simulate", "--help"]).stdout).to_string();
    assert!(help.contains("--placement") && help.contains("--oversubscription"));
}

/// Every flag value that cannot be meant exits 4 with a message naming the
/// setting and the value, in both modes where the flag applies; the bound
/// just inside is accepted (the core's `limits`, as the page checks them).
#[test]
fn values_that_cannot_be_meant_exit_4_naming_the_value() {
    let refused: [(&str, &[&str], &str); 20] = [
        // (input, flags, what stderr says)
        (SEED000, &["--world", "0"], "invalid setting `world`: 0 is not between 1 and 1048576"),
        (NEUSIGHT, &["--world", "0"], "invalid setting `world`: 0 is not between 1 and 1048576"),
        (SEED000, &["--world", "4"], "invalid setting `world`: 4 is not a multiple of TP x PP = 8 x 4 = 32"),
        (SEED000, &["--world", "2097152"], "invalid setting `world`: 2097152 is not between 1 and 1048576"),
        (SEED000, &["--gpus-per-node", "0"], "invalid setting `gpus_per_node`: 0 is not between 1 and 4096"),
        (SEED000, &["--nics-per-node", "4097"], "invalid setting `nics_per_node`: 4097 is not between 1 and 4096"),
        (SEED000, &["--nvlink-gbps", "nan"], "invalid setting `nvlink_gbps`: NaN is not a positive bandwidth"),
        (SEED000, &["--nic-gbps", "1e300"], "invalid setting `nic_gbps`: 1e300 is not a positive bandwidth in GB/s of at most 1e9"),
        (SEED000, &["--nic-gbps=-inf"], "invalid setting `nic_gbps`: -inf is not a positive bandwidth"),
        (SEED000, &["--latency-us", "nan"], "invalid setting `latency_us`: NaN is not between 0 and 1000000 microseconds"),
        (SEED000, &["--oversubscription", "0"], "invalid setting `oversubscription`: 0 is not a factor between 1"),
        (SEED000, &["--micro-batches", "0"], "invalid setting `micro_batches`: 0 is not between 1 and 1048576"),
        (SEED000, &["--virtual-stages", "0"], "invalid setting `virtual_stages`: 0 is not between 1 and 255"),
        (SEED000, &["--backward-factor", "-0.5"], "invalid setting `backward_factor`: -0.5 is not between 0 and 1000"),
        (OPTIMUS, &["--backward-factor", "inf"], "invalid setting `backward_factor`: inf is not between 0 and 1000"),
        (SEED000, &["--activation-bytes", "18446744073709551615"], "invalid setting `activation_bytes`: 18446744073709551615 bytes is more than 1099511627776 (1 TiB) per send"),
        (NEUSIGHT, &["--block-repeats", "0"], "block repeat count 0 is out of range (1 to 1024)"),
        (NEUSIGHT, &["--block-repeats", "1025"], "block repeat count 1025 is out of range (1 to 1024)"),
        (SEED000, &["--mode", "simai", "--world", "0"], "world size must be at least 1, got 0"),
        (SEED000, &["--mode", "simai", "--gpus-per-node", "4097"], "GPUs per server: 4097 is not between 1 and 4096"),
    ];
    for (input, flags, says) in refused {
        let out = simulate(input, flags);
        assert_eq!(out.status.code(), Some(4), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{flags:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{flags:?}");
    }
    for flags in [
        &["--mode", "simai", "--nic-gbps", "1e300"][..],
        &["--mode", "simai", "--nvlink-gbps", "nan"],
        &["--mode", "simai", "--world", "2097152"],
        &["--mode", "simai", "--world", "100"],
        &["--mode", "simai", "--nics-per-node", "0"],
    ] {
        let out = simulate(SEED000, flags);
        assert_eq!(out.status.code(), Some(4), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("invalid configuration"), "{flags:?}");
    }
    // The bounds themselves are accepted.
    for (input, flags) in [
        (SEED000, &["--world", "64"][..]),
        (NEUSIGHT, &["--world", "2", "--block-repeats", "1024"]),
        (
            SEED000,
            &["--gpus-per-node", "4096", "--nics-per-node", "1"],
        ),
        (SEED000, &["--nic-gbps", "1e9", "--latency-us", "0"]),
        (
            SEED000,
            &["--activation-bytes", "0", "--backward-factor", "0"],
        ),
        (
            SEED000,
            &[
                "--mode",
                "simai",
                "--gpus-per-node",
                "4096",
                "--nic-gbps",
                "1e9",
            ],
        ),
    ] {
        let out = simulate(input, flags);
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {}", stderr(&out));
    }
}

/// `--schedule zb-h1|zb-h2`: the zero-bubble schedules by name in the JSON
/// and the report, with the peak activation memory per stage, each faster
/// than 1F1B on seed 001 (p = m = 16: ZB-H2 needs m >= 31, so
/// it runs with 32 micro-batches); too few micro-batches is a configuration
/// error naming the condition.
#[test]
fn zero_bubble_schedules() {
    let run = |args: &[&str]| {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        json_of(&simulate(SEED001, &a))
    };
    let flat = run(&[]);
    let h1 = run(&["--schedule", "zb-h1"]);
    assert_eq!(h1["schedule"], "zb-h1");
    assert!(u(&h1, "iteration_time_ns") < u(&flat, "iteration_time_ns"));
    // Peak activation memory per stage: 1F1B holds 16 - s micro-batches on
    // stage s, ZB-H1 16 on every stage (until each W has run).
    for s in 0..16u64 {
        let st = |v: &Value| v["stages"][s as usize]["peak_activation_micro_batches"].as_f64();
        assert_eq!(st(&flat), Some((16 - s) as f64));
        assert_eq!(st(&h1), Some(16.0));
    }
    let flat32 = run(&["--micro-batches", "32"]);
    let h2 = run(&["--schedule", "zb-h2", "--micro-batches", "32"]);
    assert_eq!(h2["schedule"], "zb-h2");
    assert!(u(&h2, "iteration_time_ns") < u(&flat32, "iteration_time_ns"));
    let text =
        String::from_utf8_lossy(&simulate(SEED001, &["--schedule", "zb-h1"]).stdout).into_owned();
    assert!(text.contains("schedule: zb-h1"), "{text}");
    assert!(text.contains("peak act."), "{text}");
    assert!(text.contains("      16 mb"), "{text}");
    // ZB-V: two chunks of 4 layers per stage, p micro-batches' activations.
    let v = run(&["--schedule", "zbv", "--micro-batches", "32"]);
    assert_eq!(v["schedule"], "zbv");
    assert_eq!(u(&v, "virtual_stages"), 2);
    assert!(u(&v, "iteration_time_ns") < u(&flat32, "iteration_time_ns"));
    assert_eq!(
        v["stages"][0]["peak_activation_micro_batches"].as_f64(),
        Some(16.0)
    );
    // DualPipeV: 2p + 1 = 33 chunk activations on every rank.
    let d = run(&["--schedule", "dualpipev", "--micro-batches", "32"]);
    assert_eq!(d["schedule"], "dualpipev");
    assert_eq!(d["stages"][3]["peak_activation_chunks"].as_u64(), Some(33));
    assert!(u(&d, "iteration_time_ns") < u(&flat32, "iteration_time_ns"));
    let out = simulate(SEED001, &["--schedule", "zb-h2"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr(&out).contains("m = 16, 2p - 1 = 31"),
        "{}",
        stderr(&out)
    );
}
