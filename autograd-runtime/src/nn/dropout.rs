//! `Dropout`: PyTorch's inverted dropout, its masks PyTorch's `bernoulli_` stream.

use crate::error::py_float;
use crate::nn::{Forward, Module};
use crate::{DType, Error, Generator, Result, Tensor, default_generator};

/// In training mode, zeroes each element with probability `p` and scales the others by
/// `1/(1-p)` (PyTorch's `nn.Dropout`, inverted dropout); in evaluation mode, passes the input
/// through. Each call draws a new mask from the global generator, as PyTorch's does (after
/// [`manual_seed`](crate::manual_seed), the masks are PyTorch's: see [`dropout`]).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Dropout, Forward, Module};
/// use autograd_runtime::{DType, Tensor};
/// let mut drop = Dropout::new(0.5)?;
/// let x = Tensor::ones(&[1000], DType::F32)?;
/// let y = drop.forward(&x)?.to_vec::<f32>()?;
/// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
/// drop.eval();
/// assert!(drop.forward(&x)?.is_same(&x));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(extra_repr = Dropout::extra_repr)]
pub struct Dropout {
    #[module(skip)]
    p: f64,
    #[module(training)]
    training: bool,
}

/// PyTorch's check of a dropout probability.
fn check_p(p: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::InvalidArgument(format!(
            "dropout probability has to be between 0 and 1, but got {}",
            py_float(p)
        )));
    }
    Ok(())
}

impl Dropout {
    /// Dropout with probability `p` (PyTorch's `nn.Dropout(p)`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if `p` is not in `[0, 1]`, in PyTorch's words.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Dropout;
    /// let err = Dropout::new(1.5).unwrap_err();
    /// assert_eq!(err.to_string(), "dropout probability has to be between 0 and 1, but got 1.5");
    /// ```
    pub fn new(p: f64) -> Result<Dropout> {
        check_p(p)?;
        Ok(Dropout { p, training: true })
    }

    /// The probability of an element being zeroed.
    pub fn p(&self) -> f64 {
        self.p
    }
}

impl Dropout {
    fn extra_repr(&self) -> String {
        super::repr::dropout(self.p)
    }
}

impl Forward for Dropout {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        dropout(input, self.p, self.training)
    }
}

/// Dropout as a function (PyTorch's `F.dropout(x, p, training)`), the mask drawn from the
/// global generator: with `training`, each element is kept with probability `1 - p` and scaled
/// by `1/(1-p)`, the others zeroed; `p = 1` gives zeros; without `training` (or with `p = 0`) the
/// input is returned and nothing is drawn. The gradient flows through the kept elements, scaled
/// the same way.
///
/// The mask is PyTorch's `empty_like(x).bernoulli_(1 - p)` on the CPU (one 53-bit uniform per
/// element, in C order), so after [`manual_seed`](crate::manual_seed) the masks are PyTorch's,
/// as its portable kernel draws them. Inside a checkpointed region, the recomputation draws the
/// masks the forward drew.
///
/// # Errors
///
/// [`Error::InvalidArgument`] if `p` is not in `[0, 1]`, in PyTorch's words.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::dropout;
/// use autograd_runtime::{DType, Tensor, manual_seed};
/// let x = Tensor::ones(&[6], DType::F32)?;
/// manual_seed(0);
/// let y = dropout(&x, 0.5, true)?.to_vec::<f32>()?;
/// assert_eq!(y, vec![0.0, 0.0, 2.0, 0.0, 0.0, 0.0]); // torch.manual_seed(0); F.dropout(x, 0.5)
/// assert_eq!(dropout(&x, 1.0, true)?.to_vec::<f32>()?, vec![0.0; 6]);
/// assert!(dropout(&x, 0.3, false)?.is_same(&x));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn dropout(input: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    dropout_with(input, p, training, &default_generator())
}

/// [`dropout`] drawing its mask from `generator`.
///
/// # Errors
///
/// As [`dropout`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::dropout_with;
/// use autograd_runtime::{DType, Generator, Tensor};
/// let x = Tensor::ones(&[1000], DType::F64)?;
/// let y = dropout_with(&x, 0.25, true, &Generator::new().manual_seed(1))?.to_vec::<f64>()?;
/// assert!(y.iter().all(|&v| v == 0.0 || v == 1.0 / 0.75));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn dropout_with(
    input: &Tensor,
    p: f64,
    training: bool,
    generator: &Generator,
) -> Result<Tensor> {
    check_p(p)?;
    if !training || p == 0.0 {
        return Ok(input.clone());
    }
    if p == 1.0 {
        return input.mul_scalar(0.0);
    }
    let n = input.numel();
    // Through the checkpoint's record of random draws: a recomputed region draws the masks its
    // forward drew (`checkpoint/rng.rs`).
    let mut live = None;
    let state = crate::checkpoint::rng::next_draw(|| {
        let (state, keep) = generator.bernoulli(n, 1.0 - p);
        live = Some(keep);
        state
    });
    let keep = match live {
        Some(keep) => keep,
        None => Generator::from_state(&state).bernoulli(n, 1.0 - p).1,
    };
    // PyTorch's `noise.div_(1 - p)`, in the input's dtype.
    let mask = match input.dtype() {
        DType::F64 => {
            let scale = 1.0 / (1.0 - p);
            let v = keep.iter().map(|&k| if k { scale } else { 0.0 }).collect();
            Tensor::from_vec::<f64>(v, input.shape())?
        }
        // f32, and the half types whose kernels compute in f32: the scale rounded once.
        dtype => {
            let scale = 1.0f32 / (1.0 - p) as f32;
            let v = keep.iter().map(|&k| if k { scale } else { 0.0 }).collect();
            Tensor::from_vec::<f32>(v, input.shape())?.to_dtype(dtype)?
        }
    };
    input.mul(&mask.to(input.device())?)
}
