#include "wick/dtype.h"

#include <atomic>
#include <ostream>

#include "wick/scalar.h"

namespace wick {

std::string_view name(Dtype t) {
  static constexpr std::string_view names[] = {"bool",    "uint8",    "int8",    "int16",   "int32",
                                                "int64",   "float16",  "bfloat16", "float32", "float64"};
  if (int(t) < 0 || int(t) >= kNumDtypes) return "invalid dtype";  // a cast from an integer
  return names[int(t)];
}

std::ostream& operator<<(std::ostream& os, Dtype t) { return os << name(t); }

namespace {
// False for a Dtype made from an integer outside the enum.
bool valid(Dtype t) { return int(t) >= 0 && int(t) < kNumDtypes; }
}  // namespace

Dtype promote_types(Dtype a, Dtype b) {
  if (!valid(a) || !valid(b)) [[unlikely]]
    detail::raise<ValueError>("promote_types", "invalid dtype (", int(valid(a) ? b : a), ")");
  if (a == b) return a;
  // PyTorch's table restricted to these ten types. Rows/cols: b1 u1 i1 i2 i4 i8 f2 bf f4 f8.
  using D = Dtype;
  constexpr D b1 = D::Bool, u1 = D::UInt8, i1 = D::Int8, i2 = D::Int16, i4 = D::Int32, i8 = D::Int64,
              f2 = D::Float16, bf = D::BFloat16, f4 = D::Float32, f8 = D::Float64;
  static constexpr D table[10][10] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[int(a)][int(b)];
}

namespace {
std::atomic<Dtype> g_default_dtype{kFloat32};
}

void set_default_dtype(Dtype t) {
  WICK_CHECK(valid(t), ValueError, "set_default_dtype", "invalid dtype (", int(t), ")");
  WICK_CHECK(is_floating_point(t), TypeError, "set_default_dtype",
             "only floating-point types are supported as the default type (got ", t, ")");
  g_default_dtype.store(t, std::memory_order_relaxed);
}
Dtype get_default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }

Dtype Scalar::dtype() const {
  switch (kind_) {
    case Kind::Bool: return kBool;
    case Kind::Int: return kInt64;
    default: return get_default_dtype();
  }
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to<bool>() ? "True" : "False");
  if (s.is_integral()) return os << s.to<int64_t>();
  return os << s.to<double>();
}

std::ostream& operator<<(std::ostream& os, Half h) { return os << float(h); }
std::ostream& operator<<(std::ostream& os, BFloat16 h) { return os << float(h); }

}  // namespace wick
