//! im2col and col2im as differentiable ops, for convolution on host memory.
//!
//! [`im2col`] writes the patch matrix of an image with contiguous row copies (the CPU kernel in
//! `backend/cpu/conv.rs`); its gradient is [`col2im`], which adds the rows back, and whose
//! gradient is `im2col` again: both are linear, so convolution built from them and `matmul` is
//! differentiable any number of times. The nodes take PyTorch's names for `unfold` and `fold`.

use autograd_macros::{backward, differentiable, jvp};

use crate::backend::Patches;
use crate::ops::records;
use crate::tensor::kernels;
use crate::{Result, Tensor};

/// The `[N, C·kh·kw, OH·OW]` patch matrices of the `[N, C, H, W]` image `x` (see [`Patches`]).
#[differentiable(builtin, crate = "crate", name = "Im2ColBackward0")]
fn im2col(x: &Tensor, patches: Patches) -> Result<Tensor> {
    kernels::of_tensor(x)?.im2col(x, &patches)
}

#[backward(im2col)]
fn im2col_backward(grad: &Tensor, patches: Patches) -> Result<Tensor> {
    col2im(grad, patches)
}

// Both are linear: the same op on the tangent.
#[jvp(im2col)]
fn im2col_jvp(x_t: &Tensor, patches: Patches) -> Result<Tensor> {
    im2col(x_t, patches)
}

/// The `[N, C, H, W]` image whose elements sum the entries of the patch matrices `cols` that
/// read them: the adjoint of [`im2col`].
#[differentiable(builtin, crate = "crate", name = "Col2ImBackward0")]
fn col2im(cols: &Tensor, patches: Patches) -> Result<Tensor> {
    kernels::of_tensor(cols)?.col2im(cols, &patches)
}

#[backward(col2im)]
fn col2im_backward(grad: &Tensor, patches: Patches) -> Result<Tensor> {
    im2col(grad, patches)
}

#[jvp(col2im)]
fn col2im_jvp(cols_t: &Tensor, patches: Patches) -> Result<Tensor> {
    col2im(cols_t, patches)
}

/// `weight` (`[G, O/G, K]`, `K = C/G·kh·kw`) times every batch entry's patch matrix of each
/// group (`cols`, `[N, G, K, L]`): `[N, G, O/G, L]`, one GEMM per entry and group (the
/// weight broadcast over the batch). A `matmul` of its own for its backward's orientation:
/// the weight's gradient is summed over the batch as `cols @ gradᵀ`, whose operands `gemm`
/// reads about twice as fast as `grad @ colsᵀ`'s (`[576, 1024] @ [1024, 64]`: 0.51 ms against
/// 1.08 on one core of a Xeon with AVX-512).
#[differentiable(builtin, crate = "crate", name = "BmmBackward0")]
fn weight_matmul(weight: &Tensor, cols: &Tensor) -> Result<Tensor> {
    kernels::of_pair("matmul", weight, cols)?.matmul(weight, cols)
}

#[backward(weight_matmul)]
fn weight_matmul_backward(
    grad: &Tensor,
    #[needed_for(cols)] weight: Option<&Tensor>,
    #[needed_for(weight)] cols: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    // [N, G, K, L] @ [N, G, L, O/G] -> [N, G, K, O/G], summed over N, -> [G, O/G, K].
    let grad_weight = match cols {
        Some(c) => Some(
            c.matmul(&grad.transpose(2, 3)?)?
                .sum_dims(&[0], false)?
                .transpose(1, 2)?,
        ),
        None => None,
    };
    let grad_cols = match weight {
        Some(w) => Some(w.transpose(1, 2)?.matmul(grad)?),
        None => None,
    };
    Ok((grad_weight, grad_cols))
}

/// The product rule.
#[jvp(weight_matmul)]
fn weight_matmul_jvp(
    weight_t: Option<&Tensor>,
    cols_t: Option<&Tensor>,
    weight: &Tensor,
    cols: &Tensor,
) -> Result<Tensor> {
    match (weight_t, cols_t) {
        (Some(w), Some(c)) => weight_matmul(w, cols)?.add(&weight_matmul(weight, c)?),
        (Some(w), None) => weight_matmul(w, cols),
        (None, Some(c)) => weight_matmul(weight, c),
        (None, None) => weight_matmul(weight, cols)?.zeros_like(),
    }
}

/// 2-D convolution as one op (PyTorch's `convolution`): `input` `[N, C, H, W]`, `weight`
/// `[O, C/G, kh, kw]`, optional `bias` `[O]`, all f32 or all f64 on a backend with the fused
/// kernels (checked by the caller, as the shapes are); the result is `[N, O, OH, OW]`. The
/// backward is the fused kernel too, unless it is recorded (`create_graph` with an operand
/// that requires grad): then it is written in the differentiable ops above (im2col, col2im,
/// `matmul`), so convolution stays differentiable any number of times.
#[differentiable(builtin, crate = "crate", name = "ConvolutionBackward0")]
fn convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    patches: Patches,
    groups: usize,
) -> Result<Tensor> {
    kernels::of_tensor(input)?.conv2d(input, weight, bias, &patches, groups)
}

#[backward(convolution)]
fn convolution_backward(
    grad: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    patches: Patches,
    groups: usize,
    needs_input_grad: [bool; 3],
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    if !records(&[grad, input, weight]) {
        let [dx, dw, db] = kernels::of_tensor(input)?.conv2d_backward(
            grad,
            input,
            weight,
            &patches,
            groups,
            needs_input_grad,
        )?;
        return Ok((dx, dw, db));
    }
    let ws = weight.shape();
    let (n, o) = (patches.batch, ws[0]);
    let (k, l) = (ws[1] * ws[2] * ws[3], patches.output[0] * patches.output[1]);
    // [N, G, O/G, L] and [G, O/G, K/G].
    let g = grad.reshape(&[n, groups, o / groups, l])?;
    let w = weight.reshape(&[groups, o / groups, k])?;
    let dx = if needs_input_grad[0] {
        let cols = w.transpose(1, 2)?.matmul(&g)?; // [N, G, K/G, L]
        Some(col2im(&cols.reshape(&[n, groups * k, l])?, patches)?)
    } else {
        None
    };
    let dw = if needs_input_grad[1] {
        let cols = im2col(input, patches)?.reshape(&[n, groups, k, l])?;
        Some(
            cols.matmul(&g.transpose(2, 3)?)?
                .sum_dims(&[0], false)?
                .transpose(1, 2)?
                .reshape(ws)?,
        )
    } else {
        None
    };
    let db = if needs_input_grad[2] {
        Some(grad.sum_dims(&[0, 2, 3], false)?)
    } else {
        None
    };
    Ok((dx, dw, db))
}

/// Bilinear in (input, weight), plus the bias: `conv(ẋ, w) + conv(x, ẇ) + ḃ`.
#[jvp(convolution)]
fn convolution_jvp(
    input_t: Option<&Tensor>,
    weight_t: Option<&Tensor>,
    bias_t: Option<&Tensor>,
    input: &Tensor,
    weight: &Tensor,
    patches: Patches,
    groups: usize,
) -> Result<Tensor> {
    let mut out = match input_t {
        Some(x_t) => Some(convolution(x_t, weight, None, patches, groups)?),
        None => None,
    };
    if let Some(w_t) = weight_t {
        let t = convolution(input, w_t, None, patches, groups)?;
        out = Some(match out {
            Some(o) => o.add(&t)?,
            None => t,
        });
    }
    let out = match out {
        Some(o) => o,
        None => convolution(input, weight, None, patches, groups)?.zeros_like()?,
    };
    match bias_t {
        Some(b_t) => out.add(&b_t.reshape(&[b_t.shape()[0], 1, 1])?),
        None => Ok(out),
    }
}

/// [`convolution`]: the fused op, for operands the caller checked.
pub(super) fn fused(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    patches: Patches,
    groups: usize,
) -> Result<Tensor> {
    convolution(input, weight, bias, patches, groups)
}

/// Whether `conv2d` of `input` runs as the fused op: f32 or f64 operands of one dtype (checked
/// by the caller) on a backend with the fused kernels.
pub(super) fn fusable(input: &Tensor) -> Result<bool> {
    Ok(
        matches!(input.dtype(), crate::DType::F32 | crate::DType::F64)
            && kernels::of_tensor(input)?.fused_conv(),
    )
}

/// The patch matrices of `x` (`[N, C, H, W]`, on a host device, floating point) for `patches`.
pub(super) fn columns(x: &Tensor, patches: Patches) -> Result<Tensor> {
    im2col(x, patches)
}

/// [`weight_matmul`]: `weight` `[G, O/G, K]`, `cols` `[N, G, K, L]`, both of one dtype and
/// device (checked by the caller).
pub(super) fn grouped_matmul(weight: &Tensor, cols: &Tensor) -> Result<Tensor> {
    weight_matmul(weight, cols)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gradcheck, gradgradcheck};

    fn patches(shape: [usize; 4], kernel: [usize; 2], stride: [usize; 2]) -> Patches {
        Patches::new(shape, kernel, stride, [1, 2], [2, 1])
    }

    /// The GEMM of the weight and the patch matrices, to first and second order (f64).
    #[test]
    fn weight_matmul_passes_gradcheck_and_gradgradcheck() -> Result<()> {
        let w = Tensor::randn_seeded(&[2, 3, 4], crate::DType::F64, 5)?.requires_grad_(true)?;
        let c = Tensor::randn_seeded(&[3, 2, 4, 5], crate::DType::F64, 6)?.requires_grad_(true)?;
        let f = |i: &[Tensor]| weight_matmul(&i[0], &i[1]);
        gradcheck(f, &[w.clone(), c.clone()])?;
        gradgradcheck(f, &[w, c])
    }

    /// Both ops are checked against finite differences to first and second order (f64).
    #[test]
    fn im2col_and_col2im_pass_gradcheck_and_gradgradcheck() -> Result<()> {
        let p = patches([2, 2, 5, 4], [2, 3], [2, 1]);
        let x = Tensor::randn_seeded(&[2, 2, 5, 4], crate::DType::F64, 3)?.requires_grad_(true)?;
        let f = |i: &[Tensor]| im2col(&i[0], p);
        gradcheck(f, std::slice::from_ref(&x))?;
        gradgradcheck(f, std::slice::from_ref(&x))?;
        let c = Tensor::randn_seeded(&p.columns_shape(), crate::DType::F64, 4)?;
        let c = c.requires_grad_(true)?;
        let g = |i: &[Tensor]| col2im(&i[0], p);
        gradcheck(g, std::slice::from_ref(&c))?;
        gradgradcheck(g, std::slice::from_ref(&c))?;
        Ok(())
    }
}
