// Optimizer::state_dict and load_state_dict for SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam,
// Rprop and ASGD: PyTorch's {"state",
// "param_groups"} as a Checkpoint (tensors "state.<i>.<name>", JSON metadata), loaded only
// after every part of it has been checked (docs/design.md, "Saving and loading").
#include <cmath>
#include <set>
#include <string>
#include <typeinfo>

#include <nlohmann/json.hpp>

#include "wick/autograd.h"
#include "optim/optimizer_internal.h"
#include "wick/optim/adagrad.h"
#include "wick/optim/adam.h"
#include "wick/optim/adamax.h"
#include "wick/optim/asgd.h"
#include "wick/optim/nadam.h"
#include "wick/optim/optimizer.h"
#include "wick/optim/radam.h"
#include "wick/optim/rmsprop.h"
#include "wick/optim/rprop.h"
#include "wick/optim/sgd.h"

namespace wick::optim {

namespace {

using Json = nlohmann::json;
constexpr const char* kOp = "load_state_dict";

enum class Kind { SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam, Rprop, ASGD };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::SGD: return "SGD";
    case Kind::Adam: return "Adam";
    case Kind::AdamW: return "AdamW";
    case Kind::RMSprop: return "RMSprop";
    case Kind::Adagrad: return "Adagrad";
    case Kind::Adamax: return "Adamax";
    case Kind::NAdam: return "NAdam";
    case Kind::RAdam: return "RAdam";
    case Kind::Rprop: return "Rprop";
    case Kind::ASGD: return "ASGD";
  }
  return "?";
}

Kind kind_of(const Optimizer& o, const char* op) {
  if (dynamic_cast<const AdamW*>(&o)) return Kind::AdamW;
  if (dynamic_cast<const Adam*>(&o)) return Kind::Adam;
  if (dynamic_cast<const SGD*>(&o)) return Kind::SGD;
  if (dynamic_cast<const RMSprop*>(&o)) return Kind::RMSprop;
  if (dynamic_cast<const Adagrad*>(&o)) return Kind::Adagrad;
  if (dynamic_cast<const Adamax*>(&o)) return Kind::Adamax;
  if (dynamic_cast<const NAdam*>(&o)) return Kind::NAdam;
  if (dynamic_cast<const RAdam*>(&o)) return Kind::RAdam;
  if (dynamic_cast<const Rprop*>(&o)) return Kind::Rprop;
  if (dynamic_cast<const ASGD*>(&o)) return Kind::ASGD;
  detail::raise<NotImplementedError>(op, "an optimizer of type ", typeid(o).name(),
                                     " must define state_dict and load_state_dict itself");
}

// The names a state tensor of this kind may have.
const std::set<std::string>& tensor_names(Kind k) {
  static const std::set<std::string> sgd{"momentum_buffer"}, adam{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
      rmsprop{"square_avg", "momentum_buffer", "grad_avg"}, adagrad{"sum"}, adamax{"exp_avg", "exp_inf"},
      nadam{"exp_avg", "exp_avg_sq", "mu_product"}, radam{"exp_avg", "exp_avg_sq"}, rprop{"prev", "step_size"},
      asgd{"eta", "mu", "ax"};
  switch (k) {
    case Kind::SGD: return sgd;
    case Kind::RMSprop: return rmsprop;
    case Kind::Adagrad: return adagrad;
    case Kind::Adamax: return adamax;
    case Kind::NAdam: return nadam;
    case Kind::RAdam: return radam;
    case Kind::Rprop: return rprop;
    case Kind::ASGD: return asgd;
    default: return adam;
  }
}

// The buffers a step reads, which a parameter that has taken a step must have.
std::vector<const char*> needed_tensors(Kind k, const OptimizerOptions& o) {
  switch (k) {
    case Kind::Adam:
    case Kind::AdamW:
      if (static_cast<const AdamOptions&>(o).amsgrad()) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
      return {"exp_avg", "exp_avg_sq"};
    case Kind::RMSprop: {
      std::vector<const char*> needs{"square_avg"};
      if (static_cast<const RMSpropOptions&>(o).momentum() > 0) needs.push_back("momentum_buffer");
      if (static_cast<const RMSpropOptions&>(o).centered()) needs.push_back("grad_avg");
      return needs;
    }
    case Kind::Adamax: return {"exp_avg", "exp_inf"};
    case Kind::NAdam: return {"exp_avg", "exp_avg_sq", "mu_product"};
    case Kind::RAdam: return {"exp_avg", "exp_avg_sq"};
    case Kind::Rprop: return {"prev", "step_size"};
    case Kind::ASGD: return {"eta", "mu", "ax"};
    default: return {};
  }
}

// PyTorch's 0-dim state tensors (NAdam's mu_product, ASGD's eta and mu), kept on the CPU.
bool is_scalar_state(const std::string& name) { return name == "mu_product" || name == "eta" || name == "mu"; }

Json pair_json(std::tuple<double, double> p) { return Json::array({std::get<0>(p), std::get<1>(p)}); }

Json group_json(Kind k, const OptimizerOptions& options) {
  Json g = Json::object();
  if (k == Kind::SGD) {
    const auto& o = static_cast<const SGDOptions&>(options);
    g = {{"lr", o.lr()},           {"momentum", o.momentum()}, {"dampening", o.dampening()},
         {"weight_decay", o.weight_decay()}, {"nesterov", o.nesterov()}, {"maximize", o.maximize()},
         {"foreach", o.foreach ()}};
  } else if (k == Kind::RMSprop) {
    const auto& o = static_cast<const RMSpropOptions&>(options);
    g = {{"lr", o.lr()},
         {"alpha", o.alpha()},
         {"eps", o.eps()},
         {"weight_decay", o.weight_decay()},
         {"momentum", o.momentum()},
         {"centered", o.centered()},
         {"maximize", o.maximize()}};
  } else if (k == Kind::Adagrad) {
    const auto& o = static_cast<const AdagradOptions&>(options);
    g = {{"lr", o.lr()},
         {"lr_decay", o.lr_decay()},
         {"weight_decay", o.weight_decay()},
         {"initial_accumulator_value", o.initial_accumulator_value()},
         {"eps", o.eps()},
         {"maximize", o.maximize()}};
  } else if (k == Kind::Adamax) {
    const auto& o = static_cast<const AdamaxOptions&>(options);
    g = {{"lr", o.lr()},
         {"betas", pair_json(o.betas())},
         {"eps", o.eps()},
         {"weight_decay", o.weight_decay()},
         {"maximize", o.maximize()}};
  } else if (k == Kind::NAdam) {
    const auto& o = static_cast<const NAdamOptions&>(options);
    g = {{"lr", o.lr()},
         {"betas", pair_json(o.betas())},
         {"eps", o.eps()},
         {"weight_decay", o.weight_decay()},
         {"momentum_decay", o.momentum_decay()},
         {"decoupled_weight_decay", o.decoupled_weight_decay()},
         {"maximize", o.maximize()}};
  } else if (k == Kind::RAdam) {
    const auto& o = static_cast<const RAdamOptions&>(options);
    g = {{"lr", o.lr()},
         {"betas", pair_json(o.betas())},
         {"eps", o.eps()},
         {"weight_decay", o.weight_decay()},
         {"decoupled_weight_decay", o.decoupled_weight_decay()},
         {"maximize", o.maximize()}};
  } else if (k == Kind::Rprop) {
    const auto& o = static_cast<const RpropOptions&>(options);
    g = {{"lr", o.lr()},
         {"etas", pair_json(o.etas())},
         {"step_sizes", pair_json(o.step_sizes())},
         {"maximize", o.maximize()}};
  } else if (k == Kind::ASGD) {
    const auto& o = static_cast<const ASGDOptions&>(options);
    g = {{"lr", o.lr()},           {"lambd", o.lambd()},
         {"alpha", o.alpha()},     {"t0", o.t0()},
         {"weight_decay", o.weight_decay()}, {"maximize", o.maximize()}};
  } else {
    const auto& o = static_cast<const AdamOptions&>(options);
    g = {{"lr", o.lr()},
         {"betas", {std::get<0>(o.betas()), std::get<1>(o.betas())}},
         {"eps", o.eps()},
         {"weight_decay", o.weight_decay()},
         {"amsgrad", o.amsgrad()},
         {"maximize", o.maximize()},
         {"foreach", o.foreach ()}};
  }
  return g;
}

// Readers of one group's entries; each throws "[load_state_dict] param_groups[g]: ...".
struct GroupReader {
  const Json& j;
  size_t g;

  const Json& at(const char* key) const {
    WICK_CHECK(j.contains(key), ValueError, kOp, "param_groups[", g, "] has no '", key, "'");
    return j.at(key);
  }
  double number(const char* key, bool nonnegative = true) const {
    const Json& v = at(key);
    WICK_CHECK(v.is_number(), TypeError, kOp, "param_groups[", g, "]['", key, "'] must be a number, got ",
               v.dump());
    const double x = v.get<double>();
    WICK_CHECK(std::isfinite(x), ValueError, kOp, "param_groups[", g, "]['", key, "'] must be finite, got ", x);
    WICK_CHECK(!nonnegative || x >= 0, ValueError, kOp, "param_groups[", g, "]['", key,
               "'] must be non-negative, got ", x);
    return x;
  }
  bool boolean(const char* key) const {
    const Json& v = at(key);
    WICK_CHECK(v.is_boolean(), TypeError, kOp, "param_groups[", g, "]['", key, "'] must be true or false, got ",
               v.dump());
    return v.get<bool>();
  }
  // Two finite numbers (betas, etas, step_sizes).
  std::tuple<double, double> pair(const char* key) const {
    const Json& v = at(key);
    WICK_CHECK(v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_number() &&
                   std::isfinite(v[0].get<double>()) && std::isfinite(v[1].get<double>()),
               TypeError, kOp, "param_groups[", g, "]['", key, "'] must be two finite numbers, got ", v.dump());
    return {v[0].get<double>(), v[1].get<double>()};
  }
  // A flag PyTorch may store as null ("foreach": None, the implementation's own choice): null
  // keeps `current`.
  bool boolean_or_null(const char* key, bool current) const {
    return at(key).is_null() ? current : boolean(key);
  }
};

// The options of group g read from j (a copy of current with every hyperparameter replaced),
// checked as the optimizer's constructor checks them.
std::unique_ptr<OptimizerOptions> read_group(Kind k, const Json& j, size_t g, const OptimizerOptions& current) {
  GroupReader r{j, g};
  WICK_CHECK(j.is_object(), TypeError, kOp, "param_groups[", g, "] must be a JSON object, got ", j.dump());
  auto out = current.clone();
  if (k == Kind::SGD) {
    auto& o = static_cast<SGDOptions&>(*out);
    o.lr(r.number("lr"))
        .momentum(r.number("momentum"))
        .dampening(r.number("dampening", false))
        .weight_decay(r.number("weight_decay"))
        .nesterov(r.boolean("nesterov"))
        .maximize(r.boolean("maximize"))
        .foreach (r.boolean_or_null("foreach", o.foreach ()));
    WICK_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0), ValueError, kOp, "param_groups[", g,
               "]: Nesterov momentum requires a momentum and zero dampening");
  } else if (k == Kind::RMSprop) {
    auto& o = static_cast<RMSpropOptions&>(*out);
    o.lr(r.number("lr"))
        .alpha(r.number("alpha"))
        .eps(r.number("eps"))
        .weight_decay(r.number("weight_decay"))
        .momentum(r.number("momentum"))
        .centered(r.boolean("centered"))
        .maximize(r.boolean("maximize"));
  } else if (k == Kind::Adagrad) {
    auto& o = static_cast<AdagradOptions&>(*out);
    o.lr(r.number("lr"))
        .lr_decay(r.number("lr_decay"))
        .weight_decay(r.number("weight_decay"))
        .initial_accumulator_value(r.number("initial_accumulator_value"))
        .eps(r.number("eps"))
        .maximize(r.boolean("maximize"));
  } else if (k == Kind::Adamax) {
    static_cast<AdamaxOptions&>(*out)
        .lr(r.number("lr"))
        .betas(r.pair("betas"))
        .eps(r.number("eps"))
        .weight_decay(r.number("weight_decay"))
        .maximize(r.boolean("maximize"));
  } else if (k == Kind::NAdam) {
    static_cast<NAdamOptions&>(*out)
        .lr(r.number("lr"))
        .betas(r.pair("betas"))
        .eps(r.number("eps"))
        .weight_decay(r.number("weight_decay"))
        .momentum_decay(r.number("momentum_decay"))
        .decoupled_weight_decay(r.boolean("decoupled_weight_decay"))
        .maximize(r.boolean("maximize"));
  } else if (k == Kind::RAdam) {
    static_cast<RAdamOptions&>(*out)
        .lr(r.number("lr"))
        .betas(r.pair("betas"))
        .eps(r.number("eps"))
        .weight_decay(r.number("weight_decay"))
        .decoupled_weight_decay(r.boolean("decoupled_weight_decay"))
        .maximize(r.boolean("maximize"));
  } else if (k == Kind::Rprop) {
    static_cast<RpropOptions&>(*out)
        .lr(r.number("lr"))
        .etas(r.pair("etas"))
        .step_sizes(r.pair("step_sizes"))
        .maximize(r.boolean("maximize"));
  } else if (k == Kind::ASGD) {
    static_cast<ASGDOptions&>(*out)
        .lr(r.number("lr"))
        .lambd(r.number("lambd", false))
        .alpha(r.number("alpha", false))
        .t0(r.number("t0", false))
        .weight_decay(r.number("weight_decay"))
        .maximize(r.boolean("maximize"));
  } else {
    auto& o = static_cast<AdamOptions&>(*out);
    const Json& betas = r.at("betas");
    WICK_CHECK(betas.is_array() && betas.size() == 2 && betas[0].is_number() && betas[1].is_number(), TypeError,
               kOp, "param_groups[", g, "]['betas'] must be two numbers, got ", betas.dump());
    const double b1 = betas[0].get<double>(), b2 = betas[1].get<double>();
    WICK_CHECK(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1, ValueError, kOp, "param_groups[", g,
               "]['betas'] must lie in [0, 1), got [", b1, ", ", b2, "]");
    o.lr(r.number("lr"))
        .betas({b1, b2})
        .eps(r.number("eps"))
        .weight_decay(r.number("weight_decay"))
        .amsgrad(r.boolean("amsgrad"))
        .maximize(r.boolean("maximize"))
        .foreach (r.boolean_or_null("foreach", o.foreach ()));
  }
  // The ranges the constructors check (betas, etas), as "[load_state_dict] Invalid ...".
  detail::check_hyperparameters(*out, kOp);
  return out;
}

// The JSON text of a metadata key, parsed.
Json metadata_json(const Checkpoint& state, const char* key) {
  auto it = state.metadata.find(key);
  WICK_CHECK(it != state.metadata.end(), ValueError, kOp, "the state has no '", key,
             "' metadata (is it an optimizer's state_dict, or a checkpoint without its prefix?)");
  try {
    return Json::parse(it->second);
  } catch (const Json::exception& e) {
    detail::raise<ValueError>(kOp, "the '", key, "' metadata is not valid JSON (", e.what(), ")");
  }
}

}  // namespace

Checkpoint Optimizer::state_dict() const {
  const Kind k = kind_of(*this, "state_dict");
  Checkpoint out;
  Json state = Json::object(), groups = Json::array();
  int64_t index = 0;
  for (const auto& group : groups_) {
    Json g = group_json(k, group.options());
    if (group.initial_lr()) g["initial_lr"] = *group.initial_lr();
    Json params = Json::array();
    for (const Tensor& p : group.params()) {
      params.push_back(index);
      auto it = state_.find(p.impl());
      if (it != state_.end() && (it->second.step != 0 || !it->second.tensors.empty())) {
        state[std::to_string(index)] = {{"step", it->second.step}};
        for (const auto& [name, t] : it->second.tensors)
          out.tensors.emplace("state." + std::to_string(index) + "." + name, t);
      }
      ++index;
    }
    g["params"] = std::move(params);
    groups.push_back(std::move(g));
  }
  out.metadata["optimizer"] = kind_name(k);
  out.metadata["state"] = state.dump();
  out.metadata["param_groups"] = groups.dump();
  return out;
}

void Optimizer::load_state_dict(const Checkpoint& sd) {
  const Kind k = kind_of(*this, kOp);
  // The kind.
  auto kind_it = sd.metadata.find("optimizer");
  WICK_CHECK(kind_it != sd.metadata.end(), ValueError, kOp,
             "the state has no 'optimizer' metadata (is it an optimizer's state_dict, or a checkpoint without "
             "its prefix?)");
  WICK_CHECK(kind_it->second == kind_name(k), ValueError, kOp, "the state is an ", kind_it->second,
             " optimizer's, this optimizer is ", kind_name(k));

  // The groups: as many, with as many parameters, numbered in order; their hyperparameters.
  const Json groups = metadata_json(sd, "param_groups");
  WICK_CHECK(groups.is_array(), TypeError, kOp, "'param_groups' must be a JSON array");
  WICK_CHECK(groups.size() == groups_.size(), ValueError, kOp, "the state has ", groups.size(),
             " parameter groups, this optimizer ", groups_.size());
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  std::vector<std::optional<double>> initial_lrs;
  std::vector<const Tensor*> params;  // by index
  std::vector<size_t> group_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    const Json& j = groups[g];
    WICK_CHECK(j.is_object(), TypeError, kOp, "param_groups[", g, "] must be a JSON object");
    WICK_CHECK(j.contains("params") && j.at("params").is_array(), ValueError, kOp, "param_groups[", g,
               "] has no 'params' list");
    const Json& ids = j.at("params");
    const auto& mine = groups_[g].params();
    WICK_CHECK(ids.size() == mine.size(), ValueError, kOp, "param_groups[", g, "] has ", ids.size(),
               " parameters in the state, ", mine.size(), " in this optimizer");
    for (size_t i = 0; i < ids.size(); ++i) {
      WICK_CHECK(ids[i].is_number_integer() && ids[i].get<int64_t>() == int64_t(params.size()), ValueError, kOp,
                 "param_groups[", g, "]['params'][", i, "] is ", ids[i].dump(), ", expected ", params.size(),
                 " (parameters are numbered in order through the groups)");
      params.push_back(&mine[i]);
      group_of.push_back(g);
    }
    options.push_back(read_group(k, j, g, groups_[g].options()));
    initial_lrs.push_back(j.contains("initial_lr") ? std::optional<double>(GroupReader{j, g}.number("initial_lr"))
                                                   : std::nullopt);
  }

  // The per-parameter steps.
  const Json state = metadata_json(sd, "state");
  WICK_CHECK(state.is_object(), TypeError, kOp, "'state' must be a JSON object");
  std::map<size_t, ParamState> loaded;
  for (const auto& [key, entry] : state.items()) {
    size_t i = 0;
    const bool number = !key.empty() && key.size() < 19 && key.find_first_not_of("0123456789") == std::string::npos;
    if (number) i = size_t(std::stoll(key));
    WICK_CHECK(number && i < params.size(), ValueError, kOp, "the state names parameter '", key,
               "', this optimizer has parameters 0 to ", int64_t(params.size()) - 1);
    WICK_CHECK(entry.is_object() && entry.contains("step") && entry.at("step").is_number_integer() &&
                   entry.at("step").get<int64_t>() >= 0,
               ValueError, kOp, "state['", key, "'] must hold a non-negative integer 'step', got ", entry.dump());
    loaded[i].step = entry.at("step").get<int64_t>();
  }

  // The tensors: known names of parameters with a state entry, each of its parameter's shape
  // and dtype; copied onto the parameter's device.
  const auto& names = tensor_names(k);
  {
    NoGradGuard no_grad;
    for (const auto& [full, t] : sd.tensors) {
      const size_t dot = full.find('.', 6);
      bool ok = full.starts_with("state.") && dot != std::string::npos;
      size_t i = 0;
      std::string name;
      if (ok) {
        const std::string id = full.substr(6, dot - 6);
        name = full.substr(dot + 1);
        ok = !id.empty() && id.size() < 19 && id.find_first_not_of("0123456789") == std::string::npos;
        if (ok) i = size_t(std::stoll(id));
        ok = ok && names.count(name) && loaded.count(i);
      }
      WICK_CHECK(ok, ValueError, kOp, "unexpected tensor '", full, "' in the state of an ", kind_name(k),
                 " optimizer");
      const Tensor& p = *params[i];
      WICK_CHECK(t.defined(), ValueError, kOp, "the state tensor '", full, "' is undefined");
      if (is_scalar_state(name)) {
        WICK_CHECK(t.dim() == 0 && t.is_floating_point(), ValueError, kOp, "the state tensor '", full,
                   "' must be a 0-dim floating-point tensor, got shape ", t.sizes(), " and dtype ", t.dtype());
      } else {
        WICK_CHECK(t.sizes().equals(p.sizes()), ValueError, kOp, "the state tensor '", full, "' has shape ",
                   t.sizes(), ", its parameter ", i, " has shape ", p.sizes());
        WICK_CHECK(t.dtype() == p.dtype(), TypeError, kOp, "the state tensor '", full, "' has dtype ", t.dtype(),
                   ", its parameter ", i, " has dtype ", p.dtype());
      }
      loaded[i].tensors[name] = Tensor();  // placeholder: copied once everything is checked
    }
  }
  // The buffers a step reads must be there: the moments, running means and averages of a
  // parameter that has taken a step, Adagrad's sum for every parameter with a state.
  for (const auto& [i, st] : loaded) {
    std::vector<const char*> needs;
    if (k == Kind::Adagrad) needs = {"sum"};
    else if (st.step != 0) needs = needed_tensors(k, *options[group_of[i]]);
    for (const char* need : needs)
      WICK_CHECK(st.tensors.count(need), ValueError, kOp, "missing tensor 'state.", i, ".", need, "' for parameter ",
                 i, " at step ", st.step);
  }

  // Copies (these may fail for memory; nothing has changed yet).
  std::map<const void*, ParamState> next;
  {
    NoGradGuard no_grad;
    for (auto& [i, st] : loaded) {
      const Tensor& p = *params[i];
      ParamState& out = next[p.impl()];
      out.step = st.step;
      for (auto& [name, unused] : st.tensors) {
        const Tensor& t = sd.tensors.at("state." + std::to_string(i) + "." + name);
        // A scalar state takes its parameter's dtype, as PyTorch's load_state_dict casts every
        // floating state but the step; it stays on the CPU, where the step reads it.
        if (is_scalar_state(name)) out.tensors[name] = t.to(Device(kCPU), p.dtype(), false, /*copy=*/true);
        else out.tensors[name] = t.to(p.device(), false, /*copy=*/true).contiguous();
      }
    }
  }

  // Nothing below throws.
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].set_options(std::move(options[g]));
    groups_[g].initial_lr() = initial_lrs[g];
  }
  state_ = std::move(next);
}

}  // namespace wick::optim
