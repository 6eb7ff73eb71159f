//! Random graphs, checked two ways. proptest generates programs (1–4 f64 leaves of rank 0–3 that
//! broadcast against each other, 3–40 ops drawn from every differentiable op: unary, binary with
//! broadcasting, scalar, reductions, softmax, matmul, views, cat/stack, split/chunk, in-place ops
//! on non-leaf tensors and on views of them (with up to two other views of the written tensor
//! taken before the op and read after it), detach, constants and custom `#[differentiable]` ops
//! (two out-of-place ones; in-place ops also write a custom function's result, or write through
//! a custom `dirty` function, the earlier views read after); later ops pick any earlier value,
//! so values are shared). Each
//! program's gradients of `Σ sum(root · weights)` are checked against central finite differences
//! of the library's forward and against a reference reverse-mode evaluator on plain `Vec<f64>`
//! (`fuzz/reference.rs`); the same programs run through `grad()` with random subsets of the
//! leaves, with `retain_graph` twice, through `backward()` into `.grad`, and for a third of them
//! the gradient of a gradient (`create_graph`) is checked against finite differences (through
//! in-place ops on views too).
//!
//! `AUTOGRAD_FUZZ_CASES=N` runs N programs (default 500); `AUTOGRAD_FUZZ_SEED=S` changes the
//! generator's seed (default fixed, so CI sees the same programs). On failure proptest shrinks
//! the program and the test prints the minimal one. `--nocapture` shows a summary line.

use crate::fuzz;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Instant;

use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestError, TestRunner};

use fuzz::check::check;
use fuzz::program::program;

/// What the summary line reports.
#[derive(Default)]
struct Stats {
    programs: u64,
    fd: u64,
    second: u64,
    steps: u64,
    ops: BTreeMap<String, u64>,
}

/// Programs run by default (CI).
const DEFAULT_CASES: u32 = 500;

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {v:?}"))
    })
}

#[test]
fn random_graphs_checked_two_ways() {
    let cases = env_number("AUTOGRAD_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as u32);
    let seed = env_number("AUTOGRAD_FUZZ_SEED").unwrap_or(0x5eed_f00d);
    let config = Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 100_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let stats = RefCell::new(Stats::default());
    let start = Instant::now();
    let result = runner.run(&program(), |p| {
        let checked = check(&p).map_err(TestCaseError::fail)?;
        let mut s = stats.borrow_mut();
        s.programs += 1;
        s.fd += u64::from(checked.finite_differences);
        s.second += u64::from(checked.second_order);
        s.steps += checked.plan.steps.len() as u64;
        for step in &checked.plan.steps {
            *s.ops.entry(step.op.name()).or_default() += 1;
        }
        Ok(())
    });
    let Stats {
        programs,
        fd,
        second,
        steps,
        ops,
    } = stats.into_inner();
    match result {
        Ok(()) => {}
        Err(TestError::Fail(why, minimal)) => {
            let plan = fuzz::plan::plan(&minimal);
            panic!("minimal failing program:\n{minimal:?}\nlowered to:\n{plan}\n{why}");
        }
        Err(e) => panic!("{e}"),
    }
    println!(
        "fuzz_graphs: {programs} programs checked in {:.1?} ({steps} ops; {fd} against finite \
         differences, {second} second-order; seed {seed:#x}); {} op kinds covered: {}",
        start.elapsed(),
        ops.len(),
        ops.iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
