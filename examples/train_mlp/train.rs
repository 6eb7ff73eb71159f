//! The training loop: shuffled mini-batches, forward, backward, optimizer step, evaluation, and
//! where the wall time goes.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use autograd::{no_grad, DType, Device, Tensor};

use crate::data::{Dataset, Split};
use crate::loss::softmax_cross_entropy;
use crate::model::Mlp;
use crate::optim::Optimizer;
use crate::progress::Progress;
use crate::rng::SplitMix64;
use crate::{inspect, RunError};

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
    /// Optimizer step and clearing the gradients.
    pub(crate) optimizer: Duration,
    /// Reading losses and predictions back, and the test-set evaluation.
    pub(crate) evaluation: Duration,
}

impl Timings {
    pub(crate) fn total(&self) -> Duration {
        self.batching + self.forward + self.backward + self.optimizer + self.evaluation
    }
}

/// A split on the device: inputs, one-hot targets, and the labels on the host.
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
}

/// Trains one model on one data set.
pub(crate) struct Trainer {
    model: Mlp,
    optimizer: Box<dyn Optimizer>,
    train: DeviceSplit,
    test: DeviceSplit,
    batch_size: usize,
    /// Shuffles the training set at the start of every epoch.
    rng: SplitMix64,
    /// Accumulated over the run.
    pub(crate) timings: Timings,
    /// Where to write the first step's backward graph (`--graph`); taken when written.
    graph: Option<PathBuf>,
}

impl Trainer {
    pub(crate) fn new(
        model: Mlp,
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
            train: DeviceSplit::new(&data.train, data.features, data.classes, device)?,
            test: DeviceSplit::new(&data.test, data.features, data.classes, device)?,
            batch_size,
            rng: SplitMix64::new(seed),
            timings: Timings::default(),
            graph,
        })
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
        for batch in order.chunks(self.batch_size) {
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
            loss.backward()?;
            let t3 = Instant::now();
            self.optimizer.step()?;
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
        .filter(|(row, &label)| argmax(row) == label)
        .count())
}

/// The first position of the largest value.
fn argmax(row: &[f64]) -> usize {
    (0..row.len()).fold(0, |best, k| if row[k] > row[best] { k } else { best })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(argmax(&[0.1, 0.7, 0.7, -1.0]), 1);
        assert_eq!(argmax(&[5.0]), 0);
    }

    /// A few epochs on the embedded digits, as `main` runs them.
    fn train_digits(device: Device, epochs: usize) -> Vec<EpochStats> {
        let data = crate::data::load(&crate::data::DataSource::Digits).unwrap();
        let model = Mlp::new(&[64, 32, 10], crate::model::Activation::Relu, 1, device).unwrap();
        let opt = crate::optim::Adam::new(model.parameters(), 1e-2).unwrap();
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

    #[test]
    fn counts_correct_rows() {
        let logits = Tensor::from_vec(vec![1.0f32, 2.0, 0.0, 3.0, 2.0, 1.0], &[2, 3]).unwrap();
        assert_eq!(count_correct(&logits, &[1, 0]).unwrap(), 2);
        assert_eq!(count_correct(&logits, &[2, 0]).unwrap(), 1);
    }
}
