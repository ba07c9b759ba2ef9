// AVX-512 VNNI kernels for the packed K-quants (packed_weights.h), on the
// same interleaved activation groups as packed Q8_0 / Q4_0 (activations.h).
//
// Q6_K: lane b of a zmm is 32-block b of a 16-block group (two super-blocks).
// Steps 0-3 are the block's first 16-element sub-block, steps 4-7 its
// second, so two int32 sums per lane, each started from -32 * the sum of
// its 16 activations (group_bias_lo / group_bias: removes the unsigned
// offset of q), hold the sub-blocks' exact dot products of (q - 32) * x.
// Then, once per group and (row, token):
//   isum = sc_lo * sum_lo + sc_hi * sum_hi        (int32, exact: kernels.h)
//   acc += float(isum) * (d_w * d_x)              (16 lanes = 16 blocks)
// and at the end the 16 lanes are summed in one fixed tree (SumLanes4).
// The operations for one (row, token) depend only on K, never on the tile
// it lands in: batch- and thread-invariant.
//
// Tile: R = 4 rows x T = 2 tokens: 2RT int32 sums + RT f32 accumulators + R
// weight steps = 28 zmm (T = 3 would need 40 and spill).
//
// Q3_K: Q6_K's kernel with q = 0..7 (offset 4, so the sums start from -4 *
// the halves' activation sums) decoded from two 2-bit-pair vectors and one
// third-bit vector (packed_weights.h). Q2_K: the same with q = 0..3 from the
// pair vectors alone, sums from zero, and the minimums' two terms per lane
// (HalvesTile).
//

// Q4_K: lane b is 32-element sub-block b (8 lanes per super-block), its
// nibbles (0..15, no offset) dotted in 8 steps from zero; once per group and
// (row, token), with d_sc = d * sc and d_m = dmin * m widened per row:
//   acc += float(isum) * (d_sc * d_x) - d_m * (d_x * float(sum_x))
// the products of the file-layout kernel per block (kernels.h), summed per
// lane and then in the fixed tree. Tile 4 rows x 3 tokens, as for Q4_0.
//
// Q5_K: Q4_K's kernel with q = nibble | fifth bit << 4 (0..31) as the u8
// operand; the fifth bits of a group are one more vector (packed_weights.h),
// one shift and mask per step.
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/kernels_amx.h"
#include "backend/cpu/kernels_avx512.h"
#include "backend/cpu/packed_weights.h"
#include "backend/cpu/simd_avx512.h"

namespace deepinfer::cpu {
namespace {

constexpr int kSteps = 8;

// (a & c) | b: vpternlogd's truth table for inputs a = 0xf0, b = 0xcc, c = 0xaa.
constexpr int kLowOrHigh = 0xec;

// The two high bits of step s (at bits 4-5 of each byte) from its high
// byte vector h, where they sit at bits 2 * (s % 4): 16-bit shifts move
// bits across bytes, the 0x30 mask keeps only the byte's own.
template <int S, class V>
inline V HighBits(V h, V mask30) {
  constexpr int m = S % 4;
  if constexpr (sizeof(V) == 64) {
    const __m512i x = m == 0   ? _mm512_slli_epi16(h, 4)
                      : m == 1 ? _mm512_slli_epi16(h, 2)
                      : m == 2 ? h
                               : _mm512_srli_epi16(h, 2);
    return _mm512_and_si512(x, mask30);
  } else {
    const __m256i x = m == 0   ? _mm256_slli_epi16(h, 4)
                      : m == 1 ? _mm256_slli_epi16(h, 2)
                      : m == 2 ? h
                               : _mm256_srli_epi16(h, 2);
    return _mm256_and_si256(x, mask30);
  }
}

// Step S's u8 operand (q = 0..63) of a full Q6_K group (16 lanes).
template <int S>
inline __m512i Q6FullStep(const uint8_t* v) {
  const __m512i raw = _mm512_load_si512(v + (S % 4) * 64);
  const __m512i nib = S < 4 ? raw : _mm512_srli_epi16(raw, 4);
  const __m512i high = HighBits<S>(_mm512_load_si512(v + 256 + (S / 4) * 64), _mm512_set1_epi8(0x30));
  return _mm512_ternarylogic_epi32(nib, high, _mm512_set1_epi8(0x0f), kLowOrHigh);
}

// The same for a half group (8 lanes, 192 bytes).
template <int S>
inline __m256i Q6HalfStep(const uint8_t* v) {
  const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(v + (S % 4) * 32));
  const __m256i nib = S < 4 ? raw : _mm256_srli_epi16(raw, 4);
  const __m256i high = HighBits<S>(
      _mm256_load_si256(reinterpret_cast<const __m256i*>(v + 128 + (S / 4) * 32)), _mm256_set1_epi8(0x30));
  return _mm256_ternarylogic_epi32(nib, high, _mm256_set1_epi8(0x0f), kLowOrHigh);
}

// Q3_K: step S's q = 0..7 (packed_weights.h): its 2-bit pair moved from
// bits 2 (S % 4) of pair vector S / 4 to bits 0-1, its third bit from bit S
// of the third-bit vector to bit 2 (16-bit shifts; each byte's own bits
// land there, the masks clear the rest).
template <int S, class V>
inline V Q3Step(V pairs, V third) {
  constexpr int kPair = 2 * (S % 4);
  if constexpr (sizeof(V) == 64) {
    const __m512i p = kPair == 0 ? pairs : _mm512_srli_epi16(pairs, kPair);
    const __m512i t = S < 2    ? _mm512_slli_epi16(third, 2 - S)
                      : S == 2 ? third
                               : _mm512_srli_epi16(third, S - 2);
    return _mm512_ternarylogic_epi32(p, _mm512_and_si512(t, _mm512_set1_epi8(0x04)), _mm512_set1_epi8(0x03),
                                     kLowOrHigh);
  } else {
    const __m256i p = kPair == 0 ? pairs : _mm256_srli_epi16(pairs, kPair);
    const __m256i t = S < 2    ? _mm256_slli_epi16(third, 2 - S)
                      : S == 2 ? third
                               : _mm256_srli_epi16(third, S - 2);
    return _mm256_ternarylogic_epi32(p, _mm256_and_si256(t, _mm256_set1_epi8(0x04)), _mm256_set1_epi8(0x03),
                                     kLowOrHigh);
  }
}

// Q2_K: step S's q = 0..3, the 2-bit pair at bits 2 (S % 4) of pair vector S / 4.
template <int S, class V>
inline V Q2Step(V pairs) {
  constexpr int kPair = 2 * (S % 4);
  if constexpr (sizeof(V) == 64) {
    return _mm512_and_si512(kPair == 0 ? pairs : _mm512_srli_epi16(pairs, kPair), _mm512_set1_epi8(0x03));
  } else {
    return _mm256_and_si256(kPair == 0 ? pairs : _mm256_srli_epi16(pairs, kPair), _mm256_set1_epi8(0x03));
  }
}

// The step decoders of the K-quants with halves, by type.
template <DType kType, int S>
inline __m512i HalvesFullStep(const uint8_t* v) {
  if constexpr (kType == DType::kQ3_K) {
    return Q3Step<S>(_mm512_load_si512(v + (S / 4) * 64), _mm512_load_si512(v + 128));
  } else if constexpr (kType == DType::kQ2_K) {
    return Q2Step<S>(_mm512_load_si512(v + (S / 4) * 64));
  } else {
    return Q6FullStep<S>(v);
  }
}
template <DType kType, int S>
inline __m256i HalvesHalfStep(const uint8_t* v) {
  if constexpr (kType == DType::kQ3_K) {
    return Q3Step<S>(_mm256_load_si256(reinterpret_cast<const __m256i*>(v + (S / 4) * 32)),
                     _mm256_load_si256(reinterpret_cast<const __m256i*>(v + 64)));
  } else if constexpr (kType == DType::kQ2_K) {
    return Q2Step<S>(_mm256_load_si256(reinterpret_cast<const __m256i*>(v + (S / 4) * 32)));
  } else {
    return Q6HalfStep<S>(v);
  }
}

template <DType kType, int S, int R, int T>
inline void FullSteps(const uint8_t* const* wg, const int8_t* const* xg, __m512i (&lo)[R][T],
                      __m512i (&hi)[R][T]) {
  if constexpr (S < kSteps) {
    __m512i wv[R];
    for (int r = 0; r < R; ++r) {
      wv[r] = HalvesFullStep<kType, S>(wg[r]);
      // Keep the decoded step in a register for all T tokens (vpdpbusd
      // takes only the activations from memory; see interleaved_avx512.cc).
      if constexpr (T > 1) asm("" : "+v"(wv[r]));
    }
    for (int t = 0; t < T; ++t) {
      const __m512i x = _mm512_load_si512(xg[t] + S * 64);
      for (int r = 0; r < R; ++r) {
        if constexpr (S < 4) {
          lo[r][t] = _mm512_dpbusd_epi32(lo[r][t], wv[r], x);
        } else {
          hi[r][t] = _mm512_dpbusd_epi32(hi[r][t], wv[r], x);
        }
      }
    }
    FullSteps<kType, S + 1, R, T>(wg, xg, lo, hi);
  }
}

template <DType kType, int S, int R, int T>
inline void HalfSteps(const uint8_t* const* wg, const int8_t* const* xg, __m256i (&lo)[R][T],
                      __m256i (&hi)[R][T]) {
  if constexpr (S < kSteps) {
    __m256i wv[R];
    for (int r = 0; r < R; ++r) wv[r] = HalvesHalfStep<kType, S>(wg[r]);
    for (int t = 0; t < T; ++t) {
      const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(xg[t] + S * 32));
      for (int r = 0; r < R; ++r) {
        if constexpr (S < 4) {
          lo[r][t] = _mm256_dpbusd_epi32(lo[r][t], wv[r], x);
        } else {
          hi[r][t] = _mm256_dpbusd_epi32(hi[r][t], wv[r], x);
        }
      }
    }
    HalfSteps<kType, S + 1, R, T>(wg, xg, lo, hi);
  }
}

inline float F16At(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// The R x T accumulators' 16 lanes summed in one fixed tree, + bias, to y.
template <int R, int T>
inline void StoreTile(const MatMulArgs& a, int64_t r0, int64_t t0, __m512 (&acc)[R][T]) {
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

// GEMV prefetch (T == 1, interleaved_avx512.cc): the same group of the
// tile `ahead` bytes further on, straight-line code (the loop form kept a
// branch per row and group in the hot loop), and, once per tile, that
// tile's scales (they follow the row's values).
template <int R, int64_t kBytes>
inline void PrefetchGroupAhead(const uint8_t* const* wg, int64_t ahead, bool into_l2) {
  for (int r = 0; r < R; ++r) {
    const char* next = reinterpret_cast<const char*>(wg[r] + ahead);
    // Opaque: otherwise GCC gives every line its own induction variable
    // and spills them to vector registers (16 lea + 32 vmovq per group).
    asm("" : "+r"(next));
#pragma GCC unroll 8
    for (int64_t l = 0; l < kBytes; l += 64) {
      if (into_l2) {
        _mm_prefetch(next + l, _MM_HINT_T1);
      } else {
        _mm_prefetch(next + l, _MM_HINT_T0);
      }
    }
  }
}
template <int R>
inline void PrefetchScalesAhead(const uint8_t* const* w, int64_t scales_offset, int64_t row_bytes,
                                int64_t ahead) {
  for (int r = 0; r < R; ++r) {
    const char* next = reinterpret_cast<const char*>(w[r] + scales_offset + ahead);
    for (int64_t l = 0; l < row_bytes - scales_offset; l += 64) _mm_prefetch(next + l, _MM_HINT_T0);
  }
}

// Q6_K, Q3_K and Q2_K (kType): the same tile but for the step decoder and,
// for Q2_K, the minimums' two terms (kernels.h), from the halves'
// activation sums that Prepare leaves in the bias arrays (whose integer
// sums then start from zero): per (row, token)
//   acc -= (dmin * m_lo) * (d_x * sx_lo);  acc -= (dmin * m_hi) * (d_x * sx_hi)
// with the products formed once per row and group / token and group.
template <DType kType, int R, int T>
void HalvesTile(const MatMulArgs& a, int64_t r0, int64_t t0) {
  constexpr bool kMins = kType == DType::kQ2_K;
  constexpr int64_t kSuperBlockD = kMins ? 4 : 2;  // bytes: f16 d (Q2_K: and dmin)
  const GemvPrefetch prefetch = GemvPrefetchPolicy();
  constexpr int64_t kFullBytes = KQuantGroupBytes(kType);
  const Int8Activations& xq = *a.xq;
  const int64_t full = xq.groups.full;
  const int64_t scales_offset = KQuantScalesOffset(kType, xq.groups);
  const int64_t d_offset = KQuantDOffset(kType, xq.groups);
  const uint8_t* w[R];
  for (int r = 0; r < R; ++r) w[r] = a.w + (r0 + r) * a.row_bytes;
  const int8_t* xs[T];
  const float* xd[T];
  const int32_t* xb_lo[T];
  const int32_t* xb_hi[T];
  for (int t = 0; t < T; ++t) {
    xs[t] = xq.group_q.data() + (t0 + t) * xq.GroupQStride();
    xd[t] = xq.group_d.data() + (t0 + t) * xq.GroupLaneStride();
    xb_lo[t] = xq.group_bias_lo.data() + (t0 + t) * xq.GroupLaneStride();
    xb_hi[t] = xq.group_bias.data() + (t0 + t) * xq.GroupLaneStride();
  }
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i odd_halves = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i even_halves = _mm512_slli_epi32(halves, 1);
  [[maybe_unused]] const int64_t ahead = prefetch.tiles_ahead * R * a.row_bytes;
  if (Streams<T>(a)) PrefetchScalesAhead<R>(w, scales_offset, a.row_bytes, ahead);

  for (int64_t g = 0; g < full; ++g) {
    const uint8_t* wg[R];
    for (int r = 0; r < R; ++r) wg[r] = w[r] + g * kFullBytes;
    if (Streams<T>(a)) PrefetchGroupAhead<R, kFullBytes>(wg, ahead, prefetch.into_l2);
    const int8_t* xg[T];
    __m512i lo[R][T], hi[R][T];
    [[maybe_unused]] __m512 sx_lo[T], sx_hi[T];
    for (int t = 0; t < T; ++t) {
      xg[t] = xs[t] + g * 512;
      const __m512i bias_lo = _mm512_load_si512(xb_lo[t] + g * kGroupBlocks);
      const __m512i bias_hi = _mm512_load_si512(xb_hi[t] + g * kGroupBlocks);
      if constexpr (kMins) {
        sx_lo[t] = _mm512_cvtepi32_ps(bias_lo);
        sx_hi[t] = _mm512_cvtepi32_ps(bias_hi);
      }
      for (int r = 0; r < R; ++r) {
        lo[r][t] = kMins ? _mm512_setzero_si512() : bias_lo;
        hi[r][t] = kMins ? _mm512_setzero_si512() : bias_hi;
      }
    }
    FullSteps<kType, 0, R, T>(wg, xg, lo, hi);
    __m512 dx[T];
    for (int t = 0; t < T; ++t) {
      dx[t] = _mm512_load_ps(xd[t] + g * kGroupBlocks);
      if constexpr (kMins) {  // d_x * sx
        sx_lo[t] = _mm512_mul_ps(dx[t], sx_lo[t]);
        sx_hi[t] = _mm512_mul_ps(dx[t], sx_hi[t]);
      }
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* sc = w[r] + scales_offset + g * 2 * kGroupBlocks;
      __m512i sc_lo, sc_hi;
      [[maybe_unused]] __m512 m_lo, m_hi;
      if constexpr (kMins) {  // (scale | minimum << 4) bytes
        const __m512i lo_bytes = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
        const __m512i hi_bytes =
            _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16)));
        sc_lo = _mm512_and_si512(lo_bytes, _mm512_set1_epi32(0x0f));
        sc_hi = _mm512_and_si512(hi_bytes, _mm512_set1_epi32(0x0f));
        m_lo = _mm512_cvtepi32_ps(_mm512_srli_epi32(lo_bytes, 4));
        m_hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(hi_bytes, 4));
      } else {
        sc_lo = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
        sc_hi = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16)));
      }
      const uint8_t* d = w[r] + d_offset + g * 2 * kSuperBlockD;
      __m512 dw, dmw;
      if constexpr (kMins) {  // the two super-blocks' (d, dmin) in one load and one convert
        const __m128 dd = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d)));
        dw = _mm512_permutexvar_ps(even_halves, _mm512_castps128_ps512(dd));
        dmw = _mm512_permutexvar_ps(odd_halves, _mm512_castps128_ps512(dd));
      } else {
        // The group's two f16 d in one 4-byte load and one convert (two
        // scalar converts and an insert were 3 more uops per row and group).
        int32_t d_bits;
        __builtin_memcpy(&d_bits, d, 4);
        const __m128i d2 = _mm_cvtsi32_si128(d_bits);
        dw = _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(_mm_cvtph_ps(d2)));
      }
      [[maybe_unused]] __m512 dm_lo, dm_hi;
      if constexpr (kMins) {
        dm_lo = _mm512_mul_ps(dmw, m_lo);
        dm_hi = _mm512_mul_ps(dmw, m_hi);
      }
      for (int t = 0; t < T; ++t) {
        const __m512i isum =
            _mm512_add_epi32(_mm512_mullo_epi32(lo[r][t], sc_lo), _mm512_mullo_epi32(hi[r][t], sc_hi));
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, dx[t]), acc[r][t]);
        if constexpr (kMins) {
          acc[r][t] = _mm512_fnmadd_ps(dm_lo, sx_lo[t], acc[r][t]);
          acc[r][t] = _mm512_fnmadd_ps(dm_hi, sx_hi[t], acc[r][t]);
        }
      }
    }
  }
  if (xq.groups.half != 0) {  // one super-block, 8 lanes: the same per-lane operations
    const uint8_t* wg[R];
    for (int r = 0; r < R; ++r) wg[r] = w[r] + full * kFullBytes;
    const int8_t* xg[T];
    __m256i lo[R][T], hi[R][T];
    [[maybe_unused]] __m256 sx_lo[T], sx_hi[T];
    for (int t = 0; t < T; ++t) {
      xg[t] = xs[t] + full * 512;
      const __m256i bias_lo =
          _mm256_load_si256(reinterpret_cast<const __m256i*>(xb_lo[t] + full * kGroupBlocks));
      const __m256i bias_hi =
          _mm256_load_si256(reinterpret_cast<const __m256i*>(xb_hi[t] + full * kGroupBlocks));
      if constexpr (kMins) {
        sx_lo[t] = _mm256_cvtepi32_ps(bias_lo);
        sx_hi[t] = _mm256_cvtepi32_ps(bias_hi);
      }
      for (int r = 0; r < R; ++r) {
        lo[r][t] = kMins ? _mm256_setzero_si256() : bias_lo;
        hi[r][t] = kMins ? _mm256_setzero_si256() : bias_hi;
      }
    }
    HalfSteps<kType, 0, R, T>(wg, xg, lo, hi);
    for (int r = 0; r < R; ++r) {
      const uint8_t* sc = w[r] + scales_offset + full * 2 * kGroupBlocks;
      __m256i sc_lo, sc_hi;
      [[maybe_unused]] __m256 m_lo, m_hi;
      if constexpr (kMins) {  // (scale | minimum << 4) bytes
        const __m256i lo_bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
        const __m256i hi_bytes =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8)));
        sc_lo = _mm256_and_si256(lo_bytes, _mm256_set1_epi32(0x0f));
        sc_hi = _mm256_and_si256(hi_bytes, _mm256_set1_epi32(0x0f));
        m_lo = _mm256_cvtepi32_ps(_mm256_srli_epi32(lo_bytes, 4));
        m_hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(hi_bytes, 4));
      } else {
        sc_lo = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
        sc_hi = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8)));
      }
      const uint8_t* d = w[r] + d_offset + full * 2 * kSuperBlockD;
      const __m256 dw = _mm256_set1_ps(F16At(d));
      for (int t = 0; t < T; ++t) {
        const __m256i isum =
            _mm256_add_epi32(_mm256_mullo_epi32(lo[r][t], sc_lo), _mm256_mullo_epi32(hi[r][t], sc_hi));
        const __m256 dx = _mm256_load_ps(xd[t] + full * kGroupBlocks);
        const __m256 scale = _mm256_mul_ps(dw, dx);
        acc[r][t] = _mm512_mask3_fmadd_ps(_mm512_castps256_ps512(_mm256_cvtepi32_ps(isum)),
                                          _mm512_castps256_ps512(scale), acc[r][t], 0x00ff);
        if constexpr (kMins) {
          const __m256 dmw = _mm256_set1_ps(F16At(d + 2));
          const __m256 dm_lo = _mm256_mul_ps(dmw, m_lo), dm_hi = _mm256_mul_ps(dmw, m_hi);
          const __m256 dxsx_lo = _mm256_mul_ps(dx, sx_lo[t]), dxsx_hi = _mm256_mul_ps(dx, sx_hi[t]);
          acc[r][t] = _mm512_mask3_fnmadd_ps(_mm512_castps256_ps512(dm_lo), _mm512_castps256_ps512(dxsx_lo),
                                             acc[r][t], 0x00ff);
          acc[r][t] = _mm512_mask3_fnmadd_ps(_mm512_castps256_ps512(dm_hi), _mm512_castps256_ps512(dxsx_hi),
                                             acc[r][t], 0x00ff);
        }
      }
    }
  }
  StoreTile<R, T>(a, r0, t0, acc);
}

// Step s's u8 operand of a packed Q4_K group: steps s and s + 4 are the low
// and high nibbles of one load (as packed Q4_0).
template <int S>
inline __m512i Q4FullStep(const uint8_t* v) {
  const __m512i raw = _mm512_load_si512(v + (S % 4) * 64);
  const __m512i mask = _mm512_set1_epi8(0x0f);
  return S < 4 ? _mm512_and_si512(raw, mask) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask);
}
template <int S>
inline __m256i Q4HalfStep(const uint8_t* v) {
  const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(v + (S % 4) * 32));
  const __m256i mask = _mm256_set1_epi8(0x0f);
  return S < 4 ? _mm256_and_si256(raw, mask) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask);
}

// Q5_K: step S's fifth bit, bit S of each byte of the fifth-bit vector f,
// as 16 (bit 4). A 16-bit shift left by 4 - S or right by S - 4 moves bit
// S of each byte to bit 4 of the same byte, so the 0x10 mask leaves
// exactly that byte's own bit.
template <int S, class V>
inline V FifthBit(V f) {
  if constexpr (sizeof(V) == 64) {
    const __m512i x = S < 4 ? _mm512_slli_epi16(f, 4 - S) : S == 4 ? f : _mm512_srli_epi16(f, S - 4);
    return _mm512_and_si512(x, _mm512_set1_epi8(0x10));
  } else {
    const __m256i x = S < 4 ? _mm256_slli_epi16(f, 4 - S) : S == 4 ? f : _mm256_srli_epi16(f, S - 4);
    return _mm256_and_si256(x, _mm256_set1_epi8(0x10));
  }
}
template <int S>
inline __m512i Q5FullStep(const uint8_t* v) {
  const __m512i raw = _mm512_load_si512(v + (S % 4) * 64);
  const __m512i nib = S < 4 ? raw : _mm512_srli_epi16(raw, 4);
  const __m512i fifth = FifthBit<S>(_mm512_load_si512(v + 256));
  return _mm512_ternarylogic_epi32(nib, fifth, _mm512_set1_epi8(0x0f), kLowOrHigh);
}
template <int S>
inline __m256i Q5HalfStep(const uint8_t* v) {
  const __m256i raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(v + (S % 4) * 32));
  const __m256i nib = S < 4 ? raw : _mm256_srli_epi16(raw, 4);
  const __m256i fifth = FifthBit<S>(_mm256_load_si256(reinterpret_cast<const __m256i*>(v + 128)));
  return _mm256_ternarylogic_epi32(nib, fifth, _mm256_set1_epi8(0x0f), kLowOrHigh);
}

// The step decoders of the K-quants with a minimum, by type.
template <DType kType, int S>
inline __m512i MinFullStep(const uint8_t* v) {
  if constexpr (kType == DType::kQ5_K) {
    return Q5FullStep<S>(v);
  } else {
    return Q4FullStep<S>(v);
  }
}
template <DType kType, int S>
inline __m256i MinHalfStep(const uint8_t* v) {
  if constexpr (kType == DType::kQ5_K) {
    return Q5HalfStep<S>(v);
  } else {
    return Q4HalfStep<S>(v);
  }
}

template <DType kType, int S, int R, int T>
inline void MinFullSteps(const uint8_t* const* wg, const int8_t* const* xg, __m512i (&isum)[R][T]) {
  if constexpr (S < kSteps) {
    __m512i wv[R];
    for (int r = 0; r < R; ++r) {
      wv[r] = MinFullStep<kType, S>(wg[r]);
      asm("" : "+v"(wv[r]));
    }
    for (int t = 0; t < T; ++t) {
      const __m512i x = _mm512_load_si512(xg[t] + S * 64);
      for (int r = 0; r < R; ++r) isum[r][t] = _mm512_dpbusd_epi32(isum[r][t], wv[r], x);
    }
    MinFullSteps<kType, S + 1, R, T>(wg, xg, isum);
  }
}

// One token (GEMV): each decoded step is used once, so the decode is the
// cost. Each 64-byte load j (pinned in a register: otherwise GCC re-reads
// it for the second nibble as an indexed memory operand) gives step j as
// raw & 0x0f and step j + 4 as raw & 0xf0 = 16 q, no shift: chain hi sums
// 16x those products, and lo + (hi >> 4) is the same exact int32 as
// decoding q (|hi| < 2^19, and the shift of a multiple of 16 is exact).
// The two chains also hide the vpdpbusd latency.
template <int R>
inline void Q4GemvSteps(const uint8_t* const* wg, const int8_t* xg, __m512i (&lo)[R], __m512i (&hi)[R]) {
  const __m512i low_mask = _mm512_set1_epi8(0x0f), high_mask = _mm512_set1_epi8(static_cast<char>(0xf0));
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512i x_lo = _mm512_load_si512(xg + j * 64), x_hi = _mm512_load_si512(xg + (j + 4) * 64);
    for (int r = 0; r < R; ++r) {
      __m512i raw = _mm512_load_si512(wg[r] + j * 64);
      asm("" : "+v"(raw));
      lo[r] = _mm512_dpbusd_epi32(lo[r], _mm512_and_si512(raw, low_mask), x_lo);
      hi[r] = _mm512_dpbusd_epi32(hi[r], _mm512_and_si512(raw, high_mask), x_hi);
    }
  }
}

template <DType kType, int S, int R, int T>
inline void MinHalfSteps(const uint8_t* const* wg, const int8_t* const* xg, __m256i (&isum)[R][T]) {
  if constexpr (S < kSteps) {
    __m256i wv[R];
    for (int r = 0; r < R; ++r) wv[r] = MinHalfStep<kType, S>(wg[r]);
    for (int t = 0; t < T; ++t) {
      const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(xg[t] + S * 32));
      for (int r = 0; r < R; ++r) isum[r][t] = _mm256_dpbusd_epi32(isum[r][t], wv[r], x);
    }
    MinHalfSteps<kType, S + 1, R, T>(wg, xg, isum);
  }
}

// Q4_K and Q5_K (kType): the same tile but for the step decoder.
template <DType kType, int R, int T>
void MinKQuantTile(const MatMulArgs& a, int64_t r0, int64_t t0) {
  const GemvPrefetch prefetch = GemvPrefetchPolicy();
  constexpr int64_t kGroupBytes = KQuantGroupBytes(kType);
  const Int8Activations& xq = *a.xq;
  const int64_t full = xq.groups.full;
  const int64_t scales_offset = KQuantScalesOffset(kType, xq.groups),
                d_offset = KQuantDOffset(kType, xq.groups);
  const uint8_t* w[R];
  for (int r = 0; r < R; ++r) w[r] = a.w + (r0 + r) * a.row_bytes;
  const int8_t* xs[T];
  const float* xd[T];
  const int32_t* xsum[T];
  for (int t = 0; t < T; ++t) {
    xs[t] = xq.group_q.data() + (t0 + t) * xq.GroupQStride();
    xd[t] = xq.group_d.data() + (t0 + t) * xq.GroupLaneStride();
    xsum[t] = xq.group_bias.data() + (t0 + t) * xq.GroupLaneStride();  // + sum(q) (offset -1)
  }
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  const __m512i even = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i odd = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
  [[maybe_unused]] const int64_t ahead = prefetch.tiles_ahead * R * a.row_bytes;
  if (Streams<T>(a)) PrefetchScalesAhead<R>(w, scales_offset, a.row_bytes, ahead);

  for (int64_t g = 0; g < full; ++g) {
    const uint8_t* wg[R];
    for (int r = 0; r < R; ++r) wg[r] = w[r] + g * kGroupBytes;
    if (Streams<T>(a)) PrefetchGroupAhead<R, kGroupBytes>(wg, ahead, prefetch.into_l2);
    const int8_t* xg[T];
    __m512i isum[R][T];
    for (int t = 0; t < T; ++t) {
      xg[t] = xs[t] + g * 512;
      for (int r = 0; r < R; ++r) isum[r][t] = _mm512_setzero_si512();
    }
    if constexpr (T == 1 && kType == DType::kQ4_K) {
      __m512i lo[R], hi[R];
      for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm512_setzero_si512();
      Q4GemvSteps<R>(wg, xg[0], lo, hi);
      for (int r = 0; r < R; ++r) isum[r][0] = _mm512_add_epi32(lo[r], _mm512_srai_epi32(hi[r], 4));
    } else {
      MinFullSteps<kType, 0, R, T>(wg, xg, isum);
    }
    __m512 dx[T], dxsum[T];
    for (int t = 0; t < T; ++t) {
      dx[t] = _mm512_load_ps(xd[t] + g * kGroupBlocks);
      dxsum[t] = _mm512_mul_ps(dx[t], _mm512_cvtepi32_ps(_mm512_load_si512(xsum[t] + g * kGroupBlocks)));
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* sc = w[r] + scales_offset + g * 2 * kGroupBlocks;
      const __m128 dd =
          _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w[r] + d_offset + g * 8)));
      const __m512 d_sc = _mm512_mul_ps(
          _mm512_permutexvar_ps(even, _mm512_castps128_ps512(dd)),
          _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)))));
      const __m512 d_m = _mm512_mul_ps(_mm512_permutexvar_ps(odd, _mm512_castps128_ps512(dd)),
                                       _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                           _mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16)))));
      for (int t = 0; t < T; ++t) {
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][t]), _mm512_mul_ps(d_sc, dx[t]), acc[r][t]);
        acc[r][t] = _mm512_fnmadd_ps(d_m, dxsum[t], acc[r][t]);
      }
    }
  }
  if (xq.groups.half != 0) {  // one super-block, 8 lanes
    const uint8_t* wg[R];
    for (int r = 0; r < R; ++r) wg[r] = w[r] + full * kGroupBytes;
    const int8_t* xg[T];
    __m256i isum[R][T];
    for (int t = 0; t < T; ++t) {
      xg[t] = xs[t] + full * 512;
      for (int r = 0; r < R; ++r) isum[r][t] = _mm256_setzero_si256();
    }
    MinHalfSteps<kType, 0, R, T>(wg, xg, isum);
    __m256 dx[T], dxsum[T];
    for (int t = 0; t < T; ++t) {
      dx[t] = _mm256_load_ps(xd[t] + full * kGroupBlocks);
      dxsum[t] = _mm256_mul_ps(dx[t], _mm256_cvtepi32_ps(_mm256_load_si256(
                                          reinterpret_cast<const __m256i*>(xsum[t] + full * kGroupBlocks))));
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* sc = w[r] + scales_offset + full * 2 * kGroupBlocks;
      const uint8_t* dd = w[r] + d_offset + full * 8;
      const __m256 d_sc = _mm256_mul_ps(
          _mm256_set1_ps(F16At(dd)),
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)))));
      const __m256 d_m = _mm256_mul_ps(_mm256_set1_ps(F16At(dd + 2)),
                                       _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                           _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8)))));
      for (int t = 0; t < T; ++t) {
        const __m256 scale = _mm256_mul_ps(d_sc, dx[t]);
        __m512 v = _mm512_mask3_fmadd_ps(_mm512_castps256_ps512(_mm256_cvtepi32_ps(isum[r][t])),
                                         _mm512_castps256_ps512(scale), acc[r][t], 0x00ff);
        acc[r][t] =
            _mm512_mask3_fnmadd_ps(_mm512_castps256_ps512(d_m), _mm512_castps256_ps512(dxsum[t]), v, 0x00ff);
      }
    }
  }
  StoreTile<R, T>(a, r0, t0, acc);
}

template <DType kType, int R, int T>
void RowTiles(const MatMulArgs& a, int64_t b0, int64_t b1, int64_t t) {
  int64_t r = b0;
  if constexpr (HasHalves(kType)) {
    for (; r + R <= b1; r += R) HalvesTile<kType, R, T>(a, r, t);
    for (; r < b1; ++r) HalvesTile<kType, 1, T>(a, r, t);
  } else {
    for (; r + R <= b1; r += R) MinKQuantTile<kType, R, T>(a, r, t);
    for (; r < b1; ++r) MinKQuantTile<kType, 1, T>(a, r, t);
  }
}

// Loop order as for the other interleaved kernels: blocks of rows whose
// packed weights fill about 32 KB of L1, then token tiles of kT, then row
// tiles; the n < kT leftover tokens run as one n-token tile (the same
// per-(row, token) operations in every tile shape).
template <int kT, DType kType>
void PackedRows(const MatMulArgs& a, int64_t row_begin, int64_t row_end, int64_t t_begin) {
  constexpr int kR = 4;
  const int64_t row_block = std::clamp<int64_t>((32 << 10) / a.row_bytes / kR * kR, kR, 16);
  for (int64_t b0 = row_begin; b0 < row_end; b0 += row_block) {
    const int64_t b1 = std::min(row_end, b0 + row_block);
    int64_t t = t_begin;
    for (; t + kT <= a.n_tokens; t += kT) RowTiles<kType, kR, kT>(a, b0, b1, t);
    const int64_t n = a.n_tokens - t;
    if (n == 2 && kT > 2) RowTiles<kType, kR, kT == 3 ? 2 : 1>(a, b0, b1, t);
    if (n == 1) RowTiles<kType, kR, 1>(a, b0, b1, t);
  }
}

// With AMX, from 16 tokens, whole panels go to the AMX kernel
// (PackedRowsWithAmx, kernels_amx.h); the rest runs the tiles above.
template <int kT, DType kType>
void PackedRowsOrAmx(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  PackedRowsWithAmx(a, row_begin, row_end, /*min_tokens=*/16,
                    [&](int64_t r0, int64_t r1, int64_t t0) { PackedRows<kT, kType>(a, r0, r1, t0); });
}

}  // namespace

void PackedQ6_KRowsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  PackedRowsOrAmx<2, DType::kQ6_K>(a, row_begin, row_end);
}

void PackedQ2_KRowsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  PackedRowsOrAmx<2, DType::kQ2_K>(a, row_begin, row_end);
}

void PackedQ3_KRowsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  PackedRowsOrAmx<2, DType::kQ3_K>(a, row_begin, row_end);
}

void PackedQ4_KRowsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  PackedRowsOrAmx<3, DType::kQ4_K>(a, row_begin, row_end);
}

void PackedQ5_KRowsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  PackedRowsOrAmx<3, DType::kQ5_K>(a, row_begin, row_end);
}

}  // namespace deepinfer::cpu
