//! The CPU backend: [`Cpu`], the [`Backend`] over host memory (also behind `Device::Virtual`),
//! and its kernels: element-wise maths with broadcasting, reductions, softmax, data movement and
//! random numbers, generic over [`Element`].
//!
//! Two tiers of kernels. `dense` works on contiguous buffers (and values repeated by `expand`),
//! split over the intra-op pool ([`parallel`]) with transcendental functions on SIMD lanes
//! ([`vmath`]): the path every wide tensor takes. The ndarray kernels (`elementwise`, `reduce`,
//! `movement`) take arbitrary strided views: broadcasting that is not one repeated block,
//! transposed operands, and the small tensors of scalar graphs.
//!
//! Every kernel accepts arbitrary strided views (transposed, sliced, broadcast with stride 0) and
//! returns a new array in standard (C-contiguous) layout with offset 0, so the caller can take its
//! buffer with `into_raw_vec_and_offset()`. Standard-layout inputs take slice-based fast paths that
//! allocate exactly one `Vec` and never enter `Zip`: that is what keeps the backward of a scalar
//! node cheap. Matrix multiplication (`matmul`, over the `gemm` crate) lives in its own file.

mod any;
pub(crate) mod buffer_cache;
mod conv;
mod convert;
mod dense;
pub(crate) mod dispatch;
mod elementwise;
mod formulas;
mod gather;
mod generated;
mod matmul;
mod movement;
mod norm;
pub(crate) mod optim;
pub(crate) mod parallel;
#[cfg(test)]
mod random;
mod reduce;
mod routes;
mod rows;
#[cfg(test)]
mod rows_tests;
mod scatter;
mod softmax;
mod sort;
pub(crate) mod vmath;

use ndarray::{Array0, Array1, Array2, ArrayD, ArrayViewD, CowArray, Dimension, IxDyn};

use crate::Element;

pub(crate) use crate::backend::op::{BinaryOp, UnaryOp};
pub use buffer_cache::{cached_bytes, empty_cache, set_cache_limit};
pub(crate) use elementwise::{BroadcastError, broadcast_shapes};
#[cfg(test)]
pub(crate) use formulas::erf_f64;
pub(crate) use formulas::{maximum, min_share, minimum, remainder};
pub(crate) use matmul::matmul;
pub(crate) use movement::to_contiguous;
pub use parallel::{num_threads, set_num_threads};
#[cfg(test)]
pub(crate) use random::randn;
pub(crate) use routes::Cpu;

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// Builds an owned standard-layout array (offset 0) from a buffer in row-major order.
///
/// 0- to 2-D shapes go through the fixed-dimension constructors: `IxDyn` stride set-up is a
/// measurable share of a scalar op's cost, and `into_dyn` is cheaper.
#[inline]
fn from_vec<T>(shape: IxDyn, data: Vec<T>) -> ArrayD<T> {
    const MSG: &str = "invariant: kernel buffers hold exactly the product of the shape";
    match *shape.slice() {
        [] => Array0::from_shape_vec((), data).expect(MSG).into_dyn(),
        [n] => {
            assert_eq!(n, data.len(), "{MSG}");
            Array1::from_vec(data).into_dyn()
        }
        [r, c] => Array2::from_shape_vec((r, c), data).expect(MSG).into_dyn(),
        _ => ArrayD::from_shape_vec(shape, data).expect(MSG),
    }
}

/// A standard-layout array of zeros of `shape`, its buffer from the buffer cache.
fn zeros_array<T: Element>(shape: IxDyn) -> ArrayD<T> {
    let n = shape.size();
    from_vec(shape, buffer_cache::zeroed(n))
}

/// Shape equality without a `memcmp` call (which dominated the cost of scalar ops).
#[inline]
fn same_shape(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The first element (in logical order) of a non-empty array, e.g. the value of a 0-dim one.
#[inline]
fn first<T: Copy>(a: &ArrayViewD<'_, T>) -> T {
    *a.first().expect("invariant: the array is not empty")
}

/// Converts an `f64` constant to `T`.
#[cfg(test)]
#[inline]
fn lit<T: Element>(v: f64) -> T {
    <T as crate::DataElement>::from_f64(v)
}

/// Returns `a` itself when it is in standard layout, else a standard-layout copy.
fn standard<T: Element>(a: ArrayViewD<'_, T>) -> CowArray<'_, T, IxDyn> {
    if a.is_standard_layout() {
        CowArray::from(a)
    } else {
        CowArray::from(to_contiguous(a))
    }
}

/// The elements of a standard-layout array, in row-major order.
fn std_slice<'a, T>(a: &'a CowArray<'_, T, IxDyn>) -> &'a [T] {
    a.as_slice()
        .expect("invariant: `standard` returns standard-layout arrays")
}

/// `(outer, len, inner)`: a standard-layout array of `shape` seen as a 3-D block around `dim`.
/// A 0-dim array is one element along its one (implicit) dim, as in PyTorch.
fn split_dims(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    if shape.is_empty() {
        return (1, 1, 1);
    }
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}

#[cfg(test)]
mod tests;
