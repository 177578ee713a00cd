// The bar is redrawn with '\r' and padded to the previous width; the terminal's width comes from
// TIOCGWINSZ, so the line never wraps (a wrapped line would scroll on each redraw).
#include "train/progress.h"

#include <algorithm>
#include <cmath>

#include <sys/ioctl.h>
#include <unistd.h>

namespace wick::train {

namespace {

int terminal_width(std::FILE* f) {
  winsize w{};
  if (ioctl(fileno(f), TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

std::string printf_string(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

}  // namespace

std::string format_duration(double seconds) {
  auto s = int64_t(std::max(0.0, seconds) + 0.5);
  if (s >= 3600)
    return printf_string("%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
                         (long long)(s % 60));
  return printf_string("%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
}

Progress::Progress(std::string label, int64_t total_steps, std::FILE* out, double log_seconds)
    : label_(std::move(label)), total_(total_steps), out_(out), tty_(isatty(fileno(out)) != 0),
      log_seconds_(log_seconds), start_(Clock::now()), last_draw_(start_) {}

double Progress::seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

double Progress::samples_per_second() const {
  double s = seconds();
  return s > 0 ? double(samples_) / s : 0.0;
}

void Progress::step(int64_t samples, std::optional<double> loss) {
  ++steps_;
  samples_ += samples;
  if (loss) {
    loss_sum_ += *loss;
    ++losses_;
  }
  auto now = Clock::now();
  double since = std::chrono::duration<double>(now - last_draw_).count();
  if (since >= (tty_ ? 0.1 : log_seconds_)) {
    last_draw_ = now;
    draw();
  }
}

std::string Progress::line(bool bar) const {
  const double frac = total_ > 0 ? std::min(1.0, double(steps_) / double(total_)) : 0.0;
  const double rate = samples_per_second();
  const double eta = steps_ > 0 ? seconds() * double(total_ - steps_) / double(steps_) : 0.0;
  const std::string loss = note_replaces_loss_ ? note_ : printf_string("loss %.4f", mean_loss()) +
                                                          (note_.empty() ? "" : "  " + note_);
  std::string stats = printf_string(" %3.0f%% %lld/%lld  %.0f %s/s  %s  %s<%s", 100 * frac, (long long)steps_,
                                    (long long)total_, rate, unit_.c_str(), loss.c_str(),
                                    format_duration(seconds()).c_str(), format_duration(eta).c_str());
  if (!bar) return label_ + stats;
  const int room = terminal_width(out_) - 1 - int(label_.size() + stats.size()) - 3;
  const int width = std::clamp(room, 0, 40);
  std::string b;
  if (width >= 10) {
    const int full = int(std::floor(frac * width));
    b = " |" + std::string(size_t(full), '#') + std::string(size_t(width - full), '.') + "|";
  }
  return label_ + b + stats;
}

void Progress::draw() {
  drawn_steps_ = steps_;
  if (tty_) {
    std::string l = line(true);
    // Clear to the end of the line (ANSI EL): a shorter line leaves nothing of the last one.
    std::fprintf(out_, "\r%s\x1b[K", l.c_str());
  } else {
    std::fprintf(out_, "%s\n", line(false).c_str());
  }
  std::fflush(out_);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_ || drawn_steps_ != steps_) draw();
  if (tty_) std::fputc('\n', out_);
  std::fflush(out_);
}

}  // namespace wick::train
