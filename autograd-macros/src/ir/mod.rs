//! Typed IR of a forward (`DiffFn`) and of a backward (`BackwardFn`), lowered from `syn` with
//! the syntactic rules of the DSL. Cross-cutting rules (backward against forward, options against
//! parameters) live in `valid/`.

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::{
    Attribute, FnArg, GenericArgument, Ident, Pat, PatType, PathArguments, ReturnType, Signature,
    Token, Type,
};

use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};

pub(crate) mod body;

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

impl<'a> Output<'a> {
    /// The outputs, and the types of the `save` residuals that follow them.
    fn from_syn(cx: &Ctxt, sig: &'a Signature, save: &[Ident]) -> (Output<'a>, Vec<&'a Type>) {
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
fn first_generic_arg_mut(ty: &mut Type) -> Option<&mut Type> {
    let Type::Path(p) = ty else { return None };
    let PathArguments::AngleBracketed(args) = &mut p.path.segments.last_mut()?.arguments else {
        return None;
    };
    match args.args.first_mut()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
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

/// Rejects what a macro-generated free function cannot be: methods, generics, async, ...
fn check_plain_fn(cx: &Ctxt, sig: &Signature, attr: &str) {
    let not_supported = |what: &dyn ToTokens, kind: &str| {
        cx.error_spanned_by(
            what,
            format!("{kind} are not supported by `{attr}`; write a plain free function"),
        );
    };
    if let Some(t) = &sig.constness {
        not_supported(t, "`const fn`s");
    }
    if let Some(t) = &sig.asyncness {
        not_supported(t, "`async fn`s");
    }
    if let Some(t) = &sig.unsafety {
        not_supported(t, "`unsafe fn`s");
    }
    if let Some(t) = &sig.abi {
        not_supported(t, "`extern` functions");
    }
    if let Some(t) = &sig.variadic {
        not_supported(t, "variadic functions");
    }
    if !sig.generics.params.is_empty() {
        not_supported(&sig.generics, "generic functions");
    } else if let Some(w) = &sig.generics.where_clause {
        not_supported(w, "`where` clauses");
    }
    if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
        if attr == "#[differentiable]" {
            cx.error_spanned_by(
                r,
                "methods are not supported by `#[differentiable]`; write a plain free function, or put `#[differentiable]` on the `impl` block, with `fn forward(&self, ..)` and `fn backward(&self, ..)` in it",
            );
            return;
        }
        not_supported(r, "methods");
    }
}

/// `ident: Type` with a plain (possibly `mut`) identifier pattern.
fn plain_param<'a>(cx: &Ctxt, arg: &'a FnArg, attr: &str) -> Option<(&'a PatType, &'a Ident)> {
    let FnArg::Typed(pat_type) = arg else {
        return None; // receivers are reported by `check_plain_fn`
    };
    match &*pat_type.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some((pat_type, &p.ident)),
        pat => {
            cx.error_spanned_by(
                pat,
                format!(
                    "parameters of a `{attr}` function must be plain identifiers (`x: &Tensor`)"
                ),
            );
            None
        }
    }
}

/// What a forward parameter is, by its type.
enum Class {
    /// `&Tensor`.
    Tensor,
    /// `&[Tensor]`.
    Tensors,
    /// `Option<&Tensor>`.
    OptionalTensor,
    /// Anything else.
    Attr,
}

/// The class of a forward parameter, or `Err` for tensor-like types the DSL does not take.
fn classify_param(ty: &Type) -> Result<Class, String> {
    match ty {
        Type::Reference(r) if is_tensor(&r.elem) => match r.mutability {
            None => Ok(Class::Tensor),
            Some(_) => Err("`&mut Tensor` parameters are not supported; take `&Tensor`, and list it in `dirty(..)` if the function modifies it in place".into()),
        },
        Type::Reference(r) if slice_elem(&r.elem).is_some_and(is_tensor) => match r.mutability {
            None => Ok(Class::Tensors),
            Some(_) => Err("`&mut [Tensor]` parameters are not supported; take `&[Tensor]`".into()),
        },
        ty if vec_inner(ty).is_some_and(is_tensor) => Err("a list of tensor inputs is taken as a slice: write `&[Tensor]`".into()),
        ty if is_tensor(ty) => Err("tensor inputs are taken by reference: write `&Tensor`".into()),
        Type::ImplTrait(_) => Err("`impl Trait` parameters are not supported by `#[differentiable]`; name a concrete type".into()),
        ty if option_inner(ty).is_some_and(is_tensor_ref) => Ok(Class::OptionalTensor),
        ty if option_inner(ty).is_some_and(|inner| matches!(inner, Type::Reference(r) if is_tensor(&r.elem))) => {
            Err("`Option<&mut Tensor>` parameters are not supported; an optional input is `Option<&Tensor>`".into())
        }
        _ => Ok(Class::Attr),
    }
}

/// `Tensor` (any path ending in `Tensor`, without generics).
pub(crate) fn is_tensor(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == symbol::TENSOR && s.arguments.is_none()),
        Type::Group(g) => is_tensor(&g.elem),
        Type::Paren(p) => is_tensor(&p.elem),
        _ => false,
    }
}

/// `&Tensor`.
pub(crate) fn is_tensor_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && is_tensor(&r.elem))
}

/// `Option<&Tensor>`.
pub(crate) fn is_option_tensor_ref(ty: &Type) -> bool {
    option_inner(ty).is_some_and(is_tensor_ref)
}

/// `&[T]` (shared) with `elem(T)`.
pub(crate) fn is_slice_ref_of(ty: &Type, elem: impl Fn(&Type) -> bool) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && slice_elem(&r.elem).is_some_and(elem))
}

/// `&[Tensor]`.
pub(crate) fn is_tensor_slice_ref(ty: &Type) -> bool {
    is_slice_ref_of(ty, is_tensor)
}

/// `InputMetadata` (any path ending in `InputMetadata`, without generics).
pub(crate) fn is_input_metadata(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == symbol::INPUT_METADATA && s.arguments.is_none()),
        Type::Group(g) => is_input_metadata(&g.elem),
        Type::Paren(p) => is_input_metadata(&p.elem),
        _ => false,
    }
}

/// `&InputMetadata`.
pub(crate) fn is_input_metadata_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && is_input_metadata(&r.elem))
}

/// `[bool; N]`: `Some(N)` for a literal `N`.
pub(crate) fn bool_array_len(ty: &Type) -> Option<usize> {
    let Type::Array(a) = ty else { return None };
    let is_bool = matches!(&*a.elem, Type::Path(p) if p.qself.is_none() && p.path.is_ident(symbol::BOOL.as_str()));
    match &a.len {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) if is_bool => n.base10_parse().ok(),
        _ => None,
    }
}

/// `&[bool]`.
pub(crate) fn is_bool_slice_ref(ty: &Type) -> bool {
    is_slice_ref_of(
        ty,
        |t| matches!(t, Type::Path(p) if p.qself.is_none() && p.path.is_ident(symbol::BOOL.as_str())),
    )
}

fn grad_type(ty: &Type) -> GradType {
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

/// `T` in `Option<T>`.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    generic_arg(ty, symbol::OPTION_TYPE)
}

/// `T` in `Vec<T>`.
pub(crate) fn vec_inner(ty: &Type) -> Option<&Type> {
    generic_arg(ty, symbol::VEC_TYPE)
}

/// `T` in `[T]`.
fn slice_elem(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Slice(s) => Some(&s.elem),
        Type::Group(g) => slice_elem(&g.elem),
        Type::Paren(p) => slice_elem(&p.elem),
        _ => None,
    }
}

/// Reads `#[needed_for(..)]` and `#[original]` off a backward parameter (the other attributes
/// stay for rustc).
fn param_attrs<'a>(cx: &Ctxt, mut param: BwParam<'a>) -> BwParam<'a> {
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

/// `T` in `Result<T>` or `Result<T, E>` (any path ending in `Result`).
fn result_ok_type(ty: &Type) -> Option<&Type> {
    generic_arg(ty, symbol::RESULT_TYPE)
}

fn generic_arg(ty: &Type, name: Symbol) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() || !name.ends(&p.path) {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &p.path.segments.last()?.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// A type as users write it, for messages: `&Tensor`, `Option<&Tensor>`, `Vec<usize>`.
pub(crate) fn type_string(ty: &Type) -> String {
    let raw = ty.to_token_stream().to_string();
    let mut s = raw;
    for (from, to) in [
        ("& ", "&"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        (" :: ", "::"),
        (":: ", "::"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
    ] {
        s = s.replace(from, to);
    }
    s
}

/// Where to point when a list is empty: the closing parenthesis of the signature.
pub(crate) fn params_end(sig: &Signature) -> Span {
    sig.paren_token.span.close()
}

#[cfg(test)]
mod tests;
