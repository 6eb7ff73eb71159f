//! Code generation: `quote!` only, infallible, run on validated IR. This file emits what
//! `#[differentiable]` adds next to the user's function (the public wrapper, the renamed body, the
//! marker type, the link trait and the signature macro); `node.rs` emits the graph node and
//! `backward.rs` what `#[backward]` adds.

mod backward;
pub(crate) mod derive;
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
use crate::valid::attr_access;

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
    let lints = &attrs.lints;
    let wrapper_attrs = &attrs.wrapper;
    let vis = &func.vis;
    let ret = fwd.output.original;
    let param_idents: Vec<&Ident> = fwd.params.iter().map(|p| p.ident).collect();
    let param_tys = fwd.params.iter().map(|p| p.ty);
    let params = quote!(#(#param_idents: #param_tys),*);
    let inputs = &func.sig.inputs;
    let block = &func.block;
    let sig = fwd.original;
    let call = quote_spanned!(ident.span()=> <#marker as #link>::call);
    let message = format!(
        "`#[differentiable]` function `{}` has no `#[backward]`",
        fwd.name()
    );
    let label = format!("add a function annotated `#[backward({})]`", fwd.name());
    let note = "the backward names the incoming gradients first (`grad`), then any forward parameters or outputs (`result`) it needs, and returns one gradient per `&Tensor` input";
    // The rule a derived body uses to call this function (`rule.rs`).
    let (rule_items, rule_const) = if rule::eligible(args, fwd) {
        let loc = ident.span();
        (
            rule::trait_items(loc, &krate, fwd),
            rule::public_const(loc, &krate, vis, fwd),
        )
    } else {
        (TokenStream::new(), TokenStream::new())
    };
    quote! {
        #(#cfg)*
        #(#wrapper_attrs)*
        #vis fn #ident(#params) #ret {
            #call(#(#param_idents),*)
        }

        #(#cfg)*
        #(#lints)*
        #[doc(hidden)]
        #[allow(non_snake_case)] // `__autograd_double__forward` for `double_`
        pub(crate) fn #forward_fn(#inputs) #ret #block

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
    }
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
    },
    /// The shape, dtype and device of a tensor input (`slice`: of each tensor of a slice).
    Metadata { ident: &'a Ident, slice: bool },
    /// An attribute, cloned before the forward consumes it.
    Attr {
        ident: &'a Ident,
        ty: &'a syn::Type,
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
}

impl Slot<'_> {
    /// The saved value is a `SavedTensor` (or a list or option of them).
    fn is_tensor(&self) -> bool {
        matches!(self.kind, SlotKind::Input { .. } | SlotKind::Output { .. })
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

    /// The local that says whether it is saved (for `#[needed_for]` slots).
    fn needed_local(&self) -> Option<Ident> {
        (!self.needed_for.is_empty()).then(|| format_ident!("{}_needed", self.field))
    }
}

/// What the node saves: exactly the forward parameters and outputs the backward names.
fn slots<'a>(args: &DiffArgs, fwd: &'a DiffFn<'a>, bwd: &'a BackwardFn<'a>) -> Vec<Slot<'a>> {
    let output_names = fwd.output_names();
    bwd.saved
        .iter()
        .filter_map(|param| {
            let name = param.ident.unraw();
            let field = format_ident!("__saved_{}", name);
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
                                }
                            }
                        }
                        ParamKind::Attr => SlotKind::Attr {
                            ident: fp.ident,
                            ty: fp.ty,
                            by_ref: attr_access(fp.ty, param.ty)?,
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
