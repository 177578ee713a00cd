// wick::version(): the version of the library itself, to compare with the headers' WICK_VERSION.
#include "wick/version.h"

namespace wick {

const char* version() { return WICK_VERSION; }

}  // namespace wick
