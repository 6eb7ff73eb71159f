//! Where a tensor's data lives and which engine queue runs its backward nodes.

use std::fmt;

/// The device a tensor lives on.
///
/// * `Cpu`: host memory; backward work runs on the thread that called `backward()`.
/// * `Virtual(i)`: host memory, but scheduled exactly like an accelerator (its own worker thread
///   and ready queue), so the device-thread model can be tested on any machine.
/// * `Cuda(i)`: an NVIDIA GPU (feature `cuda`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{Device, DType, Tensor};
/// let t = Tensor::ones(&[3], DType::F32)?;
/// assert_eq!(t.device(), Device::Cpu);
/// assert_eq!(Device::Virtual(1).to_string(), "virtual:1");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// Host memory, run on the calling thread.
    #[default]
    Cpu,
    /// Host memory scheduled as accelerator `i`.
    Virtual(usize),
    /// CUDA device `i`.
    Cuda(usize),
}

impl Device {
    /// `true` for [`Device::Cpu`].
    pub fn is_cpu(self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// Whether the data lives in host memory (`Cpu` and `Virtual`), so the CPU kernels can
    /// read it.
    pub(crate) fn is_host(self) -> bool {
        matches!(self, Device::Cpu | Device::Virtual(_))
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Virtual(i) => write!(f, "virtual:{i}"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}
