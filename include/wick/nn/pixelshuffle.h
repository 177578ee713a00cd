// PixelShuffle and PixelUnshuffle: functional::pixel_shuffle and pixel_unshuffle as modules.
//
//   wick::nn::PixelShuffle up(2);
//   auto y = up(x);  // [N, 4 C, H, W] -> [N, C, 2 H, 2 W]; printed PixelShuffle(upscale_factor=2)
#pragma once

#include <string>

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}
  WICK_ARG(int64_t, upscale_factor);
};

class PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(const PixelShuffleOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  PixelShuffleOptions options;
};
WICK_MODULE(PixelShuffle);

struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}
  WICK_ARG(int64_t, downscale_factor);
};

class PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  PixelUnshuffleOptions options;
};
WICK_MODULE(PixelUnshuffle);

}  // namespace wick::nn
