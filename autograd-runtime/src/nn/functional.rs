//! Layers as functions (PyTorch's `torch.nn.functional`): losses, activations, dropout,
//! normalisation, convolution and pooling on plain tensors, for models written without modules.

pub use super::conv::conv2d;
pub use super::pool::{avg_pool2d, max_pool2d};
