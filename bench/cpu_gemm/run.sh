#!/usr/bin/env bash
# Float32 GEMM throughput of Debian's CPU BLAS packages side by side: compiles
# cpu_gemm_bench.cpp once per library that is installed (OpenBLAS OpenMP and pthread builds,
# BLIS OpenMP and pthread builds, oneDNN), runs each at several thread counts, and prints one
# table per thread count (GFLOP/s, median of repetitions). PyTorch's CPU matmul is a column of
# its own where `import torch` works.
#   bash bench/cpu_gemm/run.sh [ROOT] [quick]
# ROOT: where the packages' files are: empty or / for the installed ones, or a folder the .debs
# were unpacked into with dpkg -x (scripts/gpu/cpu-gemm.sh). THREADS (environment) overrides
# the thread counts tried: "0" means each library's own default.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${1:-}
[[ $root == / ]] && root=""
quick=${2:-}
work=${WORK:-$(mktemp -d /tmp/cpu-gemm.XXXXXX)}
mkdir -p "$work"
multi=x86_64-linux-gnu
lib=$root/usr/lib/$multi
inc=$root/usr/include/$multi

echo "== machine"
lscpu | grep -E '^(Model name|Socket|Core|Thread|CPU\(s\)|L2|L3|Flags)' | sed 's/^Flags:.*\(avx512f\)/Flags: ... \1/' |
  cut -c1-160
env | grep -E '^(OPENBLAS|OMP|GOMP|BLIS|DNNL|ONEDNN|MKL)_' || echo "(no OPENBLAS_/OMP_/BLIS_/DNNL_ variables set)"
cores=$(lscpu -p=CORE 2>/dev/null | grep -v '^#' | sort -u | wc -l)
echo "logical CPUs $(nproc), physical cores $cores"

# oneDNN's headers are in /usr/include itself, which must not be named with -I.
dnnl_inc=-DBENCH_INSTALLED_HEADERS
[[ -n $root ]] && dnnl_inc=-I$root/usr/include
# name, compile definition, include flags, library folder, library
variants=(
  "openblas-openmp BENCH_OPENBLAS -I$inc/openblas-openmp $lib/openblas-openmp openblas"
  "openblas-pthread BENCH_OPENBLAS -I$inc/openblas-pthread $lib/openblas-pthread openblas"
  "blis-openmp BENCH_BLIS -I$inc/blis-openmp $lib/blis-openmp blis"
  "blis-pthread BENCH_BLIS -I$inc/blis-pthread $lib/blis-pthread blis"
  "dnnl BENCH_DNNL $dnnl_inc $lib dnnl"
)
built=()
for v in "${variants[@]}"; do
  read -r name def incflag libdir libname <<<"$v"
  [[ -e $libdir/lib$libname.so ]] || { echo "-- $name: $libdir/lib$libname.so not found, left out"; continue; }
  # RPATH, not RUNPATH: the library folder comes before LD_LIBRARY_PATH and the system's
  # libopenblas.so.0 (an alternatives link to one of the builds).
  if g++ -std=c++17 -O2 -fopenmp -D$def $incflag "$here/cpu_gemm_bench.cpp" -o "$work/$name" -L"$libdir" -l$libname \
    -Wl,--disable-new-dtags -Wl,-rpath,"$libdir" -Wl,-rpath,"$lib" -Wl,-rpath-link,"$lib" 2>"$work/$name.log"; then
    built+=("$name")
  else
    echo "-- $name: does not compile:"; head -20 "$work/$name.log"
  fi
done
torch=0
python3 -c 'import torch' 2>/dev/null && torch=1

threads_list=${THREADS:-"0 $(printf '%s\n' "$cores" "$(nproc)" 1 | awk '!seen[$0]++' | tr '\n' ' ')"}
rows=$work/rows.tsv
: >"$rows"
for t in $threads_list; do
  for name in "${built[@]}"; do
    timeout 600 "$work/$name" "$name" "$t" $quick |
      tee -a "$rows" | grep '^info' | sort -u
  done
  if ((torch)); then
    timeout 600 python3 "$here/torch_gemm.py" "$t" $quick | tee -a "$rows" | grep '^info'
  fi
done
python3 "$here/table.py" "$rows"
echo "rows: $rows"
