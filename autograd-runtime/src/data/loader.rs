//! [`DataLoader`]: batches of a [`Dataset`] for training, with PyTorch's options and defaults.

use std::fmt;

use super::collate::Collate;
use super::dataset::Dataset;
use super::sampler::{BatchSampler, IndexSampler, batch_count};
use super::worker::{Workers, make_batch};
use crate::sync::Arc;
use crate::{Error, Generator, Result, default_generator};

/// A collate function: the samples of one batch to the batch (PyTorch's `collate_fn`).
pub type CollateFn<T, B> = dyn Fn(Vec<T>) -> Result<B> + Send + Sync;

/// The options of a [`DataLoader`], with PyTorch's names and defaults: `batch_size` 1, no
/// `shuffle`, no `drop_last`, no `generator` (the global one), `num_workers` 0 (batches made on
/// the caller's thread), `prefetch_factor` unset (2 per worker with workers).
///
/// # Examples
///
/// ```
/// use autograd_runtime::data::DataLoaderOptions;
/// use autograd_runtime::Generator;
/// let o = DataLoaderOptions::default()
///     .batch_size(32)
///     .shuffle(true)
///     .generator(Generator::new().manual_seed(0))
///     .num_workers(1);
/// assert_eq!((o.batch_size, o.shuffle, o.drop_last, o.num_workers), (32, true, false, 1));
/// assert_eq!(o.prefetch_factor, None);
/// ```
#[derive(Clone, Debug)]
pub struct DataLoaderOptions {
    /// Samples per batch (at least 1).
    pub batch_size: usize,
    /// Draw a new order of the samples each epoch.
    pub shuffle: bool,
    /// Drop the last batch of an epoch when it is short.
    pub drop_last: bool,
    /// The generator the shuffling and the per-epoch seed are drawn from; `None` draws from the
    /// global generator (see "Order of the samples" in the [module docs](super)).
    pub generator: Option<Generator>,
    /// Threads that make batches in the background (0: on the caller's thread, in `next()`).
    pub num_workers: usize,
    /// Batches each worker keeps ready (`None`: 2 with workers; only valid with workers).
    pub prefetch_factor: Option<usize>,
}

impl Default for DataLoaderOptions {
    fn default() -> DataLoaderOptions {
        DataLoaderOptions {
            batch_size: 1,
            shuffle: false,
            drop_last: false,
            generator: None,
            num_workers: 0,
            prefetch_factor: None,
        }
    }
}

impl DataLoaderOptions {
    /// Sets the batch size.
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self
    }
    /// Turns shuffling on or off.
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }
    /// Drops (or keeps) a short last batch.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }
    /// Draws from `generator` (a handle: the loader advances the caller's stream).
    pub fn generator(mut self, generator: Generator) -> Self {
        self.generator = Some(generator);
        self
    }
    /// Sets the number of worker threads.
    pub fn num_workers(mut self, num_workers: usize) -> Self {
        self.num_workers = num_workers;
        self
    }
    /// Sets the number of batches each worker keeps ready.
    pub fn prefetch_factor(mut self, prefetch_factor: usize) -> Self {
        self.prefetch_factor = Some(prefetch_factor);
        self
    }

    /// PyTorch's checks in `DataLoader.__init__`, `BatchSampler.__init__` and
    /// `RandomSampler.__init__`, in its words; the batches each worker keeps ready.
    fn validate(&self, len: usize) -> Result<usize> {
        let prefetch = match (self.num_workers, self.prefetch_factor) {
            (0, Some(_)) => {
                return Err(Error::InvalidArgument(
                    "prefetch_factor option could only be specified in multiprocessing.let \
                     num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor \
                     to None."
                        .into(),
                ));
            }
            (_, Some(0)) => {
                return Err(Error::InvalidArgument(
                    "prefetch_factor must be greater than 0 with num_workers > 0".into(),
                ));
            }
            (_, p) => p.unwrap_or(2),
        };
        if self.batch_size == 0 {
            return Err(Error::InvalidArgument(
                "batch_size should be a positive integer value, but got batch_size=0".into(),
            ));
        }
        if self.shuffle && len == 0 {
            return Err(Error::InvalidArgument(
                "num_samples should be a positive integer value, but got num_samples=0".into(),
            ));
        }
        Ok(prefetch)
    }
}

/// Batches of a [`Dataset`], one epoch per iterator (PyTorch's `torch.utils.data.DataLoader`
/// over a map-style data set): `for batch in &loader` yields `Result<B>`.
///
/// `B` is the batch type: with [`DataLoader::new`], the default collate step's
/// ([`Collate`]; `Vec<Tensor>` for a [`TensorDataset`](super::TensorDataset)); with
/// [`DataLoader::with_collate`], whatever the collate function returns. See the
/// [module docs](super) for the order of the samples and the worker threads.
///
/// # Examples
///
/// ```
/// use autograd_runtime::data::{DataLoader, DataLoaderOptions, TensorDataset};
/// use autograd_runtime::{Generator, Tensor};
/// let data = TensorDataset::new(vec![Tensor::arange(0, 10, 1)?])?;
/// let options = DataLoaderOptions::default()
///     .batch_size(3)
///     .shuffle(true)
///     .generator(Generator::new().manual_seed(0));
/// let loader = DataLoader::new(data, options)?;
/// let epoch: Vec<Vec<i64>> = loader
///     .iter()
///     .map(|b| b?[0].to_vec::<i64>())
///     .collect::<Result<_, _>>()?;
/// // g = torch.Generator().manual_seed(0)
/// // list(DataLoader(range(10), batch_size=3, shuffle=True, generator=g))
/// assert_eq!(epoch, [vec![3, 7, 5], vec![2, 0, 8], vec![1, 6, 9], vec![4]]);
/// assert_eq!(loader.len(), 4);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct DataLoader<D: Dataset, B> {
    /// The data set, shared with the workers of live iterators.
    dataset: Arc<D>,
    /// The collate step, shared likewise.
    collate: Arc<CollateFn<<D as Dataset>::Item, B>>,
    /// The options, validated.
    options: DataLoaderOptions,
    /// Batches each worker keeps ready (with workers).
    prefetch: usize,
}

impl<D: Dataset, B> fmt::Debug for DataLoader<D, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataLoader")
            .field("len", &self.dataset.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<D> DataLoader<D, <D::Item as Collate>::Batch>
where
    D: Dataset + 'static,
    D::Item: Collate,
    <D::Item as Collate>::Batch: Send + 'static,
{
    /// A loader that collates with [`Collate`] (PyTorch's `default_collate`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`], in PyTorch's words: `batch_size` 0, shuffling an empty data
    /// set, a `prefetch_factor` without workers (or 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::{DataLoader, DataLoaderOptions, TensorDataset};
    /// use autograd_runtime::{DType, Tensor};
    /// let data = TensorDataset::new(vec![Tensor::zeros(&[10, 3], DType::F32)?])?;
    /// let loader = DataLoader::new(data.clone(), DataLoaderOptions::default().batch_size(4))?;
    /// let shapes: Vec<Vec<usize>> =
    ///     loader.iter().map(|b| Ok(b?[0].shape().to_vec())).collect::<autograd_runtime::Result<_>>()?;
    /// assert_eq!(shapes, [vec![4, 3], vec![4, 3], vec![2, 3]]);
    ///
    /// let err = DataLoader::new(data, DataLoaderOptions::default().batch_size(0)).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "batch_size should be a positive integer value, but got batch_size=0"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(dataset: D, options: DataLoaderOptions) -> Result<Self> {
        DataLoader::with_collate(dataset, options, <D::Item as Collate>::collate)
    }
}

impl<D, B> DataLoader<D, B>
where
    D: Dataset + 'static,
    B: Send + 'static,
{
    /// A loader that collates with `collate_fn` (PyTorch's `collate_fn=`), which may run on a
    /// worker thread.
    ///
    /// # Errors
    ///
    /// As [`DataLoader::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::{DataLoader, DataLoaderOptions, TensorDataset};
    /// use autograd_runtime::{Result, Tensor};
    /// let data = TensorDataset::new(vec![Tensor::arange(0, 5, 1)?])?;
    /// // Each batch as the sum of its samples.
    /// let sum = |samples: Vec<Vec<Tensor>>| -> Result<i64> {
    ///     samples.iter().map(|s| s[0].item::<i64>()).sum()
    /// };
    /// let loader = DataLoader::with_collate(data, DataLoaderOptions::default().batch_size(2), sum)?;
    /// let sums: Vec<i64> = loader.iter().collect::<Result<_>>()?;
    /// assert_eq!(sums, [1, 5, 4]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_collate<F>(dataset: D, options: DataLoaderOptions, collate_fn: F) -> Result<Self>
    where
        F: Fn(Vec<D::Item>) -> Result<B> + Send + Sync + 'static,
    {
        let prefetch = options.validate(dataset.len())?;
        Ok(DataLoader {
            dataset: Arc::new(dataset),
            collate: Arc::new(collate_fn),
            options,
            prefetch,
        })
    }

    /// The number of batches in an epoch (PyTorch's `len(loader)`): `ceil(len / batch_size)`,
    /// or `floor` with `drop_last`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::{DataLoader, DataLoaderOptions, TensorDataset};
    /// use autograd_runtime::Tensor;
    /// let data = TensorDataset::new(vec![Tensor::arange(0, 10, 1)?])?;
    /// let o = DataLoaderOptions::default().batch_size(3);
    /// assert_eq!(DataLoader::new(data.clone(), o.clone())?.len(), 4);
    /// assert_eq!(DataLoader::new(data, o.drop_last(true))?.len(), 3);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        batch_count(
            self.dataset.len(),
            self.options.batch_size,
            self.options.drop_last,
        )
    }

    /// Whether an epoch has no batches.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::{DataLoader, DataLoaderOptions, TensorDataset};
    /// use autograd_runtime::{DType, Tensor};
    /// let data = TensorDataset::new(vec![Tensor::zeros(&[3], DType::F32)?])?;
    /// let o = DataLoaderOptions::default().batch_size(4).drop_last(true);
    /// assert!(DataLoader::new(data, o)?.is_empty());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The data set.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::{DataLoader, DataLoaderOptions, Dataset, TensorDataset};
    /// use autograd_runtime::{DType, Tensor};
    /// let data = TensorDataset::new(vec![Tensor::zeros(&[3], DType::F32)?])?;
    /// let loader = DataLoader::new(data, DataLoaderOptions::default())?;
    /// assert_eq!(loader.dataset().len(), 3);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn dataset(&self) -> &D {
        &self.dataset
    }

    /// The options.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::{DataLoader, DataLoaderOptions, TensorDataset};
    /// use autograd_runtime::{DType, Tensor};
    /// let data = TensorDataset::new(vec![Tensor::zeros(&[3], DType::F32)?])?;
    /// let loader = DataLoader::new(data, DataLoaderOptions::default().batch_size(2))?;
    /// assert_eq!(loader.options().batch_size, 2);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn options(&self) -> &DataLoaderOptions {
        &self.options
    }

    /// One epoch's batches. Draws the epoch's seed now, and starts the workers if there are
    /// any (which draw the shuffle now too); see the [module docs](super).
    ///
    /// # Examples
    ///
    /// See [`DataLoader`].
    pub fn iter(&self) -> DataLoaderIter<D, B> {
        let o = &self.options;
        // `_BaseDataLoaderIter.__init__`'s `_base_seed`: drawn for PyTorch's worker processes;
        // here only so that the generator moves on as PyTorch's does.
        o.generator
            .clone()
            .unwrap_or_else(default_generator)
            .random_int64();
        let sampler = IndexSampler::new(self.dataset.len(), o.shuffle, o.generator.clone());
        let batches = BatchSampler::new(sampler, o.batch_size, o.drop_last);
        let state = if o.num_workers == 0 {
            IterState::Inline {
                dataset: Arc::clone(&self.dataset),
                collate: Arc::clone(&self.collate),
                batches,
            }
        } else {
            match Workers::start(
                &self.dataset,
                &self.collate,
                batches,
                o.num_workers,
                self.prefetch,
            ) {
                Ok(workers) => IterState::Workers(workers),
                Err(e) => IterState::Failed(Some(e)),
            }
        };
        DataLoaderIter { state }
    }
}

impl<D, B> IntoIterator for &DataLoader<D, B>
where
    D: Dataset + 'static,
    B: Send + 'static,
{
    type Item = Result<B>;
    type IntoIter = DataLoaderIter<D, B>;

    fn into_iter(self) -> DataLoaderIter<D, B> {
        self.iter()
    }
}

/// One epoch of a [`DataLoader`] ([`DataLoader::iter`]): yields `Result<B>` per batch.
/// Dropping it early stops and joins its worker threads.
pub struct DataLoaderIter<D: Dataset, B> {
    /// Where the batches come from.
    state: IterState<D, B>,
}

impl<D: Dataset, B> fmt::Debug for DataLoaderIter<D, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match &self.state {
            IterState::Inline { .. } => "inline",
            IterState::Workers(_) => "workers",
            IterState::Failed(_) => "failed",
        };
        f.debug_struct("DataLoaderIter")
            .field("mode", &mode)
            .finish_non_exhaustive()
    }
}

/// How a [`DataLoaderIter`] makes its batches.
enum IterState<D: Dataset, B> {
    /// On the caller's thread, in `next()`.
    Inline {
        dataset: Arc<D>,
        collate: Arc<CollateFn<D::Item, B>>,
        batches: BatchSampler,
    },
    /// On worker threads.
    Workers(Workers<B>),
    /// The workers could not start: the error, yielded once.
    Failed(Option<Error>),
}

impl<D: Dataset, B> Iterator for DataLoaderIter<D, B> {
    type Item = Result<B>;

    fn next(&mut self) -> Option<Result<B>> {
        match &mut self.state {
            IterState::Inline {
                dataset,
                collate,
                batches,
            } => {
                let indices = batches.next()?;
                Some(make_batch(&**dataset, &**collate, &indices, None))
            }
            IterState::Workers(workers) => workers.next(),
            IterState::Failed(e) => e.take().map(Err),
        }
    }
}
