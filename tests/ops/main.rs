//! The ops: first and second derivatives of every op against finite differences, 0-dim and
//! size-1 inputs, device threads and transfers, and CUDA tensors against the CPU (skipped, saying
//! why, without a GPU).

mod copy_conversions;
mod cuda;
mod devices;
mod dtypes;
mod einsum;
mod math_values;
mod matmul_fold;
mod ops_gradcheck;
mod pytorch_shape_reductions;
mod scatter;
mod small_shapes;
mod sort;
