//! Unit tests of the reductions, softmax and the whole-array checks.

use ndarray::{ArrayD, Axis, IxDyn, s};

use super::*;
use crate::backend::cpu::tests::{arr, assert_close, assert_standard, check, range};

// --- reductions ------------------------------------------------------------------------------

#[test]
fn sum_all_values_and_layouts() {
    assert_eq!(sum_all(range(&[2, 3]).view()), 15.0);
    assert_eq!(sum_all(range(&[2, 3]).t()), 15.0);
    assert_eq!(sum_all(arr(&[], &[4.5]).view()), 4.5);
    assert_eq!(sum_all(arr(&[0, 3], &[]).view()), 0.0);
    let big = range(&[40, 30]);
    assert_eq!(sum_all(big.slice(s![..;3, 1..;2]).into_dyn()), {
        let mut t = 0.0;
        for i in (0..40).step_by(3) {
            for j in (1..30).step_by(2) {
                t += (i * 30 + j) as f64;
            }
        }
        t
    });
    let row = arr(&[3], &[1.0, 2.0, 3.0]);
    assert_eq!(
        sum_all(row.broadcast(IxDyn(&[1000, 3])).expect("expand")),
        6000.0
    );
    let long = range(&[5000]);
    assert_eq!(
        sum_all(long.slice(s![..;2]).into_dyn()),
        (0..5000).step_by(2).sum::<usize>() as f64
    );
}

#[test]
fn sum_all_f32_million_elements_is_accurate() {
    let n = 1_000_000;
    let data: Vec<f32> = (0..n).map(|i| 0.1 + (i % 7) as f32 * 0.01).collect();
    let exact: f64 = data.iter().map(|&x| f64::from(x)).sum();
    let a = ArrayD::from_shape_vec(IxDyn(&[n]), data).expect("shape");
    let got = f64::from(sum_all(a.view()));
    assert!(
        ((got - exact) / exact).abs() < 1e-6,
        "got {got}, exact {exact}"
    );
    let naive: f32 = a.iter().fold(0.0, |acc, &x| acc + x);
    assert!(
        (f64::from(naive) - exact).abs() > (got - exact).abs(),
        "pairwise beats naive"
    );
    let m = a
        .into_shape_with_order(IxDyn(&[1000, 1000]))
        .expect("reshape");
    let cols = sum_axes(m.view(), &[0], false);
    let col0: f64 = (0..1000).map(|i| f64::from(m[[i, 0]])).sum();
    assert!((f64::from(cols[[0]]) - col0).abs() < 1e-6 * col0);
}

#[test]
fn sum_axes_matches_ndarray() {
    let a = range(&[2, 3, 4]);
    for axes in [
        &[0][..],
        &[1],
        &[2],
        &[0, 1],
        &[1, 2],
        &[0, 2],
        &[0, 1, 2],
        &[2, 0],
    ] {
        let mut expected = a.clone();
        let mut sorted = axes.to_vec();
        sorted.sort_unstable();
        for &ax in sorted.iter().rev() {
            expected = expected.sum_axis(Axis(ax));
        }
        let got = sum_axes(a.view(), axes, false);
        assert_standard(&got);
        assert_eq!(got, expected, "axes {axes:?}");
        let kept = sum_axes(a.view(), axes, true);
        let mut kept_shape = vec![2, 3, 4];
        axes.iter().for_each(|&ax| kept_shape[ax] = 1);
        check(&kept, &kept_shape, expected.as_slice().expect("standard"));
        let from_t = sum_axes(
            a.t(),
            &axes.iter().map(|&ax| 2 - ax).collect::<Vec<_>>(),
            false,
        );
        assert_eq!(from_t, expected.t(), "transposed, axes {axes:?}");
    }
    check(
        &sum_axes(a.view(), &[], false),
        &[2, 3, 4],
        a.as_slice().expect("standard"),
    );
    check(
        &sum_axes(arr(&[2, 0], &[]).view(), &[1], false),
        &[2],
        &[0.0, 0.0],
    );
    check(
        &sum_axes(arr(&[0, 2], &[]).view(), &[1], true),
        &[0, 1],
        &[],
    );
    check(
        &sum_axes(range(&[40, 3]).view(), &[0], false),
        &[3],
        &[2340.0, 2380.0, 2420.0],
    );
}

#[test]
fn sum_to_reduces_broadcast_dims() {
    let a = range(&[2, 3]);
    check(&sum_to(a.view(), &[3]), &[3], &[3.0, 5.0, 7.0]);
    check(&sum_to(a.view(), &[1, 3]), &[1, 3], &[3.0, 5.0, 7.0]);
    check(&sum_to(a.view(), &[2, 1]), &[2, 1], &[3.0, 12.0]);
    check(&sum_to(a.view(), &[]), &[], &[15.0]);
    check(&sum_to(a.view(), &[1, 1]), &[1, 1], &[15.0]);
    check(
        &sum_to(a.view(), &[2, 3]),
        &[2, 3],
        &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    );
    check(
        &sum_to(a.t(), &[3, 2]),
        &[3, 2],
        &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0],
    );
    // [4, 2, 3] -> [2, 1, 3] is not a valid sum_to (2 vs 4); these are its valid neighbours.
    let b = range(&[4, 2, 3]);
    let cell = |j: usize, k: usize| (0..4).map(|i| (i * 6 + j * 3 + k) as f64).sum::<f64>();
    let expected: Vec<f64> = (0..2)
        .flat_map(|j| (0..3).map(move |k| cell(j, k)))
        .collect();
    check(&sum_to(b.view(), &[2, 3]), &[2, 3], &expected);
    let cols: Vec<f64> = (0..3).map(|k| cell(0, k) + cell(1, k)).collect();
    check(&sum_to(b.view(), &[1, 1, 3]), &[1, 1, 3], &cols);
    check(&sum_to(b.view(), &[1, 3]), &[1, 3], &cols);
    let rows: Vec<f64> = (0..4)
        .flat_map(|i| (0..2).map(move |j| (0..3).map(|k| (i * 6 + j * 3 + k) as f64).sum::<f64>()))
        .collect();
    check(&sum_to(b.view(), &[4, 2, 1]), &[4, 2, 1], &rows);
    let firsts: Vec<f64> = (0..4).map(|i| rows[2 * i] + rows[2 * i + 1]).collect();
    check(&sum_to(b.view(), &[4, 1, 1]), &[4, 1, 1], &firsts);
    let mid: Vec<f64> = (0..4)
        .flat_map(|i| (0..3).map(move |k| (0..2).map(|j| (i * 6 + j * 3 + k) as f64).sum::<f64>()))
        .collect();
    check(&sum_to(b.view(), &[4, 1, 3]), &[4, 1, 3], &mid);
    check(&sum_to(arr(&[1], &[2.5]).view(), &[]), &[], &[2.5]);
    check(&sum_to(arr(&[], &[2.5]).view(), &[]), &[], &[2.5]);
    let row = arr(&[3], &[1.0, 2.0, 3.0]);
    check(
        &sum_to(row.broadcast(IxDyn(&[4, 3])).expect("expand"), &[3]),
        &[3],
        &[4.0, 8.0, 12.0],
    );
}

#[test]
fn max_dim_values_indices_ties_and_nan() {
    let a = arr(&[2, 3], &[1.0, 5.0, 5.0, 7.0, -1.0, 7.0]);
    let (v, i) = max_dim(a.view(), 1, false);
    check(&v, &[2], &[5.0, 7.0]);
    assert_standard(&i);
    assert_eq!(i.as_slice(), Some(&[1usize, 0][..]));
    let (v, i) = max_dim(a.view(), 0, true);
    check(&v, &[1, 3], &[7.0, 5.0, 7.0]);
    assert_eq!(i.shape(), &[1, 3]);
    assert_eq!(i.as_slice(), Some(&[1usize, 0, 1][..]));
    let n = arr(&[2, 3], &[1.0, f64::NAN, 9.0, f64::NAN, 2.0, f64::NAN]);
    let (v, i) = max_dim(n.view(), 1, false);
    check(&v, &[2], &[f64::NAN, f64::NAN]);
    assert_eq!(i.as_slice(), Some(&[1usize, 0][..]));
    let (v, i) = max_dim(n.view(), 0, false);
    check(&v, &[3], &[f64::NAN, f64::NAN, f64::NAN]);
    assert_eq!(i.as_slice(), Some(&[1usize, 0, 1][..]));
    let (v, i) = max_dim(a.t(), 0, false); // same as dim 1 of a
    check(&v, &[2], &[5.0, 7.0]);
    assert_eq!(i.as_slice(), Some(&[1usize, 0][..]));
    let (v, i) = max_dim(arr(&[0, 3], &[]).view(), 1, false);
    assert_eq!((v.shape(), i.shape()), (&[0][..], &[0][..]));
    let (v, i) = max_dim(arr(&[1], &[4.0]).view(), 0, false);
    check(&v, &[], &[4.0]);
    assert_eq!(i.first(), Some(&0));
}

#[test]
fn softmax_rows_sum_to_one_and_are_stable() {
    let a = arr(&[2, 3], &[1.0, 2.0, 3.0, 1000.0, 1000.0, 1001.0]);
    let sm = softmax(a.view(), 1);
    let (e, z) = (1f64.exp(), 1.0 + 1f64.exp() + 2f64.exp());
    let z2 = 2.0 + e;
    check(
        &sm,
        &[2, 3],
        &[1.0 / z, e / z, e * e / z, 1.0 / z2, 1.0 / z2, e / z2],
    );
    let ls = log_softmax(a.view(), 1);
    let (l, l2) = (z.ln(), z2.ln());
    check(&ls, &[2, 3], &[-l, 1.0 - l, 2.0 - l, -l2, -l2, 1.0 - l2]);
    // Over dim 0 (inner > 1) equals the transpose's softmax over dim 1.
    let b = range(&[3, 4]).mapv(|x| (x * 0.7).sin() * 50.0);
    let d0 = softmax(b.view(), 0);
    assert_standard(&d0);
    assert_close(&d0, &softmax(b.t(), 1).t().to_owned(), 1e-15);
    assert_close(
        &log_softmax(b.view(), 0),
        &log_softmax(b.t(), 1).t().to_owned(),
        1e-12,
    );
    assert_close(&d0.sum_axis(Axis(0)), &arr(&[4], &[1.0; 4]), 1e-12);
    assert_close(&log_softmax(b.view(), 0).mapv(f64::exp), &d0, 1e-15);
    // -inf entries get probability 0; f32 stays finite at 1000.
    let c = arr(&[3], &[f64::NEG_INFINITY, 0.0, 0.0]);
    check(&softmax(c.view(), 0), &[3], &[0.0, 0.5, 0.5]);
    let f = ArrayD::from_shape_vec(IxDyn(&[2]), vec![1000.0f32, 1000.0]).expect("shape");
    assert_eq!(softmax(f.view(), 0).as_slice(), Some(&[0.5f32, 0.5][..]));
    check(&softmax(arr(&[0, 2], &[]).view(), 1), &[0, 2], &[]);
}

// --- checks ----------------------------------------------------------------------------------

#[test]
fn nan_and_difference_checks() {
    assert!(!has_nan(range(&[3, 3]).view()));
    assert!(has_nan(arr(&[3], &[1.0, f64::NAN, 2.0]).view()));
    let big = range(&[50, 60]);
    let mut with_nan = big.clone();
    with_nan[[49, 59]] = f64::NAN;
    assert!(has_nan(with_nan.view()));
    assert!(has_nan(with_nan.slice(s![..;7, ..;59]).into_dyn()));
    assert!(!has_nan(with_nan.slice(s![..;2, ..]).into_dyn()));
    assert!(!has_nan(arr(&[0], &[]).view()));
}

// --- determinism across thread counts ----------------------------------------------------------

/// Runs `f` on a private rayon pool of `threads` threads: the kernels split their work over the
/// pool they run on, so this is what `set_num_threads(threads)` would do to them.
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a test pool")
        .install(f)
}

/// The bits of every element, to compare results exactly.
fn bits(a: &ArrayD<f32>) -> Vec<u32> {
    a.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn reductions_give_the_same_bits_whatever_the_thread_count() {
    // Values of very different magnitudes, so any change of summation order changes the bits.
    let (rows, cols) = (1_031, 517);
    let data: Vec<f32> = (0..rows * cols)
        .map(|i| {
            let k = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            (k as f32 / 16_777_216.0 - 0.5) * if i % 7 == 0 { 1e4 } else { 1.0 }
        })
        .collect();
    let a = ArrayD::from_shape_vec(IxDyn(&[rows, cols]), data).expect("shape");
    let run = || {
        (
            sum_all(a.view()).to_bits(),
            bits(&sum_axes(a.view(), &[0], false)),
            bits(&sum_axes(a.view(), &[1], false)),
            bits(&sum_to(a.view(), &[1, cols])),
            bits(&softmax(a.view(), 1)),
            bits(&log_softmax(a.view(), 0)),
        )
    };
    let one = on_threads(1, run);
    for threads in [2, 3, 4, 8] {
        assert!(
            on_threads(threads, run) == one,
            "reductions differ between 1 and {threads} threads"
        );
    }
    // The chunked sum is still accurate: compare with an f64 sum.
    let exact: f64 = a.iter().map(|&x| f64::from(x)).sum();
    let got = f64::from(f32::from_bits(one.0));
    assert!((got - exact).abs() <= 1e-5 * a.iter().map(|x| x.abs() as f64).sum::<f64>());
}
