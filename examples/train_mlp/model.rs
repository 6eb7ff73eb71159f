//! The multi-layer perceptron: linear layers with an activation between them.

use autograd::{DType, Device, Result, Tensor};
use clap::ValueEnum;

/// The non-linearity between layers (`--activation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Activation {
    /// max(0, x)
    Relu,
    /// tanh(x)
    Tanh,
    /// 1 / (1 + exp(-x))
    Sigmoid,
}

impl Activation {
    fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Activation::Relu => x.relu(),
            Activation::Tanh => x.tanh(),
            Activation::Sigmoid => x.sigmoid(),
        }
    }

    /// The variance gain of He / Glorot initialisation for this non-linearity.
    fn init_gain(self) -> f64 {
        match self {
            Activation::Relu => 2.0,
            Activation::Tanh | Activation::Sigmoid => 1.0,
        }
    }
}

/// `x · w + b`, `w` `[in, out]`.
#[derive(Debug)]
struct Linear {
    w: Tensor,
    b: Tensor,
}

/// Linear layers `sizes[0] → sizes[1] → … → sizes[last]` (logits), the activation after each
/// but the last.
#[derive(Debug)]
pub(crate) struct Mlp {
    layers: Vec<Linear>,
    activation: Activation,
}

impl Mlp {
    /// Weights `randn · sqrt(gain / fan_in)` (He for ReLU, LeCun otherwise), zero biases, f32,
    /// on `device`. Layer `i`'s weights use seed `seed + i`.
    pub(crate) fn new(
        sizes: &[usize],
        activation: Activation,
        seed: u64,
        device: Device,
    ) -> Result<Mlp> {
        let mut layers = Vec::new();
        for (i, pair) in sizes.windows(2).enumerate() {
            let (fan_in, fan_out) = (pair[0], pair[1]);
            let std = (activation.init_gain() / fan_in as f64).sqrt();
            let w = Tensor::randn(&[fan_in, fan_out], DType::F32, seed.wrapping_add(i as u64))?
                .mul_scalar(std)?
                .to(device)?
                .requires_grad_(true)?;
            let b = Tensor::zeros(&[fan_out], DType::F32)?
                .to(device)?
                .requires_grad_(true)?;
            layers.push(Linear { w, b });
        }
        Ok(Mlp { layers, activation })
    }

    /// The trainable tensors, weight then bias of each layer.
    pub(crate) fn parameters(&self) -> Vec<Tensor> {
        self.layers
            .iter()
            .flat_map(|l| [l.w.clone(), l.b.clone()])
            .collect()
    }

    /// The number of trainable values.
    pub(crate) fn parameter_count(&self) -> usize {
        self.parameters().iter().map(Tensor::numel).sum()
    }

    /// Logits `[n, classes]` of inputs `[n, features]`.
    pub(crate) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = x.clone();
        for (i, layer) in self.layers.iter().enumerate() {
            h = h.matmul(&layer.w)?.add(&layer.b)?;
            if i + 1 < self.layers.len() {
                h = self.activation.apply(&h)?;
            }
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parameters_and_graph() {
        let mlp = Mlp::new(&[5, 7, 3, 2], Activation::Tanh, 1, Device::Cpu).unwrap();
        assert_eq!(mlp.parameters().len(), 6);
        assert_eq!(mlp.parameter_count(), 5 * 7 + 7 + 7 * 3 + 3 + 3 * 2 + 2);
        let x = Tensor::ones(&[4, 5], DType::F32).unwrap();
        let y = mlp.forward(&x).unwrap();
        assert_eq!(y.shape(), &[4, 2]);
        // The last layer has no activation: its node is the bias add.
        assert_eq!(y.grad_fn().unwrap().name(), "AddBackward0");
        y.sum().unwrap().backward().unwrap();
        assert!(mlp.parameters().iter().all(|p| p.grad().is_some()));
    }

    #[test]
    fn activations_differ_and_init_is_seeded() {
        let x = Tensor::randn(&[3, 4], DType::F32, 9).unwrap();
        let out = |a, seed| {
            Mlp::new(&[4, 8, 2], a, seed, Device::Cpu)
                .unwrap()
                .forward(&x)
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
        };
        assert_eq!(out(Activation::Relu, 3), out(Activation::Relu, 3));
        assert_ne!(out(Activation::Relu, 3), out(Activation::Relu, 4));
        assert_ne!(out(Activation::Relu, 3), out(Activation::Sigmoid, 3));
        assert_ne!(out(Activation::Tanh, 3), out(Activation::Sigmoid, 3));
    }
}
