//! The derivative rule of a `#[differentiable]` function, so that a `#[differentiable(derive)]`
//! body can call it like a builtin op: `f` gets a sibling constant `__autograd_f_rule`, a
//! `Rule` whose `reads` says what its backward names (an input, its metadata only, the result)
//! and whose `apply` calls the backward with those values.
//!
//! The forward cannot see its backward, so the rule goes through the link trait: the forward
//! declares `READS` and `derivative` on it (with defaults, so that a stub impl need not), and the
//! constant reads them off the marker; the backward's impl of the trait overrides both.
//!
//! Calling convention of `apply` for `N` tensor inputs: `fn(grad: &Tensor, needs: [bool; N],
//! inputs: &Tensor.., result: &Tensor, attributes..) -> Result<(Option<Tensor>, ..)>`, one
//! gradient per tensor input, `None` where `needs` is false or the backward gives none.
//!
//! A `builtin` op of the runtime that asks for one (`rule`) gets its rule the same way, as
//! `DerivativeRules::<name>` (an inherent constant beside the op) in the runtime's conventions
//! ([`Convention`]): its hand-written rules are then only those of methods that are not one op.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Path, Visibility};

use super::names::Names;
use super::slots::{Slot, SlotKind};
use crate::attr::DiffArgs;
use crate::ir::{BackwardFn, DiffFn, GradType, ParamKind};

/// Whether `fwd` gets a rule: a user function that [`fits`], or a `builtin` op that fits and
/// asks for one (`rule`: its rule is `DerivativeRules::<name>`, under the tensor method's name).
pub(crate) fn eligible(args: &DiffArgs, fwd: &DiffFn<'_>) -> bool {
    (!args.builtin() || args.rule.is_some()) && fits(args, fwd)
}

/// Whether `fwd` can have a rule: one differentiable `Tensor` output (no `save(..)` residuals),
/// inputs that are `&Tensor`s (not optional) or attributes, no generics, and none of the options
/// that change what a call means (`once_differentiable`, `dirty`, `non_differentiable`).
pub(crate) fn fits(args: &DiffArgs, fwd: &DiffFn<'_>) -> bool {
    !fwd.output.tuple
        && fwd.output.public.is_none()
        && fwd.residuals.is_empty()
        && fwd.params.iter().all(|p| !p.optional)
        && !fwd.output.vec
        && fwd.original.generics.params.is_empty()
        && fwd
            .params
            .iter()
            .all(|p| matches!(p.kind, ParamKind::Tensor(_) | ParamKind::Attr))
        && args.once_differentiable.is_none()
        && args.dirty().is_empty()
        && args.non_differentiable().is_empty()
}

/// The calling convention of a rule's `apply` (see `DerivativeRules` in the runtime).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Convention {
    /// A user function's: `needs` in, one `Option` per tensor input out.
    User,
    /// A one-operand built-in's: `fn(grad, x, result, attributes..) -> Result<Tensor>`, called
    /// only when `x` needs a gradient.
    Unary,
    /// A built-in of several operands, which broadcast: as `User`, each gradient then summed down
    /// to its operand's shape (what the engine does for a recorded node, B07), so the rule reads
    /// at least each operand's shape.
    Broadcast,
}

impl Convention {
    pub(super) fn of(args: &DiffArgs, fwd: &DiffFn<'_>) -> Convention {
        match (args.builtin(), fwd.tensor_inputs().count()) {
            (false, _) => Convention::User,
            (true, 1) => Convention::Unary,
            (true, _) => Convention::Broadcast,
        }
    }
}

/// The type of the rule's `apply`.
fn apply_type(loc: Span, krate: &Path, fwd: &DiffFn<'_>, conv: Convention) -> TokenStream {
    let tensor = quote_spanned!(loc=> #krate::Tensor);
    let n = fwd.tensor_inputs().count();
    let inputs = (0..n).map(|_| quote_spanned!(loc=> &#tensor));
    let grads = (0..n).map(|_| quote_spanned!(loc=> ::core::option::Option<#tensor>));
    let attrs = fwd
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Attr)
        .map(|p| p.ty);
    if conv == Convention::Unary {
        return quote_spanned! {loc=>
            fn(&#tensor, #(#inputs,)* &#tensor, #(#attrs),*) -> #krate::Result<#tensor>
        };
    }
    quote_spanned! {loc=>
        fn(&#tensor, [bool; #n], #(#inputs,)* &#tensor, #(#attrs),*)
            -> #krate::Result<(#(#grads,)*)>
    }
}

/// The parameters of `derivative`: `(__grad, __needs, inputs.., __result, attributes..)`. At the
/// backward (`fwd_path` given), the attributes' types are named through the forward's aliases,
/// so that they resolve where the forward is.
fn apply_params(
    loc: Span,
    krate: &Path,
    fwd: &DiffFn<'_>,
    fwd_path: Option<&Path>,
    conv: Convention,
) -> TokenStream {
    let tensor = quote_spanned!(loc=> #krate::Tensor);
    let n = fwd.tensor_inputs().count();
    let inputs = fwd.tensor_inputs().map(|p| {
        let ident = p.ident;
        quote_spanned!(loc=> #ident: &#tensor)
    });
    let attrs = fwd
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind == ParamKind::Attr)
        .map(|(i, p)| {
            let ident = p.ident;
            let ty = match fwd_path {
                Some(path) => super::aliases::param_type(path, fwd, i, false),
                None => {
                    let ty = p.ty;
                    quote_spanned!(loc=> #ty)
                }
            };
            quote_spanned!(loc=> #ident: #ty)
        });
    if conv == Convention::Unary {
        return quote_spanned! {loc=>
            __grad: &#tensor, #(#inputs,)* __result: &#tensor, #(#attrs),*
        };
    }
    quote_spanned! {loc=>
        __grad: &#tensor, __needs: [bool; #n], #(#inputs,)* __result: &#tensor, #(#attrs),*
    }
}

/// The return type of `derivative`.
fn apply_return(loc: Span, krate: &Path, fwd: &DiffFn<'_>, conv: Convention) -> TokenStream {
    if conv == Convention::Unary {
        return quote_spanned!(loc=> #krate::Result<#krate::Tensor>);
    }
    let grads = fwd
        .tensor_inputs()
        .map(|_| quote_spanned!(loc=> ::core::option::Option<#krate::Tensor>));
    quote_spanned!(loc=> #krate::Result<(#(#grads,)*)>)
}

/// The link trait's rule items, with defaults (the backward's impl overrides them).
pub(super) fn trait_items(
    loc: Span,
    krate: &Path,
    fwd: &DiffFn<'_>,
    conv: Convention,
) -> TokenStream {
    let params = apply_params(loc, krate, fwd, None, conv);
    let ret = apply_return(loc, krate, fwd, conv);
    let n = fwd.tensor_inputs().count();
    let reads = (0..n).map(|_| quote_spanned!(loc=> #krate::__private::Read::Value));
    quote_spanned! {loc=>
        const READS: #krate::__private::Reads = #krate::__private::Reads {
            operands: &[#(#reads),*],
            result: true,
            value_for: &[],
        };
        #[allow(unused_variables, private_interfaces)]
        fn derivative(#params) -> #ret {
            ::core::result::Result::Err(#krate::Error::msg("no backward is linked"))
        }
    }
}

/// `const __autograd_f_rule`, beside the forward, with its visibility; for a `builtin` op,
/// `DerivativeRules::<name>` (its `rule = name`, or its own name).
pub(super) fn public_const(
    loc: Span,
    krate: &Path,
    vis: &Visibility,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
) -> TokenStream {
    let Names { marker, link, .. } = Names::of(fwd.ident);
    let ty = apply_type(loc, krate, fwd, Convention::of(args, fwd));
    if let Some(name) = args.rule_name(fwd.ident) {
        let doc = format!(
            " The derivative rule of `{}`, generated from its declaration (`#[differentiable(builtin, rule)]` and its `#[backward]`).",
            fwd.ident.unraw()
        );
        return quote_spanned! {loc=>
            impl #krate::__private::DerivativeRules {
                #[doc = #doc]
                #[allow(non_upper_case_globals, clippy::type_complexity)]
                pub const #name: #krate::__private::Rule<#ty> = #krate::__private::Rule {
                    reads: <#marker as #link>::READS,
                    apply: <#marker as #link>::derivative,
                };
            }
        };
    }
    let rule = rule_name(fwd.ident);
    quote_spanned! {loc=>
        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code)]
        #vis const #rule: #krate::__private::Rule<#ty> = #krate::__private::Rule {
            reads: <#marker as #link>::READS,
            apply: <#marker as #link>::derivative,
        };
    }
}

/// `__autograd_f_rule`.
pub(crate) fn rule_name(ident: &Ident) -> Ident {
    let base = syn::ext::IdentExt::unraw(ident);
    format_ident!("__autograd_{}_rule", base, span = ident.span())
}

/// The backward's overrides: what it names, and the call of the backward with those values.
pub(super) fn impl_items(
    loc: Span,
    krate: &Path,
    fwd_path: &Path,
    fwd: &DiffFn<'_>,
    bwd: &BackwardFn<'_>,
    slots: &[Slot<'_>],
    conv: Convention,
) -> TokenStream {
    RulePlan {
        loc,
        krate,
        fwd_path,
        fwd,
        bwd,
        slots,
        conv,
        inputs: fwd.tensor_inputs().map(|p| p.ident).collect(),
    }
    .items()
}

/// What [`impl_items`] emits from: the pair, the values the node saves and the convention, with
/// the forward's tensor inputs in order. Each part of the overrides is one method.
struct RulePlan<'a> {
    loc: Span,
    krate: &'a Path,
    fwd_path: &'a Path,
    fwd: &'a DiffFn<'a>,
    bwd: &'a BackwardFn<'a>,
    slots: &'a [Slot<'a>],
    conv: Convention,
    /// The forward's tensor inputs: the rule's operands.
    inputs: Vec<&'a Ident>,
}

impl RulePlan<'_> {
    /// `const READS` and `fn derivative`: for a one-operand built-in, called only when the
    /// operand needs a gradient, the one gradient as it is; otherwise one `Option` per operand.
    fn items(&self) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        let reads = self.reads();
        let params = apply_params(loc, krate, self.fwd, Some(self.fwd_path), self.conv);
        let ret = apply_return(loc, krate, self.fwd, self.conv);
        let outs = self.outs();
        let call = self.call(&outs);
        if self.conv == Convention::Unary {
            // Called only when the operand needs a gradient: the one gradient, as it is.
            return quote_spanned! {loc=>
                #reads
                #[allow(unused_variables, clippy::all)]
                fn derivative(#params) -> #ret {
                    let __needs: [bool; 1] = [true];
                    #call
                    ::core::result::Result::Ok(#(#outs)*)
                }
            };
        }
        let wrapped = self.wrapped(&outs);
        quote_spanned! {loc=>
            #reads
            #[allow(unused_variables, clippy::all)]
            fn derivative(#params) -> #ret {
                #call
                ::core::result::Result::Ok((#(#wrapped,)*))
            }
        }
    }

    /// `const READS`: what the rule reads of each operand, whether it reads the result, and
    /// the operands whose value is read for one other operand's gradient only.
    fn reads(&self) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        let reads = self.inputs.iter().map(|i| self.read(i));
        let value_for = self.value_for();
        let result = self
            .slots
            .iter()
            .any(|s| matches!(s.kind, SlotKind::Output { .. }));
        quote_spanned! {loc=>
            const READS: #krate::__private::Reads = #krate::__private::Reads {
                operands: &[#(#reads),*],
                result: #result,
                value_for: &[#(#value_for),*],
            };
        }
    }

    /// What the rule reads of input `i`: its value or its metadata where the backward names
    /// it, else the least the convention needs.
    fn read(&self, i: &Ident) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        let named = self.slots.iter().find_map(|s| match s.kind {
            SlotKind::Input { ident, .. } if ident == i => Some(quote_spanned!(loc=> Value)),
            SlotKind::Metadata { ident, .. } if ident == i => Some(quote_spanned!(loc=> Shape)),
            _ => None,
        });
        // A broadcasting op's gradients are summed down to its operands' shapes.
        let least = if self.conv == Convention::Broadcast {
            quote_spanned!(loc=> Shape)
        } else {
            quote_spanned!(loc=> Nothing)
        };
        let named = named.unwrap_or(least);
        quote_spanned!(loc=> #krate::__private::Read::#named)
    }

    /// Input `i`'s position among the operands.
    fn position(&self, i: &Ident) -> Option<usize> {
        self.inputs.iter().position(|j| *j == i)
    }

    /// `#[needed_for(j)]` on input `i`: its value is read only for `j`'s gradient.
    fn value_for(&self) -> Vec<TokenStream> {
        let loc = self.loc;
        self.inputs
            .iter()
            .map(|i| {
                let only = self.slots.iter().find_map(|s| match s.kind {
                    SlotKind::Input { ident, .. } if ident == *i && s.needed_for.len() == 1 => {
                        self.position(s.needed_for[0].ident)
                    }
                    _ => None,
                });
                match only {
                    Some(j) => quote_spanned!(loc=> ::core::option::Option::Some(#j)),
                    None => quote_spanned!(loc=> ::core::option::Option::None),
                }
            })
            .collect()
    }

    /// `let __r = backward(..);` and its gradients into `__r{i}`.
    fn call(&self, outs: &[Ident]) -> TokenStream {
        let loc = self.loc;
        let bw_ident = self.bwd.ident;
        let grad_args = self.grad_args();
        let saved_args = self.slots.iter().map(|s| self.saved_arg(s));
        let destructure = self.destructure(outs);
        quote_spanned! {loc=>
            let __r = #bw_ident(#(#grad_args,)* #(#saved_args),*);
            #destructure
        }
    }

    /// The incoming gradient, as each of the backward's gradient parameters takes it.
    fn grad_args(&self) -> Vec<TokenStream> {
        let loc = self.loc;
        self.bwd
            .grads
            .iter()
            .map(|g| {
                if crate::ir::is_tensor_ref(g.ty) {
                    quote_spanned!(loc=> __grad)
                } else {
                    quote_spanned!(loc=> ::core::option::Option::Some(__grad))
                }
            })
            .collect()
    }

    /// The value the backward names in slot `s`, from the rule's arguments.
    fn saved_arg(&self, s: &Slot<'_>) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        match &s.kind {
            SlotKind::Input { ident, .. } => {
                if s.needed_for.is_empty() {
                    quote_spanned!(loc=> #ident)
                } else {
                    let flags = s
                        .needed_for
                        .iter()
                        .filter_map(|p| self.position(p.ident))
                        .map(|j| quote_spanned!(loc=> __needs[#j]));
                    quote_spanned!(loc=> (false #(|| #flags)*).then_some(#ident))
                }
            }
            SlotKind::Metadata { ident, .. } => {
                quote_spanned!(loc=> &#krate::__private::InputMetadata::of(#ident))
            }
            SlotKind::Attr {
                ident,
                ty,
                bw_ty,
                by_ref,
                ..
            } => attr_arg(ident, ty, bw_ty, *by_ref),
            // Not eligible for a rule (`save(..)`).
            SlotKind::Residual { .. } => quote_spanned!(loc=> ::core::unreachable!()),
            SlotKind::Output { .. } => {
                if s.needed_for.is_empty() {
                    quote_spanned!(loc=> __result)
                } else {
                    quote_spanned!(loc=> ::core::option::Option::Some(__result))
                }
            }
            SlotKind::NeedsInputGrad { array: Some(_) } => quote_spanned!(loc=> __needs),
            SlotKind::NeedsInputGrad { array: None } => quote_spanned!(loc=> &__needs[..]),
        }
    }

    /// `__r{i}`: the locals of the backward's gradients.
    fn outs(&self) -> Vec<Ident> {
        (0..self.bwd.output.grads.len())
            .map(|i| format_ident!("__r{}", i))
            .collect()
    }

    /// The backward's value (its error converted) into the locals `outs`.
    fn destructure(&self, outs: &[Ident]) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        let unwrap = if self.bwd.output.fallible {
            // The conversion of the error, spanned as the node's (one error from rustc).
            let at = match self.bwd.output.original {
                syn::ReturnType::Type(_, ty) => Span::mixed_site().located_at(ty.span()),
                syn::ReturnType::Default => loc,
            };
            let convert = quote_spanned!(at=> ::core::convert::Into::<#krate::Error>::into(__e));
            quote_spanned!(loc=> match __r {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(#convert);
                }
            })
        } else {
            quote_spanned!(loc=> __r)
        };
        if self.bwd.output.tuple {
            quote_spanned!(loc=> let (#(#outs,)*) = #unwrap;)
        } else {
            quote_spanned!(loc=> let #(#outs)* = #unwrap;)
        }
    }

    /// Each operand's gradient: `None` where it is not needed, summed down to the operand's
    /// shape for a broadcasting op.
    fn wrapped(&self, outs: &[Ident]) -> Vec<TokenStream> {
        let (loc, krate) = (self.loc, self.krate);
        self.bwd
            .output
            .grads
            .iter()
            .zip(outs)
            .enumerate()
            .map(|(j, ((_, kind), r))| {
                let value = match kind {
                    GradType::OptionTensor => quote_spanned!(loc=> #r),
                    _ => quote_spanned!(loc=> ::core::option::Option::Some(#r)),
                };
                let value = quote_spanned!(loc=> if __needs[#j] { #value } else { ::core::option::Option::None });
                match (self.conv, self.inputs.get(j)) {
                    (Convention::Broadcast, Some(input)) => {
                        quote_spanned!(loc=> #krate::__private::reduce_grad(#value, #input)?)
                    }
                    _ => value,
                }
            })
            .collect()
    }
}

/// A saved attribute as the node passes its saved copy: the backward's own type decides, and a
/// type that does not fit is the same error, at the same place, as the node's
/// (`expand/node.rs`), which rustc reports once.
fn attr_arg(ident: &Ident, ty: &syn::Type, bw_ty: &syn::Type, by_ref: bool) -> TokenStream {
    let at = Span::mixed_site().located_at(bw_ty.span());
    let value = format_ident!("__value", span = at);
    let local = format_ident!("__arg", span = at);
    let copy = if super::slots::borrowed_target(ty).is_some() {
        if matches!(bw_ty, syn::Type::Reference(_)) {
            quote_spanned!(at=> #ident)
        } else {
            quote_spanned!(at=> ::std::borrow::ToOwned::to_owned(#ident))
        }
    } else if by_ref {
        quote_spanned!(at=> &#ident)
    } else {
        quote_spanned!(at=> ::core::clone::Clone::clone(&#ident))
    };
    quote_spanned! {at=>
        {
            let #value = #copy;
            let #local: #bw_ty = #value;
            #local
        }
    }
}
