//! Matrix multiplication with PyTorch `matmul` semantics, on top of the `gemm` crate.
//!
//! Operands are passed to `gemm` with their own row and column strides, so transposed views (the
//! backward computes `a.t() @ g` and `g @ b.t()`) are never copied first. Batch dimensions
//! broadcast; a batched left operand times a plain matrix is folded into one large product.

use std::mem::MaybeUninit;

use gemm::Parallelism;
use ndarray::{ArrayD, ArrayView2, ArrayViewD, Axis, Ix2, IxDyn, s};

use super::parallel::{SendPtr, run_chunks};
use super::{BroadcastError, broadcast_shapes};
use crate::Element;

/// Products with at most this many multiply-adds (`m * n * k`) use a plain loop: below it the
/// fixed cost of a `gemm` call (dispatch, blocking set-up) dominates.
const SMALL_GEMM: usize = 4 * 4 * 4;

/// Products with at least this many multiply-adds are cut into blocks for the intra-op threads
/// ([`gemm_split`]); smaller ones stay on the calling thread.
const PARALLEL_GEMM: usize = 64 * 64 * 64;

/// The most threads [`gemm_split`] cuts a product for (measured on 2 cores; see there).
const SPLIT_MAX_THREADS: usize = 4;

/// PyTorch `matmul`: 2-D @ 2-D, batched with broadcast leading dims, and 1-D operands (a vector
/// on the left gets a leading 1 and one on the right a trailing 1, removed from the result;
/// 1-D @ 1-D is the dot product as a 0-dim array).
///
/// # Errors
///
/// [`BroadcastError`] if the batch dims do not broadcast (`dim` indexes the batch shape).
///
/// # Panics
///
/// If an operand is 0-dim or the inner dimensions differ (the caller checks both).
pub(crate) fn matmul<T: Element>(
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
) -> Result<ArrayD<T>, BroadcastError> {
    assert!(
        a.ndim() >= 1 && b.ndim() >= 1,
        "matmul: both operands need at least one dimension"
    );
    let (a_vec, b_vec) = (a.ndim() == 1, b.ndim() == 1);
    let a = if a_vec { a.insert_axis(Axis(0)) } else { a };
    let b = if b_vec { b.insert_axis(Axis(1)) } else { b };
    let (ra, rb) = (a.ndim() - 2, b.ndim() - 2);
    let (m, k) = (a.shape()[ra], a.shape()[ra + 1]);
    let (kb, n) = (b.shape()[rb], b.shape()[rb + 1]);
    assert_eq!(k, kb, "matmul: inner dimensions differ ({k} vs {kb})");
    let batch = broadcast_shapes(&a.shape()[..ra], &b.shape()[..rb])?;
    let count: usize = batch.iter().product();
    let len = count * m * n;
    // With `k > 0` every element is written by `gemm_into`, so the buffer starts uninitialised
    // (no memset); an empty inner dimension gives zeros.
    let mut out = if k == 0 {
        super::buffer_cache::zeroed(len)
    } else {
        super::buffer_cache::take(len)
    };
    if len > 0 && k > 0 {
        let spare = &mut out.spare_capacity_mut()[..len];
        let b_single = b.shape()[..rb].iter().all(|&d| d == 1);
        if count > 1 && b_single && a.shape()[..ra] == batch[..] && a.is_standard_layout() {
            // [batch.., m, k] @ [k, n] is one [count * m, k] @ [k, n] product.
            let a2 = a
                .view()
                .into_shape_with_order((count * m, k))
                .expect("invariant: a standard-layout array reshapes without copying");
            gemm_into(spare, a2, matrix_at(&b, &[]));
        } else {
            let mut idx = vec![0; batch.len()];
            for dst in spare.chunks_exact_mut(m * n) {
                gemm_into(dst, matrix_at(&a, &idx), matrix_at(&b, &idx));
                // Advance the row-major batch index (odometer).
                for (i, &size) in idx.iter_mut().zip(&batch).rev() {
                    *i += 1;
                    if *i < size {
                        break;
                    }
                    *i = 0;
                }
            }
        }
        // SAFETY: the capacity is at least `len` (`take`), and every element of `0..len` was
        // written: either one `gemm_into` over all of `spare`, or one per `m * n` block of it,
        // the blocks tiling it exactly (`len = count * m * n`); `gemm_into` writes its whole
        // destination.
        unsafe { out.set_len(len) };
    }
    let mut shape = batch;
    if !a_vec {
        shape.push(m);
    }
    if !b_vec {
        shape.push(n);
    }
    Ok(ArrayD::from_shape_vec(IxDyn(&shape), out)
        .expect("invariant: the buffer holds batch * m * n elements"))
}

/// The matrix of `v` (batch dims first) at broadcast batch index `idx`; size-1 batch dims are
/// broadcast, and missing leading dims are skipped.
fn matrix_at<'a, T>(v: &ArrayViewD<'a, T>, idx: &[usize]) -> ArrayView2<'a, T> {
    let lead = v.ndim() - 2;
    let skip = idx.len().saturating_sub(lead);
    let mut mat = v.clone();
    for d in 0..lead {
        let i = if v.shape()[d] == 1 { 0 } else { idx[skip + d] };
        mat.index_axis_inplace(Axis(0), i);
    }
    mat.into_dimensionality::<Ix2>()
        .expect("invariant: only the two matrix axes remain")
}

/// `dst = lhs @ rhs` with `dst` row-major (`m * n` elements, possibly uninitialised: every one
/// is written, none read); `m, n, k > 0`.
fn gemm_into<T: Element>(
    dst: &mut [MaybeUninit<T>],
    lhs: ArrayView2<'_, T>,
    rhs: ArrayView2<'_, T>,
) {
    let (m, k) = lhs.dim();
    let n = rhs.ncols();
    assert!(
        dst.len() == m * n && rhs.nrows() == k,
        "invariant: gemm_into operand shapes agree"
    );
    if m * n * k <= SMALL_GEMM {
        for (i, row) in dst.chunks_exact_mut(n).enumerate() {
            for (j, d) in row.iter_mut().enumerate() {
                d.write(lhs.row(i).dot(&rhs.column(j)));
            }
        }
        return;
    }
    let threads = rayon::current_num_threads();
    let dst_ptr = dst.as_mut_ptr().cast::<T>();
    if m * n * k < PARALLEL_GEMM || threads == 1 {
        // SAFETY: `dst` holds the `m * n` elements of an `m x n` row-major matrix (asserted
        // above), exclusively borrowed.
        unsafe { gemm_raw(dst_ptr, n, lhs, rhs, Parallelism::None) };
    } else if threads <= SPLIT_MAX_THREADS {
        gemm_split(dst, lhs, rhs, threads);
    } else {
        // SAFETY: as above.
        unsafe { gemm_raw(dst_ptr, n, lhs, rhs, Parallelism::Rayon(threads)) };
    }
}

/// `dst = lhs @ rhs` on `threads` threads: the output is cut into at most `threads` blocks of
/// whole columns (or whole rows, when it has more rows than columns: the operand every block
/// reads in full, and packs again, is then the smaller one), run through
/// [`run_chunks`](super::parallel::run_chunks), so the calling thread computes a block too and
/// never waits for a pool thread to wake. `gemm`'s own rayon mode woke the pool and put the caller
/// to sleep for each of its inner blocks: on 2 threads the large MLP of the CPU-kernels issue ran
/// 1.68 times faster than on one, MKL 1.89 times; cut this way, 1.90 times (Intel Xeon, 2 cores).
///
/// Each output element is still one `gemm` dot product over all of `k`, whose blocking depends on
/// `k` alone, so the bits do not depend on the cut (or on the thread count): checked by
/// `matmul_bits_do_not_depend_on_the_thread_count`.
///
/// Every block packs the operand it reads in full once more, a cost that grows with the thread
/// count; above [`SPLIT_MAX_THREADS`] `gemm`'s own threading, which packs it once for all
/// threads, is used instead.
fn gemm_split<T: Element>(
    dst: &mut [MaybeUninit<T>],
    lhs: ArrayView2<'_, T>,
    rhs: ArrayView2<'_, T>,
    threads: usize,
) {
    let (m, n) = (lhs.nrows(), rhs.ncols());
    let by_cols = n >= m;
    // Block edges on whole tiles of gemm's kernels: 16-column multiples, or 64-row ones (its f32
    // row tile under AVX-512).
    let (len, unit) = if by_cols { (n, 16) } else { (m, 64) };
    let per = len.div_ceil(threads).next_multiple_of(unit);
    let blocks = len.div_ceil(per);
    let out = SendPtr(dst.as_mut_ptr().cast::<T>());
    run_chunks(blocks, &|i| {
        let (start, end) = (i * per, ((i + 1) * per).min(len));
        // SAFETY: block `i` writes only the elements of its columns `start..end` (or rows) of the
        // `m x n` row-major `dst`, exclusively borrowed for this call, and `run_chunks` runs
        // each block once and returns after all of them: no two writers share an element.
        unsafe {
            if by_cols {
                let rhs = rhs.slice(s![.., start..end]);
                gemm_raw(out.get().add(start), n, lhs, rhs, Parallelism::None);
            } else {
                let lhs = lhs.slice(s![start..end, ..]);
                gemm_raw(out.get().add(start * n), n, lhs, rhs, Parallelism::None);
            }
        }
    });
}

/// `dst = lhs @ rhs` with `gemm`'s `parallelism`, `dst` the row-major `m x n` matrix at `dst`
/// with row stride `dst_rs` (column stride 1); `m, n, k > 0`.
///
/// # Safety
///
/// `dst` must be valid for writes at `dst + i * dst_rs + j` for `i < m`, `j < n`, and nothing else
/// may access those elements during the call.
unsafe fn gemm_raw<T: Element>(
    dst: *mut T,
    dst_rs: usize,
    lhs: ArrayView2<'_, T>,
    rhs: ArrayView2<'_, T>,
    parallelism: Parallelism,
) {
    let (m, k) = lhs.dim();
    let n = rhs.ncols();
    let (&[lhs_rs, lhs_cs], &[rhs_rs, rhs_cs]) = (lhs.strides(), rhs.strides()) else {
        unreachable!("invariant: 2-D views have two strides")
    };
    // SAFETY: `gemm` reads lhs[i * lhs_rs + p * lhs_cs] for i < m, p < k and
    // rhs[p * rhs_rs + j * rhs_cs] for p < k, j < n: exactly the elements of the views `lhs`
    // (m x k) and `rhs` (k x n), whose pointers and strides come from ndarray, which guarantees
    // they address initialised elements that stay borrowed (read-only) for this call. It writes
    // dst[i * dst_rs + j] for i < m, j < n, which the caller promises are writable and ours
    // alone, so they cannot alias the shared views. With `read_dst == false` the old contents
    // are never read (they may be uninitialised), so `alpha` is ignored, and `beta == 1` gives
    // dst = lhs @ rhs. `T` is f32 or f64 (any other type makes gemm panic, not misbehave, as it
    // dispatches on `TypeId`).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs as isize,
            false,
            lhs.as_ptr(),
            lhs_cs,
            lhs_rs,
            rhs.as_ptr(),
            rhs_cs,
            rhs_rs,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            parallelism,
        );
    }
}
