//! Sample generated kernels and the ways the tests run them: on the CPU backend (its
//! interpreter), as their printed CUDA C++ compiled for the host, and under NVRTC. The
//! backends' tests take [`instruction_samples`] (every instruction, every op code); the fusion
//! tests (`fusion/tests.rs`) run the kernels their plans build the same ways.

use crate::sync::Ordering;
use crate::sync::atomic::AtomicUsize;
use std::fmt::Write as _;

use super::{GeneratedKernel, Inst};
use crate::Result;
use crate::backend::{Backend, BinaryOp, Buffer, ElemVec, UnaryOp, cpu};

/// The element count every sample runs over.
pub(crate) const N: usize = 6;

/// The values the instruction samples read: `x`, `y` and a gradient `g`.
pub(crate) const DATA: [[f64; N]; 3] = [
    [0.3, 1.7, -0.6, 2.2, 0.0, -1.1],
    [1.2, -0.4, 0.9, 0.5, -2.0, f64::NAN],
    [1.0, -0.5, 2.0, 0.25, 1.5, -1.0],
];

/// A kernel with its inputs' values and its scalars'.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) kernel: GeneratedKernel,
    /// Per kernel input: its `N` values (element 0 only, read for every element, where
    /// `repeated` says so).
    pub(crate) inputs: Vec<Vec<f64>>,
    /// Per kernel input: whether it is one value repeated.
    pub(crate) repeated: Vec<bool>,
    pub(crate) scalars: Vec<f64>,
}

impl Sample {
    /// A sample reading `inputs` of [`DATA`] (none repeated).
    fn of(
        name: String,
        insts: Vec<Inst>,
        outputs: Vec<u16>,
        inputs: &[usize],
        scalars: Vec<f64>,
    ) -> Sample {
        let kernel = GeneratedKernel {
            id: 0,
            n_inputs: inputs.len(),
            n_scalars: scalars.len(),
            insts,
            outputs,
        };
        Sample {
            name,
            kernel,
            inputs: inputs.iter().map(|&i| DATA[i].to_vec()).collect(),
            repeated: vec![false; inputs.len()],
            scalars,
        }
    }
}

/// One kernel per instruction and op code: every [`UnaryOp`] and [`BinaryOp`], scalars and
/// constants, `pow` and its gradient at the exponents with their own cases, relu's gradient,
/// clamp, its mask and erf, and a repeated input with two outputs.
pub(crate) fn instruction_samples() -> Vec<Sample> {
    use Inst::{Binary, Load, Scalar};
    let mut out = Vec::new();
    let unary = [
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Sqrt,
        UnaryOp::Abs,
        UnaryOp::Sign,
        UnaryOp::PositiveMask,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Log2,
        UnaryOp::Exp2,
        UnaryOp::Rsqrt,
        UnaryOp::Silu,
        UnaryOp::Mish,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Trunc,
    ];
    for op in unary {
        let insts = vec![Load(0), Inst::Unary(op, 0)];
        out.push(Sample::of(format!("{op:?}"), insts, vec![1], &[0], vec![]));
    }
    for op in [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Minimum,
        BinaryOp::Maximum,
        BinaryOp::Fmod,
        BinaryOp::Remainder,
        BinaryOp::Atan2,
        BinaryOp::MinShare,
    ] {
        let insts = vec![Load(0), Load(1), Binary(op, 0, 1)];
        out.push(Sample::of(
            format!("{op:?}"),
            insts,
            vec![2],
            &[0, 1],
            vec![],
        ));
    }
    // x * s + 2
    let insts = vec![
        Load(0),
        Scalar(0),
        Inst::Const(2),
        Binary(BinaryOp::Mul, 0, 1),
        Binary(BinaryOp::Add, 3, 2),
    ];
    out.push(Sample::of(
        "scalar and constant".into(),
        insts,
        vec![4],
        &[0],
        vec![-1.3],
    ));
    for e in [0.0, 2.0, 3.0, -1.5, 0.5] {
        let insts = vec![Load(0), Scalar(0), Inst::Pow(0, 1)];
        out.push(Sample::of(
            format!("Pow({e})"),
            insts,
            vec![2],
            &[0],
            vec![e],
        ));
        let insts = vec![
            Load(0),
            Load(1),
            Scalar(0),
            Scalar(1),
            Inst::PowGrad(0, 1, 2, 3),
        ];
        out.push(Sample::of(
            format!("PowGrad({e})"),
            insts,
            vec![4],
            &[2, 0],
            vec![e, e - 1.0],
        ));
    }
    let insts = vec![Load(0), Load(1), Inst::ReluGrad(0, 1)];
    out.push(Sample::of(
        "ReluGrad".into(),
        insts,
        vec![2],
        &[2, 0],
        vec![],
    ));
    for (name, inst) in [
        ("Clamp", Inst::Clamp(0, 1, 2)),
        ("Interior", Inst::Interior(0, 1, 2)),
    ] {
        for (lo, hi) in [(-0.5, 1.0), (f64::NEG_INFINITY, 0.5)] {
            let insts = vec![Load(0), Scalar(0), Scalar(1), inst];
            out.push(Sample::of(
                format!("{name}({lo}, {hi})"),
                insts,
                vec![3],
                &[0],
                vec![lo, hi],
            ));
        }
    }
    for (name, inst) in [
        ("Softplus", Inst::Softplus(0, 1, 2)),
        ("SoftplusSlope", Inst::SoftplusSlope(0, 1, 2)),
    ] {
        for (beta, threshold) in [(1.0, 20.0), (2.0, 1.5)] {
            let insts = vec![Load(0), Scalar(0), Scalar(1), inst];
            out.push(Sample::of(
                format!("{name}({beta}, {threshold})"),
                insts,
                vec![3],
                &[0],
                vec![beta, threshold],
            ));
        }
    }
    out.push(Sample::of(
        "Erf".into(),
        vec![Load(0), Inst::Erf(0)],
        vec![1],
        &[0],
        vec![],
    ));
    // A repeated first input (the gradient of a reduced result), two outputs.
    let insts = vec![
        Load(0),
        Load(1),
        Binary(BinaryOp::Mul, 0, 1),
        Binary(BinaryOp::Add, 2, 0),
    ];
    let mut repeated = Sample::of("repeated input".into(), insts, vec![2, 3], &[2, 0], vec![]);
    repeated.repeated[0] = true;
    out.push(repeated);
    out
}

/// Runs every sample on the CPU backend, in f64: per sample, its outputs.
pub(crate) fn run_on_the_cpu(samples: &[Sample]) -> Result<Vec<Vec<Vec<f64>>>> {
    let mut results = Vec::new();
    for s in samples {
        let buffers: Vec<Buffer> = (s.inputs.iter())
            .map(|v| Buffer::host(ElemVec::from_vec(v.clone())))
            .collect();
        let refs: Vec<&Buffer> = buffers.iter().collect();
        let outs = cpu::Cpu.generated(&s.kernel, &refs, &s.repeated, &s.scalars, N)?;
        results.push(
            outs.iter()
                .map(|b| b.as_slice::<f64>().expect("f64 output").to_vec())
                .collect(),
        );
    }
    Ok(results)
}

/// Every sample's printed CUDA C++ (`double`), compiled as host C++ (threads and blocks looped)
/// and run: per sample, its outputs. `None` where there is no C++ compiler (`c++`); panics if
/// the source does not compile.
pub(crate) fn run_as_host_cpp(samples: &[Sample]) -> Option<Vec<Vec<Vec<f64>>>> {
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
    let mut cpp = String::from(SHIM);
    let mut main = format!(
        "int main() {{\n    blockDim.x = 4; gridDim.x = 1;\n    const unsigned long long n = {N};\n"
    );
    let literal = |x: f64| match x {
        x if x.is_nan() => "NAN".to_string(),
        x if x.is_infinite() => format!("{}INFINITY", if x < 0.0 { "-" } else { "" }),
        x => format!("{x:?}"),
    };
    let array = |v: &[f64]| {
        let items: Vec<String> = v.iter().map(|&x| literal(x)).collect();
        format!("{{{}}}", items.join(", "))
    };
    for (j, sample) in samples.iter().enumerate() {
        let src = sample
            .kernel
            .cuda_source("double", &sample.repeated)
            .replace("extern \"C\" ", "");
        let _ = writeln!(cpp, "namespace k{j} {{\n{src}}}");
        let _ = writeln!(main, "    {{");
        let mut args: Vec<String> = Vec::new();
        for (a, values) in sample.inputs.iter().enumerate() {
            let _ = writeln!(main, "        double in{a}[{N}] = {};", array(values));
            args.push(format!("in{a}"));
        }
        for o in 0..sample.kernel.outputs.len() {
            let _ = writeln!(main, "        double out{o}[{N}];");
            args.push(format!("out{o}"));
        }
        args.extend(sample.scalars.iter().map(|&s| literal(s)));
        args.push("n".into());
        let _ = writeln!(
            main,
            "        for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)\n            for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x)\n                k{j}::generated({});",
            args.join(", ")
        );
        for o in 0..sample.kernel.outputs.len() {
            let _ = writeln!(
                main,
                "        for (int i = 0; i < {N}; ++i) std::printf(\"%.17g \", out{o}[i]);\n        std::printf(\"\\n\");"
            );
        }
        let _ = writeln!(main, "    }}");
    }
    main.push_str("    return 0;\n}\n");
    cpp.push_str(&main);
    // Relaxed: only uniqueness matters (tests run this on several threads).
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let k = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("autograd-generated-{}-{k}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (file, exe) = (dir.join("generated.cpp"), dir.join("generated"));
    std::fs::write(&file, &cpp).unwrap();
    let built = std::process::Command::new("c++")
        .args(["-std=c++17", "-O1", "-ffp-contract=off", "-o"])
        .arg(&exe)
        .arg(&file)
        .output()
        .ok()?;
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
    let parse = |line: &str| -> Vec<f64> {
        line.split_whitespace()
            .map(|v| v.parse().expect("a number"))
            .collect()
    };
    Some(
        samples
            .iter()
            .map(|s| {
                (0..s.kernel.outputs.len())
                    .map(|_| parse(lines.next().expect("one line per output")))
                    .collect()
            })
            .collect(),
    )
}

/// Asserts that `a` and `b` (per sample, per output, per element) agree to `rel` relative
/// error, NaN matching NaN; returns how many values were compared.
pub(crate) fn assert_close(
    samples: &[Sample],
    a: &[Vec<Vec<f64>>],
    b: &[Vec<Vec<f64>>],
    rel: f64,
) -> usize {
    let mut checked = 0;
    assert_eq!(a.len(), samples.len());
    assert_eq!(b.len(), samples.len());
    for ((sample, xs), ys) in samples.iter().zip(a).zip(b) {
        assert_eq!(xs.len(), sample.kernel.outputs.len(), "{}", sample.name);
        assert_eq!(ys.len(), sample.kernel.outputs.len(), "{}", sample.name);
        for (o, (x, y)) in xs.iter().zip(ys).enumerate() {
            assert_eq!(x.len(), N, "{} output {o}", sample.name);
            assert_eq!(y.len(), N, "{} output {o}", sample.name);
            for (i, (&p, &q)) in x.iter().zip(y).enumerate() {
                let same =
                    p == q || (p.is_nan() && q.is_nan()) || (p - q).abs() <= rel * (1.0 + q.abs());
                assert!(same, "{} output {o} element {i}: {p} vs {q}", sample.name);
                checked += 1;
            }
        }
    }
    checked
}

/// Compiles every sample's printed source under NVRTC, in both element types, as it is and with
/// its first input's repetition flipped, and checks it defines `generated`. `false` (nothing
/// compiled) where `libnvrtc` cannot be loaded.
#[cfg(feature = "cuda")]
pub(crate) fn compile_under_nvrtc(samples: &[Sample]) -> bool {
    // SAFETY: only `dlopen`s candidate file names of the NVRTC library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return false;
    }
    for sample in samples {
        let mut flipped = sample.repeated.clone();
        if let Some(first) = flipped.first_mut() {
            *first = !*first;
        }
        for (ty, repeated) in [("float", &sample.repeated), ("double", &flipped)]
            .into_iter()
            .chain([("double", &sample.repeated), ("float", &flipped)])
        {
            let source = sample.kernel.cuda_source(ty, repeated);
            let ptx = match crate::backend::cuda::compile_source(&source, "generated.cu") {
                Ok(ptx) => ptx.to_src(),
                Err(log) => panic!("{} ({ty}): {log}\n{source}", sample.name),
            };
            assert!(ptx.contains(".entry generated("), "{}", sample.name);
        }
    }
    true
}
