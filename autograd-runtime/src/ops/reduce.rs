//! Reductions: `sum`, `sum_dims`, `mean`, and `sum_to_shape` (the reduction of a broadcast
//! gradient back to an input's shape).

use smallvec::smallvec;

use crate::backend::cpu;
use crate::graph::{collect_next_edges, record, Backward, GradVec, NodeMeta};
use crate::tensor::data::with_view;
use crate::tensor::layout::{wrap_dim, Dims};
use crate::{Element, Error, Result, Tensor};

struct SumBackward {
    shape: Dims,
    /// Reduced dims re-inserted as size 1 before expanding (`sum_dims` without keepdim).
    keepdim_shape: Option<Dims>,
    scale: Option<f64>,
    /// Recorded by `sum_dims` (named `SumBackward1`).
    dims_form: bool,
}

impl Backward for SumBackward {
    const NAME: &'static str = "SumBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let mut g = grads[0].clone().expect("invariant: materialised");
        // Scale before expanding: the incoming gradient is small, the expanded view is not.
        if let Some(s) = self.scale {
            g = g.mul_scalar(s)?;
        }
        if let Some(shape) = &self.keepdim_shape {
            g = g.reshape(shape)?;
        }
        Ok(smallvec![Some(g.expand(&self.shape)?)])
    }
    fn name(&self) -> &'static str {
        // `sum(dims)` is PyTorch's SumBackward1.
        if self.keepdim_shape.is_some() || self.dims_form {
            "SumBackward1"
        } else {
            Self::NAME
        }
    }
}

struct MeanBackward(SumBackward);

impl Backward for MeanBackward {
    const NAME: &'static str = "MeanBackward0";
    fn backward(&self, meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        self.0.backward(meta, grads)
    }
}

struct SumToBackward {
    shape: Dims,
}

impl Backward for SumToBackward {
    const NAME: &'static str = "SumBackward1";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        Ok(smallvec![Some(
            grads[0]
                .as_ref()
                .expect("invariant: materialised")
                .expand(&self.shape)?
        )])
    }
}

impl Tensor {
    /// Sum of all elements (a 0-dim tensor).
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
    /// assert_eq!(t.sum()?.item::<f64>()?, 6.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sum(&self) -> Result<Tensor> {
        let out = self.sum_all_kernel();
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| SumBackward {
                shape: self.shape_dims(),
                keepdim_shape: None,
                scale: None,
                dims_form: false,
            });
        }
        Ok(out)
    }

    fn sum_all_kernel(&self) -> Tensor {
        let device = self.device();
        with_view!(self, |a| {
            let s = cpu::sum_all(a);
            Tensor::from_buffer(Element::wrap(smallvec![s]), &[], device)
        })
    }

    /// Mean of all elements (a 0-dim tensor).
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
    /// assert_eq!(t.mean()?.item::<f64>()?, 2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mean(&self) -> Result<Tensor> {
        let n = self.numel() as f64;
        let out = {
            let _g = crate::no_grad();
            self.sum_all_kernel().mul_scalar(1.0 / n)?
        };
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| {
                MeanBackward(SumBackward {
                    shape: self.shape_dims(),
                    keepdim_shape: None,
                    scale: Some(1.0 / n),
                    dims_form: false,
                })
            });
        }
        Ok(out)
    }

    /// Sum over `dims`; the reduced dims are kept with size 1 if `keepdim`.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`] for a dim outside the tensor; [`Error::Shape`] for a repeated dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.sum_dims(&[0], false)?.to_vec::<f64>()?, vec![4.0, 6.0]);
    /// assert_eq!(t.sum_dims(&[1], true)?.shape(), &[2, 1]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sum_dims(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        let mut axes = Vec::with_capacity(dims.len());
        for &d in dims {
            let d = wrap_dim(d as isize, self.ndim())?;
            if axes.contains(&d) {
                return Err(Error::shape(
                    "sum_dims",
                    format!("dim {d} appears multiple times in the list of dims"),
                ));
            }
            axes.push(d);
        }
        if self.ndim() == 0 {
            axes.clear();
        }
        let device = self.device();
        let out = with_view!(self, |a| Tensor::from_ndarray_on(
            cpu::sum_axes(a, &axes, keepdim),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            let keepdim_shape = (!keepdim).then(|| {
                self.shape()
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| if axes.contains(&i) { 1 } else { n })
                    .collect()
            });
            record(edges, &[&out], |_| SumBackward {
                shape: self.shape_dims(),
                keepdim_shape,
                scale: None,
                dims_form: true,
            });
        }
        Ok(out)
    }

    /// Sums a broadcast result back to `shape` (leading dims and dims where `shape` has 1),
    /// as PyTorch's `sum_to_size`.
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] if `shape` does not broadcast to this tensor's shape.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let g = Tensor::ones(&[2, 3], DType::F64)?;
    /// assert_eq!(g.sum_to_shape(&[1, 3])?.to_vec::<f64>()?, vec![2.0; 3]);
    /// assert_eq!(g.sum_to_shape(&[3])?.shape(), &[3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        if !super::is_expandable_to(shape, self.shape()) {
            return Err(Error::shape(
                "sum_to_shape",
                format!(
                    "size {shape:?} is not expandable to size {:?}",
                    self.shape()
                ),
            ));
        }
        let device = self.device();
        let out = with_view!(self, |a| Tensor::from_ndarray_on(
            cpu::sum_to(a, shape),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| SumToBackward {
                shape: self.shape_dims(),
            });
        }
        Ok(out)
    }
}
