//! Element maps of other ops (`clamp`, its gradient mask, `erf`) that a CUDA device runs as a
//! fixed generated kernel (`backend/generated.rs`): one launch, no round trip through the host.
//! The host runs its own element maps; these kernels, run on the CPU, give their bits (tested
//! below).

use std::sync::OnceLock;

use crate::backend::generated::{GeneratedKernel, Inst};
use crate::fusion::{next_id, run_kernel};
use crate::{Result, Tensor};

/// Element maps of other ops that a CUDA device runs as a generated kernel (one launch, no
/// round trip through the host); the host runs its own element maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeviceMap {
    /// `clamp(x, lo, hi)`; scalars `lo`, `hi`.
    Clamp,
    /// 1 where `lo < x < hi` (clamp's gradient mask: none at a bound), else 0; scalars `lo`, `hi`.
    Interior,
    /// `erf x`, in double precision.
    Erf,
}

/// `map` of every element of `x`, a tensor of a CUDA device, into a new tensor there.
pub(crate) fn device_map(map: DeviceMap, x: &Tensor, scalars: &[f64]) -> Result<Tensor> {
    let kernel = kernel(map);
    let mut outs = run_kernel(kernel, &[x], &scalars[..kernel.n_scalars], x.shape())?;
    outs.pop().ok_or_else(|| {
        crate::Error::shape(
            "generated kernel",
            "internal error: the kernel has no output",
        )
    })
}

/// The kernel of `map`, built once.
fn kernel(map: DeviceMap) -> &'static GeneratedKernel {
    static KERNELS: OnceLock<[GeneratedKernel; 3]> = OnceLock::new();
    let kernels = KERNELS.get_or_init(|| {
        let bounded = |inst: Inst| GeneratedKernel {
            id: next_id(),
            insts: vec![Inst::Load(0), Inst::Scalar(0), Inst::Scalar(1), inst],
            outputs: vec![3],
            n_inputs: 1,
            n_scalars: 2,
        };
        [
            bounded(Inst::Clamp(0, 1, 2)),
            bounded(Inst::Interior(0, 1, 2)),
            GeneratedKernel {
                id: next_id(),
                insts: vec![Inst::Load(0), Inst::Erf(0)],
                outputs: vec![1],
                n_inputs: 1,
                n_scalars: 0,
            },
        ]
    });
    &kernels[map as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    /// The kernels clamp and erf run on a CUDA device, interpreted on the CPU, give the bits
    /// of the host's own element maps, in both dtypes, NaN and the infinite bounds included.
    #[test]
    fn the_device_maps_give_the_host_ops_bits() -> Result<()> {
        let values = vec![-3.0, -0.5, -0.25, 0.0, 0.7, 1.0, 2.5, f64::NAN, 7.0, -7.0];
        for dtype in [DType::F64, DType::F32] {
            let x = Tensor::from_vec(values.clone(), &[10])?.to_dtype(dtype)?;
            for (lo, hi) in [(-0.5, 1.0), (f64::NEG_INFINITY, 0.5), (0.0, f64::INFINITY)] {
                let via = device_map(DeviceMap::Clamp, &x, &[lo, hi])?;
                let host = x.clamp(lo.is_finite().then_some(lo), hi.is_finite().then_some(hi))?;
                assert_eq!(bits(&via)?, bits(&host)?, "clamp({lo}, {hi}) {dtype:?}");
                let mask = device_map(DeviceMap::Interior, &x, &[lo, hi])?
                    .to_dtype(DType::F64)?
                    .to_vec::<f64>()?;
                let want: Vec<f64> = x
                    .to_dtype(DType::F64)?
                    .to_vec::<f64>()?
                    .iter()
                    .map(|&v| f64::from(u8::from(v > lo && v < hi)))
                    .collect();
                assert_eq!(mask, want, "in range ({lo}, {hi}) {dtype:?}");
            }
            let via = device_map(DeviceMap::Erf, &x, &[])?;
            assert_eq!(bits(&via)?, bits(&x.erf()?)?, "erf {dtype:?}");
        }
        Ok(())
    }

    fn bits(t: &Tensor) -> Result<Vec<u64>> {
        let v = t.to_dtype(DType::F64)?.to_vec::<f64>()?;
        Ok(v.iter().map(|v| v.to_bits()).collect())
    }
}
