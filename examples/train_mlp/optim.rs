//! Optimizers on the library's public API: `no_grad` and in-place updates of the parameters
//! and of their state, as `torch.optim.SGD` and `torch.optim.Adam` do.

use autograd::{Result, Tensor, no_grad};
use clap::ValueEnum;

/// `--optimizer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OptimizerKind {
    /// Stochastic gradient descent with (heavy-ball) momentum.
    Sgd,
    /// Adam (Kingma and Ba, 2015), β = (0.9, 0.999), ε = 1e-8.
    Adam,
}

/// Updates parameters from their `.grad`.
pub(crate) trait Optimizer {
    /// One update of every parameter that has a gradient.
    fn step(&mut self) -> Result<()>;

    /// Drops the gradients (PyTorch's `zero_grad(set_to_none=True)`): the next backward writes
    /// fresh ones instead of adding into these.
    fn zero_grad(&self);
}

/// A 0-dim tensor holding `value` with `like`'s dtype and device, for in-place scaling.
fn scalar_like(value: f64, like: &Tensor) -> Result<Tensor> {
    Tensor::full(&[], value, like.dtype())?.to(like.device())
}

fn clear(params: &[Tensor]) {
    for p in params {
        p.set_grad(None);
    }
}

/// `v = μ v + g; p -= lr v` (PyTorch's SGD, dampening 0, no Nesterov); plain SGD for μ = 0.
#[derive(Debug)]
pub(crate) struct Sgd {
    params: Vec<Tensor>,
    lr: f64,
    momentum: f64,
    /// One velocity per parameter, created from the first gradient.
    velocity: Vec<Option<Tensor>>,
}

impl Sgd {
    pub(crate) fn new(params: Vec<Tensor>, lr: f64, momentum: f64) -> Sgd {
        let velocity = vec![None; params.len()];
        Sgd {
            params,
            lr,
            momentum,
            velocity,
        }
    }
}

impl Optimizer for Sgd {
    fn step(&mut self) -> Result<()> {
        let _no_grad = no_grad();
        for (p, v) in self.params.iter().zip(&mut self.velocity) {
            let Some(g) = p.grad() else { continue };
            let direction = if self.momentum == 0.0 {
                g
            } else if let Some(v) = v {
                v.mul_(&scalar_like(self.momentum, v)?)?.add_(&g)?;
                v.clone()
            } else {
                // First step: the velocity starts as the gradient (a copy: the engine may write
                // the next gradient into a tensor it owns).
                v.insert(g.copy()?).clone()
            };
            p.sub_(&direction.mul_scalar(self.lr)?)?;
        }
        Ok(())
    }

    fn zero_grad(&self) {
        clear(&self.params);
    }
}

/// Adam with PyTorch's update: `m = β1 m + (1-β1) g`, `v = β2 v + (1-β2) g²`,
/// `p -= lr / (1-β1^t) · m / (sqrt(v / (1-β2^t)) + ε)`.
#[derive(Debug)]
pub(crate) struct Adam {
    params: Vec<Tensor>,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    /// Steps taken, for the bias corrections.
    t: i32,
    /// First and second moment estimates, per parameter (zeros until its first gradient).
    moments: Vec<(Tensor, Tensor)>,
}

impl Adam {
    pub(crate) fn new(params: Vec<Tensor>, lr: f64) -> Result<Adam> {
        let zeros = |p: &Tensor| Tensor::zeros(p.shape(), p.dtype())?.to(p.device());
        let moments = params
            .iter()
            .map(|p| Ok((zeros(p)?, zeros(p)?)))
            .collect::<Result<_>>()?;
        Ok(Adam {
            params,
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            t: 0,
            moments,
        })
    }
}

impl Optimizer for Adam {
    fn step(&mut self) -> Result<()> {
        let _no_grad = no_grad();
        self.t += 1;
        let bias1 = 1.0 - self.beta1.powi(self.t);
        let bias2 = 1.0 - self.beta2.powi(self.t);
        for (p, (m, v)) in self.params.iter().zip(&self.moments) {
            let Some(g) = p.grad() else { continue };
            m.mul_(&scalar_like(self.beta1, m)?)?
                .add_(&g.mul_scalar(1.0 - self.beta1)?)?;
            v.mul_(&scalar_like(self.beta2, v)?)?
                .add_(&g.mul(&g)?.mul_scalar(1.0 - self.beta2)?)?;
            let denom = v
                .sqrt()?
                .mul_scalar(1.0 / bias2.sqrt())?
                .add_scalar(self.eps)?;
            p.sub_(&m.div(&denom)?.mul_scalar(self.lr / bias1)?)?;
        }
        Ok(())
    }

    fn zero_grad(&self) {
        clear(&self.params);
    }
}

#[cfg(test)]
mod tests {
    use autograd::{DType, Tensor};

    use super::*;

    fn leaf(v: Vec<f64>) -> Tensor {
        let n = v.len();
        Tensor::from_vec(v, &[n])
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    }

    /// Sets `p.grad` to `g` through a backward of `(p · g).sum()`.
    fn backward_with_grad(p: &Tensor, g: &[f64]) {
        let g = Tensor::from_vec(g.to_vec(), &[g.len()]).unwrap();
        p.mul(&g).unwrap().sum().unwrap().backward().unwrap();
    }

    #[test]
    fn sgd_momentum_matches_the_recurrence() {
        let p = leaf(vec![1.0, -2.0]);
        let mut opt = Sgd::new(vec![p.clone()], 0.1, 0.5);
        // Step 1: v = g = [1, 2]; p = [1, -2] - 0.1 [1, 2] = [0.9, -2.2].
        backward_with_grad(&p, &[1.0, 2.0]);
        opt.step().unwrap();
        opt.zero_grad();
        assert!(p.grad().is_none());
        let v1 = p.to_vec::<f64>().unwrap();
        assert!(
            (v1[0] - 0.9).abs() < 1e-12 && (v1[1] + 2.2).abs() < 1e-12,
            "{v1:?}"
        );
        // Step 2: v = 0.5 [1, 2] + [3, -1] = [3.5, 0]; p = [0.9, -2.2] - 0.1 [3.5, 0].
        backward_with_grad(&p, &[3.0, -1.0]);
        opt.step().unwrap();
        let v2 = p.to_vec::<f64>().unwrap();
        assert!(
            (v2[0] - 0.55).abs() < 1e-12 && (v2[1] + 2.2).abs() < 1e-12,
            "{v2:?}"
        );
        // The parameter is still a leaf that requires grad: updates were not recorded.
        assert!(p.is_leaf() && p.requires_grad() && p.grad_fn().is_none());
    }

    #[test]
    fn adam_first_step_moves_each_coordinate_by_lr() {
        // With bias correction, step 1 is lr · g / (|g| + ε') = lr · sign(g).
        let p = leaf(vec![0.0, 0.0, 5.0]);
        let mut opt = Adam::new(vec![p.clone()], 0.01).unwrap();
        backward_with_grad(&p, &[4.0, -0.001, 1e3]);
        opt.step().unwrap();
        let v = p.to_vec::<f64>().unwrap();
        let want = [-0.01, 0.01, 4.99];
        for (a, b) in v.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{v:?}");
        }
    }

    #[test]
    fn both_minimise_a_quadratic() {
        // f(p) = Σ (p - c)², minimum at c.
        let c = Tensor::from_vec(vec![3.0, -1.0, 0.5], &[3]).unwrap();
        for kind in [OptimizerKind::Sgd, OptimizerKind::Adam] {
            let p = Tensor::zeros(&[3], DType::F64)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            let mut opt: Box<dyn Optimizer> = match kind {
                OptimizerKind::Sgd => Box::new(Sgd::new(vec![p.clone()], 0.05, 0.9)),
                OptimizerKind::Adam => Box::new(Adam::new(vec![p.clone()], 0.1).unwrap()),
            };
            for _ in 0..300 {
                p.sub(&c)
                    .unwrap()
                    .pow(2.0)
                    .unwrap()
                    .sum()
                    .unwrap()
                    .backward()
                    .unwrap();
                opt.step().unwrap();
                opt.zero_grad();
            }
            let dist = p.sub(&c).unwrap().pow(2.0).unwrap().sum().unwrap();
            assert!(dist.item::<f64>().unwrap() < 1e-4, "{kind:?}: {p:?}");
        }
    }
}
