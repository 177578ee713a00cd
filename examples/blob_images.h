// Generated images for the examples that train on Fashion-MNIST when Debian's copy is there
// (15_dcgan, 16_vae), and on these otherwise.
#pragma once

#include <cstdint>

#include <wick/wick.h>

// n images [n, 1, 28, 28] in [0, 1], each a round blob exp(-r^2 / 2 s^2) of random centre and size.
inline wick::Tensor blob_images(int64_t n) {
  wick::Tensor grid = wick::arange(28, wick::kFloat32);
  wick::Tensor cx = wick::rand({n, 1, 1}) * 16 + 6, cy = wick::rand({n, 1, 1}) * 16 + 6;
  wick::Tensor s = wick::rand({n, 1, 1}) * 2 + 2;
  wick::Tensor r2 = (grid.view({1, 28, 1}) - cy).pow(2) + (grid.view({1, 1, 28}) - cx).pow(2);
  return wick::exp(-r2 / (s * s * 2)).unsqueeze(1);
}
