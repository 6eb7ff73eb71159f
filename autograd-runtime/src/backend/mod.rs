//! The backend seam: ops say *what* to compute, a [`Backend`] chosen by the tensor's device says
//! *how*. `cpu` runs on host memory (also for `Device::Virtual`); `cuda` runs on CUDA device
//! memory (the `cuda` feature).
//!
//! See `README.md` beside this file for the contract every backend keeps.

mod buffer;
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod generated;
mod op;
pub(crate) mod step;

use std::fmt;

pub(crate) use buffer::{Buffer, ElemVec};
#[cfg(test)]
pub(crate) use cpu::erf_f64;
pub(crate) use cpu::{BroadcastError, broadcast_shapes};
pub use cpu::{cached_bytes, empty_cache, num_threads, set_cache_limit, set_num_threads};
pub(crate) use op::{BinaryOp, CompareOp, GradFormula, MapOp, UnaryOp};
pub(crate) use step::{AdagradCoeffs, AdamCoeffs, RmsPropCoeffs, SgdCoeffs, StepSet, Update};

use crate::layout::{Dims, Layout};
use crate::{DType, Device, Result};

/// A kernel's result: a new contiguous buffer on the backend's device, and its shape.
pub(crate) type Out = (Buffer, Dims);

/// The kernels of one kind of device. Every method takes buffers in this backend's memory, each
/// with the [`Layout`] to read it through (the caller checks the device), and returns a new
/// buffer on the same device, contiguous, with its shape. A backend sees neither tensors nor
/// autograd: the tensor layer's adapter (`tensor/kernels/`) takes the storage locks and wraps
/// the results; recording is the op layer's business.
///
/// Shapes, dims, indices and dtypes are validated before a kernel runs; a backend may still fail
/// (allocation, a device error), which is why every kernel returns a [`Result`].
pub(crate) trait Backend: Send + Sync + fmt::Debug {
    // ----- element-wise ---------------------------------------------------------------------
    /// `op(x)` element-wise.
    fn unary(&self, op: UnaryOp, x: &Buffer, lx: &Layout) -> Result<Out>;
    /// `op(x)` element-wise for an op with parameters ([`MapOp`]: clamp, its gradient mask,
    /// erf), one pass.
    fn map(&self, op: MapOp, x: &Buffer, lx: &Layout) -> Result<Out>;
    /// `x^exponent` element-wise (PyTorch's `pow(Tensor, Scalar)`).
    fn pow_scalar(&self, x: &Buffer, lx: &Layout, exponent: f64) -> Result<Out>;
    /// `a (op) b` with PyTorch broadcasting. Same dtype (checked by the caller); `a` and `b` may
    /// be the same buffer.
    fn binary(&self, op: BinaryOp, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout)
    -> Result<Out>;
    /// `x (op) s`, or `s (op) x` when `scalar_on_left`.
    fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &Buffer,
        lx: &Layout,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Out>;
    /// A backward formula of two same-shaped operands in one pass (`grad * (1 - y²)`, ...).
    fn grad_formula(
        &self,
        op: GradFormula,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Out>;
    /// A closed-form backward formula ([`GradFormula::is_closed_form`]) written over `a`'s own
    /// buffer. The caller proves that nothing else references `a` (one handle, one storage,
    /// contiguous, same shape as `b`), so no one can observe the write: this is how a backward
    /// formula reuses the gradient the engine hands it instead of allocating.
    fn grad_formula_inplace(
        &self,
        op: GradFormula,
        a: (&mut Buffer, &Layout),
        b: (&Buffer, &Layout),
    ) -> Result<()>;
    /// `dst (op)= src` in place through `dst`'s layout, `src` broadcast to `dst`'s shape (two
    /// distinct buffers: the caller copies a source that aliases the target).
    fn binary_inplace(
        &self,
        op: BinaryOp,
        dst: (&mut Buffer, &Layout),
        src: (&Buffer, &Layout),
    ) -> Result<()>;
    /// Sets every element of `dst` (through its layout) to `value`.
    fn fill(&self, dst: &mut Buffer, ld: &Layout, value: f64) -> Result<()>;
    /// Writes `src`'s values into `dst`'s elements (same shape and dtype, distinct buffers).
    fn copy_into(&self, dst: (&mut Buffer, &Layout), src: (&Buffer, &Layout)) -> Result<()>;

    // ----- copies and conversions -------------------------------------------------------------
    /// A contiguous copy (what `contiguous()`, `copy()` and materialised expands run).
    fn contiguous(&self, x: &Buffer, lx: &Layout) -> Result<Out>;
    /// The values converted to `dtype`.
    fn to_dtype(&self, x: &Buffer, lx: &Layout, dtype: DType) -> Result<Out>;
    /// A copy in `device`'s memory, which this backend can reach (host memory for the CPU
    /// backend, and the devices it uploads to).
    fn to_device(&self, x: &Buffer, lx: &Layout, device: Device) -> Result<Out>;
    /// `parts` (same dtype, equal shapes except along `dim`) concatenated along `dim`.
    fn cat(&self, parts: &[(&Buffer, &Layout)], dim: usize) -> Result<Out>;
    /// Runs a generated element-wise kernel (fusion's kernel of a derived function, `generated.rs`) over
    /// `n` elements of `inputs` (buffers of one dtype: element `i` at index `i`, or at index 0
    /// for an input `repeated` says is one value broadcast): one new buffer of `n` elements
    /// per output of the kernel.
    fn generated(
        &self,
        kernel: &generated::GeneratedKernel,
        inputs: &[&Buffer],
        repeated: &[bool],
        scalars: &[f64],
        n: usize,
    ) -> Result<Vec<Buffer>>;

    // ----- reductions -------------------------------------------------------------------------
    /// The sum of all elements, 0-dim. Deterministic: the same bits for the same input, whatever
    /// the number of threads.
    fn sum_all(&self, x: &Buffer, lx: &Layout) -> Result<Out>;
    /// Sums over `axes` (distinct, in range), dropping them unless `keepdim`. Deterministic.
    fn sum_dims(&self, x: &Buffer, lx: &Layout, axes: &[usize], keepdim: bool) -> Result<Out>;
    /// Reduces a broadcast `x` back to `shape` (PyTorch's `sum_to`). Deterministic.
    fn sum_to(&self, x: &Buffer, lx: &Layout, shape: &[usize]) -> Result<Out>;
    /// Softmax (`log == false`) or log-softmax over `dim`, numerically stable.
    fn softmax(&self, x: &Buffer, lx: &Layout, dim: usize, log: bool) -> Result<Out>;
    // ----- fused row kernels (softmax's backward, masked softmax, layer and RMS norm) ---------
    /// Whether this backend has the fused row kernels below ([`Backend::softmax_masked`],
    /// [`Backend::softmax_backward`], [`Backend::norm`], [`Backend::norm_backward`]). Without
    /// them (the default) the op layer composes the same computations from the other kernels,
    /// as it always did; a backend that has them overrides all four and returns `true`.
    fn fused_rows(&self) -> bool {
        false
    }
    /// Softmax (`log == false`) or log-softmax over the last dim of `x + mask` (`mask` as
    /// [`RowMask`] says), numerically stable. With `safe`, a row whose entries are all `-inf`
    /// gives zeros instead of NaN (PyTorch's `_safe_softmax`). Rows are independent, so the
    /// result does not depend on the number of threads.
    fn softmax_masked(
        &self,
        x: &Buffer,
        lx: &Layout,
        mask: RowMask<'_>,
        log: bool,
        safe: bool,
    ) -> Result<Out> {
        let _ = (lx, mask, log, safe);
        Err(no_fused_rows("softmax_masked", x))
    }
    /// The gradient of softmax (`y · (g − Σ_dim g·y)`) or of log-softmax
    /// (`g − exp(y) · Σ_dim g`) over `dim`, from the incoming gradient `g` and the forward's
    /// result `y` (same shape), one pass per row. Deterministic.
    fn softmax_backward(
        &self,
        g: &Buffer,
        lg: &Layout,
        y: &Buffer,
        ly: &Layout,
        dim: usize,
        log: bool,
    ) -> Result<Out> {
        let _ = (lg, y, ly, dim, log);
        Err(no_fused_rows("softmax_backward", g))
    }
    /// Layer norm (`spec.centre`) or RMS norm over the rows of `spec.n` trailing elements of
    /// `x`: `y = (x − mean) · rstd · weight + bias` with `rstd = 1/√(var + eps)` (the biased
    /// variance; for RMS norm, mean 0 and `var` the mean of the squares). `weight` and `bias`
    /// hold `spec.n` elements each. Deterministic.
    fn norm(
        &self,
        x: &Buffer,
        lx: &Layout,
        weight: Option<(&Buffer, &Layout)>,
        bias: Option<(&Buffer, &Layout)>,
        spec: NormSpec,
    ) -> Result<Out> {
        let _ = (lx, weight, bias, spec);
        Err(no_fused_rows("norm", x))
    }
    /// The gradients of [`Backend::norm`] from the incoming gradient `g` (`x`'s shape), each
    /// row's mean and `rstd` recomputed as the forward computed them:
    /// `dx = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂))` with `ĝ = g · weight` and
    /// `x̂ = (x − mean) · rstd` (without the `mean(ĝ)` term for RMS norm),
    /// `dweight = Σ_rows g · x̂`, `dbias = Σ_rows g` (each `[spec.n]`), each computed only when
    /// `needs` (input, weight, bias) asks for it. Deterministic.
    fn norm_backward(
        &self,
        g: (&Buffer, &Layout),
        x: (&Buffer, &Layout),
        weight: Option<(&Buffer, &Layout)>,
        spec: NormSpec,
        needs: [bool; 3],
    ) -> Result<[Option<Out>; 3]> {
        let _ = (x, weight, spec, needs);
        Err(no_fused_rows("norm_backward", g.0))
    }

    /// The positions of the first maximum along `dim` (NaN is the maximum), flattened in the
    /// C order of the keepdim-shaped result.
    fn argmax(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<Vec<usize>>;
    /// The maxima along `dim` (keepdim-shaped) and their positions as [`Backend::argmax`]
    /// gives them. By default `argmax` then `gather`; a backend whose kernel yields both at
    /// once overrides it.
    fn max_dim(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<(Out, Vec<usize>)> {
        let index = self.argmax(x, lx, dim)?;
        let values = self.gather(x, lx, dim, &index)?;
        Ok((values, index))
    }
    /// The positions of the first minimum along `dim` (NaN is the minimum), as
    /// [`Backend::argmax`] gives the maxima's.
    fn argmin(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<Vec<usize>>;
    /// `x` sorted along `dim` (ascending, or `descending`) in `x`'s shape, and for each value
    /// its position along `dim` in `x` (flattened in the same C order). PyTorch's order: NaN
    /// above every number, integers and bools by value. With `stable`, equal values keep their
    /// order along `dim`; a backend may keep it always.
    fn sort(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        descending: bool,
        stable: bool,
    ) -> Result<(Out, Vec<usize>)>;
    /// The positions along `dim` of the `k` largest (or smallest) elements of each lane, in
    /// the order PyTorch's CPU `topk` gives them (ties included; `sorted == false` leaves them
    /// in its selection's order), laid out in `x`'s C order with `dim` of size `k`.
    fn topk(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        k: usize,
        largest: bool,
        sorted: bool,
    ) -> Result<Vec<usize>>;
    /// Whether any element is NaN (anomaly mode).
    fn has_nan(&self, x: &Buffer, lx: &Layout) -> Result<bool>;

    // ----- every dtype -------------------------------------------------------------------------
    /// `a (op) b` with broadcasting for two buffers of one dtype: a `Bool` buffer.
    fn compare(
        &self,
        op: CompareOp,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Out>;
    /// `cond ? a : b` element-wise with three-way broadcasting: `cond` a `Bool` buffer, `a`
    /// and `b` of one dtype.
    fn where_(
        &self,
        cond: (&Buffer, &Layout),
        a: (&Buffer, &Layout),
        b: (&Buffer, &Layout),
    ) -> Result<Out>;

    // ----- indexing ---------------------------------------------------------------------------
    /// The slices of `x` at `index` along `dim`, in that order.
    fn index_select(&self, x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Result<Out>;
    /// Zeros of `shape` with `g`'s slices added at `index` along `dim`.
    fn index_add(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Out>;
    /// `x` at one position per lane of `dim`: `out[.., 0, ..] = x[.., index[..], ..]` where
    /// `index` holds one entry per element of the keepdim-shaped result.
    fn gather(&self, x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Result<Out>;
    /// Zeros of `shape` with the keepdim-shaped `g` written at `index` along `dim` (the
    /// adjoint of [`Backend::gather`]).
    fn scatter(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Out>;
    /// Zeros of `shape` with `g` written at `start..` along `dim` (the gradient of `narrow`).
    fn narrow_scatter(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Out>;
    /// A contiguous copy of `dst` with element `flat[k]` (a position in its C order) set to
    /// element `k` of `src` (in `src`'s C order; the last write wins for a repeated position),
    /// or increased by it when `accumulate` (every term added in order, in the element type):
    /// PyTorch's `put`, which `scatter`, `scatter_add`, `index_add` and the gradients of
    /// `gather` and `masked_select` reduce to. Any dtype; `src` of `dst`'s dtype; every
    /// position in range (checked by the caller).
    fn put(
        &self,
        dst: (&Buffer, &Layout),
        src: (&Buffer, &Layout),
        flat: &[usize],
        accumulate: bool,
    ) -> Result<Out>;

    // ----- linear algebra ---------------------------------------------------------------------
    /// PyTorch's `matmul` (shapes checked by the caller except the batch broadcast).
    fn matmul(&self, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Result<Out>;

    // ----- convolution ---------------------------------------------------------------------------
    /// im2col: the `[N, C·kh·kw, OH·OW]` patch matrices of the `[N, C, H, W]` image `x` (float),
    /// laid out as [`Patches`] says. By default refused: convolution falls back to an index
    /// gather on a backend without it.
    fn im2col(&self, x: &Buffer, lx: &Layout, p: &Patches) -> Result<Out> {
        let _ = (lx, p);
        Err(crate::Error::NotImplementedForDType {
            op: "im2col".into(),
            dtype: x.dtype(),
        })
    }
    /// col2im, the adjoint of [`Backend::im2col`]: the `[N, C, H, W]` image whose elements sum
    /// the entries of the patch matrix `cols` that read them. Refused by default, as `im2col`.
    fn col2im(&self, cols: &Buffer, lc: &Layout, p: &Patches) -> Result<Out> {
        let _ = (lc, p);
        Err(crate::Error::NotImplementedForDType {
            op: "col2im".into(),
            dtype: cols.dtype(),
        })
    }

    /// The fused 2-D convolution (whether a backend has it: [`Backend::fused_conv`]): `x`
    /// `[N, C, H, W]`, `w` `[O, C/groups, kh, kw]` and `bias` `[O]`, f32 or f64 of one dtype,
    /// geometry `p`; the result `[N, O, OH, OW]`. Deterministic.
    fn conv2d(
        &self,
        x: (&Buffer, &Layout),
        w: (&Buffer, &Layout),
        bias: Option<(&Buffer, &Layout)>,
        p: &Patches,
        groups: usize,
    ) -> Result<Out> {
        let _ = (w, bias, p, groups);
        Err(crate::Error::NotImplementedForDType {
            op: "conv2d".into(),
            dtype: x.0.dtype(),
        })
    }
    /// The gradients of [`Backend::conv2d`] from the incoming gradient `g` (the result's
    /// shape): `[d x, d w, d bias]`, each computed only when `needs` asks. Deterministic.
    fn conv2d_backward(
        &self,
        g: (&Buffer, &Layout),
        x: (&Buffer, &Layout),
        w: (&Buffer, &Layout),
        p: &Patches,
        groups: usize,
        needs: [bool; 3],
    ) -> Result<[Option<Out>; 3]> {
        let _ = (x, w, p, groups, needs);
        Err(crate::Error::NotImplementedForDType {
            op: "conv2d_backward".into(),
            dtype: g.0.dtype(),
        })
    }
    /// Whether this backend has [`Backend::conv2d`] and [`Backend::conv2d_backward`] (by
    /// default not: convolution is then composed of im2col, col2im and GEMMs).
    fn fused_conv(&self) -> bool {
        false
    }

    // ----- optimizers ---------------------------------------------------------------------------
    /// One fused optimizer step (PyTorch's `fused=True`) over `sets`, one parameter group of one
    /// algorithm and dtype: each parameter and its state updated in place from its gradient
    /// ([`Update`]), every element read and written once (one pass on the host, one launch on a
    /// device). The caller holds the locks, has checked that written buffers are distinct and
    /// bumps the versions.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when a buffer is not this
    /// backend's, the dtypes differ or a tensor's elements run past its buffer (nothing is
    /// updated then); a device error.
    fn fused_step(&self, sets: Vec<StepSet<'_>>) -> Result<()>;
}

/// The mask [`Backend::softmax_masked`] applies to the scores before the softmax.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RowMask<'a> {
    /// No mask.
    None,
    /// `scaled_dot_product_attention`'s `is_causal`: in each trailing `[L, S]` matrix, row `i`
    /// keeps the entries `0..=i` and masks the others (`-inf`), as PyTorch's lower-triangular
    /// `ones(L, S).tril()` mask does.
    Causal,
    /// Added to the scores: a float buffer of `x`'s dtype whose layout is expanded to `x`'s
    /// shape (strides 0 where it broadcasts).
    Add(&'a Buffer, &'a Layout),
}

/// What [`Backend::norm`] normalises: rows of `n` elements, `eps` added to the variance, and
/// whether the mean is subtracted (layer norm) or not (RMS norm).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct NormSpec {
    /// Elements per row (the product of `normalized_shape`); at least 1.
    pub(crate) n: usize,
    /// Added to the variance (or the mean square) before the square root.
    pub(crate) eps: f64,
    /// Layer norm (`true`) or RMS norm (`false`).
    pub(crate) centre: bool,
}

/// The error of a fused row kernel on a backend without them (the op layer checks
/// [`Backend::fused_rows`] first, so this is a broken invariant surfaced as an error).
fn no_fused_rows(op: &str, x: &Buffer) -> crate::Error {
    crate::Error::NotImplementedForDType {
        op: op.into(),
        dtype: x.dtype(),
    }
}

/// The geometry of a 2-D convolution's patch matrix (im2col): a batch of `batch` images of
/// `channels` planes of `input` (`[height, width]`) read by a `kernel` window with `stride`,
/// zero `padding` and `dilation`, at `output` positions per dim. The patch matrices are
/// `[batch, channels·kh·kw, oh·ow]`: row `(c, ki, kj)` of an entry holds, per output position,
/// the value the window reads at kernel offset `(ki, kj)` of plane `c` (0 in padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Patches {
    pub(crate) batch: usize,
    pub(crate) channels: usize,
    pub(crate) input: [usize; 2],
    pub(crate) kernel: [usize; 2],
    pub(crate) stride: [usize; 2],
    pub(crate) padding: [usize; 2],
    pub(crate) dilation: [usize; 2],
    pub(crate) output: [usize; 2],
}

impl Patches {
    /// The geometry of `image` (`[N, C, H, W]`) read with these window parameters; the output
    /// positions per dim are `(in + 2·padding − dilation·(k − 1) − 1) / stride + 1`. The caller
    /// has checked that the dilated kernel fits the padded input and that strides are positive.
    pub(crate) fn new(
        image: [usize; 4],
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
    ) -> Patches {
        let output = [0, 1].map(|d| {
            (image[2 + d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1
        });
        Patches {
            batch: image[0],
            channels: image[1],
            input: [image[2], image[3]],
            kernel,
            stride,
            padding,
            dilation,
            output,
        }
    }

    /// The patch matrices' shape, `[N, C·kh·kw, OH·OW]`.
    pub(crate) fn columns_shape(&self) -> [usize; 3] {
        [
            self.batch,
            self.channels * self.kernel[0] * self.kernel[1],
            self.output[0] * self.output[1],
        ]
    }

    /// The image's shape, `[N, C, H, W]`.
    pub(crate) fn image_shape(&self) -> [usize; 4] {
        [self.batch, self.channels, self.input[0], self.input[1]]
    }
}

/// Device indices are below this (PyTorch's `c10::Device` index is 8-bit; its engine starts a
/// worker per index).
pub(crate) const MAX_DEVICES: usize = 64;

/// The backend of `device`.
///
/// # Errors
///
/// [`Error::DeviceUnavailable`] for a device this build has no kernels for.
#[inline]
pub(crate) fn of(device: Device) -> Result<&'static dyn Backend> {
    match device {
        Device::Cpu => Ok(&cpu::Cpu),
        Device::Virtual(i) if i < MAX_DEVICES => Ok(&cpu::Cpu),
        Device::Virtual(_) => Err(crate::Error::DeviceUnavailable {
            device,
            reason: format!("device indices go up to {}", MAX_DEVICES - 1),
        }),
        #[cfg(feature = "cuda")]
        Device::Cuda(i) => {
            cuda::device(i)?;
            Ok(&cuda::Cuda)
        }
        #[cfg(not(feature = "cuda"))]
        Device::Cuda(_) => Err(no_cuda(device)),
    }
}

/// The error for a CUDA device in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
pub(crate) fn no_cuda(device: Device) -> crate::Error {
    crate::Error::DeviceUnavailable {
        device,
        reason: "this build has no CUDA support (the `cuda` feature is off)".into(),
    }
}

/// A new contiguous buffer of `shape` filled with `value` in device memory (`device` is not a
/// host device).
pub(crate) fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Out> {
    match device {
        #[cfg(feature = "cuda")]
        Device::Cuda(i) => cuda::full(shape, value, dtype, i),
        _ => {
            let _ = (shape, value, dtype);
            Err(crate::Error::DeviceUnavailable {
                device,
                reason: "no device memory backend for it in this build".into(),
            })
        }
    }
}

/// A copy of host buffer `x` (read through `lx`) on CUDA device `ordinal`.
pub(crate) fn upload_cuda(x: &Buffer, lx: &Layout, ordinal: usize) -> Result<Out> {
    #[cfg(feature = "cuda")]
    return cuda::upload(x, lx, ordinal);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (x, lx);
        Err(no_cuda(Device::Cuda(ordinal)))
    }
}

/// Called by an engine device thread as it starts: binds CUDA device `index`'s context to the
/// thread if that device is in use (PyTorch's worker sets its device once).
pub(crate) fn on_device_thread_start(index: usize) {
    #[cfg(feature = "cuda")]
    cuda::bind_worker(index);
    #[cfg(not(feature = "cuda"))]
    let _ = index;
}

// ----- CUDA devices, for the public `cuda` module ------------------------------------------------

/// The number of CUDA devices the driver reports (0 without the driver or the `cuda` feature).
pub(crate) fn cuda_device_count() -> usize {
    #[cfg(feature = "cuda")]
    return cuda::driver().unwrap_or(0);
    #[cfg(not(feature = "cuda"))]
    0
}

/// Waits for every kernel queued on CUDA device `ordinal`.
pub(crate) fn cuda_synchronize(ordinal: usize) -> Result<()> {
    #[cfg(feature = "cuda")]
    {
        let dev = cuda::device(ordinal)?;
        dev.bind()?;
        dev.stream
            .synchronize()
            .map_err(|e| dev.error("synchronize", e))
    }
    #[cfg(not(feature = "cuda"))]
    Err(no_cuda(Device::Cuda(ordinal)))
}

/// CUDA device `ordinal`'s memory: bytes held by tensors, and bytes kept in its cache of freed
/// blocks.
pub(crate) fn cuda_memory(ordinal: usize) -> Result<(usize, usize)> {
    #[cfg(feature = "cuda")]
    {
        let dev = cuda::device(ordinal)?;
        // Relaxed: a statistic read on its own, ordering nothing else.
        let allocated = dev.allocated.load(crate::sync::Ordering::Relaxed);
        Ok((allocated, dev.cache.bytes()))
    }
    #[cfg(not(feature = "cuda"))]
    Err(no_cuda(Device::Cuda(ordinal)))
}

/// Frees every CUDA device's cache of freed blocks.
pub(crate) fn cuda_empty_caches() {
    #[cfg(feature = "cuda")]
    cuda::empty_caches();
}
