// LibTorch's side of bench/compare: wick_bench.cpp written against LibTorch, workload for
// workload, with the same harness and names. Keep the two in step.
#include <algorithm>
#include <cstdio>
#include <string>

#include <ATen/Context.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "harness.h"
#include "launch.h"

int main(int argc, char** argv) {
  using compare::report;
  auto sel = [&](const char* name) { return compare::selected(argc, argv, name); };
  const auto gpu = torch::TensorOptions().device(torch::kCUDA);
  auto sync = [] { torch::cuda::synchronize(); };
  torch::NoGradGuard no_grad;
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  const int64_t n64m = int64_t(64) << 20;

  // ---- host overhead on tiny CUDA tensors, against a bare launch
  if (sel("tiny_op_cuda") || sel("bare_launch")) {
    auto a = torch::rand({1}, gpu), b = torch::rand({1}, gpu), c = torch::empty({1}, gpu);
    report("tiny_op_cuda_us", compare::host_us([&] { auto r = a + b; }, 1000, 21, sync), "us");
    auto pa = a.data_ptr<float>(), pb = b.data_ptr<float>();
    auto pc = c.data_ptr<float>();
    report("bare_launch_us", compare::host_us([&] { compare::launch_add1(pa, pb, pc, stream); }, 1000, 21, sync), "us");
    compare::check(cudaGetLastError(), "add1");
  }
  if (sel("empty_free")) {
    report("empty_free_us", compare::host_us([&] { auto t = torch::empty({262144}, gpu); }, 1000, 21, [] {}), "us");
  }

  // ---- memory-bound ops on 64M floats: GB/s counting bytes read and written
  if (sel("fp32_64M") || sel("cast") || sel("sum")) {
    auto a = torch::rand({n64m}, gpu), b = torch::rand({n64m}, gpu), dst = torch::empty({n64m}, gpu);
    auto gbs = [&](double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; };
    const double n = double(n64m);
    report("add_fp32_64M_gbs", gbs(12 * n, compare::device_ms(stream, [&] { auto c = a + b; }, 5, 11)), "GB/s");
    auto centered = b - 0.5;  // half of relu's inputs negative
    report("relu_fp32_64M_gbs", gbs(8 * n, compare::device_ms(stream, [&] { auto c = torch::relu(centered); }, 5, 11)),
           "GB/s");
    report("copy_fp32_64M_gbs", gbs(8 * n, compare::device_ms(stream, [&] { dst.copy_(a); }, 5, 11)), "GB/s");
    auto h = (a - 0.5).to(torch::kHalf);
    report("cast_fp16_fp32_64M_gbs",
           gbs(6 * n, compare::device_ms(stream, [&] { auto f = h.to(torch::kFloat); }, 5, 11)), "GB/s");
    report("sum_fp32_64M_gbs", gbs(4 * n, compare::device_ms(stream, [&] { auto s = a.sum(); }, 5, 11)), "GB/s");
  }
  if (sel("where") || sel("clamp")) {  // the three-input elementwise ops
    auto a = torch::rand({n64m}, gpu), b = torch::rand({n64m}, gpu);
    auto cond = a > 0.5, lo = torch::full({n64m}, 0.25, gpu), hi = torch::full({n64m}, 0.75, gpu);
    auto gbs = [&](double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; };
    const double n = double(n64m);
    report("where_fp32_64M_gbs", gbs(13 * n, compare::device_ms(stream, [&] { auto c = torch::where(cond, a, b); }, 5, 11)),
           "GB/s");
    report("clamp_fp32_64M_gbs", gbs(16 * n, compare::device_ms(stream, [&] { auto c = torch::clamp(a, lo, hi); }, 5, 11)),
           "GB/s");
  }
  if (sel("softmax")) {
    auto x = torch::randn({8192, 8192}, gpu);
    const double ms = compare::device_ms(stream, [&] { auto y = torch::softmax(x, 1); }, 5, 11);
    report("softmax_8192x8192_gbs", 8.0 * 8192 * 8192 / (ms * 1e-3) / 1e9, "GB/s");
  }
  if (sel("cross_entropy")) {  // fp32 logits 8192x8192, int64 targets; GB/s of the logits read once
    auto x = torch::randn({8192, 8192}, gpu), target = torch::randint(8192, {8192}, gpu.dtype(torch::kInt64));
    const double ms = compare::device_ms(stream, [&] { auto l = torch::nn::functional::cross_entropy(x, target); }, 5, 11);
    report("cross_entropy_8192x8192_gbs", 4.0 * 8192 * 8192 / (ms * 1e-3) / 1e9, "GB/s");
    torch::AutoGradMode enable_grad(true);  // main() runs under NoGradGuard
    auto xg = x.detach().requires_grad_();
    auto step = [&] {
      xg.mutable_grad() = torch::Tensor();
      torch::nn::functional::cross_entropy(xg, target).backward();
    };
    report("cross_entropy_fwd_bwd_8192x8192_ms", compare::device_ms(stream, step, 5, 11), "ms");
  }
  if (sel("cross_entropy_bf16")) {  // a GPT-2 step's loss: bf16 logits [32 * 1024, 50304]
    torch::AutoGradMode enable_grad(true);
    auto xg = torch::randn({32 * 1024, 50304}, gpu).to(torch::kBFloat16).requires_grad_();
    auto target = torch::randint(50304, {32 * 1024}, gpu.dtype(torch::kInt64));
    auto step = [&] {
      xg.mutable_grad() = torch::Tensor();
      torch::nn::functional::cross_entropy(xg, target).backward();
    };
    report("cross_entropy_fwd_bwd_bf16_32768x50304_ms", compare::device_ms(stream, step, 3, 9), "ms");
  }

  if (sel("layer_norm")) {  // bf16 x [32768, 768] with bf16 weight and bias, forward + backward
    torch::AutoGradMode enable_grad(true);  // main() runs under NoGradGuard
    const int64_t m = 32768, n = 768;
    const auto bf = gpu.dtype(torch::kBFloat16);
    auto x = torch::randn({m, n}, gpu).to(torch::kBFloat16).requires_grad_();
    auto w = (1 + 0.1 * torch::randn({n}, gpu)).to(torch::kBFloat16).requires_grad_();
    auto b = (0.1 * torch::randn({n}, gpu)).to(torch::kBFloat16).requires_grad_();
    auto dy = torch::randn({m, n}, gpu).to(torch::kBFloat16);
    auto step = [&] {
      x.mutable_grad() = torch::Tensor();
      w.mutable_grad() = torch::Tensor();
      b.mutable_grad() = torch::Tensor();
      torch::layer_norm(x, {n}, w, b).backward(dy);
    };
    const double ms = compare::device_ms(stream, step, 5, 11);
    report("layer_norm_fwd_bwd_bf16_32768x768_ms", ms, "ms");
    // The same bytes as wick_bench.cpp's row, against a copy moving as many in this program.
    const double bytes = 2.0 * double(m * n) * 5 + 2.0 * double(n) * 4;
    auto src = torch::empty({int64_t(bytes / 4)}, bf), dst = torch::empty({int64_t(bytes / 4)}, bf);
    const double copy_ms = compare::device_ms(stream, [&] { dst.copy_(src); }, 5, 11);
    report("layer_norm_fwd_bwd_bf16_32768x768_copy_pct", 100.0 * copy_ms / ms, "%");
  }

  // ---- matmul: TFLOP/s
  auto tflops = [&](const char* name, int64_t n, torch::Dtype t, const char* precision) {
    if (!sel(name)) return;
    at::globalContext().setFloat32MatmulPrecision(precision);
    auto a = torch::randn({n, n}, gpu).to(t), b = torch::randn({n, n}, gpu).to(t);
    const double ms = compare::device_ms(stream, [&] { auto c = torch::mm(a, b); }, 3, 9);
    report(name, 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e12, "TFLOP/s");
    at::globalContext().setFloat32MatmulPrecision("highest");
  };
  tflops("matmul_fp32_4096_tflops", 4096, torch::kFloat, "highest");
  tflops("matmul_tf32_8192_tflops", 8192, torch::kFloat, "high");
  tflops("matmul_fp16_8192_tflops", 8192, torch::kHalf, "highest");
  tflops("matmul_bf16_8192_tflops", 8192, torch::kBFloat16, "highest");

  // ---- attention: SDPA forward + backward, bf16, causal; TFLOP/s counting 4 B H T^2 d / 2
  // for the forward and 2.5 times that for the backward (PyTorch picks its fastest backend)
  auto sdpa = [&](const char* name, int64_t B, int64_t H, int64_t T, int64_t d) {
    if (!sel(name) && !sel("sdpa")) return;
    torch::AutoGradMode enable_grad(true);  // main() runs under NoGradGuard
    auto opts = gpu.dtype(torch::kBFloat16);
    auto q = torch::randn({B, H, T, d}, opts).requires_grad_(), k = torch::randn({B, H, T, d}, opts).requires_grad_();
    auto v = torch::randn({B, H, T, d}, opts).requires_grad_(), dout = torch::randn({B, H, T, d}, opts);
    auto step = [&] {
      for (torch::Tensor* t : {&q, &k, &v}) t->mutable_grad() = torch::Tensor();
      at::scaled_dot_product_attention(q, k, v, {}, 0.0, true).backward(dout);
    };
    const double flops = 3.5 * 4.0 * double(B * H) * double(T) * double(T) * double(d) / 2;
    // PyTorch's fastest backend: each fused one alone, the best reported (each also to stderr)
    auto& ctx = at::globalContext();
    double best = 0;
    for (const char* backend : {"flash", "cudnn", "efficient"}) {
      const std::string b = backend;
      ctx.setSDPUseFlash(b == "flash");
      ctx.setSDPUseCuDNN(b == "cudnn");
      ctx.setSDPUseMemEfficient(b == "efficient");
      ctx.setSDPUseMath(false);
      try {
        const double t = flops / (compare::device_ms(stream, step, 3, 9) * 1e-3) / 1e12;
        std::fprintf(stderr, "%s: PyTorch's %s backend %.1f TFLOP/s\n", name, backend, t);
        best = std::max(best, t);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: PyTorch's %s backend did not run\n", name, backend);
      }
    }
    ctx.setSDPUseFlash(true);
    ctx.setSDPUseCuDNN(true);
    ctx.setSDPUseMemEfficient(true);
    ctx.setSDPUseMath(true);
    report(name, best, "TFLOP/s");
  };
  sdpa("sdpa_fwd_bwd_bf16_causal_b32_h12_t1024_d64_tflops", 32, 12, 1024, 64);
  sdpa("sdpa_fwd_bwd_bf16_causal_b32_h12_t4096_d128_tflops", 32, 12, 4096, 128);

  // ---- recurrent layers: LSTM, 2 layers, input and hidden 1024, seq 128, batch 64, fp32,
  // forward + backward (cuDNN's RNN API), with cuDNN's TF32 off as wick's float32 default has it
  if (sel("lstm")) {
    torch::AutoGradMode enable_grad(true);
    const bool tf32 = at::globalContext().allowTF32CuDNN();
    at::globalContext().setAllowTF32CuDNN(false);
    torch::nn::LSTM m(torch::nn::LSTMOptions(1024, 1024).num_layers(2));
    m->to(torch::kCUDA);
    auto x = torch::randn({128, 64, 1024}, gpu).requires_grad_(), dy = torch::randn({128, 64, 1024}, gpu);
    auto step = [&] {
      x.mutable_grad() = torch::Tensor();
      m->zero_grad();
      std::get<0>(m->forward(x)).backward(dy);
    };
    report("lstm_fwd_bwd_fp32_l2_h1024_t128_b64_ms", compare::device_ms(stream, step, 3, 9), "ms");
    at::globalContext().setAllowTF32CuDNN(tf32);
  }

  // ---- a DCGAN training step as LibTorch's DCGAN example has it (noise 100, generator
  // 100 -> 256 -> 128 -> 64 -> 1 channels to 28x28, discriminator back, batch 64, Adam 2e-4,
  // betas 0.5/0.999): the discriminator on real and on fake images, its step, then the
  // generator's step; fp32 with cuDNN's convolutions, TF32 off (wick's float32 default;
  // LibTorch's is on for convolutions and is turned off here, as in the LSTM row).
  if (sel("dcgan")) {
    torch::AutoGradMode enable_grad(true);
    const bool dcgan_tf32 = at::globalContext().allowTF32CuDNN();
    at::globalContext().setAllowTF32CuDNN(false);
    const int64_t nz = 100, batch = 64;
    auto tconv = [](int64_t i, int64_t o, int64_t k, int64_t s, int64_t p) {
      return torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(i, o, k).stride(s).padding(p).bias(false));
    };
    auto conv = [](int64_t i, int64_t o, int64_t k, int64_t s, int64_t p) {
      return torch::nn::Conv2d(torch::nn::Conv2dOptions(i, o, k).stride(s).padding(p).bias(false));
    };
    auto leaky = [] { return torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)); };
    torch::nn::Sequential g(tconv(nz, 256, 4, 1, 0), torch::nn::BatchNorm2d(256), torch::nn::ReLU(), tconv(256, 128, 3, 2, 1),
                     torch::nn::BatchNorm2d(128), torch::nn::ReLU(), tconv(128, 64, 4, 2, 1), torch::nn::BatchNorm2d(64), torch::nn::ReLU(),
                     tconv(64, 1, 4, 2, 1), torch::nn::Tanh());
    torch::nn::Sequential d(conv(1, 64, 4, 2, 1), leaky(), conv(64, 128, 4, 2, 1), torch::nn::BatchNorm2d(128), leaky(),
                     conv(128, 256, 4, 2, 1), torch::nn::BatchNorm2d(256), leaky(), conv(256, 1, 3, 1, 0), torch::nn::Sigmoid());
    g->to(torch::kCUDA);
    d->to(torch::kCUDA);
    torch::optim::Adam g_opt(g->parameters(), torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}));
    torch::optim::Adam d_opt(d->parameters(), torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}));
    auto real = torch::rand({batch, 1, 28, 28}, gpu) * 2 - 1;
    auto ones_ = torch::full({batch}, 0.9, gpu), zeros_ = torch::zeros({batch}, gpu), targets = torch::ones({batch}, gpu);
    namespace F = torch::nn::functional;
    auto step = [&] {
      d->zero_grad();
      F::binary_cross_entropy(d->forward(real).reshape({-1}), ones_).backward();
      auto fake = g->forward(torch::randn({batch, nz, 1, 1}, gpu));
      F::binary_cross_entropy(d->forward(fake.detach()).reshape({-1}), zeros_).backward();
      d_opt.step();
      g->zero_grad();
      F::binary_cross_entropy(d->forward(fake).reshape({-1}), targets).backward();
      g_opt.step();
    };
    report("dcgan_step_fp32_b64_ms", compare::device_ms(stream, step, 5, 21), "ms");
    at::globalContext().setAllowTF32CuDNN(dcgan_tf32);
  }

  // ---- host <-> device, 256 MB
  if (sel("h2d") || sel("d2h") || sel("pin_memory")) {
    auto host = torch::rand({n64m});
    auto dev = torch::empty({n64m}, gpu);
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
    auto a = torch::rand({1}), b = torch::rand({1});
    report("tiny_op_cpu_us", compare::host_us([&] { auto r = a + b; }, 10000, 21, [] {}), "us");
    auto m1 = torch::randn({2048, 2048}), m2 = torch::randn({2048, 2048});
    const double ms = compare::wall_ms([&] { auto c = torch::mm(m1, m2); }, 9, [] {});
    report("cpu_matmul_fp32_2048_gflops", 2.0 * 2048 * 2048 * 2048 / (ms * 1e-3) / 1e9, "GFLOP/s");
    auto x = torch::rand({int64_t(16) << 20}), y = torch::rand({int64_t(16) << 20});
    const double ams = compare::wall_ms([&] { auto z = x + y; }, 21, [] {});
    report("cpu_add_16M_gbs", 12.0 * double(int64_t(16) << 20) / (ams * 1e-3) / 1e9, "GB/s");
    // A full reduction (16M floats read) and softmax over the rows of 4096x1024 (read and
    // written once), each output new every call.
    const double sms = compare::wall_ms([&] { auto s = x.sum(); }, 21, [] {});
    report("cpu_sum_16M_gbs", 4.0 * double(int64_t(16) << 20) / (sms * 1e-3) / 1e9, "GB/s");
    auto logits = torch::randn({4096, 1024});
    const double xms = compare::wall_ms([&] { auto p = torch::softmax(logits, 1); }, 21, [] {});
    report("cpu_softmax_4096x1024_gbs", 8.0 * 4096 * 1024 / (xms * 1e-3) / 1e9, "GB/s");
  }
  // The CNN of wick-train (tools/wick_train.cpp), batch 64 of 28x28 images: each convolution's
  // forward + backward, as a training step runs it (the first layer's input needs no gradient).
  if (sel("cpu_conv2d_cnn")) {
    auto conv_ms = [&](int64_t c, int64_t o, int64_t hw, bool input_grad) {
      auto x = torch::randn({64, c, hw, hw}), w = (torch::randn({o, c, 3, 3}) * 0.1).requires_grad_();
      auto b = torch::zeros({o}).requires_grad_(), gy = torch::randn({64, o, hw, hw});
      if (input_grad) x.requires_grad_();
      auto step = [&] {
        torch::AutoGradMode grad_on(true);  // the program runs its other rows without autograd
        for (torch::Tensor* t : {&x, &w, &b}) t->mutable_grad() = torch::Tensor();
        torch::conv2d(x, w, b, /*stride=*/{1, 1}, /*padding=*/{1, 1}).backward(gy);
      };
      return compare::wall_ms(step, 21, [] {});
    };
    report("cpu_conv2d_cnn1_fwd_bwd_ms", conv_ms(1, 32, 28, false), "ms");
    report("cpu_conv2d_cnn2_fwd_bwd_ms", conv_ms(32, 64, 14, true), "ms");
  }
  return 0;
}
