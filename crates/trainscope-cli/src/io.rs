//! The CLI's file system and standard streams, and its exit codes: reading
//! input files and SimAI ratio tables, writing timelines and Chakra files,
//! printing to stdout and reporting a run's errors on stderr with the exit
//! code each kind of failure gets ([`EXIT_USAGE`], [`EXIT_PARSE`], [`EXIT_CONFIG`]).

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use trainscope_core::analytical::RatioTables;
use trainscope_core::analytical::{AnalyticalError, RatioTable, TableKind};
use trainscope_core::export;
use trainscope_core::run::RunError;
use trainscope_core::timeline::Timeline;
use trainscope_core::Diagnostic;

/// Exit code: usage error.
pub const EXIT_USAGE: u8 = 2;

/// Exit code: an input failed to parse.
pub const EXIT_PARSE: u8 = 3;

/// Exit code: invalid simulation configuration.
pub const EXIT_CONFIG: u8 = 4;

pub(crate) fn read_files(paths: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
    paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            Ok((p.display().to_string(), bytes))
        })
        .collect()
}

/// The files' set as [`read_files`] then the core's `load_set` give it,
/// read and parsed one file at a time (each file's bytes are dropped once
/// parsed: a set of many files is never in memory at once). A second
/// thread reads the next files while this one parses ([`READ_AHEAD`]
/// files at most wait), in the paths' order: the result is the same as
/// reading them one after another, only sooner.
pub(crate) fn load_files_one_by_one(
    paths: &[PathBuf],
    options: &trainscope_core::run::RunOptions,
) -> Result<trainscope_core::inspect::LoadedSet> {
    let load = trainscope_core::run::load_options(options);
    let mut loader = trainscope_core::inspect::SetLoader::new(options.format, &load);
    std::thread::scope(|scope| {
        let (send, receive) = std::sync::mpsc::sync_channel(READ_AHEAD);
        // Parsed files' buffers go back to the reader for the next files.
        let (give_back, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        scope.spawn(move || {
            for p in paths {
                let mut bytes = spare.try_recv().unwrap_or_default();
                bytes.clear();
                let read = std::fs::File::open(p).and_then(|mut f| {
                    use std::io::Read;
                    f.read_to_end(&mut bytes)
                });
                let failed = read.is_err();
                // The parser stops at the first failure, or has gone.
                if send.send((p, read.map(|_| bytes))).is_err() || failed {
                    break;
                }
            }
        });
        for (p, read) in receive {
            let bytes = read.with_context(|| format!("cannot read {}", p.display()))?;
            loader.add(&p.display().to_string(), &bytes, &mut |_, _| {});
            // The reader may have finished: the buffer is then dropped.
            let _ = give_back.send(bytes);
        }
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(loader.finish())
}

/// Files read ahead of the parser at most ([`load_files_one_by_one`]).
const READ_AHEAD: usize = 2;

/// Write to stdout; a closed pipe (`| head`) is not an error.
pub(crate) fn print_stdout(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("cannot write to stdout"),
    }
}

pub(crate) fn report_error(e: &RunError) -> u8 {
    for d in e.diagnostics() {
        eprint!("{}", d.render());
    }
    e.exit_code()
}

fn write_file(path: &Path, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<()> {
    let mut out = Vec::new();
    write(&mut out).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

pub(crate) fn write_timeline(
    t: &Timeline,
    chrome: Option<&Path>,
    csv: Option<&Path>,
) -> Result<()> {
    if let Some(p) = chrome {
        write_file(p, |w| export::write_chrome_trace(t, w))?;
    }
    if let Some(p) = csv {
        write_file(p, |w| export::write_spans_csv(t, w))?;
    }
    Ok(())
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

/// Print an invalid configuration; its exit code is always 4 (invalid
/// configuration), an unknown `--gpu-type` / `--nic-type` preset included
/// (the message lists the known presets).
pub fn config_error(e: &AnalyticalError) -> u8 {
    eprint!("{}", e.to_diagnostic().render());
    EXIT_CONFIG
}

/// Write a simulated timeline as Chakra ET files `DIR/trainscope.<i>.et`
/// (created if missing), one per rank, and the collective groups their
/// `pg_name`s use as `DIR/comm_groups.json`; `what` names the input in the
/// message, which ends with the ASTRA-sim flags that read them.
pub fn write_chakra(
    what: &str,
    timeline: &trainscope_core::timeline::Timeline,
    parallel: trainscope_core::engine::spec::Parallelism,
    order: trainscope_core::engine::config::PlacementOrder,
    dir: &std::path::Path,
) -> Result<u8> {
    let export = trainscope_core::replay::chakra::write_timeline(timeline, parallel, order);
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut stands = Vec::new();
    for i in 0..export.len() {
        let (what, bytes) = export.file(i);
        let path = dir.join(format!("trainscope.{i}.et"));
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        if stands.len() < 8 {
            stands.push(what);
        }
    }
    if export.len() > 8 {
        stands.push("...".to_string());
    }
    let groups = match export.comm_groups_json() {
        Some(json) => {
            let path = dir.join("comm_groups.json");
            std::fs::write(&path, json)
                .with_context(|| format!("cannot write {}", path.display()))?;
            format!(" --comm-group-configuration={}", path.display())
        }
        None => String::new(),
    };
    for w in &export.warnings {
        eprintln!("warning: {w}");
    }
    print_stdout(&format!(
        "{what}: {} Chakra ET file(s) ({}) written to {}\nASTRA-sim: --workload-configuration={}{groups}\n",
        export.len(),
        stands.join(", "),
        dir.display(),
        dir.join("trainscope").display()
    ))?;
    Ok(0)
}
