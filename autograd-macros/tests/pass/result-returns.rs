// Forwards and backwards that return `Result`: `autograd::Result<T>` and `Result<T, Error>`.
use autograd::{backward, differentiable, Error, Result, Tensor};

#[differentiable]
fn checked_log(x: &Tensor) -> Result<Tensor> {
    x.log()
}

#[backward(checked_log)]
fn checked_log_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.div(x)
}

#[differentiable]
fn split_sign(x: &Tensor) -> std::result::Result<(Tensor, Tensor), Error> {
    Ok((x.relu()?, x.neg()?.relu()?))
}

#[backward(split_sign)]
fn split_sign_backward(
    grad_0: &Tensor,
    grad_1: &Tensor,
    x: &Tensor,
) -> std::result::Result<Tensor, Error> {
    let positive = x.relu()?.div(&x.abs()?)?; // 1 where x > 0, 0 where x < 0
    grad_0
        .mul(&positive)?
        .sub(&grad_1.mul(&positive.rsub_scalar(1.0)?)?)
}

#[differentiable]
fn fails(x: &Tensor) -> Result<Tensor> {
    let _ = x;
    Err(Error::msg("nope"))
}

#[backward(fails)]
fn fails_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 4.0], &[2])?.requires_grad_(true)?;
    checked_log(&x)?.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [1.0, 0.25]);

    let y = Tensor::from_vec(vec![-2.0f64, 3.0], &[2])?.requires_grad_(true)?;
    let (p, n) = split_sign(&y)?;
    assert_eq!(p.to_vec::<f64>()?, [0.0, 3.0]);
    assert_eq!(n.to_vec::<f64>()?, [2.0, 0.0]);
    p.add(&n)?.sum()?.backward()?;
    assert_eq!(y.grad().expect("y.grad").to_vec::<f64>()?, [-1.0, 1.0]);

    assert_eq!(fails(&x).unwrap_err().to_string(), "nope");
    Ok(())
}
