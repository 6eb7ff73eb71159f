//! Sorting along a dimension, for every dtype: the kernel behind `sort` and `argsort`; and
//! `topk`'s selection ([`topk`]), which picks as PyTorch's CPU kernel does without sorting the
//! whole dimension.
//!
//! Generic over [`DataElement`]: floats (`f32`, `f64` and the halves) compare as `f64` with
//! PyTorch's order, NaN above every number (and NaNs equal to each other); integers and bools
//! compare as `i64`. The sort is always stable (Rust's merge sort): ties keep their order along
//! the dimension whatever `stable` asks, which PyTorch allows for `stable=False` and is what
//! PyTorch's CPU kernel gives too.

use std::cmp::Ordering;

use half::{bf16, f16};
use ndarray::Axis;

use super::any::with_data;
use crate::DataElement;
use crate::backend::{Buffer, ElemVec, Out};
use crate::layout::{Layout, view};

/// PyTorch's sort order of two elements (NaN is the largest float).
fn order<T: DataElement>(a: T, b: T) -> Ordering {
    if T::DTYPE.is_floating_point() {
        let (a, b) = (a.to_f64(), b.to_f64());
        match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        }
    } else {
        a.to_i64().cmp(&b.to_i64())
    }
}

/// The lanes of `d` (through `lx`) along `dim` sorted, ascending or `descending`, stably: the
/// values in `x`'s shape (C order) and, for each, its position along `dim` in `x`.
fn sort_lanes<T: DataElement>(
    d: &[T],
    lx: &Layout,
    dim: usize,
    descending: bool,
) -> (Vec<T>, Vec<usize>) {
    let a = view(d, lx);
    if a.ndim() == 0 {
        return (a.iter().copied().collect(), vec![0]);
    }
    let shape = &lx.shape;
    let n = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let numel: usize = shape.iter().product();
    let mut values = vec![T::default(); numel];
    let mut index = vec![0usize; numel];
    let mut lane_values: Vec<T> = Vec::with_capacity(n);
    let mut perm: Vec<usize> = Vec::with_capacity(n);
    // `lanes` runs over the other dims in C order: lane `l` is outer `l / inner`, inner
    // `l % inner`, and its `j`-th element sits at `(outer * n + j) * inner + inner_pos`.
    for (l, lane) in a.lanes(Axis(dim)).into_iter().enumerate() {
        lane_values.clear();
        lane_values.extend(lane.iter().copied());
        perm.clear();
        perm.extend(0..n);
        if descending {
            perm.sort_by(|&p, &q| order(lane_values[q], lane_values[p]));
        } else {
            perm.sort_by(|&p, &q| order(lane_values[p], lane_values[q]));
        }
        let (outer, at) = (l / inner, l % inner);
        for (j, &p) in perm.iter().enumerate() {
            let pos = (outer * n + j) * inner + at;
            values[pos] = lane_values[p];
            index[pos] = p;
        }
    }
    (values, index)
}

/// `x` sorted along `dim` (see the module's order) and the positions along `dim` the values
/// came from, both in `x`'s shape.
pub(crate) fn sort(x: &Buffer, lx: &Layout, dim: usize, descending: bool) -> (Out, Vec<usize>) {
    with_data!(x, |d: T| {
        let (values, index) = sort_lanes::<T>(d, lx, dim, descending);
        (
            (Buffer::host(ElemVec::from_vec(values)), lx.shape.clone()),
            index,
        )
    })
}

/// The positions along `dim` of the `k` largest (or smallest) elements of each lane of `d`
/// (through `lx`), exactly as PyTorch's CPU `topk` picks and orders them (`topk_impl_loop`):
/// the lane as `(value, position)` pairs, then, when `k * 64 <= n`, `std::partial_sort` of the
/// first `k`, otherwise `std::nth_element` at `k - 1` and (`sorted`) `std::sort` of the `k - 1`
/// before it, each as libstdc++ runs it (see [`stl`]), with PyTorch's comparison: NaN above
/// every number. Equal values come in the order those algorithms leave them, which is
/// PyTorch's (not the lower position first). Floats compare as `f64` (PyTorch's accumulate
/// type on the CPU; the order is the same), integers as `i64`. Laid out in the C order of
/// `x`'s shape with `dim` of size `k`.
pub(crate) fn topk(
    x: &Buffer,
    lx: &Layout,
    dim: usize,
    k: usize,
    largest: bool,
    sorted: bool,
) -> Vec<usize> {
    with_data!(x, |d: T| {
        if T::DTYPE.is_floating_point() {
            select_lanes(
                d,
                lx,
                dim,
                k,
                largest,
                sorted,
                |v: T| v.to_f64(),
                f64::is_nan,
            )
        } else {
            select_lanes(d, lx, dim, k, largest, sorted, |v: T| v.to_i64(), |_| false)
        }
    })
}

/// [`topk`] with the comparison key `key` (whose NaNs `is_nan` finds).
#[allow(clippy::too_many_arguments)]
fn select_lanes<T: DataElement, K: Copy + PartialOrd>(
    d: &[T],
    lx: &Layout,
    dim: usize,
    k: usize,
    largest: bool,
    sorted: bool,
    key: impl Fn(T) -> K,
    is_nan: impl Fn(K) -> bool,
) -> Vec<usize> {
    let a = view(d, lx);
    let shape = &lx.shape;
    let n = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let outer: usize = shape[..dim].iter().product();
    let mut out = vec![0usize; outer * k * inner];
    if k == 0 {
        return out;
    }
    let mut queue: Vec<(K, usize)> = Vec::with_capacity(n);
    // As in `sort_lanes`: lane `l` is outer `l / inner`, inner `l % inner`.
    for (l, lane) in a.lanes(Axis(dim)).into_iter().enumerate() {
        queue.clear();
        queue.extend(lane.iter().enumerate().map(|(j, &v)| (key(v), j)));
        if largest {
            let before =
                |p: &(K, usize), q: &(K, usize)| (is_nan(p.0) && !is_nan(q.0)) || p.0 > q.0;
            pick(&mut queue, k, sorted, &before);
        } else {
            let before =
                |p: &(K, usize), q: &(K, usize)| (!is_nan(p.0) && is_nan(q.0)) || p.0 < q.0;
            pick(&mut queue, k, sorted, &before);
        }
        let (o, at) = (l / inner, l % inner);
        for (j, &(_, p)) in queue[..k].iter().enumerate() {
            out[(o * k + j) * inner + at] = p;
        }
    }
    out
}

/// The first `k` (at least 1) of `queue` in PyTorch's `topk` order (see [`topk`]).
fn pick<E: Copy>(queue: &mut [E], k: usize, sorted: bool, before: &impl Fn(&E, &E) -> bool) {
    if k * 64 <= queue.len() {
        stl::partial_sort(queue, k, before);
    } else {
        stl::nth_element(queue, k - 1, before);
        if sorted {
            stl::sort(&mut queue[..k - 1], before);
        }
    }
}

/// libstdc++'s `std::partial_sort`, `std::nth_element` and `std::sort` (GCC's
/// `bits/stl_algo.h` and `bits/stl_heap.h`), step for step, so that elements the comparison
/// finds equal end where PyTorch's CPU kernels leave them. `before(a, b)` is the strict weak
/// order (`comp(a, b)`). The "unguarded" loops of the originals are bounded here by the
/// slice's ends as well, which changes nothing where their guarantees hold and keeps every
/// index in bounds. The recursion of `introsort_loop` is at most `2 log2(n)` deep, as there.
mod stl {
    /// `std::__lg`: the floor of `log2(n)`, `n > 0`.
    fn lg(n: usize) -> usize {
        (usize::BITS - 1 - n.leading_zeros()) as usize
    }

    /// `std::__insertion_sort` of the whole slice.
    fn insertion_sort<E: Copy>(a: &mut [E], before: &impl Fn(&E, &E) -> bool) {
        for i in 1..a.len() {
            if before(&a[i], &a[0]) {
                let v = a[i];
                a.copy_within(0..i, 1);
                a[0] = v;
            } else {
                linear_insert(a, i, before);
            }
        }
    }

    /// `std::__unguarded_linear_insert`: `a[last]` moved left past the elements after it.
    fn linear_insert<E: Copy>(a: &mut [E], mut last: usize, before: &impl Fn(&E, &E) -> bool) {
        let v = a[last];
        while last > 0 && before(&v, &a[last - 1]) {
            a[last] = a[last - 1];
            last -= 1;
        }
        a[last] = v;
    }

    /// `std::__move_median_to_first`: the median of `a[x]`, `a[y]`, `a[z]` swapped to `a[r]`.
    fn move_median_to_first<E: Copy>(
        a: &mut [E],
        r: usize,
        (x, y, z): (usize, usize, usize),
        before: &impl Fn(&E, &E) -> bool,
    ) {
        let m = if before(&a[x], &a[y]) {
            if before(&a[y], &a[z]) {
                y
            } else if before(&a[x], &a[z]) {
                z
            } else {
                x
            }
        } else if before(&a[x], &a[z]) {
            x
        } else if before(&a[y], &a[z]) {
            z
        } else {
            y
        };
        a.swap(r, m);
    }

    /// `std::__unguarded_partition` of `a[f..l]` around the pivot `a[p]` (`p < f`).
    fn partition<E: Copy>(
        a: &mut [E],
        mut f: usize,
        mut l: usize,
        p: usize,
        before: &impl Fn(&E, &E) -> bool,
    ) -> usize {
        loop {
            while f < a.len() && before(&a[f], &a[p]) {
                f += 1;
            }
            l -= 1;
            while l > p && before(&a[p], &a[l]) {
                l -= 1;
            }
            if f >= l {
                return f;
            }
            a.swap(f, l);
            f += 1;
        }
    }

    /// `std::__unguarded_partition_pivot` of `a[f..l]`: the median of three as the pivot.
    fn partition_pivot<E: Copy>(
        a: &mut [E],
        f: usize,
        l: usize,
        before: &impl Fn(&E, &E) -> bool,
    ) -> usize {
        let mid = f + (l - f) / 2;
        move_median_to_first(a, f, (f + 1, mid, l - 1), before);
        partition(a, f + 1, l, f, before)
    }

    /// `std::__push_heap` of the heap at `a[f..]`.
    fn push_heap<E: Copy>(
        a: &mut [E],
        f: usize,
        mut hole: usize,
        top: usize,
        v: E,
        before: &impl Fn(&E, &E) -> bool,
    ) {
        while hole > top {
            let parent = (hole - 1) / 2;
            if !before(&a[f + parent], &v) {
                break;
            }
            a[f + hole] = a[f + parent];
            hole = parent;
        }
        a[f + hole] = v;
    }

    /// `std::__adjust_heap` of the heap `a[f..f + len]`.
    fn adjust_heap<E: Copy>(
        a: &mut [E],
        f: usize,
        mut hole: usize,
        len: usize,
        v: E,
        before: &impl Fn(&E, &E) -> bool,
    ) {
        let top = hole;
        let mut second = hole;
        while second < len.saturating_sub(1) / 2 {
            second = 2 * (second + 1);
            if before(&a[f + second], &a[f + second - 1]) {
                second -= 1;
            }
            a[f + hole] = a[f + second];
            hole = second;
        }
        if len & 1 == 0 && len >= 2 && second == (len - 2) / 2 {
            second = 2 * (second + 1);
            a[f + hole] = a[f + second - 1];
            hole = second - 1;
        }
        push_heap(a, f, hole, top, v, before);
    }

    /// `std::__make_heap` of `a[f..l]`.
    fn make_heap<E: Copy>(a: &mut [E], f: usize, l: usize, before: &impl Fn(&E, &E) -> bool) {
        let len = l - f;
        if len < 2 {
            return;
        }
        let mut parent = (len - 2) / 2;
        loop {
            let v = a[f + parent];
            adjust_heap(a, f, parent, len, v, before);
            if parent == 0 {
                return;
            }
            parent -= 1;
        }
    }

    /// `std::__pop_heap`: the top of the heap `a[f..l]` to `a[r]`, `a[r]` into the heap.
    fn pop_heap<E: Copy>(
        a: &mut [E],
        f: usize,
        l: usize,
        r: usize,
        before: &impl Fn(&E, &E) -> bool,
    ) {
        let v = a[r];
        a[r] = a[f];
        adjust_heap(a, f, 0, l - f, v, before);
    }

    /// `std::__heap_select`: the `m - f` first elements of `a[f..l]` into a heap at `a[f..m]`.
    fn heap_select<E: Copy>(
        a: &mut [E],
        f: usize,
        m: usize,
        l: usize,
        before: &impl Fn(&E, &E) -> bool,
    ) {
        make_heap(a, f, m, before);
        for i in m..l {
            if before(&a[i], &a[f]) {
                pop_heap(a, f, m, i, before);
            }
        }
    }

    /// `std::__sort_heap` of `a[f..l]`.
    fn sort_heap<E: Copy>(a: &mut [E], f: usize, mut l: usize, before: &impl Fn(&E, &E) -> bool) {
        while l - f > 1 {
            l -= 1;
            pop_heap(a, f, l, l, before);
        }
    }

    /// `std::partial_sort(a, a + k, a + n)`: the first `k` elements in order.
    pub(super) fn partial_sort<E: Copy>(a: &mut [E], k: usize, before: &impl Fn(&E, &E) -> bool) {
        heap_select(a, 0, k, a.len(), before);
        sort_heap(a, 0, k, before);
    }

    /// `std::nth_element(a, a + nth, a + n)`.
    pub(super) fn nth_element<E: Copy>(a: &mut [E], nth: usize, before: &impl Fn(&E, &E) -> bool) {
        let (mut f, mut l) = (0, a.len());
        if f == l || nth == l {
            return;
        }
        let mut depth = lg(l - f) * 2;
        while l - f > 3 {
            if depth == 0 {
                heap_select(a, f, nth + 1, l, before);
                a.swap(f, nth);
                return;
            }
            depth -= 1;
            let cut = partition_pivot(a, f, l, before);
            if cut <= nth {
                f = cut;
            } else {
                l = cut;
            }
        }
        insertion_sort(&mut a[f..l], before);
    }

    /// `std::sort(a, a + n)`: introsort, then the final insertion sort.
    pub(super) fn sort<E: Copy>(a: &mut [E], before: &impl Fn(&E, &E) -> bool) {
        if a.is_empty() {
            return;
        }
        introsort_loop(a, 0, a.len(), lg(a.len()) * 2, before);
        if a.len() > 16 {
            insertion_sort(&mut a[..16], before);
            for i in 16..a.len() {
                linear_insert(a, i, before);
            }
        } else {
            insertion_sort(a, before);
        }
    }

    /// `std::__introsort_loop` of `a[f..l]`.
    fn introsort_loop<E: Copy>(
        a: &mut [E],
        f: usize,
        mut l: usize,
        mut depth: usize,
        before: &impl Fn(&E, &E) -> bool,
    ) {
        while l - f > 16 {
            if depth == 0 {
                // `std::__partial_sort(f, l, l)`.
                heap_select(a, f, l, l, before);
                sort_heap(a, f, l, before);
                return;
            }
            depth -= 1;
            let cut = partition_pivot(a, f, l, before);
            introsort_loop(a, cut, l, depth, before);
            l = cut;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(v: Vec<f64>, shape: &[usize], dim: usize, descending: bool) -> (Vec<f64>, Vec<usize>) {
        let b = Buffer::host(ElemVec::from_vec(v));
        let ((out, s), index) = sort(&b, &Layout::contiguous(shape), dim, descending);
        assert_eq!(&s[..], shape);
        (out.as_slice::<f64>().unwrap().to_vec(), index)
    }

    #[test]
    fn sorts_each_lane_with_nan_largest_and_ties_in_order() {
        let nan = f64::NAN;
        let (v, i) = run(vec![2.0, nan, 1.0, 2.0], &[4], 0, false);
        assert_eq!(i, vec![2, 0, 3, 1]);
        assert_eq!(&v[..3], &[1.0, 2.0, 2.0]);
        assert!(v[3].is_nan());
        let (v, i) = run(vec![2.0, nan, 1.0, 2.0], &[4], 0, true);
        assert_eq!(i, vec![1, 0, 3, 2]);
        assert_eq!(&v[1..], &[2.0, 2.0, 1.0]);
        // Along dim 0 of a [2, 3]: each column sorted on its own.
        let (v, i) = run(vec![5.0, 0.0, 2.0, 1.0, 4.0, 2.0], &[2, 3], 0, false);
        assert_eq!(v, vec![1.0, 0.0, 2.0, 5.0, 4.0, 2.0]);
        assert_eq!(i, vec![1, 0, 0, 0, 1, 1]);
    }

    #[test]
    fn integers_and_bools_sort_as_i64() {
        let b = Buffer::host(ElemVec::from_vec(vec![true, false, true]));
        let ((out, _), i) = sort(&b, &Layout::contiguous(&[3]), 0, false);
        assert_eq!(out.as_slice::<bool>().unwrap(), &[false, true, true]);
        assert_eq!(i, vec![1, 0, 2]);
        let b = Buffer::host(ElemVec::from_vec(vec![200u8, 3, 255]));
        let ((out, _), i) = sort(&b, &Layout::contiguous(&[3]), 0, true);
        assert_eq!(out.as_slice::<u8>().unwrap(), &[255, 200, 3]);
        assert_eq!(i, vec![2, 0, 1]);
    }
}
