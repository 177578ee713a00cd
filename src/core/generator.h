// The generator state of each device: a seed and the next unused Philox counter (offset).
// wick::manual_seed, wick::cuda::manual_seed{,_all} and every random op go through here.
//
//   auto [seed, offset] = detail::next_offset(out.device(), detail::counters_for(op, dtype, n));
//   detail::kernel<&KernelTable::random>(out.device(), "random")(op, out, seed, offset, a, b);
#pragma once

#include <cstdint>

#include "core/kernel_table.h"
#include "wick/random.h"

namespace wick::detail {

struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// The seed of a generator nobody seeded (PyTorch's default_rng_seed_val).
inline constexpr uint64_t kDefaultSeed = 67280421310721ull;

// Elements of one draw fed by one Philox block, and the counters a draw of n elements uses.
int elements_per_block(RandomOp op, Dtype dtype);
uint64_t counters_for(RandomOp op, Dtype dtype, int64_t n);

// Reserves `counters` counters on d's generator and returns where the draw starts.
// Thread-safe; a CUDA device without an index means the current one.
PhiloxState next_offset(Device d, uint64_t counters);

// While alive, this thread's draws on d's device come from g instead of the device's default
// generator (the random ops that take a Generator). DeviceError naming op unless g is of d's
// device.
class GeneratorScope {
 public:
  GeneratorScope(Generator& g, Device d, const char* op);
  ~GeneratorScope();
  GeneratorScope(const GeneratorScope&) = delete;
  GeneratorScope& operator=(const GeneratorScope&) = delete;

 private:
  Generator::State* previous_;
};

// Every generator: the CPU's and each CUDA device's, including those not used yet.
void seed_all(uint64_t seed);
// Every CUDA device's generator (wick::cuda::manual_seed_all).
void seed_all_cuda(uint64_t seed);
// One device's generator (wick::cuda::manual_seed passes the current device).
void seed_device(Device d, uint64_t seed);

// Read and restore a generator (checkpoints, tests).
PhiloxState get_state(Device d);
void set_state(Device d, PhiloxState s);

}  // namespace wick::detail
