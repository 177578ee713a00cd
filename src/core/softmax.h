// The one-kernel backward of softmax and log_softmax (their nodes' formula).
#pragma once

#include "wick/tensor.h"

namespace wick::detail {

// The input gradient of softmax (log: log_softmax) over dim from its result and the incoming
// gradient (broadcast to the result's shape and cast to its dtype), through the device's
// softmax_backward entry.
Tensor softmax_backward(bool log, const Tensor& grad, const Tensor& result, int64_t dim);

}  // namespace wick::detail
