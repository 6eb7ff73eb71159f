//! What [`link_impl`](super::link_impl) computes once before it emits anything: the forward's
//! hidden items as seen from the backward ([`Linked`]) and the [`LinkPlan`] whose methods (in
//! the sibling files) each emit one fragment of the link impl.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::ext::IdentExt;
use syn::{Ident, Path};

use super::super::names::{Names, sibling};
use super::super::slots::{Slot, slots};
use crate::attr::DiffArgs;
use crate::ir::{BackwardFn, DiffFn, Param};

/// The forward's hidden items as seen from a backward, spanned on the backward's
/// `#[backward(path)]` so that errors about the link (two backwards) point there.
pub(super) struct Linked {
    /// The backward's `path` token: where errors about the impl (two backwards) point. The
    /// whole impl carries it, since rustc joins an item's first and last token for its span.
    pub(super) span: Span,
    /// Where every other generated token points: the same place, with mixed-site hygiene, so
    /// that generated locals (`__edges`, `__output`, ..) never capture or shadow a user's
    /// parameter of the same name.
    pub(super) loc: Span,
    pub(super) marker: Path,
    pub(super) link: Path,
    pub(super) forward_fn: Path,
}

impl Linked {
    pub(super) fn new(fwd_path: &Path) -> Linked {
        let last = &fwd_path
            .segments
            .last()
            .expect("invariant: `Path::parse_mod_style` yields a segment")
            .ident;
        let names = Names::of(last);
        Linked {
            span: last.span(),
            loc: Span::mixed_site().located_at(last.span()),
            marker: sibling(fwd_path, &names.marker),
            link: sibling(fwd_path, &names.link),
            forward_fn: sibling(fwd_path, &names.forward_fn),
        }
    }
}

/// What [`link_impl`](super::link_impl) computes once from the IR before it emits anything (as
/// serde_derive's `ser.rs` computes its parameters): the hidden names, what the node saves, the
/// locals that hold the forward's outputs, and the dirty inputs. Each fragment of the emitted
/// impl is then one method, named for what it emits.
pub(super) struct LinkPlan<'a> {
    pub(super) args: &'a DiffArgs,
    pub(super) fwd: &'a DiffFn<'a>,
    pub(super) bwd: &'a BackwardFn<'a>,
    pub(super) fwd_path: &'a Path,
    pub(super) krate: Path,
    pub(super) builtin: bool,
    pub(super) linked: Linked,
    /// What the node saves: the values the backward names.
    pub(super) slots: Vec<Slot<'a>>,
    /// The forward's parameters (and its call's arguments).
    pub(super) idents: Vec<&'a Ident>,
    /// `__out{i}`: the locals of the forward's tensor outputs.
    pub(super) outs: Vec<Ident>,
    /// The elements of the value the public function returns: the tensor outputs, and (in a
    /// tuple) the non-tensor outputs beside them, returned as they are.
    pub(super) elems: Vec<Ident>,
    /// B35: the `dirty` inputs, each with the local of its position among the outputs.
    pub(super) dirty: Vec<(&'a Param<'a>, Ident)>,
    /// Which outputs are `non_differentiable` (B34).
    pub(super) non_diff: Vec<bool>,
}

impl<'a> LinkPlan<'a> {
    pub(super) fn new(
        args: &'a DiffArgs,
        fwd: &'a DiffFn<'a>,
        bwd: &'a BackwardFn<'a>,
        fwd_path: &'a Path,
    ) -> LinkPlan<'a> {
        let linked = Linked::new(fwd_path);
        let loc = linked.loc;
        let slots = slots(loc, args, fwd, bwd);
        let idents = fwd.params.iter().map(|p| p.ident).collect();
        let outs: Vec<Ident> = (0..fwd.num_outputs())
            .map(|i| format_ident!("__out{}", i, span = loc))
            .collect();
        let elems: Vec<Ident> = if fwd.output.tuple {
            fwd.output
                .elems
                .iter()
                .enumerate()
                .map(|(pos, e)| match e {
                    Some(i) => outs[*i].clone(),
                    None => format_ident!("__other{}", pos, span = loc),
                })
                .collect()
        } else {
            outs.clone()
        };
        let dirty = args
            .dirty()
            .iter()
            .filter_map(|d| fwd.tensor_inputs().find(|p| *p.ident == *d))
            .map(|p| (p, format_ident!("__dirty_{}", p.ident.unraw(), span = loc)))
            .collect();
        let non_diff = fwd
            .output_names()
            .iter()
            .map(|o| args.non_differentiable().iter().any(|n| *n == *o))
            .collect();
        LinkPlan {
            args,
            fwd,
            bwd,
            fwd_path,
            krate: args.krate(),
            builtin: args.builtin(),
            linked,
            slots,
            idents,
            outs,
            elems,
            dirty,
            non_diff,
        }
    }

    /// Returns `e` from `call`, converted into the forward's error type.
    pub(super) fn err(&self, e: TokenStream) -> TokenStream {
        let loc = self.linked.loc;
        quote_spanned!(loc=> return ::core::result::Result::Err(::core::convert::Into::into(#e));)
    }

    /// `e?`, with the error converted into the forward's error type.
    pub(super) fn try_(&self, e: TokenStream) -> TokenStream {
        let loc = self.linked.loc;
        let ret_err = self.err(quote_spanned!(loc=> __e));
        quote_spanned! {loc=>
            match #e {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => { #ret_err }
            }
        }
    }
}
