#include "model/weight_binder.h"

#include "tensor/dequant.h"

namespace deepinfer {

StatusOr<TensorView> WeightBinder::Tensor(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView* t = store_.Find(name);
  if (t == nullptr) {
    return NotFound(store_.source() + ": tensor '" + name + "' is missing");
  }
  // A tensor that contradicts the checkpoint's own config: a damaged or
  // inconsistent file, not a caller error.
  if (t->shape != shape) {
    return DataLoss(store_.source() + ": tensor '" + name + "' has shape " + ShapeString(t->shape) +
                    ", expected " + ShapeString(shape));
  }
  const bool numeric =
      t->dtype != DType::kI32 && t->dtype != DType::kI64 && t->dtype != DType::kI8 && t->dtype != DType::kU8;
  const int64_t row_bytes = numeric ? RowBytes(t->dtype, t->cols()) : -1;
  if (row_bytes <= 0) {
    return DataLoss(store_.source() + ": tensor '" + name + "' has dtype " + DTypeName(t->dtype) +
                    ", which cannot hold these weights");
  }
  if (t->data == nullptr || t->nbytes < row_bytes * t->rows()) {
    return DataLoss(store_.source() + ": tensor '" + name + "' holds " + std::to_string(t->nbytes) +
                    " bytes, expected " + std::to_string(row_bytes * t->rows()));
  }
  return *t;
}

StatusOr<std::vector<float>> WeightBinder::Vector(const std::string& name, int64_t n, bool required) const {
  if (store_.Find(name) == nullptr && !required) {
    return std::vector<float>();
  }
  DI_ASSIGN_OR_RETURN(TensorView t, Tensor(name, {n}));
  std::vector<float> out(static_cast<size_t>(n));
  DequantizeRow(t.dtype, t.data, out.data(), n);
  return out;
}

TensorView SliceOuter(const TensorView& t, int64_t index) {
  TensorView s = t;
  s.shape.assign(t.shape.begin() + 1, t.shape.end());
  int64_t elems = 1;
  for (int64_t d : s.shape) elems *= d;
  const int64_t bytes = RowBytes(t.dtype, s.cols()) * (elems / s.cols());
  s.data = static_cast<const uint8_t*>(t.data) + index * bytes;
  s.nbytes = bytes;
  s.name = t.name + "[" + std::to_string(index) + "]";
  return s;
}

}  // namespace deepinfer
