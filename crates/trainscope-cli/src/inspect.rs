//! `trainscope inspect FILE... [--format NAME] [--json]`: per-file format
//! detection and summary (for a HuggingFace config.json: the model, its
//! sizes and parameters), as readable text or as a JSON array. All files are
//! inspected together, so Echo rank files of one job form one measured run.
//! Exit code 0 when every file parsed, 3 when any file failed to parse (its
//! errors go to stderr with file, line and column), 2 on usage errors.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use trainscope_core::inspect::{load_set, to_json, FileSummary, LoadOptions};
use trainscope_core::workload::Format;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input files (SimAI/AICB workload, NeuSight TSV, Echo trace, Optimus-Prime
    /// log, HuggingFace config.json, PyTorch profiler (Kineto) trace, plain or
    /// gzip'd, Chakra `.et` files with their comm_groups.json).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Force a format instead of detecting it: simai-workload, neusight-tsv,
    /// echo-trace, optimus-prime-log, hf-config, kineto-trace, chakra-et,
    /// chakra-comm-groups.
    #[arg(long = "format", value_name = "NAME")]
    format: Option<String>,
    /// Kineto traces: the ProfilerStep number to analyse (default: the last
    /// one every rank has).
    #[arg(long, value_name = "N")]
    iteration: Option<u32>,
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
    let mut contents = Vec::new();
    for path in &args.files {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        contents.push((path.display().to_string(), bytes));
    }
    let refs: Vec<(&str, &[u8])> = contents
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let mut options = LoadOptions::default();
    options.kineto.iteration = args.iteration;
    let summaries = load_set(&refs, forced, &options).summaries;
    let failed = summaries.iter().any(FileSummary::has_errors);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&summaries))?);
    } else {
        for s in &summaries {
            print!("{}", s.render_text());
        }
    }
    for s in &summaries {
        for d in s.diagnostics.iter().filter(|d| d.is_error()) {
            eprint!("{}", d.render());
        }
    }
    Ok(if failed { 3 } else { 0 })
}
