//! Lowering a derived body's statements: the `let`s (one value, or a tuple destructured), the
//! scalar `let`s kept as written, and the result; the scope of names and the ops pushed.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::{Block, Expr, Ident, Pat, Stmt};

use super::{Arg, Body, Form, Op, Step, Var};
use crate::ctxt::Ctxt;
use crate::ir::{DiffFn, ParamKind};
use crate::symbol;

#[derive(Copy, Clone)]
pub(super) enum Value {
    Tensor(usize),
    Scalar,
}

#[derive(Copy, Clone)]
pub(super) enum Binding {
    Tensor(usize),
    Scalar,
    /// A non-tensor result of an op (`max_dim`'s indices): it exists in the forward only.
    ForwardOnly,
    /// A `let` that was reported: its uses report nothing more.
    Poisoned,
}

pub(super) struct Lower<'c> {
    pub(super) cx: &'c Ctxt,
    pub(super) name: String,
    pub(super) vars: Vec<Var>,
    pub(super) stmts: Vec<Step>,
    pub(super) scope: Vec<(Ident, Binding)>,
    /// The function returns a `Result`: a tail call without `?` is that `Result`.
    pub(super) fallible: bool,
    /// The function returns a tuple of tensors.
    pub(super) tuple: bool,
}

impl Body {
    /// Lowers `block`, the body of `fwd`. Returns `None` after reporting an error.
    pub(crate) fn from_syn(cx: &Ctxt, fwd: &DiffFn<'_>, block: &Block) -> Option<Body> {
        let mut lower = Lower {
            cx,
            name: fwd.name(),
            vars: Vec::new(),
            stmts: Vec::new(),
            scope: Vec::new(),
            fallible: fwd.output.fallible,
            tuple: fwd.output.tuple,
        };
        for p in &fwd.params {
            let binding = match p.kind {
                ParamKind::Tensor(i) => {
                    lower.vars.push(Var {
                        ident: p.ident.clone(),
                        input: Some(i),
                        name: Some(p.ident.clone()),
                    });
                    Binding::Tensor(lower.vars.len() - 1)
                }
                ParamKind::Tensors(_) | ParamKind::Attr => Binding::Scalar,
            };
            lower.scope.push((p.ident.clone(), binding));
        }
        let mut output = None;
        let mut ok = true;
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == block.stmts.len();
            match stmt {
                Stmt::Local(local) => {
                    if lower.local(local).is_none() {
                        ok = false;
                        if let Some(ident) = bound_ident(&local.pat) {
                            lower.scope.push((ident.clone(), Binding::Poisoned));
                        }
                    }
                }
                Stmt::Expr(e, Some(_)) => ok &= lower.expr(e).is_some(),
                Stmt::Expr(e, None) if last => output = lower.output(e),
                Stmt::Expr(e, None) => ok &= lower.expr(e).is_some(),
                Stmt::Item(item) => {
                    lower.reject(item, "an item declared inside the body");
                    ok = false;
                }
                Stmt::Macro(m) => {
                    lower.reject(m, "a macro call, whose expansion it cannot see");
                    ok = false;
                }
            }
        }
        if output.is_none()
            && ok
            && block
                .stmts
                .last()
                .is_none_or(|s| !matches!(s, Stmt::Expr(_, None)))
        {
            cx.error_at(
                block.brace_token.span.close(),
                "a `#[differentiable(derive)]` body ends with its result: a tensor expression, or `Ok(..)` of one",
            );
        }
        let outputs = output?;
        ok.then_some(Body {
            vars: lower.vars,
            stmts: lower.stmts,
            outputs,
        })
    }
}

/// `e` without the parentheses around it.
fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_parens(&p.expr),
        Expr::Group(g) => strip_parens(&g.expr),
        e => e,
    }
}

/// The name a `let` binds, if it is one identifier.
fn bound_ident(pat: &Pat) -> Option<&Ident> {
    match pat {
        Pat::Ident(p) => Some(&p.ident),
        Pat::Type(t) => bound_ident(&t.pat),
        _ => None,
    }
}

impl Lower<'_> {
    pub(super) fn reject(&self, what: impl ToTokens, construct: &str) {
        self.cx.error_spanned_by(
            what,
            format!(
                "`#[differentiable(derive)]` cannot differentiate {construct}; it derives straight-line tensor code only: remove `derive` and write the gradient in a `#[backward({})]` function",
                self.name
            ),
        );
    }

    pub(super) fn lookup(&self, ident: &Ident) -> Option<Binding> {
        self.scope
            .iter()
            .rev()
            .find(|(name, _)| name == ident)
            .map(|(_, b)| *b)
    }

    fn local(&mut self, local: &syn::Local) -> Option<()> {
        let pat = match &local.pat {
            Pat::Type(t) => &*t.pat,
            pat => pat,
        };
        if let Pat::Tuple(tuple) = pat {
            return self.destructure(local, tuple);
        }
        if let (Pat::Wild(_), Some(init)) = (&local.pat, &local.init)
            && init.diverge.is_none()
        {
            // `let _ = value;`: evaluated (as written, if it is a scalar) and dropped.
            if let Value::Scalar = self.expr(&init.expr)? {
                self.stmts.push(Step::Scalar(local.to_token_stream()));
            }
            return Some(());
        }
        let ident = match &local.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p,
            Pat::Type(t) => match &*t.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p,
                pat => {
                    self.reject(pat, "a destructuring pattern");
                    return None;
                }
            },
            pat => {
                self.reject(pat, "a destructuring pattern");
                return None;
            }
        };
        if let Some(m) = &ident.mutability {
            self.reject(
                m,
                "a mutable binding, since a value that changes has no single gradient",
            );
            return None;
        }
        let Some(init) = &local.init else {
            self.reject(local, "a `let` without a value");
            return None;
        };
        if let Some((else_token, _)) = &init.diverge {
            self.reject(else_token, "a `let .. else`, which branches");
            return None;
        }
        let binding = match self.expr(&init.expr)? {
            Value::Tensor(v) => Binding::Tensor(v),
            Value::Scalar => {
                self.stmts.push(Step::Scalar(local.to_token_stream()));
                Binding::Scalar
            }
        };
        if let Binding::Tensor(v) = binding {
            self.name(v, &ident.ident);
        }
        self.scope.push((ident.ident.clone(), binding));
        Some(())
    }

    /// `let (values, indices) = x.max_dim(1, true)?;`: an op whose result is a tuple of a tensor
    /// and non-tensor values (bound for the forward only; a use is reported).
    fn destructure(&mut self, local: &syn::Local, tuple: &syn::PatTuple) -> Option<()> {
        let Some(init) = &local.init else {
            self.reject(local, "a `let` without a value");
            return None;
        };
        if let Some((else_token, _)) = &init.diverge {
            self.reject(else_token, "a `let .. else`, which branches");
            return None;
        }
        let plain = |p: &Pat| match p {
            Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() && i.mutability.is_none() => {
                Some(Some(i.ident.clone()))
            }
            Pat::Wild(_) => Some(None),
            _ => None,
        };
        let names: Option<Vec<Option<Ident>>> = tuple.elems.iter().map(plain).collect();
        let (Some(names), false) = (names, tuple.elems.is_empty()) else {
            self.reject(
                tuple,
                "a destructuring pattern other than `(tensor, names..)`",
            );
            return None;
        };
        let before = self.stmts.len();
        let value = self.expr(&init.expr)?;
        let pushed = self.stmts.len() > before;
        let op = match (pushed, value, self.stmts.last_mut()) {
            (true, Value::Tensor(v), Some(Step::Op(op)))
                if op.result == v && matches!(op.form, Form::Method { .. } | Form::Call { .. }) =>
            {
                op
            }
            _ => {
                self.reject(
                    &init.expr,
                    "destructuring a value that is not a tensor method's or function's result",
                );
                return None;
            }
        };
        let rest: Vec<&Pat> = tuple.elems.iter().skip(1).collect();
        op.rest = Some(quote!(#(#rest),*));
        let result = op.result;
        let mut names = names.into_iter();
        if let Some(Some(ident)) = names.next() {
            self.name(result, &ident);
            self.scope.push((ident, Binding::Tensor(result)));
        }
        for ident in names.flatten() {
            self.scope.push((ident, Binding::ForwardOnly));
        }
        Some(())
    }

    /// The tail: a tensor, or for a function returning a tuple, a tuple of tensors (either
    /// optionally in `Ok(..)`).
    fn output(&mut self, e: &Expr) -> Option<Vec<usize>> {
        let (inner, wrapped) = match e {
            Expr::Call(c)
                if c.args.len() == 1
                    && matches!(&*c.func, Expr::Path(p) if p.path.is_ident(symbol::OK.as_str())) =>
            {
                (&c.args[0], true)
            }
            e => (e, false),
        };
        if let (Expr::Tuple(t), true) = (strip_parens(inner), self.tuple) {
            let mut outputs = Vec::new();
            for elem in &t.elems {
                outputs.push(self.one_output(elem, true)?);
            }
            return Some(outputs);
        }
        if self.tuple {
            self.cx.error_spanned_by(
                inner,
                "this function returns a tuple: end its body with a tuple of tensors, `Ok((a, b))`",
            );
            return None;
        }
        Some(vec![self.one_output(inner, wrapped)?])
    }

    /// One returned tensor; `wrapped`: not the function's `Result` itself.
    fn one_output(&mut self, inner: &Expr, wrapped: bool) -> Option<usize> {
        let before = self.stmts.len();
        let value = self.expr(inner)?;
        // `h.tanh()` as the tail of a function returning a `Result`: the call's `Result` is the
        // function's, so the lowered op takes the `?`.
        if let (false, true, Value::Tensor(v)) = (wrapped, self.fallible, value) {
            let pushed = self.stmts.len() > before;
            if let (true, Some(Step::Op(op))) = (pushed, self.stmts.last_mut())
                && op.result == v
                && matches!(op.form, Form::Method { .. } | Form::Call { .. })
            {
                op.tried = true;
            }
        }
        match value {
            Value::Tensor(v) if self.vars[v].input.is_some() => {
                self.reject(inner, "returning an input unchanged");
                None
            }
            Value::Tensor(v) => Some(v),
            Value::Scalar => {
                self.cx.error_spanned_by(
                    inner,
                    "the result of a `#[differentiable(derive)]` body must be a tensor computed from its inputs",
                );
                None
            }
        }
    }

    /// Records the first name a `let` gives value `v`.
    fn name(&mut self, v: usize, ident: &Ident) {
        let var = &mut self.vars[v];
        if var.name.is_none() {
            var.name = Some(ident.clone());
        }
    }

    pub(super) fn push_op(
        &mut self,
        rule: Ident,
        tensors: Vec<usize>,
        scalars: Vec<TokenStream>,
        form: Form,
    ) -> Value {
        let result = self.vars.len();
        self.vars.push(Var {
            ident: format_ident!("__autograd_v{}", result),
            input: None,
            name: None,
        });
        let callee = match &form {
            Form::Call { func, .. } => Some(func.clone()),
            _ => None,
        };
        self.stmts.push(Step::Op(Box::new(Op {
            result,
            rule,
            callee,
            tensors,
            scalars,
            form,
            tried: false,
            rest: None,
        })));
        Value::Tensor(result)
    }

    /// Sub-expressions that must all be scalars.
    pub(super) fn scalars<'e>(
        &mut self,
        parent: &Expr,
        what: &str,
        exprs: impl IntoIterator<Item = &'e Expr>,
    ) -> Option<Value> {
        for e in exprs {
            if let Value::Tensor(_) = self.expr(e)? {
                self.reject(parent, what);
                return None;
            }
        }
        Some(Value::Scalar)
    }

    pub(super) fn arg(&mut self, e: &Expr) -> Option<Arg> {
        Some(match self.expr(e)? {
            Value::Tensor(v) => Arg::Tensor(v),
            Value::Scalar => Arg::Scalar(e.to_token_stream()),
        })
    }
}
