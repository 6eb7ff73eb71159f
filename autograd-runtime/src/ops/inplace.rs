//! In-place ops (`add_ sub_ mul_ div_ zero_ fill_`): bump the version counter (also under
//! `no_grad`), refuse leaves and views that are part of a graph (B35), and rebase the tensor's
//! history onto a new node when recording.

use smallvec::smallvec;

use crate::backend::cpu::{self, BinaryOp};
use crate::graph::{collect_next_edges, record, Backward, GradVec, NodeMeta, SavedTensor};
use crate::tensor::data::with_view_mut;
use crate::{is_grad_enabled, Element, Error, Result, Tensor};

struct InplaceBinaryBackward {
    op: BinaryOp,
    /// For mul_/div_: the other operand.
    other: Option<SavedTensor>,
    /// For mul_/div_ when `other` requires grad: `self` before the op.
    original: Option<SavedTensor>,
}

impl Backward for InplaceBinaryBackward {
    const NAME: &'static str = "InplaceBackward0";
    fn backward(&self, meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grads[0].as_ref().expect("invariant: materialised");
        let saved =
            |s: &Option<SavedTensor>| s.as_ref().expect("invariant: saved when needed").get();
        let (ga, gb) = match self.op {
            BinaryOp::Add => (Some(g.clone()), meta.needs_input_grad(1).then(|| g.clone())),
            BinaryOp::Sub => (
                Some(g.clone()),
                if meta.needs_input_grad(1) {
                    Some(g.neg()?)
                } else {
                    None
                },
            ),
            BinaryOp::Mul => (
                if meta.needs_input_grad(0) {
                    Some(g.mul(&saved(&self.other)?)?)
                } else {
                    None
                },
                if meta.needs_input_grad(1) {
                    Some(g.mul(&saved(&self.original)?)?)
                } else {
                    None
                },
            ),
            BinaryOp::Div => {
                let b = saved(&self.other)?;
                let ga = if meta.needs_input_grad(0) {
                    Some(g.div(&b)?)
                } else {
                    None
                };
                let gb = if meta.needs_input_grad(1) {
                    Some(g.mul(&saved(&self.original)?)?.div(&b.mul(&b)?)?.neg()?)
                } else {
                    None
                };
                (ga, gb)
            }
            _ => unreachable!("invariant: only add/sub/mul/div are recorded in place"),
        };
        Ok(smallvec![ga, gb])
    }
    fn release(&self) {
        self.other
            .iter()
            .chain(&self.original)
            .for_each(SavedTensor::release);
    }
    fn name(&self) -> &'static str {
        match self.op {
            BinaryOp::Add => "AddBackward0",
            BinaryOp::Sub => "SubBackward0",
            BinaryOp::Mul => "MulBackward0",
            _ => "DivBackward0",
        }
    }
}

struct FillBackward {
    zero: bool,
}

impl Backward for FillBackward {
    const NAME: &'static str = "FillBackward0";
    fn name(&self) -> &'static str {
        if self.zero {
            "ZeroBackward0"
        } else {
            Self::NAME
        }
    }
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        Ok(smallvec![Some(
            grads[0]
                .as_ref()
                .expect("invariant: materialised")
                .zeros_like()
        )])
    }
}

impl Tensor {
    /// Refuses in-place ops PyTorch refuses: on a leaf that requires grad, and on a view of a
    /// tensor that is part of a graph (B35). Only checked while recording.
    fn check_inplace(&self, other_requires_grad: bool) -> Result<()> {
        if !is_grad_enabled() {
            return Ok(());
        }
        let self_rg = self.requires_grad();
        if self_rg && self.is_leaf() && !self.is_view() {
            return Err(Error::LeafInPlace);
        }
        if let Some(base) = &self.0.view_base {
            if base.is_leaf() && base.requires_grad() {
                return Err(Error::ViewOfLeafInPlace);
            }
            if base.requires_grad() || self_rg || other_requires_grad {
                return Err(Error::ViewInPlace);
            }
        }
        Ok(())
    }

    fn inplace_binary(&self, op: BinaryOp, name: &'static str, other: &Tensor) -> Result<&Tensor> {
        self.check_same_dtype_device(name, other)?;
        self.check_inplace(other.requires_grad())?;
        let edges = collect_next_edges(&[self, other]);
        let original = match (&edges, op) {
            // `other`'s gradient needs `self` before the op: save a differentiable copy, so a
            // create_graph pass can differentiate through it.
            (Some(e), BinaryOp::Mul | BinaryOp::Div) if e[1].is_some() => {
                Some(SavedTensor::input(&self.copy()?))
            }
            _ => None,
        };
        // Reading `other` while write-locking `self` would deadlock when they share storage.
        let other_data = if self.shares_storage(other) {
            other.contiguous_data_owned()
        } else {
            other.clone()
        };
        self.apply_inplace(op, &other_data)?;
        if let Some(edges) = edges {
            let save_other = matches!(op, BinaryOp::Mul | BinaryOp::Div) && edges[0].is_some();
            record(edges, &[self], |_| InplaceBinaryBackward {
                op,
                other: save_other.then(|| SavedTensor::input(other)),
                original,
            });
        }
        Ok(self)
    }

    /// Runs the kernel and bumps the version; no checks, no recording. Dtypes are equal.
    fn apply_inplace(&self, op: BinaryOp, other: &Tensor) -> Result<()> {
        let result = match self.dtype() {
            crate::DType::F32 => self.apply_inplace_typed::<f32>(op, other),
            crate::DType::F64 => self.apply_inplace_typed::<f64>(op, other),
        };
        self.0.storage.bump_version();
        result
    }

    fn apply_inplace_typed<T: Element>(&self, op: BinaryOp, other: &Tensor) -> Result<()> {
        let b = other.to_array::<T>()?;
        let mut guard = self.0.storage.data.write();
        let data = T::slice_mut(&mut guard).expect("invariant: dtype checked by the caller");
        let a = crate::tensor::data::view_mut(data, self.layout());
        cpu::binary_inplace(op, a, b.view()).map_err(Error::from)
    }

    /// `self += other` for the engine's gradient accumulation: not recorded, not checked.
    pub(crate) fn accumulate_in_place(&self, other: &Tensor) -> Result<()> {
        let other = if self.shares_storage(other) {
            other.contiguous_data_owned()
        } else {
            other.clone()
        };
        self.apply_inplace(BinaryOp::Add, &other)
    }

    /// Whether this handle is the only way to reach its data (so the engine may write into it).
    pub(crate) fn is_uniquely_owned(&self) -> bool {
        crate::sync::Arc::strong_count(&self.0) == 1
            && crate::sync::Arc::strong_count(&self.0.storage) == 1
            && self.0.view_base.is_none()
            && self.is_contiguous()
    }

    /// In-place `self += other` (`other` broadcasts to `self`). Returns `self`.
    ///
    /// # Errors
    ///
    /// [`Error::LeafInPlace`] on a leaf that requires grad (outside `no_grad`),
    /// [`Error::ViewOfLeafInPlace`] / [`Error::ViewInPlace`] on views in a graph, broadcast,
    /// dtype and device errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.add_(&Tensor::scalar(1.0f32))?;
    /// assert_eq!((t.to_vec::<f32>()?, t.version()), (vec![2.0, 3.0], 1));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn add_(&self, other: &Tensor) -> Result<&Tensor> {
        self.inplace_binary(BinaryOp::Add, "add_", other)
    }

    /// In-place `self -= other`. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.sub_(&Tensor::scalar(1.0f32))?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![0.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sub_(&self, other: &Tensor) -> Result<&Tensor> {
        self.inplace_binary(BinaryOp::Sub, "sub_", other)
    }

    /// In-place `self *= other`. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.mul_(&Tensor::scalar(3.0f32))?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![3.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mul_(&self, other: &Tensor) -> Result<&Tensor> {
        self.inplace_binary(BinaryOp::Mul, "mul_", other)
    }

    /// In-place `self /= other`. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![3.0f32, 6.0], &[2])?;
    /// t.div_(&Tensor::scalar(3.0f32))?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![1.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn div_(&self, other: &Tensor) -> Result<&Tensor> {
        self.inplace_binary(BinaryOp::Div, "div_", other)
    }

    /// Fills with `value` in place. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`] for leaves and views.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2], DType::F64)?;
    /// t.fill_(4.0)?;
    /// assert_eq!(t.to_vec::<f64>()?, vec![4.0, 4.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn fill_(&self, value: f64) -> Result<&Tensor> {
        self.check_inplace(false)?;
        let edges = collect_next_edges(&[self]);
        with_view_mut!(self, |a| cpu::fill(a, Element::from_f64(value)));
        self.0.storage.bump_version();
        if let Some(edges) = edges {
            record(edges, &[self], |_| FillBackward { zero: value == 0.0 });
        }
        Ok(self)
    }

    /// Fills with zeros in place. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::fill_`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.zero_()?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn zero_(&self) -> Result<&Tensor> {
        self.fill_(0.0)
    }
}
