"""Records what tests/nn/optim.rs compares `autograd::optim` with: PyTorch's optimizer
trajectories, learning-rate schedules, gradient clipping and an Adam checkpoint.

    /tmp/torchenv/bin/python benches/record_optim.py            # writes tests/nn/data/optim*
    AUTOGRAD_WRITE_OPTIM_CKPT=1 cargo test --test nn optim::our_adam_state
    /tmp/torchenv/bin/python benches/record_optim.py --ours     # PyTorch continues our file

Trajectories: three f32 parameters (12 values) from a fixed seed; at step t the gradient is
`0.5 * p + noise[t]` (computed in f32 from the current parameters, so the replay computes the
same numbers), 100 steps, the parameters recorded after every step. Each configuration's
`param_groups` (PyTorch's JSON) goes into the metadata, so the Rust test builds the same
optimizer from it. PyTorch's default (single-tensor) implementation on the CPU is recorded.
"""

import json
import math
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(__file__))
from optim_checkpoint import save_from_torch, to_torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "nn", "data")
STEPS = 100
SHAPES = [(2, 3), (4,), (2,)]

torch.manual_seed(0)
INIT = [torch.randn(s, dtype=torch.float32) for s in SHAPES]
NOISE = torch.randn(STEPS, 12, dtype=torch.float32)

# name -> (optimizer class, list of (param indices, options))
CONFIGS = {
    "sgd": (torch.optim.SGD, [([0, 1, 2], dict(lr=0.1))]),
    "sgd_nesterov_wd": (torch.optim.SGD, [([0, 1, 2], dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01))]),
    "sgd_dampening_maximize": (torch.optim.SGD, [([0, 1, 2], dict(lr=0.01, momentum=0.5, dampening=0.1, maximize=True))]),
    "adam": (torch.optim.Adam, [([0, 1, 2], dict(lr=0.01))]),
    "adam_amsgrad_wd": (torch.optim.Adam, [([0, 1, 2], dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True))]),
    "adamw": (torch.optim.AdamW, [([0, 1, 2], dict(lr=0.01, weight_decay=0.1))]),
    "adamw_amsgrad": (torch.optim.AdamW, [([0, 1, 2], dict(lr=0.02, amsgrad=True, eps=1e-6))]),
    "rmsprop": (torch.optim.RMSprop, [([0, 1, 2], dict(lr=0.01))]),
    "rmsprop_centered_momentum": (torch.optim.RMSprop, [([0, 1, 2], dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.01, alpha=0.9))]),
    "adagrad": (torch.optim.Adagrad, [([0, 1, 2], dict(lr=0.1))]),
    "adagrad_lr_decay": (torch.optim.Adagrad, [([0, 1, 2], dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1))]),
    "adam_groups": (torch.optim.Adam, [([0], dict(lr=0.01)), ([1, 2], dict(lr=0.001, betas=(0.5, 0.9)))]),
    "sgd_groups": (torch.optim.SGD, [([0, 2], dict(lr=0.1, momentum=0.9)), ([1], dict(lr=0.01))]),
}


def flat(params):
    return torch.cat([p.detach().reshape(-1) for p in params])


def grads_for(params, t):
    """`0.5 * p + noise[t]` for each parameter, in f32."""
    out, k = [], 0
    for p in params:
        n = p.numel()
        out.append(p.detach() * 0.5 + NOISE[t, k:k + n].reshape(p.shape))
        k += n
    return out


def make(cls, groups, params):
    """The optimizer; a single group's options also go to the constructor, as a user passes
    them (Adagrad reads `initial_accumulator_value` from the constructor only)."""
    defaults = groups[0][1] if len(groups) == 1 else {}
    return cls([dict(params=[params[i] for i in idx], **o) for idx, o in groups], **defaults)


def run(cls, groups, steps, params=None, opt=None, start=0):
    if params is None:
        params = [torch.nn.Parameter(x.clone()) for x in INIT]
    if opt is None:
        opt = make(cls, groups, params)
    traj = []
    for t in range(start, start + steps):
        for p, g in zip(params, grads_for(params, t)):
            p.grad = g
        opt.step()
        traj.append(flat(params))
    return params, opt, torch.stack(traj)


def record_trajectories():
    tensors = {f"init.{i}": x for i, x in enumerate(INIT)}
    tensors["noise"] = NOISE
    meta = {}
    for name, (cls, groups) in CONFIGS.items():
        _, opt, traj = run(cls, groups, STEPS)
        tensors[f"traj.{name}"] = traj
        # `param_indices`: each group's parameters among the three (the state dict's "params"
        # numbers them in group order instead).
        meta[name] = {"optimizer": cls.__name__, "param_groups": opt.state_dict()["param_groups"],
                      "param_indices": [idx for idx, _ in groups]}
    save_file(tensors, os.path.join(DATA, "optim_trajectories.safetensors"),
              metadata={"configs": json.dumps(meta)})


def lr_history(make, groups_lr, steps=30, opt_cls=torch.optim.SGD, momentum_key=None):
    ps = [torch.nn.Parameter(torch.zeros(1)) for _ in groups_lr]
    if opt_cls is torch.optim.SGD:
        opt = opt_cls([dict(params=[p], lr=lr, momentum=0.9) for p, lr in zip(ps, groups_lr)])
    else:
        opt = opt_cls([dict(params=[p], lr=lr) for p, lr in zip(ps, groups_lr)])
    sched = make(opt)
    lrs, moms = [list(sched.get_last_lr())], []
    def mom():
        return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]
    moms.append(mom())
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(list(sched.get_last_lr()))
        moms.append(mom())
    return {"lrs": lrs, "momentum": moms}


def record_schedules():
    S = torch.optim.lr_scheduler
    out = {
        "step_lr": lr_history(lambda o: S.StepLR(o, step_size=7, gamma=0.5), [0.1, 0.03]),
        "cosine": lr_history(lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001), [0.1, 0.05]),
        "linear": lr_history(lambda o: S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=5), [0.1]),
        "linear_down": lr_history(lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.2, total_iters=12), [0.1]),
        "one_cycle": lr_history(lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=30), [0.1, 0.01], opt_cls=torch.optim.Adam),
        "one_cycle_linear_three_phase": lr_history(
            lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=30, anneal_strategy="linear", three_phase=True, pct_start=0.25), [0.1]),
        "warmup_cosine": lr_history(
            lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=5), S.CosineAnnealingLR(o, T_max=25)], milestones=[5]),
            [0.1, 0.02]),
        "warmup_step": lr_history(
            lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.25, total_iters=4), S.StepLR(o, step_size=3, gamma=0.7)], milestones=[6]),
            [0.2]),
    }
    with open(os.path.join(DATA, "optim_schedules.json"), "w") as f:
        json.dump(out, f, indent=0)


def record_clipping():
    torch.manual_seed(1)
    grads = [torch.randn(3, 4, dtype=torch.float32), torch.randn(5, dtype=torch.float32)]
    cases = []
    for max_norm, norm_type in [(1.0, 2.0), (100.0, 2.0), (0.5, math.inf), (2.0, 1.0), (1.5, 3.0)]:
        ps = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
        for p, g in zip(ps, grads):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
        cases.append({"max_norm": max_norm, "norm_type": "inf" if math.isinf(norm_type) else norm_type,
                      "total": total.item(), "grads": [p.grad.reshape(-1).tolist() for p in ps]})
    ps = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    for p, g in zip(ps, grads):
        p.grad = g.clone()
    torch.nn.utils.clip_grad_value_(ps, 0.5)
    out = {"grads": [g.reshape(-1).tolist() for g in grads], "shapes": [list(g.shape) for g in grads],
           "norm": cases, "value": {"clip_value": 0.5, "grads": [p.grad.reshape(-1).tolist() for p in ps]}}
    with open(os.path.join(DATA, "optim_clipping.json"), "w") as f:
        json.dump(out, f)


def record_checkpoint():
    """PyTorch's Adam state after 3 steps, in our layout, and PyTorch's next 3 steps."""
    cls, groups = CONFIGS["adam_amsgrad_wd"]
    params, opt, _ = run(cls, groups, 3)
    save_from_torch(opt, os.path.join(DATA, "optim_adam_torch.safetensors"))
    tensors = {f"param.{i}": p.detach().clone() for i, p in enumerate(params)}
    _, _, cont = run(cls, groups, 3, params=params, opt=opt, start=3)
    tensors["continuation"] = cont
    save_file(tensors, os.path.join(DATA, "optim_adam_torch_continuation.safetensors"))


def record_ours():
    """Loads the Adam state our test wrote (after 3 steps) into torch.optim.Adam and records
    PyTorch's next 3 steps from it."""
    from safetensors.torch import load_file
    cls, groups = CONFIGS["adam_amsgrad_wd"]
    saved = load_file(os.path.join(DATA, "optim_adam_ours_params.safetensors"))
    params = [torch.nn.Parameter(saved[f"param.{i}"].clone()) for i in range(len(SHAPES))]
    opt = make(cls, groups, params)
    opt.load_state_dict(to_torch(os.path.join(DATA, "optim_adam_ours.safetensors")))
    _, _, cont = run(cls, groups, 3, params=params, opt=opt, start=3)
    save_file({"continuation": cont}, os.path.join(DATA, "optim_adam_ours_continuation.safetensors"))


if __name__ == "__main__":
    if "--ours" in sys.argv:
        record_ours()
    else:
        record_trajectories()
        record_schedules()
        record_clipping()
        record_checkpoint()
