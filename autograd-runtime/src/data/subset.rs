//! [`Subset`] and [`random_split`]: part of a data set, and a data set cut into random parts
//! (PyTorch's `torch.utils.data.Subset` and `random_split`).

use super::dataset::Dataset;
use crate::sync::Arc;
use crate::{Error, Generator, Result, default_generator};

/// The samples of a data set at some indices, in their order (PyTorch's `Subset`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::data::{Dataset, Subset, TensorDataset};
/// use autograd_runtime::Tensor;
/// use std::sync::Arc;
/// let data = Arc::new(TensorDataset::new(vec![Tensor::arange(10, 20, 1)?])?);
/// let odd = Subset::new(data, vec![1, 3, 5]);
/// assert_eq!(odd.len(), 3);
/// assert_eq!(odd.get(2)?[0].item::<i64>()?, 15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Subset<D: ?Sized> {
    /// The whole data set, shared with the other parts.
    dataset: Arc<D>,
    /// The indices into it, in the subset's order.
    indices: Vec<usize>,
}

impl<D: ?Sized> Clone for Subset<D> {
    fn clone(&self) -> Self {
        Subset {
            dataset: Arc::clone(&self.dataset),
            indices: self.indices.clone(),
        }
    }
}

impl<D: Dataset + ?Sized> Subset<D> {
    /// The samples of `dataset` at `indices` (checked when read, as PyTorch's).
    pub fn new(dataset: Arc<D>, indices: Vec<usize>) -> Subset<D> {
        Subset { dataset, indices }
    }

    /// The whole data set.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::{Dataset, Subset, TensorDataset};
    /// use autograd_runtime::Tensor;
    /// use std::sync::Arc;
    /// let data = Arc::new(TensorDataset::new(vec![Tensor::arange(0, 4, 1)?])?);
    /// assert_eq!(Subset::new(data, vec![0]).dataset().len(), 4);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn dataset(&self) -> &Arc<D> {
        &self.dataset
    }

    /// The indices into [`dataset`](Subset::dataset).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::{Subset, TensorDataset};
    /// use autograd_runtime::Tensor;
    /// use std::sync::Arc;
    /// let data = Arc::new(TensorDataset::new(vec![Tensor::arange(0, 4, 1)?])?);
    /// assert_eq!(Subset::new(data, vec![3, 1]).indices(), &[3, 1]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }
}

impl<D: Dataset + ?Sized> Dataset for Subset<D> {
    type Item = D::Item;

    fn len(&self) -> usize {
        self.indices.len()
    }

    fn get(&self, index: usize) -> Result<D::Item> {
        let &i = self.indices.get(index).ok_or(Error::IndexOutOfBounds {
            index,
            dim: 0,
            size: self.indices.len(),
        })?;
        self.dataset.get(i)
    }
}

/// Cuts `dataset` into parts of the given lengths, at random (PyTorch's
/// `random_split(dataset, lengths, generator)`): the parts are consecutive runs of
/// `torch.randperm(len, generator=g)`, with PyTorch's values. `None` draws from the global
/// generator (PyTorch's default). Lengths only: PyTorch also takes fractions, which it turns
/// into lengths (each floored, the remainder spread one by one from the first).
///
/// # Errors
///
/// [`Error::InvalidArgument`] "Sum of input lengths does not equal the length of the input
/// dataset!" (PyTorch's words).
///
/// # Examples
///
/// ```
/// use autograd_runtime::data::{Dataset, TensorDataset, random_split};
/// use autograd_runtime::{Generator, Tensor};
/// let data = TensorDataset::new(vec![Tensor::arange(0, 10, 1)?])?;
/// let g = Generator::new().manual_seed(42);
/// let parts = random_split(data, &[3, 7], Some(&g))?;
/// // random_split(range(10), [3, 7], generator=torch.Generator().manual_seed(42))
/// assert_eq!(parts[0].indices(), &[2, 6, 1]);
/// assert_eq!(parts[1].indices(), &[8, 4, 5, 0, 9, 3, 7]);
/// assert_eq!(parts[1].get(0)?[0].item::<i64>()?, 8);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn random_split<D: Dataset>(
    dataset: D,
    lengths: &[usize],
    generator: Option<&Generator>,
) -> Result<Vec<Subset<D>>> {
    let n = dataset.len();
    if lengths.iter().sum::<usize>() != n {
        return Err(Error::InvalidArgument(
            "Sum of input lengths does not equal the length of the input dataset!".into(),
        ));
    }
    let perm = match generator {
        Some(g) => g.randperm(n),
        None => default_generator().randperm(n),
    };
    let dataset = Arc::new(dataset);
    let mut start = 0;
    Ok(lengths
        .iter()
        .map(|&len| {
            let part = Subset::new(Arc::clone(&dataset), perm[start..start + len].to_vec());
            start += len;
            part
        })
        .collect())
}
