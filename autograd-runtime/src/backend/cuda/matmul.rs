//! PyTorch's `matmul` on cuBLAS: one `gemm_strided_batched` call per product.
//!
//! cuBLAS is column-major; a row-major `C = A·B` is computed as the column-major
//! `Cᵀ = Bᵀ·Aᵀ`, which reads the row-major buffers as they are. An operand stored transposed
//! (the backward's `a.t()` and `b.t()`) becomes a transpose flag, and a batch that broadcasts
//! (a plain matrix against a batch) becomes batch stride 0, so neither is copied. Only a layout
//! cuBLAS cannot describe (a batch with irregular strides, a non-unit inner stride) is first
//! made contiguous.

use cudarc::cublas::result::CublasError;
use cudarc::cublas::sys::cublasOperation_t;

use super::buffer::{DTypeMap, DeviceBuffer, DeviceElement, GemmCall, map_dtype};
use super::device::CudaDevice;
use super::launch::{Dense, contiguous, wrap};
use crate::backend::{Out, broadcast_shapes};
use crate::layout::Layout;
use crate::{Error, Result};

/// One operand of `rows × cols` matrices: the buffer cuBLAS reads, and how.
struct Operand<'a> {
    /// The buffer read (the input's own, or a contiguous copy of it).
    buffer: Dense<'a>,
    geometry: Geometry,
}

/// How cuBLAS reads one operand's buffer.
struct Geometry {
    /// `true` when each matrix is stored column by column (a transposed view).
    transposed: bool,
    /// The leading dimension: the stride between rows (or columns, when `transposed`).
    ld: usize,
    /// Elements between consecutive matrices of the batch (0 for a broadcast matrix).
    batch_stride: usize,
    /// Offset of the first element.
    offset: usize,
}

impl<'a> Operand<'a> {
    /// `t` broadcast to `batch` matrices of `rows × cols`.
    fn new(
        dev: &CudaDevice,
        (t, lt): (&'a DeviceBuffer, &Layout),
        batch: &[usize],
        rows: usize,
        cols: usize,
    ) -> Result<Operand<'a>> {
        let mut full = batch.to_vec();
        full.extend([rows, cols]);
        let layout = lt.expand(&full)?;
        if let Some(geometry) = Geometry::describe(&layout, rows, cols) {
            return Ok(Operand {
                buffer: Dense::Borrowed(t),
                geometry,
            });
        }
        // Materialise the broadcast batch densely, then it is plain row-major.
        let dense = contiguous(dev, (t, &layout))?;
        Ok(Operand {
            buffer: Dense::Owned(dense),
            geometry: Geometry {
                transposed: false,
                ld: cols.max(1),
                batch_stride: rows * cols,
                offset: 0,
            },
        })
    }
}

impl Geometry {
    /// `layout` as a cuBLAS operand, if it is one.
    fn describe(layout: &Layout, rows: usize, cols: usize) -> Option<Geometry> {
        let nd = layout.shape.len();
        let (rs, cs) = (layout.strides[nd - 2], layout.strides[nd - 1]);
        // The batch dims must collapse into one stride (size-1 dims do not matter).
        let batch: Vec<(usize, usize)> = layout.shape[..nd - 2]
            .iter()
            .zip(&layout.strides[..nd - 2])
            .filter(|&(&size, _)| size != 1)
            .map(|(&size, &stride)| (size, stride))
            .collect();
        let collapses = batch.windows(2).all(|w| w[0].1 == w[1].1 * w[1].0);
        if !collapses {
            return None;
        }
        let batch_stride = batch.last().map_or(0, |&(_, s)| s);
        let row_major = (cs == 1 || cols == 1) && (rows == 1 || rs >= cols.max(1));
        let col_major = (rs == 1 || rows == 1) && (cols == 1 || cs >= rows.max(1));
        let (transposed, ld) = if row_major {
            (false, if rows == 1 { cols.max(1) } else { rs })
        } else if col_major {
            (true, if cols == 1 { rows.max(1) } else { cs })
        } else {
            return None;
        };
        Some(Geometry {
            transposed,
            ld,
            batch_stride,
            offset: layout.offset,
        })
    }
}

/// PyTorch's `matmul` of two operands of at least 2 dims (checked by the op layer).
pub(super) fn matmul(
    dev: &CudaDevice,
    a: (&DeviceBuffer, &Layout),
    b: (&DeviceBuffer, &Layout),
) -> Result<Out> {
    let (sa, sb) = (&a.1.shape, &b.1.shape);
    let dtype = a.0.dtype();
    let (ra, rb) = (sa.len(), sb.len());
    let (m, k) = (sa[ra - 2], sa[ra - 1]);
    let n = sb[rb - 1];
    let batch = broadcast_shapes(&sa[..ra - 2], &sb[..rb - 2])?;
    let count: usize = batch.iter().product();
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let len = count * m * n;
    if len == 0 || k == 0 {
        // An empty inner dimension sums nothing: zeros (cuBLAS would leave `beta·C`).
        return Ok(wrap(DeviceBuffer::zeros(dev, dtype, len)?, &shape));
    }
    let lhs = Operand::new(dev, a, &batch, m, k)?;
    let rhs = Operand::new(dev, b, &batch, k, n)?;
    let dims = [m, n, k, lhs.geometry.ld, rhs.geometry.ld, count];
    let too_big = |v: &usize| i32::try_from(*v).is_err();
    if dims.iter().any(too_big) {
        return Err(Error::Device {
            device: dev.device(),
            op: "matmul",
            message: format!(
                "a dimension of {m}x{k} @ {k}x{n} (batch {count}) exceeds cuBLAS's 32-bit sizes"
            ),
        });
    }
    let mut out = DeviceBuffer::alloc(dev, dtype, len)?;
    gemm(dev, &lhs, &rhs, &mut out, [m, n, k], count)?;
    // The operands' buffers are read on the stream; keep them alive until the call is issued.
    drop((lhs, rhs));
    Ok(wrap(out, &shape))
}

/// `out = lhs · rhs` for `count` row-major `m × n` products.
fn gemm(
    dev: &CudaDevice,
    lhs: &Operand<'_>,
    rhs: &Operand<'_>,
    out: &mut DeviceBuffer,
    [m, n, k]: [usize; 3],
    count: usize,
) -> Result<()> {
    let op = |t: bool| {
        if t {
            cublasOperation_t::CUBLAS_OP_T
        } else {
            cublasOperation_t::CUBLAS_OP_N
        }
    };
    let (ab, bb) = (lhs.buffer.buffer(), rhs.buffer.buffer());
    let (lhs, rhs) = (&lhs.geometry, &rhs.geometry);
    let size = ab.dtype().size_of() as u64;
    let a_ptr = ab.ptr(&dev.stream) + lhs.offset as u64 * size;
    let b_ptr = bb.ptr(&dev.stream) + rhs.offset as u64 * size;
    let c_ptr = out.ptr_mut(&dev.stream);
    dev.bind()?;
    let blas = dev.blas.lock();
    let handle = *blas.handle();
    // Column-major Cᵀ (n × m, ldc = n) = op(B)ᵀ-view (n × k) · op(A)ᵀ-view (k × m).
    let (ta, tb) = (op(rhs.transposed), op(lhs.transposed));
    let (mi, ni, ki) = (n as i32, m as i32, k as i32);
    let (lda, ldb, ldc) = (rhs.ld as i32, lhs.ld as i32, n as i32);
    let (sa, sb, sc) = (
        rhs.batch_stride as i64,
        lhs.batch_stride as i64,
        (m * n) as i64,
    );
    let call = GemmCall {
        handle,
        transa: ta,
        transb: tb,
        m: mi,
        n: ni,
        k: ki,
        a: b_ptr,
        lda,
        stride_a: sa,
        b: a_ptr,
        ldb,
        stride_b: sb,
        c: c_ptr,
        ldc,
        stride_c: sc,
        batch: count as i32,
    };
    let result = map_dtype(ab.dtype(), Gemm(&call));
    result.map_err(|e| Error::Device {
        device: dev.device(),
        op: "matmul",
        message: format!("cuBLAS failed: {e:?}"),
    })
}

/// One `?gemmStridedBatched` call, at the operands' element type.
struct Gemm<'a>(&'a GemmCall);

impl DTypeMap for Gemm<'_> {
    type Output = std::result::Result<(), CublasError>;

    fn f<T: DeviceElement>(self) -> Self::Output {
        // SAFETY: `gemm` built the call from live device buffers of this device (held by the
        // storage guards and by `out`), offset to the operands' first elements; `Operand`
        // checked that each layout is a (possibly transposed) strided matrix batch with these
        // leading dimensions and batch strides, so cuBLAS reads only elements of the operands,
        // and `out` holds `count * m * n` elements, all of the operands' dtype `T`. The handle
        // is used under its lock, on this device's stream (set when it was created).
        unsafe { T::gemm(self.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::Geometry;
    use crate::Result;
    use crate::layout::Layout;

    /// Which layouts reach cuBLAS as they are, and how (pure layout logic: needs no GPU).
    #[test]
    fn transposed_and_broadcast_operands_are_described_without_a_copy() -> Result<()> {
        let a = Layout::contiguous(&[3, 4]);
        let plain = Geometry::describe(&a.expand(&[3, 4])?, 3, 4).unwrap();
        assert_eq!(
            (plain.transposed, plain.ld, plain.batch_stride),
            (false, 4, 0)
        );

        let t = a.transpose(0, 1); // 4 x 3, stored column by column
        let tr = Geometry::describe(&t.expand(&[4, 3])?, 4, 3).unwrap();
        assert_eq!((tr.transposed, tr.ld), (true, 4));

        // A plain matrix against a batch of 5: batch stride 0.
        let bl = a.expand(&[5, 3, 4])?;
        let broadcast = Geometry::describe(&bl, 3, 4).unwrap();
        assert_eq!((broadcast.transposed, broadcast.batch_stride), (false, 0));

        // A contiguous batch of 2 x 3 collapses into one batch stride of 12.
        let c = Layout::contiguous(&[2, 3, 3, 4]);
        let batched = Geometry::describe(&c, 3, 4).unwrap();
        assert_eq!(batched.batch_stride, 12);

        // Batch dims permuted out of order cannot be one stride: copied instead.
        let p = c.permute(&[1, 0, 2, 3]);
        assert!(Geometry::describe(&p, 3, 4).is_none());
        Ok(())
    }
}
