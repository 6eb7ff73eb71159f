//! A small seeded generator for shuffling: SplitMix64, enough for permutations of data indices.
//!
//! The library's `Tensor::randn` covers the weights; this covers the host-side index shuffles, so
//! the example needs no `rand` dependency.

/// SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit state advanced by a Weyl sequence and
/// mixed by two multiply-xorshift rounds. Every seed gives a full-period, well-mixed stream.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The whole state: `SplitMix64::new(g.state())` continues `g`'s stream.
    pub(crate) fn state(&self) -> u64 {
        self.state
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..bound` (`bound > 0`), by Lemire's multiply-shift with rejection,
    /// so no value is favoured.
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        debug_assert!(bound > 0, "invariant: `below` needs a non-empty range");
        let bound = bound as u64;
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let product = u128::from(self.next_u64()) * u128::from(bound);
            if (product as u64) >= threshold {
                return (product >> 64) as usize;
            }
        }
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }

    /// `0..n` in a random order.
    pub(crate) fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        self.shuffle(&mut order);
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_splitmix64_stream() {
        // First outputs for seed 1234567 of the reference C implementation (Vigna's splitmix64.c).
        let mut rng = SplitMix64::new(1234567);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            first,
            [
                6457827717110365317,
                3203168211198807973,
                9817491932198370423
            ]
        );
    }

    #[test]
    fn permutations_are_seeded_and_complete() {
        let a = SplitMix64::new(7).permutation(100);
        let b = SplitMix64::new(7).permutation(100);
        let c = SplitMix64::new(8).permutation(100);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(a, sorted, "100 items almost surely move");
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut rng = SplitMix64::new(3);
        let mut counts = [0usize; 6];
        for _ in 0..60_000 {
            counts[rng.below(6)] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }
}
