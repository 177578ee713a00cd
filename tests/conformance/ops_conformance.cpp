// Ops: wick against LibTorch on the same inputs, outputs and gradients.
#include "conformance.h"

using namespace conformance;
using WL = std::vector<wick::Tensor>;
using TL = std::vector<torch::Tensor>;
#define WF [=](const WL& x) -> wick::Tensor
#define TF [=](const TL& x) -> torch::Tensor

namespace {

TEST(Conformance, Arithmetic) {
  wick::manual_seed(1);
  run_all({
      {"add broadcast", {rnd({2, 3}), rnd({3})}, {true, true}, WF { return wick::add(x[0], x[1], 2.5);
}
, TF { return torch::add(x[0], x[1], 2.5); }
, 1, true
}  // namespace
, {"sub", {rnd({2, 1}), rnd({1, 3})}, {true, true}, WF{return x[0] - x[1];
}
, TF { return x[0] - x[1]; }
, 1, true
}
, {"mul", {rnd({4, 1, 3}), rnd({2, 1})}, {true, true}, WF{return x[0] * x[1];
}
, TF { return x[0] * x[1]; }
, 1, true
}
, {"div", {rnd({2, 3}), pos({2, 3})}, {true, true}, WF{return x[0] / x[1];
}
, TF { return x[0] / x[1]; }
, 1, true
}
, {"scalar ops", {rnd({3})}, {true}, WF{return (x[0] + 2) * 3 - x[0] / 4;
}
, TF { return (x[0] + 2) * 3 - x[0] / 4; }
}
, {"rsub rdiv", {pos({3})}, {true}, WF{return 2.0 - 3.0 / x[0];
}
, TF { return 2.0 - 3.0 / x[0]; }
}
, {"neg", {rnd({3})}, {true}, WF{return -x[0];
}
, TF { return -x[0]; }
, 1, true
}
,
});
}

TEST(Conformance, Unary) {
  wick::manual_seed(2);
  run_all({
      {"abs", {rnd({2, 3})}, {true}, WF { return wick::abs(x[0]);
}
, TF { return torch::abs(x[0]); }
, 1, true
}
, {"exp", {rnd({2, 3})}, {true}, WF{return wick::exp(x[0]);
}
, TF { return torch::exp(x[0]); }
, 1, true
}
, {"log", {pos({2, 3})}, {true}, WF{return wick::log(x[0]);
}
, TF { return torch::log(x[0]); }
, 1, true
}
, {"sqrt", {pos({2, 3})}, {true}, WF{return wick::sqrt(x[0]);
}
, TF { return torch::sqrt(x[0]); }
, 1, true
}
, {"rsqrt", {pos({2, 3})}, {true}, WF{return wick::rsqrt(x[0]);
}
, TF { return torch::rsqrt(x[0]); }
, 1, true
}
, {"sin", {rnd({2, 3})}, {true}, WF{return wick::sin(x[0]);
}
, TF { return torch::sin(x[0]); }
, 1, true
}
, {"cos", {rnd({2, 3})}, {true}, WF{return wick::cos(x[0]);
}
, TF { return torch::cos(x[0]); }
, 1, true
}
, {"tanh", {rnd({2, 3})}, {true}, WF{return wick::tanh(x[0]);
}
, TF { return torch::tanh(x[0]); }
, 1, true
}
, {"sigmoid", {rnd({2, 3})}, {true}, WF{return wick::sigmoid(x[0]);
}
, TF { return torch::sigmoid(x[0]); }
, 1, true
}
, {"relu", {rnd({2, 3})}, {true}, WF{return wick::relu(x[0]);
}
, TF { return torch::relu(x[0]); }
, 1, true
}
, {"gelu", {rnd({2, 3})}, {true}, WF{return wick::gelu(x[0]);
}
, TF { return torch::gelu(x[0]); }
, 1, true
}
, {"gelu tanh", {rnd({2, 3})}, {true}, WF{return wick::gelu(x[0], "tanh");
}
, TF { return torch::gelu(x[0], "tanh"); }
}
, {"silu", {rnd({2, 3})}, {true}, WF{return wick::silu(x[0]);
}
, TF { return torch::silu(x[0]); }
, 1, true
}
, {"pow scalar", {pos({2, 3})}, {true}, WF{return wick::pow(x[0], 2.5);
}
, TF { return torch::pow(x[0], 2.5); }
, 1, true
}
, {"pow tensor", {pos({2, 3}), rnd({2, 3})}, {true, true}, WF{return wick::pow(x[0], x[1]);
}
, TF { return torch::pow(x[0], x[1]); }
, 1, true
}
, {"remainder", {rnd({3}), pos({3})}, {true, true}, WF{return wick::remainder(x[0], x[1]);
}
, TF { return torch::remainder(x[0], x[1]); }
}
, {"clamp", {rnd({3, 3})}, {true}, WF{return wick::clamp(x[0], -0.5, 0.7);
}
, TF { return torch::clamp(x[0], -0.5, 0.7); }
}
, {"in place", {rnd({3})}, {true}, WF{auto y = x[0] * 1;
y.exp_();
return y;
}
, TF {
  auto y = x[0] * 1;
  y.exp_();
  return y;
}
, 1, true
}
,
});
}

TEST(Conformance, Reductions) {
  wick::manual_seed(3);
  run_all({
      {"sum", {rnd({3, 4})}, {true}, WF { return x[0].sum();
}
, TF { return x[0].sum(); }
, 1, true
}
, {"sum dims", {rnd({2, 3, 4})}, {true}, WF{return x[0].sum({0, 2}, true);
}
, TF { return x[0].sum({0, 2}, true); }
, 1, true
}
, {"mean", {rnd({3, 4})}, {true}, WF{return x[0].mean({1});
}
, TF { return x[0].mean({1}); }
, 1, true
}
, {"max", {rnd({3, 4})}, {true}, WF{return wick::max(x[0]);
}
, TF { return torch::max(x[0]); }
}
, {"max dim", {rnd({3, 4})}, {true}, WF{return std::get<0>(x[0].max(1));
}
, TF { return std::get<0>(x[0].max(1)); }
, 1, true
}
, {"min dim keepdim", {rnd({3, 4})}, {true}, WF{return std::get<0>(x[0].min(0, true));
}
, TF { return std::get<0>(x[0].min(0, true)); }
}
, {"var", {rnd({3, 4})}, {true}, WF{return wick::var(x[0], {1}, true, false);
}
, TF { return x[0].var(torch::IntArrayRef({1}), true, false); }
}
, {"std", {rnd({3, 4})}, {true}, WF{return wick::std(x[0], {0}, false, true);
}
, TF { return x[0].std(torch::IntArrayRef({0}), false, true); }
}
, {"norm", {rnd({3, 4})}, {true}, WF{return wick::norm(x[0], 2, {1});
}
, TF { return torch::norm(x[0], torch::Scalar(2.0), torch::IntArrayRef({1}), false); }
}
, {"norm p3", {rnd({3, 4})}, {true}, WF{return wick::norm(x[0], 3, {1});
}
, TF { return torch::norm(x[0], torch::Scalar(3.0), torch::IntArrayRef({1}), false); }
}
, {"softmax", {rnd({3, 5})}, {true}, WF{return wick::softmax(x[0], 1);
}
, TF { return torch::softmax(x[0], 1); }
, 1, true
}
, {"log_softmax", {rnd({2, 3, 4})}, {true}, WF{return wick::log_softmax(x[0], 1);
}
, TF { return torch::log_softmax(x[0], 1); }
, 1, true
}
,
});
}

TEST(Conformance, LinearAlgebra) {
  wick::manual_seed(4);
  run_all({
      {"mm", {rnd({5, 3}), rnd({3, 4})}, {true, true}, WF { return wick::mm(x[0], x[1]);
}
, TF { return torch::mm(x[0], x[1]); }
, 4, true
}
, {"matmul 2x2", {rnd({5, 3}), rnd({3, 4})}, {true, true}, WF{return wick::matmul(x[0], x[1]);
}
, TF { return torch::matmul(x[0], x[1]); }
, 4, true
}
, {"matmul 1x1", {rnd({3}), rnd({3})}, {true, true}, WF{return wick::matmul(x[0], x[1]);
}
, TF { return torch::matmul(x[0], x[1]); }
, 4, true
}
, {"matmul 2x1", {rnd({4, 3}), rnd({3})}, {true, true}, WF{return wick::matmul(x[0], x[1]);
}
, TF { return torch::matmul(x[0], x[1]); }
, 4, true
}
, {"matmul batched broadcast", {rnd({2, 1, 4, 3}), rnd({3, 3, 2})}, {true, true},
   WF{return wick::matmul(x[0], x[1]);
}
, TF { return torch::matmul(x[0], x[1]); }
, 4
}
, {"bmm", {rnd({2, 4, 3}), rnd({2, 3, 5})}, {true, true}, WF{return wick::bmm(x[0], x[1]);
}
, TF { return torch::bmm(x[0], x[1]); }
, 4, true
}
, {"addmm", {rnd({4}), rnd({2, 3}), rnd({3, 4})}, {true, true, true},
   WF{return wick::addmm(x[0], x[1], x[2], 0.5, 2);
}
, TF { return torch::addmm(x[0], x[1], x[2], 0.5, 2); }
, 4, true
}
, {"linear", {rnd({6, 3}), rnd({4, 3}), rnd({4})}, {true, true, true},
   WF{return wick::linear(x[0], x[1], x[2]);
}
, TF { return torch::linear(x[0], x[1], x[2]); }
, 4, true
}
, {"linear 3-D", {rnd({2, 6, 3}), rnd({4, 3}), rnd({4})}, {true, true, true},
   WF{return wick::linear(x[0], x[1], x[2]);
}
, TF { return torch::linear(x[0], x[1], x[2]); }
, 4
}
,
});
}

TEST(Conformance, ViewsAndCopies) {
  wick::manual_seed(5);
  run_all({
      {"view", {rnd({2, 3})}, {true}, WF { return x[0].view({3, 2});
}
, TF { return x[0].view({3, 2}); }
, 1, true
}
, {"reshape copy", {rnd({2, 3})}, {true}, WF{return x[0].t().reshape({6});
}
, TF { return x[0].t().reshape({6}); }
}
, {"permute", {rnd({2, 3, 4})}, {true}, WF{return x[0].permute({2, 0, 1});
}
, TF { return x[0].permute({2, 0, 1}); }
, 1, true
}
, {"transpose", {rnd({2, 3, 4})}, {true}, WF{return x[0].transpose(0, 2);
}
, TF { return x[0].transpose(0, 2); }
, 1, true
}
, {"unsqueeze expand", {rnd({2, 3})}, {true}, WF{return x[0].unsqueeze(1).expand({2, 4, 3});
}
, TF { return x[0].unsqueeze(1).expand({2, 4, 3}); }
, 1, true
}
, {"squeeze", {rnd({2, 1, 3})}, {true}, WF{return x[0].squeeze(1);
}
, TF { return x[0].squeeze(1); }
}
, {"narrow", {rnd({4, 5})}, {true}, WF{return x[0].narrow(1, 1, 3);
}
, TF { return x[0].narrow(1, 1, 3); }
}
, {"select", {rnd({4, 5})}, {true}, WF{return x[0].select(0, 2);
}
, TF { return x[0].select(0, 2); }
, 1, true
}
, {"slice step", {rnd({6, 2})}, {true}, WF{return x[0].slice(0, 1, 6, 2);
}
, TF { return x[0].slice(0, 1, 6, 2); }
, 1, true
}
, {"flatten", {rnd({2, 3, 4})}, {true}, WF{return x[0].flatten(1);
}
, TF { return x[0].flatten(1); }
}
, {"clone contiguous", {rnd({3, 4})}, {true}, WF{return x[0].t().contiguous() * 2;
}
, TF { return x[0].t().contiguous() * 2; }
}
,
});
}

TEST(Conformance, IndexingAndJoining) {
  wick::manual_seed(6);
  auto idx = wick::tensor({2, 0, 2, 1});
  auto gidx = wick::tensor({{0, 2}, {1, 1}, {2, 0}});
  run_all({
      {"index_select", {rnd({3, 4}), idx}, {true, false}, WF { return wick::index_select(x[0], 0, x[1]);
}
, TF { return torch::index_select(x[0], 0, x[1]); }
, 1, true
}
, {"gather", {rnd({3, 3}), gidx}, {true, false}, WF{return wick::gather(x[0], 1, x[1]);
}
, TF { return torch::gather(x[0], 1, x[1]); }
, 1, true
}
, {"cat", {rnd({2, 2}), rnd({2, 3})}, {true, true}, WF{return wick::cat({x[0], x[1]}, 1);
}
, TF { return torch::cat({x[0], x[1]}, 1); }
, 1, true
}
, {"stack", {rnd({2, 3}), rnd({2, 3})}, {true, true}, WF{return wick::stack({x[0], x[1]}, 1);
}
, TF { return torch::stack({x[0], x[1]}, 1); }
, 1, true
}
, {"where", {rnd({3, 3}), rnd({3, 3})}, {true, true}, WF{return wick::where(x[0] > 0, x[0], x[1]);
}
, TF { return torch::where(x[0] > 0, x[0], x[1]); }
, 1, true
}
, {"masked_fill", {rnd({2, 3})}, {true}, WF{return wick::masked_fill(x[0], x[0] < 0, 0.5);
}
, TF { return x[0].masked_fill(x[0] < 0, 0.5); }
, 1, true
}
, {"one_hot", {wick::tensor({0, 3, 1})}, {false}, WF{return wick::one_hot(x[0], 5);
}
, TF { return torch::one_hot(x[0], 5); }
}
,
});
}

}  // namespace
