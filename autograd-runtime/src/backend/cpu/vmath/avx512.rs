//! `f32` `tanh` written for AVX-512: piecewise polynomials whose coefficients come from in-register
//! table look-ups, no division and no exponential.
//!
//! The portable lane code ([`super::lanes32::tanh`]) needs an `e^(2|x|)` in double-`f32` and a
//! compensated quotient to stay accurate, about 50 vector instructions and a 512-bit division per
//! 16 elements: twice PyTorch's time (MKL) on an AVX-512 machine. AVX-512 can instead pick one of
//! 32 table entries per lane in one instruction (`vpermt2ps`, a two-register permute), so each lane
//! evaluates the polynomial of its own interval:
//!
//! * `a = |x|`, clamped to [`CLAMP`] (`tanh` rounds to 1 in `f32` from 9.01 on; a NaN clamps too
//!   and is put back at the end); interval `k = floor(a / W)`, `W = 5/16`, 32 intervals over
//!   `[0, 10)`;
//! * `k >= 1`: `t = a - c_k` with the centre `c_k = (k + 1/2) W` (exact, by Sterbenz's lemma), and
//!   `tanh(a) = C0_HI[k] + (t P_k(t) + C0_LO[k])`, `tanh(c_k)` kept as an `f32` pair so that the one
//!   rounding that matters is the last addition;
//! * `k = 0`: `z = a^2` and `tanh(a) = a + (a z) Q(z)`, accurate relative to `a` down to subnormal
//!   inputs (there `z` underflows and the result is `a`);
//! * the sign of `x` is put back (`tanh(-0) = -0`), NaN passes through.
//!
//! `P_k` and `Q` have degree 5 (six coefficients, [`tanh_f32_table.rs`](tanh_f32_table.rs), fitted
//! by `fit_tanh_f32.py` in this directory); their approximation error is below 0.07 ulp, the
//! evaluation adds the rest. Measured over all `2^32` inputs (`AUTOGRAD_VMATH_SWEEP=full`): see
//! the module documentation of [`super`].
//!
//! This kernel gives different bits from the portable one (both are within the stated bound);
//! the choice is made once per process from the CPU, so results on one machine do not depend on
//! the thread count or on where an element sits in a slice.

use std::arch::x86_64::{
    __m512, __m512i, _mm512_abs_ps, _mm512_add_ps, _mm512_and_si512, _mm512_castps_si512,
    _mm512_castsi512_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_mov_ps, _mm512_mask_mul_ps,
    _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_min_ps, _mm512_mul_ps, _mm512_or_si512,
    _mm512_permutex2var_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_storeu_ps, _mm512_sub_ps,
    _mm512_testn_epi32_mask,
};

use pulp::x86::V4;

use super::Io;

mod table {
    include!("tanh_f32_table.rs");
}

/// Width of one interval.
const W: f32 = 5.0 / 16.0;
/// `|x|` is clamped here: above 9.01 every `f32` `tanh` is 1, and the last interval's polynomial
/// gives 1 on `[9.01, CLAMP]`; `CLAMP / W` rounds to 31, the last interval.
const CLAMP: f32 = 9.8;
/// `1.5 * 2^23`: added to a value in `[0, 2^22)`, leaves its nearest integer in the low mantissa
/// bits.
const SHIFT: f32 = 12_582_912.0;
/// Lanes per register.
const LANES: usize = 16;

/// One 32-entry table in two registers.
#[derive(Clone, Copy)]
struct Table32 {
    low: __m512,
    high: __m512,
}

impl Table32 {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new(bits: &[u32; 32]) -> Table32 {
        let p = bits.as_ptr().cast::<f32>();
        // SAFETY: `p` points at 32 `u32`s (same size and alignment as `f32`, every bit pattern a
        // valid `f32`); each load reads 16 of them, at offsets 0 and 16.
        unsafe {
            Table32 {
                low: _mm512_loadu_ps(p),
                high: _mm512_loadu_ps(p.add(LANES)),
            }
        }
    }

    /// Entry `k[i]` in lane `i` (`k[i]` in `0..32`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn get(self, k: __m512i) -> __m512 {
        _mm512_permutex2var_ps(self.low, k, self.high)
    }
}

/// The coefficient tables, loaded once per call.
struct Tanh {
    c0_hi: Table32,
    c0_lo: Table32,
    p: [Table32; 6],
}

impl Tanh {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Tanh {
        Tanh {
            c0_hi: Table32::new(&table::C0_HI),
            c0_lo: Table32::new(&table::C0_LO),
            p: table::P.each_ref().map(|row| Table32::new(row)),
        }
    }

    /// `tanh` of 16 lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn lanes(&self, x: __m512) -> __m512 {
        // `min` returns its second operand when either is NaN, so a NaN stays NaN through
        // everything below (whatever interval its bits pick).
        let a = _mm512_min_ps(_mm512_set1_ps(CLAMP), _mm512_abs_ps(x));
        // k = round(a / W) lands in the low mantissa bits of `a / W + 1.5 * 2^23` (the permutes
        // read only the low 5 bits of each lane). `a * (1/W)` rounds, so an `a` within an ulp or
        // so of the middle between two centres may pick the neighbouring interval: each
        // polynomial is fitted a margin beyond its half-width.
        let shifted = _mm512_fmadd_ps(a, _mm512_set1_ps(1.0 / W), _mm512_set1_ps(SHIFT));
        let k = _mm512_castps_si512(shifted);
        // c_k = (shifted - SHIFT) W, formed exactly by one fused operation; t = a - c_k is exact
        // too (a is within a factor of two of c_k for k >= 1, and t = a for k = 0).
        let centre = _mm512_fmadd_ps(shifted, _mm512_set1_ps(W), _mm512_set1_ps(-SHIFT * W));
        let t = _mm512_sub_ps(a, centre);
        let first = _mm512_testn_epi32_mask(k, _mm512_set1_epi32(31));
        // P_k(t) = p_0 + t R(t); R by Horner.
        let mut r = self.p[5].get(k);
        for c in self.p[1..5].iter().rev() {
            r = _mm512_fmadd_ps(r, t, c.get(k));
        }
        // k >= 1: tanh(c_k) + (t p_0 + (t^2 R(t) + lo)); k = 0: a + (a^2 p_0 + (a^3 R(a) + 0)).
        // The term that can be as large as the result, t p_0, is formed from an exact coefficient
        // inside one fused operation, so R's rounding errors count only at t^2's scale.
        let m = _mm512_mask_mul_ps(t, first, a, a);
        let tail = _mm512_fmadd_ps(_mm512_mul_ps(m, t), r, self.c0_lo.get(k));
        let base = _mm512_mask_mov_ps(self.c0_hi.get(k), first, a);
        let y = _mm512_add_ps(base, _mm512_fmadd_ps(m, self.p[0].get(k), tail));
        // The sign of x back on (tanh(-0) = -0).
        let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
        _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign))
    }
}

/// `tanh` over `io`; `_v4` proves the CPU has AVX-512.
pub(super) fn tanh(_v4: V4, io: Io<'_, f32>) {
    // SAFETY: a `V4` value exists only once pulp has detected AVX-512 F/BW/CD/DQ/VL on this CPU,
    // so the `avx512f` the function is compiled for is present.
    unsafe { tanh_avx512(io) }
}

#[target_feature(enable = "avx512f")]
fn tanh_avx512(io: Io<'_, f32>) {
    let kernel = Tanh::new();
    // Both forms as a source and a destination of `len` elements: distinct buffers, or the same
    // one (each block is loaded whole before it is stored, so in place is the same loop).
    let (src, dst, len) = match io {
        Io::Into { src, dst } => (src.as_ptr(), dst.as_mut_ptr().cast::<f32>(), src.len()),
        Io::InPlace(buf) => {
            let p = buf.as_mut_ptr();
            (p.cast_const(), p, buf.len())
        }
    };
    let body = len - len % LANES;
    for i in (0..body).step_by(LANES) {
        // SAFETY: `i + 16 <= len`: 16 readable `f32`s at `src + i` and 16 writable ones at
        // `dst + i` (`MaybeUninit<f32>` has `f32`'s layout), from the slices of `io`, borrowed
        // for this call; unaligned loads and stores.
        unsafe {
            let y = kernel.lanes(_mm512_loadu_ps(src.add(i)));
            _mm512_storeu_ps(dst.add(i), y);
        }
    }
    // The tail through the same code: masked lanes are neither read nor written.
    let mask = tail_mask(len - body);
    // SAFETY: masked loads and stores touch only the lanes under `mask`, the `len - body`
    // elements from `body` on, inside both slices, and do not fault on the others.
    unsafe {
        let y = kernel.lanes(_mm512_maskz_loadu_ps(mask, src.add(body)));
        _mm512_mask_storeu_ps(dst.add(body), mask, y);
    }
}

/// The mask of the first `n < 16` lanes.
fn tail_mask(n: usize) -> u16 {
    debug_assert!(n < LANES);
    (1u16 << n) - 1
}
