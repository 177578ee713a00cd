// The backends' settings as the kernels and the allocator read them: the internal side of
// include/wick/backends.h (defined in src/core/backends.cpp and src/core/storage.cpp).
#pragma once

#include <cstddef>

namespace wick::detail {

// 0 highest, 1 high, 2 medium; read by the CUDA GEMM on every call (an atomic load).
int float32_matmul_precision_level();
// get_num_threads() for the CPU kernels: one atomic load once set, OpenMP's default before.
int cpu_num_threads();
// The CPU allocator's cache of freed large blocks (empty_cpu_cache): its limit in cached bytes
// (0: no caching) and the bytes it holds now. Setting a lower limit frees the excess.
void set_cpu_cache_limit(size_t bytes);
size_t cpu_cache_limit();
size_t cpu_cached_bytes();
// Whether CUDA kernels that have not yet passed their tests on a GPU are taken by default:
// WICK_NEW_CUDA_KERNELS=1 in the environment (read once). Until then, the ops that have such a
// kernel (flash attention, cross_entropy's gradient written by its forward, the linear layer's
// GELU backward with its bias gradient) take their older CUDA path, so a kernel that has not passed
// there cannot give a silent wrong answer (docs/design.md, "Kernels not yet run on a GPU").
bool new_cuda_kernels();

}  // namespace wick::detail
