//! Shared helpers for the workspace integration tests: locating fixtures and
//! the seed files bundled with the project, and the one configuration of
//! every property test (a fixed seed, so `cargo test` is repeatable).

pub mod kineto_gen;

use std::path::PathBuf;

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
