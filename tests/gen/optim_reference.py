#!/usr/bin/env python3
"""Writes tests/fixtures/optim_reference.safetensors: PyTorch's optimizers (parameters and
state_dicts along a few steps) and learning-rate schedulers (the learning rates, momenta and
state_dicts along a dozen steps), in float64 on the CPU, for tests/optim/optim_reference_test.cpp.

    python3 tests/gen/optim_reference.py tests/fixtures/optim_reference.safetensors

Needs plain PyTorch (no GPU); runs with PyTorch 1.13 and 2.x alike. Uses the safetensors package
when present, else writes the format itself (tests/gen/safetensors_out.py). Every input is built
from linspace, arange, sin and cos (no random numbers). The committed file is whatever the last
run wrote; the PyTorch version that wrote it is in its metadata ("torch"), for information only:
the test expects nothing of it. What differs between PyTorch versions is evened out here: a
"step" is written as an integer (a tensor in some versions, an int in others), and a state
entry of None (PyTorch 1.x's momentum_buffer of SGD without momentum) is left out.

Optimizers. Two parameters w0 [3, 2] and w1 [4] (tensors "input.w0", "input.w1") in two groups,
group 0 {w0} with the case's options and group 1 {w1} with the same options but lr1; the loss
    sum(c_i * w_i + w_i^2 + 0.1 w_i^3) over i = 0, 1   (c_i: "input.c0", "input.c1")
is stepped 5 times (zero_grad, backward, step). For each case <o>:
    <o>.after3.<i>        parameter i after 3 steps, <o>.after5.<i> after 5
    <o>.state.<i>.<name>  each state tensor of parameter i after 3 steps (None entries left out)
and metadata "optimizers": JSON {<o>: {"state": {"<i>": {"step": n}} ("step" only where PyTorch
keeps one), "param_groups": [the groups' entries as PyTorch has them, "params" included]}}.
Cases (mirrored in the C++ test; lr0 / lr1 the groups' learning rates):
    sgd               SGD lr 0.1 / 0.05
    sgd_nesterov      SGD lr 0.1 / 0.05, momentum 0.9, nesterov, weight_decay 0.01
    sgd_dampening     SGD lr 0.05 / 0.02, momentum 0.8, dampening 0.3, maximize
    adam              Adam lr 0.01 / 0.02, betas (0.8, 0.95), eps 1e-6, weight_decay 0.1
    adam_amsgrad      Adam lr 0.05 / 0.02, betas (0.5, 0.9), amsgrad
    adamw             AdamW lr 0.01 / 0.03, weight_decay 0.05
    adamw_amsgrad     AdamW lr 0.02 / 0.01, betas (0.7, 0.8), weight_decay 0.1, amsgrad, maximize
    rmsprop           RMSprop lr 0.01 / 0.005, alpha 0.9, eps 1e-6, weight_decay 0.01, momentum 0.5,
                      centered
    rmsprop_plain     RMSprop lr 0.01 / 0.02 (alpha 0.99)
    rmsprop_maximize  RMSprop lr 0.01 / 0.02, weight_decay 0.1, maximize
    adagrad           Adagrad lr 0.1 / 0.05, lr_decay 0.1, weight_decay 0.05,
                      initial_accumulator_value 0.2
    adagrad_maximize  Adagrad lr 0.05 / 0.1, eps 1e-6, maximize

Schedulers. An SGD over two groups (a parameter [2] each, never stepped): lr 0.1 and 0.02,
momentum 0.9, each scheduler made on a fresh one. For each case <s>, metadata "schedulers":
JSON {<s>: {"lrs": [the groups' lrs after construction, then after each of 12 steps],
"momenta": [the same of the groups' momentum], "state5": the scheduler's state_dict after 5
steps, "optimizer5": {"state": {}, "param_groups": [...]} the optimizer's state_dict then}}.
Entries of a state_dict that are functions or None are left out (null inside a list, as
LambdaLR's lr_lambdas), one-element tensors become numbers, a MultiStepLR's Counter of
milestones becomes the sorted list of milestones (repeats repeated), and infinities become the
strings "inf" / "-inf" (JSON has none). ReduceLROnPlateau steps on the metrics
    PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.9, 0.96, 0.97, 0.5, 0.5, 0.51, 0.52, 0.53]
(max mode: their negatives). Cases (mirrored in the C++ test):
    step          StepLR(step_size=3, gamma=0.5)
    cosine        CosineAnnealingLR(T_max=5, eta_min=0.001) (12 steps: past T_max and back)
    lambda        LambdaLR([lambda e: 0.9 ** e, lambda e: 1 / (1 + e)])
    multistep     MultiStepLR(milestones=[2, 5, 5, 9], gamma=0.3)
    exponential   ExponentialLR(gamma=0.8)
    linear        LinearLR(start_factor=0.25, end_factor=0.75, total_iters=6)
    onecycle_cos  OneCycleLR(max_lr=[0.5, 0.1], total_steps=14, pct_start=0.25,
                  anneal_strategy="cos", base_momentum=0.8, max_momentum=0.9, div_factor=10,
                  final_div_factor=100)
    onecycle_linear_three  OneCycleLR(max_lr=0.4, total_steps=13, pct_start=0.3,
                  anneal_strategy="linear", three_phase=True, base_momentum=0.7,
                  max_momentum=0.95)
    sequential    SequentialLR([LinearLR(start_factor=0.1, total_iters=3), ExponentialLR(gamma=0.9),
                  StepLR(step_size=2, gamma=0.5)], milestones=[4, 8])
    plateau_min_rel  ReduceLROnPlateau(mode="min", factor=0.5, patience=1, threshold=0.01,
                  threshold_mode="rel", cooldown=1, min_lr=[0.03, 0.001])
    plateau_max_abs  ReduceLROnPlateau(mode="max", factor=0.3, patience=0, threshold=0.02,
                  threshold_mode="abs", cooldown=2, min_lr=0.005)
"""
import json
import math
import sys

import torch
from torch.optim import lr_scheduler as S

from safetensors_out import write as write_safetensors

D = torch.float64
STEPS = 5
SCHED_STEPS = 12
PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.9, 0.96, 0.97, 0.5, 0.5, 0.51, 0.52, 0.53]


def inputs():
    w0 = torch.linspace(-1.0, 1.5, 6, dtype=D).reshape(3, 2)
    w1 = torch.sin(torch.arange(4, dtype=D) + 0.5)
    c0 = torch.cos(torch.arange(6, dtype=D) * 0.7).reshape(3, 2)
    c1 = torch.linspace(0.3, -0.6, 4, dtype=D)
    return [w0, w1], [c0, c1]


def plain(v):
    """A JSON value of a state_dict entry: numbers, strings, bools, lists and dicts; tensors of
    one element become numbers; functions and None become None (dropped by the caller)."""
    if isinstance(v, torch.Tensor):
        return plain(v.item()) if v.numel() == 1 else None
    if isinstance(v, bool) or isinstance(v, str) or isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items() if plain(x) is not None}
    return None


def run_optimizer(tensors, name, make, options, lr0, lr1):
    ws, cs = inputs()
    ws = [w.clone().requires_grad_(True) for w in ws]
    opt = make([{"params": [ws[0]], "lr": lr0}, {"params": [ws[1]], "lr": lr1}], **options)
    record = {}
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        loss = sum((c * w + w * w + 0.1 * w * w * w).sum() for w, c in zip(ws, cs))
        loss.backward()
        opt.step()
        if step == 3:
            sd = opt.state_dict()
            state = {}
            for i, st in sd["state"].items():
                entry = {}
                for k, v in st.items():
                    if k == "step":
                        entry["step"] = int(float(v))
                    elif isinstance(v, torch.Tensor):
                        tensors[f"{name}.state.{i}.{k}"] = v.detach().clone()
                    elif v is not None:
                        raise ValueError(f"{name}: unexpected state entry {k}={v!r}")
                if entry or any(isinstance(v, torch.Tensor) for v in st.values()):
                    state[str(i)] = entry
            record = {"state": state, "param_groups": plain(sd["param_groups"])}
        if step in (3, 5):
            for i, w in enumerate(ws):
                tensors[f"{name}.after{step}.{i}"] = w.detach().clone()
    return record


def optimizers(tensors):
    O = torch.optim
    cases = {
        "sgd": (O.SGD, {}, 0.1, 0.05),
        "sgd_nesterov": (O.SGD, dict(momentum=0.9, nesterov=True, weight_decay=0.01), 0.1, 0.05),
        "sgd_dampening": (O.SGD, dict(momentum=0.8, dampening=0.3, maximize=True), 0.05, 0.02),
        "adam": (O.Adam, dict(betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1), 0.01, 0.02),
        "adam_amsgrad": (O.Adam, dict(betas=(0.5, 0.9), amsgrad=True), 0.05, 0.02),
        "adamw": (O.AdamW, dict(weight_decay=0.05), 0.01, 0.03),
        "adamw_amsgrad": (O.AdamW, dict(betas=(0.7, 0.8), weight_decay=0.1, amsgrad=True, maximize=True),
                          0.02, 0.01),
        "rmsprop": (O.RMSprop, dict(alpha=0.9, eps=1e-6, weight_decay=0.01, momentum=0.5, centered=True),
                    0.01, 0.005),
        "rmsprop_plain": (O.RMSprop, {}, 0.01, 0.02),
        "rmsprop_maximize": (O.RMSprop, dict(weight_decay=0.1, maximize=True), 0.01, 0.02),
        "adagrad": (O.Adagrad, dict(lr_decay=0.1, weight_decay=0.05, initial_accumulator_value=0.2), 0.1, 0.05),
        "adagrad_maximize": (O.Adagrad, dict(eps=1e-6, maximize=True), 0.05, 0.1),
    }
    out = {}
    for name, (make, options, lr0, lr1) in cases.items():
        out[name] = run_optimizer(tensors, name, make, options, lr0, lr1)
    return out


def sched_optimizer():
    ps = [torch.zeros(2, dtype=D, requires_grad=True) for _ in range(2)]
    return torch.optim.SGD([{"params": [ps[0]], "lr": 0.1}, {"params": [ps[1]], "lr": 0.02}], lr=0.1,
                           momentum=0.9)


def scheduler_cases():
    return {
        "step": lambda o: S.StepLR(o, step_size=3, gamma=0.5),
        "cosine": lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
        "lambda": lambda o: S.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 / (1 + e)]),
        "multistep": lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
        "exponential": lambda o: S.ExponentialLR(o, gamma=0.8),
        "linear": lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=6),
        "onecycle_cos": lambda o: S.OneCycleLR(o, max_lr=[0.5, 0.1], total_steps=14, pct_start=0.25,
                                               anneal_strategy="cos", base_momentum=0.8, max_momentum=0.9,
                                               div_factor=10, final_div_factor=100),
        "onecycle_linear_three": lambda o: S.OneCycleLR(o, max_lr=0.4, total_steps=13, pct_start=0.3,
                                                        anneal_strategy="linear", three_phase=True,
                                                        base_momentum=0.7, max_momentum=0.95),
        "sequential": lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=3),
                                                   S.ExponentialLR(o, gamma=0.9),
                                                   S.StepLR(o, step_size=2, gamma=0.5)], milestones=[4, 8]),
        "plateau_min_rel": lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=1, threshold=0.01,
                                                         threshold_mode="rel", cooldown=1, min_lr=[0.03, 0.001]),
        "plateau_max_abs": lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=0, threshold=0.02,
                                                         threshold_mode="abs", cooldown=2, min_lr=0.005),
    }


def scheduler_state(sd):
    """A scheduler's state_dict as JSON values (see the docstring)."""
    out = {}
    for k, v in sd.items():
        if k == "milestones" and isinstance(v, dict):  # MultiStepLR's Counter
            out[k] = sorted(m for m, n in v.items() for _ in range(n))
        elif k == "_schedulers":
            out[k] = [scheduler_state(x) for x in v]
        else:
            p = plain(v)
            if p is not None:
                out[k] = p
    return out


def schedulers():
    out = {}
    for name, make in scheduler_cases().items():
        opt = sched_optimizer()
        s = make(opt)
        plateau = name.startswith("plateau")
        sign = -1 if name == "plateau_max_abs" else 1
        lrs = [[g["lr"] for g in opt.param_groups]]
        momenta = [[g["momentum"] for g in opt.param_groups]]
        record = {}
        for step in range(1, SCHED_STEPS + 1):
            opt.step()  # no gradients: changes nothing, keeps the scheduler's order-of-calls check quiet
            if plateau:
                s.step(sign * PLATEAU_METRICS[step - 1])
            else:
                s.step()
            lrs.append([g["lr"] for g in opt.param_groups])
            momenta.append([g["momentum"] for g in opt.param_groups])
            if step == 5:
                record["state5"] = scheduler_state(s.state_dict())
                record["optimizer5"] = {"state": {}, "param_groups": plain(opt.state_dict()["param_groups"])}
        record["lrs"] = lrs
        record["momenta"] = momenta
        out[name] = record
    return out


def main(path):
    tensors = {}
    ws, cs = inputs()
    for i in range(2):
        tensors[f"input.w{i}"] = ws[i]
        tensors[f"input.c{i}"] = cs[i]
    metadata = {
        "optimizers": json.dumps(optimizers(tensors), allow_nan=False),
        "schedulers": json.dumps(schedulers(), allow_nan=False),
        "torch": torch.__version__,
        "generator": "tests/gen/optim_reference.py",
    }
    write_safetensors(tensors, path, metadata)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/optim_reference.safetensors")
