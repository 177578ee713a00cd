// RNN, LSTM, GRU and their cells, as torch.nn's (docs/design.md §18). The layers are written
// with wick's differentiable ops, so autograd and every device come with them: the input
// projection of a whole layer is one matmul over every time step, then the recurrence runs step
// by step on the rows of the batch still running (a padded batch is a packed one whose batch
// sizes are all equal). run_layers is the one place the fused backend (cuDNN's RNN API on CUDA,
// core/cudnn_rnn.h) is chosen; flatten makes the parameters views of the weight space cuDNN
// reads, once, so that its forward copies nothing.
#include "wick/nn/rnn.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/meta.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "core/cudnn_rnn.h"
#include "core/tensor_ops.h"
#include "nn/repr.h"
#include "nn/rnn_layers.h"
#include "wick/nn/functional.h"
#include "wick/nn/init.h"
#include "wick/ops.h"

namespace wick::nn {

namespace F = functional;
using detail::py_bool;
using detail::py_float;
using Mode = RNNBaseImpl::Mode;

wick::detail::CudnnRnnConfig detail::cudnn_layers(const RNNBaseImpl& m) {
  wick::detail::CudnnRnnConfig cfg;
  cfg.mode = m.mode == Mode::RNN_RELU   ? wick::detail::CudnnRnnMode::RnnRelu
             : m.mode == Mode::RNN_TANH ? wick::detail::CudnnRnnMode::RnnTanh
             : m.mode == Mode::LSTM     ? wick::detail::CudnnRnnMode::Lstm
                                        : wick::detail::CudnnRnnMode::Gru;
  cfg.input_size = m.input_size;
  cfg.hidden_size = m.hidden_size;
  cfg.proj_size = m.proj_size;
  cfg.num_layers = m.num_layers;
  cfg.bidirectional = m.bidirectional;
  cfg.bias = m.bias;
  return cfg;
}

namespace {

int64_t gate_count(Mode mode) { return mode == Mode::LSTM ? 4 : mode == Mode::GRU ? 3 : 1; }

// One layer's parameters in one direction (b_ih, b_hh undefined without bias; w_hr without
// proj_size).
struct CellWeights {
  Tensor w_ih, w_hh, b_ih, b_hh, w_hr;
};

// x W_ih^T + b_ih, with b_hh added too where it sits outside the gates' nonlinearity (all but
// GRU, whose b_hn is multiplied by r).
Tensor input_gates(Mode mode, const CellWeights& w, const Tensor& x) {
  Tensor gi = F::linear(x, w.w_ih, w.b_ih);
  if (mode != Mode::GRU && w.b_hh.defined()) gi = gi + w.b_hh;
  return gi;
}

// One step: h' from gi (input_gates of this step's rows) and h; c is LSTM's cell state, updated.
Tensor cell_step(Mode mode, const CellWeights& w, const Tensor& gi, const Tensor& h, Tensor& c) {
  switch (mode) {
    case Mode::RNN_TANH:
      return wick::tanh(wick::addmm(gi, h, w.w_hh.t()));
    case Mode::RNN_RELU:
      return wick::relu(wick::addmm(gi, h, w.w_hh.t()));
    case Mode::LSTM: {
      auto g = wick::addmm(gi, h, w.w_hh.t()).chunk(4, 1);
      c = wick::sigmoid(g[1]) * c + wick::sigmoid(g[0]) * wick::tanh(g[2]);
      Tensor out = wick::sigmoid(g[3]) * wick::tanh(c);
      return w.w_hr.defined() ? wick::mm(out, w.w_hr.t()) : out;
    }
    case Mode::GRU: {
      auto a = gi.chunk(3, 1);
      auto b = F::linear(h, w.w_hh, w.b_hh).chunk(3, 1);
      Tensor r = wick::sigmoid(a[0] + b[0]), z = wick::sigmoid(a[1] + b[1]);
      Tensor n = wick::tanh(a[2] + r * b[2]);
      return n + z * (h - n);  // (1 - z) n + z h
    }
  }
  return {};
}

// Time step t's rows of the sequence: batch_sizes[t] rows from offsets[t].
struct Steps {
  std::vector<int64_t> batch_sizes, offsets;
};

// One direction of one layer over x [rows, features]. h0 [batch, h_out] (c0 [batch, hidden]
// for LSTM) for the batch_sizes[0] sequences; sequence b runs while batch_sizes[t] > b. Sets
// h_n (c_n), each sequence's state after its own last step (its first, in reverse), and returns
// the output rows, laid out as x.
Tensor run_direction(Mode mode, const CellWeights& w, const Tensor& x, const Steps& steps, bool reverse,
                     const Tensor& h0, const Tensor& c0, Tensor& h_n, Tensor& c_n) {
  const bool lstm = mode == Mode::LSTM;
  const auto& bs = steps.batch_sizes;
  const int64_t T = int64_t(bs.size());
  if (T == 0) {
    h_n = h0, c_n = c0;
    return wick::zeros({0, h0.size(1)}, x.options());
  }
  const Tensor gi = input_gates(mode, w, x);
  std::vector<Tensor> out(static_cast<size_t>(T));
  Tensor h, c;
  if (!reverse) {
    h = h0, c = c0;
    // states of sequences that ended, the longest-running ones last
    std::vector<Tensor> ended_h, ended_c;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t b = bs[size_t(t)], running = h.size(0);
      if (b < running) {
        ended_h.push_back(h.narrow(0, b, running - b));
        h = h.narrow(0, 0, b);
        if (lstm) {
          ended_c.push_back(c.narrow(0, b, running - b));
          c = c.narrow(0, 0, b);
        }
      }
      h = cell_step(mode, w, gi.narrow(0, steps.offsets[size_t(t)], b), h, c);
      out[size_t(t)] = h;
    }
    ended_h.push_back(h);
    std::reverse(ended_h.begin(), ended_h.end());
    h_n = ended_h.size() == 1 ? ended_h[0] : wick::cat(ended_h, 0);
    if (lstm) {
      ended_c.push_back(c);
      std::reverse(ended_c.begin(), ended_c.end());
      c_n = ended_c.size() == 1 ? ended_c[0] : wick::cat(ended_c, 0);
    }
  } else {
    // from the last step back: sequences join as their last step comes
    h = h0.narrow(0, 0, bs.back());
    if (lstm) c = c0.narrow(0, 0, bs.back());
    for (int64_t t = T - 1; t >= 0; --t) {
      const int64_t b = bs[size_t(t)], running = h.size(0);
      if (b > running) {
        h = wick::cat({h, h0.narrow(0, running, b - running)}, 0);
        if (lstm) c = wick::cat({c, c0.narrow(0, running, b - running)}, 0);
      }
      h = cell_step(mode, w, gi.narrow(0, steps.offsets[size_t(t)], b), h, c);
      out[size_t(t)] = h;
    }
    h_n = h, c_n = c;
  }
  return T == 1 ? out[0] : wick::cat(out, 0);
}

struct LayersOut {
  Tensor output, h_n, c_n;
};

// The layers by wick's ops. weights: per layer and direction, 4 or 5 tensors as registered.
LayersOut run_layers_by_ops(Mode mode, const std::vector<CellWeights>& weights, int64_t num_layers, int64_t dirs,
                            double dropout, bool training, const Tensor& data, const Steps& steps, const Tensor& hx,
                            const Tensor& cx) {
  Tensor x = data;
  std::vector<Tensor> hs, cs;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    std::vector<Tensor> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t k = layer * dirs + d;
      Tensor h_n, c_n;
      outs.push_back(run_direction(mode, weights[size_t(k)], x, steps, d == 1, hx.select(0, k),
                                   mode == Mode::LSTM ? cx.select(0, k) : Tensor(), h_n, c_n));
      hs.push_back(h_n);
      if (mode == Mode::LSTM) cs.push_back(c_n);
    }
    x = dirs == 1 ? outs[0] : wick::cat(outs, 1);
    if (dropout > 0 && training && layer + 1 < num_layers) x = F::dropout(x, dropout, true);
  }
  LayersOut r;
  r.output = x;
  r.h_n = wick::stack(hs, 0);
  if (mode == Mode::LSTM) r.c_n = wick::stack(cs, 0);
  return r;
}


// Whether t owns its storage, whole: a contiguous tensor from offset 0 to the storage's end, as a
// parameter is after construction, .to() or being replaced by a new tensor.
bool owns_storage(const Tensor& t) {
  const auto& s = t.impl()->storage();
  return t.is_contiguous() && t.storage_offset() == 0 && s &&
         s->nbytes() == size_t(t.numel() * t.element_size());
}

// Makes the parameters (the module's, in registration order) views of one weight space laid out
// as cuDNN's, in place: the space is allocated, each parameter copied into its piece, and each
// parameter's TensorImpl pointed at its piece, so that every handle to it (the module's, an
// optimizer's, the user's) sees the space and cuDNN's forward reads it without a copy
// (docs/design.md §18, "The cuDNN path"). Only on CUDA where cuDNN takes the layers, when each
// parameter is one piece of the space (cuDNN keeps its elements together and in order), and
// when every parameter is a leaf that no live graph uses: a graph's saved parameter would
// otherwise see its storage, and so its version, change under it. only_fresh (the forward's
// lazy call): only when each parameter owns its storage, whole, so that a parameter shared with
// another module's space (or a view the user made) is left where it is, and a module that
// shares one with another does not take it back and forth; such a module copies into a new
// space on each call instead, as one not flattened does. Returns whether the parameters are
// the space (already, or now).
bool flatten(const RNNBaseImpl& m, const std::vector<Tensor>& params, bool only_fresh) {
  if (params.empty() || !params[0].defined() || !params[0].is_cuda()) return false;
  std::vector<const void*> storages;
  for (const Tensor& p : params) {
    if (!p.defined() || !p.is_leaf()) return false;
    if (const auto* meta = autograd::meta(p); meta && !meta->grad_accumulator.expired()) return false;
    if (only_fresh) {
      if (!owns_storage(p)) return false;
      const void* s = p.impl()->storage().get();
      if (std::find(storages.begin(), storages.end(), s) != storages.end()) return false;
      storages.push_back(s);
    }
  }
  auto space = wick::detail::cudnn_rnn_weight_space(detail::cudnn_layers(m), params);
  if (!space || !wick::detail::cudnn_rnn_one_piece_each(params, space->pieces)) return false;
  if (!only_fresh && wick::detail::cudnn_rnn_weights_flat(params, space->buf.numel(), space->pieces))
    return true;
  NoGradGuard no_grad;
  const Tensor& buf = space->buf;
  for (const wick::detail::CudnnRnnWeightPiece& piece : space->pieces) {
    const Tensor& p = params[size_t(piece.param)];
    buf.narrow(0, piece.flat_offset, piece.numel).view(p.sizes()).copy_(p);
  }
  for (const wick::detail::CudnnRnnWeightPiece& piece : space->pieces) {
    const Tensor& p = params[size_t(piece.param)];
    p.impl()->set_storage(buf.impl()->storage());
    p.impl()->set_geometry(DimVector(p.sizes()), wick::detail::contiguous_strides(p.sizes()),
                           piece.flat_offset);
  }
  return true;
}

// The backend switch: cuDNN's RNN API for a CUDA input where core's cudnn_rnn takes the problem
// (one fused forward, one CudnnRnnBackward0 node), wick's ops otherwise; both take the same
// arguments and return the same tensors.
LayersOut run_layers(const RNNBaseImpl& m, const std::vector<CellWeights>& weights, bool training,
                     const Tensor& data, const Steps& steps, const Tensor& hx, const Tensor& cx) {
  const Mode mode = m.mode;
  const int64_t dirs = m.bidirectional ? 2 : 1;
  if (data.is_cuda()) {
    wick::detail::CudnnRnnConfig cfg = detail::cudnn_layers(m);
    cfg.dropout = training && m.num_layers > 1 ? m.dropout : 0.0;
    cfg.batch_sizes = steps.batch_sizes;
    std::vector<Tensor> flat;
    for (const CellWeights& w : weights)
      for (const Tensor* t : {&w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh, &w.w_hr})
        if (t->defined()) flat.push_back(*t);
    if (auto r = wick::detail::cudnn_rnn(m.name().c_str(), cfg, data, hx, cx, flat))
      return LayersOut{r->output, r->h_n, r->c_n};
  }
  return run_layers_by_ops(mode, weights, m.num_layers, dirs, m.dropout, training, data, steps, hx, cx);
}

// "(2, 3, 20)", as Python prints a tuple of sizes.
std::string py_tuple(IntArrayRef s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}
// "[2, 3, 10]", as Python prints list(t.size()).
std::string py_list(IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

std::vector<int64_t> host_int64(const Tensor& t) { return t.to(kCPU).to(kInt64).contiguous().to_vector<int64_t>(); }


}  // namespace

// ---- RNNBaseImpl

RNNBaseImpl::RNNBaseImpl(const char* name, Mode mode, int64_t input_size, int64_t hidden_size, int64_t num_layers,
                         bool bias, bool batch_first, double dropout, bool bidirectional, int64_t proj_size)
    : Module(name),
      mode(mode),
      input_size(input_size),
      hidden_size(hidden_size),
      num_layers(num_layers),
      proj_size(proj_size),
      bias(bias),
      batch_first(batch_first),
      bidirectional(bidirectional),
      dropout(dropout) {
  WICK_CHECK(dropout >= 0 && dropout <= 1, ValueError, name,
             "dropout should be a number in range [0, 1] representing the probability of an element being zeroed");
  WICK_CHECK(hidden_size > 0, ValueError, name, "hidden_size must be greater than zero");
  WICK_CHECK(num_layers > 0, ValueError, name, "num_layers must be greater than zero");
  WICK_CHECK(proj_size >= 0, ValueError, name, "proj_size should be a positive integer or zero to disable projections");
  WICK_CHECK(proj_size < hidden_size, ValueError, name, "proj_size has to be smaller than hidden_size");
  WICK_CHECK(input_size >= 0, ValueError, name, "input_size must be non-negative");
  const int64_t gates = gate_count(mode) * hidden_size, h_out = proj_size > 0 ? proj_size : hidden_size;
  const int64_t dirs = bidirectional ? 2 : 1;
  auto make = [&](IntArrayRef sizes) { return wick::detail::empty_for(sizes, {}, name); };
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    const int64_t in = layer == 0 ? input_size : h_out * dirs;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string suffix = "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      register_parameter("weight_ih" + suffix, make({gates, in}));
      register_parameter("weight_hh" + suffix, make({gates, h_out}));
      if (bias) {
        register_parameter("bias_ih" + suffix, make({gates}));
        register_parameter("bias_hh" + suffix, make({gates}));
      }
      if (proj_size > 0) register_parameter("weight_hr" + suffix, make({proj_size, hidden_size}));
    }
  }
  reset_parameters();
}

void RNNBaseImpl::flatten_parameters() { flatten(*this, parameters(false), false); }

void RNNBaseImpl::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(double(hidden_size));
  for (Tensor& w : parameters(false)) init::uniform_(w, -stdv, stdv);
}

std::string RNNBaseImpl::extra_repr() const {
  std::string s = std::to_string(input_size) + ", " + std::to_string(hidden_size);
  if (proj_size != 0) s += ", proj_size=" + std::to_string(proj_size);
  if (num_layers != 1) s += ", num_layers=" + std::to_string(num_layers);
  if (!bias) s += ", bias=False";
  if (batch_first) s += ", batch_first=True";
  if (dropout != 0) s += ", dropout=" + py_float(dropout);
  if (bidirectional) s += ", bidirectional=True";
  return s;
}

RNNBaseImpl::Result RNNBaseImpl::run(const Tensor& input, const PackedSequence* packed, Tensor hx, Tensor cx) {
  const char* op = name().c_str();
  return wick::detail::as_op(op, [&]() -> Result {
    const bool lstm = mode == Mode::LSTM;
    const int64_t dirs = bidirectional ? 2 : 1, h_out = proj_size > 0 ? proj_size : hidden_size;
    Tensor data;
    Steps steps;
    bool batched = true;
    int64_t T = 0, B = 0;
    if (packed) {
      data = packed->data();
      wick::detail::check_defined(data, op, "input.data");
      steps.batch_sizes = host_int64(packed->batch_sizes());
      B = steps.batch_sizes.empty() ? 0 : steps.batch_sizes[0];
      const Tensor& sorted = packed->sorted_indices();
      if (sorted.defined()) {
        if (hx.defined()) hx = hx.index_select(1, sorted.to(hx.device()));
        if (cx.defined()) cx = cx.index_select(1, sorted.to(cx.device()));
      }
    } else {
      wick::detail::check_defined(input, op, "input");
      WICK_CHECK(input.dim() == 2 || input.dim() == 3, ValueError, op, "Expected input to be 2D or 3D, got ",
                 input.dim(), "D instead");
      batched = input.dim() == 3;
      Tensor x = input;
      const char* kind = batched ? "batched 3-D" : "unbatched 2-D";
      const int64_t want = batched ? 3 : 2;
      if (lstm && hx.defined())
        WICK_CHECK(hx.dim() == want && cx.dim() == want, ValueError, op, "For ", kind, " input, hx and cx should also be ",
                   want, "-D but got (", hx.dim(), "-D, ", cx.dim(), "-D) tensors");
      else if (hx.defined())
        WICK_CHECK(hx.dim() == want, ValueError, op, "For ", kind, " input, hx should also be ", want, "-D but got ",
                   hx.dim(), "-D tensor");
      if (!batched) {
        x = x.unsqueeze(batch_first ? 0 : 1);
        if (hx.defined()) hx = hx.unsqueeze(1);
        if (cx.defined()) cx = cx.unsqueeze(1);
      }
      if (batch_first) x = x.transpose(0, 1);
      T = x.size(0), B = x.size(1);
      data = x.reshape({T * B, x.size(2)});
      steps.batch_sizes.assign(size_t(T), B);
    }
    // looked up on each call, so that a replaced parameter (replace_parameter) is the one used
    const std::vector<Tensor> flat = parameters(false);
    const Tensor& w0 = flat[0];
    WICK_CHECK(data.dtype() == w0.dtype(), ValueError, op, "input must have the type ", w0.dtype(), ", got type ",
               data.dtype());
    // parameters new to CUDA (the module moved, or one replaced) become views of cuDNN's weight
    // space before the first forward that can read it in place
    if (data.is_cuda() && w0.is_cuda()) flatten(*this, flat, true);
    WICK_CHECK(data.dim() == 2, ValueError, op, "input must have 2 dimensions, got ", data.dim());
    WICK_CHECK(data.size(-1) == input_size, ValueError, op, "input.size(-1) must be equal to input_size. Expected ",
               input_size, ", got ", data.size(-1));
    const std::vector<int64_t> h_size{num_layers * dirs, B, h_out}, c_size{num_layers * dirs, B, hidden_size};
    if (hx.defined())
      WICK_CHECK(hx.sizes().equals(h_size), ValueError, op, lstm ? "Expected hidden[0] size " : "Expected hidden size ",
                 py_tuple(h_size), ", got ", py_list(hx.sizes()));
    else
      hx = wick::zeros(h_size, data.options());
    if (lstm) {
      if (cx.defined())
        WICK_CHECK(cx.sizes().equals(c_size), ValueError, op, "Expected hidden[1] size ", py_tuple(c_size), ", got ",
                   py_list(cx.sizes()));
      else
        cx = wick::zeros(c_size, data.options());
    }
    int64_t offset = 0;
    for (int64_t b : steps.batch_sizes) {
      steps.offsets.push_back(offset);
      offset += b;
    }
    WICK_CHECK(offset == data.size(0), ValueError, op, "the batch sizes add up to ", offset, " but input.data has ",
               data.size(0), " rows");

    std::vector<CellWeights> weights;
    size_t i = 0;
    for (int64_t k = 0; k < num_layers * dirs; ++k) {
      CellWeights w;
      w.w_ih = flat[i++];
      w.w_hh = flat[i++];
      if (bias) {
        w.b_ih = flat[i++];
        w.b_hh = flat[i++];
      }
      if (proj_size > 0) w.w_hr = flat[i++];
      weights.push_back(std::move(w));
    }
    LayersOut r = run_layers(*this, weights, is_training(), data, steps, hx, cx);

    Result res;
    if (packed) {
      res.packed = PackedSequence(r.output, packed->batch_sizes(), packed->sorted_indices(), packed->unsorted_indices());
      const Tensor& unsorted = packed->unsorted_indices();
      if (unsorted.defined()) {
        r.h_n = r.h_n.index_select(1, unsorted.to(r.h_n.device()));
        if (lstm) r.c_n = r.c_n.index_select(1, unsorted.to(r.c_n.device()));
      }
    } else {
      Tensor out = r.output.view({T, B, r.output.size(1)});
      if (batch_first) out = out.transpose(0, 1);
      if (!batched) {
        out = out.squeeze(batch_first ? 0 : 1);
        r.h_n = r.h_n.squeeze(1);
        if (lstm) r.c_n = r.c_n.squeeze(1);
      }
      res.output = out;
    }
    res.h = r.h_n;
    res.c = r.c_n;
    return res;
  });
}

// ---- RNN, LSTM, GRU

namespace {
Mode rnn_mode(const RNNOptions& o) {
  const std::string& n = o.nonlinearity().name;
  WICK_CHECK(n == "tanh" || n == "relu", ValueError, "RNN", "Unknown nonlinearity '", n,
             "'. Select from 'tanh' or 'relu'.");
  return n == "tanh" ? Mode::RNN_TANH : Mode::RNN_RELU;
}
}  // namespace

RNNImpl::RNNImpl(const RNNOptions& o)
    : RNNBaseImpl("RNN", rnn_mode(o), o.input_size(), o.hidden_size(), o.num_layers(), o.bias(), o.batch_first(),
                  o.dropout(), o.bidirectional(), 0),
      options(o) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, Tensor hx) {
  Result r = run(input, nullptr, std::move(hx), {});
  return {r.output, r.h};
}
std::tuple<PackedSequence, Tensor> RNNImpl::forward(const PackedSequence& input, Tensor hx) {
  Result r = run({}, &input, std::move(hx), {});
  return {r.packed, r.h};
}

LSTMImpl::LSTMImpl(const LSTMOptions& o)
    : RNNBaseImpl("LSTM", Mode::LSTM, o.input_size(), o.hidden_size(), o.num_layers(), o.bias(), o.batch_first(),
                  o.dropout(), o.bidirectional(), o.proj_size()),
      options(o) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  Tensor h, c;
  if (hx_opt) std::tie(h, c) = *hx_opt;
  WICK_CHECK(h.defined() == c.defined(), ValueError, "LSTM", "hx and cx must be given together");
  Result r = run(input, nullptr, h, c);
  return {r.output, {r.h, r.c}};
}
std::tuple<PackedSequence, std::tuple<Tensor, Tensor>> LSTMImpl::forward(
    const PackedSequence& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  Tensor h, c;
  if (hx_opt) std::tie(h, c) = *hx_opt;
  WICK_CHECK(h.defined() == c.defined(), ValueError, "LSTM", "hx and cx must be given together");
  Result r = run({}, &input, h, c);
  return {r.packed, {r.h, r.c}};
}

GRUImpl::GRUImpl(const GRUOptions& o)
    : RNNBaseImpl("GRU", Mode::GRU, o.input_size(), o.hidden_size(), o.num_layers(), o.bias(), o.batch_first(),
                  o.dropout(), o.bidirectional(), 0),
      options(o) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, Tensor hx) {
  Result r = run(input, nullptr, std::move(hx), {});
  return {r.output, r.h};
}
std::tuple<PackedSequence, Tensor> GRUImpl::forward(const PackedSequence& input, Tensor hx) {
  Result r = run({}, &input, std::move(hx), {});
  return {r.packed, r.h};
}

// ---- cells

RNNCellBaseImpl::RNNCellBaseImpl(const char* name, int64_t input_size, int64_t hidden_size, bool bias, int64_t gates,
                                 std::string nonlinearity)
    : Module(name), input_size(input_size), hidden_size(hidden_size), bias(bias), nonlinearity(std::move(nonlinearity)) {
  WICK_CHECK(input_size >= 0 && hidden_size >= 0, ValueError, name, "input_size and hidden_size must be non-negative");
  auto make = [&](IntArrayRef sizes) { return wick::detail::empty_for(sizes, {}, name); };
  weight_ih = register_parameter("weight_ih", make({gates * hidden_size, input_size}));
  weight_hh = register_parameter("weight_hh", make({gates * hidden_size, hidden_size}));
  if (bias) {
    bias_ih = register_parameter("bias_ih", make({gates * hidden_size}));
    bias_hh = register_parameter("bias_hh", make({gates * hidden_size}));
  } else {
    register_parameter("bias_ih", Tensor());
    register_parameter("bias_hh", Tensor());
  }
  reset_parameters();
}

void RNNCellBaseImpl::reset_parameters() {
  const double stdv = hidden_size > 0 ? 1.0 / std::sqrt(double(hidden_size)) : 0.0;
  for (Tensor* w : {&weight_ih, &weight_hh, &bias_ih, &bias_hh})
    if (w->defined()) init::uniform_(*w, -stdv, stdv);
}

std::string RNNCellBaseImpl::extra_repr() const {
  std::string s = std::to_string(input_size) + ", " + std::to_string(hidden_size);
  if (!bias) s += ", bias=False";
  if (!nonlinearity.empty() && nonlinearity != "tanh") s += ", nonlinearity=" + nonlinearity;
  return s;
}

namespace {

// PyTorch's checks of a cell's input and states; makes them [batch, ...] (zeros for undefined
// states) and says whether the input was batched.
bool prepare_cell(const char* op, const RNNCellBaseImpl& cell, Tensor& input, std::vector<Tensor*> states,
                  bool lstm) {
  wick::detail::check_defined(input, op, "input");
  WICK_CHECK(input.dim() == 1 || input.dim() == 2, ValueError, op, "Expected input to be 1D or 2D, got ", input.dim(),
             "D instead");
  for (size_t k = 0; k < states.size(); ++k) {
    const Tensor& s = *states[k];
    if (!s.defined()) continue;
    if (lstm)
      WICK_CHECK(s.dim() == 1 || s.dim() == 2, ValueError, op, "Expected hx[", k, "] to be 1D or 2D, got ", s.dim(),
                 "D instead");
    else
      WICK_CHECK(s.dim() == 1 || s.dim() == 2, ValueError, op, "Expected hidden to be 1D or 2D, got ", s.dim(),
                 "D instead");
  }
  const bool batched = input.dim() == 2;
  if (!batched) input = input.unsqueeze(0);
  WICK_CHECK(input.dtype() == cell.weight_ih.dtype(), ValueError, op, "input must have the type ",
             cell.weight_ih.dtype(), ", got type ", input.dtype());
  WICK_CHECK(input.size(1) == cell.input_size, ValueError, op, "input has inconsistent input_size: got ", input.size(1),
             " expected ", cell.input_size);
  for (size_t k = 0; k < states.size(); ++k) {
    Tensor& s = *states[k];
    if (!s.defined()) {
      s = wick::zeros({input.size(0), cell.hidden_size}, input.options());
      continue;
    }
    if (!batched) s = s.unsqueeze(0);
    WICK_CHECK(s.dim() == 2, ValueError, op, "hidden", k, " must be 2-D for a batched input, got ", s.dim(), "-D");
    WICK_CHECK(input.size(0) == s.size(0), ValueError, op, "Input batch size ", input.size(0), " doesn't match hidden",
               k, " batch size ", s.size(0));
    WICK_CHECK(s.size(1) == cell.hidden_size, ValueError, op, "hidden", k, " has inconsistent hidden_size: got ",
               s.size(1), ", expected ", cell.hidden_size);
  }
  return batched;
}

CellWeights cell_weights(const RNNCellBaseImpl& cell) {
  return CellWeights{cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh, Tensor()};
}

}  // namespace

RNNCellImpl::RNNCellImpl(const RNNCellOptions& o)
    : RNNCellBaseImpl("RNNCell", o.input_size(), o.hidden_size(), o.bias(), 1, o.nonlinearity().name), options(o) {}

Tensor RNNCellImpl::forward(const Tensor& input_in, Tensor hx) {
  return wick::detail::as_op("RNNCell", [&] {
    Tensor input = input_in;
    const bool batched = prepare_cell("RNNCell", *this, input, {&hx}, false);
    WICK_CHECK(nonlinearity == "tanh" || nonlinearity == "relu", ValueError, "RNNCell", "Unknown nonlinearity: ",
               nonlinearity);
    const Mode mode = nonlinearity == "tanh" ? Mode::RNN_TANH : Mode::RNN_RELU;
    const CellWeights w = cell_weights(*this);
    Tensor c;
    Tensor h = cell_step(mode, w, input_gates(mode, w, input), hx, c);
    return batched ? h : h.squeeze(0);
  });
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& o)
    : RNNCellBaseImpl("LSTMCell", o.input_size(), o.hidden_size(), o.bias(), 4), options(o) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input_in,
                                                 std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  return wick::detail::as_op("LSTMCell", [&]() -> std::tuple<Tensor, Tensor> {
    Tensor input = input_in, h, c;
    if (hx_opt) std::tie(h, c) = *hx_opt;
    WICK_CHECK(h.defined() == c.defined(), ValueError, "LSTMCell", "hx and cx must be given together");
    const bool batched = prepare_cell("LSTMCell", *this, input, {&h, &c}, true);
    const CellWeights w = cell_weights(*this);
    Tensor h1 = cell_step(Mode::LSTM, w, input_gates(Mode::LSTM, w, input), h, c);
    if (!batched) return {h1.squeeze(0), c.squeeze(0)};
    return {h1, c};
  });
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& o)
    : RNNCellBaseImpl("GRUCell", o.input_size(), o.hidden_size(), o.bias(), 3), options(o) {}

Tensor GRUCellImpl::forward(const Tensor& input_in, Tensor hx) {
  return wick::detail::as_op("GRUCell", [&] {
    Tensor input = input_in;
    const bool batched = prepare_cell("GRUCell", *this, input, {&hx}, false);
    const CellWeights w = cell_weights(*this);
    Tensor c;
    Tensor h = cell_step(Mode::GRU, w, input_gates(Mode::GRU, w, input), hx, c);
    return batched ? h : h.squeeze(0);
  });
}

}  // namespace wick::nn
