//! Fused layer norm and RMS norm on contiguous buffers, forward and backward: one kernel each
//! way, two passes over each row in L1 (its sums, then its outputs).
//!
//! The forward computes what `nn::functional::layer_norm`'s composition computed, in the same
//! order and with the same pairwise sums (`mean = Σx / n`, `var = Σ(x − mean)² / n`,
//! `rstd = 1 / √(var + eps)`, `y = (x − mean) · rstd · w + b`), so it gives the same bits. The
//! backward recomputes each row's mean and `rstd` the same way (a row is in L1 then; nothing
//! is saved between the passes) and applies PyTorch's formula (`dx = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ·x̂))`, `ĝ = g·w`), with
//! the weight and bias gradients summed over the rows pairwise (blocks of 32 rows) inside fixed
//! chunks of rows and the chunks' partial sums added in chunk order: the same bits whatever the
//! number of threads.

use crate::Element;
use crate::backend::NormSpec;
use crate::sync::Mutex;

use super::buffer_cache;
use super::dense::simd;
use super::parallel::{GRAIN, SendPtr, for_chunks_of_mut, run_chunks};
use super::reduce::pairwise_sum;

/// Slices up to this length are summed directly (the leaf of `reduce::pairwise_sum`).
const PAIRWISE_BLOCK: usize = 256;

/// Rows whose weight and bias gradients are summed directly before the rows are split.
const ROW_BLOCK: usize = 32;

/// `Σ f(a[i], b[i])` with `reduce::pairwise_sum`'s tree (8 accumulators per leaf of up to 256),
/// so `pairwise_zip(c, c, |x, _| x * x)` is `pairwise_sum` of the squares, bit for bit.
#[inline(always)]
fn pairwise_zip<T: Element>(a: &[T], b: &[T], f: impl Fn(T, T) -> T + Copy) -> T {
    if a.len() <= PAIRWISE_BLOCK {
        let mut acc = [T::zero(); 8];
        let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (x, y) in ca.zip(cb) {
            for k in 0..8 {
                acc[k] += f(x[k], y[k]);
            }
        }
        let mut total =
            ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (&x, &y) in ra.iter().zip(rb) {
            total += f(x, y);
        }
        total
    } else {
        pairwise_zip_split(a, b, f)
    }
}

/// The split of [`pairwise_zip`] for a slice longer than a leaf (depth `log₂(len / 256)`).
fn pairwise_zip_split<T: Element>(a: &[T], b: &[T], f: impl Fn(T, T) -> T + Copy) -> T {
    let mid = (a.len() / 2) & !7;
    let (al, ar) = a.split_at(mid);
    let (bl, br) = b.split_at(mid);
    pairwise_zip(al, bl, f) + pairwise_zip(ar, br, f)
}

/// Rows per chunk: at least a grain of elements.
fn rows_per_chunk(n: usize) -> usize {
    GRAIN.div_ceil(n.max(1))
}

/// The forward: `y` for the rows of `spec.n` elements of contiguous `x`.
pub(crate) fn forward<T: Element>(
    x: &[T],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
    spec: NormSpec,
) -> Vec<T> {
    let n = spec.n;
    let mut y: Vec<T> = buffer_cache::zeroed(x.len());
    if x.is_empty() || n == 0 {
        return y;
    }
    let (eps, n_t) = (T::from_f64(spec.eps), T::from_f64(n as f64));
    for_chunks_of_mut(&mut y, rows_per_chunk(n) * n, &|start, ys| {
        let xs = &x[start..start + ys.len()];
        simd(|| {
            for (yr, xr) in ys.chunks_exact_mut(n).zip(xs.chunks_exact(n)) {
                forward_row(xr, yr, weight, bias, spec.centre, eps, n_t);
            }
        });
    });
    y
}

/// A row's `(mean, rstd)`, as [`forward_row`] computes them (the same bits).
#[inline(always)]
fn stats<T: Element>(x: &[T], centre: bool, eps: T, n: T) -> (T, T) {
    let mean = if centre {
        pairwise_sum(x) / n
    } else {
        T::zero()
    };
    let var = pairwise_zip(x, x, |x, _| {
        let c = x - mean;
        c * c
    }) / n;
    (mean, T::one() / (var + eps).sqrt())
}

/// One row of [`forward`].
#[inline(always)]
fn forward_row<T: Element>(
    x: &[T],
    y: &mut [T],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
    centre: bool,
    eps: T,
    n: T,
) {
    let (mean, rstd) = stats(x, centre, eps, n);
    y.iter_mut()
        .zip(x)
        .for_each(|(y, &x)| *y = (x - mean) * rstd);
    if let Some(w) = weight {
        y.iter_mut().zip(w).for_each(|(y, &w)| *y *= w);
    }
    if let Some(b) = bias {
        y.iter_mut().zip(b).for_each(|(y, &b)| *y += b);
    }
}

/// The operands of [`backward`]'s rows.
struct Rows<'a, T> {
    g: &'a [T],
    x: &'a [T],
    weight: Option<&'a [T]>,
    n: usize,
    n_t: T,
    eps: T,
    centre: bool,
}

/// One chunk's weight and bias gradients (each empty when not wanted).
type Partial<T> = (Vec<T>, Vec<T>);

/// The gradients of [`forward`]: `[dx, dweight, dbias]`, each computed when `needs` asks.
pub(crate) fn backward<T: Element>(
    g: &[T],
    x: &[T],
    weight: Option<&[T]>,
    spec: NormSpec,
    needs: [bool; 3],
) -> [Option<Vec<T>>; 3] {
    let n = spec.n;
    let rows = x.len().checked_div(n).unwrap_or(0);
    let mut dx: Option<Vec<T>> = needs[0].then(|| buffer_cache::zeroed(x.len()));
    let (want_w, want_b) = (needs[1], needs[2]);
    let per = rows_per_chunk(n);
    let chunks = rows.div_ceil(per);
    // Each chunk's partial weight and bias gradients, added in chunk order afterwards.
    let partials: Mutex<Vec<Option<Partial<T>>>> = Mutex::new(vec![None; chunks]);
    let dxp = dx.as_mut().map(|v| SendPtr(v.as_mut_ptr()));
    let op = Rows {
        g,
        x,
        weight,
        n,
        n_t: T::from_f64(n as f64),
        eps: T::from_f64(spec.eps),
        centre: spec.centre,
    };
    run_chunks(chunks, &|c| {
        let (r0, r1) = (c * per, rows.min((c + 1) * per));
        // SAFETY: chunk `c` covers rows `r0..r1 <= rows`, run once; chunks are disjoint, so this
        // is the only reference to these elements of `dx`, which outlives `run_chunks`.
        let dxs = dxp
            .as_ref()
            .map(|p| unsafe { std::slice::from_raw_parts_mut(p.get().add(r0 * n), (r1 - r0) * n) });
        let mut dw = if want_w {
            vec![T::zero(); n]
        } else {
            Vec::new()
        };
        let mut db = if want_b {
            vec![T::zero(); n]
        } else {
            Vec::new()
        };
        simd(|| op.block(r0, r1, dxs, &mut dw, &mut db));
        partials.lock()[c] = Some((dw, db));
    });
    let mut dweight = want_w.then(|| vec![T::zero(); n]);
    let mut dbias = want_b.then(|| vec![T::zero(); n]);
    let partials = std::mem::take(&mut *partials.lock());
    for (pw, pb) in partials.into_iter().flatten() {
        if let Some(acc) = dweight.as_mut() {
            acc.iter_mut().zip(&pw).for_each(|(a, &p)| *a += p);
        }
        if let Some(acc) = dbias.as_mut() {
            acc.iter_mut().zip(&pb).for_each(|(a, &p)| *a += p);
        }
    }
    [dx, dweight, dbias]
}

impl<T: Element> Rows<'_, T> {
    /// Rows `r0..r1`: their input gradients into `dx` (which starts at row `r0`) when given,
    /// and their weight and bias gradients added into `dw` and `db` (empty when not wanted),
    /// pairwise over blocks of [`ROW_BLOCK`] rows.
    fn block(&self, r0: usize, r1: usize, dx: Option<&mut [T]>, dw: &mut [T], db: &mut [T]) {
        if r1 - r0 <= ROW_BLOCK {
            self.leaf(r0, r1, dx, dw, db);
            return;
        }
        let mid = r0 + (r1 - r0) / 2;
        let (dx_l, dx_r) = match dx {
            Some(d) => {
                let (l, r) = d.split_at_mut((mid - r0) * self.n);
                (Some(l), Some(r))
            }
            None => (None, None),
        };
        self.block(r0, mid, dx_l, dw, db);
        let mut tw = vec![T::zero(); dw.len()];
        let mut tb = vec![T::zero(); db.len()];
        self.block(mid, r1, dx_r, &mut tw, &mut tb);
        dw.iter_mut().zip(&tw).for_each(|(a, &t)| *a += t);
        db.iter_mut().zip(&tb).for_each(|(a, &t)| *a += t);
    }

    /// Up to [`ROW_BLOCK`] rows, one after the other.
    #[inline(always)]
    fn leaf(&self, r0: usize, r1: usize, mut dx: Option<&mut [T]>, dw: &mut [T], db: &mut [T]) {
        let n = self.n;
        for r in r0..r1 {
            let (g, x) = (&self.g[r * n..(r + 1) * n], &self.x[r * n..(r + 1) * n]);
            let (mean, rstd) = stats(x, self.centre, self.eps, self.n_t);
            if let Some(d) = dx.as_deref_mut() {
                let d = &mut d[(r - r0) * n..(r - r0 + 1) * n];
                self.input_row(g, x, mean, rstd, d);
            }
            if !dw.is_empty() {
                dw.iter_mut()
                    .zip(g)
                    .zip(x)
                    .for_each(|((a, &g), &x)| *a += g * ((x - mean) * rstd));
            }
            if !db.is_empty() {
                db.iter_mut().zip(g).for_each(|(a, &g)| *a += g);
            }
        }
    }

    /// One row's input gradient into `d`.
    #[inline(always)]
    fn input_row(&self, g: &[T], x: &[T], mean: T, rstd: T, d: &mut [T]) {
        match self.weight {
            Some(w) => d
                .iter_mut()
                .zip(g)
                .zip(w)
                .for_each(|((d, &g), &w)| *d = g * w),
            None => d.copy_from_slice(g),
        }
        let n = self.n_t;
        let a = if self.centre {
            pairwise_sum(d) / n
        } else {
            T::zero()
        };
        let b = pairwise_zip(d, x, |gw, x| gw * ((x - mean) * rstd)) / n;
        d.iter_mut()
            .zip(x)
            .for_each(|(d, &x)| *d = rstd * ((*d - a) - ((x - mean) * rstd) * b));
    }
}
