#include "backend/cpu/mla_attention.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/activation_kernels.h"
#include "backend/cpu/dot.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/parallel_for.h"
#include "backend/cpu/row_to_f32.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// y(h) = W_h x(h) for every head h: x(h) = x + h * x_head and y(h) = y + h *
// y_head, each [n_tokens, k] / [n_tokens, rows] (head-major buffers), one
// MatMulGrouped over all heads (one pool round trip; each head's result is
// that of its own MatMul).
void EachHeadMatMul(std::span<const MlaHeadMatrix> heads, const float* x, int64_t x_head, float* y,
                    int64_t y_head, int64_t n_tokens, ThreadPool& pool) {
  thread_local std::vector<MatMulGroupTarget> targets;
  targets.resize(heads.size());
  for (size_t h = 0; h < heads.size(); ++h) {
    const int64_t hh = static_cast<int64_t>(h);
    targets[h] = {heads[h].w, heads[h].packed, x + hh * x_head, n_tokens, nullptr, y + hh * y_head};
  }
  MatMulGrouped(targets, pool);
}

// Rows [h * rows, (h + 1) * rows) of w for every head, in file layout.
void HeadViews(const TensorView& w, int64_t rows, int64_t nh, std::vector<TensorView>& views,
               std::vector<MlaHeadMatrix>& heads) {
  views.clear();
  for (int64_t h = 0; h < nh; ++h) views.push_back(RowsOf(w, h * rows, rows));
  heads.clear();
  for (const TensorView& v : views) heads.push_back({&v, nullptr});
}

}  // namespace

void MlaAttention(const float* q_all, int64_t n_tokens, const int64_t* positions,
                  const std::vector<const std::vector<int32_t>*>& block_tables, const PagedKvLayer& kv,
                  const TensorView& w_uk_t, const TensorView& w_uv, std::span<const MlaHeadMatrix> uk_heads,
                  std::span<const MlaHeadMatrix> uv_heads, const MlaShape& s, ThreadPool& pool, float* out) {
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
  // The buffers are head-major ([nh][n_tokens][dim], the calling thread's),
  // so each head's projection is one MatMul over its tokens.
  thread_local std::vector<float> q_nope_buffer, q_lat_buffer, o_lat_buffer, out_buffer;
  thread_local std::vector<TensorView> uk_views, uv_views;
  thread_local std::vector<MlaHeadMatrix> uk_file, uv_file;
  float* q_lat_all = nullptr;
  float* o_lat_all = nullptr;
  if (s.absorb) {
    if (uk_heads.empty()) {
      HeadViews(w_uk_t, lora, nh, uk_views, uk_file);
      uk_heads = uk_file;
    }
    if (uv_heads.empty()) {
      HeadViews(w_uv, vd, nh, uv_views, uv_file);
      uv_heads = uv_file;
    }
    DI_CHECK(static_cast<int64_t>(uk_heads.size()) == nh && static_cast<int64_t>(uv_heads.size()) == nh);
    q_nope_buffer.resize(static_cast<size_t>(nh * n_tokens * nope));
    q_lat_buffer.resize(static_cast<size_t>(nh * n_tokens * lora));
    o_lat_buffer.resize(static_cast<size_t>(nh * n_tokens * lora));
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t h = 0; h < nh; ++h) {
        const float* src = q_all + t * nh * qk + h * qk;
        std::copy(src, src + nope, q_nope_buffer.data() + (h * n_tokens + t) * nope);
      }
    }
    q_lat_all = q_lat_buffer.data();
    o_lat_all = o_lat_buffer.data();
    EachHeadMatMul(uk_heads, q_nope_buffer.data(), n_tokens * nope, q_lat_all, n_tokens * lora, n_tokens,
                   pool);
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
      scores.resize(static_cast<size_t>(count * n_keys));
      pe_scores.resize(static_cast<size_t>(count * n_keys));
      q_lat_rows.resize(static_cast<size_t>(count));
      q_pe_rows.resize(static_cast<size_t>(count));
      o_lat_rows.resize(static_cast<size_t>(count));
      pe_rows.resize(static_cast<size_t>(n_keys));
      for (int64_t j = 0; j < n_keys; ++j) pe_rows[static_cast<size_t>(j)] = rows[j] + lora;
      for (int64_t h = 0; h < count; ++h) {
        const int64_t row = (first + h) * n_tokens + t;  // head-major
        q_lat_rows[static_cast<size_t>(h)] = q_lat_all + row * lora;
        q_pe_rows[static_cast<size_t>(h)] = q_all + t * nh * qk + (first + h) * qk + nope;
        o_lat_rows[static_cast<size_t>(h)] = o_lat_all + row * lora;
        std::fill(o_lat_all + row * lora, o_lat_all + (row + 1) * lora, 0.0f);
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
  if (s.absorb) {
    out_buffer.resize(static_cast<size_t>(nh * n_tokens * vd));
    EachHeadMatMul(uv_heads, o_lat_all, n_tokens * lora, out_buffer.data(), n_tokens * vd, n_tokens, pool);
    for (int64_t h = 0; h < nh; ++h) {
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* src = out_buffer.data() + (h * n_tokens + t) * vd;
        std::copy(src, src + vd, out + t * nh * vd + h * vd);
      }
    }
  }
}

}  // namespace deepinfer::cpu
