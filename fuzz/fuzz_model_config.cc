// libFuzzer: checkpoint metadata -> ModelConfig. The first byte picks the
// format ('G': the rest is a GGUF image, anything else: an HF config.json).
// Reading must fail cleanly (no exception, no abort, no allocation sized by an
// unchecked count) or yield a config that validates, with one window per
// layer and every count inside the documented bounds (model/config_loader.h).
#include <cstdint>
#include <string_view>

#include "io/gguf.h"
#include "model/config_loader.h"

namespace {

using namespace deepinfer;

void CheckInvariants(const ModelConfig& c) {
  const bool ok =
      ValidateModelConfig(c).ok() && c.num_layers >= 1 && c.num_layers <= kMaxModelLayers &&
      static_cast<int64_t>(c.sliding_window.size()) == c.num_layers &&
      (c.moe.num_experts == 0 || static_cast<int64_t>(c.moe.sparse_layers.size()) == c.num_layers) &&
      c.vocab_size <= kMaxModelVocab && c.hidden_size <= kMaxModelDim && c.q_dim() <= kMaxModelDim &&
      c.kv_dim() <= kMaxModelDim;
  if (!ok) __builtin_trap();
  (void)DescribeModelConfig(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] == 'G') {
    auto file = GgufFile::Parse(data + 1, size - 1, "fuzz.gguf");
    if (!file.ok()) return 0;
    auto config = ModelConfigFromGguf(**file);
    if (config.ok()) CheckInvariants(*config);
    return 0;
  }
  auto config = ModelConfigFromHfJson(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (config.ok()) CheckInvariants(*config);
  return 0;
}
