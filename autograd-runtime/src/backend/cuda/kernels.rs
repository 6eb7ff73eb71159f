//! The kernel source (`kernels.cu`), its compilation by NVRTC (once per process: the PTX is then
//! loaded into each device's context), and the argument types the kernels take.

use cudarc::driver::DeviceRepr;
use cudarc::nvrtc::{CompileOptions, Ptx, compile_ptx_with_opts};

use crate::DType;
use crate::backend::{BinaryOp, GradFormula, UnaryOp};
use crate::layout::Layout;
use crate::sync::statics::OnceLock;

/// The CUDA C++ source of every kernel: the math they share with the generated kernels
/// (`math.cuh`), then `kernels.cu`.
pub(crate) const SOURCE: &str = concat!(include_str!("math.cuh"), include_str!("kernels.cu"));

/// The most dimensions a tensor handed to a kernel may have (`MAX_DIMS` in `kernels.cu`).
pub(crate) const MAX_DIMS: usize = 8;

/// Threads per block (`BLOCK` in `kernels.cu`; the reductions' trees assume it).
pub(crate) const BLOCK: u32 = 256;

/// Columns per block of `sum_cols` (`COLS_TILE` in `kernels.cu`).
pub(crate) const COLS_TILE: usize = 32;

/// Every kernel of `kernels.cu` is instantiated once per element type (`unary_f32`,
/// `unary_f64`, ...): the names for base names `$base`, plus the kernels listed whole.
macro_rules! kernel_names {
    ([$($base:literal),* $(,)?], [$($whole:literal),* $(,)?]) => {
        &[$(concat!($base, "_f32"), concat!($base, "_f64"),)* $($whole,)*]
    };
}

/// Every kernel `kernels.cu` defines, loaded by name into each device's module.
pub(crate) const NAMES: &[&str] = kernel_names!(
    [
        "unary",
        "pow_scalar",
        "binary",
        "binary_scalar",
        "grad_formula",
        "binary_inplace",
        "fill",
        "copy",
        "has_nan",
        "sum",
        "sum_cols",
        "softmax",
        "argmax",
        "index_select",
        "index_add",
        "gather",
        "scatter",
        "adam_step",
        "sgd_step",
        "rmsprop_step",
        "adagrad_step",
    ],
    ["cast_f32_f64", "cast_f64_f32"]
);

/// A kernel of `kernels.cu` by its base name: the names of its two instantiations, as listed
/// in [`NAMES`]. Made by [`kernel!`]; a launch picks one with [`Kernel::of`], with no formatting
/// or allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kernel {
    f32: &'static str,
    f64: &'static str,
}

impl Kernel {
    /// The two instantiations' names; call it through [`kernel!`], which spells both from one
    /// base name.
    pub(crate) const fn new(f32: &'static str, f64: &'static str) -> Kernel {
        Kernel { f32, f64 }
    }

    /// The instantiation for `dtype` (`kernel!("unary").of(DType::F32)` is `"unary_f32"`).
    pub(crate) fn of(self, dtype: DType) -> &'static str {
        match dtype {
            DType::F32 => self.f32,
            DType::F64 => self.f64,
            _ => unreachable!("invariant: {}", super::FLOATS_ONLY),
        }
    }
}

/// The [`Kernel`] of base name `$base` (`kernel!("unary")`: `unary_f32` and `unary_f64`).
macro_rules! kernel {
    ($base:literal) => {
        $crate::backend::cuda::kernels::Kernel::new(concat!($base, "_f32"), concat!($base, "_f64"))
    };
}
pub(crate) use kernel;

/// The compiled PTX, or NVRTC's error log. Compiled once per process: PTX is portable across
/// the devices' architectures (the driver finishes it for each when a context loads it).
pub(crate) fn ptx() -> Result<&'static Ptx, String> {
    static PTX: OnceLock<Result<Ptx, String>> = OnceLock::new();
    PTX.get_or_init(compile).as_ref().map_err(Clone::clone)
}

/// Compiles [`SOURCE`] with NVRTC.
pub(crate) fn compile() -> Result<Ptx, String> {
    compile_source(SOURCE, "autograd_kernels.cu")
        .map_err(|e| format!("NVRTC could not compile the kernels: {e}"))
}

/// Compiles CUDA C++ `source` with NVRTC, with the options every kernel of this backend is
/// built with (a generated kernel's too: `generated.rs`).
pub(crate) fn compile_source(source: &str, name: &str) -> Result<Ptx, String> {
    let opts = CompileOptions {
        // IEEE results: no flush-to-zero, correctly rounded division and square root, and no
        // contraction into fused multiply-adds (so formulas round as written, like the CPU's).
        ftz: Some(false),
        prec_div: Some(true),
        prec_sqrt: Some(true),
        fmad: Some(false),
        name: Some(name.into()),
        ..CompileOptions::default()
    };
    compile_ptx_with_opts(source, opts).map_err(|e| format!("{e:?}"))
}

/// A tensor's layout as a kernel reads it (`struct Layout` in `kernels.cu`): element `i` in C
/// order is at `offset + Σ (i's index along d) * strides[d]`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelLayout {
    ndim: u64,
    offset: u64,
    shape: [u64; MAX_DIMS],
    strides: [u64; MAX_DIMS],
    /// 1 when the element count is below 2^32, so the kernel may index in 32 bits.
    index32: u64,
}

// SAFETY: `KernelLayout` is `repr(C)`, made of `u64`s only (no padding, no pointers), and matches
// `struct Layout` in `kernels.cu` field for field, so passing it by value as a kernel parameter
// hands the kernel exactly these bytes.
unsafe impl DeviceRepr for KernelLayout {}

impl KernelLayout {
    /// `layout` for a kernel, or `None` with more than [`MAX_DIMS`] dims once merged.
    pub(crate) fn new(layout: &Layout) -> Option<KernelLayout> {
        KernelLayout::from_parts(&layout.shape, &layout.strides, layout.offset)
    }

    /// A dense C-order layout of `shape`.
    pub(crate) fn contiguous(shape: &[usize]) -> Option<KernelLayout> {
        KernelLayout::new(&Layout::contiguous(shape))
    }

    /// The layout of `shape`, `strides`, `offset`, with its dims merged where that leaves the
    /// C-order enumeration of the elements unchanged: size-1 dims are dropped, and a dim folds
    /// into the next one when its stride is that dim's stride times its size. A dense tensor,
    /// whatever its rank, becomes one dim, which the kernels index with no division.
    pub(crate) fn from_parts(
        shape: &[usize],
        strides: &[usize],
        offset: usize,
    ) -> Option<KernelLayout> {
        let mut l = KernelLayout {
            ndim: 0,
            offset: offset as u64,
            shape: [1; MAX_DIMS],
            strides: [0; MAX_DIMS],
            index32: u64::from(shape.iter().product::<usize>() < 1 << 32),
        };
        if shape.contains(&0) {
            // No element: no kernel reads the layout.
            return (shape.len() <= MAX_DIMS).then_some(l);
        }
        let mut n = 0;
        for (&size, &stride) in shape.iter().zip(strides) {
            let (size, stride) = (size as u64, stride as u64);
            if size == 1 {
                continue;
            }
            if n > 0 && l.strides[n - 1] == stride * size {
                l.shape[n - 1] *= size;
                l.strides[n - 1] = stride;
                continue;
            }
            if n == MAX_DIMS {
                return None;
            }
            l.shape[n] = size;
            l.strides[n] = stride;
            n += 1;
        }
        l.ndim = n as u64;
        Some(l)
    }
}

impl KernelLayout {
    /// Whether an element-wise kernel may read this operand in 16-byte packs (`load_pack` in
    /// `kernels.cu`) from a buffer at device address `addr` of `elem`-byte elements: a dense run,
    /// or a row broadcast down a matrix (strides `[0, 1]`) whose rows are whole packs, starting
    /// 16-byte aligned.
    fn packs(&self, addr: u64, elem: usize) -> bool {
        let pack = (16 / elem) as u64;
        let laid_out = match self.ndim {
            0 => true,
            1 => self.strides[0] == 1,
            2 => self.strides[0] == 0 && self.strides[1] == 1 && self.shape[1].is_multiple_of(pack),
            _ => false,
        };
        laid_out && (addr + self.offset * elem as u64).is_multiple_of(16)
    }

    /// `(rows, cols, row stride, offset)` when this layout, of `m` outputs times `k` reduced
    /// elements (kept dims first, as `sum` takes it), reads the reduced elements of each output
    /// down a column of a matrix whose rows are dense: `sum_cols`' case.
    pub(crate) fn as_columns(&self, m: usize, k: usize) -> Option<(usize, usize, usize, usize)> {
        let (m, k) = (m as u64, k as u64);
        let columns = self.ndim == 2
            && self.shape[0] == m
            && self.shape[1] == k
            && self.strides[0] == 1
            && self.strides[1] >= m;
        columns.then(|| {
            (
                k as usize,
                m as usize,
                self.strides[1] as usize,
                self.offset as usize,
            )
        })
    }
}

/// The `vec` argument of an element-wise kernel over `n` elements of `dtype` writing a dense
/// output at `out`, reading `operands` (each a layout and its buffer's address), and the work
/// items to launch: `(1, packs)` when every operand and the output can move in 16-byte packs,
/// else `(0, n)`.
pub(crate) fn vector_plan(
    dtype: DType,
    n: usize,
    operands: &[(&KernelLayout, u64)],
    out: u64,
) -> (i32, usize) {
    let elem = dtype.size_of();
    let pack = 16 / elem;
    let packs = n >= pack
        && out.is_multiple_of(16)
        && operands.iter().all(|(l, addr)| l.packs(*addr, elem));
    if packs { (1, n.div_ceil(pack)) } else { (0, n) }
}

/// `op`'s code in `unary_op` of `kernels.cu` (and of the generated kernels' prelude).
pub(crate) fn unary_code(op: UnaryOp) -> i32 {
    i32::from(op.code())
}

/// `op`'s code in `binary_op` of `kernels.cu`.
pub(crate) fn binary_code(op: BinaryOp) -> i32 {
    i32::from(op.code())
}

/// `op`'s code in `grad_formula_op` of `kernels.cu`, and its exponent (0 unless `Pow`).
pub(crate) fn grad_formula_code(op: GradFormula) -> (i32, f64) {
    match op {
        GradFormula::Tanh => (0, 0.0),
        GradFormula::Sigmoid => (1, 0.0),
        GradFormula::Relu => (2, 0.0),
        GradFormula::Sqrt => (3, 0.0),
        GradFormula::Abs => (4, 0.0),
        GradFormula::Sin => (5, 0.0),
        GradFormula::Cos => (6, 0.0),
        GradFormula::Pow { exponent } => (7, exponent),
    }
}
