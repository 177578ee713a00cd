#!/usr/bin/env python3
"""Writes tests/fixtures/print_cases.txt: tensors with exact values and PyTorch's repr of each.

    python3 tests/gen/print_cases.py > tests/fixtures/print_cases.txt

Needs PyTorch (the file in the repo was made with torch 2.11). Cases on CUDA are written only
where a GPU is present. Every input is written out exactly, so the C++ test
(tests/core/print_test.cpp) rebuilds the same tensor and compares wick's repr with the text
below it. Format of one case:

    case <name>
    dtype <float32 | int64 | ...>
    device <cpu | cuda:0>
    sizes <d0> <d1> ...          (nothing after "sizes" for a 0-d tensor)
    grad <none | leaf | add_self | sum | mul2>   (what is done to the tensor before printing)
    default_dtype <float32 | float64>   (the default dtype while printing)
    values <v0> <v1> ...         (row-major; floats as Python's repr, bools as 0/1)
    repr
    <PyTorch's repr, any number of lines, with "dtype=torch." written "dtype=">
    end
"""

import math
import re
import sys

import torch

inf = math.inf
nan = math.nan

CASES = []


def case(name, values, dtype=torch.float32, sizes=None, grad="none", device="cpu",
         default_dtype=torch.float32):
    """values: a flat list (or a tensor); sizes: the shape (default: 1-D of len(values))."""
    if isinstance(values, torch.Tensor):
        t = values.to(dtype)
        if sizes is not None:
            t = t.reshape(sizes)
    else:
        if sizes is None:
            sizes = [len(values)]
        t = torch.tensor(values, dtype=dtype).reshape(sizes)
    CASES.append((name, t, grad, device, default_dtype))


def seq(n, f):
    return [f(i) for i in range(n)]


def mixed(i):
    # Deterministic values in [-1, 1) with four or more significant decimals.
    return ((i * 37) % 101) / 101.0 * 2.0 - 1.0


# ---- the documented examples of tensor creation
case("api_new_full_03", [0.3] * 6, sizes=[3, 2])
case("api_new_full_minus5", [-5.0] * 6, sizes=[3, 2])
case("api_new_tensor_long", [1, 2, 3], torch.int64, sizes=[1, 3])
case("api_ones_2x3", [1.0] * 6, sizes=[2, 3])
case("api_weight", [1.0, 3.0])
case("api_rand_2x2", [0.0024, 0.6778, 0.2441, 0.6812], sizes=[2, 2])

# ---- 0-d tensors
case("scalar_whole", [3.0], sizes=[])
case("scalar_fraction", [0.1234567], sizes=[])
case("scalar_int", [7], torch.int64, sizes=[])
case("scalar_int32", [-7], torch.int32, sizes=[])
case("scalar_bool", [True], torch.bool, sizes=[])
case("scalar_neg_zero", [-0.0], sizes=[])
case("scalar_nan", [nan], sizes=[])
case("scalar_neg_inf", [-inf], sizes=[])
case("scalar_small", [1e-5], sizes=[])
case("scalar_big", [123456789.0], sizes=[])
case("scalar_half", [0.1], torch.float16, sizes=[])
case("scalar_bfloat16_big", [3.0e20], torch.bfloat16, sizes=[])
case("scalar_double", [2.5], torch.float64, sizes=[])

# ---- fixed-point floats, whole floats
case("fraction_row", [0.1, 0.25, -1.5, 2.0])
case("whole_with_zero", [0.0, 100.0])
case("whole_negative", [-1.0, 2.0, -300.0])
case("whole_widths", [-1.0, 10.0, 5.0])
case("whole_big_fixed", [10000000.0, 20000000.0, -5.0], torch.float64)
case("whole_neg_zero", [-0.0, 5.0])
case("fraction_wide", [99999999.5, 2.0], torch.float64)
case("rounding_ties", [1.03125, 2.09375, 0.00015, 0.99995])
case("mixed_2x5", seq(10, mixed), sizes=[2, 5])

# ---- scientific notation: ratio > 1000, max > 1e8, min < 1e-4
case("ratio_1000_whole", [1.0, 1000.0])
case("ratio_1001_whole", [1.0, 1001.0])
case("ratio_fraction", [0.5, 600.25])
case("ratio_fraction_below", [0.5, 499.75])
case("max_1e8_whole", [100000000.0])
case("max_above_1e8", [123456789.0, 1.0], torch.float64)
case("max_above_1e8_fraction", [123456789.5, 1.5], torch.float64)
case("min_1e-4_float32", [1e-4, 0.5])
case("min_1e-4_float64", [1e-4, 0.5], torch.float64)
case("min_below_1e-4", [1e-5, 1.5])
case("sci_with_zero", [0.0, 1e-5, 1.0])
case("sci_neg_zero", [-0.0, 1e-5])
case("sci_negative", [-1e-5, 1e5, 3.25])
case("sci_huge_exponent", [1e300, 1e-300, -2.5e-200], torch.float64)
case("sci_with_nan", [1e10, nan, -inf])
case("sci_whole_big", [1e15, 2.0, -3.0])

# ---- nan, inf, zeros
case("nonfinite_whole", [1.0, nan, inf, -inf])
case("nonfinite_fraction", [0.5, nan, -inf])
case("only_nonfinite", [nan, inf, -inf])
case("zeros", [0.0, 0.0, 0.0])
case("signed_zeros", [0.0, -0.0])
case("neg_zero_fraction", [-0.0, 1.5, -2.25])

# ---- other float dtypes
case("double_fraction", [0.123456789, -1.0, 2.5], torch.float64)
case("double_whole", [1.0, 2.0], torch.float64)
case("half_values", [0.1, 65504.0, -2.0], torch.float16)
case("half_fraction", [0.1, 0.2, 0.3], torch.float16)
case("bfloat16_values", [0.1, 1e30, -3.0], torch.bfloat16)
case("bfloat16_whole", [1.0, 256.0, -8.0], torch.bfloat16)

# ---- integers and bools
case("whole_from_int_list", [-100, 5, 20])
case("int64_extremes", [9223372036854775807, -9223372036854775808, 0], torch.int64)
case("int32_row", [1, -2, 3], torch.int32)
case("int16_row", [300, -32768], torch.int16)
case("int8_row", [-128, 127], torch.int8)
case("uint8_all", list(range(256)), torch.uint8)
case("bool_row", [True, False, True], torch.bool)
case("bool_all_true", [True, True], torch.bool)
case("bool_2x3", [True, False, False, True, True, False], torch.bool, sizes=[2, 3])
case("int64_big_rows", seq(12, lambda i: (i - 6) * 1000000007), torch.int64, sizes=[3, 4])

# ---- empty tensors
case("empty_float", [], sizes=[0])
case("empty_0x3", [], sizes=[0, 3])
case("empty_int64", [], torch.int64, sizes=[0])
case("empty_bool", [], torch.bool, sizes=[0])
case("empty_double_2x0x3", [], torch.float64, sizes=[2, 0, 3])
case("empty_half_3x0", [], torch.float16, sizes=[3, 0])
case("empty_int32_0x2", [], torch.int32, sizes=[0, 2])

# ---- line wrapping
case("wrap_fraction_30", seq(30, lambda i: i * 0.5 + 0.25))
case("wrap_int_100", list(range(100)), torch.int64)
case("wrap_2x25", seq(50, lambda i: mixed(i) * 10), sizes=[2, 25])
case("wrap_3x18_int", seq(54, lambda i: (i * 7919) % 100003 - 50000), torch.int64, sizes=[3, 18])
case("wrap_suffix_double", seq(9, lambda i: i / 8.0), torch.float64)
case("wrap_suffix_int32", seq(17, lambda i: i * 1000 - 8000), torch.int32)
case("wrap_suffix_half_2d", seq(18, lambda i: mixed(i)), torch.float16, sizes=[2, 9])
case("wrap_sci_row", seq(12, lambda i: (i + 1) * 10.0 ** (i - 6)))

# ---- nested brackets
case("int_2x3x4", list(range(24)), torch.int64, sizes=[2, 3, 4])
case("float_2x2x2x2", seq(16, lambda i: i * 0.75 - 3), sizes=[2, 2, 2, 2])
case("float_1x1x3", [1.5, -2.0, 3.25], sizes=[1, 1, 3])
case("bool_2x1x2", [True, False, False, True], torch.bool, sizes=[2, 1, 2])

# ---- summarization past 1000 elements
case("sum_int_1001", list(range(1001)), torch.int64)
case("sum_float_2000", seq(2000, lambda i: i * 0.5))
case("sum_hidden_big", seq(2000, lambda i: 1e10 if i == 1000 else i + 0.5))
case("sum_2d_50x40", seq(2000, lambda i: mixed(i)), sizes=[50, 40])
case("sum_3d_20x10x10", list(range(2000)), torch.int64, sizes=[20, 10, 10])
case("sum_1x1001", seq(1001, lambda i: i * 1.0), sizes=[1, 1001])
case("sum_1001x1", seq(1001, lambda i: i * 0.25), sizes=[1001, 1])
case("sum_4x4x4x4x4", seq(1024, lambda i: i % 7 - 3), torch.int64, sizes=[4, 4, 4, 4, 4])
case("sum_2x600", seq(1200, lambda i: (i % 13) * 0.125), sizes=[2, 600])
case("sum_bool_1001", seq(1001, lambda i: i % 3 == 0), torch.bool)
case("sum_int_big_values", seq(1001, lambda i: i * 1000000007), torch.int64)
case("sum_double_sci", seq(1500, lambda i: 10.0 ** ((i % 20) - 10)), torch.float64, sizes=[30, 50])
case("sum_half", seq(1100, lambda i: (i % 50) * 0.5), torch.float16)
case("sum_7x150", seq(1050, lambda i: i % 11), torch.int32, sizes=[7, 150])
case("sum_6x200", seq(1200, lambda i: (i % 9) * 0.5 - 2), sizes=[6, 200])
case("exactly_1000", list(range(1000)), torch.int64, sizes=[10, 100])

# ---- autograd suffixes
case("grad_leaf", [1.0, 2.0], grad="leaf")
case("grad_leaf_double", [0.5, -1.5], torch.float64, grad="leaf")
case("grad_add_self", [0.25, 1.0, -2.0], grad="add_self")
case("grad_sum", [1.0, 2.0, 3.5], grad="sum")
case("grad_mul2", [1.0, 2.0], grad="mul2")
case("grad_wrap_2d", seq(16, lambda i: mixed(i) * 100), sizes=[2, 8], grad="leaf")

# ---- another default dtype (wick::set_default_dtype / torch.set_default_dtype)
case("default_double_float32", [1.5, 2.0], default_dtype=torch.float64)
case("default_double_float64", [1.5, 2.0], torch.float64, default_dtype=torch.float64)
case("default_double_empty_float32", [], sizes=[0], default_dtype=torch.float64)
case("default_double_empty_float64", [], torch.float64, sizes=[0], default_dtype=torch.float64)

# ---- CUDA (where present): the device suffix and how it wraps with the others
case("cuda_api_minus5", [-5.0] * 6, sizes=[3, 2], device="cuda:0")
case("cuda_weight", [1.0, 3.0], device="cuda:0")
case("cuda_int32", [1, 2, 3], torch.int32, device="cuda:0")
case("cuda_empty", [], sizes=[0], device="cuda:0")
case("cuda_empty_int64_0x2", [], torch.int64, sizes=[0, 2], device="cuda:0")
case("cuda_scalar", [0.5], sizes=[], device="cuda:0")
case("cuda_wrap_double_leaf", seq(9, lambda i: i / 8.0), torch.float64, grad="leaf", device="cuda:0")
case("cuda_sum_int", list(range(1001)), torch.int64, device="cuda:0")


def apply_grad(t, grad):
    if grad == "none":
        return t
    x = t.clone().requires_grad_(True)
    if grad == "leaf":
        return x
    if grad == "add_self":
        return x + x
    if grad == "sum":
        return x.sum()
    if grad == "mul2":
        return x * 2
    raise ValueError(grad)


def value_text(t):
    flat = t.detach().reshape(-1)
    if t.dtype == torch.bool:
        return [str(int(v)) for v in flat.tolist()]
    if t.dtype.is_floating_point:
        return [repr(float(v)) for v in flat.double().tolist()]
    return [str(int(v)) for v in flat.tolist()]


def main():
    torch.set_printoptions(profile="default")
    out = sys.stdout
    has_cuda = torch.cuda.is_available()
    out.write("# PyTorch %s: repr of each tensor below (see tests/gen/print_cases.py)\n" % torch.__version__)
    for name, t, grad, device, default_dtype in CASES:
        if device != "cpu" and not has_cuda:
            continue
        try:
            shown = apply_grad(t.to(device), grad)
            torch.set_default_dtype(default_dtype)
            text = re.sub(r"dtype=torch\.", "dtype=", repr(shown))
        except Exception as e:  # report and go on: one broken case must not hide the others
            sys.stderr.write("case %s failed: %r\n" % (name, e))
            continue
        finally:
            torch.set_default_dtype(torch.float32)
        dtype_name = str(t.dtype).replace("torch.", "")
        out.write("case %s\n" % name)
        out.write("dtype %s\n" % dtype_name)
        out.write("device %s\n" % device)
        out.write(("sizes " + " ".join(str(s) for s in t.shape)).rstrip() + "\n")
        out.write("grad %s\n" % grad)
        out.write("default_dtype %s\n" % str(default_dtype).replace("torch.", ""))
        out.write(("values " + " ".join(value_text(t))).rstrip() + "\n")
        out.write("repr\n")
        out.write(text + "\n")
        out.write("end\n")


if __name__ == "__main__":
    main()
