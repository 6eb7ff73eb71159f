//! Accuracy sweeps, special values and the same-bits-anywhere property of the vector math.
//!
//! Every sweep measures the worst error in ulps against a reference and asserts a bound; run with
//! `-- --nocapture` to see the figures. Sizes are chosen for a debug-mode `cargo test` on a 2-core
//! machine (the whole module in about 3 seconds there):
//!
//! * `f32`, per function: every 3579th bit pattern of all `2^32` (1.2M values, NaNs included),
//!   600k values strided over the function's interesting range, 2 x 150k around its thresholds
//!   (overflow, underflow, subnormal results, the cut-offs between methods), and the special
//!   values (zeros, subnormals, extremes, infinities, NaN, multiples of `pi/4`, and their
//!   neighbours). Reference: std's `f64` function on the widened input, rounded to `f32`: the
//!   correctly rounded result except in vanishingly rare double-rounding cases (the `f64` value
//!   within about `2^-29` ulp of an `f32` midpoint). Bound: 2 ulp.
//! * `f64`, per function: 300k bit patterns strided over all `2^64`, 300k values over the
//!   interesting range, 2 x 60k around the thresholds, and the specials. Reference: std's `f64`
//!   function (glibc's libm, within 1 ulp of the correctly rounded result for these functions but
//!   `tanh`, where glibc documents 2 ulp and is measured at 2.07), so the asserted 3 ulp against
//!   it bounds the error against the correctly rounded value by 4 ulp. `sigmoid`'s reference is
//!   [`sigmoid_ref64`] (within about 1 ulp).
//! * `powf`: 16 exponents x (60k `f32` / 30k `f64` bit patterns + 5k bases near 1), larger
//!   exponents for `f64`, and a grid of special bases and exponents checked against std's `powf`.
//!
//! `AUTOGRAD_VMATH_SWEEP=full` (meant for `cargo test --release`, about 10 minutes on 2 cores)
//! sweeps all `2^32` `f32` inputs per function (plus `2^26` in the range and `2^22` per
//! threshold), `2^27` strided `f64` bit patterns (plus `2^24` and `2^22`), and `2^24` / `2^22`
//! bases per `powf` exponent, on all cores.

use crate::sync::atomic::AtomicU64;
use crate::sync::{Mutex, Ordering};
use std::mem::MaybeUninit;

use super::*;

const ALL_FNS: [MathFn; 7] = [
    MathFn::Exp,
    MathFn::Log,
    MathFn::Tanh,
    MathFn::Sigmoid,
    MathFn::Sin,
    MathFn::Cos,
    MathFn::Erf,
];

// SAFETY: C's `erf` from the platform's libm (linked by std on every target it supports): a pure
// function of one `double`, with no precondition.
unsafe extern "C" {
    #[link_name = "erf"]
    safe fn libm_erf(x: f64) -> f64;
}

fn full_sweep() -> bool {
    std::env::var("AUTOGRAD_VMATH_SWEEP").is_ok_and(|v| v == "full")
}

/// Runs `map_into` and returns the initialised output.
fn mapped<T: VMath>(f: MathFn, src: &[T]) -> Vec<T> {
    let mut out = vec![MaybeUninit::<T>::uninit(); src.len()];
    map_into(f, src, &mut out);
    out.into_iter()
        // SAFETY: `map_into` writes every element of `dst`.
        .map(|o| unsafe { o.assume_init() })
        .collect()
}

/// Runs `powf_into` and returns the initialised output.
fn powed<T: VMath>(src: &[T], e: T) -> Vec<T> {
    let mut out = vec![MaybeUninit::<T>::uninit(); src.len()];
    powf_into(src, e, &mut out);
    out.into_iter()
        // SAFETY: `powf_into` writes every element of `dst`.
        .map(|o| unsafe { o.assume_init() })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Ulp arithmetic
// ---------------------------------------------------------------------------------------------

/// Position of `x` on the line of `f32` values (`±0` both at 0).
fn ord32(x: f32) -> i64 {
    let b = i64::from(x.to_bits() as i32);
    if b < 0 { i64::from(i32::MIN) - b } else { b }
}

fn from_ord32(o: i64) -> f32 {
    if o < 0 {
        f32::from_bits((i64::from(i32::MIN) - o) as i32 as u32)
    } else {
        f32::from_bits(o as u32)
    }
}

/// Position of `x` on the line of `f64` values (`±0` both at 0).
fn ord64(x: f64) -> i128 {
    let b = i128::from(x.to_bits() as i64);
    if b < 0 { i128::from(i64::MIN) - b } else { b }
}

fn from_ord64(o: i128) -> f64 {
    if o < 0 {
        f64::from_bits((i128::from(i64::MIN) - o) as i64 as u64)
    } else {
        f64::from_bits(o as u64)
    }
}

/// Whether `got` may be compared with `want` in ulps: NaN, infinities and zeros of the reference
/// (and NaN or infinite results) must match exactly, sign included.
fn classes_match<T: Copy + PartialEq>(
    got: T,
    want: T,
    nan: fn(T) -> bool,
    inf: fn(T) -> bool,
    bits_eq: fn(T, T) -> bool,
    zero: T,
) -> bool {
    if nan(want) || nan(got) {
        return nan(want) && nan(got);
    }
    if inf(want) || inf(got) || want == zero {
        return bits_eq(got, want);
    }
    true
}

fn classes_match32(got: f32, want: f32) -> bool {
    classes_match(
        got,
        want,
        f32::is_nan,
        f32::is_infinite,
        |a, b| a.to_bits() == b.to_bits(),
        0.0,
    )
}

fn classes_match64(got: f64, want: f64) -> bool {
    classes_match(
        got,
        want,
        f64::is_nan,
        f64::is_infinite,
        |a, b| a.to_bits() == b.to_bits(),
        0.0,
    )
}

/// Distance in `f32` ulps (0 for two NaNs).
fn ulps32(got: f32, want: f32) -> u64 {
    if got.is_nan() && want.is_nan() {
        return 0;
    }
    (ord32(got) - ord32(want)).unsigned_abs()
}

fn ulps64(got: f64, want: f64) -> u64 {
    if got.is_nan() && want.is_nan() {
        return 0;
    }
    u64::try_from((ord64(got) - ord64(want)).unsigned_abs()).unwrap_or(u64::MAX)
}

/// Error of `got` against the exact (`f64`) value `want` in units of the `f32` ulp at `want`.
fn frac_ulps32(got: f32, want: f64) -> f64 {
    if !want.is_finite() || !got.is_finite() {
        return 0.0;
    }
    let e = ((want.abs().to_bits() >> 52) as i32 - 1023).max(-126);
    (f64::from(got) - want).abs() / 2f64.powi(e - 23)
}

// ---------------------------------------------------------------------------------------------
// Sweeps
// ---------------------------------------------------------------------------------------------

/// The worst case of one sweep.
#[derive(Clone, Copy, Debug, Default)]
struct Worst {
    ulps: u64,
    input: f64,
    got: f64,
    want: f64,
    /// `f32` only: the largest error against the unrounded `f64` reference, in ulps, and where.
    frac: f64,
    frac_input: f64,
    count: u64,
    class_errors: u64,
    first_class_error: Option<(f64, f64, f64)>,
}

impl Worst {
    fn merge(&mut self, o: &Worst) {
        if o.ulps > self.ulps {
            self.ulps = o.ulps;
            self.input = o.input;
            self.got = o.got;
            self.want = o.want;
        }
        if o.frac > self.frac {
            self.frac = o.frac;
            self.frac_input = o.frac_input;
        }
        self.count += o.count;
        self.class_errors += o.class_errors;
        if self.first_class_error.is_none() {
            self.first_class_error = o.first_class_error;
        }
    }

    fn note(&mut self, ulps: u64, input: f64, got: f64, want: f64) {
        self.count += 1;
        if ulps > self.ulps {
            self.ulps = ulps;
            self.input = input;
            self.got = got;
            self.want = want;
        }
    }

    fn class_error(&mut self, input: f64, got: f64, want: f64) {
        self.class_errors += 1;
        if self.first_class_error.is_none() {
            self.first_class_error = Some((input, got, want));
        }
    }

    fn report_and_check(&self, what: &str, bound: u64) {
        println!(
            "vmath {what:<18} worst {} ulp{} over {} values (at x = {:e}: got {:e}, want {:e})",
            self.ulps,
            if self.frac > 0.0 {
                format!(
                    " ({:.3} ulp vs the f64 value at x = {:e})",
                    self.frac, self.frac_input
                )
            } else {
                String::new()
            },
            self.count,
            self.input,
            self.got,
            self.want,
        );
        assert_eq!(
            self.class_errors, 0,
            "{what}: {} special results differ, first (x, got, want) = {:?}",
            self.class_errors, self.first_class_error
        );
        assert!(
            self.ulps <= bound,
            "{what}: {} ulp at x = {:e} (got {:e}, want {:e}), bound {bound}",
            self.ulps,
            self.input,
            self.got,
            self.want
        );
    }
}

/// Feeds `gen(0..n)` through `map` in batches, on `threads` threads, and merges the per-thread
/// worst cases that `check` records.
fn sweep<T: Copy + Send + Sync>(
    n: u64,
    threads: usize,
    generate: &(dyn Fn(u64) -> T + Sync),
    map: &(dyn Fn(&[T]) -> Vec<T> + Sync),
    check: &(dyn Fn(&mut Worst, T, T) + Sync),
) -> Worst {
    const BATCH: u64 = 1 << 14;
    let next = AtomicU64::new(0);
    let mut total = Mutex::new(Worst::default());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut w = Worst::default();
                let mut xs = Vec::with_capacity(BATCH as usize);
                loop {
                    let start = next.fetch_add(BATCH, Ordering::Relaxed);
                    if start >= n {
                        break;
                    }
                    xs.clear();
                    xs.extend((start..(start + BATCH).min(n)).map(generate));
                    for (&x, y) in xs.iter().zip(map(&xs)) {
                        check(&mut w, x, y);
                    }
                }
                total.lock().merge(&w);
            });
        }
    });
    std::mem::take(total.get_mut())
}

fn threads() -> usize {
    if full_sweep() {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        1
    }
}

/// Checks one `f32` result against the `f64` reference.
fn check32(w: &mut Worst, x: f32, got: f32, exact: f64) {
    let want = exact as f32;
    if !classes_match32(got, want) {
        w.class_error(f64::from(x), f64::from(got), f64::from(want));
    }
    let frac = frac_ulps32(got, exact);
    if frac > w.frac {
        w.frac = frac;
        w.frac_input = f64::from(x);
    }
    w.note(
        ulps32(got, want),
        f64::from(x),
        f64::from(got),
        f64::from(want),
    );
}

fn check64(w: &mut Worst, x: f64, got: f64, want: f64) {
    if !classes_match64(got, want) {
        w.class_error(x, got, want);
    }
    w.note(ulps64(got, want), x, got, want);
}

/// `f32` values strided over the value line from `lo` to `hi` (about `n` of them).
fn range32(lo: f32, hi: f32, n: u64) -> impl Fn(u64) -> f32 + Sync {
    let (a, b) = (ord32(lo), ord32(hi));
    let step = ((b - a) as u64 / n.max(1)).max(1);
    move |i| from_ord32((a + (i * step) as i64).min(b))
}

fn range64(lo: f64, hi: f64, n: u64) -> impl Fn(u64) -> f64 + Sync {
    let (a, b) = (ord64(lo), ord64(hi));
    let step = ((b - a) as u128 / u128::from(n.max(1))).max(1);
    move |i| from_ord64((a + (u128::from(i) * step) as i128).min(b))
}

/// Special `f32` inputs for every function.
fn specials32() -> Vec<f32> {
    let mut v = vec![
        0.0,
        1.0,
        2.0,
        0.5,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::INFINITY,
        f32::NAN,
        f32::EPSILON,
        1e-30,
        1e30,
        1e38,
        88.722_83,
        88.722_84,
        -87.336_55,
        -103.972_08,
        -103.972_09,
        9.010_913,
        1.0 - f32::EPSILON,
        1.0 + f32::EPSILON,
        core::f32::consts::FRAC_PI_2,
        core::f32::consts::PI,
        1e5,
        1e10,
        TRIG_MAX_F32,
    ];
    for k in 1..200 {
        v.push(k as f32 * core::f32::consts::FRAC_PI_4);
    }
    let neg: Vec<f32> = v.iter().map(|&x| -x).collect();
    v.extend(neg);
    let near: Vec<f32> = v
        .iter()
        .flat_map(|&x| (-3i64..=3).map(move |d| from_ord32(ord32(x) + d)))
        .filter(|x| !x.is_nan())
        .collect();
    v.extend(near);
    v
}

const TRIG_MAX_F32: f32 = lanes32::TRIG_MAX;

fn specials64() -> Vec<f64> {
    let mut v = vec![
        0.0,
        1.0,
        2.0,
        0.5,
        f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
        f64::EPSILON,
        1e-300,
        1e300,
        709.782_712_893_384,
        -708.396_418_532_264_1,
        -745.133_219_101_941_1,
        -745.133_219_101_941_2,
        19.06,
        0.55,
        1.0 - f64::EPSILON,
        1.0 + f64::EPSILON,
        core::f64::consts::FRAC_PI_2,
        core::f64::consts::PI,
        1e5,
        1e10,
        1e22,
        lanes64::TRIG_MAX,
        // A double close to a multiple of pi/2 (|x - n pi/2| ~ 2^-61).
        6_381_956_970_095_103.0 * 2f64.powi(797),
    ];
    for k in 1..200 {
        v.push(f64::from(k) * core::f64::consts::FRAC_PI_4);
    }
    let neg: Vec<f64> = v.iter().map(|&x| -x).collect();
    v.extend(neg);
    let near: Vec<f64> = v
        .iter()
        .flat_map(|&x| (-3i128..=3).map(move |d| from_ord64(ord64(x) + d)))
        .filter(|x| !x.is_nan())
        .collect();
    v.extend(near);
    v
}

/// `f32` reference, in `f64`.
fn reference32(f: MathFn, x: f64) -> f64 {
    match f {
        MathFn::Exp => x.exp(),
        MathFn::Log => x.ln(),
        MathFn::Tanh => x.tanh(),
        // Rounded to f32 from a 2^-52-accurate f64: correctly rounded but for near-midpoints.
        MathFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        MathFn::Sin => x.sin(),
        MathFn::Cos => x.cos(),
        // glibc's `erf`: within 1 ulp of the correctly rounded value (documented and measured).
        MathFn::Erf => libm_erf(x),
    }
}

/// `(s, e)` with `s + e == a + b` exactly.
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `1/(1 + e^-x)` from std's `exp` (within about 0.5 ulp) with the rest in double-double
/// arithmetic: within about 1 ulp of the correctly rounded value (`0.8` ulp for `x >= 0`, where
/// the `exp` error is damped by `e/(1+e) <= 1/2`).
fn sigmoid_ref64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let (num, e) = if x >= 0.0 {
        (1.0, (-x).exp())
    } else {
        let e = x.exp();
        (e, e)
    };
    let (dh, dl) = two_sum(1.0, e);
    let q = num / dh;
    let r = q.mul_add(-dh, num) - q * dl;
    q + r / dh
}

fn reference64(f: MathFn, x: f64) -> f64 {
    match f {
        MathFn::Sigmoid => sigmoid_ref64(x),
        _ => reference32(f, x),
    }
}

/// The interesting range of each function (where results are neither saturated nor trivial).
fn range_of(f: MathFn) -> (f64, f64) {
    match f {
        MathFn::Exp => (-746.0, 710.0),
        MathFn::Log => (0.0, 4.0),
        MathFn::Tanh => (-20.0, 20.0),
        MathFn::Sigmoid => (-746.0, 40.0),
        MathFn::Sin | MathFn::Cos => (-1e4, 1e4),
        MathFn::Erf => (-6.5, 6.5),
    }
}

fn accuracy32(f: MathFn) {
    accuracy32_with(f, &format!("{f:?} f32"), &|xs| mapped(f, xs));
}

/// [`accuracy32`] of `f` computed by `map`, reported as `what`.
fn accuracy32_with(f: MathFn, what: &str, map: &(dyn Fn(&[f32]) -> Vec<f32> + Sync)) {
    let full = full_sweep();
    let threads = threads();
    let check = |w: &mut Worst, x: f32, y: f32| check32(w, x, y, reference32(f, f64::from(x)));
    let mut worst = Worst::default();

    // Every k-th bit pattern of all 2^32 (k odd, so all low-bit patterns appear).
    let (n_all, step) = if full {
        (1u64 << 32, 1u64)
    } else {
        (1_200_000, 3579)
    };
    let all = move |i: u64| f32::from_bits((i * step) as u32);
    worst.merge(&sweep(n_all, threads, &all, map, &check));

    // The interesting range, densely (both signs for the odd/even functions).
    let (lo, hi) = range_of(f);
    let n_range = if full { 1 << 26 } else { 600_000 };
    let (lo, hi) = (lo.max(f64::from(f32::MIN)) as f32, hi as f32);
    let inputs = range32(lo, hi, n_range);
    worst.merge(&sweep(n_range, threads, &inputs, map, &check));

    // Thresholds: subnormal results / underflow / overflow of exp and sigmoid, the tiny-argument
    // cut of tanh and its cut between polynomial and quotient, log near 1 and of subnormals, sin/cos near the end of the vector reduction.
    let edges: &[(f32, f32)] = match f {
        MathFn::Exp => &[(88.0, 89.0), (-104.5, -86.5)],
        MathFn::Log => &[(0.999, 1.001), (0.0, f32::MIN_POSITIVE * 2.0)],
        // (The last two: the first interval's end and the clamp of the AVX-512 kernel.)
        MathFn::Tanh => &[
            (1.0 / 8192.0, 1.0 / 1024.0),
            (0.24, 0.26),
            (8.5, 9.5),
            (0.15, 0.17),
            (9.7, 9.9),
        ],
        MathFn::Sigmoid => &[(-104.5, -86.5), (15.0, 18.0)],
        MathFn::Sin | MathFn::Cos => &[(1e6, 1e7), (TRIG_MAX_F32 * 0.999, TRIG_MAX_F32 * 1.001)],
        // The cut between the methods, where the result rounds to 1, subnormal results.
        MathFn::Erf => &[(0.99, 1.01), (3.8, 4.0), (1e-45, 1e-36), (-1.01, -0.99)],
    };
    for &(a, b) in edges {
        let n = if full { 1 << 22 } else { 150_000 };
        worst.merge(&sweep(n, threads, &range32(a, b, n), map, &check));
    }

    let sp = specials32();
    worst.merge(&sweep(sp.len() as u64, 1, &|i| sp[i as usize], map, &check));

    worst.report_and_check(what, 2);
}

fn accuracy64(f: MathFn) {
    let full = full_sweep();
    let threads = threads();
    let map = |xs: &[f64]| mapped(f, xs);
    let check = |w: &mut Worst, x: f64, y: f64| check64(w, x, y, reference64(f, x));
    let mut worst = Worst::default();

    let n_all = if full { 1 << 27 } else { 300_000 };
    let step = (u64::MAX / n_all) | 1;
    let all = move |i: u64| f64::from_bits(i.wrapping_mul(step));
    worst.merge(&sweep(n_all, threads, &all, &map, &check));

    let (lo, hi) = range_of(f);
    let n_range = if full { 1 << 24 } else { 300_000 };
    worst.merge(&sweep(
        n_range,
        threads,
        &range64(lo, hi, n_range),
        &map,
        &check,
    ));

    let edges: &[(f64, f64)] = match f {
        MathFn::Exp => &[(709.0, 710.0), (-746.0, -707.0)],
        MathFn::Log => &[(0.999_999, 1.000_001), (0.0, f64::MIN_POSITIVE * 2.0)],
        MathFn::Tanh => &[(0.5, 0.6), (1e-9, 1e-3)],
        MathFn::Sigmoid => &[(-746.0, -700.0), (30.0, 40.0)],
        MathFn::Sin | MathFn::Cos => &[
            (1e8, 1e9),
            (lanes64::TRIG_MAX * 0.999_999, lanes64::TRIG_MAX * 1.000_001),
        ],
        MathFn::Erf => &[
            (0.999, 1.001),
            (5.8, 6.1),
            (1e-320, 1e-300),
            (-1.001, -0.999),
        ],
    };
    for &(a, b) in edges {
        let n = if full { 1 << 22 } else { 60_000 };
        worst.merge(&sweep(n, threads, &range64(a, b, n), &map, &check));
    }

    let sp = specials64();
    worst.merge(&sweep(
        sp.len() as u64,
        1,
        &|i| sp[i as usize],
        &map,
        &check,
    ));

    worst.report_and_check(&format!("{f:?} f64"), 3);
}

#[test]
fn exp_f32_accuracy() {
    accuracy32(MathFn::Exp);
}

#[test]
fn log_f32_accuracy() {
    accuracy32(MathFn::Log);
}

#[test]
fn tanh_f32_accuracy() {
    accuracy32(MathFn::Tanh);
}

/// On an AVX-512 machine `f32` `tanh` runs the table-driven kernel of [`super::avx512`]; the
/// portable lane code, which other machines run, is swept here too (under AVX2 where the CPU has
/// it, as pulp would pick on an AVX2-only machine).
#[test]
fn tanh_f32_portable_accuracy() {
    accuracy32_with(MathFn::Tanh, "Tanh f32 portable", &|xs| {
        let mut v = xs.to_vec();
        let run = Run {
            op: Op::Map(MathFn::Tanh),
            io: Io::InPlace(&mut v),
        };
        #[cfg(target_arch = "x86_64")]
        if let Some(v3) = pulp::x86::V3::try_new() {
            Arch::V3(v3).dispatch(run);
            return v;
        }
        Arch::new().dispatch(run);
        v
    });
}

#[test]
fn sigmoid_f32_accuracy() {
    accuracy32(MathFn::Sigmoid);
}

#[test]
fn sin_f32_accuracy() {
    accuracy32(MathFn::Sin);
}

#[test]
fn cos_f32_accuracy() {
    accuracy32(MathFn::Cos);
}

#[test]
fn erf_f32_accuracy() {
    accuracy32(MathFn::Erf);
}

#[test]
fn exp_f64_accuracy() {
    accuracy64(MathFn::Exp);
}

#[test]
fn log_f64_accuracy() {
    accuracy64(MathFn::Log);
}

#[test]
fn tanh_f64_accuracy() {
    accuracy64(MathFn::Tanh);
}

#[test]
fn sigmoid_f64_accuracy() {
    accuracy64(MathFn::Sigmoid);
}

#[test]
fn sin_f64_accuracy() {
    accuracy64(MathFn::Sin);
}

#[test]
fn cos_f64_accuracy() {
    accuracy64(MathFn::Cos);
}

#[test]
fn erf_f64_accuracy() {
    accuracy64(MathFn::Erf);
}

/// Exact special values of `erf`: signed zeros and infinities, NaN, saturation to ±1 in both lane
/// types, and the `f32` result of a subnormal input (`2/sqrt(pi) x`, rounded once).
#[test]
fn erf_special_values() {
    let x64 = [
        0.0f64,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        6.0,
        -7.5,
        1e300,
    ];
    let want64 = [0.0f64, -0.0, 1.0, -1.0, 1.0, -1.0, 1.0];
    for (got, want) in mapped(MathFn::Erf, &x64).into_iter().zip(want64) {
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "erf f64: got {got}, want {want}"
        );
    }
    let x32 = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, 3.95, -4.0];
    let want32 = [0.0f32, -0.0, 1.0, -1.0, 1.0, -1.0];
    for (got, want) in mapped(MathFn::Erf, &x32).into_iter().zip(want32) {
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "erf f32: got {got}, want {want}"
        );
    }
    assert!(eval(MathFn::Erf, f64::NAN).is_nan() && eval(MathFn::Erf, f32::NAN).is_nan());
    let tiny = f32::from_bits(1000);
    let want = (f64::from(tiny) * std::f64::consts::FRAC_2_SQRT_PI) as f32;
    assert_eq!(eval(MathFn::Erf, tiny), want);
    assert_eq!(eval(MathFn::Erf, -tiny), -want);
}

mod pow;
mod same_bits;
