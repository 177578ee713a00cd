"""Joins the result lines of wick_compare and torch_compare ("name value unit") into one
markdown table: workload, wick, LibTorch, wick/LibTorch, target
(docs/design.md, "Performance targets"), met.

    python3 table.py compare_wick.txt compare_torch.txt
"""
import sys


def read(path):
    """Each row's value; a row that a program printed in several rounds takes their median."""
    runs = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    runs.setdefault(parts[0], []).append(float(parts[1]))
    except OSError:
        pass
    vals = {}
    for name, v in runs.items():
        v.sort()
        mid = len(v) // 2
        vals[name] = v[mid] if len(v) % 2 else 0.5 * (v[mid - 1] + v[mid])
    return vals


w, t = read(sys.argv[1]), read(sys.argv[2])


def copy_bw():
    """That run's copy bandwidth: LibTorch's (the reference), else wick's."""
    return t.get("copy_fp32_64M_gbs") or w.get("copy_fp32_64M_gbs")


# (name, label, unit, higher_is_better, target(value) -> (bound, text) or None)
def at_least(f, text):
    return lambda: (f(), text)


def ahead_and_near_copy(name):
    """docs/design.md's bandwidth rows: >= 1.0x LibTorch and >= 97% of that run's copy."""
    return lambda: (max(t[name], 0.97 * copy_bw()), ">= 1.0x LibTorch and >= 97% of copy")


ROWS = [
    ("tiny_op_cuda_us", "host time of a + b, 1-element CUDA tensors", "us", False,
     lambda: (1.1 * w["bare_launch_us"], "<= 1.1x bare launch") if "bare_launch_us" in w else None),
    ("bare_launch_us", "bare cudaLaunchKernel, one-element add", "us", False, None),
    ("empty_free_us", "empty({262144}) on CUDA + free (cached)", "us", False,
     lambda: (0.15 * t["empty_free_us"], "<= 0.15x LibTorch")),
    ("add_fp32_64M_gbs", "add fp32 64M", "GB/s", True, ahead_and_near_copy("add_fp32_64M_gbs")),
    ("relu_fp32_64M_gbs", "relu fp32 64M", "GB/s", True, ahead_and_near_copy("relu_fp32_64M_gbs")),
    ("copy_fp32_64M_gbs", "copy fp32 64M", "GB/s", True, ahead_and_near_copy("copy_fp32_64M_gbs")),
    ("cast_fp16_fp32_64M_gbs", "cast fp16->fp32 64M", "GB/s", True, "1.0x"),
    ("sum_fp32_64M_gbs", "sum fp32 64M", "GB/s", True, "1.0x"),
    ("where_fp32_64M_gbs", "where fp32 64M (bool, fp32, fp32)", "GB/s", True, ahead_and_near_copy("where_fp32_64M_gbs")),
    ("clamp_fp32_64M_gbs", "clamp fp32 64M (tensor bounds)", "GB/s", True, ahead_and_near_copy("clamp_fp32_64M_gbs")),
    ("softmax_8192x8192_gbs", "softmax rows 8192x8192 fp32", "GB/s", True, "1.0x"),
    ("cross_entropy_8192x8192_gbs", "cross_entropy forward, logits 8192x8192 fp32 (logits read)", "GB/s", True,
     "1.5x"),
    ("cross_entropy_fwd_bwd_8192x8192_ms", "cross_entropy forward + backward, logits 8192x8192 fp32", "ms", False,
     lambda: (1.0 * t["cross_entropy_fwd_bwd_8192x8192_ms"], "<= 1.0x LibTorch")),
    ("cross_entropy_fwd_bwd_bf16_32768x50304_ms", "cross_entropy forward + backward, bf16 logits 32768x50304", "ms",
     False, lambda: (t["cross_entropy_fwd_bwd_bf16_32768x50304_ms"] / 1.5, "1.5x LibTorch (time <= 0.67x)")),
    ("layer_norm_fwd_bwd_bf16_32768x768_ms", "LayerNorm fwd+bwd, bf16, [32768, 768]", "ms", False,
     lambda: (t["layer_norm_fwd_bwd_bf16_32768x768_ms"] / 1.2, ">= 1.2x LibTorch")),
    ("layer_norm_fwd_bwd_bf16_32768x768_copy_pct",
     "LayerNorm fwd+bwd, bf16, [32768, 768]: copy time of its bytes over its time", "%", True,
     lambda: (90.0, ">= 90% of copy bandwidth")),
    ("matmul_fp32_4096_tflops", "matmul fp32 4096", "TFLOP/s", True, "1.0x"),
    ("matmul_tf32_8192_tflops", "matmul tf32 8192", "TFLOP/s", True, "1.0x"),
    ("matmul_fp16_8192_tflops", "matmul fp16 8192", "TFLOP/s", True, "1.0x"),
    ("matmul_bf16_8192_tflops", "matmul bf16 8192", "TFLOP/s", True, "1.0x"),
    ("sdpa_fwd_bwd_bf16_causal_b32_h12_t1024_d64_tflops",
     "SDPA fwd+bwd bf16 causal B=32 H=12 T=1024 d=64 (LibTorch: its fastest backend)", "TFLOP/s", True, "1.0x"),
    ("sdpa_fwd_bwd_bf16_causal_b32_h12_t4096_d128_tflops",
     "SDPA fwd+bwd bf16 causal B=32 H=12 T=4096 d=128 (LibTorch: its fastest backend)", "TFLOP/s", True, "1.0x"),
    ("lstm_fwd_bwd_fp32_l2_h1024_t128_b64_ms",
     "LSTM fwd+bwd fp32 (no TF32), 2 layers, input/hidden 1024, seq 128, batch 64", "ms", False,
     lambda: (t["lstm_fwd_bwd_fp32_l2_h1024_t128_b64_ms"], "<= 1.0x LibTorch")),
    ("dcgan_step_fp32_b64_ms",
     "DCGAN training step fp32, LibTorch's example's sizes (noise 100, 28x28), batch 64, Adam", "ms", False,
     lambda: (t["dcgan_step_fp32_b64_ms"], "<= 1.0x LibTorch")),
    ("h2d_pageable_gbs", "host->device 256 MB pageable", "GB/s", True, "3x"),
    ("h2d_pinned_gbs", "host->device 256 MB pinned", "GB/s", True, "1.0x"),
    ("d2h_pinned_gbs", "device->host 256 MB into pinned", "GB/s", True, "1.0x"),
    ("pin_memory_256MB_ms", "pin_memory() of 256 MB", "ms", False,
     lambda: (0.75 * t["pin_memory_256MB_ms"], "<= 0.75x LibTorch")),
    ("tiny_op_cpu_us", "host time of a + b, 1-element CPU tensors", "us", False,
     lambda: (0.2 * t["tiny_op_cpu_us"], "<= 0.2x LibTorch")),
    ("cpu_matmul_fp32_2048_gflops", "CPU matmul fp32 2048", "GFLOP/s", True, "0.90"),
    ("cpu_add_16M_gbs", "CPU add fp32 16M", "GB/s", True, "0.95"),
    ("cpu_conv2d_cnn1_fwd_bwd_ms", "CPU conv2d forward + backward, CNN layer 1 (1->32, 3x3, 28x28), batch 64",
     "ms", False, lambda: (1.0 * t["cpu_conv2d_cnn1_fwd_bwd_ms"], "<= 1.0x LibTorch")),
    ("cpu_conv2d_cnn2_fwd_bwd_ms", "CPU conv2d forward + backward, CNN layer 2 (32->64, 3x3, 14x14), batch 64",
     "ms", False, lambda: (1.0 * t["cpu_conv2d_cnn2_fwd_bwd_ms"], "<= 1.0x LibTorch")),
    ("cpu_sum_16M_gbs", "CPU sum fp32 16M", "GB/s", True, "1.0x"),
    ("cpu_softmax_4096x1024_gbs", "CPU softmax rows 4096x1024 fp32", "GB/s", True, "1.0x"),
    ("train_step_mlp_small_us", "training step, MLP 784-128-10, batch 64, SGD momentum", "us", False,
     lambda: (0.3 * t["train_step_mlp_small_us"], "<= 0.3x LibTorch")),
    ("train_step_mlp_small_kernels", "kernels of one small step (its captured graph's kernel nodes)", "kernels",
     False, lambda: (20, "<= 20")),
    ("train_step_mlp_small_graph_us", "the small step replayed as a CUDA graph (LibTorch: its eager step)", "us",
     False, lambda: (0.08 * t["train_step_mlp_small_us"], "<= 0.08x LibTorch's eager step")),
    ("train_step_mlp_large_ms", "training step, MLP 4096x4-1000, batch 4096, fp32", "ms", False,
     lambda: (t["train_step_mlp_large_ms"], "<= LibTorch")),
    # Mixed precision: the same step under autocast (LibTorch: at::autocast in the same C++ program).
    ("train_step_mlp_large_tf32_ms", "the same step with TF32 matmuls (precision \"high\")", "ms", False,
     lambda: (t["train_step_mlp_large_tf32_ms"], "<= LibTorch")),
    ("train_step_mlp_large_amp_bf16_ms", "the same step under bf16 autocast", "ms", False,
     lambda: (0.9 * t["train_step_mlp_large_amp_bf16_ms"], "<= 0.9x LibTorch autocast")),
    ("train_step_mlp_large_amp_fp16_ms", "the same step under fp16 autocast + GradScaler", "ms", False,
     lambda: (t["train_step_mlp_large_amp_fp16_ms"], "<= LibTorch (scaling by hand)")),
    # DataParallel: wick's nn::DataParallel beside LibTorch's data_parallel; the targets are
    # against PyTorch's Python nn.DataParallel (torch_dp_bench.py) and wick's own one-GPU step.
    ("train_step_mlp_large_dp1_ms", "the same step, DataParallel over 1 GPU", "ms", False,
     lambda: (0.9 * t["py_train_step_mlp_large_dp1_ms"], "<= 0.9x PyTorch nn.DataParallel")),
    ("train_step_mlp_large_dp2_ms", "the same step, DataParallel over 2 GPUs", "ms", False,
     lambda: (0.9 * t["py_train_step_mlp_large_dp2_ms"], "<= 0.9x PyTorch nn.DataParallel")),
    ("dp2_speedup", "2-GPU DataParallel speed-up over the 1-GPU step", "x", True,
     lambda: (1.85, ">= 1.85x")),
    ("train_step_mlp_large_dp4_ms", "the same step, DataParallel over 4 GPUs", "ms", False,
     lambda: (0.9 * t["py_train_step_mlp_large_dp4_ms"], "<= 0.9x PyTorch nn.DataParallel")),
    ("dp4_speedup", "4-GPU DataParallel speed-up over the 1-GPU step", "x", True,
     lambda: (3.6, ">= 3.6x")),
    ("py_train_step_mlp_large_dp1_ms", "PyTorch (Python) nn.DataParallel, 1 GPU [LibTorch column]", "ms", False,
     None),
    ("py_train_step_mlp_large_dp2_ms", "PyTorch (Python) nn.DataParallel, 2 GPUs [LibTorch column]", "ms", False,
     None),
    ("py_train_step_mlp_large_dp4_ms", "PyTorch (Python) nn.DataParallel, 4 GPUs [LibTorch column]", "ms", False,
     None),
    # DistributedDataParallel, one process per GPU, global batch 4096: wick's (ddp_step_bench.cpp)
    # beside PyTorch's under torchrun (torch_ddp_bench.py, in the LibTorch column).
    ("ddp_step_mlp_large_1gpu_ms", "the same step, DistributedDataParallel, 1 process", "ms", False,
     lambda: (0.95 * t["py_ddp_step_mlp_large_1gpu_ms"], "<= 0.95x PyTorch DDP")),
    ("ddp_step_mlp_large_2gpu_ms", "the same step, DistributedDataParallel, 2 processes", "ms", False,
     lambda: (0.95 * t["py_ddp_step_mlp_large_2gpu_ms"], "<= 0.95x PyTorch DDP")),
    ("ddp2_speedup", "2-GPU DDP speed-up over the one-GPU step (no DDP)", "x", True,
     lambda: (1.9, ">= 1.9x")),
    ("ddp_step_mlp_large_4gpu_ms", "the same step, DistributedDataParallel, 4 processes", "ms", False,
     lambda: (t["py_ddp_step_mlp_large_4gpu_ms"], "<= PyTorch DDP")),
    ("ddp4_speedup", "4-GPU DDP speed-up over the one-GPU step (no DDP)", "x", True,
     lambda: (3.8, ">= 3.8x")),
]

# PyTorch's DDP rows sit in the LibTorch column under wick's row names.
for n in ("1gpu", "2gpu", "4gpu"):
    if "py_ddp_step_mlp_large_%s_ms" % n in t:
        t["ddp_step_mlp_large_%s_ms" % n] = t["py_ddp_step_mlp_large_%s_ms" % n]

# The graph row's LibTorch column is LibTorch's eager small step (the target's reference).
if "train_step_mlp_small_us" in t:
    t["train_step_mlp_small_graph_us"] = t["train_step_mlp_small_us"]

# Derived: the one-GPU step's time over the 2- and 4-GPU steps', for each library.
for vals in (w, t):
    for g in (2, 4):
        one = vals.get("train_step_mlp_large_ms")
        if one and vals.get("train_step_mlp_large_dp%d_ms" % g):
            vals["dp%d_speedup" % g] = one / vals["train_step_mlp_large_dp%d_ms" % g]
        if one and vals.get("ddp_step_mlp_large_%dgpu_ms" % g):
            vals["ddp%d_speedup" % g] = one / vals["ddp_step_mlp_large_%dgpu_ms" % g]


def target_of(name, spec):
    """(bound, text) for a row; None specs mean >= 98% of LibTorch; strings scale LibTorch."""
    if name not in t and (spec is None or isinstance(spec, str)):
        return None
    if spec is None:
        return 0.98 * t[name], ">= 98% of LibTorch"
    if isinstance(spec, str):
        k = float(spec.rstrip("x"))
        return k * t[name], (">= %gx LibTorch" % k) if spec.endswith("x") else (">= %d%% of LibTorch" % round(100 * k))
    try:
        return spec()
    except (KeyError, TypeError):
        return None


def fmt(v):
    return "-" if v is None else ("%.3g" % v if v < 100 else "%.0f" % v)


print("| workload | unit | wick | LibTorch | wick/LibTorch | target | met |")
print("|---|---|---|---|---|---|---|")
for name, label, unit, higher, spec in ROWS:
    if name not in w and name not in t:
        continue
    wv, tv = w.get(name), t.get(name)
    ratio = "%.2f" % (wv / tv) if wv and tv else "-"
    if name == "bare_launch_us":
        print("| %s | %s | %s | %s | %s | (the limit) | |" % (label, unit, fmt(wv), fmt(tv), ratio))
        continue
    tgt = target_of(name, spec)
    if tgt is None or wv is None:
        print("| %s | %s | %s | %s | %s | - | |" % (label, unit, fmt(wv), fmt(tv), ratio))
        continue
    bound, text = tgt
    met = (wv >= bound) if higher else (wv <= bound)
    print("| %s | %s | %s | %s | %s | %s (%s) | %s |" % (label, unit, fmt(wv), fmt(tv), ratio, text, fmt(bound),
                                                       "yes" if met else "NO"))
