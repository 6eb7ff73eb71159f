"""Records what tests/nn/training_modes.rs replays: run `python tests/nn/training_modes.py`
(from the repository root, with PyTorch installed) to rewrite tests/nn/data/training_modes.json.

One model holds every built-in layer (in nn.Sequential, an nn.ModuleList and plain attributes);
for each step of a sequence of `train()`/`eval()` calls on the model and on some of its
submodules, it records `[(name, m.training) for name, m in model.named_modules()]`, as a list of
names (once) and a string of `1`/`0` flags per step."""
import json
import os

import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2), nn.AvgPool2d(1),
            nn.AdaptiveAvgPool2d(1), nn.Upsample(scale_factor=2.0), nn.ConvTranspose2d(2, 2, 1),
            nn.GroupNorm(1, 2), nn.Flatten(),
        )
        self.head = nn.Sequential(
            nn.Linear(2, 4), nn.BatchNorm1d(4), nn.Dropout(0.5), nn.LayerNorm([4]),
            nn.RMSNorm([4]), nn.Conv1d(4, 4, 1), nn.BatchNorm3d(4), nn.Embedding(5, 4),
            nn.Identity(),
        )
        self.acts = nn.ModuleList([
            nn.Tanh(), nn.Sigmoid(), nn.GELU(), nn.LeakyReLU(), nn.Softmax(-1), nn.LogSoftmax(-1),
            nn.SiLU(), nn.Mish(), nn.Softplus(), nn.Hardtanh(), nn.ReLU6(), nn.ELU(), nn.SELU(),
            nn.CELU(),
        ])
        self.attn = nn.MultiheadAttention(4, 2)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(4, 2), 1, enable_nested_tensor=False
        )
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2), 1)
        self.lstm = nn.LSTM(2, 3)
        self.gru = nn.GRU(2, 3)
        self.rnn = nn.RNN(2, 3)
        self.lstm_cell = nn.LSTMCell(2, 3)
        self.gru_cell = nn.GRUCell(2, 3)
        self.rnn_cell = nn.RNNCell(2, 3)


def flags(model):
    return "".join("1" if m.training else "0" for _, m in model.named_modules())


def main():
    model = Net()
    steps = {"new": flags(model)}
    model.eval()
    steps["eval"] = flags(model)
    model.train()
    steps["train"] = flags(model)
    # Parts: a Sequential, an attention layer and one layer inside a stack.
    model.features.eval()
    model.attn.eval()
    model.encoder.layers[0].self_attn.eval()
    steps["train, then parts eval"] = flags(model)
    model.eval()
    model.head.train()
    model.acts[1].train()
    model.lstm.train()
    steps["eval, then parts train"] = flags(model)
    out = {"names": [n for n, _ in model.named_modules()], "steps": steps}
    with open(os.path.join(HERE, "data", "training_modes.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
