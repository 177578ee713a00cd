#!/usr/bin/env python3
"""Writes tests/fixtures/data_parallel_bn.safetensors: PyTorch's nn.DataParallel over cuda:0 and
cuda:1 training a small model with BatchNorm for a few SGD steps, for
tests/nn/data_parallel_test.cpp (DataParallelGpu.BatchNormStatisticsMatchPyTorch).

    python3 tests/gen/data_parallel_bn.py tests/fixtures/data_parallel_bn.safetensors

Needs PyTorch and 2 GPUs (the safetensors package when present, else the format is written
here: an 8-byte little-endian header length, the JSON header, then the tensors' bytes). The model is Sequential(Linear(4, 6), BatchNorm1d(6),
ReLU(), Linear(6, 2)), trained with SGD(lr=0.1) on mse_loss, one step per batch; the batches
have 9 rows (5 on cuda:0, 4 on cuda:1, as torch.chunk cuts them), so the running statistics
are those of replica 0's 5 rows. The file holds:
    init.<name>   the state dict before training (parameters and buffers)
    x<i>, y<i>    the inputs and targets of step i (float32)
    steps         the number of steps (int64, one element)
    final.<name>  the state dict after training: weights, running_mean, running_var,
                  num_batches_tracked
"""
import sys

import torch
from torch import nn

from safetensors_out import write as write_safetensors


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/data_parallel_bn.safetensors"
    if torch.cuda.device_count() < 2:
        sys.exit("needs 2 GPUs")
    torch.manual_seed(1234)
    net = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    with torch.no_grad():  # BatchNorm's affine parameters away from 1 and 0, so they matter
        net[1].weight.uniform_(0.5, 1.5)
        net[1].bias.uniform_(-0.5, 0.5)
    tensors = {"init." + k: v.detach().clone().contiguous() for k, v in net.state_dict().items()}
    steps = 4
    xs = [torch.randn(9, 4) * 2 + 0.5 for _ in range(steps)]
    ys = [torch.randn(9, 2) for _ in range(steps)]
    net = net.to("cuda:0")
    dp = nn.DataParallel(net, device_ids=[0, 1])
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for i in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(dp(xs[i].to("cuda:0")), ys[i].to("cuda:0"))
        loss.backward()
        opt.step()
        tensors["x%d" % i] = xs[i]
        tensors["y%d" % i] = ys[i]
    tensors["steps"] = torch.tensor([steps], dtype=torch.int64)
    for k, v in net.state_dict().items():
        tensors["final." + k] = v.detach().cpu().clone().contiguous()
    metadata = {"torch": torch.__version__}
    write_safetensors(tensors, out, metadata)
    print("wrote", out, "torch", torch.__version__)


if __name__ == "__main__":
    main()
