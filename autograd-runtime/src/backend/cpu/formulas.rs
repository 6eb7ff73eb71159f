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
        }
    };
}
pub(crate) use with_binary_fn;

/// The error function of one f64, to a few ulps (the method is described in `ops/erf.rs`).
pub(crate) fn erf_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a >= 6.0 {
        return 1f64.copysign(x);
    }
    let x2 = a * a;
    if a >= 2.0 {
        // 120 levels: converged to an ulp from x = 1.5 up.
        let mut f = a;
        for n in (1..=120).rev() {
            f = a + f64::from(n) / 2.0 / f;
        }
        let erfc = (-x2).exp() / std::f64::consts::PI.sqrt() / f;
        return (1.0 - erfc).copysign(x);
    }
    let mut term = a;
    let mut sum = a;
    let mut n = 0.0;
    while term > sum * 1e-17 {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
    }
    (std::f64::consts::FRAC_2_SQRT_PI * (-x2).exp() * sum).copysign(x)
}
