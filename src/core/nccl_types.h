// NCCL's data type for a wick dtype: the seam core gives the two users of NCCL, cuda::comm (several
// GPUs of one process, src/cuda) and the "nccl" process group (src/distributed), which may not
// include each other. Only for builds with NCCL (WICK_HAVE_NCCL).
#pragma once

#include <optional>

#include <nccl.h>

#include "wick/dtype.h"

namespace wick::detail {

// The numeric types NCCL reduces; none for bool (callers that move it as bytes say so) and
// int16 (NCCL has no 16-bit integer).
inline std::optional<ncclDataType_t> nccl_type(Dtype t) {
  switch (t) {
    case kFloat32:
      return ncclFloat32;
    case kFloat64:
      return ncclFloat64;
    case kFloat16:
      return ncclFloat16;
    case kBFloat16:
      return ncclBfloat16;
    case kInt64:
      return ncclInt64;
    case kInt32:
      return ncclInt32;
    case kInt8:
      return ncclInt8;
    case kUInt8:
      return ncclUint8;
    default:
      return std::nullopt;
  }
}

}  // namespace wick::detail
