// Errors: every failure is a wick::Error whose message starts with "[op]".
//
//   try { wick::Device("gpu:0"); }
//   catch (const wick::ValueError& e) { std::cerr << e.what(); }  // [Device] invalid device string ...
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace wick {

// Base of every error wick throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ValueError : public Error { using Error::Error; };
class TypeError : public Error { using Error::Error; };
class IndexError : public Error { using Error::Error; };
class DeviceError : public Error { using Error::Error; };
class OutOfMemoryError : public Error { using Error::Error; };
class NotImplementedError : public Error { using Error::Error; };
// A collective that failed, timed out, or met a peer that died (wick/distributed.h).
class DistributedError : public Error { using Error::Error; };

namespace detail {

// Builds "[op] part part ..." only when an error is thrown (never on the hot path).
template <class... Parts>
std::string message(const char* op, const Parts&... parts) {
  std::ostringstream os;
  os << '[' << op << "] ";
  (os << ... << parts);
  return os.str();
}

template <class E, class... Parts>
[[noreturn]] void raise(const char* op, const Parts&... parts) {
  throw E(message(op, parts...));
}

}  // namespace detail
}  // namespace wick

// WICK_CHECK(cond, ErrorType, "op", parts...): throw ErrorType("[op] parts...") when cond is false.
#define WICK_CHECK(cond, E, op, ...)                                   \
  do {                                                                 \
    if (!(cond)) [[unlikely]] ::wick::detail::raise<E>(op, __VA_ARGS__); \
  } while (0)
