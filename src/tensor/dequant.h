// Scalar conversions between DType rows and f32. These are the reference
// implementations every fast kernel is tested against. All functions are
// pure and thread-safe.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace deepinfer {

// IEEE binary16 <-> binary32. Exact for every f16 (subnormals, +-0, Inf;
// NaN stays NaN). F32ToF16 rounds to nearest even, overflows to Inf and
// keeps NaNs quiet.
float F16ToF32(uint16_t h);
uint16_t F32ToF16(float f);  // round to nearest even
float BF16ToF32(uint16_t h);
uint16_t F32ToBF16(float f);  // round to nearest even

// Q3_K's signed scale (the stored 6-bit value - 32) of 16-element sub-block
// j (0..15) of the 110-byte super-block at super_block.
int Q3_KScale(const uint8_t* super_block, int j);

// True for the types DequantizeRow accepts: F32, F16, BF16, Q8_0, Q4_0,
// Q2_K..Q6_K (the integer types are not weights and have no f32 meaning).
bool CanDequantize(DType t);

// dst[0..n) = dequantized src row. Preconditions (checked, abort on
// violation: they are programming errors, not bad input): CanDequantize(t),
// n a multiple of BlockElems(t); src holds RowBytes(t, n) bytes (any
// alignment). Bit-exact with GGML's scalar dequantize_row_* functions.
void DequantizeRow(DType t, const void* src, float* dst, int64_t n);

// Quantizes a row of f32 into `t` (F32, F16, BF16, Q8_0, Q4_0 supported,
// bit-exact with GGML's quantize_row_*_ref). dst receives RowBytes(t, n)
// bytes. Returns false (writing nothing) for a type without a quantizer or
// an n that is not a multiple of BlockElems(t). Non-finite inputs give
// unspecified (but defined) quantized values.
bool QuantizeRow(DType t, const float* src, void* dst, int64_t n);

}  // namespace deepinfer
