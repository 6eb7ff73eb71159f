//! Sums over dims: how the work of a reduction is cut into blocks (`sum` and `sum_cols` in
//! `kernels.cu`).
//!
//! One block per output, as the first kernels did, leaves a GPU idle on the reductions training
//! needs most: a full sum (one output, one block, one SM reading everything) and a bias
//! gradient (a sum down the columns of a `[batch, features]` matrix, where one block per column
//! reads one element per row: 32 separate memory transactions per warp). So:
//!
//! * columns ([`sum_columns`]): a block takes 32 adjacent columns, so each warp reads 128
//!   contiguous bytes per row, and long columns are cut into segments summed by separate
//!   blocks, then added up by a second launch;
//! * runs ([`sum_runs`], every other layout): a few long runs are cut into segments the same way.
//!
//! Every cut depends on the shape alone, and each block adds in a fixed order, so a sum gives
//! the same bits on every run.

use super::buffer::DeviceBuffer;
use super::device::CudaDevice;
use super::kernels::{self, COLS_TILE, KernelLayout};
use super::launch::{Arg, launch_grid};
use crate::{DType, Result};

/// Blocks a reduction aims for: enough to fill a large GPU (an H100 has 132 SMs) several times.
const TARGET_BLOCKS: usize = 512;
/// The fewest rows a column segment gets.
const MIN_SEGMENT_ROWS: usize = 64;
/// The fewest elements a run segment gets.
const MIN_SEGMENT: usize = 4096;

/// How `len` elements are cut into segments when `blocks_per_segment` blocks already work
/// side by side: `(segments, elements per segment)`, at least `min` per segment.
fn segments(len: usize, blocks_per_segment: usize, min: usize) -> (usize, usize) {
    let wanted = TARGET_BLOCKS.div_ceil(blocks_per_segment.max(1));
    let segs = wanted.min(len.div_ceil(min)).max(1);
    let per = len.div_ceil(segs).max(1);
    (len.div_ceil(per).max(1), per)
}

/// The column sums of the `rows × cols` matrix at device address `x` with row stride `ld`
/// elements: a new buffer of `cols` elements.
pub(super) fn sum_columns(
    dev: &CudaDevice,
    dtype: DType,
    x: u64,
    ld: usize,
    rows: usize,
    cols: usize,
) -> Result<DeviceBuffer> {
    let tiles = cols.div_ceil(COLS_TILE);
    let (segs, per) = segments(rows, tiles, MIN_SEGMENT_ROWS);
    let name = kernels::kernel!("sum_cols").of(dtype);
    let mut out = DeviceBuffer::alloc(dev, dtype, cols)?;
    if cols == 0 {
        return Ok(out);
    }
    let pass = |x: u64, ld: usize, rows: usize, per: usize, segs: usize, y: u64| {
        let args = [
            Arg::U64(x),
            Arg::U64(ld as u64),
            Arg::U64(y),
            Arg::U64(rows as u64),
            Arg::U64(cols as u64),
            Arg::U64(per as u64),
        ];
        launch_grid(dev, "sum", name, (tiles as u32, segs as u32), &args)
    };
    if segs == 1 {
        pass(x, ld, rows, per, 1, out.ptr_mut(&dev.stream))?;
        return Ok(out);
    }
    // Each segment's column sums, then the segments added up in order, as a [segs, cols]
    // matrix summed down its columns by one block row.
    let mut partial = DeviceBuffer::alloc(dev, dtype, segs * cols)?;
    let p = partial.ptr_mut(&dev.stream);
    pass(x, ld, rows, per, segs, p)?;
    pass(p, cols, segs, segs, 1, out.ptr_mut(&dev.stream))?;
    Ok(out)
}

/// The sums of `m` runs of `k` elements of `x` read through `lk` (kept dims first, reduced dims
/// last): a new buffer of `m` elements.
pub(super) fn sum_runs(
    dev: &CudaDevice,
    xb: &DeviceBuffer,
    lk: KernelLayout,
    m: usize,
    k: usize,
) -> Result<DeviceBuffer> {
    let dtype = xb.dtype();
    let name = kernels::kernel!("sum").of(dtype);
    let mut out = DeviceBuffer::alloc(dev, dtype, m)?;
    if m == 0 {
        return Ok(out);
    }
    let (segs, per) = segments(k, m, MIN_SEGMENT);
    let pass = |l: KernelLayout, x: u64, k: usize, segs: usize, per: usize, y: u64| {
        let args = [
            Arg::Layout(l),
            Arg::U64(x),
            Arg::U64(y),
            Arg::U64(m as u64),
            Arg::U64(k as u64),
            Arg::U64(segs as u64),
            Arg::U64(per as u64),
        ];
        let blocks = (m * segs).min(1 << 20) as u32;
        launch_grid(dev, "sum", name, (blocks, 1), &args)
    };
    let x = xb.ptr(&dev.stream);
    if segs == 1 {
        pass(lk, x, k, 1, k, out.ptr_mut(&dev.stream))?;
        return Ok(out);
    }
    // Each run's segment sums, then each run's segments added up in order.
    let mut partial = DeviceBuffer::alloc(dev, dtype, m * segs)?;
    let p = partial.ptr_mut(&dev.stream);
    pass(lk, x, k, segs, per, p)?;
    let dense = KernelLayout::contiguous(&[m, segs]).expect("invariant: two dims fit");
    pass(dense, p, segs, 1, segs, out.ptr_mut(&dev.stream))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::segments;

    #[test]
    fn reductions_are_cut_into_enough_segments_of_a_useful_length() {
        // A full sum of 2^20 elements: 256 segments of 4096.
        assert_eq!(segments(1 << 20, 1, 4096), (256, 4096));
        // A bias gradient of 2048 columns (64 tiles) over 4096 rows: 8 segments of 512 rows.
        assert_eq!(segments(4096, 64, 64), (8, 512));
        // Few rows: one segment.
        assert_eq!(segments(100, 1, 64), (2, 50));
        assert_eq!(segments(10, 1, 64), (1, 10));
        // Many outputs already fill the GPU: one segment each.
        assert_eq!(segments(100_000, 4096, 4096), (1, 100_000));
        // Every element is in exactly one segment.
        for (len, blocks, min) in [
            (1usize, 1, 64),
            (4097, 3, 4096),
            (999_999, 7, 4096),
            (0, 1, 64),
        ] {
            let (segs, per) = segments(len, blocks, min);
            assert!(
                segs * per >= len && (segs - 1) * per < len.max(1),
                "{len}: {segs} x {per}"
            );
        }
    }
}
