#include "model/gqa_attention.h"

#include <algorithm>
#include <cmath>

#include "model/ops.h"

namespace deepinfer {

Status BindGqaAttention(const WeightBinder& b, const ModelConfig& c, int64_t l, GqaAttentionWeights& w) {
  const WeightNaming n = b.naming();
  const int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim();
  DI_ASSIGN_OR_RETURN(w.q, b.Matrix(WeightName(n, TensorRole::kQ, l), q, h));
  DI_ASSIGN_OR_RETURN(w.k, b.Matrix(WeightName(n, TensorRole::kK, l), kv, h));
  DI_ASSIGN_OR_RETURN(w.v, b.Matrix(WeightName(n, TensorRole::kV, l), kv, h));
  DI_ASSIGN_OR_RETURN(w.o, b.Matrix(WeightName(n, TensorRole::kO, l), h, q));
  DI_ASSIGN_OR_RETURN(w.q_bias, b.Vector(WeightName(n, TensorRole::kQBias, l), q, c.attention_bias));
  DI_ASSIGN_OR_RETURN(w.k_bias, b.Vector(WeightName(n, TensorRole::kKBias, l), kv, c.attention_bias));
  DI_ASSIGN_OR_RETURN(w.v_bias, b.Vector(WeightName(n, TensorRole::kVBias, l), kv, c.attention_bias));
  DI_ASSIGN_OR_RETURN(w.o_bias, b.Vector(WeightName(n, TensorRole::kOBias, l), h, false));
  if (c.qk_norm) {
    DI_ASSIGN_OR_RETURN(w.q_norm, b.Vector(WeightName(n, TensorRole::kQNorm, l), c.head_dim, true));
    DI_ASSIGN_OR_RETURN(w.k_norm, b.Vector(WeightName(n, TensorRole::kKNorm, l), c.head_dim, true));
    for (float& x : w.q_norm) x += c.norm_weight_offset;
    for (float& x : w.k_norm) x += c.norm_weight_offset;
  }
  return Status::Ok();
}

void GqaAttentionForward(const ModelConfig& c, const GqaAttentionWeights& w, const Rope& rope,
                         int64_t kv_layer, int64_t window, const ForwardBatch& batch, const TokenPlan& plan,
                         const float* xn, KvCache& kv, ThreadPool& pool, GqaScratch& s, float* out,
                         const std::vector<int64_t>* keep) {
  const int64_t n_tokens = plan.num_tokens();
  const int64_t qd = c.q_dim(), kvd = c.kv_dim();
  const int64_t hd = c.head_dim, nh = c.num_heads, nkv = c.num_kv_heads;
  const auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
  s.q.resize(static_cast<size_t>(n_tokens * qd));
  s.attn.resize(static_cast<size_t>(n_tokens * qd));
  s.k.resize(static_cast<size_t>(n_tokens * kvd));
  s.v.resize(static_cast<size_t>(n_tokens * kvd));

  ops::SharedInputMatMul({{&w.q, bias(w.q_bias), s.q.data()},
                          {&w.k, bias(w.k_bias), s.k.data()},
                          {&w.v, bias(w.v_bias), s.v.data()}},
                         xn, n_tokens, pool);

  // Every new token's K/V must be in the cache before any token of its chunk attends.
  const int64_t bs = kv.block_size();
  const int64_t cache_layer = CacheLayerOf(batch, kv_layer);
  ops::ParallelForCost(pool, n_tokens, n_tokens * (qd + kvd) * 8, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) {
      float* qt = &s.q[static_cast<size_t>(t * qd)];
      float* kt = &s.k[static_cast<size_t>(t * kvd)];
      if (c.qk_norm) {
        for (int64_t i = 0; i < nh; ++i) {
          ops::RmsNorm(qt + i * hd, w.q_norm.data(), hd, c.rms_norm_eps, qt + i * hd);
        }
        for (int64_t i = 0; i < nkv; ++i) {
          ops::RmsNorm(kt + i * hd, w.k_norm.data(), hd, c.rms_norm_eps, kt + i * hd);
        }
      }
      const int64_t pos = plan.positions[static_cast<size_t>(t)];
      rope.Apply(qt, nh, hd, pos);
      rope.Apply(kt, nkv, hd, pos);
      const int32_t block = BlockTableOf(batch, plan, t, kv_layer)[static_cast<size_t>(pos / bs)];
      kv.WriteK(cache_layer, block, pos % bs, kt);
      kv.WriteV(cache_layer, block, pos % bs, &s.v[static_cast<size_t>(t * kvd)]);
    }
  });

  ops::AttentionParams p;
  p.layer = cache_layer;
  p.num_heads = nh;
  p.num_kv_heads = nkv;
  p.head_dim = hd;
  p.window = window;
  const double scale_base = c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : static_cast<double>(hd);
  p.scale = static_cast<float>(1.0 / std::sqrt(scale_base));
  p.softcap = static_cast<float>(c.attn_logit_softcap);
  // The attending tokens: all of them, or the kept ones gathered.
  const float* q = s.q.data();
  const int64_t* positions = plan.positions.data();
  const int64_t n_attend = keep != nullptr ? static_cast<int64_t>(keep->size()) : n_tokens;
  const auto token = [&](int64_t i) { return keep != nullptr ? (*keep)[static_cast<size_t>(i)] : i; };
  if (keep != nullptr) {
    s.kept_q.resize(static_cast<size_t>(n_attend * qd));
    s.kept_positions.resize(static_cast<size_t>(n_attend));
    for (int64_t i = 0; i < n_attend; ++i) {
      std::copy_n(&s.q[static_cast<size_t>(token(i) * qd)], qd, &s.kept_q[static_cast<size_t>(i * qd)]);
      s.kept_positions[static_cast<size_t>(i)] = plan.positions[static_cast<size_t>(token(i))];
    }
    q = s.kept_q.data();
    positions = s.kept_positions.data();
  }
  std::vector<const std::vector<int32_t>*> tables(static_cast<size_t>(n_attend));
  for (int64_t i = 0; i < n_attend; ++i)
    tables[static_cast<size_t>(i)] = &BlockTableOf(batch, plan, token(i), kv_layer);
  ops::PagedAttention(q, n_attend, positions, tables, kv, p, pool, s.attn.data());
  ops::MatMul(w.o, s.attn.data(), n_attend, bias(w.o_bias), out, pool);
}

}  // namespace deepinfer
