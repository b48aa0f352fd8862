//! Shared helpers for the workspace integration tests: locating fixtures and
//! the seed files bundled with the project, the one configuration of every
//! property test (a fixed seed, so `cargo test` is repeatable), and a
//! model-level job written as Chakra files (the Chakra round-trip tests),
//! and the rows of the measured CSV files (`tests/fixtures/measured/`),
//! and the one-GPU training setup those measurements ran.

pub mod kineto_gen;
pub mod modgraph;

use std::path::PathBuf;
use trainscope_core::job::TrainingSetup;
use trainscope_core::model::stack::{Stack, StackSettings};

/// The setup of a measured one-GPU step: `stack`, TP = PP = DP = 1,
/// `micro_batch` sequences of `seq` tokens a micro-batch, `global_batch`
/// a step (more than one micro-batch: gradient accumulation).
pub fn one_gpu_setup(stack: Stack, micro_batch: u32, global_batch: u32, seq: u32) -> TrainingSetup {
    TrainingSetup {
        stack: StackSettings {
            stack,
            ..StackSettings::default()
        },
        tp: 1,
        pp: 1,
        dp: Some(1),
        micro_batch_size: micro_batch,
        global_batch_size: Some(global_batch),
        seq_length: seq,
        ..TrainingSetup::default()
    }
}

/// Absolute path of `tests/fixtures/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The bytes of `tests/fixtures/<rel>`; panics with the path when missing.
pub fn fixture_bytes(rel: &str) -> Vec<u8> {
    let p = fixture(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", p.display()))
}

/// Fixture files read into memory, lent as the `(name, bytes)` pairs the
/// core's set readers take (each name the fixture's path under
/// `tests/fixtures/`).
pub struct FixtureSet {
    names: Vec<String>,
    bytes: Vec<Vec<u8>>,
}

impl FixtureSet {
    /// Read `rels` ([`fixture_bytes`]: panics on a missing fixture).
    pub fn read(rels: &[&str]) -> FixtureSet {
        FixtureSet {
            names: rels.iter().map(|r| r.to_string()).collect(),
            bytes: rels.iter().map(|r| fixture_bytes(r)).collect(),
        }
    }

    /// The files as `(name, bytes)`, in the order given.
    pub fn files(&self) -> Vec<(&str, &[u8])> {
        self.names
            .iter()
            .zip(&self.bytes)
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect()
    }
}

/// One CSV row as (header -> value).
pub type CsvRow = std::collections::BTreeMap<String, String>;

/// Rows of `tests/fixtures/<dir>/<name>`, a CSV file as Python's `csv`
/// module writes it (a field holding a comma is double-quoted, a quote
/// inside it doubled).
pub fn csv_rows(dir: &str, name: &str) -> Vec<CsvRow> {
    let text = String::from_utf8(fixture_bytes(&format!("{dir}/{name}"))).unwrap();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = csv_fields(lines.next().unwrap_or_default());
    lines
        .map(|l| header.iter().cloned().zip(csv_fields(l)).collect())
        .collect()
}

fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    out.push(field);
    out
}

/// A numeric field of a CSV row; panics with the key and text otherwise.
pub fn csv_num(row: &CsvRow, key: &str) -> f64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key} = {:?}", row[key]))
}

/// The property tests' configuration: `cases` cases from a fixed seed, so a
/// run is repeatable and CI cannot fail at random. Set `TRAINSCOPE_PROPTEST_SEED`
/// (a u64) to explore other inputs; a failure prints its minimal input.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    let seed = std::env::var("TRAINSCOPE_PROPTEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7a1e_5c09e);
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
        ..proptest::test_runner::Config::default()
    }
}

/// The median of `v` (the mean of the two middle values for an even
/// count); NaN-free input assumed.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A model-level job of Llama 3.2 1B (H100, 1024 tokens a sequence, TP x
/// DP x PP as given, `global_batch` sequences) simulated and written as
/// Chakra files: the `job.<rank>.et` files, the `comm_groups.json` text
/// and the original run (its summary and timeline); the host model is off
/// (Chakra files carry no host launches).
pub fn chakra_written(
    tp: u32,
    dp: u32,
    pp: u32,
    global_batch: u32,
) -> (
    Vec<(String, Vec<u8>)>,
    String,
    trainscope_core::run::RunOutput,
) {
    use trainscope_core::job::{run::run_model, ModelJob, TrainingSetup};
    let setup = TrainingSetup {
        tp,
        pp,
        dp: Some(dp),
        global_batch_size: Some(global_batch),
        seq_length: 1024,
        // Chakra ETs carry the device's work, not the host's launches: the
        // round trip is checked on the job without its host model.
        stack: trainscope_core::model::stack::StackSettings {
            launch_ns_per_kernel: Some(0),
            ..Default::default()
        },
        ..TrainingSetup::default()
    };
    let model = trainscope_core::model::presets::preset("llama3.2-1b").expect("preset");
    let gpu = trainscope_core::hardware::gpu_preset("H100").expect("GPU");
    let job = ModelJob::new(model, setup, gpu, None).expect("a valid job");
    let out = run_model(&job, &trainscope_core::engine::SimConfig::default()).expect("runs");
    let ex = trainscope_core::replay::chakra::write_timeline(
        &out.run.result.timeline,
        out.run.parallel,
        trainscope_core::engine::config::PlacementOrder::default(),
    );
    assert!(ex.warnings.is_empty(), "{:?}", ex.warnings);
    let files = ex
        .files()
        .into_iter()
        .map(|(i, _, b)| (format!("job.{i}.et"), b))
        .collect();
    (files, ex.comm_groups_json().expect("groups"), out.run)
}

/// Simulate Chakra `files` (name, bytes), with `groups` as
/// `comm_groups.json` when given, under the default settings.
pub fn chakra_simulate(
    files: &[(String, Vec<u8>)],
    groups: Option<&str>,
) -> Result<trainscope_core::run::RunOutput, trainscope_core::run::RunError> {
    let mut set: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    if let Some(g) = groups {
        set.push(("comm_groups.json", g.as_bytes()));
    }
    trainscope_core::run::run_files(
        &set,
        &trainscope_core::engine::SimConfig::default(),
        &trainscope_core::run::RunOptions::default(),
    )
}
