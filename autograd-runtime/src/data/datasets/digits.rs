//! [`Digits`]: UCI's optical digits, 1,797 images of 8×8 pixels, embedded in the library.

use super::idx;
use crate::data::Dataset;
use crate::{Error, Result, Tensor};

/// The images, `[1797, 8, 8]` unsigned bytes 0–16 (see `autograd-runtime/data/README.md`).
const IMAGES: &[u8] = include_bytes!("../../../data/digits-images-idx3-ubyte");
/// The labels, `[1797]` unsigned bytes 0–9.
const LABELS: &[u8] = include_bytes!("../../../data/digits-labels-idx1-ubyte");

/// 1,797 handwritten digits, 8×8 pixels, 10 classes: the test part of "Optical Recognition of
/// Handwritten Digits" (E. Alpaydin and C. Kaynak, UCI, CC BY 4.0), the data set of
/// scikit-learn's `load_digits`, embedded in the library (`autograd-runtime/data/README.md`
/// gives its provenance).
///
/// Sample `i` is `(image, label)`: the image an `F32` tensor `[64]` (the 8×8 pixels row by row,
/// each 0–16 divided by 16, so in `[0, 1]`), the label an `I64` 0-dim tensor 0–9. A
/// [`DataLoader`](crate::data::DataLoader) batches them into `([B, 64], [B])`;
/// [`random_split`](crate::data::random_split) holds out a test set.
///
/// # Examples
///
/// ```
/// use autograd_runtime::data::datasets::Digits;
/// use autograd_runtime::data::{DataLoader, DataLoaderOptions, Dataset, random_split};
/// use autograd_runtime::{DType, Generator};
/// let digits = Digits::load()?;
/// assert_eq!(digits.len(), 1797);
/// let (image, label) = digits.get(0)?;
/// assert_eq!((image.shape(), image.dtype()), (&[64][..], DType::F32));
/// assert_eq!(label.item::<i64>()?, 0);
///
/// let g = Generator::new().manual_seed(0);
/// let [train, test] = <[_; 2]>::try_from(random_split(digits, &[1437, 360], Some(&g))?).unwrap();
/// let options = DataLoaderOptions::default().batch_size(64).shuffle(true).generator(g);
/// let loader = DataLoader::new(train, options)?;
/// let (x, y) = loader.iter().next().unwrap()?;
/// assert_eq!((x.shape(), y.shape(), y.dtype()), (&[64, 64][..], &[64][..], DType::I64));
/// assert_eq!((loader.len(), test.len()), (23, 360));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Digits {
    /// `[1797, 64]` `F32` pixels in `[0, 1]`.
    images: Tensor,
    /// `[1797]` `I64` labels.
    targets: Tensor,
}

impl Digits {
    /// The number of images.
    const LEN: usize = 1797;

    /// Reads the embedded images and labels.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if the embedded data is not what it should be (a broken
    /// build); never otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::datasets::Digits;
    /// let d = Digits::load()?;
    /// assert_eq!(d.images().shape(), &[1797, 64]);
    /// assert_eq!(d.targets().shape(), &[1797]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn load() -> Result<Digits> {
        let (image_dims, pixels) = idx::parse("digits-images-idx3-ubyte", IMAGES)?;
        let (label_dims, labels) = idx::parse("digits-labels-idx1-ubyte", LABELS)?;
        if image_dims != [Self::LEN, 8, 8] || label_dims != [Self::LEN] {
            return Err(Error::InvalidArgument(format!(
                "embedded digits: dimensions {image_dims:?} and {label_dims:?}, expected \
                 [{n}, 8, 8] and [{n}]",
                n = Self::LEN
            )));
        }
        if pixels.iter().any(|&p| p > 16) || labels.iter().any(|&l| l > 9) {
            return Err(Error::InvalidArgument(
                "embedded digits: a pixel above 16 or a label above 9".into(),
            ));
        }
        let pixels = pixels.iter().map(|&p| f32::from(p) / 16.0).collect();
        let labels = labels.iter().map(|&l| i64::from(l)).collect();
        Ok(Digits {
            images: Tensor::from_vec(pixels, &[Self::LEN, 64])?,
            targets: Tensor::from_vec(labels, &[Self::LEN])?,
        })
    }

    /// All the images, `[1797, 64]` `F32` in `[0, 1]` (torchvision's `data`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::datasets::Digits;
    /// let pixels = Digits::load()?.images().to_vec::<f32>()?;
    /// assert_eq!(&pixels[..8], &[0.0, 0.0, 0.3125, 0.8125, 0.5625, 0.0625, 0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn images(&self) -> &Tensor {
        &self.images
    }

    /// All the labels, `[1797]` `I64` 0–9 (torchvision's `targets`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::data::datasets::Digits;
    /// let labels = Digits::load()?.targets().to_vec::<i64>()?;
    /// assert_eq!(&labels[..5], &[0, 1, 2, 3, 4]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn targets(&self) -> &Tensor {
        &self.targets
    }
}

impl Dataset for Digits {
    /// `(image [64] F32, label [] I64)`.
    type Item = (Tensor, Tensor);

    fn len(&self) -> usize {
        Self::LEN
    }

    fn get(&self, index: usize) -> Result<(Tensor, Tensor)> {
        if index >= Self::LEN {
            return Err(Error::IndexOutOfBounds {
                index,
                dim: 0,
                size: Self::LEN,
            });
        }
        Ok((
            self.images.select(0, index)?,
            self.targets.select(0, index)?,
        ))
    }
}
