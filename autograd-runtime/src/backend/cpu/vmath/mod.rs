//! Vectorised element-wise transcendental functions (`exp`, `log`, `tanh`, `sigmoid`, `sin`, `cos`,
//! `erf` and `powf` with a scalar exponent) over `f32` and `f64` slices, with run-time CPU dispatch.
//!
//! # Design
//!
//! Each function is written once as plain, branch-free Rust on one lane (`lanes32`, `lanes64`):
//! selects are `if` on values (or a bit blend, [`lanes64::blend`], between two computed values),
//! bit tricks go through `to_bits`/`from_bits`, products that must be fused use `mul_add`. A
//! *block kernel* applies the lane function to an array of [`BLOCK_F32`] or [`BLOCK_F64`]
//! elements; everything is `#[inline(always)]` down to the loop that [`pulp::Arch::dispatch`]
//! runs under the target features of the best instruction set of the CPU (AVX-512 "x86-v4",
//! AVX2+FMA "x86-v3", NEON), so LLVM vectorises the block loop with the widest registers.
//!
//! One function has its own kernel on AVX-512: `f32` `tanh` ([`avx512`]), where picking
//! polynomial coefficients per lane from in-register tables (a permute instruction the portable
//! lane code cannot express) replaces the exponential and the division: half the time of the lane
//! code there.
//!
//! When pulp finds no SIMD instruction set ([`Arch::Scalar`]: x86 before AVX2, or targets pulp
//! does not vectorise), the lane code would be a poor fallback: on x86 it also means no FMA
//! instruction, and every `mul_add` would be a libm call. That case uses std's functions instead
//! ([`StdKernel`]).
//!
//! # Determinism
//!
//! A result depends only on the input value (and, for `powf`, the exponent): every element, body
//! or tail, goes through the same block kernel — the last `len % BLOCK` elements are copied into a
//! zero-padded block — and [`eval`]/[`powf`] run a one-element slice through the same path. The
//! lane code uses only correctly rounded IEEE operations (no fast-math, explicit `mul_add`), so
//! the bits do not depend on the lane or on the vector width (AVX2 and AVX-512 give identical
//! results, except `f32` `tanh`, whose AVX-512 kernel is another algorithm); the only calls out
//! of the kernels are std's `sin`/`cos` for huge arguments, pure functions themselves. So chunking
//! a slice over any number of threads gives identical bits. (NaN payloads and signs are not
//! specified.) The dispatch is fixed for the process.
//!
//! # Accuracy
//!
//! Measured by the sweeps in `vmath/tests.rs`, which cover subnormals, signed zeros, infinities,
//! NaN, overflow and underflow and huge `sin`/`cos` arguments: `f32` results are within 1 ulp of
//! the correctly rounded ones (0.8 ulp of the exact value; exhaustively over all `2^32` inputs for
//! the one-argument functions), `f64` results within 0.75 ulp of the exact value (checked against
//! mpmath on a sample). The required bounds are 2 ulp (`f32`) and 4 ulp (`f64`). `f32`
//! `sigmoid`, `sin`, `cos` and `powf` are computed in `f64` lanes and rounded once; `f32` `exp`,
//! `log` and `tanh` use `f32` lanes (twice the lanes per register; `tanh` measured exhaustively
//! at 0.69 ulp of the exact value, its AVX-512 kernel at 0.79). `erf` ([`erf`]) is computed in
//! `f64` lanes for `f64`, within 1 ulp of glibc's `erf` (2^27 strided values), and in `f32`
//! lanes for `f32`, with its own tables: the exhaustive sweep finds it within 1 ulp of the
//! correctly rounded value, 0.997 ulp of the exact one at worst (at `x = 1.0104`, by the cut
//! between its two methods). (It was the `f64` function rounded, with about four times the
//! instructions per element.)
//!
//! The polynomial coefficients are minimax fits computed for this module (Remez exchange in
//! 400-bit arithmetic on the stated interval and error weight, each coefficient rounded to the
//! lane type in turn and the higher ones refitted), not taken from another library; `erf`'s are
//! weighted least-squares fits at Chebyshev points refitted the same way (`fit_erf.py`).

#[cfg(target_arch = "x86_64")]
mod avx512;
mod erf;
mod lanes32;
mod lanes64;

use std::mem::MaybeUninit;

use pulp::{Arch, Simd, WithSimd};

/// Elements of an `f32` block kernel: one AVX-512 register.
const BLOCK_F32: usize = 16;
/// Elements of an `f64` block kernel: one AVX-512 register.
const BLOCK_F64: usize = 8;

/// A transcendental element-wise function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MathFn {
    /// `e^x`.
    Exp,
    /// Natural logarithm (`NaN` below 0, `-inf` at ±0).
    Log,
    /// Hyperbolic tangent.
    Tanh,
    /// Logistic function `1 / (1 + e^-x)`.
    Sigmoid,
    /// Sine (radians).
    Sin,
    /// Cosine (radians).
    Cos,
    /// The error function (`f32`: the `f64` value rounded).
    Erf,
}

/// What one call computes: a [`MathFn`] or `powf` with a scalar exponent.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op<T> {
    /// `f(x)`.
    Map(MathFn),
    /// `x.powf(e)`.
    Pow(T),
}

/// Where one call reads and writes.
#[derive(Debug)]
pub(crate) enum Io<'a, T> {
    /// From `src` into `dst` (same length).
    Into {
        /// Inputs.
        src: &'a [T],
        /// Outputs, all written.
        dst: &'a mut [MaybeUninit<T>],
    },
    /// In place.
    InPlace(&'a mut [T]),
}

/// Element type the vector math supports: implemented for `f32` and `f64` only.
pub(crate) trait VMath: Copy + Send + Sync + 'static {
    /// Runs `op` over `io` with the instruction set [`Arch::new`] picks for this CPU.
    fn run(op: Op<Self>, io: Io<'_, Self>);
}

impl VMath for f32 {
    fn run(op: Op<f32>, io: Io<'_, f32>) {
        match Arch::new() {
            Arch::Scalar => drive::<_, 1, _>(&StdKernel::new(op.widen()), io),
            #[cfg(target_arch = "x86_64")]
            Arch::V4(v4) if matches!(op, Op::Map(MathFn::Tanh)) => avx512::tanh(v4, io),
            arch => arch.dispatch(Run { op, io }),
        }
    }
}

impl VMath for f64 {
    fn run(op: Op<f64>, io: Io<'_, f64>) {
        match Arch::new() {
            Arch::Scalar => drive::<_, 1, _>(&StdKernel::new(op), io),
            arch => arch.dispatch(Run { op, io }),
        }
    }
}

impl Op<f32> {
    fn widen(self) -> Op<f64> {
        match self {
            Op::Map(f) => Op::Map(f),
            Op::Pow(e) => Op::Pow(f64::from(e)),
        }
    }
}

/// `dst[i] = f(src[i])` for every `i`.
///
/// # Panics
///
/// If `dst.len() != src.len()`.
pub(crate) fn map_into<T: VMath>(f: MathFn, src: &[T], dst: &mut [MaybeUninit<T>]) {
    assert_eq!(src.len(), dst.len(), "map_into: src and dst lengths differ");
    if !src.is_empty() {
        T::run(Op::Map(f), Io::Into { src, dst });
    }
}

/// `buf[i] = f(buf[i])` for every `i`.
pub(crate) fn map_inplace<T: VMath>(f: MathFn, buf: &mut [T]) {
    if !buf.is_empty() {
        T::run(Op::Map(f), Io::InPlace(buf));
    }
}

/// `dst[i] = src[i].powf(e)`, with std's `powf` result for every special case.
///
/// # Panics
///
/// If `dst.len() != src.len()`.
pub(crate) fn powf_into<T: VMath>(src: &[T], e: T, dst: &mut [MaybeUninit<T>]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "powf_into: src and dst lengths differ"
    );
    if !src.is_empty() {
        T::run(Op::Pow(e), Io::Into { src, dst });
    }
}

/// `buf[i] = buf[i].powf(e)` for every `i`.
pub(crate) fn powf_inplace<T: VMath>(buf: &mut [T], e: T) {
    if !buf.is_empty() {
        T::run(Op::Pow(e), Io::InPlace(buf));
    }
}

/// `f(x)` for one element: the same bits as the slice functions give for `x`.
pub(crate) fn eval<T: VMath>(f: MathFn, x: T) -> T {
    let mut one = [x];
    map_inplace(f, &mut one);
    one[0]
}

/// `x.powf(e)` for one element: the same bits as [`powf_into`] gives for `x`.
pub(crate) fn powf<T: VMath>(x: T, e: T) -> T {
    let mut one = [x];
    powf_inplace(&mut one, e);
    one[0]
}

// ---------------------------------------------------------------------------------------------
// Block kernels and the driver
// ---------------------------------------------------------------------------------------------

/// A function applied to a block of `N` lanes. Implementations are `#[inline(always)]` so that
/// they are compiled inside the target-feature function pulp's dispatch runs. (Blocks go by value:
/// through a `&mut` array, AVX2 code stored results in 128-bit pieces and reloaded them in 256-bit
/// ones, a store-forwarding stall.)
trait Kernel<T, const N: usize> {
    fn apply(&self, block: [T; N]) -> [T; N];
}

/// Runs `k` over `io`, block by block; the tail goes through the same kernel in a zero-padded
/// block, so every element sees exactly the same code.
#[inline(always)]
fn drive<T: Copy + Default, const N: usize, K: Kernel<T, N>>(k: &K, io: Io<'_, T>) {
    match io {
        Io::Into { src, dst } => {
            let (src_blocks, src_tail) = src.as_chunks::<N>();
            let (dst_blocks, dst_tail) = dst.as_chunks_mut::<N>();
            for (s, d) in src_blocks.iter().zip(dst_blocks) {
                for (o, v) in d.iter_mut().zip(k.apply(*s)) {
                    o.write(v);
                }
            }
            if !src_tail.is_empty() {
                let mut block = [T::default(); N];
                block[..src_tail.len()].copy_from_slice(src_tail);
                for (o, v) in dst_tail.iter_mut().zip(k.apply(block)) {
                    o.write(v);
                }
            }
        }
        Io::InPlace(buf) => {
            let (blocks, tail) = buf.as_chunks_mut::<N>();
            for b in blocks {
                *b = k.apply(*b);
            }
            if !tail.is_empty() {
                let mut block = [T::default(); N];
                block[..tail.len()].copy_from_slice(tail);
                tail.copy_from_slice(&k.apply(block)[..tail.len()]);
            }
        }
    }
}

/// A kernel that maps every lane through `F` (a lane function of `lanes32`/`lanes64`, or a
/// closure over one).
#[derive(Clone, Copy, Debug)]
struct Lanes<F>(F);

impl<T: Copy, const N: usize, F: Fn(T) -> T> Kernel<T, N> for Lanes<F> {
    #[inline(always)]
    fn apply(&self, mut block: [T; N]) -> [T; N] {
        for v in &mut block {
            *v = (self.0)(*v);
        }
        block
    }
}

/// Defines a sine or cosine kernel: the vector path for `|x| <= $max`, then, only in blocks that
/// hold a larger or infinite argument, `$scalar` (std's function with its exact argument
/// reduction) for those lanes; the choice depends on the value alone.
macro_rules! trig_kernel {
    ($name:ident, $t:ty, $n:expr, $lane:path, $max:expr, $scalar:path) => {
        #[derive(Clone, Copy, Debug)]
        struct $name;
        impl Kernel<$t, $n> for $name {
            #[inline(always)]
            fn apply(&self, x: [$t; $n]) -> [$t; $n] {
                let mut block = x;
                let mut any_big = false;
                for (v, &xi) in block.iter_mut().zip(&x) {
                    *v = $lane(xi);
                    any_big |= xi.abs() > $max;
                }
                if any_big {
                    redo_big(&mut block, &x, |xi| xi.abs() > $max, $scalar);
                }
                block
            }
        }
    };
}

/// Recomputes with `scalar` the lanes of `block` whose input in `x` is `big`. Kept out of line: if
/// it were inlined, LLVM would if-convert the loop and call `scalar` (a speculatable intrinsic) on
/// every lane of every block.
#[cold]
#[inline(never)]
fn redo_big<T: Copy, const N: usize>(
    block: &mut [T; N],
    x: &[T; N],
    big: impl Fn(T) -> bool,
    scalar: impl Fn(T) -> T,
) {
    for (v, &xi) in block.iter_mut().zip(x) {
        if big(xi) {
            *v = scalar(xi);
        }
    }
}

trig_kernel!(
    Sin32,
    f32,
    BLOCK_F32,
    lanes32::sin,
    lanes32::TRIG_MAX,
    lanes32::sin_big
);
trig_kernel!(
    Cos32,
    f32,
    BLOCK_F32,
    lanes32::cos,
    lanes32::TRIG_MAX,
    lanes32::cos_big
);
trig_kernel!(
    Sin64,
    f64,
    BLOCK_F64,
    lanes64::sin,
    lanes64::TRIG_MAX,
    f64::sin
);
trig_kernel!(
    Cos64,
    f64,
    BLOCK_F64,
    lanes64::cos,
    lanes64::TRIG_MAX,
    f64::cos
);

/// The exponent of a `powf` call, classified once per call.
#[derive(Clone, Copy, Debug)]
enum PowCase {
    /// `e == ±0`: every result is 1.
    Zero,
    /// `e` is NaN: 1 where `x == 1`, NaN elsewhere.
    Nan,
    /// `e == ±inf`.
    Inf {
        /// `e == +inf`.
        positive: bool,
    },
    /// Finite, non-zero `e`.
    Finite(lanes64::PowExp),
}

impl PowCase {
    fn of(e: f64) -> PowCase {
        if e == 0.0 {
            PowCase::Zero
        } else if e.is_nan() {
            PowCase::Nan
        } else if e.is_infinite() {
            PowCase::Inf { positive: e > 0.0 }
        } else {
            PowCase::Finite(lanes64::PowExp::new(e))
        }
    }
}

impl PowCase {
    /// `x^e` for an exponent of one of the special classes (zero, NaN, infinite), on an `f64`
    /// lane.
    #[inline(always)]
    fn lane(&self, x: f64) -> f64 {
        match *self {
            PowCase::Zero => 1.0,
            PowCase::Nan => {
                if x == 1.0 {
                    1.0
                } else {
                    f64::NAN
                }
            }
            PowCase::Inf { positive } => lanes64::pow_inf(x, positive),
            PowCase::Finite(_) => f64::NAN,
        }
    }
}

/// The scalar fallback, for [`Arch::Scalar`] (no SIMD instruction set; on x86 that also means no
/// FMA instruction, so every `mul_add` of the lane code would be a libm call, tens of times slower
/// than std's functions): std's `f64` functions element by element, `f32` rounded from them.
/// Accurate (within about 1 ulp; `sigmoid` about 1.5 ulp) and still a pure function of the value.
#[derive(Clone, Copy, Debug)]
enum StdKernel {
    Map(fn(f64) -> f64),
    Pow(f64),
}

impl StdKernel {
    fn new(op: Op<f64>) -> StdKernel {
        match op {
            Op::Map(MathFn::Exp) => StdKernel::Map(f64::exp),
            Op::Map(MathFn::Log) => StdKernel::Map(f64::ln),
            Op::Map(MathFn::Tanh) => StdKernel::Map(f64::tanh),
            Op::Map(MathFn::Sigmoid) => StdKernel::Map(std_sigmoid),
            Op::Map(MathFn::Sin) => StdKernel::Map(f64::sin),
            Op::Map(MathFn::Cos) => StdKernel::Map(f64::cos),
            // std has no `erf`: the lane function itself (with software `mul_add` where there is
            // no FMA instruction: slow, but the same bits as on every other machine).
            Op::Map(MathFn::Erf) => StdKernel::Map(erf::erf),
            Op::Pow(e) => StdKernel::Pow(e),
        }
    }

    fn lane(&self, x: f64) -> f64 {
        match *self {
            StdKernel::Map(f) => f(x),
            StdKernel::Pow(e) => x.powf(e),
        }
    }
}

/// `1/(1+e^-x)`, as `e^x/(1+e^x)` for negative `x` so that results down to `x = -745`
/// (subnormal) do not flush to zero.
fn std_sigmoid(x: f64) -> f64 {
    if x < 0.0 {
        let e = x.exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + (-x).exp())
    }
}

impl<const N: usize> Kernel<f32, N> for StdKernel {
    fn apply(&self, mut block: [f32; N]) -> [f32; N] {
        for v in &mut block {
            *v = self.lane(f64::from(*v)) as f32;
        }
        block
    }
}

impl<const N: usize> Kernel<f64, N> for StdKernel {
    fn apply(&self, mut block: [f64; N]) -> [f64; N] {
        for v in &mut block {
            *v = self.lane(*v);
        }
        block
    }
}

/// One call, handed to [`Arch::dispatch`].
#[derive(Debug)]
struct Run<'a, T> {
    op: Op<T>,
    io: Io<'a, T>,
}

impl WithSimd for Run<'_, f32> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let io = self.io;
        match self.op {
            Op::Map(MathFn::Exp) => drive::<_, BLOCK_F32, _>(&Lanes(lanes32::exp), io),
            Op::Map(MathFn::Log) => drive::<_, BLOCK_F32, _>(&Lanes(lanes32::ln), io),
            Op::Map(MathFn::Tanh) => drive::<_, BLOCK_F32, _>(&Lanes(lanes32::tanh), io),
            Op::Map(MathFn::Sigmoid) => drive::<_, BLOCK_F32, _>(&Lanes(lanes32::sigmoid), io),
            Op::Map(MathFn::Sin) => drive::<_, BLOCK_F32, _>(&Sin32, io),
            Op::Map(MathFn::Cos) => drive::<_, BLOCK_F32, _>(&Cos32, io),
            Op::Map(MathFn::Erf) => drive::<_, BLOCK_F32, _>(&Lanes(erf::erf32), io),
            Op::Pow(e) => match PowCase::of(f64::from(e)) {
                PowCase::Finite(pe) => {
                    drive::<_, BLOCK_F32, _>(&Lanes(|x| lanes32::pow(x, pe)), io)
                }
                special => {
                    drive::<_, BLOCK_F32, _>(&Lanes(|x: f32| special.lane(f64::from(x)) as f32), io)
                }
            },
        }
    }
}

impl WithSimd for Run<'_, f64> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let io = self.io;
        match self.op {
            Op::Map(MathFn::Exp) => drive::<_, BLOCK_F64, _>(&Lanes(lanes64::exp), io),
            Op::Map(MathFn::Log) => drive::<_, BLOCK_F64, _>(&Lanes(lanes64::ln), io),
            Op::Map(MathFn::Tanh) => drive::<_, BLOCK_F64, _>(&Lanes(lanes64::tanh), io),
            Op::Map(MathFn::Sigmoid) => drive::<_, BLOCK_F64, _>(&Lanes(lanes64::sigmoid), io),
            Op::Map(MathFn::Sin) => drive::<_, BLOCK_F64, _>(&Sin64, io),
            Op::Map(MathFn::Cos) => drive::<_, BLOCK_F64, _>(&Cos64, io),
            Op::Map(MathFn::Erf) => drive::<_, BLOCK_F64, _>(&Lanes(erf::erf), io),
            Op::Pow(e) => match PowCase::of(e) {
                PowCase::Finite(pe) => {
                    drive::<_, BLOCK_F64, _>(&Lanes(|x| lanes64::pow(x, pe)), io)
                }
                special => drive::<_, BLOCK_F64, _>(&Lanes(|x| special.lane(x)), io),
            },
        }
    }
}

#[cfg(test)]
mod tests;
