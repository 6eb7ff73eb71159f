//! `as_strided` and `as_strided_scatter` over a [`StridedGeometry`]: reading and writing a view's
//! elements inside a tensor shaped like its base. They carry gradients through in-place ops on
//! views (`CopySlices`, the regenerated `AsStridedBackward0`, in `graph/copy_slices.rs`); each is
//! the other's gradient, so double backward through those nodes is recorded like any op's.

use autograd_macros::{backward, differentiable, jvp};

use crate::graph::copy_slices::StridedGeometry;
use crate::{Result, Tensor};

/// The view's elements of `x` (shaped like the base), as a new contiguous tensor.
#[differentiable(builtin, crate = "crate", name = "AsStridedBackward0")]
fn as_strided(x: &Tensor, geometry: &StridedGeometry) -> Result<Tensor> {
    let ordered = geometry.base_ordered(x)?;
    geometry.region(&ordered).contiguous_data_owned()
}

#[backward(as_strided)]
fn as_strided_backward(grad: &Tensor, geometry: &StridedGeometry) -> Result<Tensor> {
    geometry.scatter_view_grad(grad)
}

// Both are linear (jointly, for the scatter): the same op on the tangents, an absent one as
// zeros. The geometry is the base's shape and memory order, whatever the tangent's layout.
#[jvp(as_strided)]
fn as_strided_jvp(x_t: &Tensor, geometry: &StridedGeometry) -> Result<Tensor> {
    as_strided(x_t, geometry)
}

/// A copy of `x` (shaped like the base, in the base's memory order) whose view elements are
/// `src`'s. The view covers each element at most once.
#[differentiable(builtin, crate = "crate", name = "AsStridedScatterBackward0")]
fn as_strided_scatter(x: &Tensor, src: &Tensor, geometry: &StridedGeometry) -> Result<Tensor> {
    if geometry.repeats() {
        // PyTorch's `copy_` into such a view fails the same way (a `fill_` through an `expand`
        // of a tensor that requires grad: its backward writes the view's gradient).
        return Err(crate::Error::InternalOverlap);
    }
    let ordered = geometry.base_ordered(x)?;
    geometry.region(&ordered).copy_from(src)?;
    Ok(ordered)
}

#[backward(as_strided_scatter)]
fn as_strided_scatter_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    geometry: &StridedGeometry,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let for_x = if needs_input_grad[0] {
        let zeros = Tensor::filled(
            geometry.view.shape.as_slice(),
            0.0,
            grad.dtype(),
            grad.device(),
        )?;
        Some(grad.as_strided_scatter(&zeros, geometry)?)
    } else {
        None
    };
    let for_src = if needs_input_grad[1] {
        Some(grad.as_strided(geometry)?)
    } else {
        None
    };
    Ok((for_x, for_src))
}

#[jvp(as_strided_scatter)]
fn as_strided_scatter_jvp(
    x_t: Option<&Tensor>,
    src_t: Option<&Tensor>,
    x: &Tensor,
    src: &Tensor,
    geometry: &StridedGeometry,
) -> Result<Tensor> {
    let (x_t, src_t) = super::tangent_pair(x_t, src_t, x, src)?;
    as_strided_scatter(&x_t, &src_t, geometry)
}

impl Tensor {
    /// The elements `geometry`'s view covers in this tensor shaped like its base (recorded).
    pub(crate) fn as_strided(&self, geometry: &StridedGeometry) -> Result<Tensor> {
        as_strided(self, geometry)
    }

    /// This tensor (shaped like `geometry`'s base) with the view's elements replaced by `src`'s
    /// (recorded).
    pub(crate) fn as_strided_scatter(
        &self,
        src: &Tensor,
        geometry: &StridedGeometry,
    ) -> Result<Tensor> {
        as_strided_scatter(self, src, geometry)
    }

    /// A non-view alias of this tensor's storage with `layout`, outside autograd: for buffers
    /// the engine owns.
    pub(crate) fn reinterpret(&self, layout: crate::layout::Layout) -> Tensor {
        Tensor::from_parts(crate::sync::Arc::clone(&self.0.storage), layout)
    }
}
