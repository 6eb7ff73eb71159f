//! `DerivativeRules`: the per-op gradient rules that `#[differentiable(derive)]` applies in
//! reverse order. The rules themselves sit beside their ops (`impl DerivativeRules` blocks in
//! `unary.rs`, `binary.rs`, `reduce.rs`, `linalg.rs`, `softmax.rs`); this file holds the types,
//! the calling convention and the helpers the derived forward and backward use.

use std::sync::{Arc, OnceLock};

use crate::backend::BinaryOp;
use crate::tensor::layout::Layout;
use crate::tensor::storage::Storage;
use crate::{DType, Device, Result, Tensor};

/// The derivative rules of the tensor methods, one associated constant per method, named like
/// the method (`DerivativeRules::exp` is the rule of [`Tensor::exp`]).
///
/// `#[differentiable(derive)]` turns each tensor method call `x.m(..)` (and each operator) of a
/// derived body into a use of `DerivativeRules::m`. A method without a rule is a compile error
/// at that call: "no associated item named `m` found for struct `DerivativeRules`". Add the rule
/// beside the op, or write the backward by hand with `#[backward]`.
///
/// Each rule is a [`Rule`]: what it [`Reads`] of its op, given which operands need a gradient
/// (so the derived forward keeps exactly those values, and a stand-in of the right shape where
/// only the shape is read), and the function that applies it. Calling convention of `apply`, for an op with tensor operands
/// `a, ..` (receiver first), result `result` and non-tensor arguments `s, ..`:
///
/// * one tensor operand ([`Unary`]): `fn(grad: &Tensor, a: &Tensor, result: &Tensor, s, ..) ->
///   Result<Tensor>`, called only when `a` needs a gradient;
/// * two tensor operands ([`Binary`]): `fn(grad: &Tensor, needs: [bool; 2], a: &Tensor, b:
///   &Tensor, result: &Tensor, s, ..) -> Result<(Option<Tensor>, Option<Tensor>)>`, one
///   gradient per operand (`None` where `needs` is false), each reduced to its operand's shape.
///
/// A value the rule does not read (per `reads`) is passed as a stand-in: right shape, dtype and
/// device where the shape is read, an empty tensor otherwise. Rules are written with
/// differentiable tensor ops, so a derived backward run with `create_graph` is recorded and can
/// be differentiated again.
#[doc(hidden)]
#[derive(Debug)]
pub struct DerivativeRules;

/// A derivative rule: what it reads of its op, and the function that applies it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Rule<F> {
    pub reads: Reads,
    pub apply: F,
}

/// The rule of a one-operand op with no non-tensor arguments.
#[doc(hidden)]
pub type Unary = fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>;
/// The rule of a one-operand op with one non-tensor argument of type `S`.
#[doc(hidden)]
pub type UnaryWith<S> = fn(&Tensor, &Tensor, &Tensor, S) -> Result<Tensor>;
/// The rule of a two-operand op.
#[doc(hidden)]
pub type Binary =
    fn(&Tensor, [bool; 2], &Tensor, &Tensor, &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)>;

/// How much of a value a rule reads.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Nothing: the derived forward keeps an empty stand-in.
    Nothing,
    /// Only its shape, dtype and device (`sum`'s input, a broadcast operand): a stand-in of one
    /// element, broadcast to the shape.
    Shape,
    /// Its values: the derived forward keeps the value itself.
    Value,
}

impl Read {
    /// The larger of two reads: what two rules reading one value need between them.
    pub const fn max(self, other: Read) -> Read {
        if self as u8 >= other as u8 {
            self
        } else {
            other
        }
    }
}

/// What a rule reads of its operands (receiver first; an operand past the end is not read) and
/// of its op's result.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Reads {
    /// What it reads of each operand when every operand needs a gradient.
    pub operands: &'static [Read],
    pub result: bool,
    /// `value_for[i] == Some(j)`: operand `i`'s value is read only for operand `j`'s gradient
    /// (as `#[needed_for(j)]` says for a hand-written backward); without that, the rule reads at
    /// most operand `i`'s shape, for `i`'s own gradient.
    pub value_for: &'static [Option<usize>],
}

impl Reads {
    /// Reads nothing (`neg`, `mul_scalar`, ..).
    pub const NOTHING: Reads = Reads {
        operands: &[],
        result: false,
        value_for: &[],
    };
    /// Reads the result (`exp`, `tanh`, ..).
    pub const RESULT: Reads = Reads {
        operands: &[],
        result: true,
        value_for: &[],
    };
    /// Reads its operand (`log`, `sin`, ..).
    pub const OPERAND: Reads = Reads {
        operands: &[Read::Value],
        result: false,
        value_for: &[],
    };
    /// Reads its operand's shape (`sum`, `mean`).
    pub const OPERAND_SHAPE: Reads = Reads {
        operands: &[Read::Shape],
        result: false,
        value_for: &[],
    };
    /// Reads both operands, each for the other's gradient (`mul`, `matmul`).
    pub const OPERANDS: Reads = Reads {
        operands: &[Read::Value, Read::Value],
        result: false,
        value_for: &[Some(1), Some(0)],
    };
    /// Reads both operands' shapes, to undo broadcasting (`add`, `sub`).
    pub const OPERAND_SHAPES: Reads = Reads {
        operands: &[Read::Shape, Read::Shape],
        result: false,
        value_for: &[],
    };

    /// What it reads of operand `i` when every operand needs a gradient.
    pub const fn operand(self, i: usize) -> Read {
        if i < self.operands.len() {
            self.operands[i]
        } else {
            Read::Nothing
        }
    }

    /// What it reads of operand `i` when `needs` says which operands need a gradient: nothing
    /// if none does (the rule does not run); a value read only for another operand's gradient
    /// is read (or only the shape, for `i`'s own) as `value_for` says.
    pub fn operand_given(self, i: usize, needs: &[bool]) -> Read {
        if !needs.iter().any(|&n| n) {
            return Read::Nothing;
        }
        match (self.operand(i), self.value_for.get(i).copied().flatten()) {
            (Read::Value, Some(j)) if !needs.get(j).copied().unwrap_or(false) => {
                if needs.get(i).copied().unwrap_or(false) {
                    Read::Shape
                } else {
                    Read::Nothing
                }
            }
            (read, _) => read,
        }
    }

    /// What it reads of the result when `needs` says which operands need a gradient.
    pub fn result_given(self, needs: &[bool]) -> Read {
        if needs.iter().any(|&n| n) {
            self.result()
        } else {
            Read::Nothing
        }
    }

    /// What it reads of the result.
    pub const fn result(self) -> Read {
        if self.result {
            Read::Value
        } else {
            Read::Nothing
        }
    }
}

/// What a derived forward keeps of an intermediate `v` (used for the last time) for a backward
/// that reads `read` of it. The kept value becomes an output of the derived node, so it is
/// saved and version-checked like any saved output.
#[doc(hidden)]
pub fn keep(v: Tensor, read: Read) -> Result<Tensor> {
    match read {
        Read::Value => Ok(v),
        Read::Shape => stand_in(&v),
        Read::Nothing => empty(),
    }
}

/// [`keep`] for a value the caller still holds (an input, the result): where the values are
/// read, a new handle on the same storage (no copy; in-place changes of the value are seen by
/// the saved tensor's version check).
#[doc(hidden)]
pub fn keep_ref(v: &Tensor, read: Read) -> Result<Tensor> {
    match read {
        Read::Value => Ok(Tensor::from_parts(v.0.storage.clone(), v.0.layout.clone())),
        Read::Shape => stand_in(v),
        Read::Nothing => empty(),
    }
}

/// `t`, as an input of a derived function's forward run again by its rule (`__autograd_f_rule`):
/// where the caller's backward needs its gradient but `t` does not require grad (a saved value
/// read back without `create_graph`), a leaf alias that does, so that the forward keeps what
/// that gradient's rules read. Without `create_graph` no graph is recorded from it.
#[doc(hidden)]
pub fn needing_grad(t: &Tensor, needs: bool) -> Result<Tensor> {
    if needs && !t.requires_grad() {
        t.detach().requires_grad_(true)
    } else {
        Ok(t.clone())
    }
}

/// One zero of `dtype` on the CPU, shared by every stand-in (never written: it is never
/// uniquely owned, so no op takes its buffer).
fn shared_zero(dtype: DType) -> Result<Arc<Storage>> {
    static ZEROS: [OnceLock<Arc<Storage>>; 2] = [OnceLock::new(), OnceLock::new()];
    let cell = &ZEROS[usize::from(dtype == DType::F64)];
    if let Some(s) = cell.get() {
        return Ok(s.clone());
    }
    let zero = Tensor::zeros(&[], dtype)?;
    Ok(cell.get_or_init(|| zero.0.storage.clone()).clone())
}

/// A tensor with `like`'s shape, dtype and device whose elements all alias one zero: what a
/// rule that reads only the shape needs, for one element of memory.
fn stand_in(like: &Tensor) -> Result<Tensor> {
    let storage = match like.device() {
        Device::Cpu => shared_zero(like.dtype())?,
        device => Tensor::zeros(&[], like.dtype())?
            .to(device)?
            .0
            .storage
            .clone(),
    };
    let layout = Layout::contiguous(&[]).expand(like.shape())?;
    Ok(Tensor::from_parts(storage, layout))
}

/// An empty tensor, for a value no rule reads.
fn empty() -> Result<Tensor> {
    Ok(Tensor::from_parts(
        shared_zero(DType::F32)?,
        Layout::contiguous(&[0]),
    ))
}

/// `acc + g`, where either may be absent: sums the gradients of a value used several times.
/// Both are the derived backward's own locals, used for the last time: the sum is written over
/// whichever nothing else references, when the backward is not recorded.
#[doc(hidden)]
pub fn accumulate(acc: Option<Tensor>, g: Option<Tensor>) -> Result<Option<Tensor>> {
    match (acc, g) {
        (Some(a), Some(g)) if !a.is_uniquely_owned() && g.is_uniquely_owned() => {
            Ok(Some(g.last_use(BinaryOp::Add, &a)?))
        }
        (Some(a), Some(g)) => Ok(Some(a.last_use(BinaryOp::Add, &g)?)),
        (a, None) => Ok(a),
        (None, g) => Ok(g),
    }
}

/// `grad` summed down to `like`'s shape when an op broadcast `like` (PyTorch's `sum_to_size`).
fn reduce_to(grad: Tensor, like: &Tensor) -> Result<Tensor> {
    if grad.shape() == like.shape() {
        Ok(grad)
    } else {
        grad.sum_to_shape(like.shape())
    }
}

/// Both gradients of a two-operand rule, each summed down to its operand's shape.
pub(crate) fn reduce_pair(
    (ga, gb): (Option<Tensor>, Option<Tensor>),
    a: &Tensor,
    b: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    Ok((
        ga.map(|g| reduce_to(g, a)).transpose()?,
        gb.map(|g| reduce_to(g, b)).transpose()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f64], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).expect("tensor")
    }

    fn fresh(g: &Tensor) -> Tensor {
        g.copy().expect("copy")
    }

    fn same(a: &Tensor, b: &Tensor, rule: &str) {
        assert_eq!(a.shape(), b.shape(), "{rule}");
        assert_eq!(
            a.to_vec::<f64>().expect("a"),
            b.to_vec::<f64>().expect("b"),
            "{rule}"
        );
    }

    /// Each rule gives the same gradient when the values its `reads` says it does not read are
    /// replaced by what the derived forward keeps in their place (a stand-in or an empty
    /// tensor): the declarations are what the rules do. Every call gets its own copy of the
    /// incoming gradient, since a rule may write its result over a gradient nothing else holds.
    #[test]
    fn rules_read_no_more_than_they_declare() {
        type R = DerivativeRules;
        let x = t(&[0.3, 1.7, 0.9, 2.4, 0.6, 1.1], &[2, 3]);
        let g = t(&[0.5, -1.0, 2.0, 0.25, -0.75, 1.5], &[2, 3]);
        let kept = |v: &Tensor, read: Read| keep_ref(v, read).expect("keep");
        macro_rules! unary {
            ($($rule:ident ($($s:expr),*) => $forward:expr;)*) => {$(
                let result: Tensor = $forward;
                let full = (R::$rule.apply)(&fresh(&g), &x, &result $(, $s)*).expect(stringify!($rule));
                let reads = R::$rule.reads;
                let lean = (R::$rule.apply)(
                    &fresh(&g),
                    &kept(&x, reads.operand(0)),
                    &kept(&result, reads.result()) $(, $s)*
                )
                .expect(stringify!($rule));
                same(&full, &lean, stringify!($rule));
            )*};
        }
        unary! {
            exp() => x.exp().unwrap();
            log() => x.log().unwrap();
            sin() => x.sin().unwrap();
            cos() => x.cos().unwrap();
            tanh() => x.tanh().unwrap();
            sigmoid() => x.sigmoid().unwrap();
            relu() => x.relu().unwrap();
            sqrt() => x.sqrt().unwrap();
            abs() => x.abs().unwrap();
            neg() => x.neg().unwrap();
            pow(2.5) => x.pow(2.5).unwrap();
            mul_scalar(3.0) => x.mul_scalar(3.0).unwrap();
            div_scalar(4.0) => x.div_scalar(4.0).unwrap();
            add_scalar(1.0) => x.add_scalar(1.0).unwrap();
            sub_scalar(1.0) => x.sub_scalar(1.0).unwrap();
            rsub_scalar(1.0) => x.neg().unwrap().add_scalar(1.0).unwrap();
            rdiv_scalar(2.0) => x.rdiv_scalar(2.0).unwrap();
            softmax(1) => x.softmax(1).unwrap();
            log_softmax(1) => x.log_softmax(1).unwrap();
            contiguous() => x.transpose(0, 1).unwrap().contiguous().unwrap().transpose(0, 1).unwrap();
            copy() => x.copy().unwrap();
            to_dtype(DType::F64) => x.copy().unwrap();
        }
        // Views: the incoming gradient has the view's shape.
        let gt = g.transpose(0, 1).unwrap().contiguous().unwrap();
        macro_rules! view {
            ($($rule:ident ($($s:expr),*) => $grad:expr;)*) => {$(
                let result = x.$rule($($s),*).unwrap();
                let grad: Tensor = $grad;
                let full = (R::$rule.apply)(&fresh(&grad), &x, &result $(, $s)*)
                    .expect(stringify!($rule));
                let reads = R::$rule.reads;
                let lean = (R::$rule.apply)(
                    &fresh(&grad),
                    &kept(&x, reads.operand(0)),
                    &kept(&result, reads.result()) $(, $s)*
                )
                .expect(stringify!($rule));
                same(&full, &lean, stringify!($rule));
            )*};
        }
        view! {
            reshape(&[3, 2]) => g.reshape(&[3, 2]).unwrap();
            transpose(0, 1) => gt.clone();
            permute(&[1, 0]) => gt.clone();
            narrow(1, 1, 2) => g.narrow(1, 1, 2).unwrap().contiguous().unwrap();
        }
        let wide = t(&[0.5, 1.5, 2.5], &[1, 3]);
        for (name, rule) in [("expand", R::expand), ("broadcast_to", R::broadcast_to)] {
            let result = wide.expand(&[2, 3]).unwrap();
            let full = (rule.apply)(&fresh(&g), &wide, &result, &[2, 3]).expect(name);
            let lean = (rule.apply)(
                &fresh(&g),
                &kept(&wide, rule.reads.operand(0)),
                &kept(&result, rule.reads.result()),
                &[2, 3],
            )
            .expect(name);
            same(&full, &lean, name);
        }
        // Reductions: the incoming gradient has the result's shape.
        let s = x.sum().unwrap();
        let gs = t(&[2.0], &[]);
        for (name, rule) in [("sum", R::sum), ("mean", R::mean)] {
            let full = (rule.apply)(&fresh(&gs), &x, &s).expect(name);
            let lean = (rule.apply)(
                &fresh(&gs),
                &kept(&x, rule.reads.operand(0)),
                &kept(&s, rule.reads.result()),
            )
            .expect(name);
            same(&full, &lean, name);
        }
        let rows = x.sum_dims(&[1], true).unwrap();
        let gr = t(&[1.0, -2.0], &[2, 1]);
        let rule = R::max_dim;
        let (values, _) = x.max_dim(1, true).unwrap();
        let gm = t(&[1.5, -0.5], &[2, 1]);
        let full = (rule.apply)(&fresh(&gm), &x, &values, 1, true).expect("max_dim");
        let lean = (rule.apply)(
            &fresh(&gm),
            &kept(&x, rule.reads.operand(0)),
            &kept(&values, rule.reads.result()),
            1,
            true,
        )
        .expect("max_dim");
        same(&full, &lean, "max_dim");
        let rule = R::sum_dims;
        let full = (rule.apply)(&fresh(&gr), &x, &rows, &[1], true).expect("sum_dims");
        let lean = (rule.apply)(
            &fresh(&gr),
            &kept(&x, rule.reads.operand(0)),
            &kept(&rows, rule.reads.result()),
            &[1],
            true,
        )
        .expect("sum_dims");
        same(&full, &lean, "sum_dims");
        // Two operands, `b` broadcast over the rows.
        let b = t(&[1.5, -0.5, 2.0], &[3]);
        let w = t(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], &[3, 2]);
        let gm = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let binary: [(&str, Rule<Binary>, &Tensor, Tensor, &Tensor); 5] = [
            ("add", R::add, &b, x.add(&b).unwrap(), &g),
            ("sub", R::sub, &b, x.sub(&b).unwrap(), &g),
            ("mul", R::mul, &b, x.mul(&b).unwrap(), &g),
            ("div", R::div, &b, x.div(&b).unwrap(), &g),
            ("matmul", R::matmul, &w, x.matmul(&w).unwrap(), &gm),
        ];
        for (name, rule, other, result, grad) in binary {
            // With every operand needing a gradient, and with one of them only: what the
            // rule reads given `needs` suffices for the gradients it then computes.
            for needs in [[true, true], [true, false], [false, true]] {
                let full = (rule.apply)(&fresh(grad), needs, &x, other, &result).expect(name);
                let reads = rule.reads;
                let lean = (rule.apply)(
                    &fresh(grad),
                    needs,
                    &kept(&x, reads.operand_given(0, &needs)),
                    &kept(other, reads.operand_given(1, &needs)),
                    &kept(&result, reads.result_given(&needs)),
                )
                .expect(name);
                for (f, l) in [(&full.0, &lean.0), (&full.1, &lean.1)] {
                    match (f, l) {
                        (Some(f), Some(l)) => same(f, l, name),
                        (None, None) => {}
                        _ => panic!("{name}: gradients present differ for {needs:?}"),
                    }
                }
            }
        }
    }
}
