//! [`Mnist`] on small IDX files written here: values, layouts, gzip, and the errors.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::super::idx::encode;
use super::*;
use crate::DType;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("autograd_mnist_{tag}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `bytes` at `path` (as `path.gz`, compressed, with `gzip`).
fn write(path: &Path, bytes: &[u8], gzip: bool) {
    if gzip {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(bytes).unwrap();
        let mut name = path.as_os_str().to_owned();
        name.push(".gz");
        std::fs::write(name, encoder.finish().unwrap()).unwrap();
    } else {
        std::fs::write(path, bytes).unwrap();
    }
}

/// A tiny MNIST in `dir`: `n_train` and `n_test` images of 2×3 pixels, image `i`'s pixels
/// `i, i + 1, .., i + 5` (the test images from 100 on), label `i % 10`.
fn fake_mnist(dir: &Path, n_train: usize, n_test: usize, gzip: bool) {
    for (prefix, n, first) in [("train", n_train, 0), ("t10k", n_test, 100)] {
        let pixels: Vec<u8> = (0..n)
            .flat_map(|i| (0..6).map(move |p| (first + i + p) as u8))
            .collect();
        let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
        let images = dir.join(format!("{prefix}-images-idx3-ubyte"));
        write(&images, &encode(&[n, 2, 3], &pixels), gzip);
        let labels_path = dir.join(format!("{prefix}-labels-idx1-ubyte"));
        write(&labels_path, &encode(&[n], &labels), gzip);
    }
}

fn error(root: &Path, train: bool) -> String {
    Mnist::new(root, train).unwrap_err().to_string()
}

#[test]
fn reads_the_training_and_test_files_plain_or_gzipped() -> Result<()> {
    for gzip in [false, true] {
        let dir = TempDir::new(if gzip { "gz" } else { "plain" });
        fake_mnist(&dir.0, 12, 5, gzip);
        let train = Mnist::new(&dir.0, true)?;
        let test = Mnist::new(&dir.0, false)?;
        assert_eq!((train.len(), test.len()), (12, 5));
        assert_eq!(train.images().shape(), &[12, 1, 2, 3]);
        assert_eq!(
            train.targets().to_vec::<i64>()?,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]
        );
        let (image, label) = train.get(3)?;
        assert_eq!((image.shape(), image.dtype()), (&[1, 2, 3][..], DType::F32));
        let expected: Vec<f32> = (3..9u8).map(|p| f32::from(p) / 255.0).collect();
        assert_eq!(image.to_vec::<f32>()?, expected);
        assert_eq!((label.shape(), label.item::<i64>()?), (&[][..], 3));
        let (image, label) = test.get(4)?;
        assert_eq!(image.to_vec::<f32>()?[0], 104.0 / 255.0);
        assert_eq!(label.item::<i64>()?, 4);
        assert_eq!(
            test.get(5).unwrap_err().to_string(),
            "index 5 is out of bounds for dimension 0 with size 5"
        );
    }
    Ok(())
}

#[test]
fn finds_the_files_where_torchvision_keeps_them() -> Result<()> {
    let dir = TempDir::new("raw");
    let raw = dir.0.join("MNIST").join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    fake_mnist(&raw, 4, 2, true);
    assert_eq!(Mnist::new(&dir.0, false)?.len(), 2);
    assert_eq!(
        Mnist::new(&dir.0, true)?.targets().to_vec::<i64>()?,
        [0, 1, 2, 3]
    );
    Ok(())
}

#[test]
fn a_missing_root_or_file_is_named() {
    assert_eq!(
        error(Path::new("/nonexistent/mnist"), true),
        "MNIST root /nonexistent/mnist does not exist or is not a directory"
    );
    let dir = TempDir::new("missing");
    fake_mnist(&dir.0, 4, 4, false);
    std::fs::remove_file(dir.0.join("t10k-labels-idx1-ubyte")).unwrap();
    assert!(Mnist::new(&dir.0, true).is_ok());
    assert_eq!(
        error(&dir.0, false),
        format!(
            "MNIST file `t10k-labels-idx1-ubyte` (or `t10k-labels-idx1-ubyte.gz`) not found in \
             {} nor in {}",
            dir.0.display(),
            dir.0.join("MNIST").join("raw").display()
        )
    );
}

#[test]
fn a_truncated_or_foreign_file_is_named() {
    let dir = TempDir::new("corrupt");
    fake_mnist(&dir.0, 4, 4, false);
    let images = dir.0.join("train-images-idx3-ubyte");
    let full = encode(&[4, 2, 3], &[7; 24]);
    std::fs::write(&images, &full[..full.len() - 1]).unwrap();
    assert_eq!(
        error(&dir.0, true),
        format!(
            "{}: truncated IDX data: dimensions [4, 2, 3] need 24 bytes, found 23",
            images.display()
        )
    );
    std::fs::write(&images, &full[..10]).unwrap();
    assert_eq!(
        error(&dir.0, true),
        format!(
            "{}: truncated IDX header: 3 dimension sizes need 16 bytes, the file has 10",
            images.display()
        )
    );
    std::fs::write(&images, b"GIF89a-not-idx").unwrap();
    assert!(error(&dir.0, true).starts_with(&format!(
        "{}: not an IDX file: magic number 0x47494638",
        images.display()
    )));
    // Broken gzip: the magic bytes, then nothing that inflates.
    std::fs::remove_file(&images).unwrap();
    let gz = dir.0.join("train-images-idx3-ubyte.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 1, 2]).unwrap();
    assert!(error(&dir.0, true).starts_with(&format!("{} is not valid gzip", gz.display())));
}

#[test]
fn shapes_counts_and_labels_are_checked() {
    let dir = TempDir::new("shapes");
    fake_mnist(&dir.0, 4, 3, false);
    let images = dir.0.join("train-images-idx3-ubyte");
    let labels = dir.0.join("train-labels-idx1-ubyte");
    // The labels' header where the images belong: images have 3 dimensions.
    std::fs::write(&images, encode(&[4], &[0, 1, 2, 3])).unwrap();
    assert_eq!(
        error(&dir.0, true),
        format!(
            "{}: expected 3 dimensions (images, rows, columns), found dimensions [4]",
            images.display()
        )
    );
    std::fs::write(&images, encode(&[4, 2, 3], &[0; 24])).unwrap();
    std::fs::write(&labels, encode(&[5], &[1, 2, 3, 4, 5])).unwrap();
    assert_eq!(
        error(&dir.0, true),
        format!(
            "{}: expected 1 dimension of 4 labels (one per image of {}), found dimensions [5]",
            labels.display(),
            images.display()
        )
    );
    std::fs::write(&labels, encode(&[4], &[1, 12, 3, 4])).unwrap();
    assert_eq!(
        error(&dir.0, true),
        format!(
            "{}: label 12 at position 1 is not a digit 0-9",
            labels.display()
        )
    );
}
