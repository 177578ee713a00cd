// wick-tour: runs the tensor examples of wick's API (devices, factories, printing, errors) and
// prints what they print. CUDA examples run when a GPU is present; otherwise they show the
// error wick gives.
//   build/bin/wick-tour
#include <algorithm>
#include <functional>
#include <iostream>
#include <string_view>

#include <wick/wick.h>

namespace {

// Prints the code of an example, then runs it; a wick error is printed with its type.
void example(std::string_view code, const std::function<void()>& run) {
  for (size_t start = 0; start < code.size();) {
    size_t end = std::min(code.find('\n', start), code.size());
    std::cout << "> " << code.substr(start, end - start) << "\n";
    start = end + 1;
  }
  try {
    run();
  } catch (const wick::DeviceError& e) {
    std::cout << "wick::DeviceError: " << e.what() << "\n";
  } catch (const wick::ValueError& e) {
    std::cout << "wick::ValueError: " << e.what() << "\n";
  } catch (const wick::TypeError& e) {
    std::cout << "wick::TypeError: " << e.what() << "\n";
  } catch (const wick::Error& e) {
    std::cout << "wick::Error: " << e.what() << "\n";
  }
  std::cout << "\n";
}

}  // namespace

int main() {
#ifdef WICK_WITH_CUDA
  const char* built = "with CUDA";
#else
  const char* built = "without CUDA";
#endif
  const bool gpu = wick::cuda::is_available();
  std::cout << "wick " << built << "; cuda::is_available() = " << std::boolalpha << gpu << "\n\n";

  example("auto x = wick::rand({2, 2});\nstd::cout << x;", [] {
    auto x = wick::rand({2, 2});
    std::cout << x << "\n";
  });
  example("auto x = wick::rand({2, 2}, wick::Device(\"cuda\"));\nstd::cout << x;", [] {
    auto x = wick::rand({2, 2}, wick::Device("cuda"));
    std::cout << x << "\n";
  });

  // a stays on the CPU; b is its copy on the GPU, and mixing them is an error.
  auto a = wick::ones({2, 3});
  wick::Tensor b;
  example(
      "auto a = wick::ones({2, 3});\nstd::cout << a.sizes() << \" \" << a.dtype() << \" \" << a.device();",
      [&] { std::cout << a.sizes() << " " << a.dtype() << " " << a.device() << "\n"; });
  example("auto b = a.to(\"cuda\");\nstd::cout << b.sizes() << \" \" << b.dtype() << \" \" << b.device();",
          [&] {
            b = a.to("cuda");
            std::cout << b.sizes() << " " << b.dtype() << " " << b.device() << "\n";
          });
  if (b.defined()) {
    example("a * b;", [&] {
      auto c = a * b;
      std::cout << c << "\n";
    });
  }

  example("std::cout << wick::tensor({1, 2, 3});", [] { std::cout << wick::tensor({1, 2, 3}) << "\n"; });
  example("std::cout << wick::tensor({1., 2.});", [] { std::cout << wick::tensor({1., 2.}) << "\n"; });

  // new_* keep the dtype and device of the tensor they are called on.
  auto x_cpu = wick::empty({2});
  auto x_cpu_long = wick::empty({2}, wick::kInt64);
  example("auto x_cpu = wick::empty({2});\nstd::cout << x_cpu.new_full({3, 2}, 0.3);", [&] {
    std::cout << x_cpu.new_full({3, 2}, 0.3) << "\n";
  });
  example("auto x_gpu = wick::empty({2}, wick::Device(\"cuda\"));\nstd::cout << x_gpu.new_full({3, 2}, -5);",
          [] {
            auto x_gpu = wick::empty({2}, wick::Device("cuda"));
            std::cout << x_gpu.new_full({3, 2}, -5) << "\n";
          });
  example(
      "auto x_cpu_long = wick::empty({2}, wick::kInt64);\nstd::cout << x_cpu_long.new_tensor({{1, 2, 3}});",
      [&] {
        std::cout << x_cpu_long.new_tensor({{1, 2, 3}}) << "\n";
      });

  // A few ops: broadcasting, promotion, reductions, matmul, views.
  example("auto m = wick::arange(6).view({2, 3});\nstd::cout << m * 0.5 + wick::ones({3});", [] {
    auto m = wick::arange(6).view({2, 3});
    std::cout << m * 0.5 + wick::ones({3}) << "\n";
  });
  example("std::cout << wick::arange(6).view({2, 3}).sum({1});", [] {
    std::cout << wick::arange(6).view({2, 3}).sum({1}) << "\n";
  });
  example("auto m = wick::arange(6.).view({2, 3});\nstd::cout << m.matmul(m.t());", [] {
    auto m = wick::arange(6.).view({2, 3});
    std::cout << m.matmul(m.t()) << "\n";
  });
  example("std::cout << wick::ones({2, 2}, wick::kFloat16) / 3;", [] {
    std::cout << wick::ones({2, 2}, wick::kFloat16) / 3 << "\n";
  });
  example("wick::Device(\"gpu:0\");", [] { std::cout << wick::Device("gpu:0") << "\n"; });
  return 0;
}
