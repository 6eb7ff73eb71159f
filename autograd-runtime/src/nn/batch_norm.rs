//! `BatchNorm1d`, `BatchNorm2d` and `BatchNorm3d`: batch normalisation with running statistics
//! (PyTorch's `nn.BatchNorm*d`), over [`functional::batch_norm`](super::functional::batch_norm).

use super::repr::py_float;
use crate::nn::functional::batch_norm;
use crate::nn::{Forward, Module};
use crate::{DType, Error, Result, Tensor, no_grad};

/// Python's `True`/`False`.
fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// `_NormBase.extra_repr`.
fn extra_repr(
    num_features: usize,
    eps: f64,
    momentum: Option<f64>,
    affine: bool,
    bias: bool,
    track_running_stats: bool,
) -> String {
    format!(
        "{num_features}, eps={}, momentum={}, affine={}, bias={}, track_running_stats={}",
        py_float(eps),
        momentum.map_or_else(|| "None".to_owned(), py_float),
        py_bool(affine),
        py_bool(bias),
        py_bool(track_running_stats)
    )
}

/// The running statistics PyTorch's `reset_running_stats` starts from: zeros, ones and a 0-dim
/// `I64` zero.
fn running_stats(num_features: usize) -> Result<(Tensor, Tensor, Tensor)> {
    Ok((
        Tensor::zeros(&[num_features], DType::F32)?,
        Tensor::ones(&[num_features], DType::F32)?,
        Tensor::zeros(&[], DType::I64)?,
    ))
}

/// `_BatchNorm.forward`, after its input-dimension check: counts the batch and picks the
/// averaging factor (`1 / num_batches_tracked` when `momentum` is `None`), then normalises by
/// the batch's statistics in training mode (or when no running statistics are kept) and by the
/// running ones otherwise.
#[allow(clippy::too_many_arguments)] // the layer's fields, as PyTorch's forward reads them
fn forward(
    input: &Tensor,
    training: bool,
    momentum: Option<f64>,
    eps: f64,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    num_batches_tracked: Option<&Tensor>,
) -> Result<Tensor> {
    let mut factor = momentum.unwrap_or(0.0);
    let tracking = running_mean.is_some();
    if training
        && tracking
        && let Some(count) = num_batches_tracked
    {
        {
            let _g = no_grad();
            count.add_(&Tensor::scalar(1i64))?;
        }
        if momentum.is_none() {
            factor = 1.0 / count.item::<i64>()? as f64;
        }
    }
    let bn_training = training || !tracking;
    let (rm, rv) = if !training || tracking {
        (running_mean, running_var)
    } else {
        (None, None)
    };
    batch_norm(input, rm, rv, weight, bias, bn_training, factor, eps)
}

/// A batch-norm layer: the struct (`$doc` its documentation), its constructor and builders,
/// and a forward that takes inputs whose dimension count `$check` accepts (`None`) or names
/// what it expects.
macro_rules! batch_norm_layer {
    ($(#[$doc:meta])* $name:ident, $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Module)]
        #[module(extra_repr = $name::extra_repr)]
        pub struct $name {
            weight: Option<Tensor>,
            bias: Option<Tensor>,
            #[buffer]
            running_mean: Option<Tensor>,
            #[buffer]
            running_var: Option<Tensor>,
            #[buffer]
            num_batches_tracked: Option<Tensor>,
            #[module(skip)]
            num_features: usize,
            #[module(skip)]
            eps: f64,
            #[module(skip)]
            momentum: Option<f64>,
            #[module(skip)]
            affine: bool,
            #[module(skip)]
            track_running_stats: bool,
            #[module(training)]
            training: bool,
        }

        impl $name {
            #[doc = concat!(
                "A layer over `num_features` channels with PyTorch's defaults (`nn.",
                stringify!($name),
                "(num_features)`): `eps = 1e-5`, `momentum = Some(0.1)`, a weight (ones) and a \
                 bias (zeros), and running statistics (`running_mean` zeros, `running_var` ones, \
                 `num_batches_tracked` a 0-dim `I64` zero), all f32 on the CPU. Nothing is \
                 drawn from the generator, as in PyTorch.\n\n\
                 # Errors\n\nAllocation errors only."
            )]
            pub fn new(num_features: usize) -> Result<$name> {
                let (running_mean, running_var, count) = running_stats(num_features)?;
                Ok($name {
                    weight: Some(Tensor::ones(&[num_features], DType::F32)?.requires_grad_(true)?),
                    bias: Some(Tensor::zeros(&[num_features], DType::F32)?.requires_grad_(true)?),
                    running_mean: Some(running_mean),
                    running_var: Some(running_var),
                    num_batches_tracked: Some(count),
                    num_features,
                    eps: 1e-5,
                    momentum: Some(0.1),
                    affine: true,
                    track_running_stats: true,
                    training: true,
                })
            }

            /// The same layer with `eps` added to the variance (PyTorch's `eps=`).
            #[must_use]
            pub fn eps(mut self, eps: f64) -> $name {
                self.eps = eps;
                self
            }

            /// The same layer with PyTorch's `momentum=`: the weight of each batch's
            /// statistics in the running ones, or `None` for their cumulative average
            /// (`1 / num_batches_tracked`).
            #[must_use]
            pub fn momentum(mut self, momentum: Option<f64>) -> $name {
                self.momentum = momentum;
                self
            }

            /// The same layer with or without its weight and bias (PyTorch's `affine=`;
            /// `false` registers both as `None`).
            ///
            /// # Errors
            ///
            /// Allocation errors only.
            pub fn affine(mut self, affine: bool) -> Result<$name> {
                self.affine = affine;
                let n = self.num_features;
                if affine {
                    // Off before: both come back; on before: the bias stays as it was.
                    let bias = self.bias.is_some() || self.weight.is_none();
                    self.weight = Some(Tensor::ones(&[n], DType::F32)?.requires_grad_(true)?);
                    self.bias = if bias {
                        Some(Tensor::zeros(&[n], DType::F32)?.requires_grad_(true)?)
                    } else {
                        None
                    };
                } else {
                    self.weight = None;
                    self.bias = None;
                }
                Ok(self)
            }

            /// The same layer without its bias (PyTorch's keyword-only `bias=False`).
            #[must_use]
            pub fn without_bias(mut self) -> $name {
                self.bias = None;
                self
            }

            /// The same layer with or without running statistics (PyTorch's
            /// `track_running_stats=`; `false` registers the three buffers as `None`, and
            /// the batch's statistics normalise in evaluation mode too).
            ///
            /// # Errors
            ///
            /// Allocation errors only.
            pub fn track_running_stats(mut self, track_running_stats: bool) -> Result<$name> {
                self.track_running_stats = track_running_stats;
                if track_running_stats {
                    let (m, v, c) = running_stats(self.num_features)?;
                    (self.running_mean, self.running_var, self.num_batches_tracked) =
                        (Some(m), Some(v), Some(c));
                } else {
                    (self.running_mean, self.running_var, self.num_batches_tracked) =
                        (None, None, None);
                }
                Ok(self)
            }

            /// The weight (`[num_features]`), if the layer is affine.
            pub fn weight(&self) -> Option<&Tensor> {
                self.weight.as_ref()
            }

            /// The bias (`[num_features]`), if it has one.
            pub fn bias(&self) -> Option<&Tensor> {
                self.bias.as_ref()
            }

            /// The running mean (`[num_features]`), if the layer tracks statistics.
            pub fn running_mean(&self) -> Option<&Tensor> {
                self.running_mean.as_ref()
            }

            /// The running (unbiased) variance (`[num_features]`), if the layer tracks
            /// statistics.
            pub fn running_var(&self) -> Option<&Tensor> {
                self.running_var.as_ref()
            }

            /// The number of batches seen in training mode (a 0-dim `I64` tensor), if the
            /// layer tracks statistics.
            pub fn num_batches_tracked(&self) -> Option<&Tensor> {
                self.num_batches_tracked.as_ref()
            }

            /// PyTorch's `reset_running_stats()`: the running mean to zeros, the variance
            /// to ones and the batch count to zero, in place.
            ///
            /// # Errors
            ///
            /// Device errors only.
            pub fn reset_running_stats(&self) -> Result<()> {
                let _g = no_grad();
                for (t, v) in [
                    (&self.running_mean, 0.0),
                    (&self.running_var, 1.0),
                    (&self.num_batches_tracked, 0.0),
                ] {
                    if let Some(t) = t {
                        t.fill_(v)?;
                    }
                }
                Ok(())
            }

            fn extra_repr(&self) -> String {
                extra_repr(
                    self.num_features,
                    self.eps,
                    self.momentum,
                    self.affine,
                    self.bias.is_some(),
                    self.track_running_stats,
                )
            }
        }

        impl Forward for $name {
            fn forward(&self, input: &Tensor) -> Result<Tensor> {
                let check: fn(usize) -> Option<&'static str> = $check;
                if let Some(expected) = check(input.ndim()) {
                    return Err(Error::InvalidArgument(format!(
                        "expected {expected} input (got {}D input)",
                        input.ndim()
                    )));
                }
                forward(
                    input,
                    self.training,
                    self.momentum,
                    self.eps,
                    self.weight.as_ref(),
                    self.bias.as_ref(),
                    self.running_mean.as_ref(),
                    self.running_var.as_ref(),
                    self.num_batches_tracked.as_ref(),
                )
            }
        }
    };
}

batch_norm_layer!(
    /// Batch normalisation over the channels of a `[N, C]` or `[N, C, L]` input (PyTorch's
    /// `nn.BatchNorm1d`): in training mode each channel is normalised by the batch's mean and
    /// biased variance, and the running statistics (buffers `running_mean`, `running_var`,
    /// `num_batches_tracked`, in PyTorch's order and names) move towards the batch's (the
    /// unbiased variance) by `momentum`; in evaluation mode the running statistics normalise.
    /// Then the weight scales and the bias shifts each channel.
    ///
    /// # Errors
    ///
    /// The forward refuses an input that is not 2-D or 3-D with PyTorch's `expected 2D or 3D
    /// input (got 4D input)`, and otherwise returns
    /// [`functional::batch_norm`](super::functional::batch_norm)'s errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{BatchNorm1d, Forward, Module};
    /// use autograd_runtime::{DType, Tensor};
    /// let mut bn = BatchNorm1d::new(2)?.eps(0.0);
    /// let keys: Vec<String> = bn.state_dict().keys().map(String::from).collect();
    /// assert_eq!(keys, ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]);
    /// let x = Tensor::from_vec(vec![1.0f64, 10.0, 3.0, 30.0], &[2, 2])?;
    /// bn.to_dtype(DType::F64)?;
    /// assert_eq!(bn.forward(&x)?.to_vec::<f64>()?, [-1.0, -1.0, 1.0, 1.0]);
    /// // The running mean moved a tenth of the way to the batch mean (2, 20).
    /// let rm = bn.running_mean().unwrap().to_vec::<f64>()?;
    /// assert!((rm[0] - 0.2).abs() < 1e-15 && (rm[1] - 2.0).abs() < 1e-15);
    /// assert_eq!(bn.num_batches_tracked().unwrap().item::<i64>()?, 1);
    /// bn.eval(); // now the running statistics normalise: (1 - 0.2) / √(0.9 + 0.1 · 2)
    /// let y = bn.forward(&x)?.to_vec::<f64>()?;
    /// assert!((y[0] - 0.8 / 1.1f64.sqrt()).abs() < 1e-12);
    /// assert_eq!(
    ///     bn.to_string(),
    ///     "BatchNorm1d(2, eps=0.0, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    /// );
    /// assert_eq!(
    ///     bn.forward(&Tensor::zeros(&[2, 2, 3, 3], DType::F32)?).unwrap_err().to_string(),
    ///     "expected 2D or 3D input (got 4D input)"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    BatchNorm1d,
    |d| (d != 2 && d != 3).then_some("2D or 3D")
);

batch_norm_layer!(
    /// Batch normalisation over the channels of an `[N, C, H, W]` input (PyTorch's
    /// `nn.BatchNorm2d`), as [`BatchNorm1d`] does over `[N, C, L]`: batch statistics and
    /// updated running statistics in training mode, running statistics in evaluation mode.
    ///
    /// # Errors
    ///
    /// The forward refuses an input that is not 4-D with PyTorch's `expected 4D input (got 3D
    /// input)`, and otherwise returns
    /// [`functional::batch_norm`](super::functional::batch_norm)'s errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{BatchNorm2d, Forward, Module};
    /// use autograd_runtime::{DType, Tensor};
    /// let mut bn = BatchNorm2d::new(3)?.momentum(None).eps(1e-3);
    /// let x = Tensor::rand(&[4, 3, 5, 5], DType::F32)?;
    /// let y = bn.forward(&x)?;
    /// // Each channel now has mean 0 over the batch and the positions.
    /// let means = y.mean_dims(&[0, 2, 3], false)?.to_vec::<f32>()?;
    /// assert!(means.iter().all(|m| m.abs() < 1e-5));
    /// // With `momentum = None`, the first batch's statistics become the running ones.
    /// let batch_mean = x.mean_dims(&[0, 2, 3], false)?.to_vec::<f32>()?;
    /// let running = bn.running_mean().unwrap().to_vec::<f32>()?;
    /// assert!(running.iter().zip(&batch_mean).all(|(r, m)| (r - m).abs() < 1e-6));
    /// let bn = BatchNorm2d::new(3)?.affine(false)?.track_running_stats(false)?;
    /// assert!(bn.state_dict().is_empty());
    /// assert_eq!(
    ///     bn.to_string(),
    ///     "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    BatchNorm2d,
    |d| (d != 4).then_some("4D")
);

batch_norm_layer!(
    /// Batch normalisation over the channels of an `[N, C, D, H, W]` input (PyTorch's
    /// `nn.BatchNorm3d`), as [`BatchNorm2d`] over `[N, C, H, W]`.
    ///
    /// # Errors
    ///
    /// The forward refuses an input that is not 5-D with PyTorch's `expected 5D input (got 4D
    /// input)`, and otherwise returns
    /// [`functional::batch_norm`](super::functional::batch_norm)'s errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{BatchNorm3d, Forward, Module};
    /// use autograd_runtime::{DType, Tensor};
    /// let bn = BatchNorm3d::new(2)?;
    /// assert_eq!(bn.forward(&Tensor::rand(&[2, 2, 3, 3, 3], DType::F32)?)?.shape(), &[2, 2, 3, 3, 3]);
    /// assert_eq!(
    ///     bn.forward(&Tensor::zeros(&[2, 2, 3, 3], DType::F32)?).unwrap_err().to_string(),
    ///     "expected 5D input (got 4D input)"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    BatchNorm3d,
    |d| (d != 5).then_some("5D")
);
