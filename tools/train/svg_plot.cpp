// Hand-written SVG: a few hundred lines of markup, no plotting library. Two stacked panels
// rather than one chart with two y axes: loss and accuracy have unrelated scales, and a reader
// of a dual-axis chart has to work out which axis each line belongs to.
#include "train/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "wick/error.h"

namespace wick::train {

namespace {

constexpr double kWidth = 800, kHeight = 620;
constexpr double kLeft = 84, kRight = 770;
constexpr double kLossTop = 92, kLossBottom = 312;
constexpr double kAccTop = 362, kAccBottom = 552;
constexpr const char* kStepColor = "#9ecae1";
constexpr const char* kEpochColor = "#08519c";
constexpr const char* kAccColor = "#d94801";
constexpr size_t kMaxPoints = 400;

std::string num(double v, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// Decimals that tell ticks `step` apart.
int tick_decimals(double step) { return std::max(0, int(std::ceil(-std::log10(step) - 1e-9))); }

struct Scale {
  double lo, hi, top, bottom;  // data range and pixel range (bottom > top)
  double y(double v) const { return bottom - (v - lo) / (hi - lo) * (bottom - top); }
};

struct XScale {
  double lo, hi;
  double x(double v) const { return kLeft + (v - lo) / (hi - lo) * (kRight - kLeft); }
};

// Averages runs of points so that at most max remain (the per-step loss of a long run).
std::vector<std::pair<double, double>> downsample(const std::vector<std::pair<double, double>>& pts,
                                                  size_t max) {
  if (pts.size() <= max) return pts;
  std::vector<std::pair<double, double>> out;
  const double per = double(pts.size()) / double(max);
  for (size_t b = 0; b < max; ++b) {
    size_t i0 = size_t(double(b) * per), i1 = std::min(pts.size(), size_t(double(b + 1) * per));
    double x = 0, y = 0;
    for (size_t i = i0; i < i1; ++i) {
      x += pts[i].first;
      y += pts[i].second;
    }
    out.push_back({x / double(i1 - i0), y / double(i1 - i0)});
  }
  return out;
}

void polyline(std::ostringstream& s, const std::vector<std::pair<double, double>>& pts, const XScale& xs,
              const Scale& ys, const char* color, double width) {
  if (pts.size() < 2) return;
  s << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"" << width
    << "\" stroke-linejoin=\"round\" points=\"";
  for (auto& [x, y] : pts) s << num(xs.x(x), 1) << "," << num(ys.y(std::clamp(y, ys.lo, ys.hi)), 1) << " ";
  s << "\"/>\n";
}

void markers(std::ostringstream& s, const std::vector<std::pair<double, double>>& pts, const XScale& xs,
             const Scale& ys, const char* color) {
  for (auto& [x, y] : pts)
    s << "<circle cx=\"" << num(xs.x(x), 1) << "\" cy=\"" << num(ys.y(y), 1) << "\" r=\"4\" fill=\"" << color
      << "\" stroke=\"white\" stroke-width=\"1.5\"/>\n";
}

// Frame, horizontal grid and y ticks of a panel, with its y label written sideways.
void panel(std::ostringstream& s, const Scale& ys, const std::vector<double>& ticks, const std::string& label,
           const std::string& unit) {
  s << "<rect x=\"" << kLeft << "\" y=\"" << ys.top << "\" width=\"" << kRight - kLeft << "\" height=\""
    << ys.bottom - ys.top << "\" fill=\"white\" stroke=\"#444\" stroke-width=\"1\"/>\n";
  const int dec = ticks.size() > 1 ? tick_decimals(ticks[1] - ticks[0]) : 1;
  for (double t : ticks) {
    double y = ys.y(t);
    s << "<line x1=\"" << kLeft << "\" x2=\"" << kRight << "\" y1=\"" << num(y, 1) << "\" y2=\"" << num(y, 1)
      << "\" stroke=\"#e5e5e5\"/>\n";
    s << "<line x1=\"" << kLeft - 5 << "\" x2=\"" << kLeft << "\" y1=\"" << num(y, 1) << "\" y2=\""
      << num(y, 1) << "\" stroke=\"#444\"/>\n";
    s << "<text x=\"" << kLeft - 8 << "\" y=\"" << num(y + 4, 1) << "\" text-anchor=\"end\">" << num(t, dec)
      << unit << "</text>\n";
  }
  const double mid = (ys.top + ys.bottom) / 2;
  s << "<text x=\"20\" y=\"" << num(mid, 1) << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 "
    << num(mid, 1) << ")\" font-size=\"14\">" << escape(label) << "</text>\n";
}

void x_ticks(std::ostringstream& s, const XScale& xs, const std::vector<double>& ticks, double bottom,
             bool labels) {
  const int dec = ticks.size() > 1 ? tick_decimals(ticks[1] - ticks[0]) : 0;
  for (double t : ticks) {
    double x = xs.x(t);
    s << "<line x1=\"" << num(x, 1) << "\" x2=\"" << num(x, 1) << "\" y1=\"" << bottom << "\" y2=\""
      << bottom + 5 << "\" stroke=\"#444\"/>\n";
    if (labels)
      s << "<text x=\"" << num(x, 1) << "\" y=\"" << bottom + 20 << "\" text-anchor=\"middle\">"
        << num(t, dec) << "</text>\n";
  }
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int n) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, n);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string render_svg(const Curves& c) {
  std::ostringstream s;
  const int epochs = std::max(1, c.epochs);
  XScale xs{0, double(epochs)};
  std::vector<double> xt = epochs <= 12 ? nice_ticks(0, epochs, epochs) : nice_ticks(0, epochs, 8);

  auto steps = downsample(c.loss, kMaxPoints);
  double loss_max = 0;
  for (auto& p : steps) loss_max = std::max(loss_max, p.second);
  for (auto& p : c.epoch_loss) loss_max = std::max(loss_max, p.second);
  if (loss_max <= 0) loss_max = 1;
  std::vector<double> lt = nice_ticks(0, loss_max * 1.05, 5);
  Scale ls{0, std::max(lt.back(), loss_max), kLossTop, kLossBottom};

  double acc_min = 100, acc_max = 0;
  for (auto& p : c.accuracy) {
    acc_min = std::min(acc_min, p.second);
    acc_max = std::max(acc_max, p.second);
  }
  if (c.accuracy.empty()) acc_min = 0, acc_max = 100;
  const double alo = std::max(0.0, std::floor((acc_min - 2) / 5) * 5);
  const double ahi = std::min(100.0, std::ceil((acc_max + 2) / 5) * 5);
  std::vector<double> at = nice_ticks(alo, ahi, 5);
  Scale as{alo, std::max(ahi, at.back()), kAccTop, kAccBottom};

  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
    << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\" fill=\"#222\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << kWidth / 2
    << "\" y=\"28\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">" << escape(c.title)
    << "</text>\n";

  // Legend, one row under the title.
  double lx = kLeft + 10;
  auto legend = [&](const char* color, double width, bool marker, const std::string& text) {
    s << "<line x1=\"" << lx << "\" x2=\"" << lx + 28 << "\" y1=\"56\" y2=\"56\" stroke=\"" << color
      << "\" stroke-width=\"" << width << "\"/>\n";
    if (marker)
      s << "<circle cx=\"" << lx + 14 << "\" cy=\"56\" r=\"4\" fill=\"" << color
        << "\" stroke=\"white\" stroke-width=\"1.5\"/>\n";
    s << "<text x=\"" << lx + 34 << "\" y=\"60\">" << escape(text) << "</text>\n";
    lx += 40 + 7.0 * double(text.size());
  };
  legend(kStepColor, 1.5, false, c.loss_label);
  legend(kEpochColor, 2.5, true, c.epoch_loss_label);
  if (c.accuracy_panel) legend(kAccColor, 2.5, true, "test accuracy");

  panel(s, ls, lt, c.accuracy_panel ? "training loss" : "loss", "");
  x_ticks(s, xs, xt, kLossBottom, !c.accuracy_panel);
  polyline(s, steps, xs, ls, kStepColor, 1.2);
  std::vector<std::pair<double, double>> epoch_line = c.epoch_loss;
  polyline(s, epoch_line, xs, ls, kEpochColor, 2.5);
  markers(s, c.epoch_loss, xs, ls, kEpochColor);
  if (!c.accuracy_panel) {
    s << "<text x=\"" << (kLeft + kRight) / 2 << "\" y=\"" << kLossBottom + 44
      << "\" text-anchor=\"middle\" font-size=\"14\">" << escape(c.x_label) << "</text>\n";
    s << "</svg>\n";
    return s.str();
  }

  panel(s, as, at, "test accuracy", "%");
  x_ticks(s, xs, xt, kAccBottom, true);
  polyline(s, c.accuracy, xs, as, kAccColor, 2.5);
  markers(s, c.accuracy, xs, as, kAccColor);
  for (auto& [x, y] : c.accuracy) {
    // Value labels above the points; the top point's label goes below it to stay inside the panel.
    double py = as.y(y);
    double ty = py - 9 < kAccTop + 12 ? py + 18 : py - 9;
    s << "<text x=\"" << num(xs.x(x), 1) << "\" y=\"" << num(ty, 1) << "\" text-anchor=\""
      << (xs.x(x) > kRight - 30 ? "end" : "middle") << "\" fill=\"" << kAccColor << "\">" << num(y, 2)
      << "%</text>\n";
  }
  s << "<text x=\"" << (kLeft + kRight) / 2 << "\" y=\"" << kAccBottom + 44
    << "\" text-anchor=\"middle\" font-size=\"14\">" << escape(c.x_label) << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

void write_svg(const Curves& c, const std::string& path) {
  std::ofstream out(path);
  WICK_CHECK(out.good(), ValueError, "plot", "cannot open '", path, "' for writing");
  out << render_svg(c);
  WICK_CHECK(out.flush().good(), ValueError, "plot", "writing '", path, "' failed");
}

}  // namespace wick::train
