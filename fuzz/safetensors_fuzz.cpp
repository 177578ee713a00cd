// The safetensors reader on arbitrary bytes: tensors that tile the data section exactly, or a
// wick::Error. The metadata reader sees the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/safetensors_internal.h"
#include "wick/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    size_t total = 0;
    for (const auto& [name, t] : wick::detail::load_safetensors_bytes(bytes)) {
      if (!t.is_contiguous()) std::abort();
      total += size_t(t.nbytes());
    }
    if (total > size) std::abort();
  } catch (const wick::Error&) {}
  try {
    (void)wick::detail::load_safetensors_metadata_bytes(bytes);
  } catch (const wick::Error&) {}
  return 0;
}
