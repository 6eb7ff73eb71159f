// `#[derive(Module)]` on an enum: the error points at `enum`.
use autograd::nn::{Linear, Module};

#[derive(Debug, Module)]
enum Either {
    A(Linear),
    B(Linear),
}

fn main() {}
