// Portable online-softmax attention and the state merge (see attention_kernel.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/isa.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {

void ResetAttentionState(int64_t n_q, int64_t head_dim, AttentionState s) {
  std::fill(s.max, s.max + n_q, -INFINITY);
  std::fill(s.sum, s.sum + n_q, 0.0f);
  std::fill(s.acc, s.acc + n_q * head_dim, 0.0f);
}

bool IsKvCacheDType(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ8_0;
}

const float* KvRowAsF32(DType dtype, const uint8_t* row, int64_t n, float* scratch) {
  if (dtype == DType::kF32) return reinterpret_cast<const float*>(row);
  DequantizeRow(dtype, row, scratch, n);
  return scratch;
}

const float* KeyAsF32(const PagedKvView& kv, const uint8_t* k, int64_t head_dim, float* scratch) {
  if (kv.k_dim_stride == 0) return KvRowAsF32(kv.dtype, k, head_dim, scratch);
  for (int64_t d = 0; d < head_dim; ++d) DequantizeRow(kv.dtype, k + d * kv.k_dim_stride, scratch + d, 1);
  return scratch;
}

void AttendKeysScalar(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                      AttentionState state) {
  const int64_t hd = q.head_dim;
  float scores[kAttentionKeyTile];
  const float* k_rows[kAttentionKeyTile];
  const float* v_rows[kAttentionKeyTile];
  // A 16- or 8-bit tile's rows decoded to f32, K then V: per thread, grown
  // to the largest head_dim seen. Only one tile is ever decoded at a time.
  thread_local std::vector<float> tile;
  const bool decode = kv.dtype != DType::kF32 || kv.k_dim_stride > 0;
  if (decode && tile.size() < static_cast<size_t>(2 * kAttentionKeyTile * hd)) {
    tile.resize(static_cast<size_t>(2 * kAttentionKeyTile * hd));
  }
  for (int64_t t0 = begin; t0 < end; t0 += kAttentionKeyTile) {
    const int64_t n = std::min(kAttentionKeyTile, end - t0);
    int64_t j = 0;
    ForEachKvRow(kv, t0, n, [&](const uint8_t* k, const uint8_t* v) {
      if (!decode) {
        // Read in place; the tile stays empty (and offsetting its null data()
        // would be undefined behaviour).
        k_rows[j] = reinterpret_cast<const float*>(k);
        v_rows[j] = reinterpret_cast<const float*>(v);
      } else {
        k_rows[j] = KeyAsF32(kv, k, hd, tile.data() + j * hd);
        v_rows[j] = KvRowAsF32(kv.dtype, v, hd, tile.data() + (kAttentionKeyTile + j) * hd);
      }
      ++j;
    });
    for (int64_t i = 0; i < q.n_q; ++i) {
      const float* qi = q.q + i * hd;
      float tile_max = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; ++d) dot += qi[d] * k_rows[j][d];
        scores[j] = dot * q.scale;
        if (q.softcap > 0.0f) scores[j] = q.softcap * std::tanh(scores[j] / q.softcap);
        tile_max = std::max(tile_max, scores[j]);
      }
      const float new_max = std::max(state.max[i], tile_max);
      // exp(-inf) = 0 makes the first tile's correction vanish.
      const float correction = std::exp(state.max[i] - new_max);
      float tile_sum = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        scores[j] = std::exp(scores[j] - new_max);
        tile_sum += scores[j];
      }
      state.max[i] = new_max;
      state.sum[i] = state.sum[i] * correction + tile_sum;
      float* acc = state.acc + i * hd;
      for (int64_t d = 0; d < hd; ++d) {
        float a = acc[d] * correction;
        for (int64_t j = 0; j < n; ++j) a += scores[j] * v_rows[j][d];
        acc[d] = a;
      }
    }
  }
}

void AttendKeys(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                AttentionState state) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    AttendKeysAvx512(q, kv, begin, end, state);
  } else {
    AttendKeysScalar(q, kv, begin, end, state);
  }
}

// The portable kernel has no per-tile work worth sharing: token by token.
void AttendKeysForTokensScalar(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                               int64_t begin) {
  for (int64_t i = 0; i < tokens.n; ++i) {
    AttentionQuery qi = q;
    qi.q = q.q + i * tokens.q_stride;
    AttendKeysScalar(qi, kv, begin, tokens.end[i], tokens.state[i]);
  }
}

void AttendKeysForTokens(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                         int64_t begin) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    AttendKeysForTokensAvx512(q, tokens, kv, begin);
  } else {
    AttendKeysForTokensScalar(q, tokens, kv, begin);
  }
}

void PrefetchKeys(const PagedKvView& kv, int64_t head_dim, int64_t begin, int64_t end) {
  const int64_t row_bytes = RowBytes(kv.dtype, head_dim);
  if (kv.k_dim_stride == 0) {
    ForEachKvRow(kv, begin, end - begin, [&](const uint8_t* k, const uint8_t* v) {
      for (int64_t b = 0; b < row_bytes; b += 64) {
        __builtin_prefetch(k + b, 0, 2);  // prefetcht1: into L2
        __builtin_prefetch(v + b, 0, 2);
      }
    });
    return;
  }
  // Dim-major K: every key of a block touches each of its dimension rows,
  // so the blocks' whole K regions (head_dim rows of the block's slots).
  ForEachKvRow(kv, begin, end - begin, [&](const uint8_t*, const uint8_t* v) {
    for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(v + b, 0, 2);
  });
  if (end <= begin) return;
  const int64_t k_block_bytes = (head_dim - 1) * kv.k_dim_stride + kv.block_size * kv.slot_stride;
  for (int64_t block = begin / kv.block_size; block <= (end - 1) / kv.block_size; ++block) {
    const uint8_t* k = kv.k + kv.block_table[block] * kv.block_stride;
    for (int64_t b = 0; b < k_block_bytes; b += 64) __builtin_prefetch(k + b, 0, 2);
  }
}

void MergeAttentionState(int64_t n_q, int64_t head_dim, AttentionState a, const AttentionState& b) {
  for (int64_t i = 0; i < n_q; ++i) {
    const float m = std::max(a.max[i], b.max[i]);
    if (m == -INFINITY) continue;  // neither saw a key
    const float ca = std::exp(a.max[i] - m), cb = std::exp(b.max[i] - m);
    a.max[i] = m;
    a.sum[i] = a.sum[i] * ca + b.sum[i] * cb;
    float* acc = a.acc + i * head_dim;
    const float* bacc = b.acc + i * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) acc[d] = acc[d] * ca + bacc[d] * cb;
  }
}

void FinishAttention(int64_t n_q, int64_t head_dim, const AttentionState& s, float* out) {
  for (int64_t i = 0; i < n_q; ++i) {
    const float inv = s.sum[i] > 0.0f ? 1.0f / s.sum[i] : 0.0f;
    for (int64_t d = 0; d < head_dim; ++d) out[i * head_dim + d] = s.acc[i * head_dim + d] * inv;
  }
}

}  // namespace deepinfer::cpu
