//! `powf` against std's `powf`: the sweeps of 16 exponents, and a grid of special bases and
//! exponents.

use super::*;

/// Exponents of the `powf` sweeps: fractional, integer (odd and even), tiny, large.
const POW_EXPONENTS: [f64; 16] = [
    2.5,
    -1.5,
    0.3,
    7.0,
    -3.0,
    1e-3,
    100.0,
    0.5,
    -0.5,
    2.0,
    1.0 / 3.0,
    -7.25,
    1e-9,
    -40.0,
    1500.5,
    123_456.7,
];

/// `powf` for every exponent of [`POW_EXPONENTS`] over bit patterns of both signs (about
/// 60k `f32` / 30k `f64` per exponent, full: 2^24 / 2^22), plus bases near 1 for the large
/// exponents. References: std's `f64` `powf`, rounded for `f32`; bounds 2 and 3 ulp.
#[test]
fn powf_f32_accuracy() {
    let full = full_sweep();
    let threads = threads();
    let mut worst = Worst::default();
    for &e64 in &POW_EXPONENTS {
        let e = e64 as f32;
        let map = |xs: &[f32]| powed(xs, e);
        let check = |w: &mut Worst, x: f32, y: f32| {
            check32(w, x, y, f64::from(x).powf(f64::from(e)));
        };
        let n = if full { 1 << 24 } else { 60_000 };
        let step = (u64::from(u32::MAX) / n) | 1;
        worst.merge(&sweep(
            n,
            threads,
            &|i| f32::from_bits((i * step) as u32),
            &map,
            &check,
        ));
        let m = if full { 1 << 20 } else { 5_000 };
        worst.merge(&sweep(m, threads, &range32(0.9, 1.1, m), &map, &check));
    }
    worst.report_and_check("powf f32", 2);
}

#[test]
fn powf_f64_accuracy() {
    let full = full_sweep();
    let threads = threads();
    let mut worst = Worst::default();
    let mut exponents = POW_EXPONENTS.to_vec();
    // Large exponents of bases near 1 exercise the double-double log.
    exponents.extend([2.0e3, 1e6, -3.5e7, 2f64.powi(40) + 1.0]);
    for &e in &exponents {
        let map = |xs: &[f64]| powed(xs, e);
        let check = |w: &mut Worst, x: f64, y: f64| check64(w, x, y, x.powf(e));
        let n = if full { 1 << 22 } else { 30_000 };
        let step = (u64::MAX / n) | 1;
        worst.merge(&sweep(
            n,
            threads,
            &|i| f64::from_bits(i.wrapping_mul(step)),
            &map,
            &check,
        ));
        // Bases where |e ln x| runs up to the overflow and underflow thresholds.
        let reach = (745.0 / e.abs()).min(700.0);
        let m = if full { 1 << 20 } else { 5_000 };
        worst.merge(&sweep(
            m,
            threads,
            &range64((-reach).exp(), reach.exp(), m),
            &map,
            &check,
        ));
    }
    worst.report_and_check("powf f64", 3);
}

/// Every combination of special bases and exponents: infinities, NaN and signed zeros must match
/// std's `powf` exactly (sign included), finite results within the usual bounds.
#[test]
fn powf_special_cases() {
    let bases = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::MAX,
        -f64::MAX,
        1e-30,
        -1e30,
    ];
    let exponents = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        -2.0,
        3.0,
        -3.0,
        0.5,
        -0.5,
        2.5,
        -2.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e300,
        -1e300,
        9_007_199_254_740_991.0,
        -9_007_199_254_740_991.0,
        9_007_199_254_740_992.0,
        16_777_215.0,
        0.1,
        1075.0,
        -1075.0,
    ];
    let mut w64 = Worst::default();
    let mut w32 = Worst::default();
    for &e in &exponents {
        let got = powed(&bases, e);
        for (&x, &y) in bases.iter().zip(&got) {
            check64(&mut w64, x, y, x.powf(e));
            assert!(powf(x, e).to_bits() == y.to_bits() || (y.is_nan() && powf(x, e).is_nan()));
        }
        let (b32, e32): (Vec<f32>, f32) = (bases.iter().map(|&b| b as f32).collect(), e as f32);
        let got = powed(&b32, e32);
        for (&x, &y) in b32.iter().zip(&got) {
            let want = x.powf(e32);
            if !classes_match32(y, want) {
                w32.class_error(f64::from(x), f64::from(y), f64::from(want));
            }
            check32(&mut w32, x, y, f64::from(x).powf(f64::from(e32)));
        }
    }
    w64.report_and_check("powf specials f64", 3);
    w32.report_and_check("powf specials f32", 2);
}
