//! [`vjp`], [`jvp`], [`vhp`] and [`hvp`]: one product each, from two to three backward passes.

use super::common::{
    Checked, Stage, autograd_grad, check_outputs, check_requires_grad, fill_in_zeros, input_v,
    postprocess, preprocess, some, validate_v,
};
use super::{Inputs, Options, Outputs};
use crate::{Error, Result, Tensor, enable_grad, is_grad_enabled, set_grad_enabled};

/// The vector-Jacobian product `vᵀ·J` of `func` at `inputs` (`torch.autograd.functional.vjp`).
///
/// `v` holds one tensor per output, of its shape; it may be `None` only when `func` returns a
/// single one-element tensor (then it is `1`). Returns the outputs of `func` and, per input, the
/// product, of the input's shape; zeros for an input the outputs do not depend on.
///
/// # Errors
///
/// PyTorch's errors: for `v` ("The vector v can only be None if the user-provided function
/// returns a single Tensor with a single element.", "v is a tuple of invalid length: ...",
/// "... v has invalid size: ..."), in strict mode for an output that does not require grad,
/// an input the outputs do not depend on, and (with `create_graph`) a product that does not
/// depend on the inputs; and any error of `func` or of the backward pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{vjp, Options};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![0.0f64, 1.0], &[2])?;
/// let v = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let (out, g) = vjp(|x: &[Tensor]| x[0].exp(), &x, Some(&[v]), Options::new())?;
/// assert_eq!(out[0].to_vec::<f64>()?, [1.0, 1f64.exp()]);
/// assert_eq!(g[0].to_vec::<f64>()?, [1.0, 2.0 * 1f64.exp()]); // v ⊙ exp(x)
/// assert!(!x.requires_grad() && x.grad().is_none()); // the caller's tensor is untouched
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn vjp<F, O, I>(
    func: F,
    inputs: &I,
    v: Option<&[Tensor]>,
    options: Options,
) -> Result<(Vec<Tensor>, Vec<Tensor>)>
where
    F: FnOnce(&[Tensor]) -> Result<O>,
    O: Outputs,
    I: Inputs + ?Sized,
{
    let Options {
        create_graph,
        strict,
    } = options;
    let (inputs, outputs, v) = {
        let _grad = enable_grad();
        let inputs = preprocess(inputs.tensors(), create_graph, true)?;
        let (outputs, is_outputs_tuple) = func(&inputs)?.into_tensors();
        check_outputs(&outputs, strict)?;
        let v = match v {
            Some(v) => {
                let v = preprocess(v, create_graph, false)?;
                validate_v(&v, &outputs, is_outputs_tuple)?;
                Some(some(&v))
            }
            None if outputs.len() != 1 || outputs[0].numel() != 1 => {
                return Err(Error::msg(
                    "The vector v can only be None if the user-provided function returns a \
                     single Tensor with a single element.",
                ));
            }
            None => None,
        };
        (inputs, outputs, v)
    };
    let vjp = {
        let _grad = set_grad_enabled(create_graph || is_grad_enabled());
        let grads = autograd_grad(
            &some(&outputs),
            &inputs,
            v.as_deref(),
            create_graph,
            None,
            false,
        )?;
        fill_in_zeros(grads, &inputs, strict, create_graph, Stage::Back)?
    };
    Ok((
        postprocess(outputs, create_graph),
        postprocess(vjp, create_graph),
    ))
}

/// The Jacobian-vector product `J·v` of `func` at `inputs` (`torch.autograd.functional.jvp`),
/// by the double-vjp trick: the backward pass is recorded with a gradient `u` that requires
/// grad (`uᵀ·J`, linear in `u`), and differentiated with respect to `u` along `v`.
///
/// `v` holds one tensor per input, of its shape; it may be `None` only for a single one-element
/// input. Returns the outputs of `func` and, per output, the product, of the output's shape.
///
/// # Errors
///
/// As [`vjp`], with `v` checked against the inputs ("The vector v can only be None if the input
/// to the user-provided function is a single Tensor with a single element."), and in strict
/// mode PyTorch's errors of the trick: "The gradient with respect to input i is independent of
/// the inputs of the user-provided function. ..." and "The gradient with respect to the input is
/// independent of entry i in the grad_outputs when using the double backward trick ...".
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{jvp, Options};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let v = Tensor::from_vec(vec![1.0f64, -1.0], &[2])?;
/// // f(x) = x², J = diag(2x)
/// let (out, jv) = jvp(|x: &[Tensor]| x[0].mul(&x[0]), &x, Some(&[v]), Options::new())?;
/// assert_eq!(out[0].to_vec::<f64>()?, [1.0, 4.0]);
/// assert_eq!(jv[0].to_vec::<f64>()?, [2.0, -4.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn jvp<F, O, I>(
    func: F,
    inputs: &I,
    v: Option<&[Tensor]>,
    options: Options,
) -> Result<(Vec<Tensor>, Vec<Tensor>)>
where
    F: FnOnce(&[Tensor]) -> Result<O>,
    O: Outputs,
    I: Inputs + ?Sized,
{
    let Options {
        create_graph,
        strict,
    } = options;
    let is_inputs_tuple = inputs.is_tuple();
    let (outputs, grad_outputs, grad_inputs, v) = {
        let _grad = enable_grad();
        let inputs = preprocess(inputs.tensors(), create_graph, true)?;
        let v = input_v(v, &inputs, is_inputs_tuple, create_graph)?;
        let (outputs, _) = func(&inputs)?.into_tensors();
        check_outputs(&outputs, strict)?;
        let grad_outputs = outputs
            .iter()
            .map(|o| o.zeros_like()?.requires_grad_(true))
            .collect::<Result<Vec<_>>>()?;
        let grad_inputs = autograd_grad(
            &some(&outputs),
            &inputs,
            Some(&some(&grad_outputs)),
            true,
            None,
            false,
        )?;
        check_requires_grad(&grad_inputs, Checked::GradInputs, strict)?;
        (outputs, grad_outputs, grad_inputs, v)
    };
    let v = v.as_deref().map(some);
    let jvp = {
        // PyTorch runs this pass in the caller's grad mode unless `create_graph`.
        let _grad = set_grad_enabled(create_graph || is_grad_enabled());
        let grads = autograd_grad(
            &grad_inputs,
            &grad_outputs,
            v.as_deref(),
            create_graph,
            None,
            false,
        )?;
        fill_in_zeros(grads, &outputs, strict, create_graph, Stage::BackTrick)?
    };
    Ok((
        postprocess(outputs, create_graph),
        postprocess(jvp, create_graph),
    ))
}

/// The checks of `hvp` and `vhp` on the function's result: strict mode's, then one tensor of one
/// element.
fn single_output<O: Outputs>(out: O, strict: bool, api: &str) -> Result<Tensor> {
    let (outputs, is_tuple) = out.into_tensors();
    check_outputs(&outputs, strict)?;
    match <[Tensor; 1]>::try_from(outputs) {
        Ok([out]) if !is_tuple => {
            if out.numel() != 1 {
                return Err(Error::msg(format!(
                    "The Tensor returned by the function given to {api} should contain a single \
                     element"
                )));
            }
            Ok(out)
        }
        _ => Err(Error::msg(format!(
            "The function given to {api} should return a single Tensor"
        ))),
    }
}

/// The gradient of `func`'s single output with respect to `inputs`, recorded (the Jacobian
/// `hvp` and `vhp` differentiate again), checked in strict mode.
fn recorded_jacobian<F, O>(
    func: F,
    inputs: &[Tensor],
    strict: bool,
    api: &str,
) -> Result<(Tensor, Vec<Option<Tensor>>)>
where
    F: FnOnce(&[Tensor]) -> Result<O>,
    O: Outputs,
{
    let output = single_output(func(inputs)?, strict, api)?;
    let jac = autograd_grad(&[Some(output.clone())], inputs, None, true, None, false)?;
    check_requires_grad(&jac, Checked::Jacobian, strict)?;
    Ok((output, jac))
}

/// The vector-Hessian product `vᵀ·H` of a scalar `func` at `inputs`
/// (`torch.autograd.functional.vhp`): the gradient, recorded, differentiated along `v`.
///
/// `func` must return a single tensor of one element. `v` holds one tensor per input, of its
/// shape; it may be `None` only for a single one-element input. Returns the output and, per
/// input, the product, of the input's shape.
///
/// # Errors
///
/// PyTorch's: "The function given to vhp should return a single Tensor", "The Tensor returned
/// by the function given to vhp should contain a single element", `v`'s errors as for [`jvp`],
/// and in strict mode, "While computing the hessian, found that the jacobian of the
/// user-provided function with respect to input i is independent of the input. ...", "The
/// jacobian of the user-provided function is independent of input i. ..." and, with
/// `create_graph`, "The hessian of the user-provided function is independent of input i. ...".
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{vhp, Options};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let v = Tensor::from_vec(vec![1.0f64, 1.0], &[2])?;
/// // f(x) = Σ xᵢ³, H = diag(6x)
/// let (out, vh) = vhp(|x: &[Tensor]| x[0].pow(3.0)?.sum(), &x, Some(&[v]), Options::new())?;
/// assert_eq!(out.item::<f64>()?, 9.0);
/// assert_eq!(vh[0].to_vec::<f64>()?, [6.0, 12.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn vhp<F, O, I>(
    func: F,
    inputs: &I,
    v: Option<&[Tensor]>,
    options: Options,
) -> Result<(Tensor, Vec<Tensor>)>
where
    F: FnOnce(&[Tensor]) -> Result<O>,
    O: Outputs,
    I: Inputs + ?Sized,
{
    hessian_product(func, inputs, v, options, "vhp", Stage::DoubleBack)
}

/// The Hessian-vector product `H·v` of a scalar `func` at `inputs`
/// (`torch.autograd.functional.hvp`), by the double-vjp trick over the recorded gradient (one
/// more backward pass than [`vhp`], which gives the same values for the symmetric Hessians of
/// twice continuously differentiable functions).
///
/// `func` must return a single tensor of one element. `v` holds one tensor per input, of its
/// shape; it may be `None` only for a single one-element input. Returns the output and, per
/// input, the product, of the input's shape.
///
/// # Errors
///
/// As [`vhp`] (naming `hvp`), and in strict mode "The hessian of the user-provided function is
/// independent of entry i in the grad_jacobian. ...".
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{hvp, Options};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let v = Tensor::from_vec(vec![1.0f64, 0.0], &[2])?;
/// // f(x) = x₀² x₁, H = [[2x₁, 2x₀], [2x₀, 0]]
/// let f = |x: &[Tensor]| x[0].select(0, 0)?.pow(2.0)?.mul(&x[0].select(0, 1)?);
/// let (out, hv) = hvp(f, &x, Some(&[v]), Options::new())?;
/// assert_eq!(out.item::<f64>()?, 2.0);
/// assert_eq!(hv[0].to_vec::<f64>()?, [4.0, 2.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn hvp<F, O, I>(
    func: F,
    inputs: &I,
    v: Option<&[Tensor]>,
    options: Options,
) -> Result<(Tensor, Vec<Tensor>)>
where
    F: FnOnce(&[Tensor]) -> Result<O>,
    O: Outputs,
    I: Inputs + ?Sized,
{
    hessian_product(func, inputs, v, options, "hvp", Stage::DoubleBackTrick)
}

/// [`vhp`] (`stage` [`Stage::DoubleBack`]: the recorded gradient differentiated along `v`) and
/// [`hvp`] ([`Stage::DoubleBackTrick`]: the gradient's vjp with zeros `g` that require grad,
/// differentiated with respect to `g` along `v`), as PyTorch's two functions do.
fn hessian_product<F, O, I>(
    func: F,
    inputs: &I,
    v: Option<&[Tensor]>,
    options: Options,
    api: &str,
    stage: Stage,
) -> Result<(Tensor, Vec<Tensor>)>
where
    F: FnOnce(&[Tensor]) -> Result<O>,
    O: Outputs,
    I: Inputs + ?Sized,
{
    let Options {
        create_graph,
        strict,
    } = options;
    let is_inputs_tuple = inputs.is_tuple();
    let (inputs, output, outputs, wrt, v) = {
        let _grad = enable_grad();
        let inputs = preprocess(inputs.tensors(), create_graph, true)?;
        let v = input_v(v, &inputs, is_inputs_tuple, create_graph)?;
        let (output, jac) = recorded_jacobian(func, &inputs, strict, api)?;
        let (outputs, wrt) = if matches!(stage, Stage::DoubleBackTrick) {
            let grad_jac = inputs
                .iter()
                .map(|i| i.zeros_like()?.requires_grad_(true))
                .collect::<Result<Vec<_>>>()?;
            let double_back =
                autograd_grad(&jac, &inputs, Some(&some(&grad_jac)), true, None, false)?;
            // PyTorch checks `jac` once more here ("hessian"), which the check above already
            // passed: nothing to do.
            (double_back, grad_jac)
        } else {
            (jac, inputs.clone())
        };
        (inputs, output, outputs, wrt, v)
    };
    let v = v.as_deref().map(some);
    let product = {
        let _grad = set_grad_enabled(create_graph || is_grad_enabled());
        let grads = autograd_grad(&outputs, &wrt, v.as_deref(), create_graph, None, false)?;
        fill_in_zeros(grads, &inputs, strict, create_graph, stage)?
    };
    let output = postprocess(vec![output], create_graph).swap_remove(0);
    Ok((output, postprocess(product, create_graph)))
}
