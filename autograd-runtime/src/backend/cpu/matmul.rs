//! Matrix multiplication with PyTorch `matmul` semantics, on top of the `gemm` family of crates
//! (`gemm-f32` and `gemm-f64` directly: the `gemm` facade would also compile the complex kernels,
//! about a tenth of a first build's CPU time).
//!
//! Operands are passed to `gemm` with their own row and column strides, so transposed views (the
//! backward computes `a.t() @ g` and `g @ b.t()`) are never copied first. Batch dimensions
//! broadcast; a batched left operand times a plain matrix is folded into one large product.

use std::mem::MaybeUninit;

use std::any::TypeId;

use gemm_common::Parallelism;
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

/// Block edges of [`gemm_split`] fall on multiples of this many output columns (whole SIMD
/// vectors of `gemm`'s kernels, which run along the output's columns: 16 f32 lanes on AVX-512)...
const COL_UNIT: usize = 16;

/// ...and of this many output rows. The kernels take a few rows at a time (6 on AVX-512), so a
/// fine cut costs them little and balances the blocks: `x.t() @ g` of 784 x 64 x 512 on 2 threads
/// took 0.157 ms in rows of 392 + 392, 0.176 in 64-row units (448 + 336; 2-core Xeon, 10th
/// percentiles of 125 runs).
const ROW_UNIT: usize = 8;

/// What one operand element read (and packed) by a block costs it, in multiply-adds, in
/// [`grid`]'s estimate: an order of magnitude (copying an element takes roughly as long as 16 of
/// `gemm`'s f32 multiply-adds at AVX-512 peak). It only decides between cuts with different
/// block sizes; among blocks of one size the least reading wins whatever its value.
const PACK_COST: usize = 16;

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
    if m * n * k < PARALLEL_GEMM || threads == 1 {
        // SAFETY: `dst` holds the `m * n` elements of an `m x n` row-major matrix (asserted
        // above), exclusively borrowed.
        unsafe { gemm_raw(dst.as_mut_ptr().cast::<T>(), n, lhs, rhs) };
    } else {
        gemm_split(dst, lhs, rhs, threads);
    }
}

/// `dst = lhs @ rhs` on `threads` threads: the output is cut into a grid of blocks ([`grid`]),
/// one `gemm` call each, run through [`run_chunks`](super::parallel::run_chunks), so the calling
/// thread computes a block too and never waits for a pool thread to wake.
///
/// This is used at every thread count, in place of `gemm`'s own rayon mode, which wakes the pool
/// and puts the caller to sleep for each of its inner blocks: on 2 threads the large MLP of the
/// CPU-kernels issue ran 1.68 times faster than on one, MKL 1.89 times, and cut this way 1.90
/// times (Intel Xeon, 2 cores). On the 16-core Xeon of the GPU issue, one block of whole columns
/// per thread beat `gemm`'s threading at 8 and 16 threads too (large MLP 5.97 ms against 10.13 at
/// 16 threads; it had been used only up to 4). A block reads, and `gemm` may pack, its rows of
/// `lhs` and its columns of `rhs`, so blocks of whole columns read all of `lhs` once per thread;
/// a grid of `rb x cb` blocks reads `lhs` `cb` times and `rhs` `rb` times instead.
///
/// Each output element is still one `gemm` dot product over all of `k`, and [`grid`] keeps every
/// block on the code path, and so the summation order, that the whole product takes on one thread
/// ([`same_sums`]): the bits do not depend on the cut (or on the thread count), as
/// `matmul_bits_do_not_depend_on_the_thread_count` checks.
fn gemm_split<T: Element>(
    dst: &mut [MaybeUninit<T>],
    lhs: ArrayView2<'_, T>,
    rhs: ArrayView2<'_, T>,
    threads: usize,
) {
    let (m, k, n) = (lhs.nrows(), lhs.ncols(), rhs.ncols());
    let (rb, cb) = grid(m, n, k, threads);
    let out = SendPtr(dst.as_mut_ptr().cast::<T>());
    run_chunks(rb * cb, &|i| {
        let (r, c) = (i / cb, i % cb);
        let (r0, r1) = (cut(m, ROW_UNIT, rb, r), cut(m, ROW_UNIT, rb, r + 1));
        let (c0, c1) = (cut(n, COL_UNIT, cb, c), cut(n, COL_UNIT, cb, c + 1));
        let lhs = lhs.slice(s![r0..r1, ..]);
        let rhs = rhs.slice(s![.., c0..c1]);
        // SAFETY: block `(r, c)` writes only the elements of rows `r0..r1` and columns `c0..c1`
        // of the `m x n` row-major `dst` (row stride `n`), exclusively borrowed for this call;
        // the blocks tile the output without overlap (`cut` is increasing), and `run_chunks`
        // runs each block once and returns after all of them: no two writers share an element.
        unsafe { gemm_raw(out.get().add(r0 * n + c0), n, lhs, rhs) };
    });
}

/// The start of part `i` (`i <= parts`; part `parts` starts at `len`) when `len` is cut into
/// `parts` runs of whole `unit`s (all but the last unit full), as even as possible: the first
/// runs get one unit more. Needs `1 <= parts <= len.div_ceil(unit)`, so no run is empty.
fn cut(len: usize, unit: usize, parts: usize, i: usize) -> usize {
    let units = len.div_ceil(unit);
    let (base, extra) = (units / parts, units % parts);
    ((i * base + i.min(extra)) * unit).min(len)
}

/// The grid (`rb` rows by `cb` columns of blocks, `rb * cb <= threads`) [`gemm_split`] cuts an
/// `m x n` output with inner dimension `k` into: the one with the least estimated time for its
/// largest block, `rows * cols` multiply-adds per step of `k` plus [`PACK_COST`] for each row of
/// `lhs` and column of `rhs` it reads. Among grids of equally large blocks that is the one
/// reading least in all (`cb * |lhs| + rb * |rhs|`); e.g. `256 x 1024` on 16 threads is `2 x 8`
/// blocks of `128 x 128`, where whole columns (`1 x 16` of `256 x 64`) read 25% more. Grids whose
/// blocks would leave the whole product's code path in `gemm` ([`same_sums`]) are passed over;
/// `1 x 1`, the whole product, always qualifies.
fn grid(m: usize, n: usize, k: usize, threads: usize) -> (usize, usize) {
    let cost = |rows: usize, cols: usize| rows * cols + PACK_COST * (rows + cols);
    let (mut best, mut best_cost) = ((1, 1), cost(m, n));
    for rb in 1..=threads.min(m.div_ceil(ROW_UNIT)) {
        // The largest block only shrinks with more columns of blocks: take the most that keep
        // every block on the whole product's path.
        let most = (threads / rb).min(n.div_ceil(COL_UNIT));
        for cb in (1..=most).rev() {
            // Part 0 is the largest and the last part the smallest of each cut.
            let rows = [cut(m, ROW_UNIT, rb, 1), m - cut(m, ROW_UNIT, rb, rb - 1)];
            let cols = [cut(n, COL_UNIT, cb, 1), n - cut(n, COL_UNIT, cb, cb - 1)];
            let fits = rows
                .iter()
                .all(|&r| cols.iter().all(|&c| same_sums(r, c, m, n, k)));
            if fits {
                if cost(rows[0], cols[0]) < best_cost {
                    (best, best_cost) = ((rb, cb), cost(rows[0], cols[0]));
                }
                break;
            }
        }
    }
    best
}

/// Whether `gemm` sums every element of a `rows x cols` block of an `m x n` product (inner
/// dimension `k`) in the same order as for the whole product: it chooses its code path, and so
/// the summation order, by the shape (gemm 0.19, `gemm_basic_generic`). Conservatively (the layouts
/// of the operands also take part), the block must agree with the whole on: at most 16 x 16
/// elements (horizontal kernels, one reduction across SIMD lanes), a single row or column (matrix
/// times vector kernels), and, when `k > 512`, both sides at most 64 (the depth is then summed in
/// steps of 512, where larger products take near-equal steps sized from the caches: for
/// `k = 784` a 64 x 32 block adds 512 + 272, the whole 64 x 512 product 392 + 392). Otherwise
/// every element is one multiply-add chain per depth step, in the same steps, whichever tile
/// (full or edge) it falls in.
fn same_sums(rows: usize, cols: usize, m: usize, n: usize, k: usize) -> bool {
    let path = |r: usize, c: usize| {
        (
            r * c <= 16 * 16,
            r <= 1 || c <= 1,
            k > 512 && r.max(c) <= 64,
        )
    };
    path(rows, cols) == path(m, n)
}

/// `dst = lhs @ rhs` by one `gemm` call on the calling thread, `dst` the row-major `m x n` matrix
/// at `dst` with row stride `dst_rs` (column stride 1); `m, n, k > 0`.
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
) {
    // SAFETY: the caller's promise, for row stride `dst_rs` and column stride 1.
    unsafe { gemm_at(dst, [dst_rs, 1], false, lhs, rhs) }
}

/// `dst = lhs @ rhs`, or `dst += lhs @ rhs` with `accumulate`, by one `gemm` call on the calling
/// thread: `dst` is the `m x n` matrix at `dst` with strides `[row, column]` (in elements, not
/// both 0 unless `m` or `n` is 1); `m, n, k > 0`. The summation order depends only on the
/// shapes, strides and `accumulate`, never on the thread.
///
/// # Safety
///
/// `dst` must be valid for writes (and, with `accumulate`, reads of initialised values) at
/// `dst + i * strides[0] + j * strides[1]` for `i < m`, `j < n`, those elements distinct, and
/// nothing else may access them during the call.
pub(super) unsafe fn gemm_at<T: Element>(
    dst: *mut T,
    dst_strides: [usize; 2],
    accumulate: bool,
    lhs: ArrayView2<'_, T>,
    rhs: ArrayView2<'_, T>,
) {
    let (m, k) = lhs.dim();
    let n = rhs.ncols();
    let (&[lhs_rs, lhs_cs], &[rhs_rs, rhs_cs]) = (lhs.strides(), rhs.strides()) else {
        unreachable!("invariant: 2-D views have two strides")
    };
    let [dst_rs, dst_cs] = dst_strides;
    let (m, n, dst_cs, dst_rs) = (m as isize, n as isize, dst_cs as isize, dst_rs as isize);
    // The kernels prefer a column-major destination: with unit column stride, compute the
    // transposed product `dstᵀ = rhsᵀ lhsᵀ` instead (what the `gemm` facade does before it
    // dispatches), by swapping the operands and their strides.
    let transpose = dst_cs < dst_rs;
    let (m, n, dst_cs, dst_rs) = if transpose {
        (n, m, dst_rs, dst_cs)
    } else {
        (m, n, dst_cs, dst_rs)
    };
    let (lhs_p, lhs_cs, lhs_rs, rhs_p, rhs_cs, rhs_rs) = if transpose {
        (rhs.as_ptr(), rhs_rs, rhs_cs, lhs.as_ptr(), lhs_rs, lhs_cs)
    } else {
        (lhs.as_ptr(), lhs_cs, lhs_rs, rhs.as_ptr(), rhs_cs, rhs_rs)
    };
    let (m, n) = (m as usize, n as usize);
    // One call per element type: `$kernel` is that type's crate module, `$t` the type.
    macro_rules! call {
        ($kernel:path, $t:ty) => {{
            use $kernel as kernel;
            kernel::get_gemm_fn()(
                m,
                n,
                k,
                dst.cast::<$t>(),
                dst_cs,
                dst_rs,
                accumulate,
                lhs_p.cast::<$t>(),
                lhs_cs,
                lhs_rs,
                rhs_p.cast::<$t>(),
                rhs_cs,
                rhs_rs,
                if accumulate { 1.0 } else { 0.0 },
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            )
        }};
    }
    // SAFETY: the kernel reads lhs_p[i * lhs_rs + p * lhs_cs] for i < m, p < k and
    // rhs_p[p * rhs_rs + j * rhs_cs] for p < k, j < n, and writes dst[i * dst_rs + j * dst_cs]
    // for i < m, j < n, in the (possibly transposed) roles chosen above, which name exactly the
    // elements of the views `lhs` (m x k) and `rhs` (k x n) and of the destination rows the
    // caller promises: ndarray guarantees the views address initialised elements that stay
    // borrowed (read-only) for this call, and the destination is writable and ours alone, so
    // it cannot alias them. With `read_dst == false` the old contents are never read (they may
    // be uninitialised) and `alpha` is ignored; `beta == 1` gives dst = lhs @ rhs. With it
    // (`accumulate`, the caller promising initialised values), `alpha == 1` gives
    // dst = dst + lhs @ rhs. The pointer
    // casts are identities: each branch runs only when `T` is that type.
    unsafe {
        if TypeId::of::<T>() == TypeId::of::<f32>() {
            call!(gemm_f32::gemm::f32, f32);
        } else if TypeId::of::<T>() == TypeId::of::<f64>() {
            call!(gemm_f64::gemm::f64, f64);
        } else {
            unreachable!("invariant: the GEMM runs on f32 or f64 elements")
        }
    }
}
