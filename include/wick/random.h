// Random numbers from one counter-based generator (Philox-4x32-10) on every device: the same
// seed gives the same numbers on the CPU and on every GPU.
//
//   wick::manual_seed(7);
//   auto x = wick::rand({2, 3});                          // U[0, 1), float32
//   auto y = wick::randn({2, 3}, wick::Device("cuda"));   // N(0, 1), the same values as on cpu
//   auto k = wick::randint(10, {4});                      // int64 in [0, 10)
//   x.normal_(0.0, 0.02);                                 // in place; also uniform_(from, to)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "wick/tensor.h"

namespace wick {

// Seeds the generator of every device (the CPU and each GPU) and rewinds it.
void manual_seed(uint64_t seed);

// A generator's state, as torch.get_rng_state (the CPU's, the default) and
// torch.cuda.get_rng_state (device cuda or cuda:N): 16 bytes in a uint8 CPU tensor, the seed and
// the next unused Philox counter, each a little-endian uint64.
Tensor get_rng_state(Device device = Device(kCPU));
// Restores a state from get_rng_state (torch.set_rng_state). ValueError "[set_rng_state] ..."
// unless state is a CPU uint8 tensor of 16 elements.
void set_rng_state(const Tensor& state, Device device = Device(kCPU));

// A generator of its own (torch.Generator): a seed and a Philox offset for one device, advanced
// only by the calls it is passed to (multinomial). Seeded with s, it gives the numbers the
// device's default generator gives after manual_seed(s). Copies share one state, as PyTorch's
// handles do; safe to share between threads.
//
//   wick::Generator g;                 // cpu; Generator(wick::Device("cuda")) for a GPU
//   g.manual_seed(7);
//   auto i = wick::multinomial(probs, 4, true, g);
class Generator {
 public:
  explicit Generator(Device device = Device(kCPU));
  // Seeds and rewinds it; returns it.
  Generator& manual_seed(uint64_t seed);
  uint64_t initial_seed() const;
  Device device() const;
  // Its state in get_rng_state's form, and restoring one (ValueError as set_rng_state's).
  Tensor get_state() const;
  void set_state(const Tensor& state);

  struct State;
  const std::shared_ptr<State>& state() const { return state_; }

 private:
  std::shared_ptr<State> state_;
};

// U[0, 1) in a floating dtype (the default float unless the options name one).
Tensor rand(IntArrayRef sizes, TensorOptions o = {});
// N(0, 1) in a floating dtype.
Tensor randn(IntArrayRef sizes, TensorOptions o = {});
// Integers in [low, high) (int64 unless the options name a dtype).
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions o = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions o = {});

// A random permutation of 0 .. n-1 (int64 unless the options name a dtype): the order that
// sorts n uniform draws, so one seed gives the same permutation on every device.
Tensor randperm(int64_t n, TensorOptions o = {});
// N(mean, std^2) in a floating dtype.
Tensor normal(double mean, double std, IntArrayRef sizes, TensorOptions o = {});
// One draw for each element of mean and std broadcast together (torch.normal's tensor forms), of
// mean's floating dtype and device (std's when mean is a number). ValueError unless every std is
// >= 0 (read back from a GPU, as PyTorch's check). Differentiable as PyTorch's: the gradients of
// mean and std are zero (no reparameterization; write mean + std * randn_like(..) for that).
Tensor normal(const Tensor& mean, const Tensor& std);
Tensor normal(const Tensor& mean, double std = 1.0);
Tensor normal(double mean, const Tensor& std);
// 1 with probability p (each element of probs, in [0, 1]; or the scalar p), else 0, in probs'
// (t's) dtype and shape: a draw of rand_like compared with the probability.
Tensor bernoulli(const Tensor& probs);
Tensor bernoulli(const Tensor& t, double p);

// The same, with t's sizes, dtype and device unless the options say otherwise, laid out as
// empty_like lays it out (none: Preserve). Draws go to memory in address order: rand_like of a
// transposed tensor holds the values rand() of the untransposed shape holds, transposed.
Tensor rand_like(const Tensor& t, TensorOptions o = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor randn_like(const Tensor& t, TensorOptions o = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor randint_like(const Tensor& t, int64_t high, TensorOptions o = {},
                    std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, TensorOptions o = {},
                    std::optional<MemoryFormat> memory_format = std::nullopt);

}  // namespace wick
