// wick::Device("...") on arbitrary strings: a device or a wick::Error, and a parsed device
// prints back to a string that parses to the same device.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "wick/device.h"
#include "wick/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view spec(reinterpret_cast<const char*>(data), size);
  try {
    const wick::Device d(spec);
    const wick::Device again(d.str());
    if (!(again == d)) std::abort();
  } catch (const wick::Error&) {}
  return 0;
}
