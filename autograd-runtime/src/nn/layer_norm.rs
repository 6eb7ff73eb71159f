//! `LayerNorm`: normalisation over the trailing dims. On a backend with fused row kernels (the
//! CPU) it is one op, `NativeLayerNormBackward0` as in PyTorch: one kernel forward, one backward;
//! under `create_graph` the backward is written in differentiable ops, so double backward works.
//! Elsewhere it is composed of differentiable ops.

use autograd_macros::{backward, differentiable, jvp};

use crate::backend::NormSpec;
use crate::nn::{Forward, Module};
use crate::ops::records;
use crate::tensor::kernels;
use crate::{DType, Error, Result, Tensor};

/// Normalises over the last dims, `normalized_shape`, then scales and shifts elementwise
/// (PyTorch's `nn.LayerNorm`): `y = (x - E[x]) / √(Var[x] + eps) · weight + bias`, the variance
/// biased as PyTorch's. The weight starts at ones and the bias at zeros (f32, CPU).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, LayerNorm, Module};
/// use autograd_runtime::Tensor;
/// let ln = LayerNorm::new(&[2])?;
/// let y = ln.forward(&Tensor::from_vec(vec![1.0f32, 3.0], &[1, 2])?)?.to_vec::<f32>()?;
/// assert!((y[0] + 1.0).abs() < 1e-5 && (y[1] - 1.0).abs() < 1e-5);
/// let names: Vec<String> = ln.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["weight", "bias"]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(extra_repr = LayerNorm::extra_repr)]
pub struct LayerNorm {
    #[module(skip)]
    normalized_shape: Vec<usize>,
    #[module(skip)]
    eps: f64,
    weight: Option<Tensor>,
    bias: Option<Tensor>,
    training: bool,
}

impl LayerNorm {
    /// Over the trailing dims `normalized_shape`, `eps = 1e-5`, with a weight and a bias.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(normalized_shape: &[usize]) -> Result<LayerNorm> {
        LayerNorm::with_options(normalized_shape, 1e-5, true)
    }

    /// With PyTorch's `eps` and `elementwise_affine` (no parameters when it is `false`).
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Forward, LayerNorm, Module};
    /// let ln = LayerNorm::with_options(&[3, 4], 1e-6, false)?;
    /// assert!(ln.parameters().is_empty());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_options(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
    ) -> Result<LayerNorm> {
        LayerNorm::with_bias(normalized_shape, eps, elementwise_affine, true)
    }

    /// With all of PyTorch's options: `bias = false` (PyTorch's `bias=False`) keeps the weight
    /// (when `elementwise_affine`) but no bias.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{LayerNorm, Module};
    /// let ln = LayerNorm::with_bias(&[4], 1e-5, true, false)?;
    /// let keys: Vec<String> = ln.state_dict().keys().map(String::from).collect();
    /// assert_eq!(keys, ["weight"]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_bias(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
    ) -> Result<LayerNorm> {
        let (weight, bias) = if elementwise_affine {
            let b = if bias {
                Some(Tensor::zeros(normalized_shape, DType::F32)?.requires_grad_(true)?)
            } else {
                None
            };
            (
                Some(Tensor::ones(normalized_shape, DType::F32)?.requires_grad_(true)?),
                b,
            )
        } else {
            (None, None)
        };
        Ok(LayerNorm {
            normalized_shape: normalized_shape.to_vec(),
            eps,
            weight,
            bias,
            training: true,
        })
    }

    /// The weight (`normalized_shape`), if the layer is affine.
    pub fn weight(&self) -> Option<&Tensor> {
        self.weight.as_ref()
    }

    /// The bias (`normalized_shape`), if the layer is affine.
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }
}

impl LayerNorm {
    fn extra_repr(&self) -> String {
        super::repr::layer_norm(
            &self.normalized_shape,
            self.eps,
            self.weight.is_some(),
            self.bias.is_some(),
        )
    }
}

impl Forward for LayerNorm {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        layer_norm(
            input,
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}

/// Layer normalisation as a function (PyTorch's `F.layer_norm`): normalises `input` over its
/// trailing dims `normalized_shape` (mean and biased variance), then multiplies by `weight` and
/// adds `bias` (each `normalized_shape`) when given.
///
/// # Errors
///
/// [`Error::InvalidArgument`] if `input` does not end with `normalized_shape` (PyTorch's
/// message), or a weight or bias is not `normalized_shape`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::layer_norm;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![0.0f64, 2.0, 4.0], &[3])?;
/// let y = layer_norm(&x, &[3], None, None, 0.0)?.to_vec::<f64>()?;
/// let s = (1.5f64).sqrt();
/// assert!((y[0] + s).abs() < 1e-12 && y[1].abs() < 1e-12 && (y[2] - s).abs() < 1e-12);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(layer_norm(input, normalized_shape, weight, bias, eps));
    let k = normalized_shape.len();
    let shape = input.shape();
    if k == 0 || shape.len() < k || shape[shape.len() - k..] != *normalized_shape {
        let mut expected: Vec<String> = vec!["*".to_string()];
        expected.extend(normalized_shape.iter().map(usize::to_string));
        return Err(Error::InvalidArgument(format!(
            "Given normalized_shape={normalized_shape:?}, expected input with shape [{}], but \
             got input of size{shape:?}",
            expected.join(", "),
        )));
    }
    for (name, p) in [("weight", weight), ("bias", bias)] {
        if let Some(p) = p
            && p.shape() != normalized_shape
        {
            return Err(Error::InvalidArgument(format!(
                "Expected {name} to be of same shape as normalized_shape, but got {name} of shape \
                 {:?} and normalized_shape = {normalized_shape:?}",
                p.shape()
            )));
        }
    }
    let spec = NormSpec {
        n: normalized_shape.iter().product(),
        eps,
        centre: true,
    };
    if fusable(input, &[weight, bias])? {
        return native_layer_norm(input, weight, bias, normalized_shape, spec);
    }
    let dims: Vec<usize> = (shape.len() - k..shape.len()).collect();
    let n = normalized_shape.iter().product::<usize>() as f64;
    let mean = input.sum_dims(&dims, true)?.div_scalar(n)?;
    let centred = input.sub(&mean)?;
    let var = centred
        .mul(&centred)?
        .sum_dims(&dims, true)?
        .div_scalar(n)?;
    let rstd = var.add_scalar(eps)?.sqrt()?.reciprocal()?;
    let mut y = centred.mul(&rstd)?;
    if let Some(w) = weight {
        y = y.mul(w)?;
    }
    if let Some(b) = bias {
        y = y.add(b)?;
    }
    Ok(y)
}

/// Whether a norm of `input` with these parameters runs as one fused op: a floating input on a
/// backend with fused row kernels, and parameters of its dtype and device (others take the
/// composition, which promotes them as PyTorch's ops do).
pub(super) fn fusable(input: &Tensor, params: &[Option<&Tensor>]) -> Result<bool> {
    Ok(input.dtype().is_floating_point()
        && kernels::of_tensor(input)?.fused_rows()
        && params
            .iter()
            .flatten()
            .all(|p| p.dtype() == input.dtype() && p.device() == input.device()))
}

/// PyTorch's `native_layer_norm` (its `y`): one kernel, one pass per row. The backward
/// recomputes each row's statistics from `input` rather than keeping them.
#[differentiable(builtin, crate = "crate", name = "NativeLayerNormBackward0")]
fn native_layer_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    normalized_shape: &[usize],
    spec: NormSpec,
) -> Result<Tensor> {
    let _ = normalized_shape; // the backward's: the shape of the parameters' gradients
    kernels::of_tensor(input)?.norm(input, weight, bias, spec)
}

#[backward(native_layer_norm)]
fn native_layer_norm_backward(
    grad: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    normalized_shape: &[usize],
    spec: NormSpec,
    needs_input_grad: [bool; 3],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let [dx, dw, db] = norm_backward(
        grad,
        input,
        weight,
        normalized_shape,
        spec,
        needs_input_grad,
    )?;
    Ok((dx, dw, db))
}

#[jvp(native_layer_norm)]
fn native_layer_norm_jvp(
    input_t: Option<&Tensor>,
    weight_t: Option<&Tensor>,
    bias_t: Option<&Tensor>,
    input: &Tensor,
    weight: Option<&Tensor>,
    spec: NormSpec,
    result: &Tensor,
) -> Result<Tensor> {
    norm_jvp([input_t, weight_t, bias_t], input, weight, spec, result)
}

/// The gradients of a fused layer or RMS norm (`[input, weight, bias]`, where `needs` asks):
/// the fused kernel, unless the backward is recorded
/// (`create_graph` with an operand that requires grad); then PyTorch's formula in
/// differentiable ops, with the statistics recomputed from `input` so that their own
/// dependence on it is differentiated too.
pub(super) fn norm_backward(
    grad: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    normalized_shape: &[usize],
    spec: NormSpec,
    needs: [bool; 3],
) -> Result<[Option<Tensor>; 3]> {
    let needs = [needs[0], needs[1] && weight.is_some(), needs[2]];
    let mut operands = vec![grad, input];
    operands.extend(weight);
    if !records(&operands) {
        let [dx, dw, db] =
            kernels::of_tensor(input)?.norm_backward(grad, input, weight, spec, needs)?;
        let param = |t: Option<Tensor>| t.map(|t| t.reshape(normalized_shape)).transpose();
        return Ok([dx, param(dw)?, param(db)?]);
    }
    let (g, w, xhat, rstd) = recomputed(grad, input, weight, spec)?;
    let n = spec.n as f64;
    let dx = if needs[0] {
        let gw = match &w {
            Some(w) => g.mul(w)?,
            None => g.clone(),
        };
        let b = gw.mul(&xhat)?.sum_dims(&[1], true)?.div_scalar(n)?;
        let mut inner = gw.clone();
        if spec.centre {
            inner = inner.sub(&gw.sum_dims(&[1], true)?.div_scalar(n)?)?;
        }
        Some(
            inner
                .sub(&xhat.mul(&b)?)?
                .mul(&rstd)?
                .reshape(input.shape())?,
        )
    } else {
        None
    };
    let dw = if needs[1] {
        Some(
            g.mul(&xhat)?
                .sum_dims(&[0], false)?
                .reshape(normalized_shape)?,
        )
    } else {
        None
    };
    let db = if needs[2] {
        Some(g.sum_dims(&[0], false)?.reshape(normalized_shape)?)
    } else {
        None
    };
    Ok([dx, dw, db])
}

/// The rows of `grad` (`[rows, n]`), the weight as `[n]`, and `x̂` and `rstd` recomputed from
/// `input` in differentiable ops.
type Recomputed = (Tensor, Option<Tensor>, Tensor, Tensor);

/// See [`Recomputed`]; `grad` may be `input` itself (the jvp has no gradient).
fn recomputed(
    grad: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    spec: NormSpec,
) -> Result<Recomputed> {
    let n = spec.n;
    let rows = input.numel().checked_div(n).unwrap_or(0);
    let x = input.reshape(&[rows, n])?;
    let g = grad.reshape(&[rows, n])?;
    let w = weight.map(|w| w.reshape(&[n])).transpose()?;
    let nf = n as f64;
    let centred = if spec.centre {
        x.sub(&x.sum_dims(&[1], true)?.div_scalar(nf)?)?
    } else {
        x.clone()
    };
    let var = centred
        .mul(&centred)?
        .sum_dims(&[1], true)?
        .div_scalar(nf)?;
    let rstd = var.add_scalar(spec.eps)?.sqrt()?.reciprocal()?;
    let xhat = centred.mul(&rstd)?;
    Ok((g, w, xhat, rstd))
}

/// The tangent of a layer or RMS norm from the tangents of `[input, weight, bias]` (PyTorch's
/// `layer_norm_jvp`): `ŷ = rstd · (ṫ − mean(ṫ) − x̂ · mean(x̂ ⊙ ṫ)) · w + x̂ · ẇ + ḃ`, without
/// the `mean(ṫ)` term for RMS norm.
pub(super) fn norm_jvp(
    tangents: [Option<&Tensor>; 3],
    input: &Tensor,
    weight: Option<&Tensor>,
    spec: NormSpec,
    result: &Tensor,
) -> Result<Tensor> {
    let (_, w, xhat, rstd) = recomputed(input, input, weight, spec)?;
    let n = spec.n as f64;
    let rows = xhat.shape()[0];
    let mut y_t = Tensor::zeros(&[rows, spec.n], result.dtype())?.to(result.device())?;
    if let Some(t) = tangents[0] {
        let t = t.reshape(&[rows, spec.n])?;
        let mut inner = t.sub(&xhat.mul(&xhat.mul(&t)?.sum_dims(&[1], true)?.div_scalar(n)?)?)?;
        if spec.centre {
            inner = inner.sub(&t.sum_dims(&[1], true)?.div_scalar(n)?)?;
        }
        let mut d = inner.mul(&rstd)?;
        if let Some(w) = &w {
            d = d.mul(w)?;
        }
        y_t = y_t.add(&d)?;
    }
    if let Some(wt) = tangents[1] {
        y_t = y_t.add(&xhat.mul(&wt.reshape(&[spec.n])?)?)?;
    }
    if let Some(bt) = tangents[2] {
        y_t = y_t.add(&bt.reshape(&[spec.n])?)?;
    }
    y_t.reshape(result.shape())
}

#[cfg(test)]
mod tests {
    use super::layer_norm;
    use crate::nn::functional::{rms_norm, scaled_dot_product_attention};
    use crate::{DType, Result, Tensor, gradcheck, gradgradcheck};

    type Op = fn(&[Tensor]) -> Result<Tensor>;
    type BoxedOp<'a> = Box<dyn Fn(&[Tensor]) -> Result<Tensor> + 'a>;

    fn randn(shape: &[usize], seed: u64) -> Result<Tensor> {
        Tensor::randn_seeded(shape, DType::F64, seed)?.requires_grad_(true)
    }

    /// The fused layer and RMS norms, their backward kernels (gradcheck) and their recorded
    /// backward formulas (gradgradcheck), with and without parameters, over two trailing dims,
    /// on a transposed (strided) input too.
    #[test]
    fn fused_norms_pass_gradcheck_and_gradgradcheck() -> Result<()> {
        let (x, w, b) = (
            randn(&[3, 4, 5], 1)?,
            randn(&[4, 5], 2)?,
            randn(&[4, 5], 3)?,
        );
        let inputs = [x, w, b];
        let y = layer_norm(
            &inputs[0],
            &[4, 5],
            Some(&inputs[1]),
            Some(&inputs[2]),
            1e-5,
        )?;
        let name = y.grad_fn().map(|n| n.name().to_string());
        assert_eq!(name.as_deref(), Some("NativeLayerNormBackward0"));
        let cases: [Op; 5] = [
            |t| layer_norm(&t[0], &[4, 5], Some(&t[1]), Some(&t[2]), 1e-5),
            |t| layer_norm(&t[0], &[5], None, Some(&t[2].select(0, 1)?), 1e-3),
            |t| layer_norm(&t[0].transpose(0, 1)?, &[3, 5], None, None, 1e-5),
            |t| rms_norm(&t[0], &[4, 5], Some(&t[1]), Some(1e-4)),
            |t| rms_norm(&t[0].transpose(1, 2)?, &[4], None, None),
        ];
        for f in cases {
            gradcheck(f, &inputs)?;
            gradgradcheck(f, &inputs)?;
        }
        Ok(())
    }

    /// Softmax and log-softmax over each dim, and attention's masked softmax (causal, a bool
    /// mask that masks a whole row, a float mask), to first and second order.
    #[test]
    fn fused_softmaxes_pass_gradcheck_and_gradgradcheck() -> Result<()> {
        let x = randn(&[2, 3, 4], 4)?;
        for dim in 0..3 {
            gradcheck(|t| t[0].softmax(dim), std::slice::from_ref(&x))?;
            gradgradcheck(|t| t[0].softmax(dim), std::slice::from_ref(&x))?;
            gradcheck(|t| t[0].log_softmax(dim), std::slice::from_ref(&x))?;
            gradgradcheck(|t| t[0].log_softmax(dim), std::slice::from_ref(&x))?;
        }
        let qkv = [
            randn(&[2, 3, 3], 5)?,
            randn(&[2, 4, 3], 6)?,
            randn(&[2, 4, 2], 7)?,
        ];
        let keep = Tensor::from_vec(
            vec![
                true, false, true, true, //
                false, false, false, false, //
                true, true, false, true,
            ],
            &[3, 4],
        )?;
        let add = Tensor::from_vec(vec![0.5f64, -1.0, 0.0, 2.0], &[4])?;
        let cases: [BoxedOp<'_>; 3] = [
            Box::new(|t| scaled_dot_product_attention(&t[0], &t[1], &t[2], None, 0.0, true, None)),
            Box::new(|t| {
                scaled_dot_product_attention(&t[0], &t[1], &t[2], Some(&keep), 0.0, false, None)
            }),
            Box::new(|t| {
                scaled_dot_product_attention(&t[0], &t[1], &t[2], Some(&add), 0.0, false, Some(0.3))
            }),
        ];
        for f in &cases {
            gradcheck(f, &qkv)?;
            gradgradcheck(f, &qkv)?;
        }
        // The query row whose keys are all masked gives zeros and passes no gradient.
        let y = cases[1](&qkv)?;
        let row = y.select(1, 1)?.to_vec::<f64>()?;
        assert!(row.iter().all(|&v| v == 0.0), "{row:?}");
        Ok(())
    }

    /// A float mask that requires grad is added to the scores (its gradient is the scores'),
    /// as PyTorch's math path does; the fused kernel is used only for masks without one.
    #[test]
    fn a_float_mask_that_requires_grad_gets_its_gradient() -> Result<()> {
        let qkv = [
            randn(&[3, 2], 8)?,
            randn(&[4, 2], 9)?,
            randn(&[4, 2], 10)?,
            randn(&[3, 4], 11)?,
        ];
        let f = |t: &[Tensor]| {
            scaled_dot_product_attention(&t[0], &t[1], &t[2], Some(&t[3]), 0.0, false, None)
        };
        gradcheck(f, &qkv)?;
        gradgradcheck(f, &qkv)
    }

    /// Half inputs are computed in f32 and rounded once: the bf16 result is the f32 one rounded.
    #[test]
    fn half_inputs_compute_in_f32() -> Result<()> {
        let x = Tensor::randn_seeded(&[4, 8], DType::F32, 12)?.to_dtype(DType::BF16)?;
        let w = Tensor::randn_seeded(&[8], DType::F32, 13)?.to_dtype(DType::BF16)?;
        let up = |t: &Tensor| t.to_dtype(DType::F32);
        let want = layer_norm(&up(&x)?, &[8], Some(&up(&w)?), None, 1e-5)?.to_dtype(DType::BF16)?;
        let got = layer_norm(&x, &[8], Some(&w), None, 1e-5)?;
        assert_eq!(got.dtype(), DType::BF16);
        assert_eq!(up(&got)?.to_vec::<f32>()?, up(&want)?.to_vec::<f32>()?);
        let want = rms_norm(&up(&x)?, &[8], Some(&up(&w)?), None)?.to_dtype(DType::BF16)?;
        let got = rms_norm(&x, &[8], Some(&w), None)?;
        assert_eq!(up(&got)?.to_vec::<f32>()?, up(&want)?.to_vec::<f32>()?);
        Ok(())
    }
}
