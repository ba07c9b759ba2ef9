// Dim-major K on AVX-512 (include only from *_avx512.cc files): the key
// groups of a tile as the scores read them, and the scores of a block of
// queries against them (attention_dim_major_avx512.cc); shared by the tile
// loop (attention_avx512.cc) and the head_dim-8 path
// (attention_dim8_avx512.cc). PagedKvView (attention_kernel.h) describes
// the layout: element d of the key in slot s at k + block * block_stride +
// s * slot_stride + d * k_dim_stride, 16 keys of a block side by side per
// dimension.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/attention_kernel.h"
#include "tensor/dtype.h"

namespace deepinfer::cpu {

// 16 keys of a dim-major K tile, one dimension per load: lane u < split is
// the element at base + u * sizeof(T) (+ d * dim_stride), lane u >= split at
// next + (u - split) * sizeof(T): a group that starts inside a block ends in
// the next one. Only the first from_next lanes of `next` are read (the keys
// the tile has there; 0: lanes >= split are zero); split 16: next unused
// (it is base then, never null: the loads offset it).
struct KeyGroup {
  const uint8_t* base;
  const uint8_t* next;
  int64_t dim_stride;
  int split;
  int from_next;
};

// The 16-key groups of a dim-major K tile (1 or 2) as the scores read them:
// in the cache's dtype, or gathered as f32; split: a group spans two blocks.
struct DimMajorKeys {
  DType dtype;
  bool split;
  KeyGroup groups[2];
  int64_t n_groups;
};

// Scaled scores of the n queries q[b] (head_dim hd) against the tile's
// keys: sc[b][16 g + u] = scale * q_b . k_u, one fma chain per (query, 16
// keys) over the dimensions in order, so a query's bits do not depend on the
// queries beside it. sc[b] is 64-byte aligned with room for 16 * n_groups.
void ScoreQueriesDimMajor(const DimMajorKeys& keys, const float* const* q, int64_t n, int64_t hd,
                          __m512 scale, float* const* sc);

// Queries handed to ScoreQueriesDimMajor at once (it blocks them 8 / 4 / 2 / 1).
inline constexpr int64_t kQueriesPerDimMajorRun = 8;

// The key groups of the dim-major K tile [t0, t0 + n) (n <= 32): read in
// place where a group's keys are consecutive slots of one block, or of one
// block and the next (a tile that starts inside a block: a sliding window's
// first keys; `split`), else gathered (keys past n as 0) into `scratch` as
// f32 [group][hd][16] (blocks of fewer than 16 slots; 2 * hd * 16 floats).
DimMajorKeys DimMajorKeysOf(const PagedKvView& kv, int64_t t0, int64_t n, int64_t hd, float* scratch);

// AttendKeysForTokens at head_dim 8 over a dim-major K (attention_dim8_avx512.cc).
void AttendKeysForTokensHeadDim8Avx512(const AttentionQuery& q, const AttentionTokens& tokens,
                                       const PagedKvView& kv, int64_t begin);

}  // namespace deepinfer::cpu
