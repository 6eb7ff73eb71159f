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

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{FnArg, Ident, ItemFn, Pat, Path, ReturnType, Signature, Type};

use crate::attr::{CheckInput, DiffArgs};
use crate::ctxt::Ctxt;
use crate::expand::Names;
use crate::ir::{
    DiffFn, ParamKind, Source, is_option_tensor_ref, is_slice_ref_of, is_tensor, is_tensor_ref,
    is_tensor_slice_ref, option_inner, vec_inner,
};
use crate::{fallback, ir, symbol};

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
        let plan = check_jvp(&cx, &args, &fwd, &input.backward);
        if let (true, Some(plan)) = (cx.is_ok(), plan) {
            let generated = emit(&args, &fwd, &input.forward_path, &input.backward, &plan);
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

/// `&[Option<Tensor>]`.
fn is_option_tensor_slice_ref(ty: &Type) -> bool {
    is_slice_ref_of(ty, |t| option_inner(t).is_some_and(is_tensor))
}

/// The form of a tangent parameter of type `ty` for `input`, if it fits.
fn tangent_form(ty: &Type, input: &ir::Param<'_>) -> Option<TangentForm> {
    match input.kind {
        ParamKind::Tensors(_) if is_tensor_slice_ref(ty) => Some(TangentForm::Slice),
        ParamKind::Tensors(_) if is_option_tensor_slice_ref(ty) => Some(TangentForm::SliceOption),
        ParamKind::Tensors(_) => None,
        _ if is_option_tensor_ref(ty) => Some(TangentForm::Option),
        _ if !input.optional && is_tensor_ref(ty) => Some(TangentForm::Tensor),
        _ => None,
    }
}

/// Checks the jvp's parameters and return type against the forward's; errors go to `cx`.
fn check_jvp<'a>(
    cx: &Ctxt,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    jvp: &'a Signature,
) -> Option<JvpPlan<'a>> {
    let f = fwd.name();
    let mut originals = Vec::new();
    let params: Vec<(&Ident, &'a Type)> = jvp
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(p) => match &*p.pat {
                Pat::Ident(i) => {
                    originals.push(p.attrs.iter().find(|a| symbol::ORIGINAL.is(a.path())));
                    Some((&i.ident, &*p.ty))
                }
                other => {
                    cx.error_spanned_by(other, "`#[jvp]` parameters are plain names");
                    None
                }
            },
            FnArg::Receiver(_) => None,
        })
        .collect();
    let inputs: Vec<&ir::Param<'_>> = fwd.tensor_inputs().collect();
    // The tangents, one per tensor input, in order: `&Tensor` (zeros for an input without a
    // tangent, as PyTorch materialises them) or `Option<&Tensor>` (`None` then, so that a rule
    // can skip the term: an optional input's tangent is always that); for a `&[Tensor]` input,
    // one per element, `&[Tensor]` or `&[Option<Tensor>]` alike.
    let mut tangents = Vec::with_capacity(inputs.len());
    for (k, input) in inputs.iter().enumerate() {
        let expected = if matches!(input.kind, ParamKind::Tensors(_)) {
            "&[Tensor]` or `&[Option<Tensor>]"
        } else if input.optional {
            "Option<&Tensor>"
        } else {
            "&Tensor` or `Option<&Tensor>"
        };
        let form = params.get(k).and_then(|(_, ty)| tangent_form(ty, input));
        tangents.push(form.unwrap_or(TangentForm::Option));
        match params.get(k) {
            Some(_) if form.is_some() => {}
            Some((ident, ty)) => cx.error_spanned_by(
                ty,
                format!(
                    "`{}` is the tangent of `{}`, input {k} of `{f}`: expected `{expected}`",
                    ident.unraw(),
                    input.ident.unraw()
                ),
            ),
            None => cx.error_at(
                ir::params_end(jvp),
                format!(
                    "`#[jvp({f})]` takes one tangent per tensor input of `{f}` first: missing the tangent of `{}` (`{expected}`)",
                    input.ident.unraw()
                ),
            ),
        }
    }
    for attr in originals.iter().take(inputs.len()).flatten() {
        cx.error_spanned_by(
            attr,
            "`#[original]` applies to a named input after the tangents, not to a tangent",
        );
    }
    let mut named = Vec::new();
    for (n, (ident, ty)) in params.iter().enumerate().skip(inputs.len()) {
        let source = fwd.resolve(ident);
        let param = |i: usize| &fwd.params[i];
        if let Some(attr) = originals[n] {
            named.push(check_original(cx, args, fwd, attr, ident, ty)?);
            continue;
        }
        match source {
            Some(Source::Param(i)) if param(i).kind == ParamKind::Attr => {
                if ir::type_string(ty) != ir::type_string(param(i).ty) {
                    cx.error_spanned_by(
                        ty,
                        format!(
                            "`{}` has type `{}` in `{f}`",
                            ident.unraw(),
                            ir::type_string(param(i).ty)
                        ),
                    );
                }
                named.push(Named::Attr(i));
            }
            Some(Source::Param(i)) => {
                let (fits, expected) = match param(i).kind {
                    ParamKind::Tensors(_) => (is_tensor_slice_ref(ty), "&[Tensor]"),
                    _ if param(i).optional => (is_option_tensor_ref(ty), "Option<&Tensor>"),
                    _ => (is_tensor_ref(ty), "&Tensor"),
                };
                if !fits {
                    cx.error_spanned_by(
                        ty,
                        format!(
                            "`{}` is an input of `{f}`: expected `{expected}`",
                            ident.unraw()
                        ),
                    );
                }
                let (ParamKind::Tensor(k) | ParamKind::Tensors(k)) = param(i).kind else {
                    return None;
                };
                named.push(Named::Input(k));
            }
            Some(Source::Output(j)) => {
                let (fits, expected) = if fwd.output.vec {
                    (
                        is_tensor_slice_ref(ty),
                        "`&[Tensor]` (the outputs of a `Vec<Tensor>` forward, together)",
                    )
                } else {
                    (is_tensor_ref(ty), "`&Tensor`")
                };
                if !fits {
                    cx.error_spanned_by(
                        ty,
                        format!(
                            "`{}` is an output of `{f}`: expected {expected}",
                            ident.unraw()
                        ),
                    );
                }
                named.push(Named::Output(j));
            }
            Some(Source::Residual(k)) => {
                if !matches!(ty, Type::Reference(r) if r.mutability.is_none()) {
                    cx.error_spanned_by(
                        ty,
                        format!(
                            "`{}` is a residual of `{f}` (`save(..)`), taken by reference: expected `&{}`",
                            ident.unraw(),
                            ir::type_string(fwd.residuals[k].ty)
                        ),
                    );
                }
                named.push(Named::Residual(k, ty));
            }
            _ => {
                let mut known: Vec<String> = fwd
                    .params
                    .iter()
                    .map(|p| p.ident.unraw().to_string())
                    .collect();
                known.extend(fwd.output_names());
                known.extend(fwd.residuals.iter().map(|r| r.ident.unraw().to_string()));
                let what = if fwd.residuals.is_empty() {
                    "parameters and outputs"
                } else {
                    "parameters, outputs and residuals"
                };
                cx.error_spanned_by(
                    ident,
                    format!(
                        "`{}` names nothing of `{f}`: after the tangents, a `#[jvp]` takes `{f}`'s {what} by name ({})",
                        ident.unraw(),
                        known
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
    }
    let fallible = check_return(cx, fwd, jvp);
    Some(JvpPlan {
        tangents,
        named,
        fallible,
    })
}

/// A jvp parameter marked `#[original]`: a `dirty` tensor input of the forward, taken as
/// `&Tensor`.
fn check_original(
    cx: &Ctxt,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    attr: &syn::Attribute,
    ident: &Ident,
    ty: &Type,
) -> Option<Named<'static>> {
    let f = fwd.name();
    if !matches!(attr.meta, syn::Meta::Path(_)) {
        cx.error_spanned_by(attr, "`#[original]` takes no arguments");
        return None;
    }
    let dirty = args
        .dirty
        .as_ref()
        .is_some_and(|l| l.names.iter().any(|n| n == ident));
    let k = match fwd.resolve(ident) {
        Some(Source::Param(i)) => match fwd.params[i].kind {
            ParamKind::Tensor(k) if dirty => k,
            _ => {
                cx.error_spanned_by(
                    attr,
                    format!(
                        "`#[original]` gives the value a `dirty` input had before `{f}` modified it; `{}` is not listed in `dirty(..)`",
                        ident.unraw()
                    ),
                );
                return None;
            }
        },
        _ => {
            cx.error_spanned_by(
                ident,
                format!("`{}` names no input of `{f}`", ident.unraw()),
            );
            return None;
        }
    };
    if !is_tensor_ref(ty) {
        cx.error_spanned_by(
            ty,
            format!(
                "`{}` is `{f}`'s input before the write: expected `&Tensor`",
                ident.unraw()
            ),
        );
    }
    Some(Named::Original(k))
}

/// The jvp returns one tangent per tensor output: `Tensor` or a tuple of them, in a `Result`
/// when it can fail (then only for a fallible forward). Returns whether it is a `Result`.
fn check_return(cx: &Ctxt, fwd: &DiffFn<'_>, jvp: &Signature) -> bool {
    let f = fwd.name();
    let m = fwd.output.tensors.len();
    let expected = if fwd.output.vec {
        "Vec<Tensor>".to_string()
    } else if m == 1 {
        "Tensor".to_string()
    } else {
        format!("({})", vec!["Tensor"; m].join(", "))
    };
    let ReturnType::Type(_, ty) = &jvp.output else {
        cx.error_at(
            ir::params_end(jvp),
            format!(
                "`#[jvp({f})]` returns the tangent of each tensor output of `{f}`: `{expected}`"
            ),
        );
        return false;
    };
    let (inner, fallible) = match ir::result_ok_type(ty) {
        Some(inner) => (inner, true),
        None => (&**ty, false),
    };
    let ok = match inner {
        _ if fwd.output.vec => vec_inner(inner).is_some_and(is_tensor),
        Type::Tuple(t) => m > 1 && t.elems.len() == m && t.elems.iter().all(is_tensor),
        other => m == 1 && is_tensor(other),
    };
    if !ok {
        cx.error_spanned_by(
            ty,
            format!(
                "`#[jvp({f})]` returns the tangent of each tensor output of `{f}`: expected `{expected}` (or a `Result` of it)"
            ),
        );
    }
    if fallible && !fwd.output.fallible {
        cx.error_spanned_by(
            ty,
            format!("a fallible `#[jvp]` needs a fallible forward: `{f}` returns no `Result`"),
        );
    }
    fallible
}

/// The marker's jvp items.
fn emit(
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    fwd_path: &Path,
    jvp: &Signature,
    plan: &JvpPlan<'_>,
) -> TokenStream {
    let krate = args.krate();
    let last = &fwd_path.segments.last().expect("a path").ident;
    let loc = Span::mixed_site().located_at(last.span());
    let names = Names::of(last);
    let marker = crate::expand::sibling(fwd_path, &names.marker);
    let link = crate::expand::sibling(fwd_path, &names.link);
    let forward_ad = quote_spanned!(loc=> #krate::__private::forward_ad);
    let idents: Vec<&Ident> = fwd.params.iter().map(|p| p.ident).collect();
    let tys = (0..fwd.params.len()).map(|i| crate::expand::param_type(fwd_path, fwd, i, false));
    let ret = crate::expand::output_type(fwd_path, fwd);
    let tensor_params: Vec<&ir::Param<'_>> = fwd.tensor_inputs().collect();
    let tangent_list = tangent_list(&krate, &tensor_params, &plan.tangents, loc);
    // The attributes the jvp names, cloned before the forward takes them.
    let clones = plan.named.iter().filter_map(|n| match n {
        Named::Attr(i) => {
            let ident = fwd.params[*i].ident;
            let local = format_ident!("__jvp_{}", ident.unraw(), span = loc);
            Some(quote_spanned!(loc=> let #local = ::core::clone::Clone::clone(&#ident);))
        }
        _ => None,
    });
    let out_refs = output_refs(fwd, &krate, loc);
    let early_fail = early_fail(fwd, &forward_ad, (&marker, &link), &idents, &out_refs, loc);
    // The dirty inputs the jvp names `#[original]`, copied before the forward writes them.
    let originals = plan.named.iter().filter_map(|n| match n {
        Named::Original(k) => {
            let ident = tensor_params[*k].ident;
            let local = format_ident!("__jvp_original_{}", ident.unraw(), span = loc);
            Some(quote_spanned! {loc=>
                let #local = match #forward_ad::original(#ident) {
                    ::core::result::Result::Ok(__t) => __t,
                    ::core::result::Result::Err(__e) => #early_fail,
                };
            })
        }
        _ => None,
    });
    let clones = clones.chain(originals);
    let m = fwd.output.tensors.len();
    let outs: Vec<Ident> = (0..m)
        .map(|j| format_ident!("__o{}", j, span = loc))
        .collect();
    let value = format_ident!("__value", span = loc);
    let bind_outs = bind_outputs(fwd, &value, &outs, loc);
    // The forward, through its link; through `__autograd_call_keeping` (`#[backward]`'s
    // expansion emits it for a forward with `save(..)`) when the jvp names a residual, which
    // the forward then hands back beside its value.
    let residuals_named = plan.named.iter().any(|n| matches!(n, Named::Residual(..)));
    let kept = format_ident!("__kept", span = loc);
    let (forward_call, kept_residuals) = if residuals_named {
        let res_tys = (0..fwd.residuals.len()).map(|k| residual_type(fwd_path, fwd, k));
        let patterns = (0..fwd.residuals.len()).map(|k| {
            if plan
                .named
                .iter()
                .any(|n| matches!(n, Named::Residual(r, _) if *r == k))
            {
                let r = format_ident!("__r{}", k, span = loc);
                quote_spanned!(loc=> #r)
            } else {
                quote_spanned!(loc=> _)
            }
        });
        (
            quote_spanned! {loc=>
                let mut #kept: ::core::option::Option<(#(#res_tys,)*)> = ::core::option::Option::None;
                let #value = {
                    let _fw = #forward_ad::suspend();
                    <#marker>::__autograd_call_keeping((#(#idents,)*), ::core::option::Option::Some(&mut #kept))
                };
            },
            quote_spanned! {loc=>
                let (#(#patterns,)*) = #kept.expect("invariant: a forward that returns its value keeps its residuals");
            },
        )
    } else {
        (
            quote_spanned! {loc=>
                let #value = {
                    let _fw = #forward_ad::suspend();
                    <#marker as #link>::call(#(#idents),*)
                };
            },
            TokenStream::new(),
        )
    };
    let named = plan.named.iter().map(|n| match n {
        Named::Input(k) => {
            let ident = tensor_params[*k].ident;
            quote_spanned!(loc=> #ident)
        }
        Named::Attr(i) => {
            let local = format_ident!("__jvp_{}", fwd.params[*i].ident.unraw(), span = loc);
            quote_spanned!(loc=> #local)
        }
        Named::Output(j) => {
            let out = &outs[*j];
            quote_spanned!(loc=> #out)
        }
        Named::Original(k) => {
            let local = format_ident!(
                "__jvp_original_{}",
                tensor_params[*k].ident.unraw(),
                span = loc
            );
            quote_spanned!(loc=> &#local)
        }
        // Typed as the jvp declares it, so that a wrong type is reported against it.
        Named::Residual(k, ty) => {
            let (r, local) = (
                format_ident!("__r{}", k, span = loc),
                format_ident!("__residual{}", k, span = loc),
            );
            quote_spanned!(loc=> { let #local: #ty = &#r; #local })
        }
    });
    let jvp_ident = &jvp.ident;
    let tangent_args = &tangent_list.args;
    let call = quote_spanned!(loc=> #jvp_ident(#(#tangent_args,)* #(#named),*));
    let fail = if fwd.output.fallible {
        quote_spanned!(loc=> return ::core::result::Result::Err(::core::convert::Into::into(__e)))
    } else {
        quote_spanned!(loc=> { #forward_ad::fail_outputs(#out_refs, __e); return #value; })
    };
    let result = if plan.fallible {
        quote_spanned!(loc=> match #call {
            ::core::result::Result::Ok(__t) => __t,
            ::core::result::Result::Err(__e) => #fail,
        })
    } else {
        call
    };
    let set = if fwd.output.vec {
        let out = &outs[0];
        quote_spanned!(loc=> #forward_ad::set_vec_tangents(#out, __t))
    } else {
        let collect = if m == 1 {
            quote_spanned!(loc=> ::std::vec![::core::option::Option::Some(__t)])
        } else {
            let idx = (0..m).map(syn::Index::from);
            quote_spanned!(loc=> ::std::vec![#(::core::option::Option::Some(__t.#idx)),*])
        };
        quote_spanned!(loc=> #forward_ad::set_tangents(&[#(#outs),*], #collect))
    };
    let TangentList {
        inputs,
        zeros,
        build,
        locals,
        ..
    } = tangent_list;
    quote_spanned! {loc=>
        const _: () = {
            #[allow(unused_imports)]
            use #forward_ad::NoJvp as _;
            impl #marker {
                #[doc(hidden)]
                #[allow(dead_code)]
                pub(crate) const __AUTOGRAD_HAS_JVP: bool = true;

                #[doc(hidden)]
                #[allow(dead_code, clippy::all)]
                pub(crate) fn __autograd_jvp_call((#(#idents,)*): (#(#tys,)*)) #ret {
                    #build
                    let __tangents = match #forward_ad::tangents_of(#inputs, #zeros) {
                        ::core::result::Result::Ok(__t) => __t,
                        ::core::result::Result::Err(__e) => #early_fail,
                    };
                    #locals
                    #(#clones)*
                    #forward_call
                    #bind_outs
                    #kept_residuals
                    let __t = {
                        let _fw = #forward_ad::suspend();
                        #result
                    };
                    if let ::core::result::Result::Err(__e) = #set {
                        #fail
                    }
                    #value
                }
            }
        };
    }
}

/// The type of residual `k` of `save(..)`, through the alias beside the forward.
fn residual_type(fwd_path: &Path, fwd: &DiffFn<'_>, k: usize) -> TokenStream {
    let span = syn::spanned::Spanned::span(fwd.residuals[k].ty);
    let ident = format_ident!(
        "__autograd_{}_residual{}",
        fwd.ident.unraw(),
        k,
        span = span
    );
    let path = crate::expand::sibling(fwd_path, &ident);
    quote!(#path)
}

/// What `forward_ad::tangents_of` takes and what the jvp gets from its answer.
struct TangentList {
    /// The inputs, `&[Option<&Tensor>]`, one per element of a `&[Tensor]` input.
    inputs: TokenStream,
    /// Which get zeros without a tangent, `&[bool]`.
    zeros: TokenStream,
    /// The statements that build both where `&[Tensor]` inputs make them dynamic.
    build: TokenStream,
    /// The locals the `&[Tensor]` tangents are collected into.
    locals: TokenStream,
    /// The jvp's tangent arguments, one per tensor input.
    args: Vec<TokenStream>,
}

fn tangent_list(
    krate: &Path,
    inputs: &[&ir::Param<'_>],
    forms: &[TangentForm],
    loc: Span,
) -> TangentList {
    let item = |p: &ir::Param<'_>| {
        let ident = p.ident;
        if p.optional {
            quote_spanned!(loc=> #ident)
        } else {
            quote_spanned!(loc=> ::core::option::Option::Some(#ident))
        }
    };
    let slices = inputs
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Tensors(_)));
    let mut args = Vec::with_capacity(inputs.len());
    let mut locals = TokenStream::new();
    let mut singles = 0usize;
    let mut slices_before: Vec<&Ident> = Vec::new();
    for (k, (p, form)) in inputs.iter().zip(forms).enumerate() {
        let start = quote_spanned!(loc=> (#singles #(+ #slices_before.len())*));
        let ident = p.ident;
        args.push(match form {
            TangentForm::Tensor => quote_spanned!(loc=> __tangents[#start].as_ref().expect("invariant: tangents_of gives zeros where asked")),
            TangentForm::Option => quote_spanned!(loc=> __tangents[#start].as_ref()),
            TangentForm::SliceOption => {
                quote_spanned!(loc=> &__tangents[#start..#start + #ident.len()])
            }
            TangentForm::Slice => {
                let local = format_ident!("__tangents{}", k, span = loc);
                locals.extend(quote_spanned! {loc=>
                    let #local: ::std::vec::Vec<#krate::Tensor> = __tangents[#start..#start + #ident.len()]
                        .iter()
                        .flatten()
                        .cloned()
                        .collect();
                });
                quote_spanned!(loc=> &#local)
            }
        });
        if matches!(p.kind, ParamKind::Tensors(_)) {
            slices_before.push(ident);
        } else {
            singles += 1;
        }
    }
    if !slices {
        let items = inputs.iter().map(|p| item(p));
        let zeros = forms.iter().map(|f| f.zeros());
        return TangentList {
            inputs: quote_spanned!(loc=> &[#(#items),*]),
            zeros: quote_spanned!(loc=> &[#(#zeros),*]),
            build: TokenStream::new(),
            locals,
            args,
        };
    }
    let pushes = inputs.iter().zip(forms).map(|(p, form)| {
        let ident = p.ident;
        let zeros = form.zeros();
        if matches!(p.kind, ParamKind::Tensors(_)) {
            quote_spanned! {loc=>
                __inputs.extend(#ident.iter().map(::core::option::Option::Some));
                __zeros.resize(__inputs.len(), #zeros);
            }
        } else {
            let item = item(p);
            quote_spanned! {loc=>
                __inputs.push(#item);
                __zeros.push(#zeros);
            }
        }
    });
    TangentList {
        inputs: quote_spanned!(loc=> &__inputs),
        zeros: quote_spanned!(loc=> &__zeros),
        build: quote_spanned! {loc=>
            let mut __inputs: ::std::vec::Vec<::core::option::Option<&#krate::Tensor>> = ::std::vec::Vec::new();
            let mut __zeros: ::std::vec::Vec<bool> = ::std::vec::Vec::new();
            #(#pushes)*
        },
        locals,
        args,
    }
}

/// The outputs as `&[&Tensor]`, for the runtime's calls that take them.
fn output_refs(fwd: &DiffFn<'_>, krate: &Path, loc: Span) -> TokenStream {
    let outs: Vec<Ident> = (0..fwd.output.tensors.len())
        .map(|j| format_ident!("__o{}", j, span = loc))
        .collect();
    if fwd.output.vec {
        let out = &outs[0];
        quote_spanned!(loc=> &#out.iter().collect::<::std::vec::Vec<&#krate::Tensor>>())
    } else {
        quote_spanned!(loc=> &[#(#outs),*])
    }
}

/// What the jvp call does with an error before the forward ran (an input's failed tangent, the
/// `#[original]` copy's): returns it from a fallible forward; otherwise runs the forward and
/// leaves the error in its outputs' tangent slots.
fn early_fail(
    fwd: &DiffFn<'_>,
    forward_ad: &TokenStream,
    (marker, link): (&Path, &Path),
    idents: &[&Ident],
    out_refs: &TokenStream,
    loc: Span,
) -> TokenStream {
    if fwd.output.fallible {
        return quote_spanned!(loc=> return ::core::result::Result::Err(::core::convert::Into::into(__e)));
    }
    let value = format_ident!("__value", span = loc);
    let outs: Vec<Ident> = (0..fwd.output.tensors.len())
        .map(|j| format_ident!("__o{}", j, span = loc))
        .collect();
    let bind_outs = bind_outputs(fwd, &value, &outs, loc);
    quote_spanned!(loc=> {
        let #value = <#marker as #link>::call(#(#idents),*);
        #bind_outs
        #forward_ad::fail_outputs(#out_refs, __e);
        return #value;
    })
}

/// `let (__o0, ..) = ..;`: references to the tensor outputs in the forward's value (returning
/// an `Err` value as it is); for a `Vec<Tensor>`, `__o0` is the vector.
fn bind_outputs(fwd: &DiffFn<'_>, value: &Ident, outs: &[Ident], loc: Span) -> TokenStream {
    let ok = if fwd.output.fallible {
        quote_spanned!(loc=> match &#value {
            ::core::result::Result::Ok(__v) => __v,
            ::core::result::Result::Err(_) => return #value,
        })
    } else {
        quote_spanned!(loc=> &#value)
    };
    if !fwd.output.tuple {
        let out = &outs[0];
        return quote_spanned!(loc=> let #out: &_ = #ok;);
    }
    let pattern = fwd.output.elems.iter().map(|e| match e {
        Some(j) => {
            let out = &outs[*j];
            quote_spanned!(loc=> #out)
        }
        None => quote_spanned!(loc=> _),
    });
    quote_spanned!(loc=> let (#(#pattern,)*) = #ok;)
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
