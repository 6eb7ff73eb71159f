//! `#[differentiable] impl Op { fn forward(&self, ..); fn backward(&self, ..) }`: a differentiable
//! op that carries configuration, applied as `op.apply(..)`, one node per call that keeps a clone
//! of the configuration.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::{DType, Result, Tensor, differentiable, gradcheck, gradgradcheck};

/// `Σ_k c_k x^k` with its coefficients as configuration: the forward loops over them (a
/// hand-written pair may; only `derive` needs straight-line code).
#[derive(Clone, Debug)]
struct Polynomial {
    coeffs: Vec<f64>,
}

#[differentiable]
impl Polynomial {
    /// Evaluates the polynomial element-wise.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut y = x.mul_scalar(0.0)?.add_scalar(self.coeffs[0])?;
        for (k, c) in self.coeffs.iter().enumerate().skip(1) {
            y = y.add(&x.pow(k as f64)?.mul_scalar(*c)?)?;
        }
        Ok(y)
    }

    /// `Σ_k k c_k x^(k-1)`, written with tensor ops, so it is differentiable again.
    fn backward(&self, grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let mut d = x.mul_scalar(0.0)?;
        for (k, c) in self.coeffs.iter().enumerate().skip(1) {
            d = d.add(&x.pow((k - 1) as f64)?.mul_scalar(k as f64 * c)?)?;
        }
        grad.mul(&d)
    }

    /// Other items of the block stay methods of the type.
    fn degree(&self) -> usize {
        self.coeffs.len() - 1
    }
}

/// A closure as configuration: the derivative of a smooth clamp, and a counter the backward
/// bumps (what a hand-written `Node` used to be for).
#[derive(Clone)]
struct Smooth {
    scale: f64,
    calls: Arc<AtomicUsize>,
    on_backward: Arc<dyn Fn(&AtomicUsize) + Send + Sync>,
}

#[differentiable(name = "SmoothClampBackward")]
impl Smooth {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.mul_scalar(1.0 / self.scale)?
            .tanh()?
            .mul_scalar(self.scale)
    }

    fn backward(&self, grad: &Tensor, result: &Tensor) -> Result<Tensor> {
        (self.on_backward)(&self.calls);
        let t = result.mul_scalar(1.0 / self.scale)?;
        grad.mul(&t.mul(&t)?.rsub_scalar(1.0)?)
    }
}

fn input(seed: u64) -> Result<Tensor> {
    Tensor::randn_seeded(&[5], DType::F64, seed)?.requires_grad_(true)
}

#[test]
fn configuration_in_self_gives_one_node_and_the_right_gradient() -> Result<()> {
    let p = Polynomial {
        coeffs: vec![1.0, -2.0, 0.5, 0.25],
    };
    assert_eq!(p.degree(), 3);
    let x = input(1)?;
    let y = p.apply(&x)?;
    assert_eq!(y.grad_fn().unwrap().name(), "PolynomialBackward0");
    y.sum()?.backward()?;
    let xs = x.to_vec::<f64>()?;
    for (g, v) in x.grad().unwrap().to_vec::<f64>()?.iter().zip(&xs) {
        let expected = -2.0 + v + 0.75 * v * v;
        assert!((g - expected).abs() < 1e-12, "{g} vs {expected}");
    }
    gradcheck(|t| p.apply(&t[0]), std::slice::from_ref(&x))?;
    gradgradcheck(|t| p.apply(&t[0]), std::slice::from_ref(&x))
}

#[test]
fn the_node_keeps_its_own_copy_of_the_configuration() -> Result<()> {
    let mut p = Polynomial {
        coeffs: vec![0.0, 3.0],
    };
    let x = input(2)?;
    let y = p.apply(&x)?;
    // Changing the configuration after the forward does not change this node's backward.
    p.coeffs = vec![0.0, 100.0];
    y.sum()?.backward()?;
    assert!(x.grad().unwrap().to_vec::<f64>()?.iter().all(|g| *g == 3.0));
    Ok(())
}

#[test]
fn a_closure_in_the_configuration_runs_in_the_backward() -> Result<()> {
    let calls = Arc::new(AtomicUsize::new(0));
    let op = Smooth {
        scale: 2.0,
        calls: calls.clone(),
        on_backward: Arc::new(|c: &AtomicUsize| {
            c.fetch_add(1, Ordering::Relaxed);
        }),
    };
    let x = input(3)?;
    let y = op.apply(&x)?;
    assert_eq!(y.grad_fn().unwrap().name(), "SmoothClampBackward");
    y.sum()?.backward()?;
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    for (g, v) in x
        .grad()
        .unwrap()
        .to_vec::<f64>()?
        .iter()
        .zip(x.to_vec::<f64>()?)
    {
        let t = (v / 2.0).tanh();
        assert!((g - (1.0 - t * t)).abs() < 1e-12);
    }
    gradcheck(|t| op.apply(&t[0]), std::slice::from_ref(&x))?;
    // Nothing requires grad: no node, and the backward never runs.
    let y = op.apply(&x.detach())?;
    assert!(y.grad_fn().is_none());
    Ok(())
}

/// `clamp(x, lo, hi)` with its bounds in `self`, keeping (with `save`) which elements the forward
/// found strictly inside the bounds, so the backward does not compare again.
#[derive(Clone, Debug)]
struct Clamp {
    lo: f64,
    hi: f64,
}

#[differentiable(save(inside))]
impl Clamp {
    fn forward(&self, x: &Tensor) -> Result<(Tensor, Vec<f64>)> {
        let values = x.to_vec::<f64>()?;
        let inside = values
            .iter()
            .map(|v| {
                if *v > self.lo && *v < self.hi {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        let clamped = values.iter().map(|v| v.clamp(self.lo, self.hi)).collect();
        Ok((Tensor::from_vec(clamped, x.shape())?, inside))
    }

    fn backward(&self, grad: &Tensor, inside: &[f64]) -> Result<Tensor> {
        grad.mul(&Tensor::from_vec(inside.to_vec(), grad.shape())?)
    }
}

#[test]
fn the_impl_form_keeps_residuals_with_save() -> Result<()> {
    let op = Clamp { lo: -0.5, hi: 0.5 };
    let x = Tensor::from_vec(vec![-1.0f64, 0.2, 0.7, -0.3], &[4])?.requires_grad_(true)?;
    // `apply` returns the output alone; the residual went into the node.
    let y: Tensor = op.apply(&x)?;
    assert_eq!(y.to_vec::<f64>()?, [-0.5, 0.2, 0.5, -0.3]);
    assert_eq!(y.grad_fn().unwrap().name(), "ClampBackward0");
    y.mul_scalar(3.0)?.sum()?.backward()?;
    // PyTorch: torch.clamp(x, -0.5, 0.5) passes the gradient where lo < x < hi only.
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [0.0, 3.0, 0.0, 3.0]);
    let x = input(4)?; // randn: no element within gradcheck's step of a bound
    gradcheck(|t| op.apply(&t[0]), std::slice::from_ref(&x))
}
