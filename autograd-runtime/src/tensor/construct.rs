//! Making tensors: from buffers and parts (the crate's own constructors), from Rust values, and
//! PyTorch's factories (`zeros`, `ones`, `full`, `scalar`, the random ones).

use std::mem::ManuallyDrop;

use super::storage::Storage;
use super::{AutogradMeta, Samples, Tensor, TensorImpl, kernels, spare};
use crate::backend::Buffer;
use crate::layout::{self, Layout};
use crate::sync::{Arc, Mutex};
use crate::{DType, DataElement, Device, Element, Error, Result};

impl Tensor {
    /// A tensor over `storage` with `layout` that is not a view (no base, no autograd state).
    pub(crate) fn from_parts(storage: Arc<Storage>, layout: Layout) -> Tensor {
        let dtype = storage.data.read().dtype();
        Tensor(ManuallyDrop::new(Arc::new(TensorImpl {
            storage,
            layout,
            dtype,
            view: None,
            autograd: Mutex::new(AutogradMeta::default()),
        })))
    }

    /// A new contiguous CPU tensor owning `data`. `data.len()` must equal the product of `shape`.
    pub(crate) fn from_buffer(data: Buffer, shape: &[usize], device: Device) -> Tensor {
        debug_assert_eq!(
            data.len(),
            shape.iter().product::<usize>(),
            "invariant: buffer matches shape"
        );
        let data = match spare::reuse(data, shape, device) {
            Ok(t) => return t,
            Err(data) => data,
        };
        Tensor::new_owning(data, shape, device)
    }

    /// A new contiguous tensor of `shape` on host device `device` holding `values[..len]`
    /// (`len`, at most two, is the element count of `shape`): what [`Tensor::from_buffer`]
    /// builds for an inline buffer, without the buffer (see `spare::small`).
    #[inline]
    pub(crate) fn small<T: Element>(
        values: [T; 2],
        len: usize,
        shape: &[usize],
        device: Device,
    ) -> Tensor {
        spare::small(values, len, shape, device)
    }

    /// A new contiguous tensor owning `data`, in a new allocation (no spare reused).
    pub(crate) fn new_owning(data: Buffer, shape: &[usize], device: Device) -> Tensor {
        let dtype = data.dtype();
        Tensor(ManuallyDrop::new(Arc::new(TensorImpl {
            storage: Arc::new(Storage::new(data, device)),
            layout: Layout::contiguous(shape),
            dtype,
            view: None,
            autograd: Mutex::new(AutogradMeta::default()),
        })))
    }

    /// Creates a tensor of `shape` from a flat vector in C order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidShape`] if `v.len()` differs from the product of `shape`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.shape(), &[2, 2]);
    /// assert!(Tensor::from_vec(vec![1.0f32], &[2]).is_err());
    /// // Every element type: labels, masks, half precision.
    /// let labels = Tensor::from_vec(vec![2i64, 0, 1], &[3])?;
    /// assert_eq!(labels.dtype(), autograd_runtime::DType::I64);
    /// let mask = Tensor::from_vec(vec![true, false], &[2])?;
    /// assert_eq!(mask.to_vec::<bool>()?, vec![true, false]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn from_vec<T: DataElement>(v: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        if v.len() != layout::checked_numel("from_vec", shape)? {
            return Err(Error::InvalidShape {
                shape: shape.to_vec(),
                len: v.len(),
            });
        }
        Ok(Tensor::from_buffer(
            Buffer::host(v.into()),
            shape,
            Device::Cpu,
        ))
    }

    /// Creates a tensor from an ndarray array (copied into C order if it is not already).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_array(ndarray::arr2(&[[1.0f64, 2.0], [3.0, 4.0]]));
    /// assert_eq!(t.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn from_array<T: DataElement, D: ndarray::Dimension>(a: ndarray::Array<T, D>) -> Tensor {
        Tensor::from_ndarray(a.into_dyn())
    }

    /// A 0-dimensional tensor holding `v`.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = autograd_runtime::Tensor::scalar(2.5f64);
    /// assert_eq!(t.shape(), &[] as &[usize]);
    /// assert_eq!(t.item::<f64>()?, 2.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn scalar<T: DataElement>(v: T) -> Tensor {
        Tensor::from_buffer(Buffer::host(smallvec::smallvec![v]), &[], Device::Cpu)
    }

    /// A tensor of `shape` filled with `value`.
    ///
    /// # Errors
    ///
    /// Currently infallible for CPU tensors; the `Result` leaves room for allocation failures.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::full(&[2], 7.0, DType::F32)?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![7.0, 7.0]);
    /// // Any Rust number, cast to the dtype.
    /// assert_eq!(Tensor::full(&[2], -1, DType::I64)?.to_vec::<i64>()?, vec![-1, -1]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn full(shape: &[usize], value: impl Into<crate::Scalar>, dtype: DType) -> Result<Tensor> {
        let value = value.into();
        value.check_fits(dtype, false)?;
        Tensor::filled_scalar(shape, value, dtype, Device::Cpu)
    }

    /// A new contiguous tensor of `shape` filled with `value`: what every constant constructor
    /// (`full`, `zeros_like`, materialised zero gradients, ...) builds on.
    pub(crate) fn filled(
        shape: &[usize],
        value: f64,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let n = layout::checked_numel("full", shape)?;
        if !device.is_host() {
            return kernels::full(shape, value, dtype, device);
        }
        layout::check_alloc("full", n, dtype.size_of())?;
        let data = match dtype {
            DType::F32 => Buffer::F32(smallvec::smallvec![value as f32; n]),
            DType::F64 => Buffer::F64(smallvec::smallvec![value; n]),
            DType::F16 => Buffer::F16(smallvec::smallvec![half::f16::from_f64(value); n]),
            DType::BF16 => Buffer::BF16(smallvec::smallvec![half::bf16::from_f64(value); n]),
            DType::I64 => Buffer::I64(smallvec::smallvec![i64::from_f64(value); n]),
            DType::I32 => Buffer::I32(smallvec::smallvec![i32::from_f64(value); n]),
            DType::U8 => Buffer::U8(smallvec::smallvec![u8::from_f64(value); n]),
            DType::Bool => Buffer::Bool(smallvec::smallvec![value != 0.0; n]),
        };
        Ok(Tensor::from_buffer(data, shape, device))
    }

    /// A tensor of zeros.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// assert_eq!(Tensor::zeros(&[3], DType::F64)?.to_vec::<f64>()?, vec![0.0; 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 0.0, dtype)
    }

    /// A tensor of ones.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// assert_eq!(Tensor::ones(&[2], DType::F32)?.to_vec::<f32>()?, vec![1.0; 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 1.0, dtype)
    }

    /// Standard-normal samples drawn from the global generator (PyTorch's `torch.randn`): after
    /// [`manual_seed`](crate::manual_seed)`(s)` the values are PyTorch's CPU values for seed
    /// `s`, in f32 and f64. A CPU tensor.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor, manual_seed};
    /// manual_seed(0);
    /// let x = Tensor::randn(&[2], DType::F64)?.to_vec::<f64>()?;
    /// assert_eq!(x, vec![1.5409961082440433, -0.2934289057609464]); // torch.randn(2, dtype=float64)
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::randn_with(shape, dtype, &crate::default_generator())
    }

    /// Standard-normal samples drawn from `generator` (PyTorch's `torch.randn(..,
    /// generator=g)`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Generator, Tensor};
    /// let g = Generator::new().manual_seed(0);
    /// let x = Tensor::randn_with(&[2], DType::F32, &g)?.to_vec::<f32>()?;
    /// assert_eq!(x, vec![1.5409961, -0.29342890]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn randn_with(
        shape: &[usize],
        dtype: DType,
        generator: &crate::Generator,
    ) -> Result<Tensor> {
        Tensor::random("randn", shape, dtype, |v| match v {
            Samples::F32(v) => generator.fill_normal_f32(v, 0.0, 1.0, true),
            Samples::F64(v) => generator.fill_normal_f64(v, 0.0, 1.0, true),
        })
    }

    /// Standard-normal samples from a fresh generator seeded with `seed`: PyTorch's
    /// `torch.randn(shape, generator=torch.Generator().manual_seed(seed))`. Leaves the global
    /// generator alone, so tests running in parallel stay deterministic.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let a = Tensor::randn_seeded(&[4], DType::F64, 7)?;
    /// let b = Tensor::randn_seeded(&[4], DType::F64, 7)?;
    /// assert_eq!(a.to_vec::<f64>()?, b.to_vec::<f64>()?);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn randn_seeded(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
        Tensor::randn_with(shape, dtype, &crate::Generator::new().manual_seed(seed))
    }

    /// Samples uniform in `[0, 1)` drawn from the global generator (PyTorch's `torch.rand`),
    /// PyTorch's CPU values after [`manual_seed`](crate::manual_seed). A CPU tensor.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor, manual_seed};
    /// manual_seed(0);
    /// let u = Tensor::rand(&[3], DType::F32)?.to_vec::<f32>()?;
    /// assert_eq!(u, vec![0.49625659, 0.76822180, 0.088477433]); // torch.rand(3)
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::rand_with(shape, dtype, &crate::default_generator())
    }

    /// Samples uniform in `[0, 1)` drawn from `generator` (PyTorch's `torch.rand(..,
    /// generator=g)`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Generator, Tensor};
    /// let g = Generator::new().manual_seed(3);
    /// let u = Tensor::rand_with(&[1000], DType::F32, &g)?.to_vec::<f32>()?;
    /// assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rand_with(
        shape: &[usize],
        dtype: DType,
        generator: &crate::Generator,
    ) -> Result<Tensor> {
        Tensor::random("rand", shape, dtype, |v| match v {
            Samples::F32(v) => generator.fill_uniform_f32(v, 0.0, 1.0),
            Samples::F64(v) => generator.fill_uniform_f64(v, 0.0, 1.0),
        })
    }

    /// Samples uniform in `[0, 1)` from a fresh generator seeded with `seed`, as
    /// [`randn_seeded`](Tensor::randn_seeded).
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let u = Tensor::rand_seeded(&[2], DType::F64, 0)?.to_vec::<f64>()?;
    /// assert_eq!(u, vec![0.9700530018065531, 0.707819864399788]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rand_seeded(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
        Tensor::rand_with(shape, dtype, &crate::Generator::new().manual_seed(seed))
    }

    /// A new CPU tensor of `shape` and `dtype` whose elements `fill` writes (in C order).
    pub(crate) fn random(
        op: &'static str,
        shape: &[usize],
        dtype: DType,
        fill: impl FnOnce(Samples<'_>),
    ) -> Result<Tensor> {
        let n = layout::checked_numel(op, shape)?;
        layout::check_alloc(op, n, dtype.size_of())?;
        match dtype {
            DType::F32 => {
                let mut v = vec![0f32; n];
                fill(Samples::F32(&mut v));
                Tensor::from_vec(v, shape)
            }
            DType::F64 => {
                let mut v = vec![0f64; n];
                fill(Samples::F64(&mut v));
                Tensor::from_vec(v, shape)
            }
            // Half types: the float32 stream, rounded once.
            DType::F16 | DType::BF16 => {
                let mut v = vec![0f32; n];
                fill(Samples::F32(&mut v));
                Tensor::from_vec(v, shape)?.to_dtype(dtype)
            }
            _ => Err(Error::NotImplementedForDType {
                op: op.to_string(),
                dtype,
            }),
        }
    }

    /// Zeros with this tensor's shape, dtype and device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// assert_eq!(t.zeros_like()?.to_vec::<f32>()?, vec![0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn zeros_like(&self) -> Result<Tensor> {
        self.full_like(0.0)
    }

    /// Ones with this tensor's shape, dtype and device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).ones_like()?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn ones_like(&self) -> Result<Tensor> {
        self.full_like(1.0)
    }

    /// A tensor filled with `value`, with this tensor's shape, dtype and device.
    ///
    /// # Errors
    ///
    /// [`Error::Device`] if the device cannot allocate it (CUDA out of memory).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).full_like(5.0)?.item::<f64>()?, 5.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn full_like(&self, value: impl Into<crate::Scalar>) -> Result<Tensor> {
        let value = value.into();
        value.check_fits(self.dtype(), false)?;
        Tensor::filled_scalar(self.shape(), value, self.dtype(), self.device())
    }
}
