// The architecture registry: the one place that maps an architecture name
// (GGUF `general.architecture`, HF `architectures[0]`) to its properties and
// to the code that builds its Model. Each family defines its ArchitectureSpec
// entries in one file under model/archs/; registry.cc lists them. The config
// readers (config_gguf.cc, config_hf.cc) and the factories ask the spec,
// never compare architecture names. Adding an architecture = one file in
// model/archs/ plus one registry line (docs/model.md has the recipe).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace deepinfer {

class GgufFile;

// Builds a Model over bound weights. The model keeps `weights` alive.
using ModelFactory = StatusOr<std::unique_ptr<Model>> (*)(const ModelConfig& config,
                                                          std::shared_ptr<const WeightStore> weights,
                                                          int num_threads);

// How an HF config.json says which layers use a sliding window, as the
// transformers config class reads it.
enum class HfWindowRule {
  kLayerTypes,                   // `layer_types` when present, else no window (Llama, DeepSeek)
  kEveryLayer,                   // `sliding_window` on every layer; `layer_types` ignored (Mistral, Mixtral)
  kLayerTypesOrMaxWindowLayers,  // `layer_types`, else layers >= max_window_layers
                                 // when use_sliding_window (Qwen2/3, Qwen-MoE)
};

// llama.cpp's per-architecture MoE choices that GGUF metadata need not spell out.
struct GgufMoeDefaults {
  bool norm_topk_prob = true;        // unless `expert_weights_norm` says otherwise
  bool gated_shared_expert = false;  // the shared expert is scaled by sigmoid(gate . x) (Qwen2-MoE)
};

// Architecture-specific config.json keys (MoE, MLA), read after the common
// ones into `c` (c.num_layers etc. are set). Errors name the key.
using HfConfigHook = Status (*)(const nlohmann::json& config, ModelConfig& c);
// Architecture-specific GGUF keys, read after the common ones (hidden size,
// layers, heads, norms, windows, vocabulary) instead of the standard GQA
// keys (head dims, rope scaling, MoE). May set c.arch to a sibling spec.
using GgufConfigHook = Status (*)(const GgufFile& gguf, ModelConfig& c);
// True when a GGUF file written under this spec's gguf_name is this
// architecture (e.g. Mixtral: `llama` with experts).
using GgufClaim = bool (*)(const GgufFile& gguf);

struct ArchitectureSpec {
  const char* name;       // ModelConfig::arch
  const char* hf_class;   // HF config.json "architectures" entry (model_type is `name`)
  const char* gguf_name;  // GGUF `general.architecture` as llama.cpp writes it; also the key prefix
  // Among specs sharing a gguf_name, one whose claim holds wins over one without a claim.
  GgufClaim claims_gguf = nullptr;
  RopeStyle gguf_rope = RopeStyle::kNeox;  // how llama.cpp's converter lays out Q/K rows in GGUF
  bool qkv_bias = false;                   // q/k/v projections always carry a bias (Qwen2)
  bool qk_norm = false;                    // per-head RMSNorm on q and k (Qwen3)
  HfWindowRule hf_windows = HfWindowRule::kLayerTypes;
  int64_t hf_default_window = 4096;          // transformers' default when `sliding_window` is absent
  HfConfigHook read_hf = nullptr;            // null: no keys beyond the common ones
  GgufConfigHook read_gguf = nullptr;        // null: the standard GQA keys
  GgufConfigHook read_gguf_extra = nullptr;  // read after the standard GQA keys (Gemma's extras)
  GgufMoeDefaults gguf_moe;                  // used by the standard GQA keys when expert_count > 0
  ModelFactory factory = nullptr;
};

// Every registered architecture, in lookup order.
std::span<const ArchitectureSpec* const> RegisteredArchitectures();

// nullptr when unknown.
const ArchitectureSpec* FindArchitectureByName(std::string_view name);
const ArchitectureSpec* FindArchitectureByHfClass(std::string_view hf_class);
// The spec for a GGUF file whose `general.architecture` is `gguf_arch`: by
// gguf_name (claims first), else by name.
const ArchitectureSpec* FindArchitectureForGguf(const GgufFile& gguf, std::string_view gguf_arch);

// Comma-separated list of the supported names (for error messages).
std::string SupportedArchitectures();

// Looks up config.arch and calls its factory.
StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config,
                                             std::shared_ptr<const WeightStore> weights, int num_threads);

}  // namespace deepinfer
