//! `Display` for [`Tensor`]: PyTorch's `repr(t)`, following `torch/_tensor_str.py` step by
//! step, and the print options that steer it ([`set_printoptions`], PyTorch's
//! `torch.set_printoptions`).
//!
//! The pieces keep `_tensor_str.py`'s names and order: [`Formatter`] is `_Formatter` (integer
//! mode, scientific mode, the column width), `vector_str` / `block_str` are `_vector_str` /
//! `_tensor_str_with_formatter`, `summarized` is `get_summarized_data`, `add_suffixes` is
//! `_add_suffixes` and `repr` is `_str_intern`. Values are formatted as PyTorch formats them:
//! widened to `f64` (Python's `float`, what `.item()` and `.tolist()` give) and printed with
//! Python's `{:.4f}` / `{:.4e}` rules (Rust's exact float formatting rounds as Python's does;
//! only the exponent's spelling, `e+08` against `e8`, and `nan` against `NaN` differ, and are
//! rewritten here).
//!
//! A dtype's part is one arm of `read_values`: how its elements read as [`Values`] (floats
//! widened to `f64`, integers to `i64`, bools). Integers and bools take `_Formatter`'s
//! non-floating branch (`f"{value}"`, `True`/`False`, right-aligned to the widest; no integer or
//! scientific mode).

use std::fmt;

use super::Tensor;
use crate::sync::RwLock;
use crate::{DType, Result};

/// The options that steer how tensors print: PyTorch's `torch.set_printoptions` arguments, with
/// PyTorch's names and defaults (`PrintOptions::default()` is its `profile="default"`).
///
/// Set them for the whole process with [`set_printoptions`] (PyTorch's options are process
/// wide too), or for a scope with [`printoptions`]. As a Rust struct has no "argument not
/// given", PyTorch's `set_printoptions(precision=2)` is written
/// `set_printoptions(PrintOptions { precision: 2, ..get_printoptions() })`; the one difference
/// is that PyTorch resets `sci_mode` to `None` whenever it is not passed, where `..` keeps it.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{PrintOptions, Tensor, printoptions};
/// let t = Tensor::from_vec(vec![1.12345f32, -2.5], &[2])?;
/// assert_eq!(t.to_string(), "tensor([ 1.1235, -2.5000])");
/// {
///     let _scope = printoptions(PrintOptions { precision: 2, ..PrintOptions::default() });
///     assert_eq!(t.to_string(), "tensor([ 1.12, -2.50])");
/// }
/// assert_eq!(t.to_string(), "tensor([ 1.1235, -2.5000])");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrintOptions {
    /// Digits after the decimal point (default 4).
    pub precision: usize,
    /// Tensors with more elements than this print summarised, with `...` (default 1000;
    /// `usize::MAX` never summarises, PyTorch's `inf`).
    pub threshold: usize,
    /// Items kept at the start and at the end of each summarised dimension (default 3).
    pub edgeitems: usize,
    /// Characters per line before a row wraps (default 80).
    pub linewidth: usize,
    /// `Some(true)` always prints in scientific notation, `Some(false)` never; `None` (default)
    /// lets the values decide, as PyTorch's `_Formatter` does.
    pub sci_mode: Option<bool>,
}

impl PrintOptions {
    /// PyTorch's `profile="default"`: precision 4, threshold 1000, edgeitems 3, linewidth 80,
    /// `sci_mode` chosen by the values.
    pub const DEFAULT: PrintOptions = PrintOptions {
        precision: 4,
        threshold: 1000,
        edgeitems: 3,
        linewidth: 80,
        sci_mode: None,
    };

    /// PyTorch's `profile="short"`: precision 2, edgeitems 2, the rest as the default.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::PrintOptions;
    /// assert_eq!(PrintOptions::short().precision, 2);
    /// assert_eq!(PrintOptions::short().edgeitems, 2);
    /// ```
    pub fn short() -> PrintOptions {
        PrintOptions {
            precision: 2,
            edgeitems: 2,
            ..PrintOptions::DEFAULT
        }
    }

    /// PyTorch's `profile="full"`: never summarise (threshold `usize::MAX`, PyTorch's `inf`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::PrintOptions;
    /// assert_eq!(PrintOptions::full().threshold, usize::MAX);
    /// ```
    pub fn full() -> PrintOptions {
        PrintOptions {
            threshold: usize::MAX,
            ..PrintOptions::DEFAULT
        }
    }
}

impl Default for PrintOptions {
    /// [`PrintOptions::DEFAULT`].
    fn default() -> PrintOptions {
        PrintOptions::DEFAULT
    }
}

/// The process-wide options (`PRINT_OPTS` in `_tensor_str.py`).
static PRINT_OPTS: RwLock<PrintOptions> = RwLock::new(PrintOptions::DEFAULT);

/// Sets how tensors print from now on, in every thread: PyTorch's `torch.set_printoptions`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{PrintOptions, Tensor, get_printoptions, set_printoptions};
/// let t = Tensor::from_vec((0..10).map(|i| i as f32).collect(), &[10])?;
/// let old = get_printoptions();
/// set_printoptions(PrintOptions { threshold: 5, ..old });
/// assert_eq!(t.to_string(), "tensor([0., 1., 2.,  ..., 7., 8., 9.])");
/// set_printoptions(old);
/// assert_eq!(t.to_string(), "tensor([0., 1., 2., 3., 4., 5., 6., 7., 8., 9.])");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn set_printoptions(options: PrintOptions) {
    *PRINT_OPTS.write() = options;
}

/// The options tensors print with now: PyTorch's `torch._tensor_str.get_printoptions()`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{PrintOptions, get_printoptions};
/// assert_eq!(get_printoptions().linewidth, PrintOptions::default().linewidth);
/// ```
pub fn get_printoptions() -> PrintOptions {
    *PRINT_OPTS.read()
}

/// Sets the print options until the returned guard drops, then restores the ones before:
/// PyTorch's `with torch._tensor_str.printoptions(...)`. The options are process wide, so other
/// threads printing meanwhile see them too.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{PrintOptions, Tensor, printoptions};
/// let t = Tensor::from_vec(vec![1.5f32, 2.0], &[2])?;
/// {
///     let _scope = printoptions(PrintOptions { sci_mode: Some(true), ..PrintOptions::default() });
///     assert_eq!(t.to_string(), "tensor([1.5000e+00, 2.0000e+00])");
/// }
/// assert_eq!(t.to_string(), "tensor([1.5000, 2.0000])");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[must_use = "the options are restored when the guard drops"]
pub fn printoptions(options: PrintOptions) -> PrintOptionsGuard {
    let previous = std::mem::replace(&mut *PRINT_OPTS.write(), options);
    PrintOptionsGuard { previous }
}

/// Restores the print options that were in force before [`printoptions`] when dropped.
#[derive(Debug)]
pub struct PrintOptionsGuard {
    previous: PrintOptions,
}

impl Drop for PrintOptionsGuard {
    fn drop(&mut self) {
        set_printoptions(self.previous);
    }
}

/// PyTorch's `repr(t)` (`torch/_tensor_str.py`), with the print options in force
/// ([`set_printoptions`]).
///
/// `tensor(` and the values, four digits after the point; integral values print as `1.`, and
/// values whose magnitudes span more than 1000×, or reach above 1e8 or below 1e-4, print in
/// scientific notation; columns are aligned, rows wrap at 80 characters, and tensors over 1000
/// elements print their first and last three items per dimension around `...`. Then the
/// suffixes: `dtype=torch.float64` for f64 (f32 is PyTorch's default dtype, so it has none),
/// `device='cuda:0'` off the CPU, and `grad_fn=<MulBackward0>` or `requires_grad=True`.
///
/// A tensor on [`Device::Virtual`](crate::Device::Virtual)`(i)`, which PyTorch does not have,
/// prints `device='virtual:i'` (the device's own `Display`), as any non-CPU device prints in
/// PyTorch. A tensor whose elements cannot be read (a failing CUDA copy) prints the error in
/// place of its values, `tensor(<unreadable: ...>)`, rather than failing the formatter.
///
/// [`Debug`](fmt::Debug) stays the structured view (shape, dtype, up to 16 values).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{DType, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.5, -3.0], &[3])?.requires_grad_(true)?;
/// assert_eq!(x.to_string(), "tensor([ 1.0000,  2.5000, -3.0000], requires_grad=True)");
/// assert_eq!(x.mul_scalar(2.0)?.to_string(), "tensor([ 2.,  5., -6.], grad_fn=<MulBackward0>)");
///
/// let m = Tensor::from_vec(vec![1e-5f64, 1.0, 2.0, 300.0], &[2, 2])?;
/// assert_eq!(
///     m.to_string(),
///     "tensor([[1.0000e-05, 1.0000e+00],\n        [2.0000e+00, 3.0000e+02]], dtype=torch.float64)"
/// );
/// assert_eq!(Tensor::scalar(3.5f32).to_string(), "tensor(3.5000)");
/// assert_eq!(Tensor::zeros(&[0, 3], DType::F32)?.to_string(), "tensor([], size=(0, 3))");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&repr(self, &get_printoptions()))
    }
}

/// The float dtype PyTorch prints no suffix for on empty tensors (`torch.get_default_dtype()`).
const DEFAULT_DTYPE: &str = "torch.float32";

/// The dtypes PyTorch prints no suffix for on non-empty tensors (`has_default_dtype`): the
/// default dtype, and int64 and bool, whose values show their dtype.
const IMPLIED_DTYPES: [&str; 3] = [DEFAULT_DTYPE, "torch.int64", "torch.bool"];

/// A tensor's elements, as `_Formatter` and `tolist()` see them.
enum Values {
    /// A floating dtype's elements widened to `f64` (exact for every float dtype).
    Float(Vec<f64>),
    /// An integer dtype's elements widened to `i64`.
    Int(Vec<i64>),
    /// A bool tensor's elements.
    Bool(Vec<bool>),
}

impl Values {
    /// Every value as `_Formatter.format` gives it (right-aligned to the column width), and
    /// that width (`_Formatter.width()`).
    fn formatted(&self, opts: &PrintOptions) -> (Vec<String>, usize) {
        let plain: Vec<String> = match self {
            Values::Float(v) => {
                let f = Formatter::new(v, opts);
                return (v.iter().map(|&x| f.format(x)).collect(), f.max_width);
            }
            Values::Int(v) => v.iter().map(|x| x.to_string()).collect(),
            Values::Bool(v) => v
                .iter()
                .map(|&b| if b { "True" } else { "False" }.to_owned())
                .collect(),
        };
        let width = plain.iter().map(String::len).max().unwrap_or(1);
        let padded = plain.into_iter().map(|x| format!("{x:>width$}")).collect();
        (padded, width)
    }
}

/// How to read a tensor of `dtype` as [`Values`] (C order).
fn read_values(t: &Tensor) -> Result<Values> {
    fn ints<T: crate::DataElement>(t: &Tensor) -> Result<Values> {
        Ok(Values::Int(
            t.to_vec::<T>()?.into_iter().map(|v| v.to_i64()).collect(),
        ))
    }
    fn floats<T: crate::DataElement>(t: &Tensor) -> Result<Values> {
        Ok(Values::Float(
            t.to_vec::<T>()?.into_iter().map(|v| v.to_f64()).collect(),
        ))
    }
    match t.dtype() {
        DType::F32 => floats::<f32>(t),
        DType::F64 => floats::<f64>(t),
        DType::F16 => floats::<half::f16>(t),
        DType::BF16 => floats::<half::bf16>(t),
        DType::I64 => ints::<i64>(t),
        DType::I32 => ints::<i32>(t),
        DType::U8 => ints::<u8>(t),
        DType::Bool => Ok(Values::Bool(t.to_vec::<bool>()?)),
    }
}

/// `_str_intern` for a plain strided tensor: `tensor(` + the values + the suffixes + `)`.
fn repr(t: &Tensor, opts: &PrintOptions) -> String {
    const PREFIX: &str = "tensor(";
    let indent = PREFIX.len();
    let mut suffixes = Vec::new();
    // PyTorch prints the device when it is not the default device type (the CPU).
    if !t.device().is_cpu() {
        suffixes.push(format!("device='{}'", t.device()));
    }
    let dtype = t.dtype().torch_name();
    let body = if t.numel() == 0 {
        // The shape, unless it is `(0,)`, as NumPy does; the dtype unless the default one, as
        // an empty tensor has no values to show it.
        if t.ndim() != 1 {
            suffixes.push(format!("size={}", py_tuple(t.shape())));
        }
        if dtype != DEFAULT_DTYPE {
            suffixes.push(format!("dtype={dtype}"));
        }
        "[]".to_owned()
    } else {
        if opts.edgeitems == 0 {
            suffixes.push(format!("size={}", py_tuple(t.shape())));
        }
        if !IMPLIED_DTYPES.contains(&dtype) {
            suffixes.push(format!("dtype={dtype}"));
        }
        tensor_str(t, indent, opts).unwrap_or_else(|e| format!("<unreadable: {e}>"))
    };
    if let Some(node) = t.grad_fn() {
        suffixes.push(format!("grad_fn=<{}>", node.name()));
    } else if t.requires_grad() {
        suffixes.push("requires_grad=True".to_owned());
    }
    add_suffixes(format!("{PREFIX}{body}"), &suffixes, indent, opts.linewidth)
}

/// `_tensor_str`: the values of a non-empty tensor, nested brackets and all.
fn tensor_str(t: &Tensor, indent: usize, opts: &PrintOptions) -> Result<String> {
    let summarize = t.numel() > opts.threshold;
    if summarize && opts.edgeitems == 0 && t.ndim() > 0 {
        // `_vector_str` prints `[...]` alone, and every row of a matrix is left out.
        return Ok("[...]".to_owned());
    }
    let data = if summarize {
        summarized(t, opts.edgeitems)?
    } else {
        t.detach()
    };
    let (values, width) = read_values(&data)?.formatted(opts);
    let mut out = String::new();
    let ctx = Ctx {
        summarize,
        width,
        opts,
    };
    block_str(&mut out, &values, t.shape(), indent, &ctx);
    Ok(out)
}

/// `get_summarized_data`: the first and last `edge` items of every dimension longer than
/// `2 * edge` (so the formatter sees only what is printed, and only that is copied off the
/// device). `edge` is at least 1.
fn summarized(t: &Tensor, edge: usize) -> Result<Tensor> {
    let mut t = t.detach();
    for dim in 0..t.ndim() {
        let n = t.shape()[dim];
        if n > 2 * edge {
            t = Tensor::cat(
                &[t.narrow(dim, 0, edge)?, t.narrow(dim, n - edge, edge)?],
                dim,
            )?;
        }
    }
    Ok(t)
}

/// What every level of [`block_str`] shares.
struct Ctx<'a> {
    summarize: bool,
    /// The column width of every value.
    width: usize,
    opts: &'a PrintOptions,
}

impl Ctx<'_> {
    /// Whether a dimension of `n` items is printed as its edges around `...`.
    fn elides(&self, n: usize) -> bool {
        self.summarize && n > 2 * self.opts.edgeitems
    }

    /// How many items of a dimension of `n` are in the (summarised) values.
    fn kept(&self, n: usize) -> usize {
        if self.elides(n) {
            2 * self.opts.edgeitems
        } else {
            n
        }
    }
}

/// `_tensor_str_with_formatter`: `values` are the (summarised) elements of a block whose full
/// shape is `shape`. Recursion depth is the tensor's rank.
fn block_str(out: &mut String, values: &[String], shape: &[usize], indent: usize, ctx: &Ctx<'_>) {
    match shape {
        [] => out.push_str(&values[0]),
        [n] => vector_str(out, values, *n, indent, ctx),
        [n, rest @ ..] => {
            let kept = ctx.kept(*n);
            let len = values.len() / kept;
            let sep = format!(
                ",{}{}",
                "\n".repeat(shape.len() - 1),
                " ".repeat(indent + 1)
            );
            let elides = ctx.elides(*n);
            out.push('[');
            for i in 0..kept {
                if i > 0 {
                    out.push_str(&sep);
                }
                if elides && i == ctx.opts.edgeitems {
                    out.push_str("...");
                    out.push_str(&sep);
                }
                block_str(out, &values[i * len..(i + 1) * len], rest, indent + 1, ctx);
            }
            out.push(']');
        }
    }
}

/// `_vector_str`: one row, wrapped so that no line passes `linewidth` (when an element fits).
fn vector_str(out: &mut String, values: &[String], n: usize, indent: usize, ctx: &Ctx<'_>) {
    let element_length = ctx.width + 2;
    let room = ctx.opts.linewidth as f64 - indent as f64;
    let per_line = ((room / element_length as f64).floor() as i64).max(1) as usize;
    let mut data: Vec<String> = values.to_vec();
    if ctx.elides(n) {
        data.insert(ctx.opts.edgeitems, " ...".to_owned());
    }
    let line_sep = format!(",\n{}", " ".repeat(indent + 1));
    out.push('[');
    for (i, line) in data.chunks(per_line).enumerate() {
        if i > 0 {
            out.push_str(&line_sep);
        }
        out.push_str(&line.join(", "));
    }
    out.push(']');
}

/// `_Formatter` for floating dtypes: picks integer mode (every finite value integral, printed
/// `1.`), scientific mode and the column width from the nonzero finite values.
struct Formatter {
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
    precision: usize,
}

impl Formatter {
    fn new(values: &[f64], opts: &PrintOptions) -> Formatter {
        let mut f = Formatter {
            int_mode: true,
            sci_mode: false,
            max_width: 1,
            precision: opts.precision,
        };
        let nonzero_finite: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v != 0.0)
            .collect();
        if nonzero_finite.is_empty() {
            // No valid number: integer mode, width 1, whatever `sci_mode` says.
            return f;
        }
        let (min, max) = nonzero_finite
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
                (lo.min(v.abs()), hi.max(v.abs()))
            });
        f.int_mode = nonzero_finite.iter().all(|v| *v == v.ceil());
        f.sci_mode = opts
            .sci_mode
            .unwrap_or(max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4);
        for &v in &nonzero_finite {
            let width = if f.sci_mode {
                py_sci(v, f.precision).len()
            } else if f.int_mode {
                // One more for the `.` integer mode appends.
                py_fixed(v, 0).len() + 1
            } else {
                py_fixed(v, f.precision).len()
            };
            f.max_width = f.max_width.max(width);
        }
        f
    }

    /// One value, right-aligned to the column width (a wider one, `-0.0000` or `nan` where no
    /// value set the width, is not cut).
    fn format(&self, v: f64) -> String {
        let ret = if self.sci_mode {
            py_sci(v, self.precision)
        } else if self.int_mode {
            let mut s = py_fixed(v, 0);
            if v.is_finite() {
                s.push('.');
            }
            s
        } else {
            py_fixed(v, self.precision)
        };
        format!("{ret:>width$}", width = self.max_width)
    }
}

/// Python's `f"{v:.{precision}f}"`: Rust's fixed notation, with `nan` spelled as Python does.
fn py_fixed(v: f64, precision: usize) -> String {
    if v.is_nan() {
        "nan".to_owned()
    } else {
        format!("{v:.precision$}")
    }
}

/// Python's `f"{v:.{precision}e}"`: Rust's `1.2346e8` spelled `1.2346e+08` (sign, at least
/// two exponent digits), and `nan`/`inf`/`-inf` as Python writes them.
fn py_sci(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return "nan".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let s = format!("{v:.precision$e}");
    match s.split_once('e').map(|(m, e)| (m, e.parse::<i32>())) {
        Some((mantissa, Ok(exp))) => {
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
        }
        // Not reached: a finite float's `{:e}` is always `<mantissa>e<integer>`.
        _ => s,
    }
}

/// Python's `str(tuple(shape))`: `(0, 3)`, `(5,)`, `()`.
fn py_tuple(shape: &[usize]) -> String {
    let items: Vec<String> = shape.iter().map(usize::to_string).collect();
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

/// `_add_suffixes`: each suffix after `, `, or on a new line indented under the values when it
/// would pass `linewidth`.
fn add_suffixes(mut s: String, suffixes: &[String], indent: usize, linewidth: usize) -> String {
    // Python's `len(s) - s.rfind("\n") + 1`, with `rfind` giving -1 when there is no newline.
    let mut last_line_len = match s.rfind('\n') {
        Some(p) => s.len() - p + 1,
        None => s.len() + 2,
    };
    for suffix in suffixes {
        if last_line_len + suffix.len() + 2 > linewidth {
            s.push_str(",\n");
            s.push_str(&" ".repeat(indent));
            last_line_len = indent + suffix.len();
        } else {
            s.push_str(", ");
            last_line_len += suffix.len() + 2;
        }
        s.push_str(suffix);
    }
    s.push(')');
    s
}
