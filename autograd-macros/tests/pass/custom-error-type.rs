// A forward with an error type of its own: it needs `From<autograd::Error>` only when its node
// saves a tensor (a saved-tensor pack hook may then fail the call), and gets that error then.
use autograd::{backward, differentiable, saved_tensors_hooks, Error, Tensor};

#[derive(Debug)]
enum MyError {
    Autograd(Error),
}

impl From<Error> for MyError {
    fn from(e: Error) -> MyError {
        MyError::Autograd(e)
    }
}

/// Saves nothing: any error type will do.
#[derive(Debug)]
struct Unrelated;

#[differentiable]
fn double(x: &Tensor) -> Result<Tensor, Unrelated> {
    Ok(x * 2.0)
}

#[backward(double)]
fn double_backward(grad: &Tensor) -> Tensor {
    grad * 2.0
}

#[differentiable]
fn square(x: &Tensor) -> Result<Tensor, MyError> {
    Ok(x.mul(x)?)
}

#[backward(square)]
fn square_backward(grad: &Tensor, x: &Tensor) -> Tensor {
    grad * x * 2.0
}

fn main() -> Result<(), MyError> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    square(&x)?.add(&double(&x).unwrap())?.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [4.0, 6.0]);
    let _hooks = saved_tensors_hooks(
        |t: &Tensor| {
            t.add_(&Tensor::scalar(1.0f64)).unwrap();
            t.clone()
        },
        |t: &Tensor| t.clone(),
    );
    let MyError::Autograd(e) = square(&x.mul_scalar(1.0)?).unwrap_err();
    assert!(matches!(e, Error::PackHookModifiedInput));
    Ok(())
}
