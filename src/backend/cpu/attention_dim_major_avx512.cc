// Dim-major K scores on AVX-512 (attention_dim_major_avx512.h).
#include "backend/cpu/attention_dim_major_avx512.h"

#include <algorithm>
#include <type_traits>

#include "backend/cpu/simd_avx512.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// Dimension d of the group's 16 keys as f32; kSplit: the group spans two
// blocks (two masked loads, the second one's lanes moved up by `split`).
template <DType T, bool kSplit>
inline __m512 LoadKeys16(const KeyGroup& g, int64_t d) {
  const uint8_t* p = g.base + d * g.dim_stride;
  if constexpr (T == DType::kF32) {
    if constexpr (!kSplit) {
      return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
    } else {
      const __mmask16 low = TailMask(g.split);
      const __m512 a = _mm512_maskz_loadu_ps(low, reinterpret_cast<const float*>(p));
      const __m512 b = _mm512_maskz_loadu_ps(TailMask(g.from_next),
                                             reinterpret_cast<const float*>(g.next + d * g.dim_stride));
      const __m512i up = _mm512_and_si512(
          _mm512_sub_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(g.split)),
          _mm512_set1_epi32(15));
      return _mm512_mask_blend_ps(static_cast<__mmask16>(~low), a, _mm512_permutexvar_ps(up, b));
    }
  } else {
    __m256i h;
    if constexpr (!kSplit) {
      h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    } else {
      const __mmask16 low = TailMask(g.split);
      const __m256i a = _mm256_maskz_loadu_epi16(low, p);
      const __m256i b = _mm256_maskz_loadu_epi16(TailMask(g.from_next), g.next + d * g.dim_stride);
      const __m256i up = _mm256_and_si256(
          _mm256_sub_epi16(_mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm256_set1_epi16(static_cast<int16_t>(g.split))),
          _mm256_set1_epi16(15));
      h = _mm256_mask_blend_epi16(static_cast<__mmask16>(~low), a, _mm256_permutexvar_epi16(up, b));
    }
    if constexpr (T == DType::kF16) {
      return _mm512_cvtph_ps(h);
    } else {  // bf16: the high half of an f32
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
}

// Scaled scores of QB queries against G groups of 16 keys of a dim-major K:
// sc[b][16 g + u] = scale * sum_d q_b[d] k_u[d], one fma chain per (query,
// group) over the dimensions in order, 16 keys in the lanes (no horizontal
// sums). Each key vector is loaded once for the QB queries; a query's
// chain, and so its bits, is the same whatever QB is.
template <DType T, bool kSplit, int QB, int G>
void ScoreDimMajor(const float* const* q, const KeyGroup* groups, int64_t hd, __m512 scale,
                   float* const* sc) {
  __m512 acc[QB][G];
#pragma GCC unroll 8
  for (int b = 0; b < QB; ++b) {
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) acc[b][g] = _mm512_setzero_ps();
  }
  for (int64_t d = 0; d < hd; ++d) {
    __m512 k[G];
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) k[g] = LoadKeys16<T, kSplit>(groups[g], d);
#pragma GCC unroll 8
    for (int b = 0; b < QB; ++b) {
      const __m512 qb = _mm512_set1_ps(q[b][d]);
#pragma GCC unroll 2
      for (int g = 0; g < G; ++g) acc[b][g] = _mm512_fmadd_ps(qb, k[g], acc[b][g]);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < QB; ++b) {
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) _mm512_store_ps(sc[b] + 16 * g, _mm512_mul_ps(acc[b][g], scale));
  }
}

// ScoreDimMajor for n queries (blocks of 8, 4, 2, 1) and 1 or 2 groups.
template <DType T, bool kSplit>
void ScoreQueriesDimMajor(const float* const* q, int64_t n, const KeyGroup* groups, int64_t n_groups,
                          int64_t hd, __m512 scale, float* const* sc) {
  const auto run = [&](auto qb) {
    constexpr int QB = decltype(qb)::value;
    if (n_groups == 2) {
      ScoreDimMajor<T, kSplit, QB, 2>(q, groups, hd, scale, sc);
    } else {
      ScoreDimMajor<T, kSplit, QB, 1>(q, groups, hd, scale, sc);
    }
  };
  while (n > 0) {
    const int64_t block = n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1;
    switch (block) {
      case 8:
        run(std::integral_constant<int, 8>{});
        break;
      case 4:
        run(std::integral_constant<int, 4>{});
        break;
      case 2:
        run(std::integral_constant<int, 2>{});
        break;
      default:
        run(std::integral_constant<int, 1>{});
        break;
    }
    q += block;
    sc += block;
    n -= block;
  }
}

}  // namespace

// ScoreQueriesDimMajor for the tile's key dtype (f16, bf16, else f32) and
// whether a group spans two blocks.
void ScoreQueriesDimMajor(const DimMajorKeys& keys, const float* const* q, int64_t n, int64_t hd,
                          __m512 scale, float* const* sc) {
  const auto run = [&](auto split_keys) {
    constexpr bool kSplit = decltype(split_keys)::value;
    switch (keys.dtype) {
      case DType::kF16:
        return ScoreQueriesDimMajor<DType::kF16, kSplit>(q, n, keys.groups, keys.n_groups, hd, scale, sc);
      case DType::kBF16:
        return ScoreQueriesDimMajor<DType::kBF16, kSplit>(q, n, keys.groups, keys.n_groups, hd, scale, sc);
      default:
        return ScoreQueriesDimMajor<DType::kF32, kSplit>(q, n, keys.groups, keys.n_groups, hd, scale, sc);
    }
  };
  if (keys.split) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
}

DimMajorKeys DimMajorKeysOf(const PagedKvView& kv, int64_t t0, int64_t n, int64_t hd, float* scratch) {
  const int64_t elem = BlockBytes(kv.dtype);
  DimMajorKeys keys{kv.dtype, false, {}, (n + 15) / 16};
  bool in_place = kv.slot_stride == elem && kv.block_size >= 16;
  for (int64_t g = 0; g < keys.n_groups && in_place; ++g) {
    const int64_t key = t0 + 16 * g, slot = key % kv.block_size, block = key / kv.block_size;
    const int64_t in_tile = std::min<int64_t>(16, t0 + n - key);  // keys the tile has in this group
    const int64_t here = std::min<int64_t>(16, kv.block_size - slot);
    KeyGroup& group = keys.groups[g];
    const uint8_t* base = kv.k + kv.block_table[block] * kv.block_stride + slot * kv.slot_stride;
    // next = base while unused: a split tile's other group reads it with an empty mask.
    group = {base, base, kv.k_dim_stride, 16, 0};
    if (here < 16) {  // the group ends in the next block (read only if the tile has keys there)
      group.split = static_cast<int>(here);
      group.from_next = static_cast<int>(std::max<int64_t>(0, in_tile - here));
      group.next = group.from_next > 0 ? kv.k + kv.block_table[block + 1] * kv.block_stride : group.base;
      keys.split = true;
    }
  }
  if (in_place) return keys;
  std::fill(scratch, scratch + keys.n_groups * hd * 16, 0.0f);
  int64_t j = 0;
  ForEachKvRow(kv, t0, n, [&](const uint8_t* k, const uint8_t*) {
    float* dst = scratch + (j / 16) * hd * 16 + j % 16;
    for (int64_t d = 0; d < hd; ++d) DequantizeRow(kv.dtype, k + d * kv.k_dim_stride, dst + d * 16, 1);
    ++j;
  });
  keys.dtype = DType::kF32;
  keys.split = false;
  for (int64_t g = 0; g < keys.n_groups; ++g) {
    const auto* base = reinterpret_cast<const uint8_t*>(scratch + g * hd * 16);
    keys.groups[g] = {base, base, 16 * static_cast<int64_t>(sizeof(float)), 16, 0};
  }
  return keys;
}

}  // namespace deepinfer::cpu
