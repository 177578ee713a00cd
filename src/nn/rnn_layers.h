// An RNN module's layers as cuDNN's RNN API describes them, for src/nn/rnn.cpp and the tests of
// its flattened parameters.
#pragma once

#include "core/cudnn_rnn.h"
#include "wick/nn/rnn.h"

namespace wick::nn::detail {

// The module's mode, sizes, direction and bias (no batch sizes, no dropout): what its weight
// space depends on.
wick::detail::CudnnRnnConfig cudnn_layers(const RNNBaseImpl& m);

}  // namespace wick::nn::detail
