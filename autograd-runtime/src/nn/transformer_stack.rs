//! The transformer stacks, PyTorch's `TransformerEncoder` and `TransformerDecoder`: copies of one
//! layer (PyTorch's `_get_clones`) and an optional final norm. The layers are in `transformer.rs`.

use super::transformer::{
    DecoderForwardOptions, EncoderForwardOptions, TransformerDecoderLayer, TransformerEncoderLayer,
    canonical_mask, detect_is_causal_mask, seq_len,
};
use super::{Forward, LayerNorm, Module};
use crate::{Error, Result, Tensor};

/// PyTorch's `_get_clones`: `num_layers` deep copies of `layer` (each its own parameters, all
/// starting from `layer`'s values), drawing nothing.
fn clones<M>(layer: M, num_layers: usize, copy: fn(&M) -> Result<M>) -> Result<Vec<M>> {
    let mut layers = Vec::with_capacity(num_layers);
    for _ in 1..num_layers {
        layers.push(copy(&layer)?);
    }
    if num_layers > 0 {
        // The last copy can be the layer itself: nothing else holds it.
        layers.push(layer);
    }
    Ok(layers)
}

/// The stacks' forward: `is_causal` as PyTorch's `_detect_is_causal_mask` reads it off `mask`
/// (the sequence length from `input` and the first layer's `batch_first`), then each layer
/// (`layer(l, x, is_causal)`) and the final norm.
fn run_stack<L>(
    layers: &[L],
    norm: Option<&LayerNorm>,
    input: &Tensor,
    batch_first: fn(&L) -> bool,
    (mask, is_causal): (Option<&Tensor>, Option<bool>),
    layer: impl Fn(&L, &Tensor, bool) -> Result<Tensor>,
) -> Result<Tensor> {
    let Some(first) = layers.first() else {
        return Err(Error::InvalidArgument("index 0 is out of range".into()));
    };
    let len = seq_len(input, batch_first(first));
    let is_causal = detect_is_causal_mask(mask, is_causal, len)?;
    let mut output = input.clone();
    for l in layers {
        output = layer(l, &output, is_causal)?;
    }
    match norm {
        Some(norm) => norm.forward(&output),
        None => Ok(output),
    }
}

/// A stack of `num_layers` encoder layers and an optional final norm (PyTorch's
/// `nn.TransformerEncoder`). As PyTorch's `_get_clones`, the layers are copies of the layer
/// given: they start with the same weights and are trained separately. The state dict is
/// PyTorch's (`layers.0.self_attn.in_proj_weight`, .., `norm.weight`).
///
/// The computation is PyTorch's standard path. (PyTorch's nested-tensor fast path, taken in
/// evaluation without grad with a key padding mask, gives zeros at padded positions instead;
/// the other positions agree.)
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{EncoderForwardOptions, LayerNorm, Module, TransformerEncoder, TransformerEncoderLayer, TransformerLayerConfig};
/// use autograd_runtime::{DType, Tensor};
/// let cfg = TransformerLayerConfig { dim_feedforward: 16, ..Default::default() };
/// let layer = TransformerEncoderLayer::with_config(8, 2, cfg)?;
/// let encoder = TransformerEncoder::new(layer, 3, Some(LayerNorm::new(&[8])?))?;
/// let sd = encoder.state_dict();
/// assert_eq!(sd.len(), 3 * 12 + 2);
/// // All layers start alike.
/// assert_eq!(
///     sd.get("layers.0.linear1.weight").unwrap().to_vec::<f32>()?,
///     sd.get("layers.2.linear1.weight").unwrap().to_vec::<f32>()?,
/// );
/// let src = Tensor::randn_seeded(&[5, 2, 8], DType::F32, 0)?;
/// assert_eq!(encoder.forward(&src, &EncoderForwardOptions::default())?.shape(), &[5, 2, 8]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
pub struct TransformerEncoder {
    layers: Vec<TransformerEncoderLayer>,
    norm: Option<LayerNorm>,
    #[module(training)]
    training: bool,
}

impl TransformerEncoder {
    /// PyTorch's `nn.TransformerEncoder(encoder_layer, num_layers, norm=None)`: `num_layers`
    /// copies of `encoder_layer` (with its mode), then `norm` on the output when given.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(
        encoder_layer: TransformerEncoderLayer,
        num_layers: usize,
        norm: Option<LayerNorm>,
    ) -> Result<TransformerEncoder> {
        Ok(TransformerEncoder {
            layers: clones(
                encoder_layer,
                num_layers,
                TransformerEncoderLayer::deep_copy,
            )?,
            norm,
            training: true,
        })
    }

    /// The layers.
    pub fn layers(&self) -> &[TransformerEncoderLayer] {
        &self.layers
    }

    /// The final norm, if any.
    pub fn norm(&self) -> Option<&LayerNorm> {
        self.norm.as_ref()
    }

    /// PyTorch's `forward(src, mask=None, src_key_padding_mask=None, is_causal=None)`: the
    /// layers in turn, then the norm. Without an `is_causal` hint, a `src_mask` equal to the
    /// causal mask is detected as causal (PyTorch's `_detect_is_causal_mask`).
    ///
    /// # Errors
    ///
    /// `index 0 is out of range` for a stack of no layers (PyTorch's), and those of
    /// [`TransformerEncoderLayer::forward`] (its masks named `mask` and
    /// `src_key_padding_mask`).
    pub fn forward(&self, src: &Tensor, options: &EncoderForwardOptions<'_>) -> Result<Tensor> {
        let dtype = src.dtype();
        let kpm = canonical_mask(options.src_key_padding_mask, "src_key_padding_mask", dtype)?;
        let mask = canonical_mask(options.src_mask, "mask", dtype)?;
        run_stack(
            &self.layers,
            self.norm.as_ref(),
            src,
            |l| l.config().batch_first,
            (mask.as_ref(), options.is_causal),
            |l, x, is_causal| {
                let layer_opts = EncoderForwardOptions {
                    src_mask: mask.as_ref(),
                    src_key_padding_mask: kpm.as_ref(),
                    is_causal: Some(is_causal),
                };
                l.forward(x, &layer_opts)
            },
        )
    }
}

/// A stack of `num_layers` decoder layers and an optional final norm (PyTorch's
/// `nn.TransformerDecoder`), the layers copies of the one given (PyTorch's `_get_clones`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{DecoderForwardOptions, TransformerDecoder, TransformerDecoderLayer, TransformerLayerConfig};
/// use autograd_runtime::{DType, Tensor};
/// let cfg = TransformerLayerConfig { dim_feedforward: 16, dropout: 0.0, ..Default::default() };
/// let decoder = TransformerDecoder::new(TransformerDecoderLayer::with_config(8, 2, cfg)?, 2, None)?;
/// let tgt = Tensor::randn_seeded(&[4, 1, 8], DType::F32, 0)?;
/// let memory = Tensor::randn_seeded(&[6, 1, 8], DType::F32, 1)?;
/// let y = decoder.forward(&tgt, &memory, &DecoderForwardOptions::default())?;
/// assert_eq!(y.shape(), &[4, 1, 8]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
pub struct TransformerDecoder {
    layers: Vec<TransformerDecoderLayer>,
    norm: Option<LayerNorm>,
    #[module(training)]
    training: bool,
}

impl TransformerDecoder {
    /// PyTorch's `nn.TransformerDecoder(decoder_layer, num_layers, norm=None)`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(
        decoder_layer: TransformerDecoderLayer,
        num_layers: usize,
        norm: Option<LayerNorm>,
    ) -> Result<TransformerDecoder> {
        Ok(TransformerDecoder {
            layers: clones(
                decoder_layer,
                num_layers,
                TransformerDecoderLayer::deep_copy,
            )?,
            norm,
            training: true,
        })
    }

    /// The layers.
    pub fn layers(&self) -> &[TransformerDecoderLayer] {
        &self.layers
    }

    /// The final norm, if any.
    pub fn norm(&self) -> Option<&LayerNorm> {
        self.norm.as_ref()
    }

    /// PyTorch's `forward(tgt, memory, tgt_mask=None, memory_mask=None,
    /// tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=None,
    /// memory_is_causal=False)`: the layers in turn, then the norm; without a `tgt_is_causal`
    /// hint, a `tgt_mask` equal to the causal mask is detected as causal.
    ///
    /// # Errors
    ///
    /// `index 0 is out of range` for a stack of no layers, and those of
    /// [`TransformerDecoderLayer::forward`].
    pub fn forward(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        options: &DecoderForwardOptions<'_>,
    ) -> Result<Tensor> {
        run_stack(
            &self.layers,
            self.norm.as_ref(),
            tgt,
            |l| l.config().batch_first,
            (options.tgt_mask, options.tgt_is_causal),
            |l, x, tgt_is_causal| {
                let layer_opts = DecoderForwardOptions {
                    tgt_is_causal: Some(tgt_is_causal),
                    ..*options
                };
                l.forward(x, memory, &layer_opts)
            },
        )
    }
}
