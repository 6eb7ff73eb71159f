//! The backward graph: nodes (`*Backward0` functions), the edges between them, the tensors they
//! save, and the hooks users attach to them.

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
pub use edge::Edge;
pub use function::{Backward, FunctionNode};
pub(crate) use graph_root::GraphRoot;
pub use hooks::HookHandle;
pub use multi_grad_hook::{register_multi_grad_hook, MultiGradHookHandle, MultiGradMode};
pub use node::{GradVec, InputMetadata, Node, NodeMeta};
pub use node_ref::NodeRef;
pub use saved::SavedTensor;
pub use saved_hooks::{saved_tensors_hooks, SavedTensorsHooksGuard};
