// Grad mode is per thread, as in PyTorch: a NoGradGuard in one thread (an optimizer step, a
// data loader worker) does not stop another thread from recording.
#include "wick/autograd.h"

namespace wick {

namespace {
thread_local bool grad_enabled = true;
}

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

}  // namespace wick
