// A derived body calls `#[differentiable]` functions however they are in scope: declared in the
// same module, glob-imported, imported by name with their rule, or by a module path; the rule
// lookup that gives a plain function the DSL's message finds each of them.
use autograd::{differentiable, Result, Tensor};

mod layers {
    use autograd::{differentiable, Result, Tensor};

    #[differentiable(derive)]
    pub fn double(x: &Tensor) -> Result<Tensor> {
        Ok(x * 2.0)
    }

    #[differentiable(derive)]
    pub fn square(x: &Tensor) -> Result<Tensor> {
        Ok(x * x)
    }
}

mod globbed {
    use super::layers::*;
    use autograd::{differentiable, Result, Tensor};

    #[differentiable(derive)]
    pub fn quad(x: &Tensor) -> Result<Tensor> {
        let y = double(x)?;
        square(&y)
    }
}

mod named {
    use super::layers::{__autograd_square_rule, square};
    use autograd::{differentiable, Result, Tensor};

    #[differentiable(derive)]
    pub fn cubed(x: &Tensor) -> Result<Tensor> {
        let s = square(x)?;
        Ok(&s * x)
    }
}

#[differentiable(derive)]
fn shifted(x: &Tensor) -> Result<Tensor> {
    Ok(x + 1.0)
}

#[differentiable(derive)]
fn everything(x: &Tensor) -> Result<Tensor> {
    let a = shifted(x)?;
    let b = layers::double(&a)?;
    let c = globbed::quad(&b)?;
    Ok(c.exp()? + a)
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![0.1f64, 0.2], &[2])?;
    x.set_requires_grad(true)?;
    everything(&x)?.sum()?.backward()?;
    // d/dx [exp(16 (x + 1)^2) + x + 1] = exp(16 (x + 1)^2) * 32 (x + 1) + 1
    let g = x.grad().expect("a gradient").to_vec::<f64>()?;
    for (gi, xi) in g.iter().zip([0.1f64, 0.2]) {
        let want = (16.0 * (xi + 1.0) * (xi + 1.0)).exp() * 32.0 * (xi + 1.0) + 1.0;
        assert!((gi - want).abs() <= 1e-9 * want.abs(), "{gi} vs {want}");
    }
    let u = Tensor::from_vec(vec![3.0f64], &[1])?;
    u.set_requires_grad(true)?;
    named::cubed(&u)?.sum()?.backward()?;
    assert_eq!(u.grad().expect("a gradient").to_vec::<f64>()?, vec![27.0]);
    Ok(())
}
