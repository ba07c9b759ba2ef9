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

// Where the GEMV's software prefetch goes, per CPU vendor (measured on the
// project's machines; DRAM-sized matrix, 2 threads, old and new binaries
// alternated). Zen5 (2026-11-30): the next tile into L1 streamed Q8_0 /
// Q4_0 at 58-64 / 59-65 GB/s against 43-51 / 42-47 without; into L2, or
// half as far ahead, gained less. Intel Xeon with AMX (2026-12-01, 1 GB
// matrix, 27-32 GB/s read ceiling): two tiles ahead into L2 26.6 -> 28.3 /
// 24.4 -> 26.2 GB/s; the next tile into L2 27.3 / -, L3 27.2, two tiles into
// L1 26.8, every other line 23.7, none 24.5 / -.
struct GemvPrefetch {
  int tiles_ahead;  // R-row tiles
  bool into_l2;
};
const GemvPrefetch& GemvPrefetchPolicy();

// Whether a tile of T tokens prefetches the rows ahead as the GEMV does: T =
// 1, or a call of at most 4 tokens (an MoE expert's few tokens at decode),
// where each row block is passed once and the weights stream from DRAM as
// in the GEMV (a 604 MB Q4_0 matrix at 2 threads: 2- and 3-token tiles
// without it read 16 / 13 GB/s against the GEMV's 28). With more tokens the
// rows of a block are reused by several token tiles and the next block's
// rows would be fetched too early.
template <int T>
inline bool Streams(const MatMulArgs& a) {
  return T == 1 || a.n_tokens <= 4;
}

// Row-range kernels for the interleaved packed layouts (packed_weights.h).
void PackedQ8_0RowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
// Q8_0 in row panels (q8_0_panels_avx512.cc). row_begin is a multiple of 16.
void PackedQ8_0PanelsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
void PackedQ4_0RowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
void PackedQ4_KRowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);  // kquant_avx512.cc
void PackedQ6_KRowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);  // kquant_avx512.cc
void PackedQ5_KRowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);  // kquant_avx512.cc
void PackedQ3_KRowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);  // kquant_avx512.cc
void PackedQ2_KRowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);  // kquant_avx512.cc

// BF16 weights (file layout) with bf16 activations args.xb: vdpbf16ps,
// register-tiled (bf16_avx512.cc).
void Bf16RowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
// BF16 weights in the packed panel layout (packed_weights.h): outer-product
// vdpbf16ps tiles (panels_avx512.cc). row_begin is a multiple of 16.
void Bf16PanelsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
// F16 / F32 weights in their packed panel layouts with f32 activations
// args.x: outer-product fma tiles (panels_avx512.cc). row_begin is a multiple of 16.
void F16PanelsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
void F32PanelsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end);
// RoundTokenToBf16 (kernels.h) with vcvtneps2bf16: the same bits.
void RoundTokenToBf16Avx512(const float* x_t, int64_t k, int64_t stride, uint16_t* out);

}  // namespace deepinfer::cpu
