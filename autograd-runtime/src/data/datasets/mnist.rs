//! [`Mnist`]: torchvision's `datasets.MNIST`, read from the IDX files as distributed.

use std::path::{Path, PathBuf};

use super::idx;
use crate::data::Dataset;
use crate::{Error, Result, Tensor};

/// The training files, then the test files (`t10k`), by their standard names.
const FILES: [[&str; 2]; 2] = [
    ["train-images-idx3-ubyte", "train-labels-idx1-ubyte"],
    ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"],
];

/// MNIST (LeCun, Cortes and Burges): 60,000 training and 10,000 test images of handwritten
/// digits, 28×28 pixels, read from the four IDX files as distributed (torchvision's
/// `datasets.MNIST(root, train)`; nothing is downloaded).
///
/// The files are `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`
/// and `t10k-labels-idx1-ubyte`, each plain or gzipped (`.gz`), in `root` itself or in
/// `root/MNIST/raw` (where torchvision keeps them, so a torchvision download serves as it is).
///
/// Sample `i` is `(image, label)` as torchvision's with `transforms.ToTensor()`: the image an
/// `F32` tensor `[1, 28, 28]` (each byte divided by 255, so in `[0, 1]`), the label an `I64`
/// 0-dim tensor 0–9. A [`DataLoader`](crate::data::DataLoader) batches them into
/// `([B, 1, 28, 28], [B])`.
///
/// # Examples
///
/// A tiny MNIST of two 2×3 images, written here, read back:
///
/// ```
/// use autograd_runtime::data::Dataset;
/// use autograd_runtime::data::datasets::Mnist;
/// use autograd_runtime::DType;
///
/// let root = std::env::temp_dir().join(format!("mnist_doc_{}", std::process::id()));
/// std::fs::create_dir_all(&root)?;
/// // IDX: two zero bytes, 0x08 (unsigned bytes), the number of dimensions, the sizes, the bytes.
/// let images = [&[0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3][..], &[0, 51, 102, 153, 204, 255], &[255; 6]];
/// std::fs::write(root.join("t10k-images-idx3-ubyte"), images.concat())?;
/// std::fs::write(root.join("t10k-labels-idx1-ubyte"), [0, 0, 8, 1, 0, 0, 0, 2, 7, 1])?;
///
/// let test = Mnist::new(&root, false)?;
/// assert_eq!(test.len(), 2);
/// let (image, label) = test.get(0)?;
/// assert_eq!((image.shape(), image.dtype()), (&[1, 2, 3][..], DType::F32));
/// assert_eq!(image.to_vec::<f32>()?, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
/// assert_eq!(label.item::<i64>()?, 7);
///
/// // The training files are not there: the error names what it looked for.
/// let err = Mnist::new(&root, true).unwrap_err().to_string();
/// assert!(err.starts_with("MNIST file `train-images-idx3-ubyte` (or `train-images-idx3-ubyte.gz`) not found in"));
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Mnist {
    /// `[n, 1, rows, cols]` `F32` pixels in `[0, 1]`.
    images: Tensor,
    /// `[n]` `I64` labels.
    targets: Tensor,
}

impl Mnist {
    /// Reads the training files (`train`) or the test files (`t10k`) from `root` or
    /// `root/MNIST/raw`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the directory or the file: `root` is not a directory;
    /// a file is in neither place; a file cannot be read, is broken gzip or is not an IDX array
    /// of bytes (a wrong magic number, a truncated header or data); the images are not 3-dim
    /// or the labels not 1-dim; their counts differ; a label is above 9.
    pub fn new(root: impl AsRef<Path>, train: bool) -> Result<Mnist> {
        let root = root.as_ref();
        if !root.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "MNIST root {} does not exist or is not a directory",
                root.display()
            )));
        }
        let [images, labels] = FILES[usize::from(!train)].map(|name| find(root, name));
        let (images, labels) = (images?, labels?);
        let (image_dims, pixels) = idx::read(&images)?;
        let (label_dims, targets) = idx::read(&labels)?;
        let &[n, rows, cols] = image_dims.as_slice() else {
            return Err(Error::InvalidArgument(format!(
                "{}: expected 3 dimensions (images, rows, columns), found dimensions \
                 {image_dims:?}",
                images.display()
            )));
        };
        if label_dims != [n] {
            return Err(Error::InvalidArgument(format!(
                "{}: expected 1 dimension of {n} labels (one per image of {}), found dimensions \
                 {label_dims:?}",
                labels.display(),
                images.display()
            )));
        }
        if let Some(i) = targets.iter().position(|&l| l > 9) {
            return Err(Error::InvalidArgument(format!(
                "{}: label {} at position {i} is not a digit 0-9",
                labels.display(),
                targets[i]
            )));
        }
        let pixels = pixels.iter().map(|&p| f32::from(p) / 255.0).collect();
        let targets = targets.iter().map(|&l| i64::from(l)).collect();
        Ok(Mnist {
            images: Tensor::from_vec(pixels, &[n, 1, rows, cols])?,
            targets: Tensor::from_vec(targets, &[n])?,
        })
    }

    /// All the images, `[n, 1, 28, 28]` `F32` in `[0, 1]` (torchvision's `data`, scaled as
    /// `ToTensor` scales it).
    pub fn images(&self) -> &Tensor {
        &self.images
    }

    /// All the labels, `[n]` `I64` 0–9 (torchvision's `targets`).
    pub fn targets(&self) -> &Tensor {
        &self.targets
    }
}

/// `dir/name`, `dir/name.gz`, or the same in `dir/MNIST/raw`, the first that exists.
fn find(root: &Path, name: &str) -> Result<PathBuf> {
    let raw = root.join("MNIST").join("raw");
    [root, raw.as_path()]
        .iter()
        .flat_map(|dir| [dir.join(name), dir.join(format!("{name}.gz"))])
        .find(|path| path.is_file())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "MNIST file `{name}` (or `{name}.gz`) not found in {} nor in {}",
                root.display(),
                raw.display()
            ))
        })
}

impl Dataset for Mnist {
    /// `(image [1, 28, 28] F32, label [] I64)`.
    type Item = (Tensor, Tensor);

    fn len(&self) -> usize {
        self.targets.shape()[0]
    }

    fn get(&self, index: usize) -> Result<(Tensor, Tensor)> {
        let size = self.len();
        if index >= size {
            return Err(Error::IndexOutOfBounds {
                index,
                dim: 0,
                size,
            });
        }
        Ok((
            self.images.select(0, index)?,
            self.targets.select(0, index)?,
        ))
    }
}

#[cfg(test)]
mod tests;
