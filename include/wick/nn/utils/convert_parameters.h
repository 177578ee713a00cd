// nn::utils::parameters_to_vector and vector_to_parameters, as torch.nn.utils's (the header
// of LibTorch's torch/nn/utils/convert_parameters.h).
//
//   wick::Tensor flat = wick::nn::utils::parameters_to_vector(net->parameters());
//   wick::nn::utils::vector_to_parameters(flat * 0.5, net->parameters());
#pragma once

#include <vector>

#include "wick/tensor.h"

namespace wick::nn::utils {

// The parameters flattened and concatenated into one 1-D tensor (recorded: cat of views). The
// parameters must be contiguous and on one device (TypeError otherwise, as PyTorch's).
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
// Copies consecutive slices of vec into the parameters, without recording. PyTorch rebinds each
// parameter's .data to a view of vec instead; here the parameters keep their own storage (so
// handles held elsewhere stay valid) and vec is not aliased. vec must be 1-D and hold at least
// as many elements as the parameters (ValueError); the parameters must be on one device.
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace wick::nn::utils
