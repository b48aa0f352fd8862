//! Kineto parse-throughput benchmark (`cargo bench -p trainscope-tests
//! --bench kineto_parse`): a generated PyTorch profiler trace of about 50 MB
//! (one rank of `trainscope_tests::kineto_gen`), parsed plain and gzip'd
//! (`kineto::parse`), and an 8-rank job assembled into one run
//! (`inspect::load_set`), then analysed (`analysis::analyse`) and replayed
//! (`sim::run_files`), printed as MB/s of JSON text. A plain binary
//! (`harness = false`): it prints figures and asserts nothing about time.
//! Goal (issue 15): at least 100 MB/s native, release build.

use std::hint::black_box;
#[path = "../../crates/trainscope-core/benches/common/mod.rs"]
mod common;

use common::measure;
use std::time::Duration;
use trainscope_core::analysis::analyse;
use trainscope_core::formats::kineto;
use trainscope_core::inspect::{load_set, LoadOptions};
use trainscope_core::{
    engine::SimConfig,
    run::{run_files, RunOptions},
};
use trainscope_tests::kineto_gen::KinetoJob;

fn report(name: &str, bytes: usize, min: Duration, f: impl FnMut()) {
    let (mbps, runs) = measure(bytes, min, f);
    println!(
        "{name:<44} {:>10.2} MB  {mbps:>9.1} MB/s of JSON  (best of {runs})",
        bytes as f64 / 1e6
    );
}

fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(text.as_bytes()).expect("in-memory gzip");
    e.finish().expect("in-memory gzip")
}

fn main() {
    let min = Duration::from_secs(2);
    let job = KinetoJob::sized(7, 1, 50_000_000);
    let (name, text) = job.generate().remove(0);
    let bytes = text.len();
    report("kineto one rank, plain", bytes, min, || {
        black_box(kineto::parse(&name, black_box(text.as_bytes())).expect("parses"));
    });
    let gz = gzip(&text);
    println!(
        "  (gzip'd: {:.2} MB, ratio {:.1})",
        gz.len() as f64 / 1e6,
        bytes as f64 / gz.len() as f64
    );
    report(
        "kineto one rank, gzip'd (incl. inflate)",
        bytes,
        min,
        || {
            black_box(kineto::parse(&name, black_box(&gz)).expect("parses"));
        },
    );
    let job8 = KinetoJob::sized(7, 8, 6_000_000);
    let files = job8.generate();
    let total: usize = files.iter().map(|(_, t)| t.len()).sum();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_bytes()))
        .collect();
    report("kineto 8 ranks, load_set (one run)", total, min, || {
        black_box(load_set(black_box(&refs), None, &LoadOptions::default()));
    });
    report("kineto 8 ranks, load + analyse", total, min, || {
        let set = load_set(black_box(&refs), None, &LoadOptions::default());
        black_box(analyse(&set.runs[0], 10));
    });
    report(
        "kineto 8 ranks, load + replay (simulate)",
        total,
        min,
        || {
            black_box(
                run_files(
                    black_box(&refs),
                    &SimConfig::default(),
                    &RunOptions::default(),
                )
                .expect("replays"),
            );
        },
    );
}
