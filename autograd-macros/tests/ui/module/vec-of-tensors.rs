// `Vec<Tensor>` is not supported (each parameter needs a name): the error points at the type.
use autograd::nn::Module;
use autograd::Tensor;

#[derive(Debug, Module)]
struct Layer {
    weights: Vec<Tensor>,
}

fn main() {}
