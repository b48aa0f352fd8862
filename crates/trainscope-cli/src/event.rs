//! `trainscope simulate FILE... [--mode event]` (the default mode) and
//! `trainscope convert FILE... --to chrome-trace -o PATH`.
//!
//! The event mode turns the flags into the core's settings ([`SimConfig`],
//! [`RunOptions`]), reads and parses the files one at a time (the core's
//! `SetLoader`, as the web page does: a file's bytes are dropped once it is
//! parsed) and runs them as [`trainscope_core::run::run_files`] does
//! (`load_from_set`, `run_loaded`), so both print the same numbers. Output: a readable report (stdout; warnings on stderr) or the
//! JSON object of [`trainscope_core::run::RunOutput::report_json`]
//! (`--json`); optionally the simulated timeline as a Chrome trace
//! (`--chrome-trace PATH`) and its spans as CSV (`--spans-csv PATH`).
//! Without flags the settings are exactly `SimConfig::default()` and
//! `RunOptions::default()`.
//!
//! `convert` writes a measured run's timeline (Echo traces, Optimus-Prime
//! logs) without simulating; a described workload is a usage error that
//! points at `simulate --chrome-trace`.
//!
//! Exit codes: 0 success, 2 usage error, 3 a file failed to parse, 4 an
//! invalid simulation configuration.

use crate::args::parse_format;
use crate::args::{settings, Args, ConvertArgs, ConvertTo};
use crate::io::write_chakra;
use crate::io::EXIT_USAGE;
use crate::io::{load_files_one_by_one, print_stdout, read_files, report_error, write_timeline};
use crate::render::{ms, render_text};
use anyhow::Result;
use trainscope_core::run::convert_files;
use trainscope_core::run::{load_from_set, run_loaded, RunError, RunOptions};

/// Run the event mode; returns the exit code.
pub fn run(args: &Args) -> Result<u8> {
    let f = &args.simai;
    for (set, name) in [
        (args.csv.is_some(), "--csv"),
        (f.dp_overlap.is_some(), "--dp-overlap"),
        (f.tp_overlap.is_some(), "--tp-overlap"),
        (f.ep_overlap.is_some(), "--ep-overlap"),
        (f.pp_overlap.is_some(), "--pp-overlap"),
    ] {
        if set {
            eprintln!("warning: {name} belongs to the SimAI-compatible mode (--mode simai); ignored in event mode");
        }
    }
    let (config, mut options) = match settings(args)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    // The report is printed and the simulated timeline written: the
    // measured timeline is not built.
    options.report_only = true;
    // Read and parsed one file at a time; then as `run_files` runs them.
    let set = load_files_one_by_one(&args.files, &options)?;
    let run = || {
        config.validate()?;
        options.validate()?;
        if args.files.is_empty() {
            return Err(RunError::Usage("no input file".to_string()));
        }
        run_loaded(&load_from_set(set, &options)?, &config, &options)
    };
    let out = match run() {
        Ok(o) => o,
        Err(e) => return Ok(report_error(&e)),
    };
    let e = &args.event;
    write_timeline(
        &out.result.timeline,
        e.chrome_trace.as_deref(),
        e.spans_csv.as_deref(),
    )?;
    if args.json {
        print_stdout(&(serde_json::to_string_pretty(&out.report_json())? + "\n"))?;
    } else {
        print_stdout(&render_text(&out))?;
        for w in &out.warnings {
            eprintln!("{w}");
        }
    }
    Ok(0)
}

/// Run `convert`; returns the exit code.
pub fn convert(args: &ConvertArgs) -> Result<u8> {
    if let Some(model) = &args.model.model {
        return crate::model::convert(args, model);
    }
    if args.to == ConvertTo::SimaiWorkload {
        eprintln!("error: `--to simai-workload` writes a model-level job: give --model MODEL and its training flags");
        return Ok(EXIT_USAGE);
    }
    let mut options = RunOptions::default();
    if let Some(name) = &args.format {
        match parse_format(name) {
            Ok(f) => options.format = Some(f),
            Err(code) => return Ok(code),
        }
    }
    let files = read_files(&args.files)?;
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    if args.to == ConvertTo::ChakraEt {
        let out = match trainscope_core::run::run_files(
            &refs,
            &trainscope_core::engine::SimConfig::default(),
            &options,
        ) {
            Ok(o) => o,
            Err(e) => return Ok(report_error(&e)),
        };
        for w in &out.warnings {
            eprintln!("{w}");
        }
        let what = out.files.join(", ");
        let order = trainscope_core::engine::SimConfig::default()
            .network
            .placement;
        return write_chakra(
            &what,
            &out.result.timeline,
            out.parallel,
            order,
            &args.output,
        );
    }
    let out = match convert_files(&refs, &options) {
        Ok(o) => o,
        Err(e) => return Ok(report_error(&e)),
    };
    let t = &out.timeline;
    match args.to {
        ConvertTo::ChromeTrace => write_timeline(t, Some(&args.output), None)?,
        ConvertTo::SpansCsv => write_timeline(t, None, Some(&args.output))?,
        // Refused or handled above.
        ConvertTo::SimaiWorkload | ConvertTo::ChakraEt => return Ok(EXIT_USAGE),
    }
    for w in &out.warnings {
        eprintln!("{w}");
    }
    print_stdout(&format!(
        "{}: {} spans of {} rank(s) ({}){} written to {}\n",
        out.files.join(", "),
        t.span_count(),
        out.measured.ranks.len(),
        out.format.name(),
        out.measured
            .iteration_time_ns
            .map_or(String::new(), |ns| format!(
                ", measured iteration {} ms",
                ms(ns)
            )),
        args.output.display()
    ))?;
    Ok(0)
}
