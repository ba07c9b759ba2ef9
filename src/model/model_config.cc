#include <algorithm>
#include <cstdio>
#include <string>

#include "model/config_loader.h"

namespace deepinfer {

namespace {

Status RequirePositive(const char* field, double value) {
  if (!(value > 0)) {
    return InvalidArgument(std::string("model config: ") + field + " must be positive (got " +
                           std::to_string(value) + ")");
  }
  return Status::Ok();
}

Status RequireAtMost(const char* field, int64_t value, int64_t limit) {
  if (value < 0 || value > limit) {
    return InvalidArgument(std::string("model config: ") + field + " (" + std::to_string(value) +
                           ") must be in [0, " + std::to_string(limit) + "]");
  }
  return Status::Ok();
}

// Every count against its bound; products only after their factors passed.
Status CheckBounds(const ModelConfig& c) {
  DI_RETURN_IF_ERROR(RequireAtMost("vocab_size", c.vocab_size, kMaxModelVocab));
  DI_RETURN_IF_ERROR(RequireAtMost("hidden_size", c.hidden_size, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("num_layers", c.num_layers, kMaxModelLayers));
  DI_RETURN_IF_ERROR(RequireAtMost("num_nextn_predict_layers", c.num_nextn_predict_layers, kMaxModelLayers));
  DI_RETURN_IF_ERROR(RequireAtMost("num_heads", c.num_heads, kMaxModelHeads));
  DI_RETURN_IF_ERROR(RequireAtMost("num_kv_heads", c.num_kv_heads, kMaxModelHeads));
  DI_RETURN_IF_ERROR(RequireAtMost("head_dim", c.head_dim, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("intermediate_size", c.intermediate_size, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("max_position", c.max_position, kMaxModelPositions));
  DI_RETURN_IF_ERROR(RequireAtMost("num_experts", c.moe.num_experts, kMaxModelExperts));
  DI_RETURN_IF_ERROR(RequireAtMost("moe expert_ffn", c.moe.expert_ffn, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("moe shared_ffn", c.moe.shared_ffn, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("mla q_lora_rank", c.mla.q_lora_rank, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("mla kv_lora_rank", c.mla.kv_lora_rank, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("mla qk_nope_head_dim", c.mla.qk_nope_head_dim, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("mla qk_rope_head_dim", c.mla.qk_rope_head_dim, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("mla v_head_dim", c.mla.v_head_dim, kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("q width (num_heads x head_dim)", c.q_dim(), kMaxModelDim));
  DI_RETURN_IF_ERROR(RequireAtMost("kv width (num_kv_heads x head_dim)", c.kv_dim(), kMaxModelDim));
  const int64_t mla_head = std::max(c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim, c.mla.v_head_dim);
  DI_RETURN_IF_ERROR(
      RequireAtMost("mla width (num_heads x head dims)", c.num_heads * mla_head, kMaxModelDim));
  return Status::Ok();
}

}  // namespace

Status CheckLayerCount(const std::string& key, int64_t layers) {
  if (layers < 1 || layers > kMaxModelLayers) {
    return InvalidArgument(key + " (" + std::to_string(layers) + ") must be in [1, " +
                           std::to_string(kMaxModelLayers) + "]");
  }
  return Status::Ok();
}

Status ValidateModelConfig(const ModelConfig& c) {
  if (c.arch.empty()) {
    return InvalidArgument("model config: architecture is not set");
  }
  DI_RETURN_IF_ERROR(CheckBounds(c));
  DI_RETURN_IF_ERROR(RequirePositive("vocab_size", static_cast<double>(c.vocab_size)));
  DI_RETURN_IF_ERROR(RequirePositive("hidden_size", static_cast<double>(c.hidden_size)));
  DI_RETURN_IF_ERROR(RequirePositive("num_layers", static_cast<double>(c.num_layers)));
  DI_RETURN_IF_ERROR(RequirePositive("num_heads", static_cast<double>(c.num_heads)));
  DI_RETURN_IF_ERROR(RequirePositive("num_kv_heads", static_cast<double>(c.num_kv_heads)));
  DI_RETURN_IF_ERROR(RequirePositive("head_dim", static_cast<double>(c.head_dim)));
  DI_RETURN_IF_ERROR(RequirePositive("intermediate_size", static_cast<double>(c.intermediate_size)));
  DI_RETURN_IF_ERROR(RequirePositive("max_position", static_cast<double>(c.max_position)));
  DI_RETURN_IF_ERROR(RequirePositive("rms_norm_eps", c.rms_norm_eps));
  DI_RETURN_IF_ERROR(RequirePositive("rope_theta", c.rope_theta));
  if (c.num_heads % c.num_kv_heads != 0) {
    return InvalidArgument("model config: num_heads (" + std::to_string(c.num_heads) +
                           ") is not a multiple of num_kv_heads (" + std::to_string(c.num_kv_heads) + ")");
  }
  if (c.rope_dim <= 0 || c.rope_dim % 2 != 0 || c.rope_dim > c.head_dim) {
    return InvalidArgument("model config: rope_dim (" + std::to_string(c.rope_dim) +
                           ") must be even and in [2, head_dim=" + std::to_string(c.head_dim) + "]");
  }
  if (static_cast<int64_t>(c.sliding_window.size()) != c.num_layers) {
    return InvalidArgument("model config: sliding_window has " + std::to_string(c.sliding_window.size()) +
                           " entries for " + std::to_string(c.num_layers) + " layers");
  }
  for (size_t i = 0; i < c.sliding_window.size(); ++i) {
    if (c.sliding_window[i] < 0) {
      return InvalidArgument("model config: layer " + std::to_string(i) + " has a negative sliding window");
    }
  }
  if (c.moe.num_experts > 0) {
    const MoeConfig& m = c.moe;
    if (m.experts_per_token <= 0 || m.experts_per_token > m.num_experts) {
      return InvalidArgument("model config: experts_per_token (" + std::to_string(m.experts_per_token) +
                             ") must be in [1, num_experts=" + std::to_string(m.num_experts) + "]");
    }
    DI_RETURN_IF_ERROR(RequirePositive("moe expert_ffn", static_cast<double>(m.expert_ffn)));
    DI_RETURN_IF_ERROR(RequirePositive("routed_scaling_factor", m.routed_scaling_factor));
    if (m.n_group <= 0 || m.num_experts % m.n_group != 0 || m.topk_group <= 0 || m.topk_group > m.n_group ||
        m.experts_per_token > m.topk_group * (m.num_experts / m.n_group)) {
      return InvalidArgument("model config: n_group (" + std::to_string(m.n_group) + ") / topk_group (" +
                             std::to_string(m.topk_group) + ") do not fit " + std::to_string(m.num_experts) +
                             " experts choosing " + std::to_string(m.experts_per_token));
    }
    if (static_cast<int64_t>(m.sparse_layers.size()) != c.num_layers) {
      return InvalidArgument("model config: moe sparse_layers has " + std::to_string(m.sparse_layers.size()) +
                             " entries for " + std::to_string(c.num_layers) + " layers");
    }
  }
  if (c.num_nextn_predict_layers < 0) {
    return InvalidArgument("model config: num_nextn_predict_layers must not be negative");
  }
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "linear" || s.type == "llama3") {
    DI_RETURN_IF_ERROR(RequirePositive("rope_scaling.factor", s.factor));
  }
  if (s.type == "llama3") {
    DI_RETURN_IF_ERROR(RequirePositive("rope_scaling.low_freq_factor", s.low_freq_factor));
    DI_RETURN_IF_ERROR(RequirePositive("rope_scaling.original_max_position_embeddings",
                                       static_cast<double>(s.original_max_position)));
    if (!(s.high_freq_factor > s.low_freq_factor)) {
      return InvalidArgument("model config: rope_scaling.high_freq_factor must exceed low_freq_factor");
    }
  } else if (s.type == "yarn" && c.mla.kv_lora_rank > 0) {
    // MLA models run their own YaRN RoPE (model/mla.h).
    DI_RETURN_IF_ERROR(RequirePositive("rope_scaling.factor", s.factor));
  } else if (!s.type.empty() && s.type != "linear") {
    return Unimplemented("model config: rope scaling type '" + s.type +
                         "' is not supported (supported: linear, llama3)");
  }
  return Status::Ok();
}

std::string DescribeModelConfig(const ModelConfig& c) {
  std::string out;
  auto line = [&out](const char* key, const std::string& value) {
    out += key;
    out += ": ";
    out += value;
    out += "\n";
  };
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%g", v);
    return std::string(buf);
  };
  line("architecture", c.arch);
  line("vocab_size", std::to_string(c.vocab_size));
  line("hidden_size", std::to_string(c.hidden_size));
  line("num_layers", std::to_string(c.num_layers));
  line("num_heads", std::to_string(c.num_heads));
  line("num_kv_heads", std::to_string(c.num_kv_heads));
  line("head_dim", std::to_string(c.head_dim));
  line("intermediate_size", std::to_string(c.intermediate_size));
  line("max_position", std::to_string(c.max_position));
  line("rms_norm_eps", num(c.rms_norm_eps));
  line("rope", std::string(c.rope_style == RopeStyle::kNeox ? "neox" : "interleaved") + ", theta " +
                   num(c.rope_theta) + ", dims " + std::to_string(c.rope_dim));
  if (!c.rope_scaling.type.empty()) {
    std::string s = c.rope_scaling.type + ", factor " + num(c.rope_scaling.factor);
    if (c.rope_scaling.type == "llama3") {
      s += ", low_freq_factor " + num(c.rope_scaling.low_freq_factor) + ", high_freq_factor " +
           num(c.rope_scaling.high_freq_factor) + ", original_max_position " +
           std::to_string(c.rope_scaling.original_max_position);
    }
    line("rope_scaling", s);
  }
  line("attention_bias", c.attention_bias ? "true" : "false");
  line("qk_norm", c.qk_norm ? "true" : "false");
  line("tie_word_embeddings", c.tie_word_embeddings ? "true" : "false");
  std::string windows;
  bool any_window = false;
  for (size_t i = 0; i < c.sliding_window.size(); ++i) {
    if (i) {
      windows += ",";
    }
    windows += std::to_string(c.sliding_window[i]);
    any_window |= c.sliding_window[i] > 0;
  }
  line("sliding_window", any_window ? windows + " (per layer; 0 = full)" : "none");
  if (c.moe.num_experts > 0) {
    const MoeConfig& m = c.moe;
    int64_t sparse = 0;
    for (bool b : m.sparse_layers) sparse += b ? 1 : 0;
    line("moe", std::to_string(m.num_experts) + " experts, " + std::to_string(m.experts_per_token) +
                    " per token, expert ffn " + std::to_string(m.expert_ffn) + ", shared ffn " +
                    std::to_string(m.shared_ffn) + (m.shared_expert_gate ? " (gated)" : "") + ", " +
                    (m.sigmoid_scoring ? "sigmoid" : "softmax") + (m.norm_topk_prob ? ", normalized" : "") +
                    ", scale " + num(m.routed_scaling_factor) + ", groups " + std::to_string(m.topk_group) +
                    "/" + std::to_string(m.n_group) + (m.score_correction_bias ? ", bias" : "") + ", " +
                    std::to_string(sparse) + "/" + std::to_string(c.num_layers) + " layers sparse");
  }
  if (c.ffn_activation == FfnActivation::kGeluTanh) line("ffn_activation", "gelu_tanh (GeGLU)");
  if (c.query_pre_attn_scalar > 0) line("query_pre_attn_scalar", num(c.query_pre_attn_scalar));
  if (c.attn_logit_softcap > 0) line("attn_logit_softcap", num(c.attn_logit_softcap));
  if (c.final_logit_softcap > 0) line("final_logit_softcap", num(c.final_logit_softcap));
  if (c.rope_local_theta > 0)
    line("rope_local_theta", num(c.rope_local_theta) + " (sliding layers, unscaled)");
  if (c.embedding_scale != 1.0) line("embedding_scale", num(c.embedding_scale));
  if (c.norm_weight_offset != 0.0f) line("norm_weight_offset", num(c.norm_weight_offset));
  if (c.num_nextn_predict_layers > 0) {
    line("mtp_layers", std::to_string(c.num_nextn_predict_layers));
  }
  return out;
}

}  // namespace deepinfer
