//! `f32` lane functions of the vector math. `exp`, `log` and `tanh` run in `f32` lanes; `sigmoid`,
//! `sin`, `cos` and `powf` widen to `f64` lanes (helpers in `lanes64`) and round once at the end,
//! which keeps them within about 0.5 ulp at a modest cost.
//!
//! Same rules as `lanes64`: branch-free, `#[inline(always)]`, wrapping integer arithmetic.

use super::lanes64::{self, PowExp};

/// `1.5 * 2^23`: adding it to a value of magnitude below `2^22` rounds it to an integer held in
/// the low significand bits.
const SHIFT: f32 = 12_582_912.0;
const INV_LN2: f32 = std::f32::consts::LOG2_E;
/// `ln 2` rounded to `f32`, and the rest.
const LN2_HI: f32 = std::f32::consts::LN_2;
const LN2_LO: f32 = -1.904_654_2e-9;
/// `ln 2` rounded to 16 significant bits (`k * LN2_HI16` is exact for `|k| < 2^8`), and the rest.
const LN2_HI16: f32 = 0.693_145_75;
const LN2_LO16: f32 = 1.428_606_8e-6;
/// Bits of `sqrt(1/2)`: mantissas are split off in `[sqrt(1/2), sqrt(2))`.
const SQRT_HALF_BITS: u32 = 0x3f35_04f3;
/// `2^25`, to lift subnormal inputs of `log` into the normal range.
const TWO_P25: f32 = 33_554_432.0;

/// `exp` clamps its argument to this range (NaN passes): `e^-104 < 2^-150` rounds to +0,
/// `e^89 > f32::MAX` to +inf.
const EXP_MIN: f32 = -104.0;
const EXP_MAX: f32 = 89.0;

/// Largest `|x|` that `sin`/`cos` reduce in the lanes (the `f64` reduction's bound); larger
/// arguments and infinities take std's scalar functions (see the kernel).
pub(super) const TRIG_MAX: f32 = 1_073_741_824.0;

/// `tanh` takes its polynomial below this `|x|`, the quotient form above.
const TANH_SMALL: f32 = 0.25;
/// `tanh(a)` rounds to 1 from about 9.01; larger arguments are clamped to this.
const TANH_CLAMP: f32 = 10.0;

/// `tanh a = a + a z P(z)`, `z = a^2 <= 1/16`: the first six Taylor coefficients of
/// `(tanh a - a) / a^3` in `z` (exact rationals rounded to `f32`); the omitted tail is below
/// `2^-31` of `P` there.
const TANH_P: [f32; 6] = [
    -0.333_333_34,
    0.133_333_34,
    -0.053_968_254,
    0.021_869_488,
    -0.008_863_236,
    0.003_592_128,
];

/// `e^r = 1 + r + r^2 Q(r)` on `|r| <= ln2/2 + 1e-5`: minimax `Q` of degree 4 (`f32`
/// coefficients) for the relative error of `e^r`, `2^-28.2`.
const EXP_Q: [f32; 5] = [
    0.499_999_94,
    0.166_665_23,
    0.041_668_292,
    0.008_368_532,
    0.001_381_830_3,
];

/// `log(1+f) = 2 atanh(s) = 2s + s z P(z)`, `s = f/(2+f)`, `z = s^2 <= 0.02944`: minimax `P` of
/// degree 2 (`f32` coefficients) for the absolute error of `z P(z)`; relative error of the log
/// `2^-30.2`.
const LOG_P: [f32; 3] = [0.666_667_76, 0.399_775_83, 0.298_707_96];

#[inline(always)]
fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// `c[0] + c[1] x + ... + c[N-1] x^(N-1)` by Horner's rule with fused steps.
#[inline(always)]
pub(super) fn poly<const N: usize>(x: f32, c: &[f32; N]) -> f32 {
    let mut acc = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        acc = fma(acc, x, c[i]);
    }
    acc
}

/// `2^k` for `k` in `[-126, 127]`.
#[inline(always)]
fn pow2i(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// `(n, ph, pl)` with `e^x = 2^n (ph + pl)` for `x` in `[EXP_MIN, EXP_MAX]`: [`exp`] before its
/// final rounding and scaling (`ph` in about `[0.7, 1.42]`, `|pl|` within an ulp of it).
#[inline(always)]
fn exp_parts(x: f32) -> (i32, f32, f32) {
    let t = fma(x, INV_LN2, SHIFT);
    let nf = t - SHIFT;
    let n = (t.to_bits() as i32).wrapping_sub(SHIFT.to_bits() as i32);
    let r1 = fma(-nf, LN2_HI, x);
    let r = fma(-nf, LN2_LO, r1);
    let rl = fma(-nf, LN2_LO, r1 - r);
    let c = fma(r * r, poly(r, &EXP_Q), rl);
    let qh = r + c;
    let ql = (r - qh) + c;
    let ph = 1.0 + qh;
    let pl = ((1.0 - ph) + qh) + ql;
    (n, ph, pl)
}

/// `e^x`.
///
/// Method: `n = round(x / ln2)`; `r = x - n ln2` with `x - n LN2_HI` exact (multiples of `2^-25`
/// below 1/2) and the rounding error of subtracting `n LN2_LO` recovered into `rl`;
/// `e^(r+rl) = 1 + r + (r^2 Q(r) + rl)` ([`EXP_Q`]) summed as a double-`f32` and rounded once;
/// scaling by `2^n` in two steps (overflow to inf). Error below 0.69 ulp for normal results (final
/// rounding; the roundings of `r^2 Q(r)`, up to 0.15 ulp; the `2^-28` polynomial); subnormal
/// results are rounded twice (to 24 bits, then by the scaling): below 0.78 ulp. Both measured
/// exhaustively.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    let x = if x < EXP_MIN { EXP_MIN } else { x };
    let x = if x > EXP_MAX { EXP_MAX } else { x };
    let (n, ph, pl) = exp_parts(x);
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    (ph + pl) * pow2i(n1) * pow2i(n2)
}

/// `ln x`.
///
/// Method: subnormals scaled by `2^25`; `x = 2^k m` with `m` in `[sqrt(1/2), sqrt(2))`,
/// `f = m - 1` (exact), `s = f/(2+f)`, `ln m = f - (hfsq - s (hfsq + z P(z)))` ([`LOG_P`]),
/// `hfsq = f^2/2`, `z = s^2`; then `k LN2_HI16` (exact) plus the rest as a double-`f32`, rounded
/// once. Error below 0.8 ulp (exhaustively measured), mostly the rounding of `f - (...)`.
#[inline(always)]
pub(super) fn ln(x: f32) -> f32 {
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * TWO_P25 } else { x };
    let bits = xs.to_bits();
    // k + 128, computed without a signed shift of a possibly negative offset.
    let kb = bits.wrapping_sub(SQRT_HALF_BITS).wrapping_add(128 << 23) >> 23;
    let m = f32::from_bits(bits.wrapping_sub(kb.wrapping_sub(128) << 23));
    let kf = kb as i32 as f32 - if sub { 153.0 } else { 128.0 };
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let hfsq = 0.5 * f * f;
    let u = fma(-s, fma(z, poly(z, &LOG_P), hfsq), hfsq);
    let rh = f - u;
    let rl = (f - rh) - u;
    let kh = kf * LN2_HI16;
    let hi = kh + rh;
    let lo = ((kh - hi) + rh) + fma(kf, LN2_LO16, rl);
    let y = hi + lo;
    let y = if x == f32::INFINITY { x } else { y };
    let y = if x == 0.0 { f32::NEG_INFINITY } else { y };
    if x < 0.0 || x.is_nan() { f32::NAN } else { y }
}

/// `tanh x`, in `f32` lanes: `a = |x|` (clamped to 10). Below [`TANH_SMALL`], `a + a z P(z)`
/// ([`TANH_P`]; the correction is under 2% of the result, so its roundings cost at most 0.1 ulp).
/// Above, [`lanes64::one_minus_two_over_succ`] of `E = e^(2a)` from [`exp_parts`], kept as a
/// double-`f32` (`2^-28` relative), rounded once: the 2.4x
/// amplification of `E`'s error at the cut leaves about `2^-26.9`. Sign restored; NaN passes.
/// Every step is a correctly rounded `f32` operation, so the lanes are twice as many per register
/// as the `f64` form this replaced, with the same bits on any instruction set.
#[inline(always)]
pub(super) fn tanh(x: f32) -> f32 {
    let a = x.abs();
    let a = if a > TANH_CLAMP { TANH_CLAMP } else { a };
    let z = a * a;
    let small = fma(a * z, poly(z, &TANH_P), a);

    let (n, ph, pl) = exp_parts(2.0 * a);
    let sc = pow2i(n);
    let large = lanes64::one_minus_two_over_succ(ph * sc, pl * sc);

    let y = if a < TANH_SMALL { small } else { large };
    y.copysign(x)
}

/// `1 / (1 + e^-x)`, in `f64` with [`lanes64::exp_lo`]: no cancellation, `2^-44` relative before
/// the final rounding (subnormal `f32` results included).
#[inline(always)]
pub(super) fn sigmoid(x: f32) -> f32 {
    (1.0 / (1.0 + lanes64::exp_lo(-f64::from(x)))) as f32
}

/// `sin x` for `|x| <= TRIG_MAX`, in `f64` ([`lanes64::sincos_lo`]), quadrant select, `±0` kept.
#[inline(always)]
pub(super) fn sin(x: f32) -> f32 {
    let (q, s, c) = lanes64::sincos_lo(f64::from(x));
    let v = lanes64::blend(q & 1 == 0, s, c);
    // Negate for q in {2, 3} by flipping the sign bit.
    let v = f64::from_bits(v.to_bits() ^ ((q as u64 & 2) << 62));
    if x == 0.0 { x } else { v as f32 }
}

/// `cos x` for `|x| <= TRIG_MAX`, in `f64` ([`lanes64::sincos_lo`]), quadrant select.
#[inline(always)]
pub(super) fn cos(x: f32) -> f32 {
    let (q, s, c) = lanes64::sincos_lo(f64::from(x));
    let v = lanes64::blend(q & 1 == 0, c, s);
    let v = f64::from_bits(v.to_bits() ^ (((q + 1) as u64 & 2) << 62));
    v as f32
}

/// `sin x` for `|x| > TRIG_MAX` and infinities: std's `f64` `sin` of the widened value, rounded
/// (correctly rounded but for near-midpoints; `f32::sin` is less accurate).
pub(super) fn sin_big(x: f32) -> f32 {
    f64::from(x).sin() as f32
}

/// `cos x` for `|x| > TRIG_MAX` and infinities, as [`sin_big`].
pub(super) fn cos_big(x: f32) -> f32 {
    f64::from(x).cos() as f32
}

/// `x^e` for a finite non-zero exponent, in `f64`: [`lanes64::pow_lo`] and the special cases of
/// [`lanes64::pow_fix`], rounded once to `f32` (overflow and subnormal results included).
#[inline(always)]
pub(super) fn pow(x: f32, pe: PowExp) -> f32 {
    let xd = f64::from(x);
    lanes64::pow_fix(xd, lanes64::pow_lo(xd.abs(), pe.e()), pe) as f32
}
