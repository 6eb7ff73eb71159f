//! Copies that move or mask elements: `repeat`, `flip`, `roll`, `tril`, `triu`, with PyTorch's
//! node names (`RepeatBackward0`, `FlipBackward0`, `RollBackward0`, `TrilBackward0`,
//! `TriuBackward0`). None is a view (as in PyTorch). Their forwards are index selections
//! (`flip`, `roll`, and `tril`/`triu` over a zero appended to each matrix, so masked entries are
//! exact zeros whatever they held, NaN included) or a copy of an expanded layout (`repeat`); each
//! gradient is the same kind of op on the gradient, so it is differentiable again.

use autograd_macros::{backward, differentiable, jvp};

use crate::graph::InputMetadata;
use crate::layout::{Dims, Layout, contiguous_strides, wrap_dim};
use crate::tensor::kernels;
use crate::{Error, Result, Tensor};

/// `x`'s elements read with a C-order layout of `shape` (a contiguous copy first if needed),
/// outside autograd.
fn as_contiguous_shape(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let data = if x.is_contiguous() {
        x.clone()
    } else {
        x.contiguous_data_owned()?
    };
    Ok(data.reinterpret(Layout {
        shape: shape.into(),
        strides: contiguous_strides(shape),
        offset: data.layout().offset,
    }))
}

// ----- the ops ----------------------------------------------------------------------------------

/// `sizes` has at least `x.ndim()` entries (checked).
#[differentiable(builtin, crate = "crate", name = "RepeatBackward0")]
fn repeat(x: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    let pad = sizes.len() - x.ndim();
    let l = x.layout();
    // Each dim `i` becomes the pair (`sizes[i]` with stride 0, the dim itself): copied in C
    // order, the pairs merge into dims of `sizes[i] * size`.
    let mut layout = Layout {
        shape: Dims::new(),
        strides: Dims::new(),
        offset: l.offset,
    };
    let mut out = Vec::with_capacity(sizes.len());
    for (i, &r) in sizes.iter().enumerate() {
        let (n, s) = if i < pad {
            (1, 0)
        } else {
            (l.shape[i - pad], l.strides[i - pad])
        };
        layout.shape.extend([r, n]);
        layout.strides.extend([0, s]);
        out.push(r * n);
    }
    // Always a copy (with every size 1 the expanded layout is `x`'s own).
    let copied = x.reinterpret(layout).contiguous_data_owned()?;
    as_contiguous_shape(&copied, &out)
}

#[backward(repeat)]
fn repeat_backward(grad: &Tensor, x: &InputMetadata, sizes: &[usize]) -> Result<Tensor> {
    let pad = sizes.len() - x.shape().len();
    let mut pairs = Vec::with_capacity(2 * sizes.len());
    for (i, &r) in sizes.iter().enumerate() {
        pairs.extend([r, if i < pad { 1 } else { x.shape()[i - pad] }]);
    }
    let repeats: Vec<usize> = (0..sizes.len()).map(|i| 2 * i).collect();
    grad.reshape(&pairs)?
        .sum_dims(&repeats, false)?
        .reshape(x.shape())
}

// Linear: each op's tangent is the same op on the input's tangent.
#[jvp(repeat)]
fn repeat_jvp(x_t: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    repeat(x_t, sizes)
}

/// `dims` are wrapped and distinct.
#[differentiable(builtin, crate = "crate", name = "FlipBackward0")]
fn flip(x: &Tensor, dims: Dims) -> Result<Tensor> {
    let mut y = x.contiguous_data_owned()?;
    for &d in &dims {
        let n = x.shape()[d];
        let index: Vec<usize> = (0..n).rev().collect();
        y = kernels::of_tensor(&y)?.index_select(&y, d, &index)?;
    }
    Ok(y)
}

#[backward(flip)]
fn flip_backward(grad: &Tensor, dims: &Dims) -> Result<Tensor> {
    flip(grad, dims.clone())
}

#[jvp(flip)]
fn flip_jvp(x_t: &Tensor, dims: Dims) -> Result<Tensor> {
    flip(x_t, dims)
}

/// `shifts` are in `0..size` of their dims (`dims` wrapped); no dims: the flattened tensor
/// rolls by `shifts[0]`.
#[differentiable(builtin, crate = "crate", name = "RollBackward0")]
fn roll(x: &Tensor, shifts: Dims, dims: Dims) -> Result<Tensor> {
    let rotate = |y: &Tensor, d: usize, s: usize| -> Result<Tensor> {
        let n = y.shape()[d];
        // out[i] = in[i - s]
        let index: Vec<usize> = (0..n).map(|i| (i + n - s) % n).collect();
        kernels::of_tensor(y)?.index_select(y, d, &index)
    };
    if dims.is_empty() {
        let flat = as_contiguous_shape(x, &[x.numel()])?;
        let rolled = rotate(&flat, 0, shifts[0])?;
        return as_contiguous_shape(&rolled, x.shape());
    }
    let mut y = x.contiguous_data_owned()?;
    for (&s, &d) in shifts.iter().zip(&dims) {
        if s != 0 {
            y = rotate(&y, d, s)?;
        }
    }
    Ok(y)
}

#[backward(roll)]
fn roll_backward(grad: &Tensor, shifts: &Dims, dims: &Dims) -> Result<Tensor> {
    let back: Dims = if dims.is_empty() {
        let n = grad.numel();
        smallvec::smallvec![(n - shifts[0]) % n.max(1)]
    } else {
        (shifts.iter().zip(dims))
            .map(|(&s, &d)| {
                let n = grad.shape()[d];
                (n - s) % n.max(1)
            })
            .collect()
    };
    roll(grad, back, dims.clone())
}

#[jvp(roll)]
fn roll_jvp(x_t: &Tensor, shifts: Dims, dims: Dims) -> Result<Tensor> {
    roll(x_t, shifts, dims)
}

/// The entries of the last two dims kept by `tril`/`triu` with `diagonal`, others zero.
fn triangle(x: &Tensor, diagonal: isize, lower: bool) -> Result<Tensor> {
    let nd = x.ndim();
    let (rows, cols) = (x.shape()[nd - 2], x.shape()[nd - 1]);
    if x.numel() == 0 {
        return x.contiguous_data_owned();
    }
    let batch = x.numel() / (rows * cols);
    let flat = as_contiguous_shape(x, &[batch, rows * cols])?;
    // A zero after each matrix, which the masked entries select.
    let zero = Tensor::filled(&[batch, 1], 0.0, x.dtype(), x.device())?;
    let padded = kernels::of_tensor(&flat)?.cat(&[flat.clone(), zero], 1)?;
    let index: Vec<usize> = (0..rows * cols)
        .map(|k| {
            let (i, j) = ((k / cols) as isize, (k % cols) as isize);
            let kept = if lower {
                j - i <= diagonal
            } else {
                j - i >= diagonal
            };
            if kept { k } else { rows * cols }
        })
        .collect();
    let out = kernels::of_tensor(&padded)?.index_select(&padded, 1, &index)?;
    as_contiguous_shape(&out, x.shape())
}

#[differentiable(builtin, crate = "crate", name = "TrilBackward0")]
fn tril(x: &Tensor, diagonal: isize) -> Result<Tensor> {
    triangle(x, diagonal, true)
}

#[backward(tril)]
fn tril_backward(grad: &Tensor, diagonal: isize) -> Result<Tensor> {
    tril(grad, diagonal)
}

#[jvp(tril)]
fn tril_jvp(x_t: &Tensor, diagonal: isize) -> Result<Tensor> {
    tril(x_t, diagonal)
}

#[differentiable(builtin, crate = "crate", name = "TriuBackward0")]
fn triu(x: &Tensor, diagonal: isize) -> Result<Tensor> {
    triangle(x, diagonal, false)
}

#[backward(triu)]
fn triu_backward(grad: &Tensor, diagonal: isize) -> Result<Tensor> {
    triu(grad, diagonal)
}

#[jvp(triu)]
fn triu_jvp(x_t: &Tensor, diagonal: isize) -> Result<Tensor> {
    triu(x_t, diagonal)
}

impl Tensor {
    /// The tensor tiled `sizes[i]` times along each dim (PyTorch's `repeat`, a copy,
    /// `RepeatBackward0`); extra leading `sizes` add dims.
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] when `sizes` has fewer entries than the tensor has dims (PyTorch's
    /// text); [`Error::Shape`] for a result too large to allocate.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// let r = t.repeat(&[2, 2])?;
    /// assert_eq!(r.shape(), &[2, 4]);
    /// assert_eq!(r.to_vec::<f32>()?, vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn repeat(&self, sizes: &[usize]) -> Result<Tensor> {
        if sizes.len() < self.ndim() {
            return Err(Error::size_mismatch(
                "repeat",
                "Number of dimensions of repeat dims can not be smaller than number of \
                 dimensions of tensor",
            ));
        }
        let pad = sizes.len() - self.ndim();
        let out = (sizes.iter().enumerate())
            .map(|(i, &r)| r.checked_mul(if i < pad { 1 } else { self.shape()[i - pad] }))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| {
                Error::shape("repeat", "the result has more than usize::MAX elements")
            })?;
        let numel = crate::layout::checked_numel("repeat", &out)?;
        crate::layout::check_alloc("repeat", numel, self.dtype().size_of())?;
        repeat(self, sizes)
    }

    /// A copy with the order of the entries along each of `dims` reversed (PyTorch's `flip`,
    /// `FlipBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a repeated dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.flip(&[1])?.to_vec::<f32>()?, vec![2.0, 1.0, 4.0, 3.0]);
    /// assert_eq!(t.flip(&[0, -1])?.to_vec::<f32>()?, vec![4.0, 3.0, 2.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        let dims = self.wrap_dims_unique(dims)?;
        if self.ndim() == 0 {
            return flip(self, Dims::new());
        }
        flip(self, dims)
    }

    /// A copy with the entries of each of `dims` shifted by `shifts` (wrapping around), or, for
    /// no `dims`, the flattened tensor shifted by `shifts[0]` (PyTorch's `roll`,
    /// `RollBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] with PyTorch's texts when `shifts` and
    /// `dims` differ in length or `shifts` is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!(t.roll(&[1], &[1])?.to_vec::<f32>()?, vec![3.0, 1.0, 2.0, 6.0, 4.0, 5.0]);
    /// assert_eq!(t.roll(&[-1], &[])?.to_vec::<f32>()?, vec![2.0, 3.0, 4.0, 5.0, 6.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn roll(&self, shifts: &[isize], dims: &[isize]) -> Result<Tensor> {
        if shifts.is_empty() {
            return Err(Error::size_mismatch("roll", "`shifts` required"));
        }
        let norm = |s: isize, n: usize| -> usize {
            if n == 0 {
                0
            } else {
                s.rem_euclid(n as isize) as usize
            }
        };
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::size_mismatch(
                    "roll",
                    format!(
                        "shifts and dimensions must align. shifts: {}, dims:0",
                        shifts.len()
                    ),
                ));
            }
            return roll(
                self,
                smallvec::smallvec![norm(shifts[0], self.numel())],
                Dims::new(),
            );
        }
        if shifts.len() != dims.len() {
            return Err(Error::size_mismatch(
                "roll",
                format!(
                    "shifts and dimensions must align. shifts: {}, dims:{}",
                    shifts.len(),
                    dims.len()
                ),
            ));
        }
        let mut wrapped = Dims::with_capacity(dims.len());
        let mut norm_shifts = Dims::with_capacity(dims.len());
        for (&s, &d) in shifts.iter().zip(dims) {
            let w = wrap_dim(d, self.ndim())?;
            if self.ndim() == 0 {
                continue;
            }
            wrapped.push(w);
            norm_shifts.push(norm(s, self.shape()[w]));
        }
        if wrapped.is_empty() {
            return roll(self, smallvec::smallvec![0], Dims::new());
        }
        roll(self, norm_shifts, wrapped)
    }

    /// A copy with the entries above diagonal `diagonal` of each matrix (the last two dims) set
    /// to zero (PyTorch's `tril`, `TrilBackward0`): `0` keeps the main diagonal, positive values
    /// diagonals above it, negative ones removes diagonals below it.
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] for fewer than 2 dims, with PyTorch's text.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.tril(0)?.to_vec::<f32>()?, vec![1.0, 0.0, 3.0, 4.0]);
    /// assert_eq!(t.tril(-1)?.to_vec::<f32>()?, vec![0.0, 0.0, 3.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn tril(&self, diagonal: isize) -> Result<Tensor> {
        self.check_matrix("tril")?;
        tril(self, diagonal)
    }

    /// A copy with the entries below diagonal `diagonal` of each matrix (the last two dims) set
    /// to zero (PyTorch's `triu`, `TriuBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] for fewer than 2 dims, with PyTorch's text.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.triu(0)?.to_vec::<f32>()?, vec![1.0, 2.0, 0.0, 4.0]);
    /// assert_eq!(t.triu(1)?.to_vec::<f32>()?, vec![0.0, 2.0, 0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn triu(&self, diagonal: isize) -> Result<Tensor> {
        self.check_matrix("triu")?;
        triu(self, diagonal)
    }

    fn check_matrix(&self, op: &'static str) -> Result<()> {
        if self.ndim() < 2 {
            return Err(Error::size_mismatch(
                op,
                format!("{op}: input tensor must have at least 2 dimensions"),
            ));
        }
        Ok(())
    }
}
