// AVX-512 online-softmax attention (see attention_kernel.h). Same tiling and
// update order as AttendKeysScalar; dot products and the tile's exp run 16
// lanes wide (any head_dim: the last chunk is masked).
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/vec_exp_avx512.h"

namespace deepinfer::cpu {

namespace {

inline __mmask16 TailMask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << remaining) - 1);
}

// q . k over head_dim floats: 16-lane products accumulated chunk by chunk,
// then one fixed-order horizontal sum.
inline float Dot(const float* q, const float* k, int64_t hd) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t d = 0;
  for (; d + 32 <= hd; d += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(k + d), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + d + 16), _mm512_loadu_ps(k + d + 16), acc1);
  }
  for (; d < hd; d += 16) {
    const __mmask16 m = TailMask(hd - d);
    acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, k + d), acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

}  // namespace

void AttendKeysAvx512(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                      AttentionState state) {
  const int64_t hd = q.head_dim;
  alignas(64) float scores[kAttentionKeyTile];
  const float* k_rows[kAttentionKeyTile];
  const float* v_rows[kAttentionKeyTile];
  for (int64_t t0 = begin; t0 < end; t0 += kAttentionKeyTile) {
    const int64_t n = std::min(kAttentionKeyTile, end - t0);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t p = t0 + j;
      const int64_t block = kv.block_table[p / kv.block_size], slot = p % kv.block_size;
      k_rows[j] = kv.k + block * kv.block_stride + slot * kv.slot_stride;
      v_rows[j] = kv.v + block * kv.v_block_stride + slot * kv.v_slot_stride;
    }
    for (int64_t i = 0; i < q.n_q; ++i) {
      const float* qi = q.q + i * hd;
      for (int64_t j = 0; j < n; ++j) scores[j] = Dot(qi, k_rows[j], hd) * q.scale;
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
      for (int64_t d = 0; d < hd; d += 16) {
        const __mmask16 m = TailMask(hd - d);
        __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, acc + d), corr);
        for (int64_t j = 0; j < n; ++j) {
          a = _mm512_fmadd_ps(_mm512_set1_ps(scores[j]), _mm512_maskz_loadu_ps(m, v_rows[j] + d), a);
        }
        _mm512_mask_storeu_ps(acc + d, m, a);
      }
    }
  }
}

}  // namespace deepinfer::cpu
