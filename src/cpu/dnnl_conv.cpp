// float32 convolution on the CPU through oneDNN's convolution primitives, where wick is built
// with oneDNN (WICK_CPU_BLAS=dnnl): the primitive chooses its memory formats (blocked channels
// for its JIT kernels), and the tensors are reordered into them and back, as LibTorch's mkldnn
// path does. Groups of 1 only; anything oneDNN declines returns false and the caller runs its
// own im2col + GEMM kernel (conv.cpp). Outputs are fresh tensors handed over only on
// success, so a failure part-way leaves nothing half-written.
#include "cpu/dnnl_conv.h"

#if defined(WICK_CPU_BLAS_DNNL)
#include <memory>
#include <type_traits>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "wick/ops.h"

namespace wick::detail::cpu {

namespace {

struct Declined {};  // a oneDNN call that did not succeed

void ok(dnnl_status_t s) {
  if (s != dnnl_success) throw Declined{};
}

template <class T, dnnl_status_t (*Destroy)(T)>
struct Deleter {
  void operator()(T p) const {
    if (p) Destroy(p);
  }
};
template <class T, dnnl_status_t (*Destroy)(T)>
using Handle = std::unique_ptr<std::remove_pointer_t<T>, Deleter<T, Destroy>>;
using PrimDesc = Handle<dnnl_primitive_desc_t, dnnl_primitive_desc_destroy>;
using Primitive = Handle<dnnl_primitive_t, dnnl_primitive_destroy>;
using Memory = Handle<dnnl_memory_t, dnnl_memory_destroy>;
using Stream = Handle<dnnl_stream_t, dnnl_stream_destroy>;

dnnl_engine_t engine() {
  static dnnl_engine_t e = [] {
    dnnl_engine_t made = nullptr;
    ok(dnnl_engine_create(&made, dnnl_cpu, 0));
    return made;  // lives as long as the process
  }();
  return e;
}

dnnl_stream_t stream() {  // one per thread: primitives may run from several threads at once
  thread_local Stream s = [] {
    dnnl_stream_t made = nullptr;
    ok(dnnl_stream_create(&made, engine(), dnnl_stream_default_flags));
    return Stream(made);
  }();
  return s.get();
}

Memory memory(const dnnl_memory_desc_t& md, void* data) {
  dnnl_memory_t m = nullptr;
  ok(dnnl_memory_create(&m, &md, engine(), data));
  return Memory(m);
}

void execute(dnnl_primitive_t p, std::vector<dnnl_exec_arg_t> args) {
  ok(dnnl_primitive_execute(p, stream(), int(args.size()), args.data()));
}

void reorder(dnnl_memory_t from, dnnl_memory_t to) {
  const dnnl_memory_desc_t *from_md = nullptr, *to_md = nullptr;
  ok(dnnl_memory_get_memory_desc(from, &from_md));
  ok(dnnl_memory_get_memory_desc(to, &to_md));
  dnnl_primitive_desc_t pd = nullptr;
  ok(dnnl_reorder_primitive_desc_create(&pd, from_md, engine(), to_md, engine(), nullptr));
  PrimDesc hold(pd);
  dnnl_primitive_t r = nullptr;
  ok(dnnl_primitive_create(&r, pd));
  Primitive hold_r(r);
  execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

// A tensor's memory as the primitive wants it: the tensor itself when the formats agree, else a
// buffer in the wanted format (filled from the tensor for inputs; copied back for outputs).
struct Slot {
  Memory user, inner;
  Tensor buffer;
  dnnl_memory_t get() const { return inner ? inner.get() : user.get(); }
};

Slot slot(const dnnl_memory_desc_t* want, const dnnl_memory_desc_t& plain, void* data, bool input) {
  if (!want) throw Declined{};
  Slot s;
  s.user = memory(plain, data);
  if (dnnl_memory_desc_equal(want, &plain)) return s;
  s.buffer = wick::empty({int64_t(dnnl_memory_desc_get_size(want))}, TensorOptions(kUInt8));
  s.inner = memory(*want, s.buffer.data_ptr());
  if (input) reorder(s.user.get(), s.inner.get());
  return s;
}

void finish(const Slot& out) {
  if (out.inner) reorder(out.inner.get(), out.user.get());
}

const dnnl_memory_desc_t* query(const PrimDesc& pd, dnnl_query_t what, int index = 0) {
  return dnnl_primitive_desc_query_md(pd.get(), what, index);
}

// Few input channels (the first layer of an image network) stay with wick's own kernels
// (conv.cpp) unless WICK_CPU_CONV=dnnl: there oneDNN's weight gradient cost twice the
// im2col kernel's time (Fashion-MNIST CNN's 1 -> 32 layer, batch 64, one AVX2 core: forward +
// backward 5.3 ms against 2.3), where for its 32 -> 64 layer oneDNN took 17.1 ms against 22.3.
constexpr int64_t kMinChannels = 8;

// The problem's memory descriptors and geometry: plain (nchw, oihw, x) and the formats the
// primitives may choose ("any", or plain for few channels).
struct Problem {
  dnnl_memory_desc_t x, w, b, y, x_any, w_any, y_any;
  dnnl_dims_t strides{}, dilates{}, pad_l{}, pad_r{};
};

Problem problem(const Tensor& x, const Tensor& w, const Conv2dParams& p, int64_t oh, int64_t ow) {
  Problem q;
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t o = w.size(0), kh = w.size(2), kw = w.size(3);
  const dnnl_dims_t xd = {n, c, h, wd}, wdims = {o, c, kh, kw}, bd = {o}, yd = {n, o, oh, ow};
  ok(dnnl_memory_desc_init_by_tag(&q.x, 4, xd, dnnl_f32, dnnl_nchw));
  ok(dnnl_memory_desc_init_by_tag(&q.w, 4, wdims, dnnl_f32, dnnl_oihw));
  ok(dnnl_memory_desc_init_by_tag(&q.b, 1, bd, dnnl_f32, dnnl_x));
  ok(dnnl_memory_desc_init_by_tag(&q.y, 4, yd, dnnl_f32, dnnl_nchw));
  // Few input channels (only where WICK_CPU_CONV=dnnl forces oneDNN, see kMinChannels): plain
  // formats throughout. oneDNN 2.6's blocked formats pad the channels to the block (8 or 16),
  // and its weight gradient for 1 input channel then ran at half the speed of the plain
  // formats' GEMM-based kernel (CNN's 1 -> 32 layer, one AVX2 core: 4.7 ms against 2.3), which
  // also writes y and reads dy in place, without a reorder pass over them.
  const bool plain = c < kMinChannels;
  ok(dnnl_memory_desc_init_by_tag(&q.x_any, 4, xd, dnnl_f32, plain ? dnnl_nchw : dnnl_format_tag_any));
  ok(dnnl_memory_desc_init_by_tag(&q.w_any, 4, wdims, dnnl_f32, plain ? dnnl_oihw : dnnl_format_tag_any));
  ok(dnnl_memory_desc_init_by_tag(&q.y_any, 4, yd, dnnl_f32, plain ? dnnl_nchw : dnnl_format_tag_any));
  const int64_t in[2] = {h, wd}, out[2] = {oh, ow}, k[2] = {kh, kw};
  for (int i = 0; i < 2; ++i) {
    q.strides[i] = p.stride[i];
    q.dilates[i] = p.dilation[i] - 1;  // oneDNN counts the gaps between taps
    q.pad_l[i] = p.padding[i];
    // The right padding the output size implies (the last window may end before the padding).
    q.pad_r[i] = (out[i] - 1) * p.stride[i] + (k[i] - 1) * p.dilation[i] + 1 - in[i] - p.padding[i];
    if (q.pad_r[i] < 0) throw Declined{};
  }
  return q;
}

PrimDesc forward_pd(const Problem& q, bool bias) {
  dnnl_convolution_desc_t cd;
  ok(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &q.x_any,
                                                &q.w_any, bias ? &q.b : nullptr, &q.y_any, q.strides,
                                                q.dilates, q.pad_l, q.pad_r));
  dnnl_primitive_desc_t pd = nullptr;
  ok(dnnl_primitive_desc_create(&pd, &cd, nullptr, engine(), nullptr));
  return PrimDesc(pd);
}

Primitive make(const PrimDesc& pd) {
  dnnl_primitive_t p = nullptr;
  ok(dnnl_primitive_create(&p, pd.get()));
  return Primitive(p);
}

bool takes(const Tensor& x, const Tensor& w, const Conv2dParams& p, bool forced) {
  return x.dtype() == kFloat32 && w.dtype() == kFloat32 && p.groups == 1 && x.numel() > 0 && w.numel() > 0 &&
         (forced || x.size(1) >= kMinChannels);
}

}  // namespace

bool dnnl_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p, int64_t oh,
                         int64_t ow, bool forced, Tensor& y) {
  if (!takes(x, w, p, forced) || (b.defined() && b.dtype() != kFloat32) || oh <= 0 || ow <= 0) return false;
  try {
    const Problem q = problem(x, w, p, oh, ow);
    const PrimDesc pd = forward_pd(q, b.defined());
    Tensor out = wick::empty({x.size(0), w.size(0), oh, ow}, x.options());
    const Slot sx = slot(query(pd, dnnl_query_src_md), q.x, x.data_ptr(), true);
    const Slot sw = slot(query(pd, dnnl_query_weights_md), q.w, w.data_ptr(), true);
    const Slot sy = slot(query(pd, dnnl_query_dst_md), q.y, out.data_ptr(), false);
    const Primitive conv = make(pd);
    std::vector<dnnl_exec_arg_t> args = {
        {DNNL_ARG_SRC, sx.get()}, {DNNL_ARG_WEIGHTS, sw.get()}, {DNNL_ARG_DST, sy.get()}};
    Memory mb;
    if (b.defined()) {
      mb = memory(q.b, b.data_ptr());
      args.push_back({DNNL_ARG_BIAS, mb.get()});
    }
    execute(conv.get(), args);
    finish(sy);
    ok(dnnl_stream_wait(stream()));
    y = std::move(out);
    return true;
  } catch (const Declined&) {
    return false;
  }
}

bool dnnl_conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Conv2dParams& p,
                          std::array<bool, 3> needs, bool forced, std::array<Tensor, 3>& r) {
  if (!takes(x, w, p, forced) || dy.dtype() != kFloat32 || dy.numel() == 0) return false;
  try {
    const Problem q = problem(x, w, p, dy.size(2), dy.size(3));
    const PrimDesc fwd = forward_pd(q, needs[2]);
    std::array<Tensor, 3> out;
    Slot sdy_data;  // dy as the input gradient's primitive read it
    if (needs[0]) {
      dnnl_convolution_desc_t cd;
      ok(dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &q.x_any, &q.w_any,
                                                          &q.y_any, q.strides, q.dilates, q.pad_l, q.pad_r));
      dnnl_primitive_desc_t made = nullptr;
      ok(dnnl_primitive_desc_create(&made, &cd, nullptr, engine(), fwd.get()));
      const PrimDesc pd(made);
      out[0] = wick::empty(x.sizes(), x.options());
      sdy_data = slot(query(pd, dnnl_query_diff_dst_md), q.y, dy.data_ptr(), true);
      const Slot sw = slot(query(pd, dnnl_query_weights_md), q.w, w.data_ptr(), true);
      const Slot sdx = slot(query(pd, dnnl_query_diff_src_md), q.x, out[0].data_ptr(), false);
      const Primitive prim = make(pd);
      execute(prim.get(), {{DNNL_ARG_DIFF_DST, sdy_data.get()},
                           {DNNL_ARG_WEIGHTS, sw.get()},
                           {DNNL_ARG_DIFF_SRC, sdx.get()}});
      finish(sdx);
    }
    if (needs[1] || needs[2]) {
      dnnl_convolution_desc_t cd;
      ok(dnnl_dilated_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &q.x_any, &q.w_any,
                                                             needs[2] ? &q.b : nullptr, &q.y_any, q.strides,
                                                             q.dilates, q.pad_l, q.pad_r));
      dnnl_primitive_desc_t made = nullptr;
      ok(dnnl_primitive_desc_create(&made, &cd, nullptr, engine(), fwd.get()));
      const PrimDesc pd(made);
      // The weight gradient is computed whenever the bias's is (one primitive makes both).
      Tensor dw = wick::empty(w.sizes(), w.options());
      const Slot sx = slot(query(pd, dnnl_query_src_md), q.x, x.data_ptr(), true);
      // dy in the format the input gradient's primitive had it reordered to is reordered once.
      const dnnl_memory_desc_t* want_dy = query(pd, dnnl_query_diff_dst_md);
      const dnnl_memory_desc_t* have_dy = nullptr;
      if (sdy_data.inner) ok(dnnl_memory_get_memory_desc(sdy_data.inner.get(), &have_dy));
      const bool reuse = want_dy && have_dy && dnnl_memory_desc_equal(want_dy, have_dy);
      const Slot sdy_own = reuse ? Slot{} : slot(want_dy, q.y, dy.data_ptr(), true);
      const Slot& sdy = reuse ? sdy_data : sdy_own;
      const Slot sdw = slot(query(pd, dnnl_query_diff_weights_md), q.w, dw.data_ptr(), false);
      const Primitive prim = make(pd);
      std::vector<dnnl_exec_arg_t> args = {
          {DNNL_ARG_SRC, sx.get()}, {DNNL_ARG_DIFF_DST, sdy.get()}, {DNNL_ARG_DIFF_WEIGHTS, sdw.get()}};
      Memory mdb;
      if (needs[2]) {
        out[2] = wick::empty({w.size(0)}, w.options());
        if (!dnnl_memory_desc_equal(query(pd, dnnl_query_diff_weights_md, 1), &q.b)) throw Declined{};
        mdb = memory(q.b, out[2].data_ptr());
        args.push_back({DNNL_ARG_DIFF_BIAS, mdb.get()});
      }
      execute(prim.get(), args);
      finish(sdw);
      if (needs[1]) out[1] = dw;
    }
    ok(dnnl_stream_wait(stream()));
    r = std::move(out);
    return true;
  } catch (const Declined&) {
    return false;
  }
}

bool dnnl_conv2d_built() { return true; }

}  // namespace wick::detail::cpu

#else  // without oneDNN: always the caller's own kernel

namespace wick::detail::cpu {

bool dnnl_conv2d_forward(const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&, int64_t, int64_t,
                         bool, Tensor&) {
  return false;
}
bool dnnl_conv2d_backward(const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&,
                          std::array<bool, 3>, bool, std::array<Tensor, 3>&) {
  return false;
}
bool dnnl_conv2d_built() { return false; }

}  // namespace wick::detail::cpu

#endif
