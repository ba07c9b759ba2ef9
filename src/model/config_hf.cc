// ModelConfig from an HF config.json. Defaults follow the transformers
// config classes so a config.json that omits a key means what it means to
// transformers; the keys only some architectures have (MoE, MLA) are read by
// their ArchitectureSpec hooks (model/archs/).
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "model/config_hf.h"
#include "model/config_loader.h"
#include "model/registry.h"

namespace deepinfer {

namespace hf {

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

}  // namespace hf

namespace {

using hf::GetBoolOr;
using hf::GetFloatOr;
using hf::GetInt;
using hf::GetIntOr;
using hf::Json;
using hf::Present;

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

// Per-layer windows, as transformers reads them (HfWindowRule), e.g.
//  - Mistral: `sliding_window` on every layer (MistralConfig has no
//    layer_types; transformers ignores one found in config.json);
//  - Qwen2/Qwen3: `layer_types` when present, else the layers at index >=
//    max_window_layers when use_sliding_window is set;
//  - Llama: `layer_types` when present, else no window.
Status ReadSlidingWindow(const Json& j, const ArchitectureSpec& spec, ModelConfig& c) {
  c.sliding_window.assign(static_cast<size_t>(c.num_layers), 0);
  if (spec.hf_windows == HfWindowRule::kLayerTypes && !Present(j, "layer_types")) {
    return Status::Ok();
  }
  // transformers' default when the key is absent (null means "no window").
  int64_t window = spec.hf_default_window;
  if (j.contains("sliding_window")) {
    DI_ASSIGN_OR_RETURN(window, GetIntOr(j, "sliding_window", 0));
  }
  if (Present(j, "layer_types") && spec.hf_windows != HfWindowRule::kEveryLayer) {
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
  if (spec.hf_windows == HfWindowRule::kLayerTypesOrMaxWindowLayers) {
    DI_ASSIGN_OR_RETURN(bool use_sliding, GetBoolOr(j, "use_sliding_window", false));
    DI_ASSIGN_OR_RETURN(int64_t max_window_layers, GetIntOr(j, "max_window_layers", 28));
    if (!use_sliding || window <= 0) {
      return Status::Ok();
    }
    for (int64_t i = std::max<int64_t>(max_window_layers, 0); i < c.num_layers; ++i) {
      c.sliding_window[i] = window;
    }
    return Status::Ok();
  }
  if (window > 0) {
    c.sliding_window.assign(static_cast<size_t>(c.num_layers), window);
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
  DI_RETURN_IF_ERROR(CheckLayerCount("config.json: 'num_hidden_layers'", c.num_layers));
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
  // Gemma's configs name the MLP's activation `hidden_activation` (it wins
  // over `hidden_act` there, as in transformers).
  const char* act_key = Present(j, "hidden_activation") ? "hidden_activation" : "hidden_act";
  if (Present(j, act_key)) {
    const Json& act = j.at(act_key);
    const std::string name = act.is_string() ? act.get<std::string>() : "";
    if (name == "gelu_pytorch_tanh") {
      c.ffn_activation = FfnActivation::kGeluTanh;
    } else if (name != "silu") {
      return Unimplemented(std::string("config.json: ") + act_key + " " + act.dump() +
                           " is not supported (silu, gelu_pytorch_tanh)");
    }
  }
  DI_RETURN_IF_ERROR(ReadSlidingWindow(j, *spec, c));
  DI_ASSIGN_OR_RETURN(c.num_nextn_predict_layers, GetIntOr(j, "num_nextn_predict_layers", 0));
  if (spec->read_hf != nullptr) {
    DI_RETURN_IF_ERROR(spec->read_hf(j, c));
  }
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
