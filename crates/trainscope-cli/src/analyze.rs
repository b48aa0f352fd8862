//! `trainscope analyze FILE... [--iteration N] [--top N] [--json]`: the
//! per-rank breakdown of a measured run with timed GPU work (PyTorch
//! profiler traces): compute, communication, overlap, idle per rank, the
//! top kernels, the compute straggler and, per collective, the rank that
//! arrived last ([`trainscope_core::analysis`]). Exit code 0 on success, 3
//! when a file failed to parse, 2 on usage errors (no measured run, or more
//! than one).

use anyhow::{bail, Result};
use std::path::PathBuf;
use trainscope_core::analysis::{analyse, DEFAULT_TOP_KERNELS};
use trainscope_core::inspect::{failed_file_errors, load_set, LoadOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The rank files of one measured run (PyTorch profiler traces, plain
    /// or gzip'd; Echo traces too).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Kineto traces: the ProfilerStep number to analyse (default: the last
    /// one every rank has).
    #[arg(long, value_name = "N")]
    iteration: Option<u32>,
    /// How many kernels to list, longest total first.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TOP_KERNELS)]
    top: usize,
    /// Print the analysis as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> Result<u8> {
    let contents = crate::io::read_files(&args.files)?;
    let refs: Vec<(&str, &[u8])> = contents
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let mut options = LoadOptions::default();
    options.kineto.iteration = args.iteration;
    let set = load_set(&refs, None, &options);
    let errors = failed_file_errors(&set.summaries);
    if !errors.is_empty() {
        for d in &errors {
            eprint!("{}", d.render());
        }
        return Ok(3);
    }
    for s in &set.summaries {
        for w in s.warnings() {
            eprintln!("{w}");
        }
    }
    let [run] = set.runs.as_slice() else {
        bail!(
            "analyze takes the files of one measured run; got {} run(s)",
            set.runs.len()
        );
    };
    let a = analyse(run, args.top);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&a)?);
    } else {
        print!("{}", a.render_text());
    }
    Ok(0)
}
