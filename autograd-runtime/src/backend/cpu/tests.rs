//! Helpers shared by the CPU kernel unit tests, and the unit tests of `matmul` (in `matmul.rs`,
//! re-exported by this module).

use ndarray::{ArrayD, ArrayViewD, IxDyn, Zip, s};

use super::*;

/// A standard-layout f64 array of `shape` holding `data`.
pub(super) fn arr(shape: &[usize], data: &[f64]) -> ArrayD<f64> {
    ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).expect("test shape matches data")
}

/// `0, 1, 2, ...` shaped as `shape`.
pub(super) fn range(shape: &[usize]) -> ArrayD<f64> {
    let n = shape.iter().product::<usize>();
    arr(shape, &(0..n).map(|i| i as f64).collect::<Vec<_>>())
}

/// Asserts the caller contract: standard layout, and the raw buffer starts at the first element.
#[track_caller]
pub(super) fn assert_standard<T: Clone>(a: &ArrayD<T>) {
    assert!(
        a.is_standard_layout(),
        "output is not standard layout: {:?}",
        a.strides()
    );
    let (v, offset) = a.clone().into_raw_vec_and_offset();
    assert_eq!(v.len(), a.len());
    if !a.is_empty() {
        assert_eq!(offset, Some(0));
    }
}

/// Asserts `a` is standard layout with the given shape and values (within `1e-12` relative).
#[track_caller]
pub(super) fn check(a: &ArrayD<f64>, shape: &[usize], expected: &[f64]) {
    assert_standard(a);
    assert_eq!(a.shape(), shape);
    for (i, (&x, &e)) in a.iter().zip(expected).enumerate() {
        let ok = x == e || (x.is_nan() && e.is_nan()) || (x - e).abs() <= 1e-12 * e.abs().max(1.0);
        assert!(ok, "element {i}: got {x}, expected {e}\n{a:?}");
    }
    assert_eq!(a.len(), expected.len());
}

/// `max |a - b|` over two arrays of the same shape: 0 when empty, NaN if any difference is NaN.
///
/// # Panics
///
/// If the shapes differ.
pub(super) fn max_abs_diff<T: Element>(a: ArrayViewD<'_, T>, b: ArrayViewD<'_, T>) -> T {
    assert_eq!(a.shape(), b.shape(), "max_abs_diff: shapes differ");
    let step = |m: T, x: T, y: T| {
        let d = (x - y).abs();
        if d > m || d.is_nan() { d } else { m }
    };
    match (a.as_slice(), b.as_slice()) {
        (Some(x), Some(y)) => x.iter().zip(y).fold(T::zero(), |m, (&x, &y)| step(m, x, y)),
        _ => Zip::from(&a)
            .and(&b)
            .fold(T::zero(), |m, &x, &y| step(m, x, y)),
    }
}

/// Asserts two arrays of the same shape agree within `tol`.
#[track_caller]
pub(super) fn assert_close(a: &ArrayD<f64>, b: &ArrayD<f64>, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    let d = max_abs_diff(a.view(), b.view());
    assert!(d <= tol, "max |a - b| = {d}\n{a:?}\n{b:?}");
}

#[test]
fn max_abs_diff_reads_any_layout_and_propagates_nan() {
    let a = range(&[2, 3]);
    let b = arr(&[2, 3], &[0.0, 1.5, 2.0, 3.0, 3.0, 5.0]);
    assert_eq!(max_abs_diff(a.view(), b.view()), 1.0);
    assert_eq!(max_abs_diff(a.t(), b.t()), 1.0);
    assert_eq!(max_abs_diff(a.t(), b.view().reversed_axes()), 1.0);
    assert_eq!(
        max_abs_diff(arr(&[0], &[]).view(), arr(&[0], &[]).view()),
        0.0
    );
    assert!(
        max_abs_diff(
            arr(&[2], &[f64::NAN, 0.0]).view(),
            arr(&[2], &[0.0, 5.0]).view()
        )
        .is_nan()
    );
}

// --- kernels on buffers ------------------------------------------------------------------------

/// A host buffer of `f64`s.
fn buffer(data: &[f64]) -> crate::backend::Buffer {
    crate::backend::Buffer::host::<f64>(crate::backend::ElemVec::from_slice(data))
}

#[test]
fn kernels_run_on_plain_buffers_through_any_layout() -> crate::Result<()> {
    use crate::layout::Layout;
    let a = buffer(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let la = Layout::contiguous(&[2, 3]);
    let row = buffer(&[10.0, 20.0, 30.0]);
    let (sum, shape) = dispatch::binary(BinaryOp::Add, &a, &la, &row, &Layout::contiguous(&[3]))?;
    assert_eq!(&shape[..], &[2, 3]);
    assert_eq!(
        sum.as_slice::<f64>(),
        Some(&[11.0, 22.0, 33.0, 14.0, 25.0, 36.0][..])
    );
    // The transpose is a layout over the same buffer: no tensor, no copy until the kernel.
    let lt = la.transpose(0, 1);
    let (t, shape) = dispatch::contiguous(&a, &lt);
    assert_eq!(&shape[..], &[3, 2]);
    assert_eq!(
        t.as_slice::<f64>(),
        Some(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0][..])
    );
    let (rows, shape) = dispatch::sum_dims(&a, &la, &[1], false);
    assert_eq!(
        (&shape[..], rows.as_slice::<f64>()),
        (&[2][..], Some(&[6.0, 15.0][..]))
    );
    let (y, _) = dispatch::unary(UnaryOp::Neg, &a, &lt.narrow(0, 1, 2));
    assert_eq!(y.as_slice::<f64>(), Some(&[-2.0, -5.0, -3.0, -6.0][..]));
    Ok(())
}

/// `index_select` of a non-float buffer (`any`): whole inner runs picked along `dim`, repeats and
/// any order, through a transposed layout; an empty index gives an empty dimension.
#[test]
fn index_select_of_integers_and_bools_through_any_layout() {
    use crate::layout::Layout;
    let ints = crate::backend::Buffer::host::<i64>(crate::backend::ElemVec::from_slice(&[
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
    ]));
    let l = Layout::contiguous(&[2, 3, 2]);
    let (y, shape) = any::index_select(&ints, &l, 1, &[2, 0, 2]);
    assert_eq!(&shape[..], &[2, 3, 2]);
    let want: &[i64] = &[4, 5, 0, 1, 4, 5, 10, 11, 6, 7, 10, 11];
    assert_eq!(y.as_slice::<i64>(), Some(want));
    // Transposed to [2, 3, 2] -> [3, 2, 2] over dims 0, 1: picks rows of the transpose.
    let lt = l.transpose(0, 1);
    let (y, shape) = any::index_select(&ints, &lt, 0, &[1]);
    assert_eq!(&shape[..], &[1, 2, 2]);
    assert_eq!(y.as_slice::<i64>(), Some(&[2i64, 3, 8, 9][..]));
    let (y, shape) = any::index_select(&ints, &l, 2, &[]);
    assert_eq!(&shape[..], &[2, 3, 0]);
    assert_eq!(y.as_slice::<i64>().map(<[i64]>::len), Some(0));
    let bools = crate::backend::Buffer::host::<bool>(crate::backend::ElemVec::from_slice(&[
        true, false, false, true,
    ]));
    let (y, _) = any::index_select(&bools, &Layout::contiguous(&[2, 2]), 1, &[1, 1, 0]);
    let want: &[bool] = &[false, false, true, true, true, false];
    assert_eq!(y.as_slice::<bool>(), Some(want));
}

#[test]
fn in_place_kernels_write_through_the_target_layout_only() -> crate::Result<()> {
    use crate::layout::Layout;
    let mut d = buffer(&[0.0; 6]);
    let full = Layout::contiguous(&[2, 3]);
    dispatch::fill(&mut d, &full.narrow(1, 1, 2), 1.0);
    assert_eq!(
        d.as_slice::<f64>(),
        Some(&[0.0, 1.0, 1.0, 0.0, 1.0, 1.0][..])
    );
    let col = buffer(&[2.0, 3.0]);
    dispatch::binary_inplace(
        BinaryOp::Add,
        (&mut d, &full),
        (&col, &Layout::contiguous(&[2, 1])),
    )?;
    assert_eq!(
        d.as_slice::<f64>(),
        Some(&[2.0, 3.0, 3.0, 3.0, 4.0, 4.0][..])
    );
    let f32s = crate::backend::Buffer::host::<f32>(crate::backend::ElemVec::from_slice(&[1.0]));
    let err = dispatch::copy_into(
        (&mut d, &full),
        (&f32s, &Layout::contiguous(&[]).expand(&[2, 3])?),
    )
    .unwrap_err();
    assert!(
        matches!(err, crate::Error::DTypeMismatch { op: "copy", .. }),
        "{err}"
    );
    Ok(())
}

// --- matmul ----------------------------------------------------------------------------------

/// Naive `a @ b` for 2-D views.
fn naive_mm(a: ArrayViewD<'_, f64>, b: ArrayViewD<'_, f64>) -> ArrayD<f64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| a[[i, p]] * b[[p, j]]).sum();
        }
    }
    arr(&[m, n], &out)
}

/// Deterministic test matrix with varied values.
fn mat(shape: &[usize], seed: u64) -> ArrayD<f64> {
    randn(shape, seed)
}

#[test]
fn matmul_2d_known_values() {
    let a = arr(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = arr(&[3, 2], &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
    check(
        &matmul(a.view(), b.view()).expect("mm"),
        &[2, 2],
        &[58.0, 64.0, 139.0, 154.0],
    );
    check(
        &matmul(a.view(), a.t()).expect("a a^T"),
        &[2, 2],
        &[14.0, 32.0, 32.0, 77.0],
    );
    check(
        &matmul(arr(&[1, 1], &[3.0]).view(), arr(&[1, 1], &[4.0]).view()).expect("1x1"),
        &[1, 1],
        &[12.0],
    );
}

#[test]
fn matmul_strided_operands_match_naive() {
    for &(m, k, n) in &[
        (37, 53, 29),
        (5, 7, 3),
        (64, 1, 64),
        (1, 300, 1),
        (130, 70, 90),
    ] {
        let a = mat(&[m, k], 1);
        let b = mat(&[k, n], 2);
        let expected = naive_mm(a.view(), b.view());
        let tol = 1e-12 * k as f64;
        assert_close(&matmul(a.view(), b.view()).expect("plain"), &expected, tol);
        let at = a.t().to_owned(); // [k, m] contiguous; at.t() is a transposed view of a
        let bt = b.t().to_owned();
        let out = matmul(at.t(), bt.t()).expect("transposed");
        assert_standard(&out);
        assert_close(&out, &expected, tol);
        // Negative and non-unit strides.
        let a_rev = a.slice(s![..;-1, ..]).to_owned();
        let out = matmul(a_rev.slice(s![..;-1, ..]).into_dyn(), b.view()).expect("reversed");
        assert_close(&out, &expected, tol);
        let wide = mat(&[k, 2 * n], 3);
        let strided = wide.slice(s![.., ..;2]).into_dyn();
        assert_close(
            &matmul(a.view(), strided.clone()).expect("step"),
            &naive_mm(a.view(), strided),
            tol,
        );
    }
    // Stride-0 (broadcast) operands.
    let row = mat(&[16], 4);
    let a = row.broadcast(IxDyn(&[8, 16])).expect("expand");
    let b = mat(&[16, 12], 5);
    assert_close(
        &matmul(a.clone(), b.view()).expect("broadcast lhs"),
        &naive_mm(a, b.view()),
        1e-12,
    );
    // f32 through gemm.
    let a32 = randn::<f32>(&[33, 65], 6);
    let b32 = randn::<f32>(&[65, 17], 7);
    let out = matmul(a32.view(), b32.t().to_owned().t()).expect("f32");
    let expected = naive_mm(a32.mapv(f64::from).view(), b32.mapv(f64::from).view());
    assert_close(&out.mapv(f64::from), &expected, 1e-4);
}

#[test]
fn matmul_batched_broadcast_matches_naive() {
    let a = mat(&[2, 1, 3, 4], 10);
    let b = mat(&[3, 4, 5], 11);
    let out = matmul(a.view(), b.view()).expect("batched");
    assert_standard(&out);
    assert_eq!(out.shape(), &[2, 3, 3, 5]);
    for i in 0..2 {
        for j in 0..3 {
            let expected = naive_mm(
                a.slice(s![i, 0, .., ..]).into_dyn(),
                b.slice(s![j, .., ..]).into_dyn(),
            );
            assert_close(
                &out.slice(s![i, j, .., ..]).to_owned().into_dyn(),
                &expected,
                1e-12,
            );
        }
    }
    // Batched lhs times a matrix folds into one product; transposed batch also works.
    let a = mat(&[2, 3, 4, 5], 12);
    let b = mat(&[5, 6], 13);
    let out = matmul(a.view(), b.view()).expect("folded");
    let out_t = matmul(a.view(), b.t().to_owned().t()).expect("folded, transposed rhs");
    let a_perm = a.view().permuted_axes(IxDyn(&[1, 0, 2, 3])).to_owned();
    let out_p =
        matmul(a_perm.view().permuted_axes(IxDyn(&[1, 0, 2, 3])), b.view()).expect("strided");
    for i in 0..2 {
        for j in 0..3 {
            let expected = naive_mm(a.slice(s![i, j, .., ..]).into_dyn(), b.view());
            for o in [&out, &out_t, &out_p] {
                assert_close(
                    &o.slice(s![i, j, .., ..]).to_owned().into_dyn(),
                    &expected,
                    1e-12,
                );
            }
        }
    }
    // Batched rhs with a plain lhs, and [1, m, k] @ [b, k, n].
    let a = mat(&[1, 4, 3], 14);
    let b = mat(&[2, 3, 2], 15);
    let out = matmul(a.view(), b.view()).expect("rhs batch");
    for j in 0..2 {
        let expected = naive_mm(
            a.slice(s![0, .., ..]).into_dyn(),
            b.slice(s![j, .., ..]).into_dyn(),
        );
        assert_close(
            &out.slice(s![j, .., ..]).to_owned().into_dyn(),
            &expected,
            1e-12,
        );
    }
    let err = matmul(mat(&[2, 3, 4], 1).view(), mat(&[3, 4, 5], 2).view()).expect_err("2 vs 3");
    assert_eq!(
        err,
        BroadcastError {
            size_a: 2,
            size_b: 3,
            dim: 0
        }
    );
}

#[test]
fn matmul_vectors_and_empty() {
    let v = arr(&[3], &[1.0, 2.0, 3.0]);
    check(&matmul(v.view(), v.view()).expect("dot"), &[], &[14.0]);
    let m = range(&[3, 2]);
    check(
        &matmul(v.view(), m.view()).expect("vec @ mat"),
        &[2],
        &[16.0, 22.0],
    );
    check(
        &matmul(m.t(), v.view()).expect("mat @ vec"),
        &[2],
        &[16.0, 22.0],
    );
    let batch = range(&[2, 2, 3]);
    check(
        &matmul(batch.view(), v.view()).expect("batch @ vec"),
        &[2, 2],
        &[8.0, 26.0, 44.0, 62.0],
    );
    check(
        &matmul(arr(&[2, 0], &[]).view(), arr(&[0, 3], &[]).view()).expect("k = 0"),
        &[2, 3],
        &[0.0; 6],
    );
    check(
        &matmul(arr(&[0, 4], &[]).view(), range(&[4, 3]).view()).expect("m = 0"),
        &[0, 3],
        &[],
    );
    check(
        &matmul(range(&[0, 2, 4]).view(), range(&[4, 3]).view()).expect("batch 0"),
        &[0, 2, 3],
        &[],
    );
}

/// `matmul` cuts large products into a grid of blocks for the intra-op threads; the bits must not
/// depend on how many threads there are (so not on the cut), for cuts by columns, by rows and
/// both (ragged edges included), transposed operands, a batched product and both dtypes, and
/// must match the naive product. `k > 512` is where `gemm` steps through the depth differently
/// for blocks of at most 64 x 64, which the cut must avoid.
#[test]
fn matmul_bits_do_not_depend_on_the_thread_count() {
    let on = |threads: usize, f: &(dyn Fn() -> Vec<u64> + Sync)| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a test pool")
            .install(f)
    };
    // (m, k, n): wide (cut by columns), tall (by rows), ragged sizes (2 x 3, 2 x 4 and 5 x 3
    // blocks on 7, 8 and 16 threads), 64 rows with k > 512 (blocks of at most 64 x 64 would
    // change the sums: 8 x 2 blocks of 8 x ~100 on 16 threads), and ragged 2 x 2 blocks with
    // k > 512.
    let shapes = [
        (40, 70, 300),
        (300, 50, 40),
        (97, 129, 131),
        (64, 600, 200),
        (198, 520, 26),
    ];
    for (m, k, n) in shapes {
        let a = mat(&[m, k], 1);
        let b = mat(&[k, n], 2);
        let at = mat(&[k, m], 3);
        let expected = naive_mm(a.view(), b.view());
        let f64_bits = || {
            let plain = matmul(a.view(), b.view()).expect("mm");
            assert_close(&plain, &expected, 1e-9);
            let transposed = matmul(at.t(), b.view()).expect("at^T @ b");
            plain
                .iter()
                .chain(transposed.iter())
                .map(|x| x.to_bits())
                .collect()
        };
        let a32 = a.mapv(|x| x as f32);
        let b32 = b.mapv(|x| x as f32);
        let batched = mat(&[3, m, k], 4).mapv(|x| x as f32);
        let f32_bits = || {
            let plain = matmul(a32.view(), b32.view()).expect("mm f32");
            let batch = matmul(batched.view(), b32.view()).expect("batched f32");
            plain
                .iter()
                .chain(batch.iter())
                .map(|x| u64::from(x.to_bits()))
                .collect()
        };
        let (want64, want32) = (on(1, &f64_bits), on(1, &f32_bits));
        for threads in [2, 3, 4, 5, 7, 8, 16] {
            assert!(
                on(threads, &f64_bits) == want64,
                "f64 {m}x{k}x{n}: bits differ with {threads} threads"
            );
            assert!(
                on(threads, &f32_bits) == want32,
                "f32 {m}x{k}x{n}: bits differ with {threads} threads"
            );
        }
    }
}
