// AVX-512 online-softmax attention (see attention_kernel.h): the same tiles,
// the same f32 decoding of 16- and 8-bit cache rows and the same
// online-softmax update as AttendKeysScalar, with the two inner products
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

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/simd_avx512.h"
#include "backend/cpu/vec_exp_avx512.h"

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
// product per element).
inline void DecodeRow(DType dtype, const uint8_t* src, float* dst, int64_t hd) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16: {
      const bool f16 = dtype == DType::kF16;
      for (int64_t d = 0; d < hd; d += 16) {
        const __mmask16 m = TailMask(hd - d);
        _mm512_mask_storeu_ps(dst + d, m, f16 ? LoadF16AsF32(src + 2 * d, m) : LoadBf16AsF32(src + 2 * d, m));
      }
      return;
    }
    case DType::kQ8_0:  // hd is a multiple of 32: blocks of [f16 scale][32 x int8]
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
      return;
    default:  // f32
      CopyRow(dst, reinterpret_cast<const float*>(src), hd);
      return;
  }
}

// q . k_u for 8 keys, each left in 16 lanes (summed by the caller): one
// pass over head_dim with 8 independent fma chains (a key at a time was one
// 4-deep chain per key, latency-bound).
// The u loops must be unrolled: otherwise GCC keeps acc[] in memory and
// every fma waits on a store-to-load round trip (that was half the kernel).
inline void DotLanes8(const float* q, const float* const* k, int64_t hd, __m512* acc) {
#pragma GCC unroll 8
  for (int u = 0; u < 8; ++u) acc[u] = _mm512_setzero_ps();
  int64_t d = 0;
  for (; d + 16 <= hd; d += 16) {
    const __m512 qv = _mm512_loadu_ps(q + d);
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) acc[u] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k[u] + d), acc[u]);
  }
  if (d < hd) {
    const __mmask16 m = TailMask(hd - d);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
#pragma GCC unroll 8
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
  AttendKeysForTokensAvx512(q, AttentionTokens{1, 0, &end, &state}, kv, begin);
}

void AttendKeysForTokensAvx512(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                               int64_t begin) {
  const int64_t hd = q.head_dim;
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
  const bool decode_tile =
      kv.dtype != DType::kF32 || (n_x > 1 && (kv.slot_stride != f32_row || kv.v_slot_stride != f32_row));
  if (decode_tile && tile.size() < static_cast<size_t>(2 * kAttentionKeyTile * hd)) {
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
    if (decode_tile) {
      float* tile_k = tile.data();
      float* tile_v = tile_k + kAttentionKeyTile * hd;
      int64_t j = 0;
      ForEachKvRow(kv, t0, n, [&](const uint8_t* k, const uint8_t* v) {
        DecodeRow(kv.dtype, k, tile_k + j * hd, hd);
        DecodeRow(kv.dtype, v, tile_v + j * hd, hd);
        k_rows[j] = tile_k + j * hd;
        v_rows[j] = tile_v + j * hd;
        ++j;
      });
    } else {
      int64_t j = 0;
      ForEachKvRow(kv, t0, n, [&](const uint8_t* k, const uint8_t* v) {
        k_rows[j] = reinterpret_cast<const float*>(k);
        v_rows[j++] = reinterpret_cast<const float*>(v);
      });
    }
    // Keys past n of a short tile: dot products of key 0 again, computed in
    // groups of 8 and then masked out of the softmax.
    for (int64_t j = n; j < kAttentionKeyTile; ++j) k_rows[j] = k_rows[0];
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
    for (int64_t x = 0; x < n_x; ++x) {  // 1: scaled scores q_x . k_j
      const int64_t nx = keys_of(x, t0);
      const float* qx = q.q + (x / q.n_q) * tokens.q_stride + (x % q.n_q) * hd;
      float* sc = scores + x * kAttentionKeyTile;
      for (int64_t j = 0; j < nx; j += 8) {
        __m512 dots[8];
        DotLanes8(qx, k_rows + j, hd, dots);
        _mm_store_ps(
            sc + j, _mm_mul_ps(SumLanes4(dots[0], dots[1], dots[2], dots[3]), _mm512_castps512_ps128(scale)));
        _mm_store_ps(sc + j + 4, _mm_mul_ps(SumLanes4(dots[4], dots[5], dots[6], dots[7]),
                                            _mm512_castps512_ps128(scale)));
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
    for (int64_t x = 0; x < n_x; ++x) {  // 3: acc = acc * correction + p . V
      const int64_t nx = keys_of(x, t0);
      if (nx <= 0) continue;
      float* acc = tokens.state[x / q.n_q].acc + (x % q.n_q) * hd;
      const __m512 corr = _mm512_set1_ps(correction[x]);
      for (int64_t off = 0; off < hd; off += 128) {  // 8 chunks (16 accumulators) at a time
        const int64_t width = std::min<int64_t>(128, hd - off);
        kAccumulate[(width + 15) / 16 - 1](acc + off, width, scores + x * kAttentionKeyTile, v_rows, off, nx,
                                           corr);
      }
    }
  }
}

}  // namespace deepinfer::cpu
