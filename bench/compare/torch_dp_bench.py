#!/usr/bin/env python3
"""PyTorch's Python nn.DataParallel on the large-MLP training step of bench/train_step_bench.cpp
(MLP 4096-4096-4096-4096-1000, batch 4096, cross-entropy, SGD lr 0.01 momentum 0.9, fp32), over
1 and 2 GPUs: the figure users of nn.DataParallel know. The same clock as the C++ programs:
groups of 5 steps, each group timed up to the end of every GPU's work, one group of warm-up,
the median of 7. Prints "py_train_step_mlp_large_dp{1,2,4}_ms value ms" lines for table.py.

    python3 bench/compare/torch_dp_bench.py [filter]
"""
import statistics
import sys
import time

import torch
from torch import nn


def step_ms(widths, batch, steps_per_group, groups, gpus):
    torch.manual_seed(0)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    net = nn.Sequential(*layers).to("cuda:0")
    model = nn.DataParallel(net, device_ids=list(range(gpus)))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    xs = [torch.randn(batch, widths[0], device="cuda:0") for _ in range(4)]
    ys = [torch.randint(widths[-1], (batch,), device="cuda:0") for _ in range(4)]
    k = 0

    def sync():
        for i in range(gpus):
            torch.cuda.synchronize(i)

    times = []
    sync()
    for r in range(groups + 1):
        t0 = time.perf_counter()
        for _ in range(steps_per_group):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xs[k % 4]), ys[k % 4])
            loss.backward()
            opt.step()
            k += 1
        sync()
        if r > 0:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times) / steps_per_group


def main():
    flt = sys.argv[1] if len(sys.argv) > 1 else ""
    for g in (1, 2, 4):
        name = "py_train_step_mlp_large_dp%d_ms" % g
        if flt not in name or torch.cuda.device_count() < g:
            continue
        print("%s %.6g ms" % (name, step_ms([4096, 4096, 4096, 4096, 1000], 4096, 5, 7, g)), flush=True)


if __name__ == "__main__":
    main()
