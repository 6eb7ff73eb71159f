//! `sort`, `argsort`, `topk`, `max_dim`/`min_dim` and `max()`/`min()` against PyTorch 2.15
//! (values printed by `tests/ops/sort_values.py`): every dtype, NaN (the largest value) and ties
//! (kept in order by the stable sort), the gradients (scattered back to the picked positions;
//! shared among ties by `max()`/`min()`), node names, first and second derivatives against
//! finite differences, and PyTorch's error texts.

use autograd::{DType, Tensor, gradcheck, gradgradcheck};

type R = autograd::Result<()>;

const NAN: f64 = f64::NAN;
/// The `[2, 6]` inputs of `sort_values.py`: floats (NaN, ties), integers (ties), bools.
const FLOATS: [f64; 12] = [3.0, NAN, 1.0, 3.0, -2.0, 0.5, 2.0, -1.0, 2.0, NAN, 7.0, 2.0];
const INTS: [f64; 12] = [3.0, 7.0, 1.0, 3.0, 0.0, 5.0, 2.0, 2.0, 9.0, 4.0, 2.0, 0.0];
const BOOLS: [f64; 12] = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0];

/// PyTorch's output: `dtype op args | shape | values (as float64) | indices`.
const CASES: &str = "\
float64 sort 0 0 | 2x6 | 2.0 -1.0 1.0 3.0 -2.0 0.5 3.0 nan 2.0 nan 7.0 2.0 | 1 1 0 0 0 0 0 0 1 1 1 1
float64 sort 0 1 | 2x6 | 3.0 nan 2.0 nan 7.0 2.0 2.0 -1.0 1.0 3.0 -2.0 0.5 | 0 0 1 1 1 1 1 1 0 0 0 0
float64 sort 1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 0 3 1 1 0 2 5 4 3
float64 sort 1 1 | 2x6 | nan 3.0 3.0 1.0 0.5 -2.0 nan 7.0 2.0 2.0 2.0 -1.0 | 1 0 3 2 5 4 3 4 0 2 5 1
float64 sort -1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 0 3 1 1 0 2 5 4 3
float64 sort -1 1 | 2x6 | nan 3.0 3.0 1.0 0.5 -2.0 nan 7.0 2.0 2.0 2.0 -1.0 | 1 0 3 2 5 4 3 4 0 2 5 1
float64 topk 1 1 1 | 2x1 | nan nan | 1 3
float64 topk 2 1 0 | 2x2 | -2.0 0.5 -1.0 2.0 | 4 5 1 5
float64 topk 6 1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 3 0 1 1 5 0 2 4 3
float64 topk 2 0 1 | 2x6 | 3.0 nan 2.0 nan 7.0 2.0 2.0 -1.0 1.0 3.0 -2.0 0.5 | 0 0 1 1 1 1 1 1 0 0 0 0
float64 topk 0 1 1 | 2x0 |  |
float64 max_dim 0 0 | 6 | 3.0 nan 2.0 nan 7.0 2.0 | 0 0 1 1 1 1
float64 min_dim 0 0 | 6 | 2.0 nan 1.0 nan -2.0 0.5 | 1 0 0 1 0 0
float64 max_dim 0 1 | 1x6 | 3.0 nan 2.0 nan 7.0 2.0 | 0 0 1 1 1 1
float64 min_dim 0 1 | 1x6 | 2.0 nan 1.0 nan -2.0 0.5 | 1 0 0 1 0 0
float64 max_dim 1 0 | 2 | nan nan | 1 3
float64 min_dim 1 0 | 2 | nan nan | 1 3
float64 max_dim 1 1 | 2x1 | nan nan | 1 3
float64 min_dim 1 1 | 2x1 | nan nan | 1 3
float64 max - |  | nan |
float64 min - |  | nan |
float64 max_tail - |  | 7.0 |
float32 sort 0 0 | 2x6 | 2.0 -1.0 1.0 3.0 -2.0 0.5 3.0 nan 2.0 nan 7.0 2.0 | 1 1 0 0 0 0 0 0 1 1 1 1
float32 sort 0 1 | 2x6 | 3.0 nan 2.0 nan 7.0 2.0 2.0 -1.0 1.0 3.0 -2.0 0.5 | 0 0 1 1 1 1 1 1 0 0 0 0
float32 sort 1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 0 3 1 1 0 2 5 4 3
float32 sort 1 1 | 2x6 | nan 3.0 3.0 1.0 0.5 -2.0 nan 7.0 2.0 2.0 2.0 -1.0 | 1 0 3 2 5 4 3 4 0 2 5 1
float32 sort -1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 0 3 1 1 0 2 5 4 3
float32 sort -1 1 | 2x6 | nan 3.0 3.0 1.0 0.5 -2.0 nan 7.0 2.0 2.0 2.0 -1.0 | 1 0 3 2 5 4 3 4 0 2 5 1
float32 topk 1 1 1 | 2x1 | nan nan | 1 3
float32 topk 2 1 0 | 2x2 | -2.0 0.5 -1.0 2.0 | 4 5 1 5
float32 topk 6 1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 3 0 1 1 5 0 2 4 3
float32 topk 2 0 1 | 2x6 | 3.0 nan 2.0 nan 7.0 2.0 2.0 -1.0 1.0 3.0 -2.0 0.5 | 0 0 1 1 1 1 1 1 0 0 0 0
float32 topk 0 1 1 | 2x0 |  |
float32 max_dim 0 0 | 6 | 3.0 nan 2.0 nan 7.0 2.0 | 0 0 1 1 1 1
float32 min_dim 0 0 | 6 | 2.0 nan 1.0 nan -2.0 0.5 | 1 0 0 1 0 0
float32 max_dim 0 1 | 1x6 | 3.0 nan 2.0 nan 7.0 2.0 | 0 0 1 1 1 1
float32 min_dim 0 1 | 1x6 | 2.0 nan 1.0 nan -2.0 0.5 | 1 0 0 1 0 0
float32 max_dim 1 0 | 2 | nan nan | 1 3
float32 min_dim 1 0 | 2 | nan nan | 1 3
float32 max_dim 1 1 | 2x1 | nan nan | 1 3
float32 min_dim 1 1 | 2x1 | nan nan | 1 3
float32 max - |  | nan |
float32 min - |  | nan |
float32 max_tail - |  | 7.0 |
float16 sort 0 0 | 2x6 | 2.0 -1.0 1.0 3.0 -2.0 0.5 3.0 nan 2.0 nan 7.0 2.0 | 1 1 0 0 0 0 0 0 1 1 1 1
float16 sort 0 1 | 2x6 | 3.0 nan 2.0 nan 7.0 2.0 2.0 -1.0 1.0 3.0 -2.0 0.5 | 0 0 1 1 1 1 1 1 0 0 0 0
float16 sort 1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 0 3 1 1 0 2 5 4 3
float16 sort 1 1 | 2x6 | nan 3.0 3.0 1.0 0.5 -2.0 nan 7.0 2.0 2.0 2.0 -1.0 | 1 0 3 2 5 4 3 4 0 2 5 1
float16 sort -1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 0 3 1 1 0 2 5 4 3
float16 sort -1 1 | 2x6 | nan 3.0 3.0 1.0 0.5 -2.0 nan 7.0 2.0 2.0 2.0 -1.0 | 1 0 3 2 5 4 3 4 0 2 5 1
float16 topk 1 1 1 | 2x1 | nan nan | 1 3
float16 topk 2 1 0 | 2x2 | -2.0 0.5 -1.0 2.0 | 4 5 1 5
float16 topk 6 1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 3 0 1 1 5 0 2 4 3
float16 topk 2 0 1 | 2x6 | 3.0 nan 2.0 nan 7.0 2.0 2.0 -1.0 1.0 3.0 -2.0 0.5 | 0 0 1 1 1 1 1 1 0 0 0 0
float16 topk 0 1 1 | 2x0 |  |
float16 max_dim 0 0 | 6 | 3.0 nan 2.0 nan 7.0 2.0 | 0 0 1 1 1 1
float16 min_dim 0 0 | 6 | 2.0 nan 1.0 nan -2.0 0.5 | 1 0 0 1 0 0
float16 max_dim 0 1 | 1x6 | 3.0 nan 2.0 nan 7.0 2.0 | 0 0 1 1 1 1
float16 min_dim 0 1 | 1x6 | 2.0 nan 1.0 nan -2.0 0.5 | 1 0 0 1 0 0
float16 max_dim 1 0 | 2 | nan nan | 1 3
float16 min_dim 1 0 | 2 | nan nan | 1 3
float16 max_dim 1 1 | 2x1 | nan nan | 1 3
float16 min_dim 1 1 | 2x1 | nan nan | 1 3
float16 max - |  | nan |
float16 min - |  | nan |
float16 max_tail - |  | 7.0 |
bfloat16 sort 0 0 | 2x6 | 2.0 -1.0 1.0 3.0 -2.0 0.5 3.0 nan 2.0 nan 7.0 2.0 | 1 1 0 0 0 0 0 0 1 1 1 1
bfloat16 sort 0 1 | 2x6 | 3.0 nan 2.0 nan 7.0 2.0 2.0 -1.0 1.0 3.0 -2.0 0.5 | 0 0 1 1 1 1 1 1 0 0 0 0
bfloat16 sort 1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 0 3 1 1 0 2 5 4 3
bfloat16 sort 1 1 | 2x6 | nan 3.0 3.0 1.0 0.5 -2.0 nan 7.0 2.0 2.0 2.0 -1.0 | 1 0 3 2 5 4 3 4 0 2 5 1
bfloat16 sort -1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 0 3 1 1 0 2 5 4 3
bfloat16 sort -1 1 | 2x6 | nan 3.0 3.0 1.0 0.5 -2.0 nan 7.0 2.0 2.0 2.0 -1.0 | 1 0 3 2 5 4 3 4 0 2 5 1
bfloat16 topk 1 1 1 | 2x1 | nan nan | 1 3
bfloat16 topk 2 1 0 | 2x2 | -2.0 0.5 -1.0 2.0 | 4 5 1 5
bfloat16 topk 6 1 0 | 2x6 | -2.0 0.5 1.0 3.0 3.0 nan -1.0 2.0 2.0 2.0 7.0 nan | 4 5 2 3 0 1 1 5 0 2 4 3
bfloat16 topk 2 0 1 | 2x6 | 3.0 nan 2.0 nan 7.0 2.0 2.0 -1.0 1.0 3.0 -2.0 0.5 | 0 0 1 1 1 1 1 1 0 0 0 0
bfloat16 topk 0 1 1 | 2x0 |  |
bfloat16 max_dim 0 0 | 6 | 3.0 nan 2.0 nan 7.0 2.0 | 0 0 1 1 1 1
bfloat16 min_dim 0 0 | 6 | 2.0 nan 1.0 nan -2.0 0.5 | 1 0 0 1 0 0
bfloat16 max_dim 0 1 | 1x6 | 3.0 nan 2.0 nan 7.0 2.0 | 0 0 1 1 1 1
bfloat16 min_dim 0 1 | 1x6 | 2.0 nan 1.0 nan -2.0 0.5 | 1 0 0 1 0 0
bfloat16 max_dim 1 0 | 2 | nan nan | 1 3
bfloat16 min_dim 1 0 | 2 | nan nan | 1 3
bfloat16 max_dim 1 1 | 2x1 | nan nan | 1 3
bfloat16 min_dim 1 1 | 2x1 | nan nan | 1 3
bfloat16 max - |  | nan |
bfloat16 min - |  | nan |
bfloat16 max_tail - |  | 7.0 |
int64 sort 0 0 | 2x6 | 2.0 2.0 1.0 3.0 0.0 0.0 3.0 7.0 9.0 4.0 2.0 5.0 | 1 1 0 0 0 1 0 0 1 1 1 0
int64 sort 0 1 | 2x6 | 3.0 7.0 9.0 4.0 2.0 5.0 2.0 2.0 1.0 3.0 0.0 0.0 | 0 0 1 1 1 0 1 1 0 0 0 1
int64 sort 1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 0 1 4 3 2
int64 sort 1 1 | 2x6 | 7.0 5.0 3.0 3.0 1.0 0.0 9.0 4.0 2.0 2.0 2.0 0.0 | 1 5 0 3 2 4 2 3 0 1 4 5
int64 sort -1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 0 1 4 3 2
int64 sort -1 1 | 2x6 | 7.0 5.0 3.0 3.0 1.0 0.0 9.0 4.0 2.0 2.0 2.0 0.0 | 1 5 0 3 2 4 2 3 0 1 4 5
int64 topk 1 1 1 | 2x1 | 7.0 9.0 | 1 2
int64 topk 2 1 0 | 2x2 | 0.0 1.0 0.0 2.0 | 4 2 5 1
int64 topk 6 1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 1 4 0 3 2
int64 topk 2 0 1 | 2x6 | 3.0 7.0 9.0 4.0 2.0 5.0 2.0 2.0 1.0 3.0 0.0 0.0 | 0 0 1 1 1 0 1 1 0 0 0 1
int64 topk 0 1 1 | 2x0 |  |
int64 max_dim 0 0 | 6 | 3.0 7.0 9.0 4.0 2.0 5.0 | 0 0 1 1 1 0
int64 min_dim 0 0 | 6 | 2.0 2.0 1.0 3.0 0.0 0.0 | 1 1 0 0 0 1
int64 max_dim 0 1 | 1x6 | 3.0 7.0 9.0 4.0 2.0 5.0 | 0 0 1 1 1 0
int64 min_dim 0 1 | 1x6 | 2.0 2.0 1.0 3.0 0.0 0.0 | 1 1 0 0 0 1
int64 max_dim 1 0 | 2 | 7.0 9.0 | 1 2
int64 min_dim 1 0 | 2 | 0.0 0.0 | 4 5
int64 max_dim 1 1 | 2x1 | 7.0 9.0 | 1 2
int64 min_dim 1 1 | 2x1 | 0.0 0.0 | 4 5
int64 max - |  | 9.0 |
int64 min - |  | 0.0 |
int64 max_tail - |  | 5.0 |
int32 sort 0 0 | 2x6 | 2.0 2.0 1.0 3.0 0.0 0.0 3.0 7.0 9.0 4.0 2.0 5.0 | 1 1 0 0 0 1 0 0 1 1 1 0
int32 sort 0 1 | 2x6 | 3.0 7.0 9.0 4.0 2.0 5.0 2.0 2.0 1.0 3.0 0.0 0.0 | 0 0 1 1 1 0 1 1 0 0 0 1
int32 sort 1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 0 1 4 3 2
int32 sort 1 1 | 2x6 | 7.0 5.0 3.0 3.0 1.0 0.0 9.0 4.0 2.0 2.0 2.0 0.0 | 1 5 0 3 2 4 2 3 0 1 4 5
int32 sort -1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 0 1 4 3 2
int32 sort -1 1 | 2x6 | 7.0 5.0 3.0 3.0 1.0 0.0 9.0 4.0 2.0 2.0 2.0 0.0 | 1 5 0 3 2 4 2 3 0 1 4 5
int32 topk 1 1 1 | 2x1 | 7.0 9.0 | 1 2
int32 topk 2 1 0 | 2x2 | 0.0 1.0 0.0 2.0 | 4 2 5 1
int32 topk 6 1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 1 4 0 3 2
int32 topk 2 0 1 | 2x6 | 3.0 7.0 9.0 4.0 2.0 5.0 2.0 2.0 1.0 3.0 0.0 0.0 | 0 0 1 1 1 0 1 1 0 0 0 1
int32 topk 0 1 1 | 2x0 |  |
int32 max_dim 0 0 | 6 | 3.0 7.0 9.0 4.0 2.0 5.0 | 0 0 1 1 1 0
int32 min_dim 0 0 | 6 | 2.0 2.0 1.0 3.0 0.0 0.0 | 1 1 0 0 0 1
int32 max_dim 0 1 | 1x6 | 3.0 7.0 9.0 4.0 2.0 5.0 | 0 0 1 1 1 0
int32 min_dim 0 1 | 1x6 | 2.0 2.0 1.0 3.0 0.0 0.0 | 1 1 0 0 0 1
int32 max_dim 1 0 | 2 | 7.0 9.0 | 1 2
int32 min_dim 1 0 | 2 | 0.0 0.0 | 4 5
int32 max_dim 1 1 | 2x1 | 7.0 9.0 | 1 2
int32 min_dim 1 1 | 2x1 | 0.0 0.0 | 4 5
int32 max - |  | 9.0 |
int32 min - |  | 0.0 |
int32 max_tail - |  | 5.0 |
uint8 sort 0 0 | 2x6 | 2.0 2.0 1.0 3.0 0.0 0.0 3.0 7.0 9.0 4.0 2.0 5.0 | 1 1 0 0 0 1 0 0 1 1 1 0
uint8 sort 0 1 | 2x6 | 3.0 7.0 9.0 4.0 2.0 5.0 2.0 2.0 1.0 3.0 0.0 0.0 | 0 0 1 1 1 0 1 1 0 0 0 1
uint8 sort 1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 0 1 4 3 2
uint8 sort 1 1 | 2x6 | 7.0 5.0 3.0 3.0 1.0 0.0 9.0 4.0 2.0 2.0 2.0 0.0 | 1 5 0 3 2 4 2 3 0 1 4 5
uint8 sort -1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 0 1 4 3 2
uint8 sort -1 1 | 2x6 | 7.0 5.0 3.0 3.0 1.0 0.0 9.0 4.0 2.0 2.0 2.0 0.0 | 1 5 0 3 2 4 2 3 0 1 4 5
uint8 topk 1 1 1 | 2x1 | 7.0 9.0 | 1 2
uint8 topk 2 1 0 | 2x2 | 0.0 1.0 0.0 2.0 | 4 2 5 1
uint8 topk 6 1 0 | 2x6 | 0.0 1.0 3.0 3.0 5.0 7.0 0.0 2.0 2.0 2.0 4.0 9.0 | 4 2 0 3 5 1 5 1 4 0 3 2
uint8 topk 2 0 1 | 2x6 | 3.0 7.0 9.0 4.0 2.0 5.0 2.0 2.0 1.0 3.0 0.0 0.0 | 0 0 1 1 1 0 1 1 0 0 0 1
uint8 topk 0 1 1 | 2x0 |  |
uint8 max_dim 0 0 | 6 | 3.0 7.0 9.0 4.0 2.0 5.0 | 0 0 1 1 1 0
uint8 min_dim 0 0 | 6 | 2.0 2.0 1.0 3.0 0.0 0.0 | 1 1 0 0 0 1
uint8 max_dim 0 1 | 1x6 | 3.0 7.0 9.0 4.0 2.0 5.0 | 0 0 1 1 1 0
uint8 min_dim 0 1 | 1x6 | 2.0 2.0 1.0 3.0 0.0 0.0 | 1 1 0 0 0 1
uint8 max_dim 1 0 | 2 | 7.0 9.0 | 1 2
uint8 min_dim 1 0 | 2 | 0.0 0.0 | 4 5
uint8 max_dim 1 1 | 2x1 | 7.0 9.0 | 1 2
uint8 min_dim 1 1 | 2x1 | 0.0 0.0 | 4 5
uint8 max - |  | 9.0 |
uint8 min - |  | 0.0 |
uint8 max_tail - |  | 5.0 |
bool sort 0 0 | 2x6 | 0.0 0.0 1.0 0.0 0.0 1.0 1.0 0.0 1.0 1.0 0.0 1.0 | 1 0 0 0 0 0 0 1 1 1 1 1
bool sort 0 1 | 2x6 | 1.0 0.0 1.0 1.0 0.0 1.0 0.0 0.0 1.0 0.0 0.0 1.0 | 0 0 0 1 0 0 1 1 1 0 1 1
bool sort 1 0 | 2x6 | 0.0 0.0 0.0 1.0 1.0 1.0 0.0 0.0 0.0 1.0 1.0 1.0 | 1 3 4 0 2 5 0 1 4 2 3 5
bool sort 1 1 | 2x6 | 1.0 1.0 1.0 0.0 0.0 0.0 1.0 1.0 1.0 0.0 0.0 0.0 | 0 2 5 1 3 4 2 3 5 0 1 4
bool sort -1 0 | 2x6 | 0.0 0.0 0.0 1.0 1.0 1.0 0.0 0.0 0.0 1.0 1.0 1.0 | 1 3 4 0 2 5 0 1 4 2 3 5
bool sort -1 1 | 2x6 | 1.0 1.0 1.0 0.0 0.0 0.0 1.0 1.0 1.0 0.0 0.0 0.0 | 0 2 5 1 3 4 2 3 5 0 1 4
bool max_dim 0 0 | 6 | 1.0 0.0 1.0 1.0 0.0 1.0 | 0 0 0 1 0 0
bool min_dim 0 0 | 6 | 0.0 0.0 1.0 0.0 0.0 1.0 | 1 0 0 0 0 0
bool max_dim 0 1 | 1x6 | 1.0 0.0 1.0 1.0 0.0 1.0 | 0 0 0 1 0 0
bool min_dim 0 1 | 1x6 | 0.0 0.0 1.0 0.0 0.0 1.0 | 1 0 0 0 0 0
bool max_dim 1 0 | 2 | 1.0 1.0 | 0 2
bool min_dim 1 0 | 2 | 0.0 0.0 | 1 0
bool max_dim 1 1 | 2x1 | 1.0 1.0 | 0 2
bool min_dim 1 1 | 2x1 | 0.0 0.0 | 1 0
bool max - |  | 1.0 |
bool min - |  | 0.0 |
bool max_tail - |  | 1.0 |
";

fn dtype_and_data(name: &str) -> (DType, &'static [f64; 12]) {
    match name {
        "float64" => (DType::F64, &FLOATS),
        "float32" => (DType::F32, &FLOATS),
        "float16" => (DType::F16, &FLOATS),
        "bfloat16" => (DType::BF16, &FLOATS),
        "int64" => (DType::I64, &INTS),
        "int32" => (DType::I32, &INTS),
        "uint8" => (DType::U8, &INTS),
        "bool" => (DType::Bool, &BOOLS),
        _ => panic!("unknown dtype {name}"),
    }
}

fn parse_f64s(s: &str) -> Vec<f64> {
    s.split_whitespace()
        .map(|v| if v == "nan" { NAN } else { v.parse().unwrap() })
        .collect()
}

fn parse_i64s(s: &str) -> Vec<i64> {
    s.split_whitespace().map(|v| v.parse().unwrap()).collect()
}

fn parse_shape(s: &str) -> Vec<usize> {
    if s.is_empty() {
        return vec![];
    }
    s.split('x').map(|v| v.parse().unwrap()).collect()
}

/// Equal, NaN equal to NaN.
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x.is_nan() && y.is_nan()) || x == y)
}

fn floats(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn every_dtype_sorts_selects_and_reduces_as_pytorch() -> R {
    let mut checked = 0;
    for line in CASES.lines() {
        let parts: Vec<&str> = line.split('|').map(str::trim).collect();
        let head: Vec<&str> = parts[0].split_whitespace().collect();
        let (dtype, data) = dtype_and_data(head[0]);
        let x = Tensor::from_vec(data.to_vec(), &[2, 6])?.to_dtype(dtype)?;
        let (shape, values) = (parse_shape(parts[1]), parse_f64s(parts[2]));
        let indices = parse_i64s(parts[3]);
        let arg = |i: usize| head[i].parse::<isize>().unwrap();
        let (v, i) = match head[1] {
            "sort" => {
                let (v, i) = x.sort(arg(2), arg(3) == 1, true)?;
                let a = x.argsort(arg(2), arg(3) == 1, true)?;
                assert_eq!(a.to_vec::<i64>()?, indices, "{line}: argsort");
                (v, Some(i))
            }
            "topk" => {
                let (k, dim) = (arg(2) as usize, arg(3));
                let (v, i) = x.topk(k, dim, arg(4) == 1, true)?;
                // PyTorch's positions exactly, ties included (not the lower position first).
                (v, Some(i))
            }
            "max_dim" | "min_dim" => {
                let (dim, keepdim) = (arg(2) as usize, arg(3) == 1);
                let (v, i) = if head[1] == "max_dim" {
                    x.max_dim(dim, keepdim)?
                } else {
                    x.min_dim(dim, keepdim)?
                };
                (v, Some(i))
            }
            "max" => (x.max()?, None),
            "min" => (x.min()?, None),
            "max_tail" => (x.narrow(1, 4, 2)?.max()?, None),
            op => panic!("unknown op {op}"),
        };
        assert_eq!(v.dtype(), dtype, "{line}");
        assert_eq!(v.shape(), &shape[..], "{line}");
        assert!(same(&floats(&v), &values), "{line}: got {:?}", floats(&v));
        if let Some(i) = i {
            assert_eq!(i.dtype(), DType::I64, "{line}");
            assert_eq!(i.shape(), &shape[..], "{line}");
            assert_eq!(i.to_vec::<i64>()?, indices, "{line}");
        }
        checked += 1;
    }
    assert_eq!(checked, 171);
    Ok(())
}

#[test]
fn sort_of_a_strided_view_sorts_its_own_lanes() -> R {
    // The transpose of the float input: its rows are the columns of `FLOATS`.
    let x = Tensor::from_vec(FLOATS.to_vec(), &[2, 6])?.t()?;
    let (v, i) = x.sort(1, true, true)?;
    assert_eq!(v.shape(), &[6, 2]);
    assert!(same(
        &floats(&v),
        &[3.0, 2.0, NAN, -1.0, 2.0, 1.0, NAN, 3.0, 7.0, -2.0, 2.0, 0.5]
    ));
    assert_eq!(i.to_vec::<i64>()?, vec![0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0]);
    Ok(())
}

#[test]
fn gradients_go_to_the_picked_positions_as_pytorchs() -> R {
    // `sort_values.py`'s `---grads` section.
    let x = || {
        Tensor::from_vec(vec![1.0f64, 3.0, 3.0, 3.0, 0.0, 0.0], &[2, 3])
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    let grad = |x: &Tensor| x.grad().unwrap().to_vec::<f64>().unwrap();
    let third = 1.0 / 3.0;

    let a = x();
    a.max()?.backward()?;
    assert_eq!(grad(&a), vec![0.0, third, third, third, 0.0, 0.0]);
    let a = x();
    a.min()?.backward()?;
    assert_eq!(grad(&a), vec![0.0, 0.0, 0.0, 0.0, 0.5, 0.5]);
    let y = Tensor::from_vec(vec![1.0f64, NAN, 2.0, NAN], &[4])?.requires_grad_(true)?;
    y.max()?.backward()?;
    assert_eq!(grad(&y), vec![0.0, 0.5, 0.0, 0.5]);

    let a = x();
    let (v, _) = a.sort(1, true, true)?;
    let w = Tensor::from_vec(vec![1.0f64, 10.0, 100.0], &[3])?;
    v.mul(&w)?.sum()?.backward()?;
    assert_eq!(grad(&a), vec![100.0, 1.0, 10.0, 1.0, 10.0, 100.0]);

    let a = x();
    let (v, _) = a.topk(2, 0, true, true)?;
    let w = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    v.mul(&w)?.sum()?.backward()?;
    assert_eq!(grad(&a), vec![4.0, 2.0, 3.0, 1.0, 5.0, 6.0]);

    let a = x();
    a.min_dim(1, false)?.0.sum()?.backward()?;
    assert_eq!(grad(&a), vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    Ok(())
}

#[test]
fn node_names_and_indices_are_pytorchs() -> R {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 4.0, 3.0], &[2, 2])?.requires_grad_(true)?;
    let name = |t: &Tensor| t.grad_fn().unwrap().name().to_string();
    let (sv, si) = x.sort(1, false, false)?;
    let (tv, ti) = x.topk(1, -1, true, true)?;
    let (xv, xi) = x.max_dim(1, false)?;
    let (nv, ni) = x.min_dim(1, false)?;
    assert_eq!(
        [
            name(&sv),
            name(&tv),
            name(&xv),
            name(&nv),
            name(&x.max()?),
            name(&x.min()?)
        ],
        [
            "SortBackward0",
            "TopkBackward0",
            "MaxBackward0",
            "MinBackward0",
            "MaxBackward1",
            "MinBackward1"
        ]
    );
    for i in [&si, &ti, &xi, &ni] {
        assert!(!i.requires_grad());
        assert!(i.grad_fn().is_none());
        assert_eq!(i.dtype(), DType::I64);
    }
    assert!(!x.argsort(0, false, false)?.requires_grad());
    Ok(())
}

#[test]
fn errors_are_pytorchs() -> R {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 4.0, 3.0], &[2, 2])?;
    let empty = Tensor::zeros(&[0], DType::F32)?;
    let empty_dim = Tensor::zeros(&[2, 0], DType::F32)?;
    let text = |r: autograd::Result<Tensor>| r.unwrap_err().to_string();
    let cases = [
        (
            text(x.topk(3, 1, true, true).map(|r| r.0)),
            "selected index k out of range",
        ),
        (
            text(x.topk(1, 2, true, true).map(|r| r.0)),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
        ),
        (
            text(x.sort(2, false, false).map(|r| r.0)),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
        ),
        (
            text(x.argsort(-3, false, false)),
            "Dimension out of range (expected to be in range of [-2, 1], but got -3)",
        ),
        (
            text(empty.max()),
            "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the \
             reduction dim with the 'dim' argument.",
        ),
        (
            text(empty.min()),
            "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the \
             reduction dim with the 'dim' argument.",
        ),
        (
            text(empty_dim.max_dim(1, false).map(|r| r.0)),
            "max(): Expected reduction dim 1 to have non-zero size.",
        ),
        (
            text(empty_dim.min_dim(1, false).map(|r| r.0)),
            "min(): Expected reduction dim 1 to have non-zero size.",
        ),
        (
            text(
                Tensor::from_vec(vec![true, false], &[2])?
                    .topk(1, 0, true, true)
                    .map(|r| r.0),
            ),
            "topk does not support bool dtypes on CPU",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    Ok(())
}

#[test]
fn zero_dim_and_empty_inputs_are_pytorchs() -> R {
    let s = Tensor::scalar(2.5f32);
    for (v, i) in [
        s.sort(0, false, true)?,
        s.topk(1, -1, true, true)?,
        s.topk(0, 0, true, true)?,
        s.min_dim(0, true)?,
    ] {
        assert_eq!((v.shape(), v.item::<f32>()?), (&[][..], 2.5));
        assert_eq!((i.shape(), i.item::<i64>()?), (&[][..], 0));
    }
    assert_eq!(s.argsort(0, false, true)?.item::<i64>()?, 0);
    // An empty dim sorts to empty results; k = 0 selects nothing.
    let e = Tensor::zeros(&[2, 0], DType::F32)?;
    let (v, i) = e.sort(1, false, true)?;
    assert_eq!((v.shape(), i.shape()), (&[2, 0][..], &[2, 0][..]));
    let (v, i) = e.topk(0, 1, true, true)?;
    assert_eq!((v.shape(), i.shape()), (&[2, 0][..], &[2, 0][..]));
    Ok(())
}

/// Distinct values (no ties): the sorted order is locally constant, so finite differences apply.
fn input(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn_seeded(shape, DType::F64, seed)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

/// `topk` picks and orders as PyTorch's CPU kernel, ties and NaN included, with
/// `sorted == false` too: PyTorch 2.15's indices for lanes full of ties (values
/// `(31 i² + 17 i) mod m`, NaN at `i mod 37 == 5` where asked), through both of its paths
/// (`partial_sort` when `k * 64 <= n`, `nth_element` otherwise), and along dim 0.
#[test]
fn topk_ties_and_nan_come_in_pytorchs_order() -> R {
    let values = |n: usize, m: usize, nan: bool| -> Vec<f64> {
        (0..n)
            .map(|i| {
                if nan && i % 37 == 5 {
                    NAN
                } else {
                    ((i * i * 31 + i * 17) % m) as f64
                }
            })
            .collect()
    };
    // n, m, k, largest, sorted, NaN, dtype, PyTorch's indices.
    type Case = (usize, usize, usize, bool, bool, bool, DType, &'static [i64]);
    #[rustfmt::skip]
    let cases: [Case; 8] = [
        (100, 5, 10, true, true, false, DType::F64, &[29, 79, 19, 74, 69, 24, 64, 39, 49, 54]),
        (100, 5, 10, true, false, false, DType::F64, &[29, 79, 19, 74, 69, 24, 64, 39, 49, 54]),
        (1000, 7, 15, false, true, false, DType::F32, &[41, 28, 35, 7, 0, 42, 27, 48, 20, 21, 49, 13, 34, 6, 14]),
        (1000, 3, 15, true, true, true, DType::F64, &[375, 264, 338, 412, 5, 449, 301, 486, 153, 190, 523, 79, 227, 116, 42]),
        (50, 4, 50, false, true, false, DType::F64, &[49, 16, 13, 12, 17, 8, 5, 4, 1, 9, 20, 21, 24, 28, 25, 0, 48, 45, 44, 41, 37, 36, 33, 32, 29, 40, 31, 26, 22, 27, 23, 11, 30, 34, 15, 35, 14, 38, 39, 6, 42, 43, 19, 3, 46, 47, 2, 18, 7, 10]),
        (300, 6, 7, true, false, true, DType::F32, &[5, 227, 190, 42, 79, 264, 116]),
        (200, 9, 40, false, false, true, DType::F64, &[135, 70, 72, 81, 63, 88, 61, 90, 97, 99, 0, 54, 52, 106, 108, 115, 117, 45, 43, 124, 126, 133, 36, 34, 142, 144, 27, 187, 180, 178, 9, 151, 171, 16, 169, 18, 7, 189, 25, 196]),
        (130, 4, 12, true, true, false, DType::I64, &[50, 62, 99, 59, 58, 102, 55, 54, 103, 51, 39, 42]),
    ];
    for (n, m, k, largest, sorted, nan, dtype, want) in cases {
        let x = Tensor::from_vec(values(n, m, nan), &[n])?.to_dtype(dtype)?;
        let (v, i) = x.topk(k, 0, largest, sorted)?;
        let i = i.to_vec::<i64>()?;
        assert_eq!(
            i, want,
            "n={n} m={m} k={k} largest={largest} sorted={sorted}"
        );
        // The values are the elements at those positions.
        let all = floats(&x);
        let picked: Vec<f64> = i.iter().map(|&j| all[j as usize]).collect();
        assert!(same(&floats(&v), &picked));
    }
    let x = Tensor::from_vec(values(120, 4, true), &[40, 3])?;
    let (_, i) = x.topk(5, 0, true, true)?;
    assert_eq!(
        i.to_vec::<i64>()?,
        [14, 26, 1, 33, 18, 38, 18, 34, 24, 17, 31, 23, 30, 15, 16]
    );
    Ok(())
}

#[test]
fn sort_and_topk_pass_gradcheck_and_gradgradcheck() -> R {
    let x = input(&[3, 4], 51);
    for dim in [0isize, 1, -1] {
        for descending in [false, true] {
            let f = move |i: &[Tensor]| Ok(i[0].sort(dim, descending, true)?.0);
            gradcheck(f, &[x.clone()])?;
            // Squared first, so the second derivative is not zero.
            gradgradcheck(
                move |i: &[Tensor]| Ok(i[0].mul(&i[0])?.sort(dim, descending, true)?.0),
                &[x.clone()],
            )?;
        }
    }
    for (k, dim, largest) in [(2usize, 1isize, true), (1, 0, false), (3, -1, false)] {
        gradcheck(
            move |i: &[Tensor]| Ok(i[0].topk(k, dim, largest, true)?.0),
            &[x.clone()],
        )?;
        gradgradcheck(
            move |i: &[Tensor]| Ok(i[0].mul(&i[0])?.topk(k, dim, largest, true)?.0),
            &[x.clone()],
        )?;
    }
    Ok(())
}

#[test]
fn max_min_dim_and_over_all_pass_gradcheck_and_gradgradcheck() -> R {
    let x = input(&[3, 5], 52);
    for dim in [0usize, 1] {
        for keepdim in [false, true] {
            gradcheck(|i| Ok(i[0].max_dim(dim, keepdim)?.0), &[x.clone()])?;
            gradcheck(|i| Ok(i[0].min_dim(dim, keepdim)?.0), &[x.clone()])?;
            gradgradcheck(
                |i| Ok(i[0].mul(&i[0])?.max_dim(dim, keepdim)?.0),
                &[x.clone()],
            )?;
            gradgradcheck(
                |i| Ok(i[0].mul(&i[0])?.min_dim(dim, keepdim)?.0),
                &[x.clone()],
            )?;
        }
    }
    gradcheck(|i| i[0].max(), &[x.clone()])?;
    gradcheck(|i| i[0].min(), &[x.clone()])?;
    gradgradcheck(|i| i[0].mul(&i[0])?.max(), &[x.clone()])?;
    gradgradcheck(|i| i[0].mul(&i[0])?.min(), &[x])?;
    Ok(())
}

#[test]
fn the_nodes_free_what_they_keep_with_the_graph() -> R {
    type Op = fn(&Tensor) -> autograd::Result<Tensor>;
    let ops: [(&str, Op); 6] = [
        ("sort", |x| Ok(x.sort(1, false, true)?.0)),
        ("topk", |x| Ok(x.topk(2, 1, true, true)?.0)),
        ("min_dim", |x| Ok(x.min_dim(1, false)?.0)),
        ("max_dim", |x| Ok(x.max_dim(1, false)?.0)),
        ("max", |x| x.max()),
        ("min", |x| x.min()),
    ];
    for (name, op) in ops {
        let x = input(&[2, 3], 53);
        let y = op(&x)?.sum()?;
        y.backward()?;
        let err = y.backward().unwrap_err().to_string();
        assert!(
            err.starts_with("Trying to backward through the graph a second time"),
            "{name}: {err}"
        );
    }
    Ok(())
}

#[test]
fn half_and_single_precision_values_take_gradients_in_their_dtype() -> R {
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let x = Tensor::from_vec(vec![2.0f64, -1.0, 0.5, 4.0], &[4])?
            .to_dtype(dtype)?
            .requires_grad_(true)?;
        let (v, _) = x.sort(0, false, true)?;
        let (t, _) = x.topk(1, 0, false, true)?;
        let w = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.to_dtype(dtype)?;
        v.mul(&w)?.sum()?.add(&t.sum()?)?.backward()?;
        let g = x.grad().unwrap();
        assert_eq!(g.dtype(), dtype);
        assert_eq!(floats(&g), vec![3.0, 2.0, 2.0, 4.0], "{dtype:?}");
    }
    Ok(())
}
