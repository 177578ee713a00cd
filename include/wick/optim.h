// Everything of wick::optim: SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam, Rprop, ASGD,
// LBFGS and the learning-rate schedulers.
//
//   #include <wick/optim.h>
//   wick::optim::Adam opt(net->parameters(), wick::optim::AdamOptions(1e-3));
#pragma once

#include "wick/optim/adagrad.h"
#include "wick/optim/adam.h"
#include "wick/optim/adamax.h"
#include "wick/optim/asgd.h"
#include "wick/optim/lbfgs.h"
#include "wick/optim/nadam.h"
#include "wick/optim/optimizer.h"
#include "wick/optim/radam.h"
#include "wick/optim/rmsprop.h"
#include "wick/optim/rprop.h"
#include "wick/optim/schedulers.h"
#include "wick/optim/schedulers_more.h"
#include "wick/optim/sgd.h"
