// The forward's parameter and return types resolve where the forward is: a backward in another
// module needs neither the forward's imports (`Tensor`, its `Result` alias) nor its types
// (`Config`), unless it names them itself.
mod forward {
    use autograd::{differentiable, Result, Tensor};

    #[derive(Clone, Copy)]
    pub(crate) struct Config {
        pub(crate) scale: f64,
    }

    #[differentiable]
    pub(crate) fn scale(x: &Tensor, config: Config, offset: f64) -> Result<Tensor> {
        x.mul_scalar(config.scale)?.add_scalar(offset)
    }
}

mod grads {
    // No `Tensor`, `Result` or `Config` here.
    #[autograd::backward(super::forward::scale)]
    fn scale_backward(
        grad: &autograd::Tensor,
        config: &super::forward::Config,
    ) -> autograd::Result<autograd::Tensor> {
        grad.mul_scalar(config.scale)
    }
}

fn main() -> autograd::Result<()> {
    let x = autograd::Tensor::scalar(1.0f64).requires_grad_(true)?;
    let config = forward::Config { scale: 3.0 };
    let y = forward::scale(&x, config, 1.0)?;
    assert_eq!(y.item::<f64>()?, 4.0);
    y.backward()?;
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, 3.0);
    Ok(())
}
