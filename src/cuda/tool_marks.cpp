#include "cuda/tool_marks.h"

#include <nvtx3/nvToolsExtMemCudaRt.h>

namespace wick::detail::gpu {

void mark_initialized(const void* ptr, size_t bytes, cudaStream_t stream) {
  if (!ptr || bytes == 0) return;
  static nvtxDomainHandle_t domain = nvtxDomainCreateA("wick");
  nvtxMemVirtualRangeDesc_t range{bytes, ptr};
  nvtxMemMarkInitializedBatch_t desc{};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof desc;
  desc.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.regionDescCount = 1;
  desc.regionDescElementSize = sizeof range;
  desc.regionDescElements = &range;
  nvtxMemCudaMarkInitialized(domain, stream, 0, &desc);
}

}  // namespace wick::detail::gpu
