//! Shared helpers for the workspace integration tests: locating fixtures and
//! the seed files bundled with the project.

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
