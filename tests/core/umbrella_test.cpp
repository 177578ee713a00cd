// A program including only <wick/wick.h> reaches every public part of wick: tensors, data
// loading, save/load, nn, optim and the CUDA runtime API; and Tensor::record_stream.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include <wick/wick.h>

namespace {

TEST(Umbrella, OneHeaderReachesEveryPart) {
  wick::manual_seed(7);
  // data
  wick::data::TensorDataset ds(wick::arange(8, wick::TensorOptions(wick::kFloat32)).view({4, 2}),
                               wick::arange(4));
  wick::data::DataLoader loader(ds, {.batch_size = 2});
  int64_t rows = 0;
  for (auto& batch : loader) rows += batch.data.size(0);
  EXPECT_EQ(rows, 4);

  // nn and optim: one SGD step on a linear layer, checked by hand (w' = w - lr * dL/dw).
  wick::nn::Linear lin(2, 1);
  wick::optim::SGD opt(lin->parameters(), wick::optim::SGDOptions(0.5));
  auto x = wick::ones({1, 2});
  auto w0 = lin->weight.detach().clone();
  opt.zero_grad();
  lin(x).sum().backward();  // dL/dw = x = [1, 1]
  opt.step();
  auto w1 = lin->weight.detach().to_vector<float>(), w0v = w0.to_vector<float>();
  EXPECT_FLOAT_EQ(w1[0], w0v[0] - 0.5f);
  EXPECT_FLOAT_EQ(w1[1], w0v[1] - 0.5f);

  // save / load
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("wick_umbrella_" + std::to_string(getpid()) + ".safetensors"))
                               .string();
  wick::save(lin->state_dict(), path);
  auto back = wick::load(path);
  std::filesystem::remove(path);
  ASSERT_EQ(back.count("weight"), 1u);
  EXPECT_EQ(back["weight"].to_vector<float>(), w1);

  // cuda
  EXPECT_EQ(wick::cuda::is_available(), wick::cuda::device_count() > 0);
}

TEST(RecordStream, CpuTensorThrowsNotImplemented) {
  auto t = wick::ones({2});
  wick::cuda::Stream s(0, nullptr);  // a handle only; nothing runs on it
  try {
    t.record_stream(s);
    FAIL() << "expected NotImplementedError";
  } catch (const wick::NotImplementedError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[record_stream] Could not run 'aten::record_stream' with arguments from the 'CPU' backend.");
  }
  EXPECT_THROW(wick::Tensor().record_stream(s), wick::NotImplementedError);
}

TEST(RecordStream, CudaTensorOnSideStream) {
  if (!wick::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto side = wick::cuda::Stream::create();
  auto a = wick::ones({1024}, wick::Device("cuda"));
  side.wait_stream(wick::cuda::current_stream());
  wick::Tensor b;
  {
    wick::cuda::StreamGuard g(side);
    b = a * 2;
    a.record_stream(side);
  }
  a = wick::Tensor();  // its memory waits for side's work before reuse
  side.synchronize();
  auto v = b.cpu().to_vector<float>();
  for (float f : v) ASSERT_EQ(f, 2.0f);
}

}  // namespace
