// Upsample: torch.nn.Upsample, a module that calls nn::functional::interpolate with its options.
//
//   wick::nn::Upsample up(wick::nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2})
//                             .mode(wick::kBilinear).align_corners(false));
//   auto y = up(x);  // [N, C, H, W] -> [N, C, 2H, 2W]
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "wick/enums.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

// torch.nn.Upsample's arguments (size or scale_factor; mode "nearest", "nearest-exact",
// "linear", "bilinear", "trilinear"), with LibTorch's setters.
struct UpsampleOptions {
  WICK_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  WICK_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  WICK_ARG(std::string, mode) = "nearest";
  WICK_ARG(std::optional<bool>, align_corners) = std::nullopt;
  WICK_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
};

class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options = {});
  // functional::interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor).
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  UpsampleOptions options;
};
WICK_MODULE(Upsample);

}  // namespace wick::nn
