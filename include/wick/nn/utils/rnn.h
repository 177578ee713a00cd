// nn::utils::rnn: packed sequences, as torch.nn.utils.rnn (the names and header of LibTorch's
// torch::nn::utils::rnn). A PackedSequence holds a batch of sequences of different lengths
// time step after time step, the longest first; the recurrent layers (wick/nn/rnn.h) run over
// it without computing the padding.
//
//   namespace R = wick::nn::utils::rnn;
//   auto packed = R::pack_padded_sequence(x, lengths, /*batch_first=*/true, /*enforce_sorted=*/false);
//   auto [out, h] = gru(packed);                           // out: a PackedSequence
//   auto [padded, out_lengths] = R::pad_packed_sequence(out, /*batch_first=*/true);
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "wick/tensor.h"

namespace wick::nn::utils::rnn {

class PackedSequence {
 public:
  PackedSequence() = default;
  // data [sum of the lengths, *], the rows of time step 0 then 1 ...; batch_sizes int64 on the
  // CPU, how many sequences are still running at each step (non-increasing); sorted_indices:
  // the batch position of each sorted sequence (undefined: already sorted), unsorted_indices its
  // inverse (computed from sorted_indices when undefined).
  explicit PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {}, Tensor unsorted_indices = {});

  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }
  bool is_cuda() const { return data_.is_cuda(); }
  bool is_pinned() const { return data_.is_pinned(); }
  // data and the indices moved to device (batch_sizes stays on the CPU).
  PackedSequence to(Device device) const;

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

// Packs input [T, B, *] ([B, T, *] with batch_first), padded sequences of the given lengths
// (an integer tensor on any device, or a list). enforce_sorted: the lengths must be in
// decreasing order; otherwise the batch is sorted here and the order kept in sorted_indices.
PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths,
                                    bool batch_first = false, bool enforce_sorted = true);
// The inverse of pack_padded_sequence: {padded [T, B, *] (or [B, T, *]), lengths (int64, CPU)}
// in the original batch order; T is the longest length or total_length, padding_value fills.
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);
// Stacks sequences [L_i, *] into [max L, B, *] (or [B, max L, *]), each padded at its end
// (padding_side "right") or start ("left") with padding_value.
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false, double padding_value = 0.0,
                    const std::string& padding_side = "right");
// Packs sequences [L_i, *] (pad_sequence then pack_padded_sequence).
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

}  // namespace wick::nn::utils::rnn
