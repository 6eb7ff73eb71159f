//! `RnnCell`, `LstmCell`, `GruCell`: one step of a recurrence as a module (PyTorch's
//! `nn.RNNCell`, `nn.LSTMCell`, `nn.GRUCell`), over the functional cells.

use super::RnnNonlinearity;
use crate::nn::functional::{gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell};
use crate::nn::{Module, init};
use crate::{DType, Error, Result, Tensor};

/// PyTorch's `RNNCellBase.__init__` and `reset_parameters`: `weight_ih` `[gates·H, I]`,
/// `weight_hh` `[gates·H, H]` and the biases `[gates·H]`, every one uniform in `±1/√H` from the
/// global generator, in that order.
fn cell_parameters(
    input_size: usize,
    hidden_size: usize,
    bias: bool,
    gates: usize,
) -> Result<[Option<Tensor>; 4]> {
    let rows = gates * hidden_size;
    let mut shapes = vec![vec![rows, input_size], vec![rows, hidden_size]];
    if bias {
        shapes.push(vec![rows]);
        shapes.push(vec![rows]);
    }
    let stdv = if hidden_size > 0 {
        1.0 / (hidden_size as f64).sqrt()
    } else {
        0.0
    };
    let mut out: [Option<Tensor>; 4] = [None, None, None, None];
    for (slot, shape) in out.iter_mut().zip(shapes) {
        let t = Tensor::zeros(&shape, DType::F32)?;
        init::uniform_(&t, -stdv, stdv)?;
        *slot = Some(t.requires_grad_(true)?);
    }
    Ok(out)
}

/// The two weights of a cell, which `cell_parameters` always makes.
fn weights(
    params: [Option<Tensor>; 4],
) -> Result<(Tensor, Tensor, Option<Tensor>, Option<Tensor>)> {
    let [w_ih, w_hh, b_ih, b_hh] = params;
    match (w_ih, w_hh) {
        (Some(w_ih), Some(w_hh)) => Ok((w_ih, w_hh, b_ih, b_hh)),
        _ => Err(Error::InvalidArgument(
            "RNN cell: the weights are missing".into(),
        )),
    }
}

/// PyTorch's `RNNCellBase.extra_repr`.
fn cell_repr(weight_hh: &Tensor, weight_ih: &Tensor, bias: bool, relu: bool) -> String {
    let mut s = format!("{}, {}", weight_ih.shape()[1], weight_hh.shape()[1]);
    if !bias {
        s += ", bias=False";
    }
    if relu {
        s += ", nonlinearity=relu";
    }
    s
}

/// The 1-D-or-2-D check of a cell's input and state (`{cell}: Expected {what} to be 1D or 2D,
/// got 3D instead`).
fn check_1d_2d(cell: &str, what: &str, t: &Tensor) -> Result<()> {
    if !(1..=2).contains(&t.ndim()) {
        return Err(Error::InvalidArgument(format!(
            "{cell}: Expected {what} to be 1D or 2D, got {}D instead",
            t.ndim()
        )));
    }
    Ok(())
}

/// The batched input and state of a one-state cell (`RNNCell`, `GRUCell`): an unbatched input
/// gains a batch of one, a missing state is zeros.
fn one_state(
    cell: &str,
    hidden_size: usize,
    input: &Tensor,
    hx: Option<&Tensor>,
) -> Result<(bool, Tensor, Tensor)> {
    check_1d_2d(cell, "input", input)?;
    if let Some(h) = hx {
        check_1d_2d(cell, "hidden", h)?;
    }
    let batched = input.ndim() == 2;
    let input = if batched {
        input.clone()
    } else {
        input.unsqueeze(0)?
    };
    let hx = match hx {
        None => {
            Tensor::zeros(&[input.shape()[0], hidden_size], input.dtype())?.to(input.device())?
        }
        Some(h) if batched => h.clone(),
        Some(h) => h.unsqueeze(0)?,
    };
    Ok((batched, input, hx))
}

/// An Elman RNN cell (PyTorch's `nn.RNNCell`): `h' = tanh(x Wᵢₕᵀ + bᵢₕ + h Wₕₕᵀ + bₕₕ)` (or
/// ReLU), with PyTorch's parameters `weight_ih` `[H, I]`, `weight_hh` `[H, H]`, `bias_ih`,
/// `bias_hh` `[H]`, initialised as PyTorch's (uniform in `±1/√H`, in that order, from the
/// global generator).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Module, RnnCell};
/// use autograd_runtime::{DType, Tensor};
/// let cell = RnnCell::new(3, 4)?;
/// let h = cell.forward(&Tensor::ones(&[2, 3], DType::F32)?, None)?;
/// assert_eq!(h.shape(), &[2, 4]);
/// assert_eq!(cell.to_string(), "RNNCell(3, 4)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(name = "RNNCell", extra_repr = RnnCell::extra_repr)]
pub struct RnnCell {
    weight_ih: Tensor,
    weight_hh: Tensor,
    bias_ih: Option<Tensor>,
    bias_hh: Option<Tensor>,
    #[module(skip)]
    nonlinearity: RnnNonlinearity,
    #[module(training)]
    training: bool,
}

impl RnnCell {
    /// PyTorch's `nn.RNNCell(input_size, hidden_size)`: with biases, `tanh`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(input_size: usize, hidden_size: usize) -> Result<RnnCell> {
        RnnCell::with_options(input_size, hidden_size, true, RnnNonlinearity::Tanh)
    }

    /// PyTorch's `nn.RNNCell(input_size, hidden_size, bias, nonlinearity)`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{RnnCell, RnnNonlinearity};
    /// let cell = RnnCell::with_options(3, 4, false, RnnNonlinearity::Relu)?;
    /// assert_eq!(cell.to_string(), "RNNCell(3, 4, bias=False, nonlinearity=relu)");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_options(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        nonlinearity: RnnNonlinearity,
    ) -> Result<RnnCell> {
        let (weight_ih, weight_hh, bias_ih, bias_hh) =
            weights(cell_parameters(input_size, hidden_size, bias, 1)?)?;
        Ok(RnnCell {
            weight_ih,
            weight_hh,
            bias_ih,
            bias_hh,
            nonlinearity,
            training: true,
        })
    }

    /// PyTorch's `cell(input, hx=None)`: `input` `[N, I]` or unbatched `[I]`, `hx` `[N, H]`
    /// (`[H]`), zeros when `None`; returns `h'` in the input's layout.
    ///
    /// # Errors
    ///
    /// PyTorch's messages as [`Error::InvalidArgument`]: `RNNCell: Expected input to be 1D or
    /// 2D, got 3D instead` (and `hidden`), then [`rnn_tanh_cell`]'s.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<Tensor> {
        let hidden_size = self.weight_hh.shape()[1];
        let (batched, input, hx) = one_state("RNNCell", hidden_size, input, hx)?;
        let (b_ih, b_hh) = (self.bias_ih.as_ref(), self.bias_hh.as_ref());
        let h = match self.nonlinearity {
            RnnNonlinearity::Tanh => {
                rnn_tanh_cell(&input, &hx, &self.weight_ih, &self.weight_hh, b_ih, b_hh)?
            }
            RnnNonlinearity::Relu => {
                rnn_relu_cell(&input, &hx, &self.weight_ih, &self.weight_hh, b_ih, b_hh)?
            }
        };
        if batched { Ok(h) } else { h.squeeze_dim(0) }
    }

    /// The input-to-hidden weight, `[H, I]`.
    pub fn weight_ih(&self) -> &Tensor {
        &self.weight_ih
    }

    /// The hidden-to-hidden weight, `[H, H]`.
    pub fn weight_hh(&self) -> &Tensor {
        &self.weight_hh
    }

    fn extra_repr(&self) -> String {
        let relu = self.nonlinearity == RnnNonlinearity::Relu;
        cell_repr(
            &self.weight_hh,
            &self.weight_ih,
            self.bias_ih.is_some(),
            relu,
        )
    }
}

/// An LSTM cell (PyTorch's `nn.LSTMCell`): one [`lstm_cell`] step, gates `i, f, g, o` in
/// PyTorch's order, parameters `weight_ih` `[4H, I]`, `weight_hh` `[4H, H]`, `bias_ih`,
/// `bias_hh` `[4H]`, initialised as PyTorch's (uniform in `±1/√H`, in that order, from the
/// global generator).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{LstmCell, Module};
/// use autograd_runtime::{DType, Tensor};
/// let cell = LstmCell::new(3, 4)?;
/// let (h, c) = cell.forward(&Tensor::ones(&[3], DType::F32)?, None)?; // unbatched
/// assert_eq!((h.shape(), c.shape()), (&[4][..], &[4][..]));
/// let (h2, _) = cell.forward(&Tensor::ones(&[3], DType::F32)?, Some((&h, &c)))?;
/// assert_eq!(h2.shape(), &[4]);
/// assert_eq!(cell.to_string(), "LSTMCell(3, 4)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(name = "LSTMCell", extra_repr = LstmCell::extra_repr)]
pub struct LstmCell {
    weight_ih: Tensor,
    weight_hh: Tensor,
    bias_ih: Option<Tensor>,
    bias_hh: Option<Tensor>,
    #[module(training)]
    training: bool,
}

impl LstmCell {
    /// PyTorch's `nn.LSTMCell(input_size, hidden_size)`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(input_size: usize, hidden_size: usize) -> Result<LstmCell> {
        LstmCell::with_bias(input_size, hidden_size, true)
    }

    /// PyTorch's `nn.LSTMCell(input_size, hidden_size, bias)`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn with_bias(input_size: usize, hidden_size: usize, bias: bool) -> Result<LstmCell> {
        let (weight_ih, weight_hh, bias_ih, bias_hh) =
            weights(cell_parameters(input_size, hidden_size, bias, 4)?)?;
        Ok(LstmCell {
            weight_ih,
            weight_hh,
            bias_ih,
            bias_hh,
            training: true,
        })
    }

    /// PyTorch's `cell(input, hx=None)`: `input` `[N, I]` or unbatched `[I]`, `hx` `(h, c)`
    /// each `[N, H]` (`[H]`), zeros when `None`; returns `(h', c')` in the input's layout.
    ///
    /// # Errors
    ///
    /// PyTorch's messages as [`Error::InvalidArgument`]: `LSTMCell: Expected input to be 1D or
    /// 2D, got 3D instead`, `LSTMCell: Expected hx[0] to be 1D or 2D, got 3D instead`, then
    /// [`lstm_cell`]'s (`input has inconsistent input_size: got 3 expected 4`, `Input batch size
    /// 2 doesn't match hidden0 batch size 3`, ...).
    pub fn forward(
        &self,
        input: &Tensor,
        hx: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, Tensor)> {
        check_1d_2d("LSTMCell", "input", input)?;
        if let Some((h, c)) = hx {
            check_1d_2d("LSTMCell", "hx[0]", h)?;
            check_1d_2d("LSTMCell", "hx[1]", c)?;
        }
        let batched = input.ndim() == 2;
        let input = if batched {
            input.clone()
        } else {
            input.unsqueeze(0)?
        };
        let (h, c) = match hx {
            None => {
                let hidden_size = self.weight_hh.shape()[1];
                let z = Tensor::zeros(&[input.shape()[0], hidden_size], input.dtype())?
                    .to(input.device())?;
                (z.clone(), z)
            }
            Some((h, c)) if batched => (h.clone(), c.clone()),
            Some((h, c)) => (h.unsqueeze(0)?, c.unsqueeze(0)?),
        };
        let (h1, c1) = lstm_cell(
            &input,
            (&h, &c),
            &self.weight_ih,
            &self.weight_hh,
            self.bias_ih.as_ref(),
            self.bias_hh.as_ref(),
        )?;
        if batched {
            Ok((h1, c1))
        } else {
            Ok((h1.squeeze_dim(0)?, c1.squeeze_dim(0)?))
        }
    }

    /// The input-to-hidden weight, `[4H, I]`.
    pub fn weight_ih(&self) -> &Tensor {
        &self.weight_ih
    }

    /// The hidden-to-hidden weight, `[4H, H]`.
    pub fn weight_hh(&self) -> &Tensor {
        &self.weight_hh
    }

    fn extra_repr(&self) -> String {
        cell_repr(
            &self.weight_hh,
            &self.weight_ih,
            self.bias_ih.is_some(),
            false,
        )
    }
}

/// A GRU cell (PyTorch's `nn.GRUCell`): one [`gru_cell`] step, gates `r, z, n` in PyTorch's
/// order, parameters `weight_ih` `[3H, I]`, `weight_hh` `[3H, H]`, `bias_ih`, `bias_hh`
/// `[3H]`, initialised as PyTorch's (uniform in `±1/√H`, in that order, from the global
/// generator).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{GruCell, Module};
/// use autograd_runtime::{DType, Tensor};
/// let cell = GruCell::with_bias(3, 4, false)?;
/// let h = cell.forward(&Tensor::ones(&[2, 3], DType::F32)?, None)?;
/// assert_eq!(h.shape(), &[2, 4]);
/// assert_eq!(cell.to_string(), "GRUCell(3, 4, bias=False)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(name = "GRUCell", extra_repr = GruCell::extra_repr)]
pub struct GruCell {
    weight_ih: Tensor,
    weight_hh: Tensor,
    bias_ih: Option<Tensor>,
    bias_hh: Option<Tensor>,
    #[module(training)]
    training: bool,
}

impl GruCell {
    /// PyTorch's `nn.GRUCell(input_size, hidden_size)`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(input_size: usize, hidden_size: usize) -> Result<GruCell> {
        GruCell::with_bias(input_size, hidden_size, true)
    }

    /// PyTorch's `nn.GRUCell(input_size, hidden_size, bias)`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn with_bias(input_size: usize, hidden_size: usize, bias: bool) -> Result<GruCell> {
        let (weight_ih, weight_hh, bias_ih, bias_hh) =
            weights(cell_parameters(input_size, hidden_size, bias, 3)?)?;
        Ok(GruCell {
            weight_ih,
            weight_hh,
            bias_ih,
            bias_hh,
            training: true,
        })
    }

    /// PyTorch's `cell(input, hx=None)`: as [`RnnCell::forward`], one [`gru_cell`] step.
    ///
    /// # Errors
    ///
    /// PyTorch's messages as [`Error::InvalidArgument`]: `GRUCell: Expected input to be 1D or
    /// 2D, got 3D instead` (and `hidden`), then [`gru_cell`]'s.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<Tensor> {
        let hidden_size = self.weight_hh.shape()[1];
        let (batched, input, hx) = one_state("GRUCell", hidden_size, input, hx)?;
        let h = gru_cell(
            &input,
            &hx,
            &self.weight_ih,
            &self.weight_hh,
            self.bias_ih.as_ref(),
            self.bias_hh.as_ref(),
        )?;
        if batched { Ok(h) } else { h.squeeze_dim(0) }
    }

    /// The input-to-hidden weight, `[3H, I]`.
    pub fn weight_ih(&self) -> &Tensor {
        &self.weight_ih
    }

    /// The hidden-to-hidden weight, `[3H, H]`.
    pub fn weight_hh(&self) -> &Tensor {
        &self.weight_hh
    }

    fn extra_repr(&self) -> String {
        cell_repr(
            &self.weight_hh,
            &self.weight_ih,
            self.bias_ih.is_some(),
            false,
        )
    }
}
