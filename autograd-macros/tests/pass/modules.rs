// A backward in another module names its forward by path; forwards and backwards also work
// inside a function body (as in doctests).
use autograd::Tensor;

mod forward {
    use autograd::{differentiable, Tensor};

    #[differentiable]
    pub fn triple(x: &Tensor) -> Tensor {
        x * 3.0
    }
}

mod grads {
    use autograd::{backward, Tensor};

    #[backward(super::forward::triple)]
    fn triple_backward(grad: &Tensor) -> Tensor {
        grad * 3.0
    }
}

fn main() -> autograd::Result<()> {
    use autograd::{backward, differentiable};

    #[differentiable]
    fn halve(x: &Tensor) -> Tensor {
        x * 0.5
    }

    #[backward(halve)]
    fn halve_backward(grad: &Tensor) -> Tensor {
        grad * 0.5
    }

    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    halve(&forward::triple(&x)).backward()?;
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, 1.5);
    Ok(())
}
