// Linear: y = x @ weight.T + bias, weight [out_features, in_features]; Bilinear:
// y = x1^T weight[o] x2 + bias[o], weight [out_features, in1_features, in2_features].
//
//   wick::nn::Linear fc(3, 1);               // or nn::Linear(nn::LinearOptions(3, 1).bias(false))
//   auto y = fc(wick::rand({2, 3}));         // [2, 1], grad_fn=<AddmmBackward0>
//   std::cout << fc;                         // Linear(in_features=3, out_features=1, bias=True)
//   wick::nn::Bilinear bl(4, 5, 2);          // bl(x1 [N, 4], x2 [N, 5]) -> [N, 2]
#pragma once

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  WICK_ARG(int64_t, in_features);
  WICK_ARG(int64_t, out_features);
  WICK_ARG(bool, bias) = true;
};

class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  Tensor forward(const Tensor& x);
  // PyTorch's default: weight kaiming_uniform_(a = sqrt(5)), bias U(-1/sqrt(in), 1/sqrt(in)).
  void reset_parameters();
  std::string extra_repr() const override;

  LinearOptions options;
  Tensor weight, bias;
};
WICK_MODULE(Linear);

struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  WICK_ARG(int64_t, in1_features);
  WICK_ARG(int64_t, in2_features);
  WICK_ARG(int64_t, out_features);
  WICK_ARG(bool, bias) = true;
};

class BilinearImpl : public Module {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : BilinearImpl(BilinearOptions(in1_features, in2_features, out_features)) {}
  explicit BilinearImpl(const BilinearOptions& options);
  Tensor forward(const Tensor& x1, const Tensor& x2);
  // PyTorch's default: weight and bias U(-1/sqrt(in1), 1/sqrt(in1)).
  void reset_parameters();
  std::string extra_repr() const override;

  BilinearOptions options;
  Tensor weight, bias;
};
WICK_MODULE(Bilinear);

// Identity: returns its input.
class IdentityImpl : public Module {
 public:
  Tensor forward(const Tensor& x) { return x; }
};
WICK_MODULE(Identity);

}  // namespace wick::nn
