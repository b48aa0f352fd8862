//! The accepted range of every user setting, checked once here for both
//! simulation modes and the web page: the event mode's
//! [`crate::engine::NetworkConfig::validate`] and
//! [`crate::engine::SimConfig::validate`], the SimAI-compatible mode's
//! [`crate::analytical::ClusterConfig::validate`] and
//! [`crate::analytical::OverlapRatios::validate`], the run options'
//! [`crate::run::RunOptions::validate`] and the page's per-field
//! validation all call these functions, so a value refused in one place
//! is refused everywhere, with the same words.
//!
//! Each check returns `Err(reason)`, a sentence fragment that starts with the
//! value (`"0 is not between 1 and 4096"`); callers put the setting's name in
//! front. Zero or negative counts, NaN, infinities and absurd sizes are
//! refused; the upper bounds are far above any real cluster and only keep a
//! run's size and arithmetic bounded.

/// Most GPUs or NICs per node.
pub const MAX_PER_NODE: u32 = 4096;
/// Most GPUs in a world (the event engine's limit on simulated ranks).
pub const MAX_WORLD: u32 = 1 << 20;
/// Largest bandwidth, GB/s.
pub const MAX_BANDWIDTH_GBPS: f64 = 1e9;
/// Largest per-step latency, microseconds (one second).
pub const MAX_LATENCY_US: f64 = 1e6;
/// Largest fabric oversubscription factor.
pub const MAX_OVERSUBSCRIPTION: f64 = 1e6;
/// Most micro-batches per iteration.
pub const MAX_MICRO_BATCHES: u32 = 1 << 20;
/// Most tasks a simulation may create.
pub const MAX_TASKS: u64 = 40_000_000;
/// Most virtual stages per rank (a span stores its chunk in a byte).
pub const MAX_VIRTUAL_STAGES: u32 = 255;
/// Largest backward / forward factor.
pub const MAX_BACKWARD_FACTOR: f64 = 1000.0;
/// Largest stage-to-stage send, bytes (1 TiB).
pub const MAX_ACTIVATION_BYTES: u64 = 1 << 40;

/// A number as messages show it: shortest round-trip text, in scientific
/// notation when that is much shorter (`1e300`, not 301 digits).
/// An on/off setting as users type it: on/off, true/false, yes/no, 1/0
/// (case and spaces ignored); `None` for anything else. The CLI's and the
/// page's switches all read through it.
pub fn on_off(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

pub fn number(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-6..1e9).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A count in `1..=max`.
pub fn count(value: u32, max: u32) -> Result<(), String> {
    if (1..=max).contains(&value) {
        Ok(())
    } else {
        Err(format!("{value} is not between 1 and {max}"))
    }
}

/// A bandwidth in GB/s: finite, above 0, at most [`MAX_BANDWIDTH_GBPS`].
pub fn bandwidth_gbps(value: f64) -> Result<(), String> {
    if value.is_finite() && value > 0.0 && value <= MAX_BANDWIDTH_GBPS {
        Ok(())
    } else {
        Err(format!(
            "{} is not a positive bandwidth in GB/s of at most {}",
            number(value),
            number(MAX_BANDWIDTH_GBPS)
        ))
    }
}

/// A latency in microseconds, in `0..=`[`MAX_LATENCY_US`].
pub fn latency_us(value: f64) -> Result<(), String> {
    if value.is_finite() && (0.0..=MAX_LATENCY_US).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{} is not between 0 and {} microseconds",
            number(value),
            number(MAX_LATENCY_US)
        ))
    }
}

/// A fabric oversubscription in `1..=`[`MAX_OVERSUBSCRIPTION`] (1 = full
/// bisection bandwidth).
pub fn oversubscription(value: f64) -> Result<(), String> {
    if value.is_finite() && (1.0..=MAX_OVERSUBSCRIPTION).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{} is not a factor between 1 (full bisection bandwidth) and {}",
            number(value),
            number(MAX_OVERSUBSCRIPTION)
        ))
    }
}

/// A backward / forward factor in `0..=`[`MAX_BACKWARD_FACTOR`] (0: no
/// backward, e.g. an inference estimate).
pub fn backward_factor(value: f64) -> Result<(), String> {
    if value.is_finite() && (0.0..=MAX_BACKWARD_FACTOR).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{} is not between 0 and {}",
            number(value),
            number(MAX_BACKWARD_FACTOR)
        ))
    }
}

/// Largest slowdown of one rank, percent (a rank 100 times slower).
pub const MAX_SLOWDOWN_PERCENT: f64 = 10_000.0;

/// A what-if slowdown of one rank's compute, percent, in
/// `0..=`[`MAX_SLOWDOWN_PERCENT`].
pub fn slowdown_percent(value: f64) -> Result<(), String> {
    if value.is_finite() && (0.0..=MAX_SLOWDOWN_PERCENT).contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{} is not between 0 and {} (percent)",
            number(value),
            number(MAX_SLOWDOWN_PERCENT)
        ))
    }
}

/// A DP, TP or EP overlap ratio, in `[0, 1]`.
pub fn overlap_ratio(value: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(format!("{} is not in [0, 1]", number(value)))
    }
}

/// The PP overlap ratio, in `(0, 1]`: SimAI divides the pipeline-send time
/// by it.
pub fn pp_overlap_ratio(value: f64) -> Result<(), String> {
    if value > 0.0 && value <= 1.0 {
        Ok(())
    } else {
        Err(format!(
            "{} is not in (0, 1] (SimAI divides the PP send time by it)",
            number(value)
        ))
    }
}

/// Bytes of one stage-to-stage send, at most [`MAX_ACTIVATION_BYTES`] (0:
/// pipeline transfers are not simulated).
pub fn activation_bytes(value: u64) -> Result<(), String> {
    if value <= MAX_ACTIVATION_BYTES {
        Ok(())
    } else {
        Err(format!(
            "{value} bytes is more than {MAX_ACTIVATION_BYTES} (1 TiB) per send"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_refuses_zero_negative_nan_infinite_and_absurd_values() {
        assert_eq!(count(0, 8), Err("0 is not between 1 and 8".into()));
        assert_eq!(count(9, 8), Err("9 is not between 1 and 8".into()));
        assert_eq!(count(8, 8), Ok(()));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            assert!(bandwidth_gbps(bad).is_err(), "{bad}");
            assert!(oversubscription(bad).is_err(), "{bad}");
        }
        assert_eq!(
            bandwidth_gbps(1e300),
            Err("1e300 is not a positive bandwidth in GB/s of at most 1e9".into())
        );
        assert_eq!(bandwidth_gbps(370.8), Ok(()));
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e7] {
            assert!(latency_us(bad).is_err(), "{bad}");
            assert!(backward_factor(bad).is_err(), "{bad}");
        }
        assert_eq!(latency_us(0.0), Ok(()));
        assert_eq!(backward_factor(0.0), Ok(()));
        assert_eq!(oversubscription(1.0), Ok(()));
        assert!(oversubscription(0.5).is_err());
        for bad in [-0.1, 1.1, f64::NAN, f64::INFINITY] {
            assert!(overlap_ratio(bad).is_err(), "{bad}");
            assert!(pp_overlap_ratio(bad).is_err(), "{bad}");
        }
        assert_eq!(overlap_ratio(0.0), Ok(()));
        assert!(pp_overlap_ratio(0.0).is_err());
        assert_eq!(pp_overlap_ratio(1.0), Ok(()));
        assert_eq!(activation_bytes(0), Ok(()));
        assert!(activation_bytes(u64::MAX).is_err());
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(370.8), "370.8");
        assert_eq!(number(-1.0), "-1");
        assert_eq!(number(1e300), "1e300");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(0.0), "0");
    }
}
