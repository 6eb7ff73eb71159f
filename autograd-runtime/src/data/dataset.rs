//! The [`Dataset`] trait (PyTorch's map-style `torch.utils.data.Dataset`) and
//! [`TensorDataset`].

use crate::sync::Arc;
use crate::{Error, Result, Tensor};

/// A map-style data set: `len()` samples, any of which `get(index)` returns (PyTorch's
/// `Dataset` with `__len__` and `__getitem__`).
///
/// `Send + Sync` so that a [`DataLoader`](super::DataLoader)'s worker threads can read it while
/// the caller trains. A sample can be any type; the loader's default collate step needs it to
/// implement [`Collate`](super::Collate) (tensors, numbers, `Vec<Tensor>` and tuples of them do).
///
/// # Examples
///
/// ```
/// use autograd_runtime::data::{DataLoader, DataLoaderOptions, Dataset};
/// use autograd_runtime::{Error, Result, Tensor};
///
/// /// The squares of 0..n, as (x, x²) pairs of f64 numbers.
/// struct Squares(usize);
///
/// impl Dataset for Squares {
///     type Item = (f64, f64);
///     fn len(&self) -> usize {
///         self.0
///     }
///     fn get(&self, index: usize) -> Result<(f64, f64)> {
///         if index >= self.0 {
///             return Err(Error::IndexOutOfBounds { index, dim: 0, size: self.0 });
///         }
///         let x = index as f64;
///         Ok((x, x * x))
///     }
/// }
///
/// assert_eq!(Squares(5).get(3)?, (3.0, 9.0));
/// let err = Squares(5).get(5).unwrap_err();
/// assert_eq!(err.to_string(), "index 5 is out of bounds for dimension 0 with size 5");
///
/// let loader = DataLoader::new(Squares(5), DataLoaderOptions::default().batch_size(2))?;
/// let (x, y): (Tensor, Tensor) = loader.iter().next().unwrap()?;
/// assert_eq!((x.to_vec::<f64>()?, y.to_vec::<f64>()?), (vec![0.0, 1.0], vec![0.0, 1.0]));
/// # Ok::<(), Error>(())
/// ```
pub trait Dataset: Send + Sync {
    /// One sample.
    type Item;

    /// The number of samples (PyTorch's `__len__`).
    fn len(&self) -> usize;

    /// Whether there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sample at `index`, for `index` in `0..len()` (PyTorch's `__getitem__`).
    ///
    /// # Errors
    ///
    /// [`Error::IndexOutOfBounds`] for an index past the end (PyTorch's `IndexError`), or
    /// whatever reading the sample can fail with.
    fn get(&self, index: usize) -> Result<Self::Item>;
}

/// A shared data set is a data set: two loaders (or a [`Subset`](super::Subset) and a loader)
/// can read one copy.
impl<D: Dataset + ?Sized> Dataset for Arc<D> {
    type Item = D::Item;

    fn len(&self) -> usize {
        (**self).len()
    }

    fn get(&self, index: usize) -> Result<D::Item> {
        (**self).get(index)
    }
}

/// Samples that are rows of tensors (PyTorch's `TensorDataset`): sample `i` is row `i` (index
/// `i` along dim 0) of each tensor, in order.
///
/// # Examples
///
/// ```
/// use autograd_runtime::data::{Dataset, TensorDataset};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
/// let y = Tensor::from_vec(vec![0i64, 1, 0], &[3])?;
/// let data = TensorDataset::new(vec![x, y])?;
/// assert_eq!(data.len(), 3);
/// let row = data.get(1)?;
/// assert_eq!(row[0].to_vec::<f32>()?, vec![3.0, 4.0]);
/// assert_eq!(row[1].item::<i64>()?, 1); // a 0-dim tensor
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TensorDataset {
    /// The tensors, each with `len` rows along dim 0.
    tensors: Vec<Tensor>,
    /// Their common size along dim 0.
    len: usize,
}

impl TensorDataset {
    /// A data set of the rows of `tensors`, which must share their size along dim 0.
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] "Size mismatch between tensors" (PyTorch's assertion) when the
    /// tensors' first dimensions differ; [`Error::InvalidArgument`] for no tensors or a 0-dim
    /// tensor (which has no rows).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::TensorDataset;
    /// use autograd_runtime::{DType, Tensor};
    /// let err = TensorDataset::new(vec![
    ///     Tensor::zeros(&[3], DType::F32)?,
    ///     Tensor::zeros(&[4, 2], DType::F32)?,
    /// ])
    /// .unwrap_err();
    /// assert_eq!(err.to_string(), "Size mismatch between tensors");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(tensors: Vec<Tensor>) -> Result<TensorDataset> {
        let first = tensors.first().ok_or_else(|| {
            Error::InvalidArgument("TensorDataset needs at least one tensor".into())
        })?;
        if let Some(t) = tensors.iter().find(|t| t.ndim() == 0) {
            return Err(Error::InvalidArgument(format!(
                "dimension specified as 0 but tensor has no dimensions (a TensorDataset's \
                 tensors need a dim 0; got a tensor of shape {:?})",
                t.shape()
            )));
        }
        let len = first.shape()[0];
        if tensors.iter().any(|t| t.shape()[0] != len) {
            return Err(Error::size_mismatch(
                "TensorDataset",
                "Size mismatch between tensors",
            ));
        }
        Ok(TensorDataset { tensors, len })
    }

    /// The tensors, as given.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::TensorDataset;
    /// use autograd_runtime::{DType, Tensor};
    /// let data = TensorDataset::new(vec![Tensor::zeros(&[5, 3], DType::F32)?])?;
    /// assert_eq!(data.tensors()[0].shape(), &[5, 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }
}

impl Dataset for TensorDataset {
    /// Row `index` of each tensor (a view of it, as PyTorch's `tensor[index]`).
    type Item = Vec<Tensor>;

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, index: usize) -> Result<Vec<Tensor>> {
        if index >= self.len {
            return Err(Error::IndexOutOfBounds {
                index,
                dim: 0,
                size: self.len,
            });
        }
        self.tensors.iter().map(|t| t.select(0, index)).collect()
    }
}
