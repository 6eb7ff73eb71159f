//! The data sets: the embedded 8×8 digits (default) and Iris, and MNIST read from IDX files.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use autograd::data::datasets::{Digits, Mnist};

use crate::rng::SplitMix64;

/// Fisher's Iris data set, with a header line.
const IRIS_CSV: &str = include_str!("../data/iris.csv");
const IRIS_SPECIES: [&str; 3] = ["Iris-setosa", "Iris-versicolor", "Iris-virginica"];

/// The digits test split is drawn with this seed, whatever `--seed` says, so that every run is
/// scored on the same images.
const DIGITS_SPLIT_SEED: u64 = 0x5eed_d161;
/// Share of the digits held out for testing.
const DIGITS_TEST_FRACTION: f64 = 0.2;

/// Which data set to train on (`--data`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DataSource {
    /// The embedded 8×8 digits.
    Digits,
    /// The embedded Iris flowers.
    Iris,
    /// MNIST's IDX files in a directory.
    Mnist(PathBuf),
}

impl FromStr for DataSource {
    type Err = String;

    fn from_str(s: &str) -> Result<DataSource, String> {
        match s {
            "digits" => Ok(DataSource::Digits),
            "iris" => Ok(DataSource::Iris),
            "mnist" => Err("`mnist` needs its directory: `mnist:DIR`".into()),
            _ => match s.strip_prefix("mnist:") {
                Some("") => Err("`mnist:` needs a directory after the colon".into()),
                Some(dir) => Ok(DataSource::Mnist(PathBuf::from(dir))),
                None => Err(format!(
                    "unknown data set `{s}`: expected `digits`, `iris` or `mnist:DIR`"
                )),
            },
        }
    }
}

impl fmt::Display for DataSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataSource::Digits => f.write_str("digits"),
            DataSource::Iris => f.write_str("iris"),
            DataSource::Mnist(dir) => write!(f, "mnist:{}", dir.display()),
        }
    }
}

/// Why a data set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DataError {
    /// The library's data sets (the digits, MNIST's files) say what is wrong, naming the file.
    #[error(transparent)]
    Library(#[from] autograd::Error),
    #[error("{}: expected {expected}, found dimensions {found:?}", path.display())]
    WrongShape {
        path: PathBuf,
        expected: &'static str,
        found: Vec<usize>,
    },
    #[error("embedded {name} data, line {line}: {message}")]
    Csv {
        name: &'static str,
        line: usize,
        message: String,
    },
}

/// One split: features row-major `[len, features]` and class labels.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Split {
    pub(crate) x: Vec<f32>,
    pub(crate) y: Vec<usize>,
}

impl Split {
    pub(crate) fn len(&self) -> usize {
        self.y.len()
    }

    /// One-hot rows `[len, classes]`.
    pub(crate) fn one_hot(&self, classes: usize) -> Vec<f32> {
        let mut v = vec![0.0; self.len() * classes];
        for (row, &c) in self.y.iter().enumerate() {
            v[row * classes + c] = 1.0;
        }
        v
    }
}

/// A classification data set, split and scaled.
#[derive(Clone, Debug)]
pub(crate) struct Dataset {
    /// What to call it in the output ("digits 8×8", ...).
    pub(crate) name: String,
    pub(crate) features: usize,
    pub(crate) classes: usize,
    pub(crate) train: Split,
    pub(crate) test: Split,
    /// How the split was made, for the first line of output.
    pub(crate) split_note: &'static str,
}

/// Loads `source`.
///
/// # Errors
///
/// [`DataError`]: missing or malformed MNIST files (or, for a broken build, embedded data).
pub(crate) fn load(source: &DataSource) -> Result<Dataset, DataError> {
    match source {
        DataSource::Digits => digits(),
        DataSource::Iris => iris(),
        DataSource::Mnist(dir) => mnist(dir),
    }
}

/// Parses comma-separated rows of numbers; `label` turns the last field into a class.
fn parse_rows(
    name: &'static str,
    text: &str,
    features: usize,
    label: impl Fn(&str) -> Option<usize>,
) -> Result<Split, DataError> {
    let mut all = Split::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let csv = |message: String| DataError::Csv {
            name,
            line: i + 1,
            message,
        };
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != features + 1 {
            return Err(csv(format!(
                "{} fields, expected {}",
                fields.len(),
                features + 1
            )));
        }
        for f in &fields[..features] {
            all.x.push(
                f.parse()
                    .map_err(|_| csv(format!("`{f}` is not a number")))?,
            );
        }
        let class = label(fields[features])
            .ok_or_else(|| csv(format!("unknown class `{}`", fields[features])))?;
        all.y.push(class);
    }
    Ok(all)
}

/// The 1,797 digits of `autograd::data::datasets::Digits`, pixels scaled from 0–16 to 0–1; a
/// fixed 20% held out at random.
fn digits() -> Result<Dataset, DataError> {
    const FEATURES: usize = 64;
    let digits = Digits::load()?;
    let all = Split {
        x: digits.images().to_vec::<f32>()?,
        y: digits
            .targets()
            .to_vec::<i64>()?
            .into_iter()
            .map(|c| c as usize)
            .collect(),
    };
    let order = SplitMix64::new(DIGITS_SPLIT_SEED).permutation(all.len());
    let n_test = (all.len() as f64 * DIGITS_TEST_FRACTION).round() as usize;
    let (test_rows, train_rows) = order.split_at(n_test);
    let pick = |rows: &[usize]| {
        let mut s = Split::default();
        for &r in rows {
            s.x.extend_from_slice(&all.x[r * FEATURES..(r + 1) * FEATURES]);
            s.y.push(all.y[r]);
        }
        s
    };
    Ok(Dataset {
        name: "digits 8x8 (UCI optical digits)".into(),
        features: FEATURES,
        classes: 10,
        train: pick(train_rows),
        test: pick(test_rows),
        split_note: "fixed random 20% held out, pixels / 16",
    })
}

/// Iris: every fifth flower of each species held out; features standardised with the training
/// set's statistics.
fn iris() -> Result<Dataset, DataError> {
    const FEATURES: usize = 4;
    let body = IRIS_CSV.split_once('\n').map_or("", |(_, rest)| rest);
    let all = parse_rows("iris", body, FEATURES, |s| {
        IRIS_SPECIES.iter().position(|sp| *sp == s)
    })?;
    let (mut train, mut test) = (Split::default(), Split::default());
    let mut seen = [0usize; 3];
    for (row, &class) in all.y.iter().enumerate() {
        seen[class] += 1;
        let split = if seen[class] % 5 == 0 {
            &mut test
        } else {
            &mut train
        };
        split
            .x
            .extend_from_slice(&all.x[row * FEATURES..(row + 1) * FEATURES]);
        split.y.push(class);
    }
    standardise(&mut train, &mut test, FEATURES);
    Ok(Dataset {
        name: "Iris".into(),
        features: FEATURES,
        classes: 3,
        train,
        test,
        split_note: "every 5th flower of each species held out, standardised",
    })
}

/// Standardises each feature column with the mean and standard deviation of `train`.
pub(crate) fn standardise(train: &mut Split, test: &mut Split, features: usize) {
    let n = train.len().max(1) as f64;
    for j in 0..features {
        let col = || {
            train
                .x
                .iter()
                .skip(j)
                .step_by(features)
                .map(|&v| f64::from(v))
        };
        let mean = col().sum::<f64>() / n;
        let std = (col().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        let scale = if std > 1e-8 { 1.0 / std } else { 1.0 };
        for split in [&mut *train, &mut *test] {
            for v in split.x.iter_mut().skip(j).step_by(features) {
                *v = ((f64::from(*v) - mean) * scale) as f32;
            }
        }
    }
}

/// One MNIST split of `autograd::data::datasets::Mnist` as rows of `rows · cols` pixels
/// (already scaled to 0–1), and the pixels per image.
fn mnist_split(dir: &Path, train: bool) -> Result<(Split, usize), DataError> {
    let mnist = Mnist::new(dir, train)?;
    let features = mnist.images().shape()[2..].iter().product();
    let split = Split {
        x: mnist.images().to_vec::<f32>()?,
        y: mnist
            .targets()
            .to_vec::<i64>()?
            .into_iter()
            .map(|c| c as usize)
            .collect(),
    };
    Ok((split, features))
}

/// MNIST from `dir`: the 60,000 training and 10,000 test images as distributed.
fn mnist(dir: &Path) -> Result<Dataset, DataError> {
    let (train, features) = mnist_split(dir, true)?;
    let (test, test_features) = mnist_split(dir, false)?;
    if features != test_features {
        return Err(DataError::WrongShape {
            path: dir.to_owned(),
            expected: "test images of the training images' size",
            found: vec![test.len(), test_features],
        });
    }
    Ok(Dataset {
        name: format!("MNIST ({})", dir.display()),
        features,
        classes: 10,
        train,
        test,
        split_note: "the standard train / t10k files, pixels / 255",
    })
}

#[cfg(test)]
mod tests;
