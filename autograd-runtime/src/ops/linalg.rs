//! Matrix multiplication: 2-D and batched (leading dims broadcast).

use smallvec::smallvec;

use crate::backend::cpu;
use crate::graph::{collect_next_edges, record, Backward, GradVec, NodeMeta, SavedTensor};
use crate::tensor::data::with_views2;
use crate::{Error, Result, Tensor};

struct MmBackward {
    lhs: Option<SavedTensor>,
    rhs: Option<SavedTensor>,
}

impl Backward for MmBackward {
    const NAME: &'static str = "MmBackward0";
    fn backward(&self, meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grads[0].as_ref().expect("invariant: materialised");
        let t = |x: &Tensor| x.transpose(x.ndim() - 2, x.ndim() - 1);
        let ga = match &self.rhs {
            Some(b) if meta.needs_input_grad(0) => Some(g.matmul(&t(&b.get()?)?)?),
            _ => None,
        };
        let gb = match &self.lhs {
            Some(a) if meta.needs_input_grad(1) => Some(t(&a.get()?)?.matmul(g)?),
            _ => None,
        };
        Ok(smallvec![ga, gb])
    }
    fn release(&self) {
        self.lhs
            .iter()
            .chain(&self.rhs)
            .for_each(SavedTensor::release);
    }
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
        if cpu::broadcast_shapes(ba, bb).is_err() {
            return Err(Error::shape(
                "matmul",
                format!("batch dimensions {ba:?} and {bb:?} do not broadcast"),
            ));
        }
        let device = self.device();
        let out = with_views2!("matmul", self, other, |x, y| Ok::<_, Error>(
            Tensor::from_ndarray_on(cpu::matmul(x, y)?, device)
        ))?;
        if let Some(edges) = collect_next_edges(&[self, other]) {
            let (save_lhs, save_rhs) = (edges[1].is_some(), edges[0].is_some());
            record(edges, &[&out], |_| MmBackward {
                lhs: save_lhs.then(|| SavedTensor::input(self)),
                rhs: save_rhs.then(|| SavedTensor::input(other)),
            });
        }
        Ok(out)
    }
}
