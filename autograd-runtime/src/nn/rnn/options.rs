//! The options of the recurrent layers: PyTorch's keyword arguments of `nn.RNN`, `nn.LSTM`,
//! `nn.GRU`, and the Elman RNN's activation.

/// The activation of an Elman RNN ([`Rnn`](super::Rnn), [`RnnCell`](super::RnnCell)): PyTorch's
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
