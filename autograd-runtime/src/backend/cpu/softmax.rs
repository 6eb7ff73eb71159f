//! Fused softmax kernels on contiguous buffers: the masked softmax of attention over the last
//! dim (the mask added, or the causal mask applied, in the same pass as the softmax) and the
//! backward of softmax and log-softmax over any dim, one pass over each row.
//!
//! Rows (or `[len, inner]` blocks when the dim is not the last) are independent and handed out
//! whole to the intra-op threads in fixed chunks of at least a grain, so no result depends on the
//! number of threads. The sums are the pairwise sums of the reductions (`reduce::pairwise_sum`,
//! `reduce::sum_rows_into`), so the backward gives the bits of the composition it replaces
//! (`mul`, `sum_dims`, `sub`, `mul`).

use super::dense::simd;
use super::parallel::{GRAIN, for_chunks_of_mut};
use super::reduce::{pairwise_sum, sum_rows_into};
use super::vmath::{self, MathFn, VMath};
use super::{buffer_cache, split_dims};
use crate::Element;

/// The mask of [`softmax_masked`], on host slices (`RowMask` resolved to elements).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mask<'a, T> {
    /// No mask.
    None,
    /// Row `i` of each trailing `[rows_per_matrix, len]` matrix keeps entries `0..=i`.
    Causal {
        /// `L`, the rows of one matrix (1 for a 1-D input).
        rows_per_matrix: usize,
    },
    /// Added to the scores: `data` read at `offset + Σ index·strides` (the mask's layout
    /// expanded to the scores' shape, so `strides` has one entry per dim).
    Add {
        /// The mask's buffer.
        data: &'a [T],
        /// Its layout's offset.
        offset: usize,
        /// Its strides, expanded to the scores' shape (0 where it broadcasts).
        strides: &'a [usize],
        /// The scores' shape.
        shape: &'a [usize],
    },
}

impl<T: Copy> Mask<'_, T> {
    /// How many leading entries of row `r` are kept (the causal mask), or all `len`.
    #[inline(always)]
    fn kept(&self, r: usize, len: usize) -> usize {
        match *self {
            Mask::Causal { rows_per_matrix } => (r % rows_per_matrix.max(1) + 1).min(len),
            _ => len,
        }
    }

    /// Where row `r`'s mask starts in `data`, and the stride along the row (for `Add`).
    #[inline]
    fn row_start(offset: usize, strides: &[usize], shape: &[usize], mut r: usize) -> usize {
        let mut at = offset;
        let lead = shape.len().saturating_sub(1);
        for d in (0..lead).rev() {
            let size = shape[d].max(1);
            at += (r % size) * strides[d];
            r /= size;
        }
        at
    }
}

/// Softmax (or log-softmax) over the last dim of `x + mask`, `x` contiguous of `shape`; with
/// `safe`, a row whose entries are all `-inf` gives zeros (PyTorch's `_safe_softmax`).
pub(crate) fn softmax_masked<T: Element + VMath>(
    x: &[T],
    shape: &[usize],
    mask: Mask<'_, T>,
    log: bool,
    safe: bool,
) -> Vec<T> {
    let len = shape.last().copied().unwrap_or(1);
    let mut out: Vec<T> = buffer_cache::zeroed(x.len());
    if x.is_empty() || len == 0 {
        return out;
    }
    let rows_per_chunk = GRAIN.div_ceil(len);
    for_chunks_of_mut(&mut out, rows_per_chunk * len, &|start, o| {
        let r0 = start / len;
        let src = &x[start..start + o.len()];
        // A scratch row: the exponentials of a log-softmax row, or a strided mask row.
        let mut scratch: Vec<T> = Vec::new();
        simd(|| {
            for (i, (o, xr)) in o
                .chunks_exact_mut(len)
                .zip(src.chunks_exact(len))
                .enumerate()
            {
                masked_row(xr, o, &mask, r0 + i, log, safe, &mut scratch);
            }
        });
    });
    out
}

/// One row of [`softmax_masked`]: row `r` of the scores.
#[inline(always)]
fn masked_row<T: Element + VMath>(
    x: &[T],
    out: &mut [T],
    mask: &Mask<'_, T>,
    r: usize,
    log: bool,
    safe: bool,
    scratch: &mut Vec<T>,
) {
    let len = x.len();
    let keep = mask.kept(r, len);
    let (z, rest) = out.split_at_mut(keep);
    match *mask {
        Mask::Add {
            data,
            offset,
            strides,
            shape,
        } => {
            let at = Mask::<T>::row_start(offset, strides, shape, r);
            let step = strides.last().copied().unwrap_or(0);
            if step == 1 {
                let m = &data[at..at + len];
                z.iter_mut()
                    .zip(x)
                    .zip(m)
                    .for_each(|((z, &x), &m)| *z = x + m);
            } else {
                z.iter_mut()
                    .zip(x)
                    .enumerate()
                    .for_each(|(j, (z, &x))| *z = x + data[at + j * step]);
            }
        }
        _ => z.copy_from_slice(&x[..keep]),
    }
    let neg_inf = T::neg_infinity();
    let m = z.iter().fold(neg_inf, |m, &v| if v > m { v } else { m });
    if safe && m == neg_inf {
        // Every key masked out: zeros, which also pass no gradient.
        z.fill(T::zero());
        rest.fill(T::zero());
        return;
    }
    z.iter_mut().for_each(|v| *v -= m);
    if log {
        scratch.clear();
        scratch.extend_from_slice(z);
        vmath::map_inplace(MathFn::Exp, scratch);
        let l = pairwise_sum(scratch).ln();
        z.iter_mut().for_each(|v| *v -= l);
        rest.fill(neg_inf);
    } else {
        vmath::map_inplace(MathFn::Exp, z);
        let total = pairwise_sum(z);
        z.iter_mut().for_each(|v| *v /= total);
        rest.fill(T::zero());
    }
}

/// The gradient of softmax (`y · (g − Σ_dim g·y)`) or log-softmax (`g − exp(y) · Σ_dim g`)
/// over `dim`, `g` and `y` contiguous of `shape`.
pub(crate) fn softmax_backward<T: Element + VMath>(
    g: &[T],
    y: &[T],
    shape: &[usize],
    dim: usize,
    log: bool,
) -> Vec<T> {
    let (_, len, inner) = split_dims(shape, dim);
    let mut out: Vec<T> = buffer_cache::zeroed(g.len());
    let block = len * inner;
    if g.is_empty() || block == 0 {
        return out;
    }
    // Whole blocks per chunk, at least a grain: each is computed on its own, so the cut changes
    // no bit.
    for_chunks_of_mut(&mut out, GRAIN.div_ceil(block) * block, &|start, o| {
        let (gs, ys) = (&g[start..start + o.len()], &y[start..start + o.len()]);
        let mut sums: Vec<T> = Vec::new();
        simd(|| {
            for ((o, g), y) in o
                .chunks_exact_mut(block)
                .zip(gs.chunks_exact(block))
                .zip(ys.chunks_exact(block))
            {
                if inner == 1 {
                    backward_row(g, y, o, log);
                } else {
                    sums.clear();
                    sums.resize(inner, T::zero());
                    backward_block(g, y, o, inner, log, &mut sums);
                }
            }
        });
    });
    out
}

/// One row of [`softmax_backward`] (the dim is the last one).
#[inline(always)]
fn backward_row<T: Element + VMath>(g: &[T], y: &[T], out: &mut [T], log: bool) {
    if log {
        let total = pairwise_sum(g);
        out.copy_from_slice(y);
        vmath::map_inplace(MathFn::Exp, out);
        out.iter_mut()
            .zip(g)
            .for_each(|(o, &g)| *o = g - *o * total);
    } else {
        out.iter_mut()
            .zip(g)
            .zip(y)
            .for_each(|((o, &g), &y)| *o = g * y);
        let dot = pairwise_sum(out);
        out.iter_mut()
            .zip(g)
            .zip(y)
            .for_each(|((o, &g), &y)| *o = y * (g - dot));
    }
}

/// One `[len, inner]` block of [`softmax_backward`] (the dim is not the last one); `sums` holds
/// `inner` zeros.
#[inline(always)]
fn backward_block<T: Element + VMath>(
    g: &[T],
    y: &[T],
    out: &mut [T],
    inner: usize,
    log: bool,
    sums: &mut [T],
) {
    if log {
        sum_rows_into(g, sums);
        out.copy_from_slice(y);
        vmath::map_inplace(MathFn::Exp, out);
        for (o_row, g_row) in out.chunks_exact_mut(inner).zip(g.chunks_exact(inner)) {
            for ((o, &g), &t) in o_row.iter_mut().zip(g_row).zip(&*sums) {
                *o = g - *o * t;
            }
        }
    } else {
        out.iter_mut()
            .zip(g)
            .zip(y)
            .for_each(|((o, &g), &y)| *o = g * y);
        sum_rows_into(out, sums);
        let rows = out
            .chunks_exact_mut(inner)
            .zip(g.chunks_exact(inner))
            .zip(y.chunks_exact(inner));
        for ((o_row, g_row), y_row) in rows {
            for (((o, &g), &y), &d) in o_row.iter_mut().zip(g_row).zip(y_row).zip(&*sums) {
                *o = y * (g - d);
            }
        }
    }
}
