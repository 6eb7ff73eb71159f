//! Code generation: `quote!` only, infallible, run on validated IR. This file emits what
//! `#[differentiable]` adds next to the user's function (the public wrapper, the renamed body, the
//! marker type, the link trait and the signature macro); `node.rs` emits the graph node and
//! `backward/` what `#[backward]` adds (the link trait's `call`; in `backward/outputs.rs` what a
//! custom function's outputs become, in `backward/saving.rs` what the node keeps).

mod backward;
pub(crate) mod derive;
mod fusion;
mod node;
pub(crate) mod rule;

pub(crate) use backward::{backward_attr, link_impl, link_stub};

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Attribute, Ident, ItemFn, Path};

use crate::attr::DiffArgs;
use crate::ir::{self, BackwardFn, DiffFn, Param, ParamKind, Source};
use crate::symbol;

/// The hidden items that link a forward to its backward, all derived from the forward's name.
pub(crate) struct Names {
    /// `__autograd_f_forward`: the user's function, renamed.
    pub(crate) forward_fn: Ident,
    /// `__autograd_f_marker`: the type the backward implements the link trait for.
    pub(crate) marker: Ident,
    /// `__autograd_f_backward`: the link trait; its one method records the node.
    pub(crate) link: Ident,
    /// `__autograd_f_signature!`: forwards the forward's signature to `__check_backward!`.
    pub(crate) signature: Ident,
}

/// `__autograd_f_param{i}`: the type of the forward's parameter `i`, declared where the forward
/// is, so that the backward's expansion names it without resolving it again.
pub(crate) fn param_alias(fwd: &Ident, i: usize) -> Ident {
    format_ident!("__autograd_{}_param{}", fwd.unraw(), i)
}

/// `__autograd_f_param{i}_target`: `X` for a borrowed attribute `&X` (saved as `X::Owned`).
pub(crate) fn target_alias(fwd: &Ident, i: usize) -> Ident {
    format_ident!("__autograd_{}_param{}_target", fwd.unraw(), i)
}

/// `__autograd_f_output`: the forward's return type, declared where the forward is.
pub(crate) fn output_alias(fwd: &Ident) -> Ident {
    format_ident!("__autograd_{}_output", fwd.unraw())
}

/// The lifetime a type alias declares for the elided lifetimes of a parameter type.
const ALIAS_LIFETIME: &str = "'__autograd";

/// `ty` with each elided lifetime (`&T`, `'_`) named [`ALIAS_LIFETIME`], and whether there was
/// one. Elided lifetimes inside function pointers and `Fn(..)` sugar are their own (higher-ranked)
/// and stay as written.
fn name_elided_lifetimes(ty: &syn::Type) -> (syn::Type, bool) {
    fn lifetime(l: &mut Option<syn::Lifetime>, span: proc_macro2::Span, found: &mut bool) {
        match l {
            Some(l) if l.ident != "_" => {}
            _ => {
                *l = Some(syn::Lifetime::new(ALIAS_LIFETIME, span));
                *found = true;
            }
        }
    }
    fn walk(ty: &mut syn::Type, found: &mut bool) {
        match ty {
            syn::Type::Reference(r) => {
                lifetime(&mut r.lifetime, r.and_token.span, found);
                walk(&mut r.elem, found);
            }
            syn::Type::Slice(s) => walk(&mut s.elem, found),
            syn::Type::Array(a) => walk(&mut a.elem, found),
            syn::Type::Paren(p) => walk(&mut p.elem, found),
            syn::Type::Group(g) => walk(&mut g.elem, found),
            syn::Type::Ptr(p) => walk(&mut p.elem, found),
            syn::Type::Tuple(t) => t.elems.iter_mut().for_each(|e| walk(e, found)),
            syn::Type::Path(p) => {
                if let Some(q) = &mut p.qself {
                    walk(&mut q.ty, found);
                }
                for seg in &mut p.path.segments {
                    let syn::PathArguments::AngleBracketed(args) = &mut seg.arguments else {
                        continue;
                    };
                    for arg in &mut args.args {
                        match arg {
                            syn::GenericArgument::Type(t) => walk(t, found),
                            syn::GenericArgument::Lifetime(l) if l.ident == "_" => {
                                *l = syn::Lifetime::new(ALIAS_LIFETIME, l.apostrophe);
                                *found = true;
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut ty = ty.clone();
    let mut found = false;
    walk(&mut ty, &mut found);
    (ty, found)
}

/// The type of forward parameter `i` (or of its borrowed target, `target`) as the backward's
/// expansion names it: the alias beside the forward, spanned on the type the user wrote.
pub(crate) fn param_type(fwd_path: &Path, fwd: &DiffFn<'_>, i: usize, target: bool) -> TokenStream {
    let ty = fwd.params[i].ty;
    let (ident, ty) = if target {
        let Some(x) = borrowed_target(ty) else {
            return TokenStream::new();
        };
        (target_alias(fwd.ident, i), x)
    } else {
        (param_alias(fwd.ident, i), ty)
    };
    let span = syn::spanned::Spanned::span(ty);
    let path = sibling(fwd_path, &Ident::new(&ident.to_string(), span));
    if name_elided_lifetimes(ty).1 {
        quote_spanned!(span=> #path<'_>)
    } else {
        quote!(#path)
    }
}

/// The forward's return type as the backward's expansion names it.
pub(crate) fn output_type(fwd_path: &Path, fwd: &DiffFn<'_>) -> TokenStream {
    match (fwd.output.original, output_path(fwd_path, fwd)) {
        (syn::ReturnType::Type(arrow, _), Some(path)) => quote!(#arrow #path),
        _ => TokenStream::new(),
    }
}

/// The forward's return type, through the alias beside it (`None`: it returns `()`).
pub(crate) fn output_path(fwd_path: &Path, fwd: &DiffFn<'_>) -> Option<Path> {
    match fwd.output.original {
        syn::ReturnType::Type(_, ty) => {
            let span = syn::spanned::Spanned::span(ty);
            let ident = output_alias(fwd.ident);
            Some(sibling(fwd_path, &Ident::new(&ident.to_string(), span)))
        }
        syn::ReturnType::Default => None,
    }
}

/// The aliases [`param_type`] and [`output_type`] name.
fn type_aliases(fwd: &DiffFn<'_>, cfg: &[&Attribute]) -> TokenStream {
    let alias = |ident: Ident, ty: &syn::Type| {
        let (ty, lifetime) = name_elided_lifetimes(ty);
        let generics = lifetime.then(|| {
            let l = syn::Lifetime::new(ALIAS_LIFETIME, proc_macro2::Span::call_site());
            quote!(<#l>)
        });
        quote! {
            #(#cfg)*
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code, private_interfaces)]
            pub(crate) type #ident #generics = #ty;
        }
    };
    let mut out = TokenStream::new();
    for (i, p) in fwd.params.iter().enumerate() {
        out.extend(alias(param_alias(fwd.ident, i), p.ty));
        if let (ParamKind::Attr, Some(x)) = (p.kind, borrowed_target(p.ty)) {
            out.extend(alias(target_alias(fwd.ident, i), x));
        }
    }
    if let syn::ReturnType::Type(_, ty) = fwd.output.original {
        out.extend(alias(
            output_alias(fwd.ident),
            fwd.output.public.as_ref().unwrap_or(ty),
        ));
    }
    for (k, r) in fwd.residuals.iter().enumerate() {
        out.extend(alias(residual_alias(fwd.ident, k), r.ty));
    }
    out
}

/// `__autograd_f_residual{k}`: the type of residual `k` of `save(..)`, declared beside the
/// forward.
pub(crate) fn residual_alias(fwd: &Ident, k: usize) -> Ident {
    format_ident!("__autograd_{}_residual{}", fwd.unraw(), k)
}

/// The type of residual `k` as the backward's expansion names it.
pub(crate) fn residual_type(fwd_path: &Path, fwd: &DiffFn<'_>, k: usize) -> TokenStream {
    let span = syn::spanned::Spanned::span(fwd.residuals[k].ty);
    let ident = residual_alias(fwd.ident, k);
    let path = sibling(fwd_path, &Ident::new(&ident.to_string(), span));
    quote!(#path)
}

impl Names {
    pub(crate) fn of(ident: &Ident) -> Names {
        let base = ident.unraw();
        let span = ident.span();
        Names {
            forward_fn: format_ident!("__autograd_{}_forward", base, span = span),
            marker: format_ident!("__autograd_{}_marker", base, span = span),
            link: format_ident!("__autograd_{}_backward", base, span = span),
            signature: format_ident!("__autograd_{}_signature", base, span = span),
        }
    }
}

/// `path` with its last segment replaced by `ident` (`a::f` → `a::__autograd_f_marker`).
pub(crate) fn sibling(path: &Path, ident: &Ident) -> Path {
    let mut path = path.clone();
    if let Some(last) = path.segments.last_mut() {
        last.ident = ident.clone();
    }
    path
}

/// The user's attributes, sorted by the item they belong on.
struct Attrs<'a> {
    /// `#[cfg]`, `#[cfg_attr]`: on every generated item.
    cfg: Vec<&'a Attribute>,
    /// Lint levels: on the renamed body, where the user's code is.
    lints: Vec<&'a Attribute>,
    /// Docs and the rest: on the public wrapper.
    wrapper: Vec<&'a Attribute>,
}

impl<'a> Attrs<'a> {
    fn split(attrs: &'a [Attribute]) -> Attrs<'a> {
        let mut out = Attrs {
            cfg: Vec::new(),
            lints: Vec::new(),
            wrapper: Vec::new(),
        };
        for attr in attrs {
            let is = |names: &[symbol::Symbol]| {
                attr.path()
                    .get_ident()
                    .is_some_and(|i| names.iter().any(|n| i == n))
            };
            if is(&symbol::CFG_ATTRS) {
                out.cfg.push(attr);
            } else if is(&symbol::LINT_ATTRS) {
                out.lints.push(attr);
            } else {
                out.wrapper.push(attr);
            }
        }
        out
    }
}

/// Everything `#[differentiable]` emits for a valid forward.
pub(crate) fn forward(
    args: &DiffArgs,
    args_tokens: &TokenStream,
    fwd: &DiffFn<'_>,
    func: &ItemFn,
) -> TokenStream {
    let krate = args.krate();
    let ident = fwd.ident;
    let Names {
        forward_fn,
        marker,
        link,
        signature,
    } = Names::of(ident);
    let attrs = Attrs::split(&func.attrs);
    let cfg = &attrs.cfg;
    let signature_alias = signature_alias(ident, &signature, cfg);
    let lints = &attrs.lints;
    let wrapper_attrs = &attrs.wrapper;
    let doc = doc_section(args, fwd)
        .into_iter()
        .map(|line| quote!(#[doc = #line]));
    let vis = &func.vis;
    let ret = fwd.output.public_return();
    let full_ret = fwd.output.original;
    let param_idents: Vec<&Ident> = fwd.params.iter().map(|p| p.ident).collect();
    let param_tys = fwd.params.iter().map(|p| p.ty);
    let params = quote!(#(#param_idents: #param_tys),*);
    let inputs = &func.sig.inputs;
    let block = &func.block;
    let sig = fwd.original;
    let call = quote_spanned!(ident.span()=> <#marker as #link>::call);
    let aliases = type_aliases(fwd, cfg);
    let message = format!(
        "`#[differentiable]` function `{}` has no `#[backward]`",
        fwd.name()
    );
    let label = format!("add a function annotated `#[backward({})]`", fwd.name());
    let note = "the backward names the incoming gradients first (`grad`), then any forward parameters or outputs (`result`) it needs, and returns one gradient per `&Tensor` input";
    // The rule a derived body uses to call this function (`rule.rs`).
    let (rule_items, rule_const) = if rule::eligible(args, fwd) {
        let loc = ident.span();
        let conv = rule::Convention::of(args, fwd);
        (
            rule::trait_items(loc, &krate, fwd, conv),
            rule::public_const(loc, &krate, vis, args, fwd),
        )
    } else {
        (TokenStream::new(), TokenStream::new())
    };
    quote! {
        #(#cfg)*
        #(#wrapper_attrs)*
        #(#doc)*
        #vis fn #ident(#params) #ret {
            #call(#(#param_idents),*)
        }

        #(#cfg)*
        #(#lints)*
        #[doc(hidden)]
        #[allow(non_snake_case)] // `__autograd_double__forward` for `double_`
        pub(crate) fn #forward_fn(#inputs) #full_ret #block

        #(#cfg)*
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        pub(crate) struct #marker;

        #(#cfg)*
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        pub(crate) trait #link {
            fn call(#params) #ret;
            #rule_items
        }

        #aliases

        #(#cfg)*
        #rule_const

        #(#cfg)*
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #signature {
            ($($backward:tt)*) => {
                #krate::__check_backward! { { #args_tokens } { #sig } $($backward)* }
            };
        }

        #(#cfg)*
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #signature;

        #signature_alias
    }
}

/// `use __autograd_f_signature as f;`: the signature macro under the forward's own name (in the
/// macro namespace, beside the function), so that `#[backward(f)]` calls `f!` through the path
/// the user wrote and a misspelt path is rustc's "cannot find macro `doubel`", with its
/// suggestion of the forward, rather than a generated name. Skipped for names the alias would
/// shadow or make ambiguous (see [`aliasable`]); those backwards call the signature macro by
/// its generated name.
pub(crate) fn signature_alias(ident: &Ident, signature: &Ident, cfg: &[&Attribute]) -> TokenStream {
    if !aliasable(ident) {
        return TokenStream::new();
    }
    // As written: `r#match` stays raw, and names the same item as `match` would.
    let alias = ident;
    quote! {
        #(#cfg)*
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #signature as #alias;
    }
}

/// Whether the forward's name may name its signature macro too: not when it is a macro of the
/// standard prelude (`vec`, `format`, ..: the alias would shadow it in the forward's module) or
/// a built-in attribute (`test`, `inline`, ..: the alias would make it ambiguous).
pub(crate) fn aliasable(ident: &Ident) -> bool {
    let name = ident.unraw().to_string();
    !symbol::RESERVED_MACRO_NAMES.contains(&name.as_str())
}

/// The section `#[differentiable]` adds to the function's rustdoc: its node, its inputs, what
/// the node keeps, and whether it is twice differentiable. What the node saves is decided by the
/// backward (which the forward's expansion cannot see), so the section says how each kind of
/// value is kept, and names the residuals the forward itself keeps.
pub(crate) fn doc_section(args: &DiffArgs, fwd: &DiffFn<'_>) -> Vec<String> {
    let name = args
        .name
        .as_ref()
        .map_or_else(|| fwd.default_node_name(), |n| n.value());
    let ticked = |names: Vec<String>| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut inputs = Vec::new();
    for p in fwd.tensor_inputs() {
        let ident = p.ident.unraw();
        inputs.push(match p.kind {
            ParamKind::Tensors(_) => format!("`{ident}` (one edge per tensor)"),
            _ if p.optional => format!("`{ident}` (optional: a `None` edge when absent)"),
            _ => format!("`{ident}`"),
        });
    }
    let attrs: Vec<String> = fwd
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Attr)
        .map(|p| p.ident.unraw().to_string())
        .collect();
    let mut lines = vec![
        String::new(),
        " # Autograd".to_string(),
        String::new(),
        format!(
            " A call records one `{name}` node when grad mode is on and an input requires grad (generated by `#[differentiable]`)."
        ),
        String::new(),
        format!(" * Differentiable inputs: {}.", inputs.join(", ")),
        format!(
            " * Saved for the backward: what `#[backward({})]` names, and nothing else (that function's rustdoc lists them): a tensor input or output as a version-checked saved tensor, an `&InputMetadata` parameter as shape, dtype and device only{}.",
            fwd.name(),
            if attrs.is_empty() {
                String::new()
            } else {
                format!(", an attribute ({}) by value", ticked(attrs))
            }
        ),
    ];
    if !fwd.residuals.is_empty() {
        lines.push(format!(
            " * Kept from the forward (`save`): {}, moved into the node when the backward names them.",
            ticked(fwd.residuals.iter().map(|r| r.ident.to_string()).collect())
        ));
    }
    lines.push(if args.once_differentiable.is_some() {
        " * Twice differentiable: no (`once_differentiable`); differentiating its gradients again is `Error::OnceDifferentiable`.".to_string()
    } else {
        " * Twice differentiable: yes, when its backward is written with differentiable tensor ops (it runs with grad mode = `create_graph`).".to_string()
    });
    lines
}

/// One value a node keeps for its backward, or (`NeedsInputGrad`) one it reads off the node.
struct Slot<'a> {
    /// The node struct's field.
    field: Ident,
    /// The name the backward gives the value (its parameter, unraw'd), shown by graph tools.
    name: String,
    kind: SlotKind<'a>,
    /// `#[needed_for(a, ..)]`: the forward inputs whose gradients need this value; it is saved
    /// (as `Some`) only if one of them needs a gradient.
    needed_for: Vec<&'a Param<'a>>,
}

enum SlotKind<'a> {
    /// A `&Tensor` input (`slice`: a `&[Tensor]` input); `dirty` ones are outputs by the time
    /// they are saved, unless the backward takes their `original` value.
    Input {
        ident: &'a Ident,
        dirty: bool,
        original: bool,
        slice: bool,
        /// An `Option<&Tensor>` input: saved as `Option<SavedTensor>`.
        optional: bool,
    },
    /// The shape, dtype and device of a tensor input (`slice`: of each tensor of a slice).
    Metadata { ident: &'a Ident, slice: bool },
    /// An attribute, cloned before the forward consumes it (only when a node is recorded).
    /// `ty` is its type in the forward, `bw_ty` in the backward (rustc checks that one is
    /// received as the other). A borrowed attribute (`&[usize]`, `&str`) is saved as its owned
    /// form (`Vec<usize>`, `String`): see [`borrowed_target`].
    Attr {
        ident: &'a Ident,
        /// Its position among the forward's parameters (for its type alias).
        index: usize,
        ty: &'a syn::Type,
        bw_ty: &'a syn::Type,
        by_ref: bool,
    },
    /// Output number `index` (`vec`: all outputs of a `Vec<Tensor>` forward);
    /// `non_differentiable` ones are saved as plain tensors.
    Output {
        index: usize,
        differentiable: bool,
        vec: bool,
    },
    /// `needs_input_grad`: `[bool; N]` (`array`) or `&[bool]`, from the node's next edges.
    NeedsInputGrad { array: Option<usize> },
    /// Residual `index` of `save(..)`: moved into the node after the forward; the backward
    /// receives it as its parameter type says (`bw_ty`, by reference if `by_ref`). A `Tensor`
    /// residual (`tensor`) is kept as a saved tensor, as PyTorch's `save_for_backward` of an
    /// intermediate: version-checked, seen by saved-tensor hooks, freed after backward.
    Residual {
        index: usize,
        bw_ty: &'a syn::Type,
        by_ref: bool,
        tensor: bool,
    },
}

impl Slot<'_> {
    /// The saved value is a `SavedTensor` (or a list or option of them).
    fn is_tensor(&self) -> bool {
        matches!(
            self.kind,
            SlotKind::Input { .. }
                | SlotKind::Output { .. }
                | SlotKind::Residual { tensor: true, .. }
        )
    }

    /// It is a list: a `&[Tensor]` input or a `Vec<Tensor>` output.
    fn is_list(&self) -> bool {
        matches!(
            self.kind,
            SlotKind::Input { slice: true, .. }
                | SlotKind::Metadata { slice: true, .. }
                | SlotKind::Output { vec: true, .. }
        )
    }

    /// The node keeps a field for it.
    fn has_field(&self) -> bool {
        !matches!(self.kind, SlotKind::NeedsInputGrad { .. })
    }

    /// The node keeps it as an `Option`: saved only when needed, or an optional input.
    fn is_option(&self) -> bool {
        self.needed_local().is_some() || matches!(self.kind, SlotKind::Input { optional: true, .. })
    }

    /// The local that says whether it is saved (for `#[needed_for]` slots).
    fn needed_local(&self) -> Option<Ident> {
        (!self.needed_for.is_empty()).then(|| format_ident!("{}_needed", self.field))
    }
}

/// What the node saves: exactly the forward parameters and outputs the backward names. `loc`
/// is the span of the generated code: the fields and every local derived from them carry it, so
/// that (with mixed-site hygiene) no user parameter can collide with them.
fn slots<'a>(
    loc: proc_macro2::Span,
    args: &DiffArgs,
    fwd: &'a DiffFn<'a>,
    bwd: &'a BackwardFn<'a>,
) -> Vec<Slot<'a>> {
    let output_names = fwd.output_names();
    bwd.saved
        .iter()
        .filter_map(|param| {
            let name = param.ident.unraw();
            let field = format_ident!("__saved_{}", name, span = loc);
            let name = name.to_string();
            let kind = match fwd.resolve(param.ident)? {
                Source::Param(i) => {
                    let fp = &fwd.params[i];
                    match fp.kind {
                        ParamKind::Tensor(_) | ParamKind::Tensors(_) => {
                            let slice = matches!(fp.kind, ParamKind::Tensors(_));
                            let metadata = if slice {
                                ir::is_slice_ref_of(param.ty, ir::is_input_metadata)
                            } else {
                                ir::is_input_metadata_ref(param.ty)
                            };
                            if metadata {
                                SlotKind::Metadata {
                                    ident: fp.ident,
                                    slice,
                                }
                            } else {
                                SlotKind::Input {
                                    ident: fp.ident,
                                    dirty: args.dirty().iter().any(|d| *d == *fp.ident),
                                    original: param.original_value.is_some(),
                                    slice,
                                    optional: fp.optional,
                                }
                            }
                        }
                        ParamKind::Attr => SlotKind::Attr {
                            ident: fp.ident,
                            index: i,
                            ty: fp.ty,
                            bw_ty: param.ty,
                            by_ref: attr_by_ref(fp.ty, param.ty),
                        },
                    }
                }
                Source::Output(index) => SlotKind::Output {
                    index,
                    differentiable: !args
                        .non_differentiable()
                        .iter()
                        .any(|n| *n == output_names[index]),
                    vec: fwd.output.vec,
                },
                Source::Residual(index) => SlotKind::Residual {
                    index,
                    bw_ty: param.ty,
                    by_ref: attr_by_ref(fwd.residuals[index].ty, param.ty),
                    tensor: ir::is_tensor(fwd.residuals[index].ty),
                },
                Source::NeedsInputGrad => SlotKind::NeedsInputGrad {
                    array: ir::bool_array_len(param.ty),
                },
            };
            let needed_for = param
                .needed_for
                .iter()
                .flat_map(|n| &n.names)
                .filter_map(|name| fwd.tensor_input(name))
                .collect();
            Some(Slot {
                field,
                name,
                kind,
                needed_for,
            })
        })
        .collect()
}

/// `X` for an attribute of type `&X` with an elided lifetime: the node cannot hold the borrow,
/// so it saves `X::to_owned()` (made only when a node is recorded) and lends the backward
/// `&X` from it. `&'static X` is saved as it is.
pub(crate) fn borrowed_target(ty: &syn::Type) -> Option<&syn::Type> {
    match ty {
        syn::Type::Reference(r)
            if r.mutability.is_none() && r.lifetime.as_ref().is_none_or(|l| l.ident == "_") =>
        {
            Some(&r.elem)
        }
        syn::Type::Group(g) => borrowed_target(&g.elem),
        syn::Type::Paren(p) => borrowed_target(&p.elem),
        _ => None,
    }
}

/// Whether a backward receives a saved attribute (of forward type `forward`) by reference: its
/// type is a reference that is not the forward's type itself (`&f64`, `&[usize]` for a
/// `Vec<usize>`, `&str` for a `String`). Otherwise it receives a clone. Either way rustc checks
/// the type, through a `let` spanned on the backward's type.
fn attr_by_ref(forward: &syn::Type, backward: &syn::Type) -> bool {
    matches!(backward, syn::Type::Reference(_)) && backward != forward
}

#[cfg(test)]
mod snapshots;

#[cfg(test)]
mod tests {
    use syn::{Type, parse_quote};

    use super::attr_by_ref;

    #[test]
    fn attributes_by_value_or_through_a_reference() {
        let vec: Type = parse_quote!(Vec<usize>);
        assert!(attr_by_ref(&vec, &parse_quote!(&[usize])));
        assert!(attr_by_ref(&vec, &parse_quote!(&Vec<usize>)));
        assert!(!attr_by_ref(&vec, &parse_quote!(std::vec::Vec<usize>)));
        let name: Type = parse_quote!(&'static str);
        assert!(!attr_by_ref(&name, &parse_quote!(&'static str)));
        assert!(attr_by_ref(&parse_quote!(String), &parse_quote!(&str)));
        assert!(!attr_by_ref(&parse_quote!(f64), &parse_quote!(f32)));
    }

    #[test]
    fn the_doc_section_names_the_node_inputs_and_what_is_kept() {
        use crate::attr::DiffArgs;
        use crate::ctxt::Ctxt;
        use crate::ir::DiffFn;

        let sig: syn::Signature = parse_quote!(
            fn linear(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, k: f64) -> Result<(Tensor, usize)>
        );
        let args: DiffArgs = parse_quote!(save(argmax), once_differentiable);
        let cx = Ctxt::new();
        let fwd = DiffFn::from_syn_hand_written(&cx, &sig, args.save());
        cx.check().expect("valid forward");
        let doc = super::doc_section(&args, &fwd).join("\n");
        for part in [
            "# Autograd",
            "records one `LinearBackward0` node",
            "Differentiable inputs: `x`, `w`, `bias` (optional: a `None` edge when absent).",
            "what `#[backward(linear)]` names",
            "an attribute (`k`) by value",
            "Kept from the forward (`save`): `argmax`",
            "Twice differentiable: no (`once_differentiable`)",
        ] {
            assert!(doc.contains(part), "{part:?} not in:\n{doc}");
        }
        let args: DiffArgs = parse_quote!(name = "MulBackward0");
        let sig: syn::Signature = parse_quote!(fn mul(a: &Tensor, b: &Tensor) -> Tensor);
        let cx = Ctxt::new();
        let fwd = DiffFn::from_syn_hand_written(&cx, &sig, &[]);
        cx.check().expect("valid forward");
        let doc = super::doc_section(&args, &fwd).join("\n");
        assert!(doc.contains("`MulBackward0`") && doc.contains("Twice differentiable: yes"));
        assert!(!doc.contains("attribute (") && !doc.contains("Kept from the forward"));
    }

    #[test]
    fn the_signature_macro_takes_the_forwards_name_unless_reserved() {
        let ident = |name: &str| syn::parse_str::<syn::Ident>(name).expect("an identifier");
        for name in ["double", "r#mul", "r#match", "scaled_square", "max_dim"] {
            assert!(super::aliasable(&ident(name)), "{name}");
        }
        for name in [
            "vec", "format", "println", "test", "inline", "derive", "r#cfg",
        ] {
            assert!(!super::aliasable(&ident(name)), "{name}");
        }
        let alias =
            super::signature_alias(&ident("r#mul"), &ident("__autograd_mul_signature"), &[]);
        assert_eq!(
            alias.to_string(),
            "# [doc (hidden)] # [allow (unused_imports)] pub (crate) use __autograd_mul_signature as r#mul ;"
        );
        assert!(
            super::signature_alias(&ident("vec"), &ident("__autograd_vec_signature"), &[])
                .is_empty()
        );
    }

    #[test]
    fn borrowed_attributes_are_saved_owned() {
        let owned = |ty: Type| super::borrowed_target(&ty).map(|t| quote::quote!(#t).to_string());
        assert_eq!(owned(parse_quote!(&[usize])).as_deref(), Some("[usize]"));
        assert_eq!(owned(parse_quote!(&'_ str)).as_deref(), Some("str"));
        assert_eq!(owned(parse_quote!(&'static str)), None);
        assert_eq!(owned(parse_quote!(&mut Vec<usize>)), None);
        assert_eq!(owned(parse_quote!(Vec<usize>)), None);
    }
}
