# Tables of run.sh's rows ("row LIB THREADS CASE GFLOPS"): one per thread count, a column per
# library, the best of each row marked with *.
import sys
from collections import OrderedDict

cells = OrderedDict()  # threads -> case -> lib -> value
libs = []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if f[0] != "row":
        continue
    lib, threads, case, value = f[1], f[2], f[3], float(f[4])
    if lib not in libs:
        libs.append(lib)
    cells.setdefault(threads, OrderedDict()).setdefault(case, {})[lib] = value

for threads, cases in cells.items():
    title = "library default" if threads == "0" else f"{threads} thread(s)"
    print(f"\nGFLOP/s, float32, threads: {title}\n")
    print("| case | " + " | ".join(libs) + " |")
    print("|---|" + "---:|" * len(libs))
    for case, row in cases.items():
        best = max((v for k, v in row.items() if k != "torch"), default=0)
        out = []
        for lib in libs:
            v = row.get(lib)
            out.append("" if v is None else f"{v:.0f}{'*' if v == best and lib != 'torch' else ''}")
        print(f"| {case} | " + " | ".join(out) + " |")
