//! Reductions: pairwise sums (`sum_all`, `sum_axes`, `sum_to`), `max_dim`, softmax and
//! log-softmax, and the whole-array check `has_nan`.

use ndarray::{ArrayD, ArrayView1, ArrayViewD, Axis, CowArray, IxDyn};

use super::parallel::{GRAIN, for_chunks_of_mut, map_chunks};
use super::vmath::{self, MathFn, VMath};
use super::{buffer_cache, from_vec, same_shape, split_dims, standard, std_slice, to_contiguous};
use crate::Element;

/// `shape` with `dim` set to 1 (`keepdim`) or removed. A 0-dim shape stays 0-dim (PyTorch
/// reduces a scalar over its dim 0 to a scalar).
fn reduced_shape(shape: &[usize], dim: usize, keepdim: bool) -> IxDyn {
    let mut out = shape.to_vec();
    if out.is_empty() {
        return IxDyn(&out);
    }
    if keepdim {
        out[dim] = 1;
    } else {
        out.remove(dim);
    }
    IxDyn(&out)
}

/// Slices up to this length are summed directly (with 8 accumulators); longer ones are split.
const PAIRWISE_BLOCK: usize = 256;

/// Rows summed directly before [`sum_rows_into`] splits (pairwise over rows).
const ROW_BLOCK: usize = 32;

/// Pairwise sum: error grows with `log n`, so f32 sums of millions of elements stay accurate.
pub(super) fn pairwise_sum<T: Element>(s: &[T]) -> T {
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
pub(super) fn sum_rows_into<T: Element>(rows: &[T], out: &mut [T]) {
    sum_rows_cols(rows, out.len(), 0, out);
}

/// Adds columns `c0..c0 + out.len()` of the rows of `rows` (each `inner` long) into `out`,
/// pairwise over rows. Each column's sum is computed in the same order whatever `c0` and
/// `out.len()`, so splitting the columns over threads does not change a bit.
fn sum_rows_cols<T: Element>(rows: &[T], inner: usize, c0: usize, out: &mut [T]) {
    let n_rows = rows.len() / inner;
    let width = out.len();
    if n_rows <= ROW_BLOCK {
        for row in rows.chunks_exact(inner) {
            let row = &row[c0..c0 + width];
            out.iter_mut().zip(row).for_each(|(o, &x)| *o += x);
        }
    } else {
        let (l, r) = rows.split_at(n_rows / 2 * inner);
        sum_rows_cols(l, inner, c0, out);
        let mut tmp = vec![T::zero(); width];
        sum_rows_cols(r, inner, c0, &mut tmp);
        out.iter_mut().zip(&tmp).for_each(|(o, &x)| *o += x);
    }
}

/// Column sums of each `[len, inner]` block of `s` into the matching `inner` outputs, the
/// columns split over the pool when the work is wide.
fn sum_columns<T: Element>(s: &[T], len: usize, inner: usize, out: &mut [T]) {
    for (o, block) in out.chunks_exact_mut(inner).zip(s.chunks_exact(len * inner)) {
        // Column blocks of at least one grain of work, a multiple of 16 columns wide (one block,
        // run inline, when the whole is less than a grain).
        let cols = (GRAIN / len.max(1)).next_multiple_of(16).max(16);
        for_chunks_of_mut(o, cols, &|c0, o| sum_rows_cols(block, inner, c0, o));
    }
}

/// Pairwise sum of a slice, cut into fixed chunks of [`GRAIN`] summed on the pool and
/// combined pairwise in chunk order: the same bits whatever the number of threads.
fn chunked_sum<T: Element>(s: &[T]) -> T {
    if s.len() <= GRAIN {
        return pairwise_sum(s);
    }
    pairwise_sum(&map_chunks(s, pairwise_sum))
}

/// Sum of all elements (pairwise, so f32 sums of 1e6 elements stay accurate); 0 when empty.
pub(crate) fn sum_all<T: Element>(a: ArrayViewD<'_, T>) -> T {
    if let Some(s) = a.as_slice_memory_order() {
        return chunked_sum(s);
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
    let mut out = buffer_cache::zeroed(outer * inner);
    if len > 0 && inner > 0 {
        if inner == 1 {
            // Row sums, at least a grain of elements per chunk.
            for_chunks_of_mut(&mut out, GRAIN.div_ceil(len), &|r0, o| {
                let rows = &s[r0 * len..(r0 + o.len()) * len];
                for (o, block) in o.iter_mut().zip(rows.chunks_exact(len)) {
                    *o = pairwise_sum(block);
                }
            });
        } else {
            sum_columns(s, len, inner, &mut out);
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

/// Softmax (or log-softmax) of one row into `out`: `x - max`, `exp` on SIMD lanes, a pairwise
/// sum, then the normalisation.
fn softmax_row<T: Element + VMath>(row: &[T], out: &mut [T], log: bool) {
    let neg_inf = T::neg_infinity();
    let m = row.iter().fold(neg_inf, |m, &x| if x > m { x } else { m });
    out.iter_mut().zip(row).for_each(|(o, &x)| *o = x - m);
    vmath::map_inplace(MathFn::Exp, out);
    let total = pairwise_sum(out);
    if log {
        let l = total.ln();
        out.iter_mut().zip(row).for_each(|(o, &x)| *o = (x - m) - l);
    } else {
        out.iter_mut().for_each(|o| *o /= total);
    }
}

/// Shared body of [`softmax`] and [`log_softmax`]; rows (or blocks) are split over the pool.
fn softmax_impl<T: Element + VMath>(a: ArrayViewD<'_, T>, dim: usize, log: bool) -> ArrayD<T> {
    let (_, len, inner) = split_dims(a.shape(), dim);
    let shape = a.raw_dim();
    let a = standard(a);
    let s = std_slice(&a);
    let mut out: Vec<T> = buffer_cache::zeroed(s.len());
    if s.is_empty() {
        return from_vec(shape, out);
    }
    // Whole `[len, inner]` blocks per chunk (a row when `inner == 1`), at least a grain of
    // elements: each block is normalised on its own, so the cut changes no bit.
    let block = len * inner;
    for_chunks_of_mut(&mut out, GRAIN.div_ceil(block) * block, &|start, o| {
        let src = &s[start..start + o.len()];
        for (o, b) in o.chunks_mut(block).zip(src.chunks(block)) {
            if inner == 1 {
                softmax_row(b, o, log);
            } else {
                softmax_block(b, o, inner, log);
            }
        }
    });
    from_vec(shape, out)
}

/// Softmax over the rows of one `[len, inner]` block (the reduced dim is not the last one).
fn softmax_block<T: Element + VMath>(block: &[T], out: &mut [T], inner: usize, log: bool) {
    let neg_inf = T::neg_infinity();
    let mut m = vec![neg_inf; inner];
    let mut total = vec![T::zero(); inner];
    for row in block.chunks_exact(inner) {
        m.iter_mut()
            .zip(row)
            .for_each(|(m, &x)| *m = if x > *m { x } else { *m });
    }
    for (o_row, row) in out.chunks_exact_mut(inner).zip(block.chunks_exact(inner)) {
        for ((o, &x), &m) in o_row.iter_mut().zip(row).zip(&m) {
            *o = x - m;
        }
    }
    vmath::map_inplace(MathFn::Exp, out);
    sum_rows_into(out, &mut total);
    let rows = out.chunks_exact_mut(inner).zip(block.chunks_exact(inner));
    for (o_row, row) in rows {
        if log {
            for (((o, &x), &m), &t) in o_row.iter_mut().zip(row).zip(&m).zip(&total) {
                *o = (x - m) - t.ln();
            }
        } else {
            o_row.iter_mut().zip(&total).for_each(|(o, &t)| *o /= t);
        }
    }
}

/// Softmax over `dim`, numerically stable (the row maximum is subtracted before `exp`).
pub(crate) fn softmax<T: Element + VMath>(a: ArrayViewD<'_, T>, dim: usize) -> ArrayD<T> {
    softmax_impl(a, dim, false)
}

/// Log-softmax over `dim`, stable: `x - max - ln(sum(exp(x - max)))`.
pub(crate) fn log_softmax<T: Element + VMath>(a: ArrayViewD<'_, T>, dim: usize) -> ArrayD<T> {
    softmax_impl(a, dim, true)
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

#[cfg(test)]
mod tests;
