#include "model/deepseek_gguf.h"

#include <algorithm>
#include <cmath>

#include "io/gguf.h"

namespace deepinfer {

namespace {

constexpr const char* kPrefix = "deepseek2.";

StatusOr<int64_t> Required(const GgufFile& g, const std::string& key) {
  if (g.Find(key) == nullptr) return NotFound("GGUF metadata key '" + key + "' is missing");
  return g.GetInt(key);
}

StatusOr<int64_t> Optional(const GgufFile& g, const std::string& key, int64_t def) {
  if (g.Find(key) == nullptr) return def;
  return g.GetInt(key);
}

StatusOr<double> OptionalFloat(const GgufFile& g, const std::string& key, double def) {
  if (g.Find(key) == nullptr) return def;
  return g.GetFloat(key);
}

Status ReadMla(const GgufFile& g, ModelConfig& c) {
  const std::string p = kPrefix;
  MlaConfig& m = c.mla;
  DI_ASSIGN_OR_RETURN(m.kv_lora_rank, Required(g, p + "attention.kv_lora_rank"));
  DI_ASSIGN_OR_RETURN(m.q_lora_rank, Optional(g, p + "attention.q_lora_rank", 0));
  DI_ASSIGN_OR_RETURN(m.qk_rope_head_dim, Required(g, p + "rope.dimension_count"));
  // Current converters: *_mla are the head dims (key_length describes the
  // latent cache). Legacy: key_length / value_length are the head dims.
  const bool split = g.Find(p + "attention.key_length_mla") != nullptr;
  int64_t qk_head = 0;
  if (split) {
    DI_ASSIGN_OR_RETURN(qk_head, Required(g, p + "attention.key_length_mla"));
    DI_ASSIGN_OR_RETURN(m.v_head_dim, Required(g, p + "attention.value_length_mla"));
  } else {
    DI_ASSIGN_OR_RETURN(qk_head, Optional(g, p + "attention.key_length", c.hidden_size / c.num_heads));
    DI_ASSIGN_OR_RETURN(m.v_head_dim, Optional(g, p + "attention.value_length", qk_head));
  }
  m.qk_nope_head_dim = qk_head - m.qk_rope_head_dim;
  if (m.kv_lora_rank <= 0 || m.q_lora_rank < 0 || m.qk_rope_head_dim <= 0 || m.qk_nope_head_dim <= 0 ||
      m.v_head_dim <= 0) {
    return InvalidArgument("GGUF deepseek2: MLA dims must be positive (kv_lora_rank " +
                           std::to_string(m.kv_lora_rank) + ", q_lora_rank " + std::to_string(m.q_lora_rank) +
                           ", q/k head " + std::to_string(qk_head) + " = nope + rope " +
                           std::to_string(m.qk_rope_head_dim) + ", v head " + std::to_string(m.v_head_dim) +
                           ")");
  }
  // llama.cpp writes head_count_kv = 1 (MLA as MQA over the latent); every
  // head has its own expanded key and value.
  c.head_dim = qk_head;
  c.rope_dim = m.qk_rope_head_dim;
  c.num_kv_heads = c.num_heads;
  c.rope_style = RopeStyle::kInterleaved;
  return Status::Ok();
}

Status ReadMoe(const GgufFile& g, ModelConfig& c) {
  const std::string p = kPrefix;
  MoeConfig& m = c.moe;
  DI_ASSIGN_OR_RETURN(int64_t dense, Optional(g, p + "leading_dense_block_count", 0));
  if (m.num_experts <= 0) {
    m.num_experts = 0;
    return Status::Ok();
  }
  DI_ASSIGN_OR_RETURN(m.experts_per_token, Required(g, p + "expert_used_count"));
  DI_ASSIGN_OR_RETURN(m.expert_ffn, Required(g, p + "expert_feed_forward_length"));
  DI_ASSIGN_OR_RETURN(int64_t shared, Optional(g, p + "expert_shared_count", 0));
  if (shared < 0) return InvalidArgument("GGUF '" + p + "expert_shared_count' must not be negative");
  m.shared_ffn = shared * m.expert_ffn;
  m.shared_expert_gate = false;
  m.norm_topk_prob = false;
  if (g.Find(p + "expert_weights_norm") != nullptr) {
    DI_ASSIGN_OR_RETURN(m.norm_topk_prob, g.GetBool(p + "expert_weights_norm"));
  }
  DI_ASSIGN_OR_RETURN(m.routed_scaling_factor, OptionalFloat(g, p + "expert_weights_scale", 1.0));
  if (m.routed_scaling_factor == 0) m.routed_scaling_factor = 1.0;  // llama.cpp: 0 means "do not scale"
  DI_ASSIGN_OR_RETURN(int64_t gating, Optional(g, p + "expert_gating_func", kGgufGatingSoftmax));
  if (gating == 0) gating = kGgufGatingSoftmax;  // older V2 files: softmax
  if (gating != kGgufGatingSoftmax && gating != kGgufGatingSigmoid) {
    return Unimplemented("GGUF '" + p + "expert_gating_func' = " + std::to_string(gating) +
                         " is not supported (1 softmax, 2 sigmoid)");
  }
  m.sigmoid_scoring = gating == kGgufGatingSigmoid;
  DI_ASSIGN_OR_RETURN(m.n_group, Optional(g, p + "expert_group_count", 1));
  if (m.n_group <= 0) m.n_group = 1;
  DI_ASSIGN_OR_RETURN(m.topk_group, Optional(g, p + "expert_group_used_count", m.n_group));
  if (m.topk_group <= 0) m.topk_group = m.n_group;
  m.sparse_layers.assign(static_cast<size_t>(c.num_layers), false);
  for (int64_t l = dense; l < c.num_layers; ++l) m.sparse_layers[static_cast<size_t>(l)] = true;
  // The correction bias is a tensor, not a key: look at the first MoE block
  // (the MTP blocks after the stack are MoE too).
  const int64_t first_sparse = std::max<int64_t>(dense, 0);
  m.score_correction_bias =
      g.FindTensor("blk." + std::to_string(first_sparse) + ".exp_probs_b.bias") != nullptr;
  return Status::Ok();
}

Status ReadYarn(const GgufFile& g, ModelConfig& c) {
  const std::string p = kPrefix;
  const std::string type = g.GetStringOr(p + "rope.scaling.type", "");
  if (type.empty() || type == "none") return Status::Ok();
  if (type != "yarn") {
    return Unimplemented("GGUF deepseek2: rope scaling type '" + type + "' is not supported (none, yarn)");
  }
  RopeScaling& r = c.rope_scaling;
  r.type = "yarn";
  DI_ASSIGN_OR_RETURN(r.factor, OptionalFloat(g, p + "rope.scaling.factor", 0.0));
  if (!(r.factor > 0)) {
    return InvalidArgument("GGUF '" + p + "rope.scaling.factor' must be positive for yarn");
  }
  DI_ASSIGN_OR_RETURN(r.original_max_position, Optional(g, p + "rope.scaling.original_context_length", 4096));
  DI_ASSIGN_OR_RETURN(double log_mul, OptionalFloat(g, p + "rope.scaling.yarn_log_multiplier", 0.0));
  // The converter writes 0.1 * mscale_all_dim. llama.cpp then takes mscale =
  // mscale_all_dim (the cos/sin factor cancels), or mscale = 1 without the key.
  c.yarn.mscale_all_dim = log_mul / 0.1;
  c.yarn.mscale = log_mul != 0 ? c.yarn.mscale_all_dim : 1.0;
  DI_ASSIGN_OR_RETURN(c.yarn.beta_fast, OptionalFloat(g, p + "rope.scaling.yarn_beta_fast", 32));
  DI_ASSIGN_OR_RETURN(c.yarn.beta_slow, OptionalFloat(g, p + "rope.scaling.yarn_beta_slow", 1));
  return Status::Ok();
}

}  // namespace

Status ReadDeepseek2GgufConfig(const GgufFile& g, ModelConfig& c) {
  if (c.num_heads <= 0) return InvalidArgument("GGUF 'deepseek2.attention.head_count' must be positive");
  DI_RETURN_IF_ERROR(ReadMla(g, c));
  DI_RETURN_IF_ERROR(ReadMoe(g, c));
  DI_RETURN_IF_ERROR(ReadYarn(g, c));
  return Status::Ok();
}

std::vector<float> SplitMlaKvB(const std::vector<float>& kv_b, int64_t heads, int64_t nope, int64_t v,
                               int64_t lora, bool keys) {
  std::vector<float> out(static_cast<size_t>(heads * (keys ? nope : v) * lora));
  for (int64_t h = 0; h < heads; ++h) {
    const float* head = &kv_b[static_cast<size_t>(h * (nope + v) * lora)];
    if (keys) {
      float* dst = &out[static_cast<size_t>(h * lora * nope)];
      for (int64_t d = 0; d < nope; ++d) {
        for (int64_t r = 0; r < lora; ++r) dst[r * nope + d] = head[d * lora + r];
      }
    } else {
      std::copy(head + nope * lora, head + (nope + v) * lora, &out[static_cast<size_t>(h * v * lora)]);
    }
  }
  return out;
}

}  // namespace deepinfer
