// Two inputs, two outputs: `grad_0`/`grad_1`, saved outputs `result_0`/`result_1`, a tuple of
// gradients mixing `Tensor` and `Option<Tensor>`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn sum_and_product(a: &Tensor, b: &Tensor) -> (Tensor, Tensor) {
    (a + b, a * b)
}

#[backward(sum_and_product)]
fn sum_and_product_backward(
    grad_0: &Tensor,
    grad_1: &Tensor,
    b: &Tensor,
    a: &Tensor,
) -> (Tensor, Option<Tensor>) {
    (grad_0 + grad_1 * b, Some(grad_0 + grad_1 * a))
}

#[differentiable]
fn exp_twice(x: &Tensor) -> (Tensor, Tensor) {
    let e = x.exp().expect("exp");
    (e.clone(), e)
}

#[backward(exp_twice)]
fn exp_twice_backward(
    grad_0: &Tensor,
    grad_1: &Tensor,
    result_0: &Tensor,
    result_1: &Tensor,
) -> Tensor {
    grad_0 * result_0 + grad_1 * result_1
}

fn main() -> autograd::Result<()> {
    let a = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let b = Tensor::scalar(5.0f64).requires_grad_(true)?;
    let (s, p) = sum_and_product(&a, &b);
    assert_eq!((s.item::<f64>()?, p.item::<f64>()?), (7.0, 10.0));
    assert_eq!((s.output_nr(), p.output_nr()), (0, 1));
    s.add(&p)?.backward()?;
    assert_eq!(a.grad().expect("a.grad").item::<f64>()?, 6.0);
    assert_eq!(b.grad().expect("b.grad").item::<f64>()?, 3.0);

    // The same tensor returned twice is one tensor, both outputs of the node: it is output 1
    // (the later), which receives the gradient of every use (output 0's is zeros).
    let x = Tensor::scalar(0.0f64).requires_grad_(true)?;
    let (e0, e1) = exp_twice(&x);
    assert!(e0.is_same(&e1));
    assert_eq!((e0.output_nr(), e1.output_nr()), (1, 1));
    e0.add(&e1)?.backward()?;
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, 2.0);
    Ok(())
}
