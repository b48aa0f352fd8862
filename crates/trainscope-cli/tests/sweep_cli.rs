//! End-to-end tests of `trainscope sweep`: every row equals `trainscope
//! simulate` run with the row's flags, `--shard I/N` outputs joined by
//! `--merge` print exactly the unsharded report (JSON and CSV), the text
//! report names the winner and why, refusals exit with the documented
//! codes, and a model path with a space is quoted in the flags so that a
//! shell reads them back as `simulate`'s arguments.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

mod common;
use common::{stderr, trainscope};

fn tmp(name: &str) -> PathBuf {
    common::tmp("sweep_cli", name)
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    String::from_utf8(out.stdout.clone()).expect("UTF-8")
}

/// A small sweep over every schedule on 40 GB GPUs: some layouts are
/// pruned, some simulated ones do not fit.
const SWEEP: [&str; 19] = [
    "sweep",
    "--model",
    "llama3-8b",
    "--world",
    "8",
    "--gpu-type",
    "A100-40G",
    "--global-batch-size",
    "16",
    "--seq-length",
    "4096",
    "--tp",
    "1,2,4",
    "--pp",
    "1,2,4",
    "--micro-batch-size",
    "1,2",
    "--recompute",
    "none,full",
];

fn sweep(extra: &[&str]) -> Output {
    let mut a: Vec<&str> = SWEEP.to_vec();
    a.extend_from_slice(extra);
    trainscope(&a)
}

/// `trainscope sweep ARGS --json`, parsed (the run must succeed).
fn sweep_json(args: &[&str]) -> Value {
    let mut a = vec!["sweep"];
    a.extend_from_slice(args);
    a.push("--json");
    serde_json::from_str(&ok(&trainscope(&a))).expect("JSON")
}

#[test]
fn rows_equal_simulate_with_their_flags() {
    let v: Value = serde_json::from_str(&ok(&sweep(&["--json"]))).expect("JSON");
    let rows = v["results"].as_array().expect("results");
    assert_eq!(
        v["candidates"].as_u64().unwrap(),
        v["pruned"].as_u64().unwrap()
            + v["simulated"].as_u64().unwrap()
            + v["failed"].as_u64().unwrap()
    );
    assert!(v["pruned"].as_u64().unwrap() > 0, "{}", v["pruned"]);
    assert!(v["skipped"].as_u64().unwrap() > 0);
    assert!(rows.iter().any(|r| r["fits"] == false));
    assert!(v["explain"].as_str().unwrap().contains("iteration"));
    // The winner, the slowest, and one row of each schedule.
    let mut picked = vec![&rows[0], rows.last().unwrap()];
    for s in [
        "gpipe",
        "1f1b",
        "interleaved",
        "zb-h1",
        "zb-h2",
        "zbv",
        "dualpipev",
    ] {
        let r = rows
            .iter()
            .find(|r| r["schedule"] == s)
            .unwrap_or_else(|| panic!("no {s} row"));
        picked.push(r);
    }
    for r in picked {
        assert_row_equals_simulate(r);
    }
}

/// `simulate` with a row's flags gives the row's numbers.
fn assert_row_equals_simulate(r: &Value) {
    let flags = r["flags"].as_str().unwrap();
    let mut args = vec!["simulate"];
    args.extend(flags.split(' '));
    args.push("--json");
    let s: Value = serde_json::from_str(&ok(&trainscope(&args))).expect("JSON");
    assert_eq!(r["iteration_time_ns"], s["iteration_time_ns"], "{flags}");
    assert_eq!(r["tokens_per_second"], s["tokens_per_second"], "{flags}");
    assert_eq!(r["mfu"], s["mfu"], "{flags}");
    assert_eq!(r["fits"], s["memory"]["fits"], "{flags}");
    assert_eq!(r["bubble_ns"], s["bubble_ns"], "{flags}");
    let peaks: Vec<u64> = s["memory"]["per_stage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| st["peak_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(
        r["peak_bytes"],
        peaks.iter().copied().max().unwrap(),
        "{flags}"
    );
    assert_eq!(
        r["peak_bytes_per_stage"],
        serde_json::json!(peaks),
        "{flags}"
    );
    assert_eq!(r["schedule"], s["schedule"], "{flags}");
}

#[test]
fn a_pp_that_does_not_divide_the_layers_runs_an_uneven_split_simulate_reproduces() {
    // Llama 3.2 1B's 16 layers on 3 stages: 6 + 6 + 4.
    let v = sweep_json(&[
        "--model",
        "llama3.2-1b",
        "--world",
        "6",
        "--tp",
        "1",
        "--pp",
        "3",
        "--micro-batch-size",
        "1",
        "--recompute",
        "none",
        "--global-batch-size",
        "12",
        "--seq-length",
        "2048",
    ]);
    let rows = v["results"].as_array().expect("results");
    assert!(!rows.is_empty());
    // One chunk a stage: the first/last split; interleaved (3 x 3 chunks of
    // 18 / 9 = 2): the embedding and loss counted in the split.
    for r in rows {
        let flags = r["flags"].as_str().unwrap();
        let tail = if r["vpp"] == 1 {
            "--first-stage-layers 6 --last-stage-layers 4"
        } else {
            "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
        };
        assert!(flags.ends_with(tail), "{flags}");
    }
    assert!(rows.iter().any(|r| r["vpp"] == 1));
    assert_row_equals_simulate(rows.iter().find(|r| r["vpp"] == 1).unwrap());
}

#[test]
fn a_cp_dimension_runs_context_parallel_rows_simulate_reproduces() {
    let v = sweep_json(&[
        "--model",
        "llama3.2-1b",
        "--world",
        "4",
        "--tp",
        "1,2",
        "--cp",
        "1,2",
        "--pp",
        "1",
        "--micro-batch-size",
        "1",
        "--recompute",
        "none",
        "--global-batch-size",
        "8",
        "--seq-length",
        "8192",
    ]);
    let rows = v["results"].as_array().expect("results");
    let cp_rows: Vec<&Value> = rows.iter().filter(|r| r["cp"] == 2).collect();
    assert_eq!(cp_rows.len(), 2, "TP 1 and 2 with CP 2");
    for r in &cp_rows {
        let flags = r["flags"].as_str().unwrap();
        assert!(flags.contains(" --cp 2 "), "{flags}");
        assert_eq!(
            r["world"].as_u64().unwrap(),
            r["tp"].as_u64().unwrap() * 2 * r["dp"].as_u64().unwrap()
        );
        assert!(r["exposed_comm_ns"]["cp"].as_u64().unwrap() > 0);
        assert_row_equals_simulate(r);
    }
    // CP 1 rows carry no --cp and no cp key.
    let plain = rows.iter().find(|r| r.get("cp").is_none()).unwrap();
    assert!(!plain["flags"].as_str().unwrap().contains("--cp"));
    assert_row_equals_simulate(plain);
}

/// A mixture of experts is swept at expert TP = TP and 1 by default: EP 8
/// over TP 2 x DP 4 only folded; expert TP 1 at TP 1 is the default layout
/// (tried once); the rows reproduce with their flags.
#[test]
fn moe_sweeps_try_expert_tp_1_and_rows_simulate_reproduces() {
    let sweep = |extra: &[&str]| {
        let mut a = vec![
            "--model",
            "qwen3-30b-a3b",
            "--world",
            "8",
            "--tp",
            "1,2",
            "--pp",
            "1",
            "--ep",
            "4,8",
            "--micro-batch-size",
            "1",
            "--recompute",
            "none",
            "--global-batch-size",
            "8",
            "--seq-length",
            "2048",
            "--gpu-type",
            "B200",
        ];
        a.extend_from_slice(extra);
        sweep_json(&a)
    };
    let v = sweep(&[]);
    let rows = v["results"].as_array().expect("results");
    let layout = |r: &Value| {
        (
            r["tp"].as_u64().unwrap(),
            r["ep"].as_u64().unwrap(),
            r.get("expert_tp").and_then(Value::as_u64),
        )
    };
    let mut layouts: Vec<_> = rows.iter().map(layout).collect();
    layouts.sort();
    assert_eq!(
        layouts,
        vec![
            (1, 4, None),
            (1, 8, None),
            (2, 4, None),
            (2, 4, Some(1)),
            (2, 8, Some(1))
        ]
    );
    for r in rows.iter().filter(|r| r.get("expert_tp").is_some()) {
        assert!(r["flags"].as_str().unwrap().contains(" --expert-tp 1"));
        assert_row_equals_simulate(r);
    }
    let reasons = v["skipped_reasons"].to_string();
    assert!(
        reasons.contains("expert TP equal to TP is the default layout"),
        "{reasons}"
    );
    // --expert-tp tp keeps Megatron's default only.
    let v = sweep(&["--expert-tp", "tp"]);
    assert!(v["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("expert_tp").is_none()));
    let out = trainscope(&[
        "sweep",
        "--model",
        "qwen3-30b-a3b",
        "--world",
        "8",
        "--expert-tp",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--expert-tp takes `tp` or sizes >= 1"),
        "{}",
        stderr(&out)
    );
}

/// Interleaved chunks that cut only the layers + embedding + loss are
/// tried with Megatron's accounted split: Llama 3.2 1B's 16 layers on PP 3
/// x 3 virtual stages (18 / 9 = 2 a chunk); the row reproduces.
#[test]
fn interleaved_chunks_with_the_embedding_and_loss_in_the_split_simulate_reproduces() {
    let v = sweep_json(&[
        "--model",
        "llama3.2-1b",
        "--world",
        "3",
        "--tp",
        "1",
        "--pp",
        "3",
        "--schedule",
        "interleaved",
        "--micro-batch-size",
        "1",
        "--recompute",
        "none",
        "--global-batch-size",
        "6",
        "--seq-length",
        "1024",
    ]);
    let rows = v["results"].as_array().expect("results");
    let r = rows
        .iter()
        .find(|r| r["vpp"] == 3)
        .expect("PP 3 x 3 virtual stages");
    assert_eq!(r["account_for_embedding"], true);
    assert_eq!(r["account_for_loss"], true);
    assert!(r["flags"].as_str().unwrap().ends_with(
        "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
    ));
    assert_row_equals_simulate(r);
}

/// `--csv` holds every JSON row field, column by column (CP, the stage
/// split and the exposed communication per group included).
#[test]
fn csv_columns_equal_the_json_rows() {
    let csv_path = tmp("columns.csv");
    let out = trainscope(&[
        "sweep",
        "--model",
        "llama3.2-1b",
        "--world",
        "12",
        "--tp",
        "1,2",
        "--cp",
        "1,2",
        "--pp",
        "1,3",
        "--micro-batch-size",
        "1",
        "--recompute",
        "none",
        "--global-batch-size",
        "24",
        "--seq-length",
        "8192",
        "--json",
        "--csv",
        csv_path.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&ok(&out)).expect("JSON");
    let rows = v["results"].as_array().expect("results");
    let text = std::fs::read_to_string(&csv_path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let lines: Vec<&str> = lines.collect();
    assert_eq!(lines.len(), rows.len());
    assert!(rows.iter().any(|r| r["cp"] == 2), "a CP row");
    assert!(
        rows.iter().any(|r| r.get("first_stage_layers").is_some()),
        "an uneven split (16 layers over PP 3)"
    );
    for (line, row) in lines.iter().zip(rows) {
        // The flags (last, quoted) may hold commas.
        let (values, flags) = line.split_once(",\"").expect("quoted flags");
        let values: Vec<&str> = values.split(',').collect();
        assert_eq!(values.len() + 1, header.len(), "{line}");
        assert_eq!(flags.trim_end_matches('"'), row["flags"].as_str().unwrap());
        for (name, value) in header.iter().zip(&values) {
            let json = match name.strip_prefix("exposed_") {
                Some(g) => row["exposed_comm_ns"]
                    .get(g.trim_end_matches("_ns"))
                    .cloned()
                    .unwrap_or(Value::from(0)),
                None if *name == "rank" => continue,
                None if name.starts_with("account_for_") => {
                    row.get(*name).cloned().unwrap_or(Value::from(false))
                }
                None if *name == "cp" => row.get("cp").cloned().unwrap_or(Value::from(1)),
                None => row.get(*name).cloned().unwrap_or(Value::Null),
            };
            let expected = match &json {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            assert_eq!(*value, expected, "column {name} of {line}");
        }
    }
}

#[test]
fn shards_merge_into_the_unsharded_output() {
    let csv_whole = tmp("whole.csv");
    let whole = ok(&sweep(&["--json", "--csv", csv_whole.to_str().unwrap()]));
    let mut files = Vec::new();
    for i in [1, 0, 2] {
        let out = ok(&sweep(&["--json", "--shard", &format!("{i}/3")]));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["shard"]["index"], i);
        let path = tmp(&format!("shard-{i}.json"));
        std::fs::write(&path, out).unwrap();
        files.push(path);
    }
    let csv_merged = tmp("merged.csv");
    let mut args: Vec<String> = vec!["sweep".into(), "--json".into(), "--csv".into()];
    args.push(csv_merged.to_str().unwrap().into());
    args.push("--merge".into());
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    let merged = ok(&trainscope(&args));
    assert_eq!(merged, whole);
    assert_eq!(
        std::fs::read_to_string(&csv_merged).unwrap(),
        std::fs::read_to_string(&csv_whole).unwrap()
    );
    // The text report of the merge is the unsharded one too.
    let mut text_args: Vec<String> = vec!["sweep".into(), "--merge".into()];
    text_args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    assert_eq!(ok(&trainscope(&text_args)), ok(&sweep(&[])));
    // A missing shard is refused (exit 4), a file that is no sweep too (3).
    let out = trainscope(&["sweep", "--merge", files[0].to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("shards missing"), "{}", stderr(&out));
    let junk = tmp("junk.json");
    std::fs::write(&junk, "{\"x\": 1}").unwrap();
    let out = trainscope(&["sweep", "--merge", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn text_report_names_the_winner_and_why() {
    let text = ok(&sweep(&["--top", "3"]));
    assert!(
        text.contains("pruned by memory before simulating"),
        "{text}"
    );
    assert!(text.contains("Pareto front"), "{text}");
    assert!(
        text.contains("best: trainscope simulate --model llama3-8b"),
        "{text}"
    );
    assert!(text.contains("why: "), "{text}");
    assert!(
        text.lines()
            .filter(|l| l.contains(" ms ") && l.contains("yes"))
            .count()
            >= 3
    );
    let v: Value = serde_json::from_str(&ok(&sweep(&["--json", "--top", "2"]))).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    // --nodes: world = nodes x GPUs per node.
    let out = trainscope(&[
        "sweep",
        "--model",
        "llama3-8b",
        "--nodes",
        "1,2",
        "--gpus-per-node",
        "4",
        "--tp",
        "4",
        "--pp",
        "1,2",
        "--schedule",
        "1f1b",
        "--recompute",
        "full",
        "--global-batch-size",
        "16",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&ok(&out)).unwrap();
    let worlds: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["world"].as_u64().unwrap())
        .collect();
    assert!(worlds.contains(&4) && worlds.contains(&8), "{worlds:?}");
    assert!(v["results"][0]["flags"]
        .as_str()
        .unwrap()
        .starts_with("--model llama3-8b --gpus-per-node 4 --world"));
}

#[test]
fn refusals_exit_with_their_codes() {
    let code = |args: &[&str]| trainscope(args).status.code();
    assert_eq!(code(&["sweep", "--model", "llama3-8b"]), Some(2));
    assert_eq!(code(&["sweep", "--world", "8"]), Some(2));
    assert_eq!(
        code(&[
            "sweep",
            "--model",
            "llama3-8b",
            "--world",
            "8",
            "--schedule",
            "zb-h9"
        ]),
        Some(4)
    );
    assert_eq!(
        code(&["sweep", "--model", "llama3-8b", "--world", "8", "--tp", "0"]),
        Some(4)
    );
    assert_eq!(
        code(&[
            "sweep",
            "--model",
            "llama3-8b",
            "--world",
            "8",
            "--shard",
            "3/3"
        ]),
        Some(2)
    );
    assert_eq!(
        code(&[
            "sweep",
            "--model",
            "llama3-8b",
            "--world",
            "8",
            "--shard",
            "0/3",
            "--top",
            "2"
        ]),
        Some(2)
    );
    assert_eq!(
        code(&["sweep", "--model", "no-such-model", "--world", "8"]),
        Some(4)
    );
    assert_eq!(
        code(&[
            "sweep",
            "--model",
            "llama3-8b",
            "--world",
            "8",
            "--algorithm",
            "bogus"
        ]),
        Some(2)
    );
}

#[test]
fn a_model_path_with_spaces_is_quoted_in_the_flags_and_a_shell_reads_it_back() {
    let dir = tmp("runs with space");
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("config.json");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/hf/llama3_8b.json"
    );
    std::fs::copy(fixture, &config).expect("copy the fixture");
    let path = config.to_str().expect("UTF-8 path");
    let out = ok(&trainscope(&[
        "sweep",
        "--model",
        path,
        "--world",
        "8",
        "--global-batch-size",
        "16",
        "--tp",
        "2,4",
        "--pp",
        "1",
        "--micro-batch-size",
        "1",
        "--recompute",
        "selective",
        "--json",
    ]));
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let rows = v["results"].as_array().expect("results");
    assert!(!rows.is_empty());
    for r in rows {
        let flags = r["flags"].as_str().unwrap();
        assert!(
            flags.starts_with(&format!("--model '{path}' --world 8 ")),
            "{flags}"
        );
        // A shell splits the flags back into `simulate`'s arguments.
        let s = Command::new("sh")
            .arg("-c")
            .arg(format!("exec \"$0\" simulate {flags} --json"))
            .arg(env!("CARGO_BIN_EXE_trainscope"))
            .output()
            .expect("run sh");
        let s: Value = serde_json::from_str(&ok(&s)).expect("JSON");
        assert_eq!(r["iteration_time_ns"], s["iteration_time_ns"], "{flags}");
        assert_eq!(r["mfu"], s["mfu"], "{flags}");
    }
}

/// One Qwen3-30B-A3B layout on 8 GPUs (EP 8, full recompute), the sweep
/// bounds of the software-stack tests.
const QWEN_ONE_LAYOUT: [&str; 16] = [
    "--model",
    "qwen3-30b-a3b",
    "--world",
    "8",
    "--tp",
    "1",
    "--pp",
    "1",
    "--ep",
    "8",
    "--micro-batch-size",
    "1",
    "--recompute",
    "full",
    "--global-batch-size",
    "16",
];

/// The software stack reaches every candidate: rows carry `--stack` and
/// `--cuda-graphs` in their flags and reproduce with them, and the stack
/// changes the numbers of a host-bound model.
#[test]
fn a_sweep_runs_on_the_given_stack_and_rows_simulate_reproduces() {
    let base = QWEN_ONE_LAYOUT;
    let mut graphs = base.to_vec();
    graphs.extend_from_slice(&["--stack", "torch-compile", "--cuda-graphs", "full"]);
    let v = sweep_json(&graphs);
    let r = &v["results"][0];
    let flags = r["flags"].as_str().unwrap();
    assert!(
        flags.contains(" --stack torch-compile --cuda-graphs full"),
        "{flags}"
    );
    assert_row_equals_simulate(r);
    let eager = sweep_json(&base);
    let e = &eager["results"][0];
    assert!(!e["flags"].as_str().unwrap().contains("--stack"));
    assert!(
        e["iteration_time_ns"].as_u64() > r["iteration_time_ns"].as_u64(),
        "eager {} vs graphs {}",
        e["iteration_time_ns"],
        r["iteration_time_ns"]
    );
}

/// The software settings as sweep dimensions (issue 24): comma lists in
/// `--cuda-graphs` and `--moe-token-dispatcher` and
/// `--moe-a2a-overlap-values` give one candidate per combination, each row
/// carries its settings (`software`, its flags) and reproduces with
/// `simulate`; a bad value is refused.
#[test]
fn software_settings_are_sweep_dimensions() {
    let mut args = QWEN_ONE_LAYOUT.to_vec();
    args.extend_from_slice(&[
        "--cuda-graphs",
        "none,layers",
        "--moe-token-dispatcher",
        "alltoall,flex",
        "--moe-a2a-overlap-values",
        "off,on",
    ]);
    let v = sweep_json(&args);
    let rows = v["results"].as_array().expect("rows");
    assert_eq!(rows.len(), 8, "2 x 2 x 2 settings of one layout");
    let mut software: Vec<&str> = rows
        .iter()
        .map(|r| r["software"].as_str().unwrap_or(""))
        .collect();
    software.sort_unstable();
    software.dedup();
    assert_eq!(software.len(), 8, "{software:?}");
    assert!(
        software.contains(&"--cuda-graphs layers --moe-token-dispatcher flex --moe-a2a-overlap")
    );
    for r in rows.iter().take(3) {
        assert_row_equals_simulate(r);
    }
    let mut bad = vec!["sweep"];
    bad.extend_from_slice(&args);
    let at = bad.len() - 3;
    bad[at] = "alltoall,nccl";
    let out = trainscope(&bad);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("unknown token dispatcher `nccl`"),
        "{}",
        stderr(&out)
    );
}

/// A sweep of two cluster sizes, a handful of layouts each.
const TWO_SIZES: [&str; 18] = [
    "--model",
    "llama3-8b",
    "--world",
    "8,16",
    "--global-batch-size",
    "16",
    "--seq-length",
    "4096",
    "--tp",
    "2",
    "--pp",
    "1",
    "--micro-batch-size",
    "1",
    "--recompute",
    "full",
    "--schedule",
    "1f1b",
];

/// The run: 10^11 tokens on nodes failing every 30 minutes (24,000 per
/// 1000 node-days), 10-minute checkpoints and restores.
const HARSH_RUN: [&str; 10] = [
    "--tokens",
    "100000000000",
    "--failure-rate",
    "24000",
    "--checkpoint-seconds",
    "600",
    "--restore-seconds",
    "600",
    "--rank-by",
    "time-to-train",
];

#[test]
fn rank_by_time_to_train_can_put_the_smaller_cluster_first() {
    let by_iteration = sweep_json(&TWO_SIZES);
    let rows = by_iteration["results"].as_array().expect("rows");
    assert!(rows.len() >= 2, "{rows:?}");
    assert_eq!(
        rows[0]["world"], 16,
        "the larger cluster is faster per iteration"
    );
    assert!(rows.iter().all(|r| r.get("days_to_train").is_none()));
    let mut a: Vec<&str> = TWO_SIZES.to_vec();
    a.extend_from_slice(&HARSH_RUN);
    let by_days = sweep_json(&a);
    let rows = by_days["results"].as_array().expect("rows");
    // Twice the nodes fail twice as often: here that costs more than the
    // shorter iteration gains.
    assert_eq!(rows[0]["world"], 8, "{:?}", rows[0]);
    let days: Vec<f64> = rows
        .iter()
        .filter(|r| r["fits"] == true)
        .map(|r| r["days_to_train"].as_f64().expect("days_to_train"))
        .collect();
    assert!(days.windows(2).all(|w| w[0] <= w[1]), "{days:?}");
    // The row's days are `trainscope plan`'s closed form for the row's
    // flags and the same run.
    let mut plan = vec!["plan".to_string()];
    plan.extend(
        rows[0]["flags"]
            .as_str()
            .expect("flags")
            .split_whitespace()
            .map(str::to_string),
    );
    plan.extend(HARSH_RUN[..8].iter().map(|s| s.to_string()));
    plan.push("--json".into());
    let v: Value = serde_json::from_str(&ok(&trainscope(&plan))).expect("JSON");
    assert_eq!(v["days_to_train"]["closed_form"], rows[0]["days_to_train"]);
    // Text: a days column.
    let text = ok(&trainscope(&[&["sweep"][..], &a].concat()));
    assert!(text.contains("days to train"), "{text}");
    assert!(text.contains("ranked by days to train"), "{text}");
    // Usage: time to train needs the run; the run's flags need the ranking.
    let mut missing: Vec<&str> = vec!["sweep"];
    missing.extend_from_slice(&TWO_SIZES);
    missing.extend_from_slice(&["--rank-by", "time-to-train", "--failure-rate", "5"]);
    let out = trainscope(&missing);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--tokens"), "{}", stderr(&out));
    let mut stray: Vec<&str> = vec!["sweep"];
    stray.extend_from_slice(&TWO_SIZES);
    stray.extend_from_slice(&["--tokens", "1000"]);
    let out = trainscope(&stray);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--rank-by time-to-train"),
        "{}",
        stderr(&out)
    );
}

/// `sweep --offload LIST`: Llama 3 8B on 2 H100s with ZeRO-1 fits only
/// with the optimizer states in host memory; the sweep finds that layout,
/// its row says so and `simulate` with its flags gives its numbers; an
/// unknown value is refused.
#[test]
fn offload_is_a_sweep_dimension() {
    let args = [
        "--model",
        "llama3-8b",
        "--world",
        "2",
        "--gpu-type",
        "H100",
        "--global-batch-size",
        "2",
        "--seq-length",
        "2048",
        "--tp",
        "1",
        "--pp",
        "1",
        "--micro-batch-size",
        "1",
        "--recompute",
        "full",
        "--schedule",
        "1f1b",
        "--zero",
        "1",
    ];
    let mut with: Vec<&str> = args.to_vec();
    with.extend(["--offload", "none,optimizer"]);
    let v = sweep_json(&with);
    let rows = v["results"].as_array().expect("results");
    let fitting: Vec<&Value> = rows.iter().filter(|r| r["fits"] == true).collect();
    assert_eq!(fitting.len(), 1, "{rows:?}");
    assert_eq!(fitting[0]["offload"], "optimizer");
    assert!(fitting[0]["flags"]
        .as_str()
        .unwrap()
        .contains("--offload optimizer"));
    assert_row_equals_simulate(fitting[0]);
    // Without the dimension nothing fits.
    let v = sweep_json(&args);
    let rows = v["results"].as_array().expect("results");
    assert!(rows.iter().all(|r| r["fits"] == false), "{rows:?}");
    assert!(v["pruned"].as_u64().unwrap() + rows.len() as u64 >= 1);
    let mut bad: Vec<&str> = vec!["sweep"];
    bad.extend(args);
    bad.extend(["--offload", "disk"]);
    let out = trainscope(&bad);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("--offload takes none, optimizer or optimizer+params"));
}

/// `--fp8-param-gather` reaches every FP8 candidate: rows carry the flag,
/// reproduce with `simulate`, and need less memory than without it; a
/// bf16 sweep with it is refused.
#[test]
fn fp8_param_gather_reaches_the_rows_and_simulate_reproduces() {
    let base = [
        "--model",
        "llama3-8b",
        "--world",
        "8",
        "--precision",
        "fp8",
        "--tp",
        "2",
        "--pp",
        "1",
        "--micro-batch-size",
        "1",
        "--recompute",
        "none",
    ];
    let mut on = base.to_vec();
    on.push("--fp8-param-gather");
    let v = sweep_json(&on);
    let r = &v["results"][0];
    assert!(r["flags"].as_str().unwrap().contains(" --fp8-param-gather"));
    assert_row_equals_simulate(r);
    let off = sweep_json(&base);
    let mem = |r: &Value| r["peak_bytes"].as_u64().unwrap();
    assert!(
        mem(r) < mem(&off["results"][0]),
        "{} vs {}",
        mem(r),
        mem(&off["results"][0])
    );
    let out = trainscope(&[
        "sweep",
        "--model",
        "llama3-8b",
        "--world",
        "8",
        "--fp8-param-gather",
    ]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("--fp8-param-gather needs FP8 training"),
        "{}",
        stderr(&out)
    );
}
