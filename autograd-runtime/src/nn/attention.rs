//! Attention as functions: PyTorch's `F.scaled_dot_product_attention` (its math path, which is
//! also what it runs on the CPU for dropout) and `F.multi_head_attention_forward` with a packed
//! `in_proj_weight`, written in differentiable ops.

use autograd_macros::{backward, differentiable, jvp};

use super::dropout::dropout;
use crate::ops::AttnMask;
use crate::{DType, Error, Result, Tensor};

/// The C++ name PyTorch's messages give a dtype (`c10::toString(ScalarType)` as `<<` prints a
/// `caffe2::TypeMeta`).
fn cpp_dtype(dtype: DType) -> &'static str {
    match dtype {
        DType::F64 => "double",
        DType::F32 => "float",
        DType::F16 => "c10::Half",
        DType::BF16 => "c10::BFloat16",
        DType::I64 => "long int",
        DType::I32 => "int",
        DType::U8 => "unsigned char",
        DType::Bool => "bool",
    }
}

/// PyTorch's `torch.Size([..])`, as Python prints it in its messages.
fn torch_size(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("torch.Size([{}])", dims.join(", "))
}

/// A Python tuple of sizes, as PyTorch's messages print an expected shape: `(4, 4)`.
fn py_tuple(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("({})", dims.join(", "))
}

/// PyTorch's `_safe_softmax` over the wrapped `dim`: softmax, with rows that are `-inf`
/// throughout (every key masked out) giving zeros instead of NaN; its gradient is softmax's,
/// through the result, so such rows pass no gradient (`_softmax_backward_data`).
#[differentiable(builtin, crate = "crate", name = "SafeSoftmaxBackward0")]
fn safe_softmax(x: &Tensor, dim: usize) -> Result<Tensor> {
    let y = x.softmax(dim)?;
    let masked_rows = x
        .amax(&[dim as isize], true)?
        .eq_scalar(f64::NEG_INFINITY)?;
    y.masked_fill(&masked_rows, 0.0)
}

#[backward(safe_softmax)]
fn safe_softmax_backward(grad: &Tensor, result: &Tensor, dim: usize) -> Result<Tensor> {
    // dx = y * (g - Σ_dim g·y), as softmax's
    let dot = grad.mul(result)?.sum_dims(&[dim], true)?;
    result.mul(&grad.sub(&dot)?)
}

/// As softmax's: `result · (x_t − Σ_dim x_t·result)`; a fully masked row's result is zeros, so is
/// its tangent.
#[jvp(safe_softmax)]
fn safe_softmax_jvp(x_t: &Tensor, result: &Tensor, dim: usize) -> Result<Tensor> {
    safe_softmax_backward(x_t, result, dim)
}

/// PyTorch's `convert_boolean_attn_mask`: a bool mask (true = takes part) becomes `0` where
/// true and `-inf` where false, in `dtype`; a float mask is added as it is.
fn additive_mask(mask: &Tensor, dtype: DType) -> Result<Tensor> {
    if mask.dtype() == DType::Bool {
        let zero = Tensor::zeros(&[], dtype)?.to(mask.device())?;
        let minus_inf = Tensor::full(&[], f64::NEG_INFINITY, dtype)?.to(mask.device())?;
        Tensor::where_(mask, &zero, &minus_inf)
    } else {
        mask.to_dtype(dtype)
    }
}

/// PyTorch's `validate_sdpa_input`.
fn validate_sdpa_input(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
) -> Result<()> {
    let (q, k, v) = (query.dtype(), key.dtype(), value.dtype());
    if q != k || q != v {
        return Err(Error::InvalidArgument(format!(
            "Expected query, key, and value to have the same dtype, but got query.dtype: {} \
             key.dtype: {} and value.dtype: {} instead.",
            cpp_dtype(q),
            cpp_dtype(k),
            cpp_dtype(v)
        )));
    }
    let (qd, kd, vd) = (query.device(), key.device(), value.device());
    if qd != kd || qd != vd {
        return Err(Error::InvalidArgument(format!(
            "Expected query, key, and value to have the same device type, but got query.device: \
             {qd} key.device: {kd} and value.device: {vd} instead."
        )));
    }
    if query.ndim() < 2 || key.ndim() < 2 || value.ndim() < 2 {
        return Err(Error::InvalidArgument(format!(
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: \
             {} key.dim: {} and value.dim: {} instead.",
            query.ndim(),
            key.ndim(),
            value.ndim()
        )));
    }
    if let Some(mask) = attn_mask {
        let m = mask.dtype();
        if m != DType::Bool && m != DType::F32 && m != q {
            return Err(Error::InvalidArgument(format!(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got \
                 attn_mask.dtype: {} and  query.dtype: {} instead.",
                cpp_dtype(m),
                cpp_dtype(q)
            )));
        }
        if mask.device() != qd {
            return Err(Error::InvalidArgument(format!(
                "Expected attn_mask device to match query device, but got attn_mask.device: {} \
                 and query.device: {qd} instead.",
                mask.device()
            )));
        }
    }
    Ok(())
}

/// Scaled dot-product attention (PyTorch's
/// `F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
/// is_causal=False, scale=None)`): `softmax(q kᵀ · scale + mask) v` over query `[.., L, E]`,
/// key `[.., S, E]` and value `[.., S, Ev]`, giving `[.., L, Ev]`; the leading (batch, head)
/// dims broadcast, as `matmul`'s.
///
/// * `attn_mask` broadcasts to `[.., L, S]`: a bool mask says which keys each query may attend
///   to (true = takes part); a float mask (f32 or the query's dtype) is added to the scores.
/// * `is_causal` masks the keys after each query (a lower-triangular `[L, S]` bool mask).
/// * `scale` defaults to `1/√E`.
/// * A query row whose keys are all masked out gives zeros (PyTorch's `_safe_softmax`), not
///   NaN, and passes no gradient.
/// * With `dropout_p > 0`, the attention weights go through [`dropout`] (always, as PyTorch's
///   functional does; a module passes `0.0` in evaluation), with the global generator, so after
///   [`manual_seed`](crate::manual_seed) the masks are PyTorch's CPU masks.
///
/// The computation is PyTorch's math path (`_scaled_dot_product_attention_math`): `q` and `k`
/// each scaled by `√scale`, f16 and bf16 computed in f32 and rounded once.
///
/// # Errors
///
/// PyTorch's messages as [`Error::InvalidArgument`]: `_scaled_dot_product_attention: Explicit
/// attn_mask should not be set when is_causal=True`; `Expected query, key, and value to have the
/// same dtype, but got query.dtype: float key.dtype: double and value.dtype: double instead.`;
/// `Expected query, key, and value to all be  at least 2 dimensional, ...`; `Expected attn_mask
/// dtype to be bool or float or to match query dtype, ...`; `dropout probability has to be
/// between 0 and 1, but got 1.5`. Sizes that do not fit are `matmul`'s errors, a mask that does
/// not broadcast a broadcast error.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::scaled_dot_product_attention;
/// use autograd_runtime::Tensor;
/// // One query attends to two keys with equal scores: the mean of the two values.
/// let q = Tensor::from_vec(vec![1.0f64, 0.0], &[1, 2])?;
/// let k = Tensor::from_vec(vec![0.0f64, 1.0, 0.0, -1.0], &[2, 2])?;
/// let v = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
/// let y = scaled_dot_product_attention(&q, &k, &v, None, 0.0, false, None)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![2.0, 3.0]);
/// // A causal mask lets the first query see the first key only.
/// let q2 = Tensor::zeros(&[2, 2], autograd_runtime::DType::F64)?;
/// let y = scaled_dot_product_attention(&q2, &k, &v, None, 0.0, true, None)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![1.0, 2.0, 2.0, 3.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn scaled_dot_product_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    #[rustfmt::skip]
    crate::amp::autocast_entry!(sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale));
    validate_sdpa_input(query, key, value, attn_mask)?;
    if is_causal && attn_mask.is_some() {
        return Err(Error::InvalidArgument(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when \
             is_causal=True"
                .into(),
        ));
    }
    let origin = query.dtype();
    if origin.is_half() {
        let up = |t: &Tensor| t.to_dtype(DType::F32);
        let mask = match attn_mask {
            Some(m) if m.dtype() != DType::Bool => Some(up(m)?),
            Some(m) => Some(m.clone()),
            None => None,
        };
        let y = scaled_dot_product_attention(
            &up(query)?,
            &up(key)?,
            &up(value)?,
            mask.as_ref(),
            dropout_p,
            is_causal,
            scale,
        )?;
        return y.to_dtype(origin);
    }
    let (l, s) = (query.shape()[query.ndim() - 2], key.shape()[key.ndim() - 2]);
    let e = query.shape()[query.ndim() - 1];
    let scale = scale.unwrap_or_else(|| 1.0 / (e as f64).sqrt());
    let factor = scale.abs().sqrt();
    let q = query.mul_scalar(if scale < 0.0 { -factor } else { factor })?;
    let kt = key.transpose(key.ndim() - 2, key.ndim() - 1)?;
    let mut attn = q.matmul(&kt.mul_scalar(factor)?)?;
    // The mask applied and the softmax taken in one kernel per row where the backend has it
    // (the mask itself then takes no gradient; a float mask that needs one is added below).
    let fused_mask = if is_causal {
        AttnMask::Causal
    } else {
        match attn_mask {
            None => AttnMask::None,
            Some(m) => AttnMask::Add(additive_mask(m, origin)?),
        }
    };
    if let Some(weights) = attn.safe_softmax_masked(&fused_mask)? {
        attn = weights;
        if dropout_p > 0.0 {
            attn = dropout(&attn, dropout_p, true)?;
        }
        return attn.matmul(value);
    }
    let mask = match fused_mask {
        AttnMask::Causal => {
            let causal = Tensor::ones(&[l, s], DType::Bool)?
                .to(query.device())?
                .tril(0)?;
            Some(additive_mask(&causal, origin)?)
        }
        AttnMask::Add(m) => Some(m),
        AttnMask::None => None,
    };
    if let Some(mask) = mask {
        attn = attn.add(&mask)?;
    }
    let last = attn.ndim() - 1;
    attn = safe_softmax(&attn, last)?;
    if dropout_p > 0.0 {
        attn = dropout(&attn, dropout_p, true)?;
    }
    attn.matmul(value)
}

/// The arguments of [`multi_head_attention_forward`] besides the query, key and value: PyTorch's
/// `F.multi_head_attention_forward`'s, for the packed projection (`use_separate_proj_weight`,
/// `bias_k`/`bias_v`, `add_zero_attn` and `static_k`/`static_v` are not supported), plus
/// `batch_first` (`nn.MultiheadAttention`'s: the functional is sequence-first).
///
/// [`new`](MultiHeadAttentionOptions::new) gives PyTorch's defaults; change fields to taste.
#[derive(Clone, Copy, Debug)]
pub struct MultiHeadAttentionOptions<'a> {
    /// The number of heads; the embedding dim must divide by it.
    pub num_heads: usize,
    /// `[3E, E]`: the query, key and value projections stacked (PyTorch's `in_proj_weight`).
    pub in_proj_weight: &'a Tensor,
    /// `[3E]`, or `None`.
    pub in_proj_bias: Option<&'a Tensor>,
    /// `[E, E]`: the output projection (`out_proj.weight`).
    pub out_proj_weight: &'a Tensor,
    /// `[E]`, or `None` (`out_proj.bias`).
    pub out_proj_bias: Option<&'a Tensor>,
    /// Dropout on the attention weights (default 0).
    pub dropout_p: f64,
    /// Without it, no dropout (default true).
    pub training: bool,
    /// `[N, S]` (`[S]` unbatched): a bool mask whose **true** entries are keys to **ignore**
    /// (PyTorch's convention here, the opposite of `scaled_dot_product_attention`'s), or a
    /// float mask added to the scores.
    pub key_padding_mask: Option<&'a Tensor>,
    /// Return the attention weights (default true).
    pub need_weights: bool,
    /// `[L, S]` or `[N·num_heads, L, S]`: a bool mask whose true entries are **not** allowed to
    /// attend, or a float mask added to the scores.
    pub attn_mask: Option<&'a Tensor>,
    /// Average the returned weights over the heads (default true): `[N, L, S]`, else
    /// `[N, num_heads, L, S]`.
    pub average_attn_weights: bool,
    /// A hint that `attn_mask` is the causal mask (PyTorch's; it requires `attn_mask`).
    pub is_causal: bool,
    /// Inputs and output are `[N, L, E]` (`nn.MultiheadAttention(batch_first=True)`) instead of
    /// the functional's `[L, N, E]` (default false).
    pub batch_first: bool,
}

impl<'a> MultiHeadAttentionOptions<'a> {
    /// PyTorch's defaults: no biases, no masks, no dropout, `training`, `need_weights` and
    /// `average_attn_weights` true, sequence-first.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::functional::MultiHeadAttentionOptions;
    /// use autograd_runtime::{DType, Tensor};
    /// let (w_in, w_out) = (Tensor::zeros(&[12, 4], DType::F32)?, Tensor::zeros(&[4, 4], DType::F32)?);
    /// let opts = MultiHeadAttentionOptions { batch_first: true, ..MultiHeadAttentionOptions::new(2, &w_in, &w_out) };
    /// assert!(opts.need_weights && opts.batch_first);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(
        num_heads: usize,
        in_proj_weight: &'a Tensor,
        out_proj_weight: &'a Tensor,
    ) -> MultiHeadAttentionOptions<'a> {
        MultiHeadAttentionOptions {
            num_heads,
            in_proj_weight,
            in_proj_bias: None,
            out_proj_weight,
            out_proj_bias: None,
            dropout_p: 0.0,
            training: true,
            key_padding_mask: None,
            need_weights: true,
            attn_mask: None,
            average_attn_weights: true,
            is_causal: false,
            batch_first: false,
        }
    }
}

/// `x Wᵀ + b` (PyTorch's `F.linear`).
fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    super::linear::linear(x, weight, bias)
}

/// PyTorch's `_canonical_mask`: a bool mask becomes `-inf` where true and 0 elsewhere, in
/// `dtype`; a float mask stays as it is; other dtypes are an error naming the mask. (The
/// transformer layers use it too.)
pub(super) fn canonical_mask(
    mask: Option<&Tensor>,
    name: &str,
    dtype: DType,
) -> Result<Option<Tensor>> {
    let Some(mask) = mask else { return Ok(None) };
    match mask.dtype() {
        DType::Bool => Ok(Some(
            Tensor::zeros(mask.shape(), dtype)?
                .to(mask.device())?
                .masked_fill(mask, f64::NEG_INFINITY)?,
        )),
        d if d.is_floating_point() => Ok(Some(mask.clone())),
        _ => Err(Error::InvalidArgument(format!(
            "only bool and floating types of {name} are supported"
        ))),
    }
}

/// PyTorch's `_mha_shape_check`: whether the input is batched.
fn mha_shape_check(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    opts: &MultiHeadAttentionOptions<'_>,
) -> Result<bool> {
    let fail = |m: String| Err(Error::InvalidArgument(m));
    let mask_dims = |m: Option<&Tensor>| m.map(Tensor::ndim);
    match query.ndim() {
        3 => {
            if key.ndim() != 3 || value.ndim() != 3 {
                return fail(format!(
                    "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found \
                     {}-D and {}-D tensors respectively",
                    key.ndim(),
                    value.ndim()
                ));
            }
            if let Some(d) = mask_dims(opts.key_padding_mask)
                && d != 2
            {
                return fail(format!(
                    "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D \
                     but found {d}-D tensor instead"
                ));
            }
            if let Some(d) = mask_dims(opts.attn_mask)
                && d != 2
                && d != 3
            {
                return fail(format!(
                    "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D \
                     but found {d}-D tensor instead"
                ));
            }
            Ok(true)
        }
        2 => {
            if key.ndim() != 2 || value.ndim() != 2 {
                return fail(format!(
                    "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found \
                     {}-D and {}-D tensors respectively",
                    key.ndim(),
                    value.ndim()
                ));
            }
            if let Some(d) = mask_dims(opts.key_padding_mask)
                && d != 1
            {
                return fail(format!(
                    "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or \
                     1-D but found {d}-D tensor instead"
                ));
            }
            if let Some(m) = opts.attn_mask {
                let d = m.ndim();
                if d != 2 && d != 3 {
                    return fail(format!(
                        "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or \
                         3-D but found {d}-D tensor instead"
                    ));
                }
                let expected = [opts.num_heads, query.shape()[0], key.shape()[0]];
                if d == 3 && m.shape() != expected {
                    return fail(format!(
                        "Expected `attn_mask` shape to be {} but got {}",
                        py_tuple(&expected),
                        torch_size(m.shape())
                    ));
                }
            }
            Ok(false)
        }
        d => fail(format!(
            "query should be unbatched 2D or batched 3D tensor but received {d}-D query tensor"
        )),
    }
}

/// Multi-head attention as a function (PyTorch's `F.multi_head_attention_forward`, the
/// computation of `nn.MultiheadAttention`) with a packed input projection: the query, key and
/// value are projected by the three `[E, E]` blocks of `in_proj_weight` (and `in_proj_bias`),
/// split into `num_heads` heads of `E / num_heads`, attended to (scaled dot product, masks,
/// dropout on the weights), merged and projected by `out_proj_weight`/`out_proj_bias`.
///
/// Shapes (sequence-first, as PyTorch's functional; with `batch_first`, `N` comes first):
/// query `[L, N, E]`, key and value `[S, N, E]`, output `[L, N, E]`; unbatched `[L, E]`,
/// `[S, E]`, `[L, E]`. With `need_weights`, the attention weights come back as well: `[N, L, S]`
/// averaged over the heads, or `[N, num_heads, L, S]` (`[L, S]`, `[num_heads, L, S]` unbatched).
///
/// As in PyTorch, with `need_weights` the weights are computed explicitly (a query whose keys are
/// all masked gives NaN); without, through [`scaled_dot_product_attention`] (zeros instead),
/// where `is_causal` without a key padding mask uses its causal flag in place of `attn_mask`.
///
/// # Errors
///
/// PyTorch's messages as [`Error::InvalidArgument`]: the shape checks (`For batched (3-D)
/// `query`, expected `key` and `value` to be 3-D but found 2-D and 3-D tensors respectively`),
/// `embed_dim 6 not divisible by num_heads 4`, `Need attn_mask if specifying the is_causal
/// hint. ...`, `The shape of the 2D attn_mask is torch.Size([3, 4]), but should be (4, 4).`
/// (and 3D), `only bool and floating types of attn_mask are supported`, `expecting
/// key_padding_mask shape of (2, 4), but got torch.Size([2, 3])`; projection sizes that do not
/// fit are `matmul`'s errors.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::{MultiHeadAttentionOptions, multi_head_attention_forward};
/// use autograd_runtime::{DType, Tensor};
/// let x = Tensor::randn_seeded(&[2, 5, 4], DType::F64, 0)?; // [N, L, E]
/// let w_in = Tensor::randn_seeded(&[12, 4], DType::F64, 1)?;
/// let w_out = Tensor::randn_seeded(&[4, 4], DType::F64, 2)?;
/// let opts = MultiHeadAttentionOptions { batch_first: true, ..MultiHeadAttentionOptions::new(2, &w_in, &w_out) };
/// let (y, w) = multi_head_attention_forward(&x, &x, &x, &opts)?;
/// assert_eq!(y.shape(), &[2, 5, 4]);
/// let w = w.unwrap(); // averaged over the heads
/// assert_eq!(w.shape(), &[2, 5, 5]);
/// let rows = w.sum_dims(&[2], false)?.to_vec::<f64>()?;
/// assert!(rows.iter().all(|r| (r - 1.0).abs() < 1e-12));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn multi_head_attention_forward(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    opts: &MultiHeadAttentionOptions<'_>,
) -> Result<(Tensor, Option<Tensor>)> {
    let batched = mha_shape_check(query, key, value, opts)?;
    // To PyTorch's functional layout: sequence-first, with a batch dim.
    let (mut query, mut key, mut value) = (query.clone(), key.clone(), value.clone());
    let mut key_padding_mask = opts.key_padding_mask.cloned();
    if batched && opts.batch_first {
        query = query.transpose(0, 1)?;
        key = key.transpose(0, 1)?;
        value = value.transpose(0, 1)?;
    }
    if !batched {
        query = query.unsqueeze(1)?;
        key = key.unsqueeze(1)?;
        value = value.unsqueeze(1)?;
        key_padding_mask = key_padding_mask.map(|m| m.unsqueeze(0)).transpose()?;
    }
    let (tgt_len, bsz, embed_dim) = (query.shape()[0], query.shape()[1], query.shape()[2]);
    let num_heads = opts.num_heads;
    let dtype = query.dtype();
    let key_padding_mask = canonical_mask(key_padding_mask.as_ref(), "key_padding_mask", dtype)?;
    if opts.is_causal && opts.attn_mask.is_none() {
        return Err(Error::InvalidArgument(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer \
             module method `generate_square_subsequent_mask` to create this mask."
                .into(),
        ));
    }
    let mut is_causal = opts.is_causal;
    let mut attn_mask = None;
    if !(is_causal && key_padding_mask.is_none() && !opts.need_weights) {
        attn_mask = canonical_mask(opts.attn_mask, "attn_mask", dtype)?;
        if key_padding_mask.is_some() {
            is_causal = false;
        }
    }
    if num_heads == 0 || !embed_dim.is_multiple_of(num_heads) {
        return Err(Error::InvalidArgument(format!(
            "embed_dim {embed_dim} not divisible by num_heads {num_heads}"
        )));
    }
    let head_dim = embed_dim / num_heads;
    if key.shape() != value.shape() {
        return Err(Error::InvalidArgument(format!(
            "key shape {} does not match value shape {}",
            torch_size(key.shape()),
            torch_size(value.shape())
        )));
    }
    // `_in_projection_packed`: the three blocks of the packed weight and bias.
    let w = opts.in_proj_weight.chunk(3, 0)?;
    let b = match opts.in_proj_bias {
        Some(b) => b.chunk(3, 0)?.into_iter().map(Some).collect(),
        None => vec![None, None, None],
    };
    let q = linear(&query, &w[0], b[0].as_ref())?;
    let k = linear(&key, &w[1], b[1].as_ref())?;
    let v = linear(&value, &w[2], b[2].as_ref())?;
    let src_len = k.shape()[0];
    if let Some(m) = &attn_mask {
        if m.ndim() == 2 {
            let correct = [tgt_len, src_len];
            if m.shape() != correct {
                return Err(Error::InvalidArgument(format!(
                    "The shape of the 2D attn_mask is {}, but should be {}.",
                    torch_size(m.shape()),
                    py_tuple(&correct)
                )));
            }
            attn_mask = Some(m.unsqueeze(0)?);
        } else {
            let correct = [bsz * num_heads, tgt_len, src_len];
            if m.shape() != correct {
                return Err(Error::InvalidArgument(format!(
                    "The shape of the 3D attn_mask is {}, but should be {}.",
                    torch_size(m.shape()),
                    py_tuple(&correct)
                )));
            }
        }
    }
    // [len, N, E] -> [N·H, len, head_dim]
    let heads = |t: &Tensor, len: usize| {
        t.reshape(&[len, bsz * num_heads, head_dim])?
            .transpose(0, 1)
    };
    let (q, k, v) = (
        heads(&q, tgt_len)?,
        heads(&k, src_len)?,
        heads(&v, src_len)?,
    );
    if let Some(kpm) = &key_padding_mask {
        if kpm.shape() != [bsz, src_len] {
            return Err(Error::InvalidArgument(format!(
                "expecting key_padding_mask shape of {}, but got {}",
                py_tuple(&[bsz, src_len]),
                torch_size(kpm.shape())
            )));
        }
        let kpm = kpm
            .reshape(&[bsz, 1, 1, src_len])?
            .expand(&[bsz, num_heads, 1, src_len])?
            .reshape(&[bsz * num_heads, 1, src_len])?;
        attn_mask = Some(match attn_mask {
            Some(m) => m.add(&kpm)?,
            None => kpm,
        });
    }
    let dropout_p = if opts.training { opts.dropout_p } else { 0.0 };
    let out_proj = |attn_output: Tensor| -> Result<Tensor> {
        let y = linear(&attn_output, opts.out_proj_weight, opts.out_proj_bias)?;
        let y = y.reshape(&[tgt_len, bsz, y.shape()[1]])?;
        if !batched {
            y.squeeze_dim(1)
        } else if opts.batch_first {
            y.transpose(0, 1)
        } else {
            Ok(y)
        }
    };
    if opts.need_weights {
        let q_scaled = q.mul_scalar((1.0 / head_dim as f64).sqrt())?;
        let mut weights = q_scaled.matmul(&k.transpose(1, 2)?)?;
        if let Some(m) = &attn_mask {
            weights = m.add(&weights)?;
        }
        weights = weights.softmax(2)?;
        if dropout_p > 0.0 {
            weights = dropout(&weights, dropout_p, true)?;
        }
        let attn_output = weights
            .matmul(&v)?
            .transpose(0, 1)?
            .reshape(&[tgt_len * bsz, embed_dim])?;
        let y = out_proj(attn_output)?;
        let mut weights = weights.reshape(&[bsz, num_heads, tgt_len, src_len])?;
        if opts.average_attn_weights {
            weights = weights.mean_dims(&[1], false)?;
        }
        if !batched {
            weights = weights.squeeze_dim(0)?;
        }
        Ok((y, Some(weights)))
    } else {
        let attn_mask = match attn_mask {
            Some(m) if m.shape()[0] == 1 && m.ndim() == 3 => Some(m.unsqueeze(0)?),
            Some(m) => Some(m.reshape(&[
                bsz,
                num_heads,
                m.numel() / (bsz * num_heads * src_len),
                src_len,
            ])?),
            None => None,
        };
        let split = |t: &Tensor, len: usize| t.reshape(&[bsz, num_heads, len, head_dim]);
        let attn_output = scaled_dot_product_attention(
            &split(&q, tgt_len)?,
            &split(&k, src_len)?,
            &split(&v, src_len)?,
            attn_mask.as_ref(),
            dropout_p,
            is_causal,
            None,
        )?
        .permute(&[2, 0, 1, 3])?
        .reshape(&[bsz * tgt_len, embed_dim])?;
        Ok((out_proj(attn_output)?, None))
    }
}
