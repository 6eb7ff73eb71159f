//! `f64` lane functions of the vector math: `exp`, `log`, `tanh`, `sigmoid`, `sin`, `cos`, `powf`,
//! and the reduced-precision `f64` helpers the `f32` functions are computed with.
//!
//! Every function here is branch-free on one value and `#[inline(always)]`, so that a loop over a
//! block of lanes vectorises (see the parent module). Integer bit tricks use wrapping arithmetic:
//! lanes holding NaN compute garbage exponents that must not panic, and are then masked.
//!
//! Notation: `u = 2^-53` is the unit roundoff; "dd" is a double-double (unevaluated sum `hi + lo`).

/// `1.5 * 2^52`: adding it to a value of magnitude below `2^51` rounds the value to an integer
/// (ties to even) that then sits in the low bits of the sum's significand.
const SHIFT: f64 = 6_755_399_441_055_744.0;
const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// `ln 2` rounded to `f64`, and the rest.
const LN2_HI: f64 = std::f64::consts::LN_2;
const LN2_LO: f64 = 2.319_046_813_846_299_6e-17;
/// `ln 2` rounded to 42 significant bits (so `k * LN2_HI42` is exact for `|k| < 2^11`), and the
/// rest.
const LN2_HI42: f64 = 0.693_147_180_559_890_3;
const LN2_LO42: f64 = 5.497_923_018_708_371e-14;
/// `2/3` as a double-double.
const TWO_THIRDS_HI: f64 = 0.666_666_666_666_666_6;
const TWO_THIRDS_LO: f64 = 3.700_743_415_417_188e-17;
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
/// `pi/2 = PIO2_1 + PIO2_2 + PIO2_3` to within `2^-163`.
const PIO2_1: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_2: f64 = 6.123_233_995_736_766e-17;
const PIO2_3: f64 = -1.497_384_904_859_169_8e-33;
/// Bits of `sqrt(1/2)`: mantissas are split off in `[sqrt(1/2), sqrt(2))`.
const SQRT_HALF_BITS: u64 = 0x3fe6_a09e_667f_3bcd;
/// `2^54`, to lift subnormal inputs of `log` into the normal range.
const TWO_P54: f64 = 18_014_398_509_481_984.0;

/// `exp` clamps its argument to this range (NaN passes): below, the result rounds to +0; above,
/// to +inf; inside, the exponent arithmetic cannot overflow.
const EXP_MIN: f64 = -746.0;
const EXP_MAX: f64 = 710.0;

/// Largest `|x|` that `sin`/`cos` reduce in the lanes: `n = round(x * 2/pi) < 2^30`, so
/// `x - n * PIO2_1` is exact and the rounding of `2/pi` moves `|r|` past `pi/4` by less than
/// `1e-7`. Larger arguments (and infinities) take std's scalar functions (see the kernel).
pub(super) const TRIG_MAX: f64 = 1_073_741_824.0;

/// `tanh(a)` uses the odd polynomial below this `a`, `1 - 2/(e^2a + 1)` from it.
const TANH_SMALL: f64 = 0.55;
/// `tanh(a)` rounds to 1 from about 19.06; larger arguments are clamped to this.
const TANH_CLAMP: f64 = 20.0;

/// `e^r = 1 + r + r^2 Q(r)` on `|r| <= ln2/2 + 1e-5`: minimax `Q` of degree 10 for the relative
/// error of `e^r`, `2^-63.8`.
const EXP_Q: [f64; 11] = [
    0.5,
    0.166_666_666_666_666_8,
    0.041_666_666_666_666_415,
    0.008_333_333_333_319_277,
    0.001_388_888_888_903_288,
    0.000_198_412_698_918_081_75,
    2.480_158_702_392_135_3e-5,
    2.755_723_876_699_246e-6,
    2.755_752_904_890_992_7e-7,
    2.511_084_469_792_205e-8,
    2.083_726_067_052_881e-9,
];

/// Same form as [`EXP_Q`] with degree 7, for the `f32` functions: relative error `2^-45.8`.
const EXP_Q_LO: [f64; 8] = [
    0.499_999_999_996_644_9,
    0.166_666_666_672_648_5,
    0.041_666_666_962_121_485,
    0.008_333_333_095_198_276,
    0.001_388_881_116_599_474_9,
    0.000_198_415_390_062_479_78,
    2.488_079_895_027_022_3e-5,
    2.749_307_683_985_554e-6,
];

/// `log(1+f) = 2 atanh(s) = 2s + s z P(z)` with `s = f/(2+f)`, `z = s^2 <= 0.02944`: minimax `P`
/// of degree 6 for the absolute error of `z P(z)` (relative error of the log `2^-59.5`).
const LOG_P: [f64; 7] = [
    0.666_666_666_666_673_4,
    0.399_999_999_994_166_4,
    0.285_714_287_420_281_65,
    0.222_221_986_050_590_99,
    0.181_835_628_507_722_06,
    0.153_140_848_654_806,
    0.147_956_329_658_220_9,
];

/// Same form as [`LOG_P`] with degree 5, for `f32` `powf`: relative error of the log `2^-52.2`.
const LOG_P_LO: [f64; 6] = [
    0.666_666_666_665_872,
    0.400_000_000_522_763_1,
    0.285_714_171_293_455_7,
    0.222_233_717_161_468_36,
    0.181_236_414_736_218_15,
    0.168_198_353_881_772_07,
];

/// `2 atanh(s) = s (2 + z (2/3 + z T(z)))`: minimax `T` of degree 6 on `z <= 0.02944` for the
/// double-double log of `powf`; relative error of the log `2^-66.3`.
const LOG_T: [f64; 7] = [
    0.400_000_000_000_022_56,
    0.285_714_285_700_996_55,
    0.222_222_225_199_005_6,
    0.181_817_843_696_894,
    0.153_867_571_883_042_54,
    0.132_568_215_800_843_13,
    0.131_962_889_844_861_99,
];

/// `sin r = r + r^3 P(r^2)` on `|r| <= pi/4 + 1e-6`: minimax `P` of degree 6 for the relative
/// error of `sin`, `2^-63.2`.
const SIN_P: [f64; 7] = [
    -0.166_666_666_666_666_66,
    0.008_333_333_333_333_04,
    -0.000_198_412_698_409_592_85,
    2.755_731_907_188_011e-6,
    -2.505_207_028_341_749e-8,
    1.605_422_047_954_208_6e-10,
    -7.384_541_171_335_528e-13,
];

/// `cos r = 1 - r^2/2 + r^4 Q(r^2)` on `|r| <= pi/4 + 1e-6`: minimax `Q` of degree 5 for the
/// relative error of `cos`, `2^-63.9`.
const COS_Q: [f64; 6] = [
    0.041_666_666_666_666_595,
    -0.001_388_888_888_887_334_2,
    2.480_158_728_900_208e-5,
    -2.755_731_421_703_882_4e-7,
    2.087_570_539_601_707_6e-9,
    -1.135_874_923_891_679_6e-11,
];

/// [`SIN_P`] with degree 3, for `f32`: relative error `2^-37.5`.
const SIN_P_LO: [f64; 4] = [
    -0.166_666_666_407_967_98,
    0.008_333_329_304_810_115,
    -0.000_198_393_122_583_653_19,
    2.718_121_518_116_592_6e-6,
];

/// [`COS_Q`] with degree 3, for `f32`: relative error `2^-42.9`.
const COS_Q_LO: [f64; 4] = [
    0.041_666_666_619_491_75,
    -0.001_388_888_350_010_493,
    2.479_946_016_117_370_3e-5,
    -2.720_575_468_075_056_3e-7,
];

/// `tanh a = a + a^3 P(a^2)` on `a <= 0.55`: minimax `P` of degree 10 for the relative error of
/// `tanh`, `2^-60.6`.
const TANH_P: [f64; 11] = [
    -0.333_333_333_333_333,
    0.133_333_333_333_265_8,
    -0.053_968_253_963_736_95,
    0.021_869_488_385_179_128,
    -0.008_863_232_590_409_388,
    0.003_592_091_920_043_492_7,
    -0.001_455_542_144_581_179,
    0.000_588_441_652_170_535_8,
    -0.000_233_374_508_367_723_33,
    8.330_658_337_766_558e-5,
    -1.948_876_755_299_348_8e-5,
];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

#[inline(always)]
fn fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// `c[0] + c[1] x + ... + c[N-1] x^(N-1)` by Horner's rule with fused steps.
#[inline(always)]
pub(super) fn poly<const N: usize>(x: f64, c: &[f64; N]) -> f64 {
    let mut acc = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        acc = fma(acc, x, c[i]);
    }
    acc
}

/// `x` clamped to `[lo, hi]`; NaN stays NaN (`f64::clamp` would do too, but compiles to a
/// branchier sequence on some targets).
#[inline(always)]
fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    let x = if x < lo { lo } else { x };
    if x > hi { hi } else { x }
}

/// `if c { a } else { b }` as a bit blend. For choosing between two computed values: written as
/// an `if`, LLVM may sink each computation into its own branch, and the block loop then no longer
/// vectorises.
#[inline(always)]
pub(super) fn blend(c: bool, a: f64, b: f64) -> f64 {
    let m = u64::from(c).wrapping_neg();
    f64::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
}

/// `(s, e)` with `s = fl(a + b)` and `s + e = a + b` exactly (Knuth's two-sum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `round(x)` as `(float, integer)` for `|x| < 2^51`, from `t = x * m + SHIFT` computed by the
/// caller in one fused step.
#[inline(always)]
fn split_round(t: f64) -> (f64, i64) {
    let nf = t - SHIFT;
    let n = (t.to_bits() as i64).wrapping_sub(SHIFT.to_bits() as i64);
    (nf, n)
}

/// `2^k` for `k` in `[-1022, 1023]`.
#[inline(always)]
fn pow2i(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) as u64) << 52)
}

/// `p * 2^n` for `n` in `[-1100, 1100]` with a single rounding: two exact-or-final scalings, so
/// subnormal results round once and overflow gives inf.
#[inline(always)]
pub(super) fn scale(p: f64, n: i64) -> f64 {
    // floor(n / 2) without an arithmetic shift (there is none for 64-bit lanes before AVX-512).
    let n1 = ((n.wrapping_add(2048) as u64) >> 1) as i64 - 1024;
    let n2 = n.wrapping_sub(n1);
    p * pow2i(n1) * pow2i(n2)
}

/// Splits a positive normal `x` as `2^k * m` with `m` in `[sqrt(1/2), sqrt(2))`; returns `(k, m)`
/// with `k` as a float. Garbage (but no panic) for other inputs.
#[inline(always)]
fn split_mantissa(x: f64) -> (f64, f64) {
    let bits = x.to_bits();
    // k + 1024, computed without an arithmetic shift.
    let kb = bits.wrapping_sub(SQRT_HALF_BITS).wrapping_add(1024 << 52) >> 52;
    let m = f64::from_bits(bits.wrapping_sub(kb.wrapping_sub(1024) << 52));
    // kb < 2^12: OR it into SHIFT's zero low bits and subtract, instead of an int-to-float convert.
    let kf = f64::from_bits(SHIFT.to_bits() | kb) - (SHIFT + 1024.0);
    (kf, m)
}

// ---------------------------------------------------------------------------------------------
// exp
// ---------------------------------------------------------------------------------------------

/// `e^(x + xl) = 2^n (hi + lo)` with `hi + lo` in about `[0.7, 1.42]` to about `2^-60` relative,
/// for `x` in `[EXP_MIN, EXP_MAX]` and `|xl| <= 2^-40`.
///
/// Method: `n = round(x / ln2)`; `r = x - n ln2` by Cody–Waite with `ln2 = LN2_HI + LN2_LO`:
/// `x - n LN2_HI` is exact (for `n != 0` both terms are multiples of `2^-54` and the difference is
/// below 1/2, so it fits in 53 bits; the fused multiply-add rounds only that difference), and
/// the rounding error of subtracting `n LN2_LO` is recovered into `rl` (with `xl`), so `r + rl` is
/// the reduced argument to about `2^-100`. Then `e^(r+rl) = e^r (1 + rl) = 1 + q`,
/// `q = r + (t + rl (1 + r + t))` with `t = r^2 Q(r)`, summed as a double-double so that the only
/// error left is the polynomial's and the rounding of the small term `t` (`<= 0.06 u` relative).
#[inline(always)]
pub(super) fn exp_parts(x: f64, xl: f64) -> (i64, f64, f64) {
    let (nf, n) = split_round(fma(x, INV_LN2, SHIFT));
    let r1 = fma(-nf, LN2_HI, x);
    let r = fma(-nf, LN2_LO, r1);
    let rl = fma(-nf, LN2_LO, r1 - r) + xl;
    let t = (r * r) * poly(r, &EXP_Q);
    let c = fma(rl, (1.0 + r) + t, t);
    let qh = r + c;
    let ql = (r - qh) + c;
    let ph = 1.0 + qh;
    let pl = ((1.0 - ph) + qh) + ql;
    (n, ph, pl)
}

/// `e^x`. Method in [`exp_parts`]; the double-double `1 + q` is rounded once and scaled by `2^n`
/// in two exact-or-final steps. Error below 0.6 ulp (final rounding; the rounding of
/// `r^2 Q(r)`, up to `0.1 u`; the polynomial, `2^-63.8`); subnormal results are rounded twice (to
/// 53 bits, then by the scaling): below 0.75 ulp. Measured against mpmath.
#[inline(always)]
pub(super) fn exp(x: f64) -> f64 {
    let x = clamp(x, EXP_MIN, EXP_MAX);
    let (n, ph, pl) = exp_parts(x, 0.0);
    scale(ph + pl, n)
}

/// `e^x` to about `2^-45` relative, for the `f32` functions: plain Cody–Waite reduction, degree 7
/// polynomial ([`EXP_Q_LO`]), no double-double.
#[inline(always)]
pub(super) fn exp_lo(x: f64) -> f64 {
    let x = clamp(x, EXP_MIN, EXP_MAX);
    let (nf, n) = split_round(fma(x, INV_LN2, SHIFT));
    let r = fma(-nf, LN2_LO, fma(-nf, LN2_HI, x));
    let p = fma(r * r, poly(r, &EXP_Q_LO), r) + 1.0;
    scale(p, n)
}

// ---------------------------------------------------------------------------------------------
// log
// ---------------------------------------------------------------------------------------------

/// `ln x`.
///
/// Method: subnormals are scaled by `2^54`; `x = 2^k m`, `m` in `[sqrt(1/2), sqrt(2))`, `f = m-1`
/// (exact), `s = f/(2+f)`, `ln m = 2 atanh(s) = f - (hfsq - s (hfsq + z P(z)))` with
/// `hfsq = f^2/2`, `z = s^2` (fdlibm's arrangement: the leading `f` is exact and the correction is
/// at most a fifth of it, so the division's rounding barely shows). The sum with
/// `k ln2 = k LN2_HI42 (exact) + k LN2_LO42` is done as a double-double and rounded once.
/// Error below 0.75 ulp (measured), mostly the rounding of `f - (...)` near `x = 1.4`.
#[inline(always)]
pub(super) fn ln(x: f64) -> f64 {
    let sub = x < f64::MIN_POSITIVE;
    let xs = if sub { x * TWO_P54 } else { x };
    let (kf, m) = split_mantissa(xs);
    let kf = if sub { kf - 54.0 } else { kf };
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let hfsq = 0.5 * f * f;
    let u = fma(-s, fma(z, poly(z, &LOG_P), hfsq), hfsq);
    let rh = f - u;
    let rl = (f - rh) - u;
    let kh = kf * LN2_HI42;
    let hi = kh + rh;
    let lo = ((kh - hi) + rh) + fma(kf, LN2_LO42, rl);
    let y = hi + lo;
    let y = if x == f64::INFINITY { x } else { y };
    let y = if x == 0.0 { f64::NEG_INFINITY } else { y };
    if x < 0.0 || x.is_nan() { f64::NAN } else { y }
}

/// `ln x` to about `2^-52` relative for `x` a widened `f32` (so normal; 0, inf, NaN give garbage
/// the caller masks): [`ln`]'s method with the shorter [`LOG_P_LO`] and no double-double.
#[inline(always)]
fn ln_lo(x: f64) -> f64 {
    let (kf, m) = split_mantissa(x);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let hfsq = 0.5 * f * f;
    let u = fma(-s, fma(z, poly(z, &LOG_P_LO), hfsq), hfsq);
    fma(kf, LN2_HI, fma(kf, LN2_LO, f - u))
}

/// `ln x` as a double-double `(hi, lo)` with relative error about `2^-65`, for `x > 0` finite
/// (other inputs give garbage the caller masks). Used by `powf`, where `e * ln x` up to 745 must be
/// right to about `2^-57` absolute.
///
/// Method: [`ln`]'s split, then `s = f/(1+m)` as a double-double (`1+m` as a double-double, the
/// exact remainder `f - s_hi (1+m)_hi` from a fused multiply-add),
/// `ln m = s (2 + z (2/3 + z T(z)))` with the two leading terms in double-double arithmetic and
/// `T` ([`LOG_T`], weight `z^2/3 <= 3e-4`) in plain `f64`.
#[inline(always)]
fn ln_dd(x: f64) -> (f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    let xs = if sub { x * TWO_P54 } else { x };
    let (kf, m) = split_mantissa(xs);
    let kf = if sub { kf - 54.0 } else { kf };
    let f = m - 1.0;
    let dh = 1.0 + m;
    let dl = m - (dh - 1.0);
    // One division: `sh` need only be faithful, the remainder `f - sh dh` is still exact.
    let inv = 1.0 / dh;
    let sh = f * inv;
    let sl = fma(-sh, dl, fma(-sh, dh, f)) * inv;
    let zh = sh * sh;
    let zl = fma(sh, sh, -zh) + 2.0 * sh * sl;
    // A = 2/3 + z T(z)
    let c = zh * poly(zh, &LOG_T);
    let ah = TWO_THIRDS_HI + c;
    let al = ((TWO_THIRDS_HI - ah) + c) + TWO_THIRDS_LO;
    // B = z A
    let bh = zh * ah;
    let bl = fma(zh, ah, -bh) + fma(zh, al, zl * ah);
    // C = 2 + B
    let ch = 2.0 + bh;
    let cl = ((2.0 - ch) + bh) + bl;
    // ln m = s C
    let lh = sh * ch;
    let ll = fma(sh, ch, -lh) + fma(sh, cl, sl * ch);
    // + k ln2
    let kh = kf * LN2_HI42;
    let hi = kh + lh;
    let lo = ((kh - hi) + lh) + fma(kf, LN2_LO42, ll);
    let h = hi + lo;
    (h, (hi - h) + lo)
}

// ---------------------------------------------------------------------------------------------
// tanh, sigmoid
// ---------------------------------------------------------------------------------------------

/// `tanh x`.
///
/// Method: `a = |x|` (clamped to 20, where it has rounded to 1), sign restored at the end. For
/// `a < 0.55` the odd polynomial `a + a^3 P(a^2)` ([`TANH_P`]); no cancellation, error about
/// 0.5 ulp. From 0.55: `1 - 2/(E + 1)` with `E = e^(2a)` from [`exp_parts`] as a double-double,
/// `E + 1`, the quotient (one division, remainder by fused multiply-add) and `1 - t` all in
/// double-double arithmetic, rounded once at the end: error about 0.6 ulp.
#[inline(always)]
pub(super) fn tanh(x: f64) -> f64 {
    let a = x.abs();
    let a = if a > TANH_CLAMP { TANH_CLAMP } else { a };
    let z = a * a;
    let small = fma(a * z, poly(z, &TANH_P), a);

    let (n, ph, pl) = exp_parts(2.0 * a, 0.0);
    let sc = pow2i(n);
    let large = one_minus_two_over_succ(ph * sc, pl * sc);

    blend(a < TANH_SMALL, small, large).copysign(x)
}

/// `1 - 2/(E + 1)` for `E = eh + el >= 1` (a double-word value, `|el|` within an ulp of `eh`),
/// rounded once: `E + 1` summed exactly, the quotient refined by its remainder (a fused
/// multiply-add) and `1 - q` summed with its rounding error. The quotient form of `tanh` in both
/// lane types (`E = e^(2|x|)`), so it is written once, over `f32` and `f64`.
#[inline(always)]
pub(super) fn one_minus_two_over_succ<T: num_traits::Float>(eh: T, el: T) -> T {
    let one = T::one();
    let two = one + one;
    let dh = eh + one;
    let dl = ((eh - dh) + one) + el;
    let inv = one / dh;
    let th = two * inv;
    let tl = (-th).mul_add(dl, (-th).mul_add(dh, two)) * inv;
    let s = one - th;
    s + (((one - s) - th) - tl)
}

/// `1 / (1 + e^-x)`.
///
/// Method: with `u = -|x|`, `E = e^u = 2^n (p_hi + p_lo) <= 1` from [`exp_parts`];
/// `sigmoid(|x|) = 1/(1+E)` and `sigmoid(-|x|) = E/(1+E) = 2^n (p/(1+E))`. `1 + E` is a
/// double-double; the quotient is `q + (num - q D)/D` with the remainder from a fused
/// multiply-add, and the final `2^n` scaling of the negative side rounds once (subnormal results
/// down to `x = -745`). Error about 0.55 ulp; subnormal results round twice, below 0.75 ulp.
#[inline(always)]
pub(super) fn sigmoid(x: f64) -> f64 {
    let u = -x.abs();
    let u = if u < EXP_MIN { EXP_MIN } else { u };
    let (n, ph, pl) = exp_parts(u, 0.0);
    // For `1 + E` only: E below 2^-1000 is invisible next to 1, so a normal 2^n suffices.
    let sc = pow2i(if n < -1000 { -1000 } else { n });
    let eh = ph * sc;
    let el = pl * sc;
    let dh = 1.0 + eh;
    let dl = ((1.0 - dh) + eh) + el;
    let neg = x < 0.0;
    let nh = if neg { ph } else { 1.0 };
    let nl = if neg { pl } else { 0.0 };
    let inv = 1.0 / dh;
    let q = nh * inv;
    let g = fma(fma(-q, dl, fma(-q, dh, nh) + nl), inv, q);
    scale(g, if neg { n } else { 0 })
}

// ---------------------------------------------------------------------------------------------
// sin, cos
// ---------------------------------------------------------------------------------------------

/// `x = n pi/2 + (r + rl)` for `|x| <= TRIG_MAX`, `|r| <= pi/4 + 1e-7`, `rl` below `ulp(r)`.
///
/// Method: three-part Cody–Waite. `x - n PIO2_1` is exact (a multiple of `2^-52` below 1);
/// `n PIO2_2` is split exactly with a fused multiply-add and subtracted with an exact two-sum;
/// `n PIO2_3` is added to the low part. The reduced argument is right to about `2^-120` absolute,
/// far below `ulp(r)` even for the doubles closest to a multiple of `pi/2`.
#[inline(always)]
fn reduce_pio2(x: f64) -> (i64, f64, f64) {
    let (nf, n) = split_round(fma(x, TWO_OVER_PI, SHIFT));
    let r1 = fma(-nf, PIO2_1, x);
    let wh = nf * PIO2_2;
    let wl = fma(nf, PIO2_2, -wh);
    let (r, e) = two_sum(r1, -wh);
    (n, r, fma(-nf, PIO2_3, e - wl))
}

/// `sin(r + rl)` for `|r| <= pi/4 + 1e-7`: `r + (r^3 P(r^2) + rl (1 - r^2/2))`, error about
/// 0.5 ulp.
#[inline(always)]
fn sin_poly(r: f64, rl: f64) -> f64 {
    let z = r * r;
    r + fma(r * z, poly(z, &SIN_P), fma(-0.5 * z, rl, rl))
}

/// `cos(r + rl)` for `|r| <= pi/4 + 1e-7`: `w = 1 - r^2/2` rounded, with its rounding error, the
/// rounding error of `r^2`, `r^4 Q(r^2)` and `-r rl` added back (fdlibm's arrangement); error about
/// 0.55 ulp.
#[inline(always)]
fn cos_poly(r: f64, rl: f64) -> f64 {
    let z = r * r;
    let zl = fma(r, r, -z);
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + fma(z * z, poly(z, &COS_Q), -fma(0.5, zl, r * rl)))
}

/// `sin x` for `|x| <= TRIG_MAX` (NaN in, NaN out; larger arguments give garbage that the kernel
/// replaces). Reduction by [`reduce_pio2`], both polynomials, quadrant select: `sin, cos, -sin,
/// -cos` for `n mod 4 = 0..3`. `sin(±0) = ±0` is kept by a select.
#[inline(always)]
pub(super) fn sin(x: f64) -> f64 {
    let (n, r, rl) = reduce_pio2(x);
    let s = sin_poly(r, rl);
    let c = cos_poly(r, rl);
    let v = blend(n & 1 == 0, s, c);
    // Negate for n mod 4 in {2, 3} by flipping the sign bit (a select here defeats vectorisation).
    let v = f64::from_bits(v.to_bits() ^ ((n as u64 & 2) << 62));
    if x == 0.0 { x } else { v }
}

/// `cos x` for `|x| <= TRIG_MAX`, as [`sin`] with the quadrants `cos, -sin, -cos, sin`.
#[inline(always)]
pub(super) fn cos(x: f64) -> f64 {
    let (n, r, rl) = reduce_pio2(x);
    let s = sin_poly(r, rl);
    let c = cos_poly(r, rl);
    let v = blend(n & 1 == 0, c, s);
    f64::from_bits(v.to_bits() ^ ((n.wrapping_add(1) as u64 & 2) << 62))
}

/// `(n mod 4, sin r, cos r)` with `x = n pi/2 + r` to about `2^-37` relative, for a widened `f32`
/// `|x| <= TRIG_MAX`: three-part Cody–Waite without the double-double (the `f32` inputs closest to
/// a multiple of `pi/2` are still far enough), degree-3 polynomials in `r^2`.
#[inline(always)]
pub(super) fn sincos_lo(x: f64) -> (i64, f64, f64) {
    let (nf, n) = split_round(fma(x, TWO_OVER_PI, SHIFT));
    let r = fma(-nf, PIO2_3, fma(-nf, PIO2_2, fma(-nf, PIO2_1, x)));
    let z = r * r;
    let s = fma(r * z, poly(z, &SIN_P_LO), r);
    let c = fma(z * z, poly(z, &COS_Q_LO), fma(-0.5, z, 1.0));
    (n & 3, s, c)
}

// ---------------------------------------------------------------------------------------------
// powf
// ---------------------------------------------------------------------------------------------

/// A finite, non-zero `powf` exponent with its integer class, computed once per call.
#[derive(Clone, Copy, Debug)]
pub(super) struct PowExp {
    e: f64,
    /// `e` is an integer.
    int: bool,
    /// `e` is an odd integer (negative bases keep their sign).
    odd: bool,
}

impl PowExp {
    /// Classifies a finite, non-zero `e`.
    pub(super) fn new(e: f64) -> PowExp {
        let int = e.trunc() == e;
        let half = 0.5 * e;
        PowExp {
            e,
            int,
            odd: int && half.trunc() != half,
        }
    }

    /// The exponent.
    #[inline(always)]
    pub(super) fn e(self) -> f64 {
        self.e
    }
}

/// Applies C's `pow` special cases for a finite non-zero exponent to `core`, which holds
/// `|x|^e` for finite non-zero `x` (anything elsewhere): `±0` and `±inf` bases, `|x| == 1`,
/// the sign for odd integer exponents, NaN for a finite negative base with a non-integer exponent,
/// NaN bases.
#[inline(always)]
pub(super) fn pow_fix(x: f64, core: f64, pe: PowExp) -> f64 {
    let ax = x.abs();
    let up = pe.e > 0.0;
    let mag = if ax == 0.0 {
        if up { 0.0 } else { f64::INFINITY }
    } else {
        core
    };
    let mag = if ax == f64::INFINITY {
        if up { f64::INFINITY } else { 0.0 }
    } else {
        mag
    };
    let mag = if ax == 1.0 { 1.0 } else { mag };
    let v = if pe.odd && x.is_sign_negative() {
        -mag
    } else {
        mag
    };
    let v = if x < 0.0 && x > f64::NEG_INFINITY && !pe.int {
        f64::NAN
    } else {
        v
    };
    if x.is_nan() { f64::NAN } else { v }
}

/// `x^e` for an infinite exponent (`+inf` when `positive`): 1 for `|x| == 1`, `+0` or `+inf` by
/// whether `|x| < 1`, NaN for NaN.
#[inline(always)]
pub(super) fn pow_inf(x: f64, positive: bool) -> f64 {
    let ax = x.abs();
    let v = if (ax < 1.0) == positive {
        0.0
    } else {
        f64::INFINITY
    };
    let v = if ax == 1.0 { 1.0 } else { v };
    if x.is_nan() { f64::NAN } else { v }
}

/// `x^e` for a finite non-zero exponent.
///
/// Method: `|x|^e = e^(e ln|x|)` with `ln|x|` as a double-double ([`ln_dd`], `2^-65` relative), the
/// product `y = e ln|x|` as a double-double (fused multiply-add for the low part), and
/// `e^(y_hi + y_lo)` by [`exp_parts`], whose reduction takes the low part. `y` is exact to about
/// `|y| 2^-65`, so the result is within about 0.55 ulp, including subnormal and overflowing
/// results. Special cases by [`pow_fix`].
#[inline(always)]
pub(super) fn pow(x: f64, pe: PowExp) -> f64 {
    let e = pe.e;
    let (lh, ll) = ln_dd(x.abs());
    let yh = e * lh;
    let yl = fma(e, lh, -yh) + e * ll;
    let yc = clamp(yh, EXP_MIN, EXP_MAX);
    // Out of range (or not finite), y_lo may be garbage and is irrelevant.
    let yl = if yc == yh { yl } else { 0.0 };
    let (n, ph, pl) = exp_parts(yc, yl);
    pow_fix(x, scale(ph + pl, n), pe)
}

/// `|x|^e` to about `2^-44` relative for a widened `f32` `x` (garbage where `x` is 0, inf or NaN;
/// [`pow_fix`] masks it): `exp_lo(e ln_lo|x|)`. For `f32` results, `|e ln|x||` stays below about
/// 150 wherever the result is neither 0 nor inf, so the plain-`f64` product is exact enough.
#[inline(always)]
pub(super) fn pow_lo(ax: f64, e: f64) -> f64 {
    exp_lo(e * ln_lo(ax))
}
