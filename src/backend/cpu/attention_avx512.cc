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
#include <vector>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/attention_dim_major_avx512.h"
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

// Queries scored together: 4 x 4 keys = 16 accumulators.
constexpr int kQueriesPerScoreBlock = 4;

}  // namespace

void AttendKeysAvx512(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                      AttentionState state) {
  AttendKeysForTokensAvx512(q, AttentionTokens{1, 0, &end, &state}, kv, begin);
}

void AttendKeysForTokensAvx512(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                               int64_t begin) {
  const int64_t hd = q.head_dim;
  if (hd == 8 && kv.k_dim_stride > 0) {  // dim-major K: f32, f16 or bf16
    return AttendKeysForTokensHeadDim8Avx512(q, tokens, kv, begin);
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
