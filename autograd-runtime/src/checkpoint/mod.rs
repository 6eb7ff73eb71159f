//! Activation checkpointing (PyTorch's `torch.utils.checkpoint.checkpoint`): a region of the
//! forward keeps none of its activations; the backward recomputes them from the region's inputs.
//! Memory for compute: one more forward of the region per backward.
//!
//! Two variants, as in PyTorch, chosen with [`CheckpointOptions::use_reentrant`]:
//!
//! * **reentrant** (`reentrant.rs`): the region runs under `no_grad`, and one node,
//!   `CheckpointFunctionBackward`, saves its inputs. Its backward recomputes the region with grad
//!   mode on and runs a reentrant `backward()` through the recomputed graph. Works with
//!   `backward()` only ([`is_checkpoint_valid`](crate::is_checkpoint_valid)).
//! * **non-reentrant** (`non_reentrant.rs`): the region is recorded as usual, but under
//!   saved-tensor hooks that keep a handle instead of each saved tensor; the first unpack of a
//!   handle in a backward pass recomputes the region and hands out the recomputed tensors. Works
//!   with `backward()`, `backward(inputs=..)`, `grad()` and `create_graph`.
//!
//! Both restore the random state of the forward for the recomputation (`rng.rs`), so a region with
//! [`Dropout`](crate::nn::Dropout) recomputes the masks it drew.

mod non_reentrant;
mod reentrant;
pub(crate) mod rng;

use crate::sync::Arc;
use crate::{Error, Result, Tensor};

/// A checkpointed region: its inputs to its outputs. Called once in the forward and once per
/// recomputation, possibly on another thread.
pub(crate) type Function = Arc<dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync>;

/// Options of [`checkpoint`] (PyTorch's keyword arguments of `torch.utils.checkpoint.checkpoint`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::CheckpointOptions;
/// let options = CheckpointOptions::new().use_reentrant(false).preserve_rng_state(true);
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
pub struct CheckpointOptions {
    use_reentrant: Option<bool>,
    preserve_rng_state: bool,
    determinism_check: String,
}

impl Default for CheckpointOptions {
    fn default() -> CheckpointOptions {
        CheckpointOptions::new()
    }
}

impl CheckpointOptions {
    /// PyTorch's defaults: `use_reentrant` unset (a warning, then the reentrant variant),
    /// `preserve_rng_state = true`, `determinism_check = "default"`.
    pub fn new() -> CheckpointOptions {
        CheckpointOptions {
            use_reentrant: None,
            preserve_rng_state: true,
            determinism_check: "default".to_string(),
        }
    }

    /// Which variant: reentrant (`true`) or non-reentrant (`false`, recommended: it works with
    /// `grad()` and `backward(inputs=..)` too). Pass it explicitly: without it [`checkpoint`]
    /// warns, as PyTorch does, and uses the reentrant variant.
    pub fn use_reentrant(mut self, use_reentrant: bool) -> CheckpointOptions {
        self.use_reentrant = Some(use_reentrant);
        self
    }

    /// Whether the recomputation draws the random numbers the forward drew (default `true`):
    /// the same dropout masks, hence the same gradients as without checkpointing.
    pub fn preserve_rng_state(mut self, preserve: bool) -> CheckpointOptions {
        self.preserve_rng_state = preserve;
        self
    }

    /// The non-reentrant variant's check of the recomputed tensors: `"default"` compares the
    /// number, shapes, dtypes and devices of the tensors saved in the forward and recomputed;
    /// `"none"` turns it off. Ignored by the reentrant variant.
    pub fn determinism_check(mut self, check: &str) -> CheckpointOptions {
        self.determinism_check = check.to_string();
        self
    }
}

/// Runs `function` on `inputs` without keeping the activations it computes; the backward pass
/// recomputes them (PyTorch's `torch.utils.checkpoint.checkpoint(function, *args,
/// use_reentrant=.., preserve_rng_state=..)`).
///
/// `function` may close over parameters (leaves that require grad): they receive their gradients
/// as without checkpointing. It must compute the same thing when called again; random draws of
/// [`Dropout`](crate::nn::Dropout) are replayed (`preserve_rng_state`). What stays alive
/// between forward and backward is `inputs` and the outputs.
///
/// With the reentrant variant, parameters inside the region get gradients only if some input
/// requires grad (otherwise nothing is recorded, and a warning says so, as PyTorch's
/// "None of the inputs have requires_grad=True. Gradients will be None"); its backward runs only
/// inside a plain `backward()`.
///
/// # Errors
///
/// `function`'s errors; [`Error::InvalidArgument`] for an unknown `determinism_check`. In the
/// backward: with the reentrant variant inside `grad()` or `backward(inputs=..)`, PyTorch's
/// "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an
/// `inputs` parameter to .backward(). ..."; with the non-reentrant variant, PyTorch's
/// "torch.utils.checkpoint: ..." errors when the recomputation saves other tensors than the
/// forward did, or when a saved tensor is unpacked twice in one pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Linear, Module};
/// use autograd_runtime::{checkpoint, CheckpointOptions, DType, Tensor};
/// use std::sync::Arc;
/// let layer = Arc::new(Linear::new(4, 4)?);
/// let x = Tensor::randn_seeded(&[2, 4], DType::F32, 1)?.requires_grad_(true)?;
/// for use_reentrant in [true, false] {
///     let l = layer.clone();
///     let y = checkpoint(
///         move |xs: &[Tensor]| Ok(vec![l.forward(&xs[0])?.tanh()?]),
///         &[x.clone()],
///         CheckpointOptions::new().use_reentrant(use_reentrant),
///     )?;
///     y[0].sum()?.backward()?;
/// }
/// // Twice the gradient of one pass: both variants computed the same one.
/// let plain = layer.forward(&x)?.tanh()?.sum()?;
/// let g = autograd_runtime::grad(&[plain], &[layer.parameters()[0].clone()], Default::default())?;
/// let twice = g[0].as_ref().unwrap().mul_scalar(2.0)?.to_vec::<f32>()?;
/// let got = layer.parameters()[0].grad().unwrap().to_vec::<f32>()?;
/// assert!(got.iter().zip(&twice).all(|(a, b)| (a - b).abs() < 1e-6));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn checkpoint<F>(
    function: F,
    inputs: &[Tensor],
    options: CheckpointOptions,
) -> Result<Vec<Tensor>>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync + 'static,
{
    let use_reentrant = options.use_reentrant.unwrap_or_else(|| {
        crate::warning::warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. \
             use_reentrant=False is recommended, but if you need to preserve the current default \
             behavior, you can pass use_reentrant=True. Refer to docs for more details on the \
             differences between the two variants.",
        );
        true
    });
    let determinism_check = match options.determinism_check.as_str() {
        "default" => true,
        "none" => false,
        other => {
            return Err(Error::InvalidArgument(format!(
                "determinism_check should be one of ['default', 'none'], but got {other}"
            )));
        }
    };
    let function: Function = Arc::new(function);
    if use_reentrant {
        reentrant::checkpoint(function, inputs, options.preserve_rng_state)
    } else {
        non_reentrant::checkpoint(
            function,
            inputs,
            options.preserve_rng_state,
            determinism_check,
        )
    }
}
