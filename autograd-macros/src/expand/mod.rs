//! Code generation: `quote!` only, infallible, run on validated IR. `forward.rs` emits what
//! `#[differentiable]` adds next to the user's function (the public wrapper, the renamed body, the
//! marker type, the link trait and the signature macro), naming the hidden items as `names.rs`
//! says and declaring the type aliases of `aliases.rs`; `node.rs` emits the graph node, from the
//! values `slots.rs` says it keeps, and `backward/` what `#[backward]` adds (the link trait's
//! `call`, what a custom function's outputs become, what the node keeps). `derive/` writes
//! the hidden pair of a derived function, `rule/` the rules a derived body calls its ops
//! through, and `fusion.rs` the fused programs of derived bodies.

mod aliases;
mod backward;
pub(crate) mod derive;
mod forward;
mod fusion;
mod names;
mod node;
pub(crate) mod rule;
mod slots;

pub(crate) use aliases::{output_type, param_type};
pub(crate) use backward::{backward_attr, link_impl, link_stub};
pub(crate) use forward::forward;
pub(crate) use names::{Names, aliasable, sibling, signature_alias};

#[cfg(test)]
mod snapshots;

#[cfg(test)]
mod tests;
