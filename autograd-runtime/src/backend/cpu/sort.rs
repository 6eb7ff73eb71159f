//! Sorting along a dimension, for every dtype: the kernel behind `sort`, `argsort` and `topk`.
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
