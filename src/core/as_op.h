// A composite op named as its caller: errors of the ops it is made of carry the caller's name.
#pragma once

#include <string>
#include <type_traits>

#include "wick/error.h"
#include "wick/tensor.h"

namespace wick::detail {

// Runs f; a wick::Error it raises is raised again, of the same type, with its "[inner] "
// prefix replaced by "[op] ": a composite op (linear through addmm, embedding through
// index_select) names itself, the op its caller called.
std::string renamed_message(const Error& e, const char* op);
template <class F>
decltype(auto) as_op(const char* op, F&& f) {
  try {
    if constexpr (std::is_same_v<decltype(f()), Tensor>) {
      // A view of one of the composite's own temporaries, which nothing else holds now, is
      // the composite's result and no view (PyTorch's _unsafe_view): Tensor::is_view and
      // detach_ see what they would see in PyTorch.
      Tensor out = f();
      if (out.defined() && out.impl()->is_view() && out.impl()->storage().use_count() == 1) [[unlikely]]
        out.impl()->set_is_view(false);
      return out;
    } else {
      return f();
    }
  } catch (const IndexError& e) {
    throw IndexError(renamed_message(e, op));
  } catch (const TypeError& e) {
    throw TypeError(renamed_message(e, op));
  } catch (const DeviceError& e) {
    throw DeviceError(renamed_message(e, op));
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(renamed_message(e, op));
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(renamed_message(e, op));
  } catch (const DistributedError& e) {
    throw DistributedError(renamed_message(e, op));
  } catch (const ValueError& e) {
    throw ValueError(renamed_message(e, op));
  }
}

}  // namespace wick::detail
