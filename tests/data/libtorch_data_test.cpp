// LibTorch's data pipeline on wick's loader: transforms (Normalize, Stack, Lambda, TensorLambda,
// BatchLambda) against hand values, map chains, datasets::MNIST from small IDX files written
// here (and Fashion-MNIST's files when Debian's package is installed), the samplers' orders,
// DataLoaderOptions' chained setters, make_data_loader with and without workers, the errors;
// and a LibTorch training-loop snippet, renamed, run over one epoch.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "idx_files.h"
#include "../test_files.h"
#include "wick/wick.h"

using namespace wick;
using namespace wick::testing_data;

namespace {

using wick::test::error_of;

std::vector<float> floats(const Tensor& t) {
  Tensor c = t.to(kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

std::vector<int64_t> ints(const Tensor& t) {
  Tensor c = t.to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// Pixel p of image i is (7 * i + p) % 256; label i is i % 10.
struct MnistData {
  std::vector<uint8_t> pixels, labels;
};

MnistData mnist_data(uint32_t n) {
  MnistData d;
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p = 0; p < 28 * 28; ++p) d.pixels.push_back(uint8_t((7 * i + p) % 256));
    d.labels.push_back(uint8_t(i % 10));
  }
  return d;
}

// MNIST's file names, uncompressed, as LibTorch reads them.
void write_mnist(const TempDir& dir, const std::string& prefix, const MnistData& d) {
  const auto n = uint32_t(d.labels.size());
  Bytes images = idx_header(0x08, {n, 28, 28});
  images.insert(images.end(), d.pixels.begin(), d.pixels.end());
  Bytes labels = idx_header(0x08, {n});
  labels.insert(labels.end(), d.labels.begin(), d.labels.end());
  write_plain(dir.file(prefix + "-images-idx3-ubyte"), images);
  write_plain(dir.file(prefix + "-labels-idx1-ubyte"), labels);
}

// Example i: data [2] = {i, 10 * i}, target i.
class Numbers : public data::datasets::Dataset<Numbers> {
 public:
  explicit Numbers(size_t n) : n_(n) {}
  data::Example<> get(size_t index) override {
    return {tensor({double(index), 10.0 * double(index)}), tensor({int64_t(index)}).select(0, 0)};
  }
  optional<size_t> size() const override { return n_; }

 private:
  size_t n_;
};

// Each batch's targets, for one epoch of loader.
std::vector<std::vector<int64_t>> targets_of_epoch(data::DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) out.push_back(ints(batch.target));
  return out;
}

}  // namespace

TEST(LibTorchTransforms, NormalizeOneValue) {
  data::transforms::Normalize<> norm(0.5, 0.25);
  EXPECT_EQ(norm.mean.sizes(), IntArrayRef({1, 1, 1}));
  Tensor x = tensor({0.0f, 0.25f, 0.5f, 1.0f}).view({1, 2, 2});
  Tensor y = norm(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({1, 2, 2}));
  EXPECT_EQ(floats(y), (std::vector<float>{-2.0f, -1.0f, 0.0f, 2.0f}));
}

TEST(LibTorchTransforms, NormalizePerChannel) {
  data::transforms::Normalize<> norm({0.1, 0.2, 0.3}, {0.5, 2.0, 4.0});
  Tensor x = arange(6, TensorOptions(kFloat64)).view({3, 1, 2});  // channel c: {2c, 2c + 1}
  Tensor y = norm(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 1, 2}));
  const double mean[3] = {0.1, 0.2, 0.3}, sd[3] = {0.5, 2.0, 4.0};
  std::vector<float> got = floats(y);
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 2; ++k) {
      // The constants are float32, as LibTorch's: float(0.1) etc.
      double want = (2 * c + k - double(float(mean[c]))) / double(float(sd[c]));
      EXPECT_NEAR(got[size_t(2 * c + k)], want, 1e-6) << c << " " << k;
    }
  // apply changes the data and keeps the target.
  data::Example<> e = norm.apply({x, tensor({int64_t(4)})});
  EXPECT_EQ(floats(e.data), got);
  EXPECT_EQ(ints(e.target), (std::vector<int64_t>{4}));
}

TEST(LibTorchTransforms, NormalizeWrongShapeThrows) {
  data::transforms::Normalize<> norm({0.5, 0.5, 0.5}, {0.5, 0.5, 0.5});
  std::string msg = error_of<ValueError>([&] { norm(zeros({2, 4, 4})); });
  EXPECT_EQ(msg.rfind("[Normalize]", 0), 0u) << msg;
  EXPECT_NE(msg.find("3 channels"), std::string::npos) << msg;
  msg = error_of<ValueError>([] { data::transforms::Normalize<>({0.1, 0.2, 0.3}, {0.5, 0.5}); });
  EXPECT_EQ(msg.rfind("[Normalize]", 0), 0u) << msg;
  msg = error_of<ValueError>([] { data::transforms::Normalize<>(std::vector<double>{}, {0.5}); });
  EXPECT_EQ(msg.rfind("[Normalize]", 0), 0u) << msg;
}

TEST(LibTorchTransforms, StackAndLambdas) {
  data::transforms::Stack<> stack;
  data::Example<> b = stack.apply_batch({{tensor({1.0f, 2.0f}), tensor({int64_t(7)}).select(0, 0)},
                                       {tensor({3.0f, 4.0f}), tensor({int64_t(9)}).select(0, 0)}});
  EXPECT_EQ(b.data.sizes(), IntArrayRef({2, 2}));
  EXPECT_EQ(b.target.sizes(), IntArrayRef({2}));
  EXPECT_EQ(floats(b.data), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(ints(b.target), (std::vector<int64_t>{7, 9}));
  std::string msg = error_of<ValueError>([&] {
    stack.apply_batch({{zeros({2}), zeros({})}, {zeros({3}), zeros({})}});
  });
  EXPECT_EQ(msg.rfind("[Stack]", 0), 0u) << msg;

  data::transforms::TensorLambda<> twice([](Tensor x) { return x * 2; });
  EXPECT_EQ(floats(twice(tensor({1.5f}))), (std::vector<float>{3.0f}));
  data::transforms::Lambda<data::Example<>> swap([](data::Example<> e) { return data::Example<>{e.target, e.data}; });
  data::Example<> s = swap.apply({tensor({1.0f}), tensor({2.0f})});
  EXPECT_EQ(floats(s.data), (std::vector<float>{2.0f}));
  EXPECT_EQ(floats(s.target), (std::vector<float>{1.0f}));
  data::transforms::BatchLambda<std::vector<data::Example<>>, size_t> count(
      [](std::vector<data::Example<>> v) { return v.size(); });
  EXPECT_EQ(count.apply_batch(std::vector<data::Example<>>(3)), 3u);
}

TEST(LibTorchDatasets, MapChain) {
  auto ds = Numbers(5)
                .map(data::transforms::TensorLambda<>([](Tensor x) { return x + 1; }))
                .map(data::transforms::Normalize<>(1.0, 2.0))
                .map(data::transforms::Stack<>());
  EXPECT_EQ(ds.size().value(), 5u);
  const std::vector<size_t> request = {4, 0, 2};
  data::Example<> b = ds.get_batch(request);
  EXPECT_EQ(b.data.sizes(), IntArrayRef({3, 1, 1, 2}));  // Normalize broadcasts [2] to [1, 1, 2]
  std::vector<float> got = floats(b.data);
  std::vector<float> want;
  for (size_t i : request)
    for (double v : {double(i), 10.0 * double(i)}) want.push_back(float((v + 1 - 1.0) / 2.0));
  EXPECT_EQ(got, want);
  EXPECT_EQ(ints(b.target), (std::vector<int64_t>{4, 0, 2}));
  // The source dataset is reachable through the chain.
  EXPECT_EQ(ds.dataset().dataset().size().value(), 5u);
}

TEST(LibTorchDatasets, MnistFromIdxFiles) {
  TempDir dir;
  const MnistData train = mnist_data(12), test = mnist_data(5);
  write_mnist(dir, "train", train);
  write_mnist(dir, "t10k", test);
  data::datasets::MNIST ds(dir.str());
  EXPECT_TRUE(ds.is_train());
  ASSERT_EQ(ds.size().value(), 12u);
  EXPECT_EQ(ds.images().sizes(), IntArrayRef({12, 1, 28, 28}));
  EXPECT_EQ(ds.images().dtype(), kFloat32);
  EXPECT_EQ(ds.targets().dtype(), kInt64);
  data::Example<> e = ds.get(3);
  EXPECT_EQ(e.data.sizes(), IntArrayRef({1, 28, 28}));
  std::vector<float> px = floats(e.data);
  for (size_t p = 0; p < px.size(); ++p) ASSERT_EQ(px[p], float(double(train.pixels[3 * 784 + p]) / 255.0)) << p;
  EXPECT_EQ(ints(e.target), (std::vector<int64_t>{3}));
  EXPECT_EQ(error_of<IndexError>([&] { ds.get(12); }).rfind("[MNIST]", 0), 0u);

  data::datasets::MNIST t(dir.str(), data::datasets::MNIST::Mode::kTest);
  EXPECT_FALSE(t.is_train());
  EXPECT_EQ(t.size().value(), 5u);
  EXPECT_EQ(ints(t.targets()), (std::vector<int64_t>{0, 1, 2, 3, 4}));

  // gzip'd files (the names with ".gz") are read as well.
  TempDir gz;
  write_fashion_mnist(gz, "t10k", test.pixels, test.labels);
  data::datasets::MNIST g(gz.str(), data::datasets::MNIST::Mode::kTest);
  EXPECT_EQ(floats(g.images()), floats(t.images()));
}

TEST(LibTorchDatasets, MnistBadInput) {
  std::string msg = error_of<ValueError>([] { data::datasets::MNIST("/nonexistent/wick/mnist"); });
  EXPECT_EQ(msg.rfind("[MNIST] cannot find", 0), 0u) << msg;
  EXPECT_NE(msg.find("train-images-idx3-ubyte"), std::string::npos) << msg;

  TempDir dir;
  write_mnist(dir, "train", mnist_data(3));
  Bytes bad = read_plain(dir.file("train-images-idx3-ubyte"));
  bad[2] = 0x42;  // an element type IDX does not have
  write_plain(dir.file("train-images-idx3-ubyte"), bad);
  msg = error_of<ValueError>([&] { data::datasets::MNIST m(dir.str()); });
  EXPECT_EQ(msg.rfind("[MNIST]", 0), 0u) << msg;
  bad[0] = 0x12;  // not an IDX magic number at all
  write_plain(dir.file("train-images-idx3-ubyte"), bad);
  msg = error_of<ValueError>([&] { data::datasets::MNIST m(dir.str()); });
  EXPECT_EQ(msg.rfind("[MNIST]", 0), 0u) << msg;
  EXPECT_NE(msg.find("bad magic number"), std::string::npos) << msg;

  // 3 images, 4 labels.
  write_mnist(dir, "train", mnist_data(3));
  MnistData four = mnist_data(4);
  Bytes labels = idx_header(0x08, {4});
  labels.insert(labels.end(), four.labels.begin(), four.labels.end());
  write_plain(dir.file("train-labels-idx1-ubyte"), labels);
  msg = error_of<ValueError>([&] { data::datasets::MNIST m(dir.str()); });
  EXPECT_EQ(msg.rfind("[MNIST]", 0), 0u) << msg;
  EXPECT_NE(msg.find("has 3 images but"), std::string::npos) << msg;
  EXPECT_NE(msg.find("has 4 labels"), std::string::npos) << msg;
}

TEST(LibTorchDatasets, FashionMnistFilesIfInstalled) {
  const std::string root(data::FashionMNIST::kDefaultRoot);
  if (!std::filesystem::exists(root + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "no " << root;
  data::datasets::MNIST m(root, data::datasets::MNIST::Mode::kTest);
  data::FashionMNIST f(root, /*train=*/false);
  ASSERT_EQ(m.size().value(), 10000u);
  EXPECT_EQ(floats(m.images()), floats(f.data()));
  EXPECT_EQ(ints(m.targets()), ints(f.targets()));
}

TEST(LibTorchSamplers, SequentialAndRandom) {
  data::samplers::SequentialSampler seq(7);
  EXPECT_EQ(seq.size(), 7);
  EXPECT_EQ(seq.indices(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));

  manual_seed(3);
  data::samplers::RandomSampler rnd(100);
  std::vector<int64_t> want(100);
  std::iota(want.begin(), want.end(), 0);
  std::vector<int64_t> first = rnd.indices(), second = rnd.indices();
  for (const auto* epoch : {&first, &second}) {
    std::vector<int64_t> sorted = *epoch;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, want);  // every index once per epoch
    EXPECT_NE(*epoch, want);
  }
  EXPECT_NE(first, second);  // a new order each epoch
  manual_seed(3);
  EXPECT_EQ(rnd.indices(), first);  // from wick's generator
}

TEST(LibTorchSamplers, DistributedSplits) {
  // 10 samples over 3 replicas: chunks of ceil(10 / 3) = 4 of 0..9, 0, 1.
  const std::vector<std::vector<int64_t>> chunks = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}};
  for (int64_t rank = 0; rank < 3; ++rank) {
    data::samplers::DistributedSequentialSampler s(10, 3, rank);
    EXPECT_EQ(s.size(), 4);
    EXPECT_EQ(s.indices(), chunks[size_t(rank)]);
    data::samplers::DistributedRandomSampler r(10, 3, rank);
    std::vector<int64_t> got = r.indices();
    EXPECT_EQ(got, r.indices());  // the same epoch, the same order
    std::vector<int64_t> sorted = got, want = chunks[size_t(rank)];
    std::sort(sorted.begin(), sorted.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(sorted, want) << "rank " << rank;
  }
  // Without duplicates: floor(10 / 3) = 3 each, the tail dropped.
  for (int64_t rank = 0; rank < 3; ++rank) {
    data::samplers::DistributedSequentialSampler s(10, 3, rank, /*allow_duplicates=*/false);
    EXPECT_EQ(s.indices(), (std::vector<int64_t>{3 * rank, 3 * rank + 1, 3 * rank + 2}));
  }
  // set_epoch gives another permutation of the same chunk.
  data::samplers::DistributedRandomSampler r(1000, 2, 1);
  std::vector<int64_t> e0 = r.indices();
  r.set_epoch(1);
  std::vector<int64_t> e1 = r.indices();
  EXPECT_NE(e0, e1);
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e0, e1);
  EXPECT_EQ(e0.front(), 500);
  EXPECT_EQ(e0.back(), 999);

  std::string msg = error_of<ValueError>([] { data::samplers::DistributedRandomSampler(10, 2, 2); });
  EXPECT_EQ(msg.rfind("[DistributedRandomSampler] Invalid rank 2", 0), 0u) << msg;
}

TEST(LibTorchLoader, OptionsChainedAndNamed) {
  auto o = data::DataLoaderOptions().batch_size(8).workers(2).drop_last(true).max_jobs(3).enforce_ordering(false);
  EXPECT_EQ(o.batch_size(), 8);
  EXPECT_EQ(o.batch_size, 8);
  EXPECT_EQ(o.num_workers, 2);
  EXPECT_EQ(o.workers(), 2);
  EXPECT_TRUE(o.drop_last);
  EXPECT_EQ(o.max_jobs(), std::optional<int64_t>(3));
  EXPECT_FALSE(o.in_order);
  EXPECT_EQ(data::DataLoaderOptions(16).batch_size(), 16);
  data::DataLoaderOptions named{.batch_size = 4, .shuffle = true, .drop_last = true};
  EXPECT_EQ(named.batch_size, 4);
  EXPECT_TRUE(named.drop_last());
  named.batch_size = 5;
  EXPECT_EQ(named.batch_size(), 5);
}

TEST(LibTorchLoader, SequentialBatchesAndDropLast) {
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
      Numbers(10).map(data::transforms::Stack<>()), 4);
  EXPECT_EQ(loader->size(), 3);
  EXPECT_EQ(targets_of_epoch(*loader), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  auto dropping = data::make_data_loader<data::samplers::SequentialSampler>(
      Numbers(10).map(data::transforms::Stack<>()), data::DataLoaderOptions(4).drop_last(true));
  EXPECT_EQ(targets_of_epoch(*dropping), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(LibTorchLoader, WorkersGiveTheSameBatches) {
  auto make = [](data::DataLoaderOptions o) {
    return data::make_data_loader<data::samplers::SequentialSampler>(
        Numbers(103).map(data::transforms::Normalize<>(0.5, 2.0)).map(data::transforms::Stack<>()), o);
  };
  auto serial = make(data::DataLoaderOptions().batch_size(10));
  std::vector<std::vector<float>> want;
  for (auto& b : *serial) want.push_back(floats(b.data));
  ASSERT_EQ(want.size(), 11u);
  for (int64_t workers : {1, 3}) {
    auto loader = make(data::DataLoaderOptions().batch_size(10).workers(workers).max_jobs(4));
    std::vector<std::vector<float>> got;
    for (auto& b : *loader) got.push_back(floats(b.data));
    EXPECT_EQ(got, want) << workers << " workers";
    // Without enforce_ordering the same batches come, in any order.
    auto unordered = make(data::DataLoaderOptions().batch_size(10).workers(workers).enforce_ordering(false));
    got.clear();
    for (auto& b : *unordered) got.push_back(floats(b.data));
    std::sort(got.begin(), got.end());
    std::vector<std::vector<float>> sorted = want;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(got, sorted) << workers << " workers, unordered";
  }
}

TEST(LibTorchLoader, RandomSamplerByDefault) {
  manual_seed(5);
  auto loader = data::make_data_loader(Numbers(50).map(data::transforms::Stack<>()),
                                       data::DataLoaderOptions().batch_size(8).workers(2));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> all;
    for (auto& t : targets_of_epoch(*loader)) all.insert(all.end(), t.begin(), t.end());
    std::vector<int64_t> sorted = all, want(50);
    std::sort(sorted.begin(), sorted.end());
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(sorted, want);
    EXPECT_NE(all, want);
  }
  // And wick's own datasets, with a LibTorch sampler.
  data::TensorDataset td(arange(6, TensorOptions(kFloat32)).view({6, 1}), arange(6));
  auto l = data::make_data_loader(td, data::samplers::DistributedSequentialSampler(6, 2, 1), 2);
  EXPECT_EQ(targets_of_epoch(*l), (std::vector<std::vector<int64_t>>{{3, 4}, {5}}));
}

TEST(LibTorchLoader, BadInput) {
  // A transform given a wrong shape (3 means, 2 channels) fails in the loop with its error.
  for (int64_t workers : {0, 2}) {
    auto wrong = data::make_data_loader<data::samplers::SequentialSampler>(
        Numbers(4)
            .map(data::transforms::TensorLambda<>([](Tensor x) { return x.view({2, 1, 1}); }))
            .map(data::transforms::Normalize<>({0.5, 0.5, 0.5}, {1.0, 1.0, 1.0}))
            .map(data::transforms::Stack<>()),
        data::DataLoaderOptions(2).workers(workers));
    std::string msg = error_of<ValueError>([&] {
      for (auto& b : *wrong) (void)b;
    });
    EXPECT_EQ(msg.rfind("[Normalize]", 0), 0u) << msg;
  }
  std::string msg = error_of<ValueError>(
      [] { data::make_data_loader(Numbers(4).map(data::transforms::Stack<>()), data::DataLoaderOptions(2).max_jobs(0)); });
  EXPECT_EQ(msg.rfind("[DataLoader] max_jobs", 0), 0u) << msg;

  class NoSize : public data::datasets::Dataset<NoSize> {
   public:
    data::Example<> get(size_t) override { return {}; }
    optional<size_t> size() const override { return nullopt; }
  };
  msg = error_of<ValueError>([] { data::make_data_loader(NoSize().map(data::transforms::Stack<>()), 2); });
  EXPECT_EQ(msg.rfind("[make_data_loader]", 0), 0u) << msg;
}

// pytorch/examples' cpp/mnist data code with torch:: renamed to wick::, run over generated files.
TEST(LibTorchLoader, RenamedMnistProgram) {
  TempDir dir;
  const MnistData train_files = mnist_data(10), test_files = mnist_data(6);
  write_mnist(dir, "train", train_files);
  write_mnist(dir, "t10k", test_files);
  const std::string kDataRoot = dir.str();
  const int64_t kTrainBatchSize = 4, kTestBatchSize = 1000;
  wick::Device device(wick::kCPU);

  auto train_dataset = wick::data::datasets::MNIST(kDataRoot)
                           .map(wick::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(wick::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader = wick::data::make_data_loader<wick::data::samplers::SequentialSampler>(
      std::move(train_dataset), kTrainBatchSize);

  auto test_dataset = wick::data::datasets::MNIST(kDataRoot, wick::data::datasets::MNIST::Mode::kTest)
                          .map(wick::data::transforms::Normalize<>(0.1307, 0.3081))
                          .map(wick::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = wick::data::make_data_loader(std::move(test_dataset), kTestBatchSize);

  EXPECT_EQ(train_dataset_size, 10u);
  EXPECT_EQ(test_dataset_size, 6u);
  const float mean = 0.1307f, sd = 0.3081f;
  size_t seen = 0, batch_index = 0;
  for (auto& batch : *train_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    const int64_t b = std::min<int64_t>(kTrainBatchSize, int64_t(train_dataset_size - seen));
    ASSERT_EQ(data.sizes(), IntArrayRef({b, 1, 28, 28}));
    ASSERT_EQ(targets.sizes(), IntArrayRef({b}));
    EXPECT_EQ(targets.dtype(), kInt64);
    std::vector<float> px = floats(data);
    std::vector<int64_t> t = ints(targets);
    for (int64_t i = 0; i < b; ++i) {
      const size_t example = seen + size_t(i);
      EXPECT_EQ(t[size_t(i)], int64_t(example % 10));
      for (size_t p = 0; p < 784; p += 97) {
        const double want = (double(float(train_files.pixels[example * 784 + p] / 255.0)) - double(mean)) / double(sd);
        EXPECT_NEAR(px[size_t(i) * 784 + p], want, 1e-5) << example << " " << p;
      }
    }
    seen += size_t(b);
    ++batch_index;
  }
  EXPECT_EQ(seen, train_dataset_size);
  EXPECT_EQ(batch_index, 3u);

  size_t test_batches = 0;
  for (const auto& batch : *test_loader) {
    EXPECT_EQ(batch.data.sizes(), IntArrayRef({6, 1, 28, 28}));
    std::vector<int64_t> t = ints(batch.target);
    std::sort(t.begin(), t.end());
    EXPECT_EQ(t, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
    ++test_batches;
  }
  EXPECT_EQ(test_batches, 1u);
}

// LibTorch's TensorDataset: the rows of one tensor as data-only examples (TensorExample), stacked
// by Stack<TensorExample>, served by make_data_loader (whose Example<> target is then empty).
TEST(LibTorchDatasets, TensorDatasetOfRows) {
  Tensor rows = arange(24, TensorOptions(kFloat32)).reshape({6, 4});
  data::datasets::TensorDataset ds(rows);
  ASSERT_EQ(ds.size(), std::optional<size_t>(6));
  data::TensorExample e = ds.get(2);
  EXPECT_EQ(e.data.to_vector<float>(), (std::vector<float>{8, 9, 10, 11}));
  // from a list of tensors, stacked
  data::datasets::TensorDataset listed({rows[0], rows[5]});
  ASSERT_EQ(listed.size(), std::optional<size_t>(2));
  EXPECT_EQ(listed.get(1).data.to_vector<float>(), (std::vector<float>{20, 21, 22, 23}));
  // a batch, stacked
  auto stacked = data::datasets::TensorDataset(rows).map(data::transforms::Stack<data::TensorExample>());
  const std::vector<size_t> idx{4, 1};
  data::TensorExample b = stacked.get_batch(idx);
  EXPECT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(b.data.to_vector<float>(), (std::vector<float>{16, 17, 18, 19, 4, 5, 6, 7}));
  // the loader
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(std::move(stacked), 4);
  std::vector<float> seen;
  std::vector<int64_t> sizes;
  for (auto& batch : *loader) {
    sizes.push_back(batch.data.size(0));
    for (float v : batch.data.select(1, 0).to_vector<float>()) seen.push_back(v);
    EXPECT_EQ(batch.target.numel(), 0);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(seen, (std::vector<float>{0, 4, 8, 12, 16, 20}));
  // errors
  EXPECT_THROW(ds.get(6), IndexError);
  EXPECT_EQ(wick::test::error_of<ValueError>([] { (void)data::datasets::TensorDataset(tensor(3.0)); })
                .rfind("[TensorDataset] ", 0),
            0u);
  EXPECT_EQ(wick::test::error_of<Error>([&] { (void)data::datasets::TensorDataset({rows[0], rows}); })
                .rfind("[TensorDataset] ", 0),
            0u);
}
