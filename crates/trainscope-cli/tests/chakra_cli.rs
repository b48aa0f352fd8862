//! End-to-end tests of Chakra execution traces in the CLI: `convert --to
//! chakra-et -o DIR` of a model-level job and of a workload file writes one
//! `trainscope.<i>.et` per rank (and `comm_groups.json` for ASTRA-sim), `inspect --json` detects
//! them as `chakra-et`, and `simulate` runs the written files; the committed
//! fixture (`tests/fixtures/chakra/`) simulates too.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
        .display()
        .to_string()
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trainscope"))
        .args(args)
        .output()
        .expect("the trainscope binary runs")
}

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
