//! `softmax` and `log_softmax` over one dimension, numerically stable (the kernels subtract the
//! maximum), with backward formulas written in tensor ops so they are differentiable again.

use smallvec::smallvec;

use crate::backend::cpu;
use crate::graph::{collect_next_edges, record, Backward, GradVec, NodeMeta, SavedTensor};
use crate::tensor::data::with_view;
use crate::tensor::layout::wrap_dim;
use crate::{Result, Tensor};

struct SoftmaxBackward {
    dim: usize,
    result: SavedTensor,
}

impl Backward for SoftmaxBackward {
    const NAME: &'static str = "SoftmaxBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        // dx = y * (g - Σ_dim g·y)
        let g = grads[0].as_ref().expect("invariant: materialised");
        let y = self.result.get()?;
        let dot = g.mul(&y)?.sum_dims(&[self.dim], true)?;
        Ok(smallvec![Some(y.mul(&g.sub(&dot)?)?)])
    }
    fn release(&self) {
        self.result.release();
    }
}

struct LogSoftmaxBackward {
    dim: usize,
    result: SavedTensor,
}

impl Backward for LogSoftmaxBackward {
    const NAME: &'static str = "LogSoftmaxBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        // dx = g - exp(y) · Σ_dim g
        let g = grads[0].as_ref().expect("invariant: materialised");
        let y = self.result.get()?;
        let total = g.sum_dims(&[self.dim], true)?;
        Ok(smallvec![Some(g.sub(&y.exp()?.mul(&total)?)?)])
    }
    fn release(&self) {
        self.result.release();
    }
}

impl Tensor {
    /// `exp(x) / Σ exp(x)` over `dim`, computed stably.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`](crate::Error::DimOutOfRange).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![1000.0f64, 1000.0], &[2])?;
    /// assert_eq!(x.softmax(0)?.to_vec::<f64>()?, vec![0.5, 0.5]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn softmax(&self, dim: usize) -> Result<Tensor> {
        let dim = wrap_dim(dim as isize, self.ndim())?.min(self.ndim().saturating_sub(1));
        let device = self.device();
        let out = with_view!(self, |a| Tensor::from_ndarray_on(
            cpu::softmax(a, dim),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |node| SoftmaxBackward {
                dim,
                result: SavedTensor::output(&out, node.clone(), 0),
            });
        }
        Ok(out)
    }

    /// `x - log Σ exp(x)` over `dim`, computed stably.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`](crate::Error::DimOutOfRange).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![0.0f64, 0.0], &[1, 2])?;
    /// let y = x.log_softmax(1)?.to_vec::<f64>()?;
    /// assert!((y[0] + 2f64.ln()).abs() < 1e-15);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn log_softmax(&self, dim: usize) -> Result<Tensor> {
        let dim = wrap_dim(dim as isize, self.ndim())?.min(self.ndim().saturating_sub(1));
        let device = self.device();
        let out = with_view!(self, |a| Tensor::from_ndarray_on(
            cpu::log_softmax(a, dim),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |node| LogSoftmaxBackward {
                dim,
                result: SavedTensor::output(&out, node.clone(), 0),
            });
        }
        Ok(out)
    }
}
