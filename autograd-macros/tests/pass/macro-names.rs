// `#[differentiable]` imports its signature macro under the forward's name (so that a misspelt
// `#[backward(..)]` is rustc's "cannot find macro" on the user's token), except for names of the
// standard prelude's macros and of built-in attributes: forwards called `vec`, `format` or `test`
// leave `vec![]`, `format!` and `#[test]` as they were. A raw identifier (`r#match`) is imported
// raw, and a glob import of a module of forwards brings in no conflicting macro.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn vec(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(vec)]
fn vec_backward(grad: &Tensor) -> Tensor {
    grad * 2.0
}

#[differentiable]
fn format(x: &Tensor) -> Tensor {
    x * 3.0
}

#[backward(crate::format)]
fn format_backward(grad: &Tensor) -> Tensor {
    grad * 3.0
}

#[differentiable]
fn test(x: &Tensor) -> Tensor {
    x * 5.0
}

#[backward(self::test)]
fn test_backward(grad: &Tensor) -> Tensor {
    grad * 5.0
}

#[differentiable]
fn r#match(x: &Tensor) -> Tensor {
    x * 1.0
}

#[backward(r#match)]
fn match_backward(grad: &Tensor) -> Tensor {
    grad * 1.0
}

mod ops {
    use autograd::{backward, differentiable, Tensor};

    #[differentiable]
    pub fn seven(x: &Tensor) -> Tensor {
        x * 7.0
    }

    #[backward(seven)]
    fn seven_backward(grad: &Tensor) -> Tensor {
        grad * 7.0
    }
}

mod user {
    use super::ops::*;
    use autograd::Tensor;

    pub fn run(x: &Tensor) -> Tensor {
        seven(x)
    }
}

#[allow(dead_code)]
#[cfg_attr(test, test)]
fn not_run() {}

fn main() -> autograd::Result<()> {
    let widths = vec![1usize, 2];
    let label = format!("{widths:?}");
    assert_eq!(label, "[1, 2]");
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    user::run(&r#match(&test(&format(&vec(&x))))).backward()?;
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, 210.0);
    Ok(())
}
