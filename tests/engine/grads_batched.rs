//! `grad(.., is_grads_batched = true)`: the first dimension of each gradient is a batch, one
//! vector-Jacobian product per row, stacked along dimension 0. Values and texts from torch 2.15
//! (`torch.autograd.grad(.., is_grads_batched=True)`).

use autograd::*;

type R = Result<()>;

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf(v: &[f64]) -> Tensor {
    t(v, &[v.len()]).requires_grad_(true).unwrap()
}

fn eye(n: usize) -> Tensor {
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    t(&v, &[n, n])
}

fn batched(grads: Vec<Option<Tensor>>) -> GradOptions {
    GradOptions::new()
        .grad_outputs(grads)
        .is_grads_batched(true)
}

fn err_text(r: Result<Vec<Option<Tensor>>>) -> String {
    r.unwrap_err().to_string()
}

/// The Jacobian of x ↦ x² at [1, 2, 3] from the rows of the identity.
#[test]
fn jacobian_from_the_identity() -> R {
    let x = leaf(&[1.0, 2.0, 3.0]);
    let jac = grad(&[x.mul(&x)?], &[x], batched(vec![Some(eye(3))]))?;
    let jac = jac[0].as_ref().unwrap();
    assert_eq!(jac.shape(), &[3, 3]);
    assert_eq!(
        jac.to_vec::<f64>()?,
        vec![2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 6.0]
    );
    Ok(())
}

/// A matrix output: d(A·A)/dA against the four basis matrices (torch 2.15's values).
#[test]
fn jacobian_of_a_matrix_product() -> R {
    let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).requires_grad_(true)?;
    let out = a.matmul(&a)?;
    let go = eye(4).reshape(&[4, 2, 2])?;
    let g = grad(&[out], &[a], batched(vec![Some(go)]))?;
    let g = g[0].as_ref().unwrap();
    assert_eq!(g.shape(), &[4, 2, 2]);
    assert_eq!(
        g.to_vec::<f64>()?,
        vec![
            2., 3., 2., 0., 2., 5., 0., 2., 3., 0., 5., 3., 0., 3., 2., 8.
        ]
    );
    Ok(())
}

/// Several outputs, several inputs, unused inputs.
#[test]
fn several_outputs_and_unused_inputs() -> R {
    let x = leaf(&[1.0, 2.0, 3.0]);
    let y = x.mul(&x)?;
    let z = x.mul_scalar(3.0)?;
    let ones = || Some(Tensor::ones(&[2, 3], DType::F64).unwrap());
    let g = grad(
        &[y.clone(), z],
        &[x.clone()],
        batched(vec![ones(), ones()]).retain_graph(true),
    )?;
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f64>()?,
        vec![5., 7., 9., 5., 7., 9.]
    );

    let u = leaf(&[1.0, 1.0]);
    let inputs = [x.clone(), u.clone()];
    let go = || batched(vec![Some(eye(3))]).retain_graph(true);
    let g = grad(&[y.clone()], &inputs, go().allow_unused(true))?;
    assert_eq!(g[0].as_ref().unwrap().shape(), &[3, 3]);
    assert!(g[1].is_none());
    // materialize_grads: zeros of the input's shape, without a batch dimension (as torch 2.15).
    let g = grad(&[y.clone()], &inputs, go().materialize_grads(true))?;
    let zeros = g[1].as_ref().unwrap();
    assert_eq!(
        (zeros.shape(), zeros.to_vec::<f64>()?),
        (&[2][..], vec![0.0, 0.0])
    );
    assert_eq!(
        err_text(grad(&[y], &inputs, go())),
        "The differentiated Tensor at index 1 appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
    );
    Ok(())
}

/// `create_graph`: the batched result is differentiable again.
#[test]
fn batched_with_create_graph() -> R {
    let x = leaf(&[1.0, 2.0]);
    let y = x.pow(3.0)?;
    let j = grad(
        &[y],
        &[x.clone()],
        batched(vec![Some(eye(2))]).create_graph(true),
    )?;
    let j = j[0].clone().unwrap();
    assert_eq!(j.to_vec::<f64>()?, vec![3.0, 0.0, 0.0, 12.0]);
    assert!(j.requires_grad());
    let h = grad(&[j.sum()?], &[x], GradOptions::new())?;
    assert_eq!(h[0].as_ref().unwrap().to_vec::<f64>()?, vec![6.0, 12.0]);
    Ok(())
}

/// Without `retain_graph` the graph is freed after the batch, as after one pass.
#[test]
fn the_graph_is_freed_after_the_batch() -> R {
    let x = leaf(&[1.0, 2.0]);
    let y = x.exp()?;
    let g = grad(&[y.clone()], &[x.clone()], batched(vec![Some(eye(2))]))?;
    let e = [1f64.exp(), 2f64.exp()];
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f64>()?,
        vec![e[0], 0.0, 0.0, e[1]]
    );
    let err = err_text(grad(&[y], &[x], batched(vec![Some(eye(2))])));
    assert!(
        err.starts_with("Trying to backward through the graph a second time"),
        "{err}"
    );
    Ok(())
}

#[test]
fn mismatched_batched_shapes_are_refused_with_pytorchs_texts() -> R {
    let x = leaf(&[1.0, 2.0, 3.0]);
    let y = x.mul(&x)?;
    let msg = |g: &str| {
        format!(
            "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding output, but a mismatch was detected: grad_output[0] has a shape of {g} and output[0] has a shape of [3]. If you only want some tensors in `grad_output` to be considered batched, consider using vmap."
        )
    };
    let go = |g: Tensor| batched(vec![Some(g)]).retain_graph(true);
    let one = || Tensor::ones(&[2, 4], DType::F64).unwrap();
    // torch 2.15 prints the gradient's shape without its first two dimensions.
    assert_eq!(
        err_text(grad(&[y.clone()], &[x.clone()], go(one()))),
        msg("[]")
    );
    let three = Tensor::ones(&[3], DType::F64)?;
    assert_eq!(
        err_text(grad(&[y.clone()], &[x.clone()], go(three))),
        msg("[]")
    );
    let deep = Tensor::ones(&[2, 5, 7], DType::F64)?;
    assert_eq!(
        err_text(grad(&[y.clone()], &[x.clone()], go(deep))),
        msg("[7]")
    );
    // A 0-dim gradient has no batch dimension.
    let err = err_text(grad(&[y.clone()], &[x.clone()], go(Tensor::scalar(1.0f64))));
    assert!(err.starts_with("invalid index of a 0-dim tensor."), "{err}");
    // An empty batch.
    let empty = Tensor::zeros(&[0, 3], DType::F64)?;
    assert_eq!(
        err_text(grad(&[y.clone()], &[x.clone()], go(empty))),
        "index 0 is out of bounds for dimension 0 with size 0"
    );
    // Batches of different sizes.
    let z = x.mul_scalar(3.0)?;
    let err = err_text(grad(
        &[y.clone(), z],
        &[x.clone()],
        batched(vec![
            Some(Tensor::ones(&[2, 3], DType::F64)?),
            Some(Tensor::ones(&[4, 3], DType::F64)?),
        ])
        .retain_graph(true),
    ));
    assert_eq!(
        err,
        "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [2, 4] for the mapped dimension"
    );
    // An implicit gradient has no batch dimension to map over.
    let err = err_text(grad(&[x.sum()?], &[x.clone()], batched(vec![])));
    assert!(
        err.starts_with("vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0"),
        "{err}"
    );
    // Edges as roots are refused.
    let edge = autograd::graph::get_gradient_edge(&y)?;
    let err = grad_edges(&[edge.into()], &[(&x).into()], batched(vec![Some(eye(3))])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Batched grads are not supported with GradientEdge"
    );
    Ok(())
}

/// An edge as input of a batched `grad_edges` works as a tensor input does.
#[test]
fn batched_to_an_edge() -> R {
    let x = leaf(&[1.0, 2.0]).copy()?;
    let edge = autograd::graph::get_gradient_edge(&x)?;
    let y = x.mul(&x)?;
    let g = grad_edges(&[y.into()], &[edge.into()], batched(vec![Some(eye(2))]))?;
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f64>()?,
        vec![2.0, 0.0, 0.0, 4.0]
    );
    Ok(())
}
