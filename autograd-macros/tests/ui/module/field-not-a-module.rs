// A field that is neither a tensor nor a module (a size without `#[module(skip)]`): rustc's
// error, with `Module`'s message, points at the field's type `usize`.
use autograd::nn::{Linear, Module};

#[derive(Debug, Module)]
struct Mlp {
    fc: Linear,
    hidden: usize,
}

fn main() {}
