// `#[module(training)]` on a field that is not `bool`: the error points at its type.
use autograd::nn::Module;
use autograd::Tensor;

#[derive(Debug, Module)]
struct Layer {
    weight: Tensor,
    #[module(training)]
    mode: u8,
}

fn main() {}
