//! Element-wise kernels: unary ops, `pow` by a scalar, binary ops with PyTorch broadcasting,
//! scalar and in-place variants, and `fill`.

use ndarray::{ArrayD, ArrayView1, ArrayViewD, ArrayViewMutD, Axis, IxDyn, arr0, s};

use super::formulas::{with_binary_fn, with_unary_fn};
use super::vmath::VMath;
use super::{buffer_cache, first, from_vec, same_shape};
use crate::Element;
use crate::backend::op::{BinaryOp, UnaryOp};

// ---------------------------------------------------------------------------------------------
// Unary element-wise ops
// ---------------------------------------------------------------------------------------------

/// Applies `f` to every element; standard-layout input maps its slice directly.
#[inline]
fn map_unary<T: Element>(a: ArrayViewD<'_, T>, f: impl Fn(T) -> T) -> ArrayD<T> {
    if a.ndim() == 0 {
        return arr0(f(first(&a))).into_dyn();
    }
    if let Some(s) = a.as_slice() {
        return from_vec(a.raw_dim(), s.iter().map(|&x| f(x)).collect());
    }
    let mut out = buffer_cache::take(a.len());
    blocks(&a, None, &mut |x, _| out.extend(x.iter().map(|&x| f(x))));
    from_vec(a.raw_dim(), out)
}

/// Elements per block of the strided paths.
const BLOCK: usize = 256;

/// Calls `f` on consecutive row-major blocks of `a` (and of `b`, which has `a`'s shape), each
/// gathered into contiguous scratch lane by lane (the last axis): the strided paths of the
/// element-wise kernels. Generic over the element type only, so that each op's code is the
/// slice loop its contiguous path has, rather than one ndarray `Zip` per op and dtype (the
/// runtime's compile time).
#[inline(never)]
fn blocks<T: Element>(
    a: &ArrayViewD<'_, T>,
    b: Option<&ArrayViewD<'_, T>>,
    f: &mut dyn FnMut(&[T], &[T]),
) {
    let (mut x, mut y) = ([T::zero(); BLOCK], [T::zero(); BLOCK]);
    if a.ndim() == 0 {
        x[0] = first(a);
        y[0] = b.map_or(x[0], first);
        return f(&x[..1], &y[..1]);
    }
    let last = Axis(a.ndim() - 1);
    let mut b_lanes = b.map(|b| b.lanes(last).into_iter());
    let mut filled = 0;
    for lane in a.lanes(last) {
        let other = b_lanes.as_mut().and_then(Iterator::next);
        let mut start = 0;
        while start < lane.len() {
            let n = (BLOCK - filled).min(lane.len() - start);
            let range = start..start + n;
            copy_lane(lane.slice(s![range.clone()]), &mut x[filled..filled + n]);
            if let Some(other) = &other {
                copy_lane(other.slice(s![range]), &mut y[filled..filled + n]);
            }
            (filled, start) = (filled + n, start + n);
            if filled == BLOCK {
                f(&x, &y);
                filled = 0;
            }
        }
    }
    if filled > 0 {
        f(&x[..filled], &y[..filled]);
    }
}

/// `dst = lane`, one strided run into scratch.
#[inline]
fn copy_lane<T: Copy>(lane: ArrayView1<'_, T>, dst: &mut [T]) {
    match lane.as_slice() {
        Some(src) => dst.copy_from_slice(src),
        None => dst.iter_mut().zip(lane).for_each(|(d, &v)| *d = v),
    }
}

/// Applies `op` to every element of `a`.
pub(crate) fn unary<T: Element + VMath>(op: UnaryOp, a: ArrayViewD<'_, T>) -> ArrayD<T> {
    if a.ndim() == 0 {
        let x = first(&a);
        return arr0(with_unary_fn!(op, T, |f| f(x))).into_dyn();
    }
    unary_nd(op, a)
}

/// [`unary`] for arrays with at least one dimension (kept out of line so the 0-dim path stays
/// small).
#[inline(never)]
fn unary_nd<T: Element + VMath>(op: UnaryOp, a: ArrayViewD<'_, T>) -> ArrayD<T> {
    with_unary_fn!(op, T, |f| map_unary(a, f))
}

/// `x.powf(exponent)` for every element: [`dense::pow_scalar`](super::dense::pow_scalar) on a
/// standard-layout copy (exponents 0, ±0.5, 1, 2, 3, -1 and -2 stay exact; `0^0 = NaN^0 = 1`,
/// as in PyTorch).
pub(crate) fn pow_scalar<T: Element + VMath>(a: ArrayViewD<'_, T>, exponent: f64) -> ArrayD<T> {
    let shape = a.raw_dim();
    let a = super::standard(a);
    from_vec(
        shape,
        super::dense::pow_scalar(super::std_slice(&a), exponent),
    )
}

// ---------------------------------------------------------------------------------------------
// Binary element-wise ops and broadcasting
// ---------------------------------------------------------------------------------------------

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
/// [`BroadcastError`] naming the last dimension where both sizes differ and neither is 1: PyTorch
/// compares trailing dimensions first and reports the first mismatch it meets.
pub(crate) fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>, BroadcastError> {
    let n = a.len().max(b.len());
    let (pad_a, pad_b) = (n - a.len(), n - b.len());
    let mut out = vec![0; n];
    for dim in (0..n).rev() {
        let size_a = if dim < pad_a { 1 } else { a[dim - pad_a] };
        let size_b = if dim < pad_b { 1 } else { b[dim - pad_b] };
        out[dim] = match (size_a, size_b) {
            _ if size_a == size_b || size_b == 1 => size_a,
            (1, _) => size_b,
            _ => {
                return Err(BroadcastError {
                    size_a,
                    size_b,
                    dim,
                });
            }
        };
    }
    Ok(out)
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
pub(crate) fn block_broadcast(small: &[usize], shape: &[usize]) -> Option<(usize, usize, usize)> {
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
        let mut out = buffer_cache::take(big.len());
        for chunk in big.chunks_exact(mid) {
            out.extend(chunk.iter().zip(small).map(|(&x, &s)| f(x, s)));
        }
        out
    } else {
        let mut out = buffer_cache::take(big.len());
        for (chunk, &s) in big.chunks_exact(inner).zip(small.iter().cycle()) {
            out.extend(chunk.iter().map(|&x| f(x, s)));
        }
        out
    }
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
    if same_shape(a.shape(), b.shape())
        && let (Some(x), Some(y)) = (a.as_slice(), b.as_slice())
    {
        let data = x.iter().zip(y).map(|(&x, &y)| f(x, y)).collect();
        return Ok(from_vec(a.raw_dim(), data));
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
        } else if same_shape(b.shape(), &shape)
            && let Some(layout) = block_broadcast(a.shape(), &shape)
        {
            let data = block_map(y, x, layout, |q, p| f(p, q));
            return Ok(from_vec(IxDyn(&shape), data));
        }
    }
    let (a, b) = (expand(&a, &shape), expand(&b, &shape));
    let mut out = buffer_cache::take(a.len());
    blocks(&a, Some(&b), &mut |x, y| {
        out.extend(x.iter().zip(y).map(|(&x, &y)| f(x, y)));
    });
    Ok(from_vec(IxDyn(&shape), out))
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
    // Strided: the result gathered block by block, then written back.
    let b = expand(&b, a.shape());
    let mut out = buffer_cache::take(a.len());
    blocks(&a.view(), Some(&b), &mut |x, y| {
        out.extend(x.iter().zip(y).map(|(&x, &y)| f(x, y)));
    });
    let dim = a.raw_dim();
    a.assign(&from_vec(dim, out));
}

/// Sets every element of `a` to `v`.
pub(crate) fn fill<T: Element>(mut a: ArrayViewMutD<'_, T>, v: T) {
    a.fill(v);
}

#[cfg(test)]
mod tests;
