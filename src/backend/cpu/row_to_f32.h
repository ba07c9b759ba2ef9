// A stored row's values as f32: the latent cache rows MLA attends over.
// Thread-safety: pure.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace deepinfer::cpu {

// out[0..n) = the row's values as f32, the same bits as DequantizeRow (a
// conversion without rounding for F16 / BF16, vectorized at AVX-512; other
// types go through DequantizeRow; an f16 NaN's payload may come back
// quieted).
void RowToF32(DType dtype, const uint8_t* row, int64_t n, float* out);            // active ISA
void HalfRowToF32Avx512(DType dtype, const uint8_t* row, int64_t n, float* out);  // F16 / BF16 only

}  // namespace deepinfer::cpu
