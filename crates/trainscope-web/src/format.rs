//! Human-readable numbers for the page: durations from integer nanoseconds,
//! byte sizes, ratios, signed differences with percentages (Compare),
//! counted nouns in the right number (`1 stage`, `2 stages`) and long name
//! lists shortened (`8 files: a, b, … h`). Pure functions, tested in the
//! browser suite.

/// A duration in ns as text with 4 significant digits and an SI unit:
/// `0 ns`, `950 ns`, `1.234 µs`, `534.975 ms` (3 decimals above 1 µs),
/// `12.35 s`.
pub fn duration_ns(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.3} µs", v / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.3} ms", v / 1e6)
    } else {
        format!("{:.3} s", v / 1e9)
    }
}

/// A signed duration difference (`+1.500 ms`, `−20 ns`, `0 ns`).
pub fn signed_duration_ns(delta: i128) -> String {
    let sign = if delta > 0 {
        "+"
    } else if delta < 0 {
        "−"
    } else {
        ""
    };
    let mag = u64::try_from(delta.unsigned_abs()).unwrap_or(u64::MAX);
    format!("{sign}{}", duration_ns(mag))
}

/// Bytes with binary units (`512 B`, `20.000 MiB`, `5.808 GiB`).
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in UNITS.iter().skip(1) {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.3} {unit}")
}

/// A signed byte difference.
pub fn signed_bytes(delta: i128) -> String {
    let sign = if delta > 0 {
        "+"
    } else if delta < 0 {
        "−"
    } else {
        ""
    };
    let mag = u64::try_from(delta.unsigned_abs()).unwrap_or(u64::MAX);
    format!("{sign}{}", bytes(mag))
}

/// An integer with thin-space thousands separators (`1 234 567`).
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    out
}

/// A fraction in [0, 1] as a percentage with one decimal (`87.5 %`).
pub fn percent(fraction: f64) -> String {
    if fraction.is_finite() {
        format!("{:.1} %", fraction * 100.0)
    } else {
        "—".into()
    }
}

/// Relative change from `a` to `b` in percent (`+12.5 %`), or `—` when
/// `a` is zero (undefined).
pub fn relative_change(a: f64, b: f64) -> String {
    if a == 0.0 || !a.is_finite() || !b.is_finite() {
        return "—".into();
    }
    let pct = (b - a) / a * 100.0;
    if pct.abs() < 0.05 {
        "0.0 %".into()
    } else if pct > 0.0 {
        format!("+{pct:.1} %")
    } else {
        format!("−{:.1} %", -pct)
    }
}

/// TFLOP/s with one decimal (`412.3 TFLOP/s`).
pub fn tflops(t: f64) -> String {
    if t.is_finite() {
        format!("{t:.1} TFLOP/s")
    } else {
        "—".into()
    }
}

/// Tokens per second, rounded, with thousands separators (`14\u{2009}366 tokens/s`).
pub fn tokens_per_second(t: f64) -> String {
    if t.is_finite() && t >= 0.0 {
        format!("{} tokens/s", count(t.round() as u64))
    } else {
        "—".into()
    }
}

/// A signed difference shown with `unit` (`+12.0 TFLOP/s`, `−1\u{2009}024 tokens/s`).
pub fn signed(delta: f64, unit: fn(f64) -> String) -> String {
    if delta > 0.0 {
        format!("+{}", unit(delta))
    } else if delta < 0.0 {
        format!("−{}", unit(-delta))
    } else {
        unit(0.0)
    }
}

/// `n` and the noun in the right number: `1 stage`, `4 stages`, `0 files`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Names for a header: up to three as they are, joined by commas; more as
/// the count, the first two and the last: `8 files: a, b, …, h`.
pub fn name_list(names: &[String]) -> String {
    match names {
        [first, second, .., last] if names.len() > 3 => {
            format!("{} files: {first}, {second}, …, {last}", names.len())
        }
        _ => names.join(", "),
    }
}
