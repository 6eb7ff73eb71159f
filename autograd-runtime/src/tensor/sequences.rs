//! Constructors of sequences and patterns: `arange`, `linspace`, `eye`, and `randint`, with
//! PyTorch's dtype inference, arithmetic and errors.

use super::Tensor;
use crate::{DType, Error, Result, Scalar};

/// `v` values of `dtype` as a 1-D tensor (`v` computed in `f64`, cast with PyTorch's rules).
fn from_f64s(v: Vec<f64>, dtype: DType) -> Result<Tensor> {
    let n = v.len();
    Tensor::from_vec(v, &[n])?.to_dtype(dtype)
}

impl Tensor {
    /// PyTorch's `torch.arange(start, end, step)`: `start, start + step, ...` up to (not
    /// including) `end`. The dtype is `I64` when all three are integers, else `F32` (PyTorch's
    /// default dtype); convert with [`Tensor::to_dtype`] (or use
    /// [`Tensor::arange_dtype`]). Values are `start + i * step`, computed in `f64` for floats
    /// (as PyTorch's CPU kernel accumulates) and exactly for integers.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a zero step ("step must be nonzero") or bounds the step
    /// cannot reach ("upper bound and lower bound inconsistent with step sign").
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let i = Tensor::arange(0, 5, 1)?;
    /// assert_eq!((i.dtype(), i.to_vec::<i64>()?), (DType::I64, vec![0, 1, 2, 3, 4]));
    /// assert_eq!(Tensor::arange(1, 2.5, 0.5)?.to_vec::<f32>()?, vec![1.0, 1.5, 2.0]);
    /// assert_eq!(Tensor::arange(5, 0, -2)?.to_vec::<i64>()?, vec![5, 3, 1]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
    ) -> Result<Tensor> {
        let (start, end, step) = (start.into(), end.into(), step.into());
        let integral = [start, end, step]
            .iter()
            .all(|s| !matches!(s, Scalar::Float(_)));
        let dtype = if integral { DType::I64 } else { DType::F32 };
        Tensor::arange_dtype(start, end, step, dtype)
    }

    /// [`Tensor::arange`] in a given dtype (PyTorch's `arange(.., dtype=)`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::arange`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::arange_dtype(0.0, 1.0, 0.25, DType::F64)?;
    /// assert_eq!(x.to_vec::<f64>()?, vec![0.0, 0.25, 0.5, 0.75]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn arange_dtype(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: DType,
    ) -> Result<Tensor> {
        let (start, end, step) = (start.into(), end.into(), step.into());
        let (s, e, d) = (start.to_f64(), end.to_f64(), step.to_f64());
        if d == 0.0 {
            return Err(Error::InvalidArgument("step must be nonzero".into()));
        }
        if !(s.is_finite() && e.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "unsupported range: {s} -> {e}"
            )));
        }
        if (d > 0.0 && e < s) || (d < 0.0 && e > s) {
            return Err(Error::InvalidArgument(
                "upper bound and lower bound inconsistent with step sign".into(),
            ));
        }
        let n = match (start, end, step) {
            // In int64, as PyTorch counts an int64 range (exact past 2^53).
            (Scalar::Int(s), Scalar::Int(e), Scalar::Int(d)) => {
                let sgn = d.signum();
                let n = (i128::from(e) - i128::from(s) + i128::from(d) - i128::from(sgn))
                    / i128::from(d);
                // Bounds the `f64` check above took as equal but out of order
                // (`arange(2^62 + 1, 2^62)`): a negative size, as PyTorch counts it.
                usize::try_from(n).map_err(|_| {
                    Error::InvalidArgument("invalid size, possible overflow?".into())
                })?
            }
            _ => ((e - s) / d).ceil().max(0.0) as usize,
        };
        crate::layout::check_alloc("arange", n, dtype.size_of())?;
        let integral = matches!((start, step), (Scalar::Int(_), Scalar::Int(_)));
        if !dtype.is_floating_point() && !integral {
            // PyTorch's kernel takes start and step in the dtype's accumulate type, int64:
            // truncated (`arange(0.1, 3, 0.1, dtype=uint8)` is 29 zeros).
            let (s, d) = (s as i64, d as i64);
            let v: Vec<i64> = (0..n as i64)
                .map(|i| s.wrapping_add(i.wrapping_mul(d)))
                .collect();
            return Tensor::from_vec(v, &[n])?.to_dtype(dtype);
        }
        if let (Scalar::Int(s), Scalar::Int(d), false) = (start, step, dtype.is_floating_point()) {
            // Exact: int64 ranges past 2^53 keep every value.
            let v: Vec<i64> = (0..n as i64).map(|i| s + i * d).collect();
            return Tensor::from_vec(v, &[n])?.to_dtype(dtype);
        }
        from_f64s((0..n).map(|i| s + i as f64 * d).collect(), dtype)
    }

    /// PyTorch's `torch.linspace(start, end, steps)`: `steps` evenly spaced values from `start`
    /// to `end` inclusive, in `dtype`. Computed as PyTorch's CPU kernel does: the step in the
    /// dtype's own precision (`f64` for integers), the first half counted up from `start` and
    /// the second down from `end`, so both ends are exact.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::linspace(0.0, 1.0, 5, DType::F32)?;
    /// assert_eq!(x.to_vec::<f32>()?, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    /// let i = Tensor::linspace(0, 10, 5, DType::I64)?;
    /// assert_eq!(i.to_vec::<i64>()?, vec![0, 2, 5, 7, 10]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn linspace(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        steps: usize,
        dtype: DType,
    ) -> Result<Tensor> {
        let (s, e) = (start.into().to_f64(), end.into().to_f64());
        // PyTorch converts both ends to an integer dtype first (uint8 wraps: -1 is 255).
        let in_dtype = |v: f64| match dtype {
            DType::U8 => f64::from(v as i64 as u8),
            DType::I32 => f64::from(v as i64 as i32),
            DType::I64 => (v as i64) as f64,
            _ => v,
        };
        let (s, e) = (in_dtype(s), in_dtype(e));
        crate::layout::check_alloc("linspace", steps, dtype.size_of())?;
        if steps == 1 {
            return from_f64s(vec![s], dtype);
        }
        let halfway = steps / 2;
        let span = steps.saturating_sub(1).max(1) as f64;
        let v: Vec<f64> = if dtype == DType::F32 || dtype.is_half() {
            // In f32, as PyTorch's `float` kernel (and its half kernels' opmath).
            let (s, e) = (s as f32, e as f32);
            let step = (e - s) / span as f32;
            (0..steps)
                .map(|i| {
                    f64::from(if i < halfway {
                        s + step * i as f32
                    } else {
                        e - step * (steps - i - 1) as f32
                    })
                })
                .collect()
        } else {
            let step = (e - s) / span;
            (0..steps)
                .map(|i| {
                    if i < halfway {
                        s + step * i as f64
                    } else {
                        e - step * (steps - i - 1) as f64
                    }
                })
                .collect()
        };
        from_f64s(v, dtype)
    }

    /// PyTorch's `torch.eye(n, m)`: ones on the diagonal of an `n × m` matrix (`m = n` when
    /// `None`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let i = Tensor::eye(2, Some(3), DType::F32)?;
    /// assert_eq!(i.to_vec::<f32>()?, vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn eye(n: usize, m: Option<usize>, dtype: DType) -> Result<Tensor> {
        let m = m.unwrap_or(n);
        let numel = crate::layout::checked_numel("eye", &[n, m])?;
        crate::layout::check_alloc("eye", numel, dtype.size_of())?;
        let v: Vec<f64> = (0..numel)
            .map(|k| {
                if k / m.max(1) == k % m.max(1) {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        Tensor::from_vec(v, &[n, m])?.to_dtype(dtype)
    }

    /// PyTorch's `torch.randint(low, high, shape)`: integers uniform in `[low, high)` from the
    /// global generator, as an `I64` tensor; the same values as PyTorch's CPU generator after the
    /// same [`manual_seed`](crate::manual_seed).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `low >= high` (PyTorch's text).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Tensor, manual_seed};
    /// manual_seed(0);
    /// let x = Tensor::randint(0, 10, &[6])?;
    /// assert_eq!(x.to_vec::<i64>()?, vec![4, 9, 3, 0, 3, 9]); // torch.randint(0, 10, (6,))
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn randint(low: i64, high: i64, shape: &[usize]) -> Result<Tensor> {
        Tensor::randint_with(low, high, shape, &crate::default_generator())
    }

    /// [`Tensor::randint`] drawing from `generator`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::randint`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Generator, Tensor};
    /// let g = Generator::new().manual_seed(0);
    /// let x = Tensor::randint_with(-5, 5, &[3], &g)?;
    /// assert_eq!(x.to_vec::<i64>()?, vec![-1, 4, -2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn randint_with(
        low: i64,
        high: i64,
        shape: &[usize],
        generator: &crate::Generator,
    ) -> Result<Tensor> {
        if low >= high {
            return Err(Error::InvalidArgument(format!(
                "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )));
        }
        let n = crate::layout::checked_numel("randint", shape)?;
        crate::layout::check_alloc("randint", n, DType::I64.size_of())?;
        Tensor::from_vec(generator.randint(n, low, high), shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_match_pytorch() -> Result<()> {
        // torch.arange(0, 1, 0.1): f32 values of `i * 0.1` computed in f64.
        let a = Tensor::arange(0, 1, 0.1)?.to_vec::<f32>()?;
        assert_eq!(a.len(), 10);
        assert_eq!(f64::from(a[3]), 0.300_000_011_920_928_96);
        assert_eq!(f64::from(a[7]), 0.699_999_988_079_071);
        let big = Tensor::arange(10_000_000_000_000_000i64, 10_000_000_000_000_003i64, 1)?;
        assert_eq!(
            big.to_vec::<i64>()?,
            vec![
                10_000_000_000_000_000,
                10_000_000_000_000_001,
                10_000_000_000_000_002
            ]
        );
        // torch.linspace(0, 1, 7) (float32) and (-1, 2.5, 6) in float64.
        let l = Tensor::linspace(0, 1, 7, DType::F32)?.to_vec::<f32>()?;
        assert_eq!(f64::from(l[1]), 0.166_666_671_633_720_4);
        assert_eq!(f64::from(l[4]), 0.666_666_626_930_236_8);
        let d = Tensor::linspace(-1, 2.5, 6, DType::F64)?.to_vec::<f64>()?;
        assert_eq!(
            d,
            vec![
                -1.0,
                -0.300_000_000_000_000_04,
                0.399_999_999_999_999_9,
                1.1,
                1.8,
                2.5
            ]
        );
        Ok(())
    }

    #[test]
    fn bad_ranges_get_pytorchs_errors() {
        assert_eq!(
            Tensor::arange(0, 5, 0).unwrap_err().to_string(),
            "step must be nonzero"
        );
        assert_eq!(
            Tensor::arange(5, 0, 1).unwrap_err().to_string(),
            "upper bound and lower bound inconsistent with step sign"
        );
        assert_eq!(
            Tensor::randint(5, 5, &[2]).unwrap_err().to_string(),
            "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"
        );
    }

    #[test]
    fn randint_draws_pytorchs_values_past_32_bits() -> Result<()> {
        let g = crate::Generator::new().manual_seed(0);
        let _ = Tensor::randint_with(-5, 5, &[3], &g)?;
        // torch.manual_seed(0); torch.randint(-5, 5, (3,)); torch.randint(0, 2**40, (2,))
        let wide = Tensor::randint_with(0, 1 << 40, &[2], &g)?;
        assert_eq!(
            wide.to_vec::<i64>()?,
            vec![827_222_569_795, 1_080_377_046_723]
        );
        Ok(())
    }
}
