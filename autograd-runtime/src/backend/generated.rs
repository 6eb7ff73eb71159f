//! A generated element-wise kernel: the straight-line program that fusion (`fusion/`, which
//! builds it) runs per element for the forward or the backward of a `#[differentiable(derive)]`
//! function. Backend-neutral: the CUDA backend prints it as CUDA C++ and compiles it
//! with NVRTC (one launch for the whole function), the CPU backend interprets it.
//!
//! Every instruction defines one register, numbered by its position; an operand names an
//! earlier register. Each formula is the one the op-by-op kernels compute (`kernels.cu`'s
//! `unary_op`, `binary_op`, `grad_formula_op` and `pow_scalar`), rounded to the element type after
//! every step, so a fused run and the op-by-op run round alike.

use std::fmt::Write as _;

use super::{BinaryOp, MapOp, UnaryOp};
use crate::sync::Ordering;
use crate::sync::statics::{AtomicU64, OnceLock};

#[cfg(test)]
pub(crate) mod samples;

/// One instruction: the value of one register.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Inst {
    /// Element `i` of input buffer `k`.
    Load(u16),
    /// Scalar argument `k`, converted to the element type.
    Scalar(u16),
    /// A constant, converted to the element type (small integers only: exact in both types).
    Const(i8),
    Unary(UnaryOp, u16),
    Binary(BinaryOp, u16, u16),
    /// `x^e` as `pow_scalar` computes it (`x`, then the exponent register).
    Pow(u16, u16),
    /// `pow`'s gradient: 0 for `e = 0` (PyTorch's `pow_backward`), `g (x + x)` for `e = 2`,
    /// else `g e x^(e - 1)` (`g`, `x`, `e`, and `e - 1` rounded from `f64`).
    PowGrad(u16, u16, u16, u16),
    /// `g` where `y > 0`, else 0 (`g`, `y`).
    ReluGrad(u16, u16),
    /// `min(max(x, lo), hi)`, NaN kept (`x`, `lo`, `hi`).
    Clamp(u16, u16, u16),
    /// 1 where `lo < x < hi`, else 0 (`x`, `lo`, `hi`; NaN included): clamp's gradient mask.
    Interior(u16, u16, u16),
    /// The error function, computed in double precision.
    Erf(u16),
    /// Softplus (`x`, `β`, `threshold`), as `MapOp::Softplus`.
    Softplus(u16, u16, u16),
    /// Softplus's slope (`x`, `β`, `threshold`), as `MapOp::SoftplusSlope`.
    SoftplusSlope(u16, u16, u16),
}

/// A generated kernel: `n_inputs` dense input buffers and `n_scalars` scalars in, one dense
/// buffer per entry of `outputs` out, all of one element type and element count.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GeneratedKernel {
    /// Unique per distinct kernel in this process: what a backend caches its compiled form by.
    pub(crate) id: u64,
    pub(crate) insts: Vec<Inst>,
    /// The registers written out, in order.
    pub(crate) outputs: Vec<u16>,
    pub(crate) n_inputs: usize,
    pub(crate) n_scalars: usize,
}

/// A unique id for a new generated kernel (what a backend caches its compiled form by).
pub(crate) fn next_id() -> u64 {
    static IDS: AtomicU64 = AtomicU64::new(0);
    // Relaxed: only uniqueness matters.
    IDS.fetch_add(1, Ordering::Relaxed)
}

/// A [`MapOp`] as a generated kernel of one input, and its scalar arguments: how a backend that
/// compiles generated kernels (CUDA) runs one in one launch without a kernel of its own. Built
/// once; run on the CPU, it gives the bits of the CPU's own map (tested below).
// Run by the CUDA backend; without it, only the test below runs it.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn map_kernel(op: MapOp) -> (&'static GeneratedKernel, [f64; 2]) {
    static KERNELS: OnceLock<[GeneratedKernel; 5]> = OnceLock::new();
    let kernels = KERNELS.get_or_init(|| {
        let bounded = |inst: Inst| GeneratedKernel {
            id: next_id(),
            insts: vec![Inst::Load(0), Inst::Scalar(0), Inst::Scalar(1), inst],
            outputs: vec![3],
            n_inputs: 1,
            n_scalars: 2,
        };
        [
            bounded(Inst::Clamp(0, 1, 2)),
            bounded(Inst::Interior(0, 1, 2)),
            GeneratedKernel {
                id: next_id(),
                insts: vec![Inst::Load(0), Inst::Erf(0)],
                outputs: vec![1],
                n_inputs: 1,
                n_scalars: 0,
            },
            bounded(Inst::Softplus(0, 1, 2)),
            bounded(Inst::SoftplusSlope(0, 1, 2)),
        ]
    });
    match op {
        MapOp::Clamp { lo, hi } => (&kernels[0], [lo, hi]),
        MapOp::ClampInterior { lo, hi } => (&kernels[1], [lo, hi]),
        MapOp::Erf => (&kernels[2], [0.0; 2]),
        MapOp::Softplus { beta, threshold } => (&kernels[3], [beta, threshold]),
        MapOp::SoftplusSlope { beta, threshold } => (&kernels[4], [beta, threshold]),
    }
}

// Printed by the CUDA backend; without it, only the host test below reads the source.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl GeneratedKernel {
    /// The kernel as CUDA C++ for element type `ty` (`"float"` or `"double"`): one
    /// `extern "C" __global__ void generated(...)` taking the input pointers, the output
    /// pointers, the scalars (as `ty`) and the element count, grid-stride over the elements.
    /// An input `repeated` names is one value read by every element. Compiled with the same
    /// options as `kernels.cu` (no contraction into fused multiply-adds), and built from the
    /// same math functions.
    pub(crate) fn cuda_source(&self, ty: &str, repeated: &[bool]) -> String {
        let mut s = String::with_capacity(2048);
        s.push_str(CUDA_PRELUDE);
        let _ = write!(
            s,
            "typedef {ty} T;\nextern \"C\" __global__ void generated("
        );
        let mut params: Vec<String> = Vec::new();
        params.extend((0..self.n_inputs).map(|k| format!("const T* __restrict__ in{k}")));
        params.extend((0..self.outputs.len()).map(|k| format!("T* __restrict__ out{k}")));
        params.extend((0..self.n_scalars).map(|k| format!("T s{k}")));
        params.push("u64 n".into());
        s.push_str(&params.join(", "));
        s.push_str(") {\n    GRID_STRIDE(i, n) {\n");
        for (r, inst) in self.insts.iter().enumerate() {
            let expr = match *inst {
                Inst::Load(k) if repeated.get(usize::from(k)).copied().unwrap_or(false) => {
                    format!("in{k}[0]")
                }
                inst => cuda_expr(inst),
            };
            let _ = writeln!(s, "        const T r{r} = {expr};");
        }
        for (k, r) in self.outputs.iter().enumerate() {
            let _ = writeln!(s, "        out{k}[i] = r{r};");
        }
        s.push_str("    }\n}\n");
        s
    }
}

/// The right-hand side of one register's definition.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn cuda_expr(inst: Inst) -> String {
    match inst {
        Inst::Load(k) => format!("in{k}[i]"),
        Inst::Scalar(k) => format!("s{k}"),
        Inst::Const(c) => format!("T({c})"),
        Inst::Unary(op, x) => format!("unary_op<T>({}, r{x})", op.code()),
        Inst::Binary(op, a, b) => {
            let sym = match op {
                BinaryOp::Add => "+",
                BinaryOp::Sub => "-",
                BinaryOp::Mul => "*",
                BinaryOp::Div => "/",
                _ => return format!("binary_op<T>({}, r{a}, r{b})", op.code()),
            };
            format!("r{a} {sym} r{b}")
        }
        Inst::Pow(x, e) => format!("pow_scalar<T>(r{x}, r{e})"),
        Inst::PowGrad(g, x, e, e1) => format!("pow_grad<T>(r{g}, r{x}, r{e}, r{e1})"),
        Inst::ReluGrad(g, y) => format!("(r{y} > T(0) ? r{g} : T(0))"),
        Inst::Clamp(x, lo, hi) => format!("clamp_op<T>(r{x}, r{lo}, r{hi})"),
        Inst::Interior(x, lo, hi) => format!("(r{x} > r{lo} && r{x} < r{hi} ? T(1) : T(0))"),
        Inst::Erf(x) => format!("m_erf(r{x})"),
        Inst::Softplus(x, b, t) => format!("softplus_op<T>(r{x}, r{b}, r{t})"),
        Inst::SoftplusSlope(x, b, t) => format!("softplus_slope<T>(r{x}, r{b}, r{t})"),
    }
}

/// What every generated kernel starts with: the op-by-op kernels' math (`cuda/math.cuh`, the
/// same functions, so a fused kernel rounds as they do), then the helpers only the generated
/// instructions use.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) const CUDA_PRELUDE: &str = concat!(
    "typedef unsigned long long u64;\n",
    include_str!("cuda/math.cuh"),
    r#"
template <typename T> __device__ __forceinline__ T clamp_op(T x, T lo, T hi) {
    T y = x < lo ? lo : x;
    return y > hi ? hi : y;
}
__device__ __forceinline__ float m_erf(float x) { return (float)erf((double)x); }
__device__ __forceinline__ double m_erf(double x) { return erf(x); }
template <typename T> __device__ __forceinline__ T softplus_op(T x, T beta, T threshold) {
    T bx = x * beta;
    return bx > threshold ? x : m_log1p(m_exp(bx)) / beta;
}
template <typename T> __device__ __forceinline__ T softplus_slope(T x, T beta, T threshold) {
    T bx = x * beta;
    if (bx > threshold) return T(1);
    T z = m_exp(bx);
    return z / (z + T(1));
}
template <typename T> __device__ __forceinline__ T pow_grad(T g, T x, T e, T e1) {
    if (e == T(0)) return T(0);
    return e == T(2) ? g * (x + x) : g * (e * m_pow(x, e1));
}
"#
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel of each element map ([`map_kernel`]: what a CUDA device runs), interpreted by
    /// the CPU, gives the bits of the CPU's own map, in both dtypes, NaN and infinite bounds
    /// included.
    #[test]
    fn the_map_kernels_give_the_cpu_maps_bits() {
        use crate::backend::cpu::Cpu;
        use crate::backend::{Backend, Buffer};
        use crate::layout::Layout;
        let values = [-3.0, -0.5, -0.25, 0.0, 0.7, 1.0, 2.5, f64::NAN, 7.0, -7.0];
        let bits = |b: &Buffer| -> Vec<u64> {
            match b {
                Buffer::F32(v) => v.iter().map(|x| f64::from(*x).to_bits()).collect(),
                Buffer::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
                _ => unreachable!("f32 and f64 host buffers only"),
            }
        };
        let inputs = [
            Buffer::host(values.iter().map(|&v| v as f32).collect::<Vec<_>>().into()),
            Buffer::host(values.to_vec().into()),
        ];
        let layout = Layout::contiguous(&[values.len()]);
        let mut ops = vec![MapOp::Erf];
        for (beta, threshold) in [(1.0, 20.0), (2.0, 1.5), (0.5, -1.0)] {
            ops.push(MapOp::Softplus { beta, threshold });
            ops.push(MapOp::SoftplusSlope { beta, threshold });
        }
        for (lo, hi) in [(-0.5, 1.0), (f64::NEG_INFINITY, 0.5), (0.0, f64::INFINITY)] {
            ops.push(MapOp::Clamp { lo, hi });
            ops.push(MapOp::ClampInterior { lo, hi });
        }
        for x in &inputs {
            for &op in &ops {
                let (kernel, scalars) = map_kernel(op);
                let scalars = &scalars[..kernel.n_scalars];
                let via = Cpu.generated(kernel, &[x], &[false], scalars, values.len());
                let direct = Cpu.map(op, x, &layout).expect("host map").0;
                assert_eq!(
                    bits(&via.expect("interpreted")[0]),
                    bits(&direct),
                    "{op:?} {:?}",
                    x.dtype()
                );
            }
        }
    }

    #[test]
    fn the_source_names_every_register_input_output_and_scalar() {
        // y = tanh(x * s0) + x; out = [y]
        let k = GeneratedKernel {
            id: 0,
            insts: vec![
                Inst::Load(0),
                Inst::Scalar(0),
                Inst::Binary(BinaryOp::Mul, 0, 1),
                Inst::Unary(UnaryOp::Tanh, 2),
                Inst::Binary(BinaryOp::Add, 3, 0),
            ],
            outputs: vec![4],
            n_inputs: 1,
            n_scalars: 1,
        };
        let src = k.cuda_source("float", &[]);
        assert!(src.contains("typedef float T;"), "{src}");
        assert!(
            src.contains("generated(const T* __restrict__ in0, T* __restrict__ out0, T s0, u64 n)"),
            "{src}"
        );
        assert!(src.contains("const T r2 = r0 * r1;"), "{src}");
        assert!(src.contains("const T r3 = unary_op<T>(5, r2);"), "{src}");
        assert!(src.contains("out0[i] = r4;"), "{src}");
    }

    /// Every instruction sample (`samples.rs`) printed as CUDA C++, compiled as host C++
    /// (threads and blocks looped) and run: the same values as the CPU's interpretation of the
    /// same kernel, to libm's rounding. This is what checks the printed source's meaning without
    /// a GPU (the fusion tests run the kernels their plans build the same way; on a GPU,
    /// `tests/fusion` runs them). Runs wherever a C++ compiler is (`c++`); prints `skipped`
    /// otherwise.
    #[test]
    fn the_printed_source_run_on_the_host_gives_the_interpreters_values() {
        let samples = samples::instruction_samples();
        let cpu = samples::run_on_the_cpu(&samples).expect("cpu");
        let Some(host) = samples::run_as_host_cpp(&samples) else {
            println!("skipped: no C++ compiler (`c++`) to run the generated kernels on the host");
            return;
        };
        let checked = samples::assert_close(&samples, &host, &cpu, 1e-13);
        let outputs: usize = samples.iter().map(|s| s.kernel.outputs.len()).sum();
        assert_eq!(checked, outputs * samples::N);
        println!("ran: {} kernels, {checked} values", samples.len());
    }
}
