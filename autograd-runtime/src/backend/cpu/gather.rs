//! Gather along a dimension: the gradient of `scatter_max_grad` (so `max_dim` has a double
//! backward).

use ndarray::{ArrayD, ArrayViewD, IxDyn};

use crate::Element;

/// `out[o, 0, i] = a[o, index[o, 0, i], i]` where `index` has `a`'s shape with size 1 at `dim`.
pub(crate) fn gather_dim<T: Element>(
    a: ArrayViewD<'_, T>,
    dim: usize,
    index: ArrayViewD<'_, usize>,
) -> ArrayD<T> {
    if a.ndim() == 0 {
        // A 0-dim tensor is its own only entry along "dim 0" (PyTorch wraps dim 0 of a scalar).
        return a.to_owned();
    }
    let mut out = super::zeros_array(IxDyn(index.shape()));
    for (pos, &k) in index.indexed_iter() {
        let mut src = pos.clone();
        src[dim] = k;
        out[pos] = a[src];
    }
    out
}

#[cfg(test)]
mod tests {
    use ndarray::{ArrayD, arr2};

    use super::gather_dim;

    #[test]
    fn gathers_from_a_0_dim_tensor() {
        let a = ndarray::arr0(2.5f64).into_dyn();
        let idx = ndarray::arr0(0usize).into_dyn();
        assert_eq!(gather_dim(a.view(), 0, idx.view()), a);
    }

    #[test]
    fn gathers_one_entry_per_row() {
        let a = arr2(&[[1.0f64, 5.0, 3.0], [7.0, 2.0, 0.0]]).into_dyn();
        let idx: ArrayD<usize> = arr2(&[[1usize], [0]]).into_dyn();
        assert_eq!(
            gather_dim(a.view(), 1, idx.view()),
            arr2(&[[5.0], [7.0]]).into_dyn()
        );
    }
}
