//! [`jacobian`] and [`hessian`] (the Jacobian of the recorded gradient).

use super::common::{Checked, some};
use super::common::{autograd_grad, check_outputs, check_requires_grad, postprocess, preprocess};
use super::{Inputs, JacobianOptions, Outputs, Strategy};
use crate::{Error, Result, Tensor, enable_grad};

/// The Jacobian of `func` at `inputs` (`torch.autograd.functional.jacobian`): `result[i][j]`
/// is the derivative of output `i` with respect to input `j`, of shape
/// `outputs[i].shape + inputs[j].shape`; zeros where output `i` does not depend on input `j`.
///
/// One backward pass runs per output element (`retain_graph` between them); with
/// [`vectorize`](JacobianOptions::vectorize), all rows of the identity go to
/// [`grad`](crate::grad) in one call with `is_grads_batched`.
///
/// # Errors
///
/// PyTorch's: in strict mode, "Output i of the user-provided function does not require
/// gradients. ...", "Output i of the user-provided function is independent of input j. ..." and
/// (with `create_graph`) "The jacobian of the user-provided function is independent of input
/// i. ..." (which, as PyTorch's, names the output's index); "... `strict=True` and
/// `vectorized=True` are not supported together. ..."; for [`Strategy::ForwardMode`] (computed
/// with [`forward_ad`](crate::forward_ad), one pass per input element), PyTorch's errors for
/// `create_graph`, `strict` and no `vectorize`; and any error of `func` or of a backward pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{jacobian, JacobianOptions};
/// use autograd_runtime::{Result, Tensor};
/// let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let b = Tensor::scalar(3.0f64);
/// // (a·b, a.sum()): two outputs, two inputs
/// let f = |x: &[Tensor]| -> Result<_> { Ok((x[0].mul(&x[1])?, x[0].sum()?)) };
/// let jac = jacobian(f, &[a, b], JacobianOptions::new())?;
/// assert_eq!(jac[0][0].shape(), &[2, 2]);
/// assert_eq!(jac[0][0].to_vec::<f64>()?, [3.0, 0.0, 0.0, 3.0]); // b·I
/// assert_eq!(jac[0][1].to_vec::<f64>()?, [1.0, 2.0]);           // a
/// assert_eq!(jac[1][0].to_vec::<f64>()?, [1.0, 1.0]);
/// assert_eq!(jac[1][1].item::<f64>()?, 0.0);                     // independent
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn jacobian<F, O, I>(func: F, inputs: &I, options: JacobianOptions) -> Result<Vec<Vec<Tensor>>>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: Outputs,
    I: Inputs + ?Sized,
{
    let JacobianOptions {
        create_graph,
        strict,
        vectorize,
        strategy,
    } = options;
    if strategy == Strategy::ForwardMode {
        check_forward_mode(create_graph, strict, vectorize)?;
        return forward_mode(&func, inputs.tensors());
    }
    let _grad = enable_grad();
    let inputs = preprocess(inputs.tensors(), create_graph, true)?;
    let (outputs, _) = func(&inputs)?.into_tensors();
    check_outputs(&outputs, strict)?;
    if vectorize {
        if strict {
            return Err(Error::msg(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not \
                 supported together. Please either set `strict=False` or `vectorize=False`.",
            ));
        }
        return vectorized(&outputs, &inputs, create_graph);
    }
    let mut jacobian = Vec::with_capacity(outputs.len());
    for (i, out) in outputs.iter().enumerate() {
        let flat = out.reshape(&[out.numel()])?;
        let mut rows: Vec<Vec<Tensor>> = vec![Vec::with_capacity(out.numel()); inputs.len()];
        for j in 0..out.numel() {
            let element = flat.select(0, j)?;
            let vj = autograd_grad(
                &[Some(element)],
                &inputs,
                None,
                create_graph,
                Some(true),
                false,
            )?;
            for (el_idx, (vj_el, inp)) in vj.into_iter().zip(&inputs).enumerate() {
                let row = match vj_el {
                    Some(g) if strict && create_graph && !g.requires_grad() => {
                        // PyTorch's message names the output's index `i` as the input's.
                        return Err(Error::msg(format!(
                            "The jacobian of the user-provided function is independent of input \
                             {i}. This is not allowed in strict mode when create_graph=True."
                        )));
                    }
                    Some(g) => g,
                    None if strict => {
                        return Err(Error::msg(format!(
                            "Output {i} of the user-provided function is independent of input \
                             {el_idx}. This is not allowed in strict mode."
                        )));
                    }
                    None => inp.zeros_like()?,
                };
                rows[el_idx].push(row);
            }
        }
        if out.numel() == 0 {
            // PyTorch stacks the rows of each input's Jacobian: none for an empty output.
            return Err(Error::msg("stack expects a non-empty TensorList"));
        }
        let per_input = rows
            .iter()
            .zip(&inputs)
            .map(|(rows, inp)| {
                Tensor::stack(rows, 0)?.reshape(&[out.shape(), inp.shape()].concat())
            })
            .collect::<Result<Vec<_>>>()?;
        jacobian.push(postprocess(per_input, create_graph));
    }
    Ok(jacobian)
}

/// `vectorize=True` (and `func::jacrev`): the rows of the identity over all output elements as
/// one batch of gradients for the flattened outputs (PyTorch's `_construct_standard_basis_for`), the result
/// split back per output.
pub(crate) fn vectorized(
    outputs: &[Tensor],
    inputs: &[Tensor],
    create_graph: bool,
) -> Result<Vec<Vec<Tensor>>> {
    let numels: Vec<usize> = outputs.iter().map(Tensor::numel).collect();
    let total: usize = numels.iter().sum();
    let mut basis = Vec::with_capacity(outputs.len());
    let mut offset = 0;
    for (out, &numel) in outputs.iter().zip(&numels) {
        let eye = Tensor::eye(total, None, out.dtype())?.to(out.device())?;
        basis.push(Some(eye.narrow(1, offset, numel)?));
        offset += numel;
    }
    let flat = outputs
        .iter()
        .map(|o| o.reshape(&[o.numel()]).map(Some))
        .collect::<Result<Vec<_>>>()?;
    let grads = autograd_grad(&flat, inputs, Some(&basis), create_graph, None, true)?;
    let mut jacobian: Vec<Vec<Tensor>> = vec![Vec::with_capacity(inputs.len()); outputs.len()];
    for (g, inp) in grads.into_iter().zip(inputs) {
        let g = match g {
            Some(g) => g,
            None => inp
                .zeros_like()?
                .expand(&[&[total][..], inp.shape()].concat())?,
        };
        for (k, (part, out)) in g.split(&numels, 0)?.iter().zip(outputs).enumerate() {
            jacobian[k].push(part.reshape(&[out.shape(), inp.shape()].concat())?);
        }
    }
    Ok(jacobian
        .into_iter()
        .map(|row| postprocess(row, create_graph))
        .collect())
}

/// `strategy="forward-mode"`: PyTorch's argument checks, in its order.
fn check_forward_mode(create_graph: bool, strict: bool, vectorize: bool) -> Result<()> {
    if create_graph {
        return Err(Error::msg(
            "torch.autograd.functional.jacobian: `create_graph=True` and \
             `strategy=\"forward-mode\"` are not supported together (yet). Please either set \
             `create_graph=False` or `strategy=\"reverse-mode\"`.",
        ));
    }
    if strict {
        return Err(Error::msg(
            "torch.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"` \
             are not supported together (yet). Please either set `strict=False` or \
             `strategy=\"reverse-mode\"`.",
        ));
    }
    if !vectorize {
        // PyTorch's message, missing space included.
        return Err(Error::msg(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly \
             implemented for `vectorize=True`.",
        ));
    }
    Ok(())
}

/// The Jacobian by forward mode (PyTorch's `_jacfwd`), detached, as with `create_graph=False`.
fn forward_mode<F, O>(func: &F, inputs: &[Tensor]) -> Result<Vec<Vec<Tensor>>>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: Outputs,
{
    let inputs: Vec<Tensor> = inputs.iter().map(Tensor::detach).collect();
    let all: Vec<usize> = (0..inputs.len()).collect();
    let _level = crate::forward_ad::dual_level()?;
    let jac = forward_jacobian(&mut |x| Ok(func(x)?.into_tensors().0), &inputs, &all)?;
    Ok(jac
        .into_iter()
        .map(|row| row.iter().map(Tensor::detach).collect())
        .collect())
}

/// `result[output][k]`, the Jacobian of `func` with respect to `inputs[argnums[k]]` by forward
/// mode: under the dual level the caller opened, one pass per element of each such input with a
/// one-hot tangent on it (every other input a dual with a zero tangent); the output tangents
/// are the Jacobian's columns. The inputs and tangents are used as they are, so a result is
/// recorded where an input requires grad (reverse over forward). Also `func::jacfwd`'s.
pub(crate) fn forward_jacobian(
    func: &mut dyn FnMut(&[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[Tensor],
    argnums: &[usize],
) -> Result<Vec<Vec<Tensor>>> {
    use crate::forward_ad;
    // columns[argnum][element][output]
    let mut columns: Vec<Vec<Vec<Tensor>>> = Vec::with_capacity(argnums.len());
    let mut out_shapes: Option<Vec<Vec<usize>>> = None;
    for &i in argnums {
        let mut per_element = Vec::with_capacity(inputs[i].numel());
        for e in 0..inputs[i].numel() {
            // Every input a fresh dual (zero tangents but on `i`): an in-place op of `func` on
            // an input then writes to this pass's dual, never a tangent onto the caller's tensor
            // that the next pass would find there.
            let duals = inputs
                .iter()
                .enumerate()
                .map(|(k, x)| {
                    let tangent = if k == i {
                        one_hot(x, e)?
                    } else {
                        x.zeros_like()?
                    };
                    forward_ad::make_dual(x, &tangent)
                })
                .collect::<Result<Vec<_>>>()?;
            let outputs = func(&duals)?;
            out_shapes = Some(outputs.iter().map(|o| o.shape().to_vec()).collect());
            let tangents = outputs
                .iter()
                .map(|o| match forward_ad::unpack_dual(o)?.tangent {
                    Some(t) => Ok(t),
                    None => o.zeros_like(),
                })
                .collect::<Result<Vec<_>>>()?;
            per_element.push(tangents);
        }
        columns.push(per_element);
    }
    let out_shapes = match out_shapes {
        Some(shapes) => shapes,
        // No pass ran: the outputs' shapes from one call (the Jacobians have no element).
        None => func(inputs)?.iter().map(|o| o.shape().to_vec()).collect(),
    };
    (0..out_shapes.len())
        .map(|j| {
            argnums
                .iter()
                .zip(&columns)
                .map(|(&i, per_element)| {
                    let input = &inputs[i];
                    let shape = [out_shapes[j].as_slice(), input.shape()].concat();
                    if per_element.is_empty() {
                        return Tensor::zeros(&shape, input.dtype())?.to(input.device());
                    }
                    let cols: Vec<Tensor> = per_element.iter().map(|c| c[j].clone()).collect();
                    Tensor::stack(&cols, out_shapes[j].len())?.reshape(&shape)
                })
                .collect()
        })
        .collect()
}

/// Zeros of `x`'s shape, dtype and device with a one at flat position `e`.
fn one_hot(x: &Tensor, e: usize) -> Result<Tensor> {
    let mut values = vec![0.0f64; x.numel()];
    values[e] = 1.0;
    Tensor::from_vec(values, x.shape())?
        .to_dtype(x.dtype())?
        .to(x.device())
}

/// The Hessian of the scalar `func` at `inputs` (`torch.autograd.functional.hessian`):
/// `result[i][j]` is the second derivative with respect to inputs `i` and `j`, of shape
/// `inputs[i].shape + inputs[j].shape` — the [`jacobian`] of the recorded gradient, with
/// `options` applying to that outer Jacobian (its `strategy` is PyTorch's
/// `outer_jacobian_strategy`).
///
/// # Errors
///
/// PyTorch's: "The function given to hessian should return a single Tensor", "The Tensor
/// returned by the function given to hessian should contain a single element", in strict mode
/// "Output 0 of the user-provided function does not require gradients. ...", "While computing
/// the hessian, found that the jacobian of the user-provided function with respect to input i
/// is independent of the input. ..." (a function linear in input `i`) and [`jacobian`]'s; and
/// any error of `func` or of a backward pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{hessian, JacobianOptions};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let y = Tensor::scalar(3.0f64);
/// // f(x, y) = y · Σ xᵢ²
/// let f = |i: &[Tensor]| i[0].pow(2.0)?.sum()?.mul(&i[1]);
/// let h = hessian(f, &[x, y], JacobianOptions::new())?;
/// assert_eq!(h[0][0].to_vec::<f64>()?, [6.0, 0.0, 0.0, 6.0]); // 2y·I
/// assert_eq!(h[0][1].to_vec::<f64>()?, [2.0, 4.0]);           // 2x
/// assert_eq!(h[1][1].item::<f64>()?, 0.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn hessian<F, O, I>(func: F, inputs: &I, options: JacobianOptions) -> Result<Vec<Vec<Tensor>>>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: Outputs,
    I: Inputs + ?Sized,
{
    let strict = options.strict;
    let ensure_single_output = |inp: &[Tensor]| -> Result<Tensor> {
        let (outputs, is_tuple) = func(inp)?.into_tensors();
        check_outputs(&outputs, strict)?;
        match <[Tensor; 1]>::try_from(outputs) {
            Ok([out]) if !is_tuple => {
                if out.numel() != 1 {
                    return Err(Error::msg(
                        "The Tensor returned by the function given to hessian should contain a \
                         single element",
                    ));
                }
                out.squeeze()
            }
            _ => Err(Error::msg(
                "The function given to hessian should return a single Tensor",
            )),
        }
    };
    let jac_func = |inp: &[Tensor]| -> Result<Vec<Tensor>> {
        let jac = jacobian(
            ensure_single_output,
            inp,
            JacobianOptions::new().create_graph(true),
        )?;
        // One output: its row, one gradient per input.
        let jac = jac.into_iter().next().unwrap_or_default();
        check_requires_grad(&some(&jac), Checked::Jacobian, strict)?;
        Ok(jac)
    };
    jacobian(jac_func, inputs, options)
}
