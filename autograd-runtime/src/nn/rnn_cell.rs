//! One step of an LSTM, a GRU and an Elman RNN (PyTorch's `torch.lstm_cell`, `torch.gru_cell`,
//! `torch.rnn_tanh_cell` and `torch.rnn_relu_cell`, the math of `nn.LSTMCell`, `nn.GRUCell`,
//! `nn.RNNCell` and of each step of `nn.LSTM`, `nn.GRU`, `nn.RNN`), with PyTorch's gate order
//! and checks, written in differentiable ops.

use crate::{Error, Result, Tensor};

/// `x Wᵀ + b`.
fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    super::linear::linear(x, weight, bias)
}

/// PyTorch's `check_rnn_cell_forward_input` (and the 2-D check before it); returns the batch
/// size.
fn check_input(input: &Tensor, input_size: usize) -> Result<usize> {
    if input.ndim() != 2 {
        return Err(Error::InvalidArgument(format!(
            "Expected 2D input (batch x feature), but got {}D input",
            input.ndim()
        )));
    }
    if input.shape()[1] != input_size {
        return Err(Error::InvalidArgument(format!(
            "input has inconsistent input_size: got {} expected {input_size}",
            input.shape()[1]
        )));
    }
    Ok(input.shape()[0])
}

/// PyTorch's `check_rnn_cell_forward_hidden`.
fn check_hidden(batch: usize, hx: &Tensor, hidden_size: usize, label: usize) -> Result<()> {
    let (b, h) = match hx.shape() {
        [b, h] => (*b, *h),
        _ => {
            return Err(Error::InvalidArgument(format!(
                "Expected 2D hidden{label} (batch x hidden_size), but got {}D tensor",
                hx.ndim()
            )));
        }
    };
    if b != batch {
        return Err(Error::InvalidArgument(format!(
            "Input batch size {batch} doesn't match hidden{label} batch size {b}"
        )));
    }
    if h != hidden_size {
        return Err(Error::InvalidArgument(format!(
            "hidden{label} has inconsistent hidden_size: got {h}, expected {hidden_size}"
        )));
    }
    Ok(())
}

/// PyTorch's check that the gate weights stack `gates` blocks of `hidden_size` rows.
fn check_weights(w_ih: &Tensor, w_hh: &Tensor, gates: usize) -> Result<(usize, usize)> {
    for (name, w) in [("weight_ih", w_ih), ("weight_hh", w_hh)] {
        if w.ndim() != 2 {
            return Err(Error::InvalidArgument(format!(
                "{name} must be 2-D, but got {}-D",
                w.ndim()
            )));
        }
    }
    let hidden_size = w_hh.shape()[1];
    for (name, w) in [("weight_ih", w_ih), ("weight_hh", w_hh)] {
        if w.shape()[0] != gates * hidden_size {
            return Err(Error::InvalidArgument(format!(
                "{name} first dim must be {gates} * hidden_size = {}, but got {}",
                gates * hidden_size,
                w.shape()[0]
            )));
        }
    }
    Ok((w_ih.shape()[1], hidden_size))
}

/// One LSTM step (PyTorch's `torch.lstm_cell(input, (h, c), w_ih, w_hh, b_ih=None,
/// b_hh=None)`, `nn.LSTMCell`'s math): with the gates `[i, f, g, o]` stacked in that order
/// (PyTorch's) in the rows of `w_ih` `[4H, I]`, `w_hh` `[4H, H]` and the biases `[4H]`,
///
/// `i, f, g, o = σ, σ, tanh, σ` of `h Wₕₕᵀ + bₕₕ + x Wᵢₕᵀ + bᵢₕ`, `c' = f c + i g`,
/// `h' = o tanh(c')`.
///
/// `input` is `[N, I]` and `h`, `c` are `[N, H]`; returns `(h', c')`.
///
/// # Errors
///
/// PyTorch's messages as [`Error::InvalidArgument`]: `Expected 2D input (batch x feature), but
/// got 1D input`; `input has inconsistent input_size: got 4 expected 3`; `weight_ih first dim
/// must be 4 * hidden_size = 8, but got 7` (also `weight_hh`); `Input batch size 2 doesn't
/// match hidden0 batch size 1`; `hidden1 has inconsistent hidden_size: got 3, expected 2`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::lstm_cell;
/// use autograd_runtime::{DType, Tensor};
/// // Zero weights: every gate is σ(0) = 0.5 and g = tanh(0) = 0.
/// let x = Tensor::ones(&[1, 3], DType::F64)?;
/// let (h, c) = (Tensor::zeros(&[1, 2], DType::F64)?, Tensor::ones(&[1, 2], DType::F64)?);
/// let (w_ih, w_hh) = (Tensor::zeros(&[8, 3], DType::F64)?, Tensor::zeros(&[8, 2], DType::F64)?);
/// let (h1, c1) = lstm_cell(&x, (&h, &c), &w_ih, &w_hh, None, None)?;
/// assert_eq!(c1.to_vec::<f64>()?, vec![0.5, 0.5]); // f·c + i·g
/// assert_eq!(h1.to_vec::<f64>()?, vec![0.5 * 0.5f64.tanh(); 2]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn lstm_cell(
    input: &Tensor,
    hx: (&Tensor, &Tensor),
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    crate::amp::autocast_entry!(lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh));
    let (input_size, hidden_size) = check_weights(w_ih, w_hh, 4)?;
    let batch = check_input(input, input_size)?;
    check_hidden(batch, hx.0, hidden_size, 0)?;
    check_hidden(batch, hx.1, hidden_size, 1)?;
    let gates = linear(hx.0, w_hh, b_hh)?.add(&linear(input, w_ih, b_ih)?)?;
    let chunks = gates.chunk(4, 1)?;
    let i = chunks[0].sigmoid()?;
    let f = chunks[1].sigmoid()?;
    let g = chunks[2].tanh()?;
    let o = chunks[3].sigmoid()?;
    let c = f.mul(hx.1)?.add(&i.mul(&g)?)?;
    let h = o.mul(&c.tanh()?)?;
    Ok((h, c))
}

/// One GRU step (PyTorch's `torch.gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None)`,
/// `nn.GRUCell`'s math): with the gates `[r, z, n]` stacked in that order (PyTorch's) in the
/// rows of `w_ih` `[3H, I]`, `w_hh` `[3H, H]` and the biases `[3H]`,
///
/// `r = σ(Wᵢᵣ x + bᵢᵣ + Wₕᵣ h + bₕᵣ)`, `z = σ(Wᵢ_z x + bᵢ_z + Wₕ_z h + bₕ_z)`,
/// `n = tanh(Wᵢₙ x + bᵢₙ + r ⊙ (Wₕₙ h + bₕₙ))`, `h' = (1 - z) n + z h`.
///
/// `input` is `[N, I]` and `hx` `[N, H]`; returns `h'`.
///
/// # Errors
///
/// As [`lstm_cell`]'s, with `3 * hidden_size`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::gru_cell;
/// use autograd_runtime::{DType, Tensor};
/// // Zero weights: z = 0.5 and n = 0, so h' = h / 2.
/// let x = Tensor::ones(&[1, 3], DType::F64)?;
/// let h = Tensor::from_vec(vec![2.0f64, -4.0], &[1, 2])?;
/// let (w_ih, w_hh) = (Tensor::zeros(&[6, 3], DType::F64)?, Tensor::zeros(&[6, 2], DType::F64)?);
/// let h1 = gru_cell(&x, &h, &w_ih, &w_hh, None, None)?;
/// assert_eq!(h1.to_vec::<f64>()?, vec![1.0, -2.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn gru_cell(
    input: &Tensor,
    hx: &Tensor,
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh));
    let (input_size, hidden_size) = check_weights(w_ih, w_hh, 3)?;
    let batch = check_input(input, input_size)?;
    check_hidden(batch, hx, hidden_size, 0)?;
    let ig = linear(input, w_ih, b_ih)?.chunk(3, 1)?;
    let hg = linear(hx, w_hh, b_hh)?.chunk(3, 1)?;
    let r = hg[0].add(&ig[0])?.sigmoid()?;
    let z = hg[1].add(&ig[1])?.sigmoid()?;
    let n = ig[2].add(&hg[2].mul(&r)?)?.tanh()?;
    // PyTorch's `(hidden - new_gate) * input_gate + new_gate`.
    hx.sub(&n)?.mul(&z)?.add(&n)
}

/// One step of an Elman RNN with `tanh` (PyTorch's `torch.rnn_tanh_cell(input, hx, w_ih, w_hh,
/// b_ih=None, b_hh=None)`, `nn.RNNCell`'s math): `h' = tanh(x Wᵢₕᵀ + bᵢₕ + h Wₕₕᵀ + bₕₕ)` with
/// `w_ih` `[H, I]`, `w_hh` `[H, H]` and the biases `[H]`.
///
/// `input` is `[N, I]` and `hx` `[N, H]`; returns `h'`.
///
/// # Errors
///
/// As [`lstm_cell`]'s, with `1 * hidden_size`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::rnn_tanh_cell;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?;
/// let h = Tensor::from_vec(vec![0.5f64], &[1, 1])?;
/// let w_ih = Tensor::from_vec(vec![1.0f64, -1.0], &[1, 2])?;
/// let w_hh = Tensor::from_vec(vec![2.0f64], &[1, 1])?;
/// let h1 = rnn_tanh_cell(&x, &h, &w_ih, &w_hh, None, None)?;
/// assert_eq!(h1.to_vec::<f64>()?, vec![0.0]); // tanh(1 - 2 + 2 · 0.5)
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn rnn_tanh_cell(
    input: &Tensor,
    hx: &Tensor,
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih, b_hh));
    simple_cell(input, hx, [w_ih, w_hh], [b_ih, b_hh])?.tanh()
}

/// One step of an Elman RNN with ReLU (PyTorch's `torch.rnn_relu_cell`, `nn.RNNCell(...,
/// nonlinearity='relu')`'s math): `h' = relu(x Wᵢₕᵀ + bᵢₕ + h Wₕₕᵀ + bₕₕ)`.
///
/// # Errors
///
/// As [`rnn_tanh_cell`]'s.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::rnn_relu_cell;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, -3.0], &[2, 1])?;
/// let h = Tensor::from_vec(vec![0.0f64, 0.0], &[2, 1])?;
/// let w = Tensor::from_vec(vec![1.0f64], &[1, 1])?;
/// let h1 = rnn_relu_cell(&x, &h, &w, &w, None, None)?;
/// assert_eq!(h1.to_vec::<f64>()?, vec![1.0, 0.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn rnn_relu_cell(
    input: &Tensor,
    hx: &Tensor,
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh));
    simple_cell(input, hx, [w_ih, w_hh], [b_ih, b_hh])?.relu()
}

/// The pre-activation of an Elman step, `h Wₕₕᵀ + bₕₕ + x Wᵢₕᵀ + bᵢₕ`, after PyTorch's checks.
fn simple_cell(
    input: &Tensor,
    hx: &Tensor,
    [w_ih, w_hh]: [&Tensor; 2],
    [b_ih, b_hh]: [Option<&Tensor>; 2],
) -> Result<Tensor> {
    let (input_size, hidden_size) = check_weights(w_ih, w_hh, 1)?;
    let batch = check_input(input, input_size)?;
    check_hidden(batch, hx, hidden_size, 0)?;
    linear(hx, w_hh, b_hh)?.add(&linear(input, w_ih, b_ih)?)
}
