//! End-to-end tests of the CLI on PyTorch profiler (Kineto) traces (the
//! hand-written 2-rank job of `tests/fixtures/kineto/`, one file gzip'd):
//! `inspect --json` keys (`format`, `rank`, `world`, `iterations`,
//! `kernels`, `collectives`), `--iteration`, `simulate --json` giving the
//! chosen step's `measured_iteration_time_ns` and a replay that meets it,
//! `convert --to chrome-trace` writing the measured timeline, `analyze`
//! naming the straggler.

use std::process::Output;

mod common;
use common::{fixture, json_ok as ok_json, trainscope as run};

fn stdout_json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn inspect_json_of_a_two_rank_job() {
    let r0 = fixture("kineto/job2_rank0.json");
    let r1 = fixture("kineto/job2_rank1.pt.trace.json.gz");
    let out = run(&["inspect", "--json", &r0, &r1]);
    assert_eq!(out.status.code(), Some(0));
    let v = stdout_json(&out);
    for (i, f) in v.as_array().unwrap().iter().enumerate() {
        assert_eq!(f["format"], "kineto-trace");
        assert_eq!(f["rank"], i);
        assert_eq!(f["world"], 2);
        assert_eq!(f["iterations"], serde_json::json!([7, 8]));
        assert_eq!(f["iteration"], 8);
        assert_eq!(f["kernels"], 6);
        assert_eq!(f["collectives"], 2);
    }
    let out = run(&["inspect", "--json", "--iteration", "7", &r0, &r1]);
    assert_eq!(stdout_json(&out)[0]["iteration"], 7);

    // Without distributedInfo: world is null, with a warning.
    let out = run(&[
        "inspect",
        "--json",
        &fixture("kineto/no_distributed_info.json"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v = stdout_json(&out);
    assert!(v[0]["world"].is_null());
    assert!(v[0]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("distributedInfo")));

    // A truncated gzip: read what is there, exit 3 with located errors.
    let out = run(&["inspect", &fixture("kineto/truncated.json.gz")]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gzip stream"), "{err}");
}

#[test]
fn simulate_and_convert_a_two_rank_job() {
    let r0 = fixture("kineto/job2_rank0.json");
    let r1 = fixture("kineto/job2_rank1.pt.trace.json.gz");
    let out = run(&["simulate", "--json", &r0, &r1]);
    let v = ok_json(&out);
    assert_eq!(v["format"], "kineto-trace");
    // Step 8: 1001000.000 .. 1001900.500 us on both ranks.
    assert_eq!(v["measured_iteration_time_ns"], 900_500);
    let simulated = v["iteration_time_ns"].as_u64().unwrap();
    assert!(simulated.abs_diff(900_500) <= 9_005, "{simulated}");

    let dir = std::env::temp_dir().join(format!("trainscope-kineto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("measured.json");
    let out = run(&[
        "convert",
        &r0,
        &r1,
        "--to",
        "chrome-trace",
        "--output",
        path.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let spans = events.iter().filter(|e| e["ph"] == "X").count();
    // Step 8 of two ranks: 6 GPU ops each.
    assert_eq!(spans, 12);
    assert!(events.iter().any(|e| e["name"]
        .as_str()
        .unwrap_or("")
        .starts_with("ncclDevKernel_AllReduce")));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn analyze_names_the_straggler() {
    let r0 = fixture("kineto/job2_rank0.json");
    let r1 = fixture("kineto/job2_rank1.pt.trace.json.gz");
    let out = run(&["analyze", &r0, &r1]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("straggler (longest compute): rank 1"),
        "{text}"
    );
    assert!(text.contains("ProfilerStep#8"), "{text}");
    let out = run(&[
        "analyze",
        "--json",
        "--iteration",
        "7",
        "--top",
        "2",
        &r0,
        &r1,
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v = stdout_json(&out);
    assert_eq!(v["iteration"], 7);
    assert_eq!(v["compute_straggler"], 1);
    assert_eq!(v["ranks"][0]["idle_ns"], 79_625);
    assert_eq!(v["top_kernels"].as_array().unwrap().len(), 2);
    assert_eq!(v["collectives"][0]["last_rank"], 1);
    // A described workload is not a measured run.
    let out = run(&["analyze", &fixture("seeds/simai_llama65b_tp8_pp4_vpp8.txt")]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn simulate_slow_rank_is_a_what_if() {
    let r0 = fixture("kineto/job2_rank0.json");
    let r1 = fixture("kineto/job2_rank1.pt.trace.json.gz");
    let out = run(&["simulate", "--json", "--slow-rank", "1:50", &r0, &r1]);
    let v = ok_json(&out);
    let sr = &v["slow_rank"];
    assert_eq!(sr["rank"], 1);
    assert_eq!(sr["percent"], 50.0);
    let t = sr["iteration_time_ns"].as_u64().unwrap();
    let base = sr["baseline_iteration_time_ns"].as_u64().unwrap();
    assert_eq!(v["iteration_time_ns"].as_u64(), Some(t));
    assert!(t > base, "{t} vs {base}");
    assert_eq!(sr["difference_ns"].as_i64(), Some(t as i64 - base as i64));
    // Without the flag there is no `slow_rank` key and the iteration is
    // the baseline.
    let plain = stdout_json(&run(&["simulate", "--json", &r0, &r1]));
    assert!(plain.get("slow_rank").is_none());
    assert_eq!(plain["iteration_time_ns"].as_u64(), Some(base));
    // A rank outside the set, or bad text: invalid settings (exit 4).
    for bad in ["7:10", "1", "1:-5", "x:10"] {
        let out = run(&["simulate", "--slow-rank", bad, &r0, &r1]);
        assert_eq!(out.status.code(), Some(4), "--slow-rank {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("slow"), "--slow-rank {bad}: {err}");
    }
}
