// Distances between sets of points: cdist, as torch.cdist (LibTorch's torch::cdist).
//
//   auto x1 = wick::randn({2, 5, 3}), x2 = wick::randn({2, 4, 3});
//   auto d = wick::cdist(x1, x2);        // [2, 5, 4]: d[b][i][j] = ||x1[b][i] - x2[b][j]||_2
//   auto l1 = wick::cdist(x1, x2, 1.0);  // p-norm distances, p >= 0 (0 counts differences, inf the max)
#pragma once

#include <cstdint>
#include <optional>

#include "wick/tensor.h"

namespace wick {

// The p-norm distance of each row of x1 [*, P, M] to each row of x2 [*, R, M]: [*, P, R], the
// batch dims broadcast. compute_mode, ATen's: 0 or none computes p = 2 by matrix products when
// P or R exceeds 25 (EuclideanDistBackward0), 1 always, 2 never (CdistBackward0).
// Differentiable wrt both; the gradient is 0 where a distance is 0, as PyTorch's.
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0,
             std::optional<int64_t> compute_mode = std::nullopt);

}  // namespace wick
