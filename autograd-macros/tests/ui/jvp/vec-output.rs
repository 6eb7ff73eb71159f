// A `Vec<Tensor>` forward's jvp returns one tangent per output, as a `Vec<Tensor>`, and names
// the outputs together as `&[Tensor]`.
use autograd::{Result, Tensor, backward, differentiable, jvp};

#[differentiable]
fn halves(x: &Tensor) -> Result<Vec<Tensor>> {
    x.chunk(2, 0)
}

#[backward(halves)]
fn halves_backward(grad: &[Tensor]) -> Result<Tensor> {
    Tensor::cat(grad, 0)
}

#[jvp(halves)]
fn halves_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.add(result)
}

fn main() {}
