"""Prints the PyTorch 2.15 values that tests/ops/sort.rs asserts (run with a PyTorch install:
`python tests/ops/sort_values.py`): sort (stable), topk, max/min over a dim and over every
element, for every dtype, with NaN and ties; the gradients of max()/min() among ties; the node
names and the error texts.

Each case line: `dtype op args | shape | values (as float64) | indices`."""
import torch

NAN = float("nan")
# Floats: NaN and ties; integers (also uint8): ties; bools: many ties.
FLOATS = [[3.0, NAN, 1.0, 3.0, -2.0, 0.5], [2.0, -1.0, 2.0, NAN, 7.0, 2.0]]
INTS = [[3, 7, 1, 3, 0, 5], [2, 2, 9, 4, 2, 0]]
BOOLS = [[1, 0, 1, 0, 0, 1], [0, 0, 1, 1, 0, 1]]
DTYPES = [
    (torch.float64, FLOATS), (torch.float32, FLOATS), (torch.float16, FLOATS),
    (torch.bfloat16, FLOATS), (torch.int64, INTS), (torch.int32, INTS), (torch.uint8, INTS),
    (torch.bool, BOOLS),
]


def fmt(xs):
    return " ".join("nan" if v != v else repr(float(v)) for v in xs)


def line(name, op, args, values, indices):
    shape = "x".join(str(s) for s in values.shape)
    v = values.to(torch.float64).flatten().tolist()
    i = indices.flatten().tolist() if indices is not None else []
    print(f"{name} {op} {args} | {shape} | {fmt(v)} | {' '.join(map(str, i))}")


for dtype, data in DTYPES:
    name = str(dtype).replace("torch.", "")
    x = torch.tensor(data, dtype=torch.float64).to(dtype)
    for dim in (0, 1, -1):
        for desc in (False, True):
            v, i = x.sort(dim=dim, descending=desc, stable=True)
            line(name, "sort", f"{dim} {int(desc)}", v, i)
    # topk: the k largest and smallest of the rows (dim 1) and columns (dim 0); values where
    # PyTorch's order among ties is unspecified are compared as values only (see the test).
    for k, dim, largest in ((1, 1, True), (2, 1, False), (6, 1, False), (2, 0, True), (0, 1, True)):
        if dtype == torch.bool:
            break  # PyTorch refuses (see the errors)
        v, i = x.topk(k, dim=dim, largest=largest)
        line(name, "topk", f"{k} {dim} {int(largest)}", v, i)
    for dim in (0, 1):
        for keepdim in (False, True):
            v, i = torch.max(x, dim, keepdim)
            line(name, "max_dim", f"{dim} {int(keepdim)}", v, i)
            v, i = torch.min(x, dim, keepdim)
            line(name, "min_dim", f"{dim} {int(keepdim)}", v, i)
    line(name, "max", "-", x.max(), None)
    line(name, "min", "-", x.min(), None)
    # Rows without NaN (the float rows' first has one): max/min of the second half.
    line(name, "max_tail", "-", x[:, 4:].max(), None)

print("---grads")
x = torch.tensor([[1.0, 3.0, 3.0], [3.0, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
x.max().backward()
print("max", fmt(x.grad.flatten().tolist()))
x.grad = None
x.min().backward()
print("min", fmt(x.grad.flatten().tolist()))
y = torch.tensor([1.0, NAN, 2.0, NAN], dtype=torch.float64, requires_grad=True)
y.max().backward()
print("max_nan", fmt(y.grad.tolist()))
x.grad = None
v, _ = x.sort(dim=1, descending=True, stable=True)
(v * torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64)).sum().backward()
print("sort", fmt(x.grad.flatten().tolist()))
x.grad = None
v, _ = x.topk(2, 0)
(v * torch.arange(1.0, 7.0, dtype=torch.float64).reshape(2, 3)).sum().backward()
print("topk", fmt(x.grad.flatten().tolist()))
x.grad = None
torch.min(x, 1)[0].sum().backward()
print("min_dim", fmt(x.grad.flatten().tolist()))

print("---names")
x = torch.tensor([[1.0, 2.0], [4.0, 3.0]], requires_grad=True)
print(x.sort(1)[0].grad_fn.name(), x.topk(1)[0].grad_fn.name(), torch.max(x, 1)[0].grad_fn.name(),
      torch.min(x, 1)[0].grad_fn.name(), x.max().grad_fn.name(), x.min().grad_fn.name())
print(x.sort(1)[1].requires_grad, x.topk(1)[1].requires_grad, torch.min(x, 1)[1].dtype)

print("---errors")
for f in (lambda: x.topk(3, 1), lambda: x.topk(1, 2), lambda: x.sort(2), lambda: x.argsort(-3),
          lambda: torch.empty(0).max(), lambda: torch.empty(0).min(),
          lambda: torch.max(torch.empty(2, 0), 1), lambda: torch.min(torch.empty(2, 0), 1),
          lambda: torch.tensor([True, False]).topk(1)):
    try:
        f()
    except Exception as e:
        print(e)
print("---zero-dim")
s = torch.tensor(2.5)
print(s.sort(0), s.topk(1, -1), s.topk(0), torch.min(s, 0, True), s.argsort())
