//! Activation checkpointing (`autograd::checkpoint`, reentrant and not) and the guard that keeps
//! the reentrant variant out of `grad()` and `backward(inputs=..)` (`is_checkpoint_valid`).

#[path = "../common/mod.rs"]
mod common;

mod guard;
mod variants;
