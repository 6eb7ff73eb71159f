//! A generated element-wise kernel: the straight-line program that one fused forward or
//! backward of a `#[differentiable(derive)]` function runs per element (see `ops/fused.rs`,
//! which builds it). Backend-neutral: the CUDA backend prints it as CUDA C++ and compiles it
//! with NVRTC (one launch for the whole function), the CPU backend interprets it.
//!
//! Every instruction defines one register, numbered by its position; an operand names an
//! earlier register. Each formula is the one the op-by-op kernels compute (`kernels.cu`'s
//! `unary_op`, `binary_op`, `fused_op` and `pow_scalar`), rounded to the element type after
//! every step, so a fused run and the op-by-op run round alike.

use std::fmt::Write as _;

use super::{BinaryOp, MapOp, UnaryOp};
use crate::sync::Ordering;
use crate::sync::statics::{AtomicU64, OnceLock};

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
    static KERNELS: OnceLock<[GeneratedKernel; 3]> = OnceLock::new();
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
        ]
    });
    match op {
        MapOp::Clamp { lo, hi } => (&kernels[0], [lo, hi]),
        MapOp::ClampInterior { lo, hi } => (&kernels[1], [lo, hi]),
        MapOp::Erf => (&kernels[2], [0.0; 2]),
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
            };
            format!("r{a} {sym} r{b}")
        }
        Inst::Pow(x, e) => format!("pow_scalar<T>(r{x}, r{e})"),
        Inst::PowGrad(g, x, e, e1) => format!("pow_grad<T>(r{g}, r{x}, r{e}, r{e1})"),
        Inst::ReluGrad(g, y) => format!("(r{y} > T(0) ? r{g} : T(0))"),
        Inst::Clamp(x, lo, hi) => format!("clamp_op<T>(r{x}, r{lo}, r{hi})"),
        Inst::Interior(x, lo, hi) => format!("(r{x} > r{lo} && r{x} < r{hi} ? T(1) : T(0))"),
        Inst::Erf(x) => format!("m_erf(r{x})"),
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
template <typename T> __device__ __forceinline__ T pow_grad(T g, T x, T e, T e1) {
    if (e == T(0)) return T(0);
    return e == T(2) ? g * (x + x) : g * (e * m_pow(x, e1));
}
"#
);

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Every sample kernel (each op's forward and backward, `ops::fused::sample_kernels`)
    /// printed as CUDA C++, compiled as host C++ (threads and blocks looped) and run: the same
    /// values as the CPU's interpretation of the same kernel, to libm's rounding. This is what
    /// checks the printed source's meaning without a GPU (on a GPU, `tests/fused` runs it). Runs
    /// wherever a C++ compiler is (`c++`); prints `skipped` otherwise.
    #[test]
    fn the_printed_source_run_on_the_host_gives_the_interpreters_values() {
        const SHIM: &str = r#"
#include <cstdio>
#include <math.h>
#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__
struct Dim { unsigned x; };
static Dim blockIdx, threadIdx, blockDim, gridDim;
"#;
        let samples = crate::ops::fused::sample_kernels();
        let cpu = crate::ops::fused::run_samples_on_the_cpu(&samples).expect("cpu");
        let data = crate::ops::fused::SAMPLE_DATA;
        let mut cpp = String::from(SHIM);
        let mut main = String::from(
            "int main() {\n    blockDim.x = 4; gridDim.x = 1;\n    const unsigned long long n = 6;\n",
        );
        let array = |v: &[f64]| {
            let items: Vec<String> = v
                .iter()
                .map(|&x| match x {
                    x if x.is_nan() => "NAN".into(),
                    x if x.is_infinite() => format!("{}INFINITY", if x < 0.0 { "-" } else { "" }),
                    x => format!("{x:?}"),
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        };
        let mut forward: Vec<Vec<f64>> = Vec::new();
        for (j, (sample, outs)) in samples.iter().zip(&cpu).enumerate() {
            let src = sample
                .kernel
                .cuda_source("double", &sample.repeated)
                .replace("extern \"C\" ", "");
            let _ = writeln!(cpp, "namespace k{j} {{\n{src}}}");
            if sample.name.ends_with("forward") {
                forward = outs.clone();
            }
            let _ = writeln!(main, "    {{");
            let mut args: Vec<String> = Vec::new();
            for (a, &i) in sample.inputs.iter().enumerate() {
                let values = if i < 3 {
                    data[i].to_vec()
                } else {
                    forward[i - 3].clone()
                };
                let _ = writeln!(main, "        double in{a}[6] = {};", array(&values));
                args.push(format!("in{a}"));
            }
            for o in 0..sample.kernel.outputs.len() {
                let _ = writeln!(main, "        double out{o}[6];");
                args.push(format!("out{o}"));
            }
            args.extend(sample.scalars.iter().map(|s| format!("{s:?}")));
            args.push("n".into());
            let _ = writeln!(
                main,
                "        for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)\n            for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x)\n                k{j}::generated({});",
                args.join(", ")
            );
            for o in 0..sample.kernel.outputs.len() {
                let _ = writeln!(
                    main,
                    "        for (int i = 0; i < 6; ++i) std::printf(\"%.17g \", out{o}[i]);\n        std::printf(\"\\n\");"
                );
            }
            let _ = writeln!(main, "    }}");
        }
        main.push_str("    return 0;\n}\n");
        cpp.push_str(&main);
        let dir = std::env::temp_dir().join(format!("autograd-generated-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (file, exe) = (dir.join("generated.cpp"), dir.join("generated"));
        std::fs::write(&file, &cpp).unwrap();
        let Ok(built) = std::process::Command::new("c++")
            .args(["-std=c++17", "-O1", "-ffp-contract=off", "-o"])
            .arg(&exe)
            .arg(&file)
            .output()
        else {
            println!("skipped: no C++ compiler (`c++`) to run the generated kernels on the host");
            return;
        };
        assert!(
            built.status.success(),
            "the generated kernels do not compile as host C++: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        let run = std::process::Command::new(&exe).output().unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert!(run.status.success());
        let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
        let mut lines = stdout.lines();
        let mut checked = 0;
        for (sample, outs) in samples.iter().zip(&cpu) {
            for (o, expected) in outs.iter().enumerate() {
                let line = lines.next().expect("one line per output");
                let got: Vec<f64> = line
                    .split_whitespace()
                    .map(|v| v.parse().expect("a number"))
                    .collect();
                for (i, (&a, &b)) in got.iter().zip(expected).enumerate() {
                    let same =
                        (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-13 * (1.0 + b.abs());
                    assert!(
                        same,
                        "{} output {o} element {i}: host C++ {a}, CPU {b}",
                        sample.name
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(
            checked,
            samples
                .iter()
                .map(|s| s.kernel.outputs.len() * 6)
                .sum::<usize>()
        );
        println!("ran: {} kernels, {checked} values", samples.len());
    }
}
