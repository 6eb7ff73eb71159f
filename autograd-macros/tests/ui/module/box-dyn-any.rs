// A field the derive cannot see through: `Box<dyn Any>` is not a module; the error points at
// `dyn Any`.
use autograd::nn::Module;
use autograd::Tensor;

#[derive(Debug, Module)]
struct Layer {
    weight: Tensor,
    state: Box<dyn std::any::Any + Send + Sync>,
}

fn main() {}
