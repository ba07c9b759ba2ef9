#include "model/registry.h"

#include "model/llama.h"

namespace deepinfer {

namespace {

// GGUF llama (and mistral, which llama.cpp converts as llama) stores Q/K rows
// permuted for interleaved RoPE; llama.cpp runs qwen2/qwen3 with NeoX RoPE.
constexpr ArchitectureSpec kArchitectures[] = {
    {"llama", "LlamaForCausalLM", RopeStyle::kInterleaved, false, false, CreateLlamaModel},
    {"mistral", "MistralForCausalLM", RopeStyle::kInterleaved, false, false, CreateLlamaModel},
    {"qwen2", "Qwen2ForCausalLM", RopeStyle::kNeox, true, false, CreateLlamaModel},
    {"qwen3", "Qwen3ForCausalLM", RopeStyle::kNeox, false, true, CreateLlamaModel},
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
