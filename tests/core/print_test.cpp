// Printing against PyTorch. tests/fixtures/print_cases.txt holds tensors with exact values and the
// repr PyTorch 2.11 printed for each (written by tests/gen/print_cases.py); each case rebuilds
// its tensor here and compares wick's repr to the character. Cases on cuda:0 run on a GPU
// when there is one, else print the CPU tensor with repr_on's device.
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/print_hooks.h"
#include "wick/wick.h"

#ifndef WICK_TEST_FIXTURES_DIR
#error "tests/CMakeLists.txt defines WICK_TEST_FIXTURES_DIR as the folder of tests/fixtures"
#endif

namespace {

using wick::Tensor;

struct PrintCase {
  std::string name, dtype, device, grad, default_dtype;
  std::vector<int64_t> sizes;
  std::vector<std::string> values;
  std::string expected;
  std::string load_error;  // set on a placeholder case when the file can't be read
};

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// Reads every case; a broken file gives one case that fails with the reason.
std::vector<PrintCase> load_cases() {
  const std::string path = std::string(WICK_TEST_FIXTURES_DIR) + "/print_cases.txt";
  std::ifstream in(path);
  auto broken = [&](const std::string& why) {
    PrintCase c;
    c.name = "data_file";
    c.load_error = path + ": " + why;
    return std::vector<PrintCase>{c};
  };
  if (!in) return broken("can't open");
  std::vector<PrintCase> cases;
  std::string line;
  auto field = [&](const char* key) -> std::vector<std::string> {
    if (!std::getline(in, line)) return {};
    auto w = words(line);
    if (w.empty() || w[0] != key) return {};
    w.erase(w.begin());
    return w;
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto head = words(line);
    if (head.size() != 2 || head[0] != "case") return broken("expected 'case <name>', got '" + line + "'");
    PrintCase c;
    c.name = head[1];
    auto one = [&](const char* key, std::string& out) {
      auto w = field(key);
      if (w.size() != 1) return false;
      out = w[0];
      return true;
    };
    if (!one("dtype", c.dtype) || !one("device", c.device)) return broken("bad header in " + c.name);
    auto sizes_line = std::getline(in, line) ? words(line) : std::vector<std::string>{};
    if (sizes_line.empty() || sizes_line[0] != "sizes") return broken("no sizes in " + c.name);
    for (size_t k = 1; k < sizes_line.size(); ++k) c.sizes.push_back(std::stoll(sizes_line[k]));
    if (!one("grad", c.grad) || !one("default_dtype", c.default_dtype))
      return broken("bad header in " + c.name);
    if (!std::getline(in, line)) return broken("no values in " + c.name);
    c.values = words(line);
    if (c.values.empty() || c.values[0] != "values") return broken("no values in " + c.name);
    c.values.erase(c.values.begin());
    if (!std::getline(in, line) || line != "repr") return broken("no repr in " + c.name);
    std::vector<std::string> lines;
    while (std::getline(in, line) && line != "end") lines.push_back(line);
    if (line != "end") return broken("no end in " + c.name);
    for (size_t k = 0; k < lines.size(); ++k) c.expected += (k ? "\n" : "") + lines[k];
    cases.push_back(std::move(c));
  }
  if (cases.empty()) return broken("no cases");
  return cases;
}

wick::Dtype dtype_named(const std::string& n) {
  for (int k = 0; k < wick::kNumDtypes; ++k)
    if (wick::name(wick::Dtype(k)) == n) return wick::Dtype(k);
  ADD_FAILURE() << "unknown dtype " << n;
  return wick::kFloat32;
}

// The case's tensor on the CPU, from its exact values (float64 or int64, then cast).
Tensor build(const PrintCase& c) {
  const wick::Dtype dtype = dtype_named(c.dtype);
  int64_t numel = 1;
  for (int64_t s : c.sizes) numel *= s;
  EXPECT_EQ(int64_t(c.values.size()), numel) << "values of " << c.name;
  if (numel == 0) return wick::empty(c.sizes, dtype);
  if (wick::is_floating_point(dtype)) {
    std::vector<double> v;
    for (const auto& s : c.values) v.push_back(std::strtod(s.c_str(), nullptr));
    return wick::from_blob(v.data(), c.sizes, wick::kFloat64).clone().to(dtype);
  }
  std::vector<int64_t> v;
  for (const auto& s : c.values) v.push_back(std::strtoll(s.c_str(), nullptr, 10));
  return wick::from_blob(v.data(), c.sizes, wick::kInt64).clone().to(dtype);
}

// What the case does before printing, as tests/gen/print_cases.py does it.
Tensor with_grad(Tensor t, const std::string& grad) {
  if (grad == "none") return t;
  t.requires_grad_(true);
  if (grad == "leaf") return t;
  if (grad == "add_self") return t + t;
  if (grad == "sum") return t.sum();
  if (grad == "mul2") return t * 2;
  ADD_FAILURE() << "unknown grad " << grad;
  return t;
}

class DefaultDtype {
 public:
  explicit DefaultDtype(wick::Dtype d) : old_(wick::get_default_dtype()) { wick::set_default_dtype(d); }
  ~DefaultDtype() { wick::set_default_dtype(old_); }

 private:
  wick::Dtype old_;
};

// Where wick names a node as LibTorch's C++ does rather than Python: `x * 2` in C++ is
// mul(Tensor, Scalar), whose node is MulBackward1; Python wraps 2 in a tensor (MulBackward0).
std::string as_in_cpp(const PrintCase& c) {
  std::string e = c.expected;
  if (c.grad == "mul2") {
    const auto at = e.find("MulBackward0");
    if (at != std::string::npos) e.replace(at, 12, "MulBackward1");
  }
  return e;
}

class PyTorchRepr : public ::testing::TestWithParam<PrintCase> {};

TEST_P(PyTorchRepr, Matches) {
  const PrintCase& c = GetParam();
  ASSERT_TRUE(c.load_error.empty()) << c.load_error;
  const wick::Device device(c.device);
  Tensor base = build(c);
  std::string got;
  if (device.is_cpu()) {
    Tensor t = with_grad(base, c.grad);
    DefaultDtype g(dtype_named(c.default_dtype));
    got = wick::repr(t);
  } else if (wick::cuda::is_available()) {
    Tensor t = with_grad(base.to(device), c.grad);
    DefaultDtype g(dtype_named(c.default_dtype));
    got = wick::repr(t);
  } else {
    Tensor t = with_grad(base, c.grad);
    DefaultDtype g(dtype_named(c.default_dtype));
    got = wick::detail::repr_on(t, device);
  }
  EXPECT_EQ(got, as_in_cpp(c));
}

std::string case_name(const ::testing::TestParamInfo<PrintCase>& info) {
  std::string n = info.param.name;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Print, PyTorchRepr, ::testing::ValuesIn(load_cases()), case_name);

// ---- the documented printed examples, through the calls that produce them

TEST(Print, ApiNewFull) {
  auto x_cpu = wick::empty({2});
  EXPECT_EQ(wick::repr(x_cpu.new_full({3, 2}, 0.3)),
            "tensor([[0.3000, 0.3000],\n"
            "        [0.3000, 0.3000],\n"
            "        [0.3000, 0.3000]])");
  auto x_cpu_long = wick::empty({2}, wick::kInt64);
  std::ostringstream os;
  os << x_cpu_long.new_tensor({{1, 2, 3}});
  EXPECT_EQ(os.str(), "tensor([[1, 2, 3]])");
}

TEST(Print, ApiCudaSuffix) {
  const std::string expected =
      "tensor([[-5., -5.],\n"
      "        [-5., -5.],\n"
      "        [-5., -5.]], device='cuda:0')";
  auto x_cpu = wick::empty({2});
  EXPECT_EQ(wick::detail::repr_on(x_cpu.new_full({3, 2}, -5), "cuda:0"), expected);
  EXPECT_EQ(wick::detail::repr_on(wick::tensor({1., 3.}), "cuda:0"), "tensor([1., 3.], device='cuda:0')");
  if (!wick::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto x_gpu = wick::empty({2}, wick::Device("cuda"));
  EXPECT_EQ(wick::repr(x_gpu.new_full({3, 2}, -5)), expected);
}

TEST(Print, ApiModuleOutputSuffixes) {
  // A Linear's output on cuda:7 carries the device and addmm's node.
  auto bias = wick::tensor({{0.4866}, {0.3854}});
  auto x = wick::zeros({2, 3});
  auto w = wick::ones({3, 1}).requires_grad_(true);
  auto y = wick::addmm(bias, x, w);
  EXPECT_EQ(wick::detail::repr_on(y, "cuda:7"),
            "tensor([[0.4866],\n"
            "        [0.3854]], device='cuda:7', grad_fn=<AddmmBackward0>)");
}

TEST(Print, Sizes) {
  std::ostringstream os;
  os << wick::ones({2, 3}).sizes() << " " << wick::ones({}).sizes() << " " << wick::ones({5}).sizes();
  EXPECT_EQ(os.str(), "[2, 3] [] [5]");
}

TEST(Print, StreamEqualsRepr) {
  auto t = wick::arange(6, wick::kInt32).view({2, 3});
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), wick::repr(t));
  EXPECT_EQ(os.str(), "tensor([[0, 1, 2],\n        [3, 4, 5]], dtype=int32)");
}

TEST(Print, UndefinedTensor) { EXPECT_EQ(wick::repr(Tensor()), "[ Tensor (undefined) ]"); }

// Views print their elements, whatever their strides: the reference is the contiguous copy.
TEST(Print, NonContiguousViews) {
  auto a = wick::arange(24, wick::kFloat32).view({2, 3, 4}) * 0.37 - 2;
  for (const Tensor& v : {a.transpose(0, 2), a.permute({1, 2, 0}), a.slice(2, 0, 4, 2), a.select(1, 1),
                          a.narrow(0, 1, 1).expand({3, 3, 4}), a.select(2, 0)}) {
    ASSERT_FALSE(v.is_contiguous());
    EXPECT_EQ(wick::repr(v), wick::repr(v.contiguous()));
  }
  // Summarized: 60 x 50 seen through a transpose and a strided slice.
  auto big = wick::arange(3000, wick::kInt64).view({60, 50});
  EXPECT_EQ(wick::repr(big.t()), wick::repr(big.t().contiguous()));
  EXPECT_EQ(wick::repr(big.slice(1, 0, 50, 3)), wick::repr(big.slice(1, 0, 50, 3).contiguous()));
}

// Printing records nothing and leaves the tensor as it was.
TEST(Print, LeavesAutogradStateAlone) {
  auto x = wick::arange(2000, wick::kFloat32).requires_grad_(true);
  const auto version = x._version();
  EXPECT_NE(wick::repr(x).find("requires_grad=True"), std::string::npos);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x._version(), version);
  EXPECT_EQ(x.grad_fn(), nullptr);
}

// A CUDA tensor prints its elements as the same tensor on the CPU does, then the device.
TEST(Print, CudaMatchesCpu) {
  if (!wick::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const Tensor& t : {wick::arange(5000, wick::kFloat32).view({50, 100}) * 0.01,
                          wick::arange(12, wick::kInt16).view({3, 4}), wick::tensor({true, false}),
                          wick::empty({0, 2}, wick::kFloat16)}) {
    const Tensor g = t.cuda();
    EXPECT_EQ(wick::repr(g), wick::detail::repr_on(t, g.device()));
  }
}

}  // namespace
