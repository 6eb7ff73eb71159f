//! Data loading, as PyTorch's `torch.utils.data`: map-style data sets ([`Dataset`],
//! [`TensorDataset`], [`Subset`], [`random_split`]), the [`DataLoader`] that batches them
//! (batch size, shuffling from a [`Generator`](crate::Generator), `drop_last`, a collate step,
//! background worker threads) and the data sets the crate ships ([`datasets`]).
//!
//! A loader iterates once per epoch: `for batch in &loader` (or [`DataLoader::iter`]) yields
//! `Result<B>` batches, and each new iterator draws a new order when shuffling, as PyTorch's.
//!
//! ```
//! use autograd_runtime::data::{DataLoader, DataLoaderOptions, TensorDataset};
//! use autograd_runtime::{DType, Generator, Tensor, no_grad};
//!
//! // y = 2x + 1 on 64 points, fitted by minibatch SGD.
//! let x = Tensor::linspace(-1.0, 1.0, 64, DType::F64)?.reshape(&[64, 1])?;
//! let y = x.mul_scalar(2.0)?.add_scalar(1.0)?;
//! let data = TensorDataset::new(vec![x, y])?;
//! let options = DataLoaderOptions::default()
//!     .batch_size(16)
//!     .shuffle(true)
//!     .generator(Generator::new().manual_seed(0));
//! let loader = DataLoader::new(data, options)?;
//! assert_eq!(loader.len(), 4); // batches per epoch
//!
//! let w = Tensor::zeros(&[1, 1], DType::F64)?.requires_grad_(true)?;
//! let b = Tensor::zeros(&[1], DType::F64)?.requires_grad_(true)?;
//! for _epoch in 0..100 {
//!     for batch in &loader {
//!         let batch = batch?; // [x [16, 1], y [16, 1]], stacked by the default collate
//!         let (xb, yb) = (&batch[0], &batch[1]);
//!         let loss = xb.matmul(&w)?.add(&b)?.sub(yb)?.pow(2.0)?.mean()?;
//!         loss.backward()?;
//!         let _g = no_grad();
//!         for p in [&w, &b] {
//!             p.sub_(&p.grad().unwrap().mul_scalar(0.5)?)?;
//!             p.set_grad(None)?;
//!         }
//!     }
//! }
//! assert!((w.item::<f64>()? - 2.0).abs() < 1e-6 && (b.item::<f64>()? - 1.0).abs() < 1e-6);
//! # Ok::<(), autograd_runtime::Error>(())
//! ```
//!
//! # Order of the samples, and the random streams
//!
//! The loader draws what PyTorch's draws, from the same streams, so a seeded program visits
//! the samples in PyTorch's order and leaves the generators where PyTorch leaves them:
//!
//! 1. Each new iterator takes a 64-bit seed from the loader's `generator`, or from the global
//!    generator without one (PyTorch's `_base_seed`; it seeds PyTorch's worker processes and is
//!    otherwise unused here), even when not shuffling.
//! 2. With `shuffle`, the permutation is `torch.randperm(n, generator=g)` from the loader's
//!    generator; without a generator, a fresh generator seeded by one more draw from the global
//!    generator (PyTorch's `RandomSampler`). This happens at the first batch without workers, and
//!    when the iterator is created with them (PyTorch's single- and multi-process timings).
//! 3. When the epoch's indices run out, a user generator gives one more permutation that is
//!    thrown away (PyTorch's sampler computes `randperm(n)[:0]` as it ends), so the next epoch's
//!    order is PyTorch's next epoch's too. An epoch left before the sampler's end skips that
//!    draw, as in PyTorch; with workers the sampler runs ahead of the batches (by
//!    `prefetch_factor × num_workers`), so its end may come before the last batch is taken, as
//!    with PyTorch's workers.
//!
//! # Workers
//!
//! With the default `num_workers = 0` the batches are made on the caller's thread, inside
//! `next()`. With `num_workers = k > 0`, `k` threads (`autograd-data-0`, ...) fetch and collate
//! while the caller trains: the caller's thread draws the indices (as PyTorch's main process does)
//! and keeps `prefetch_factor × k` batches in flight through bounded channels, batch `i` going
//! to worker `i mod k`, so the batches arrive in the sampler's order whatever the timing. Both
//! modes give the same batches. Dropping the iterator stops the workers and joins them (a worker
//! in the middle of a batch finishes that batch first). An error returned by the data set or the
//! collate function is that batch's item; a panic in either is caught and becomes
//! [`Error::DataLoaderPanic`](crate::Error::DataLoaderPanic) (on the caller's thread too), and
//! the iteration goes on with the next batch, as PyTorch's iterator does after an exception.

mod collate;
mod dataset;
pub mod datasets;
mod loader;
mod sampler;
mod subset;
mod worker;

pub use collate::Collate;
pub use dataset::{Dataset, TensorDataset};
pub use loader::{CollateFn, DataLoader, DataLoaderIter, DataLoaderOptions};
pub use subset::{Subset, random_split};

#[cfg(test)]
mod tests;
