// AVX-512 online-softmax attention (see attention_kernel.h): the same tiles
// and online-softmax update as AttendKeysScalar, with the two inner products
// laid out for throughput rather than in the scalar order:
//   q . k: 8 keys at a time, each key's products accumulating 16 lanes wide
//     (8 independent chains); the lanes of four keys are then summed
//     together (SumLanes4) instead of one horizontal sum per key, which cost
//     more than the products at head_dim 64.
//   p . V: the accumulator of a 16-dim chunk is split by key parity (even
//     keys, odd keys, added at the end), so a tile is two independent fma
//     chains per chunk instead of one 32-long chain.
// For one query head the operations depend only on head_dim and the key
// range, never on how many heads share the call (GQA) or on the batch.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/simd_avx512.h"
#include "backend/cpu/vec_exp_avx512.h"

namespace deepinfer::cpu {

namespace {

// Where position p's K / V row of this head starts (attention_kernel.h).
inline const float* KRow(const PagedKvView& kv, int64_t p) {
  return kv.k + kv.block_table[p / kv.block_size] * kv.block_stride + p % kv.block_size * kv.slot_stride;
}
inline const float* VRow(const PagedKvView& kv, int64_t p) {
  return kv.v + kv.block_table[p / kv.block_size] * kv.v_block_stride + p % kv.block_size * kv.v_slot_stride;
}

// q . k_u for 8 keys, each left in 16 lanes (summed by the caller): one
// pass over head_dim with 8 independent fma chains (a key at a time was one
// 4-deep chain per key, latency-bound).
inline void DotLanes8(const float* q, const float* const* k, int64_t hd, __m512* acc) {
  for (int u = 0; u < 8; ++u) acc[u] = _mm512_setzero_ps();
  int64_t d = 0;
  for (; d + 16 <= hd; d += 16) {
    const __m512 qv = _mm512_loadu_ps(q + d);
    for (int u = 0; u < 8; ++u) acc[u] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k[u] + d), acc[u]);
  }
  if (d < hd) {
    const __mmask16 m = TailMask(hd - d);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
    for (int u = 0; u < 8; ++u) acc[u] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k[u] + d), acc[u]);
  }
}

// acc[0, width) = acc * corr + sum_j p[j] * v_rows[j][off + ...] for j < n,
// as NC 16-float chunks (the last masked to width), even and odd keys in
// separate accumulators.
template <int NC>
void AccumulateValues(float* acc, int64_t width, const float* p, const float* const* v_rows, int64_t off,
                      int64_t n, __m512 corr) {
  const __mmask16 last = TailMask(width - 16 * (NC - 1));
  const auto mask = [&](int c) { return c == NC - 1 ? last : static_cast<__mmask16>(0xffff); };
  __m512 even[NC], odd[NC];
  for (int c = 0; c < NC; ++c) {
    even[c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask(c), acc + 16 * c), corr);
    odd[c] = _mm512_setzero_ps();
  }
  int64_t j = 0;
  for (; j + 2 <= n; j += 2) {
    const __m512 p0 = _mm512_set1_ps(p[j]), p1 = _mm512_set1_ps(p[j + 1]);
    const float* v0 = v_rows[j] + off;
    const float* v1 = v_rows[j + 1] + off;
    for (int c = 0; c < NC; ++c) {
      even[c] = _mm512_fmadd_ps(p0, _mm512_maskz_loadu_ps(mask(c), v0 + 16 * c), even[c]);
      odd[c] = _mm512_fmadd_ps(p1, _mm512_maskz_loadu_ps(mask(c), v1 + 16 * c), odd[c]);
    }
  }
  if (j < n) {
    const __m512 p0 = _mm512_set1_ps(p[j]);
    const float* v0 = v_rows[j] + off;
    for (int c = 0; c < NC; ++c) {
      even[c] = _mm512_fmadd_ps(p0, _mm512_maskz_loadu_ps(mask(c), v0 + 16 * c), even[c]);
    }
  }
  for (int c = 0; c < NC; ++c) _mm512_mask_storeu_ps(acc + 16 * c, mask(c), _mm512_add_ps(even[c], odd[c]));
}

using AccumulateFn = void (*)(float*, int64_t, const float*, const float* const*, int64_t, int64_t, __m512);
constexpr AccumulateFn kAccumulate[] = {AccumulateValues<1>, AccumulateValues<2>, AccumulateValues<3>,
                                        AccumulateValues<4>, AccumulateValues<5>, AccumulateValues<6>,
                                        AccumulateValues<7>, AccumulateValues<8>};

}  // namespace

void AttendKeysAvx512(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                      AttentionState state) {
  const int64_t hd = q.head_dim;
  alignas(64) float scores[kAttentionKeyTile];
  const float* k_rows[kAttentionKeyTile];
  const float* v_rows[kAttentionKeyTile];
  static_assert(kAttentionKeyTile == 32, "the softmax below holds a tile in two 16-lane vectors");
  const __m512 scale = _mm512_set1_ps(q.scale);
  // The contiguous copy of a tile's K and V rows (see below); per thread,
  // grown to the largest head_dim seen.
  thread_local std::vector<float> tile;
  if (q.n_q > 1 && tile.size() < static_cast<size_t>(2 * kAttentionKeyTile * hd)) {
    tile.resize(static_cast<size_t>(2 * kAttentionKeyTile * hd));
  }
  for (int64_t t0 = begin; t0 < end; t0 += kAttentionKeyTile) {
    const int64_t n = std::min(kAttentionKeyTile, end - t0);
    for (int64_t j = 0; j < n; ++j) {
      k_rows[j] = KRow(kv, t0 + j);
      v_rows[j] = VRow(kv, t0 + j);
    }
    // With several query heads the tile's rows are read n_q times: copy them
    // next to each other first. In the cache they sit at a stride of
    // kv_dim floats (a power of two), so a tile's K and V rows fall into a
    // few L1 sets and evicted each other between the query heads. Copying
    // changes no value.
    if (q.n_q > 1) {
      const size_t row_bytes = sizeof(float) * static_cast<size_t>(hd);
      float* tile_k = tile.data();
      float* tile_v = tile_k + kAttentionKeyTile * hd;
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(tile_k + j * hd, k_rows[j], row_bytes);
        std::memcpy(tile_v + j * hd, v_rows[j], row_bytes);
        k_rows[j] = tile_k + j * hd;
        v_rows[j] = tile_v + j * hd;
      }
    }
    // Keys past n of a short tile: dot products of key 0 again, computed in
    // groups of 8 and then masked out of the softmax.
    for (int64_t j = n; j < kAttentionKeyTile; ++j) k_rows[j] = k_rows[0];
    // The next tile's K and V rows are requested now: a decode step reads
    // the whole cache once, row pieces of head_dim floats strided by the
    // other heads' columns, which the hardware prefetcher follows poorly;
    // without this the first query head of a group waited on every row.
    const int64_t next_end = std::min(end, t0 + 2 * kAttentionKeyTile);
    for (int64_t p = t0 + kAttentionKeyTile; p < next_end; ++p) {
      const auto* k_row = reinterpret_cast<const char*>(KRow(kv, p));
      const auto* v_row = reinterpret_cast<const char*>(VRow(kv, p));
      for (int64_t b = 0; b < hd * 4; b += 64) {
        _mm_prefetch(k_row + b, _MM_HINT_T1);
        _mm_prefetch(v_row + b, _MM_HINT_T1);
      }
    }
    for (int64_t i = 0; i < q.n_q; ++i) {
      const float* qi = q.q + i * hd;
      for (int64_t j = 0; j < n; j += 8) {
        __m512 dots[8];
        DotLanes8(qi, k_rows + j, hd, dots);
        _mm_store_ps(scores + j, _mm_mul_ps(SumLanes4(dots[0], dots[1], dots[2], dots[3]),
                                            _mm512_castps512_ps128(scale)));
        _mm_store_ps(scores + j + 4, _mm_mul_ps(SumLanes4(dots[4], dots[5], dots[6], dots[7]),
                                                _mm512_castps512_ps128(scale)));
      }
      // Scores of the tile as two 16-lane vectors; lanes past n are -inf.
      const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
      const __mmask16 m0 = TailMask(n), m1 = TailMask(std::max<int64_t>(0, n - 16));
      const __m512 s0 = _mm512_mask_loadu_ps(neg_inf, m0, scores);
      const __m512 s1 = n > 16 ? _mm512_mask_loadu_ps(neg_inf, m1, scores + 16) : neg_inf;
      const float tile_max = _mm512_reduce_max_ps(_mm512_max_ps(s0, s1));
      const float new_max = std::max(state.max[i], tile_max);
      const float correction = std::exp(state.max[i] - new_max);
      const __m512 vmax = _mm512_set1_ps(new_max);
      const __m512 p0 = _mm512_maskz_mov_ps(m0, ExpAvx512(_mm512_sub_ps(s0, vmax)));
      const __m512 p1 = _mm512_maskz_mov_ps(n > 16 ? m1 : 0, ExpAvx512(_mm512_sub_ps(s1, vmax)));
      _mm512_store_ps(scores, p0);
      _mm512_store_ps(scores + 16, p1);
      state.max[i] = new_max;
      state.sum[i] = state.sum[i] * correction + _mm512_reduce_add_ps(_mm512_add_ps(p0, p1));

      float* acc = state.acc + i * hd;
      const __m512 corr = _mm512_set1_ps(correction);
      for (int64_t off = 0; off < hd; off += 128) {  // 8 chunks (16 accumulators) at a time
        const int64_t width = std::min<int64_t>(128, hd - off);
        kAccumulate[(width + 15) / 16 - 1](acc + off, width, scores, v_rows, off, n, corr);
      }
    }
  }
}

}  // namespace deepinfer::cpu
