//! Losses (PyTorch's `F.cross_entropy`, `F.nll_loss`, `F.mse_loss`,
//! `F.binary_cross_entropy_with_logits`), written in differentiable ops, so their gradients and
//! double backward come from the ops'.

use crate::error::py_float;
use crate::nn::torch_size;
use crate::{DType, Error, Result, Tensor};

/// How a loss reduces its per-element values (PyTorch's `reduction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// `"none"`: one value per element (per sample for the classification losses).
    None,
    /// `"mean"` (the default): the mean, weighted for the classification losses.
    #[default]
    Mean,
    /// `"sum"`: the sum.
    Sum,
}

/// Options of [`nll_loss`] (PyTorch's keyword arguments; `Default` gives PyTorch's defaults).
#[derive(Clone, Debug, Default)]
pub struct NllLossOptions {
    /// Per-class weights `[C]`, if any.
    pub weight: Option<Tensor>,
    /// A target value that contributes nothing (neither to the sum nor to the mean's
    /// denominator). PyTorch's default, -100, is not a `usize`: `None` ignores nothing.
    pub ignore_index: Option<usize>,
    /// The reduction, [`Reduction::Mean`] by default.
    pub reduction: Reduction,
}

/// Options of [`cross_entropy`] (PyTorch's keyword arguments; `Default` gives PyTorch's
/// defaults).
#[derive(Clone, Debug, Default)]
pub struct CrossEntropyOptions {
    /// Per-class weights `[C]`, if any.
    pub weight: Option<Tensor>,
    /// As in [`NllLossOptions::ignore_index`].
    pub ignore_index: Option<usize>,
    /// The reduction, [`Reduction::Mean`] by default.
    pub reduction: Reduction,
    /// The share of the target's probability spread uniformly over the classes, in `[0, 1]`.
    pub label_smoothing: f64,
}

/// Options of [`binary_cross_entropy_with_logits`] (PyTorch's keyword arguments).
#[derive(Clone, Debug, Default)]
pub struct BceWithLogitsOptions {
    /// A weight per element (broadcast to the input's shape), if any.
    pub weight: Option<Tensor>,
    /// A weight of the positive term per class (broadcast along the last dim), if any.
    pub pos_weight: Option<Tensor>,
    /// The reduction, [`Reduction::Mean`] by default.
    pub reduction: Reduction,
}

/// `values` reduced as `reduction` says.
fn reduce(values: Tensor, reduction: Reduction) -> Result<Tensor> {
    match reduction {
        Reduction::None => Ok(values),
        Reduction::Mean => values.mean(),
        Reduction::Sum => values.sum(),
    }
}

/// A tensor of `values` with `like`'s dtype and device.
fn constant(values: Vec<f64>, shape: &[usize], like: &Tensor) -> Result<Tensor> {
    Tensor::from_vec(values, shape)?
        .to_dtype(like.dtype())?
        .to(like.device())
}

/// `input` as rows of class scores `[M, C]`, and the shape of the per-sample values: `[C]` is
/// one sample (shape `[]`), `[N, C]` is `N`, and `[N, C, d1, ..]` is `N·d1·..` samples (the
/// class dim moved last; shape `[N, d1, ..]`), whose targets are given in C order.
fn as_rows(input: &Tensor, targets: &[usize]) -> Result<(Tensor, Vec<usize>)> {
    let shape = input.shape();
    match shape.len() {
        0 => Err(Error::InvalidArgument(
            "Expected 1 or more dimensions (got 0)".to_string(),
        )),
        1 => Ok((input.reshape(&[1, shape[0]])?, Vec::new())),
        2 => Ok((input.clone(), vec![shape[0]])),
        k => {
            let mut out_shape = vec![shape[0]];
            out_shape.extend_from_slice(&shape[2..]);
            let samples: usize = out_shape.iter().product();
            if targets.len() != samples {
                return Err(Error::InvalidArgument(format!(
                    "Expected target size {out_shape:?}, got [{}]",
                    targets.len()
                )));
            }
            let mut order = vec![0];
            order.extend(2..k);
            order.push(1);
            let rows = input.permute(&order)?.reshape(&[samples, shape[1]])?;
            Ok((rows, out_shape))
        }
    }
}

/// Per-sample values (`Reduction::None`) in the samples' shape; a reduced value as it is.
fn shaped(loss: Tensor, reduction: Reduction, out_shape: &[usize]) -> Result<Tensor> {
    match reduction {
        Reduction::None => loss.reshape(out_shape),
        Reduction::Mean | Reduction::Sum => Ok(loss),
    }
}

/// The samples a classification loss counts, and checks shared by the classification losses.
struct Targets {
    /// The rows whose target is not ignored.
    rows: Vec<usize>,
    /// Their targets.
    classes: Vec<usize>,
    n: usize,
    c: usize,
}

impl Targets {
    fn check(
        input: &Tensor,
        targets: &[usize],
        ignore_index: Option<usize>,
        weight: Option<&Tensor>,
    ) -> Result<Targets> {
        debug_assert_eq!(input.ndim(), 2, "invariant: `as_rows` gives [M, C]");
        let (n, c) = (input.shape()[0], input.shape()[1]);
        if targets.len() != n {
            return Err(Error::InvalidArgument(format!(
                "Expected input batch_size ({n}) to match target batch_size ({}).",
                targets.len()
            )));
        }
        if let Some(w) = weight
            && w.shape() != [c]
        {
            return Err(Error::InvalidArgument(format!(
                "weight tensor should be defined either for all {c} classes or no classes but \
                 got weight tensor of shape: {:?}",
                w.shape()
            )));
        }
        let mut rows = Vec::with_capacity(n);
        let mut classes = Vec::with_capacity(n);
        for (i, &t) in targets.iter().enumerate() {
            if Some(t) == ignore_index {
                continue;
            }
            if t >= c {
                return Err(Error::InvalidArgument(format!(
                    "Target {t} is out of bounds."
                )));
            }
            rows.push(i);
            classes.push(t);
        }
        Ok(Targets {
            rows,
            classes,
            n,
            c,
        })
    }

    /// `values` (one per counted row) as one per sample, zeros at the ignored rows.
    fn per_sample(&self, values: &Tensor) -> Result<Tensor> {
        if self.rows.len() == self.n {
            return Ok(values.clone());
        }
        // Append a zero and pick, for each sample, its value or that zero.
        let padded = Tensor::cat(&[values.clone(), constant(vec![0.0], &[1], values)?], 0)?;
        let mut position = vec![self.rows.len(); self.n];
        for (k, &row) in self.rows.iter().enumerate() {
            position[row] = k;
        }
        padded.index_select(0, &position)
    }

    /// The weight of each counted row's target, or `None` without class weights.
    fn sample_weights(&self, weight: Option<&Tensor>) -> Result<Option<Tensor>> {
        weight.map(|w| w.index_select(0, &self.classes)).transpose()
    }

    /// The sum (`Sum`), per-sample values (`None`) or mean over the weights (`Mean`) of
    /// `values` (one per counted row).
    fn reduce(
        &self,
        values: &Tensor,
        sample_weights: Option<&Tensor>,
        reduction: Reduction,
    ) -> Result<Tensor> {
        match reduction {
            Reduction::None => self.per_sample(values),
            Reduction::Sum => values.sum(),
            Reduction::Mean => match sample_weights {
                Some(w) => values.sum()?.div(&w.sum()?),
                None => values.sum()?.div_scalar(self.rows.len() as f64),
            },
        }
    }
}

/// The negative log-likelihood of `targets` under the log-probabilities `input` (PyTorch's
/// `F.nll_loss`; `input` is `[N, C]`, `[C]` for one sample, or `[N, C, d1, ..]` with the
/// targets of the `[N, d1, ..]` samples in C order): `-w[t_i] · input[i, t_i]`, reduced; the mean divides by the sum of
/// the counted samples' weights (their number without weights), and ignored targets count
/// nowhere (with [`Reduction::None`] they get 0).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a target past the classes (`"Target {t} is out of
/// bounds."`), a number of targets that differs from the number of samples, a 0-dim input, or
/// a weight that is not `[C]`, in PyTorch's words.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::{nll_loss, NllLossOptions};
/// use autograd_runtime::Tensor;
/// let logp = Tensor::from_vec(vec![-0.5f64, -1.0, -2.0, -0.1], &[2, 2])?;
/// let loss = nll_loss(&logp, &[1, 0], &NllLossOptions::default())?;
/// assert_eq!(loss.item::<f64>()?, 1.5);
/// let err = nll_loss(&logp, &[2, 0], &NllLossOptions::default()).unwrap_err();
/// assert_eq!(err.to_string(), "Target 2 is out of bounds.");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn nll_loss(input: &Tensor, targets: &[usize], options: &NllLossOptions) -> Result<Tensor> {
    crate::amp::autocast_entry!(nll_loss(input, targets, options));
    let weight = options.weight.as_ref();
    let (rows, out_shape) = as_rows(input, targets)?;
    let t = Targets::check(&rows, targets, options.ignore_index, weight)?;
    shaped(
        nll(&rows, &t, weight, options.reduction)?,
        options.reduction,
        &out_shape,
    )
}

/// [`nll_loss`] over checked targets.
fn nll(
    input: &Tensor,
    t: &Targets,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    let flat: Vec<usize> = t
        .rows
        .iter()
        .zip(&t.classes)
        .map(|(&i, &c)| i * t.c + c)
        .collect();
    let picked = input.reshape(&[t.n * t.c])?.index_select(0, &flat)?;
    let sample_weights = t.sample_weights(weight)?;
    let values = match &sample_weights {
        Some(w) => picked.mul(w)?.neg()?,
        None => picked.neg()?,
    };
    t.reduce(&values, sample_weights.as_ref(), reduction)
}

/// Cross-entropy between the logits `input` and class indices `targets` (PyTorch's
/// `F.cross_entropy`; shapes as in [`nll_loss`]): `nll_loss(log_softmax(input, 1), targets)`, and with label smoothing
/// `ε`, `(1 - ε) · nll + ε/C · Σ_c -w_c · log_softmax(input)[i, c]`, reduced as PyTorch does
/// (the smoothing term's mean divides by the same weight sum as the NLL's).
///
/// # Errors
///
/// As [`nll_loss`], and [`Error::InvalidArgument`] for a label smoothing outside `[0, 1]`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::{cross_entropy, CrossEntropyOptions, Reduction};
/// use autograd_runtime::Tensor;
/// let logits = Tensor::from_vec(vec![0.0f64, 0.0, 3.0, 1.0, 0.0, 2.0], &[2, 3])?.requires_grad_(true)?;
/// let loss = cross_entropy(&logits, &[2, 0], &CrossEntropyOptions::default())?;
/// loss.backward()?;
/// assert_eq!(logits.grad().unwrap().shape(), &[2, 3]);
/// let options = CrossEntropyOptions { ignore_index: Some(0), reduction: Reduction::None, ..Default::default() };
/// let per_sample = cross_entropy(&logits, &[2, 0], &options)?.to_vec::<f64>()?;
/// assert_eq!(per_sample[1], 0.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn cross_entropy(
    input: &Tensor,
    targets: &[usize],
    options: &CrossEntropyOptions,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(cross_entropy(input, targets, options));
    let eps = options.label_smoothing;
    if !(0.0..=1.0).contains(&eps) {
        return Err(Error::InvalidArgument(format!(
            "label_smoothing must be between 0.0 and 1.0. Got: {}",
            py_float(eps)
        )));
    }
    let weight = options.weight.as_ref();
    let (rows, out_shape) = as_rows(input, targets)?;
    let t = Targets::check(&rows, targets, options.ignore_index, weight)?;
    let logp = rows.log_softmax(1)?;
    let nll = nll(&logp, &t, weight, options.reduction)?;
    if eps == 0.0 {
        return shaped(nll, options.reduction, &out_shape);
    }
    let counted = logp.index_select(0, &t.rows)?;
    let smooth = match weight {
        Some(w) => counted.mul(w)?,
        None => counted,
    }
    .sum_dims(&[1], false)?
    .neg()?;
    let sample_weights = t.sample_weights(weight)?;
    let smooth = t.reduce(&smooth, sample_weights.as_ref(), options.reduction)?;
    let loss = nll
        .mul_scalar(1.0 - eps)?
        .add(&smooth.mul_scalar(eps / t.c as f64)?)?;
    shaped(loss, options.reduction, &out_shape)
}

/// PyTorch's `ignore_index` default: a target of -100 counts nowhere.
const DEFAULT_IGNORE_INDEX: i64 = -100;

/// The class indices an `int64` (or `uint8`) target tensor holds, checked against `input`'s
/// shape as PyTorch's `nll_loss` checks them, and the `ignore_index` to use with them: the
/// caller's, or (when it has none) PyTorch's default -100, which a target tensor can hold.
fn tensor_targets(
    input: &Tensor,
    target: &Tensor,
    ignore_index: Option<usize>,
) -> Result<(Vec<usize>, Option<usize>)> {
    let values: Vec<i64> = match target.dtype() {
        DType::I64 => target.to_vec::<i64>()?,
        DType::U8 => target.to_vec::<u8>()?.into_iter().map(i64::from).collect(),
        other => {
            return Err(Error::InvalidArgument(format!(
                "expected target dtype to be Long or Byte, but got {}",
                other.scalar_type_name()
            )));
        }
    };
    let (shape, tshape) = (input.shape(), target.shape());
    let batch = |n: usize| {
        Error::InvalidArgument(format!(
            "Expected input batch_size ({n}) to match target batch_size ({}).",
            tshape.first().copied().unwrap_or(0)
        ))
    };
    match shape.len() {
        0 | 1 => {
            if target.numel() != 1 {
                return Err(batch(1));
            }
        }
        2 => {
            if tshape.first() != Some(&shape[0]) {
                return Err(batch(shape[0]));
            }
            if tshape.len() != 1 {
                return Err(Error::InvalidArgument(
                    "0D or 1D target tensor expected, multi-target not supported".to_string(),
                ));
            }
        }
        _ => {
            let mut expected = vec![shape[0]];
            expected.extend_from_slice(&shape[2..]);
            if tshape != expected.as_slice() {
                return Err(Error::InvalidArgument(format!(
                    "Expected target size {expected:?}, got {tshape:?}"
                )));
            }
        }
    }
    // Without an `ignore_index` of the caller's, -100 (PyTorch's default) is ignored: it stands
    // for a position no class can have.
    let ignore = ignore_index.or(Some(usize::MAX));
    let targets = values
        .into_iter()
        .map(|v| match usize::try_from(v) {
            Ok(t) => Ok(t),
            Err(_) if v == DEFAULT_IGNORE_INDEX && ignore_index.is_none() => Ok(usize::MAX),
            Err(_) => Err(Error::InvalidArgument(format!(
                "Target {v} is out of bounds."
            ))),
        })
        .collect::<Result<Vec<usize>>>()?;
    Ok((targets, ignore))
}

/// [`nll_loss`] with PyTorch's target: an `I64` (or `U8`) tensor of class indices shaped as
/// the samples (`[N]` for `[N, C]`, `[N, d1, ..]` for `[N, C, d1, ..]`, 0-dim for `[C]`).
/// With no `ignore_index` in the options, targets of -100 (PyTorch's default `ignore_index`)
/// count nowhere.
///
/// # Errors
///
/// As [`nll_loss`], and [`Error::InvalidArgument`] in PyTorch's words for a target of another
/// dtype (`"expected target dtype to be Long or Byte, but got Int"`), of the wrong shape, or
/// negative (`"Target -1 is out of bounds."`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::{nll_loss_tensor, NllLossOptions};
/// use autograd_runtime::Tensor;
/// let logp = Tensor::from_vec(vec![-0.5f64, -1.0, -2.0, -0.1], &[2, 2])?;
/// let target = Tensor::from_vec(vec![1i64, -100], &[2])?;
/// assert_eq!(nll_loss_tensor(&logp, &target, &NllLossOptions::default())?.item::<f64>()?, 1.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn nll_loss_tensor(
    input: &Tensor,
    target: &Tensor,
    options: &NllLossOptions,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(nll_loss_tensor(input, target, options));
    let (targets, ignore_index) = tensor_targets(input, target, options.ignore_index)?;
    let options = NllLossOptions {
        ignore_index,
        ..options.clone()
    };
    nll_loss(input, &targets, &options)
}

/// [`cross_entropy`] with PyTorch's target: an `I64` (or `U8`) tensor of class indices, as
/// [`nll_loss_tensor`] takes it (targets of -100 count nowhere unless the options name an
/// `ignore_index`).
///
/// # Errors
///
/// As [`cross_entropy`] and [`nll_loss_tensor`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::{cross_entropy_tensor, CrossEntropyOptions};
/// use autograd_runtime::Tensor;
/// let logits = Tensor::from_vec(vec![0.0f32, 0.0, 3.0, 1.0, 0.0, 2.0], &[2, 3])?.requires_grad_(true)?;
/// let labels = Tensor::from_vec(vec![2i64, 0], &[2])?;
/// let loss = cross_entropy_tensor(&logits, &labels, &CrossEntropyOptions::default())?;
/// assert!((loss.item::<f32>()? - 0.751_264_4).abs() < 1e-6); // PyTorch's 0.7512643933296204
/// loss.backward()?;
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn cross_entropy_tensor(
    input: &Tensor,
    target: &Tensor,
    options: &CrossEntropyOptions,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(cross_entropy_tensor(input, target, options));
    let (targets, ignore_index) = tensor_targets(input, target, options.ignore_index)?;
    let options = CrossEntropyOptions {
        ignore_index,
        ..options.clone()
    };
    cross_entropy(input, &targets, &options)
}

/// Mean squared error (PyTorch's `F.mse_loss`): `(input - target)²`, reduced.
///
/// # Errors
///
/// [`Error::Broadcast`](crate::Error::Broadcast) if the shapes do not broadcast.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::{mse_loss, Reduction};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let y = Tensor::from_vec(vec![0.0f64, 4.0], &[2])?;
/// assert_eq!(mse_loss(&x, &y, Reduction::Mean)?.item::<f64>()?, 2.5);
/// assert_eq!(mse_loss(&x, &y, Reduction::Sum)?.item::<f64>()?, 5.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    crate::amp::autocast_entry!(mse_loss(input, target, reduction));
    let d = input.sub(target)?;
    reduce(d.mul(&d)?, reduction)
}

/// `log σ(x)` without overflow: the first entry of `log_softmax([x, 0])`.
fn log_sigmoid(x: &Tensor) -> Result<Tensor> {
    let last = x.ndim();
    Tensor::stack(&[x.clone(), x.zeros_like()?], last)?
        .log_softmax(last)?
        .select(last, 0)
}

/// Binary cross-entropy on logits (PyTorch's `F.binary_cross_entropy_with_logits`):
/// `(1 - y)·x - (1 + (pos_weight - 1)·y)·log σ(x)`, times `weight`, reduced; `log σ` is
/// computed stably (no overflow for large `|x|`).
///
/// # Errors
///
/// [`Error::InvalidArgument`] if `target`'s shape differs from `input`'s (PyTorch's message);
/// broadcast errors for the weights.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::{binary_cross_entropy_with_logits, BceWithLogitsOptions};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![0.0f64, 1000.0], &[2])?;
/// let y = Tensor::from_vec(vec![1.0f64, 0.0], &[2])?;
/// let loss = binary_cross_entropy_with_logits(&x, &y, &BceWithLogitsOptions::default())?;
/// assert!((loss.item::<f64>()? - (2f64.ln() + 1000.0) / 2.0).abs() < 1e-12);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    options: &BceWithLogitsOptions,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(binary_cross_entropy_with_logits(input, target, options));
    if input.shape() != target.shape() {
        return Err(Error::InvalidArgument(format!(
            "Target size ({}) must be the same as input size ({})",
            torch_size(target.shape()),
            torch_size(input.shape())
        )));
    }
    let mut log_sig = log_sigmoid(input)?;
    if let Some(pw) = &options.pos_weight {
        let log_weight = pw.sub_scalar(1.0)?.mul(target)?.add_scalar(1.0)?;
        log_sig = log_sig.mul(&log_weight)?;
    }
    let mut loss = target.rsub_scalar(1.0)?.mul(input)?.sub(&log_sig)?;
    if let Some(w) = &options.weight {
        loss = loss.mul(w)?;
    }
    reduce(loss, options.reduction)
}

// ----- the losses as values ----------------------------------------------------------------------

/// [`cross_entropy`] with its options kept (PyTorch's `nn.CrossEntropyLoss`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::CrossEntropyLoss;
/// use autograd_runtime::nn::functional::CrossEntropyOptions;
/// use autograd_runtime::Tensor;
/// let criterion = CrossEntropyLoss::with_options(CrossEntropyOptions {
///     label_smoothing: 0.1,
///     ..Default::default()
/// });
/// let logits = Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 1.0], &[2, 2])?;
/// assert!(criterion.forward(&logits, &[0, 1])?.item::<f64>()? > 0.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct CrossEntropyLoss {
    options: CrossEntropyOptions,
}

impl CrossEntropyLoss {
    /// With PyTorch's defaults (mean, no weights, no ignored target, no smoothing).
    pub fn new() -> CrossEntropyLoss {
        CrossEntropyLoss::default()
    }

    /// With the given options.
    pub fn with_options(options: CrossEntropyOptions) -> CrossEntropyLoss {
        CrossEntropyLoss { options }
    }

    /// The loss of `input` against `targets`.
    ///
    /// # Errors
    ///
    /// As [`cross_entropy`].
    pub fn forward(&self, input: &Tensor, targets: &[usize]) -> Result<Tensor> {
        cross_entropy(input, targets, &self.options)
    }
}

/// [`nll_loss`] with its options kept (PyTorch's `nn.NLLLoss`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::NllLoss;
/// use autograd_runtime::Tensor;
/// let logp = Tensor::from_vec(vec![-0.5f64, -1.0], &[1, 2])?;
/// assert_eq!(NllLoss::new().forward(&logp, &[1])?.item::<f64>()?, 1.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct NllLoss {
    options: NllLossOptions,
}

impl NllLoss {
    /// With PyTorch's defaults (mean, no weights, no ignored target).
    pub fn new() -> NllLoss {
        NllLoss::default()
    }

    /// With the given options.
    pub fn with_options(options: NllLossOptions) -> NllLoss {
        NllLoss { options }
    }

    /// The loss of the log-probabilities `input` against `targets`.
    ///
    /// # Errors
    ///
    /// As [`nll_loss`].
    pub fn forward(&self, input: &Tensor, targets: &[usize]) -> Result<Tensor> {
        nll_loss(input, targets, &self.options)
    }
}

/// [`mse_loss`] with its reduction kept (PyTorch's `nn.MSELoss`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::MseLoss;
/// use autograd_runtime::nn::functional::Reduction;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 3.0], &[2])?;
/// let y = Tensor::from_vec(vec![0.0f64, 0.0], &[2])?;
/// assert_eq!(MseLoss::new(Reduction::Sum).forward(&x, &y)?.item::<f64>()?, 10.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct MseLoss {
    reduction: Reduction,
}

impl MseLoss {
    /// With the given reduction (`MseLoss::default()` is the mean, PyTorch's default).
    pub fn new(reduction: Reduction) -> MseLoss {
        MseLoss { reduction }
    }

    /// The loss of `input` against `target`.
    ///
    /// # Errors
    ///
    /// As [`mse_loss`].
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        mse_loss(input, target, self.reduction)
    }
}

/// [`binary_cross_entropy_with_logits`] with its options kept (PyTorch's
/// `nn.BCEWithLogitsLoss`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::BceWithLogitsLoss;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![0.0f64], &[1])?;
/// let y = Tensor::from_vec(vec![1.0f64], &[1])?;
/// let loss = BceWithLogitsLoss::new().forward(&x, &y)?.item::<f64>()?;
/// assert!((loss - 2f64.ln()).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct BceWithLogitsLoss {
    options: BceWithLogitsOptions,
}

impl BceWithLogitsLoss {
    /// With PyTorch's defaults (mean, no weights).
    pub fn new() -> BceWithLogitsLoss {
        BceWithLogitsLoss::default()
    }

    /// With the given options.
    pub fn with_options(options: BceWithLogitsOptions) -> BceWithLogitsLoss {
        BceWithLogitsLoss { options }
    }

    /// The loss of the logits `input` against `target` (probabilities of the same shape).
    ///
    /// # Errors
    ///
    /// As [`binary_cross_entropy_with_logits`].
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        binary_cross_entropy_with_logits(input, target, &self.options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_sigmoid_is_stable_at_both_ends() -> Result<()> {
        let x = Tensor::from_vec(vec![-1000.0f64, 0.0, 1000.0], &[3])?;
        let y = log_sigmoid(&x)?.to_vec::<f64>()?;
        assert_eq!(y, vec![-1000.0, -(2f64.ln()), 0.0]);
        Ok(())
    }
}
