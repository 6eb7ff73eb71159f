//! The body of a `#[differentiable(derive)]` function, lowered to straight-line code: one
//! primitive op per tensor method call or operator (each result a fresh value), the scalar `let`s
//! as written, and the output value. Anything else is reported, spanned on the construct.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::{BinOp, Block, Expr, Ident, Pat, Stmt, UnOp};

use super::{DiffFn, ParamKind};
use crate::ctxt::Ctxt;
use crate::symbol;

/// The lowered body.
pub(crate) struct Body {
    /// Every tensor value: the `&Tensor` inputs first, then one per op, in order.
    pub(crate) vars: Vec<Var>,
    pub(crate) stmts: Vec<Step>,
    /// The values the function returns: one, or one per element of a returned tuple.
    pub(crate) outputs: Vec<usize>,
}

/// A tensor value.
pub(crate) struct Var {
    /// The local it lives in (an input's parameter name, or a generated name).
    pub(crate) ident: Ident,
    /// For an input: its number among the tensor inputs.
    pub(crate) input: Option<usize>,
    /// The name the user gave it: the parameter, or the first `let` that binds it (for docs).
    pub(crate) name: Option<Ident>,
}

/// One step of the body, in order.
pub(crate) enum Step {
    /// A `let` of a non-tensor value, re-emitted as written (in the backward too).
    Scalar(TokenStream),
    Op(Box<Op>),
}

/// A primitive op: `result = rule(tensors.., scalars..)`. An op with no tensor operands
/// (`detach()`) is a constant: it has no rule and passes no gradient on.
pub(crate) struct Op {
    pub(crate) result: usize,
    /// The method name (or the operator's method, or the called function's name), spanned on
    /// the user's token: the name of its derivative rule.
    pub(crate) rule: Ident,
    /// For a call of a `#[differentiable]` function: its path, beside which its rule is.
    pub(crate) callee: Option<syn::Path>,
    /// Its tensor operands, receiver first.
    pub(crate) tensors: Vec<usize>,
    /// Its non-tensor arguments, as written.
    pub(crate) scalars: Vec<TokenStream>,
    pub(crate) form: Form,
    /// Written with `?` after it (a method or function returning a `Result`).
    pub(crate) tried: bool,
    /// For `let (v, rest..) = op;`: the patterns after the tensor, bound in the forward.
    pub(crate) rest: Option<TokenStream>,
}

/// How the op is written, to run it again as written.
pub(crate) enum Form {
    /// `receiver.method(args)`.
    Method {
        receiver: usize,
        method: Ident,
        args: Vec<Arg>,
    },
    /// `lhs op rhs`.
    Binary { op: BinOp, lhs: Arg, rhs: Arg },
    /// `-operand`.
    Neg,
    /// `function(args)`: a `#[differentiable]` function.
    Call { func: syn::Path, args: Vec<Arg> },
}

/// An argument of an op.
pub(crate) enum Arg {
    Tensor(usize),
    Scalar(TokenStream),
}

#[derive(Copy, Clone)]
enum Value {
    Tensor(usize),
    Scalar,
}

#[derive(Copy, Clone)]
enum Binding {
    Tensor(usize),
    Scalar,
    /// A non-tensor result of an op (`max_dim`'s indices): it exists in the forward only.
    ForwardOnly,
    /// A `let` that was reported: its uses report nothing more.
    Poisoned,
}

struct Lower<'c> {
    cx: &'c Ctxt,
    name: String,
    vars: Vec<Var>,
    stmts: Vec<Step>,
    scope: Vec<(Ident, Binding)>,
    /// The function returns a `Result`: a tail call without `?` is that `Result`.
    fallible: bool,
    /// The function returns a tuple of tensors.
    tuple: bool,
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

    /// The ops, in order.
    pub(crate) fn ops(&self) -> impl DoubleEndedIterator<Item = &Op> {
        self.stmts.iter().filter_map(|s| match s {
            Step::Op(op) => Some(&**op),
            Step::Scalar(_) => None,
        })
    }

    /// Which values the output depends on (the output included): only those get gradients.
    pub(crate) fn live(&self) -> Vec<bool> {
        let mut live = vec![false; self.vars.len()];
        for &o in &self.outputs {
            live[o] = true;
        }
        for op in self.ops().rev() {
            if live[op.result] {
                for &t in &op.tensors {
                    live[t] = true;
                }
            }
        }
        live
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
    fn reject(&self, what: impl ToTokens, construct: &str) {
        self.cx.error_spanned_by(
            what,
            format!(
                "`#[differentiable(derive)]` cannot differentiate {construct}; it derives straight-line tensor code only: remove `derive` and write the gradient in a `#[backward({})]` function",
                self.name
            ),
        );
    }

    fn lookup(&self, ident: &Ident) -> Option<Binding> {
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

    fn push_op(
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
    fn scalars<'e>(
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

    fn arg(&mut self, e: &Expr) -> Option<Arg> {
        Some(match self.expr(e)? {
            Value::Tensor(v) => Arg::Tensor(v),
            Value::Scalar => Arg::Scalar(e.to_token_stream()),
        })
    }

    fn expr(&mut self, e: &Expr) -> Option<Value> {
        match e {
            Expr::Path(p) => match p.path.get_ident() {
                Some(ident) if p.qself.is_none() => match self.lookup(ident) {
                    Some(Binding::Tensor(v)) => Some(Value::Tensor(v)),
                    Some(Binding::Poisoned) => None,
                    Some(Binding::ForwardOnly) => {
                        self.cx.error_spanned_by(
                            ident,
                            format!(
                                "`{ident}` is a non-differentiable result of an op (such as `max_dim`'s indices), computed in the forward only: a derived body can ignore it but not use it; to use it, remove `derive` and write a `#[backward({})]` function",
                                self.name
                            ),
                        );
                        None
                    }
                    // Not a local: a constant in scope.
                    Some(Binding::Scalar) | None => Some(Value::Scalar),
                },
                _ => Some(Value::Scalar),
            },
            Expr::Lit(_) => Some(Value::Scalar),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Reference(r) => match &r.mutability {
                Some(m) => {
                    self.reject(
                        m,
                        "a mutable borrow, since a value that changes has no single gradient",
                    );
                    None
                }
                None => self.expr(&r.expr),
            },
            Expr::Try(t) => {
                let before = self.stmts.len();
                let value = self.expr(&t.expr)?;
                // The op the `?` applies to is the last one its operand pushed.
                let pushed = self.stmts.len() > before;
                if let (true, Value::Tensor(v), Some(Step::Op(op))) =
                    (pushed, value, self.stmts.last_mut())
                    && op.result == v
                {
                    op.tried = true;
                }
                Some(value)
            }
            Expr::MethodCall(m) => self.method(m),
            Expr::Binary(b) => self.binary(b),
            Expr::Unary(u) => match u.op {
                UnOp::Neg(_) => match self.expr(&u.expr)? {
                    Value::Tensor(v) => Some(self.push_op(
                        format_ident!("neg", span = u.op.span()),
                        vec![v],
                        Vec::new(),
                        Form::Neg,
                    )),
                    Value::Scalar => Some(Value::Scalar),
                },
                _ => self.scalars(e, "this operator on a tensor", [&*u.expr]),
            },
            Expr::ForLoop(l) => {
                self.reject(l.for_token, "a loop");
                None
            }
            Expr::While(l) => {
                self.reject(l.while_token, "a loop");
                None
            }
            Expr::Loop(l) => {
                self.reject(l.loop_token, "a loop");
                None
            }
            Expr::If(i) => {
                self.reject(i.if_token, "a branch (`if`)");
                None
            }
            Expr::Match(m) => {
                self.reject(m.match_token, "a branch (`match`)");
                None
            }
            Expr::Closure(c) => {
                self.reject(c, "a closure");
                None
            }
            Expr::Assign(a) => {
                self.reject(
                    a,
                    "an assignment, since a value that changes has no single gradient",
                );
                None
            }
            Expr::Macro(m) => {
                self.reject(m, "a macro call, whose expansion it cannot see");
                None
            }
            Expr::Return(r) => {
                self.reject(r, "an early `return`");
                None
            }
            Expr::Call(c) => self.call(c),
            Expr::Cast(c) => self.scalars(e, "a cast of a tensor", [&*c.expr]),
            Expr::Index(i) => self.scalars(e, "indexing into a tensor", [&*i.expr, &*i.index]),
            Expr::Field(f) => self.scalars(e, "a field of a tensor", [&*f.base]),
            Expr::Array(a) => self.scalars(e, "a tensor inside an array", &a.elems),
            Expr::Tuple(t) => self.scalars(e, "a tensor inside a tuple", &t.elems),
            Expr::Range(r) => self.scalars(
                e,
                "a range of tensors",
                r.start.iter().chain(&r.end).map(|b| &**b),
            ),
            e => {
                self.reject(e, "this kind of expression");
                None
            }
        }
    }

    fn method(&mut self, m: &syn::ExprMethodCall) -> Option<Value> {
        let recv = self.expr(&m.receiver)?;
        let Value::Tensor(recv) = recv else {
            let what = "a method of a non-tensor value that takes a tensor";
            return self.scalars(&Expr::MethodCall(m.clone()), what, &m.args);
        };
        let name = m.method.to_string();
        if name.ends_with('_') && !name.starts_with('_') {
            self.reject(
                &m.method,
                &format!("the in-place method `{name}`, which modifies its receiver"),
            );
            return None;
        }
        if let Some(t) = &m.turbofish {
            self.reject(t, "a method call with generic arguments");
            return None;
        }
        if m.method == symbol::DETACH && m.args.is_empty() {
            // A constant for the derivative: an op with no tensor operands, so no gradient
            // reaches the receiver through it, and no rule.
            let form = Form::Method {
                receiver: recv,
                method: m.method.clone(),
                args: Vec::new(),
            };
            return Some(self.push_op(m.method.clone(), Vec::new(), Vec::new(), form));
        }
        let mut tensors = vec![recv];
        let mut scalars = Vec::new();
        let mut args = Vec::new();
        for a in &m.args {
            let arg = self.arg(a)?;
            match &arg {
                Arg::Tensor(v) => tensors.push(*v),
                Arg::Scalar(t) => scalars.push(t.clone()),
            }
            args.push(arg);
        }
        let form = Form::Method {
            receiver: recv,
            method: m.method.clone(),
            args,
        };
        Some(self.push_op(m.method.clone(), tensors, scalars, form))
    }

    /// `f(args)`: scalar arithmetic if no argument is a tensor, else a call of a
    /// `#[differentiable]` function, differentiated by its rule `__autograd_f_rule` (a plain
    /// function has none: rustc reports that name missing at `f`).
    fn call(&mut self, c: &syn::ExprCall) -> Option<Value> {
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.arg(a)?);
        }
        if args.iter().all(|a| matches!(a, Arg::Scalar(_))) {
            return Some(Value::Scalar);
        }
        let func = match &*c.func {
            Expr::Path(p) if p.qself.is_none() && !p.path.segments.is_empty() => p.path.clone(),
            _ => {
                self.reject(c, "a call of something other than a function by its path");
                return None;
            }
        };
        let last = func.segments.last()?;
        if !last.arguments.is_none() {
            self.reject(&last.arguments, "a function call with generic arguments");
            return None;
        }
        let rule = last.ident.clone();
        let mut tensors = Vec::new();
        let mut scalars = Vec::new();
        for a in &args {
            match a {
                Arg::Tensor(v) => tensors.push(*v),
                Arg::Scalar(t) => scalars.push(t.clone()),
            }
        }
        Some(self.push_op(rule, tensors, scalars, Form::Call { func, args }))
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Option<Value> {
        let (tensor_rule, scalar_rule, rscalar_rule) = match b.op {
            BinOp::Add(_) => ("add", "add_scalar", "add_scalar"),
            BinOp::Sub(_) => ("sub", "sub_scalar", "rsub_scalar"),
            BinOp::Mul(_) => ("mul", "mul_scalar", "mul_scalar"),
            BinOp::Div(_) => ("div", "div_scalar", "rdiv_scalar"),
            BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_) => {
                self.reject(
                    b,
                    "a compound assignment, since a value that changes has no single gradient",
                );
                return None;
            }
            _ => {
                let what = format!("the operator `{}` on a tensor", b.op.to_token_stream());
                return self.scalars(&Expr::Binary(b.clone()), &what, [&*b.left, &*b.right]);
            }
        };
        let lhs = self.arg(&b.left)?;
        let rhs = self.arg(&b.right)?;
        let span = b.op.span();
        let (rule, tensors, scalars) = match (&lhs, &rhs) {
            (Arg::Scalar(_), Arg::Scalar(_)) => return Some(Value::Scalar),
            (Arg::Tensor(a), Arg::Tensor(c)) => (tensor_rule, vec![*a, *c], Vec::new()),
            (Arg::Tensor(a), Arg::Scalar(s)) => (scalar_rule, vec![*a], vec![quote!((#s))]),
            (Arg::Scalar(s), Arg::Tensor(a)) => (rscalar_rule, vec![*a], vec![quote!((#s))]),
        };
        let rule = format_ident!("{}", rule, span = span);
        let form = Form::Binary { op: b.op, lhs, rhs };
        Some(self.push_op(rule, tensors, scalars, form))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(func: syn::ItemFn) -> (Option<Body>, Vec<String>) {
        let cx = Ctxt::new();
        let fwd = DiffFn::from_syn(&cx, &func.sig);
        let body = Body::from_syn(&cx, &fwd, &func.block);
        let errors = match cx.check() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        (body, errors)
    }

    fn rules(body: &Body) -> Vec<String> {
        body.ops().map(|op| op.rule.to_string()).collect()
    }

    #[test]
    fn operators_map_to_their_methods() {
        let (body, errors) = lower(syn::parse_quote! {
            fn f(x: &Tensor, y: &Tensor, s: f64) -> Result<Tensor> {
                let c = s * 2.0;
                let a = x * y;
                let b = &a * c - 1.0;
                let d = 2.0 - &b;
                let e = 3.0 / -&d;
                Ok(e.exp()? + x)
            }
        });
        assert!(errors.is_empty(), "{errors:?}");
        let body = body.expect("lowered");
        assert_eq!(
            rules(&body),
            [
                "mul",
                "mul_scalar",
                "sub_scalar",
                "rsub_scalar",
                "neg",
                "rdiv_scalar",
                "exp",
                "add"
            ]
        );
        assert!(matches!(body.stmts[0], Step::Scalar(_)));
        assert_eq!(body.outputs, [body.vars.len() - 1]);
    }

    #[test]
    fn only_values_the_result_depends_on_are_live() {
        let (body, _) = lower(syn::parse_quote! {
            fn f(x: &Tensor, unused: &Tensor) -> Result<Tensor> {
                let dead = x.log()?;
                let y = x.exp()?;
                y.sum()
            }
        });
        let body = body.expect("lowered");
        let live = body.live();
        // x, unused, dead, y, result
        assert_eq!(live, [true, false, false, true, true]);
    }

    #[test]
    fn rejected_constructs_are_all_reported_once() {
        let (body, errors) = lower(syn::parse_quote! {
            fn f(x: &Tensor) -> Result<Tensor> {
                let mut y = x.exp()?;
                let z = if true { x.exp()? } else { x.log()? };
                x.add_(&z)?;
                Ok(y.mul(&z)?)
            }
        });
        assert!(body.is_none());
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("a mutable binding"));
        assert!(errors[1].contains("a branch (`if`)"));
        assert!(errors[2].contains("the in-place method `add_`"));
        assert!(errors[2].contains("`#[backward(f)]`"));
    }

    #[test]
    fn calls_with_a_tensor_argument_are_ops() {
        let (body, errors) = lower(syn::parse_quote! {
            fn f(x: &Tensor, s: f64) -> Result<Tensor> {
                let n = max(s, 1.0);
                let y = layers::gelu(&x.exp()?, n)?;
                Ok(y * n)
            }
        });
        assert!(errors.is_empty(), "{errors:?}");
        let body = body.expect("lowered");
        assert_eq!(rules(&body), ["exp", "gelu", "mul_scalar"]);
        let call = body.ops().nth(1).expect("the call");
        let callee = call.callee.as_ref().expect("a callee");
        assert_eq!(quote!(#callee).to_string(), "layers :: gelu");
        assert_eq!((call.tensors.len(), call.scalars.len()), (1, 1));
        assert!(
            body.ops().all(|op| op.rule != "max"),
            "a scalar call is a scalar step"
        );
    }

    #[test]
    fn a_scalar_result_is_rejected() {
        let (_, errors) = lower(syn::parse_quote! {
            fn f(x: &Tensor, s: f64) -> Result<Tensor> {
                let _ = x.exp()?;
                Ok(s * 2.0)
            }
        });
        assert_eq!(
            errors,
            [
                "the result of a `#[differentiable(derive)]` body must be a tensor computed from its inputs"
            ]
        );
    }
}
