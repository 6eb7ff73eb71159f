//! The fused convolution kernels on tensors (`Backend::conv2d`, `Backend::conv2d_backward`):
//! the operands' storages read-locked together, each once.

use super::rows::read_all;
use super::{Kernels, wrap};
use crate::Result;
use crate::backend::Patches;
use crate::tensor::Tensor;

impl Kernels {
    /// See [`crate::backend::Backend::fused_conv`].
    pub(crate) fn fused_conv(self) -> bool {
        self.0.fused_conv()
    }

    /// See [`crate::backend::Backend::conv2d`]: operands of one dtype (f32 or f64) and device,
    /// shapes checked by the caller.
    pub(crate) fn conv2d(
        self,
        x: &Tensor,
        w: &Tensor,
        bias: Option<&Tensor>,
        p: &Patches,
        groups: usize,
    ) -> Result<Tensor> {
        let mut operands = vec![x, w];
        operands.extend(bias);
        let out = read_all(&operands, |b| {
            let bias = bias.map(|t| (b[2], t.layout()));
            self.0
                .conv2d((b[0], x.layout()), (b[1], w.layout()), bias, p, groups)
        })?;
        Ok(wrap(out, x.device()))
    }

    /// See [`crate::backend::Backend::conv2d_backward`]: `[d x, d w, d bias]` where `needs`
    /// asks.
    pub(crate) fn conv2d_backward(
        self,
        g: &Tensor,
        x: &Tensor,
        w: &Tensor,
        p: &Patches,
        groups: usize,
        needs: [bool; 3],
    ) -> Result<[Option<Tensor>; 3]> {
        g.check_same_dtype_device("convolution_backward", x)?;
        let outs = read_all(&[g, x, w], |b| {
            self.0.conv2d_backward(
                (b[0], g.layout()),
                (b[1], x.layout()),
                (b[2], w.layout()),
                p,
                groups,
                needs,
            )
        })?;
        let device = x.device();
        Ok(outs.map(|o| o.map(|o| wrap(o, device))))
    }
}
