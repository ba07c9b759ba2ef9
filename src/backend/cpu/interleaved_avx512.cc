// AVX-512 kernels for the K-interleaved packed Q8_0 / Q4_0 layouts
// (packed_weights.h) and the matching per-token activation groups
// (activations.h).
//
// Why: with blocks in element order, a vpdpbusd lane holds 4 elements of a
// block, so every 64 multiply-adds need a convert, a scale product and an
// fma in f32 - float work, not VNNI, set the pace (~17% of the int8 peak).
// Interleaved, lane b of a zmm is block b of a 16-block group: 8 vpdpbusd
// (one per 4-byte step) leave each block's exact int32 dot product in its
// own lane, started from the bias -offset * sum(x_block) that removes the
// unsigned offset of the weights. Then once per group and (row, token):
//   acc += float(isum) * (d_w * d_x)        (16 lanes = 16 blocks)
// and at the end the 16 lanes are summed. The operations for one
// (row, token) depend only on K: every tile shape runs the same sequence,
// so results are independent of the batch and of the thread split.
//
// Tile: R rows x T tokens keeps R*T int32 sums and R*T f32 accumulators in
// registers (2RT + R + 2 <= 32 zmm). The 16 lanes of an accumulator are
// summed in one fixed tree (SumLanes4) whatever the tile.
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/kernels_amx.h"
#include "backend/cpu/kernels_avx512.h"
#include "backend/cpu/packed_weights.h"
#include "backend/cpu/simd_avx512.h"

namespace deepinfer::cpu {
namespace {

constexpr int kSteps = 8;  // 32 bytes of a block, 4 per vpdpbusd lane

// Step s (0..7) of a group's values, as u8 for vpdpbusd: 16 lanes (zmm) or
// 8 lanes (ymm, a half group).
struct Q8_0Steps {
  static constexpr DType kType = DType::kQ8_0;
  static __m512i Full(const uint8_t* v, int s) { return _mm512_load_si512(v + s * 64); }
  static __m256i Half(const uint8_t* v, int s) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(v + s * 32));
  }
};

struct Q4_0Steps {  // steps s and s + 4 are the low / high nibbles of one load
  static constexpr DType kType = DType::kQ4_0;
  static __m512i Full(const uint8_t* v, int s) {
    const __m512i raw = _mm512_load_si512(v + (s & 3) * 64);
    const __m512i mask = _mm512_set1_epi8(0x0f);
    return s < 4 ? _mm512_and_si512(raw, mask) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask);
  }
  static __m256i Half(const uint8_t* v, int s) {
    const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(v + (s & 3) * 32));
    const __m256i mask = _mm256_set1_epi8(0x0f);
    return s < 4 ? _mm256_and_si256(raw, mask) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask);
  }
};

GemvPrefetch ChooseGemvPrefetch() {
#if defined(__x86_64__)
  if (__builtin_cpu_is("intel")) return {2, true};
#endif
  return {1, false};
}

template <class Steps, int R, int T>
void GroupTile(const MatMulArgs& a, int64_t r0, int64_t t0) {
  [[maybe_unused]] const GemvPrefetch prefetch = GemvPrefetchPolicy();
  constexpr int64_t kFullBytes = GroupValueBytes(Steps::kType, kGroupBlocks);
  const Int8Activations& xq = *a.xq;
  const int64_t full = xq.groups.full;
  const int64_t scales_offset = InterleavedScalesOffset(Steps::kType, xq.groups);
  const uint8_t* w[R];
  const uint16_t* ws[R];  // f16 scales of the row's lanes
  for (int r = 0; r < R; ++r) {
    w[r] = a.w + (r0 + r) * a.row_bytes;
    ws[r] = reinterpret_cast<const uint16_t*>(w[r] + scales_offset);
  }
  const int8_t* xs[T];
  const float* xd[T];
  const int32_t* xb[T];
  for (int t = 0; t < T; ++t) {
    xs[t] = xq.group_q.data() + (t0 + t) * xq.GroupQStride();
    xd[t] = xq.group_d.data() + (t0 + t) * xq.GroupLaneStride();
    xb[t] = xq.group_bias.data() + (t0 + t) * xq.GroupLaneStride();
  }
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }

  for (int64_t g = 0; g < full; ++g) {
    const uint8_t* wg[R];
    for (int r = 0; r < R; ++r) wg[r] = w[r] + g * kFullBytes;
    if (Streams<T>(a)) {
      // GEMV streams the weights from DRAM once. Ask for the same group of

      // a later R-row tile (the rows that follow in memory) while this one
      // computes (GemvPrefetch: how far ahead, into which cache). Prefetches
      // never fault, so running past the matrix is harmless.
      for (int r = 0; r < R; ++r) {
        const char* next = reinterpret_cast<const char*>(wg[r] + prefetch.tiles_ahead * R * a.row_bytes);
        if (prefetch.into_l2) {
          for (int64_t l = 0; l < kFullBytes; l += 64) _mm_prefetch(next + l, _MM_HINT_T1);
        } else {
          for (int64_t l = 0; l < kFullBytes; l += 64) _mm_prefetch(next + l, _MM_HINT_T0);
        }
        if (g == 0) {
          const char* next_scales =
              reinterpret_cast<const char*>(ws[r]) + prefetch.tiles_ahead * R * a.row_bytes;
          for (int64_t l = 0; l < xq.GroupLaneStride() * 2; l += 64) {
            _mm_prefetch(next_scales + l, _MM_HINT_T0);
          }
        }
      }
    }
    // With one token a row has a single dependent chain of 8 vpdpbusd per
    // group; two chains (odd / even steps) hide the latency. Integer sums
    // are exact, so the split changes no result.
    constexpr bool kSplit = T == 1;
    __m512i isum[R][T], isum2[R][T];
    for (int t = 0; t < T; ++t) {
      const __m512i bias = _mm512_load_si512(xb[t] + g * kGroupBlocks);
      for (int r = 0; r < R; ++r) {
        isum[r][t] = bias;
        if constexpr (kSplit) isum2[r][t] = _mm512_setzero_si512();
      }
    }
#pragma GCC unroll 8
    for (int s = 0; s < kSteps; ++s) {
      __m512i wv[R];
      for (int r = 0; r < R; ++r) {
        wv[r] = Steps::Full(wg[r], s);
        // Pin the weights in a register: otherwise GCC re-reads them from
        // memory for every token of the tile (vpdpbusd can only take its
        // signed operand - the activations - from memory), which made the
        // Q8_0 tile load-bound.
        if constexpr (T > 1) asm("" : "+v"(wv[r]));
      }
      for (int t = 0; t < T; ++t) {
        const __m512i x = _mm512_load_si512(xs[t] + g * 512 + s * 64);
        for (int r = 0; r < R; ++r) {
          if (kSplit && s % 2 == 1) {
            isum2[r][t] = _mm512_dpbusd_epi32(isum2[r][t], wv[r], x);
          } else {
            isum[r][t] = _mm512_dpbusd_epi32(isum[r][t], wv[r], x);
          }
        }
      }
    }
    if constexpr (kSplit) {
      for (int r = 0; r < R; ++r) {
        for (int t = 0; t < T; ++t) isum[r][t] = _mm512_add_epi32(isum[r][t], isum2[r][t]);
      }
    }
    __m512 dx[T];
    for (int t = 0; t < T; ++t) dx[t] = _mm512_load_ps(xd[t] + g * kGroupBlocks);
    for (int r = 0; r < R; ++r) {
      const __m512 dw =
          _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(ws[r] + g * kGroupBlocks)));
      for (int t = 0; t < T; ++t) {
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][t]), _mm512_mul_ps(dw, dx[t]), acc[r][t]);
      }
    }
  }
  if (xq.groups.half != 0) {  // 8 lanes: the same per-lane operations, upper lanes untouched
    const uint8_t* wg[R];
    for (int r = 0; r < R; ++r) wg[r] = w[r] + full * kFullBytes;
    __m256i isum[R][T];
    for (int t = 0; t < T; ++t) {
      const __m256i bias = _mm256_load_si256(reinterpret_cast<const __m256i*>(xb[t] + full * kGroupBlocks));
      for (int r = 0; r < R; ++r) isum[r][t] = bias;
    }
#pragma GCC unroll 8
    for (int s = 0; s < kSteps; ++s) {
      __m256i wv[R];
      for (int r = 0; r < R; ++r) wv[r] = Steps::Half(wg[r], s);
      for (int t = 0; t < T; ++t) {
        const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs[t] + full * 512 + s * 32));
        for (int r = 0; r < R; ++r) isum[r][t] = _mm256_dpbusd_epi32(isum[r][t], wv[r], x);
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256 dw =
          _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(ws[r] + full * kGroupBlocks)));
      for (int t = 0; t < T; ++t) {
        const __m256 scale = _mm256_mul_ps(dw, _mm256_load_ps(xd[t] + full * kGroupBlocks));
        acc[r][t] = _mm512_mask3_fmadd_ps(_mm512_castps256_ps512(_mm256_cvtepi32_ps(isum[r][t])),
                                          _mm512_castps256_ps512(scale), acc[r][t], 0x00ff);
      }
    }
  }
  constexpr int kPairs = R * T;
  for (int i = 0; i < kPairs; i += 4) {
    const auto at = [&](int j) { return j < kPairs ? acc[j / T][j % T] : _mm512_setzero_ps(); };
    float sums[4];
    _mm_storeu_ps(sums, SumLanes4(at(i), at(i + 1), at(i + 2), at(i + 3)));
    for (int j = i; j < std::min(i + 4, kPairs); ++j) {
      const int64_t r = r0 + j / T, t = t0 + j % T;
      a.y[t * a.n_rows + r] = a.bias ? sums[j - i] + a.bias[r] : sums[j - i];
    }
  }
}

// Rows [b0, b1) for tokens [t, t + T): R-row tiles, then single rows.
template <class Steps, int R, int T>
void RowTiles(const MatMulArgs& a, int64_t b0, int64_t b1, int64_t t) {
  int64_t r = b0;
  for (; r + R <= b1; r += R) GroupTile<Steps, R, T>(a, r, t);
  for (; r < b1; ++r) GroupTile<Steps, 1, T>(a, r, t);
}

// The last n < T tokens: one tile of exactly n tokens.
template <class Steps, int R, int T>
void TokenTail(const MatMulArgs& a, int64_t b0, int64_t b1, int64_t t, int64_t n) {
  if constexpr (T > 0) {
    if (n == T) {
      RowTiles<Steps, R, T>(a, b0, b1, t);
    } else {
      TokenTail<Steps, R, T - 1>(a, b0, b1, t, n);
    }
  }
}

// Loop order: blocks of rows (their weights stay in L1 while the token
// tiles pass), then token tiles, then row tiles. 4 x 3 measured best on
// Zen5 (2026-11-29, loaded machine): 4 x 2, 2 x 4, 2 x 6, 4 x 4, 8 x 2,
// 8 x 3 were 5-40% slower (shapes past 32 zmm spill); with one token,
// 4 rows beat 8. Tokens [t_begin, n_tokens).
template <class Steps>
void GroupRows(const MatMulArgs& a, int64_t row_begin, int64_t row_end, int64_t t_begin) {
  constexpr int kR = 4, kT = 3;
  // Rows whose packed weights fill about 32 KB of the 48 KB L1 (16 at
  // K = 2048; 4 at K = 5632, where 16 rows spilled to L2: ~15% slower).
  const int64_t row_block = std::clamp<int64_t>((32 << 10) / a.row_bytes / kR * kR, kR, 16);
  for (int64_t b0 = row_begin; b0 < row_end; b0 += row_block) {
    const int64_t b1 = std::min(row_end, b0 + row_block);
    // One token left over (n = 3m + 1, as at 64 sequences) would be a 1-token
    // tile, at GEMV efficiency: the last four tokens run as two 2-token
    // tiles instead (same per-(row, token) arithmetic, same bits).
    const int64_t n = a.n_tokens - t_begin;
    const int64_t full_end = t_begin + (n > kT && n % kT == 1 ? n - 4 : n - n % kT);
    int64_t t = t_begin;
    for (; t < full_end; t += kT) RowTiles<Steps, kR, kT>(a, b0, b1, t);
    static_assert(kT == 3, "the 2 + 2 tail below replaces a 3 + 1 split");
    if (a.n_tokens - t == 4) {
      RowTiles<Steps, kR, 2>(a, b0, b1, t);
      RowTiles<Steps, kR, 2>(a, b0, b1, t + 2);
    } else if (t < a.n_tokens) {
      TokenTail<Steps, kR, kT - 1>(a, b0, b1, t, a.n_tokens - t);
    }
  }
}

// With AMX, from 16 tokens (Q8_0: 32), whole panels go to the AMX kernel
// (PackedRowsWithAmx, kernels_amx.h); the rest runs the tiles above.
// Q8_0 below 32 tokens: the AMX kernel's per-call panel transpose is not
// paid back by one token tile, and the tiles above ran 15-35% faster at 16-24
// tokens (docs/kernels.md, "AMX int8 GEMM"); the bits are the same either way.
template <class Steps>
void PackedRows(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  constexpr int64_t kAmxMinTokens = Steps::kType == DType::kQ8_0 ? 32 : 16;
  PackedRowsWithAmx(a, row_begin, row_end, kAmxMinTokens,
                    [&](int64_t r0, int64_t r1, int64_t t0) { GroupRows<Steps>(a, r0, r1, t0); });
}

}  // namespace

const GemvPrefetch& GemvPrefetchPolicy() {
  static const GemvPrefetch policy = ChooseGemvPrefetch();
  return policy;
}

void PrepareGroupsAvx512(Int8Activations* xq, int32_t offset, int64_t t) {
  const auto* q = reinterpret_cast<const int32_t*>(xq->TokenQ(t));  // 8 dwords per block
  const float* d = xq->TokenD(t);
  const int32_t* sum = xq->TokenSum(t);
  int8_t* gq = xq->group_q.data() + t * xq->GroupQStride();
  float* gd = xq->group_d.data() + t * xq->GroupLaneStride();
  int32_t* gb = xq->group_bias.data() + t * xq->GroupLaneStride();
  const __m512i lane_start = _mm512_mullo_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(8));
  const int64_t n_groups = xq->groups.full + xq->groups.half;
  for (int64_t g = 0; g < n_groups; ++g) {
    const int64_t b0 = g * kGroupBlocks;
    const bool half = g == xq->groups.full;
    const int64_t lanes = half ? kGroupBlocks / 2 : kGroupBlocks;
    const int64_t real = std::min(lanes, xq->blocks - b0);
    const auto mask = static_cast<__mmask16>((1u << real) - 1);  // padding lanes read nothing, become 0
    for (int s = 0; s < kSteps; ++s) {
      const __m512i v = _mm512_mask_i32gather_epi32(
          _mm512_setzero_si512(), mask, _mm512_add_epi32(lane_start, _mm512_set1_epi32(s)), q + b0 * 8, 4);
      int8_t* dst = gq + g * 512 + s * lanes * 4;
      if (half) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(dst), _mm512_castsi512_si256(v));
      } else {
        _mm512_store_si512(dst, v);
      }
    }
    _mm512_store_ps(gd + b0, _mm512_maskz_loadu_ps(mask, d + b0));
    _mm512_store_si512(
        gb + b0, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(mask, sum + b0), _mm512_set1_epi32(-offset)));
  }
}

void PackedQ8_0RowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end) {
  PackedRows<Q8_0Steps>(args, row_begin, row_end);
}

void PackedQ4_0RowsAvx512(const MatMulArgs& args, int64_t row_begin, int64_t row_end) {
  PackedRows<Q4_0Steps>(args, row_begin, row_end);
}

}  // namespace deepinfer::cpu
