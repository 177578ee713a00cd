// nn::init: in-place initializers, as torch.nn.init (they run without recording grads).
//
//   wick::nn::init::kaiming_uniform_(w, std::sqrt(5.0));
//   wick::nn::init::zeros_(b);
#pragma once

#include <string>
#include <utility>

#include "wick/tensor.h"

namespace wick::nn::init {

Tensor uniform_(Tensor t, double a = 0, double b = 1);
Tensor normal_(Tensor t, double mean = 0, double std = 1);
Tensor constant_(Tensor t, const Scalar& value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);
// {fan_in, fan_out} of a weight: dims 1 and 0 times the receptive field (dims 2...).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// nonlinearity: "linear", "relu", "leaky_relu" (with param), "tanh", "sigmoid", ...
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
// mode: "fan_in" or "fan_out".
Tensor kaiming_uniform_(Tensor t, double a = 0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
Tensor kaiming_normal_(Tensor t, double a = 0, const std::string& mode = "fan_in",
                       const std::string& nonlinearity = "leaky_relu");
Tensor xavier_uniform_(Tensor t, double gain = 1);
Tensor xavier_normal_(Tensor t, double gain = 1);
// t (2 or more dims, viewed as [size(0), numel / size(0)]) filled with a (semi-)orthogonal
// matrix times gain: the Q of the QR factorization of a standard normal matrix drawn from wick's
// generator on t's device in t's dtype, with R's diagonal made positive (PyTorch's recipe).
// wick has no QR: Q comes from Gram-Schmidt (each column orthogonalized twice) in float64 on
// the CPU, the same Q as a Householder QR with R's signs fixed, up to rounding.
Tensor orthogonal_(Tensor t, double gain = 1);

}  // namespace wick::nn::init
