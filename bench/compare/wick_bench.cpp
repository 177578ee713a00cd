// wick's side of bench/compare: the workloads of docs/design.md, "Performance targets", each
// printed as "name value unit".
// torch_bench.cpp is the same program written against LibTorch; keep the two in step.
#include <wick/backends.h>
#include <wick/wick.h>

#include "harness.h"
#include "launch.h"

using namespace wick;

int main(int argc, char** argv) {
  using compare::report;
  auto sel = [&](const char* name) { return compare::selected(argc, argv, name); };
  const Device gpu("cuda");
  auto sync = [] { cuda::synchronize(); };
  cudaStream_t stream = cuda::current_stream().native();
  const int64_t n64m = int64_t(64) << 20;

  // ---- host overhead on tiny CUDA tensors, against a bare launch
  if (sel("tiny_op_cuda") || sel("bare_launch")) {
    auto a = rand({1}, gpu), b = rand({1}, gpu), c = empty({1}, gpu);
    report("tiny_op_cuda_us", compare::host_us([&] { auto r = a + b; }, 1000, 21, sync), "us");
    auto pa = a.data_ptr<float>(), pb = b.data_ptr<float>();
    auto pc = c.data_ptr<float>();
    report("bare_launch_us", compare::host_us([&] { compare::launch_add1(pa, pb, pc, stream); }, 1000, 21, sync), "us");
    compare::check(cudaGetLastError(), "add1");
  }
  if (sel("empty_free")) {
    report("empty_free_us", compare::host_us([&] { auto t = empty({262144}, gpu); }, 1000, 21, [] {}), "us");
  }

  // ---- memory-bound ops on 64M floats: GB/s counting bytes read and written
  if (sel("fp32_64M") || sel("cast") || sel("sum")) {
    auto a = rand({n64m}, gpu), b = rand({n64m}, gpu), dst = empty({n64m}, gpu);
    auto gbs = [&](double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; };
    const double n = double(n64m);
    report("add_fp32_64M_gbs", gbs(12 * n, compare::device_ms(stream, [&] { auto c = a + b; }, 5, 11)), "GB/s");
    auto centered = b - 0.5;  // half of relu's inputs negative
    report("relu_fp32_64M_gbs", gbs(8 * n, compare::device_ms(stream, [&] { auto c = relu(centered); }, 5, 11)),
           "GB/s");
    report("copy_fp32_64M_gbs", gbs(8 * n, compare::device_ms(stream, [&] { dst.copy_(a); }, 5, 11)), "GB/s");
    auto h = (a - 0.5).to(kFloat16);
    report("cast_fp16_fp32_64M_gbs", gbs(6 * n, compare::device_ms(stream, [&] { auto f = h.to(kFloat32); }, 5, 11)),
           "GB/s");
    report("sum_fp32_64M_gbs", gbs(4 * n, compare::device_ms(stream, [&] { auto s = a.sum(); }, 5, 11)), "GB/s");
  }
  if (sel("where") || sel("clamp")) {  // the three-input elementwise ops
    auto a = rand({n64m}, gpu), b = rand({n64m}, gpu);
    auto cond = a > 0.5, lo = full({n64m}, 0.25, gpu), hi = full({n64m}, 0.75, gpu);
    auto gbs = [&](double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; };
    const double n = double(n64m);
    report("where_fp32_64M_gbs", gbs(13 * n, compare::device_ms(stream, [&] { auto c = where(cond, a, b); }, 5, 11)),
           "GB/s");
    report("clamp_fp32_64M_gbs", gbs(16 * n, compare::device_ms(stream, [&] { auto c = clamp(a, lo, hi); }, 5, 11)),
           "GB/s");
  }
  if (sel("softmax")) {
    auto x = randn({8192, 8192}, gpu);
    const double ms = compare::device_ms(stream, [&] { auto y = softmax(x, 1); }, 5, 11);
    report("softmax_8192x8192_gbs", 8.0 * 8192 * 8192 / (ms * 1e-3) / 1e9, "GB/s");
  }
  if (sel("cross_entropy")) {  // fp32 logits 8192x8192, int64 targets; GB/s of the logits read once
    auto x = randn({8192, 8192}, gpu), target = randint(8192, {8192}, TensorOptions(kInt64).device(gpu));
    const double ms = compare::device_ms(stream, [&] { auto l = nn::functional::cross_entropy(x, target); }, 5, 11);
    report("cross_entropy_8192x8192_gbs", 4.0 * 8192 * 8192 / (ms * 1e-3) / 1e9, "GB/s");
    auto xg = x.detach().requires_grad_();
    auto step = [&] {
      xg.mutable_grad() = Tensor();
      nn::functional::cross_entropy(xg, target).backward();
    };
    report("cross_entropy_fwd_bwd_8192x8192_ms", compare::device_ms(stream, step, 5, 11), "ms");
  }
  if (sel("cross_entropy_bf16")) {  // a GPT-2 step's loss: bf16 logits [32 * 1024, 50304]
    auto xg = randn({32 * 1024, 50304}, gpu).to(kBFloat16).requires_grad_();
    auto target = randint(50304, {32 * 1024}, TensorOptions(kInt64).device(gpu));
    auto step = [&] {
      xg.mutable_grad() = Tensor();
      nn::functional::cross_entropy(xg, target).backward();
    };
    report("cross_entropy_fwd_bwd_bf16_32768x50304_ms", compare::device_ms(stream, step, 3, 9), "ms");
  }

  if (sel("layer_norm")) {  // bf16 x [32768, 768] with bf16 weight and bias, forward + backward
    const int64_t m = 32768, n = 768;
    const TensorOptions bf = TensorOptions(kBFloat16).device(gpu);
    auto x = randn({m, n}, gpu).to(kBFloat16).requires_grad_();
    auto w = (1 + 0.1 * randn({n}, gpu)).to(kBFloat16).requires_grad_();
    auto b = (0.1 * randn({n}, gpu)).to(kBFloat16).requires_grad_();
    auto dy = randn({m, n}, gpu).to(kBFloat16);
    auto step = [&] {
      x.mutable_grad() = Tensor();
      w.mutable_grad() = Tensor();
      b.mutable_grad() = Tensor();
      nn::functional::layer_norm(x, {n}, w, b).backward(dy);
    };
    const double ms = compare::device_ms(stream, step, 5, 11);
    report("layer_norm_fwd_bwd_bf16_32768x768_ms", ms, "ms");
    // The bytes the step must move: x read and y written forward; dy and x read, dx written
    // backward; weight and bias read, their gradients written. Against a copy moving as many
    // (half read, half written) in this program.
    const double bytes = 2.0 * double(m * n) * 5 + 2.0 * double(n) * 4;
    auto src = empty({int64_t(bytes / 4)}, bf), dst = empty({int64_t(bytes / 4)}, bf);
    const double copy_ms = compare::device_ms(stream, [&] { dst.copy_(src); }, 5, 11);
    report("layer_norm_fwd_bwd_bf16_32768x768_copy_pct", 100.0 * copy_ms / ms, "%");
  }

  // ---- matmul: TFLOP/s
  auto tflops = [&](const char* name, int64_t n, Dtype t, const char* precision) {
    if (!sel(name)) return;
    set_float32_matmul_precision(precision);
    auto a = randn({n, n}, gpu).to(t), b = randn({n, n}, gpu).to(t);
    const double ms = compare::device_ms(stream, [&] { auto c = mm(a, b); }, 3, 9);
    report(name, 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e12, "TFLOP/s");
    set_float32_matmul_precision("highest");
  };
  tflops("matmul_fp32_4096_tflops", 4096, kFloat32, "highest");
  tflops("matmul_tf32_8192_tflops", 8192, kFloat32, "high");
  tflops("matmul_fp16_8192_tflops", 8192, kFloat16, "highest");
  tflops("matmul_bf16_8192_tflops", 8192, kBFloat16, "highest");

  // ---- attention: SDPA forward + backward, bf16, causal; TFLOP/s counting 4 B H T^2 d / 2
  // for the forward and 2.5 times that for the backward
  auto sdpa = [&](const char* name, int64_t B, int64_t H, int64_t T, int64_t d) {
    if (!sel(name) && !sel("sdpa")) return;
    auto opts = TensorOptions(kBFloat16).device(gpu);
    auto q = randn({B, H, T, d}, opts).requires_grad_(), k = randn({B, H, T, d}, opts).requires_grad_();
    auto v = randn({B, H, T, d}, opts).requires_grad_(), dout = randn({B, H, T, d}, opts);
    auto step = [&] {
      for (Tensor* t : {&q, &k, &v}) t->mutable_grad() = Tensor();
      nn::functional::scaled_dot_product_attention(q, k, v, {}, 0.0, true).backward(dout);
    };
    const double flops = 3.5 * 4.0 * double(B * H) * double(T) * double(T) * double(d) / 2;
    // each fused backend alone to stderr; the row is what the default selection takes
    for (auto b : {nn::attention::SDPBackend::CuDNNAttention, nn::attention::SDPBackend::FlashAttention}) {
      nn::attention::sdpa_kernel only(b);
      try {
        const double t = flops / (compare::device_ms(stream, step, 3, 9) * 1e-3) / 1e12;
        std::fprintf(stderr, "%s: wick's %s backend %.1f TFLOP/s\n", name, nn::attention::to_string(b), t);
      } catch (const Error& e) {
        std::fprintf(stderr, "%s: wick's %s backend did not run: %s\n", name, nn::attention::to_string(b), e.what());
      }
    }
    const double ms = compare::device_ms(stream, step, 3, 9);
    const auto taken = nn::attention::last_sdpa_backend();
    std::fprintf(stderr, "%s: wick's default took %s\n", name, taken ? nn::attention::to_string(*taken) : "none");
    report(name, flops / (ms * 1e-3) / 1e12, "TFLOP/s");
  };
  sdpa("sdpa_fwd_bwd_bf16_causal_b32_h12_t1024_d64_tflops", 32, 12, 1024, 64);
  sdpa("sdpa_fwd_bwd_bf16_causal_b32_h12_t4096_d128_tflops", 32, 12, 4096, 128);

  // ---- recurrent layers: LSTM, 2 layers, input and hidden 1024, seq 128, batch 64, fp32 (no
  // TF32), forward + backward, through cuDNN's RNN API (docs/design.md §18).
  if (sel("lstm")) {
    nn::LSTM m(nn::LSTMOptions(1024, 1024).num_layers(2));
    m->to(gpu);
    auto x = randn({128, 64, 1024}, gpu).requires_grad_(), dy = randn({128, 64, 1024}, gpu);
    auto step = [&] {
      x.mutable_grad() = Tensor();
      m->zero_grad();
      std::get<0>(m(x)).backward(dy);
    };
    report("lstm_fwd_bwd_fp32_l2_h1024_t128_b64_ms", compare::device_ms(stream, step, 3, 9), "ms");
  }

  // ---- a DCGAN training step as LibTorch's DCGAN example has it (noise 100, generator
  // 100 -> 256 -> 128 -> 64 -> 1 channels to 28x28, discriminator back, batch 64, Adam 2e-4,
  // betas 0.5/0.999): the discriminator on real and on fake images, its step, then the
  // generator's step; fp32 with cuDNN's convolutions, TF32 off (wick's float32 default;
  // LibTorch's is on for convolutions and is turned off here, as in the LSTM row).
  if (sel("dcgan")) {
    const int64_t nz = 100, batch = 64;
    auto tconv = [](int64_t i, int64_t o, int64_t k, int64_t s, int64_t p) {
      return nn::ConvTranspose2d(nn::ConvTranspose2dOptions(i, o, k).stride(s).padding(p).bias(false));
    };
    auto conv = [](int64_t i, int64_t o, int64_t k, int64_t s, int64_t p) {
      return nn::Conv2d(nn::Conv2dOptions(i, o, k).stride(s).padding(p).bias(false));
    };
    auto leaky = [] { return nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)); };
    nn::Sequential g(tconv(nz, 256, 4, 1, 0), nn::BatchNorm2d(256), nn::ReLU(), tconv(256, 128, 3, 2, 1),
                     nn::BatchNorm2d(128), nn::ReLU(), tconv(128, 64, 4, 2, 1), nn::BatchNorm2d(64), nn::ReLU(),
                     tconv(64, 1, 4, 2, 1), nn::Tanh());
    nn::Sequential d(conv(1, 64, 4, 2, 1), leaky(), conv(64, 128, 4, 2, 1), nn::BatchNorm2d(128), leaky(),
                     conv(128, 256, 4, 2, 1), nn::BatchNorm2d(256), leaky(), conv(256, 1, 3, 1, 0), nn::Sigmoid());
    g->to(gpu);
    d->to(gpu);
    optim::Adam g_opt(g->parameters(), optim::AdamOptions(2e-4).betas({0.5, 0.999}));
    optim::Adam d_opt(d->parameters(), optim::AdamOptions(2e-4).betas({0.5, 0.999}));
    auto real = rand({batch, 1, 28, 28}, gpu) * 2 - 1;
    auto ones_ = full({batch}, 0.9, gpu), zeros_ = zeros({batch}, gpu), targets = ones({batch}, gpu);
    namespace F = nn::functional;
    auto step = [&] {
      d->zero_grad();
      F::binary_cross_entropy(d->forward(real).reshape({-1}), ones_).backward();
      auto fake = g->forward(randn({batch, nz, 1, 1}, gpu));
      F::binary_cross_entropy(d->forward(fake.detach()).reshape({-1}), zeros_).backward();
      d_opt.step();
      g->zero_grad();
      F::binary_cross_entropy(d->forward(fake).reshape({-1}), targets).backward();
      g_opt.step();
    };
    report("dcgan_step_fp32_b64_ms", compare::device_ms(stream, step, 5, 21), "ms");
  }

  // ---- host <-> device, 256 MB
  if (sel("h2d") || sel("d2h") || sel("pin_memory")) {
    auto host = rand({n64m});
    auto dev = empty({n64m}, gpu);
    const double bytes = 4.0 * double(n64m);
    auto gbs = [&](double ms) { return bytes / (ms * 1e-3) / 1e9; };
    report("h2d_pageable_gbs", gbs(compare::wall_ms([&] { dev.copy_(host); }, 5, sync)), "GB/s");
    auto pinned = host.pin_memory();
    report("h2d_pinned_gbs", gbs(compare::wall_ms([&] { dev.copy_(pinned, true); }, 9, sync)), "GB/s");
    report("d2h_pinned_gbs", gbs(compare::wall_ms([&] { pinned.copy_(dev, true); }, 9, sync)), "GB/s");
    report("pin_memory_256MB_ms", compare::wall_ms([&] { auto p = host.pin_memory(); }, 5, [] {}), "ms");
  }

  // ---- CPU
  if (sel("cpu")) {
    auto a = rand({1}), b = rand({1});
    report("tiny_op_cpu_us", compare::host_us([&] { auto r = a + b; }, 10000, 21, [] {}), "us");
    auto m1 = randn({2048, 2048}), m2 = randn({2048, 2048});
    const double ms = compare::wall_ms([&] { auto c = mm(m1, m2); }, 9, [] {});
    report("cpu_matmul_fp32_2048_gflops", 2.0 * 2048 * 2048 * 2048 / (ms * 1e-3) / 1e9, "GFLOP/s");
    auto x = rand({int64_t(16) << 20}), y = rand({int64_t(16) << 20});
    const double ams = compare::wall_ms([&] { auto z = x + y; }, 21, [] {});
    report("cpu_add_16M_gbs", 12.0 * double(int64_t(16) << 20) / (ams * 1e-3) / 1e9, "GB/s");
    // A full reduction (16M floats read) and softmax over the rows of 4096x1024 (read and
    // written once), each output new every call.
    const double sms = compare::wall_ms([&] { auto s = x.sum(); }, 21, [] {});
    report("cpu_sum_16M_gbs", 4.0 * double(int64_t(16) << 20) / (sms * 1e-3) / 1e9, "GB/s");
    auto logits = randn({4096, 1024});
    const double xms = compare::wall_ms([&] { auto p = softmax(logits, 1); }, 21, [] {});
    report("cpu_softmax_4096x1024_gbs", 8.0 * 4096 * 1024 / (xms * 1e-3) / 1e9, "GB/s");
  }
  // The CNN of wick-train (tools/wick_train.cpp), batch 64 of 28x28 images: each convolution's
  // forward + backward, as a training step runs it (the first layer's input needs no gradient).
  if (sel("cpu_conv2d_cnn")) {
    auto conv_ms = [&](int64_t c, int64_t o, int64_t hw, bool input_grad) {
      auto x = randn({64, c, hw, hw}), w = (randn({o, c, 3, 3}) * 0.1).requires_grad_();
      auto b = zeros({o}).requires_grad_(), gy = randn({64, o, hw, hw});
      if (input_grad) x.requires_grad_();
      auto step = [&] {
        for (Tensor* t : {&x, &w, &b}) t->mutable_grad() = Tensor();
        nn::functional::conv2d(x, w, b, 1, 1).backward(gy);
      };
      return compare::wall_ms(step, 21, [] {});
    };
    report("cpu_conv2d_cnn1_fwd_bwd_ms", conv_ms(1, 32, 28, false), "ms");
    report("cpu_conv2d_cnn2_fwd_bwd_ms", conv_ms(32, 64, 14, true), "ms");
  }
  return 0;
}
