#include "model/registry.h"

#include "io/gguf.h"
#include "model/archs/archs.h"

namespace deepinfer {

namespace {

// One line per architecture (model/archs/*.cc). Order matters only between
// specs that share a GGUF name without a claim: the first wins (deepseek2 ->
// DeepSeek-V2, whose GGUF hook may pick V3).
constexpr const ArchitectureSpec* kArchitectures[] = {
    &archs::kLlama,      &archs::kMistral,  &archs::kQwen2,    &archs::kQwen3,
    &archs::kMixtral,    &archs::kQwen2Moe, &archs::kQwen3Moe, &archs::kDeepseekV2,
    &archs::kDeepseekV3, &archs::kGemma2,   &archs::kGemma3,
};

}  // namespace

std::span<const ArchitectureSpec* const> RegisteredArchitectures() { return kArchitectures; }

const ArchitectureSpec* FindArchitectureByName(std::string_view name) {
  for (const ArchitectureSpec* spec : kArchitectures) {
    if (name == spec->name) return spec;
  }
  return nullptr;
}

const ArchitectureSpec* FindArchitectureByHfClass(std::string_view hf_class) {
  for (const ArchitectureSpec* spec : kArchitectures) {
    if (hf_class == spec->hf_class) return spec;
  }
  return nullptr;
}

const ArchitectureSpec* FindArchitectureForGguf(const GgufFile& gguf, std::string_view gguf_arch) {
  for (const ArchitectureSpec* spec : kArchitectures) {
    if (gguf_arch == spec->gguf_name && spec->claims_gguf != nullptr && spec->claims_gguf(gguf)) return spec;
  }
  for (const ArchitectureSpec* spec : kArchitectures) {
    if (gguf_arch == spec->gguf_name && spec->claims_gguf == nullptr) return spec;
  }
  return FindArchitectureByName(gguf_arch);
}

std::string SupportedArchitectures() {
  std::string out;
  for (const ArchitectureSpec* spec : kArchitectures) {
    if (!out.empty()) out += ", ";
    out += spec->name;
    out += " (";
    out += spec->hf_class;
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
