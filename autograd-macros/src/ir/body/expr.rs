//! Lowering a derived body's expressions: each tensor method call, call of a function with a
//! tensor argument, or operator becomes one op with a fresh value; scalar expressions stay as
//! written.

use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, UnOp};

use super::lower::{Binding, Lower, Value};
use super::{Arg, Form, Step};
use crate::symbol;

impl Lower<'_> {
    pub(super) fn expr(&mut self, e: &Expr) -> Option<Value> {
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
    /// function has none: the rule lookup reports it at `f`, see `expand::derive::values`).
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
