// Settings of the backends' libraries, as torch.backends and torch.set_float32_matmul_precision.
//
//   wick::set_float32_matmul_precision("high");    // float32 matmuls may use TF32 on CUDA
//   auto c = wick::matmul(a, b);                   // a, b float32 on cuda
//   wick::get_float32_matmul_precision();          // "high"
//   wick::set_num_threads(4);                      // CPU ops use up to 4 threads
//   wick::empty_cpu_cache();                       // large host blocks kept for reuse go back
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace wick {

// "highest" (the default: full float32 products), "high" or "medium" (float32 matmuls on CUDA
// may use TF32 tensor cores, about 10 bits of mantissa). Other strings throw ValueError.
void set_float32_matmul_precision(std::string_view precision);
std::string get_float32_matmul_precision();

// The number of threads CPU ops may use, as torch.set_num_threads/get_num_threads: the team
// size of wick's parallel loops (elementwise ops, reductions, softmax, losses) and, when the
// BLAS is OpenBLAS, its thread count too. The default is OpenMP's (OMP_NUM_THREADS, else one
// per core). n <= 0 throws ValueError. An op smaller than a few tens of thousands of elements
// runs on the calling thread whatever the setting; an op called from inside an OpenMP parallel
// region runs on its calling thread too (no nested teams).
void set_num_threads(int n);
int get_num_threads();

// Freed CPU blocks of 1 MiB or more are kept for reuse (no page faults for the next tensor of
// that size), up to a limit of cached bytes: 1 GiB, or WICK_CPU_CACHE_MB mebibytes read at the
// first large allocation (0 turns the cache off). empty_cpu_cache() returns every cached block
// to the system; tensors alive are untouched.
void empty_cpu_cache();

namespace backends::cudnn {
// torch.backends.cudnn.is_available(): whether this build has cuDNN (a GPU may still be absent).
bool is_available();
}  // namespace backends::cudnn

}  // namespace wick
