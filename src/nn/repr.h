// Python's spelling of values in module reprs: 1e-05, 0.1, True, (3, 3), (4,).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

namespace wick::nn::detail {

// repr(float): the shortest digits that round-trip, fixed for exponents in [-4, 16),
// else d.ddde-XX; integral values keep ".0".
inline std::string py_float(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);  // [-]d[.ddd]e±XX
  const size_t e = sci.find('e');
  if (e == std::string::npos) return sci;  // inf, nan
  const int exp = std::stoi(sci.substr(e + 1));
  std::string digits, out;
  bool neg = false;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] == '-') neg = true;
    else if (sci[i] != '.') digits.push_back(sci[i]);
  }
  if (neg) out.push_back('-');
  if (exp < -4 || exp >= 16) {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    out.append(exp < 0 ? "e-" : "e+");
    const int a = exp < 0 ? -exp : exp;
    if (a < 10) out.push_back('0');
    out.append(std::to_string(a));
  } else if (exp < 0) {
    out.append("0.");
    out.append(size_t(-exp - 1), '0');
    out.append(digits);
  } else {
    const size_t int_digits = size_t(exp) + 1;
    if (digits.size() <= int_digits) {
      out.append(digits);
      out.append(int_digits - digits.size(), '0');
      out.append(".0");
    } else {
      out.append(digits, 0, int_digits);
      out.push_back('.');
      out.append(digits, int_digits, std::string::npos);
    }
  }
  return out;
}

inline const char* py_bool(bool b) { return b ? "True" : "False"; }

// (3, 3) or (4,)
inline std::string py_tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

}  // namespace wick::nn::detail
