// L-BFGS as torch.optim.LBFGS computes it, step for step: the two-loop recursion over the last
// history_size pairs (s, y) with the scaling H_diag = y.s / y.y, the first step's length
// min(1, 1 / |g|_1) lr, and PyTorch's strong-Wolfe search (bracketing, then zooming by cubic
// interpolation, c1 = 1e-4, c2 = 0.9, at most 25 evaluations). The parameters are handled as
// one flat vector (their gradients concatenated, an absent one as zeros). The loop's scalars
// (the loss, y.s, g.d) are read back to the host each iteration, as PyTorch's are.
#include "wick/optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick::optim {

namespace {

using Json = nlohmann::json;

const LBFGSOptions& options_of(const std::vector<OptimizerParamGroup>& groups) {
  return static_cast<const LBFGSOptions&>(groups.at(0).options());
}

void check_options(const LBFGSOptions& o, const char* op) {
  WICK_CHECK(o.lr() >= 0, ValueError, op, "Invalid learning rate: ", o.lr());
  WICK_CHECK(o.max_iter() >= 1, ValueError, op, "Invalid max_iter: ", o.max_iter());
  WICK_CHECK(!o.max_eval() || *o.max_eval() >= 1, ValueError, op, "Invalid max_eval: ", *o.max_eval());
  WICK_CHECK(o.history_size() >= 1, ValueError, op, "Invalid history_size: ", o.history_size());
  WICK_CHECK(o.tolerance_grad() >= 0 && o.tolerance_change() >= 0, ValueError, op, "Invalid tolerance");
  WICK_CHECK(!o.line_search_fn() || *o.line_search_fn() == "strong_wolfe", ValueError, op,
             "only 'strong_wolfe' is supported");
}

double item(const Tensor& t) { return t.item<double>(); }

// The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, within bounds
// (by default [min(x1, x2), max(x1, x2)]); the bounds' middle when the cubic has none.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::pair{x1, x2} : std::pair{x2, x1});
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2;
}

struct Point {  // a trial step: its length, loss, flat gradient and slope along d
  double t, f;
  Tensor g;
  double gtd;
};

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, const LBFGSOptions& options)
    : LBFGS(detail::one_param_group(std::move(params)), options) {}

LBFGS::LBFGS(std::vector<OptimizerParamGroup> groups, const LBFGSOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "LBFGS"), defaults.clone()) {
  WICK_CHECK(groups_.size() == 1, ValueError, "LBFGS", "LBFGS doesn't support per-parameter options (parameter groups)");
  check_options(options_of(groups_), "LBFGS");
}

void LBFGS::add_param_group(const OptimizerParamGroup&) {
  detail::raise<ValueError>("LBFGS.add_param_group", "LBFGS doesn't support per-parameter options (parameter groups)");
}

void LBFGS::step() {
  detail::raise<ValueError>("LBFGS.step",
                            "LBFGS re-evaluates the loss: call step(closure) with a closure that zeroes the "
                            "gradients, computes the loss, calls backward() and returns the loss");
}

int64_t LBFGS::numel() const {
  int64_t n = 0;
  for (const Tensor& p : groups_[0].params()) n += p.numel();
  return n;
}

Tensor LBFGS::flat_grad() const {
  std::vector<Tensor> parts;
  for (const Tensor& p : groups_[0].params())
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1}) : wick::zeros({p.numel()}, p.options()));
  return wick::cat(parts);
}

void LBFGS::add_grad(double step, const Tensor& direction) {
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : groups_[0].params()) {
    const int64_t n = p.numel();
    Tensor(p).add_(direction.narrow(0, offset, n).view(p.sizes()), step);
    offset += n;
  }
}

Tensor LBFGS::step(const LossClosure& closure) {
  WICK_CHECK(bool(closure), ValueError, "LBFGS.step", "step needs a closure");
  const LBFGSOptions& o = options_of(groups_);
  check_options(o, "LBFGS.step");
  for (const Tensor& p : groups_[0].params())
    WICK_CHECK(p.device() == groups_[0].params()[0].device() && p.dtype() == groups_[0].params()[0].dtype(),
               TypeError, "LBFGS.step", "all parameters must share one device and dtype");
  const int64_t max_iter = o.max_iter();
  const int64_t max_eval = o.max_eval() ? *o.max_eval() : max_iter * 5 / 4;
  const double lr = o.lr(), tol_grad = o.tolerance_grad(), tol_change = o.tolerance_change();

  auto evaluate = [&]() -> std::pair<Tensor, double> {
    AutoGradMode grad(true);
    Tensor loss = closure();
    WICK_CHECK(loss.defined() && loss.numel() == 1, ValueError, "LBFGS.step",
               "the closure must return the loss, a tensor of one element");
    return {loss, item(loss)};
  };

  Memory& m = memory_;
  auto [orig_loss, loss] = evaluate();
  int64_t current_evals = 1;
  m.func_evals += 1;
  Tensor g;
  {
    NoGradGuard no_grad;
    g = flat_grad();
  }
  if (item(g.abs().max()) <= tol_grad) return orig_loss;

  // The parameters at x plus t d: their loss and flat gradient, the parameters then put back.
  std::vector<Tensor> saved;
  auto directional = [&](double t, const Tensor& d) -> std::pair<double, Tensor> {
    add_grad(t, d);
    const double f = evaluate().second;
    Tensor gg;
    {
      NoGradGuard no_grad;
      gg = flat_grad();
      for (size_t i = 0; i < saved.size(); ++i) Tensor(groups_[0].params()[i]).copy_(saved[i]);
    }
    return {f, gg};
  };

  NoGradGuard no_grad;
  int64_t n_iter = 0;
  bool opt_cond = false;
  while (n_iter < max_iter) {
    ++n_iter;
    ++m.n_iter;
    // The direction: steepest descent first, then the two-loop recursion.
    if (m.n_iter == 1) {
      m.d = g.neg();
      m.old_dirs.clear();
      m.old_stps.clear();
      m.ro.clear();
      m.H_diag = wick::ones({}, g.options());
    } else {
      Tensor y = g - m.prev_flat_grad, s = m.d * *m.t;
      Tensor ys = y.dot(s);
      if (item(ys) > 1e-10) {
        if (int64_t(m.old_dirs.size()) == o.history_size()) {
          m.old_dirs.erase(m.old_dirs.begin());
          m.old_stps.erase(m.old_stps.begin());
          m.ro.erase(m.ro.begin());
        }
        m.old_dirs.push_back(y);
        m.old_stps.push_back(s);
        m.ro.push_back(1.0 / ys);
        m.H_diag = ys / y.dot(y);
      }
      const size_t k = m.old_dirs.size();
      std::vector<Tensor> al(k);
      Tensor q = g.neg();
      for (size_t i = k; i-- > 0;) {
        al[i] = m.old_stps[i].dot(q) * m.ro[i];
        q = q - m.old_dirs[i] * al[i];
      }
      Tensor r = q * m.H_diag;
      for (size_t i = 0; i < k; ++i) {
        Tensor be = m.old_dirs[i].dot(r) * m.ro[i];
        r = r + m.old_stps[i] * (al[i] - be);
      }
      m.d = r;
    }
    m.prev_flat_grad = g.clone();
    m.prev_loss = loss;
    // The step's length: min(1, 1 / |g|_1) lr the first time, lr after.
    double t = m.n_iter == 1 ? std::min(1.0, 1.0 / item(g.abs().sum())) * lr : lr;
    const double gtd = item(g.dot(m.d));
    if (gtd > -tol_change) {
      m.t = t;
      break;
    }
    int64_t ls_evals = 0;
    if (o.line_search_fn()) {
      saved.clear();
      for (const Tensor& p : groups_[0].params()) saved.push_back(p.clone());
      // Strong Wolfe: bracket a step, then zoom into the bracket.
      constexpr double c1 = 1e-4, c2 = 0.9;
      constexpr int64_t max_ls = 25;
      const Tensor& d = m.d;
      const double d_norm = item(d.abs().max());
      auto [f_new, g_new] = directional(t, d);
      ls_evals = 1;
      double gtd_new = item(g_new.dot(d));
      Point prev{0, loss, g.clone(), gtd};
      std::vector<Point> bracket;
      bool done = false;
      int64_t ls_iter = 0;
      while (ls_iter < max_ls) {
        if (f_new > loss + c1 * t * gtd || (ls_iter > 1 && f_new >= prev.f)) {
          bracket = {prev, {t, f_new, g_new.clone(), gtd_new}};
          break;
        }
        if (std::abs(gtd_new) <= -c2 * gtd) {
          bracket = {{t, f_new, g_new, gtd_new}};
          done = true;
          break;
        }
        if (gtd_new >= 0) {
          bracket = {prev, {t, f_new, g_new.clone(), gtd_new}};
          break;
        }
        const double min_step = t + 0.01 * (t - prev.t), max_step = t * 10, tmp = t;
        t = cubic_interpolate(prev.t, prev.f, prev.gtd, t, f_new, gtd_new, std::pair{min_step, max_step});
        prev = {tmp, f_new, g_new.clone(), gtd_new};
        std::tie(f_new, g_new) = directional(t, d);
        ++ls_evals;
        gtd_new = item(g_new.dot(d));
        ++ls_iter;
      }
      if (ls_iter == max_ls) bracket = {{0, loss, g, gtd}, {t, f_new, g_new, gtd_new}};
      bool insuf_progress = false;
      size_t low = bracket.front().f <= bracket.back().f ? 0 : 1, high = 1 - low;
      while (!done && ls_iter < max_ls) {
        if (std::abs(bracket[1].t - bracket[0].t) * d_norm < tol_change) break;
        t = cubic_interpolate(bracket[0].t, bracket[0].f, bracket[0].gtd, bracket[1].t, bracket[1].f,
                              bracket[1].gtd);
        const double bmax = std::max(bracket[0].t, bracket[1].t), bmin = std::min(bracket[0].t, bracket[1].t);
        const double eps = 0.1 * (bmax - bmin);
        if (std::min(bmax - t, t - bmin) < eps) {
          if (insuf_progress || t >= bmax || t <= bmin) {
            t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
            insuf_progress = false;
          } else {
            insuf_progress = true;
          }
        } else {
          insuf_progress = false;
        }
        std::tie(f_new, g_new) = directional(t, d);
        ++ls_evals;
        gtd_new = item(g_new.dot(d));
        ++ls_iter;
        if (f_new > loss + c1 * t * gtd || f_new >= bracket[low].f) {
          bracket[high] = {t, f_new, g_new.clone(), gtd_new};
          low = bracket[0].f <= bracket[1].f ? 0 : 1;
          high = 1 - low;
        } else {
          if (std::abs(gtd_new) <= -c2 * gtd) {
            done = true;
          } else if (gtd_new * (bracket[high].t - bracket[low].t) >= 0) {
            bracket[high] = bracket[low];
          }
          bracket[low] = {t, f_new, g_new.clone(), gtd_new};
        }
      }
      const Point& best = bracket.size() == 1 ? bracket[0] : bracket[low];
      t = best.t;
      loss = best.f;
      g = best.g;
      add_grad(t, d);
      opt_cond = item(g.abs().max()) <= tol_grad;
    } else {
      add_grad(t, m.d);
      if (n_iter != max_iter) {
        {
          AutoGradMode grad(true);
          loss = evaluate().second;
        }
        g = flat_grad();
        opt_cond = item(g.abs().max()) <= tol_grad;
        ls_evals = 1;
      }
    }
    m.t = t;
    current_evals += ls_evals;
    m.func_evals += ls_evals;
    if (n_iter == max_iter || current_evals >= max_eval || opt_cond) break;
    if (item((m.d * t).abs().max()) <= tol_change) break;
    if (std::abs(loss - *m.prev_loss) < tol_change) break;
  }
  return orig_loss;
}

// ---- state_dict

Checkpoint LBFGS::state_dict() const {
  const LBFGSOptions& o = options_of(groups_);
  Checkpoint c;
  const Memory& m = memory_;
  Json state = Json::object();
  if (m.func_evals > 0) {
    Json s = {{"func_evals", m.func_evals}, {"n_iter", m.n_iter}};
    if (m.t) s["t"] = *m.t;
    if (m.prev_loss) s["prev_loss"] = *m.prev_loss;
    s["old_dirs"] = m.old_dirs.size();
    state["0"] = s;
    auto put = [&](const std::string& name, const Tensor& t) {
      if (t.defined()) c.tensors["state.0." + name] = t;
    };
    put("d", m.d);
    put("prev_flat_grad", m.prev_flat_grad);
    put("H_diag", m.H_diag);
    for (size_t i = 0; i < m.old_dirs.size(); ++i) {
      put("old_dirs." + std::to_string(i), m.old_dirs[i]);
      put("old_stps." + std::to_string(i), m.old_stps[i]);
      put("ro." + std::to_string(i), m.ro[i]);
    }
  }
  Json params = Json::array();
  for (size_t i = 0; i < groups_[0].params().size(); ++i) params.push_back(i);
  Json group = {{"lr", o.lr()},
                {"max_iter", o.max_iter()},
                {"max_eval", o.max_eval() ? *o.max_eval() : o.max_iter() * 5 / 4},
                {"tolerance_grad", o.tolerance_grad()},
                {"tolerance_change", o.tolerance_change()},
                {"history_size", o.history_size()},
                {"line_search_fn", o.line_search_fn() ? Json(*o.line_search_fn()) : Json(nullptr)},
                {"params", params}};
  if (groups_[0].initial_lr()) group["initial_lr"] = *groups_[0].initial_lr();
  c.metadata["optimizer"] = "LBFGS";
  c.metadata["state"] = state.dump();
  c.metadata["param_groups"] = Json::array({group}).dump();
  return c;
}

void LBFGS::load_state_dict(const Checkpoint& c) {
  constexpr const char* op = "load_state_dict";
  auto meta = [&](const char* key) -> const std::string& {
    auto it = c.metadata.find(key);
    WICK_CHECK(it != c.metadata.end(), ValueError, op, "the state dict has no \"", key, "\"");
    return it->second;
  };
  WICK_CHECK(meta("optimizer") == "LBFGS", ValueError, op, "a state dict of ", meta("optimizer"),
             " cannot be loaded into LBFGS");
  Json groups, state;
  try {
    groups = Json::parse(meta("param_groups"));
    state = Json::parse(meta("state"));
  } catch (const Json::exception& e) {
    detail::raise<ValueError>(op, "the state dict's metadata is not valid JSON: ", e.what());
  }
  WICK_CHECK(groups.is_array() && groups.size() == 1 && groups[0].is_object(), ValueError, op,
             "loaded state dict has a different number of parameter groups");
  const Json& gj = groups[0];
  WICK_CHECK(gj.contains("params") && gj["params"].is_array() &&
                 gj["params"].size() == groups_[0].params().size(),
             ValueError, op, "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
  LBFGSOptions o = options_of(groups_);
  Memory m;
  std::set<std::string> used;
  try {
    o.lr(gj.at("lr").get<double>());
    o.max_iter(gj.at("max_iter").get<int64_t>());
    o.max_eval(gj.at("max_eval").get<int64_t>());
    o.tolerance_grad(gj.at("tolerance_grad").get<double>());
    o.tolerance_change(gj.at("tolerance_change").get<double>());
    o.history_size(gj.at("history_size").get<int64_t>());
    const Json& ls = gj.at("line_search_fn");
    o.line_search_fn(ls.is_null() ? std::nullopt : std::optional<std::string>(ls.get<std::string>()));
    WICK_CHECK(state.is_object() && state.size() <= 1 && (state.empty() || state.contains("0")), ValueError, op,
               "LBFGS keeps its state under parameter 0 only");
    if (!state.empty()) {
      const Json& s = state["0"];
      m.func_evals = s.at("func_evals").get<int64_t>();
      m.n_iter = s.at("n_iter").get<int64_t>();
      if (s.contains("t")) m.t = s["t"].get<double>();
      if (s.contains("prev_loss")) m.prev_loss = s["prev_loss"].get<double>();
      const int64_t k = s.at("old_dirs").get<int64_t>();
      WICK_CHECK(k >= 0 && k <= o.history_size(), ValueError, op, "state.0.old_dirs: ", k,
                 " pairs, more than history_size ", o.history_size());
      const Tensor& p0 = groups_[0].params()[0];
      const int64_t n = numel();
      auto take = [&](const std::string& name, bool vector) -> Tensor {
        auto it = c.tensors.find("state.0." + name);
        if (it == c.tensors.end()) return {};
        used.insert(it->first);
        const Tensor& t = it->second;
        WICK_CHECK(is_floating_point(t.dtype()) && (vector ? (t.dim() == 1 && t.size(0) == n) : t.numel() == 1),
                   ValueError, op, "state.0.", name, " has shape ", t.sizes(), ", expected ",
                   vector ? "[" + std::to_string(n) + "]" : std::string("one element"));
        return t.to(p0.device(), p0.dtype()).clone().reshape(vector ? std::vector<int64_t>{n} : std::vector<int64_t>{});
      };
      m.d = take("d", true);
      m.prev_flat_grad = take("prev_flat_grad", true);
      m.H_diag = take("H_diag", false);
      for (int64_t i = 0; i < k; ++i) {
        const std::string si = std::to_string(i);
        Tensor dir = take("old_dirs." + si, true), stp = take("old_stps." + si, true), r = take("ro." + si, false);
        WICK_CHECK(dir.defined() && stp.defined() && r.defined(), ValueError, op, "state.0: pair ", i,
                   " of the history is missing");
        m.old_dirs.push_back(dir);
        m.old_stps.push_back(stp);
        m.ro.push_back(r);
      }
      WICK_CHECK(m.n_iter <= 1 || (m.d.defined() && m.prev_flat_grad.defined() && m.H_diag.defined() && m.t), ValueError,
                 op, "state.0 lacks the search direction of an optimizer that has stepped");
    }
  } catch (const Json::exception& e) {
    detail::raise<ValueError>(op, "a field of the state dict is missing or of the wrong type: ", e.what());
  }
  for (const auto& [name, t] : c.tensors)
    WICK_CHECK(used.count(name), ValueError, op, "unexpected key in the state dict: ", name);
  check_options(o, op);
  std::optional<double> initial_lr;
  if (gj.contains("initial_lr") && gj["initial_lr"].is_number()) initial_lr = gj["initial_lr"].get<double>();
  // Everything checked: take it.
  groups_[0].set_options(o.clone());
  groups_[0].initial_lr() = initial_lr;
  memory_ = std::move(m);
}

}  // namespace wick::optim
