//! The recorded data and the functions of its cases.

use std::sync::OnceLock;

use autograd::{Result, Tensor};
use serde_json::Value;

pub(crate) fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("data/functional.json")).expect("functional.json parses")
    })
}

/// A recorded f64 tensor.
pub(crate) fn tensor(v: &Value) -> Tensor {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .expect("a shape")
        .iter()
        .map(|d| d.as_u64().expect("a size") as usize)
        .collect();
    let values: Vec<f64> = v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect();
    Tensor::from_vec(values, &shape).unwrap()
}

pub(crate) fn tensors(v: &Value) -> Vec<Tensor> {
    v.as_array().expect("a list").iter().map(tensor).collect()
}

/// The names of the recorded cases.
pub(crate) const CASES: [&str; 4] = ["exp", "mlp", "two_in_two_out", "unused_input"];

pub(crate) fn case(name: &str) -> &'static Value {
    let c = &data()["cases"][name];
    assert!(c.is_object(), "no recorded case {name}");
    c
}

pub(crate) type Function = fn(&[Tensor]) -> Result<Vec<Tensor>>;
pub(crate) type ScalarFunction = fn(&[Tensor]) -> Result<Tensor>;

/// The MLP's data (not an input).
fn mlp_x() -> &'static Tensor {
    static X: OnceLock<Tensor> = OnceLock::new();
    X.get_or_init(|| tensor(&data()["mlp_x"]))
}

fn mlp(i: &[Tensor]) -> Result<Tensor> {
    mlp_x().matmul(&i[0])?.add(&i[1])?.tanh()?.matmul(&i[2])
}

/// The case's `vector` function (any outputs: for vjp, jvp, jacobian).
pub(crate) fn vector(name: &str) -> Function {
    match name {
        "exp" => |i| Ok(vec![i[0].exp()?]),
        "mlp" => |i| Ok(vec![mlp(i)?]),
        "two_in_two_out" => |i| Ok(vec![i[0].mul(&i[1].sin()?)?, i[0].exp()?.matmul(&i[1])?]),
        "unused_input" => |i| Ok(vec![i[0].pow(3.0)?]),
        _ => panic!("no case {name}"),
    }
}

/// The case's `scalar` function (one element: for hessian, hvp, vhp).
pub(crate) fn scalar(name: &str) -> ScalarFunction {
    match name {
        "exp" => |i| i[0].exp()?.sum(),
        "mlp" => |i| mlp(i)?.pow(2.0)?.mean(),
        "two_in_two_out" => |i| {
            i[0].mul(&i[1].sin()?)?
                .sum()?
                .mul(&i[0].exp()?.matmul(&i[1])?.sum()?)
        },
        "unused_input" => |i| i[0].pow(3.0)?.sum(),
        _ => panic!("no case {name}"),
    }
}

/// Asserts `actual` equals the recorded tensor to 1e-12 (relative above 1).
#[track_caller]
pub(crate) fn assert_close(actual: &Tensor, expected: &Tensor, what: &str) {
    assert_eq!(actual.shape(), expected.shape(), "{what}: shape");
    let a = actual.to_vec::<f64>().unwrap();
    let e = expected.to_vec::<f64>().unwrap();
    for (k, (a, e)) in a.iter().zip(&e).enumerate() {
        assert!(
            (a - e).abs() <= 1e-12 * e.abs().max(1.0),
            "{what}: element {k}: {a} against PyTorch's {e}"
        );
    }
}

#[track_caller]
pub(crate) fn assert_all_close(actual: &[Tensor], expected: &[Tensor], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: count");
    for (k, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_close(a, e, &format!("{what}[{k}]"));
    }
}
