//! The tensor layer's one door to the backend: the only module of `tensor/` that names
//! `crate::backend`, and the only one that takes a storage's lock to run a kernel.
//!
//! A backend works on buffers plus layouts and returns buffers ([`Backend`]): it never sees a
//! tensor, a storage or autograd. [`Kernels`] is the op layer's handle on the backend of a
//! tensor's device: each of its methods takes the locks (once for a storage two operands share,
//! so `x.mul(&x)` never read-locks twice; a write and a read lock in storage-address order, so
//! `a (op)= b` and `b (op)= a` on two threads cannot deadlock), copies a source that aliases an
//! in-place target, calls the backend, and wraps the result as a new tensor on the input's
//! device.

use std::borrow::Cow;

use super::Tensor;
use super::storage::Storage;
use super::widen::Widen;

mod conv;
mod element_map;
mod fused_step;
mod rows;

use crate::backend::{self, Backend, BinaryOp, CompareOp, GradFormula, MapOp, Out, UnaryOp};
use crate::layout::{ElementwiseOrder, Layout, elementwise_order};
use crate::sync::Arc;
use crate::{DType, DataElement, Device, Error, Result};
pub(crate) use element_map::ElementMap;
pub(crate) use fused_step::StepTensors;

use crate::backend::Buffer;

/// A kernel result as a new contiguous tensor on `device`.
#[inline]
fn wrap((buffer, shape): Out, device: Device) -> Tensor {
    Tensor::from_buffer(buffer, &shape, device)
}

/// An element-wise kernel's result in the layout PyTorch gives it ([`elementwise_order`]):
/// `run` gets the operands' layouts as the backend must see them (permuted, when the result is
/// not in C order, so that the dense buffer the kernel writes is the result in that order).
#[inline]
fn elementwise<const N: usize>(
    operands: [&Layout; N],
    shape: &[usize],
    device: Device,
    run: impl FnOnce([&Layout; N]) -> Result<Out>,
) -> Result<Tensor> {
    match elementwise_order(&operands, shape) {
        None => Ok(wrap(run(operands)?, device)),
        Some(order) => {
            let presented = operands.map(|l| order.present(l));
            let (buffer, _) = run(std::array::from_fn(|i| &presented[i]))?;
            let storage = Arc::new(Storage::new(buffer, device));
            Ok(Tensor::from_parts(storage, order.result(shape)))
        }
    }
}

/// The shape `a (op) b` broadcasts to, or `a`'s when they do not broadcast (the kernel then
/// reports it).
fn broadcast_or_first(a: &Layout, b: &Layout) -> Vec<usize> {
    crate::backend::broadcast_shapes(&a.shape, &b.shape).unwrap_or_else(|_| a.shape.to_vec())
}

/// Runs `f` on `x`'s buffer (read-locked) and layout.
#[inline]
fn read<R>(x: &Tensor, f: impl FnOnce(&Buffer, &Layout) -> R) -> R {
    let guard = x.0.storage.data.read();
    f(&guard, x.layout())
}

/// Runs `f` on the buffers of `a` and `b`, read-locking a storage they share once.
#[inline]
fn read2<R>(a: &Tensor, b: &Tensor, f: impl FnOnce(&Buffer, &Buffer) -> R) -> R {
    let ga = a.0.storage.data.read();
    let gb = if a.shares_storage(b) {
        None
    } else {
        Some(b.0.storage.data.read())
    };
    let db = match &gb {
        Some(g) => &**g,
        None => &*ga,
    };
    f(&ga, db)
}

/// Runs `f` with `dst`'s buffer write-locked and `src`'s read-locked (distinct storages), taking
/// the two locks in storage-address order, so that two threads running `a (op)= b` and
/// `b (op)= a` cannot deadlock.
fn write_read<R>(
    dst: &Tensor,
    src: &Tensor,
    f: impl FnOnce((&mut Buffer, &Layout), (&Buffer, &Layout)) -> Result<R>,
) -> Result<R> {
    debug_assert!(
        !dst.shares_storage(src),
        "invariant: the caller copied a shared src"
    );
    let (d, s) = (&dst.0.storage, &src.0.storage);
    let (mut wg, rg);
    if Arc::as_ptr(d) < Arc::as_ptr(s) {
        wg = d.data.write();
        rg = s.data.read();
    } else {
        rg = s.data.read();
        wg = d.data.write();
    }
    f((&mut wg, dst.layout()), (&rg, src.layout()))
}

/// How [`Kernels::binary`] runs `op` on operands of `dtype`: halves in `f32`; integers and
/// bools with their own kernels, except for the ops that are floating in PyTorch (`div`,
/// `atan2`: promoted to `f32` by the op layer before they get here, and so here too).
fn widen_binary(op: BinaryOp, dtype: DType) -> Option<Widen> {
    if dtype.is_half() {
        return Widen::of(dtype);
    }
    if !dtype.is_floating_point()
        && matches!(op, BinaryOp::Div | BinaryOp::Atan2 | BinaryOp::MinShare)
    {
        return Widen::to_float(dtype);
    }
    None
}

/// The backend of `t`'s device, as the op layer calls it.
#[inline]
pub(crate) fn of_tensor(t: &Tensor) -> Result<Kernels> {
    Ok(Kernels(backend::of(t.device())?))
}

/// The backend of two operands of `op`, which must agree on dtype and device.
///
/// # Errors
///
/// [`Error::DTypeMismatch`], [`Error::DeviceMismatch`], or the device's own error.
#[inline]
pub(crate) fn of_pair(op: &'static str, a: &Tensor, b: &Tensor) -> Result<Kernels> {
    a.check_same_dtype_device(op, b)?;
    Ok(Kernels(backend::of(a.device())?))
}

/// The kernels of one device, on tensors: the [`Backend`] trait's methods, each taking its
/// operands' locks and wrapping its result (see the module docs). Every tensor passed lives on
/// this backend's device; outputs are new, contiguous tensors on the input's device with no
/// autograd history.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kernels(&'static dyn Backend);

impl Kernels {
    /// `src` itself, or a private contiguous copy when it shares `dst`'s storage (a kernel
    /// cannot read a buffer it is writing).
    fn unshared(self, dst: &Tensor, src: &Tensor) -> Result<Tensor> {
        if dst.shares_storage(src) {
            self.contiguous(src)
        } else {
            Ok(src.clone())
        }
    }

    /// See [`Backend::unary`]. Integer and bool tensors keep their dtype through `neg`, `abs`,
    /// `sign` and `relu` and are promoted to `f32` by the floating functions; halves compute in
    /// `f32` ([`Widen`]).
    pub(crate) fn unary(self, op: UnaryOp, x: &Tensor) -> Result<Tensor> {
        let integral = !x.dtype().is_floating_point();
        let keeps_integers = matches!(
            op,
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sign | UnaryOp::Relu
        );
        if !(integral && keeps_integers)
            && let Some(w) = Widen::to_float(x.dtype())
        {
            return w.run(self, [x], |[x]| self.unary(op, x));
        }
        read(x, |b, l| {
            elementwise([l], &l.shape, x.device(), |[l]| self.0.unary(op, b, l))
        })
    }

    /// See [`Backend::map`]. `clamp` keeps an integer tensor's dtype; `erf` and `softplus`
    /// promote it to `f32`.
    pub(crate) fn map(self, op: MapOp, x: &Tensor) -> Result<Tensor> {
        let widen = match op {
            MapOp::Clamp { .. } | MapOp::ClampInterior { .. } => Widen::of(x.dtype()),
            _ => Widen::to_float(x.dtype()),
        };
        if let Some(w) = widen {
            return w.run(self, [x], |[x]| self.map(op, x));
        }
        read(x, |b, l| {
            elementwise([l], &l.shape, x.device(), |[l]| self.0.map(op, b, l))
        })
    }

    /// See [`Backend::pow_scalar`]. An integer tensor to a non-negative integral power stays
    /// integral; to any other power it is promoted to `f32`.
    pub(crate) fn pow_scalar(self, x: &Tensor, exponent: f64) -> Result<Tensor> {
        let integral_power = exponent >= 0.0 && exponent.fract() == 0.0;
        let widen = if integral_power {
            Widen::of(x.dtype())
        } else {
            Widen::to_float(x.dtype())
        };
        if let Some(w) = widen {
            return w.run(self, [x], |[x]| self.pow_scalar(x, exponent));
        }
        read(x, |b, l| {
            elementwise([l], &l.shape, x.device(), |[l]| {
                self.0.pow_scalar(b, l, exponent)
            })
        })
    }

    /// See [`Backend::binary`].
    pub(crate) fn binary(self, op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a.check_same_dtype_device("binary op", b)?;
        if let Some(w) = widen_binary(op, a.dtype()) {
            return w.run(self, [a, b], |[a, b]| self.binary(op, a, b));
        }
        let (la, lb) = (a.layout(), b.layout());
        let shape = if la.is_contiguous() && lb.is_contiguous() {
            Vec::new() // not looked at: contiguous operands give a contiguous result
        } else {
            broadcast_or_first(la, lb)
        };
        read2(a, b, |x, y| {
            elementwise([la, lb], &shape, a.device(), |[la, lb]| {
                self.0.binary(op, x, la, y, lb)
            })
        })
    }

    /// See [`Backend::binary_scalar`].
    pub(crate) fn binary_scalar(
        self,
        op: BinaryOp,
        x: &Tensor,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Tensor> {
        let fractional = s.fract() != 0.0 || !s.is_finite();
        let widen = if !x.dtype().is_floating_point() && fractional {
            // An integer tensor with a non-integral scalar: computed in f32 (PyTorch's
            // `int_tensor * 0.5`), never truncated to an integer scalar.
            Widen::to_float(x.dtype())
        } else {
            widen_binary(op, x.dtype())
        };
        if let Some(w) = widen {
            return w.run(self, [x], |[x]| {
                self.binary_scalar(op, x, s, scalar_on_left)
            });
        }
        read(x, |b, l| {
            elementwise([l], &l.shape, x.device(), |[l]| {
                self.0.binary_scalar(op, b, l, s, scalar_on_left)
            })
        })
    }

    /// See [`Backend::grad_formula`].
    pub(crate) fn grad_formula(self, op: GradFormula, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a.check_same_dtype_device("fused op", b)?;
        if let Some(w) = Widen::of(a.dtype()) {
            return w.run(self, [a, b], |[a, b]| self.grad_formula(op, a, b));
        }
        let (la, lb) = (a.layout(), b.layout());
        read2(a, b, |x, y| {
            elementwise([la, lb], &la.shape, a.device(), |[la, lb]| {
                self.0.grad_formula(op, x, la, y, lb)
            })
        })
    }

    /// See [`Backend::grad_formula_inplace`]: the caller proves `a` is referenced by nothing else.
    pub(crate) fn grad_formula_inplace(
        self,
        op: GradFormula,
        a: &Tensor,
        b: &Tensor,
    ) -> Result<()> {
        if Widen::of(a.dtype()).is_some() {
            let out = self.grad_formula(op, a, b)?;
            return self.copy_into(a, &out);
        }
        write_read(a, b, |a, b| self.0.grad_formula_inplace(op, a, b))
    }

    /// See [`Backend::binary_inplace`]; neither records nor bumps the version. `src` may share
    /// `dst`'s storage (it is copied first).
    pub(crate) fn binary_inplace(self, op: BinaryOp, dst: &Tensor, src: &Tensor) -> Result<()> {
        dst.check_same_dtype_device("in-place op", src)?;
        if !matches!(dst.dtype(), DType::F32 | DType::F64) {
            // Out of place (in `f32` for halves, with the integer kernels for integers), then
            // written back: `src` broadcasts to `dst`, so the result has `dst`'s shape.
            let out = self.binary(op, dst, src)?;
            return self.copy_into(dst, &out);
        }
        let src = self.unshared(dst, src)?;
        write_read(dst, &src, |d, s| self.0.binary_inplace(op, d, s))
    }

    /// See [`Backend::fill`].
    pub(crate) fn fill(self, dst: &Tensor, value: f64) -> Result<()> {
        let mut guard = dst.0.storage.data.write();
        self.0.fill(&mut guard, dst.layout(), value)
    }

    /// See [`Backend::copy_into`]. `src` may share `dst`'s storage (it is copied first).
    pub(crate) fn copy_into(self, dst: &Tensor, src: &Tensor) -> Result<()> {
        dst.check_same_dtype_device("copy", src)?;
        let src = self.unshared(dst, src)?;
        write_read(dst, &src, |d, s| self.0.copy_into(d, s))
    }

    /// See [`Backend::contiguous`].
    pub(crate) fn contiguous(self, x: &Tensor) -> Result<Tensor> {
        Ok(wrap(read(x, |b, l| self.0.contiguous(b, l))?, x.device()))
    }

    /// A copy of `x` in a buffer of its own laid out in `order` (dense, its strides), as
    /// PyTorch lays out an element-wise result over `x`.
    pub(crate) fn contiguous_in(self, x: &Tensor, order: &ElementwiseOrder) -> Result<Tensor> {
        let (buffer, _) = read(x, |b, l| self.0.contiguous(b, &order.present(l)))?;
        let storage = Arc::new(Storage::new(buffer, x.device()));
        Ok(Tensor::from_parts(storage, order.clone().result(x.shape())))
    }

    /// See [`Backend::to_dtype`].
    pub(crate) fn to_dtype(self, x: &Tensor, dtype: DType) -> Result<Tensor> {
        Ok(wrap(
            read(x, |b, l| self.0.to_dtype(b, l, dtype))?,
            x.device(),
        ))
    }

    /// See [`Backend::to_device`]: the copy is tagged `device`.
    pub(crate) fn to_device(self, x: &Tensor, device: Device) -> Result<Tensor> {
        Ok(wrap(
            read(x, |b, l| self.0.to_device(b, l, device))?,
            device,
        ))
    }

    /// See [`Backend::cat`].
    pub(crate) fn cat(self, tensors: &[Tensor], dim: usize) -> Result<Tensor> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::shape("cat", "expected a non-empty list of tensors"))?;
        // Each distinct storage is read-locked once (parts may share one), in address order.
        let mut storages: Vec<&Arc<Storage>> = tensors.iter().map(|t| &t.0.storage).collect();
        storages.sort_by_key(|s| Arc::as_ptr(s));
        storages.dedup_by(|a, b| Arc::ptr_eq(a, b));
        let guards: Vec<_> = storages.iter().map(|s| s.data.read()).collect();
        let parts: Vec<(&Buffer, &Layout)> = tensors
            .iter()
            .map(|t| {
                let i = storages
                    .iter()
                    .position(|s| Arc::ptr_eq(s, &t.0.storage))
                    .expect("invariant: every part's storage was collected");
                (&*guards[i], t.layout())
            })
            .collect();
        Ok(wrap(self.0.cat(&parts, dim)?, first.device()))
    }

    /// See [`Backend::generated`]: `inputs` are tensors of `shape` on this backend's device,
    /// each dense from element 0 with the outputs' `strides` (dims of size 1 aside) or one
    /// value broadcast (all strides 0, offset 0: `repeated`; the caller checks), each distinct
    /// storage read-locked once, in address order. The kernel runs over memory order.
    pub(crate) fn generated(
        self,
        kernel: &backend::generated::GeneratedKernel,
        inputs: &[&Tensor],
        repeated: &[bool],
        scalars: &[f64],
        shape: &[usize],
        strides: &[usize],
    ) -> Result<Vec<Tensor>> {
        let first = inputs
            .first()
            .ok_or_else(|| Error::shape("generated kernel", "expected at least one input"))?;
        if let Some(t) = inputs
            .iter()
            .find(|t| !matches!(t.dtype(), DType::F32 | DType::F64))
        {
            return Err(Error::NotImplementedForDType {
                op: "generated kernel".into(),
                dtype: t.dtype(),
            });
        }
        let mut storages: Vec<&Arc<Storage>> = inputs.iter().map(|t| &t.0.storage).collect();
        storages.sort_by_key(|s| Arc::as_ptr(s));
        storages.dedup_by(|a, b| Arc::ptr_eq(a, b));
        let guards: Vec<_> = storages.iter().map(|s| s.data.read()).collect();
        let buffers: Vec<&Buffer> = inputs
            .iter()
            .map(|t| {
                let i = storages
                    .iter()
                    .position(|s| Arc::ptr_eq(s, &t.0.storage))
                    .expect("invariant: every input's storage was collected");
                &*guards[i]
            })
            .collect();
        let n = shape.iter().product();
        let outs = self.0.generated(kernel, &buffers, repeated, scalars, n)?;
        drop(guards);
        let device = first.device();
        let layout = Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset: 0,
        };
        let wrap = |b| match layout.is_contiguous() {
            true => Tensor::from_buffer(b, shape, device),
            false => Tensor::from_parts(Arc::new(Storage::new(b, device)), layout.clone()),
        };
        Ok(outs.into_iter().map(wrap).collect())
    }

    /// See [`Backend::sum_all`].
    pub(crate) fn sum_all(self, x: &Tensor) -> Result<Tensor> {
        // Halves accumulate in f32 and round once; integers and bools sum into i64 (backend).
        if x.dtype().is_half()
            && let Some(w) = Widen::of(x.dtype())
        {
            return w.run(self, [x], |[x]| self.sum_all(x));
        }
        Ok(wrap(read(x, |b, l| self.0.sum_all(b, l))?, x.device()))
    }

    /// See [`Backend::sum_dims`].
    pub(crate) fn sum_dims(self, x: &Tensor, axes: &[usize], keepdim: bool) -> Result<Tensor> {
        if x.dtype().is_half()
            && let Some(w) = Widen::of(x.dtype())
        {
            return w.run(self, [x], |[x]| self.sum_dims(x, axes, keepdim));
        }
        let out = read(x, |b, l| self.0.sum_dims(b, l, axes, keepdim))?;
        Ok(wrap(out, x.device()))
    }

    /// See [`Backend::sum_to`].
    pub(crate) fn sum_to(self, x: &Tensor, shape: &[usize]) -> Result<Tensor> {
        if let Some(w) = Widen::of(x.dtype()) {
            return w.run(self, [x], |[x]| self.sum_to(x, shape));
        }
        Ok(wrap(
            read(x, |b, l| self.0.sum_to(b, l, shape))?,
            x.device(),
        ))
    }

    /// See [`Backend::softmax`].
    pub(crate) fn softmax(self, x: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
        if !x.dtype().is_floating_point() {
            // PyTorch names its CPU kernel, which depends on whether `dim` is the last one.
            let last = dim + 1 >= x.shape().len();
            let op = match (log, last) {
                (false, true) => "softmax_lastdim_kernel_impl",
                (false, false) => "softmax_kernel_impl",
                (true, true) => "log_softmax_lastdim_kernel_impl",
                (true, false) => "log_softmax_kernel_impl",
            };
            return Err(Error::NotImplementedForDType {
                op: op.into(),
                dtype: x.dtype(),
            });
        }
        if let Some(w) = Widen::of(x.dtype()) {
            return w.run(self, [x], |[x]| self.softmax(x, dim, log));
        }
        let out = read(x, |b, l| self.0.softmax(b, l, dim, log))?;
        Ok(wrap(out, x.device()))
    }

    /// See [`Backend::argmax`] (any dtype).
    pub(crate) fn argmax(self, x: &Tensor, dim: usize) -> Result<Vec<usize>> {
        read(x, |b, l| self.0.argmax(b, l, dim))
    }

    /// See [`Backend::argmin`] (any dtype).
    pub(crate) fn argmin(self, x: &Tensor, dim: usize) -> Result<Vec<usize>> {
        read(x, |b, l| self.0.argmin(b, l, dim))
    }

    /// See [`Backend::compare`]: `a` and `b` of one dtype (the caller promotes them) and device.
    pub(crate) fn compare(self, op: CompareOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a.check_same_dtype_device(op.name(), b)?;
        let (la, lb) = (a.layout(), b.layout());
        let shape = broadcast_or_first(la, lb);
        read2(a, b, |x, y| {
            elementwise([la, lb], &shape, a.device(), |[la, lb]| {
                self.0.compare(op, x, la, y, lb)
            })
        })
    }

    /// See [`Backend::where_`]: `cond` a bool tensor, `a` and `b` of one dtype (the caller
    /// promotes them), all on this device.
    pub(crate) fn where_(self, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a.check_same_dtype_device("where", b)?;
        if cond.device() != a.device() {
            return Err(Error::DeviceMismatch {
                lhs: cond.device(),
                rhs: a.device(),
            });
        }
        let gc = cond.0.storage.data.read();
        let out = read2(a, b, |x, y| {
            self.0
                .where_((&gc, cond.layout()), (x, a.layout()), (y, b.layout()))
        })?;
        drop(gc);
        Ok(wrap(out, a.device()))
    }

    /// See [`Backend::max_dim`].
    pub(crate) fn max_dim(self, x: &Tensor, dim: usize) -> Result<(Tensor, Vec<usize>)> {
        let (values, index) = read(x, |b, l| self.0.max_dim(b, l, dim))?;
        Ok((wrap(values, x.device()), index))
    }

    /// See [`Backend::sort`] (any dtype): the sorted values and their positions along `dim`.
    pub(crate) fn sort(
        self,
        x: &Tensor,
        dim: usize,
        descending: bool,
        stable: bool,
    ) -> Result<(Tensor, Vec<usize>)> {
        let (values, index) = read(x, |b, l| self.0.sort(b, l, dim, descending, stable))?;
        Ok((wrap(values, x.device()), index))
    }

    /// See [`Backend::topk`]: the positions along `dim` of the picked elements.
    pub(crate) fn topk(
        self,
        x: &Tensor,
        dim: usize,
        k: usize,
        largest: bool,
        sorted: bool,
    ) -> Result<Vec<usize>> {
        read(x, |b, l| self.0.topk(b, l, dim, k, largest, sorted))
    }

    /// See [`Backend::has_nan`].
    pub(crate) fn has_nan(self, x: &Tensor) -> Result<bool> {
        if !x.dtype().is_floating_point() {
            return Ok(false);
        }
        if x.dtype().is_half() {
            return self.has_nan(&self.to_dtype(x, DType::F32)?);
        }
        read(x, |b, l| self.0.has_nan(b, l))
    }

    /// See [`Backend::index_select`].
    pub(crate) fn index_select(self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        let out = read(x, |b, l| self.0.index_select(b, l, dim, index))?;
        Ok(wrap(out, x.device()))
    }

    /// See [`Backend::index_add`].
    pub(crate) fn index_add(
        self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Tensor> {
        if let Some(w) = Widen::of(g.dtype()) {
            return w.run(self, [g], |[g]| self.index_add(g, shape, dim, index));
        }
        let out = read(g, |b, l| self.0.index_add(b, l, shape, dim, index))?;
        Ok(wrap(out, g.device()))
    }

    /// See [`Backend::gather`].
    pub(crate) fn gather(self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        let out = read(x, |b, l| self.0.gather(b, l, dim, index))?;
        Ok(wrap(out, x.device()))
    }

    /// See [`Backend::scatter`].
    pub(crate) fn scatter(
        self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Tensor> {
        if let Some(w) = Widen::of(g.dtype()) {
            return w.run(self, [g], |[g]| self.scatter(g, shape, dim, index));
        }
        let out = read(g, |b, l| self.0.scatter(b, l, shape, dim, index))?;
        Ok(wrap(out, g.device()))
    }

    /// See [`Backend::narrow_scatter`].
    pub(crate) fn narrow_scatter(
        self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Tensor> {
        if let Some(w) = Widen::of(g.dtype()) {
            return w.run(self, [g], |[g]| self.narrow_scatter(g, shape, dim, start));
        }
        let out = read(g, |b, l| self.0.narrow_scatter(b, l, shape, dim, start))?;
        Ok(wrap(out, g.device()))
    }

    /// See [`Backend::put`]: `src` of `dst`'s dtype and device, any dtype. Accumulating into
    /// halves runs in `f32` and rounds once, as PyTorch's CPU `scatter_add` and `index_add`
    /// do (1 + 4·2⁻¹² in `f16` gives 1.0009765625, not 1); other dtypes accumulate in their own
    /// type (integers wrap; `f32` sums stay `f32`, as PyTorch's).
    pub(crate) fn put(
        self,
        dst: &Tensor,
        src: &Tensor,
        flat: &[usize],
        accumulate: bool,
    ) -> Result<Tensor> {
        dst.check_same_dtype_device("scatter", src)?;
        if accumulate
            && dst.dtype().is_half()
            && let Some(w) = Widen::of(dst.dtype())
        {
            return w.run(self, [dst, src], |[d, s]| self.put(d, s, flat, true));
        }
        let out = read2(dst, src, |d, s| {
            self.0
                .put((d, dst.layout()), (s, src.layout()), flat, accumulate)
        })?;
        Ok(wrap(out, dst.device()))
    }

    /// See [`Backend::matmul`].
    pub(crate) fn matmul(self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a.check_same_dtype_device("matmul", b)?;
        if let Some(w) = Widen::of(a.dtype()) {
            // Halves: one f32 GEMM, each result rounded once (PyTorch's CPU half GEMM
            // accumulates in f32 too).
            return w.run(self, [a, b], |[a, b]| self.matmul(a, b));
        }
        let out = read2(a, b, |x, y| self.0.matmul(x, a.layout(), y, b.layout()))?;
        Ok(wrap(out, a.device()))
    }

    /// See [`Backend::im2col`].
    pub(crate) fn im2col(self, x: &Tensor, p: &backend::Patches) -> Result<Tensor> {
        if let Some(w) = Widen::of(x.dtype()) {
            return w.run(self, [x], |[x]| self.im2col(x, p));
        }
        let out = read(x, |b, l| self.0.im2col(b, l, p))?;
        Ok(wrap(out, x.device()))
    }

    /// See [`Backend::col2im`].
    pub(crate) fn col2im(self, cols: &Tensor, p: &backend::Patches) -> Result<Tensor> {
        if let Some(w) = Widen::of(cols.dtype()) {
            return w.run(self, [cols], |[c]| self.col2im(c, p));
        }
        let out = read(cols, |b, l| self.0.col2im(b, l, p))?;
        Ok(wrap(out, cols.device()))
    }
}

// ----- the rest of the tensor layer's calls into the backend -----------------------------------

/// A copy of `x` in host memory on `Device::Cpu` (`x` itself when it is in host memory
/// already): how the element readers (`to_vec`, `item`, ...) read a device tensor.
pub(crate) fn host(x: &Tensor) -> Result<Cow<'_, Tensor>> {
    if x.device().is_host() {
        return Ok(Cow::Borrowed(x));
    }
    of_tensor(x)?.to_device(x, Device::Cpu).map(Cow::Owned)
}

/// Copies `src`'s values into `dst`'s elements on their device (same shape and dtype).
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    of_pair("copy", dst, src)?.copy_into(dst, src)
}

/// A new contiguous tensor of `shape` filled with `value` in `device`'s memory (not a host
/// device).
pub(crate) fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Tensor> {
    Ok(wrap(backend::full(shape, value, dtype, device)?, device))
}

/// Runs `f` on host tensor `t`'s elements (read-locked) if they are of type `T`, else
/// [`Error::WrongDType`].
pub(crate) fn read_host<T: DataElement, R>(
    t: &Tensor,
    f: impl FnOnce(&[T], &Layout) -> R,
) -> Result<R> {
    let guard = t.0.storage.data.read();
    let data = guard.as_slice::<T>().ok_or(Error::WrongDType {
        expected: T::DTYPE,
        actual: t.dtype(),
    })?;
    Ok(f(data, t.layout()))
}
