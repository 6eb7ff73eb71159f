// A macro call in a derived body is rejected (its expansion cannot be seen): the error spans it.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn logged(x: &Tensor) -> Result<Tensor> {
    println!("forward");
    x.exp()
}

fn main() {}
