// The Llama-style attention sub-block of every GQA decoder layer (the dense
// Llama family, Mixtral / Qwen-MoE, Gemma-2/3, the MTP draft's block): q/k/v projections (+ optional bias,
// Qwen3 / Gemma-3 q/k norm), RoPE, K/V into the paged cache, grouped-query attention (scale
// query_pre_attn_scalar^-0.5 when set, else head_dim^-0.5; Gemma-2's score soft-capping), output projection.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/forward_batch.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/rope.h"
#include "model/token_plan.h"
#include "model/weight_binder.h"

namespace deepinfer {

struct GqaAttentionWeights {
  ops::Matrix q, k, v, o;             // [q_dim, hidden], [kv_dim, hidden] x2, [hidden, q_dim]
  std::vector<float> q_bias, k_bias;  // f32 [q_dim], [kv_dim]; empty when absent
  std::vector<float> v_bias, o_bias;  // f32 [kv_dim], [hidden]; empty when absent
  std::vector<float> q_norm, k_norm;  // f32 [head_dim]; empty unless config.qk_norm
};

// Binds the attention tensors of decoder layer `layer` (names per the
// store's naming, WeightName roles kQ..kKNorm).
Status BindGqaAttention(const WeightBinder& b, const ModelConfig& c, int64_t layer, GqaAttentionWeights& w);

struct GqaScratch {
  std::vector<float> q, k, v, attn;
  std::vector<float> kept_q;  // the kept rows' queries (`keep` below)
  std::vector<int64_t> kept_positions;
};

// out f32 [T, hidden] = Attention(xn) for the planned tokens, where xn is the
// normed input f32 [T, hidden]. Writes the tokens' K/V at cache layer
// `kv_layer` before any token attends. window 0 = full attention.
// With `keep` (token indices, increasing), every token's K/V is still
// written but only the kept tokens attend: out is f32 [keep.size(), hidden],
// row i bit for bit token keep[i]'s row of the full result (attention and
// the output projection are per token).
void GqaAttentionForward(const ModelConfig& c, const GqaAttentionWeights& w, const Rope& rope,
                         int64_t kv_layer, int64_t window, const ForwardBatch& batch, const TokenPlan& plan,
                         const float* xn, KvCache& kv, ThreadPool& pool, GqaScratch& s, float* out,
                         const std::vector<int64_t>* keep = nullptr);

}  // namespace deepinfer
