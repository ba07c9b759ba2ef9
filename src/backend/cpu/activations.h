// Activations quantized to int8 on the fly, for the integer dot products of
// the quantized weight types (Q8_0, Q4_0, Q4_K).
//
// Each token's row of K floats is cut into blocks of 32; block b gets a scale
// d = max|x| / 127 (kept in f32) and q[i] = round-half-away(x[i] / d) in
// [-127, 127], plus sum(q) (for the weight formats with an offset or a
// minimum). The quantization of a token depends only on that token's values:
// never on the batch, the thread split or the ISA (a SIMD quantizer must give
// the same bytes as QuantizeToken; matmul_test checks). Blocks are stored in
// pairs (64 int8 = one zmm); an odd last block is paired with an all-zero block.
//
// Layout (token t, pair p):
//   q       int8  [n_tokens][pairs * 64]
//   d       f32   [n_tokens][pairs * 2]
//   sum     int32 [n_tokens][pairs * 2]
//   lanes_* [n_tokens][pairs * 16]: per-pair vectors some SIMD kernels load
//           directly (filled by that kernel set's Prepare, otherwise unused).
//
// Interleaved groups (read by the AVX-512 kernels of packed Q8_0 / Q4_0 / Q4_K / Q6_K,
// packed_weights.h; filled by Prepare): the blocks of a token are taken 16 at
// a time (a "full" group; the last one padded with zero blocks) or, for a
// remainder of 1..8 blocks, 8 at a time (one "half" group, last). A group of
// L lanes (16 or 8) stores 8 steps of L x 4 bytes: step s holds q[4s..4s+3]
// of each of its blocks, so one int32 lane of a vpdpbusd accumulates one
// block's whole dot product. Per token (strides padded to 64 bytes):
//   group_q    int8  [n_tokens][full * 512 + half * 256]
//   group_d    f32   [n_tokens][(full + half) * 16]: d of each lane's block (0 for padding)
//   group_bias int32 [n_tokens][(full + half) * 16]: -offset * sum of each lane's block
//              (Q6_K: -32 * the sum of the block's last 16 values)
//   group_bias_lo int32 [n_tokens][(full + half) * 16]: Q6_K only, -32 * the
//              sum of the block's first 16 values (the two 16-element
//              sub-blocks have their own scales, so their offsets are
//              removed separately)
//
// AMX tiles (read by packed_int8_amx.cc; filled by Prepare when the AMX
// kernel is enabled, amx.h): the first tile_tokens = n_tokens / 16 * 16
// tokens - plus, when n_tokens >= 16 and 9 or more are left over, one more
// tile whose slots past n_tokens are zero (q = 0, d = 0; the AMX kernel
// writes y only for t < n_tokens) - 16 at a time, block by block, so that one block of 16 tokens is
// 512 contiguous bytes (one TDPBSSD operand, 8 cache lines instead of 16
// rows K bytes apart):
//   tile_q int8 [tile_tokens / 16][blocks][16 tokens][32]: the tokens' q
//   tile_d f32  [tile_tokens / 16][blocks][16 tokens]:     their d
#pragma once

#include <cstdint>

#include "backend/cpu/aligned_buffer.h"

namespace deepinfer::cpu {

inline constexpr int64_t kActivationBlock = 32;
inline constexpr int64_t kGroupBlocks = 16;  // lanes of a full interleaved group

struct BlockGroups {
  int64_t full = 0, half = 0;  // half is 0 or 1 (then it is the last group)
};
// Why half groups: padding K = 768 (24 blocks) to 32 blocks would waste a
// third of the work; 16 + 8 wastes none. At most 7 padding blocks remain.
inline BlockGroups GroupsFor(int64_t blocks) {
  const int64_t rest = blocks % kGroupBlocks;
  return {blocks / kGroupBlocks + (rest > kGroupBlocks / 2 ? 1 : 0),
          rest > 0 && rest <= kGroupBlocks / 2 ? 1 : 0};
}

struct Int8Activations {
  int64_t k = 0, n_tokens = 0, blocks = 0, pairs = 0;
  AlignedBuffer<int8_t> q;
  AlignedBuffer<float> d;
  AlignedBuffer<int32_t> sum;
  AlignedBuffer<float> lanes_d;       // lanes 0-7: d[2p], lanes 8-15: d[2p+1]
  AlignedBuffer<int32_t> lanes_bias;  // lane 0 / 8: -offset * sum of the block, other lanes 0
  AlignedBuffer<float> lanes_dsum;    // lane 0 / 8: d * sum of the block, other lanes 0
  BlockGroups groups;
  AlignedBuffer<int8_t> group_q;
  AlignedBuffer<float> group_d;
  AlignedBuffer<int32_t> group_bias;
  AlignedBuffer<int32_t> group_bias_lo;
  int64_t tile_tokens = 0;
  AlignedBuffer<int8_t> tile_q;
  AlignedBuffer<float> tile_d;

  const int8_t* TokenQ(int64_t t) const { return q.data() + t * pairs * 64; }
  const float* TokenD(int64_t t) const { return d.data() + t * pairs * 2; }
  const int32_t* TokenSum(int64_t t) const { return sum.data() + t * pairs * 2; }
  int64_t GroupQStride() const { return groups.full * 512 + groups.half * 256; }
  int64_t GroupLaneStride() const { return (groups.full + groups.half) * kGroupBlocks; }
};

// Sizes `out` for n_tokens rows of k values (k a multiple of 32, checked);
// with_lanes also sizes the lanes_* and group_* arrays, and the tile_*
// arrays when the AMX kernel is enabled (tile_tokens is 0 otherwise). Contents are
// unspecified until each token is quantized (and prepared).
void ResizeActivations(int64_t k, int64_t n_tokens, bool with_lanes, Int8Activations* out);

// Quantizes token t's row x_t (f32 [k]) into q, d and sum of `out` (sized by
// ResizeActivations). Different tokens may be quantized concurrently. The
// scalar reference; KernelSet::quantize_token may point to a faster one.
void QuantizeToken(const float* x_t, int64_t t, Int8Activations* out);

// The per-token loop every QuantizeToken version shares: block b of x_t goes
// through quantize_block(x, q, &d, &sum), and an odd last block gets a zero
// partner (the pair layout). Templated so each ISA's file inlines its block
// function under its own compiler flags.
template <class QuantizeBlockFn>
inline void QuantizeTokenBlocks(const float* x_t, int64_t t, Int8Activations* out,
                                QuantizeBlockFn quantize_block) {
  int8_t* q = out->q.data() + t * out->pairs * 64;
  float* d = out->d.data() + t * out->pairs * 2;
  int32_t* sum = out->sum.data() + t * out->pairs * 2;
  for (int64_t b = 0; b < out->blocks; ++b) quantize_block(x_t + b * 32, q + b * 32, d + b, sum + b);
  if (out->blocks % 2 != 0) {
    for (int i = 0; i < 32; ++i) q[out->blocks * 32 + i] = 0;
    d[out->blocks] = 0.0f;
    sum[out->blocks] = 0;
  }
}

}  // namespace deepinfer::cpu
