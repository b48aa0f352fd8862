//! Timing helpers shared by the benchmarks (each bench is its own crate and
//! includes this file as a module).

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
