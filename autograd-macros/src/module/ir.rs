//! `#[derive(Module)]`'s view of a struct: its options and each field's role (parameter,
//! buffer, child module, training flag, skipped), read from the field's type and attributes.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Data, DeriveInput, Fields, GenericArgument, Ident, LitBool, LitStr, Path, PathArguments, Type,
    TypeParamBound,
};

use crate::attr::backticked;
use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};

/// The struct, as the expansion needs it.
pub(crate) struct Input<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) opts: Options,
    pub(crate) fields: Vec<Field<'a>>,
}

/// `#[module(..)]` on the struct.
#[derive(Default)]
pub(crate) struct Options {
    /// `crate = "path"`: where the generated code finds the runtime.
    pub(crate) krate: Option<Path>,
    /// `name = "ReLU"`: the name `repr` prints (default: the struct's).
    pub(crate) name: Option<LitStr>,
    /// `extra_repr = path`: a `fn(&Self) -> String` whose text `repr` prints inside the
    /// parentheses (PyTorch's `extra_repr()`).
    pub(crate) extra_repr: Option<Path>,
    /// `transparent`: the module is its one field that is not skipped (a child), with the same
    /// names, mode and repr (serde's `transparent`).
    pub(crate) transparent: Option<Span>,
}

/// One named field.
pub(crate) struct Field<'a> {
    pub(crate) ident: &'a Ident,
    /// The name PyTorch would give it (the identifier without `r#`).
    pub(crate) name: String,
    pub(crate) role: Role<'a>,
}

/// What a field is to the module.
pub(crate) enum Role<'a> {
    /// `Tensor`, or `Option<Tensor>` (`optional`): a parameter.
    Parameter { optional: bool },
    /// `#[buffer]` on `Tensor` or `Option<Tensor>`.
    Buffer { optional: bool, persistent: bool },
    /// A child module: the field's type (or `Option`'s argument, `optional`).
    Child { ty: &'a Type, optional: bool },
    /// `#[module(training)] bool`, or a field `training: bool` (PyTorch's attribute).
    Training,
    /// `#[module(skip)]`, or `PhantomData`.
    Skip,
}

/// What the attributes of a field ask for.
#[derive(Default)]
struct FieldAttrs {
    skip: Option<Span>,
    training: Option<Span>,
    /// `#[buffer]`: its span and `persistent`.
    buffer: Option<(Span, bool)>,
    /// `rename = "0"`: the name PyTorch gives the field, when it is not the identifier.
    rename: Option<LitStr>,
}

impl<'a> Input<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, input: &'a DeriveInput) -> Input<'a> {
        let opts = container_options(cx, input);
        let fields = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) => named.named.iter().filter_map(|f| field(cx, f)).collect(),
                Fields::Unit => Vec::new(),
                Fields::Unnamed(unnamed) => {
                    cx.error_spanned_by(
                        unnamed,
                        "`#[derive(Module)]` needs named fields: PyTorch names parameters and \
                         children after them",
                    );
                    Vec::new()
                }
            },
            Data::Enum(data) => {
                cx.error_spanned_by(
                    data.enum_token,
                    "`#[derive(Module)]` supports structs only: a module's parameters and \
                     children are its fields",
                );
                Vec::new()
            }
            Data::Union(data) => {
                cx.error_spanned_by(
                    data.union_token,
                    "`#[derive(Module)]` supports structs only: a module's parameters and \
                     children are its fields",
                );
                Vec::new()
            }
        };
        let trainings: Vec<&Field<'_>> = fields
            .iter()
            .filter(|f| matches!(f.role, Role::Training))
            .collect();
        for second in trainings.iter().skip(1) {
            cx.error_spanned_by(
                second.ident,
                format!(
                    "a second `#[module(training)]` field: `{}` already holds the mode",
                    trainings[0].name
                ),
            );
        }
        if let Some(span) = opts.transparent {
            check_transparent(cx, span, &opts, &fields);
        }
        Input {
            original: input,
            opts,
            fields,
        }
    }
}

/// `transparent` needs exactly one field that is not skipped, a child module, and no repr
/// options (the child's repr is the module's).
fn check_transparent(cx: &Ctxt, span: Span, opts: &Options, fields: &[Field<'_>]) {
    let kept: Vec<&Field<'_>> = fields
        .iter()
        .filter(|f| !matches!(f.role, Role::Skip))
        .collect();
    match kept.as_slice() {
        [only]
            if matches!(
                only.role,
                Role::Child {
                    optional: false,
                    ..
                }
            ) => {}
        [only] => cx.error_spanned_by(
            only.ident,
            "`#[module(transparent)]` needs its one field to be a child module (not a tensor, a \
             flag or an `Option`)",
        ),
        _ => cx.error_at(
            span,
            format!(
                "`#[module(transparent)]` needs exactly one field that is not \
                 `#[module(skip)]`, found {}",
                kept.len()
            ),
        ),
    }
    if let Some(path) = &opts.extra_repr {
        cx.error_spanned_by(
            path,
            "`extra_repr` has no effect with `transparent`: the child's repr is printed",
        );
    }
    if let Some(name) = &opts.name {
        cx.error_spanned_by(
            name,
            "`name` has no effect with `transparent`: the child's repr is printed",
        );
    }
}

/// Parses `#[module(..)]` on the struct; `#[buffer]` there is an error.
fn container_options(cx: &Ctxt, input: &DeriveInput) -> Options {
    let mut opts = Options::default();
    for attr in &input.attrs {
        if attr.path().is_ident(symbol::BUFFER.as_str()) {
            cx.error_spanned_by(
                attr,
                "`#[buffer]` goes on a `Tensor` field, not on the struct",
            );
            continue;
        }
        if !attr.path().is_ident(symbol::MODULE.as_str()) {
            continue;
        }
        let parsed = attr.parse_nested_meta(|meta| {
            let duplicate = |what: Symbol| {
                syn::Error::new_spanned(&meta.path, format!("duplicate option `{what}`"))
            };
            if symbol::CRATE.is(&meta.path) {
                let path = path_value(&meta)?;
                if opts.krate.replace(path).is_some() {
                    return Err(duplicate(symbol::CRATE));
                }
            } else if symbol::NAME.is(&meta.path) {
                let name: LitStr = meta.value()?.parse()?;
                if opts.name.replace(name).is_some() {
                    return Err(duplicate(symbol::NAME));
                }
            } else if symbol::EXTRA_REPR.is(&meta.path) {
                let path = path_value(&meta)?;
                if opts.extra_repr.replace(path).is_some() {
                    return Err(duplicate(symbol::EXTRA_REPR));
                }
            } else if symbol::TRANSPARENT.is(&meta.path) {
                if opts.transparent.replace(meta.path.span()).is_some() {
                    return Err(duplicate(symbol::TRANSPARENT));
                }
            } else if symbol::SKIP.is(&meta.path) || symbol::TRAINING.is(&meta.path) {
                return Err(meta.error(format!(
                    "`{}` goes on a field: `#[module({})]` on a struct takes {}",
                    path_text(&meta.path),
                    path_text(&meta.path),
                    backticked(symbol::MODULE_OPTIONS.iter().map(|s| s.as_str()))
                )));
            } else {
                return Err(meta.error(format!(
                    "unknown option `{}`; expected one of {}",
                    path_text(&meta.path),
                    backticked(symbol::MODULE_OPTIONS.iter().map(|s| s.as_str()))
                )));
            }
            Ok(())
        });
        if let Err(e) = parsed {
            cx.syn_error(e);
        }
    }
    opts
}

/// `= path` or `= "path"`.
fn path_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Path> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        lit.parse_with(Path::parse_mod_style)
    } else {
        value.call(Path::parse_mod_style)
    }
}

/// A path as written, for messages.
fn path_text(path: &Path) -> String {
    quote::ToTokens::to_token_stream(path)
        .to_string()
        .replace(' ', "")
}

/// Reads a field's attributes, then its role from its type.
fn field<'a>(cx: &Ctxt, field: &'a syn::Field) -> Option<Field<'a>> {
    let ident = field.ident.as_ref()?;
    let attrs = field_attrs(cx, field);
    let name = attrs
        .rename
        .as_ref()
        .map_or_else(|| ident.unraw().to_string(), LitStr::value);
    let role = role(cx, field, &attrs)?;
    Some(Field { ident, name, role })
}

fn field_attrs(cx: &Ctxt, field: &syn::Field) -> FieldAttrs {
    let mut attrs = FieldAttrs::default();
    for attr in &field.attrs {
        let parsed = if attr.path().is_ident(symbol::MODULE.as_str()) {
            attr.parse_nested_meta(|meta| {
                if symbol::RENAME.is(&meta.path) {
                    let name: LitStr = meta.value()?.parse()?;
                    let text = name.value();
                    if text.is_empty() || text.contains('.') {
                        return Err(syn::Error::new_spanned(
                            &name,
                            format!(
                                "a module, parameter or buffer name is not empty and has no \
                                 `.`, got: \"{text}\""
                            ),
                        ));
                    }
                    if attrs.rename.replace(name).is_some() {
                        return Err(meta.error("duplicate option `rename`"));
                    }
                    return Ok(());
                }
                let slot = if symbol::SKIP.is(&meta.path) {
                    &mut attrs.skip
                } else if symbol::TRAINING.is(&meta.path) {
                    &mut attrs.training
                } else {
                    return Err(meta.error(format!(
                        "unknown field option `{}`; expected one of {}",
                        path_text(&meta.path),
                        backticked(symbol::MODULE_FIELD_OPTIONS.iter().map(|s| s.as_str()))
                    )));
                };
                if slot.replace(meta.path.span()).is_some() {
                    return Err(meta.error(format!("duplicate option `{}`", path_text(&meta.path))));
                }
                Ok(())
            })
        } else if attr.path().is_ident(symbol::BUFFER.as_str()) {
            buffer_attr(attr).map(|persistent| {
                if attrs.buffer.is_some() {
                    cx.error_spanned_by(attr, "duplicate `#[buffer]`");
                }
                attrs.buffer = Some((attr.span(), persistent));
            })
        } else {
            Ok(())
        };
        if let Err(e) = parsed {
            cx.syn_error(e);
        }
    }
    attrs
}

/// `#[buffer]` (persistent) or `#[buffer(persistent = false)]`.
fn buffer_attr(attr: &syn::Attribute) -> syn::Result<bool> {
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Ok(true);
    }
    let mut persistent = None;
    attr.parse_nested_meta(|meta| {
        if symbol::PERSISTENT.is(&meta.path) {
            let value: LitBool = meta.value()?.parse()?;
            if persistent.replace(value.value).is_some() {
                return Err(meta.error("duplicate option `persistent`"));
            }
            Ok(())
        } else {
            Err(meta.error(format!(
                "unknown `#[buffer]` option `{}`; expected `persistent = false`",
                path_text(&meta.path)
            )))
        }
    })?;
    Ok(persistent.unwrap_or(true))
}

/// The role the attributes and the type give a field, or `None` after reporting an error.
fn role<'a>(cx: &Ctxt, field: &'a syn::Field, attrs: &FieldAttrs) -> Option<Role<'a>> {
    let ty = &field.ty;
    let exclusive = [
        attrs.skip.map(|s| (s, "`#[module(skip)]`")),
        attrs.training.map(|s| (s, "`#[module(training)]`")),
        attrs.buffer.map(|(s, _)| (s, "`#[buffer]`")),
    ];
    let given: Vec<(Span, &str)> = exclusive.into_iter().flatten().collect();
    if let [(_, first), (span, second), ..] = given.as_slice() {
        cx.error_at(*span, format!("{second} cannot be combined with {first}"));
        return None;
    }
    if attrs.skip.is_some() {
        return Some(Role::Skip);
    }
    let tensor = tensor_type(ty);
    if let Some((_, persistent)) = attrs.buffer {
        let Some(optional) = tensor else {
            cx.error_spanned_by(
                ty,
                "`#[buffer]` requires a `Tensor` or `Option<Tensor>` field",
            );
            return None;
        };
        return Some(Role::Buffer {
            optional,
            persistent,
        });
    }
    if attrs.training.is_some() {
        if !is_path(ty, symbol::BOOL) {
            cx.error_spanned_by(ty, "`#[module(training)]` requires a `bool` field");
            return None;
        }
        return Some(Role::Training);
    }
    if let Some(optional) = tensor {
        return Some(Role::Parameter { optional });
    }
    // PyTorch's attribute: a `training: bool` field is the flag without being marked.
    if field
        .ident
        .as_ref()
        .is_some_and(|i| i.unraw() == "training")
        && is_path(ty, symbol::BOOL)
    {
        return Some(Role::Training);
    }
    if is_path(ty, symbol::PHANTOM_DATA) {
        return Some(Role::Skip);
    }
    let (child, optional) = match generic_arg(ty, symbol::OPTION_TYPE) {
        Some(inner) => (inner, true),
        None => (ty, false),
    };
    if let Err(e) = check_child(child) {
        cx.syn_error(e);
        return None;
    }
    Some(Role::Child {
        ty: child,
        optional,
    })
}

/// `Some(false)` for `Tensor`, `Some(true)` for `Option<Tensor>`, `None` otherwise.
fn tensor_type(ty: &Type) -> Option<bool> {
    if is_path(ty, symbol::TENSOR) {
        return Some(false);
    }
    generic_arg(ty, symbol::OPTION_TYPE)
        .filter(|inner| is_path(inner, symbol::TENSOR))
        .map(|_| true)
}

/// `ty` is a path ending in `word` without generic arguments.
fn is_path(ty: &Type, word: Symbol) -> bool {
    match ungroup(ty) {
        Type::Path(p) if p.qself.is_none() => {
            p.path
                .segments
                .last()
                .is_some_and(|s| s.ident == word && s.arguments.is_none())
                || (word == symbol::PHANTOM_DATA && word.ends(&p.path))
        }
        _ => false,
    }
}

/// The single type argument of `Word<T>` (`Option<T>`, `Vec<T>`, `Box<T>`).
fn generic_arg(ty: &Type, word: Symbol) -> Option<&Type> {
    let Type::Path(p) = ungroup(ty) else {
        return None;
    };
    let last = p.path.segments.last()?;
    if p.qself.is_some() || last.ident != word {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

fn ungroup(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => ungroup(&g.elem),
        Type::Paren(p) => ungroup(&p.elem),
        _ => ty,
    }
}

const SEE_THROUGH: &str = "a field of a `#[derive(Module)]` struct is a parameter (`Tensor`, \
                           `Option<Tensor>`), a buffer (`#[buffer]`), or a child module (`M`, \
                           `Option<M>`, `Vec<M>`, `Box<M>`, `Box<dyn Forward>`); mark any other \
                           field `#[module(skip)]`";

/// Whether the derive can treat `ty` as a child module (rustc then checks that it implements
/// `Module`); if not, where and why.
fn check_child(ty: &Type) -> syn::Result<()> {
    let ty = ungroup(ty);
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            if let Some(inner) = generic_arg(ty, symbol::VEC_TYPE) {
                if tensor_type(inner).is_some() {
                    return Err(syn::Error::new_spanned(
                        ty,
                        "`#[derive(Module)]` cannot hold tensors in a `Vec`: give each parameter \
                         a field, or hold a `Vec` of modules",
                    ));
                }
                return check_nested(inner);
            }
            if let Some(inner) = generic_arg(ty, symbol::BOX_TYPE) {
                return check_boxed(inner);
            }
            if generic_arg(ty, symbol::OPTION_TYPE).is_some() {
                return Err(syn::Error::new_spanned(
                    ty,
                    format!(
                        "`#[derive(Module)]` cannot see through a nested `Option`: {SEE_THROUGH}"
                    ),
                ));
            }
            Ok(())
        }
        Type::Reference(r) => Err(syn::Error::new_spanned(
            r.and_token,
            "a module owns its children: a reference cannot be a child module; hold the module \
             itself, or mark the field `#[module(skip)]`",
        )),
        _ => Err(syn::Error::new_spanned(
            ty,
            format!("`#[derive(Module)]` cannot see through this type: {SEE_THROUGH}"),
        )),
    }
}

/// A `Vec`'s element: a module, not an `Option`.
fn check_nested(inner: &Type) -> syn::Result<()> {
    if generic_arg(inner, symbol::OPTION_TYPE).is_some() {
        return Err(syn::Error::new_spanned(
            inner,
            format!("`#[derive(Module)]` cannot see through an `Option` in a `Vec`: {SEE_THROUGH}"),
        ));
    }
    check_child(inner)
}

/// A `Box`'s content: a module, or `dyn Module` / `dyn Forward`.
fn check_boxed(inner: &Type) -> syn::Result<()> {
    let Type::TraitObject(object) = ungroup(inner) else {
        return check_nested(inner);
    };
    let is_module_trait = |b: &TypeParamBound| match b {
        TypeParamBound::Trait(t) => symbol::MODULE_TRAITS.iter().any(|s| s.ends(&t.path)),
        _ => false,
    };
    if object.bounds.iter().any(is_module_trait) {
        return Ok(());
    }
    Err(syn::Error::new_spanned(
        inner,
        "`#[derive(Module)]` cannot see through this `Box`: a boxed child is `Box<dyn Forward>`, \
         `Box<dyn Module>` or `Box<M>` for a module `M`; mark other fields `#[module(skip)]`",
    ))
}
