//! `#[jvp(f)]`: a custom function's forward derivative (PyTorch's `autograd.Function.jvp`), and
//! the hidden `__check_jvp!` it reaches through `f`'s signature macro, as `#[backward(f)]`
//! reaches `__check_backward!` (see `backward.rs`).
//!
//! The jvp takes one tangent per tensor input of `f` first (`&Tensor`; `Option<&Tensor>` for an
//! optional input; `&[Tensor]` or `&[Option<Tensor>]` for a `&[Tensor]` input), then any of
//! `f`'s parameters, outputs (`result`, `result_0`, ..; `&[Tensor]` for a `Vec<Tensor>` forward)
//! and `save(..)` residuals (by reference) by name, and returns one tangent per tensor output
//! (`Tensor`, a tuple, or `Vec<Tensor>`, in a `Result` when it can fail). The check emits, on
//! `f`'s marker, the inherent items the link's `call` looks for (`forward_ad::NoJvp` is the
//! fallback): `__autograd_jvp_call` runs the forward as usual (with tangent propagation
//! suspended; through `__autograd_call_keeping`, which hands the residuals back, when the jvp
//! names one), then the jvp, and sets the outputs' tangents.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, ItemFn, Path, Type};

use crate::attr::{CheckInput, DiffArgs};
use crate::ctxt::Ctxt;
use crate::expand::Names;
use crate::ir::DiffFn;
use crate::{fallback, symbol};

mod check;
mod emit;

/// `#[jvp(path)]`: the function as written, and the hand-over of its signature to the forward's
/// signature macro.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let e = syn::Error::new(e.span(), format!("`#[jvp]` applies to free functions: {e}"));
            return fallback::item_with_error(item, e);
        }
    };
    let path: Path = match syn::parse::Parser::parse2(Path::parse_mod_style, args.clone()) {
        Ok(p) if !p.segments.is_empty() => p,
        _ => {
            let e = syn::Error::new_spanned(
                &args,
                "expected `#[jvp(f)]`, naming the `#[differentiable]` function",
            );
            return fallback::item_with_error(quote!(#func), e);
        }
    };
    if let Some(FnArg::Receiver(r)) = func.sig.inputs.first() {
        let e = syn::Error::new_spanned(
            r,
            "methods are not supported by `#[jvp]`; write a plain free function",
        );
        return fallback::item_with_error(quote!(#func), e);
    }
    let last = &path.segments.last().expect("checked non-empty").ident;
    let signature = if crate::expand::aliasable(last) {
        path.clone()
    } else {
        crate::expand::sibling(&path, &Names::of(last).signature)
    };
    let ident = &func.sig.ident;
    let sig = &func.sig;
    let mut stripped = func.clone();
    for arg in &mut stripped.sig.inputs {
        if let FnArg::Typed(p) = arg {
            p.attrs.retain(|a| !symbol::ORIGINAL.is(a.path()));
        }
    }
    quote! {
        #stripped
        #signature! { @jvp { #path } { #ident } { #sig } }
    }
}

/// `__check_jvp!`: checks the jvp against its forward, then emits the marker's jvp items.
pub(crate) fn check(input: TokenStream) -> TokenStream {
    let input: CheckInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.into_compile_error(),
    };
    let args: DiffArgs = match syn::parse2(input.args.clone()) {
        Ok(a) => a,
        Err(e) => return e.into_compile_error(),
    };
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn_hand_written(&cx, &input.forward, args.save());
    if cx.is_ok() {
        let plan = check::check_jvp(&cx, &args, &fwd, &input.backward);
        if let (true, Some(plan)) = (cx.is_ok(), plan) {
            let generated = emit::emit(&args, &fwd, &input.forward_path, &input.backward, &plan);
            return cx
                .check()
                .map_or_else(|e| e.into_compile_error(), |()| generated);
        }
    }
    let err = cx.check().err().map(syn::Error::into_compile_error);
    // Marks the jvp used, so that its errors come alone.
    let ident = &input.backward.ident;
    let used = input
        .backward
        .generics
        .params
        .is_empty()
        .then(|| quote!(const _: () = { let _ = #ident; };));
    quote!(#err #used)
}

/// What a jvp parameter after the tangents is.
enum Named<'a> {
    /// A tensor input of the forward (its `&Tensor`, `Option<&Tensor>` or `&[Tensor]`).
    Input(usize),
    /// A non-tensor parameter, passed by value (cloned before the forward runs).
    Attr(usize),
    /// Tensor output number `.0` (for a `Vec<Tensor>` forward, all of them, as `&[Tensor]`).
    Output(usize),
    /// `#[original]`: tensor input `.0`, a `dirty` one, as it was before the forward wrote it
    /// (a copy taken first, PyTorch's `original_self_p`).
    Original(usize),
    /// Residual `.0` of `save(..)`, by reference: the parameter's type as written, checked by
    /// rustc where the jvp declares it.
    Residual(usize, &'a Type),
}

/// How the jvp takes the tangent of one tensor input.
#[derive(Copy, Clone, PartialEq, Eq)]
enum TangentForm {
    /// `&Tensor`: zeros for an input without a tangent, as PyTorch materialises them.
    Tensor,
    /// `Option<&Tensor>`: `None` then, so that a rule can skip the term.
    Option,
    /// `&[Tensor]` for a `&[Tensor]` input: one tangent per element, zeros where it has none.
    Slice,
    /// `&[Option<Tensor>]` for a `&[Tensor]` input: `None` for an element without a tangent.
    SliceOption,
}

impl TangentForm {
    /// Whether an input without a tangent gets zeros.
    fn zeros(self) -> bool {
        matches!(self, TangentForm::Tensor | TangentForm::Slice)
    }
}

/// The checked jvp.
struct JvpPlan<'a> {
    /// Per tensor input: how its tangent is taken.
    tangents: Vec<TangentForm>,
    named: Vec<Named<'a>>,
    /// Its return type is a `Result`.
    fallible: bool,
}

#[cfg(test)]
mod tests {
    use quote::quote;

    fn check_errors(forward: proc_macro2::TokenStream, jvp: proc_macro2::TokenStream) -> String {
        check_with(quote!(), forward, jvp)
    }

    fn check_with(
        args: proc_macro2::TokenStream,
        forward: proc_macro2::TokenStream,
        jvp: proc_macro2::TokenStream,
    ) -> String {
        let f: syn::Signature = syn::parse2(forward).unwrap();
        let j: syn::Signature = syn::parse2(jvp).unwrap();
        let ident = &j.ident;
        let out = super::check(quote!({ #args } { #f } { f } { #ident } { #j }));
        out.to_string()
    }

    #[test]
    fn a_slice_input_takes_a_slice_of_tangents() {
        let forward = quote!(fn f(xs: &[Tensor], d: usize) -> Result<Tensor>);
        for tangent in [quote!(&[Tensor]), quote!(&[Option<Tensor>])] {
            let out = check_errors(
                forward.clone(),
                quote!(fn f_jvp(xs_t: #tangent, xs: &[Tensor], d: usize) -> Result<Tensor>),
            );
            assert!(out.contains("__AUTOGRAD_HAS_JVP"), "{out}");
            assert!(!out.contains("compile_error"), "{out}");
        }
        let out = check_errors(
            forward.clone(),
            quote!(fn f_jvp(xs_t: &Tensor) -> Result<Tensor>),
        );
        assert!(
            out.contains("expected `&[Tensor]` or `&[Option<Tensor>]`"),
            "{out}"
        );
        let out = check_errors(
            forward,
            quote!(fn f_jvp(xs_t: &[Tensor], xs: &Tensor) -> Result<Tensor>),
        );
        assert!(
            out.contains("`xs` is an input of `f`: expected `&[Tensor]`"),
            "{out}"
        );
    }

    #[test]
    fn a_vec_forward_returns_a_vec_of_tangents() {
        let forward = quote!(fn f(x: &Tensor) -> Result<Vec<Tensor>>);
        let out = check_errors(
            forward.clone(),
            quote!(fn f_jvp(x_t: &Tensor, result: &[Tensor]) -> Result<Vec<Tensor>>),
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("set_vec_tangents"), "{out}");
        let out = check_errors(
            forward,
            quote!(fn f_jvp(x_t: &Tensor, result: &Tensor) -> Tensor),
        );
        assert!(out.contains("expected `&[Tensor]` (the outputs"), "{out}");
        assert!(out.contains("expected `Vec<Tensor>`"), "{out}");
    }

    #[test]
    fn a_residual_is_named_by_reference() {
        let forward = quote!(fn f(x: &Tensor) -> Result<(Tensor, Vec<usize>)>);
        let out = check_with(
            quote!(save(pos)),
            forward.clone(),
            quote!(fn f_jvp(x_t: &Tensor, pos: &[usize]) -> Result<Tensor>),
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("__autograd_call_keeping"), "{out}");
        let out = check_with(
            quote!(save(pos)),
            forward.clone(),
            quote!(fn f_jvp(x_t: &Tensor, pos: Vec<usize>) -> Result<Tensor>),
        );
        assert!(
            out.contains("taken by reference: expected `&Vec<usize>`"),
            "{out}"
        );
        let out = check_with(
            quote!(save(pos)),
            forward,
            quote!(fn f_jvp(x_t: &Tensor, q: &[usize]) -> Result<Tensor>),
        );
        assert!(
            out.contains("parameters, outputs and residuals by name (`x`, `result`, `pos`)"),
            "{out}"
        );
    }

    #[test]
    fn a_tangent_of_the_wrong_type_is_reported() {
        let out = check_errors(
            quote!(fn f(x: &Tensor, s: f64) -> Tensor),
            quote!(fn f_jvp(x_t: Tensor, x: &Tensor) -> Tensor),
        );
        assert!(out.contains("is the tangent of `x`"), "{out}");
    }

    #[test]
    fn an_unknown_name_lists_what_fits() {
        let out = check_errors(
            quote!(fn f(x: &Tensor, s: f64) -> Tensor),
            quote!(fn f_jvp(x_t: &Tensor, y: &Tensor) -> Tensor),
        );
        assert!(out.contains("`y` names nothing of `f`"), "{out}");
        assert!(out.contains("`x`, `s`, `result`"), "{out}");
    }

    #[test]
    fn one_tangent_per_output() {
        let out = check_errors(
            quote!(fn f(x: &Tensor) -> (Tensor, Tensor)),
            quote!(fn f_jvp(x_t: &Tensor) -> Tensor),
        );
        assert!(out.contains("expected `(Tensor, Tensor)`"), "{out}");
    }

    #[test]
    fn a_valid_jvp_emits_the_marker_items() {
        let out = check_errors(
            quote!(fn f(x: &Tensor, s: f64) -> Result<Tensor>),
            quote!(fn f_jvp(x_t: &Tensor, x: &Tensor, s: f64, result: &Tensor) -> Result<Tensor>),
        );
        assert!(out.contains("__AUTOGRAD_HAS_JVP"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }
}
