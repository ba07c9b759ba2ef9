// A non-owning view of a tensor's bytes, as found in a checkpoint (usually
// mmap'ed). Shape is outermost-first, as in PyTorch: a Linear weight is
// [out_features, in_features] and each row is contiguous. (GGUF stores ne[]
// innermost-first; its reader reverses it.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace deepinfer {

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first
  const void* data = nullptr;  // not owned; valid while the file is open
  int64_t nbytes = 0;

  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t rows() const { return shape.empty() ? 1 : NumElements() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
};

// Rows [first, first + count) of a matrix view, as a [count, cols] view of
// their own (rows are contiguous: the same bytes, offset). Same name and type.
inline TensorView RowsOf(const TensorView& w, int64_t first, int64_t count) {
  const int64_t row_bytes = RowBytes(w.dtype, w.cols());
  TensorView v = w;
  v.data = static_cast<const uint8_t*>(w.data) + first * row_bytes;
  v.shape = {count, w.cols()};
  v.nbytes = count * row_bytes;
  return v;
}

}  // namespace deepinfer
