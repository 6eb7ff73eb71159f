//! The fused row kernels on tensors (`Backend::softmax_masked`, `Backend::softmax_backward`,
//! `Backend::norm`, `Backend::norm_backward`): the operands' storages read-locked together
//! (each once, in address order), halves computed in `f32` and rounded once, as PyTorch's CPU
//! kernels compute them.

use super::{Kernels, wrap};
use crate::backend::{Buffer, NormSpec, RowMask};
use crate::layout::Layout;
use crate::sync::Arc;
use crate::tensor::Tensor;
use crate::{DType, Result};

/// Runs `f` on the buffers of `tensors` (in order), read-locking each storage once, in storage
/// address order.
pub(super) fn read_all<R>(tensors: &[&Tensor], f: impl FnOnce(&[&Buffer]) -> R) -> R {
    let mut storages: Vec<_> = tensors.iter().map(|t| &t.0.storage).collect();
    storages.sort_by_key(|s| Arc::as_ptr(s));
    storages.dedup_by(|a, b| Arc::ptr_eq(a, b));
    let guards: Vec<_> = storages.iter().map(|s| s.data.read()).collect();
    let buffers: Vec<&Buffer> = tensors
        .iter()
        .map(|t| {
            let i = storages
                .iter()
                .position(|s| Arc::ptr_eq(s, &t.0.storage))
                .expect("invariant: every operand's storage was collected");
            &*guards[i]
        })
        .collect();
    f(&buffers)
}

/// The dtype a fused row kernel computes `dtype` in: `f32` for the half types.
fn compute_dtype(dtype: DType) -> DType {
    if dtype.is_half() { DType::F32 } else { dtype }
}

impl Kernels {
    /// See [`crate::backend::Backend::fused_rows`].
    pub(crate) fn fused_rows(self) -> bool {
        self.0.fused_rows()
    }

    /// `t` in `dtype` (itself when it already is).
    fn as_dtype(self, t: &Tensor, dtype: DType) -> Result<Tensor> {
        if t.dtype() == dtype {
            Ok(t.clone())
        } else {
            self.to_dtype(t, dtype)
        }
    }

    /// See [`crate::backend::Backend::softmax_masked`]: over the last dim of `x` (floating), plus `mask` (a
    /// float tensor broadcasting to `x`'s shape, converted to `x`'s dtype) or the causal mask.
    pub(crate) fn softmax_masked(
        self,
        x: &Tensor,
        mask: Option<&Tensor>,
        causal: bool,
        log: bool,
        safe: bool,
    ) -> Result<Tensor> {
        let dtype = compute_dtype(x.dtype());
        let xw = self.as_dtype(x, dtype)?;
        let mask = mask.map(|m| self.as_dtype(m, dtype)).transpose()?;
        let mask_layout: Option<Layout> = mask
            .as_ref()
            .map(|m| m.layout().expand(x.shape()))
            .transpose()?;
        let mut operands = vec![&xw];
        operands.extend(mask.as_ref());
        let out = read_all(&operands, |b| {
            let row_mask = match (&mask_layout, causal) {
                (Some(l), _) => RowMask::Add(b[1], l),
                (None, true) => RowMask::Causal,
                (None, false) => RowMask::None,
            };
            self.0
                .softmax_masked(b[0], xw.layout(), row_mask, log, safe)
        })?;
        self.as_dtype(&wrap(out, x.device()), x.dtype())
    }

    /// See [`crate::backend::Backend::softmax_backward`]: `g` and `y` of one shape, dtype and device.
    pub(crate) fn softmax_backward(
        self,
        g: &Tensor,
        y: &Tensor,
        dim: usize,
        log: bool,
    ) -> Result<Tensor> {
        g.check_same_dtype_device("softmax_backward", y)?;
        let dtype = compute_dtype(g.dtype());
        let (gw, yw) = (self.as_dtype(g, dtype)?, self.as_dtype(y, dtype)?);
        let out = read_all(&[&gw, &yw], |b| {
            self.0
                .softmax_backward(b[0], gw.layout(), b[1], yw.layout(), dim, log)
        })?;
        self.as_dtype(&wrap(out, g.device()), g.dtype())
    }

    /// See [`crate::backend::Backend::norm`]: `x`, `weight` and `bias` of one dtype and device
    /// (checked by the caller), the parameters of `spec.n` elements; `y` in `x`'s dtype.
    pub(crate) fn norm(
        self,
        x: &Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        spec: NormSpec,
    ) -> Result<Tensor> {
        let dtype = compute_dtype(x.dtype());
        let xw = self.as_dtype(x, dtype)?;
        let ww = weight.map(|w| self.as_dtype(w, dtype)).transpose()?;
        let bw = bias.map(|b| self.as_dtype(b, dtype)).transpose()?;
        let mut operands = vec![&xw];
        operands.extend(ww.as_ref());
        operands.extend(bw.as_ref());
        let y = read_all(&operands, |b| {
            let w = ww.as_ref().map(|w| (b[1], w.layout()));
            let at = 1 + usize::from(w.is_some());
            let bi = bw.as_ref().map(|t| (b[at], t.layout()));
            self.0.norm(b[0], xw.layout(), w, bi, spec)
        })?;
        self.as_dtype(&wrap(y, x.device()), x.dtype())
    }

    /// See [`crate::backend::Backend::norm_backward`]: `[dx, dweight, dbias]` in `x`'s dtype,
    /// each when `needs` asks for it.
    pub(crate) fn norm_backward(
        self,
        g: &Tensor,
        x: &Tensor,
        weight: Option<&Tensor>,
        spec: NormSpec,
        needs: [bool; 3],
    ) -> Result<[Option<Tensor>; 3]> {
        g.check_same_dtype_device("native_layer_norm_backward", x)?;
        let dtype = compute_dtype(x.dtype());
        let wide = |t: &Tensor| self.as_dtype(t, dtype);
        let (gw, xw) = (wide(g)?, wide(x)?);
        let ww = weight.map(wide).transpose()?;
        let mut operands = vec![&gw, &xw];
        operands.extend(ww.as_ref());
        let outs = read_all(&operands, |b| {
            self.0.norm_backward(
                (b[0], gw.layout()),
                (b[1], xw.layout()),
                ww.as_ref().map(|w| (b[2], w.layout())),
                spec,
                needs,
            )
        })?;
        let device = x.device();
        let [dx, dw, db] = outs.map(|o| o.map(|o| self.as_dtype(&wrap(o, device), x.dtype())));
        Ok([dx.transpose()?, dw.transpose()?, db.transpose()?])
    }
}
