//! Data sets the crate ships, ready to load (PyTorch's users find theirs in torchvision).
//!
//! * [`Digits`]: 1,797 handwritten digits, 8×8 pixels (UCI's optical digits, as scikit-learn's
//!   `load_digits`), embedded in the library: about 115 KB, no download.
//! * [`Mnist`]: MNIST's 70,000 handwritten digits, 28×28 pixels, read from its IDX files.

mod digits;
mod idx;
mod mnist;

pub use digits::Digits;
pub use mnist::Mnist;
