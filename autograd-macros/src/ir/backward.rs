//! The IR of a `#[backward]` function ([`BackwardFn`]): the incoming gradients, the values it
//! names (with their `#[needed_for]`/`#[original]` attributes) and the gradients it returns.

use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, PatType, ReturnType, Signature, Token, Type};

use super::signature::{check_plain_fn, plain_param};
use super::types::{is_tensor, option_inner, result_ok_type, vec_inner};
use crate::ctxt::Ctxt;
use crate::symbol;

/// A `#[backward(..)]` function.
pub(crate) struct BackwardFn<'a> {
    pub(crate) original: &'a Signature,
    pub(crate) ident: &'a Ident,
    /// The leading `grad*` parameters.
    pub(crate) grads: Vec<BwParam<'a>>,
    /// The remaining parameters, each naming a forward parameter or output.
    pub(crate) saved: Vec<BwParam<'a>>,
    pub(crate) output: BackwardOutput<'a>,
}

/// A backward parameter.
pub(crate) struct BwParam<'a> {
    pub(crate) original: &'a PatType,
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    /// `#[needed_for(a, ..)]`: saved only if one of those inputs needs a gradient.
    pub(crate) needed_for: Option<NeededFor<'a>>,
    /// `#[original]`: a `dirty` input's value before the forward modified it.
    pub(crate) original_value: Option<&'a Attribute>,
}

/// The `#[needed_for(a, ..)]` attribute of a backward parameter.
pub(crate) struct NeededFor<'a> {
    pub(crate) attr: &'a Attribute,
    pub(crate) names: Vec<Ident>,
}

/// The backward's return type: one gradient per differentiable input.
pub(crate) struct BackwardOutput<'a> {
    pub(crate) original: &'a ReturnType,
    pub(crate) fallible: bool,
    /// A tuple rather than a single gradient type.
    pub(crate) tuple: bool,
    pub(crate) grads: Vec<(&'a Type, GradType)>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum GradType {
    Tensor,
    OptionTensor,
    /// `Vec<Tensor>`: one gradient per element of a `&[Tensor]` input.
    VecTensor,
    /// `Vec<Option<Tensor>>`.
    VecOptionTensor,
    Other,
}

impl<'a> BackwardFn<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, sig: &'a Signature) -> BackwardFn<'a> {
        check_plain_fn(cx, sig, "#[backward]");
        let mut grads = Vec::new();
        let mut saved: Vec<BwParam<'a>> = Vec::new();
        for arg in &sig.inputs {
            let Some((original, ident)) = plain_param(cx, arg, "#[backward]") else {
                continue;
            };
            let param = BwParam {
                original,
                ident,
                ty: &original.ty,
                needed_for: None,
                original_value: None,
            };
            let param = param_attrs(cx, param);
            if symbol::GRAD.is_prefix_of(ident) {
                for attr in param
                    .needed_for
                    .iter()
                    .map(|n| n.attr)
                    .chain(param.original_value)
                {
                    cx.error_spanned_by(
                        attr,
                        format!("incoming gradient `{ident}` takes no attributes; `#[needed_for(..)]` and `#[original]` go on saved parameters"),
                    );
                }
                if let Some(first) = saved.first() {
                    cx.error_spanned_by(
                        ident,
                        format!(
                            "incoming gradient parameters come first: move `{ident}` before `{}`",
                            first.ident
                        ),
                    );
                }
                grads.push(param);
            } else {
                saved.push(param);
            }
        }
        let output = BackwardOutput::from_syn(sig);
        BackwardFn {
            original: sig,
            ident: &sig.ident,
            grads,
            saved,
            output,
        }
    }
}

impl<'a> BackwardOutput<'a> {
    fn from_syn(sig: &'a Signature) -> BackwardOutput<'a> {
        let ReturnType::Type(_, ty) = &sig.output else {
            return BackwardOutput {
                original: &sig.output,
                fallible: false,
                tuple: false,
                grads: Vec::new(),
            };
        };
        let (ty, fallible) = match result_ok_type(ty) {
            Some(ok) => (ok, true),
            None => (&**ty, false),
        };
        let tuple = matches!(ty, Type::Tuple(_));
        let grads = match ty {
            Type::Tuple(tuple) if !tuple.elems.is_empty() => {
                tuple.elems.iter().map(|t| (t, grad_type(t))).collect()
            }
            Type::Tuple(_) => Vec::new(),
            ty => vec![(ty, grad_type(ty))],
        };
        BackwardOutput {
            original: &sig.output,
            fallible,
            tuple,
            grads,
        }
    }
}

pub(super) fn grad_type(ty: &Type) -> GradType {
    if is_tensor(ty) {
        GradType::Tensor
    } else if option_inner(ty).is_some_and(is_tensor) {
        GradType::OptionTensor
    } else if let Some(elem) = vec_inner(ty) {
        if is_tensor(elem) {
            GradType::VecTensor
        } else if option_inner(elem).is_some_and(is_tensor) {
            GradType::VecOptionTensor
        } else {
            GradType::Other
        }
    } else {
        GradType::Other
    }
}

/// Reads `#[needed_for(..)]` and `#[original]` off a backward parameter (the other attributes
/// stay for rustc).
pub(super) fn param_attrs<'a>(cx: &Ctxt, mut param: BwParam<'a>) -> BwParam<'a> {
    for attr in &param.original.attrs {
        let Some(name) = attr.path().get_ident() else {
            continue;
        };
        if *name == symbol::NEEDED_FOR {
            let names = match attr.parse_args_with(Punctuated::<Ident, Token![,]>::parse_terminated)
            {
                Ok(names) if names.is_empty() => {
                    cx.error_spanned_by(attr, "`#[needed_for(..)]` needs at least one input name");
                    continue;
                }
                Ok(names) => names.into_iter().collect(),
                Err(_) => {
                    cx.error_spanned_by(
                        attr,
                        "expected `#[needed_for(input, ..)]`: the inputs whose gradients need this value",
                    );
                    continue;
                }
            };
            if param.needed_for.is_some() {
                cx.error_spanned_by(attr, "duplicate attribute `#[needed_for(..)]`");
            } else {
                param.needed_for = Some(NeededFor { attr, names });
            }
        } else if *name == symbol::ORIGINAL {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                cx.error_spanned_by(attr, "`#[original]` takes no arguments");
            } else if param.original_value.is_some() {
                cx.error_spanned_by(attr, "duplicate attribute `#[original]`");
            } else {
                param.original_value = Some(attr);
            }
        }
    }
    param
}

/// Whether `attr` is one of the backward parameter attributes the macro consumes.
pub(crate) fn is_param_attr(attr: &Attribute) -> bool {
    attr.path()
        .get_ident()
        .is_some_and(|i| symbol::PARAM_ATTRS.iter().any(|s| i == s))
}
