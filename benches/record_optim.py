"""Records what tests/nn/optim.rs compares `autograd::optim` with: PyTorch's optimizer
trajectories, learning-rate schedules (with each scheduler's state_dict), ReduceLROnPlateau
on a metric sequence, gradient clipping, and optimizer + scheduler checkpoints converted with
python/autograd_convert.py in both directions.

    /tmp/torchenv/bin/python benches/record_optim.py            # writes tests/nn/data/optim*
    AUTOGRAD_WRITE_OPTIM_CKPT=1 cargo test -p autograd --test nn optim::ours_converted
    /tmp/torchenv/bin/python benches/record_optim.py --ours     # PyTorch continues our files

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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from autograd_convert import (load_checkpoint, optimizer_state_from_file,  # noqa: E402
                              save_checkpoint, scheduler_state_to_json)

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


# The step after which each schedule's state_dict is recorded (the Rust test compares its own
# there, and resumes from PyTorch's).
STATE_AT = 12


def schedule_optimizer(groups_lr, opt_cls=torch.optim.SGD):
    ps = [torch.nn.Parameter(torch.zeros(1)) for _ in groups_lr]
    if opt_cls is torch.optim.SGD:
        return opt_cls([dict(params=[p], lr=lr, momentum=0.9) for p, lr in zip(ps, groups_lr)])
    return opt_cls([dict(params=[p], lr=lr) for p, lr in zip(ps, groups_lr)])


def lr_history(make, groups_lr, steps=30, opt_cls=torch.optim.SGD, momentum_key=None):
    opt = schedule_optimizer(groups_lr, opt_cls)
    sched = make(opt)
    lrs, moms = [list(sched.get_last_lr())], []
    def mom():
        return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]
    moms.append(mom())
    state = None
    for t in range(steps):
        opt.step()
        sched.step()
        lrs.append(list(sched.get_last_lr()))
        moms.append(mom())
        if t + 1 == STATE_AT:
            state = scheduler_state_to_json(sched.state_dict())
    return {"lrs": lrs, "momentum": moms, "state": state}


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
        # Issue 36's schedulers.
        "multi_step": lr_history(lambda o: S.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=0.5), [0.1, 0.03]),
        "multi_step_unsorted": lr_history(lambda o: S.MultiStepLR(o, milestones=[20, 4]), [0.2]),
        "exponential": lr_history(lambda o: S.ExponentialLR(o, gamma=0.9), [0.1, 0.05]),
        "lambda_one": lr_history(lambda o: S.LambdaLR(o, lambda e: 0.95 ** e * (1 + e % 3)), [0.1, 0.02]),
        "lambda_per_group": lr_history(
            lambda o: S.LambdaLR(o, [lambda e: 1.0 / (e + 1), lambda e: min(1.0, (e + 1) / 5)]), [0.1, 0.3]),
        "lambda_warmup_cosine": lr_history(
            lambda o: S.LambdaLR(o, lambda e: (e + 1) / 10 if e < 10 else 0.5 * (1 + math.cos(math.pi * (e - 10) / 20))),
            [0.1], opt_cls=torch.optim.Adam),
        "chained": lr_history(
            lambda o: S.ChainedScheduler([S.LinearLR(o, start_factor=0.2, total_iters=5), S.ExponentialLR(o, gamma=0.95)]),
            [0.1, 0.02]),
        "chained_cosine_multi_step": lr_history(
            lambda o: S.ChainedScheduler([S.CosineAnnealingLR(o, T_max=10, eta_min=0.001), S.MultiStepLR(o, [8, 16], 0.5)]),
            [0.1]),
        "warmup_cosine_eta_min": lr_history(
            lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.01, total_iters=8),
                                         S.CosineAnnealingLR(o, T_max=22, eta_min=1e-4)], milestones=[8]),
            [0.1, 0.05], opt_cls=torch.optim.Adam),
        "warmup_exponential": lr_history(
            lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.5, total_iters=5), S.ExponentialLR(o, gamma=0.9)],
                                     milestones=[5]),
            [0.1]),
        "warmup_multi_step_three": lr_history(
            lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.25, total_iters=3), S.ExponentialLR(o, gamma=0.8),
                                         S.MultiStepLR(o, [5, 10], 0.3)], milestones=[3, 9]),
            [0.1, 0.01]),
    }
    with open(os.path.join(DATA, "optim_schedules.json"), "w") as f:
        json.dump(out, f, indent=0)


# ReduceLROnPlateau: a metric that falls, stalls with noise, falls again and stalls.
def plateau_metrics():
    g = torch.Generator().manual_seed(3)
    out, v = [], 1.0
    for t in range(60):
        if t < 8 or 25 <= t < 32:
            v *= 0.9
        noise = (torch.rand((), generator=g).item() - 0.5) * 0.02
        out.append(v + noise)
    out[40] = out[41] = out[39]          # exact repeats: "equal is not better"
    return out


PLATEAU_CONFIGS = {
    "defaults": ([0.1, 0.05], dict()),
    "min_rel_cooldown": ([0.1, 0.05], dict(factor=0.5, patience=2, cooldown=1, min_lr=0.01)),
    "min_abs": ([0.1], dict(threshold=0.01, threshold_mode="abs", patience=1, factor=0.3)),
    "max_rel_min_lrs": ([0.1, 0.05], dict(mode="max", factor=0.3, patience=1, cooldown=2, min_lr=[0.02, 0.001],
                                          threshold=0.02)),
    "max_abs_eps": ([0.2], dict(mode="max", threshold=0.001, threshold_mode="abs", patience=0, factor=0.9, eps=0.01)),
}


def record_plateau():
    metrics = plateau_metrics()
    out = {"metrics": metrics, "state_at": STATE_AT * 2, "configs": {}}
    for name, (groups_lr, kw) in PLATEAU_CONFIGS.items():
        opt = schedule_optimizer(groups_lr)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        # Max mode watches an accuracy-like 2 - metric.
        seq = [2.0 - m for m in metrics] if kw.get("mode") == "max" else metrics
        lrs, bad, state = [], [], None
        for t, m in enumerate(seq):
            opt.step()
            sched.step(m)
            lrs.append(list(sched.get_last_lr()))
            bad.append([sched.num_bad_epochs, sched.cooldown_counter])
            if t + 1 == out["state_at"]:
                state = scheduler_state_to_json(sched.state_dict())
        out["configs"][name] = {"groups_lr": groups_lr, "options": kw, "lrs": lrs, "counters": bad,
                                "state": state}
    with open(os.path.join(DATA, "optim_plateau.json"), "w") as f:
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
    save_checkpoint(os.path.join(DATA, "optim_adam_torch.safetensors"), opt)
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
    opt.load_state_dict(optimizer_state_from_file(os.path.join(DATA, "optim_adam_ours.safetensors")))
    _, _, cont = run(cls, groups, 3, params=params, opt=opt, start=3)
    save_file({"continuation": cont}, os.path.join(DATA, "optim_adam_ours_continuation.safetensors"))


# Optimizer + scheduler checkpoints: SGD with momentum (so the file has tensors) under a
# LinearLR warm-up then cosine (SequentialLR) on two groups, and a ReduceLROnPlateau.
def sched_ckpt_setup():
    S = torch.optim.lr_scheduler
    torch.manual_seed(5)
    ps = [torch.nn.Parameter(torch.randn(3)), torch.nn.Parameter(torch.randn(2))]
    opt = torch.optim.SGD([dict(params=[ps[0]], lr=0.1), dict(params=[ps[1]], lr=0.02)], momentum=0.9)
    sched = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=5), S.CosineAnnealingLR(opt, T_max=25)],
                           milestones=[5])
    return ps, opt, sched


def sched_ckpt_steps(ps, opt, sched, start, stop):
    """Steps `start..stop` (gradient `p + 0.1 t`); the learning rates and parameters after each."""
    lrs, params = [], []
    for t in range(start, stop):
        for p in ps:
            p.grad = p.detach() + 0.1 * t
        opt.step()
        sched.step()
        lrs.append(list(sched.get_last_lr()))
        params.append(torch.cat([p.detach().reshape(-1) for p in ps]).tolist())
    return {"lrs": lrs, "params": params}


def record_sched_checkpoint():
    """PyTorch's optimizer + SequentialLR state after 12 steps, written by autograd_convert, and
    PyTorch's steps 12..30 from there."""
    ps, opt, sched = sched_ckpt_setup()
    sched_ckpt_steps(ps, opt, sched, 0, 12)
    save_checkpoint(os.path.join(DATA, "optim_sched_torch.safetensors"), opt, sched)
    out = {"init": [p.detach().tolist() for p in sched_ckpt_setup()[0]],
           "params_at_12": [p.detach().tolist() for p in ps]}
    out.update(sched_ckpt_steps(ps, opt, sched, 12, 30))
    with open(os.path.join(DATA, "optim_sched_torch_continuation.json"), "w") as f:
        json.dump(out, f, indent=0)


def record_sched_ours():
    """Loads the optimizer + scheduler checkpoint our test wrote (after 12 steps) into PyTorch
    and records PyTorch's steps 12..30 from it."""
    with open(os.path.join(DATA, "optim_sched_ours_params.json")) as f:
        saved = json.load(f)
    ps, opt, sched = sched_ckpt_setup()
    with torch.no_grad():
        for p, v in zip(ps, saved["params"]):
            p.copy_(torch.tensor(v, dtype=torch.float32))
    opt_state, sched_state = load_checkpoint(os.path.join(DATA, "optim_sched_ours.safetensors"))
    opt.load_state_dict(opt_state)
    sched.load_state_dict(sched_state)
    with open(os.path.join(DATA, "optim_sched_ours_continuation.json"), "w") as f:
        json.dump(sched_ckpt_steps(ps, opt, sched, 12, 30), f, indent=0)


if __name__ == "__main__":
    if "--ours" in sys.argv:
        record_ours()
        record_sched_ours()
    else:
        record_trajectories()
        record_schedules()
        record_plateau()
        record_clipping()
        record_checkpoint()
        record_sched_checkpoint()
