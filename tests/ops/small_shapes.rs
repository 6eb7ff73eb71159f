//! Every op over 0-dim and size-1 inputs, at first and second order (issue 22, 7: `max_dim` of a
//! 0-dim tensor panicked at second order). Each op runs on a 0-dim input, a `[1]` input and a
//! `[1, 1]` input, checked by `gradcheck` and `gradgradcheck` (f64, finite differences); the
//! output is multiplied by itself first, so that second order sees a non-constant gradient.

use autograd::*;

type Op = fn(&Tensor) -> Result<Tensor>;

/// `(name, op)`: each op of the public `Tensor` API that takes one tensor.
fn ops() -> Vec<(&'static str, Op)> {
    vec![
        ("neg", |x| x.neg()),
        ("exp", |x| x.exp()),
        ("log", |x| x.log()),
        ("sin", |x| x.sin()),
        ("cos", |x| x.cos()),
        ("tanh", |x| x.tanh()),
        ("sigmoid", |x| x.sigmoid()),
        ("relu", |x| x.relu()),
        ("sqrt", |x| x.sqrt()),
        ("abs", |x| x.abs()),
        ("pow", |x| x.pow(3.0)),
        ("reciprocal", |x| x.reciprocal()),
        ("mul_scalar", |x| x.mul_scalar(2.5)),
        ("add_scalar", |x| x.add_scalar(2.5)),
        ("sub_scalar", |x| x.sub_scalar(2.5)),
        ("div_scalar", |x| x.div_scalar(2.5)),
        ("rsub_scalar", |x| x.rsub_scalar(2.5)),
        ("rdiv_scalar", |x| x.rdiv_scalar(2.5)),
        ("add", |x| x.add(&x.exp()?)),
        ("sub", |x| x.sub(&x.exp()?)),
        ("mul", |x| x.mul(&x.exp()?)),
        ("div", |x| x.div(&x.exp()?)),
        ("sum", |x| x.sum()),
        ("mean", |x| x.mean()),
        ("sum_dims", |x| x.sum_dims(&[0], false)),
        ("sum_dims_keepdim", |x| x.sum_dims(&[0], true)),
        ("sum_to_shape", |x| x.sum_to_shape(&[])),
        ("max_dim", |x| Ok(x.max_dim(0, false)?.0)),
        ("max_dim_keepdim", |x| Ok(x.max_dim(0, true)?.0)),
        ("min_dim", |x| Ok(x.min_dim(0, false)?.0)),
        ("max", |x| x.max()),
        ("min", |x| x.min()),
        ("sort", |x| Ok(x.sort(0, true, true)?.0)),
        ("topk", |x| Ok(x.topk(1, -1, true, true)?.0)),
        ("where", |x| {
            Tensor::where_(&x.detach().gt_scalar(0)?, x, &x.exp()?)
        }),
        ("masked_fill", |x| {
            x.masked_fill(&x.detach().lt_scalar(0)?, 2.0)
        }),
        ("gather", |x| {
            let index = Tensor::zeros(x.shape(), DType::I64)?;
            x.gather(0, &index)
        }),
        ("einsum", |x| {
            let v = x.reshape(&[1])?;
            einsum("i,i->", &[&v, &v.exp()?])
        }),
        ("softmax", |x| x.softmax(0)),
        ("log_softmax", |x| x.log_softmax(0)),
        ("reshape", |x| x.reshape(&[1])),
        ("transpose", |x| x.transpose(0, 0)),
        ("permute", |x| {
            x.permute(&(0..x.ndim()).rev().collect::<Vec<_>>())
        }),
        ("expand", |x| {
            let shape: Vec<usize> = std::iter::once(2)
                .chain(x.shape().iter().copied())
                .collect();
            x.expand(&shape)
        }),
        ("copy", |x| x.copy()),
        ("contiguous", |x| x.contiguous()),
        ("cat", |x| {
            let x = if x.ndim() == 0 {
                x.reshape(&[1])?
            } else {
                x.clone()
            };
            Tensor::cat(&[x.clone(), x.exp()?], 0)
        }),
        ("stack", |x| Tensor::stack(&[x.clone(), x.exp()?], 0)),
        ("matmul", |x| {
            let m = x.reshape(&[1, 1])?;
            m.matmul(&m.exp()?)
        }),
        ("narrow", |x| {
            let x = if x.ndim() == 0 {
                x.reshape(&[1])?
            } else {
                x.clone()
            };
            x.narrow(0, 0, 1)
        }),
        ("select", |x| {
            let x = if x.ndim() == 0 {
                x.reshape(&[1])?
            } else {
                x.clone()
            };
            x.select(0, 0)
        }),
        ("split", |x| {
            let x = if x.ndim() == 0 {
                x.reshape(&[1])?
            } else {
                x.clone()
            };
            Ok(x.split(&[1], 0)?.remove(0))
        }),
        ("chunk", |x| {
            let x = if x.ndim() == 0 {
                x.reshape(&[1])?
            } else {
                x.clone()
            };
            Ok(x.chunk(1, 0)?.remove(0))
        }),
        ("index_select", |x| {
            let x = if x.ndim() == 0 {
                x.reshape(&[1])?
            } else {
                x.clone()
            };
            x.index_select(0, &[0, 0])
        }),
        ("inplace_on_view", |x| {
            let b = x.mul_scalar(1.0)?;
            let v = if b.ndim() == 0 {
                b.clone()
            } else {
                b.narrow(0, 0, 1)?
            };
            v.mul_(&x.exp()?)?;
            Ok(b)
        }),
        // ----- shape ops and reductions of issue 35
        ("unsqueeze", |x| x.unsqueeze(-1)),
        ("squeeze", |x| x.squeeze()),
        ("squeeze_dim", |x| x.squeeze_dim(0)),
        ("squeeze_dims", |x| x.squeeze_dims(&[0])),
        ("t", |x| x.t()),
        ("view", |x| x.view(&[-1])),
        ("reshape_infer", |x| x.reshape_infer(&[1, -1])),
        ("flatten", |x| x.flatten(0, -1)),
        ("unflatten", |x| x.flatten(0, -1)?.unflatten(0, &[1, -1])),
        ("expand_as", |x| {
            x.expand_as(&x.unsqueeze(0)?.repeat(&vec![2; x.ndim() + 1])?)
        }),
        ("repeat", |x| x.repeat(&[2, 2, 1])),
        ("flip", |x| x.flip(&[0])),
        ("roll", |x| x.roll(&[1], &[0])),
        ("roll_flat", |x| x.roll(&[1], &[])),
        ("tril", |x| x.reshape(&[1, 1])?.tril(0)),
        ("triu", |x| x.reshape(&[1, 1])?.triu(-1)),
        ("mean_dims", |x| x.mean_dims(&[0], false)),
        ("var_dims", |x| x.var_dims(&[], 0.0, true)),
        ("std_dims", |x| x.std_dims(&[0], 0.0, false)),
        ("prod", |x| x.prod()),
        ("prod_dim", |x| x.prod_dim(0, true)),
        ("cumsum", |x| x.cumsum(0)),
        ("logsumexp", |x| x.logsumexp(&[0], false)),
        ("norm", |x| x.norm()),
        ("norm_dims", |x| x.norm_dims(3.0, &[], true)),
        ("bmm", |x| {
            x.reshape(&[1, 1, 1])?.bmm(&x.reshape(&[1, 1, 1])?.exp()?)
        }),
        ("outer", |x| {
            x.reshape(&[1])?.outer(&x.reshape(&[1])?.exp()?)
        }),
        ("amax", |x| x.amax(&[], false)),
        ("amin", |x| x.amin(&[0], true)),
        // ----- end of issue 35's ops
        // The everyday math ops.
        ("log1p", |x| x.log1p()),
        ("expm1", |x| x.expm1()),
        ("log2", |x| x.log2()),
        ("exp2", |x| x.exp2()),
        ("rsqrt", |x| x.rsqrt()),
        ("softplus", |x| x.softplus(1.0, 20.0)),
        ("silu", |x| x.silu()),
        ("mish", |x| x.mish()),
        ("hardtanh", |x| x.hardtanh(-1.0, 1.0)),
        ("floor", |x| x.floor()?.add(x)),
        ("ceil", |x| x.ceil()?.add(x)),
        ("round", |x| x.round()?.add(x)),
        ("trunc", |x| x.trunc()?.add(x)),
        ("minimum", |x| x.minimum(&x.exp()?)),
        ("maximum", |x| x.maximum(&x.exp()?)),
        ("fmod", |x| x.fmod(&x.exp()?)),
        ("remainder", |x| x.remainder(&x.exp()?)),
        ("fmod_scalar", |x| x.fmod_scalar(0.5)),
        ("remainder_scalar", |x| x.remainder_scalar(-0.5)),
        ("atan2", |x| x.atan2(&x.exp()?)),
    ]
}

#[test]
fn every_op_on_0_dim_and_size_1_inputs_at_first_and_second_order() -> Result<()> {
    for shape in [&[][..], &[1], &[1, 1]] {
        let n = shape.iter().product::<usize>();
        let x = Tensor::from_vec(vec![0.7f64; n], shape)?.requires_grad_(true)?;
        for (name, op) in ops() {
            let f = |i: &[Tensor]| {
                let y = op(&i[0])?;
                y.mul(&y)
            };
            let at = |e: Error| Error::msg(format!("{name} on {shape:?}: {e}"));
            gradcheck(f, std::slice::from_ref(&x)).map_err(at)?;
            gradgradcheck(f, std::slice::from_ref(&x)).map_err(at)?;
        }
    }
    Ok(())
}
