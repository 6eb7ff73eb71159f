//! Same bits whatever the position: a value's result does not depend on where it sits in a slice
//! (SIMD body or tail) or on the instruction set the dispatch picks; the scalar fallback's
//! accuracy; the reduction constants.

use super::*;

/// A deterministic spread of values: random magnitudes from `1e-40` to `1e40` of both signs, and
/// every few elements a special value (including huge `sin` arguments).
fn mixed_values(n: usize) -> Vec<f64> {
    let specials = [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e30,
        -3e12,
        f64::from_bits(1),
        1.0,
        -1.0,
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            if i % 7 == 3 {
                specials[(state >> 60) as usize % specials.len()]
            } else {
                let mag = ((state >> 11) as f64 / (1u64 << 53) as f64) * 80.0 - 40.0;
                let sign = if state & 1 == 0 { 1.0 } else { -1.0 };
                sign * 10f64.powf(mag / 8.0)
            }
        })
        .collect()
}

fn same_bits<T: Copy + PartialEq + std::fmt::Debug>(got: T, want: T, nan: fn(T) -> bool) -> bool {
    (nan(got) && nan(want)) || got == want
}

fn check_positions<T>(
    data: &[T],
    lanes: usize,
    eval_one: &dyn Fn(T) -> T,
    slice: &dyn Fn(&[T]) -> Vec<T>,
    inplace: &dyn Fn(&mut [T]),
    nan: fn(T) -> bool,
    what: &str,
) where
    T: Copy + PartialEq + std::fmt::Debug,
{
    let singles: Vec<T> = data.iter().map(|&x| eval_one(x)).collect();
    for (&x, &y) in data.iter().zip(&singles) {
        // Bit-equal, not just equal: -0.0 vs 0.0 would pass `==`.
        assert!(
            same_bits(y, eval_one(x), nan),
            "{what}: eval not repeatable at {x:?}"
        );
    }
    let whole = slice(data);
    for off in 0..=lanes {
        for len in 0..=40.min(data.len() - off) {
            let part = &data[off..off + len];
            let got = slice(part);
            let mut buf = part.to_vec();
            inplace(&mut buf);
            for i in 0..len {
                let want = singles[off + i];
                assert!(
                    same_bits(got[i], want, nan) && same_bits(buf[i], want, nan),
                    "{what}: x = {:?} at offset {off}, len {len}: into {:?}, in place {:?}, eval {want:?}",
                    part[i],
                    got[i],
                    buf[i]
                );
                assert!(
                    same_bits(whole[off + i], want, nan),
                    "{what}: whole slice differs at {}",
                    off + i
                );
            }
        }
    }
}

/// `map_into`, `map_inplace`, `powf_into`, `powf_inplace`, `eval` and `powf` agree bit for bit
/// (NaN payloads aside) for every offset `0..=LANES` and length `0..=40`, so any chunking of a
/// slice gives the same results.
#[test]
fn same_bits_whatever_the_position() {
    let d64 = mixed_values(96);
    let d32: Vec<f32> = d64.iter().map(|&x| x as f32).collect();
    for f in ALL_FNS {
        check_positions(
            &d64,
            BLOCK_F64,
            &|x| eval(f, x),
            &|s| mapped(f, s),
            &|b| map_inplace(f, b),
            f64::is_nan,
            &format!("{f:?} f64"),
        );
        check_positions(
            &d32,
            BLOCK_F32,
            &|x| eval(f, x),
            &|s| mapped(f, s),
            &|b| map_inplace(f, b),
            f32::is_nan,
            &format!("{f:?} f32"),
        );
    }
    for e in [2.5, -3.0, 0.0, f64::NAN, f64::INFINITY, 1e-3] {
        check_positions(
            &d64,
            BLOCK_F64,
            &|x| powf(x, e),
            &|s| powed(s, e),
            &|b| powf_inplace(b, e),
            f64::is_nan,
            &format!("powf({e}) f64"),
        );
        let e32 = e as f32;
        check_positions(
            &d32,
            BLOCK_F32,
            &|x| powf(x, e32),
            &|s| powed(s, e32),
            &|b| powf_inplace(b, e32),
            f32::is_nan,
            &format!("powf({e}) f32"),
        );
    }
}

/// The scalar fallback ([`StdKernel`], used when pulp finds no SIMD instruction set) is not what
/// this machine runs, so it is checked here directly: 100k `f32` and 50k `f64` values per function
/// over all bit patterns and the interesting range, the specials, and `powf`. Same references and
/// bounds as above.
#[test]
fn scalar_fallback_accuracy() {
    for f in ALL_FNS {
        let k = StdKernel::new(Op::Map(f));
        let map32 = |xs: &[f32]| {
            let mut v = xs.to_vec();
            drive::<_, 1, _>(&k, Io::InPlace(&mut v));
            v
        };
        let check = |w: &mut Worst, x: f32, y: f32| check32(w, x, y, reference32(f, f64::from(x)));
        let mut worst = sweep(
            100_000,
            1,
            &|i| f32::from_bits((i * 42_949) as u32),
            &map32,
            &check,
        );
        let (lo, hi) = range_of(f);
        let inputs = range32(lo.max(-1e30) as f32, hi as f32, 50_000);
        worst.merge(&sweep(50_000, 1, &inputs, &map32, &check));
        let sp = specials32();
        worst.merge(&sweep(
            sp.len() as u64,
            1,
            &|i| sp[i as usize],
            &map32,
            &check,
        ));
        worst.report_and_check(&format!("{f:?} f32 fallback"), 2);

        let map64 = |xs: &[f64]| {
            let mut v = xs.to_vec();
            drive::<_, 1, _>(&k, Io::InPlace(&mut v));
            v
        };
        let check = |w: &mut Worst, x: f64, y: f64| check64(w, x, y, reference64(f, x));
        let step = (u64::MAX / 50_000) | 1;
        let mut worst = sweep(
            50_000,
            1,
            &|i| f64::from_bits(i.wrapping_mul(step)),
            &map64,
            &check,
        );
        worst.merge(&sweep(50_000, 1, &range64(lo, hi, 50_000), &map64, &check));
        let sp = specials64();
        worst.merge(&sweep(
            sp.len() as u64,
            1,
            &|i| sp[i as usize],
            &map64,
            &check,
        ));
        worst.report_and_check(&format!("{f:?} f64 fallback"), 3);
    }
    for e in [2.5, -3.0, 0.0, f64::NAN, f64::NEG_INFINITY, 1e-3] {
        let k = StdKernel::new(Op::Pow(e));
        let xs = specials64();
        let mut got = xs.clone();
        drive::<_, 1, _>(&k, Io::InPlace(&mut got));
        let mut w = Worst::default();
        for (&x, &y) in xs.iter().zip(&got) {
            check64(&mut w, x, y, x.powf(e));
        }
        let xs32: Vec<f32> = specials32();
        let mut got32 = xs32.clone();
        drive::<_, 1, _>(&k, Io::InPlace(&mut got32));
        for (&x, &y) in xs32.iter().zip(&got32) {
            check32(&mut w, x, y, f64::from(x).powf(e));
        }
        w.report_and_check(&format!("powf({e}) fallback"), 3);
    }
}

#[test]
#[should_panic(expected = "lengths differ")]
fn map_into_rejects_length_mismatch() {
    let mut out = vec![MaybeUninit::<f32>::uninit(); 3];
    map_into(MathFn::Exp, &[1.0f32, 2.0], &mut out);
}

/// The split constants have the properties the reductions rely on.
#[test]
fn reduction_constants() {
    // k * LN2_HI42 exact for |k| < 2^11: at most 42 significant bits.
    assert_eq!(0.693_147_180_559_890_3f64.to_bits() & ((1 << 11) - 1), 0);
    // k * LN2_HI16 exact for |k| < 2^8: at most 16 significant bits.
    assert_eq!(0.693_145_75f32.to_bits() & ((1 << 8) - 1), 0);
}
