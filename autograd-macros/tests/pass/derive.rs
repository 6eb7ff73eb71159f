// `#[differentiable(derive)]` forms that compile: methods with `?`, operators with scalars on
// either side, scalar `let`s and constants, attribute parameters, a `Tensor` (not `Result`)
// return, a custom node name, and `let _ = ..`.
use autograd::{differentiable, Result, Tensor};

const HALF: f64 = 0.5;

#[differentiable(derive)]
fn softplus_like(x: &Tensor, beta: f64) -> Result<Tensor> {
    let scaled = x.mul_scalar(beta)?;
    let e = scaled.exp()?.add_scalar(1.0)?;
    let inv = 1.0 / beta;
    Ok(e.log()? * inv)
}

#[differentiable(derive, name = "MyCubeBackward")]
fn cube(x: &Tensor) -> Tensor {
    let sq = x * x;
    let _ = HALF;
    &sq * x * (HALF * 2.0) + 0.0
}

#[differentiable(derive)]
fn pair(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let d = a.sub(b)?;
    (-&d).pow(2.0)?.sum()
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
    x.set_requires_grad(true)?;
    softplus_like(&x, 2.0)?.sum()?.backward()?;
    assert_eq!(cube(&x).grad_fn().map(|n| n.name().to_string()).as_deref(), Some("MyCubeBackward"));
    pair(&x, &x)?.backward()?;
    Ok(())
}
