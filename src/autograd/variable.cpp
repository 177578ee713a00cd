// Per-tensor autograd state: AutogradMeta, leaves' AccumulateGrad nodes, saved tensors, how a
// new node is wired to its inputs, and the autograd methods of Tensor.
#include <algorithm>
#include <atomic>
#include <sstream>
#include <utility>

#include "autograd/function.h"
#include "autograd/meta.h"
#include "autograd/saved.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

std::atomic<uint64_t> next_sequence_nr{0};

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.impl()->storage().get() == b.impl()->storage().get();
}

bool same_view(const Tensor& a, const Tensor& b) {
  return same_storage(a, b) && a.storage_offset() == b.storage_offset() && a.sizes().equals(b.sizes()) &&
         a.strides().equals(b.strides()) && a.dtype() == b.dtype();
}

// PyTorch's layout contract for a leaf's first gradient: a dense leaf's gradient has the leaf's
// strides (dims of size 1 aside, where a stride 0 is a broadcast view and does not count), any
// other leaf's is row-major.
bool obeys_layout_contract(const Tensor& g, const Tensor& leaf) {
  if (!wick::detail::is_non_overlapping_and_dense(leaf)) return g.is_contiguous();
  const IntArrayRef sizes = g.sizes(), gs = g.strides(), ls = leaf.strides();
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1 ? gs[d] != ls[d] : gs[d] == 0) return false;
  return true;
}

// A copy of g that obeys the contract: in the leaf's strides, else row-major.
Tensor clone_obey_contract(const Tensor& g, const Tensor& leaf) {
  if (!wick::detail::is_non_overlapping_and_dense(leaf)) return g.clone(MemoryFormat::Contiguous);
  Tensor out = wick::detail::empty_dense_for(leaf.sizes(), leaf.strides(), g.options(), "AccumulateGrad");
  wick::detail::copy_values(out, g, false);
  return out;
}

// Adds each gradient into the leaf's grad() (the sink of every path to a leaf).
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {}
  std::string name() const override { return "AccumulateGrad"; }
  variable_list apply(variable_list&& grads) override {
    Tensor g = std::move(grads[0]);
    if (!g.defined()) return {};
    // a view of a flat gradient its formula handed over (autograd/meta.h), counted as it arrives
    const bool handed_over = g.impl()->storage().use_count() != 1 && grad_view_handed_over(g);
    AutogradMeta& m = meta_or_create(leaf_);
    m.grad_destination_taken = false;
    if (GradMode::is_enabled()) [[unlikely]] {
      // create_graph: the gradient keeps its graph; a new grad() is a recorded copy (nothing
      // else may write into it) or the recorded sum, out of place, as PyTorch's.
      m.grad = m.grad.defined() ? m.grad + g : g.clone(MemoryFormat::Contiguous);
      run_post_accumulate_hooks(m);
      return {};
    }
    NoGradGuard no_grad;
    if (!m.grad.defined()) {
      // Take the gradient when nothing else refers to it (its memory is ours, or it is one of
      // the disjoint views of a flat gradient its formula handed over) or when it was written
      // into the leaf's gradient destination; else copy, so that zero_() or an optimizer's
      // in-place update never reaches another tensor.
      bool owned = g.use_count() == 1 && (g.impl()->storage().use_count() == 1 || handed_over) &&
                   obeys_layout_contract(g, leaf_) && g.impl()->autograd_meta() == nullptr;
      if (owned && handed_over) grad_view_taken(g);
      if (!owned && m.grad_destination.defined() && same_view(g, m.grad_destination) &&
          g.impl()->autograd_meta() == nullptr)
        m.grad = m.grad_destination;
      else
        m.grad = owned ? std::move(g) : clone_obey_contract(g, leaf_);
    } else {
      m.grad.add_(g);
    }
    run_post_accumulate_hooks(m);
    return {};
  }
  void run_post_accumulate_hooks(AutogradMeta& m) {
    if (m.post_accumulate_hooks && !m.post_accumulate_hooks->hooks.empty()) {
      NoGradGuard no_grad;
      // A copy: a hook may register or remove hooks of this leaf.
      auto hooks = m.post_accumulate_hooks->hooks;
      for (auto& [id, hook] : hooks) hook(leaf_);
    }
  }
  const Tensor& variable() const { return leaf_; }

 private:
  Tensor leaf_;
};

// PyTorch's legacy type name: FloatTensor, cuda.LongTensor, ...
std::string type_name(const Tensor& t) {
  static const char* names[] = {"BoolTensor", "ByteTensor", "CharTensor",     "ShortTensor", "IntTensor",
                                "LongTensor", "HalfTensor", "BFloat16Tensor", "FloatTensor", "DoubleTensor"};
  return std::string(t.is_cuda() ? "cuda." : "") + names[int(t.dtype())];
}

}  // namespace

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

// The first node destroyed on a thread runs the loop; the destructors it sets off (and any
// other node destroyed meanwhile on this thread) hand their edges to it instead of dropping
// them, so the depth stays constant whatever the length of the graph. Members of a subclass
// (saved tensors, captures) are destroyed before this body runs, while next_edges_ still holds
// the nodes they lead to, so they only lower counts. Only edges holding the last reference are
// handed over (the others are dropped where they are, destroying nothing); if the list cannot
// grow, the edge is dropped in place (the recursion this avoids, for that one edge).
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>>* pending = nullptr;
  auto hand_over = [](std::vector<Edge>& edges, std::vector<std::shared_ptr<Node>>& to) {
    for (Edge& e : edges) {
      if (!e.function || e.function.use_count() > 1) continue;
      try {
        to.push_back(std::move(e.function));
      } catch (...) {
        e.function.reset();
      }
    }
  };
  if (pending) {
    hand_over(next_edges_, *pending);
    return;
  }
  bool any = false;
  for (const Edge& e : next_edges_) any = any || (e.function && e.function.use_count() == 1);
  if (!any) return;  // nothing would be destroyed: no loop needed
  std::vector<std::shared_ptr<Node>> local;
  hand_over(next_edges_, local);
  pending = &local;
  while (!local.empty()) {
    std::shared_ptr<Node> n = std::move(local.back());
    local.pop_back();
    n.reset();
  }
  pending = nullptr;
}

AutogradMeta& meta_or_create(const Tensor& t) {
  if (auto* m = meta(t)) return *m;
  auto m = std::make_unique<AutogradMeta>();
  AutogradMeta* p = m.get();
  t.impl()->set_autograd_meta(std::move(m));
  return *p;
}

namespace {
// Leaves that name a destination (an upper bound: a leaf freed with one still counts). While it
// is 0, as in every program without DistributedDataParallel, a backward formula's lookup costs
// one load.
std::atomic<int64_t> g_grad_destinations{0};
}  // namespace

void set_grad_destination(const Tensor& leaf, const Tensor& dst) {
  AutogradMeta& m = meta_or_create(leaf);
  if (m.grad_destination.defined() != dst.defined()) g_grad_destinations.fetch_add(dst.defined() ? 1 : -1);
  m.grad_destination = dst;
  m.grad_destination_taken = false;
}

Tensor take_grad_destination(const Node& node, size_t i) {
  if (g_grad_destinations.load(std::memory_order_relaxed) == 0 || i >= node.num_inputs() ||
      !running_backward_into_leaves())
    return {};
  const Node* f = node.next_edge(i).function.get();
  bool transposed = false;
  if (f && f->num_inputs() == 1 && f->name() == "TBackward0") {
    f = f->next_edge(0).function.get();
    transposed = true;
  }
  const auto* acc = dynamic_cast<const AccumulateGrad*>(f);
  if (!acc) return {};
  AutogradMeta* m = meta(acc->variable());
  if (!m || m->grad.defined() || !m->grad_destination.defined() || m->grad_destination_taken) return {};
  const Tensor& d = m->grad_destination;
  if (!d.is_contiguous() || !d.sizes().equals(acc->variable().sizes()) || d.dtype() != acc->variable().dtype() ||
      d.device() != acc->variable().device())
    return {};
  m->grad_destination_taken = true;
  return transposed ? d.t() : d;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& m = meta_or_create(leaf);
  if (auto acc = m.grad_accumulator.lock()) return acc;
  // The node holds the leaf through an alias-free handle to the same TensorImpl.
  auto acc = std::make_shared<AccumulateGrad>(leaf);
  acc->device_ = leaf.device();
  acc->input_metadata_.push_back({DimVector(leaf.sizes()), leaf.dtype(), leaf.device()});
  if (leaf.is_cuda()) acc->stream_ = cuda::current_stream(leaf.device().index());
  if (m.leaf_hooks) acc->tensor_pre_hooks_.emplace_back(0, m.leaf_hooks);
  m.grad_accumulator = acc;
  return acc;
}

TensorGradHooks* grad_hooks(const Tensor& t, bool create) {
  AutogradMeta& m = meta_or_create(t);
  if (m.grad_fn) {
    for (auto& [nr, hooks] : m.grad_fn->tensor_pre_hooks_)
      if (nr == m.output_nr) return hooks.get();
    if (!create) return nullptr;
    return m.grad_fn->tensor_pre_hooks_.emplace_back(m.output_nr, std::make_shared<TensorGradHooks>()).second.get();
  }
  if (!m.leaf_hooks) {
    if (!create) return nullptr;
    m.leaf_hooks = std::make_shared<TensorGradHooks>();
    if (auto acc = m.grad_accumulator.lock()) acc->tensor_pre_hooks_.emplace_back(0, m.leaf_hooks);
  }
  return m.leaf_hooks.get();
}

void HookHandle::remove() {
  if (auto r = std::exchange(remover_, nullptr)) r();
}

HookHandle register_post_accumulate_grad_hook(const Tensor& leaf,
                                              std::function<void(const Tensor& leaf)> hook) {
  constexpr const char* op = "register_post_accumulate_grad_hook";
  WICK_CHECK(leaf.defined(), ValueError, op, "the tensor is undefined");
  WICK_CHECK(hook != nullptr, ValueError, op, "the hook is empty");
  WICK_CHECK(leaf.requires_grad(), ValueError, op,
             "cannot register a hook on a tensor that doesn't require gradient");
  WICK_CHECK(leaf.is_leaf(), ValueError, op,
             "post accumulate grad hooks cannot be registered on non-leaf tensors");
  AutogradMeta& m = meta_or_create(leaf);
  if (!m.post_accumulate_hooks) m.post_accumulate_hooks = std::make_shared<PostAccumulateGradHooks>();
  auto& list = *m.post_accumulate_hooks;
  const uint64_t id = list.next_id++;
  list.hooks.emplace_back(id, std::move(hook));
  std::weak_ptr<PostAccumulateGradHooks> weak = m.post_accumulate_hooks;
  return HookHandle([weak, id] {
    if (auto l = weak.lock()) std::erase_if(l->hooks, [id](const auto& h) { return h.first == id; });
  });
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  if (auto* m = meta(t); m && m->grad_fn) return {m->grad_fn, m->output_nr};
  if (t.requires_grad()) return {grad_accumulator(t), 0};
  return {};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& m = meta_or_create(t);
  if (m.retained) {  // an in-place op gives t a new node: its retained grad moves along
    if (m.grad_fn) std::erase_if(m.grad_fn->retained_, [&](const auto& r) { return r.second == m.retained; });
    fn->retained_.emplace_back(output_nr, m.retained);
  }
  m.grad_fn = fn;
  m.output_nr = output_nr;
  m.grad_accumulator.reset();
  t.impl()->set_requires_grad(true);
}

Tensor alias_without_grad(const Tensor& t) {
  return wick::detail::make_view(t, t.sizes(), t.strides(), t.storage_offset());
}

// ---- saved tensors

SavedVariable::SavedVariable(const Tensor& t, bool is_output, uint32_t output_nr)
    : is_output_(is_output), output_nr_(output_nr) {
  if (!t.defined()) return;
  // an input as it is (no allocation); an output without its meta (no cycle through grad_fn)
  data_ = is_output ? alias_without_grad(t) : t;
  version_ = t._version();
  if (!is_output) {
    if (auto* m = meta(t); m && m->grad_fn) {
      producer_ = m->grad_fn;
      output_nr_ = m->output_nr;
    }
  }
}

bool SavedVariable::holds(const Tensor& t) const { return !released_ && same_view(data_, t); }

Tensor SavedVariable::unpack(const Node& saver) const {
  if (released_) [[unlikely]]
    wick::detail::raise<ValueError>(
        "backward",
        "Trying to backward through the graph a second time (or directly access saved tensors after they "
        "have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=true if you need to backward through the graph a second time "
        "or "
        "if you need to access saved tensors after calling backward.");
  if (!data_.defined()) return data_;
  const uint32_t now = data_._version();
  if (now != version_) [[unlikely]] {
    std::ostringstream os;
    os << "one of the variables needed for gradient computation has been modified by an inplace operation: ["
       << type_name(data_) << " " << data_.sizes() << "]";
    if (is_output_) os << ", which is output 0 of " << saver.name() << ",";
    else if (auto p = producer_.lock())
      os << ", which is output " << output_nr_ << " of " << p->name() << ",";
    os << " is at version " << now << "; expected version " << version_ << " instead.";
    wick::detail::raise<ValueError>("backward", os.str());
  }
  if (is_output_ && GradMode::is_enabled()) [[unlikely]] {
    // a formula recording its own graph (create_graph): the output as the saver made it
    Tensor out = alias_without_grad(data_);
    set_history(out, std::const_pointer_cast<Node>(saver.shared_from_this()), output_nr_);
    return out;
  }
  return data_;
}

// ---- wiring new nodes

namespace detail {

namespace {
template <class Range>
void init_node_impl(Node& node, const Range& inputs) {
  node.next_edges_.reserve(inputs.size());
  node.input_metadata_.reserve(inputs.size());
  bool have_device = false;
  for (const Tensor& t : inputs) {
    node.next_edges_.push_back(gradient_edge(t));
    if (t.defined()) {
      node.input_metadata_.push_back({DimVector(t.sizes()), t.dtype(), t.device()});
      if (!have_device) {
        node.device_ = t.device();
        have_device = true;
      }
    } else {
      node.input_metadata_.push_back({});
    }
  }
  if (node.device_.is_cuda()) node.stream_ = cuda::current_stream(node.device_.index());
}
}  // namespace

void init_node(Node& node, std::initializer_list<Tensor> inputs) { init_node_impl(node, inputs); }
void init_node(Node& node, const std::vector<Tensor>& inputs) { init_node_impl(node, inputs); }

bool any_recordable(std::initializer_list<Tensor> outputs, std::initializer_list<Tensor> inputs) {
  for (const Tensor& o : outputs) {
    if (!o.defined() || !o.is_floating_point()) return false;
    for (const Tensor& i : inputs)
      if (i.defined() && i.is_same(o)) return false;
  }
  return true;
}

}  // namespace detail

// Whether a node's name is that of a view op with one node for several output views (split,
// unbind): PyTorch refuses an in-place write to any of those views.
static bool is_multi_view_name(const std::string& name) {
  return name == "SplitBackward0" || name == "SplitWithSizesBackward0" || name == "UnbindBackward0";
}

// Whether a node is the backward of a view op (its output shares its input's storage).
bool is_view_node(const Node& n) {
  static const char* const kViews[] = {
      "ViewBackward0",      "SliceBackward0", "SelectBackward0",  "ExpandBackward0",  "PermuteBackward0",
      "TransposeBackward0", "TBackward0",     "SqueezeBackward0", "SqueezeBackward1", "UnsqueezeBackward0"};
  const std::string name = n.name();
  return is_multi_view_name(name) ||
         std::any_of(std::begin(kViews), std::end(kViews), [&](const char* v) { return name == v; });
}

// A leaf that requires grad, or a view of one (through view ops only), may not be written.
static void check_leaf_write(const Tensor& self, const char* op) {
  auto* m = meta(self);
  WICK_CHECK(m && m->grad_fn, ValueError, op,
             "a leaf Variable that requires grad is being used in an in-place operation.");
  // A piece of split or unbind: PyTorch refuses the write whatever the base is, since one node
  // stands for all the pieces and could not take the write of one.
  if (self.is_view()) {
    const std::string name = m->grad_fn->name();
    WICK_CHECK(!is_multi_view_name(name), ValueError, op, "Output ", self.output_nr(), " of ", name,
               " is a view and is being modified inplace. This view is the output of a function that returns "
               "multiple views. Such functions do not allow the output views to be modified inplace. You should "
               "replace the inplace operation by an out-of-place one.");
  }
  // A view (through view ops only) of a leaf: the write would change the leaf.
  for (const Node* n = m->grad_fn.get(); n && n->num_inputs() == 1;) {
    if (!is_view_node(*n)) break;
    n = n->next_edge(0).function.get();
    WICK_CHECK(!(n && n->name() == "AccumulateGrad"), ValueError, op,
               "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  }
}

void check_inplace_leaf(const Tensor& self, const char* op) {
  if (GradMode::is_enabled() && self.requires_grad()) check_leaf_write(self, op);
}

void check_inplace(const Tensor& self, const char* op) {
  check_inplace_leaf(self, op);
  // The written-to tensor must not repeat an element (an expanded view).
  wick::detail::check_no_internal_overlap(self, op);
}

namespace {
thread_local const InplaceTarget* innermost_target = nullptr;
}  // namespace

InplaceTarget::InplaceTarget(const Tensor& self) : self_(self), prev_(innermost_target) {
  innermost_target = this;
}
InplaceTarget::~InplaceTarget() { innermost_target = prev_; }

bool InplaceTarget::overlaps_any(const Tensor& t) {
  for (const InplaceTarget* s = innermost_target; s; s = s->prev_)
    if (same_storage(t, s->self_)) return true;
  return false;
}

namespace detail {
Tensor to_save(const Tensor& s) {
  if (innermost_target == nullptr || !InplaceTarget::overlaps_any(s)) [[likely]]
    return s;
  NoGradGuard no_grad;
  return s.clone();
}
}  // namespace detail

Tensor& adopt_result(Tensor& self, const Tensor& result, const char* op) {
  WICK_CHECK(result.sizes().equals(self.sizes()), ValueError, op, "output with shape ", self.sizes(),
             " doesn't match the broadcast shape ", result.sizes());
  {
    NoGradGuard no_grad;
    self.copy_(result);  // bumps self's version
  }
  auto fn = result.grad_fn();
  if (!fn || result.is_same(self)) return self;  // an op that returned self unrecorded
  set_history(self, fn, uint32_t(result.output_nr()));
  // What the node saved of its result now lives in self: save self (at its new version).
  if (auto* node = dynamic_cast<SavingNode*>(fn.get()); node && result.dtype() == self.dtype())
    for (SavedVariable& s : node->saved_)
      if (s.holds(result)) s = SavedVariable(self, /*is_output=*/true, uint32_t(result.output_nr()));
  return self;
}

Tensor& adopt_view(Tensor& self, const Tensor& view) {
  self.impl()->set_geometry(DimVector(view.sizes()), DimVector(view.strides()), view.storage_offset());
  // A node that saved self saved its old shape: its backward now fails as PyTorch's does.
  self.impl()->storage()->bump_version();
  if (auto fn = view.grad_fn()) set_history(self, fn, uint32_t(view.output_nr()));
  return self;
}

void check_no_double_backward(const BackwardContext& c) {
  if (creating_graph()) [[unlikely]]
    wick::detail::raise<NotImplementedError>("backward", "double backward is not implemented for ",
                                             c.node().name(), " (call backward without create_graph)");
}

Tensor sum_to(const Tensor& g, IntArrayRef sizes) {
  if (g.sizes().equals(sizes)) return g;
  const int64_t lead = g.dim() - int64_t(sizes.size());
  DimVector dims;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (sizes[size_t(d - lead)] == 1 && g.size(d) != 1)) dims.push_back(d);
  Tensor r = dims.empty() ? g : wick::sum(g, dims, /*keepdim=*/true);
  return r.view(sizes);
}

}  // namespace wick::autograd

// ---- Tensor's autograd methods

namespace wick {

using autograd::meta;

Tensor& Tensor::requires_grad_(bool requires_grad) {
  detail::check_defined(*this, "requires_grad_", "self");
  auto* m = meta(*this);
  WICK_CHECK(
      !(m && m->grad_fn) || requires_grad, ValueError, "requires_grad_",
      "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
      "in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  WICK_CHECK(!requires_grad || is_floating_point(), TypeError, "requires_grad_",
             "only Tensors of floating point dtype can require gradients (got ", dtype(), ")");
  impl_->set_requires_grad(requires_grad);
  return *this;
}

const Tensor& Tensor::grad() const {
  detail::check_defined(*this, "grad", "self");
  static const Tensor undefined;
  auto* m = meta(*this);
  if (!m) return undefined;
  if (m->retained) return *m->retained;
  return m->grad;
}

Tensor& Tensor::mutable_grad() const {
  detail::check_defined(*this, "mutable_grad", "self");
  auto& m = autograd::meta_or_create(*this);
  return m.retained ? *m.retained : m.grad;
}

void Tensor::set_grad(const Tensor& grad) const {
  detail::check_defined(*this, "set_grad", "self");
  if (grad.defined()) {
    WICK_CHECK(grad.device() == device(), DeviceError, "set_grad", "assigned grad has data located on ",
               grad.device(), " but the tensor is on ", device());
    WICK_CHECK(grad.dtype() == dtype(), TypeError, "set_grad", "assigned grad has data of a different type (",
               grad.dtype(), " instead of ", dtype(), ")");
    WICK_CHECK(grad.sizes().equals(sizes()), ValueError, "set_grad",
               "assigned grad has data of a different size (", grad.sizes(), " instead of ", sizes(), ")");
  }
  mutable_grad() = grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  auto* m = meta(*this);
  return m ? m->grad_fn : nullptr;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  detail::check_defined(*this, "detach", "self");
  return autograd::alias_without_grad(*this);
}

Tensor& Tensor::detach_() {
  detail::check_defined(*this, "detach_", "self");
  // PyTorch refuses to detach a view in place, whether or not it requires grad (a composite's
  // result is no view: detail::as_op).
  if (impl_->is_view())
    wick::detail::raise<ValueError>(
        "detach_",
        "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for "
        "training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence "
        "detach_() cannot be called on these gradients. To fix this error, please refer to the "
        "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.");
  if (auto* m = meta(*this)) {
    m->grad_fn.reset();
    m->output_nr = 0;
  }
  impl_->set_requires_grad(false);
  return *this;
}

void Tensor::retain_grad() const {
  detail::check_defined(*this, "retain_grad", "self");
  WICK_CHECK(requires_grad(), ValueError, "retain_grad",
             "can't retain_grad on Tensor that has requires_grad=False");
  auto& m = autograd::meta_or_create(*this);
  if (!m.grad_fn || m.retained) return;  // leaves keep their grad anyway
  m.retained = std::make_shared<Tensor>();
  m.grad_fn->retained_.emplace_back(m.output_nr, m.retained);
}

unsigned Tensor::add_grad_hook(std::function<Tensor(const Tensor&)> hook) const {
  detail::check_defined(*this, "register_hook", "self");
  WICK_CHECK(requires_grad(), ValueError, "register_hook",
             "cannot register a hook on a tensor that doesn't require gradient");
  auto& hooks = autograd::grad_hooks(*this, true)->hooks;
  hooks.push_back(std::move(hook));
  return unsigned(hooks.size() - 1);
}

void Tensor::remove_hook(unsigned pos) const {
  detail::check_defined(*this, "remove_hook", "self");
  auto* hooks = requires_grad() ? autograd::grad_hooks(*this, false) : nullptr;
  WICK_CHECK(hooks && pos < hooks->hooks.size() && hooks->hooks[pos], ValueError, "remove_hook",
             "Invalid index, no hook at position ", pos);
  hooks->hooks[pos] = nullptr;
}

bool Tensor::retains_grad() const {
  auto* m = meta(*this);
  return m && m->retained != nullptr;
}

bool Tensor::is_leaf() const {
  auto* m = meta(*this);
  return !(m && m->grad_fn);
}

int64_t Tensor::output_nr() const {
  auto* m = meta(*this);
  return m ? m->output_nr : 0;
}

}  // namespace wick
