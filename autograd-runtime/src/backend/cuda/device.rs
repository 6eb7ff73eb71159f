//! Finding the CUDA driver and devices without panicking, and the per-device state every kernel
//! call uses: context, stream, cuBLAS handle and the loaded kernels.
//!
//! cudarc loads `libcuda`, `libnvrtc` and `libcublas` on first use and panics when one is
//! missing, so each library is probed (a plain `dlopen` of the candidate names) before anything
//! calls into it, and device set-up runs under `catch_unwind` as a second line of defence.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DriverError};

use super::cache::BlockCache;
use super::{kernels, libraries};
use crate::sync::statics::{AtomicUsize, OnceLock};
use crate::sync::{Mutex, StdArc};
use crate::{Device, Error, Result};

/// One CUDA device, set up on first use and kept for the life of the process.
pub(crate) struct CudaDevice {
    pub(crate) ordinal: usize,
    pub(crate) ctx: StdArc<CudaContext>,
    /// Every op of this device is issued on this one stream, from whichever thread runs it, so
    /// work on one device runs in issue order (PyTorch's default-stream case).
    pub(crate) stream: StdArc<CudaStream>,
    /// Locked per call: a cuBLAS handle is not to be used by two threads at once.
    pub(crate) blas: Mutex<CudaBlas>,
    functions: HashMap<&'static str, CudaFunction>,
    /// Bytes held by live [`DeviceBuffer`](super::buffer::DeviceBuffer)s of this device (what
    /// [`memory_allocated`](crate::cuda::memory_allocated) reads). Relaxed: a statistic that
    /// publishes no memory; a reader after a pass has joined the threads that allocated.
    pub(crate) allocated: AtomicUsize,
    /// Freed blocks kept for reuse (PyTorch's caching allocator).
    pub(crate) cache: BlockCache,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("ordinal", &self.ordinal)
            .finish_non_exhaustive()
    }
}

/// The number of CUDA devices, or why there are none usable (probed once per process).
pub(crate) fn driver() -> std::result::Result<usize, &'static str> {
    static DRIVER: OnceLock<std::result::Result<usize, String>> = OnceLock::new();
    DRIVER
        .get_or_init(probe_driver)
        .as_ref()
        .map(|&n| n)
        .map_err(String::as_str)
}

fn probe_driver() -> std::result::Result<usize, String> {
    // SAFETY: `is_culib_present` only `dlopen`s the driver's candidate file names and drops the
    // handles; it runs no CUDA code.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(format!(
            "no CUDA driver found: {}",
            libraries::not_found("cuda")
        ));
    }
    let count = catch_unwind(|| -> std::result::Result<i32, DriverError> {
        cudarc::driver::result::init()?;
        CudaContext::device_count()
    })
    .map_err(|_| "the CUDA driver library lacks an entry point this build needs".to_string())?
    .map_err(|e| format!("the CUDA driver failed to initialise: {}", describe(&e)))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

type Slot = OnceLock<std::result::Result<CudaDevice, String>>;

/// One slot per device, filled when the device is first used.
static DEVICES: OnceLock<Box<[Slot]>> = OnceLock::new();

/// Device `ordinal`, set up on first use.
///
/// # Errors
///
/// [`Error::DeviceUnavailable`] naming `cuda:<ordinal>` and why: no driver, no such device, no
/// NVRTC or cuBLAS library, or a failure setting the device up.
pub(crate) fn device(ordinal: usize) -> Result<&'static CudaDevice> {
    let unavailable = |reason: String| Error::DeviceUnavailable {
        device: Device::Cuda(ordinal),
        reason,
    };
    let count = driver().map_err(|r| unavailable(r.into()))?;
    if ordinal >= count {
        return Err(unavailable(format!(
            "no such device: this machine has {count} CUDA device{}",
            if count == 1 { "" } else { "s" }
        )));
    }
    let slots = DEVICES.get_or_init(|| (0..count).map(|_| OnceLock::new()).collect());
    slots[ordinal]
        .get_or_init(|| open(ordinal))
        .as_ref()
        .map_err(|r| unavailable(r.clone()))
}

fn open(ordinal: usize) -> std::result::Result<CudaDevice, String> {
    // SAFETY: as in `probe_driver`: these only `dlopen` candidate file names.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(format!(
            "NVRTC not found (it compiles the kernels): {}",
            libraries::not_found("nvrtc")
        ));
    }
    // SAFETY: as above.
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err(format!(
            "cuBLAS not found (it runs matmul): {}",
            libraries::not_found("cublas")
        ));
    }
    let ptx = kernels::ptx()?.clone();
    catch_unwind(AssertUnwindSafe(
        || -> std::result::Result<CudaDevice, String> {
            let ctx = CudaContext::new(ordinal).map_err(|e| describe(&e))?;
            // SAFETY: cudarc's event tracking orders a buffer's uses across streams by creating
            // two events per allocation and recording them at each use; every op of this device
            // is issued on its one stream (below), which orders all uses by itself. Turned off
            // before the first allocation, so no buffer of this context tracks events: four
            // driver calls fewer per tensor (about 1 µs of a small op on an H100).
            unsafe { ctx.disable_event_tracking() };
            let stream = ctx.default_stream();
            let blas = CudaBlas::new(stream.clone()).map_err(|e| format!("cuBLAS: {e:?}"))?;
            let module = ctx.load_module(ptx).map_err(|e| describe(&e))?;
            let functions = kernels::NAMES
                .iter()
                .map(|&name| Ok((name, module.load_function(name).map_err(|e| describe(&e))?)))
                .collect::<std::result::Result<_, String>>()?;
            Ok(CudaDevice {
                ordinal,
                ctx,
                stream,
                blas: Mutex::new(blas),
                functions,
                allocated: AtomicUsize::new(0),
                cache: BlockCache::default(),
            })
        },
    ))
    .map_err(|_| "setting the device up panicked inside the CUDA bindings".to_string())?
}

impl CudaDevice {
    pub(crate) fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    /// The kernel `name` (one of [`kernels::NAMES`]).
    pub(crate) fn function(&self, name: &str) -> Result<&CudaFunction> {
        self.functions.get(name).ok_or_else(|| Error::Device {
            device: self.device(),
            op: "kernel lookup",
            message: format!("no kernel named {name}"),
        })
    }

    /// Makes this device's context current on the calling thread. Cheap when it already is
    /// (cudarc compares the current context first); a device worker thread calls it once when
    /// it starts, and every kernel launch checks it again.
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.error("set context", e))
    }

    /// A driver error of `op` as an [`Error::Device`].
    pub(crate) fn error(&self, op: &'static str, e: DriverError) -> Error {
        Error::Device {
            device: self.device(),
            op,
            message: describe(&e),
        }
    }
}

/// A driver error in words, with PyTorch's "CUDA out of memory" for an allocation failure.
pub(crate) fn describe(e: &DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("CUresult {}", e.0 as i32));
    if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return format!("CUDA out of memory ({name})");
    }
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{text} ({name})")
}

/// Binds device `ordinal`'s context on a starting engine device thread, if that device is
/// already set up (a worker shared with `Virtual(ordinal)` never creates a context).
pub(crate) fn bind_worker(ordinal: usize) {
    let set_up = DEVICES
        .get()
        .and_then(|slots| slots.get(ordinal))
        .and_then(OnceLock::get);
    if let Some(Ok(dev)) = set_up {
        // A failure here shows up again, as an error, at the first kernel launch.
        let _ = dev.bind();
    }
}

/// Gives every set-up device's cached blocks back to the driver (`cuda::empty_cache`).
pub(crate) fn empty_caches() {
    for slot in DEVICES.get().into_iter().flat_map(|slots| slots.iter()) {
        if let Some(Ok(dev)) = slot.get() {
            // Each block is freed (`cuMemFreeAsync`, in stream order) as it drops.
            drop(dev.cache.drain());
        }
    }
}
