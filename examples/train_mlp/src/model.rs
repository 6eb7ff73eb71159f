//! The networks, built from `autograd::nn`: a multi-layer perceptron, or a small convolutional
//! network for the 8×8 digits. Each is an `nn::Sequential`, so its parameters carry PyTorch's
//! names (`0.weight`, `3.bias`) and its checkpoint loads into the same `torch.nn.Sequential`.
//!
//! With `--activation-checkpoint`, the MLP's training forward runs each hidden block (a linear
//! layer and its activation) inside [`autograd::checkpoint`], as PyTorch users wrap blocks in
//! `torch.utils.checkpoint.checkpoint`: the block's activations are not kept for the backward,
//! which recomputes them from the block's input. The gradients, hence the trained weights, are
//! the same bit for bit.

use autograd::nn::{
    Conv2d, Flatten, Forward, Linear, MaxPool2d, Module, Relu, Sequential, Sigmoid, Tanh,
};
use autograd::{CheckpointOptions, Device, Result, Tensor, checkpoint, is_grad_enabled};
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

/// `--activation-checkpoint`: whether and how the MLP's hidden blocks are checkpointed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum ActivationCheckpoint {
    /// Keep every activation for the backward (no recomputation).
    #[default]
    None,
    /// `checkpoint(.., use_reentrant=True)`: each block runs under `no_grad`; its backward
    /// recomputes the block and runs a nested `backward()` through it.
    Reentrant,
    /// `checkpoint(.., use_reentrant=False)`: each block is recorded with its saved tensors
    /// replaced by handles; the backward recomputes the block on first use of one.
    NonReentrant,
}

impl Activation {
    fn layer(self) -> Box<dyn Forward> {
        match self {
            Activation::Relu => Box::new(Relu::new()),
            Activation::Tanh => Box::new(Tanh::new()),
            Activation::Sigmoid => Box::new(Sigmoid::new()),
        }
    }
}

/// A classifier: inputs `[n, features]` (rows of pixels for the CNN) to logits `[n, classes]`.
/// As a module it is its network (`transparent`): the parameters keep the `Sequential`'s names.
#[derive(Debug, Module)]
#[module(transparent)]
pub(crate) struct Model {
    net: Sequential,
    /// The shape of one example as the network takes it (`[features]`, or `[1, side, side]`).
    #[module(skip)]
    example_shape: Vec<usize>,
    /// "MLP 64-128-64-10 (relu)", "CNN 8x8, 3x3 convs 32-64, 10 classes".
    #[module(skip)]
    description: String,
    /// The MLP's activation (`None` for the CNN): `net` is `hidden_blocks` pairs (linear,
    /// activation) then the output layer.
    #[module(skip)]
    activation: Option<Activation>,
    #[module(skip)]
    hidden_blocks: usize,
    /// `--activation-checkpoint`.
    #[module(skip)]
    activation_checkpoint: ActivationCheckpoint,
}

/// Seeds the global generator with `seed` and holds it until the guard drops, so that a model
/// built meanwhile has the same weights whatever other threads (the unit tests) build.
fn seeded(seed: u64) -> std::sync::MutexGuard<'static, ()> {
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = BUILDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    autograd::manual_seed(seed);
    guard
}

impl Model {
    /// The MLP `sizes[0] → sizes[1] → … → sizes[last]` (logits), `activation` after each layer
    /// but the last, PyTorch's default initialisation after `manual_seed(seed)` (the weights
    /// `torch.manual_seed(seed)` then the same `nn.Sequential` gives), f32 on `device`.
    pub(crate) fn mlp(
        sizes: &[usize],
        activation: Activation,
        seed: u64,
        device: Device,
    ) -> Result<Model> {
        let _seeded = seeded(seed);
        let mut net = Sequential::new();
        let layers = sizes.len().saturating_sub(1);
        for (i, pair) in sizes.windows(2).enumerate() {
            net.push(Box::new(Linear::new(pair[0], pair[1])?));
            if i + 1 < layers {
                net.push(activation.layer());
            }
        }
        let arch: Vec<String> = sizes.iter().map(usize::to_string).collect();
        let name = format!("{activation:?}").to_lowercase();
        let mut model = Model::on(
            net,
            vec![sizes[0]],
            format!("MLP {} ({name})", arch.join("-")),
            device,
        )?;
        model.activation = Some(activation);
        model.hidden_blocks = layers.saturating_sub(1);
        Ok(model)
    }

    /// The CNN for `features` = side × side single-channel images and `classes` outputs,
    /// initialised after `manual_seed(seed)`.
    pub(crate) fn cnn(features: usize, classes: usize, seed: u64, device: Device) -> Result<Model> {
        let _seeded = seeded(seed);
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
            .add(Conv2d::new(1, c1, 3)?.padding(1))
            .add(Relu::new())
            .add(MaxPool2d::new(2))
            .add(Conv2d::new(c1, c2, 3)?.padding(1))
            .add(Relu::new())
            .add(MaxPool2d::new(2))
            .add(Flatten::new())
            .add(Linear::new(c2 * pooled * pooled, classes)?);
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
            activation: None,
            hidden_blocks: 0,
            activation_checkpoint: ActivationCheckpoint::None,
        })
    }

    /// Checkpoints each hidden block of the MLP in the training forward (`--activation-checkpoint`).
    ///
    /// # Errors
    ///
    /// For the CNN and any mode but `none`: only the MLP's blocks are wrapped.
    pub(crate) fn set_activation_checkpoint(&mut self, mode: ActivationCheckpoint) -> Result<()> {
        if self.activation.is_none() && mode != ActivationCheckpoint::None {
            return Err(autograd::Error::msg(
                "--activation-checkpoint is implemented for --model mlp only (its hidden \
                 blocks); use --activation-checkpoint none with --model cnn",
            ));
        }
        self.activation_checkpoint = mode;
        Ok(())
    }

    /// The MLP's forward with each hidden block (linear + activation) inside
    /// [`checkpoint`], one region per block, then the output layer as usual.
    fn forward_checkpointed(
        &self,
        x: &Tensor,
        activation: Activation,
        use_reentrant: bool,
    ) -> Result<Tensor> {
        // The reentrant variant records a block only if one of its inputs requires grad
        // (otherwise its parameters get no gradient, as in PyTorch); the data does not, so the
        // first block gets a leaf view of it that does (its gradient is computed and dropped).
        let mut h = if use_reentrant && !x.requires_grad() {
            x.detach().requires_grad_(true)?
        } else {
            x.clone()
        };
        for block in 0..self.hidden_blocks {
            // The region owns what it calls: a `Linear` over handles of the same parameters
            // (cloning a Tensor shares it), and the activation.
            let params = self.net[2 * block].parameters();
            let linear = Linear::from_parts(params[0].clone(), params.get(1).cloned())?;
            let act = activation.layer();
            let region = move |xs: &[Tensor]| Ok(vec![act.forward(&linear.forward(&xs[0])?)?]);
            let options = CheckpointOptions::new().use_reentrant(use_reentrant);
            h = checkpoint(region, &[h], options)?.remove(0);
        }
        for layer in self.net.iter().skip(2 * self.hidden_blocks) {
            h = layer.forward(&h)?;
        }
        Ok(h)
    }

    /// What the network is, for the run's header and plot title.
    pub(crate) fn description(&self) -> &str {
        &self.description
    }
}

impl Forward for Model {
    /// Logits `[n, classes]` of inputs `[n, features]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut shape = vec![x.shape()[0]];
        shape.extend(&self.example_shape);
        let x = x.reshape(&shape)?;
        // Checkpointing saves memory only where a graph is recorded: evaluation under
        // `no_grad` runs the plain network.
        let use_reentrant = match self.activation_checkpoint {
            ActivationCheckpoint::None => None,
            ActivationCheckpoint::Reentrant => Some(true),
            ActivationCheckpoint::NonReentrant => Some(false),
        };
        match (use_reentrant, self.activation) {
            (Some(use_reentrant), Some(activation)) if is_grad_enabled() => {
                self.forward_checkpointed(&x, activation, use_reentrant)
            }
            _ => self.net.forward(&x),
        }
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

    /// Checkpointing is in effect: a training forward saves fewer tensors outside the
    /// checkpointed blocks (counted by saved-tensor hooks around it), and the gradients are the
    /// plain network's bit for bit.
    #[test]
    fn activation_checkpoint_saves_less_and_computes_the_same_gradients() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        let x = Tensor::randn_seeded(&[6, 5], DType::F32, 2).unwrap();
        let run = |mode| {
            let mut mlp = Model::mlp(&[5, 7, 6, 3], Activation::Tanh, 1, Device::Cpu).unwrap();
            mlp.set_activation_checkpoint(mode).unwrap();
            let packs = Arc::new(AtomicUsize::new(0));
            let p = packs.clone();
            let y = {
                // Relaxed: a plain counter read after the forward, on this thread.
                let _hooks = autograd::saved_tensors_hooks(
                    move |t: &Tensor| {
                        p.fetch_add(1, Ordering::Relaxed);
                        t.clone()
                    },
                    |t: &Tensor| t.clone(),
                );
                mlp.forward(&x).unwrap()
            };
            y.sum().unwrap().backward().unwrap();
            let grads: Vec<Vec<f32>> = mlp
                .parameters()
                .iter()
                .map(|p| p.grad().unwrap().to_vec::<f32>().unwrap())
                .collect();
            (packs.load(Ordering::Relaxed), grads)
        };
        let (plain_packs, plain) = run(ActivationCheckpoint::None);
        let (reentrant_packs, reentrant) = run(ActivationCheckpoint::Reentrant);
        let (non_reentrant_packs, non_reentrant) = run(ActivationCheckpoint::NonReentrant);
        assert_eq!(reentrant, plain);
        assert_eq!(non_reentrant, plain);
        // Plain: the first matmul saves its input (the data needs no gradient), each tanh its
        // result, the other two matmuls both operands: 1 + 1 + 2 + 1 + 2. Checkpointed, the
        // blocks' own saved tensors are not among these (measured: 4 either way).
        assert_eq!(plain_packs, 7);
        assert!(
            reentrant_packs < plain_packs && non_reentrant_packs < plain_packs,
            "packs: plain {plain_packs}, reentrant {reentrant_packs}, non-reentrant \
             {non_reentrant_packs}"
        );
        // The CNN refuses it.
        let mut cnn = Model::cnn(64, 10, 3, Device::Cpu).unwrap();
        let err = cnn
            .set_activation_checkpoint(ActivationCheckpoint::Reentrant)
            .unwrap_err();
        assert!(err.to_string().contains("--model mlp only"), "{err}");
        cnn.set_activation_checkpoint(ActivationCheckpoint::None)
            .unwrap();
    }

    #[test]
    fn activations_differ_and_init_is_seeded() {
        let x = Tensor::randn_seeded(&[3, 4], DType::F32, 9).unwrap();
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
