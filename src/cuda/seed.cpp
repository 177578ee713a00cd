// wick::cuda::manual_seed{,_all}: the CUDA generators live in core (src/core/generator.h).
#include "core/generator.h"
#include "wick/cuda.h"

namespace wick::cuda {

// As torch.cuda.manual_seed: silently ignored when there is no GPU.
void manual_seed(uint64_t seed) {
  if (!is_available()) return;
  detail::seed_device(Device(kCUDA, current_device()), seed);
}

void manual_seed_all(uint64_t seed) { detail::seed_all_cuda(seed); }

}  // namespace wick::cuda
