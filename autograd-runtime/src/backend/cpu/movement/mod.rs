//! Shape and data movement: contiguous copies, `index_select` and its scatter-add, `cat`, and the
//! scatter behind `max_dim`'s gradient.

use ndarray::parallel::prelude::*;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, Slice, Zip, arr0};

use super::parallel::{GRAIN, is_parallel};

#[cfg(doc)]
use super::reduce::max_dim;
use super::{buffer_cache, first, from_vec, split_dims, standard, std_slice, zeros_array};
use crate::Element;

/// A standard-layout copy of `a`; wide copies of strided views (transposes, expands) are split
/// over the intra-op pool.
pub(crate) fn to_contiguous<T: Element>(a: ArrayViewD<'_, T>) -> ArrayD<T> {
    if a.ndim() == 0 {
        return arr0(first(&a)).into_dyn();
    }
    if let Some(s) = a.as_slice() {
        return from_vec(a.raw_dim(), s.to_vec());
    }
    let mut out = zeros_array(a.raw_dim());
    assign(out.view_mut(), a);
    out
}

/// `dst[i] = src[i]` for every position (same shape), in parallel for wide arrays.
pub(crate) fn assign<T: Element>(mut dst: ArrayViewMutD<'_, T>, src: ArrayViewD<'_, T>) {
    if is_parallel(dst.len()) {
        Zip::from(&mut dst)
            .and(&src)
            .into_par_iter()
            .with_min_len(GRAIN)
            .for_each(|(d, &x)| *d = x);
    } else {
        dst.assign(&src);
    }
}

/// Zeros of `shape` with `g` written at `start..` along `dim` (the gradient of `narrow`).
pub(crate) fn narrow_scatter<T: Element>(
    shape: &[usize],
    dim: usize,
    start: usize,
    g: ArrayViewD<'_, T>,
) -> ArrayD<T> {
    let len = g.shape()[dim];
    let mut z = zeros_array(IxDyn(shape));
    assign(
        z.slice_axis_mut(Axis(dim), Slice::from(start..start + len)),
        g,
    );
    z
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
    let mut out = buffer_cache::take(shape.iter().product());
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
    let mut out = buffer_cache::zeroed(outer * len * inner);
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
    let mut out = buffer_cache::take(shape.iter().product());
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
    let mut out = buffer_cache::zeroed(outer * len * inner);
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

#[cfg(test)]
mod tests;
