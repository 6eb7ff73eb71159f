//! The runtime of the `autograd` crate: tensors, differentiable ops, the backward graph and the
//! engine that executes it with PyTorch's semantics.
//!
//! Most users depend on the `autograd` facade, which re-exports this crate together with the
//! `#[differentiable]`, `#[backward]` and `#[jvp]` macros.
//!
//! # Tour
//!
//! * [`Tensor`]: an `Arc` handle to shared storage plus autograd state (`tensor/`).
//! * ops on `Tensor` (`ops/`): each a kernel call through the backend seam (`backend/`: the
//!   CPU backend's kernels run in parallel over [`num_threads`] threads) plus a
//!   [`graph::Backward`] formula.
//! * the graph (`graph/`): [`Node`], [`Edge`], [`NodeMeta`], [`SavedTensor`], `AccumulateGrad`.
//! * the engine (`engine/`): `GraphTask`, `NodeTask`, `ReadyQueue`, `InputBuffer`,
//!   dependency counting and `exec_info`, driven by [`backward`] and [`grad`].
//!
//! # Modules
//!
//! The crate root holds [`Tensor`], the engine's entry points ([`backward`], [`grad`],
//! [`Engine`]), grad modes ([`no_grad`], [`inference_mode`]), anomaly mode, [`checkpoint`],
//! [`StateDict`] and the CPU thread and cache settings. The public modules:
//!
//! * [`amp`]: mixed-precision training, [`amp::GradScaler`] (`torch.amp.GradScaler`).
//! * [`cuda`]: whether CUDA tensors can run here, device count, synchronisation and the caching
//!   allocator's figures (`torch.cuda`).
//! * [`data`]: data sets and the [`data::DataLoader`] that batches them, shuffled from a
//!   [`Generator`] in PyTorch's order, with background worker threads.
//! * [`distributed`]: data-parallel training, [`distributed::DistributedDataParallel`] over a
//!   [`distributed::ProcessGroup`] (threads, MPI, NCCL).
//! * [`forward_ad`]: forward-mode AD with dual tensors, [`forward_ad::make_dual`] and
//!   [`forward_ad::unpack_dual`] inside a [`forward_ad::dual_level`]
//!   (`torch.autograd.forward_ad`).
//! * [`func`]: function transforms, [`func::grad`], [`func::vjp`], [`func::jvp`],
//!   [`func::jacrev`], [`func::jacfwd`], [`func::hessian`], [`func::vmap`] and
//!   [`func::functional_call`] (`torch.func`).
//! * [`functional`]: derivatives of whole functions, [`functional::vjp`], [`functional::jvp`],
//!   [`functional::jacobian`], [`functional::hessian`], [`functional::hvp`] and
//!   [`functional::vhp`] (`torch.autograd.functional`).
//! * [`gradcheck`](mod@gradcheck): [`gradcheck()`] and [`gradgradcheck`] against central finite
//!   differences.
//! * [`graph`]: the backward graph's nodes, edges, saved tensors, hooks and custom functions.
//! * [`nn`]: layers, [`nn::Module`], losses and activations as functions ([`nn::functional`]),
//!   initialisers ([`nn::init`]).
//! * [`optim`]: optimizers, learning-rate schedulers ([`optim::lr_scheduler`]) and gradient
//!   clipping.
//! * [`profiler`]: the autograd profiler, its `key_averages()` table and Chrome trace.
//! * [`viz`]: the backward graph behind a tensor as Graphviz DOT.
//!
//! ```
//! use autograd_runtime::{grad, GradOptions, Tensor};
//! let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
//! let y = x.mul(&x)?.add(&x.sin()?)?;              // x² + sin x
//! let dy = grad(&[y], &[x.clone()], GradOptions::new())?;
//! let expected = 2.0 * 2.0 + 2f64.cos();
//! assert!((dy[0].as_ref().unwrap().item::<f64>()? - expected).abs() < 1e-12);
//! # Ok::<(), autograd_runtime::Error>(())
//! ```

#![warn(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

// `#[derive(Module)]` names the runtime `::autograd_runtime` inside this package, the layers
// here included.
extern crate self as autograd_runtime;

pub mod amp;
mod anomaly;
mod backend;
mod checkpoint;
pub mod cuda;
pub mod data;
mod device;
pub mod distributed;
mod dtype;
mod engine;
mod error;
pub mod forward_ad;
pub mod func;
pub mod functional;
mod fusion;
mod grad_mode;
pub mod gradcheck;
pub mod graph;
mod layout;
pub mod nn;
mod ops;
pub mod optim;
pub mod profiler;
mod random;
mod state_dict;
mod sync;
mod tensor;
pub mod viz;
mod warning;

pub use anomaly::{AnomalyGuard, detect_anomaly, is_anomaly_enabled, set_detect_anomaly};
pub use backend::{cached_bytes, empty_cache, num_threads, set_cache_limit, set_num_threads};
pub use checkpoint::{CheckpointOptions, checkpoint};
pub use device::Device;
pub use dtype::{DType, DataElement, Element};
pub use engine::{
    BackwardOptions, DEFAULT_MAX_RECURSION_DEPTH, Engine, GradOptions, GradTarget, backward,
    backward_edges, current_graph_task_id, current_graph_task_keep_graph, grad, grad_edges,
    is_checkpoint_valid, queue_callback, will_engine_execute_node,
};
pub use error::{Error, Result};
pub use grad_mode::{
    GradModeGuard, InferenceModeGuard, MultithreadingGuard, enable_grad, inference_mode,
    inference_mode_with, is_grad_enabled, is_inference_mode_enabled, is_multithreading_enabled,
    no_grad, set_grad_enabled, set_multithreading_enabled,
};
pub use gradcheck::{GradcheckOptions, gradcheck, gradcheck_with, gradgradcheck};
pub use graph::{
    Edge, HookHandle, MultiGradHookHandle, MultiGradMode, Node, NodeMeta, NodeRef, SavedIndices,
    SavedTensor, SavedTensorsHooksGuard, register_multi_grad_hook, saved_tensors_hooks,
    try_register_multi_grad_hook, try_saved_tensors_hooks,
};
pub use half::{bf16, f16};
pub use ops::{ClampBound, Scalar, einsum, result_type};
pub use random::{
    Generator, GeneratorState, default_generator, initial_seed, manual_seed, randperm,
    randperm_with, seed,
};
pub use state_dict::StateDict;
pub use tensor::{
    PrintOptions, PrintOptionsGuard, Tensor, get_printoptions, printoptions, set_printoptions,
};
pub use warning::{WarningHandler, is_warn_always_enabled, set_warn_always, set_warning_handler};

/// Reached by the code `#[differentiable]` generates (through `crate = "crate"` inside this
/// crate, and through the facade elsewhere), to check a `#[backward]` against its forward. Not a
/// public API.
#[doc(hidden)]
pub use autograd_macros::{__check_backward, __check_jvp};

/// Items used by code that `#[differentiable]` and `#[backward]` generate. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::graph::copy_slices::{
        check_dirty, mark_dirty, rebase_dirty_view, rebase_inplace_view,
    };
    pub use crate::graph::function::{
        ConvertsError, ErrorProbe, ForwardResult, KeepsError, custom_output, finish_output_packs,
        mark_custom_outputs, next_edges, next_edges_opt, record_node, take_grads, try_next_edges,
        try_next_edges_opt, try_record_node,
    };
    pub use crate::graph::{Backward, FunctionNode, GradVec, InputMetadata, ReleaseAttribute};
    pub use crate::ops::{
        Binary, DerivativeRules, Read, Reads, Rule, Unary, UnaryWith, accumulate, check_inplace,
        keep, keep_ref, needing_grad, reduce_grad,
    };
    pub use smallvec;

    /// Forward-mode AD: what the generated code calls to propagate tangents (`forward_ad/`).
    pub mod forward_ad {
        pub use crate::forward_ad::{
            DualCall, InputRef, NoJvp, dual_edges, engaged, fail_outputs, has_tangent, jvp_missing,
            original, record_dual, set_tangents, set_vec_tangents, suspend, suspend_for,
            tangents_of,
        };
    }

    /// Fusion: element-wise derived bodies run as one generated kernel each way (`fusion/`).
    pub mod fusion {
        pub use crate::fusion::{
            Elementwise, Program, Var, backward, forward, fuses_on, keep_value, run_on_host, runs,
            set_enabled, take_value,
        };
    }

    /// Compiles only for a type a node can own as a saved attribute: the node clones it into
    /// the backward and may run on another thread. Called (in a constant, so at no run-time
    /// cost) with each saved attribute's type, spanned on that type, so that rustc's error
    /// names it.
    pub const fn assert_attribute<T: Clone + Send + Sync + 'static>() {}

    /// Implemented (by `#[backward(f)]`) for the marker type `#[differentiable] fn f` emits, so
    /// that a forward without a backward, or with two, is a compile error.
    #[diagnostic::on_unimplemented(
        message = "`#[differentiable]` function has no `#[backward]`",
        label = "add a function annotated `#[backward(<this function>)]`"
    )]
    pub trait HasBackward {}
}
