//! Matrix multiplication: 2-D and batched (leading dims broadcast).

use autograd_macros::{backward, differentiable, jvp};

use crate::backend;
use crate::tensor::kernels;
use crate::{Error, Result, Tensor};

/// `a @ b` (shapes checked). Each operand is saved only if the other needs its gradient.
#[differentiable(builtin, crate = "crate", name = "MmBackward0", rule)]
fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    kernels::of_pair("matmul", a, b)?.matmul(a, b)
}

/// The product rule: `ȧ b + a ḃ`, with the terms of the tangents given.
#[jvp(matmul)]
fn matmul_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    super::binary::product_rule(a_t.map(|t| t.matmul(b)), b_t.map(|t| a.matmul(t)))
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
        crate::amp::autocast_op!(Matmul, (self, other), |(a, b)| a.matmul(&b));
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
        if rb == 2 && ra >= 3 && self.folds_against(other) {
            // PyTorch's fold: `[.., n, k] @ [k, m]` as one `[rows, k] @ [k, m]` product, its
            // result an `_unsafe_view` of the batch shape. The matrix's gradient is then one
            // product over every row, not a batch of products summed afterwards.
            let rows: usize = a[..ra - 1].iter().product();
            let product = matmul(&self.reshape(&[rows, k])?, other)?;
            return super::shape::unsafe_view(&product, &out);
        }
        matmul(self, other)
    }

    /// PyTorch's `should_fold` for a batch (`self`, 3 dims or more) against a matrix: always when
    /// the matrix requires grad (folding then avoids a batch-sized gradient to reduce, at the
    /// cost of a copy where `self`'s batch dims do not fold), else when they fold as a view.
    fn folds_against(&self, matrix: &Tensor) -> bool {
        if matrix.requires_grad() || self.numel() == 0 {
            return true;
        }
        let layout = self.layout();
        let (shape, strides) = (&layout.shape, &layout.strides);
        (0..shape.len() - 2).all(|i| strides[i] == strides[i + 1] * shape[i + 1])
    }
}

// ----- `bmm`, `baddbmm`, `outer`: `matmul` with PyTorch's stricter checks ----------------------

/// `a.bmm(b)` (shapes checked), PyTorch's `BmmBackward0`; each operand saved only if the other
/// needs its gradient.
#[differentiable(builtin, crate = "crate", name = "BmmBackward0")]
fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    kernels::of_pair("bmm", a, b)?.matmul(a, b)
}

#[backward(bmm)]
fn bmm_backward(
    grad: &Tensor,
    // Unpacked in PyTorch's order (`mat2` before `self`).
    #[needed_for(a)] b: Option<&Tensor>,
    #[needed_for(b)] a: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let ga = match b {
        Some(b) => Some(grad.bmm(&b.transpose(1, 2)?)?),
        None => None,
    };
    let gb = match a {
        Some(a) => Some(a.transpose(1, 2)?.bmm(grad)?),
        None => None,
    };
    Ok((ga, gb))
}

/// The product rule, as `matmul`'s.
#[jvp(bmm)]
fn bmm_jvp(a_t: Option<&Tensor>, b_t: Option<&Tensor>, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    super::binary::product_rule(a_t.map(|t| bmm(t, b)), b_t.map(|t| bmm(a, t)))
}

impl Tensor {
    /// Checks `self` and `other` as PyTorch's `bmm` does: both 3-D, the same batch size, and
    /// `self`'s columns matching `other`'s rows.
    fn check_bmm(&self, other: &Tensor) -> Result<()> {
        if self.ndim() != 3 {
            return Err(Error::size_mismatch("bmm", "batch1 must be a 3D tensor"));
        }
        if other.ndim() != 3 {
            return Err(Error::size_mismatch("bmm", "batch2 must be a 3D tensor"));
        }
        let (a, b) = (self.shape(), other.shape());
        if b[0] != a[0] || b[1] != a[2] {
            return Err(Error::size_mismatch(
                "bmm",
                format!(
                    "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] \
                     but got: [{}, {}].",
                    a[0], a[2], b[0], b[1]
                ),
            ));
        }
        Ok(())
    }

    /// The batched matrix product of `[b, n, k]` and `[b, k, m]` tensors (PyTorch's `bmm`:
    /// unlike [`Tensor::matmul`], no broadcasting; `BmmBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] with PyTorch's texts: `batch1 must be a 3D tensor`, `Expected
    /// size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].`; dtype and
    /// device mismatches.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let a = Tensor::ones(&[2, 3, 4], DType::F32)?;
    /// let b = Tensor::ones(&[2, 4, 5], DType::F32)?;
    /// assert_eq!(a.bmm(&b)?.shape(), &[2, 3, 5]);
    /// assert!(a.bmm(&Tensor::ones(&[4, 5], DType::F32)?).is_err());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn bmm(&self, other: &Tensor) -> Result<Tensor> {
        crate::amp::autocast_op!(Bmm, (self, other), |(a, b)| a.bmm(&b));
        self.check_bmm(other)?;
        let (a, b) = (self.shape(), other.shape());
        let numel = crate::layout::checked_numel("bmm", &[a[0], a[1], b[2]])?;
        crate::layout::check_alloc("bmm", numel, self.dtype().size_of())?;
        bmm(self, other)
    }

    /// `beta * self + alpha * batch1.bmm(batch2)` (PyTorch's `baddbmm`; `self` broadcasts to
    /// the product's shape; with `beta == 0` it is not read, so NaN in it does not spread).
    ///
    /// # Errors
    ///
    /// As [`Tensor::bmm`]; [`Error::Shape`] (PyTorch's `expand` text) when `self` does not
    /// broadcast to the product's shape.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let c = Tensor::ones(&[3, 5], DType::F64)?;
    /// let a = Tensor::ones(&[2, 3, 4], DType::F64)?;
    /// let b = Tensor::ones(&[2, 4, 5], DType::F64)?;
    /// let r = c.baddbmm(&a, &b, 0.5, 2.0)?;
    /// assert_eq!(r.shape(), &[2, 3, 5]);
    /// assert_eq!(r.to_vec::<f64>()?[0], 0.5 + 2.0 * 4.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: f64,
        alpha: f64,
    ) -> Result<Tensor> {
        crate::amp::autocast_entry!(baddbmm(self, batch1, batch2, beta, alpha));
        batch1.check_bmm(batch2)?;
        let shape = [batch1.shape()[0], batch1.shape()[1], batch2.shape()[2]];
        // The shape check first, as PyTorch's.
        crate::layout::Layout {
            shape: self.shape().into(),
            strides: self.strides().into(),
            offset: 0,
        }
        .expand(&shape)?;
        let mut product = batch1.matmul(batch2)?;
        if alpha != 1.0 {
            product = product.mul_scalar(alpha)?;
        }
        if beta == 0.0 {
            return Ok(product);
        }
        let scaled = if beta == 1.0 {
            self.clone()
        } else {
            self.mul_scalar(beta)?
        };
        scaled.add(&product)
    }

    /// The outer product of two 1-D tensors, `[n]` and `[m]` to `[n, m]` (PyTorch's `outer`,
    /// recorded as its `MulBackward0` of a column by a row).
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] for an operand that is not 1-D (PyTorch's text); dtype and
    /// device mismatches.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// let b = Tensor::from_vec(vec![1.0f32, 10.0, 100.0], &[3])?;
    /// let o = a.outer(&b)?;
    /// assert_eq!(o.shape(), &[2, 3]);
    /// assert_eq!(o.to_vec::<f32>()?, vec![1.0, 10.0, 100.0, 2.0, 20.0, 200.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn outer(&self, other: &Tensor) -> Result<Tensor> {
        for (t, name) in [(self, "self"), (other, "vec2")] {
            if t.ndim() != 1 {
                return Err(Error::size_mismatch(
                    "outer",
                    format!(
                        "outer: Expected 1-D argument {name}, but got {}-D",
                        t.ndim()
                    ),
                ));
            }
        }
        self.reshape(&[self.shape()[0], 1])?.mul(other)
    }
}
