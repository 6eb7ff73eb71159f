//! The dense kernels against the ndarray kernels (the reference): every operand kind, lengths
//! around the grain so chunked and inline runs both show, and the backward formulas
//! against the same formulas written as separate ops.

use ndarray::{ArrayD, IxDyn};

use super::*;
use crate::backend::cpu::elementwise;
use crate::backend::cpu::parallel::GRAIN;

/// `n` values in roughly [-3, 3], all different, none zero.
fn values(n: usize, seed: u64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let x = ((i as u64).wrapping_mul(2_654_435_761).wrapping_add(seed) % 10_007) as f64;
            (x - 5_003.5) / 1_667.0
        })
        .collect()
}

fn arr1(v: &[f64]) -> ArrayD<f64> {
    ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).expect("1-D")
}

/// Lengths on both sides of the inline/chunked boundary and of a SIMD block.
const LENGTHS: [usize; 6] = [0, 1, 17, GRAIN, GRAIN + 1, 3 * GRAIN + 5];

#[test]
fn binary_matches_the_ndarray_kernel_for_every_operand_kind() {
    for n in LENGTHS {
        let (x, y) = (values(n, 1), values(n, 2));
        for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div] {
            let want = elementwise::binary(op, arr1(&x).view().into_dyn(), arr1(&y).view())
                .expect("same shape");
            let got = binary(op, n, Operand::Slice(&x), Operand::Slice(&y));
            assert_eq!(got.len(), n);
            for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                assert!(g == w || (g.is_nan() && w.is_nan()), "{op:?} n={n} at {i}");
            }
            let s = 1.25;
            let left = binary(op, n, Operand::Scalar(s), Operand::Slice(&y));
            let right = binary(op, n, Operand::Slice(&x), Operand::Scalar(s));
            for i in 0..n {
                let (l, r) = (left[i], right[i]);
                let (wl, wr) = match op {
                    BinaryOp::Add => (s + y[i], x[i] + s),
                    BinaryOp::Sub => (s - y[i], x[i] - s),
                    BinaryOp::Mul => (s * y[i], x[i] * s),
                    BinaryOp::Div => (s / y[i], x[i] / s),
                    _ => unreachable!("only the arithmetic ops are listed"),
                };
                assert!(
                    l == wl || (l.is_nan() && wl.is_nan()),
                    "{op:?} scalar left at {i}"
                );
                assert!(
                    r == wr || (r.is_nan() && wr.is_nan()),
                    "{op:?} scalar right at {i}"
                );
            }
        }
        let both = binary(BinaryOp::Mul, n, Operand::Scalar(2.0), Operand::Scalar(3.0));
        assert!(both.len() == n && both.iter().all(|&v| v == 6.0));
    }
}

#[test]
fn block_broadcast_matches_the_ndarray_kernel() {
    // [rows, cols] with a [cols] row (inner == 1) and a [rows, 1] column (inner == cols), on
    // both sides, small and past one grain.
    for (rows, cols) in [(3, 5), (300, 257), (1, 7)] {
        let big = values(rows * cols, 3);
        let row = values(cols, 4);
        let col = values(rows, 5);
        let big_a = ArrayD::from_shape_vec(IxDyn(&[rows, cols]), big.clone()).expect("2-D");
        for (small, shape, layout) in [
            (&row, vec![cols], (cols, 1)),
            (&col, vec![rows, 1], (rows, cols)),
        ] {
            let small_a = ArrayD::from_shape_vec(IxDyn(&shape), small.clone()).expect("small");
            for op in [BinaryOp::Sub, BinaryOp::Div] {
                let want = elementwise::binary(op, big_a.view(), small_a.view()).expect("bc");
                let got = block_binary(op, &big, small, layout, false);
                assert_eq!(got.as_slice(), want.as_slice().expect("standard"), "{op:?}");
                let want = elementwise::binary(op, small_a.view(), big_a.view()).expect("bc");
                let got = block_binary(op, &big, small, layout, true);
                assert_eq!(
                    got.as_slice(),
                    want.as_slice().expect("standard"),
                    "{op:?} swapped"
                );
            }
        }
    }
}

#[test]
fn grad_formulas_match_the_separate_ops() {
    for n in [5, GRAIN + 3] {
        let g = values(n, 6);
        let x = values(n, 7);
        let y: Vec<f64> = x.iter().map(|v| v.tanh()).collect();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-14 * b.abs().max(1.0);
        let check = |op: GradFormula, saved: &[f64], want: &dyn Fn(f64, f64) -> f64| {
            let got = grad_formula(op, n, Operand::Slice(&g), Operand::Slice(saved));
            for i in 0..n {
                let w = want(g[i], saved[i]);
                assert!(close(got[i], w), "{op:?} at {i}: {} vs {w}", got[i]);
            }
            // A gradient expanded from one value (the backward of `sum`).
            let got = grad_formula(op, n, Operand::Scalar(0.5), Operand::Slice(saved));
            for i in 0..n {
                assert!(
                    close(got[i], want(0.5, saved[i])),
                    "{op:?} scalar grad at {i}"
                );
            }
        };
        check(GradFormula::Tanh, &y, &|g, y| g * (1.0 - y * y));
        check(GradFormula::Sigmoid, &y, &|g, y| g * (y * (1.0 - y)));
        check(GradFormula::Relu, &x, &|g, y| {
            if y > 0.0 { g } else { 0.0 }
        });
        check(GradFormula::Sqrt, &y, &|g, y| g / (2.0 * y));
        check(GradFormula::Abs, &x, &|g, x| g * x.signum());
        check(GradFormula::Sin, &x, &|g, x| g * x.cos());
        check(GradFormula::Cos, &x, &|g, x| -g * x.sin());
        check(GradFormula::Pow { exponent: 2.0 }, &x, &|g, x| g * 2.0 * x);
        let pos: Vec<f64> = x.iter().map(|v| v.abs() + 0.5).collect();
        check(GradFormula::Pow { exponent: 2.5 }, &pos, &|g, x| {
            g * 2.5 * x.powf(1.5)
        });
    }
}

#[test]
fn unary_and_pow_match_per_element_results() {
    for n in LENGTHS {
        let x = values(n, 8);
        for op in [
            UnaryOp::Neg,
            UnaryOp::Exp,
            UnaryOp::Tanh,
            UnaryOp::Relu,
            UnaryOp::Abs,
        ] {
            let got = unary(op, &x);
            let want = elementwise::unary(op, arr1(&x).view());
            assert_eq!(
                got.as_slice(),
                want.as_slice().expect("standard"),
                "{op:?} n={n}"
            );
        }
        for e in [0.0, 1.0, 2.0, 3.0, -1.0, 1.7] {
            let pos: Vec<f64> = x.iter().map(|v| v.abs()).collect();
            let got = pow_scalar(&pos, e);
            let want = elementwise::pow_scalar(arr1(&pos).view(), e);
            assert_eq!(
                got.as_slice(),
                want.as_slice().expect("standard"),
                "pow {e} n={n}"
            );
        }
    }
}

#[test]
fn in_place_copy_and_fill() {
    let n = 2 * GRAIN + 9;
    let x = values(n, 9);
    let mut a = x.clone();
    binary_inplace(BinaryOp::Mul, &mut a, Operand::Scalar(2.0));
    assert!(a.iter().zip(&x).all(|(a, x)| *a == 2.0 * x));
    binary_inplace(BinaryOp::Sub, &mut a, Operand::Slice(&x));
    assert_eq!(a, x);
    assert_eq!(copy(&x), x);
    fill(&mut a, 4.0);
    assert!(a.iter().all(|&v| v == 4.0));
}

#[test]
fn a_grad_formula_in_place_equals_one_into_a_new_buffer() {
    let n = GRAIN + 11;
    let g = values(n, 10);
    let y: Vec<f64> = values(n, 11).iter().map(|v| v.tanh()).collect();
    for op in [
        GradFormula::Tanh,
        GradFormula::Sigmoid,
        GradFormula::Relu,
        GradFormula::Sqrt,
        GradFormula::Abs,
        GradFormula::Pow { exponent: 2.0 },
    ] {
        assert!(op.is_closed_form());
        let want = grad_formula(op, n, Operand::Slice(&g), Operand::Slice(&y));
        let mut got = g.clone();
        grad_formula_inplace(op, &mut got, Operand::Slice(&y));
        assert_eq!(got, want, "{op:?}");
    }
    assert!(!GradFormula::Sin.is_closed_form());
    assert!(!GradFormula::Pow { exponent: 3.0 }.is_closed_form());
}
