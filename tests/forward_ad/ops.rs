//! Tangents through the ops: for each op, the tangent forward mode computes equals the
//! Jacobian-vector product two independent ways: a central finite difference of the op in f64,
//! and `functional::jvp` (reverse mode, the double-vjp trick).

use autograd::functional::{self, Options};
use autograd::nn::functional as F;
use autograd::{DType, Result, Tensor, forward_ad};

pub(crate) type Op = fn(&[Tensor]) -> Result<Tensor>;

/// Checks op `f` at `inputs` along random tangents.
pub(crate) fn check(name: &str, f: Op, inputs: &[Tensor]) -> Result<()> {
    let tangents: Vec<Tensor> = inputs
        .iter()
        .map(|x| Tensor::randn(x.shape(), DType::F64))
        .collect::<Result<_>>()?;
    let forward = {
        let _serial = crate::serial();
        let _level = forward_ad::dual_level()?;
        let duals: Vec<Tensor> = inputs
            .iter()
            .zip(&tangents)
            .map(|(x, t)| forward_ad::make_dual(x, t))
            .collect::<Result<_>>()?;
        let y = f(&duals)?;
        let u = forward_ad::unpack_dual(&y)?;
        u.tangent
            .unwrap_or_else(|| panic!("{name}: no tangent"))
            .to_vec::<f64>()?
    };
    // Central difference along the tangents.
    let eps = 1e-6;
    let shifted = |sign: f64| -> Result<Vec<f64>> {
        let xs: Vec<Tensor> = inputs
            .iter()
            .zip(&tangents)
            .map(|(x, t)| x.add(&t.mul_scalar(sign * eps)?))
            .collect::<Result<_>>()?;
        f(&xs)?.to_vec::<f64>()
    };
    let (plus, minus) = (shifted(1.0)?, shifted(-1.0)?);
    // Reverse mode.
    let (_, reverse) = functional::jvp(
        |xs: &[Tensor]| f(xs),
        &inputs.to_vec(),
        Some(&tangents),
        Options::new(),
    )?;
    let reverse = reverse[0].to_vec::<f64>()?;
    assert_eq!(forward.len(), reverse.len(), "{name}: tangent size");
    for (i, ((fw, rv), (p, m))) in forward
        .iter()
        .zip(&reverse)
        .zip(plus.iter().zip(&minus))
        .enumerate()
    {
        let fd = (p - m) / (2.0 * eps);
        assert!(
            (fw - rv).abs() <= 1e-10 * (1.0 + rv.abs()),
            "{name}[{i}]: forward {fw} vs reverse {rv}"
        );
        assert!(
            (fw - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
            "{name}[{i}]: forward {fw} vs finite difference {fd}"
        );
    }
    Ok(())
}

fn randn(shape: &[usize]) -> Result<Tensor> {
    Tensor::randn(shape, DType::F64)
}

/// Positive values away from 0 (for log, sqrt, pow, division).
fn positive(shape: &[usize]) -> Result<Tensor> {
    Tensor::rand(shape, DType::F64)?.add_scalar(0.5)
}

#[test]
fn elementwise_unary_ops() -> Result<()> {
    autograd::manual_seed(0);
    let x = randn(&[3, 4])?;
    let p = positive(&[3, 4])?;
    let cases: [(&str, Op, &Tensor); 22] = [
        ("exp", |x| x[0].exp(), &x),
        ("log", |x| x[0].log(), &p),
        ("sin", |x| x[0].sin(), &x),
        ("cos", |x| x[0].cos(), &x),
        ("tanh", |x| x[0].tanh(), &x),
        ("sigmoid", |x| x[0].sigmoid(), &x),
        ("relu", |x| x[0].relu(), &x),
        ("sqrt", |x| x[0].sqrt(), &p),
        ("abs", |x| x[0].abs(), &x),
        ("neg", |x| x[0].neg(), &x),
        ("pow", |x| x[0].pow(3.0), &x),
        ("reciprocal", |x| x[0].reciprocal(), &p),
        ("log1p", |x| x[0].log1p(), &p),
        ("expm1", |x| x[0].expm1(), &x),
        ("rsqrt", |x| x[0].rsqrt(), &p),
        ("silu", |x| x[0].silu(), &x),
        ("mish", |x| x[0].mish(), &x),
        ("erf", |x| x[0].erf(), &x),
        ("softplus", |x| x[0].softplus(1.0, 20.0), &x),
        ("clamp", |x| x[0].clamp(Some(-0.5), Some(0.5)), &x),
        (
            "gelu",
            |x| F::gelu(&x[0], autograd::nn::GeluApproximate::None),
            &x,
        ),
        (
            "scalars",
            |x| x[0].mul_scalar(3.0)?.add_scalar(1.0)?.rdiv_scalar(2.0),
            &p,
        ),
    ];
    for (name, f, input) in cases {
        check(name, f, std::slice::from_ref(input))?;
    }
    Ok(())
}

#[test]
fn binary_ops_with_broadcasting() -> Result<()> {
    autograd::manual_seed(1);
    let a = randn(&[3, 4])?;
    let b = randn(&[4])?;
    let pb = positive(&[3, 1])?;
    let cases: [(&str, Op, [&Tensor; 2]); 8] = [
        ("add", |x| x[0].add(&x[1]), [&a, &b]),
        ("sub", |x| x[0].sub(&x[1]), [&a, &b]),
        ("mul", |x| x[0].mul(&x[1]), [&a, &b]),
        ("div", |x| x[0].div(&x[1]), [&a, &pb]),
        ("maximum", |x| x[0].maximum(&x[1]), [&a, &b]),
        ("atan2", |x| x[0].atan2(&x[1]), [&a, &pb]),
        (
            "where",
            |x| Tensor::where_(&x[0].gt_scalar(0.0)?, &x[0], &x[1]),
            [&a, &b],
        ),
        ("matmul", |x| x[0].matmul(&x[1].unsqueeze(1)?), [&a, &b]),
    ];
    for (name, f, inputs) in cases {
        let inputs: Vec<Tensor> = inputs.into_iter().cloned().collect();
        check(name, f, &inputs)?;
    }
    Ok(())
}

#[test]
fn reductions_and_normalisations() -> Result<()> {
    autograd::manual_seed(2);
    let x = randn(&[3, 5])?;
    let cases: [(&str, Op); 14] = [
        ("sum", |x| x[0].sum()),
        ("mean", |x| x[0].mean()),
        ("sum_dims", |x| x[0].sum_dims(&[1], true)),
        ("mean_dims", |x| x[0].mean_dims(&[0], false)),
        ("var", |x| x[0].var_dims(&[1], 1.0, false)),
        ("std", |x| x[0].std_dims(&[0], 0.0, true)),
        ("prod", |x| x[0].prod_dim(1, false)),
        ("cumsum", |x| x[0].cumsum(1)),
        ("logsumexp", |x| x[0].logsumexp(&[1], false)),
        ("norm", |x| x[0].norm()),
        ("softmax", |x| x[0].softmax(1)),
        ("log_softmax", |x| x[0].log_softmax(0)),
        ("amax", |x| x[0].amax(&[1], false)),
        ("layer_norm", |x| {
            F::layer_norm(&x[0], &[5], None, None, 1e-5)
        }),
    ];
    for (name, f) in cases {
        check(name, f, std::slice::from_ref(&x))?;
    }
    Ok(())
}

#[test]
fn shape_and_selection_ops() -> Result<()> {
    autograd::manual_seed(3);
    let x = randn(&[2, 3, 4])?;
    let cases: [(&str, Op); 16] = [
        ("transpose", |x| x[0].transpose(0, 2)),
        ("permute", |x| x[0].permute(&[1, 2, 0])),
        ("reshape", |x| x[0].reshape(&[6, 4])),
        ("narrow", |x| x[0].narrow(2, 1, 2)),
        ("select", |x| x[0].select(1, 2)),
        ("expand", |x| x[0].unsqueeze(0)?.expand(&[2, 2, 3, 4])),
        ("flip", |x| x[0].flip(&[1])),
        ("roll", |x| x[0].roll(&[1], &[2])),
        ("repeat", |x| x[0].repeat(&[1, 2, 1])),
        ("tril", |x| x[0].tril(0)),
        ("index_select", |x| x[0].index_select(2, &[3, 0, 0])),
        ("cat", |x| Tensor::cat(&[x[0].clone(), x[0].exp()?], 1)),
        ("stack", |x| Tensor::stack(&[x[0].clone(), x[0].sin()?], 0)),
        ("max_dim", |x| Ok(x[0].max_dim(2, false)?.0)),
        ("sort", |x| Ok(x[0].sort(1, true, false)?.0)),
        ("gather", |x| {
            let idx = Tensor::from_vec(vec![0i64, 2, 1, 1, 0, 2, 2, 2], &[2, 1, 4])?;
            x[0].gather(1, &idx)
        }),
    ];
    for (name, f) in cases {
        check(name, f, std::slice::from_ref(&x))?;
    }
    Ok(())
}

#[test]
fn layers() -> Result<()> {
    autograd::manual_seed(4);
    let input = randn(&[2, 3, 5, 5])?;
    let weight = randn(&[4, 3, 3, 3])?;
    let bias = randn(&[4])?;
    check(
        "conv2d",
        |x| F::conv2d(&x[0], &x[1], Some(&x[2]), 1, 1, 1, 1),
        &[input, weight, bias],
    )?;
    let q = randn(&[2, 3, 4])?;
    let k = randn(&[2, 5, 4])?;
    let v = randn(&[2, 5, 4])?;
    check(
        "scaled_dot_product_attention",
        |x| F::scaled_dot_product_attention(&x[0], &x[1], &x[2], None, 0.0, false, None),
        &[q, k, v],
    )?;
    let (input, target) = (randn(&[4, 6])?, randn(&[4, 6])?);
    check(
        "mse_loss",
        |x| F::mse_loss(&x[0], &x[1], F::Reduction::Mean),
        &[input, target],
    )?;
    Ok(())
}
