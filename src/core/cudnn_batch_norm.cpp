// Whether batch_norm's cuDNN path takes a problem (core/cudnn_batch_norm.h).
#include "core/cudnn_batch_norm.h"

#include <cstdint>

namespace wick::detail {

bool cudnn_batch_norm_takes(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                            const Tensor& running_var, double eps) {
  if (!x.is_cuda() || !cuda_cudnn_batch_norm_built()) return false;
  const Dtype dt = x.dtype();
  if (dt != kFloat32 && dt != kFloat16 && dt != kBFloat16) return false;
  if (x.dim() < 2 || !x.is_contiguous() || reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 != 0) return false;
  if (running_mean.defined() != running_var.defined() || !(eps >= 0)) return false;
  // cuDNN's descriptor counts in int: each of N, C and the product of the rest, and the whole
  constexpr int64_t kIntMax = 2147483647;
  int64_t rest = 1;
  for (int64_t d = 2; d < x.dim(); ++d) rest *= x.size(d);
  if (x.numel() == 0 || x.numel() > kIntMax || x.size(0) > kIntMax || x.size(1) > kIntMax || rest > kIntMax)
    return false;
  const int64_t c = x.size(1);
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var})
    if (t->defined() && (t->dtype() != kFloat32 || t->device() != x.device() || t->numel() != c ||
                         !t->is_contiguous()))
      return false;
  return true;
}

}  // namespace wick::detail
