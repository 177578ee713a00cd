// Device-agnostic code (docs/devices.md): one program for the CPU and the GPUs, the device taken
// from a --device flag; tensor.to making a new tensor while module->to changes the module in
// place; new_* and *_like following their source; float16's narrow range; autocast. Run without
// arguments (the CPU) it prints
//   device: cpu
//   x: float32 cpu; y: float64 cpu
//   net's weight: float32 cpu
//   new_zeros: float64 cpu; zeros_like: float64 cpu; randn_like: [2, 3]
//   float16: tensor([inf, 0.], dtype=float16)
//   float32: tensor([1.2000e+05, 2.0000e-08])
//   under autocast: bfloat16
//   weight's gradient: float32
// and with --device cuda:0 on a GPU machine the same with cuda:0 (autocast then gives float16).
#include <cstring>
#include <iostream>
#include <string>

#include <wick/wick.h>

int main(int argc, char** argv) {
  // [doc:device_flag]
  // --device cpu (the default), --device cuda or --device cuda:1
  std::string name = "cpu";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--device") == 0) name = argv[i + 1];
  const wick::Device device(name);  // a ValueError for a misspelled device
  if (device.is_cuda() && !wick::cuda::is_available()) {
    std::cerr << "no GPU here: run with --device cpu\n";
    return 1;
  }
  std::cout << "device: " << device << "\n";
  // [doc:end]

  // [doc:to_vs_module_to]
  auto x = wick::ones({2, 3});
  auto y = x.to(device, wick::kFloat64);  // a new tensor; x stays as it was
  std::cout << "x: " << x.dtype() << " " << x.device() << "; y: " << y.dtype() << " " << y.device() << "\n";

  wick::nn::Linear net(3, 2);
  net->to(device);  // in place: no need to assign the result
  std::cout << "net's weight: " << net->weight.dtype() << " " << net->weight.device() << "\n";
  // [doc:end]

  // [doc:new_like]
  auto z = y.new_zeros({4});     // float64, on y's device
  auto w = wick::zeros_like(y);  // y's sizes, dtype and device
  auto r = wick::randn_like(x.to(device));
  std::cout << "new_zeros: " << z.dtype() << " " << z.device() << "; zeros_like: " << w.dtype() << " "
            << w.device() << "; randn_like: " << r.sizes() << "\n";
  // [doc:end]

  // [doc:half_overflow]
  // float16 holds at most 65504, and nothing smaller than about 6e-8: 120000 overflows to inf
  // and 1e-8 underflows to 0, where float32 keeps both.
  auto values = wick::tensor({60000., 1e-8}).to(device);
  std::cout << "float16: " << (values.to(wick::kFloat16) * 2).cpu() << "\n";
  std::cout << "float32: " << (values.to(wick::kFloat32) * 2).cpu() << "\n";
  // [doc:end]

  // [doc:mixed_precision]
  // float16 on a GPU, with a GradScaler; bfloat16 on the CPU, where the scaler is switched off
  // (every call of a disabled scaler passes straight through).
  const bool fp16 = device.is_cuda();
  wick::optim::SGD optimizer(net->parameters(), wick::optim::SGDOptions(0.1));
  wick::amp::GradScaler scaler(65536.0, 2.0, 0.5, 2000, /*enabled=*/fp16);
  wick::Tensor loss;
  {
    wick::AutocastGuard autocast(device.type(), fp16 ? wick::kFloat16 : wick::kBFloat16);
    auto out = net(x.to(device));  // the matmul runs in the lower precision
    std::cout << "under autocast: " << out.dtype() << "\n";
    loss = out.sum();
  }
  optimizer.zero_grad();
  scaler.scale(loss).backward();  // gradients reach the float32 weights
  scaler.step(optimizer);         // skipped when a gradient is inf or NaN
  scaler.update();
  std::cout << "weight's gradient: " << net->weight.grad().dtype() << "\n";
  // [doc:end]
}
