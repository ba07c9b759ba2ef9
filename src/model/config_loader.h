// Reading a ModelConfig from a checkpoint's metadata, and validating it.
//
// GGUF: keys `{arch}.embedding_length`, `.block_count`, ... as llama.cpp
// writes them; the RoPE style follows the architecture (llama -> interleaved,
// because llama.cpp's converter permutes Q/K rows; qwen2/qwen3 -> NeoX).
// HF: config.json of LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
// Qwen3ForCausalLM; HF checkpoints always use NeoX (half-split) RoPE.
//
// Every loader validates before returning; errors name the missing or bad key.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "model/model_config.h"

namespace deepinfer {

class GgufFile;

StatusOr<ModelConfig> ModelConfigFromGguf(const GgufFile& gguf);

// `json_text` is the content of config.json; error messages do not include a
// file name (the caller adds it).
StatusOr<ModelConfig> ModelConfigFromHfJson(std::string_view json_text);

// Reads DIR/config.json.
StatusOr<ModelConfig> ModelConfigFromHfDir(const std::string& dir);

// Upper bounds on the counts a checkpoint declares, far above any released
// model. They keep every per-layer vector and every size product (vocab x
// hidden, heads x head_dim, layers x kv_dim) small and inside int64, so a
// corrupt or hostile file is refused before anything is sized from it.
inline constexpr int64_t kMaxModelLayers = int64_t{1} << 14;
inline constexpr int64_t kMaxModelVocab = int64_t{1} << 24;
inline constexpr int64_t kMaxModelDim = int64_t{1} << 20;  // hidden, ffn, q/kv widths, ranks
inline constexpr int64_t kMaxModelHeads = int64_t{1} << 14;
inline constexpr int64_t kMaxModelExperts = int64_t{1} << 14;
inline constexpr int64_t kMaxModelPositions = int64_t{1} << 30;

// A layer count read from `key`: InvalidArgument unless in [1, kMaxModelLayers].
// The loaders call it before sizing any per-layer vector.
Status CheckLayerCount(const std::string& key, int64_t layers);

// Positive dimensions within the bounds above, heads that divide, rope_dim even and <= head_dim, one
// sliding_window entry per layer, known rope scaling. InvalidArgument naming
// the field otherwise.
Status ValidateModelConfig(const ModelConfig& config);

// Multi-line "key: value" summary (for `deepinfer info`).
std::string DescribeModelConfig(const ModelConfig& config);

}  // namespace deepinfer
