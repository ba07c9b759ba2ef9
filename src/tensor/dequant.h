// Scalar conversions between DType rows and f32. These are the reference
// implementations every fast kernel is tested against.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace deepinfer {

float F16ToF32(uint16_t h);
uint16_t F32ToF16(float f);  // round to nearest even
float BF16ToF32(uint16_t h);
uint16_t F32ToBF16(float f);  // round to nearest even

// dst[0..n) = dequantized src row. n must be a multiple of BlockElems(t).
void DequantizeRow(DType t, const void* src, float* dst, int64_t n);

// Quantizes a row of f32 into `t` (F32, F16, BF16, Q8_0, Q4_0 supported, as
// GGML rounds them). Returns false for a type without a quantizer.
bool QuantizeRow(DType t, const float* src, void* dst, int64_t n);

}  // namespace deepinfer
