// Multi-head latent attention (DeepSeek-V2/V3), over a KV cache that holds
// per token only [c_kv (kv_lora_rank) | k_pe (qk_rope_head_dim)]:
//
//   q      = q_proj(x)  or  q_b_proj(RMSNorm(q_a_proj(x)))   -> per head [q_nope | q_pe]
//   kv_a   = kv_a_proj_with_mqa(x) = [c | k_pe];  c_kv = RMSNorm(c)   (cached with roped k_pe)
//   k_h    = [W_uk_h c_kv | k_pe],  v_h = W_uv_h c_kv      (kv_b_proj rows of head h: W_uk_h then W_uv_h)
//   out    = o_proj(concat_h softmax(scale * q_h . k_h) . v_h)
//
// Absorbed form (the default): q_nope_h . (W_uk_h c) = (W_uk_h^T q_nope_h) . c and
// sum_j p_j W_uv_h c_j = W_uv_h (sum_j p_j c_j), so attention runs in the
// latent space and never expands per-head keys/values. The naive form
// expands them per key; both give the same result (tested).
//
// RoPE on the rope dims pairs (2i, 2i+1) (DeepSeek's HF code de-interleaves
// then rotates halves: the same dot products). YaRN (rope_scaling "yarn"):
// blended frequencies, cos/sin times mscale(factor, mscale) /
// mscale(factor, mscale_all_dim), softmax scale times mscale(factor,
// mscale_all_dim)^2, with mscale(s, m) = 1 + 0.1 m ln(s) for s > 1.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/forward_batch.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/token_plan.h"
#include "model/weight_binder.h"

namespace deepinfer {

struct MlaWeights {
  ops::Matrix q;                 // [heads * qk_head_dim, hidden] (q_lora_rank == 0)
  ops::Matrix q_a;               // [q_lora_rank, hidden]
  std::vector<float> q_a_norm;   // f32 [q_lora_rank]
  ops::Matrix q_b;               // [heads * qk_head_dim, q_lora_rank]
  ops::Matrix kv_a;              // [kv_lora_rank + qk_rope_head_dim, hidden]
  std::vector<float> kv_a_norm;  // f32 [kv_lora_rank]
  // kv_b_proj's two halves for the absorbed attention: the file's bytes when
  // they are GGUF attn_k_b / attn_v_b in a type the kernel reads (f32, q8_0,
  // q4_0), else f32 copies in `owned` (the views point into it).
  TensorView w_uk_t;  // [heads * kv_lora_rank, qk_nope_head_dim]: per head W_uk transposed
  TensorView w_uv;    // [heads * v_head_dim, kv_lora_rank]: per head W_uv
  std::shared_ptr<const std::vector<float>> owned;
  // Each head's rows of w_uk_t / w_uv as a matrix of its own, which the
  // absorbed attention multiplies as a MatMul (packed with the others).
  std::vector<ops::Matrix> uk_heads, uv_heads;
  ops::Matrix o;  // [hidden, heads * v_head_dim]
};

// HF `self_attn.*` names; GGUF llama.cpp deepseek2 names (attn_q, attn_q_a,
// attn_q_a_norm, attn_q_b, attn_kv_a_mqa, attn_kv_a_norm, attn_output, and
// either the split attn_k_b [heads, kv_lora_rank, qk_nope_head_dim] (W_uk
// transposed per head) + attn_v_b [heads, v_head_dim, kv_lora_rank] that
// current llama.cpp converters write, or the legacy unsplit attn_kv_b).
Status BindMlaWeights(const WeightBinder& b, const ModelConfig& c, int64_t layer, MlaWeights& w);

// RoPE of the MLA rope dims (plain or YaRN) and the attention's softmax scale.
class MlaRope {
 public:
  static StatusOr<MlaRope> Create(const ModelConfig& c);
  // Rotates pairs (2i, 2i+1) of `n_heads` vectors of rope_dim floats, `stride` apart.
  void Apply(float* x, int64_t n_heads, int64_t stride, int64_t pos) const;
  float softmax_scale() const { return softmax_scale_; }

 private:
  std::vector<double> inv_freq_;  // [rope_dim / 2]
  double cos_sin_scale_ = 1.0;
  float softmax_scale_ = 1.0f;
};

class MlaAttention {
 public:
  MlaAttention(const ModelConfig& c, MlaWeights w, const MlaRope* rope, int64_t window)
      : c_(c), w_(std::move(w)), rope_(rope), window_(window) {}
  // out f32 [T, hidden] from the normed input xn f32 [T, hidden]; writes the
  // tokens' latent rows into cache layer `kv_layer` before attending.
  void Forward(const ForwardBatch& batch, const TokenPlan& plan, const float* xn, KvCache& kv,
               int64_t kv_layer, ThreadPool& pool, float* out);
  void set_absorb(bool absorb) { absorb_ = absorb; }
  // q or q_a / q_b, kv_a, o and the per-head W_uk / W_uv (the whole w_uk_t /
  // w_uv, which the naive form reads, stay as they are).
  void VisitMatrices(const std::function<void(ops::Matrix&)>& visit) {
    for (ops::Matrix* t : {&w_.q, &w_.q_a, &w_.q_b, &w_.kv_a, &w_.o}) {
      if (t->data != nullptr) visit(*t);
    }
    for (ops::Matrix& m : w_.uk_heads) visit(m);
    for (ops::Matrix& m : w_.uv_heads) visit(m);
  }

 private:
  const ModelConfig c_;
  MlaWeights w_;
  const MlaRope* rope_;
  int64_t window_;
  bool absorb_ = true;
  std::vector<float> qa_, q_, kva_, attn_;
};

}  // namespace deepinfer
