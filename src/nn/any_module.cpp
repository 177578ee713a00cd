// nn::AnyModule's errors (the class itself is a template in wick/nn/any.h).
#include <cxxabi.h>

#include <cstdlib>
#include <string>

#include "wick/error.h"
#include "wick/nn/any.h"

namespace wick::nn::detail {

namespace {

// The C++ name of a type: "wick::nn::LinearImpl", "at::Tensor" as "wick::Tensor".
std::string type_name(const std::type_info& t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : t.name();
  std::free(d);
  return s;
}

}  // namespace

void any_module_argument_error(size_t index, const std::type_info& want, const std::type_info& got) {
  wick::detail::raise<TypeError>("AnyModule", "Expected argument #", index, " to be of type ", type_name(want),
                                 ", but received value of type ", type_name(got));
}

void any_module_arity_error(const std::type_info& module, const std::vector<AnyCall>& calls, size_t n) {
  std::string counts;
  for (size_t k = 0; k < calls.size(); ++k)
    if (calls[k]) counts += (counts.empty() ? "" : " or ") + std::to_string(k);
  wick::detail::raise<TypeError>("AnyModule", type_name(module), "'s forward() method expects ",
                                 counts.empty() ? std::string("other") : counts, " argument(s), but received ", n,
                                 ".");
}

void any_module_result_error(const std::type_info& module, const std::type_info& want, const std::type_info& got) {
  wick::detail::raise<TypeError>("AnyModule", "forward() of ", type_name(module), " returned a value of type ",
                                 type_name(got), ", not the ", type_name(want), " asked for");
}

void any_module_cast_error(const std::type_info& held, const std::type_info& want) {
  wick::detail::raise<TypeError>("AnyModule", "Attempted to cast module of type ", type_name(held), " to type ",
                                 type_name(want));
}

void any_module_empty_error(const char* what) {
  wick::detail::raise<ValueError>("AnyModule", "Cannot call ", what, " on an empty AnyModule");
}

}  // namespace wick::nn::detail
