//! `Rnn`, `Lstm`, `Gru`: PyTorch's `nn.RNN`, `nn.LSTM` and `nn.GRU`, stacked and optionally
//! bidirectional, as a loop over the time steps of the functional cells
//! ([`lstm_cell`](super::functional::lstm_cell), [`gru_cell`](super::functional::gru_cell),
//! [`rnn_tanh_cell`](super::functional::rnn_tanh_cell)), which is PyTorch's CPU semantics.
//!
//! Their parameters are a flat list named as PyTorch names them (`weight_ih_l0`,
//! `bias_hh_l1_reverse`, ...), so the module writes its own `Module` impl rather than deriving
//! one: the names depend on `num_layers` and `bidirectional`.

use std::fmt;

use super::dropout::dropout;
use super::functional::{gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell};
use super::{Module, init};
use crate::error::py_float;
use crate::{DType, Error, Result, Tensor};

/// The activation of an Elman RNN ([`Rnn`], [`RnnCell`](super::RnnCell)): PyTorch's
/// `nonlinearity='tanh'` (the default) or `'relu'`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RnnNonlinearity {
    /// `tanh` (PyTorch's default).
    #[default]
    Tanh,
    /// `relu`.
    Relu,
}

/// The keyword arguments PyTorch's `nn.RNN`, `nn.LSTM` and `nn.GRU` share, with PyTorch's
/// defaults ([`RnnOptions::default`]): `num_layers=1`, `bias=True`, `batch_first=False`,
/// `dropout=0.0`, `bidirectional=False`, `proj_size=0`. The setters chain.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Lstm, RnnOptions};
/// // nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True)
/// let options = RnnOptions::default().num_layers(2).batch_first(true).bidirectional(true);
/// let lstm = Lstm::with_options(4, 8, options)?;
/// assert_eq!(
///     lstm.to_string(),
///     "LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True)"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RnnOptions {
    /// The number of stacked layers, each taking the previous one's output (default 1).
    pub num_layers: usize,
    /// Whether the layers have the biases `b_ih` and `b_hh` (default true).
    pub bias: bool,
    /// Input and output are `[batch, seq, feature]` instead of `[seq, batch, feature]` (default
    /// false); the hidden states stay `[layers · directions, batch, hidden]`.
    pub batch_first: bool,
    /// Dropout on the output of every layer but the last, in training mode (default 0).
    pub dropout: f64,
    /// Run each layer forwards and backwards over the sequence and concatenate (default false).
    pub bidirectional: bool,
    /// PyTorch's LSTM projections: not supported here, the constructors refuse a non-zero value
    /// (default 0).
    pub proj_size: usize,
}

impl Default for RnnOptions {
    fn default() -> RnnOptions {
        RnnOptions {
            num_layers: 1,
            bias: true,
            batch_first: false,
            dropout: 0.0,
            bidirectional: false,
            proj_size: 0,
        }
    }
}

impl RnnOptions {
    /// Sets [`num_layers`](RnnOptions::num_layers).
    pub fn num_layers(mut self, num_layers: usize) -> RnnOptions {
        self.num_layers = num_layers;
        self
    }

    /// Sets [`bias`](RnnOptions::bias).
    pub fn bias(mut self, bias: bool) -> RnnOptions {
        self.bias = bias;
        self
    }

    /// Sets [`batch_first`](RnnOptions::batch_first).
    pub fn batch_first(mut self, batch_first: bool) -> RnnOptions {
        self.batch_first = batch_first;
        self
    }

    /// Sets [`dropout`](RnnOptions::dropout).
    pub fn dropout(mut self, dropout: f64) -> RnnOptions {
        self.dropout = dropout;
        self
    }

    /// Sets [`bidirectional`](RnnOptions::bidirectional).
    pub fn bidirectional(mut self, bidirectional: bool) -> RnnOptions {
        self.bidirectional = bidirectional;
        self
    }

    /// Sets [`proj_size`](RnnOptions::proj_size).
    pub fn proj_size(mut self, proj_size: usize) -> RnnOptions {
        self.proj_size = proj_size;
        self
    }
}

/// Which recurrence a stack runs (PyTorch's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    RnnTanh,
    RnnRelu,
    Lstm,
    Gru,
}

impl Mode {
    /// The number of gate blocks stacked in the weights' rows.
    fn gates(self) -> usize {
        match self {
            Mode::RnnTanh | Mode::RnnRelu => 1,
            Mode::Lstm => 4,
            Mode::Gru => 3,
        }
    }

    /// The class name PyTorch prints and puts in its messages.
    fn name(self) -> &'static str {
        match self {
            Mode::RnnTanh | Mode::RnnRelu => "RNN",
            Mode::Lstm => "LSTM",
            Mode::Gru => "GRU",
        }
    }
}

/// What the three layers share (PyTorch's `RNNBase`): the sizes, the options, the flat
/// parameter list in PyTorch's order and the training flag.
#[derive(Debug)]
struct RnnBase {
    mode: Mode,
    input_size: usize,
    hidden_size: usize,
    options: RnnOptions,
    /// PyTorch's `_flat_weights` with `_flat_weights_names`: per layer, per direction,
    /// `weight_ih`, `weight_hh` and (with bias) `bias_ih`, `bias_hh`.
    weights: Vec<(String, Tensor)>,
    training: bool,
}

impl RnnBase {
    /// PyTorch's `RNNBase.__init__` and `reset_parameters`: the checks, then every parameter
    /// uniform in `±1/√hidden_size` from the global generator, in `parameters()` order.
    fn new(
        mode: Mode,
        input_size: usize,
        hidden_size: usize,
        options: RnnOptions,
    ) -> Result<RnnBase> {
        let bad = |m: &str| Err(Error::InvalidArgument(m.to_owned()));
        if !(0.0..=1.0).contains(&options.dropout) {
            return bad(
                "dropout should be a number in range [0, 1] representing the probability \
                        of an element being zeroed",
            );
        }
        if input_size == 0 {
            return bad("input_size must be greater than zero");
        }
        if hidden_size == 0 {
            return bad("hidden_size must be greater than zero");
        }
        if options.num_layers == 0 {
            return bad("num_layers must be greater than zero");
        }
        if options.proj_size != 0 {
            if mode != Mode::Lstm {
                return bad("proj_size argument is only supported for LSTM, not RNN or GRU");
            }
            if options.proj_size >= hidden_size {
                return bad("proj_size has to be smaller than hidden_size");
            }
            return Err(Error::InvalidArgument(format!(
                "LSTM: proj_size={} is not supported here (only proj_size=0)",
                options.proj_size
            )));
        }
        let directions = if options.bidirectional { 2 } else { 1 };
        let gate_size = mode.gates() * hidden_size;
        let mut weights = Vec::new();
        for layer in 0..options.num_layers {
            let layer_input = if layer == 0 {
                input_size
            } else {
                hidden_size * directions
            };
            for direction in 0..directions {
                let suffix = if direction == 1 { "_reverse" } else { "" };
                let mut own = vec![
                    ("weight_ih", vec![gate_size, layer_input]),
                    ("weight_hh", vec![gate_size, hidden_size]),
                ];
                if options.bias {
                    own.push(("bias_ih", vec![gate_size]));
                    own.push(("bias_hh", vec![gate_size]));
                }
                for (name, shape) in own {
                    let t = Tensor::zeros(&shape, DType::F32)?;
                    weights.push((format!("{name}_l{layer}{suffix}"), t));
                }
            }
        }
        let stdv = 1.0 / (hidden_size as f64).sqrt();
        for (_, w) in &mut weights {
            init::uniform_(w, -stdv, stdv)?;
            *w = w.clone().requires_grad_(true)?;
        }
        Ok(RnnBase {
            mode,
            input_size,
            hidden_size,
            options,
            weights,
            training: true,
        })
    }

    fn directions(&self) -> usize {
        if self.options.bidirectional { 2 } else { 1 }
    }

    /// The parameter named `name`.
    fn parameter(&self, name: &str) -> Option<&Tensor> {
        self.weights.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// The weights of one layer and direction: `[w_ih, w_hh]` and the biases if any.
    fn layer_weights(&self, index: usize) -> (&Tensor, &Tensor, Option<&Tensor>, Option<&Tensor>) {
        let per = if self.options.bias { 4 } else { 2 };
        let w = &self.weights[index * per..(index + 1) * per];
        let (b_ih, b_hh) = if self.options.bias {
            (Some(&w[2].1), Some(&w[3].1))
        } else {
            (None, None)
        };
        (&w[0].1, &w[1].1, b_ih, b_hh)
    }

    /// PyTorch's `extra_repr`: the defaults left out.
    fn extra_repr(&self) -> String {
        let o = &self.options;
        let mut s = format!("{}, {}", self.input_size, self.hidden_size);
        if o.num_layers != 1 {
            s += &format!(", num_layers={}", o.num_layers);
        }
        if !o.bias {
            s += ", bias=False";
        }
        if o.batch_first {
            s += ", batch_first=True";
        }
        if o.dropout != 0.0 {
            s += &format!(", dropout={}", py_float(o.dropout));
        }
        if o.bidirectional {
            s += ", bidirectional=True";
        }
        s
    }

    /// The input's checks before any state is looked at: PyTorch's 2-D or 3-D check, and
    /// whether the input is batched.
    fn check_dims(&self, input: &Tensor) -> Result<bool> {
        match input.ndim() {
            3 => Ok(true),
            2 => Ok(false),
            n => Err(Error::InvalidArgument(match self.mode {
                Mode::RnnTanh | Mode::RnnRelu => {
                    format!("RNN: Expected input to be 2D or 3D, got {n}D tensor instead")
                }
                mode => format!(
                    "{}: Expected input to be 2D or 3D, got {n}D instead",
                    mode.name()
                ),
            })),
        }
    }

    /// The batch dimension of the (batched) input.
    fn batch_dim(&self) -> usize {
        if self.options.batch_first { 0 } else { 1 }
    }

    /// PyTorch's `check_input` on the batched input: its dtype against the weights', its
    /// feature size against `input_size`.
    fn check_input(&self, input: &Tensor) -> Result<()> {
        let (got, want) = (input.dtype(), self.weights[0].1.dtype());
        if got != want {
            let (got, want) = (got.torch_name(), want.torch_name());
            return Err(Error::InvalidArgument(format!(
                "RNN input dtype ({got}) does not match weight dtype ({want}). Convert input: \
                 input.to({want}), or convert model: model.to({got})"
            )));
        }
        let features = input.shape()[2];
        if features != self.input_size {
            return Err(Error::InvalidArgument(format!(
                "input.size(-1) must be equal to input_size. Expected {}, got {features}",
                self.input_size
            )));
        }
        Ok(())
    }

    /// The hidden state's shape, `[layers · directions, batch, hidden]`.
    fn hidden_shape(&self, input: &Tensor) -> [usize; 3] {
        [
            self.options.num_layers * self.directions(),
            input.shape()[self.batch_dim()],
            self.hidden_size,
        ]
    }

    /// PyTorch's `check_hidden_size`, with its `msg` (`Expected hidden size {}, got {}` or the
    /// LSTM's `hidden[0]` / `hidden[1]` variants).
    fn check_hidden(&self, input: &Tensor, hx: &Tensor, what: &str) -> Result<()> {
        let want = self.hidden_shape(input);
        if hx.shape() != want {
            let got: Vec<String> = hx.shape().iter().map(usize::to_string).collect();
            return Err(Error::InvalidArgument(format!(
                "Expected {what} size ({}, {}, {}), got [{}]",
                want[0],
                want[1],
                want[2],
                got.join(", ")
            )));
        }
        Ok(())
    }

    /// Zeros of the hidden state's shape, the input's dtype and device.
    fn zeros(&self, input: &Tensor) -> Result<Tensor> {
        Tensor::zeros(&self.hidden_shape(input), input.dtype())?.to(input.device())
    }

    /// The stacked recurrence (ATen's `_rnn_impl` with `apply_layer_stack`) over a batched,
    /// checked input: `input` `[T, B, I]` (sequence first), `h0` (and for an LSTM `c0`)
    /// `[L·D, B, H]`. Returns the last layer's output `[T, B, D·H]` and the final states.
    fn run(
        &self,
        input: &Tensor,
        h0: &Tensor,
        c0: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let steps = input.shape()[0];
        if steps == 0 {
            return Err(Error::InvalidArgument(
                "Expected sequence length to be larger than 0 in RNN".into(),
            ));
        }
        let directions = self.directions();
        let mut layer_input = input.clone();
        let mut h_n = Vec::with_capacity(h0.shape()[0]);
        let mut c_n = Vec::with_capacity(h0.shape()[0]);
        for layer in 0..self.options.num_layers {
            let mut outputs = Vec::with_capacity(directions);
            for direction in 0..directions {
                let index = layer * directions + direction;
                let (w_ih, w_hh, b_ih, b_hh) = self.layer_weights(index);
                let mut h = h0.select(0, index)?;
                let mut c = match c0 {
                    Some(c0) => Some(c0.select(0, index)?),
                    None => None,
                };
                let mut out = Vec::with_capacity(steps);
                for i in 0..steps {
                    let t = if direction == 1 { steps - 1 - i } else { i };
                    let x = layer_input.select(0, t)?;
                    match (self.mode, &c) {
                        (Mode::Lstm, Some(cx)) => {
                            let (h1, c1) = lstm_cell(&x, (&h, cx), w_ih, w_hh, b_ih, b_hh)?;
                            h = h1;
                            c = Some(c1);
                        }
                        (Mode::Gru, _) => h = gru_cell(&x, &h, w_ih, w_hh, b_ih, b_hh)?,
                        (Mode::RnnTanh, _) => h = rnn_tanh_cell(&x, &h, w_ih, w_hh, b_ih, b_hh)?,
                        (Mode::RnnRelu, _) => h = rnn_relu_cell(&x, &h, w_ih, w_hh, b_ih, b_hh)?,
                        (Mode::Lstm, None) => {
                            return Err(Error::InvalidArgument(
                                "LSTM: the cell state is missing".into(),
                            ));
                        }
                    }
                    out.push(h.clone());
                }
                if direction == 1 {
                    out.reverse();
                }
                outputs.push(Tensor::stack(&out, 0)?);
                h_n.push(h);
                c_n.extend(c);
            }
            layer_input = if directions == 1 {
                outputs.swap_remove(0)
            } else {
                Tensor::cat(&outputs, 2)?
            };
            let p = self.options.dropout;
            if p != 0.0 && self.training && layer + 1 < self.options.num_layers {
                layer_input = dropout(&layer_input, p, true)?;
            }
        }
        let c_n = if c0.is_some() {
            Some(Tensor::stack(&c_n, 0)?)
        } else {
            None
        };
        Ok((layer_input, Tensor::stack(&h_n, 0)?, c_n))
    }

    /// PyTorch's `forward` of the three layers on a plain (not packed) input: the checks in
    /// PyTorch's order, the unbatched and batch-first layouts, zeros for a missing state.
    /// `hx` is `[h0]` or, for an LSTM, `[h0, c0]`.
    fn forward(&self, input: &Tensor, hx: Option<&[&Tensor]>) -> Result<(Tensor, Vec<Tensor>)> {
        let batched = self.check_dims(input)?;
        let batch_dim = self.batch_dim();
        let input = if batched {
            input.clone()
        } else {
            input.unsqueeze(batch_dim as isize)?
        };
        let lstm = self.mode == Mode::Lstm;
        let states: Vec<Tensor> = match hx {
            Some(hx) => {
                let want = if batched { 3 } else { 2 };
                if hx.iter().any(|h| h.ndim() != want) {
                    let kind = if batched {
                        "For batched 3-D input"
                    } else {
                        "For unbatched 2-D input"
                    };
                    let dims: Vec<String> = hx.iter().map(|h| format!("{}-D", h.ndim())).collect();
                    return Err(Error::InvalidArgument(if lstm {
                        format!(
                            "{kind}, hx and cx should also be {want}-D but got ({}) tensors",
                            dims.join(", ")
                        )
                    } else {
                        format!(
                            "{kind}, hx should also be {want}-D but got {} tensor",
                            dims.join(", ")
                        )
                    }));
                }
                if batched {
                    hx.iter().map(|&h| h.clone()).collect()
                } else {
                    hx.iter().map(|h| h.unsqueeze(1)).collect::<Result<_>>()?
                }
            }
            None => {
                let n = if lstm { 2 } else { 1 };
                (0..n).map(|_| self.zeros(&input)).collect::<Result<_>>()?
            }
        };
        self.check_input(&input)?;
        if lstm {
            self.check_hidden(&input, &states[0], "hidden[0]")?;
            self.check_hidden(&input, &states[1], "hidden[1]")?;
        } else {
            self.check_hidden(&input, &states[0], "hidden")?;
        }
        let seq_first = if self.options.batch_first {
            input.transpose(0, 1)?
        } else {
            input
        };
        let (output, h_n, c_n) = self.run(&seq_first, &states[0], states.get(1))?;
        let mut output = if self.options.batch_first {
            output.transpose(0, 1)?
        } else {
            output
        };
        let mut finals: Vec<Tensor> = std::iter::once(h_n).chain(c_n).collect();
        if !batched {
            output = output.squeeze_dim(batch_dim as isize)?;
            finals = finals
                .iter()
                .map(|t| t.squeeze_dim(1))
                .collect::<Result<_>>()?;
        }
        Ok((output, finals))
    }
}

impl Module for RnnBase {
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.weights.clone()
    }

    fn visit_parameters_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
    ) -> Result<()> {
        for (name, t) in &mut self.weights {
            f(name, t)?;
        }
        Ok(())
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn is_training(&self) -> bool {
        self.training
    }

    fn repr(&self) -> String {
        format!("{}({})", self.mode.name(), self.extra_repr())
    }
}

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
/// [`lstm_cell`] over the sequence, gates `i, f, g, o` in PyTorch's order, parameters named and
/// shaped as PyTorch's (`weight_ih_l{k}` `[4H, I]`, `weight_hh_l{k}` `[4H, H]`, `bias_ih_l{k}`,
/// `bias_hh_l{k}` `[4H]`, with `_reverse` for the backward direction), so state dicts carry
/// over.
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

/// A multi-layer gated recurrent unit RNN (PyTorch's `nn.GRU`): each layer runs [`gru_cell`]
/// over the sequence, gates `r, z, n` in PyTorch's order, parameters named and shaped as
/// PyTorch's (`weight_ih_l{k}` `[3H, I]`, `weight_hh_l{k}` `[3H, H]`, the biases `[3H]`,
/// `_reverse` for the backward direction), initialised as PyTorch's from the global generator.
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
