//! Trains a small MLP classifier on the Iris data set with this crate's autograd.
//!
//! ```text
//! cargo run --release --example train_mlp
//! ```
//!
//! * Data: Fisher's Iris data set (150 flowers, 4 measurements in cm, 3 species), as published
//!   by the UCI Machine Learning Repository (`iris.data`), embedded from `examples/data/iris.csv`.
//!   Features are standardised with the training set's mean and standard deviation.
//! * Split: every fifth flower of each species is held out for testing (120 train / 30 test).
//! * Model: 4 → 16 (tanh) → 3 logits, f64, weights `randn / sqrt(fan_in)`, zero biases.
//! * Loss: softmax cross-entropy from the available ops, `log_softmax(z) = s - log(Σ exp(s))`
//!   with `s = z - max(z)` per row (the max is a detached constant computed in plain Rust).
//! * Optimiser: plain full-batch gradient descent, `p -= lr * p.grad` under `no_grad()` with the
//!   in-place `sub_`, then `p.set_grad(None)`.

use std::time::Instant;

use autograd::{no_grad, DType, Result, Tensor};

const IRIS_CSV: &str = include_str!("data/iris.csv");
const SPECIES: [&str; 3] = ["Iris-setosa", "Iris-versicolor", "Iris-virginica"];
const FEATURES: usize = 4;
const HIDDEN: usize = 16;
const CLASSES: usize = 3;
const EPOCHS: usize = 500;
const LEARNING_RATE: f64 = 0.2;
const REPORT_EVERY: usize = 50;

/// A set of rows: features `[n, 4]` (row-major) and class labels.
#[derive(Default)]
struct Split {
    x: Vec<f64>,
    y: Vec<usize>,
}

impl Split {
    fn len(&self) -> usize {
        self.y.len()
    }

    fn features(&self) -> Result<Tensor> {
        Tensor::from_vec(self.x.clone(), &[self.len(), FEATURES])
    }

    /// One-hot labels `[n, 3]`.
    fn one_hot(&self) -> Result<Tensor> {
        let mut v = vec![0.0f64; self.len() * CLASSES];
        for (i, &c) in self.y.iter().enumerate() {
            v[i * CLASSES + c] = 1.0;
        }
        Tensor::from_vec(v, &[self.len(), CLASSES])
    }
}

/// Parses the embedded CSV and splits it: the 5th, 10th, ... flower of each species is a test row.
fn load_iris() -> (Split, Split) {
    let (mut train, mut test) = (Split::default(), Split::default());
    let mut seen = [0usize; CLASSES];
    for line in IRIS_CSV.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        assert_eq!(fields.len(), FEATURES + 1, "bad row {line:?}");
        let class = SPECIES
            .iter()
            .position(|s| *s == fields[FEATURES])
            .unwrap_or_else(|| panic!("unknown species in {line:?}"));
        seen[class] += 1;
        let split = if seen[class] % 5 == 0 {
            &mut test
        } else {
            &mut train
        };
        for f in &fields[..FEATURES] {
            split.x.push(
                f.parse()
                    .unwrap_or_else(|_| panic!("bad number in {line:?}")),
            );
        }
        split.y.push(class);
    }
    assert_eq!(
        seen,
        [50, 50, 50],
        "the Iris data set has 50 flowers per species"
    );
    (train, test)
}

/// Standardises every feature column with the mean and standard deviation of `train`.
fn standardise(train: &mut Split, test: &mut Split) {
    for j in 0..FEATURES {
        let col = || train.x.iter().skip(j).step_by(FEATURES);
        let n = train.len() as f64;
        let mean = col().sum::<f64>() / n;
        let std = (col().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        for split in [&mut *train, &mut *test] {
            for v in split.x.iter_mut().skip(j).step_by(FEATURES) {
                *v = (*v - mean) / std;
            }
        }
    }
}

struct Mlp {
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

impl Mlp {
    fn new(seed: u64) -> Result<Mlp> {
        let weight = |fan_in: usize, fan_out: usize, seed: u64| {
            Tensor::randn(&[fan_in, fan_out], DType::F64, seed)?
                .mul_scalar(1.0 / (fan_in as f64).sqrt())?
                .requires_grad_(true)
        };
        let bias = |n: usize| Tensor::zeros(&[n], DType::F64)?.requires_grad_(true);
        Ok(Mlp {
            w1: weight(FEATURES, HIDDEN, seed)?,
            b1: bias(HIDDEN)?,
            w2: weight(HIDDEN, CLASSES, seed + 1)?,
            b2: bias(CLASSES)?,
        })
    }

    fn params(&self) -> [&Tensor; 4] {
        [&self.w1, &self.b1, &self.w2, &self.b2]
    }

    /// Logits `[n, 3]`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = x.matmul(&self.w1)?.add(&self.b1)?.tanh()?;
        h.matmul(&self.w2)?.add(&self.b2)
    }

    /// `p -= lr * p.grad` for every parameter, outside the graph; then clears the gradients.
    fn sgd_step(&self, lr: f64) -> Result<()> {
        let _no_grad = no_grad();
        for p in self.params() {
            if let Some(g) = p.grad() {
                p.sub_(&g.mul_scalar(lr)?)?;
            }
            p.set_grad(None);
        }
        Ok(())
    }
}

/// Row-wise maximum of `[n, c]` logits as a constant `[n, 1]` tensor (no gradient flows).
fn row_max(logits: &Tensor) -> Result<Tensor> {
    let v = logits.to_vec::<f64>()?;
    let c = logits.shape()[1];
    let m = v
        .chunks(c)
        .map(|r| r.iter().copied().fold(f64::NEG_INFINITY, f64::max))
        .collect();
    Tensor::from_vec(m, &[v.len() / c, 1])
}

/// Mean softmax cross-entropy of `logits` `[n, c]` against one-hot `targets` `[n, c]`.
fn cross_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let n = logits.shape()[0] as f64;
    let shifted = logits.sub(&row_max(logits)?)?;
    let log_sum_exp = shifted.exp()?.sum_dims(&[1], true)?.log()?;
    let log_probs = shifted.sub(&log_sum_exp)?;
    log_probs.mul(targets)?.sum()?.mul_scalar(-1.0 / n)
}

/// Fraction of rows whose largest logit is the label.
fn accuracy(logits: &Tensor, labels: &[usize]) -> Result<f64> {
    let v = logits.to_vec::<f64>()?;
    let hits = v
        .chunks(CLASSES)
        .zip(labels)
        .filter(|(row, &label)| {
            let best = (0..CLASSES).fold(0, |b, k| if row[k] > row[b] { k } else { b });
            best == label
        })
        .count();
    Ok(hits as f64 / labels.len() as f64)
}

fn main() -> Result<()> {
    let (mut train, mut test) = load_iris();
    standardise(&mut train, &mut test);
    println!(
        "Iris: {} training / {} test flowers, MLP {FEATURES}-{HIDDEN}-{CLASSES} (tanh), \
         full-batch SGD lr={LEARNING_RATE}, {EPOCHS} epochs",
        train.len(),
        test.len()
    );
    let (x_train, t_train) = (train.features()?, train.one_hot()?);
    let (x_test, t_test) = (test.features()?, test.one_hot()?);
    let model = Mlp::new(42)?;

    let evaluate = |x: &Tensor, t: &Tensor, labels: &[usize]| -> Result<(f64, f64)> {
        let _no_grad = no_grad();
        let logits = model.forward(x)?;
        Ok((
            cross_entropy(&logits, t)?.item::<f64>()?,
            accuracy(&logits, labels)?,
        ))
    };

    println!(
        "{:>6} {:>11} {:>10} {:>10} {:>9}",
        "epoch", "train loss", "train acc", "test loss", "test acc"
    );
    let start = Instant::now();
    for epoch in 1..=EPOCHS {
        let logits = model.forward(&x_train)?;
        let loss = cross_entropy(&logits, &t_train)?;
        loss.backward()?;
        model.sgd_step(LEARNING_RATE)?;
        if epoch == 1 || epoch % REPORT_EVERY == 0 {
            let train_acc = accuracy(&logits, &train.y)?;
            let (test_loss, test_acc) = evaluate(&x_test, &t_test, &test.y)?;
            println!(
                "{epoch:>6} {:>11.4} {:>9.1}% {test_loss:>10.4} {:>8.1}%",
                loss.item::<f64>()?,
                100.0 * train_acc,
                100.0 * test_acc
            );
        }
    }
    let elapsed = start.elapsed();
    let (train_loss, train_acc) = evaluate(&x_train, &t_train, &train.y)?;
    let (test_loss, test_acc) = evaluate(&x_test, &t_test, &test.y)?;
    println!(
        "trained in {:.1} ms ({:.1} µs per epoch)",
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / EPOCHS as f64
    );
    println!(
        "final train: loss {train_loss:.4}, accuracy {:.1}%",
        100.0 * train_acc
    );
    println!(
        "final test:  loss {test_loss:.4}, accuracy {:.1}% ({} of {})",
        100.0 * test_acc,
        (test_acc * test.len() as f64).round(),
        test.len()
    );
    Ok(())
}
