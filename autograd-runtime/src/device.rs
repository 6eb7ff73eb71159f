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

/// Parses PyTorch's device strings (`torch.device("cuda:0")`): `cpu`, `cuda` (device 0),
/// `cuda:N`, and this crate's `virtual:N`.
///
/// # Errors
///
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) in PyTorch's words: an unknown
/// device type ("Expected one of cpu, cuda, virtual device type at start of device string:
/// tpu"), or a malformed index ("Invalid device string: 'cuda:x'").
///
/// # Examples
///
/// ```
/// use autograd_runtime::Device;
/// assert_eq!("cuda:1".parse::<Device>()?, Device::Cuda(1));
/// assert_eq!("cpu".parse::<Device>()?, Device::Cpu);
/// assert_eq!(
///     "cuda:x".parse::<Device>().unwrap_err().to_string(),
///     "Invalid device string: 'cuda:x'"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
impl std::str::FromStr for Device {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Device, crate::Error> {
        let invalid = || crate::Error::InvalidArgument(format!("Invalid device string: '{s}'"));
        let (kind, index) = match s.split_once(':') {
            None => (s, None),
            Some((kind, i)) if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) => {
                (kind, Some(i.parse::<usize>().map_err(|_| invalid())?))
            }
            Some(_) => return Err(invalid()),
        };
        match (kind, index) {
            ("cpu", None | Some(0)) => Ok(Device::Cpu),
            ("cuda", i) => Ok(Device::Cuda(i.unwrap_or(0))),
            ("virtual", Some(i)) => Ok(Device::Virtual(i)),
            ("virtual", None) => Err(invalid()),
            ("cpu", Some(_)) => Err(invalid()),
            _ => Err(crate::Error::InvalidArgument(format!(
                "Expected one of cpu, cuda, virtual device type at start of device string: {s}"
            ))),
        }
    }
}
