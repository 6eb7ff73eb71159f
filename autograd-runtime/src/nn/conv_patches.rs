//! im2col and col2im as differentiable ops, for convolution on host memory.
//!
//! [`im2col`] writes the patch matrix of an image with contiguous row copies (the CPU kernel in
//! `backend/cpu/conv.rs`); its gradient is [`col2im`], which adds the rows back, and whose
//! gradient is `im2col` again: both are linear, so convolution built from them and `matmul` is
//! differentiable any number of times. The nodes take PyTorch's names for `unfold` and `fold`.

use autograd_macros::{backward, differentiable};

use crate::backend::Patches;
use crate::tensor::kernels;
use crate::{Result, Tensor};

/// The `[C·kh·kw, N·OH·OW]` patch matrix of the `[N, C, H, W]` image `x`, laid out as
/// [`Patches`] says (the batch between the kernel offsets and the output positions).
#[differentiable(builtin, crate = "crate", name = "Im2ColBackward0")]
fn im2col(x: &Tensor, patches: Patches) -> Result<Tensor> {
    kernels::of_tensor(x)?.im2col(x, &patches)
}

#[backward(im2col)]
fn im2col_backward(grad: &Tensor, patches: Patches) -> Result<Tensor> {
    col2im(grad, patches)
}

/// The `[N, C, H, W]` image whose elements sum the entries of the patch matrix `cols` that read
/// them: the adjoint of [`im2col`].
#[differentiable(builtin, crate = "crate", name = "Col2ImBackward0")]
fn col2im(cols: &Tensor, patches: Patches) -> Result<Tensor> {
    kernels::of_tensor(cols)?.col2im(cols, &patches)
}

#[backward(col2im)]
fn col2im_backward(grad: &Tensor, patches: Patches) -> Result<Tensor> {
    im2col(grad, patches)
}

/// The patch matrix of `x` (`[N, C, H, W]`, on a host device, floating point) for `patches`.
pub(super) fn columns(x: &Tensor, patches: Patches) -> Result<Tensor> {
    im2col(x, patches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gradcheck, gradgradcheck};

    fn patches(shape: [usize; 4], kernel: [usize; 2], stride: [usize; 2]) -> Patches {
        let (padding, dilation) = ([1, 2], [2, 1]);
        let output = [0, 1].map(|d| {
            (shape[2 + d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1
        });
        Patches {
            batch: shape[0],
            channels: shape[1],
            input: [shape[2], shape[3]],
            kernel,
            stride,
            padding,
            dilation,
            output,
        }
    }

    /// Both ops are checked against finite differences to first and second order (f64).
    #[test]
    fn im2col_and_col2im_pass_gradcheck_and_gradgradcheck() -> Result<()> {
        let p = patches([2, 2, 5, 4], [2, 3], [2, 1]);
        let x = Tensor::randn_seeded(&[2, 2, 5, 4], crate::DType::F64, 3)?.requires_grad_(true)?;
        let f = |i: &[Tensor]| im2col(&i[0], p);
        gradcheck(f, std::slice::from_ref(&x))?;
        gradgradcheck(f, std::slice::from_ref(&x))?;
        let [rows, cols] = p.columns_shape();
        let c = Tensor::randn_seeded(&[rows, cols], crate::DType::F64, 4)?.requires_grad_(true)?;
        let g = |i: &[Tensor]| col2im(&i[0], p);
        gradcheck(g, std::slice::from_ref(&c))?;
        gradgradcheck(g, std::slice::from_ref(&c))?;
        Ok(())
    }
}
