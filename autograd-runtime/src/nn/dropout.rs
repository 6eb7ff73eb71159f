//! `Dropout`: PyTorch's inverted dropout, seeded, with a new mask at every call.

use crate::error::py_float;
use crate::nn::{Module, parameterless};
use crate::sync::Ordering;
use crate::sync::statics::AtomicU64;
use crate::{DType, Error, Result, Tensor};

/// In training mode, zeroes each element with probability `p` and scales the others by
/// `1/(1-p)` (PyTorch's `nn.Dropout`, inverted dropout); in evaluation mode, passes the input
/// through. Each call draws a new mask: the masks are a deterministic sequence from the seed
/// (a call counter, shared safely between threads, picks the next one).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Dropout, Module};
/// use autograd_runtime::{DType, Tensor};
/// let mut drop = Dropout::new(0.5, 0)?;
/// let x = Tensor::ones(&[1000], DType::F32)?;
/// let y = drop.forward(&x)?.to_vec::<f32>()?;
/// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
/// drop.eval();
/// assert!(drop.forward(&x)?.is_same(&x));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Dropout {
    p: f64,
    seed: u64,
    /// The number of masks drawn so far; each forward in training mode takes the next value
    /// (`Relaxed`: it only has to hand out distinct values, it publishes nothing).
    calls: AtomicU64,
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
    /// Dropout with probability `p`, masks drawn from `seed`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if `p` is not in `[0, 1]`, in PyTorch's words.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Dropout;
    /// let err = Dropout::new(1.5, 0).unwrap_err();
    /// assert_eq!(err.to_string(), "dropout probability has to be between 0 and 1, but got 1.5");
    /// ```
    pub fn new(p: f64, seed: u64) -> Result<Dropout> {
        check_p(p)?;
        Ok(Dropout {
            p,
            seed,
            calls: AtomicU64::new(0),
            training: true,
        })
    }

    /// The probability of an element being zeroed.
    pub fn p(&self) -> f64 {
        self.p
    }
}

impl Module for Dropout {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        if !self.training || self.p == 0.0 {
            return Ok(input.clone());
        }
        // Through the checkpoint's record of random draws: a recomputed region draws the masks
        // its forward drew (`checkpoint/rng.rs`).
        let call = crate::checkpoint::rng::next_draw(|| self.calls.fetch_add(1, Ordering::Relaxed));
        let seed = self
            .seed
            .wrapping_add(call.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .rotate_left(17);
        dropout(input, self.p, true, seed)
    }

    parameterless!();

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn is_training(&self) -> bool {
        self.training
    }
}

/// Dropout as a function (PyTorch's `F.dropout(x, p, training)`), the mask drawn from `seed`:
/// with `training`, each element is zeroed with probability `p` and the others scaled by
/// `1/(1-p)`; `p = 1` gives zeros; without `training` (or with `p = 0`) the input is returned.
/// The gradient flows through the kept elements, scaled the same way.
///
/// # Errors
///
/// [`Error::InvalidArgument`] if `p` is not in `[0, 1]`, in PyTorch's words.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::dropout;
/// use autograd_runtime::{DType, Tensor};
/// let x = Tensor::ones(&[4], DType::F64)?;
/// assert_eq!(dropout(&x, 1.0, true, 0)?.to_vec::<f64>()?, vec![0.0; 4]);
/// assert!(dropout(&x, 0.3, false, 0)?.is_same(&x));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn dropout(input: &Tensor, p: f64, training: bool, seed: u64) -> Result<Tensor> {
    check_p(p)?;
    if !training || p == 0.0 {
        return Ok(input.clone());
    }
    if p == 1.0 {
        return input.mul_scalar(0.0);
    }
    let scale = 1.0 / (1.0 - p);
    let mask: Vec<f64> = Tensor::rand(input.shape(), DType::F64, seed)?
        .to_vec::<f64>()?
        .into_iter()
        .map(|u| if u < 1.0 - p { scale } else { 0.0 })
        .collect();
    let mask = Tensor::from_vec(mask, input.shape())?
        .to_dtype(input.dtype())?
        .to(input.device())?;
    input.mul(&mask)
}
