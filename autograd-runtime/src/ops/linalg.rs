//! Matrix multiplication: 2-D and batched (leading dims broadcast).

use autograd_macros::{backward, differentiable};

use crate::backend;
use crate::tensor::kernels;
use crate::{Error, Result, Tensor};

/// `a @ b` (shapes checked). Each operand is saved only if the other needs its gradient.
#[differentiable(builtin, crate = "crate", name = "MmBackward0", rule)]
fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    kernels::of_pair("matmul", a, b)?.matmul(a, b)
}

#[backward(matmul)]
fn matmul_backward(
    grad: &Tensor,
    // Unpacked in PyTorch's order (`mat2` before `self`).
    #[needed_for(a)] b: Option<&Tensor>,
    #[needed_for(b)] a: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let t = |x: &Tensor| x.transpose(x.ndim() - 2, x.ndim() - 1);
    let ga = match b {
        Some(b) => Some(grad.matmul(&t(b)?)?),
        None => None,
    };
    let gb = match a {
        Some(a) => Some(t(a)?.matmul(grad)?),
        None => None,
    };
    Ok((ga, gb))
}

impl Tensor {
    /// The matrix product, with PyTorch's `matmul` rules for every rank from 1: `[k] @ [k]` is a
    /// 0-dim dot product, `[n, k] @ [k]` a matrix-vector product `[n]`, `[k] @ [k, m]` a
    /// vector-matrix product `[m]`, `[n, k] @ [k, m]` is `[n, m]`, and operands with more dims
    /// are batches of matrices whose leading (batch) dims broadcast (a 1-D operand takes part as
    /// a one-row or one-column matrix whose extra dim is dropped from the result). The
    /// gradients follow through the same reshapes.
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] with PyTorch's message for sizes that do not fit (which names the
    /// kernel PyTorch runs: `mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)`, the
    /// dot and matrix-vector products' own texts), [`Error::Broadcast`] for batch dims that do
    /// not broadcast, [`Error::SizeMismatch`] for a 0-dim operand; dtype and device mismatches.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let b = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], &[2, 2])?;
    /// assert_eq!(a.matmul(&b)?.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0]);
    /// let v = Tensor::from_vec(vec![1.0f64, 1.0], &[2])?;
    /// assert_eq!(a.matmul(&v)?.to_vec::<f64>()?, vec![3.0, 7.0]); // [2, 2] @ [2] -> [2]
    /// assert_eq!(v.matmul(&v)?.shape(), &[] as &[usize]); // a dot product
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b) = (self.shape(), other.shape());
        let (ra, rb) = (a.len(), b.len());
        let too_small = |what: &str| {
            Error::size_mismatch(
                "matmul",
                format!(
                    "both arguments to matmul need to be at least {what}, but they are {ra}D and {rb}D"
                ),
            )
        };
        match (ra, rb) {
            (0, _) | (_, 0) => Err(too_small("1D")),
            (1, 1) => {
                if a[0] != b[0] {
                    return Err(Error::size_mismatch(
                        "matmul",
                        format!(
                            "inconsistent tensor size, expected tensor [{}] and src [{}] to have \
                             the same number of elements, but got {} and {} elements respectively",
                            a[0], b[0], a[0], b[0]
                        ),
                    ));
                }
                // As [1, k] @ [k, 1], reshaped to 0 dims.
                self.reshape(&[1, a[0]])?
                    .matmul_2d_or_more(&other.reshape(&[b[0], 1])?)?
                    .reshape(&[])
            }
            (_, 1) => {
                let rows: usize = a[..ra - 1].iter().product();
                if a[ra - 1] != b[0] {
                    return Err(Error::size_mismatch(
                        "matmul",
                        format!(
                            "size mismatch, got input ({rows}), mat ({rows}x{}), vec ({})",
                            a[ra - 1],
                            b[0]
                        ),
                    ));
                }
                // As [.., n, k] @ [k, 1], the last dim dropped.
                self.matmul_2d_or_more(&other.reshape(&[b[0], 1])?)?
                    .reshape(&a[..ra - 1])
            }
            (1, _) => {
                // As [1, k] @ [.., k, m], the row dim dropped.
                let out = self.reshape(&[1, a[0]])?.matmul_2d_or_more(other)?;
                let mut shape = out.shape().to_vec();
                shape.remove(shape.len() - 2);
                out.reshape(&shape)
            }
            _ => self.matmul_2d_or_more(other),
        }
    }

    /// [`Tensor::matmul`] of operands with at least 2 dims each, checked with PyTorch's texts:
    /// a batch against a single matrix is checked as PyTorch's folded `mm`, two batches as its
    /// `bmm` (batch dims first).
    fn matmul_2d_or_more(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b) = (self.shape(), other.shape());
        let (ra, rb) = (a.len(), b.len());
        let (k, k2) = (a[ra - 1], b[rb - 2]);
        let (ba, bb) = (&a[..ra - 2], &b[..rb - 2]);
        let mut out = if rb == 2 {
            if k != k2 {
                let rows: usize = a[..ra - 1].iter().product();
                return Err(Error::size_mismatch(
                    "matmul",
                    format!(
                        "mm: mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {k2}x{})",
                        b[1]
                    ),
                ));
            }
            ba.to_vec()
        } else {
            let batch = backend::broadcast_shapes(ba, bb).map_err(|e| Error::Broadcast {
                size_a: e.size_a,
                size_b: e.size_b,
                dim: e.dim,
            })?;
            if k != k2 {
                let n: usize = batch.iter().product();
                return Err(Error::size_mismatch(
                    "matmul",
                    format!(
                        "Expected size for first two dimensions of batch2 tensor to be: \
                         [{n}, {k}] but got: [{n}, {k2}]."
                    ),
                ));
            }
            batch
        };
        out.extend([a[ra - 2], b[rb - 1]]);
        let numel = crate::layout::checked_numel("matmul", &out)?;
        crate::layout::check_alloc("matmul", numel, self.dtype().size_of())?;
        matmul(self, other)
    }
}
