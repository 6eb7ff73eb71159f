//! Emits a checked `#[jvp]`'s items on its forward's marker: `__autograd_jvp_call`, which runs
//! the forward with tangents suspended, then the jvp, and sets the outputs' tangents.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Ident, Path, Signature};

use super::{JvpPlan, Named, TangentForm};
use crate::attr::DiffArgs;
use crate::expand::Names;
use crate::ir::{self, DiffFn, ParamKind};

/// The marker's jvp items.
pub(super) fn emit(
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
    let out_refs = output_refs(fwd, &krate, loc);
    let early_fail = early_fail(fwd, &forward_ad, (&marker, &link), &idents, &out_refs, loc);
    let locals = named_locals(
        &krate,
        fwd,
        plan,
        &tensor_params,
        &forward_ad,
        &early_fail,
        loc,
    );
    let m = fwd.output.tensors.len();
    let outs: Vec<Ident> = (0..m)
        .map(|j| format_ident!("__o{}", j, span = loc))
        .collect();
    let value = format_ident!("__value", span = loc);
    let bind_outs = bind_outputs(fwd, &value, &outs, loc);
    let (forward_call, kept_residuals) = forward_call(
        fwd,
        fwd_path,
        plan,
        (&marker, &link),
        &idents,
        &forward_ad,
        loc,
    );
    let named = named_args(fwd, plan, &tensor_params, &outs, loc);
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
    let set = set_tangents(fwd, &forward_ad, &outs, loc);
    let TangentList {
        inputs,
        zeros,
        build,
        locals: tangent_locals,
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
                    #tangent_locals
                    #locals
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

/// The locals the jvp's named values need before the forward runs: the attributes it names,
/// cloned before the forward takes them, and the dirty inputs it names `#[original]`, copied
/// before the forward writes them.
fn named_locals(
    krate: &Path,
    fwd: &DiffFn<'_>,
    plan: &JvpPlan<'_>,
    tensor_params: &[&ir::Param<'_>],
    forward_ad: &TokenStream,
    early_fail: &TokenStream,
    loc: Span,
) -> TokenStream {
    plan.named
        .iter()
        .filter_map(|n| match n {
            Named::Attr(i) => {
                let ident = fwd.params[*i].ident;
                let local = format_ident!("__jvp_{}", ident.unraw(), span = loc);
                Some(quote_spanned!(loc=> let #local = ::core::clone::Clone::clone(&#ident);))
            }
            Named::Original(k) => {
                let ident = tensor_params[*k].ident;
                let local = format_ident!("__jvp_original_{}", ident.unraw(), span = loc);
                // The value only (the rule reads no tangent of it): copied with propagation
                // suspended, so no tangent is copied along.
                Some(quote_spanned! {loc=>
                    let #local = match {
                        let _fw = #forward_ad::suspend();
                        #krate::Tensor::copy(#ident)
                    } {
                        ::core::result::Result::Ok(__t) => __t,
                        ::core::result::Result::Err(__e) => #early_fail,
                    };
                })
            }
            _ => None,
        })
        .collect()
}

/// The forward, through its link; through `__autograd_call_keeping` (`#[backward]`'s expansion
/// emits it for a forward with `save(..)`) when the jvp names a residual, which the forward then
/// hands back beside its value (the second part binds them, `__r{k}`).
fn forward_call(
    fwd: &DiffFn<'_>,
    fwd_path: &Path,
    plan: &JvpPlan<'_>,
    (marker, link): (&Path, &Path),
    idents: &[&Ident],
    forward_ad: &TokenStream,
    loc: Span,
) -> (TokenStream, TokenStream) {
    let value = format_ident!("__value", span = loc);
    let residuals_named = plan.named.iter().any(|n| matches!(n, Named::Residual(..)));
    if !residuals_named {
        let call = quote_spanned! {loc=>
            let #value = {
                let _fw = #forward_ad::suspend();
                <#marker as #link>::call(#(#idents),*)
            };
        };
        return (call, TokenStream::new());
    }
    let kept = format_ident!("__kept", span = loc);
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
}

/// The jvp's arguments after the tangents, one per named value.
fn named_args(
    fwd: &DiffFn<'_>,
    plan: &JvpPlan<'_>,
    tensor_params: &[&ir::Param<'_>],
    outs: &[Ident],
    loc: Span,
) -> Vec<TokenStream> {
    plan.named
        .iter()
        .map(|n| match n {
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
        })
        .collect()
}

/// Sets the jvp's tangents (`__t`) on the outputs.
fn set_tangents(
    fwd: &DiffFn<'_>,
    forward_ad: &TokenStream,
    outs: &[Ident],
    loc: Span,
) -> TokenStream {
    if fwd.output.vec {
        let out = &outs[0];
        return quote_spanned!(loc=> #forward_ad::set_vec_tangents(#out, __t));
    }
    let collect = if outs.len() == 1 {
        quote_spanned!(loc=> ::std::vec![::core::option::Option::Some(__t)])
    } else {
        let idx = (0..outs.len()).map(syn::Index::from);
        quote_spanned!(loc=> ::std::vec![#(::core::option::Option::Some(__t.#idx)),*])
    };
    quote_spanned!(loc=> #forward_ad::set_tangents(&[#(#outs),*], #collect))
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
