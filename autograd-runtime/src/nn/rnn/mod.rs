//! `Rnn`, `Lstm`, `Gru`: PyTorch's `nn.RNN`, `nn.LSTM` and `nn.GRU`, stacked and optionally
//! bidirectional, as a loop over the time steps of the functional cells
//! ([`lstm_cell`](super::functional::lstm_cell), [`gru_cell`](super::functional::gru_cell),
//! [`rnn_tanh_cell`](super::functional::rnn_tanh_cell)), which is PyTorch's CPU semantics.
//!
//! Their parameters are a flat list named as PyTorch names them (`weight_ih_l0`,
//! `bias_hh_l1_reverse`, ...), so the module writes its own `Module` impl rather than deriving
//! one: the names depend on `num_layers` and `bidirectional`.

mod base;
mod cells;
mod options;

use std::fmt;

use self::base::{Mode, RnnBase};
pub use self::cells::{GruCell, LstmCell, RnnCell};
pub use self::options::{RnnNonlinearity, RnnOptions};
use super::Module;
use crate::{Error, Result, Tensor};

/// `Module` and `Display` for a layer that wraps an `RnnBase`, plus the accessors the three
/// share.
macro_rules! rnn_layer {
    ($ty:ident) => {
        impl Module for $ty {
            fn named_parameters(&self) -> Vec<(String, Tensor)> {
                self.base.named_parameters()
            }

            fn visit_parameters_mut(
                &mut self,
                f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
            ) -> Result<()> {
                self.base.visit_parameters_mut(f)
            }

            fn set_training(&mut self, training: bool) {
                self.base.set_training(training);
            }

            fn is_training(&self) -> bool {
                self.base.is_training()
            }

            fn repr(&self) -> String {
                self.base.repr()
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.base.repr())
            }
        }

        impl $ty {
            /// The size of each input step's features.
            pub fn input_size(&self) -> usize {
                self.base.input_size
            }

            /// The size of the hidden state.
            pub fn hidden_size(&self) -> usize {
                self.base.hidden_size
            }

            /// The options the layer was built with.
            pub fn options(&self) -> &RnnOptions {
                &self.base.options
            }

            /// The parameter PyTorch names `name` (`weight_ih_l0`, `bias_hh_l1_reverse`), if
            /// the layer has it.
            pub fn parameter(&self, name: &str) -> Option<&Tensor> {
                self.base.parameter(name)
            }
        }
    };
}

/// A multi-layer long short-term memory RNN (PyTorch's `nn.LSTM`): each layer runs
/// [`lstm_cell`](crate::nn::functional::lstm_cell) over the sequence, gates `i, f, g, o` in
/// PyTorch's order, parameters named and shaped as PyTorch's (`weight_ih_l{k}` `[4H, I]`,
/// `weight_hh_l{k}` `[4H, H]`, `bias_ih_l{k}`, `bias_hh_l{k}` `[4H]`, with `_reverse` for the
/// backward direction), so state dicts carry over.
///
/// Initialised as PyTorch's (every parameter uniform in `±1/√hidden_size`, in `parameters()`
/// order, from the global generator, f32 on the CPU): after
/// [`manual_seed`](crate::manual_seed) the weights are PyTorch's. `proj_size` is not supported.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Lstm, Module};
/// use autograd_runtime::{DType, Tensor};
/// let lstm = Lstm::new(3, 5)?;
/// let x = Tensor::ones(&[7, 2, 3], DType::F32)?; // [seq, batch, features]
/// let (out, (h_n, c_n)) = lstm.forward(&x, None)?;
/// assert_eq!(out.shape(), &[7, 2, 5]);
/// assert_eq!((h_n.shape(), c_n.shape()), (&[1, 2, 5][..], &[1, 2, 5][..]));
/// // The last output step is the final hidden state.
/// assert_eq!(out.select(0, 6)?.to_vec::<f32>()?, h_n.select(0, 0)?.to_vec::<f32>()?);
/// let names: Vec<String> = lstm.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Lstm {
    base: RnnBase,
}

rnn_layer!(Lstm);

impl Lstm {
    /// PyTorch's `nn.LSTM(input_size, hidden_size)`: one layer, with biases, sequence first.
    ///
    /// # Errors
    ///
    /// As [`with_options`](Lstm::with_options).
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Lstm> {
        Lstm::with_options(input_size, hidden_size, RnnOptions::default())
    }

    /// PyTorch's `nn.LSTM(input_size, hidden_size, **options)`.
    ///
    /// # Errors
    ///
    /// PyTorch's messages as [`Error::InvalidArgument`]: `input_size must be greater than
    /// zero`, `hidden_size must be greater than zero`, `num_layers must be greater than zero`,
    /// `dropout should be a number in range [0, 1] representing the probability of an element
    /// being zeroed`; and a non-zero `proj_size`, which is not supported.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Lstm, RnnOptions};
    /// let err = Lstm::with_options(4, 8, RnnOptions::default().num_layers(0)).unwrap_err();
    /// assert_eq!(err.to_string(), "num_layers must be greater than zero");
    /// assert!(Lstm::with_options(4, 8, RnnOptions::default().proj_size(2)).is_err());
    /// ```
    pub fn with_options(
        input_size: usize,
        hidden_size: usize,
        options: RnnOptions,
    ) -> Result<Lstm> {
        Ok(Lstm {
            base: RnnBase::new(Mode::Lstm, input_size, hidden_size, options)?,
        })
    }

    /// PyTorch's `lstm(input, hx=None)`: `input` is `[T, B, I]` (`[B, T, I]` with
    /// `batch_first`) or unbatched `[T, I]`; `hx` is `(h_0, c_0)`, each `[L·D, B, H]` (`[L·D,
    /// H]` unbatched), zeros when `None`. Returns `(output, (h_n, c_n))`: `output` `[T, B, D·H]`
    /// (in the input's layout) holds the last layer's hidden state at every step, both
    /// directions concatenated; `h_n`, `c_n` the final states of every layer and direction
    /// (index `layer · D + direction`). In training mode with `dropout > 0`, every layer's
    /// output but the last goes through dropout.
    ///
    /// # Errors
    ///
    /// PyTorch's messages as [`Error::InvalidArgument`]: `LSTM: Expected input to be 2D or 3D,
    /// got 4D instead`; `For batched 3-D input, hx and cx should also be 3-D but got (3-D, 2-D)
    /// tensors` (and the unbatched variant); `RNN input dtype (torch.float64) does not match
    /// weight dtype (torch.float32). ...`; `input.size(-1) must be equal to input_size.
    /// Expected 4, got 3`; `Expected hidden[0] size (2, 3, 8), got [1, 3, 8]` (and
    /// `hidden[1]`); `Expected sequence length to be larger than 0 in RNN`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Lstm;
    /// use autograd_runtime::{DType, Tensor};
    /// let lstm = Lstm::new(4, 8)?;
    /// let x = Tensor::ones(&[5, 4], DType::F32)?; // unbatched [seq, features]
    /// let h0 = Tensor::zeros(&[1, 8], DType::F32)?;
    /// let (out, (h_n, _)) = lstm.forward(&x, Some((&h0, &h0)))?;
    /// assert_eq!((out.shape(), h_n.shape()), (&[5, 8][..], &[1, 8][..]));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn forward(
        &self,
        input: &Tensor,
        hx: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, (Tensor, Tensor))> {
        let hx = hx.map(|(h, c)| [h, c]);
        let (output, mut finals) = self.base.forward(input, hx.as_ref().map(|h| &h[..]))?;
        match (finals.pop(), finals.pop()) {
            (Some(c_n), Some(h_n)) => Ok((output, (h_n, c_n))),
            _ => Err(Error::InvalidArgument(
                "LSTM: the final cell state is missing".into(),
            )),
        }
    }
}

/// A multi-layer gated recurrent unit RNN (PyTorch's `nn.GRU`): each layer runs
/// [`gru_cell`](crate::nn::functional::gru_cell) over the sequence, gates `r, z, n` in
/// PyTorch's order, parameters named and shaped as PyTorch's (`weight_ih_l{k}` `[3H, I]`,
/// `weight_hh_l{k}` `[3H, H]`, the biases `[3H]`, `_reverse` for the backward direction),
/// initialised as PyTorch's from the global generator.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Gru, RnnOptions};
/// use autograd_runtime::{DType, Tensor};
/// let gru = Gru::with_options(3, 4, RnnOptions::default().num_layers(2).batch_first(true))?;
/// let x = Tensor::ones(&[2, 6, 3], DType::F32)?; // [batch, seq, features]
/// let (out, h_n) = gru.forward(&x, None)?;
/// assert_eq!((out.shape(), h_n.shape()), (&[2, 6, 4][..], &[2, 2, 4][..]));
/// assert_eq!(gru.to_string(), "GRU(3, 4, num_layers=2, batch_first=True)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Gru {
    base: RnnBase,
}

rnn_layer!(Gru);

impl Gru {
    /// PyTorch's `nn.GRU(input_size, hidden_size)`.
    ///
    /// # Errors
    ///
    /// As [`Lstm::with_options`].
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Gru> {
        Gru::with_options(input_size, hidden_size, RnnOptions::default())
    }

    /// PyTorch's `nn.GRU(input_size, hidden_size, **options)`.
    ///
    /// # Errors
    ///
    /// As [`Lstm::with_options`]; a non-zero `proj_size` gives PyTorch's `proj_size argument is
    /// only supported for LSTM, not RNN or GRU`.
    pub fn with_options(input_size: usize, hidden_size: usize, options: RnnOptions) -> Result<Gru> {
        Ok(Gru {
            base: RnnBase::new(Mode::Gru, input_size, hidden_size, options)?,
        })
    }

    /// PyTorch's `gru(input, hx=None)`: shapes as [`Lstm::forward`]'s, with one state `h_0`;
    /// returns `(output, h_n)`.
    ///
    /// # Errors
    ///
    /// As [`Lstm::forward`]'s, with `GRU: Expected input to be 2D or 3D, got 4D instead`, `For
    /// batched 3-D input, hx should also be 3-D but got 2-D tensor` and `Expected hidden size
    /// (1, 2, 8), got [1, 3, 8]`.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        single_state(&self.base, input, hx)
    }
}

/// A multi-layer Elman RNN (PyTorch's `nn.RNN`): `h' = tanh(x Wᵢₕᵀ + bᵢₕ + h Wₕₕᵀ + bₕₕ)` (or
/// ReLU) at every step, parameters named, shaped (`[H, I]`, `[H, H]`, `[H]`) and initialised
/// as PyTorch's.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Rnn, RnnNonlinearity, RnnOptions};
/// use autograd_runtime::{DType, Tensor};
/// let rnn = Rnn::with_options(3, 4, RnnNonlinearity::Relu, RnnOptions::default())?;
/// let (out, h_n) = rnn.forward(&Tensor::ones(&[5, 3], DType::F32)?, None)?;
/// assert_eq!((out.shape(), h_n.shape()), (&[5, 4][..], &[1, 4][..]));
/// assert!(out.to_vec::<f32>()?.iter().all(|&v| v >= 0.0));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Rnn {
    base: RnnBase,
}

rnn_layer!(Rnn);

impl Rnn {
    /// PyTorch's `nn.RNN(input_size, hidden_size)`, with `tanh`.
    ///
    /// # Errors
    ///
    /// As [`Lstm::with_options`].
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Rnn> {
        Rnn::with_options(
            input_size,
            hidden_size,
            RnnNonlinearity::Tanh,
            RnnOptions::default(),
        )
    }

    /// PyTorch's `nn.RNN(input_size, hidden_size, nonlinearity=..., **options)`.
    ///
    /// # Errors
    ///
    /// As [`Gru::with_options`].
    pub fn with_options(
        input_size: usize,
        hidden_size: usize,
        nonlinearity: RnnNonlinearity,
        options: RnnOptions,
    ) -> Result<Rnn> {
        let mode = match nonlinearity {
            RnnNonlinearity::Tanh => Mode::RnnTanh,
            RnnNonlinearity::Relu => Mode::RnnRelu,
        };
        Ok(Rnn {
            base: RnnBase::new(mode, input_size, hidden_size, options)?,
        })
    }

    /// The activation.
    pub fn nonlinearity(&self) -> RnnNonlinearity {
        match self.base.mode {
            Mode::RnnRelu => RnnNonlinearity::Relu,
            _ => RnnNonlinearity::Tanh,
        }
    }

    /// PyTorch's `rnn(input, hx=None)`: as [`Gru::forward`].
    ///
    /// # Errors
    ///
    /// As [`Gru::forward`]'s, with `RNN: Expected input to be 2D or 3D, got 4D tensor instead`.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        single_state(&self.base, input, hx)
    }
}

/// The forward of the layers with one state (`Gru`, `Rnn`).
fn single_state(base: &RnnBase, input: &Tensor, hx: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
    let hx = hx.map(|h| [h]);
    let (output, mut finals) = base.forward(input, hx.as_ref().map(|h| &h[..]))?;
    match finals.pop() {
        Some(h_n) => Ok((output, h_n)),
        None => Err(Error::InvalidArgument(format!(
            "{}: the final hidden state is missing",
            base.mode.name()
        ))),
    }
}
