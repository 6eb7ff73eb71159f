// A `&[Tensor]` input's tangent is a slice, one per element: `&[Tensor]` (zeros where an element
// has none) or `&[Option<Tensor>]`; the error points at the type and names the input.
use autograd::{Result, Tensor, backward, differentiable, jvp};

#[differentiable]
fn total(xs: &[Tensor]) -> Result<Tensor> {
    Tensor::stack(xs, 0)?.sum_dims(&[0], false)
}

#[backward(total)]
fn total_backward(grad: &Tensor, xs: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(vec![grad.clone(); xs.len()])
}

#[jvp(total)]
fn total_jvp(xs_t: &Tensor) -> Result<Tensor> {
    Ok(xs_t.clone())
}

fn main() {}
