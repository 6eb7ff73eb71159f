//! The IR of a `#[differentiable]` function ([`DiffFn`]): its parameters (tensor inputs and
//! attributes), its residuals, and the names a backward may resolve against it.

use syn::ext::IdentExt;
use syn::{Ident, Signature, Type};

use super::output::Output;
use super::signature::{Class, check_plain_fn, classify_param, plain_param};
use crate::ctxt::Ctxt;
use crate::symbol;

/// A `#[differentiable]` function.
pub(crate) struct DiffFn<'a> {
    pub(crate) original: &'a Signature,
    pub(crate) ident: &'a Ident,
    pub(crate) params: Vec<Param<'a>>,
    pub(crate) output: Output<'a>,
    /// `save(a, ..)`: values the body returns after its outputs, kept for the backward only.
    pub(crate) residuals: Vec<Residual<'a>>,
}

/// A value of `save(..)`: named in the option, typed in the return type.
pub(crate) struct Residual<'a> {
    pub(crate) ident: Ident,
    pub(crate) ty: &'a Type,
}

/// A forward parameter.
pub(crate) struct Param<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    pub(crate) kind: ParamKind,
    /// `Option<&Tensor>` (kind `Tensor`): an input that may be absent, with a `None` edge then.
    pub(crate) optional: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// `&Tensor`: a differentiable input, tensor parameter number `.0`.
    Tensor(usize),
    /// `&[Tensor]`: a slice of differentiable inputs (one next edge each), tensor parameter
    /// number `.0`.
    Tensors(usize),
    /// Anything else: an attribute, saved by value if the backward names it.
    Attr,
}

/// What a backward parameter after the gradients refers to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Forward parameter number `.0`.
    Param(usize),
    /// Forward output number `.0`.
    Output(usize),
    /// Residual number `.0` of `save(..)`.
    Residual(usize),
    /// `needs_input_grad`: which inputs need a gradient.
    NeedsInputGrad,
}

impl<'a> DiffFn<'a> {
    /// A forward whose backward the macro derives: no optional inputs.
    pub(crate) fn from_syn(cx: &Ctxt, sig: &'a Signature) -> DiffFn<'a> {
        DiffFn::lower(cx, sig, false, &[])
    }

    /// A forward with a hand-written backward: `Option<&Tensor>` inputs are allowed, and the
    /// residuals named by `save(..)` follow the outputs in the return type.
    pub(crate) fn from_syn_hand_written(
        cx: &Ctxt,
        sig: &'a Signature,
        save: &[Ident],
    ) -> DiffFn<'a> {
        DiffFn::lower(cx, sig, true, save)
    }

    fn lower(cx: &Ctxt, sig: &'a Signature, optional_inputs: bool, save: &[Ident]) -> DiffFn<'a> {
        check_plain_fn(cx, sig, "#[differentiable]");
        let mut params = Vec::new();
        let mut inputs = 0;
        for arg in &sig.inputs {
            let Some((original, ident)) = plain_param(cx, arg, "#[differentiable]") else {
                continue;
            };
            if *ident == symbol::NEEDS_INPUT_GRAD {
                cx.error_spanned_by(
                    ident,
                    format!(
                        "parameter name `{ident}` is reserved: in `#[backward]`, it names which inputs need a gradient; rename the parameter"
                    ),
                );
            }
            for reserved in [symbol::GRAD, symbol::RESULT] {
                if reserved.is_prefix_of(ident) {
                    cx.error_spanned_by(
                        ident,
                        format!(
                            "parameter name `{ident}` is reserved: in `#[backward]`, `{reserved}` and `{reserved}_*` name {}; rename the parameter",
                            if reserved == symbol::GRAD { "incoming gradients" } else { "the forward's outputs" }
                        ),
                    );
                }
            }
            let ty = &*original.ty;
            let mut optional = false;
            let kind = match classify_param(ty) {
                Ok(Class::Tensor) => {
                    inputs += 1;
                    ParamKind::Tensor(inputs - 1)
                }
                Ok(Class::OptionalTensor) if optional_inputs => {
                    inputs += 1;
                    optional = true;
                    ParamKind::Tensor(inputs - 1)
                }
                Ok(Class::OptionalTensor) => {
                    cx.error_spanned_by(
                        ty,
                        "optional tensor inputs are not supported by `#[differentiable(derive)]`; write a `#[backward]`",
                    );
                    ParamKind::Attr
                }
                Ok(Class::Tensors) => {
                    inputs += 1;
                    ParamKind::Tensors(inputs - 1)
                }
                Ok(Class::Attr) => ParamKind::Attr,
                Err(msg) => {
                    cx.error_spanned_by(ty, msg);
                    ParamKind::Attr
                }
            };
            params.push(Param {
                ident,
                ty,
                kind,
                optional,
            });
        }
        if inputs == 0 && cx.is_ok() {
            cx.error_at(
                sig.paren_token.span.join(),
                "`#[differentiable]` function needs at least one `&Tensor` (or `&[Tensor]`) parameter: its differentiable inputs",
            );
        }
        let (output, residual_tys) = Output::from_syn(cx, sig, save);
        let residuals = save
            .iter()
            .zip(residual_tys)
            .map(|(ident, ty)| Residual {
                ident: ident.clone(),
                ty,
            })
            .collect();
        DiffFn {
            original: sig,
            ident: &sig.ident,
            params,
            output,
            residuals,
        }
    }

    /// The differentiable inputs, `&Tensor` and `&[Tensor]`, in order.
    pub(crate) fn tensor_inputs(&self) -> impl Iterator<Item = &Param<'a>> {
        self.params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Tensor(_) | ParamKind::Tensors(_)))
    }

    /// Whether an `Option<&Tensor>` input may be absent (its edge is then `None`).
    pub(crate) fn has_optional(&self) -> bool {
        self.params.iter().any(|p| p.optional)
    }

    /// Whether a `&[Tensor]` input makes the number of next edges dynamic.
    pub(crate) fn has_slices(&self) -> bool {
        self.params
            .iter()
            .any(|p| matches!(p.kind, ParamKind::Tensors(_)))
    }

    /// The tensor input named `name`.
    pub(crate) fn tensor_input(&self, name: &Ident) -> Option<&Param<'a>> {
        let name = name.unraw();
        self.tensor_inputs().find(|p| p.ident.unraw() == name)
    }

    pub(crate) fn num_outputs(&self) -> usize {
        self.output.tensors.len()
    }

    /// `result`, or `result_0`, `result_1`, .. for tuple outputs (tensor outputs numbered among
    /// themselves; one tensor beside non-tensor outputs is `result`).
    pub(crate) fn output_names(&self) -> Vec<String> {
        let indexed = self.output.tuple
            && (self.num_outputs() > 1 || self.output.elems.iter().all(Option::is_some));
        if indexed {
            (0..self.num_outputs())
                .map(|i| format!("{}_{i}", symbol::RESULT))
                .collect()
        } else {
            vec![symbol::RESULT.to_string()]
        }
    }

    /// What `name` refers to in a backward of this function.
    pub(crate) fn resolve(&self, name: &Ident) -> Option<Source> {
        if *name == symbol::NEEDS_INPUT_GRAD {
            return Some(Source::NeedsInputGrad);
        }
        let name = name.unraw();
        if let Some(i) = self.params.iter().position(|p| p.ident.unraw() == name) {
            return Some(Source::Param(i));
        }
        if let Some(k) = self.residuals.iter().position(|r| r.ident.unraw() == name) {
            return Some(Source::Residual(k));
        }
        let name = name.to_string();
        self.output_names()
            .iter()
            .position(|o| *o == name)
            .map(Source::Output)
    }

    /// The function name for messages (`scaled_square`).
    pub(crate) fn name(&self) -> String {
        self.ident.unraw().to_string()
    }

    /// The default node name: `scaled_square` → `ScaledSquareBackward0`.
    pub(crate) fn default_node_name(&self) -> String {
        let mut name: String = self
            .name()
            .split('_')
            .filter(|part| !part.is_empty())
            .map(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                    .unwrap_or_default()
            })
            .collect();
        name.push_str("Backward0");
        name
    }
}

/// The return type of the public function for a forward with signature `sig` and `save(..)`
/// residuals: its own, less the residuals. `None` when the signature does not lower (the
/// forward's own expansion reports why).
pub(crate) fn public_return(sig: &Signature, save: &[Ident]) -> Option<proc_macro2::TokenStream> {
    let cx = Ctxt::new();
    let (output, _) = Output::from_syn(&cx, sig, save);
    cx.check().ok()?;
    Some(output.public_return())
}
