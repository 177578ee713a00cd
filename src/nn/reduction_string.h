// The string of Python's API for ATen's reduction value (LibTorch's Reduction::Mean ...), for
// the ATen forms of the losses in namespace wick (src/nn/aten_functions.cpp, loss_more.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "wick/enums.h"
#include "wick/error.h"

namespace wick::detail {

// "none", "mean" or "sum"; ValueError "[op] ..." as Python's _Reduction words it otherwise.
inline std::string reduction_string(Reduction::Reduction r, const char* op) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
  }
  raise<ValueError>(op, int64_t(r), " is not a valid value for reduction");
}

}  // namespace wick::detail
