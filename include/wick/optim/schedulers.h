// Learning-rate schedulers: call step() once per epoch, after the optimizer's step().
//
//   wick::optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   wick::optim::CosineAnnealingLR cos(opt, /*T_max=*/100, /*eta_min=*/0.0);
#pragma once

#include <vector>

#include "wick/optim/optimizer.h"

namespace wick::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  // Advances one epoch and sets each group's learning rate.
  void step();
  int64_t last_epoch() const { return last_epoch_; }
  std::vector<double> get_last_lr() const { return last_lr_; }

 protected:
  // The learning rates for epoch last_epoch_ (after it was advanced).
  virtual std::vector<double> get_lr() = 0;
  std::vector<double> current_lrs() const;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = 0;
};

// lr = base_lr * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2, PyTorch's recursive form.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lr() override;

 private:
  int64_t t_max_;
  double eta_min_;
};

}  // namespace wick::optim
