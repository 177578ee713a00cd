// Everything of wick::nn: Module and holders, layers, losses, init and functional.
//
//   #include <wick/nn.h>
//   wick::nn::Sequential net(wick::nn::Linear(4, 8), wick::nn::ReLU(), wick::nn::Linear(8, 2));
#pragma once

#include "wick/enums.h"
#include "wick/nn/activation.h"
#include "wick/nn/activation_more.h"
#include "wick/nn/attention.h"
#include "wick/nn/container.h"
#include "wick/nn/data_parallel.h"
#include "wick/nn/conv.h"
#include "wick/nn/distance.h"
#include "wick/nn/distributed.h"
#include "wick/nn/dropout.h"
#include "wick/nn/embedding.h"
#include "wick/nn/functional.h"
#include "wick/nn/init.h"
#include "wick/nn/linear.h"
#include "wick/nn/loss.h"
#include "wick/nn/loss_more.h"
#include "wick/nn/module.h"
#include "wick/nn/normalization.h"
#include "wick/nn/padding.h"
#include "wick/nn/pixelshuffle.h"
#include "wick/nn/pooling.h"
#include "wick/nn/pooling3d.h"
#include "wick/nn/rnn.h"
#include "wick/nn/transformer.h"
#include "wick/nn/upsampling.h"
#include "wick/nn/utils/clip_grad.h"
#include "wick/nn/utils/convert_parameters.h"
#include "wick/nn/utils/rnn.h"
