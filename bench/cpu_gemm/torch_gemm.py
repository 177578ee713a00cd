# The same cases as cpu_gemm_bench.cpp through PyTorch's CPU matmul (MKL or oneDNN under it),
# printed in the same row format, as the reference column of run.sh's table.
#   python3 torch_gemm.py THREADS [quick]
import statistics
import sys
import time

import torch

threads = int(sys.argv[1])
quick = len(sys.argv) > 2 and sys.argv[2] == "quick"
budget = 0.3 if quick else 1.0
if threads > 0:
    torch.set_num_threads(threads)
print(f"info\ttorch\ttorch={torch.__version__} get_num_threads={torch.get_num_threads()} "
      f"mkl={torch.backends.mkl.is_available()} mkldnn={torch.backends.mkldnn.is_available()}")


def median_s(f, budget):
    f()
    t0 = time.perf_counter()
    f()
    one = max(time.perf_counter() - t0, 1e-7)
    reps = int(min(max(budget / one, 3), 200))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def row(label, m, n, k, ta, tb):
    a = torch.rand(k, m).t() if ta else torch.rand(m, k)
    b = torch.rand(n, k).t() if tb else torch.rand(k, n)
    out = torch.empty(m, n)
    s = median_s(lambda: torch.mm(a, b, out=out), budget * (3 if m * n * k >= 1 << 33 else 1))
    print(f"row\ttorch\t{threads}\t{label}\t{2.0 * m * n * k / s / 1e9:.1f}", flush=True)


with torch.no_grad():
    for s in (64, 128, 256, 512, 1024, 2048, 4096):
        row(f"square {s}", s, s, s, False, False)
    row("mlp fwd 64x784 @ (128x784)^T", 64, 128, 784, False, True)
    row("mlp dx 64x128 @ 128x784", 64, 784, 128, False, False)
    row("mlp dW (64x128)^T @ 64x784", 128, 784, 64, True, False)
    a, b = torch.rand(512, 64, 64), torch.rand(512, 64, 64)
    out = torch.empty(512, 64, 64)
    s = median_s(lambda: torch.bmm(a, b, out=out), budget)
    print(f"row\ttorch\t{threads}\tbatch 512 of 64^3, torch.bmm\t{2.0 * 512 * 64**3 / s / 1e9:.1f}")
