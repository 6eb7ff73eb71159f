//! Unit tests of the IR lowering.

use syn::{Ident, Signature, Type, parse_quote};

use super::*;
use crate::ctxt::Ctxt;
use crate::symbol;

/// The messages `lower` pushed, in order.
fn errors(lower: impl FnOnce(&Ctxt)) -> Vec<String> {
    let cx = Ctxt::new();
    lower(&cx);
    match cx.check() {
        Ok(()) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

fn forward_errors(sig: &Signature) -> Vec<String> {
    errors(|cx| {
        DiffFn::from_syn(cx, sig);
    })
}

#[test]
fn tensor_references_are_inputs_and_the_rest_attributes() {
    let sig: Signature =
        parse_quote!(fn f(x: &Tensor, scale: f64, y: &autograd::Tensor, mut n: usize) -> Tensor);
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn(&cx, &sig);
    cx.check().expect("valid forward");
    let kinds: Vec<_> = fwd
        .params
        .iter()
        .map(|p| (p.ident.to_string(), p.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("x".to_string(), ParamKind::Tensor(0)),
            ("scale".to_string(), ParamKind::Attr),
            ("y".to_string(), ParamKind::Tensor(1)),
            ("n".to_string(), ParamKind::Attr),
        ]
    );
    assert_eq!(fwd.tensor_inputs().count(), 2);
    assert_eq!(
        (fwd.num_outputs(), fwd.output.tuple, fwd.output.fallible),
        (1, false, false)
    );
    assert_eq!(fwd.output_names(), ["result"]);
}

#[test]
fn optional_tensor_inputs_only_with_a_hand_written_backward() {
    let sig: Signature =
        parse_quote!(fn linear(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Tensor);
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn_hand_written(&cx, &sig, &[]);
    cx.check().expect("valid forward");
    let kinds: Vec<_> = fwd.params.iter().map(|p| (p.kind, p.optional)).collect();
    assert_eq!(
        kinds,
        [
            (ParamKind::Tensor(0), false),
            (ParamKind::Tensor(1), false),
            (ParamKind::Tensor(2), true),
        ]
    );
    assert!(fwd.has_optional());
    assert_eq!(
        forward_errors(&sig),
        [
            "optional tensor inputs are not supported by `#[differentiable(derive)]`; write a `#[backward]`"
        ]
    );
    let mutable: Signature = parse_quote!(fn f(x: &Tensor, b: Option<&mut Tensor>) -> Tensor);
    assert_eq!(
        errors(|cx| {
            DiffFn::from_syn_hand_written(cx, &mutable, &[]);
        }),
        [
            "`Option<&mut Tensor>` parameters are not supported; an optional input is `Option<&Tensor>`"
        ]
    );
}

#[test]
fn save_splits_residuals_off_the_return_type() {
    let save: Vec<Ident> = vec![parse_quote!(argmax), parse_quote!(n)];
    let sig: Signature =
        parse_quote!(fn f(x: &Tensor) -> Result<(Tensor, Tensor, Vec<usize>, usize), Error>);
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn_hand_written(&cx, &sig, &save);
    cx.check().expect("valid forward");
    assert_eq!((fwd.num_outputs(), fwd.output.tuple), (2, true));
    let public = fwd.output.public_return();
    assert_eq!(
        public.to_string(),
        quote::quote!(-> Result<(Tensor, Tensor), Error>).to_string()
    );
    let residuals: Vec<_> = fwd
        .residuals
        .iter()
        .map(|r| (r.ident.to_string(), type_string(r.ty)))
        .collect();
    assert_eq!(
        residuals,
        [
            ("argmax".to_string(), "Vec<usize>".to_string()),
            ("n".to_string(), "usize".to_string())
        ]
    );
    assert_eq!(
        fwd.resolve(&parse_quote!(argmax)),
        Some(Source::Residual(0))
    );

    let one: Signature = parse_quote!(fn f(x: &Tensor) -> (Tensor, usize));
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn_hand_written(&cx, &one, &save[1..]);
    cx.check().expect("valid forward");
    assert_eq!(fwd.output.public_return().to_string(), "-> Tensor");
    assert_eq!(fwd.output_names(), ["result"]);

    let none: Signature = parse_quote!(fn f(x: &Tensor) -> Tensor);
    assert_eq!(
        errors(|cx| {
            DiffFn::from_syn_hand_written(cx, &none, &save[..1]);
        }),
        [
            "with `save(argmax)` the function returns its outputs, then the residuals: `(Tensor, _)`, found `Tensor`"
        ]
    );
}

#[test]
fn outputs_in_tuples_and_results() {
    for (sig, fallible, tuple, n) in [
        (
            parse_quote!(fn f(x: &Tensor) -> Result<Tensor>),
            true,
            false,
            1,
        ),
        (
            parse_quote!(fn f(x: &Tensor) -> (Tensor, Tensor, Tensor)),
            false,
            true,
            3,
        ),
        (
            parse_quote!(fn f(x: &Tensor) -> std::result::Result<(Tensor, Tensor), Error>),
            true,
            true,
            2,
        ),
        (
            parse_quote!(fn f(x: &Tensor) -> autograd::Result<(Tensor,)>),
            true,
            true,
            1,
        ),
    ] {
        let sig: Signature = sig;
        let cx = Ctxt::new();
        let fwd = DiffFn::from_syn(&cx, &sig);
        cx.check().expect("valid forward");
        assert_eq!(
            (fwd.output.fallible, fwd.output.tuple, fwd.num_outputs()),
            (fallible, tuple, n)
        );
    }
    let sig: Signature = parse_quote!(fn f(x: &Tensor) -> (Tensor, Tensor));
    let fwd = DiffFn::from_syn(&Ctxt::new_checked(), &sig);
    assert_eq!(fwd.output_names(), ["result_0", "result_1"]);
}

#[test]
fn names_resolve_to_parameters_and_outputs() {
    let sig: Signature = parse_quote!(fn f(x: &Tensor, r#type: f64) -> (Tensor, Tensor));
    let fwd = DiffFn::from_syn(&Ctxt::new_checked(), &sig);
    let resolve = |name: &str| fwd.resolve(&syn::parse_str(name).expect("ident"));
    assert_eq!(resolve("x"), Some(Source::Param(0)));
    assert_eq!(resolve("r#type"), Some(Source::Param(1)));
    assert_eq!(resolve("result_1"), Some(Source::Output(1)));
    assert_eq!(resolve("result"), None);
    assert_eq!(resolve("y"), None);
}

#[test]
fn default_node_names_are_camel_case() {
    for (sig, name) in [
        (
            parse_quote!(fn scaled_square(x: &Tensor) -> Tensor),
            "ScaledSquareBackward0",
        ),
        (
            parse_quote!(fn _private__fn(x: &Tensor) -> Tensor),
            "PrivateFnBackward0",
        ),
        (parse_quote!(fn r#mod(x: &Tensor) -> Tensor), "ModBackward0"),
        (
            parse_quote!(fn add_one_(x: &Tensor) -> Tensor),
            "AddOneBackward0",
        ),
    ] {
        let sig: Signature = sig;
        assert_eq!(
            DiffFn::from_syn(&Ctxt::new_checked(), &sig).default_node_name(),
            name
        );
    }
}

#[test]
fn unsupported_forwards_are_rejected() {
    let cases: [(Signature, &str); 10] = [
        (
            parse_quote!(const fn f(x: &Tensor) -> Tensor),
            "`const fn`s are not supported",
        ),
        (
            parse_quote!(async fn f(x: &Tensor) -> Tensor),
            "`async fn`s are not supported",
        ),
        (
            parse_quote!(unsafe fn f(x: &Tensor) -> Tensor),
            "`unsafe fn`s are not supported",
        ),
        (
            parse_quote!(fn f<T>(x: &Tensor, t: T) -> Tensor),
            "generic functions are not supported",
        ),
        (
            parse_quote!(fn f(&self, x: &Tensor) -> Tensor),
            "methods are not supported",
        ),
        (
            parse_quote!(fn f(v: f64) -> Tensor),
            "needs at least one `&Tensor` (or `&[Tensor]`) parameter",
        ),
        (
            parse_quote!(fn f(x: &mut Tensor) -> Tensor),
            "`&mut Tensor` parameters are not supported",
        ),
        (
            parse_quote!(fn f(x: Tensor) -> Tensor),
            "tensor inputs are taken by reference",
        ),
        (
            parse_quote!(fn f(x: &Tensor, grad: f64) -> Tensor),
            "parameter name `grad` is reserved",
        ),
        (
            parse_quote!(fn f(x: &Tensor) -> Vec<f64>),
            "must return `Tensor`, a tuple of tensors, `Vec<Tensor>`",
        ),
    ];
    for (sig, expected) in cases {
        let errs = forward_errors(&sig);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains(expected),
            "{:?} does not contain {expected:?}",
            errs[0]
        );
    }
}

#[test]
fn all_errors_of_a_forward_are_reported_together() {
    let sig: Signature = parse_quote!(async fn f<T>((a, b): (f64, f64), result: f64) -> ());
    let errs = forward_errors(&sig);
    assert_eq!(errs.len(), 5, "{errs:?}");
}

#[test]
fn backwards_split_gradients_from_saved_values() {
    let sig: Signature = parse_quote!(fn b(grad_0: &Tensor, _grad_1: &Tensor, x: &Tensor, scale: &f64) -> Result<(Tensor, Option<Tensor>, f64)>);
    let cx = Ctxt::new();
    let bwd = BackwardFn::from_syn(&cx, &sig);
    cx.check().expect("valid backward syntax");
    let names = |ps: &[BwParam<'_>]| ps.iter().map(|p| p.ident.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&bwd.grads), ["grad_0", "_grad_1"]);
    assert_eq!(names(&bwd.saved), ["x", "scale"]);
    assert!(bwd.output.fallible && bwd.output.tuple);
    let kinds: Vec<_> = bwd.output.grads.iter().map(|(_, k)| *k).collect();
    assert_eq!(
        kinds,
        [GradType::Tensor, GradType::OptionTensor, GradType::Other]
    );
}

#[test]
fn gradients_after_saved_values_are_rejected() {
    let sig: Signature = parse_quote!(fn b(x: &Tensor, grad: &Tensor) -> Tensor);
    let errs = errors(|cx| {
        BackwardFn::from_syn(cx, &sig);
    });
    assert_eq!(
        errs,
        ["incoming gradient parameters come first: move `grad` before `x`"]
    );
}

#[test]
fn types_print_as_written() {
    let cases: [(Type, &str); 4] = [
        (parse_quote!(&Tensor), "&Tensor"),
        (parse_quote!(Option<&Tensor>), "Option<&Tensor>"),
        (
            parse_quote!(std::vec::Vec<(usize, f64)>),
            "std::vec::Vec<(usize, f64)>",
        ),
        (parse_quote!(&'a [usize]), "&'a [usize]"),
    ];
    for (ty, expected) in cases {
        assert_eq!(type_string(&ty), expected);
    }
}

#[test]
fn gradient_names() {
    let is_grad = |s: &str| symbol::GRAD.is_prefix_of(&syn::parse_str(s).expect("ident"));
    assert!(is_grad("grad") && is_grad("_grad") && is_grad("grad_0") && is_grad("grad_out"));
    assert!(!is_grad("gradient") && !is_grad("grads") && !is_grad("x_grad"));
}

#[test]
fn slices_are_inputs_and_vecs_are_outputs() {
    let sig: Signature =
        parse_quote!(fn f(x: &Tensor, xs: &[Tensor], k: usize) -> Result<Vec<Tensor>>);
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn(&cx, &sig);
    cx.check().expect("valid forward");
    let kinds: Vec<_> = fwd.params.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [ParamKind::Tensor(0), ParamKind::Tensors(1), ParamKind::Attr]
    );
    assert!(fwd.has_slices() && fwd.output.vec && fwd.output.fallible && !fwd.output.tuple);
    assert_eq!(fwd.tensor_inputs().count(), 2);
    assert_eq!(fwd.output_names(), ["result"]);
    let resolve = |name: &str| fwd.resolve(&syn::parse_str(name).expect("ident"));
    assert_eq!(resolve("needs_input_grad"), Some(Source::NeedsInputGrad));
    assert_eq!(resolve("xs"), Some(Source::Param(1)));
}

#[test]
fn unsupported_tensor_lists_and_reserved_names_are_rejected() {
    let cases: [(Signature, &str); 3] = [
        (
            parse_quote!(fn f(xs: &mut [Tensor]) -> Tensor),
            "`&mut [Tensor]` parameters are not supported",
        ),
        (
            parse_quote!(fn f(x: &Tensor, xs: Vec<Tensor>) -> Tensor),
            "a list of tensor inputs is taken as a slice: write `&[Tensor]`",
        ),
        (
            parse_quote!(fn f(x: &Tensor, needs_input_grad: bool) -> Tensor),
            "parameter name `needs_input_grad` is reserved",
        ),
    ];
    for (sig, expected) in cases {
        let errs = forward_errors(&sig);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains(expected), "{:?} vs {expected:?}", errs[0]);
    }
}

#[test]
fn backward_parameter_attributes() {
    let sig: Signature = parse_quote!(fn b(
        grad: &Tensor,
        #[needed_for(a, c)] x: Option<&Tensor>,
        #[original]
        #[allow(unused)]
        y: &Tensor,
    ) -> Tensor);
    let cx = Ctxt::new();
    let bwd = BackwardFn::from_syn(&cx, &sig);
    cx.check().expect("valid backward syntax");
    let needed: Vec<String> = bwd.saved[0]
        .needed_for
        .as_ref()
        .expect("needed_for")
        .names
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(needed, ["a", "c"]);
    assert!(bwd.saved[0].original_value.is_none());
    assert!(bwd.saved[1].original_value.is_some() && bwd.saved[1].needed_for.is_none());
    let kept: Vec<bool> = bwd.saved[1]
        .original
        .attrs
        .iter()
        .map(is_param_attr)
        .collect();
    assert_eq!(kept, [true, false], "`#[allow]` stays for rustc");

    let bad: Signature = parse_quote!(fn b(
        #[needed_for(a)] grad: &Tensor,
        #[needed_for()] x: Option<&Tensor>,
        #[needed_for(a)]
        #[needed_for(b)]
        y: Option<&Tensor>,
        #[original(z)] z: &Tensor,
        #[needed_for = "a"] w: Option<&Tensor>,
    ) -> Tensor);
    let errs = errors(|cx| {
        BackwardFn::from_syn(cx, &bad);
    });
    assert_eq!(
        errs,
        [
            "incoming gradient `grad` takes no attributes; `#[needed_for(..)]` and `#[original]` go on saved parameters",
            "`#[needed_for(..)]` needs at least one input name",
            "duplicate attribute `#[needed_for(..)]`",
            "`#[original]` takes no arguments",
            "expected `#[needed_for(input, ..)]`: the inputs whose gradients need this value",
        ]
    );
}

#[test]
fn gradient_lists_and_flag_types() {
    let sig: Signature = parse_quote!(fn b(grad: &Tensor) -> Result<(Tensor, Vec<Option<Tensor>>, Vec<Tensor>, Vec<f64>)>);
    let bwd = BackwardFn::from_syn(&Ctxt::new_checked(), &sig);
    let kinds: Vec<_> = bwd.output.grads.iter().map(|(_, k)| *k).collect();
    assert_eq!(
        kinds,
        [
            GradType::Tensor,
            GradType::VecOptionTensor,
            GradType::VecTensor,
            GradType::Other
        ]
    );
    assert_eq!(bool_array_len(&parse_quote!([bool; 3])), Some(3));
    assert_eq!(bool_array_len(&parse_quote!([bool; N])), None);
    assert_eq!(bool_array_len(&parse_quote!([u8; 3])), None);
    assert!(is_bool_slice_ref(&parse_quote!(&[bool])));
    assert!(!is_bool_slice_ref(&parse_quote!(&mut [bool])));
    assert!(is_input_metadata_ref(&parse_quote!(
        &autograd::graph::InputMetadata
    )));
    assert!(is_slice_ref_of(
        &parse_quote!(&[InputMetadata]),
        is_input_metadata
    ));
    assert!(is_tensor_slice_ref(&parse_quote!(&[Tensor])));
    assert!(!is_tensor_slice_ref(&parse_quote!(&Vec<Tensor>)));
}
