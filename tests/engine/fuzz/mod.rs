//! Random programs checked two ways: the generator, the lowering, the reference evaluator, the
//! library runner and the checks (see `tests/engine/fuzz_graphs.rs`).

pub(crate) mod check;
pub(crate) mod library;
pub(crate) mod op;
pub(crate) mod plan;
pub(crate) mod program;
pub(crate) mod reference;
mod regressions;
