"""Records the PyTorch 2.15 values that tests/amp/main.rs replays: run
`python tests/amp/record_grad_scaler.py` (from the repository root, with PyTorch installed) to
rewrite tests/amp/data/grad_scaler.json.

- `runs`: 30 training steps of a small f32 MLP (tanh hidden layer, mean squared error) under
  `torch.amp.GradScaler("cpu", init_scale=2**127, growth_interval=3)`, so that the first scaled
  gradients overflow and the scale then grows into overflow every few steps: per step the loss, for
  each optimizer whether its step was skipped, the scale and growth tracker after `update()`, and
  every parameter. `sgd` steps SGD with momentum through `scaler.step`; `adam` calls `unscale_`
  and clips the gradient norm first; `two` has SGD on the first layer and Adam on the second
  (some steps skip only Adam's). SGD's learning rate is small (0.002) so that the f32 rounding
  differences of the forward and backward passes stay within the test's 1e-6 over 30 steps.
- `factors`: the scale after each `update()` of a scaler with growth 1.7, backoff 0.3, interval 2
  fed a fixed pattern of finite and infinite gradients (the kernel's f64 products rounded to f32).
- `errors`: PyTorch's messages for the misuses the Rust test repeats.
- each run's `state_dict`: the scaler's state after its last `update()`."""
import json
import math

import torch

STEPS = 30
SGD_LR = 0.002
INIT_SCALE = 2.0**127


def fixed(shape, a, b):
    n = math.prod(shape)
    return (torch.cos(torch.arange(n, dtype=torch.float64) * a + b) * 1.5).to(torch.float32).reshape(shape)


def model_params():
    return [fixed((4, 3), 0.7, 0.1), fixed((3,), 1.3, 0.2), fixed((3, 1), 0.9, 0.3), fixed((1,), 0.5, 0.4)]


X = fixed((8, 4), 0.37, 0.5)
TARGET = (fixed((8, 1), 1.1, 0.6) * 10.0).contiguous()


def loss_of(params):
    w1, b1, w2, b2 = params
    y = torch.tanh(X @ w1 + b1) @ w2 + b2
    d = y - TARGET
    return (d * d).mean()


def run(kind):
    params = [p.clone().requires_grad_(True) for p in model_params()]
    if kind == "sgd":
        opts = [torch.optim.SGD(params, lr=SGD_LR, momentum=0.9)]
    elif kind == "adam":
        opts = [torch.optim.Adam(params, lr=0.05)]
    else:
        opts = [torch.optim.SGD(params[:2], lr=SGD_LR, momentum=0.9), torch.optim.Adam(params[2:], lr=0.05)]
    scaler = torch.amp.GradScaler("cpu", init_scale=INIT_SCALE, growth_interval=3)
    steps = []
    for _ in range(STEPS):
        for o in opts:
            o.zero_grad()
        loss = loss_of(params)
        scaler.scale(loss).backward()
        if kind == "adam":
            scaler.unscale_(opts[0])
            torch.nn.utils.clip_grad_norm_(params, 5.0)
        skipped = []
        for o in opts:
            scaler.step(o)
            found = sum(v.item() for v in scaler._found_inf_per_device(o).values())
            skipped.append(bool(found))
        scaler.update()
        steps.append({
            "loss": loss.item(),
            "skipped": skipped,
            "scale": scaler.get_scale(),
            "growth_tracker": scaler._get_growth_tracker(),
            "params": [p.detach().flatten().tolist() for p in params],
        })
    return {"steps": steps, "state_dict": scaler.state_dict()}


def factors():
    p = torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1000.0, growth_factor=1.7, backoff_factor=0.3,
                                  growth_interval=2)
    scaler.scale(p.sum())
    pattern = [False, False, True, False, False, False, False, True, True, False, False]
    scales = []
    for inf in pattern:
        p.grad = torch.tensor([1.0, math.inf if inf else 2.0])
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return {"pattern": pattern, "scales": scales}


def message(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return str(e)
    raise RuntimeError("no error")


def errors():
    def fresh():
        p = torch.ones(2, requires_grad=True)
        opt = torch.optim.SGD([p], lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        scaler.scale(p.sum()).backward()
        return p, opt, scaler

    def unscale_twice():
        _, opt, s = fresh()
        s.unscale_(opt)
        s.unscale_(opt)

    def unscale_after_step():
        _, opt, s = fresh()
        s.step(opt)
        s.unscale_(opt)

    def step_twice():
        _, opt, s = fresh()
        s.step(opt)
        s.step(opt)

    def update_without_checks():
        _, _, s = fresh()
        s.update()

    def step_without_grads():
        p, opt, s = fresh()
        p.grad = None
        s.step(opt)

    def step_before_scale():
        p = torch.ones(2, requires_grad=True)
        torch.amp.GradScaler("cpu").step(torch.optim.SGD([p], lr=0.1))

    def load_empty():
        torch.amp.GradScaler("cpu").load_state_dict({})

    def fp16():
        p = torch.ones(2, dtype=torch.float16, requires_grad=True)
        s = torch.amp.GradScaler("cpu")
        s.scale(p.float().sum()).backward()
        s.unscale_(torch.optim.SGD([p], lr=0.1))

    cases = {
        "unscale_twice": unscale_twice,
        "unscale_after_step": unscale_after_step,
        "step_twice": step_twice,
        "update_without_checks": update_without_checks,
        "step_without_grads": step_without_grads,
        "step_before_scale": step_before_scale,
        "load_empty": load_empty,
        "fp16": fp16,
        "growth_factor": lambda: torch.amp.GradScaler("cpu", growth_factor=1.0),
        "backoff_factor": lambda: torch.amp.GradScaler("cpu", backoff_factor=1.0),
    }
    return {k: message(f) for k, f in cases.items()}


def main():
    out = {
        "torch": torch.__version__,
        "init_scale": INIT_SCALE,
        "growth_interval": 3,
        "sgd_lr": SGD_LR,
        "init": [p.flatten().tolist() for p in model_params()],
        "x": X.flatten().tolist(),
        "target": TARGET.flatten().tolist(),
        "runs": {k: run(k) for k in ["sgd", "adam", "two"]},
        "factors": factors(),
        "errors": errors(),
    }
    with open("tests/amp/data/grad_scaler.json", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for k, r in out["runs"].items():
        print(k, [("S" if any(s["skipped"]) else ".") for s in r["steps"]].count("S"), "skips;",
              "".join("S" if any(s["skipped"]) else "." for s in r["steps"]),
              "final loss", r["steps"][-1]["loss"], "scale", r["steps"][-1]["scale"])
    print(out["factors"])
    print(json.dumps(out["errors"], indent=1))


if __name__ == "__main__":
    main()
