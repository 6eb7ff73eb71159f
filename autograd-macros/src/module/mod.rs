//! `#[derive(Module)]`: reads a struct's fields (`ir.rs`), then writes `impl Module` and
//! `Display` (`expand.rs`).

mod expand;
mod ir;

use proc_macro2::TokenStream;
use syn::{DeriveInput, Path};

use crate::ctxt::Ctxt;

pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.into_compile_error(),
    };
    let cx = Ctxt::new();
    let ir = ir::Input::from_syn(&cx, &input);
    if let Err(e) = cx.check() {
        return e.into_compile_error();
    }
    let krate = ir.opts.krate.clone().unwrap_or_else(default_crate);
    expand::module_impl(&ir, &krate)
}

/// The runtime's path when no `crate = ".."` is given: `::autograd` (the facade), or
/// `::autograd_runtime` for code of the runtime's own package (its layers, doctests and tests;
/// the runtime names itself with `extern crate self as autograd_runtime`), which cannot reach
/// the facade.
fn default_crate() -> Path {
    match std::env::var("CARGO_PKG_NAME").as_deref() {
        Ok("autograd-runtime") => syn::parse_quote!(::autograd_runtime),
        _ => syn::parse_quote!(::autograd),
    }
}
