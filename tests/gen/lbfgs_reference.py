#!/usr/bin/env python3
"""Prints the values tests/optim/lbfgs_test.cpp expects of L-BFGS: PyTorch's torch.optim.LBFGS
in float64 on the CPU, on three problems (no random numbers), each stepped three times with
step(closure). For each step: the loss step returned, the parameters after it, and the state's
func_evals and n_iter. Runs with PyTorch 1.13 and 2.x alike (LBFGS has not changed between them).

    python3 tests/gen/lbfgs_reference.py

Problems (mirrored in the C++ test):
    rosenbrock        (1 - x)^2 + 100 (y - x^2)^2 from (-1.5, 2), LBFGS(lr=1)
    rosenbrock_wolfe  the same, LBFGS(lr=1, history_size=5, line_search_fn="strong_wolfe")
    least_squares     mean((X w + b - Y)^2), X [6, 3] = sin(0.7 k + 0.3 j), Y [6, 2] =
                      cos(0.5 k - 0.2 j), w [3, 2] = 0.1 (k + 1) (row-major k), b [2] = 0,
                      LBFGS(lr=0.5, max_iter=7, history_size=3, line_search_fn="strong_wolfe")
"""
import torch

D = torch.float64


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


def run(name, params, loss_fn, **opts):
    opt = torch.optim.LBFGS(params, **opts)
    for step in range(3):
        def closure():
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss
        loss = opt.step(closure)
        st = opt.state[params[0]]
        values = torch.cat([p.detach().reshape(-1) for p in params]).tolist()
        print(f"{name} step {step} loss {loss.item()!r} func_evals {st['func_evals']} n_iter {st['n_iter']}")
        print("  params " + ", ".join(repr(v) for v in values))


def main():
    print("torch", torch.__version__)
    p = torch.tensor([-1.5, 2.0], dtype=D, requires_grad=True)
    run("rosenbrock", [p], lambda: rosenbrock(p), lr=1)
    p = torch.tensor([-1.5, 2.0], dtype=D, requires_grad=True)
    run("rosenbrock_wolfe", [p], lambda: rosenbrock(p), lr=1, history_size=5, line_search_fn="strong_wolfe")
    k = torch.arange(6, dtype=D).unsqueeze(1)
    X = torch.sin(0.7 * k + 0.3 * torch.arange(3, dtype=D))
    Y = torch.cos(0.5 * k - 0.2 * torch.arange(2, dtype=D))
    w = (0.1 * (torch.arange(6, dtype=D) + 1)).reshape(3, 2).requires_grad_()
    b = torch.zeros(2, dtype=D, requires_grad=True)
    run("least_squares", [w, b], lambda: ((X @ w + b - Y) ** 2).mean(), lr=0.5, max_iter=7, history_size=3,
        line_search_fn="strong_wolfe")


if __name__ == "__main__":
    main()
