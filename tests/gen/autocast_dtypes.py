"""The result dtype of ops under PyTorch's autocast, for tests/fixtures/autocast_dtypes.txt.

For each device type (cpu; cuda where present), autocast dtype (bfloat16, float16) and case,
runs the op on inputs of the given dtypes inside torch.autocast and prints one line:

    device autocast_dtype op input_dtypes -> output_dtype

input_dtypes is a comma-separated list (f32, f16, bf16, f64, i64); the output is the dtype of
the op's first result. A case PyTorch refuses prints "error" as its output.
    python3 tests/gen/autocast_dtypes.py > tests/fixtures/autocast_dtypes.txt
"""
import torch
import torch.nn.functional as F

NAMES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
         "i64": torch.int64}
SHORT = {v: k for k, v in NAMES.items()}
SHORT[torch.bool] = "bool"


def t(dtype, *shape, device):
    if dtype == "i64":
        return torch.randint(0, 3, shape, device=device)
    return torch.rand(*shape, device=device).to(NAMES[dtype]) + 0.5


# (op, input dtypes, function of the inputs); inputs are made by SHAPES[op] or a 4x4 default.
SHAPES = {
    "conv2d": [(2, 3, 8, 8), (4, 3, 3, 3), (4,)],
    "linear": [(5, 4), (3, 4), (3,)],
    "addmm": [(4, 4), (4, 4), (4, 4)],
    "bmm": [(2, 4, 4), (2, 4, 4)],
    "baddbmm": [(2, 4, 4), (2, 4, 4), (2, 4, 4)],
    "mv": [(4, 4), (4,)],
    "dot": [(4,), (4,)],
    "cross_entropy": [(4, 5), "target"],
    "nll_loss": [(4, 5), "target"],
    "layer_norm": [(4, 6), (6,), (6,)],
    "group_norm": [(2, 4, 3), (4,), (4,)],
    "batch_norm": [(4, 3), (3,), (3,), (3,), (3,)],
    "stack": [(4,), (4,)],
    "cat": [(4,), (4,)],
}

CASES = [
    # lower precision
    ("mm", lambda a, b: torch.mm(a, b)),
    ("matmul", lambda a, b: torch.matmul(a, b)),
    ("bmm", lambda a, b: torch.bmm(a, b)),
    ("addmm", lambda c, a, b: torch.addmm(c, a, b)),
    ("baddbmm", lambda c, a, b: torch.baddbmm(c, a, b)),
    ("mv", lambda a, b: torch.mv(a, b)),
    ("linear", lambda x, w, b: F.linear(x, w, b)),
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b)),
    # float32
    ("softmax", lambda a: torch.softmax(a, 1)),
    ("log_softmax", lambda a: torch.log_softmax(a, 1)),
    ("exp", lambda a: torch.exp(a)),
    ("log", lambda a: torch.log(a)),
    ("pow", lambda a: torch.pow(a, 2.0)),
    ("sum", lambda a: torch.sum(a)),
    ("prod", lambda a: torch.prod(a)),
    ("cumsum", lambda a: torch.cumsum(a, 0)),
    ("norm", lambda a: torch.norm(a)),
    ("rsqrt", lambda a: torch.rsqrt(a)),
    ("reciprocal", lambda a: torch.reciprocal(a)),
    ("mse_loss", lambda a, b: F.mse_loss(a, b)),
    ("l1_loss", lambda a, b: F.l1_loss(a, b)),
    ("smooth_l1_loss", lambda a, b: F.smooth_l1_loss(a, b)),
    ("binary_cross_entropy_with_logits", lambda a, b: F.binary_cross_entropy_with_logits(a, b)),
    ("cross_entropy", lambda a, y: F.cross_entropy(a, y)),
    ("nll_loss", lambda a, y: F.nll_loss(a, y)),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (6,), w, b)),
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b)),
    ("softplus", lambda a: F.softplus(a)),
    # the widest input type
    ("cat", lambda a, b: torch.cat([a, b])),
    ("stack", lambda a, b: torch.stack([a, b])),
    ("where", lambda a, b: torch.where(a > 1.0, a, b)),
    ("dot", lambda a, b: torch.dot(a, b)),
    ("addcmul", lambda a, b, c: torch.addcmul(a, b, c)),
    ("addcdiv", lambda a, b, c: torch.addcdiv(a, b, c)),
    ("atan2", lambda a, b: torch.atan2(a, b)),
    # on no list: the input's type, or ordinary type promotion
    ("add", lambda a, b: a + b),
    ("mul", lambda a, b: a * b),
    ("relu", lambda a: torch.relu(a)),
    ("sigmoid", lambda a: torch.sigmoid(a)),
    ("tanh", lambda a: torch.tanh(a)),
    ("max_pool2d", lambda a: F.max_pool2d(a, 2)),
    ("batch_norm", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=True)),
    ("mean", lambda a: torch.mean(a)),
    ("dropout", lambda a: F.dropout(a, 0.0)),
]

ARITY = {"mm": 2, "matmul": 2, "bmm": 2, "addmm": 3, "baddbmm": 3, "mv": 2, "linear": 3, "conv2d": 3,
         "mse_loss": 2, "l1_loss": 2, "smooth_l1_loss": 2, "binary_cross_entropy_with_logits": 2,
         "cross_entropy": 2, "nll_loss": 2, "layer_norm": 3, "group_norm": 3, "cat": 2, "stack": 2,
         "where": 2, "dot": 2, "addcmul": 3, "addcdiv": 3, "atan2": 2, "add": 2, "mul": 2, "batch_norm": 5}

# the input dtype combinations each case runs with
COMBOS = {1: [["f32"], ["f16"], ["bf16"], ["f64"]],
          2: [["f32", "f32"], ["f16", "f32"], ["bf16", "f32"], ["f16", "f16"], ["f64", "f32"]],
          3: [["f32", "f32", "f32"], ["f16", "f32", "f32"], ["bf16", "bf16", "f32"]],
          5: [["f32"] * 5, ["f16", "f32", "f32", "f32", "f32"]]}


def run(device, dtype):
    for name, fn in CASES:
        shapes = SHAPES.get(name)
        n = ARITY.get(name, 1)
        if name == "max_pool2d":
            shapes = [(1, 2, 4, 4)]
        for combo in COMBOS[n]:
            if shapes and "target" in shapes:
                combo = [combo[0], "i64"]
            args = []
            for k, d in enumerate(combo):
                shape = shapes[k] if shapes else (4, 4)
                if shape == "target":
                    args.append(torch.randint(0, 5, (4,), device=device))
                else:
                    args.append(t(d, *shape, device=device))
            try:
                with torch.autocast(device_type=device, dtype=dtype):
                    out = fn(*args)
                if isinstance(out, (tuple, list)):
                    out = out[0]
                res = SHORT.get(out.dtype, str(out.dtype))
            except Exception:  # noqa: BLE001 - PyTorch refusing the case is the answer
                res = "error"
            print("%s %s %s %s -> %s" % (device, SHORT[dtype], name, ",".join(combo), res))


def main():
    torch.manual_seed(0)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print("# torch %s: device autocast_dtype op input_dtypes -> output_dtype" % torch.__version__)
    for device in devices:
        for dtype in (torch.bfloat16, torch.float16):
            run(device, dtype)


if __name__ == "__main__":
    main()
