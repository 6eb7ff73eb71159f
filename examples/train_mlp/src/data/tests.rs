//! Tests of the data loaders: the embedded sets, and MNIST on small IDX files written here.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::*;
use crate::idx::{FormatError, encode};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("train_mlp_{tag}_{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path, bytes: &[u8], gzip: bool) {
    if gzip {
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(bytes).unwrap();
        fs::write(path.with_extension("gz"), enc.finish().unwrap()).unwrap();
    } else {
        fs::write(path, bytes).unwrap();
    }
}

/// A tiny MNIST: `n_train` and `n_test` images of 2×3 pixels, pixel value = image index.
fn fake_mnist(dir: &Path, n_train: usize, n_test: usize, gzip: bool) {
    for (prefix, n) in [("train", n_train), ("t10k", n_test)] {
        let pixels: Vec<u8> = (0..n).flat_map(|i| [i as u8; 6]).collect();
        let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
        write(
            &dir.join(format!("{prefix}-images-idx3-ubyte")),
            &encode(&[n, 2, 3], &pixels),
            gzip,
        );
        write(
            &dir.join(format!("{prefix}-labels-idx1-ubyte")),
            &encode(&[n], &labels),
            gzip,
        );
    }
}

#[test]
fn digits_are_embedded_split_and_scaled() {
    let d = load(&DataSource::Digits).unwrap();
    assert_eq!((d.features, d.classes), (64, 10));
    assert_eq!((d.train.len(), d.test.len()), (1438, 359));
    assert_eq!(d.train.x.len(), 1438 * 64);
    assert!(
        d.train
            .x
            .iter()
            .chain(&d.test.x)
            .all(|&v| (0.0..=1.0).contains(&v))
    );
    // 0..=16 scaled by 1/16: every value is a multiple of 1/16, and 1.0 occurs.
    assert!(d.test.x.iter().all(|&v| (v * 16.0).fract() == 0.0));
    assert!(d.train.x.contains(&1.0));
    // The set has ~180 images per digit; a random 20% has every digit many times.
    let mut per_class = [0usize; 10];
    for &c in &d.test.y {
        per_class[c] += 1;
    }
    assert!(
        per_class.iter().all(|&n| (20..=60).contains(&n)),
        "{per_class:?}"
    );
    // The split does not depend on anything but its fixed seed.
    let again = load(&DataSource::Digits).unwrap();
    assert_eq!((again.train, again.test), (d.train, d.test));
}

#[test]
fn iris_keeps_its_split_and_is_standardised() {
    let d = load(&DataSource::Iris).unwrap();
    assert_eq!((d.features, d.classes), (4, 3));
    assert_eq!((d.train.len(), d.test.len()), (120, 30));
    assert_eq!(d.test.y.iter().filter(|&&c| c == 2).count(), 10);
    for j in 0..4 {
        let col: Vec<f32> = d.train.x.iter().skip(j).step_by(4).copied().collect();
        let mean = col.iter().sum::<f32>() / col.len() as f32;
        let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / col.len() as f32;
        assert!(
            mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4,
            "{mean} {var}"
        );
    }
}

#[test]
fn one_hot_rows() {
    let s = Split {
        x: vec![],
        y: vec![2, 0],
    };
    assert_eq!(s.one_hot(3), [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
}

#[test]
fn data_source_parsing() {
    assert_eq!("digits".parse(), Ok(DataSource::Digits));
    assert_eq!("iris".parse(), Ok(DataSource::Iris));
    assert_eq!(
        "mnist:/data/mnist".parse(),
        Ok(DataSource::Mnist(PathBuf::from("/data/mnist")))
    );
    for bad in ["mnist", "mnist:", "cifar", ""] {
        assert!(bad.parse::<DataSource>().is_err(), "{bad}");
    }
    let err = "cifar".parse::<DataSource>().unwrap_err();
    assert!(err.contains("`digits`, `iris` or `mnist:DIR`"), "{err}");
}

#[test]
fn mnist_reads_plain_and_gzip_idx_files() {
    for gzip in [false, true] {
        let dir = TempDir::new(if gzip { "mnist_gz" } else { "mnist_plain" });
        fake_mnist(&dir.0, 12, 5, gzip);
        let d = load(&DataSource::Mnist(dir.0.clone())).unwrap();
        assert_eq!((d.features, d.classes), (6, 10));
        assert_eq!((d.train.len(), d.test.len()), (12, 5));
        assert_eq!(d.train.y[..], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
        // Image 3 has every pixel 3, scaled by 1/255.
        assert_eq!(d.train.x[18..24], [3.0 / 255.0; 6]);
        assert_eq!(d.test.x.len(), 5 * 6);
    }
}

#[test]
fn mnist_missing_directory_and_files() {
    let err = load(&DataSource::Mnist("/nonexistent/mnist".into())).unwrap_err();
    assert!(matches!(err, DataError::NoSuchDirectory { .. }));
    assert!(
        err.to_string()
            .contains("/nonexistent/mnist does not exist"),
        "{err}"
    );

    let dir = TempDir::new("mnist_missing");
    fake_mnist(&dir.0, 4, 4, false);
    fs::remove_file(dir.0.join("t10k-labels-idx1-ubyte")).unwrap();
    let err = load(&DataSource::Mnist(dir.0.clone())).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::MissingFile {
                name: "t10k-labels-idx1-ubyte",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("`t10k-labels-idx1-ubyte.gz`"),
        "{err}"
    );
}

#[test]
fn mnist_count_mismatch() {
    let dir = TempDir::new("mnist_count");
    fake_mnist(&dir.0, 6, 3, false);
    write(
        &dir.0.join("train-labels-idx1-ubyte"),
        &encode(&[5], &[1, 2, 3, 4, 5]),
        false,
    );
    let err = load(&DataSource::Mnist(dir.0.clone())).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::CountMismatch {
                n_images: 6,
                n_labels: 5,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("has 6 images but"), "{err}");
}

#[test]
fn mnist_bad_magic_and_truncation_name_the_file() {
    let dir = TempDir::new("mnist_magic");
    fake_mnist(&dir.0, 4, 4, false);
    let images = dir.0.join("train-images-idx3-ubyte");
    // Swap in the labels' header: images need 3 dimensions.
    fs::write(&images, encode(&[4], &[0, 1, 2, 3])).unwrap();
    let err = load(&DataSource::Mnist(dir.0.clone())).unwrap_err();
    assert!(matches!(err, DataError::WrongShape { .. }), "{err}");

    fs::write(&images, b"GIF89a-not-idx").unwrap();
    let err = load(&DataSource::Mnist(dir.0.clone())).unwrap_err();
    let DataError::Idx(IdxError::Format { path, source }) = &err else {
        panic!("{err}");
    };
    assert_eq!(path, &images);
    assert!(matches!(source, FormatError::BadMagic { .. }));
    assert!(
        err.to_string()
            .contains("train-images-idx3-ubyte is not an IDX file"),
        "{err}"
    );

    let full = encode(&[4, 2, 3], &[7; 24]);
    fs::write(&images, &full[..full.len() - 1]).unwrap();
    let err = load(&DataSource::Mnist(dir.0.clone())).unwrap_err();
    assert!(err.to_string().contains("truncated data"), "{err}");
}

#[test]
fn mnist_labels_must_be_digits() {
    let dir = TempDir::new("mnist_label");
    fake_mnist(&dir.0, 3, 3, false);
    write(
        &dir.0.join("t10k-labels-idx1-ubyte"),
        &encode(&[3], &[1, 12, 3]),
        false,
    );
    let err = load(&DataSource::Mnist(dir.0.clone())).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::BadLabel {
                index: 1,
                label: 12,
                ..
            }
        ),
        "{err}"
    );
}
