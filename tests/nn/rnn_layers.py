"""Records the PyTorch 2.15 values that tests/nn/rnn_layers.rs replays: run
`python tests/nn/rnn_layers.py` (from the repository root, with PyTorch and safetensors
installed) to rewrite tests/nn/data/rnn_layers.json and tests/nn/data/rnn_lm_*.safetensors.

Each case builds one recurrent layer (nn.LSTM, nn.GRU, nn.RNN, nn.LSTMCell, nn.GRUCell,
nn.RNNCell) right after `torch.manual_seed(seed)` and records its state_dict as initialised (f32)
and its repr; then converts it to f64, runs it on f64 inputs drawn here (with or without an
initial state), backpropagates `sum_k (out_k * upstream_k).sum()` over the outputs (output, h_n,
c_n) and records the outputs and the gradients of the input, of the initial states and of every
parameter. A case with `forward_seed` calls `torch.manual_seed(forward_seed)` just before the
forward (for its dropout masks). The `errors` section holds PyTorch's messages for bad input.

The language-model case: Embedding(11, 6) + LSTM(6, 8, num_layers=2, batch_first=True) +
Linear(8, 11) built after torch.manual_seed(7), its initial state_dict saved (f32,
rnn_lm_init.safetensors), then one SGD step in f64 so that the weights differ from any
initialisation, the state_dict saved (f64, rnn_lm_trained.safetensors), and the cross-entropy
loss of next-token prediction on fixed tokens and its gradients recorded."""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = torch.Generator().manual_seed(2036)
CASES = {}
ERRORS = {}


def randn(*shape):
    return torch.randn(*shape, generator=GEN, dtype=torch.float64)


def upstream(shape, k):
    n = math.prod(shape)
    return torch.cos(torch.arange(n, dtype=torch.float64) * 0.7 + k).reshape(shape)


def enc(t):
    return {"shape": list(t.shape), "values": t.detach().double().flatten().tolist()}


def build(kind, args):
    a = dict(args)
    if kind in ("LSTM", "GRU", "RNN"):
        return getattr(nn, kind)(a.pop("input_size"), a.pop("hidden_size"), **a)
    return getattr(nn, kind)(a.pop("input_size"), a.pop("hidden_size"), **a)


def record(name, kind, args, seed, x_shape, hx_shapes=None, train=True, forward_seed=None):
    torch.manual_seed(seed)
    m = build(kind, args)
    init = {k: enc(v) for k, v in m.state_dict().items()}
    names = [k for k, _ in m.named_parameters()]
    r = repr(m)
    m = m.double()
    m.train(train)
    x = randn(*x_shape).requires_grad_(True)
    hx = None
    if hx_shapes is not None:
        hx = [randn(*s).requires_grad_(True) for s in hx_shapes]
    if forward_seed is not None:
        torch.manual_seed(forward_seed)
    if hx is None:
        out = m(x)
    elif kind in ("LSTM", "LSTMCell"):
        out = m(x, (hx[0], hx[1]))
    else:
        out = m(x, hx[0])
    # flatten (output, (h_n, c_n)) / (output, h_n) / (h, c) / h
    outs = []
    stack = [out]
    while stack:
        o = stack.pop(0)
        if isinstance(o, (tuple, list)):
            stack = list(o) + stack
        else:
            outs.append(o)
    ups = [upstream(o.shape, k) for k, o in enumerate(outs)]
    loss = sum((o * u).sum() for o, u in zip(outs, ups))
    loss.backward()
    grads = {"input": enc(x.grad)}
    for i, h in enumerate(hx or []):
        grads[f"hx{i}"] = enc(h.grad)
    for k, p in m.named_parameters():
        grads[k] = enc(p.grad)
    CASES[name] = {
        "kind": kind,
        "args": args,
        "seed": seed,
        "train": train,
        "forward_seed": forward_seed,
        "repr": r,
        "names": names,
        "init": init,
        "input": enc(x),
        "hx": [enc(h) for h in hx] if hx is not None else None,
        "outputs": [enc(o) for o in outs],
        "upstreams": [enc(u) for u in ups],
        "grads": grads,
    }


def error(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        ERRORS[name] = str(e)
        return
    raise AssertionError(f"{name}: no error")


# ----- the layers ---------------------------------------------------------------------------------
I, H, T, B = 3, 4, 5, 2
record("lstm_2l_bi", "LSTM", {"input_size": I, "hidden_size": H, "num_layers": 2,
                             "bidirectional": True}, 1, [T, B, I], [[4, B, H], [4, B, H]])
record("lstm_batch_first", "LSTM", {"input_size": I, "hidden_size": H, "batch_first": True},
       2, [B, T, I])
record("lstm_unbatched_2l", "LSTM", {"input_size": I, "hidden_size": H, "num_layers": 2},
       3, [T, I], [[2, H], [2, H]])
record("lstm_no_bias_bf_bi", "LSTM", {"input_size": I, "hidden_size": H, "bias": False,
                                     "batch_first": True, "bidirectional": True},
       4, [B, T, I], [[2, B, H], [2, B, H]])
record("lstm_dropout_train", "LSTM", {"input_size": I, "hidden_size": H, "num_layers": 3,
                                     "dropout": 0.4, "bidirectional": True},
       5, [T, B, I], forward_seed=55)
record("lstm_dropout_eval", "LSTM", {"input_size": I, "hidden_size": H, "num_layers": 2,
                                    "dropout": 0.4}, 6, [T, B, I], train=False)
record("gru_2l_bi", "GRU", {"input_size": I, "hidden_size": H, "num_layers": 2,
                           "bidirectional": True}, 7, [T, B, I], [[4, B, H]])
record("gru_unbatched_bf", "GRU", {"input_size": I, "hidden_size": H, "batch_first": True},
       8, [T, I], [[1, H]])
record("gru_dropout_train", "GRU", {"input_size": I, "hidden_size": H, "num_layers": 2,
                                   "dropout": 0.3}, 9, [T, B, I], forward_seed=99)
record("gru_no_bias", "GRU", {"input_size": I, "hidden_size": H, "bias": False}, 10, [T, B, I])
record("rnn_tanh_2l_bi", "RNN", {"input_size": I, "hidden_size": H, "num_layers": 2,
                                "bidirectional": True}, 11, [T, B, I], [[4, B, H]])
record("rnn_relu_bf", "RNN", {"input_size": I, "hidden_size": H, "nonlinearity": "relu",
                             "batch_first": True}, 12, [B, T, I])
record("lstm_cell", "LSTMCell", {"input_size": I, "hidden_size": H}, 13, [B, I],
       [[B, H], [B, H]])
record("lstm_cell_unbatched_zero_state", "LSTMCell", {"input_size": I, "hidden_size": H}, 14,
       [I])
record("lstm_cell_no_bias_unbatched", "LSTMCell", {"input_size": I, "hidden_size": H,
                                                  "bias": False}, 15, [I], [[H], [H]])
record("gru_cell", "GRUCell", {"input_size": I, "hidden_size": H}, 16, [B, I], [[B, H]])
record("gru_cell_unbatched", "GRUCell", {"input_size": I, "hidden_size": H, "bias": False},
       17, [I], [[H]])
record("rnn_cell_tanh", "RNNCell", {"input_size": I, "hidden_size": H}, 18, [B, I], [[B, H]])
record("rnn_cell_relu", "RNNCell", {"input_size": I, "hidden_size": H, "bias": False,
                                   "nonlinearity": "relu"}, 19, [B, I])

REPRS = {
    "lstm_big": repr(nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True)),
    "gru_dropout": repr(nn.GRU(4, 8, num_layers=3, bias=False, dropout=0.25)),
    "rnn_relu": repr(nn.RNN(4, 8, nonlinearity="relu")),
}

# ----- errors -------------------------------------------------------------------------------------
lstm = nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True)
z = torch.zeros
error("lstm_input_size", lambda: lstm(z(2, 5, 3)))
error("lstm_4d", lambda: lstm(z(2, 5, 4, 1)))
error("lstm_hidden1", lambda: lstm(z(2, 5, 4), (z(4, 2, 8), z(3, 2, 8))))
error("lstm_hidden0", lambda: lstm(z(2, 5, 4), (z(4, 3, 8), z(4, 2, 8))))
error("lstm_hx_dims_batched", lambda: lstm(z(2, 5, 4), (z(4, 2, 8), z(2, 8))))
error("lstm_hx_dims_unbatched", lambda: lstm(z(5, 4), (z(4, 2, 8), z(2, 8))))
error("lstm_dtype", lambda: lstm(z(2, 5, 4, dtype=torch.float64)))
error("lstm_empty", lambda: lstm(z(2, 0, 4)))
gru = nn.GRU(4, 8)
error("gru_hidden", lambda: gru(z(5, 2, 4), z(1, 3, 8)))
error("gru_hx_dims_batched", lambda: gru(z(5, 2, 4), z(3, 8)))
error("gru_hx_dims_unbatched", lambda: gru(z(5, 4), z(1, 1, 8)))
error("gru_hidden_unbatched", lambda: gru(z(5, 4), z(2, 8)))
error("gru_1d", lambda: gru(z(4)))
error("rnn_4d", lambda: nn.RNN(4, 8)(z(1, 2, 3, 4)))
error("input_size_zero", lambda: nn.LSTM(0, 8))
error("hidden_size_zero", lambda: nn.GRU(4, 0))
error("num_layers_zero", lambda: nn.LSTM(4, 8, num_layers=0))
error("dropout_range", lambda: nn.LSTM(4, 8, dropout=1.5))
error("gru_proj_size", lambda: nn.GRU(4, 8, proj_size=2))
lstm_cell = nn.LSTMCell(4, 8)
error("lstm_cell_3d", lambda: lstm_cell(z(2, 2, 4)))
error("lstm_cell_hx_3d", lambda: lstm_cell(z(2, 4), (z(1, 2, 8), z(2, 8))))
error("lstm_cell_input_size", lambda: lstm_cell(z(2, 3)))
error("lstm_cell_batch", lambda: lstm_cell(z(2, 4), (z(3, 8), z(3, 8))))
error("lstm_cell_unbatched_2d_state", lambda: lstm_cell(z(4), (z(2, 8), z(8))))
gru_cell = nn.GRUCell(4, 8)
error("gru_cell_hidden_3d", lambda: gru_cell(z(2, 4), z(2, 2, 8)))
error("gru_cell_hidden_size", lambda: gru_cell(z(2, 4), z(2, 7)))
error("rnn_cell_input_size", lambda: nn.RNNCell(4, 8)(z(2, 3)))
error("rnn_cell_3d", lambda: nn.RNNCell(4, 8)(z(1, 2, 4)))


# ----- an LSTM language model ---------------------------------------------------------------------
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(11, 6)
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
        self.head = nn.Linear(8, 11)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


torch.manual_seed(7)
lm = LM()
save_file({k: v.contiguous() for k, v in lm.state_dict().items()},
          os.path.join(HERE, "data", "rnn_lm_init.safetensors"))
lm = lm.double()
tokens = torch.tensor([[1, 4, 2, 9, 9, 3, 0], [10, 5, 5, 7, 1, 2, 8], [3, 3, 6, 0, 4, 10, 1]])
x, y = tokens[:, :-1], tokens[:, 1:]
opt = torch.optim.SGD(lm.parameters(), lr=0.5)
F.cross_entropy(lm(x).reshape(-1, 11), y.reshape(-1)).backward()
opt.step()
opt.zero_grad()
save_file({k: v.contiguous() for k, v in lm.state_dict().items()},
          os.path.join(HERE, "data", "rnn_lm_trained.safetensors"))
loss = F.cross_entropy(lm(x).reshape(-1, 11), y.reshape(-1))
loss.backward()
LM_CASE = {
    "tokens": tokens.tolist(),
    "loss": loss.item(),
    "grads": {k: enc(p.grad) for k, p in lm.named_parameters()},
    "repr": repr(lm),
}

with open(os.path.join(HERE, "data", "rnn_layers.json"), "w") as f:
    json.dump({"torch": torch.__version__, "cases": CASES, "reprs": REPRS, "errors": ERRORS,
               "lm": LM_CASE}, f, separators=(",", ":"))
