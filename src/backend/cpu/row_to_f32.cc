#include "backend/cpu/row_to_f32.h"

#include "backend/cpu/isa.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {

void RowToF32(DType dtype, const uint8_t* row, int64_t n, float* out) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512 && (dtype == DType::kF16 || dtype == DType::kBF16)) {
    HalfRowToF32Avx512(dtype, row, n, out);
  } else {
    DequantizeRow(dtype, row, out, n);
  }
}

}  // namespace deepinfer::cpu
