// Activations quantized to int8 on the fly, for the integer dot products of
// the quantized weight types (Q8_0, Q4_0, Q4_K).
//
// Each token's row of K floats is cut into blocks of 32; block b gets a scale
// d = max|x| / 127 (kept in f32) and q[i] = round-half-away(x[i] / d) in
// [-127, 127], plus sum(q) (for the weight formats with an offset or a
// minimum). The quantization of a token depends only on that token's values:
// never on the batch, the thread split or the ISA. Blocks are stored in pairs
// (64 int8 = one zmm); an odd last block is paired with an all-zero block.
//
// Layout (token t, pair p):
//   q       int8  [n_tokens][pairs * 64]
//   d       f32   [n_tokens][pairs * 2]
//   sum     int32 [n_tokens][pairs * 2]
//   lanes_* [n_tokens][pairs * 16]: per-pair vectors some SIMD kernels load
//           directly (filled by that kernel set's Prepare, otherwise unused).
#pragma once

#include <cstdint>

#include "backend/cpu/aligned_buffer.h"

namespace deepinfer::cpu {

inline constexpr int64_t kActivationBlock = 32;

struct Int8Activations {
  int64_t k = 0, n_tokens = 0, blocks = 0, pairs = 0;
  AlignedBuffer<int8_t> q;
  AlignedBuffer<float> d;
  AlignedBuffer<int32_t> sum;
  AlignedBuffer<float> lanes_d;      // lanes 0-7: d[2p], lanes 8-15: d[2p+1]
  AlignedBuffer<int32_t> lanes_bias;  // lane 0 / 8: -offset * sum of the block, other lanes 0
  AlignedBuffer<float> lanes_dsum;   // lane 0 / 8: d * sum of the block, other lanes 0

  const int8_t* TokenQ(int64_t t) const { return q.data() + t * pairs * 64; }
  const float* TokenD(int64_t t) const { return d.data() + t * pairs * 2; }
  const int32_t* TokenSum(int64_t t) const { return sum.data() + t * pairs * 2; }
};

// Sizes `out` for n_tokens rows of k values (k a multiple of 32, checked);
// with_lanes also sizes the lanes_* arrays. Contents are unspecified until
// each token is quantized.
void ResizeActivations(int64_t k, int64_t n_tokens, bool with_lanes, Int8Activations* out);

// Quantizes token t's row x_t (f32 [k]) into `out` (sized by ResizeActivations).
// Different tokens may be quantized concurrently.
void QuantizeToken(const float* x_t, int64_t t, Int8Activations* out);

}  // namespace deepinfer::cpu
