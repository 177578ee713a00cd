// Settings of the backends' libraries, as torch.backends and torch.set_float32_matmul_precision.
//
//   wick::set_float32_matmul_precision("high");    // float32 matmuls may use TF32 on CUDA
//   auto c = wick::matmul(a, b);                   // a, b float32 on cuda
//   wick::get_float32_matmul_precision();          // "high"
#pragma once

#include <string>
#include <string_view>

namespace wick {

// "highest" (the default: full float32 products), "high" or "medium" (float32 matmuls on CUDA
// may use TF32 tensor cores, about 10 bits of mantissa). Other strings throw ValueError.
void set_float32_matmul_precision(std::string_view precision);
std::string get_float32_matmul_precision();

namespace detail {
// 0 highest, 1 high, 2 medium; read by the CUDA GEMM on every call (an atomic load).
int float32_matmul_precision_level();
}  // namespace detail

}  // namespace wick
