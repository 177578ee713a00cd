// PackedSequence and its functions, as torch.nn.utils.rnn. Packing and unpacking are one
// index_select each (row indices worked out on the host from the lengths), so they are
// differentiable and run on every device.
#include <algorithm>
#include <numeric>

#include "core/as_op.h"
#include "core/checks.h"
#include "core/host_upload.h"
#include "wick/nn/utils/rnn.h"
#include "wick/ops.h"

namespace wick::nn::utils::rnn {

namespace {

Tensor index_tensor(const std::vector<int64_t>& v, Device device) {
  Tensor t = wick::from_blob(const_cast<int64_t*>(v.data()), {int64_t(v.size())}, TensorOptions(kInt64)).clone();
  return wick::detail::to_device_async(t, device);
}

std::vector<int64_t> host_int64(const Tensor& t) { return t.to(kCPU).to(kInt64).contiguous().to_vector<int64_t>(); }

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  return inv;
}

// sizes with the first two dims replaced by n.
std::vector<int64_t> rows_shape(IntArrayRef sizes, int64_t n, size_t drop) {
  std::vector<int64_t> s{n};
  s.insert(s.end(), sizes.begin() + long(drop), sizes.end());
  return s;
}

PackedSequence pack(const Tensor& input, std::vector<int64_t> lengths, bool batch_first, bool enforce_sorted,
                    const char* op) {
  wick::detail::check_defined(input, op, "input");
  WICK_CHECK(input.dim() >= 2, ValueError, op, "expected input of at least 2 dimensions, got ", input.dim());
  const int64_t bdim = batch_first ? 0 : 1, B = input.size(bdim), T = input.size(1 - bdim);
  WICK_CHECK(int64_t(lengths.size()) == B, ValueError, op, "Expected `len(lengths)` to be equal to batch_size, but got ",
             lengths.size(), " (batch_size=", B, ")");
  Tensor x = input, sorted_indices, unsorted_indices;
  if (enforce_sorted) {
    for (size_t i = 1; i < lengths.size(); ++i)
      WICK_CHECK(lengths[i] <= lengths[i - 1], ValueError, op,
                 "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                 "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                 "if you do not need ONNX exportability.");
  } else {
    std::vector<int64_t> order(lengths.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[size_t(a)] > lengths[size_t(b)]; });
    std::vector<int64_t> sorted(lengths.size());
    for (size_t i = 0; i < order.size(); ++i) sorted[i] = lengths[size_t(order[i])];
    lengths = sorted;
    sorted_indices = index_tensor(order, input.device());
    unsorted_indices = index_tensor(inverse(order), input.device());
    x = x.index_select(bdim, sorted_indices);
  }
  WICK_CHECK(!lengths.empty() && lengths.back() > 0, ValueError, op,
             "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
  WICK_CHECK(lengths[0] <= T, ValueError, op, "the longest length, ", lengths[0],
             ", exceeds the input's sequence length ", T);
  if (batch_first) x = x.transpose(0, 1);
  const int64_t steps = lengths[0];
  std::vector<int64_t> batch_sizes(static_cast<size_t>(steps)), rows;
  for (int64_t t = 0; t < steps; ++t) {
    int64_t n = 0;
    while (n < B && lengths[size_t(n)] > t) ++n;
    batch_sizes[size_t(t)] = n;
    for (int64_t b = 0; b < n; ++b) rows.push_back(t * B + b);
  }
  Tensor data = x.flatten(0, 1).index_select(0, index_tensor(rows, input.device()));
  return PackedSequence(data, index_tensor(batch_sizes, Device(kCPU)), sorted_indices, unsorted_indices);
}

}  // namespace

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices)
    : data_(std::move(data)),
      batch_sizes_(std::move(batch_sizes)),
      sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  if (sorted_indices_.defined() && !unsorted_indices_.defined())
    unsorted_indices_ = index_tensor(inverse(host_int64(sorted_indices_)), sorted_indices_.device());
}

PackedSequence PackedSequence::to(Device device) const {
  auto move = [&](const Tensor& t) { return t.defined() ? t.to(device) : t; };
  return PackedSequence(move(data_), batch_sizes_, move(sorted_indices_), move(unsorted_indices_));
}

PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first, bool enforce_sorted) {
  constexpr const char* op = "pack_padded_sequence";
  return wick::detail::as_op(op, [&] {
    wick::detail::check_defined(lengths, op, "lengths");
    WICK_CHECK(lengths.dim() == 1, ValueError, op, "'lengths' argument should be a 1D CPU int64 tensor, but got ",
               lengths.dim(), "D ", lengths.dtype(), " tensor");
    return pack(input, host_int64(lengths), batch_first, enforce_sorted, op);
  });
}

PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first,
                                    bool enforce_sorted) {
  constexpr const char* op = "pack_padded_sequence";
  return wick::detail::as_op(op, [&] { return pack(input, lengths, batch_first, enforce_sorted, op); });
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length) {
  constexpr const char* op = "pad_packed_sequence";
  return wick::detail::as_op(op, [&]() -> std::tuple<Tensor, Tensor> {
    const Tensor& data = sequence.data();
    wick::detail::check_defined(data, op, "sequence.data");
    WICK_CHECK(data.dim() >= 1, ValueError, op, "expected sequence.data of at least 1 dimension");
    const std::vector<int64_t> bs = host_int64(sequence.batch_sizes());
    const int64_t T = int64_t(bs.size()), B = bs.empty() ? 0 : bs[0], N = data.size(0);
    if (total_length)
      WICK_CHECK(*total_length >= T, ValueError, op,
                 "Expected total_length to be at least the length of the longest sequence in the input, but got "
                 "total_length=",
                 *total_length, " and max sequence length being ", T);
    const int64_t steps = total_length.value_or(T);
    // rows of data, N for padding (a row appended to data)
    std::vector<int64_t> rows(size_t(steps * B), N), lengths(size_t(B), 0);
    int64_t offset = 0;
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t b = 0; b < bs[size_t(t)]; ++b) {
        rows[size_t(t * B + b)] = offset + b;
        lengths[size_t(b)] = t + 1;
      }
      offset += bs[size_t(t)];
    }
    WICK_CHECK(offset == N, ValueError, op, "the batch sizes add up to ", offset, " but sequence.data has ", N, " rows");
    Tensor pad = wick::full(rows_shape(data.sizes(), 1, 1), padding_value, data.options());
    Tensor out = wick::cat({data, pad}, 0).index_select(0, index_tensor(rows, data.device()));
    std::vector<int64_t> shape{steps, B};
    shape.insert(shape.end(), data.sizes().begin() + 1, data.sizes().end());
    out = out.view(shape);
    if (batch_first) out = out.transpose(0, 1);
    const Tensor& unsorted = sequence.unsorted_indices();
    if (unsorted.defined()) {
      out = out.index_select(batch_first ? 0 : 1, unsorted.to(data.device()));
      const std::vector<int64_t> u = host_int64(unsorted);
      std::vector<int64_t> l(u.size());
      for (size_t i = 0; i < u.size(); ++i) l[i] = lengths[size_t(u[i])];
      lengths = l;
    }
    return {out, index_tensor(lengths, Device(kCPU))};
  });
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
                    const std::string& padding_side) {
  constexpr const char* op = "pad_sequence";
  return wick::detail::as_op(op, [&] {
    WICK_CHECK(!sequences.empty(), ValueError, op, "received an empty list of sequences");
    WICK_CHECK(padding_side == "left" || padding_side == "right", ValueError, op,
               "Expected padding_side to be one of left or right, but got ", padding_side, ".");
    int64_t longest = 0;
    for (const Tensor& s : sequences) {
      wick::detail::check_defined(s, op, "sequences");
      WICK_CHECK(s.dim() >= 1, ValueError, op, "expected every sequence to have at least 1 dimension");
      longest = std::max(longest, s.size(0));
    }
    std::vector<Tensor> padded;
    for (const Tensor& s : sequences) {
      if (s.size(0) == longest) {
        padded.push_back(s);
        continue;
      }
      Tensor pad = wick::full(rows_shape(s.sizes(), longest - s.size(0), 1), padding_value, s.options());
      padded.push_back(padding_side == "right" ? wick::cat({s, pad}, 0) : wick::cat({pad, s}, 0));
    }
    return wick::stack(padded, batch_first ? 0 : 1);
  });
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  constexpr const char* op = "pack_sequence";
  return wick::detail::as_op(op, [&] {
    std::vector<int64_t> lengths;
    for (const Tensor& s : sequences) {
      wick::detail::check_defined(s, op, "sequences");
      WICK_CHECK(s.dim() >= 1, ValueError, op, "expected every sequence to have at least 1 dimension");
      lengths.push_back(s.size(0));
    }
    return pack(pad_sequence(sequences), lengths, false, enforce_sorted, op);
  });
}

}  // namespace wick::nn::utils::rnn
