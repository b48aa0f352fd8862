//! What every CLI test file shares: the fixtures' path, a run of the built
//! `trainscope` binary, its stderr as text, its stdout as JSON after a
//! successful exit, and a scratch folder per test file. Each file uses the
//! part it needs (hence `dead_code` allowed here).
#![allow(dead_code)]

use serde_json::Value;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The path of `tests/fixtures/REL` in the repository.
pub fn fixture(rel: &str) -> String {
    format!("{}/../../tests/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// Run the `trainscope` binary cargo built for these tests.
pub fn trainscope<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trainscope"))
        .args(args)
        .output()
        .expect("the trainscope binary runs")
}

/// A run's stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A run's stdout as JSON, after checking that it exited 0 (the panic
/// shows stderr, or stdout when it is not JSON).
pub fn json_ok(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

/// `NAME` in this test file's scratch folder (`DIR` under cargo's
/// per-target temporary folder, created if missing).
pub fn tmp(dir: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir.join(name)
}
