#include "launch.h"

namespace compare {

namespace {
__global__ void add1(const float* a, const float* b, float* c) { c[0] = a[0] + b[0]; }
}  // namespace

void launch_add1(const float* a, const float* b, float* c, cudaStream_t stream) {
  add1<<<1, 1, 0, stream>>>(a, b, c);
}

}  // namespace compare
