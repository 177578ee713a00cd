// A training checkpoint read from arbitrary bytes: the file is loaded with load_checkpoint, and
// its "model.", "optim." and "sched." parts go to a module, an Adam optimizer that has taken a
// step and a StepLR scheduler. Each load either succeeds, and the optimizer can step on what it
// loaded, or throws a wick::Error and leaves its object exactly as it was.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "wick/error.h"
#include "wick/io/safetensors.h"
#include "wick/nn.h"
#include "wick/ops.h"
#include "wick/optim.h"
#include "wick/random.h"

namespace {

bool same_bytes(const wick::Tensor& a, const wick::Tensor& b) {
  return a.sizes().equals(b.sizes()) && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), size_t(a.nbytes())) == 0;
}

// A deep copy of a checkpoint's tensors, to compare against after a failed load.
wick::Checkpoint snapshot(const wick::Checkpoint& c) {
  wick::Checkpoint s = c;
  for (auto& [name, t] : s.tensors) t = t.clone();
  return s;
}

bool same(const wick::Checkpoint& a, const wick::Checkpoint& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [name, t] : a.tensors) {
    auto it = b.tensors.find(name);
    if (it == b.tensors.end() || !same_bytes(t, it->second)) return false;
  }
  return true;
}

wick::Checkpoint module_state(wick::nn::Module& m) {
  wick::Checkpoint c;
  c.put("", m.state_dict());
  return snapshot(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/wick_fuzz_checkpoint_" + std::to_string(::getpid()) + ".safetensors";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  wick::Checkpoint ckpt;
  try {
    ckpt = wick::load_checkpoint(path);
  } catch (const wick::Error&) {
    return 0;
  }

  wick::manual_seed(0);
  wick::nn::Linear net(3, 2);
  const auto model_before = module_state(*net.ptr());
  try {
    net->load_state_dict(ckpt.part("model.").tensors);
  } catch (const wick::Error&) {
    if (!same(module_state(*net.ptr()), model_before)) std::abort();
  }

  // An optimizer with state: one step on a fixed loss.
  wick::optim::Adam opt(net->parameters(), wick::optim::AdamOptions(0.1));
  auto x = wick::ones({4, 3});
  auto step = [&] {
    opt.zero_grad();
    net->forward(x).sum().backward();
    opt.step();
  };
  step();
  wick::optim::StepLR sched(opt, 2, 0.5);
  const auto opt_before = snapshot(opt.state_dict());
  const auto sched_before = snapshot(sched.state_dict());
  try {
    opt.load_state_dict(ckpt.part("optim."));
  } catch (const wick::Error&) {
    if (!same(snapshot(opt.state_dict()), opt_before)) std::abort();
  }
  try {
    sched.load_state_dict(ckpt.part("sched."));
  } catch (const wick::Error&) {
    if (!same(snapshot(sched.state_dict()), sched_before)) std::abort();
  }
  // Whatever loaded is usable: a step and a scheduler step run (a loaded learning rate may be
  // anything, so the values are not checked).
  step();
  sched.step();
  return 0;
}
