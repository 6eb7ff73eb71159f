//! 2-D convolution as one op each way on host memory (`ConvolutionBackward0`): the output is
//! cut into (image, block of output rows) pieces, each writing its patch matrix into a reused
//! buffer small enough for the core's L2 cache and meeting the weight in one GEMM per group; the
//! backward sums per-run partial weight and bias gradients in a fixed order, and computes the
//! input's gradient as a convolution of the gradient with the flipped weight when the stride
//! is 1 (col2im of `Wᵀ·g` per block otherwise).

use std::mem::MaybeUninit;
use std::ops::AddAssign;

use ndarray::ShapeBuilder;

use super::super::parallel::{SendPtr, run_chunks};
use super::super::{buffer_cache, matmul};
use super::{add_patch_row, elements, fill_patch_row, out, valid_span};
use crate::backend::{Buffer, Out, Patches};
use crate::layout::{Layout, view};
use crate::{Element, Error, Result};

/// The most patch-matrix elements one block of output rows takes (1 MiB of `f32`): a block's
/// patch matrix is written and read again by the GEMM while it is in the core's L2 cache.
const BLOCK_ELEMS: usize = 1 << 18;

/// At most this many partial weight gradients are summed (one per run of batch entries).
const MAX_PARTIALS: usize = 16;

/// ... and they hold at most this many elements together (beyond it, fewer runs).
const PARTIAL_ELEMS: usize = 1 << 23;

/// A 2-D convolution's operands read as matrices: the geometry, the groups and the sizes the
/// kernels share.
#[derive(Clone, Copy, Debug)]
struct ConvShape {
    p: Patches,
    groups: usize,
    /// Output channels in all, and per group.
    out_channels: usize,
    out_per_group: usize,
    /// Patch-matrix rows per group (`C/G·kh·kw`) and in all.
    k_group: usize,
    k: usize,
    /// Output positions per entry (`OH·OW`).
    l: usize,
    /// Elements of one input entry (`C·H·W`).
    image: usize,
    /// Output rows per block, and blocks per entry.
    block_rows: usize,
    blocks: usize,
}

impl ConvShape {
    fn new(p: &Patches, groups: usize, out_channels: usize) -> ConvShape {
        let [kh, kw] = p.kernel;
        let [oh, ow] = p.output;
        let k = p.channels * kh * kw;
        let most = (BLOCK_ELEMS / (k * ow).max(1)).clamp(1, oh.max(1));
        // Blocks of whole 64-column runs (the GEMM kernels' tile height) that cut the rows
        // evenly when there are such, else the even cut.
        let rows = (1..=most)
            .rev()
            .find(|&r| oh.is_multiple_of(r) && (r * ow).is_multiple_of(64))
            .unwrap_or_else(|| oh.div_ceil(oh.div_ceil(most).max(1)).max(1));
        let blocks = oh.div_ceil(rows).max(1);
        ConvShape {
            p: *p,
            groups,
            out_channels,
            out_per_group: out_channels / groups,
            k_group: k / groups,
            k,
            l: oh * ow,
            image: p.channels * p.input[0] * p.input[1],
            block_rows: rows,
            blocks,
        }
    }

    /// The output rows of block `b`.
    fn rows(&self, b: usize) -> (usize, usize) {
        let oh = self.p.output[0];
        (
            (b * self.block_rows).min(oh),
            ((b + 1) * self.block_rows).min(oh),
        )
    }

    /// The largest block's patch matrix, in elements.
    fn block_len(&self) -> usize {
        self.k * self.block_rows * self.p.output[1]
    }

    /// Writes the patch matrix `[C·kh·kw, (oy1 − oy0)·OW]` of output rows `oy0..oy1` of the
    /// input entry `image` into `dst` (every element written) and returns it.
    fn patches<'a, T: Copy + Default>(
        &self,
        image: &[T],
        (oy0, oy1): (usize, usize),
        dst: &'a mut [MaybeUninit<T>],
    ) -> &'a [T] {
        let p = &self.p;
        let [h, w] = p.input;
        let [kh, kw] = p.kernel;
        let len = (oy1 - oy0) * p.output[1];
        let dst = &mut dst[..self.k * len];
        for (r, row) in dst.chunks_exact_mut(len).enumerate() {
            let (ch, ki, kj) = (r / (kh * kw), r / kw % kh, r % kw);
            let plane = &image[ch * h * w..][..h * w];
            fill_patch_row(plane, p, ki, valid_span(p, 1, kj), oy0, row);
        }
        // SAFETY: `fill_patch_row` wrote every element of each row, and the rows tile `dst`
        // (`dst.len() = k · len`); `MaybeUninit<T>` has `T`'s layout.
        unsafe { std::slice::from_raw_parts(dst.as_ptr().cast::<T>(), dst.len()) }
    }

    /// Adds the patch matrix `cols` (`[C·kh·kw, (oy1 − oy0)·OW]`, output rows `oy0..oy1`) back
    /// into the input entry `image`.
    fn add_patches<T: Copy + AddAssign>(
        &self,
        cols: &[T],
        (oy0, oy1): (usize, usize),
        image: &mut [T],
    ) {
        let p = &self.p;
        let [h, w] = p.input;
        let [kh, kw] = p.kernel;
        let len = (oy1 - oy0) * p.output[1];
        for (r, row) in cols.chunks_exact(len).enumerate() {
            let (ch, ki, kj) = (r / (kh * kw), r / kw % kh, r % kw);
            let plane = &mut image[ch * h * w..][..h * w];
            add_patch_row(row, p, ki, valid_span(p, 1, kj), oy0, plane);
        }
    }
}

/// A row-major `[rows, cols]` matrix view with row stride `rs` of `data`.
fn matrix<T>(data: &[T], rows: usize, cols: usize, rs: usize) -> ndarray::ArrayView2<'_, T> {
    ndarray::ArrayView2::from_shape((rows, cols).strides((rs, 1)), data)
        .expect("invariant: the matrix lies inside its slice")
}

/// The fused 2-D convolution on host buffers (f32 or f64): `x` `[N, C, H, W]`, `w`
/// `[O, C/G, kh, kw]`, optional `bias` `[O]`, read through their layouts; the result is
/// `[N, O, OH, OW]`.
pub(in crate::backend::cpu) fn conv2d_buffer(
    x: (&Buffer, &Layout),
    w: (&Buffer, &Layout),
    bias: Option<(&Buffer, &Layout)>,
    p: &Patches,
    groups: usize,
) -> Result<Out> {
    let o = w.1.shape[0];
    let shape = [p.batch, o, p.output[0], p.output[1]];
    macro_rules! run {
        ($v:ident, $d:expr, $wd:expr) => {{
            let b = match bias {
                Some((Buffer::$v(b), lb)) => Some(view(b, lb).iter().copied().collect::<Vec<_>>()),
                Some(_) => return Err(mixed("conv2d")),
                None => None,
            };
            Ok(out(
                conv2d_forward(
                    elements(&view($d, x.1).as_standard_layout()),
                    elements(&view($wd, w.1).as_standard_layout()),
                    b.as_deref(),
                    &ConvShape::new(p, groups, o),
                ),
                &shape,
            ))
        }};
    }
    match (x.0, w.0) {
        (Buffer::F32(d), Buffer::F32(wd)) => run!(F32, d, wd),
        (Buffer::F64(d), Buffer::F64(wd)) => run!(F64, d, wd),
        _ => Err(mixed("conv2d")),
    }
}

/// The gradients of [`conv2d_buffer`] from the incoming gradient `g` (`[N, O, OH, OW]`):
/// `[d input, d weight, d bias]`, each when `needs` asks for it.
pub(in crate::backend::cpu) fn conv2d_backward_buffer(
    g: (&Buffer, &Layout),
    x: (&Buffer, &Layout),
    w: (&Buffer, &Layout),
    p: &Patches,
    groups: usize,
    needs: [bool; 3],
) -> Result<[Option<Out>; 3]> {
    let ws: Vec<usize> = w.1.shape.to_vec();
    let o = ws[0];
    macro_rules! run {
        ($gd:expr, $d:expr, $wd:expr) => {{
            let [dx, dw, db] = conv2d_backward(
                elements(&view($gd, g.1).as_standard_layout()),
                elements(&view($d, x.1).as_standard_layout()),
                elements(&view($wd, w.1).as_standard_layout()),
                &ConvShape::new(p, groups, o),
                needs,
            );
            Ok([
                dx.map(|v| out(v, &p.image_shape())),
                dw.map(|v| out(v, &ws)),
                db.map(|v| out(v, &[o])),
            ])
        }};
    }
    match (g.0, x.0, w.0) {
        (Buffer::F32(gd), Buffer::F32(d), Buffer::F32(wd)) => run!(gd, d, wd),
        (Buffer::F64(gd), Buffer::F64(d), Buffer::F64(wd)) => run!(gd, d, wd),
        _ => Err(mixed("conv2d_backward")),
    }
}

/// The error of a fused convolution kernel on operands it does not take (the op layer sends
/// it f32 or f64 operands of one dtype only).
fn mixed(op: &str) -> Error {
    Error::InvalidArgument(format!(
        "{op}: the fused kernel takes f32 or f64 operands of one dtype"
    ))
}

/// The forward: for each batch entry and block of output rows (the units of work, on the
/// intra-op threads), the block's patch matrix is written into a scratch buffer and meets each
/// group's weight in one GEMM, whose result goes straight into the output's columns of that
/// block; then the bias. Every output element is one GEMM dot product over the patch, summed in
/// an order fixed by the shapes, so the bits do not depend on the number of threads.
fn conv2d_forward<T: Element>(x: &[T], w: &[T], bias: Option<&[T]>, s: &ConvShape) -> Vec<T> {
    let n = s.p.batch;
    let ow = s.p.output[1];
    let len = n * s.out_channels * s.l;
    let mut y: Vec<T> = buffer_cache::take(len);
    if len == 0 {
        return y;
    }
    if s.k == 0 {
        // An empty patch (no input channels): the GEMM is zero, the result the bias.
        y.resize(len, T::zero());
    }
    let dst = SendPtr(y.as_mut_ptr());
    let work = |i: usize| {
        let (entry, block) = (i / s.blocks, i % s.blocks);
        let (oy0, oy1) = s.rows(block);
        let cols_len = (oy1 - oy0) * ow;
        if cols_len == 0 {
            return;
        }
        let out0 = entry * s.out_channels * s.l + oy0 * ow;
        if s.k > 0 {
            let mut scratch: Vec<T> = buffer_cache::take(s.block_len());
            let cols = s.patches(
                &x[entry * s.image..][..s.image],
                (oy0, oy1),
                &mut scratch.spare_capacity_mut()[..s.block_len()],
            );
            for g in 0..s.groups {
                let lhs = matrix(
                    &w[g * s.out_per_group * s.k_group..],
                    s.out_per_group,
                    s.k_group,
                    s.k_group,
                );
                let rhs = matrix(
                    &cols[g * s.k_group * cols_len..],
                    s.k_group,
                    cols_len,
                    cols_len,
                );
                // SAFETY: this unit writes rows `g·O/G..(g + 1)·O/G` of columns
                // `oy0·OW..oy1·OW` of entry `entry`'s `[O, L]` output (row stride `L`), inside
                // `y`'s `len` elements of capacity; units (entry, block) and groups write
                // disjoint elements, and `run_chunks` returns after all units.
                unsafe {
                    matmul::gemm_at(
                        dst.get().add(out0 + g * s.out_per_group * s.l),
                        [s.l, 1],
                        false,
                        lhs,
                        rhs,
                    );
                }
            }
            buffer_cache::give(scratch);
        }
        if let Some(b) = bias {
            for (c, &bc) in b.iter().enumerate() {
                // SAFETY: the same elements this unit just wrote (or that `resize` initialised),
                // its own.
                let row = unsafe {
                    std::slice::from_raw_parts_mut(dst.get().add(out0 + c * s.l), cols_len)
                };
                for v in row {
                    *v += bc;
                }
            }
        }
    };
    run_chunks(n * s.blocks, &work);
    // SAFETY: the capacity is at least `len` (`take`), and every element was written: the units
    // cover every (entry, block of output rows), each writing all `O` channels of its columns
    // (one GEMM per group, `gemm_at` without `accumulate` writes its whole destination), or
    // `resize` initialised them all when the patch is empty.
    unsafe { y.set_len(len) };
    y
}

/// The backward: `[dx, dw, db]` as `needs` asks. Batch entries are cut into at most
/// [`MAX_PARTIALS`] runs fixed by the shapes (the units of work); a run's entries are taken
/// block by block: the block's patch matrix again (for the weight's gradient, accumulated over
/// the run by the GEMM itself), the patch matrix's gradient `Wᵀ · g` (for the input's,
/// added back into the entry by col2im) and the bias's row sums. The runs' partial weight and
/// bias gradients are added in run order: the bits do not depend on the number of threads.
fn conv2d_backward<T: Element>(
    g: &[T],
    x: &[T],
    w: &[T],
    s: &ConvShape,
    needs: [bool; 3],
) -> [Option<Vec<T>>; 3] {
    let n = s.p.batch;
    let ow = s.p.output[1];
    let (o, kg, opg) = (s.out_channels, s.k_group, s.out_per_group);
    let w_len = o * kg;
    let runs = n
        .min(MAX_PARTIALS)
        .min((PARTIAL_ELEMS / (w_len + o).max(1)).max(1))
        .max(1);
    let run_of = |r: usize| (r * n / runs, (r + 1) * n / runs);
    let x_len = n * s.image;
    let p = &s.p;
    // With stride 1, the input's gradient is itself a convolution (of `g` with the flipped,
    // transposed weight): no col2im, and a GEMM as deep as the forward's.
    let by_conv = needs[0]
        && p.stride == [1, 1]
        && (0..2).all(|d| p.padding[d] <= p.dilation[d] * (p.kernel[d] - 1));
    let dx_by_conv = by_conv.then(|| input_grad_by_conv(g, w, s));
    let needs = [needs[0] && !by_conv, needs[1], needs[2]];
    let mut dx: Vec<T> = if needs[0] {
        buffer_cache::take(x_len)
    } else {
        Vec::new()
    };
    let mut dw_parts: Vec<T> = if needs[1] {
        vec![T::zero(); runs * w_len]
    } else {
        Vec::new()
    };
    let mut db_parts: Vec<T> = if needs[2] {
        vec![T::zero(); runs * o]
    } else {
        Vec::new()
    };
    let (dx_p, dw_p, db_p) = (
        SendPtr(dx.as_mut_ptr()),
        SendPtr(dw_parts.as_mut_ptr()),
        SendPtr(db_parts.as_mut_ptr()),
    );
    let work = |r: usize| {
        let (e0, e1) = run_of(r);
        let mut cols_buf: Vec<T> = if needs[1] {
            buffer_cache::take(s.block_len())
        } else {
            Vec::new()
        };
        let mut dcols_buf: Vec<T> = if needs[0] {
            buffer_cache::take(s.block_len())
        } else {
            Vec::new()
        };
        let mut first = true;
        for entry in e0..e1 {
            let g_entry = &g[entry * o * s.l..][..o * s.l];
            let mut dx_entry = needs[0].then(|| {
                // SAFETY: entry `entry`'s elements of `dx` (capacity `x_len`), written only by
                // this run (runs hold disjoint entries): zeroed (all-zero bytes are 0.0 in f32
                // and f64) before the slice is made, so it holds initialised values.
                unsafe {
                    let d = dx_p.get().add(entry * s.image);
                    d.write_bytes(0, s.image);
                    std::slice::from_raw_parts_mut(d, s.image)
                }
            });
            if needs[2] {
                // SAFETY: run `r`'s `O` partial bias sums, written only by this run.
                let db = unsafe { std::slice::from_raw_parts_mut(db_p.get().add(r * o), o) };
                for (c, d) in db.iter_mut().enumerate() {
                    *d += row_sum(&g_entry[c * s.l..][..s.l]);
                }
            }
            if s.k == 0 {
                continue;
            }
            for block in 0..s.blocks {
                let (oy0, oy1) = s.rows(block);
                let cols_len = (oy1 - oy0) * ow;
                if cols_len == 0 {
                    continue;
                }
                let grad =
                    |grp: usize| matrix(&g_entry[grp * opg * s.l + oy0 * ow..], opg, cols_len, s.l);
                if needs[1] {
                    let cols = s.patches(
                        &x[entry * s.image..][..s.image],
                        (oy0, oy1),
                        &mut cols_buf.spare_capacity_mut()[..s.block_len()],
                    );
                    for grp in 0..s.groups {
                        // dwᵀ [K/G, O/G] (+)= cols [K/G, Lb] · gᵀ [Lb, O/G], written into the
                        // run's `[O/G, K/G]` partial of group `grp` (strides `[1, K/G]`).
                        let lhs = matrix(&cols[grp * kg * cols_len..], kg, cols_len, cols_len);
                        let rhs = grad(grp).reversed_axes();
                        // SAFETY: run `r`'s partial weight gradient of group `grp`, initialised
                        // (zeros) and written only by this run.
                        unsafe {
                            matmul::gemm_at(
                                dw_p.get().add(r * w_len + grp * opg * kg),
                                [1, kg],
                                !first,
                                lhs,
                                rhs,
                            );
                        }
                    }
                }
                if let Some(dx_entry) = dx_entry.as_deref_mut() {
                    let spare = &mut dcols_buf.spare_capacity_mut()[..s.k * cols_len];
                    let dcols_p = spare.as_mut_ptr().cast::<T>();
                    for grp in 0..s.groups {
                        // dcols [K/G, Lb] = wᵀ [K/G, O/G] · g [O/G, Lb].
                        let lhs = matrix(&w[grp * opg * kg..], opg, kg, kg).reversed_axes();
                        // SAFETY: rows `grp·K/G..(grp + 1)·K/G` of the scratch `[K, Lb]`
                        // matrix, this run's own; every element is written (no accumulate).
                        unsafe {
                            matmul::gemm_at(
                                dcols_p.add(grp * kg * cols_len),
                                [cols_len, 1],
                                false,
                                lhs,
                                grad(grp),
                            );
                        }
                    }
                    // SAFETY: the GEMMs above wrote all `K · Lb` elements.
                    let dcols = unsafe { std::slice::from_raw_parts(dcols_p, s.k * cols_len) };
                    s.add_patches(dcols, (oy0, oy1), dx_entry);
                }
                first = false;
            }
        }
        buffer_cache::give(cols_buf);
        buffer_cache::give(dcols_buf);
    };
    run_chunks(runs, &work);
    let dx = needs[0]
        .then(|| {
            // SAFETY: every entry's `image` elements were zeroed by the run holding it (the
            // runs cover `0..n`), so all `x_len` are initialised.
            unsafe { dx.set_len(x_len) };
            dx
        })
        .or(dx_by_conv);
    let sum_parts = |parts: &[T], len: usize| {
        let mut total = parts[..len].to_vec();
        for part in parts.chunks_exact(len).skip(1) {
            for (t, &v) in total.iter_mut().zip(part) {
                *t += v;
            }
        }
        total
    };
    let dw = needs[1].then(|| sum_parts(&dw_parts, w_len));
    let db = needs[2].then(|| sum_parts(&db_parts, o));
    [dx, dw, db]
}

/// The input's gradient of a stride-1 convolution (padding at most the dilated kernel's reach)
/// as a convolution of the incoming gradient `g` (`[N, O, OH, OW]`) with the weight flipped in
/// both spatial dims and its channel dims swapped within each group (`[C, O/G, kh, kw]`),
/// padded by `dilation·(k − 1) − padding`: `[N, C, H, W]`.
fn input_grad_by_conv<T: Element>(g: &[T], w: &[T], s: &ConvShape) -> Vec<T> {
    let p = &s.p;
    let [kh, kw] = p.kernel;
    let (opg, c) = (s.out_per_group, p.channels);
    let cpg = c / s.groups;
    let mut flipped = vec![T::zero(); w.len()];
    for grp in 0..s.groups {
        for o in 0..opg {
            for ch in 0..cpg {
                for i in 0..kh {
                    for j in 0..kw {
                        flipped[(((grp * cpg + ch) * opg + o) * kh + i) * kw + j] =
                            w[(((grp * opg + o) * cpg + ch) * kh + (kh - 1 - i)) * kw
                                + (kw - 1 - j)];
                    }
                }
            }
        }
    }
    let padding = [0, 1].map(|d| p.dilation[d] * (p.kernel[d] - 1) - p.padding[d]);
    let q = Patches::new(
        [p.batch, s.out_channels, p.output[0], p.output[1]],
        p.kernel,
        [1, 1],
        padding,
        p.dilation,
    );
    debug_assert_eq!(
        q.output, p.input,
        "invariant: the transposed convolution's extent"
    );
    conv2d_forward(g, &flipped, None, &ConvShape::new(&q, s.groups, c))
}

/// The sum of `v` in eight interleaved partial sums (vectorised), added pairwise at the end.
fn row_sum<T: Element>(v: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let chunks = v.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    for (a, &x) in acc.iter_mut().zip(tail) {
        *a += x;
    }
    ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}
