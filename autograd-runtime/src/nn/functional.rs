//! Layers as functions (PyTorch's `torch.nn.functional`): losses, activations, dropout,
//! normalisation, convolution and pooling on plain tensors, for models written without modules.

pub use super::activation::{gelu, leaky_relu, log_softmax, relu, softmax};
pub use super::adaptive_pool::adaptive_avg_pool2d;
pub use super::attention::{
    MultiHeadAttentionOptions, multi_head_attention_forward, scaled_dot_product_attention,
};
pub use super::conv::conv2d;
pub use super::conv_transpose::conv_transpose2d;
pub use super::conv1d::conv1d;
pub use super::dropout::{dropout, dropout_with};
pub use super::layer_norm::layer_norm;
pub use super::linear::linear;
pub use super::loss::{
    BceWithLogitsOptions, CrossEntropyOptions, NllLossOptions, Reduction,
    binary_cross_entropy_with_logits, cross_entropy, cross_entropy_tensor, mse_loss, nll_loss,
    nll_loss_tensor,
};
pub use super::norm::{batch_norm, group_norm, rms_norm};
pub use super::pointwise::{celu, elu, hardtanh, mish, relu6, selu, sigmoid, silu, softplus, tanh};
pub use super::pool::{avg_pool2d, max_pool2d};
pub use super::rnn_cell::{gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell};
pub use super::upsample::interpolate;
