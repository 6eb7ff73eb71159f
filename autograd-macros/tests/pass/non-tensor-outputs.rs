// Outputs that are not tensors (an index, a count) are returned as they are and are not
// differentiable: they take no gradient parameter and no `result_*` name; tensor outputs are
// numbered among themselves (one tensor beside them is `grad` / `result`).
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn first_max(x: &Tensor) -> Result<(Tensor, usize)> {
    let v = x.to_vec::<f64>()?;
    let at = (0..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best });
    Ok((Tensor::scalar(v[at]), at))
}

#[backward(first_max)]
fn first_max_backward(grad: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    let g = grad.item::<f64>()?;
    let m = result.item::<f64>()?;
    let v: Vec<f64> = x.to_vec::<f64>()?.iter().map(|&e| if e == m { g } else { 0.0 }).collect();
    Tensor::from_vec(v, x.shape())
}

#[differentiable(non_differentiable(result_1))]
fn split_stats(x: &Tensor) -> Result<(Tensor, &'static str, Tensor, Vec<usize>)> {
    Ok((x.mul_scalar(2.0)?, "stats", x.abs()?, x.shape().to_vec()))
}

#[backward(split_stats)]
fn split_stats_backward(grad_0: &Tensor, grad_1: &Tensor, result_0: &Tensor) -> Result<Tensor> {
    assert_eq!(result_0.shape(), grad_1.shape());
    grad_0.mul_scalar(2.0)
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 5.0, 2.0], &[3])?.requires_grad_(true)?;
    let (m, at) = first_max(&x)?;
    assert_eq!((m.item::<f64>()?, at), (5.0, 1));
    m.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [0.0, 1.0, 0.0]);

    let z = Tensor::from_vec(vec![-1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let (doubled, label, abs, shape) = split_stats(&z)?;
    assert_eq!((label, shape), ("stats", vec![2]));
    assert!(!abs.requires_grad());
    doubled.sum()?.backward()?;
    assert_eq!(z.grad().expect("z.grad").to_vec::<f64>()?, [2.0, 2.0]);
    Ok(())
}
