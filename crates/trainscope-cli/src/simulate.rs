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

use anyhow::{Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use trainscope_core::analytical::csv::{end_to_end_csv, us_rounded};
use trainscope_core::analytical::RatioTables;
use trainscope_core::analytical::{
    analyse, parse_workload, AnalyticalConfig, AnalyticalError, AnalyticalReport, OverlapRatios,
    PhaseComm, RatioTable, SimulateError, TableKind,
};
use trainscope_core::Diagnostic;

/// Exit code: usage error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: an input failed to parse.
pub const EXIT_PARSE: u8 = 3;
/// Exit code: invalid simulation configuration.
pub const EXIT_CONFIG: u8 = 4;

/// Which simulator runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The event-level engine: pipeline schedules, network model, replay of
    /// measured runs.
    Event,
    /// SimAI-Analytical's closed-form cost model, reproducing its numbers.
    Simai,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input files: a SimAI/AICB workload, a NeuSight TSV, the rank traces
    /// of one Echo job, or an Optimus-Prime log (`--mode simai`: one SimAI
    /// workload; SimAI's `-w FILE` also works).
    #[arg(required_unless_present = "model", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Simulator: `event` (default) or `simai` (SimAI-compatible).
    #[arg(long, value_enum, default_value_t = Mode::Event)]
    pub mode: Mode,
    /// Print the report as a JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also write SimAI's EndToEnd CSV to PATH (its first field is the file
    /// name up to `EndToEnd.csv`, e.g. `r000-` for `r000-EndToEnd.csv`).
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    #[command(flatten)]
    pub simai: SimaiFlags,
    #[command(flatten)]
    pub event: crate::event::EventFlags,
    #[command(flatten)]
    pub model: crate::model::ModelFlags,
}

/// Cluster flags of both modes and the SimAI-compatible mode's own flags
/// (SimAI's spelling in brackets).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "SimAI mode")]
pub struct SimaiFlags {
    /// World size, GPUs [-g] (default: the header's `all_gpus`; NeuSight
    /// inputs: the data-parallel size, default 1).
    #[arg(long, value_name = "N", help_heading = "Cluster (both modes)")]
    pub world: Option<u32>,
    /// GPUs per server (node) [-g_p_s] (default 8).
    #[arg(
        long,
        value_name = "N",
        visible_alias = "gpus-per-node",
        help_heading = "Cluster (both modes)"
    )]
    pub gpus_per_server: Option<u32>,
    /// NICs per server (node) [-n_p_s] (default 8).
    #[arg(
        long,
        value_name = "N",
        visible_alias = "nics-per-node",
        help_heading = "Cluster (both modes)"
    )]
    pub nics_per_server: Option<u32>,
    /// NVLink bus bandwidth, GB/s [-nv] (default: from --gpu-type, else H100).
    #[arg(
        long,
        value_name = "X",
        allow_negative_numbers = true,
        help_heading = "Cluster (both modes)"
    )]
    pub nvlink_gbps: Option<f64>,
    /// Per-NIC bus bandwidth, GB/s [-nic] (default: from --nic-type, else CX7).
    #[arg(
        long,
        value_name = "X",
        allow_negative_numbers = true,
        help_heading = "Cluster (both modes)"
    )]
    pub nic_gbps: Option<f64>,
    /// GPU preset (case-insensitive): A100-40G, A100-80G (= A100), A800,
    /// H100-SXM (= H100), H800, H20, H200, B200, A40, L40S, MI300X. Sets the
    /// NVLink bandwidth (SimAI mode: H100, H20, H800, A100, A800) and, for
    /// --model, the GPU (default H100-SXM).
    #[arg(long, value_name = "T", help_heading = "Cluster (both modes)")]
    pub gpu_type: Option<String>,
    /// NIC preset for the NIC bandwidth: CX6, CX7, BF3.
    #[arg(long, value_name = "T", help_heading = "Cluster (both modes)")]
    pub nic_type: Option<String>,
    /// DP overlap ratio in [0, 1] [-dp_o] (default 0).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub dp_overlap: Option<f64>,
    /// TP overlap ratio in [0, 1] [-tp_o] (default 0).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub tp_overlap: Option<f64>,
    /// EP overlap ratio in [0, 1] [-ep_o] (default 0).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub ep_overlap: Option<f64>,
    /// PP overlap ratio in (0, 1] [-pp_o] (default 1).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub pp_overlap: Option<f64>,
    /// Directory with nvlink_ratio.csv / nic_ratio.csv / ata_ratio.csv
    /// replacing the built-in bandwidth-efficiency tables (each file found
    /// replaces its table; event mode: for `--algorithm simai`).
    #[arg(long, value_name = "DIR", help_heading = "Cluster (both modes)")]
    pub ratio_table_dir: Option<PathBuf>,
}

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
    for name in args.event.given() {
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
                if format != trainscope_core::Format::SimaiWorkload {
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

/// Print an invalid configuration; its exit code is always 4 (invalid
/// configuration), an unknown `--gpu-type` / `--nic-type` preset included
/// (the message lists the known presets).
pub fn config_error(e: &AnalyticalError) -> u8 {
    eprint!("{}", e.to_diagnostic().render());
    EXIT_CONFIG
}

/// Replace the built-in tables by the files found in `dir`. The outer
/// error is IO (usage); the inner `Err(code)` a parse failure already printed.
pub fn load_tables(
    dir: &Path,
    tables: &mut RatioTables,
    warnings: &mut Vec<Diagnostic>,
) -> Result<std::result::Result<(), u8>> {
    if !dir.is_dir() {
        anyhow::bail!("--ratio-table-dir {} is not a directory", dir.display());
    }
    let mut found = 0;
    for kind in TableKind::ALL {
        let path = dir.join(kind.file_name());
        if !path.is_file() {
            warnings.push(Diagnostic::warning(format!(
                "{} not found; using the built-in {kind} table",
                path.display()
            )));
            continue;
        }
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        match RatioTable::parse_csv(&path.display().to_string(), &bytes) {
            Ok(t) => {
                tables.set(kind, t);
                found += 1;
            }
            Err(d) => {
                eprint!("{}", d.render());
                return Ok(Err(EXIT_PARSE));
            }
        }
    }
    if found == 0 {
        anyhow::bail!(
            "--ratio-table-dir {} holds none of nvlink_ratio.csv, nic_ratio.csv, ata_ratio.csv",
            dir.display()
        );
    }
    Ok(Ok(()))
}

/// The summary line's first field: the CSV's file name up to `EndToEnd.csv`
/// (SimAI names its output `<prefix>EndToEnd.csv`), else its stem and `-`.
pub fn csv_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.strip_suffix("EndToEnd.csv") {
        Some(prefix) => prefix.to_string(),
        None => {
            let stem = path
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("{stem}-")
        }
    }
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
