// A module owns its children: a reference field is an error at `&`.
use autograd::nn::{Linear, Module};

#[derive(Debug, Module)]
struct Borrowing<'a> {
    fc: &'a Linear,
}

fn main() {}
