// Errors: every failure is a wick::Error whose message starts with "[op]".
//
//   try { wick::Device("gpu:0"); }
//   catch (const wick::ValueError& e) { std::cerr << e.what(); }  // [Device] invalid device string ...
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
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
// A name looked up in a dictionary that does not hold it (Python's KeyError).
class KeyError : public Error { using Error::Error; };
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

// ---- WICK_CHECK's two forms, told apart by the compiler: in `(X) - check_probe`, X a type
// is a cast of -check_probe (an error object), X an expression a subtraction (its message).
struct CheckProbe {};
struct CheckErrorTag {
  operator const char*() const { return ""; }
};
inline CheckErrorTag operator-(CheckProbe) { return {}; }
template <class T>
struct CheckMessage {
  const T& first;
};
template <class T>
CheckMessage<T> operator-(const T& first, CheckProbe) {
  return {first};
}
inline constexpr CheckProbe check_probe{};

template <class... Parts>
std::string streamed(const Parts&... parts) {
  std::ostringstream os;
  ((os << parts), ...);
  return os.str();
}
// WICK_CHECK(cond): LibTorch's message for a check without one.
template <class E = Error>
[[noreturn]] void check_failed(const char* cond) {
  throw E(std::string("Expected ") + cond + " to be true, but got false.");
}
// WICK_CHECK(cond, ErrorType, "op", parts...)
template <class E, class... Parts>
  requires std::is_base_of_v<Error, E>
[[noreturn]] void check_failed(const char*, E&&, const char* op, const Parts&... parts) {
  raise<E>(op, parts...);
}
// WICK_CHECK(cond, parts...)
template <class E = Error, class T, class... Parts>
[[noreturn]] void check_failed(const char*, CheckMessage<T> first, const Parts&... parts) {
  throw E(streamed(first.first, parts...));
}
[[noreturn]] void internal_assert_failed(const char* cond, const char* file, int line, const std::string& msg);

// WICK_CHECK_EQ and its kin: the comparison (integers of mixed signedness compared by value, as
// std::cmp_equal does), and the failure, which collects what is streamed into it and throws
// wick::Error when the statement ends.
template <class A, class B>
bool check_compare(const A& a, const B& b, int op) {
  constexpr bool ints = std::is_integral_v<A> && std::is_integral_v<B> && !std::is_same_v<A, bool> &&
                        !std::is_same_v<B, bool>;
  auto eq = [&] {
    if constexpr (ints) return std::cmp_equal(a, b);
    else return bool(a == b);
  };
  auto lt = [&] {
    if constexpr (ints) return std::cmp_less(a, b);
    else return bool(a < b);
  };
  switch (op) {
    case 0: return eq();
    case 1: return !eq();
    case 2: return lt();
    case 3: return lt() || eq();
    case 4: return !(lt() || eq());
    default: return !lt();
  }
}
class CheckOpFailure {
 public:
  template <class A, class B>
  CheckOpFailure(const char* expr, const A& a, const B& b) {
    os_ << "Check failed: " << expr << " (" << a << " vs. " << b << ") ";
  }
  CheckOpFailure(const CheckOpFailure&) = delete;
  ~CheckOpFailure() noexcept(false) { throw Error(os_.str()); }
  template <class T>
  CheckOpFailure& operator<<(const T& part) {
    os_ << part;
    return *this;
  }

 private:
  std::ostringstream os_;
};
// Writes "Warning: msg (function func)" to stderr (LibTorch's TORCH_WARN).
void warn(const std::string& msg, const char* func);

}  // namespace detail

// c10::str: the parts streamed together into one string.
template <class... Parts>
std::string str(const Parts&... parts) {
  return detail::streamed(parts...);
}

}  // namespace wick

// WICK_CHECK has two forms (both throw when cond is false):
//   WICK_CHECK(cond, ErrorType, "op", parts...)  wick's own: ErrorType("[op] parts...")
//   WICK_CHECK(cond, parts...)                   LibTorch's TORCH_CHECK, for user code:
//                                                wick::Error with the parts streamed together
//                                                ("Expected cond to be true, but got false."
//                                                without parts)
// The form is told by the second argument: a type (an Error class) or a value.
#define WICK_DETAIL_FIRST(a, ...) a
#define WICK_DETAIL_REST(a, ...) __VA_OPT__(, __VA_ARGS__)
#define WICK_CHECK(cond, ...)                                                                  \
  do {                                                                                         \
    if (!(cond)) [[unlikely]]                                                                  \
      ::wick::detail::check_failed(#cond __VA_OPT__(                                           \
          , ((WICK_DETAIL_FIRST(__VA_ARGS__)) - ::wick::detail::check_probe)                   \
                WICK_DETAIL_REST(__VA_ARGS__)));                                               \
  } while (0)

// LibTorch's TORCH_CHECK_VALUE, _INDEX, _TYPE and _NOT_IMPLEMENTED: WICK_CHECK(cond, parts...)
// throwing ValueError, IndexError, TypeError or NotImplementedError.
#define WICK_DETAIL_CHECK_AS(E, cond, ...)                                                        \
  do {                                                                                         \
    if (!(cond)) [[unlikely]] {                                                                \
      __VA_OPT__(::wick::detail::check_failed<E>(                                              \
          #cond, ((WICK_DETAIL_FIRST(__VA_ARGS__)) - ::wick::detail::check_probe)              \
                     WICK_DETAIL_REST(__VA_ARGS__));)                                          \
      ::wick::detail::check_failed<E>(#cond);                                                  \
    }                                                                                          \
  } while (0)
#define WICK_CHECK_VALUE(cond, ...) WICK_DETAIL_CHECK_AS(::wick::ValueError, cond __VA_OPT__(, ) __VA_ARGS__)
#define WICK_CHECK_INDEX(cond, ...) WICK_DETAIL_CHECK_AS(::wick::IndexError, cond __VA_OPT__(, ) __VA_ARGS__)
#define WICK_CHECK_TYPE(cond, ...) WICK_DETAIL_CHECK_AS(::wick::TypeError, cond __VA_OPT__(, ) __VA_ARGS__)
#define WICK_CHECK_NOT_IMPLEMENTED(cond, ...) \
  WICK_DETAIL_CHECK_AS(::wick::NotImplementedError, cond __VA_OPT__(, ) __VA_ARGS__)

// WICK_CHECK_EQ(a, b), _NE, _LT, _LE, _GT, _GE (LibTorch's TORCH_CHECK_EQ ..., glog's CHECK_EQ):
// when the comparison fails, wick::Error "Check failed: a == b (1 vs. 2) " followed by anything
// streamed into it (WICK_CHECK_EQ(x, y) << "more"), thrown when the statement ends. LibTorch's
// log the message and abort the process; wick's can be caught. Each operand is evaluated once.
#define WICK_DETAIL_CHECK_OP(a, b, code, text)                                                   \
  switch (0)                                                                                   \
  case 0:                                                                                      \
  default:                                                                                     \
    if (const auto& [wick_check_a_, wick_check_b_] = ::std::make_tuple((a), (b));              \
        ::wick::detail::check_compare(wick_check_a_, wick_check_b_, code)) {                   \
    } else                                                                                     \
      ::wick::detail::CheckOpFailure(#a " " text " " #b, wick_check_a_, wick_check_b_)
#define WICK_CHECK_EQ(a, b) WICK_DETAIL_CHECK_OP(a, b, 0, "==")
#define WICK_CHECK_NE(a, b) WICK_DETAIL_CHECK_OP(a, b, 1, "!=")
#define WICK_CHECK_LT(a, b) WICK_DETAIL_CHECK_OP(a, b, 2, "<")
#define WICK_CHECK_LE(a, b) WICK_DETAIL_CHECK_OP(a, b, 3, "<=")
#define WICK_CHECK_GT(a, b) WICK_DETAIL_CHECK_OP(a, b, 4, ">")
#define WICK_CHECK_GE(a, b) WICK_DETAIL_CHECK_OP(a, b, 5, ">=")

// WICK_INTERNAL_ASSERT(cond, parts...) (TORCH_INTERNAL_ASSERT): wick::Error "INTERNAL ASSERT
// FAILED at "file":line, please report a bug. parts..." when cond is false. The _DEBUG_ONLY form
// checks only in builds without NDEBUG.
#define WICK_INTERNAL_ASSERT(cond, ...)                                                          \
  do {                                                                                         \
    if (!(cond)) [[unlikely]]                                                                  \
      ::wick::detail::internal_assert_failed(#cond, __FILE__, __LINE__,                        \
                                             ::wick::detail::streamed(__VA_ARGS__));           \
  } while (0)
// WICK_ASSERT(cond, parts...) (AT_ASSERT): WICK_INTERNAL_ASSERT. WICK_ERROR(parts...)
// (AT_ERROR): throws wick::Error with the parts streamed together.
#define WICK_ASSERT(cond, ...) WICK_INTERNAL_ASSERT(cond __VA_OPT__(, ) __VA_ARGS__)
#define WICK_ERROR(...) throw ::wick::Error(::wick::detail::streamed(__VA_ARGS__))
#ifdef NDEBUG
#define WICK_INTERNAL_ASSERT_DEBUG_ONLY(...) \
  do {                                       \
  } while (0)
#else
#define WICK_INTERNAL_ASSERT_DEBUG_ONLY(...) WICK_INTERNAL_ASSERT(__VA_ARGS__)
#endif

// WICK_WARN(parts...) (TORCH_WARN): "Warning: parts... (function f)" on stderr; the _ONCE form
// warns the first time its line runs only.
#define WICK_WARN(...) ::wick::detail::warn(::wick::detail::streamed(__VA_ARGS__), __func__)
#define WICK_WARN_ONCE(...)                                                   \
  do {                                                                        \
    static const bool wick_warned_once_ = [&] {                               \
      ::wick::detail::warn(::wick::detail::streamed(__VA_ARGS__), __func__); \
      return true;                                                            \
    }();                                                                      \
    (void)wick_warned_once_;                                                  \
  } while (0)
