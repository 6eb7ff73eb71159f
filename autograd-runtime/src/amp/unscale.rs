//! The kernels behind [`GradScaler`](super::GradScaler), written with tensor ops: PyTorch's
//! `_amp_foreach_non_finite_check_and_unscale_` and `_amp_update_scale_`.

use crate::{DType, Device, Result, Tensor, no_grad};

/// What one `unscale_` found, per device: a 0-dim `f32` tensor on that device, `0` when every
/// gradient there is finite, NaN otherwise (PyTorch's `found_inf_per_device`, which holds 0 or 1:
/// both read as "skip" through `!= 0`).
pub(crate) type FoundInf = Vec<(Device, Tensor)>;

/// Checks `grads` for infinities and NaN, then multiplies each by `inv_scale` in place, under
/// [`no_grad`]: PyTorch's `_amp_foreach_non_finite_check_and_unscale_` (which leaves the values
/// alone when `inv_scale` is 1). The check reads the gradient before it is unscaled, as PyTorch
/// does, and stays on the gradient's device: `sum(g * 0)` is 0 for finite values and NaN as soon
/// as one element is infinite or NaN, without the overflow a plain `sum(g)` could hit.
pub(crate) fn non_finite_check_and_unscale_(grads: &[Tensor], inv_scale: f32) -> Result<FoundInf> {
    let _guard = no_grad();
    let mut found: FoundInf = Vec::new();
    let mut factors: Vec<(Device, DType, Tensor)> = Vec::new();
    for g in grads {
        let device = g.device();
        let check = g.mul_scalar(0.0)?.sum()?.to_dtype(DType::F32)?;
        match found.iter_mut().find(|(d, _)| *d == device) {
            Some((_, acc)) => *acc = acc.add(&check)?,
            None => found.push((device, check)),
        }
        if inv_scale == 1.0 {
            continue;
        }
        // PyTorch multiplies in the gradient's `opmath` type: f64 for f64, f32 otherwise.
        let math = if g.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        let factor = match factors.iter().find(|(d, t, _)| *d == device && *t == math) {
            Some((_, _, f)) => f.clone(),
            None => {
                let f = Tensor::scalar(inv_scale).to_dtype(math)?.to(device)?;
                factors.push((device, math, f.clone()));
                f
            }
        };
        if g.dtype() == math {
            g.mul_(&factor)?;
        } else {
            g.copy_(&g.to_dtype(math)?.mul(&factor)?)?;
        }
    }
    Ok(found)
}

/// Whether the checks in `found` saw an infinity or NaN (PyTorch's
/// `sum(v.item() for v in found_inf_per_device.values())`, read as a truth value): one host
/// read per device.
pub(crate) fn any_found<'a>(found: impl IntoIterator<Item = &'a Tensor>) -> Result<bool> {
    let mut sum = 0.0f32;
    for t in found {
        sum += t.item::<f32>()?;
    }
    Ok(sum != 0.0)
}

/// PyTorch's `_amp_update_scale_` on a `(scale, growth_tracker)` pair: after an infinity or NaN
/// the scale is multiplied by `backoff_factor` and the tracker reset; otherwise the tracker
/// counts the step, and reaching `growth_interval` multiplies the scale by `growth_factor`
/// (unless that overflows `f32`) and resets it. The products are taken in `f64` and rounded to
/// the `f32` scale, as PyTorch's kernel does.
pub(crate) fn update_scale(
    scale: f32,
    growth_tracker: i32,
    found_inf: bool,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: i64,
) -> (f32, i32) {
    if found_inf {
        return ((f64::from(scale) * backoff_factor) as f32, 0);
    }
    let successful = growth_tracker.wrapping_add(1);
    if i64::from(successful) == growth_interval {
        let grown = (f64::from(scale) * growth_factor) as f32;
        (if grown.is_finite() { grown } else { scale }, 0)
    } else {
        (scale, successful)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_scale_follows_pytorch_kernel() {
        // Found inf: back off, reset.
        assert_eq!(update_scale(1024.0, 5, true, 2.0, 0.5, 10), (512.0, 0));
        // Success below the interval: count.
        assert_eq!(update_scale(1024.0, 1, false, 2.0, 0.5, 3), (1024.0, 2));
        // Reaching the interval: grow, reset.
        assert_eq!(update_scale(1024.0, 2, false, 2.0, 0.5, 3), (2048.0, 0));
        // Growth past f32's range keeps the scale but still resets the tracker.
        assert_eq!(update_scale(f32::MAX, 0, false, 2.0, 0.5, 1), (f32::MAX, 0));
        // The product is rounded once, from f64.
        let (s, _) = update_scale(3.0, 0, true, 2.0, 0.3, 10);
        assert_eq!(s, (3.0f64 * 0.3) as f32);
    }

    #[test]
    fn check_and_unscale_reports_non_finite_and_scales() -> Result<()> {
        let a = Tensor::from_vec(vec![2.0f32, -4.0], &[2])?;
        let b = Tensor::from_vec(vec![8.0f64], &[1])?;
        let h = Tensor::from_vec(vec![6.0f32], &[1])?.to_dtype(DType::BF16)?;
        let found = non_finite_check_and_unscale_(&[a.clone(), b.clone(), h.clone()], 0.5)?;
        assert_eq!(a.to_vec::<f32>()?, [1.0, -2.0]);
        assert_eq!(b.to_vec::<f64>()?, [4.0]);
        assert_eq!(h.to_dtype(DType::F32)?.to_vec::<f32>()?, [3.0]);
        assert!(!any_found(found.iter().map(|(_, t)| t))?);
        for bad in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            let c = Tensor::from_vec(vec![1.0f32, bad], &[2])?;
            let found = non_finite_check_and_unscale_(&[a.clone(), c], 0.5)?;
            assert!(any_found(found.iter().map(|(_, t)| t))?);
        }
        Ok(())
    }
}
