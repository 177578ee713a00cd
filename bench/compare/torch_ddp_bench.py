#!/usr/bin/env python3
"""PyTorch's DistributedDataParallel on the large-MLP step of bench/ddp_step_bench.cpp, one
process per GPU under torchrun, global batch 4096 split over the processes, nccl backend.
The same clock as the C++ programs: groups of 5 steps, each timed up to the end of this GPU's
work, one warm-up group, the median of 7. Rank 0 prints "py_ddp_step_mlp_large_<N>gpu_ms value ms".

    torchrun --nproc-per-node 2 bench/compare/torch_ddp_bench.py
"""
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn


def main():
    dist.init_process_group("nccl")
    world, rank = dist.get_world_size(), dist.get_rank()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    widths = [4096, 4096, 4096, 4096, 1000]
    batch = 4096 // world
    torch.manual_seed(0)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    net = nn.Sequential(*layers).to(dev)
    model = nn.parallel.DistributedDataParallel(net, device_ids=[local])
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    torch.manual_seed(1 + rank)
    xs = [torch.randn(batch, widths[0], device=dev) for _ in range(4)]
    ys = [torch.randint(widths[-1], (batch,), device=dev) for _ in range(4)]
    k = 0
    times = []
    torch.cuda.synchronize(dev)
    for r in range(8):
        t0 = time.perf_counter()
        for _ in range(5):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xs[k % 4]), ys[k % 4])
            loss.backward()
            opt.step()
            k += 1
        torch.cuda.synchronize(dev)
        if r > 0:
            times.append((time.perf_counter() - t0) * 1e3)
    if rank == 0:
        print("py_ddp_step_mlp_large_%dgpu_ms %.6g ms" % (world, statistics.median(times) / 5), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
