//! Tests of the data loaders: the embedded sets, and MNIST (the library's reader) on small IDX
//! files written here.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

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

/// `values` with sizes `dims` as an IDX file of unsigned bytes.
fn encode(dims: &[usize], values: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for &d in dims {
        out.extend_from_slice(&(d as u32).to_be_bytes());
    }
    out.extend_from_slice(values);
    out
}

/// A tiny MNIST: `n_train` and `n_test` images of 2×3 pixels, pixel value = image index.
fn fake_mnist(dir: &Path, n_train: usize, n_test: usize) {
    for (prefix, n) in [("train", n_train), ("t10k", n_test)] {
        let pixels: Vec<u8> = (0..n).flat_map(|i| [i as u8; 6]).collect();
        let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
        let images = dir.join(format!("{prefix}-images-idx3-ubyte"));
        fs::write(images, encode(&[n, 2, 3], &pixels)).unwrap();
        let labels_path = dir.join(format!("{prefix}-labels-idx1-ubyte"));
        fs::write(labels_path, encode(&[n], &labels)).unwrap();
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
fn mnist_reads_idx_files_into_rows_of_pixels() {
    let dir = TempDir::new("mnist_plain");
    fake_mnist(&dir.0, 12, 5);
    let d = load(&DataSource::Mnist(dir.0.clone())).unwrap();
    assert_eq!((d.features, d.classes), (6, 10));
    assert_eq!((d.train.len(), d.test.len()), (12, 5));
    assert_eq!(d.train.y[..], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
    // Image 3 has every pixel 3, scaled by 1/255.
    assert_eq!(d.train.x[18..24], [3.0 / 255.0; 6]);
    assert_eq!(d.test.x.len(), 5 * 6);
}

#[test]
fn mnist_errors_name_the_directory_or_the_file() {
    let err = load(&DataSource::Mnist("/nonexistent/mnist".into())).unwrap_err();
    assert_eq!(
        err.to_string(),
        "MNIST root /nonexistent/mnist does not exist or is not a directory"
    );

    let dir = TempDir::new("mnist_broken");
    fake_mnist(&dir.0, 4, 4);
    fs::remove_file(dir.0.join("t10k-labels-idx1-ubyte")).unwrap();
    let err = load(&DataSource::Mnist(dir.0.clone())).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("MNIST file `t10k-labels-idx1-ubyte` (or `t10k-labels-idx1-ubyte.gz`)"),
        "{err}"
    );
    let images = dir.0.join("train-images-idx3-ubyte");
    fs::write(&images, b"GIF89a-not-idx").unwrap();
    let err = load(&DataSource::Mnist(dir.0.clone())).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}: not an IDX file", images.display())),
        "{err}"
    );
}
