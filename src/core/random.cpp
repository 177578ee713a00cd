// manual_seed, the random factories, normal_ and uniform_, and each device's generator state.
//
// A generator is only (seed, offset): the numbers themselves are a pure function of
// (seed, counter) (src/core/philox.h), so a draw reserves its counters under a lock and the
// kernel runs outside it. Alternatives that lost: one std::atomic offset per device (a seed
// change must reset seed and offset together, which a pair of atomics cannot do without a
// lock anyway; draws are never frequent enough for the mutex to show).
#include "core/as_op.h"
#include "wick/random.h"

#include <array>
#include <cmath>
#include <limits>
#include <mutex>

#include "core/cuda_hooks.h"
#include "core/generator.h"
#include "core/philox.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/cuda.h"
#include "wick/ops.h"

namespace wick {
namespace detail {
namespace {

class Generators {
 public:
  static Generators& get() {
    static Generators g;
    return g;
  }

  PhiloxState reserve(Device d, uint64_t counters) {
    std::lock_guard<std::mutex> lock(mu_);
    PhiloxState& s = slot(d);
    PhiloxState start = s;
    s.offset += counters;
    return start;
  }
  PhiloxState read(Device d) {
    std::lock_guard<std::mutex> lock(mu_);
    return slot(d);
  }
  void write(Device d, PhiloxState s) {
    std::lock_guard<std::mutex> lock(mu_);
    slot(d) = s;
  }
  void seed_all(uint64_t seed, bool cpu) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cpu) cpu_ = PhiloxState{seed, 0};
    cuda_.fill(PhiloxState{seed, 0});
  }

 private:
  Generators() {
    cpu_ = PhiloxState{kDefaultSeed, 0};
    cuda_.fill(PhiloxState{kDefaultSeed, 0});
  }
  // Callers hold mu_. Device indices fit in int8, so a fixed table covers every GPU.
  PhiloxState& slot(Device d) {
    if (d.is_cpu()) return cpu_;
    return cuda_[size_t(d.index())];
  }

  std::mutex mu_;
  PhiloxState cpu_;
  std::array<PhiloxState, 128> cuda_;
};

// A CUDA device without an index is the current one.
Device generator_device(Device d) {
  if (d.is_cpu()) return Device(kCPU);
  return d.has_index() ? d : Device(kCUDA, cuda::current_device());
}

// Fills out (any layout) from d's stream: contiguous tensors directly, others through a
// contiguous temporary, so that element i of the draw is element i in row-major order.
void fill_random(const Tensor& out, RandomOp op, double a, double b) {
  const int64_t n = out.numel();
  if (n == 0) return;
  if (!out.is_contiguous()) {
    Tensor tmp = empty(out.sizes(), TensorOptions(out.dtype()).device(out.device()));
    fill_random(tmp, op, a, b);
    Tensor dst = out;  // a handle to the same tensor
    dst.copy_(tmp);
    return;
  }
  // A replayed graph would draw the same numbers again: refuse while capturing.
  if (out.is_cuda())
    cuda_check_not_capturing(out.device(), "random numbers",
                             "every replay would draw the same numbers again");
  const PhiloxState s = next_offset(out.device(), counters_for(op, out.dtype(), n));
  kernel<&KernelTable::random>(out.device(), "random")(op, out, s.seed, s.offset, a, b);
  bump_version(out);
}

void check_floating(Dtype t, const char* op) {
  WICK_CHECK(is_floating_point(t), TypeError, op, op, " needs a floating point dtype, but got ", t);
}

// The largest finite value of a floating dtype.
double dtype_max(Dtype t) {
  switch (t) {
    case kFloat16:
      return 65504.0;
    case kBFloat16:
      return 3.3895313892515355e38;
    case kFloat32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

void check_uniform(Dtype t, double from, double to, const char* op) {
  check_floating(t, op);
  WICK_CHECK(std::isfinite(from) && std::isfinite(to), ValueError, op,
             "expects finite bounds, but got from=", from, " and to=", to);
  WICK_CHECK(from <= to, ValueError, op, "expects to return a [from, to) range, but found from=", from,
             " > to=", to);
  const double m = dtype_max(t);
  WICK_CHECK(from >= -m && to <= m, ValueError, op, "bounds [", from, ", ", to, ") are out of range for ", t);
  WICK_CHECK(to - from <= m, ValueError, op, "expects to-from <= the largest ", t, " (", m,
             "), but found to=", to, " and from=", from);
}

void check_normal(Dtype t, double mean, double std, const char* op) {
  check_floating(t, op);
  WICK_CHECK(std >= 0.0, ValueError, op, "normal expects std >= 0.0, but found std ", std);
}

// [low, high) must be a non-empty range of values the dtype holds.
void check_randint(Dtype t, int64_t low, int64_t high) {
  WICK_CHECK(low < high, ValueError, "randint",
             "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  // The kernel table carries bounds as doubles, exact up to 2^53.
  constexpr int64_t kExact = int64_t(1) << 53;
  WICK_CHECK(low >= -kExact && high <= kExact, NotImplementedError, "randint",
             "bounds beyond +-2^53 are not supported (got from=", low, ", to=", high, ")");
  int64_t lo = 0, hi = 0;  // the dtype's inclusive range
  switch (t) {
    case kBool:
      lo = 0;
      hi = 1;
      break;
    case kUInt8:
      lo = 0;
      hi = 255;
      break;
    case kInt8:
      lo = -128;
      hi = 127;
      break;
    case kInt16:
      lo = -32768;
      hi = 32767;
      break;
    case kInt32:
      lo = std::numeric_limits<int32_t>::min();
      hi = std::numeric_limits<int32_t>::max();
      break;
    case kInt64:
      lo = -kExact;
      hi = kExact;
      break;
    // Floats hold every integer up to 2^digits.
    case kFloat16:
      lo = -(1 << 11);
      hi = 1 << 11;
      break;
    case kBFloat16:
      lo = -(1 << 8);
      hi = 1 << 8;
      break;
    case kFloat32:
      lo = -(1 << 24);
      hi = 1 << 24;
      break;
    case kFloat64:
      lo = -kExact;
      hi = kExact;
      break;
  }
  WICK_CHECK(low >= lo, ValueError, "randint", "from is out of bounds for ", t, " (got from=", low, ")");
  WICK_CHECK(high - 1 <= hi, ValueError, "randint", "to - 1 is out of bounds for ", t, " (got to=", high,
             ")");
}

}  // namespace

int elements_per_block(RandomOp op, Dtype dtype) {
  switch (op) {
    case RandomOp::Uniform:
      return dtype == kFloat64 ? philox::kUniformPerBlock<double> : philox::kUniformPerBlock<float>;
    case RandomOp::Normal:
      return philox::kNormalPerBlock;
    case RandomOp::RandInt:
      return philox::kRandIntPerBlock;
  }
  return 1;
}

uint64_t counters_for(RandomOp op, Dtype dtype, int64_t n) {
  return philox::blocks_for(n, elements_per_block(op, dtype));
}

}  // namespace detail

struct Generator::State {
  Device device;
  std::mutex mu;
  detail::PhiloxState s{detail::kDefaultSeed, 0};
};

namespace detail {

namespace {
// The generator a GeneratorScope hands this thread's draws to (none: the device's default).
thread_local Generator::State* scoped_generator = nullptr;
}  // namespace

GeneratorScope::GeneratorScope(Generator& g, Device d, const char* op) : previous_(scoped_generator) {
  const Device want = generator_device(d);
  WICK_CHECK(g.device() == want, DeviceError, op, "Expected a '", want.is_cpu() ? "cpu" : "cuda",
             "' device type for generator but found '", g.device().is_cpu() ? "cpu" : "cuda", "'",
             g.device().is_cuda() && want.is_cuda() ? " of another index" : "");
  scoped_generator = g.state().get();
}
GeneratorScope::~GeneratorScope() { scoped_generator = previous_; }

PhiloxState next_offset(Device d, uint64_t counters) {
  if (Generator::State* g = scoped_generator) [[unlikely]] {
    std::lock_guard<std::mutex> lock(g->mu);
    PhiloxState start = g->s;
    g->s.offset += counters;
    return start;
  }
  return Generators::get().reserve(generator_device(d), counters);
}

void seed_all(uint64_t seed) { Generators::get().seed_all(seed, true); }
void seed_all_cuda(uint64_t seed) { Generators::get().seed_all(seed, false); }
void seed_device(Device d, uint64_t seed) {
  Generators::get().write(generator_device(d), PhiloxState{seed, 0});
}
PhiloxState get_state(Device d) { return Generators::get().read(generator_device(d)); }
void set_state(Device d, PhiloxState s) { Generators::get().write(generator_device(d), s); }

}  // namespace detail

using namespace detail;

void manual_seed(uint64_t seed) { seed_all(seed); }

Generator::Generator(Device device) : state_(std::make_shared<State>()) {
  state_->device = generator_device(resolve_device(device, "Generator"));
}
Generator& Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->s = PhiloxState{seed, 0};
  return *this;
}
uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->s.seed;
}
namespace {

// A generator's state as get_state/get_rng_state hand it out: 16 bytes, the seed then the
// offset, little-endian.
Tensor encode_state(const detail::PhiloxState& s) {
  Tensor out = empty({16}, TensorOptions().dtype(kUInt8));
  uint8_t* bytes = out.data_ptr<uint8_t>();
  for (int i = 0; i < 8; ++i) {
    bytes[i] = uint8_t(s.seed >> (8 * i));
    bytes[8 + i] = uint8_t(s.offset >> (8 * i));
  }
  return out;
}

// The state that encode_state wrote; ValueError "[op] ..." for any other tensor (from: the
// call that makes such tensors, named in the message).
detail::PhiloxState decode_state(const Tensor& state, const char* op, const char* from) {
  detail::check_defined(state, op, "state");
  WICK_CHECK(state.device().is_cpu() && state.dtype() == kUInt8 && state.numel() == 16, ValueError, op,
             "expected a CPU uint8 tensor of 16 elements (from ", from, "), got ", state.dtype(), " ",
             state.sizes(), " on ", state.device());
  const Tensor c = state.contiguous();
  const uint8_t* bytes = c.data_ptr<uint8_t>();
  detail::PhiloxState s;
  for (int i = 0; i < 8; ++i) {
    s.seed |= uint64_t(bytes[i]) << (8 * i);
    s.offset |= uint64_t(bytes[8 + i]) << (8 * i);
  }
  return s;
}

}  // namespace

Device Generator::device() const { return state_->device; }
Tensor Generator::get_state() const {
  PhiloxState s;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    s = state_->s;
  }
  return encode_state(s);
}
void Generator::set_state(const Tensor& state) {
  const PhiloxState s = decode_state(state, "set_state", "get_state");
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->s = s;
}

Tensor get_rng_state(Device device) { return encode_state(get_state(device)); }

void set_rng_state(const Tensor& state, Device device) {
  set_state(device, decode_state(state, "set_rng_state", "get_rng_state"));
}

Tensor rand(IntArrayRef sizes, TensorOptions o) {
  return wick::detail::as_op("rand", [&]() -> Tensor {
    check_floating(o.dtype(), "rand");
    Tensor t = empty(sizes, o.requires_grad(false));
    fill_random(t, RandomOp::Uniform, 0.0, 1.0);
    return finish_factory(t, o);
  });
}

Tensor randn(IntArrayRef sizes, TensorOptions o) {
  return wick::detail::as_op("randn", [&]() -> Tensor {
    check_floating(o.dtype(), "randn");
    Tensor t = empty(sizes, o.requires_grad(false));
    fill_random(t, RandomOp::Normal, 0.0, 1.0);
    return finish_factory(t, o);
  });
}

Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions o) { return randint(0, high, sizes, o); }

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions o) {
  return wick::detail::as_op("randint", [&]() -> Tensor {
    if (!o.dtype_opt()) o = o.dtype(kInt64);
    check_randint(o.dtype(), low, high);
    // Checked before drawing, so that a failed call leaves the generator as it was.
    WICK_CHECK(!o.requires_grad() || is_floating_point(o.dtype()), TypeError, "requires_grad",
               "only Tensors of floating point dtype can require gradients (got ", o.dtype(), ")");
    Tensor t = empty(sizes, o.requires_grad(false));
    fill_random(t, RandomOp::RandInt, double(low), double(high));
    return finish_factory(t, o);
  });
}

namespace {

// rand_like and its kin: a tensor laid out as empty_like's, drawn in address order (its
// elements fill one block, so a 1-D view of that block takes the draw as a contiguous tensor).
Tensor random_like(const Tensor& t, TensorOptions o, std::optional<MemoryFormat> memory_format, RandomOp op,
                   double a, double b, const char* name) {
  Tensor out = empty_like_for(t, o.requires_grad(false), memory_format, name);
  const int64_t n = out.numel();
  if (n > 0) fill_random(make_view(out, {n}, {1}, 0), op, a, b);
  return finish_factory(out, o);
}

}  // namespace

Tensor rand_like(const Tensor& t, TensorOptions o, std::optional<MemoryFormat> memory_format) {
  check_defined(t, "rand_like");
  return wick::detail::as_op("rand_like", [&]() -> Tensor {
    o = like_options(t, o, "rand_like");
    check_floating(o.dtype(), "rand");
    return random_like(t, o, memory_format, RandomOp::Uniform, 0.0, 1.0, "rand_like");
  });
}
Tensor randn_like(const Tensor& t, TensorOptions o, std::optional<MemoryFormat> memory_format) {
  check_defined(t, "randn_like");
  return wick::detail::as_op("randn_like", [&]() -> Tensor {
    o = like_options(t, o, "randn_like");
    check_floating(o.dtype(), "randn");
    return random_like(t, o, memory_format, RandomOp::Normal, 0.0, 1.0, "randn_like");
  });
}
Tensor randint_like(const Tensor& t, int64_t high, TensorOptions o, std::optional<MemoryFormat> memory_format) {
  return randint_like(t, 0, high, o, memory_format);
}
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, TensorOptions o,
                    std::optional<MemoryFormat> memory_format) {
  check_defined(t, "randint_like");
  return wick::detail::as_op("randint_like", [&]() -> Tensor {
    o = like_options(t, o, "randint_like");
    check_randint(o.dtype(), low, high);
    // Checked before drawing, so that a failed call leaves the generator as it was.
    WICK_CHECK(!o.requires_grad() || is_floating_point(o.dtype()), TypeError, "requires_grad",
               "only Tensors of floating point dtype can require gradients (got ", o.dtype(), ")");
    return random_like(t, o, memory_format, RandomOp::RandInt, double(low), double(high), "randint_like");
  });
}

Tensor& Tensor::normal_(double mean, double std) {
  check_defined(*this, "normal_", "self");
  check_normal(dtype(), mean, std, "normal_");
  check_no_internal_overlap(*this, "normal_");
  fill_random(*this, RandomOp::Normal, mean, std);
  return *this;
}

Tensor& Tensor::uniform_(double from, double to) {
  check_defined(*this, "uniform_", "self");
  check_uniform(dtype(), from, to, "uniform_");
  check_no_internal_overlap(*this, "uniform_");
  fill_random(*this, RandomOp::Uniform, from, to);
  return *this;
}

}  // namespace wick
