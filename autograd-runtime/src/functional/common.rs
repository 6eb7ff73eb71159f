//! The steps the functions of this module share, each one of PyTorch's private helpers in
//! `torch/autograd/functional.py` (named in each doc), with its messages.

use crate::nn::torch_size;
use crate::{Error, GradOptions, Result, Tensor, grad};

/// `_grad_preprocess`: the tensors the user's function runs on. With `create_graph`, an input
/// that requires grad enters as a view of itself (the results depend on the caller's tensor);
/// otherwise as a detached copy that requires grad when `need_graph`.
pub(crate) fn preprocess(
    inputs: &[Tensor],
    create_graph: bool,
    need_graph: bool,
) -> Result<Vec<Tensor>> {
    inputs
        .iter()
        .map(|t| {
            if create_graph && t.requires_grad() {
                let shape: Vec<isize> = t.shape().iter().map(|&d| d as isize).collect();
                t.view(&shape)
            } else {
                let fresh = t.detach();
                // A dual input keeps its tangent: a forward-mode Jacobian of this function
                // (a forward-over-reverse Hessian) differentiates through it.
                crate::forward_ad::carry(t, &fresh);
                fresh.requires_grad_(need_graph)
            }
        })
        .collect()
}

/// `_grad_postprocess`: results are detached unless `create_graph`.
pub(super) fn postprocess(tensors: Vec<Tensor>, create_graph: bool) -> Vec<Tensor> {
    if create_graph {
        tensors
    } else {
        tensors.iter().map(Tensor::detach).collect()
    }
}

/// `_validate_v`: one `v` per entry of `other` (the outputs or the inputs), each of its shape.
pub(super) fn validate_v(v: &[Tensor], other: &[Tensor], is_other_tuple: bool) -> Result<()> {
    if v.len() != other.len() {
        return Err(Error::msg(if is_other_tuple {
            format!(
                "v is a tuple of invalid length: should be {} but got {}.",
                other.len(),
                v.len()
            )
        } else {
            "The given v should contain a single Tensor.".to_string()
        }));
    }
    for (idx, (v, other)) in v.iter().zip(other).enumerate() {
        if v.shape() != other.shape() {
            let prepend = if is_other_tuple {
                format!("Entry {idx} in ")
            } else {
                String::new()
            };
            return Err(Error::msg(format!(
                "{prepend}v has invalid size: should be {} but got {}.",
                torch_size(other.shape()),
                torch_size(v.shape())
            )));
        }
    }
    Ok(())
}

/// What [`check_requires_grad`] checks, which picks its message (`input_type`).
#[derive(Clone, Copy, Debug)]
pub(super) enum Checked {
    /// The user's outputs.
    Outputs,
    /// `jvp`'s first backward pass.
    GradInputs,
    /// The gradient of a Hessian's function.
    Jacobian,
}

/// `_check_requires_grad`: in strict mode, every entry must exist and require grad.
pub(super) fn check_requires_grad(
    tensors: &[Option<Tensor>],
    checked: Checked,
    strict: bool,
) -> Result<()> {
    if !strict {
        return Ok(());
    }
    for (i, t) in tensors.iter().enumerate() {
        let Some(t) = t else {
            return Err(Error::msg(format!(
                "The output of the user-provided function is independent of input {i}. This is \
                 not allowed in strict mode."
            )));
        };
        if !t.requires_grad() {
            return Err(Error::msg(match checked {
                Checked::Jacobian => format!(
                    "While computing the hessian, found that the jacobian of the user-provided \
                     function with respect to input {i} is independent of the input. This is not \
                     allowed in strict mode. You should ensure that your function is twice \
                     differentiable and that the jacobian depends on the inputs (this would be \
                     violated by a linear function for example)."
                ),
                Checked::GradInputs => format!(
                    "The gradient with respect to input {i} is independent of the inputs of the \
                     user-provided function. This is not allowed in strict mode."
                ),
                Checked::Outputs => format!(
                    "Output {i} of the user-provided function does not require gradients. The \
                     outputs must be computed in a differentiable manner from the input when \
                     running in strict mode."
                ),
            }));
        }
    }
    Ok(())
}

/// `_check_requires_grad` on tensors that are all there.
pub(super) fn check_outputs(outputs: &[Tensor], strict: bool) -> Result<()> {
    let outputs: Vec<Option<Tensor>> = outputs.iter().cloned().map(Some).collect();
    check_requires_grad(&outputs, Checked::Outputs, strict)
}

/// `_autograd_grad`: [`grad`] over the outputs that exist and require grad (with their
/// `grad_outputs`), unused inputs allowed; `None` for every input when no output is left.
pub(crate) fn autograd_grad(
    outputs: &[Option<Tensor>],
    inputs: &[Tensor],
    grad_outputs: Option<&[Option<Tensor>]>,
    create_graph: bool,
    retain_graph: Option<bool>,
    is_grads_batched: bool,
) -> Result<Vec<Option<Tensor>>> {
    let mut kept = Vec::with_capacity(outputs.len());
    let mut kept_grads = Vec::with_capacity(outputs.len());
    for (i, out) in outputs.iter().enumerate() {
        if let Some(out) = out.as_ref().filter(|o| o.requires_grad()) {
            kept.push(out.clone());
            kept_grads.push(grad_outputs.and_then(|g| g.get(i).cloned().flatten()));
        }
    }
    if kept.is_empty() {
        return Ok(vec![None; inputs.len()]);
    }
    let mut options = GradOptions::new()
        .grad_outputs(kept_grads)
        .allow_unused(true)
        .create_graph(create_graph)
        .is_grads_batched(is_grads_batched);
    if let Some(retain) = retain_graph {
        options = options.retain_graph(retain);
    }
    grad(&kept, inputs, options)
}

/// Which pass [`fill_in_zeros`] completes (`stage`), which picks its messages.
#[derive(Clone, Copy, Debug)]
pub(super) enum Stage {
    /// `vjp`.
    Back,
    /// `jvp`'s second backward pass.
    BackTrick,
    /// `vhp`.
    DoubleBack,
    /// `hvp`'s third backward pass.
    DoubleBackTrick,
}

/// `_fill_in_zeros`: zeros of `refs[i]`'s shape for a missing gradient, or PyTorch's error in
/// strict mode; with `strict` and `create_graph`, a gradient that does not require grad is an
/// error too.
pub(super) fn fill_in_zeros(
    grads: Vec<Option<Tensor>>,
    refs: &[Tensor],
    strict: bool,
    create_graph: bool,
    stage: Stage,
) -> Result<Vec<Tensor>> {
    grads
        .into_iter()
        .enumerate()
        .map(|(i, g)| match g {
            None if strict => Err(Error::msg(match stage {
                Stage::Back => format!(
                    "The output of the user-provided function is independent of input {i}. This \
                     is not allowed in strict mode."
                ),
                Stage::BackTrick => format!(
                    "The gradient with respect to the input is independent of entry {i} in the \
                     grad_outputs when using the double backward trick to compute forward mode \
                     gradients. This is not allowed in strict mode."
                ),
                Stage::DoubleBack => format!(
                    "The jacobian of the user-provided function is independent of input {i}. This \
                     is not allowed in strict mode."
                ),
                Stage::DoubleBackTrick => format!(
                    "The hessian of the user-provided function is independent of entry {i} in the \
                     grad_jacobian. This is not allowed in strict mode as it prevents from using \
                     the double backward trick to replace forward mode AD."
                ),
            })),
            None => refs[i].zeros_like(),
            Some(g) if strict && create_graph && !g.requires_grad() => {
                Err(Error::msg(match stage {
                    Stage::Back | Stage::BackTrick => format!(
                        "The jacobian of the user-provided function is independent of input {i}. \
                         This is not allowed in strict mode when create_graph=True."
                    ),
                    Stage::DoubleBack | Stage::DoubleBackTrick => format!(
                        "The hessian of the user-provided function is independent of input {i}. \
                         This is not allowed in strict mode when create_graph=True."
                    ),
                }))
            }
            Some(g) => Ok(g),
        })
        .collect()
}

/// `v`'s checks and preprocessing for the functions whose `v` matches the inputs (`jvp`,
/// `hvp`, `vhp`): `None` only for a single one-element input.
pub(super) fn input_v(
    v: Option<&[Tensor]>,
    inputs: &[Tensor],
    is_inputs_tuple: bool,
    create_graph: bool,
) -> Result<Option<Vec<Tensor>>> {
    match v {
        Some(v) => {
            let v = preprocess(v, create_graph, false)?;
            validate_v(&v, inputs, is_inputs_tuple)?;
            Ok(Some(v))
        }
        None if inputs.len() != 1 || inputs[0].numel() != 1 => Err(Error::msg(
            "The vector v can only be None if the input to the user-provided function is a \
             single Tensor with a single element.",
        )),
        None => Ok(None),
    }
}

/// Every tensor, as present.
pub(super) fn some(tensors: &[Tensor]) -> Vec<Option<Tensor>> {
    tensors.iter().cloned().map(Some).collect()
}
