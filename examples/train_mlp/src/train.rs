//! The training loop: shuffled mini-batches, forward, backward, optimizer step, evaluation, and
//! where the wall time goes.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use autograd::distributed::{CommBuffer, DdpOptions, DistributedDataParallel, ProcessGroup};
use autograd::nn::{Forward, Module};
use autograd::optim::Optimizer;
use autograd::optim::lr_scheduler::LrScheduler;
use autograd::{DType, Device, Tensor, no_grad};

use crate::data::{Dataset, Split};
use crate::loss::softmax_cross_entropy;
use crate::model::Model;
use crate::progress::Progress;
use crate::rng::SplitMix64;
use crate::{RunError, inspect};

/// What one epoch achieved.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EpochStats {
    /// 1-based.
    pub(crate) epoch: usize,
    /// Mean loss over the epoch's mini-batches (weighted by their sizes), as trained.
    pub(crate) train_loss: f64,
    /// Share of training examples classified right when their batch was seen.
    pub(crate) train_accuracy: f64,
    pub(crate) test_loss: f64,
    pub(crate) test_accuracy: f64,
    /// Training examples per second of the epoch's training steps (evaluation excluded).
    pub(crate) samples_per_s: f64,
}

/// Wall time of the run, by phase.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timings {
    /// Gathering the shuffled mini-batches (`index_select` on the device).
    pub(crate) batching: Duration,
    /// Model forward and loss.
    pub(crate) forward: Duration,
    /// `loss.backward()`.
    pub(crate) backward: Duration,
    /// Optimizer step, learning-rate schedule and clearing the gradients.
    pub(crate) optimizer: Duration,
    /// Reading losses and predictions back, and the test-set evaluation.
    pub(crate) evaluation: Duration,
}

impl Timings {
    pub(crate) fn total(&self) -> Duration {
        self.batching + self.forward + self.backward + self.optimizer + self.evaluation
    }
}

/// A split on the device: inputs, one-hot targets (smoothed for training with label
/// smoothing), and the labels on the host.
#[derive(Debug)]
struct DeviceSplit {
    x: Tensor,
    targets: Tensor,
    labels: Vec<usize>,
}

impl DeviceSplit {
    fn new(
        split: &Split,
        features: usize,
        classes: usize,
        device: Device,
    ) -> Result<DeviceSplit, RunError> {
        let n = split.len();
        Ok(DeviceSplit {
            x: Tensor::from_vec(split.x.clone(), &[n, features])?.to(device)?,
            targets: Tensor::from_vec(split.one_hot(classes), &[n, classes])?.to(device)?,
            labels: split.y.clone(),
        })
    }

    /// Label smoothing ε (PyTorch's `label_smoothing`): each target row becomes
    /// `(1 - ε) · one_hot + ε / C`, so the cross-entropy against it is PyTorch's smoothed loss.
    fn smooth(&mut self, epsilon: f64) -> Result<(), RunError> {
        if epsilon > 0.0 {
            let classes = self.targets.shape()[1] as f64;
            self.targets = self
                .targets
                .mul_scalar(1.0 - epsilon)?
                .add_scalar(epsilon / classes)?;
        }
        Ok(())
    }
}

/// Trains one model on one data set.
pub(crate) struct Trainer {
    pub(crate) model: Model,
    pub(crate) optimizer: Box<dyn Optimizer>,
    /// Stepped after every optimizer step (`--schedule`).
    scheduler: Option<Box<dyn LrScheduler>>,
    /// Optimizer steps taken, over the saved run too when resumed.
    steps: u64,
    train: DeviceSplit,
    test: DeviceSplit,
    batch_size: usize,
    /// Shuffles the training set at the start of every epoch.
    rng: SplitMix64,
    /// Accumulated over the run.
    pub(crate) timings: Timings,
    /// Where to write the first step's backward graph (`--graph`); taken when written.
    graph: Option<PathBuf>,
    /// Data-parallel mode (`--ddp`): this rank trains on its share of every mini-batch.
    parallel: Option<DistributedDataParallel>,
}

impl Trainer {
    pub(crate) fn new(
        model: Model,
        optimizer: Box<dyn Optimizer>,
        data: &Dataset,
        device: Device,
        batch_size: usize,
        seed: u64,
        graph: Option<PathBuf>,
    ) -> Result<Trainer, RunError> {
        Ok(Trainer {
            model,
            optimizer,
            scheduler: None,
            steps: 0,
            train: DeviceSplit::new(&data.train, data.features, data.classes, device)?,
            test: DeviceSplit::new(&data.test, data.features, data.classes, device)?,
            batch_size,
            rng: SplitMix64::new(seed),
            timings: Timings::default(),
            graph,
            parallel: None,
        })
    }

    /// Steps `scheduler` after every optimizer step.
    pub(crate) fn with_scheduler(mut self, scheduler: Box<dyn LrScheduler>) -> Trainer {
        self.scheduler = Some(scheduler);
        self
    }

    /// Trains against label-smoothed targets (the test loss stays the plain cross-entropy).
    pub(crate) fn with_label_smoothing(mut self, epsilon: f64) -> Result<Trainer, RunError> {
        self.train.smooth(epsilon)?;
        Ok(self)
    }

    /// Continues a saved run: the shuffles from its generator state, the schedule from its step.
    /// Call before loading the optimizer's state: the schedule is replayed on the optimizer's
    /// learning rates as the saved run moved them.
    pub(crate) fn fast_forward(&mut self, rng_state: u64, steps: u64) -> Result<(), RunError> {
        self.rng = SplitMix64::new(rng_state);
        if let Some(scheduler) = &mut self.scheduler {
            for _ in 0..steps {
                scheduler.step(self.optimizer.as_mut())?;
            }
        }
        self.steps = steps;
        Ok(())
    }

    /// The shuffling generator's state (for a checkpoint).
    pub(crate) fn rng_state(&self) -> u64 {
        self.rng.state()
    }

    /// Optimizer steps taken so far (for a checkpoint).
    pub(crate) fn steps(&self) -> u64 {
        self.steps
    }

    /// Data-parallel mode over `group` (a collective: every rank calls it). Every rank shuffles
    /// the same way and takes an equal share of each mini-batch; `DistributedDataParallel`
    /// starts every rank from rank 0's weights and averages the gradients, so the ranks train the
    /// model that one process would train on the whole mini-batches.
    pub(crate) fn data_parallel(
        mut self,
        group: impl ProcessGroup + 'static,
    ) -> Result<Trainer, RunError> {
        let ddp = DistributedDataParallel::new(&self.model.parameters(), group, DdpOptions::new())?;
        self.parallel = Some(ddp);
        Ok(self)
    }

    /// `(rank, world size)`: `(0, 1)` unless data-parallel.
    pub(crate) fn rank_and_world(&self) -> (usize, usize) {
        self.parallel
            .as_ref()
            .map_or((0, 1), |d| (d.rank(), d.world_size()))
    }

    /// Whether every rank holds bit-identical parameters (a collective in data-parallel mode).
    pub(crate) fn parameters_identical_across_ranks(&self) -> Result<bool, RunError> {
        let Some(ddp) = &self.parallel else {
            return Ok(true);
        };
        let mut mine = Vec::new();
        for p in self.model.parameters() {
            mine.extend(p.to_vec::<f32>()?);
        }
        let rank0 = ddp.group().broadcast(CommBuffer::F32(mine.clone()), 0)?;
        let differs = rank0 != CommBuffer::F32(mine);
        let flags = ddp
            .group()
            .all_reduce_sum(CommBuffer::F64(vec![f64::from(u8::from(differs))]))?;
        Ok(flags == CommBuffer::F64(vec![0.0]))
    }

    /// One pass over the shuffled training set, then an evaluation on the test set.
    pub(crate) fn epoch(
        &mut self,
        epoch: usize,
        progress: &mut Progress,
    ) -> Result<EpochStats, RunError> {
        let n = self.train.labels.len();
        let order = self.rng.permutation(n);
        progress.start_epoch(epoch, n);
        let (mut loss_sum, mut correct, mut seen) = (0.0, 0usize, 0usize);
        let mut train_time = Duration::ZERO;
        let (rank, world) = self.rank_and_world();
        for global_batch in order.chunks(self.batch_size) {
            // Data-parallel: this rank's equal share (a last batch too small to give every rank
            // a row is skipped by all ranks alike).
            if global_batch.len() < world {
                continue;
            }
            let share = |r: usize| global_batch.len() * r / world;
            let batch = &global_batch[share(rank)..share(rank + 1)];
            let t0 = Instant::now();
            let x = self.train.x.index_select(0, batch)?;
            let targets = self.train.targets.index_select(0, batch)?;
            let t1 = Instant::now();
            let logits = self.model.forward(&x)?;
            let loss = softmax_cross_entropy(&logits, &targets)?;
            let t2 = Instant::now();
            if let Some(path) = self.graph.take() {
                inspect::write_graph(&loss, &path)?;
            }
            let t2b = Instant::now();
            if world == 1 {
                loss.backward()?;
            } else {
                // DDP averages over ranks: weigh this share's mean loss so that the average is
                // the mean over the global batch even when the shares differ by a row.
                let weight = (batch.len() * world) as f64 / global_batch.len() as f64;
                loss.mul_scalar(weight)?.backward()?;
            }
            let t3 = Instant::now();
            self.optimizer.step()?;
            if let Some(scheduler) = &mut self.scheduler {
                scheduler.step(self.optimizer.as_mut())?;
            }
            self.steps += 1;
            self.optimizer.zero_grad();
            let t4 = Instant::now();
            loss_sum += to_host(&loss)?[0] * batch.len() as f64;
            let labels: Vec<usize> = batch.iter().map(|&i| self.train.labels[i]).collect();
            correct += count_correct(&logits, &labels)?;
            seen += batch.len();
            let t5 = Instant::now();

            self.timings.batching += t1 - t0;
            self.timings.forward += t2 - t1;
            self.timings.backward += t3 - t2b;
            self.timings.optimizer += t4 - t3;
            self.timings.evaluation += t5 - t4;
            train_time += (t2 - t0) + (t4 - t2b);
            progress.batch(
                seen,
                loss_sum / seen as f64,
                correct as f64 / seen as f64,
                seen as f64 / train_time.as_secs_f64().max(1e-9),
            );
        }
        if let Some(ddp) = &self.parallel {
            // The epoch's training figures over all ranks' shares.
            let local = CommBuffer::F64(vec![loss_sum, correct as f64, seen as f64]);
            if let CommBuffer::F64(v) = ddp.group().all_reduce_sum(local)? {
                (loss_sum, correct, seen) = (v[0], v[1] as usize, v[2] as usize);
            }
        }
        let t0 = Instant::now();
        let (test_loss, test_accuracy) = self.evaluate()?;
        self.timings.evaluation += t0.elapsed();
        let stats = EpochStats {
            epoch,
            train_loss: loss_sum / seen.max(1) as f64,
            train_accuracy: correct as f64 / seen.max(1) as f64,
            test_loss,
            test_accuracy,
            samples_per_s: seen as f64 / train_time.as_secs_f64().max(1e-9),
        };
        progress.end_epoch(&stats);
        Ok(stats)
    }

    /// Loss and accuracy on the whole test set, without recording a graph.
    pub(crate) fn evaluate(&self) -> Result<(f64, f64), RunError> {
        let _no_grad = no_grad();
        let logits = self.model.forward(&self.test.x)?;
        let loss = to_host(&softmax_cross_entropy(&logits, &self.test.targets)?)?[0];
        let correct = count_correct(&logits, &self.test.labels)?;
        Ok((loss, correct as f64 / self.test.labels.len().max(1) as f64))
    }

    /// Test examples classified right, and how many there are.
    pub(crate) fn test_counts(&self) -> Result<(usize, usize), RunError> {
        let _no_grad = no_grad();
        let logits = self.model.forward(&self.test.x)?;
        Ok((
            count_correct(&logits, &self.test.labels)?,
            self.test.labels.len(),
        ))
    }
}

/// The values of `t`, copied to the host as `f64` (works for any device and float dtype).
fn to_host(t: &Tensor) -> Result<Vec<f64>, RunError> {
    Ok(t.detach()
        .to(Device::Cpu)?
        .to_dtype(DType::F64)?
        .to_vec::<f64>()?)
}

/// Rows of `logits` whose largest value is at the label's position.
fn count_correct(logits: &Tensor, labels: &[usize]) -> Result<usize, RunError> {
    let classes = logits.shape().get(1).copied().unwrap_or(1).max(1);
    let values = to_host(logits)?;
    Ok(values
        .chunks(classes)
        .zip(labels)
        .filter(|&(row, &label)| argmax(row) == label)
        .count())
}

/// The first position of the largest value.
fn argmax(row: &[f64]) -> usize {
    (0..row.len()).fold(0, |best, k| if row[k] > row[best] { k } else { best })
}

#[cfg(test)]
mod tests {
    use autograd::optim::{Adam, AdamOptions};

    use super::*;

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(argmax(&[0.1, 0.7, 0.7, -1.0]), 1);
        assert_eq!(argmax(&[5.0]), 0);
    }

    /// A few epochs on the embedded digits, as `main` runs them.
    fn train_digits(device: Device, epochs: usize) -> Vec<EpochStats> {
        let data = crate::data::load(&crate::data::DataSource::Digits).unwrap();
        let model = Model::mlp(&[64, 32, 10], crate::model::Activation::Relu, 1, device).unwrap();
        let opt = Adam::new(model.parameters(), AdamOptions::default().lr(1e-2)).unwrap();
        let mut trainer = Trainer::new(model, Box::new(opt), &data, device, 64, 5, None).unwrap();
        let mut progress = Progress::new(crate::progress::Mode::Quiet, epochs);
        let stats: Vec<EpochStats> = (1..=epochs)
            .map(|e| trainer.epoch(e, &mut progress).unwrap())
            .collect();
        let t = &trainer.timings;
        assert!(
            t.forward > Duration::ZERO
                && t.backward > Duration::ZERO
                && t.optimizer > Duration::ZERO
        );
        stats
    }

    #[test]
    fn learns_the_digits() {
        let stats = train_digits(Device::Cpu, 4);
        assert!(stats[0].train_loss > stats[3].train_loss, "{stats:?}");
        assert!(stats[3].test_accuracy > 0.9, "{stats:?}");
        assert_eq!(
            stats.iter().map(|s| s.epoch).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
    }

    /// `--activation-checkpoint`: two epochs of a three-block MLP train the same weights, bit
    /// for bit, with each hidden block checkpointed (either variant) as without.
    #[test]
    fn activation_checkpointing_trains_the_same_weights() {
        use crate::model::{Activation, ActivationCheckpoint};
        let data = crate::data::load(&crate::data::DataSource::Digits).unwrap();
        let train = |mode| {
            let mut model =
                Model::mlp(&[64, 32, 24, 16, 10], Activation::Relu, 3, Device::Cpu).unwrap();
            model.set_activation_checkpoint(mode).unwrap();
            let opt = Adam::new(model.parameters(), AdamOptions::default().lr(1e-2)).unwrap();
            let mut trainer =
                Trainer::new(model, Box::new(opt), &data, Device::Cpu, 64, 5, None).unwrap();
            let mut progress = Progress::new(crate::progress::Mode::Quiet, 2);
            for epoch in 1..=2 {
                trainer.epoch(epoch, &mut progress).unwrap();
            }
            trainer
                .model
                .parameters()
                .iter()
                .map(|p| p.to_vec::<f32>().unwrap())
                .collect::<Vec<_>>()
        };
        let plain = train(ActivationCheckpoint::None);
        let initial: Vec<Vec<f32>> =
            Model::mlp(&[64, 32, 24, 16, 10], Activation::Relu, 3, Device::Cpu)
                .unwrap()
                .parameters()
                .iter()
                .map(|p| p.to_vec::<f32>().unwrap())
                .collect();
        assert_ne!(plain, initial, "the weights did not train");
        assert_eq!(train(ActivationCheckpoint::Reentrant), plain);
        assert_eq!(train(ActivationCheckpoint::NonReentrant), plain);
    }

    #[test]
    fn a_virtual_device_trains_like_the_cpu() {
        let cpu = train_digits(Device::Cpu, 1);
        let virt = train_digits(Device::Virtual(0), 1);
        let strip = |s: &[EpochStats]| {
            s.iter()
                .map(|s| (s.train_loss, s.train_accuracy, s.test_loss, s.test_accuracy))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&cpu), strip(&virt));
    }

    /// Two ranks (threads over `LocalGroup`, the path `--ddp` takes over MPI) train the weights
    /// one process trains on the same global batches.
    #[test]
    fn data_parallel_ranks_train_the_weights_of_one_process() {
        use autograd::distributed::LocalGroup;
        const EPOCHS: usize = 2;
        let data = crate::data::load(&crate::data::DataSource::Digits).unwrap();
        let trainer = |seed: u64| {
            let model = Model::mlp(
                &[64, 32, 10],
                crate::model::Activation::Relu,
                seed,
                Device::Cpu,
            )
            .unwrap();
            let opt = Adam::new(model.parameters(), AdamOptions::default().lr(1e-2)).unwrap();
            Trainer::new(model, Box::new(opt), &data, Device::Cpu, 64, 5, None).unwrap()
        };
        let train = |t: &mut Trainer| {
            let mut progress = Progress::new(crate::progress::Mode::Quiet, EPOCHS);
            let stats: Vec<EpochStats> = (1..=EPOCHS)
                .map(|e| t.epoch(e, &mut progress).unwrap())
                .collect();
            let weights: Vec<Vec<f32>> = t
                .model
                .parameters()
                .iter()
                .map(|p| p.to_vec::<f32>().unwrap())
                .collect();
            (stats, weights)
        };
        let (one_stats, one_weights) = train(&mut trainer(1));
        let ranks: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = LocalGroup::new(2)
                .into_iter()
                .map(|group| {
                    let (trainer, train) = (&trainer, &train);
                    s.spawn(move || {
                        // Rank 1 starts from other weights: rank 0's are broadcast.
                        let seed = 1 + group.rank() as u64;
                        let mut t = trainer(seed).data_parallel(group).unwrap();
                        let out = train(&mut t);
                        assert!(t.parameters_identical_across_ranks().unwrap());
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(ranks[0].1, ranks[1].1, "ranks diverged");
        // f32, 44 Adam steps: the gradients differ from one process's only by the order of
        // sums over the batch (a few ulps). Measured: 1.8e-7 on weights of order 0.1-1, i.e.
        // about one f32 ulp; 1e-5 leaves a margin of 50 and still catches any real error
        // (a wrong share or scale moves weights by orders of magnitude more).
        let max_diff = one_weights
            .iter()
            .flatten()
            .zip(ranks[0].1.iter().flatten())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(max_diff < 1e-5, "max |diff| {max_diff}");
        for (one, ddp) in one_stats.iter().zip(&ranks[0].0) {
            assert!(
                (one.train_loss - ddp.train_loss).abs() < 1e-3,
                "{one:?} vs {ddp:?}"
            );
            assert!(
                (one.test_loss - ddp.test_loss).abs() < 1e-3,
                "{one:?} vs {ddp:?}"
            );
        }
        eprintln!("data-parallel vs one process: max |weight diff| {max_diff:e}");
    }

    #[test]
    fn counts_correct_rows() {
        let logits = Tensor::from_vec(vec![1.0f32, 2.0, 0.0, 3.0, 2.0, 1.0], &[2, 3]).unwrap();
        assert_eq!(count_correct(&logits, &[1, 0]).unwrap(), 2);
        assert_eq!(count_correct(&logits, &[2, 0]).unwrap(), 1);
    }
}
