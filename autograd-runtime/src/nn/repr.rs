//! PyTorch's `nn.Module.__repr__`: `Name(extra_repr)` for a layer and one indented
//! `(name): child` line per child for a container, with `_addindent`'s nesting; and the
//! `extra_repr` texts of the built-in layers.
//!
//! A module's text is [`Module::repr`](super::Module::repr); `#[derive(Module)]` writes it with
//! [`module`], and `Display` prints it.

use super::{Module, Size2};

/// A float as Python's `repr` writes it: the shortest round-trip digits, `1.0` for an integral
/// value, scientific (`1e-05`) below 1e-4 or from 1e16 on.
pub(crate) fn py_float(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let a = v.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        // Rust's `{:e}` is `1e-5` / `1.5e16`; Python writes `1e-05` / `1.5e+16`.
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').expect("invariant: {:e} has an exponent");
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    let s = format!("{v}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

/// A shape as a Python tuple: `(4,)`, `(2, 3)`.
pub(crate) fn py_tuple(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A `Size2` as PyTorch prints a pooling argument given as an int: the int when both are equal.
fn int_or_pair(s: Size2) -> String {
    let [a, b] = s.0;
    if a == b {
        a.to_string()
    } else {
        format!("({a}, {b})")
    }
}

/// PyTorch's `_addindent(s, 2)`: every line after the first indented by two spaces.
pub(crate) fn add_indent(s: &str) -> String {
    let mut lines = s.split('\n');
    let first = lines.next().unwrap_or_default().to_owned();
    lines.fold(first, |acc, l| format!("{acc}\n  {l}"))
}

/// `nn.Module.__repr__`: `name(extra)` when there is one line of `extra` and no child;
/// otherwise `name(`, the lines of `extra` and one `(key): child` line per child, indented, and
/// `)`; `name()` when there is neither.
pub(crate) fn module<'a>(
    name: &str,
    extra: &str,
    children: impl IntoIterator<Item = (String, &'a dyn Module)>,
) -> String {
    let mut lines: Vec<String> = if extra.is_empty() {
        Vec::new()
    } else {
        extra.split('\n').map(str::to_owned).collect()
    };
    let extra_lines = lines.len();
    lines.extend(
        children
            .into_iter()
            .map(|(key, m)| format!("({key}): {}", add_indent(&m.repr()))),
    );
    match lines.len() {
        0 => format!("{name}()"),
        1 if extra_lines == 1 => format!("{name}({extra})"),
        _ => format!("{name}(\n  {}\n)", lines.join("\n  ")),
    }
}

/// `Linear`'s `extra_repr`.
pub(crate) fn linear(in_features: usize, out_features: usize, bias: bool) -> String {
    format!(
        "in_features={in_features}, out_features={out_features}, bias={}",
        py_bool(bias)
    )
}

/// Python's `True`/`False`.
fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// `MaxPool2d`'s `extra_repr`.
pub(crate) fn max_pool2d(
    [kernel, stride, padding, dilation]: [Size2; 4],
    ceil_mode: bool,
) -> String {
    format!(
        "kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
        int_or_pair(kernel),
        int_or_pair(stride),
        int_or_pair(padding),
        int_or_pair(dilation),
        py_bool(ceil_mode)
    )
}

/// `AvgPool2d`'s `extra_repr`.
pub(crate) fn avg_pool2d([kernel, stride, padding]: [Size2; 3]) -> String {
    format!(
        "kernel_size={}, stride={}, padding={}",
        int_or_pair(kernel),
        int_or_pair(stride),
        int_or_pair(padding)
    )
}

/// `Dropout`'s `extra_repr`.
pub(crate) fn dropout(p: f64) -> String {
    format!("p={}, inplace=False", py_float(p))
}

/// `Embedding`'s `extra_repr`.
pub(crate) fn embedding(num: usize, dim: usize, padding_idx: Option<usize>) -> String {
    match padding_idx {
        Some(i) => format!("{num}, {dim}, padding_idx={i}"),
        None => format!("{num}, {dim}"),
    }
}

/// `Flatten`'s `extra_repr`.
pub(crate) fn flatten(start_dim: isize, end_dim: isize) -> String {
    format!("start_dim={start_dim}, end_dim={end_dim}")
}

/// `LayerNorm`'s `extra_repr`.
pub(crate) fn layer_norm(shape: &[usize], eps: f64, affine: bool, bias: bool) -> String {
    format!(
        "{}, eps={}, elementwise_affine={}, bias={}",
        py_tuple(shape),
        py_float(eps),
        py_bool(affine),
        py_bool(bias)
    )
}

#[cfg(test)]
mod tests {
    use super::py_float;

    #[test]
    fn floats_print_as_pythons_repr() {
        let cases = [
            (1e-5, "1e-05"),
            (0.5, "0.5"),
            (0.01, "0.01"),
            (1.0, "1.0"),
            (1e-4, "0.0001"),
            (1.5e16, "1.5e+16"),
            (-2.5e-7, "-2.5e-07"),
            (0.1, "0.1"),
        ];
        for (v, want) in cases {
            assert_eq!(py_float(v), want);
        }
    }
}
