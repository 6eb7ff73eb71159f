//! Unit tests for the CPU kernels in `cpu.rs` and `matmul.rs`.

use ndarray::{s, ArrayD, ArrayViewD, Axis, IxDyn};

use super::*;

/// A standard-layout f64 array of `shape` holding `data`.
fn arr(shape: &[usize], data: &[f64]) -> ArrayD<f64> {
    ArrayD::from_shape_vec(IxDyn(shape), data.to_vec()).expect("test shape matches data")
}

/// `0, 1, 2, ...` shaped as `shape`.
fn range(shape: &[usize]) -> ArrayD<f64> {
    let n = shape.iter().product::<usize>();
    arr(shape, &(0..n).map(|i| i as f64).collect::<Vec<_>>())
}

/// Asserts the caller contract: standard layout, and the raw buffer starts at the first element.
#[track_caller]
fn assert_standard<T: Clone>(a: &ArrayD<T>) {
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
fn check(a: &ArrayD<f64>, shape: &[usize], expected: &[f64]) {
    assert_standard(a);
    assert_eq!(a.shape(), shape);
    for (i, (&x, &e)) in a.iter().zip(expected).enumerate() {
        let ok = x == e || (x.is_nan() && e.is_nan()) || (x - e).abs() <= 1e-12 * e.abs().max(1.0);
        assert!(ok, "element {i}: got {x}, expected {e}\n{a:?}");
    }
    assert_eq!(a.len(), expected.len());
}

/// Asserts two arrays of the same shape agree within `tol`.
#[track_caller]
fn assert_close(a: &ArrayD<f64>, b: &ArrayD<f64>, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    let d = max_abs_diff(a.view(), b.view());
    assert!(d <= tol, "max |a - b| = {d}\n{a:?}\n{b:?}");
}

// --- broadcasting --------------------------------------------------------------------------

#[test]
fn broadcast_shapes_follow_pytorch() {
    assert_eq!(broadcast_shapes(&[3, 1], &[1, 4]), Ok(vec![3, 4]));
    assert_eq!(broadcast_shapes(&[2, 3], &[3]), Ok(vec![2, 3]));
    assert_eq!(broadcast_shapes(&[], &[2, 1]), Ok(vec![2, 1]));
    assert_eq!(broadcast_shapes(&[0], &[1]), Ok(vec![0]));
    assert_eq!(broadcast_shapes(&[], &[]), Ok(vec![]));
    let err = broadcast_shapes(&[2, 3], &[4]).expect_err("3 vs 4");
    assert_eq!(
        err,
        BroadcastError {
            size_a: 3,
            size_b: 4,
            dim: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "the size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
    );
    let err = broadcast_shapes(&[5, 2, 3], &[4, 3]).expect_err("2 vs 4");
    assert_eq!(
        err,
        BroadcastError {
            size_a: 2,
            size_b: 4,
            dim: 1
        }
    );
    assert_eq!(
        broadcast_shapes(&[0], &[3]),
        Err(BroadcastError {
            size_a: 0,
            size_b: 3,
            dim: 0
        })
    );
}

// --- unary -----------------------------------------------------------------------------------

#[test]
fn unary_ops_known_values() {
    let x = arr(&[4], &[-2.0, -0.5, 0.0, 1.5]);
    let u = |op| unary(op, x.view());
    check(&u(UnaryOp::Neg), &[4], &[2.0, 0.5, 0.0, -1.5]);
    check(&u(UnaryOp::Abs), &[4], &[2.0, 0.5, 0.0, 1.5]);
    check(&u(UnaryOp::Relu), &[4], &[0.0, 0.0, 0.0, 1.5]);
    check(&u(UnaryOp::Sign), &[4], &[-1.0, -1.0, 0.0, 1.0]);
    check(&u(UnaryOp::PositiveMask), &[4], &[0.0, 0.0, 0.0, 1.0]);
    check(&u(UnaryOp::Square), &[4], &[4.0, 0.25, 0.0, 2.25]);
    check(
        &u(UnaryOp::Reciprocal),
        &[4],
        &[-0.5, -2.0, f64::INFINITY, 1.0 / 1.5],
    );
    let e: Vec<f64> = [-2.0f64, -0.5, 0.0, 1.5].iter().map(|v| v.exp()).collect();
    check(&u(UnaryOp::Exp), &[4], &e);
    check(
        &u(UnaryOp::Sin),
        &[4],
        &[(-2.0f64).sin(), (-0.5f64).sin(), 0.0, 1.5f64.sin()],
    );
    check(
        &u(UnaryOp::Cos),
        &[4],
        &[(-2.0f64).cos(), (-0.5f64).cos(), 1.0, 1.5f64.cos()],
    );
    check(
        &u(UnaryOp::Tanh),
        &[4],
        &[(-2.0f64).tanh(), (-0.5f64).tanh(), 0.0, 1.5f64.tanh()],
    );
    let sig: Vec<f64> = [-2.0f64, -0.5, 0.0, 1.5]
        .iter()
        .map(|v| 1.0 / (1.0 + (-v).exp()))
        .collect();
    check(&u(UnaryOp::Sigmoid), &[4], &sig);
    let p = arr(&[3], &[4.0, 1.0, std::f64::consts::E]);
    check(
        &unary(UnaryOp::Sqrt, p.view()),
        &[3],
        &[2.0, 1.0, std::f64::consts::E.sqrt()],
    );
    check(
        &unary(UnaryOp::Log, p.view()),
        &[3],
        &[4.0f64.ln(), 0.0, 1.0],
    );
}

#[test]
fn unary_edge_cases() {
    let x = arr(&[3], &[f64::NAN, -1000.0, 1000.0]);
    check(
        &unary(UnaryOp::Relu, x.view()),
        &[3],
        &[f64::NAN, 0.0, 1000.0],
    );
    check(
        &unary(UnaryOp::Sign, x.view()),
        &[3],
        &[f64::NAN, -1.0, 1.0],
    );
    check(
        &unary(UnaryOp::Sigmoid, x.view()),
        &[3],
        &[f64::NAN, 0.0, 1.0],
    );
    // 0-dim, zero-size and non-contiguous inputs.
    check(&unary(UnaryOp::Neg, arr(&[], &[3.0]).view()), &[], &[-3.0]);
    check(&unary(UnaryOp::Exp, arr(&[0, 3], &[]).view()), &[0, 3], &[]);
    let m = range(&[2, 3]);
    check(
        &unary(UnaryOp::Square, m.t()),
        &[3, 2],
        &[0.0, 9.0, 1.0, 16.0, 4.0, 25.0],
    );
    let sliced = m.slice(s![.., ..;2]).into_dyn();
    check(
        &unary(UnaryOp::Neg, sliced),
        &[2, 2],
        &[0.0, -2.0, -3.0, -5.0],
    );
    let f = ArrayD::from_shape_vec(IxDyn(&[2]), vec![-1.5f32, 2.0]).expect("shape");
    let out = unary(UnaryOp::Abs, f.view());
    assert_standard(&out);
    assert_eq!(out.as_slice(), Some(&[1.5f32, 2.0][..]));
}

#[test]
fn pow_scalar_fast_paths_are_exact() {
    let x = arr(&[4], &[0.0, 3.0, -2.0, 0.1]);
    check(&pow_scalar(x.view(), 0.0), &[4], &[1.0, 1.0, 1.0, 1.0]);
    check(
        &pow_scalar(arr(&[1], &[f64::NAN]).view(), 0.0),
        &[1],
        &[1.0],
    );
    check(&pow_scalar(x.view(), 1.0), &[4], &[0.0, 3.0, -2.0, 0.1]);
    check(
        &pow_scalar(x.view(), 2.0),
        &[4],
        &[0.0, 9.0, 4.0, 0.1 * 0.1],
    );
    check(
        &pow_scalar(x.view(), 3.0),
        &[4],
        &[0.0, 27.0, -8.0, 0.1 * 0.1 * 0.1],
    );
    check(
        &pow_scalar(x.view(), -1.0),
        &[4],
        &[f64::INFINITY, 1.0 / 3.0, -0.5, 10.0],
    );
    check(
        &pow_scalar(x.view(), -2.0),
        &[4],
        &[f64::INFINITY, 1.0 / 9.0, 0.25, 1.0 / 0.010000000000000002],
    );
    let p = arr(&[2], &[4.0, 2.0]);
    check(&pow_scalar(p.view(), 0.5), &[2], &[2.0, 2.0f64.sqrt()]);
    check(
        &pow_scalar(p.view(), -0.5),
        &[2],
        &[0.5, 1.0 / 2.0f64.sqrt()],
    );
    check(&pow_scalar(p.view(), 1.5), &[2], &[8.0, 2.0f64.powf(1.5)]);
    check(
        &pow_scalar(range(&[2, 2]).t(), 2.0),
        &[2, 2],
        &[0.0, 4.0, 1.0, 9.0],
    );
}

// --- binary ----------------------------------------------------------------------------------

#[test]
fn binary_broadcasts_like_pytorch() {
    let col = arr(&[3, 1], &[1.0, 2.0, 3.0]);
    let row = arr(&[1, 4], &[10.0, 20.0, 30.0, 40.0]);
    let out = binary(BinaryOp::Add, col.view(), row.view()).expect("broadcast");
    let expected = [
        11.0, 21.0, 31.0, 41.0, 12.0, 22.0, 32.0, 42.0, 13.0, 23.0, 33.0, 43.0,
    ];
    check(&out, &[3, 4], &expected);

    let m = range(&[2, 3]);
    let bias = arr(&[3], &[1.0, 2.0, 3.0]);
    check(
        &binary(BinaryOp::Add, m.view(), bias.view()).expect("bias"),
        &[2, 3],
        &[1.0, 3.0, 5.0, 4.0, 6.0, 8.0],
    );
    check(
        &binary(BinaryOp::Sub, bias.view(), m.view()).expect("bias left"),
        &[2, 3],
        &[1.0, 1.0, 1.0, -2.0, -2.0, -2.0],
    );
    let c = arr(&[2, 1], &[2.0, 10.0]);
    check(
        &binary(BinaryOp::Mul, m.view(), c.view()).expect("column"),
        &[2, 3],
        &[0.0, 2.0, 4.0, 30.0, 40.0, 50.0],
    );
    check(
        &binary(
            BinaryOp::Div,
            c.view(),
            arr(&[2, 3], &[1.0, 2.0, 4.0, 1.0, 2.0, 4.0]).view(),
        )
        .expect("column left"),
        &[2, 3],
        &[2.0, 1.0, 0.5, 10.0, 5.0, 2.5],
    );
    // Scalar with tensor, both orders, and a small operand with more dims than the big one.
    let sc = arr(&[], &[2.0]);
    check(
        &binary(BinaryOp::Sub, sc.view(), m.view()).expect("scalar"),
        &[2, 3],
        &[2.0, 1.0, 0.0, -1.0, -2.0, -3.0],
    );
    check(
        &binary(BinaryOp::Pow, m.view(), sc.view()).expect("scalar"),
        &[2, 3],
        &[0.0, 1.0, 4.0, 9.0, 16.0, 25.0],
    );
    check(
        &binary(
            BinaryOp::Add,
            arr(&[1, 1, 3], &[1.0, 2.0, 3.0]).view(),
            m.view(),
        )
        .expect("rank"),
        &[1, 2, 3],
        &[1.0, 3.0, 5.0, 4.0, 6.0, 8.0],
    );
    // Middle-axis broadcast takes the generic path.
    let mid = arr(&[2, 1, 2], &[1.0, 2.0, 3.0, 4.0]);
    let out = binary(
        BinaryOp::Mul,
        mid.view(),
        arr(&[3, 1], &[1.0, 10.0, 100.0]).view(),
    )
    .expect("mid");
    check(
        &out,
        &[2, 3, 2],
        &[
            1.0, 2.0, 10.0, 20.0, 100.0, 200.0, 3.0, 4.0, 30.0, 40.0, 300.0, 400.0,
        ],
    );
}

#[test]
fn binary_scalars_empty_and_errors() {
    check(
        &binary(
            BinaryOp::Mul,
            arr(&[], &[3.0]).view(),
            arr(&[], &[4.0]).view(),
        )
        .expect("0-dim"),
        &[],
        &[12.0],
    );
    check(
        &binary(
            BinaryOp::Mul,
            arr(&[1], &[3.0]).view(),
            arr(&[], &[4.0]).view(),
        )
        .expect("[1]*[]"),
        &[1],
        &[12.0],
    );
    check(
        &binary(
            BinaryOp::Add,
            arr(&[1, 1], &[3.0]).view(),
            arr(&[1], &[4.0]).view(),
        )
        .expect("1x1"),
        &[1, 1],
        &[7.0],
    );
    let f = ArrayD::from_shape_vec(IxDyn(&[]), vec![1.5f32]).expect("0-dim");
    let out = binary(BinaryOp::Mul, f.view(), f.view()).expect("0-dim f32");
    assert_standard(&out);
    assert_eq!(out.first(), Some(&2.25f32));
    check(
        &binary(
            BinaryOp::Add,
            arr(&[0, 3], &[]).view(),
            arr(&[3], &[1.0, 2.0, 3.0]).view(),
        )
        .expect("empty"),
        &[0, 3],
        &[],
    );
    check(
        &binary(
            BinaryOp::Add,
            arr(&[0], &[]).view(),
            arr(&[], &[1.0]).view(),
        )
        .expect("empty scalar"),
        &[0],
        &[],
    );
    let err = binary(BinaryOp::Add, range(&[2, 3]).view(), range(&[4]).view()).expect_err("3 vs 4");
    assert_eq!(
        err,
        BroadcastError {
            size_a: 3,
            size_b: 4,
            dim: 1
        }
    );
}

#[test]
fn binary_ops_and_nan() {
    let a = arr(&[4], &[1.0, f64::NAN, 3.0, -1.0]);
    let b = arr(&[4], &[2.0, 0.0, f64::NAN, -2.0]);
    check(
        &binary(BinaryOp::Maximum, a.view(), b.view()).expect("max"),
        &[4],
        &[2.0, f64::NAN, f64::NAN, -1.0],
    );
    check(
        &binary(BinaryOp::Minimum, a.view(), b.view()).expect("min"),
        &[4],
        &[1.0, f64::NAN, f64::NAN, -2.0],
    );
    check(
        &binary(BinaryOp::Div, a.view(), b.view()).expect("div"),
        &[4],
        &[0.5, f64::NAN, f64::NAN, 0.5],
    );
    check(
        &binary(
            BinaryOp::Pow,
            arr(&[2], &[0.0, 2.0]).view(),
            arr(&[2], &[0.0, 10.0]).view(),
        )
        .expect("pow"),
        &[2],
        &[1.0, 1024.0],
    );
}

#[test]
fn binary_non_contiguous_inputs() {
    let m = range(&[3, 2]);
    let n = range(&[2, 3]);
    // m.t() is [[0,2,4],[1,3,5]]
    check(
        &binary(BinaryOp::Add, m.t(), n.view()).expect("t"),
        &[2, 3],
        &[0.0, 3.0, 6.0, 4.0, 7.0, 10.0],
    );
    check(
        &binary(BinaryOp::Mul, n.view(), m.t()).expect("t right"),
        &[2, 3],
        &[0.0, 2.0, 8.0, 3.0, 12.0, 25.0],
    );
    let wide = range(&[2, 6]);
    let strided = wide.slice(s![.., ..;2]).into_dyn(); // [[0,2,4],[6,8,10]]
    check(
        &binary(BinaryOp::Sub, strided.clone(), n.view()).expect("slice"),
        &[2, 3],
        &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    );
    let row = arr(&[3], &[1.0, 2.0, 3.0]);
    let expanded = row.broadcast(IxDyn(&[2, 3])).expect("expand");
    check(
        &binary(BinaryOp::Mul, expanded, strided).expect("expanded"),
        &[2, 3],
        &[0.0, 4.0, 12.0, 6.0, 16.0, 30.0],
    );
    let rev = row.slice(s![..;-1]).into_dyn(); // [3,2,1]
    check(
        &binary(BinaryOp::Sub, n.view(), rev).expect("reversed"),
        &[2, 3],
        &[-3.0, -1.0, 1.0, 0.0, 2.0, 4.0],
    );
}

#[test]
fn binary_scalar_both_sides() {
    let m = range(&[2, 2]);
    check(
        &binary_scalar(BinaryOp::Sub, m.view(), 1.0, false),
        &[2, 2],
        &[-1.0, 0.0, 1.0, 2.0],
    );
    check(
        &binary_scalar(BinaryOp::Sub, m.view(), 1.0, true),
        &[2, 2],
        &[1.0, 0.0, -1.0, -2.0],
    );
    check(
        &binary_scalar(BinaryOp::Div, m.view(), 2.0, true),
        &[2, 2],
        &[f64::INFINITY, 2.0, 1.0, 2.0 / 3.0],
    );
    check(
        &binary_scalar(BinaryOp::Pow, m.t(), 2.0, true),
        &[2, 2],
        &[1.0, 4.0, 2.0, 8.0],
    );
    check(
        &binary_scalar(BinaryOp::Maximum, arr(&[], &[-1.0]).view(), 0.0, false),
        &[],
        &[0.0],
    );
    check(
        &binary_scalar(BinaryOp::Div, arr(&[], &[4.0]).view(), 1.0, true),
        &[],
        &[0.25],
    );
}

#[test]
fn binary_inplace_paths() {
    let mut a = range(&[2, 3]);
    binary_inplace(BinaryOp::Add, a.view_mut(), range(&[2, 3]).view()).expect("same");
    check(&a, &[2, 3], &[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    binary_inplace(
        BinaryOp::Sub,
        a.view_mut(),
        arr(&[3], &[1.0, 1.0, 1.0]).view(),
    )
    .expect("row");
    check(&a, &[2, 3], &[-1.0, 1.0, 3.0, 5.0, 7.0, 9.0]);
    binary_inplace(
        BinaryOp::Mul,
        a.view_mut(),
        arr(&[2, 1], &[2.0, 0.5]).view(),
    )
    .expect("col");
    check(&a, &[2, 3], &[-2.0, 2.0, 6.0, 2.5, 3.5, 4.5]);
    binary_inplace(BinaryOp::Div, a.view_mut(), arr(&[], &[2.0]).view()).expect("scalar");
    check(&a, &[2, 3], &[-1.0, 1.0, 3.0, 1.25, 1.75, 2.25]);
    // Non-contiguous destination and source.
    let mut b = range(&[3, 2]);
    binary_inplace(
        BinaryOp::Add,
        b.view_mut().reversed_axes(),
        range(&[2, 3]).view(),
    )
    .expect("t");
    check(&b, &[3, 2], &[0.0, 4.0, 3.0, 7.0, 6.0, 10.0]);
    let mut c = range(&[2, 4]);
    binary_inplace(
        BinaryOp::Maximum,
        c.slice_mut(s![.., ..;2]).into_dyn(),
        arr(&[1], &[3.0]).view(),
    )
    .expect("slice");
    check(&c, &[2, 4], &[3.0, 1.0, 3.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let mut z = arr(&[], &[2.0]);
    binary_inplace(BinaryOp::Pow, z.view_mut(), arr(&[], &[3.0]).view()).expect("0-dim");
    check(&z, &[], &[8.0]);
    // b may not grow a; a is untouched on error.
    let mut d = range(&[1, 3]);
    let err = binary_inplace(BinaryOp::Add, d.view_mut(), range(&[2, 3]).view()).expect_err("grow");
    assert_eq!(
        err,
        BroadcastError {
            size_a: 1,
            size_b: 2,
            dim: 0
        }
    );
    let err =
        binary_inplace(BinaryOp::Add, d.view_mut(), range(&[1, 1, 3]).view()).expect_err("rank");
    assert_eq!(
        err,
        BroadcastError {
            size_a: 1,
            size_b: 1,
            dim: 0
        }
    );
    let err =
        binary_inplace(BinaryOp::Add, d.view_mut(), range(&[2]).view()).expect_err("mismatch");
    assert_eq!(
        err,
        BroadcastError {
            size_a: 3,
            size_b: 2,
            dim: 1
        }
    );
    check(&d, &[1, 3], &[0.0, 1.0, 2.0]);
}

#[test]
fn scalar_inplace_and_fill() {
    let mut a = range(&[2, 3]);
    binary_scalar_inplace(BinaryOp::Mul, a.view_mut(), 2.0);
    check(&a, &[2, 3], &[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    binary_scalar_inplace(BinaryOp::Sub, a.slice_mut(s![.., 1..]).into_dyn(), 1.0);
    check(&a, &[2, 3], &[0.0, 1.0, 3.0, 6.0, 7.0, 9.0]);
    fill(a.slice_mut(s![.., ..;2]).into_dyn(), -1.0);
    check(&a, &[2, 3], &[-1.0, 1.0, -1.0, -1.0, 7.0, -1.0]);
    let mut z = arr(&[], &[0.0]);
    fill(z.view_mut(), 5.0);
    check(&z, &[], &[5.0]);
}

#[test]
fn where_positive_selects_and_broadcasts() {
    let c = arr(&[4], &[1.0, 0.0, -1.0, f64::NAN]);
    let a = arr(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let b = arr(&[4], &[-1.0, -2.0, -3.0, -4.0]);
    check(
        &where_positive(c.view(), a.view(), b.view()).expect("same"),
        &[4],
        &[1.0, -2.0, -3.0, -4.0],
    );
    let c = arr(&[3, 1], &[1.0, -1.0, 2.0]);
    let a = arr(&[1, 2], &[10.0, 20.0]);
    let out = where_positive(c.view(), a.view(), arr(&[], &[0.0]).view()).expect("broadcast");
    check(&out, &[3, 2], &[10.0, 20.0, 0.0, 0.0, 10.0, 20.0]);
    let err =
        where_positive(range(&[2]).view(), range(&[2]).view(), range(&[3]).view()).expect_err("3");
    assert_eq!(
        err,
        BroadcastError {
            size_a: 2,
            size_b: 3,
            dim: 0
        }
    );
}

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

// --- data movement ---------------------------------------------------------------------------

#[test]
fn to_contiguous_copies_in_logical_order() {
    let a = range(&[2, 3]);
    check(
        &to_contiguous(a.t()),
        &[3, 2],
        &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0],
    );
    check(
        &to_contiguous(a.slice(s![1.., 1..]).into_dyn()),
        &[1, 2],
        &[4.0, 5.0],
    );
    check(&to_contiguous(a.slice(s![1, 2]).into_dyn()), &[], &[5.0]);
    check(&to_contiguous(arr(&[3, 0], &[]).t()), &[0, 3], &[]);
    let row = arr(&[2], &[1.0, 2.0]);
    check(
        &to_contiguous(row.broadcast(IxDyn(&[2, 2])).expect("expand")),
        &[2, 2],
        &[1.0, 2.0, 1.0, 2.0],
    );
}

#[test]
fn index_select_and_index_add() {
    let a = range(&[3, 2]);
    check(
        &index_select(a.view(), 0, &[2, 0, 2]),
        &[3, 2],
        &[4.0, 5.0, 0.0, 1.0, 4.0, 5.0],
    );
    check(&index_select(a.view(), 1, &[1]), &[3, 1], &[1.0, 3.0, 5.0]);
    check(
        &index_select(a.t(), 1, &[2, 1]),
        &[2, 2],
        &[4.0, 2.0, 5.0, 3.0],
    );
    check(&index_select(a.view(), 0, &[]), &[0, 2], &[]);
    let g = arr(&[3, 2], &[1.0, 1.0, 10.0, 10.0, 100.0, 100.0]);
    check(
        &index_add(&[3, 2], 0, &[2, 0, 2], g.view()),
        &[3, 2],
        &[10.0, 10.0, 0.0, 0.0, 101.0, 101.0],
    );
    check(
        &index_add(&[2, 3], 1, &[2, 0, 2], g.t()),
        &[2, 3],
        &[10.0, 0.0, 101.0, 10.0, 0.0, 101.0],
    );
    check(
        &index_add(&[2, 2], 1, &[], arr(&[2, 0], &[]).view()),
        &[2, 2],
        &[0.0; 4],
    );
}

#[test]
#[should_panic(expected = "out of bounds")]
fn index_select_checks_bounds() {
    let _ = index_select(range(&[3, 2]).view(), 0, &[3]);
}

#[test]
fn cat_along_each_dim() {
    let a = range(&[2, 2]);
    let b = arr(&[2, 1], &[9.0, 8.0]);
    check(
        &cat(&[a.view(), b.view()], 1),
        &[2, 3],
        &[0.0, 1.0, 9.0, 2.0, 3.0, 8.0],
    );
    check(
        &cat(&[a.view(), b.t()], 0),
        &[3, 2],
        &[0.0, 1.0, 2.0, 3.0, 9.0, 8.0],
    );
    check(
        &cat(&[a.t(), arr(&[2, 0], &[]).view(), a.view()], 1),
        &[2, 4],
        &[0.0, 2.0, 0.0, 1.0, 1.0, 3.0, 2.0, 3.0],
    );
    check(&cat(&[arr(&[1], &[1.0]).view()], 0), &[1], &[1.0]);
}

#[test]
fn scatter_max_grad_inverts_max_dim() {
    let a = arr(&[2, 3], &[1.0, 5.0, 2.0, 7.0, -1.0, 0.0]);
    let (_, idx) = max_dim(a.view(), 1, true);
    let g = arr(&[2, 1], &[10.0, 20.0]);
    check(
        &scatter_max_grad(&[2, 3], 1, idx.view(), g.view()),
        &[2, 3],
        &[0.0, 10.0, 0.0, 20.0, 0.0, 0.0],
    );
    let (_, idx) = max_dim(a.view(), 0, false);
    let g = arr(&[3], &[1.0, 2.0, 3.0]);
    check(
        &scatter_max_grad(&[2, 3], 0, idx.view(), g.view()),
        &[2, 3],
        &[0.0, 2.0, 3.0, 1.0, 0.0, 0.0],
    );
    let expanded = arr(&[], &[4.0]);
    let g = expanded.broadcast(IxDyn(&[3])).expect("expand");
    check(
        &scatter_max_grad(&[2, 3], 0, idx.view(), g),
        &[2, 3],
        &[0.0, 4.0, 4.0, 4.0, 0.0, 0.0],
    );
}

// --- random numbers and checks ---------------------------------------------------------------

#[test]
fn randn_is_deterministic_and_standard_normal() {
    let a = randn::<f64>(&[100, 100], 42);
    assert_standard(&a);
    assert_eq!(a, randn::<f64>(&[100, 100], 42));
    assert_ne!(a, randn::<f64>(&[100, 100], 43));
    let n = a.len() as f64;
    let mean = a.sum() / n;
    let std = (a.mapv(|x| (x - mean) * (x - mean)).sum() / n).sqrt();
    assert!(mean.abs() < 0.03, "mean {mean}");
    assert!((std - 1.0).abs() < 0.03, "std {std}");
    let within_one = a.iter().filter(|x| x.abs() < 1.0).count() as f64 / n;
    assert!(
        (within_one - 0.6827).abs() < 0.02,
        "P(|x| < 1) = {within_one}"
    );
    let odd = randn::<f32>(&[3], 42);
    let wide = randn::<f64>(&[4], 42);
    for (x, y) in odd.iter().zip(&wide) {
        assert_eq!(*x, *y as f32);
    }
    assert_eq!(randn::<f64>(&[0, 5], 1).shape(), &[0, 5]);
    assert!(randn::<f64>(&[], 1).first().is_some_and(|x| x.is_finite()));
}

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

    let a = range(&[2, 3]);
    let b = arr(&[2, 3], &[0.0, 1.5, 2.0, 3.0, 3.0, 5.0]);
    assert_eq!(max_abs_diff(a.view(), b.view()), 1.0);
    assert_eq!(max_abs_diff(a.t(), b.t()), 1.0);
    assert_eq!(max_abs_diff(a.t(), b.view().reversed_axes()), 1.0);
    assert_eq!(
        max_abs_diff(arr(&[0], &[]).view(), arr(&[0], &[]).view()),
        0.0
    );
    assert!(max_abs_diff(
        arr(&[2], &[f64::NAN, 0.0]).view(),
        arr(&[2], &[0.0, 5.0]).view()
    )
    .is_nan());
}
