//! Unit tests of the validation rules.

use syn::{Signature, parse_quote};

use super::*;
use crate::ir::{BackwardFn, DiffFn};

/// The messages of checking `backward` against `forward` (with options `args`).
fn backward_errors(args: DiffArgs, forward: Signature, backward: Signature) -> Vec<String> {
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn(&cx, &forward);
    check_forward(&cx, &args, &fwd);
    let bwd = BackwardFn::from_syn(&cx, &backward);
    check_backward(&cx, &args, &fwd, &bwd);
    match cx.check() {
        Ok(()) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

fn scaled_square() -> Signature {
    parse_quote!(fn scaled_square(x: &Tensor, scale: f64) -> Tensor)
}

fn forward_errors(args: DiffArgs, forward: Signature) -> Vec<String> {
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn(&cx, &forward);
    check_forward(&cx, &args, &fwd);
    match cx.check() {
        Ok(()) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn a_fitting_backward_passes() {
    let ok: [Signature; 4] = [
        parse_quote!(fn b(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor),
        parse_quote!(fn b(grad: &Tensor, scale: &f64, result: &Tensor) -> Option<Tensor>),
        parse_quote!(fn b(_grad: &Tensor) -> Result<Tensor>),
        parse_quote!(fn b(grad: &Tensor, x: &autograd::Tensor) -> autograd::Result<(Tensor,)>),
    ];
    for bwd in ok {
        assert_eq!(
            backward_errors(DiffArgs::default(), scaled_square(), bwd),
            Vec::<String>::new()
        );
    }
}

#[test]
fn unknown_names_list_what_would_fit() {
    let errs = backward_errors(
        DiffArgs::default(),
        scaled_square(),
        parse_quote!(fn b(grad: &Tensor, y: &Tensor) -> Tensor),
    );
    assert_eq!(
        errs,
        ["no parameter `y` in `scaled_square`; expected one of `x`, `scale`, `result`"]
    );
}

#[test]
fn gradient_parameter_counts() {
    let errs = backward_errors(
        DiffArgs::default(),
        scaled_square(),
        parse_quote!(fn b(grad: &Tensor, grad_1: &Tensor, x: &Tensor) -> Tensor),
    );
    assert_eq!(
        errs,
        [
            "`#[backward(scaled_square)]` expects 1 incoming gradient parameter (the forward returns 1 tensor), found 2"
        ]
    );
    let errs = backward_errors(
        DiffArgs::default(),
        parse_quote!(fn halves(x: &Tensor) -> (Tensor, Tensor)),
        parse_quote!(fn b(x: &Tensor) -> Tensor),
    );
    assert_eq!(
        errs,
        [
            "`#[backward(halves)]` expects 2 incoming gradient parameters (the forward returns 2 tensors), found 0; name them `grad_0`, `grad_1`"
        ]
    );
}

#[test]
fn gradient_parameter_types_follow_materialize_grads() {
    let errs = backward_errors(
        DiffArgs::default(),
        scaled_square(),
        parse_quote!(fn b(grad: Option<&Tensor>) -> Tensor),
    );
    assert!(
        errs[0].contains("use `materialize_grads = false`"),
        "{errs:?}"
    );
    let no_materialize: DiffArgs = parse_quote!(materialize_grads = false);
    let errs = backward_errors(
        no_materialize,
        scaled_square(),
        parse_quote!(fn b(grad: &Tensor) -> Tensor),
    );
    assert_eq!(
        errs,
        [
            "incoming gradient `grad` must be `Option<&Tensor>` because of `materialize_grads = false`, found `&Tensor`"
        ]
    );
    let no_materialize: DiffArgs = parse_quote!(materialize_grads = false);
    let errs = backward_errors(
        no_materialize,
        scaled_square(),
        parse_quote!(fn b(grad: Option<&Tensor>) -> Tensor),
    );
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn saved_tensor_types_must_match_the_forward() {
    let errs = backward_errors(
        DiffArgs::default(),
        scaled_square(),
        parse_quote!(fn b(grad: &Tensor, x: Tensor, scale: f32, result: Tensor) -> Tensor),
    );
    // `scale: f32` is rustc's to reject (a spanned `let` in the expansion), not the macro's.
    assert_eq!(
        errs,
        [
            "type of `x` must match `scaled_square`: expected `&Tensor`, found `Tensor`",
            "type of `result` must match `scaled_square`: expected `&Tensor`, found `Tensor`",
        ]
    );
}

#[test]
fn attribute_types_are_left_to_rustc() {
    // Paths, aliases, `'static` borrows and function pointers are not compared as tokens.
    let errs = backward_errors(
        DiffArgs::default(),
        parse_quote!(fn f(x: &Tensor, dims: std::vec::Vec<usize>, name: &'static str, g: fn(&Tensor) -> f64) -> Tensor),
        parse_quote!(fn b(grad: &Tensor, dims: &[usize], name: &'static str, g: fn(&Tensor) -> f64) -> Tensor),
    );
    assert_eq!(errs, Vec::<String>::new());
}

#[test]
fn names_may_be_used_once() {
    let errs = backward_errors(
        DiffArgs::default(),
        scaled_square(),
        parse_quote!(fn b(grad: &Tensor, x: &Tensor, x: &Tensor) -> Tensor),
    );
    assert_eq!(errs, ["`x` is named twice"]);
}

#[test]
fn one_gradient_per_tensor_input() {
    let mul: Signature = parse_quote!(fn mul(a: &Tensor, k: f64, b: &Tensor) -> Tensor);
    let errs = backward_errors(
        DiffArgs::default(),
        mul.clone(),
        parse_quote!(fn b(grad: &Tensor) -> Tensor),
    );
    assert_eq!(
        errs,
        [
            "`#[backward(mul)]` must return a tuple of 2 gradients, one per tensor input of `mul` (`a`, `b`), each `Tensor` or `Option<Tensor>`, found 1 gradient"
        ]
    );
    let errs = backward_errors(
        DiffArgs::default(),
        mul.clone(),
        parse_quote!(fn b(grad: &Tensor) -> Result<(Tensor, Vec<f64>), Error>),
    );
    assert_eq!(
        errs,
        ["the gradient for `b` must be `Tensor` or `Option<Tensor>`, found `Vec<f64>`"]
    );
    let errs = backward_errors(DiffArgs::default(), mul, parse_quote!(fn b(grad: &Tensor)));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].starts_with("`#[backward(mul)]` must return a tuple of 2 gradients"));
}

#[test]
fn options_name_outputs_and_inputs() {
    let halves: Signature = parse_quote!(fn halves(x: &Tensor, k: f64) -> Result<(Tensor, Tensor)>);
    let errs = forward_errors(
        parse_quote!(non_differentiable(result_1, result, result_1)),
        halves.clone(),
    );
    assert_eq!(
        errs,
        [
            "`result` is not an output of `halves`; expected one of `result_0`, `result_1`",
            "`result_1` is listed twice in `non_differentiable(..)`",
        ]
    );
    let errs = forward_errors(parse_quote!(dirty(k)), halves.clone());
    assert_eq!(
        errs,
        [
            "`dirty(..)` names the tensor inputs that `halves` modifies in place; expected one of `x`"
        ]
    );
    assert!(
        forward_errors(parse_quote!(dirty(x), non_differentiable(result_0)), halves).is_empty()
    );
    let errs = forward_errors(parse_quote!(dirty(x)), scaled_square());
    assert_eq!(
        errs,
        [
            "`dirty(..)` needs `scaled_square` to return a `Result`: modifying a leaf that requires grad in place is an error"
        ]
    );
}

fn mul_fwd() -> Signature {
    parse_quote!(fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor>)
}

#[test]
fn needs_input_grad_is_one_flag_per_input() {
    for ok in [
        parse_quote!(fn b(grad: &Tensor, needs_input_grad: [bool; 2]) -> (Tensor, Tensor)),
        parse_quote!(fn b(grad: &Tensor, needs_input_grad: &[bool]) -> (Tensor, Tensor)),
    ] {
        let errs = backward_errors(DiffArgs::default(), mul_fwd(), ok);
        assert!(errs.is_empty(), "{errs:?}");
    }
    let errs = backward_errors(
        DiffArgs::default(),
        mul_fwd(),
        parse_quote!(fn b(grad: &Tensor, needs_input_grad: [bool; 3]) -> (Tensor, Tensor)),
    );
    assert_eq!(
        errs,
        [
            "`needs_input_grad` must be `[bool; 2]` (one entry per tensor input) or `&[bool]`, found `[bool; 3]`"
        ]
    );
    let errs = backward_errors(
        DiffArgs::default(),
        parse_quote!(fn cat(xs: &[Tensor]) -> Tensor),
        parse_quote!(fn b(grad: &Tensor, needs_input_grad: [bool; 1]) -> Vec<Tensor>),
    );
    assert_eq!(
        errs,
        ["`needs_input_grad` must be `&[bool]` (one entry per next edge), found `[bool; 1]`"]
    );
}

#[test]
fn needed_for_saves_optional_tensors() {
    let ok = backward_errors(
        DiffArgs::default(),
        mul_fwd(),
        parse_quote!(fn b(
            grad: &Tensor,
            #[needed_for(b)] a: Option<&Tensor>,
            #[needed_for(a, b)] result: Option<&Tensor>,
        ) -> (Option<Tensor>, Option<Tensor>)),
    );
    assert!(ok.is_empty(), "{ok:?}");
    let errs = backward_errors(
        DiffArgs::default(),
        parse_quote!(fn mul(a: &Tensor, b: &Tensor, k: f64) -> Result<Tensor>),
        parse_quote!(fn b(
            grad: &Tensor,
            #[needed_for(c, b, b)] a: Option<&Tensor>,
            #[needed_for(a)] b: &Tensor,
            result: Option<&Tensor>,
            #[needed_for(a)] k: f64,
        ) -> (Option<Tensor>, Option<Tensor>)),
    );
    assert_eq!(
        errs,
        [
            "`#[needed_for(..)]` names tensor inputs of `mul` (whose gradients need this value); expected one of `a`, `b`",
            "`b` is listed twice in `needed_for(..)`",
            "`b` is saved only when needed (`#[needed_for(..)]`), so it must be `Option<&Tensor>`, found `&Tensor`",
            "`result` is `Option<&Tensor>`: add `#[needed_for(input, ..)]` to save it only when one of those inputs needs a gradient, or take `&Tensor`",
            "`#[needed_for(..)]` goes on a saved tensor (`Option<&Tensor>`); `k` is not one",
        ]
    );
}

#[test]
fn original_values_are_for_dirty_inputs() {
    let dirty: DiffArgs = parse_quote!(dirty(a));
    let ok = backward_errors(
        dirty,
        mul_fwd(),
        parse_quote!(fn b(
            grad: &Tensor,
            #[original] #[needed_for(b)] a: Option<&Tensor>,
        ) -> (Option<Tensor>, Option<Tensor>)),
    );
    assert!(ok.is_empty(), "{ok:?}");
    let errs = backward_errors(
        DiffArgs::default(),
        mul_fwd(),
        parse_quote!(fn b(grad: &Tensor, #[original] a: &Tensor) -> (Tensor, Tensor)),
    );
    assert_eq!(
        errs,
        [
            "`#[original]` gives the value a `dirty` input had before `mul` modified it; `a` is not listed in `dirty(..)`"
        ]
    );
}

#[test]
fn metadata_and_slices() {
    let cat: Signature =
        parse_quote!(fn cat(x: &Tensor, xs: &[Tensor], dim: usize) -> Result<Tensor>);
    let ok = backward_errors(
        DiffArgs::default(),
        cat.clone(),
        parse_quote!(fn b(
            grad: &Tensor,
            x: &InputMetadata,
            xs: &[InputMetadata],
        ) -> Result<(Tensor, Vec<Option<Tensor>>)>),
    );
    assert!(ok.is_empty(), "{ok:?}");
    let ok = backward_errors(
        DiffArgs::default(),
        cat.clone(),
        parse_quote!(fn b(grad: &Tensor, xs: &[Tensor]) -> (Option<Tensor>, Vec<Tensor>)),
    );
    assert!(ok.is_empty(), "{ok:?}");
    let errs = backward_errors(
        DiffArgs::default(),
        cat,
        parse_quote!(fn b(
            grad: &Tensor,
            xs: &Tensor,
            result: &InputMetadata,
        ) -> (Vec<Tensor>, Tensor)),
    );
    assert_eq!(
        errs,
        [
            "type of `xs` must match `cat`: expected `&[Tensor]` (saves the tensors) or `&[InputMetadata]` (saves their shapes, dtypes and devices), found `&Tensor`",
            "type of `result` must match `cat`: expected `&Tensor`, found `&InputMetadata`",
            "the gradient for `x` must be `Tensor` or `Option<Tensor>`, found `Vec<Tensor>`",
            "the gradient for `xs` must be `Vec<Tensor>` or `Vec<Option<Tensor>>` (one gradient per tensor of the slice), found `Tensor`",
        ]
    );
}

#[test]
fn vec_outputs_take_a_slice_of_gradients() {
    let split: Signature = parse_quote!(fn split(x: &Tensor, n: usize) -> Result<Vec<Tensor>>);
    let ok = backward_errors(
        DiffArgs::default(),
        split.clone(),
        parse_quote!(fn b(grad: &[Tensor], result: &[Tensor], n: usize) -> Tensor),
    );
    assert!(ok.is_empty(), "{ok:?}");
    let no_materialize: DiffArgs = parse_quote!(materialize_grads = false);
    let ok = backward_errors(
        no_materialize,
        split.clone(),
        parse_quote!(fn b(grad: &[Option<Tensor>]) -> Tensor),
    );
    assert!(ok.is_empty(), "{ok:?}");
    let errs = backward_errors(
        DiffArgs::default(),
        split.clone(),
        parse_quote!(fn b(grad: &Tensor, result: &Tensor) -> Tensor),
    );
    assert_eq!(
        errs,
        [
            "incoming gradient `grad` of a `Vec<Tensor>` forward must be `&[Tensor]`, found `&Tensor`",
            "type of `result` must match `split`: expected `&[Tensor]` (the outputs of a `Vec<Tensor>` forward), found `&Tensor`",
        ]
    );
    let errs = backward_errors(
        DiffArgs::default(),
        split.clone(),
        parse_quote!(fn b(grad_0: &[Tensor], grad_1: &[Tensor]) -> Tensor),
    );
    assert_eq!(
        errs,
        [
            "`#[backward(split)]` expects 1 incoming gradient parameter, `grad: &[Tensor]` (one gradient per tensor of the forward's `Vec<Tensor>`), found 2"
        ]
    );
    let errs = forward_errors(parse_quote!(dirty(x), non_differentiable(result)), split);
    assert_eq!(
        errs,
        [
            "`dirty(..)` is not supported with a `Vec<Tensor>` output; return a tuple of tensors",
            "`non_differentiable(..)` is not supported with a `Vec<Tensor>` output; return a tuple of tensors",
        ]
    );
}

#[test]
fn only_a_builtin_that_fits_asks_for_a_rule() {
    let ok = forward_errors(parse_quote!(builtin, rule), scaled_square());
    assert_eq!(ok, Vec::<String>::new());
    assert_eq!(
        forward_errors(parse_quote!(rule), scaled_square()),
        [
            "`rule` is for the runtime's `builtin` ops; a user function gets its derivative rule without it"
        ]
    );
    assert_eq!(
        forward_errors(
            parse_quote!(builtin, rule = split_rule),
            parse_quote!(fn split(x: &Tensor) -> Vec<Tensor>)
        ),
        [
            "`rule` needs `split` to take `&Tensor` inputs and attributes and return one tensor, without `save`, `dirty`, `non_differentiable` or `once_differentiable`"
        ]
    );
}
