//! The six functions' values, and the gradients through their results with `create_graph`,
//! against PyTorch's (rtol 1e-12), on every recorded case.

use autograd::functional::{JacobianOptions, Options, hessian, hvp, jacobian, jvp, vhp, vjp};
use autograd::{GradOptions, Result, Tensor, grad};

use crate::recorded::{
    CASES, assert_all_close, assert_close, case, scalar, tensor, tensors, vector,
};

fn inputs(name: &str) -> Vec<Tensor> {
    tensors(&case(name)["inputs"])
}

#[test]
fn vjp_matches_pytorch() {
    for name in CASES {
        let c = case(name);
        let v = tensors(&c["v_out"]);
        let (outputs, result) = vjp(vector(name), &inputs(name), Some(&v), Options::new()).unwrap();
        assert_all_close(
            &outputs,
            &tensors(&c["vjp"]["outputs"]),
            &format!("{name}: outputs"),
        );
        assert_all_close(
            &result,
            &tensors(&c["vjp"]["result"]),
            &format!("{name}: vjp"),
        );
    }
}

#[test]
fn jvp_matches_pytorch() {
    for name in CASES {
        let c = case(name);
        let v = tensors(&c["v_in"]);
        let (outputs, result) = jvp(vector(name), &inputs(name), Some(&v), Options::new()).unwrap();
        assert_all_close(
            &outputs,
            &tensors(&c["jvp"]["outputs"]),
            &format!("{name}: outputs"),
        );
        assert_all_close(
            &result,
            &tensors(&c["jvp"]["result"]),
            &format!("{name}: jvp"),
        );
    }
}

fn assert_nested(actual: &[Vec<Tensor>], expected: &serde_json::Value, what: &str) {
    let expected = expected.as_array().unwrap();
    assert_eq!(actual.len(), expected.len(), "{what}: rows");
    for (i, (row, e)) in actual.iter().zip(expected).enumerate() {
        assert_all_close(row, &tensors(e), &format!("{what}[{i}]"));
    }
}

#[test]
fn jacobian_matches_pytorch_row_by_row_and_vectorized() {
    for name in CASES {
        for vectorize in [false, true] {
            let jac = jacobian(
                vector(name),
                &inputs(name),
                JacobianOptions::new().vectorize(vectorize),
            )
            .unwrap();
            let what = format!("{name} (vectorize={vectorize}): jacobian");
            assert_nested(&jac, &case(name)["jacobian"], &what);
        }
    }
}

#[test]
fn hessian_matches_pytorch_row_by_row_and_vectorized() {
    for name in CASES {
        for vectorize in [false, true] {
            let h = hessian(
                scalar(name),
                &inputs(name),
                JacobianOptions::new().vectorize(vectorize),
            )
            .unwrap();
            let what = format!("{name} (vectorize={vectorize}): hessian");
            assert_nested(&h, &case(name)["hessian"], &what);
        }
    }
}

#[test]
fn hvp_and_vhp_match_pytorch() {
    for name in CASES {
        let c = case(name);
        let v = tensors(&c["v_in"]);
        let (out, result) = hvp(scalar(name), &inputs(name), Some(&v), Options::new()).unwrap();
        assert_close(
            &out,
            &tensor(&c["hvp"]["outputs"][0]),
            &format!("{name}: hvp output"),
        );
        assert_all_close(
            &result,
            &tensors(&c["hvp"]["result"]),
            &format!("{name}: hvp"),
        );
        let (out, result) = vhp(scalar(name), &inputs(name), Some(&v), Options::new()).unwrap();
        assert_close(
            &out,
            &tensor(&c["vhp"]["outputs"][0]),
            &format!("{name}: vhp output"),
        );
        assert_all_close(
            &result,
            &tensors(&c["vhp"]["result"]),
            &format!("{name}: vhp"),
        );
    }
}

/// The gradient of the sum of every result tensor w.r.t. `leaves` (zeros if unused), as the
/// recording script computes it.
fn grad_of_sum(results: &[Tensor], leaves: &[Tensor]) -> Vec<Tensor> {
    let mut total = Tensor::scalar(0.0f64);
    for r in results {
        total = total.add(&r.sum().unwrap()).unwrap();
    }
    if !total.requires_grad() {
        return leaves.iter().map(|l| l.zeros_like().unwrap()).collect();
    }
    grad(&[total], leaves, GradOptions::new().allow_unused(true))
        .unwrap()
        .into_iter()
        .zip(leaves)
        .map(|(g, l)| g.unwrap_or_else(|| l.zeros_like().unwrap()))
        .collect()
}

/// With `create_graph=True` on inputs that require grad, every result is differentiable with
/// respect to the caller's tensors (through the views the functions make of them): the
/// gradients of the results' sums are PyTorch's, for each function — third derivatives for
/// `hessian`, `hvp` and `vhp`.
#[test]
fn gradients_through_create_graph_results_match_pytorch() {
    let cg = Options::new().create_graph(true);
    let jcg = JacobianOptions::new().create_graph(true);
    for name in CASES {
        let c = case(name);
        let expected = &c["create_graph_grads"];
        let leaves: Vec<Tensor> = inputs(name)
            .into_iter()
            .map(|t| t.requires_grad_(true).unwrap())
            .collect();
        let (v_out, v_in) = (tensors(&c["v_out"]), tensors(&c["v_in"]));
        let flat =
            |nested: Vec<Vec<Tensor>>| -> Vec<Tensor> { nested.into_iter().flatten().collect() };
        let results: [(&str, Result<Vec<Tensor>>); 7] = [
            (
                "vjp",
                vjp(vector(name), &leaves, Some(&v_out), cg).map(|r| r.1),
            ),
            (
                "jvp",
                jvp(vector(name), &leaves, Some(&v_in), cg).map(|r| r.1),
            ),
            ("jacobian", jacobian(vector(name), &leaves, jcg).map(flat)),
            (
                "jacobian",
                jacobian(vector(name), &leaves, jcg.vectorize(true)).map(flat),
            ),
            ("hessian", hessian(scalar(name), &leaves, jcg).map(flat)),
            (
                "hvp",
                hvp(scalar(name), &leaves, Some(&v_in), cg).map(|r| r.1),
            ),
            (
                "vhp",
                vhp(scalar(name), &leaves, Some(&v_in), cg).map(|r| r.1),
            ),
        ];
        for (api, result) in results {
            let result = result.unwrap();
            assert_all_close(
                &grad_of_sum(&result, &leaves),
                &tensors(&expected[api]),
                &format!("{name}: gradient through {api}"),
            );
        }
        for leaf in &leaves {
            assert!(leaf.grad().is_none(), "{name}: .grad untouched");
        }
    }
}

/// On `cuda:0` (where there is one; elsewhere this prints `skipped` and passes): the cases
/// without constants of their own, through every function, against PyTorch's CPU values at
/// 1e-12 (relative above 1; the GPU's `exp` and `sin` are correctly rounded to well within).
#[test]
fn recorded_values_on_cuda() {
    use autograd::{Device, cuda};
    if !cuda::is_available() {
        println!(
            "skipped: no CUDA device ({})",
            cuda::unavailable_reason(0).unwrap_or_default()
        );
        return;
    }
    let gpu = |ts: Vec<Tensor>| -> Vec<Tensor> {
        ts.iter().map(|t| t.to(Device::Cuda(0)).unwrap()).collect()
    };
    let cpu = |ts: Vec<Tensor>| -> Vec<Tensor> {
        ts.iter()
            .map(|t| {
                assert_eq!(t.device(), Device::Cuda(0));
                t.to(Device::Cpu).unwrap()
            })
            .collect()
    };
    for name in ["exp", "two_in_two_out", "unused_input"] {
        let c = case(name);
        let x = gpu(inputs(name));
        let (v_out, v_in) = (gpu(tensors(&c["v_out"])), gpu(tensors(&c["v_in"])));
        let (_, r) = vjp(vector(name), &x, Some(&v_out), Options::new()).unwrap();
        assert_all_close(
            &cpu(r),
            &tensors(&c["vjp"]["result"]),
            &format!("{name}: vjp"),
        );
        let (_, r) = jvp(vector(name), &x, Some(&v_in), Options::new()).unwrap();
        assert_all_close(
            &cpu(r),
            &tensors(&c["jvp"]["result"]),
            &format!("{name}: jvp"),
        );
        for vectorize in [false, true] {
            let o = JacobianOptions::new().vectorize(vectorize);
            let jac: Vec<Vec<Tensor>> = jacobian(vector(name), &x, o)
                .unwrap()
                .into_iter()
                .map(cpu)
                .collect();
            assert_nested(&jac, &c["jacobian"], &format!("{name}: jacobian"));
            let h: Vec<Vec<Tensor>> = hessian(scalar(name), &x, o)
                .unwrap()
                .into_iter()
                .map(cpu)
                .collect();
            assert_nested(&h, &c["hessian"], &format!("{name}: hessian"));
        }
        let (_, r) = hvp(scalar(name), &x, Some(&v_in), Options::new()).unwrap();
        assert_all_close(
            &cpu(r),
            &tensors(&c["hvp"]["result"]),
            &format!("{name}: hvp"),
        );
        let (_, r) = vhp(scalar(name), &x, Some(&v_in), Options::new()).unwrap();
        assert_all_close(
            &cpu(r),
            &tensors(&c["vhp"]["result"]),
            &format!("{name}: vhp"),
        );
    }
}
