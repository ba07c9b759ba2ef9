#include "backend/cpu/mla_attention.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/activation_kernels.h"
#include "backend/cpu/dot.h"
#include "backend/cpu/parallel_for.h"
#include "backend/cpu/row_dot.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// y(t, h) = W_h x(t, h) for every token t and head h, where W_h is `rows`
// rows of w from row h * rows and x(t, h) = x + t * x_token + h * x_head (y
// likewise): items of (head, up to kTokens tokens) over the pool, each one
// RowsDotF32Multi - the bits of one RowsDotF32 per (token, head), whatever
// the items. In a prefill a head's weights are read once per item, not once
// per token.
void EachHeadRowsDot(const TensorView& w, int64_t rows, int64_t nh, int64_t n_tokens, const float* x,
                     int64_t x_token, int64_t x_head, float* y, int64_t y_token, int64_t y_head,
                     ThreadPool& pool) {
  constexpr int64_t kTokens = 16;
  const int64_t k = w.cols(), w_row = RowBytes(w.dtype, k);
  const int64_t blocks = (n_tokens + kTokens - 1) / kTokens;
  const auto* bytes = static_cast<const uint8_t*>(w.data);
  ParallelForCost(pool, nh * blocks, nh * n_tokens * rows * k, [&](int64_t begin, int64_t end, int) {
    const float* xs[kTokens];
    float* ys[kTokens];
    for (int64_t i = begin; i < end; ++i) {
      const int64_t h = i / blocks, t0 = (i % blocks) * kTokens, count = std::min(kTokens, n_tokens - t0);
      for (int64_t t = 0; t < count; ++t) {
        xs[t] = x + (t0 + t) * x_token + h * x_head;
        ys[t] = y + (t0 + t) * y_token + h * y_head;
      }
      RowsDotF32Multi(w.dtype, bytes + h * rows * w_row, w_row, rows, k, xs, count, ys);
    }
  });
}

}  // namespace

void MlaAttention(const float* q_all, int64_t n_tokens, const int64_t* positions,
                  const std::vector<const std::vector<int32_t>*>& block_tables, const PagedKvLayer& kv,
                  const TensorView& w_uk_t, const TensorView& w_uv, const MlaShape& s, ThreadPool& pool,
                  float* out) {
  const int64_t nh = s.num_heads, nope = s.nope, rd = s.rope, vd = s.v_dim, lora = s.lora;
  const int64_t qk = nope + rd, kvw = lora + rd;
  DI_CHECK(w_uk_t.rows() == nh * lora && w_uk_t.cols() == nope);
  DI_CHECK(w_uv.rows() == nh * vd && w_uv.cols() == lora);
  const int64_t uk_row = RowBytes(w_uk_t.dtype, nope), uv_row = RowBytes(w_uv.dtype, lora);
  const auto* uk_bytes = static_cast<const uint8_t*>(w_uk_t.data);
  const auto* uv_bytes = static_cast<const uint8_t*>(w_uv.data);
  const PagedKvView& latent = kv.head0;
  const int64_t bs = latent.block_size;
  const auto row_bytes = [&](const std::vector<int32_t>& table, int64_t j) {
    return latent.k + table[static_cast<size_t>(j / bs)] * latent.block_stride +
           (j % bs) * latent.slot_stride;
  };
  const bool wide = latent.dtype == DType::kF32;
  int64_t cost = 0;
  for (int64_t t = 0; t < n_tokens; ++t) cost += (positions[t] + 1) * nh * kvw * 2;
  // The absorbed form in three passes: q_lat = W_uk^T q_nope for every
  // (token, head); attention in the latent space (o_lat); out = W_uv o_lat.
  // Each buffer f32 [n_tokens, nh, lora], the calling thread's.
  thread_local std::vector<float> q_lat_buffer, o_lat_buffer;
  float* q_lat_all = nullptr;
  float* o_lat_all = nullptr;
  if (s.absorb) {
    q_lat_buffer.resize(static_cast<size_t>(n_tokens * nh * lora));
    o_lat_buffer.resize(static_cast<size_t>(n_tokens * nh * lora));
    q_lat_all = q_lat_buffer.data();
    o_lat_all = o_lat_buffer.data();
    EachHeadRowsDot(w_uk_t, lora, nh, n_tokens, q_all, nh * qk, qk, q_lat_all, nh * lora, lora, pool);
  }
  ParallelForCost(pool, n_tokens * nh, cost, [&](int64_t begin, int64_t end, int) {
    // A 16- or 8-bit cache: rows decoded to f32 once per range and shared by
    // the heads of a token and by the next tokens of its sequence (a range
    // holds consecutive (token, head) pairs; in a prefill token t + 1 needs
    // one row more than token t). `decoded` holds the rows decoded_lo ..
    // decoded_end - 1 of the sequence with block table decoded_table.
    thread_local std::vector<float> scores, pe_scores, k_nope, decoded, head_uk, head_uv;
    thread_local std::vector<const float*> key_rows, pe_rows, q_lat_rows, q_pe_rows;
    thread_local std::vector<float*> o_lat_rows;
    const std::vector<int32_t>* decoded_table = nullptr;
    int64_t decoded_lo = 0, decoded_end = 0, expanded_head = -1;
    k_nope.resize(static_cast<size_t>(nope));
    // The heads first..first + count - 1 of token t (absorbed form): all of
    // them read the same latent rows, so scores and value sums run over the
    // rows once per block of heads (DotRowsBlock / AddScaledRowsBlock: each
    // head's bits as its own DotRows / AddScaledRows, whatever the run).
    const auto absorbed_heads = [&](int64_t t, int64_t first, int64_t count, const float* const* rows,
                                    int64_t n_keys) {
      float* q_lat = q_lat_all + (t * nh + first) * lora;
      float* o_lat = o_lat_all + (t * nh + first) * lora;
      std::fill(o_lat, o_lat + count * lora, 0.0f);
      scores.resize(static_cast<size_t>(count * n_keys));
      pe_scores.resize(static_cast<size_t>(count * n_keys));
      q_lat_rows.resize(static_cast<size_t>(count));
      q_pe_rows.resize(static_cast<size_t>(count));
      o_lat_rows.resize(static_cast<size_t>(count));
      pe_rows.resize(static_cast<size_t>(n_keys));
      for (int64_t j = 0; j < n_keys; ++j) pe_rows[static_cast<size_t>(j)] = rows[j] + lora;
      for (int64_t h = 0; h < count; ++h) {
        q_lat_rows[static_cast<size_t>(h)] = q_lat + h * lora;
        q_pe_rows[static_cast<size_t>(h)] = q_all + t * nh * qk + (first + h) * qk + nope;
        o_lat_rows[static_cast<size_t>(h)] = o_lat + h * lora;
      }
      DotRowsBlock(q_lat_rows.data(), count, rows, n_keys, lora, scores.data(), n_keys);
      DotRowsBlock(q_pe_rows.data(), count, pe_rows.data(), n_keys, rd, pe_scores.data(), n_keys);
      for (int64_t h = 0; h < count; ++h) {
        float* score = scores.data() + h * n_keys;
        const float* pe_score = pe_scores.data() + h * n_keys;
        for (int64_t j = 0; j < n_keys; ++j) score[j] = (score[j] + pe_score[j]) * s.scale;
        Softmax(score, n_keys);  // the f32 exp, double sum, one f32 scale this kernel always used
      }
      // o_lat = sum_j p_j c_j (o = W_uv o_lat in the third pass)
      AddScaledRowsBlock(o_lat_rows.data(), scores.data(), n_keys, count, rows, n_keys, lora);
    };
    for (int64_t i = begin; i < end;) {
      const int64_t t = i / nh, head = i % nh;
      const int64_t run = std::min(end - i, nh - head);  // this range's heads of token t
      const float* q = q_all + t * nh * qk + head * qk;
      const uint8_t* uk = uk_bytes + head * lora * uk_row;  // the head's W_uk^T rows
      const uint8_t* uv = uv_bytes + head * vd * uv_row;    // the head's W_uv rows
      const int64_t pos = positions[t];
      const int64_t lo = s.window > 0 ? std::max<int64_t>(0, pos - s.window + 1) : 0;
      const int64_t n_keys = pos - lo + 1;
      const std::vector<int32_t>& table = *block_tables[static_cast<size_t>(t)];
      if (!wide) {
        if (decoded_table != &table || decoded_lo != lo) {
          decoded_table = &table;
          decoded_lo = decoded_end = lo;
        }
        if (decoded_end <= pos) {
          decoded.resize(static_cast<size_t>(n_keys * kvw));  // keeps rows lo .. decoded_end - 1
          for (int64_t j = decoded_end; j <= pos; ++j) {
            RowToF32(latent.dtype, row_bytes(table, j), kvw, decoded.data() + (j - lo) * kvw);
          }
          decoded_end = pos + 1;
        }
      }
      // Row j of the sequence as f32.
      const auto row = [&](int64_t j) {
        return wide ? reinterpret_cast<const float*>(row_bytes(table, j)) : decoded.data() + (j - lo) * kvw;
      };
      key_rows.resize(static_cast<size_t>(n_keys));
      for (int64_t j = lo; j <= pos; ++j) key_rows[static_cast<size_t>(j - lo)] = row(j);
      if (s.absorb) {
        absorbed_heads(t, head, run, key_rows.data(), n_keys);
        i += run;
        continue;
      }
      if (expanded_head != head) {
        // The naive form reads the head's W_uk [nope][lora] and W_uv
        // [v_dim][lora] as f32 (a test path: once per (token, head) at most).
        head_uk.resize(static_cast<size_t>(nope * lora));
        head_uv.resize(static_cast<size_t>(vd * lora));
        for (int64_t r = 0; r < lora; ++r) {
          DequantizeRow(w_uk_t.dtype, uk + r * uk_row, k_nope.data(), nope);
          for (int64_t d = 0; d < nope; ++d)
            head_uk[static_cast<size_t>(d * lora + r)] = k_nope[static_cast<size_t>(d)];
        }
        for (int64_t d = 0; d < vd; ++d) {
          DequantizeRow(w_uv.dtype, uv + d * uv_row, head_uv.data() + d * lora, lora);
        }
        expanded_head = head;
      }
      const float* w_uk_f32 = head_uk.data();
      const float* w_uv_f32 = head_uv.data();
      // naive: each key expanded
      scores.resize(static_cast<size_t>(n_keys));
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* cached = key_rows[static_cast<size_t>(j)];
        for (int64_t d = 0; d < nope; ++d) {
          k_nope[static_cast<size_t>(d)] = Dot(w_uk_f32 + d * lora, cached, lora);
        }
        const float score = Dot(q, k_nope.data(), nope);
        scores[static_cast<size_t>(j)] = (score + Dot(q + nope, cached + lora, rd)) * s.scale;
      }
      Softmax(scores.data(), n_keys);
      float* o = out + t * nh * vd + head * vd;
      std::fill(o, o + vd, 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* cached = key_rows[static_cast<size_t>(j)];
        const float p = scores[static_cast<size_t>(j)];
        for (int64_t d = 0; d < vd; ++d) o[d] += p * Dot(w_uv_f32 + d * lora, cached, lora);
      }
      ++i;
    }
  });
  if (s.absorb) EachHeadRowsDot(w_uv, vd, nh, n_tokens, o_lat_all, nh * lora, lora, out, nh * vd, vd, pool);
}

}  // namespace deepinfer::cpu
