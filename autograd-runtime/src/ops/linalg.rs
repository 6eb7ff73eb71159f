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
    /// Matrix product: `[n, k] @ [k, m] -> [n, m]`, or batched `[.., n, k] @ [.., k, m]` with
    /// broadcast batch dims.
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] for operands with fewer than 2 dims, mismatched inner dims or batch dims
    /// that do not broadcast; dtype and device mismatches.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let b = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], &[2, 2])?;
    /// assert_eq!(a.matmul(&b)?.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b) = (self.shape(), other.shape());
        if a.len() < 2 || b.len() < 2 {
            return Err(Error::shape(
                "matmul",
                format!(
                    "both arguments to matmul need to be at least 2D, but they are {}D and {}D",
                    a.len(),
                    b.len()
                ),
            ));
        }
        if a[a.len() - 1] != b[b.len() - 2] {
            return Err(Error::shape(
                "matmul",
                format!(
                    "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
                    a[a.len() - 2],
                    a[a.len() - 1],
                    b[b.len() - 2],
                    b[b.len() - 1]
                ),
            ));
        }
        let (ba, bb) = (&a[..a.len() - 2], &b[..b.len() - 2]);
        let Ok(mut out) = backend::broadcast_shapes(ba, bb) else {
            return Err(Error::shape(
                "matmul",
                format!("batch dimensions {ba:?} and {bb:?} do not broadcast"),
            ));
        };
        out.extend([a[a.len() - 2], b[b.len() - 1]]);
        let numel = crate::tensor::layout::checked_numel("matmul", &out)?;
        crate::tensor::layout::check_alloc("matmul", numel, self.dtype().size_of())?;
        matmul(self, other)
    }
}
