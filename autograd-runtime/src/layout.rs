//! Shape, strides and offset of a tensor inside its storage, and the view arithmetic on them.

use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};
use smallvec::SmallVec;

use crate::{Error, Result};

/// A small inline vector of dimension sizes or strides (no allocation up to 4 dims).
pub(crate) type Dims = SmallVec<[usize; 4]>;

/// Where a tensor's elements sit in its storage: element `[i0, i1, ..]` is at
/// `offset + Σ ik * strides[k]`. Strides of 0 come from `expand`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) shape: Dims,
    pub(crate) strides: Dims,
    pub(crate) offset: usize,
}

/// Whether two shapes are equal, compared element by element inline: `==` on slices calls
/// `memcmp`, which costs more than the comparison itself for the few dimensions of a shape (none
/// for a scalar).
#[inline(always)]
pub(crate) fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The number of elements of `shape`, or PyTorch's error when the product overflows `usize`.
pub(crate) fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            Error::shape(
                op,
                format!("storage size calculation overflowed with sizes={shape:?}"),
            )
        })
}

/// Allocations from this size up are tried first (`try_reserve`), so that a request the
/// machine cannot serve is an error instead of an abort. Smaller ones are not worth the probe.
const PROBE_BYTES: usize = 1 << 30;

/// Checks that `numel` elements of `elem_size` bytes can be allocated: `Error::Device` on the
/// CPU with PyTorch's allocator message otherwise (Rust aborts the process on a failed
/// allocation, so a too-large request must be caught before it is made).
pub(crate) fn check_alloc(op: &'static str, numel: usize, elem_size: usize) -> Result<()> {
    let fail = |bytes: String| Error::Device {
        device: crate::Device::Cpu,
        op,
        message: format!("can't allocate memory: you tried to allocate {bytes} bytes"),
    };
    let Some(bytes) = numel.checked_mul(elem_size) else {
        return Err(fail(format!("{numel} x {elem_size}")));
    };
    if bytes < PROBE_BYTES {
        return Ok(());
    }
    if bytes > isize::MAX as usize {
        return Err(fail(bytes.to_string()));
    }
    // Reserving address space is cheap (pages are touched only when written), and the probe
    // is freed at once.
    let mut probe: Vec<u8> = Vec::new();
    probe
        .try_reserve_exact(bytes)
        .map_err(|_| fail(bytes.to_string()))
}

impl Layout {
    /// A C-contiguous layout of `shape` at offset 0. (Always inlined: it is on the path of every
    /// new tensor, and LLVM's choice to call it flipped with unrelated changes elsewhere.)
    #[inline(always)]
    pub(crate) fn contiguous(shape: &[usize]) -> Layout {
        if shape.is_empty() {
            // 0-dim (every gradient of a scalar loss): nothing to build.
            return Layout {
                shape: Dims::new(),
                strides: Dims::new(),
                offset: 0,
            };
        }
        Layout {
            shape: Dims::from_slice(shape),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    pub(crate) fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the elements are dense, in C order.
    /// Whether this is exactly [`Layout::contiguous`]`(shape)`: the same shape, offset 0 and
    /// the same strides (not merely contiguous: a size-1 dimension's stride counts too, since
    /// `Tensor::strides` shows it), checked without building it.
    #[inline]
    pub(crate) fn is_contiguous_layout_of(&self, shape: &[usize]) -> bool {
        if self.offset != 0 || !same_dims(&self.shape, shape) || self.strides.len() != shape.len() {
            return false;
        }
        // `contiguous_strides`, compared as it is computed.
        let mut expected = 1usize;
        for (&stride, &size) in self.strides.iter().zip(shape).rev() {
            if stride != expected {
                return false;
            }
            expected *= size.max(1);
        }
        true
    }

    /// Whether the strides are [`contiguous_strides`] of the shape (the offset aside): the
    /// contiguous layout whose size-1 dims have their usual strides too, whose view strides
    /// ([`Layout::view_strides`]) for any shape are contiguous ones.
    #[inline]
    pub(crate) fn has_contiguous_strides(&self) -> bool {
        let mut expected = 1usize;
        for (&stride, &size) in self.strides.iter().zip(&self.shape).rev() {
            if stride != expected {
                return false;
            }
            expected *= size.max(1);
        }
        true
    }

    #[inline]
    pub(crate) fn is_contiguous(&self) -> bool {
        let mut expected = 1;
        for (&size, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if size != 1 && stride != expected {
                return false;
            }
            expected *= size;
        }
        true
    }

    /// Whether the elements fill a dense block of memory with none repeated, in some dimension
    /// order (PyTorch's `is_non_overlapping_and_dense`): contiguous, transposed, permuted.
    pub(crate) fn is_non_overlapping_and_dense(&self) -> bool {
        let mut dims: Dims = (0..self.shape.len())
            .filter(|&d| self.shape[d] != 1)
            .collect();
        dims.sort_by_key(|&d| self.strides[d]);
        let mut expected = 1;
        for d in dims {
            if self.strides[d] != expected {
                return false;
            }
            expected *= self.shape[d];
        }
        true
    }

    /// The strides of a view of these elements with `shape` (the same number of elements), or
    /// `None` when no strides describe it because a new dim would span two of the runs of
    /// evenly strided memory the old dims form: PyTorch's `computeStride`, which decides
    /// whether `view` may alias and `reshape` returns a view.
    pub(crate) fn view_strides(&self, shape: &[usize]) -> Option<Dims> {
        let (old_shape, old_strides) = (&self.shape[..], &self.strides[..]);
        let Some(&last_stride) = old_strides.last() else {
            // A 0-dim tensor: every new dim has size 1.
            return Some(shape.iter().map(|_| 1).collect());
        };
        let mut new_strides: Dims = smallvec::smallvec![0; shape.len()];
        if old_shape.contains(&0) {
            // No element: the strides are arbitrary. PyTorch (as NumPy) keeps them for the same
            // shape and takes contiguous ones otherwise.
            if same_dims(old_shape, shape) {
                return Some(self.strides.clone());
            }
            return Some(contiguous_strides(shape));
        }
        // Walk the old dims from the last, in chunks of dims that are evenly strided together
        // (a dim's stride is the product of the later dims of its chunk times the chunk's last
        // stride); the new dims must split each chunk exactly, in order.
        let mut view_d = shape.len();
        let mut chunk_base_stride = last_stride;
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..old_shape.len()).rev() {
            tensor_numel *= old_shape[tensor_d];
            let chunk_ends = tensor_d == 0
                || (old_shape[tensor_d - 1] != 1
                    && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
            if !chunk_ends {
                continue;
            }
            while view_d > 0 && (view_numel < tensor_numel || shape[view_d - 1] == 1) {
                view_d -= 1;
                new_strides[view_d] = view_numel * chunk_base_stride;
                view_numel *= shape[view_d];
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
        (view_d == 0).then_some(new_strides)
    }

    pub(crate) fn transpose(&self, d0: usize, d1: usize) -> Layout {
        let mut l = self.clone();
        l.shape.swap(d0, d1);
        l.strides.swap(d0, d1);
        l
    }

    pub(crate) fn permute(&self, dims: &[usize]) -> Layout {
        Layout {
            shape: dims.iter().map(|&d| self.shape[d]).collect(),
            strides: dims.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        }
    }

    pub(crate) fn narrow(&self, dim: usize, start: usize, len: usize) -> Layout {
        let mut l = self.clone();
        l.offset += start * l.strides[dim];
        l.shape[dim] = len;
        l
    }

    /// Broadcast to `shape` (PyTorch `expand`): new leading dims and size-1 dims get stride 0.
    pub(crate) fn expand(&self, shape: &[usize]) -> Result<Layout> {
        checked_numel("expand", shape)?;
        let extra = shape.len().checked_sub(self.shape.len()).ok_or_else(|| {
            Error::shape(
                "expand",
                format!(
                    "the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                    shape.len(),
                    self.shape.len()
                ),
            )
        })?;
        let mut strides = Dims::with_capacity(shape.len());
        for (i, &target) in shape.iter().enumerate() {
            if i < extra {
                strides.push(0);
                continue;
            }
            let (size, stride) = (self.shape[i - extra], self.strides[i - extra]);
            if size == target {
                strides.push(stride);
            } else if size == 1 {
                strides.push(0);
            } else {
                return Err(Error::shape(
                    "expand",
                    format!(
                        "The expanded size of the tensor ({target}) must match the existing size ({size}) at non-singleton dimension {i}.  Target sizes: {shape:?}.  Tensor sizes: {:?}",
                        self.shape.as_slice()
                    ),
                ));
            }
        }
        Ok(Layout {
            shape: shape.into(),
            strides,
            offset: self.offset,
        })
    }
}

/// C-order strides for `shape`.
#[inline]
pub(crate) fn contiguous_strides(shape: &[usize]) -> Dims {
    if shape.len() <= 1 {
        // 0-dim and 1-dim tensors: nothing to multiply.
        return shape.iter().map(|_| 1).collect();
    }
    let mut strides: Dims = smallvec::smallvec![0; shape.len()];
    let mut acc = 1;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= n.max(1);
    }
    strides
}

/// Where an element-wise op's result puts its elements when they are not in C order: `perm`
/// lists the result's dims from the outermost in memory to the innermost, and `strides` are its
/// strides (dense in that order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ElementwiseOrder {
    pub(crate) perm: Dims,
    pub(crate) strides: Dims,
}

impl ElementwiseOrder {
    /// `operand` (broadcastable to the result's shape) as the backend sees it: given the result's
    /// number of dims (new leading dims of size 1, stride 0) and permuted by `perm`, so that a
    /// kernel writing its result densely in C order writes it in this order.
    pub(crate) fn present(&self, operand: &Layout) -> Layout {
        let pad = self.perm.len() - operand.shape.len();
        let dim = |d: usize| {
            d.checked_sub(pad)
                .map_or((1, 0), |k| (operand.shape[k], operand.strides[k]))
        };
        Layout {
            shape: self.perm.iter().map(|&d| dim(d).0).collect(),
            strides: self.perm.iter().map(|&d| dim(d).1).collect(),
            offset: operand.offset,
        }
    }

    /// The result's layout, over a buffer the kernel wrote densely in `perm`'s order.
    pub(crate) fn result(self, shape: &[usize]) -> Layout {
        Layout {
            shape: shape.into(),
            strides: self.strides,
            offset: 0,
        }
    }
}

/// The layout PyTorch's `TensorIterator` gives the new result of an element-wise op over
/// `operands` (broadcast to `shape`), or `None` when it is plain C order (always so when every
/// operand is contiguous: the fast path).
///
/// PyTorch's rules, in its order: operands of the result's shape that are all dense with the
/// same strides give the result those strides (`FastSetupType::NON_OVERLAPPING_DENSE`);
/// otherwise the dims are sorted from the innermost by the operands' strides, the first operand
/// whose strides differ deciding, broadcast dims skipped, equal strides putting the smaller dim
/// inside (`reorder_dimensions`), and the result is dense in that order. So `x.t().exp()` is
/// transposed like `x.t()`, and `x.t() + y` follows `x.t()`.
pub(crate) fn elementwise_order(operands: &[&Layout], shape: &[usize]) -> Option<ElementwiseOrder> {
    if operands.iter().all(|l| l.is_contiguous()) || shape.contains(&0) {
        return None;
    }
    let n = shape.len();
    let same_dense = operands.iter().all(|l| {
        same_dims(&l.shape, shape)
            && l.is_non_overlapping_and_dense()
            && l.strides == operands[0].strides
    });
    if same_dense {
        let strides = operands[0].strides.clone();
        let mut perm: Dims = (0..n).collect();
        perm.sort_by(|&a, &b| strides[b].cmp(&strides[a]).then(a.cmp(&b)));
        return Some(ElementwiseOrder { perm, strides });
    }
    // Each operand's stride along each dim of the result: 0 where it is broadcast.
    let stride = |l: &Layout, d: usize| {
        let pad = n - l.shape.len();
        d.checked_sub(pad).map_or(0, |k| {
            if l.shape[k] == 1 && shape[d] != 1 {
                0
            } else {
                l.strides[k]
            }
        })
    };
    // 1: `d0` goes outside `d1`; -1: inside; 0: no operand decides (PyTorch's `should_swap`).
    let should_swap = |d0: usize, d1: usize| -> i8 {
        for l in operands {
            let (s0, s1) = (stride(l, d0), stride(l, d1));
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
            if shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    // From the innermost dim out; an insertion sort that leaves undecided pairs as they are.
    let mut inner_first: Dims = (0..n).rev().collect();
    for i in 1..n {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match should_swap(inner_first[d0], inner_first[d1]) {
                1 => {
                    inner_first.swap(d0, d1);
                    d1 = d0;
                }
                -1 => break,
                _ => {}
            }
        }
    }
    if inner_first.iter().rev().copied().eq(0..n) {
        return None;
    }
    let mut strides: Dims = smallvec::smallvec![0; n];
    let mut acc = 1;
    for &d in &inner_first {
        strides[d] = acc;
        acc *= shape[d];
    }
    inner_first.reverse();
    Some(ElementwiseOrder {
        perm: inner_first,
        strides,
    })
}

/// Whether `shape` can be broadcast (expanded) to `target`.
pub(crate) fn is_expandable_to(shape: &[usize], target: &[usize]) -> bool {
    if shape.len() > target.len() {
        return false;
    }
    shape
        .iter()
        .rev()
        .zip(target.iter().rev())
        .all(|(&s, &t)| s == t || s == 1)
}

/// Resolves a possibly negative dimension index against `ndim` dims.
pub(crate) fn wrap_dim(dim: isize, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as isize;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(Error::DimOutOfRange {
            dim,
            min: -n,
            max: n - 1,
        });
    }
    Ok(d as usize)
}

/// A read-only ndarray view of `data` laid out as `layout`.
#[inline]
pub(crate) fn view<'a, T>(data: &'a [T], layout: &Layout) -> ArrayViewD<'a, T> {
    if layout.shape.contains(&0) {
        // No element: any strides describe it, and ndarray rejects some over an empty slice.
        return ArrayViewD::from_shape(IxDyn(&layout.shape), &[])
            .expect("invariant: an empty shape fits an empty slice");
    }
    let shape = IxDyn(&layout.shape).strides(IxDyn(&layout.strides));
    ArrayViewD::from_shape(shape, &data[layout.offset.min(data.len())..])
        .expect("invariant: a tensor's layout stays inside its storage")
}

/// A mutable ndarray view of `data` laid out as `layout`.
#[inline]
pub(crate) fn view_mut<'a, T>(data: &'a mut [T], layout: &Layout) -> ArrayViewMutD<'a, T> {
    if layout.shape.contains(&0) {
        return ArrayViewMutD::from_shape(IxDyn(&layout.shape), &mut [])
            .expect("invariant: an empty shape fits an empty slice");
    }
    let shape = IxDyn(&layout.shape).strides(IxDyn(&layout.strides));
    let offset = layout.offset.min(data.len());
    ArrayViewMutD::from_shape(shape, &mut data[offset..])
        .expect("invariant: an in-place target has a non-overlapping layout inside its storage")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguity_and_views() {
        let l = Layout::contiguous(&[2, 3]);
        assert_eq!(l.strides.as_slice(), &[3, 1]);
        assert!(l.is_contiguous());
        let t = l.transpose(0, 1);
        assert!(!t.is_contiguous());
        let n = l.narrow(1, 1, 2);
        assert_eq!((n.offset, n.shape.as_slice()), (1, &[2, 2][..]));
        let e = Layout::contiguous(&[3, 1])
            .expand(&[2, 3, 4])
            .expect("expandable");
        assert_eq!(e.strides.as_slice(), &[0, 1, 0]);
        assert!(Layout::contiguous(&[3]).expand(&[4]).is_err());
        assert_eq!(wrap_dim(-1, 3).expect("valid"), 2);
    }

    /// `elementwise_order` against the strides PyTorch 2.15 gives the results (`.stride()` of
    /// `x.t().exp()`, `x.t() + y`, ...).
    #[test]
    fn elementwise_results_take_pytorchs_strides() {
        let l = |shape: &[usize], strides: &[usize]| Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset: 0,
        };
        let strides = |ops: &[&Layout], shape: &[usize]| -> Vec<usize> {
            elementwise_order(ops, shape).map_or_else(
                || contiguous_strides(shape).to_vec(),
                |o| o.strides.to_vec(),
            )
        };
        let xt = l(&[3, 2], &[1, 3]); // randn(2, 3).t()
        let y = Layout::contiguous(&[3, 2]);
        assert_eq!(strides(&[&xt], &[3, 2]), [1, 3]);
        assert_eq!(strides(&[&xt, &y], &[3, 2]), [1, 3]);
        assert_eq!(strides(&[&y, &xt], &[3, 2]), [2, 1]);
        assert_eq!(strides(&[&xt, &Layout::contiguous(&[2])], &[3, 2]), [1, 3]);
        assert_eq!(
            strides(&[&xt, &Layout::contiguous(&[1, 2])], &[3, 2]),
            [1, 3]
        );
        // randn(2, 3, 4).permute(2, 0, 1), alone and beside a contiguous operand.
        let p = l(&[4, 2, 3], &[1, 12, 4]);
        assert_eq!(strides(&[&p], &[4, 2, 3]), [1, 12, 4]);
        let p = l(&[3, 4, 2], &[4, 1, 12]); // randn(2, 3, 4).permute(1, 2, 0)
        let q = Layout::contiguous(&[3, 4, 2]);
        assert_eq!(strides(&[&q, &p], &[3, 4, 2]), [8, 2, 1]);
        assert_eq!(strides(&[&p, &q], &[3, 4, 2]), [4, 1, 12]);
        // Not dense (randn(3, 8)[:, ::2]) or broadcast (randn(3, 1).expand(3, 4), and that
        // permuted): C order.
        assert_eq!(strides(&[&l(&[3, 4], &[8, 2])], &[3, 4]), [4, 1]);
        assert_eq!(strides(&[&l(&[3, 4], &[1, 0])], &[3, 4]), [4, 1]);
        assert_eq!(
            strides(&[&l(&[5, 3, 4], &[0, 4, 1])], &[5, 3, 4]),
            [12, 4, 1]
        );
        // randn(4, 1, 3).permute(2, 1, 0): a size-1 dim's stride is kept as it is.
        let w = l(&[3, 1, 4], &[1, 3, 3]);
        assert_eq!(strides(&[&w], &[3, 1, 4]), [1, 3, 3]);
        assert_eq!(
            strides(&[&w, &Layout::contiguous(&[3, 1, 4])], &[3, 1, 4]),
            [1, 3, 3]
        );
        // A permuted operand as the backend sees it is contiguous.
        let o = elementwise_order(&[&xt], &[3, 2]).expect("transposed");
        assert!(o.present(&xt).is_contiguous());
        assert!(elementwise_order(&[&y, &y], &[3, 2]).is_none());
    }

    /// `view_strides` against PyTorch 2.15's `view(..).stride()` (`None`: its "view size is not
    /// compatible with input tensor's size and stride" error).
    #[test]
    fn view_strides_are_pytorchs() {
        let layout = |shape: &[usize], strides: &[usize]| Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset: 0,
        };
        /// Old shape, old strides, new shape, PyTorch's new strides.
        type Case = (
            &'static [usize],
            &'static [usize],
            &'static [usize],
            Option<&'static [usize]>,
        );
        let cases: &[Case] = &[
            // `zeros(1, 3).t()`: a size-1 dim keeps its stride.
            (&[3, 1], &[1, 3], &[3, 1], Some(&[1, 3])),
            (&[3, 1], &[1, 3], &[1, 3, 1], Some(&[3, 1, 3])),
            (&[3, 1], &[1, 3], &[3], Some(&[1])),
            // `zeros(2, 3, 4).transpose(1, 2)`: split, but not merged across the transpose.
            (&[2, 4, 3], &[12, 1, 4], &[2, 2, 2, 3], Some(&[12, 2, 1, 4])),
            (&[2, 4, 3], &[12, 1, 4], &[8, 3], None),
            (&[2, 4, 3], &[12, 1, 4], &[2, 12], None),
            // `zeros(3).expand(4, 3)`.
            (&[4, 3], &[0, 1], &[4, 1, 3], Some(&[0, 3, 1])),
            (&[4, 3], &[0, 1], &[2, 2, 3], Some(&[0, 0, 1])),
            (&[4, 3], &[0, 1], &[12], None),
            // `zeros(3, 4)[:, 1:2]`, flattened.
            (&[3, 1], &[4, 1], &[3], Some(&[4])),
            // No elements: the same shape keeps its strides, another gets contiguous ones.
            (&[3, 0], &[4, 1], &[3, 0], Some(&[4, 1])),
            (&[3, 0], &[4, 1], &[0, 5], Some(&[5, 1])),
            (&[0, 3], &[1, 4], &[0, 3], Some(&[1, 4])),
            // 0-dim.
            (&[], &[], &[1, 1], Some(&[1, 1])),
        ];
        for &(shape, strides, new, expected) in cases {
            let got = layout(shape, strides).view_strides(new);
            assert_eq!(got.as_deref(), expected, "{shape:?} {strides:?} -> {new:?}");
        }
        // Contiguous strides give contiguous view strides (`reshape`'s shortcut).
        let shapes: &[&[usize]] = &[&[6], &[2, 3], &[1, 6], &[2, 1, 3], &[6, 1, 1], &[0, 3]];
        for old in shapes {
            let layout = Layout::contiguous(old);
            assert!(layout.has_contiguous_strides());
            for new in shapes
                .iter()
                .filter(|new| new.iter().product::<usize>() == layout.numel())
            {
                assert_eq!(
                    layout.view_strides(new),
                    Some(contiguous_strides(new)),
                    "{old:?} -> {new:?}"
                );
            }
        }
        assert!(!layout(&[3, 1], &[1, 3]).has_contiguous_strides());
        assert!(matches!(
            wrap_dim(3, 3),
            Err(Error::DimOutOfRange {
                dim: 3,
                min: -3,
                max: 2
            })
        ));
    }
}
