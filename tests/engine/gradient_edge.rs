//! Gradients with respect to gradient edges, and edges as roots (B39): PyTorch's
//! `test_grad_to_node`, `test_grad_to_node_inplace`, `test_grad_to_node_multi`,
//! `test_grad_to_node_materialize`, `test_backward_to_node`, `test_gradient_edge_output` and
//! `test_gradient_edge_graph_ownership`, with torch 2.15's values and texts.

use autograd::graph::get_gradient_edge;
use autograd::*;

type R = Result<()>;

fn leaf(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()])
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn values(g: &Option<Tensor>) -> Vec<f64> {
    g.as_ref().expect("a gradient").to_vec::<f64>().unwrap()
}

fn edge_of(t: &Tensor) -> Edge {
    Edge::new(t.grad_fn().unwrap(), t.output_nr())
}

#[differentiable]
fn custom_identity(x: &Tensor) -> Result<Tensor> {
    x.copy()
}

#[backward(custom_identity)]
fn custom_identity_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

/// The gradient w.r.t. `inp`'s edge is the gradient w.r.t. `inp`, for the node kinds PyTorch's
/// test covers: a leaf's `AccumulateGrad`, a built-in node, a custom function's node, and one
/// output of a multi-output node.
#[test]
fn grad_to_node_matches_grad_to_tensor() -> R {
    let check = |out: &Tensor, inp: &Tensor| -> R {
        let loss = out.mul(out)?.sum()?;
        let want = grad(
            &[loss.clone()],
            &[inp.clone()],
            GradOptions::new().retain_graph(true),
        )?;
        let edge = get_gradient_edge(inp)?;
        let got = grad_edges(&[loss.into()], &[edge.into()], GradOptions::new())?;
        assert_eq!(values(&got[0]), values(&want[0]));
        Ok(())
    };
    let x = leaf(&[0.25, 0.5]);
    assert_eq!(get_gradient_edge(&x)?.node.name(), "AccumulateGrad");
    check(&x.copy()?, &x)?;
    let x = x.copy()?;
    assert_eq!(get_gradient_edge(&x)?.node.name(), "CloneBackward0");
    check(&x.copy()?, &x)?;
    let x = custom_identity(&x)?;
    assert_eq!(
        get_gradient_edge(&x)?.node.name(),
        "CustomIdentityBackward0"
    );
    check(&x.copy()?, &x)?;
    let parts = leaf(&[1.0, 2.0, 3.0]).mul_scalar(1.0)?.split(&[1, 2], 0)?;
    let second = &parts[1];
    let edge = get_gradient_edge(second)?;
    assert_eq!(
        (edge.node.name(), edge.input_nr),
        ("SplitWithSizesBackward0", 1)
    );
    check(&second.copy()?, second)?;
    Ok(())
}

#[test]
fn get_gradient_edge_of_a_tensor_without_grad_fails() {
    let err = get_gradient_edge(&Tensor::scalar(1.0f64)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "It is not possible to get the gradient edge for a Tensor that does not require gradients"
    );
    assert!(matches!(err, Error::NoGradientEdge));
}

/// `test_grad_to_node_inplace`: the old edge gets 2, the tensor's new history 1.
#[test]
fn grad_to_node_inplace() -> R {
    let x = leaf(&[0.1, 0.9]).copy()?;
    let x_edge = get_gradient_edge(&x)?;
    x.mul_(&Tensor::scalar(2.0f64))?;
    let g = grad_edges(
        &[x.sum()?.into()],
        &[x_edge.into(), (&x).into()],
        GradOptions::new(),
    )?;
    assert_eq!(values(&g[0]), vec![2.0, 2.0]);
    assert_eq!(values(&g[1]), vec![1.0, 1.0]);
    Ok(())
}

/// `test_grad_to_node_multi`: edges made from `grad_fn` and `output_nr` by hand.
#[test]
fn grad_to_node_multi() -> R {
    let x = leaf(&[0.3, 0.4]).copy()?;
    let y = leaf(&[0.5, 0.6]).copy()?;
    let out = x.add(&y)?.mul(&x)?; // (x + y)·x: d/dx = 2x + y, d/dy = x
    let want = grad(
        &[out.sum()?],
        &[x.clone(), y.clone()],
        GradOptions::new().retain_graph(true),
    )?;
    let got = grad_edges(
        &[out.sum()?.into()],
        &[edge_of(&x).into(), edge_of(&y).into()],
        GradOptions::new(),
    )?;
    assert_eq!(values(&got[0]), values(&want[0]));
    assert_eq!(values(&got[1]), values(&want[1]));
    let expect = [2.0 * 0.3 + 0.5, 2.0 * 0.4 + 0.6];
    for (g, e) in values(&got[0]).iter().zip(expect) {
        assert!((g - e).abs() < 1e-15);
    }
    assert_eq!(values(&got[1]), vec![0.3, 0.4]);
    Ok(())
}

/// `test_grad_to_node_materialize`: zeros can be made for an unused tensor, not for an unused
/// edge.
#[test]
fn grad_to_node_materialize() -> R {
    let x = leaf(&[0.3, 0.4]).copy()?;
    let y = leaf(&[0.5, 0.6]).copy()?;
    let out = x.copy()?;
    let opts = || GradOptions::new().retain_graph(true).allow_unused(true);
    let g = grad_edges(
        &[out.sum()?.into()],
        &[edge_of(&x).into(), (&y).into()],
        opts().materialize_grads(true),
    )?;
    assert_eq!((values(&g[0]), values(&g[1])), (vec![1.0; 2], vec![0.0; 2]));
    let g = grad_edges(
        &[out.sum()?.into()],
        &[(&x).into(), edge_of(&y).into()],
        opts(),
    )?;
    assert!(g[1].is_none());
    let err = grad_edges(
        &[out.sum()?.into()],
        &[(&x).into(), edge_of(&y).into()],
        opts().materialize_grads(true),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "materialize_grads cannot be used when the given input is a GradientEdge"
    );
    // Without allow_unused, an unused edge is an unused input.
    let err = grad_edges(
        &[out.sum()?.into()],
        &[(&x).into(), edge_of(&y).into()],
        GradOptions::new(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "The differentiated Tensor at index 1 appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
    );
    Ok(())
}

/// `test_backward_to_node`: edges as `backward`'s inputs, alone or with tensors.
#[test]
fn backward_to_node() -> R {
    let x_leaf = leaf(&[0.3, 0.4]);
    let x = x_leaf.copy()?;
    let y = leaf(&[0.5, 0.6]).copy()?;
    let out = x.mul_scalar(3.0)?;
    let sum = || out.sum();
    let retain = || BackwardOptions::new().retain_graph(true);
    backward_edges(
        &[sum()?.into()],
        &[],
        retain(),
        &[edge_of(&x).into(), (&y).into()],
    )?;
    // An edge accumulates nothing: x is not a leaf and does not retain its gradient, and its
    // leaf is below the edge.
    assert!(x_leaf.grad().is_none());
    backward_edges(&[sum()?.into()], &[], retain(), &[(&x).into(), (&y).into()])?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![3.0, 3.0]);
    assert!(y.grad().is_none());
    backward_edges(
        &[sum()?.into()],
        &[],
        retain(),
        &[(&x).into(), edge_of(&y).into()],
    )?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![6.0, 6.0]);
    // x retains its gradient now: its node running adds to it, also when it runs for an edge
    // (torch 2.15 prints 9 here, then 12).
    backward_edges(
        &[sum()?.into()],
        &[],
        retain(),
        &[edge_of(&x).into(), edge_of(&y).into()],
    )?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![9.0, 9.0]);
    // The tensor input given through the options, with an edge beside it.
    backward_edges(
        &[sum()?.into()],
        &[],
        retain().inputs(std::slice::from_ref(&x)),
        &[edge_of(&y).into()],
    )?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![12.0, 12.0]);
    assert!(x_leaf.grad().is_none());
    // A leaf's edge as input: its AccumulateGrad runs.
    backward_edges(
        &[sum()?.into()],
        &[],
        retain(),
        &[get_gradient_edge(&x_leaf)?.into()],
    )?;
    assert_eq!(x_leaf.grad().unwrap().to_vec::<f64>()?, vec![3.0, 3.0]);
    Ok(())
}

/// `fn` of `test_gradient_edge_output`: `out` and the edge of `tmp`.
fn tmp_and_out(x: &Tensor, reduce: bool) -> Result<(Tensor, Edge)> {
    let mut tmp = x.sin()?.cos()?;
    if reduce {
        tmp = tmp.sum()?;
    }
    let out = tmp.exp()?.copy()?.sin()?.sum()?;
    let edge = get_gradient_edge(&tmp)?;
    Ok((out, edge))
}

#[test]
fn gradient_edge_output() -> R {
    let x = leaf(&[1.0, 2.0]);
    // In two steps, through the edge of `tmp`.
    let (out, tmp_edge) = tmp_and_out(&x, true)?;
    let tmp_grad = grad_edges(
        &[out.into()],
        &[tmp_edge.clone().into()],
        GradOptions::new(),
    )?;
    let tmp_grad = tmp_grad[0].clone().unwrap();
    assert!((tmp_grad.item::<f64>()? - -3.2290).abs() < 1e-4); // torch: tensor(-3.2290)
    let x_grad = grad_edges(
        &[tmp_edge.into()],
        &[(&x).into()],
        GradOptions::new().grad_outputs(vec![Some(tmp_grad)]),
    )?;
    // In one go.
    let (out, _) = tmp_and_out(&x, true)?;
    let x_grad_ref = grad(&[out], &[x.clone()], GradOptions::new())?;
    let (a, b) = (values(&x_grad[0]), values(&x_grad_ref[0]));
    // torch 2.15: [1.3008416891098022, -1.0603055953979492] (f32)
    for ((a, b), t) in a
        .iter()
        .zip(&b)
        .zip([1.3008416891098022, -1.0603055953979492])
    {
        assert!((a - b).abs() < 1e-12 && (a - t).abs() < 1e-6, "{a} {b} {t}");
    }

    // No gradient for a root edge whose input is not one element.
    let (_out, tmp_edge) = tmp_and_out(&x, false)?;
    let err = grad_edges(&[tmp_edge.into()], &[(&x).into()], GradOptions::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "grad can be implicitly created only for scalar outputs"
    );
    // One element: ones.
    let (_out, tmp_edge) = tmp_and_out(&x, true)?;
    let g = grad_edges(&[tmp_edge.into()], &[(&x).into()], GradOptions::new())?;
    let want: Vec<f64> = [1.0f64, 2.0]
        .iter()
        .map(|x| -x.sin().sin() * x.cos())
        .collect();
    for (g, w) in values(&g[0]).iter().zip(&want) {
        assert!((g - w).abs() < 1e-12);
    }
    // A gradient of the wrong shape.
    let (_out, tmp_edge) = tmp_and_out(&x, true)?;
    let err = grad_edges(
        &[tmp_edge.into()],
        &[(&x).into()],
        GradOptions::new().grad_outputs(vec![Some(leaf(&[1.0, 2.0, 3.0, 4.0]))]),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Mismatch in shape: grad_output[0] has a shape of [4] and output[0] has a shape of []."
    );

    // backward() from the edge accumulates what grad() returns.
    let (_out, tmp_edge) = tmp_and_out(&x, true)?;
    let retain = || BackwardOptions::new().retain_graph(true);
    backward_edges(&[tmp_edge.clone().into()], &[], retain(), &[])?;
    let ref_g = grad_edges(
        &[tmp_edge.clone().into()],
        &[(&x).into()],
        GradOptions::new().retain_graph(true),
    )?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, values(&ref_g[0]));
    x.set_grad(None)?;
    // Edges and tensors mixed as roots.
    let (_out1, tmp_edge1) = tmp_and_out(&x, true)?;
    let (out2, _) = tmp_and_out(&x, true)?;
    let roots: [GradTarget; 2] = [tmp_edge1.into(), out2.into()];
    let ref_g = grad_edges(
        &roots,
        &[(&x).into()],
        GradOptions::new().retain_graph(true),
    )?;
    backward_edges(&roots, &[], retain(), &[])?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, values(&ref_g[0]));
    // backward(): a gradient of the wrong shape.
    let err = backward_edges(
        &[tmp_edge.into()],
        &[Some(leaf(&[1.0, 2.0, 3.0, 4.0]))],
        BackwardOptions::new().inputs(std::slice::from_ref(&x)),
        &[],
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("Mismatch in shape"), "{err}");
    Ok(())
}

/// `test_gradient_edge_graph_ownership`: the edge keeps its node alive.
#[test]
fn gradient_edge_owns_its_graph() -> R {
    let inp = leaf(&[0.5]);
    let base = inp.copy()?;
    for out in [base.copy()?, custom_identity(&base)?] {
        let edge = get_gradient_edge(&out)?;
        backward_edges(&[edge.clone().into()], &[], BackwardOptions::new(), &[])?;
        drop(out);
        backward_edges(&[edge.into()], &[], BackwardOptions::new(), &[])?;
    }
    assert_eq!(inp.grad().unwrap().to_vec::<f64>()?, vec![4.0]);
    Ok(())
}

/// An edge naming an input its node does not have is an error, not a panic.
#[test]
fn an_edge_with_an_input_number_out_of_range_is_an_error() -> R {
    let x = leaf(&[1.0]).copy()?;
    let bad = Edge::new(x.grad_fn().unwrap(), 3);
    let err = grad_edges(
        &[x.sum()?.into()],
        &[bad.clone().into()],
        GradOptions::new(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "GradientEdge input_nr 3 is out of range for CloneBackward0, which has 1 inputs"
    );
    assert!(grad_edges(&[bad.into()], &[(&x).into()], GradOptions::new()).is_err());
    Ok(())
}
