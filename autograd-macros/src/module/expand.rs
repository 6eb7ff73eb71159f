//! `#[derive(Module)]`'s output: `impl Module` (tensors, children, mode, repr) and `Display`.
//! Infallible: every check ran on the IR.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Ident, Path, Type, WherePredicate};

use super::ir::{Field, Input, Role};

/// The paths the generated code names.
struct Paths {
    module: TokenStream,
    as_module: TokenStream,
    private: TokenStream,
    tensor: TokenStream,
    result: TokenStream,
}

impl Paths {
    fn new(krate: &Path) -> Paths {
        Paths {
            module: quote!(#krate::nn::Module),
            as_module: quote!(#krate::nn::AsModule),
            private: quote!(#krate::nn::__private),
            tensor: quote!(#krate::Tensor),
            result: quote!(#krate::Result),
        }
    }
}

pub(crate) fn module_impl(input: &Input<'_>, krate: &Path) -> TokenStream {
    let paths = Paths::new(krate);
    let ident = &input.original.ident;
    let (impl_generics, ty_generics, where_clause) = input.original.generics.split_for_impl();
    let mut where_clause = where_clause
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(where));
    where_clause.predicates.extend(child_bounds(input, &paths));
    let transparent = input.opts.transparent.and_then(|_| {
        input.fields.iter().find_map(|f| match f.role {
            Role::Child { ty, .. } => Some((f.ident, ty)),
            _ => None,
        })
    });
    let body = match transparent {
        Some((ident, ty)) => vec![delegate(ident, ty, &paths)],
        None => vec![
            parameters(input, &paths),
            buffers(input, &paths),
            children(input, &paths),
            training(input, &paths),
            repr(input, &paths),
        ],
    };
    let Paths { module, .. } = &paths;
    quote! {
        #[automatically_derived]
        impl #impl_generics #module for #ident #ty_generics #where_clause {
            #(#body)*
        }

        #[automatically_derived]
        impl #impl_generics ::core::fmt::Display for #ident #ty_generics #where_clause {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(&#module::repr(self))
            }
        }
    }
}

/// `#[module(transparent)]`: every method is the field's.
fn delegate(ident: &Ident, ty: &Type, paths: &Paths) -> TokenStream {
    let Paths {
        module,
        as_module,
        tensor,
        result,
        ..
    } = paths;
    let child = quote_spanned!(ty.span()=> <#ty as #as_module>::as_module(&self.#ident));
    let child_mut =
        quote_spanned!(ty.span()=> <#ty as #as_module>::as_module_mut(&mut self.#ident));
    quote! {
        fn named_parameters(&self) -> ::std::vec::Vec<(::std::string::String, #tensor)> {
            #module::named_parameters(#child)
        }

        fn visit_parameters_mut(
            &mut self,
            f: &mut dyn ::core::ops::FnMut(&str, &mut #tensor) -> #result<()>,
        ) -> #result<()> {
            #module::visit_parameters_mut(#child_mut, f)
        }

        fn named_buffers(&self) -> ::std::vec::Vec<(::std::string::String, #tensor)> {
            #module::named_buffers(#child)
        }

        fn visit_buffers_mut(
            &mut self,
            f: &mut dyn ::core::ops::FnMut(&str, &mut #tensor) -> #result<()>,
        ) -> #result<()> {
            #module::visit_buffers_mut(#child_mut, f)
        }

        fn non_persistent_buffers(&self) -> ::std::vec::Vec<::std::string::String> {
            #module::non_persistent_buffers(#child)
        }

        fn named_children(&self) -> ::std::vec::Vec<(::std::string::String, &dyn #module)> {
            #module::named_children(#child)
        }

        fn visit_children_mut(
            &mut self,
            f: &mut dyn ::core::ops::FnMut(&str, &mut dyn #module) -> #result<()>,
        ) -> #result<()> {
            #module::visit_children_mut(#child_mut, f)
        }

        fn set_training(&mut self, training: bool) {
            #module::set_training(#child_mut, training);
        }

        fn is_training(&self) -> bool {
            #module::is_training(#child)
        }

        fn repr(&self) -> ::std::string::String {
            #module::repr(#child)
        }
    }
}

/// `Child: Module` for each child whose type names a type parameter of the struct.
fn child_bounds(input: &Input<'_>, paths: &Paths) -> Vec<WherePredicate> {
    let params: Vec<&Ident> = input
        .original
        .generics
        .type_params()
        .map(|p| &p.ident)
        .collect();
    let module = &paths.module;
    input
        .fields
        .iter()
        .filter_map(|f| match f.role {
            Role::Child { ty, .. } if mentions(ty, &params) => {
                Some(syn::parse_quote_spanned!(ty.span()=> #ty: #module))
            }
            _ => None,
        })
        .collect()
}

/// Whether `ty` names one of `params`.
fn mentions(ty: &Type, params: &[&Ident]) -> bool {
    struct Finder<'p> {
        params: &'p [&'p Ident],
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path(&mut self, path: &'ast Path) {
            if let Some(first) = path.segments.first()
                && self.params.iter().any(|p| first.ident == **p)
            {
                self.found = true;
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut finder = Finder {
        params,
        found: false,
    };
    finder.visit_type(ty);
    finder.found
}

/// `("name", Some(&self.f))` (or `self.f.as_ref()` for an optional one) per field that
/// `select` picks, in declaration order; `mutable` borrows mutably.
fn own_slots(
    input: &Input<'_>,
    select: fn(&Role<'_>) -> Option<bool>,
    mutable: bool,
) -> TokenStream {
    let slots = input.fields.iter().filter_map(|f| {
        let optional = select(&f.role)?;
        let (ident, name) = (f.ident, &f.name);
        Some(match (optional, mutable) {
            (false, false) => quote!((#name, ::core::option::Option::Some(&self.#ident))),
            (false, true) => quote!((#name, ::core::option::Option::Some(&mut self.#ident))),
            (true, false) => quote!((#name, self.#ident.as_ref())),
            (true, true) => quote!((#name, self.#ident.as_mut())),
        })
    });
    quote!([#(#slots),*])
}

fn parameter(role: &Role<'_>) -> Option<bool> {
    match role {
        Role::Parameter { optional } => Some(*optional),
        _ => None,
    }
}

fn buffer(role: &Role<'_>) -> Option<bool> {
    match role {
        Role::Buffer { optional, .. } => Some(*optional),
        _ => None,
    }
}

/// `named_parameters` and `visit_parameters_mut`.
fn parameters(input: &Input<'_>, paths: &Paths) -> TokenStream {
    let Paths {
        module,
        private,
        tensor,
        result,
        ..
    } = paths;
    let own = own_slots(input, parameter, false);
    let own_mut = own_slots(input, parameter, true);
    quote! {
        fn named_parameters(&self) -> ::std::vec::Vec<(::std::string::String, #tensor)> {
            #private::named(#own, self, |m| #module::named_parameters(m))
        }

        fn visit_parameters_mut(
            &mut self,
            f: &mut dyn ::core::ops::FnMut(&str, &mut #tensor) -> #result<()>,
        ) -> #result<()> {
            #private::visit_own(#own_mut, f)?;
            #private::visit_children_parameters(self, f)
        }
    }
}

/// `named_buffers`, `visit_buffers_mut` and `non_persistent_buffers`, when there are buffers
/// or children (the defaults have none).
fn buffers(input: &Input<'_>, paths: &Paths) -> TokenStream {
    let Paths {
        module,
        private,
        tensor,
        result,
        ..
    } = paths;
    let own = own_slots(input, buffer, false);
    let own_mut = own_slots(input, buffer, true);
    let non_persistent = input.fields.iter().filter_map(|f| match f.role {
        Role::Buffer {
            persistent: false, ..
        } => Some(&f.name),
        _ => None,
    });
    quote! {
        fn named_buffers(&self) -> ::std::vec::Vec<(::std::string::String, #tensor)> {
            #private::named(#own, self, |m| #module::named_buffers(m))
        }

        fn visit_buffers_mut(
            &mut self,
            f: &mut dyn ::core::ops::FnMut(&str, &mut #tensor) -> #result<()>,
        ) -> #result<()> {
            #private::visit_own(#own_mut, f)?;
            #private::visit_children_buffers(self, f)
        }

        fn non_persistent_buffers(&self) -> ::std::vec::Vec<::std::string::String> {
            #private::non_persistent(&[#(#non_persistent),*], self)
        }
    }
}

/// `named_children` and `visit_children_mut`. Each child goes through `AsModule` with the
/// field's type as span, so that a type that is not a module is reported there, with
/// `Module`'s `on_unimplemented` text.
fn children(input: &Input<'_>, paths: &Paths) -> TokenStream {
    let Paths {
        module,
        as_module: as_trait,
        result,
        ..
    } = paths;
    let children: Vec<(&Field<'_>, &Type, bool)> = input
        .fields
        .iter()
        .filter_map(|f| match f.role {
            Role::Child { ty, optional } => Some((f, ty, optional)),
            _ => None,
        })
        .collect();
    let as_module = |ty: &Type, mutable: bool, value: TokenStream| {
        if mutable {
            quote_spanned!(ty.span()=> <#ty as #as_trait>::as_module_mut(#value))
        } else {
            quote_spanned!(ty.span()=> <#ty as #as_trait>::as_module(#value))
        }
    };
    let named = children.iter().map(|(f, ty, optional)| {
        let (ident, name) = (f.ident, &f.name);
        if *optional {
            let child = as_module(ty, false, quote!(child));
            quote! {
                if let ::core::option::Option::Some(child) = &self.#ident {
                    out.push((::std::string::String::from(#name), #child));
                }
            }
        } else {
            let child = as_module(ty, false, quote!(&self.#ident));
            quote!(out.push((::std::string::String::from(#name), #child));)
        }
    });
    let visit = children.iter().map(|(f, ty, optional)| {
        let (ident, name) = (f.ident, &f.name);
        if *optional {
            let child = as_module(ty, true, quote!(child));
            quote! {
                if let ::core::option::Option::Some(child) = &mut self.#ident {
                    f(#name, #child)?;
                }
            }
        } else {
            let child = as_module(ty, true, quote!(&mut self.#ident));
            quote!(f(#name, #child)?;)
        }
    });
    quote! {
        fn named_children(&self) -> ::std::vec::Vec<(::std::string::String, &dyn #module)> {
            #[allow(unused_mut)]
            let mut out = ::std::vec::Vec::new();
            #(#named)*
            out
        }

        fn visit_children_mut(
            &mut self,
            f: &mut dyn ::core::ops::FnMut(&str, &mut dyn #module) -> #result<()>,
        ) -> #result<()> {
            let _ = &f;
            #(#visit)*
            ::core::result::Result::Ok(())
        }
    }
}

/// `set_training` and `is_training`: the `#[module(training)]` field if there is one, and the
/// children.
fn training(input: &Input<'_>, paths: &Paths) -> TokenStream {
    let private = &paths.private;
    let flag = input
        .fields
        .iter()
        .find(|f| matches!(f.role, Role::Training))
        .map(|f| f.ident);
    let set = flag.map(|ident| quote!(self.#ident = training;));
    let is = match flag {
        Some(ident) => quote!(self.#ident),
        None => quote!(#private::children_training(self)),
    };
    quote! {
        fn set_training(&mut self, training: bool) {
            #set
            #private::set_children_training(self, training);
        }

        fn is_training(&self) -> bool {
            #is
        }
    }
}

/// `repr`: `nn.Module.__repr__` with the struct's name (or `name = ".."`) and `extra_repr`.
fn repr(input: &Input<'_>, paths: &Paths) -> TokenStream {
    let private = &paths.private;
    let name = match &input.opts.name {
        Some(lit) => lit.value(),
        None => syn::ext::IdentExt::unraw(&input.original.ident).to_string(),
    };
    // `self` keeps the derive's own span: spanned like the path, it would not be the method's
    // `self` when the struct comes out of a `macro_rules!` (hygiene).
    let this = quote!(self);
    let extra = match &input.opts.extra_repr {
        Some(path) => quote_spanned!(path.span()=> ::core::option::Option::Some(#path(#this))),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        fn repr(&self) -> ::std::string::String {
            #private::repr(#name, #extra, self)
        }
    }
}
