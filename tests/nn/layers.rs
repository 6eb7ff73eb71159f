//! `nn`'s layers, activations, losses and initialisers against the numbers PyTorch recorded
//! (`benches/record_nn.py` wrote `data/layers.json`: f64 inputs, forward values and the
//! gradients of `(out * upstream).sum()`), replayed at rtol 1e-10; parameter names and state-dict
//! keys, Dropout's modes, PyTorch's error messages, and gradcheck + gradgradcheck of the losses,
//! `LayerNorm`, GELU and the `erf` op.

mod grads;
mod initialisers;
mod losses;
mod modules;
mod pytorch_streams;

use std::sync::OnceLock;

use autograd::nn::functional::{
    self as F, BceWithLogitsOptions, CrossEntropyOptions, NllLossOptions, Reduction,
};
use autograd::nn::init::{self, FanMode, Nonlinearity};
use autograd::nn::{
    Dropout, Embedding, Forward, Gelu, GeluApproximate, Identity, LayerNorm, LeakyRelu, Linear,
    LogSoftmax, Module, Relu, Sequential, Sigmoid, Softmax, Tanh,
};
use autograd::{DType, Result, StateDict, Tensor, gradcheck, gradgradcheck};
use serde_json::Value;

// ----- the recorded data ------------------------------------------------------------------------

fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("data/layers.json")).expect("layers.json parses")
    })
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_u64().expect("an integer") as usize)
        .collect()
}

fn case(name: &str) -> &'static Value {
    &data()["cases"][name]
}

/// A recorded input as an f64 leaf that requires grad.
fn input(name: &str) -> Tensor {
    let v = &data()["inputs"][name];
    Tensor::from_vec(floats(&v["values"]), &usizes(&v["shape"]))
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn f64_tensor(values: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(values, shape).unwrap()
}

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-10 * w.abs() + 1e-13,
            "{what}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

/// Runs `(out * upstream).sum().backward()` and compares `out` with the case's forward value.
fn check_forward_and_backward(name: &str, out: &Tensor) -> Result<()> {
    let c = case(name);
    assert_eq!(out.shape(), usizes(&c["shape"]).as_slice(), "{name}: shape");
    assert_close(name, &out.to_vec::<f64>()?, &floats(&c["out"]));
    let upstream = f64_tensor(floats(&c["upstream"]), out.shape());
    out.mul(&upstream)?.sum()?.backward()
}

fn check_grad(name: &str, which: &str, t: &Tensor) -> Result<()> {
    let grad = t.grad().expect("a gradient");
    assert_close(
        &format!("{name}: grad of {which}"),
        &grad.to_vec::<f64>()?,
        &floats(&case(name)[&format!("grad_{which}")]),
    );
    Ok(())
}

fn error_text(name: &str) -> &'static str {
    data()["errors"][name].as_str().expect("a message")
}

fn names(m: &dyn Module) -> Vec<String> {
    m.named_parameters().into_iter().map(|(n, _)| n).collect()
}

fn class_weight() -> Tensor {
    f64_tensor(floats(&data()["inputs"]["class_weight"]), &[4])
}

fn targets() -> Vec<usize> {
    usizes(&data()["inputs"]["targets"])
}
