//! `DerivativeRules`: the per-op gradient rules that `#[differentiable(derive)]` applies in
//! reverse order. A built-in op's rule is generated from its declaration: `rule` on its
//! `#[differentiable(builtin, ..)]` makes the macro write `DerivativeRules::<op>` from the op's
//! `#[backward]` (what it reads is what the backward's parameters name), as it writes a user
//! function's `__autograd_f_rule`. The few rules of methods that are not one op's declaration
//! (aliases, argument conversions, composite ops) are written by hand beside their ops. This
//! file holds the types, the calling convention and the helpers the derived forward and
//! backward use.

use crate::sync::Arc;
use crate::sync::statics::OnceLock;

use crate::backend::BinaryOp;
use crate::layout::Layout;
use crate::tensor::storage::Storage;
use crate::{DType, Device, Result, Tensor};

/// The derivative rules of the tensor methods, one associated constant per method, named like
/// the method (`DerivativeRules::exp` is the rule of [`Tensor::exp`]).
///
/// `#[differentiable(derive)]` turns each tensor method call `x.m(..)` (and each operator) of a
/// derived body into a use of `DerivativeRules::m`. A method without a rule is a compile error
/// at that call, the DSL's "`#[differentiable(derive)]` cannot differentiate `m`: the tensor
/// method has no derivative rule" (the derived code looks the name up with a fallback, so that the
/// macro keeps no list of the rules). Give the op `rule` on its declaration (or
/// write its rule beside it), or write the backward by hand with `#[backward]`.
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

/// `grad` summed down to `like`'s shape when an op broadcast `like` (PyTorch's `sum_to_size`):
/// what the engine does to a recorded node's gradients (B07), done by the rule of a broadcasting
/// op (generated by `#[differentiable(builtin, rule)]`).
#[doc(hidden)]
pub fn reduce_grad(grad: Option<Tensor>, like: &Tensor) -> Result<Option<Tensor>> {
    match grad {
        Some(g) if g.shape() != like.shape() => g.sum_to_shape(like.shape()).map(Some),
        g => Ok(g),
    }
}
