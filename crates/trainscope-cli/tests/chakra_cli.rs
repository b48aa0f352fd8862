//! End-to-end tests of Chakra execution traces in the CLI: `convert --to
//! chakra-et -o DIR` of a model-level job and of a workload file writes one
//! `trainscope.<i>.et` per rank (and `comm_groups.json` for ASTRA-sim), `inspect --json` detects
//! them as `chakra-et`, and `simulate` runs the written files; the committed
//! fixture (`tests/fixtures/chakra/`) simulates too, the same run after run
//! (its files read on a second thread), and a file that cannot be read is
//! named wherever it sits in the set.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::{fixture, trainscope as run};

fn ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("trainscope-chakra-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn et_files(dir: &PathBuf) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".et"))
        .collect();
    v.sort();
    v
}

#[test]
fn convert_a_model_job_then_simulate_the_files() {
    let dir = tmp_dir("model");
    let d = dir.display().to_string();
    let out = run(&[
        "convert",
        "--model",
        "llama3-8b",
        "--world",
        "4",
        "--pp",
        "2",
        "--to",
        "chakra-et",
        "-o",
        &d,
    ]);
    ok(&out);
    // World 4 = PP 2 x DP 2: one file per rank, the stage's program with
    // each collective naming its group (`pg_name`) in comm_groups.json.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("4 Chakra ET file(s)"), "{stdout}");
    assert!(stdout.contains("--comm-group-configuration="), "{stdout}");
    let files = et_files(&dir);
    assert_eq!(
        files
            .iter()
            .map(|f| f.rsplit('/').next().unwrap())
            .collect::<Vec<_>>(),
        vec![
            "trainscope.0.et",
            "trainscope.1.et",
            "trainscope.2.et",
            "trainscope.3.et"
        ]
    );
    let groups: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("comm_groups.json")).unwrap())
            .unwrap();
    assert_eq!(groups, serde_json::json!({"1": [0, 1], "2": [2, 3]}));
    let mut args = vec!["inspect", "--json"];
    args.extend(files.iter().map(String::as_str));
    let out = run(&args);
    ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for f in v.as_array().unwrap() {
        assert_eq!(f["format"], "chakra-et");
    }
    let mut args = vec!["simulate", "--json"];
    args.extend(files.iter().map(String::as_str));
    let out = run(&args);
    ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "chakra-et");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn convert_a_workload_file_and_simulate_the_fixture() {
    let dir = tmp_dir("file");
    let d = dir.display().to_string();
    let out = run(&[
        "convert",
        &fixture("chakra/job.0.et"),
        &fixture("chakra/job.1.et"),
        "--to",
        "chakra-et",
        "-o",
        &d,
    ]);
    ok(&out);
    let files = et_files(&dir);
    assert_eq!(files.len(), 2);
    let mut args = vec!["simulate"];
    args.extend(files.iter().map(String::as_str));
    ok(&run(&args));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_written_groups_file_reads_back_with_the_files() {
    // Llama 3.2 1B, TP 2 x PP 2 x DP 2: TP, DP and first/last-stage groups.
    let dir = tmp_dir("groups");
    let d = dir.display().to_string();
    ok(&run(&[
        "convert",
        "--model",
        "llama3.2-1b",
        "--world",
        "8",
        "--tp",
        "2",
        "--pp",
        "2",
        "--to",
        "chakra-et",
        "-o",
        &d,
    ]));
    let files = et_files(&dir);
    assert_eq!(files.len(), 8);
    let groups = dir.join("comm_groups.json").display().to_string();
    // inspect: the groups file is detected and summarised with the set.
    let mut args = vec!["inspect"];
    args.extend(files.iter().map(String::as_str));
    args.push(&groups);
    let out = run(&args);
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let part = &stdout[stdout.find("comm_groups.json\n").expect("the groups file")..];
    assert!(
        part.contains("format: chakra-comm-groups (detected, 100%)"),
        "{part}"
    );
    assert!(part.contains("world 8 = TP 2 x PP 2 x DP 2"), "{part}");
    assert!(part.contains("groups: 12 read, 0 skipped"), "{part}");
    // simulate with the groups: TP 2 x PP 2 x DP 2, no group warning.
    let mut args = vec!["simulate", "--json"];
    args.extend(files.iter().map(String::as_str));
    let mut with = args.clone();
    with.push(&groups);
    let out = run(&with);
    ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            &v["parallel"]["tp"],
            &v["parallel"]["pp"],
            &v["parallel"]["dp"]
        ),
        (
            &serde_json::json!(2),
            &serde_json::json!(2),
            &serde_json::json!(2)
        )
    );
    let warned = |v: &serde_json::Value| {
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("no comm_groups.json"))
    };
    assert!(!warned(&v), "{}", v["warnings"]);
    let t_with = v["iteration_time_ns"].as_u64().unwrap();
    // Without: every collective over the 8 ranks, slower, with the hint.
    let out = run(&args);
    ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["parallel"]["dp"], 8);
    assert!(warned(&v), "{}", v["warnings"]);
    let t_without = v["iteration_time_ns"].as_u64().unwrap();
    assert!(t_with < t_without, "{t_with} vs {t_without}");
    // A bad groups file fails the run (exit 3) with its located error.
    let bad = dir.join("bad_groups.json");
    std::fs::write(&bad, "{\"1\": [0, 1],\n \"2\": [2, 2]}\n").unwrap();
    let bad = bad.display().to_string();
    let mut args = vec!["simulate"];
    args.extend(files.iter().map(String::as_str));
    args.push(&bad);
    let out = run(&args);
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad_groups.json:2:11") && stderr.contains("lists rank 2 twice"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The ETs Chakra's own converters wrote (`tests/fixtures/chakra/converter/`,
/// `schema` attribute, empty `version`): `inspect` detects each as
/// `chakra-et` and `simulate` runs each set.
#[test]
fn chakra_converter_files_are_detected_and_simulate() {
    for (name, ranks) in [
        ("text_dp", 4),
        ("text_hybrid", 1),
        ("text_micro", 2),
        ("pytorch", 1),
    ] {
        let files: Vec<String> = (0..ranks)
            .map(|r| fixture(&format!("chakra/converter/{name}.{r}.et")))
            .collect();
        let mut args = vec!["inspect"];
        args.extend(files.iter().map(String::as_str));
        let out = run(&args);
        ok(&out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("format: chakra-et (detected, 100%)").count(),
            ranks,
            "{stdout}"
        );
        let mut args = vec!["simulate", "--json"];
        args.extend(files.iter().map(String::as_str));
        let out = run(&args);
        ok(&out);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["format"], "chakra-et", "{name}");
    }
}

#[test]
fn a_set_is_read_in_order_and_a_missing_file_is_named() {
    // The files are read on a second thread while the core parses, in the
    // order given: the same set gives the same output, run after run.
    let (a, b) = (fixture("chakra/job.0.et"), fixture("chakra/job.1.et"));
    let first = run(&["simulate", &a, &b, "--json"]);
    ok(&first);
    for _ in 0..3 {
        assert_eq!(run(&["simulate", &a, &b, "--json"]).stdout, first.stdout);
    }
    // A file that cannot be read stops the run with its name, whichever
    // place it has in the set.
    let missing = tmp_dir("missing").join("job.2.et").display().to_string();
    for args in [
        vec!["simulate", &a, &missing, &b],
        vec!["simulate", &missing, &a, &b],
        vec!["simulate", &a, &b, &missing],
    ] {
        let out = run(&args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        let err = common::stderr(&out);
        assert!(
            err.contains("cannot read") && err.contains(&missing),
            "{err}"
        );
    }
}
