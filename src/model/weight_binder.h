// Looking up checkpoint tensors by name with shape and size checks, for every
// architecture. Matrices stay views into the file; small vectors are
// dequantized to f32 once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/weights.h"

namespace deepinfer {

class WeightBinder {
 public:
  explicit WeightBinder(const WeightStore& store) : store_(store) {}

  const WeightStore& store() const { return store_; }
  WeightNaming naming() const { return store_.naming(); }
  const TensorView* Find(const std::string& name) const { return store_.Find(name); }

  // A tensor of exactly `shape` whose bytes hold it in a numeric dtype.
  // NotFound when missing; DataLoss when the shape, dtype or size disagree.
  StatusOr<TensorView> Tensor(const std::string& name, const std::vector<int64_t>& shape) const;
  StatusOr<TensorView> Matrix(const std::string& name, int64_t rows, int64_t cols) const {
    return Tensor(name, {rows, cols});
  }
  // A 1-D tensor of n elements as f32; empty when absent and !required.
  StatusOr<std::vector<float>> Vector(const std::string& name, int64_t n, bool required) const;

 private:
  const WeightStore& store_;
};

// Row `index` of a [N, ...] tensor as a view of shape `rest` (e.g. expert e of
// a GGUF stacked-experts tensor [n_expert, rows, cols]).
TensorView SliceOuter(const TensorView& t, int64_t index);

}  // namespace deepinfer
