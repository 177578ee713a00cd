"""Exchanges tensors between PyTorch and wick through DLPack, without copies.

Run by ctest (dlpack_torch) with the path of libwick_dlpack_torch_shim.so (dlpack_torch_shim.cpp),
loaded with ctypes. Every dtype both ways on the CPU, and on a GPU when there is one: the same
memory (data pointers equal), the values, strides of a transposed tensor, writes seen by the other
side, the DLPack stream rule (the consumer's stream waits for the work the producer queued on a
stream of its own), and each side's deleter freeing the memory once the other lets go.
Exits 77 (ctest: skipped) when python3 has no torch.
"""
import contextlib
import ctypes
import gc
import sys

try:
    import torch
    import torch.utils.dlpack
except ImportError:
    print("skipped: python3 has no torch")
    sys.exit(77)

lib = ctypes.CDLL(sys.argv[1])
lib.wick_shim_current_stream.restype = ctypes.c_ssize_t
lib.wick_shim_current_stream.argtypes = [ctypes.c_int]
lib.wick_shim_memory_allocated.restype = ctypes.c_int64
lib.wick_shim_memory_allocated.argtypes = [ctypes.c_int]
lib.wick_shim_export.restype = ctypes.c_void_p
lib.wick_shim_export.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_ssize_t,
                                 ctypes.c_int]
lib.wick_shim_export_filled.restype = ctypes.c_void_p
lib.wick_shim_export_filled.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_ssize_t]
lib.wick_shim_data.restype = ctypes.c_void_p
lib.wick_shim_data.argtypes = [ctypes.c_void_p]
lib.wick_shim_import.restype = ctypes.c_double
lib.wick_shim_import.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64),
                                 ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_int]

PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = ctypes.c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
PyCapsule_SetName = ctypes.pythonapi.PyCapsule_SetName
PyCapsule_SetName.restype = ctypes.c_int
PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
USED = ctypes.c_char_p(b"used_dltensor")  # PyCapsule_SetName keeps the pointer: it must live on

DTYPES = {
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float32": torch.float32, "float64": torch.float64,
}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED:", what)


def expected(name, rows, cols, device):
    v = torch.arange(rows * cols, dtype=torch.float64, device=device)
    if name == "bool":
        v = v.remainder(2)
    return v.to(DTYPES[name]).view(rows, cols)


def torch_stream(device):
    """The DLPack integer of torch's current stream (1: the legacy default stream)."""
    s = torch.cuda.current_stream(device).cuda_stream
    return 1 if s == 0 else s


def wick_to_torch(name, device, transpose):
    dev = "cpu" if device < 0 else f"cuda:{device}"
    stream = -1 if device < 0 else torch_stream(device)
    m = lib.wick_shim_export(name.encode(), 2, 3, device, stream, int(transpose))
    data = lib.wick_shim_data(m)
    y = torch.utils.dlpack.from_dlpack(PyCapsule_New(m, b"dltensor", None))
    want = expected(name, 2, 3, dev)
    if transpose:
        want = want.t()
    what = f"wick -> torch {name} on {dev}{' transposed' if transpose else ''}"
    check(y.dtype == DTYPES[name], f"{what}: dtype {y.dtype}")
    check(str(y.device) == dev, f"{what}: device {y.device}")
    check(y.data_ptr() == data, f"{what}: not the same memory")
    check(tuple(y.shape) == tuple(want.shape) and y.stride() == want.stride(), f"{what}: shape {y.shape} strides {y.stride()}")
    check(torch.equal(y, want), f"{what}: values {y} != {want}")


def torch_to_wick(name, device, transpose):
    dev = "cpu" if device < 0 else f"cuda:{device}"
    x = expected(name, 3, 4, dev)
    if transpose:
        x = x.t()
    want_total = x.to(torch.float64).sum().item()  # before wick adds one to every element
    stream = None if device < 0 else lib.wick_shim_current_stream(device)
    cap = x.__dlpack__(stream=stream)
    m = PyCapsule_GetPointer(cap, b"dltensor")
    PyCapsule_SetName(cap, USED)  # wick owns it now
    data = ctypes.c_void_p()
    sizes = (ctypes.c_int64 * 8)()
    strides = (ctypes.c_int64 * 8)()
    dtype = ctypes.create_string_buffer(32)
    add_one = name != "bool"
    total = lib.wick_shim_import(m, ctypes.byref(data), sizes, strides, dtype, int(add_one))
    what = f"torch -> wick {name} on {dev}{' transposed' if transpose else ''}"
    check(total == want_total, f"{what}: sum {total}, expected {want_total}")
    check(data.value == x.data_ptr(), f"{what}: not the same memory")
    check(dtype.value.decode() == name, f"{what}: dtype {dtype.value}")
    check(list(sizes[:2]) == list(x.shape) and list(strides[:2]) == list(x.stride()),
          f"{what}: sizes {list(sizes[:2])} strides {list(strides[:2])}")
    if add_one:
        after = expected(name, 3, 4, dev).to(torch.float64).add(1)
        if transpose:
            after = after.t()
        check(torch.equal(x.to(torch.float64), after), f"{what}: wick's write not seen")


def streams(device):
    dev = f"cuda:{device}"
    n = 1 << 22
    # wick -> torch: wick's additions run on a side stream of its own; torch sums on its stream.
    m = lib.wick_shim_export_filled(n, 8, device, torch_stream(device))
    y = torch.utils.dlpack.from_dlpack(PyCapsule_New(m, b"dltensor", None))
    check(y.sum(dtype=torch.float64).item() == 9.0 * n, "wick -> torch: torch's stream did not wait for wick's work")
    # torch -> wick: torch's additions run on a side stream; wick sums on its current stream.
    s = torch.cuda.Stream(device)
    with torch.cuda.stream(s):
        x = torch.ones(n, device=dev)
        for _ in range(8):
            x.add_(1)
        cap = x.__dlpack__(stream=lib.wick_shim_current_stream(device))
    m = PyCapsule_GetPointer(cap, b"dltensor")
    PyCapsule_SetName(cap, USED)
    data = ctypes.c_void_p()
    sizes = (ctypes.c_int64 * 8)()
    strides = (ctypes.c_int64 * 8)()
    dtype = ctypes.create_string_buffer(32)
    total = lib.wick_shim_import(m, ctypes.byref(data), sizes, strides, dtype, 0)
    check(total == 9.0 * n, f"torch -> wick: wick's stream did not wait for torch's work ({total})")
    torch.cuda.synchronize()


def deleters(device):
    dev = f"cuda:{device}"
    # wick's export lives until torch lets go of it.
    torch.cuda.synchronize()
    base = lib.wick_shim_memory_allocated(device)
    m = lib.wick_shim_export_filled(1 << 20, 0, device, torch_stream(device))
    y = torch.utils.dlpack.from_dlpack(PyCapsule_New(m, b"dltensor", None))
    check(lib.wick_shim_memory_allocated(device) > base, "wick's memory not held while torch has it")
    del y
    gc.collect()
    check(lib.wick_shim_memory_allocated(device) == base, "wick's memory not freed when torch let go")
    # torch's export lives until wick lets go of it.
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated(device)
    x = torch.ones(1 << 20, device=dev)
    cap = x.__dlpack__(stream=lib.wick_shim_current_stream(device))
    m = PyCapsule_GetPointer(cap, b"dltensor")
    PyCapsule_SetName(cap, USED)
    del x, cap
    gc.collect()
    check(torch.cuda.memory_allocated(device) > base, "torch's memory not held while wick has it")
    data = ctypes.c_void_p()
    sizes = (ctypes.c_int64 * 8)()
    strides = (ctypes.c_int64 * 8)()
    dtype = ctypes.create_string_buffer(32)
    lib.wick_shim_import(m, ctypes.byref(data), sizes, strides, dtype, 0)
    check(torch.cuda.memory_allocated(device) == base, "torch's memory not freed when wick let go")


# DLPack's bool code (kDLBool, DLPack 0.8) is read by PyTorch 2.0 and later; older ones take bool
# only as uint8, so the bool exchange runs where torch knows the code.
names = [n for n in DTYPES if n != "bool" or int(torch.__version__.split(".")[0]) >= 2]
if len(names) < len(DTYPES):
    print(f"torch {torch.__version__} predates DLPack's bool code: bool is not exchanged")
devices = [-1]
if torch.cuda.is_available():
    devices += list(range(torch.cuda.device_count()))
else:
    print("no GPU: only the CPU exchange runs")
for device in devices:
    # torch exports a CUDA tensor only while its device is torch's current one.
    with torch.cuda.device(device) if device >= 0 else contextlib.nullcontext():
        for name in names:
            for transpose in (False, True):
                wick_to_torch(name, device, transpose)
                torch_to_wick(name, device, transpose)
        if device >= 0:
            streams(device)
            deleters(device)
print(f"torch {torch.__version__}, devices {devices}: {len(failures)} failures")
sys.exit(1 if failures else 0)
