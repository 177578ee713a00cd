// Grad mode is per thread, as in PyTorch: a NoGradGuard in one thread (an optimizer step, a
// data loader worker) does not stop another thread from recording.
#include "wick/autograd.h"

namespace wick {

namespace {
thread_local bool grad_enabled = true;
thread_local bool inference_enabled = false;
}

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

InferenceMode::InferenceMode(bool enabled)
    : previous_grad_(grad_enabled), previous_inference_(inference_enabled) {
  grad_enabled = !enabled;
  inference_enabled = enabled;
}
InferenceMode::~InferenceMode() {
  grad_enabled = previous_grad_;
  inference_enabled = previous_inference_;
}
bool InferenceMode::is_enabled() { return inference_enabled; }
bool is_inference_mode_enabled() { return inference_enabled; }

}  // namespace wick
