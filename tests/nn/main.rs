//! The training library: `autograd::optim` and `autograd::nn` against the numbers PyTorch
//! recorded (`benches/record_*.py` wrote `tests/nn/data/`), and checkpoints in both directions.

#[path = "../common/mod.rs"]
mod common;

mod checkpoint;
mod conv;
mod conv_layers;
mod derive;
mod functional;
mod hooks;
mod layers;
mod norm_layers;
mod optim;
mod optim_schedulers;
mod repr;
mod rnn_layers;
mod training_modes;
mod transformer_layers;
