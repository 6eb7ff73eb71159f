//! What a forward returns ([`Output`]): one tensor, a tuple (with non-tensor elements), a
//! `Vec<Tensor>`, fallible or not, with the residuals of `save(..)` split off its end.

use quote::ToTokens;
use syn::{GenericArgument, Ident, PathArguments, ReturnType, Signature, Type};

use super::types::{is_tensor, option_inner, result_ok_type, type_string, vec_inner};
use crate::ctxt::Ctxt;

/// The forward's return type.
pub(crate) struct Output<'a> {
    pub(crate) original: &'a ReturnType,
    /// Wrapped in `Result<..>`.
    pub(crate) fallible: bool,
    /// A tuple (outputs named `result_0`, ..) rather than a single `Tensor` (named `result`).
    pub(crate) tuple: bool,
    /// A `Vec<Tensor>`: any number of outputs, named `result` together.
    pub(crate) vec: bool,
    /// One type per output tensor (for `Vec<Tensor>`, the element type).
    pub(crate) tensors: Vec<&'a Type>,
    /// With `save(..)`: the return type of the public function, without the residuals.
    pub(crate) public: Option<Type>,
    /// For a tuple: per element, `Some(i)` for tensor output `i`, `None` for a non-tensor
    /// output (an index, a count, ..), returned as is and not differentiable.
    pub(crate) elems: Vec<Option<usize>>,
}

impl Output<'_> {
    /// The public function's return type: the forward's, less any residuals.
    pub(crate) fn public_return(&self) -> proc_macro2::TokenStream {
        match (&self.public, self.original) {
            (Some(ty), ReturnType::Type(arrow, _)) => quote::quote!(#arrow #ty),
            _ => self.original.to_token_stream(),
        }
    }
}

impl<'a> Output<'a> {
    /// The outputs, and the types of the `save` residuals that follow them.
    pub(super) fn from_syn(
        cx: &Ctxt,
        sig: &'a Signature,
        save: &[Ident],
    ) -> (Output<'a>, Vec<&'a Type>) {
        let mut output = Output {
            original: &sig.output,
            fallible: false,
            tuple: false,
            vec: false,
            tensors: Vec::new(),
            public: None,
            elems: Vec::new(),
        };
        let ReturnType::Type(_, full) = &sig.output else {
            cx.error_at(
                sig.paren_token.span.close(),
                "`#[differentiable]` function must return `Tensor`, a tuple of tensors, `Vec<Tensor>`, or a `Result` of one of them",
            );
            return (output, Vec::new());
        };
        let (ty, fallible) = match result_ok_type(full) {
            Some(ok) => (ok, true),
            None => (&**full, false),
        };
        output.fallible = fallible;
        if !save.is_empty() {
            let residuals = output.split_residuals(cx, full, ty, save);
            return (output, residuals);
        }
        match ty {
            Type::Tuple(tuple) if !tuple.elems.is_empty() => {
                output.tuple = true;
                let elems: Vec<&'a Type> = tuple.elems.iter().collect();
                output.tuple_outputs(cx, ty, &elems);
            }
            ty if is_tensor(ty) => output.tensors.push(ty),
            ty if vec_inner(ty).is_some_and(is_tensor) => {
                output.vec = true;
                output.tensors.extend(vec_inner(ty));
            }
            ty => cx.error_spanned_by(
                ty,
                format!(
                    "`#[differentiable]` function must return `Tensor`, a tuple of tensors, `Vec<Tensor>`, or a `Result` of one of them, found `{}`",
                    type_string(ty)
                ),
            ),
        }
        (output, Vec::new())
    }

    /// With `save(r, ..)`: `ty` is `(outputs.., residuals..)`; the outputs are tensors (one, or
    /// several as a tuple), the residuals anything. Sets `public` to the type without them.
    fn split_residuals(
        &mut self,
        cx: &Ctxt,
        full: &Type,
        ty: &'a Type,
        save: &[Ident],
    ) -> Vec<&'a Type> {
        let k = save.len();
        let elems: Vec<&'a Type> = match ty {
            Type::Tuple(t) => t.elems.iter().collect(),
            _ => Vec::new(),
        };
        if elems.len() <= k {
            let names = save
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            cx.error_spanned_by(
                ty,
                format!(
                    "with `save({names})` the function returns its outputs, then the residuals: `(Tensor, {})`, found `{}`",
                    save.iter().map(|_| "_").collect::<Vec<_>>().join(", "),
                    type_string(ty)
                ),
            );
            return Vec::new();
        }
        let (outputs, residuals) = elems.split_at(elems.len() - k);
        self.tuple = outputs.len() > 1;
        if self.tuple {
            self.tuple_outputs(cx, ty, outputs);
        } else if is_tensor(outputs[0]) {
            self.tensors.push(outputs[0]);
        } else {
            cx.error_spanned_by(
                outputs[0],
                format!(
                    "the output of a `#[differentiable]` function must be `Tensor` (the residuals of `save(..)` come last), found `{}`",
                    type_string(outputs[0])
                ),
            );
        }
        let public: Type = if self.tuple {
            let elems = outputs.iter();
            syn::parse_quote!((#(#elems),*))
        } else {
            outputs[0].clone()
        };
        self.public = Some(if self.fallible {
            let mut full = full.clone();
            if let Some(arg) = first_generic_arg_mut(&mut full) {
                *arg = public;
            }
            full
        } else {
            public
        });
        residuals.to_vec()
    }
}

impl<'a> Output<'a> {
    /// The elements of a tuple output: tensors are the node's outputs; any other type is a
    /// non-differentiable output, returned as is (a tensor inside one is an error).
    fn tuple_outputs(&mut self, cx: &Ctxt, tuple: &Type, elems: &[&'a Type]) {
        for elem in elems {
            if is_tensor(elem) {
                self.elems.push(Some(self.tensors.len()));
                self.tensors.push(elem);
            } else if vec_inner(elem).is_some_and(is_tensor)
                || option_inner(elem).is_some_and(is_tensor)
            {
                cx.error_spanned_by(
                    elem,
                    format!(
                        "`{}` in a tuple of outputs would not be differentiable: return each tensor as an output of its own (`Vec<Tensor>` only as the whole output)",
                        type_string(elem)
                    ),
                );
                self.elems.push(None);
            } else {
                self.elems.push(None);
            }
        }
        if self.tensors.is_empty() {
            cx.error_spanned_by(
                tuple,
                "a `#[differentiable]` function returns at least one `Tensor`; the other outputs are not differentiable",
            );
        }
    }
}

/// The first generic argument of `Result<T, ..>`, to replace `T`.
pub(super) fn first_generic_arg_mut(ty: &mut Type) -> Option<&mut Type> {
    let Type::Path(p) = ty else { return None };
    let PathArguments::AngleBracketed(args) = &mut p.path.segments.last_mut()?.arguments else {
        return None;
    };
    match args.args.first_mut()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}
