// A bare one-element add kernel, launched with the CUDA runtime alone: the floor under any
// library's op (the table prints its host time beside the ops').
#pragma once

#include <cuda_runtime_api.h>

namespace compare {
void launch_add1(const float* a, const float* b, float* c, cudaStream_t stream);
}
