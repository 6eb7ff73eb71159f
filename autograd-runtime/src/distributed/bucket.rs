//! `BucketPlan`: which parameters share a bucket, where each gradient lives in it, and the layout
//! of the trailer of flags that every bucket carries.

use super::CommBuffer;
use crate::{DType, Tensor};

/// One bucket: the gradients of some parameters of one dtype, all-reduced as one buffer.
///
/// Layout of its buffer: `[gradients.. | one error flag per rank | one used flag per parameter]`.
#[derive(Debug)]
pub(crate) struct Bucket {
    /// Element type of the gradients (and of the whole buffer).
    pub(crate) dtype: DType,
    /// Parameter indices (registration order), in the order they are laid out.
    pub(crate) params: Vec<usize>,
    /// Start of each parameter's gradient in the buffer, parallel to `params`.
    pub(crate) offsets: Vec<usize>,
    /// Number of gradient elements (the start of the trailer).
    pub(crate) numel: usize,
    /// Number of ranks (length of the error-flag part of the trailer).
    pub(crate) world_size: usize,
}

impl Bucket {
    /// Total buffer length: gradients plus trailer.
    pub(crate) fn len(&self) -> usize {
        self.numel + self.world_size + self.params.len()
    }

    /// Index of `rank`'s error flag.
    pub(crate) fn error_flag(&self, rank: usize) -> usize {
        self.numel + rank
    }

    /// Index of the used flag of the bucket's `slot`-th parameter.
    pub(crate) fn used_flag(&self, slot: usize) -> usize {
        self.numel + self.world_size + slot
    }

    /// A zeroed buffer for this bucket.
    pub(crate) fn buffer(&self) -> CommBuffer {
        CommBuffer::zeros(self.dtype, self.len())
    }
}

/// Where a parameter's gradient goes: `(bucket, slot within the bucket)`.
pub(crate) type Location = (usize, usize);

/// Splits `params` into buckets of at most `cap_bytes` (a larger parameter gets a bucket of its
/// own), in reverse registration order — roughly the order backward produces gradients in — and
/// one open bucket per dtype. Returns the buckets in launch order and each parameter's location.
pub(crate) fn plan(
    params: &[Tensor],
    cap_bytes: usize,
    world_size: usize,
) -> (Vec<Bucket>, Vec<Location>) {
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut location = vec![(0, 0); params.len()];
    // Index in `buckets` of the bucket being filled for each dtype.
    let mut open: [Option<usize>; 2] = [None, None];
    for (index, param) in params.iter().enumerate().rev() {
        let dtype = param.dtype();
        let slot_of_dtype = usize::from(dtype == DType::F64);
        let bytes = param.numel() * dtype.size_of();
        let fits = open[slot_of_dtype].filter(|&b| {
            let bucket: &Bucket = &buckets[b];
            bucket.numel * dtype.size_of() + bytes <= cap_bytes
        });
        let b = match fits {
            Some(b) => b,
            None => {
                buckets.push(Bucket {
                    dtype,
                    params: Vec::new(),
                    offsets: Vec::new(),
                    numel: 0,
                    world_size,
                });
                open[slot_of_dtype] = Some(buckets.len() - 1);
                buckets.len() - 1
            }
        };
        let bucket = &mut buckets[b];
        location[index] = (b, bucket.params.len());
        bucket.params.push(index);
        bucket.offsets.push(bucket.numel);
        bucket.numel += param.numel();
    }
    (buckets, location)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_fill_in_reverse_order_up_to_the_cap() {
        let p = |n: usize, dtype| Tensor::zeros(&[n], dtype).unwrap();
        // 4-byte f32: caps of 40 bytes hold 10 elements.
        let params = vec![
            p(4, DType::F32),
            p(6, DType::F32),
            p(5, DType::F32),
            p(20, DType::F32),
            p(3, DType::F64),
        ];
        let (buckets, location) = plan(&params, 40, 2);
        let layout: Vec<(DType, Vec<usize>, Vec<usize>)> = buckets
            .iter()
            .map(|b| (b.dtype, b.params.clone(), b.offsets.clone()))
            .collect();
        assert_eq!(
            layout,
            vec![
                (DType::F64, vec![4], vec![0]),
                (DType::F32, vec![3], vec![0]), // larger than the cap: alone
                (DType::F32, vec![2], vec![0]),
                (DType::F32, vec![1, 0], vec![0, 6]), // 5 + 6 > 10, then 6 + 4 fits
            ]
        );
        assert_eq!(location, vec![(3, 1), (3, 0), (2, 0), (1, 0), (0, 0)]);
        let last = &buckets[3];
        assert_eq!(
            (last.len(), last.error_flag(1), last.used_flag(1)),
            (14, 11, 13)
        );
    }
}
