//! `trainscope simulate FILE... [flags]`: the arguments of both modes and
//! the SimAI-compatible mode itself. `--mode event` (the default) runs the
//! event-level engine ([`crate::event`]); `--mode simai FILE` runs the
//! SimAI-compatible mode on a SimAI/AICB workload, printed as a readable
//! table, as JSON (`--json`) or written as SimAI's EndToEnd CSV (`--csv
//! PATH`). SimAI's own flag spellings (`-w FILE -g N -g_p_s N -n_p_s N -nv X
//! -nic X -dp_o R ...`) are rewritten to the long flags before clap sees them
//! ([`rewrite_simai_spellings`]). Flags that mean the same in both modes are
//! shared: `--world`, `--gpus-per-node` (= `--gpus-per-server`),
//! `--nics-per-node` (= `--nics-per-server`), `--nvlink-gbps`, `--nic-gbps`,
//! `--gpu-type`, `--nic-type`, `--ratio-table-dir`, `--json`.

use crate::args::{Args, Mode};
use crate::io::{config_error, csv_prefix, load_tables};
use crate::io::{EXIT_PARSE, EXIT_USAGE};
use anyhow::{Context, Result};
use std::ffi::OsString;
use trainscope_core::analytical::csv::{end_to_end_csv, us_rounded};
use trainscope_core::analytical::{
    analyse, parse_workload, AnalyticalConfig, AnalyticalReport, OverlapRatios, PhaseComm,
    SimulateError,
};
use trainscope_core::Diagnostic;

/// SimAI's single-dash flags and their long spellings here.
const SIMAI_SPELLINGS: [(&str, &str); 9] = [
    ("-g", "--world"),
    ("-g_p_s", "--gpus-per-server"),
    ("-n_p_s", "--nics-per-server"),
    ("-nv", "--nvlink-gbps"),
    ("-nic", "--nic-gbps"),
    ("-dp_o", "--dp-overlap"),
    ("-tp_o", "--tp-overlap"),
    ("-ep_o", "--ep-overlap"),
    ("-pp_o", "--pp-overlap"),
];

/// Rewrite SimAI's flag spellings after the `simulate` subcommand so clap
/// can parse them: `-w FILE` becomes the positional FILE, `-g N` becomes
/// `--world N`, and so on (also `-flag=value`). Stops at `--`; leaves every
/// other argument alone.
pub fn rewrite_simai_spellings(args: Vec<OsString>) -> Vec<OsString> {
    let Some(sub) = args
        .iter()
        .skip(1)
        .position(|a| !a.to_string_lossy().starts_with('-'))
        .map(|i| i + 1)
    else {
        return args;
    };
    if args[sub] != "simulate" {
        return args;
    }
    let mut out: Vec<OsString> = args[..=sub].to_vec();
    let mut rest = args[sub + 1..].iter();
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str() else {
            out.push(arg.clone());
            continue;
        };
        if text == "--" {
            out.push(arg.clone());
            out.extend(rest.cloned());
            break;
        }
        let (flag, inline) = match text.split_once('=') {
            Some((f, v)) if f.starts_with('-') && !f.starts_with("--") => (f, Some(v)),
            _ => (text, None),
        };
        if flag == "-w" {
            match inline {
                Some(v) => out.push(v.into()),
                None => out.extend(rest.next().cloned()),
            }
            continue;
        }
        match SIMAI_SPELLINGS.iter().find(|(simai, _)| *simai == flag) {
            Some((_, long)) => match inline {
                Some(v) => out.push(format!("{long}={v}").into()),
                None => out.push((*long).into()),
            },
            None => out.push(arg.clone()),
        }
    }
    out
}

/// Run the subcommand; returns the exit code.
pub fn run(args: &Args) -> Result<u8> {
    if let Some(model) = &args.model.model {
        if args.mode == Mode::Simai {
            eprintln!("error: `--mode simai` reads a SimAI workload; export the model-level job with `trainscope convert --model ... --to simai-workload` first");
            return Ok(EXIT_USAGE);
        }
        return crate::model::run(args, model);
    }
    let given = args.model.given();
    if !given.is_empty() {
        eprintln!(
            "error: {} describe a model-level job and need --model",
            given.join(", ")
        );
        return Ok(EXIT_USAGE);
    }
    match args.mode {
        Mode::Event => crate::event::run(args),
        Mode::Simai => run_simai(args),
    }
}

fn run_simai(args: &Args) -> Result<u8> {
    let [file] = args.files.as_slice() else {
        eprintln!(
            "error: `--mode simai` reads one SimAI/AICB workload; got {} files",
            args.files.len()
        );
        return Ok(EXIT_USAGE);
    };
    for name in args.event.given().into_iter().chain(args.whatif.given()) {
        eprintln!("warning: {name} is an event-mode flag; ignored with --mode simai");
    }
    let name = file.display().to_string();
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut config = AnalyticalConfig::default();
    let f = &args.simai;
    config.world_size = f.world;
    config.gpus_per_server = f.gpus_per_server;
    config.nics_per_server = f.nics_per_server;
    config.nvlink_busbw_gbps = f.nvlink_gbps;
    config.nic_busbw_gbps = f.nic_gbps;
    config.gpu_type = f.gpu_type.clone();
    config.nic_type = f.nic_type.clone();
    let d = OverlapRatios::default();
    config.overlap = OverlapRatios {
        dp: f.dp_overlap.unwrap_or(d.dp),
        tp: f.tp_overlap.unwrap_or(d.tp),
        ep: f.ep_overlap.unwrap_or(d.ep),
        pp: f.pp_overlap.unwrap_or(d.pp),
    };
    let mut extra_warnings = Vec::new();
    if let Some(dir) = &f.ratio_table_dir {
        match load_tables(dir, &mut config.tables, &mut extra_warnings)? {
            Ok(()) => {}
            Err(code) => return Ok(code),
        }
    }
    let workload = match parse_workload(&name, &bytes) {
        Ok(w) => w,
        Err(SimulateError::Parse(diags)) => {
            for d in &diags {
                eprint!("{}", d.render());
            }
            let text = String::from_utf8_lossy(&bytes);
            if let Ok(format) = trainscope_core::formats::detect(&name, &text) {
                if format != trainscope_core::workload::Format::SimaiWorkload {
                    eprintln!(
                        "note: `{name}` looks like a {} file; `--mode simai` reads SimAI/AICB workloads",
                        format.name()
                    );
                }
            }
            return Ok(EXIT_PARSE);
        }
        Err(SimulateError::Config(e)) => return Ok(config_error(&e)),
    };
    let mut report = match analyse(&workload, &config) {
        Ok(r) => r,
        Err(e) => return Ok(config_error(&e)),
    };
    report.warnings.extend(extra_warnings);
    if let Some(path) = &args.csv {
        let csv = end_to_end_csv(&report, &csv_prefix(path));
        std::fs::write(path, csv).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&name, &report))?
        );
    } else {
        print!("{}", render_text(&name, &report));
        for w in &report.warnings {
            eprintln!("{}", w.short());
        }
    }
    Ok(0)
}

/// The JSON object: the core report plus `file`, with warnings as
/// one-line strings (as `inspect --json` writes them).
fn to_json(file: &str, report: &AnalyticalReport) -> serde_json::Value {
    let mut v = serde_json::to_value(report).unwrap_or_default();
    v["file"] = file.into();
    v["warnings"] = report
        .warnings
        .iter()
        .map(Diagnostic::short)
        .collect::<Vec<_>>()
        .into();
    v
}

fn comm_cell(p: &PhaseComm) -> String {
    match p.group {
        None => "-".to_string(),
        Some(g) => format!(
            "{} {}/{}",
            g.name(),
            us_rounded(p.exposed_ns),
            us_rounded(p.total_ns)
        ),
    }
}

/// The readable report: configuration, summary with shares, per-layer table.
pub fn render_text(file: &str, r: &AnalyticalReport) -> String {
    let p = &r.parallelism;
    let c = &r.cluster;
    let o = &r.overlap;
    let mut out = format!("{file}: SimAI-compatible mode (SimAI-Analytical's cost model)\n");
    out.push_str(&format!(
        "  parallelism: TP {} · PP {} · EP {} · DP {} · DP/EP {} · vpp {} · GA {} · world {}\n",
        p.tp, p.pp, p.ep, p.dp, p.dp_ep, p.vpp, p.ga, c.world_size
    ));
    out.push_str(&format!(
        "  cluster: {} GPUs and {} NICs per server · NVLink {} GB/s · NIC {} GB/s\n",
        c.gpus_per_server, c.nics_per_server, c.nvlink_busbw_gbps, c.nic_busbw_gbps
    ));
    out.push_str(&format!(
        "  overlap: dp {} · tp {} · ep {} · pp {}\n\n",
        o.dp, o.tp, o.ep, o.pp
    ));
    let e = &r.exposed_comm_ns;
    let s = &r.shares_percent;
    out.push_str(&format!("  {:<22}{:>14}{:>9}\n", "", "time (us)", "share"));
    for (what, ns, share) in [
        ("exposed DP comm", e.dp, s.dp),
        ("exposed DP_EP comm", e.dp_ep, s.dp_ep),
        ("exposed TP comm", e.tp, s.tp),
        ("exposed EP comm", e.ep, s.ep),
        ("exposed PP comm", e.pp, s.pp),
        ("bubble", r.bubble_ns, s.bubble),
        ("compute", r.compute_ns, s.compute),
        (
            "exposed comm total",
            r.exposed_comm_total_ns,
            s.exposed_comm,
        ),
    ] {
        out.push_str(&format!(
            "  {what:<22}{:>14}{:>8.2}%\n",
            us_rounded(ns),
            share
        ));
    }
    out.push_str(&format!(
        "  {:<22}{:>14}  ({:.3} ms)\n\n",
        "iteration time",
        us_rounded(r.iteration_time_ns),
        r.iteration_time_ns as f64 / 1e6
    ));
    out.push_str(&format!(
        "  per layer, us (comm: group exposed/total)\n  {:>5}  {:<20} {:>9} {:>9} {:>9}  {:<18} {:<18} {:<18}\n",
        "line", "layer", "fwd comp", "wg comp", "ig comp", "fwd comm", "wg comm", "ig comm"
    ));
    for l in &r.layers {
        out.push_str(&format!(
            "  {:>5}  {:<20} {:>9} {:>9} {:>9}  {:<18} {:<18} {:<18}\n",
            l.line,
            l.name,
            us_rounded(l.fwd_compute_ns),
            us_rounded(l.wg_compute_ns),
            us_rounded(l.ig_compute_ns),
            comm_cell(&l.fwd),
            comm_cell(&l.wg),
            comm_cell(&l.ig),
        ));
    }
    let trimmed: Vec<&str> = out.lines().map(str::trim_end).collect();
    trimmed.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn rw(args: &[&str]) -> Vec<String> {
        rewrite_simai_spellings(args.iter().map(OsString::from).collect())
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn rewrites_simai_flags_after_simulate_only() {
        assert_eq!(
            rw(&["ts", "simulate", "-w", "f.txt", "-g", "8", "-g_p_s=4", "-nv", "360", "--json"]),
            vec![
                "ts",
                "simulate",
                "f.txt",
                "--world",
                "8",
                "--gpus-per-server=4",
                "--nvlink-gbps",
                "360",
                "--json"
            ]
        );
        assert_eq!(
            rw(&[
                "ts", "simulate", "-w=a", "-n_p_s", "2", "-nic", "1", "-dp_o", "0.1", "-tp_o",
                "0.2", "-ep_o", "0.3", "-pp_o", "0.4"
            ]),
            vec![
                "ts",
                "simulate",
                "a",
                "--nics-per-server",
                "2",
                "--nic-gbps",
                "1",
                "--dp-overlap",
                "0.1",
                "--tp-overlap",
                "0.2",
                "--ep-overlap",
                "0.3",
                "--pp-overlap",
                "0.4"
            ]
        );
        // Other subcommands and everything after `--` are left alone.
        assert_eq!(
            rw(&["ts", "inspect", "-g", "x"]),
            vec!["ts", "inspect", "-g", "x"]
        );
        assert_eq!(
            rw(&["ts", "simulate", "--", "-g"]),
            vec!["ts", "simulate", "--", "-g"]
        );
        assert_eq!(rw(&["ts"]), vec!["ts"]);
    }

    #[test]
    fn csv_prefix_from_file_name() {
        assert_eq!(csv_prefix(Path::new("/x/r000-EndToEnd.csv")), "r000-");
        assert_eq!(csv_prefix(Path::new("EndToEnd.csv")), "");
        assert_eq!(csv_prefix(Path::new("out/run.csv")), "run-");
    }
}
