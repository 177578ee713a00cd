// The umbrella header: everything wick offers.
//
//   #include <wick/wick.h>
//   auto x = wick::rand({2, 3}, wick::Device("cuda"));
//   std::cout << x.sum() << "\n";
#pragma once

// LibTorch's torch/torch.h makes these available to its users' programs too (assert, std::cout,
// std::accumulate among them).
#include <cassert>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>

#include "wick/amp.h"
#include "wick/autograd.h"
#include "wick/autograd_function.h"
#include "wick/backends.h"
#include "wick/cuda.h"
#include "wick/cuda_comm.h"
#include "wick/data/dataloader.h"
#include "wick/data/dataset.h"
#include "wick/data/datasets.h"
#include "wick/data/fashion_mnist.h"
#include "wick/data/sampler.h"
#include "wick/data/transforms.h"
#include "wick/device.h"
#include "wick/distributed.h"
#include "wick/dtype.h"
#include "wick/enums.h"
#include "wick/error.h"
#include "wick/half.h"
#include "wick/indexing.h"
#include "wick/io/dlpack.h"
#include "wick/io/safetensors.h"
#include "wick/linalg_more.h"
#include "wick/nn.h"
#include "wick/ops.h"
#include "wick/optim.h"
#include "wick/out.h"
#include "wick/random.h"
#include "wick/scalar.h"
#include "wick/serialize.h"
#include "wick/tensor.h"
#include "wick/text.h"
#include "wick/version.h"
