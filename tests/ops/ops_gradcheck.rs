//! First and second derivatives of every op against finite differences (`gradcheck` and
//! `gradgradcheck`, f64), including broadcasting pairs and non-contiguous inputs, plus
//! property tests over random shapes and checks that gradcheck catches wrong gradients.
//!
//! Each case `name` expands to two tests, `name::gradcheck` and `name::gradgradcheck`.

use autograd::__private::{Backward, GradVec, record_node, smallvec};
use autograd::*;
use proptest::prelude::*;

type R = Result<()>;

/// Deterministic values in [-1.5, -0.2] ∪ [0.2, 1.5]: away from the kinks of relu/abs.
fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed ^ 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            let m = 0.2 + 1.3 * ((u * 2.0) % 1.0);
            if u < 0.5 { -m } else { m }
        })
        .collect()
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// A leaf requiring grad, values away from 0.
fn arg(shape: &[usize], seed: u64) -> Tensor {
    Tensor::from_vec(data(numel(shape), seed), shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

/// A leaf requiring grad with positive values in [0.2, 1.5] (for log, sqrt, division, pow).
fn pos(shape: &[usize], seed: u64) -> Tensor {
    let v = data(numel(shape), seed).into_iter().map(f64::abs).collect();
    Tensor::from_vec(v, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

/// A non-contiguous leaf of shape `[r, c]`: a transposed `[c, r]` tensor.
fn nc(r: usize, c: usize, seed: u64) -> Tensor {
    let t = Tensor::from_vec(data(r * c, seed), &[c, r])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    assert!(!t.is_contiguous());
    t.requires_grad_(true).unwrap()
}

macro_rules! op_check {
    ($($name:ident: |$i:ident| $body:expr, [$($input:expr),+ $(,)?];)*) => {$(
        mod $name {
            use super::*;
            fn f($i: &[Tensor]) -> Result<Tensor> {
                $body
            }
            fn inputs() -> Vec<Tensor> {
                vec![$($input),+]
            }
            #[test]
            fn gradcheck() -> R {
                autograd::gradcheck(f, &inputs())
            }
            #[test]
            fn gradgradcheck() -> R {
                autograd::gradgradcheck(f, &inputs())
            }
        }
    )*};
}

op_check! {
    // ----- binary, with broadcasting and non-contiguous operands -----
    add_same_shape: |i| i[0].add(&i[1]), [arg(&[2, 3], 1), arg(&[2, 3], 2)];
    add_broadcast_row: |i| i[0].add(&i[1]), [arg(&[2, 3], 3), arg(&[3], 4)];
    add_broadcast_outer: |i| i[0].add(&i[1]), [arg(&[3, 1], 5), arg(&[1, 4], 6)];
    add_zero_dim: |i| i[0].add(&i[1]), [arg(&[2, 3], 7), arg(&[], 8)];
    add_non_contiguous: |i| i[0].add(&i[1]), [nc(2, 3, 9), arg(&[3], 10)];
    sub_broadcast_row: |i| i[0].sub(&i[1]), [arg(&[2, 3], 11), arg(&[3], 12)];
    sub_broadcast_outer: |i| i[0].sub(&i[1]), [arg(&[3, 1], 13), arg(&[1, 4], 14)];
    mul_same_shape: |i| i[0].mul(&i[1]), [arg(&[2, 3], 15), arg(&[2, 3], 16)];
    mul_broadcast_row: |i| i[0].mul(&i[1]), [arg(&[2, 3], 17), arg(&[3], 18)];
    mul_broadcast_outer: |i| i[0].mul(&i[1]), [arg(&[3, 1], 19), arg(&[1, 4], 20)];
    mul_non_contiguous: |i| i[0].mul(&i[1]), [nc(2, 3, 21), nc(2, 3, 22)];
    mul_self: |i| i[0].mul(&i[0]), [arg(&[2, 3], 23)];
    div_broadcast_row: |i| i[0].div(&i[1]), [arg(&[2, 3], 24), pos(&[3], 25)];
    div_broadcast_outer: |i| i[0].div(&i[1]), [pos(&[3, 1], 26), pos(&[1, 4], 27)];
    div_non_contiguous: |i| i[0].div(&i[1]), [nc(2, 3, 28), pos(&[2, 3], 29)];

    // ----- unary -----
    neg: |i| i[0].neg(), [arg(&[2, 3], 30)];
    pow_2: |i| i[0].pow(2.0), [arg(&[2, 3], 31)];
    pow_3: |i| i[0].pow(3.0), [arg(&[2, 3], 32)];
    pow_half: |i| i[0].pow(0.5), [pos(&[2, 3], 33)];
    pow_negative: |i| i[0].pow(-1.5), [pos(&[2, 3], 34)];
    pow_zero: |i| i[0].pow(0.0), [arg(&[2, 3], 35)];
    exp: |i| i[0].exp(), [arg(&[2, 3], 36)];
    log: |i| i[0].log(), [pos(&[2, 3], 37)];
    sin: |i| i[0].sin(), [arg(&[2, 3], 38)];
    cos: |i| i[0].cos(), [arg(&[2, 3], 39)];
    tanh: |i| i[0].tanh(), [arg(&[2, 3], 40)];
    sigmoid: |i| i[0].sigmoid(), [arg(&[2, 3], 41)];
    relu: |i| i[0].relu(), [arg(&[2, 3], 42)];
    sqrt: |i| i[0].sqrt(), [pos(&[2, 3], 43)];
    abs: |i| i[0].abs(), [arg(&[2, 3], 44)];
    unary_non_contiguous: |i| i[0].exp()?.mul(&i[0].sin()?)?.add(&i[0].tanh()?), [nc(3, 2, 45)];
    log_sqrt_non_contiguous: |i| i[0].abs()?.log()?.add(&i[0].abs()?.sqrt()?), [nc(2, 3, 46)];

    // ----- scalar ops -----
    mul_scalar: |i| i[0].mul_scalar(-2.5), [arg(&[2, 3], 47)];
    add_scalar: |i| i[0].add_scalar(1.5)?.pow(2.0), [arg(&[2, 3], 48)];
    sub_scalar: |i| i[0].sub_scalar(0.5)?.pow(2.0), [arg(&[2, 3], 49)];
    div_scalar: |i| i[0].div_scalar(4.0)?.exp(), [arg(&[2, 3], 50)];
    rsub_scalar: |i| i[0].rsub_scalar(2.0)?.pow(3.0), [arg(&[2, 3], 51)];
    rdiv_scalar: |i| i[0].rdiv_scalar(3.0), [pos(&[2, 3], 52)];

    // ----- matmul -----
    matmul_2d: |i| i[0].matmul(&i[1]), [arg(&[2, 3], 53), arg(&[3, 4], 54)];
    matmul_non_contiguous: |i| i[0].matmul(&i[1]), [nc(2, 3, 55), nc(3, 4, 56)];
    matmul_batched: |i| i[0].matmul(&i[1]), [arg(&[2, 2, 3], 57), arg(&[2, 3, 2], 58)];
    matmul_batched_with_2d: |i| i[0].matmul(&i[1]), [arg(&[2, 2, 3], 59), arg(&[3, 4], 60)];
    matmul_broadcast_batch_dims: |i| i[0].matmul(&i[1]), [arg(&[2, 1, 2, 3], 61), arg(&[3, 3, 2], 62)];
    matmul_squared: |i| i[0].matmul(&i[0]), [arg(&[3, 3], 63)];

    // ----- reductions -----
    sum: |i| i[0].sum(), [arg(&[2, 3], 64)];
    sum_non_contiguous: |i| i[0].pow(2.0)?.sum(), [nc(2, 3, 65)];
    sum_dims_0: |i| i[0].sum_dims(&[0], false), [arg(&[2, 3], 66)];
    sum_dims_1_keepdim: |i| i[0].sum_dims(&[1], true), [arg(&[2, 3], 67)];
    sum_dims_multi: |i| i[0].sum_dims(&[0, 2], false), [arg(&[2, 3, 2], 68)];
    sum_to_shape: |i| i[0].sum_to_shape(&[3]), [arg(&[2, 3], 69)];
    mean: |i| i[0].mean(), [arg(&[2, 3], 70)];
    mean_squared: |i| i[0].mul(&i[0])?.mean(), [arg(&[2, 2, 2], 71)];

    // ----- shape ops -----
    reshape: |i| i[0].reshape(&[3, 2])?.mul(&i[1]), [arg(&[2, 3], 72), arg(&[3, 2], 73)];
    reshape_non_contiguous: |i| i[0].reshape(&[6])?.pow(2.0), [nc(2, 3, 74)];
    transpose: |i| i[0].transpose(0, 1)?.mul(&i[1]), [arg(&[2, 3], 75), arg(&[3, 2], 76)];
    permute: |i| i[0].permute(&[2, 0, 1])?.pow(2.0), [arg(&[2, 3, 2], 77)];
    expand_outer: |i| i[0].expand(&[3, 4])?.mul(&i[1]), [arg(&[3, 1], 78), arg(&[3, 4], 79)];
    expand_new_dim: |i| i[0].expand(&[2, 3])?.pow(2.0), [arg(&[3], 80)];
    broadcast_to: |i| i[0].broadcast_to(&[2, 3, 4])?.pow(2.0), [arg(&[3, 1], 81)];
    narrow: |i| i[0].narrow(1, 1, 2)?.pow(2.0), [arg(&[3, 4], 82)];
    chunk: |i| {
        let c = i[0].chunk(3, 1)?;
        c[0].mul(&c[1])?.add(&c[2].sin()?)
    }, [arg(&[2, 6], 83)];
    split: |i| {
        let p = i[0].split(&[2, 3], 1)?;
        Tensor::cat(&[p[1].clone(), p[0].exp()?], 1)
    }, [arg(&[2, 5], 84)];
    cat: |i| Tensor::cat(&[i[0].clone(), i[1].pow(2.0)?], 0), [arg(&[2, 3], 85), nc(2, 3, 86)];
    cat_dim_1: |i| Tensor::cat(&[i[0].clone(), i[1].clone()], 1)?.sin(), [nc(2, 3, 87), arg(&[2, 2], 88)];
    stack: |i| Tensor::stack(&[i[0].clone(), i[1].mul(&i[0])?], 1), [arg(&[2, 3], 89), arg(&[2, 3], 90)];
    copy: |i| i[0].copy()?.pow(2.0), [arg(&[2, 3], 91)];
    contiguous: |i| i[0].contiguous()?.pow(2.0), [nc(2, 3, 92)];

    // ----- masks: `where` and `masked_fill` (the mask comes from the values, fixed by `detach`) -----
    where_broadcast: |i| Tensor::where_(&i[0].detach().gt_scalar(0)?, &i[0], &i[1]),
        [arg(&[2, 3], 96), arg(&[3], 97)];
    where_non_contiguous: |i| Tensor::where_(&i[1].detach().lt_scalar(0.2)?, &i[0].pow(2.0)?, &i[1]),
        [nc(2, 3, 98), arg(&[2, 3], 99)];
    masked_fill: |i| i[0].masked_fill(&i[0].detach().lt_scalar(0)?, 2.0)?.pow(2.0),
        [arg(&[2, 3], 100)];
    // An f32 0-dim constant does not promote f64 operands (PyTorch's result_type).
    mixed_dtype_mul: |i| i[0].mul(&Tensor::scalar(1.5f32))?.mul(&i[1]),
        [arg(&[2, 3], 101), arg(&[2, 3], 102)];

    // ----- a composite -----
    mlp: |i| i[0].matmul(&i[1])?.add(&i[2])?.tanh()?.pow(2.0)?.mean(),
        [arg(&[4, 3], 93), arg(&[3, 2], 94), arg(&[2], 95)];
}

// ----- property tests over random shapes ------------------------------------------------------

fn shape_strategy(min_dims: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..=4, min_dims..=3)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(16)
    }
}

fn ok(r: Result<()>) -> std::result::Result<(), TestCaseError> {
    r.map_err(|e| TestCaseError::fail(e.to_string()))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn prop_unary_chain_gradcheck(shape in shape_strategy(0), seed in any::<u64>()) {
        let x = arg(&shape, seed);
        ok(autograd::gradcheck(|i| i[0].sin()?.mul(&i[0].tanh()?)?.add(&i[0].sigmoid()?), &[x]))?;
    }

    #[test]
    fn prop_unary_chain_gradgradcheck(shape in shape_strategy(0), seed in any::<u64>()) {
        let x = arg(&shape, seed);
        ok(autograd::gradgradcheck(|i| i[0].sin()?.mul(&i[0].exp()?), &[x]))?;
    }

    #[test]
    fn prop_broadcast_binary_gradcheck(
        shape in shape_strategy(1),
        ones in any::<[bool; 3]>(),
        drop in 0usize..=2,
        seed in any::<u64>(),
    ) {
        // b: shape with some dims set to 1 and up to `drop` leading dims removed.
        let mut b_shape: Vec<usize> = shape.iter().zip(ones).map(|(&d, one)| if one { 1 } else { d }).collect();
        b_shape.drain(..drop.min(b_shape.len()));
        let a = arg(&shape, seed);
        let b = pos(&b_shape, seed.wrapping_add(1));
        ok(autograd::gradcheck(
            |i| i[0].mul(&i[1])?.add(&i[1].exp()?)?.div(&i[1])?.sub(&i[0]),
            &[a, b],
        ))?;
    }

    #[test]
    fn prop_reduce_and_shape_ops_gradcheck(
        shape in shape_strategy(1),
        dim in 0usize..3,
        keepdim in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let nd = shape.len();
        let d = dim % nd;
        let x = arg(&shape, seed);
        ok(autograd::gradcheck(
            move |i| {
                let t = i[0].transpose(0, nd - 1)?.pow(2.0)?;
                t.sum_dims(&[d], keepdim)?.exp()?.mean()
            },
            &[x],
        ))?;
    }

    #[test]
    fn prop_matmul_gradcheck(
        batch in prop::collection::vec(1usize..=3, 0..=1),
        (n, k, m) in (1usize..=4, 1usize..=4, 1usize..=4),
        seed in any::<u64>(),
    ) {
        let mut sa = batch.clone();
        sa.extend([n, k]);
        let a = arg(&sa, seed);
        let b = arg(&[k, m], seed.wrapping_add(7));
        ok(autograd::gradcheck(|i| i[0].matmul(&i[1]), &[a, b]))?;
    }
}

// ----- gradcheck must catch wrong gradients ---------------------------------------------------

#[test]
fn gradcheck_fails_on_wrong_gradient() {
    // Analytical d(x * detach(x))/dx = x, numerical = 2x.
    let x = arg(&[3], 200);
    let err = autograd::gradcheck(|i| i[0].mul(&i[0].detach()), &[x]).unwrap_err();
    assert!(err.to_string().contains("Jacobian mismatch"), "{err}");

    // Only part of the input is cut off: still caught.
    let x = arg(&[2, 2], 201);
    let err = autograd::gradcheck(
        |i| i[0].exp()?.add(&i[0].narrow(0, 0, 1)?.detach().sin()?),
        &[x],
    )
    .unwrap_err();
    assert!(err.to_string().contains("Jacobian mismatch"), "{err}");
}

#[test]
fn gradcheck_rejects_non_f64_inputs() {
    let x = Tensor::from_vec(vec![0.5f32, 1.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let err = autograd::gradcheck(|i| i[0].exp(), &[x]).unwrap_err();
    assert!(err.to_string().contains("f64"), "{err}");
}

/// `x³` whose backward gives the right value (3x²·g) from a detached copy of x, so it cannot be
/// differentiated again: first order is right, second order is wrong.
struct CubeBackward {
    x: Tensor,
}

impl Backward for CubeBackward {
    const NAME: &'static str = "CubeBackward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grads[0].clone().expect("materialised");
        Ok(smallvec::smallvec![Some(
            g.mul(&self.x.pow(2.0)?.mul_scalar(3.0)?)?
        )])
    }
}

fn cube_with_detached_backward(i: &[Tensor]) -> Result<Tensor> {
    let x = &i[0];
    let out = x.detach().pow(3.0)?;
    let out = Tensor::from_vec(out.to_vec::<f64>()?, out.shape())?;
    let through = x.mul_scalar(1.0)?; // gives a leaf input a grad_fn to hang the edge on
    if let Some(node) = through.grad_fn() {
        record_node(
            smallvec::smallvec![Some(Edge::new(node, 0))],
            &[&out],
            |_| CubeBackward { x: x.detach() },
        );
    }
    Ok(out)
}

#[test]
fn gradgradcheck_fails_on_wrong_second_derivative() {
    let x = arg(&[3], 202);
    autograd::gradcheck(cube_with_detached_backward, std::slice::from_ref(&x))
        .expect("first order is right");
    let err = autograd::gradgradcheck(cube_with_detached_backward, &[x]).unwrap_err();
    assert!(err.to_string().contains("Jacobian mismatch"), "{err}");
}

/// softmax, log_softmax, index_select and max_dim: first and second derivatives.
mod indexing_and_softmax {
    use autograd::*;

    fn input(shape: &[usize], seed: u64) -> Tensor {
        Tensor::randn_seeded(shape, DType::F64, seed)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    }

    #[test]
    fn softmax_and_log_softmax_pass_gradcheck_and_gradgradcheck() -> Result<()> {
        for dim in [0, 1] {
            let x = input(&[3, 4], 11 + dim as u64);
            gradcheck(
                |i| i[0].softmax(dim)?.mul(&i[0])?.sum_dims(&[0], false),
                &[x.clone()],
            )?;
            gradgradcheck(|i| i[0].softmax(dim), &[x.clone()])?;
            gradcheck(|i| i[0].log_softmax(dim), &[x.clone()])?;
            gradgradcheck(|i| i[0].log_softmax(dim), &[x])?;
        }
        Ok(())
    }

    #[test]
    fn softmax_is_stable_for_large_inputs() -> Result<()> {
        let x = Tensor::from_vec(vec![1000.0f64, 1001.0, 1002.0], &[3])?;
        let y = x.softmax(0)?.to_vec::<f64>()?;
        let e = [(-2f64).exp(), (-1f64).exp(), 1.0];
        let s: f64 = e.iter().sum();
        for (a, b) in y.iter().zip(e) {
            assert!((a - b / s).abs() < 1e-15);
        }
        let l = x.log_softmax(0)?.to_vec::<f64>()?;
        assert!((l[2] + s.ln()).abs() < 1e-12);
        Ok(())
    }

    #[test]
    fn index_select_passes_gradcheck_with_repeated_indices() -> Result<()> {
        let x = input(&[4, 3], 21);
        gradcheck(|i| i[0].index_select(0, &[3, 0, 3]), &[x.clone()])?;
        gradgradcheck(
            |i| i[0].index_select(1, &[2, 2, 1]).and_then(|t| t.mul(&t)),
            &[x],
        )?;
        let t = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
        assert!(t.index_select(0, &[2]).is_err());
        Ok(())
    }

    #[test]
    fn max_dim_routes_the_gradient_to_the_first_maximum() -> Result<()> {
        let x = Tensor::from_vec(vec![3.0f64, 3.0, 1.0, -1.0, 4.0, 4.0], &[2, 3])?
            .requires_grad_(true)?;
        let (v, idx) = x.max_dim(1, true)?;
        assert_eq!(v.shape(), &[2, 1]);
        assert_eq!(idx.to_vec::<i64>()?, vec![0, 1]);
        v.sum()?.backward()?;
        assert_eq!(
            x.grad().unwrap().to_vec::<f64>()?,
            vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        );
        let y = input(&[3, 5], 31);
        gradcheck(|i| Ok(i[0].max_dim(0, false)?.0), &[y.clone()])?;
        gradgradcheck(|i| Ok(i[0].mul(&i[0])?.max_dim(1, false)?.0), &[y])?;
        Ok(())
    }
}
