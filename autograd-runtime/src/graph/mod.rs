//! The backward graph: nodes (`*Backward0` functions), the edges between them, the tensors they
//! save, and the hooks users attach to them.
//!
//! # Fallible hooks
//!
//! Every kind of hook a user registers comes in two forms: one whose closure returns what
//! PyTorch's hook returns, and a `try_` twin whose closure returns the same in a
//! [`Result`](crate::Result):
//!
//! | hook | infallible | fallible |
//! | --- | --- | --- |
//! | tensor hook | [`Tensor::register_hook`](crate::Tensor::register_hook) | [`Tensor::try_register_hook`](crate::Tensor::try_register_hook) |
//! | post-accumulate-grad hook | [`Tensor::register_post_accumulate_grad_hook`](crate::Tensor::register_post_accumulate_grad_hook) | [`Tensor::try_register_post_accumulate_grad_hook`](crate::Tensor::try_register_post_accumulate_grad_hook) |
//! | node pre-hook | [`NodeRef::register_prehook`] | [`NodeRef::try_register_prehook`] |
//! | node post-hook | [`NodeRef::register_hook`] | [`NodeRef::try_register_hook`] |
//! | multi-grad hook | [`register_multi_grad_hook`] | [`try_register_multi_grad_hook`] |
//! | saved-tensor hooks | [`saved_tensors_hooks`] | [`try_saved_tensors_hooks`] |
//!
//! An `Err` from a hook stops the backward pass as an error from a node's backward does (B24):
//! the pass's remaining work is skipped, its final callbacks do not run, the error reaches the
//! caller of `backward()`/`grad()` unchanged, and the engine stays usable. (A pack hook runs in
//! the forward pass: its error is the error of the forward op, as in PyTorch, except for a
//! `#[differentiable]` forward that returns a bare `Tensor`, which has nowhere to return it: then
//! the first use of the saved tensor returns it.) A hook that panics still becomes
//! [`Error::Panic`](crate::Error::Panic).
//!
//! Twins rather than one method generic over the closure's return type, as std has
//! `try_for_each` beside `for_each`: with one generic method, a closure such as `|_| None`, or
//! one using `?`, would leave the return type for the caller to annotate. Both forms are stored
//! alike (the infallible closure wrapped in `Ok`), so the engine has one path for both.

mod accumulate_grad;
pub(crate) mod copy_slices;
mod edge;
pub(crate) mod function;
mod graph_root;
pub(crate) mod hooks;
pub(crate) mod multi_grad_hook;
mod node;
mod node_ref;
mod saved;
pub(crate) mod saved_hooks;

pub(crate) use accumulate_grad::AccumulateGrad;
pub use edge::{Edge, get_gradient_edge};
pub use function::{Backward, FunctionNode};
pub(crate) use graph_root::GraphRoot;
pub use hooks::HookHandle;
pub use multi_grad_hook::{
    MultiGradHookHandle, MultiGradMode, register_multi_grad_hook, try_register_multi_grad_hook,
};
pub use node::{GradVec, InputMetadata, Node, NodeMeta};
pub use node_ref::NodeRef;
pub use saved::{ReleaseAttribute, SaveContext, SavedIndices, SavedTensor};
pub use saved_hooks::{SavedTensorsHooksGuard, saved_tensors_hooks, try_saved_tensors_hooks};
