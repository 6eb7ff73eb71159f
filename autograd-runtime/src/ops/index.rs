//! Indexing ops: `index_select` and `max_dim` (values and indices), and the scatter/gather pairs
//! that are their gradients (each differentiable, so double backward works).

use ndarray::ArrayD;
use smallvec::smallvec;

use crate::backend::{cpu, gather};
use crate::graph::{collect_next_edges, record, Backward, GradVec, NodeMeta};
use crate::tensor::data::with_view;
use crate::tensor::layout::{wrap_dim, Dims};
use crate::{Error, Result, Tensor};

fn g0(grads: &GradVec) -> &Tensor {
    grads[0].as_ref().expect("invariant: materialised")
}

struct IndexSelectBackward {
    shape: Dims,
    dim: usize,
    index: Vec<usize>,
}

impl Backward for IndexSelectBackward {
    const NAME: &'static str = "IndexSelectBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        Ok(smallvec![Some(g0(&grads).index_add_into(
            &self.shape,
            self.dim,
            &self.index
        )?)])
    }
}

/// Gradient of `index_add_into`: select the same rows again.
struct IndexAddBackward {
    dim: usize,
    index: Vec<usize>,
}

impl Backward for IndexAddBackward {
    const NAME: &'static str = "IndexAddBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        Ok(smallvec![Some(
            g0(&grads).index_select(self.dim, &self.index)?
        )])
    }
}

/// Positions of the maxima along `dim`, in keepdim layout.
#[derive(Clone)]
struct Argmax {
    dim: usize,
    keepdim_shape: Dims,
    indices: std::sync::Arc<ArrayD<usize>>,
}

struct MaxBackward {
    shape: Dims,
    argmax: Argmax,
}

impl Backward for MaxBackward {
    const NAME: &'static str = "MaxBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = g0(&grads).reshape(&self.argmax.keepdim_shape)?;
        Ok(smallvec![Some(
            g.scatter_argmax(&self.shape, &self.argmax)?
        )])
    }
}

/// Gradient of `scatter_argmax`: gather at the same positions.
struct ScatterArgmaxBackward {
    argmax: Argmax,
}

impl Backward for ScatterArgmaxBackward {
    const NAME: &'static str = "MaxBackwardBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = g0(&grads);
        let device = g.device();
        let a = &self.argmax;
        let out = with_view!(g, |v| Tensor::from_ndarray_on(
            gather::gather_dim(v, a.dim, a.indices.view()),
            device
        ));
        Ok(smallvec![Some(out)])
    }
}

impl Tensor {
    /// The entries `index[k]` of dim `dim`, in order (repeats allowed).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::Shape`] for an index past the dim's size.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
    /// assert_eq!(t.index_select(0, &[2, 0])?.to_vec::<f32>()?, vec![5.0, 6.0, 1.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn index_select(&self, dim: usize, index: &[usize]) -> Result<Tensor> {
        let dim = wrap_dim(dim as isize, self.ndim())?;
        let size = self.shape().get(dim).copied().unwrap_or(1);
        if let Some(&bad) = index.iter().find(|&&i| i >= size) {
            return Err(Error::shape(
                "index_select",
                format!("index {bad} is out of bounds for dimension {dim} with size {size}"),
            ));
        }
        let device = self.device();
        let out = with_view!(self, |a| Tensor::from_ndarray_on(
            cpu::index_select(a, dim, index),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| IndexSelectBackward {
                shape: self.shape_dims(),
                dim,
                index: index.to_vec(),
            });
        }
        Ok(out)
    }

    /// Zeros of `shape` with this tensor's slices added at `index` along `dim`.
    fn index_add_into(&self, shape: &[usize], dim: usize, index: &[usize]) -> Result<Tensor> {
        let device = self.device();
        let out = with_view!(self, |g| Tensor::from_ndarray_on(
            cpu::index_add(shape, dim, index, g),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            record(edges, &[&out], |_| IndexAddBackward {
                dim,
                index: index.to_vec(),
            });
        }
        Ok(out)
    }

    /// The maximum over `dim` and, for each, the index of its first occurrence (flattened in the
    /// values' C order). NaN counts as the maximum, as in PyTorch.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::Shape`] for an empty dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 9.0, 3.0, 7.0, 2.0, 8.0], &[2, 3])?.requires_grad_(true)?;
    /// let (values, indices) = t.max_dim(1, false)?;
    /// assert_eq!((values.to_vec::<f64>()?, indices), (vec![9.0, 8.0], vec![1, 2]));
    /// values.sum()?.backward()?;
    /// assert_eq!(t.grad().unwrap().to_vec::<f64>()?, vec![0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn max_dim(&self, dim: usize, keepdim: bool) -> Result<(Tensor, Vec<usize>)> {
        let dim = wrap_dim(dim as isize, self.ndim())?;
        if self.shape().get(dim) == Some(&0) {
            return Err(Error::shape(
                "max_dim",
                format!("cannot take the max over dimension {dim} of size 0"),
            ));
        }
        let device = self.device();
        let (out, indices) = with_view!(self, |a| {
            let (v, i) = cpu::max_dim(a, dim, true);
            (Tensor::from_ndarray_on(v, device), i)
        });
        let keepdim_shape: Dims = out.shape_dims();
        let out = if keepdim {
            out
        } else {
            let mut s = keepdim_shape.clone();
            if !s.is_empty() {
                s.remove(dim);
            }
            let _g = crate::no_grad();
            out.reshape(&s)?.contiguous_data_owned()
        };
        let flat: Vec<usize> = indices.iter().copied().collect();
        if let Some(edges) = collect_next_edges(&[self]) {
            let argmax = Argmax {
                dim,
                keepdim_shape,
                indices: std::sync::Arc::new(indices),
            };
            record(edges, &[&out], |_| MaxBackward {
                shape: self.shape_dims(),
                argmax,
            });
        }
        Ok((out, flat))
    }

    /// Zeros of `shape` with this (keepdim-shaped) tensor written at the argmax positions.
    fn scatter_argmax(&self, shape: &[usize], argmax: &Argmax) -> Result<Tensor> {
        let device = self.device();
        let out = with_view!(self, |g| Tensor::from_ndarray_on(
            cpu::scatter_max_grad(shape, argmax.dim, argmax.indices.view(), g),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            let argmax = argmax.clone();
            record(edges, &[&out], |_| ScatterArgmaxBackward { argmax });
        }
        Ok(out)
    }
}
