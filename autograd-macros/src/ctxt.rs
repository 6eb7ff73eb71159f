//! `Ctxt`: collects the errors of one macro invocation so that a user sees all of them at once.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// Error accumulator. Lowering and validation push spanned errors; `check` combines them into one
/// `syn::Error`. Dropping a `Ctxt` that was never checked is a bug in this crate and panics.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Ctxt {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// An error spanning the tokens of `obj`.
    pub(crate) fn error_spanned_by<A: ToTokens, T: Display>(&self, obj: A, msg: T) {
        self.syn_error(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// An error at `span`.
    pub(crate) fn error_at<T: Display>(&self, span: proc_macro2::Span, msg: T) {
        self.syn_error(syn::Error::new(span, msg));
    }

    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("invariant: Ctxt used after check")
            .push(err);
    }

    /// Whether no error was pushed so far.
    pub(crate) fn is_ok(&self) -> bool {
        self.errors.borrow().as_ref().is_none_or(Vec::is_empty)
    }

    /// All pushed errors, combined; consumes the context.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("invariant: Ctxt checked twice");
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }
}

#[cfg(test)]
impl Ctxt {
    /// A context whose errors are ignored, for tests that lower valid input.
    pub(crate) fn new_checked() -> Ctxt {
        Ctxt {
            errors: RefCell::new(None),
        }
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}
