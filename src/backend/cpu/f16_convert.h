// f32 -> f16 rows, as tensor/dequant.h's F32ToF16 rounds them (to nearest,
// ties to even; subnormals kept; overflow to inf; NaN quieted with its high
// payload bits): the KV cache's f16 writes, one row per token, layer and
// head. The AVX-512 version converts 16 at a time with vcvtps2ph, whose
// rounding and NaN handling give the same bits (f16_convert_test.cc checks
// every class of input). Thread-safety: pure.
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// dst[i * stride] (2 bytes each; stride in elements, >= 1) = f16(src[i]), i < n.
void F32ToF16Strided(const float* src, uint8_t* dst, int64_t n, int64_t stride);  // active ISA
void F32ToF16StridedScalar(const float* src, uint8_t* dst, int64_t n, int64_t stride);
void F32ToF16StridedAvx512(const float* src, uint8_t* dst, int64_t n,
                           int64_t stride);  // CpuSupports(kAvx512)

}  // namespace deepinfer::cpu
