//! The index samplers behind a [`DataLoader`](super::DataLoader): PyTorch's
//! `SequentialSampler`, `RandomSampler` and `BatchSampler`, drawing what they draw, when they draw
//! it (see the module docs of [`data`](super), "Order of the samples").

use crate::{Generator, default_generator};

/// The indices of one epoch: in order, or a permutation (PyTorch's `SequentialSampler` and
/// `RandomSampler` without replacement, `num_samples = len`).
#[derive(Debug)]
pub(crate) enum IndexSampler {
    /// `0..len` in order.
    Sequential {
        /// The next index to give.
        next: usize,
        /// The data set's length.
        len: usize,
    },
    /// A permutation of `0..len`.
    Random {
        /// The data set's length (at least 1: the loader refuses to shuffle an empty set).
        len: usize,
        /// The loader's generator; `None` seeds a fresh one from the global generator.
        generator: Option<Generator>,
        /// Where the epoch is.
        state: RandomState,
    },
}

/// The progress of a [`IndexSampler::Random`] through its epoch.
#[derive(Debug)]
pub(crate) enum RandomState {
    /// Nothing drawn yet: the first index draws the permutation.
    NotStarted,
    /// Giving out `perm`.
    Running {
        /// The generator the permutation came from, for the closing draw.
        generator: Generator,
        /// Whether it is the loader's own (the closing draw then matters to the next epoch).
        shared: bool,
        /// The permutation.
        perm: Vec<usize>,
        /// The next position in `perm`.
        pos: usize,
    },
    /// Every index given, the closing draw made.
    Done,
}

impl IndexSampler {
    /// The sampler of one epoch over `len` samples.
    pub(crate) fn new(len: usize, shuffle: bool, generator: Option<Generator>) -> IndexSampler {
        if shuffle {
            IndexSampler::Random {
                len,
                generator,
                state: RandomState::NotStarted,
            }
        } else {
            IndexSampler::Sequential { next: 0, len }
        }
    }
}

impl Iterator for IndexSampler {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            IndexSampler::Sequential { next, len } => {
                let i = *next;
                (i < *len).then(|| {
                    *next += 1;
                    i
                })
            }
            IndexSampler::Random {
                len,
                generator,
                state,
            } => loop {
                match state {
                    RandomState::NotStarted => {
                        // `RandomSampler.__iter__`: without a generator, a fresh one seeded by
                        // `torch.empty((), dtype=torch.int64).random_()`.
                        let (generator, shared) = match generator {
                            Some(g) => (g.clone(), true),
                            None => {
                                let seed = default_generator().random_int64();
                                (Generator::new().manual_seed(seed), false)
                            }
                        };
                        let perm = generator.randperm(*len);
                        *state = RandomState::Running {
                            generator,
                            shared,
                            perm,
                            pos: 0,
                        };
                    }
                    RandomState::Running {
                        generator,
                        shared,
                        perm,
                        pos,
                    } => {
                        if let Some(&i) = perm.get(*pos) {
                            *pos += 1;
                            return Some(i);
                        }
                        // `yield from torch.randperm(n, generator=generator).tolist()[:0]`:
                        // PyTorch draws a whole permutation for the `num_samples % n == 0`
                        // remainder. Only the loader's own generator outlives the epoch.
                        if *shared {
                            generator.randperm(*len);
                        }
                        *state = RandomState::Done;
                    }
                    RandomState::Done => return None,
                }
            },
        }
    }
}

/// The index lists of one epoch's batches (PyTorch's `BatchSampler`): `batch_size` indices
/// each, the last one shorter or, with `drop_last`, dropped.
#[derive(Debug)]
pub(crate) struct BatchSampler {
    /// The epoch's indices.
    sampler: IndexSampler,
    /// Indices per batch (at least 1).
    batch_size: usize,
    /// Whether a short last batch is dropped.
    drop_last: bool,
    /// Whether the sampler has run out (a short batch was made or dropped).
    done: bool,
}

impl BatchSampler {
    /// Batches of `batch_size` from `sampler`.
    pub(crate) fn new(sampler: IndexSampler, batch_size: usize, drop_last: bool) -> BatchSampler {
        debug_assert!(batch_size > 0, "the loader refuses batch_size 0");
        BatchSampler {
            sampler,
            batch_size,
            drop_last,
            done: false,
        }
    }
}

impl Iterator for BatchSampler {
    type Item = Vec<usize>;

    /// Pulls indices until the batch is full or the sampler runs out, as both of PyTorch's
    /// branches do (`islice` without `drop_last`, `zip` with it): the sampler's end, and its
    /// closing draw, is reached at the same call as in PyTorch.
    fn next(&mut self) -> Option<Vec<usize>> {
        if self.done {
            return None;
        }
        let mut batch = Vec::with_capacity(self.batch_size);
        while batch.len() < self.batch_size {
            match self.sampler.next() {
                Some(i) => batch.push(i),
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        let full = batch.len() == self.batch_size;
        (full || !(self.drop_last || batch.is_empty())).then_some(batch)
    }
}

/// The number of batches of an epoch (PyTorch's `len(BatchSampler)`).
pub(crate) fn batch_count(len: usize, batch_size: usize, drop_last: bool) -> usize {
    if drop_last {
        len / batch_size
    } else {
        len.div_ceil(batch_size)
    }
}
