//! The `Module` trait (PyTorch's `nn.Module`: parameters, buffers, children, mode, repr) and
//! `Forward`, the single-tensor forward that `Sequential` chains.

use std::fmt;

use super::state::{self, IncompatibleKeys};
use crate::{DType, Device, Error, Result, StateDict, Tensor};

/// A layer or a model: PyTorch's `nn.Module`, its structure (parameters, buffers, child modules,
/// training mode, `repr`). The computation is [`Forward`] for a module of one input, or an
/// inherent `forward` method for one of several (attention with a mask).
///
/// Write it with [`#[derive(Module)]`](derive@crate::nn::Module): the derive lists the struct's fields
/// under PyTorch's names. By hand, a module writes
/// [`named_parameters`](Module::named_parameters) and
/// [`visit_parameters_mut`](Module::visit_parameters_mut) (the same parameters, in the same
/// order, under the same names), and, where it has them, buffers, children and a training mode.
/// The recursive methods list a module's own tensors first, then each child's, prefixed by the
/// child's name and a dot (`"fc1.weight"`), as PyTorch does. Everything else (`parameters`,
/// `named_modules`, `apply`, `train`, `eval`, `to`, `to_dtype`, `zero_grad`, `state_dict`,
/// `load_state_dict`) is provided.
///
/// # Examples
///
/// A model of one's own, with PyTorch's names for its parameters:
///
/// ```
/// use autograd_runtime::nn::{Forward, Linear, Module};
/// use autograd_runtime::{DType, Result, Tensor};
///
/// #[derive(Debug, Module)]
/// struct TwoLayers {
///     fc1: Linear,
///     fc2: Linear,
/// }
///
/// impl Forward for TwoLayers {
///     fn forward(&self, x: &Tensor) -> Result<Tensor> {
///         self.fc2.forward(&self.fc1.forward(x)?.relu()?)
///     }
/// }
///
/// let mut model = TwoLayers { fc1: Linear::new(4, 8)?, fc2: Linear::new(8, 2)? };
/// let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
/// assert_eq!(keys, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
/// model.to_dtype(DType::F64)?;                          // every parameter, still a leaf
/// assert!(model.parameters().iter().all(|p| p.dtype() == DType::F64 && p.is_leaf()));
/// assert_eq!(model.forward(&Tensor::zeros(&[3, 4], DType::F64)?)?.shape(), &[3, 2]);
/// assert_eq!(
///     model.to_string(),
///     "TwoLayers(\n  (fc1): Linear(in_features=4, out_features=8, bias=True)\n  \
///      (fc2): Linear(in_features=8, out_features=2, bias=True)\n)"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an `nn::Module`",
    label = "not a parameter, a buffer or a child module",
    note = "in a `#[derive(Module)]` struct, a field is a parameter (`Tensor`, `Option<Tensor>`), \
            a buffer (`#[buffer]`), or a child module (a type that implements `Module`, \
            `Option<M>`, `Vec<M>`, `Box<dyn Forward>`); mark plain data `#[module(skip)]`"
)]
pub trait Module: AsModule + fmt::Debug + Send + Sync {
    /// Every parameter with its name relative to this module (PyTorch's `named_parameters()`:
    /// `"weight"`, `"0.bias"`): the module's own, in registration order, then each child's,
    /// prefixed. A tensor held twice (tied weights) is listed once, under its first name, as
    /// in PyTorch. ([`state_dict`](Module::state_dict) keeps every module's own name for it, as
    /// PyTorch's does, except for two fields of one module holding the same tensor: that one is
    /// saved under the first.)
    fn named_parameters(&self) -> Vec<(String, Tensor)>;

    /// Calls `f` with each parameter's name and a mutable handle to it, in the order and under
    /// the names of [`named_parameters`](Module::named_parameters) (a tensor held twice is
    /// visited at each place), so that `f` can replace it (as [`to`](Module::to) does). Stops at
    /// the first error `f` returns.
    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()>;

    /// Every buffer (state that is not trained: BatchNorm's running statistics) with its name,
    /// own then children's (PyTorch's `named_buffers()`). The default has none.
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }

    /// Calls `f` with each buffer's name and a mutable handle to it, as
    /// [`visit_parameters_mut`](Module::visit_parameters_mut) does for parameters. The default
    /// has none.
    fn visit_buffers_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        let _ = f;
        Ok(())
    }

    /// The full names of the buffers registered with `persistent=False`: they are in
    /// [`named_buffers`](Module::named_buffers) but not in the [`state_dict`](Module::state_dict).
    /// The default has none.
    fn non_persistent_buffers(&self) -> Vec<String> {
        Vec::new()
    }

    /// The direct children with their names (PyTorch's `named_children()`), in registration
    /// order. The default has none.
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        Vec::new()
    }

    /// Calls `f` with each direct child's name and a mutable handle to it, in the order of
    /// [`named_children`](Module::named_children). The default has none.
    fn visit_children_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut dyn Module) -> Result<()>,
    ) -> Result<()> {
        let _ = f;
        Ok(())
    }

    /// Switches training mode on or off (PyTorch's `train(mode)`), this module's and its
    /// children's. The default does nothing: modules whose forward depends on the mode (dropout)
    /// and containers override it.
    fn set_training(&mut self, training: bool) {
        let _ = training;
    }

    /// Whether the module is in training mode (the default for a new module). The default
    /// answers `true`: modules that keep a mode override it.
    fn is_training(&self) -> bool {
        true
    }

    /// PyTorch's `repr(module)`: `Name(extra_repr)` for a layer (`Linear(in_features=4,
    /// out_features=16, bias=True)`), and for a container its children, one indented
    /// `(name): child` line each. The default is the type's name and `()`; every built-in layer
    /// writes PyTorch's text, the derive writes `nn.Module.__repr__`'s, and `Display` prints it.
    ///
    /// ```
    /// use autograd_runtime::nn::{Linear, Module, Relu, Sequential};
    /// let model = Sequential::new().add(Linear::new(4, 8)?).add(Relu::new());
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

    /// The parameters, without their names.
    fn parameters(&self) -> Vec<Tensor> {
        parameters(self.as_module())
    }

    /// The buffers, without their names.
    fn buffers(&self) -> Vec<Tensor> {
        self.named_buffers().into_iter().map(|(_, b)| b).collect()
    }

    /// This module (named `""`) and every module below it, in pre-order, under PyTorch's dotted
    /// names (`named_modules()`).
    ///
    /// ```
    /// use autograd_runtime::nn::{Linear, Module, Relu, Sequential};
    /// let model = Sequential::new().add(Linear::new(4, 8)?).add(Relu::new());
    /// let names: Vec<String> = model.named_modules().into_iter().map(|(n, _)| n).collect();
    /// assert_eq!(names, ["", "0", "1"]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    fn named_modules(&self) -> Vec<(String, &dyn Module)> {
        named_modules(self.as_module())
    }

    /// This module and every module below it, in pre-order (PyTorch's `modules()`).
    fn modules(&self) -> Vec<&dyn Module> {
        self.named_modules().into_iter().map(|(_, m)| m).collect()
    }

    /// Calls `f` on every child module (each after its own children), then on this module, as
    /// PyTorch's `apply(fn)` does (to initialise weights). Stops at the first error.
    ///
    /// ```
    /// use autograd_runtime::nn::{Linear, Module, Relu, Sequential, init};
    /// let mut model = Sequential::new().add(Linear::new(4, 8)?).add(Relu::new());
    /// let mut seen = Vec::new();
    /// model.apply(&mut |m| {
    ///     seen.push(m.repr().split('(').next().unwrap_or_default().to_string());
    ///     for p in m.named_parameters().into_iter().filter(|(n, _)| !n.contains('.')) {
    ///         init::zeros_(&p.1)?;
    ///     }
    ///     Ok(())
    /// })?;
    /// assert_eq!(seen, ["Linear", "ReLU", "Sequential"]);
    /// assert!(model.parameters()[0].to_vec::<f32>()?.iter().all(|&v| v == 0.0));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    fn apply(&mut self, f: &mut dyn FnMut(&mut dyn Module) -> Result<()>) -> Result<()> {
        apply(self.as_module_mut(), f)
    }

    /// The number of values in all parameters.
    fn parameter_count(&self) -> usize {
        parameters(self.as_module()).iter().map(Tensor::numel).sum()
    }

    /// Training mode (PyTorch's `train()`), for this module and every child.
    fn train(&mut self) {
        self.set_training(true);
    }

    /// Evaluation mode (PyTorch's `eval()`), for this module and every child: dropout passes
    /// its input through.
    fn eval(&mut self) {
        self.set_training(false);
    }

    /// Moves every parameter and buffer to `device`. The parameters are new tensors afterwards
    /// (each still a leaf that requires grad, its gradient dropped; a tensor held twice stays
    /// one): build optimizers after moving the model, as PyTorch's documentation advises.
    fn to(&mut self, device: Device) -> Result<()> {
        to_device(self.as_module_mut(), device)
    }

    /// Converts every floating-point parameter and buffer to `dtype` (PyTorch's `to(dtype)`),
    /// with the caveat of [`to`](Module::to). Integer buffers (BatchNorm's
    /// `num_batches_tracked`) keep their dtype, as in PyTorch.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `dtype` that is not floating point, in PyTorch's words.
    fn to_dtype(&mut self, dtype: DType) -> Result<()> {
        to_dtype(self.as_module_mut(), dtype)
    }

    /// Drops every parameter's gradient (PyTorch 2's `zero_grad()`, `set_to_none=True`).
    fn zero_grad(&self) {
        parameters(self.as_module())
            .iter()
            .for_each(Tensor::clear_grad);
    }

    /// The parameters and persistent buffers under their PyTorch names, sharing storage with the
    /// module (PyTorch's `state_dict()`, whose tensors are detached): for each module in
    /// pre-order, its own parameters, then its own persistent buffers.
    fn state_dict(&self) -> StateDict {
        state_dict(self.as_module())
    }

    /// Copies `dict`'s tensors into the parameters and persistent buffers of the same names, in
    /// place (PyTorch's `load_state_dict(strict=True)`): they keep their identity, so an
    /// optimizer built on the parameters still updates the model. Values are converted to each
    /// tensor's dtype and device. Missing keys, unexpected keys and shape mismatches are reported
    /// together, in PyTorch's words, and nothing is copied when there is any.
    ///
    /// # Errors
    ///
    /// [`Error::StateDict`] as described.
    fn load_state_dict(&mut self, dict: &StateDict) -> Result<()> {
        self.load_state_dict_with(dict, true).map(drop)
    }

    /// [`load_state_dict`](Module::load_state_dict) with PyTorch's `strict` flag: with
    /// `strict = false`, the tensors whose names match are copied and the others are returned
    /// as PyTorch's `missing_keys` (in the module, not in `dict`) and `unexpected_keys` (in
    /// `dict`, not in the module). A shape mismatch is an error either way, as in PyTorch.
    ///
    /// ```
    /// use autograd_runtime::nn::{Linear, Module};
    /// use autograd_runtime::{StateDict, Tensor};
    /// let mut layer = Linear::new(2, 1)?;
    /// let mut dict = StateDict::new();
    /// dict.insert("weight", Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2])?);
    /// dict.insert("scale", Tensor::scalar(3.0f32));
    /// let keys = layer.load_state_dict_with(&dict, false)?;
    /// assert_eq!(keys.missing_keys, ["bias"]);
    /// assert_eq!(keys.unexpected_keys, ["scale"]);
    /// assert_eq!(layer.weight().to_vec::<f32>()?, [1.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::StateDict`]: with `strict`, missing and unexpected keys; either way, shape
    /// mismatches. Nothing is copied then.
    fn load_state_dict_with(&mut self, dict: &StateDict, strict: bool) -> Result<IncompatibleKeys> {
        state::load(self.as_module_mut(), dict, strict)
    }
}

// The provided methods' bodies, on `&dyn Module`: compiled once, not once per module type.

fn parameters(module: &dyn Module) -> Vec<Tensor> {
    module
        .named_parameters()
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

fn named_modules(root: &dyn Module) -> Vec<(String, &dyn Module)> {
    let mut out = Vec::new();
    // An explicit stack: pre-order without recursion, children pushed in reverse.
    let mut stack = vec![(String::new(), root)];
    while let Some((name, module)) = stack.pop() {
        let children = module.named_children();
        for (child, m) in children.into_iter().rev() {
            stack.push((state::join(&name, &child), m));
        }
        out.push((name, module));
    }
    out
}

fn apply(module: &mut dyn Module, f: &mut dyn FnMut(&mut dyn Module) -> Result<()>) -> Result<()> {
    module.visit_children_mut(&mut |_, child| child.apply(f))?;
    f(module)
}

fn to_device(module: &mut dyn Module, device: Device) -> Result<()> {
    state::convert(module, &mut |t| {
        (t.device() != device).then(|| t.to(device)).transpose()
    })
}

fn to_dtype(module: &mut dyn Module, dtype: DType) -> Result<()> {
    if !dtype.is_floating_point() {
        return Err(Error::InvalidArgument(format!(
            "nn.Module.to only accepts floating point or complex dtypes, but got desired \
             dtype={}",
            dtype.torch_name()
        )));
    }
    state::convert(module, &mut |t| {
        let convert = t.dtype().is_floating_point() && t.dtype() != dtype;
        convert.then(|| t.to_dtype(dtype)).transpose()
    })
}

fn state_dict(module: &dyn Module) -> StateDict {
    let mut dict = StateDict::new();
    for (name, t) in state::entries(module) {
        dict.insert(name, t.detach());
    }
    dict
}

/// A module's single-tensor computation: PyTorch's `forward(input)`, what
/// [`Sequential`](super::Sequential) chains. A module whose forward takes more (attention with a
/// mask) writes an inherent `forward` method instead.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Linear, Module, Relu};
/// use autograd_runtime::{DType, Result, Tensor};
///
/// #[derive(Debug, Module)]
/// struct Block {
///     fc: Linear,
///     act: Relu,
/// }
///
/// impl Forward for Block {
///     fn forward(&self, x: &Tensor) -> Result<Tensor> {
///         self.act.forward(&self.fc.forward(x)?)
///     }
/// }
///
/// let block = Block { fc: Linear::new(3, 2)?, act: Relu::new() };
/// let y = block.forward(&Tensor::ones(&[4, 3], DType::F32)?)?;
/// assert_eq!(y.shape(), &[4, 2]);
/// assert!(y.to_vec::<f32>()?.iter().all(|&v| v >= 0.0));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Forward: Module {
    /// The module's output for `input`.
    ///
    /// # Errors
    ///
    /// Whatever the module's ops return (shape mismatches, device errors).
    fn forward(&self, input: &Tensor) -> Result<Tensor>;
}

/// A module as `&dyn Module`: what lets the provided methods of [`Module`] (`named_modules`,
/// `apply`) hand a module to code that takes any module. Implemented for every sized `Module`;
/// there is nothing to write.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{AsModule, Module, Relu};
/// let relu = Relu::new();
/// let m: &dyn Module = relu.as_module();
/// assert_eq!(m.repr(), "ReLU()");
/// ```
// The derive reaches each child through this trait: the same message as `Module`'s.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an `nn::Module`",
    label = "not a parameter, a buffer or a child module",
    note = "in a `#[derive(Module)]` struct, a field is a parameter (`Tensor`, `Option<Tensor>`), \
            a buffer (`#[buffer]`), or a child module (a type that implements `Module`, \
            `Option<M>`, `Vec<M>`, `Box<dyn Forward>`); mark plain data `#[module(skip)]`"
)]
pub trait AsModule {
    /// `self` as a module trait object.
    fn as_module(&self) -> &dyn Module;

    /// `self` as a mutable module trait object.
    fn as_module_mut(&mut self) -> &mut dyn Module;
}

impl<M: Module> AsModule for M {
    fn as_module(&self) -> &dyn Module {
        self
    }

    fn as_module_mut(&mut self) -> &mut dyn Module {
        self
    }
}

impl fmt::Display for dyn Module + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repr())
    }
}

impl fmt::Display for dyn Forward + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repr())
    }
}
