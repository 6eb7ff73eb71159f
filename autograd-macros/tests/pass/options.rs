// Every option of `#[differentiable(..)]`: `name`, `once_differentiable`, `materialize_grads`,
// `non_differentiable`, `dirty` and `crate`.
use autograd::{backward, differentiable, Error, Result, Tensor};

#[differentiable(name = "MyCubeBackward", crate = "::autograd")]
fn cube(x: &Tensor) -> Tensor {
    x * x * x
}

#[backward(cube)]
fn cube_backward(grad: &Tensor, x: &Tensor) -> Tensor {
    grad * x * x * 3.0
}

#[differentiable(once_differentiable)]
fn square_once(x: &Tensor) -> Tensor {
    x * x
}

#[backward(square_once)]
fn square_once_backward(grad: &Tensor, x: &Tensor) -> Tensor {
    grad * x * 2.0
}

#[differentiable(non_differentiable(result_1))]
fn value_and_mask(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x * 2.0, x.relu()?.div(&x.abs()?)?))
}

#[backward(value_and_mask)]
fn value_and_mask_backward(grad_0: &Tensor, grad_1: &Tensor, result_1: &Tensor) -> Tensor {
    assert_eq!(grad_1.to_vec::<f64>().expect("f64"), [0.0, 0.0]); // materialised zeros
    let _ = result_1;
    grad_0 * 2.0
}

#[differentiable(dirty(x))]
fn double_in_place(x: &Tensor) -> Result<Tensor> {
    x.mul_(&Tensor::scalar(2.0f64))?;
    Ok(x.clone())
}

#[backward(double_in_place)]
fn double_in_place_backward(grad: &Tensor) -> Tensor {
    grad * 2.0
}

fn main() -> Result<()> {
    let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let y = cube(&x);
    assert_eq!(y.grad_fn().expect("recorded").name(), "MyCubeBackward");

    // once_differentiable: the backward's results do not require grad; when its incoming
    // gradient does (create_graph through z = y * y), they come out of an `Error` node instead.
    let create_graph = autograd::GradOptions::new().create_graph(true);
    let g = autograd::grad(&[square_once(&x)], &[x.clone()], create_graph.clone())?;
    let g = g[0].clone().expect("gradient");
    assert_eq!(g.item::<f64>()?, 4.0);
    assert!(!g.requires_grad());
    let y = square_once(&x);
    let g = autograd::grad(&[y.mul(&y)?], &[x.clone()], create_graph)?;
    let g = g[0].clone().expect("gradient");
    assert_eq!(g.item::<f64>()?, 32.0); // 2y · 2x
    assert_eq!(g.grad_fn().expect("wrapped").name(), "Error");
    assert!(matches!(g.backward(), Err(Error::OnceDifferentiable)));

    // non_differentiable: the mask never requires grad; its slot is zeros in the backward.
    let v = Tensor::from_vec(vec![-1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let (value, mask) = value_and_mask(&v)?;
    assert!(value.requires_grad() && !mask.requires_grad());
    value.sum()?.backward()?;
    assert_eq!(v.grad().expect("v.grad").to_vec::<f64>()?, [2.0, 2.0]);

    // dirty: the input itself is returned, with a bumped version and the new grad_fn.
    let leaf = Tensor::scalar(3.0f64).requires_grad_(true)?;
    let h = leaf.mul_scalar(1.0)?;
    let before = h.version();
    let out = double_in_place(&h)?;
    assert!(out.is_same(&h) && h.version() > before);
    assert_eq!(
        h.grad_fn().expect("rebased").name(),
        "DoubleInPlaceBackward0"
    );
    out.backward()?;
    assert_eq!(leaf.grad().expect("leaf.grad").item::<f64>()?, 2.0);
    Ok(())
}
