//! The `#[jvp]` rules of the structural ops (views, copies, reductions, selections, scatters,
//! in-place ops, `bmm`, convolution's patches), each checked against finite differences and
//! reverse mode (`ops::check`), on non-contiguous inputs too, with one-sided tangents for the
//! ops of several inputs; the tangents of views are views of the input's tangent, in-place ops
//! write into the old tangent, index outputs carry none; and the ops without a forward
//! derivative fail with PyTorch's errors.

use autograd::nn::functional as F;
use autograd::nn::{Forward, Hooked, Linear};
use autograd::{DType, Device, GradOptions, Result, Tensor, forward_ad};

use crate::ops::{Op, check, check_some};

fn randn(shape: &[usize]) -> Result<Tensor> {
    Tensor::randn(shape, DType::F64)
}

fn positive(shape: &[usize]) -> Result<Tensor> {
    Tensor::rand(shape, DType::F64)?.add_scalar(0.5)
}

/// Fixed values of `shape` (the same at every call, for the constants inside a checked op).
fn fixed(shape: &[usize]) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n).map(|i| ((i * 7 + 3) as f64).sin()).collect();
    Tensor::from_vec(values, shape)
}

fn index(values: &[i64], shape: &[usize]) -> Result<Tensor> {
    Tensor::from_vec(values.to_vec(), shape)
}

/// `op`'s backward at `x` applied to `g` (the gradient of `⟨op(x), g⟩` w.r.t. `x`, recorded):
/// with `g` dual, the backward's own ops carry the tangent (forward over reverse).
fn backward_of(op: fn(&Tensor) -> Result<Tensor>, x: &Tensor, g: &Tensor) -> Result<Tensor> {
    let a = x.detach().requires_grad_(true)?;
    let y = op(&a)?;
    let options = GradOptions::new()
        .grad_outputs(vec![Some(g.clone())])
        .create_graph(true);
    let grads = autograd::grad(&[y], &[a], options)?;
    Ok(grads[0].clone().expect("a gradient"))
}

#[test]
fn views_on_contiguous_and_strided_inputs() -> Result<()> {
    autograd::manual_seed(10);
    let contiguous = randn(&[2, 3, 4])?;
    // A permuted primal: `make_dual` keeps the (contiguous) tangent as given, so the views'
    // rules run on a tangent whose layout is not the primal's.
    let strided = randn(&[4, 2, 3])?.permute(&[1, 2, 0])?;
    assert!(!strided.is_contiguous());
    let cases: [(&str, Op); 16] = [
        ("transpose", |x| x[0].transpose(0, 2)),
        ("permute", |x| x[0].permute(&[2, 0, 1])),
        ("expand", |x| x[0].unsqueeze(1)?.expand(&[2, 5, 3, 4])),
        ("narrow", |x| x[0].narrow(2, 1, 2)),
        ("select", |x| x[0].select(1, 2)),
        ("unsqueeze", |x| x[0].unsqueeze(-1)),
        ("squeeze", |x| x[0].narrow(1, 0, 1)?.squeeze()),
        ("squeeze_dim", |x| x[0].narrow(0, 1, 1)?.squeeze_dim(0)),
        ("squeeze_dims", |x| {
            x[0].narrow(0, 1, 1)?.narrow(1, 2, 1)?.squeeze_dims(&[0, 1])
        }),
        ("t", |x| x[0].select(0, 1)?.t()),
        ("reshape", |x| x[0].reshape(&[6, 4])),
        ("reshape_strided", |x| x[0].narrow(2, 1, 1)?.reshape(&[6])),
        ("view", |x| x[0].view(&[2, -1])),
        ("flatten_copy", |x| x[0].transpose(0, 1)?.reshape(&[24])),
        ("chain", |x| {
            x[0].transpose(1, 2)?.narrow(0, 1, 1)?.select(2, 0)?.t()
        }),
        ("contiguous", |x| x[0].transpose(0, 2)?.contiguous()),
    ];
    for (name, f) in cases {
        check(name, f, std::slice::from_ref(&contiguous))?;
        // `view` needs strides that describe the shape, which the permuted input lacks.
        if name != "view" {
            check(name, f, std::slice::from_ref(&strided))?;
        }
    }
    Ok(())
}

#[test]
fn the_tangent_of_a_view_is_a_view_of_the_input_tangent() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let x = forward_ad::make_dual(&fixed(&[2, 3, 4])?, &fixed(&[2, 3, 4])?.mul_scalar(2.0)?)?;
    let xt = forward_ad::unpack_dual(&x)?.tangent.unwrap();
    let views = [
        x.transpose(0, 2)?,
        x.permute(&[1, 2, 0])?,
        x.narrow(1, 1, 2)?,
        x.select(2, 3)?,
        x.unsqueeze(0)?,
        x.narrow(0, 0, 1)?.squeeze()?,
        x.narrow(0, 0, 1)?.squeeze_dim(0)?,
        x.select(0, 0)?.t()?,
        x.reshape(&[6, 4])?,
        x.view(&[4, -1])?,
        x.unsqueeze(1)?.expand(&[2, 3, 3, 4])?,
    ];
    for v in &views {
        let vt = forward_ad::unpack_dual(v)?.tangent.expect("a tangent");
        assert!(vt.is_view() && vt.shares_storage(&xt), "{:?}", v.shape());
        assert_eq!(vt.shape(), v.shape());
        // The same view of the tangent: twice the primal's values.
        let (p, t) = (v.to_vec::<f64>()?, vt.to_vec::<f64>()?);
        assert!(p.iter().zip(&t).all(|(p, t)| *t == 2.0 * p));
    }
    // A copy's tangent is not: writing into it leaves the input's alone.
    let c = x.transpose(0, 1)?.contiguous()?;
    let ct = forward_ad::unpack_dual(&c)?.tangent.unwrap();
    assert!(!ct.shares_storage(&xt));
    Ok(())
}

#[test]
fn copies_and_reorders() -> Result<()> {
    autograd::manual_seed(11);
    let x = randn(&[2, 3, 4])?;
    let strided = randn(&[3, 4, 2])?.permute(&[2, 0, 1])?;
    let cases: [(&str, Op); 9] = [
        ("copy", |x| x[0].copy()),
        ("repeat", |x| x[0].repeat(&[2, 1, 1, 3])),
        ("flip", |x| x[0].flip(&[0, 2])),
        ("roll", |x| x[0].roll(&[1, 3], &[1, 2])),
        ("roll_flat", |x| x[0].roll(&[5], &[])),
        ("tril", |x| x[0].tril(0)),
        ("triu", |x| x[0].triu(-1)),
        ("to_device", |x| {
            x[0].to(Device::Virtual(0))?
                .mul_scalar(3.0)?
                .to(Device::Cpu)
        }),
        ("cumsum", |x| x[0].cumsum(-1)),
    ];
    for (name, f) in cases {
        check(name, f, std::slice::from_ref(&x))?;
        check(name, f, std::slice::from_ref(&strided))?;
    }
    Ok(())
}

#[test]
fn to_dtype_converts_the_tangent() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let t = Tensor::from_vec(vec![0.5f64, -1.25, 3.0], &[3])?;
    let x = forward_ad::make_dual(&Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?, &t)?;
    let y = x.to_dtype(DType::F32)?;
    let yt = forward_ad::unpack_dual(&y)?.tangent.unwrap();
    assert_eq!(yt.dtype(), DType::F32);
    assert_eq!(yt.to_vec::<f32>()?, [0.5, -1.25, 3.0]);
    // A tangent in the target dtype already is copied, not shared.
    let h = forward_ad::make_dual(
        &Tensor::from_vec(vec![1.0f32, 2.0], &[2])?,
        &Tensor::from_vec(vec![1.0f64, -1.0], &[2])?,
    )?;
    let ht = forward_ad::unpack_dual(&h)?.tangent.unwrap();
    let z = h.to_dtype(DType::F64)?;
    let zt = forward_ad::unpack_dual(&z)?.tangent.unwrap();
    assert!(!zt.shares_storage(&ht));
    assert_eq!(zt.to_vec::<f64>()?, [1.0, -1.0]);
    Ok(())
}

#[test]
fn reductions() -> Result<()> {
    autograd::manual_seed(12);
    let x = randn(&[3, 4, 5])?;
    let strided = randn(&[5, 3, 4])?.permute(&[1, 2, 0])?;
    let mut with_zero = randn(&[3, 4, 5])?.to_vec::<f64>()?;
    with_zero[7] = 0.0;
    let with_zero = Tensor::from_vec(with_zero, &[3, 4, 5])?;
    let cases: [(&str, Op); 22] = [
        ("sum", |x| x[0].sum()),
        ("mean", |x| x[0].mean()),
        ("sum_dims", |x| x[0].sum_dims(&[0, 2], false)),
        ("sum_to_shape", |x| x[0].sum_to_shape(&[1, 4, 1])),
        ("mean_dims", |x| x[0].mean_dims(&[-1], true)),
        ("var", |x| x[0].var_dims(&[1], 1.0, false)),
        ("var_all", |x| x[0].var_dims(&[], 0.0, true)),
        ("std", |x| x[0].std_dims(&[0, 2], 1.0, true)),
        ("std_all", |x| x[0].std_dims(&[], 0.0, false)),
        ("prod", |x| x[0].narrow(1, 0, 2)?.prod()),
        ("prod_dim", |x| x[0].prod_dim(2, false)),
        ("prod_dim_keepdim", |x| x[0].prod_dim(0, true)),
        ("logsumexp", |x| x[0].logsumexp(&[1, 2], false)),
        ("logsumexp_keepdim", |x| x[0].logsumexp(&[0], true)),
        ("norm", |x| x[0].norm()),
        ("norm_1", |x| x[0].norm_dims(1.0, &[2], false)),
        ("norm_3", |x| x[0].norm_dims(3.0, &[0, 1], true)),
        ("norm_half", |x| x[0].norm_dims(0.5, &[1], false)),
        ("amax", |x| x[0].amax(&[1], false)),
        ("amin", |x| x[0].amin(&[0, 2], true)),
        ("max", |x| x[0].max()),
        ("min", |x| x[0].min()),
    ];
    for (name, f) in cases {
        check(name, f, std::slice::from_ref(&x))?;
        check(name, f, std::slice::from_ref(&strided))?;
    }
    // `prod` with a zero entry: the product of the others is the derivative there.
    check(
        "prod_zero",
        |x| x[0].prod(),
        std::slice::from_ref(&with_zero),
    )?;
    check(
        "prod_dim_zero",
        |x| x[0].prod_dim(1, false),
        std::slice::from_ref(&with_zero),
    )?;
    Ok(())
}

#[test]
fn extrema_share_their_tangent_among_ties() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    // Rows [1, 3, 3] and [2, 0, 2]: the maxima tie (3, 3 and 2, 2), the minima do not.
    let x = Tensor::from_vec(vec![1.0f64, 3.0, 3.0, 2.0, 0.0, 2.0], &[2, 3])?;
    let t = Tensor::from_vec(vec![10.0f64, 20.0, 40.0, 1.0, 5.0, 3.0], &[2, 3])?;
    let d = forward_ad::make_dual(&x, &t)?;
    let tangent = |y: &Tensor| -> Result<Vec<f64>> {
        forward_ad::unpack_dual(y)?.tangent.unwrap().to_vec::<f64>()
    };
    // PyTorch's amaxamin_jvp and evenly_read_jvp: the mean over the ties.
    assert_eq!(tangent(&d.amax(&[1], false)?)?, [30.0, 2.0]);
    assert_eq!(tangent(&d.amin(&[1], true)?)?, [10.0, 5.0]);
    assert_eq!(tangent(&d.max()?)?, [30.0]);
    assert_eq!(tangent(&d.min()?)?, [5.0]);
    // `max_dim` picks one position (the first), as its indices say.
    assert_eq!(tangent(&d.max_dim(1, false)?.0)?, [20.0, 1.0]);
    Ok(())
}

#[test]
fn selections_and_their_index_outputs() -> Result<()> {
    autograd::manual_seed(13);
    let x = randn(&[3, 4, 5])?;
    let strided = randn(&[5, 3, 4])?.permute(&[1, 2, 0])?;
    let cases: [(&str, Op); 9] = [
        ("sort", |x| Ok(x[0].sort(1, false, true)?.0)),
        ("sort_descending", |x| Ok(x[0].sort(-1, true, false)?.0)),
        ("topk", |x| Ok(x[0].topk(2, 2, true, true)?.0)),
        ("topk_smallest", |x| Ok(x[0].topk(3, 0, false, true)?.0)),
        ("min_dim", |x| Ok(x[0].min_dim(1, false)?.0)),
        ("max_dim", |x| Ok(x[0].max_dim(2, true)?.0)),
        ("index_select", |x| x[0].index_select(2, &[4, 0, 0, 2])),
        ("gather", |x| {
            x[0].gather(1, &index(&[0, 3, 1, 1, 2, 0, 3, 3, 2], &[3, 1, 3])?)
        }),
        ("masked_select", |x| {
            x[0].masked_select(&fixed(&[3, 4, 5])?.gt_scalar(0.0)?)
        }),
    ];
    for (name, f) in cases {
        check(name, f, std::slice::from_ref(&x))?;
        check(name, f, std::slice::from_ref(&strided))?;
    }
    // The index outputs are integer tensors: no tangent.
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&x, &randn(&[3, 4, 5])?)?;
    let outputs = [
        d.sort(1, false, true)?,
        d.topk(2, 2, true, true)?,
        d.min_dim(0, false)?,
        d.max_dim(2, false)?,
    ];
    for (values, indices) in outputs {
        assert_eq!(indices.dtype(), DType::I64);
        assert!(forward_ad::unpack_dual(&indices)?.tangent.is_none());
        assert!(forward_ad::unpack_dual(&values)?.tangent.is_some());
    }
    Ok(())
}

#[test]
fn writes_with_one_sided_tangents() -> Result<()> {
    autograd::manual_seed(14);
    let x = randn(&[3, 4])?;
    let strided = randn(&[4, 3])?.t()?;
    let src = randn(&[2, 4])?;
    let cases: [(&str, Op); 4] = [
        ("scatter", |x| {
            x[0].scatter(0, &index(&[2, 0, 1, 2, 1, 2, 0, 0], &[2, 4])?, &x[1])
        }),
        ("scatter_add", |x| {
            x[0].scatter_add(0, &index(&[2, 0, 1, 2, 2, 2, 0, 0], &[2, 4])?, &x[1])
        }),
        ("index_add", |x| {
            x[0].index_add(0, &index(&[2, 2], &[2])?, &x[1], 0.5)
        }),
        ("masked_scatter", |x| {
            x[0].masked_scatter(&fixed(&[3, 4])?.gt_scalar(0.0)?, &x[1])
        }),
    ];
    for (name, f) in cases {
        for base in [&x, &strided] {
            let inputs = [base.clone(), src.clone()];
            for dual in [[true, true], [true, false], [false, true]] {
                check_some(name, f, &inputs, &dual)?;
            }
        }
    }
    let scatter_value: Op = |x| x[0].scatter_value(1, &index(&[3, 0, 1, 1, 2, 0], &[3, 2])?, 7.5);
    check("scatter_value", scatter_value, std::slice::from_ref(&x))?;
    check(
        "scatter_value",
        scatter_value,
        std::slice::from_ref(&strided),
    )?;
    Ok(())
}

#[test]
fn products() -> Result<()> {
    autograd::manual_seed(15);
    let a = randn(&[2, 3, 4])?;
    let b = randn(&[2, 5, 4])?.transpose(1, 2)?;
    for dual in [[true, true], [true, false], [false, true]] {
        check_some("bmm", |x| x[0].bmm(&x[1]), &[a.clone(), b.clone()], &dual)?;
    }
    // Convolution on the host: `im2col` of the input, the GEMM with the weight
    // (`weight_matmul`); its transpose scatters back with `col2im`.
    let input = randn(&[2, 3, 5, 5])?;
    let weight = randn(&[4, 3, 3, 3])?;
    let conv: Op = |x| F::conv2d(&x[0], &x[1], None, 2, 1, 1, 1);
    for dual in [[true, true], [true, false], [false, true]] {
        check_some("conv2d", conv, &[input.clone(), weight.clone()], &dual)?;
    }
    let grouped: Op = |x| F::conv2d(&x[0], &x[1], None, 1, 0, 2, 2);
    let w2 = randn(&[4, 2, 2, 2])?;
    let x4 = randn(&[1, 4, 6, 6])?;
    check("conv2d_grouped", grouped, &[x4, w2])?;
    let transposed: Op = |x| F::conv_transpose2d(&x[0], &x[1], None, 2, 1, 1, 1, 1);
    let (ti, tw) = (randn(&[2, 3, 4, 4])?, randn(&[3, 2, 3, 3])?);
    for dual in [[true, true], [true, false], [false, true]] {
        check_some(
            "conv_transpose2d",
            transposed,
            &[ti.clone(), tw.clone()],
            &dual,
        )?;
    }
    Ok(())
}

#[test]
fn backward_ops_carry_tangents_forward_over_reverse() -> Result<()> {
    autograd::manual_seed(16);
    let x = randn(&[3, 4, 5])?;
    // How many entries `masked_select` picks: as many as `fixed` has positive values.
    let selected = fixed(&[3, 4, 5])?.gt_scalar(0.0)?.sum()?.item::<i64>()? as usize;
    // Each case: the op's backward at `x[0]`, a function of the incoming gradient `x[1]`, whose
    // tangent goes through the backward's own ops (`narrow_scatter`, `index_add`, ...).
    let cases: [(&str, Op, Vec<usize>); 11] = [
        (
            "narrow_scatter",
            |x| backward_of(|a| a.narrow(1, 1, 2), &x[0], &x[1]),
            vec![3, 2, 5],
        ),
        (
            "select_scatter",
            |x| backward_of(|a| a.select(2, 3), &x[0], &x[1]),
            vec![3, 4],
        ),
        (
            "index_add",
            |x| backward_of(|a| a.index_select(2, &[4, 0, 0]), &x[0], &x[1]),
            vec![3, 4, 3],
        ),
        (
            "scatter_argmax",
            |x| backward_of(|a| Ok(a.max_dim(1, false)?.0), &x[0], &x[1]),
            vec![3, 5],
        ),
        (
            "sort_backward",
            |x| backward_of(|a| Ok(a.sort(2, true, true)?.0), &x[0], &x[1]),
            vec![3, 4, 5],
        ),
        (
            "gather_backward",
            |x| {
                backward_of(
                    |a| a.gather(1, &index(&[0, 3, 3, 1, 0, 2], &[3, 1, 2])?),
                    &x[0],
                    &x[1],
                )
            },
            vec![3, 1, 2],
        ),
        (
            "masked_select_backward",
            |x| {
                backward_of(
                    |a| a.masked_select(&fixed(&[3, 4, 5])?.gt_scalar(0.0)?),
                    &x[0],
                    &x[1],
                )
            },
            vec![selected],
        ),
        (
            "scatter_backward",
            |x| {
                backward_of(
                    |a| {
                        a.scatter(
                            0,
                            &index(&[2, 0, 1, 1, 1, 0, 2, 2, 0, 1], &[2, 5])?,
                            &fixed(&[2, 5])?,
                        )
                    },
                    &x[0].select(1, 0)?,
                    &x[1],
                )
            },
            vec![3, 5],
        ),
        (
            "in_place_on_a_view",
            // `CopySlices`: `as_strided` and `as_strided_scatter` of the gradient.
            |x| {
                backward_of(
                    |a| {
                        let b = a.mul_scalar(1.0)?;
                        b.narrow(1, 1, 2)?.mul_(&fixed(&[3, 2, 5])?)?;
                        Ok(b)
                    },
                    &x[0],
                    &x[1],
                )
            },
            vec![3, 4, 5],
        ),
        (
            "view_after_in_place",
            // A view read after its base changed: its regenerated `AsStridedBackward0`.
            |x| {
                backward_of(
                    |a| {
                        let b = a.mul_scalar(1.0)?;
                        let v = b.narrow(2, 1, 3)?;
                        b.mul_(&fixed(&[3, 4, 5])?)?;
                        v.mul_scalar(2.0)
                    },
                    &x[0],
                    &x[1],
                )
            },
            vec![3, 4, 3],
        ),
        (
            "col2im",
            |x| {
                backward_of(
                    |a| {
                        F::conv2d(
                            &a.narrow(0, 0, 2)?.unsqueeze(0)?,
                            &fixed(&[2, 2, 2, 3])?,
                            None,
                            1,
                            1,
                            1,
                            1,
                        )
                    },
                    &x[0],
                    &x[1],
                )
            },
            vec![1, 2, 5, 5],
        ),
    ];
    for (name, f, g_shape) in cases {
        let inputs = [x.clone(), randn(&g_shape)?];
        check_some(name, f, &inputs, &[false, true])?;
    }
    Ok(())
}

#[test]
fn in_place_ops() -> Result<()> {
    autograd::manual_seed(17);
    let x = randn(&[3, 4])?;
    let other = positive(&[4])?;
    let cases: [(&str, Op); 6] = [
        ("add_", |x| {
            let y = x[0].copy()?;
            y.add_(&x[1])?;
            Ok(y)
        }),
        ("sub_", |x| {
            let y = x[0].copy()?;
            y.sub_(&x[1])?;
            Ok(y)
        }),
        ("div_", |x| {
            let y = x[0].copy()?;
            y.div_(&x[1])?;
            Ok(y)
        }),
        ("mul_", |x| {
            let y = x[0].copy()?;
            y.mul_(&x[1])?;
            Ok(y)
        }),
        ("copy_", |x| {
            let y = x[0].copy()?;
            y.narrow(0, 1, 2)?.copy_(&x[1])?;
            Ok(y)
        }),
        ("div_on_a_view", |x| {
            let y = x[0].mul_scalar(1.0)?;
            y.select(0, 2)?.div_(&x[1])?;
            Ok(y)
        }),
    ];
    for (name, f) in cases {
        for dual in [[true, true], [true, false], [false, true]] {
            check_some(name, f, &[x.clone(), other.clone()], &dual)?;
        }
    }
    let fills: [(&str, Op); 2] = [
        ("fill_", |x| {
            let y = x[0].mul_scalar(2.0)?;
            y.narrow(1, 1, 2)?.fill_(3.0)?;
            Ok(y)
        }),
        ("zero_", |x| {
            let y = x[0].mul_scalar(2.0)?;
            y.select(1, 0)?.zero_()?;
            Ok(y)
        }),
    ];
    for (name, f) in fills {
        check(name, f, std::slice::from_ref(&x))?;
    }
    Ok(())
}

#[test]
fn in_place_ops_write_into_the_old_tangent() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let b = forward_ad::make_dual(
        &Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?,
        &Tensor::from_vec(vec![1.0f64, 1.0, 1.0, 1.0], &[4])?,
    )?;
    let bt = forward_ad::unpack_dual(&b)?.tangent.unwrap();
    let d = forward_ad::make_dual(
        &Tensor::from_vec(vec![2.0f64, 4.0], &[2])?,
        &Tensor::from_vec(vec![1.0f64, -1.0], &[2])?,
    )?;
    // b[1:3] /= d: tangent (ḃ - (b/d)·ḋ) / d = (1 - 1·1) / 2, (1 + 0.75) / 4.
    b.narrow(0, 1, 2)?.div_(&d)?;
    assert_eq!(bt.to_vec::<f64>()?, [1.0, 0.0, 0.4375, 1.0]);
    // b[0:2] = d: d's tangent, written where b's was.
    b.narrow(0, 0, 2)?.copy_(&d)?;
    assert_eq!(bt.to_vec::<f64>()?, [1.0, -1.0, 0.4375, 1.0]);
    b.narrow(0, 3, 1)?.sub_(&d.narrow(0, 0, 1)?)?;
    assert_eq!(bt.to_vec::<f64>()?, [1.0, -1.0, 0.4375, 0.0]);
    b.fill_(2.0)?;
    assert_eq!(bt.to_vec::<f64>()?, [0.0; 4]);
    assert!(forward_ad::unpack_dual(&b)?.tangent.unwrap().is_same(&bt));
    // A plain tensor gets a tangent from a dual operand (broadcast).
    let plain = Tensor::zeros(&[2, 2], DType::F64)?;
    plain.sub_(&d)?;
    let pt = forward_ad::unpack_dual(&plain)?.tangent.unwrap();
    assert_eq!(pt.to_vec::<f64>()?, [-1.0, 1.0, -1.0, 1.0]);
    assert!(!pt.shares_storage(&forward_ad::unpack_dual(&d)?.tangent.unwrap()));
    Ok(())
}

#[test]
fn a_module_with_backward_hooks_has_no_forward_derivative() -> Result<()> {
    // PyTorch's `BackwardHookFunction` is a custom function without `jvp`: a hooked module
    // that records fails on dual inputs; without recording the hook function is not applied.
    autograd::manual_seed(18);
    let layer = Hooked::new(Linear::new(3, 2)?);
    layer.register_full_backward_hook(|_grad_input, _grad_output| Ok(None));
    let x = Tensor::randn(&[3], DType::F32)?;
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&x, &Tensor::ones(&[3], DType::F32)?)?;
    assert_eq!(
        layer.forward(&d).unwrap_err().to_string(),
        "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
    );
    let y = {
        let _no_grad = autograd::no_grad();
        layer.forward(&d)?
    };
    // The tangent of `x Wᵀ + b` along ones: the rows' sums of W.
    let expected = layer
        .inner()
        .weight()
        .sum_dims(&[1], false)?
        .to_vec::<f32>()?;
    let got = forward_ad::unpack_dual(&y)?
        .tangent
        .unwrap()
        .to_vec::<f32>()?;
    assert!(
        got.iter().zip(&expected).all(|(g, e)| (g - e).abs() < 1e-5),
        "{got:?}"
    );
    Ok(())
}

/// The rules of the ops over lists of tensors (`cat`'s `&[Tensor]` input, `split`'s and
/// `chunk`'s `Vec<Tensor>` outputs) and of `max_dim`, which reads its saved positions: against
/// finite differences and reverse mode, with tangents on some of `cat`'s inputs only.
#[test]
fn lists_of_tensors_and_saved_positions() -> Result<()> {
    autograd::manual_seed(15);
    let (a, b, c) = (randn(&[2, 3])?, randn(&[2, 1])?, randn(&[2, 4])?);
    let strided = randn(&[3, 2])?.t()?;
    let cat: Op = |x| Tensor::cat(&[x[0].clone(), x[1].clone(), x[2].clone()], 1);
    let inputs = [a.clone(), b.clone(), c.clone()];
    check("cat", cat, &inputs)?;
    check_some("cat of the middle one", cat, &inputs, &[false, true, false])?;
    check_some("cat of the outer ones", cat, &inputs, &[true, false, true])?;
    check("cat strided", cat, &[strided, b.clone(), c.clone()])?;
    // The legacy rule: a 1-D empty tensor is skipped, its tangent too.
    check(
        "cat with an empty one",
        |x| {
            Tensor::cat(
                &[
                    x[0].clone(),
                    x[1].reshape(&[2])?.narrow(0, 0, 0)?,
                    x[0].exp()?,
                ],
                0,
            )
        },
        &[a.clone(), b.clone()],
    )?;
    let x = randn(&[3, 5, 2])?;
    let cases: [(&str, Op); 6] = [
        ("split first", |x| Ok(x[0].split(&[2, 3], 1)?[0].clone())),
        ("split second", |x| Ok(x[0].split(&[2, 3], 1)?[1].clone())),
        ("split last dim", |x| Ok(x[0].split(&[1, 1], 2)?[1].clone())),
        ("chunk first", |x| Ok(x[0].chunk(2, 1)?[0].clone())),
        ("chunk last", |x| Ok(x[0].chunk(2, 1)?[1].clone())),
        ("max_dim keepdim", |x| Ok(x[0].max_dim(1, true)?.0)),
    ];
    for (name, f) in cases {
        check(name, f, std::slice::from_ref(&x))?;
    }
    // A 0-dim input is its own maximum.
    check(
        "max_dim of a scalar",
        |x| Ok(x[0].max_dim(0, false)?.0),
        &[Tensor::scalar(0.75f64)],
    )?;
    Ok(())
}

/// `split`'s and `chunk`'s tangents are the same views of the input's tangent (PyTorch's
/// `split_with_sizes` of `self_t`): a write into one is seen by the input's.
#[test]
fn split_tangents_are_views_of_the_input_tangent() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let x = forward_ad::make_dual(&fixed(&[2, 5])?, &fixed(&[2, 5])?.mul_scalar(3.0)?)?;
    let xt = forward_ad::unpack_dual(&x)?.tangent.unwrap();
    for parts in [x.split(&[2, 3], 1)?, x.chunk(3, 1)?] {
        for p in &parts {
            let pt = forward_ad::unpack_dual(p)?.tangent.expect("a tangent");
            assert!(pt.is_view() && pt.shares_storage(&xt));
            assert_eq!(pt.shape(), p.shape());
            let (p, t) = (p.to_vec::<f64>()?, pt.to_vec::<f64>()?);
            assert!(p.iter().zip(&t).all(|(p, t)| *t == 3.0 * p));
        }
    }
    // `cat` copies: its tangent is the tangents side by side, zeros where a part has none.
    let plain = Tensor::from_vec(vec![5.0f64, 6.0], &[2, 1])?;
    let joined = Tensor::cat(&[x.narrow(1, 0, 1)?, plain], 1)?;
    let jt = forward_ad::unpack_dual(&joined)?.tangent.unwrap();
    assert!(!jt.shares_storage(&xt));
    let first: Vec<f64> = fixed(&[2, 5])?.narrow(1, 0, 1)?.mul_scalar(3.0)?.to_vec()?;
    assert_eq!(jt.to_vec::<f64>()?, [first[0], 0.0, first[1], 0.0]);
    Ok(())
}

/// `cat`, `split`, `chunk`, `max_dim` and attention's masked softmax compute their tangents by
/// their rules: no backward pass runs (the double-vjp fallback would run one, which the
/// profiler records).
#[test]
fn list_and_saved_value_rules_run_without_a_backward_pass() -> Result<()> {
    autograd::manual_seed(16);
    let x = randn(&[3, 4])?;
    let strided = randn(&[4, 3])?.t()?;
    let mask = Tensor::from_vec(
        vec![
            0.0f64,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            0.0,
            0.25,
        ],
        &[3, 2],
    )?;
    let cases: [(&str, Op, Vec<Tensor>); 6] = [
        (
            "cat",
            |x| Tensor::cat(&[x[0].clone(), x[1].exp()?], 0),
            vec![x.clone(), x.clone()],
        ),
        // A strided primal keeps its contiguous tangent as given: the framework cannot give the
        // parts views of it (`view_tangents`), the rule does.
        (
            "split",
            |x| Ok(x[0].split(&[1, 3], 1)?[1].clone()),
            vec![strided.clone()],
        ),
        (
            "chunk",
            |x| Ok(x[0].chunk(2, 0)?[0].clone()),
            vec![strided.clone()],
        ),
        (
            "max_dim",
            |x| Ok(x[0].max_dim(1, false)?.0),
            vec![x.clone()],
        ),
        (
            "masked softmax",
            |x| {
                let q = x[0].narrow(1, 0, 2)?;
                F::scaled_dot_product_attention(&q, &x[1], &x[1], Some(&x[2]), 0.0, false, None)
            },
            vec![x.clone(), randn(&[2, 2])?, mask.clone()],
        ),
        (
            "max_dim of a scalar",
            |x| Ok(x[0].max_dim(0, true)?.0),
            vec![Tensor::scalar(2.0f64)],
        ),
    ];
    for (name, f, inputs) in cases {
        let _serial = crate::serial();
        let _level = forward_ad::dual_level()?;
        let duals: Vec<Tensor> = inputs
            .iter()
            .map(|x| forward_ad::make_dual(x, &x.ones_like()?))
            .collect::<Result<_>>()?;
        let (y, prof) = autograd::profiler::profile(|| f(&duals));
        let y = y?;
        assert!(forward_ad::unpack_dual(&y)?.tangent.is_some(), "{name}");
        let nodes: Vec<&str> = prof.events().iter().map(|e| e.name.as_str()).collect();
        assert!(nodes.is_empty(), "{name}: a backward pass ran: {nodes:?}");
    }
    Ok(())
}
