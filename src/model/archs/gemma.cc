// Gemma-2 and Gemma-3 text models (model/gemma.h). HF: Gemma2Config /
// Gemma3TextConfig keys and defaults. GGUF: llama.cpp's `gemma2` / `gemma3`
// keys; its converter stores the norms as 1 + w and leaves what it does not
// write (the layer pattern, Gemma-3's local RoPE base, the attention scale)
// to per-architecture constants, which the hooks below reproduce.
#include <cmath>
#include <string>

#include "io/gguf.h"
#include "model/archs/archs.h"
#include "model/config_hf.h"
#include "model/gemma.h"

namespace deepinfer::archs {

namespace {

using hf::GetBoolOr;
using hf::GetFloatOr;
using hf::GetIntOr;
using hf::Json;
using hf::Present;

// Sliding layer i iff (i + 1) % pattern != 0: Gemma-2 alternates (pattern 2,
// layer 0 slides), Gemma-3 has 5 local layers per global one (pattern 6).
void ApplyLayerPattern(int64_t window, int64_t pattern, ModelConfig& c) {
  for (int64_t i = 0; i < c.num_layers; ++i) {
    c.sliding_window[static_cast<size_t>(i)] = pattern > 0 && (i + 1) % pattern != 0 ? window : 0;
  }
}

// A soft-cap key: absent -> `def`, null -> none (0).
StatusOr<double> SoftCapOr(const Json& j, const char* key, double def) {
  if (!j.contains(key)) return def;
  return GetFloatOr(j, key, 0.0);
}

Status ReadGemmaHf(const Json& j, bool gemma3, ModelConfig& c) {
  c.norm_weight_offset = 1.0f;  // HF stores w of (1 + w)
  c.embedding_scale = std::sqrt(static_cast<double>(c.hidden_size));
  if (!Present(j, "hidden_activation") && !Present(j, "hidden_act"))
    c.ffn_activation = FfnActivation::kGeluTanh;
  if (c.ffn_activation != FfnActivation::kGeluTanh) {
    return Unimplemented("config.json: Gemma's hidden_activation must be gelu_pytorch_tanh");
  }
  DI_ASSIGN_OR_RETURN(c.tie_word_embeddings, GetBoolOr(j, "tie_word_embeddings", true));
  DI_ASSIGN_OR_RETURN(c.query_pre_attn_scalar, GetFloatOr(j, "query_pre_attn_scalar", 256.0));
  if (!(c.query_pre_attn_scalar > 0)) {
    return InvalidArgument("config.json: 'query_pre_attn_scalar' must be positive");
  }
  DI_ASSIGN_OR_RETURN(c.attn_logit_softcap, SoftCapOr(j, "attn_logit_softcapping", gemma3 ? 0.0 : 50.0));
  DI_ASSIGN_OR_RETURN(c.final_logit_softcap, SoftCapOr(j, "final_logit_softcapping", gemma3 ? 0.0 : 30.0));
  if (c.attn_logit_softcap < 0 || c.final_logit_softcap < 0) {
    return InvalidArgument("config.json: soft-capping values must not be negative");
  }
  if (!Present(j, "layer_types")) {  // older configs: the fixed pattern
    DI_ASSIGN_OR_RETURN(int64_t window, GetIntOr(j, "sliding_window", 4096));
    int64_t pattern = 2;
    if (gemma3) {
      DI_ASSIGN_OR_RETURN(pattern, GetIntOr(j, "sliding_window_pattern", 6));
    }
    if (window <= 0 || pattern <= 0) {
      return InvalidArgument("config.json: 'sliding_window' and 'sliding_window_pattern' must be positive");
    }
    ApplyLayerPattern(window, pattern, c);
  }
  if (gemma3) {
    DI_ASSIGN_OR_RETURN(c.rope_local_theta, GetFloatOr(j, "rope_local_base_freq", 10000.0));
  }
  return Status::Ok();
}

Status ReadGemma2Hf(const Json& j, ModelConfig& c) { return ReadGemmaHf(j, /*gemma3=*/false, c); }
Status ReadGemma3Hf(const Json& j, ModelConfig& c) { return ReadGemmaHf(j, /*gemma3=*/true, c); }

StatusOr<double> GgufFloatOr(const GgufFile& gguf, const std::string& key, double def) {
  if (gguf.Find(key) == nullptr) return def;
  return gguf.GetFloat(key);
}

Status ReadGemmaGguf(const GgufFile& gguf, bool gemma3, ModelConfig& c) {
  const std::string p = std::string(gemma3 ? "gemma3" : "gemma2") + ".";
  c.norm_weight_offset = 0.0f;  // the converter stored 1 + w
  c.embedding_scale = std::sqrt(static_cast<double>(c.hidden_size));
  c.ffn_activation = FfnActivation::kGeluTanh;
  DI_ASSIGN_OR_RETURN(c.attn_logit_softcap, GgufFloatOr(gguf, p + "attn_logit_softcapping", 0.0));
  DI_ASSIGN_OR_RETURN(c.final_logit_softcap, GgufFloatOr(gguf, p + "final_logit_softcapping", 0.0));
  if (c.attn_logit_softcap < 0 || c.final_logit_softcap < 0) {
    return InvalidArgument("GGUF soft-capping values must not be negative");
  }
  // llama.cpp writes no query_pre_attn_scalar: it uses hidden / heads for the
  // 27B models (46 / 62 layers) and head_dim otherwise. `attention.scale`
  // (the score multiplier), when present, says it exactly.
  if (gguf.Find(p + "attention.scale") != nullptr) {
    DI_ASSIGN_OR_RETURN(double scale, gguf.GetFloat(p + "attention.scale"));
    if (!(scale > 0)) return InvalidArgument("GGUF '" + p + "attention.scale' must be positive");
    c.query_pre_attn_scalar = 1.0 / (scale * scale);
  } else {
    const bool is_27b = c.num_layers == (gemma3 ? 62 : 46);
    c.query_pre_attn_scalar = static_cast<double>(is_27b ? c.hidden_size / c.num_heads : c.head_dim);
  }
  // One window for all layers, as llama.cpp writes it: the fixed pattern says which slide.
  const GgufValue* w = gguf.Find(p + "attention.sliding_window");
  if (w != nullptr && w->type != GgufType::kArray) {
    int64_t pattern = gemma3 ? 6 : 2;
    if (gguf.Find(p + "attention.sliding_window_pattern") != nullptr) {
      DI_ASSIGN_OR_RETURN(pattern, gguf.GetInt(p + "attention.sliding_window_pattern"));
    }
    if (pattern <= 0)
      return InvalidArgument("GGUF '" + p + "attention.sliding_window_pattern' must be positive");
    ApplyLayerPattern(c.sliding_window.empty() ? 0 : c.sliding_window[0], pattern, c);
  }
  if (gemma3) {
    DI_ASSIGN_OR_RETURN(c.rope_local_theta, GgufFloatOr(gguf, p + "rope.freq_base_swa", 10000.0));
  }
  return Status::Ok();
}

Status ReadGemma2Gguf(const GgufFile& gguf, ModelConfig& c) { return ReadGemmaGguf(gguf, false, c); }
Status ReadGemma3Gguf(const GgufFile& gguf, ModelConfig& c) { return ReadGemmaGguf(gguf, true, c); }

}  // namespace

// llama.cpp runs both with NeoX RoPE and does not permute Q/K rows.
const ArchitectureSpec kGemma2 = {
    .name = "gemma2",
    .hf_class = "Gemma2ForCausalLM",
    .gguf_name = "gemma2",
    .gguf_rope = RopeStyle::kNeox,
    .hf_windows = HfWindowRule::kLayerTypes,
    .read_hf = ReadGemma2Hf,
    .read_gguf_extra = ReadGemma2Gguf,
    .factory = CreateGemmaModel,
};

const ArchitectureSpec kGemma3 = {
    .name = "gemma3",
    .hf_class = "Gemma3ForCausalLM",
    .gguf_name = "gemma3",
    .gguf_rope = RopeStyle::kNeox,
    .qk_norm = true,
    .hf_windows = HfWindowRule::kLayerTypes,
    .read_hf = ReadGemma3Hf,
    .read_gguf_extra = ReadGemma3Gguf,
    .factory = CreateGemmaModel,
};

}  // namespace deepinfer::archs
