//! Human-readable numbers for the timeline: durations and instants in the
//! unit that fits (ns, µs, ms, s), byte sizes (KiB, MiB, GiB: powers of
//! 1024) and bandwidths (GB/s with GB = 2^30 bytes, as
//! `Span::achieved_gbps`), plus the ruler's tick spacing and tick labels.

use trainscope_core::timeline::CounterUnit;

/// A time unit for labels: its symbol and nanoseconds per unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// `ns`, `µs`, `ms` or `s`.
    pub symbol: &'static str,
    /// Nanoseconds in one unit.
    pub ns: u64,
}

/// The four units, smallest first.
pub const UNITS: [Unit; 4] = [
    Unit {
        symbol: "ns",
        ns: 1,
    },
    Unit {
        symbol: "µs",
        ns: 1_000,
    },
    Unit {
        symbol: "ms",
        ns: 1_000_000,
    },
    Unit {
        symbol: "s",
        ns: 1_000_000_000,
    },
];

/// The largest unit not bigger than `ns` (ns for 0).
pub fn unit_for(ns: u64) -> Unit {
    UNITS
        .iter()
        .rev()
        .find(|u| ns >= u.ns)
        .copied()
        .unwrap_or(UNITS[0])
}

/// A duration with three significant digits in the fitting unit:
/// `950 ns`, `1.25 µs`, `534.98 ms` (two decimals above 100), `2.50 s`.
pub fn duration(ns: u64) -> String {
    let u = unit_for(ns);
    if u.ns == 1 {
        return format!("{ns} ns");
    }
    let v = ns as f64 / u.ns as f64;
    let decimals = if v >= 10.0 { 2 } else { 3 };
    format!("{v:.decimals$} {}", u.symbol)
}

/// Bytes in binary units: `512 B`, `1.50 KiB`, `64.00 MiB`, `1.25 GiB`.
pub fn bytes(n: u64) -> String {
    const K: f64 = 1024.0;
    let v = n as f64;
    if n < 1024 {
        format!("{n} B")
    } else if v < K * K {
        format!("{:.2} KiB", v / K)
    } else if v < K * K * K {
        format!("{:.2} MiB", v / (K * K))
    } else {
        format!("{:.2} GiB", v / (K * K * K))
    }
}

/// A counter lane's value in its unit, long (`3 micro-batches`, `1.5
/// micro-batches`, `1.25 GiB`) or short for the label column: the same
/// words (`mb` read as megabytes, issue 29).
pub fn counter_value(value: f64, unit: CounterUnit, short: bool) -> String {
    match unit {
        CounterUnit::Bytes => bytes(value.max(0.0).round() as u64),
        CounterUnit::MicroBatches => {
            let n = crate::views::trim_float(value);
            match (short, value == 1.0) {
                (true, true) => format!("{n} micro-batch"),
                (true, false) => format!("{n} micro-batches"),
                (false, true) => format!("{n} micro-batch"),
                (false, false) => format!("{n} micro-batches"),
            }
        }
    }
}

/// A bandwidth in GB/s (2^30 bytes per second): `12.3 GB/s`.
pub fn gbps(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} GB/s")
    } else if v >= 1.0 {
        format!("{v:.1} GB/s")
    } else {
        format!("{v:.3} GB/s")
    }
}

/// Ruler tick spacing: the smallest of 1, 2 or 5 x 10^k ns that is at
/// least `min_ns` (at least 1 ns; the caller gets `min_ns` from the
/// viewport, e.g. `vp.px_len_to_ns(TICK_MIN_PX)`).
pub fn tick_step_ns(min_ns: f64) -> u64 {
    let want = min_ns.max(1.0);
    let mut base: u64 = 1;
    loop {
        for m in [1u64, 2, 5] {
            let step = base.saturating_mul(m);
            if step as f64 >= want || step == u64::MAX {
                return step;
            }
        }
        if base > u64::MAX / 10 {
            return u64::MAX;
        }
        base *= 10;
    }
}

/// Decimals needed to write multiples of `resolution_ns` in `unit`
/// (0 when the resolution is a whole number of units, at most 9).
fn decimals_for(unit: Unit, resolution_ns: u64) -> usize {
    let mut decimals = 0usize;
    let mut scale = unit.ns;
    while scale > 1 && !resolution_ns.max(1).is_multiple_of(scale) && decimals < 9 {
        scale /= 10;
        decimals += 1;
    }
    decimals
}

/// Label of the tick at `t_ns` for a ruler whose ticks are `step_ns`
/// apart: the unit follows the tick's magnitude (ns, µs, ms, s; the step's
/// for the tick at 0) and the decimals are just enough to tell ticks apart:
/// `0 ms`, `250 µs`, `1.5 ms`, `1.5745 s`.
pub fn tick_label(t_ns: u64, step_ns: u64) -> String {
    in_unit_of(t_ns, t_ns.max(step_ns), step_ns)
}

/// `t_ns` in the unit of `magnitude_ns`, with the decimals that resolve
/// `resolution_ns`.
fn in_unit_of(t_ns: u64, magnitude_ns: u64, resolution_ns: u64) -> String {
    let u = unit_for(magnitude_ns);
    if u.ns == 1 {
        return format!("{t_ns} ns");
    }
    let decimals = decimals_for(u, resolution_ns);
    let v = t_ns as f64 / u.ns as f64;
    format!("{v:.decimals$} {}", u.symbol)
}

/// An instant written precisely enough to resolve `resolution_ns` (rounded
/// down to a power of ten), in the unit of its magnitude:
/// `instant(1_575_208_912, 100) == "1.5752089 s"`.
pub fn instant(t_ns: u64, resolution_ns: u64) -> String {
    let mut res = 1u64;
    while res.saturating_mul(10) <= resolution_ns {
        res *= 10;
    }
    in_unit_of(t_ns, t_ns.max(res), res)
}
