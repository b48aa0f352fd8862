//! `trainscope inspect FILE... [--format NAME] [--json]`: per-file format
//! detection and summary, as readable text or as a JSON array.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use trainscope_core::inspect::{inspect, FileSummary};
use trainscope_core::Format;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input files (SimAI/AICB workload, NeuSight TSV, Echo trace, Optimus-Prime log).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Force a format instead of detecting it: simai-workload, neusight-tsv,
    /// echo-trace, optimus-prime-log.
    #[arg(long = "format", value_name = "NAME")]
    format: Option<String>,
    /// Print a JSON array with one object per file.
    #[arg(long)]
    json: bool,
}

/// Exit code 3 when any file failed to parse.
pub fn run(args: &Args) -> Result<u8> {
    let forced = match &args.format {
        None => None,
        Some(name) => match Format::from_name(name) {
            Some(f) => Some(f),
            None => {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                bail!(
                    "unknown format `{name}`; expected one of: {}",
                    names.join(", ")
                );
            }
        },
    };
    let mut summaries = Vec::new();
    for path in &args.files {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        summaries.push(inspect(&path.display().to_string(), &bytes, forced));
    }
    let failed = summaries.iter().any(FileSummary::has_errors);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&summaries))?);
    } else {
        for s in &summaries {
            print!("{}", render_text(s));
        }
    }
    for s in &summaries {
        for d in s.diagnostics.iter().filter(|d| d.is_error()) {
            eprint!("{}", d.render());
        }
    }
    Ok(if failed { 3 } else { 0 })
}

/// The JSON shape: the summary plus `warnings` and `errors` as strings.
fn to_json(summaries: &[FileSummary]) -> serde_json::Value {
    summaries
        .iter()
        .map(|s| {
            let mut v = serde_json::to_value(s).expect("summary serialises");
            let strings = |error: bool| -> Vec<String> {
                s.diagnostics
                    .iter()
                    .filter(|d| d.is_error() == error)
                    .map(|d| d.short())
                    .collect()
            };
            v["warnings"] = strings(false).into();
            v["errors"] = strings(true).into();
            v
        })
        .collect()
}

fn render_text(s: &FileSummary) -> String {
    let mut out = format!("{}\n", s.file);
    match s.format {
        Some(f) => out.push_str(&format!("  format: {}\n", f.name())),
        None => out.push_str("  format: unrecognised\n"),
    }
    if let Some(h) = &s.simai {
        out.push_str(&format!("  policy: {}\n", h.policy));
        out.push_str(&format!(
            "  parallelism: TP {} · PP {} · EP {} · vpp {} · GA {} · world {}\n",
            h.tp,
            h.pp,
            h.ep,
            h.vpp,
            h.ga,
            h.world.map_or("?".to_string(), |w| w.to_string())
        ));
        out.push_str(&format!("  pp_comm: {} bytes\n", h.pp_comm_bytes));
        out.push_str(&format!(
            "  records: {} read, {} skipped, {} declared\n",
            h.records, h.skipped_records, h.declared_records
        ));
    }
    let warnings = s.diagnostics.iter().filter(|d| !d.is_error()).count();
    let errors = s.diagnostics.len() - warnings;
    out.push_str(&format!("  {warnings} warning(s), {errors} error(s)\n"));
    for d in s.diagnostics.iter().filter(|d| !d.is_error()) {
        out.push_str(&format!("  {}\n", d.short()));
    }
    out
}
