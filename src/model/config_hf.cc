// ModelConfig from an HF config.json. Defaults follow the transformers
// config classes (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config) so a
// config.json that omits a key means what it means to transformers.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "model/config_loader.h"
#include "model/registry.h"

namespace deepinfer {

namespace {

using Json = nlohmann::json;

bool Present(const Json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

StatusOr<int64_t> GetInt(const Json& j, const char* key) {
  if (!Present(j, key)) {
    return NotFound(std::string("config.json: key '") + key + "' is missing");
  }
  const Json& v = j.at(key);
  if (!v.is_number_integer()) {
    return InvalidArgument(std::string("config.json: '") + key + "' must be an integer");
  }
  return v.get<int64_t>();
}

StatusOr<int64_t> GetIntOr(const Json& j, const char* key, int64_t def) {
  if (!Present(j, key)) {
    return def;
  }
  return GetInt(j, key);
}

StatusOr<double> GetFloatOr(const Json& j, const char* key, double def) {
  if (!Present(j, key)) {
    return def;
  }
  const Json& v = j.at(key);
  if (!v.is_number()) {
    return InvalidArgument(std::string("config.json: '") + key + "' must be a number");
  }
  return v.get<double>();
}

StatusOr<bool> GetBoolOr(const Json& j, const char* key, bool def) {
  if (!Present(j, key)) {
    return def;
  }
  const Json& v = j.at(key);
  if (!v.is_boolean()) {
    return InvalidArgument(std::string("config.json: '") + key + "' must be a boolean");
  }
  return v.get<bool>();
}

// `architectures[0]` names the class; older files may only have `model_type`.
StatusOr<const ArchitectureSpec*> FindSpec(const Json& j) {
  if (Present(j, "architectures")) {
    const Json& a = j.at("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string()) {
      return InvalidArgument("config.json: 'architectures' must be a non-empty list of strings");
    }
    const std::string cls = a[0].get<std::string>();
    if (const ArchitectureSpec* spec = FindArchitectureByHfClass(cls)) {
      return spec;
    }
    return Unimplemented("config.json: architecture '" + cls +
                         "' is not supported (supported: " + SupportedArchitectures() + ")");
  }
  if (Present(j, "model_type") && j.at("model_type").is_string()) {
    const std::string type = j.at("model_type").get<std::string>();
    if (const ArchitectureSpec* spec = FindArchitectureByName(type)) {
      return spec;
    }
    return Unimplemented("config.json: model_type '" + type + "' is not supported");
  }
  return NotFound("config.json: neither 'architectures' nor 'model_type' is set");
}

// rope_scaling (or transformers v5's rope_parameters): {"rope_type"|"type": ...}.
Status ReadRopeScaling(const Json& j, ModelConfig& c) {
  const char* key = Present(j, "rope_scaling") ? "rope_scaling" : "rope_parameters";
  if (!Present(j, key)) {
    return Status::Ok();
  }
  const Json& s = j.at(key);
  if (!s.is_object()) {
    return InvalidArgument(std::string("config.json: '") + key + "' must be an object");
  }
  DI_ASSIGN_OR_RETURN(c.rope_theta, GetFloatOr(s, "rope_theta", c.rope_theta));
  std::string type;
  if (Present(s, "rope_type") && s.at("rope_type").is_string()) {
    type = s.at("rope_type").get<std::string>();
  } else if (Present(s, "type") && s.at("type").is_string()) {
    type = s.at("type").get<std::string>();
  }
  if (type.empty() || type == "default") {
    return Status::Ok();
  }
  RopeScaling& r = c.rope_scaling;
  r.type = type;
  DI_ASSIGN_OR_RETURN(r.factor, GetFloatOr(s, "factor", r.factor));
  DI_ASSIGN_OR_RETURN(r.low_freq_factor, GetFloatOr(s, "low_freq_factor", r.low_freq_factor));
  DI_ASSIGN_OR_RETURN(r.high_freq_factor, GetFloatOr(s, "high_freq_factor", r.high_freq_factor));
  DI_ASSIGN_OR_RETURN(r.original_max_position,
                      GetIntOr(s, "original_max_position_embeddings", r.original_max_position));
  return Status::Ok();
}

// Per-layer windows, as transformers reads them:
//  - Mistral: `sliding_window` on every layer (MistralConfig has no
//    layer_types; transformers ignores one found in config.json);
//  - Qwen2/Qwen3: `layer_types` when present, else the layers at index >=
//    max_window_layers when use_sliding_window is set;
//  - Llama: `layer_types` when present, else no window.
Status ReadSlidingWindow(const Json& j, ModelConfig& c) {
  c.sliding_window.assign(static_cast<size_t>(c.num_layers), 0);
  const bool is_qwen = c.arch == "qwen2" || c.arch == "qwen3" || c.arch == "qwen2_moe" || c.arch == "qwen3_moe";
  const bool is_mistral = c.arch == "mistral" || c.arch == "mixtral";
  const bool deepseek = c.arch == "deepseek_v2" || c.arch == "deepseek_v3";
  if ((c.arch == "llama" || deepseek) && !Present(j, "layer_types")) {
    return Status::Ok();
  }
  // transformers' default when the key is absent (null means "no window").
  int64_t window = c.arch == "mixtral" ? 0 : 4096;  // MixtralConfig defaults to no window
  if (j.contains("sliding_window")) {
    DI_ASSIGN_OR_RETURN(window, GetIntOr(j, "sliding_window", 0));
  }
  if (Present(j, "layer_types") && !is_mistral) {
    const Json& types = j.at("layer_types");
    if (!types.is_array() || static_cast<int64_t>(types.size()) != c.num_layers) {
      return InvalidArgument("config.json: 'layer_types' must list one entry per layer (" +
                             std::to_string(c.num_layers) + ")");
    }
    for (size_t i = 0; i < types.size(); ++i) {
      const std::string t = types[i].is_string() ? types[i].get<std::string>() : "";
      if (t == "sliding_attention") {
        if (window <= 0) {
          return InvalidArgument("config.json: layer " + std::to_string(i) +
                                 " is sliding_attention but 'sliding_window' is not set");
        }
        c.sliding_window[i] = window;
      } else if (t != "full_attention") {
        return Unimplemented("config.json: layer_types[" + std::to_string(i) + "] = '" + t +
                             "' is not supported");
      }
    }
    return Status::Ok();
  }
  if (is_qwen) {
    DI_ASSIGN_OR_RETURN(bool use_sliding, GetBoolOr(j, "use_sliding_window", false));
    DI_ASSIGN_OR_RETURN(int64_t max_window_layers, GetIntOr(j, "max_window_layers", 28));
    if (!use_sliding || window <= 0) {
      return Status::Ok();
    }
    for (int64_t i = max_window_layers; i < c.num_layers; ++i) {
      c.sliding_window[i] = window;
    }
    return Status::Ok();
  }
  if (window > 0) {
    c.sliding_window.assign(static_cast<size_t>(c.num_layers), window);
  }
  return Status::Ok();
}

// DeepSeek-V2/V3: MLA dims, YaRN extras, and the MoE keys (DeepseekV2Config
// / DeepseekV3Config defaults).
Status ReadDeepseek(const Json& j, ModelConfig& c) {
  const bool v3 = c.arch == "deepseek_v3";
  MlaConfig& a = c.mla;
  // An explicit null means "no q compression" (V2-Lite); absent means the class default.
  if (j.contains("q_lora_rank") && j.at("q_lora_rank").is_null()) {
    a.q_lora_rank = 0;
  } else {
    DI_ASSIGN_OR_RETURN(a.q_lora_rank, GetIntOr(j, "q_lora_rank", 1536));
  }
  DI_ASSIGN_OR_RETURN(a.kv_lora_rank, GetIntOr(j, "kv_lora_rank", 512));
  DI_ASSIGN_OR_RETURN(a.qk_nope_head_dim, GetIntOr(j, "qk_nope_head_dim", 128));
  DI_ASSIGN_OR_RETURN(a.qk_rope_head_dim, GetIntOr(j, "qk_rope_head_dim", 64));
  DI_ASSIGN_OR_RETURN(a.v_head_dim, GetIntOr(j, "v_head_dim", 128));
  if (a.q_lora_rank < 0 || a.kv_lora_rank <= 0 || a.qk_nope_head_dim <= 0 || a.qk_rope_head_dim <= 0 ||
      a.v_head_dim <= 0) {
    return InvalidArgument("config.json: MLA dims (q_lora_rank, kv_lora_rank, qk_*_head_dim, v_head_dim) must be positive");
  }
  // The q/k head is [nope | rope]; MLA shares one latent for all heads.
  c.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  c.rope_dim = a.qk_rope_head_dim;
  c.num_kv_heads = c.num_heads;
  c.rope_style = RopeStyle::kInterleaved;
  const char* key = Present(j, "rope_scaling") ? "rope_scaling" : "rope_parameters";
  if (c.rope_scaling.type == "yarn" && Present(j, key)) {
    const Json& s = j.at(key);
    DI_ASSIGN_OR_RETURN(c.yarn.beta_fast, GetFloatOr(s, "beta_fast", 32));
    DI_ASSIGN_OR_RETURN(c.yarn.beta_slow, GetFloatOr(s, "beta_slow", 1));
    DI_ASSIGN_OR_RETURN(c.yarn.mscale, GetFloatOr(s, "mscale", 1));
    DI_ASSIGN_OR_RETURN(c.yarn.mscale_all_dim, GetFloatOr(s, "mscale_all_dim", 0));
    DI_ASSIGN_OR_RETURN(c.rope_scaling.original_max_position,
                        GetIntOr(s, "original_max_position_embeddings", 4096));
  }

  MoeConfig& m = c.moe;
  DI_ASSIGN_OR_RETURN(m.num_experts, GetIntOr(j, "n_routed_experts", v3 ? 256 : 0));
  if (m.num_experts <= 0) {
    m.num_experts = 0;
    return Status::Ok();
  }
  DI_ASSIGN_OR_RETURN(m.experts_per_token, GetIntOr(j, "num_experts_per_tok", v3 ? 8 : 0));
  DI_ASSIGN_OR_RETURN(m.expert_ffn, GetIntOr(j, "moe_intermediate_size", v3 ? 2048 : 1407));
  DI_ASSIGN_OR_RETURN(int64_t shared, GetIntOr(j, "n_shared_experts", v3 ? 1 : 0));
  m.shared_ffn = shared * m.expert_ffn;
  DI_ASSIGN_OR_RETURN(bool norm, GetBoolOr(j, "norm_topk_prob", v3));
  DI_ASSIGN_OR_RETURN(double scale, GetFloatOr(j, "routed_scaling_factor", v3 ? 2.5 : 1.0));
  std::string method = v3 ? "noaux_tc" : "greedy";
  if (Present(j, "topk_method") && j.at("topk_method").is_string()) method = j.at("topk_method").get<std::string>();
  std::string scoring = v3 ? "sigmoid" : "softmax";
  if (Present(j, "scoring_func") && j.at("scoring_func").is_string()) scoring = j.at("scoring_func").get<std::string>();
  if (scoring != "softmax" && scoring != "sigmoid") {
    return Unimplemented("config.json: scoring_func '" + scoring + "' is not supported (softmax, sigmoid)");
  }
  m.sigmoid_scoring = scoring == "sigmoid";
  if (method == "noaux_tc") {
    m.score_correction_bias = true;
  } else if (method != "greedy" && method != "group_limited_greedy") {
    return Unimplemented("config.json: topk_method '" + method + "' is not supported");
  }
  if (method != "greedy") {
    DI_ASSIGN_OR_RETURN(m.n_group, GetIntOr(j, "n_group", 1));
    DI_ASSIGN_OR_RETURN(m.topk_group, GetIntOr(j, "topk_group", m.n_group));
  }
  if (v3) {  // V3 always scales; renormalizes iff norm_topk_prob
    m.norm_topk_prob = norm;
    m.routed_scaling_factor = scale;
  } else {  // V2 renormalizes (top_k > 1 and norm_topk_prob) or else scales
    m.norm_topk_prob = norm && m.experts_per_token > 1;
    m.routed_scaling_factor = m.norm_topk_prob ? 1.0 : scale;
  }
  DI_ASSIGN_OR_RETURN(int64_t first_dense, GetIntOr(j, "first_k_dense_replace", v3 ? 3 : 0));
  DI_ASSIGN_OR_RETURN(int64_t freq, GetIntOr(j, "moe_layer_freq", 1));
  if (freq <= 0) {
    return InvalidArgument("config.json: 'moe_layer_freq' must be positive");
  }
  m.sparse_layers.assign(static_cast<size_t>(c.num_layers), false);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    m.sparse_layers[static_cast<size_t>(l)] = l >= first_dense && l % freq == 0;
  }
  return Status::Ok();
}

// Mixture-of-experts keys, with the transformers config classes' defaults.
Status ReadMoe(const Json& j, ModelConfig& c) {
  if (c.arch == "deepseek_v2" || c.arch == "deepseek_v3") {
    return ReadDeepseek(j, c);
  }
  MoeConfig& m = c.moe;
  if (c.arch == "mixtral") {
    DI_ASSIGN_OR_RETURN(m.num_experts, GetIntOr(j, "num_local_experts", 8));
    DI_ASSIGN_OR_RETURN(m.experts_per_token, GetIntOr(j, "num_experts_per_tok", 2));
    m.expert_ffn = c.intermediate_size;
    m.norm_topk_prob = true;  // Mixtral always renormalizes the top-k weights
    m.sparse_layers.assign(static_cast<size_t>(c.num_layers), true);
    return Status::Ok();
  }
  if (c.arch != "qwen2_moe" && c.arch != "qwen3_moe") {
    return Status::Ok();
  }
  const bool qwen2 = c.arch == "qwen2_moe";
  DI_ASSIGN_OR_RETURN(m.num_experts, GetIntOr(j, "num_experts", qwen2 ? 60 : 128));
  DI_ASSIGN_OR_RETURN(m.experts_per_token, GetIntOr(j, "num_experts_per_tok", qwen2 ? 4 : 8));
  DI_ASSIGN_OR_RETURN(m.expert_ffn, GetIntOr(j, "moe_intermediate_size", qwen2 ? 1408 : 768));
  DI_ASSIGN_OR_RETURN(m.norm_topk_prob, GetBoolOr(j, "norm_topk_prob", false));
  if (qwen2) {
    DI_ASSIGN_OR_RETURN(m.shared_ffn, GetIntOr(j, "shared_expert_intermediate_size", 5632));
    m.shared_expert_gate = m.shared_ffn > 0;
  }
  DI_ASSIGN_OR_RETURN(int64_t step, GetIntOr(j, "decoder_sparse_step", 1));
  if (step <= 0) {
    return InvalidArgument("config.json: 'decoder_sparse_step' must be positive");
  }
  m.sparse_layers.assign(static_cast<size_t>(c.num_layers), false);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    m.sparse_layers[static_cast<size_t>(l)] = m.num_experts > 0 && (l + 1) % step == 0;
  }
  if (Present(j, "mlp_only_layers")) {
    const Json& only = j.at("mlp_only_layers");
    if (!only.is_array()) {
      return InvalidArgument("config.json: 'mlp_only_layers' must be a list of layer indices");
    }
    for (const Json& v : only) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.num_layers) {
        return InvalidArgument("config.json: 'mlp_only_layers' has an entry that is not a layer index");
      }
      m.sparse_layers[static_cast<size_t>(v.get<int64_t>())] = false;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ModelConfig> ModelConfigFromHfJson(std::string_view json_text) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgument("config.json: not valid JSON");
  }
  if (!j.is_object()) {
    return InvalidArgument("config.json: top level must be an object");
  }
  DI_ASSIGN_OR_RETURN(const ArchitectureSpec* spec, FindSpec(j));

  ModelConfig c;
  c.arch = spec->name;
  c.rope_style = RopeStyle::kNeox;  // HF checkpoints store Q/K for half-split RoPE
  DI_ASSIGN_OR_RETURN(c.vocab_size, GetInt(j, "vocab_size"));
  DI_ASSIGN_OR_RETURN(c.hidden_size, GetInt(j, "hidden_size"));
  DI_ASSIGN_OR_RETURN(c.num_layers, GetInt(j, "num_hidden_layers"));
  DI_ASSIGN_OR_RETURN(c.num_heads, GetInt(j, "num_attention_heads"));
  DI_ASSIGN_OR_RETURN(c.intermediate_size, GetInt(j, "intermediate_size"));
  DI_ASSIGN_OR_RETURN(c.num_kv_heads, GetIntOr(j, "num_key_value_heads", c.num_heads));
  if (c.num_heads <= 0) {
    return InvalidArgument("config.json: 'num_attention_heads' must be positive");
  }
  DI_ASSIGN_OR_RETURN(c.head_dim, GetIntOr(j, "head_dim", c.hidden_size / c.num_heads));
  DI_ASSIGN_OR_RETURN(c.max_position, GetIntOr(j, "max_position_embeddings", 2048));
  DI_ASSIGN_OR_RETURN(c.rms_norm_eps, GetFloatOr(j, "rms_norm_eps", 1e-6));
  DI_ASSIGN_OR_RETURN(c.rope_theta, GetFloatOr(j, "rope_theta", 10000.0));
  DI_RETURN_IF_ERROR(ReadRopeScaling(j, c));
  DI_ASSIGN_OR_RETURN(double partial_rotary, GetFloatOr(j, "partial_rotary_factor", 1.0));
  c.rope_dim = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial_rotary);
  DI_ASSIGN_OR_RETURN(c.tie_word_embeddings, GetBoolOr(j, "tie_word_embeddings", false));
  DI_ASSIGN_OR_RETURN(bool attention_bias, GetBoolOr(j, "attention_bias", false));
  c.attention_bias = spec->qkv_bias || attention_bias;
  c.qk_norm = spec->qk_norm;
  DI_ASSIGN_OR_RETURN(bool mlp_bias, GetBoolOr(j, "mlp_bias", false));
  if (mlp_bias) {
    return Unimplemented("config.json: 'mlp_bias': true is not supported");
  }
  if (Present(j, "hidden_act")) {
    const Json& act = j.at("hidden_act");
    if (!act.is_string() || act.get<std::string>() != "silu") {
      return Unimplemented("config.json: hidden_act " + act.dump() + " is not supported (only silu)");
    }
  }
  DI_RETURN_IF_ERROR(ReadSlidingWindow(j, c));
  DI_ASSIGN_OR_RETURN(c.num_nextn_predict_layers, GetIntOr(j, "num_nextn_predict_layers", 0));
  DI_RETURN_IF_ERROR(ReadMoe(j, c));
  DI_RETURN_IF_ERROR(ValidateModelConfig(c));
  return c;
}

StatusOr<ModelConfig> ModelConfigFromHfDir(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFound(path + ": cannot open");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  StatusOr<ModelConfig> config = ModelConfigFromHfJson(buffer.str());
  if (!config.ok()) {
    return config.status().WithContext(dir);
  }
  return config;
}

}  // namespace deepinfer
