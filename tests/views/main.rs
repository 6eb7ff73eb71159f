//! Views, in-place ops and version counters, as PyTorch: hand-written scenarios, saved-tensor
//! versions, and the corpus of programs recorded from PyTorch (`tests/corpus/`).

mod inplace_and_views;
mod saved_tensor_version;
mod views_corpus;
mod views_pytorch;
