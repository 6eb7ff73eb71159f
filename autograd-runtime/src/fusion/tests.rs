//! The plans: what they decline and recompute, their kernels' values against the formulas
//! written out in `f64`, and their printed CUDA C++ (host C++ here, NVRTC where it loads)
//! against the CPU's interpretation, through the backend's sample runners.

use super::backward_plan::build_backward;
use super::emitter::Source;
use super::forward_plan::build_forward;
use super::plan::Plan;
use super::{Elementwise, Program, Var};
use crate::Result;
use crate::backend::UnaryOp;
use crate::backend::generated::Inst;
use crate::backend::generated::samples::{self, N, Sample, run_on_the_cpu};

/// The op samples' data: `x`, `y` and the incoming gradient.
const DATA: [[f64; N]; 3] = [
    [0.3, 1.7, -0.6, 2.2, 0.05, -1.1],
    [1.2, -0.4, 0.9, 0.5, -2.0, 0.7],
    [1.0, -0.5, 2.0, 0.25, 1.5, -1.0],
];

/// `plan`'s kernel as a sample, its inputs' values found by `value` from its sources.
fn sample(name: String, plan: Plan, scalars: &[f64], value: impl Fn(Source) -> Vec<f64>) -> Sample {
    Sample {
        name,
        inputs: plan.sources.iter().map(|&s| value(s)).collect(),
        repeated: vec![false; plan.sources.len()],
        scalars: plan.scalars.iter().map(|a| a.value(scalars, N)).collect(),
        kernel: plan.kernel,
    }
}

/// Three kernels per [`Elementwise`] op, for `op(x[, y]) * y`: the forward (the op's value and
/// the result out), a backward loading every value, and a backward loading only the inputs
/// (the op's value recomputed), in that order; the backwards read the forward's outputs.
fn op_samples() -> Result<Vec<Sample>> {
    let mut out = Vec::new();
    let ops = [
        (Elementwise::Add, 0.0),
        (Elementwise::Sub, 0.0),
        (Elementwise::Mul, 0.0),
        (Elementwise::Div, 0.0),
        (Elementwise::AddScalar, 0.7),
        (Elementwise::SubScalar, 0.7),
        (Elementwise::MulScalar, -1.3),
        (Elementwise::DivScalar, 3.0),
        (Elementwise::RsubScalar, 0.25),
        (Elementwise::RdivScalar, 2.5),
        (Elementwise::Neg, 0.0),
        (Elementwise::Exp, 0.0),
        (Elementwise::Log, 0.0),
        (Elementwise::Sin, 0.0),
        (Elementwise::Cos, 0.0),
        (Elementwise::Tanh, 0.0),
        (Elementwise::Sigmoid, 0.0),
        (Elementwise::Relu, 0.0),
        (Elementwise::Sqrt, 0.0),
        (Elementwise::Abs, 0.0),
        (Elementwise::Pow, 2.0),
        (Elementwise::Pow, 3.0),
        (Elementwise::Pow, -1.5),
    ];
    for (op, s) in ops {
        let vars: &'static [Var] = Box::leak(Box::new([
            Var::Input(0),
            Var::Input(1),
            Var::Op {
                op,
                a: 0,
                b: 1,
                s: 0,
            },
            Var::Op {
                op: Elementwise::Mul,
                a: 2,
                b: 1,
                s: 0,
            },
        ]));
        let prog = Program {
            vars,
            outputs: &[3],
        };
        let name = |what: &str| format!("{op:?}({s}) {what}");
        let fwd = build_forward(&prog, &[false, false, true, true]).expect("forward");
        let fwd = sample(name("forward"), fwd, &[s], |src| match src {
            Source::Input(k) => DATA[usize::from(k)].to_vec(),
            _ => unreachable!("a forward reads its inputs"),
        });
        // The op's value and the result, as the backwards read them.
        let kept = run_on_the_cpu(std::slice::from_ref(&fwd))?.remove(0);
        let value = |src: Source| match src {
            Source::Input(k) => DATA[usize::from(k)].to_vec(),
            Source::Grad(_) => DATA[2].to_vec(),
            Source::Value(v @ 0..=1) => DATA[usize::from(v)].to_vec(),
            Source::Value(v) => kept[usize::from(v) - 2].clone(),
        };
        out.push(fwd);
        let all = build_backward(&prog, &[true; 4], &[true], &[true, true]).expect("backward");
        out.push(sample(name("backward"), all, &[s], value));
        let inputs = build_backward(&prog, &[true, true, false, false], &[true], &[true, true])
            .expect("backward from the inputs");
        out.push(sample(name("backward, recomputing"), inputs, &[s], value));
    }
    Ok(out)
}

/// The backward of a loss, `sum` or `mean` of `x * y`: its gradient one repeated value.
fn loss_samples() -> Vec<Sample> {
    let mut out = Vec::new();
    for op in [Elementwise::Sum, Elementwise::Mean] {
        let vars: &'static [Var] = Box::leak(Box::new([
            Var::Input(0),
            Var::Input(1),
            Var::Op {
                op: Elementwise::Mul,
                a: 0,
                b: 1,
                s: 0,
            },
            Var::Op {
                op,
                a: 2,
                b: 0,
                s: 0,
            },
        ]));
        let prog = Program {
            vars,
            outputs: &[3],
        };
        let plan = build_backward(&prog, &[true, true, false, false], &[true], &[true, true])
            .expect("a loss's backward");
        let repeated = plan
            .sources
            .iter()
            .map(|src| matches!(src, Source::Grad(_)))
            .collect();
        let mut s = sample(
            format!("{op:?} loss backward"),
            plan,
            &[],
            |src| match src {
                Source::Value(v) => DATA[usize::from(v)].to_vec(),
                _ => DATA[2].to_vec(),
            },
        );
        s.repeated = repeated;
        out.push(s);
    }
    out
}

/// Every plan's kernel printed as CUDA C++, compiled as host C++ and run: the CPU's values, to
/// libm's rounding. Skips (saying so) without a C++ compiler.
#[test]
fn the_plans_printed_source_run_on_the_host_gives_the_cpus_values() -> Result<()> {
    let all: Vec<Sample> = op_samples()?.into_iter().chain(loss_samples()).collect();
    let cpu = run_on_the_cpu(&all)?;
    let Some(host) = samples::run_as_host_cpp(&all) else {
        println!("skipped: no C++ compiler (`c++`) to run the generated kernels on the host");
        return Ok(());
    };
    let checked = samples::assert_close(&all, &host, &cpu, 1e-13);
    println!("ran: {} kernels, {checked} values", all.len());
    Ok(())
}

/// Every plan's kernel compiles under NVRTC (both element types, with and without a repeated
/// first input). Skips (saying so) where `libnvrtc` does not load.
#[cfg(feature = "cuda")]
#[test]
fn the_plans_kernels_compile_under_nvrtc() -> Result<()> {
    let all: Vec<Sample> = op_samples()?.into_iter().chain(loss_samples()).collect();
    if !samples::compile_under_nvrtc(&all) {
        println!("skipped: libnvrtc.so not found, so no generated kernel was compiled");
        return Ok(());
    }
    println!("compiled: {} generated kernels, 4 ways each", all.len());
    Ok(())
}

/// A loss's backward: the incoming gradient repeated (times `1/n` for `mean`) times the other
/// operand.
#[test]
fn a_losss_backward_repeats_its_gradient() -> Result<()> {
    let losses = loss_samples();
    let results = run_on_the_cpu(&losses)?;
    let [x, y, g] = DATA;
    for (s, r) in losses.iter().zip(&results) {
        let scale = if s.name.starts_with("Mean") {
            1.0 / N as f64
        } else {
            1.0
        };
        for i in 0..N {
            assert_eq!(r[0][i], g[0] * scale * y[i], "{} dx at {i}", s.name);
            assert_eq!(r[1][i], g[0] * scale * x[i], "{} dy at {i}", s.name);
        }
    }
    Ok(())
}

/// `x * y + tanh(x)`.
static PROG: Program = Program {
    vars: &[
        Var::Input(0),
        Var::Input(1),
        Var::Op {
            op: Elementwise::Mul,
            a: 0,
            b: 1,
            s: 0,
        },
        Var::Op {
            op: Elementwise::Tanh,
            a: 0,
            b: 0,
            s: 0,
        },
        Var::Op {
            op: Elementwise::Add,
            a: 2,
            b: 3,
            s: 0,
        },
    ],
    outputs: &[4],
};

fn tanhs(p: &Plan) -> usize {
    let tanh = |i: &&Inst| matches!(i, Inst::Unary(UnaryOp::Tanh, _));
    p.kernel.insts.iter().filter(tanh).count()
}

#[test]
fn a_backward_recomputes_what_was_not_kept_and_declines_what_it_cannot() {
    let plan = |avail: &[bool], needs: &[bool]| build_backward(&PROG, avail, &[true], needs);
    // Everything the formulas read kept: y (for x's gradient), x (for y's), tanh(x).
    let kept = plan(&[true, true, false, true, false], &[true, true]).expect("kept");
    assert_eq!(tanhs(&kept), 0, "tanh(x) is loaded");
    // tanh(x) not kept: recomputed from x.
    let again = plan(&[true, true, false, false, false], &[true, true]).expect("recomputed");
    assert_eq!(tanhs(&again), 1, "tanh(x) is recomputed");
    // Only y's gradient: the incoming gradient times x.
    let y_only = plan(&[true, false, false, false, false], &[false, true]).expect("y only");
    assert_eq!(y_only.outputs, [1]);
    assert_eq!(y_only.sources, [Source::Grad(0), Source::Value(0)]);
    // x's gradient needs y, which was not kept and cannot be recomputed: declined.
    assert!(plan(&[true, false, false, true, false], &[true, false]).is_none());
    // No gradient arriving: no output.
    let none = build_backward(&PROG, &[true; 5], &[false], &[true, true]).expect("none");
    assert!(none.kernel.outputs.is_empty());
}

#[test]
fn a_forward_declines_an_input_or_dead_value_as_a_result() {
    assert!(build_forward(&PROG, &[true, false, false, false, true]).is_none());
    let fwd = build_forward(&PROG, &[false, false, false, true, true]).expect("forward");
    assert_eq!(fwd.outputs, [3, 4]);
    assert_eq!(fwd.sources, [Source::Input(0), Source::Input(1)]);
}

#[test]
fn the_recomputing_backward_gives_the_bits_of_the_one_that_loads() -> Result<()> {
    let samples = op_samples()?;
    let results = run_on_the_cpu(&samples)?;
    for (s, r) in samples.chunks(3).zip(results.chunks(3)) {
        assert_eq!(r[1].len(), 2, "{}: two gradients", s[1].name);
        for (a, b) in r[1].iter().zip(&r[2]) {
            let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{}: {a:?} vs {b:?}", s[2].name);
        }
    }
    Ok(())
}

/// The forward's and backward's values against the formulas written out in `f64`.
#[test]
fn the_kernels_compute_each_ops_value_and_gradients() -> Result<()> {
    let samples = op_samples()?;
    let results = run_on_the_cpu(&samples)?;
    let [x, y, g] = DATA;
    let close =
        |a: f64, b: f64| (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * (1.0 + b.abs());
    for (s, r) in samples.chunks(3).zip(results.chunks(3)) {
        let name = &s[0].name;
        for i in 0..N {
            let (xi, yi, gi) = (x[i], y[i], g[i]);
            let sc: f64 = name[name.find('(').unwrap_or(0) + 1..name.find(')').unwrap_or(0)]
                .parse()
                .expect("the sample's scalar");
            // (value, d value / dx, d value / dy)
            let (v, dx, dy) = reference(name, xi, yi, sc);
            assert!(
                close(r[0][0][i], v),
                "{name} value at {i}: {} vs {v}",
                r[0][0][i]
            );
            assert!(close(r[0][1][i], v * yi), "{name} result at {i}");
            // result = v * y: d/dx = g y dv/dx, d/dy = g (v + y dv/dy).
            assert!(
                close(r[1][0][i], gi * yi * dx),
                "{name} dx at {i}: {} vs {}",
                r[1][0][i],
                gi * yi * dx
            );
            assert!(
                close(r[1][1][i], gi * (v + yi * dy)),
                "{name} dy at {i}: {} vs {}",
                r[1][1][i],
                gi * (v + yi * dy)
            );
        }
    }
    Ok(())
}

/// An op's value and partial derivatives at `(x, y)`, from its sample's name.
fn reference(name: &str, x: f64, y: f64, s: f64) -> (f64, f64, f64) {
    let op = name.split('(').next().unwrap_or_default();
    match op {
        "Add" => (x + y, 1.0, 1.0),
        "Sub" => (x - y, 1.0, -1.0),
        "Mul" => (x * y, y, x),
        "Div" => (x / y, 1.0 / y, -x / (y * y)),
        "AddScalar" => (x + s, 1.0, 0.0),
        "SubScalar" => (x - s, 1.0, 0.0),
        "MulScalar" => (x * s, s, 0.0),
        "DivScalar" => (x / s, 1.0 / s, 0.0),
        "RsubScalar" => (s - x, -1.0, 0.0),
        "RdivScalar" => (s / x, -s / (x * x), 0.0),
        "Neg" => (-x, -1.0, 0.0),
        "Exp" => (x.exp(), x.exp(), 0.0),
        "Log" => (x.ln(), 1.0 / x, 0.0),
        "Sin" => (x.sin(), x.cos(), 0.0),
        "Cos" => (x.cos(), -x.sin(), 0.0),
        "Tanh" => (x.tanh(), 1.0 - x.tanh().powi(2), 0.0),
        "Sigmoid" => {
            let v = 1.0 / (1.0 + (-x).exp());
            (v, v * (1.0 - v), 0.0)
        }
        "Relu" => (x.max(0.0), if x > 0.0 { 1.0 } else { 0.0 }, 0.0),
        "Sqrt" => (x.sqrt(), 0.5 / x.sqrt(), 0.0),
        "Abs" => (x.abs(), x.signum(), 0.0),
        "Pow" => (x.powf(s), s * x.powf(s - 1.0), 0.0),
        other => panic!("no reference for {other}"),
    }
}
