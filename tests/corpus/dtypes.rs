//! The dtype corpus (`dtypes.jsonl.gz`, written by `gen_dtypes.py`): small programs over bool,
//! uint8, int32, int64, float16, bfloat16, float32 and float64 tensors, recorded from PyTorch
//! 2.15 (CPU): type promotion, integer and bool arithmetic, masks with gradients, casts, half
//! precision, arg-reductions, sequences, seeded random draws, `repr` and the errors. Each
//! program runs on `Device::Cpu` and `Device::Virtual(1)`; not on CUDA, whose kernels refuse
//! the new dtypes in this build.
//!
//! Each step's result must have PyTorch's dtype, shape, `requires_grad` and values:
//!
//! * bool and integer dtypes exactly;
//! * float64 within rtol 1e-9, atol 1e-12;
//! * float32 within 2 ulps of the larger of the two values, or 1e-6 of the largest value of the
//!   recorded tensor (sums and softmax gradients add terms in another order; element-wise ops
//!   agree exactly);
//! * float16 and bfloat16 bit for bit: both sides compute in f32 and round once;
//! * `repr` strings and error texts exactly.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::panic::{self, AssertUnwindSafe};

use autograd::{DType, Device, Scalar, Tensor, bf16, f16, manual_seed, no_grad, randperm};
use serde_json::Value;

use super::{Category, Failure, fail};
use crate::select::{Quiet, Selection};

const DTYPES_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/dtypes.jsonl.gz");

/// float32: the ulps allowed, and the part of the tensor's largest value.
const F32_ULPS: f64 = 2.0;
const F32_REL_MAX: f64 = 1e-6;

/// Programs whose float16 / bfloat16 values are compared at 1 ulp of the half type, not bit for
/// bit: those that contain one of these ops. Each computes in f32 and rounds once, as PyTorch's
/// CPU kernels, but the f32 values differ in their last bits, which moves a half rounding now
/// and then: `softmax` (PyTorch's vectorised `exp` and sum order), `sigmoid` (its backward
/// kernel multiplies `g * (1 - y) * y`, ours `g * (y * (1 - y))`), `linspace` and `arange`
/// (PyTorch's half kernels step otherwise, seemingly in half arithmetic; ours in f32: 0.1 * 18
/// in f32 is 1.8000001, bfloat16 1.796875 here, 1.8046875 in PyTorch).
const HALF_ULP_OPS: &[&str] = &["softmax", "sigmoid", "linspace", "arange"];

/// Programs that disagree with PyTorch on purpose (a temporary allow-list), with the reason.
const KNOWN_FAILING: &[(usize, &str)] = &[
    (
        636,
        "float16 softmax over a dim that is not the last: PyTorch's kernel rounds exp(x - max) \
         to half before summing (ours sums in f32), 1 ulp on the forward (allowed), which the \
         backward's cancellation y * (g - sum(g * y)) amplifies to 11 ulps of one gradient",
    ),
    (
        696,
        "linspace(-4, 6, 7, dtype=int64): PyTorch's vectorised kernel makes the middle value \
         0.9999999999999998 before truncating it to 0; ours computes 6 - 3 * (10 / 6) = 1.0, \
         the formula of its scalar loop",
    ),
];

struct Program {
    id: usize,
    family: String,
    line: String,
    inputs: Vec<Value>,
    steps: Vec<Value>,
}

fn load() -> Vec<Program> {
    let file = std::fs::File::open(DTYPES_CORPUS).expect("the dtype corpus");
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gzipped UTF-8");
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("one JSON object per line");
        if v.get("header").is_some() {
            continue;
        }
        out.push(Program {
            id: v["id"].as_u64().expect("id") as usize,
            family: v["family"].as_str().expect("family").to_string(),
            line: line.to_string(),
            inputs: v["inputs"].as_array().expect("inputs").clone(),
            steps: v["steps"].as_array().expect("steps").clone(),
        });
    }
    out
}

fn dtype(name: &str) -> DType {
    *DType::ALL
        .iter()
        .find(|d| d.torch_name() == format!("torch.{name}"))
        .unwrap_or_else(|| panic!("unknown dtype {name}"))
}

fn name(d: DType) -> &'static str {
    d.torch_name().trim_start_matches("torch.")
}

/// A recorded float: a number or `"nan"`, `"inf"`, `"-inf"`.
fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => panic!("number {s}"),
        },
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => v.as_f64().unwrap_or_else(|| panic!("number {v}")),
    }
}

/// A Python scalar: bool, int or float by its JSON kind.
fn scalar(v: &Value) -> Scalar {
    match v {
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Number(n) if n.is_i64() => Scalar::Int(n.as_i64().expect("i64")),
        _ => Scalar::Float(num(v)),
    }
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap_or_else(|| panic!("list {v}"))
        .iter()
        .map(|x| x.as_u64().expect("usize") as usize)
        .collect()
}

/// A tensor of recorded values, in the recorded dtype, on the CPU.
fn build(dt: DType, shape: &[usize], data: &[Value]) -> autograd::Result<Tensor> {
    match dt {
        DType::Bool => Tensor::from_vec(
            data.iter()
                .map(|v| v.as_bool().expect("bool"))
                .collect::<Vec<_>>(),
            shape,
        ),
        DType::I64 | DType::I32 | DType::U8 => Tensor::from_vec(
            data.iter()
                .map(|v| v.as_i64().expect("int"))
                .collect::<Vec<_>>(),
            shape,
        )?
        .to_dtype(dt),
        // Every recorded value is exact in its dtype, so the cast from f64 is exact.
        _ => Tensor::from_vec(data.iter().map(num).collect::<Vec<_>>(), shape)?.to_dtype(dt),
    }
}

fn recorded(r: &Value) -> (DType, Vec<usize>, &[Value], bool) {
    (
        dtype(r["dt"].as_str().expect("dt")),
        usizes(&r["s"]),
        r["d"].as_array().expect("d"),
        r["rg"].as_bool().unwrap_or(false),
    )
}

/// Our values as recorded ones would read: integers exact, floats as f64.
enum Ours {
    Ints(Vec<i64>),
    Bools(Vec<bool>),
    Floats(Vec<f64>),
}

fn read(t: &Tensor) -> autograd::Result<Ours> {
    let _g = no_grad();
    let cpu = t.to(Device::Cpu)?;
    Ok(match cpu.dtype() {
        DType::Bool => Ours::Bools(cpu.to_vec::<bool>()?),
        DType::I64 | DType::I32 | DType::U8 => Ours::Ints(cpu.to_dtype(DType::I64)?.to_vec()?),
        _ => Ours::Floats(cpu.to_dtype(DType::F64)?.to_vec()?),
    })
}

/// The spacing of float16 / bfloat16 values just below `x`'s binade top (one ulp at `x`).
fn half_ulp_of(dt: DType, x: f64) -> f64 {
    let bits = if dt == DType::F16 { 10 } else { 7 };
    let min_normal: f64 = if dt == DType::F16 {
        6.103515625e-5
    } else {
        1.1754943508222875e-38
    };
    let e = x.max(min_normal).log2().floor();
    2f64.powf(e - f64::from(bits))
}

fn f32_ulp(x: f64) -> f64 {
    let x = (x.abs() as f32).max(f32::MIN_POSITIVE);
    f64::from(f32::from_bits(x.to_bits() + 1) - x)
}

/// Whether two floats of dtype `dt` agree (`max` the recorded tensor's largest finite value).
fn close(dt: DType, want: f64, got: f64, max: f64, half_ulp: bool) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    let d = (want - got).abs();
    match dt {
        DType::F64 => d <= 1e-12 + 1e-9 * want.abs(),
        DType::F32 => d <= F32_ULPS * f32_ulp(want.abs().max(got.abs())) || d <= F32_REL_MAX * max,
        // Halves: bit for bit (both are exact in f64; -0 and 0 are the same value), or within
        // one ulp of the half type for the programs `HALF_ULP_OPS` names.
        _ => want == got || (half_ulp && d <= half_ulp_of(dt, want.abs().max(got.abs()))),
    }
}

/// Compares a tensor with its record; `None` when they agree.
fn diff(r: &Value, t: &Tensor, half_ulp: bool) -> Option<String> {
    let (dt, shape, data, rg) = recorded(r);
    if t.dtype() != dt {
        return Some(format!(
            "dtype {} where PyTorch has {}",
            name(t.dtype()),
            name(dt)
        ));
    }
    if t.shape() != shape.as_slice() {
        return Some(format!("shape {:?} where PyTorch has {shape:?}", t.shape()));
    }
    if t.requires_grad() != rg {
        return Some(format!(
            "requires_grad {} where PyTorch has {rg}",
            t.requires_grad()
        ));
    }
    let ours = match read(t) {
        Ok(o) => o,
        Err(e) => return Some(format!("reading the values: {e}")),
    };
    let bad = |i: usize, want: String, got: String| {
        Some(format!(
            "{} [{i}]: {got} where PyTorch has {want} ({})",
            name(dt),
            short(data)
        ))
    };
    match ours {
        Ours::Bools(v) => {
            for (i, (w, g)) in data.iter().zip(&v).enumerate() {
                if w.as_bool() != Some(*g) {
                    return bad(i, w.to_string(), g.to_string());
                }
            }
        }
        Ours::Ints(v) => {
            for (i, (w, g)) in data.iter().zip(&v).enumerate() {
                if w.as_i64() != Some(*g) {
                    return bad(i, w.to_string(), g.to_string());
                }
            }
        }
        Ours::Floats(v) => {
            let want: Vec<f64> = data
                .iter()
                .map(|x| {
                    let x = num(x);
                    // The recorded text is the shortest one that reads back in its dtype;
                    // serde_json may read it 1 ulp off in f64, which rounding in the dtype undoes.
                    match dt {
                        DType::F32 => f64::from(x as f32),
                        DType::F16 => f16::from_f64(x).to_f64(),
                        DType::BF16 => bf16::from_f64(x).to_f64(),
                        _ => x,
                    }
                })
                .collect();
            let max = want
                .iter()
                .filter(|x| x.is_finite())
                .fold(0.0f64, |m, x| m.max(x.abs()));
            for (i, (&w, &g)) in want.iter().zip(&v).enumerate() {
                if !close(dt, w, g, max, half_ulp) {
                    return bad(i, format!("{w:e}"), format!("{g:e}"));
                }
            }
        }
    }
    None
}

fn short(data: &[Value]) -> String {
    let s: Vec<String> = data.iter().take(8).map(Value::to_string).collect();
    let more = if data.len() > 8 { ", .." } else { "" };
    format!("[{}{more}]", s.join(", "))
}

fn ids(st: &Value) -> Vec<usize> {
    usizes(&st["a"])
}

fn var(vars: &[Option<Tensor>], i: usize) -> &Tensor {
    vars[i].as_ref().expect("a variable made before its use")
}

/// One step of ours: the tensor it makes, `Ok(None)` for `repr` / `backward`.
fn step(vars: &[Option<Tensor>], st: &Value, device: Device) -> autograd::Result<Option<Tensor>> {
    let op = st["op"].as_str().expect("op");
    let a: Vec<&Tensor> = ids(st).into_iter().map(|i| var(vars, i)).collect();
    let sv = || scalar(&st["sv"]);
    let dim = |k: &str| st[k].as_u64().map(|d| d as usize);
    let on = |t: autograd::Result<Tensor>| t.and_then(|t| t.to(device));
    let t = match op {
        "add" => a[0].add(a[1]),
        "sub" => a[0].sub(a[1]),
        "mul" => a[0].mul(a[1]),
        "div" => a[0].div(a[1]),
        "remainder" => a[0].remainder(a[1]),
        "fmod" => a[0].fmod(a[1]),
        "matmul" => a[0].matmul(a[1]),
        "eq" => a[0].eq(a[1]),
        "ne" => a[0].ne(a[1]),
        "lt" => a[0].lt(a[1]),
        "le" => a[0].le(a[1]),
        "gt" => a[0].gt(a[1]),
        "ge" => a[0].ge(a[1]),
        "add_s" => a[0].add_scalar(sv()),
        "sub_s" => a[0].sub_scalar(sv()),
        "mul_s" => a[0].mul_scalar(sv()),
        "div_s" => a[0].div_scalar(sv()),
        "rsub_s" => a[0].rsub_scalar(sv()),
        "rdiv_s" => a[0].rdiv_scalar(sv()),
        "remainder_s" => a[0].remainder_scalar(sv()),
        "fmod_s" => a[0].fmod_scalar(sv()),
        "eq_s" => a[0].eq_scalar(sv()),
        "ne_s" => a[0].ne_scalar(sv()),
        "lt_s" => a[0].lt_scalar(sv()),
        "le_s" => a[0].le_scalar(sv()),
        "gt_s" => a[0].gt_scalar(sv()),
        "ge_s" => a[0].ge_scalar(sv()),
        "neg" => a[0].neg(),
        "sum" => a[0].sum(),
        "mean" => a[0].mean(),
        "exp" => a[0].exp(),
        "tanh" => a[0].tanh(),
        "sigmoid" => a[0].sigmoid(),
        "abs" => a[0].abs(),
        "relu" => a[0].relu(),
        "any" => a[0].any(),
        "all" => a[0].all(),
        "softmax" => a[0].softmax(dim("dim").expect("dim")),
        "where" => Tensor::where_(a[0], a[1], a[2]),
        "masked_fill" => a[0].masked_fill(a[1], sv()),
        "argmax" => a[0].argmax(dim("dim"), st["keepdim"].as_bool().expect("keepdim")),
        "argmin" => a[0].argmin(dim("dim"), st["keepdim"].as_bool().expect("keepdim")),
        "to" => a[0].to_dtype(dtype(st["dt"].as_str().expect("dt"))),
        "reshape" => a[0].reshape(&usizes(&st["shape"])),
        "arange" => {
            let (s, e, d) = (
                scalar(&st["start"]),
                scalar(&st["end"]),
                scalar(&st["step"]),
            );
            on(match st["dt"].as_str() {
                None => Tensor::arange(s, e, d),
                Some(dt) => Tensor::arange_dtype(s, e, d, dtype(dt)),
            })
        }
        "linspace" => on(Tensor::linspace(
            scalar(&st["start"]),
            scalar(&st["end"]),
            st["steps"].as_u64().expect("steps") as usize,
            dtype(st["dt"].as_str().expect("dt")),
        )),
        "eye" => on(Tensor::eye(
            st["n"].as_u64().expect("n") as usize,
            st["m"].as_u64().map(|m| m as usize),
            dtype(st["dt"].as_str().expect("dt")),
        )),
        "seed" => {
            manual_seed(st["seed"].as_u64().expect("seed"));
            on(Tensor::zeros(&[], DType::F32))
        }
        "randn" => on(Tensor::randn(
            &usizes(&st["shape"]),
            dtype(st["dt"].as_str().expect("dt")),
        )),
        "rand" => on(Tensor::rand(
            &usizes(&st["shape"]),
            dtype(st["dt"].as_str().expect("dt")),
        )),
        "randint" => on(Tensor::randint(
            st["low"].as_i64().expect("low"),
            st["high"].as_i64().expect("high"),
            &usizes(&st["shape"]),
        )),
        "randperm" => {
            let n = st["n"].as_u64().expect("n") as usize;
            let p: Vec<i64> = randperm(n).into_iter().map(|i| i as i64).collect();
            on(Tensor::from_vec(p, &[n]))
        }
        "rg" => a[0].set_requires_grad(true).map(|()| a[0].clone()),
        "repr" | "backward" => return Ok(None),
        _ => panic!("unknown op {op}"),
    }?;
    Ok(Some(t))
}

fn replay(p: &Program, device: Device) -> Result<(), Failure> {
    // Inputs and step outputs share one numbering (`v` and `o`), in the order PyTorch made them.
    let half_ulp = p
        .steps
        .iter()
        .any(|s| HALF_ULP_OPS.contains(&s["op"].as_str().unwrap_or("")));
    let count = p.inputs.len() + p.steps.iter().filter(|s| s.get("o").is_some()).count();
    let mut vars: Vec<Option<Tensor>> = vec![None; count];
    for input in &p.inputs {
        let (dt, shape, data, rg) = recorded(input);
        let t = build(dt, &shape, data)
            .and_then(|t| t.to(device))
            .expect("a recorded input");
        if rg {
            t.set_requires_grad(true)
                .expect("requires_grad on a float leaf");
        }
        vars[input["v"].as_u64().expect("v") as usize] = Some(t);
    }
    for (i, st) in p.steps.iter().enumerate() {
        let op = st["op"].as_str().expect("op");
        let pytorch_err = st.get("err").and_then(Value::as_str);
        let outcome = match op {
            // Checked on the CPU: elsewhere PyTorch and we print the device too.
            "repr" if device != Device::Cpu => continue,
            "repr" => {
                let t = var(&vars, ids(st)[0]);
                let ours = t.to_string();
                let want = st["str"].as_str().expect("str");
                if ours != want {
                    return Err(fail(Category::WrongValue, i, want.into(), ours));
                }
                continue;
            }
            "backward" => {
                let a = var(&vars, ids(st)[0]);
                let c: Vec<Value> = st["c"].as_array().expect("c").clone();
                let res = build(a.dtype(), a.shape(), &c)
                    .or_else(|_| {
                        Tensor::from_vec(c.iter().map(num).collect::<Vec<_>>(), a.shape())?
                            .to_dtype(a.dtype())
                    })
                    .and_then(|c| c.to(device))
                    .and_then(|c| a.mul(&c))
                    .and_then(|l| l.sum())
                    .and_then(|l| l.backward());
                if let Err(e) = res {
                    return Err(fail(
                        Category::ErrorWherePyTorchWorks,
                        i,
                        "backward".into(),
                        e.to_string(),
                    ));
                }
                let gr = st["gr"].as_object().expect("gr");
                for (k, want) in gr {
                    let v: usize = k.parse().expect("variable");
                    match (want.is_null(), var(&vars, v).grad()) {
                        (true, None) => {}
                        (true, Some(_)) => {
                            return Err(fail(
                                Category::WrongGradient,
                                i,
                                format!("v{v}.grad None"),
                                "a gradient".into(),
                            ));
                        }
                        (false, None) => {
                            return Err(fail(
                                Category::WrongGradient,
                                i,
                                format!("v{v}.grad {}", short(want["d"].as_array().unwrap())),
                                "None".into(),
                            ));
                        }
                        (false, Some(g)) => {
                            if let Some(d) = diff(want, &g, half_ulp) {
                                return Err(fail(
                                    Category::WrongGradient,
                                    i,
                                    format!("v{v}.grad"),
                                    d,
                                ));
                            }
                        }
                    }
                }
                continue;
            }
            _ => step(&vars, st, device),
        };
        match (outcome, pytorch_err) {
            (Ok(Some(t)), None) => {
                if let Some(d) = diff(&st["r"], &t, half_ulp) {
                    return Err(fail(Category::WrongValue, i, op.into(), d));
                }
                vars[st["o"].as_u64().expect("o") as usize] = Some(t);
            }
            (Ok(_), Some(want)) => {
                return Err(fail(
                    Category::AcceptedWherePyTorchRefuses,
                    i,
                    want.into(),
                    format!("{op} accepted"),
                ));
            }
            (Err(e), None) => {
                return Err(fail(
                    Category::ErrorWherePyTorchWorks,
                    i,
                    op.into(),
                    e.to_string(),
                ));
            }
            (Err(e), Some(want)) => {
                if e.to_string() != want {
                    return Err(fail(
                        Category::DifferentErrorText,
                        i,
                        want.into(),
                        e.to_string(),
                    ));
                }
                return Ok(());
            }
            (Ok(None), None) => unreachable!("only repr and backward make nothing"),
        }
    }
    Ok(())
}

fn replay_caught(p: &Program, device: Device) -> Result<(), Failure> {
    match panic::catch_unwind(AssertUnwindSafe(|| replay(p, device))) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(non-string panic)".to_string());
            Err(fail(Category::Panic, usize::MAX, "-".into(), msg))
        }
    }
}

#[test]
fn dtypes_corpus_matches_pytorch() {
    let programs = load();
    assert!(programs.len() >= 3000, "{} programs", programs.len());
    let sel = Selection::from_env();
    let selected = sel.pick(&programs, |p| p.id, |p| &p.family);
    if selected.is_empty() {
        println!("dtypes corpus: no program selected by CORPUS_ID / CORPUS_FAMILY");
        return;
    }
    let quiet = Quiet::new();
    // CUDA refuses the new dtypes in this build: the corpus runs on the CPU and a virtual one.
    let devices = [Device::Cpu, Device::Virtual(1)];
    let mut by_family: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut by_category: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut failing, mut failing_ids, mut report, mut shown) = (0, Vec::new(), String::new(), 0);
    let (mut allowed, mut listed_passing) = (0, Vec::new());
    for p in &selected {
        let listed = KNOWN_FAILING.iter().any(|&(id, _)| id == p.id);
        let mut details = String::new();
        for &device in &devices {
            let entry = by_family.entry(&p.family).or_default();
            entry.0 += 1;
            if let Err(f) = replay_caught(p, device) {
                if !(sel.use_allow_list && listed) {
                    entry.1 += 1;
                    *by_category.entry(f.category.label()).or_default() += 1;
                }
                let _ = writeln!(
                    details,
                    "  on {device}: {} at #{}\n    PyTorch: {}\n    ours:    {}",
                    f.category.label(),
                    f.step,
                    f.pytorch,
                    f.ours
                );
            }
        }
        if sel.use_allow_list && listed {
            if details.is_empty() {
                listed_passing.push(p.id);
            } else {
                allowed += 1;
            }
            continue;
        }
        if !details.is_empty() {
            failing += 1;
            failing_ids.push(p.id);
            if shown < sel.show || sel.only_id.is_some() {
                shown += 1;
                let _ = writeln!(
                    report,
                    "program {} ({}): {}\n{details}",
                    p.id, p.family, p.line
                );
            }
        } else if sel.only_id.is_some() {
            let _ = writeln!(report, "program {}: {}\n  agrees", p.id, p.line);
        }
    }
    drop(quiet);
    let mut summary = format!(
        "dtypes corpus: {} programs x {} devices; {failing} fail\n",
        selected.len(),
        devices.len()
    );
    let _ = writeln!(
        summary,
        "  by family (failed runs / runs): {}",
        by_family
            .iter()
            .map(|(f, (n, bad))| format!("{f} {bad}/{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (c, n) in &by_category {
        let _ = writeln!(summary, "  {c}: {n} runs");
    }
    if !KNOWN_FAILING.is_empty() {
        let _ = writeln!(
            summary,
            "  allow-list: {allowed} of {} listed programs still fail; now passing: {listed_passing:?}",
            KNOWN_FAILING.len()
        );
    }
    if failing > 0 {
        let _ = writeln!(summary, "  failing program ids: {failing_ids:?}");
        println!("{report}");
    }
    println!("{summary}");
    assert_eq!(failing, 0, "\n{summary}");
}
