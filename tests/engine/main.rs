//! The backward engine: scheduling, dependency counting, accumulation, selective execution,
//! graph structure, reentrancy, threads, errors and hostile input, and random graphs checked
//! against a reference evaluator.
//!
//! One test binary per theme (`tests/<theme>/main.rs`), each file here a module: `cargo test
//! --test engine reentrant::` runs a part of it.

#[path = "../common/mod.rs"]
mod common;
mod fuzz;

mod accumulate_grad;
mod backward_basic;
mod bad_inputs;
mod concurrency;
mod engine_contract;
mod errors;
mod errors_and_callbacks;
mod fuzz_graphs;
mod grad_selective;
mod gradient_edge;
mod grads_batched;
mod graph_structure;
mod optional_inputs;
mod reentrant;
mod set_grad;
