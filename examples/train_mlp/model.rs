//! The networks, built from `autograd::nn`: a multi-layer perceptron, or a small convolutional
//! network for the 8×8 digits. Each is an `nn::Sequential`, so its parameters carry PyTorch's
//! names (`0.weight`, `3.bias`) and its checkpoint loads into the same `torch.nn.Sequential`.

use autograd::nn::{Conv2d, Flatten, Linear, MaxPool2d, Module, Relu, Sequential, Sigmoid, Tanh};
use autograd::{Device, Result, Tensor};
use clap::ValueEnum;

/// `--model`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModelKind {
    /// Linear layers of `--hidden` widths with `--activation` between them.
    Mlp,
    /// conv 3×3 (32) → ReLU → max-pool 2 → conv 3×3 (64) → ReLU → max-pool 2 → linear, for
    /// square single-channel images (the 8×8 digits).
    Cnn,
}

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
    fn layer(self) -> Box<dyn Module> {
        match self {
            Activation::Relu => Box::new(Relu),
            Activation::Tanh => Box::new(Tanh),
            Activation::Sigmoid => Box::new(Sigmoid),
        }
    }
}

/// A classifier: inputs `[n, features]` (rows of pixels for the CNN) to logits `[n, classes]`.
#[derive(Debug)]
pub(crate) struct Model {
    net: Sequential,
    /// The shape of one example as the network takes it (`[features]`, or `[1, side, side]`).
    example_shape: Vec<usize>,
    /// "MLP 64-128-64-10 (relu)", "CNN 8x8, 3x3 convs 32-64, 10 classes".
    description: String,
}

impl Model {
    /// The MLP `sizes[0] → sizes[1] → … → sizes[last]` (logits), `activation` after each layer
    /// but the last, PyTorch's default initialisation with layer `i` seeded by `seed + i`, f32 on
    /// `device`.
    pub(crate) fn mlp(
        sizes: &[usize],
        activation: Activation,
        seed: u64,
        device: Device,
    ) -> Result<Model> {
        let mut net = Sequential::new();
        let layers = sizes.len().saturating_sub(1);
        for (i, pair) in sizes.windows(2).enumerate() {
            let seed = seed.wrapping_add(i as u64);
            net.push(Box::new(Linear::new(pair[0], pair[1], seed)?));
            if i + 1 < layers {
                net.push(activation.layer());
            }
        }
        let arch: Vec<String> = sizes.iter().map(usize::to_string).collect();
        let name = format!("{activation:?}").to_lowercase();
        Model::on(
            net,
            vec![sizes[0]],
            format!("MLP {} ({name})", arch.join("-")),
            device,
        )
    }

    /// The CNN for `features` = side × side single-channel images and `classes` outputs.
    pub(crate) fn cnn(features: usize, classes: usize, seed: u64, device: Device) -> Result<Model> {
        let side = (features as f64).sqrt().round() as usize;
        if side * side != features || !side.is_multiple_of(4) {
            return Err(autograd::Error::msg(format!(
                "--model cnn needs square images with a side divisible by 4 (two 2x2 poolings), \
                 but the data has {features} features"
            )));
        }
        let (c1, c2) = (32, 64);
        let pooled = side / 4;
        let net = Sequential::new()
            .add(Conv2d::new(1, c1, 3, seed)?.padding(1))
            .add(Relu)
            .add(MaxPool2d::new(2))
            .add(Conv2d::new(c1, c2, 3, seed.wrapping_add(1))?.padding(1))
            .add(Relu)
            .add(MaxPool2d::new(2))
            .add(Flatten::new())
            .add(Linear::new(
                c2 * pooled * pooled,
                classes,
                seed.wrapping_add(2),
            )?);
        let description = format!("CNN {side}x{side}, 3x3 convs {c1}-{c2}, {classes} classes");
        Model::on(net, vec![1, side, side], description, device)
    }

    fn on(
        mut net: Sequential,
        example_shape: Vec<usize>,
        description: String,
        device: Device,
    ) -> Result<Model> {
        net.to(device)?;
        Ok(Model {
            net,
            example_shape,
            description,
        })
    }

    /// What the network is, for the run's header and plot title.
    pub(crate) fn description(&self) -> &str {
        &self.description
    }
}

impl Module for Model {
    /// Logits `[n, classes]` of inputs `[n, features]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut shape = vec![x.shape()[0]];
        shape.extend(&self.example_shape);
        self.net.forward(&x.reshape(&shape)?)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.net.named_parameters()
    }

    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        self.net.visit_parameters_mut(f)
    }

    fn set_training(&mut self, training: bool) {
        self.net.set_training(training);
    }

    fn is_training(&self) -> bool {
        self.net.is_training()
    }
}

#[cfg(test)]
mod tests {
    use autograd::DType;

    use super::*;

    #[test]
    fn mlp_shapes_names_and_graph() {
        let mlp = Model::mlp(&[5, 7, 3, 2], Activation::Tanh, 1, Device::Cpu).unwrap();
        let names: Vec<String> = mlp.named_parameters().into_iter().map(|(n, _)| n).collect();
        // PyTorch's names for Sequential(Linear, Tanh, Linear, Tanh, Linear).
        assert_eq!(
            names,
            [
                "0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"
            ]
        );
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
    fn cnn_shapes_and_names() {
        let cnn = Model::cnn(64, 10, 3, Device::Cpu).unwrap();
        let names: Vec<String> = cnn.named_parameters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "0.weight", "0.bias", "3.weight", "3.bias", "7.weight", "7.bias"
            ]
        );
        let y = cnn
            .forward(&Tensor::ones(&[2, 64], DType::F32).unwrap())
            .unwrap();
        assert_eq!(y.shape(), &[2, 10]);
        assert!(Model::cnn(4 * 3, 10, 3, Device::Cpu).is_err());
    }

    #[test]
    fn activations_differ_and_init_is_seeded() {
        let x = Tensor::randn(&[3, 4], DType::F32, 9).unwrap();
        let out = |a, seed| {
            Model::mlp(&[4, 8, 2], a, seed, Device::Cpu)
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
