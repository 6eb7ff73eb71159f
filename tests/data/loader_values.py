"""Prints the PyTorch 2.15 values that tests/data/loader.rs asserts (run with a PyTorch install:
`python tests/data/loader_values.py`): the batches of `DataLoader` over `range(n)` with
`shuffle=True`, from a seeded generator and from the global generator, epoch after epoch (also
after an epoch left early, and with `drop_last`); where each generator is left afterwards (the
next `torch.rand(2)` from it); `random_split`.

Each line: `case | epoch ; epoch ...` with an epoch as `batch,batch,...` and a batch as
space-separated indices; `rand` lines give the two floats of `torch.rand(2)` (float32, repr)."""
import torch
from torch.utils.data import DataLoader, random_split


def epoch(loader, stop_after=None):
    out = []
    for i, b in enumerate(loader):
        out.append(" ".join(str(v) for v in b.tolist()))
        if stop_after is not None and i + 1 == stop_after:
            break
    return ",".join(out)


def rand(g=None):
    return " ".join(repr(v) for v in torch.rand(2, generator=g).tolist())


# A seeded generator: three epochs, then where the generator is.
for n, bs, drop_last in ((10, 3, False), (10, 4, True), (12, 4, False), (1797, 64, False)):
    g = torch.Generator().manual_seed(0)
    dl = DataLoader(range(n), batch_size=bs, shuffle=True, drop_last=drop_last, generator=g)
    epochs = [epoch(dl) for _ in range(3)]
    if n > 100:  # only the first batch of each epoch of the large case
        epochs = [e.split(",")[0] for e in epochs]
    print(f"gen n={n} bs={bs} drop_last={int(drop_last)} | {' ; '.join(epochs)}")
    print(f"gen n={n} bs={bs} drop_last={int(drop_last)} rand | {rand(g)}")

# An epoch left after its first batch skips the closing permutation: the next epoch differs.
# With 2 workers, 4 batches are sent at once, and the sampler's end is reached (the closing
# permutation drawn) when the first batch comes back.
for workers in (0, 2):
    g = torch.Generator().manual_seed(0)
    dl = DataLoader(range(10), batch_size=3, shuffle=True, generator=g, num_workers=workers)
    print(f"gen early workers={workers} | {epoch(dl, stop_after=1)} ; {epoch(dl)}")

# The global generator: a seed per epoch, then the sampler's seed for a fresh generator.
for seed in (0, 7):
    torch.manual_seed(seed)
    dl = DataLoader(range(10), batch_size=4, shuffle=True)
    epochs = [epoch(dl) for _ in range(2)]
    print(f"global seed={seed} | {' ; '.join(epochs)}")
    print(f"global seed={seed} rand | {rand()}")

# Without shuffling the global generator still gives one draw per epoch.
torch.manual_seed(0)
for _ in range(2):
    list(DataLoader(range(5), batch_size=2))
print(f"sequential rand | {rand()}")

# random_split from a generator and from the global one.
g = torch.Generator().manual_seed(0)
parts = random_split(range(1797), [1437, 360], generator=g)
print(f"split gen | {' '.join(map(str, parts[0].indices[:8]))} , {' '.join(map(str, parts[1].indices[:8]))}")
torch.manual_seed(3)
parts = random_split(range(10), [4, 6])
print(f"split global | {' '.join(map(str, parts[0].indices))} , {' '.join(map(str, parts[1].indices))}")
