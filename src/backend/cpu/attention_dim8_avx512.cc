// AttendKeysForTokens at head_dim 8 over a dim-major K, on AVX-512
// (attention_dim_major_avx512.h; docs/kernels.md, "GQA attention at head_dim 8").
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/attention_dim_major_avx512.h"
#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/simd_avx512.h"
#include "backend/cpu/vec_exp_avx512.h"

namespace deepinfer::cpu {
namespace {

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
// subnormal result (a score 87 or more below the chunk's max, and exp(-inf)
// in the merge into an empty state; ExpAvx512 reaches them through a
// subnormal scale) costs a microcode assist per instruction; the terms
// dropped are < 2^-126 of the largest, which is 1.
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
    // Merge (m, sum, a) into the state, both scaled to the larger max, as
    // MergeAttentionState does, with its two exps in one vector: its scalar
    // std::exp pair per query and chunk measured ~8% of this kernel at 12
    // queries per call. exp(-inf) = 0: the empty state.
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

void AttendKeysForTokensHeadDim8Avx512(const AttentionQuery& q, const AttentionTokens& tokens,
                                       const PagedKvView& kv, int64_t begin) {
  switch (kv.dtype) {
    case DType::kF16:
      return AttendHeadDim8<DType::kF16>(q, tokens, kv, begin);
    case DType::kBF16:
      return AttendHeadDim8<DType::kBF16>(q, tokens, kv, begin);
    default:
      return AttendHeadDim8<DType::kF32>(q, tokens, kv, begin);
  }
}

}  // namespace deepinfer::cpu
