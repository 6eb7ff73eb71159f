//! What a node keeps for its backward: one [`Slot`] per value the backward names, read off the
//! forward and backward IR, and how attributes are kept (owned, lent by reference or cloned).

use quote::format_ident;
use syn::Ident;
use syn::ext::IdentExt;

use crate::attr::DiffArgs;
use crate::ir::{self, BackwardFn, DiffFn, Param, ParamKind, Source};

/// One value a node keeps for its backward, or (`NeedsInputGrad`) one it reads off the node.
pub(super) struct Slot<'a> {
    /// The node struct's field.
    pub(super) field: Ident,
    /// The name the backward gives the value (its parameter, unraw'd), shown by graph tools.
    pub(super) name: String,
    pub(super) kind: SlotKind<'a>,
    /// `#[needed_for(a, ..)]`: the forward inputs whose gradients need this value; it is saved
    /// (as `Some`) only if one of them needs a gradient.
    pub(super) needed_for: Vec<&'a Param<'a>>,
}

pub(super) enum SlotKind<'a> {
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
    pub(super) fn is_tensor(&self) -> bool {
        matches!(
            self.kind,
            SlotKind::Input { .. }
                | SlotKind::Output { .. }
                | SlotKind::Residual { tensor: true, .. }
        )
    }

    /// It is a list: a `&[Tensor]` input or a `Vec<Tensor>` output.
    pub(super) fn is_list(&self) -> bool {
        matches!(
            self.kind,
            SlotKind::Input { slice: true, .. }
                | SlotKind::Metadata { slice: true, .. }
                | SlotKind::Output { vec: true, .. }
        )
    }

    /// The node keeps a field for it.
    pub(super) fn has_field(&self) -> bool {
        !matches!(self.kind, SlotKind::NeedsInputGrad { .. })
    }

    /// The node keeps it as an `Option`: saved only when needed, or an optional input.
    pub(super) fn is_option(&self) -> bool {
        self.needed_local().is_some() || matches!(self.kind, SlotKind::Input { optional: true, .. })
    }

    /// The local that says whether it is saved (for `#[needed_for]` slots).
    pub(super) fn needed_local(&self) -> Option<Ident> {
        (!self.needed_for.is_empty()).then(|| format_ident!("{}_needed", self.field))
    }
}

/// What the node saves: exactly the forward parameters and outputs the backward names. `loc`
/// is the span of the generated code: the fields and every local derived from them carry it, so
/// that (with mixed-site hygiene) no user parameter can collide with them.
pub(super) fn slots<'a>(
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
pub(super) fn attr_by_ref(forward: &syn::Type, backward: &syn::Type) -> bool {
    matches!(backward, syn::Type::Reference(_)) && backward != forward
}
