//! Unit tests of the element-wise kernels: broadcasting, unary, binary, scalar and in-place ops.

use ndarray::{ArrayD, IxDyn, s};

use super::*;
use crate::backend::cpu::tests::{arr, assert_standard, check, range};

// --- broadcasting --------------------------------------------------------------------------

#[test]
fn broadcast_shapes_follow_pytorch() {
    assert_eq!(broadcast_shapes(&[3, 1], &[1, 4]), Ok(vec![3, 4]));
    assert_eq!(broadcast_shapes(&[2, 3], &[3]), Ok(vec![2, 3]));
    assert_eq!(broadcast_shapes(&[], &[2, 1]), Ok(vec![2, 1]));
    assert_eq!(broadcast_shapes(&[0], &[1]), Ok(vec![0]));
    assert_eq!(broadcast_shapes(&[], &[]), Ok(vec![]));
    // Several mismatches: PyTorch compares trailing dims first and names the first it meets
    // (recorded: `zeros(2, 3) + zeros(3, 2)` names dim 1, sizes 3 and 2).
    assert_eq!(
        broadcast_shapes(&[2, 3], &[3, 2]),
        Err(BroadcastError {
            size_a: 3,
            size_b: 2,
            dim: 1
        })
    );
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
        &unary(UnaryOp::Neg, m.t()),
        &[3, 2],
        &[-0.0, -3.0, -1.0, -4.0, -2.0, -5.0],
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
        &binary(BinaryOp::Mul, m.view(), sc.view()).expect("scalar"),
        &[2, 3],
        &[0.0, 2.0, 4.0, 6.0, 8.0, 10.0],
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
        &binary(BinaryOp::Sub, a.view(), b.view()).expect("sub"),
        &[4],
        &[-1.0, f64::NAN, f64::NAN, 1.0],
    );
    check(
        &binary(BinaryOp::Mul, a.view(), b.view()).expect("mul"),
        &[4],
        &[2.0, f64::NAN, f64::NAN, 2.0],
    );
    check(
        &binary(BinaryOp::Div, a.view(), b.view()).expect("div"),
        &[4],
        &[0.5, f64::NAN, f64::NAN, 0.5],
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
        &binary_scalar(BinaryOp::Sub, m.t(), 2.0, true),
        &[2, 2],
        &[2.0, 0.0, 1.0, -1.0],
    );
    check(
        &binary_scalar(BinaryOp::Add, arr(&[], &[-1.0]).view(), 0.5, false),
        &[],
        &[-0.5],
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
        BinaryOp::Add,
        c.slice_mut(s![.., ..;2]).into_dyn(),
        arr(&[1], &[3.0]).view(),
    )
    .expect("slice");
    check(&c, &[2, 4], &[3.0, 1.0, 5.0, 3.0, 7.0, 5.0, 9.0, 7.0]);
    let mut z = arr(&[], &[2.0]);
    binary_inplace(BinaryOp::Mul, z.view_mut(), arr(&[], &[3.0]).view()).expect("0-dim");
    check(&z, &[], &[6.0]);
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
fn fill_writes_through_strided_views() {
    let mut a = arr(&[2, 3], &[0.0, 1.0, 3.0, 6.0, 7.0, 9.0]);
    fill(a.slice_mut(s![.., ..;2]).into_dyn(), -1.0);
    check(&a, &[2, 3], &[-1.0, 1.0, -1.0, -1.0, 7.0, -1.0]);
    let mut z = arr(&[], &[0.0]);
    fill(z.view_mut(), 5.0);
    check(&z, &[], &[5.0]);
}

/// The strided paths gather 256-element blocks lane by lane: shapes whose lanes straddle the
/// blocks (lanes of 37 over 703 elements, a broadcast operand, a strided in-place target) give
/// what the same op gives on standard-layout copies.
#[test]
fn strided_paths_across_block_boundaries() {
    let m = range(&[19, 37]);
    let mt = m.t();
    let dense = mt.as_standard_layout().into_owned();
    let same = |got: &ArrayD<f64>, want: &ArrayD<f64>| {
        assert_eq!(got.shape(), want.shape());
        assert!(got.iter().zip(want.iter()).all(|(a, b)| a == b));
    };
    same(
        &unary(UnaryOp::Exp, mt.view()),
        &unary(UnaryOp::Exp, dense.view()),
    );
    same(
        &binary_scalar(BinaryOp::Sub, mt.view(), 3.0, true),
        &binary_scalar(BinaryOp::Sub, dense.view(), 3.0, true),
    );
    // [37, 19] (strided) * [37, 1] (broadcast along the lanes: not a block layout).
    let col = range(&[37, 1]);
    let col_dense = col
        .broadcast(IxDyn(&[37, 19]))
        .expect("broadcast")
        .to_owned();
    same(
        &binary(BinaryOp::Mul, mt.view(), col.view()).expect("broadcast"),
        &binary(BinaryOp::Mul, dense.view(), col_dense.view()).expect("dense"),
    );
    let mut target = range(&[19, 37]);
    binary_inplace(
        BinaryOp::Add,
        target.view_mut().reversed_axes(),
        dense.view(),
    )
    .expect("in place");
    let want = &range(&[19, 37]) + &dense.t();
    same(&target, &want);
}
