//! The formula of every [`UnaryOp`] and [`BinaryOp`] on one element: the table both the dense
//! kernels (`dense`) and the ndarray kernels (`elementwise`) expand, kept in a leaf file so
//! neither imports the other for it.

/// Expands `$body` once per [`UnaryOp`], with `$f` bound to that op's `Fn(T) -> T`, so every
/// kernel is monomorphised per op and the inner loops carry no branch on the op.
#[rustfmt::skip]
macro_rules! with_unary_fn {
    ($op:expr, $T:ty, |$f:ident| $body:expr) => {{
        let (zero, one) = (<$T>::zero(), <$T>::one());
        match $op {
            UnaryOp::Neg => { let $f = |x: $T| -x; $body }
            UnaryOp::Exp => { let $f = |x: $T| $crate::backend::cpu::vmath::eval($crate::backend::cpu::vmath::MathFn::Exp, x); $body }
            UnaryOp::Log => { let $f = |x: $T| $crate::backend::cpu::vmath::eval($crate::backend::cpu::vmath::MathFn::Log, x); $body }
            UnaryOp::Sin => { let $f = |x: $T| $crate::backend::cpu::vmath::eval($crate::backend::cpu::vmath::MathFn::Sin, x); $body }
            UnaryOp::Cos => { let $f = |x: $T| $crate::backend::cpu::vmath::eval($crate::backend::cpu::vmath::MathFn::Cos, x); $body }
            UnaryOp::Tanh => { let $f = |x: $T| $crate::backend::cpu::vmath::eval($crate::backend::cpu::vmath::MathFn::Tanh, x); $body }
            UnaryOp::Sigmoid => { let $f = |x: $T| $crate::backend::cpu::vmath::eval($crate::backend::cpu::vmath::MathFn::Sigmoid, x); $body }
            UnaryOp::Relu => { let $f = |x: $T| if x <= zero { zero } else { x }; $body }
            UnaryOp::Sqrt => { let $f = <$T>::sqrt; $body }
            UnaryOp::Abs => { let $f = <$T>::abs; $body }
            // ±0 and NaN are their own sign.
            UnaryOp::Sign => { let $f = |x: $T| if x > zero { one } else if x < zero { -one } else { x }; $body }
            UnaryOp::PositiveMask => { let $f = |x: $T| if x > zero { one } else { zero }; $body }
            UnaryOp::Log1p => { let $f = <$T>::ln_1p; $body }
            UnaryOp::Expm1 => { let $f = <$T>::exp_m1; $body }
            UnaryOp::Log2 => { let $f = <$T>::log2; $body }
            UnaryOp::Exp2 => { let $f = <$T>::exp2; $body }
            UnaryOp::Rsqrt => { let $f = |x: $T| one / x.sqrt(); $body }
            UnaryOp::Silu => { let $f = |x: $T| x / (one + (-x).exp()); $body }
            UnaryOp::Mish => { let $f = |x: $T| x * x.exp().ln_1p().tanh(); $body }
            UnaryOp::Floor => { let $f = <$T>::floor; $body }
            UnaryOp::Ceil => { let $f = <$T>::ceil; $body }
            UnaryOp::Round => { let $f = $crate::backend::cpu::formulas::round_half_even::<$T>; $body }
            UnaryOp::Trunc => { let $f = <$T>::trunc; $body }
        }
    }};
}
pub(crate) use with_unary_fn;

/// Expands `$body` once per [`BinaryOp`], with `$f` bound to that op's `Fn(T, T) -> T`, so every
/// kernel is monomorphised per op and the inner loops carry no branch on the op.
#[rustfmt::skip]
macro_rules! with_binary_fn {
    ($op:expr, $T:ty, |$f:ident| $body:expr) => {
        match $op {
            BinaryOp::Add => { let $f = |x: $T, y: $T| x + y; $body }
            BinaryOp::Sub => { let $f = |x: $T, y: $T| x - y; $body }
            BinaryOp::Mul => { let $f = |x: $T, y: $T| x * y; $body }
            BinaryOp::Div => { let $f = |x: $T, y: $T| x / y; $body }
            BinaryOp::Minimum => { let $f = $crate::backend::cpu::formulas::minimum::<$T>; $body }
            BinaryOp::Maximum => { let $f = $crate::backend::cpu::formulas::maximum::<$T>; $body }
            BinaryOp::Fmod => { let $f = |x: $T, y: $T| x % y; $body }
            BinaryOp::Remainder => { let $f = $crate::backend::cpu::formulas::remainder::<$T>; $body }
            BinaryOp::Atan2 => { let $f = <$T>::atan2; $body }
            BinaryOp::MinShare => { let $f = $crate::backend::cpu::formulas::min_share::<$T>; $body }
        }
    };
}
pub(crate) use with_binary_fn;

/// The nearest integer to `x`, halves to even (PyTorch's `round`, C's `rint`); the sign of
/// `x` kept (`round(-0.5) = -0`).
#[inline]
pub(crate) fn round_half_even<T: num_traits::Float>(x: T) -> T {
    let r = x.round();
    let two = T::one() + T::one();
    let half = T::one() / two;
    if (r - x).abs() == half && r % two != T::zero() {
        (x + x - r).copysign(x)
    } else {
        r
    }
}

/// The smaller of `x` and `y`, NaN if either is (PyTorch's `minimum`); `x` when they compare
/// equal (C++'s `std::min`).
#[inline]
pub(crate) fn minimum<T: num_traits::Float>(x: T, y: T) -> T {
    if x.is_nan() {
        x
    } else if y.is_nan() || y < x {
        y
    } else {
        x
    }
}

/// The larger of `x` and `y`, NaN if either is (PyTorch's `maximum`); `x` when they compare
/// equal (C++'s `std::max`).
#[inline]
pub(crate) fn maximum<T: num_traits::Float>(x: T, y: T) -> T {
    if x.is_nan() {
        x
    } else if y.is_nan() || x < y {
        y
    } else {
        x
    }
}

/// `x mod y` with the sign of `y` (PyTorch's `remainder`: `fmod`, plus `y` where the signs
/// differ).
#[inline]
pub(crate) fn remainder<T: num_traits::Float>(x: T, y: T) -> T {
    let m = x % y;
    if m != T::zero() && ((y < T::zero()) != (m < T::zero())) {
        m + y
    } else {
        m
    }
}

/// `minimum(x, y)`'s share of the gradient for `x`: 0 where `x > y`, ½ where equal, else 1.
#[inline]
pub(crate) fn min_share<T: num_traits::Float>(x: T, y: T) -> T {
    if x > y {
        T::zero()
    } else if x == y {
        T::one() / (T::one() + T::one())
    } else {
        T::one()
    }
}

/// `log(1 + e^(βx)) / β`, or `x` where `βx > threshold`, in `T` as PyTorch's kernel.
#[inline]
pub(crate) fn softplus<T: num_traits::Float>(x: T, beta: T, threshold: T) -> T {
    let bx = x * beta;
    if bx > threshold {
        x
    } else {
        bx.exp().ln_1p() / beta
    }
}

/// Softplus's slope `z / (z + 1)`, `z = e^(βx)`, or 1 where `βx > threshold` (PyTorch's
/// `softplus_backward` for a unit gradient).
#[inline]
pub(crate) fn softplus_slope<T: num_traits::Float>(x: T, beta: T, threshold: T) -> T {
    let bx = x * beta;
    if bx > threshold {
        T::one()
    } else {
        let z = bx.exp();
        z / (z + T::one())
    }
}

/// The error function of one f64: the vector math's `erf` (`vmath/erf.rs`), within about 0.6 ulp,
/// the same bits as the element-wise kernels give (for the tests of `ops/erf.rs`).
#[cfg(test)]
pub(crate) fn erf_f64(x: f64) -> f64 {
    super::vmath::eval(super::vmath::MathFn::Erf, x)
}
