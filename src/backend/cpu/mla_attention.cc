#include "backend/cpu/mla_attention.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/dot.h"
#include "backend/cpu/parallel_for.h"
#include "backend/cpu/row_dot.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {

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
  ParallelForCost(pool, n_tokens * nh, cost, [&](int64_t begin, int64_t end, int) {
    // A 16- or 8-bit cache: the rows lo..pos of the current query token,
    // decoded to f32 once and shared by its heads (a thread's range holds
    // consecutive (token, head) pairs), not once per head and pass.
    thread_local std::vector<float> scores, pe_scores, q_lat, o_lat, k_nope, decoded, head_uk, head_uv;
    thread_local std::vector<const float*> key_rows, pe_rows, q_lat_rows, q_pe_rows;
    thread_local std::vector<float*> o_lat_rows;
    int64_t decoded_token = -1, expanded_head = -1;
    k_nope.resize(static_cast<size_t>(nope));
    // The heads first..first + count - 1 of token t (absorbed form): all of
    // them read the same latent rows, so scores and value sums run over the
    // rows once per block of heads (DotRowsBlock / AddScaledRowsBlock: each
    // head's bits as its own DotRows / AddScaledRows, whatever the run).
    const auto absorbed_heads = [&](int64_t t, int64_t first, int64_t count, const float* const* rows,
                                    int64_t n_keys) {
      q_lat.resize(static_cast<size_t>(count * lora));
      o_lat.assign(static_cast<size_t>(count * lora), 0.0f);
      scores.resize(static_cast<size_t>(count * n_keys));
      pe_scores.resize(static_cast<size_t>(count * n_keys));
      q_lat_rows.resize(static_cast<size_t>(count));
      q_pe_rows.resize(static_cast<size_t>(count));
      o_lat_rows.resize(static_cast<size_t>(count));
      pe_rows.resize(static_cast<size_t>(n_keys));
      for (int64_t j = 0; j < n_keys; ++j) pe_rows[static_cast<size_t>(j)] = rows[j] + lora;
      for (int64_t h = 0; h < count; ++h) {  // q_lat = W_uk^T q_nope
        const float* q = q_all + t * nh * qk + (first + h) * qk;
        float* q_lat_h = q_lat.data() + h * lora;
        RowsDotF32(w_uk_t.dtype, uk_bytes + (first + h) * lora * uk_row, uk_row, lora, nope, q, q_lat_h);
        q_lat_rows[static_cast<size_t>(h)] = q_lat_h;
        q_pe_rows[static_cast<size_t>(h)] = q + nope;
        o_lat_rows[static_cast<size_t>(h)] = o_lat.data() + h * lora;
      }
      DotRowsBlock(q_lat_rows.data(), count, rows, n_keys, lora, scores.data(), n_keys);
      DotRowsBlock(q_pe_rows.data(), count, pe_rows.data(), n_keys, rd, pe_scores.data(), n_keys);
      for (int64_t h = 0; h < count; ++h) {
        float* score = scores.data() + h * n_keys;
        const float* pe_score = pe_scores.data() + h * n_keys;
        float max_score = -INFINITY;
        for (int64_t j = 0; j < n_keys; ++j) {
          score[j] = (score[j] + pe_score[j]) * s.scale;
          max_score = std::max(max_score, score[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n_keys; ++j) {
          score[j] = std::exp(score[j] - max_score);
          sum += score[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < n_keys; ++j) score[j] *= inv;
      }
      // o = W_uv (sum_j p_j c_j)
      AddScaledRowsBlock(o_lat_rows.data(), scores.data(), n_keys, count, rows, n_keys, lora);
      for (int64_t h = 0; h < count; ++h) {
        float* o = out + t * nh * vd + (first + h) * vd;
        RowsDotF32(w_uv.dtype, uv_bytes + (first + h) * vd * uv_row, uv_row, vd, lora,
                   o_lat.data() + h * lora, o);
      }
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
      if (!wide && decoded_token != t) {
        decoded.resize(static_cast<size_t>(n_keys * kvw));
        for (int64_t j = lo; j <= pos; ++j) {
          RowToF32(latent.dtype, row_bytes(table, j), kvw, decoded.data() + (j - lo) * kvw);
        }
        decoded_token = t;
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
      float max_score = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* cached = key_rows[static_cast<size_t>(j)];
        for (int64_t d = 0; d < nope; ++d) {
          k_nope[static_cast<size_t>(d)] = Dot(w_uk_f32 + d * lora, cached, lora);
        }
        float score = Dot(q, k_nope.data(), nope);
        score = (score + Dot(q + nope, cached + lora, rd)) * s.scale;
        scores[static_cast<size_t>(j)] = score;
        max_score = std::max(max_score, score);
      }
      double sum = 0;
      for (float& score : scores) {
        score = std::exp(score - max_score);
        sum += score;
      }
      const float inv = static_cast<float>(1.0 / sum);
      float* o = out + t * nh * vd + head * vd;
      std::fill(o, o + vd, 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* cached = key_rows[static_cast<size_t>(j)];
        const float p = scores[static_cast<size_t>(j)] * inv;
        for (int64_t d = 0; d < vd; ++d) o[d] += p * Dot(w_uv_f32 + d * lora, cached, lora);
      }
      ++i;
    }
  });
}

}  // namespace deepinfer::cpu
