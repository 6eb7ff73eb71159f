//! Runs a [`Plan`] with the library: each op is the public `Tensor` method it names, plus custom
//! ops declared with `#[differentiable]` and a hand-written `#[backward]` (written in tensor ops,
//! so they differentiate again): two out-of-place ones, and four `dirty` ones that write their
//! first input in place.

use autograd::{Result, Tensor, backward, differentiable};

use super::op::{Binary, Fresh, Op, Plan, ScalarOp, Unary, View, ravel, unravel};

/// `x · tanh(x) · a`.
#[differentiable]
fn xtanh(x: &Tensor, a: f64) -> Result<Tensor> {
    x.mul(&x.tanh()?)?.mul_scalar(a)
}

#[backward(xtanh)]
fn xtanh_backward(grad: &Tensor, x: &Tensor, a: f64) -> Result<Tensor> {
    // a · (tanh x + x · (1 - tanh² x))
    let t = x.tanh()?;
    let d = t.add(&x.mul(&t.mul(&t)?.rsub_scalar(1.0)?)?)?;
    grad.mul(&d)?.mul_scalar(a)
}

/// `(x · y, x + sin y)` for tensors of one shape.
#[differentiable]
fn mix(x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.mul(y)?, x.add(&y.sin()?)?))
}

#[backward(mix)]
fn mix_backward(
    grad_0: &Tensor,
    grad_1: &Tensor,
    x: &Tensor,
    y: &Tensor,
) -> Result<(Tensor, Tensor)> {
    Ok((
        grad_0.mul(y)?.add(grad_1)?,
        grad_0.mul(x)?.add(&grad_1.mul(&y.cos()?)?)?,
    ))
}

/// `x += y`, in place (`y` broadcasts to `x`; the engine reduces its gradient to `y`'s shape).
#[differentiable(dirty(x))]
fn add_into_(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.add_(y)?;
    Ok(x.clone())
}

#[backward(add_into_)]
fn add_into_backward(grad: &Tensor) -> (Tensor, Tensor) {
    (grad.clone(), grad.clone())
}

/// `x -= y`, in place.
#[differentiable(dirty(x))]
fn sub_into_(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.sub_(y)?;
    Ok(x.clone())
}

#[backward(sub_into_)]
fn sub_into_backward(grad: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((grad.clone(), grad.neg()?))
}

/// `x *= y`, in place; the backward reads `x` as it was before.
#[differentiable(dirty(x))]
fn mul_into_(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.mul_(y)?;
    Ok(x.clone())
}

#[backward(mul_into_)]
fn mul_into_backward(
    grad: &Tensor,
    #[original] x: &Tensor,
    y: &Tensor,
) -> Result<(Tensor, Tensor)> {
    Ok((grad.mul(y)?, grad.mul(x)?))
}

/// `x /= y`, in place; the backward reads `x` as it was before.
#[differentiable(dirty(x))]
fn div_into_(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.div_(y)?;
    Ok(x.clone())
}

#[backward(div_into_)]
fn div_into_backward(
    grad: &Tensor,
    #[original] x: &Tensor,
    y: &Tensor,
) -> Result<(Tensor, Tensor)> {
    // d(x / y) = dx / y - x dy / y²
    let gx = grad.div(y)?;
    Ok((gx.clone(), gx.mul(x)?.div(y)?.neg()?))
}

/// The leaves of `plan` at the given values, requiring grad (a transposed leaf is built from
/// transposed storage, so it is not contiguous).
pub(crate) fn leaves(plan: &Plan, values: &[Vec<f64>]) -> Result<Vec<Tensor>> {
    plan.leaves
        .iter()
        .zip(values)
        .map(|((shape, _, transposed), data)| {
            let t = if *transposed {
                // Storage in the order of the last two dims swapped, read through a transpose.
                let r = shape.len();
                let mut swapped = shape.clone();
                swapped.swap(r - 2, r - 1);
                let storage = (0..data.len())
                    .map(|i| {
                        let mut idx = unravel(i, &swapped);
                        idx.swap(r - 2, r - 1);
                        data[ravel(&idx, shape)]
                    })
                    .collect();
                Tensor::from_vec(storage, &swapped)?.transpose(r - 2, r - 1)?
            } else {
                Tensor::from_vec(data.clone(), shape)?
            };
            t.requires_grad_(true)
        })
        .collect()
}

fn view(t: &Tensor, v: &View) -> Result<Tensor> {
    match v {
        View::Narrow { dim, start, len } => t.narrow(*dim, *start, *len),
        View::Transpose(d0, d1) => t.transpose(*d0, *d1),
        View::Permute(p) => t.permute(p),
        View::Reshape(s) => t.reshape(s),
    }
}

fn run_op(op: &Op, ins: &[Tensor]) -> Result<Vec<Tensor>> {
    let x = ins.first();
    let x = || x.expect("an input");
    Ok(vec![match op {
        Op::Const { values, shape } => Tensor::from_vec(values.clone(), shape)?,
        Op::Unary(u) => match u {
            Unary::Neg => x().neg()?,
            Unary::Exp => x().exp()?,
            Unary::Log => x().log()?,
            Unary::Sin => x().sin()?,
            Unary::Cos => x().cos()?,
            Unary::Tanh => x().tanh()?,
            Unary::Sigmoid => x().sigmoid()?,
            Unary::Relu => x().relu()?,
            Unary::Sqrt => x().sqrt()?,
            Unary::Abs => x().abs()?,
            Unary::Pow(e) => x().pow(*e)?,
        },
        Op::Binary(b) => match b {
            Binary::Add => ins[0].add(&ins[1])?,
            Binary::Sub => ins[0].sub(&ins[1])?,
            Binary::Mul => ins[0].mul(&ins[1])?,
            Binary::Div => ins[0].div(&ins[1])?,
        },
        Op::Scalar(s, c) => match s {
            ScalarOp::Mul => x().mul_scalar(*c)?,
            ScalarOp::Add => x().add_scalar(*c)?,
            ScalarOp::Sub => x().sub_scalar(*c)?,
            ScalarOp::Rsub => x().rsub_scalar(*c)?,
            ScalarOp::Div => x().div_scalar(*c)?,
            ScalarOp::Rdiv => x().rdiv_scalar(*c)?,
        },
        Op::Sum => x().sum()?,
        Op::Mean => x().mean()?,
        Op::SumDims { dims, keepdim } => x().sum_dims(dims, *keepdim)?,
        Op::MaxDim { dim, keepdim } => x().max_dim(*dim, *keepdim)?.0,
        Op::Softmax { dim, log: false } => x().softmax(*dim)?,
        Op::Softmax { dim, log: true } => x().log_softmax(*dim)?,
        Op::Matmul => ins[0].matmul(&ins[1])?,
        Op::Reshape(s) => x().reshape(s)?,
        Op::Transpose(d0, d1) => x().transpose(*d0, *d1)?,
        Op::Permute(p) => x().permute(p)?,
        Op::Expand(s) => x().expand(s)?,
        Op::Narrow { dim, start, len } => x().narrow(*dim, *start, *len)?,
        Op::IndexSelect { dim, index } => x().index_select(*dim, index)?,
        Op::Cat(dim) => Tensor::cat(ins, *dim)?,
        Op::Stack(dim) => Tensor::stack(ins, *dim)?,
        Op::Split { sizes, dim } => return x().split(sizes, *dim),
        Op::Chunk { chunks, dim } => return x().chunk(*chunks, *dim),
        Op::Copy => x().copy()?,
        Op::Detach => x().detach(),
        Op::InPlace {
            op,
            view: v,
            earlier,
            fresh,
            dirty,
        } => {
            let t = match fresh {
                Fresh::Copy => ins[0].copy()?,
                Fresh::XTanh(a) => xtanh(&ins[0], *a)?,
            };
            // Views taken before the op and read after it: they alias `t`, so they see the new
            // values, and their grad_fn is regenerated over `t`'s new history.
            let earlier = earlier
                .iter()
                .map(|e| view(&t, e))
                .collect::<Result<Vec<_>>>()?;
            let target = match v {
                Some(v) => view(&t, v)?,
                None => t.clone(),
            };
            if *dirty {
                let written = match op {
                    Binary::Add => add_into_(&target, &ins[1])?,
                    Binary::Sub => sub_into_(&target, &ins[1])?,
                    Binary::Mul => mul_into_(&target, &ins[1])?,
                    Binary::Div => div_into_(&target, &ins[1])?,
                };
                assert!(
                    written.is_same(&target),
                    "a dirty input comes back as itself"
                );
            } else {
                match op {
                    Binary::Add => target.add_(&ins[1])?,
                    Binary::Sub => target.sub_(&ins[1])?,
                    Binary::Mul => target.mul_(&ins[1])?,
                    Binary::Div => target.div_(&ins[1])?,
                };
            }
            let mut outs = if v.is_some() {
                vec![t, target]
            } else {
                vec![t]
            };
            outs.extend(earlier);
            return Ok(outs);
        }
        Op::XTanh(a) => xtanh(x(), *a)?,
        Op::Mix => {
            let (p, s) = mix(&ins[0], &ins[1])?;
            return Ok(vec![p, s]);
        }
    }])
}

/// Every value of `plan` (leaves first), computed by the library from `leaves`. With
/// `freeze_detached`, a detached value is a constant: its value at the plan's leaves.
pub(crate) fn forward(
    plan: &Plan,
    leaves: &[Tensor],
    freeze_detached: bool,
) -> Result<Vec<Tensor>> {
    let mut vals: Vec<Tensor> = leaves.to_vec();
    for step in &plan.steps {
        let ins: Vec<Tensor> = step.inputs.iter().map(|&i| vals[i].clone()).collect();
        let outs = match plan.detached.get(&vals.len()) {
            Some(fixed) if freeze_detached => {
                vec![Tensor::from_vec(fixed.clone(), &plan.shapes[vals.len()])?]
            }
            _ => run_op(&step.op, &ins)?,
        };
        assert_eq!(outs.len(), step.outputs, "outputs of {:?}", step.op);
        vals.extend(outs);
    }
    Ok(vals)
}

/// The roots and their weights as tensors (for `grad_outputs`).
pub(crate) fn roots(plan: &Plan, vals: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let mut outs = vec![];
    let mut weights = vec![];
    for (r, w) in &plan.roots {
        outs.push(vals[*r].clone());
        weights.push(Tensor::from_vec(w.clone(), &plan.shapes[*r])?);
    }
    Ok((outs, weights))
}

/// `Σ sum(root · weights)` built from library ops.
pub(crate) fn loss(plan: &Plan, vals: &[Tensor]) -> Result<Tensor> {
    let (outs, weights) = roots(plan, vals)?;
    let mut total: Option<Tensor> = None;
    for (o, w) in outs.iter().zip(&weights) {
        let term = o.mul(w)?.sum()?;
        total = Some(match total {
            Some(t) => t.add(&term)?,
            None => term,
        });
    }
    Ok(total.expect("a plan has at least one root"))
}
