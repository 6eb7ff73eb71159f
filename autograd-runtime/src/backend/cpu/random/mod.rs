//! Test inputs of the CPU kernels' unit tests: deterministic standard-normal samples from a small
//! seeded generator (the library's random numbers, PyTorch's streams, are `crate::random`).

use ndarray::{ArrayD, IxDyn};

use super::{from_vec, lit};
use crate::Element;

/// xoshiro256** seeded through splitmix64 (both by Blackman and Vigna): small, fast and
/// reproducible across platforms, which is all `randn` needs.
#[derive(Debug)]
struct Xoshiro256 {
    /// Generator state; never all zero (splitmix64 outputs are a bijection of distinct inputs).
    s: [u64; 4],
}

impl Xoshiro256 {
    /// Expands `seed` into a full state with splitmix64.
    fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Self {
            s: [next(), next(), next(), next()],
        }
    }

    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `(0, 1]` with 53 random bits (never 0, so `ln` is finite).
    fn next_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Deterministic standard-normal samples (Box-Muller over xoshiro256**): the same `seed` always
/// gives the same values.
pub(crate) fn randn<T: Element>(shape: &[usize], seed: u64) -> ArrayD<T> {
    let n: usize = shape.iter().product();
    let mut rng = Xoshiro256::new(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let r = (-2.0 * rng.next_unit().ln()).sqrt();
        let theta = std::f64::consts::TAU * rng.next_unit();
        out.push(lit(r * theta.cos()));
        if out.len() < n {
            out.push(lit(r * theta.sin()));
        }
    }
    from_vec(IxDyn(shape), out)
}

#[cfg(test)]
mod tests;
