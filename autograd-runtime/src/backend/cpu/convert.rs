//! `to(dtype)` on the host: every pair of the eight element types, for any layout.
//!
//! The layout is walked as runs (its innermost dim after dropping size-1 dims and merging the
//! dims that continue each other): a contiguous run is converted slice to slice, a strided one
//! (a transpose, a narrowed or expanded dim) is gathered into a small stack block first. The
//! converters between `f32` and the half types are slice kernels: `half`'s F16C paths for `f16`,
//! and a branch-free `bf16` rounding the compiler vectorises (`half` has no SIMD `bf16`
//! conversion). Each gives the bits of the element-wise casts ([`DataElement::cast_from`]):
//! round to nearest even, NaN kept quiet with its sign and high payload, `f64` to a half type
//! through `f32` as PyTorch's `c10::Half(float(x))`. Wide outputs are split over the intra-op
//! pool. What this replaced (ndarray's generic element iterator, then a cast through `f64` per
//! element) cost autocast's strided casts about 100 ns per element.

use std::mem::MaybeUninit;

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use smallvec::SmallVec;

use super::any::{with_data, with_dtype};
use super::parallel::collect_chunks;
use crate::backend::{Buffer, ElemVec, Out};
use crate::layout::Layout;
use crate::{DType, DataElement};

/// Elements gathered from a strided run (or staged for `half`'s slice kernels) at a time: a
/// few KiB of stack, in L1.
const BLOCK: usize = 256;

/// A layout as runs: `outer` (size, stride) dims in C order around the innermost run of `len`
/// elements `stride` apart, starting at `offset`.
#[derive(Debug)]
struct Runs {
    outer: SmallVec<[(usize, usize); 6]>,
    len: usize,
    stride: usize,
    offset: usize,
}

impl Runs {
    /// `l`'s runs: size-1 dims dropped, a dim merged into the one inside it when its stride is
    /// that dim's extent (so a contiguous layout is one run, a narrowed one a run per row).
    fn of(l: &Layout) -> Runs {
        let mut dims: SmallVec<[(usize, usize); 6]> = SmallVec::new();
        for (&n, &s) in l.shape.iter().zip(&l.strides) {
            if n == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.1 == s * n => *last = (last.0 * n, s),
                _ => dims.push((n, s)),
            }
        }
        let (len, stride) = dims.pop().unwrap_or((1, 1));
        Runs {
            outer: dims,
            len,
            stride,
            offset: l.offset,
        }
    }

    /// Writes `conv` of the elements at C-order positions `start..start + dst.len()` into `dst`.
    fn fill<S: Copy + Default, D>(
        &self,
        src: &[S],
        start: usize,
        dst: &mut [MaybeUninit<D>],
        conv: &impl Fn(&[S], &mut [MaybeUninit<D>]),
    ) {
        // The odometer over the outer dims, set to the run that holds `start`.
        let mut index: SmallVec<[usize; 6]> = SmallVec::from_elem(0, self.outer.len());
        let (mut q, mut at) = (start / self.len, start % self.len);
        let mut base = self.offset;
        for (k, &(n, s)) in self.outer.iter().enumerate().rev() {
            index[k] = q % n;
            base += index[k] * s;
            q /= n;
        }
        let mut done = 0;
        while done < dst.len() {
            let take = (self.len - at).min(dst.len() - done);
            run(
                src,
                base + at * self.stride,
                self.stride,
                &mut dst[done..done + take],
                conv,
            );
            done += take;
            at = 0;
            for (k, &(n, s)) in self.outer.iter().enumerate().rev() {
                index[k] += 1;
                base += s;
                if index[k] < n {
                    break;
                }
                index[k] = 0;
                base -= n * s;
            }
        }
    }
}

/// `conv` of the `dst.len()` elements of `src` at `from`, `from + stride`, ...
#[inline]
fn run<S: Copy + Default, D>(
    src: &[S],
    from: usize,
    stride: usize,
    dst: &mut [MaybeUninit<D>],
    conv: &impl Fn(&[S], &mut [MaybeUninit<D>]),
) {
    if stride == 1 {
        conv(&src[from..from + dst.len()], dst);
        return;
    }
    let mut block = [S::default(); BLOCK];
    let mut at = from;
    for d in dst.chunks_mut(BLOCK) {
        let b = &mut block[..d.len()];
        for x in b.iter_mut() {
            *x = src[at];
            at += stride;
        }
        conv(b, d);
    }
}

/// `src`'s elements under `l`, in C order, through `conv`.
fn convert<S, D>(src: &[S], l: &Layout, conv: impl Fn(&[S], &mut [MaybeUninit<D>]) + Sync) -> Vec<D>
where
    S: Copy + Default + Sync,
    D: Send + 'static,
{
    if l.numel() == 0 {
        return Vec::new();
    }
    let runs = Runs::of(l);
    // SAFETY: `fill` writes every element of each chunk: its runs cover positions
    // `start..start + dst.len()` exactly once, and every converter writes each element of its
    // `dst` (they zip or chunk it against a source of the same length).
    unsafe { collect_chunks(l.numel(), |start, dst| runs.fill(src, start, dst, &conv)) }
}

/// `f32` to `bf16` with `half::bf16::from_f32`'s bits, branch-free: round to nearest even by
/// adding `0x7FFF` plus the kept lowest bit (a carry rounds up, into infinity past the largest
/// finite value); a NaN keeps its sign and high payload with the quiet bit set.
#[inline(always)]
fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let rounded = b.wrapping_add(0x7FFF + ((b >> 16) & 1)) >> 16;
    let nan = (b >> 16) | 0x40;
    (if b & 0x7FFF_FFFF > 0x7F80_0000 {
        nan
    } else {
        rounded
    }) as u16
}

fn f32_to_bf16(src: &[f32], dst: &mut [MaybeUninit<bf16>]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        d.write(bf16::from_bits(bf16_bits(x)));
    }
}

fn bf16_to_f32(src: &[bf16], dst: &mut [MaybeUninit<f32>]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        d.write(f32::from_bits(u32::from(x.to_bits()) << 16));
    }
}

/// Through `half`'s slice kernel (F16C where the CPU has it), staged in a stack block: the
/// kernel writes initialised `f16`s.
fn f32_to_f16(src: &[f32], dst: &mut [MaybeUninit<f16>]) {
    let mut block = [f16::ZERO; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let b = &mut block[..s.len()];
        b.convert_from_f32_slice(s);
        for (d, &x) in d.iter_mut().zip(b.iter()) {
            d.write(x);
        }
    }
}

fn f16_to_f32(src: &[f16], dst: &mut [MaybeUninit<f32>]) {
    let mut block = [0f32; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let b = &mut block[..s.len()];
        s.convert_to_f32_slice(b);
        for (d, &x) in d.iter_mut().zip(b.iter()) {
            d.write(x);
        }
    }
}

/// `f64` to a half type: rounded to `f32` first (PyTorch's double rounding), in blocks.
fn f64_via_f32<D>(
    src: &[f64],
    dst: &mut [MaybeUninit<D>],
    to_half: fn(&[f32], &mut [MaybeUninit<D>]),
) {
    let mut block = [0f32; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let b = &mut block[..s.len()];
        for (y, &x) in b.iter_mut().zip(s) {
            *y = x as f32;
        }
        to_half(b, d);
    }
}

/// Any pair, element by element through [`DataElement::cast_from`] (the same type: a copy).
fn cast<S: DataElement, D: DataElement>(src: &[S], dst: &mut [MaybeUninit<D>]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        d.write(D::cast_from(x));
    }
}

fn out<T: DataElement>(v: Vec<T>, l: &Layout) -> Out {
    (Buffer::host(ElemVec::from_vec(v)), l.shape.clone())
}

/// The values of `x` under `lx` converted to `dtype` with PyTorch's cast rules, contiguous.
pub(crate) fn to_dtype(x: &Buffer, lx: &Layout, dtype: DType) -> Out {
    match (x, dtype) {
        (Buffer::F32(d), DType::BF16) => out(convert(d, lx, f32_to_bf16), lx),
        (Buffer::BF16(d), DType::F32) => out(convert(d, lx, bf16_to_f32), lx),
        (Buffer::F32(d), DType::F16) => out(convert(d, lx, f32_to_f16), lx),
        (Buffer::F16(d), DType::F32) => out(convert(d, lx, f16_to_f32), lx),
        (Buffer::F64(d), DType::BF16) => {
            out(convert(d, lx, |s, d| f64_via_f32(s, d, f32_to_bf16)), lx)
        }
        (Buffer::F64(d), DType::F16) => {
            out(convert(d, lx, |s, d| f64_via_f32(s, d, f32_to_f16)), lx)
        }
        _ => with_data!(x, |d: S| with_dtype!(dtype, |D| out::<D>(
            convert(d, lx, cast::<S, D>),
            lx
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 4099th `f32` bit pattern (all exponents, both signs, NaNs among them) and the edge
    /// cases: `bf16_bits` gives `half::bf16::from_f32`'s bits.
    #[test]
    fn bf16_rounding_matches_half_bit_for_bit() {
        let edges = [
            0u32,
            0x8000_0000,
            0x7F80_0000,
            0xFF80_0000,
            0x7FC0_0000,
            0xFFC0_0001,
            0x7F80_0001,
            0x7F7F_FFFF,
            0xFF7F_FFFF,
            0x3F80_8000,
            0x3F81_8000,
            0x3F80_8001,
            0x0000_8000,
            0x0001_8000,
            0x7FFF_FFFF,
        ];
        let sampled = (0..=u32::MAX / 4099).map(|i| i * 4099);
        for b in edges.into_iter().chain(sampled) {
            let x = f32::from_bits(b);
            assert_eq!(bf16_bits(x), bf16::from_f32(x).to_bits(), "bits {b:#010x}");
        }
    }

    /// A strided layout (a transpose of a narrowed block, offset) converts to the same values as
    /// element-wise casts of its elements in C order, split at chunk boundaries or not.
    #[test]
    fn strided_runs_match_element_casts() {
        let data: Vec<f32> = (0..605).map(|i| (i as f32 - 300.0) * 0.37).collect();
        // [20, 30] at offset 5; narrowed to columns 3..28 and transposed: shape [25, 20].
        let base = Layout {
            shape: [20usize, 30].into_iter().collect(),
            strides: [30usize, 1].into_iter().collect(),
            offset: 5,
        };
        let l = base.narrow(1, 3, 25).transpose(0, 1);
        let expect: Vec<bf16> = crate::layout::view(&data[..], &l)
            .iter()
            .map(|&x| bf16::from_f32(x))
            .collect();
        let (b, shape) = to_dtype(
            &Buffer::host(ElemVec::from_vec(data.clone())),
            &l,
            DType::BF16,
        );
        assert_eq!(&shape[..], &[25, 20]);
        assert_eq!(b.as_slice::<bf16>().unwrap(), &expect[..]);
        // Starting mid-run (as a parallel chunk does).
        let runs = Runs::of(&l);
        let mut dst = vec![MaybeUninit::<bf16>::uninit(); 443];
        runs.fill(&data, 57, &mut dst, &f32_to_bf16);
        // SAFETY: `fill` wrote all of `dst`.
        let got: Vec<bf16> = dst.iter().map(|d| unsafe { d.assume_init() }).collect();
        assert_eq!(got, expect[57..500]);
    }

    /// Half to `f32` and back, `f64` to `f16` through `f32`, and integers, contiguous and
    /// expanded (a zero stride).
    #[test]
    fn every_pair_matches_cast_from() {
        let v: Vec<f64> = vec![
            1e-8,
            -2.5,
            65519.0,
            70000.0,
            1.0 + 2f64.powi(-11) + 1e-12,
            f64::NAN,
        ];
        let l = Layout::contiguous(&[6]);
        let (h, _) = to_dtype(&Buffer::host(ElemVec::from_vec(v.clone())), &l, DType::F16);
        let want: Vec<f16> = v.iter().map(|&x| f16::from_f32(x as f32)).collect();
        let got = h.as_slice::<f16>().unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.to_bits(), w.to_bits());
        }
        let (back, _) = to_dtype(&h, &l, DType::F32);
        let back = back.as_slice::<f32>().unwrap();
        assert_eq!(back[1], -2.5);
        assert_eq!(back[3], f32::INFINITY);
        assert!(back[5].is_nan());
        let ints = Buffer::host(ElemVec::from_vec(vec![7i64, -3]));
        let expanded = Layout {
            shape: [3usize, 2].into_iter().collect(),
            strides: [0usize, 1].into_iter().collect(),
            offset: 0,
        };
        let (u, _) = to_dtype(&ints, &expanded, DType::U8);
        assert_eq!(u.as_slice::<u8>().unwrap(), &[7, 253, 7, 253, 7, 253]);
    }

    #[test]
    fn empty_tensors_convert_to_empty() {
        let b = Buffer::host(ElemVec::from_vec(Vec::<f32>::new()));
        for shape in [&[0usize][..], &[2, 0], &[0, 3]] {
            let (out, s) = to_dtype(&b, &Layout::contiguous(shape), DType::I32);
            assert_eq!(out.len(), 0);
            assert_eq!(&s[..], shape);
        }
    }

    /// A wide transpose (several chunks of the intra-op split, each starting mid-run) to `f32`.
    #[test]
    fn wide_strided_conversion_covers_every_chunk() {
        let n = 300;
        let data: Vec<f64> = (0..n * n).map(|i| i as f64 + 0.25).collect();
        let l = Layout::contiguous(&[n, n]).transpose(0, 1);
        let (b, _) = to_dtype(&Buffer::host(ElemVec::from_vec(data)), &l, DType::F32);
        let got = b.as_slice::<f32>().unwrap();
        for (k, &v) in got.iter().enumerate() {
            let (i, j) = (k / n, k % n);
            assert_eq!(v, (j * n + i) as f32 + 0.25);
        }
    }
}
