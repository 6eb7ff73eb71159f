// `#[buffer]` on a field that is not a tensor: the error points at the field's type.
use autograd::nn::Module;
use autograd::Tensor;

#[derive(Debug, Module)]
struct Norm {
    weight: Tensor,
    #[buffer]
    momentum: f64,
}

fn main() {}
