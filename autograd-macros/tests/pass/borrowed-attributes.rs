// A borrowed attribute (`&[usize]`, `&str`) named by the backward is saved as its owned form
// (`Vec<usize>`, `String`), copied only when a node is recorded, and lent to the backward as the
// borrow it asks for (or the owned value).
use autograd::{backward, differentiable, no_grad, Result, Tensor};

#[differentiable]
fn sum_over(x: &Tensor, dims: &[usize], label: &str) -> Result<Tensor> {
    assert!(!label.is_empty());
    x.sum_dims(dims, true)
}

#[backward(sum_over)]
fn sum_over_backward(
    grad: &Tensor,
    x: &Tensor,
    dims: &[usize],
    label: String,
) -> Result<Tensor> {
    assert_eq!((dims, label.as_str()), (&[1usize][..], "cols"));
    grad.expand(x.shape())
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    let dims = vec![1];
    let y = sum_over(&x, &dims, "cols")?;
    assert_eq!(y.to_vec::<f64>()?, [3.0, 7.0]);
    y.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [1.0; 4]);
    {
        let _g = no_grad();
        assert!(!sum_over(&x, &dims, "cols")?.requires_grad());
    }
    Ok(())
}
