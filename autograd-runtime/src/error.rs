//! The public error type. Every fallible call returns [`Result<T>`]; `Display` keeps PyTorch's
//! wording (Python names adapted to Rust ones) so users can search for the message they know.

use std::fmt;

use crate::{DType, Device};

/// `std::result::Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in tensor ops and backward passes.
///
/// Errors raised inside a backward pass (by a node, a hook or a callback) stop the pass and reach
/// the caller of `backward()`/`grad()` unchanged.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{Error, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let err = x.backward().unwrap_err();
/// assert!(matches!(err, Error::DoesNotRequireGrad { index: 0 }));
/// assert_eq!(err.to_string(), "element 0 of tensors does not require grad and does not have a grad_fn");
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ----- tensor construction and ops -------------------------------------------------------
    /// Two shapes do not broadcast.
    #[error(
        "The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at non-singleton dimension {dim}"
    )]
    Broadcast {
        /// Size of the first operand at `dim`.
        size_a: usize,
        /// Size of the second operand at `dim`.
        size_b: usize,
        /// Dimension of the broadcast result where they disagree.
        dim: usize,
    },
    /// An op received a shape it cannot work with.
    #[error("{op}: {message}")]
    Shape {
        /// The op that failed.
        op: &'static str,
        /// What was wrong with the shape.
        message: String,
    },
    /// Operands whose sizes do not fit together, in PyTorch's words for the same mistake (which
    /// name the underlying kernel where PyTorch's do: `mm: mat1 and mat2 shapes cannot be
    /// multiplied (2x3 and 4x2)`); `op` is this crate's op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Error, Tensor};
    /// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
    /// let b = Tensor::from_vec(vec![1.0f64; 4], &[4])?;
    /// let err = a.matmul(&b).unwrap_err();
    /// assert!(matches!(err, Error::SizeMismatch { op: "matmul", .. }));
    /// assert_eq!(
    ///     err.to_string(),
    ///     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number \
    ///      of elements, but got 3 and 4 elements respectively"
    /// );
    /// # Ok::<(), Error>(())
    /// ```
    #[error("{message}")]
    SizeMismatch {
        /// The op that failed.
        op: &'static str,
        /// PyTorch's message.
        message: String,
    },
    /// A dimension index out of range.
    #[error("Dimension out of range (expected to be in range of [{min}, {max}], but got {dim})")]
    DimOutOfRange {
        /// The requested dimension.
        dim: isize,
        /// Smallest valid dimension (negative indexing).
        min: isize,
        /// Largest valid dimension.
        max: isize,
    },
    /// Operands of different dtypes (no silent promotion).
    #[error("{op}: expected both tensors to have the same dtype, but got {lhs} and {rhs}")]
    DTypeMismatch {
        /// The op that failed.
        op: &'static str,
        /// First operand's dtype.
        lhs: DType,
        /// Second operand's dtype.
        rhs: DType,
    },
    /// Reading a tensor as the wrong Rust type (`to_vec::<f32>()` on an `F64` tensor).
    #[error("expected a tensor of dtype {expected}, but it has dtype {actual}")]
    WrongDType {
        /// The dtype the call asked for.
        expected: DType,
        /// The tensor's dtype.
        actual: DType,
    },
    /// Operands on different devices.
    #[error(
        "expected all tensors to be on the same device, but found at least two devices, {lhs} and {rhs}!"
    )]
    DeviceMismatch {
        /// First device.
        lhs: Device,
        /// Second device.
        rhs: Device,
    },
    /// `from_vec` with a length that does not match the shape.
    #[error("shape {shape:?} is invalid for input of size {len}")]
    InvalidShape {
        /// The requested shape.
        shape: Vec<usize>,
        /// The number of elements given.
        len: usize,
    },
    /// `item()` on a tensor with more than one element.
    #[error("a Tensor with {numel} elements cannot be converted to Scalar")]
    NotAScalar {
        /// Number of elements.
        numel: usize,
    },
    /// A device that is not available in this build or on this machine.
    #[error("device {device} is not available: {reason}")]
    DeviceUnavailable {
        /// The device asked for.
        device: Device,
        /// Why it is unavailable.
        reason: String,
    },
    /// A device could not run an op: out of memory, a failed kernel launch or copy. The pass
    /// that hit it fails with this error; the device and the engine stay usable.
    #[error("{op} on {device}: {message}")]
    Device {
        /// The device that failed.
        device: Device,
        /// The op or transfer that failed.
        op: &'static str,
        /// What the device reported (e.g. `CUDA out of memory (CUDA_ERROR_OUT_OF_MEMORY)`).
        message: String,
    },

    // ----- autograd state ----------------------------------------------------------------------
    /// `set_requires_grad` on a non-leaf.
    #[error(
        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
    )]
    RequiresGradOnNonLeaf,
    /// In-place op on a leaf that requires grad.
    #[error("a leaf Variable that requires grad is being used in an in-place operation.")]
    LeafInPlace,
    /// In-place op on a view of a leaf that requires grad.
    #[error("a view of a leaf Variable that requires grad is being used in an in-place operation.")]
    ViewOfLeafInPlace,
    /// A view that may not be rebased (the output of an op returning several views, or a view
    /// made under `no_grad`) was modified in place, or its base or a sibling was (PyTorch's
    /// `handle_view_on_rebase`; the message says which).
    #[error("{0}")]
    ViewRebase(String),
    /// An op recorded outside inference mode would save an inference tensor for its backward
    /// (PyTorch's `SavedVariable` check; its text names `torch.no_grad()` and
    /// `torch.inference_mode()`, adapted here).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{inference_mode, Error, Tensor};
    /// let c = { let _g = inference_mode(); Tensor::from_vec(vec![1.0f64, 2.0], &[2])? };
    /// let s = Tensor::from_vec(vec![3.0f64, 4.0], &[2])?.requires_grad_(true)?;
    /// assert!(matches!(c.mul(&s), Err(Error::InferenceTensorSaved)));
    /// assert!(c.add(&s)?.requires_grad()); // `add` saves nothing
    /// # Ok::<(), Error>(())
    /// ```
    #[error(
        "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `autograd::no_grad()` instead of `autograd::inference_mode()`."
    )]
    InferenceTensorSaved,
    /// An in-place op on an inference tensor outside inference mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{inference_mode, Error, Tensor};
    /// let c = { let _g = inference_mode(); Tensor::scalar(1.0f64) };
    /// assert!(matches!(c.fill_(2.0), Err(Error::InferenceTensorInplace)));
    /// assert_eq!(c.item::<f64>()?, 1.0);
    /// # Ok::<(), Error>(())
    /// ```
    #[error(
        "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."
    )]
    InferenceTensorInplace,
    /// `set_requires_grad(true)` on an inference tensor outside inference mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{inference_mode, Error, Tensor};
    /// let c = { let _g = inference_mode(); Tensor::scalar(1.0f64) };
    /// assert!(matches!(c.set_requires_grad(true), Err(Error::InferenceTensorRequiresGrad)));
    /// # Ok::<(), Error>(())
    /// ```
    #[error("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")]
    InferenceTensorRequiresGrad,
    /// An in-place op whose written-to tensor repeats an element (an `expand`ed view).
    #[error(
        "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
    )]
    InternalOverlap,
    /// An in-place op whose operand partially overlaps the written-to tensor in memory.
    #[error(
        "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation."
    )]
    PartialOverlap,
    /// `register_post_accumulate_grad_hook` on a non-leaf.
    #[error("post accumulate grad hooks cannot be registered on non-leaf tensors")]
    PostAccumulateGradHookOnNonLeaf,
    /// `retain_grad` (or `backward(inputs=..)`) on a tensor that does not require grad.
    #[error("can't retain_grad on Tensor that has requires_grad=False")]
    RetainGradWithoutRequiresGrad,
    /// A hook registered on a tensor that does not require grad.
    #[error("cannot register a hook on a tensor that doesn't require gradient")]
    HookWithoutRequiresGrad,

    // ----- set_grad: PyTorch's `x.grad = g` setter checks, in its order ----------------------
    /// `set_grad` given the tensor itself (the same tensor, not a `detach()`ed alias of it).
    #[error("can't assign Variable as its own grad")]
    GradAssignedToItself,
    /// `set_grad` with a gradient of another dtype (this crate's tensors have no `grad_dtype` of
    /// their own: it is always the tensor's dtype).
    #[error(
        "attempting to assign a gradient with dtype '{grad}' to a tensor with grad_dtype '{tensor}'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match."
    )]
    AssignedGradDType {
        /// The gradient's dtype.
        grad: DType,
        /// The tensor's dtype.
        tensor: DType,
    },
    /// `set_grad` with a gradient on another device: PyTorch's message for another device type
    /// (`cpu`, `virtual`, `cuda`), or for another index of the same type (`-1` for the CPU).
    #[error("{}", assigned_grad_device_message(*.grad, *.tensor))]
    AssignedGradDevice {
        /// The gradient's device.
        grad: Device,
        /// The tensor's device.
        tensor: Device,
    },
    /// `set_grad` with a gradient of another shape.
    #[error(
        "attempting to assign a gradient of size '{grad:?}' to a tensor of size '{tensor:?}'. Please ensure that the gradient and the tensor are the same size"
    )]
    AssignedGradSize {
        /// The gradient's shape.
        grad: Vec<usize>,
        /// The tensor's shape.
        tensor: Vec<usize>,
    },

    // ----- backward()/grad() front door --------------------------------------------------------
    /// A root passed to backward/grad neither requires grad nor has a grad_fn.
    #[error("element {index} of tensors does not require grad and does not have a grad_fn")]
    DoesNotRequireGrad {
        /// Position of the root in the list.
        index: usize,
    },
    /// A non-scalar root without an explicit gradient.
    #[error("grad can be implicitly created only for scalar outputs")]
    ImplicitGradNonScalar,
    /// Number of roots and gradients differ.
    #[error("got {tensors} tensors and {grads} gradients")]
    GradCountMismatch {
        /// Number of roots.
        tensors: usize,
        /// Number of gradients.
        grads: usize,
    },
    /// A root gradient whose shape differs from its root.
    #[error(
        "Mismatch in shape: grad_output[{index}] has a shape of {grad_shape:?} and output[{index}] has a shape of {output_shape:?}."
    )]
    GradShapeMismatch {
        /// Root position.
        index: usize,
        /// Shape of the given gradient.
        grad_shape: Vec<usize>,
        /// Shape of the root.
        output_shape: Vec<usize>,
    },
    /// `grad()`/`backward(inputs=..)` with an empty input list.
    #[error("`inputs` argument to `{api}()` cannot be empty.")]
    EmptyInputs {
        /// `"grad"` or `"backward"`.
        api: &'static str,
    },
    /// `grad(.., is_grads_batched = true)` given a gradient whose shape after its first (batch)
    /// dimension is not its output's. `grad_shape` is the shape torch 2.15 prints, which drops
    /// two leading dimensions of the gradient rather than one.
    #[error(
        "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding output, but a mismatch was detected: grad_output[{index}] has a shape of {grad_shape:?} and output[{index}] has a shape of {output_shape:?}. If you only want some tensors in `grad_output` to be considered batched, consider using vmap."
    )]
    BatchedGradShapeMismatch {
        /// Root position.
        index: usize,
        /// The gradient's shape as PyTorch prints it.
        grad_shape: Vec<usize>,
        /// Shape of the root.
        output_shape: Vec<usize>,
    },
    /// `materialize_grads` would have to make zeros for a gradient edge the outputs do not
    /// reach.
    #[error("materialize_grads cannot be used when the given input is a GradientEdge")]
    MaterializeGradsWithEdge,
    /// [`graph::get_gradient_edge`](crate::graph::get_gradient_edge) of a tensor that does not
    /// require grad.
    #[error(
        "It is not possible to get the gradient edge for a Tensor that does not require gradients"
    )]
    NoGradientEdge,
    /// An input of `grad()` that does not require grad.
    #[error("One of the differentiated Tensors does not require grad")]
    InputDoesNotRequireGrad,
    /// An input of `grad()` that the graph never reached, with `allow_unused = false`.
    #[error(
        "The differentiated Tensor at index {index} appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
    )]
    UnusedInput {
        /// Position of the input.
        index: usize,
    },
    /// `materialize_grads(true)` together with `allow_unused(false)`.
    #[error(
        "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
    )]
    MaterializeGradsWithoutAllowUnused,

    // ----- during backward -----------------------------------------------------------------------
    /// A saved tensor used after the graph was freed.
    #[error(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward."
    )]
    BackwardTwice,
    /// A saved tensor was modified in place after it was saved.
    #[error("{}", saved_modified_message(.tensor, .output_of.as_ref(), *.current_version, *.saved_version, *.anomaly))]
    SavedTensorModified {
        /// `[<dtype> <shape>]` of the tensor, e.g. `[f32 [3]]`.
        tensor: String,
        /// `(output_nr, node name without its Backward suffix)` if the tensor had a grad_fn.
        output_of: Option<(usize, String)>,
        /// The version it had when it was saved.
        saved_version: u64,
        /// The version it has now.
        current_version: u64,
        /// Whether anomaly mode was on (changes the hint).
        anomaly: bool,
    },
    /// A node saved an input that was later detached with `detach_()` (B15).
    #[error(
        "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not supported, please use out-of-place `.detach()` instead"
    )]
    SavedTensorDetachedInPlace,
    /// `detach_()` on a view.
    #[error("Can't detach views in-place. Use detach() instead.")]
    DetachViewInPlace,
    /// A saved-tensor pack hook modified the tensor it was given (B38).
    #[error(
        "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need to perform in-place operations on the input to a pack hook."
    )]
    PackHookModifiedInput,
    /// A node returned the wrong number of gradients.
    #[error(
        "Function {node} returned an invalid number of gradients - expected {expected}, but got {got}"
    )]
    InvalidGradientCount {
        /// The node's name.
        node: String,
        /// Number of next edges.
        expected: usize,
        /// Number returned.
        got: usize,
    },
    /// A node returned a gradient whose shape does not fit the input it is for (`node` names it;
    /// `None` for a root gradient, which PyTorch reports without a prefix).
    #[error(
        "{}invalid gradient at index {index} - got {got:?} but expected shape compatible with {expected:?}",
        returned_by(node)
    )]
    InvalidGradientShape {
        /// The node's name; `None` for a root gradient.
        node: Option<String>,
        /// Output index.
        index: usize,
        /// Shape returned.
        got: Vec<usize>,
        /// Shape of the input.
        expected: Vec<usize>,
    },
    /// A node returned a gradient on the wrong device (`None`: a root gradient). A 0-dim
    /// gradient is moved to the right device instead, as PyTorch does.
    #[error(
        "{}invalid gradient at index {index} - expected device {expected} but got {got}",
        returned_by(node)
    )]
    InvalidGradientDevice {
        /// The node's name; `None` for a root gradient.
        node: Option<String>,
        /// Output index.
        index: usize,
        /// Device of the input.
        expected: Device,
        /// Device returned.
        got: Device,
    },
    /// Anomaly mode found a NaN in a node's output.
    #[error("Function '{node}' returned nan values in its {index}th output.")]
    NanInGradient {
        /// The node's name.
        node: String,
        /// Output index.
        index: usize,
    },
    /// `queue_callback` outside a backward pass.
    #[error("Final callbacks can only be installed during backward pass.")]
    CallbackOutsideBackward,
    /// A custom function returned more non-`None` gradients than it has inputs, or too few.
    #[error(
        "function {node} returned an incorrect number of gradients (expected {expected}, got {got})"
    )]
    IncorrectGradientCount {
        /// The node's name.
        node: String,
        /// Number of differentiable inputs.
        expected: usize,
        /// Number returned.
        got: usize,
    },
    /// Double backward through a once-differentiable function.
    #[error("trying to differentiate twice a function that was marked with @once_differentiable")]
    OnceDifferentiable,
    /// A panic inside a node, hook or callback during backward.
    #[error("panic during backward{}: {message}", node.as_ref().map(|n| format!(" in {n}")).unwrap_or_default())]
    Panic {
        /// The node that was running, if known.
        node: Option<String>,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// The engine could not start one of its threads (a device worker or a reentrant pool thread).
    #[error("could not start the autograd thread {name}: {message}")]
    ThreadSpawn {
        /// The thread's name.
        name: String,
        /// The operating system's error.
        message: String,
    },
    /// The engine finished with nodes still waiting for gradients (a bug or a broken graph).
    #[error("could not compute gradients for some functions")]
    IncompleteGraph,

    /// The intra-op thread pool cannot be set to the size asked for.
    #[error("set_num_threads({requested}): {reason}")]
    ThreadPool {
        /// The number of threads asked for.
        requested: usize,
        /// Why it cannot be done (zero threads, or the pool already runs another size).
        reason: String,
    },

    /// A collective of a [`ProcessGroup`](crate::distributed::ProcessGroup) or a step of
    /// [`DistributedDataParallel`](crate::distributed::DistributedDataParallel) failed on this
    /// rank or on a peer: a timeout, a peer that left, collectives that do not match across
    /// ranks, a gradient of an unexpected shape, the transport's own error.
    #[error("distributed {op} failed on rank {rank}: {message}")]
    Distributed {
        /// This process's rank in its group.
        rank: usize,
        /// The collective or step that failed (`all_reduce`, `broadcast`, `ddp step`, ...).
        op: &'static str,
        /// What went wrong, naming the ranks, buckets or parameters involved.
        message: String,
    },

    // ----- nn, optim, checkpoints ------------------------------------------------------------------
    /// An op has no kernel for a dtype (PyTorch's `"add_cpu" not implemented for 'Bool'`): a
    /// floating op on an integer or bool tensor that PyTorch does not promote, for instance.
    #[error("\"{op}\" not implemented for '{}'", .dtype.scalar_type_name())]
    NotImplementedForDType {
        /// The op.
        op: String,
        /// The dtype it has no kernel for.
        dtype: DType,
    },

    /// `requires_grad` asked of an integer or bool tensor.
    #[error("only Tensors of floating point dtype can require gradients")]
    RequiresGradNonFloat,

    /// An argument PyTorch refuses with a `ValueError` (a negative learning rate, a dropout
    /// probability outside `[0, 1]`, a kernel larger than its padded input), in PyTorch's words.
    #[error("{0}")]
    InvalidArgument(String),

    /// `load_state_dict` found missing or unexpected keys or shapes that differ: every problem,
    /// in PyTorch's words, one per line.
    #[error("Error(s) in loading state_dict for {module}:\n\t{message}")]
    StateDict {
        /// The module's (or optimizer's) type name.
        module: String,
        /// The problems, separated by a newline and a tab.
        message: String,
    },

    /// A checkpoint file could not be written, read or parsed.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The file's path (`<memory>` for bytes).
        path: String,
        /// What was wrong.
        message: String,
    },

    // ----- data loading ------------------------------------------------------------------------------
    /// An index past the end of a data set (PyTorch's `IndexError`, in its words for a tensor).
    #[error("index {index} is out of bounds for dimension {dim} with size {size}")]
    IndexOutOfBounds {
        /// The index asked for.
        index: usize,
        /// The dimension indexed (0 for a data set).
        dim: usize,
        /// That dimension's size (the data set's length).
        size: usize,
    },
    /// A panic in a data set's `get` or a collate function while a
    /// [`DataLoader`](crate::data::DataLoader) made a batch, caught and reported as PyTorch
    /// reports an exception in a worker ("Caught ValueError in DataLoader worker process 0").
    #[error("Caught panic in DataLoader{}: {message}", worker.map(|w| format!(" worker thread {w}")).unwrap_or_default())]
    DataLoaderPanic {
        /// The worker thread's number, or `None` for a batch made on the caller's thread.
        worker: Option<usize>,
        /// The panic payload, if it was a string.
        message: String,
    },

    // ----- forward-mode AD -------------------------------------------------------------------------
    /// `make_dual` outside a dual level.
    #[error(
        "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
    )]
    NoDualLevel,

    /// A dual level entered while one is open.
    #[error("Nested forward mode AD is not supported at the moment")]
    NestedDualLevel,

    /// `exit_dual_level` of a level that is not the open one.
    #[error(
        "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
    )]
    ExitDualLevel,

    /// A tangent whose shape is not its primal's.
    #[error(
        "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {primal:?} while the given forward gradient is of size {tangent:?}."
    )]
    TangentSize {
        /// The primal's shape.
        primal: Vec<usize>,
        /// The tangent's shape.
        tangent: Vec<usize>,
    },

    /// An integer or bool primal or tangent given to `make_dual`.
    #[error("Expected {what} to be floating point or complex, but got: {}", dtype.torch_name())]
    DualNotFloat {
        /// `"primal"` or `"tangent"`.
        what: &'static str,
        /// Its dtype.
        dtype: DType,
    },

    /// `make_dual` of a tensor that has a tangent at the open level already.
    #[error(
        "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level 0 is not supported."
    )]
    AlreadyDual,

    /// A custom function with a hand-written backward and no `#[jvp]`, called on dual tensors.
    #[error(
        "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
    )]
    CustomFunctionJvp,

    /// An op called on dual tensors that has no forward derivative: its backward cannot be
    /// differentiated (`once_differentiable`, or computed outside autograd), so the tangent
    /// through it does not exist.
    #[error(
        "Trying to use forward AD with {op} that does not support it because it has not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml"
    )]
    ForwardAdNotImplemented {
        /// The op, named after its node.
        op: String,
    },

    // ----- user code ---------------------------------------------------------------------------------
    /// An error raised by user forward/backward code with [`Error::msg`].
    #[error("{0}")]
    Message(String),
}

impl Error {
    /// An error with a free-form message, for user forward and backward functions.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = autograd_runtime::Error::msg("Simulate error on backward pass");
    /// assert_eq!(e.to_string(), "Simulate error on backward pass");
    /// ```
    pub fn msg(message: impl fmt::Display) -> Error {
        Error::Message(message.to_string())
    }

    pub(crate) fn checkpoint(path: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Checkpoint {
            path: path.into(),
            message: message.into(),
        }
    }

    pub(crate) fn size_mismatch(op: &'static str, message: impl Into<String>) -> Error {
        Error::SizeMismatch {
            op,
            message: message.into(),
        }
    }

    pub(crate) fn shape(op: &'static str, message: impl Into<String>) -> Error {
        Error::Shape {
            op,
            message: message.into(),
        }
    }
}

/// A float as Python's `repr(float)` prints it in PyTorch's messages (`2.0`, `-0.1`, `1e-05`,
/// `2.5e+20`, `nan`): Rust's `{:?}` switches to an exponent at the same magnitudes (below 1e-4,
/// from 1e16), and Python writes the exponent with a sign and at least two digits.
pub(crate) fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    let s = format!("{x:?}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// PyTorch's `validate_outputs` prefix: the node that returned a gradient, none for the roots'.
fn returned_by(node: &Option<String>) -> String {
    node.as_ref()
        .map_or_else(String::new, |n| format!("Function {n} returned an "))
}

/// A node's name as PyTorch 2.15 prints it in error messages: `Backward` and a `0` after it
/// dropped (`Add` for `AddBackward0`, `Fill2` for `FillBackward2`), and engine nodes under their
/// C++ names (`torch::autograd::CopySlices`).
pub(crate) fn short_node_name(name: &str) -> String {
    if name == "CopySlices" {
        return "torch::autograd::CopySlices".to_string();
    }
    match name.find("Backward") {
        Some(i) => {
            let rest = &name[i + "Backward".len()..];
            format!("{}{}", &name[..i], if rest == "0" { "" } else { rest })
        }
        None => name.to_string(),
    }
}

fn saved_modified_message(
    tensor: &str,
    output_of: Option<&(usize, String)>,
    current: u64,
    saved: u64,
    anomaly: bool,
) -> String {
    let mut s = format!(
        "one of the variables needed for gradient computation has been modified by an inplace operation: {tensor}"
    );
    if let Some((nr, name)) = output_of {
        s.push_str(&format!(", which is output {nr} of {name},"));
    }
    s.push_str(&format!(
        " is at version {current}; expected version {saved} instead. "
    ));
    if anomaly {
        s.push_str("Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!");
    } else {
        s.push_str("Hint: enable anomaly detection to find the operation that failed to compute its gradient, with autograd::set_detect_anomaly(true, false).");
    }
    s
}

/// PyTorch's `x.grad = g` device messages: the device types first (`Device::type()`), then the
/// indices (`get_device()`, `-1` for the CPU).
fn assigned_grad_device_message(grad: Device, tensor: Device) -> String {
    fn kind(d: Device) -> &'static str {
        match d {
            Device::Cpu => "cpu",
            Device::Virtual(_) => "virtual",
            Device::Cuda(_) => "cuda",
        }
    }
    fn index(d: Device) -> String {
        match d {
            Device::Cpu => "-1".to_string(),
            Device::Virtual(i) | Device::Cuda(i) => i.to_string(),
        }
    }
    if kind(grad) != kind(tensor) {
        format!(
            "attempting to assign a gradient with device type '{}' to a tensor with device type '{}'. Please ensure that the gradient and the tensor are on the same device",
            kind(grad),
            kind(tensor)
        )
    } else {
        format!(
            "attempting to assign a gradient located on device with index '{}' to a tensor located on device with index '{}'. Please ensure that the gradient and the tensor are on the same device",
            index(grad),
            index(tensor)
        )
    }
}
