//! Procedural macros of the `autograd` crate: [`macro@differentiable`], [`macro@backward`] and
//! [`derive@Module`].
//!
//! Use them through the facade (`use autograd::{backward, differentiable};`, and
//! `use autograd::nn::Module;` for the derive). Runnable examples
//! live in the `autograd` crate docs, section "Custom differentiable functions", because doctests
//! of a proc-macro crate cannot use the runtime.
//!
//! Layout: `differentiable.rs` and `backward.rs` orchestrate; `attr.rs` parses the options; `ir/`
//! lowers `syn` to a typed IR; `valid/` checks a backward against its forward; `expand/` emits
//! code (infallible); `fallback.rs` keeps the user's item when there are errors.

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod attr;
mod backward;
mod ctxt;
mod derive;
mod differentiable;
mod earlier_backward;
mod expand;
mod fallback;
mod impl_form;
mod ir;
mod jvp;
mod module;
mod symbol;
mod valid;

use proc_macro::TokenStream;

/// Declares a differentiable function: its body is the forward pass, and a function annotated
/// [`#[backward(name)]`](macro@backward) gives its gradient.
///
/// # Usage
///
/// ```text
/// use autograd::{backward, differentiable, Tensor};
///
/// #[differentiable]
/// fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
///     x * x * scale
/// }
///
/// #[backward(scaled_square)]
/// fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
///     grad * x * (2.0 * scale)
/// }
/// ```
///
/// Calling `scaled_square(&x, 2.0)` runs the body with graph recording off; if grad mode is on
/// and an input requires grad, it then records one node, `ScaledSquareBackward0`, whose backward
/// calls `scaled_square_backward`. The runnable version of this example, and more, are in the
/// `autograd` crate docs.
///
/// # Rules
///
/// * The function is a free function: not a method, not generic, not `async`, `const`,
///   `unsafe`, `extern` or variadic. Parameters are plain identifiers.
/// * `&Tensor` parameters are the differentiable inputs (at least one), and so is each tensor of
///   a `&[Tensor]` parameter (one next edge per tensor, in order: `cat`, `stack`). Every other
///   parameter is an *attribute*, saved if the backward names it: cloned before the forward
///   runs, and only when a node is recorded. A borrowed attribute `&X` (`&[usize]`, `&str`) is
///   saved as `X::to_owned()` (`Vec<usize>`, `String`); `&'static X` as it is. The saved type
///   must be `Clone + Send + Sync + 'static`: rustc checks that, with its error on the
///   attribute's type. An `Option<&Tensor>` parameter is an *optional input* (an optional bias):
///   one next edge, `None` when it is absent. `Tensor`, `&mut Tensor` and `Vec<Tensor>`
///   parameters are rejected.
/// * Parameter names `grad`, `grad_*`, `result`, `result_*` and `needs_input_grad` are reserved
///   for the backward.
/// * It returns `Tensor`, a tuple of tensors (several outputs), `Vec<Tensor>` (any number of
///   outputs, decided at run time: `split`, `chunk`), or a `Result` of one of them (any
///   `Result<T>` or `Result<T, E>`; an `Err` reaches the caller and nothing is recorded).
///   A tuple may mix in outputs that are not tensors (`(Tensor, Vec<usize>)`: `max_dim`'s
///   indices): they are returned as they are and are not differentiable, so they take no
///   gradient parameter and no `result_*` name; the tensor outputs are numbered among
///   themselves, and a single one is `grad` / `result`. A tensor inside such an output
///   (`Vec<Tensor>`, `Option<Tensor>`) is an error.
/// * Saving can fail: under `autograd::saved_tensors_hooks`, a pack hook that modifies the
///   tensor it is given in place is `Error::PackHookModifiedInput` ("A saved tensor pack hook
///   is modifying its input in place. ..."). A forward returning `Result` returns it from the
///   call, as PyTorch raises it in the forward, and leaves its outputs without history; so
///   when its node saves a tensor (its backward names one), its error type must convert from
///   `autograd::Error` (`autograd::Result` does; rustc checks any other, with its error on
///   that type). A forward returning a bare `Tensor` cannot fail: its node keeps the error,
///   and the `backward()` that first uses the tensor returns it.
/// * It has exactly one `#[backward]`; a missing or second one is a compile error. A second
///   one in the module of the first (same file) is reported on its own attribute: "`f` already
///   has a `#[backward]`, `f_backward`: ..." (the macro finds the first in the source file,
///   since attribute expansions cannot see each other); one in another module or file is
///   rustc's conflicting implementations (E0119) of the forward's hidden link trait.
/// * Outputs are what PyTorch's `Function.apply` makes of them. An input returned as is
///   becomes a view of itself (a view made in the forward stays one) with the node as its
///   grad_fn, marked as created in a custom function: an in-place op on it, or a use after its
///   base changed, is PyTorch's error ("... This view was created inside a custom Function ..."),
///   since the view+inplace logic would override the custom backward; with several
///   differentiable outputs such views are refused in place as a multi-output op's are. An
///   input returned twice gives two views. Without a node (`no_grad`, or no input requires
///   grad) an input returned as is that requires grad comes back as a detached alias, so no
///   gradient escapes, and one that does not as a view of itself. A captured tensor that
///   already has history is replaced by a detached alias (same storage and version counter).
///   Only `dirty` inputs keep their handle (their version is bumped once more after the
///   forward, as `mark_dirty` does). Any other tensor returned twice stays one tensor,
///   the node's output at both positions, as in PyTorch (`test_return_duplicate`): its
///   `output_nr` is the later position, which receives the gradients of all its uses (the
///   earlier one's is zeros, or `None` without `materialize_grads`).
///
/// # Configuration in `self`: the `impl` form
///
/// For an op that carries configuration (coefficients, a closure, a module's settings), put
/// `#[differentiable]` on an inherent `impl` block with `fn forward(&self, ..)` and
/// `fn backward(&self, grad, ..)`; call it as `op.apply(..)` (PyTorch's `Function.apply`):
///
/// ```text
/// #[derive(Clone)]
/// struct Scale { factor: f64 }
///
/// #[differentiable]
/// impl Scale {
///     fn forward(&self, x: &Tensor) -> Result<Tensor> { x.mul_scalar(self.factor) }
///     fn backward(&self, grad: &Tensor) -> Result<Tensor> { grad.mul_scalar(self.factor) }
/// }
/// // Scale { factor: 2.0 }.apply(&x)?  records one `ScaleBackward0` node
/// ```
///
/// The block is rewritten into a free pair that takes `self` as an attribute (first in the
/// forward, after the gradients in the backward), so the same rules apply: the node keeps a
/// clone of the configuration only when it is recorded, and rustc requires it to be
/// `Clone + Send + Sync + 'static`. Options go on the block (`name` defaults to
/// `<Type>Backward0`); with `save(r, ..)`, `forward` returns its outputs then the residuals
/// and `apply` the outputs alone. Other items of the block stay methods of the type.
///
/// # Derived backward: `derive`
///
/// `#[differentiable(derive)]` takes no `#[backward]`: the macro derives it from the body by
/// reverse-mode source transformation, and a call records one node, `<CamelName>Backward0`.
///
/// ```text
/// #[differentiable(derive)]
/// fn gelu_tanh(x: &Tensor) -> Result<Tensor> {
///     let c = (2.0 / std::f64::consts::PI).sqrt();
///     let inner = (x + &(x.pow(3.0)? * 0.044715)) * c;
///     let t = inner.tanh()?;
///     Ok(x * 0.5 * (t + 1.0))
/// }
/// ```
///
/// * The body is straight-line: `let name = ..` bindings, tensor method calls (`x.exp()?`),
///   the operators `+ - * /` and unary `-` on tensors and `f64` scalars (either side), scalar
///   expressions of the attribute parameters, literals and constants, and a final tensor
///   (optionally `Ok(..)`), or a tuple of them for a function returning a tuple (one node, one
///   output per element). It returns `Tensor`, a tuple of them, or a `Result` of either; inputs
///   are `&Tensor`.
/// * Each method `m` (and each operator: `add`, `mul_scalar`, `rsub_scalar`, ..) is
///   differentiated by its rule `DerivativeRules::m`, written beside the op in the runtime. A
///   method without a rule is an error at that call: "`#[differentiable(derive)]` cannot
///   differentiate `m`: the tensor method has no derivative rule", with what to write instead.
/// * Masks and selections have rules too: the comparisons (`gt_scalar`, `eq`, ..; no gradient
///   passes through a bool mask), `masked_fill`, `Tensor::where_(&cond, &x, &y)`, `gather`,
///   and the values of `sort`, `topk`, `min_dim` and `max_dim` (their indices exist in the
///   forward only: a body may ignore them but not use them).
/// * A call of another `#[differentiable]` function (hand-written or derived) is one op,
///   differentiated by that function's backward; a plain function called on a tensor has no
///   rule: an error at that call ("cannot differentiate the call of `f`: it is a plain
///   function, with no derivative rule"). A function called by its bare name is found however
///   it is in scope at module level; one declared inside a function body is not.
/// * Loops, `if`/`match`, closures, macros, `return`, assignments, `let mut`, in-place methods
///   (`add_`) and methods of non-tensor values that take tensors are compile errors spanned on
///   the construct; write a `#[backward]` for those.
/// * Only `name` and `crate` combine with `derive`.
///
/// The forward runs with recording off and keeps, of every value, what the rules that read it
/// declare they read (`Reads`): the value, a stand-in of its shape, or nothing. The kept values
/// are outputs of the node, saved and version-checked, so with `create_graph` the backward's own
/// graph reaches the inputs through the node itself (double backward), with nothing recomputed.
/// A function returning `Tensor` (not a `Result`) panics on an error, as its operators do. The
/// runnable version of this example is in the
/// `autograd` crate docs, section "Derived backward"; the design, with an expansion, is in this
/// crate's README.
///
/// # Options
///
/// `#[differentiable(option, ..)]`, each at most once:
///
/// | option | meaning |
/// |---|---|
/// | `name = "MyBackward"` | the node name (default: the function name in CamelCase + `Backward0`) |
/// | `once_differentiable` | the backward runs under `no_grad`. With `create_graph`, if an incoming gradient requires grad, the results come out of an `Error` node, and differentiating them again fails with `Error::OnceDifferentiable` (PyTorch's `@once_differentiable`) |
/// | `materialize_grads = false` | undefined incoming gradients reach the backward as `None` instead of zeros; its gradient parameters are then `Option<&Tensor>` |
/// | `non_differentiable(result_1, ..)` | those outputs never require grad; their gradient slot is zeros (or `None`) |
/// | `save(r, ..)` | state computed in the forward for the backward only (PyTorch's `ctx.save_for_backward(intermediate)`, `ctx.r = ..`): the body returns its outputs followed by these residuals, `(Tensor, R, ..)` (in a `Result` or not); the public function returns the outputs only; a backward names `r` like a saved parameter (by value or by reference, checked by rustc), and a residual it does not name is dropped. A `Tensor` residual is a saved tensor, as `save_for_backward` keeps one: version-checked, packed by saved-tensor hooks, freed after backward; any other residual is moved into the node, never cloned, and its type must be `Clone + Send + Sync + 'static` |
/// | `dirty(x, ..)` | the forward modifies these `&Tensor` inputs in place and returns them (`x.clone()`, the same handle); they become outputs of the node. Requires a `Result` return type: a dirty leaf that requires grad is `a leaf Variable that requires grad has been used in an in-place operation.`, a dirty input not returned is `Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function.`, and a dirty view is rebased as a built-in in-place op on a view is (its base's grad_fn becomes `CopySlices`), or refused with PyTorch's error (`Error::ViewRebase`, `Error::ViewOfLeafInPlace`) |
/// | `builtin` | PyTorch's generated-node semantics, for an op library (the runtime's ops use it): see below |
/// | `derive` | derive the backward from the body (no `#[backward]`): see above |
/// | `crate = "path"` | where the generated code finds the runtime (default `::autograd`; `"crate"` inside the runtime itself) |
///
/// `non_differentiable(..)` and `dirty(..)` are not available with a `Vec<Tensor>` output.
///
/// # Built-in ops: `builtin`
///
/// PyTorch's own ops (the `*Backward0` nodes generated from `derivatives.yaml`) differ from its
/// custom `Function`s in three ways, which `builtin` selects:
///
/// * **Undefined gradients.** When every incoming gradient is undefined the node returns
///   undefined gradients without running its backward (`Backward::SKIP_IF_NO_GRAD`); a custom
///   function's backward runs anyway.
/// * **In-place checks come first.** For `dirty` inputs, `Error::LeafInPlace`,
///   `Error::ViewOfLeafInPlace` and `Error::ViewRebase` are checked before the forward runs,
///   whenever grad mode is on (PyTorch's `check_inplace`), so a refused op modifies nothing; a
///   custom function is checked after its forward (PyTorch's `mark_dirty`), with the texts above.
/// * **The forward returns new tensors** (or its `dirty` inputs), as a kernel does: that is
///   asserted in debug builds, instead of replacing an output that is an input, or that already
///   requires grad, by a detached alias.
///
/// # Equivalent code without `#[differentiable]`
///
/// For the example above (names shortened; the hidden items are `#[doc(hidden)]`):
///
/// ```text
/// pub fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
///     <__autograd_scaled_square_marker as __autograd_scaled_square_backward>::call(x, scale)
/// }
/// fn __autograd_scaled_square_forward(x: &Tensor, scale: f64) -> Tensor { x * x * scale }
/// struct __autograd_scaled_square_marker;
/// #[diagnostic::on_unimplemented(message = "`#[differentiable]` function `scaled_square` has no `#[backward]`")]
/// trait __autograd_scaled_square_backward { fn call(x: &Tensor, scale: f64) -> Tensor; }
/// macro_rules! __autograd_scaled_square_signature { /* hands both signatures to the check */ }
///
/// // from #[backward(scaled_square)], after checking it against the forward:
/// const _: () = {
///     struct Node { x: SavedTensor, scale: f64 }
///     impl Backward for Node {
///         const NAME: &'static str = "ScaledSquareBackward0";
///         fn backward(&self, _: &NodeMeta, grads: GradVec) -> Result<GradVec> {
///             let grad = /* grads[0], zeros if undefined */;
///             let x = self.x.get()?;                      // version-checked
///             let g = scaled_square_backward(&grad, &x, self.scale.clone());
///             Ok(smallvec![Some(g)])
///         }
///         fn release(&self) { self.x.release(); }
///     }
///     impl __autograd_scaled_square_backward for __autograd_scaled_square_marker {
///         fn call(x: &Tensor, scale: f64) -> Tensor {
///             if !is_grad_enabled() {
///                 return __autograd_scaled_square_forward(x, scale);
///             }
///             let Some(edges) = next_edges(&[x]) else {
///                 let _g = no_grad();
///                 return __autograd_scaled_square_forward(x, scale);
///             };
///             let saved_scale = scale.clone();
///             let out = { let _g = no_grad(); __autograd_scaled_square_forward(x, scale) };
///             // `try_record_node(..)?` for a forward returning `Result`: see the rules above
///             record_node(edges, &[&out], |save| Node { x: save.input(x), scale: saved_scale });
///             out
///         }
///     }
/// };
/// ```
#[proc_macro_attribute]
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    differentiable::expand(args.into(), item.into()).into()
}

/// Gives a [`#[differentiable]`](macro@differentiable) function its backward pass:
/// `#[backward(forward_fn)]`, or `#[backward(path::to::forward_fn)]` from another module of the
/// same crate.
///
/// # Usage
///
/// ```text
/// #[backward(scaled_square)]
/// fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
///     grad * x * (2.0 * scale)
/// }
/// ```
///
/// The function is checked against its forward at compile time; every mismatch is an error
/// pointing at the offending token and saying what would fit. Runnable examples are in the
/// `autograd` crate docs.
///
/// # Rules
///
/// * It is a plain free function, like the forward.
/// * **Incoming gradients first**: one parameter per forward output, named `grad` (one output) or
///   `grad_0`, `grad_1`, .. (any `grad_*`; a leading `_` is allowed), of type `&Tensor`, or
///   `Option<&Tensor>` when the forward has `materialize_grads = false`. A `Vec<Tensor>` forward
///   has one, `grad: &[Tensor]` (`&[Option<Tensor>]` without materialisation), with one
///   gradient per output.
/// * **Then anything it needs, by name**: a forward parameter, a residual of `save(..)`, or a
///   forward output: `result`
///   (one output, or all of a `Vec<Tensor>` forward as `&[Tensor]`) or `result_0`, `result_1`,
///   .. A tensor is `&Tensor` as in the forward (an optional input `Option<&Tensor>`, `None`
///   when it was absent). An attribute is received as the backward's
///   parameter type says: a reference type borrows the saved value (`&T`; `&[T]` for a
///   `Vec<T>` or a `&[T]`; `&str` for a `String` or a `&str`), any other type receives a clone.
///   rustc checks that type (an alias, or `std::vec::Vec<T>` for `Vec<T>`, is fine), with its
///   error on the backward's parameter type. Only what is named is saved: tensor inputs with
///   `SavedTensor::input` (version-checked when unpacked, so an in-place change after the
///   forward is reported), outputs with `SavedTensor::output` (no reference cycle), attributes
///   by value. A saved output reaches the backward as PyTorch's `ctx.saved_tensors` gives it:
///   with the node itself as its grad_fn (so it requires grad), whatever the grad mode.
/// * **What PyTorch's `derivatives.yaml` formulas use** is available too:
///
///   | backward parameter | receives |
///   |---|---|
///   | `needs_input_grad: [bool; N]` (or `&[bool]`) | which inputs' gradients are wanted (one entry per tensor input, or per next edge with `&[Tensor]` inputs): skip the work nobody receives (PyTorch's `should_compute_output`) |
///   | `x: &InputMetadata` | only the shape, dtype and device of input `x` (PyTorch's `self.sym_sizes()`, `self.scalar_type()`), not its data; `xs: &[InputMetadata]` for a `&[Tensor]` input |
///   | `#[needed_for(a, ..)] x: Option<&Tensor>` | input or output `x`, saved only if one of the inputs `a, ..` needs its gradient, `None` otherwise (PyTorch saves `self` for `mul` only if `other` requires grad, so that `self` may then change in place) |
///   | `#[original] x: &Tensor` | for a `dirty` input, its value *before* the forward modified it (PyTorch's `original_self`): a differentiable copy taken first; with `#[needed_for(..)]`, only when needed |
///   | `xs: &[Tensor]` | a `&[Tensor]` input, each tensor saved |
///
/// * **It returns one gradient per tensor input**, in order: `Tensor` or `Option<Tensor>`
///   (`None`: no gradient, which stays undefined; an optional input's is `Option<Tensor>`), `Vec<Tensor>` or `Vec<Option<Tensor>>` (one
///   per tensor) for a `&[Tensor]` input, a tuple for several, optionally in a `Result` whose
///   error converts into `autograd::Error` (rustc checks that, on the return type; an `Err`
///   stops the backward pass and reaches the caller of `backward()` unchanged; a panic becomes
///   `Error::Panic`).
/// * It runs with grad mode = `create_graph`, so a backward written with tensor ops is itself
///   differentiable (double backward), unless the forward is `once_differentiable`.
/// * The forward's parameter and return types resolve where the forward is (through hidden
///   type aliases beside it), the backward's own types where the backward is: a backward in
///   another module imports only what it names itself.
/// * The generated code's locals are hygienic: no parameter name collides with them.
///
/// ```text
/// #[differentiable]
/// fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> { a.mul(b) }
///
/// #[backward(mul)]
/// fn mul_backward(
///     grad: &Tensor,
///     #[needed_for(b)] a: Option<&Tensor>,   // saved only if `b` requires grad
///     #[needed_for(a)] b: Option<&Tensor>,
/// ) -> Result<(Option<Tensor>, Option<Tensor>)> {
///     Ok((b.map(|b| grad.mul(b)).transpose()?, a.map(|a| grad.mul(a)).transpose()?))
/// }
///
/// #[differentiable]
/// fn cat(tensors: &[Tensor], dim: usize) -> Result<Tensor> { Tensor::cat(tensors, dim) }
///
/// #[backward(cat)]
/// fn cat_backward(
///     grad: &Tensor,
///     needs_input_grad: &[bool],
///     tensors: &[InputMetadata],             // shapes only
///     dim: usize,
/// ) -> Result<Vec<Option<Tensor>>> { /* narrow `grad` where needed */ }
/// ```
///
/// # Equivalent code without `#[backward]`
///
/// See [`macro@differentiable`]: the backward contributes the node struct, its `Backward` impl and
/// the recording function.
#[proc_macro_attribute]
pub fn backward(args: TokenStream, item: TokenStream) -> TokenStream {
    // The file this attribute is in: a second `#[backward]` of one forward is found there.
    let file = proc_macro::Span::call_site().local_file();
    backward::expand(args.into(), item.into(), file.as_deref()).into()
}

/// Implements `nn::Module` for a struct from its fields: PyTorch's `nn.Module` bookkeeping
/// (parameters, buffers, child modules, train/eval, `repr`) without writing a name twice.
///
/// Use it through `autograd::nn::Module` (one import brings the trait and the derive):
///
/// ```text
/// use autograd::nn::{Forward, Linear, Module};
///
/// #[derive(Debug, Module)]
/// struct Mlp {
///     fc1: Linear,                        // child: "fc1.weight", "fc1.bias"
///     fc2: Linear,
///     scale: Tensor,                      // parameter "scale"
///     #[buffer]
///     steps: Tensor,                      // buffer "steps", in the state dict
///     #[module(skip)]
///     hidden: usize,                      // plain data
/// }
/// ```
///
/// # Fields
///
/// | field | role |
/// |---|---|
/// | `Tensor` | a parameter |
/// | `Option<Tensor>` | a parameter when `Some` (a bias turned off) |
/// | `#[buffer] Tensor` / `Option<Tensor>` | a buffer, in the `state_dict` |
/// | `#[buffer(persistent = false)]` | a buffer left out of the `state_dict` |
/// | `M`, `Box<M>`, `Box<dyn Forward>` | a child module (`M: Module`): names `field.` + the child's |
/// | `Option<M>` | a child when `Some` |
/// | `Vec<M>` | an `nn.ModuleList` child: `field.0.weight`, `field.1.weight`, .. |
/// | `training: bool`, `#[module(training)] bool` | the module's own training flag (PyTorch's `self.training`), set by `train`/`eval` |
/// | `#[module(skip)]`, `PhantomData` | not part of the module (sizes, flags, configuration) |
///
/// `#[module(rename = "0")]` on a parameter, buffer or child gives it another name (to load a
/// checkpoint of a PyTorch `nn.Sequential` into named fields).
///
/// The order is the fields' order, each module's own parameters first, then its children's, as
/// PyTorch registers them in `__init__`. `set_training` reaches every child. A module keeps its
/// mode in its flag field: a field `training: bool` is the flag as it is (PyTorch's attribute
/// name), another `bool` field with `#[module(training)]`. A struct without one has nowhere to
/// keep a mode of its own: `is_training` answers its first child's, or `true` for a struct
/// without children, whatever `eval()` said. So give a leaf module (one without children) a
/// `training: bool` field, as every built-in layer has, when anything asks for its mode. A
/// type parameter used in a child's type gets the bound `Child: Module`.
///
/// # Struct options
///
/// `#[module(..)]` on the struct:
///
/// | option | meaning |
/// |---|---|
/// | `name = "ReLU"` | the name `repr` prints (default: the struct's) |
/// | `extra_repr = path` | a `fn(&Self) -> String` whose text goes inside the parentheses (PyTorch's `extra_repr()`) |
/// | `transparent` | the struct is its one field that is not skipped, a child module: same names, mode and repr (a wrapper that adds configuration or an inherent `forward`) |
/// | `crate = "path"` | where the generated code finds the runtime (default `::autograd`; `::autograd_runtime` inside the runtime's package) |
///
/// # Generated code
///
/// `impl Module` with `named_parameters`, `visit_parameters_mut`, `named_buffers`,
/// `visit_buffers_mut`, `non_persistent_buffers`, `named_children`, `visit_children_mut`,
/// `set_training`, `is_training` and `repr` (`nn.Module.__repr__`'s text), and `impl Display`
/// printing the `repr`. The struct must implement `Debug` itself. Runnable examples are in the
/// docs of `autograd::nn::Module`.
///
/// # Errors
///
/// An enum, a union or a tuple struct; a field whose type the derive cannot see through (a
/// reference, a tuple, `Box<dyn Any>`, `Vec<Tensor>`); `#[buffer]` on a field that is not a
/// tensor; `#[module(training)]` on a field that is not `bool`; an unknown option. A field type
/// that is not a module is rustc's error on that field: "`usize` is not an `nn::Module`".
#[proc_macro_derive(Module, attributes(module, buffer))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    module::derive(input.into()).into()
}

/// Declares a custom function's forward derivative (PyTorch's `autograd.Function.jvp`), for
/// forward-mode AD (`forward_ad`): `#[jvp(f)]` beside `f`'s `#[backward(f)]`, checked against
/// `f` at compile time as the backward is.
///
/// The jvp takes one tangent per tensor input of `f` first (`&Tensor`, or `Option<&Tensor>`
/// for an optional input; an input without a tangent gets zeros, as PyTorch materialises them),
/// then any of `f`'s parameters and outputs by name (`result`, or `result_0`, `result_1`, ..),
/// and returns the tangent of each tensor output (`Tensor` or a tuple of them, in a `Result`
/// when it can fail):
///
/// ```text
/// #[differentiable]
/// fn scaled_exp(x: &Tensor, scale: f64) -> Result<Tensor> {
///     x.exp()?.mul_scalar(scale)
/// }
///
/// #[backward(scaled_exp)]
/// fn scaled_exp_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
///     grad.mul(result)
/// }
///
/// #[jvp(scaled_exp)]
/// fn scaled_exp_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
///     x_t.mul(result)
/// }
/// ```
///
/// A named input of `f` is its value after the forward ran; for a `dirty` input, `#[original]
/// x: &Tensor` gives its value from before the write instead (a copy taken first, PyTorch's
/// `original_self_p`), as in a backward.
///
/// Lists and residuals take the forms `#[backward]` gives them: a `&[Tensor]` input's tangent
/// is `&[Tensor]` (one per element, zeros where one has none) or `&[Option<Tensor>]` (`None`
/// there); a `Vec<Tensor>` forward's jvp returns `Vec<Tensor>`, one tangent per output (another
/// count is PyTorch's error at run time), and names its outputs together as `result:
/// &[Tensor]`; a residual of `save(..)` is named after the tangents by reference (`argmax:
/// &Argmax`).
///
/// Without a `#[jvp]`, a function with a hand-written backward called on dual tensors gives
/// PyTorch's error ("You must implement the jvp function for custom autograd.Function to use it
/// with forward mode AD."); a `#[differentiable(derive)]` function needs none (its body's ops
/// carry the tangents). A tangent or a name that does not fit `f` is a compile error at that
/// parameter.
#[proc_macro_attribute]
pub fn jvp(args: TokenStream, item: TokenStream) -> TokenStream {
    jvp::expand(args.into(), item.into()).into()
}

/// Receives a forward's options and signature together with a `#[jvp]`'s, checks one against
/// the other and emits the forward's jvp items. Not a public API.
#[doc(hidden)]
#[proc_macro]
pub fn __check_jvp(input: TokenStream) -> TokenStream {
    jvp::check(input.into()).into()
}

/// Receives a forward's options and signature (from its signature macro) together with a
/// backward's path and signature, checks them against each other and emits the node. Not a
/// public API.
#[doc(hidden)]
#[proc_macro]
pub fn __check_backward(input: TokenStream) -> TokenStream {
    backward::check(input.into()).into()
}
