// ModelConfig from GGUF metadata (key names as llama.cpp's converters write them).
#include <algorithm>
#include <string>

#include "io/gguf.h"
#include "model/config_loader.h"
#include "model/registry.h"
#include "model/weights.h"

namespace deepinfer {

namespace {

// A required integer key; the error names the key.
StatusOr<int64_t> RequiredInt(const GgufFile& gguf, const std::string& key) {
  if (gguf.Find(key) == nullptr) {
    return NotFound("GGUF metadata key '" + key + "' is missing");
  }
  return gguf.GetInt(key);
}

StatusOr<double> OptionalFloat(const GgufFile& gguf, const std::string& key, double def) {
  if (gguf.Find(key) == nullptr) {
    return def;
  }
  return gguf.GetFloat(key);
}

StatusOr<int64_t> OptionalInt(const GgufFile& gguf, const std::string& key, int64_t def) {
  if (gguf.Find(key) == nullptr) {
    return def;
  }
  return gguf.GetInt(key);
}

// The vocabulary size: `{arch}.vocab_size` when written, else the number of
// tokenizer pieces, else the embedding table's rows.
StatusOr<int64_t> VocabSize(const GgufFile& gguf, const std::string& arch) {
  if (gguf.Find(arch + ".vocab_size") != nullptr) {
    return gguf.GetInt(arch + ".vocab_size");
  }
  if (const TensorView* embd =
          gguf.FindTensor(WeightName(WeightNaming::kGguf, TensorRole::kTokenEmbedding))) {
    if (embd->shape.size() == 2) {
      return embd->shape[0];
    }
  }
  if (gguf.Find("tokenizer.ggml.tokens") != nullptr) {
    DI_ASSIGN_OR_RETURN(auto tokens, gguf.GetStringArray("tokenizer.ggml.tokens"));
    return static_cast<int64_t>(tokens.size());
  }
  return NotFound("cannot tell the vocabulary size: no '" + arch +
                  ".vocab_size', no token_embd.weight, no tokenizer.ggml.tokens");
}

// `{arch}.attention.sliding_window`: one window for every layer, or (as some
// converters write it) one entry per layer.
Status ReadSlidingWindow(const GgufFile& gguf, const std::string& arch, ModelConfig& c) {
  c.sliding_window.assign(static_cast<size_t>(c.num_layers), 0);
  const std::string key = arch + ".attention.sliding_window";
  const GgufValue* v = gguf.Find(key);
  if (v == nullptr) {
    return Status::Ok();
  }
  if (v->type == GgufType::kArray) {
    DI_ASSIGN_OR_RETURN(auto windows, gguf.GetIntArray(key));
    if (static_cast<int64_t>(windows.size()) != c.num_layers) {
      return InvalidArgument("GGUF metadata key '" + key + "' has " + std::to_string(windows.size()) +
                             " entries for " + std::to_string(c.num_layers) + " layers");
    }
    for (size_t i = 0; i < windows.size(); ++i) {
      c.sliding_window[i] = windows[i];
    }
    return Status::Ok();
  }
  DI_ASSIGN_OR_RETURN(int64_t w, gguf.GetInt(key));
  c.sliding_window.assign(static_cast<size_t>(c.num_layers), w);
  return Status::Ok();
}

Status ReadRopeScaling(const GgufFile& gguf, const std::string& arch, ModelConfig& c) {
  const std::string type = gguf.GetStringOr(arch + ".rope.scaling.type", "");
  DI_ASSIGN_OR_RETURN(double factor, OptionalFloat(gguf, arch + ".rope.scaling.factor", 0.0));
  // Older files write only `rope.scale_linear`.
  DI_ASSIGN_OR_RETURN(double scale_linear, OptionalFloat(gguf, arch + ".rope.scale_linear", 0.0));
  if (type.empty() || type == "none") {
    if (scale_linear > 0 && scale_linear != 1.0) {
      c.rope_scaling.type = "linear";
      c.rope_scaling.factor = scale_linear;
    }
    return Status::Ok();
  }
  if (type != "linear") {
    return Unimplemented("GGUF rope scaling type '" + type + "' is not supported");
  }
  c.rope_scaling.type = "linear";
  c.rope_scaling.factor = factor > 0 ? factor : scale_linear;
  DI_ASSIGN_OR_RETURN(c.rope_scaling.original_max_position,
                      OptionalInt(gguf, arch + ".rope.scaling.original_context_length",
                                  c.rope_scaling.original_max_position));
  return Status::Ok();
}

// MoE metadata as llama.cpp writes it. Where llama.cpp hard-codes a routing
// choice per architecture (Mixtral and Qwen3-MoE renormalize the top-k
// weights, Qwen2-MoE does not and gates its shared expert), the spec's
// GgufMoeDefaults say it.
Status ReadMoe(const GgufFile& gguf, const std::string& p, const GgufMoeDefaults& defaults, ModelConfig& c) {
  MoeConfig& m = c.moe;
  if (m.num_experts <= 0) {
    return Status::Ok();
  }
  DI_ASSIGN_OR_RETURN(m.experts_per_token, RequiredInt(gguf, p + "expert_used_count"));
  DI_ASSIGN_OR_RETURN(m.expert_ffn, OptionalInt(gguf, p + "expert_feed_forward_length", c.intermediate_size));
  DI_ASSIGN_OR_RETURN(m.shared_ffn, OptionalInt(gguf, p + "expert_shared_feed_forward_length", 0));
  m.shared_expert_gate = defaults.gated_shared_expert && m.shared_ffn > 0;
  bool norm_default = defaults.norm_topk_prob;
  if (const GgufValue* v = gguf.Find(p + "expert_weights_norm"); v != nullptr && v->type == GgufType::kBool) {
    DI_ASSIGN_OR_RETURN(norm_default, gguf.GetBool(p + "expert_weights_norm"));
  }
  m.norm_topk_prob = norm_default;
  DI_ASSIGN_OR_RETURN(int64_t dense, OptionalInt(gguf, p + "leading_dense_block_count", 0));
  m.sparse_layers.assign(static_cast<size_t>(c.num_layers), true);
  for (int64_t l = 0; l < std::min(dense, c.num_layers); ++l) m.sparse_layers[static_cast<size_t>(l)] = false;
  return Status::Ok();
}

}  // namespace

StatusOr<ModelConfig> ModelConfigFromGguf(const GgufFile& gguf) {
  if (gguf.Find("general.architecture") == nullptr) {
    return NotFound("GGUF metadata key 'general.architecture' is missing");
  }
  DI_ASSIGN_OR_RETURN(std::string arch, gguf.GetString("general.architecture"));
  const ArchitectureSpec* spec = FindArchitectureForGguf(gguf, arch);
  if (spec == nullptr) {
    return Unimplemented("GGUF architecture '" + arch +
                         "' is not supported (supported: " + SupportedArchitectures() + ")");
  }
  ModelConfig c;
  c.arch = spec->name;
  const std::string p = arch + ".";
  DI_ASSIGN_OR_RETURN(c.moe.num_experts, OptionalInt(gguf, p + "expert_count", 0));
  DI_ASSIGN_OR_RETURN(c.hidden_size, RequiredInt(gguf, p + "embedding_length"));
  DI_ASSIGN_OR_RETURN(c.num_layers, RequiredInt(gguf, p + "block_count"));
  DI_RETURN_IF_ERROR(CheckLayerCount("GGUF '" + p + "block_count'", c.num_layers));
  // llama.cpp counts the MTP (next-n) layers in block_count and stores them
  // as the last blocks; the decoder stack is the rest.
  DI_ASSIGN_OR_RETURN(c.num_nextn_predict_layers, OptionalInt(gguf, p + "nextn_predict_layers", 0));
  if (c.num_nextn_predict_layers < 0 || c.num_nextn_predict_layers >= c.num_layers) {
    return InvalidArgument("GGUF '" + p + "nextn_predict_layers' (" +
                           std::to_string(c.num_nextn_predict_layers) +
                           ") must be in [0, block_count = " + std::to_string(c.num_layers) + ")");
  }
  c.num_layers -= c.num_nextn_predict_layers;
  DI_ASSIGN_OR_RETURN(c.intermediate_size, RequiredInt(gguf, p + "feed_forward_length"));
  DI_ASSIGN_OR_RETURN(c.num_heads, RequiredInt(gguf, p + "attention.head_count"));
  DI_ASSIGN_OR_RETURN(c.num_kv_heads, OptionalInt(gguf, p + "attention.head_count_kv", c.num_heads));
  if (gguf.Find(p + "attention.layer_norm_rms_epsilon") == nullptr) {
    return NotFound("GGUF metadata key '" + p + "attention.layer_norm_rms_epsilon' is missing");
  }
  DI_ASSIGN_OR_RETURN(c.rms_norm_eps, gguf.GetFloat(p + "attention.layer_norm_rms_epsilon"));
  DI_ASSIGN_OR_RETURN(c.rope_theta, OptionalFloat(gguf, p + "rope.freq_base", 10000.0));
  DI_ASSIGN_OR_RETURN(c.max_position, OptionalInt(gguf, p + "context_length", 2048));
  if (c.num_heads <= 0) {
    return InvalidArgument("GGUF '" + p + "attention.head_count' must be positive");
  }
  // The standard GQA keys, unless the architecture reads its own (DeepSeek's
  // MLA head dims, MoE and YaRN keys: model/deepseek_gguf.h).
  const bool standard_gqa = spec->read_gguf == nullptr;
  if (standard_gqa) {
    DI_ASSIGN_OR_RETURN(c.head_dim,
                        OptionalInt(gguf, p + "attention.key_length", c.hidden_size / c.num_heads));
    DI_ASSIGN_OR_RETURN(int64_t value_length, OptionalInt(gguf, p + "attention.value_length", c.head_dim));
    if (value_length != c.head_dim) {
      return Unimplemented("GGUF attention.value_length " + std::to_string(value_length) + " != key_length " +
                           std::to_string(c.head_dim) + " is not supported");
    }
    DI_ASSIGN_OR_RETURN(c.rope_dim, OptionalInt(gguf, p + "rope.dimension_count", c.head_dim));
  }
  DI_ASSIGN_OR_RETURN(c.vocab_size, VocabSize(gguf, arch));
  DI_RETURN_IF_ERROR(ReadSlidingWindow(gguf, arch, c));
  c.rope_style = spec->gguf_rope;
  c.attention_bias = spec->qkv_bias;
  c.qk_norm = spec->qk_norm;
  c.tie_word_embeddings = gguf.FindTensor(WeightName(WeightNaming::kGguf, TensorRole::kOutput)) == nullptr;
  if (standard_gqa) {
    DI_RETURN_IF_ERROR(ReadRopeScaling(gguf, arch, c));
    DI_RETURN_IF_ERROR(ReadMoe(gguf, p, spec->gguf_moe, c));
    if (spec->read_gguf_extra != nullptr) DI_RETURN_IF_ERROR(spec->read_gguf_extra(gguf, c));
  } else {
    DI_RETURN_IF_ERROR(spec->read_gguf(gguf, c));
  }
  DI_RETURN_IF_ERROR(ValidateModelConfig(c));
  return c;
}

}  // namespace deepinfer
