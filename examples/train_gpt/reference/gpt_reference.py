"""The character-level GPT of `train_gpt`, written in PyTorch: records the trajectory the Rust
main job must follow, and measures PyTorch's tokens/s on the same machine.

    python gpt_reference.py record OUT_DIR     # init weights, batch offsets, 50 losses
    python gpt_reference.py speed --threads 2  # tokens/s of a training step

`record` writes `OUT_DIR/gpt_init.safetensors` (the model's initial weights after
`torch.manual_seed(SEED)`, under the Rust model's names) and `OUT_DIR/gpt_trajectory.safetensors`
(the configuration as metadata, the batch offsets drawn by `torch.randint` from a generator seeded with
`BATCH_SEED`, and the loss of each of the first 50 AdamW steps in float32). The Rust test
`examples/train_gpt/tests/trajectory.rs` loads both, takes the same steps and compares.
"""

import math
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

HERE = Path(__file__).resolve().parent
TEXT = (HERE.parent / "data" / "tinyshakespeare.txt").read_text(encoding="utf-8")

# The small configuration the trajectory test uses (the main job's default is larger).
CONFIG = dict(block_size=32, n_layer=2, n_head=4, n_embd=48, batch_size=8, lr=1e-3, weight_decay=0.1)
SEED = 1337
BATCH_SEED = 7
STEPS = 50


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class Mlp(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = Mlp(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    """Decoder-only transformer; the output projection is the token embedding (weight tying)."""

    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        # GPT-2's initialisation (as nanoGPT): N(0, 0.02) weights, zero biases, and the residual
        # projections scaled by 1/sqrt(2 n_layer), drawn in `named_parameters` order.
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif name.startswith("h.") and name.endswith(("weight",)) and ".ln_" not in name:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, mean=0.0, std=std)
            elif name in ("wte.weight", "wpe.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def encode(text):
    """The characters in sorted order, and the training part of the text (the first 90%) as
    their numbers."""
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    return chars, data[: int(0.9 * len(data))]


def batch(data, offsets, block_size):
    x = torch.stack([data[i : i + block_size] for i in offsets])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in offsets])
    return x, y


def build(cfg, vocab_size):
    torch.manual_seed(SEED)
    return Gpt(vocab_size, cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"])


def record(out_dir):
    torch.set_num_threads(1)
    cfg = CONFIG
    chars, data = encode(TEXT)
    model = build(cfg, len(chars))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}, out / "gpt_init.safetensors")
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    g = torch.Generator().manual_seed(BATCH_SEED)
    offsets, losses = [], []
    for _ in range(STEPS):
        ix = torch.randint(len(data) - cfg["block_size"], (cfg["batch_size"],), generator=g)
        x, y = batch(data, ix, cfg["block_size"])
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        offsets.append(ix.tolist())
        losses.append(loss.item())
    # One safetensors file: the batch offsets and the losses, the configuration as metadata.
    save_file(
        {"offsets": torch.tensor(offsets, dtype=torch.int64), "losses": torch.tensor(losses, dtype=torch.float64)},
        out / "gpt_trajectory.safetensors",
        metadata={k: str(v) for k, v in dict(cfg, seed=SEED, batch_seed=BATCH_SEED, vocab_size=len(chars),
                                             torch=torch.__version__).items()},
    )
    print(f"losses: first {losses[0]:.6f}, last {losses[-1]:.6f}")


def speed(threads, block_size=64, n_layer=2, n_head=4, n_embd=64, batch_size=16, steps=60):
    """A training step of `train_gpt`'s default model (the same sizes, AdamW at 3e-3)."""
    torch.set_num_threads(threads)
    chars, data = encode(TEXT)
    torch.manual_seed(SEED)
    model = Gpt(len(chars), block_size, n_layer, n_head, n_embd)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    g = torch.Generator().manual_seed(BATCH_SEED)
    times = []
    for step in range(steps + 5):
        ix = torch.randint(len(data) - block_size, (batch_size,), generator=g)
        x, y = batch(data, ix, block_size)
        t0 = time.perf_counter()
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step >= 5:
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    print(f"pytorch {torch.__version__}, {threads} threads: step {med * 1e3:.1f} ms, "
          f"{batch_size * block_size / med:,.0f} tokens/s")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        record(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] == "speed":
        threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 2
        speed(threads)
    else:
        sys.exit(__doc__)
