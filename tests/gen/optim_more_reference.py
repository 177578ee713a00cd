#!/usr/bin/env python3
"""Prints PyTorch's values for the cases of tests/optim/optim_more_test.cpp, to check the
update rules and closed forms written out there against PyTorch itself:

    python3 tests/gen/optim_more_reference.py > optim_more_reference.txt

Needs PyTorch 2.x (maximize and decoupled_weight_decay on NAdam and RAdam), CPU only. Each line
is "<case>: <values>", the numbers with repr (17 significant digits).

Optimizers: one float64 parameter p = [0.5, -1.5, 2.0, 0.25] on the loss sum(c * p^2),
c = [1.0, 0.5, 2.0, 3.0], stepped as the C++ test does (zero_grad, backward, step); printed:
p after the test's number of steps (and ASGD's ax and eta, NAdam's mu_product).

Schedulers: an SGD over one parameter (two groups where the test has two), the learning rate
(and momentum or beta1) after construction and after each step().
"""
import torch

torch.set_default_dtype(torch.float32)  # the scalar state (mu_product, eta, mu) is float32

P0 = [0.5, -1.5, 2.0, 0.25]
C = torch.tensor([1.0, 0.5, 2.0, 3.0], dtype=torch.float64)


def fmt(values):
    return "[" + ", ".join(repr(float(v)) for v in values) + "]"


def run(make, steps, extra=None):
    p = torch.tensor(P0, dtype=torch.float64, requires_grad=True)
    opt = make([p])
    for _ in range(steps):
        opt.zero_grad()
        (C * p * p).sum().backward()
        opt.step()
    out = fmt(p.detach().tolist())
    if extra:
        out += " " + extra(opt.state[p])
    return out


def optimizers():
    O = torch.optim
    cases = []
    for lr, b1, b2, eps, wd, mx in [(2e-3, 0.9, 0.999, 1e-8, 0, False), (0.05, 0.8, 0.99, 1e-3, 0, False),
                                    (0.05, 0.9, 0.999, 1e-8, 0.1, False), (0.02, 0.9, 0.999, 1e-8, 0.05, True)]:
        cases.append((f"adamax lr={lr} betas=({b1},{b2}) eps={eps} wd={wd} maximize={mx} steps=6",
                      lambda ps, a=(lr, b1, b2, eps, wd, mx): O.Adamax(ps, lr=a[0], betas=(a[1], a[2]), eps=a[3],
                                                                       weight_decay=a[4], maximize=a[5]), 6, None))
    for lr, b1, b2, eps, wd, psi, dec, mx in [(2e-3, 0.9, 0.999, 1e-8, 0, 4e-3, False, False),
                                             (0.05, 0.8, 0.99, 1e-3, 0, 0.1, False, False),
                                             (0.05, 0.9, 0.999, 1e-8, 0.1, 4e-3, False, False),
                                             (0.05, 0.9, 0.999, 1e-8, 0.1, 4e-3, True, False),
                                             (0.02, 0.9, 0.999, 1e-8, 0.01, 4e-3, True, True)]:
        cases.append((f"nadam lr={lr} betas=({b1},{b2}) eps={eps} wd={wd} momentum_decay={psi} decoupled={dec} "
                      f"maximize={mx} steps=6",
                      lambda ps, a=(lr, b1, b2, eps, wd, psi, dec, mx): O.NAdam(
                          ps, lr=a[0], betas=(a[1], a[2]), eps=a[3], weight_decay=a[4], momentum_decay=a[5],
                          decoupled_weight_decay=a[6], maximize=a[7]), 6,
                      lambda st: "mu_product=" + repr(float(st["mu_product"]))))
    for lr, b1, b2, eps, wd, dec, mx in [(1e-3, 0.9, 0.999, 1e-8, 0, False, False), (0.05, 0.9, 0.9, 1e-3, 0, False, False),
                                        (0.05, 0.9, 0.999, 1e-8, 0.1, False, False),
                                        (0.05, 0.9, 0.99, 1e-8, 0.1, True, False),
                                        (0.02, 0.8, 0.95, 1e-8, 0.01, True, True)]:
        cases.append((f"radam lr={lr} betas=({b1},{b2}) eps={eps} wd={wd} decoupled={dec} maximize={mx} steps=8",
                      lambda ps, a=(lr, b1, b2, eps, wd, dec, mx): O.RAdam(
                          ps, lr=a[0], betas=(a[1], a[2]), eps=a[3], weight_decay=a[4], decoupled_weight_decay=a[5],
                          maximize=a[6]), 8, None))
    for lr, em, ep, smin, smax, mx in [(0.01, 0.5, 1.2, 1e-6, 50, False), (0.4, 0.3, 1.5, 1e-6, 50, False),
                                       (0.3, 0.5, 2.0, 0.05, 0.5, False), (0.1, 0.5, 1.2, 1e-6, 50, True)]:
        cases.append((f"rprop lr={lr} etas=({em},{ep}) step_sizes=({smin},{smax}) maximize={mx} steps=10",
                      lambda ps, a=(lr, em, ep, smin, smax, mx): O.Rprop(
                          ps, lr=a[0], etas=(a[1], a[2]), step_sizes=(a[3], a[4]), maximize=a[5]), 10, None))
    for lr, lambd, alpha, t0, wd, mx in [(0.01, 1e-4, 0.75, 1e6, 0, False), (0.05, 0.1, 0.5, 2, 0, False),
                                         (0.05, 0.01, 0.75, 3, 0.1, False), (0.02, 1e-3, 0.75, 1, 0.05, True)]:
        cases.append((f"asgd lr={lr} lambd={lambd} alpha={alpha} t0={t0} wd={wd} maximize={mx} steps=7",
                      lambda ps, a=(lr, lambd, alpha, t0, wd, mx): O.ASGD(
                          ps, lr=a[0], lambd=a[1], alpha=a[2], t0=a[3], weight_decay=a[4], maximize=a[5]), 7,
                      lambda st: "ax=" + fmt(st["ax"].tolist()) + " eta=" + repr(float(st["eta"]))))
    for name, make, steps, extra in cases:
        print(name + ": " + run(make, steps, extra))


def sgd(lr=1.0, momentum=0.9, groups=None):
    if groups:
        return torch.optim.SGD([{"params": [torch.zeros(1, requires_grad=True)], **g} for g in groups], lr=lr,
                               momentum=momentum)
    return torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr, momentum=momentum)


def sequence(name, opt, sched, steps, key="momentum"):
    lrs = [[g["lr"] for g in opt.param_groups]]
    moms = [[g[key][0] if key == "betas" else g.get(key, 0) for g in opt.param_groups]]
    for e in range(1, steps + 1):
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append([g[key][0] if key == "betas" else g.get(key, 0) for g in opt.param_groups])
    print(name + " lr: " + "; ".join(fmt(v) for v in lrs))
    print(name + " momentum: " + "; ".join(fmt(v) for v in moms))


def schedulers():
    S = torch.optim.lr_scheduler
    o = sgd(groups=[{"lr": 0.1}, {"lr": 0.5}])
    s = S.MultiplicativeLR(o, [lambda e: 0.95, lambda e: 1.0 / (e + 1)])
    sequence("MultiplicativeLR", o, s, 8)
    o = sgd(0.3)
    sequence("ConstantLR factor=0.25 total_iters=4", o, S.ConstantLR(o, factor=0.25, total_iters=4), 8)
    o = sgd(0.3)
    sequence("ConstantLR defaults", o, S.ConstantLR(o), 7)
    o = sgd(0.4)
    sequence("PolynomialLR total_iters=6 power=2", o, S.PolynomialLR(o, total_iters=6, power=2.0), 9)
    o = sgd(0.4)
    sequence("PolynomialLR defaults", o, S.PolynomialLR(o), 6)
    for mode, up, down, gamma in [("triangular", 4, 4, 1.0), ("triangular", 3, 5, 1.0), ("triangular2", 4, 2, 1.0),
                                  ("exp_range", 4, 4, 0.9)]:
        o = sgd(5.0, 0.5)
        sequence(f"CyclicLR mode={mode} up={up} down={down} gamma={gamma}", o,
                 S.CyclicLR(o, 0.1, 1.0, step_size_up=up, step_size_down=down, mode=mode, gamma=gamma), 25)
    p0, p1 = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    o = torch.optim.NAdam([{"params": [p0]}, {"params": [p1], "betas": (0.5, 0.99)}], lr=1.0)
    sequence("CyclicLR NAdam per-group", o,
             S.CyclicLR(o, [0.01, 0.02], [0.1, 0.2], step_size_up=2, base_momentum=[0.8, 0.7],
                        max_momentum=[0.95, 0.9]), 6, key="betas")
    o = sgd(1.0, 0.0)
    sequence("CyclicLR scale_fn 1/(1+x) iterations", o,
             S.CyclicLR(o, 0.0, 1.0, step_size_up=2, cycle_momentum=False, scale_fn=lambda x: 1 / (1 + x),
                        scale_mode="iterations"), 5)
    o = sgd(0.5)
    s = S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01)
    sequence("CosineAnnealingWarmRestarts T_0=3 T_mult=2 eta_min=0.01", o, s, 22)
    for epoch in [4.5, 0.25, 21.75]:
        s.step(epoch)
        print(f"CosineAnnealingWarmRestarts step({epoch}): lr {o.param_groups[0]['lr']!r} T_i {s.T_i} "
              f"last_epoch {s.last_epoch}")
    s.step()
    print(f"CosineAnnealingWarmRestarts step() after 21.75: lr {o.param_groups[0]['lr']!r}")
    o = sgd(0.5)
    s = S.CosineAnnealingWarmRestarts(o, T_0=4)
    sequence("CosineAnnealingWarmRestarts T_0=4", o, s, 10)
    s.step(7.25)
    print(f"CosineAnnealingWarmRestarts T_0=4 step(7.25): lr {o.param_groups[0]['lr']!r}")
    o = sgd(1.0)
    chain = S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=2), S.ExponentialLR(o, gamma=0.9)])
    sequence("ChainedScheduler ConstantLR(0.1, 2) + ExponentialLR(0.9)", o, chain, 8)


if __name__ == "__main__":
    print("torch " + torch.__version__)
    optimizers()
    schedulers()
