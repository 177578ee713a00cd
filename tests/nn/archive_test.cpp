// LibTorch's serialize::OutputArchive / InputArchive (tensors, values, nested archives, files,
// streams and bytes), Module::save/load and Optimizer::save/load through them, wick::save/load
// with streams, their errors (which change nothing), and nn::Cloneable's deep copies.
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "nn_test_util.h"
#include "wick/wick.h"

namespace fs = std::filesystem;
using namespace wick;
using wick::testing::error_of;

namespace {

std::string temp_file(const std::string& name) {
  auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (fs::temp_directory_path() / ("wick_archive_" + std::to_string(getpid()) + "_" + info->name() + "_" + name))
      .string();
}

std::vector<double> values(const Tensor& t) { return t.detach().cpu().to(kFloat64).to_vector<double>(); }

bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

struct NetImpl : nn::Module {
  explicit NetImpl(int64_t hidden = 4) {
    fc1 = register_module("fc1", nn::Linear(3, hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, 2));
    act = register_module("act", nn::ReLU());
    steps = register_buffer("steps", tensor({7.0}));
  }
  Tensor forward(const Tensor& x) { return fc2(act(fc1(x))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::ReLU act{nullptr};
  Tensor steps;
};
WICK_MODULE(Net);

void expect_same_state(const nn::Module& a, const nn::Module& b) {
  auto sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.keys(), sb.keys());
  for (const auto& [name, t] : sa) EXPECT_EQ(values(t), values(sb[name])) << name;
}

std::map<std::string, std::vector<double>> snapshot(const nn::Module& m) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, t] : m.state_dict()) out[name] = values(t);
  return out;
}

TEST(Archive, TensorsValuesAndNestedArchivesRoundTrip) {
  serialize::OutputArchive inner, innermost, empty;
  innermost.write("deep", tensor({1.5, 2.5}));
  inner.write("w", arange(6, kFloat32).reshape({2, 3}).t());  // not contiguous
  inner.write("deeper", innermost);
  serialize::OutputArchive out;
  out.write("ids", tensor(std::vector<int64_t>{4, 5, 6}));
  out.write("running", full({2}, 0.25), /*is_buffer=*/true);
  out.write("epoch", IValue(int64_t(12)));
  out.write("lr", IValue(0.1));
  out.write("flag", IValue(true));
  out.write("name", IValue(std::string("resnet")));
  out.write("sub", inner);
  out.write("nothing", empty);
  const std::string path = temp_file("a.pt");
  out.save_to(path);

  serialize::InputArchive in;
  in.load_from(path);
  EXPECT_EQ(in.keys(), (std::vector<std::string>{"epoch", "flag", "ids", "lr", "name", "nothing", "running", "sub"}));
  Tensor ids, running;
  in.read("ids", ids);
  EXPECT_EQ(ids.dtype(), kInt64);
  EXPECT_EQ(values(ids), (std::vector<double>{4, 5, 6}));
  in.read("running", running, /*is_buffer=*/true);
  EXPECT_EQ(values(running), (std::vector<double>{0.25, 0.25}));
  IValue v;
  in.read("epoch", v);
  EXPECT_EQ(v.toInt(), 12);
  in.read("lr", v);
  EXPECT_EQ(v.toDouble(), 0.1);
  in.read("flag", v);
  EXPECT_TRUE(v.toBool());
  in.read("name", v);
  EXPECT_EQ(v.toStringRef(), "resnet");

  serialize::InputArchive sub, deeper, nothing;
  in.read("sub", sub);
  EXPECT_EQ(sub.keys(), (std::vector<std::string>{"deeper", "w"}));
  Tensor w;
  sub.read("w", w);
  EXPECT_EQ(w.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(w), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  sub.read("deeper", deeper);
  Tensor deep;
  deeper.read("deep", deep);
  EXPECT_EQ(values(deep), (std::vector<double>{1.5, 2.5}));
  // An empty nested archive is there, with no keys.
  in.read("nothing", nothing);
  EXPECT_TRUE(nothing.keys().empty());

  // try_read: false for what is not there, and the tensor stays as it was.
  Tensor untouched = tensor({9.0});
  EXPECT_FALSE(in.try_read("missing", untouched));
  EXPECT_EQ(values(untouched), (std::vector<double>{9}));
  EXPECT_FALSE(in.try_read("missing", sub));
  EXPECT_FALSE(in.try_read("missing", v));
  EXPECT_TRUE(in.try_read("ids", untouched));
  EXPECT_EQ(values(untouched), (std::vector<double>{4, 5, 6}));
  fs::remove(path);
}

TEST(Archive, ReadCopiesIntoATensorOfTheSameShapeElseAssigns) {
  serialize::OutputArchive out;
  out.write("w", tensor({1.0, 2.0, 3.0}));
  std::stringstream bytes;
  out.save_to(bytes);
  serialize::InputArchive in;
  in.load_from(bytes);

  // Same shape: copied into the tensor (every handle sees it), no autograd record, its dtype kept.
  Tensor param = zeros({3}, kFloat64).requires_grad_();
  Tensor alias = param;
  in.read("w", param);
  EXPECT_EQ(param.dtype(), kFloat64);
  EXPECT_TRUE(param.is_leaf());
  EXPECT_TRUE(param.requires_grad());
  EXPECT_EQ(values(alias), (std::vector<double>{1, 2, 3}));
  // Another shape: assigned.
  Tensor other = zeros({2, 2});
  Tensor other_alias = other;
  in.read("w", other);
  EXPECT_EQ(other.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(values(other_alias), (std::vector<double>{0, 0, 0, 0}));
}

TEST(Archive, StreamsFunctionsAndBytes) {
  serialize::OutputArchive out;
  out.write("a", tensor({1, 2}));
  out.write("b", IValue(int64_t(-3)));
  std::string captured;
  out.save_to([&](const void* data, size_t n) {
    captured.append(static_cast<const char*>(data), n);
    return n;
  });
  serialize::InputArchive in;
  in.load_from(captured.data(), captured.size());
  Tensor a;
  in.read("a", a);
  EXPECT_EQ(values(a), (std::vector<double>{1, 2}));
  IValue b;
  in.read("b", b);
  EXPECT_EQ(b.toInt(), -3);

  std::ostringstream os;
  out.save_to(os);
  EXPECT_EQ(os.str(), captured);
  std::istringstream is(os.str());
  serialize::InputArchive from_stream;
  from_stream.load_from(is, Device(kCPU));
  EXPECT_EQ(from_stream.keys(), (std::vector<std::string>{"a", "b"}));

  // A writer that takes less than it is given fails the save.
  EXPECT_TRUE(starts(error_of([&] { out.save_to([](const void*, size_t n) { return n / 2; }); }),
                     "[OutputArchive.save_to] "));
}

TEST(Archive, WritingAKeyAgainReplacesIt) {
  serialize::OutputArchive inner;
  inner.write("x", tensor({1.0}));
  serialize::OutputArchive out;
  out.write("k", inner);
  out.write("k", tensor({5.0}));
  std::stringstream s;
  out.save_to(s);
  serialize::InputArchive in;
  in.load_from(s);
  EXPECT_EQ(in.keys(), (std::vector<std::string>{"k"}));
  Tensor k;
  in.read("k", k);
  EXPECT_EQ(values(k), (std::vector<double>{5}));
  serialize::InputArchive nested;
  EXPECT_FALSE(in.try_read("k", nested));
}

TEST(Archive, ErrorsNameTheCallAndChangeNothing) {
  serialize::OutputArchive out;
  EXPECT_THROW(out.write("a.b", tensor({1.0})), ValueError);
  EXPECT_TRUE(starts(error_of([&] { out.write("a.b", tensor({1.0})); }), "[OutputArchive.write] "));
  EXPECT_TRUE(starts(error_of([&] { out.write("", tensor({1.0})); }), "[OutputArchive.write] "));
  EXPECT_TRUE(starts(error_of([&] { out.write("u", Tensor()); }), "[OutputArchive.write] "));
  out.write("w", tensor({1.0, 2.0}));
  out.write("p", tensor({3.0}));
  const std::string path = temp_file("good.pt");
  out.save_to(path);

  serialize::InputArchive in;
  in.load_from(path);
  Tensor t;
  EXPECT_THROW(in.read("absent", t), KeyError);
  EXPECT_TRUE(starts(error_of([&] { in.read("absent", t); }), "[InputArchive.read] no tensor 'absent'"));
  serialize::InputArchive nested;
  EXPECT_THROW(in.read("absent", nested), KeyError);
  IValue v;
  EXPECT_THROW(in.read("absent", v), KeyError);
  // Written as a parameter, read as a buffer.
  EXPECT_THROW(in.read("w", t, /*is_buffer=*/true), ValueError);
  EXPECT_FALSE(t.defined());

  // A missing file, a file that is not safetensors and a truncated one: ValueError, and the
  // archive keeps what it held.
  EXPECT_THROW(in.load_from(temp_file("absent.pt")), ValueError);
  EXPECT_TRUE(starts(error_of([&] { in.load_from(temp_file("absent.pt")); }), "[InputArchive.load_from] "));
  const std::string junk = temp_file("junk.pt");
  std::ofstream(junk) << "this is not a safetensors file at all";
  EXPECT_TRUE(starts(error_of([&] { in.load_from(junk); }), "[InputArchive.load_from] "));
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  const std::string cut = bytes.substr(0, bytes.size() - 4);
  EXPECT_TRUE(starts(error_of([&] { in.load_from(cut.data(), cut.size()); }), "[InputArchive.load_from] "));
  std::istringstream cut_stream(cut);
  EXPECT_THROW(in.load_from(cut_stream), ValueError);
  in.read("w", t);
  EXPECT_EQ(values(t), (std::vector<double>{1, 2}));

  // Saving to a directory that does not exist fails and writes nothing.
  const std::string nowhere = temp_file("no_such_dir") + "/x.pt";
  EXPECT_TRUE(starts(error_of([&] { out.save_to(nowhere); }), "[OutputArchive.save_to] "));
  EXPECT_FALSE(fs::exists(nowhere));
  fs::remove(path);
  fs::remove(junk);
}

// ---- modules

TEST(ArchiveModule, LibTorchPatternRoundTrip) {
  Net net;
  net->steps.fill_(11);
  serialize::OutputArchive out;
  net->save(out);
  const std::string path = temp_file("m.pt");
  out.save_to(path);

  Net other;
  ASSERT_NE(values(other->fc1->weight), values(net->fc1->weight));
  Tensor weight_handle = other->fc1->weight;
  serialize::InputArchive in;
  in.load_from(path);
  other->load(in);
  expect_same_state(*net, *other);
  EXPECT_EQ(values(weight_handle), values(net->fc1->weight));  // copied in place
  EXPECT_TRUE(other->fc1->weight.requires_grad());

  // LibTorch's key layout: a nested archive per submodule (a module without tensors included).
  EXPECT_EQ(in.keys(), (std::vector<std::string>{"act", "fc1", "fc2", "steps"}));
  serialize::InputArchive fc1;
  in.read("fc1", fc1);
  EXPECT_EQ(fc1.keys(), (std::vector<std::string>{"bias", "weight"}));
  Tensor steps;
  EXPECT_THROW(in.read("steps", steps), ValueError);  // a buffer
  in.read("steps", steps, /*is_buffer=*/true);
  EXPECT_EQ(values(steps), (std::vector<double>{11}));
  fs::remove(path);
}

TEST(ArchiveModule, ReadsTheFilesOfWickSave) {
  Net net;
  const std::string path = temp_file("state.pt");
  save(net, path);
  Net other;
  serialize::InputArchive in;
  in.load_from(path);
  other->load(in);
  expect_same_state(*net, *other);
  fs::remove(path);
}

TEST(ArchiveModule, WickLoadReadsAnArchivesFile) {
  // LibTorch's torch::load(model, path) reads what model->save(archive) and save_to wrote.
  Net net;
  serialize::OutputArchive out;
  net->save(out);
  const std::string path = temp_file("m.pt");
  out.save_to(path);
  Net other;
  load(other, path);
  expect_same_state(*net, *other);

  Tensor x;
  const std::string msg = error_of([&] { load(x, path); });
  EXPECT_TRUE(starts(msg, "[load] '" + path + "' holds an archive, not a tensor")) << msg;

  nn::Linear lin(3, 1);
  optim::SGD opt(lin->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  lin(randn({2, 3})).sum().backward();
  opt.step();
  serialize::OutputArchive opt_out;
  opt.save(opt_out);
  std::stringstream s;
  opt_out.save_to(s);
  optim::SGD back(lin->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  load(back, s);
  const Tensor& w = lin->weight;
  EXPECT_EQ(values(back.state(w).tensors.at("momentum_buffer")), values(opt.state(w).tensors.at("momentum_buffer")));
  fs::remove(path);
}

TEST(ArchiveModule, FailedLoadsChangeNothing) {
  Net small(4), wide(5);
  serialize::OutputArchive out;
  wide->save(out);
  std::stringstream s;
  out.save_to(s);
  serialize::InputArchive in;
  in.load_from(s);
  const auto before = snapshot(*small);
  EXPECT_THROW(small->load(in), ValueError);
  const std::string msg = error_of([&] { small->load(in); });
  EXPECT_TRUE(starts(msg, "[load] size mismatch for fc1.weight")) << msg;
  EXPECT_EQ(snapshot(*small), before);

  // Only fc1 written: fc1 would load, fc2 is missing, so nothing loads.
  serialize::OutputArchive partial, fc1;
  Net source(4);
  source->fc1->save(fc1);
  partial.write("fc1", fc1);
  partial.write("steps", tensor({1.0}), /*is_buffer=*/true);
  std::stringstream p;
  partial.save_to(p);
  serialize::InputArchive pin;
  pin.load_from(p);
  EXPECT_THROW(small->load(pin), KeyError);
  const std::string missing = error_of([&] { small->load(pin); });
  EXPECT_TRUE(starts(missing, "[load] no tensor 'fc2.weight'")) << missing;
  EXPECT_EQ(snapshot(*small), before);
}

TEST(ArchiveModule, SaveAndLoadThroughStreams) {
  Net net, other;
  std::stringstream s;
  save(net, s);
  load(other, s);
  expect_same_state(*net, *other);

  std::stringstream ts;
  Tensor x = randn({2, 2});
  save(x, ts);
  Tensor y;
  load(y, ts);
  EXPECT_EQ(values(y), values(x));

  std::stringstream vs;
  save(std::vector<Tensor>{tensor({1.0}), tensor({2, 3})}, vs);
  std::vector<Tensor> back;
  load(back, vs);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(values(back[1]), (std::vector<double>{2, 3}));

  std::istringstream bad("garbage");
  const auto before = snapshot(*other);
  EXPECT_TRUE(starts(error_of([&] { load(other, bad); }), "[load] "));
  EXPECT_EQ(snapshot(*other), before);
}

// ---- optimizers

struct Problem {
  Tensor x = arange(12, kFloat32).reshape({4, 3}) / 10;
  Tensor y = tensor({1.0f, -1.0f, 0.5f, 2.0f}).reshape({4, 1});
};

void train_step(nn::Linear& model, optim::Optimizer& opt, const Problem& p) {
  opt.zero_grad();
  Tensor loss = (model(p.x) - p.y).pow(2).mean();
  loss.backward();
  opt.step();
}

TEST(ArchiveOptimizer, ResumedTrainingTakesTheSameNextStep) {
  Problem p;
  nn::Linear model(3, 1);
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.05));
  for (int i = 0; i < 3; ++i) train_step(model, opt, p);

  serialize::OutputArchive out, model_ar, opt_ar;
  model->save(model_ar);
  opt.save(opt_ar);
  out.write("model", model_ar);
  out.write("optimizer", opt_ar);
  const std::string path = temp_file("ckpt.pt");
  out.save_to(path);

  train_step(model, opt, p);  // the uninterrupted run's fourth step

  nn::Linear resumed(3, 1);
  optim::Adam resumed_opt(resumed->parameters(), optim::AdamOptions(0.05));
  serialize::InputArchive in, model_in, opt_in;
  in.load_from(path);
  in.read("model", model_in);
  in.read("optimizer", opt_in);
  resumed->load(model_in);
  resumed_opt.load(opt_in);
  train_step(resumed, resumed_opt, p);
  EXPECT_EQ(values(resumed->weight), values(model->weight));
  EXPECT_EQ(values(resumed->bias), values(model->bias));

  // Loading the model's archive as an optimizer's state fails and changes nothing.
  EXPECT_THROW(resumed_opt.load(model_in), KeyError);
  train_step(resumed, resumed_opt, p);
  train_step(model, opt, p);
  EXPECT_EQ(values(resumed->weight), values(model->weight));
  fs::remove(path);
}

TEST(ArchiveOptimizer, StreamsAndAWrongKindOfOptimizer) {
  Problem p;
  nn::Linear model(3, 1);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  train_step(model, opt, p);
  std::stringstream s;
  save(opt, s);
  optim::SGD other(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  load(other, s);
  const Tensor& w = model->weight;
  EXPECT_EQ(values(other.state(w).tensors.at("momentum_buffer")), values(opt.state(w).tensors.at("momentum_buffer")));

  serialize::OutputArchive ar;
  opt.save(ar);
  std::stringstream as;
  ar.save_to(as);
  serialize::InputArchive in;
  in.load_from(as);
  optim::Adam adam(model->parameters(), optim::AdamOptions(0.1));
  EXPECT_TRUE(starts(error_of([&] { adam.load(in); }), "[load] "));
  EXPECT_TRUE(adam.state().empty());
}

// ---- Cloneable

struct TwoLayerImpl : nn::Cloneable<TwoLayerImpl> {
  explicit TwoLayerImpl(int64_t hidden) : hidden(hidden) { reset(); }
  void reset() override {
    fc = register_module("fc", nn::Linear(3, hidden));
    norm = register_module("norm", nn::BatchNorm1d(hidden));
    scale = register_parameter("scale", ones({hidden}));
  }
  Tensor forward(const Tensor& x) { return norm(fc(x)) * scale; }
  int64_t hidden;
  nn::Linear fc{nullptr};
  nn::BatchNorm1d norm{nullptr};
  Tensor scale;
};
WICK_MODULE(TwoLayer);

TEST(ArchiveClone, DeepCopyThroughAHolder) {
  TwoLayer net(4);
  net->scale.requires_grad_(false);
  {
    NoGradGuard g;
    net->scale.mul_(3);
  }
  net->norm(randn({5, 4}));  // running statistics away from their start
  net->eval();

  auto copy = std::dynamic_pointer_cast<TwoLayerImpl>(net->clone());
  ASSERT_NE(copy, nullptr);
  TwoLayer held(copy);
  EXPECT_EQ(held->hidden, 4);
  expect_same_state(*net, *held);
  EXPECT_FALSE(held->scale.requires_grad());
  EXPECT_TRUE(held->fc->weight.requires_grad());
  EXPECT_FALSE(held->is_training());
  EXPECT_FALSE(held->norm->is_training());
  // Its members are its own registered tensors and modules.
  EXPECT_EQ(held->fc.ptr(), held->named_children()["fc"]);
  EXPECT_NE(held->fc.ptr(), net->fc.ptr());
  EXPECT_NE(held->fc->weight.data_ptr(), net->fc->weight.data_ptr());

  const auto before = snapshot(*net);
  {
    NoGradGuard g;
    for (auto& p : held->parameters()) p.add_(1);
    for (auto& b : held->buffers()) b.add_(1);
  }
  EXPECT_EQ(snapshot(*net), before);
  Tensor x = randn({2, 3});
  EXPECT_NE(values(held(x)), values(net(x)));
}

TEST(ArchiveClone, LayersMadeThroughHoldersClone) {
  nn::Linear lin(3, 2);
  auto copy = std::dynamic_pointer_cast<nn::LinearImpl>(lin->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(values(copy->weight), values(lin->weight));
  {
    NoGradGuard g;
    copy->weight.zero_();
  }
  EXPECT_NE(values(lin->weight), values(copy->weight));

  nn::Sequential seq(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  auto seq_copy = seq->clone();
  expect_same_state(*seq, *seq_copy);
  Tensor x = randn({4, 2});
  EXPECT_EQ(values(std::dynamic_pointer_cast<nn::SequentialImpl>(seq_copy)->forward(x)), values(seq(x)));
}

struct PlainImpl : nn::Module {
  PlainImpl() { w = register_parameter("w", zeros({2})); }
  Tensor w;
};

TEST(ArchiveClone, APlainModuleRaises) {
  auto plain = std::make_shared<PlainImpl>();
  EXPECT_THROW(plain->clone(), NotImplementedError);
  EXPECT_EQ(error_of([&] { plain->clone(); }),
            "[clone] clone() has not been implemented for Plain. Subclass wick::nn::Cloneable<Plain> instead of "
            "wick::nn::Module to inherit the ability to clone.");
}

// Registers in its constructor, not in reset(): the clone has no parameters.
struct ForgetfulImpl : nn::Cloneable<ForgetfulImpl> {
  ForgetfulImpl() { w = register_parameter("w", zeros({2})); }
  void reset() override {}
  Tensor w;
};

TEST(ArchiveClone, ResetMustRegisterEverything) {
  auto m = std::make_shared<ForgetfulImpl>();
  const std::string msg = error_of([&] { m->clone(); });
  EXPECT_TRUE(starts(msg, "[clone] the clone of Forgetful has the parameters () after reset(), where the original has (w)"))
      << msg;
}

}  // namespace
