// AVX-512 online-softmax attention (see attention_kernel.h): the same tiles,
// the same f32 decoding of 16- and 8-bit cache rows and the same
// online-softmax update as AttendKeysScalar, with the two inner products
// laid out for throughput rather than in the scalar order:
//   q . k: each key's products accumulate 16 lanes wide over head_dim; the
//     lanes of four keys are then summed together (SumLanes4) instead of one
//     horizontal sum per key, which cost more than the products at head_dim
//     64.
//   p . V: one fma chain per 16-dim chunk, keys in order (the scalar sum's
//     order, fused).
// Both passes take the queries of a tile (the GQA heads of its tokens) in
// blocks that share every K / V chunk they load: a block's chains are
// independent, which is what keeps the fma units busy (a single query's
// chains are latency-bound). For one query head the operations depend only
// on head_dim and the key range, never on how many heads share the call
// (GQA), on the block it falls in, or on the batch.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/simd_avx512.h"
#include "backend/cpu/vec_exp_avx512.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {

namespace {

// One row of head_dim floats, inline: a libc memcpy call per 256-byte row
// cost more than the copy.
inline void CopyRow(float* dst, const float* src, int64_t hd) {
  int64_t d = 0;
  for (; d + 16 <= hd; d += 16) _mm512_storeu_ps(dst + d, _mm512_loadu_ps(src + d));
  if (d < hd) {
    const __mmask16 m = TailMask(hd - d);
    _mm512_mask_storeu_ps(dst + d, m, _mm512_maskz_loadu_ps(m, src + d));
  }
}

// dst f32 [hd] = the cache row at src, decoded: the same values as the
// scalar DequantizeRow (f16 and bf16 widen exactly; q8_0 is q * d, one f32
// product per element). A template per dtype, so a tile's rows are decoded
// without a dispatch per row.
template <DType T>
inline void DecodeRow(const uint8_t* src, float* dst, int64_t hd) {
  if constexpr (T == DType::kF16 || T == DType::kBF16) {
    const auto widen = [](const uint8_t* x, __mmask16 m) {
      return T == DType::kF16 ? LoadF16AsF32(x, m) : LoadBf16AsF32(x, m);
    };
    int64_t d = 0;
    for (; d + 16 <= hd; d += 16) _mm512_storeu_ps(dst + d, widen(src + 2 * d, 0xffff));
    if (d < hd) {
      const __mmask16 m = TailMask(hd - d);
      _mm512_mask_storeu_ps(dst + d, m, widen(src + 2 * d, m));
    }
  } else if constexpr (T == DType::kQ8_0) {  // hd is a multiple of 32: blocks of [f16 scale][32 x int8]
    for (int64_t d = 0; d < hd; d += 32, src += 34) {
      uint16_t bits;
      std::memcpy(&bits, src, sizeof(bits));
      const __m512 scale = _mm512_set1_ps(_cvtsh_ss(bits));
      for (int half = 0; half < 2; ++half) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 + 16 * half));
        _mm512_storeu_ps(dst + d + 16 * half,
                         _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), scale));
      }
    }
  } else {  // f32
    CopyRow(dst, reinterpret_cast<const float*>(src), hd);
  }
}

// Points k_rows / v_rows at the rows of keys [t0, t0 + n): decoded into
// tile_k / tile_v (rows of hd floats side by side) where decode_k /
// decode_v, else in place (f32). k_rows is left alone for a dim-major K,
// which the scores read from the cache directly.
template <DType T>
void LoadTile(const PagedKvView& kv, int64_t t0, int64_t n, int64_t hd, bool decode_k, bool decode_v,
              float* tile_k, float* tile_v, const float** k_rows, const float** v_rows) {
  const bool rows_k = kv.k_dim_stride == 0;
  int64_t j = 0;
  ForEachKvRow(kv, t0, n, [&](const uint8_t* k, const uint8_t* v) {
    if (rows_k && decode_k) {
      DecodeRow<T>(k, tile_k + j * hd, hd);
      k_rows[j] = tile_k + j * hd;
    } else if (rows_k) {
      k_rows[j] = reinterpret_cast<const float*>(k);
    }
    if (decode_v) {
      DecodeRow<T>(v, tile_v + j * hd, hd);
      v_rows[j] = tile_v + j * hd;
    } else {
      v_rows[j] = reinterpret_cast<const float*>(v);
    }
    ++j;
  });
}

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

// q_b . k_u for QB queries and 4 keys, each product left in 16 lanes
// (summed by the caller, 4 keys at a time: SumLanes4): QB * 4 independent
// fma chains over head_dim, and each K chunk loaded once for the QB queries.
// Per (query, key) the chain is the same whatever QB is (chunks in order,
// from zero), so a query's scores never depend on its neighbours.
// The loops must be unrolled: otherwise GCC keeps acc[] in memory and every
// fma waits on a store-to-load round trip.
template <int QB>
inline void DotLanes4(const float* const* q, const float* const* k, int64_t hd, __m512 (*acc)[4]) {
#pragma GCC unroll 8
  for (int b = 0; b < QB; ++b) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) acc[b][u] = _mm512_setzero_ps();
  }
  int64_t d = 0;
  for (; d + 16 <= hd; d += 16) {
    __m512 kv[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) kv[u] = _mm512_loadu_ps(k[u] + d);
#pragma GCC unroll 8
    for (int b = 0; b < QB; ++b) {
      const __m512 qv = _mm512_loadu_ps(q[b] + d);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) acc[b][u] = _mm512_fmadd_ps(qv, kv[u], acc[b][u]);
    }
  }
  if (d < hd) {
    const __mmask16 m = TailMask(hd - d);
    __m512 kv[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) kv[u] = _mm512_maskz_loadu_ps(m, k[u] + d);
#pragma GCC unroll 8
    for (int b = 0; b < QB; ++b) {
      const __m512 qv = _mm512_maskz_loadu_ps(m, q[b] + d);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) acc[b][u] = _mm512_fmadd_ps(qv, kv[u], acc[b][u]);
    }
  }
}

// Scaled scores of QB queries against keys [0, nx) of the tile (rounded up
// to 4; k_rows holds a full tile): sc[b][j] = scale * q_b . k_j.
template <int QB>
void ScoreQueries(const float* const* q, const float* const* k_rows, int64_t hd, int64_t nx, __m512 scale,
                  float* const* sc) {
  for (int64_t j = 0; j < nx; j += 4) {
    __m512 dots[QB][4];
    DotLanes4<QB>(q, k_rows + j, hd, dots);
#pragma GCC unroll 8
    for (int b = 0; b < QB; ++b) {
      _mm_store_ps(sc[b] + j, _mm_mul_ps(SumLanes4(dots[b][0], dots[b][1], dots[b][2], dots[b][3]),
                                         _mm512_castps512_ps128(scale)));
    }
  }
}

// For QB queries b: acc_b[0, width) = acc_b * corr_b + sum_j p_b[j] *
// v_rows[j][off + ...] for j < n in key order (one fma chain per 16-float
// chunk, as the portable kernel's sum; the last chunk masked to width).
// Each V chunk is loaded once for the QB queries, whose QB * NC chains are
// independent: that, not a split of one query's chain, is what keeps the
// fma units busy, so a query's bits are the same whatever QB is.
template <int NC, int QB>
void AccumulateValues(float* const* acc, int64_t width, const float* const* p, const float* const* v_rows,
                      int64_t off, int64_t n, const float* corr) {
  const __mmask16 last = TailMask(width - 16 * (NC - 1));
  const auto mask = [&](int c) { return c == NC - 1 ? last : static_cast<__mmask16>(0xffff); };
  // The loops must be unrolled (as DotLanes4's): otherwise GCC keeps a[] on
  // the stack and every fma waits on a store-to-load.
  __m512 a[QB][NC];
#pragma GCC unroll 8
  for (int b = 0; b < QB; ++b) {
    const __m512 cb = _mm512_set1_ps(corr[b]);
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) a[b][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask(c), acc[b] + 16 * c), cb);
  }
  for (int64_t j = 0; j < n; ++j) {
    const float* v = v_rows[j] + off;
    __m512 x[NC];
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) x[c] = _mm512_maskz_loadu_ps(mask(c), v + 16 * c);
#pragma GCC unroll 8
    for (int b = 0; b < QB; ++b) {
      const __m512 pb = _mm512_set1_ps(p[b][j]);
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) a[b][c] = _mm512_fmadd_ps(pb, x[c], a[b][c]);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < QB; ++b) {
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) _mm512_mask_storeu_ps(acc[b] + 16 * c, mask(c), a[b][c]);
  }
}

// Queries blocked together in the value pass: as many as keep QB * NC
// accumulators within 16 registers.
constexpr int QueriesPerValueBlock(int nc) { return nc <= 2 ? 8 : nc <= 4 ? 4 : 2; }

using AccumulateFn = void (*)(float* const*, int64_t, const float* const*, const float* const*, int64_t,
                              int64_t, const float*);
// [nc - 1][i]: AccumulateValues for NC = nc chunks and QB = 8 >> i queries,
// or null where that block would need more than 16 accumulators.
template <int NC, int QB>
constexpr AccumulateFn AccumulateOrNull() {
  if constexpr (QB <= QueriesPerValueBlock(NC)) {
    return AccumulateValues<NC, QB>;
  } else {
    return nullptr;
  }
}
template <int NC>
constexpr std::array<AccumulateFn, 4> kAccumulateRow = {AccumulateOrNull<NC, 8>(), AccumulateOrNull<NC, 4>(),
                                                        AccumulateOrNull<NC, 2>(), AccumulateOrNull<NC, 1>()};
constexpr std::array<AccumulateFn, 4> kAccumulate[] = {
    kAccumulateRow<1>, kAccumulateRow<2>, kAccumulateRow<3>, kAccumulateRow<4>,
    kAccumulateRow<5>, kAccumulateRow<6>, kAccumulateRow<7>, kAccumulateRow<8>};

// The 16-key groups of a dim-major K tile (1 or 2) as the scores read them:
// in the cache's dtype, or gathered as f32; split: a group spans two blocks.
struct DimMajorKeys {
  DType dtype;
  bool split;
  KeyGroup groups[2];
  int64_t n_groups;
};

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

// Queries handed to ScoreQueriesDimMajor at once (it blocks them 8 / 4 / 2 / 1).
constexpr int64_t kQueriesPerDimMajorRun = 8;

// The key groups of the dim-major K tile [t0, t0 + n): read in place where a
// group's keys are consecutive slots of one block, or of one block and the
// next (a tile that starts inside a block: a sliding window's first keys;
// `split`), else gathered (keys past n as 0) into `scratch` as f32
// [group][hd][16] (blocks of fewer than 16 slots).
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

// Queries scored together: 4 x 4 keys = 16 accumulators.
constexpr int kQueriesPerScoreBlock = 4;

// ---- head_dim 8 (AttendHeadDim8) ----
// At head_dim 8 the tile loop above spends most of its time around the
// arithmetic: a 16-lane V row is half empty, p . V is one fma chain per
// query and key, and each 32-key tile pays a horizontal max and sum, a
// correction exp and a V decode per row. Here the keys come in chunks of
// kDim8Chunk: the chunk's V is transposed once into dim-major f32 (16 keys
// per vector, like K), and each query then takes a plain two-pass softmax
// over the chunk (its max, exp, sum) and p . V as 8 independent 16-lane fma
// chains, one per dimension, summed across lanes once per chunk; the
// chunk's (max, sum, acc) is merged into the running state as
// MergeAttentionState merges two states. Chunks are counted from `begin`
// and a query's work in a chunk depends only on its own key count there
// (lanes past it are -inf scores, zero probabilities: adding them changes
// no bit), so AttendKeysForTokens' contract holds as for the tile loop.
constexpr int64_t kDim8Chunk = 256;

// 8 values of a V row as f32.
template <DType T>
inline __m256 LoadRow8(const uint8_t* row) {
  if constexpr (T == DType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row));
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row));
    if constexpr (T == DType::kF16) {
      return _mm256_cvtph_ps(h);
    } else {  // bf16: the high half of an f32
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  }
}

// The V rows of 16 keys (row j at rows[j]) transposed: vt[d * stride + j] =
// element d of row j, d < 8. Rows m and m + 8 share a vector, so that an 8 x
// 8 transpose within each 256-bit half (unpack, shuffle, then one
// two-source permute per output) leaves the keys in order.
template <DType T>
inline void TransposeValues16(const uint8_t* const* rows, float* vt, int64_t stride) {
  __m512 r[8];
#pragma GCC unroll 8
  for (int m = 0; m < 8; ++m) {
    r[m] = _mm512_insertf32x8(_mm512_castps256_ps512(LoadRow8<T>(rows[m])), LoadRow8<T>(rows[m + 8]), 1);
  }
  __m512 u[8];
#pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {  // rows 0-3 (u0..u3), rows 4-7 (u4..u7)
    const __m512* a = r + 4 * half;
    const __m512 t0 = _mm512_unpacklo_ps(a[0], a[1]), t1 = _mm512_unpackhi_ps(a[0], a[1]);
    const __m512 t2 = _mm512_unpacklo_ps(a[2], a[3]), t3 = _mm512_unpackhi_ps(a[2], a[3]);
    u[4 * half + 0] = _mm512_shuffle_ps(t0, t2, 0x44);  // dims 0 | 4 of the four rows
    u[4 * half + 1] = _mm512_shuffle_ps(t0, t2, 0xEE);  // dims 1 | 5
    u[4 * half + 2] = _mm512_shuffle_ps(t1, t3, 0x44);  // dims 2 | 6
    u[4 * half + 3] = _mm512_shuffle_ps(t1, t3, 0xEE);  // dims 3 | 7
  }
  const __m512i low = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
  const __m512i high = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
#pragma GCC unroll 4
  for (int d = 0; d < 4; ++d) {
    _mm512_store_ps(vt + d * stride, _mm512_permutex2var_ps(u[d], low, u[d + 4]));
    _mm512_store_ps(vt + (d + 4) * stride, _mm512_permutex2var_ps(u[d], high, u[d + 4]));
  }
}

// Zeros standing in for the V rows past a chunk's last key (any dtype).
alignas(64) constexpr uint8_t kZeroRow[64] = {};

// exp(x), with 0 where that is below the smallest normal float: a
// subnormal result (exp(-inf) included, which ExpAvx512 reaches through a
// subnormal scale) costs a microcode assist per instruction, here a few
// hundred cycles per query and chunk; the terms dropped are < 2^-126 of
// the largest, which is 1.
inline __m512 ExpNormal(__m512 x) {
  const __m512 lowest = _mm512_set1_ps(-87.0f);  // exp(-87) = 1.6e-38, normal
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lowest, _CMP_GE_OQ), ExpAvx512(_mm512_max_ps(x, lowest)));
}

// A block of nb queries' chunk: query b's scores sc[b][0, n[b]) (64-byte
// aligned; lanes past n[b] ignored) against the chunk's V transposed (vt, 8
// rows of kDim8Chunk floats), folded into its state (max[b], sum[b],
// acc[b][0, 8)). Passes over the block (maxima, then probabilities in place
// and their sums, then p . V), so that the queries' dependency chains
// overlap; per query the operations are the same whatever the block.
inline void FoldChunkDim8(int64_t nb, float* const* sc, const int64_t* n, const float* vt, float* const* max,
                          float* const* sum, float* const* acc) {
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  float m[kQueriesPerDimMajorRun], chunk_sum[kQueriesPerDimMajorRun];
  for (int64_t b = 0; b < nb; ++b) {  // 1: the chunk's max
    __m512 vmax = neg_inf;
    for (int64_t g = 0; 16 * g < n[b]; ++g) {
      vmax = _mm512_max_ps(vmax, _mm512_mask_load_ps(neg_inf, TailMask(n[b] - 16 * g), sc[b] + 16 * g));
    }
    m[b] = _mm512_reduce_max_ps(vmax);
  }
  for (int64_t b = 0; b < nb; ++b) {  // 2: p = exp(score - max) in place, and its sum
    const __m512 vm = _mm512_set1_ps(m[b]);
    __m512 vsum = _mm512_setzero_ps();
    for (int64_t g = 0; 16 * g < n[b]; ++g) {
      const __mmask16 live = TailMask(n[b] - 16 * g);
      const __m512 p =
          _mm512_maskz_mov_ps(live, ExpNormal(_mm512_sub_ps(_mm512_maskz_load_ps(live, sc[b] + 16 * g), vm)));
      _mm512_store_ps(sc[b] + 16 * g, p);
      vsum = _mm512_add_ps(vsum, p);
    }
    chunk_sum[b] = _mm512_reduce_add_ps(vsum);
  }
  for (int64_t b = 0; b < nb; ++b) {  // 3: p . V, one 16-lane chain per dimension; the merge
    // The loops over a[] must be unrolled: otherwise GCC keeps a[] on the
    // stack and every fma waits on a store-to-load.
    __m512 a[8];
#pragma GCC unroll 8
    for (__m512& x : a) x = _mm512_setzero_ps();
    for (int64_t g = 0; 16 * g < n[b]; ++g) {
      const __m512 p = _mm512_load_ps(sc[b] + 16 * g);
#pragma GCC unroll 8
      for (int d = 0; d < 8; ++d)
        a[d] = _mm512_fmadd_ps(p, _mm512_load_ps(vt + d * kDim8Chunk + 16 * g), a[d]);
    }
    // Merge (m, sum, a) into the state, both scaled to the larger max
    // (exp(-inf) = 0: the empty state).
    const float new_max = std::max(*max[b], m[b]);
    alignas(64) float f[16];
    _mm512_store_ps(f, ExpNormal(_mm512_setr_ps(*max[b] - new_max, m[b] - new_max, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                0, 0, 0, 0, 0)));
    *max[b] = new_max;
    *sum[b] = *sum[b] * f[0] + chunk_sum[b] * f[1];
    alignas(32) float out[8];
#pragma GCC unroll 8
    for (int d = 0; d < 8; ++d) out[d] = _mm512_reduce_add_ps(a[d]);
    _mm256_storeu_ps(acc[b], _mm256_fmadd_ps(_mm256_loadu_ps(acc[b]), _mm256_set1_ps(f[0]),
                                             _mm256_mul_ps(_mm256_load_ps(out), _mm256_set1_ps(f[1]))));
  }
}

template <DType T>
void AttendHeadDim8(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                    int64_t begin) {
  constexpr int64_t kHd = 8, kTiles = kDim8Chunk / kAttentionKeyTile;
  const int64_t n_x = tokens.n * q.n_q;
  const int64_t end = *std::max_element(tokens.end, tokens.end + tokens.n);
  // Per thread: the chunk's transposed V, the key groups of its tiles (and
  // their gather scratch), a block's scores.
  thread_local AlignedBuffer<float> values, key_scratch, block_scores;
  values.Resize(static_cast<size_t>(kHd * kDim8Chunk));
  key_scratch.Resize(static_cast<size_t>(kTiles * 2 * kHd * 16));
  block_scores.Resize(static_cast<size_t>(kQueriesPerDimMajorRun * kDim8Chunk));
  float* vt = values.data();
  const __m512 scale = _mm512_set1_ps(q.scale);
  const auto query_of = [&](int64_t x) { return q.q + (x / q.n_q) * tokens.q_stride + (x % q.n_q) * kHd; };
  for (int64_t c0 = begin; c0 < end; c0 += kDim8Chunk) {
    const int64_t n = std::min(kDim8Chunk, end - c0);
    PrefetchKeys(kv, kHd, c0 + kDim8Chunk, std::min(end, c0 + 2 * kDim8Chunk));
    const uint8_t* rows[kDim8Chunk];
    int64_t j = 0;
    ForEachKvRow(kv, c0, n, [&](const uint8_t*, const uint8_t* v) { rows[j++] = v; });
    for (; j % 16 != 0; ++j) rows[j] = kZeroRow;
    for (int64_t g = 0; g < j / 16; ++g) TransposeValues16<T>(rows + 16 * g, vt + 16 * g, kDim8Chunk);
    const int64_t tiles = (n + kAttentionKeyTile - 1) / kAttentionKeyTile;
    DimMajorKeys keys[kTiles];
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t t0 = c0 + t * kAttentionKeyTile;
      keys[t] = DimMajorKeysOf(kv, t0, std::min(kAttentionKeyTile, end - t0), kHd,
                               key_scratch.data() + t * 2 * kHd * 16);
    }
    // Keys of this chunk that query x sees (<= 0: none).
    const auto keys_of = [&](int64_t x) { return std::min(n, tokens.end[x / q.n_q] - c0); };
    for (int64_t x = 0; x < n_x;) {
      if (keys_of(x) <= 0) {
        ++x;
        continue;
      }
      const float* qs[kQueriesPerDimMajorRun];
      int64_t nb = 0, most = 0;
      while (nb < kQueriesPerDimMajorRun && x + nb < n_x && keys_of(x + nb) > 0) {
        qs[nb] = query_of(x + nb);
        most = std::max(most, keys_of(x + nb));
        ++nb;
      }
      for (int64_t t = 0; t * kAttentionKeyTile < most; ++t) {
        float* sc[kQueriesPerDimMajorRun];
        for (int64_t b = 0; b < nb; ++b) sc[b] = block_scores.data() + b * kDim8Chunk + t * kAttentionKeyTile;
        ScoreQueriesDimMajor(keys[t], qs, nb, kHd, scale, sc);
      }
      float* sc[kQueriesPerDimMajorRun];
      int64_t nx[kQueriesPerDimMajorRun];
      float *mx[kQueriesPerDimMajorRun], *sm[kQueriesPerDimMajorRun], *acc[kQueriesPerDimMajorRun];
      for (int64_t b = 0; b < nb; ++b) {
        sc[b] = block_scores.data() + b * kDim8Chunk;
        nx[b] = keys_of(x + b);
        if (q.softcap > 0.0f) {  // the same scalar capping as the portable kernel
          for (int64_t k = 0; k < nx[b]; ++k) sc[b][k] = q.softcap * std::tanh(sc[b][k] / q.softcap);
        }
        const AttentionState& st = tokens.state[(x + b) / q.n_q];
        const int64_t h = (x + b) % q.n_q;
        mx[b] = st.max + h;
        sm[b] = st.sum + h;
        acc[b] = st.acc + h * kHd;
      }
      FoldChunkDim8(nb, sc, nx, vt, mx, sm, acc);
      x += nb;
    }
  }
}

}  // namespace

void AttendKeysAvx512(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                      AttentionState state) {
  AttendKeysForTokensAvx512(q, AttentionTokens{1, 0, &end, &state}, kv, begin);
}

void AttendKeysForTokensAvx512(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                               int64_t begin) {
  const int64_t hd = q.head_dim;
  if (hd == 8 && kv.k_dim_stride > 0) {  // dim-major K: f32, f16 or bf16
    switch (kv.dtype) {
      case DType::kF16:
        return AttendHeadDim8<DType::kF16>(q, tokens, kv, begin);
      case DType::kBF16:
        return AttendHeadDim8<DType::kBF16>(q, tokens, kv, begin);
      default:
        return AttendHeadDim8<DType::kF32>(q, tokens, kv, begin);
    }
  }
  // Queries are numbered token-major, x = i * n_q + h. Per query: the tile's
  // scores, then its probabilities; and its correction factor. Per thread,
  // grown to the largest query count seen.
  const int64_t n_x = tokens.n * q.n_q;
  thread_local AlignedBuffer<float> head_scores, head_correction;
  if (head_scores.size() < static_cast<size_t>(n_x * kAttentionKeyTile)) {
    head_scores.Resize(static_cast<size_t>(n_x * kAttentionKeyTile));
    head_correction.Resize(static_cast<size_t>(n_x));
  }
  float* scores = head_scores.data();
  float* correction = head_correction.data();
  const float* k_rows[kAttentionKeyTile];
  const float* v_rows[kAttentionKeyTile];
  static_assert(kAttentionKeyTile == 32, "the softmax below holds a tile in two 16-lane vectors");
  const __m512 scale = _mm512_set1_ps(q.scale);
  const int64_t end = *std::max_element(tokens.end, tokens.end + tokens.n);
  // The contiguous f32 copy of a tile's K and V rows (see below); per
  // thread, grown to the largest head_dim seen.
  thread_local std::vector<float> tile;
  const int64_t f32_row = hd * static_cast<int64_t>(sizeof(float));
  const bool dim_major = kv.k_dim_stride > 0;
  const bool decode_k = !dim_major && (kv.dtype != DType::kF32 || (n_x > 1 && kv.slot_stride != f32_row));
  const bool decode_v = kv.dtype != DType::kF32 || (n_x > 1 && kv.v_slot_stride != f32_row);
  if ((decode_k || decode_v || dim_major) && tile.size() < static_cast<size_t>(2 * kAttentionKeyTile * hd)) {
    tile.resize(static_cast<size_t>(2 * kAttentionKeyTile * hd));
  }
  // Keys of the current tile that query x sees: its token's range cut to
  // the tile (<= 0: the token's range ended before this tile).
  const auto keys_of = [&](int64_t x, int64_t t0) {
    return std::min(kAttentionKeyTile, tokens.end[x / q.n_q] - t0);
  };
  for (int64_t t0 = begin; t0 < end; t0 += kAttentionKeyTile) {
    const int64_t n = std::min(kAttentionKeyTile, end - t0);
    // A 16- or 8-bit tile is decoded into f32 rows side by side (32 rows,
    // in L1; the cache itself is read once, at its own width). f32 rows are
    // used in place, except that with several queries, which read the tile
    // once each, rows at a large power-of-two stride (a view over a
    // [slot][head][dim] layout) fall into a few L1 sets and evict each other
    // between the queries, so such rows are copied next to each other
    // first (changes no value). KvCache's f32 rows are contiguous per head.
    // (An f32 tile read in place leaves `tile` empty: no offset of its null data().)
    float* tile_k = tile.empty() ? nullptr : tile.data();
    float* tile_v = tile.empty() ? nullptr : tile_k + kAttentionKeyTile * hd;
    switch (kv.dtype) {
      case DType::kF16:
        LoadTile<DType::kF16>(kv, t0, n, hd, decode_k, decode_v, tile_k, tile_v, k_rows, v_rows);
        break;
      case DType::kBF16:
        LoadTile<DType::kBF16>(kv, t0, n, hd, decode_k, decode_v, tile_k, tile_v, k_rows, v_rows);
        break;
      case DType::kQ8_0:
        LoadTile<DType::kQ8_0>(kv, t0, n, hd, decode_k, decode_v, tile_k, tile_v, k_rows, v_rows);
        break;
      default:
        LoadTile<DType::kF32>(kv, t0, n, hd, decode_k, decode_v, tile_k, tile_v, k_rows, v_rows);
        break;
    }
    // Keys past n of a short tile: dot products of key 0 again, computed in
    // groups of 4 and then masked out of the softmax.
    if (!dim_major) {
      for (int64_t j = n; j < kAttentionKeyTile; ++j) k_rows[j] = k_rows[0];
    }
    // The next tile's K and V rows are requested now: a decode step reads
    // the whole cache once, and without this the first query head of a
    // group waited on every row.
    PrefetchKeys(kv, hd, t0 + kAttentionKeyTile, std::min(end, t0 + 2 * kAttentionKeyTile));
    // Passes over the queries, each query's work independent of the others'
    // within a pass, so the out-of-order core overlaps their dependency
    // chains (dot -> max -> exp -> sum) instead of running one query's chain
    // after the other. Per query the operations depend only on its own key
    // count: a query whose range ends inside the tile masks the rest of it
    // exactly as a call with that shorter range masks a short tile.
    // 1: scaled scores q_x . k_j, kQueriesPerScoreBlock queries with the
    // same key count at a time (the heads of one token).
    const auto query_of = [&](int64_t x) { return q.q + (x / q.n_q) * tokens.q_stride + (x % q.n_q) * hd; };
    if (dim_major) {
      // Every query with keys in this tile, in runs of consecutive ones (the
      // lanes past a query's own key count are masked below).
      const DimMajorKeys keys = DimMajorKeysOf(kv, t0, n, hd, tile_k);
      for (int64_t x = 0; x < n_x;) {
        if (keys_of(x, t0) <= 0) {
          ++x;
          continue;
        }
        const float* qs[kQueriesPerDimMajorRun];
        float* sc[kQueriesPerDimMajorRun];
        int64_t nb = 0;
        while (nb < kQueriesPerDimMajorRun && x + nb < n_x && keys_of(x + nb, t0) > 0) {
          qs[nb] = query_of(x + nb);
          sc[nb] = scores + (x + nb) * kAttentionKeyTile;
          ++nb;
        }
        ScoreQueriesDimMajor(keys, qs, nb, hd, scale, sc);
        x += nb;
      }
    } else {
      for (int64_t x = 0; x < n_x;) {
        const int64_t nx = keys_of(x, t0);
        const float* qs[kQueriesPerScoreBlock];
        float* sc[kQueriesPerScoreBlock];
        int64_t nb = 0;
        while (nb < kQueriesPerScoreBlock && x + nb < n_x && keys_of(x + nb, t0) == nx) {
          qs[nb] = query_of(x + nb);
          sc[nb] = scores + (x + nb) * kAttentionKeyTile;
          ++nb;
        }
        if (nx > 0) {
          if (nb == kQueriesPerScoreBlock) {
            ScoreQueries<kQueriesPerScoreBlock>(qs, k_rows, hd, nx, scale, sc);
          } else {
            for (int64_t b = 0; b < nb; ++b) ScoreQueries<1>(qs + b, k_rows, hd, nx, scale, sc + b);
          }
        }
        x += nb;
      }
    }
    if (q.softcap > 0.0f) {  // the same scalar capping as the portable kernel (Gemma-2 only)
      for (int64_t x = 0; x < n_x; ++x) {
        float* sc = scores + x * kAttentionKeyTile;
        for (int64_t j = 0, nx = keys_of(x, t0); j < nx; ++j)
          sc[j] = q.softcap * std::tanh(sc[j] / q.softcap);
      }
    }
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    for (int64_t x = 0; x < n_x; ++x) {  // 2a: the new running max; exp's argument for the correction
      const int64_t nx = keys_of(x, t0);
      if (nx <= 0) {
        correction[x] = 0.0f;  // unused: keeps the 16-wide exp below on defined values
        continue;
      }
      const AttentionState& st = tokens.state[x / q.n_q];
      const int64_t h = x % q.n_q;
      const float* sc = scores + x * kAttentionKeyTile;
      const __m512 s0 = _mm512_mask_loadu_ps(neg_inf, TailMask(nx), sc);
      const __m512 s1 = _mm512_mask_loadu_ps(neg_inf, nx > 16 ? TailMask(nx - 16) : 0, sc + 16);
      const float new_max = std::max(st.max[h], _mm512_reduce_max_ps(_mm512_max_ps(s0, s1)));
      correction[x] = st.max[h] - new_max;  // -inf before the first key: correction 0
      st.max[h] = new_max;
    }
    for (int64_t x = 0; x < n_x; x += 16) {  // 2b: correction = exp(old max - new max), 16 queries at once
      const __mmask16 m = TailMask(n_x - x);
      _mm512_mask_storeu_ps(correction + x, m, ExpAvx512(_mm512_maskz_loadu_ps(m, correction + x)));
    }
    for (int64_t x = 0; x < n_x; ++x) {  // 2c: p_j = exp(score_j - max), the running sum
      const int64_t nx = keys_of(x, t0);
      if (nx <= 0) continue;
      const AttentionState& st = tokens.state[x / q.n_q];
      const int64_t h = x % q.n_q;
      float* sc = scores + x * kAttentionKeyTile;
      const __m512 vmax = _mm512_set1_ps(st.max[h]);
      const __mmask16 m0 = TailMask(nx), m1 = nx > 16 ? TailMask(nx - 16) : 0;
      const __m512 p0 = _mm512_maskz_mov_ps(m0, ExpAvx512(_mm512_sub_ps(_mm512_load_ps(sc), vmax)));
      const __m512 p1 = _mm512_maskz_mov_ps(m1, ExpAvx512(_mm512_sub_ps(_mm512_load_ps(sc + 16), vmax)));
      _mm512_store_ps(sc, p0);
      _mm512_store_ps(sc + 16, p1);
      st.sum[h] = st.sum[h] * correction[x] + _mm512_reduce_add_ps(_mm512_add_ps(p0, p1));
    }
    // 3: acc = acc * correction + p . V, a block of queries with the same key
    // count at a time.
    for (int64_t off = 0; off < hd; off += 128) {  // 8 chunks (16 accumulators) at a time
      const int64_t width = std::min<int64_t>(128, hd - off);
      const int64_t nc = (width + 15) / 16;
      const int64_t block = QueriesPerValueBlock(static_cast<int>(nc));  // the largest block
      for (int64_t x = 0; x < n_x;) {
        const int64_t nx = keys_of(x, t0);
        float* accs[8];
        const float* ps[8];
        int64_t nb = 0;
        while (nb < block && x + nb < n_x && keys_of(x + nb, t0) == nx) {
          accs[nb] = tokens.state[(x + nb) / q.n_q].acc + ((x + nb) % q.n_q) * hd + off;
          ps[nb] = scores + (x + nb) * kAttentionKeyTile;
          ++nb;
        }
        // The run in blocks of 8, 4, 2 or 1 queries, each as large as fits.
        for (int64_t b = 0; nx > 0 && b < nb;) {
          int i = 0;  // block of 8 >> i queries; i = 3 (one query) always fits
          while ((int64_t{8} >> i) > nb - b || kAccumulate[nc - 1][i] == nullptr) ++i;
          kAccumulate[nc - 1][i](accs + b, width, ps + b, v_rows, off, nx, correction + x + b);
          b += int64_t{8} >> i;
        }
        x += nb;
      }
    }
  }
}

}  // namespace deepinfer::cpu
