//! End-to-end tests of `trainscope plan`: a model-level job planned from
//! the flags of `simulate --model` and from its `simulate --json` output
//! (the same plan), the text report, the JSON keys, the same seed giving
//! the same JSON, a workload file's report (no model: the checkpoint time
//! must be given), the presets listed, and bad input refused with a message
//! (exit 2 for usage, 4 for an invalid run setting).

use serde_json::Value;
use std::process::Output;

mod common;
use common::{fixture, json_ok as json_of, stderr, trainscope};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const JOB: [&str; 10] = [
    "--model",
    "llama3-8b",
    "--tp",
    "2",
    "--pp",
    "2",
    "--world",
    "64",
    "--global-batch-size",
    "256",
];

const RUN: [&str; 10] = [
    "--tokens",
    "200000000000",
    "--failure-preset",
    "meta-rsc1",
    "--checkpoint-seconds",
    "60",
    "--gpu-hour-price",
    "2",
    "--runs",
    "300",
];

fn plan(extra: &[&str]) -> Output {
    let mut args = vec!["plan"];
    args.extend_from_slice(&JOB);
    args.extend_from_slice(&RUN);
    args.extend_from_slice(extra);
    trainscope(&args)
}

#[test]
fn json_has_the_plan_keys_and_consistent_numbers() {
    let v = json_of(&plan(&["--json"]));
    for key in [
        "mttf_hours",
        "expected_interruptions",
        "checkpoint_seconds",
        "checkpoint_interval_s",
        "optimal_interval_s",
        "young_interval_s",
        "ettr",
        "days_to_train",
        "gpu_hours",
        "cost",
        "badput",
    ] {
        assert!(!v[key].is_null(), "missing {key}: {v}");
    }
    for key in ["p10", "p50", "p90", "closed_form"] {
        assert!(v["days_to_train"][key].as_f64().unwrap() > 0.0, "{key}");
    }
    for key in [
        "checkpoint_save_s",
        "checkpoint_restore_s",
        "wasted_progress_s",
        "infrastructure_recovery_s",
        "planned_maintenance_s",
    ] {
        assert!(v["badput"][key].as_f64().unwrap() >= 0.0, "{key}");
    }
    // 6.5 per 1000 node-days on 8 nodes: MTTF 24 / (6.5 x 8 / 1000) h.
    let mttf = v["mttf_hours"].as_f64().unwrap();
    assert!((mttf - 24.0 / (6.5 * 8.0 / 1000.0)).abs() < 1e-6, "{mttf}");
    assert_eq!(v["checkpoint_seconds"].as_f64(), Some(60.0));
    assert_eq!(v["interval_source"], "daly");
    let d = &v["days_to_train"];
    let (p10, p90) = (d["p10"].as_f64().unwrap(), d["p90"].as_f64().unwrap());
    assert!(p10 <= p90);
    let ettr = v["ettr"].as_f64().unwrap();
    assert!(ettr > 0.5 && ettr < 1.0, "{ettr}");
    // Cost = GPU-hours x price; GPU-hours = days x 24 x GPUs.
    let g = v["gpu_hours"]["p50"].as_f64().unwrap();
    assert!((v["cost"]["p50"].as_f64().unwrap() - 2.0 * g).abs() < 1e-6 * g);
    assert!((g - d["p50"].as_f64().unwrap() * 24.0 * 64.0).abs() < 1e-6 * g);
    // Tokens -> iterations at 256 x 4096 tokens each.
    assert_eq!(
        v["steps"].as_u64(),
        Some(200_000_000_000u64.div_ceil(256 * 4096))
    );
    assert_eq!(v["job"]["gpus"].as_u64(), Some(64));
}

#[test]
fn same_seed_same_json_and_another_seed_moves_the_spread() {
    let a = json_of(&plan(&["--json", "--seed", "11"]));
    let b = json_of(&plan(&["--json", "--seed", "11"]));
    assert_eq!(a, b);
    let c = json_of(&plan(&["--json", "--seed", "12"]));
    assert_eq!(
        a["days_to_train"]["closed_form"],
        c["days_to_train"]["closed_form"]
    );
    assert_ne!(a["days_to_train"]["p90"], c["days_to_train"]["p90"]);
}

#[test]
fn text_report_has_units() {
    let out = plan(&["--checkpoint-interval", "3600", "--async-checkpoint"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "llama3-8b on 64 H100-SXM",
        "job MTTF",
        "days to train: P10",
        "ETTR",
        "GPU-hours",
        "cost: P50",
        "interval: 60.0 min",
        "given; Daly's optimum",
        "wasted progress (lost work)",
        "Monte-Carlo: 300 runs",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
}

#[test]
fn from_json_plans_the_same_job_as_the_flags() {
    let mut args = vec!["simulate"];
    args.extend_from_slice(&JOB);
    args.push("--json");
    let out = trainscope(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = std::env::temp_dir().join(format!("trainscope-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("job.json");
    std::fs::write(&path, &out.stdout).unwrap();
    let mut args = vec!["plan", "--from-json", path.to_str().unwrap()];
    args.extend_from_slice(&RUN);
    args.push("--json");
    let from_file = json_of(&trainscope(&args));
    let from_flags = json_of(&plan(&["--json"]));
    assert_eq!(from_file, from_flags);
    // The checkpoint size: parameters x (2 + 12) bytes under bf16.
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let params = report["model"]["parameters"].as_u64().unwrap();
    assert_eq!(
        from_file["checkpoint_size_bytes"].as_u64(),
        Some(params * 14)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_workload_report_needs_the_checkpoint_time_and_steps() {
    let out = trainscope(&[
        "simulate",
        &fixture("simai/workload_analytical.txt"),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = std::env::temp_dir().join(format!("trainscope-plan-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w.json");
    std::fs::write(&path, &out.stdout).unwrap();
    let p = path.to_str().unwrap();
    let out = trainscope(&[
        "plan",
        "--from-json",
        p,
        "--steps",
        "1000",
        "--failure-rate",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--checkpoint-bytes or --checkpoint-seconds"));
    let out = trainscope(&[
        "plan",
        "--from-json",
        p,
        "--tokens",
        "1000",
        "--failure-rate",
        "5",
        "--checkpoint-seconds",
        "10",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("give --steps"), "{}", stderr(&out));
    let v = json_of(&trainscope(&[
        "plan",
        "--from-json",
        p,
        "--steps",
        "1000",
        "--failure-rate",
        "5",
        "--checkpoint-seconds",
        "10",
        "--json",
    ]));
    assert_eq!(v["steps"].as_u64(), Some(1000));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn presets_are_listed_with_their_sources() {
    let out = trainscope(&["plan", "--steps", "1", "--failure-preset", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "llama3-405b",
        "2407.21783",
        "meta-rsc1",
        "meta-rsc2",
        "2410.21680",
        "opt-175b",
        "metaseq",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
}

#[test]
fn bad_input_is_refused_with_a_message() {
    // Invalid run settings: exit 4 with the core's message and hint.
    for (extra, needle) in [
        (vec!["--failure-rate", "-1"], "failure_rate"),
        (
            vec!["--checkpoint-interval", "10"],
            "shorter than the checkpoint",
        ),
        (vec!["--checkpoint-seconds", "0"], "checkpoint_write_s"),
        (
            vec!["--checkpoint-bytes", "100000000000000000"],
            "larger than the job's memory",
        ),
        (vec!["--restart-seconds", "NaN"], "restart_s"),
    ] {
        let mut args = vec!["plan"];
        args.extend_from_slice(&JOB);
        args.extend_from_slice(&["--steps", "1000"]);
        if !extra.contains(&"--checkpoint-seconds") {
            args.extend_from_slice(&["--checkpoint-seconds", "60"]);
        }
        if !extra.contains(&"--failure-rate") {
            args.extend_from_slice(&["--failure-rate", "5"]);
        }
        args.extend_from_slice(&extra);
        let out = trainscope(&args);
        assert_eq!(out.status.code(), Some(4), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("hint"), "{extra:?}: {}", stderr(&out));
    }
    let mut args = vec!["plan"];
    args.extend_from_slice(&JOB);
    args.extend_from_slice(&["--steps", "10", "--failure-preset", "nope"]);
    let out = trainscope(&args);
    assert_eq!(out.status.code(), Some(4));
    assert!(stderr(&out).contains("llama3-405b"), "{}", stderr(&out));
    // Zero write bandwidth with the size from the job.
    let mut args = vec!["plan"];
    args.extend_from_slice(&JOB);
    args.extend_from_slice(&[
        "--steps",
        "10",
        "--failure-rate",
        "5",
        "--checkpoint-write-gbps",
        "0",
    ]);
    let out = trainscope(&args);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr(&out).contains("write_bw_gbps_per_node"),
        "{}",
        stderr(&out)
    );
    // Usage: no job, no amount, no rate, two rates, a bad interval.
    for (args, needle) in [
        (
            vec!["plan", "--steps", "10", "--failure-rate", "5"],
            "plan needs a job",
        ),
        (
            vec!["plan", "--model", "llama3-8b", "--failure-rate", "5"],
            "--tokens",
        ),
        (
            vec!["plan", "--model", "llama3-8b", "--steps", "5"],
            "--failure-rate",
        ),
        (
            vec![
                "plan",
                "--model",
                "llama3-8b",
                "--steps",
                "5",
                "--failure-rate",
                "5",
                "--job-mtbf-hours",
                "3",
            ],
            "cannot be used with",
        ),
        (
            vec![
                "plan",
                "--model",
                "llama3-8b",
                "--steps",
                "5",
                "--failure-rate",
                "5",
                "--checkpoint-interval",
                "often",
            ],
            "neither `auto` nor a number",
        ),
        (
            vec![
                "plan",
                "--from-json",
                "/nonexistent/x.json",
                "--steps",
                "5",
                "--failure-rate",
                "5",
            ],
            "cannot read",
        ),
    ] {
        let out = trainscope(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}
