//! Views, in-place ops and version counters, as PyTorch: hand-written scenarios and saved-tensor
//! versions. The corpora of programs recorded from PyTorch are replayed by `tests/corpus/`.

mod dim_views;
mod inplace_and_views;
mod reshape_pytorch;
mod saved_tensor_version;
mod stale_views;
mod views_pytorch;
