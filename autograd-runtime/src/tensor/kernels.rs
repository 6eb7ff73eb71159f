//! The tensor layer's one door to the backend: the only module of `tensor/` that names
//! `crate::backend`, and the only one that takes a storage's lock to run a kernel.
//!
//! A backend works on buffers plus layouts and returns buffers ([`cpu`]'s kernels): it never sees
//! a tensor, a storage or autograd. This adapter takes the locks (once for a storage two operands
//! share, so `x.mul(&x)` never read-locks twice; a write and a read lock in storage-address order,
//! so `a (op)= b` and `b (op)= a` on two threads cannot deadlock), checks dtypes and devices,
//! copies a source that aliases an in-place target, and wraps each result as a new tensor on the
//! input's device.

use std::borrow::Cow;

use super::Tensor;
use crate::backend::cpu::dispatch::{self as cpu, Cpu, Out};
use crate::backend::{Backend, BinaryOp, FusedOp, UnaryOp};
use crate::layout::Layout;
use crate::sync::Arc;
use crate::{DType, Device, Element, Error, Result};

pub(crate) use crate::backend::{Buffer, ElemVec};

/// A kernel result as a new contiguous tensor on `device`.
#[inline]
fn wrap((buffer, shape): Out, device: Device) -> Tensor {
    Tensor::from_buffer(buffer, &shape, device)
}

/// Runs `f` on `x`'s buffer (read-locked) and layout.
#[inline]
fn read<R>(x: &Tensor, f: impl FnOnce(&Buffer, &Layout) -> R) -> R {
    let guard = x.0.storage.data.read();
    f(&guard, x.layout())
}

/// Runs `f` on the buffers of `a` and `b` (same dtype and device, else an error naming `op`),
/// read-locking a storage they share once.
#[inline]
fn read2<R>(
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    f: impl FnOnce(&Buffer, &Buffer) -> Result<R>,
) -> Result<R> {
    a.check_same_dtype_device(op, b)?;
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

/// A contiguous copy of host tensor `x` on `device`.
fn contiguous_on(x: &Tensor, device: Device) -> Tensor {
    wrap(read(x, cpu::contiguous), device)
}

/// `src` itself, or a private contiguous copy when it shares `dst`'s storage (a kernel cannot
/// read a buffer it is writing).
fn unshared(dst: &Tensor, src: &Tensor) -> Tensor {
    if dst.shares_storage(src) {
        contiguous_on(src, src.device())
    } else {
        src.clone()
    }
}

impl Backend for Cpu {
    fn unary(&self, op: UnaryOp, x: &Tensor) -> Result<Tensor> {
        Ok(wrap(read(x, |b, l| cpu::unary(op, b, l)), x.device()))
    }

    fn pow_scalar(&self, x: &Tensor, exponent: f64) -> Result<Tensor> {
        Ok(wrap(
            read(x, |b, l| cpu::pow_scalar(b, l, exponent)),
            x.device(),
        ))
    }

    fn binary(&self, op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let out = read2("binary op", a, b, |x, y| {
            cpu::binary(op, x, a.layout(), y, b.layout())
        })?;
        Ok(wrap(out, a.device()))
    }

    fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &Tensor,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Tensor> {
        Ok(wrap(
            read(x, |b, l| cpu::binary_scalar(op, b, l, s, scalar_on_left)),
            x.device(),
        ))
    }

    fn fused(&self, op: FusedOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let out = read2("fused op", a, b, |x, y| {
            cpu::fused(op, x, a.layout(), y, b.layout())
        })?;
        Ok(wrap(out, a.device()))
    }

    fn fused_inplace(&self, op: FusedOp, a: &Tensor, b: &Tensor) -> Result<()> {
        write_read(a, b, |a, b| cpu::fused_inplace(op, a, b))
    }

    fn binary_inplace(&self, op: BinaryOp, dst: &Tensor, src: &Tensor) -> Result<()> {
        let src = unshared(dst, src);
        write_read(dst, &src, |d, s| cpu::binary_inplace(op, d, s))
    }

    fn fill(&self, dst: &Tensor, value: f64) -> Result<()> {
        let mut guard = dst.0.storage.data.write();
        cpu::fill(&mut guard, dst.layout(), value);
        Ok(())
    }

    fn copy_into(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        let src = unshared(dst, src);
        write_read(dst, &src, cpu::copy_into)
    }

    fn contiguous(&self, x: &Tensor) -> Result<Tensor> {
        Ok(contiguous_on(x, x.device()))
    }

    fn to_dtype(&self, x: &Tensor, dtype: DType) -> Result<Tensor> {
        Ok(wrap(read(x, |b, l| cpu::to_dtype(b, l, dtype)), x.device()))
    }

    fn to_device(&self, x: &Tensor, device: Device) -> Result<Tensor> {
        match device {
            Device::Cpu | Device::Virtual(_) => Ok(contiguous_on(x, device)),
            Device::Cuda(i) => crate::backend::upload_cuda(x, i),
        }
    }

    fn cat(&self, tensors: &[Tensor], dim: usize) -> Result<Tensor> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::shape("cat", "expected a non-empty list of tensors"))?;
        // Each part is copied out under its own lock: parts may share a storage.
        let parts: Vec<(Out, Layout)> = tensors
            .iter()
            .map(|t| {
                let out = read(t, cpu::contiguous);
                let layout = Layout::contiguous(&out.1);
                (out, layout)
            })
            .collect();
        let refs: Vec<(&Buffer, &Layout)> = parts.iter().map(|((b, _), l)| (b, l)).collect();
        Ok(wrap(cpu::cat(&refs, dim)?, first.device()))
    }

    fn sum_all(&self, x: &Tensor) -> Result<Tensor> {
        Ok(wrap(read(x, cpu::sum_all), x.device()))
    }

    fn sum_dims(&self, x: &Tensor, axes: &[usize], keepdim: bool) -> Result<Tensor> {
        Ok(wrap(
            read(x, |b, l| cpu::sum_dims(b, l, axes, keepdim)),
            x.device(),
        ))
    }

    fn sum_to(&self, x: &Tensor, shape: &[usize]) -> Result<Tensor> {
        Ok(wrap(read(x, |b, l| cpu::sum_to(b, l, shape)), x.device()))
    }

    fn softmax(&self, x: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
        Ok(wrap(
            read(x, |b, l| cpu::softmax(b, l, dim, log)),
            x.device(),
        ))
    }

    fn argmax(&self, x: &Tensor, dim: usize) -> Result<Vec<usize>> {
        Ok(read(x, |b, l| cpu::argmax(b, l, dim)))
    }

    fn max_dim(&self, x: &Tensor, dim: usize) -> Result<(Tensor, Vec<usize>)> {
        let (values, index) = read(x, |b, l| cpu::max_dim(b, l, dim));
        Ok((wrap(values, x.device()), index))
    }

    fn has_nan(&self, x: &Tensor) -> Result<bool> {
        Ok(read(x, cpu::has_nan))
    }

    fn index_select(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        Ok(wrap(
            read(x, |b, l| cpu::index_select(b, l, dim, index)),
            x.device(),
        ))
    }

    fn index_add(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Tensor> {
        Ok(wrap(
            read(g, |b, l| cpu::index_add(b, l, shape, dim, index)),
            g.device(),
        ))
    }

    fn gather(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        let out = read(x, |b, l| cpu::gather(b, l, dim, index))?;
        Ok(wrap(out, x.device()))
    }

    fn scatter(&self, g: &Tensor, shape: &[usize], dim: usize, index: &[usize]) -> Result<Tensor> {
        Ok(wrap(
            read(g, |b, l| cpu::scatter(b, l, shape, dim, index)),
            g.device(),
        ))
    }

    fn narrow_scatter(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Tensor> {
        Ok(wrap(
            read(g, |b, l| cpu::narrow_scatter(b, l, shape, dim, start)),
            g.device(),
        ))
    }

    fn matmul(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let out = read2("matmul", a, b, |x, y| {
            cpu::matmul(x, a.layout(), y, b.layout())
        })?;
        Ok(wrap(out, a.device()))
    }
}

// ----- the rest of the tensor layer's calls into the backend -----------------------------------

/// A copy of `x` in host memory (`x` itself when it is there already).
pub(crate) fn host(x: &Tensor) -> Result<Cow<'_, Tensor>> {
    crate::backend::host(x)
}

/// Copies `src`'s values into `dst`'s elements on their device (same shape and dtype).
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    crate::backend::of_pair("copy", dst, src)?.copy_into(dst, src)
}

/// A new contiguous tensor of `shape` filled with `value` in `device`'s memory (not a host
/// device).
pub(crate) fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Tensor> {
    crate::backend::full(shape, value, dtype, device)
}

/// Standard normal samples of `shape` from `seed`, as a CPU tensor.
pub(crate) fn randn<T: Element>(shape: &[usize], seed: u64) -> Tensor {
    wrap(
        cpu::out_of(crate::backend::cpu::randn::<T>(shape, seed)),
        Device::Cpu,
    )
}

/// Runs `f` on host tensor `t`'s elements (read-locked) if they are of type `T`, else
/// [`Error::WrongDType`].
pub(crate) fn read_host<T: Element, R>(
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
        ElemVec::from_vec(
            crate::layout::view(data, layout)
                .iter()
                .map(|&x| m.apply(x))
                .collect(),
        )
    };
    Tensor::from_buffer(Buffer::host(v), &layout.shape, device)
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
}
