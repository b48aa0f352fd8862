//! `trainscope`: the headless front end. Reads files (the only crate that
//! touches the file system), hands their bytes to `trainscope-core`, and
//! prints text or JSON. Exit codes: 0 success, 2 usage error, 3 a file failed
//! to parse, 4 an invalid simulation configuration.

mod analyze;
mod args;
mod event;
mod inspect;
mod io;
mod model;
mod plan;
mod render;
mod simulate;
mod sweep;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// The process's allocator. A sweep builds and drops one job's arrays per
/// candidate; glibc's allocator hands those large blocks back to the
/// kernel and faults them in again for the next candidate (seconds of
/// system time on a 1024-GPU sweep, see README "Performance"); mimalloc
/// keeps them for reuse. Only the binary chooses it: the core stays free
/// of allocator choices and the page keeps the wasm default.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Simulate distributed deep-learning training from workload files and logs.
#[derive(Parser, Debug)]
#[command(name = "trainscope", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Detect each file's format and summarise what it describes.
    Inspect(inspect::Args),
    /// Simulate one training iteration of a workload or replay a measured
    /// run (`--mode simai`: SimAI-Analytical's numbers).
    Simulate(Box<args::Args>),
    /// Write a measured run's timeline (Echo traces, Optimus-Prime log) as a
    /// Chrome trace or spans CSV, without simulating; or a simulated job
    /// (files or --model) as Chakra execution traces (--to chakra-et).
    Convert(Box<args::ConvertArgs>),
    /// Search the parallel layouts of a model-level job (TP, PP, EP,
    /// virtual stages, micro-batch size, recompute, schedule): the fastest
    /// that fit in memory, the Pareto front of time and memory.
    Sweep(Box<sweep::Args>),
    /// Break a measured run down per rank (compute, communication, overlap,
    /// idle), list the top kernels and name the straggler (PyTorch
    /// profiler traces).
    Analyze(analyze::Args),
    /// Plan the whole run of a job: days to train, failures, checkpoints,
    /// restarts, GPU-hours and cost (goodput), with a seeded Monte-Carlo.
    #[command(mut_arg("files", |a| a.hide(true).required_unless_present_any(["model", "from_json", "tokens", "steps"])))]
    Plan(Box<plan::PlanArgs>),
}

fn main() -> ExitCode {
    let argv = simulate::rewrite_simai_spellings(std::env::args_os().collect());
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(&args),
        Command::Simulate(args) => simulate::run(&args),
        Command::Convert(args) => event::convert(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Analyze(args) => analyze::run(&args),
        Command::Plan(args) => plan::run(&args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Clap's own consistency checks (duplicate flags, aliases) on every
    /// subcommand.
    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
