// wick-train's plot: training loss and test accuracy as one self-contained SVG file.
//
//   wick::train::Curves c;
//   c.title = "mlp on Fashion-MNIST, cpu";
//   c.loss.push_back({0.01, 2.30});      // (epoch, loss) of each step, epoch fractional
//   c.accuracy.push_back({1, 84.2});     // (epoch, test accuracy in %) after each epoch
//   wick::train::write_svg(c, "train.svg");
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace wick::train {

struct Curves {
  std::string title;
  std::vector<std::pair<double, double>> loss;        // per step
  std::vector<std::pair<double, double>> epoch_loss;  // mean per epoch, at its end
  std::vector<std::pair<double, double>> accuracy;    // per epoch, in percent
  int epochs = 1;
  // The labels (wick-gpt: steps on x, the validation loss as the second loss curve and no
  // accuracy panel).
  std::string x_label = "epoch";
  std::string loss_label = "training loss (per step)";
  std::string epoch_loss_label = "training loss (epoch mean)";
  bool accuracy_panel = true;
};

// Two panels over a shared epoch axis: loss (per step, thin; per epoch, with markers) above,
// test accuracy below; ticks, axis labels and a legend. No scripts, fonts or external files.
std::string render_svg(const Curves& c);
// Writes render_svg(c) to path; throws wick::ValueError when the file can't be written.
void write_svg(const Curves& c, const std::string& path);

// About n round tick values covering [lo, hi] (steps of 1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double lo, double hi, int n = 5);

}  // namespace wick::train
