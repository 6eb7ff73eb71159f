//! PyTorch's transformer layers, `TransformerEncoderLayer` and `TransformerDecoderLayer`, with
//! PyTorch's children, names, initialisation and standard (non-fused) computation, and what
//! they share with the stacks of `transformer_stack.rs` (configuration, forward options, masks).

use std::fmt;
use std::str::FromStr;

use super::activation::{GeluApproximate, gelu, relu};
pub(super) use super::attention::canonical_mask;
use super::multihead_attention::{
    MultiheadAttention, MultiheadAttentionConfig, MultiheadAttentionForwardOptions,
    copy_state_from, linear_layer,
};
use super::{Dropout, Forward, LayerNorm, Linear, Module};
use crate::{DType, Error, Result, Tensor};

/// The activation of a transformer layer's feed-forward block (PyTorch's `activation="relu"` or
/// `"gelu"`, the exact erf GELU). Parses from PyTorch's strings.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::Activation;
/// assert_eq!("gelu".parse::<Activation>()?, Activation::Gelu);
/// let err = "tanh".parse::<Activation>().unwrap_err();
/// assert_eq!(err.to_string(), "activation should be relu/gelu, not tanh");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Activation {
    /// `F.relu` (PyTorch's default).
    #[default]
    Relu,
    /// `F.gelu` (exact, with `erf`).
    Gelu,
}

impl Activation {
    fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Activation::Relu => relu(x),
            Activation::Gelu => gelu(x, GeluApproximate::None),
        }
    }
}

impl FromStr for Activation {
    type Err = Error;

    fn from_str(s: &str) -> Result<Activation> {
        match s {
            "relu" => Ok(Activation::Relu),
            "gelu" => Ok(Activation::Gelu),
            other => Err(Error::InvalidArgument(format!(
                "activation should be relu/gelu, not {other}"
            ))),
        }
    }
}

impl fmt::Display for Activation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Activation::Relu => "relu",
            Activation::Gelu => "gelu",
        })
    }
}

/// The construction options of [`TransformerEncoderLayer`] and [`TransformerDecoderLayer`]
/// besides `d_model` and `nhead`: PyTorch's keyword arguments with its defaults ([`Default`]):
/// `dim_feedforward=2048, dropout=0.1, activation=relu, layer_norm_eps=1e-5, batch_first=False,
/// norm_first=False, bias=True`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Activation, TransformerLayerConfig};
/// let cfg = TransformerLayerConfig { dim_feedforward: 64, activation: Activation::Gelu, norm_first: true, ..Default::default() };
/// assert_eq!(cfg.dropout, 0.1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransformerLayerConfig {
    /// The hidden size of the feed-forward block (default 2048).
    pub dim_feedforward: usize,
    /// The dropout probability everywhere in the layer, the attention weights included (default
    /// 0.1).
    pub dropout: f64,
    /// The feed-forward activation (default ReLU).
    pub activation: Activation,
    /// The layer norms' `eps` (default 1e-5).
    pub layer_norm_eps: f64,
    /// Inputs and outputs are `[N, L, E]` instead of `[L, N, E]` (default false).
    pub batch_first: bool,
    /// Pre-norm: each block normalises its input, instead of the sum (default false).
    pub norm_first: bool,
    /// Biases in the linear layers, the attention and the layer norms (default true).
    pub bias: bool,
}

impl Default for TransformerLayerConfig {
    fn default() -> TransformerLayerConfig {
        TransformerLayerConfig {
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: Activation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
        }
    }
}

/// The arguments of [`TransformerEncoderLayer::forward`] and [`TransformerEncoder::forward`](super::TransformerEncoder::forward)
/// besides `src`, with PyTorch's defaults ([`Default`]: no masks, `is_causal` unset).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::EncoderForwardOptions;
/// let opts = EncoderForwardOptions::default();
/// assert!(opts.src_mask.is_none() && opts.is_causal.is_none());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct EncoderForwardOptions<'a> {
    /// `[S, S]` or `[N·nhead, S, S]`: the self-attention mask (PyTorch's `src_mask`, the
    /// stack's `mask`): bool, true = may **not** attend, or float, added to the scores.
    pub src_mask: Option<&'a Tensor>,
    /// `[N, S]` (`[S]` unbatched): true (or a float added) for padding keys.
    pub src_key_padding_mask: Option<&'a Tensor>,
    /// The hint that `src_mask` is the causal mask. `None`: for the layer, false (PyTorch's
    /// default); for the stack, detected by comparing `src_mask` with the causal mask (PyTorch's
    /// `_detect_is_causal_mask`).
    pub is_causal: Option<bool>,
}

/// The arguments of [`TransformerDecoderLayer::forward`] and [`TransformerDecoder::forward`](super::TransformerDecoder::forward)
/// besides `tgt` and `memory`, with PyTorch's defaults ([`Default`]).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::DecoderForwardOptions;
/// let opts = DecoderForwardOptions::default();
/// assert!(opts.tgt_mask.is_none() && !opts.memory_is_causal);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DecoderForwardOptions<'a> {
    /// `[T, T]` or `[N·nhead, T, T]`: the self-attention mask.
    pub tgt_mask: Option<&'a Tensor>,
    /// `[T, S]` or `[N·nhead, T, S]`: the mask over the memory.
    pub memory_mask: Option<&'a Tensor>,
    /// `[N, T]`: padding in the target.
    pub tgt_key_padding_mask: Option<&'a Tensor>,
    /// `[N, S]`: padding in the memory.
    pub memory_key_padding_mask: Option<&'a Tensor>,
    /// The hint that `tgt_mask` is the causal mask. `None`: for the layer, false; for the
    /// stack, detected from `tgt_mask`.
    pub tgt_is_causal: Option<bool>,
    /// The hint that `memory_mask` is the causal mask (default false).
    pub memory_is_causal: bool,
}

/// PyTorch's `_get_seq_len`: the sequence length of a `[S, E]`, `[S, N, E]` or `[N, S, E]`
/// input.
pub(super) fn seq_len(src: &Tensor, batch_first: bool) -> Option<usize> {
    if src.ndim() == 2 {
        Some(src.shape()[0])
    } else {
        src.shape().get(usize::from(batch_first)).copied()
    }
}

/// PyTorch's `_detect_is_causal_mask`: the hint when given; otherwise whether `mask` equals
/// the causal mask of the sequence (`-inf` above the diagonal and 0 elsewhere, in the mask's
/// dtype; for a bool mask, true above the diagonal).
pub(super) fn detect_is_causal_mask(
    mask: Option<&Tensor>,
    is_causal: Option<bool>,
    size: Option<usize>,
) -> Result<bool> {
    if let Some(hint) = is_causal {
        return Ok(hint);
    }
    let Some(mask) = mask else { return Ok(false) };
    let sz = match size {
        Some(s) => s,
        None if mask.ndim() >= 2 => mask.shape()[mask.ndim() - 2],
        None => return Ok(false),
    };
    if mask.shape() != [sz, sz] {
        return Ok(false);
    }
    let causal = if mask.dtype() == DType::Bool {
        Tensor::ones(&[sz, sz], DType::Bool)?.triu(1)?
    } else {
        Tensor::full(&[sz, sz], f64::NEG_INFINITY, mask.dtype())?.triu(1)?
    };
    let same = mask.eq(&causal.to(mask.device())?)?.all()?;
    same.item::<bool>()
}

/// The layer norm of a transformer layer: over `d_model`, PyTorch's `bias=bias`.
fn norm(d_model: usize, config: &TransformerLayerConfig) -> Result<LayerNorm> {
    LayerNorm::with_bias(&[d_model], config.layer_norm_eps, true, config.bias)
}

fn attention(
    d_model: usize,
    nhead: usize,
    config: &TransformerLayerConfig,
    draw: bool,
) -> Result<MultiheadAttention> {
    let cfg = MultiheadAttentionConfig {
        dropout: config.dropout,
        bias: config.bias,
        batch_first: config.batch_first,
        ..MultiheadAttentionConfig::default()
    };
    MultiheadAttention::build(d_model, nhead, cfg, draw)
}

/// `linear2(dropout(activation(linear1(x))))`, then the block's dropout (PyTorch's
/// `_ff_block`).
fn feed_forward(
    x: &Tensor,
    linear1: &Linear,
    dropout: &Dropout,
    linear2: &Linear,
    activation: Activation,
    out_dropout: &Dropout,
) -> Result<Tensor> {
    let h = dropout.forward(&activation.apply(&linear1.forward(x)?)?)?;
    out_dropout.forward(&linear2.forward(&h)?)
}

/// PyTorch's `_sa_block` / `_mha_block`: `dropout(attn(query, kv, kv))`, without weights.
fn attention_block(
    attn: &MultiheadAttention,
    dropout: &Dropout,
    query: &Tensor,
    kv: &Tensor,
    key_padding_mask: Option<&Tensor>,
    attn_mask: Option<&Tensor>,
    is_causal: bool,
) -> Result<Tensor> {
    let opts = MultiheadAttentionForwardOptions {
        key_padding_mask,
        need_weights: false,
        attn_mask,
        is_causal,
        ..MultiheadAttentionForwardOptions::default()
    };
    dropout.forward(&attn.forward(query, kv, kv, &opts)?.0)
}

/// A sub-block of a layer (`_sa_block`, `_mha_block`, `_ff_block`) with the norm after it.
type Residual<'a> = (&'a LayerNorm, &'a dyn Fn(&Tensor) -> Result<Tensor>);

/// The layers' residual connections, block after block: `x + block(norm(x))` with
/// `norm_first`, `norm(x + block(x))` otherwise (post-norm).
fn residuals(x: &Tensor, norm_first: bool, blocks: &[Residual<'_>]) -> Result<Tensor> {
    let mut x = x.clone();
    for (norm, block) in blocks {
        x = if norm_first {
            x.add(&block(&norm.forward(&x)?)?)?
        } else {
            norm.forward(&x.add(&block(&x)?)?)?
        };
    }
    Ok(x)
}

/// One transformer encoder layer (PyTorch's `nn.TransformerEncoderLayer`): self-attention,
/// then a feed-forward block (`linear2(dropout(activation(linear1(x))))`), each with dropout, a
/// residual connection and a layer norm: after the sum (post-norm, the default) or on the
/// block's input (`norm_first`).
///
/// Children as PyTorch's, in its order: `self_attn` ([`MultiheadAttention`]), `linear1`,
/// `dropout`, `linear2`, `norm1`, `norm2`, `dropout1`, `dropout2`; so the state dict and the
/// `repr` are PyTorch's, and after [`manual_seed`](crate::manual_seed) the initial weights are
/// too. The computation is PyTorch's standard path; its fused fast path (evaluation, no grad)
/// computes the same values.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{EncoderForwardOptions, Module, TransformerEncoderLayer, TransformerLayerConfig};
/// use autograd_runtime::{DType, Tensor, manual_seed};
/// manual_seed(0);
/// let cfg = TransformerLayerConfig { dim_feedforward: 32, batch_first: true, ..Default::default() };
/// let mut layer = TransformerEncoderLayer::with_config(16, 4, cfg)?;
/// layer.eval();
/// let src = Tensor::randn_seeded(&[2, 10, 16], DType::F32, 1)?; // [N, S, E]
/// let y = layer.forward(&src, &EncoderForwardOptions::default())?;
/// assert_eq!(y.shape(), &[2, 10, 16]);
/// assert_eq!(layer.state_dict().len(), 12);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
pub struct TransformerEncoderLayer {
    self_attn: MultiheadAttention,
    linear1: Linear,
    dropout: Dropout,
    linear2: Linear,
    norm1: LayerNorm,
    norm2: LayerNorm,
    dropout1: Dropout,
    dropout2: Dropout,
    #[module(skip)]
    d_model: usize,
    #[module(skip)]
    nhead: usize,
    #[module(skip)]
    config: TransformerLayerConfig,
    #[module(training)]
    training: bool,
}

impl TransformerEncoderLayer {
    /// PyTorch's `nn.TransformerEncoderLayer(d_model, nhead)` with its defaults.
    ///
    /// # Errors
    ///
    /// As [`with_config`](TransformerEncoderLayer::with_config).
    pub fn new(d_model: usize, nhead: usize) -> Result<TransformerEncoderLayer> {
        TransformerEncoderLayer::with_config(d_model, nhead, TransformerLayerConfig::default())
    }

    /// With PyTorch's keyword arguments.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] with PyTorch's messages: [`MultiheadAttention`]'s (`embed_dim
    /// must be divisible by num_heads`), `dropout probability has to be between 0 and 1, but
    /// got 1.5`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{TransformerEncoderLayer, TransformerLayerConfig};
    /// let cfg = TransformerLayerConfig { dropout: 1.5, ..Default::default() };
    /// let err = TransformerEncoderLayer::with_config(8, 2, cfg).unwrap_err();
    /// assert_eq!(err.to_string(), "dropout probability has to be between 0 and 1, but got 1.5");
    /// ```
    pub fn with_config(
        d_model: usize,
        nhead: usize,
        config: TransformerLayerConfig,
    ) -> Result<TransformerEncoderLayer> {
        TransformerEncoderLayer::build(d_model, nhead, config, true)
    }

    fn build(
        d_model: usize,
        nhead: usize,
        config: TransformerLayerConfig,
        draw: bool,
    ) -> Result<TransformerEncoderLayer> {
        let self_attn = attention(d_model, nhead, &config, draw)?;
        let linear1 = linear_layer(d_model, config.dim_feedforward, config.bias, draw)?;
        let dropout = Dropout::new(config.dropout)?;
        let linear2 = linear_layer(config.dim_feedforward, d_model, config.bias, draw)?;
        Ok(TransformerEncoderLayer {
            self_attn,
            linear1,
            dropout,
            linear2,
            norm1: norm(d_model, &config)?,
            norm2: norm(d_model, &config)?,
            dropout1: Dropout::new(config.dropout)?,
            dropout2: Dropout::new(config.dropout)?,
            d_model,
            nhead,
            config,
            training: true,
        })
    }

    /// A copy with its own parameters and the same mode (PyTorch's `copy.deepcopy`), drawing
    /// nothing from the generator.
    pub(super) fn deep_copy(&self) -> Result<TransformerEncoderLayer> {
        let mut copy =
            TransformerEncoderLayer::build(self.d_model, self.nhead, self.config, false)?;
        copy_state_from(&mut copy, self)?;
        Ok(copy)
    }

    /// The configuration the layer was built with.
    pub fn config(&self) -> TransformerLayerConfig {
        self.config
    }

    /// The self-attention (`self_attn`).
    pub fn self_attn(&self) -> &MultiheadAttention {
        &self.self_attn
    }

    /// PyTorch's `forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)`:
    /// `src` `[S, N, E]` (`[N, S, E]` with `batch_first`, `[S, E]` unbatched) to the same shape.
    ///
    /// # Errors
    ///
    /// PyTorch's messages as [`Error::InvalidArgument`]: `only bool and floating types of
    /// src_key_padding_mask are supported` (and of `src_mask`), and those of
    /// [`MultiheadAttention::forward`] and [`LayerNorm`].
    pub fn forward(&self, src: &Tensor, options: &EncoderForwardOptions<'_>) -> Result<Tensor> {
        let dtype = src.dtype();
        let kpm = canonical_mask(options.src_key_padding_mask, "src_key_padding_mask", dtype)?;
        let mask = canonical_mask(options.src_mask, "src_mask", dtype)?;
        let is_causal = options.is_causal.unwrap_or(false);
        let sa_block = |x: &Tensor| {
            let (kpm, mask) = (kpm.as_ref(), mask.as_ref());
            attention_block(&self.self_attn, &self.dropout1, x, x, kpm, mask, is_causal)
        };
        let ff_block = |x: &Tensor| {
            feed_forward(
                x,
                &self.linear1,
                &self.dropout,
                &self.linear2,
                self.config.activation,
                &self.dropout2,
            )
        };
        residuals(
            src,
            self.config.norm_first,
            &[(&self.norm1, &sa_block), (&self.norm2, &ff_block)],
        )
    }
}

/// One transformer decoder layer (PyTorch's `nn.TransformerDecoderLayer`): self-attention over
/// the target, attention over the memory (the encoder's output), and a feed-forward block, each
/// with dropout, a residual connection and a layer norm (post-norm, or `norm_first`).
///
/// Children as PyTorch's, in its order: `self_attn`, `multihead_attn`, `linear1`, `dropout`,
/// `linear2`, `norm1`, `norm2`, `norm3`, `dropout1`, `dropout2`, `dropout3`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{DecoderForwardOptions, TransformerDecoderLayer, TransformerLayerConfig};
/// use autograd_runtime::{DType, Tensor};
/// let cfg = TransformerLayerConfig { dim_feedforward: 32, ..Default::default() };
/// let layer = TransformerDecoderLayer::with_config(16, 4, cfg)?;
/// let tgt = Tensor::randn_seeded(&[7, 2, 16], DType::F32, 0)?; // [T, N, E]
/// let memory = Tensor::randn_seeded(&[10, 2, 16], DType::F32, 1)?; // [S, N, E]
/// let y = layer.forward(&tgt, &memory, &DecoderForwardOptions::default())?;
/// assert_eq!(y.shape(), &[7, 2, 16]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
pub struct TransformerDecoderLayer {
    self_attn: MultiheadAttention,
    multihead_attn: MultiheadAttention,
    linear1: Linear,
    dropout: Dropout,
    linear2: Linear,
    norm1: LayerNorm,
    norm2: LayerNorm,
    norm3: LayerNorm,
    dropout1: Dropout,
    dropout2: Dropout,
    dropout3: Dropout,
    #[module(skip)]
    d_model: usize,
    #[module(skip)]
    nhead: usize,
    #[module(skip)]
    config: TransformerLayerConfig,
    #[module(training)]
    training: bool,
}

impl TransformerDecoderLayer {
    /// PyTorch's `nn.TransformerDecoderLayer(d_model, nhead)` with its defaults.
    ///
    /// # Errors
    ///
    /// As [`with_config`](TransformerDecoderLayer::with_config).
    pub fn new(d_model: usize, nhead: usize) -> Result<TransformerDecoderLayer> {
        TransformerDecoderLayer::with_config(d_model, nhead, TransformerLayerConfig::default())
    }

    /// With PyTorch's keyword arguments.
    ///
    /// # Errors
    ///
    /// As [`TransformerEncoderLayer::with_config`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Module, TransformerDecoderLayer, TransformerLayerConfig};
    /// let cfg = TransformerLayerConfig { dim_feedforward: 8, bias: false, ..Default::default() };
    /// let layer = TransformerDecoderLayer::with_config(4, 2, cfg)?;
    /// let keys: Vec<String> = layer.state_dict().keys().map(String::from).collect();
    /// assert_eq!(keys[..3], ["self_attn.in_proj_weight", "self_attn.out_proj.weight", "multihead_attn.in_proj_weight"]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_config(
        d_model: usize,
        nhead: usize,
        config: TransformerLayerConfig,
    ) -> Result<TransformerDecoderLayer> {
        TransformerDecoderLayer::build(d_model, nhead, config, true)
    }

    fn build(
        d_model: usize,
        nhead: usize,
        config: TransformerLayerConfig,
        draw: bool,
    ) -> Result<TransformerDecoderLayer> {
        let self_attn = attention(d_model, nhead, &config, draw)?;
        let multihead_attn = attention(d_model, nhead, &config, draw)?;
        let linear1 = linear_layer(d_model, config.dim_feedforward, config.bias, draw)?;
        let dropout = Dropout::new(config.dropout)?;
        let linear2 = linear_layer(config.dim_feedforward, d_model, config.bias, draw)?;
        Ok(TransformerDecoderLayer {
            self_attn,
            multihead_attn,
            linear1,
            dropout,
            linear2,
            norm1: norm(d_model, &config)?,
            norm2: norm(d_model, &config)?,
            norm3: norm(d_model, &config)?,
            dropout1: Dropout::new(config.dropout)?,
            dropout2: Dropout::new(config.dropout)?,
            dropout3: Dropout::new(config.dropout)?,
            d_model,
            nhead,
            config,
            training: true,
        })
    }

    /// A copy with its own parameters and the same mode (PyTorch's `copy.deepcopy`).
    pub(super) fn deep_copy(&self) -> Result<TransformerDecoderLayer> {
        let mut copy =
            TransformerDecoderLayer::build(self.d_model, self.nhead, self.config, false)?;
        copy_state_from(&mut copy, self)?;
        Ok(copy)
    }

    /// The configuration the layer was built with.
    pub fn config(&self) -> TransformerLayerConfig {
        self.config
    }

    /// The self-attention (`self_attn`).
    pub fn self_attn(&self) -> &MultiheadAttention {
        &self.self_attn
    }

    /// The attention over the memory (`multihead_attn`).
    pub fn multihead_attn(&self) -> &MultiheadAttention {
        &self.multihead_attn
    }

    /// PyTorch's `forward(tgt, memory, tgt_mask=None, memory_mask=None,
    /// tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=False,
    /// memory_is_causal=False)`: `tgt` `[T, N, E]` and `memory` `[S, N, E]` (batch first with
    /// `batch_first`; `[T, E]` and `[S, E]` unbatched) to `tgt`'s shape.
    ///
    /// # Errors
    ///
    /// Those of [`MultiheadAttention::forward`] (masks named as there) and [`LayerNorm`].
    pub fn forward(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        options: &DecoderForwardOptions<'_>,
    ) -> Result<Tensor> {
        let sa_block = |x: &Tensor| {
            let (kpm, mask) = (options.tgt_key_padding_mask, options.tgt_mask);
            let is_causal = options.tgt_is_causal.unwrap_or(false);
            attention_block(&self.self_attn, &self.dropout1, x, x, kpm, mask, is_causal)
        };
        let mha_block = |x: &Tensor| {
            let (kpm, mask) = (options.memory_key_padding_mask, options.memory_mask);
            let (attn, dropout) = (&self.multihead_attn, &self.dropout2);
            attention_block(
                attn,
                dropout,
                x,
                memory,
                kpm,
                mask,
                options.memory_is_causal,
            )
        };
        let ff_block = |x: &Tensor| {
            feed_forward(
                x,
                &self.linear1,
                &self.dropout,
                &self.linear2,
                self.config.activation,
                &self.dropout3,
            )
        };
        let blocks: [Residual<'_>; 3] = [
            (&self.norm1, &sa_block),
            (&self.norm2, &mha_block),
            (&self.norm3, &ff_block),
        ];
        residuals(tgt, self.config.norm_first, &blocks)
    }
}
