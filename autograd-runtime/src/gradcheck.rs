//! `gradcheck` and `gradgradcheck`: compare the engine's gradients with central finite
//! differences in `f64`, as `torch.autograd.gradcheck` does. Used by the test suite for every op,
//! and by users for their own `#[differentiable]` functions.

use crate::{DType, Error, GradOptions, Result, Tensor, grad, no_grad};

/// Tolerances of [`gradcheck_with`], and which Jacobians it checks (PyTorch's
/// `check_backward_ad`, on by default, and `check_forward_ad`, off by default).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{gradcheck_with, GradcheckOptions, Tensor};
/// let x = Tensor::from_vec(vec![0.3f64, -0.7], &[2])?.requires_grad_(true)?;
/// gradcheck_with(|i| i[0].tanh(), &[x.clone()], GradcheckOptions { atol: 1e-6, ..Default::default() })?;
/// // The forward-mode Jacobian too (dual tensors, see `forward_ad`).
/// gradcheck_with(|i| i[0].tanh(), &[x], GradcheckOptions { check_forward_ad: true, ..Default::default() })?;
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct GradcheckOptions {
    /// Finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
    /// Check the Jacobian reverse mode computes (one vector-Jacobian product per output
    /// element). Default `true`.
    pub check_backward_ad: bool,
    /// Check the Jacobian forward mode computes (one Jacobian-vector product per input element,
    /// under a dual level of its own). Default `false`, as in PyTorch.
    pub check_forward_ad: bool,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
            check_backward_ad: true,
            check_forward_ad: false,
        }
    }
}

/// Checks the gradients of `f` w.r.t. every input that requires grad against finite differences,
/// with the default tolerances.
///
/// # Errors
///
/// An [`Error::Message`] describing the first mismatching Jacobian entry, an error if an input is
/// not `f64`, or any error `f` or the engine returns.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{gradcheck, Tensor};
/// let a = Tensor::randn_seeded(&[2, 3], autograd_runtime::DType::F64, 1)?.requires_grad_(true)?;
/// let b = Tensor::randn_seeded(&[3], autograd_runtime::DType::F64, 2)?.requires_grad_(true)?;
/// gradcheck(|x| x[0].mul(&x[1])?.sin(), &[a, b])?; // broadcasting included
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn gradcheck<F>(f: F, inputs: &[Tensor]) -> Result<()>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    gradcheck_with(f, inputs, GradcheckOptions::default())
}

/// [`gradcheck`] with explicit tolerances.
///
/// # Errors
///
/// As [`gradcheck`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::{gradcheck_with, GradcheckOptions, Tensor};
/// let x = Tensor::scalar(0.5f64).requires_grad_(true)?;
/// gradcheck_with(|i| i[0].exp(), &[x], GradcheckOptions::default())?;
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn gradcheck_with<F>(f: F, inputs: &[Tensor], options: GradcheckOptions) -> Result<()>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    for (i, t) in inputs.iter().enumerate() {
        if t.requires_grad() && t.dtype() != DType::F64 {
            return Err(Error::msg(format!(
                "gradcheck: input {i} has dtype {}; finite differences need f64 inputs",
                t.dtype()
            )));
        }
    }
    let diff: Vec<usize> = (0..inputs.len())
        .filter(|&i| inputs[i].requires_grad())
        .collect();
    if diff.is_empty() {
        return Err(Error::msg(
            "gradcheck expects at least one input that requires grad",
        ));
    }
    let out = f(inputs)?;
    let n_out = out.numel();
    let analytical = if options.check_backward_ad {
        Some(reverse_jacobian(&out, inputs, &diff)?)
    } else {
        None
    };
    let forward = if options.check_forward_ad {
        Some(forward_jacobian(&f, inputs, &diff)?)
    } else {
        None
    };

    // Numerical: central differences, one input element at a time.
    let _g = no_grad();
    for (k, &i) in diff.iter().enumerate() {
        let base = inputs[i].to_vec::<f64>()?;
        for e in 0..base.len() {
            let eval = |delta: f64| -> Result<Vec<f64>> {
                let mut v = base.clone();
                v[e] += delta;
                let mut args = inputs.to_vec();
                args[i] = Tensor::from_vec(v, inputs[i].shape())?;
                f(&args)?.to_dtype(DType::F64)?.to_vec::<f64>()
            };
            let (plus, minus) = (eval(options.eps)?, eval(-options.eps)?);
            for j in 0..n_out {
                let numerical = (plus[j] - minus[j]) / (2.0 * options.eps);
                let close = |a: f64| {
                    (a - numerical).abs() <= options.atol + options.rtol * numerical.abs()
                        && a.is_nan() == numerical.is_nan()
                };
                if let Some(a) = analytical.as_ref().map(|m| m[k][j][e])
                    && !close(a)
                {
                    return Err(Error::msg(format!(
                        "Jacobian mismatch for output {j} with respect to input {i} (element {e}): numerical {numerical}, analytical {a}"
                    )));
                }
                if let Some(a) = forward.as_ref().map(|m| m[k][e][j])
                    && !close(a)
                {
                    return Err(Error::msg(format!(
                        "Jacobian computed with forward mode mismatch for output {j} with respect to input {i} (element {e}): numerical {numerical}, analytical {a}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The Jacobian by reverse mode, `[input k][output j][input element]`: one vector-Jacobian
/// product per output element.
fn reverse_jacobian(out: &Tensor, inputs: &[Tensor], diff: &[usize]) -> Result<Vec<Vec<Vec<f64>>>> {
    let n_out = out.numel();
    let diff_inputs: Vec<Tensor> = diff.iter().map(|&i| inputs[i].clone()).collect();
    let mut analytical: Vec<Vec<Vec<f64>>> = diff.iter().map(|_| vec![Vec::new(); n_out]).collect();
    for j in 0..n_out {
        let mut onehot = vec![0.0f64; n_out];
        onehot[j] = 1.0;
        let v = Tensor::from_vec(onehot, out.shape())?.to_dtype(out.dtype())?;
        if !out.requires_grad() {
            for (k, &i) in diff.iter().enumerate() {
                analytical[k][j] = vec![0.0; inputs[i].numel()];
            }
            continue;
        }
        let gs = grad(
            std::slice::from_ref(out),
            &diff_inputs,
            GradOptions::new()
                .grad_outputs(vec![Some(v)])
                .retain_graph(true)
                .allow_unused(true),
        )?;
        for (k, g) in gs.into_iter().enumerate() {
            let n = diff_inputs[k].numel();
            analytical[k][j] = match g {
                Some(g) => g.to_dtype(DType::F64)?.to_vec::<f64>()?,
                None => vec![0.0; n],
            };
        }
    }
    Ok(analytical)
}

/// The Jacobian by forward mode, `[input k][input element][output j]`: one Jacobian-vector
/// product per input element (a one-hot tangent on that element, zero tangents elsewhere),
/// under a dual level of its own.
fn forward_jacobian<F>(f: &F, inputs: &[Tensor], diff: &[usize]) -> Result<Vec<Vec<Vec<f64>>>>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    let _level = crate::forward_ad::dual_level()?;
    let mut jacobian = Vec::with_capacity(diff.len());
    for &i in diff {
        let n = inputs[i].numel();
        let mut columns = Vec::with_capacity(n);
        for e in 0..n {
            let mut args = inputs.to_vec();
            for &d in diff {
                let mut tangent = vec![0.0f64; inputs[d].numel()];
                if d == i {
                    tangent[e] = 1.0;
                }
                let tangent = Tensor::from_vec(tangent, inputs[d].shape())?;
                args[d] = crate::forward_ad::make_dual(&inputs[d], &tangent)?;
            }
            let out = f(&args)?;
            let column = match crate::forward_ad::unpack_dual(&out)?.tangent {
                Some(t) => t.to_dtype(DType::F64)?.to_vec::<f64>()?,
                None => vec![0.0; out.numel()],
            };
            columns.push(column);
        }
        jacobian.push(columns);
    }
    Ok(jacobian)
}

/// Checks second derivatives: runs [`gradcheck`] on the function that maps the inputs to the
/// vector-Jacobian product of `f` with a fixed random vector, computed with `create_graph`.
///
/// # Errors
///
/// As [`gradcheck`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::{gradgradcheck, Tensor};
/// let x = Tensor::from_vec(vec![0.2f64, 0.9], &[2])?.requires_grad_(true)?;
/// gradgradcheck(|i| i[0].mul(&i[0])?.sin(), &[x])?;
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn gradgradcheck<F>(f: F, inputs: &[Tensor]) -> Result<()>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    let out_shape = f(inputs)?.shape().to_vec();
    let v = Tensor::randn_seeded(&out_shape, DType::F64, 0x5eed)?;
    let diff: Vec<usize> = (0..inputs.len())
        .filter(|&i| inputs[i].requires_grad())
        .collect();
    let vjp = |args: &[Tensor]| -> Result<Tensor> {
        let _g = crate::enable_grad();
        // The finite-difference pass hands in fresh tensors that do not require grad: make them
        // leaves again so the inner `grad()` can differentiate w.r.t. them.
        let mut args = args.to_vec();
        for &i in &diff {
            if !args[i].requires_grad() {
                args[i] = args[i].detach().requires_grad_(true)?;
            }
        }
        let out = f(&args)?;
        let diff_inputs: Vec<Tensor> = diff.iter().map(|&i| args[i].clone()).collect();
        if !out.requires_grad() {
            let n: usize = diff_inputs.iter().map(Tensor::numel).sum();
            return Tensor::zeros(&[n], out.dtype());
        }
        let gs = grad(
            std::slice::from_ref(&out),
            &diff_inputs,
            GradOptions::new()
                .grad_outputs(vec![Some(v.to_dtype(out.dtype())?)])
                .create_graph(true)
                .materialize_grads(true),
        )?;
        let flat = gs
            .into_iter()
            .map(|g| {
                let g = g.expect("invariant: materialize_grads fills every slot");
                let n = g.numel();
                g.reshape(&[n])
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&flat, 0)
    };
    gradcheck(vjp, inputs)
}
