"""Prints the PyTorch 2.15 values asserted by tests/ops/scatter.rs.

Run: python tests/ops/scatter_values.py (torch 2.15, CPU). Each block prints a label, then the
values, flattened in C order, and the shapes and node names where the test checks them.
"""
import torch


def show(label, t):
    if t is None:
        print(label, None)
        return
    print(label, list(t.shape), t.flatten().tolist())


def node(label, t):
    print(label, type(t.grad_fn).__name__ if t.grad_fn is not None else None)


def err(label, f):
    try:
        f()
        print(label, "no error")
    except Exception as e:  # noqa: BLE001
        print(label, type(e).__name__, str(e).split("\n")[0])


# gather: along dim 1 and dim 0 (-2), repeated indices; the gradient sums the repeats.
x = torch.tensor([[1., 2, 3], [4, 5, 6]], dtype=torch.float64, requires_grad=True)
i = torch.tensor([[2, 2, 0, 2], [1, 0, 0, 0]])
y = x.gather(1, i)
show("gather1", y)
node("gather1.node", y)
(y * torch.arange(1., 9, dtype=torch.float64).reshape(2, 4)).sum().backward()
show("gather1.grad", x.grad)
y0 = x.detach().gather(-2, torch.tensor([[1, 0, 1]]))
show("gather0", y0)
show("gather.i64", torch.tensor([[10, 20], [30, 40]]).gather(1, torch.tensor([[1, 1], [0, 1]], dtype=torch.int32)))
show("gather.bool", torch.tensor([True, False, True]).gather(0, torch.tensor([1, 2, 2])))
show("gather.f16", torch.tensor([0.1, 0.2, 0.3], dtype=torch.float16).gather(0, torch.tensor([2, 0])).float())
show("gather.0dim", torch.tensor(5.).gather(0, torch.tensor([0, 0])))

# scatter with src: last write wins on the CPU; gradients.
x = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
s = torch.tensor([[1., 2], [4, 5]], dtype=torch.float64, requires_grad=True)
idx = torch.tensor([[0, 0], [2, 1]])
y = x.scatter(1, idx, s)
show("scatter", y)
node("scatter.node", y)
(y * torch.tensor([[1., 2, 3], [4, 5, 6]], dtype=torch.float64)).sum().backward()
show("scatter.grad_self", x.grad)
show("scatter.grad_src", s.grad)

# scatter with a value.
x = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
y = x.scatter(0, torch.tensor([[1, 0, 1]]), 2.5)
show("scatter_value", y)
node("scatter_value.node", y)
y.sum().backward()
show("scatter_value.grad", x.grad)
show("scatter_value.i64", torch.zeros(2, 2, dtype=torch.int64).scatter(1, torch.tensor([[1], [0]]), 2.7))
show("scatter_value.bool", torch.zeros(3, dtype=torch.bool).scatter(0, torch.tensor([2]), True))

# scatter_add: repeated indices add; gradients; every dtype.
x = torch.tensor([[1., 1, 1], [1, 1, 1]], dtype=torch.float64, requires_grad=True)
s = torch.tensor([[1., 2, 3], [4, 5, 6]], dtype=torch.float64, requires_grad=True)
idx = torch.tensor([[2, 2, 2], [0, 1, 0]])
y = x.scatter_add(1, idx, s)
show("scatter_add", y)
node("scatter_add.node", y)
(y * torch.tensor([[1., 2, 3], [4, 5, 6]], dtype=torch.float64)).sum().backward()
show("scatter_add.grad_self", x.grad)
show("scatter_add.grad_src", s.grad)
show("scatter_add.i32", torch.tensor([2147483647, 0], dtype=torch.int32).scatter_add(0, torch.tensor([0, 1]), torch.tensor([1, 5], dtype=torch.int32)))
show("scatter_add.bool", torch.zeros(2, dtype=torch.bool).scatter_add(0, torch.tensor([1, 1]), torch.tensor([True, False])))
show("scatter_add.f16", torch.ones(1, dtype=torch.float16).scatter_add(0, torch.zeros(4, dtype=torch.long), torch.full((4,), 2 ** -12, dtype=torch.float16)).float())
show("scatter_add.bf16", torch.ones(1, dtype=torch.bfloat16).scatter_add(0, torch.zeros(3, dtype=torch.long), torch.full((3,), 0.00390625, dtype=torch.bfloat16)).float())
show("scatter_add.bigsrc", torch.zeros(2, 3).scatter_add(1, torch.tensor([[0, 0]]), torch.ones(2, 3)))

# index_add: alpha, repeats, gradients, integers (alpha truncated), bools.
x = torch.zeros(3, 2, dtype=torch.float64, requires_grad=True)
src = torch.tensor([[1., 2], [3, 4], [5, 6]], dtype=torch.float64, requires_grad=True)
y = x.index_add(0, torch.tensor([0, 2, 0]), src, alpha=2.0)
show("index_add", y)
node("index_add.node", y)
(y * torch.tensor([[1., 2], [3, 4], [5, 6]], dtype=torch.float64)).sum().backward()
show("index_add.grad_self", x.grad)
show("index_add.grad_src", src.grad)
show("index_add.dim1", torch.zeros(2, 3).index_add(1, torch.tensor([0, 2]), torch.ones(2, 2), alpha=0.5))
show("index_add.i64", torch.zeros(2, 3, dtype=torch.int64).index_add(0, torch.tensor([1, 1]), torch.ones(2, 3, dtype=torch.int64), alpha=1.5))
show("index_add.bool", torch.zeros(2, 3, dtype=torch.bool).index_add(0, torch.tensor([0]), torch.ones(1, 3, dtype=torch.bool)))

# index_select with a tensor index.
x = torch.tensor([[1., 2], [3, 4], [5, 6]], dtype=torch.float64, requires_grad=True)
y = x.index_select(0, torch.tensor([2, 0, 2]))
show("index_select", y)
node("index_select.node", y)
y.sum().backward()
show("index_select.grad", x.grad)
show("index_select.0dim", x.detach().index_select(1, torch.tensor(1)))

# masked_select: broadcasting, gradients summed over broadcast copies.
x = torch.tensor([1., 2, 3], dtype=torch.float64, requires_grad=True)
m = torch.tensor([[True, False, True], [True, True, False]])
y = x.masked_select(m)
show("masked_select", y)
node("masked_select.node", y)
(y * torch.arange(1., 5, dtype=torch.float64)).sum().backward()
show("masked_select.grad", x.grad)
show("masked_select.u8", torch.tensor([1, 2, 3], dtype=torch.uint8).masked_select(torch.tensor([True, False, True])))
show("masked_select.mask_bigger", torch.tensor([[7.], [8.]]).masked_select(torch.tensor([True, False, True])))

# masked_scatter: source read in C order; gradients.
x = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
m = torch.tensor([[True, False, True], [False, True, False]])
src = torch.arange(1., 6, dtype=torch.float64).requires_grad_()
y = x.masked_scatter(m, src)
show("masked_scatter", y)
node("masked_scatter.node", y)
(y * torch.arange(1., 7, dtype=torch.float64).reshape(2, 3)).sum().backward()
show("masked_scatter.grad_self", x.grad)
show("masked_scatter.grad_src", src.grad)
show("masked_scatter.broadcast", torch.zeros(3).masked_scatter(m, torch.ones(5)))
show("masked_scatter.src2d", torch.zeros(2, 3).masked_scatter(torch.tensor([True, False, True]), torch.arange(6.).reshape(2, 3)))

# Empty indices.
show("gather.empty0", torch.zeros(2, 3).gather(1, torch.zeros(0, 3, dtype=torch.long)))
show("gather.empty1", torch.zeros(2, 3).gather(1, torch.zeros(2, 0, dtype=torch.long)))
show("masked_select.none", torch.zeros(2, 3).masked_select(torch.zeros(2, 3, dtype=torch.bool)))

# nonzero.
show("nonzero", torch.tensor([[0, 1, 0], [2, 0, 3]]).nonzero())
show("nonzero.nan", torch.tensor([float("nan"), 0., -0., 1e-30]).nonzero())
show("nonzero.0dim_zero", torch.tensor(0).nonzero())
show("nonzero.0dim_one", torch.tensor(3.).nonzero())
show("nonzero.bool3d", torch.tensor([[[True], [False]], [[False], [True]]]).nonzero())

# Errors.
x = torch.zeros(2, 3)
err("e.gather_oob", lambda: x.gather(1, torch.tensor([[5]])))
err("e.gather_neg", lambda: x.gather(1, torch.tensor([[-1]])))
err("e.gather_dtype", lambda: x.gather(1, torch.tensor([[0.]])))
err("e.gather_ndim", lambda: x.gather(1, torch.tensor([0])))
err("e.gather_size", lambda: x.gather(1, torch.tensor([[0], [0], [0]])))
err("e.gather_dim", lambda: x.gather(2, torch.tensor([[0]])))
err("e.scatter_dtype", lambda: x.scatter(1, torch.tensor([[0]]), torch.ones(1, 1, dtype=torch.float64)))
err("e.scatter_index_dtype", lambda: x.scatter(1, torch.tensor([[0.]]), 1.0))
err("e.scatter_ndim", lambda: x.scatter_add(1, torch.tensor([0]), torch.ones(1)))
err("e.scatter_src_small", lambda: x.scatter(1, torch.tensor([[0, 0]]), torch.ones(1, 1)))
err("e.scatter_oob", lambda: x.scatter_add(0, torch.tensor([[2]]), torch.ones(1, 1)))
err("e.index_add_vector", lambda: x.index_add(0, torch.tensor([[0]]), torch.ones(1, 3)))
err("e.index_add_index_dtype", lambda: x.index_add(0, torch.tensor([0.]), torch.ones(1, 3)))
err("e.index_add_dtype", lambda: x.index_add(0, torch.tensor([0]), torch.ones(1, 3, dtype=torch.float64)))
err("e.index_add_count", lambda: x.index_add(0, torch.tensor([0]), torch.ones(2, 3)))
err("e.index_add_shape", lambda: x.index_add(0, torch.tensor([0]), torch.ones(1, 2)))
err("e.index_add_oob", lambda: x.index_add(0, torch.tensor([-1]), torch.ones(1, 3)))
err("e.index_select_vector", lambda: x.index_select(0, torch.tensor([[0]])))
err("e.index_select_dtype", lambda: x.index_select(0, torch.tensor([0.])))
err("e.index_select_oob", lambda: x.index_select(0, torch.tensor([2])))
err("e.masked_select_dtype", lambda: x.masked_select(torch.tensor([1, 0, 1])))
err("e.masked_select_broadcast", lambda: x.masked_select(torch.tensor([True, False])))
err("e.masked_scatter_count", lambda: x.masked_scatter(m, torch.ones(2)))
err("e.masked_scatter_mask", lambda: x.masked_scatter(m.long(), torch.ones(5)))
err("e.masked_scatter_dtype", lambda: torch.zeros(2, 3).masked_scatter(m, torch.ones(5, dtype=torch.float64)))
