//! Issue 23's engine contract, as PyTorch: one validation path for root gradients and node
//! outputs (`validate_outputs`), the gradient layout contract of `AccumulateGrad`, retained
//! gradients under `create_graph`, `requires_grad_` on non-leaves.

use autograd::*;

type R = Result<()>;

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

/// A single root on `virtual:0` given a CPU gradient is refused as several roots are (PyTorch:
/// "invalid gradient at index 0 - expected device virtual:0 but got cpu"); a 0-dim CPU
/// gradient is moved to the device instead.
#[test]
fn root_gradients_are_validated_as_node_outputs() -> R {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?
        .to(Device::Virtual(0))?
        .requires_grad_(true)?;
    let y = x.mul_scalar(3.0)?;
    let err = y
        .backward_with(BackwardOptions::new().gradient(Tensor::ones(&[2], DType::F64)?))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid gradient at index 0 - expected device virtual:0 but got cpu"
    );
    // Several roots: the same check, the same text (index 1 here).
    let z = x.mul_scalar(2.0)?;
    let err = backward(
        &[y.clone(), z.clone()],
        &[
            Some(Tensor::ones(&[2], DType::F64)?.to(Device::Virtual(0))?),
            Some(Tensor::ones(&[2], DType::F64)?),
        ],
        BackwardOptions::new(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid gradient at index 1 - expected device virtual:0 but got cpu"
    );
    assert!(x.grad().is_none());
    // A 0-dim CPU gradient for a device scalar is moved there.
    let s = x.sum()?;
    s.backward_with(BackwardOptions::new().gradient(Tensor::scalar(2.0f64)))?;
    let g = x.grad().unwrap();
    assert_eq!(g.device(), Device::Virtual(0));
    assert_eq!(g.to_vec::<f64>()?, vec![2.0, 2.0]);
    Ok(())
}

/// A root gradient of another floating dtype is cast to the root's (PyTorch's
/// `validate_outputs`); `grad()` likewise.
#[test]
fn root_gradient_of_another_dtype_is_cast() -> R {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul(&x)?;
    let g = grad(
        &[y],
        &[x.clone()],
        GradOptions::new().grad_outputs(vec![Some(Tensor::from_vec(vec![1.0f32, 0.5], &[2])?)]),
    )?;
    let g = g[0].clone().unwrap();
    assert_eq!(g.dtype(), DType::F64);
    assert_eq!(g.to_vec::<f64>()?, vec![2.0, 2.0]);
    Ok(())
}

/// A node's 0-dim CPU gradient for an input on a device is moved to that device.
#[test]
fn a_nodes_0_dim_cpu_gradient_moves_to_the_device() -> R {
    #[differentiable]
    fn to_host_sum(x: &Tensor) -> Result<Tensor> {
        x.to(Device::Cpu)
    }
    #[backward(to_host_sum)]
    fn to_host_sum_backward(grad: &Tensor) -> Result<Tensor> {
        // Deliberately left on the CPU: the engine moves a 0-dim gradient.
        grad.mul_scalar(3.0)
    }
    let x = Tensor::scalar(2.0f64)
        .to(Device::Virtual(0))?
        .requires_grad_(true)?;
    to_host_sum(&x)?.backward()?;
    let g = x.grad().unwrap();
    assert_eq!((g.device(), g.item::<f64>()?), (Device::Virtual(0), 3.0));
    Ok(())
}

/// The gradient layout contract: a transposed (dense) leaf gets a `.grad` with its strides; an
/// expanded (overlapping) leaf a contiguous one. PyTorch: `x = torch.ones(3, 2).t()` gives
/// `x.grad.stride() == (1, 2)`.
#[test]
fn accumulate_grad_obeys_the_layout_contract() -> R {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?
        .transpose(0, 1)?
        .detach()
        .requires_grad_(true)?;
    assert_eq!(x.strides(), &[1, 2]);
    let w = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    x.mul(&w)?.sum()?.backward()?;
    let g = x.grad().unwrap();
    assert_eq!(g.strides(), &[1, 2]);
    assert_eq!(g.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // Accumulating keeps the layout.
    x.mul(&w)?.sum()?.backward()?;
    let g = x.grad().unwrap();
    assert_eq!(g.strides(), &[1, 2]);
    assert_eq!(g.to_vec::<f64>()?, vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    // Under create_graph the first .grad is a recorded copy with the leaf's strides.
    x.set_grad(None)?;
    x.mul(&w)?
        .sum()?
        .backward_with(BackwardOptions::new().create_graph(true))?;
    let g = x.grad().unwrap();
    assert_eq!(g.strides(), &[1, 2]);
    // An expanded leaf (its elements overlap) gets a contiguous gradient.
    let e = Tensor::from_vec(vec![1.0f64, 2.0], &[2, 1])?
        .expand(&[2, 3])?
        .detach()
        .requires_grad_(true)?;
    e.mul(&w)?.sum()?.backward()?;
    let g = e.grad().unwrap();
    assert!(g.is_contiguous());
    assert_eq!(g.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    Ok(())
}

/// `retain_grad()` under `create_graph`: the retained gradient has history and can be
/// differentiated (PyTorch: `h.grad.requires_grad` after `backward(create_graph=True)`).
#[test]
fn retained_grad_under_create_graph_has_history() -> R {
    let x = leaf(&[2.0], &[1]);
    let h = x.mul(&x)?; // x²
    h.retain_grad()?;
    let y = h.mul(&h)?.sum()?; // x⁴, dy/dh = 2h = 2x²
    y.backward_with(BackwardOptions::new().create_graph(true))?;
    let hg = h.grad().unwrap();
    assert!(hg.requires_grad());
    assert_eq!(hg.to_vec::<f64>()?, vec![8.0]);
    // d(2x²)/dx = 4x = 8
    let d = grad(&[hg.sum()?], &[x.clone()], GradOptions::new())?;
    assert_eq!(d[0].as_ref().unwrap().to_vec::<f64>()?, vec![8.0]);
    Ok(())
}

/// `requires_grad_(true)` on a non-leaf is a no-op; only `false` is refused, with PyTorch's text.
#[test]
fn requires_grad_on_a_non_leaf() -> R {
    let x = leaf(&[1.0], &[1]);
    let y = x.exp()?;
    y.set_requires_grad(true)?;
    assert!(y.requires_grad() && !y.is_leaf());
    let y = y.requires_grad_(true)?;
    assert_eq!(
        y.set_requires_grad(false).unwrap_err().to_string(),
        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
    );
    Ok(())
}

/// `grad()` with no inputs: PyTorch 2.15's text (older releases said "grad requires non-empty
/// inputs.").
#[test]
fn grad_with_empty_inputs() -> R {
    let x = leaf(&[1.0], &[1]);
    let err = grad(&[x.exp()?.sum()?], &[], GradOptions::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`inputs` argument to `grad()` cannot be empty."
    );
    Ok(())
}

/// Ops that keep indices (`index_select`, `max_dim`) free them with the graph: a second
/// backward raises PyTorch's "Trying to backward through the graph a second time" as every
/// other node does, instead of accumulating again (`test_backward_twice_with_saved_values`).
#[test]
fn backward_twice_through_index_ops() -> R {
    let x = leaf(&[1.0, 5.0, 3.0], &[3]);
    type Op<'a> = Box<dyn Fn() -> Result<Tensor> + 'a>;
    let cases: [(&str, Op<'_>); 2] = [
        (
            "index_select",
            Box::new(|| x.index_select(0, &[2, 0, 2])?.sum()),
        ),
        ("max_dim", Box::new(|| x.max_dim(0, false).map(|(v, _)| v))),
    ];
    for (name, f) in cases {
        let y = f()?;
        y.backward()?;
        let err = y.backward().unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Trying to backward through the graph a second time"),
            "{name}: {err}"
        );
        // With retain_graph the second pass runs.
        x.set_grad(None)?;
        let y = f()?;
        y.backward_with(BackwardOptions::new().retain_graph(true))?;
        y.backward()?;
        let g = x.grad().unwrap().to_vec::<f64>()?;
        let expected = if name == "max_dim" {
            vec![0.0, 2.0, 0.0]
        } else {
            vec![2.0, 0.0, 4.0]
        };
        assert_eq!(g, expected, "{name}");
        x.set_grad(None)?;
    }
    Ok(())
}

/// `will_engine_execute_node` asked about a leaf's `AccumulateGrad` during `grad()` raises
/// PyTorch's error (`test_will_engine_execute_node`); during `backward()` it answers.
#[test]
fn will_engine_execute_node_on_a_leaf_during_grad() -> R {
    let a = leaf(&[1.0, 2.0], &[2]);
    let b = a.mul_scalar(2.0)?;
    let acc = b.grad_fn().unwrap().meta().next_edges()[0]
        .as_ref()
        .unwrap()
        .node
        .clone();
    assert_eq!(acc.name(), "AccumulateGrad");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let acc2 = acc.clone();
    b.register_hook(move |_| {
        s.lock()
            .unwrap()
            .push(will_engine_execute_node(&acc2).map_err(|e| e.to_string()));
        None
    })?;
    grad(
        &[b.sum()?],
        &[a.clone()],
        GradOptions::new().retain_graph(true),
    )?;
    b.sum()?.backward()?;
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[0],
        Err("A leaf node was passed to _will_engine_execute_node but we are currently running autograd.grad(). This is currently not supported.".to_string())
    );
    assert_eq!(seen[1], Ok(true));
    Ok(())
}
