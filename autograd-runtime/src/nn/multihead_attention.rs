//! `MultiheadAttention`: PyTorch's `nn.MultiheadAttention` with the packed input projection
//! (`in_proj_weight`), its initialisation and its state-dict layout, computed by
//! [`multi_head_attention_forward`].

use std::collections::HashMap;

use super::attention::{MultiHeadAttentionOptions, multi_head_attention_forward};
use super::{Linear, Module, init};
use crate::{DType, Error, Result, Tensor};

/// The construction options of [`MultiheadAttention`] besides `embed_dim` and `num_heads`:
/// PyTorch's keyword arguments, with its defaults ([`Default`]).
///
/// PyTorch's `add_bias_kv` and `add_zero_attn` are not supported (they default to off);
/// `kdim`/`vdim` are accepted only when they equal `embed_dim` (PyTorch's packed
/// `in_proj_weight` layout; separate `q/k/v_proj_weight`s are not supported).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{MultiheadAttention, MultiheadAttentionConfig};
/// let cfg = MultiheadAttentionConfig { batch_first: true, dropout: 0.1, ..Default::default() };
/// let mha = MultiheadAttention::with_config(8, 2, cfg)?;
/// assert!(mha.batch_first());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiheadAttentionConfig {
    /// Dropout on the attention weights in training mode (default 0).
    pub dropout: f64,
    /// Biases on the input and output projections (default true).
    pub bias: bool,
    /// The keys' feature size: `None` (default) or `Some(embed_dim)`.
    pub kdim: Option<usize>,
    /// The values' feature size: `None` (default) or `Some(embed_dim)`.
    pub vdim: Option<usize>,
    /// Inputs and outputs are `[N, L, E]` instead of `[L, N, E]` (default false).
    pub batch_first: bool,
}

impl Default for MultiheadAttentionConfig {
    fn default() -> MultiheadAttentionConfig {
        MultiheadAttentionConfig {
            dropout: 0.0,
            bias: true,
            kdim: None,
            vdim: None,
            batch_first: false,
        }
    }
}

/// The arguments of [`MultiheadAttention::forward`] besides the query, key and value, with
/// PyTorch's defaults ([`Default`]): no masks, `need_weights` and `average_attn_weights` true,
/// `is_causal` false.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::MultiheadAttentionForwardOptions;
/// let opts = MultiheadAttentionForwardOptions { need_weights: false, ..Default::default() };
/// assert!(opts.average_attn_weights && opts.attn_mask.is_none());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MultiheadAttentionForwardOptions<'a> {
    /// `[N, S]` (`[S]` unbatched): a bool mask whose **true** entries are keys to ignore
    /// (padding), or a float mask added to the scores.
    pub key_padding_mask: Option<&'a Tensor>,
    /// Return the attention weights as well (default true).
    pub need_weights: bool,
    /// `[L, S]` or `[N·num_heads, L, S]`: a bool mask whose true entries may **not** attend, or
    /// a float mask added to the scores.
    pub attn_mask: Option<&'a Tensor>,
    /// Average the returned weights over the heads (default true).
    pub average_attn_weights: bool,
    /// A hint that `attn_mask` is the causal mask (it requires `attn_mask`).
    pub is_causal: bool,
}

impl Default for MultiheadAttentionForwardOptions<'_> {
    fn default() -> Self {
        MultiheadAttentionForwardOptions {
            key_padding_mask: None,
            need_weights: true,
            attn_mask: None,
            average_attn_weights: true,
            is_causal: false,
        }
    }
}

/// `out_proj`: a [`Linear`] that prints as PyTorch's `NonDynamicallyQuantizableLinear` (the
/// subclass `nn.MultiheadAttention` uses), with `Linear`'s parameters and names.
#[derive(Debug)]
struct OutProj(Linear);

impl Module for OutProj {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.0.named_parameters()
    }

    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        self.0.visit_parameters_mut(f)
    }

    fn set_training(&mut self, training: bool) {
        self.0.set_training(training);
    }

    fn is_training(&self) -> bool {
        self.0.is_training()
    }

    fn repr(&self) -> String {
        let shape = self.0.weight().shape();
        format!(
            "NonDynamicallyQuantizableLinear({})",
            super::repr::linear(shape[1], shape[0], self.0.bias().is_some())
        )
    }
}

/// A `Linear(in_features, out_features)` with or without a bias: initialised as PyTorch's when
/// `draw` (from the global generator), else zeros without a draw (for a copy to overwrite).
pub(crate) fn linear_layer(
    in_features: usize,
    out_features: usize,
    bias: bool,
    draw: bool,
) -> Result<Linear> {
    match (draw, bias) {
        (true, true) => Linear::new(in_features, out_features),
        (true, false) => Linear::no_bias(in_features, out_features),
        (false, _) => {
            let zeros = |shape: &[usize]| Tensor::zeros(shape, DType::F32)?.requires_grad_(true);
            let b = if bias {
                Some(zeros(&[out_features])?)
            } else {
                None
            };
            Linear::from_parts(zeros(&[out_features, in_features])?, b)
        }
    }
}

/// Overwrites `dst`'s parameters with copies of `src`'s of the same names (own storage, the same
/// values, dtype, device and `requires_grad`) and gives it `src`'s mode: the part of PyTorch's
/// `copy.deepcopy(module)` that a module built from the same configuration lacks.
pub(crate) fn copy_state_from(dst: &mut dyn Module, src: &dyn Module) -> Result<()> {
    let params: HashMap<String, Tensor> = src.named_parameters().into_iter().collect();
    dst.visit_parameters_mut(&mut |name, t| {
        let s = params.get(name).ok_or_else(|| {
            Error::InvalidArgument(format!("copy of a module: no parameter named {name}"))
        })?;
        *t = s.detach().copy()?.requires_grad_(s.requires_grad())?;
        Ok(())
    })?;
    dst.set_training(src.is_training());
    Ok(())
}

/// Multi-head attention (PyTorch's `nn.MultiheadAttention`): the query, key and value are
/// projected by the three blocks of `in_proj_weight` `[3E, E]` (and `in_proj_bias` `[3E]`),
/// split into `num_heads` heads, attended to by scaled dot product, merged, and projected by
/// `out_proj` (`[E, E]` and `[E]`). The state dict is PyTorch's: `in_proj_weight`,
/// `in_proj_bias`, `out_proj.weight`, `out_proj.bias`, so PyTorch checkpoints load.
///
/// Initialised as PyTorch's `_reset_parameters`, in its draw order: `out_proj` as a
/// [`Linear`] (its weight, then its bias), then `in_proj_weight` by `xavier_uniform_`, then both
/// biases zeroed; after [`manual_seed`](crate::manual_seed) the parameters are PyTorch's.
///
/// Dropout on the attention weights applies in training mode only (the default mode; see
/// [`Module::eval`]). The computation is PyTorch's standard path
/// ([`multi_head_attention_forward`]); PyTorch's fused fast path (evaluation, no grad) computes
/// the same values.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Module, MultiheadAttention, MultiheadAttentionForwardOptions};
/// use autograd_runtime::{DType, Tensor, manual_seed};
/// manual_seed(0);
/// let mha = MultiheadAttention::new(8, 2)?; // nn.MultiheadAttention(8, 2)
/// let keys: Vec<String> = mha.state_dict().keys().map(String::from).collect();
/// assert_eq!(keys, ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]);
/// let x = Tensor::randn_seeded(&[5, 3, 8], DType::F32, 1)?; // [L, N, E]
/// let opts = MultiheadAttentionForwardOptions::default();
/// let (y, weights) = mha.forward(&x, &x, &x, &opts)?;
/// assert_eq!(y.shape(), &[5, 3, 8]);
/// assert_eq!(weights.unwrap().shape(), &[3, 5, 5]); // averaged over the heads
/// assert_eq!(
///     mha.to_string(),
///     "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, \
///      out_features=8, bias=True)\n)"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
pub struct MultiheadAttention {
    in_proj_weight: Tensor,
    in_proj_bias: Option<Tensor>,
    out_proj: OutProj,
    #[module(skip)]
    embed_dim: usize,
    #[module(skip)]
    num_heads: usize,
    #[module(skip)]
    dropout: f64,
    #[module(skip)]
    batch_first: bool,
    #[module(training)]
    training: bool,
}

impl MultiheadAttention {
    /// PyTorch's `nn.MultiheadAttention(embed_dim, num_heads)`: biases, no dropout,
    /// sequence-first.
    ///
    /// # Errors
    ///
    /// As [`with_config`](MultiheadAttention::with_config).
    pub fn new(embed_dim: usize, num_heads: usize) -> Result<MultiheadAttention> {
        MultiheadAttention::with_config(embed_dim, num_heads, MultiheadAttentionConfig::default())
    }

    /// With PyTorch's keyword arguments (`dropout`, `bias`, `kdim`, `vdim`, `batch_first`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] with PyTorch's messages: `embed_dim and num_heads must be
    /// greater than 0, got embed_dim=0 and num_heads=2 instead`, `embed_dim must be divisible by
    /// num_heads`; and for a `kdim` or `vdim` other than `embed_dim`, which this layer does not
    /// support.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Module, MultiheadAttention, MultiheadAttentionConfig};
    /// let err = MultiheadAttention::new(6, 4).unwrap_err();
    /// assert_eq!(err.to_string(), "embed_dim must be divisible by num_heads");
    /// let cfg = MultiheadAttentionConfig { bias: false, ..Default::default() };
    /// let mha = MultiheadAttention::with_config(4, 2, cfg)?;
    /// assert_eq!(mha.state_dict().len(), 2); // in_proj_weight, out_proj.weight
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_config(
        embed_dim: usize,
        num_heads: usize,
        config: MultiheadAttentionConfig,
    ) -> Result<MultiheadAttention> {
        MultiheadAttention::build(embed_dim, num_heads, config, true)
    }

    /// The layer, its parameters drawn as PyTorch's when `draw`, else zeros (for a copy).
    pub(crate) fn build(
        embed_dim: usize,
        num_heads: usize,
        config: MultiheadAttentionConfig,
        draw: bool,
    ) -> Result<MultiheadAttention> {
        if embed_dim == 0 || num_heads == 0 {
            return Err(Error::InvalidArgument(format!(
                "embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and \
                 num_heads={num_heads} instead"
            )));
        }
        if !embed_dim.is_multiple_of(num_heads) {
            return Err(Error::InvalidArgument(
                "embed_dim must be divisible by num_heads".into(),
            ));
        }
        for (name, dim) in [("kdim", config.kdim), ("vdim", config.vdim)] {
            if let Some(d) = dim
                && d != embed_dim
            {
                return Err(Error::InvalidArgument(format!(
                    "MultiheadAttention: {name}={d} differs from embed_dim={embed_dim}; separate \
                     q/k/v projection weights (kdim/vdim other than embed_dim) are not supported"
                )));
            }
        }
        // PyTorch's order: `out_proj` is built (and draws) before `_reset_parameters`.
        let out_proj = linear_layer(embed_dim, embed_dim, config.bias, draw)?;
        let in_proj_weight = Tensor::zeros(&[3 * embed_dim, embed_dim], DType::F32)?;
        if draw {
            init::xavier_uniform_(&in_proj_weight, 1.0)?;
        }
        let in_proj_bias = if config.bias {
            if let Some(b) = out_proj.bias() {
                init::zeros_(b)?;
            }
            Some(Tensor::zeros(&[3 * embed_dim], DType::F32)?.requires_grad_(true)?)
        } else {
            None
        };
        Ok(MultiheadAttention {
            in_proj_weight: in_proj_weight.requires_grad_(true)?,
            in_proj_bias,
            out_proj: OutProj(out_proj),
            embed_dim,
            num_heads,
            dropout: config.dropout,
            batch_first: config.batch_first,
            training: true,
        })
    }

    /// The configuration the layer was built with.
    pub fn config(&self) -> MultiheadAttentionConfig {
        MultiheadAttentionConfig {
            dropout: self.dropout,
            bias: self.in_proj_bias.is_some(),
            kdim: None,
            vdim: None,
            batch_first: self.batch_first,
        }
    }

    /// The embedding dim `E`.
    pub fn embed_dim(&self) -> usize {
        self.embed_dim
    }

    /// The number of heads.
    pub fn num_heads(&self) -> usize {
        self.num_heads
    }

    /// Whether inputs and outputs are `[N, L, E]`.
    pub fn batch_first(&self) -> bool {
        self.batch_first
    }

    /// `[3E, E]`: the query, key and value projections, stacked.
    pub fn in_proj_weight(&self) -> &Tensor {
        &self.in_proj_weight
    }

    /// `[3E]`, if the layer has biases.
    pub fn in_proj_bias(&self) -> Option<&Tensor> {
        self.in_proj_bias.as_ref()
    }

    /// The output projection (`out_proj`, PyTorch's `NonDynamicallyQuantizableLinear`).
    pub fn out_proj(&self) -> &Linear {
        &self.out_proj.0
    }

    /// PyTorch's `forward(query, key, value, key_padding_mask=None, need_weights=True,
    /// attn_mask=None, average_attn_weights=True, is_causal=False)`: the attention output
    /// `[L, N, E]` (`[N, L, E]` with `batch_first`, `[L, E]` unbatched) and, with
    /// `need_weights`, the attention weights `[N, L, S]` (per head `[N, num_heads, L, S]` without
    /// `average_attn_weights`; unbatched without the `N`).
    ///
    /// # Errors
    ///
    /// PyTorch's messages as [`Error::InvalidArgument`]: `was expecting embedding dimension of
    /// 8, but got 6`, and those of [`multi_head_attention_forward`] (shapes, masks, the
    /// `is_causal` hint without a mask).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{MultiheadAttention, MultiheadAttentionConfig, MultiheadAttentionForwardOptions};
    /// use autograd_runtime::{DType, Tensor};
    /// let cfg = MultiheadAttentionConfig { batch_first: true, ..Default::default() };
    /// let mha = MultiheadAttention::with_config(4, 2, cfg)?;
    /// let q = Tensor::randn_seeded(&[2, 3, 4], DType::F32, 0)?; // [N, L, E]
    /// let kv = Tensor::randn_seeded(&[2, 5, 4], DType::F32, 1)?; // [N, S, E]
    /// let pad = Tensor::from_vec(vec![false, false, false, true, true, false, false, false, false, false], &[2, 5])?;
    /// let opts = MultiheadAttentionForwardOptions {
    ///     key_padding_mask: Some(&pad),
    ///     average_attn_weights: false,
    ///     ..Default::default()
    /// };
    /// let (y, w) = mha.forward(&q, &kv, &kv, &opts)?;
    /// assert_eq!(y.shape(), &[2, 3, 4]);
    /// let w = w.unwrap();
    /// assert_eq!(w.shape(), &[2, 2, 3, 5]);
    /// assert_eq!(w.to_vec::<f32>()?[3], 0.0); // a padded key gets no weight
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn forward(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        options: &MultiheadAttentionForwardOptions<'_>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        // PyTorch checks the embedding dim after the shapes, the masks' dtypes and the causal
        // hint: leave a bad input to the functional's messages first.
        let ranks_fit = matches!(
            (query.ndim(), key.ndim(), value.ndim()),
            (3, 3, 3) | (2, 2, 2)
        );
        let hint_fails = options.is_causal && options.attn_mask.is_none();
        if ranks_fit && !hint_fails {
            let e = query.shape()[query.ndim() - 1];
            if e != self.embed_dim {
                return Err(Error::InvalidArgument(format!(
                    "was expecting embedding dimension of {}, but got {e}",
                    self.embed_dim
                )));
            }
        }
        let opts = MultiHeadAttentionOptions {
            in_proj_bias: self.in_proj_bias.as_ref(),
            out_proj_bias: self.out_proj.0.bias(),
            dropout_p: self.dropout,
            training: self.training,
            key_padding_mask: options.key_padding_mask,
            need_weights: options.need_weights,
            attn_mask: options.attn_mask,
            average_attn_weights: options.average_attn_weights,
            is_causal: options.is_causal,
            batch_first: self.batch_first,
            ..MultiHeadAttentionOptions::new(
                self.num_heads,
                &self.in_proj_weight,
                self.out_proj.0.weight(),
            )
        };
        multi_head_attention_forward(query, key, value, &opts)
    }
}
