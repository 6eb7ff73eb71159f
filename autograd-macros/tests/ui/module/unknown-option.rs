// Unknown options of `#[module(..)]`, on the struct and on a field: each error points at the
// option and lists the valid ones.
use autograd::nn::Module;
use autograd::Tensor;

#[derive(Debug, Module)]
#[module(rename_all = "lowercase")]
struct Layer {
    weight: Tensor,
    #[module(skipped)]
    size: usize,
}

fn main() {}
