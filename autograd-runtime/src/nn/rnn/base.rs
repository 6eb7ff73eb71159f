//! What `Rnn`, `Lstm` and `Gru` share (PyTorch's `RNNBase`): construction and
//! initialisation, the checks, and the stacked, optionally bidirectional recurrence as a loop
//! over the time steps of the functional cells.

use super::RnnOptions;
use crate::error::py_float;
use crate::nn::dropout::dropout;
use crate::nn::functional::{gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell};
use crate::nn::{Module, init};
use crate::{DType, Error, Result, Tensor};

/// Which recurrence a stack runs (PyTorch's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
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
    pub(super) fn name(self) -> &'static str {
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
pub(super) struct RnnBase {
    pub(super) mode: Mode,
    pub(super) input_size: usize,
    pub(super) hidden_size: usize,
    pub(super) options: RnnOptions,
    /// PyTorch's `_flat_weights` with `_flat_weights_names`: per layer, per direction,
    /// `weight_ih`, `weight_hh` and (with bias) `bias_ih`, `bias_hh`.
    pub(super) weights: Vec<(String, Tensor)>,
    pub(super) training: bool,
}

impl RnnBase {
    /// PyTorch's `RNNBase.__init__` and `reset_parameters`: the checks, then every parameter
    /// uniform in `±1/√hidden_size` from the global generator, in `parameters()` order.
    pub(super) fn new(
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
    pub(super) fn parameter(&self, name: &str) -> Option<&Tensor> {
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
    pub(super) fn forward(
        &self,
        input: &Tensor,
        hx: Option<&[&Tensor]>,
    ) -> Result<(Tensor, Vec<Tensor>)> {
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
