//! Reading and writing a tensor's elements through ndarray views, and the dtype dispatch used by
//! every op: one `match` on the dtype, then a monomorphised kernel from `backend/`.

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};

use super::layout::Layout;
use super::storage::Buffer;
use super::Tensor;
use crate::tensor::dtype::ElemVec;
use crate::{Device, Element, Error, Result};

/// A read-only ndarray view of `data` laid out as `layout`.
#[inline]
pub(crate) fn view<'a, T: Element>(data: &'a [T], layout: &Layout) -> ArrayViewD<'a, T> {
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
pub(crate) fn view_mut<'a, T: Element>(data: &'a mut [T], layout: &Layout) -> ArrayViewMutD<'a, T> {
    if layout.shape.contains(&0) {
        return ArrayViewMutD::from_shape(IxDyn(&layout.shape), &mut [])
            .expect("invariant: an empty shape fits an empty slice");
    }
    let shape = IxDyn(&layout.shape).strides(IxDyn(&layout.strides));
    let offset = layout.offset.min(data.len());
    ArrayViewMutD::from_shape(shape, &mut data[offset..])
        .expect("invariant: an in-place target has a non-overlapping layout inside its storage")
}

/// Runs `$body` with `$v` bound to an ndarray view of `$t`'s data, for whichever element type the
/// tensor has. `$body` is compiled once per dtype, so it may call generic kernels.
macro_rules! with_view {
    ($t:expr, |$v:ident| $body:expr) => {{
        let __t: &$crate::Tensor = &$t;
        let __guard = __t.0.storage.data.read();
        match &*__guard {
            $crate::tensor::storage::Buffer::F32(__d) => {
                let $v = $crate::tensor::data::view::<f32>(__d, __t.layout());
                $body
            }
            $crate::tensor::storage::Buffer::F64(__d) => {
                let $v = $crate::tensor::data::view::<f64>(__d, __t.layout());
                $body
            }
            $crate::tensor::storage::Buffer::Cuda(_) => {
                unreachable!("invariant: host kernels only receive host tensors")
            }
        }
    }};
}
pub(crate) use with_view;

/// Like [`with_view`] for two tensors of the same dtype (checked: `DTypeMismatch` otherwise).
/// Locks a shared storage once, so `x.mul(&x)` never read-locks twice.
macro_rules! with_views2 {
    ($op:expr, $a:expr, $b:expr, |$va:ident, $vb:ident| $body:expr) => {{
        let (__a, __b): (&$crate::Tensor, &$crate::Tensor) = (&$a, &$b);
        __a.check_same_dtype_device($op, __b)?;
        let __ga = __a.0.storage.data.read();
        let __gb = if __a.shares_storage(__b) {
            None
        } else {
            Some(__b.0.storage.data.read())
        };
        let __db = match &__gb {
            Some(g) => &**g,
            None => &*__ga,
        };
        match (&*__ga, __db) {
            (
                $crate::tensor::storage::Buffer::F32(__x),
                $crate::tensor::storage::Buffer::F32(__y),
            ) => {
                let $va = $crate::tensor::data::view::<f32>(__x, __a.layout());
                let $vb = $crate::tensor::data::view::<f32>(__y, __b.layout());
                $body
            }
            (
                $crate::tensor::storage::Buffer::F64(__x),
                $crate::tensor::storage::Buffer::F64(__y),
            ) => {
                let $va = $crate::tensor::data::view::<f64>(__x, __a.layout());
                let $vb = $crate::tensor::data::view::<f64>(__y, __b.layout());
                $body
            }
            _ => unreachable!("invariant: dtypes were checked equal above"),
        }
    }};
}
pub(crate) use with_views2;

/// Runs `$body` with `$v` bound to a mutable view of `$t`'s data (write-locked).
macro_rules! with_view_mut {
    ($t:expr, |$v:ident| $body:expr) => {{
        let __t: &$crate::Tensor = &$t;
        let mut __guard = __t.0.storage.data.write();
        match &mut *__guard {
            $crate::tensor::storage::Buffer::F32(__d) => {
                let $v = $crate::tensor::data::view_mut::<f32>(__d, __t.layout());
                $body
            }
            $crate::tensor::storage::Buffer::F64(__d) => {
                let $v = $crate::tensor::data::view_mut::<f64>(__d, __t.layout());
                $body
            }
            $crate::tensor::storage::Buffer::Cuda(_) => {
                unreachable!("invariant: host kernels only receive host tensors")
            }
        }
    }};
}
pub(crate) use with_view_mut;

/// A per-element function usable on either dtype (a closure cannot be generic over `T`).
pub(crate) trait ElementMap: Copy {
    fn apply<T: Element>(self, x: T) -> T;
}

fn map_typed<T: Element, M: ElementMap>(
    data: &[T],
    layout: &Layout,
    m: M,
    device: Device,
) -> Tensor {
    let v: ElemVec<T> = if layout.is_contiguous() {
        let src = &data[layout.offset..layout.offset + layout.numel()];
        if src.len() <= 2 {
            // Scalars (every gradient of a scalar chain): fill the inline buffer directly.
            let mut v = ElemVec::new();
            src.iter().for_each(|&x| v.push(m.apply(x)));
            v
        } else {
            ElemVec::from_vec(src.iter().map(|&x| m.apply(x)).collect())
        }
    } else {
        ElemVec::from_vec(view(data, layout).iter().map(|&x| m.apply(x)).collect())
    };
    Tensor::from_buffer(T::wrap(v), &layout.shape, device)
}

impl Tensor {
    /// Applies `m` to every element into a new contiguous tensor, reading the storage slice
    /// directly (the hot path of scalar arithmetic in backward formulas).
    pub(crate) fn map_elements<M: ElementMap>(&self, m: M) -> Tensor {
        let guard = self.0.storage.data.read();
        match &*guard {
            Buffer::F32(d) => map_typed(d, self.layout(), m, self.device()),
            Buffer::F64(d) => map_typed(d, self.layout(), m, self.device()),
            Buffer::Cuda(_) => unreachable!("invariant: map_elements is for host tensors only"),
        }
    }

    /// Applies `m` to every element in place. The caller guarantees that nothing else can
    /// observe the write ([`Tensor::is_uniquely_owned`]) and that the tensor is on the host.
    pub(crate) fn map_elements_in_place<M: ElementMap>(&self, m: M) {
        fn map<T: Element, M: ElementMap>(data: &mut [T], layout: &Layout, m: M) {
            let n = layout.numel();
            data[layout.offset..layout.offset + n]
                .iter_mut()
                .for_each(|x| *x = m.apply(*x));
        }
        let mut guard = self.0.storage.data.write();
        match &mut *guard {
            Buffer::F32(d) => map(d, self.layout(), m),
            Buffer::F64(d) => map(d, self.layout(), m),
            Buffer::Cuda(_) => unreachable!("invariant: map_elements is for host tensors only"),
        }
    }

    /// Wraps a kernel result (any layout) as a new contiguous CPU tensor without copying when it
    /// is already in standard layout.
    pub(crate) fn from_ndarray<T: Element>(a: ArrayD<T>) -> Tensor {
        Tensor::from_ndarray_on(a, Device::Cpu)
    }

    pub(crate) fn from_ndarray_on<T: Element>(a: ArrayD<T>, device: Device) -> Tensor {
        let a = if a.is_standard_layout() {
            a
        } else {
            a.as_standard_layout().into_owned()
        };
        let shape: super::layout::Dims = a.shape().into();
        let (mut v, offset) = a.into_raw_vec_and_offset();
        if let Some(off) = offset.filter(|&o| o != 0) {
            v.drain(..off);
        }
        v.truncate(shape.iter().product());
        Tensor::from_buffer(T::wrap(v.into()), &shape, device)
    }

    pub(crate) fn check_same_dtype_device(&self, op: &'static str, other: &Tensor) -> Result<()> {
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch {
                op,
                lhs: self.dtype(),
                rhs: other.dtype(),
            });
        }
        if self.device() != other.device() {
            return Err(Error::DeviceMismatch {
                lhs: self.device(),
                rhs: other.device(),
            });
        }
        Ok(())
    }

    /// The elements in C order, as `T`.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDType`] if `T` is not the tensor's element type (no silent conversion).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?.transpose(0, 1)?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![1.0, 3.0, 2.0, 4.0]);
    /// assert!(t.to_vec::<f64>().is_err());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if !self.device().is_host() {
            return crate::backend::host(self)?.to_vec();
        }
        let guard = self.0.storage.data.read();
        let data = T::slice(&guard).ok_or(Error::WrongDType {
            expected: T::DTYPE,
            actual: self.dtype(),
        })?;
        let l = self.layout();
        if l.is_contiguous() {
            return Ok(data[l.offset..l.offset + l.numel()].to_vec());
        }
        Ok(view(data, l).iter().copied().collect())
    }

    /// The elements as an owned ndarray array.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDType`] if `T` is not the tensor's element type.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?;
    /// assert_eq!(t.to_array::<f64>()?, ndarray::arr2(&[[1.0, 2.0]]).into_dyn());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        if !self.device().is_host() {
            return crate::backend::host(self)?.to_array();
        }
        let guard = self.0.storage.data.read();
        let data = T::slice(&guard).ok_or(Error::WrongDType {
            expected: T::DTYPE,
            actual: self.dtype(),
        })?;
        Ok(view(data, self.layout()).to_owned())
    }

    /// The single element of a one-element tensor.
    ///
    /// # Errors
    ///
    /// [`Error::NotAScalar`] if the tensor has more than one element, [`Error::WrongDType`] if
    /// `T` is not its element type.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::from_vec(vec![4.0f32], &[1, 1])?.item::<f32>()?, 4.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn item<T: Element>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::NotAScalar {
                numel: self.numel(),
            });
        }
        if !self.device().is_host() {
            return crate::backend::host(self)?.item();
        }
        let guard = self.0.storage.data.read();
        let data = T::slice(&guard).ok_or(Error::WrongDType {
            expected: T::DTYPE,
            actual: self.dtype(),
        })?;
        Ok(data[self.layout().offset])
    }

    /// Copies `src`'s values into this tensor's elements (same shape and dtype), without
    /// recording or bumping the version: for engine-owned buffers only (CopySlices).
    pub(crate) fn copy_from(&self, src: &Tensor) -> Result<()> {
        crate::backend::of_pair("copy", self, src)?.copy_into(self, src)
    }

    /// A contiguous tensor with the same values: `self` if already contiguous, else a copy.
    /// Not recorded in the graph (used by kernels and the engine).
    pub(crate) fn contiguous_data(&self) -> Result<Tensor> {
        if self.is_contiguous() && self.layout().offset == 0 && !self.is_view() {
            return Ok(self.detach());
        }
        self.contiguous_data_owned()
    }
}
