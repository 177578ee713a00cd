// What printing asks of autograd: the name shown in "grad_fn=<...>".
#include "autograd/meta.h"
#include "core/print_hooks.h"

namespace wick::detail {

std::string grad_fn_name(const Tensor& t) {
  auto* m = autograd::meta(t);
  return m && m->grad_fn ? m->grad_fn->name() : std::string();
}

}  // namespace wick::detail
