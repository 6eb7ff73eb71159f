//! `#[differentiable] impl Op { fn forward(&self, ..) fn backward(&self, ..) }`: a differentiable
//! function that carries configuration (a closure, a module's settings) in `self`.
//!
//! The impl is rewritten into what a user would write by hand: a free forward taking the
//! configuration as its first attribute (`__autograd_self: &Op`), a free `#[backward]` taking it
//! after the incoming gradients, and `impl Op { fn apply(&self, ..) }` calling the forward. The
//! pair is then expanded by the ordinary `#[differentiable]` / `#[backward]` macros, so the
//! configuration is an attribute like any other: cloned into the node only when one is recorded,
//! and checked by rustc to be `Clone + Send + Sync + 'static`.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{FnArg, Ident, ImplItem, ImplItemFn, ItemImpl, Pat, Type};

use crate::attr::DiffArgs;
use crate::symbol;

/// The local that stands for `self` in the rewritten functions.
const SELF: &str = "__autograd_self";

pub(crate) fn expand(args: TokenStream, item: &ItemImpl) -> syn::Result<TokenStream> {
    let opts: DiffArgs = syn::parse2(args.clone())?;
    let (self_ty, type_ident) = named_type(&opts, item)?;
    let (forward, backward, others) = methods(item, type_ident)?;
    let fwd_self = receiver(forward)?;
    let bwd_self = receiver(backward)?;

    let base = snake(&type_ident.to_string());
    let fwd_name = format_ident!("__autograd_impl_{}", base, span = forward.sig.ident.span());
    let bwd_name = format_ident!(
        "__autograd_impl_{}_backward",
        base,
        span = backward.sig.ident.span()
    );
    let self_param = |span: Span| {
        let ident = format_ident!("{}", SELF, span = span);
        quote_spanned!(span=> #ident: &#self_ty)
    };

    // The forward: `self` becomes the first attribute.
    let fwd_rest: Vec<&FnArg> = forward.sig.inputs.iter().skip(1).collect();
    let fwd_param = self_param(fwd_self);
    let fwd_ret = &forward.sig.output;
    // With `save(..)`, `apply` returns the outputs without the residuals, as the free forward's
    // public wrapper does.
    let apply_ret = crate::ir::public_return(&forward.sig, opts.save())
        .unwrap_or_else(|| fwd_ret.to_token_stream());
    let fwd_body = replace_self(forward.block.to_token_stream());
    let fwd_attrs = &forward.attrs;
    let name_opt = opts.name.is_none().then(|| {
        let name = syn::LitStr::new(&format!("{type_ident}Backward0"), type_ident.span());
        quote!(name = #name)
    });
    let sep = (!args.is_empty() && name_opt.is_some()).then(|| quote!(,));
    let krate = opts.krate();

    // The backward: `self` after the incoming gradients.
    let bwd_inputs: Vec<&FnArg> = backward.sig.inputs.iter().skip(1).collect();
    let grads = bwd_inputs
        .iter()
        .take_while(|a| param_name(a).is_some_and(is_grad_name))
        .count();
    let (bwd_grads, bwd_saved) = bwd_inputs.split_at(grads);
    let bwd_param = self_param(bwd_self);
    let bwd_ret = &backward.sig.output;
    let bwd_body = replace_self(backward.block.to_token_stream());
    let bwd_attrs = &backward.attrs;

    // `apply`: the forward's parameters after `self`, as the public method.
    let vis = &forward.vis;
    let arg_names = arg_names(&fwd_rest)?;
    let doc = format!(
        "Applies `{type_ident}` as one differentiable op (PyTorch's `Function.apply`): its `forward` runs with recording off, and one `{type_ident}Backward0` node (unless renamed) keeps a clone of `self` for its `backward`."
    );
    let attrs = &item.attrs;
    Ok(quote! {
        #(#attrs)*
        impl #self_ty {
            #(#fwd_attrs)*
            #[doc = ""]
            #[doc = #doc]
            #vis fn apply(&self, #(#fwd_rest),*) #apply_ret {
                #fwd_name(self, #(#arg_names),*)
            }

            #(#others)*
        }

        #[doc(hidden)]
        #[#krate::differentiable(#args #sep #name_opt)]
        #[allow(non_snake_case)]
        fn #fwd_name(#fwd_param, #(#fwd_rest),*) #fwd_ret #fwd_body

        #[doc(hidden)]
        #[#krate::backward(#fwd_name)]
        #(#bwd_attrs)*
        #[allow(non_snake_case)]
        fn #bwd_name(#(#bwd_grads,)* #bwd_param, #(#bwd_saved),*) #bwd_ret #bwd_body
    })
}

/// The impl's type, after the checks on the options and the impl itself: no `derive`, an
/// inherent impl, no generics, a named type.
fn named_type<'a>(opts: &DiffArgs, item: &'a ItemImpl) -> syn::Result<(&'a Type, &'a Ident)> {
    if let Some(span) = opts.derive {
        return Err(syn::Error::new(
            span,
            "`derive` is not supported on an `impl` block: write `fn backward(&self, ..)` in it, or derive a free function",
        ));
    }
    if let Some((_, path, _)) = &item.trait_ {
        return Err(syn::Error::new_spanned(
            path,
            "`#[differentiable]` applies to an inherent `impl` block (`impl Op { .. }`), not a trait impl",
        ));
    }
    if !item.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &item.generics,
            "`#[differentiable]` on an `impl` block takes no generics",
        ));
    }
    let self_ty = &item.self_ty;
    let Type::Path(type_path) = &**self_ty else {
        return Err(syn::Error::new_spanned(
            self_ty,
            "`#[differentiable]` on an `impl` block needs a named type (`impl Op { .. }`)",
        ));
    };
    let type_ident = &type_path
        .path
        .segments
        .last()
        .ok_or_else(|| syn::Error::new_spanned(self_ty, "expected a type name"))?
        .ident;
    Ok((self_ty, type_ident))
}

/// `fn forward` and `fn backward`, and the impl's other items (kept on the type as written).
fn methods<'a>(
    item: &'a ItemImpl,
    type_ident: &Ident,
) -> syn::Result<(&'a ImplItemFn, &'a ImplItemFn, Vec<&'a ImplItem>)> {
    let mut forward = None;
    let mut backward = None;
    let mut others = Vec::new();
    for it in &item.items {
        match it {
            ImplItem::Fn(f) if f.sig.ident == "forward" => forward = Some(f),
            ImplItem::Fn(f) if f.sig.ident == "backward" => backward = Some(f),
            other => others.push(other),
        }
    }
    let brace = item.brace_token.span.close();
    let forward = forward.ok_or_else(|| {
        syn::Error::new(
            brace,
            format!(
                "a `#[differentiable]` impl defines `fn forward(&self, ..)` for `{type_ident}`"
            ),
        )
    })?;
    let backward = backward.ok_or_else(|| {
        syn::Error::new(
            brace,
            format!(
                "a `#[differentiable]` impl defines `fn backward(&self, grad: &Tensor, ..)` for `{type_ident}`"
            ),
        )
    })?;
    Ok((forward, backward, others))
}

/// The forward's parameter names after `self`, as `apply` passes them on.
fn arg_names(fwd_rest: &[&FnArg]) -> syn::Result<Vec<TokenStream>> {
    fwd_rest
        .iter()
        .map(|a| match a {
            FnArg::Typed(p) => match &*p.pat {
                Pat::Ident(i) => Ok(i.ident.to_token_stream()),
                pat => Err(syn::Error::new_spanned(
                    pat,
                    "a `#[differentiable]` forward's parameters are plain names",
                )),
            },
            FnArg::Receiver(r) => Err(syn::Error::new_spanned(r, "one receiver only")),
        })
        .collect()
}

/// The span of `&self`, the receiver both methods take.
fn receiver(f: &ImplItemFn) -> syn::Result<Span> {
    match f.sig.inputs.first() {
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none() => {
            Ok(r.self_token.span)
        }
        Some(other) => Err(syn::Error::new_spanned(
            other,
            format!("`{}` takes `&self` first", f.sig.ident),
        )),
        None => Err(syn::Error::new_spanned(
            &f.sig,
            format!("`{}` takes `&self` first", f.sig.ident),
        )),
    }
}

fn param_name(a: &FnArg) -> Option<String> {
    match a {
        FnArg::Typed(p) => match &*p.pat {
            Pat::Ident(i) => Some(i.ident.to_string()),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    }
}

/// `grad`, `grad_*`, `_grad*`: an incoming gradient's name.
fn is_grad_name(name: String) -> bool {
    let name = name.trim_start_matches('_');
    let grad = symbol::GRAD.as_str();
    name == grad || name.starts_with(&format!("{grad}_"))
}

/// `self` in a method body, as the rewritten function's `__autograd_self` (spanned where `self`
/// was; a `self::` path is left alone).
fn replace_self(tokens: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    for (i, t) in trees.iter().enumerate() {
        match t {
            TokenTree::Ident(id) if id == "self" => {
                let path = matches!(
                    (trees.get(i + 1), trees.get(i + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && b.as_char() == ':'
                );
                if path {
                    out.push(t.clone());
                } else {
                    out.push(TokenTree::Ident(proc_macro2::Ident::new(SELF, id.span())));
                }
            }
            TokenTree::Group(g) => {
                let mut group = proc_macro2::Group::new(g.delimiter(), replace_self(g.stream()));
                group.set_span(g.span());
                out.push(TokenTree::Group(group));
            }
            other => out.push(other.clone()),
        }
    }
    out.into_iter().collect()
}

/// `LeakyRelu` → `leaky_relu`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_is_replaced_but_not_in_paths() {
        let out = replace_self(quote!(self.factor * self::K + f(self)));
        assert_eq!(
            out.to_string(),
            "__autograd_self . factor * self :: K + f (__autograd_self)"
        );
    }

    #[test]
    fn names() {
        assert_eq!(snake("LeakyRelu"), "leaky_relu");
        assert!(is_grad_name("grad".into()) && is_grad_name("_grad_out".into()));
        assert!(!is_grad_name("gradient".into()) && !is_grad_name("x".into()));
    }
}
