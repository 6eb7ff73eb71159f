//! Layers, losses and initialisers: PyTorch's `torch.nn`, in plain Rust.
//!
//! A model is a value that implements [`Module`]: its parameters are ordinary leaf [`Tensor`]s
//! that require grad, its [`forward`](Module::forward) is ordinary differentiable ops, and its
//! [`state_dict`](Module::state_dict) names the parameters as PyTorch does (`"0.weight"`,
//! `"2.bias"`), so a checkpoint saved here loads in PyTorch and the other way round.
//!
//! ```
//! use autograd_runtime::nn::{Linear, Module};
//! use autograd_runtime::{DType, Tensor, manual_seed};
//!
//! manual_seed(0);
//! let layer = Linear::new(4, 3)?;                    // torch.manual_seed(0); nn.Linear(4, 3)
//! let y = layer.forward(&Tensor::ones(&[2, 4], DType::F32)?)?;
//! assert_eq!(y.shape(), &[2, 3]);
//! let names: Vec<String> = layer.named_parameters().into_iter().map(|(n, _)| n).collect();
//! assert_eq!(names, ["weight", "bias"]);
//! # Ok::<(), autograd_runtime::Error>(())
//! ```
//!
//! Layers: [`Linear`], [`Sequential`], [`Conv2d`], [`MaxPool2d`], [`AvgPool2d`], [`Flatten`],
//! [`Embedding`], [`LayerNorm`], [`Dropout`];
//! activations [`Relu`], [`Tanh`], [`Sigmoid`], [`Gelu`], [`LeakyRelu`], [`Softmax`],
//! [`LogSoftmax`], [`Identity`]. Losses in [`functional`]: `cross_entropy` (label smoothing,
//! ignore index, class weights), `nll_loss`, `mse_loss`, `binary_cross_entropy_with_logits`,
//! and as values that keep their options: [`CrossEntropyLoss`], [`NllLoss`], [`MseLoss`],
//! [`BceWithLogitsLoss`].
//! Initialisers in [`init`]: `uniform_`, `normal_`, `constant_`, `zeros_`, `ones_`,
//! `xavier_uniform_`, `xavier_normal_`, `kaiming_uniform_`, `kaiming_normal_`. Every random draw
//! (initialisation, dropout masks) comes from the global generator as PyTorch's does, so after
//! [`manual_seed`](crate::manual_seed) a model starts from PyTorch's weights.

use std::fmt;

mod activation;
mod attention;
mod conv;
mod dropout;
mod embedding;
mod flatten;
pub mod functional;
pub mod init;
mod layer_norm;
mod linear;
mod loss;
mod norm;
mod pointwise;
mod pool;
mod repr;
mod rnn_cell;
mod sequential;

pub use activation::{
    Gelu, GeluApproximate, Identity, LeakyRelu, LogSoftmax, Relu, Sigmoid, Softmax, Tanh,
};
pub use conv::{Conv2d, Size2};
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use flatten::Flatten;
pub use layer_norm::LayerNorm;
pub use linear::Linear;
pub use loss::{BceWithLogitsLoss, CrossEntropyLoss, MseLoss, NllLoss};
pub use pool::{AvgPool2d, MaxPool2d};
pub use sequential::Sequential;

use crate::{DType, Device, Error, Result, StateDict, Tensor, no_grad};

/// A layer or a model: PyTorch's `nn.Module`.
///
/// Implementors write [`forward`](Module::forward), [`named_parameters`](Module::named_parameters)
/// and [`visit_parameters_mut`](Module::visit_parameters_mut) (the same parameters, in the same
/// order, under the same names), and, if the module behaves differently in training and in
/// evaluation, [`set_training`](Module::set_training) and [`is_training`](Module::is_training).
/// A container passes each call on to its children, prefixing their names with the child's name
/// and a dot. Everything else (`parameters`, `train`, `eval`, `to`, `to_dtype`, `zero_grad`,
/// `state_dict`, `load_state_dict`) is provided.
///
/// # Examples
///
/// A model of one's own, with PyTorch's names for its parameters:
///
/// ```
/// use autograd_runtime::nn::{Linear, Module};
/// use autograd_runtime::{DType, Result, Tensor};
///
/// #[derive(Debug)]
/// struct TwoLayers {
///     fc1: Linear,
///     fc2: Linear,
/// }
///
/// impl Module for TwoLayers {
///     fn forward(&self, x: &Tensor) -> Result<Tensor> {
///         self.fc2.forward(&self.fc1.forward(x)?.relu()?)
///     }
///
///     fn named_parameters(&self) -> Vec<(String, Tensor)> {
///         let mut out = Vec::new();
///         for (prefix, layer) in [("fc1", &self.fc1), ("fc2", &self.fc2)] {
///             for (name, p) in layer.named_parameters() {
///                 out.push((format!("{prefix}.{name}"), p));
///             }
///         }
///         out
///     }
///
///     fn visit_parameters_mut(
///         &mut self,
///         f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
///     ) -> Result<()> {
///         self.fc1.visit_parameters_mut(&mut |n, p| f(&format!("fc1.{n}"), p))?;
///         self.fc2.visit_parameters_mut(&mut |n, p| f(&format!("fc2.{n}"), p))
///     }
/// }
///
/// let mut model = TwoLayers { fc1: Linear::new(4, 8)?, fc2: Linear::new(8, 2)? };
/// let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
/// assert_eq!(keys, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
/// model.to_dtype(DType::F64)?;                          // every parameter, still a leaf
/// assert!(model.parameters().iter().all(|p| p.dtype() == DType::F64 && p.is_leaf()));
/// assert_eq!(model.forward(&Tensor::zeros(&[3, 4], DType::F64)?)?.shape(), &[3, 2]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Module: fmt::Debug + Send + Sync {
    /// The module's output for `input`.
    fn forward(&self, input: &Tensor) -> Result<Tensor>;

    /// Every parameter with its name relative to this module (PyTorch's `named_parameters()`:
    /// `"weight"`, `"0.bias"`), in registration order.
    fn named_parameters(&self) -> Vec<(String, Tensor)>;

    /// Calls `f` with each parameter's name and a mutable handle to it, in the order and under
    /// the names of [`named_parameters`](Module::named_parameters), so that `f` can replace it
    /// (as [`to`](Module::to) does). Stops at the first error `f` returns.
    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()>;

    /// Switches training mode on or off (PyTorch's `train(mode)`). The default does nothing:
    /// modules whose forward depends on the mode (dropout) and containers override it.
    fn set_training(&mut self, training: bool) {
        let _ = training;
    }

    /// Whether the module is in training mode (the default for a new module). The default
    /// answers `true`: modules that keep a mode override it.
    fn is_training(&self) -> bool {
        true
    }

    /// The parameters, without their names.
    fn parameters(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// PyTorch's `repr(module)`: `Name(extra_repr)` for a layer (`Linear(in_features=4,
    /// out_features=16, bias=True)`), and for a container its children, one indented
    /// `(name): child` line each. The default is the type's name and `()`; every built-in layer
    /// writes PyTorch's text, and `Display` prints it.
    ///
    /// ```
    /// use autograd_runtime::nn::{Linear, Module, Relu, Sequential};
    /// let model = Sequential::new().add(Linear::new(4, 8)?).add(Relu);
    /// assert_eq!(
    ///     model.to_string(),
    ///     "Sequential(\n  (0): Linear(in_features=4, out_features=8, bias=True)\n  (1): ReLU()\n)"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    fn repr(&self) -> String {
        let full = std::any::type_name_of_val(self);
        let name = full.split('<').next().unwrap_or(full);
        format!("{}()", name.rsplit("::").next().unwrap_or(name))
    }

    /// The number of values in all parameters.
    fn parameter_count(&self) -> usize {
        self.parameters().iter().map(Tensor::numel).sum()
    }

    /// Training mode (PyTorch's `train()`).
    fn train(&mut self) {
        self.set_training(true);
    }

    /// Evaluation mode (PyTorch's `eval()`): dropout passes its input through.
    fn eval(&mut self) {
        self.set_training(false);
    }

    /// Moves every parameter to `device`. The parameters are new tensors afterwards (each still a
    /// leaf that requires grad, its gradient dropped): build optimizers after moving the model,
    /// as PyTorch's documentation advises.
    fn to(&mut self, device: Device) -> Result<()> {
        self.visit_parameters_mut(&mut |_, p| {
            if p.device() != device {
                *p = p.detach().to(device)?.requires_grad_(p.requires_grad())?;
            }
            Ok(())
        })
    }

    /// Converts every parameter to `dtype` (PyTorch's `to(dtype)`), with the caveat of
    /// [`to`](Module::to).
    fn to_dtype(&mut self, dtype: DType) -> Result<()> {
        self.visit_parameters_mut(&mut |_, p| {
            if p.dtype() != dtype {
                *p = p
                    .detach()
                    .to_dtype(dtype)?
                    .requires_grad_(p.requires_grad())?;
            }
            Ok(())
        })
    }

    /// Drops every parameter's gradient (PyTorch 2's `zero_grad()`, `set_to_none=True`).
    fn zero_grad(&self) {
        for p in self.parameters() {
            p.clear_grad();
        }
    }

    /// The parameters under their PyTorch names, sharing storage with the module (PyTorch's
    /// `state_dict()`, whose tensors are detached views of the parameters).
    fn state_dict(&self) -> StateDict {
        let mut dict = StateDict::new();
        for (name, p) in self.named_parameters() {
            dict.insert(name, p.detach());
        }
        dict
    }

    /// Copies `dict`'s tensors into the parameters of the same names, in place (PyTorch's
    /// `load_state_dict(strict=True)`): the parameters keep their identity, so an optimizer built
    /// on them still updates the model. Values are converted to each parameter's dtype and
    /// device. Missing keys, unexpected keys and shape mismatches are reported together, in
    /// PyTorch's words, and nothing is copied when there is any.
    fn load_state_dict(&mut self, dict: &StateDict) -> Result<()> {
        let params = self.named_parameters();
        let mut problems = Vec::new();
        let missing: Vec<String> = params
            .iter()
            .filter(|(name, _)| !dict.contains_key(name))
            .map(|(name, _)| format!("\"{name}\""))
            .collect();
        let unexpected: Vec<String> = dict
            .keys()
            .filter(|key| !params.iter().any(|(name, _)| name == key))
            .map(|key| format!("\"{key}\""))
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "Missing key(s) in state_dict: {}. ",
                missing.join(", ")
            ));
        }
        if !unexpected.is_empty() {
            problems.push(format!(
                "Unexpected key(s) in state_dict: {}. ",
                unexpected.join(", ")
            ));
        }
        for (name, p) in &params {
            if let Some(value) = dict.get(name)
                && value.shape() != p.shape()
            {
                problems.push(format!(
                    "size mismatch for {name}: copying a param with shape {} from checkpoint, \
                     the shape in current model is {}.",
                    torch_size(value.shape()),
                    torch_size(p.shape())
                ));
            }
        }
        if !problems.is_empty() {
            return Err(Error::StateDict {
                module: module_name(self),
                message: problems.join("\n\t"),
            });
        }
        let _no_grad = no_grad();
        for (name, p) in &params {
            let value = dict.get(name).expect("checked above: no key is missing");
            p.copy_(&value.to_dtype(p.dtype())?.to(p.device())?)?;
        }
        Ok(())
    }
}

/// A layer's [`Module::named_parameters`] from its parameter fields in order, an empty
/// optional one (a bias turned off) skipped.
pub(crate) fn named<const N: usize>(slots: [(&str, Option<&Tensor>); N]) -> Vec<(String, Tensor)> {
    slots
        .into_iter()
        .filter_map(|(name, p)| Some((name.to_string(), p?.clone())))
        .collect()
}

/// A layer's [`Module::visit_parameters_mut`] over the same fields as [`named`].
pub(crate) fn visit_named<const N: usize>(
    slots: [(&str, Option<&mut Tensor>); N],
    f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
) -> Result<()> {
    for (name, p) in slots {
        if let Some(p) = p {
            f(name, p)?;
        }
    }
    Ok(())
}

/// The `Module` methods of a layer without parameters.
macro_rules! parameterless {
    () => {
        fn named_parameters(&self) -> Vec<(String, Tensor)> {
            Vec::new()
        }

        fn visit_parameters_mut(
            &mut self,
            _f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
        ) -> Result<()> {
            Ok(())
        }
    };
}
pub(crate) use parameterless;

/// PyTorch's spelling of a shape in messages: `torch.Size([3, 4])`.
pub(crate) fn torch_size(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("torch.Size([{}])", dims.join(", "))
}

/// The module's type name as PyTorch prints it (`Linear`, `Sequential`): the `Debug` output up
/// to its first non-identifier character.
fn module_name<M: Module + ?Sized>(module: &M) -> String {
    let debug = format!("{module:?}");
    debug
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("Module")
        .to_string()
}
