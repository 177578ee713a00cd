// The one-kernel backward of softmax and log_softmax (their nodes' formula).
#pragma once

#include "wick/tensor.h"

namespace wick::detail {

// The input gradient of softmax (log: log_softmax) over dim from its result and the incoming
// gradient (broadcast to the result's shape and cast to its dtype), through the device's
// softmax_backward entry.
Tensor softmax_backward(bool log, const Tensor& grad, const Tensor& result, int64_t dim);

// softmax(scores.masked_fill(j > i, -inf), -1) over the last dim of scores [..., L, S] (at least
// 2-D, floating), with query i attending keys 0..i, in one kernel (the device's causal_softmax
// entry): attention's causal math path without a mask tensor or a filled copy. Its node is
// softmax's (SoftmaxBackward0: the masked entries are 0, so they get no gradient); under
// autocast it computes in float32 as softmax does.
Tensor causal_softmax(const Tensor& scores);

}  // namespace wick::detail
