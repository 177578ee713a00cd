// Helpers the optimizers' constructors and foreach steps share (defined in optimizer.cpp).
#pragma once

#include <functional>
#include <vector>

#include "wick/optim/optimizer.h"

namespace wick::detail {

// Raises (as cuda_check_not_capturing, naming op and why) when a CUDA parameter with a gradient
// is stepped inside a CUDA graph capture: the steps whose scalars live on the host.
void check_host_step_not_capturing(const std::vector<optim::OptimizerParamGroup>& groups, const char* op,
                                   const char* why);

// The one group of a list of tensors (no group for an empty list, which nonempty_param_groups refuses).
std::vector<optim::OptimizerParamGroup> one_param_group(std::vector<Tensor> params);

// The groups unchanged; ValueError from op, as PyTorch's optimizers give, when there are none.
std::vector<optim::OptimizerParamGroup> nonempty_param_groups(std::vector<optim::OptimizerParamGroup> groups,
                                                              const char* op);

// ValueError from op unless the hyperparameters of an optimizer wick defines (SGD, Adam, AdamW,
// RMSprop, Adagrad, Adamax, NAdam, RAdam, Rprop, ASGD) are in range, as PyTorch's constructors
// check them; other options pass.
void check_hyperparameters(const optim::OptimizerOptions& options, const char* op);

// Whether t can join p's multi-tensor list: dense, contiguous, p's dtype, device and size.
bool foreach_fits(const Tensor& t, const Tensor& p);

// Whether options has PyTorch's "betas" key (Adam, AdamW, Adamax, NAdam, RAdam), and whether it
// has "momentum" (SGD, RMSprop): what OneCycleLR and CyclicLR cycle.
bool has_betas(const optim::OptimizerOptions& options);
bool has_momentum(const optim::OptimizerOptions& options);
// Sets beta1 where options has betas, else momentum where it has one (else nothing).
void set_momentum_or_beta1(optim::OptimizerOptions& options, double value);

// PyTorch's scalar state (NAdam's mu_product, ASGD's eta and mu): a 0-dim CPU tensor of its
// _get_scalar_dtype (float64 where the default dtype is, else float32), read on the host.
Tensor scalar_state(double value);
// t *= b as PyTorch's mul_ of a 0-dim tensor by a number: in t's opmath type (double for
// float64, float otherwise), rounded to t's dtype.
void scalar_state_mul(Tensor& t, double b);

// The state tensor name of st, created by make() where st has none yet (a state loaded for
// other options, or a group added after the first step, starts it as a fresh state would).
Tensor& state_tensor(optim::ParamState& st, const char* name, const std::function<Tensor()>& make);

}  // namespace wick::detail
