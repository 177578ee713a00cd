// Scaled dot-product attention (torch.nn.functional.scaled_dot_product_attention) and the
// choice of the path that computes it (torch.nn.attention.sdpa_kernel).
//
//   namespace F = wick::nn::functional;
//   auto y = F::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);  // [B, H, L, Ev]
//   {
//     wick::nn::attention::sdpa_kernel only_math(wick::nn::attention::SDPBackend::Math);
//     y = F::scaled_dot_product_attention(q, k, v);
//   }
//   wick::nn::attention::last_sdpa_backend();   // SDPBackend::Math
#pragma once

#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <vector>

#include "wick/tensor.h"

namespace wick::nn::attention {

// The paths of scaled_dot_product_attention, as torch.nn.attention.SDPBackend names them.
// Math (matmul, softmax, dropout: every device and dtype) is the one built today.
enum class SDPBackend { Math, FlashAttention, EfficientAttention, CuDNNAttention };

// "MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION" (PyTorch's names).
const char* to_string(SDPBackend backend);
std::ostream& operator<<(std::ostream& os, SDPBackend backend);

// While alive, scaled_dot_product_attention may use only these backends (process-wide, as
// PyTorch's flags); the previous choice comes back when it ends. No usable backend among them
// raises "No available kernel".
class sdpa_kernel {
 public:
  explicit sdpa_kernel(SDPBackend backend) : sdpa_kernel({backend}) {}
  explicit sdpa_kernel(std::initializer_list<SDPBackend> backends)
      : sdpa_kernel(std::vector<SDPBackend>(backends)) {}
  explicit sdpa_kernel(const std::vector<SDPBackend>& backends);
  ~sdpa_kernel();
  sdpa_kernel(const sdpa_kernel&) = delete;
  sdpa_kernel& operator=(const sdpa_kernel&) = delete;

 private:
  unsigned previous_;
};

// The backends scaled_dot_product_attention may use now (all of them unless restricted).
std::vector<SDPBackend> enabled_sdpa_backends();
// The backend of this thread's last scaled_dot_product_attention (none before the first).
std::optional<SDPBackend> last_sdpa_backend();

}  // namespace wick::nn::attention

namespace wick::nn::functional {

// softmax(q @ k^T * scale + bias) @ v over [..., L, E] queries and [..., S, E] keys, [..., S, Ev]
// values. attn_mask broadcasts to [..., L, S]: bool (true attends) or of q's dtype (added).
// is_causal: query i attends keys 0..i (no attn_mask then). scale: 1 / sqrt(E) when unset.
// enable_gqa: k and v may have fewer heads (dim -3) than q, dividing them. Rows that attend
// nothing give zeros. dropout_p applies whatever the mode (pass 0 in evaluation).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, bool enable_gqa = false);

}  // namespace wick::nn::functional

// ATen's torch::scaled_dot_product_attention (the same arguments).
namespace wick {
using nn::functional::scaled_dot_product_attention;
}  // namespace wick
