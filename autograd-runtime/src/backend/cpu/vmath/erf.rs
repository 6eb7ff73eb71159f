//! `erf`, the error function, on `f64` lanes, and on `f32` lanes by the same scheme with tables
//! fitted for `f32` (below); the scalar fallback runs the same functions.
//!
//! Method, with `a = |x|` and the sign restored at the end (`erf(-0) = -0`, NaN stays NaN):
//! * `a < 1`: `erf a = a + a P(a^2)` ([`ERF_P`]); the correction `a P` is at most 0.14 of the
//!   result, so the polynomial's rounding errors are damped: about 0.55 ulp.
//! * `1 <= a`: `erf a = 1 - e^(-a^2) R(t)` with `t = (a - 3)/(a + 3)` ([`ERFC_R`]), `a` clamped
//!   to 6 (where `erfc a < 2^-54` and the result has rounded to 1; infinities included).
//!   `e^(-a^2)` is computed from the double-double `a^2` (its rounding error from a fused
//!   multiply-add), the product with `R` and the subtraction from 1 in one fused step. The error
//!   of `erfc` relative to itself (about 2.5 ulp: the quotient `t`, `R`, the product) is damped by
//!   `erfc a / erf a <= 0.19`: about 0.6 ulp at `a = 1`, less above.
//!
//! The coefficients are least-squares fits at Chebyshev points refitted after each rounding to
//! `f64`, by `fit_erf.py` in this directory.

use super::lanes32::{exp as exp32, poly as poly32};
use super::lanes64::{blend, exp_parts, poly, scale};

/// `erf` switches from the odd polynomial to the `erfc` form at this `|x|`.
const ERF_SMALL: f64 = 1.0;
/// `erf(a)` rounds to 1 from about 5.93; larger arguments are clamped to this.
const ERF_CLAMP: f64 = 6.0;

/// `erf a = a + a P(a^2)` on `a < 1`: `P(s) ~ erf(sqrt s)/sqrt s - 1` of degree 11, absolute error
/// `0.14 x 2^-53` (`fit_erf.py`).
const ERF_P: [f64; 12] = [
    0.128_379_167_095_512_56,
    -0.376_126_389_031_834_7,
    0.112_837_916_709_432_19,
    -0.026_866_170_643_026_57,
    0.005_223_977_605_728_971,
    -0.000_854_832_591_964_714_3,
    0.000_120_552_934_650_659_7,
    -1.492_471_250_620_152_8e-5,
    1.644_715_482_254_836_2e-6,
    -1.620_660_797_890_768_5e-7,
    1.371_262_707_558_685_1e-8,
    -7.783_068_636_772_604e-10,
];
/// `erfc a = e^(-a^2) R(t)`, `t = (a - 3)/(a + 3)`, on `1 <= a <= 6`: `R ~ erfcx` of degree 14 in
/// `t`, relative error `0.46 x 2^-53` (`fit_erf.py`).
const ERFC_R: [f64; 15] = [
    0.179_001_151_181_389_96,
    -0.326_233_560_043_037_3,
    0.245_603_801_712_333_04,
    -0.150_115_936_500_768_8,
    0.071_665_837_197_567_63,
    -0.024_392_499_319_426_206,
    0.004_269_136_354_603_893,
    0.000_707_746_478_173_061_4,
    -0.000_597_062_460_706_833_3,
    4.525_421_683_629_460_4e-5,
    6.406_243_748_155_597e-5,
    -1.284_510_924_485_467_5e-5,
    -8.007_701_900_190_559e-6,
    2.012_697_051_792_24e-6,
    1.270_321_138_372_104_5e-6,
];

/// `erf x` (method in the module's documentation).
#[inline(always)]
pub(super) fn erf(x: f64) -> f64 {
    let a = x.abs();
    let a = if a > ERF_CLAMP { ERF_CLAMP } else { a };
    let s = a * a;
    let small = poly(s, &ERF_P).mul_add(a, a);

    let sl = a.mul_add(a, -s);
    let (n, ph, pl) = exp_parts(-s, -sl);
    let e = scale(ph + pl, n);
    let t = (a - 3.0) / (a + 3.0);
    let large = (-e).mul_add(poly(t, &ERFC_R), 1.0);

    blend(a < ERF_SMALL, small, large).copysign(x)
}

// ----- f32 lanes --------------------------------------------------------------------------------
//
// The same scheme in `f32` lanes (twice as many per register, half the polynomial degrees): the
// tables are fits for `f32`'s precision (`fit_erf.py`, its `f32` part), the argument is clamped
// at 4 (`erf(a)` rounds to 1 in `f32` from about 3.92, and `t` stays in `[-1/2, 1/7]`), and
// `e^(-a^2)` is `f32` `exp` of the rounded square: its relative error, at most `a^2 2^-24`,
// reaches the result through `erfc a`, which is below `2^-24 / a^2` where that matters. The
// `erfc` form's error (about 2 ulp of `erfc`) is damped by `erfc a / erf a <= 0.19` as in `f64`:
// within 1 ulp overall (`vmath/tests`).

/// `erf a = a + a P(a^2)` on `a < 1`, `f32` coefficients: absolute error `0.021 x 2^-24`.
const ERF_P32: [f32; 7] = [
    0.128_379_17,
    -0.376_126_3,
    0.112_836_18,
    -0.026_855_124,
    0.005_190_726,
    -0.000_803_065_4,
    7.919_902e-5,
];
/// `erfc a = e^(-a^2) R(t)`, `t = (a - 3)/(a + 3)`, on `1 <= a <= 4`, `f32` coefficients:
/// relative error `0.126 x 2^-24`.
const ERFC_R32: [f32; 9] = [
    0.179_001_15,
    -0.326_233_57,
    0.245_603_59,
    -0.150_115_64,
    0.071_674_96,
    -0.024_382_437,
    0.004_161_458_5,
    0.000_388_933_72,
    -0.000_853_154_1,
];
/// `erf(a)` rounds to 1 in `f32` from about 3.92; larger arguments are clamped to this.
const ERF_CLAMP32: f32 = 4.0;

/// `erf x` of an `f32`, in `f32` lanes (method above).
#[inline(always)]
pub(super) fn erf32(x: f32) -> f32 {
    let a = x.abs();
    let a = if a > ERF_CLAMP32 { ERF_CLAMP32 } else { a };
    let s = a * a;
    let small = poly32(s, &ERF_P32).mul_add(a, a);
    let e = exp32(-s);
    let t = (a - 3.0) / (a + 3.0);
    let large = (-e).mul_add(poly32(t, &ERFC_R32), 1.0);
    let m = u32::from(a < ERF_SMALL as f32).wrapping_neg();
    f32::from_bits((small.to_bits() & m) | (large.to_bits() & !m)).copysign(x)
}
