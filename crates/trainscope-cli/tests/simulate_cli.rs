//! End-to-end tests of `trainscope simulate`: the JSON keys, SimAI's flag
//! spellings, `--csv` against SimAI's own file, user ratio tables and the
//! exit codes (2 usage, 3 parse failure, 4 invalid configuration). The
//! event mode has its own tests (`event_cli.rs`).

use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

mod common;
use common::{fixture, json_ok as json, stderr, trainscope};

fn tmp(name: &str) -> PathBuf {
    common::tmp("simulate_cli", name)
}

const SEED000: &str = "seeds/simai_llama65b_tp8_pp4_vpp8.txt";
const SEED001: &str = "seeds/simai_405b_tp8_pp16_ga16_sp.txt";
const REF_FLAGS: [&str; 10] = [
    "-g", "512", "-nv", "360", "-nic", "48.5", "-n_p_s", "8", "-g_p_s", "8",
];

fn simai(file: &str, extra: &[&str]) -> Output {
    let path = fixture(file);
    let mut args = vec!["simulate", "--mode", "simai", path.as_str()];
    args.extend_from_slice(extra);
    trainscope(&args)
}

/// The last field of SimAI's summary line (total, us) in a reference CSV.
fn reference_total_us(name: &str) -> u64 {
    let text =
        std::fs::read_to_string(fixture(&format!("simai/expected/{name}-EndToEnd.csv"))).unwrap();
    let line = text.lines().nth(1).unwrap();
    line.rsplit(", ").next().unwrap().parse().unwrap()
}

#[test]
fn json_has_the_documented_keys_and_simai_numbers() {
    let mut args = REF_FLAGS.to_vec();
    args.push("--json");
    let v = json(&simai(SEED000, &args));
    assert_eq!(v["mode"], "simai");
    let total = v["iteration_time_ns"].as_u64().unwrap();
    assert_eq!((total + 500) / 1000, reference_total_us("r000"));
    for key in ["compute_ns", "bubble_ns", "exposed_comm_total_ns"] {
        assert!(v[key].is_u64(), "{key}");
    }
    let e = &v["exposed_comm_ns"];
    let parts: u64 = ["dp", "dp_ep", "tp", "ep", "pp"]
        .iter()
        .map(|k| {
            e[k].as_u64()
                .unwrap_or_else(|| panic!("exposed_comm_ns.{k}"))
        })
        .sum();
    assert_eq!(
        total,
        v["compute_ns"].as_u64().unwrap() + v["bubble_ns"].as_u64().unwrap() + parts
    );
    let layers = v["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 33);
    assert_eq!(layers[1]["name"], "grad_param");
    assert_eq!(layers[1]["wg"]["group"], "dp");
    assert!(layers[1]["wg"]["total_ns"].as_u64().unwrap() > 0);
    assert_eq!(
        v["warnings"].as_array().unwrap().len(),
        0,
        "{}",
        v["warnings"]
    );
    assert_eq!(v["parallelism"]["dp"], 16);
}

#[test]
fn warnings_reach_the_json() {
    let v = json(&simai(SEED001, &["--json", "-nv", "360"]));
    let w: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(w.iter().any(|m| m.contains("no `vpp:`")), "{w:?}");
    assert!(w.iter().any(|m| m.contains("defaulted vpp = 1")), "{w:?}");
    assert!(
        w.iter().any(|m| m.contains("NIC bandwidth not given")),
        "{w:?}"
    );
    assert!(
        !w.iter().any(|m| m.contains("NVLink bandwidth not given")),
        "{w:?}"
    );
    assert_eq!(v["parallelism"]["vpp"], 1);
    // World size from the header's all_gpus.
    assert_eq!(v["cluster"]["world_size"], 1024);
}

#[test]
fn simai_spellings_equal_long_flags() {
    let path = fixture(SEED000);
    let simai_style = trainscope(&[
        "simulate",
        "--mode",
        "simai",
        "--json",
        "-w",
        &path,
        "-g",
        "512",
        "-g_p_s",
        "4",
        "-n_p_s",
        "8",
        "-nv",
        "360",
        "-nic=48.5",
        "-dp_o",
        "0.3",
        "-tp_o",
        "0.2",
        "-ep_o",
        "0",
        "-pp_o=0.5",
    ]);
    let long_style = trainscope(&[
        "simulate",
        "--mode=simai",
        &path,
        "--json",
        "--world",
        "512",
        "--gpus-per-server",
        "4",
        "--nics-per-server",
        "8",
        "--nvlink-gbps",
        "360",
        "--nic-gbps",
        "48.5",
        "--dp-overlap",
        "0.3",
        "--tp-overlap",
        "0.2",
        "--ep-overlap",
        "0",
        "--pp-overlap",
        "0.5",
    ]);
    let (a, b) = (json(&simai_style), json(&long_style));
    assert_eq!(a, b);
    assert_eq!(a["cluster"]["gpus_per_server"], 4);
    assert_eq!(a["overlap"]["pp"], 0.5);
    assert!(a["exposed_comm_ns"]["pp"].as_u64().unwrap() > 0);
}

#[test]
fn csv_equals_simai_reference_file() {
    let out_path = tmp("r000ovl-EndToEnd.csv");
    let _ = std::fs::remove_file(&out_path);
    let mut args = REF_FLAGS.to_vec();
    let p = out_path.to_str().unwrap();
    args.extend(["-pp_o", "0.5", "-dp_o", "0.3", "-tp_o", "0.2", "--csv", p]);
    let out = simai(SEED000, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ours = std::fs::read(&out_path).unwrap();
    let want = std::fs::read(fixture("simai/expected/r000ovl-EndToEnd.csv")).unwrap();
    assert!(ours == want, "{}", String::from_utf8_lossy(&ours));
    // The readable table went to stdout.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("iteration time"), "{text}");
    assert!(text.contains("grad_param"), "{text}");
}

#[test]
fn invalid_configuration_exits_4_naming_group_and_numbers() {
    // 4 NICs per server shared by TP 8: the DP group's NIC share is 0.
    let out = simai(
        SEED000,
        &[
            "-g", "512", "-n_p_s", "4", "-g_p_s", "8", "-nv", "360", "-nic", "48.5",
        ],
    );
    assert_eq!(out.status.code(), Some(4));
    let err = stderr(&out);
    assert!(err.contains("DP group of 16 ranks"), "{err}");
    assert!(err.contains("0 NIC(s)"), "{err}");
    assert!(err.contains("NICs per server 4 / TP 8"), "{err}");
    assert!(out.stdout.is_empty());
    for bad in [
        vec!["-g", "100"],
        vec!["-nv", "0"],
        vec!["-nic", "-2"],
        vec!["-pp_o", "0"],
        vec!["-dp_o", "1.5"],
        vec!["-g_p_s", "0"],
    ] {
        let out = simai(SEED000, &bad);
        assert_eq!(out.status.code(), Some(4), "{bad:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("invalid configuration"), "{bad:?}");
    }
}

#[test]
fn usage_and_parse_exit_codes() {
    // Event mode is the default.
    let v = json(&trainscope(&["simulate", &fixture(SEED000), "--json"]));
    assert_eq!(v["mode"], "event");
    // The SimAI mode reads exactly one workload.
    let out = simai(SEED000, &[&fixture(SEED001)]);
    assert_eq!(out.status.code(), Some(2));
    let out = simai(SEED000, &["--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    // An unknown preset is an invalid configuration (4), listing the presets,
    // in both modes.
    let out = simai(SEED000, &["--gpu-type", "B200"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(stderr(&out).contains("unknown GPU type `B200`"));
    assert!(stderr(&out).contains("H100"), "{}", stderr(&out));
    let out = simai(SEED000, &["--nic-type", "CX9"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(stderr(&out).contains("CX7"), "{}", stderr(&out));
    for flag in ["--gpu-type", "--nic-type"] {
        let out = trainscope(&["simulate", &fixture(SEED000), flag, "nope"]);
        assert_eq!(out.status.code(), Some(4), "event mode {flag}");
        assert!(stderr(&out).contains("expected one of"), "{}", stderr(&out));
    }
    // Not a SimAI workload: parse failure, with what it looks like.
    let out = simai("seeds/neusight_gpt2large_dp_workitems.tsv", &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("looks like a neusight-tsv"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn ratio_table_dir_replaces_tables() {
    let dir = tmp("ratio_flat");
    std::fs::create_dir_all(&dir).unwrap();
    // A flat nic table: rho = 1 at every size, so TP all-gathers get faster.
    let mut flat = String::from("Size,1 Node\n");
    for i in 0..11 {
        flat.push_str(&format!("{},0.5\n", 16u64 << (20 + i)));
    }
    std::fs::write(dir.join("nic_ratio.csv"), flat).unwrap();
    let base = [
        "--json", "-nv", "360", "-nic", "48.5", "-g_p_s", "8", "-n_p_s", "8",
    ];
    let builtin = json(&simai(SEED001, &base));
    let mut args = base.to_vec();
    let d = dir.to_str().unwrap();
    args.extend(["--ratio-table-dir", d]);
    let custom = json(&simai(SEED001, &args));
    let tp = |v: &Value| v["exposed_comm_ns"]["tp"].as_u64().unwrap();
    assert!(
        tp(&custom) < tp(&builtin),
        "{} vs {}",
        tp(&custom),
        tp(&builtin)
    );
    assert_eq!(
        custom["exposed_comm_ns"]["dp"],
        builtin["exposed_comm_ns"]["dp"]
    );
    let w = custom["warnings"].to_string();
    assert!(w.contains("nvlink_ratio.csv not found"), "{w}");

    // A broken table is a parse failure pointing at the cell.
    let bad = tmp("ratio_bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("ata_ratio.csv"), "Size,1\n16777216,zero\n").unwrap();
    let out = simai(SEED001, &["--ratio-table-dir", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("ata_ratio.csv:2:10"),
        "{}",
        stderr(&out)
    );
}
