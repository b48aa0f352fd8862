//! The one seeded random-number generator of the core: SplitMix64 (Steele,
//! Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA
//! 2014), written here: no clocks, no threads, no crates, so a seed gives
//! the same draws on every build, natively and in the browser. Used by the
//! goodput Monte-Carlo ([`crate::goodput`]) and the engine's jitter
//! ([`crate::engine::faults`]).

/// SplitMix64: a 64-bit state advanced by a constant and mixed.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// A generator for one item of a keyed stream: `seed` mixed with `key`,
    /// so draws do not depend on the order items are visited in.
    pub fn keyed(seed: u64, key: u64) -> SplitMix64 {
        let mut g = SplitMix64::new(seed ^ key.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let s = g.next_u64();
        SplitMix64::new(s)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: the top 53 bits, never 0 (so its log is finite).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Exponential with mean 1.
    pub fn exponential(&mut self) -> f64 {
        -self.uniform().ln()
    }

    /// Standard normal (Box-Muller, the cosine branch).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_seeded_and_keyed() {
        let a: Vec<u64> = (0..4).map(|_| SplitMix64::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            SplitMix64::keyed(7, 1).next_u64(),
            SplitMix64::keyed(7, 2).next_u64()
        );
        assert_ne!(
            SplitMix64::keyed(7, 1).next_u64(),
            SplitMix64::keyed(8, 1).next_u64()
        );
    }

    #[test]
    fn normal_has_mean_zero_and_unit_variance() {
        let mut g = SplitMix64::new(42);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| g.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((var - 1.0).abs() < 0.02, "{var}");
    }
}
