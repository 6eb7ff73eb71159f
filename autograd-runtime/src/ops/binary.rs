//! Element-wise binary ops with PyTorch broadcasting (`add sub mul div`), and their scalar forms.
//! Gradients are reduced back to each input's shape by the engine's `validate_outputs` (B07).

use smallvec::smallvec;

use crate::backend::cpu::{self, BinaryOp};
use crate::graph::{collect_next_edges, record, Backward, GradVec, NodeMeta, SavedTensor};
use crate::tensor::data::{with_view, with_views2, ElementMap};
use crate::{Element, Result, Tensor};

fn grad0(grads: &GradVec) -> &Tensor {
    grads[0]
        .as_ref()
        .expect("invariant: incoming gradients are materialised")
}

fn saved(s: &Option<SavedTensor>) -> Result<Tensor> {
    s.as_ref()
        .expect("invariant: saved when the other input requires grad")
        .get()
}

/// `x (op) s` or `s (op) x` for one element.
#[derive(Clone, Copy)]
struct ScalarOp {
    op: BinaryOp,
    s: f64,
    scalar_on_left: bool,
}

impl ElementMap for ScalarOp {
    #[inline]
    fn apply<T: Element>(self, x: T) -> T {
        let s = T::from_f64(self.s);
        let (a, b) = if self.scalar_on_left { (s, x) } else { (x, s) };
        match self.op {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            _ => unreachable!("invariant: only arithmetic ops take the element-map path"),
        }
    }
}

struct AddBackward {
    alpha: f64,
}

impl Backward for AddBackward {
    const NAME: &'static str = "AddBackward0";
    fn backward(&self, meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grad0(&grads);
        let gb = if meta.needs_input_grad(1) {
            Some(if self.alpha == 1.0 {
                g.clone()
            } else {
                g.mul_scalar(self.alpha)?
            })
        } else {
            None
        };
        Ok(smallvec![Some(g.clone()), gb])
    }
}

struct SubBackward;

impl Backward for SubBackward {
    const NAME: &'static str = "SubBackward0";
    fn backward(&self, meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grad0(&grads);
        let gb = if meta.needs_input_grad(1) {
            Some(g.neg()?)
        } else {
            None
        };
        Ok(smallvec![Some(g.clone()), gb])
    }
}

struct MulBackward {
    lhs: Option<SavedTensor>,
    rhs: Option<SavedTensor>,
}

impl Backward for MulBackward {
    const NAME: &'static str = "MulBackward0";
    fn backward(&self, meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grad0(&grads);
        let ga = if meta.needs_input_grad(0) {
            Some(g.mul(&saved(&self.rhs)?)?)
        } else {
            None
        };
        let gb = if meta.needs_input_grad(1) {
            Some(g.mul(&saved(&self.lhs)?)?)
        } else {
            None
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

struct DivBackward {
    lhs: Option<SavedTensor>,
    rhs: SavedTensor,
}

impl Backward for DivBackward {
    const NAME: &'static str = "DivBackward0";
    fn backward(&self, meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grad0(&grads);
        let b = self.rhs.get()?;
        let ga = if meta.needs_input_grad(0) {
            Some(g.div(&b)?)
        } else {
            None
        };
        let gb = if meta.needs_input_grad(1) {
            // d(a/b)/db = -a / b²
            let a = saved(&self.lhs)?;
            Some(g.mul(&a)?.div(&b.mul(&b)?)?.neg()?)
        } else {
            None
        };
        Ok(smallvec![ga, gb])
    }
    fn release(&self) {
        self.lhs.iter().for_each(SavedTensor::release);
        self.rhs.release();
    }
}

struct MulScalarBackward {
    scalar: f64,
}

impl Backward for MulScalarBackward {
    const NAME: &'static str = "MulBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        Ok(smallvec![Some(grad0(&grads).mul_scalar(self.scalar)?)])
    }
}

struct AddScalarBackward;

impl Backward for AddScalarBackward {
    const NAME: &'static str = "AddBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        Ok(smallvec![Some(grad0(&grads).clone())])
    }
}

struct RsubScalarBackward;

impl Backward for RsubScalarBackward {
    const NAME: &'static str = "RsubBackward1";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        Ok(smallvec![Some(grad0(&grads).neg()?)])
    }
}

struct RdivScalarBackward {
    scalar: f64,
    rhs: SavedTensor,
}

impl Backward for RdivScalarBackward {
    const NAME: &'static str = "DivBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        // d(s/b)/db = -s / b²
        let b = self.rhs.get()?;
        Ok(smallvec![Some(
            grad0(&grads).mul_scalar(-self.scalar)?.div(&b.mul(&b)?)?
        )])
    }
    fn release(&self) {
        self.rhs.release();
    }
}

impl Tensor {
    pub(crate) fn binary_kernel(
        &self,
        op: BinaryOp,
        name: &'static str,
        other: &Tensor,
    ) -> Result<Tensor> {
        let device = self.device();
        with_views2!(name, self, other, |a, b| Ok(Tensor::from_ndarray_on(
            cpu::binary(op, a, b)?,
            device
        )))
    }

    pub(crate) fn scalar_kernel(&self, op: BinaryOp, s: f64, scalar_on_left: bool) -> Tensor {
        if matches!(
            op,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
        ) {
            return self.map_elements(ScalarOp {
                op,
                s,
                scalar_on_left,
            });
        }
        let device = self.device();
        with_view!(self, |a| Tensor::from_ndarray_on(
            cpu::binary_scalar(op, a, Element::from_f64(s), scalar_on_left),
            device
        ))
    }

    /// Element-wise `self + other`, broadcasting as PyTorch.
    ///
    /// # Errors
    ///
    /// [`Error::Broadcast`](crate::Error::Broadcast) for incompatible shapes,
    /// [`Error::DTypeMismatch`](crate::Error::DTypeMismatch),
    /// [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3, 1])?;
    /// let b = Tensor::from_vec(vec![10.0f32, 20.0], &[2])?;
    /// assert_eq!(a.add(&b)?.shape(), &[3, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        let out = self.binary_kernel(BinaryOp::Add, "add", other)?;
        if let Some(edges) = collect_next_edges(&[self, other]) {
            record(edges, &[&out], |_| AddBackward { alpha: 1.0 });
        }
        Ok(out)
    }

    /// Element-wise `self - other`, broadcasting.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![5.0f64, 7.0], &[2])?;
    /// assert_eq!(a.sub(&Tensor::scalar(1.0))?.to_vec::<f64>()?, vec![4.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        let out = self.binary_kernel(BinaryOp::Sub, "sub", other)?;
        if let Some(edges) = collect_next_edges(&[self, other]) {
            record(edges, &[&out], |_| SubBackward);
        }
        Ok(out)
    }

    /// Element-wise `self * other`, broadcasting.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![2.0f64, 3.0], &[2])?.requires_grad_(true)?;
    /// a.mul(&a)?.sum()?.backward()?;
    /// assert_eq!(a.grad().unwrap().to_vec::<f64>()?, vec![4.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        let out = self.binary_kernel(BinaryOp::Mul, "mul", other)?;
        if let Some(edges) = collect_next_edges(&[self, other]) {
            let (save_lhs, save_rhs) = (edges[1].is_some(), edges[0].is_some());
            record(edges, &[&out], |_| MulBackward {
                lhs: save_lhs.then(|| SavedTensor::input(self)),
                rhs: save_rhs.then(|| SavedTensor::input(other)),
            });
        }
        Ok(out)
    }

    /// Element-wise `self / other`, broadcasting.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 3.0], &[2])?;
    /// assert_eq!(a.div(&Tensor::scalar(2.0))?.to_vec::<f64>()?, vec![0.5, 1.5]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        let out = self.binary_kernel(BinaryOp::Div, "div", other)?;
        if let Some(edges) = collect_next_edges(&[self, other]) {
            let save_lhs = edges[1].is_some();
            record(edges, &[&out], |_| DivBackward {
                lhs: save_lhs.then(|| SavedTensor::input(self)),
                rhs: SavedTensor::input(other),
            });
        }
        Ok(out)
    }

    /// `self * s` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).mul_scalar(2.0)?.item::<f64>()?, 6.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mul_scalar(&self, s: f64) -> Result<Tensor> {
        let out = self.scalar_kernel(BinaryOp::Mul, s, false);
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| MulScalarBackward { scalar: s });
        }
        Ok(out)
    }

    /// `self + s` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).add_scalar(2.0)?.item::<f64>()?, 5.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn add_scalar(&self, s: f64) -> Result<Tensor> {
        let out = self.scalar_kernel(BinaryOp::Add, s, false);
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| AddScalarBackward);
        }
        Ok(out)
    }

    /// `self - s` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).sub_scalar(2.0)?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sub_scalar(&self, s: f64) -> Result<Tensor> {
        self.add_scalar(-s)
    }

    /// `self / s` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).div_scalar(2.0)?.item::<f64>()?, 1.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn div_scalar(&self, s: f64) -> Result<Tensor> {
        self.mul_scalar(1.0 / s)
    }

    /// `s - self` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).rsub_scalar(1.0)?.item::<f64>()?, -2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rsub_scalar(&self, s: f64) -> Result<Tensor> {
        let out = self.scalar_kernel(BinaryOp::Sub, s, true);
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| RsubScalarBackward);
        }
        Ok(out)
    }

    /// `s / self` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(4.0f64).rdiv_scalar(2.0)?.item::<f64>()?, 0.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rdiv_scalar(&self, s: f64) -> Result<Tensor> {
        let out = self.scalar_kernel(BinaryOp::Div, s, true);
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| RdivScalarBackward {
                scalar: s,
                rhs: SavedTensor::input(self),
            });
        }
        Ok(out)
    }
}
