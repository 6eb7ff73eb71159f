//! Parsing of the attribute arguments: `#[differentiable(name = "..", once_differentiable,
//! materialize_grads = false, non_differentiable(result_1), dirty(x), save(r), builtin, crate =
//! "..")]` and `#[backward(path::to::forward)]`, plus the two the runtime's op library uses:
//! `rule` on a `builtin` forward and `formula = ..` on its backward.

use proc_macro2::{Span, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, LitBool, LitStr, Path, Token};

use crate::symbol::{self, Symbol};

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(once_differentiable);
    syn::custom_keyword!(materialize_grads);
    syn::custom_keyword!(non_differentiable);
    syn::custom_keyword!(dirty);
    syn::custom_keyword!(save);
    syn::custom_keyword!(builtin);
    syn::custom_keyword!(derive);
    syn::custom_keyword!(rule);
    syn::custom_keyword!(formula);
}

/// The options of `#[differentiable(..)]`. Each keeps the span of its keyword for errors.
#[derive(Default)]
pub(crate) struct DiffArgs {
    /// `name = "MyFnBackward"`: the node name (default `<CamelCase>Backward0`).
    pub(crate) name: Option<LitStr>,
    /// `once_differentiable`: the backward runs under `no_grad` (B36).
    pub(crate) once_differentiable: Option<Span>,
    /// `materialize_grads = false`: undefined incoming gradients reach the backward as `None`.
    pub(crate) materialize_grads: Option<LitBool>,
    /// `non_differentiable(result_1, ..)`: outputs that never require grad.
    pub(crate) non_differentiable: Option<NameList>,
    /// `dirty(x, ..)`: inputs the forward modifies in place and returns.
    pub(crate) dirty: Option<NameList>,
    /// `save(a, ..)`: residuals the forward returns after its outputs, for the backward only.
    pub(crate) save: Option<NameList>,
    /// `builtin`: PyTorch's generated-node semantics (for the op library).
    pub(crate) builtin: Option<Span>,
    /// `crate = "path"`: where generated code finds the runtime (default `::autograd`).
    pub(crate) krate: Option<Path>,
    /// `derive`: the macro derives the backward from the body (no `#[backward]`).
    pub(crate) derive: Option<Span>,
    /// `rule` (`rule = name`): a `builtin` op's derivative rule, `DerivativeRules::<name>`
    /// (default: the function's name), generated from its declaration as a user function's is.
    /// Runtime-internal: not listed among the options.
    pub(crate) rule: Option<RuleName>,
    /// Set (never parsed) on the hidden pair `#[differentiable(derive)]` expands to: its body's
    /// ops propagate forward-mode tangents themselves, so it needs no `#[jvp]`.
    pub(crate) derived: bool,
}

/// `rule` or `rule = name`.
pub(crate) struct RuleName {
    pub(crate) keyword: Span,
    pub(crate) name: Option<Ident>,
}

/// `keyword(a, b, ..)`.
pub(crate) struct NameList {
    pub(crate) keyword: Span,
    pub(crate) names: Vec<Ident>,
}

impl DiffArgs {
    pub(crate) fn materialize_grads(&self) -> bool {
        self.materialize_grads.as_ref().is_none_or(|b| b.value)
    }

    pub(crate) fn non_differentiable(&self) -> &[Ident] {
        self.non_differentiable.as_ref().map_or(&[], |l| &l.names)
    }

    pub(crate) fn dirty(&self) -> &[Ident] {
        self.dirty.as_ref().map_or(&[], |l| &l.names)
    }

    pub(crate) fn save(&self) -> &[Ident] {
        self.save.as_ref().map_or(&[], |l| &l.names)
    }

    pub(crate) fn builtin(&self) -> bool {
        self.builtin.is_some()
    }

    /// The name of a `builtin` op's derivative rule (`rule = name`, or the function's).
    pub(crate) fn rule_name<'a>(&'a self, function: &'a Ident) -> Option<&'a Ident> {
        self.rule
            .as_ref()
            .map(|r| r.name.as_ref().unwrap_or(function))
    }

    pub(crate) fn krate(&self) -> Path {
        self.krate
            .clone()
            .unwrap_or_else(|| syn::parse_quote!(::autograd))
    }
}

impl Parse for DiffArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<DiffArgs> {
        let mut args = DiffArgs::default();
        let mut errors: Option<syn::Error> = None;
        let mut push = |e: syn::Error| match &mut errors {
            Some(all) => all.combine(e),
            None => errors = Some(e),
        };
        while !input.is_empty() {
            // Peeked outside the lookahead, so that its error lists the public options only.
            if input.peek(kw::rule) {
                let kw: kw::rule = input.parse()?;
                let name = if input.peek(Token![=]) {
                    input.parse::<Token![=]>()?;
                    Some(input.parse()?)
                } else {
                    None
                };
                let rule = RuleName {
                    keyword: kw.span,
                    name,
                };
                set(&mut args.rule, rule, kw.span, symbol::RULE, &mut push);
                if input.is_empty() {
                    break;
                }
                input.parse::<Token![,]>()?;
                continue;
            }
            let lookahead = input.lookahead1();
            if lookahead.peek(kw::name) {
                let kw: kw::name = input.parse()?;
                input.parse::<Token![=]>()?;
                let lit: LitStr = input.parse()?;
                if lit.value().is_empty() {
                    push(syn::Error::new_spanned(
                        &lit,
                        "the node name cannot be empty",
                    ));
                }
                set(&mut args.name, lit, kw.span, symbol::NAME, &mut push);
            } else if lookahead.peek(kw::once_differentiable) {
                let kw: kw::once_differentiable = input.parse()?;
                set(
                    &mut args.once_differentiable,
                    kw.span,
                    kw.span,
                    symbol::ONCE_DIFFERENTIABLE,
                    &mut push,
                );
            } else if lookahead.peek(kw::materialize_grads) {
                let kw: kw::materialize_grads = input.parse()?;
                input.parse::<Token![=]>()?;
                let lit: LitBool = input.parse()?;
                set(
                    &mut args.materialize_grads,
                    lit,
                    kw.span,
                    symbol::MATERIALIZE_GRADS,
                    &mut push,
                );
            } else if lookahead.peek(kw::non_differentiable) {
                let kw: kw::non_differentiable = input.parse()?;
                let list = NameList::parse(input, kw.span, symbol::NON_DIFFERENTIABLE)?;
                set(
                    &mut args.non_differentiable,
                    list,
                    kw.span,
                    symbol::NON_DIFFERENTIABLE,
                    &mut push,
                );
            } else if lookahead.peek(kw::dirty) {
                let kw: kw::dirty = input.parse()?;
                let list = NameList::parse(input, kw.span, symbol::DIRTY)?;
                set(&mut args.dirty, list, kw.span, symbol::DIRTY, &mut push);
            } else if lookahead.peek(kw::save) {
                let kw: kw::save = input.parse()?;
                let list = NameList::parse(input, kw.span, symbol::SAVE)?;
                set(&mut args.save, list, kw.span, symbol::SAVE, &mut push);
            } else if lookahead.peek(kw::builtin) {
                let kw: kw::builtin = input.parse()?;
                set(
                    &mut args.builtin,
                    kw.span,
                    kw.span,
                    symbol::BUILTIN,
                    &mut push,
                );
            } else if lookahead.peek(kw::derive) {
                let kw: kw::derive = input.parse()?;
                set(
                    &mut args.derive,
                    kw.span,
                    kw.span,
                    symbol::DERIVE,
                    &mut push,
                );
            } else if lookahead.peek(Token![crate]) {
                let kw: Token![crate] = input.parse()?;
                input.parse::<Token![=]>()?;
                let lit: LitStr = input.parse()?;
                let path = lit.parse_with(Path::parse_mod_style)?;
                set(&mut args.krate, path, kw.span, symbol::CRATE, &mut push);
            } else if input.peek(Ident::peek_any) {
                let unknown = input.call(Ident::parse_any)?;
                push(syn::Error::new_spanned(
                    &unknown,
                    format!(
                        "unknown option `{unknown}`; expected one of {}",
                        backticked(symbol::OPTIONS.iter().map(|s| s.as_str()))
                    ),
                ));
                // Skip the option's value so that the options after it are still checked.
                while !input.is_empty() && !input.peek(Token![,]) {
                    input.parse::<TokenTree>()?;
                }
            } else {
                return Err(lookahead.error());
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        match errors {
            Some(e) => Err(e),
            None => Ok(args),
        }
    }
}

/// Stores an option, or reports a duplicate at its second occurrence.
fn set<T>(
    slot: &mut Option<T>,
    value: T,
    keyword: Span,
    name: Symbol,
    push: &mut impl FnMut(syn::Error),
) {
    if slot.is_some() {
        push(syn::Error::new(
            keyword,
            format!("duplicate option `{name}`; each option may be given once"),
        ));
    } else {
        *slot = Some(value);
    }
}

impl NameList {
    fn parse(input: ParseStream<'_>, keyword: Span, name: Symbol) -> syn::Result<NameList> {
        let content;
        let parens = syn::parenthesized!(content in input);
        let names: Punctuated<Ident, Token![,]> =
            content.parse_terminated(Ident::parse, Token![,])?;
        if names.is_empty() {
            return Err(syn::Error::new(
                parens.span.join(),
                format!("`{name}(..)` needs at least one name"),
            ));
        }
        Ok(NameList {
            keyword,
            names: names.into_iter().collect(),
        })
    }
}

/// The argument of `#[backward(..)]`: the path of the `#[differentiable]` function, and (for the
/// runtime's op library) `formula = GradFormula::..`, the grad formula kernel that computes the
/// backward in one pass when it is not recorded.
pub(crate) struct BackwardArgs {
    pub(crate) forward: Path,
    pub(crate) formula: Option<syn::Expr>,
}

impl Parse for BackwardArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<BackwardArgs> {
        if input.is_empty() {
            return Err(input.error(
                "`#[backward]` needs the name of its forward function, e.g. `#[backward(scaled_square)]`",
            ));
        }
        let forward = input.call(Path::parse_mod_style)?;
        let mut formula = None;
        if input.peek(Token![,]) && input.peek2(kw::formula) {
            input.parse::<Token![,]>()?;
            input.parse::<kw::formula>()?;
            input.parse::<Token![=]>()?;
            formula = Some(input.parse()?);
        }
        if !input.is_empty() {
            return Err(input.error(
                "`#[backward(..)]` takes only the path of the `#[differentiable]` function; options go on `#[differentiable(..)]`",
            ));
        }
        Ok(BackwardArgs { forward, formula })
    }
}

/// "`a`, `b`, `c`" for error messages.
pub(crate) fn backticked<S: std::fmt::Display>(names: impl IntoIterator<Item = S>) -> String {
    names
        .into_iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The input of the hidden `__check_backward!`, as the forward's signature macro assembles it:
/// `{ forward options } { forward signature } { forward path } { backward name } { backward
/// signature }`.
pub(crate) struct CheckInput {
    pub(crate) args: proc_macro2::TokenStream,
    pub(crate) forward: syn::Signature,
    pub(crate) forward_path: Path,
    pub(crate) backward: syn::Signature,
}

impl Parse for CheckInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<CheckInput> {
        fn group(input: ParseStream<'_>) -> syn::Result<proc_macro2::TokenStream> {
            let content;
            syn::braced!(content in input);
            content.parse()
        }
        Ok(CheckInput {
            args: group(input)?,
            forward: syn::parse2(group(input)?)?,
            forward_path: syn::parse::Parser::parse2(Path::parse_mod_style, group(input)?)?,
            backward: {
                // The backward's name comes separately for the fallback signature macro, which
                // cannot take it out of a signature; here it is in `backward.ident` too.
                group(input)?;
                syn::parse2(group(input)?)?
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_errors(tokens: proc_macro2::TokenStream) -> Vec<String> {
        match syn::parse2::<DiffArgs>(tokens) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn every_option_parses() {
        let args: DiffArgs = syn::parse_quote!(
            name = "MyBackward",
            once_differentiable,
            materialize_grads = false,
            non_differentiable(result_1),
            dirty(x, y),
            save(argmax),
            builtin,
            crate = "crate::inner",
        );
        assert_eq!(
            args.name.as_ref().map(LitStr::value).as_deref(),
            Some("MyBackward")
        );
        assert!(args.once_differentiable.is_some() && !args.materialize_grads());
        assert_eq!(args.non_differentiable.map(|l| l.names.len()), Some(1));
        assert_eq!(args.dirty.map(|l| l.names.len()), Some(2));
        assert_eq!(args.save.map(|l| l.names.len()), Some(1));
        assert!(args.builtin.is_some());
        let krate = args.krate.expect("crate");
        assert_eq!(quote::quote!(#krate).to_string(), "crate :: inner");
        let defaults = DiffArgs::default();
        assert!(defaults.materialize_grads() && !defaults.builtin());
        let krate = defaults.krate();
        assert_eq!(quote::quote!(#krate).to_string(), ":: autograd");
    }

    #[test]
    fn unknown_and_duplicate_options_are_all_reported() {
        let errs = parse_errors(quote::quote!(
            nmae = "X",
            dirty(x),
            once_differentiable,
            dirty(y),
            fast
        ));
        assert_eq!(
            errs,
            [
                "unknown option `nmae`; expected one of `name`, `once_differentiable`, `materialize_grads`, `non_differentiable`, `dirty`, `save`, `builtin`, `derive`, `crate`",
                "duplicate option `dirty`; each option may be given once",
                "unknown option `fast`; expected one of `name`, `once_differentiable`, `materialize_grads`, `non_differentiable`, `dirty`, `save`, `builtin`, `derive`, `crate`",
            ]
        );
        assert_eq!(
            parse_errors(quote::quote!(name = "")),
            ["the node name cannot be empty"]
        );
        assert_eq!(
            parse_errors(quote::quote!(dirty())),
            ["`dirty(..)` needs at least one name"]
        );
    }

    #[test]
    fn backward_takes_one_path() {
        let args: BackwardArgs = syn::parse_quote!(super::ops::scaled_square);
        assert_eq!(args.forward.segments.len(), 3);
        assert!(syn::parse2::<BackwardArgs>(quote::quote!()).is_err());
        assert!(syn::parse2::<BackwardArgs>(quote::quote!(f, once_differentiable)).is_err());
        let args: BackwardArgs = syn::parse_quote!(tanh, formula = GradFormula::Tanh);
        assert!(args.formula.is_some());
        assert!(syn::parse2::<BackwardArgs>(quote::quote!(tanh, formula = A, b)).is_err());
    }

    #[test]
    fn a_builtin_names_its_rule() {
        let f: Ident = syn::parse_quote!(sum_dims);
        let args: DiffArgs = syn::parse_quote!(builtin, rule, crate = "crate");
        assert_eq!(
            args.rule_name(&f).map(ToString::to_string).as_deref(),
            Some("sum_dims")
        );
        let args: DiffArgs = syn::parse_quote!(builtin, rule = sum_axes);
        assert_eq!(
            args.rule_name(&f).map(ToString::to_string).as_deref(),
            Some("sum_axes")
        );
        assert!(DiffArgs::default().rule_name(&f).is_none());
        assert_eq!(
            parse_errors(quote::quote!(rule, rule)),
            ["duplicate option `rule`; each option may be given once"]
        );
    }
}
