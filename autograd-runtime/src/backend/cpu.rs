//! Raw CPU kernels: element-wise maths with broadcasting, reductions, softmax, data movement and
//! random numbers over `ndarray` views, generic over [`Element`].
//!
//! Every kernel accepts arbitrary strided views (transposed, sliced, broadcast with stride 0) and
//! returns a new array in standard (C-contiguous) layout with offset 0, so the caller can take its
//! buffer with `into_raw_vec_and_offset()`. Standard-layout inputs take slice-based fast paths that
//! allocate exactly one `Vec` and never enter `Zip`: that is what keeps the backward of a scalar
//! node cheap. Matrix multiplication lives in [`super::matmul`] and is re-exported here.

use ndarray::{
    arr0, Array0, Array1, Array2, ArrayD, ArrayView1, ArrayViewD, ArrayViewMutD, Axis, CowArray,
    Dimension, IxDyn, Zip,
};

use crate::tensor::dtype::Element;

pub(crate) use super::matmul::matmul;

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// Builds an owned standard-layout array (offset 0) from a buffer in row-major order.
///
/// 0- to 2-D shapes go through the fixed-dimension constructors: `IxDyn` stride set-up is a
/// measurable share of a scalar op's cost, and `into_dyn` is cheaper.
#[inline]
fn from_vec<T>(shape: IxDyn, data: Vec<T>) -> ArrayD<T> {
    const MSG: &str = "invariant: kernel buffers hold exactly the product of the shape";
    match *shape.slice() {
        [] => Array0::from_shape_vec((), data).expect(MSG).into_dyn(),
        [n] => {
            assert_eq!(n, data.len(), "{MSG}");
            Array1::from_vec(data).into_dyn()
        }
        [r, c] => Array2::from_shape_vec((r, c), data).expect(MSG).into_dyn(),
        _ => ArrayD::from_shape_vec(shape, data).expect(MSG),
    }
}

/// Shape equality without a `memcmp` call (which dominated the cost of scalar ops).
#[inline]
fn same_shape(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The first element (in logical order) of a non-empty array, e.g. the value of a 0-dim one.
#[inline]
fn first<T: Copy>(a: &ArrayViewD<'_, T>) -> T {
    *a.first().expect("invariant: the array is not empty")
}

/// Converts an `f64` constant to `T`.
#[inline]
fn lit<T: Element>(v: f64) -> T {
    <T as Element>::from_f64(v)
}

/// Returns `a` itself when it is in standard layout, else a standard-layout copy.
fn standard<T: Element>(a: ArrayViewD<'_, T>) -> CowArray<'_, T, IxDyn> {
    if a.is_standard_layout() {
        CowArray::from(a)
    } else {
        CowArray::from(to_contiguous(a))
    }
}

/// The elements of a standard-layout array, in row-major order.
fn std_slice<'a, T>(a: &'a CowArray<'_, T, IxDyn>) -> &'a [T] {
    a.as_slice()
        .expect("invariant: `standard` returns standard-layout arrays")
}

/// `(outer, len, inner)`: a standard-layout array of `shape` seen as a 3-D block around `dim`.
fn split_dims(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}

/// `shape` with `dim` set to 1 (`keepdim`) or removed.
fn reduced_shape(shape: &[usize], dim: usize, keepdim: bool) -> IxDyn {
    let mut out = shape.to_vec();
    if keepdim {
        out[dim] = 1;
    } else {
        out.remove(dim);
    }
    IxDyn(&out)
}

// ---------------------------------------------------------------------------------------------
// Unary element-wise ops
// ---------------------------------------------------------------------------------------------

/// An element-wise function of one tensor.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "kernel for ops still to come (maximum, minimum, tensor pow); unit-tested here"
    )
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnaryOp {
    /// `-x`
    Neg,
    /// `e^x`
    Exp,
    /// Natural logarithm.
    Log,
    /// `sin x`
    Sin,
    /// `cos x`
    Cos,
    /// `tanh x`
    Tanh,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// `max(x, 0)`; NaN stays NaN.
    Relu,
    /// Square root.
    Sqrt,
    /// `|x|`
    Abs,
    /// -1, 0 or 1 by the sign of `x` (zero keeps its sign bit); NaN stays NaN.
    Sign,
    /// `1 / x`
    Reciprocal,
    /// `x * x`
    Square,
    /// 1 where x > 0, else 0 (relu's derivative).
    PositiveMask,
}

/// Applies `f` to every element; standard-layout input maps its slice directly.
#[inline]
fn map_unary<T: Element>(a: ArrayViewD<'_, T>, f: impl Fn(T) -> T) -> ArrayD<T> {
    if a.ndim() == 0 {
        return arr0(f(first(&a))).into_dyn();
    }
    if let Some(s) = a.as_slice() {
        return from_vec(a.raw_dim(), s.iter().map(|&x| f(x)).collect());
    }
    let mut out = ArrayD::zeros(a.raw_dim());
    Zip::from(&mut out).and(&a).for_each(|o, &x| *o = f(x));
    out
}

/// Expands `$body` once per [`UnaryOp`], with `$f` bound to that op's `Fn(T) -> T`, so every
/// kernel is monomorphised per op and the inner loops carry no branch on the op.
#[rustfmt::skip]
macro_rules! with_unary_fn {
    ($op:expr, $T:ty, |$f:ident| $body:expr) => {{
        let (zero, one) = (<$T>::zero(), <$T>::one());
        match $op {
            UnaryOp::Neg => { let $f = |x: $T| -x; $body }
            UnaryOp::Exp => { let $f = <$T>::exp; $body }
            UnaryOp::Log => { let $f = <$T>::ln; $body }
            UnaryOp::Sin => { let $f = <$T>::sin; $body }
            UnaryOp::Cos => { let $f = <$T>::cos; $body }
            UnaryOp::Tanh => { let $f = <$T>::tanh; $body }
            UnaryOp::Sigmoid => { let $f = |x: $T| one / (one + (-x).exp()); $body }
            UnaryOp::Relu => { let $f = |x: $T| if x <= zero { zero } else { x }; $body }
            UnaryOp::Sqrt => { let $f = <$T>::sqrt; $body }
            UnaryOp::Abs => { let $f = <$T>::abs; $body }
            // ±0 and NaN are their own sign.
            UnaryOp::Sign => { let $f = |x: $T| if x > zero { one } else if x < zero { -one } else { x }; $body }
            UnaryOp::Reciprocal => { let $f = |x: $T| one / x; $body }
            UnaryOp::Square => { let $f = |x: $T| x * x; $body }
            UnaryOp::PositiveMask => { let $f = |x: $T| if x > zero { one } else { zero }; $body }
        }
    }};
}

/// Applies `op` to every element of `a`.
pub(crate) fn unary<T: Element>(op: UnaryOp, a: ArrayViewD<'_, T>) -> ArrayD<T> {
    if a.ndim() == 0 {
        let x = first(&a);
        return arr0(with_unary_fn!(op, T, |f| f(x))).into_dyn();
    }
    unary_nd(op, a)
}

/// [`unary`] for arrays with at least one dimension (kept out of line so the 0-dim path stays
/// small).
#[inline(never)]
fn unary_nd<T: Element>(op: UnaryOp, a: ArrayViewD<'_, T>) -> ArrayD<T> {
    with_unary_fn!(op, T, |f| map_unary(a, f))
}

/// `x.powf(exponent)` for every element.
///
/// Exponents 0, ±0.5, 1, 2, 3, -1 and -2 use multiplications / `sqrt` so they stay exact
/// (`0^0 = NaN^0 = 1`, as in PyTorch).
pub(crate) fn pow_scalar<T: Element>(a: ArrayViewD<'_, T>, exponent: f64) -> ArrayD<T> {
    let one = T::one();
    match exponent {
        0.0 => map_unary(a, |_| one),
        1.0 => to_contiguous(a),
        2.0 => map_unary(a, |x| x * x),
        3.0 => map_unary(a, |x| x * x * x),
        0.5 => map_unary(a, T::sqrt),
        -0.5 => map_unary(a, |x| one / x.sqrt()),
        -1.0 => map_unary(a, |x| one / x),
        -2.0 => map_unary(a, |x| one / (x * x)),
        _ => {
            let e: T = lit(exponent);
            map_unary(a, |x| x.powf(e))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Binary element-wise ops and broadcasting
// ---------------------------------------------------------------------------------------------

/// An element-wise function of two tensors.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "kernel for ops still to come (maximum, minimum, tensor pow); unit-tested here"
    )
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    /// `x + y`
    Add,
    /// `x - y`
    Sub,
    /// `x * y`
    Mul,
    /// `x / y`
    Div,
    /// The larger of the two; NaN if either is NaN (`torch.maximum`).
    Maximum,
    /// The smaller of the two; NaN if either is NaN (`torch.minimum`).
    Minimum,
    /// `x.powf(y)`
    Pow,
}

/// Two shapes that cannot be broadcast together, worded like PyTorch's error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at non-singleton dimension {dim}"
)]
pub(crate) struct BroadcastError {
    /// Size of the first operand along `dim` (1 where it has no such dimension).
    pub(crate) size_a: usize,
    /// Size of the second operand along `dim` (1 where it has no such dimension).
    pub(crate) size_b: usize,
    /// Index of the offending dimension in the broadcast result.
    pub(crate) dim: usize,
}

/// PyTorch broadcasting: align trailing dims; sizes must be equal or one of them 1.
///
/// # Errors
///
/// [`BroadcastError`] naming the first dimension where both sizes differ and neither is 1.
pub(crate) fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>, BroadcastError> {
    let n = a.len().max(b.len());
    let (pad_a, pad_b) = (n - a.len(), n - b.len());
    (0..n)
        .map(|dim| {
            let size_a = if dim < pad_a { 1 } else { a[dim - pad_a] };
            let size_b = if dim < pad_b { 1 } else { b[dim - pad_b] };
            match (size_a, size_b) {
                _ if size_a == size_b || size_b == 1 => Ok(size_a),
                (1, _) => Ok(size_b),
                _ => Err(BroadcastError {
                    size_a,
                    size_b,
                    dim,
                }),
            }
        })
        .collect()
}

/// `v` broadcast to `shape`, which must be a broadcast of its shape.
fn expand<'a, T>(v: &'a ArrayViewD<'_, T>, shape: &[usize]) -> ArrayViewD<'a, T> {
    v.broadcast(shape)
        .expect("invariant: shape is a broadcast of the operand's shape")
}

/// Checks that `b` broadcasts to `target` without growing it (for in-place ops).
fn check_broadcast_to(target: &[usize], b: &[usize]) -> Result<(), BroadcastError> {
    let shape = broadcast_shapes(target, b)?;
    if same_shape(&shape, target) {
        return Ok(());
    }
    let pad = shape.len() - target.len();
    let pad_b = shape.len() - b.len();
    let dim = (0..shape.len())
        .find(|&d| d < pad || shape[d] != target[d - pad])
        .expect("invariant: the broadcast shape differs from the target somewhere");
    let size_a = if dim < pad { 1 } else { target[dim - pad] };
    let size_b = if dim < pad_b { 1 } else { b[dim - pad_b] };
    Err(BroadcastError {
        size_a,
        size_b,
        dim,
    })
}

/// When `small` broadcasts to `shape` by repeating one contiguous run of its axes, returns
/// `(outer, mid, inner)` such that `out[o, m, i]` pairs with `small[m]` (row-major, `mid` is
/// `small.len()`). Covers scalars (`mid == 1`), biases `[N, M] + [M]` and columns `[N, M] * [N, 1]`.
fn block_broadcast(small: &[usize], shape: &[usize]) -> Option<(usize, usize, usize)> {
    let pad = shape.len().checked_sub(small.len())?;
    let kept = |d: usize| d >= pad && small[d - pad] != 1;
    let Some(first) = (0..shape.len()).find(|&d| kept(d)) else {
        return Some((shape.iter().product(), 1, 1));
    };
    let last = (first..shape.len()).rev().find(|&d| kept(d))?;
    (first..=last).all(|d| small[d - pad] == shape[d]).then(|| {
        (
            shape[..first].iter().product(),
            shape[first..=last].iter().product(),
            shape[last + 1..].iter().product(),
        )
    })
}

/// `f(big[o, m, i], small[m])` over a `block_broadcast` layout, in row-major order.
#[inline]
fn block_map<T: Element>(
    big: &[T],
    small: &[T],
    (_, mid, inner): (usize, usize, usize),
    f: impl Fn(T, T) -> T,
) -> Vec<T> {
    if big.is_empty() {
        Vec::new()
    } else if mid == 1 {
        let s = small[0];
        big.iter().map(|&x| f(x, s)).collect()
    } else if inner == 1 {
        let mut out = Vec::with_capacity(big.len());
        for chunk in big.chunks_exact(mid) {
            out.extend(chunk.iter().zip(small).map(|(&x, &s)| f(x, s)));
        }
        out
    } else {
        let mut out = Vec::with_capacity(big.len());
        for (chunk, &s) in big.chunks_exact(inner).zip(small.iter().cycle()) {
            out.extend(chunk.iter().map(|&x| f(x, s)));
        }
        out
    }
}

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
            BinaryOp::Maximum => { let $f = |x: $T, y: $T| if x > y || x.is_nan() { x } else { y }; $body }
            BinaryOp::Minimum => { let $f = |x: $T, y: $T| if x < y || x.is_nan() { x } else { y }; $body }
            BinaryOp::Pow => { let $f = |x: $T, y: $T| x.powf(y); $body }
        }
    };
}

/// Applies `op` element-wise with PyTorch broadcasting.
///
/// # Errors
///
/// [`BroadcastError`] if the shapes do not broadcast.
pub(crate) fn binary<T: Element>(
    op: BinaryOp,
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
) -> Result<ArrayD<T>, BroadcastError> {
    if a.ndim() == 0 && b.ndim() == 0 {
        // Hot path of scalar graphs: one dispatch, one allocation, no shape work.
        let (x, y) = (first(&a), first(&b));
        return Ok(arr0(with_binary_fn!(op, T, |f| f(x, y))).into_dyn());
    }
    binary_nd(op, a, b)
}

/// [`binary`] past the 0-dim case (kept out of line so the 0-dim path stays small).
#[inline(never)]
fn binary_nd<T: Element>(
    op: BinaryOp,
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
) -> Result<ArrayD<T>, BroadcastError> {
    with_binary_fn!(op, T, |f| zip_binary(a, b, f))
}

/// Body of [`binary`] for one op.
#[inline]
fn zip_binary<T: Element>(
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
    f: impl Fn(T, T) -> T + Copy,
) -> Result<ArrayD<T>, BroadcastError> {
    if same_shape(a.shape(), b.shape()) {
        if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
            let data = x.iter().zip(y).map(|(&x, &y)| f(x, y)).collect();
            return Ok(from_vec(a.raw_dim(), data));
        }
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    if a.len() == 1 && b.len() == 1 {
        let (x, y) = (first(&a), first(&b));
        return Ok(from_vec(IxDyn(&shape), vec![f(x, y)]));
    }
    if let (Some(x), Some(y)) = (a.as_slice(), b.as_slice()) {
        if same_shape(a.shape(), &shape) {
            if let Some(layout) = block_broadcast(b.shape(), &shape) {
                return Ok(from_vec(IxDyn(&shape), block_map(x, y, layout, f)));
            }
        } else if same_shape(b.shape(), &shape) {
            if let Some(layout) = block_broadcast(a.shape(), &shape) {
                let data = block_map(y, x, layout, |q, p| f(p, q));
                return Ok(from_vec(IxDyn(&shape), data));
            }
        }
    }
    let (a, b) = (expand(&a, &shape), expand(&b, &shape));
    let mut out = ArrayD::zeros(IxDyn(&shape));
    Zip::from(&mut out)
        .and(&a)
        .and(&b)
        .for_each(|o, &x, &y| *o = f(x, y));
    Ok(out)
}

/// `a (op) s` when `scalar_on_left == false`, `s (op) a` otherwise (for `1.0 - &t`, `2.0 / &t`).
pub(crate) fn binary_scalar<T: Element>(
    op: BinaryOp,
    a: ArrayViewD<'_, T>,
    s: T,
    scalar_on_left: bool,
) -> ArrayD<T> {
    if a.ndim() == 0 {
        let x = first(&a);
        let (x, y) = if scalar_on_left { (s, x) } else { (x, s) };
        return arr0(with_binary_fn!(op, T, |f| f(x, y))).into_dyn();
    }
    with_binary_fn!(op, T, |f| if scalar_on_left {
        map_unary(a, |x| f(s, x))
    } else {
        map_unary(a, |x| f(x, s))
    })
}

/// In place `a = a (op) b`, `b` broadcast to `a`'s shape.
///
/// `a` may be non-contiguous but must not have overlapping (stride-0) elements.
///
/// # Errors
///
/// [`BroadcastError`] if `b` does not broadcast to `a`'s shape (including when it would grow it);
/// `a` is then unchanged.
pub(crate) fn binary_inplace<T: Element>(
    op: BinaryOp,
    a: ArrayViewMutD<'_, T>,
    b: ArrayViewD<'_, T>,
) -> Result<(), BroadcastError> {
    if !same_shape(a.shape(), b.shape()) {
        check_broadcast_to(a.shape(), b.shape())?;
    }
    with_binary_fn!(op, T, |f| zip_inplace(a, b, f));
    Ok(())
}

/// Body of [`binary_inplace`] for one op; shapes are already checked.
#[inline]
fn zip_inplace<T: Element>(
    mut a: ArrayViewMutD<'_, T>,
    b: ArrayViewD<'_, T>,
    f: impl Fn(T, T) -> T,
) {
    let same = same_shape(a.shape(), b.shape());
    let layout = if same {
        None
    } else {
        block_broadcast(b.shape(), a.shape())
    };
    if let (Some(x), Some(y)) = (a.as_slice_mut(), b.as_slice()) {
        if same {
            x.iter_mut().zip(y).for_each(|(p, &q)| *p = f(*p, q));
            return;
        }
        if let Some((_, mid, inner)) = layout {
            if x.is_empty() {
            } else if mid == 1 {
                x.iter_mut().for_each(|p| *p = f(*p, y[0]));
            } else if inner == 1 {
                for chunk in x.chunks_exact_mut(mid) {
                    chunk.iter_mut().zip(y).for_each(|(p, &q)| *p = f(*p, q));
                }
            } else {
                for (chunk, &q) in x.chunks_exact_mut(inner).zip(y.iter().cycle()) {
                    chunk.iter_mut().for_each(|p| *p = f(*p, q));
                }
            }
            return;
        }
    }
    let b = b
        .broadcast(a.raw_dim())
        .expect("invariant: checked by check_broadcast_to");
    Zip::from(&mut a).and(&b).for_each(|p, &q| *p = f(*p, q));
}

/// In place `a = a (op) s`.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "kernel for ops still to come (maximum, minimum, tensor pow); unit-tested here"
    )
)]
pub(crate) fn binary_scalar_inplace<T: Element>(op: BinaryOp, mut a: ArrayViewMutD<'_, T>, s: T) {
    with_binary_fn!(op, T, |f| a.map_inplace(|x| *x = f(*x, s)));
}

/// Sets every element of `a` to `v`.
pub(crate) fn fill<T: Element>(mut a: ArrayViewMutD<'_, T>, v: T) {
    a.fill(v);
}

/// Element-wise select: `out = if cond > 0 { a } else { b }`, all three broadcast together.
///
/// # Errors
///
/// [`BroadcastError`] if the three shapes do not broadcast.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "kernel for ops still to come (maximum, minimum, tensor pow); unit-tested here"
    )
)]
pub(crate) fn where_positive<T: Element>(
    cond: ArrayViewD<'_, T>,
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
) -> Result<ArrayD<T>, BroadcastError> {
    let zero = T::zero();
    let pick = |c: T, x: T, y: T| if c > zero { x } else { y };
    if same_shape(cond.shape(), a.shape()) && same_shape(a.shape(), b.shape()) {
        if let (Some(c), Some(x), Some(y)) = (cond.as_slice(), a.as_slice(), b.as_slice()) {
            let data = c
                .iter()
                .zip(x)
                .zip(y)
                .map(|((&c, &x), &y)| pick(c, x, y))
                .collect();
            return Ok(from_vec(a.raw_dim(), data));
        }
    }
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), a.shape())?, b.shape())?;
    let (c, x, y) = (
        expand(&cond, &shape),
        expand(&a, &shape),
        expand(&b, &shape),
    );
    let mut out = ArrayD::zeros(IxDyn(&shape));
    Zip::from(&mut out)
        .and(&c)
        .and(&x)
        .and(&y)
        .for_each(|o, &c, &x, &y| *o = pick(c, x, y));
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------------

/// Slices up to this length are summed directly (with 8 accumulators); longer ones are split.
const PAIRWISE_BLOCK: usize = 256;

/// Rows summed directly before [`sum_rows_into`] splits (pairwise over rows).
const ROW_BLOCK: usize = 32;

/// Pairwise sum: error grows with `log n`, so f32 sums of millions of elements stay accurate.
fn pairwise_sum<T: Element>(s: &[T]) -> T {
    if s.len() <= PAIRWISE_BLOCK {
        let mut acc = [T::zero(); 8];
        let chunks = s.chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += x;
            }
        }
        let mut total =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for &x in rest {
            total += x;
        }
        total
    } else {
        let (l, r) = s.split_at((s.len() / 2) & !7);
        pairwise_sum(l) + pairwise_sum(r)
    }
}

/// Pairwise sum of a strided 1-D view.
fn strided_sum<T: Element>(v: ArrayView1<'_, T>) -> T {
    if let Some(s) = v.as_slice_memory_order() {
        pairwise_sum(s)
    } else if v.len() <= PAIRWISE_BLOCK {
        v.iter().fold(T::zero(), |acc, &x| acc + x)
    } else {
        let (l, r) = v.split_at(Axis(0), v.len() / 2);
        strided_sum(l) + strided_sum(r)
    }
}

/// Adds the `rows.len() / out.len()` rows of `rows` into `out`, pairwise over rows.
fn sum_rows_into<T: Element>(rows: &[T], out: &mut [T]) {
    let inner = out.len();
    let n_rows = rows.len() / inner;
    if n_rows <= ROW_BLOCK {
        for row in rows.chunks_exact(inner) {
            out.iter_mut().zip(row).for_each(|(o, &x)| *o += x);
        }
    } else {
        let (l, r) = rows.split_at(n_rows / 2 * inner);
        sum_rows_into(l, out);
        let mut tmp = vec![T::zero(); inner];
        sum_rows_into(r, &mut tmp);
        out.iter_mut().zip(&tmp).for_each(|(o, &x)| *o += x);
    }
}

/// Sum of all elements (pairwise, so f32 sums of 1e6 elements stay accurate); 0 when empty.
pub(crate) fn sum_all<T: Element>(a: ArrayViewD<'_, T>) -> T {
    if let Some(s) = a.as_slice_memory_order() {
        return pairwise_sum(s);
    }
    let last = Axis(a.ndim() - 1); // 0-dim arrays are contiguous, so ndim >= 1 here
    let partial: Vec<T> = a.lanes(last).into_iter().map(strided_sum).collect();
    pairwise_sum(&partial)
}

/// Sums the standard-layout array `a` over the consecutive axes `start..end`, keeping them as 1s.
fn sum_axis_run<T: Element>(a: &CowArray<'_, T, IxDyn>, start: usize, end: usize) -> ArrayD<T> {
    let shape = a.shape();
    let outer: usize = shape[..start].iter().product();
    let len: usize = shape[start..end].iter().product();
    let inner: usize = shape[end..].iter().product();
    let s = std_slice(a);
    let mut out_shape = shape.to_vec();
    out_shape[start..end].iter_mut().for_each(|d| *d = 1);
    let mut out = vec![T::zero(); outer * inner];
    if len > 0 && inner > 0 {
        if inner == 1 {
            for (o, block) in out.iter_mut().zip(s.chunks_exact(len)) {
                *o = pairwise_sum(block);
            }
        } else {
            for (o, block) in out.chunks_exact_mut(inner).zip(s.chunks_exact(len * inner)) {
                sum_rows_into(block, o);
            }
        }
    }
    from_vec(IxDyn(&out_shape), out)
}

/// Sums over `axes` (valid and distinct; empty means copy), dropping them unless `keepdim`.
pub(crate) fn sum_axes<T: Element>(
    a: ArrayViewD<'_, T>,
    axes: &[usize],
    keepdim: bool,
) -> ArrayD<T> {
    let ndim = a.ndim();
    let mut reduce = vec![false; ndim];
    axes.iter().for_each(|&ax| reduce[ax] = true);
    let out_shape: Vec<usize> = (0..ndim)
        .filter(|&d| keepdim || !reduce[d])
        .map(|d| if reduce[d] { 1 } else { a.shape()[d] })
        .collect();
    if axes.is_empty() {
        return to_contiguous(a);
    }
    if axes.len() == ndim {
        return from_vec(IxDyn(&out_shape), vec![sum_all(a)]);
    }
    // Reduce each run of consecutive axes, last run first; every step's output is standard.
    let mut cur = standard(a);
    let mut end = ndim;
    while end > 0 {
        if !reduce[end - 1] {
            end -= 1;
            continue;
        }
        let mut start = end - 1;
        while start > 0 && reduce[start - 1] {
            start -= 1;
        }
        cur = CowArray::from(sum_axis_run(&cur, start, end));
        end = start;
    }
    from_vec(
        IxDyn(&out_shape),
        cur.into_owned().into_raw_vec_and_offset().0,
    )
}

/// Reduces a broadcast gradient back to `shape` (PyTorch's `sum_to`): sums the leading extra
/// dims, and the dims where `shape` has 1 and `a` does not. `shape` must broadcast to `a`'s.
pub(crate) fn sum_to<T: Element>(a: ArrayViewD<'_, T>, shape: &[usize]) -> ArrayD<T> {
    if same_shape(a.shape(), shape) {
        return to_contiguous(a);
    }
    if a.len() == 1 && shape.iter().product::<usize>() == 1 {
        let x = *a.iter().next().expect("invariant: a has one element");
        return from_vec(IxDyn(shape), vec![x]);
    }
    let lead = a.ndim() - shape.len();
    let axes: Vec<usize> = (0..lead)
        .chain((lead..a.ndim()).filter(|&d| shape[d - lead] == 1 && a.shape()[d] != 1))
        .collect();
    let summed = sum_axes(a, &axes, true);
    from_vec(IxDyn(shape), summed.into_raw_vec_and_offset().0)
}

/// Max over `dim`: `(values, indices)` of the first maximum. A NaN is the maximum (the first NaN
/// wins), as in PyTorch.
///
/// # Panics
///
/// If `dim` has size 0 (PyTorch errors there too; the caller checks).
pub(crate) fn max_dim<T: Element>(
    a: ArrayViewD<'_, T>,
    dim: usize,
    keepdim: bool,
) -> (ArrayD<T>, ArrayD<usize>) {
    let (outer, len, inner) = split_dims(a.shape(), dim);
    assert!(len > 0, "max_dim: dimension {dim} has size 0");
    let out_shape = reduced_shape(a.shape(), dim, keepdim);
    let a = standard(a);
    let s = std_slice(&a);
    let mut vals = Vec::with_capacity(outer * inner);
    let mut idx = Vec::with_capacity(outer * inner);
    if inner > 0 {
        for block in s.chunks_exact(len * inner) {
            if inner == 1 {
                let (mut best, mut at) = (block[0], 0);
                for (k, &x) in block.iter().enumerate().skip(1) {
                    if best.is_nan() {
                        break;
                    }
                    if x > best || x.is_nan() {
                        (best, at) = (x, k);
                    }
                }
                vals.push(best);
                idx.push(at);
            } else {
                let start = vals.len();
                vals.extend_from_slice(&block[..inner]);
                idx.resize(start + inner, 0);
                for (k, row) in block.chunks_exact(inner).enumerate().skip(1) {
                    for ((v, i), &x) in vals[start..].iter_mut().zip(&mut idx[start..]).zip(row) {
                        if x > *v || (x.is_nan() && !v.is_nan()) {
                            (*v, *i) = (x, k);
                        }
                    }
                }
            }
        }
    }
    (from_vec(out_shape.clone(), vals), from_vec(out_shape, idx))
}

/// Shared body of [`softmax`] and [`log_softmax`].
fn softmax_impl<T: Element>(a: ArrayViewD<'_, T>, dim: usize, log: bool) -> ArrayD<T> {
    let (_, len, inner) = split_dims(a.shape(), dim);
    let shape = a.raw_dim();
    let a = standard(a);
    let s = std_slice(&a);
    let mut out: Vec<T> = Vec::with_capacity(s.len());
    if s.is_empty() {
        return from_vec(shape, out);
    }
    let neg_inf = T::neg_infinity();
    let max = |m: T, x: T| if x > m { x } else { m };
    if inner == 1 {
        for row in s.chunks_exact(len) {
            let m = row.iter().fold(neg_inf, |m, &x| max(m, x));
            let start = out.len();
            out.extend(row.iter().map(|&x| (x - m).exp()));
            let total = pairwise_sum(&out[start..]);
            if log {
                let l = total.ln();
                out[start..]
                    .iter_mut()
                    .zip(row)
                    .for_each(|(o, &x)| *o = (x - m) - l);
            } else {
                out[start..].iter_mut().for_each(|o| *o /= total);
            }
        }
    } else {
        let mut m = vec![neg_inf; inner];
        let mut total = vec![T::zero(); inner];
        for block in s.chunks_exact(len * inner) {
            m.fill(neg_inf);
            total.fill(T::zero());
            for row in block.chunks_exact(inner) {
                m.iter_mut().zip(row).for_each(|(m, &x)| *m = max(*m, x));
            }
            let start = out.len();
            for row in block.chunks_exact(inner) {
                out.extend(row.iter().zip(&m).map(|(&x, &m)| (x - m).exp()));
            }
            sum_rows_into(&out[start..], &mut total);
            let outs = out[start..]
                .chunks_exact_mut(inner)
                .zip(block.chunks_exact(inner));
            for (o_row, row) in outs {
                if log {
                    for (((o, &x), &m), &t) in o_row.iter_mut().zip(row).zip(&m).zip(&total) {
                        *o = (x - m) - t.ln();
                    }
                } else {
                    o_row.iter_mut().zip(&total).for_each(|(o, &t)| *o /= t);
                }
            }
        }
    }
    from_vec(shape, out)
}

/// Softmax over `dim`, numerically stable (the row maximum is subtracted before `exp`).
pub(crate) fn softmax<T: Element>(a: ArrayViewD<'_, T>, dim: usize) -> ArrayD<T> {
    softmax_impl(a, dim, false)
}

/// Log-softmax over `dim`, stable: `x - max - ln(sum(exp(x - max)))`.
pub(crate) fn log_softmax<T: Element>(a: ArrayViewD<'_, T>, dim: usize) -> ArrayD<T> {
    softmax_impl(a, dim, true)
}

// ---------------------------------------------------------------------------------------------
// Shape and data movement
// ---------------------------------------------------------------------------------------------

/// A standard-layout copy of `a`.
pub(crate) fn to_contiguous<T: Element>(a: ArrayViewD<'_, T>) -> ArrayD<T> {
    if a.ndim() == 0 {
        return arr0(first(&a)).into_dyn();
    }
    if let Some(s) = a.as_slice() {
        return from_vec(a.raw_dim(), s.to_vec());
    }
    let mut out = ArrayD::zeros(a.raw_dim());
    out.assign(&a);
    out
}

/// The slices of `a` at positions `index` along `dim`, in that order (repeats allowed).
///
/// # Panics
///
/// If an index is out of bounds for `dim` (the caller checks).
pub(crate) fn index_select<T: Element>(
    a: ArrayViewD<'_, T>,
    dim: usize,
    index: &[usize],
) -> ArrayD<T> {
    let (_, len, inner) = split_dims(a.shape(), dim);
    assert!(
        index.iter().all(|&i| i < len),
        "index_select: index out of bounds for size {len}"
    );
    let mut shape = a.shape().to_vec();
    shape[dim] = index.len();
    let a = standard(a);
    let s = std_slice(&a);
    let mut out = Vec::with_capacity(shape.iter().product());
    if len * inner > 0 {
        for block in s.chunks_exact(len * inner) {
            for &i in index {
                out.extend_from_slice(&block[i * inner..(i + 1) * inner]);
            }
        }
    }
    from_vec(IxDyn(&shape), out)
}

/// Scatter-add of [`index_select`]'s gradient: `out` has `shape` and
/// `out.select(dim, index[k]) += grad.select(dim, k)`.
///
/// # Panics
///
/// If an index is out of bounds or `grad` does not have `shape` with `index.len()` at `dim`.
pub(crate) fn index_add<T: Element>(
    shape: &[usize],
    dim: usize,
    index: &[usize],
    grad: ArrayViewD<'_, T>,
) -> ArrayD<T> {
    let (outer, len, inner) = split_dims(shape, dim);
    assert!(
        index.iter().all(|&i| i < len),
        "index_add: index out of bounds for size {len}"
    );
    assert_eq!(
        grad.len(),
        outer * index.len() * inner,
        "index_add: gradient has the wrong size"
    );
    let grad = standard(grad);
    let g = std_slice(&grad);
    let mut out = vec![T::zero(); outer * len * inner];
    if inner > 0 && !index.is_empty() {
        for (o, g_block) in g.chunks_exact(index.len() * inner).enumerate() {
            for (&i, g_row) in index.iter().zip(g_block.chunks_exact(inner)) {
                let dst = &mut out[(o * len + i) * inner..][..inner];
                dst.iter_mut().zip(g_row).for_each(|(d, &x)| *d += x);
            }
        }
    }
    from_vec(IxDyn(shape), out)
}

/// Concatenates `parts` along `dim` (the caller checks that the other dims agree).
///
/// # Panics
///
/// If `parts` is empty.
pub(crate) fn cat<T: Element>(parts: &[ArrayViewD<'_, T>], dim: usize) -> ArrayD<T> {
    let first = parts.first().expect("cat: no tensors to concatenate");
    let mut shape = first.shape().to_vec();
    shape[dim] = parts.iter().map(|p| p.shape()[dim]).sum();
    let (outer, _, inner) = split_dims(&shape, dim);
    let parts: Vec<_> = parts.iter().map(|p| standard(p.view())).collect();
    let mut out = Vec::with_capacity(shape.iter().product());
    for o in 0..outer {
        for p in &parts {
            let chunk = p.shape()[dim] * inner;
            out.extend_from_slice(&std_slice(p)[o * chunk..(o + 1) * chunk]);
        }
    }
    from_vec(IxDyn(&shape), out)
}

/// Gradient of [`max_dim`]: zeros of `shape` with `grad` added at `indices` along `dim`.
/// `indices` and `grad` have the reduced shape (`keepdim` or not: the element order is the same).
///
/// # Panics
///
/// If `indices`/`grad` do not have the reduced number of elements or an index is out of bounds.
pub(crate) fn scatter_max_grad<T: Element>(
    shape: &[usize],
    dim: usize,
    indices: ArrayViewD<'_, usize>,
    grad: ArrayViewD<'_, T>,
) -> ArrayD<T> {
    let (outer, len, inner) = split_dims(shape, dim);
    assert_eq!(
        indices.len(),
        outer * inner,
        "scatter_max_grad: indices have the wrong size"
    );
    assert_eq!(
        grad.len(),
        outer * inner,
        "scatter_max_grad: gradient has the wrong size"
    );
    let grad = standard(grad);
    let mut out = vec![T::zero(); outer * len * inner];
    let pairs = indices.iter().zip(std_slice(&grad)).enumerate();
    for (flat, (&i, &g)) in pairs {
        assert!(
            i < len,
            "scatter_max_grad: index {i} out of bounds for size {len}"
        );
        let (o, j) = (flat / inner, flat % inner);
        out[(o * len + i) * inner + j] += g;
    }
    from_vec(IxDyn(shape), out)
}

// ---------------------------------------------------------------------------------------------
// Random numbers and checks
// ---------------------------------------------------------------------------------------------

/// xoshiro256** seeded through splitmix64 (both by Blackman and Vigna): small, fast and
/// reproducible across platforms, which is all `randn` needs.
#[derive(Debug)]
struct Xoshiro256 {
    /// Generator state; never all zero (splitmix64 outputs are a bijection of distinct inputs).
    s: [u64; 4],
}

impl Xoshiro256 {
    /// Expands `seed` into a full state with splitmix64.
    fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Self {
            s: [next(), next(), next(), next()],
        }
    }

    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `(0, 1]` with 53 random bits (never 0, so `ln` is finite).
    fn next_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Deterministic standard-normal samples (Box-Muller over xoshiro256**): the same `seed` always
/// gives the same values.
pub(crate) fn randn<T: Element>(shape: &[usize], seed: u64) -> ArrayD<T> {
    let n: usize = shape.iter().product();
    let mut rng = Xoshiro256::new(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let r = (-2.0 * rng.next_unit().ln()).sqrt();
        let theta = std::f64::consts::TAU * rng.next_unit();
        out.push(lit(r * theta.cos()));
        if out.len() < n {
            out.push(lit(r * theta.sin()));
        }
    }
    from_vec(IxDyn(shape), out)
}

/// Whether any element is NaN.
pub(crate) fn has_nan<T: Element>(a: ArrayViewD<'_, T>) -> bool {
    match a.as_slice_memory_order() {
        // Branch-free folds per chunk vectorise; the early exit is per chunk.
        Some(s) => s
            .chunks(1024)
            .any(|c| c.iter().fold(false, |acc, x| acc | x.is_nan())),
        None => a.iter().any(|x| x.is_nan()),
    }
}

/// `max |a - b|` over two arrays of the same shape: 0 when empty, NaN if any difference is NaN.
///
/// # Panics
///
/// If the shapes differ.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "kernel for ops still to come (maximum, minimum, tensor pow); unit-tested here"
    )
)]
pub(crate) fn max_abs_diff<T: Element>(a: ArrayViewD<'_, T>, b: ArrayViewD<'_, T>) -> T {
    assert_eq!(a.shape(), b.shape(), "max_abs_diff: shapes differ");
    let step = |m: T, x: T, y: T| {
        let d = (x - y).abs();
        if d > m || d.is_nan() {
            d
        } else {
            m
        }
    };
    match (a.as_slice(), b.as_slice()) {
        (Some(x), Some(y)) => x.iter().zip(y).fold(T::zero(), |m, (&x, &y)| step(m, x, y)),
        _ => Zip::from(&a)
            .and(&b)
            .fold(T::zero(), |m, &x, &y| step(m, x, y)),
    }
}

#[cfg(test)]
#[path = "cpu_tests.rs"]
mod tests;
