// Helpers the optimizers' constructors and foreach steps share (defined in optimizer.cpp).
#pragma once

#include <vector>

#include "wick/optim/optimizer.h"

namespace wick::detail {

// The one group of a list of tensors (no group for an empty list, which nonempty_param_groups refuses).
std::vector<optim::OptimizerParamGroup> one_param_group(std::vector<Tensor> params);

// The groups unchanged; ValueError from op, as PyTorch's optimizers give, when there are none.
std::vector<optim::OptimizerParamGroup> nonempty_param_groups(std::vector<optim::OptimizerParamGroup> groups,
                                                              const char* op);

// ValueError from op unless the hyperparameters of an optimizer wick defines (SGD, Adam, AdamW,
// RMSprop, Adagrad) are in range, as PyTorch's constructors check them; other options pass.
void check_hyperparameters(const optim::OptimizerOptions& options, const char* op);

// Whether t can join p's multi-tensor list: dense, contiguous, p's dtype, device and size.
bool foreach_fits(const Tensor& t, const Tensor& p);

}  // namespace wick::detail
