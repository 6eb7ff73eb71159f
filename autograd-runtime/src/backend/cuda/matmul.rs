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

use super::buffer::{map_dtype, DTypeMap, DeviceBuffer, DeviceElement, GemmCall};
use super::device::CudaDevice;
use super::launch::{dev_of, device_buffer, wrap};
use super::Cuda;
use crate::backend::{broadcast_shapes, Backend};
use crate::layout::Layout;
use crate::{Error, Result, Tensor};

/// How cuBLAS reads one operand of `rows × cols` matrices.
struct Operand {
    /// The tensor read (the input itself, or a contiguous copy of it).
    tensor: Tensor,
    /// `true` when each matrix is stored column by column (a transposed view).
    transposed: bool,
    /// The leading dimension: the stride between rows (or columns, when `transposed`).
    ld: usize,
    /// Elements between consecutive matrices of the batch (0 for a broadcast matrix).
    batch_stride: usize,
    /// Offset of the first element.
    offset: usize,
}

impl Operand {
    /// `t` broadcast to `batch` matrices of `rows × cols`.
    fn new(t: &Tensor, batch: &[usize], rows: usize, cols: usize) -> Result<Operand> {
        let mut full = batch.to_vec();
        full.extend([rows, cols]);
        let layout = t.layout().expand(&full)?;
        if let Some(op) = Operand::describe(t, &layout, rows, cols) {
            return Ok(op);
        }
        // Materialise the broadcast batch densely, then it is plain row-major.
        let expanded = Tensor::from_parts(t.0.storage.clone(), layout);
        let dense = Cuda.contiguous(&expanded)?;
        Ok(Operand {
            tensor: dense,
            transposed: false,
            ld: cols.max(1),
            batch_stride: rows * cols,
            offset: 0,
        })
    }

    /// `layout` as a cuBLAS operand, if it is one.
    fn describe(t: &Tensor, layout: &Layout, rows: usize, cols: usize) -> Option<Operand> {
        let nd = layout.shape.len();
        let (rs, cs) = (layout.strides[nd - 2], layout.strides[nd - 1]);
        // The batch dims must collapse into one stride (size-1 dims do not matter).
        let batch: Vec<(usize, usize)> = layout.shape[..nd - 2]
            .iter()
            .zip(&layout.strides[..nd - 2])
            .filter(|(&size, _)| size != 1)
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
        Some(Operand {
            tensor: t.clone(),
            transposed,
            ld,
            batch_stride,
            offset: layout.offset,
        })
    }
}

/// PyTorch's `matmul` of two operands of at least 2 dims (checked by the op layer).
pub(super) fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.check_same_dtype_device("matmul", b)?;
    let dev = dev_of(a)?;
    let (ra, rb) = (a.shape().len(), b.shape().len());
    let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let n = b.shape()[rb - 1];
    let batch = broadcast_shapes(&a.shape()[..ra - 2], &b.shape()[..rb - 2])?;
    let count: usize = batch.iter().product();
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let len = count * m * n;
    if len == 0 || k == 0 {
        // An empty inner dimension sums nothing: zeros (cuBLAS would leave `beta·C`).
        return Ok(wrap(dev, DeviceBuffer::zeros(dev, a.dtype(), len)?, &shape));
    }
    let lhs = Operand::new(a, &batch, m, k)?;
    let rhs = Operand::new(b, &batch, k, n)?;
    let dims = [m, n, k, lhs.ld, rhs.ld, count];
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
    let mut out = DeviceBuffer::alloc(dev, a.dtype(), len)?;
    gemm(dev, &lhs, &rhs, &mut out, [m, n, k], count)?;
    // The operands' storages are read on the stream; keep them alive until the call is issued.
    drop((lhs, rhs));
    Ok(wrap(dev, out, &shape))
}

/// `out = lhs · rhs` for `count` row-major `m × n` products.
fn gemm(
    dev: &CudaDevice,
    lhs: &Operand,
    rhs: &Operand,
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
    let ga = lhs.tensor.0.storage.data.read();
    let gb = (!lhs.tensor.shares_storage(&rhs.tensor)).then(|| rhs.tensor.0.storage.data.read());
    let ab = device_buffer(dev, "matmul", &ga)?;
    let bb = match &gb {
        Some(g) => device_buffer(dev, "matmul", g)?,
        None => ab,
    };
    let size = lhs.tensor.dtype().size_of() as u64;
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
    let result = map_dtype(lhs.tensor.dtype(), Gemm(&call));
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
    use super::Operand;
    use crate::{Result, Tensor};

    /// Which layouts reach cuBLAS as they are, and how (pure layout logic: needs no GPU).
    #[test]
    fn transposed_and_broadcast_operands_are_described_without_a_copy() -> Result<()> {
        let a = Tensor::zeros(&[3, 4], crate::DType::F32)?;
        let plain = Operand::describe(&a, &a.layout().expand(&[3, 4])?, 3, 4).unwrap();
        assert_eq!(
            (plain.transposed, plain.ld, plain.batch_stride),
            (false, 4, 0)
        );

        let t = a.transpose(0, 1)?; // 4 x 3, stored column by column
        let tr = Operand::describe(&t, &t.layout().expand(&[4, 3])?, 4, 3).unwrap();
        assert_eq!((tr.transposed, tr.ld), (true, 4));

        // A plain matrix against a batch of 5: batch stride 0.
        let bl = a.layout().expand(&[5, 3, 4])?;
        let broadcast = Operand::describe(&a, &bl, 3, 4).unwrap();
        assert_eq!((broadcast.transposed, broadcast.batch_stride), (false, 0));

        // A contiguous batch of 2 x 3 collapses into one batch stride of 12.
        let c = Tensor::zeros(&[2, 3, 3, 4], crate::DType::F32)?;
        let batched = Operand::describe(&c, c.layout(), 3, 4).unwrap();
        assert_eq!(batched.batch_stride, 12);

        // Batch dims permuted out of order cannot be one stride: copied instead.
        let p = c.permute(&[1, 0, 2, 3])?;
        assert!(Operand::describe(&p, p.layout(), 3, 4).is_none());
        Ok(())
    }
}
