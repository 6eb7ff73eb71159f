//! im2col and col2im for 2-D convolution on host memory: the patch matrix written with
//! contiguous row copies (padding as zero fill, no index list), and its adjoint adding the rows
//! back into the image plane by plane.
//!
//! Layout: the image is a contiguous `[N, C, H, W]`; the patch matrices are
//! `[N, C·kh·kw, OH·OW]`, row `(c, ki, kj)` of batch entry `n` holding, for each output
//! position `(oy, ox)`, the input value the window at `(oy, ox)` reads at kernel offset
//! `(ki, kj)`. Each entry's matrix meets the `[O, C·kh·kw]` weight in a GEMM of its own: one
//! GEMM over the whole batch (`[C·kh·kw, N·L]`) runs about 2.5 times slower in the `gemm` crate
//! on a 2-core Xeon, its operands and result far larger than the caches.

use std::mem::MaybeUninit;
use std::ops::AddAssign;

use super::buffer_cache;
use super::parallel::{GRAIN, for_chunks_of_mut};
use crate::backend::{Buffer, ElemVec, Out, Patches};
use crate::layout::{Layout, view};
use crate::{Error, Result};

mod blocked;

pub(super) use blocked::{conv2d_backward_buffer, conv2d_buffer};

/// [`im2col`] on a host buffer (f32 or f64; the adapter widens halves) read through `lx`, made
/// contiguous first when it is not.
pub(super) fn im2col_buffer(x: &Buffer, lx: &Layout, p: &Patches) -> Result<Out> {
    let shape = p.columns_shape();
    match x {
        Buffer::F32(d) => Ok(out(
            im2col(elements(&view(d, lx).as_standard_layout()), p),
            &shape,
        )),
        Buffer::F64(d) => Ok(out(
            im2col(elements(&view(d, lx).as_standard_layout()), p),
            &shape,
        )),
        _ => Err(Error::NotImplementedForDType {
            op: "im2col".into(),
            dtype: x.dtype(),
        }),
    }
}

/// [`col2im`] on a host buffer (f32 or f64), as [`im2col_buffer`].
pub(super) fn col2im_buffer(cols: &Buffer, lc: &Layout, p: &Patches) -> Result<Out> {
    let shape = p.image_shape();
    match cols {
        Buffer::F32(d) => Ok(out(
            col2im(elements(&view(d, lc).as_standard_layout()), p),
            &shape,
        )),
        Buffer::F64(d) => Ok(out(
            col2im(elements(&view(d, lc).as_standard_layout()), p),
            &shape,
        )),
        _ => Err(Error::NotImplementedForDType {
            op: "col2im".into(),
            dtype: cols.dtype(),
        }),
    }
}

/// A kernel's buffer as an [`Out`] of `shape`.
fn out<T: crate::DataElement>(v: Vec<T>, shape: &[usize]) -> Out {
    (Buffer::host(ElemVec::from_vec(v)), shape.into())
}

/// The elements of a standard-layout array, in order.
fn elements<'a, T>(a: &'a ndarray::CowArray<'_, T, ndarray::IxDyn>) -> &'a [T] {
    a.as_slice()
        .expect("invariant: a standard-layout array is one slice")
}

/// For kernel offset `k` along one dim: the first and one-past-the-last output positions whose
/// window reads inside the input (`lo..hi`, empty when none does), and the input coordinate read
/// by output `lo`.
fn valid_span(p: &Patches, d: usize, k: usize) -> (usize, usize, usize) {
    let (stride, pad, input, output) = (p.stride[d], p.padding[d], p.input[d], p.output[d]);
    let shift = k * p.dilation[d];
    // Output `o` reads `o·stride + shift − pad`, valid when in `0..input`.
    let lo = pad.saturating_sub(shift).div_ceil(stride).min(output);
    let hi = (input + pad)
        .checked_sub(shift)
        .map_or(0, |end| end.div_ceil(stride))
        .min(output)
        .max(lo);
    (lo, hi, lo * stride + shift - pad.min(lo * stride + shift))
}

/// The input row read by output row `oy` at kernel row offset `ki`, if inside the input.
fn input_row(p: &Patches, ki: usize, oy: usize) -> Option<usize> {
    (oy * p.stride[0] + ki * p.dilation[0])
        .checked_sub(p.padding[0])
        .filter(|&y| y < p.input[0])
}

/// The patch matrices `[N, C·kh·kw, OH·OW]` of the contiguous `[N, C, H, W]` image `x`.
///
/// # Panics
///
/// If `x` does not hold `N·C·H·W` elements (the caller made it contiguous with that shape).
pub(crate) fn im2col<T: Copy + Default + Send + Sync + 'static>(x: &[T], p: &Patches) -> Vec<T> {
    let [h, w] = p.input;
    let [kh, kw] = p.kernel;
    let [oh, ow] = p.output;
    let (n, c) = (p.batch, p.channels);
    assert_eq!(
        x.len(),
        n * c * h * w,
        "invariant: im2col input is [N, C, H, W]"
    );
    let row_len = oh * ow;
    let len = n * c * kh * kw * row_len;
    let mut out = buffer_cache::take::<T>(len);
    if len == 0 {
        return out;
    }
    let spans: Vec<_> = (0..kw).map(|kj| valid_span(p, 1, kj)).collect();
    // Row `r` of the whole buffer is row `(ch, ki, kj)` of batch entry `b`.
    let fill_row = |r: usize, row: &mut [MaybeUninit<T>]| {
        let (b, ch, ki, kj) = (r / (c * kh * kw), r / (kh * kw) % c, r / kw % kh, r % kw);
        let plane = &x[(b * c + ch) * h * w..][..h * w];
        fill_patch_row(plane, p, ki, spans[kj], 0, row);
    };
    let rows_per_chunk = GRAIN.div_ceil(row_len).max(1);
    let spare = &mut out.spare_capacity_mut()[..len];
    for_chunks_of_mut(spare, rows_per_chunk * row_len, &|start, chunk| {
        for (i, row) in chunk.chunks_exact_mut(row_len).enumerate() {
            fill_row(start / row_len + i, row);
        }
    });
    // SAFETY: the capacity is at least `len` (`take`), and every element of `0..len` was
    // written: the chunks tile `0..len` in whole rows, and `fill_row` writes each of a row's
    // `OH` runs of `OW` elements in full (zero fill for a padded row, else the zero edges
    // `..lo`, `hi..` and the copied middle `lo..hi`, whose source has `hi − lo` elements as
    // `valid_span` keeps `x0 + (hi − lo − 1)·stride < W`).
    unsafe { out.set_len(len) };
    out
}

/// col2im, the adjoint of [`im2col`]: the contiguous `[N, C, H, W]` image whose every element
/// is the sum of the entries of the patch matrices `cols` (`[N, C·kh·kw, OH·OW]`, contiguous)
/// that read it. Entries that read padding are dropped.
///
/// # Panics
///
/// If `cols` does not hold `C·kh·kw·N·OH·OW` elements.
pub(crate) fn col2im<T>(cols: &[T], p: &Patches) -> Vec<T>
where
    T: Copy + Default + AddAssign + Send + Sync + 'static,
{
    let [h, w] = p.input;
    let [kh, kw] = p.kernel;
    let [oh, ow] = p.output;
    let (n, c) = (p.batch, p.channels);
    let row_len = oh * ow;
    assert_eq!(
        cols.len(),
        n * c * kh * kw * row_len,
        "invariant: col2im input is [N, C·kh·kw, OH·OW]"
    );
    let mut image = buffer_cache::zeroed::<T>(n * c * h * w);
    let plane = h * w;
    if image.is_empty() {
        return image;
    }
    let spans: Vec<_> = (0..kw).map(|kj| valid_span(p, 1, kj)).collect();
    // Plane `(b, ch)` receives rows `(ch, ·, ·)` of batch entry `b` only (contiguous): planes
    // are disjoint units of work.
    let add_plane = |index: usize, dst: &mut [T]| {
        let (b, ch) = (index / c, index % c);
        for ki in 0..kh {
            for (kj, &span) in spans.iter().enumerate() {
                let row = ((b * c + ch) * kh + ki) * kw + kj;
                add_patch_row(&cols[row * row_len..][..row_len], p, ki, span, 0, dst);
            }
        }
    };
    let planes_per_chunk = GRAIN.div_ceil(plane * kh * kw).max(1);
    for_chunks_of_mut(&mut image, planes_per_chunk * plane, &|start, chunk| {
        for (i, dst) in chunk.chunks_exact_mut(plane).enumerate() {
            add_plane(start / plane + i, dst);
        }
    });
    image
}

/// Writes one patch-matrix row for the output rows `oy0..oy0 + dst.len() / OW`: kernel row offset
/// `ki`, the column offset's [`valid_span`] `span`, read from the `H·W` input `plane` (zero where
/// the window reads padding). Every element of `dst` is written.
fn fill_patch_row<T: Copy + Default>(
    plane: &[T],
    p: &Patches,
    ki: usize,
    (lo, hi, x0): (usize, usize, usize),
    oy0: usize,
    dst: &mut [MaybeUninit<T>],
) {
    let w = p.input[1];
    for (i, dst) in dst.chunks_exact_mut(p.output[1]).enumerate() {
        let Some(y) = input_row(p, ki, oy0 + i) else {
            dst.fill(MaybeUninit::new(T::default()));
            continue;
        };
        let src = &plane[y * w..][..w];
        dst[..lo].fill(MaybeUninit::new(T::default()));
        dst[hi..].fill(MaybeUninit::new(T::default()));
        let mid = &mut dst[lo..hi];
        if p.stride[1] == 1 {
            for (d, &s) in mid.iter_mut().zip(&src[x0..]) {
                d.write(s);
            }
        } else {
            for (d, &s) in mid.iter_mut().zip(src[x0..].iter().step_by(p.stride[1])) {
                d.write(s);
            }
        }
    }
}

/// The adjoint of [`fill_patch_row`]: adds the patch-matrix row `src` (output rows
/// `oy0..oy0 + src.len() / OW`) into the `H·W` plane `dst`, dropping entries that read padding.
fn add_patch_row<T: Copy + AddAssign>(
    src: &[T],
    p: &Patches,
    ki: usize,
    (lo, hi, x0): (usize, usize, usize),
    oy0: usize,
    dst: &mut [T],
) {
    let w = p.input[1];
    for (i, run) in src.chunks_exact(p.output[1]).enumerate() {
        let Some(y) = input_row(p, ki, oy0 + i) else {
            continue;
        };
        let out = &mut dst[y * w..][..w];
        if p.stride[1] == 1 {
            for (d, &s) in out[x0..].iter_mut().zip(&run[lo..hi]) {
                *d += s;
            }
        } else {
            let out = out[x0..].iter_mut().step_by(p.stride[1]);
            for (d, &s) in out.zip(&run[lo..hi]) {
                *d += s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The patch matrix by the definition, one element at a time.
    fn naive_im2col(x: &[f64], p: &Patches) -> Vec<f64> {
        let [h, w] = p.input;
        let [kh, kw] = p.kernel;
        let [oh, ow] = p.output;
        let mut out = Vec::new();
        for b in 0..p.batch {
            for ch in 0..p.channels {
                for ki in 0..kh {
                    for kj in 0..kw {
                        for oy in 0..oh {
                            for ox in 0..ow {
                                let y = (oy * p.stride[0] + ki * p.dilation[0]) as isize
                                    - p.padding[0] as isize;
                                let xx = (ox * p.stride[1] + kj * p.dilation[1]) as isize
                                    - p.padding[1] as isize;
                                let inside =
                                    (0..h as isize).contains(&y) && (0..w as isize).contains(&xx);
                                out.push(if inside {
                                    x[((b * p.channels + ch) * h + y as usize) * w + xx as usize]
                                } else {
                                    0.0
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }

    fn patches(
        [n, c, h, w]: [usize; 4],
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
    ) -> Patches {
        let output = [0, 1].map(|d| {
            ([h, w][d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1
        });
        Patches {
            batch: n,
            channels: c,
            input: [h, w],
            kernel,
            stride,
            padding,
            dilation,
            output,
        }
    }

    /// Odd shapes: strides 1–3, padding 0–2, dilation 1–2, non-square kernels and inputs,
    /// batch 1, padding wider than a dilated kernel's reach.
    fn cases() -> Vec<Patches> {
        vec![
            patches([2, 3, 5, 6], [3, 3], [1, 1], [1, 1], [1, 1]),
            patches([1, 2, 7, 5], [2, 3], [2, 1], [0, 2], [1, 1]),
            patches([3, 1, 6, 7], [3, 2], [2, 2], [2, 0], [2, 1]),
            patches([1, 4, 9, 8], [3, 3], [1, 2], [2, 2], [2, 2]),
            patches([2, 2, 4, 4], [1, 1], [3, 3], [0, 0], [1, 1]),
            patches([1, 1, 3, 3], [3, 3], [1, 1], [2, 2], [1, 1]),
            patches([2, 3, 5, 9], [1, 4], [1, 3], [1, 0], [1, 2]),
        ]
    }

    fn values(n: usize) -> Vec<f64> {
        (0..n).map(|i| ((i * 7919) % 101) as f64 - 50.0).collect()
    }

    #[test]
    fn im2col_matches_the_definition_on_odd_shapes() {
        for p in cases() {
            let x = values(p.batch * p.channels * p.input[0] * p.input[1]);
            assert_eq!(im2col(&x, &p), naive_im2col(&x, &p), "{p:?}");
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let want: Vec<f32> = naive_im2col(&x, &p).iter().map(|&v| v as f32).collect();
            assert_eq!(im2col(&x32, &p), want, "f32 {p:?}");
        }
    }

    /// col2im is im2col's adjoint: `<im2col(x), g> = <x, col2im(g)>` for every `x`, checked on
    /// each unit vector `x` (so col2im(g) is compared element by element, exactly: the values
    /// are small integers).
    #[test]
    fn col2im_is_the_adjoint_of_im2col_on_odd_shapes() {
        for p in cases() {
            let size = p.batch * p.channels * p.input[0] * p.input[1];
            let g = values(naive_im2col(&vec![0.0; size], &p).len());
            let image = col2im(&g, &p);
            let g32: Vec<f32> = g.iter().map(|&v| v as f32).collect();
            let image32 = col2im(&g32, &p);
            for i in 0..size {
                let mut e = vec![0.0; size];
                e[i] = 1.0;
                let dot: f64 = naive_im2col(&e, &p)
                    .iter()
                    .zip(&g)
                    .map(|(a, b)| a * b)
                    .sum();
                assert_eq!(image[i], dot, "{p:?} element {i}");
                assert_eq!(f64::from(image32[i]), dot, "f32 {p:?} element {i}");
            }
        }
    }

    /// Large enough to be cut into chunks for the intra-op threads.
    #[test]
    fn parallel_chunks_agree_with_the_definition() {
        let p = patches([4, 8, 20, 18], [3, 3], [1, 1], [1, 1], [1, 1]);
        let x = values(4 * 8 * 20 * 18);
        let cols = im2col(&x, &p);
        assert_eq!(cols, naive_im2col(&x, &p));
        let back = col2im(&cols, &p);
        let size = x.len();
        for i in (0..size).step_by(97) {
            let mut e = vec![0.0; size];
            e[i] = 1.0;
            let dot: f64 = naive_im2col(&e, &p)
                .iter()
                .zip(&cols)
                .map(|(a, b)| a * b)
                .sum();
            assert_eq!(back[i], dot, "element {i}");
        }
    }
}
