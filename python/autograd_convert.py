"""Optimizer and learning-rate-scheduler checkpoints between PyTorch and `autograd::optim`.

The layout on the Rust side
---------------------------
`Optimizer::state_dict()` (saved with `StateDict::save`) is a safetensors file whose tensors are
`state.{param_index}.{name}` (`step` as a 0-dim f32 tensor, `exp_avg`, `exp_avg_sq`,
`max_exp_avg_sq`, `momentum_buffer`, `square_avg`, `grad_avg`, `sum`; parameters numbered across
groups in order, as PyTorch numbers them) and whose metadata key `"param_groups"` is the JSON of
PyTorch's `optimizer.state_dict()["param_groups"]`.

A scheduler's `LrScheduler::state_dict()` is a JSON object with PyTorch's keys (`last_epoch`,
`_step_count`, `base_lrs`, `_last_lr`, the scheduler's hyper-parameters, nested `_schedulers` for
`SequentialLR`/`ChainedScheduler`). It differs from PyTorch's `scheduler.state_dict()` in two
spellings only: infinities and NaN are the strings "inf", "-inf", "nan" (JSON has no such
numbers), and `MultiStepLR`'s `milestones` Counter is a JSON object {"epoch": count}. Next to an
optimizer checkpoint it lives in the same safetensors file, as the metadata key
`"lr_scheduler"` (this module's convention; the Rust side writes it with
`dict.set_metadata("lr_scheduler", serde_json::Value::Object(sched.state_dict()).to_string())`).

Both directions, from Python
----------------------------
    from autograd_convert import load_checkpoint, save_checkpoint

    # autograd -> PyTorch: a file written by the Rust side
    opt_state, sched_state = load_checkpoint("ckpt.safetensors")
    optimizer.load_state_dict(opt_state)
    if sched_state is not None:
        scheduler.load_state_dict(sched_state)

    # PyTorch -> autograd: for `Optimizer::load_state_dict` and `LrScheduler::load_state_dict`
    save_checkpoint("ckpt.safetensors", optimizer, scheduler)   # scheduler may be omitted

As in PyTorch, build the scheduler before loading the optimizer's state (building a scheduler
changes the learning rates), then load the scheduler's state.

From the command line
---------------------
    python python/autograd_convert.py to-torch ckpt.safetensors ckpt.pt
        writes torch.save({"optimizer": ..., "lr_scheduler": ...}) ("lr_scheduler" only if the
        file has one)
    python python/autograd_convert.py from-torch ckpt.pt ckpt.safetensors
        reads a torch.save'd optimizer state dict, or a dict with "optimizer" and optionally
        "lr_scheduler" entries, and writes autograd's layout

Requires torch and safetensors; nothing in autograd's build or tests runs it (the test fixtures
it wrote are committed under tests/nn/data/).
"""

import argparse
import json
import math
from collections import Counter, defaultdict

import torch
from safetensors import safe_open
from safetensors.torch import save_file

SCHEDULER_KEY = "lr_scheduler"
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan,
               "Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


# ----- optimizer state --------------------------------------------------------------------------

def optimizer_state_from_file(path):
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


def optimizer_state_to_tensors(state_dict):
    """Splits `optimizer.state_dict()` into autograd's tensors and `param_groups` metadata."""
    tensors = {}
    for index, entries in state_dict["state"].items():
        for name, value in entries.items():
            if value is None:
                continue  # SGD's momentum_buffer before momentum was used
            if not torch.is_tensor(value):
                value = torch.tensor(value, dtype=torch.float32)
            tensors[f"state.{index}.{name}"] = value.detach().cpu().contiguous()
    return tensors, {"param_groups": json.dumps(state_dict["param_groups"])}


# ----- scheduler state --------------------------------------------------------------------------

def scheduler_state_to_json(state):
    """PyTorch's `scheduler.state_dict()` as autograd's JSON-able form: non-finite floats as
    "inf"/"-inf"/"nan", Counters as {"epoch": count}, tensors as floats, tuples as lists."""
    if isinstance(state, Counter):
        return {str(k): v for k, v in state.items()}
    if isinstance(state, dict):
        return {k: scheduler_state_to_json(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return [scheduler_state_to_json(v) for v in state]
    if torch.is_tensor(state):
        state = state.item()
    if isinstance(state, float) and not math.isfinite(state):
        return "nan" if math.isnan(state) else ("inf" if state > 0 else "-inf")
    return state


def scheduler_state_from_json(state):
    """The inverse of `scheduler_state_to_json`: the dict `scheduler.load_state_dict` takes."""
    if isinstance(state, dict):
        out = {}
        for k, v in state.items():
            if k == "milestones" and isinstance(v, dict):
                out[k] = Counter({int(e): n for e, n in v.items()})
            else:
                out[k] = scheduler_state_from_json(v)
        return out
    if isinstance(state, list):
        return [scheduler_state_from_json(v) for v in state]
    if isinstance(state, str) and state in _NON_FINITE:
        return _NON_FINITE[state]
    return state


# ----- files ------------------------------------------------------------------------------------

def load_checkpoint(path):
    """`(optimizer_state, scheduler_state or None)` from an autograd checkpoint file."""
    opt_state = optimizer_state_from_file(path)
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
    sched = meta.get(SCHEDULER_KEY)
    return opt_state, (scheduler_state_from_json(json.loads(sched)) if sched else None)


def save_checkpoint(path, optimizer, scheduler=None):
    """Writes `optimizer`'s state (a `torch.optim.Optimizer` or its `state_dict()`) and, if
    given, `scheduler`'s (an LR scheduler or its `state_dict()`) in autograd's layout."""
    opt_sd = optimizer if isinstance(optimizer, dict) else optimizer.state_dict()
    tensors, meta = optimizer_state_to_tensors(opt_sd)
    if scheduler is not None:
        sched_sd = scheduler if isinstance(scheduler, dict) else scheduler.state_dict()
        meta[SCHEDULER_KEY] = json.dumps(scheduler_state_to_json(sched_sd), allow_nan=False)
    save_file(tensors, path, metadata=meta)


# The names benches/ used before this module existed.
to_torch = optimizer_state_from_file
save_from_torch = save_checkpoint


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("to-torch", help="autograd safetensors -> torch.save'd dict")
    a.add_argument("src")
    a.add_argument("dst")
    b = sub.add_parser("from-torch", help="torch.save'd state dict(s) -> autograd safetensors")
    b.add_argument("src")
    b.add_argument("dst")
    args = p.parse_args(argv)
    if args.command == "to-torch":
        opt_state, sched_state = load_checkpoint(args.src)
        out = {"optimizer": opt_state}
        if sched_state is not None:
            out["lr_scheduler"] = sched_state
        torch.save(out, args.dst)
    else:
        obj = torch.load(args.src, weights_only=False)
        if "optimizer" in obj:
            save_checkpoint(args.dst, obj["optimizer"], obj.get("lr_scheduler"))
        else:
            save_checkpoint(args.dst, obj)


if __name__ == "__main__":
    main()
