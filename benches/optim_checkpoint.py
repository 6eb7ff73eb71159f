"""Optimizer checkpoints between PyTorch and `autograd::optim`.

`autograd`'s `Optimizer::state_dict()` saves (with `StateDict::save`) a safetensors file whose
tensors are `state.{param_index}.{name}` (`step`, `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`,
`momentum_buffer`, `square_avg`, `grad_avg`, `sum`) and whose metadata key `"param_groups"` is
the JSON of PyTorch's `optimizer.state_dict()["param_groups"]`. Two functions for PyTorch users:

    opt.load_state_dict(to_torch("adam.safetensors"))   # a state written by autograd
    save_from_torch(opt, "adam.safetensors")            # for autograd's load_state_dict
"""

import json
from collections import defaultdict

import torch
from safetensors import safe_open
from safetensors.torch import save_file


def to_torch(path):
    """Reads an `autograd::optim` state file into the dict `optimizer.load_state_dict` takes."""
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
        if "param_groups" not in meta:
            raise ValueError(f"{path}: no 'param_groups' metadata: not an optimizer state")
        groups = json.loads(meta["param_groups"])
        state = defaultdict(dict)
        for key in f.keys():
            prefix, index, name = key.split(".", 2)
            if prefix != "state":
                raise ValueError(f"{path}: unexpected key {key!r}")
            state[int(index)][name] = f.get_tensor(key)
    for g in groups:
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
    return {"state": dict(state), "param_groups": groups}


def save_from_torch(optimizer, path):
    """Writes `optimizer`'s state (a `torch.optim.Optimizer`) in autograd's layout."""
    sd = optimizer.state_dict()
    tensors = {}
    for index, entries in sd["state"].items():
        for name, value in entries.items():
            if value is None:
                continue  # SGD's momentum_buffer before momentum was used
            if not torch.is_tensor(value):
                value = torch.tensor(value, dtype=torch.float32)
            tensors[f"state.{index}.{name}"] = value.detach().cpu().contiguous()
    save_file(tensors, path, metadata={"param_groups": json.dumps(sd["param_groups"])})
