//! The CPU's run of a [`GeneratedKernel`]: the elements go through in blocks of [`BLOCK`], each
//! instruction applied to the whole block (the transcendental ones on SIMD lanes, `vmath`), the
//! registers of one block staying in cache; large tensors are cut into chunks on the intra-op
//! threads. Every instruction uses the function the op-by-op CPU kernels use for that element
//! (`with_unary_fn!`, `vmath`, `dense::pow_scalar`'s exact cases, the backward formulas'
//! operand order), and those functions give each element the same bits wherever it sits in a
//! block, so a fused derived function gives the op-by-op path's bits.

use super::formulas::{softplus, softplus_slope, with_binary_fn, with_unary_fn};
use super::parallel::{GRAIN, SendPtr, is_parallel, run_chunks};
use std::mem::MaybeUninit;

use super::vmath::{MathFn, VMath, map_into, powf_inplace};
use super::{BinaryOp, UnaryOp};
use crate::backend::generated::{GeneratedKernel, Inst};
use crate::backend::{Buffer, ElemVec};
use crate::{Element, Error, Result};

/// Elements per block: the registers of a block (one block per instruction) stay in L1/L2.
const BLOCK: usize = 256;

/// A kernel input: a dense run, or one value repeated.
#[derive(Clone, Copy)]
enum Src<'a, T> {
    Dense(&'a [T]),
    One(T),
}

/// Runs `k` over `n` elements of `inputs` (buffers of `T`: dense, or one value where
/// `repeated` says so), one new buffer per output.
pub(crate) fn run<T: Element + VMath>(
    k: &GeneratedKernel,
    inputs: &[&Buffer],
    repeated: &[bool],
    scalars: &[f64],
    n: usize,
) -> Result<Vec<Buffer>> {
    let inputs: Vec<Src<'_, T>> = inputs
        .iter()
        .enumerate()
        .map(|(j, b)| {
            let one = repeated.get(j).copied().unwrap_or(false);
            let wrong = || Error::WrongDType {
                expected: T::DTYPE,
                actual: b.dtype(),
            };
            let s = b.as_slice::<T>().ok_or_else(wrong)?;
            match (one, s.first()) {
                (true, Some(&v)) => Ok(Src::One(v)),
                (false, _) if s.len() >= n => Ok(Src::Dense(&s[..n])),
                _ => Err(Error::shape(
                    "generated kernel",
                    format!("input {j} holds {} elements, the kernel reads {n}", s.len()),
                )),
            }
        })
        .collect::<Result<_>>()?;
    let scalars: Vec<T> = scalars.iter().map(|&s| T::from_f64(s)).collect();
    // Buffers of freed tensors of this size first (as every CPU kernel's output): fresh pages
    // cost a fault each on first touch.
    let mut outs: Vec<Vec<T>> = k
        .outputs
        .iter()
        .map(|_| {
            let mut v = super::buffer_cache::take::<T>(n);
            v.clear();
            v.reserve_exact(n);
            v
        })
        .collect();
    let ptrs: Vec<SendPtr<T>> = outs.iter_mut().map(|v| SendPtr(v.as_mut_ptr())).collect();
    let width = BLOCK.min(n.max(1));
    let slots = slots(k, &inputs, width);
    let own = slots.iter().filter(|s| matches!(s, Slot::Own(_))).count();
    let chunk = |start: usize, len: usize| {
        let mut regs = vec![T::zero(); own * width];
        let mut at = start;
        while at < start + len {
            let m = width.min(start + len - at);
            let place = Place {
                inputs: &inputs,
                outs: &ptrs,
                regs: regs.as_mut_ptr(),
                at,
                m,
            };
            // SAFETY: `place` addresses `m` elements from `at` of inputs (dense ones hold `n`
            // elements, `at + m <= n`), of this chunk's own register file (`own * width`
            // elements, every `Own` offset below it) and of the outputs (capacity `n`); slots
            // are distinct memory, see `block`.
            // The block's loops compiled for the widest SIMD of this CPU, as the op-by-op
            // kernels' (`dense::simd`): plain IEEE arithmetic, the same bits on every set.
            super::dense::simd(
                #[inline(always)]
                || unsafe { block(k, &slots, &scalars, &place) },
            );
            for (o, (&r, p)) in k.outputs.iter().zip(&ptrs).enumerate() {
                if slots[usize::from(r)] != Slot::Out(o) {
                    // An output that is not written in place (a repeated register).
                    // SAFETY: as above; the source slot is not output `o`'s memory.
                    unsafe {
                        let src = place.read(&slots, r);
                        std::ptr::copy_nonoverlapping(src.as_ptr(), p.get().add(at), m);
                    }
                }
            }
            at += m;
        }
    };
    if is_parallel(n) {
        run_chunks(n.div_ceil(GRAIN), &|i| {
            let start = i * GRAIN;
            chunk(start, GRAIN.min(n - start));
        });
    } else {
        chunk(0, n);
    }
    for v in &mut outs {
        // SAFETY: the chunks above wrote every element `0..n` of every output (each output's
        // register is written in place, or copied after its block).
        unsafe { v.set_len(n) };
    }
    Ok(outs
        .into_iter()
        .map(|v| Buffer::host(ElemVec::from_vec(v)))
        .collect())
}

/// Where an instruction's values live for one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// A dense input, read in place (a `Load` of it).
    In(usize),
    /// The chunk's own register file, from this offset.
    Own(usize),
    /// Output `o`'s memory (the first output of this register): written in place.
    Out(usize),
}

/// Each instruction's slot: loads of dense inputs read them in place, a register that is an
/// output is written into it, every other register gets a block of its own.
fn slots<T>(k: &GeneratedKernel, inputs: &[Src<'_, T>], width: usize) -> Vec<Slot> {
    let mut own = 0;
    k.insts
        .iter()
        .enumerate()
        .map(|(j, inst)| {
            let out = k.outputs.iter().position(|&r| usize::from(r) == j);
            match (inst, out) {
                (Inst::Load(i), None) if matches!(inputs[usize::from(*i)], Src::Dense(_)) => {
                    Slot::In(usize::from(*i))
                }
                (_, Some(o)) => Slot::Out(o),
                _ => {
                    own += 1;
                    Slot::Own((own - 1) * width)
                }
            }
        })
        .collect()
}

/// The memory of one block: the inputs, the outputs and the register file.
struct Place<'a, T> {
    inputs: &'a [Src<'a, T>],
    outs: &'a [SendPtr<T>],
    regs: *mut T,
    at: usize,
    m: usize,
}

impl<T: Copy> Place<'_, T> {
    /// The values of register `r`.
    ///
    /// # Safety
    ///
    /// The slot's memory holds `m` elements from `at` (see `run`), and no `&mut` to it is live.
    unsafe fn read(&self, slots: &[Slot], r: u16) -> &[T] {
        let (at, m) = (self.at, self.m);
        match slots[usize::from(r)] {
            Slot::In(i) => match self.inputs[i] {
                Src::Dense(s) => &s[at..at + m],
                Src::One(_) => unreachable!("invariant: only dense inputs are read in place"),
            },
            // SAFETY: the caller's contract.
            Slot::Own(off) => unsafe { std::slice::from_raw_parts(self.regs.add(off), m) },
            // SAFETY: the caller's contract; written before it is read (registers are read
            // only by later instructions).
            Slot::Out(o) => unsafe { std::slice::from_raw_parts(self.outs[o].get().add(at), m) },
        }
    }

    /// The memory instruction `j` writes.
    ///
    /// # Safety
    ///
    /// As [`Place::read`], and no other reference to this slot's memory is live.
    #[allow(clippy::mut_from_ref)]
    unsafe fn write(&self, slots: &[Slot], j: usize) -> &mut [T] {
        let (at, m) = (self.at, self.m);
        match slots[j] {
            Slot::In(_) => &mut [],
            // SAFETY: the caller's contract.
            Slot::Own(off) => unsafe { std::slice::from_raw_parts_mut(self.regs.add(off), m) },
            // SAFETY: the caller's contract.
            Slot::Out(o) => unsafe {
                std::slice::from_raw_parts_mut(self.outs[o].get().add(at), m)
            },
        }
    }
}

/// Every instruction over the block `place` addresses.
///
/// # Safety
///
/// `place` addresses `m` elements of every slot (see `run`). Each instruction writes its own
/// slot and reads only earlier registers' slots; distinct registers have distinct memory,
/// except loads of one input, which are only read. So the one `&mut` live at a time (the
/// instruction's destination) aliases none of the `&`s read with it.
#[inline(always)]
unsafe fn block<T: Element + VMath>(
    k: &GeneratedKernel,
    slots: &[Slot],
    scalars: &[T],
    place: &Place<'_, T>,
) {
    for (j, inst) in k.insts.iter().enumerate() {
        if let Slot::In(_) = slots[j] {
            continue;
        }
        // SAFETY: see the function's contract.
        let dst = unsafe { place.write(slots, j) };
        // SAFETY: as above; `r < j` for every operand.
        let reg = |r: u16| unsafe { place.read(slots, r) };
        match *inst {
            Inst::Load(i) => match place.inputs[usize::from(i)] {
                Src::Dense(s) => dst.copy_from_slice(&s[place.at..place.at + place.m]),
                Src::One(v) => dst.fill(v),
            },
            Inst::Scalar(s) => dst.fill(scalars[usize::from(s)]),
            Inst::Const(c) => dst.fill(T::from_f64(f64::from(c))),
            Inst::Unary(op, x) => unary(op, reg(x), dst),
            Inst::Binary(op, a, b) => {
                let (a, b) = (reg(a), reg(b));
                let zip = dst.iter_mut().zip(a.iter().zip(b));
                with_binary_fn!(op, T, |f| zip.for_each(|(d, (&a, &b))| *d = f(a, b)))
            }
            Inst::Pow(x, e) => pow(reg(x), reg(e)[0], dst),
            Inst::PowGrad(g, x, e, e1) => {
                let (g, x, e, e1) = (reg(g), reg(x), reg(e)[0], reg(e1)[0]);
                pow_grad(g, x, e, e1, dst);
            }
            Inst::ReluGrad(g, y) => {
                let zero = T::zero();
                let pairs = dst.iter_mut().zip(reg(g).iter().zip(reg(y)));
                pairs.for_each(|(d, (&g, &y))| *d = if y > zero { g } else { zero });
            }
            Inst::Clamp(x, lo, hi) => {
                let (lo, hi) = (reg(lo)[0], reg(hi)[0]);
                for (d, &x) in dst.iter_mut().zip(reg(x)) {
                    let y = if x < lo { lo } else { x };
                    *d = if y > hi { hi } else { y };
                }
            }
            Inst::Interior(x, lo, hi) => {
                let (lo, hi) = (reg(lo)[0], reg(hi)[0]);
                for (d, &x) in dst.iter_mut().zip(reg(x)) {
                    *d = if x > lo && x < hi {
                        T::one()
                    } else {
                        T::zero()
                    };
                }
            }
            Inst::Erf(x) => math(MathFn::Erf, reg(x), dst),
            Inst::Softplus(x, beta, threshold) => {
                let (b, t) = (reg(beta)[0], reg(threshold)[0]);
                for (d, &x) in dst.iter_mut().zip(reg(x)) {
                    *d = softplus(x, b, t);
                }
            }
            Inst::SoftplusSlope(x, beta, threshold) => {
                let (b, t) = (reg(beta)[0], reg(threshold)[0]);
                for (d, &x) in dst.iter_mut().zip(reg(x)) {
                    *d = softplus_slope(x, b, t);
                }
            }
        }
    }
}

/// `op` of every element of `x` into `dst`: SIMD lanes for the transcendental functions (as
/// `dense::unary`), the element function otherwise.
#[inline(always)]
fn unary<T: Element + VMath>(op: UnaryOp, x: &[T], dst: &mut [T]) {
    let math = match op {
        UnaryOp::Exp => Some(MathFn::Exp),
        UnaryOp::Log => Some(MathFn::Log),
        UnaryOp::Sin => Some(MathFn::Sin),
        UnaryOp::Cos => Some(MathFn::Cos),
        UnaryOp::Tanh => Some(MathFn::Tanh),
        UnaryOp::Sigmoid => Some(MathFn::Sigmoid),
        _ => None,
    };
    if let Some(f) = math {
        self::math(f, x, dst);
    } else {
        with_unary_fn!(op, T, |f| dst
            .iter_mut()
            .zip(x)
            .for_each(|(d, &x)| *d = f(x)));
    }
}

/// `f` of every element of `x` into `dst`, on SIMD lanes.
#[inline(always)]
fn math<T: VMath>(f: MathFn, x: &[T], dst: &mut [T]) {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and `map_into` writes every element, so `dst`
    // stays initialised.
    let out = unsafe { &mut *(std::ptr::from_mut(dst) as *mut [MaybeUninit<T>]) };
    map_into(f, x, out);
}

/// `x^e` with `dense::pow_scalar`'s exact cases.
#[inline(always)]
fn pow<T: Element + VMath>(x: &[T], e: T, dst: &mut [T]) {
    fn each<T: Copy>(x: &[T], dst: &mut [T], f: impl Fn(T) -> T) {
        dst.iter_mut().zip(x).for_each(|(d, &x)| *d = f(x));
    }
    let one = T::one();
    match e.to_f64() {
        0.0 => dst.fill(one),
        1.0 => dst.copy_from_slice(x),
        2.0 => each(x, dst, |x| x * x),
        3.0 => each(x, dst, |x| x * x * x),
        0.5 => each(x, dst, T::sqrt),
        -0.5 => each(x, dst, |x| one / x.sqrt()),
        -1.0 => each(x, dst, |x| one / x),
        -2.0 => each(x, dst, |x| one / (x * x)),
        _ => {
            dst.copy_from_slice(x);
            powf_inplace(dst, e);
        }
    }
}

/// `pow`'s gradient as the CPU's backward computes it: zeros for the exponent 0 (PyTorch's
/// `pow_backward`), `g (x + x)` for 2, else `g (x^(e - 1) e)` with `e - 1` rounded from `f64`.
#[inline(always)]
fn pow_grad<T: Element + VMath>(g: &[T], x: &[T], e: T, e1: T, dst: &mut [T]) {
    let zero = T::zero();
    if e == zero {
        dst.fill(zero);
    } else if e == T::from_f64(2.0) {
        let pairs = dst.iter_mut().zip(g.iter().zip(x));
        pairs.for_each(|(d, (&g, &x))| *d = g * (x + x));
    } else {
        dst.copy_from_slice(x);
        powf_inplace(dst, e1);
        dst.iter_mut().zip(g).for_each(|(d, &g)| *d = g * (*d * e));
    }
}
