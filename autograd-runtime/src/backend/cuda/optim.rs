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
use crate::backend::{StepSet, Update};
use crate::{DType, DataElement, Error, Result};

/// The op named in errors.
const OP: &str = "fused optimizer step";

/// Elements per chunk (`OPT_CHUNK` in `kernels.cu`): one block runs one chunk at a time.
const CHUNK: usize = 4096;

/// Scalar words per set (the `k0 .. k9` of `kernels.cu`).
const SCALARS: usize = 10;

/// Words per set (`OPT_SET_WORDS` in `kernels.cu`): length, flags, parameter, gradient, three
/// state addresses, the scalars.
const SET_WORDS: usize = 7 + SCALARS;

/// Runs one fused step over `sets` (one group, one algorithm, one dtype and device): one upload
/// and one launch.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the sets mix algorithms, devices or dtypes, or a tensor's
/// elements run past its buffer (nothing is launched then); a driver error from the upload or
/// the launch.
pub(crate) fn step(sets: Vec<StepSet<'_>>) -> Result<()> {
    let Some(first) = sets.first() else {
        return Ok(());
    };
    let (dev, fb) = dev_of(&*first.param.0)?;
    dev.bind()?;
    let (ordinal, dtype) = (fb.ordinal, fb.dtype());
    let size = dtype.size_of() as u64;
    let mut addrs = Vec::with_capacity(sets.len());
    for set in sets {
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
        let mut state = Vec::with_capacity(set.state.len());
        for (sb, so) in set.state {
            let sb = device_buffer_mut(dev, OP, sb)?;
            state.push(sb.ptr_mut(&dev.stream) + check(sb, so)?);
        }
        addrs.push(SetAddrs {
            n,
            p,
            g,
            state,
            update: set.update,
        });
    }
    let Some(table) = Table::new(dtype, &addrs)? else {
        return Ok(());
    };
    // Freed (in stream order, by cudarc) when it drops after the launch is issued.
    let words = dev
        .stream
        .clone_htod(&table.words)
        .map_err(|e| dev.error(OP, e))?;
    let args = [
        Arg::U64(words.device_ptr(&dev.stream).0),
        Arg::U64(table.nsets),
        Arg::U64(table.nchunks as u64),
    ];
    // Every address in the table points into a buffer the caller holds locked (written ones
    // write-locked, each storage distinct) until this function returns, which is after the
    // launch is issued; every set's `n` elements lie inside its buffers (checked above).
    let name = table.kernel.of(dtype);
    launch_blocks(dev, OP, name, table.nchunks, &args)
}

/// One set as the table describes it: its length, the addresses of its parameter, gradient and
/// state (in the order its [`Update`] names them), and its coefficients.
#[derive(Debug)]
struct SetAddrs {
    n: usize,
    p: u64,
    g: u64,
    state: Vec<u64>,
    update: Update,
}

/// The words one launch reads (see `kernels.cu`), and the launch's kernel and sizes.
#[derive(Debug)]
struct Table {
    words: Vec<u64>,
    kernel: kernels::Kernel,
    nsets: u64,
    nchunks: usize,
}

impl Table {
    /// The table for `sets` of `dtype`; `None` when there is no element to update.
    fn new(dtype: DType, sets: &[SetAddrs]) -> Result<Option<Table>> {
        let Some(first) = sets.first() else {
            return Ok(None);
        };
        let kernel = kernel_base(&first.update);
        let mut words: Vec<u64> = Vec::with_capacity(sets.len() * SET_WORDS);
        let mut chunks: Vec<u64> = Vec::new();
        for (index, set) in sets.iter().enumerate() {
            if kernel_base(&set.update) != kernel {
                return refuse("one launch takes one algorithm");
            }
            let Some(roles) = state_roles(&set.update, set.state.len()) else {
                return refuse("the state does not match the algorithm");
            };
            let mut state = [0u64; 3];
            for (&addr, role) in set.state.iter().zip(roles) {
                state[role] = addr;
            }
            let (flags, k) = map_dtype(dtype, Scalars(&set.update));
            words.extend([
                set.n as u64,
                flags,
                set.p,
                set.g,
                state[0],
                state[1],
                state[2],
            ]);
            words.extend(k.iter().map(|v| v.to_bits()));
            for start in (0..set.n).step_by(CHUNK) {
                chunks.extend([index as u64, start as u64]);
            }
        }
        if chunks.is_empty() {
            return Ok(None);
        }
        let nchunks = chunks.len() / 2;
        words.extend(chunks);
        Ok(Some(Table {
            words,
            kernel,
            nsets: sets.len() as u64,
            nchunks,
        }))
    }
}

/// The error for sets one launch cannot take.
fn refuse<R>(why: &str) -> Result<R> {
    Err(Error::InvalidArgument(format!("fused update: {why}")))
}

/// The base name of the kernel that runs `update`.
fn kernel_base(update: &Update) -> kernels::Kernel {
    match update {
        Update::Adam(_) => kernels::kernel!("adam_step"),
        Update::Sgd(_) => kernels::kernel!("sgd_step"),
        Update::RmsProp(_) => kernels::kernel!("rmsprop_step"),
        Update::Adagrad(_) => kernels::kernel!("adagrad_step"),
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
                *slot = DataElement::to_f64(*v);
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
    use crate::backend::{AdagradCoeffs, AdamCoeffs, RmsPropCoeffs, SgdCoeffs};

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
        for updates in cases() {
            for dtype in [DType::F32, DType::F64] {
                let name = kernel_base(&updates[0]).of(dtype);
                assert!(kernels::NAMES.contains(&name), "{name}");
            }
        }
        assert_eq!(
            kernel_base(&adam(0.9, 0.0, false, false)).of(DType::F64),
            "adam_step_f64"
        );
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

    // ----- the kernels' arithmetic on the host ------------------------------------------------

    /// What `kernels.cu` needs from CUDA to compile as host C++ (one thread at a time).
    const SHIM: &str = r#"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
typedef unsigned long long u64;
struct Dim { unsigned x; };
static Dim blockIdx, threadIdx, blockDim, gridDim;
static inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline float m_sqrt(float x) { return std::sqrt(x); }
inline double m_sqrt(double x) { return std::sqrt(x); }
template <typename T> inline bool is_nan(T x) { return x != x; }
"#;

    /// Reads the table and the data blob, makes the table's offsets into addresses in the blob,
    /// runs the kernel for every (block, thread) of a small grid (3 blocks: the grid-stride loop
    /// over chunks runs), writes the blob back.
    const MAIN: &str = r#"
static std::vector<unsigned char> slurp(const char* path) {
    std::vector<unsigned char> v;
    FILE* f = std::fopen(path, "rb");
    if (!f) return v;
    unsigned char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) v.insert(v.end(), buf, buf + n);
    std::fclose(f);
    return v;
}
int main(int argc, char** argv) {
    if (argc != 6) return 2;
    std::vector<unsigned char> tb = slurp(argv[2]);
    std::vector<unsigned char> bb = slurp(argv[3]);
    std::vector<u64> table(tb.size() / 8);
    std::memcpy(table.data(), tb.data(), tb.size());
    std::vector<double> blob(bb.size() / 8 + 1);
    std::memcpy(blob.data(), bb.data(), bb.size());
    u64 nsets = std::strtoull(argv[4], 0, 10), nchunks = std::strtoull(argv[5], 0, 10);
    u64 base = (u64)blob.data();
    for (u64 s = 0; s < nsets; ++s)
        for (int w = 2; w < 7; ++w)
            if (table[s * OPT_SET_WORDS + w]) table[s * OPT_SET_WORDS + w] += base;
    void (*k)(const u64*, u64, u64) = 0;
    const char* name = argv[1];
    if (!std::strcmp(name, "adam_step_f32")) k = adam_step_f32;
    if (!std::strcmp(name, "adam_step_f64")) k = adam_step_f64;
    if (!std::strcmp(name, "sgd_step_f32")) k = sgd_step_f32;
    if (!std::strcmp(name, "sgd_step_f64")) k = sgd_step_f64;
    if (!std::strcmp(name, "rmsprop_step_f32")) k = rmsprop_step_f32;
    if (!std::strcmp(name, "rmsprop_step_f64")) k = rmsprop_step_f64;
    if (!std::strcmp(name, "adagrad_step_f32")) k = adagrad_step_f32;
    if (!std::strcmp(name, "adagrad_step_f64")) k = adagrad_step_f64;
    if (!k) return 3;
    blockDim.x = 256;
    gridDim.x = 3;
    for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
        for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x) k(table.data(), nsets, nchunks);
    FILE* f = std::fopen(argv[3], "wb");
    std::fwrite(blob.data(), 1, bb.size(), f);
    std::fclose(f);
    return 0;
}
"#;

    /// The optimizer part of `kernels.cu` compiled as host C++ (no contraction, as NVRTC is
    /// told), or `None` without a C++ compiler.
    fn host_kernels(dir: &std::path::Path) -> Option<std::path::PathBuf> {
        let section = &kernels::SOURCE[kernels::SOURCE.find("// ----- fused optimizer steps")?..];
        let cpp = dir.join("optim_kernels.cpp");
        std::fs::write(&cpp, format!("{SHIM}{section}{MAIN}")).unwrap();
        let exe = dir.join("optim_kernels");
        let out = std::process::Command::new("c++")
            .args(["-std=c++14", "-O1", "-ffp-contract=off", "-o"])
            .arg(&exe)
            .arg(&cpp)
            .output()
            .ok()?;
        assert!(
            out.status.success(),
            "the kernels do not compile as host C++: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(exe)
    }

    /// A deterministic value in `[lo, hi)`.
    fn value(seed: &mut u64, lo: f64, hi: f64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((*seed >> 11) as f64 / (1u64 << 53) as f64)
    }

    /// One configuration's sets: lengths over several chunks (one partial), one tiny, one
    /// empty; each with its gradient, state and coefficients (step counts differ per set).
    fn cases() -> Vec<Vec<Update>> {
        let adam = |beta1: f64, wd: f64, decoupled: bool, amsgrad: bool, maximize: bool| {
            (1..=4)
                .map(|step| {
                    let t = f64::from(step);
                    Update::Adam(AdamCoeffs {
                        lr: 0.01,
                        beta1,
                        beta2: 0.999,
                        eps: 1e-8,
                        weight_decay: wd,
                        decoupled,
                        amsgrad,
                        maximize,
                        step_size: 0.01 / (1.0 - beta1.powf(t)),
                        bias_correction2_sqrt: (1.0 - 0.999f64.powf(t)).sqrt(),
                    })
                })
                .collect::<Vec<_>>()
        };
        let sgd = |momentum: f64, dampening: f64, wd: f64, nesterov: bool, maximize: bool| {
            [true, false, false, true]
                .iter()
                .map(|&first| {
                    Update::Sgd(SgdCoeffs {
                        lr: 0.1,
                        momentum,
                        dampening,
                        weight_decay: wd,
                        nesterov,
                        maximize,
                        first,
                    })
                })
                .collect::<Vec<_>>()
        };
        let rms = |alpha: f64, momentum: f64, centered: bool, wd: f64| {
            vec![
                Update::RmsProp(RmsPropCoeffs {
                    lr: 0.01,
                    alpha,
                    eps: 1e-8,
                    weight_decay: wd,
                    momentum,
                    centered,
                    maximize: true,
                });
                4
            ]
        };
        let adagrad = |wd: f64, maximize: bool| {
            (1..=4)
                .map(|step| {
                    Update::Adagrad(AdagradCoeffs {
                        clr: 0.1 / (1.0 + f64::from(step - 1) * 0.01),
                        eps: 1e-10,
                        weight_decay: wd,
                        maximize,
                    })
                })
                .collect::<Vec<_>>()
        };
        vec![
            adam(0.9, 0.0, false, false, false),
            adam(0.9, 0.1, false, true, true),
            adam(0.3, 0.1, true, true, false),
            adam(0.9, 0.01, true, false, true),
            sgd(0.0, 0.0, 0.0, false, false),
            sgd(0.0, 0.0, 0.01, false, true),
            sgd(0.9, 0.0, 0.01, true, false),
            sgd(0.9, 0.1, 0.0, false, true),
            rms(0.99, 0.0, false, 0.0),
            rms(0.99, 0.5, true, 0.1),
            rms(0.3, 0.5, true, 0.0),
            rms(0.9, 0.0, true, 0.0),
            adagrad(0.0, false),
            adagrad(0.1, true),
        ]
    }

    /// The number of state tensors `u` takes.
    fn state_len(u: &Update) -> usize {
        (0..=3)
            .find(|&n| state_roles(u, n).is_some())
            .expect("some length")
    }

    /// Runs `updates` (one set each) through the CPU fused kernel and through the host build of
    /// the CUDA kernel; returns the two results (every parameter, then every state) as bits.
    fn both<T: DeviceElement>(
        exe: &std::path::Path,
        dir: &std::path::Path,
        updates: &[Update],
    ) -> (Vec<u64>, Vec<u64>) {
        let lens = [2 * CHUNK + 300, 3, CHUNK, 0];
        let mut seed = 7;
        // Per set: param, grad, states; squares' states positive and above the squared averages.
        let mut arrays: Vec<Vec<Vec<T>>> = Vec::new();
        for (u, &n) in updates.iter().zip(&lens) {
            let mut a = vec![
                (0..n)
                    .map(|_| T::from_f64(value(&mut seed, -2.0, 2.0)))
                    .collect(),
                (0..n)
                    .map(|_| T::from_f64(value(&mut seed, -1.0, 1.0)))
                    .collect(),
            ];
            for i in 0..state_len(u) {
                let positive = match u {
                    Update::Adam(_) => i >= 1,
                    Update::RmsProp(_) => i == 0,
                    Update::Adagrad(_) => true,
                    Update::Sgd(_) => false,
                };
                let (lo, hi) = if positive { (1.0, 2.0) } else { (-0.5, 0.5) };
                a.push(
                    (0..n)
                        .map(|_| T::from_f64(value(&mut seed, lo, hi)))
                        .collect(),
                );
            }
            arrays.push(a);
        }
        // The emulation: the arrays in one blob (from byte 8, so no address is 0).
        let size = std::mem::size_of::<T>();
        let mut blob: Vec<u8> = vec![0; 8];
        let mut sets = Vec::new();
        for (u, a) in updates.iter().zip(&arrays) {
            let mut offsets = Vec::new();
            for v in a {
                offsets.push(blob.len() as u64);
                for x in v {
                    let bytes: Vec<u8> = if size == 4 {
                        (crate::DataElement::to_f64(*x) as f32)
                            .to_le_bytes()
                            .to_vec()
                    } else {
                        crate::DataElement::to_f64(*x).to_le_bytes().to_vec()
                    };
                    blob.extend(bytes);
                }
                while !blob.len().is_multiple_of(8) {
                    blob.push(0);
                }
            }
            sets.push(SetAddrs {
                n: a[0].len(),
                p: offsets[0],
                g: offsets[1],
                state: offsets[2..].to_vec(),
                update: *u,
            });
        }
        let table = Table::new(T::DTYPE, &sets).unwrap().unwrap();
        let words: Vec<u8> = table.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(dir.join("table.bin"), words).unwrap();
        std::fs::write(dir.join("blob.bin"), &blob).unwrap();
        let status = std::process::Command::new(exe)
            .arg(table.kernel.of(T::DTYPE))
            .arg(dir.join("table.bin"))
            .arg(dir.join("blob.bin"))
            .arg(table.nsets.to_string())
            .arg(table.nchunks.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "{status}");
        let out = std::fs::read(dir.join("blob.bin")).unwrap();
        let read = |at: usize| -> u64 {
            if size == 4 {
                let b: [u8; 4] = out[at..at + 4].try_into().unwrap();
                (f64::from(f32::from_le_bytes(b))).to_bits()
            } else {
                let b: [u8; 8] = out[at..at + 8].try_into().unwrap();
                u64::from_le_bytes(b)
            }
        };
        let mut emulated = Vec::new();
        for set in &sets {
            for &at in std::iter::once(&set.p).chain(&set.state) {
                emulated.extend((0..set.n).map(|i| read(at as usize + i * size)));
            }
        }
        // The CPU fused kernel on the same data.
        let mut cpu_sets = Vec::new();
        for (u, a) in updates.iter().zip(arrays.iter_mut()) {
            let (pg, state) = a.split_at_mut(2);
            let (p, g) = pg.split_at_mut(1);
            cpu_sets.push(crate::backend::cpu::optim::Set {
                param: &mut p[0][..],
                grad: &g[0][..],
                state: state.iter_mut().map(|s| &mut s[..]).collect(),
                update: *u,
            });
        }
        crate::backend::cpu::optim::step(cpu_sets);
        let mut cpu = Vec::new();
        for a in &arrays {
            for v in std::iter::once(&a[0]).chain(&a[2..]) {
                cpu.extend(v.iter().map(|x| crate::DataElement::to_f64(*x).to_bits()));
            }
        }
        (emulated, cpu)
    }

    /// The CUDA kernels' source, compiled for the host with the system C++ compiler (no GPU
    /// needed), run over tables built by [`Table::new`]: every configuration's parameters and
    /// states equal the CPU fused kernel's bit for bit, in f32 and f64. Skips (saying so)
    /// without a C++ compiler.
    #[test]
    fn the_step_kernels_run_on_the_host_give_the_cpu_fused_kernels_bits() {
        let dir =
            std::env::temp_dir().join(format!("autograd-optim-kernels-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let Some(exe) = host_kernels(&dir) else {
            println!("skipped: no C++ compiler (`c++`) to build the kernels for the host");
            return;
        };
        for updates in cases() {
            let name = kernel_base(&updates[0]).of(DType::F32);
            let (emulated, cpu) = both::<f32>(&exe, &dir, &updates);
            assert_eq!(emulated.len(), cpu.len());
            let bad = emulated.iter().zip(&cpu).position(|(a, b)| a != b);
            assert!(
                bad.is_none(),
                "{name} f32 {:?}: element {bad:?}",
                updates[0]
            );
            let (emulated, cpu) = both::<f64>(&exe, &dir, &updates);
            let bad = emulated.iter().zip(&cpu).position(|(a, b)| a != b);
            assert!(
                bad.is_none(),
                "{name} f64 {:?}: element {bad:?}",
                updates[0]
            );
        }
        std::fs::remove_dir_all(&dir).ok();
        println!("ran: the step kernels on the host equal the CPU fused kernels bit for bit");
    }
}
