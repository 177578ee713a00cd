// LibTorch's enum spellings of the string arguments (torch::kMean, torch::kFanOut, torch::kReLU,
// ...): each wick::kName converts to the string PyTorch's Python API takes there, so it is
// accepted wherever that string is (a loss's reduction, kaiming_normal_'s mode and nonlinearity,
// pad's mode, interpolate's mode).
//
//   auto loss = wick::nn::functional::mse_loss(y, t, wick::kSum);   // reduction = "sum"
//   wick::nn::init::kaiming_normal_(w, 0, wick::kFanOut, wick::kReLU);
#pragma once

#include <string>

namespace wick {

namespace enumtype {
#define WICK_ENUM_SPELLING(Name, text)                      \
  struct Name {                                             \
    operator std::string() const { return text; }           \
    const char* str() const { return text; }                \
  };
// reductions of the losses
WICK_ENUM_SPELLING(kMean, "mean")
WICK_ENUM_SPELLING(kSum, "sum")
WICK_ENUM_SPELLING(kNone, "none")
WICK_ENUM_SPELLING(kBatchMean, "batchmean")  // kl_div's and KLDivLoss's only
// embedding_bag's and EmbeddingBag's modes (besides kSum and kMean)
WICK_ENUM_SPELLING(kMax, "max")
// nn::init's fan modes and nonlinearities
WICK_ENUM_SPELLING(kFanIn, "fan_in")
WICK_ENUM_SPELLING(kFanOut, "fan_out")
WICK_ENUM_SPELLING(kLinear, "linear")
WICK_ENUM_SPELLING(kConv1D, "conv1d")
WICK_ENUM_SPELLING(kConv2D, "conv2d")
WICK_ENUM_SPELLING(kConv3D, "conv3d")
WICK_ENUM_SPELLING(kConvTranspose1D, "conv_transpose1d")
WICK_ENUM_SPELLING(kConvTranspose2D, "conv_transpose2d")
WICK_ENUM_SPELLING(kConvTranspose3D, "conv_transpose3d")
WICK_ENUM_SPELLING(kSigmoid, "sigmoid")
WICK_ENUM_SPELLING(kTanh, "tanh")
WICK_ENUM_SPELLING(kReLU, "relu")
WICK_ENUM_SPELLING(kLeakyReLU, "leaky_relu")
WICK_ENUM_SPELLING(kSELU, "selu")
// padding modes
WICK_ENUM_SPELLING(kConstant, "constant")
WICK_ENUM_SPELLING(kReflect, "reflect")
WICK_ENUM_SPELLING(kReplicate, "replicate")
WICK_ENUM_SPELLING(kCircular, "circular")
WICK_ENUM_SPELLING(kZeros, "zeros")
// grid_sample's padding modes (besides kZeros)
WICK_ENUM_SPELLING(kBorder, "border")
WICK_ENUM_SPELLING(kReflection, "reflection")
// interpolate's and Upsample's modes (kLinear above is "linear")
WICK_ENUM_SPELLING(kNearest, "nearest")
WICK_ENUM_SPELLING(kNearestExact, "nearest-exact")
WICK_ENUM_SPELLING(kBilinear, "bilinear")
WICK_ENUM_SPELLING(kBicubic, "bicubic")
WICK_ENUM_SPELLING(kTrilinear, "trilinear")
WICK_ENUM_SPELLING(kArea, "area")
#undef WICK_ENUM_SPELLING
}  // namespace enumtype

// LibTorch's (ATen's) reduction enum, at::Reduction::Mean ..., taken by the losses declared in
// namespace wick (wick::nll_loss(x, t, {}, wick::Reduction::Sum)); the values are ATen's.
namespace Reduction {
enum Reduction { None = 0, Mean = 1, Sum = 2 };
}  // namespace Reduction

inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
inline constexpr enumtype::kNone kNone{};
inline constexpr enumtype::kBatchMean kBatchMean{};
inline constexpr enumtype::kMax kMax{};
inline constexpr enumtype::kFanIn kFanIn{};
inline constexpr enumtype::kFanOut kFanOut{};
inline constexpr enumtype::kLinear kLinear{};
inline constexpr enumtype::kConv1D kConv1D{};
inline constexpr enumtype::kConv2D kConv2D{};
inline constexpr enumtype::kConv3D kConv3D{};
inline constexpr enumtype::kConvTranspose1D kConvTranspose1D{};
inline constexpr enumtype::kConvTranspose2D kConvTranspose2D{};
inline constexpr enumtype::kConvTranspose3D kConvTranspose3D{};
inline constexpr enumtype::kSigmoid kSigmoid{};
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kLeakyReLU kLeakyReLU{};
inline constexpr enumtype::kSELU kSELU{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kBorder kBorder{};
inline constexpr enumtype::kReflection kReflection{};
inline constexpr enumtype::kNearest kNearest{};
inline constexpr enumtype::kNearestExact kNearestExact{};
inline constexpr enumtype::kBilinear kBilinear{};
inline constexpr enumtype::kBicubic kBicubic{};
inline constexpr enumtype::kTrilinear kTrilinear{};
inline constexpr enumtype::kArea kArea{};

}  // namespace wick
