#include "model/registry.h"

#include "model/deepseek.h"
#include "model/dense_model.h"
#include "model/moe_model.h"

namespace deepinfer {

namespace {

// GGUF llama (and mistral, which llama.cpp converts as llama) stores Q/K rows
// permuted for interleaved RoPE; llama.cpp runs qwen2/qwen3 with NeoX RoPE.
constexpr ArchitectureSpec kArchitectures[] = {
    {"llama", "LlamaForCausalLM", RopeStyle::kInterleaved, false, false, CreateDenseModel},
    {"mistral", "MistralForCausalLM", RopeStyle::kInterleaved, false, false, CreateDenseModel},
    {"qwen2", "Qwen2ForCausalLM", RopeStyle::kNeox, true, false, CreateDenseModel},
    {"qwen3", "Qwen3ForCausalLM", RopeStyle::kNeox, false, true, CreateDenseModel},
    // Mixture of experts (model/moe_model.h). llama.cpp writes Mixtral as GGUF
    // `llama` with expert tensors; config_gguf.cc maps it back.
    {"mixtral", "MixtralForCausalLM", RopeStyle::kInterleaved, false, false, CreateMoeModel},
    {"qwen2_moe", "Qwen2MoeForCausalLM", RopeStyle::kNeox, true, false, CreateMoeModel},
    {"qwen3_moe", "Qwen3MoeForCausalLM", RopeStyle::kNeox, false, true, CreateMoeModel},
    // Multi-head latent attention + MoE (model/deepseek.h).
    {"deepseek_v2", "DeepseekV2ForCausalLM", RopeStyle::kInterleaved, false, false, CreateDeepseekModel},
    {"deepseek_v3", "DeepseekV3ForCausalLM", RopeStyle::kInterleaved, false, false, CreateDeepseekModel},
};

}  // namespace

const ArchitectureSpec* FindArchitectureByName(std::string_view name) {
  for (const auto& spec : kArchitectures) {
    if (name == spec.name) {
      return &spec;
    }
  }
  return nullptr;
}

const ArchitectureSpec* FindArchitectureByHfClass(std::string_view hf_class) {
  for (const auto& spec : kArchitectures) {
    if (hf_class == spec.hf_class) {
      return &spec;
    }
  }
  return nullptr;
}

std::string SupportedArchitectures() {
  std::string out;
  for (const auto& spec : kArchitectures) {
    if (!out.empty()) {
      out += ", ";
    }
    out += spec.name;
    out += " (";
    out += spec.hf_class;
    out += ")";
  }
  return out;
}

StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config,
                                             std::shared_ptr<const WeightStore> weights, int num_threads) {
  const ArchitectureSpec* spec = FindArchitectureByName(config.arch);
  if (spec == nullptr) {
    return Unimplemented("architecture '" + config.arch +
                         "' is not supported (supported: " + SupportedArchitectures() + ")");
  }
  return spec->factory(config, std::move(weights), num_threads);
}

}  // namespace deepinfer
