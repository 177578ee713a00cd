// Custom autograd functions (wick/autograd_function.h): values, gradients against the built-in
// ops' and hand values, saved tensors and data, needs_input_grad, mark_dirty,
// mark_non_differentiable, materialized gradients, double backward and the errors.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/wick.h"

namespace wick {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;
using testing::rnd;
using testing::test_devices;

std::vector<double> values(const Tensor& t) { return t.detach().cpu().contiguous().to_vector<double>(); }

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  ASSERT_EQ(a.sizes(), b.sizes());
  std::vector<double> x = values(a), y = values(b);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], tol) << "element " << i;
}

// exp, saving its result.
struct MyExp : autograd::Function<MyExp> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return {y};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};

// linear as in PyTorch's extending-autograd docs: x w^T + b, b optional.
struct LinearFunction : autograd::Function<LinearFunction> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b = {}) {
    ctx->save_for_backward({x, w, b});
    Tensor out = x.mm(w.t());
    if (b.defined()) out = out + b.unsqueeze(0).expand_as(out);
    return {out};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto saved = ctx->get_saved_variables();
    Tensor x = saved[0], w = saved[1], b = saved[2];
    Tensor gx, gw, gb;
    if (ctx->needs_input_grad(0)) gx = g[0].mm(w);
    if (ctx->needs_input_grad(1)) gw = g[0].t().mm(x);
    if (b.defined() && ctx->needs_input_grad(2)) gb = g[0].sum({0});
    return {gx, gw, gb};
  }
};

// x times a constant passed as a double (a non-tensor argument), kept in saved_data.
struct MulConstant : autograd::Function<MulConstant> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double c) {
    ctx->saved_data["c"] = c;
    return x * c;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->saved_data["c"].toDouble(), Tensor()};
  }
};

TEST(CustomFunction, ExpValuesGradientsAndName) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = rnd({3, 4}).to(d).detach().requires_grad_();
    Tensor y = MyExp::apply(x)[0];
    ASSERT_TRUE(y.grad_fn() != nullptr);
    EXPECT_EQ(y.grad_fn()->name(), "MyExpBackward");
    expect_close(y, x.exp());
    Tensor w = rnd({3, 4}, false).to(d);
    (y * w).sum().backward();
    expect_close(x.grad(), x.exp() * w);
    // forward ran with grad mode off and the node is the output's only history
    EXPECT_EQ(y.grad_fn()->next_edges().size(), 1u);
  }
}

TEST(CustomFunction, LinearMatchesTheBuiltIn) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = rnd({5, 3}).to(d).detach().requires_grad_(), w = rnd({4, 3}).to(d).detach().requires_grad_(),
           b = rnd({4}).to(d).detach().requires_grad_();
    Tensor y = LinearFunction::apply(x, w, b)[0];
    Tensor ref = nn::functional::linear(x, w, b);
    expect_close(y, ref);
    Tensor gy = rnd({5, 4}, false).to(d);
    auto mine = autograd::grad({y}, {x, w, b}, {gy});
    auto theirs = autograd::grad({ref}, {x, w, b}, {gy});
    for (size_t i = 0; i < 3; ++i) expect_close(mine[i], theirs[i]);
    // without a bias (an undefined tensor argument) and with gradcheck
    testing::gradcheck([](const auto& in) { return LinearFunction::apply(in[0], in[1])[0]; },
                       {rnd({2, 3}), rnd({4, 3})}, d);
    testing::gradcheck([](const auto& in) { return LinearFunction::apply(in[0], in[1], in[2])[0]; },
                       {rnd({2, 3}), rnd({4, 3}), rnd({4})}, d);
  }
}

TEST(CustomFunction, NonTensorArgumentsPassThrough) {
  Tensor x = rnd({3});
  Tensor y = MulConstant::apply(x, 5.0);  // forward returns a Tensor: so does apply
  EXPECT_EQ(y.grad_fn()->name(), "MulConstantBackward");
  expect_close(y, x * 5.0);
  y.sum().backward();
  expect_close(x.grad(), full({3}, 5.0, TensorOptions(kFloat64)));
}

struct RecordNeeds : autograd::Function<RecordNeeds> {
  static inline std::vector<bool> seen_forward, seen_backward;
  static variable_list forward(AutogradContext* ctx, const Tensor& a, int64_t k, const Tensor& b) {
    seen_forward = {ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad({0, 1})};
    return {a * b * double(k)};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    seen_backward = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    return {ctx->needs_input_grad(0) ? g[0] : Tensor(), Tensor(), ctx->needs_input_grad(1) ? g[0] : Tensor()};
  }
};

TEST(CustomFunction, NeedsInputGradCountsTensorInputs) {
  Tensor a = rnd({2}), b = rnd({2}, false);
  Tensor y = RecordNeeds::apply(a, int64_t(3), b)[0];
  EXPECT_EQ(RecordNeeds::seen_forward, (std::vector<bool>{true, false, true}));
  y.sum().backward();
  EXPECT_EQ(RecordNeeds::seen_backward, (std::vector<bool>{true, false}));
  EXPECT_TRUE(a.grad().defined());
  // under no_grad nothing records and no input's gradient is wanted
  {
    NoGradGuard g;
    Tensor z = RecordNeeds::apply(a, int64_t(1), b)[0];
    EXPECT_FALSE(z.requires_grad());
    EXPECT_TRUE(z.grad_fn() == nullptr);
  }
  EXPECT_EQ(RecordNeeds::seen_forward, (std::vector<bool>{false, false, false}));
}

// Doubles x in place and returns it.
struct DoubleInPlace : autograd::Function<DoubleInPlace> {
  static variable_list forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return {x};
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2.0}; }
};

TEST(CustomFunction, MarkDirtyMakesTheInputTheOutput) {
  Tensor leaf = rnd({3});
  Tensor a = leaf * 1.0;
  const uint32_t before = a._version();
  Tensor r = DoubleInPlace::apply(a)[0];
  EXPECT_TRUE(r.is_same(a));  // the input itself, now this node's output
  EXPECT_GT(a._version(), before);
  EXPECT_EQ(a.grad_fn()->name(), "DoubleInPlaceBackward");
  expect_close(a, leaf * 2.0);
  (a * a).sum().backward();  // d/dleaf (2 leaf)^2 = 8 leaf
  expect_close(leaf.grad(), leaf * 8.0);
  // a leaf that requires grad may not be modified in place
  Tensor l2 = rnd({3});
  try {
    DoubleInPlace::apply(l2);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("a leaf Variable that requires grad has been used in an in-place operation"),
              std::string::npos)
        << e.what();
  }
}

// Returns (2x, x > 0 as a float mask): the mask gets no gradient.
struct WithMask : autograd::Function<WithMask> {
  static inline bool second_defined = false;
  static variable_list forward(AutogradContext* ctx, const Tensor& x, bool materialize) {
    Tensor mask = (x > 0).to(x.dtype());
    ctx->mark_non_differentiable({mask});
    ctx->set_materialize_grads(materialize);
    return {x * 2.0, mask};
  }
  static variable_list backward(AutogradContext*, variable_list g) {
    second_defined = g[1].defined();
    if (second_defined) {
      EXPECT_EQ(values(g[1]), std::vector<double>(size_t(g[1].numel()), 0.0));
    }
    return {g[0] * 2.0, Tensor()};
  }
};

TEST(CustomFunction, NonDifferentiableOutputsAndMaterializedGrads) {
  Tensor x = rnd({4});
  auto out = WithMask::apply(x, true);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  EXPECT_EQ(values(out[1]), values((x > 0).to(kFloat64)));
  out[0].sum().backward();
  EXPECT_TRUE(WithMask::second_defined);  // zeros, materialized
  expect_close(x.grad(), full({4}, 2.0, TensorOptions(kFloat64)));
  x.set_grad(Tensor());
  auto out2 = WithMask::apply(x, false);
  out2[0].sum().backward();
  EXPECT_FALSE(WithMask::second_defined);
  expect_close(x.grad(), full({4}, 2.0, TensorOptions(kFloat64)));
}

// Returns its input unchanged: the result is a new tensor with this node as grad_fn.
struct Identity : autograd::Function<Identity> {
  static variable_list forward(AutogradContext*, const Tensor& x) { return {x}; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 3.0}; }
};

TEST(CustomFunction, AnInputReturnedIsANewAlias) {
  Tensor x = rnd({2});
  Tensor y = Identity::apply(x)[0];
  EXPECT_FALSE(y.is_same(x));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "IdentityBackward");
  y.sum().backward();
  expect_close(x.grad(), full({2}, 3.0, TensorOptions(kFloat64)));
}

TEST(CustomFunction, DoubleBackwardThroughSavedOutput) {
  // MyExp's backward multiplies by its saved output, whose grad_fn is its own node under
  // create_graph: d2/dx2 exp(x) = exp(x)
  for (Device d : test_devices()) {
    Tensor x = rnd({5}).to(d).detach().requires_grad_();
    Tensor g = autograd::grad({MyExp::apply(x)[0].sum()}, {x}, {}, std::nullopt, true)[0];
    ASSERT_TRUE(g.requires_grad());
    Tensor g2 = autograd::grad({g.sum()}, {x})[0];
    expect_close(g2, x.exp());
    testing::gradgradcheck([](const auto& in) { return LinearFunction::apply(in[0], in[1], in[2])[0]; },
                           {rnd({2, 3}), rnd({4, 3}), rnd({4})}, d);
  }
}

struct SavedDataKinds : autograd::Function<SavedDataKinds> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    ctx->saved_data["i"] = int64_t(7);
    ctx->saved_data["n"] = 3;
    ctx->saved_data["d"] = 0.5;
    ctx->saved_data["b"] = true;
    ctx->saved_data["t"] = x * 2.0;
    ctx->saved_data["s"] = std::string("name");
    return {x * 1.0};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto& sd = ctx->saved_data;
    EXPECT_EQ(sd["i"].toInt(), 7);
    EXPECT_EQ(sd["n"].toInt(), 3);
    EXPECT_EQ(sd["d"].toDouble(), 0.5);
    EXPECT_TRUE(sd["b"].toBool());
    EXPECT_EQ(sd["s"].toStringRef(), "name");
    EXPECT_THROW((void)sd["s"].toInt(), TypeError);
    EXPECT_TRUE(sd["missing"].isNone());
    return {g[0] * sd["t"].toTensor()};
  }
};

TEST(CustomFunction, SavedDataHoldsEachKind) {
  Tensor x = rnd({3});
  SavedDataKinds::apply(x)[0].sum().backward();
  expect_close(x.grad(), x * 2.0);
}

struct TooManyGrads : autograd::Function<TooManyGrads> {
  static variable_list forward(AutogradContext*, const Tensor& x) { return {x * 2.0}; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], g[0]}; }
};
struct TrailingUndefined : autograd::Function<TrailingUndefined> {
  static variable_list forward(AutogradContext*, const Tensor& x) { return {x * 2.0}; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2.0, Tensor()}; }
};
struct WrongShape : autograd::Function<WrongShape> {
  static variable_list forward(AutogradContext*, const Tensor& x) { return {x * 2.0}; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0].sum({0}, true).repeat({1, 2})}; }
};
struct GradForScalar : autograd::Function<GradForScalar> {
  static variable_list forward(AutogradContext*, const Tensor& x, double c) { return {x * c}; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], g[0]}; }
};
struct SavesAndReadsTwice : autograd::Function<SavesAndReadsTwice> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return {x * x};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * 2.0 * ctx->get_saved_variables()[0]};
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CustomFunction, Errors) {
  Tensor x = rnd({2, 3});
  EXPECT_EQ(error_of([&] { TooManyGrads::apply(x)[0].sum().backward(); }),
            "[backward] function TooManyGradsBackward returned an incorrect number of gradients (expected 1, got 2)");
  EXPECT_EQ(error_of([&] { (void)autograd::grad({TooManyGrads::apply(x)[0].sum()}, {x}); }),
            "[grad] function TooManyGradsBackward returned an incorrect number of gradients (expected 1, got 2)");
  // extra undefined results are dropped
  TrailingUndefined::apply(x)[0].sum().backward();
  expect_close(x.grad(), full({2, 3}, 2.0, TensorOptions(kFloat64)));
  std::string m = error_of([&] { WrongShape::apply(x)[0].sum().backward(); });
  EXPECT_NE(m.find("Function WrongShapeBackward returned an invalid gradient at index 0 - got [1, 6] but expected "
                   "shape compatible with [2, 3]"),
            std::string::npos)
      << m;
  m = error_of([&] { GradForScalar::apply(x, 2.0)[0].sum().backward(); });
  EXPECT_NE(m.find("returned a gradient different than None at position 2"), std::string::npos) << m;
  // saved tensors: freed after a backward without retain_graph; checked for in-place changes
  Tensor y = SavesAndReadsTwice::apply(x)[0].sum();
  y.backward();
  EXPECT_NE(error_of([&] { y.backward(); }).find("Trying to backward through the graph a second time"),
            std::string::npos);
  Tensor z0 = x * 1.0;
  Tensor z = SavesAndReadsTwice::apply(z0)[0].sum();
  {
    NoGradGuard g;
    z0.add_(1.0);
  }
  EXPECT_NE(error_of([&] { z.backward(); }).find("modified by an inplace operation"), std::string::npos);
}

}  // namespace
}  // namespace wick
