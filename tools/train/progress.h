// wick-train's progress report: a live bar on a terminal, a plain line every few seconds in a log.
//
//   wick::train::Progress bar("epoch 1/3", loader.size());
//   for (...) bar.step(batch_size, loss);     // redraws at most 10 times a second
//   bar.finish();                           // the epoch's last line, with its totals
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace wick::train {

class Progress {
 public:
  // Writes to out (stderr by default): a bar redrawn in place when out is a terminal, else a
  // line every log_seconds.
  Progress(std::string label, int64_t total_steps, std::FILE* out = stderr, double log_seconds = 5.0);
  // One optimizer step of `samples` samples, with its loss when it was read (reading a GPU
  // tensor waits for the GPU, so callers may read it only every few steps).
  void step(int64_t samples, std::optional<double> loss = std::nullopt);
  // Ends the bar with a newline (on a terminal) or a last line (in a log).
  void finish();
  // What a sample is called in the rate ("tokens": "1234 tokens/s"); "samples" by default.
  void set_unit(std::string unit) { unit_ = std::move(unit); }
  // Text shown after the numbers (the learning rate, MFU); replaces the mean loss when
  // replace_loss is set.
  void set_note(std::string note, bool replace_loss = false) {
    note_ = std::move(note);
    note_replaces_loss_ = replace_loss;
  }

  int64_t steps() const { return steps_; }
  int64_t samples() const { return samples_; }
  // Mean of the losses given so far.
  double mean_loss() const { return losses_ ? loss_sum_ / double(losses_) : 0.0; }
  double seconds() const;
  double samples_per_second() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::string line(bool bar) const;
  void draw();

  std::string label_;
  std::string unit_ = "samples", note_;
  bool note_replaces_loss_ = false;
  int64_t total_;
  std::FILE* out_;
  bool tty_;
  double log_seconds_;
  Clock::time_point start_, last_draw_;
  int64_t steps_ = 0, samples_ = 0, losses_ = 0;
  int64_t drawn_steps_ = -1;  // steps at the last line drawn
  double loss_sum_ = 0;
  bool finished_ = false;
};

// "1:05" or "1:02:03".
std::string format_duration(double seconds);

}  // namespace wick::train
