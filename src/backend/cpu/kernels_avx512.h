// Parts of the AVX-512 kernel set (Avx512Kernels, kernels.h) that live in
// their own *_avx512.cc files. Compiled with AVX-512 flags: call only after
// CpuSupports(Isa::kAvx512).
#pragma once

#include <cstdint>

#include "backend/cpu/activations.h"
#include "backend/cpu/kernels.h"

namespace deepinfer::cpu {

// QuantizeToken with AVX-512: the same bytes (q, d, sum) as the scalar one,
// bit for bit, for every input including NaN, infinities and ties.
void QuantizeTokenAvx512(const float* x_t, int64_t t, Int8Activations* out);

// Fills token t's group_q / group_d / group_bias (activations.h) from its
// quantized q, d and sum; `offset` is what the weights' unsigned form adds
// (128 for Q8_0, 8 for Q4_0), removed through the bias lanes.
void PrepareGroupsAvx512(Int8Activations* xq, int32_t offset, int64_t t);

// Row-range kernels for the interleaved packed layouts (packed_weights.h).
void PackedQ8_0RowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
void PackedQ4_0RowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);

// BF16 weights (file layout) with bf16 activations args.xb: vdpbf16ps,
// register-tiled (bf16_avx512.cc).
void Bf16RowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
// BF16 weights in the packed panel layout (packed_weights.h): outer-product
// vdpbf16ps tiles (bf16_panels_avx512.cc). row_begin is a multiple of 16.
void Bf16PanelsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
// RoundTokenToBf16 (kernels.h) with vcvtneps2bf16: the same bits.
void RoundTokenToBf16Avx512(const float* x_t, int64_t k, int64_t stride, uint16_t* out);

}  // namespace deepinfer::cpu
