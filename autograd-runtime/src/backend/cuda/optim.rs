//! Fused optimizer steps on CUDA (PyTorch's `fused=True` / `multi_tensor_apply`): one upload of a
//! table describing every (parameter, gradient, state) set of a group, then one launch of
//! `adam_step`, `sgd_step`, `rmsprop_step` or `adagrad_step` of `kernels.cu` over all of them,
//! instead of a kernel per arithmetic step and parameter.
//!
//! The table (u64 words; the layout is described above `OPT_CHUNK` in `kernels.cu`) holds per
//! set its length, flags, the device addresses of its contiguous elements, and the step's
//! scalars, computed here exactly as `backend::cpu::optim` computes them for its loops (rounded
//! to the element type, the same `1 - w` in that type): the kernels then repeat the CPU's
//! arithmetic operation for operation, so a CUDA step gives the CPU's numbers.

use cudarc::driver::DevicePtr;

use super::buffer::{DTypeMap, DeviceElement, map_dtype};
use super::kernels;
use super::launch::{Arg, dev_of, device_buffer, device_buffer_mut, launch_blocks};
use crate::backend::Buffer;
use crate::backend::cpu::optim::Update;
use crate::{Element, Error, Result};

/// The op named in errors.
const OP: &str = "fused optimizer step";

/// Elements per chunk (`OPT_CHUNK` in `kernels.cu`): one block runs one chunk at a time.
const CHUNK: usize = 4096;

/// Scalar words per set (the `k0 .. k9` of `kernels.cu`).
const SCALARS: usize = 10;

/// Words per set (`OPT_SET_WORDS` in `kernels.cu`): length, flags, parameter, gradient, three
/// state addresses, the scalars.
const SET_WORDS: usize = 7 + SCALARS;

/// One parameter's buffers, each with the element offset of its tensor: written in place
/// (`param`, `state`) or read (`grad`), each `numel` contiguous elements from its offset.
#[derive(Debug)]
pub(crate) struct Set<'a> {
    /// The parameter's buffer.
    pub(crate) param: (&'a mut Buffer, usize),
    /// Its gradient's.
    pub(crate) grad: (&'a Buffer, usize),
    /// The state buffers, in the order the [`Update`] names.
    pub(crate) state: Vec<(&'a mut Buffer, usize)>,
    /// The number of elements.
    pub(crate) numel: usize,
    /// This step's coefficients.
    pub(crate) update: Update,
}

/// Runs one fused step over `sets` (one group, one algorithm, one dtype and device): one upload
/// and one launch.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the sets mix algorithms, devices or dtypes, or a tensor's
/// elements run past its buffer (nothing is launched then); a driver error from the upload or
/// the launch.
pub(crate) fn step(sets: Vec<Set<'_>>) -> Result<()> {
    let Some(first) = sets.first() else {
        return Ok(());
    };
    let (dev, fb) = dev_of(&*first.param.0)?;
    dev.bind()?;
    let (ordinal, dtype) = (fb.ordinal, fb.dtype());
    let base = kernel_base(&first.update);
    let size = dtype.size_of() as u64;
    let mut table: Vec<u64> = Vec::with_capacity(sets.len() * SET_WORDS);
    let mut chunks: Vec<u64> = Vec::new();
    for (index, set) in sets.into_iter().enumerate() {
        if kernel_base(&set.update) != base {
            return refuse("one launch takes one algorithm");
        }
        let n = set.numel;
        // The address of element 0 of a tensor: its buffer's, past its offset; checked to hold
        // all `n` elements (so the kernel never reads or writes outside the allocation).
        let check = |b: &super::DeviceBuffer, offset: usize| {
            if b.ordinal != ordinal || b.dtype() != dtype {
                return refuse("every tensor must be of one dtype on one device");
            }
            if offset.checked_add(n).is_none_or(|end| end > b.len()) {
                return refuse("a tensor's elements run past its buffer");
            }
            Ok(offset as u64 * size)
        };
        let (pb, po) = set.param;
        let pb = device_buffer_mut(dev, OP, pb)?;
        let p = pb.ptr_mut(&dev.stream) + check(pb, po)?;
        let (gb, go) = set.grad;
        let gb = device_buffer(dev, OP, gb)?;
        let g = gb.ptr(&dev.stream) + check(gb, go)?;
        let mut state = [0u64; 3];
        let roles = state_roles(&set.update, set.state.len());
        let Some(roles) = roles else {
            return refuse("the state does not match the algorithm");
        };
        for ((sb, so), role) in set.state.into_iter().zip(roles) {
            let sb = device_buffer_mut(dev, OP, sb)?;
            state[role] = sb.ptr_mut(&dev.stream) + check(sb, so)?;
        }
        let (flags, k) = map_dtype(dtype, Scalars(&set.update));
        table.extend([n as u64, flags, p, g, state[0], state[1], state[2]]);
        table.extend(k.iter().map(|v| v.to_bits()));
        for start in (0..n).step_by(CHUNK) {
            chunks.extend([index as u64, start as u64]);
        }
    }
    if chunks.is_empty() {
        return Ok(());
    }
    let nsets = (table.len() / SET_WORDS) as u64;
    let nchunks = chunks.len() / 2;
    table.extend(chunks);
    // Freed (in stream order, by cudarc) when it drops after the launch is issued.
    let words = dev
        .stream
        .clone_htod(&table)
        .map_err(|e| dev.error(OP, e))?;
    let args = [
        Arg::U64(words.device_ptr(&dev.stream).0),
        Arg::U64(nsets),
        Arg::U64(nchunks as u64),
    ];
    // Every address in the table points into a buffer the caller holds locked (written ones
    // write-locked, each storage distinct) until this function returns, which is after the
    // launch is issued; every set's `n` elements lie inside its buffers (checked above).
    launch_blocks(dev, OP, &kernels::name(base, dtype), nchunks, &args)
}

/// The error for sets one launch cannot take.
fn refuse<R>(why: &str) -> Result<R> {
    Err(Error::InvalidArgument(format!("fused update: {why}")))
}

/// The base name of the kernel that runs `update`.
fn kernel_base(update: &Update) -> &'static str {
    match update {
        Update::Adam(_) => "adam_step",
        Update::Sgd(_) => "sgd_step",
        Update::RmsProp(_) => "rmsprop_step",
        Update::Adagrad(_) => "adagrad_step",
    }
}

/// The kernel's state slot (`state0 .. state2`) of each of the `len` state tensors the update
/// names, in order; `None` when `len` is not what the update uses.
fn state_roles(update: &Update, len: usize) -> Option<Vec<usize>> {
    let roles = match update {
        Update::Adam(c) if c.amsgrad => vec![0, 1, 2],
        Update::Adam(_) => vec![0, 1],
        Update::Sgd(c) if c.momentum != 0.0 => vec![0],
        Update::Sgd(_) => vec![],
        Update::RmsProp(c) => {
            let mut r = vec![0];
            if c.momentum > 0.0 {
                r.push(1);
            }
            if c.centered {
                r.push(2);
            }
            r
        }
        Update::Adagrad(_) => vec![0],
    };
    (roles.len() == len).then_some(roles)
}

/// The flags and scalars of one set for element type `T`: each scalar rounded to `T` (and any
/// arithmetic between scalars done in `T`) exactly as the CPU kernel does, then widened to
/// `f64` (exact) for the table.
struct Scalars<'a>(&'a Update);

impl DTypeMap for Scalars<'_> {
    type Output = (u64, [f64; SCALARS]);

    fn f<T: DeviceElement>(self) -> Self::Output {
        let s = |v: f64| T::from_f64(v);
        let mut k = [0.0; SCALARS];
        let mut put = |vals: &[T]| {
            for (slot, v) in k.iter_mut().zip(vals) {
                *slot = Element::to_f64(*v);
            }
        };
        let sign = |maximize: bool| if maximize { -T::one() } else { T::one() };
        let flag = |on: bool, bit: u64| if on { bit } else { 0 };
        let flags = match *self.0 {
            Update::Adam(c) => {
                let w: T = s(1.0 - c.beta1);
                let use_wd = c.weight_decay != 0.0;
                put(&[
                    sign(c.maximize),
                    s(c.weight_decay),
                    s(1.0 - c.lr * c.weight_decay),
                    w,
                    T::one() - w,
                    s(c.beta2),
                    s(1.0 - c.beta2),
                    s(c.bias_correction2_sqrt),
                    s(c.eps),
                    s(-c.step_size),
                ]);
                flag(use_wd && !c.decoupled, 1)
                    | flag(use_wd && c.decoupled, 2)
                    | flag(w.abs() < s(0.5), 4)
                    | flag(c.amsgrad, 8)
            }
            Update::Sgd(c) => {
                put(&[
                    sign(c.maximize),
                    s(c.weight_decay),
                    s(-c.lr),
                    s(c.momentum),
                    s(1.0 - c.dampening),
                ]);
                flag(c.weight_decay != 0.0, 1)
                    | flag(c.momentum != 0.0, 2)
                    | flag(c.first, 4)
                    | flag(c.nesterov, 8)
            }
            Update::RmsProp(c) => {
                let c1: T = s(1.0 - c.alpha);
                put(&[
                    sign(c.maximize),
                    s(c.weight_decay),
                    s(c.alpha),
                    c1,
                    T::one() - c1,
                    s(c.eps),
                    s(c.momentum),
                    s(-c.lr),
                ]);
                flag(c.weight_decay != 0.0, 1)
                    | flag(c.momentum > 0.0, 2)
                    | flag(c.centered, 4)
                    | flag(c1.abs() < s(0.5), 8)
            }
            Update::Adagrad(c) => {
                put(&[sign(c.maximize), s(c.weight_decay), s(c.eps), s(-c.clr)]);
                flag(c.weight_decay != 0.0, 1)
            }
        };
        (flags, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::backend::cpu::optim::{AdamCoeffs, RmsPropCoeffs};

    fn adam(beta1: f64, weight_decay: f64, decoupled: bool, amsgrad: bool) -> Update {
        Update::Adam(AdamCoeffs {
            lr: 0.1,
            beta1,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay,
            decoupled,
            amsgrad,
            maximize: true,
            step_size: 0.3,
            bias_correction2_sqrt: 0.7,
        })
    }

    #[test]
    fn scalars_are_rounded_to_the_element_type_as_the_cpu_kernel_rounds_them() {
        let (flags, k) = map_dtype(DType::F32, Scalars(&adam(0.9, 0.01, false, true)));
        assert_eq!(flags, 1 | 4 | 8);
        let w = (1.0f64 - 0.9) as f32;
        assert_eq!(k[0], -1.0);
        assert_eq!(k[3], f64::from(w));
        // `1 - w` in f32, as the CPU loop computes it, not `beta1` rounded.
        assert_eq!(k[4], f64::from(1.0f32 - w));
        assert_eq!(k[9], f64::from(-0.3f32));
        let (flags, k) = map_dtype(DType::F64, Scalars(&adam(0.2, 0.01, true, false)));
        assert_eq!(flags, 2);
        assert_eq!(k[2], 1.0 - 0.1 * 0.01);
        assert_eq!(k[9], -0.3);
    }

    #[test]
    fn the_device_adapter_refuses_host_tensors_and_changes_nothing() {
        let p = crate::Tensor::ones(&[4], DType::F32).unwrap();
        let g = crate::Tensor::ones(&[4], DType::F32).unwrap();
        let v = p.version();
        let err =
            crate::tensor::kernels::with_device_buffers(&[&p], &[&g], |_, _| Ok(())).unwrap_err();
        assert!(
            err.to_string()
                .contains("fused update: the tensors are not on a CUDA device"),
            "{err}"
        );
        assert_eq!(p.version(), v);
    }

    #[test]
    fn state_tensors_go_to_the_slots_the_kernels_read() {
        let rms = |momentum, centered| {
            Update::RmsProp(RmsPropCoeffs {
                lr: 0.01,
                alpha: 0.99,
                eps: 1e-8,
                weight_decay: 0.0,
                momentum,
                centered,
                maximize: false,
            })
        };
        assert_eq!(state_roles(&rms(0.0, true), 2), Some(vec![0, 2]));
        assert_eq!(state_roles(&rms(0.5, true), 3), Some(vec![0, 1, 2]));
        assert_eq!(state_roles(&rms(0.5, false), 2), Some(vec![0, 1]));
        assert_eq!(
            state_roles(&adam(0.9, 0.0, false, true), 3),
            Some(vec![0, 1, 2])
        );
        assert_eq!(state_roles(&adam(0.9, 0.0, false, false), 3), None);
    }

    #[test]
    fn the_table_layout_matches_the_kernel_source() {
        let src = kernels::SOURCE;
        assert!(src.contains(&format!("#define OPT_CHUNK {CHUNK}\n")));
        assert!(src.contains(&format!("#define OPT_SET_WORDS {SET_WORDS}\n")));
        for base in ["adam_step", "sgd_step", "rmsprop_step", "adagrad_step"] {
            for dtype in [DType::F32, DType::F64] {
                let name = kernels::name(base, dtype);
                assert!(kernels::NAMES.contains(&name.as_str()), "{name}");
            }
        }
        assert_eq!(kernel_base(&adam(0.9, 0.0, false, false)), "adam_step");
    }

    /// With NVRTC on the loader path (see `backend::cuda::tests`), each step kernel's PTX
    /// rounds as the CPU does: correctly rounded division and square root, a fused
    /// multiply-add only where the source asks for one (SGD's every update is one).
    #[test]
    fn the_step_kernels_compile_with_ieee_division_square_root_and_explicit_fma() {
        // SAFETY: only `dlopen`s candidate file names of the NVRTC library.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            println!("skipped: libnvrtc.so not found, so the kernel source was not compiled");
            return;
        }
        let ptx = kernels::compile().unwrap().to_src();
        let body = |name: &str| {
            let start = ptx.find(&format!(".entry {name}(")).expect(name);
            let rest = &ptx[start + 1..];
            rest[..rest.find(".entry").unwrap_or(rest.len())].to_string()
        };
        for (t, bits) in [("f32", "f32"), ("f64", "f64")] {
            let adam = body(&format!("adam_step_{t}"));
            assert!(adam.contains(&format!("sqrt.rn.{bits}")), "adam_step_{t}");
            assert!(adam.contains(&format!("div.rn.{bits}")), "adam_step_{t}");
            assert!(
                adam.contains(&format!("fma.rn.{bits}")),
                "adam_step_{t}: L2 decay"
            );
            let sgd = body(&format!("sgd_step_{t}"));
            assert!(sgd.contains(&format!("fma.rn.{bits}")), "sgd_step_{t}");
            assert!(!sgd.contains("mad."), "sgd_step_{t}: no contraction");
            assert!(!adam.contains("approx"), "adam_step_{t}: no approximate op");
        }
        println!("compiled: the step kernels are in the PTX, with IEEE rounding");
    }
}
