//! Compile-time behaviour of `#[differentiable]`, `#[backward]` and `#[derive(Module)]`: every rule
//! of the DSL has a compile-fail case under `tests/ui/<macro>/` (`module/` for the derive), every
//! supported form a case under `tests/pass/`.
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test -p autograd-macros --test ui`,
//! then review them.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/**/*.rs");
    t.pass("tests/pass/*.rs");
}
