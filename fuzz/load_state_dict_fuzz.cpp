// A small module loading whatever a fuzzed safetensors file holds: either the load succeeds or
// it throws a wick::Error and leaves the module's parameters exactly as they were.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "io/safetensors_internal.h"
#include "wick/error.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace {

struct NetImpl : wick::nn::Module {
  NetImpl() : Module("Net") {
    fc = register_module("fc", wick::nn::Linear(3, 2));
    bn = register_module("bn", wick::nn::BatchNorm1d(2));
  }
  wick::nn::Linear fc{nullptr};
  wick::nn::BatchNorm1d bn{nullptr};
};
WICK_MODULE(Net);

bool same_bytes(const wick::Tensor& a, const wick::Tensor& b) {
  return a.sizes().equals(b.sizes()) && a.dtype() == b.dtype() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), size_t(a.nbytes())) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Net& net = *new Net();
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto before = net->state_dict();
  for (auto& [name, t] : before) t = t.clone();
  const bool strict = size % 2 == 0;
  try {
    net->load_state_dict(wick::detail::load_safetensors_bytes(bytes), strict);
  } catch (const wick::Error&) {
    // A failed call changes nothing.
    auto after = net->state_dict();
    if (after.size() != before.size()) std::abort();
    for (size_t i = 0; i < after.size(); ++i)
      if (!same_bytes(after[i].second, before[i].second)) std::abort();
  }
  return 0;
}
