//! Replays the corpora recorded from PyTorch through the public API: the view + in-place corpus
//! (`views_inplace.jsonl.gz`, written by `gen_views_inplace.py`), the ops corpus
//! (`ops.jsonl.gz` and its float32 twin `ops_f32.jsonl.gz`, written by `gen_ops.py`) and the
//! custom-function corpus (`custom.jsonl.gz`, written by `gen_custom.py`; see `custom.rs`), in the op
//! language this folder's `README.md` describes. Each program runs on `Device::Cpu`, on
//! `Device::Virtual(1)` and, where there is a GPU, on `Device::Cuda(0)`, and must agree with
//! PyTorch: each step's values (float64: rtol 1e-9, atol 1e-12; float32: see `RTOL_F32`) and
//! `requires_grad`, the gradients (`None` exactly where PyTorch has `None`), and errors at the
//! same step with PyTorch's text.
//!
//! On failure it prints counts per category and, for the first failing programs, the program as
//! pseudo-code with what PyTorch got and what we got. Environment variables:
//!
//! * `CORPUS_ID=<n>`: run program `n` only and print it in full (every value, both sides).
//! * `CORPUS_FAMILY=<name>`: run one scenario family only (`base_inplace`, `overlap`, ...).
//! * `CORPUS_SHOW=<k>`: print the first `k` failing programs (default 15).
//! * `CORPUS_NO_ALLOW=1`: replay the programs of a corpus's temporary allow-list of known
//!   failures (see `custom.rs`) as any other.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Read;
use std::panic::{self, AssertUnwindSafe};

use autograd::nn::functional::{
    self as F, BceWithLogitsOptions, CrossEntropyOptions, NllLossOptions, Reduction,
};
use autograd::nn::{Embedding, Forward, GeluApproximate, Linear};
use autograd::{DType, Device, GradOptions, Tensor, grad, no_grad};
use serde_json::Value;

use crate::select::{Quiet, Selection};

mod custom;
mod dtypes;
mod forward;
mod func;
mod select;

/// Held by the tests that open a dual level: PyTorch allows one level at a time, process-wide,
/// and the tests of this binary run on parallel threads.
static DUAL_LEVEL_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

const VIEWS_CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/corpus/views_inplace.jsonl.gz"
);

const OPS_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/ops.jsonl.gz");

const OPS_F32_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/ops_f32.jsonl.gz");

const RTOL: f64 = 1e-9;
const ATOL: f64 = 1e-12;
/// The tolerances of a float32 corpus, relative to the largest value of the tensor compared: the
/// two sides' kernels round differently (SIMD transcendental functions, summation order,
/// PyTorch's fused layer norm against a composition of ops), each within a few ulps of the terms
/// it adds, and a layer norm over nearly equal values amplifies that: for a row
/// [-0.96, -0.838, -0.829] (an earlier draw of the corpus) the gradient computed in f64 was
/// [1.1714025, -0.0015199], ours [1.1713886, -0.0015144] and PyTorch's [1.1714303, -0.0015320]:
/// 1.7e-5 apart on a value of 0.0015, both within 3e-5 of the f64 values, ours the nearer.
/// The absolute part covers values that are 0 exactly but are made of terms near 10, which
/// each side rounds to a few 1e-6 differently (`broadcast` programs, second order).
const RTOL_F32: f64 = 1e-4;
const ATOL_F32: f64 = 1e-5;

/// Where this project's error texts deliberately differ from PyTorch's: each pair is (PyTorch's
/// text, ours), applied to PyTorch's message before the comparison. Nothing else is normalised.
///
/// * The version-counter error names the tensor by its Rust dtype: `[f64 [3]]` for PyTorch's
///   `[torch.DoubleTensor [3]]`.
/// * The same error's hint names the Rust function (`autograd::set_detect_anomaly(true, false)`,
///   `Error::SavedTensorModified` in `autograd-runtime/src/error.rs`) where PyTorch names the
///   Python one.
const SUBSTITUTIONS: &[(&str, &str)] = &[
    ("[torch.DoubleTensor ", "[f64 "),
    (
        "with torch.autograd.set_detect_anomaly(True, check_nan=False).",
        "with autograd::set_detect_anomaly(true, false).",
    ),
];

fn normalise_pytorch_error(msg: &str) -> String {
    let mut s = msg.to_string();
    for (theirs, ours) in SUBSTITUTIONS {
        s = s.replace(theirs, ours);
    }
    s
}

// ----- the recorded corpus ---------------------------------------------------------------------

struct Program {
    id: usize,
    /// The corpus's element type (its header's `dtype`; float64 when it names none).
    dtype: DType,
    /// Whether a step casts to float32 (the `casts` family): its values are compared at
    /// float32's tolerance.
    has_f32_part: bool,
    family: String,
    inputs: Vec<Recorded>,
    steps: Vec<Value>,
    /// (step index, PyTorch's message)
    error: Option<(usize, String)>,
    /// A PyTorch behaviour the generator flagged as questionable (see the README).
    quirk: Option<String>,
}

/// A recorded tensor: shape, flat C-order values, requires_grad.
#[derive(Clone)]
struct Recorded {
    shape: Vec<usize>,
    data: Vec<f64>,
    requires_grad: bool,
}

impl Recorded {
    fn parse(v: &Value) -> Recorded {
        Recorded {
            shape: usizes(&v["s"]),
            data: floats(&v["d"]),
            requires_grad: v["rg"].as_bool().unwrap_or(false),
        }
    }
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| x.as_u64().expect("usize") as usize)
                .collect()
        })
        .unwrap_or_default()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_f64().expect("f64")).collect())
        .unwrap_or_default()
}

fn uint(step: &Value, key: &str) -> usize {
    step[key]
        .as_u64()
        .unwrap_or_else(|| panic!("attribute {key} in {step}")) as usize
}

fn float(step: &Value, key: &str) -> f64 {
    step[key]
        .as_f64()
        .unwrap_or_else(|| panic!("attribute {key} in {step}"))
}

fn ids(v: &Value) -> Vec<usize> {
    usizes(v)
}

fn load_corpus(path: &str) -> Vec<Program> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("the corpus is gzipped UTF-8");
    let mut programs = Vec::new();
    let mut dtype = DType::F64;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("one JSON object per line");
        if let Some(header) = v.get("header") {
            if header["dtype"].as_str() == Some("float32") {
                dtype = DType::F32;
            }
            continue;
        }
        let error = v.get("error").map(|e| {
            (
                e["step"].as_u64().expect("error step") as usize,
                e["msg"].as_str().expect("error message").to_string(),
            )
        });
        let steps = match v["steps"].as_array() {
            Some(s) => s.clone(),
            None => panic!("program without steps: {line}"),
        };
        programs.push(Program {
            id: v["id"].as_u64().expect("id") as usize,
            dtype,
            has_f32_part: steps
                .iter()
                .any(|st| st["op"] == "to_dtype" && st["dtype"] == "float32"),
            family: v["family"].as_str().expect("family").to_string(),
            inputs: v["inputs"]
                .as_array()
                .expect("inputs")
                .iter()
                .map(Recorded::parse)
                .collect(),
            steps,
            error,
            quirk: v.get("quirk").and_then(Value::as_str).map(str::to_string),
        });
    }
    programs
}

// ----- outcomes --------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
enum Category {
    WrongValue,
    WrongRequiresGrad,
    WrongGradient,
    ErrorWherePyTorchWorks,
    AcceptedWherePyTorchRefuses,
    DifferentErrorText,
    /// A custom function's output's `is_leaf` or `grad_fn` name, or a saved-tensor hook count.
    WrongMetadata,
    Panic,
}

impl Category {
    const ALL: [Category; 8] = [
        Category::WrongValue,
        Category::WrongRequiresGrad,
        Category::WrongGradient,
        Category::ErrorWherePyTorchWorks,
        Category::AcceptedWherePyTorchRefuses,
        Category::DifferentErrorText,
        Category::WrongMetadata,
        Category::Panic,
    ];

    fn label(self) -> &'static str {
        match self {
            Category::WrongValue => "wrong value",
            Category::WrongRequiresGrad => "wrong requires_grad",
            Category::WrongGradient => "wrong gradient",
            Category::ErrorWherePyTorchWorks => "error where PyTorch works",
            Category::AcceptedWherePyTorchRefuses => "accepted where PyTorch refuses",
            Category::DifferentErrorText => "different error text",
            Category::WrongMetadata => "wrong is_leaf / grad_fn / hook count",
            Category::Panic => "panic",
        }
    }
}

/// The first point where a replay diverged from PyTorch.
struct Failure {
    category: Category,
    step: usize,
    pytorch: String,
    ours: String,
}

fn fail(category: Category, step: usize, pytorch: String, ours: String) -> Failure {
    Failure {
        category,
        step,
        pytorch,
        ours,
    }
}

/// The kind of PyTorch error a program ends with (for the summary), by a stable prefix.
fn error_kind(msg: &str) -> &'static str {
    const KINDS: &[(&str, &str)] = &[
        (
            "one of the variables needed for gradient computation",
            "version counter",
        ),
        ("a view of a leaf Variable", "view of a leaf"),
        ("a leaf Variable", "leaf in-place"),
        ("A view was created in no_grad mode", "no_grad view"),
        (
            "is a view of a view which was created in no_grad mode",
            "no_grad view",
        ),
        (
            "This view is the output of a function that returns multiple views",
            "multi-output view",
        ),
        (
            "some elements of the input tensor and the written-to tensor",
            "partial overlap",
        ),
        (
            "more than one element of the written-to tensor",
            "internal overlap",
        ),
    ];
    KINDS
        .iter()
        .find(|(p, _)| msg.contains(p))
        .map(|(_, k)| *k)
        .unwrap_or("other")
}

// ----- replay ----------------------------------------------------------------------------------

/// Runs programs on one device, keeping the variables by id.
struct Replay<'a> {
    program: &'a Program,
    device: Device,
    vars: Vec<Option<Tensor>>,
    /// Per-step lines of what we computed, for `CORPUS_ID`.
    trace: Option<Vec<String>>,
    /// The indices the last `max_dim` step chose (compared with PyTorch's `ix`).
    indices: Vec<usize>,
    /// Saved-tensor hook counts (the custom corpus).
    hooks: custom::HookCounts,
}

type StepResult = autograd::Result<Vec<Option<Tensor>>>;

impl<'a> Replay<'a> {
    fn new(program: &'a Program, device: Device, trace: bool) -> Self {
        Replay {
            program,
            device,
            vars: Vec::new(),
            trace: trace.then(Vec::new),
            indices: Vec::new(),
            hooks: Default::default(),
        }
    }

    fn var(&self, id: usize) -> Tensor {
        match self.vars.get(id) {
            Some(Some(t)) => t.clone(),
            _ => panic!("variable v{id} is not defined (or a None gradient)"),
        }
    }

    fn set(&mut self, id: usize, t: Option<Tensor>) {
        if self.vars.len() <= id {
            self.vars.resize(id + 1, None);
        }
        self.vars[id] = t;
    }

    /// A tensor of recorded values on this replay's device (a leaf; `requires_grad` as given).
    fn tensor(&self, shape: &[usize], data: &[f64], requires_grad: bool) -> Tensor {
        let t = Tensor::from_vec(data.to_vec(), shape)
            .and_then(|t| t.to_dtype(self.program.dtype))
            .and_then(|t| t.to(self.device))
            .expect("creating a recorded tensor");
        if requires_grad {
            t.requires_grad_(true).expect("requires_grad_ on a leaf")
        } else {
            t
        }
    }

    /// A tensor's values, read on the CPU without recording anything.
    fn read(t: &Tensor) -> (Vec<usize>, Vec<f64>) {
        let _g = no_grad();
        let cpu = t
            .to(Device::Cpu)
            .and_then(|t| t.to_dtype(DType::F64))
            .expect("copy to the CPU");
        (
            cpu.shape().to_vec(),
            cpu.to_vec::<f64>().expect("f64 values"),
        )
    }

    fn run(&mut self) -> Result<(), Failure> {
        for (i, input) in self.program.inputs.iter().enumerate() {
            let t = self.tensor(&input.shape, &input.data, input.requires_grad);
            self.set(i, Some(t));
        }
        let pytorch_error = self.program.error.as_ref();
        for (k, step) in self.program.steps.iter().enumerate() {
            let op = step["op"].as_str().expect("op");
            let ng = step.get("ng").is_some_and(|v| v.as_u64() == Some(1));
            let result = {
                let _guard = ng.then(no_grad);
                self.step(op, step)
            };
            let refused_here = pytorch_error.filter(|(s, _)| *s == k);
            match (result, refused_here) {
                (Err(e), Some((_, msg))) => {
                    let expected = normalise_pytorch_error(msg);
                    let ours = e.to_string();
                    self.note(k, format!("error: {ours}"));
                    if ours != expected {
                        return Err(fail(Category::DifferentErrorText, k, expected, ours));
                    }
                    return Ok(());
                }
                (Err(e), None) => {
                    self.note(k, format!("error: {e}"));
                    let theirs = match step.get("r") {
                        Some(r) => format!("ok: {}", short_values(r)),
                        None => "ok".to_string(),
                    };
                    return Err(fail(
                        Category::ErrorWherePyTorchWorks,
                        k,
                        theirs,
                        format!("error: {e}"),
                    ));
                }
                (Ok(outs), Some((_, msg))) => {
                    let ours = outs
                        .iter()
                        .map(|t| t.as_ref().map_or("None".to_string(), |t| self.show(t)))
                        .collect::<Vec<_>>()
                        .join(", ");
                    self.note(k, format!("ok: {ours}"));
                    return Err(fail(
                        Category::AcceptedWherePyTorchRefuses,
                        k,
                        format!("error: {msg}"),
                        format!("ok: {ours}"),
                    ));
                }
                (Ok(outs), None) => self.compare(k, op, step, &outs)?,
            }
        }
        Ok(())
    }

    /// A tensor for a report line: a few values, or all of them when tracing (`CORPUS_ID`).
    fn show(&self, t: &Tensor) -> String {
        if self.trace.is_some() {
            let (shape, data) = Replay::read(t);
            let rg = if t.requires_grad() { " rg" } else { "" };
            format!("{shape:?}{rg} {data:?}")
        } else {
            show_tensor(t)
        }
    }

    fn note(&mut self, k: usize, line: String) {
        if let Some(trace) = &mut self.trace {
            trace.push(format!("    #{k} ours: {line}"));
        }
    }

    /// Compares a step's outputs (and, after `backward`, every variable's `.grad`).
    fn compare(
        &mut self,
        k: usize,
        op: &str,
        step: &Value,
        outs: &[Option<Tensor>],
    ) -> Result<(), Failure> {
        if op == "backward" {
            self.compare_custom(k, op, step, outs)?;
            return self.compare_backward(k, step);
        }
        if op == "max_dim" {
            let expected = usizes(&step["ix"]);
            if self.indices != expected {
                return Err(fail(
                    Category::WrongValue,
                    k,
                    format!("indices {expected:?}"),
                    format!("indices {:?}", self.indices),
                ));
            }
        }
        let recorded = match step.get("r").and_then(Value::as_array) {
            Some(r) => r,
            None => return Ok(()),
        };
        let gradient = op == "grad";
        assert_eq!(
            recorded.len(),
            outs.len(),
            "program {} step {k}: {} outputs recorded, {} produced",
            self.program.id,
            recorded.len(),
            outs.len()
        );
        for (j, (rec, out)) in recorded.iter().zip(outs).enumerate() {
            let what = if op == "check" {
                format!("v{}", ids(&step["a"])[j])
            } else {
                format!("output {j}")
            };
            if let Some(t) = out {
                let line = format!("{what} = {}", self.show(t));
                self.note(k, line);
            }
            let value_cat = if gradient {
                Category::WrongGradient
            } else {
                Category::WrongValue
            };
            match (rec.is_null(), out) {
                (true, None) => {}
                (true, Some(t)) => {
                    return Err(fail(
                        Category::WrongGradient,
                        k,
                        format!("{what}: None"),
                        format!("{what}: {}", self.show(t)),
                    ));
                }
                (false, None) => {
                    return Err(fail(
                        value_cat,
                        k,
                        format!("{what}: {}", show_recorded(&Recorded::parse(rec))),
                        format!("{what}: None"),
                    ));
                }
                (false, Some(t)) => {
                    let rec = Recorded::parse(rec);
                    if let Some(diff) = value_diff(&rec, t, self.program.has_f32_part) {
                        return Err(fail(
                            value_cat,
                            k,
                            format!("{what}: {}", show_recorded(&rec)),
                            format!("{what}: {} ({diff})", self.show(t)),
                        ));
                    }
                    if rec.requires_grad != t.requires_grad() {
                        return Err(fail(
                            Category::WrongRequiresGrad,
                            k,
                            format!("{what}: requires_grad={}", rec.requires_grad),
                            format!("{what}: requires_grad={}", t.requires_grad()),
                        ));
                    }
                }
            }
        }
        self.compare_custom(k, op, step, outs)
    }

    fn compare_backward(&mut self, k: usize, step: &Value) -> Result<(), Failure> {
        let expected: HashMap<usize, Recorded> = step["gr"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(id, v)| (id.parse().expect("var id"), Recorded::parse(v)))
                    .collect()
            })
            .unwrap_or_default();
        for (id, t) in self.vars.clone().iter().enumerate() {
            let Some(t) = t else { continue };
            let ours = t.grad();
            if let Some(g) = &ours {
                self.note(k, format!("v{id}.grad = {}", self.show(g)));
            }
            match (expected.get(&id), ours) {
                (None, None) => {}
                (None, Some(g)) => {
                    return Err(fail(
                        Category::WrongGradient,
                        k,
                        format!("v{id}.grad: None"),
                        format!("v{id}.grad: {}", self.show(&g)),
                    ));
                }
                (Some(rec), None) => {
                    return Err(fail(
                        Category::WrongGradient,
                        k,
                        format!("v{id}.grad: {}", show_recorded(rec)),
                        format!("v{id}.grad: None"),
                    ));
                }
                (Some(rec), Some(g)) => {
                    if let Some(diff) = value_diff(rec, &g, self.program.has_f32_part) {
                        return Err(fail(
                            Category::WrongGradient,
                            k,
                            format!("v{id}.grad: {}", show_recorded(rec)),
                            format!("v{id}.grad: {} ({diff})", self.show(&g)),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs one step; returns what it produced, in the order the corpus records it.
    fn step(&mut self, op: &str, s: &Value) -> StepResult {
        let a = ids(&s["a"]);
        let outs: Vec<Option<Tensor>> = match op {
            // ---- leaves and constants
            "const" => {
                let t = self.tensor(&usizes(&s["s"]), &floats(&s["d"]), false);
                vec![Some(t)]
            }
            // ---- views
            "narrow" => {
                one(self
                    .var(a[0])
                    .narrow(uint(s, "dim"), uint(s, "start"), uint(s, "len"))?)
            }
            "transpose" => one(self.var(a[0]).transpose(uint(s, "d0"), uint(s, "d1"))?),
            "permute" => one(self.var(a[0]).permute(&usizes(&s["dims"]))?),
            "expand" => one(self.var(a[0]).expand(&usizes(&s["shape"]))?),
            "reshape" => one(self.var(a[0]).reshape(&usizes(&s["shape"]))?),
            "split" => self
                .var(a[0])
                .split(&usizes(&s["sizes"]), uint(s, "dim"))?
                .into_iter()
                .map(Some)
                .collect(),
            "chunk" => self
                .var(a[0])
                .chunk(uint(s, "chunks"), uint(s, "dim"))?
                .into_iter()
                .map(Some)
                .collect(),
            "select" => one(self.var(a[0]).select(uint(s, "dim"), uint(s, "index"))?),
            "detach" => one(self.var(a[0]).detach()),
            // ---- in-place ops: the output is the written tensor
            "add_" | "sub_" | "mul_" | "div_" | "fill_" | "zero_" => {
                let t = self.var(a[0]);
                match op {
                    "add_" => t.add_(&self.var(a[1]))?,
                    "sub_" => t.sub_(&self.var(a[1]))?,
                    "mul_" => t.mul_(&self.var(a[1]))?,
                    "div_" => t.div_(&self.var(a[1]))?,
                    "fill_" => t.fill_(float(s, "value"))?,
                    _ => t.zero_()?,
                };
                return Ok(vec![Some(t)]);
            }
            // ---- out-of-place ops
            "neg" => one(self.var(a[0]).neg()?),
            "exp" => one(self.var(a[0]).exp()?),
            "log" => one(self.var(a[0]).log()?),
            "sqrt" => one(self.var(a[0]).sqrt()?),
            "tanh" => one(self.var(a[0]).tanh()?),
            "sigmoid" => one(self.var(a[0]).sigmoid()?),
            "sin" => one(self.var(a[0]).sin()?),
            "relu" => one(self.var(a[0]).relu()?),
            "abs" => one(self.var(a[0]).abs()?),
            "erf" => one(self.var(a[0]).erf()?),
            "reciprocal" => one(self.var(a[0]).reciprocal()?),
            "clamp" => one(self.var(a[0]).clamp(s["min"].as_f64(), s["max"].as_f64())?),
            "sub_scalar" => one(self.var(a[0]).sub_scalar(float(s, "s"))?),
            "index_select" => one(self
                .var(a[0])
                .index_select(uint(s, "dim"), &usizes(&s["index"]))?),
            "max_dim" => {
                let keepdim = s["keepdim"].as_bool().expect("keepdim");
                let (values, indices) = self.var(a[0]).max_dim(uint(s, "dim"), keepdim)?;
                self.indices = (indices.to_vec::<i64>()?.into_iter())
                    .map(|i| i as usize)
                    .collect();
                one(values)
            }
            "cos" => one(self.var(a[0]).cos()?),
            "pow" => one(self.var(a[0]).pow(float(s, "p"))?),
            "mul_scalar" => one(self.var(a[0]).mul_scalar(float(s, "s"))?),
            "add_scalar" => one(self.var(a[0]).add_scalar(float(s, "s"))?),
            "div_scalar" => one(self.var(a[0]).div_scalar(float(s, "s"))?),
            "rsub_scalar" => one(self.var(a[0]).rsub_scalar(float(s, "s"))?),
            "rdiv_scalar" => one(self.var(a[0]).rdiv_scalar(float(s, "s"))?),
            "sum" => one(self.var(a[0]).sum()?),
            "mean" => one(self.var(a[0]).mean()?),
            "sum_dims" => one(self.var(a[0]).sum_dims(
                &usizes(&s["dims"]),
                s["keepdim"].as_bool().expect("keepdim"),
            )?),
            "softmax" => one(self.var(a[0]).softmax(uint(s, "dim"))?),
            "log_softmax" => one(self.var(a[0]).log_softmax(uint(s, "dim"))?),
            "copy" => one(self.var(a[0]).copy()?),
            "contiguous" => one(self.var(a[0]).contiguous()?),
            "add" => one(self.var(a[0]).add(&self.var(a[1]))?),
            "sub" => one(self.var(a[0]).sub(&self.var(a[1]))?),
            "mul" => one(self.var(a[0]).mul(&self.var(a[1]))?),
            "div" => one(self.var(a[0]).div(&self.var(a[1]))?),
            "matmul" => one(self.var(a[0]).matmul(&self.var(a[1]))?),
            "cat" | "stack" => {
                let ts: Vec<Tensor> = a.iter().map(|&i| self.var(i)).collect();
                let dim = uint(s, "dim");
                one(if op == "cat" {
                    Tensor::cat(&ts, dim)?
                } else {
                    Tensor::stack(&ts, dim)?
                })
            }
            // ---- torch.nn.functional
            "gelu" => {
                let approximate = match s["approximate"].as_str() {
                    Some("tanh") => GeluApproximate::Tanh,
                    _ => GeluApproximate::None,
                };
                one(F::gelu(&self.var(a[0]), approximate)?)
            }
            "leaky_relu" => one(F::leaky_relu(&self.var(a[0]), float(s, "slope"))?),
            "mse_loss" => one(F::mse_loss(&self.var(a[0]), &self.var(a[1]), reduction(s))?),
            "cross_entropy" | "nll_loss" => {
                let (x, targets) = (self.var(a[0]), usizes(&s["targets"]));
                let weight = self.optional_const(s, "weight", None);
                let ignore_index = s["ignore_index"].as_u64().map(|i| i as usize);
                let reduction = reduction(s);
                one(if op == "cross_entropy" {
                    let label_smoothing = s["label_smoothing"].as_f64().unwrap_or(0.0);
                    let options = CrossEntropyOptions {
                        weight,
                        ignore_index,
                        reduction,
                        label_smoothing,
                    };
                    F::cross_entropy(&x, &targets, &options)?
                } else {
                    let options = NllLossOptions {
                        weight,
                        ignore_index,
                        reduction,
                    };
                    F::nll_loss(&x, &targets, &options)?
                })
            }
            "bce_with_logits" => {
                let x = self.var(a[0]);
                let shape = x.shape().to_vec();
                let last = shape.last().copied().unwrap_or(1);
                let options = BceWithLogitsOptions {
                    weight: self.optional_const(s, "weight", Some(&shape)),
                    pos_weight: self.optional_const(s, "pos_weight", Some(&[last])),
                    reduction: reduction(s),
                };
                // `ts`: the target's shape where it differs from the input's (an error case).
                let target_shape = s.get("ts").map_or(shape.clone(), usizes);
                let target = self.tensor(&target_shape, &floats(&s["target"]), false);
                one(F::binary_cross_entropy_with_logits(&x, &target, &options)?)
            }
            "layer_norm" => {
                let (w, b) = match a[..] {
                    [_, w, b] => (Some(self.var(w)), Some(self.var(b))),
                    _ => (None, None),
                };
                one(F::layer_norm(
                    &self.var(a[0]),
                    &usizes(&s["shape"]),
                    w.as_ref(),
                    b.as_ref(),
                    float(s, "eps"),
                )?)
            }
            "max_pool2d" => one(F::max_pool2d(
                &self.var(a[0]),
                pair(s, "k"),
                pair(s, "stride"),
                pair(s, "padding"),
                pair(s, "dilation"),
                s["ceil"].as_bool().expect("ceil"),
            )?),
            "avg_pool2d" => one(F::avg_pool2d(
                &self.var(a[0]),
                pair(s, "k"),
                pair(s, "stride"),
                pair(s, "padding"),
                s["ceil"].as_bool().expect("ceil"),
                s["count_include_pad"].as_bool().expect("count_include_pad"),
                s["divisor"].as_u64().map(|d| d as usize),
            )?),
            "linear" => {
                let bias = a.get(2).map(|&b| self.var(b));
                let layer = Linear::from_parts(self.var(a[1]), bias)?;
                one(layer.forward(&self.var(a[0]))?)
            }
            "embedding" => {
                let mut layer = Embedding::from_weight(self.var(a[0]))?;
                if let Some(pad) = s["padding"].as_u64() {
                    layer = layer.with_padding_idx(pad as usize)?;
                }
                one(layer.forward_indices(&usizes(&s["indices"]), &usizes(&s["shape"]))?)
            }
            "conv2d" => {
                let bias = a.get(2).map(|&b| self.var(b));
                one(F::conv2d(
                    &self.var(a[0]),
                    &self.var(a[1]),
                    bias.as_ref(),
                    pair(s, "stride"),
                    pair(s, "padding"),
                    pair(s, "dilation"),
                    uint(s, "groups"),
                )?)
            }
            // ---- custom functions (the custom corpus)
            "custom" => self.custom(s)?,
            // ---- reading every variable
            "check" => return Ok(a.iter().map(|&i| Some(self.var(i))).collect()),
            // ---- the end
            "loss" => {
                let consts = s["c"].as_array().expect("loss constants");
                let mut total: Option<Tensor> = None;
                for (&i, c) in a.iter().zip(consts) {
                    let t = self.var(i);
                    // In `t`'s dtype: PyTorch promotes a float32 term to float64 where this
                    // crate refuses mixed dtypes (the `casts` family has float32 variables).
                    let c = self
                        .tensor(t.shape(), &floats(c), false)
                        .to_dtype(t.dtype())?;
                    let term = t.mul(&c)?.sum()?.to_dtype(self.program.dtype)?;
                    total = Some(match total {
                        None => term,
                        Some(acc) => acc.add(&term)?,
                    });
                }
                vec![Some(total.expect("a loss of at least one term"))]
            }
            "backward" => {
                // `retain`: retain_graph=True; `inputs`: the leaves to accumulate into.
                let mut options = autograd::BackwardOptions::new();
                if s["retain"].as_bool() == Some(true) {
                    options = options.retain_graph(true);
                }
                if let Some(inputs) = s.get("inputs") {
                    let inputs: Vec<Tensor> = ids(inputs).iter().map(|&i| self.var(i)).collect();
                    options = options.inputs(&inputs);
                }
                self.var(a[0]).backward_with(options)?;
                return Ok(Vec::new());
            }
            "to_dtype" => one(self.var(a[0]).to_dtype(match s["dtype"].as_str() {
                Some("float32") => DType::F32,
                _ => DType::F64,
            })?),
            "grad" => {
                let wrt: Vec<Tensor> = ids(&s["wrt"]).iter().map(|&i| self.var(i)).collect();
                let create_graph = s["cg"].as_bool().expect("cg");
                grad(
                    &[self.var(a[0])],
                    &wrt,
                    GradOptions::new()
                        .create_graph(create_graph)
                        .allow_unused(true),
                )?
            }
            other => panic!(
                "program {}: op {other:?} is not replayed by tests/corpus/main.rs",
                self.program.id
            ),
        };
        if let Some(o) = s.get("o") {
            for (j, &id) in ids(o).iter().enumerate() {
                self.set(id, outs.get(j).cloned().flatten());
            }
        }
        Ok(outs)
    }

    /// The constant `s[key]` (flat values, of `shape` or 1-D) on this replay's device, if given.
    fn optional_const(&self, s: &Value, key: &str, shape: Option<&[usize]>) -> Option<Tensor> {
        let values = s.get(key).filter(|v| !v.is_null()).map(floats)?;
        let flat = [values.len()];
        Some(self.tensor(shape.unwrap_or(&flat), &values, false))
    }
}

/// A reduction attribute (`"mean"`, `"sum"`, `"none"`).
fn reduction(s: &Value) -> Reduction {
    match s["reduction"].as_str() {
        Some("sum") => Reduction::Sum,
        Some("none") => Reduction::None,
        _ => Reduction::Mean,
    }
}

/// A two-element attribute (`[h, w]`).
fn pair(s: &Value, key: &str) -> [usize; 2] {
    let v = usizes(&s[key]);
    [v[0], v[1]]
}

fn one(t: Tensor) -> Vec<Option<Tensor>> {
    vec![Some(t)]
}

/// `None` if `t` matches the recorded shape and values, else what differs; at float32's
/// tolerance when `t` is float32 or `f32_part` (a program that computes partly in float32, whose
/// float64 values carry float32 rounding too).
fn value_diff(rec: &Recorded, t: &Tensor, f32_part: bool) -> Option<String> {
    let (shape, data) = Replay::read(t);
    if shape != rec.shape {
        return Some(format!("shape {:?} vs {:?}", shape, rec.shape));
    }
    // float64: each element to its own scale; float32: to the tensor's largest value.
    let scale = rec.data.iter().fold(0.0f64, |m, e| m.max(e.abs()));
    for (i, (a, e)) in data.iter().zip(&rec.data).enumerate() {
        // NaN never matches (the corpus has none).
        let close = if f32_part || t.dtype() == DType::F32 {
            (a - e).abs() <= ATOL_F32 + RTOL_F32 * scale
        } else {
            (a - e).abs() <= ATOL + RTOL * e.abs()
        };
        if !close {
            return Some(format!("element {i}: {a} vs {e}"));
        }
    }
    None
}

fn fmt_values(data: &[f64]) -> String {
    const MAX: usize = 8;
    let mut s = String::from("[");
    for (i, v) in data.iter().take(MAX).enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{v:.6}");
    }
    if data.len() > MAX {
        let _ = write!(s, ", ... ({} values)", data.len());
    }
    s.push(']');
    s
}

fn show_recorded(r: &Recorded) -> String {
    format!(
        "{:?}{} {}",
        r.shape,
        if r.requires_grad { " rg" } else { "" },
        fmt_values(&r.data)
    )
}

fn show_tensor(t: &Tensor) -> String {
    let (shape, data) = Replay::read(t);
    format!(
        "{:?}{} {}",
        shape,
        if t.requires_grad() { " rg" } else { "" },
        fmt_values(&data)
    )
}

fn short_values(r: &Value) -> String {
    match r.as_array() {
        Some(a) => a
            .iter()
            .map(|v| {
                if v.is_null() {
                    "None".to_string()
                } else {
                    show_recorded(&Recorded::parse(v))
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        None => String::new(),
    }
}

// ----- pseudo-code -----------------------------------------------------------------------------

fn vlist(v: &[usize]) -> String {
    v.iter()
        .map(|i| format!("v{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One step as a line of pseudo-code (the Rust method names).
fn describe(s: &Value) -> String {
    let op = s["op"].as_str().unwrap_or("?");
    let a = ids(&s["a"]);
    let o = ids(&s["o"]);
    let lhs = match o.len() {
        0 => String::new(),
        1 => format!("v{} = ", o[0]),
        _ => format!("({}) = ", vlist(&o)),
    };
    let x = a.first().map(|i| format!("v{i}")).unwrap_or_default();
    let body = match op {
        "const" => format!(
            "const {:?} {}",
            usizes(&s["s"]),
            fmt_values(&floats(&s["d"]))
        ),
        "narrow" => format!(
            "{x}.narrow({}, {}, {})",
            uint(s, "dim"),
            uint(s, "start"),
            uint(s, "len")
        ),
        "transpose" => format!("{x}.transpose({}, {})", uint(s, "d0"), uint(s, "d1")),
        "select" => format!("{x}.select({}, {})", uint(s, "dim"), uint(s, "index")),
        "permute" => format!("{x}.permute({:?})", usizes(&s["dims"])),
        "expand" | "reshape" => format!("{x}.{op}({:?})", usizes(&s["shape"])),
        "split" => format!("{x}.split({:?}, {})", usizes(&s["sizes"]), uint(s, "dim")),
        "chunk" => format!("{x}.chunk({}, {})", uint(s, "chunks"), uint(s, "dim")),
        "add_" | "sub_" | "mul_" | "div_" => format!("{x}.{op}(v{})", a[1]),
        "fill_" => format!("{x}.fill_({})", float(s, "value")),
        "pow" => format!("{x}.pow({})", float(s, "p")),
        "mul_scalar" | "add_scalar" | "div_scalar" | "rsub_scalar" | "rdiv_scalar" => {
            format!("{x}.{op}({})", float(s, "s"))
        }
        "sum_dims" => format!(
            "{x}.sum_dims({:?}, {})",
            usizes(&s["dims"]),
            s["keepdim"].as_bool().unwrap_or(false)
        ),
        "softmax" | "log_softmax" => format!("{x}.{op}({})", uint(s, "dim")),
        "sub_scalar" => format!("{x}.{op}({})", float(s, "s")),
        "clamp" => format!("{x}.clamp({}, {})", s["min"], s["max"]),
        "index_select" => format!(
            "{x}.index_select({}, {:?})",
            uint(s, "dim"),
            usizes(&s["index"])
        ),
        "max_dim" => format!(
            "{x}.max_dim({}, {})",
            uint(s, "dim"),
            s["keepdim"].as_bool().unwrap_or(false)
        ),
        "add" | "sub" | "mul" | "div" | "matmul" => format!("{x}.{op}(v{})", a[1]),
        "cat" | "stack" => format!("Tensor::{op}([{}], {})", vlist(&a), uint(s, "dim")),
        "check" => format!("check values of {}", vlist(&a)),
        "custom" => custom::describe(s),
        "loss" => a
            .iter()
            .map(|i| format!("(v{i} * c).sum()"))
            .collect::<Vec<_>>()
            .join(" + "),
        "backward" => format!("{x}.backward()"),
        "grad" => format!(
            "grad([{x}], [{}], create_graph={}, allow_unused=true)",
            vlist(&ids(&s["wrt"])),
            s["cg"].as_bool().unwrap_or(false)
        ),
        _ => format!("{x}.{op}()"),
    };
    let ng = if s.get("ng").is_some() {
        "[no_grad] "
    } else {
        ""
    };
    let shapes = match s.get("r").and_then(Value::as_array) {
        Some(r) if op != "check" && !r.is_empty() => {
            let parts: Vec<String> = r
                .iter()
                .map(|v| {
                    if v.is_null() {
                        "None".into()
                    } else {
                        let rec = Recorded::parse(v);
                        format!(
                            "{:?}{}",
                            rec.shape,
                            if rec.requires_grad { " rg" } else { "" }
                        )
                    }
                })
                .collect();
            format!("    -> {}", parts.join(", "))
        }
        _ => String::new(),
    };
    format!("{ng}{lhs}{body}{shapes}")
}

fn pseudo_code(p: &Program) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "program {} ({}):", p.id, p.family);
    for (i, input) in p.inputs.iter().enumerate() {
        let _ = writeln!(
            s,
            "      v{i} = leaf {:?}{}",
            input.shape,
            if input.requires_grad {
                " requires_grad"
            } else {
                ""
            }
        );
    }
    for (k, step) in p.steps.iter().enumerate() {
        let _ = writeln!(s, "  #{k:<3} {}", describe(step));
    }
    match &p.error {
        Some((k, msg)) => {
            let _ = writeln!(s, "  PyTorch: error at #{k}: {msg}");
        }
        None => {
            let _ = writeln!(s, "  PyTorch: no error");
        }
    }
    if let Some(q) = &p.quirk {
        let _ = writeln!(s, "  (flagged PyTorch quirk: {q})");
    }
    s
}

/// Every recorded value of a program, for `CORPUS_ID`.
fn full_listing(p: &Program) -> String {
    let mut s = String::new();
    for (i, input) in p.inputs.iter().enumerate() {
        let _ = writeln!(s, "  v{i} = {}", show_recorded_full(input));
    }
    for (k, step) in p.steps.iter().enumerate() {
        let _ = writeln!(s, "  #{k:<3} {}", describe(step));
        if let Some(r) = step.get("r").and_then(Value::as_array) {
            let names: Vec<String> = if step["op"] == "check" {
                ids(&step["a"]).iter().map(|i| format!("v{i}")).collect()
            } else {
                (0..r.len()).map(|j| format!("output {j}")).collect()
            };
            for (n, v) in names.iter().zip(r) {
                let shown = if v.is_null() {
                    "None".to_string()
                } else {
                    show_recorded_full(&Recorded::parse(v))
                };
                let _ = writeln!(s, "        PyTorch {n} = {shown}");
            }
        }
        if let Some(cs) = step.get("c").and_then(Value::as_array) {
            for (i, c) in ids(&step["a"]).iter().zip(cs) {
                let _ = writeln!(s, "        constant for v{i}: {:?}", floats(c));
            }
        }
        if let Some(gr) = step.get("gr").and_then(Value::as_object) {
            for (id, v) in gr {
                let _ = writeln!(
                    s,
                    "        PyTorch v{id}.grad = {}",
                    show_recorded_full(&Recorded::parse(v))
                );
            }
        }
    }
    s
}

fn show_recorded_full(r: &Recorded) -> String {
    format!(
        "{:?}{} {:?}",
        r.shape,
        if r.requires_grad { " rg" } else { "" },
        r.data
    )
}

// ----- the test --------------------------------------------------------------------------------

fn replay(p: &Program, device: Device, trace: bool) -> (Result<(), Failure>, Vec<String>) {
    let mut r = Replay::new(p, device, trace);
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| r.run()));
    let lines = r.trace.take().unwrap_or_default();
    let result = match outcome {
        Ok(res) => res,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(non-string panic)".to_string());
            Err(fail(Category::Panic, usize::MAX, "-".into(), msg))
        }
    };
    (result, lines)
}

#[test]
fn views_inplace_corpus_matches_pytorch() {
    run_corpus("views + in-place corpus", VIEWS_CORPUS, 6000, &[]);
}

#[test]
fn ops_f32_corpus_matches_pytorch() {
    run_corpus("ops corpus, float32", OPS_F32_CORPUS, 2000, &[]);
}

#[test]
fn ops_corpus_matches_pytorch() {
    run_corpus("ops corpus", OPS_CORPUS, 6000, &[]);
}

/// Replays the corpus at `path` (at least `min_programs` programs) on every device and fails
/// with a report unless every program agrees with PyTorch, except those listed in
/// `known_failing` (a temporary allow-list: they are replayed, and reported, but not counted).
fn run_corpus(label: &str, path: &str, min_programs: usize, known_failing: &[usize]) {
    let programs = load_corpus(path);
    assert!(
        programs.len() >= min_programs,
        "{path} has {} programs",
        programs.len()
    );
    let sel = Selection::from_env();
    let selected = sel.pick(&programs, |p| p.id, |p| &p.family);
    if selected.is_empty() {
        // `CORPUS_ID` / `CORPUS_FAMILY` chose programs of the other corpus.
        println!("{label}: no program selected by CORPUS_ID / CORPUS_FAMILY");
        return;
    }
    let quiet = Quiet::new();

    // And the first GPU where there is one (the values are f64 on every device).
    let mut devices = vec![Device::Cpu, Device::Virtual(1)];
    if autograd::cuda::is_available() {
        devices.push(Device::Cuda(0));
    }
    let mut counts: BTreeMap<(Category, String), usize> = BTreeMap::new();
    let mut by_family: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut by_error_kind: BTreeMap<(Category, &'static str), usize> = BTreeMap::new();
    let mut report = String::new();
    let mut shown = 0;
    let mut failing_programs = 0;
    let mut failing_quirks = 0;
    let mut failing_ids = Vec::new();
    let (mut allowed_failing, mut listed_passing) = (0, Vec::new());
    for p in &selected {
        let mut failed_here = false;
        let mut details = String::new();
        if sel.use_allow_list && known_failing.contains(&p.id) {
            let fails = devices
                .iter()
                .any(|&device| replay(p, device, false).0.is_err());
            if fails {
                allowed_failing += 1;
            } else {
                listed_passing.push(p.id);
            }
            continue;
        }
        for &device in &devices {
            let (result, trace) = replay(p, device, sel.only_id.is_some());
            if sel.only_id.is_some() {
                let _ = writeln!(details, "  --- ours on {device}:");
                for l in &trace {
                    let _ = writeln!(details, "{l}");
                }
            }
            let entry = by_family.entry(p.family.clone()).or_default();
            entry.0 += 1;
            if let Err(f) = result {
                entry.1 += 1;
                failed_here = true;
                *counts.entry((f.category, device.to_string())).or_default() += 1;
                let kind = p.error.as_ref().map_or("no error", |(_, m)| error_kind(m));
                *by_error_kind.entry((f.category, kind)).or_default() += 1;
                let at = if f.step == usize::MAX {
                    "a panic".to_string()
                } else {
                    format!("#{}", f.step)
                };
                let _ = writeln!(
                    details,
                    "  on {device}: {} at {at}\n    PyTorch: {}\n    ours:    {}",
                    f.category.label(),
                    f.pytorch,
                    f.ours
                );
            }
        }
        if failed_here {
            failing_programs += 1;
            failing_ids.push(p.id);
            failing_quirks += usize::from(p.quirk.is_some());
        }
        if sel.only_id.is_some() {
            let _ = writeln!(report, "{}", pseudo_code(p));
            let _ = writeln!(report, "recorded values:\n{}", full_listing(p));
            let _ = writeln!(report, "{details}");
        } else if failed_here && shown < sel.show {
            shown += 1;
            let _ = writeln!(report, "{}{details}", pseudo_code(p));
        }
    }
    drop(quiet);

    let runs = selected.len() * devices.len();
    let failed_runs: usize = counts.values().sum();
    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "{label}: {} programs x {} devices; {} programs fail ({} of {} runs)",
        selected.len(),
        devices.len(),
        failing_programs,
        failed_runs,
        runs
    );
    if failing_quirks > 0 {
        let _ = writeln!(
            summary,
            "  {failing_quirks} failing programs carry a flagged PyTorch quirk (see their listing)"
        );
    }
    for cat in Category::ALL {
        let per_device: Vec<String> = devices
            .iter()
            .map(|d| {
                let n = counts.get(&(cat, d.to_string())).copied().unwrap_or(0);
                format!("{d}: {n}")
            })
            .collect();
        let _ = writeln!(summary, "  {:<32} {}", cat.label(), per_device.join(", "));
    }
    let _ = writeln!(
        summary,
        "  by family (failed runs / runs): {}",
        by_family
            .iter()
            .map(|(f, (n, bad))| format!("{f} {bad}/{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !by_error_kind.is_empty() {
        let _ = writeln!(
            summary,
            "  by PyTorch's outcome: {}",
            by_error_kind
                .iter()
                .map(|((c, k), n)| format!("{} [{k}] {n}", c.label()))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    if !known_failing.is_empty() {
        let _ = writeln!(
            summary,
            "  TEMPORARY allow-list: skipped {allowed_failing} known-failing programs of {} \
             listed; listed programs that now pass: {listed_passing:?}",
            known_failing.len()
        );
    }
    if failed_runs > 0 {
        let _ = writeln!(summary, "  failing program ids: {failing_ids:?}");
    }
    if sel.only_id.is_some() || failed_runs > 0 {
        println!("{report}");
    }
    println!("{summary}");
    assert_eq!(failed_runs, 0, "\n{summary}");
}
