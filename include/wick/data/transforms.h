// LibTorch's data transforms, applied by Dataset::map (wick/data/datasets.h): an example at a
// time (Transform, Lambda; TensorTransform, TensorLambda and Normalize change only .data) or a
// whole batch (BatchTransform, BatchLambda; Stack, which collates a batch into one Example).
//
//   auto ds = wick::data::datasets::MNIST(root)
//                 .map(wick::data::transforms::Normalize<>(0.1307, 0.3081))  // (x - 0.1307) / 0.3081
//                 .map(wick::data::transforms::Stack<>());  // a batch: data [B, 1, 28, 28], target [B]
#pragma once

#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "wick/data/dataset.h"

namespace wick::data::transforms {

// Turns a whole batch into another.
template <class InputBatch, class OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

// Turns each example of a batch (a vector of examples) into another.
template <class Input, class Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual Output apply(Input input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> out;
    out.reserve(input_batch.size());
    for (auto& input : input_batch) out.push_back(apply(std::move(input)));
    return out;
  }
};

// A BatchTransform given as a function.
template <class Input, class Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  Output apply_batch(Input input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

// A Transform given as a function of one example.
template <class Input, class Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  Output apply(Input input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// A transform of an example's data tensor; the target (of type Target) passes through.
template <class Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  virtual Tensor operator()(Tensor input) = 0;
  Example<Tensor, Target> apply(Example<Tensor, Target> input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

// A TensorTransform given as a function of the data tensor.
template <class Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

namespace detail {
// mean and stddev as float32 [C, 1, 1] (one value, or one per channel); ValueError "[Normalize] ..."
// when they are empty or of different lengths other than 1.
std::pair<Tensor, Tensor> normalize_constants(const std::vector<double>& mean, const std::vector<double>& stddev);
// (input - mean) / stddev; ValueError "[Normalize] ..." when the channels (dim -3) do not match.
Tensor normalize(const Tensor& input, const Tensor& mean, const Tensor& stddev);
}  // namespace detail

// (data - mean) / stddev per channel (dim -3 of the data: [..., C, H, W]), as LibTorch's
// Normalize: the constants are float32 [C, 1, 1], broadcast against the data.
template <class Target = Tensor>
class Normalize : public TensorTransform<Target> {
 public:
  Normalize(double mean, double stddev) : Normalize(std::vector<double>{mean}, std::vector<double>{stddev}) {}
  Normalize(const std::vector<double>& mean, const std::vector<double>& stddev) {
    std::tie(this->mean, this->stddev) = detail::normalize_constants(mean, stddev);
  }
  Tensor operator()(Tensor input) override { return detail::normalize(input, mean, stddev); }

  Tensor mean, stddev;
};

// Collates a batch of BatchType's parts into one BatchType.
template <class BatchType, class T = std::vector<BatchType>>
using Collation = BatchTransform<T, BatchType>;

// Stacks a batch of examples into one: data and target each stacked along a new dim 0.
template <class T = Example<>>
class Stack;

template <>
class Stack<Example<>> : public Collation<Example<>> {
 public:
  Example<> apply_batch(std::vector<Example<>> examples) override {
    std::vector<Tensor> data, target;
    data.reserve(examples.size());
    target.reserve(examples.size());
    for (auto& e : examples) {
      data.push_back(std::move(e.data));
      target.push_back(std::move(e.target));
    }
    return {stack_samples(data, "Stack"), stack_samples(target, "Stack")};
  }
};

// Stacks a batch of data-only examples: data along a new dim 0.
template <>
class Stack<TensorExample> : public Collation<TensorExample> {
 public:
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& e : examples) data.push_back(std::move(e.data));
    return {stack_samples(data, "Stack")};
  }
};

}  // namespace wick::data::transforms
