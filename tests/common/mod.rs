//! Helpers shared by the integration tests: a node whose backward is a closure, for behaviours
//! that need a node to return something no real op returns (a wrong gradient count, dtype or
//! shape, an undefined gradient, an error). Each test crate uses what it needs.
#![allow(
    dead_code,
    reason = "each test crate includes this module and uses a part of it"
)]

use autograd::__private::{record_node, smallvec::SmallVec};
use autograd::graph::{Backward, GradVec, NodeMeta};
use autograd::{Edge, Result, Tensor};

/// A hand-written node (what `#[differentiable]` generates) with a closure as its backward.
struct Custom(Box<dyn Fn(GradVec) -> Result<GradVec> + Send + Sync>);

impl Backward for Custom {
    const NAME: &'static str = "CustomBackward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        (self.0)(grads)
    }
}

/// The edge gradients for `t` flow along (grad_fn, or the leaf's AccumulateGrad).
fn edge_of(t: &Tensor) -> Edge {
    match t.grad_fn() {
        Some(f) => Edge::new(f, t.output_nr()),
        None => t
            .mul_scalar(1.0)
            .unwrap()
            .grad_fn()
            .unwrap()
            .next_functions()[0]
            .clone()
            .unwrap(),
    }
}

/// `out` becomes the output of a custom node over `inputs` whose backward is `f`.
pub(crate) fn custom(
    inputs: &[&Tensor],
    out: Tensor,
    f: impl Fn(GradVec) -> Result<GradVec> + Send + Sync + 'static,
) -> Tensor {
    let edges: SmallVec<[Option<Edge>; 2]> = inputs.iter().map(|t| Some(edge_of(t))).collect();
    let _node = record_node(edges, &[&out], |_| Custom(Box::new(f)));
    out
}

/// Whether the calling test should run its body here: `true` in a process of its own, `false`
/// in the shared test binary, where this starts that process and checks that the test passed
/// there.
///
/// For behaviours that happen once per process (the first `backward(create_graph=True)`'s
/// warning): the tests sharing a binary by theme would trigger them first. `name` is the test's
/// path inside its binary (`backward_basic::b01_..`), run with `--exact` in a child process of
/// the same binary; a wrong name runs no test there and fails here.
///
/// ```ignore
/// if !common::in_own_process("warn_always::backward_create_graph_warns") {
///     return;
/// }
/// ```
pub(crate) fn in_own_process(name: &str) -> bool {
    const CHILD: &str = "AUTOGRAD_TEST_IN_OWN_PROCESS";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let binary = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(binary)
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .expect("the test binary starts again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "`{name}` in a process of its own:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// Seeds the global generator and holds it for the calling test: tests of one binary run on
/// parallel threads, so every test that draws from the global generator (seedless constructors,
/// layer initialisation, dropout) holds this guard while it draws.
pub(crate) fn global_rng(seed: u64) -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    autograd::manual_seed(seed);
    guard
}
