"""Exchanges weights between PyTorch and wick through .safetensors files.

Run by ctest (safetensors_torch) with the path of safetensors_torch_prog (safetensors_torch_prog.cpp):
1. every dtype both ways: tensors saved by PyTorch's safetensors package, loaded and saved again by
   wick, read back by the package bit for bit, with the metadata;
2. the Fashion-MNIST CNN trained by PyTorch, saved by safetensors.torch.save_file, loaded into
   wick's same model: the same logits on the test set (float32 rounding), on the CPU and on a GPU;
3. the CNN trained by wick, saved by wick::save, loaded into PyTorch's model (strict): the same
   logits.
The test set comes from WICK_FMNIST_DIR, Debian's dataset folder or .deps/fmnist; without one, 10000
random images stand in. Exits 77 (ctest: skipped) when python3 has no torch or no safetensors.
"""
import gzip
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn as nn
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

PROG = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*args):
    r = subprocess.run([PROG, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{PROG} {' '.join(args)} failed ({r.returncode}): {r.stderr}")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_mnist():
    repo = os.path.dirname(os.path.dirname(HERE))
    for d in [os.environ.get("WICK_FMNIST_DIR", ""), "/usr/share/datasets/fashion-mnist",
              os.path.join(repo, ".deps", "fmnist")]:
        if d and os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte.gz")):
            sets = []
            for prefix in ["train", "t10k"]:
                x = read_idx(os.path.join(d, f"{prefix}-images-idx3-ubyte.gz")).astype(np.float32) / 255.0
                y = read_idx(os.path.join(d, f"{prefix}-labels-idx1-ubyte.gz")).astype(np.int64)
                sets.append(((torch.from_numpy(x) - 0.2860) / 0.3530, torch.from_numpy(y)))
            print(f"data: Fashion-MNIST from {d}")
            return sets
    print("data: no Fashion-MNIST here, random images")
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(n, 28, 28, generator=g), torch.randint(0, 10, (n,), generator=g)) for n in (12800, 10000)]


def make_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def logits(model, x, device):
    model.eval().to(device)
    with torch.no_grad():
        return torch.cat([model(x[i:i + 1000].to(device)).cpu() for i in range(0, len(x), 1000)])


def compare(a, b, what):
    # Float32 rounding of a 4-layer network: differences of a few ulps of the logits' scale.
    scale = b.abs().max().item()
    err = (a - b).abs().max().item()
    agree = (a.argmax(1) == b.argmax(1)).float().mean().item()
    check(err <= 1e-4 * max(scale, 1.0) and agree >= 0.999,
          f"{what}: max |difference| {err:.3g} (logits up to {scale:.3g}), argmax agrees on {100 * agree:.2f}%")


torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
tmp = tempfile.mkdtemp(prefix="wick_st_torch_")
path = lambda name: os.path.join(tmp, name)

# 1. Every dtype both ways, bit for bit.
g = torch.Generator().manual_seed(0)
base = torch.randn(3, 5, generator=g) * 100
tensors = {
    "f32": base.float(), "f64": base.double() / 7, "f16": (base / 10).half(), "bf16": base.bfloat16(),
    "i8": base.clamp(-128, 127).to(torch.int8), "i16": (base * 100).to(torch.int16),
    "i32": (base * 1e6).to(torch.int32), "i64": (base.double() * 1e15).to(torch.int64),
    "u8": base.abs().clamp(0, 255).to(torch.uint8), "bool": base > 0,
    "empty": torch.zeros(0, 4), "scalar": torch.tensor(2.5),
}
save_file(tensors, path("dtypes.safetensors"), metadata={"from": "pytorch"})
run("roundtrip", path("dtypes.safetensors"), path("dtypes_wick.safetensors"))
back = load_file(path("dtypes_wick.safetensors"))
check(sorted(back) == sorted(tensors), "wick wrote every tensor back")
for name, t in tensors.items():
    b = back.get(name)
    check(b is not None and b.dtype == t.dtype and b.shape == t.shape and torch.equal(b, t),
          f"{name} ({t.dtype}, {tuple(t.shape)}) is the same after wick::load and wick::save")
with safe_open(path("dtypes_wick.safetensors"), framework="pt") as f:
    check(f.metadata() == {"from": "pytorch"}, "the metadata came through")

(train_x, train_y), (test_x, test_y) = fashion_mnist()
train_x, test_x = train_x.unsqueeze(1).contiguous(), test_x.unsqueeze(1).contiguous()
save_file({"x": test_x}, path("test.safetensors"))

# 2. PyTorch's trained CNN into wick.
torch.manual_seed(0)
model = make_cnn()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for i in range(0, min(len(train_x), 64 * 200), 64):
    opt.zero_grad()
    nn.functional.cross_entropy(model(train_x[i:i + 64]), train_y[i:i + 64]).backward()
    opt.step()
save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path("torch_cnn.safetensors"))
for device in devices:
    ref = logits(model, test_x, device)
    run("forward", path("torch_cnn.safetensors"), path("test.safetensors"), path("wick_out.safetensors"), device)
    out = load_file(path("wick_out.safetensors"))["y"]
    acc_t = (ref.argmax(1) == test_y).float().mean().item()
    acc_w = (out.argmax(1) == test_y).float().mean().item()
    print(f"     test accuracy, {device}: PyTorch {100 * acc_t:.2f}%, wick with PyTorch's weights {100 * acc_w:.2f}%")
    compare(out, ref, f"PyTorch's CNN in wick on {device}")

# 3. wick's trained CNN into PyTorch.
save_file({"x": train_x[:64 * 200].contiguous(), "labels": train_y[:64 * 200].contiguous()},
          path("train.safetensors"))
for device in devices:
    run("train", path("train.safetensors"), path("test.safetensors"), path("wick_cnn.safetensors"),
        path("wick_out.safetensors"), device)
    out = load_file(path("wick_out.safetensors"))["y"]
    model = make_cnn()
    model.load_state_dict(load_file(path("wick_cnn.safetensors")), strict=True)
    ref = logits(model, test_x, device)
    acc_w = (out.argmax(1) == test_y).float().mean().item()
    print(f"     test accuracy of wick's CNN trained on {device}: {100 * acc_w:.2f}%")
    compare(out, ref, f"wick's CNN (trained on {device}) in PyTorch on {device}")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
