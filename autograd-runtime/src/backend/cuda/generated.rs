//! Generated kernels on the GPU: a [`GeneratedKernel`] printed as CUDA C++, compiled by NVRTC
//! the first time a device runs it (with `kernels.cu`'s options) and cached per device and
//! element type; every later call is one launch.

use std::collections::HashMap;

use cudarc::driver::CudaFunction;

use super::buffer::DeviceBuffer;
use super::device::CudaDevice;
use super::kernels::{self, BLOCK};
use super::launch::{Arg, dev_of, device_buffer, launch_function};
use crate::backend::Buffer;
use crate::backend::generated::GeneratedKernel;
use crate::sync::Mutex;
use crate::sync::statics::OnceLock;
use crate::{DType, Error, Result};

/// What the cache keeps per kernel: its loaded function, or why it could not be built.
type Built = std::result::Result<CudaFunction, String>;

/// What a compiled kernel is cached by: device ordinal, kernel id, element type, and which
/// inputs are one repeated value.
type Key = (usize, u64, DType, Vec<bool>);

fn cache() -> &'static Mutex<HashMap<Key, Built>> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Built>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// The loaded function of `k` for `dtype` and `repeated` on `dev`, compiled on first use.
fn function(
    dev: &CudaDevice,
    k: &GeneratedKernel,
    dtype: DType,
    repeated: &[bool],
) -> Result<CudaFunction> {
    let key = (dev.ordinal, k.id, dtype, repeated.to_vec());
    if let Some(built) = cache().lock().get(&key) {
        return built.clone().map_err(|m| failed(dev, m));
    }
    // Compiled outside the lock (NVRTC takes milliseconds); a second thread that races here
    // compiles the same source and the first insert wins.
    let built = build(dev, k, dtype, repeated);
    let built = cache().lock().entry(key).or_insert(built).clone();
    built.map_err(|m| failed(dev, m))
}

fn build(dev: &CudaDevice, k: &GeneratedKernel, dtype: DType, repeated: &[bool]) -> Built {
    let ty = match dtype {
        DType::F32 => "float",
        DType::F64 => "double",
        _ => unreachable!("invariant: {}", super::FLOATS_ONLY),
    };
    let source = k.cuda_source(ty, repeated);
    let ptx = kernels::compile_source(&source, "autograd_generated.cu")
        .map_err(|e| format!("NVRTC could not compile a generated kernel: {e}"))?;
    dev.bind().map_err(|e| e.to_string())?;
    let module = dev
        .ctx
        .load_module(ptx)
        .map_err(|e| super::device::describe(&e))?;
    module
        .load_function("generated")
        .map_err(|e| super::device::describe(&e))
}

fn failed(dev: &CudaDevice, message: String) -> Error {
    Error::Device {
        device: dev.device(),
        op: "generated kernel",
        message,
    }
}

/// Runs `k` over `n` elements of `inputs` (device buffers of one dtype: dense, or one value
/// where `repeated` says so).
pub(super) fn run(
    k: &GeneratedKernel,
    inputs: &[&Buffer],
    repeated: &[bool],
    scalars: &[f64],
    n: usize,
) -> Result<Vec<Buffer>> {
    const OP: &str = "generated kernel";
    let first = inputs
        .first()
        .ok_or_else(|| Error::shape(OP, "expected at least one input"))?;
    let (dev, first) = dev_of(first)?;
    let dtype = first.dtype();
    let func = function(dev, k, dtype, repeated)?;
    let mut args = Vec::with_capacity(inputs.len() + k.outputs.len() + scalars.len() + 1);
    for b in inputs {
        let b = device_buffer(dev, OP, b)?;
        if b.dtype() != dtype {
            return Err(Error::WrongDType {
                expected: dtype,
                actual: b.dtype(),
            });
        }
        args.push(Arg::U64(b.ptr(&dev.stream)));
    }
    let mut outs = Vec::with_capacity(k.outputs.len());
    for _ in &k.outputs {
        let mut out = DeviceBuffer::alloc(dev, dtype, n)?;
        args.push(Arg::U64(out.ptr_mut(&dev.stream)));
        outs.push(out);
    }
    args.extend(scalars.iter().map(|&s| Arg::scalar(dtype, s)));
    args.push(Arg::U64(n as u64));
    if n > 0 {
        let blocks = n.div_ceil(BLOCK as usize).min(1 << 20) as u32;
        launch_function(dev, OP, &func, (blocks, 1), &args)?;
    }
    Ok(outs
        .into_iter()
        .map(|b| Buffer::Cuda(Box::new(b)))
        .collect())
}
