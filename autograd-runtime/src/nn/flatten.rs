//! `Flatten`: dims `start_dim..=end_dim` merged into one, PyTorch's `nn.Flatten`.

use crate::layout::wrap_dim;
use crate::nn::{Forward, Module};
use crate::{Error, Result, Tensor};

/// Merges dims `start_dim..=end_dim` into one (PyTorch's `nn.Flatten`; negative dims count from
/// the end). [`new`](Flatten::new) gives PyTorch's defaults, `start_dim = 1`, `end_dim = -1`:
/// everything but the batch dim, as between the convolutions and the linear layers of a CNN.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Flatten, Forward};
/// use autograd_runtime::{DType, Tensor};
/// let x = Tensor::zeros(&[64, 32, 2, 2], DType::F32)?;
/// assert_eq!(Flatten::new().forward(&x)?.shape(), &[64, 128]);
/// assert_eq!(Flatten::with_dims(0, 1).forward(&x)?.shape(), &[2048, 2, 2]);
/// assert_eq!(Flatten::with_dims(-2, -1).forward(&x)?.shape(), &[64, 32, 4]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
#[module(extra_repr = Flatten::extra_repr)]
pub struct Flatten {
    #[module(skip)]
    start_dim: isize,
    #[module(skip)]
    end_dim: isize,
    training: bool,
}

impl Default for Flatten {
    fn default() -> Flatten {
        Flatten::new()
    }
}

impl Flatten {
    /// Flattens all dims but the first (`start_dim = 1`, `end_dim = -1`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Flatten, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::zeros(&[8, 2, 3, 3], DType::F32)?;
    /// assert_eq!(Flatten::new().forward(&x)?.shape(), &[8, 18]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new() -> Flatten {
        Flatten::with_dims(1, -1)
    }

    /// Flattens dims `start_dim..=end_dim`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Flatten, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::zeros(&[2, 3, 4], DType::F32)?;
    /// assert_eq!(Flatten::with_dims(0, 1).forward(&x)?.shape(), &[6, 4]);
    /// assert!(Flatten::with_dims(2, 1).forward(&x).is_err()); // start after end
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_dims(start_dim: isize, end_dim: isize) -> Flatten {
        Flatten {
            start_dim,
            end_dim,
            training: true,
        }
    }
}

impl Flatten {
    fn extra_repr(&self) -> String {
        super::repr::flatten(self.start_dim, self.end_dim)
    }
}

impl Forward for Flatten {
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`] for a dim outside the input, and [`Error::InvalidArgument`]
    /// (`flatten() has invalid args: start_dim cannot come after end_dim`) when the dims are in
    /// the wrong order, as in PyTorch.
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let start = wrap_dim(self.start_dim, input.ndim())?;
        let end = wrap_dim(self.end_dim, input.ndim())?;
        if start > end {
            return Err(Error::InvalidArgument(
                "flatten() has invalid args: start_dim cannot come after end_dim".into(),
            ));
        }
        if input.ndim() == 0 {
            return input.reshape(&[1]);
        }
        let shape = input.shape();
        let mut out = shape[..start].to_vec();
        out.push(shape[start..=end].iter().product());
        out.extend_from_slice(&shape[end + 1..]);
        input.reshape(&out)
    }
}
