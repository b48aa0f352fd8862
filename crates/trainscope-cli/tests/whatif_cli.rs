//! The what-if flags as users reach them (issue 27): `simulate --slow`,
//! `--slow-link`, `--jitter --seed`, `--blame` on a described job and on a
//! measured replay, refusals with exit 4, and `sweep --straggler` ranking
//! layouts by their step with one GPU slowed.

use serde_json::Value;

mod common;
use common::trainscope;

fn json(args: &[&str]) -> Value {
    let out = trainscope(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

const JOB: [&str; 13] = [
    "simulate",
    "--json",
    "--model",
    "llama3-8b",
    "--world",
    "16",
    "--pp",
    "4",
    "--tp",
    "2",
    "--global-batch-size",
    "64",
    "--seq-length=2048",
];

fn job(extra: &[&str]) -> Value {
    let mut a = JOB.to_vec();
    a.extend_from_slice(extra);
    json(&a)
}

#[test]
fn a_slowed_rank_reports_its_slow_down_and_blame() {
    let plain = job(&[]);
    assert!(plain.get("whatif").is_none());
    let v = job(&["--slow", "5:1.5", "--slow-link", "0-1:2"]);
    let w = &v["whatif"];
    assert_eq!(w["injected"][0], "--slow 5:1.5");
    assert_eq!(w["injected"][1], "--slow-link 0-1:2");
    assert_eq!(w["ideal"], "no faults");
    assert_eq!(w["baseline_iteration_time_ns"], plain["iteration_time_ns"]);
    assert_eq!(w["iteration_time_ns"], v["iteration_time_ns"]);
    let s = w["slowdown"].as_f64().unwrap();
    assert!(s > 1.0, "{s}");
    let blame = w["blame"].as_array().unwrap();
    assert!(blame
        .iter()
        .any(|b| b["by"] == "op" && b["name"] == "compute"));
    for b in blame {
        let share = b["share"].as_f64().unwrap();
        assert!((0.0..=s - 1.0 + 1e-12).contains(&share), "{b}");
    }
}

#[test]
fn a_transient_slow_down_slows_the_iterations_inside_its_window() {
    let permanent = job(&["--slow", "5:1.5"]);
    let slow_ns = permanent["whatif"]["iteration_time_ns"].as_u64().unwrap();
    let base = permanent["whatif"]["baseline_iteration_time_ns"]
        .as_u64()
        .unwrap();
    assert!(permanent["whatif"].get("iteration_times_ns").is_none());
    // The second of three iterations, in iterations and in time.
    let by_iter = job(&["--slow", "5:1.5@iter1+1"]);
    let w = &by_iter["whatif"];
    assert_eq!(w["injected"][0], "--slow 5:1.5@iter1+1");
    assert_eq!(
        w["iteration_times_ns"],
        serde_json::json!([base, slow_ns, base])
    );
    assert_eq!(w["baseline_iteration_time_ns"], base);
    assert_eq!(w["iteration_time_ns"], (2 * base + slow_ns) / 3);
    let s = w["slowdown"].as_f64().unwrap();
    assert!((s - (2 * base + slow_ns) as f64 / (3 * base) as f64).abs() < 1e-12);
    let window = format!("5:1.5@{base}ns+{slow_ns}ns");
    let by_time = job(&["--slow", &window]);
    assert_eq!(
        by_time["whatif"]["iteration_times_ns"],
        w["iteration_times_ns"]
    );
    // The timeline is the first iteration, which the window misses.
    assert_eq!(by_iter["iteration_time_ns"], base);
    assert!(by_iter["notes"].to_string().contains("first iteration"));
    // Malformed windows are refused with exit 4 and the core's words.
    let out = trainscope(&[JOB.as_slice(), &["--slow", "5:1.5@2s"]].concat());
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("@ONSET+DURATION"));
}

#[test]
fn blame_on_a_described_job_is_a_sensitivity_table_per_stage() {
    let v = job(&["--blame", "--blame-factor", "1.2"]);
    let t = v["whatif"]["sensitivity"].as_array().unwrap();
    assert_eq!(t.len(), 4);
    for (i, s) in t.iter().enumerate() {
        assert_eq!(s["stage"], i as u64);
        assert_eq!(s["factor"], 1.2);
        assert!(s["cost_percent"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["carried_by"].is_string());
    }
}

#[test]
fn jitter_is_the_same_under_one_seed() {
    let a = job(&["--jitter", "5", "--seed", "3"]);
    let b = job(&["--jitter", "5", "--seed", "3"]);
    let c = job(&["--jitter", "5", "--seed", "4"]);
    let t = |v: &Value| v["iteration_time_ns"].as_u64().unwrap();
    assert_eq!(t(&a), t(&b));
    assert_ne!(t(&a), t(&c));
    assert_eq!(a["whatif"]["injected"][0], "--jitter 5 --seed 3");
}

#[test]
fn bad_faults_exit_4_with_what_and_where() {
    for (args, says) in [
        (
            vec!["--slow", "99:2"],
            "rank 99 is not in this job (ranks 0 to 15)",
        ),
        (vec!["--slow", "3"], "is not RANKS:FACTOR"),
        (vec!["--slow", "3:0.5"], "not a slow-down factor"),
        (vec!["--slow-link", "4-4:2"], "names one rank twice"),
        (vec!["--jitter", "-3"], "not a jitter"),
        (vec!["--blame-factor", "2"], "give --blame too"),
    ] {
        let mut a = JOB.to_vec();
        a.extend_from_slice(&args);
        let out = trainscope(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_measured_replays_blame_names_the_straggler() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/straggler/st-step23"
    );
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".txt"))
        .collect();
    files.sort();
    let mut a = vec!["simulate", "--json", "--blame"];
    a.extend(files.iter().map(String::as_str));
    let v = json(&a);
    let w = &v["whatif"];
    assert_eq!(w["ideal"], "mean compute per op");
    assert!(w["slowdown"].as_f64().unwrap() > 1.05);
    let text = {
        let mut a = vec!["simulate", "--blame"];
        a.extend(files.iter().map(String::as_str));
        String::from_utf8(trainscope(&a).stdout).unwrap()
    };
    assert!(text.contains("slow-down S ="), "{text}");
    assert!(text.contains("stage 3"), "{text}");
}

const STRAGGLER_SWEEP: [&str; 21] = [
    "sweep",
    "--model",
    "llama3-8b",
    "--world",
    "16",
    "--global-batch-size",
    "64",
    "--seq-length",
    "2048",
    "--tp",
    "2,4",
    "--pp",
    "1,2,4",
    "--micro-batch-size",
    "1",
    "--recompute",
    "none",
    "--schedule",
    "1f1b",
    "--straggler",
    "1.3",
];

#[test]
fn sweep_straggler_ranks_layouts_by_their_slowed_step() {
    let mut args = STRAGGLER_SWEEP.to_vec();
    args.push("--json");
    let v = json(&args);
    let rows: Vec<&Value> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["fits"] == true)
        .collect();
    assert!(rows.len() >= 3);
    let slowed: Vec<u64> = rows
        .iter()
        .map(|r| r["straggler_iteration_time_ns"].as_u64().unwrap())
        .collect();
    assert!(slowed.windows(2).all(|w| w[0] <= w[1]), "{slowed:?}");
    for r in &rows {
        let t = r["iteration_time_ns"].as_u64().unwrap();
        let s = r["straggler_iteration_time_ns"].as_u64().unwrap();
        assert!(s > t, "{r}");
        assert!(r["straggler_stage"].as_u64().unwrap() < r["pp"].as_u64().unwrap());
    }
}

/// The text table shows what the rows rank by (the step with one GPU
/// slowed, and its stage) and the `why` line leads with it.
#[test]
fn sweep_straggler_text_shows_the_slowed_step_and_why() {
    let v = json(&{
        let mut a = STRAGGLER_SWEEP.to_vec();
        a.push("--json");
        a
    });
    let out = trainscope(&STRAGGLER_SWEEP);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("with straggler, stage"), "{text}");
    let best = &v["results"][0];
    let cell = format!(
        "{:.1} ms stage {}",
        best["straggler_iteration_time_ns"].as_u64().unwrap() as f64 / 1e6,
        best["straggler_stage"]
    );
    let first = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .expect("the first row");
    assert!(first.contains(&cell), "{first} lacks {cell}");
    let why = text.lines().find(|l| l.contains("why:")).expect("why");
    assert!(why.contains(": with one GPU slowed "), "{why}");
    assert_eq!(v["explain"].as_str().map(|e| why.contains(e)), Some(true));
}

/// `sweep --slow --slow-link --jitter --seed`: every candidate runs with
/// the faults, its flags carry them (in the order the page writes them,
/// before `--overlap-grad-sync`) and `simulate` with a row's flags gives
/// the row's step; without the faults the steps are shorter.
#[test]
fn sweep_faults_apply_to_every_candidate_and_stay_in_its_flags() {
    let base = [
        "sweep",
        "--model",
        "llama3-8b",
        "--world",
        "8",
        "--global-batch-size",
        "16",
        "--seq-length",
        "2048",
        "--tp",
        "2,4",
        "--pp",
        "2",
        "--micro-batch-size",
        "1",
        "--recompute",
        "none",
        "--schedule",
        "1f1b",
        "--overlap-grad-sync",
        "--json",
    ];
    let faults = [
        "--slow",
        "stage1:1.5",
        "--slow-link",
        "0-1:2",
        "--jitter",
        "5",
        "--seed",
        "3",
    ];
    let plain = json(&base);
    let slowed = json(&[base.as_slice(), &faults].concat());
    let rows = slowed["results"].as_array().unwrap();
    assert_eq!(rows.len(), plain["results"].as_array().unwrap().len());
    for r in rows {
        let flags = r["flags"].as_str().unwrap();
        assert!(
            flags.contains(
                "--slow stage1:1.5 --slow-link 0-1:2 --jitter 5 --seed 3 --overlap-grad-sync"
            ),
            "{flags}"
        );
        let mut args = vec!["simulate", "--json"];
        args.extend(flags.split(' '));
        let v = json(&args);
        assert_eq!(v["iteration_time_ns"], r["iteration_time_ns"], "{flags}");
        let p = plain["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["tp"] == r["tp"])
            .unwrap();
        assert!(
            r["iteration_time_ns"].as_u64() > p["iteration_time_ns"].as_u64(),
            "{flags}"
        );
    }
    let out = trainscope(&[base.as_slice(), &["--seed", "3"]].concat());
    assert_eq!(out.status.code(), Some(2), "--seed needs --jitter");
}
