//! `Embedding`: a lookup table of rows, selected by index (`index_select`), with PyTorch's
//! `padding_idx`.

use crate::nn::{Forward, Module};
use crate::{DType, Error, Result, Tensor};

/// A table of `num_embeddings` vectors of size `embedding_dim` (PyTorch's `nn.Embedding`):
/// the weight `[num_embeddings, embedding_dim]` is initialised `N(0, 1)` from the global
/// generator (PyTorch's `normal_`, so PyTorch's values after [`manual_seed`](crate::manual_seed)), and
/// forward maps indices of any shape `S` to their rows, `S + [embedding_dim]`.
///
/// [`Forward::forward`] takes the indices as PyTorch does, an `I64` (or `I32`) tensor, or as a
/// float tensor of integral values (what it took before the library had integer tensors);
/// [`forward_indices`](Embedding::forward_indices) takes them as `usize`. With a `padding_idx`,
/// that row starts at zero and never receives a gradient.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Embedding, Forward};
/// use autograd_runtime::Tensor;
/// let emb = Embedding::new(10, 3)?;
/// let y = emb.forward(&Tensor::from_vec(vec![1i64, 4, 4, 9], &[2, 2])?)?;
/// assert_eq!(y.shape(), &[2, 2, 3]);
/// let same = emb.forward(&Tensor::from_vec(vec![1.0f32, 4.0, 4.0, 9.0], &[2, 2])?)?;
/// assert_eq!(same.to_vec::<f32>()?, y.to_vec::<f32>()?);
/// let err = emb.forward_indices(&[10], &[1]).unwrap_err();
/// assert_eq!(err.to_string(), "index out of range in self");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(extra_repr = Embedding::extra_repr)]
pub struct Embedding {
    weight: Tensor,
    #[module(skip)]
    padding_idx: Option<usize>,
    training: bool,
}

impl Embedding {
    /// A table of `num_embeddings` rows of `embedding_dim` values, `N(0, 1)` from the global
    /// generator as PyTorch's `nn.Embedding(num_embeddings, embedding_dim)`, in f32 on the CPU.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(num_embeddings: usize, embedding_dim: usize) -> Result<Embedding> {
        let weight = Tensor::zeros(&[num_embeddings, embedding_dim], DType::F32)?;
        crate::nn::init::normal_(&weight, 0.0, 1.0)?;
        let weight = weight.requires_grad_(true)?;
        Ok(Embedding {
            weight,
            padding_idx: None,
            training: true,
        })
    }

    /// The table with row `padding_idx` as padding (PyTorch's `padding_idx`): the row is set to
    /// zeros now, and its gradient is always zero.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if `padding_idx` is not a row, in PyTorch's words.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Embedding, Forward};
    /// use autograd_runtime::Tensor;
    /// let emb = Embedding::new(4, 2)?.with_padding_idx(0)?;
    /// let y = emb.forward_indices(&[0, 2], &[2])?;
    /// assert_eq!(&y.to_vec::<f32>()?[..2], &[0.0, 0.0]);
    /// y.sum()?.backward()?;
    /// assert_eq!(emb.weight().grad().unwrap().to_vec::<f32>()?, [0., 0., 0., 0., 1., 1., 0., 0.]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_padding_idx(mut self, padding_idx: usize) -> Result<Embedding> {
        if padding_idx >= self.weight.shape()[0] {
            return Err(Error::InvalidArgument(
                "Padding_idx must be within num_embeddings".to_string(),
            ));
        }
        let _no_grad = crate::no_grad();
        self.weight.select(0, padding_idx)?.fill_(0.0)?;
        self.padding_idx = Some(padding_idx);
        Ok(self)
    }

    /// A table over the given weight `[num_embeddings, embedding_dim]`, used as it is (PyTorch's
    /// `from_pretrained(freeze=False)` keeps it trainable if it requires grad).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if the weight is not 2-D.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Embedding;
    /// use autograd_runtime::Tensor;
    /// let emb = Embedding::from_weight(Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?)?;
    /// assert_eq!(emb.forward_indices(&[1], &[1])?.to_vec::<f64>()?, vec![3.0, 4.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn from_weight(weight: Tensor) -> Result<Embedding> {
        if weight.ndim() != 2 {
            return Err(Error::InvalidArgument(
                "Embeddings parameter is expected to be 2-dimensional".to_string(),
            ));
        }
        Ok(Embedding {
            weight,
            padding_idx: None,
            training: true,
        })
    }

    /// The table, `[num_embeddings, embedding_dim]`.
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The padding row, if any.
    pub fn padding_idx(&self) -> Option<usize> {
        self.padding_idx
    }

    /// The rows at `indices` (laid out as `shape`, C order), shaped `shape + [embedding_dim]`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`]: `"index out of range in self"` (PyTorch's words) for an
    /// index past the table, or a `shape` whose size is not `indices.len()`.
    pub fn forward_indices(&self, indices: &[usize], shape: &[usize]) -> Result<Tensor> {
        if shape.iter().product::<usize>() != indices.len() {
            return Err(Error::InvalidArgument(format!(
                "Embedding: {} indices cannot be laid out as shape {shape:?}",
                indices.len()
            )));
        }
        let rows = self.weight.shape()[0];
        if indices.iter().any(|&i| i >= rows) {
            return Err(Error::InvalidArgument(
                "index out of range in self".to_string(),
            ));
        }
        let selected = self.weight.index_select(0, indices)?;
        let selected = match self.padding_idx {
            Some(pad) if indices.contains(&pad) => {
                // The padding rows' values through a detached copy of the table: the same
                // values, no gradient (`x·1 + y·0` is exactly `x` for finite values).
                let keep: Vec<f64> = indices
                    .iter()
                    .map(|&i| if i == pad { 0.0 } else { 1.0 })
                    .collect();
                let keep = Tensor::from_vec(keep, &[indices.len(), 1])?
                    .to_dtype(self.weight.dtype())?
                    .to(self.weight.device())?;
                let frozen = self.weight.detach().index_select(0, indices)?;
                selected
                    .mul(&keep)?
                    .add(&frozen.mul(&keep.rsub_scalar(1.0)?)?)?
            }
            _ => selected,
        };
        let mut out_shape = shape.to_vec();
        out_shape.push(self.weight.shape()[1]);
        selected.reshape(&out_shape)
    }
}

/// The indices `input` holds: an `I64` or `I32` tensor (PyTorch's index types), or a float
/// tensor of integral values; negative ones are out of range.
fn indices_of(input: &Tensor) -> Result<Vec<usize>> {
    let ints: Vec<i64> = match input.dtype() {
        DType::I64 => input.to_vec::<i64>()?,
        DType::I32 => input.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
        DType::U8 | DType::Bool => {
            let name = if input.dtype() == DType::U8 {
                "Byte"
            } else {
                "Bool"
            };
            return Err(Error::InvalidArgument(format!(
                "Expected tensor for argument #1 'indices' to have one of the following scalar \
                 types: Long, Int; but got torch.{name}Tensor instead (while checking arguments \
                 for embedding)"
            )));
        }
        _ => return float_indices(input),
    };
    ints.into_iter()
        .map(|v| {
            usize::try_from(v)
                .map_err(|_| Error::InvalidArgument("index out of range in self".to_string()))
        })
        .collect()
}

/// The indices a float tensor holds, checked to be non-negative integers.
fn float_indices(input: &Tensor) -> Result<Vec<usize>> {
    input
        .detach()
        .to_dtype(DType::F64)?
        .to_vec::<f64>()?
        .into_iter()
        .map(|v| {
            if v.fract() != 0.0 || !v.is_finite() {
                Err(Error::InvalidArgument(format!(
                    "Embedding: index {v} is not an integer"
                )))
            } else if v < 0.0 {
                Err(Error::InvalidArgument(
                    "index out of range in self".to_string(),
                ))
            } else {
                Ok(v as usize)
            }
        })
        .collect()
}

impl Embedding {
    fn extra_repr(&self) -> String {
        let shape = self.weight.shape();
        super::repr::embedding(shape[0], shape[1], self.padding_idx)
    }
}

impl Forward for Embedding {
    /// The rows at the indices `input` holds: PyTorch's `I64` (or `I32`) index tensor, or a
    /// float tensor of integral values (see [`forward_indices`](Embedding::forward_indices)).
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        self.forward_indices(&indices_of(input)?, input.shape())
    }
}
