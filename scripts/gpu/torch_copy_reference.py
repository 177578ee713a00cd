"""PyTorch's figures for the copies that bench/cuda_runtime_bench.cpp measures, on the same
machine in the same run, so that wick's numbers can be read as ratios.
    python3 scripts/gpu/torch_copy_reference.py
"""
import statistics
import time

import torch


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    for nbytes in (1 << 20, 256 << 20):
        n = nbytes // 4
        for pinned in (False, True):
            host = torch.rand(n)
            if pinned:
                host = host.pin_memory()
            dev = host.to("cuda")
            reps = 200 if nbytes < (8 << 20) else 20
            h2d = timed(lambda: dev.copy_(host, non_blocking=pinned), reps)
            d2h = timed(lambda: host.copy_(dev, non_blocking=pinned), reps)
            kind = "pinned" if pinned else "pageable"
            print(f"torch {nbytes >> 20:4d} MiB {kind:8s} H2D {nbytes / h2d / 1e9:6.1f} GB/s  "
                  f"D2H {nbytes / d2h / 1e9:6.1f} GB/s")
    host = torch.rand(64 << 20)
    host.pin_memory()
    print(f"torch pin_memory 256 MiB: {timed(lambda: host.pin_memory(), 5) * 1e3:.1f} ms")
    t = timed(lambda: torch.empty(262144, device="cuda"), 20000)
    print(f"torch.empty(262144, cuda) + free from Python: {t * 1e6:.2f} us (Python overhead included)")


if __name__ == "__main__":
    main()
