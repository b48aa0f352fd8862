//! Timing helpers shared by the benchmarks (each bench is its own crate and
//! includes this file as a module; the tests crate's Kineto bench too).

#![allow(dead_code)] // each bench uses some of them

use std::time::{Duration, Instant};

/// Run `f` `n` times; (median, min) wall time and the last result.
pub fn time<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, Duration, T) {
    let mut times = Vec::with_capacity(n);
    let mut last = None;
    for _ in 0..n {
        let t0 = Instant::now();
        let r = f();
        times.push(t0.elapsed());
        last = Some(r);
    }
    times.sort();
    (times[n / 2], times[0], last.expect("n > 0"))
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Run `f` until at least `min` has elapsed (and at least 3 times); return
/// the best throughput in MB/s of `bytes` and the number of runs.
pub fn measure(bytes: usize, min: Duration, mut f: impl FnMut()) -> (f64, u32) {
    let mut best = f64::MAX;
    let mut runs = 0u32;
    let start = Instant::now();
    while runs < 3 || start.elapsed() < min {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    (bytes as f64 / 1e6 / best, runs)
}
