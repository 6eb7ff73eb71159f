//! Layers, losses and initialisers: PyTorch's `torch.nn`, in plain Rust.
//!
//! A model is a struct that derives [`Module`] (PyTorch's `nn.Module`): its parameters are
//! ordinary leaf [`Tensor`](crate::Tensor)s that require grad, its children are layers, its
//! [`forward`](Forward::forward) is ordinary differentiable ops, and its
//! [`state_dict`](Module::state_dict) names the parameters and buffers as PyTorch does
//! (`"fc1.weight"`, `"0.bias"`), so a checkpoint saved here loads in PyTorch and the other way
//! round.
//!
//! ```
//! use autograd_runtime::nn::{Forward, Linear, Module};
//! use autograd_runtime::{DType, Result, Tensor, manual_seed};
//!
//! #[derive(Debug, Module)]
//! struct Mlp {
//!     fc1: Linear,
//!     fc2: Linear,
//! }
//!
//! impl Forward for Mlp {
//!     fn forward(&self, x: &Tensor) -> Result<Tensor> {
//!         self.fc2.forward(&self.fc1.forward(x)?.relu()?)
//!     }
//! }
//!
//! manual_seed(0);
//! let mlp = Mlp { fc1: Linear::new(4, 8)?, fc2: Linear::new(8, 3)? };
//! let y = mlp.forward(&Tensor::ones(&[2, 4], DType::F32)?)?;
//! assert_eq!(y.shape(), &[2, 3]);
//! let names: Vec<String> = mlp.named_parameters().into_iter().map(|(n, _)| n).collect();
//! assert_eq!(names, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
//! # Ok::<(), autograd_runtime::Error>(())
//! ```
//!
//! Layers: [`Linear`], [`Sequential`], [`Conv2d`], [`MaxPool2d`], [`AvgPool2d`], [`Flatten`],
//! [`Conv1d`], [`ConvTranspose2d`],
//! [`Embedding`], [`LayerNorm`], [`Dropout`], [`MultiheadAttention`], [`TransformerEncoderLayer`],
//! [`TransformerDecoderLayer`], [`TransformerEncoder`], [`TransformerDecoder`];
//! normalisation [`BatchNorm1d`], [`BatchNorm2d`], [`BatchNorm3d`], [`GroupNorm`], [`RmsNorm`];
//! resampling [`AdaptiveAvgPool2d`], [`Upsample`];
//! recurrent [`Lstm`], [`Gru`], [`Rnn`], [`LstmCell`], [`GruCell`], [`RnnCell`];
//! activations [`Relu`], [`Tanh`], [`Sigmoid`], [`Gelu`], [`LeakyRelu`], [`Softmax`],
//! [`LogSoftmax`], [`Identity`], [`Silu`], [`Mish`], [`Softplus`], [`Hardtanh`], [`Relu6`],
//! [`Elu`], [`Selu`], [`Celu`]. Losses in [`functional`]: `cross_entropy` (label smoothing,
//! ignore index, class weights), `nll_loss`, `mse_loss`, `binary_cross_entropy_with_logits`,
//! and as values that keep their options: [`CrossEntropyLoss`], [`NllLoss`], [`MseLoss`],
//! [`BceWithLogitsLoss`]. Module hooks (forward pre/post, full backward pre/post, in PyTorch's
//! order) on a layer wrapped in [`Hooked`].
//! Initialisers in [`init`]: `uniform_`, `normal_`, `constant_`, `zeros_`, `ones_`,
//! `xavier_uniform_`, `xavier_normal_`, `kaiming_uniform_`, `kaiming_normal_`. Every random draw
//! (initialisation, dropout masks) comes from the global generator as PyTorch's does, so after
//! [`manual_seed`](crate::manual_seed) a model starts from PyTorch's weights.

mod activation;
mod activation_modules;
mod adaptive_pool;
mod attention;
mod batch_norm;
mod conv;
mod conv1d;
mod conv_params;
mod conv_patches;
mod conv_transpose;
mod derive_support;
mod dropout;
mod embedding;
mod flatten;
pub mod functional;
mod group_norm;
mod hooks;
pub mod init;
mod layer_norm;
mod linear;
mod loss;
mod module;
mod module_list;
mod multihead_attention;
mod norm;
mod pointwise;
mod pool;
mod repr;
mod rnn;
mod rnn_cell;
mod sequential;
pub(crate) mod state;
mod transformer;
mod transformer_stack;
mod upsample;

pub use activation::{
    Gelu, GeluApproximate, Identity, LeakyRelu, LogSoftmax, Relu, Sigmoid, Softmax, Tanh,
};
pub use activation_modules::{Celu, Elu, Hardtanh, Mish, Relu6, Selu, Silu, Softplus};
pub use adaptive_pool::AdaptiveAvgPool2d;
pub use batch_norm::{BatchNorm1d, BatchNorm2d, BatchNorm3d};
pub use conv::{Conv2d, Size2};
pub use conv_transpose::ConvTranspose2d;
pub use conv1d::Conv1d;
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use flatten::Flatten;
pub use group_norm::{GroupNorm, RmsNorm};
pub use hooks::{Hooked, ModuleHookHandle};
pub use layer_norm::LayerNorm;
pub use linear::Linear;
pub use loss::{BceWithLogitsLoss, CrossEntropyLoss, MseLoss, NllLoss};
pub use module::{AsModule, Forward, Module};
pub use multihead_attention::{
    MultiheadAttention, MultiheadAttentionConfig, MultiheadAttentionForwardOptions,
};
pub use pool::{AvgPool2d, MaxPool2d};
pub use rnn::{Gru, GruCell, Lstm, LstmCell, Rnn, RnnCell, RnnNonlinearity, RnnOptions};
pub use sequential::Sequential;
pub use state::IncompatibleKeys;
pub(crate) use state::torch_size;
pub use transformer::{
    Activation, DecoderForwardOptions, EncoderForwardOptions, TransformerDecoderLayer,
    TransformerEncoderLayer, TransformerLayerConfig,
};
pub use transformer_stack::{TransformerDecoder, TransformerEncoder};
pub use upsample::{InterpolateMode, Spatial, Upsample};

/// `#[derive(Module)]`: implements [`Module`](trait@Module) from a struct's fields (tensors are
/// parameters, `#[buffer]` tensors buffers, other fields child modules, `#[module(skip)]` fields
/// plain data), with PyTorch's names and `repr`. The same import brings the trait and the
/// derive.
///
/// ```
/// use autograd_runtime::nn::{Forward, Linear, Module};
/// use autograd_runtime::{DType, Result, Tensor};
///
/// #[derive(Debug, Module)]
/// struct Scaled {
///     fc: Linear,
///     scale: Tensor,                  // a parameter
///     #[buffer]
///     calls: Tensor,                  // a buffer, saved in the state dict
///     #[module(skip)]
///     out_features: usize,
/// }
///
/// impl Forward for Scaled {
///     fn forward(&self, x: &Tensor) -> Result<Tensor> {
///         self.fc.forward(x)?.mul(&self.scale)
///     }
/// }
///
/// let model = Scaled {
///     fc: Linear::new(3, 2)?,
///     scale: Tensor::ones(&[2], DType::F32)?.requires_grad_(true)?,
///     calls: Tensor::zeros(&[], DType::I64)?,
///     out_features: 2,
/// };
/// let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
/// assert_eq!(keys, ["scale", "calls", "fc.weight", "fc.bias"]);
/// assert_eq!(model.forward(&Tensor::ones(&[1, 3], DType::F32)?)?.shape(), &[1, model.out_features]);
/// assert_eq!(
///     model.to_string(),
///     "Scaled(\n  (fc): Linear(in_features=3, out_features=2, bias=True)\n)"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub use autograd_macros::Module;

/// Items used by the code `#[derive(Module)]` generates. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use super::derive_support::*;
}
